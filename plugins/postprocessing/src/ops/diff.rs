//! `diff`: row-by-row (or column-by-column) differences of selected columns (Superset's
//! `diff`, pandas' `DataFrame.diff(periods, axis)`).

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::PpError;
use crate::frame::{Frame, Label, Series, Value};
use crate::ops::append::{append_columns, label_text, select_positions, validate_column_args};
use crate::ops::args::{Options, Signature, get, invalid, opt_mapping};

const SIGNATURE: Signature = Signature {
    name: "diff",
    params: &[("columns", true), ("periods", false), ("axis", false)],
};

/// Superset's `diff(df, columns, periods=1, axis=0)`.
pub fn diff(df: Frame, options: &Options) -> Result<Frame, PpError> {
    validate_column_args(&df, options, &["columns"])?;
    SIGNATURE.check(options)?;
    let columns = opt_mapping(options, "columns")?;
    let periods = match get(options, "periods") {
        None if !options.contains_key("periods") => 1,
        Some(Json::Number(n)) if n.as_i64().is_some() => n.as_i64().unwrap_or(1),
        Some(Json::Number(n)) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
            n.as_f64().unwrap_or(1.0) as i64
        }
        Some(Json::Bool(b)) => i64::from(*b),
        _ => return Err(invalid("periods must be an integer")),
    };
    let axis = match get(options, "axis") {
        None if !options.contains_key("axis") => 0,
        Some(Json::Number(n)) if n.as_i64() == Some(0) => 0,
        Some(Json::Number(n)) if n.as_i64() == Some(1) => 1,
        Some(Json::Bool(b)) => i32::from(*b),
        Some(Json::String(s)) if s == "index" || s == "rows" => 0,
        Some(Json::String(s)) if s == "columns" => 1,
        other => {
            return Err(invalid(format!(
                "No axis named {} for object type DataFrame",
                other.map_or("None".into(), py::json_str)
            )));
        }
    };
    let positions = select_positions(&df, columns.iter().map(|(k, _)| k.as_str()));
    let selected: Vec<(Label, &Series)> = positions
        .iter()
        .map(|&p| (df.labels[p].clone(), &df.columns[p]))
        .collect();
    let derived = if axis == 1 && periods != 0 {
        diff_columns(&selected, periods)?
    } else {
        selected
            .iter()
            .map(|(label, s)| Ok((label.clone(), diff_rows(s, periods, label)?)))
            .collect::<Result<Vec<_>, PpError>>()?
    };
    Ok(append_columns(df, derived, &columns))
}

/// The row `i - periods` that row `i` is compared with, if it exists.
fn lag(i: usize, periods: i64, n: usize) -> Option<usize> {
    // A `periods` beyond the frame (up to ±i64::MAX) lags out of range: no row.
    let j = (i as i64).checked_sub(periods)?;
    (0..n as i64).contains(&j).then_some(j as usize)
}

/// pandas' `Series.diff(periods)`: numbers become float64 (NaN where the lagged row does not
/// exist); booleans become an object column of exclusive-ors.
fn diff_rows(series: &Series, periods: i64, label: &Label) -> Result<Series, PpError> {
    let n = series.len();
    Ok(match series {
        Series::Float64(v) => Series::Float64(
            (0..n)
                .map(|i| lag(i, periods, n).map_or(f64::NAN, |j| v[i] - v[j]))
                .collect(),
        ),
        Series::Int64(v) => Series::Float64(
            (0..n)
                .map(|i| lag(i, periods, n).map_or(f64::NAN, |j| v[i].wrapping_sub(v[j]) as f64))
                .collect(),
        ),
        Series::Bool(v) => Series::Object(
            (0..n)
                .map(|i| lag(i, periods, n).map_or(Value::Null, |j| Value::Bool(v[i] ^ v[j])))
                .collect(),
        ),
        Series::Object(_) | Series::Datetime(_) => return Err(not_numeric(label)),
    })
}

fn not_numeric(label: &Label) -> PpError {
    invalid(format!(
        "diff needs numeric columns; column {} is not numeric",
        py::str(&label_text(label))
    ))
}

/// pandas' `DataFrame.diff(axis=1)`, i.e. `df - df.shift(periods, axis=1)`: each column minus
/// the column `periods` places before it; the first columns, which have nothing to subtract,
/// become all-NaN. Two int64 columns give an int64 difference.
fn diff_columns(
    selected: &[(Label, &Series)],
    periods: i64,
) -> Result<Vec<(Label, Series)>, PpError> {
    let m = selected.len();
    let mut out = Vec::with_capacity(m);
    for (j, (label, s)) in selected.iter().enumerate() {
        let n = s.len();
        let Some(k) = lag(j, periods, m) else {
            if matches!(s, Series::Object(_) | Series::Datetime(_)) {
                return Err(not_numeric(label));
            }
            out.push((label.clone(), Series::Float64(vec![f64::NAN; n])));
            continue;
        };
        let other = selected[k].1;
        let series = match (s, other) {
            (Series::Int64(a), Series::Int64(b)) => {
                Series::Int64(a.iter().zip(b).map(|(x, y)| x.wrapping_sub(*y)).collect())
            }
            (Series::Bool(_), Series::Bool(_)) => {
                return Err(invalid(
                    "numpy boolean subtract, the `-` operator, is not supported, use the \
                     bitwise_xor, the `^` operator, or the logical_xor function instead.",
                ));
            }
            _ => {
                let a = as_f64(s).ok_or_else(|| not_numeric(label))?;
                let b = as_f64(other).ok_or_else(|| not_numeric(&selected[k].0))?;
                Series::Float64(a.iter().zip(&b).map(|(x, y)| x - y).collect())
            }
        };
        out.push((label.clone(), series));
    }
    Ok(out)
}

fn as_f64(s: &Series) -> Option<Vec<f64>> {
    match s {
        Series::Float64(v) => Some(v.clone()),
        Series::Int64(v) => Some(v.iter().map(|x| *x as f64).collect()),
        Series::Bool(v) => Some(v.iter().map(|b| f64::from(u8::from(*b))).collect()),
        _ => None,
    }
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
    fn rows_and_columns() {
        let df = frame(vec![
            ("a", Series::Int64(vec![1, 4, 9])),
            ("c", Series::Int64(vec![2, 2, 2])),
        ]);
        let out = diff(
            df.clone(),
            &opts(json!({"columns": {"a": "d"}, "periods": 2})),
        )
        .unwrap();
        assert_eq!(names(&out), ["a", "c", "d"]);
        match &out.columns[2] {
            Series::Float64(v) => assert!(v[0].is_nan() && v[1].is_nan() && v[2] == 8.0),
            other => panic!("{other:?}"),
        }
        let out = diff(
            df,
            &opts(json!({"columns": {"a": "a", "c": "c"}, "axis": 1})),
        )
        .unwrap();
        assert!(matches!(&out.columns[0], Series::Float64(v) if v.iter().all(|x| x.is_nan())));
        assert_eq!(out.columns[1], Series::Int64(vec![1, -2, -7]));
    }
}
