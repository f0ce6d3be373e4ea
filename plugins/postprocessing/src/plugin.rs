//! The plugin's face: the `post-processor` world through liteset-sdk, and the conversions
//! between the interface's columnar table and the pandas-like [`Frame`] the operations use.
//!
//! The params of a call are the whole run of built-in steps (`[{"operation", "options"}, ...]`)
//! so the table crosses the sandbox boundary once each way, whatever the number of steps.

use liteset_sdk::{
    Column, ColumnData, ErrorKind, Invocation, PluginError, PluginInfo, PostProcessor, Table,
    bitmap_get,
};
use serde_json::Value as Json;

use crate::error::{ErrorKind as PpKind, PpError};
use crate::frame::{Frame, Index, NAT, Objects, Series, Times, Value};

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
        let frame = to_frame(input);
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
        Json::String(s) => Value::Str(s.as_str().into()),
        Json::Array(a) => Value::List(a.iter().map(json_value).collect()),
        Json::Object(_) => Value::Str(v.to_string().into()),
    }
}

/// A column as pandas holds it after Superset's `normalize_df`: nullable ints become float64,
/// nullable booleans and text are object columns. Consumes the column so that buffers move
/// instead of being copied: in the sandbox every extra copy is fresh memory to fault in.
fn series(c: Column, n: usize) -> Series {
    let nulls = c.null_count() > 0;
    let Column { data, validity, .. } = c;
    let is_null = |i: usize| validity.as_ref().is_some_and(|b| !bitmap_get(b, i));
    match data {
        ColumnData::Float64(mut v) => {
            if nulls {
                for (i, x) in v.iter_mut().enumerate() {
                    if is_null(i) {
                        *x = f64::NAN;
                    }
                }
            }
            Series::Float64(v)
        }
        ColumnData::Int64(v) if !nulls => Series::Int64(v),
        ColumnData::Int64(v) => Series::Float64(
            v.iter()
                .enumerate()
                .map(|(i, &x)| if is_null(i) { f64::NAN } else { x as f64 })
                .collect(),
        ),
        ColumnData::Boolean(v) if !nulls => Series::Bool(v),
        ColumnData::Boolean(v) => Series::Object(
            v.iter()
                .enumerate()
                .map(|(i, &b)| {
                    if is_null(i) {
                        Value::Null
                    } else {
                        Value::Bool(b)
                    }
                })
                .collect(),
        ),
        ColumnData::TimestampUs(mut v) => {
            if nulls {
                for (i, t) in v.iter_mut().enumerate() {
                    if is_null(i) {
                        *t = NAT;
                    }
                }
            }
            Series::Datetime(Times(v))
        }
        ColumnData::Json(v) => Series::Object(
            v.iter()
                .enumerate()
                .map(|(i, text)| {
                    if is_null(i) {
                        Value::Null
                    } else {
                        serde_json::from_str(text).map_or(Value::Null, |j| json_value(&j))
                    }
                })
                .collect(),
        ),
        // Kept dictionary-encoded (see `Objects`): no per-row work for low-cardinality text,
        // the hot cost of a million-row pivot. Null rows, if any, point at an extra `Null`
        // entry.
        ColumnData::Utf8Dict {
            dictionary,
            mut codes,
        } => {
            let mut values: Vec<Value> = dictionary
                .into_iter()
                .map(|s| Value::Str(s.into()))
                .collect();
            if nulls {
                let null = values.len() as u32;
                values.push(Value::Null);
                for (i, code) in codes.iter_mut().enumerate() {
                    if is_null(i) || *code >= null {
                        *code = null;
                    }
                }
            }
            Series::Object(Objects::Dict { values, codes })
        }
        data => {
            let c = Column {
                name: String::new(),
                data,
                validity,
            };
            Series::Object(
                (0..n)
                    .map(|i| match c.str_at(i) {
                        Some(s) => Value::Str(s.into()),
                        None => Value::Null,
                    })
                    .collect(),
            )
        }
    }
}

/// The frame of a table received from the host (consumed: see [`series`]).
pub fn to_frame(t: Table) -> Frame {
    let n = t.num_rows;
    let Table { columns, index, .. } = t;
    let index = if index.is_empty() {
        Index::range(n)
    } else {
        Index {
            names: index
                .iter()
                .map(|c| (!c.name.is_empty()).then(|| c.name.clone()))
                .collect(),
            levels: index.into_iter().map(|c| series(c, n)).collect(),
        }
    };
    let (labels, columns) = columns
        .into_iter()
        .map(|c| (vec![Value::Str(c.name.as_str().into())], series(c, n)))
        .unzip();
    Frame {
        labels,
        columns,
        column_names: vec![None],
        index,
    }
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
        .with_validity(validity(v.iter().map(|x| x.is_some()))),
        Series::Object(v) => {
            let present = || v.iter().filter(|x| !matches!(x, Value::Null));
            let valid = || v.iter().map(|x| !matches!(x, Value::Null));
            if present().next().is_none() {
                // All missing: an object column of None.
                return Column::utf8(name, (0..n).map(|_| None::<&str>));
            }
            if let Objects::Dict { values, codes } = v
                && values
                    .iter()
                    .all(|x| matches!(x, Value::Str(_) | Value::Null))
            {
                // Still dictionary-encoded: hand the dictionary over as it is.
                let dictionary = values
                    .iter()
                    .map(|x| match x {
                        Value::Str(s) => s.to_string(),
                        _ => String::new(),
                    })
                    .collect();
                return Column::new(
                    name,
                    ColumnData::Utf8Dict {
                        dictionary,
                        codes: codes.clone(),
                    },
                )
                .with_validity(validity(valid()));
            }
            if present().all(|x| matches!(x, Value::Str(_))) {
                Column::utf8(
                    name,
                    v.iter().map(|x| match x {
                        Value::Str(s) => Some(&**s),
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
            [Value::Str(s)] => s.to_string(),
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
