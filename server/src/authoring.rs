//! `liteset plugin …`: tools for plugin authors, from an empty folder to a plugin installed on
//! a server.
//!
//! - `new` ([`scaffold`]) writes a plugin crate from the templates in `authoring/templates/`.
//! - `build` and `test` ([`local`]) build the crate for `wasm32-wasip2` and run a component
//!   locally through the server's own plugin host ([`crate::plugins::Plugins`] with the default
//!   limits over a throwaway SQLite store), so what passes here passes the server's upload.
//! - `install` ([`install`]) logs in to a server over its REST API and uploads a component.
//!
//! These commands are clients: they never read the server's configuration. Exit codes follow
//! the operator interface: 2 for bad usage or input ([`AuthoringError::Usage`]), 1 otherwise.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use crate::plugins::PluginError;

mod install;
mod local;
mod scaffold;

/// Why an authoring command failed.
#[derive(Debug, thiserror::Error)]
pub enum AuthoringError {
    /// The command line or a file it names is wrong (exit code 2).
    #[error("{0}")]
    Usage(String),
    /// `cargo build` failed or produced no component.
    #[error("{0}")]
    Build(String),
    /// The plugin host refused the component or the call failed.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// The server could not be reached, refused the login or the upload.
    #[error("{0}")]
    Server(String),
    /// A local file could not be written, a temp dir not created, ...
    #[error("{0}")]
    Io(String),
}

impl AuthoringError {
    /// The process exit code: 2 for usage and invalid input, 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            AuthoringError::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Result of this layer.
pub type Result<T, E = AuthoringError> = std::result::Result<T, E>;

/// What a new plugin implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NewKind {
    /// A `post_processing` operation (`liteset_sdk::PostProcessor`).
    PostProcessor,
    /// A chart type: builds its query and draws it (`liteset_sdk::Viz`).
    Viz,
}

/// `liteset plugin …`.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Create a plugin crate that builds and passes its tests as generated.
    New(NewArgs),
    /// Build the crate for wasm32-wasip2 and check the component as the server would.
    Build(BuildArgs),
    /// Run a component locally under the server's limits on a table from a JSON file.
    Test(TestArgs),
    /// Log in to a server and upload a component (Admin only).
    Install(InstallArgs),
}

/// `liteset plugin new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// Plugin name: 1 to 64 lowercase letters, digits, '_' or '-'. Viz plugins also use it as
    /// their `viz_type`.
    pub name: String,
    /// What the plugin implements.
    #[arg(long, value_enum)]
    pub kind: NewKind,
    /// Folder to create (must not exist or be empty); default `./<name>`.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// The liteset-sdk crate to depend on by path; default: the `sdk/` folder of the checkout
    /// this binary was built from.
    #[arg(long)]
    pub sdk_path: Option<PathBuf>,
}

/// `liteset plugin build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The plugin crate (the folder holding its Cargo.toml).
    #[arg(long, default_value = ".")]
    pub path: PathBuf,
}

/// `liteset plugin test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// The component (`.wasm`).
    pub wasm: PathBuf,
    /// The input table: a JSON list of records, `[{"city": "Cork", "n": 1}, ...]` (`-` reads
    /// stdin).
    #[arg(long)]
    pub input: PathBuf,
    /// Columns of the input holding times (epoch milliseconds or ISO 8601 text); repeatable.
    #[arg(long = "temporal", value_name = "COLUMN")]
    pub temporal: Vec<String>,
    /// Post-processors: the step's options as JSON (`@file` reads a file).
    #[arg(long, default_value = "{}")]
    pub params: String,
    /// Post-processors: the operation name passed to the plugin; default the plugin's name.
    #[arg(long)]
    pub operation: Option<String>,
    /// Viz plugins: the chart's form data as JSON (`@file` reads a file).
    #[arg(long, default_value = "{}")]
    pub form_data: String,
    /// Viz plugins: width of the render.
    #[arg(long, default_value_t = 800)]
    pub width: u32,
    /// Viz plugins: height of the render.
    #[arg(long, default_value_t = 600)]
    pub height: u32,
    /// Viz plugins: also write the sanitised SVG to this file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Viz plugins: also write the chart as PNG (rasterised like thumbnails) to this file.
    #[arg(long)]
    pub png: Option<PathBuf>,
}

/// `liteset plugin install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The component (`.wasm`).
    pub wasm: PathBuf,
    /// Base URL of the server, e.g. `http://127.0.0.1:8088`.
    #[arg(long)]
    pub server: String,
    /// An Admin's username.
    #[arg(long, env = "LITESET_USERNAME")]
    pub username: Option<String>,
    /// Their password (prefer the environment variable: arguments are visible to other users
    /// of the machine).
    #[arg(long, env = "LITESET_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
}

/// Runs one `liteset plugin` command.
pub async fn run(command: PluginCommand) -> Result<()> {
    match command {
        PluginCommand::New(args) => scaffold::new(&args),
        PluginCommand::Build(args) => local::build(&args).await,
        PluginCommand::Test(args) => local::test(&args).await,
        PluginCommand::Install(args) => install::install(&args).await,
    }
}

/// Reads a file named on the command line; a missing or unreadable one is a usage error.
fn read_input(path: &std::path::Path, what: &str) -> Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .map_err(|e| AuthoringError::Usage(format!("cannot read {what} from stdin: {e}")))?;
        return Ok(buf);
    }
    std::fs::read(path)
        .map_err(|e| AuthoringError::Usage(format!("cannot read {what} {}: {e}", path.display())))
}
