//! Query frames to and from the WIT columnar table, and the checks every table a plugin returns
//! must pass before the host trusts it.
//!
//! Columns are typed the way pandas types the frame Superset's post-processing receives: ints
//! without nulls stay int64, ints with nulls and decimals become float64, text goes
//! dictionary-encoded when values repeat (cheap to cross the boundary) and packed otherwise.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDateTime, NaiveTime};
use serde_json::Value as Json;

use super::bindings::types::{Column, ColumnData, Table, Utf8Dict, Utf8Packed};
use crate::engines::{Cell, GenericType};
use crate::query::frame::{Frame, Index};

/// Largest number of rows a plugin may return.
pub const MAX_ROWS: usize = 10_000_000;
/// Largest number of columns a plugin may return.
pub const MAX_COLUMNS: usize = 100_000;

/// The WIT table of a frame (no index: positions label the rows).
pub fn from_frame(frame: &Frame) -> Table {
    let n = frame.rows.len();
    let columns = frame
        .colnames
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let ty = frame
                .coltypes
                .get(i)
                .copied()
                .unwrap_or(GenericType::String);
            column(
                name,
                ty,
                frame.rows.iter().map(|r| r.get(i).unwrap_or(&Cell::Null)),
                n,
            )
        })
        .collect();
    Table {
        num_rows: u32::try_from(n).unwrap_or(u32::MAX),
        columns,
        index: Vec::new(),
    }
}

fn ts_us(t: &NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros()
}

fn bitmap(valid: &[bool]) -> Option<Vec<u8>> {
    if valid.iter().all(|v| *v) {
        return None;
    }
    let mut bits = vec![0u8; valid.len().div_ceil(8)];
    for (i, v) in valid.iter().enumerate() {
        if *v {
            bits[i / 8] |= 1 << (i % 8);
        }
    }
    Some(bits)
}

fn column<'a>(
    name: &str,
    ty: GenericType,
    cells: impl Iterator<Item = &'a Cell>,
    n: usize,
) -> Column {
    let cells: Vec<&Cell> = cells.collect();
    let valid: Vec<bool> = cells.iter().map(|c| !matches!(c, Cell::Null)).collect();
    let present = || cells.iter().filter(|c| !matches!(c, Cell::Null));
    let all = |f: fn(&Cell) -> bool| present().all(|c| f(c));
    let any_present = present().next().is_some();
    let data = if ty == GenericType::Temporal
        || (any_present
            && all(|c| matches!(c, Cell::Timestamp(_) | Cell::TimestampTz(_) | Cell::Date(_))))
    {
        ColumnData::TimestampUs(
            cells
                .iter()
                .map(|c| match c {
                    Cell::Timestamp(t) | Cell::TimestampTz(t) => ts_us(t),
                    Cell::Date(d) => ts_us(&d.and_time(NaiveTime::MIN)),
                    _ => 0,
                })
                .collect(),
        )
    } else if any_present && all(|c| matches!(c, Cell::Bool(_))) {
        ColumnData::Boolean(
            cells
                .iter()
                .map(|c| matches!(c, Cell::Bool(true)))
                .collect(),
        )
    } else if any_present && all(|c| matches!(c, Cell::Int(_))) && valid.iter().all(|v| *v) {
        ColumnData::Int64(
            cells
                .iter()
                .map(|c| if let Cell::Int(i) = c { *i } else { 0 })
                .collect(),
        )
    } else if (any_present
        && all(|c| matches!(c, Cell::Int(_) | Cell::Float(_) | Cell::Decimal(_))))
        || (!any_present && ty == GenericType::Numeric)
    {
        // pandas holds nullable ints and decimals as float64, with NaN for NULL.
        ColumnData::Float64(
            cells
                .iter()
                .map(|c| match c {
                    Cell::Int(i) => *i as f64,
                    Cell::Float(f) => *f,
                    Cell::Decimal(d) => d.parse().unwrap_or(f64::NAN),
                    _ => f64::NAN,
                })
                .collect(),
        )
    } else if !any_present || all(|c| matches!(c, Cell::Text(_) | Cell::Time(_))) {
        let texts: Vec<Option<String>> = cells
            .iter()
            .map(|c| match c {
                Cell::Text(t) => Some(t.clone()),
                Cell::Time(t) => Some(t.format("%H:%M:%S").to_string()),
                _ => None,
            })
            .collect();
        utf8(texts.iter().map(|t| t.as_deref()), n)
    } else {
        // Mixed values (an object column in pandas): each cell as JSON keeps its type.
        ColumnData::Json(
            cells
                .iter()
                .map(|c| crate::query::frame::cell_json(c).to_string())
                .collect(),
        )
    };
    Column {
        name: name.to_owned(),
        data,
        validity: bitmap(&valid),
    }
}

/// Text as a dictionary when values repeat (at most half the rows distinct), packed otherwise.
fn utf8<'a>(values: impl Iterator<Item = Option<&'a str>> + Clone, n: usize) -> ColumnData {
    let mut dict: HashMap<&str, u32> = HashMap::new();
    let mut dictionary = Vec::new();
    let mut codes = Vec::with_capacity(n);
    let mut repeated = true;
    for v in values.clone() {
        let s = v.unwrap_or("");
        let next = dictionary.len() as u32;
        let code = *dict.entry(s).or_insert_with(|| {
            dictionary.push(s.to_owned());
            next
        });
        codes.push(code);
        if dictionary.len() > n / 2 + 1 {
            repeated = false;
            break;
        }
    }
    if repeated {
        return ColumnData::Utf8Dict(Utf8Dict { dictionary, codes });
    }
    let mut offsets = Vec::with_capacity(n + 1);
    let mut data = Vec::new();
    offsets.push(0u32);
    for v in values {
        data.extend_from_slice(v.unwrap_or("").as_bytes());
        offsets.push(u32::try_from(data.len()).unwrap_or(u32::MAX));
    }
    ColumnData::Utf8Packed(Utf8Packed { offsets, data })
}

/// Checks a table a plugin returned: every column as long as `num_rows`, bitmaps of the right
/// size, dictionary codes in range, packed offsets monotonic and in bounds with UTF-8 bytes,
/// JSON cells parseable, and the size caps.
pub fn validate(t: &Table) -> Result<(), String> {
    let n = t.num_rows as usize;
    if n > MAX_ROWS {
        return Err(format!("{n} rows exceed the limit of {MAX_ROWS}"));
    }
    if t.columns.len() > MAX_COLUMNS {
        return Err(format!(
            "{} columns exceed the limit of {MAX_COLUMNS}",
            t.columns.len()
        ));
    }
    for c in t.columns.iter().chain(&t.index) {
        let len = match &c.data {
            ColumnData::Float64(v) => v.len(),
            ColumnData::Int64(v) | ColumnData::TimestampUs(v) => v.len(),
            ColumnData::Boolean(v) => v.len(),
            ColumnData::Utf8(v) | ColumnData::Json(v) => v.len(),
            ColumnData::Utf8Dict(d) => {
                let size = d.dictionary.len();
                if let Some(bad) = d.codes.iter().find(|c| **c as usize >= size) {
                    return Err(format!(
                        "column {:?}: dictionary code {bad} is out of range ({size} entries)",
                        c.name
                    ));
                }
                d.codes.len()
            }
            ColumnData::Utf8Packed(p) => {
                if p.offsets.is_empty() {
                    return Err(format!("column {:?}: packed text has no offsets", c.name));
                }
                if p.offsets.windows(2).any(|w| w[0] > w[1])
                    || p.offsets.last().is_some_and(|l| *l as usize > p.data.len())
                {
                    return Err(format!(
                        "column {:?}: packed text offsets are not monotonic or out of bounds",
                        c.name
                    ));
                }
                if std::str::from_utf8(&p.data).is_err() {
                    return Err(format!(
                        "column {:?}: packed text is not valid UTF-8",
                        c.name
                    ));
                }
                for w in p.offsets.windows(2) {
                    let (a, b) = (w[0] as usize, w[1] as usize);
                    if std::str::from_utf8(&p.data[a..b]).is_err() {
                        return Err(format!(
                            "column {:?}: packed text splits a UTF-8 character",
                            c.name
                        ));
                    }
                }
                p.offsets.len() - 1
            }
        };
        if len != n {
            return Err(format!(
                "column {:?} has {len} values but the table has {n} rows",
                c.name
            ));
        }
        if let Some(bits) = &c.validity
            && bits.len() != n.div_ceil(8)
        {
            return Err(format!(
                "column {:?}: the validity bitmap has {} bytes, {} expected",
                c.name,
                bits.len(),
                n.div_ceil(8)
            ));
        }
        if let ColumnData::Json(v) = &c.data
            && let Some(bad) = v
                .iter()
                .position(|s| serde_json::from_str::<Json>(s).is_err())
        {
            return Err(format!("column {:?}: row {bad} is not JSON", c.name));
        }
    }
    Ok(())
}

fn is_valid(c: &Column, i: usize) -> bool {
    c.validity
        .as_ref()
        .is_none_or(|bits| bits[i / 8] & (1 << (i % 8)) != 0)
}

fn naive(us: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(us).map(|t| t.naive_utc())
}

/// The cell at row `i` of a validated column.
fn cell(c: &Column, i: usize) -> Cell {
    if !is_valid(c, i) {
        return Cell::Null;
    }
    match &c.data {
        ColumnData::Float64(v) => Cell::Float(v[i]),
        ColumnData::Int64(v) => Cell::Int(v[i]),
        ColumnData::Boolean(v) => Cell::Bool(v[i]),
        ColumnData::TimestampUs(v) => naive(v[i]).map_or(Cell::Null, Cell::Timestamp),
        ColumnData::Utf8(v) => Cell::Text(v[i].clone()),
        ColumnData::Utf8Dict(d) => Cell::Text(d.dictionary[d.codes[i] as usize].clone()),
        ColumnData::Utf8Packed(p) => {
            let (a, b) = (p.offsets[i] as usize, p.offsets[i + 1] as usize);
            Cell::Text(String::from_utf8_lossy(&p.data[a..b]).into_owned())
        }
        ColumnData::Json(v) => serde_json::from_str(&v[i]).map_or(Cell::Null, Cell::Json),
    }
}

/// Superset's generic type of a returned column; an all-null column is a string column.
fn generic(c: &Column, n: usize) -> GenericType {
    if (0..n).all(|i| !is_valid(c, i)) {
        return GenericType::String;
    }
    match &c.data {
        ColumnData::Float64(_) | ColumnData::Int64(_) => GenericType::Numeric,
        ColumnData::Boolean(_) => GenericType::Boolean,
        ColumnData::TimestampUs(_) => GenericType::Temporal,
        _ => GenericType::String,
    }
}

/// A validated table as a frame: cells typed from the columns, the index (when the plugin
/// returned one) with its level names, for `indexnames` and the CSV.
pub fn to_frame(t: &Table) -> Frame {
    let n = t.num_rows as usize;
    let colnames = t.columns.iter().map(|c| c.name.clone()).collect();
    let coltypes = t.columns.iter().map(|c| generic(c, n)).collect();
    let rows = (0..n)
        .map(|i| t.columns.iter().map(|c| cell(c, i)).collect())
        .collect();
    let index = (!t.index.is_empty()).then(|| Index {
        names: t.index.iter().map(|l| l.name.clone()).collect(),
        rows: (0..n)
            .map(|i| t.index.iter().map(|l| cell(l, i)).collect())
            .collect(),
    });
    Frame {
        colnames,
        coltypes,
        rows,
        index,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> Frame {
        let ts = |d: u32| {
            chrono::NaiveDate::from_ymd_opt(2021, 1, d)
                .unwrap()
                .and_time(NaiveTime::MIN)
        };
        Frame {
            colnames: vec!["ds".into(), "n".into(), "x".into(), "g".into(), "b".into()],
            coltypes: vec![
                GenericType::Temporal,
                GenericType::Numeric,
                GenericType::Numeric,
                GenericType::String,
                GenericType::Boolean,
            ],
            rows: vec![
                vec![
                    Cell::Timestamp(ts(1)),
                    Cell::Int(1),
                    Cell::Int(3),
                    Cell::Text("a".into()),
                    Cell::Bool(true),
                ],
                vec![
                    Cell::Timestamp(ts(2)),
                    Cell::Int(2),
                    Cell::Null,
                    Cell::Text("a".into()),
                    Cell::Null,
                ],
                vec![
                    Cell::Timestamp(ts(3)),
                    Cell::Int(3),
                    Cell::Decimal("1.50".into()),
                    Cell::Null,
                    Cell::Bool(false),
                ],
            ],
            index: None,
        }
    }

    #[test]
    fn types_columns_like_pandas_and_round_trips() {
        let t = from_frame(&frame());
        assert!(matches!(t.columns[0].data, ColumnData::TimestampUs(_)));
        assert!(matches!(t.columns[1].data, ColumnData::Int64(_)));
        assert!(matches!(t.columns[2].data, ColumnData::Float64(_)));
        assert!(matches!(t.columns[3].data, ColumnData::Utf8Dict(_)));
        assert!(matches!(t.columns[4].data, ColumnData::Boolean(_)));
        assert_eq!(t.columns[2].validity, Some(vec![0b101]));
        validate(&t).unwrap();
        let back = to_frame(&t);
        assert_eq!(back.rows[2][2], Cell::Float(1.5));
        assert_eq!(back.rows[1][2], Cell::Null);
        assert_eq!(back.rows[2][3], Cell::Null);
        assert_eq!(back.rows[0][0], frame().rows[0][0]);
        assert_eq!(back.coltypes, frame().coltypes);
    }

    #[test]
    fn refuses_inconsistent_tables() {
        let mut t = from_frame(&frame());
        t.num_rows = 4;
        assert!(validate(&t).unwrap_err().contains("has 3 values"));
        let mut t = from_frame(&frame());
        t.columns[0].validity = Some(vec![1, 2]);
        assert!(validate(&t).unwrap_err().contains("bitmap"));
        let mut t = from_frame(&frame());
        t.columns[3].data = ColumnData::Utf8Packed(Utf8Packed {
            offsets: vec![0, 1, 2, 3],
            data: vec![b'a', 0xff, b'c'],
        });
        assert!(validate(&t).unwrap_err().contains("UTF-8"));
        let mut t = from_frame(&frame());
        t.columns[3].data = ColumnData::Utf8Dict(Utf8Dict {
            dictionary: vec!["a".into()],
            codes: vec![0, 1, 0],
        });
        assert!(validate(&t).unwrap_err().contains("out of range"));
    }
}
