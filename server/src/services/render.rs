//! Server-rendered charts: a saved chart drawn by the viz plugin of its `viz_type` as a
//! sanitised SVG, rasterised to PNG, or as Superset's thumbnail.
//!
//! A render runs the chart's query context (saved, or built by the viz plugin from `params`)
//! through the chart-data pipeline (same access checks, same results cache), hands the rows to
//! the viz plugin, sanitises the SVG and caches the finished bytes under a key of the plugin's
//! identity, the size, the form data and the rows.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value as Json_, json};

use super::Error;
use super::chart_data::{self, Executed};
use crate::auth::CurrentUser;
use crate::plugins::viz::frame_table;
use crate::query::context;
use crate::query::runner::CachePolicy;
use crate::render::{self, RenderError, raster, sanitize};
use crate::state::AppState;
use crate::state::SavedChart;
use crate::store::model::Record;

/// A thumbnail request's outcome.
#[derive(Debug)]
pub enum Thumbnail {
    /// The PNG.
    Png(Vec<u8>),
    /// The digest asked for is not the chart's current one, which this is.
    Moved(String),
}

/// `GET /chart/<pk>/render.svg`: the chart as a sanitised SVG document of `size` pixels.
pub async fn svg(
    state: &AppState,
    user: &CurrentUser,
    pk: i64,
    size: (u32, u32),
    force: bool,
) -> Result<Arc<[u8]>, Error> {
    let saved = chart_data::saved(state, user, pk).await?;
    Ok(chart_svg(state, user, &saved, size, force).await?.svg)
}

/// `GET /chart/<pk>/render.png`: the chart rasterised from its SVG.
pub async fn png(
    state: &AppState,
    user: &CurrentUser,
    pk: i64,
    size: (u32, u32),
    force: bool,
) -> Result<Vec<u8>, Error> {
    let saved = chart_data::saved(state, user, pk).await?;
    chart_png(state, user, &saved, size, force).await
}

/// Superset's chart thumbnail: the PNG when `digest` is the chart's current digest, else the
/// current digest to redirect to.
pub async fn thumbnail(
    state: &AppState,
    user: &CurrentUser,
    pk: i64,
    digest: &str,
    size: (u32, u32),
    force: bool,
) -> Result<Thumbnail, Error> {
    let saved = chart_data::saved(state, user, pk).await?;
    let current = super::chart::digest(&saved.chart);
    if digest != current {
        return Ok(Thumbnail::Moved(current));
    }
    Ok(Thumbnail::Png(
        chart_png(state, user, &saved, size, force).await?,
    ))
}

/// The form data a viz plugin renders with: the chart's params with the ids Superset adds, its
/// name (for the title) and the dataset's verbose names (for labels), as Superset's frontend
/// has them.
pub(super) async fn render_form_data(state: &AppState, chart: &Record) -> Result<Json_, Error> {
    let mut fd = super::chart::form_data(chart);
    if fd.get("slice_name").is_none() {
        fd["slice_name"] = json!(chart.text("slice_name"));
    }
    if fd.get("verbose_map").is_none()
        && let Some(ds) = chart.get::<i64>("datasource_id")
    {
        let loaded = chart_data::datasource(state, ds).await?;
        let mut verbose = serde_json::Map::new();
        for c in &loaded.0.columns {
            verbose.insert(
                c.name.clone(),
                json!(c.verbose_name.clone().unwrap_or_else(|| c.name.clone())),
            );
        }
        for m in &loaded.0.metrics {
            verbose.insert(
                m.name.clone(),
                json!(m.verbose_name.clone().unwrap_or_else(|| m.name.clone())),
            );
        }
        fd["verbose_map"] = Json_::Object(verbose);
    }
    Ok(fd)
}

/// A finished SVG render and how long it may be cached.
struct Rendered {
    svg: Arc<[u8]>,
    key: String,
    policy: CachePolicy,
}

/// Runs the chart's queries and renders them with its viz plugin (or takes the cached render).
async fn chart_svg(
    state: &AppState,
    user: &CurrentUser,
    saved: &SavedChart,
    (width, height): (u32, u32),
    force: bool,
) -> Result<Rendered, Error> {
    let chart = &saved.chart;
    let viz_type = chart.text("viz_type");
    let plugin = state
        .plugins
        .viz_for(&viz_type)
        .await?
        .ok_or_else(|| RenderError::NoPlugin(viz_type.clone()))?;
    let mut body = saved.context.clone().ok_or(Error::NoQueryContext)?;
    if let Some(obj) = body.as_object_mut() {
        obj.insert("force".into(), json!(force));
        obj.insert("result_type".into(), json!("full"));
        obj.insert("result_format".into(), json!("json"));
    }
    let ctx = context::parse(&body, &state.plugins.post_processor_names())?;
    let Executed { answers, policy } =
        chart_data::execute(state, user, ctx, &Arc::new(body), Some(chart)).await?;
    let form_data = render_form_data(state, chart).await?.to_string();
    // The key covers everything the picture depends on: the plugin (by content), the size,
    // the form data and the rows themselves, so a re-run that changed the data misses.
    let summary = &plugin.summary;
    let (w, h) = (width.to_le_bytes(), height.to_le_bytes());
    let mut parts: Vec<Vec<u8>> = vec![
        b"svg".to_vec(),
        summary.sha256.as_bytes().to_vec(),
        summary.name.as_bytes().to_vec(),
        viz_type.as_bytes().to_vec(),
        w.to_vec(),
        h.to_vec(),
        form_data.as_bytes().to_vec(),
    ];
    for a in &answers {
        parts.push(serde_json::to_vec(&a.payload["colnames"]).unwrap_or_default());
        parts.push(serde_json::to_vec(&a.payload["data"]).unwrap_or_default());
    }
    let key = render::key(&parts.iter().map(Vec::as_slice).collect::<Vec<_>>());
    if !force && let Some(svg) = state.renders.get(&key).await {
        return Ok(Rendered { svg, key, policy });
    }
    let tables = answers
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            a.frame
                .as_ref()
                .map(|f| (u32::try_from(i).unwrap_or(u32::MAX), frame_table(f)))
        })
        .collect();
    let started = Instant::now();
    let request_id = format!("chart-{}", chart.id);
    let out = state
        .plugins
        .render(&plugin, &form_data, tables, (width, height), &request_id)
        .await?;
    let raw = out
        .svg
        .ok_or_else(|| RenderError::NoSvg(summary.name.clone()))?;
    let clean = sanitize::sanitize(&raw, width, height).map_err(|e| RenderError::BadSvg {
        plugin: summary.name.clone(),
        detail: e.to_string(),
    })?;
    tracing::debug!(chart = chart.id, plugin = %summary.name, elapsed_ms = started.elapsed().as_millis() as u64, bytes = clean.len(), "chart rendered");
    let svg: Arc<[u8]> = Arc::from(clean.into_bytes());
    state.renders.insert(key.clone(), svg.clone(), policy).await;
    Ok(Rendered { svg, key, policy })
}

/// At most this many rasterisations run at once (each holds a pixmap and a core).
static RASTER_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// The chart as PNG, rasterised from its SVG (or taken from the cache).
async fn chart_png(
    state: &AppState,
    user: &CurrentUser,
    saved: &SavedChart,
    (width, height): (u32, u32),
    force: bool,
) -> Result<Vec<u8>, Error> {
    let rendered = chart_svg(state, user, saved, (width, height), force).await?;
    let key = render::key(&[b"png", rendered.key.as_bytes()]);
    if !force && let Some(png) = state.renders.get(&key).await {
        return Ok(png.to_vec());
    }
    let _slot = RASTER_SLOTS
        .acquire()
        .await
        .map_err(|e| Error::internal(&e))?;
    let svg = rendered.svg.clone();
    let started = Instant::now();
    let png = tokio::task::spawn_blocking(move || {
        raster::png(std::str::from_utf8(&svg).unwrap_or_default(), width, height)
    })
    .await
    .map_err(|e| Error::internal(&e))?
    .map_err(RenderError::from)?;
    tracing::debug!(
        chart = saved.chart.id,
        elapsed_ms = started.elapsed().as_millis() as u64,
        bytes = png.len(),
        "chart rasterised"
    );
    state
        .renders
        .insert(key, Arc::from(png.as_slice()), rendered.policy)
        .await;
    Ok(png)
}
