//! `time_offsets` (time comparison): each offset re-runs the query over the time range shifted
//! back by the offset, moves the results' time axis forward by the same offset, and left-joins
//! them onto the main result, as Superset's `processing_time_offsets` does. The offset metrics
//! become columns named `<metric>__<offset>`; the post-processing that follows (usually a pivot)
//! sees one frame.

use std::collections::HashMap;

use super::QueryError;
use super::context::QueryObject;
use super::frame::Frame;
use super::timerange;
use crate::engines::{Cell, GenericType};

/// The query of one offset: the same query over the shifted range, with the default row limit
/// (Superset drops the chart's limit for offset queries), no post-processing and no further
/// offsets.
pub fn offset_query(q: &QueryObject, offset: &str) -> QueryObject {
    let mut o = q.clone();
    o.time_shift = Some(offset.to_owned());
    o.time_offsets.clear();
    o.post_processing.clear();
    o.row_limit = None;
    o
}

/// Moves a timestamp forward by `offset` (`"1 year ago"` moves it one year later), undoing the
/// shift of the offset query so its rows line up with the main result's.
fn forward(t: chrono::NaiveDateTime, offset: &str) -> Result<chrono::NaiveDateTime, QueryError> {
    let phrase = offset.trim();
    let inverse = match phrase.to_lowercase().strip_suffix(" ago") {
        Some(delta) => format!("in {delta}"),
        None => {
            return Err(QueryError::Invalid(format!(
                "Time offset {offset:?} is not supported; use a phrase such as \"1 year ago\""
            )));
        }
    };
    timerange::shift(t, &inverse)
        .map_err(|e| QueryError::Invalid(format!("Invalid time offset {offset:?}: {e}")))
}

/// A join key part: cells compare by their JSON form, which is exact for every type a result
/// holds (timestamps as epoch milliseconds).
fn key(row: &[Cell], cols: &[usize]) -> Vec<String> {
    cols.iter()
        .map(|&i| super::frame::cell_json(row.get(i).unwrap_or(&Cell::Null)).to_string())
        .collect()
}

/// The join keys of a result: every column that is not a metric (the time axis and the
/// dimensions), taken before any offset column is appended.
pub fn join_keys(main: &Frame, metrics: &[String]) -> Vec<String> {
    main.colnames
        .iter()
        .filter(|c| !metrics.contains(c))
        .cloned()
        .collect()
}

/// Left-joins the result of the `offset` query onto `main` on `keys`; the offset's metrics are
/// appended as `<metric>__<offset>` (null where nothing matches).
pub fn join(
    main: &mut Frame,
    other: &Frame,
    offset: &str,
    keys: &[String],
    metrics: &[String],
) -> Result<(), QueryError> {
    let position = |f: &Frame, name: &str| f.colnames.iter().position(|c| c == name);
    let main_keys: Vec<usize> = keys.iter().filter_map(|k| position(main, k)).collect();
    let other_keys: Vec<usize> = keys.iter().filter_map(|k| position(other, k)).collect();
    if other_keys.len() != main_keys.len() {
        return Err(QueryError::Invalid(
            "The time comparison query returned other columns than the main query".into(),
        ));
    }
    let temporal: Vec<bool> = main_keys
        .iter()
        .map(|&i| main.coltypes.get(i) == Some(&GenericType::Temporal))
        .collect();
    let mut lookup: HashMap<Vec<String>, usize> = HashMap::new();
    for (r, row) in other.rows.iter().enumerate() {
        let mut shifted = row.clone();
        for (&i, &is_time) in other_keys.iter().zip(&temporal) {
            // A `timestamptz` axis (DATE_TRUNC of a date or timestamptz column in PostgreSQL)
            // shifts like a naive one and keeps its zone, so it still meets the main rows.
            match shifted.get(i) {
                Some(Cell::Timestamp(t)) if is_time => {
                    shifted[i] = Cell::Timestamp(forward(*t, offset)?);
                }
                Some(Cell::TimestampTz(t)) if is_time => {
                    shifted[i] = Cell::TimestampTz(forward(*t, offset)?);
                }
                _ => {}
            }
        }
        lookup.entry(key(&shifted, &other_keys)).or_insert(r);
    }
    for m in metrics {
        let Some(src) = position(other, m) else {
            continue;
        };
        let ty = position(main, m)
            .and_then(|i| main.coltypes.get(i).copied())
            .unwrap_or(GenericType::Numeric);
        for row in main.rows.iter_mut() {
            let k = key(row, &main_keys);
            let v = lookup
                .get(&k)
                .and_then(|&r| other.rows[r].get(src).cloned())
                .unwrap_or(Cell::Null);
            row.push(v);
        }
        main.colnames.push(format!("{m}__{offset}"));
        main.coltypes.push(ty);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn ts(y: i32, m: u32) -> Cell {
        Cell::Timestamp(
            NaiveDate::from_ymd_opt(y, m, 1)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap(),
        )
    }

    /// A `timestamptz` axis joins as a naive one does.
    #[test]
    fn a_zoned_axis_is_shifted_too() {
        let tz = |y: i32| match ts(y, 1) {
            Cell::Timestamp(t) => Cell::TimestampTz(t),
            other => other,
        };
        let mut main = Frame {
            colnames: vec!["ds".into(), "n".into()],
            coltypes: vec![GenericType::Temporal, GenericType::Numeric],
            rows: vec![vec![tz(2024), Cell::Int(30)]],
            index: None,
        };
        let other = Frame {
            colnames: vec!["ds".into(), "n".into()],
            coltypes: vec![GenericType::Temporal, GenericType::Numeric],
            rows: vec![vec![tz(2023), Cell::Int(100)]],
            index: None,
        };
        join(
            &mut main,
            &other,
            "1 year ago",
            &["ds".into()],
            &["n".into()],
        )
        .unwrap();
        assert_eq!(main.rows[0][2], Cell::Int(100));
    }

    #[test]
    fn joins_shifted_rows_on_axis_and_dimensions() {
        let mut main = Frame {
            colnames: vec!["ds".into(), "g".into(), "n".into()],
            coltypes: vec![
                GenericType::Temporal,
                GenericType::String,
                GenericType::Numeric,
            ],
            rows: vec![
                vec![ts(2024, 1), Cell::Text("a".into()), Cell::Int(5)],
                vec![ts(2024, 2), Cell::Text("a".into()), Cell::Int(6)],
            ],
            index: None,
        };
        let other = Frame {
            colnames: main.colnames.clone(),
            coltypes: main.coltypes.clone(),
            rows: vec![
                vec![ts(2023, 1), Cell::Text("a".into()), Cell::Int(1)],
                vec![ts(2023, 2), Cell::Text("b".into()), Cell::Int(2)],
            ],
            index: None,
        };
        let keys = join_keys(&main, &["n".into()]);
        join(&mut main, &other, "1 year ago", &keys, &["n".into()]).unwrap();
        // A second offset joins on the same keys, not on the first offset's column.
        join(&mut main, &other, "2 years ago", &keys, &["n".into()]).unwrap();
        assert_eq!(main.colnames[4], "n__2 years ago");
        assert_eq!(main.rows[0][4], Cell::Null);
        assert_eq!(main.colnames[3], "n__1 year ago");
        assert_eq!(main.rows[0][3], Cell::Int(1));
        assert_eq!(main.rows[1][3], Cell::Null);
        assert!(join(&mut main, &other, "last week", &keys, &["n".into()]).is_err());
    }
}
