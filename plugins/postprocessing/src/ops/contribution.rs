//! `contribution`: each cell as a share of its column total or of its row total (Superset's
//! `contribution`, behind "percentage" chart options).

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::PpError;
use crate::frame::{Frame, Label, Series, Value};
use crate::ops::append::{label_text, validate_column_args};
use crate::ops::args::{Options, Signature, get, invalid, is_falsy, opt_str_list};

const SIGNATURE: Signature = Signature {
    name: "contribution",
    params: &[
        ("orientation", false),
        ("columns", false),
        ("time_shifts", false),
        ("rename_columns", false),
        ("contribution_totals", false),
    ],
};

/// Superset's `contribution(df, orientation="column", columns=None, time_shifts=None,
/// rename_columns=None, contribution_totals=None)`.
///
/// The candidate columns are those of `select_dtypes(include=["number", Decimal])`: int and
/// float columns, and (because `Decimal` maps to `object`) object columns too, so without
/// `columns` a frame with a text column fails. Column orientation divides the NaN-filled
/// values by the column sums (or, when `contribution_totals` is truthy, a non-empty mapping,
/// by `contribution_totals[column]`, a missing or zero total giving the integer 0). Any other orientation divides each row by its sum over the
/// selected columns, keeping NaN; columns whose name ends with one of `time_shifts` are
/// normalised as separate groups, one per shift.
pub fn contribution(df: Frame, options: &Options) -> Result<Frame, PpError> {
    validate_column_args(&df, options, &["columns"])?;
    SIGNATURE.check(options)?;

    let numeric: Vec<usize> = (0..df.columns.len())
        .filter(|&i| {
            matches!(
                df.columns[i],
                Series::Int64(_) | Series::Float64(_) | Series::Object(_)
            )
        })
        .collect();
    let columns = opt_str_list(options, "columns")?.filter(|c| !c.is_empty());
    let actual: Vec<usize> = match &columns {
        Some(cols) => cols
            .iter()
            .map(|c| {
                numeric
                    .iter()
                    .copied()
                    .find(|&i| {
                        df.labels[i].len() == 1 && crate::ops::append::level0_is(&df.labels[i], c)
                    })
                    .ok_or_else(|| {
                        invalid(format!(
                            "Column \"{c}\" is not numeric or does not exists in the query results."
                        ))
                    })
            })
            .collect::<Result<_, _>>()?,
        None => numeric,
    };
    let renames: Vec<Label> =
        match opt_str_list(options, "rename_columns")?.filter(|r| !r.is_empty()) {
            Some(r) => r.into_iter().map(|s| vec![Value::Str(s.into())]).collect(),
            None => actual.iter().map(|&i| df.labels[i].clone()).collect(),
        };
    if renames.len() != actual.len() {
        return Err(invalid(
            "`rename_columns` must have the same length as `columns` + `time_shift_columns`.",
        ));
    }
    let column_orientation = match options.get("orientation") {
        None => true,
        Some(Json::String(s)) => s == "column",
        Some(_) => false,
    };

    let mut out = df;
    if column_orientation {
        // `if contribution_totals:`: an empty mapping (or any falsy value) means no totals,
        // so the page's column sums divide.
        let given = get(options, "contribution_totals").filter(|v| !is_falsy(Some(v)));
        let totals = match given {
            None => None,
            Some(Json::Object(m)) => Some(m.clone()),
            Some(other) => {
                return Err(invalid(format!(
                    "`contribution_totals` must be a mapping, not {}",
                    py::json(other)
                )));
            }
        };
        let mut results = Vec::with_capacity(actual.len());
        for &i in &actual {
            // `fillna(0)` happens before the division in the column orientation.
            let values: Vec<f64> = values_of(&out, i)?
                .into_iter()
                .map(|v| if v.is_nan() { 0.0 } else { v })
                .collect();
            let series = match &totals {
                None => {
                    let total = numpy_sum(&values);
                    Series::Float64(values.iter().map(|v| v / total).collect())
                }
                Some(t) => {
                    let total = match &out.labels[i][..] {
                        [Value::Str(name)] => t.get(&**name).and_then(Json::as_f64),
                        _ => None,
                    };
                    match total {
                        None | Some(0.0) => Series::Int64(vec![0; values.len()]),
                        Some(t) => Series::Float64(values.iter().map(|v| v / t).collect()),
                    }
                }
            };
            results.push(series);
        }
        for (label, series) in renames.into_iter().zip(results) {
            set_column(&mut out, label, series);
        }
        return Ok(out);
    }

    // Row orientation: split the columns by time shift, keeping first-seen group order.
    let shifts = opt_str_list(options, "time_shifts")?.unwrap_or_default();
    let mut groups: Vec<(Option<String>, Vec<usize>, Vec<Label>)> = vec![(None, vec![], vec![])];
    for (&i, rename) in actual.iter().zip(renames) {
        let shift = match out.labels[i].first() {
            Some(Value::Str(name)) => shifts
                .iter()
                .find(|ts| name.ends_with(ts.as_str()))
                .cloned(),
            _ => None,
        };
        match groups.iter_mut().find(|g| g.0 == shift) {
            Some(g) => {
                g.1.push(i);
                g.2.push(rename);
            }
            None => groups.push((shift, vec![i], vec![rename])),
        }
    }
    for (_, cols, names) in groups {
        if cols.is_empty() {
            continue;
        }
        let values: Vec<Vec<f64>> = cols
            .iter()
            .map(|&i| values_of(&out, i))
            .collect::<Result<_, _>>()?;
        let n = out.num_rows();
        let sums: Vec<f64> = (0..n)
            .map(|r| {
                values
                    .iter()
                    .map(|v| v[r])
                    .filter(|v| !v.is_nan())
                    .fold(0.0, |a, b| a + b)
            })
            .collect();
        for (label, v) in names.into_iter().zip(values) {
            let series = Series::Float64(v.iter().zip(&sums).map(|(x, s)| x / s).collect());
            set_column(&mut out, label, series);
        }
    }
    Ok(out)
}

/// A selected column's values as floats (NaN for missing).
fn values_of(df: &Frame, i: usize) -> Result<Vec<f64>, PpError> {
    crate::ops::append::numeric_values(&df.columns[i], &df.labels[i], "contribution").map_err(
        |_| {
            invalid(format!(
                "unsupported operand type(s) for contribution: column {} holds non-numeric values",
                py::str(&label_text(&df.labels[i]))
            ))
        },
    )
}

/// `df[label] = series`: replaces every column with that label, or appends one.
fn set_column(df: &mut Frame, label: Label, series: Series) {
    let mut found = false;
    for (l, c) in df.labels.iter().zip(df.columns.iter_mut()) {
        if *l == label {
            *c = series.clone();
            found = true;
        }
    }
    if !found {
        df.labels.push(label);
        df.columns.push(series);
    }
}

/// numpy's pairwise summation of a contiguous float array (`ndarray.sum`), which the column
/// totals go through.
pub fn numpy_sum(values: &[f64]) -> f64 {
    match values.split_first() {
        None => 0.0,
        // A reduction starts from its first element and adds the pairwise sum of the rest.
        Some((first, rest)) => first + pairwise(rest),
    }
}

fn pairwise(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        a.iter().fold(-0.0, |s, v| s + v)
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for (k, acc) in r.iter_mut().enumerate() {
                *acc += a[i + k];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise(&a[..n2]) + pairwise(&a[n2..])
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

    fn floats(s: &Series) -> Vec<f64> {
        match s {
            Series::Float64(v) => v.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn column_and_row() {
        let df = frame(vec![
            ("a", Series::Int64(vec![1, 3])),
            ("b", Series::Float64(vec![f64::NAN, 2.0])),
            ("b__1 week ago", Series::Float64(vec![4.0, 4.0])),
        ]);
        let out = contribution(df.clone(), &opts(json!({}))).unwrap();
        assert_eq!(floats(&out.columns[0]), [0.25, 0.75]);
        assert_eq!(floats(&out.columns[1]), [0.0, 1.0]);
        let out = contribution(
            df,
            &opts(json!({"orientation": "row", "time_shifts": ["1 week ago"],
                         "rename_columns": ["%a", "%b", "%b__1 week ago"]})),
        )
        .unwrap();
        assert_eq!(
            names(&out),
            ["a", "b", "b__1 week ago", "%a", "%b", "%b__1 week ago"]
        );
        assert_eq!(floats(&out.columns[3]), [1.0, 0.6]);
        assert!(floats(&out.columns[4])[0].is_nan());
        assert_eq!(floats(&out.columns[5]), [1.0, 1.0]);
    }

    /// Superset's `if contribution_totals:` takes `{}` as no totals: the page's sums divide
    /// (1/4, 3/4), not the all-zero answer of missing totals. Given totals divide, a missing
    /// or zero one gives 0.
    #[test]
    fn empty_totals_are_no_totals() {
        let df = frame(vec![
            ("a", Series::Int64(vec![1, 3])),
            ("b", Series::Float64(vec![2.0, 6.0])),
        ]);
        for empty in [json!({}), json!(null), json!([]), json!(0)] {
            let out =
                contribution(df.clone(), &opts(json!({"contribution_totals": empty}))).unwrap();
            assert_eq!(floats(&out.columns[0]), [0.25, 0.75], "{empty}");
            assert_eq!(floats(&out.columns[1]), [0.25, 0.75], "{empty}");
        }
        let out = contribution(df, &opts(json!({"contribution_totals": {"a": 8}}))).unwrap();
        assert_eq!(floats(&out.columns[0]), [0.125, 0.375]);
        assert!(matches!(&out.columns[1], Series::Int64(v) if v == &[0, 0]));
    }

    #[test]
    fn pairwise_matches_plain_sum_on_exact_values() {
        let v: Vec<f64> = (0..300).map(f64::from).collect();
        assert_eq!(numpy_sum(&v), 44850.0);
    }
}
