//! The light-endpoint probe: a user that fetches `/api/v1/security/csrf_token/` once a second
//! for the whole run, filed under the current phase with its own label, so the report shows
//! whether light requests stay fast while the scenario loads the server.

use std::time::Duration;

use super::{Ctx, sign_in_retrying};
use crate::client::send;

pub const LABEL: &str = "probe_csrf_token";

/// Probe users are numbered from this, apart from the scenario's users.
pub const FIRST_USER: u32 = 1_000_000;

/// Runs probe user `n` until the run stops.
pub async fn run(ctx: Ctx, n: u32) {
    let rec = ctx.recorder(FIRST_USER + n);
    let setup = ctx.phase();
    let Some(user) = sign_in_retrying(&ctx, &rec, &setup).await else {
        return;
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ctx.wait_stop() => return,
            _ = tick.tick() => {}
        }
        let phase = ctx.phase();
        let out = tokio::select! {
            _ = ctx.wait_stop() => return,
            out = send(user.get("/api/v1/security/csrf_token/")) => out,
        };
        rec.record(&phase, LABEL, &out);
    }
}
