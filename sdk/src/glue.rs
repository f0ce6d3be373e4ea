//! Conversions between the generated WIT types and the SDK types, and the generic
//! implementations of the generated `Guest` traits that the export macros instantiate.
//! Not public API: reached only through `liteset_sdk::__private` by the macros.

use std::marker::PhantomData;

use crate::bindings::{
    ChartAppGuest, MetaGuest, PostProcessGuest, VisualizationGuest, wit, wit_chart_app, wit_viz,
};
use crate::{
    ChartOutput, ChartType, Column, ColumnData, Control, ErrorKind, Invocation, PluginError,
    PluginInfo, PluginKind, PostProcessor, QueryResult, Section, SelectOption, Shared, Size, Table,
    Viz,
};

// ---- host -> SDK ----------------------------------------------------------------------------

pub(crate) fn column_from_wit(c: wit::Column) -> Column {
    let data = match c.data {
        wit::ColumnData::Float64(v) => ColumnData::Float64(v),
        wit::ColumnData::Int64(v) => ColumnData::Int64(v),
        wit::ColumnData::Boolean(v) => ColumnData::Boolean(v),
        wit::ColumnData::TimestampUs(v) => ColumnData::TimestampUs(v),
        wit::ColumnData::Utf8(v) => ColumnData::Utf8(v),
        wit::ColumnData::Utf8Dict(d) => ColumnData::Utf8Dict {
            dictionary: d.dictionary,
            codes: d.codes,
        },
        wit::ColumnData::Utf8Packed(p) => ColumnData::Utf8Packed {
            offsets: p.offsets,
            data: p.data,
        },
        wit::ColumnData::Json(v) => ColumnData::Json(v),
    };
    Column {
        name: c.name,
        data,
        validity: c.validity,
    }
}

pub(crate) fn table_from_wit(t: wit::Table) -> Table {
    Table {
        num_rows: t.num_rows as usize,
        columns: t.columns.into_iter().map(column_from_wit).collect(),
        index: t.index.into_iter().map(column_from_wit).collect(),
    }
}

/// Converts a table received from the host and validates it (the canonical ABI does not
/// check packed text for UTF-8, dictionary codes or lengths).
pub(crate) fn receive_table(t: wit::Table, what: &str) -> Result<Table, PluginError> {
    let table = table_from_wit(t);
    table
        .validate()
        .map_err(|e| PluginError::invalid_input(format!("{what}: {e}")))?;
    Ok(table)
}

pub(crate) fn invocation_from_wit(i: wit::Invocation) -> Invocation {
    Invocation {
        request_id: i.request_id,
        operation: i.operation,
        locale: i.locale,
        time_zone: i.time_zone,
    }
}

pub(crate) fn error_from_wit(e: wit::PluginError) -> PluginError {
    let kind = match e.kind {
        wit::ErrorKind::InvalidParams => ErrorKind::InvalidParams,
        wit::ErrorKind::InvalidInput => ErrorKind::InvalidInput,
        wit::ErrorKind::Unsupported => ErrorKind::Unsupported,
        wit::ErrorKind::Internal => ErrorKind::Internal,
    };
    PluginError::new(kind, e.message)
}

pub(crate) fn info_from_wit(i: wit::PluginInfo) -> PluginInfo {
    PluginInfo {
        name: i.name,
        version: i.version,
        kind: match i.kind {
            wit::PluginKind::PostProcessor => PluginKind::PostProcessor,
            wit::PluginKind::Viz => PluginKind::Viz,
        },
        label: i.label,
        description: i.description,
        viz_types: i.viz_types,
        params_schema: i.params_schema,
    }
}

pub(crate) fn output_from_wit(o: wit_viz::ChartOutput) -> ChartOutput {
    ChartOutput {
        payload: o.payload,
        svg: o.svg,
    }
}

// ---- SDK -> host ----------------------------------------------------------------------------

pub(crate) fn column_to_wit(c: Column) -> wit::Column {
    let data = match c.data {
        ColumnData::Float64(v) => wit::ColumnData::Float64(v),
        ColumnData::Int64(v) => wit::ColumnData::Int64(v),
        ColumnData::Boolean(v) => wit::ColumnData::Boolean(v),
        ColumnData::TimestampUs(v) => wit::ColumnData::TimestampUs(v),
        ColumnData::Utf8(v) => wit::ColumnData::Utf8(v),
        ColumnData::Utf8Dict { dictionary, codes } => {
            wit::ColumnData::Utf8Dict(wit::Utf8Dict { dictionary, codes })
        }
        ColumnData::Utf8Packed { offsets, data } => {
            wit::ColumnData::Utf8Packed(wit::Utf8Packed { offsets, data })
        }
        ColumnData::Json(v) => wit::ColumnData::Json(v),
    };
    wit::Column {
        name: c.name,
        data,
        validity: c.validity,
    }
}

/// Converts a table for the host. Only the row count is checked (it must fit the WIT `u32`);
/// the host validates everything else in every plugin output, and the [`testing`](crate::testing)
/// harness validates outputs so that authors see such bugs in their unit tests.
pub(crate) fn table_to_wit(t: Table) -> Result<wit::Table, PluginError> {
    let num_rows = u32::try_from(t.num_rows).map_err(|_| {
        PluginError::internal(format!(
            "the output table has {} rows, more than 2^32 - 1",
            t.num_rows
        ))
    })?;
    Ok(wit::Table {
        num_rows,
        columns: t.columns.into_iter().map(column_to_wit).collect(),
        index: t.index.into_iter().map(column_to_wit).collect(),
    })
}

pub(crate) fn invocation_to_wit(i: Invocation) -> wit::Invocation {
    wit::Invocation {
        request_id: i.request_id,
        operation: i.operation,
        locale: i.locale,
        time_zone: i.time_zone,
    }
}

pub(crate) fn error_to_wit(e: PluginError) -> wit::PluginError {
    wit::PluginError {
        kind: match e.kind {
            ErrorKind::InvalidParams => wit::ErrorKind::InvalidParams,
            ErrorKind::InvalidInput => wit::ErrorKind::InvalidInput,
            ErrorKind::Unsupported => wit::ErrorKind::Unsupported,
            ErrorKind::Internal => wit::ErrorKind::Internal,
        },
        message: e.message,
    }
}

pub(crate) fn info_to_wit(i: PluginInfo) -> wit::PluginInfo {
    wit::PluginInfo {
        name: i.name,
        version: i.version,
        kind: match i.kind {
            PluginKind::PostProcessor => wit::PluginKind::PostProcessor,
            PluginKind::Viz => wit::PluginKind::Viz,
        },
        label: i.label,
        description: i.description,
        viz_types: i.viz_types,
        params_schema: i.params_schema,
    }
}

pub(crate) fn query_result_to_wit(r: QueryResult) -> Result<wit_viz::QueryResult, PluginError> {
    Ok(wit_viz::QueryResult {
        query_index: r.query_index,
        data: table_to_wit(r.data)?,
    })
}

pub(crate) fn output_to_wit(o: ChartOutput) -> wit_viz::ChartOutput {
    wit_viz::ChartOutput {
        payload: o.payload,
        svg: o.svg,
    }
}

pub(crate) fn shared_to_wit(s: Shared) -> wit_chart_app::SharedControl {
    use wit_chart_app::SharedControl as W;
    match s {
        Shared::Metric => W::Metric,
        Shared::Metrics => W::Metrics,
        Shared::Groupby => W::Groupby,
        Shared::Columns => W::Columns,
        Shared::XAxis => W::XAxis,
        Shared::TimeGrainSqla => W::TimeGrainSqla,
        Shared::AdhocFilters => W::AdhocFilters,
        Shared::RowLimit => W::RowLimit,
        Shared::SeriesLimit => W::SeriesLimit,
        Shared::OrderDesc => W::OrderDesc,
        Shared::ColorScheme => W::ColorScheme,
        Shared::YAxisFormat => W::YAxisFormat,
        Shared::XAxisTimeFormat => W::XAxisTimeFormat,
        Shared::CurrencyFormat => W::CurrencyFormat,
    }
}

pub(crate) fn control_to_wit(c: Control) -> wit_chart_app::Control {
    use wit_chart_app as w;
    match c {
        Control::Shared(s) => w::Control::Shared(shared_to_wit(s)),
        Control::Text(t) => w::Control::Text(w::TextControl {
            name: t.name,
            label: t.label,
            description: t.description,
            default: t.default,
        }),
        Control::Number(n) => w::Control::Number(w::NumberControl {
            name: n.name,
            label: n.label,
            description: n.description,
            default: n.default,
            min: n.min,
            max: n.max,
            integer: n.integer,
        }),
        Control::Checkbox(c) => w::Control::Checkbox(w::CheckboxControl {
            name: c.name,
            label: c.label,
            description: c.description,
            default: c.default,
        }),
        Control::Select(s) => w::Control::Select(w::SelectControl {
            name: s.name,
            label: s.label,
            description: s.description,
            default: s.default,
            options: s
                .options
                .into_iter()
                .map(|o| w::SelectOption {
                    value: o.value,
                    label: o.label,
                })
                .collect(),
        }),
    }
}

pub(crate) fn chart_type_to_wit(c: ChartType) -> wit_chart_app::ChartType {
    wit_chart_app::ChartType {
        viz_type: c.viz_type,
        name: c.name,
        description: c.description,
        category: c.category,
        tags: c.tags,
        thumbnail: c.thumbnail,
        sections: c
            .sections
            .into_iter()
            .map(|s| wit_chart_app::Section {
                label: s.label,
                expanded: s.expanded,
                rows: s
                    .rows
                    .into_iter()
                    .map(|r| r.into_iter().map(control_to_wit).collect())
                    .collect(),
            })
            .collect(),
    }
}

pub(crate) fn control_from_wit(c: wit_chart_app::Control) -> Control {
    use crate::chart::{CheckboxControl, NumberControl, SelectControl, TextControl};
    use wit_chart_app as w;
    match c {
        w::Control::Shared(s) => Control::Shared(
            [
                Shared::Metric,
                Shared::Metrics,
                Shared::Groupby,
                Shared::Columns,
                Shared::XAxis,
                Shared::TimeGrainSqla,
                Shared::AdhocFilters,
                Shared::RowLimit,
                Shared::SeriesLimit,
                Shared::OrderDesc,
                Shared::ColorScheme,
                Shared::YAxisFormat,
                Shared::XAxisTimeFormat,
                Shared::CurrencyFormat,
            ]
            .into_iter()
            .find(|x| shared_to_wit(*x) == s)
            .expect("every shared control has an SDK twin"),
        ),
        w::Control::Text(t) => Control::Text(TextControl {
            name: t.name,
            label: t.label,
            description: t.description,
            default: t.default,
        }),
        w::Control::Number(n) => Control::Number(NumberControl {
            name: n.name,
            label: n.label,
            description: n.description,
            default: n.default,
            min: n.min,
            max: n.max,
            integer: n.integer,
        }),
        w::Control::Checkbox(c) => Control::Checkbox(CheckboxControl {
            name: c.name,
            label: c.label,
            description: c.description,
            default: c.default,
        }),
        w::Control::Select(s) => Control::Select(SelectControl {
            name: s.name,
            label: s.label,
            description: s.description,
            default: s.default,
            options: s
                .options
                .into_iter()
                .map(|o| SelectOption {
                    value: o.value,
                    label: o.label,
                })
                .collect(),
        }),
    }
}

pub(crate) fn chart_type_from_wit(c: wit_chart_app::ChartType) -> ChartType {
    ChartType {
        viz_type: c.viz_type,
        name: c.name,
        description: c.description,
        category: c.category,
        tags: c.tags,
        thumbnail: c.thumbnail,
        sections: c
            .sections
            .into_iter()
            .map(|s| Section {
                label: s.label,
                expanded: s.expanded,
                rows: s
                    .rows
                    .into_iter()
                    .map(|r| r.into_iter().map(control_from_wit).collect())
                    .collect(),
            })
            .collect(),
    }
}

// ---- Guest implementations ------------------------------------------------------------------

/// Implements the generated `meta` and `post-process` Guest traits for a [`PostProcessor`].
pub struct PostProcessorGlue<T>(PhantomData<T>);

/// Implements the generated `meta`, `visualization` and `chart-app` Guest traits for a [`Viz`].
pub struct VizGlue<T>(PhantomData<T>);

impl<T: PostProcessor> MetaGuest for PostProcessorGlue<T> {
    fn info() -> wit::PluginInfo {
        crate::logging::init();
        info_to_wit(T::info())
    }
}

impl<T: PostProcessor> PostProcessGuest for PostProcessorGlue<T> {
    fn process(
        ctx: wit::Invocation,
        params: String,
        input: wit::Table,
    ) -> Result<wit::Table, wit::PluginError> {
        crate::logging::init();
        process::<T>(ctx, &params, input).map_err(error_to_wit)
    }
}

pub(crate) fn process<T: PostProcessor>(
    ctx: wit::Invocation,
    params: &str,
    input: wit::Table,
) -> Result<wit::Table, PluginError> {
    let ctx = invocation_from_wit(ctx);
    let input = receive_table(input, "input table")?;
    table_to_wit(T::process(&ctx, params, input)?)
}

impl<T: Viz> MetaGuest for VizGlue<T> {
    fn info() -> wit::PluginInfo {
        crate::logging::init();
        info_to_wit(T::info())
    }
}

impl<T: Viz> VisualizationGuest for VizGlue<T> {
    fn build_query(ctx: wit::Invocation, form_data: String) -> Result<String, wit::PluginError> {
        crate::logging::init();
        T::build_query(&invocation_from_wit(ctx), &form_data).map_err(error_to_wit)
    }

    fn render(
        ctx: wit::Invocation,
        form_data: String,
        results: Vec<wit_viz::QueryResult>,
        size: wit::Size,
    ) -> Result<wit_viz::ChartOutput, wit::PluginError> {
        crate::logging::init();
        render::<T>(ctx, &form_data, results, size).map_err(error_to_wit)
    }
}

impl<T: Viz> ChartAppGuest for VizGlue<T> {
    fn chart_types() -> Vec<wit_chart_app::ChartType> {
        crate::logging::init();
        T::chart_types()
            .into_iter()
            .map(chart_type_to_wit)
            .collect()
    }
}

pub(crate) fn render<T: Viz>(
    ctx: wit::Invocation,
    form_data: &str,
    results: Vec<wit_viz::QueryResult>,
    size: wit::Size,
) -> Result<wit_viz::ChartOutput, PluginError> {
    let ctx = invocation_from_wit(ctx);
    let results = results
        .into_iter()
        .map(|r| {
            let what = format!("result of query {}", r.query_index);
            Ok(QueryResult {
                query_index: r.query_index,
                data: receive_table(r.data, &what)?,
            })
        })
        .collect::<Result<Vec<_>, PluginError>>()?;
    let size = Size {
        width: size.width,
        height: size.height,
    };
    Ok(output_to_wit(T::render(&ctx, form_data, results, size)?))
}
