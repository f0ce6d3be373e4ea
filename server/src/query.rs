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
pub mod template;
pub mod timerange;

pub use context::RowFilter;

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
    /// The dataset's Jinja template parameters (a JSON object; empty when unset or invalid).
    pub template_params: serde_json::Map<String, serde_json::Value>,
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

/// Superset's `map_sql_type_to_inferred_type` through `extract_dataframe_dtypes`' generic
/// map: the first `TYPE_MAPPING` pattern found anywhere in the type, case-insensitively.
/// Unlike [`crate::engines::generic_type`] (the engine's column spec), `BOOLEAN` is boolean,
/// `REAL`, `SERIAL` and `MONEY` are strings, and `INTERVAL` or `POINT` are numeric ("INT").
pub fn sql_type_generic(type_name: &str) -> GenericType {
    const TYPE_MAPPING: &[(&[&str], GenericType)] = &[
        (&["int"], GenericType::Numeric),
        (&["char", "text", "varchar"], GenericType::String),
        (
            &["decimal", "numeric", "float", "double"],
            GenericType::Numeric,
        ),
        (&["bool"], GenericType::Boolean),
        (&["date", "time"], GenericType::Temporal),
    ];
    // Python's IGNORECASE also folds the dotless and dotted i (and the long s and the Kelvin
    // sign) onto ASCII letters.
    let folded: String = type_name
        .chars()
        .map(|c| match c {
            '\u{130}' | '\u{131}' => 'i',
            '\u{17f}' => 's',
            '\u{212a}' => 'k',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    TYPE_MAPPING
        .iter()
        .find(|(patterns, _)| patterns.iter().any(|p| folded.contains(p)))
        .map_or(GenericType::String, |(_, t)| *t)
}

/// Superset's `get_metric_type_from_column` through `extract_dataframe_dtypes`' generic map:
/// `re.match(r"(SUM|AVG|COUNT|COUNT_DISTINCT|MIN|MAX|FIRST|LAST)\((.*)\)", expression)`
/// (case-sensitive, anchored at the start, `.` stopping at a newline) looked up in
/// `METRIC_MAP_TYPE`. SUM, AVG, COUNT and COUNT_DISTINCT are "floating", so numeric; MIN and
/// MAX are "numeric", which the generic map lacks, so strings like FIRST, LAST and any other
/// expression.
pub fn metric_expression_generic(expression: &str) -> GenericType {
    const FLOATING: &[&str] = &["SUM", "AVG", "COUNT", "COUNT_DISTINCT"];
    let floating = FLOATING.iter().any(|f| {
        expression
            .strip_prefix(f)
            .and_then(|rest| rest.strip_prefix('('))
            .is_some_and(|rest| rest.split('\n').next().is_some_and(|l| l.contains(')')))
    });
    if floating {
        GenericType::Numeric
    } else {
        GenericType::String
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

    /// The generic type Superset's `extract_dataframe_dtypes` gives a result column called
    /// `label` whose values are all null (so every column of a 0-row result), where pandas has
    /// nothing to infer from: a dataset column's comes from its SQL type
    /// ([`sql_type_generic`]), a saved metric's from its expression
    /// ([`metric_expression_generic`]), anything else is a string.
    pub fn all_null_type(&self, label: &str) -> GenericType {
        match (self.column(label), self.metric(label)) {
            (Some(c), _) => sql_type_generic(&c.type_name),
            (None, Some(m)) => metric_expression_generic(&m.expression),
            (None, None) => GenericType::String,
        }
    }

    /// The saved metric called `name`.
    pub fn metric(&self, name: &str) -> Option<&DatasetMetric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

#[cfg(test)]
impl Datasource {
    /// A PostgreSQL table `t` with these columns (name, SQL type, `is_dttm`) and saved metrics
    /// (name, expression), for tests.
    pub(crate) fn for_tests(columns: &[(&str, &str, bool)], metrics: &[(&str, &str)]) -> Self {
        Datasource {
            id: 1,
            database_id: 1,
            database_name: "examples".into(),
            engine: Engine::Postgres,
            schema: None,
            table_name: "t".into(),
            sql: None,
            template_params: serde_json::Map::new(),
            main_dttm_col: None,
            cache_timeout: None,
            database_cache_timeout: None,
            columns: columns
                .iter()
                .map(|(name, type_name, is_dttm)| DatasetColumn {
                    name: (*name).into(),
                    expression: None,
                    type_name: (*type_name).into(),
                    is_dttm: *is_dttm,
                    verbose_name: None,
                })
                .collect(),
            metrics: metrics
                .iter()
                .map(|(name, expression)| DatasetMetric {
                    name: (*name).into(),
                    expression: (*expression).into(),
                    verbose_name: None,
                })
                .collect(),
        }
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
    /// A Jinja template in a virtual dataset's SQL did not render.
    #[error("Error while rendering virtual dataset query: {0}")]
    DatasetTemplate(template::TemplateError),
    /// A Jinja template in a SQL expression (metric, column, where, having, row-level rule)
    /// did not render.
    #[error("{0}")]
    Template(template::TemplateError),
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

#[cfg(test)]
mod tests {
    use super::*;
    use GenericType::{Boolean, Numeric, String, Temporal};

    /// `TYPE_MAPPING` in order, case-insensitive, matched anywhere in the type.
    #[test]
    fn sql_types_map_like_superset_type_mapping() {
        for (sql_type, want) in [
            ("INTEGER", Numeric),
            ("bigint", Numeric),
            ("INTERVAL", Numeric),
            ("POINT", Numeric),
            ("VARCHAR(10)", String),
            ("text", String),
            ("CHARACTER VARYING", String),
            ("NUMERIC(10, 2)", Numeric),
            ("DOUBLE PRECISION", Numeric),
            ("float8", Numeric),
            ("BOOLEAN", Boolean),
            ("DATE", Temporal),
            ("TIMESTAMP WITHOUT TIME ZONE", Temporal),
            ("timestamptz", Temporal),
            ("REAL", String),
            ("SERIAL", String),
            ("MONEY", String),
            ("JSON", String),
            ("", String),
            // "DATETIME" has no INT, CHAR or BOOL: temporal; "TINYINT" is numeric first.
            ("DATETIME", Temporal),
            ("TINYINT", Numeric),
        ] {
            assert_eq!(sql_type_generic(sql_type), want, "{sql_type}");
        }
    }

    #[test]
    fn metric_expressions_map_like_superset() {
        for (expression, want) in [
            ("SUM(x)", Numeric),
            ("AVG(x) * 2", Numeric),
            ("COUNT(*)", Numeric),
            ("COUNT_DISTINCT(x)", Numeric),
            ("MIN(x)", String),
            ("MAX(x)", String),
            ("FIRST(x)", String),
            ("LAST(x)", String),
            ("sum(x)", String),
            ("COUNT(DISTINCT x)", Numeric),
            ("SUM (x)", String),
            ("SUM(\nx)", String),
            ("1 + SUM(x)", String),
        ] {
            assert_eq!(metric_expression_generic(expression), want, "{expression}");
        }
    }
}
