//! The query layer: Superset's chart-data semantics on top of [`crate::engines`].
//!
//! A request travels `context` (wire JSON → validated [`context::QueryObject`]s, Superset's
//! marshmallow messages) → `sql` (one SELECT per query object, generated only through the
//! engine's [`crate::engines::Dialect`]; user SQL fragments checked by `sqlcheck`) → `runner`
//! (results cache bounded by bytes, single flight, cancellation on drop) → `frame` (the
//! `colnames`/`coltypes`/`data` payloads, CSV). Nothing here knows HTTP: every failure is a
//! [`QueryError`], which `api/error.rs` maps to a status and one of Superset's bodies.
//!
//! SQL Lab (`sqllab`) reuses `sqlcheck`, the engines and `frame` for scripts users write
//! themselves; its failures are [`sqllab::SqlLabError`]s.

pub mod context;
pub mod frame;
pub mod offsets;
pub mod runner;
pub mod sql;
pub mod sqlcheck;
pub mod sqllab;
pub mod timerange;

use crate::engines::{EngineError, GenericType};
use crate::uri::Engine;

/// Datasets with their connection by dataset id, shared by chart-data requests.
pub type DatasourceCache =
    moka::future::Cache<i64, std::sync::Arc<(Datasource, crate::engines::ConnectionSpec)>>;

/// A dataset as the query layer needs it (loaded by the api layer from the catalog).
#[derive(Clone, Debug)]
pub struct Datasource {
    /// Dataset id.
    pub id: i64,
    /// Its database.
    pub database_id: i64,
    /// The database's `database_name` (keys its `query.databases.<name>` settings).
    pub database_name: String,
    /// The database's engine.
    pub engine: Engine,
    /// Schema of a physical table.
    pub schema: Option<String>,
    /// Table name (also the name of a virtual dataset).
    pub table_name: String,
    /// The SQL of a virtual dataset.
    pub sql: Option<String>,
    /// Default temporal column.
    pub main_dttm_col: Option<String>,
    /// Dataset cache timeout (seconds; -1 disables caching).
    pub cache_timeout: Option<i64>,
    /// Database cache timeout.
    pub database_cache_timeout: Option<i64>,
    /// Columns in catalog order.
    pub columns: Vec<DatasetColumn>,
    /// Saved metrics.
    pub metrics: Vec<DatasetMetric>,
}

/// A dataset column: physical, or calculated when `expression` is set.
#[derive(Clone, Debug)]
pub struct DatasetColumn {
    /// Name (the label in results).
    pub name: String,
    /// SQL expression of a calculated column.
    pub expression: Option<String>,
    /// Declared type (`TIMESTAMP WITHOUT TIME ZONE`, `DATE`, ...).
    pub type_name: String,
    /// Whether Superset treats it as temporal.
    pub is_dttm: bool,
    /// Display name (CSV headers).
    pub verbose_name: Option<String>,
}

impl DatasetColumn {
    /// The `dtype` of the `columns` result type: temporal, numeric, or else string (booleans
    /// included, as Superset reports them).
    pub fn dtype(&self) -> GenericType {
        match self.generic() {
            GenericType::Boolean => GenericType::String,
            other => other,
        }
    }

    /// The column's generic type (temporal when `is_dttm`, else from its declared type).
    pub fn generic(&self) -> GenericType {
        if self.is_dttm {
            return GenericType::Temporal;
        }
        crate::engines::generic_type(&self.type_name).unwrap_or(GenericType::String)
    }
}

/// A saved metric.
#[derive(Clone, Debug)]
pub struct DatasetMetric {
    /// `metric_name`.
    pub name: String,
    /// Its SQL aggregate expression.
    pub expression: String,
    /// Display name.
    pub verbose_name: Option<String>,
}

impl Datasource {
    /// The column called `name`.
    pub fn column(&self, name: &str) -> Option<&DatasetColumn> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The saved metric called `name`.
    pub fn metric(&self, name: &str) -> Option<&DatasetMetric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// Why a chart-data request failed, in the terms Superset reports.
#[derive(Clone, Debug, thiserror::Error)]
pub enum QueryError {
    /// The body does not match the schema: the text is the Python-repr of marshmallow's
    /// error dict, shown as `Request is incorrect: <text>`.
    #[error("Request is incorrect: {0}")]
    Schema(String),
    /// Superset's `QueryObjectValidationError` and friends: shown as `Error: <text>`.
    #[error("Error: {0}")]
    Invalid(String),
    /// A validation message Superset shows without the `Error: ` prefix.
    #[error("{0}")]
    Plain(String),
    /// A user SQL fragment that is not a single expression, or holds a subquery.
    #[error("{0}")]
    Sql(Box<sqlcheck::SqlError>),
    /// The SQL calls functions the configuration refuses.
    #[error("SQL contains disallowed function(s): {}", .0.join(", "))]
    DisallowedFunctions(Vec<String>),
    /// The engine has no such time grain.
    #[error("No grain spec for {grain} for database {backend}")]
    UnsupportedGrain {
        /// The requested grain.
        grain: String,
        /// Superset's backend name.
        backend: &'static str,
    },
    /// The database failed the query.
    #[error("Error: {0}")]
    Engine(EngineError),
    /// A query feature this server does not implement yet; never silently skipped.
    #[error("{0} is not supported yet")]
    Unsupported(&'static str),
    /// The dataset does not exist.
    #[error("Not found")]
    NotFound,
    /// The caller may not query this dataset.
    #[error(
        "This endpoint requires the datasource {0}, database or `all_datasource_access` permission"
    )]
    Forbidden(String),
    /// `GET /chart/data/<cache_key>` for a key that is not (or no longer) cached.
    #[error("Cached data not found")]
    CacheMiss,
}

impl From<sqlcheck::SqlError> for QueryError {
    fn from(e: sqlcheck::SqlError) -> Self {
        QueryError::Sql(Box::new(e))
    }
}

impl From<EngineError> for QueryError {
    fn from(e: EngineError) -> Self {
        QueryError::Engine(e)
    }
}
