//! Conversions between the frame model and Superset's JSON: the input records of a query
//! result, and the chart-data response entry of the final frame.
//!
//! Both the golden tests and the server glue use these, so they follow Superset exactly:
//! `input` mirrors what `SupersetResultSet` + `normalize_df` leave in pandas, `Response`
//! mirrors `get_df_payload` + `json.dumps(default=json_int_dttm_ser, ignore_nan=True)`.

use serde_json::{Map, Number, Value as Json};

use crate::error::{PpError, Result};
use crate::frame::{Frame, Index, Series, Value};

/// One cell of a JSON record as an object value.
fn json_to_value(j: &Json) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::Str(s.as_str().into()),
        Json::Array(items) => Value::List(items.iter().map(json_to_value).collect()),
        Json::Object(_) => Value::Str(j.to_string().into()),
    }
}

/// Epoch milliseconds (as Superset serialises timestamps) to microseconds.
fn ms_to_us(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

/// Builds the frame Superset's operations receive from the records of a query result.
///
/// `pandas_dtypes` gives each column's dtype (`datetime64[..]`, `int64`, `float64`, `bool`,
/// anything else is `object`); a column without one is `object`. Timestamps arrive as
/// epoch-ms numbers. The index is the default `RangeIndex`.
pub fn frame_from_records(
    colnames: &[String],
    pandas_dtypes: &Map<String, Json>,
    records: &[Json],
) -> Frame {
    let cell = |r: &Json, c: &str| r.get(c).cloned().unwrap_or(Json::Null);
    let columns = colnames
        .iter()
        .map(|name| {
            let dtype = pandas_dtypes
                .get(name)
                .and_then(Json::as_str)
                .unwrap_or("object");
            let cells = records.iter().map(|r| cell(r, name));
            let series = if dtype.starts_with("datetime64") {
                Series::Datetime(cells.map(|c| c.as_f64().map(ms_to_us)).collect())
            } else if dtype.starts_with("int") || dtype.starts_with("uint") {
                Series::Int64(
                    cells
                        .map(|c| {
                            c.as_i64()
                                .or_else(|| c.as_f64().map(|f| f as i64))
                                .unwrap_or(0)
                        })
                        .collect(),
                )
            } else if dtype.starts_with("float") {
                Series::Float64(cells.map(|c| c.as_f64().unwrap_or(f64::NAN)).collect())
            } else if dtype == "bool" {
                Series::Bool(cells.map(|c| c.as_bool().unwrap_or(false)).collect())
            } else {
                Series::Object(cells.map(|c| json_to_value(&c)).collect())
            };
            (name.clone(), series)
        })
        .collect();
    let mut frame = Frame::from_columns(columns);
    frame.index = Index::range(records.len());
    frame
}

/// The chart-data fields of one query result, as Superset returns them.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// `list(df.columns)`, with `\,` unescaped to `,`.
    pub colnames: Vec<String>,
    /// `GenericDataType` per column: 0 numeric, 1 string, 2 temporal, 3 boolean.
    pub coltypes: Vec<u8>,
    /// `df.to_dict("records")` as JSON (the index is not part of it).
    pub data: Vec<Map<String, Json>>,
    /// `list(df.index)`: one JSON value per row, an array per row for a multi-level index.
    pub indexnames: Vec<Json>,
    /// `len(df.index)`.
    pub rowcount: usize,
}

/// Superset's `unescape_separator`: `\,` back to `,`.
pub fn unescape_separator(s: &str) -> String {
    s.replace("\\,", ",")
}

/// Superset's `escape_separator`: `,` to `\,`.
pub fn escape_separator(s: &str) -> String {
    s.replace(',', "\\,")
}

/// A cell as `json_int_dttm_ser` + `ignore_nan` write it: timestamps as epoch-ms floats,
/// NaN/NaT/inf as `null`.
pub fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::Number((*i).into()),
        Value::Float(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::Str(s) => Json::String(s.to_string()),
        Value::Ts(us) => Number::from_f64(*us as f64 / 1000.0).map_or(Json::Null, Json::Number),
        Value::List(items) => Json::Array(items.iter().map(value_to_json).collect()),
    }
}

fn series_json(s: &Series, i: usize) -> Json {
    match s {
        Series::Float64(v) => Number::from_f64(v[i]).map_or(Json::Null, Json::Number),
        Series::Int64(v) => Json::Number(v[i].into()),
        Series::Bool(v) => Json::Bool(v[i]),
        Series::Datetime(v) => v
            .get(i)
            .and_then(|us| Number::from_f64(us as f64 / 1000.0))
            .map_or(Json::Null, Json::Number),
        Series::Object(v) => value_to_json(&v[i]),
    }
}

/// `extract_dataframe_dtypes` for one column: pandas `infer_dtype` mapped to
/// `GenericDataType`, and an all-null column typed STRING. (Superset would take an all-null
/// column's type from the dataset when the name is a dataset column; the caller can
/// override that case, see [`frame_to_response_with`].)
pub fn infer_coltype(s: &Series) -> u8 {
    let all_null = (0..s.len()).all(|i| s.is_null(i));
    if all_null {
        return 1;
    }
    match s {
        Series::Float64(_) | Series::Int64(_) => 0,
        Series::Bool(_) => 3,
        Series::Datetime(_) => 2,
        Series::Object(v) => {
            let (mut ints, mut floats, mut bools, mut strs, mut ts, mut other) = (0, 0, 0, 0, 0, 0);
            for x in v {
                match x {
                    Value::Null => {}
                    Value::Float(f) if f.is_nan() => {}
                    Value::Int(_) => ints += 1,
                    Value::Float(_) => floats += 1,
                    Value::Bool(_) => bools += 1,
                    Value::Str(_) => strs += 1,
                    Value::Ts(_) => ts += 1,
                    Value::List(_) => other += 1,
                }
            }
            let total = ints + floats + bools + strs + ts + other;
            if ints + floats == total {
                0
            } else if bools == total {
                3
            } else if ts == total {
                2
            } else {
                1
            }
        }
    }
}

/// [`frame_to_response`] with a hook for all-null columns: `dataset_type(name)` returns the
/// type Superset would take from the dataset's column of that name, if any.
pub fn frame_to_response_with(
    frame: &Frame,
    dataset_type: &dyn Fn(&str) -> Option<u8>,
) -> Result<Response> {
    let mut colnames = Vec::with_capacity(frame.labels.len());
    for label in &frame.labels {
        match label.as_slice() {
            [Value::Str(s)] => colnames.push(unescape_separator(s)),
            other => {
                let shown: Vec<String> = other.iter().map(crate::pystr::py_repr).collect();
                return Err(PpError::params(format!(
                    "Column label ({}) is not a single string; multi-level or non-string \
                     column labels (e.g. a pivot without flatten) cannot be serialised",
                    shown.join(", ")
                )));
            }
        }
    }
    // Superset's dtype extraction indexes `df[name]`, which yields a frame for a duplicated
    // name and then fails on its truth value.
    {
        let mut seen = std::collections::HashSet::new();
        for name in &colnames {
            if !seen.insert(name.as_str()) {
                return Err(PpError::params(
                    "The truth value of a Series is ambiguous. Use a.empty, a.bool(), a.item(), a.any() or a.all().",
                ));
            }
        }
    }
    let coltypes = frame
        .columns
        .iter()
        .zip(&colnames)
        .map(|(s, name)| {
            let t = infer_coltype(s);
            let all_null = (0..s.len()).all(|i| s.is_null(i));
            if all_null {
                dataset_type(name).unwrap_or(t)
            } else {
                t
            }
        })
        .collect();
    let n = frame.num_rows();
    let mut data = Vec::with_capacity(n);
    for i in 0..n {
        let mut rec = Map::new();
        for (name, s) in colnames.iter().zip(&frame.columns) {
            rec.insert(name.clone(), series_json(s, i));
        }
        data.push(rec);
    }
    let indexnames = (0..n)
        .map(|i| {
            if frame.index.levels.len() == 1 {
                series_json(&frame.index.levels[0], i)
            } else {
                Json::Array(
                    frame
                        .index
                        .levels
                        .iter()
                        .map(|l| series_json(l, i))
                        .collect(),
                )
            }
        })
        .collect();
    Ok(Response {
        colnames,
        coltypes,
        data,
        indexnames,
        rowcount: n,
    })
}

/// Serialises the final frame as Superset's chart-data response entry. Fails (Superset
/// answers 500) when a column label is not a single string or two columns share a name.
pub fn frame_to_response(frame: &Frame) -> Result<Response> {
    frame_to_response_with(frame, &|_| None)
}
