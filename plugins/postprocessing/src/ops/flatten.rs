//! `flatten`: multi-level column labels joined into strings, and the first index level
//! turned back into a column.

use liteset_pyrepr as py;
use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Value};
use crate::io::escape_separator;
use crate::ops::Opts;
use crate::pystr::py_str;

/// Superset's `FLAT_COLUMN_SEPARATOR`.
pub const SEPARATOR: &str = ", ";

/// Position of a column level named or numbered by `level` (pandas
/// `MultiIndex._get_level_number`, with its error texts).
pub fn level_number(names: &[Option<String>], level: &Json) -> Result<usize> {
    let n = names.len() as i64;
    match level {
        Json::Number(num) if num.is_i64() => {
            let orig = num.as_i64().unwrap_or(0);
            let mut l = orig;
            if l < 0 {
                l += n;
                if l < 0 {
                    return Err(PpError::params(format!(
                        "Too many levels: Index has only {n} levels, {orig} is not a valid level number"
                    )));
                }
            } else if l >= n {
                return Err(PpError::params(format!(
                    "Too many levels: Index has only {n} levels, not {}",
                    i128::from(l) + 1
                )));
            }
            Ok(l as usize)
        }
        Json::String(s) => {
            let hits: Vec<usize> = names
                .iter()
                .enumerate()
                .filter(|(_, x)| x.as_deref() == Some(s.as_str()))
                .map(|(i, _)| i)
                .collect();
            match hits.as_slice() {
                [i] => Ok(*i),
                [] => Err(PpError::params(py::str(&format!("Level {s} not found")))),
                _ => Err(PpError::params(format!(
                    "The name {s} occurs multiple times, use a level number"
                ))),
            }
        }
        Json::Null => {
            let hits: Vec<usize> = names
                .iter()
                .enumerate()
                .filter(|(_, x)| x.is_none())
                .map(|(i, _)| i)
                .collect();
            match hits.as_slice() {
                [i] => Ok(*i),
                [] => Err(PpError::params("'Level None not found'")),
                _ => Err(PpError::params(
                    "The name None occurs multiple times, use a level number",
                )),
            }
        }
        other => Err(PpError::params(py::str(&format!(
            "Level {other} not found"
        )))),
    }
}

/// Runs `flatten`.
pub fn run(mut frame: Frame, options: &Json) -> Result<Frame> {
    let opts = Opts::parse("flatten", options, &["reset_index", "drop_levels"], &[])?;
    let reset = opts.flag("reset_index", true);
    if frame.is_multi() {
        let levels: Vec<Json> = match opts.get("drop_levels") {
            None | Some(Json::Null) => vec![],
            Some(Json::Array(items)) => items.clone(),
            Some(single) => vec![single.clone()],
        };
        let mut drop: Vec<usize> = levels
            .iter()
            .map(|l| level_number(&frame.column_names, l))
            .collect::<Result<_>>()?;
        drop.sort_unstable();
        drop.dedup();
        let nlevels = frame.column_names.len();
        if drop.len() >= nlevels {
            return Err(PpError::params(format!(
                "Cannot remove {} levels from an index with {nlevels} levels: at least one level must be left.",
                drop.len()
            )));
        }
        for label in &mut frame.labels {
            let cells: Vec<String> = label
                .iter()
                .enumerate()
                .filter(|(i, v)| !drop.contains(i) && !matches!(v, Value::Null))
                .filter(|(_, v)| !matches!(v, Value::Float(f) if f.is_nan()))
                .map(|(_, v)| escape_separator(&py_str(v)))
                .collect();
            *label = vec![Value::Str(cells.join(SEPARATOR).into())];
        }
        frame.column_names = vec![None];
    }
    if reset && !frame.index.is_range() {
        frame = frame.reset_index_level0()?;
    }
    Ok(frame)
}
