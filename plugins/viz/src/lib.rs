//! Liteset's built-in viz plugin: Superset's `table`, `big_number_total`,
//! `echarts_timeseries_line`, `echarts_timeseries_bar` and `pie` charts, drawn server-side as
//! SVG inside the wasm sandbox.
//!
//! - [`query`]: `build-query`, Superset's frontend `buildQuery` of each chart type (form data
//!   → chart-data query context), for charts saved without a query context.
//! - [`charts`]: one renderer per chart type over the query results.
//! - [`format`], [`scale`], [`svg`], [`data`]: d3-style number and time formatting, nice
//!   ticks, an escaping SVG writer with Superset's colour scheme, and typed access to results.

pub mod charts;
pub mod data;
pub mod form;
pub mod format;
pub mod plugin;
pub mod query;
pub mod scale;
pub mod svg;

/// The chart types this plugin renders.
pub const VIZ_TYPES: &[&str] = &[
    "table",
    "big_number_total",
    "echarts_timeseries_line",
    "echarts_timeseries_bar",
    "pie",
];
