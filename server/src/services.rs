//! Services: the use cases of the server, between `api` and the layers below it (`query`,
//! `store`, `engines`, `plugins`, `render`).
//!
//! A service is one function per use case (chart data of a saved chart, a chart drawn as SVG,
//! …). It is given typed domain input and the caller's access (`&CurrentUser`, already
//! authenticated and authorized for the endpoint by the handler), does the whole job, and
//! returns a domain result or a [`Error`]. It never knows HTTP: no status codes, no wire
//! bodies, no request objects; `api/error.rs` alone turns an [`Error`] into a response, so a
//! service can be called by any handler (or test) and answer the same.

pub mod chart;
pub mod chart_app;
pub mod chart_data;
pub mod dashboard;
pub mod database;
pub mod embedded;
pub mod render;
pub mod rls;
pub mod sqllab;
pub mod templating;

use crate::auth;
use crate::plugins::PluginError;
use crate::query::QueryError;
use crate::query::sqllab::SqlLabError;
use crate::render::RenderError;
use crate::state::AppState;
use crate::store;
use crate::uri::Engine;

/// Why a service could not do its job: a lower layer's error, or one of the services' own.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The query layer refused or failed (bad context, SQL, engine, access to the dataset).
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The metadata store failed, or the record does not exist.
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The caller may not do this.
    #[error(transparent)]
    Auth(#[from] auth::Error),
    /// A plugin (post-processor, viz) failed.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// Drawing a chart failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// A query context without queries.
    #[error("Empty query result")]
    EmptyQuery,
    /// A saved chart with neither a query context nor a viz plugin that could build one.
    #[error("Chart has no query context saved. Please save the chart again.")]
    NoQueryContext,
    /// Something that is nobody's fault but the server's (a ZIP writer, a task that panicked);
    /// the cause is logged, never shown.
    #[error("{0}")]
    Internal(String),
    /// A stored database's connection could not be made ready (its URI or sealed password).
    #[error(transparent)]
    Connection(#[from] crate::connections::Error),
    /// SQL Lab refused or failed a request (access, planning, execution, results).
    #[error(transparent)]
    SqlLab(#[from] SqlLabError),
    /// The input breaks a rule of its fields: marshmallow-style messages by field name
    /// (`{"json_metadata": [..]}`), as Superset's schemas answer.
    #[error("invalid input: {0}")]
    Invalid(serde_json::Value),
    /// A connection form's fields are missing, malformed or unreachable (SIP-40 errors, one
    /// per problem).
    #[error("connection form refused")]
    ConnectionForm(Vec<database::Problem>),
    /// A connection could not be opened with the settings given.
    #[error("{}", error.message())]
    ConnectionTest {
        /// The engine tried.
        engine: crate::uri::Engine,
        /// What it answered.
        error: crate::engines::EngineError,
    },
    /// The dashboard exists, but the caller may not open it.
    #[error("You don't have access to this dashboard.")]
    DashboardForbidden,
    /// A guest token names a dashboard that does not exist or that the granter cannot open
    /// (Superset's `EmbeddedDashboardNotFoundError`, answered 400 by its endpoint).
    #[error("EmbeddedDashboard not found.")]
    EmbeddedNotFound,
    /// A guest asked a chart for more than it was saved with, or for raw rows.
    #[error("Guest user cannot modify chart payload")]
    GuestPayloadModified,
}

impl Error {
    /// An internal failure with its cause.
    pub fn internal(cause: &dyn std::fmt::Display) -> Error {
        Error::Internal(cause.to_string())
    }
}

/// The SQL functions queries on the database `database_name` (of `engine`) may not call: the
/// configured list ([`crate::config::Config::disallowed_functions_for`]) plus the functions the
/// engine always refuses because they reach outside the database (files, URLs, other servers,
/// shells), which no configuration lifts.
pub fn denied_functions(
    state: &AppState,
    database_name: &str,
    engine: Engine,
) -> std::collections::BTreeSet<String> {
    let mut denied = state.config.disallowed_functions_for(database_name);
    denied.extend(
        crate::engines::refused_functions(engine)
            .iter()
            .map(|f| (*f).to_owned()),
    );
    denied
}
