//! One renderer per chart type. Each draws a complete SVG document of the requested size:
//! the chart's name as title, then the chart; "No results" when the query returned nothing.

pub mod big_number;
pub mod pie;
pub mod table;
pub mod timeseries;

use liteset_sdk::{QueryResult, Size};

use crate::form::Form;

/// Padding around the chart, in px.
pub const PAD: f64 = 16.0;

/// Renders `viz_type`.
pub fn render(
    viz_type: &str,
    form: &Form,
    results: &[QueryResult],
    size: Size,
) -> Result<String, String> {
    let size = Size {
        width: size.width.clamp(16, 8192),
        height: size.height.clamp(16, 8192),
    };
    let table = crate::data::first(results);
    Ok(match viz_type {
        "table" => table::render(form, table, size),
        "big_number_total" => big_number::render(form, table, size),
        "echarts_timeseries_line" => timeseries::render(form, table, size, false),
        "echarts_timeseries_bar" => timeseries::render(form, table, size, true),
        "pie" => pie::render(form, table, size),
        other => return Err(format!("viz_type {other:?} is not rendered by this plugin")),
    })
}
