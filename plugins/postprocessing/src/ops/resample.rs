//! `resample`: regularising a time series to a pandas frequency (Superset's `resample`,
//! pandas' `DataFrame.resample(rule)` followed by `asfreq`, `ffill`, `bfill`, `interpolate`,
//! `mean`, `sum` or `median`).
//!
//! pandas' resampler is reproduced step by step because its output rows are not simply "every
//! period between the first and the last timestamp": the bin edges depend on whether the
//! frequency is a fixed duration (anchored at midnight of the first day) or a calendar offset
//! (month/quarter/year ends close bins on the right and label them with the right edge, so
//! `M` on month-start data gives month-end rows that match no input row), and the upsampling
//! methods reindex the input on exactly those labels.

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::PpError;
use crate::frame::{Frame, Index, NAT, Series, Times, Value};
use crate::ops::append::take_rows;
use crate::ops::args::{Options, Signature, get, invalid};

const SIGNATURE: Signature = Signature {
    name: "resample",
    params: &[("rule", true), ("method", true), ("fill_value", false)],
};

/// Superset's `RESAMPLE_METHOD`.
const METHODS: &[&str] = &[
    "asfreq", "bfill", "ffill", "linear", "median", "mean", "sum",
];

const US_PER_DAY: i64 = 86_400_000_000;

/// The most rows a resample may produce (a tiny rule over a wide time range would otherwise
/// allocate without bound).
pub const MAX_RESAMPLE_ROWS: usize = 10_000_000;

/// The most cells (rows × columns) a resample may produce (the same bound as a pivot's).
pub const MAX_RESAMPLE_CELLS: usize = 10_000_000;

/// The longest fixed-duration rule: 100,000 days (about 274 years), in microseconds.
const MAX_TICK_US: i64 = 100_000 * US_PER_DAY;

/// The largest multiple of a calendar rule (`10000W`, `10000M`, `10000Y`, ...).
const MAX_CALENDAR_N: i64 = 10_000;

/// Timestamps the resampler accepts: within 10,000 years (of 365.2425 days) of 1970, wider
/// than pandas' own `Timestamp` range, so that bin arithmetic never overflows.
const MAX_ABS_TS_US: i64 = 3_652_425 * US_PER_DAY;

/// Superset's `resample(df, rule, method, fill_value=None)`. The frame must have a
/// `DatetimeIndex` (so `resample` comes after a `pivot`).
pub fn resample(df: Frame, options: &Options) -> Result<Frame, PpError> {
    SIGNATURE.check(options)?;
    let is_datetime_index =
        df.index.levels.len() == 1 && matches!(df.index.levels[0], Series::Datetime(_));
    if !is_datetime_index {
        return Err(invalid("Resample operation requires DatetimeIndex"));
    }
    let method = match get(options, "method") {
        Some(Json::String(m)) if METHODS.contains(&m.as_str()) => m.as_str(),
        _ => {
            return Err(invalid(format!(
                "Resample method should be in {}.",
                METHODS.join(", ")
            )));
        }
    };
    let freq = match get(options, "rule") {
        Some(Json::String(rule)) => Freq::parse(rule)?,
        other => {
            return Err(invalid(format!(
                "Invalid frequency: {}",
                other.map_or("None".into(), py::json)
            )));
        }
    };
    let fill_value = match get(options, "fill_value") {
        None => None,
        Some(v @ Json::Number(_)) => Some(v.clone()),
        Some(Json::Bool(b)) => Some(Json::from(i64::from(*b))),
        Some(other) => {
            return Err(invalid(format!(
                "fill_value must be a number, not {}",
                py::json(other)
            )));
        }
    };

    // The resampler works on the frame sorted by time (a stable sort, like pandas').
    // NaT rows have no bin; they are left out.
    let Series::Datetime(times) = &df.index.levels[0] else {
        return Err(invalid("Resample operation requires DatetimeIndex"));
    };
    let mut order: Vec<usize> = (0..times.len())
        .filter(|&i| times.get(i).is_some())
        .collect();
    order.sort_by_key(|&i| times.raw()[i]);
    let sorted = take_rows(&df, &order);
    let ts: Vec<i64> = order.iter().map(|&i| times.raw()[i]).collect();
    if ts
        .iter()
        .any(|t| t.unsigned_abs() > MAX_ABS_TS_US.unsigned_abs())
    {
        return Err(invalid(
            "Resample operation requires timestamps within 10,000 years of 1970",
        ));
    }
    let bins = Bins::new(&ts, &freq)?;
    let cells = bins
        .labels
        .len()
        .saturating_mul(sorted.columns.len().max(1));
    if cells > MAX_RESAMPLE_CELLS {
        return Err(invalid(format!(
            "Resampling would produce {} rows of {} columns, more than the limit of \
             {MAX_RESAMPLE_CELLS} cells; choose a coarser rule",
            bins.labels.len(),
            sorted.columns.len()
        )));
    }

    let columns = match method {
        "mean" | "sum" | "median" => downsample(&sorted, &ts, &bins, method)?,
        _ => upsample(&sorted, &ts, &bins, &freq, method, fill_value.as_ref())?,
    };
    Ok(Frame {
        labels: sorted.labels,
        columns,
        column_names: sorted.column_names,
        index: Index {
            names: sorted.index.names,
            levels: vec![Series::Datetime(
                bins.labels.iter().map(|t| Some(*t)).collect(),
            )],
        },
    })
}

/// A pandas offset (the subset of `pandas.tseries.frequencies.to_offset` that makes sense for
/// resampling a time series).
#[derive(Clone, Debug, PartialEq)]
enum Freq {
    /// A fixed duration in microseconds (`D`, `H`, `T`/`min`, `S`, `L`/`ms`, `U`/`us`).
    Tick(i64),
    /// Weeks ending on `weekday` (0 = Monday), `W` being `W-SUN`.
    Week {
        n: i64,
        weekday: i64,
    },
    MonthEnd(i64),
    MonthBegin(i64),
    /// Quarters whose last (or first) month is `month` modulo 3.
    QuarterEnd {
        n: i64,
        month: i64,
    },
    QuarterBegin {
        n: i64,
        month: i64,
    },
    YearEnd {
        n: i64,
        month: i64,
    },
    YearBegin {
        n: i64,
        month: i64,
    },
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];

impl Freq {
    /// Parses a rule such as `1D`, `15min`, `W`, `W-MON`, `M`, `MS`, `Q-DEC`, `A`, `1D12H`.
    fn parse(rule: &str) -> Result<Freq, PpError> {
        let bad = || invalid(format!("Invalid frequency: {rule}"));
        let too_long = || invalid(format!("Frequency {rule} is too long"));
        let chars: Vec<char> = rule.trim().chars().collect();
        let mut i = 0;
        let mut parts: Vec<(f64, bool, String)> = Vec::new();
        while i < chars.len() {
            let start = i;
            if chars[i] == '-' {
                i += 1;
            }
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let number: String = chars[start..i].iter().collect();
            while i < chars.len() && chars[i] == ' ' {
                i += 1;
            }
            let name_start = i;
            while i < chars.len() && chars[i].is_ascii_alphabetic() {
                i += 1;
            }
            if i < chars.len() && chars[i] == '-' && i > name_start {
                i += 1;
                while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                    i += 1;
                }
            }
            let name: String = chars[name_start..i].iter().collect();
            if name.is_empty() {
                return Err(bad());
            }
            let explicit = !number.is_empty() && number != "-";
            let n = match number.as_str() {
                "" => 1.0,
                "-" => -1.0,
                s => s.parse::<f64>().map_err(|_| bad())?,
            };
            parts.push((n, explicit, name));
        }
        let mut total_tick: Option<i64> = None;
        let mut anchored = None;
        for (n, _, name) in &parts {
            match Freq::base(name).ok_or_else(bad)? {
                Base::Tick(unit) => {
                    let us = n * unit as f64;
                    if us.fract() != 0.0 {
                        return Err(invalid(format!(
                            "Frequency {rule} is finer than a microsecond"
                        )));
                    }
                    if !us.is_finite() || us.abs() > MAX_TICK_US as f64 {
                        return Err(too_long());
                    }
                    let total = total_tick.unwrap_or(0) + us as i64;
                    if total.abs() > MAX_TICK_US {
                        return Err(too_long());
                    }
                    total_tick = Some(total);
                }
                Base::Anchored(f) => {
                    if n.fract() != 0.0 || parts.len() > 1 {
                        return Err(bad());
                    }
                    if n.abs() > MAX_CALENDAR_N as f64 {
                        return Err(too_long());
                    }
                    anchored = Some(f(*n as i64));
                }
            }
        }
        let freq = match (anchored, total_tick) {
            (Some(f), None) => f,
            (None, Some(us)) => Freq::Tick(us),
            _ => return Err(bad()),
        };
        let positive = match &freq {
            Freq::Tick(us) => *us > 0,
            Freq::Week { n, .. }
            | Freq::MonthEnd(n)
            | Freq::MonthBegin(n)
            | Freq::QuarterEnd { n, .. }
            | Freq::QuarterBegin { n, .. }
            | Freq::YearEnd { n, .. }
            | Freq::YearBegin { n, .. } => *n > 0,
        };
        if !positive {
            return Err(invalid(format!("Frequency {rule} must be positive")));
        }
        Ok(freq)
    }

    /// One alias, after pandas' normalisation (`ms`/`MS` keep their case, everything else is
    /// case-insensitive).
    fn base(name: &str) -> Option<Base> {
        let upper = if name == "ms" || name == "MS" {
            name.to_string()
        } else {
            name.to_ascii_uppercase()
        };
        let (prefix, suffix) = match upper.split_once('-') {
            Some((p, s)) => (p.to_string(), Some(s.to_string())),
            None => (upper, None),
        };
        let month = |default: i64| -> Option<i64> {
            match &suffix {
                None => Some(default),
                Some(s) => MONTHS.iter().position(|m| m == s).map(|p| p as i64 + 1),
            }
        };
        let tick = |us: i64| (suffix.is_none()).then_some(Base::Tick(us));
        Some(match prefix.as_str() {
            "D" => tick(US_PER_DAY)?,
            "H" => tick(3_600_000_000)?,
            "T" | "MIN" => tick(60_000_000)?,
            "S" => tick(1_000_000)?,
            "L" | "ms" => tick(1_000)?,
            "U" | "US" => tick(1)?,
            "W" => {
                let weekday = match &suffix {
                    None => 6,
                    Some(s) => WEEKDAYS.iter().position(|d| d == s)? as i64,
                };
                Base::Anchored(Box::new(move |n| Freq::Week { n, weekday }))
            }
            "M" if suffix.is_none() => Base::Anchored(Box::new(Freq::MonthEnd)),
            "MS" if suffix.is_none() => Base::Anchored(Box::new(Freq::MonthBegin)),
            "Q" => {
                let month = month(12)?;
                Base::Anchored(Box::new(move |n| Freq::QuarterEnd { n, month }))
            }
            "QS" => {
                let month = month(1)?;
                Base::Anchored(Box::new(move |n| Freq::QuarterBegin { n, month }))
            }
            "A" | "Y" => {
                let month = month(12)?;
                Base::Anchored(Box::new(move |n| Freq::YearEnd { n, month }))
            }
            "AS" | "YS" => {
                let month = month(1)?;
                Base::Anchored(Box::new(move |n| Freq::YearBegin { n, month }))
            }
            _ => return None,
        })
    }

    /// pandas closes (and labels) month, quarter, year and week bins on the right.
    fn closed_right(&self) -> bool {
        matches!(
            self,
            Freq::Week { .. } | Freq::MonthEnd(_) | Freq::QuarterEnd { .. } | Freq::YearEnd { .. }
        )
    }

    fn n(&self) -> i64 {
        match self {
            Freq::Tick(_) => 1,
            Freq::Week { n, .. }
            | Freq::MonthEnd(n)
            | Freq::MonthBegin(n)
            | Freq::QuarterEnd { n, .. }
            | Freq::QuarterBegin { n, .. }
            | Freq::YearEnd { n, .. }
            | Freq::YearBegin { n, .. } => *n,
        }
    }

    /// `is_on_offset` (calendar offsets look at the date only).
    fn on_offset(&self, ts: i64) -> bool {
        let (y, m, d) = civil(ts);
        let dim = days_in_month(y, m);
        match *self {
            Freq::Tick(_) => true,
            Freq::Week { weekday, .. } => weekday_of(ts) == weekday,
            Freq::MonthEnd(_) => d == dim,
            Freq::MonthBegin(_) => d == 1,
            Freq::QuarterEnd { month, .. } => d == dim && (m - month).rem_euclid(3) == 0,
            Freq::QuarterBegin { month, .. } => d == 1 && (m - month).rem_euclid(3) == 0,
            Freq::YearEnd { month, .. } => m == month && d == dim,
            Freq::YearBegin { month, .. } => m == month && d == 1,
        }
    }

    /// `ts + k * offset` with pandas' rolling conventions (an off-offset date first rolls to
    /// the neighbouring anchor, which counts as one step). Time of day is kept.
    fn shift(&self, ts: i64, k: i64) -> i64 {
        let (y, m, d) = civil(ts);
        let tod = ts.rem_euclid(US_PER_DAY);
        let dim = days_in_month(y, m);
        match *self {
            Freq::Tick(us) => ts + k * us,
            Freq::Week { weekday, .. } => {
                let mut k = k;
                let mut t = ts;
                let wd = weekday_of(ts);
                if wd != weekday {
                    t += (weekday - wd).rem_euclid(7) * US_PER_DAY;
                    if k > 0 {
                        k -= 1;
                    }
                }
                t + k * 7 * US_PER_DAY
            }
            Freq::MonthEnd(_) | Freq::MonthBegin(_) => {
                let end = matches!(self, Freq::MonthEnd(_));
                let compare = if end { dim } else { 1 };
                let n = roll_convention(d, k, compare);
                shift_month(y, m, n, end, tod)
            }
            Freq::QuarterEnd { month, .. } | Freq::QuarterBegin { month, .. } => {
                let end = matches!(self, Freq::QuarterEnd { .. });
                let anchor_day = if end { dim } else { 1 };
                let months_since = m % 3 - month % 3;
                let mut q = k;
                if q > 0 {
                    if months_since < 0 || (months_since == 0 && d < anchor_day) {
                        q -= 1;
                    }
                } else if months_since > 0 || (months_since == 0 && d > anchor_day) {
                    q += 1;
                }
                shift_month(y, m, q * 3 - months_since, end, tod)
            }
            Freq::YearEnd { month, .. } | Freq::YearBegin { month, .. } => {
                let end = matches!(self, Freq::YearEnd { .. });
                let anchor_day = if end { dim } else { 1 };
                let mut years = k;
                if years > 0 {
                    if m < month || (m == month && d < anchor_day) {
                        years -= 1;
                    }
                } else if m > month || (m == month && d > anchor_day) {
                    years += 1;
                }
                shift_month(y, m, years * 12 + (month - m), end, tod)
            }
        }
    }
}

/// A parsed alias: a duration, or a calendar offset awaiting its multiple.
enum Base {
    Tick(i64),
    Anchored(Box<dyn Fn(i64) -> Freq>),
}

/// pandas' `roll_convention`.
fn roll_convention(day: i64, n: i64, compare: i64) -> i64 {
    if n > 0 && day < compare {
        n - 1
    } else if n <= 0 && day > compare {
        n + 1
    } else {
        n
    }
}

/// pandas' `shift_month`: `months` months later, on the first or last day of that month.
fn shift_month(y: i64, m: i64, months: i64, end: bool, tod: i64) -> i64 {
    let total = y * 12 + (m - 1) + months;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    let day = if end { days_in_month(ny, nm) } else { 1 };
    days_from_civil(ny, nm, day) * US_PER_DAY + tod
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The (year, month, day) of a timestamp in microseconds.
fn civil(ts: i64) -> (i64, i64, i64) {
    let z = ts.div_euclid(US_PER_DAY) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// 0 = Monday (1970-01-01 was a Thursday).
fn weekday_of(ts: i64) -> i64 {
    (ts.div_euclid(US_PER_DAY) + 3).rem_euclid(7)
}

fn normalize(ts: i64) -> i64 {
    ts - ts.rem_euclid(US_PER_DAY)
}

/// The resampler's bins: output labels and the edges that assign rows to them.
struct Bins {
    labels: Vec<i64>,
    /// `labels.len() + 1` edges; row `t` is in bin `j` when `edges[j] <= t < edges[j + 1]`
    /// (or `edges[j] < t <= edges[j + 1]` when closed on the right).
    edges: Vec<i64>,
    closed_right: bool,
}

impl Bins {
    /// pandas' `_get_timestamp_range_edges`, `_adjust_bin_edges` and label choice, for
    /// sorted timestamps.
    /// Timestamps must be within `MAX_ABS_TS_US` and the frequency within the limits of
    /// `Freq::parse`; more than `MAX_RESAMPLE_ROWS` bins is an error.
    fn new(ts: &[i64], freq: &Freq) -> Result<Bins, PpError> {
        let closed_right = freq.closed_right();
        let (Some(&first), Some(&last)) = (ts.first(), ts.last()) else {
            return Ok(Bins {
                labels: Vec::new(),
                edges: Vec::new(),
                closed_right,
            });
        };
        // The shortest a bin of this frequency can be, to bound the number of bins first.
        let min_step = match *freq {
            Freq::Tick(us) => us,
            Freq::Week { n, .. } => n * 7 * US_PER_DAY,
            Freq::MonthEnd(n) | Freq::MonthBegin(n) => n * 28 * US_PER_DAY,
            Freq::QuarterEnd { n, .. } | Freq::QuarterBegin { n, .. } => n * 89 * US_PER_DAY,
            Freq::YearEnd { n, .. } | Freq::YearBegin { n, .. } => n * 365 * US_PER_DAY,
        };
        let estimate = (i128::from(last) - i128::from(first)) / i128::from(min_step.max(1)) + 3;
        if estimate > MAX_RESAMPLE_ROWS as i128 {
            return Err(invalid(format!(
                "Resampling would produce about {estimate} rows, more than the limit of \
                 {MAX_RESAMPLE_ROWS}; choose a coarser rule"
            )));
        }
        let mut binner = Vec::new();
        let mut edges;
        match *freq {
            Freq::Tick(step) => {
                // Fixed durations are anchored at midnight of the first day (`start_day`).
                let origin = normalize(first);
                let foffset = (first - origin).rem_euclid(step);
                let loffset = (last - origin).rem_euclid(step);
                let start = first - foffset;
                let end = if loffset > 0 {
                    last + (step - loffset)
                } else {
                    last + step
                };
                let mut t = start;
                while t <= end {
                    binner.push(t);
                    t += step;
                }
                edges = binner.clone();
            }
            _ => {
                let (first, last) = (normalize(first), normalize(last));
                let n = freq.n();
                let start = if closed_right {
                    freq.shift(first, -n)
                } else if freq.on_offset(first) {
                    first
                } else {
                    freq.shift(first, -1)
                };
                let end = freq.shift(last, n);
                let mut t = start;
                while t <= end {
                    binner.push(t);
                    t = freq.shift(t, n);
                }
                // Bins longer than a day closed on the right end at the last microsecond of
                // their label's day; a last bin that starts after the data is dropped.
                edges = if closed_right {
                    binner.iter().map(|b| b + US_PER_DAY - 1).collect()
                } else {
                    binner.clone()
                };
                if edges.len() >= 2 && edges[edges.len() - 2] > ts[ts.len() - 1] {
                    edges.pop();
                    binner.pop();
                }
            }
        }
        let labels = if binner.len() < 2 {
            Vec::new()
        } else if closed_right {
            binner[1..].to_vec()
        } else {
            binner[..binner.len() - 1].to_vec()
        };
        Ok(Bins {
            labels,
            edges,
            closed_right,
        })
    }

    /// The row range `[lo, hi)` of sorted timestamps falling in bin `j`.
    fn rows(&self, ts: &[i64], j: usize) -> (usize, usize) {
        let (a, b) = (self.edges[j], self.edges[j + 1]);
        if self.closed_right {
            (
                ts.partition_point(|&t| t <= a),
                ts.partition_point(|&t| t <= b),
            )
        } else {
            (
                ts.partition_point(|&t| t < a),
                ts.partition_point(|&t| t < b),
            )
        }
    }
}

/// Whether the index already has exactly the target frequency, in which case pandas relabels
/// the rows instead of reindexing (`inferred_freq == freq` and equal lengths).
fn same_frequency(ts: &[i64], freq: &Freq, labels: usize) -> bool {
    if ts.len() < 3 || ts.len() != labels {
        return false;
    }
    match *freq {
        // pandas infers a weekly alias, not a number of days, for multiples of seven days.
        Freq::Tick(step) => {
            step % (7 * US_PER_DAY) != 0 && ts.windows(2).all(|w| w[1] - w[0] == step)
        }
        _ => freq.on_offset(ts[0]) && ts.windows(2).all(|w| freq.shift(w[0], freq.n()) == w[1]),
    }
}

/// `asfreq`, `ffill`, `bfill` and `linear`: the input reindexed on the bin labels.
fn upsample(
    df: &Frame,
    ts: &[i64],
    bins: &Bins,
    freq: &Freq,
    method: &str,
    fill_value: Option<&Json>,
) -> Result<Vec<Series>, PpError> {
    let labels = &bins.labels;
    let picks: Vec<Option<usize>> = if same_frequency(ts, freq, labels.len()) {
        (0..ts.len()).map(Some).collect()
    } else {
        if ts.windows(2).any(|w| w[0] == w[1]) {
            return Err(invalid("cannot reindex on an axis with duplicate labels"));
        }
        labels
            .iter()
            .map(|&l| match method {
                "ffill" => ts.partition_point(|&t| t <= l).checked_sub(1),
                "bfill" => {
                    let p = ts.partition_point(|&t| t < l);
                    (p < ts.len()).then_some(p)
                }
                _ => ts.binary_search(&l).ok(),
            })
            .collect()
    };
    // `fill_value` only applies to `asfreq`; Superset ignores it for every other method.
    let fill = if method == "asfreq" { fill_value } else { None };
    Ok(df
        .columns
        .iter()
        .map(|c| {
            let s = reindex(c, &picks, fill);
            match method {
                "ffill" => fill_forward(s),
                "bfill" => fill_backward(s),
                "linear" => interpolate(s),
                _ => match fill {
                    Some(f) => fill_na(s, f),
                    None => s,
                },
            }
        })
        .collect())
}

/// `Series.reindex`: the rows at `picks`, missing ones being NaN/NaT/None (or `fill`). An
/// int64 or bool column with missing rows is upcast like pandas does.
fn reindex(series: &Series, picks: &[Option<usize>], fill: Option<&Json>) -> Series {
    let complete = picks.iter().all(Option::is_some);
    let fill_int = fill.and_then(Json::as_i64);
    let fill_f = fill.and_then(Json::as_f64).unwrap_or(f64::NAN);
    match series {
        Series::Int64(v) if complete || (fill.is_some() && fill_int.is_some()) => Series::Int64(
            picks
                .iter()
                .map(|p| p.map_or(fill_int.unwrap_or(0), |i| v[i]))
                .collect(),
        ),
        Series::Int64(v) => Series::Float64(
            picks
                .iter()
                .map(|p| p.map_or(fill_f, |i| v[i] as f64))
                .collect(),
        ),
        Series::Float64(v) => {
            Series::Float64(picks.iter().map(|p| p.map_or(fill_f, |i| v[i])).collect())
        }
        Series::Bool(v) if complete => {
            Series::Bool(picks.iter().map(|p| p.is_some_and(|i| v[i])).collect())
        }
        Series::Bool(v) => Series::Object(
            picks
                .iter()
                .map(|p| p.map_or_else(|| json_value(fill), |i| Value::Bool(v[i])))
                .collect(),
        ),
        Series::Datetime(v) => {
            Series::Datetime(picks.iter().map(|p| p.and_then(|i| v.get(i))).collect())
        }
        Series::Object(v) => Series::Object(
            picks
                .iter()
                .map(|p| p.map_or_else(|| json_value(fill), |i| v[i].clone()))
                .collect(),
        ),
    }
}

fn json_value(v: Option<&Json>) -> Value {
    match v.and_then(|j| {
        j.as_i64()
            .map(Value::Int)
            .or_else(|| j.as_f64().map(Value::Float))
    }) {
        Some(x) => x,
        None => Value::Null,
    }
}

/// `fillna(fill_value)` on float and object columns.
fn fill_na(series: Series, fill: &Json) -> Series {
    match series {
        Series::Float64(v) => {
            let f = fill.as_f64().unwrap_or(f64::NAN);
            Series::Float64(
                v.into_iter()
                    .map(|x| if x.is_nan() { f } else { x })
                    .collect(),
            )
        }
        Series::Object(v) => Series::Object(
            v.into_iter()
                .map(|x| {
                    if x == Value::Null {
                        json_value(Some(fill))
                    } else {
                        x
                    }
                })
                .collect(),
        ),
        other => other,
    }
}

/// `fillna(method="ffill")`.
fn fill_forward(series: Series) -> Series {
    match series {
        Series::Float64(mut v) => {
            for i in 1..v.len() {
                if v[i].is_nan() {
                    v[i] = v[i - 1];
                }
            }
            Series::Float64(v)
        }
        Series::Object(mut objects) => {
            let v = objects.make_mut();
            for i in 1..v.len() {
                if v[i] == Value::Null {
                    v[i] = v[i - 1].clone();
                }
            }
            Series::Object(objects)
        }
        Series::Datetime(Times(mut v)) => {
            for i in 1..v.len() {
                if v[i] == NAT {
                    v[i] = v[i - 1];
                }
            }
            Series::Datetime(Times(v))
        }
        other => other,
    }
}

/// `fillna(method="bfill")`.
fn fill_backward(series: Series) -> Series {
    match series {
        Series::Float64(mut v) => {
            for i in (0..v.len().saturating_sub(1)).rev() {
                if v[i].is_nan() {
                    v[i] = v[i + 1];
                }
            }
            Series::Float64(v)
        }
        Series::Object(mut objects) => {
            let v = objects.make_mut();
            for i in (0..v.len().saturating_sub(1)).rev() {
                if v[i] == Value::Null {
                    v[i] = v[i + 1].clone();
                }
            }
            Series::Object(objects)
        }
        Series::Datetime(Times(mut v)) => {
            for i in (0..v.len().saturating_sub(1)).rev() {
                if v[i] == NAT {
                    v[i] = v[i + 1];
                }
            }
            Series::Datetime(Times(v))
        }
        other => other,
    }
}

/// `interpolate(method="linear")` (pandas 2.1, `limit_direction="forward"`): gaps between
/// two values are filled along the row positions (the timestamps are ignored), trailing gaps
/// repeat the last value, leading gaps stay NaN. Only float columns change.
fn interpolate(series: Series) -> Series {
    let Series::Float64(mut v) = series else {
        return series;
    };
    let valid: Vec<usize> = (0..v.len()).filter(|&i| !v[i].is_nan()).collect();
    let Some(&last) = valid.last() else {
        return Series::Float64(v);
    };
    for w in valid.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (ya, yb) = (v[a], v[b]);
        // numpy's `interp` formula: slope * (x - xa) + ya.
        let slope = (yb - ya) / (b - a) as f64;
        for (i, x) in v.iter_mut().enumerate().take(b).skip(a + 1) {
            *x = slope * (i - a) as f64 + ya;
        }
    }
    let tail = v[last];
    for x in v.iter_mut().skip(last + 1) {
        *x = tail;
    }
    Series::Float64(v)
}

/// `mean`, `sum` and `median` over each bin (NaN skipped). An empty bin sums to 0 and has no
/// mean or median; int64 sums stay int64.
fn downsample(df: &Frame, ts: &[i64], bins: &Bins, method: &str) -> Result<Vec<Series>, PpError> {
    let ranges: Vec<(usize, usize)> = (0..bins.labels.len()).map(|j| bins.rows(ts, j)).collect();
    df.columns
        .iter()
        .zip(&df.labels)
        .map(|(c, label)| {
            if method == "sum" {
                match c {
                    Series::Int64(v) => {
                        return Ok(Series::Int64(
                            ranges
                                .iter()
                                .map(|&(a, b)| v[a..b].iter().fold(0i64, |s, x| s.wrapping_add(*x)))
                                .collect(),
                        ));
                    }
                    Series::Bool(v) => {
                        return Ok(Series::Int64(
                            ranges
                                .iter()
                                .map(|&(a, b)| v[a..b].iter().filter(|x| **x).count() as i64)
                                .collect(),
                        ));
                    }
                    _ => {}
                }
            }
            let values =
                crate::ops::append::numeric_values(c, label, "resample").map_err(|_| {
                    invalid(format!(
                        "Cannot resample with {method}: column {} is not numeric",
                        py::str(&crate::ops::append::label_text(label))
                    ))
                })?;
            Ok(Series::Float64(
                ranges
                    .iter()
                    .map(|&(a, b)| {
                        let mut bin: Vec<f64> = values[a..b]
                            .iter()
                            .copied()
                            .filter(|x| !x.is_nan())
                            .collect();
                        match method {
                            "sum" => bin.iter().sum::<f64>() + 0.0,
                            "mean" if bin.is_empty() => f64::NAN,
                            "mean" => bin.iter().sum::<f64>() / bin.len() as f64,
                            _ if bin.is_empty() => f64::NAN,
                            _ => {
                                bin.sort_by(f64::total_cmp);
                                let m = bin.len() / 2;
                                if bin.len() % 2 == 1 {
                                    bin[m]
                                } else {
                                    (bin[m - 1] + bin[m]) / 2.0
                                }
                            }
                        }
                    })
                    .collect(),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(y: i64, m: i64, d: i64) -> i64 {
        days_from_civil(y, m, d) * US_PER_DAY
    }

    #[test]
    fn calendar() {
        assert_eq!(civil(ts(2020, 2, 29)), (2020, 2, 29));
        assert_eq!(weekday_of(ts(2021, 1, 3)), 6);
        let me = Freq::MonthEnd(1);
        assert_eq!(me.shift(ts(2020, 1, 15), -1), ts(2019, 12, 31));
        assert_eq!(me.shift(ts(2020, 1, 31), 1), ts(2020, 2, 29));
        let w = Freq::Week { n: 1, weekday: 6 };
        assert_eq!(w.shift(ts(2021, 1, 6), -1), ts(2021, 1, 3));
        assert_eq!(w.shift(ts(2021, 1, 3), 1), ts(2021, 1, 10));
        let q = Freq::QuarterEnd { n: 1, month: 12 };
        assert_eq!(q.shift(ts(2020, 2, 10), 1), ts(2020, 3, 31));
        assert_eq!(q.shift(ts(2020, 2, 10), -1), ts(2019, 12, 31));
        assert_eq!(Freq::parse("15min").unwrap(), Freq::Tick(900_000_000));
        assert_eq!(
            Freq::parse("1D12H").unwrap(),
            Freq::Tick(36 * 3_600_000_000)
        );
        assert_eq!(Freq::parse("W").unwrap(), Freq::Week { n: 1, weekday: 6 });
        assert_eq!(Freq::parse("MS").unwrap(), Freq::MonthBegin(1));
        assert_eq!(Freq::parse("ms").unwrap(), Freq::Tick(1000));
        assert!(Freq::parse("bogus").is_err());
    }

    #[test]
    fn month_end_bins_on_month_start_data() {
        let data = [ts(2020, 1, 1), ts(2020, 3, 1)];
        let b = Bins::new(&data, &Freq::MonthEnd(1)).unwrap();
        assert_eq!(
            b.labels,
            [ts(2020, 1, 31), ts(2020, 2, 29), ts(2020, 3, 31)]
        );
        let b = Bins::new(&data, &Freq::MonthBegin(1)).unwrap();
        assert_eq!(b.labels, [ts(2020, 1, 1), ts(2020, 2, 1), ts(2020, 3, 1)]);
        let weekly = [ts(2021, 1, 1), ts(2021, 1, 14)];
        let b = Bins::new(&weekly, &Freq::Week { n: 1, weekday: 6 }).unwrap();
        assert_eq!(b.labels, [ts(2021, 1, 3), ts(2021, 1, 10), ts(2021, 1, 17)]);
        assert_eq!(b.rows(&weekly, 0), (0, 1));
        assert_eq!(b.rows(&weekly, 2), (1, 2));
    }

    fn series_frame(times: &[i64], values: Vec<f64>) -> Frame {
        let mut df = Frame::from_columns(vec![("v".to_string(), Series::Float64(values))]);
        df.index = Index {
            names: vec![Some("__timestamp".into())],
            levels: vec![Series::Datetime(times.iter().map(|t| Some(*t)).collect())],
        };
        df
    }

    fn run(df: &Frame, options: serde_json::Value) -> (Vec<i64>, Vec<f64>) {
        let out = resample(df.clone(), &serde_json::from_value(options).unwrap()).unwrap();
        let Series::Datetime(t) = &out.index.levels[0] else {
            panic!("index")
        };
        let Series::Float64(v) = &out.columns[0] else {
            panic!("values")
        };
        (t.iter().map(|x| x.unwrap()).collect(), v.clone())
    }

    #[test]
    fn upsampling_and_downsampling() {
        let df = series_frame(
            &[ts(2021, 1, 1), ts(2021, 1, 2), ts(2021, 1, 5)],
            vec![1.0, f64::NAN, 5.0],
        );
        let (t, v) = run(&df, serde_json::json!({"rule": "1D", "method": "ffill"}));
        assert_eq!(t.len(), 5);
        assert_eq!(v, [1.0, 1.0, 1.0, 1.0, 5.0]);
        let (_, v) = run(&df, serde_json::json!({"rule": "1D", "method": "bfill"}));
        assert_eq!(v, [1.0, 5.0, 5.0, 5.0, 5.0]);
        let (_, v) = run(
            &df,
            serde_json::json!({"rule": "1D", "method": "asfreq", "fill_value": 0}),
        );
        assert_eq!(v, [1.0, 0.0, 0.0, 0.0, 5.0]);
        // Weeks end on Sunday: Jan 1-3 fall in the week labelled Jan 3.
        let (t, v) = run(&df, serde_json::json!({"rule": "W", "method": "sum"}));
        assert_eq!(t, [ts(2021, 1, 3), ts(2021, 1, 10)]);
        assert_eq!(v, [1.0, 5.0]);
        let (_, v) = run(&df, serde_json::json!({"rule": "2D", "method": "mean"}));
        assert_eq!(v.len(), 3);
        assert!(v[0] == 1.0 && v[1].is_nan() && v[2] == 5.0);
    }

    #[test]
    fn linear_interpolation() {
        let s = interpolate(Series::Float64(vec![
            f64::NAN,
            1.0,
            f64::NAN,
            3.0,
            f64::NAN,
        ]));
        match s {
            Series::Float64(v) => {
                assert!(v[0].is_nan());
                assert_eq!(&v[1..], &[1.0, 2.0, 3.0, 3.0]);
            }
            other => panic!("{other:?}"),
        }
    }
}
