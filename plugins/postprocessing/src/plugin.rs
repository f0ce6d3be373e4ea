//! The plugin's face: the `post-processor` world through liteset-sdk, and the conversions
//! between the interface's columnar table and the pandas-like [`Frame`] the operations use.
//!
//! The params of a call are the whole run of built-in steps (`[{"operation", "options"}, ...]`)
//! so the table crosses the sandbox boundary once each way, whatever the number of steps.

use liteset_sdk::{
    Column, ColumnData, ErrorKind, Invocation, PluginError, PluginInfo, PostProcessor, Table,
};
use serde_json::Value as Json;

use crate::error::{ErrorKind as PpKind, PpError};
use crate::frame::{Frame, Index, Series, Value};

/// The built-in post-processor.
pub struct Builtin;

impl PostProcessor for Builtin {
    fn info() -> PluginInfo {
        PluginInfo::post_processor("postprocessing", env!("CARGO_PKG_VERSION"))
            .label("Superset post-processing")
            .description(
                "Every operation of Superset's chart-data post_processing (pivot, flatten, \
                 rolling, resample, ...), run as one call per query",
            )
    }

    fn process(_ctx: &Invocation, params: &str, input: Table) -> Result<Table, PluginError> {
        let steps: Json = serde_json::from_str(params)
            .map_err(|e| PluginError::invalid_params(format!("params are not JSON: {e}")))?;
        let frame = to_frame(&input);
        let out = crate::run_pipeline(frame, &steps).map_err(plugin_error)?;
        from_frame(&out).map_err(plugin_error)
    }
}

liteset_sdk::export_post_processor!(Builtin);

fn plugin_error(e: PpError) -> PluginError {
    let kind = match e.kind {
        PpKind::InvalidParams => ErrorKind::InvalidParams,
        PpKind::InvalidInput => ErrorKind::InvalidInput,
        PpKind::Unsupported => ErrorKind::Unsupported,
        PpKind::Internal => ErrorKind::Internal,
    };
    PluginError::new(kind, e.message)
}

/// JSON cell (a nested value) as a frame value.
fn json_value(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n
            .as_i64()
            .map(Value::Int)
            .unwrap_or_else(|| Value::Float(n.as_f64().unwrap_or(f64::NAN))),
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(a) => Value::List(a.iter().map(json_value).collect()),
        Json::Object(_) => Value::Str(v.to_string()),
    }
}

/// A column as pandas holds it after Superset's `normalize_df`: nullable ints become float64,
/// nullable booleans and text are object columns.
fn series(c: &Column, n: usize) -> Series {
    let nulls = c.null_count() > 0;
    match &c.data {
        ColumnData::Float64(v) => Series::Float64(
            (0..n)
                .map(|i| if c.is_null(i) { f64::NAN } else { v[i] })
                .collect(),
        ),
        ColumnData::Int64(v) if !nulls => Series::Int64(v.clone()),
        ColumnData::Int64(v) => Series::Float64(
            (0..n)
                .map(|i| if c.is_null(i) { f64::NAN } else { v[i] as f64 })
                .collect(),
        ),
        ColumnData::Boolean(v) if !nulls => Series::Bool(v.clone()),
        ColumnData::Boolean(v) => Series::Object(
            (0..n)
                .map(|i| {
                    if c.is_null(i) {
                        Value::Null
                    } else {
                        Value::Bool(v[i])
                    }
                })
                .collect(),
        ),
        ColumnData::TimestampUs(v) => {
            Series::Datetime((0..n).map(|i| (!c.is_null(i)).then(|| v[i])).collect())
        }
        ColumnData::Json(v) => Series::Object(
            (0..n)
                .map(|i| {
                    if c.is_null(i) {
                        Value::Null
                    } else {
                        serde_json::from_str(&v[i]).map_or(Value::Null, |j| json_value(&j))
                    }
                })
                .collect(),
        ),
        _ => Series::Object(
            (0..n)
                .map(|i| match c.str_at(i) {
                    Some(s) if !c.is_null(i) => Value::Str(s.to_owned()),
                    _ => Value::Null,
                })
                .collect(),
        ),
    }
}

/// The frame of a table received from the host.
pub fn to_frame(t: &Table) -> Frame {
    let n = t.num_rows;
    let mut frame = Frame::from_columns(
        t.columns
            .iter()
            .map(|c| (c.name.clone(), series(c, n)))
            .collect(),
    );
    frame.index = if t.index.is_empty() {
        Index::range(n)
    } else {
        Index {
            names: t
                .index
                .iter()
                .map(|c| (!c.name.is_empty()).then(|| c.name.clone()))
                .collect(),
            levels: t.index.iter().map(|c| series(c, n)).collect(),
        }
    };
    // `from_columns` sized the default index from the first column; a table without columns
    // still has rows.
    if t.columns.is_empty() && t.index.is_empty() {
        frame.index = Index::range(n);
    }
    frame
}

fn validity(flags: impl Iterator<Item = bool>) -> Option<Vec<u8>> {
    let flags: Vec<bool> = flags.collect();
    if flags.iter().all(|f| *f) {
        None
    } else {
        Some(liteset_sdk::bitmap_from_bools(flags))
    }
}

/// One frame column as an interface column, typed as pandas would report it.
fn column(name: String, s: &Series) -> Column {
    let n = s.len();
    match s {
        Series::Float64(v) => Column::new(name, ColumnData::Float64(v.clone()))
            .with_validity(validity(v.iter().map(|x| !x.is_nan()))),
        Series::Int64(v) => Column::new(name, ColumnData::Int64(v.clone())),
        Series::Bool(v) => Column::new(name, ColumnData::Boolean(v.clone())),
        Series::Datetime(v) => Column::new(
            name,
            ColumnData::TimestampUs(v.iter().map(|x| x.unwrap_or(0)).collect()),
        )
        .with_validity(validity(v.iter().map(Option::is_some))),
        Series::Object(v) => {
            let present = || v.iter().filter(|x| !matches!(x, Value::Null));
            let valid = || v.iter().map(|x| !matches!(x, Value::Null));
            if present().next().is_none() {
                // All missing: an object column of None.
                return Column::utf8(name, (0..n).map(|_| None::<&str>));
            }
            if present().all(|x| matches!(x, Value::Str(_))) {
                Column::utf8(
                    name,
                    v.iter().map(|x| match x {
                        Value::Str(s) => Some(s.as_str()),
                        _ => None,
                    }),
                )
            } else if present().all(|x| matches!(x, Value::Bool(_))) {
                Column::new(
                    name,
                    ColumnData::Boolean(v.iter().map(|x| matches!(x, Value::Bool(true))).collect()),
                )
                .with_validity(validity(valid()))
            } else if present().all(|x| matches!(x, Value::Int(_))) {
                Column::new(
                    name,
                    ColumnData::Int64(
                        v.iter()
                            .map(|x| if let Value::Int(i) = x { *i } else { 0 })
                            .collect(),
                    ),
                )
                .with_validity(validity(valid()))
            } else if present().all(|x| matches!(x, Value::Int(_) | Value::Float(_))) {
                Column::new(
                    name,
                    ColumnData::Float64(
                        v.iter()
                            .map(|x| match x {
                                Value::Int(i) => *i as f64,
                                Value::Float(f) => *f,
                                _ => f64::NAN,
                            })
                            .collect(),
                    ),
                )
                .with_validity(validity(valid()))
            } else if present().all(|x| matches!(x, Value::Ts(_))) {
                Column::new(
                    name,
                    ColumnData::TimestampUs(
                        v.iter()
                            .map(|x| if let Value::Ts(t) = x { *t } else { 0 })
                            .collect(),
                    ),
                )
                .with_validity(validity(valid()))
            } else {
                Column::new(
                    name,
                    ColumnData::Json(
                        v.iter()
                            .map(|x| crate::io::value_to_json(x).to_string())
                            .collect(),
                    ),
                )
                .with_validity(validity(valid()))
            }
        }
    }
}

/// Whether the index is pandas' default `RangeIndex` (left out of the table: positions).
fn is_range(index: &Index, n: usize) -> bool {
    matches!(
        (index.names.as_slice(), index.levels.as_slice()),
        ([None], [Series::Int64(v)]) if v.len() == n && v.iter().enumerate().all(|(i, x)| *x == i as i64)
    )
}

/// The table of a result frame. Column labels must be single strings: a pivot left without
/// `flatten` has tuple labels, which Superset cannot serialise either.
pub fn from_frame(f: &Frame) -> Result<Table, PpError> {
    let n = f.num_rows();
    let mut columns = Vec::with_capacity(f.columns.len());
    for (label, s) in f.labels.iter().zip(&f.columns) {
        let name = match label.as_slice() {
            [Value::Str(s)] => s.clone(),
            other => {
                let shown: Vec<String> = other.iter().map(crate::pystr::py_repr).collect();
                return Err(PpError::params(format!(
                    "Column label ({}) is not a single string; multi-level or non-string \
                     column labels (e.g. a pivot without flatten) cannot be serialised",
                    shown.join(", ")
                )));
            }
        };
        columns.push(column(name, s));
    }
    // Superset's dtype extraction indexes `df[name]`, which yields a frame for a duplicated
    // name and then fails on its truth value; the same message is kept.
    let mut seen = std::collections::HashSet::new();
    if columns.iter().any(|c| !seen.insert(c.name.as_str())) {
        return Err(PpError::params(
            "The truth value of a Series is ambiguous. Use a.empty, a.bool(), a.item(), \
             a.any() or a.all().",
        ));
    }
    let index = if is_range(&f.index, n) {
        Vec::new()
    } else {
        f.index
            .names
            .iter()
            .zip(&f.index.levels)
            .map(|(name, s)| column(name.clone().unwrap_or_default(), s))
            .collect()
    };
    Ok(Table {
        num_rows: n,
        columns,
        index,
    })
}
