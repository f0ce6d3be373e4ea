//! MySQL: connection, catalog queries, dialect (quoting, literals, time grains), type names,
//! cancellation and error mapping. Skeleton: every operation refuses until the engine lands.

use std::sync::Arc;

use super::{
    ColumnInfo, EngineError, EngineOptions, ExecOptions, ResultSet, TableEntry, TableMetadata,
    TimeGrain,
};
use crate::uri::ConnectionUri;

/// A bounded pool of MySQL connections for one database.
#[derive(Clone)]
pub(crate) struct MyPool {
    _uri: Arc<ConnectionUri>,
}

fn not_yet() -> EngineError {
    EngineError::other("MySQL support is not built yet.")
}

/// A lazily connecting pool (no connection is opened until first use).
pub(crate) fn build_pool(
    uri: &ConnectionUri,
    _options: &EngineOptions,
) -> Result<MyPool, EngineError> {
    Ok(MyPool {
        _uri: Arc::new(uri.clone()),
    })
}

/// A fresh connection (not pooled) that runs `SELECT 1`.
pub(crate) async fn test_connection(
    _uri: &ConnectionUri,
    _options: &EngineOptions,
) -> Result<(), EngineError> {
    Err(not_yet())
}

/// Schema names, sorted, without system schemas.
pub(crate) async fn schemas(_pool: &MyPool) -> Result<Vec<String>, EngineError> {
    Err(not_yet())
}

/// Tables and views of `schema`.
pub(crate) async fn tables(_pool: &MyPool, _schema: &str) -> Result<Vec<TableEntry>, EngineError> {
    Err(not_yet())
}

/// Columns, keys, indexes and comment of a table or view.
pub(crate) async fn table_metadata(
    _pool: &MyPool,
    _schema: Option<&str>,
    _table: &str,
) -> Result<TableMetadata, EngineError> {
    Err(not_yet())
}

/// The result columns of one read-only query, never writing anything.
pub(crate) async fn query_columns(
    _pool: &MyPool,
    _sql: &str,
) -> Result<Vec<ColumnInfo>, EngineError> {
    Err(not_yet())
}

/// Runs one statement; cancelled inside the database when the future is dropped.
pub(crate) async fn execute(
    _pool: &MyPool,
    _sql: &str,
    _opts: ExecOptions,
) -> Result<ResultSet, EngineError> {
    Err(not_yet())
}

/// Superset's time grains for MySQL, in its display order.
pub(crate) const TIME_GRAINS: &[TimeGrain] = &[];

/// An identifier quoted for MySQL.
pub(crate) fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// A string literal for MySQL.
pub(crate) fn string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A boolean literal.
pub(crate) fn boolean(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

/// `expr` as text, for LIKE on a non-text column.
pub(crate) fn cast_text(expr: &str) -> String {
    format!("CAST({expr} AS CHAR)")
}

/// Epoch milliseconds as a datetime.
pub(crate) fn from_epoch_ms(ms: f64) -> String {
    format!("FROM_UNIXTIME({})", ms / 1000.0)
}

/// A datetime literal for comparing with a column of type `type_name`.
pub(crate) fn datetime_literal(dt: chrono::NaiveDateTime, _type_name: &str) -> String {
    format!("'{}'", dt.format("%Y-%m-%d %H:%M:%S"))
}

/// Superset's `convert_dttm` for MySQL.
pub(crate) fn convert_dttm(_dt: chrono::NaiveDateTime, _target_type: &str) -> Option<String> {
    None
}

/// Whether SQLAlchemy's MySQL dialect must quote `ident` as a reserved word.
pub fn is_reserved(_ident: &str) -> bool {
    false
}

/// Functions and table functions always refused (see [`super::refused_functions`]).
pub const REFUSED_FUNCTIONS: &[&str] = &[];

/// The function names SQL Lab's editor autocompletes.
pub const FUNCTION_NAMES: &[&str] = &[];
