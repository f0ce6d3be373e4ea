//! The plugin's face: the `viz` world through liteset-sdk.

use liteset_sdk::{ChartOutput, Invocation, PluginError, PluginInfo, QueryResult, Size, Viz};

use crate::form::Form;
use crate::{VIZ_TYPES, charts, query};

/// The built-in viz plugin.
pub struct Charts;

/// What the form data of these charts may hold (the controls the plugin reads).
const SCHEMA: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["viz_type", "datasource"],
  "properties": {
    "viz_type": {"enum": ["table", "big_number_total", "echarts_timeseries_line", "echarts_timeseries_bar", "pie"]},
    "datasource": {"type": "string", "description": "<dataset id>__table"},
    "metrics": {"type": "array"},
    "metric": {},
    "groupby": {"type": "array"},
    "x_axis": {},
    "time_grain_sqla": {"type": ["string", "null"]},
    "time_range": {"type": "string"},
    "adhoc_filters": {"type": "array"},
    "row_limit": {"type": ["integer", "string"]},
    "limit": {"type": ["integer", "string", "null"]},
    "timeseries_limit_metric": {},
    "order_desc": {"type": "boolean"},
    "query_mode": {"enum": ["aggregate", "raw"]},
    "all_columns": {"type": "array"},
    "percent_metrics": {"type": "array"},
    "y_axis_format": {"type": "string", "description": "d3-format or SMART_NUMBER"},
    "number_format": {"type": "string"},
    "x_axis_time_format": {"type": "string", "description": "d3-time-format or smart_date"},
    "show_legend": {"type": "boolean"},
    "stack": {},
    "donut": {"type": "boolean"},
    "label_type": {"enum": ["key", "value", "percent", "key_value", "key_percent"]},
    "subheader": {"type": "string"},
    "slice_name": {"type": "string", "description": "drawn as the title"},
    "verbose_map": {"type": "object", "description": "label -> display name"}
  }
}"#;

impl Viz for Charts {
    fn info() -> PluginInfo {
        PluginInfo::viz(
            "charts",
            env!("CARGO_PKG_VERSION"),
            VIZ_TYPES.iter().copied(),
        )
        .label("Built-in charts")
        .description(
            "Superset's table, big number, line, bar and pie charts: query building from \
                 form data and server-side SVG rendering",
        )
        .params_schema(SCHEMA)
    }

    fn build_query(_ctx: &Invocation, form_data: &str) -> Result<String, PluginError> {
        let form = Form::parse(form_data).map_err(PluginError::invalid_params)?;
        let viz_type = form
            .str("viz_type")
            .ok_or_else(|| PluginError::invalid_params("form data has no viz_type"))?
            .to_owned();
        query::build(&viz_type, &form)
            .map(|ctx| ctx.to_string())
            .map_err(PluginError::invalid_params)
    }

    fn render(
        _ctx: &Invocation,
        form_data: &str,
        results: Vec<QueryResult>,
        size: Size,
    ) -> Result<ChartOutput, PluginError> {
        let form = Form::parse(form_data).map_err(PluginError::invalid_params)?;
        let viz_type = form
            .str("viz_type")
            .ok_or_else(|| PluginError::invalid_params("form data has no viz_type"))?
            .to_owned();
        let svg =
            charts::render(&viz_type, &form, &results, size).map_err(PluginError::unsupported)?;
        Ok(ChartOutput::svg(svg))
    }
}

liteset_sdk::export_viz!(Charts);
