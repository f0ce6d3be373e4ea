//! S2, SQL Lab session: each iteration is a fresh session (new client, new cookie jar): login,
//! csrf_token, the database list, then the 13 SSB queries one after another through
//! `POST /api/v1/sqllab/execute/`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rand::Rng;
use rand::distributions::Alphanumeric;
use rand::rngs::StdRng;
use serde_json::json;

use super::{Ctx, Recorder, ramp_offset, sign_in_recorded, ssb};
use crate::cli::S2Args;
use crate::client::{User, send};
use crate::rison;

/// The id of the database named `name`.
pub async fn database_id(user: &User, name: &str) -> anyhow::Result<i64> {
    let q = rison::encode(&rison::database_query(name));
    let out = send(user.get(&format!("/api/v1/database/?q={q}"))).await;
    if let Some(e) = &out.error {
        bail!("GET /api/v1/database/ failed: {e}");
    }
    let body = out.json()?;
    let rows = body["result"]
        .as_array()
        .with_context(|| format!("GET /api/v1/database/: no result in {body}"))?;
    match rows
        .iter()
        .find(|r| r["database_name"].as_str() == Some(name))
    {
        Some(r) => r["id"].as_i64().with_context(|| format!("database {r}")),
        None => bail!("no database named {name:?} at {}", user.base),
    }
}

/// Runs S2 until `--duration` is over (or Ctrl-C); returns the measured window.
pub async fn run(ctx: &Ctx, args: &S2Args) -> anyhow::Result<Vec<(String, f64)>> {
    let setup = User::sign_in(ctx.base.clone(), &ctx.creds, ctx.request_timeout).await?;
    let db = database_id(&setup, &args.database_name).await?;
    eprintln!(
        "s2: database {:?} is id {db}, {} users",
        args.database_name, args.users
    );
    ctx.set_phase("run");
    let phase: Arc<str> = Arc::from("run");
    let t0 = Instant::now();
    let deadline = tokio::time::Instant::from_std(t0 + args.common.duration);
    let mut tasks = Vec::new();
    for i in 0..args.users {
        let ctx = ctx.clone();
        let args = args.clone();
        let phase = phase.clone();
        let offset = ramp_offset(i, args.users, args.common.ramp_up);
        tasks.push(tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {}
                _ = ctx.wait_stop() => {}
                _ = user_loop(&ctx, &args, db, &phase, i, offset) => {}
            }
        }));
    }
    for t in tasks {
        t.await.context("a virtual user panicked")?;
    }
    let window = t0.elapsed().min(args.common.duration).as_secs_f64();
    Ok(vec![("run".to_owned(), window)])
}

async fn user_loop(ctx: &Ctx, args: &S2Args, db: i64, phase: &Arc<str>, i: u32, offset: Duration) {
    if !ctx.sleep(offset).await {
        return;
    }
    let rec = ctx.recorder(i);
    let mut rng = ctx.rng(i);
    loop {
        if !session(ctx, args, db, phase, &rec, &mut rng).await
            && !ctx.sleep(Duration::from_secs(1)).await
        {
            return;
        }
        if ctx.stopped() {
            return;
        }
    }
}

/// One session; false when it could not sign in.
async fn session(
    ctx: &Ctx,
    args: &S2Args,
    db: i64,
    phase: &Arc<str>,
    rec: &Recorder,
    rng: &mut StdRng,
) -> bool {
    let Some(user) = sign_in_recorded(ctx, rec, phase).await else {
        return false;
    };
    let out = send(user.get("/api/v1/database/")).await;
    rec.record(phase, "database", &out);
    for (_, sql) in ssb::QUERIES {
        let client_id: String = (&mut *rng)
            .sample_iter(&Alphanumeric)
            .take(10)
            .map(char::from)
            .collect();
        let body = json!({
            "database_id": db,
            "sql": sql,
            "runAsync": false,
            "schema": args.schema,
            "queryLimit": args.query_limit,
            "client_id": client_id,
        });
        let out = send(user.post_json("/api/v1/sqllab/execute/", &body)).await;
        rec.record(phase, "sqllab_execute", &out);
    }
    true
}
