//! The state every request shares: configuration, stores, pools, caches and the plugin host.
//!
//! Its own module below `api` and `app`, so handlers and startup both depend on it and neither
//! on the other.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::auth::AuthService;
use crate::config::Config;
use crate::store::Store;

/// Shared by every request.
pub struct AppState {
    /// The effective configuration.
    pub config: Config,
    /// Metadata store.
    pub store: Store,
    /// Authentication and authorization.
    pub auth: AuthService,
    /// Seals connection passwords at rest.
    pub sealer: crate::seal::Sealer,
    /// Connections to the analytical databases, one pool per database.
    pub engines: crate::engines::Engines,
    /// Runs chart and SQL Lab queries through the results cache and single flight.
    pub runner: crate::query::runner::Runner,
    /// Open client connections, so long-running handlers notice a client that went away.
    pub connections: Arc<crate::net::Connections>,
    /// Datasets with their connection, as chart data loads them; dropped on any catalog write
    /// here and expired after `auth.permission_cache_ttl_secs` for other replicas' writes.
    pub datasources: crate::query::DatasourceCache,
    /// Saved charts with the query context chart data runs for them, under the same rule as
    /// `datasources`: dropped on any catalog write here, expired for other replicas' writes.
    pub charts: ChartCache,
    /// Every row-level security rule (one entry, key `()`), under the same rule as
    /// `datasources`: dropped on any rule write here, expired for other replicas' writes.
    pub rls_rules: moka::future::Cache<(), Arc<Vec<crate::store::catalog::RlsRule>>>,
    /// SQL Lab's running queries and stored results (per process).
    pub sqllab: crate::query::sqllab::SqlLab,
    /// The WebAssembly plugin host and the installed plugins.
    pub plugins: Arc<crate::plugins::Plugins>,
    /// Finished chart renders (SVG, PNG), next to the results cache.
    pub renders: crate::render::RenderCache,
    /// Superset's web app, when installed.
    pub frontend: crate::frontend::Frontend,
    /// Bytes of request bodies held in memory for callers without valid credentials
    /// (`http.max_unauthenticated_buffered_bytes`, one permit a byte).
    pub unauthenticated_bodies: tokio::sync::Semaphore,
    /// How many catalog writes this process has seen ([`AppState::catalog_changed`]).
    pub catalog_generation: AtomicU64,
}

impl AppState {
    /// Forgets this process's copies of catalog objects after a write that may change them.
    pub fn catalog_changed(&self) {
        self.catalog_generation.fetch_add(1, Ordering::SeqCst);
        self.datasources.invalidate_all();
        self.charts.invalidate_all();
        self.rls_rules.invalidate_all();
    }

    /// The catalog generation, read before loading something to cache.
    pub fn catalog_seen(&self) -> u64 {
        self.catalog_generation.load(Ordering::SeqCst)
    }

    /// Caches `value`, loaded from the catalog at generation `seen`, unless a write came since:
    /// a load that raced a write would otherwise keep the old definition until it expires.
    pub async fn remember<V>(
        &self,
        cache: &moka::future::Cache<i64, V>,
        key: i64,
        value: V,
        seen: u64,
    ) where
        V: Clone + Send + Sync + 'static,
    {
        if self.catalog_seen() != seen {
            return;
        }
        cache.insert(key, value).await;
        // A write between the check and the insert: its invalidation may have run first.
        if self.catalog_seen() != seen {
            cache.invalidate(&key).await;
        }
    }
}

/// A saved chart with the query context its data is run from (made by
/// `services::chart_data`).
#[derive(Debug)]
pub struct SavedChart {
    /// The chart row.
    pub chart: crate::store::model::Record,
    /// Its query context, before a request's overrides; `None` for a chart saved without one
    /// whose viz type no plugin builds a query for.
    pub context: Option<serde_json::Value>,
    /// Roughly what it holds in memory, in bytes, for the cache's bound.
    weight: u32,
}

impl SavedChart {
    /// A chart row with its query context.
    pub fn new(
        chart: crate::store::model::Record,
        context: Option<serde_json::Value>,
    ) -> SavedChart {
        use crate::store::db::Value;
        // The row's texts, and the parsed context, which takes a few times its text.
        let text: usize = chart
            .values
            .values()
            .map(|v| match v {
                Value::Text(t) => t.len(),
                Value::Bytes(b) => b.len(),
                _ => 8,
            })
            .sum();
        let weight = u32::try_from(text.saturating_mul(4).saturating_add(1024)).unwrap_or(u32::MAX);
        SavedChart {
            chart,
            context,
            weight,
        }
    }

    /// The cache's weigher.
    pub fn weight(_: &i64, saved: &std::sync::Arc<SavedChart>) -> u32 {
        saved.weight
    }
}

/// Saved charts by id, shared by chart-data and render requests (see `AppState::charts`).
pub type ChartCache = moka::future::Cache<i64, std::sync::Arc<SavedChart>>;
