//! `boxplot` (not implemented yet).

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::Frame;

/// Runs `boxplot`.
pub fn run(_frame: Frame, _options: &Json) -> Result<Frame> {
    Err(PpError::unsupported(
        "operation boxplot is not implemented yet",
    ))
}
