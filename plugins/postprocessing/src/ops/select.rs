//! `select`: pick, drop and rename columns.

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::{Frame, Value};
use crate::ops::{Opts, validate_column_args};
use crate::pystr::str_list_repr;

fn matches(label: &[Value], name: &str) -> bool {
    matches!(label.first(), Some(Value::Str(s)) if **s == *name)
}

/// Runs `select`.
pub fn run(frame: Frame, options: &Json) -> Result<Frame> {
    // Superset 6.0 validates `columns` and `rename` only: a bad `exclude` is a pandas
    // KeyError.
    validate_column_args(&frame, options, &["columns", "rename"])?;
    let opts = Opts::parse("select", options, &["columns", "exclude", "rename"], &[])?;
    let columns = opts.names("columns");
    let exclude = opts.names("exclude");
    let mut picked: Vec<usize> = (0..frame.labels.len()).collect();
    if !columns.is_empty() {
        picked = columns
            .iter()
            .flat_map(|c| {
                (0..frame.labels.len())
                    .filter(|&i| matches(&frame.labels[i], c))
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    if !exclude.is_empty() {
        let missing: Vec<&String> = exclude
            .iter()
            .filter(|e| !picked.iter().any(|&i| matches(&frame.labels[i], e)))
            .collect();
        if !missing.is_empty() {
            return Err(PpError::params(format!(
                "\"{} not found in axis\"",
                str_list_repr(&missing)
            )));
        }
        picked.retain(|&i| !exclude.iter().any(|e| matches(&frame.labels[i], e)));
    }
    let mut out = Frame {
        labels: picked.iter().map(|&i| frame.labels[i].clone()).collect(),
        columns: picked.iter().map(|&i| frame.columns[i].clone()).collect(),
        column_names: frame.column_names.clone(),
        index: frame.index.clone(),
    };
    if let Some(Json::Object(mapping)) = opts.value("rename") {
        for label in &mut out.labels {
            for cell in label.iter_mut() {
                if let Value::Str(s) = cell
                    && let Some(new) = mapping.get(&**s)
                {
                    *cell = match new {
                        Json::String(n) => Value::Str(n.as_str().into()),
                        Json::Null => Value::Null,
                        other => Value::Str(other.to_string().into()),
                    };
                }
            }
        }
    }
    Ok(out)
}
