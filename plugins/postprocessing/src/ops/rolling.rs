//! `rolling`: a moving-window aggregate over selected columns (Superset's `rolling`, pandas'
//! `DataFrame.rolling(window, min_periods, center).<rolling_type>()`).
//!
//! The window kernels follow pandas' Cython kernels (`pandas/_libs/window/aggregations.pyx`):
//! sums, means and variances are updated as the window slides, with Kahan compensation, and a
//! window whose values are all equal gets an exact result, so outputs agree with pandas to the
//! last bits in the common cases.

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::PpError;
use crate::frame::{Frame, Series};
use crate::ops::append::{
    append_columns, label_text, numeric_values, select_positions, slice_rows, validate_column_args,
};
use crate::ops::args::{Options, Signature, get, invalid, opt_mapping, unsupported};

const SIGNATURE: Signature = Signature {
    name: "rolling",
    params: &[
        ("rolling_type", true),
        ("columns", true),
        ("window", false),
        ("rolling_type_options", false),
        ("center", false),
        ("win_type", false),
        ("min_periods", false),
    ],
};

/// The largest `window` (and so `min_periods`): pandas' own indexers are `int32`-friendly
/// and, in the wasm sandbox, `usize` is 32 bits wide. Any window longer than the frame
/// already covers it whole.
pub const MAX_WINDOW: i64 = i32::MAX as i64;

/// Superset's `DENYLIST_ROLLING_FUNCTIONS` (despite its name, the allowed rolling types).
const ROLLING_TYPES: &[&str] = &[
    "count", "corr", "cov", "kurt", "max", "mean", "median", "min", "std", "skew", "sum", "var",
    "quantile",
];

/// The aggregate computed over each window, with its options.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Count,
    Sum,
    Mean,
    Median,
    Min,
    Max,
    Var { ddof: f64 },
    Std { ddof: f64 },
    Skew,
    Kurt,
    Quantile { q: f64, interpolation: Interp },
}

/// pandas' quantile interpolation methods.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Interp {
    Linear,
    Lower,
    Higher,
    Nearest,
    Midpoint,
}

/// Superset's `rolling(df, rolling_type, columns, window, rolling_type_options, center,
/// win_type, min_periods)`.
pub fn rolling(df: Frame, options: &Options) -> Result<Frame, PpError> {
    validate_column_args(&df, options, &["columns"])?;
    SIGNATURE.check(options)?;

    let type_options = match get(options, "rolling_type_options") {
        None => serde_json::Map::new(),
        Some(Json::Object(m)) => m.clone(),
        Some(other) if crate::ops::args::is_falsy(Some(other)) => serde_json::Map::new(),
        Some(other) => {
            return Err(invalid(format!(
                "`rolling_type_options` must be a mapping, not {}",
                py::json(other)
            )));
        }
    };
    if get(options, "columns").is_none() {
        return Err(invalid("'NoneType' object has no attribute 'keys'"));
    }
    let columns = opt_mapping(options, "columns")?;

    let window = match get(options, "window") {
        None => return Err(invalid("Undefined window for rolling operation")),
        Some(w) if w.as_f64() == Some(0.0) || *w == Json::Bool(false) => {
            return Err(invalid("Window must be > 0"));
        }
        Some(Json::Bool(true)) => 1,
        Some(w) => match w.as_i64() {
            Some(n) if n > MAX_WINDOW => {
                return Err(invalid(format!("window must be at most {MAX_WINDOW}")));
            }
            Some(n) if n > 0 => n as usize,
            _ => return Err(invalid("window must be an integer 0 or greater")),
        },
    };
    let min_periods = match get(options, "min_periods") {
        None => None,
        Some(Json::Bool(b)) => Some(i64::from(*b)),
        Some(m) => match m.as_i64() {
            Some(n) => Some(n),
            None => return Err(invalid("min_periods must be an integer")),
        },
    };
    if let Some(m) = min_periods {
        if m < 0 {
            return Err(invalid("min_periods must be >= 0"));
        }
        // Compared as i64: `usize` is 32 bits wide in the wasm sandbox.
        if m > window as i64 {
            return Err(invalid(format!(
                "min_periods {m} must be <= window {window}"
            )));
        }
    }
    let center = match get(options, "center") {
        None => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err(invalid("center must be a boolean")),
    };
    if get(options, "win_type").is_some() {
        return Err(unsupported(
            "Weighted windows (`win_type`) are not supported for rolling operations",
        ));
    }

    let rolling_type = options.get("rolling_type").cloned().unwrap_or(Json::Null);
    let type_name = match &rolling_type {
        Json::String(s) if ROLLING_TYPES.contains(&s.as_str()) => s.as_str(),
        other => {
            return Err(invalid(format!(
                "Invalid rolling_type: {}",
                py::json_str(other)
            )));
        }
    };
    let kind = parse_kind(type_name, &type_options)?;

    let minp = min_periods.map_or(window, |m| m as usize);
    let positions = select_positions(&df, columns.iter().map(|(k, _)| k.as_str()));
    let mut derived = Vec::with_capacity(positions.len());
    for p in positions {
        let label = df.labels[p].clone();
        let values = if kind == Kind::Count {
            (0..df.columns[p].len())
                .map(|i| if df.columns[p].is_null(i) { 0.0 } else { 1.0 })
                .collect()
        } else {
            numeric_values(&df.columns[p], &label, "Cannot aggregate non-numeric type").map_err(
                |_| {
                    invalid(format!(
                        "Cannot aggregate non-numeric type: column {} is not numeric",
                        py::str(&label_text(&label))
                    ))
                },
            )?
        };
        let out = apply_window(&values, window, minp, center, kind);
        derived.push((label, Series::Float64(out)));
    }
    let out = append_columns(df, derived, &columns);
    Ok(match min_periods {
        Some(m) if m > 0 => slice_rows(out, m as usize - 1),
        _ => out,
    })
}

/// The window aggregate for `rolling_type`, checking its options like the pandas method's
/// signature would (a Python `TypeError`, which Superset reports as "Invalid options").
fn parse_kind(name: &str, opts: &serde_json::Map<String, Json>) -> Result<Kind, PpError> {
    let bad = || {
        invalid(format!(
            "Invalid options for {name}: {}",
            py::json(&Json::Object(opts.clone()))
        ))
    };
    let allowed: &[&str] = match name {
        "sum" | "mean" | "median" | "min" | "max" => &["numeric_only", "engine", "engine_kwargs"],
        "std" | "var" => &["ddof", "numeric_only", "engine", "engine_kwargs"],
        "skew" | "kurt" | "count" => &["numeric_only"],
        "quantile" => &["q", "quantile", "interpolation", "numeric_only"],
        _ => &["other", "pairwise", "ddof", "numeric_only"],
    };
    if opts.keys().any(|k| !allowed.contains(&k.as_str())) {
        return Err(bad());
    }
    if let Some(engine) = opts.get("engine").filter(|e| !e.is_null())
        && engine.as_str() != Some("cython")
    {
        return Err(unsupported(format!(
            "Rolling engine {} is not supported",
            py::json(engine)
        )));
    }
    let ddof = match opts.get("ddof") {
        None => 1.0,
        Some(d) => match d.as_i64() {
            Some(n) => n as f64,
            None => {
                return Err(invalid(format!(
                    "ddof must be an integer, not {}",
                    py::json(d)
                )));
            }
        },
    };
    Ok(match name {
        "count" => Kind::Count,
        "sum" => Kind::Sum,
        "mean" => Kind::Mean,
        "median" => Kind::Median,
        "min" => Kind::Min,
        "max" => Kind::Max,
        "var" => Kind::Var { ddof },
        "std" => Kind::Std { ddof },
        "skew" => Kind::Skew,
        "kurt" => Kind::Kurt,
        "quantile" => {
            // pandas 2.1 renamed `quantile` to `q` and still accepts the old keyword.
            let q = match (opts.get("q"), opts.get("quantile")) {
                (Some(_), Some(_)) | (None, None) => return Err(bad()),
                (Some(q), None) | (None, Some(q)) => q,
            };
            let q = q.as_f64().ok_or_else(|| {
                invalid(format!("quantile must be a number, not {}", py::json(q)))
            })?;
            if !(0.0..=1.0).contains(&q) {
                return Err(invalid(format!(
                    "quantile value {} not in [0, 1]",
                    py::float(q)
                )));
            }
            let interpolation = match opts.get("interpolation").and_then(Json::as_str) {
                None if opts.get("interpolation").is_none() => Interp::Linear,
                Some("linear") => Interp::Linear,
                Some("lower") => Interp::Lower,
                Some("higher") => Interp::Higher,
                Some("nearest") => Interp::Nearest,
                Some("midpoint") => Interp::Midpoint,
                _ => {
                    return Err(invalid(format!(
                        "Interpolation {} is not supported",
                        opts.get("interpolation").map_or("None".into(), py::json)
                    )));
                }
            };
            Kind::Quantile { q, interpolation }
        }
        _ => {
            return Err(unsupported(format!(
                "Rolling {name} without another series is not supported"
            )));
        }
    })
}

/// pandas' `FixedWindowIndexer`: the `[start, end)` row range of each window. A centred
/// window is shifted forward by `(window - 1) / 2` rows.
fn window_bounds(n: usize, window: usize, center: bool) -> Vec<(usize, usize)> {
    let offset = if center { (window - 1) / 2 } else { 0 };
    (0..n)
        .map(|i| {
            let end = i + 1 + offset;
            let start = end.saturating_sub(window);
            (start.min(n), end.min(n))
        })
        .collect()
}

/// One output value per row: the aggregate over that row's window, NaN when the window holds
/// fewer than `minp` observations.
fn apply_window(values: &[f64], window: usize, minp: usize, center: bool, kind: Kind) -> Vec<f64> {
    let bounds = window_bounds(values.len(), window, center);
    match kind {
        Kind::Count | Kind::Sum => roll_sum(values, &bounds, minp),
        Kind::Mean => roll_mean(values, &bounds, minp),
        Kind::Var { ddof } => roll_var(values, &bounds, minp, ddof),
        Kind::Std { ddof } => roll_var(values, &bounds, minp, ddof)
            .into_iter()
            .map(|v| {
                if v >= 0.0 {
                    v.sqrt()
                } else if v.is_nan() {
                    v
                } else {
                    0.0
                }
            })
            .collect(),
        Kind::Skew | Kind::Kurt => roll_moments(values, &bounds, minp, kind == Kind::Kurt),
        Kind::Median | Kind::Min | Kind::Max | Kind::Quantile { .. } => {
            roll_order(values, &bounds, minp, kind)
        }
    }
}

/// Whether window `i` must be computed from scratch rather than slid from window `i - 1`
/// (pandas restarts when the windows do not overlap).
fn restart(bounds: &[(usize, usize)], i: usize) -> bool {
    i == 0 || bounds[i].0 >= bounds[i - 1].1
}

/// Running state shared by the sum and mean kernels.
#[derive(Default)]
struct SumState {
    nobs: usize,
    neg: usize,
    sum: f64,
    comp_add: f64,
    comp_remove: f64,
    same: usize,
    prev: f64,
}

impl SumState {
    fn new(first: f64) -> SumState {
        SumState {
            prev: first,
            ..SumState::default()
        }
    }

    fn add(&mut self, val: f64) {
        if val.is_nan() {
            return;
        }
        self.nobs += 1;
        let y = val - self.comp_add;
        let t = self.sum + y;
        self.comp_add = t - self.sum - y;
        self.sum = t;
        if val.is_sign_negative() {
            self.neg += 1;
        }
        // Counting repeated values lets a constant window give an exact result.
        if val == self.prev {
            self.same += 1;
        } else {
            self.same = 1;
        }
        self.prev = val;
    }

    fn remove(&mut self, val: f64) {
        if val.is_nan() {
            return;
        }
        self.nobs -= 1;
        let y = -val - self.comp_remove;
        let t = self.sum + y;
        self.comp_remove = t - self.sum - y;
        self.sum = t;
        if val.is_sign_negative() {
            self.neg -= 1;
        }
    }
}

/// Slides a `SumState` over the windows, calling `out` for each.
fn slide_sum(
    values: &[f64],
    bounds: &[(usize, usize)],
    mut out: impl FnMut(&SumState) -> f64,
) -> Vec<f64> {
    let mut st = SumState::default();
    let mut res = Vec::with_capacity(bounds.len());
    for (i, &(s, e)) in bounds.iter().enumerate() {
        if restart(bounds, i) {
            st = SumState::new(values.get(s).copied().unwrap_or(f64::NAN));
            for &v in &values[s..e] {
                st.add(v);
            }
        } else {
            let (ps, pe) = bounds[i - 1];
            for &v in &values[ps..s] {
                st.remove(v);
            }
            for &v in &values[pe..e] {
                st.add(v);
            }
        }
        res.push(out(&st));
    }
    res
}

/// pandas' `roll_sum`: with `min_periods=0` an empty window sums to 0.
fn roll_sum(values: &[f64], bounds: &[(usize, usize)], minp: usize) -> Vec<f64> {
    slide_sum(values, bounds, |st| {
        if st.nobs == 0 && minp == 0 {
            0.0
        } else if st.nobs >= minp {
            if st.same >= st.nobs {
                st.prev * st.nobs as f64
            } else {
                st.sum
            }
        } else {
            f64::NAN
        }
    })
}

/// pandas' `roll_mean`, including its sign clamp (a mean of all-positive values is never
/// negative after rounding errors, and vice versa).
fn roll_mean(values: &[f64], bounds: &[(usize, usize)], minp: usize) -> Vec<f64> {
    slide_sum(values, bounds, |st| {
        if st.nobs >= minp && st.nobs > 0 {
            let mut r = st.sum / st.nobs as f64;
            if st.same >= st.nobs {
                r = st.prev;
            } else if st.neg == 0 && r < 0.0 || st.neg == st.nobs && r > 0.0 {
                r = 0.0;
            }
            r
        } else {
            f64::NAN
        }
    })
}

/// pandas' `roll_var`: Welford's online algorithm with Kahan compensation.
fn roll_var(values: &[f64], bounds: &[(usize, usize)], minp: usize, ddof: f64) -> Vec<f64> {
    let minp = minp.max(1) as f64;
    let (mut nobs, mut mean, mut ssq, mut comp_add, mut comp_rem) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
    let (mut same, mut prev) = (0usize, f64::NAN);
    let mut out = Vec::with_capacity(bounds.len());

    fn add(
        val: f64,
        nobs: &mut f64,
        mean: &mut f64,
        ssq: &mut f64,
        comp: &mut f64,
        same: &mut usize,
        prev: &mut f64,
    ) {
        if val.is_nan() {
            return;
        }
        *nobs += 1.0;
        if val == *prev {
            *same += 1;
        } else {
            *same = 1;
        }
        *prev = val;
        let prev_mean = *mean - *comp;
        let y = val - *comp;
        let t = y - *mean;
        *comp = t + *mean - y;
        *mean = if *nobs != 0.0 { *mean + t / *nobs } else { 0.0 };
        *ssq += (val - prev_mean) * (val - *mean);
    }

    for (i, &(s, e)) in bounds.iter().enumerate() {
        if restart(bounds, i) {
            prev = values.get(s).copied().unwrap_or(f64::NAN);
            same = 0;
            (nobs, mean, ssq, comp_add, comp_rem) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for &v in &values[s..e] {
                add(
                    v,
                    &mut nobs,
                    &mut mean,
                    &mut ssq,
                    &mut comp_add,
                    &mut same,
                    &mut prev,
                );
            }
        } else {
            let (ps, pe) = bounds[i - 1];
            for &v in &values[ps..s] {
                if v.is_nan() {
                    continue;
                }
                nobs -= 1.0;
                if nobs != 0.0 {
                    let prev_mean = mean - comp_rem;
                    let y = v - comp_rem;
                    let t = y - mean;
                    comp_rem = t + mean - y;
                    mean -= t / nobs;
                    ssq -= (v - prev_mean) * (v - mean);
                } else {
                    mean = 0.0;
                    ssq = 0.0;
                }
            }
            for &v in &values[pe..e] {
                add(
                    v,
                    &mut nobs,
                    &mut mean,
                    &mut ssq,
                    &mut comp_add,
                    &mut same,
                    &mut prev,
                );
            }
        }
        let r = if nobs >= minp && nobs > ddof {
            if nobs == 1.0 || same as f64 >= nobs {
                0.0
            } else {
                (ssq / (nobs - ddof)).max(0.0)
            }
        } else {
            f64::NAN
        };
        out.push(r);
    }
    out
}

/// pandas' `roll_skew` (bias-corrected sample skewness, at least 3 observations) and
/// `roll_kurt` (excess kurtosis, at least 4). Like pandas, values are first shifted by their
/// rounded overall mean to limit cancellation.
fn roll_moments(values: &[f64], bounds: &[(usize, usize)], minp: usize, kurt: bool) -> Vec<f64> {
    let minp = minp.max(if kurt { 4 } else { 3 });
    let finite: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    let shift = if finite.is_empty() {
        0.0
    } else {
        let mean = finite.iter().sum::<f64>() / finite.len() as f64;
        let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
        if min - mean > -1e5 { mean.round() } else { 0.0 }
    };
    bounds
        .iter()
        .map(|&(s, e)| {
            let win: Vec<f64> = values[s..e]
                .iter()
                .copied()
                .filter(|v| !v.is_nan())
                .collect();
            let n = win.len();
            if n < minp {
                return f64::NAN;
            }
            if win.iter().all(|v| *v == win[0]) {
                return if kurt { -3.0 } else { 0.0 };
            }
            let (mut x, mut xx, mut xxx, mut xxxx) = (0.0, 0.0, 0.0, 0.0);
            for v in &win {
                let v = v - shift;
                x += v;
                xx += v * v;
                xxx += v * v * v;
                xxxx += v * v * v * v;
            }
            let dn = n as f64;
            let a = x / dn;
            if kurt {
                let mut r = a * a;
                let b = xx / dn - r;
                r *= a;
                let c = xxx / dn - r - 3.0 * a * b;
                r *= a;
                let d = xxxx / dn - r - 6.0 * b * a * a - 4.0 * c * a;
                if b <= 1e-14 {
                    return f64::NAN;
                }
                let k = (dn * dn - 1.0) * d / (b * b) - 3.0 * (dn - 1.0).powi(2);
                k / ((dn - 2.0) * (dn - 3.0))
            } else {
                let b = xx / dn - a * a;
                let c = xxx / dn - a * a * a - 3.0 * a * b;
                if b <= 1e-14 {
                    return f64::NAN;
                }
                let r = b.sqrt();
                ((dn * (dn - 1.0)).sqrt() * c) / ((dn - 2.0) * r * r * r)
            }
        })
        .collect()
}

/// Order statistics over each window: median, min, max and quantiles (NaN skipped).
fn roll_order(values: &[f64], bounds: &[(usize, usize)], minp: usize, kind: Kind) -> Vec<f64> {
    let mut win: Vec<f64> = Vec::new();
    bounds
        .iter()
        .map(|&(s, e)| {
            win.clear();
            win.extend(values[s..e].iter().copied().filter(|v| !v.is_nan()));
            let n = win.len();
            if n == 0 || n < minp {
                return f64::NAN;
            }
            match kind {
                Kind::Min => win.iter().copied().fold(f64::INFINITY, f64::min),
                Kind::Max => win.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                Kind::Median => {
                    win.sort_by(f64::total_cmp);
                    let mid = n / 2;
                    if n % 2 == 1 {
                        win[mid]
                    } else {
                        (win[mid] + win[mid - 1]) / 2.0
                    }
                }
                Kind::Quantile { q, interpolation } => {
                    win.sort_by(f64::total_cmp);
                    quantile_sorted(&win, q, interpolation)
                }
                _ => f64::NAN,
            }
        })
        .collect()
}

/// pandas' `roll_quantile` on one sorted, non-empty window.
fn quantile_sorted(win: &[f64], q: f64, interpolation: Interp) -> f64 {
    let n = win.len();
    if n == 1 {
        return win[0];
    }
    let pos = q * (n - 1) as f64;
    let idx = pos as usize;
    if idx as f64 == pos {
        return win[idx];
    }
    let (lo, hi) = (win[idx], win[(idx + 1).min(n - 1)]);
    match interpolation {
        Interp::Linear => lo + (hi - lo) * (pos - idx as f64),
        Interp::Lower => lo,
        Interp::Higher => hi,
        Interp::Midpoint => (lo + hi) / 2.0,
        Interp::Nearest => {
            let half = idx as f64 + 0.5;
            if pos == half {
                if idx.is_multiple_of(2) { lo } else { hi }
            } else if pos < half {
                lo
            } else {
                hi
            }
        }
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
            other => panic!("not float: {other:?}"),
        }
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * y.abs().max(1.0)
            })
    }

    #[test]
    fn sum_in_place_and_trim() {
        let df = frame(vec![("a", Series::Int64(vec![1, 2, 3, 4]))]);
        let out = rolling(
            df.clone(),
            &opts(json!({"rolling_type": "sum", "window": 2, "columns": {"a": "a"}})),
        )
        .unwrap();
        assert!(close(&floats(&out.columns[0]), &[f64::NAN, 3.0, 5.0, 7.0]));
        let out = rolling(
            df,
            &opts(json!({"rolling_type": "sum", "window": 3, "min_periods": 2, "columns": {"a": "s"}})),
        )
        .unwrap();
        assert_eq!(names(&out), ["a", "s"]);
        assert_eq!(out.num_rows(), 3);
        assert!(close(&floats(&out.columns[1]), &[3.0, 6.0, 9.0]));
        assert_eq!(out.index.levels[0], Series::Int64(vec![1, 2, 3]));
    }

    #[test]
    fn kernels() {
        let v = [1.0, 2.0, f64::NAN, 4.0, 8.0, 8.0, 8.0];
        let b = window_bounds(v.len(), 3, false);
        assert!(close(
            &roll_var(&v, &b, 2, 1.0),
            &[f64::NAN, 0.5, 0.5, 2.0, 8.0, 16.0 / 3.0, 0.0]
        ));
        assert!(close(
            &roll_mean(&v, &b, 1),
            &[1.0, 1.5, 1.5, 3.0, 6.0, 20.0 / 3.0, 8.0]
        ));
        assert!(close(
            &roll_order(&v, &b, 1, Kind::Median),
            &[1.0, 1.5, 1.5, 3.0, 6.0, 8.0, 8.0]
        ));
        let c = window_bounds(4, 3, true);
        assert_eq!(c, [(0, 2), (0, 3), (1, 4), (2, 4)]);
        let q = Kind::Quantile {
            q: 0.25,
            interpolation: Interp::Linear,
        };
        assert!(close(
            &roll_order(&[1.0, 2.0, 3.0, 4.0], &c, 1, q),
            &[1.25, 1.5, 2.5, 3.25]
        ));
        // pandas: Series([1, 2, 4, 8]).skew() and .kurt()
        let b4 = window_bounds(4, 4, false);
        let s = roll_moments(&[1.0, 2.0, 4.0, 8.0], &b4, 4, false);
        assert!((s[3] - 1.137_624_366_957_688_9).abs() < 1e-12);
        let k = roll_moments(&[1.0, 2.0, 4.0, 8.0], &b4, 4, true);
        assert!((k[3] - 0.757_655_954_631_379_9).abs() < 1e-12);
    }

    #[test]
    fn errors() {
        let df = frame(vec![("a", Series::Int64(vec![1, 2]))]);
        let err = |o| rolling(df.clone(), &opts(o)).unwrap_err().message;
        assert_eq!(
            err(json!({"rolling_type": "sum", "columns": {"a": "a"}})),
            "Undefined window for rolling operation"
        );
        assert_eq!(
            err(json!({"rolling_type": "cumsum", "window": 2, "columns": {"a": "a"}})),
            "Invalid rolling_type: cumsum"
        );
        assert_eq!(
            err(json!({"rolling_type": "sum", "window": 2, "columns": {"z": "a"}})),
            "Referenced columns not available in DataFrame."
        );
        assert_eq!(
            err(json!({"rolling_type": "sum", "window": 2, "columns": {"a": "a"}, "foo": 1})),
            "rolling() got an unexpected keyword argument 'foo'"
        );
        assert_eq!(
            err(
                json!({"rolling_type": "sum", "window": 2, "columns": {"a": "a"},
                       "rolling_type_options": {"foo": 1}})
            ),
            "Invalid options for sum: {'foo': 1}"
        );
    }
}
