//! Viz plugins: finding the plugin of a chart's `viz_type` and calling its `build-query` and
//! `render` in the same per-call sandbox as post-processors.
//!
//! What a viz plugin returns goes to browsers, so it is untrusted: this module checks sizes
//! and that the payload is JSON; the SVG is sanitised by the caller (`crate::render`) before
//! anyone sees it.

use std::sync::Arc;

use serde_json::Value as Json;

use super::bindings::types::{Invocation, Size, Table};
use super::bindings::v020::viz::exports::liteset::plugin::chart_app as wit;
use super::call::Call;
use super::chart_type::{ChartType, Control, Section, SelectOption, SharedControl};
use super::registry::{Loaded, Pre, VizPre, with_viz};
use super::{Kind, PluginError, Plugins, Result, table};

/// Largest SVG document a render may return (before sanitising).
pub const MAX_SVG_BYTES: usize = 2 << 20;
/// Largest JSON payload a render may return.
pub const MAX_PAYLOAD_BYTES: usize = 8 << 20;
/// Largest query context `build-query` may return.
pub const MAX_QUERY_CONTEXT_BYTES: usize = 1 << 20;

/// What a render produced, size-checked; the SVG is not yet sanitised.
#[derive(Debug, Clone)]
pub struct VizOutput {
    /// JSON for a client-side renderer.
    pub payload: Option<Json>,
    /// The raw SVG document.
    pub svg: Option<String>,
}

fn invocation(request_id: &str, operation: &str) -> Invocation {
    Invocation {
        request_id: request_id.to_owned(),
        operation: operation.to_owned(),
        locale: "en".into(),
        time_zone: "UTC".into(),
    }
}

fn viz_pre(plugin: &Loaded) -> Result<&VizPre> {
    match &plugin.pre {
        Pre::Viz(pre) => Ok(pre),
        Pre::PostProcessor(_) => Err(PluginError::Rejected(format!(
            "Plugin {} is not a viz plugin",
            plugin.summary.name
        ))),
    }
}

impl Plugins {
    /// The plugin rendering `viz_type`: an uploaded viz plugin declaring it (the first by
    /// name, so admins can replace a built-in chart type), else the built-in viz plugin when
    /// it declares it, else `None`.
    pub async fn viz_for(&self, viz_type: &str) -> Result<Option<Arc<Loaded>>> {
        let uploaded = {
            let map = self.uploaded.read().unwrap_or_else(|e| e.into_inner());
            let mut found: Vec<&Arc<Loaded>> = map
                .values()
                .filter(|l| {
                    l.summary.kind == Kind::Viz && l.summary.viz_types.iter().any(|v| v == viz_type)
                })
                .collect();
            found.sort_by(|a, b| a.summary.name.cmp(&b.summary.name));
            found.first().map(|l| Arc::clone(l))
        };
        if uploaded.is_some() {
            return Ok(uploaded);
        }
        let builtin = self.builtin_viz().await?;
        Ok(builtin
            .summary
            .viz_types
            .iter()
            .any(|v| v == viz_type)
            .then_some(builtin))
    }

    /// Turns a chart's form data (JSON text) into a query context, which must be a JSON
    /// object; the chart-data layer validates it like any client's.
    pub async fn build_query(
        &self,
        plugin: &Loaded,
        form_data: &str,
        request_id: &str,
    ) -> Result<Json> {
        let pre = viz_pre(plugin)?;
        let _slot = self.runtime.slot().await?;
        let mut call = Call::new(
            &self.runtime.engine,
            &plugin.summary.name,
            request_id,
            plugin.limits,
        );
        let ctx = invocation(request_id, "build-query");
        let budget = call.outer_timeout();
        let outcome = tokio::time::timeout(budget, async {
            with_viz!(pre, call.store, |inst, _m| inst
                .liteset_plugin_visualization()
                .call_build_query(&mut call.store, &ctx, form_data)
                .await)
        })
        .await;
        let text = call.finish(outcome)?;
        let bad = |detail: String| PluginError::BadOutput {
            plugin: plugin.summary.name.clone(),
            detail,
        };
        if text.len() > MAX_QUERY_CONTEXT_BYTES {
            return Err(bad(format!(
                "the query context is larger than {MAX_QUERY_CONTEXT_BYTES} bytes"
            )));
        }
        let value: Json = serde_json::from_str(&text)
            .map_err(|e| bad(format!("the query context is not JSON: {e}")))?;
        if !value.is_object() {
            return Err(bad("the query context is not a JSON object".into()));
        }
        Ok(value)
    }

    /// Renders `results` (query index, table) for a chart of `width` × `height`.
    pub async fn render(
        &self,
        plugin: &Loaded,
        form_data: &str,
        results: Vec<(u32, Table)>,
        (width, height): (u32, u32),
        request_id: &str,
    ) -> Result<VizOutput> {
        let pre = viz_pre(plugin)?;
        let _slot = self.runtime.slot().await?;
        let mut call = Call::new(
            &self.runtime.engine,
            &plugin.summary.name,
            request_id,
            plugin.limits,
        );
        let ctx = invocation(request_id, "render");
        let size = Size { width, height };
        let budget = call.outer_timeout();
        let outcome = tokio::time::timeout(budget, async {
            with_viz!(pre, call.store, |inst, m| {
                // `query-result` and `chart-output` belong to each version's `visualization`.
                use m::exports::liteset::plugin::visualization::QueryResult;
                let results: Vec<QueryResult> = results
                    .into_iter()
                    .map(|(query_index, data)| QueryResult { query_index, data })
                    .collect();
                inst.liteset_plugin_visualization()
                    .call_render(&mut call.store, &ctx, form_data, &results, size)
                    .await
                    .map(|r| r.map(|o| (o.payload, o.svg)))
            })
        })
        .await;
        let (payload, svg) = call.finish(outcome)?;
        let out = VizOutput { payload: None, svg };
        tracing::debug!(plugin = %plugin.summary.name, peak_memory = call.peak_memory(), "viz render");
        let bad = |detail: String| PluginError::BadOutput {
            plugin: plugin.summary.name.clone(),
            detail,
        };
        if payload.is_none() && out.svg.is_none() {
            return Err(bad(
                "the render returned neither a payload nor an SVG".into()
            ));
        }
        if out.svg.as_ref().is_some_and(|s| s.len() > MAX_SVG_BYTES) {
            return Err(bad(format!("the SVG is larger than {MAX_SVG_BYTES} bytes")));
        }
        let payload = match payload {
            None => None,
            Some(p) if p.len() > MAX_PAYLOAD_BYTES => {
                return Err(bad(format!(
                    "the payload is larger than {MAX_PAYLOAD_BYTES} bytes"
                )));
            }
            Some(p) => Some(
                serde_json::from_str(&p)
                    .map_err(|e| bad(format!("the payload is not JSON: {e}")))?,
            ),
        };
        Ok(VizOutput {
            payload,
            svg: out.svg,
        })
    }
}

/// The WIT table of a chart-data frame, for a render's input.
pub fn frame_table(frame: &crate::query::frame::Frame) -> Table {
    table::from_frame(frame)
}

/// The domain form of a 0.2.0 `chart-app` chart type (checked by `chart_type::validate`).
pub(super) fn chart_type_from_wit(c: wit::ChartType) -> ChartType {
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

fn control_from_wit(c: wit::Control) -> Control {
    match c {
        wit::Control::Shared(s) => Control::Shared(match s {
            wit::SharedControl::Metric => SharedControl::Metric,
            wit::SharedControl::Metrics => SharedControl::Metrics,
            wit::SharedControl::Groupby => SharedControl::Groupby,
            wit::SharedControl::Columns => SharedControl::Columns,
            wit::SharedControl::XAxis => SharedControl::XAxis,
            wit::SharedControl::TimeGrainSqla => SharedControl::TimeGrainSqla,
            wit::SharedControl::AdhocFilters => SharedControl::AdhocFilters,
            wit::SharedControl::RowLimit => SharedControl::RowLimit,
            wit::SharedControl::SeriesLimit => SharedControl::SeriesLimit,
            wit::SharedControl::OrderDesc => SharedControl::OrderDesc,
            wit::SharedControl::ColorScheme => SharedControl::ColorScheme,
            wit::SharedControl::YAxisFormat => SharedControl::YAxisFormat,
            wit::SharedControl::XAxisTimeFormat => SharedControl::XAxisTimeFormat,
            wit::SharedControl::CurrencyFormat => SharedControl::CurrencyFormat,
        }),
        wit::Control::Text(t) => Control::Text {
            name: t.name,
            label: t.label,
            description: t.description,
            default: t.default,
        },
        wit::Control::Number(n) => Control::Number {
            name: n.name,
            label: n.label,
            description: n.description,
            default: n.default,
            min: n.min,
            max: n.max,
            integer: n.integer,
        },
        wit::Control::Checkbox(c) => Control::Checkbox {
            name: c.name,
            label: c.label,
            description: c.description,
            default: c.default,
        },
        wit::Control::Select(s) => Control::Select {
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
        },
    }
}
