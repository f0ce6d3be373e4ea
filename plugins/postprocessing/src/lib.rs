//! Liteset's built-in post-processing plugin: Superset's `pandas_postprocessing` operations
//! reimplemented over a small frame model, run inside the wasm sandbox.
//!
//! The whole `post_processing` list of a query arrives in one call (`run_pipeline`), so a
//! table crosses the wasm boundary once in each direction whatever the number of steps.

pub mod error;
pub mod frame;
mod frame_ext;
pub mod group;
pub mod io;
pub mod numpy;
pub mod ops;
pub mod plugin;
pub mod pystr;

use error::{PpError, Result};
use frame::Frame;

/// Runs a chart-data `post_processing` list (`[{"operation": ..., "options": {...}}, ...]`)
/// over `input`, in order, like Superset's `QueryObject.exec_post_processing`. A step without
/// `options` runs with `{}`.
pub fn run_pipeline(input: Frame, steps: &serde_json::Value) -> Result<Frame> {
    let steps = match steps {
        serde_json::Value::Array(steps) => steps.as_slice(),
        serde_json::Value::Null => &[],
        _ => return Err(PpError::params("post_processing must be a list")),
    };
    let empty = serde_json::Value::Object(serde_json::Map::new());
    let mut frame = input;
    for step in steps {
        let operation = step
            .get("operation")
            .and_then(serde_json::Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                PpError::params("`operation` property of post processing object undefined")
            })?;
        let options = step.get("options").unwrap_or(&empty);
        frame = ops::dispatch(operation, frame, options)?;
    }
    Ok(frame)
}
