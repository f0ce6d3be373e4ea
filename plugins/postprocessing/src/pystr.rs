//! Python's `str()`/`repr()` of the scalars a frame can hold.
//!
//! Labels produced by `flatten` and `histogram` are Python strings built with `str()` or an
//! f-string, so `2019.0`, `True`, `6.8134999999999994` and `2021-01-01 00:00:00` must be
//! spelled exactly as CPython (and numpy 1.26, which agrees for float64) spells them. Floats
//! and strings are spelled by `liteset_pyrepr` (`py::float`, `py::str`), shared with the
//! server; this module adds the frame's own cell types (timestamps, lists).

use liteset_pyrepr as py;

use crate::frame::Value;

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm: exact for the whole i64 microsecond range we can meet.
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `str(pd.Timestamp)` for microseconds since the epoch: `2021-01-01 00:00:00`, with
/// `.ffffff` only when there is a fractional second.
pub fn timestamp_str(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut s = format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        sod / 3600,
        (sod % 3600) / 60,
        sod % 60
    );
    if frac != 0 {
        s.push_str(&format!(".{frac:06}"));
    }
    s
}

/// Python `str()` of a cell or label level.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => py::float(*f),
        Value::Str(s) => s.to_string(),
        Value::Ts(us) => timestamp_str(*us),
        Value::List(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Python `repr()` of a cell (used in error messages such as pandas' `KeyError`s).
pub fn py_repr(v: &Value) -> String {
    match v {
        Value::Str(s) => py::str(s),
        Value::Ts(us) => format!("Timestamp('{}')", timestamp_str(*us)),
        other => py_str(other),
    }
}

/// Python `repr()` of a list of strings: `['a', 'b']`.
pub fn str_list_repr<S: AsRef<str>>(items: &[S]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|s| py::str(s.as_ref()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_like_pandas() {
        assert_eq!(timestamp_str(1_609_459_200_000_000), "2021-01-01 00:00:00");
        assert_eq!(
            timestamp_str(1_609_459_200_500_000),
            "2021-01-01 00:00:00.500000"
        );
        assert_eq!(timestamp_str(-1), "1969-12-31 23:59:59.999999");
    }

    #[test]
    fn reprs() {
        assert_eq!(str_list_repr(&["nope"]), "['nope']");
    }
}
