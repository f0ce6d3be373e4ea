//! Running generated SQL: a results cache bounded by bytes with a per-entry lifetime, and
//! single flight, so identical concurrent queries reach the database once.
//!
//! The cache key is a hash of the database (id and revision), the final SQL and the row cap.
//! Everything that decides which rows a user may see is part of that SQL (filters, and later
//! row-level security), and access to the dataset is checked before the cache is consulted, so
//! one user can never be served rows another user's query was allowed to see.
//!
//! `force` skips the cache and also never joins a query already in flight: the caller asked for
//! a fresh run. Dropping a caller's future cancels its query in the database unless other
//! callers still wait for it; one of them then runs it again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use chrono::NaiveDateTime;
use moka::Expiry;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::engines::{ConnectionSpec, EngineError, Engines, ExecOptions, ResultSet};

/// How long a result may be cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePolicy {
    /// Do not cache (Superset's `cache_timeout: -1`).
    Disabled,
    /// Cache for this long.
    For(Duration),
    /// Cache until evicted by size (`cache_timeout: 0`).
    Forever,
}

impl CachePolicy {
    /// Superset's first-set-wins chain of `cache_timeout`s (custom, chart, dataset, database,
    /// default): a negative value disables the cache, zero means no expiry.
    pub fn from_chain(chain: &[Option<i64>], default_secs: u64) -> (CachePolicy, i64) {
        let secs = chain
            .iter()
            .flatten()
            .copied()
            .next()
            .unwrap_or(default_secs as i64);
        let policy = match secs {
            s if s < 0 => CachePolicy::Disabled,
            0 => CachePolicy::Forever,
            s => CachePolicy::For(Duration::from_secs(s as u64)),
        };
        (policy, secs)
    }
}

/// A cached result.
#[derive(Debug)]
struct Entry {
    rows: Arc<ResultSet>,
    at: NaiveDateTime,
    ttl: Option<Duration>,
}

struct EntryExpiry;

impl Expiry<String, Arc<Entry>> for EntryExpiry {
    fn expire_after_create(
        &self,
        _key: &String,
        value: &Arc<Entry>,
        _created_at: Instant,
    ) -> Option<Duration> {
        value.ttl
    }
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The rows.
    pub rows: Arc<ResultSet>,
    /// When the rows were cached, if they came from the cache.
    pub cached_at: Option<NaiveDateTime>,
}

type Flight = OnceCell<Result<Arc<ResultSet>, EngineError>>;

/// Executes statements through the cache and single flight.
pub struct Runner {
    engines: Engines,
    cache: Option<moka::future::Cache<String, Arc<Entry>>>,
    flights: Mutex<HashMap<String, Weak<Flight>>>,
    /// Query contexts by result cache key, for `GET /chart/data/<cache_key>`.
    contexts: moka::future::Cache<String, Arc<serde_json::Value>>,
    /// Cache keys of statements that passed the caller's checks (the disallowed-functions
    /// check of chart data). The key covers the database and its revision and the SQL, and
    /// the deny-lists are configuration, fixed for the process: a statement that passed once
    /// passes again, so it is not parsed again on every request.
    checked: moka::future::Cache<String, ()>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("cache", &self.cache.as_ref().map(|c| c.entry_count()))
            .finish()
    }
}

/// The cache key of a statement.
pub fn cache_key(spec: &ConnectionSpec, sql: &str, max_rows: usize) -> String {
    cache_key_with(spec, sql, &[], max_rows)
}

/// [`cache_key`] with the values templates added (Superset's `extra_cache_keys`: the user and
/// request macros, `cache_key_wrapper`), which enter the key even when they do not show in
/// the SQL.
pub fn cache_key_with(
    spec: &ConnectionSpec,
    sql: &str,
    extra: &[serde_json::Value],
    max_rows: usize,
) -> String {
    let mut h = Sha256::new();
    h.update(spec.database_id.to_le_bytes());
    h.update(spec.revision.as_bytes());
    h.update([0]);
    h.update(sql.as_bytes());
    h.update([0]);
    h.update((max_rows as u64).to_le_bytes());
    if !extra.is_empty() {
        h.update(
            serde_json::Value::from(extra.to_vec())
                .to_string()
                .as_bytes(),
        );
    }
    hex::encode(&h.finalize()[..16])
}

impl Runner {
    /// A runner over `engines` with a cache of at most `cache_bytes` (0 disables it).
    pub fn new(engines: Engines, cache_bytes: u64, context_ttl: Duration) -> Runner {
        let cache = (cache_bytes > 0).then(|| {
            moka::future::Cache::builder()
                .max_capacity(cache_bytes)
                .weigher(|k: &String, v: &Arc<Entry>| {
                    u32::try_from(k.len() + v.rows.weight() + 64).unwrap_or(u32::MAX)
                })
                .expire_after(EntryExpiry)
                .build()
        });
        Runner {
            engines,
            cache,
            flights: Mutex::new(HashMap::new()),
            contexts: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(context_ttl.max(Duration::from_secs(60)))
                .build(),
            checked: moka::future::Cache::new(10_000),
        }
    }

    /// The engines behind the runner.
    pub fn engines(&self) -> &Engines {
        &self.engines
    }

    /// Runs `sql` (read-only, at most `max_rows` rows) unless a fresh cached result exists.
    pub async fn run(
        &self,
        spec: &ConnectionSpec,
        key: &str,
        sql: &str,
        max_rows: usize,
        policy: CachePolicy,
        force: bool,
    ) -> Result<Outcome, EngineError> {
        if !force
            && let Some(cache) = &self.cache
            && let Some(hit) = cache.get(key).await
        {
            return Ok(Outcome {
                rows: hit.rows.clone(),
                cached_at: Some(hit.at),
            });
        }
        let opts = ExecOptions {
            read_only: true,
            max_rows,
        };
        let rows = if force {
            Arc::new(self.engines.execute(spec, sql, opts).await?)
        } else {
            self.coalesced(spec, key, sql, opts).await?
        };
        if let Some(cache) = &self.cache
            && policy != CachePolicy::Disabled
        {
            let ttl = match policy {
                CachePolicy::For(d) => Some(d),
                _ => None,
            };
            cache
                .insert(
                    key.to_owned(),
                    Arc::new(Entry {
                        rows: rows.clone(),
                        at: chrono::Utc::now().naive_utc(),
                        ttl,
                    }),
                )
                .await;
        }
        Ok(Outcome {
            rows,
            cached_at: None,
        })
    }

    async fn coalesced(
        &self,
        spec: &ConnectionSpec,
        key: &str,
        sql: &str,
        opts: ExecOptions,
    ) -> Result<Arc<ResultSet>, EngineError> {
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
            match flights.get(key).and_then(Weak::upgrade) {
                Some(f) => f,
                None => {
                    let f: Arc<Flight> = Arc::new(OnceCell::new());
                    flights.insert(key.to_owned(), Arc::downgrade(&f));
                    f
                }
            }
        };
        let out = flight
            .get_or_init(|| async { self.engines.execute(spec, sql, opts).await.map(Arc::new) })
            .await
            .clone();
        let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
        if flights
            .get(key)
            .is_some_and(|w| w.as_ptr() == Arc::as_ptr(&flight))
        {
            flights.remove(key);
        }
        out
    }

    /// Remembers the request behind `key` so `GET /chart/data/<key>` can answer it again.
    pub async fn remember_context(&self, key: &str, context: Arc<serde_json::Value>) {
        self.contexts.insert(key.to_owned(), context).await;
    }

    /// Whether the statement of this cache key passed its checks before.
    pub fn passed_checks(&self, key: &str) -> bool {
        self.checked.contains_key(key)
    }

    /// Notes that the statement of this cache key passed its checks.
    pub async fn note_passed_checks(&self, key: &str) {
        self.checked.insert(key.to_owned(), ()).await;
    }

    /// The request remembered under `key`.
    pub async fn context(&self, key: &str) -> Option<Arc<serde_json::Value>> {
        self.contexts.get(key).await
    }
}
