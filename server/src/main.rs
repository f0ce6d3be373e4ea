//! The `liteset` command: serve, init, migrate, create-admin, check-config, load-examples, and
//! the plugin authoring tools (`liteset plugin …`, in `liteset::authoring`).

// The served endpoint's type nests every middleware twice over (poem's `Around`); computing the
// layout of `serve`'s future exceeds the default query depth of 128 in release builds.
#![recursion_limit = "256"]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use liteset::app::{self, StartError};
use liteset::auth::catalog;
use liteset::config::{Config, LogFormat, Overrides};
use liteset::store::NewUser;

/// mimalloc instead of glibc malloc: a request allocates many small, short-lived buffers
/// across worker threads, where glibc's arenas cost a quarter of the server's CPU
/// (BENCHMARKS.md, chart-data CPU per request).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t`, which libmimalloc-sys does not
/// name. It is 15 in v2 and v3: mimalloc keeps retired options as `deprecated_*` placeholders
/// so that the numbers stay part of its ABI.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory goes back to the OS at once instead of after mimalloc's default delay of a
/// second, and whether or not the freeing thread allocates again: a refused 100 MB result
/// must not stay resident (`security::engines::huge_results_…_memory_stays_bounded`). The
/// CPU this costs is in BENCHMARKS.md (chart-data CPU per request).
fn release_freed_memory_at_once() {
    // SAFETY: `mi_option_set` only stores an integer in mimalloc's option table; any option
    // index below `_mi_option_last` and any value are valid, and it is thread-safe.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

/// A Superset-compatible BI server on one async process.
#[derive(Parser)]
#[command(name = "liteset", version, about)]
struct Cli {
    /// TOML configuration file.
    #[arg(long, global = true, env = "LITESET_CONFIG")]
    config: Option<PathBuf>,
    /// Folder for embedded metadata, the generated secret key and installed assets.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Log format.
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server (migrating and initialising an empty metadata store first).
    Serve {
        /// Listen address, e.g. 127.0.0.1:8088 (port 0 picks a free one).
        #[arg(long)]
        bind: Option<String>,
    },
    /// Apply migrations and (re)create the built-in roles and their permissions.
    Init,
    /// Apply pending metadata migrations only.
    Migrate,
    /// Create a user with the Admin role.
    CreateAdmin(CreateAdmin),
    /// Print the effective configuration (secrets redacted) and exit.
    CheckConfig,
    /// Generate the Star Schema Benchmark tables in a PostgreSQL database and register it with
    /// datasets, charts and dashboards (example data for load tests).
    LoadExamples(liteset::ssb::LoadArgs),
    /// Write, build, test and install plugins (tools for plugin authors).
    #[command(subcommand)]
    Plugin(liteset::authoring::PluginCommand),
    /// Superset's web app: fetch and install it from the Python package index.
    #[command(subcommand)]
    Frontend(FrontendCommand),
}

#[derive(Subcommand)]
enum FrontendCommand {
    /// Download the apache-superset release, verify its sha256 and install its prebuilt web
    /// app (`superset/static/`) into `frontend.dir`; `serve` then serves Superset's UI.
    Install(liteset::frontend::install::InstallArgs),
}

#[derive(Args)]
struct CreateAdmin {
    #[arg(long)]
    username: String,
    /// Password; defaults to LITESET_ADMIN_PASSWORD.
    #[arg(long)]
    password: Option<String>,
    #[arg(long)]
    email: String,
    #[arg(long)]
    first_name: String,
    #[arg(long)]
    last_name: String,
}

fn main() -> ExitCode {
    release_freed_memory_at_once();
    let cli = Cli::parse();
    if let Command::Plugin(command) = cli.command {
        return plugin(command, cli.log_format.unwrap_or_default());
    }
    let overrides = Overrides {
        bind: match &cli.command {
            Command::Serve { bind } => bind.clone(),
            _ => None,
        },
        data_dir: cli.data_dir.clone(),
        log_format: cli.log_format,
    };
    if let Some(path) = &cli.config
        && !path.is_file()
    {
        eprintln!(
            "invalid configuration: config file {} does not exist",
            path.display()
        );
        return ExitCode::from(2);
    }
    let config = match Config::load(cli.config.as_deref(), &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    liteset::telemetry::init(config.log_format);
    tracing::debug!(message = "Effective configuration.", config = %config.redacted_toml());

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli.command, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(StartError::Config(e)) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
        Err(StartError::Examples(e)) => {
            tracing::error!(message = "load-examples failed.", error = %e);
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
        Err(e) => {
            tracing::error!(message = "Fatal error.", error = %e);
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// `liteset plugin …`: client tools that never load the server's configuration (a developer's
/// machine has none), so they start here, before `Config::load`.
fn plugin(command: liteset::authoring::PluginCommand, log_format: LogFormat) -> ExitCode {
    // The plugin's own log lines (`host.log`, every level) and warnings go to stderr; stdout
    // is the result.
    liteset::telemetry::init_with_default(log_format, "warn,liteset::plugins::call=trace");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(liteset::authoring::run(command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run(command: Command, config: Config) -> Result<(), StartError> {
    match command {
        Command::Serve { .. } => app::serve(config).await,
        Command::Init => {
            let state = app::state(config).await?;
            app::init(&state).await?;
            app::ensure_admin(&state).await
        }
        Command::Migrate => {
            let store = app::open_store(&config).await?;
            let applied = store.migrate().await?;
            println!("applied {} migration(s)", applied.len());
            Ok(())
        }
        Command::CreateAdmin(a) => {
            let state = app::state(config).await?;
            app::init(&state).await?;
            let password = match a.password.or_else(|| {
                state
                    .config
                    .admin_password
                    .as_ref()
                    .map(|p| p.expose().to_owned())
            }) {
                Some(p) if !p.is_empty() => p,
                _ => {
                    return Err(StartError::Config(liteset::config::ConfigError::Invalid(
                        vec!["create-admin: give --password or set LITESET_ADMIN_PASSWORD".into()],
                    )));
                }
            };
            let user = state
                .auth
                .create_user(
                    NewUser {
                        username: a.username,
                        first_name: a.first_name,
                        last_name: a.last_name,
                        email: a.email,
                        active: true,
                        password_hash: None,
                        roles: vec![catalog::ADMIN.into()],
                    },
                    password,
                )
                .await?;
            println!("created admin user {} (id {})", user.username, user.id);
            Ok(())
        }
        Command::CheckConfig => {
            print!("{}", config.redacted_toml());
            Ok(())
        }
        Command::LoadExamples(args) => {
            // Arguments first, so a typo costs nothing.
            let plan = liteset::ssb::Plan::new(&args)?;
            let state = app::state(config).await?;
            app::init(&state).await?;
            let summary = liteset::ssb::run(&state, &plan).await?;
            print!("{}", summary.report(&state.config));
            Ok(())
        }
        Command::Frontend(FrontendCommand::Install(args)) => {
            let dir = config.frontend_dir();
            let record = liteset::frontend::install::install(&dir, &args).await?;
            println!(
                "Superset {} web app installed in {} (from {}, sha256 {})",
                record.version,
                dir.display(),
                record.filename,
                record.sha256
            );
            Ok(())
        }
        // Handled in `main` before the configuration is loaded.
        Command::Plugin(_) => Ok(()),
    }
}
