//! `cum`: cumulative sum, product, minimum or maximum of selected columns (Superset's `cum`,
//! pandas' `cumsum`/`cumprod`/`cummin`/`cummax` after `fillna(0)`).

use liteset_pyrepr as py;

use crate::error::PpError;
use crate::frame::{Frame, Series, Value};
use crate::ops::append::{append_columns, label_text, select_positions, validate_column_args};
use crate::ops::args::{Options, Signature, get, invalid, opt_mapping};

const SIGNATURE: Signature = Signature {
    name: "cum",
    params: &[("operator", true), ("columns", true)],
};

/// The cumulative operations Superset allows (`ALLOWLIST_CUMULATIVE_FUNCTIONS`).
#[derive(Clone, Copy)]
enum CumOp {
    Sum,
    Prod,
    Min,
    Max,
}

/// Superset's `cum(df, operator, columns)`.
///
/// Missing values are filled with 0 first, so a NaN restarts nothing: it adds 0 to a sum and
/// zeroes a product from there on. int64 columns stay int64 (with numpy's wrapping overflow).
pub fn cum(df: Frame, options: &Options) -> Result<Frame, PpError> {
    validate_column_args(&df, options, &["columns"])?;
    SIGNATURE.check(options)?;
    let columns = opt_mapping(options, "columns")?;
    let op = match get(options, "operator") {
        Some(serde_json::Value::String(s)) => match s.as_str() {
            "sum" => CumOp::Sum,
            "prod" => CumOp::Prod,
            "min" => CumOp::Min,
            "max" => CumOp::Max,
            _ => return Err(invalid(format!("Invalid cumulative operator: {s}"))),
        },
        // Python builds `"cum" + operator`, which fails for anything but a string.
        other => {
            return Err(invalid(format!(
                "can only concatenate str (not \"{}\") to str",
                match other {
                    None => "NoneType".to_string(),
                    Some(v) => python_type_name(v).to_string(),
                }
            )));
        }
    };
    let positions = select_positions(&df, columns.iter().map(|(k, _)| k.as_str()));
    let mut derived = Vec::with_capacity(positions.len());
    for p in positions {
        let label = df.labels[p].clone();
        let series = cumulate(&df.columns[p], op).ok_or_else(|| {
            invalid(format!(
                "Cumulative operations need numeric columns; column {} is not numeric",
                py::str(&label_text(&label))
            ))
        })?;
        derived.push((label, series));
    }
    Ok(append_columns(df, derived, &columns))
}

/// The Python type name of a JSON value, for Python-style messages.
fn python_type_name(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "NoneType",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(n) if n.is_f64() => "float",
        serde_json::Value::Number(_) => "int",
        serde_json::Value::String(_) => "str",
        serde_json::Value::Array(_) => "list",
        serde_json::Value::Object(_) => "dict",
    }
}

/// One column's cumulative values, or `None` when the column is not numeric.
fn cumulate(series: &Series, op: CumOp) -> Option<Series> {
    Some(match series {
        Series::Float64(v) => {
            let mut acc: Option<f64> = None;
            Series::Float64(
                v.iter()
                    .map(|&x| {
                        let x = if x.is_nan() { 0.0 } else { x };
                        let next = match (acc, op) {
                            (None, _) => x,
                            (Some(a), CumOp::Sum) => a + x,
                            (Some(a), CumOp::Prod) => a * x,
                            (Some(a), CumOp::Min) => a.min(x),
                            (Some(a), CumOp::Max) => a.max(x),
                        };
                        acc = Some(next);
                        next
                    })
                    .collect(),
            )
        }
        Series::Int64(v) => Series::Int64(cumulate_ints(v.iter().copied(), op)),
        // pandas accumulates booleans as integers for sums and products, and keeps booleans
        // for running minima and maxima.
        Series::Bool(v) => match op {
            CumOp::Min => Series::Bool(
                v.iter()
                    .scan(true, |a, &b| {
                        *a &= b;
                        Some(*a)
                    })
                    .collect(),
            ),
            CumOp::Max => Series::Bool(
                v.iter()
                    .scan(false, |a, &b| {
                        *a |= b;
                        Some(*a)
                    })
                    .collect(),
            ),
            _ => Series::Int64(cumulate_ints(v.iter().map(|&b| i64::from(b)), op)),
        },
        Series::Object(v) => {
            let mut floats = Vec::with_capacity(v.len());
            for x in v {
                floats.push(match x {
                    Value::Null => f64::NAN,
                    Value::Bool(b) => f64::from(u8::from(*b)),
                    Value::Int(i) => *i as f64,
                    Value::Float(f) => *f,
                    _ => return None,
                });
            }
            return cumulate(&Series::Float64(floats), op);
        }
        Series::Datetime(_) => return None,
    })
}

fn cumulate_ints(values: impl Iterator<Item = i64>, op: CumOp) -> Vec<i64> {
    let mut acc: Option<i64> = None;
    values
        .map(|x| {
            let next = match (acc, op) {
                (None, _) => x,
                (Some(a), CumOp::Sum) => a.wrapping_add(x),
                (Some(a), CumOp::Prod) => a.wrapping_mul(x),
                (Some(a), CumOp::Min) => a.min(x),
                (Some(a), CumOp::Max) => a.max(x),
            };
            acc = Some(next);
            next
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::append::tests::{frame, names};
    use serde_json::json;

    fn opts(v: serde_json::Value) -> Options {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn cumulates_with_nan_as_zero() {
        let df = frame(vec![
            ("a", Series::Int64(vec![3, 1, 2])),
            ("b", Series::Float64(vec![1.0, f64::NAN, 2.0])),
        ]);
        let out = cum(
            df.clone(),
            &opts(json!({"operator": "sum", "columns": {"b": "b"}})),
        )
        .unwrap();
        assert_eq!(out.columns[1], Series::Float64(vec![1.0, 1.0, 3.0]));
        let out = cum(
            df,
            &opts(json!({"operator": "min", "columns": {"a": "a_min"}})),
        )
        .unwrap();
        assert_eq!(names(&out), ["a", "b", "a_min"]);
        assert_eq!(out.columns[2], Series::Int64(vec![3, 1, 1]));
    }

    #[test]
    fn errors() {
        let df = frame(vec![("a", Series::Int64(vec![1]))]);
        let err = |o| cum(df.clone(), &opts(o)).unwrap_err().message;
        assert_eq!(
            err(json!({"operator": "avg", "columns": {"a": "a"}})),
            "Invalid cumulative operator: avg"
        );
        assert_eq!(
            err(json!({"operator": "sum", "columns": {"z": "z"}})),
            "Referenced columns not available in DataFrame."
        );
    }
}
