//! `rank`: a `rank` column holding `rank(pct=True)` of the metric, overall or per group.

use std::cmp::Ordering;

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Series, Value};
use crate::group::{cmp_values, group_by};
use crate::ops::{Opts, scalar_to_sequence, truthy};

/// `Series.rank(method="average", pct=True)` of `rows` of `col`, written into `out`:
/// tied values share the mean of their 1-based positions, divided by the number of
/// non-missing values; missing values stay NaN.
fn pct_rank(col: &Series, rows: &[usize], out: &mut [f64]) {
    let mut present: Vec<(usize, Value)> = rows
        .iter()
        .filter(|&&r| !col.is_null(r))
        .map(|&r| (r, col.get(r)))
        .collect();
    present.sort_by(|a, b| cmp_values(&a.1, &b.1));
    let count = present.len() as f64;
    let mut i = 0;
    while i < present.len() {
        let mut j = i + 1;
        while j < present.len() && cmp_values(&present[i].1, &present[j].1) == Ordering::Equal {
            j += 1;
        }
        // Positions i+1 ..= j share their average.
        let avg = (i + 1 + j) as f64 / 2.0;
        for (r, _) in &present[i..j] {
            out[*r] = avg / count;
        }
        i = j;
    }
}

/// Runs `rank`.
pub fn run(mut frame: Frame, options: &Json) -> Result<Frame> {
    let opts = Opts::parse("rank", options, &["metric", "group_by"], &["metric"])?;
    let metric = match opts.get("metric") {
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let n = frame.num_rows();
    let mcol = frame.require(&metric)?;
    let mut out = vec![f64::NAN; n];
    match opts.get("group_by").filter(|g| truthy(g)) {
        Some(g) => {
            let names = scalar_to_sequence(Some(g));
            let pos: Vec<usize> = names
                .iter()
                .map(|c| frame.require(c))
                .collect::<Result<_>>()?;
            let keys: Vec<&Series> = pos.iter().map(|&p| &frame.columns[p]).collect();
            let groups = group_by(&keys, n, true)?;
            if groups.len() == 1 {
                // pandas' groupby.apply returns a frame for a single group, which cannot be
                // assigned to one column.
                return Err(PpError::params(
                    "Cannot set a DataFrame with multiple columns to the single column rank",
                ));
            }
            for g in 0..groups.len() {
                pct_rank(&frame.columns[mcol], groups.rows_of(g), &mut out);
            }
        }
        None => {
            let rows: Vec<usize> = (0..n).collect();
            pct_rank(&frame.columns[mcol], &rows, &mut out);
        }
    }
    let series = Series::Float64(out);
    match frame.position("rank") {
        Some(p) => frame.columns[p] = series,
        None => {
            let mut label = vec![Value::Str("rank".into())];
            label.extend((1..frame.nlevels()).map(|_| Value::Str("".into())));
            frame.labels.push(label);
            frame.columns.push(series);
        }
    }
    Ok(frame)
}
