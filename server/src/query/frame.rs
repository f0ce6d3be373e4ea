//! Query results as Superset returns them: `colnames`, `coltypes` (pandas' inferred generic
//! types), `data` records (datetimes as epoch-ms floats, NaN and infinities as null, decimals
//! as floats) and CSV (pandas' `to_csv` text: Python float repr, `True`/`False`, empty NULLs,
//! decimals with their scale, date-only timestamps when every value is at midnight).

use std::collections::{BTreeSet, HashMap};

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use serde_json::{Map, Number, Value as Json};

use crate::engines::{Cell, GenericType, ResultSet};

/// A result ready for rendering: cells normalised, columns typed.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// Column labels.
    pub colnames: Vec<String>,
    /// Generic type of each column.
    pub coltypes: Vec<GenericType>,
    /// Rows.
    pub rows: Vec<Vec<Cell>>,
    /// Row labels left by post-processing (`indexnames`); `None` means positions 0, 1, 2, ...
    pub index: Option<Vec<Json>>,
}

/// Parses the datetime texts SQLite and virtual datasets hand back for temporal columns.
fn parse_datetime(s: &str) -> Option<NaiveDateTime> {
    let s = s.trim();
    for f in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(s, f) {
            return Some(dt);
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .map(|d| d.and_time(NaiveTime::MIN))
}

impl Frame {
    /// Types the columns of `rs`: a label in `temporal` (or a temporal dataset column) is
    /// normalised to timestamps and typed temporal; others are inferred from their values
    /// (nulls skipped; an all-null column is a string column, as pandas infers it).
    pub fn new(rs: ResultSet, temporal: &BTreeSet<String>) -> Frame {
        let colnames: Vec<String> = rs.columns.iter().map(|c| c.name.clone()).collect();
        let mut rows = rs.rows;
        let mut coltypes = Vec::with_capacity(colnames.len());
        for (i, name) in colnames.iter().enumerate() {
            if temporal.contains(name) {
                for row in &mut rows {
                    if let Some(cell) = row.get_mut(i) {
                        let replaced = match cell {
                            Cell::Text(t) => parse_datetime(t).map(Cell::Timestamp),
                            Cell::Date(d) => Some(Cell::Timestamp(d.and_time(NaiveTime::MIN))),
                            _ => None,
                        };
                        if let Some(r) = replaced {
                            *cell = r;
                        }
                    }
                }
                coltypes.push(GenericType::Temporal);
                continue;
            }
            coltypes.push(infer(rows.iter().filter_map(|r| r.get(i))));
        }
        Frame {
            colnames,
            coltypes,
            rows,
            index: None,
        }
    }

    /// Rows as `{label: value}` records.
    pub fn records(&self) -> Vec<Json> {
        self.rows
            .iter()
            .map(|row| {
                let mut obj = Map::with_capacity(self.colnames.len());
                for (name, cell) in self.colnames.iter().zip(row) {
                    obj.insert(name.clone(), cell_json(cell));
                }
                Json::Object(obj)
            })
            .collect()
    }

    /// An all-null column takes its type from the dataset column of that name (`dataset_type`),
    /// as Superset's `extract_dataframe_dtypes` does after post-processing.
    pub fn retype_all_null(&mut self, dataset_type: impl Fn(&str) -> Option<GenericType>) {
        for (i, name) in self.colnames.iter().enumerate() {
            let all_null = self
                .rows
                .iter()
                .all(|r| matches!(r.get(i), Some(Cell::Null) | None));
            if all_null && let Some(t) = dataset_type(name) {
                self.coltypes[i] = t;
            }
        }
    }

    /// Superset's label map of the frame's own columns (each label split on unescaped
    /// `", "`), after which the labels lose their separator escapes (`\,` back to `,`), as
    /// `get_df_payload` does.
    pub fn finish_labels(&mut self) -> Map<String, Json> {
        let mut label_map = Map::new();
        for c in &mut self.colnames {
            let parts: Vec<Json> = split_label(c)
                .into_iter()
                .map(|p| Json::String(unescape_separator(&p)))
                .collect();
            *c = unescape_separator(c);
            label_map.insert(c.clone(), Json::Array(parts));
        }
        label_map
    }

    /// `coltypes` as integers.
    pub fn coltype_codes(&self) -> Vec<u8> {
        self.coltypes.iter().map(|t| t.code()).collect()
    }

    /// pandas' `to_csv(index=False)` text with `headers` as the header row, headers and text
    /// cells escaped against spreadsheet formulas as Superset's `df_to_escaped_csv` does (see
    /// [`escape_value`]). Every CSV the server writes comes from here.
    pub fn csv(&self, headers: &[String]) -> String {
        let mut out = String::new();
        let line = |out: &mut String, fields: &mut dyn Iterator<Item = String>| {
            let mut first = true;
            for f in fields {
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(&csv_field(&f));
            }
            out.push('\n');
        };
        line(
            &mut out,
            &mut headers.iter().map(|h| escape_value(h).into_owned()),
        );
        // pandas prints a naive datetime column as dates when every value is at midnight,
        // and with microseconds when any value has them.
        let styles: Vec<(bool, bool)> = (0..self.colnames.len())
            .map(|i| {
                let stamps = self.rows.iter().filter_map(|r| match r.get(i) {
                    Some(Cell::Timestamp(t)) => Some(t),
                    _ => None,
                });
                let mut all_midnight = true;
                let mut fraction = false;
                for t in stamps {
                    if t.time() != NaiveTime::MIN {
                        all_midnight = false;
                    }
                    if t.nanosecond() != 0 {
                        fraction = true;
                    }
                }
                (all_midnight, fraction)
            })
            .collect();
        for row in &self.rows {
            line(
                &mut out,
                &mut row
                    .iter()
                    .enumerate()
                    .map(|(i, c)| csv_cell(c, styles.get(i).copied().unwrap_or_default())),
            );
        }
        out
    }
}

/// pandas' `infer_dtype` (nulls skipped) mapped to Superset's generic types.
fn infer<'a>(cells: impl Iterator<Item = &'a Cell>) -> GenericType {
    let mut kind: Option<GenericType> = None;
    for c in cells {
        let k = match c {
            Cell::Null => continue,
            Cell::Float(f) if f.is_nan() => continue,
            Cell::Bool(_) => GenericType::Boolean,
            Cell::Int(_) | Cell::Float(_) | Cell::Decimal(_) => GenericType::Numeric,
            Cell::Timestamp(_) | Cell::TimestampTz(_) | Cell::Date(_) => GenericType::Temporal,
            Cell::Text(_) | Cell::Time(_) | Cell::Json(_) => GenericType::String,
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => return GenericType::String,
            _ => {}
        }
    }
    kind.unwrap_or(GenericType::String)
}

fn epoch_ms(t: &NaiveDateTime) -> f64 {
    t.and_utc().timestamp_millis() as f64
}

/// One cell as Superset's JSON encoder writes it.
pub fn cell_json(c: &Cell) -> Json {
    match c {
        Cell::Null => Json::Null,
        Cell::Bool(b) => Json::Bool(*b),
        Cell::Int(i) => Json::from(*i),
        Cell::Float(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Cell::Decimal(d) => d
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or(Json::Null, Json::Number),
        Cell::Text(t) => Json::String(t.clone()),
        Cell::Timestamp(t) | Cell::TimestampTz(t) => {
            Number::from_f64(epoch_ms(t)).map_or(Json::Null, Json::Number)
        }
        Cell::Date(d) => {
            Number::from_f64(epoch_ms(&d.and_time(NaiveTime::MIN))).map_or(Json::Null, Json::Number)
        }
        Cell::Time(t) => Json::String(t.format("%H:%M:%S").to_string()),
        Cell::Json(v) => v.clone(),
    }
}

fn csv_cell(c: &Cell, (all_midnight, fraction): (bool, bool)) -> String {
    match c {
        Cell::Null => String::new(),
        Cell::Bool(b) => if *b { "True" } else { "False" }.into(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) if f.is_nan() => String::new(),
        Cell::Float(f) => liteset_pyrepr::float(*f),
        Cell::Decimal(d) => d.clone(),
        // Python strings in pandas (Superset's result set stringifies JSON values too); numbers,
        // booleans and dates are not strings there, so `-3` as a number is never escaped.
        Cell::Text(t) => escape_value(t).into_owned(),
        Cell::Timestamp(t) => {
            if all_midnight {
                t.format("%Y-%m-%d").to_string()
            } else if fraction {
                t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
            } else {
                t.format("%Y-%m-%d %H:%M:%S").to_string()
            }
        }
        Cell::TimestampTz(t) => {
            if t.nanosecond() != 0 {
                t.format("%Y-%m-%d %H:%M:%S%.6f+00:00").to_string()
            } else {
                t.format("%Y-%m-%d %H:%M:%S+00:00").to_string()
            }
        }
        Cell::Date(d) => d.format("%Y-%m-%d").to_string(),
        Cell::Time(t) => t.format("%H:%M:%S").to_string(),
        Cell::Json(v) => escape_value(&v.to_string()).into_owned(),
    }
}

/// Superset's `escape_value` (`superset/utils/csv.py`), against CSV formula injection: a value
/// starting with one of `-@+|=%`, or with whitespace or two double quotes before one of them,
/// gets a leading `'` and its pipes become `\|`; negative numbers written as text (`-3`,
/// `-1.5`: Superset's `^-[0-9.]+$`) are left alone.
pub fn escape_value(value: &str) -> std::borrow::Cow<'_, str> {
    if needs_escaping(value) && !is_negative_number(value) {
        std::borrow::Cow::Owned(format!("'{}", value.replace('|', "\\|")))
    } else {
        std::borrow::Cow::Borrowed(value)
    }
}

/// The characters Superset's `problematic_chars_re` looks for.
fn is_formula_start(c: char) -> bool {
    matches!(c, '-' | '@' | '+' | '|' | '=' | '%')
}

/// `^(?:"{2}|\s{1,})(?=[\-@+|=%])|^[\-@+|=%]` with Python's `re` semantics.
fn needs_escaping(value: &str) -> bool {
    let rest = if let Some(rest) = value.strip_prefix("\"\"") {
        rest
    } else {
        value.trim_start_matches(py_isspace)
    };
    rest.starts_with(is_formula_start)
}

/// Python's `\s` on `str`: Unicode whitespace, which also counts the separators U+001C..U+001F.
fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `^-[0-9.]+$` with Python's `$`, which also matches before a final newline.
fn is_negative_number(value: &str) -> bool {
    let body = value.strip_suffix('\n').unwrap_or(value);
    body.strip_prefix('-').is_some_and(|digits| {
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    })
}

/// Python's csv module, minimal quoting.
fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_owned()
    }
}

/// Headers for CSV: verbose names where the dataset has them.
pub fn csv_headers(colnames: &[String], verbose: &HashMap<String, String>) -> Vec<String> {
    colnames
        .iter()
        .map(|c| verbose.get(c).cloned().unwrap_or_else(|| c.clone()))
        .collect()
}

/// Splits a flattened column label on `", "` not preceded by a backslash.
pub fn split_label(label: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = label.chars().peekable();
    let mut prev = '\0';
    while let Some(c) = chars.next() {
        if c == ',' && prev != '\\' && chars.peek() == Some(&' ') {
            chars.next();
            out.push(std::mem::take(&mut cur));
            prev = ' ';
            continue;
        }
        cur.push(c);
        prev = c;
    }
    out.push(cur);
    out
}

/// Superset's `unescape_separator`.
pub fn unescape_separator(label: &str) -> String {
    label.replace("\\,", ",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::ResultColumn;

    #[test]
    fn values_are_escaped_like_superset() {
        // Superset's own cases (tests/unit_tests/utils/csv_tests.py), then the edges of its
        // regular expressions.
        for (given, escaped) in [
            ("value", "value"),
            ("-10", "-10"),
            ("@value", "'@value"),
            ("+value", "'+value"),
            ("-value", "'-value"),
            ("=value", "'=value"),
            ("|value", r"'\|value"),
            ("%value", "'%value"),
            ("=cmd|' /C calc'!A0", r"'=cmd\|' /C calc'!A0"),
            ("\"\"=10+2", "'\"\"=10+2"),
            (" =10+2", "' =10+2"),
            ("\t=x", "'\t=x"),
            ("\r=x", "'\r=x"),
            ("\u{1f}=x", "'\u{1f}=x"),
            ("\u{a0}+x", "'\u{a0}+x"),
            ("-3", "-3"),
            ("-1.5", "-1.5"),
            ("-3\n", "-3\n"),
            (" -3", "' -3"),
            ("-3e5", "'-3e5"),
            ("-", "'-"),
            ("\"\"\"=x", "\"\"\"=x"),
            ("\"=x", "\"=x"),
            ("\tx", "\tx"),
            ("a=b", "a=b"),
            ("", ""),
        ] {
            assert_eq!(escape_value(given), escaped, "{given:?}");
        }
    }

    #[test]
    fn csv_escapes_headers_and_text_but_not_numbers() {
        let rs = ResultSet {
            columns: ["=h", "n", "t"]
                .iter()
                .map(|n| ResultColumn {
                    name: (*n).into(),
                    type_name: String::new(),
                })
                .collect(),
            rows: vec![
                vec![
                    Cell::Text("=HYPERLINK(\"http://x\")".into()),
                    Cell::Int(-3),
                    Cell::Text("-3".into()),
                ],
                vec![
                    Cell::Text("@cmd".into()),
                    Cell::Decimal("-2.50".into()),
                    Cell::Text("-2+3".into()),
                ],
            ],
        };
        let f = Frame::new(rs, &BTreeSet::new());
        assert_eq!(
            f.csv(&f.colnames),
            "'=h,n,t\n\"'=HYPERLINK(\"\"http://x\"\")\",-3,-3\n'@cmd,-2.50,'-2+3\n"
        );
    }

    #[test]
    fn types_and_records() {
        let ts = NaiveDate::from_ymd_opt(2024, 1, 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .expect("date");
        let rs = ResultSet {
            columns: ["a", "b", "c", "d", "e"]
                .iter()
                .map(|n| ResultColumn {
                    name: (*n).into(),
                    type_name: String::new(),
                })
                .collect(),
            rows: vec![
                vec![
                    Cell::Int(1),
                    Cell::Null,
                    Cell::Text("2024-01-01 00:00:00".into()),
                    Cell::Decimal("43320.70".into()),
                    Cell::Bool(true),
                ],
                vec![
                    Cell::Float(f64::NAN),
                    Cell::Null,
                    Cell::Timestamp(ts),
                    Cell::Null,
                    Cell::Null,
                ],
            ],
        };
        let temporal = BTreeSet::from(["c".to_owned()]);
        let f = Frame::new(rs, &temporal);
        assert_eq!(f.coltype_codes(), vec![0, 1, 2, 0, 3]);
        assert_eq!(
            serde_json::to_string(&f.records()).expect("json"),
            r#"[{"a":1,"b":null,"c":1704067200000.0,"d":43320.7,"e":true},{"a":null,"b":null,"c":1704067200000.0,"d":null,"e":null}]"#
        );
        assert_eq!(
            f.csv(&f.colnames),
            "a,b,c,d,e\n1,,2024-01-01,43320.70,True\n,,2024-01-01,,\n"
        );
    }
}
