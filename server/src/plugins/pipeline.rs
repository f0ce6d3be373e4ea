//! A query's `post_processing` list, run through plugins.
//!
//! Consecutive built-in operations go to the built-in plugin in ONE call (the whole run of
//! steps as its params), so the table crosses the sandbox boundary once each way; an operation
//! named after an uploaded post-processor is one call to that plugin with the step's options.

use serde_json::{Value as Json, json};

use super::bindings::types::Table;
use super::{PluginError, Plugins, Result, table};
use crate::query::context::POST_PROCESSING_OPERATIONS;
use crate::query::frame::Frame;

/// Runs `steps` (operation, options) over `frame`.
pub async fn run(
    plugins: &Plugins,
    frame: &Frame,
    steps: &[(String, Json)],
    request_id: &str,
) -> Result<Frame> {
    let mut t: Table = table::from_frame(frame);
    let mut i = 0;
    let mut last = String::new();
    while i < steps.len() {
        let builtin_run = steps[i..]
            .iter()
            .take_while(|(op, _)| POST_PROCESSING_OPERATIONS.contains(&op.as_str()))
            .count();
        if builtin_run > 0 {
            let run: Vec<Json> = steps[i..i + builtin_run]
                .iter()
                .map(|(op, options)| {
                    let options = if options.is_null() {
                        json!({})
                    } else {
                        options.clone()
                    };
                    json!({"operation": op, "options": options})
                })
                .collect();
            let plugin = plugins.builtin().await?;
            last.clone_from(&plugin.summary.name);
            t = plugins
                .post_process(
                    &plugin,
                    "post_processing",
                    &Json::Array(run).to_string(),
                    &t,
                    request_id,
                )
                .await?;
            i += builtin_run;
        } else {
            let (op, options) = &steps[i];
            let plugin = plugins.get(op).await?;
            last.clone_from(&plugin.summary.name);
            let params = if options.is_null() {
                json!({})
            } else {
                options.clone()
            };
            t = plugins
                .post_process(&plugin, op, &params.to_string(), &t, request_id)
                .await?;
            i += 1;
        }
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = t.columns.iter().find(|c| !seen.insert(c.name.as_str())) {
        return Err(PluginError::BadOutput {
            plugin: last,
            detail: format!("column name {:?} appears twice", dup.name),
        });
    }
    let mut out = table::to_frame(&t);
    keep_time_zones(frame, &mut out);
    Ok(out)
}

/// The table format's timestamps carry no time zone, but pandas keeps a tz-aware column
/// tz-aware through every operation (and CSV shows it: `2024-01-01 00:00:00+00:00`). So a
/// timestamp column or index level that comes back under the name of a `timestamptz` column
/// that went in is `timestamptz` again.
fn keep_time_zones(input: &Frame, out: &mut Frame) {
    use crate::engines::Cell;
    let aware: std::collections::HashSet<&str> = input
        .colnames
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            input
                .rows
                .iter()
                .any(|r| matches!(r.get(*i), Some(Cell::TimestampTz(_))))
        })
        .map(|(_, n)| n.as_str())
        .collect();
    if aware.is_empty() {
        return;
    }
    let retag = |row: &mut Vec<Cell>, positions: &[usize]| {
        for &p in positions {
            if let Some(Cell::Timestamp(t)) = row.get(p) {
                row[p] = Cell::TimestampTz(*t);
            }
        }
    };
    let columns: Vec<usize> = out
        .colnames
        .iter()
        .enumerate()
        .filter(|(_, n)| aware.contains(n.as_str()))
        .map(|(i, _)| i)
        .collect();
    for row in &mut out.rows {
        retag(row, &columns);
    }
    if let Some(index) = &mut out.index {
        let levels: Vec<usize> = index
            .names
            .iter()
            .enumerate()
            .filter(|(_, n)| aware.contains(n.as_str()))
            .map(|(i, _)| i)
            .collect();
        for row in &mut index.rows {
            retag(row, &levels);
        }
    }
}
