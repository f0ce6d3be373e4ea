//! Command-line interface.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

fn duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| e.to_string())
}

/// Load harness for Superset-compatible servers (Liteset, Apache Superset 6.0): REST API only.
#[derive(Debug, Parser)]
#[command(name = "liteset-load", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Dashboard fan-out: users open random dashboards, charts fetched 6 at a time, think time.
    S1(S1Args),
    /// SQL Lab session: login, csrf_token, database list, then the 13 SSB queries in sequence.
    S2(S2Args),
    /// IO-latency sweep: closed loop over `Sleep <n> ms` charts with force=true, per delay.
    S3(S3Args),
    /// Draws the req/s-against-delay PNG of an s3 run from its summary.csv.
    Plot(PlotArgs),
}

/// Flags every scenario shares.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Base URL of the server.
    #[arg(long, default_value = "http://127.0.0.1:8088")]
    pub url: String,
    #[arg(long, default_value = "admin")]
    pub username: String,
    #[arg(long, env = "LOAD_PASSWORD", hide_env_values = true)]
    pub password: String,
    /// Length of the measured run (for s3: of each delay's window).
    #[arg(long, value_parser = duration, default_value = "120s")]
    pub duration: Duration,
    /// Users start spread evenly over this time (s3: their logins).
    #[arg(long, value_parser = duration, default_value = "10s")]
    pub ramp_up: Duration,
    /// Output folder (default `load-results/<scenario>-<timestamp>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Sample this process's CPU and RSS from /proc once per second (Linux).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Users that fetch /api/v1/security/csrf_token/ once per second for the whole run.
    #[arg(long, default_value_t = 1)]
    pub probe_users: u32,
    /// Seed of the random choices (dashboards, think times, client ids); random when absent.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A request taking longer is an error (`timeout`).
    #[arg(long, value_parser = duration, default_value = "60s")]
    pub request_timeout: Duration,
}

#[derive(Debug, Clone, Args)]
pub struct S1Args {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, default_value_t = 200)]
    pub users: u32,
    /// Only dashboards whose slug starts with this (empty: every dashboard).
    #[arg(long, default_value = "ssb-")]
    pub dashboard_slug_prefix: String,
    /// Append `?force=true` to chart data requests (bypasses the server's cache).
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_parser = duration, default_value = "3s")]
    pub think_min: Duration,
    #[arg(long, value_parser = duration, default_value = "5s")]
    pub think_max: Duration,
    /// Chart data requests in flight at once per dashboard (a browser's per-host limit).
    #[arg(long, default_value_t = 6)]
    pub max_in_flight: usize,
}

#[derive(Debug, Clone, Args)]
pub struct S2Args {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, default_value_t = 50)]
    pub users: u32,
    /// The database the SSB queries run on.
    #[arg(long, default_value = "ssb")]
    pub database_name: String,
    #[arg(long, default_value = "public")]
    pub schema: String,
    #[arg(long, default_value_t = 1000)]
    pub query_limit: u32,
}

#[derive(Debug, Clone, Args)]
pub struct S3Args {
    #[command(flatten)]
    pub common: Common,
    #[arg(long, default_value_t = 50)]
    pub users: u32,
    /// Delays in ms to run (a subset of the `Sleep <n> ms` charts found); default all found.
    #[arg(long, value_delimiter = ',')]
    pub delays: Vec<u64>,
    /// Prefix of the sleep charts' names.
    #[arg(long, default_value = "Sleep ")]
    pub chart_name_prefix: String,
    /// Pause between two delays' windows (the server cancels what was cut off).
    #[arg(long, value_parser = duration, default_value = "2s")]
    pub settle: Duration,
}

#[derive(Debug, Clone, Args)]
pub struct PlotArgs {
    /// An s3 run's summary.csv, or the folder holding it.
    pub summary: PathBuf,
    /// Where to write the PNG (default: plot.png beside summary.csv).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flags() {
        let cli = Cli::try_parse_from([
            "liteset-load",
            "s3",
            "--password",
            "x",
            "--users",
            "5",
            "--duration",
            "2m",
            "--delays",
            "10,50,100",
        ])
        .unwrap();
        let Command::S3(a) = cli.command else {
            panic!("not s3")
        };
        assert_eq!(a.users, 5);
        assert_eq!(a.delays, [10, 50, 100]);
        assert_eq!(a.common.duration, Duration::from_secs(120));
        assert_eq!(a.common.request_timeout, Duration::from_secs(60));
        assert_eq!(a.common.url, "http://127.0.0.1:8088");

        let cli = Cli::try_parse_from([
            "liteset-load",
            "s1",
            "--password",
            "x",
            "--dashboard-slug-prefix",
            "",
            "--think-min",
            "100ms",
        ])
        .unwrap();
        let Command::S1(a) = cli.command else {
            panic!("not s1")
        };
        assert_eq!(a.users, 200);
        assert_eq!(a.dashboard_slug_prefix, "");
        assert_eq!(a.think_min, Duration::from_millis(100));
        assert_eq!(a.max_in_flight, 6);
        assert!(!a.force);
    }
}
