//! The state every request shares: configuration, stores, pools, caches and the plugin host.
//!
//! Its own module below `api` and `app`, so handlers and startup both depend on it and neither
//! on the other.

use std::sync::Arc;

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
}
