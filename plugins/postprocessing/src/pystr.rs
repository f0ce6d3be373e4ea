//! Python's `str()`/`repr()` of the scalars a frame can hold.
//!
//! Labels produced by `flatten` and `histogram` are Python strings built with `str()` or an
//! f-string, so `2019.0`, `True`, `6.8134999999999994` and `2021-01-01 00:00:00` must be
//! spelled exactly as CPython (and numpy 1.26, which agrees for float64) spells them.

use crate::frame::Value;

/// `repr(float)` (also `str(float)` and `str(np.float64)`): the shortest digits that round
/// trip, in positional notation when the decimal exponent is in `-4..16`, else scientific
/// with a signed, at least two-digit exponent.
pub fn float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as CPython's repr, only the
    // layout differs: split it into sign, digits and decimal exponent.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if x < 0.0 { "-" } else { "" };
    // CPython: decpt = exp + 1; scientific when decpt <= -4 or decpt > 16.
    let decpt = exp + 1;
    if decpt <= -4 || decpt > 16 {
        let mut m = String::new();
        m.push_str(&digits[..1]);
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{esign}{:02}", exp.abs());
    }
    let n = digits.len() as i32;
    let body = if decpt <= 0 {
        format!("0.{}{}", "0".repeat((-decpt) as usize), digits)
    } else if decpt >= n {
        format!("{}{}.0", digits, "0".repeat((decpt - n) as usize))
    } else {
        let (a, b) = digits.split_at(decpt as usize);
        format!("{a}.{b}")
    };
    format!("{sign}{body}")
}

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
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => s.to_string(),
        Value::Ts(us) => timestamp_str(*us),
        Value::List(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Python `repr()` of a string: single quotes unless the text holds a single quote and no
/// double quote, with backslash escapes for the quote and control characters.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python `repr()` of a cell (used in error messages such as pandas' `KeyError`s).
pub fn py_repr(v: &Value) -> String {
    match v {
        Value::Str(s) => str_repr(s),
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
            .map(|s| str_repr(s.as_ref()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_python() {
        assert_eq!(float_repr(2019.0), "2019.0");
        assert_eq!(float_repr(6.8134999999999994), "6.8134999999999994");
        assert_eq!(float_repr(-0.7142857142857144), "-0.7142857142857144");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1234567890123456.0), "1234567890123456.0");
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(0.00001), "1e-05");
        assert_eq!(float_repr(1.5e-7), "1.5e-07");
        assert_eq!(float_repr(-5.0), "-5.0");
        assert_eq!(float_repr(13.472600000000002), "13.472600000000002");
        assert_eq!(float_repr(f64::NAN), "nan");
    }

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
        assert_eq!(str_repr("it's"), "\"it's\"");
    }
}
