//! Typed, null-aware access to the query results a render receives.

use liteset_sdk::{Column, ColumnData, Table, Value};

use crate::format;

/// The kind of a result column, as a chart uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// int64 or float64.
    Number,
    /// timestamp-us.
    Time,
    /// Text, booleans, JSON.
    Text,
}

/// The kind of a column.
pub fn kind(c: &Column) -> Kind {
    match c.data {
        ColumnData::Float64(_) | ColumnData::Int64(_) => Kind::Number,
        ColumnData::TimestampUs(_) => Kind::Time,
        _ => Kind::Text,
    }
}

/// Row `i` as a number (`None` for nulls, NaN and non-numbers).
pub fn number(c: &Column, i: usize) -> Option<f64> {
    c.get(i).as_f64().filter(|v| v.is_finite())
}

/// Row `i` of a time column in milliseconds since the epoch.
pub fn time_ms(c: &Column, i: usize) -> Option<i64> {
    match c.get(i) {
        Value::TimestampUs(us) => Some(us.div_euclid(1000)),
        _ => None,
    }
}

/// Row `i` as display text (`NULL` for nulls, like Superset's `<NULL>` labels).
pub fn text(c: &Column, i: usize) -> String {
    match c.get(i) {
        Value::Null => "<NULL>".into(),
        Value::Str(s) | Value::Json(s) => s.to_owned(),
        Value::Boolean(b) => if b { "true" } else { "false" }.into(),
        Value::Int64(v) => v.to_string(),
        Value::Float64(v) => format::number("~g", v),
        Value::TimestampUs(us) => format::datetime(us.div_euclid(1000)),
    }
}

/// The first query's table, if any.
pub fn first(results: &[liteset_sdk::QueryResult]) -> Option<&Table> {
    results
        .iter()
        .min_by_key(|r| r.query_index)
        .map(|r| &r.data)
}

/// The row count of a table.
pub fn rows(t: &Table) -> usize {
    t.num_rows
}
