//! S1, dashboard fan-out: each user opens a random dashboard (its record, its chart list, then
//! every chart's data at most `max_in_flight` at a time, as a browser does), thinks, repeats.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use rand::Rng;

use super::{Ctx, Recorder, ramp_offset, sign_in_retrying};
use crate::cli::S1Args;
use crate::client::{User, send};
use crate::rison;

/// A dashboard the users pick from.
#[derive(Debug, Clone)]
pub struct Dashboard {
    pub id: i64,
    pub title: String,
}

/// The dashboards whose slug starts with `prefix` (every dashboard for an empty prefix).
pub async fn discover(user: &User, prefix: &str) -> anyhow::Result<Vec<Dashboard>> {
    let rows = user
        .list_all("/api/v1/dashboard/", |page| {
            rison::dashboards_query(prefix, page)
        })
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Dashboard {
                id: r["id"].as_i64().with_context(|| format!("dashboard {r}"))?,
                title: r["dashboard_title"].as_str().unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// Runs S1 until `--duration` is over (or Ctrl-C); returns the measured window in seconds.
pub async fn run(ctx: &Ctx, args: &S1Args) -> anyhow::Result<Vec<(String, f64)>> {
    if args.think_max < args.think_min {
        bail!("--think-max is shorter than --think-min");
    }
    let setup = User::sign_in(ctx.base.clone(), &ctx.creds, ctx.request_timeout).await?;
    let dashboards = discover(&setup, &args.dashboard_slug_prefix).await?;
    if dashboards.is_empty() {
        bail!(
            "no dashboard whose slug starts with {:?} at {}",
            args.dashboard_slug_prefix,
            ctx.base
        );
    }
    eprintln!(
        "s1: {} dashboards ({}), {} users",
        dashboards.len(),
        dashboards
            .iter()
            .map(|d| d.title.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        args.users
    );
    let dashboards = Arc::new(dashboards);
    ctx.set_phase("run");
    let phase: Arc<str> = Arc::from("run");
    let t0 = Instant::now();
    let deadline = tokio::time::Instant::from_std(t0 + args.common.duration);
    let mut tasks = Vec::new();
    for i in 0..args.users {
        let ctx = ctx.clone();
        let args = args.clone();
        let dashboards = dashboards.clone();
        let phase = phase.clone();
        let offset = ramp_offset(i, args.users, args.common.ramp_up);
        tasks.push(tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {}
                _ = user_loop(&ctx, &args, &dashboards, &phase, i, offset) => {}
            }
        }));
    }
    for t in tasks {
        t.await.context("a virtual user panicked")?;
    }
    let window = t0.elapsed().min(args.common.duration).as_secs_f64();
    Ok(vec![("run".to_owned(), window)])
}

async fn user_loop(
    ctx: &Ctx,
    args: &S1Args,
    dashboards: &[Dashboard],
    phase: &Arc<str>,
    i: u32,
    offset: Duration,
) {
    if !ctx.sleep(offset).await {
        return;
    }
    let rec = ctx.recorder(i);
    let mut rng = ctx.rng(i);
    let Some(mut user) = sign_in_retrying(ctx, &rec, phase).await else {
        return;
    };
    loop {
        let dash = &dashboards[rng.gen_range(0..dashboards.len())];
        let expired = tokio::select! {
            _ = ctx.wait_stop() => return,
            expired = load_dashboard(&user, &rec, phase, dash.id, args) => expired,
        };
        if expired {
            match sign_in_retrying(ctx, &rec, phase).await {
                Some(u) => user = u,
                None => return,
            }
        }
        let think = if args.think_max > args.think_min {
            rng.gen_range(args.think_min..=args.think_max)
        } else {
            args.think_min
        };
        if !ctx.sleep(think).await {
            return;
        }
    }
}

/// One dashboard load, each request recorded as it completes and the whole load (first request
/// to last chart data) as `dashboard_load`. True when the server answered 401 (token expired).
async fn load_dashboard(
    user: &User,
    rec: &Recorder,
    phase: &Arc<str>,
    id: i64,
    args: &S1Args,
) -> bool {
    let start = Instant::now();
    let (mut total, mut failed, mut first_fail) = (0usize, 0usize, None::<u16>);
    let mut expired = false;
    let mut note = |status: u16, ok: bool| {
        total += 1;
        if !ok {
            failed += 1;
            first_fail.get_or_insert(status);
        }
        if status == 401 {
            expired = true;
        }
    };

    let out = send(user.get(&format!("/api/v1/dashboard/{id}"))).await;
    rec.record(phase, "dashboard", &out);
    note(out.status, out.ok());

    let out = send(user.get(&format!("/api/v1/dashboard/{id}/charts"))).await;
    rec.record(phase, "dashboard_charts", &out);
    note(out.status, out.ok());
    let chart_ids: Vec<i64> = out
        .json()
        .ok()
        .and_then(|b| {
            b["result"]
                .as_array()
                .map(|cs| cs.iter().filter_map(|c| c["id"].as_i64()).collect())
        })
        .unwrap_or_default();

    let suffix = if args.force { "?force=true" } else { "" };
    let mut charts = futures_util::stream::iter(chart_ids)
        .map(|cid| send(user.get(&format!("/api/v1/chart/{cid}/data/{suffix}"))))
        .buffer_unordered(args.max_in_flight.max(1));
    while let Some(out) = charts.next().await {
        rec.record(phase, "chart_data", &out);
        note(out.status, out.ok());
    }

    let error = (failed > 0).then(|| format!("{failed} of {total} requests failed"));
    rec.raw(
        phase,
        "dashboard_load",
        start,
        start.elapsed(),
        first_fail.unwrap_or(200),
        error,
    );
    expired
}
