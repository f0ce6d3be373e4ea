//! placeholder
use crate::error::PpError;
use crate::frame::Frame;
use crate::ops::args::{Options, unsupported};

pub fn contribution(_df: Frame, _options: &Options) -> Result<Frame, PpError> {
    Err(unsupported("not yet"))
}
