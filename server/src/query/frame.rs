//! Query results as Superset returns them: `colnames`, `coltypes` (pandas' inferred generic
//! types, then Superset's dataset rules), `data` records (datetimes as epoch-ms floats, NaN and
//! infinities as null, decimals as floats) and CSV (pandas' `to_csv` text: Python float repr,
//! `True`/`False`, empty NULLs, decimals with their scale, date-only timestamps when every
//! value is at midnight, a non-default index as leading columns).

use std::collections::{BTreeSet, HashMap};

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use serde_json::{Map, Number, Value as Json};

use super::Datasource;
use crate::engines::{Cell, GenericType, ResultColumn, ResultSet};

/// A result ready for rendering: cells normalised, columns typed.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// Column labels.
    pub colnames: Vec<String>,
    /// Generic type of each column.
    pub coltypes: Vec<GenericType>,
    /// Rows.
    pub rows: Vec<Vec<Cell>>,
    /// Row labels left by post-processing; `None` is pandas' default `RangeIndex` (positions
    /// 0, 1, 2, ...).
    pub index: Option<Index>,
}

/// A pandas index other than the default `RangeIndex`, as post-processing left it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Index {
    /// The name of each level (`""` for an unnamed one).
    pub names: Vec<String>,
    /// Each row's label, one cell per level.
    pub rows: Vec<Vec<Cell>>,
}

impl Index {
    /// Superset's `indexnames` (`list(df.index)`): each row's label, a list when there are
    /// several levels.
    pub fn labels(&self) -> Vec<Json> {
        self.rows
            .iter()
            .map(|row| match row.as_slice() {
                [one] => cell_json(one),
                levels => Json::Array(levels.iter().map(cell_json).collect()),
            })
            .collect()
    }
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

/// A time cell from epoch milliseconds (what chart data returns) or ISO 8601 text.
fn time_cell(v: &Json) -> Option<Cell> {
    match v {
        Json::Number(n) => {
            let ms = n.as_f64()?;
            chrono::DateTime::from_timestamp_micros((ms * 1000.0).round() as i64)
                .map(|t| Cell::Timestamp(t.naive_utc()))
        }
        Json::String(s) => chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| Cell::Timestamp(t.naive_utc()))
            .ok()
            // Naive texts are parsed by the frame, as the server parses SQLite's.
            .or_else(|| Some(Cell::Text(s.clone()))),
        _ => None,
    }
}

/// A cell of a JSON value as a query would have typed it.
fn json_cell(v: &Json) -> Cell {
    match v {
        Json::Null => Cell::Null,
        Json::Bool(b) => Cell::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Cell::Text(s.clone()),
        other => Cell::Text(other.to_string()),
    }
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

    /// A frame from JSON records, the `data` of a chart-data answer: a list of objects, one
    /// per row. Columns come in the order `columns` names them (chart data's `colnames`), then
    /// in the order they first appear; a record without a column holds null there. Values
    /// type the columns as the server types query results (numbers, booleans, text; other
    /// JSON as its text); `temporal` columns hold epoch milliseconds (what chart data returns)
    /// or ISO 8601 text. Used where rows come back from a client: `liteset plugin test` and
    /// the app's chart drawing.
    pub fn from_records(
        records: &Json,
        columns: &[String],
        temporal: &[String],
    ) -> Result<Frame, String> {
        let rows = records
            .as_array()
            .ok_or("expected a JSON list of records, [{\"column\": value, ...}]")?;
        let mut names: Vec<String> = columns.to_vec();
        for (i, r) in rows.iter().enumerate() {
            let obj = r
                .as_object()
                .ok_or_else(|| format!("record {i} is not an object"))?;
            for k in obj.keys() {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        if let Some(t) = temporal.iter().find(|t| !names.contains(t)) {
            return Err(format!("temporal column {t}: no such column"));
        }
        let temporal: BTreeSet<String> = temporal.iter().cloned().collect();
        let mut cells = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            let obj = r.as_object();
            let mut row = Vec::with_capacity(names.len());
            for name in &names {
                let v = obj.and_then(|o| o.get(name)).unwrap_or(&Json::Null);
                row.push(if temporal.contains(name) && !v.is_null() {
                    time_cell(v).ok_or_else(|| {
                        format!("record {i}: {name} is neither epoch ms nor a time text")
                    })?
                } else {
                    json_cell(v)
                });
            }
            cells.push(row);
        }
        let rs = ResultSet {
            columns: names
                .into_iter()
                .map(|name| ResultColumn {
                    name,
                    type_name: String::new(),
                })
                .collect(),
            rows: cells,
        };
        Ok(Frame::new(rs, &temporal))
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

    /// Superset's `extract_dataframe_dtypes` on the frame an answer reports (after
    /// post-processing, or the rows as fetched when there is none): a label naming an
    /// `is_dttm` dataset column is temporal whatever its values; a column whose values are
    /// all null (NaN included, and every column of a 0-row result) has nothing for pandas to
    /// infer from and takes [`Datasource::all_null_type`]; any other keeps the type inferred
    /// from its values (nulls skipped, so a numeric column with some NULLs stays numeric).
    pub fn apply_dataset_types(&mut self, ds: &Datasource) {
        for (i, name) in self.colnames.iter().enumerate() {
            let typed = if ds.column(name).is_some_and(|c| c.is_dttm) {
                GenericType::Temporal
            } else if self.rows.iter().all(|r| r.get(i).is_none_or(is_na)) {
                ds.all_null_type(name)
            } else {
                continue;
            };
            if let Some(t) = self.coltypes.get_mut(i) {
                *t = typed;
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

    /// pandas' `to_csv` text as Superset's `get_data` writes it, with `headers` as the
    /// column headers: a non-default index (`include_index = not isinstance(df.index,
    /// pd.RangeIndex)`) comes first, headed by its level names; headers and text cells (not
    /// the index) are escaped against spreadsheet formulas as `df_to_escaped_csv` does (see
    /// [`escape_value`]). Every CSV the server writes comes from here.
    pub fn csv(&self, headers: &[String]) -> String {
        let index = self.index.as_ref();
        let mut out = String::new();
        let header: Vec<String> = index
            .into_iter()
            .flat_map(|ix| ix.names.iter().cloned())
            .chain(headers.iter().map(|h| escape_value(h).into_owned()))
            .collect();
        csv_line(&mut out, &header);
        let level_styles: Vec<DatetimeStyle> = index.map_or_else(Vec::new, |ix| {
            (0..ix.names.len())
                .map(|l| DatetimeStyle::of(ix.rows.iter().filter_map(|r| r.get(l))))
                .collect()
        });
        let styles: Vec<DatetimeStyle> = (0..self.colnames.len())
            .map(|i| DatetimeStyle::of(self.rows.iter().filter_map(|r| r.get(i))))
            .collect();
        let mut fields = Vec::new();
        for (r, row) in self.rows.iter().enumerate() {
            fields.clear();
            if let Some(labels) = index.and_then(|ix| ix.rows.get(r)) {
                fields.extend(labels.iter().enumerate().map(|(l, c)| {
                    csv_cell(c, level_styles.get(l).copied().unwrap_or_default(), false)
                }));
            }
            fields.extend(
                row.iter()
                    .enumerate()
                    .map(|(i, c)| csv_cell(c, styles.get(i).copied().unwrap_or_default(), true)),
            );
            csv_line(&mut out, &fields);
        }
        out
    }
}

/// pandas' missing value test (`isna`): NULL, and NaN.
fn is_na(c: &Cell) -> bool {
    match c {
        Cell::Null => true,
        Cell::Float(f) => f.is_nan(),
        _ => false,
    }
}

/// How pandas prints a naive datetime column (`format_array_from_datetime` without a format):
/// dates only when every value is at midnight, else to the finest resolution any value needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
enum DatetimeStyle {
    #[default]
    Dates,
    Seconds,
    Millis,
    Micros,
    Nanos,
}

impl DatetimeStyle {
    fn of<'a>(cells: impl Iterator<Item = &'a Cell>) -> DatetimeStyle {
        let mut style = DatetimeStyle::Dates;
        let mut all_midnight = true;
        for c in cells {
            let Cell::Timestamp(t) = c else { continue };
            if t.time() == NaiveTime::MIN {
                continue;
            }
            all_midnight = false;
            let ns = t.nanosecond();
            let needed = if ns % 1_000 != 0 {
                DatetimeStyle::Nanos
            } else if ns % 1_000_000 != 0 {
                DatetimeStyle::Micros
            } else if ns != 0 {
                DatetimeStyle::Millis
            } else {
                DatetimeStyle::Seconds
            };
            style = style.max(needed);
        }
        if all_midnight {
            DatetimeStyle::Dates
        } else {
            style.max(DatetimeStyle::Seconds)
        }
    }

    fn format(self, t: &NaiveDateTime) -> String {
        let f = match self {
            DatetimeStyle::Dates => "%Y-%m-%d",
            DatetimeStyle::Seconds => "%Y-%m-%d %H:%M:%S",
            DatetimeStyle::Millis => "%Y-%m-%d %H:%M:%S%.3f",
            DatetimeStyle::Micros => "%Y-%m-%d %H:%M:%S%.6f",
            DatetimeStyle::Nanos => "%Y-%m-%d %H:%M:%S%.9f",
        };
        t.format(f).to_string()
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

/// One cell as pandas writes it; `escape` is false for index labels, which
/// `df_to_escaped_csv` leaves alone.
fn csv_cell(c: &Cell, style: DatetimeStyle, escape: bool) -> String {
    let text = |t: &str| {
        if escape {
            escape_value(t).into_owned()
        } else {
            t.to_owned()
        }
    };
    match c {
        Cell::Null => String::new(),
        Cell::Bool(b) => if *b { "True" } else { "False" }.into(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) if f.is_nan() => String::new(),
        Cell::Float(f) => liteset_pyrepr::float(*f),
        Cell::Decimal(d) => d.clone(),
        // Python strings in pandas (Superset's result set stringifies JSON values too); numbers,
        // booleans and dates are not strings there, so `-3` as a number is never escaped.
        Cell::Text(t) => text(t),
        Cell::Timestamp(t) => style.format(t),
        // tz-aware values print one by one (`str(Timestamp)`): a fraction only when the value
        // has one, six digits, nine with nanoseconds.
        Cell::TimestampTz(t) => {
            let ns = t.nanosecond();
            let f = if ns % 1_000 != 0 {
                "%Y-%m-%d %H:%M:%S%.9f+00:00"
            } else if ns != 0 {
                "%Y-%m-%d %H:%M:%S%.6f+00:00"
            } else {
                "%Y-%m-%d %H:%M:%S+00:00"
            };
            t.format(f).to_string()
        }
        Cell::Date(d) => d.format("%Y-%m-%d").to_string(),
        Cell::Time(t) => t.format("%H:%M:%S").to_string(),
        Cell::Json(v) => text(&v.to_string()),
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

/// One record as Python's csv writer writes it under pandas' `to_csv(escapechar="\\")`.
fn csv_line(out: &mut String, fields: &[String]) {
    // A record of one empty field is quoted, or it would read back as no field at all.
    let lone = fields.len() == 1;
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        csv_field(out, f, lone);
    }
    out.push('\n');
}

/// Python 3.11's csv writer with minimal quoting, `"` doubled and `\` as the escape
/// character: the escape character is itself escaped, so every backslash is doubled, in quoted
/// fields too; a separator, quote or line break quotes the field.
fn csv_field(out: &mut String, f: &str, lone: bool) {
    let quoted = f.contains([',', '"', '\n', '\r']) || (lone && f.is_empty());
    if quoted {
        out.push('"');
    }
    for c in f.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\"\""),
            c => out.push(c),
        }
    }
    if quoted {
        out.push('"');
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

    fn ts(d: u32, h: u32, m: u32, s: u32, nanos: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2020, 1, d)
            .and_then(|d| d.and_hms_nano_opt(h, m, s, nanos))
            .expect("timestamp")
    }

    fn frame(colnames: &[&str], rows: Vec<Vec<Cell>>) -> Frame {
        let rs = ResultSet {
            columns: colnames
                .iter()
                .map(|n| ResultColumn {
                    name: (*n).into(),
                    type_name: String::new(),
                })
                .collect(),
            rows,
        };
        Frame::new(rs, &BTreeSet::new())
    }

    fn dataset() -> Datasource {
        Datasource::for_tests(
            &[
                ("i", "INTEGER", false),
                ("v", "VARCHAR(10)", false),
                ("d", "DOUBLE PRECISION", false),
                ("b", "BOOLEAN", false),
                ("t", "TIMESTAMP WITHOUT TIME ZONE", false),
                ("r", "REAL", false),
                ("ds", "TEXT", true),
            ],
            &[("total", "SUM(x)"), ("top", "MAX(x)")],
        )
    }

    /// `extract_dataframe_dtypes`: all-null columns (and every column of a 0-row result) by
    /// the dataset's SQL type through `TYPE_MAPPING`, saved metrics by their expression,
    /// other labels as strings; `is_dttm` columns temporal by label; others inferred with
    /// nulls skipped.
    #[test]
    fn dataset_types_follow_extract_dataframe_dtypes() {
        let labels = [
            "i", "v", "d", "b", "t", "r", "ds", "total", "top", "other", "n",
        ];
        let ds = dataset();
        // No rows: every column is all null.
        let mut empty = frame(&labels, Vec::new());
        empty.apply_dataset_types(&ds);
        assert_eq!(empty.coltype_codes(), [0, 1, 0, 3, 2, 1, 2, 0, 1, 1, 1]);

        // Rows of NULLs (NaN too), except `n`, numeric with a NULL, and `ds`, text values of
        // an `is_dttm` column; `i` holds text where the dataset says INTEGER, and non-null
        // values win over the dataset's type.
        let nulls = |last: Cell, ds: Cell| {
            let mut row = vec![Cell::Null; labels.len()];
            row[2] = Cell::Float(f64::NAN);
            row[6] = ds;
            row[10] = last;
            row
        };
        let mut f = frame(
            &labels,
            vec![
                nulls(Cell::Null, Cell::Text("a".into())),
                nulls(Cell::Int(3), Cell::Null),
            ],
        );
        f.apply_dataset_types(&ds);
        assert_eq!(f.coltype_codes(), [0, 1, 0, 3, 2, 1, 2, 0, 1, 1, 0]);
        let mut texts = frame(&["i"], vec![vec![Cell::Text("x".into())]]);
        texts.apply_dataset_types(&ds);
        assert_eq!(texts.coltype_codes(), [1]);
    }

    /// Python 3.11's csv writer with `escapechar="\\"`: backslashes doubled, quoted or not;
    /// a lone empty field quoted.
    #[test]
    fn csv_doubles_backslashes_and_quotes_a_lone_empty_field() {
        let f = frame(
            &["p"],
            vec![
                vec![Cell::Text(r"C:\tmp".into())],
                vec![Cell::Text(r"=a|b\c".into())],
                vec![Cell::Text(r"a\b,c".into())],
                vec![Cell::Text(r#"q"\"#.into())],
                vec![Cell::Null],
                vec![Cell::Text(String::new())],
            ],
        );
        assert_eq!(
            f.csv(&[r"h\1".to_owned()]),
            "h\\\\1\nC:\\\\tmp\n'=a\\\\|b\\\\c\n\"a\\\\b,c\"\n\"q\"\"\\\\\"\n\"\"\n\"\"\n"
        );
        // With more than one field, an empty one stays empty.
        let two = frame(&["a", "b"], vec![vec![Cell::Null, Cell::Null]]);
        assert_eq!(two.csv(&two.colnames), "a,b\n,\n");
    }

    /// pandas prints a naive datetime column to the finest resolution any of its values
    /// needs: whole seconds, milliseconds (3 digits), microseconds (6), nanoseconds (9); dates
    /// only when all are at midnight.
    #[test]
    fn csv_datetime_precision_per_column() {
        let f = frame(
            &["dates", "secs", "ms", "us", "ns"],
            vec![
                vec![
                    Cell::Timestamp(ts(1, 0, 0, 0, 0)),
                    Cell::Timestamp(ts(1, 0, 0, 0, 0)),
                    Cell::Timestamp(ts(1, 0, 0, 0, 0)),
                    Cell::Timestamp(ts(1, 10, 30, 0, 500_000_000)),
                    Cell::Timestamp(ts(1, 10, 30, 0, 1)),
                ],
                vec![
                    Cell::Timestamp(ts(2, 0, 0, 0, 0)),
                    Cell::Timestamp(ts(2, 12, 30, 5, 0)),
                    Cell::Timestamp(ts(2, 12, 30, 5, 120_000_000)),
                    Cell::Timestamp(ts(2, 12, 30, 5, 123_456_000)),
                    Cell::Null,
                ],
            ],
        );
        assert_eq!(
            f.csv(&f.colnames),
            "dates,secs,ms,us,ns\n\
             2020-01-01,2020-01-01 00:00:00,2020-01-01 00:00:00.000,2020-01-01 10:30:00.500000,2020-01-01 10:30:00.000000001\n\
             2020-01-02,2020-01-02 12:30:05,2020-01-02 12:30:05.120,2020-01-02 12:30:05.123456,\n"
        );
    }

    /// The ECharts time series export: rows (2020-01-01,a,10), (2020-01-01,b,20),
    /// (2020-01-02,a,30) of `ds`, `grp`, `SUM(x)`, pivoted by mean (floats, NaN where a group
    /// has no row), renamed (`truncate_metric`) and flattened (so a RangeIndex), as the
    /// pipeline hands the frame over.
    #[test]
    fn csv_of_a_pivoted_time_series() {
        let pivoted = |a: &str, b: &str| Frame {
            colnames: vec!["ds".into(), a.into(), b.into()],
            coltypes: vec![
                GenericType::Temporal,
                GenericType::Numeric,
                GenericType::Numeric,
            ],
            rows: vec![
                vec![
                    Cell::Timestamp(ts(1, 0, 0, 0, 0)),
                    Cell::Float(10.0),
                    Cell::Float(20.0),
                ],
                vec![
                    Cell::Timestamp(ts(2, 0, 0, 0, 0)),
                    Cell::Float(30.0),
                    Cell::Float(f64::NAN),
                ],
            ],
            index: None,
        };
        let f = pivoted("a", "b");
        assert_eq!(
            f.csv(&f.colnames),
            "ds,a,b\n2020-01-01,10.0,20.0\n2020-01-02,30.0,\n"
        );
        let f = pivoted("SUM(x), a", "SUM(x), b");
        assert_eq!(
            f.csv(&f.colnames),
            "ds,\"SUM(x), a\",\"SUM(x), b\"\n2020-01-01,10.0,20.0\n2020-01-02,30.0,\n"
        );
    }

    /// A non-RangeIndex is written first (`index=True`), headed by the level names (empty when
    /// unnamed), its labels printed like cells but not formula-escaped.
    #[test]
    fn csv_writes_a_non_range_index() {
        let f = Frame {
            colnames: vec!["SUM(x)".into(), "g".into()],
            coltypes: vec![GenericType::Numeric, GenericType::String],
            rows: vec![
                vec![Cell::Float(10.0), Cell::Text("=x".into())],
                vec![Cell::Float(30.0), Cell::Text("y".into())],
            ],
            index: Some(Index {
                names: vec!["ds".into(), String::new()],
                rows: vec![
                    vec![Cell::Timestamp(ts(1, 0, 0, 0, 0)), Cell::Text("=x".into())],
                    vec![Cell::Timestamp(ts(2, 0, 0, 0, 0)), Cell::Int(2)],
                ],
            }),
        };
        assert_eq!(
            f.csv(&f.colnames),
            "ds,,SUM(x),g\n2020-01-01,=x,10.0,'=x\n2020-01-02,2,30.0,y\n"
        );
        assert_eq!(
            serde_json::to_string(&f.index.as_ref().map(Index::labels)).expect("json"),
            r#"[[1577836800000.0,"=x"],[1577923200000.0,2]]"#
        );
    }
}
