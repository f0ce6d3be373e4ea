//! Liteset's built-in post-processing plugin: Superset's `pandas_postprocessing` operations
//! reimplemented over a small frame model, run inside the wasm sandbox.
//!
//! The whole `post_processing` list of a query arrives in one call (`run_pipeline`), so a
//! table crosses the wasm boundary once in each direction whatever the number of steps.

pub mod frame;
pub mod error;
pub mod ops;
