//! Viz plugins: finding the plugin of a chart's `viz_type` and calling its `build-query` and
//! `render` in the same per-call sandbox as post-processors.
//!
//! What a viz plugin returns goes to browsers, so it is untrusted: this module checks sizes
//! and that the payload is JSON; the SVG is sanitised by the caller (`crate::render`) before
//! anyone sees it.

use std::sync::Arc;

use serde_json::Value as Json;

use super::bindings::types::{Invocation, Size, Table};
use super::bindings::viz::Viz;
use super::bindings::viz::exports::liteset::plugin::visualization::QueryResult;
use super::call::Call;
use super::registry::{Loaded, Pre};
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

fn viz_pre(plugin: &Loaded) -> Result<&super::bindings::viz::VizPre<super::call::CallState>> {
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
            let inst: Viz = pre.instantiate_async(&mut call.store).await?;
            inst.liteset_plugin_visualization()
                .call_build_query(&mut call.store, &ctx, form_data)
                .await
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
        let results: Vec<QueryResult> = results
            .into_iter()
            .map(|(query_index, data)| QueryResult { query_index, data })
            .collect();
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
            let inst: Viz = pre.instantiate_async(&mut call.store).await?;
            inst.liteset_plugin_visualization()
                .call_render(&mut call.store, &ctx, form_data, &results, size)
                .await
        })
        .await;
        let out = call.finish(outcome)?;
        tracing::debug!(plugin = %plugin.summary.name, peak_memory = call.peak_memory(), "viz render");
        let bad = |detail: String| PluginError::BadOutput {
            plugin: plugin.summary.name.clone(),
            detail,
        };
        if out.payload.is_none() && out.svg.is_none() {
            return Err(bad(
                "the render returned neither a payload nor an SVG".into()
            ));
        }
        if out.svg.as_ref().is_some_and(|s| s.len() > MAX_SVG_BYTES) {
            return Err(bad(format!("the SVG is larger than {MAX_SVG_BYTES} bytes")));
        }
        let payload = match out.payload {
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
