//! Log and trace setup. The only place a tracing subscriber is installed.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Quiet defaults for chatty dependencies; `RUST_LOG` replaces the whole list.
const DEFAULT_FILTER: &str = "info,tokio_postgres=warn,hyper=warn,poem=warn,rustls=warn";

/// Installs the global subscriber writing to stderr (stdout is kept for the `READY` line and
/// one-time notices). Calling it twice is harmless.
pub fn init(format: LogFormat) {
    init_with_default(format, DEFAULT_FILTER);
}

/// [`init`] with another filter for when `RUST_LOG` is unset (the `liteset plugin` tools show
/// the plugin's own log lines and warnings, not the server's start-up chatter).
pub fn init_with_default(format: LogFormat, default_filter: &str) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(default_filter))
        // tokio-postgres logs bound parameters at debug level, and parameters can be password
        // hashes or sealed credentials; no RUST_LOG setting may turn that on.
        .add_directive("tokio_postgres=info".parse().expect("static directive"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
}
