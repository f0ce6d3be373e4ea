//! liteset-load: a load harness for Superset-compatible servers, REST API only.
//!
//! One multi-threaded tokio runtime; each virtual user is a task with its own reqwest client
//! (cookie jar, keep-alive pool) and sends its records over an unbounded channel to one
//! collector task, so nothing on the hot path takes a lock. See README.md.

pub mod cli;
pub mod client;
pub mod procfs;
pub mod report;
pub mod rison;
pub mod scenarios;
pub mod stats;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use tokio::sync::{mpsc, watch};

use cli::{Command, Common};
use client::Credentials;
use report::RunInfo;
use scenarios::Ctx;

/// Runs one subcommand.
pub async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Plot(args) => {
            let csv = if args.summary.is_dir() {
                args.summary.join("summary.csv")
            } else {
                args.summary.clone()
            };
            let rows = report::read_summary(&csv)?;
            let users = rows.first().map(|r| r.users).unwrap_or(0);
            let png = args.out.unwrap_or_else(|| csv.with_file_name("plot.png"));
            report::plot_sweep(&report::sweep(&rows), users, &png)?;
            println!("{}", png.display());
            Ok(())
        }
        Command::S1(args) => {
            let notes = vec![
                format!("dashboards: slug prefix {:?}", args.dashboard_slug_prefix),
                format!(
                    "force: {}, think time {}–{}, chart requests in flight per dashboard: {}",
                    args.force,
                    humantime::format_duration(args.think_min),
                    humantime::format_duration(args.think_max),
                    args.max_in_flight
                ),
            ];
            let common = args.common.clone();
            execute("s1", &common, args.users, notes, move |ctx| async move {
                scenarios::s1::run(&ctx, &args).await
            })
            .await
        }
        Command::S2(args) => {
            let notes = vec![format!(
                "database: {:?}, schema {:?}, queryLimit {}, 13 SSB queries per session",
                args.database_name, args.schema, args.query_limit
            )];
            let common = args.common.clone();
            execute("s2", &common, args.users, notes, move |ctx| async move {
                scenarios::s2::run(&ctx, &args).await
            })
            .await
        }
        Command::S3(args) => {
            let notes = vec![format!(
                "charts named {:?}<n> ms, force=true, settle {} between delays",
                args.chart_name_prefix,
                humantime::format_duration(args.settle)
            )];
            let common = args.common.clone();
            execute("s3", &common, args.users, notes, move |ctx| async move {
                scenarios::s3::run(&ctx, &args).await.map(|(w, _)| w)
            })
            .await
        }
    }
}

fn default_out(scenario: &str) -> PathBuf {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    Path::new("load-results").join(format!("{scenario}-{stamp}"))
}

/// The shared frame of every scenario: output folder, Ctrl-C, collector, sampler, probes, the
/// scenario itself, then the report.
async fn execute<F, Fut>(
    scenario: &'static str,
    common: &Common,
    users: u32,
    notes: Vec<String>,
    body: F,
) -> anyhow::Result<()>
where
    F: FnOnce(Ctx) -> Fut,
    Fut: Future<Output = anyhow::Result<Vec<(String, f64)>>>,
{
    let base: Arc<str> = Arc::from(common.url.trim_end_matches('/'));
    let out = common.out.clone().unwrap_or_else(|| default_out(scenario));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    if let Some(pid) = common.server_pid {
        procfs::check(pid).with_context(|| format!("--server-pid {pid}"))?;
    }
    let seed = common.seed.unwrap_or_else(rand::random);
    let started = chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false);

    let (tx, mut rx) = mpsc::unbounded_channel();
    let collector = tokio::spawn(async move {
        let mut records = Vec::new();
        while let Some(r) = rx.recv().await {
            records.push(r);
        }
        records
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let stop_tx = stop_tx.clone();
        let interrupted = interrupted.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("interrupted: stopping, results so far will be written");
                interrupted.store(true, Ordering::SeqCst);
                stop_tx.send_replace(true);
            }
        });
    }
    let creds = Credentials {
        username: common.username.clone(),
        password: common.password.clone(),
    };
    let ctx = Ctx::new(
        base.clone(),
        creds,
        common.request_timeout,
        seed,
        tx,
        stop_rx.clone(),
    );

    let sampler = common.server_pid.map(|pid| {
        tokio::spawn(procfs::sample(
            pid,
            ctx.run_start,
            ctx.phase_watch(),
            stop_rx.clone(),
        ))
    });
    let probes: Vec<_> = (0..common.probe_users)
        .map(|n| tokio::spawn(scenarios::probe::run(ctx.clone(), n)))
        .collect();

    let result = body(ctx).await;
    stop_tx.send_replace(true);
    for p in probes {
        let _ = p.await;
    }
    let samples = match sampler {
        Some(s) => s.await.unwrap_or_default(),
        None => Vec::new(),
    };
    // Every sender (users, probes, the context) is gone now: the collector ends.
    let mut records = collector.await.context("the collector panicked")?;
    let windows = result?;
    records.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));

    let info = RunInfo {
        scenario,
        url: base.to_string(),
        users,
        duration: common.duration,
        ramp_up: common.ramp_up,
        probe_users: common.probe_users,
        seed,
        started,
        server_pid: common.server_pid,
        interrupted: interrupted.load(Ordering::SeqCst),
        notes,
    };
    let summaries = stats::summarize(&records, &windows);
    report::write_requests(&out.join("requests.csv"), scenario, &records)?;
    report::write_summary(&out.join("summary.csv"), &info, &summaries)?;
    if common.server_pid.is_some() {
        report::write_resources(&out.join("resources.csv"), &samples)?;
    }
    let md = report::markdown(&info, &summaries, &records, &samples);
    std::fs::write(out.join("summary.md"), &md)?;
    if scenario == "s3" {
        let rows = report::read_summary(&out.join("summary.csv"))?;
        let points = report::sweep(&rows);
        if !points.is_empty() {
            report::plot_sweep(&points, users, &out.join("plot.png"))?;
        }
    }
    println!("{md}");
    eprintln!("results in {}", out.display());
    Ok(())
}
