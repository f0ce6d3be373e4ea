//! `histogram`: counts of a numeric column in equal-width bins, overall or per group.
//!
//! Bin edges come from `np.histogram_bin_edges` over the whole column (so every group
//! shares them) and are labelled `f"{lo} - {hi}"` with numpy's float repr. A value falls in
//! `[lo, hi)`, the last bin also taking its upper edge.

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Index, Series};
use crate::group::group_by;
use crate::ops::aggregate::grouped_frame;
use crate::ops::{Opts, scalar_to_sequence};
use crate::pystr::str_list_repr;

/// Upper bound on `bins`: the option is not schema-validated and numpy allocates the edges
/// up front, so an absurd value must be refused rather than attempted.
pub const MAX_BINS: i64 = 1000;

/// `np.linspace(lo, hi, bins + 1)` as numpy computes it (`i * step + lo`, exact last edge).
fn bin_edges(values: &[f64], bins: usize) -> Vec<f64> {
    let mut lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo == hi {
        lo -= 0.5;
        hi += 0.5;
    }
    let step = (hi - lo) / bins as f64;
    let mut edges: Vec<f64> = (0..=bins).map(|i| i as f64 * step + lo).collect();
    edges[bins] = hi;
    edges
}

/// `np.histogram(values, bins=edges)[0]`.
fn counts(values: impl Iterator<Item = f64>, edges: &[f64]) -> Vec<i64> {
    let nb = edges.len() - 1;
    let mut out = vec![0i64; nb];
    let (lo, hi) = (edges[0], edges[nb]);
    for x in values {
        if x.is_nan() || x < lo || x > hi {
            continue;
        }
        let b = if x == hi {
            nb - 1
        } else {
            edges.partition_point(|&e| e <= x) - 1
        };
        out[b.min(nb - 1)] += 1;
    }
    out
}

/// Runs `histogram`.
pub fn run(frame: Frame, options: &Json) -> Result<Frame> {
    let opts = Opts::parse(
        "histogram",
        options,
        &["column", "groupby", "bins", "cumulative", "normalize"],
        &["column", "groupby"],
    )?;
    let bins = match opts.get("bins") {
        None => 5,
        Some(Json::Number(n)) if n.as_i64().is_some_and(|b| (1..=MAX_BINS).contains(&b)) => {
            n.as_i64().unwrap_or(5) as usize
        }
        Some(_) => {
            return Err(PpError::params(format!(
                "`bins` must be an integer between 1 and {MAX_BINS}"
            )));
        }
    };
    let column = match opts.get("column") {
        Some(Json::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let groupby = scalar_to_sequence(opts.get("groupby"));
    let cumulative = opts.flag("cumulative", false);
    let normalize = opts.flag("normalize", false);

    // df.dropna(subset=[column]): a missing column is pandas' KeyError.
    let cpos = frame
        .position(&column)
        .ok_or_else(|| PpError::params(str_list_repr(&[column.as_str()])))?;
    let keep: Vec<usize> = (0..frame.num_rows())
        .filter(|&r| !frame.columns[cpos].is_null(r))
        .collect();
    let df = frame.take_rows(&keep);
    if df.num_rows() == 0 {
        return Ok(df);
    }
    let numeric = df.columns[cpos].to_numeric_coerce();
    let values = numeric.to_f64();
    if values.iter().any(|x| x.is_nan()) {
        return Err(PpError::params(format!(
            "Column '{column}' contains non-numeric values"
        )));
    }
    let edges = bin_edges(&values, bins);
    let labels: Vec<String> = edges
        .windows(2)
        .map(|w| format!("{} - {}", py::float(w[0]), py::float(w[1])))
        .collect();

    let key_pos: Vec<usize> = groupby
        .iter()
        .map(|g| df.require(g))
        .collect::<Result<_>>()?;
    let keys: Vec<&Series> = key_pos.iter().map(|&p| &df.columns[p]).collect();
    let groups = group_by(&keys, df.num_rows(), true)?;
    let mut table: Vec<Vec<i64>> = (0..groups.len())
        .map(|g| {
            let mut c = counts(groups.rows_of(g).iter().map(|&r| values[r]), &edges);
            if cumulative {
                for i in 1..c.len() {
                    c[i] += c[i - 1];
                }
            }
            c
        })
        .collect();
    if groupby.is_empty() && table.is_empty() {
        table.push(vec![0; bins]);
    }
    let total: i64 = table.iter().flatten().sum();
    let columns: Vec<(String, Series)> = labels
        .iter()
        .enumerate()
        .map(|(b, label)| {
            let series = if normalize {
                Series::Float64(
                    table
                        .iter()
                        .map(|row| row[b] as f64 / total as f64)
                        .collect(),
                )
            } else {
                Series::Int64(table.iter().map(|row| row[b]).collect())
            };
            (label.clone(), series)
        })
        .collect();
    let mut out = grouped_frame(&df, &key_pos, &groups, columns);
    out.index = Index::range(out.num_rows());
    Ok(out)
}
