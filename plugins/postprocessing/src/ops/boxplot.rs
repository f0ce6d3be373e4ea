//! `boxplot`: per group and metric, the statistics of a box plot.
//!
//! Columns are `<metric>__<stat>`, grouped by statistic across metrics (`mean`, `median`,
//! `max`, `min`, `q1`, `q3`, `count`, `outliers`). Superset passes numpy functions directly
//! (not wrapped in `partial`) for mean and median, so pandas recognises them and uses its own
//! NaN-skipping group mean/median; `count` is `np.ma.count`, which counts NaN rows too.

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Series, Value};
use crate::group::group_by;
use crate::numpy::{QMethod, median, nan_mean, quantile_sorted};
use crate::ops::aggregate::grouped_frame;
use crate::ops::{Opts, scalar_to_sequence, validate_column_args};

const STATS: [&str; 8] = [
    "mean", "median", "max", "min", "q1", "q3", "count", "outliers",
];

enum Whisker {
    Tukey,
    Percentile(f64, f64),
    MinMax,
}

/// `np.nanpercentile(values, q, method)` (q in percent).
fn nanpercentile(v: &[f64], q: f64, method: QMethod) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    s.sort_by(f64::total_cmp);
    quantile_sorted(&s, q / 100.0, method)
}

fn nan_max(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| !x.is_nan())
        .fold(f64::NAN, |a, b| if a.is_nan() || b > a { b } else { a })
}

fn nan_min(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| !x.is_nan())
        .fold(f64::NAN, |a, b| if a.is_nan() || b < a { b } else { a })
}

/// A statistic of an int column stays an int where pandas keeps it one.
fn num(x: f64, int: bool) -> Value {
    if int && x.is_finite() && x.fract() == 0.0 {
        Value::Int(x as i64)
    } else {
        Value::Float(x)
    }
}

/// The eight statistics of one group's values.
fn stats(v: &[f64], int: bool, whisker: &Whisker) -> [Value; 8] {
    let mut tmp = Vec::new();
    let q1 = nanpercentile(v, 25.0, QMethod::Midpoint);
    let q3 = nanpercentile(v, 75.0, QMethod::Midpoint);
    // Whisker values, and whether they are taken from the data (an int column keeps ints).
    let (high, low, from_data) = match whisker {
        Whisker::Tukey => {
            let upper = q3 + 1.5 * (q3 - q1);
            let lower = q1 - 1.5 * (q3 - q1);
            (
                nan_max(v.iter().copied().filter(|&x| x <= upper)),
                nan_min(v.iter().copied().filter(|&x| x >= lower)),
                true,
            )
        }
        Whisker::Percentile(lo, hi) => (
            nanpercentile(v, *hi, QMethod::Linear),
            nanpercentile(v, *lo, QMethod::Linear),
            false,
        ),
        Whisker::MinMax => (nan_max(v.iter().copied()), nan_min(v.iter().copied()), true),
    };
    let above = v.iter().copied().filter(|&x| x > high);
    let below = v.iter().copied().filter(|&x| x < low);
    let outliers: Vec<Value> = above.chain(below).map(|x| num(x, int)).collect();
    let mut present: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    [
        Value::Float(nan_mean(v, &mut tmp)),
        Value::Float(median(&mut present)),
        num(high, int && from_data),
        num(low, int && from_data),
        Value::Float(q1),
        Value::Float(q3),
        Value::Int(v.len() as i64),
        Value::List(outliers),
    ]
}

/// Runs `boxplot`.
pub fn run(mut frame: Frame, options: &Json) -> Result<Frame> {
    let opts = Opts::parse(
        "boxplot",
        options,
        &["groupby", "metrics", "whisker_type", "percentiles"],
        &["groupby", "metrics", "whisker_type"],
    )?;
    let whisker = match opts.get("whisker_type").and_then(Json::as_str) {
        Some("tukey") => Whisker::Tukey,
        Some("percentile") => {
            let bad = || {
                PpError::params(
                    "percentiles must be a list or tuple with two numeric values, of which the first is lower than the second value",
                )
            };
            match opts.get("percentiles") {
                Some(Json::Array(p)) if p.len() == 2 => match (p[0].as_f64(), p[1].as_f64()) {
                    (Some(lo), Some(hi)) if lo < hi => Whisker::Percentile(lo, hi),
                    _ => return Err(bad()),
                },
                _ => return Err(bad()),
            }
        }
        // Anything else falls back to min/max, like Superset's `else` branch.
        _ => Whisker::MinMax,
    };
    let metrics = scalar_to_sequence(opts.get("metrics"));
    // Object metrics are coerced to numbers first (a missing metric is pandas' KeyError).
    for m in &metrics {
        let p = frame
            .position(m)
            .ok_or_else(|| PpError::params(py::str(m)))?;
        if matches!(frame.columns[p], Series::Object(_)) {
            frame.columns[p] = Series::Float64(frame.columns[p].to_numeric_coerce().to_f64());
        }
    }
    // Then Superset's `aggregate`.
    let groupby_opts =
        serde_json::json!({ "groupby": opts.get("groupby").cloned().unwrap_or(Json::Null) });
    validate_column_args(&frame, &groupby_opts, &["groupby"])?;
    let groupby = scalar_to_sequence(opts.get("groupby"));
    let key_pos: Vec<usize> = groupby
        .iter()
        .map(|g| frame.require(g))
        .collect::<Result<_>>()?;
    let keys: Vec<&Series> = key_pos.iter().map(|&p| &frame.columns[p]).collect();
    let groups = group_by(&keys, frame.num_rows(), true)?;

    // per metric, per group: the eight statistics
    let mut per_metric: Vec<Vec<[Value; 8]>> = Vec::with_capacity(metrics.len());
    for m in &metrics {
        let col = &frame.columns[frame.require(m)?];
        let int = matches!(col, Series::Int64(_));
        let values = col.to_f64();
        let mut buf = Vec::new();
        let per_group = (0..groups.len())
            .map(|g| {
                buf.clear();
                buf.extend(groups.rows_of(g).iter().map(|&r| values[r]));
                stats(&buf, int, &whisker)
            })
            .collect();
        per_metric.push(per_group);
    }
    let mut columns = Vec::with_capacity(STATS.len() * metrics.len());
    for (s, stat) in STATS.iter().enumerate() {
        for (mi, m) in metrics.iter().enumerate() {
            let vals: Vec<Value> = per_metric[mi].iter().map(|st| st[s].clone()).collect();
            let series = if *stat == "outliers" {
                Series::Object(vals.into())
            } else {
                Series::from_values(vals)
            };
            columns.push((format!("{m}__{stat}"), series));
        }
    }
    Ok(grouped_frame(&frame, &key_pos, &groups, columns))
}
