//! `rank` (not implemented yet).

use serde_json::Value as Json;

use crate::error::{PpError, Result};
use crate::frame::Frame;

/// Runs `rank`.
pub fn run(_frame: Frame, _options: &Json) -> Result<Frame> {
    Err(PpError::unsupported(
        "operation rank is not implemented yet",
    ))
}
