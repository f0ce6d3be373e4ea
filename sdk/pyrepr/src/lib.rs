//! Python's `repr()` and `str()` of floats, strings and JSON values, spelled as CPython 3
//! spells them.
//!
//! Superset is a Python server, and its error messages and generated labels embed values as
//! Python prints them: `'x' is not of type 'integer'`, `{'queries': ['Unknown field.']}`,
//! `Column 'a' does not exist`, a histogram bin labelled `0.5 - 1.0`. Clients (Superset's
//! frontend, its tests, scripts written against Superset) compare these strings verbatim, so
//! Liteset and its plugins must produce them byte for byte. This crate is the one place that
//! knows Python's spelling; everything else calls it.
//!
//! ```
//! use serde_json::json;
//!
//! assert_eq!(liteset_pyrepr::float(1e16), "1e+16");
//! assert_eq!(liteset_pyrepr::str("it's"), r#""it's""#);
//! assert_eq!(
//!     liteset_pyrepr::json(&json!({"a": [1, 2.0, null, true]})),
//!     "{'a': [1, 2.0, None, True]}"
//! );
//! assert_eq!(liteset_pyrepr::json_str(&json!("as is")), "as is");
//! ```

use serde_json::{Number, Value};

/// How many nested arrays and objects [`json`] prints before writing `...` in place of the
/// next one: enough for anything `serde_json` parses (its recursion limit is 128) while
/// keeping the recursion bounded for values built in code.
pub const MAX_DEPTH: usize = 128;

/// Python's `repr(float)` (also `str(float)`, and numpy's for `float64`): the shortest digits
/// that round-trip, positional when the decimal exponent is in `-4..16` (`0.0001`,
/// `1234567890123456.0`), else scientific with a sign and at least two exponent digits
/// (`1e-05`, `1e+16`); `nan`, `inf`, `-inf`, `-0.0`.
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as CPython ("-1.5e16", "0e0",
    // "1e-5"); only the layout differs.
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    // CPython's `decpt`: the digits before the decimal point; scientific unless in -3..=16.
    let point = exponent + 1;
    let len = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    if !(-3..=16).contains(&point) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        out.push_str(&format!("e{sign}{:02}", exponent.unsigned_abs()));
    } else if point <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat(usize::try_from(-point).unwrap_or(0)));
        out.push_str(&digits);
    } else if point >= len {
        out.push_str(&digits);
        out.push_str(&"0".repeat(usize::try_from(point - len).unwrap_or(0)));
        out.push_str(".0");
    } else {
        let (whole, fraction) = digits.split_at(usize::try_from(point).unwrap_or(0));
        out.push_str(whole);
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`; `\\`, `\t`, `\n`,
/// `\r` and the quote escaped; other non-printable characters as `\xhh`, `\uhhhh` or
/// `\Uhhhhhhhh`.
///
/// Printability is approximated (controls, separators, format characters, surrogates,
/// private use, noncharacters, tags): code points unassigned in Unicode count as printable
/// here, where CPython escapes them.
pub fn str(s: &str) -> String {
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
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if printable(c) => out.push(c),
            c if u32::from(c) <= 0xff => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if u32::from(c) <= 0xffff => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
        }
    }
    out.push(quote);
    out
}

/// `str.isprintable()` for one character, approximately: see [`str`](fn@str).
fn printable(c: char) -> bool {
    let cp = u32::from(c);
    if cp < 0x7f {
        return cp >= 0x20;
    }
    !matches!(
        cp,
        0x7f..=0xa0
            | 0xad
            | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x1680
            | 0x180e
            | 0x2000..=0x200f
            | 0x2028..=0x202f
            | 0x205f..=0x206f
            | 0x3000
            | 0xd800..=0xf8ff
            | 0xfdd0..=0xfdef
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x1343f
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
            | 0xf0000..=0x10ffff
    ) && (cp & 0xfffe) != 0xfffe
}

/// Python's `repr()` (and `str()`) of a JSON number as `json.loads` decodes it: integers as
/// integers, anything else as a float. Integers beyond the `u64`/`i64` range are already
/// floats in `serde_json`, so they print as floats here.
pub fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    float(n.as_f64().unwrap_or(f64::NAN))
}

/// Python's `repr()` of the value `json.loads` returns: `None`, `True`, `1`, `1.0`, `1e+16`,
/// `'a'`, `[1, 'a']`, `{'k': 1}`. Keys come out in `serde_json::Map` order (insertion order
/// with the `preserve_order` feature, as in Python). Arrays and objects nested deeper than
/// [`MAX_DEPTH`] print as `...`.
pub fn json(value: &Value) -> String {
    json_to_depth(value, MAX_DEPTH)
}

/// [`json`], printing at most `max_depth` nested arrays and objects: a deeper one prints as
/// `...` (with `max_depth` 0, a top-level array or object is `...` too).
pub fn json_to_depth(value: &Value, max_depth: usize) -> String {
    let mut out = String::new();
    write_json(value, &mut out, max_depth);
    out
}

fn write_json(value: &Value, out: &mut String, budget: usize) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(&str(s)),
        Value::Array(_) | Value::Object(_) if budget == 0 => out.push_str("..."),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(item, out, budget - 1);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&str(key));
                out.push_str(": ");
                write_json(item, out, budget - 1);
            }
            out.push('}');
        }
    }
}

/// Python's `str()` of the value `json.loads` returns (an f-string's `{value}`): a string as
/// it is, anything else as [`json`].
pub fn json_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => json(other),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every expected string below is CPython 3.11's output.
    #[test]
    fn floats() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (-5.0, "-5.0"),
            (0.25, "0.25"),
            (-0.25, "-0.25"),
            (0.5, "0.5"),
            (2.5, "2.5"),
            (100.0, "100.0"),
            (2019.0, "2019.0"),
            (123.456, "123.456"),
            (123456.5, "123456.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.06519677093844654, "0.06519677093844654"),
            (6.8134999999999994, "6.8134999999999994"),
            (-0.7142857142857144, "-0.7142857142857144"),
            (13.472600000000002, "13.472600000000002"),
            (0.0001, "0.0001"),
            (9.999999999999999e-05, "9.999999999999999e-05"),
            (0.00001, "1e-05"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (-1e-7, "-1e-07"),
            (-2.5e-7, "-2.5e-07"),
            (-1.5e-300, "-1.5e-300"),
            (5e-324, "5e-324"),
            (1e15, "1000000000000000.0"),
            (1234567890123456.0, "1234567890123456.0"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (1e22, "1e+22"),
            (1.2345678901234568e22, "1.2345678901234568e+22"),
            (1e100, "1e+100"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for &(f, expected) in cases {
            assert_eq!(float(f), expected, "{f:e}");
        }
    }

    #[test]
    fn strings() {
        let cases: &[(&str, &str)] = &[
            ("", "''"),
            ("nope", "'nope'"),
            ("it's", r#""it's""#),
            ("\"", r#"'"'"#),
            ("'", r#""'""#),
            ("a'b\"c", r#"'a\'b"c'"#),
            ("'\"", r#"'\'"'"#),
            (r"a\b", r"'a\\b'"),
            (r"\", r"'\\'"),
            (
                "tab\there\n\u{1}\u{a0}é\u{200b}",
                r"'tab\there\n\x01\xa0é\u200b'",
            ),
            ("\r", r"'\r'"),
            ("\0", r"'\x00'"),
            ("\u{1f}", r"'\x1f'"),
            ("\u{7f}", r"'\x7f'"),
            ("\u{80}", r"'\x80'"),
            ("\u{85}", r"'\x85'"),
            ("\u{ad}", r"'\xad'"),
            ("\u{600}", r"'\u0600'"),
            ("\u{61c}", r"'\u061c'"),
            ("\u{1680}", r"'\u1680'"),
            ("\u{2028}", r"'\u2028'"),
            ("\u{3000}", r"'\u3000'"),
            ("\u{e000}", r"'\ue000'"),
            ("\u{feff}", r"'\ufeff'"),
            ("\u{fffe}", r"'\ufffe'"),
            ("\u{1fffe}", r"'\U0001fffe'"),
            ("\u{e0001}", r"'\U000e0001'"),
            ("\u{e007f}", r"'\U000e007f'"),
            ("\u{f0000}", r"'\U000f0000'"),
            ("\u{10000}", "'\u{10000}'"),
            ("\u{1f600}", "'\u{1f600}'"),
            ("\u{30b9}\u{130}", "'\u{30b9}\u{130}'"),
        ];
        for &(s, expected) in cases {
            assert_eq!(str(s), expected, "{s:?}");
        }
    }

    #[test]
    fn json_values() {
        assert_eq!(
            json(&json!({"a": [1, 2.0, null, true, "x"]})),
            "{'a': [1, 2.0, None, True, 'x']}"
        );
        assert_eq!(
            json(&json!({"q": 0.5, "x": "it's", "y": [true, null]})),
            "{'q': 0.5, 'x': \"it's\", 'y': [True, None]}"
        );
        assert_eq!(
            json(&json!({"b": {}, "c": [], "d": u64::MAX, "e": i64::MIN, "f": false})),
            "{'b': {}, 'c': [], 'd': 18446744073709551615, 'e': -9223372036854775808, 'f': False}"
        );
        // Python's dicts keep insertion order; so does serde_json with `preserve_order`.
        let parsed: Value = serde_json::from_str(r#"{"z": 1, "a": 1E2, "m": "\\"}"#).unwrap();
        assert_eq!(json(&parsed), r"{'z': 1, 'a': 100.0, 'm': '\\'}");
        assert_eq!(json(&json!(1e16)), "1e+16");
        assert_eq!(json(&json!("x")), "'x'");
        assert_eq!(json_str(&json!("it's")), "it's");
        assert_eq!(json_str(&json!(null)), "None");
        assert_eq!(json_str(&json!(1.0)), "1.0");
        assert_eq!(json_str(&json!(["a"])), "['a']");
        assert_eq!(number(&Number::from(7)), "7");
        assert_eq!(number(&Number::from_f64(7.0).unwrap()), "7.0");
    }

    #[test]
    fn nesting_is_bounded() {
        let nested = |depth: usize| -> Value {
            serde_json::from_str(&format!("{}{}", "[".repeat(depth), "]".repeat(depth))).unwrap()
        };
        assert_eq!(json_to_depth(&json!([[1], 2]), 2), "[[1], 2]");
        assert_eq!(json_to_depth(&json!([[1], 2]), 1), "[..., 2]");
        assert_eq!(json_to_depth(&json!({"a": {}}), 1), "{'a': ...}");
        assert_eq!(json_to_depth(&json!([]), 0), "...");
        assert_eq!(json_to_depth(&json!("s"), 0), "'s'");
        // Nothing serde_json parses is cut short.
        let deepest = (1..)
            .take_while(|&d| {
                serde_json::from_str::<Value>(&format!("{}{}", "[".repeat(d), "]".repeat(d)))
                    .is_ok()
            })
            .last()
            .unwrap();
        assert!(deepest <= MAX_DEPTH, "{deepest}");
        let value = nested(deepest);
        assert!(!json(&value).contains("..."));
        assert_eq!(
            json_to_depth(&value, deepest - 1),
            format!("{}...{}", "[".repeat(deepest - 1), "]".repeat(deepest - 1))
        );
    }
}
