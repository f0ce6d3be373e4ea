//! placeholder
use crate::error::PpError;
use crate::frame::Frame;
use crate::ops::args::{Options, unsupported};

pub fn geohash_encode(_df: Frame, _options: &Options) -> Result<Frame, PpError> {
    Err(unsupported("not yet"))
}
pub fn geohash_decode(_df: Frame, _options: &Options) -> Result<Frame, PpError> {
    Err(unsupported("not yet"))
}
pub fn geodetic_parse(_df: Frame, _options: &Options) -> Result<Frame, PpError> {
    Err(unsupported("not yet"))
}
