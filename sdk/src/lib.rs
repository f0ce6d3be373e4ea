//! Guest-side SDK for Liteset plugins.
//!
//! This crate will hold the table types, plugin traits and export macros that plugin authors
//! use against the `liteset:plugin` WIT package (see `wit/`). It is intentionally empty until
//! the plugin platform lands, so that the workspace layout is settled from the start.
#![deny(missing_docs)]
