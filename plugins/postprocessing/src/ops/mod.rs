//! The operations, one module each.

pub mod append;
pub mod args;
pub mod compare;
pub mod contribution;
pub mod cum;
pub mod diff;
pub mod geo;
pub mod resample;
pub mod rolling;
