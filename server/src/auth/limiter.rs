//! Login admission: the failed-login limit per (account, client address), and the bounded,
//! per-account-fair queue in front of password verification. An account is the user a login
//! names by username or email; a login naming no account is counted under its case-folded
//! text.
//!
//! The limit counts an attempt as failed *before* its password is checked (a reservation,
//! cleared on success, given back when the attempt was never evaluated), so concurrent
//! attempts cannot all slip under it: past the limit the answer is a 429 without verifying.
//!
//! The queue bounds how many logins wait for, or hold, a hashing worker (`auth.login_queue_len`)
//! and how many of those may be for one account (`auth.login_queue_per_user`), so a flood of
//! attempts for one account, from however many addresses, takes a few places and leaves the
//! rest to other users. Nobody waits longer than `auth.login_queue_timeout_ms`: past it, or
//! when the queue is full, the answer is a 503 with `Retry-After`, never a hang or a 500.
//!
//! Counters live in this process; with several replicas each enforces its own limit, which
//! still bounds guessing to `replicas × limit` per window.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use moka::future::Cache;
use moka::ops::compute::{CompResult, Op};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Error;

/// Whom a login attempt is against: the account it names (by username or email alike), or,
/// when it names none, the name as typed (case-folded).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LoginSubject {
    /// An existing account.
    User(i64),
    /// A login that matches no account.
    Unknown(String),
}

impl LoginSubject {
    /// The subject of an attempt with `login` that resolved to `user_id`.
    pub fn of(login: &str, user_id: Option<i64>) -> LoginSubject {
        match user_id {
            Some(id) => LoginSubject::User(id),
            None => LoginSubject::Unknown(login.to_lowercase()),
        }
    }
}

type Key = (LoginSubject, Option<IpAddr>);

/// Counts failures in a fixed window that starts at the first failure.
pub struct LoginLimiter {
    max_failures: u32,
    window: Duration,
    failures: Cache<Key, (u32, Instant)>,
}

/// One attempt counted in advance as a failure; resolve it with [`LoginLimiter::succeeded`] or
/// [`LoginLimiter::not_evaluated`], or keep it (the attempt failed).
#[must_use]
pub struct Reservation {
    key: Option<Key>,
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

    /// Counts the attempt as failed unless the limit is already reached, atomically per key,
    /// so of N concurrent attempts at most the limit's worth get through.
    pub async fn reserve(
        &self,
        subject: &LoginSubject,
        client: Option<IpAddr>,
    ) -> Result<Reservation, Error> {
        if self.max_failures == 0 {
            return Ok(Reservation { key: None });
        }
        let key = (subject.clone(), client);
        let max = self.max_failures;
        let outcome = self
            .failures
            .entry(key.clone())
            .and_compute_with(|e| async move {
                match e.map(|e| e.into_value()) {
                    Some((n, _)) if n >= max => Op::Nop,
                    Some((n, since)) => Op::Put((n + 1, since)),
                    None => Op::Put((1, Instant::now())),
                }
            })
            .await;
        match outcome {
            CompResult::Unchanged(e) => {
                let (_, since) = e.into_value();
                Err(Error::TooManyAttempts {
                    retry_after_secs: self.window.saturating_sub(since.elapsed()).as_secs().max(1),
                })
            }
            _ => Ok(Reservation { key: Some(key) }),
        }
    }

    /// The attempt succeeded: the count starts over.
    pub async fn succeeded(&self, r: Reservation) {
        if let Some(key) = r.key {
            self.failures.invalidate(&key).await;
        }
    }

    /// The attempt was refused before its password was checked (server busy): it does not
    /// count.
    pub async fn not_evaluated(&self, r: Reservation) {
        let Some(key) = r.key else { return };
        self.failures
            .entry(key)
            .and_compute_with(|e| async move {
                match e.map(|e| e.into_value()) {
                    Some((n, since)) if n > 1 => Op::Put((n - 1, since)),
                    Some(_) => Op::Remove,
                    None => Op::Nop,
                }
            })
            .await;
    }
}

/// The bounded, per-account-fair wait for password verification.
pub struct LoginQueue {
    /// Places: logins waiting for a hashing worker or being verified.
    places: Arc<Semaphore>,
    /// Logins waiting for a place; past `len` the queue is full.
    waiting: AtomicUsize,
    len: usize,
    per_user: usize,
    /// Per-account semaphores, present while someone holds or waits for one.
    users: Arc<UserSlots>,
    timeout: Duration,
}

/// Seconds a client is told to wait after a busy answer.
const BUSY_RETRY_AFTER_SECS: u64 = 1;

impl LoginQueue {
    /// `len` places in all, at most `per_user` of them for one account, waits of `timeout`.
    pub fn new(len: usize, per_user: usize, timeout: Duration) -> LoginQueue {
        LoginQueue {
            places: Arc::new(Semaphore::new(len.max(1))),
            waiting: AtomicUsize::new(0),
            len: len.max(1),
            per_user: per_user.max(1),
            users: Arc::default(),
            timeout,
        }
    }

    /// Runs `work` (the verification of one login) once it holds a place, all within the
    /// queue's deadline. `Err(Busy)` means `work` did not finish: the queue was full or the
    /// deadline passed; its future is dropped, so a job still waiting for a hashing worker is
    /// skipped.
    pub async fn run<T>(
        &self,
        subject: &LoginSubject,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let busy = || Error::Busy {
            retry_after_secs: BUSY_RETRY_AFTER_SECS,
        };
        let admitted = async {
            let _user = self.user_slot(subject).await?;
            let _place = self.place().await?;
            work.await
        };
        tokio::time::timeout(self.timeout, admitted)
            .await
            .unwrap_or_else(|_| Err(busy()))
    }

    /// A place in the queue: at once when one is free; else a wait in line, unless `len`
    /// logins are already waiting.
    async fn place(&self) -> Result<OwnedSemaphorePermit, Error> {
        if let Ok(p) = Arc::clone(&self.places).try_acquire_owned() {
            return Ok(p);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.len {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::Busy {
                retry_after_secs: BUSY_RETRY_AFTER_SECS,
            });
        }
        // Counted down however the wait ends, deadline included (the future is dropped).
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _waiting = Waiting(&self.waiting);
        Arc::clone(&self.places)
            .acquire_owned()
            .await
            .map_err(|_| Error::Internal {
                message: "login queue closed".into(),
            })
    }

    /// One of the account's `per_user` slots, waiting (within the caller's deadline) for it.
    async fn user_slot(&self, user: &LoginSubject) -> Result<UserSlot, Error> {
        let poisoned = || Error::Internal {
            message: "login queue poisoned".into(),
        };
        let sem = {
            let mut users = self.users.lock().map_err(|_| poisoned())?;
            let (sem, present) = users
                .entry(user.clone())
                .or_insert_with(|| (Arc::new(Semaphore::new(self.per_user)), 0));
            *present += 1;
            Arc::clone(sem)
        };
        // The guard exists before the wait, so a wait cut short still tidies the map.
        let mut slot = UserSlot {
            users: Arc::clone(&self.users),
            user: user.clone(),
            _permit: None,
        };
        slot._permit = Some(sem.acquire_owned().await.map_err(|_| Error::Internal {
            message: "login queue closed".into(),
        })?);
        Ok(slot)
    }
}

/// Per-account semaphores with how many logins hold or wait for one.
type UserSlots = Mutex<HashMap<LoginSubject, (Arc<Semaphore>, usize)>>;

/// An account's slot (or the wait for one); the last login to leave removes the account's
/// entry.
struct UserSlot {
    users: Arc<UserSlots>,
    user: LoginSubject,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Drop for UserSlot {
    fn drop(&mut self) {
        if let Ok(mut users) = self.users.lock()
            && let Some((_, present)) = users.get_mut(&self.user)
        {
            *present -= 1;
            if *present == 0 {
                users.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> LoginSubject {
        LoginSubject::of(n, None)
    }

    #[tokio::test]
    async fn third_attempt_after_two_failures_is_refused() {
        let l = LoginLimiter::new(2, Duration::from_secs(60));
        let ip = Some(IpAddr::from([127, 0, 0, 1]));
        let _failed = l.reserve(&name("Admin"), ip).await.unwrap();
        let _failed = l.reserve(&name("admin"), ip).await.unwrap();
        assert!(matches!(
            l.reserve(&name("admin"), ip).await,
            Err(Error::TooManyAttempts { .. })
        ));
        // Another address, or another user, is not affected.
        let other = l
            .reserve(&name("admin"), Some(IpAddr::from([10, 0, 0, 1])))
            .await
            .unwrap();
        l.succeeded(other).await;
        let alice = l.reserve(&name("alice"), ip).await.unwrap();
        l.not_evaluated(alice).await;
        // After a success the count starts over.
        let r = l.reserve(&LoginSubject::User(1), ip).await.unwrap();
        l.succeeded(r).await;
        assert!(l.failures.get(&(LoginSubject::User(1), ip)).await.is_none());
    }

    #[tokio::test]
    async fn concurrent_reservations_never_exceed_the_limit() {
        let l = Arc::new(LoginLimiter::new(10, Duration::from_secs(60)));
        let tasks: Vec<_> = (0..60)
            .map(|_| {
                let l = Arc::clone(&l);
                tokio::spawn(async move { l.reserve(&LoginSubject::User(7), None).await.is_ok() })
            })
            .collect();
        let mut granted = 0;
        for t in tasks {
            granted += usize::from(t.await.unwrap());
        }
        assert_eq!(granted, 10);
    }

    #[tokio::test]
    async fn an_unevaluated_attempt_is_given_back() {
        let l = LoginLimiter::new(1, Duration::from_secs(60));
        let r = l.reserve(&name("a"), None).await.unwrap();
        l.not_evaluated(r).await;
        let _r = l.reserve(&name("a"), None).await.unwrap();
        assert!(l.reserve(&name("a"), None).await.is_err());
    }

    #[tokio::test]
    async fn one_username_cannot_take_every_place() {
        let q = Arc::new(LoginQueue::new(4, 1, Duration::from_millis(200)));
        let (hold, release) = tokio::sync::oneshot::channel::<()>();
        let held = {
            let q = Arc::clone(&q);
            tokio::spawn(async move {
                q.run(&LoginSubject::User(1), async {
                    let _ = release.await;
                    Ok(())
                })
                .await
            })
        };
        tokio::task::yield_now().await;
        // A second attempt for the same account waits for its slot and times out ...
        let second = q.run(&LoginSubject::User(1), async { Ok(()) }).await;
        assert!(matches!(second, Err(Error::Busy { .. })), "{second:?}");
        // ... while another account goes through at once.
        q.run(&LoginSubject::User(2), async { Ok(()) })
            .await
            .unwrap();
        drop(hold);
        held.await.unwrap().unwrap();
        assert!(q.users.lock().unwrap().is_empty());
        assert_eq!(q.waiting.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_full_queue_answers_busy_at_once() {
        let q = Arc::new(LoginQueue::new(1, 1, Duration::from_secs(60)));
        let (hold, release) = tokio::sync::oneshot::channel::<()>();
        let release = Arc::new(tokio::sync::Mutex::new(Some(release)));
        let spawn = |id: i64| {
            let q = Arc::clone(&q);
            let release = Arc::clone(&release);
            tokio::spawn(async move {
                q.run(&LoginSubject::User(id), async move {
                    if let Some(r) = release.lock().await.take() {
                        let _ = r.await;
                    }
                    Ok(())
                })
                .await
            })
        };
        let first = spawn(1);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = spawn(2); // waits for the one place
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = Instant::now();
        let third = q.run(&LoginSubject::User(3), async { Ok(()) }).await;
        assert!(matches!(third, Err(Error::Busy { .. })), "{third:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(hold);
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();
    }
}
