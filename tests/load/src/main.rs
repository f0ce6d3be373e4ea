use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = liteset_load::cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(liteset_load::run(cli.command))
}
