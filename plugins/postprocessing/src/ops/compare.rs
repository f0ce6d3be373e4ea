//! `compare`: differences, percentage changes or ratios between pairs of columns (Superset's
//! `compare`, used for time comparisons).

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::PpError;
use crate::frame::{Frame, Series, Value};
use crate::ops::append::{label_text, level0_is, numeric_values, validate_column_args};
use crate::ops::args::{Options, Signature, get, invalid, opt_bool, opt_str_list};

const SIGNATURE: Signature = Signature {
    name: "compare",
    params: &[
        ("source_columns", true),
        ("compare_columns", true),
        ("compare_type", true),
        ("drop_original_columns", false),
        ("precision", false),
    ],
};

/// `superset.utils.core.TIME_COMPARISON`, the separator of the result column's name parts.
const TIME_COMPARISON: &str = "__";

#[derive(Clone, Copy, PartialEq)]
enum CompareType {
    Difference,
    Percentage,
    Ratio,
}

/// Superset's `compare(df, source_columns, compare_columns, compare_type,
/// drop_original_columns=False, precision=4)`.
///
/// For each pair the result goes to `"<type>__<source>__<compare>"`. After a pivot, each name
/// selects every series under that metric, and the series are paired by the remaining label
/// levels (pandas aligns the two frames on their column labels).
pub fn compare(df: Frame, options: &Options) -> Result<Frame, PpError> {
    validate_column_args(&df, options, &["source_columns", "compare_columns"])?;
    SIGNATURE.check(options)?;
    let sources = opt_str_list(options, "source_columns")?
        .ok_or_else(|| invalid("object of type 'NoneType' has no len()"))?;
    let compares = opt_str_list(options, "compare_columns")?
        .ok_or_else(|| invalid("object of type 'NoneType' has no len()"))?;
    if sources.len() != compares.len() {
        return Err(invalid(
            "`compare_columns` must have the same length as `source_columns`.",
        ));
    }
    let (compare_type, type_name) = match get(options, "compare_type") {
        Some(Json::String(s)) if s == "difference" => (CompareType::Difference, s.as_str()),
        Some(Json::String(s)) if s == "percentage" => (CompareType::Percentage, s.as_str()),
        Some(Json::String(s)) if s == "ratio" => (CompareType::Ratio, s.as_str()),
        _ => {
            return Err(invalid(
                "`compare_type` must be `difference`, `percentage` or `ratio`",
            ));
        }
    };
    if sources.is_empty() {
        return Ok(df);
    }
    let precision = match options.get("precision") {
        None => 4,
        Some(Json::Number(n)) if n.as_i64().is_some() => n.as_i64().unwrap_or(4),
        Some(Json::Bool(b)) => i64::from(*b),
        Some(other) => {
            return Err(invalid(format!(
                "`precision` must be an integer, not {}",
                py::json(other)
            )));
        }
    };

    let mut df = df;
    for (s_col, c_col) in sources.iter().zip(&compares) {
        let name = [type_name, s_col.as_str(), c_col.as_str()].join(TIME_COMPARISON);
        let s_side = side(&df, s_col);
        let c_side = side(&df, c_col);
        for (rest, s, c) in align(s_side, c_side) {
            let series = combine(s, c, compare_type, precision, &df)?;
            let mut label = vec![Value::Str(name.as_str().into())];
            label.extend(rest);
            df.labels.push(label);
            df.columns.push(series);
        }
    }
    if opt_bool(options, "drop_original_columns").unwrap_or(false) {
        let drop: Vec<&String> = sources.iter().chain(&compares).collect();
        let keep: Vec<bool> = df
            .labels
            .iter()
            .map(|l| !drop.iter().any(|d| level0_is(l, d)))
            .collect();
        let mut k = keep.iter();
        df.labels.retain(|_| *k.next().unwrap_or(&true));
        let mut k = keep.iter();
        df.columns.retain(|_| *k.next().unwrap_or(&true));
    }
    Ok(df)
}

/// `df.loc[:, [name]]`: the columns under `name`, as (remaining label levels, position).
fn side(df: &Frame, name: &str) -> Vec<(Vec<Value>, usize)> {
    df.labels
        .iter()
        .enumerate()
        .filter(|(_, l)| level0_is(l, name))
        .map(|(i, l)| (l[1..].to_vec(), i))
        .collect()
}

/// pandas' column alignment of `s_df - c_df`: pairs with the same remaining levels; when the
/// two sides differ, the union of the labels (sorted), a missing side being all-NaN.
fn align(
    s: Vec<(Vec<Value>, usize)>,
    c: Vec<(Vec<Value>, usize)>,
) -> Vec<(Vec<Value>, Option<usize>, Option<usize>)> {
    let same = s.len() == c.len() && s.iter().zip(&c).all(|(a, b)| a.0 == b.0);
    if same {
        return s
            .into_iter()
            .zip(c)
            .map(|((rest, i), (_, j))| (rest, Some(i), Some(j)))
            .collect();
    }
    let mut keys: Vec<Vec<Value>> = s.iter().chain(&c).map(|(k, _)| k.clone()).collect();
    keys.sort_by(|a, b| crate::ops::compare::cmp_labels(a, b));
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let i = s.iter().find(|(r, _)| *r == k).map(|(_, i)| *i);
            let j = c.iter().find(|(r, _)| *r == k).map(|(_, j)| *j);
            (k, i, j)
        })
        .collect()
}

/// An ordering of label levels close to pandas' sort of a mixed index: nulls last, numbers
/// before strings.
pub fn cmp_labels(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    fn rank(v: &Value) -> (u8, f64, String) {
        match v {
            Value::Bool(b) => (0, f64::from(u8::from(*b)), String::new()),
            Value::Int(i) => (0, *i as f64, String::new()),
            Value::Float(f) => (0, *f, String::new()),
            Value::Ts(t) => (1, *t as f64, String::new()),
            Value::Str(s) => (2, 0.0, s.to_string()),
            Value::List(_) => (3, 0.0, String::new()),
            Value::Null => (4, 0.0, String::new()),
        }
    }
    for (x, y) in a.iter().zip(b) {
        let (rx, ry) = (rank(x), rank(y));
        let o =
            rx.0.cmp(&ry.0)
                .then(rx.1.total_cmp(&ry.1))
                .then(rx.2.cmp(&ry.2));
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// One comparison column. A difference of two int64 columns stays int64; everything else is
/// float64, and percentages and ratios are rounded like numpy (`round(x * 10**p) / 10**p`,
/// ties to even). Division by zero gives ±inf (0/0 gives NaN), which serialises as null.
fn combine(
    s: Option<usize>,
    c: Option<usize>,
    kind: CompareType,
    precision: i64,
    df: &Frame,
) -> Result<Series, PpError> {
    let n = df.num_rows();
    if let (CompareType::Difference, Some(i), Some(j)) = (kind, s, c)
        && let (Series::Int64(a), Series::Int64(b)) = (&df.columns[i], &df.columns[j])
    {
        return Ok(Series::Int64(
            a.iter().zip(b).map(|(x, y)| x.wrapping_sub(*y)).collect(),
        ));
    }
    let values = |p: Option<usize>| -> Result<Vec<f64>, PpError> {
        match p {
            None => Ok(vec![f64::NAN; n]),
            Some(p) => match &df.columns[p] {
                Series::Bool(_) => Err(invalid(
                    "numpy boolean subtract, the `-` operator, is not supported, use the \
                     bitwise_xor, the `^` operator, or the logical_xor function instead.",
                )),
                other => numeric_values(other, &df.labels[p], "compare").map_err(|_| {
                    invalid(format!(
                        "compare needs numeric columns; column {} is not numeric",
                        py::str(&label_text(&df.labels[p]))
                    ))
                }),
            },
        }
    };
    let a = values(s)?;
    let b = values(c)?;
    let out = a.iter().zip(&b).map(|(x, y)| match kind {
        CompareType::Difference => x - y,
        CompareType::Percentage => numpy_round((x - y) / y, precision),
        CompareType::Ratio => numpy_round(x / y, precision),
    });
    Ok(Series::Float64(out.collect()))
}

/// numpy's `power_of_ten`, exact for the decimal counts that matter.
fn power_of_ten(n: i64) -> f64 {
    const P10: [f64; 9] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];
    if n < 9 {
        return P10[n.max(0) as usize];
    }
    let mut r = 1e9;
    // 10^400 is already inf: stopping there gives the same result for any larger `n` (a
    // hostile `precision` of 2^63 would otherwise loop for minutes).
    let mut k = n.min(400);
    while k > 9 {
        r *= 10.0;
        k -= 1;
    }
    r
}

/// numpy's `round(x, decimals)` for floats: scale, round half to even, unscale.
pub fn numpy_round(x: f64, decimals: i64) -> f64 {
    if decimals >= 0 {
        let f = power_of_ten(decimals);
        (x * f).round_ties_even() / f
    } else {
        let f = power_of_ten(decimals.saturating_neg());
        (x / f).round_ties_even() * f
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
    fn compares_and_rounds() {
        let df = frame(vec![
            ("a", Series::Int64(vec![3, 0, 5])),
            ("b", Series::Int64(vec![2, 0, 0])),
        ]);
        let out = compare(
            df.clone(),
            &opts(json!({"source_columns": ["a"], "compare_columns": ["b"],
                         "compare_type": "difference"})),
        )
        .unwrap();
        assert_eq!(names(&out), ["a", "b", "difference__a__b"]);
        assert_eq!(out.columns[2], Series::Int64(vec![1, 0, 5]));
        let out = compare(
            df,
            &opts(json!({"source_columns": ["a"], "compare_columns": ["b"],
                         "compare_type": "percentage", "precision": 0,
                         "drop_original_columns": true})),
        )
        .unwrap();
        assert_eq!(names(&out), ["percentage__a__b"]);
        match &out.columns[0] {
            Series::Float64(v) => {
                assert_eq!(v[0], 0.0);
                assert!(v[1].is_nan() && v[2].is_infinite());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(numpy_round(2.5, 0), 2.0);
        assert_eq!(numpy_round(0.12345, 4), 0.1234);
        assert!(numpy_round(1.5, i64::MAX).is_nan());
        assert!(numpy_round(1.5, i64::MIN).is_nan());
    }
}
