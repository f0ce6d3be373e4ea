//! Failed-login limit per (username, client address), so that password guessing against one
//! account from one place is slowed to a crawl while other users keep logging in.
//!
//! Counters live in this process; with several replicas each enforces its own limit, which
//! still bounds guessing to `replicas × limit` per window.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use moka::future::Cache;

use super::Error;

/// Counts failures in a fixed window that starts at the first failure.
pub struct LoginLimiter {
    max_failures: u32,
    window: Duration,
    failures: Cache<(String, Option<IpAddr>), (u32, Instant)>,
}

impl LoginLimiter {
    /// `max_failures == 0` disables the limit.
    pub fn new(max_failures: u32, window: Duration) -> LoginLimiter {
        LoginLimiter {
            max_failures,
            window,
            failures: Cache::builder()
                .max_capacity(1_000_000)
                .time_to_live(window)
                .build(),
        }
    }

    fn key(login: &str, client: Option<IpAddr>) -> (String, Option<IpAddr>) {
        (login.to_lowercase(), client)
    }

    /// Refuses the attempt when the limit is reached.
    pub async fn check(&self, login: &str, client: Option<IpAddr>) -> Result<(), Error> {
        if self.max_failures == 0 {
            return Ok(());
        }
        match self.failures.get(&Self::key(login, client)).await {
            Some((n, since)) if n >= self.max_failures => Err(Error::TooManyAttempts {
                retry_after_secs: self.window.saturating_sub(since.elapsed()).as_secs().max(1),
            }),
            _ => Ok(()),
        }
    }

    /// Counts one failure.
    pub async fn record_failure(&self, login: &str, client: Option<IpAddr>) {
        if self.max_failures == 0 {
            return;
        }
        self.failures
            .entry(Self::key(login, client))
            .and_upsert_with(|e| async move {
                match e {
                    Some(e) => {
                        let (n, since) = e.into_value();
                        (n.saturating_add(1), since)
                    }
                    None => (1, Instant::now()),
                }
            })
            .await;
    }

    /// Clears the count after a successful login.
    pub async fn reset(&self, login: &str, client: Option<IpAddr>) {
        self.failures.invalidate(&Self::key(login, client)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn third_attempt_after_two_failures_is_refused() {
        let l = LoginLimiter::new(2, Duration::from_secs(60));
        let ip = Some(IpAddr::from([127, 0, 0, 1]));
        l.record_failure("Admin", ip).await;
        assert!(l.check("admin", ip).await.is_ok());
        l.record_failure("admin", ip).await;
        assert!(matches!(
            l.check("admin", ip).await,
            Err(Error::TooManyAttempts { .. })
        ));
        // Another address, or another user, is not affected.
        assert!(
            l.check("admin", Some(IpAddr::from([10, 0, 0, 1])))
                .await
                .is_ok()
        );
        assert!(l.check("alice", ip).await.is_ok());
        l.reset("admin", ip).await;
        assert!(l.check("admin", ip).await.is_ok());
    }
}
