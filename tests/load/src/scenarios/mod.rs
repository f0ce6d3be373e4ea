//! The scenarios and what they share: the run context (clock, record channel, stop signal,
//! current phase) and timed sign-in.

pub mod probe;
pub mod s1;
pub mod s2;
pub mod s3;
pub mod ssb;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::{mpsc, watch};

use crate::client::{self, Credentials, Outcome, User};
use crate::stats::Record;

/// Everything a virtual user needs from the run. Cloning is cheap (channels and `Arc`s).
#[derive(Clone)]
pub struct Ctx {
    pub base: Arc<str>,
    pub creds: Arc<Credentials>,
    pub request_timeout: Duration,
    /// Time zero of `start_ms`.
    pub run_start: Instant,
    pub seed: u64,
    tx: mpsc::UnboundedSender<Record>,
    /// Turns true on Ctrl-C and when the scenario is over.
    pub stop: watch::Receiver<bool>,
    phase: Arc<watch::Sender<Arc<str>>>,
}

impl Ctx {
    pub fn new(
        base: Arc<str>,
        creds: Credentials,
        request_timeout: Duration,
        seed: u64,
        tx: mpsc::UnboundedSender<Record>,
        stop: watch::Receiver<bool>,
    ) -> Ctx {
        let (phase, _) = watch::channel(Arc::from("setup"));
        Ctx {
            base,
            creds: Arc::new(creds),
            request_timeout,
            run_start: Instant::now(),
            seed,
            tx,
            stop,
            phase: Arc::new(phase),
        }
    }

    /// The current phase (what probe records and resource samples are filed under).
    pub fn phase(&self) -> Arc<str> {
        self.phase.borrow().clone()
    }

    pub fn set_phase(&self, phase: &str) {
        self.phase.send_replace(Arc::from(phase));
    }

    pub fn phase_watch(&self) -> watch::Receiver<Arc<str>> {
        self.phase.subscribe()
    }

    pub fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Resolves once the run is stopping (immediately if it already is).
    pub async fn wait_stop(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|s| *s).await;
    }

    /// Sleeps for `d`; false when the run was stopped meanwhile.
    pub async fn sleep(&self, d: Duration) -> bool {
        tokio::select! {
            _ = self.wait_stop() => false,
            _ = tokio::time::sleep(d) => !self.stopped(),
        }
    }

    /// This user's random generator: reproducible from `--seed`.
    pub fn rng(&self, user: u32) -> StdRng {
        StdRng::seed_from_u64(
            self.seed
                .wrapping_add(u64::from(user).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        )
    }

    pub fn recorder(&self, user: u32) -> Recorder {
        Recorder {
            tx: self.tx.clone(),
            run_start: self.run_start,
            user,
        }
    }
}

/// Sends one user's records to the collector (an unbounded channel: no lock, no wait).
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::UnboundedSender<Record>,
    run_start: Instant,
    user: u32,
}

impl Recorder {
    pub fn record(&self, phase: &Arc<str>, label: &'static str, out: &Outcome) {
        self.raw(
            phase,
            label,
            out.start,
            out.latency,
            out.status,
            out.error.clone(),
        );
    }

    pub fn raw(
        &self,
        phase: &Arc<str>,
        label: &'static str,
        start: Instant,
        latency: Duration,
        status: u16,
        error: Option<String>,
    ) {
        let _ = self.tx.send(Record {
            phase: phase.clone(),
            label,
            user: self.user,
            start_ms: start.duration_since(self.run_start).as_secs_f64() * 1000.0,
            latency_ms: latency.as_secs_f64() * 1000.0,
            status,
            error,
        });
    }
}

/// Logs in on a fresh client and fetches a CSRF token, recording both (`login`,
/// `csrf_token`); `None` when either failed.
pub async fn sign_in_recorded(ctx: &Ctx, rec: &Recorder, phase: &Arc<str>) -> Option<User> {
    let http = match client::http_client(ctx.request_timeout) {
        Ok(http) => http,
        Err(e) => {
            let now = Instant::now();
            rec.raw(phase, "login", now, Duration::ZERO, 0, Some(e.to_string()));
            return None;
        }
    };
    let (out, token) = client::login(&http, &ctx.base, &ctx.creds).await;
    rec.record(phase, "login", &out);
    let access_token = token?;
    let (out, csrf) = client::csrf_token(&http, &ctx.base, &access_token).await;
    rec.record(phase, "csrf_token", &out);
    Some(User {
        http,
        base: ctx.base.clone(),
        access_token,
        csrf: csrf?,
    })
}

/// Signs in, retrying once a second until it works or the run stops.
pub async fn sign_in_retrying(ctx: &Ctx, rec: &Recorder, phase: &Arc<str>) -> Option<User> {
    loop {
        if ctx.stopped() {
            return None;
        }
        let attempt = tokio::select! {
            _ = ctx.wait_stop() => return None,
            u = sign_in_recorded(ctx, rec, phase) => u,
        };
        if attempt.is_some() {
            return attempt;
        }
        if !ctx.sleep(Duration::from_secs(1)).await {
            return None;
        }
    }
}

/// When user `i` of `n` starts within a ramp-up of `ramp`.
pub fn ramp_offset(i: u32, n: u32, ramp: Duration) -> Duration {
    if n == 0 {
        return Duration::ZERO;
    }
    ramp.mul_f64(f64::from(i) / f64::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_spread_over_ramp_up() {
        let r = Duration::from_secs(10);
        assert_eq!(ramp_offset(0, 4, r), Duration::ZERO);
        assert_eq!(ramp_offset(2, 4, r), Duration::from_secs(5));
        assert_eq!(ramp_offset(3, 4, r), Duration::from_millis(7500));
        assert_eq!(ramp_offset(0, 0, r), Duration::ZERO);
    }
}
