//! Native test harness: run plugin logic without wasm, through the same conversion and
//! validation code the wasm export path uses.
//!
//! ```
//! use liteset_sdk::testing::{run_post_processor, table};
//! use liteset_sdk::{Invocation, PluginError, PluginInfo, PostProcessor, Table};
//!
//! struct Negate;
//!
//! impl PostProcessor for Negate {
//!     fn info() -> PluginInfo {
//!         PluginInfo::post_processor("negate", "1.0.0")
//!     }
//!
//!     fn process(_ctx: &Invocation, _params: &str, mut input: Table) -> Result<Table, PluginError> {
//!         for column in &mut input.columns {
//!             if let liteset_sdk::ColumnData::Float64(values) = &mut column.data {
//!                 values.iter_mut().for_each(|v| *v = -*v);
//!             }
//!         }
//!         Ok(input)
//!     }
//! }
//!
//! let input = table! { "x" => float64 [1.0, 2.0], "label" => utf8 [Some("a"), None] };
//! let output = run_post_processor::<Negate>("{}", input).unwrap();
//! assert_eq!(output.column("x").unwrap().f64(), Some(&[-1.0, -2.0][..]));
//! ```

use crate::bindings::{wit, wit_viz};
use crate::glue;
use crate::{
    ChartOutput, ChartType, Invocation, PluginError, PluginInfo, PluginKind, PostProcessor,
    QueryResult, Size, Table, Viz,
};

pub use crate::table;

/// An [`Invocation`] like the host's: request id `test`, operation `test`, locale `en`, time
/// zone `UTC`.
pub fn invocation() -> Invocation {
    Invocation {
        request_id: "test".into(),
        operation: "test".into(),
        locale: "en".into(),
        time_zone: "UTC".into(),
    }
}

/// Runs `T::process` with [`invocation()`] the way the host does: the input goes through the
/// WIT conversion and the SDK's input validation, and the output through the WIT conversion.
/// Unlike the wasm path (where the host checks plugin outputs), the output is also
/// [validated](Table::validate): an invalid output becomes an `internal` error whose message
/// starts with `invalid output table`.
pub fn run_post_processor<T: PostProcessor>(
    params_json: &str,
    input: Table,
) -> Result<Table, PluginError> {
    run_post_processor_with::<T>(&invocation(), params_json, input)
}

/// [`run_post_processor`] with a given invocation context.
pub fn run_post_processor_with<T: PostProcessor>(
    ctx: &Invocation,
    params_json: &str,
    input: Table,
) -> Result<Table, PluginError> {
    crate::logging::init();
    let input = glue::table_to_wit(input)?;
    let output = glue::process::<T>(glue::invocation_to_wit(ctx.clone()), params_json, input)
        .map_err(|e| glue::error_from_wit(glue::error_to_wit(e)))?;
    check_output(output)
}

fn check_output(output: wit::Table) -> Result<Table, PluginError> {
    let output = glue::table_from_wit(output);
    output
        .validate()
        .map_err(|e| PluginError::internal(format!("invalid output table: {e}")))?;
    Ok(output)
}

/// Runs `T::build_query` with [`invocation()`].
pub fn run_build_query<T: Viz>(form_data_json: &str) -> Result<String, PluginError> {
    crate::logging::init();
    T::build_query(&invocation(), form_data_json)
        .map_err(|e| glue::error_from_wit(glue::error_to_wit(e)))
}

/// Runs `T::render` with [`invocation()`], passing `results` through the WIT conversion and
/// the SDK's input validation the way the host does.
pub fn run_render<T: Viz>(
    form_data_json: &str,
    results: Vec<QueryResult>,
    size: Size,
) -> Result<ChartOutput, PluginError> {
    crate::logging::init();
    let results = results
        .into_iter()
        .map(glue::query_result_to_wit)
        .collect::<Result<Vec<wit_viz::QueryResult>, _>>()?;
    let size = wit::Size {
        width: size.width,
        height: size.height,
    };
    glue::render::<T>(
        glue::invocation_to_wit(invocation()),
        form_data_json,
        results,
        size,
    )
    .map(glue::output_from_wit)
    .map_err(|e| glue::error_from_wit(glue::error_to_wit(e)))
}

/// `T::info()` after the WIT round trip, checked with [`PluginInfo::validate`] and for the
/// `post-processor` kind.
pub fn post_processor_info<T: PostProcessor>() -> Result<PluginInfo, String> {
    checked_info(T::info(), PluginKind::PostProcessor)
}

/// `T::info()` after the WIT round trip, checked with [`PluginInfo::validate`] and for the
/// `viz` kind.
pub fn viz_info<T: Viz>() -> Result<PluginInfo, String> {
    checked_info(T::info(), PluginKind::Viz)
}

/// `T::chart_types()` after the WIT round trip, checked against `T::info()`: every chart type
/// names one of its viz types, at most once. (The host checks the rest when installing; `liteset
/// plugin build` runs those checks.)
pub fn chart_types<T: Viz>() -> Result<Vec<ChartType>, String> {
    let info = viz_info::<T>()?;
    let types: Vec<ChartType> = T::chart_types()
        .into_iter()
        .map(|c| glue::chart_type_from_wit(glue::chart_type_to_wit(c)))
        .collect();
    let mut seen = Vec::new();
    for c in &types {
        if !info.viz_types.contains(&c.viz_type) {
            return Err(format!(
                "chart type `{}` is not one of the plugin's viz types",
                c.viz_type
            ));
        }
        if seen.contains(&&c.viz_type) {
            return Err(format!("chart type `{}` is described twice", c.viz_type));
        }
        seen.push(&c.viz_type);
    }
    Ok(types)
}

fn checked_info(info: PluginInfo, kind: PluginKind) -> Result<PluginInfo, String> {
    let info = glue::info_from_wit(glue::info_to_wit(info));
    info.validate()?;
    if info.kind != kind {
        return Err(format!("plugin kind is {:?}, expected {kind:?}", info.kind));
    }
    Ok(info)
}

/// Builds a [`Table`] literal, panicking if it is invalid. Each entry is
/// `name => kind [values]` where `kind` is a [`TableBuilder`](crate::TableBuilder) method
/// (`float64`, `int64`, `boolean`, `timestamp_us`, `utf8`, `json`); nullable kinds take
/// `Option` values. An optional leading `index: name => kind [values];` adds index levels.
///
/// ```
/// use liteset_sdk::testing::table;
///
/// let t = table! {
///     index: "day" => timestamp_us [0, 86_400_000_000];
///     "sales" => float64 [Some(1.0), None],
///     "region" => utf8 [Some("north"), Some("south")],
/// };
/// assert_eq!(t.num_rows, 2);
/// assert_eq!(t.index.len(), 1);
/// ```
#[macro_export]
macro_rules! table {
    (
        $(index: $($iname:literal => $ikind:ident [$($iv:expr),* $(,)?]),+ ;)?
        $($name:literal => $kind:ident [$($v:expr),* $(,)?]),* $(,)?
    ) => {{
        let builder = $crate::TableBuilder::new();
        $($(
            let builder = builder.index(
                $crate::TableBuilder::new()
                    .$ikind($iname, [$($iv),*])
                    .build()
                    .expect("table!: invalid index level")
                    .columns
                    .remove(0),
            );
        )+)?
        $(let builder = builder.$kind($name, [$($v),*]);)*
        builder.build().expect("table!: invalid table")
    }};
}
