//! Guest-side SDK for Liteset plugins.
//!
//! A Liteset plugin is a WebAssembly component (target `wasm32-wasip2`) implementing one
//! world of the WIT package `liteset:plugin@0.2.0` (vendored in this crate's `wit/`):
//!
//! - `post-processor`: one step of a chart's `post_processing` list, transforming a
//!   [`Table`]. Implement [`PostProcessor`] and call [`export_post_processor!`].
//! - `viz`: builds queries for a chart type and renders their results, and describes how its
//!   chart types appear in Superset's app ([`ChartType`]). Implement [`Viz`] and call
//!   [`export_viz!`].
//!
//! Plugin code only sees the plain Rust types of this crate ([`Table`], [`Column`],
//! [`ColumnData`], [`PluginError`], ...); the export macros convert to and from the generated
//! WIT bindings, validate tables received from the host, forward [`log`] records to the host
//! log and report panics there. The [`testing`] module runs plugin logic natively through the
//! same conversions, so `cargo test` works without wasm.
//!
//! ```
//! use liteset_sdk::{Invocation, PluginError, PluginInfo, PostProcessor, Table};
//!
//! struct Noop;
//!
//! impl PostProcessor for Noop {
//!     fn info() -> PluginInfo {
//!         PluginInfo::post_processor("noop", "1.0.0").description("Returns its input")
//!     }
//!
//!     fn process(_ctx: &Invocation, _params: &str, input: Table) -> Result<Table, PluginError> {
//!         Ok(input)
//!     }
//! }
//!
//! liteset_sdk::export_post_processor!(Noop);
//! ```
#![deny(missing_docs)]

#[doc(hidden)]
pub mod bindings;
mod chart;
mod glue;
mod logging;
mod table;
pub mod testing;
mod types;

pub use chart::{
    ChartType, CheckboxControl, Control, NumberControl, Section, SelectControl, SelectOption,
    Shared, TextControl,
};
/// Python's `repr()`/`str()` of floats, strings and JSON values (`py::float(1e16)` is
/// `1e+16`, `py::str("it's")` is `"it's"`): plugin authors need Superset-identical messages,
/// and Superset spells the values in them the Python way.
pub use liteset_pyrepr as py;
pub use log;
pub use logging::{HostLogger, host_log};
pub use table::{
    Column, ColumnData, StrIter, Table, TableBuilder, TableError, Value, bitmap_from_bools,
    bitmap_get, bitmap_len,
};
pub use types::{
    ChartOutput, ErrorKind, Invocation, PluginError, PluginInfo, PluginKind, QueryResult, Size,
};

/// The version of the `liteset:plugin` WIT package this SDK targets.
pub const WIT_VERSION: &str = "0.2.0";

/// A post-processing step: one entry of a chart's `post_processing` list names the plugin
/// (`{"operation": "<name>", "options": {...}}`) and the host calls [`process`](Self::process)
/// with the previous step's table.
pub trait PostProcessor {
    /// Describes the plugin; [`PluginInfo::post_processor`] fills in the kind.
    fn info() -> PluginInfo;

    /// Transforms `input`. `params` is the step's `options` object as JSON (`{}` when absent).
    fn process(ctx: &Invocation, params: &str, input: Table) -> Result<Table, PluginError>;
}

/// A visualization plugin rendering one or more chart `viz_type`s.
pub trait Viz {
    /// Describes the plugin; [`PluginInfo::viz`] fills in the kind and viz types.
    fn info() -> PluginInfo;

    /// Turns a chart's `form_data` (JSON) into a chart-data query context (JSON), for charts
    /// saved without one. Defaults to an `unsupported` error.
    fn build_query(ctx: &Invocation, form_data: &str) -> Result<String, PluginError> {
        let _ = (ctx, form_data);
        Err(PluginError::unsupported(
            "this plugin does not build queries",
        ))
    }

    /// Renders the results of the query context for a chart of `size`.
    fn render(
        ctx: &Invocation,
        form_data: &str,
        results: Vec<QueryResult>,
        size: Size,
    ) -> Result<ChartOutput, PluginError>;

    /// How the plugin's chart types appear in Superset's app (Explore's gallery and control
    /// panel), at most one per viz type of [`info`](Self::info); a viz type left out gets the
    /// host's default. Defaults to [`ChartType::default_for`] each viz type, which is what the
    /// host shows for plugins built before this export existed.
    fn chart_types() -> Vec<ChartType> {
        let info = Self::info();
        info.viz_types
            .iter()
            .map(|v| ChartType::default_for(v, &info.label, &info.description))
            .collect()
    }
}

/// Exports a [`PostProcessor`] implementation as the component's `post-processor` world.
///
/// Use once per plugin crate, at module level: `liteset_sdk::export_post_processor!(MyType);`.
/// On wasm32 it emits the component exports (`liteset:plugin/meta@0.2.0` and
/// `liteset:plugin/post-process@0.2.0`); on other targets it only checks that the type
/// implements the trait, so native `cargo test` works.
#[macro_export]
macro_rules! export_post_processor {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type __LitesetPostProcessorExport = $crate::__private::PostProcessorGlue<$plugin>;
            $crate::__private::bindings::meta::export_raw!(
                __LitesetPostProcessorExport with_types_in $crate::__private::bindings::meta
            );
            $crate::__private::bindings::post_processor::export_raw!(
                __LitesetPostProcessorExport with_types_in $crate::__private::bindings::post_processor
            );
        };
        const _: fn() = || {
            fn assert_post_processor<T: $crate::PostProcessor>() {}
            assert_post_processor::<$plugin>();
        };
    };
}

/// Exports a [`Viz`] implementation as the component's `viz` world.
///
/// Use once per plugin crate, at module level: `liteset_sdk::export_viz!(MyType);`. On wasm32
/// it emits the component exports (`liteset:plugin/meta@0.2.0`,
/// `liteset:plugin/visualization@0.2.0` and `liteset:plugin/chart-app@0.2.0`); on other
/// targets it only checks that the type implements the trait.
#[macro_export]
macro_rules! export_viz {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            type __LitesetVizExport = $crate::__private::VizGlue<$plugin>;
            $crate::__private::bindings::meta::export_raw!(
                __LitesetVizExport with_types_in $crate::__private::bindings::meta
            );
            $crate::__private::bindings::viz::export_raw!(
                __LitesetVizExport with_types_in $crate::__private::bindings::viz
            );
            $crate::__private::bindings::chart_app::export_raw!(
                __LitesetVizExport with_types_in $crate::__private::bindings::chart_app
            );
        };
        const _: fn() = || {
            fn assert_viz<T: $crate::Viz>() {}
            assert_viz::<$plugin>();
        };
    };
}

/// Used by the export macros; not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings;
    pub use crate::glue::{PostProcessorGlue, VizGlue};
}

#[cfg(test)]
mod tests;

/// The README's examples are compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctests {}
