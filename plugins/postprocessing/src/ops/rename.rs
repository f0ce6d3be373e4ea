//! `rename`: relabel columns, on one level of multi-level labels or on all of them.

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Value};
use crate::ops::flatten::level_number;
use crate::ops::{Opts, truthy, validate_column_args};

fn json_label(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::String(s) => Value::Str(s.as_str().into()),
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n
            .as_i64()
            .map_or_else(|| Value::Float(n.as_f64().unwrap_or(f64::NAN)), Value::Int),
        other => Value::Str(other.to_string().into()),
    }
}

/// The level `rename` works on, or `None` for every level. A level that does not exist is
/// Superset's `InvalidPostProcessingError()` without a message.
fn resolve_level(frame: &Frame, level: Option<&Json>) -> Result<Option<usize>> {
    let empty = || PpError::params("");
    let level = level.unwrap_or(&Json::Null);
    if frame.is_multi() {
        if level.is_null() {
            // Checked like `get_level_values(None)` (a level named None), then applied to
            // every level.
            level_number(&frame.column_names, level).map_err(|e| {
                if e.message.contains("occurs multiple times") {
                    e
                } else {
                    empty()
                }
            })?;
            return Ok(None);
        }
        return level_number(&frame.column_names, level)
            .map(Some)
            .map_err(|e| {
                if e.message.contains("occurs multiple times") {
                    e
                } else {
                    empty()
                }
            });
    }
    // A flat `Index`: level 0, -1 or the index's own name.
    let name = frame.column_names.first().cloned().flatten();
    match level {
        Json::Null if name.is_none() => Ok(Some(0)),
        Json::Number(n) if matches!(n.as_i64(), Some(0) | Some(-1)) => Ok(Some(0)),
        Json::String(s) if name.as_deref() == Some(s.as_str()) => Ok(Some(0)),
        _ => Err(empty()),
    }
}

/// Runs `rename`.
pub fn run(mut frame: Frame, options: &Json) -> Result<Frame> {
    validate_column_args(&frame, options, &["columns"])?;
    let opts = Opts::parse(
        "rename",
        options,
        &["columns", "inplace", "level"],
        &["columns"],
    )?;
    let columns = opts.get("columns").filter(|c| truthy(c));
    let Some(columns) = columns else {
        return Ok(frame);
    };
    let Json::Object(mapping) = columns else {
        return Err(PpError::params("rename columns must be a mapping"));
    };
    let level = resolve_level(&frame, opts.get("level"))?;
    let check_level = level.unwrap_or(0);
    let existing: Vec<&Value> = frame.labels.iter().map(|l| &l[check_level]).collect();
    if mapping
        .values()
        .all(|new| existing.contains(&&json_label(new)))
    {
        return Err(PpError::params("Label already exists"));
    }
    for label in &mut frame.labels {
        for (i, cell) in label.iter_mut().enumerate() {
            if level.is_some_and(|l| l != i) {
                continue;
            }
            if let Value::Str(s) = cell
                && let Some(new) = mapping.get(&**s)
            {
                *cell = json_label(new);
            }
        }
    }
    Ok(frame)
}
