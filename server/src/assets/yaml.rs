//! Writing bundle documents as YAML that Superset reads back as the same values.
//!
//! Superset loads bundles with PyYAML, which resolves plain scalars by YAML 1.1 rules:
//! `yes`/`on`/`off` are booleans, `2024-01-01` and ISO datetimes are timestamps, `1_000` and
//! `1:30` are integers, `1e5` is a string. A YAML 1.2 emitter (serde_norway) writes such
//! strings unquoted, and Superset's import then rejects the bundle (the `timestamp` of
//! `metadata.yaml` arrives as a datetime, not a string) or imports a boolean where a name was.
//! So strings are written plain only when their form is unambiguous in both versions, and
//! double-quoted otherwise; floats always carry a `.` and a signed exponent, the form both
//! versions read as a float. Block style and insertion order follow `yaml.safe_dump(...,
//! sort_keys=False)`, which is what Superset's exports look like.

use std::fmt::Write;

use serde_json::Value as Json;

/// The document `doc` as YAML text.
pub fn to_string(doc: &Json) -> String {
    let mut out = String::new();
    match doc {
        Json::Object(m) if !m.is_empty() => mapping(&mut out, m, 0),
        Json::Array(a) if !a.is_empty() => sequence(&mut out, a, 0),
        scalar => {
            inline(&mut out, scalar);
            out.push('\n');
        }
    }
    out
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// Whether `v` is written on the line of its key or dash (scalars and empty collections).
fn is_inline(v: &Json) -> bool {
    match v {
        Json::Object(m) => m.is_empty(),
        Json::Array(a) => a.is_empty(),
        _ => true,
    }
}

/// A mapping's entries, each on its own line at `level` spaces.
fn mapping(out: &mut String, m: &serde_json::Map<String, Json>, level: usize) {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            indent(out, level);
        }
        string(out, k);
        out.push(':');
        entry_value(out, v, level);
    }
}

/// A sequence's items at `level` spaces. Like PyYAML, a sequence under a key is not indented
/// further than the key.
fn sequence(out: &mut String, a: &[Json], level: usize) {
    for (i, v) in a.iter().enumerate() {
        if i > 0 {
            indent(out, level);
        }
        out.push('-');
        match v {
            Json::Object(m) if !m.is_empty() => {
                out.push(' ');
                mapping(out, m, level + 2);
            }
            Json::Array(inner) if !inner.is_empty() => {
                out.push(' ');
                sequence(out, inner, level + 2);
            }
            scalar => {
                out.push(' ');
                inline(out, scalar);
                out.push('\n');
            }
        }
    }
}

/// The value after `key:` of a mapping at `level`.
fn entry_value(out: &mut String, v: &Json, level: usize) {
    if is_inline(v) {
        out.push(' ');
        inline(out, v);
        out.push('\n');
        return;
    }
    out.push('\n');
    match v {
        Json::Object(m) => {
            indent(out, level + 2);
            mapping(out, m, level + 2);
        }
        Json::Array(a) => {
            indent(out, level);
            sequence(out, a, level);
        }
        _ => unreachable!("scalars are inline"),
    }
}

/// A scalar or an empty collection.
fn inline(out: &mut String, v: &Json) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => number(out, n),
        Json::String(s) => string(out, s),
        Json::Object(_) => out.push_str("{}"),
        Json::Array(_) => out.push_str("[]"),
    }
}

/// Integers as they are; floats as PyYAML writes them (`1.0e+20`, `0.5`), since YAML 1.1
/// reads `1e20` as a string.
fn number(out: &mut String, n: &serde_json::Number) {
    if n.is_f64() {
        let text = n.to_string();
        let (mantissa, exponent) = match text.split_once(['e', 'E']) {
            Some((m, e)) => (m, Some(e)),
            None => (text.as_str(), None),
        };
        out.push_str(mantissa);
        if !mantissa.contains('.') {
            out.push_str(".0");
        }
        if let Some(e) = exponent {
            out.push('e');
            if !e.starts_with(['+', '-']) {
                out.push('+');
            }
            out.push_str(e);
        }
    } else {
        let _ = write!(out, "{n}");
    }
}

/// Words YAML 1.1 or 1.2 resolve to something other than a string (compared ignoring case,
/// which covers more spellings than the specs list; quoting a string needlessly is harmless).
const RESERVED: [&str; 13] = [
    "yes", "no", "y", "n", "on", "off", "true", "false", "null", "nan", "inf", "~", "",
];

/// Whether `s` reads back as the same string when written plain: it starts with a letter or
/// `_` (so it cannot be a number, timestamp, or an indicator), uses only characters with no
/// meaning in a plain scalar, and is not a reserved word.
fn plain_ok(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '(' | ')' | ' ')
        })
        && !s.ends_with(' ')
        && !RESERVED.iter().any(|w| s.eq_ignore_ascii_case(w))
}

fn string(out: &mut String, s: &str) {
    if plain_ok(s) {
        out.push_str(s);
        return;
    }
    // YAML's double-quoted style accepts JSON's escapes (`\"`, `\\`, `\n`, `\uXXXX`, ...).
    out.push_str(&Json::String(s.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ambiguous_strings_are_quoted() {
        let doc = json!({
            "timestamp": "2026-11-30T19:00:00.000000+00:00",
            "day": "2024-01-01",
            "a": "yes", "b": "on", "c": "Off", "d": "1_000", "e": "1:30", "f": "1e5",
            "g": "", "h": "null", "i": "12", "j": "a: b", "k": "#x", "l": "line\nbreak",
            "m": "trailing ", "n": "Sales Dashboard", "o": "birth_names", "p": "-1",
        });
        let text = to_string(&doc);
        assert_eq!(
            text,
            "timestamp: \"2026-11-30T19:00:00.000000+00:00\"\nday: \"2024-01-01\"\n\
             a: \"yes\"\nb: \"on\"\nc: \"Off\"\nd: \"1_000\"\ne: \"1:30\"\nf: \"1e5\"\n\
             g: \"\"\nh: \"null\"\ni: \"12\"\nj: \"a: b\"\nk: \"#x\"\nl: \"line\\nbreak\"\n\
             m: \"trailing \"\n\"n\": Sales Dashboard\no: birth_names\np: \"-1\"\n"
        );
        let back: Json = serde_norway::from_str(&text).unwrap();
        assert_eq!(back, doc);
    }

    #[test]
    fn nesting_and_numbers() {
        let doc = json!({
            "version": "1.0.0",
            "params": {"x": 1, "y": 0.5, "z": 1e20, "w": -2.5e-7, "empty": {}, "none": []},
            "list": [1, "two", {"k": "v", "l": [true, null]}, [3, 4], {}],
            "uuid": "b3e6c1a4-0f0e-4f7e-9d3b-6d1c0a8e2f11",
        });
        let text = to_string(&doc);
        assert_eq!(
            text,
            "version: \"1.0.0\"\nparams:\n  x: 1\n  \"y\": 0.5\n  z: 1.0e+20\n  w: -2.5e-7\n  \
             empty: {}\n  none: []\nlist:\n- 1\n- two\n- k: v\n  l:\n  - true\n  - null\n\
             - - 3\n  - 4\n- {}\nuuid: b3e6c1a4-0f0e-4f7e-9d3b-6d1c0a8e2f11\n"
        );
        let back: Json = serde_norway::from_str(&text).unwrap();
        assert_eq!(back, doc);
    }
}
