//! Helpers shared by group B's operations: column selection by name, Superset's
//! `validate_column_args`, the "append semantics" of `_append_columns`, and numeric views of
//! columns.

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::PpError;
use crate::frame::{Frame, Label, Series, Value};
use crate::ops::args::{Options, get, invalid};

/// Superset's `validate_column_args`: every name listed under one of `argnames` must be a
/// column (level 0 of the column labels when they have several levels).
///
/// It runs before Python binds the arguments, so it comes before the unknown-option check.
pub fn validate_column_args(
    df: &Frame,
    options: &Options,
    argnames: &[&str],
) -> Result<(), PpError> {
    for name in argnames {
        let elems: Vec<&Json> = match get(options, name) {
            None => continue,
            Some(Json::Object(map)) => {
                // Iterating a dict yields its keys; compare them as strings.
                if map.keys().all(|k| has_level0(df, &Json::String(k.clone()))) {
                    continue;
                }
                return Err(missing_columns());
            }
            Some(Json::Array(items)) => items.iter().collect(),
            Some(other) => vec![other],
        };
        if !elems.iter().all(|e| has_level0(df, e)) {
            return Err(missing_columns());
        }
    }
    Ok(())
}

fn missing_columns() -> PpError {
    invalid("Referenced columns not available in DataFrame.")
}

/// Whether some column's level-0 label equals `elem` with Python's `==`.
fn has_level0(df: &Frame, elem: &Json) -> bool {
    df.labels
        .iter()
        .any(|l| l.first().is_some_and(|v| json_eq_value(elem, v)))
}

/// Python equality between a JSON option value and a frame value.
pub fn json_eq_value(json: &Json, value: &Value) -> bool {
    match (json, value) {
        (Json::String(a), Value::Str(b)) => **a == **b,
        (Json::Bool(a), Value::Bool(b)) => a == b,
        (Json::Number(n), Value::Int(i)) => n.as_f64() == Some(*i as f64),
        (Json::Number(n), Value::Float(f)) => n.as_f64() == Some(*f),
        (Json::Number(n), Value::Bool(b)) => n.as_f64() == Some(f64::from(u8::from(*b))),
        (Json::Bool(b), Value::Int(i)) => i64::from(*b) == *i,
        _ => false,
    }
}

/// Whether a label's first level is the string `name`.
pub fn level0_is(label: &Label, name: &str) -> bool {
    matches!(label.first(), Some(Value::Str(s)) if **s == *name)
}

/// `df.loc[:, keys]`: the positions of the columns selected by level-0 name, grouped by key in
/// the order of `keys`, each group in frame order.
pub fn select_positions<'a>(df: &Frame, keys: impl IntoIterator<Item = &'a str>) -> Vec<usize> {
    let mut out = Vec::new();
    for key in keys {
        out.extend(
            df.labels
                .iter()
                .enumerate()
                .filter(|(_, l)| level0_is(l, key))
                .map(|(i, _)| i),
        );
    }
    out
}

/// A column's display name for messages (`str()` of the label, levels joined by `, `).
pub fn label_text(label: &Label) -> String {
    let parts: Vec<String> = label.iter().map(value_text).collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        format!("({})", parts.join(", "))
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => py::float(*f),
        Value::Str(s) => s.to_string(),
        Value::Ts(t) => t.to_string(),
        Value::List(_) => "[...]".into(),
    }
}

/// Superset's `_append_columns(base_df, append_df, columns)`.
///
/// `derived` are the computed columns, labelled like the source columns they come from.
/// When every mapping is the identity, they replace the base columns of the same label in
/// place (pandas' `loc` assignment, which keeps an int64 column int64 when the new values are
/// all integral, and appends a label that does not exist yet). Otherwise their names are
/// renamed through `mapping` at every level (pandas' `rename`) and they are appended after
/// the base columns, duplicates included: a mixed mapping duplicates the identity-mapped
/// column, which Superset then fails to serialise.
pub fn append_columns(
    mut base: Frame,
    derived: Vec<(Label, Series)>,
    mapping: &[(String, String)],
) -> Frame {
    if mapping.iter().all(|(k, v)| k == v) {
        // `loc[:, columns.keys()] = append_df` only writes the mapped columns.
        let mapped = derived
            .into_iter()
            .filter(|(l, _)| mapping.iter().any(|(k, _)| level0_is(l, k)));
        for (label, series) in mapped {
            let targets: Vec<usize> = base
                .labels
                .iter()
                .enumerate()
                .filter(|(_, l)| **l == label)
                .map(|(i, _)| i)
                .collect();
            if targets.is_empty() {
                base.labels.push(label);
                base.columns.push(series);
                continue;
            }
            for t in targets {
                let old = std::mem::replace(&mut base.columns[t], Series::Int64(Vec::new()));
                base.columns[t] = assign_keeping_dtype(old, series.clone());
            }
        }
        return base;
    }
    for (label, series) in derived {
        let renamed: Label = label
            .into_iter()
            .map(|v| match v {
                Value::Str(s) => match mapping.iter().find(|(k, _)| **k == *s) {
                    Some((_, to)) => Value::Str(to.as_str().into()),
                    None => Value::Str(s),
                },
                other => other,
            })
            .collect();
        base.labels.push(renamed);
        base.columns.push(series);
    }
    base
}

/// pandas' in-place `loc` column assignment: an int64 column stays int64 when every new value
/// is a finite integer; otherwise the column takes the new values' dtype.
fn assign_keeping_dtype(old: Series, new: Series) -> Series {
    match (&old, new) {
        (Series::Int64(_), Series::Float64(v))
            if v.iter()
                .all(|x| x.is_finite() && x.fract() == 0.0 && x.abs() < 9.2e18) =>
        {
            Series::Int64(v.iter().map(|x| *x as i64).collect())
        }
        (_, new) => new,
    }
}

/// A numeric column as `f64` values (NaN for missing), as pandas' window and arithmetic
/// kernels see it: ints and bools convert; an object column converts when it holds only
/// numbers, booleans and nulls. Anything else is refused with `what` in the message.
pub fn numeric_values(series: &Series, label: &Label, what: &str) -> Result<Vec<f64>, PpError> {
    match series {
        Series::Float64(v) => Ok(v.clone()),
        Series::Int64(v) => Ok(v.iter().map(|x| *x as f64).collect()),
        Series::Bool(v) => Ok(v.iter().map(|b| f64::from(u8::from(*b))).collect()),
        Series::Object(v) => v
            .iter()
            .map(|x| match x {
                Value::Null => Ok(f64::NAN),
                Value::Bool(b) => Ok(f64::from(u8::from(*b))),
                Value::Int(i) => Ok(*i as f64),
                Value::Float(f) => Ok(*f),
                _ => Err(non_numeric(label, what)),
            })
            .collect(),
        Series::Datetime(_) => Err(non_numeric(label, what)),
    }
}

fn non_numeric(label: &Label, what: &str) -> PpError {
    invalid(format!(
        "{what}: column {} is not numeric",
        py::str(&label_text(label))
    ))
}

/// Python `str()` of an option value, for messages built with f-strings.
pub fn option_text(options: &Options, key: &str) -> String {
    options.get(key).map_or_else(|| "None".into(), py::json_str)
}

/// Rows `start..` of a frame (Python `df[start:]`), index included.
pub fn slice_rows(df: Frame, start: usize) -> Frame {
    let n = df.num_rows();
    if start == 0 {
        return df;
    }
    let positions: Vec<usize> = (start.min(n)..n).collect();
    take_rows(&df, &positions)
}

/// The rows at `positions`, in that order, index included.
pub fn take_rows(df: &Frame, positions: &[usize]) -> Frame {
    Frame {
        labels: df.labels.clone(),
        columns: df.columns.iter().map(|c| c.take(positions)).collect(),
        column_names: df.column_names.clone(),
        index: crate::frame::Index {
            names: df.index.names.clone(),
            levels: df.index.levels.iter().map(|l| l.take(positions)).collect(),
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::frame::Frame;

    /// A one-level frame from `(name, series)` pairs.
    pub fn frame(cols: Vec<(&str, Series)>) -> Frame {
        Frame::from_columns(cols.into_iter().map(|(n, s)| (n.to_string(), s)).collect())
    }

    pub fn names(df: &Frame) -> Vec<String> {
        df.labels.iter().map(label_text).collect()
    }

    #[test]
    fn identity_replaces_and_keeps_int_when_integral() {
        let df = frame(vec![
            ("a", Series::Int64(vec![1, 2])),
            ("b", Series::Float64(vec![1.0, 2.0])),
        ]);
        let out = append_columns(
            df.clone(),
            vec![(
                vec![Value::Str("a".into())],
                Series::Float64(vec![3.0, 4.0]),
            )],
            &[("a".into(), "a".into())],
        );
        assert_eq!(out.columns[0], Series::Int64(vec![3, 4]));
        let out = append_columns(
            df,
            vec![(
                vec![Value::Str("a".into())],
                Series::Float64(vec![f64::NAN, 4.0]),
            )],
            &[("a".into(), "a".into())],
        );
        assert!(matches!(out.columns[0], Series::Float64(_)));
    }

    #[test]
    fn mixed_mapping_duplicates() {
        let df = frame(vec![
            ("d", Series::Float64(vec![1.0])),
            ("e", Series::Float64(vec![1.0])),
        ]);
        let out = append_columns(
            df,
            vec![
                (vec![Value::Str("d".into())], Series::Float64(vec![0.0])),
                (vec![Value::Str("e".into())], Series::Float64(vec![0.0])),
            ],
            &[("d".into(), "d".into()), ("e".into(), "e_diff".into())],
        );
        assert_eq!(names(&out), ["d", "e", "d", "e_diff"]);
    }
}
