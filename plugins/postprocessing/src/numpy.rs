//! Superset's `NUMPY_FUNCTIONS` aggregators, applied to one group at a time.
//!
//! Superset hands pandas `partial(np.<name>, **options)`, so pandas cannot recognise the
//! function and calls it on each group as a `Series`. Some numpy functions then dispatch to
//! the pandas method (`np.sum(series)` is `series.sum()`), which skips NaN; others work on the
//! raw array and let NaN propagate. The README of the golden vectors lists the resulting
//! behaviours; this module reproduces them, including numpy's pairwise summation so sums
//! round like numpy's.

use liteset_pyrepr as py;
use serde_json::{Map, Value as Json};

use crate::error::{PpError, Result};
use crate::frame::{Series, Value};
use crate::group::cmp_values;

/// A numpy function name Superset accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Average,
    ArgMin,
    ArgMax,
    Count,
    CountNonzero,
    CumSum,
    CumProd,
    Max,
    Mean,
    Median,
    NanSum,
    NanMin,
    NanMax,
    NanMean,
    NanMedian,
    NanPercentile,
    Min,
    Percentile,
    Prod,
    Std,
    Sum,
    Var,
}

impl Func {
    /// The function for a `NUMPY_FUNCTIONS` key.
    pub fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "average" => Func::Average,
            "argmin" => Func::ArgMin,
            "argmax" => Func::ArgMax,
            "count" => Func::Count,
            "count_nonzero" => Func::CountNonzero,
            "cumsum" => Func::CumSum,
            "cumprod" => Func::CumProd,
            "max" => Func::Max,
            "mean" => Func::Mean,
            "median" => Func::Median,
            "nansum" => Func::NanSum,
            "nanmin" => Func::NanMin,
            "nanmax" => Func::NanMax,
            "nanmean" => Func::NanMean,
            "nanmedian" => Func::NanMedian,
            "nanpercentile" => Func::NanPercentile,
            "min" => Func::Min,
            "percentile" => Func::Percentile,
            "prod" | "product" => Func::Prod,
            "std" => Func::Std,
            "sum" => Func::Sum,
            "var" => Func::Var,
            _ => return None,
        })
    }

    /// Whether pandas keeps an integer column's dtype through this aggregation (a pivot of
    /// complete groups stays `int64`); averages, medians, spreads and percentiles are always
    /// `float64`, so `10` comes out as `10.0` (which CSV shows).
    pub fn keeps_int_dtype(self) -> bool {
        !matches!(
            self,
            Func::Average
                | Func::Mean
                | Func::Median
                | Func::NanMean
                | Func::NanMedian
                | Func::Std
                | Func::Var
                | Func::Percentile
                | Func::NanPercentile
        )
    }

    /// numpy's own name for error messages.
    fn np_name(self) -> &'static str {
        match self {
            Func::Average => "average",
            Func::ArgMin => "argmin",
            Func::ArgMax => "argmax",
            Func::Count => "count",
            Func::CountNonzero => "count_nonzero",
            Func::CumSum => "cumsum",
            Func::CumProd => "cumprod",
            Func::Max => "max",
            Func::Mean => "mean",
            Func::Median => "median",
            Func::NanSum => "nansum",
            Func::NanMin => "nanmin",
            Func::NanMax => "nanmax",
            Func::NanMean => "nanmean",
            Func::NanMedian => "nanmedian",
            Func::NanPercentile => "nanpercentile",
            Func::Min => "min",
            Func::Percentile => "percentile",
            Func::Prod => "prod",
            Func::Std => "std",
            Func::Sum => "sum",
            Func::Var => "var",
        }
    }
}

/// numpy's quantile `method`s (the ones that make sense for a scalar `q`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QMethod {
    Linear,
    Lower,
    Higher,
    Midpoint,
    Nearest,
}

/// A numpy aggregator with its keyword options bound (Superset's `partial(func, **options)`).
#[derive(Clone, Debug)]
pub struct Aggregator {
    pub func: Func,
    /// `q` of `percentile`/`nanpercentile`, already divided by 100.
    pub q: f64,
    pub method: QMethod,
    /// `ddof` of `std`/`var` (numpy's default 0).
    pub ddof: f64,
}

impl Aggregator {
    /// A plain aggregator without options.
    pub fn new(func: Func) -> Aggregator {
        Aggregator {
            func,
            q: 0.5,
            method: QMethod::Linear,
            ddof: 0.0,
        }
    }

    /// Binds numpy keyword `options`; unknown keys fail like Python does.
    pub fn with_options(func: Func, options: &Map<String, Json>) -> Result<Aggregator> {
        let mut agg = Aggregator::new(func);
        let mut has_q = false;
        for (key, val) in options {
            let name = func.np_name();
            match (func, key.as_str()) {
                (Func::Percentile | Func::NanPercentile, "q") => {
                    let q = val.as_f64().ok_or_else(|| {
                        PpError::params(format!(
                            "{name}() option q must be a single number, got {val}"
                        ))
                    })?;
                    if !(0.0..=100.0).contains(&q) {
                        return Err(PpError::params("Percentiles must be in the range [0, 100]"));
                    }
                    agg.q = q / 100.0;
                    has_q = true;
                }
                (Func::Percentile | Func::NanPercentile, "method" | "interpolation") => {
                    agg.method = match val.as_str() {
                        Some("linear") => QMethod::Linear,
                        Some("lower") => QMethod::Lower,
                        Some("higher") => QMethod::Higher,
                        Some("midpoint") => QMethod::Midpoint,
                        Some("nearest") => QMethod::Nearest,
                        _ => {
                            return Err(PpError::params(format!(
                                "{val} is not a valid method. Use one of: linear, lower, higher, midpoint, nearest"
                            )));
                        }
                    }
                }
                (Func::Std | Func::Var, "ddof") => {
                    agg.ddof = val.as_f64().ok_or_else(|| {
                        PpError::params(format!("{name}() option ddof must be a number"))
                    })?;
                }
                _ => {
                    return Err(PpError::params(format!(
                        "{name}() got an unexpected keyword argument {}",
                        py::str(key)
                    )));
                }
            }
        }
        if matches!(func, Func::Percentile | Func::NanPercentile) && !has_q {
            return Err(PpError::params(format!(
                "{}() missing 1 required positional argument: 'q'",
                func.np_name()
            )));
        }
        Ok(agg)
    }

    /// Applies the aggregator to the rows `rows` of `col`.
    pub fn apply(&self, col: &Series, rows: &[usize], scratch: &mut Scratch) -> Result<Value> {
        let f = self.func;
        if matches!(f, Func::CumSum | Func::CumProd) {
            // pandas refuses a function returning an array per group.
            return Err(PpError::params("Must produce aggregated value"));
        }
        if matches!(f, Func::Count) {
            return Ok(Value::Int(rows.len() as i64));
        }
        match col {
            Series::Int64(v) => {
                scratch.ints.clear();
                scratch.ints.extend(rows.iter().map(|&i| v[i]));
                Ok(self.apply_ints(&scratch.ints, &mut scratch.floats))
            }
            Series::Bool(v) => {
                scratch.ints.clear();
                scratch.ints.extend(rows.iter().map(|&i| i64::from(v[i])));
                let out = self.apply_ints(&scratch.ints, &mut scratch.floats);
                // min/max of a bool series stay bools.
                Ok(match (f, out) {
                    (Func::Max | Func::Min | Func::NanMax | Func::NanMin, Value::Int(i)) => {
                        Value::Bool(i != 0)
                    }
                    (_, out) => out,
                })
            }
            Series::Float64(v) => {
                scratch.floats.clear();
                scratch.floats.extend(rows.iter().map(|&i| v[i]));
                let mut buf = std::mem::take(&mut scratch.floats);
                let out = self.apply_floats(&mut buf, &mut scratch.tmp);
                scratch.floats = buf;
                Ok(out)
            }
            Series::Datetime(v) => self.apply_datetimes(rows.iter().map(|&i| v.get(i))),
            Series::Object(v) if rows.iter().any(|&i| matches!(v[i], Value::Str(_))) => {
                self.apply_strings(rows.iter().map(|&i| &v[i]))
            }
            Series::Object(v) => {
                // An object column of numbers (e.g. nullable ints) behaves like a numeric one.
                let mut all_int = true;
                scratch.floats.clear();
                scratch.ints.clear();
                for &i in rows {
                    match &v[i] {
                        Value::Int(x) => {
                            scratch.ints.push(*x);
                            scratch.floats.push(*x as f64);
                        }
                        Value::Bool(b) => {
                            scratch.ints.push(i64::from(*b));
                            scratch.floats.push(f64::from(u8::from(*b)));
                        }
                        Value::Float(x) => {
                            all_int = false;
                            scratch.floats.push(*x);
                        }
                        Value::Null => {
                            all_int = false;
                            scratch.floats.push(f64::NAN);
                        }
                        Value::Str(s) => {
                            return Err(PpError::params(format!(
                                "could not convert string to float: {}",
                                py::str(s)
                            )));
                        }
                        Value::Ts(_) | Value::List(_) => {
                            return Err(PpError::params(format!(
                                "unsupported operand type for {}: object column",
                                f.np_name()
                            )));
                        }
                    }
                }
                if all_int {
                    let ints = std::mem::take(&mut scratch.ints);
                    let out = self.apply_ints(&ints, &mut scratch.floats);
                    scratch.ints = ints;
                    Ok(out)
                } else {
                    let mut buf = std::mem::take(&mut scratch.floats);
                    let out = self.apply_floats(&mut buf, &mut scratch.tmp);
                    scratch.floats = buf;
                    Ok(out)
                }
            }
        }
    }

    fn apply_ints(&self, v: &[i64], tmp: &mut Vec<f64>) -> Value {
        match self.func {
            Func::Sum | Func::NanSum => Value::Int(v.iter().fold(0i64, |a, &b| a.wrapping_add(b))),
            Func::Prod => Value::Int(v.iter().fold(1i64, |a, &b| a.wrapping_mul(b))),
            Func::Max | Func::NanMax => v
                .iter()
                .max()
                .map_or(Value::Float(f64::NAN), |&x| Value::Int(x)),
            Func::Min | Func::NanMin => v
                .iter()
                .min()
                .map_or(Value::Float(f64::NAN), |&x| Value::Int(x)),
            Func::CountNonzero => Value::Int(v.iter().filter(|&&x| x != 0).count() as i64),
            Func::ArgMax => Value::Int(argbest(v.iter().map(|&x| x as f64), |a, b| a > b)),
            Func::ArgMin => Value::Int(argbest(v.iter().map(|&x| x as f64), |a, b| a < b)),
            _ => {
                tmp.clear();
                tmp.extend(v.iter().map(|&x| x as f64));
                let mut scratch = Vec::new();
                self.apply_floats(tmp, &mut scratch)
            }
        }
    }

    /// Float semantics. `v` may be reordered.
    fn apply_floats(&self, v: &mut [f64], tmp: &mut Vec<f64>) -> Value {
        let fl = Value::Float;
        match self.func {
            // pandas' nansum: NaN count as 0, numpy pairwise summation over the group.
            Func::Sum | Func::NanSum => fl(nan_sum(v, tmp)),
            Func::Prod => fl(v.iter().filter(|x| !x.is_nan()).product()),
            Func::Mean | Func::NanMean => fl(nan_mean(v, tmp)),
            Func::Average => fl(if v.is_empty() {
                f64::NAN
            } else {
                np_sum(v) / v.len() as f64
            }),
            Func::Std => fl(nan_var(v, self.ddof, tmp).sqrt()),
            Func::Var => fl(nan_var(v, self.ddof, tmp)),
            Func::Max | Func::NanMax => fl(v
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .fold(f64::NAN, |a, b| if a.is_nan() || b > a { b } else { a })),
            Func::Min | Func::NanMin => fl(v
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .fold(f64::NAN, |a, b| if a.is_nan() || b < a { b } else { a })),
            Func::Median => {
                if v.iter().any(|x| x.is_nan()) {
                    fl(f64::NAN)
                } else {
                    fl(median(v))
                }
            }
            Func::NanMedian => {
                tmp.clear();
                tmp.extend(v.iter().copied().filter(|x| !x.is_nan()));
                fl(median(tmp))
            }
            Func::Percentile => {
                if v.iter().any(|x| x.is_nan()) {
                    fl(f64::NAN)
                } else {
                    v.sort_by(f64::total_cmp);
                    fl(quantile_sorted(v, self.q, self.method))
                }
            }
            Func::NanPercentile => {
                tmp.clear();
                tmp.extend(v.iter().copied().filter(|x| !x.is_nan()));
                tmp.sort_by(f64::total_cmp);
                fl(quantile_sorted(tmp, self.q, self.method))
            }
            Func::Count => Value::Int(v.len() as i64),
            Func::CountNonzero => Value::Int(v.iter().filter(|&&x| x != 0.0).count() as i64),
            Func::ArgMax => Value::Int(argbest(v.iter().copied(), |a, b| a > b)),
            Func::ArgMin => Value::Int(argbest(v.iter().copied(), |a, b| a < b)),
            Func::CumSum | Func::CumProd => fl(f64::NAN),
        }
    }

    /// An object group holding text: pandas' `max`/`min` compare the strings (skipping
    /// missing values), `count_nonzero` counts truthy cells; numeric functions fail.
    fn apply_strings<'v, I: Iterator<Item = &'v Value>>(&self, it: I) -> Result<Value> {
        let vals: Vec<&Value> = it.collect();
        let present: Vec<&Value> = vals
            .iter()
            .copied()
            .filter(|v| !matches!(v, Value::Null) && !matches!(v, Value::Float(f) if f.is_nan()))
            .collect();
        let all_str = present.iter().all(|v| matches!(v, Value::Str(_)));
        match self.func {
            Func::Max | Func::Min if all_str => {
                let best = present.iter().copied().reduce(|a, b| {
                    let o = cmp_values(b, a);
                    let better = if self.func == Func::Max {
                        o.is_gt()
                    } else {
                        o.is_lt()
                    };
                    if better { b } else { a }
                });
                Ok(best.cloned().unwrap_or(Value::Float(f64::NAN)))
            }
            Func::Max | Func::Min => Err(PpError::params(
                "'>' not supported between instances of 'str' and 'float'",
            )),
            Func::CountNonzero => Ok(Value::Int(
                vals.iter()
                    .filter(|v| match v {
                        Value::Null => false,
                        Value::Str(s) => !s.is_empty(),
                        Value::Bool(b) => *b,
                        Value::Int(i) => *i != 0,
                        Value::Float(f) => *f != 0.0,
                        _ => true,
                    })
                    .count() as i64,
            )),
            _ => {
                let s = present
                    .iter()
                    .find_map(|v| {
                        if let Value::Str(s) = v {
                            Some(&**s)
                        } else {
                            None
                        }
                    })
                    .unwrap_or("");
                Err(PpError::params(format!(
                    "could not convert string to float: {}",
                    py::str(s)
                )))
            }
        }
    }

    fn apply_datetimes<I: Iterator<Item = Option<i64>>>(&self, it: I) -> Result<Value> {
        let vals: Vec<Option<i64>> = it.collect();
        let present = vals.iter().flatten().copied();
        Ok(match self.func {
            Func::Max | Func::NanMax => present.max().map_or(Value::Null, Value::Ts),
            Func::Min | Func::NanMin => present.min().map_or(Value::Null, Value::Ts),
            Func::ArgMax => Value::Int(argbest(
                vals.iter().map(|x| x.map_or(f64::NAN, |t| t as f64)),
                |a, b| a > b,
            )),
            Func::ArgMin => Value::Int(argbest(
                vals.iter().map(|x| x.map_or(f64::NAN, |t| t as f64)),
                |a, b| a < b,
            )),
            f => {
                return Err(PpError::params(format!(
                    "datetime64 type does not support {} operations",
                    f.np_name()
                )));
            }
        })
    }
}

/// Reusable buffers, so aggregating millions of small groups does not allocate per group.
#[derive(Default)]
pub struct Scratch {
    ints: Vec<i64>,
    floats: Vec<f64>,
    tmp: Vec<f64>,
}

/// Position of the first best non-NaN value (pandas `Series.argmax(skipna=True)`), -1 when
/// every value is NaN.
fn argbest<I: Iterator<Item = f64>, F: Fn(f64, f64) -> bool>(it: I, better: F) -> i64 {
    let mut best: Option<(usize, f64)> = None;
    for (i, x) in it.enumerate() {
        if x.is_nan() {
            continue;
        }
        match best {
            Some((_, b)) if !better(x, b) => {}
            _ => best = Some((i, x)),
        }
    }
    best.map_or(-1, |(i, _)| i as i64)
}

/// numpy's pairwise summation (`pairwise_sum_DOUBLE`): blocks of 8 accumulators up to 128
/// elements, recursive halving above. Reproducing it keeps sums bit-identical to numpy's.
pub fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = -0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for j in 0..8 {
                r[j] += a[i + j];
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
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// `np.sum` of a float array (NaN propagates).
pub fn np_sum(a: &[f64]) -> f64 {
    -0.0 + pairwise_sum(a)
}

/// pandas `nansum`: NaN replaced by 0, then numpy's sum.
pub fn nan_sum(a: &[f64], tmp: &mut Vec<f64>) -> f64 {
    if !a.iter().any(|x| x.is_nan()) {
        return np_sum(a);
    }
    tmp.clear();
    tmp.extend(a.iter().map(|&x| if x.is_nan() { 0.0 } else { x }));
    np_sum(tmp)
}

/// pandas `nanmean`: the NaN-as-0 sum divided by the count of non-NaN values.
pub fn nan_mean(a: &[f64], tmp: &mut Vec<f64>) -> f64 {
    let count = a.iter().filter(|x| !x.is_nan()).count();
    if count == 0 {
        return f64::NAN;
    }
    nan_sum(a, tmp) / count as f64
}

/// pandas `nanvar`: two passes over the values with NaN masked out.
pub fn nan_var(a: &[f64], ddof: f64, tmp: &mut Vec<f64>) -> f64 {
    let count = a.iter().filter(|x| !x.is_nan()).count() as f64;
    let d = count - ddof;
    if count == 0.0 || d <= 0.0 {
        return f64::NAN;
    }
    let avg = nan_sum(a, tmp) / count;
    tmp.clear();
    tmp.extend(a.iter().map(|&x| {
        if x.is_nan() {
            0.0
        } else {
            (avg - x) * (avg - x)
        }
    }));
    np_sum(tmp) / d
}

/// Median of NaN-free values (numpy: the mean of the two middle values for an even count);
/// NaN when empty. Reorders `v`.
pub fn median(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// numpy's `_lerp`: the two formulas keep the result monotonic and exact at both ends.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// `np.quantile` of sorted NaN-free values, `q` in `0..=1`; NaN when empty.
pub fn quantile_sorted(v: &[f64], q: f64, method: QMethod) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let last = (n - 1) as f64;
    let raw = last * q;
    let at = |i: f64| v[(i.max(0.0) as usize).min(n - 1)];
    match method {
        QMethod::Lower => at(raw.floor()),
        QMethod::Higher => at(raw.ceil()),
        QMethod::Nearest => {
            // np.around: half to even.
            let r = raw.round();
            let r = if (raw - raw.floor() - 0.5).abs() == 0.0 && r % 2.0 != 0.0 {
                r - 1.0
            } else {
                r
            };
            at(r)
        }
        QMethod::Linear | QMethod::Midpoint => {
            let (virt, gamma) = if method == QMethod::Linear {
                (raw, raw - raw.floor())
            } else {
                let virt = 0.5 * (raw.floor() + raw.ceil());
                (virt, if virt.fract() == 0.0 { 0.0 } else { 0.5 })
            };
            if virt >= last {
                return v[n - 1];
            }
            if virt < 0.0 {
                return v[0];
            }
            let prev = virt.floor() as usize;
            let next = (prev + 1).min(n - 1);
            lerp(v[prev], v[next], gamma)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.5, QMethod::Linear), 2.5);
        assert_eq!(quantile_sorted(&v, 0.25, QMethod::Linear), 1.75);
        assert_eq!(quantile_sorted(&v, 0.25, QMethod::Midpoint), 1.5);
        assert_eq!(quantile_sorted(&v, 1.0, QMethod::Linear), 4.0);
    }

    #[test]
    fn sums() {
        let v: Vec<f64> = (0..1000).map(|i| i as f64 * 0.1).collect();
        assert!((np_sum(&v) - 49950.0).abs() < 1e-6);
        assert_eq!(np_sum(&[-0.0]), -0.0);
    }
}
