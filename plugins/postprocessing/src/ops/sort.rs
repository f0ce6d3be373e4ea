//! `sort` (not implemented yet).

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::Frame;

/// Runs `sort`.
pub fn run(_frame: Frame, _options: &Json) -> Result<Frame> {
    Err(PpError::unsupported(
        "operation sort is not implemented yet",
    ))
}
