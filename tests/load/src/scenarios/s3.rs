//! S3, IO-latency sweep: for each `Sleep <n> ms` chart, in increasing order, every user loops
//! `GET /api/v1/chart/<id>/data/?force=true` with no think time for `--duration` (a closed
//! loop: the ceiling is users / delay). Requests still in flight when a window closes are
//! dropped, not counted, and req/s is completed requests over the window.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};

use super::{Ctx, ramp_offset, sign_in_retrying};
use crate::cli::S3Args;
use crate::client::{User, send};
use crate::rison;

/// One delay of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SleepChart {
    pub delay_ms: u64,
    pub chart_id: i64,
    pub name: String,
}

/// The delay in a chart name `<prefix><n> ms` (`Sleep 500 ms` → 500).
pub fn parse_delay(name: &str, prefix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?
        .trim()
        .strip_suffix("ms")?
        .trim()
        .parse()
        .ok()
}

/// The phase name of a delay.
pub fn phase_name(delay_ms: u64) -> String {
    format!("{delay_ms}ms")
}

/// The sleep charts, in increasing delay, restricted to `wanted` when it is not empty.
pub async fn discover(
    user: &User,
    prefix: &str,
    wanted: &[u64],
) -> anyhow::Result<Vec<SleepChart>> {
    let rows = user
        .list_all("/api/v1/chart/", |page| rison::charts_query(prefix, page))
        .await?;
    let mut charts: Vec<SleepChart> = rows
        .iter()
        .filter_map(|r| {
            let name = r["slice_name"].as_str()?;
            Some(SleepChart {
                delay_ms: parse_delay(name, prefix)?,
                chart_id: r["id"].as_i64()?,
                name: name.to_owned(),
            })
        })
        .collect();
    charts.sort_by_key(|c| (c.delay_ms, c.chart_id));
    charts.dedup_by_key(|c| c.delay_ms);
    if !wanted.is_empty() {
        let missing: Vec<u64> = wanted
            .iter()
            .copied()
            .filter(|d| !charts.iter().any(|c| c.delay_ms == *d))
            .collect();
        if !missing.is_empty() {
            bail!(
                "no chart named \"{prefix}<n> ms\" for delay(s) {missing:?} ms (found {:?})",
                charts.iter().map(|c| c.delay_ms).collect::<Vec<_>>()
            );
        }
        charts.retain(|c| wanted.contains(&c.delay_ms));
    }
    if charts.is_empty() {
        bail!("no chart named \"{prefix}<n> ms\" at {}", user.base);
    }
    Ok(charts)
}

/// Runs the sweep; returns each delay's phase and measured window.
pub async fn run(ctx: &Ctx, args: &S3Args) -> anyhow::Result<(Vec<(String, f64)>, Vec<u64>)> {
    let setup = User::sign_in(ctx.base.clone(), &ctx.creds, ctx.request_timeout).await?;
    let charts = discover(&setup, &args.chart_name_prefix, &args.delays).await?;
    eprintln!(
        "s3: {} users, delays {:?} ms, {:?} each",
        args.users,
        charts.iter().map(|c| c.delay_ms).collect::<Vec<_>>(),
        args.common.duration
    );

    // Sign everyone in first (spread over the ramp-up): each window then starts with all users.
    let setup_phase: Arc<str> = Arc::from("setup");
    let mut logins = Vec::new();
    for i in 0..args.users {
        let ctx = ctx.clone();
        let phase = setup_phase.clone();
        let offset = ramp_offset(i, args.users, args.common.ramp_up);
        logins.push(tokio::spawn(async move {
            if !ctx.sleep(offset).await {
                return None;
            }
            sign_in_retrying(&ctx, &ctx.recorder(i), &phase).await
        }));
    }
    let mut users = Vec::new();
    for t in logins {
        users.push(t.await.context("a virtual user panicked")?);
    }
    if ctx.stopped() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut users: Vec<User> = users.into_iter().flatten().collect();

    let mut windows = Vec::new();
    let mut delays = Vec::new();
    for (n, chart) in charts.iter().enumerate() {
        if n > 0 && !ctx.sleep(args.settle).await {
            break;
        }
        let name = phase_name(chart.delay_ms);
        eprintln!("s3: {} ({})", name, chart.name);
        ctx.set_phase(&name);
        let phase: Arc<str> = Arc::from(name.as_str());
        let path: Arc<str> =
            Arc::from(format!("/api/v1/chart/{}/data/?force=true", chart.chart_id));
        let t0 = Instant::now();
        let deadline = tokio::time::Instant::from_std(t0 + args.common.duration);
        let mut tasks = Vec::new();
        for (i, user) in users.drain(..).enumerate() {
            let ctx = ctx.clone();
            let phase = phase.clone();
            let path = path.clone();
            tasks.push(tokio::spawn(async move {
                let i = i as u32;
                let rec = ctx.recorder(i);
                let mut user = user;
                // One timer and one stop future for the whole window, not one per request.
                let window_end = tokio::time::sleep_until(deadline);
                let stop = ctx.wait_stop();
                tokio::pin!(window_end, stop);
                loop {
                    let out = tokio::select! {
                        biased;
                        _ = &mut window_end => break,
                        _ = &mut stop => break,
                        out = send(user.get(&path)) => out,
                    };
                    rec.record(&phase, "chart_data", &out);
                    if out.status == 401 {
                        match sign_in_retrying(&ctx, &rec, &phase).await {
                            Some(u) => user = u,
                            None => break,
                        }
                    }
                }
                user
            }));
        }
        for t in tasks {
            users.push(t.await.context("a virtual user panicked")?);
        }
        windows.push((name, t0.elapsed().min(args.common.duration).as_secs_f64()));
        delays.push(chart.delay_ms);
        if ctx.stopped() {
            break;
        }
    }
    Ok((windows, delays))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_from_chart_names() {
        assert_eq!(parse_delay("Sleep 10 ms", "Sleep "), Some(10));
        assert_eq!(parse_delay("Sleep 5000 ms", "Sleep "), Some(5000));
        assert_eq!(parse_delay("Sleep 120000ms", "Sleep "), Some(120_000));
        assert_eq!(parse_delay("Sleep well", "Sleep "), None);
        assert_eq!(parse_delay("Sleep 1 s", "Sleep "), None);
        assert_eq!(parse_delay("Other 10 ms", "Sleep "), None);
        assert_eq!(phase_name(500), "500ms");
    }
}
