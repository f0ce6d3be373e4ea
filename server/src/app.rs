//! Startup wiring: open and migrate the store, create the built-in roles and the first admin,
//! build the shared [`AppState`], and serve until SIGINT/SIGTERM.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::{self, AuthService, catalog};
use crate::config::{Config, ConfigError};
use crate::state::AppState;
use crate::store::{self, Location, NewUser, Store};

/// Startup failures; `main` maps configuration problems to exit code 2, the rest to 1.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Bad configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The metadata store could not be opened or migrated.
    #[error("metadata store: {0}")]
    Store(#[from] store::Error),
    /// Roles or the admin user could not be created.
    #[error("{0}")]
    Auth(#[from] auth::Error),
    /// The listener could not be bound or the server failed.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
    /// The plugin host could not be set up.
    #[error("plugins: {0}")]
    Plugins(#[from] crate::plugins::PluginError),
    /// `liteset load-examples` failed.
    #[error(transparent)]
    Examples(#[from] crate::ssb::SsbError),
    /// `liteset frontend install` failed.
    #[error("frontend install: {0}")]
    Frontend(#[from] crate::frontend::install::Error),
}

/// Opens the configured metadata store.
pub async fn open_store(config: &Config) -> Result<Store, StartError> {
    let size = config.metadata.pool_size;
    let store = match &config.metadata_url {
        Some(url) => Store::open(Location::Postgres(url.expose()), size).await?,
        None => Store::open(Location::Sqlite(&config.sqlite_path()), size).await?,
    };
    Ok(store)
}

/// Builds the state: resolves the secret key, opens the store and the auth service.
pub async fn state(config: Config) -> Result<Arc<AppState>, StartError> {
    let secret = config.resolve_secret_key()?;
    let store = open_store(&config).await?;
    let auth = AuthService::new(
        store.clone(),
        secret.expose().as_bytes(),
        &config.auth,
        &config.embedded,
    );
    let sealer = crate::seal::Sealer::new(secret.expose().as_bytes());
    // After the store opened: the data folder exists, so the guard resolves its real path.
    let engines =
        crate::engines::Engines::new(config.query.engine_options(""), config.connection_guard());
    // Catalog copies live as long as cached permissions: that bounds how long another
    // replica's write takes to show here.
    let catalog_ttl = Duration::from_secs(config.auth.permission_cache_ttl_secs.max(1));
    let datasources = moka::future::Cache::builder()
        .max_capacity(10_000)
        .time_to_live(catalog_ttl)
        .build();
    // Bounded by bytes: a chart's stored query context can be large.
    let charts = moka::future::Cache::builder()
        .max_capacity(config.query.cache_max_mb * 1024 * 1024 / 4)
        .weigher(crate::state::SavedChart::weight)
        .time_to_live(catalog_ttl)
        .build();
    let rls_rules = moka::future::Cache::builder()
        .max_capacity(1)
        .time_to_live(catalog_ttl)
        .build();
    let runner = crate::query::runner::Runner::new(
        engines.clone(),
        config.query.cache_max_mb * 1024 * 1024,
        Duration::from_secs(config.query.cache_default_timeout_secs),
    );
    let sqllab = crate::query::sqllab::SqlLab::new(
        config.query.sqllab_results_max_mb * 1024 * 1024,
        Duration::from_secs(config.query.sqllab_results_ttl_secs),
    );
    let plugins = Arc::new(crate::plugins::Plugins::new(
        &config.plugins,
        store.clone(),
        &config.data_dir,
    )?);
    // Renders are small next to the rows they draw: a quarter of the results cache's budget.
    let renders = crate::render::RenderCache::new(config.query.cache_max_mb * 1024 * 1024 / 4);
    let frontend = crate::frontend::Frontend::new(config.frontend_dir());
    let unauthenticated_bodies = tokio::sync::Semaphore::new(
        usize::try_from(config.http.max_unauthenticated_buffered_bytes).unwrap_or(usize::MAX),
    );
    Ok(Arc::new(AppState {
        unauthenticated_bodies,
        plugins,
        renders,
        frontend,
        config,
        store,
        auth,
        sealer,
        engines,
        runner,
        connections: Arc::default(),
        datasources,
        charts,
        rls_rules,
        sqllab,
        catalog_generation: Default::default(),
    }))
}

/// `liteset init`: migrations plus the built-in roles; returns whether anything was applied.
pub async fn init(state: &AppState) -> Result<(), StartError> {
    let applied = state.store.migrate().await?;
    tracing::info!(
        message = "Metadata schema is current.",
        applied = applied.len()
    );
    state.auth.sync_roles().await?;
    Ok(())
}

/// Creates the first admin when no user holds the Admin role. The password comes from
/// configuration, or is generated and printed once on stdout (never logged).
pub async fn ensure_admin(state: &AppState) -> Result<(), StartError> {
    if state.store.role_has_users(catalog::ADMIN).await? {
        return Ok(());
    }
    let (password, generated) = match &state.config.admin_password {
        Some(p) => (p.expose().to_owned(), false),
        None => (hex::encode(rand::random::<[u8; 12]>()), true),
    };
    let new = NewUser {
        username: "admin".into(),
        first_name: "Superset".into(),
        last_name: "Admin".into(),
        email: "admin@localhost".into(),
        active: true,
        password_hash: None,
        roles: vec![catalog::ADMIN.into()],
    };
    match state.auth.create_user(new, password.clone()).await {
        Ok(_) => {
            tracing::info!(message = "Created the admin user.", username = "admin");
            if generated {
                println!("Created user 'admin' with password: {password}");
                println!("This password is shown once; set LITESET_ADMIN_PASSWORD to choose it.");
            }
            Ok(())
        }
        Err(auth::Error::Store(store::Error::Conflict { .. })) => {
            tracing::warn!(
                message =
                    "No user has the Admin role, but a user named admin exists; not creating one.",
            );
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// How often a replica picks up plugins uploaded or deleted through another replica.
const PLUGIN_SYNC: Duration = Duration::from_secs(5);

/// `liteset serve`: bootstraps an empty store, then serves until a shutdown signal, draining
/// in-flight requests for up to `http.shutdown_grace_secs`.
pub async fn serve(config: Config) -> Result<(), StartError> {
    let grace = Duration::from_secs(config.http.shutdown_grace_secs);
    let bind = config.bind_addr();
    let state = state(config).await?;
    let lock = state.store.bootstrap_lock().await?;
    let applied = state.store.migrate().await?;
    if !applied.is_empty() || !state.store.role_has_any_permissions(catalog::ADMIN).await? {
        state.auth.sync_roles().await?;
    }
    ensure_admin(&state).await?;
    if let Some(lock) = lock {
        lock.commit().await?;
    }
    // A fresh embedded store gets the examples; a failure there must not stop the server.
    if applied.contains(&1)
        && let Err(e) = crate::examples::ensure(&state).await
    {
        tracing::warn!(message = "Could not create the examples.", error = %e);
    }

    // Uploaded plugins load now and follow other replicas' uploads and deletions afterwards.
    if let Err(e) = state.plugins.sync().await {
        tracing::warn!(message = "Could not load the uploaded plugins.", error = %e);
    }
    let plugins = Arc::downgrade(&state.plugins);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PLUGIN_SYNC);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(p) = plugins.upgrade() else { break };
            if let Err(e) = p.sync().await {
                tracing::warn!(message = "Plugin sync failed.", error = %e);
            }
        }
    });

    let acceptor = crate::net::WatchedAcceptor::bind(bind, state.connections.clone()).await?;
    let local = acceptor.local_socket_addr().unwrap_or(bind);
    tracing::info!(
        message = "Listening.",
        address = %local,
        metadata = ?state.store.backend(),
    );
    // Tests and supervisors wait for this exact line.
    println!("READY http://{local}");

    let header_timeout = Duration::from_secs(state.config.http.read_timeout_secs);
    let app = crate::api::routes(state);
    crate::net::serve(acceptor, app, shutdown_signal(), grace, header_timeout).await?;
    tracing::info!(message = "Shut down cleanly.");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    tracing::info!(message = "Shutdown signal received; draining requests.");
}
