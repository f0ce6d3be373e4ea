//! Viz plugins as chart types of Superset's own web app.
//!
//! Superset 6.0's app loads chart types at run time when its `DYNAMIC_PLUGINS` flag is on: it
//! lists `/dynamic-plugins/api/read` and `import()`s each entry's bundle. Liteset's one bundle
//! (the app bridge, `api/chart_app/bridge.js`) registers a chart type per entry of
//! [`chart_types`], with the control panel the plugin declares. The app then runs its usual
//! cycle: the bridge's build-query sends a query context without queries, which
//! [`super::chart_data`] completes with the plugin's own `build-query` (the app's build-query
//! must be synchronous and the plugin runs here), the rows come back from `/chart/data`
//! through every check any chart's data passes, and the bridge asks [`draw`] for the picture
//! of those rows at its holder's size: the same plugin call, the same sanitiser and the same
//! table as `render.svg` and thumbnails, so the app, the server-side renders and thumbnails
//! draw the same picture.

use serde_json::Value as Json;
use sha2::{Digest, Sha256};

use super::Error;
use crate::auth::CurrentUser;
use crate::plugins::chart_type::ChartType;
use crate::plugins::viz::frame_table;
use crate::plugins::{Kind, Source};
use crate::query::frame::Frame;
use crate::render::{self, RenderError, sanitize};
use crate::state::AppState;

/// Size the gallery's thumbnails are sanitised to (the SVG scales to its `<img>`).
const THUMBNAIL_SIZE: (u32, u32) = (220, 140);

/// The gallery picture of a chart type whose plugin gives none: three bars.
const DEFAULT_THUMBNAIL: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"220\" \
    height=\"140\" viewBox=\"0 0 220 140\"><rect x=\"40\" y=\"70\" width=\"36\" height=\"50\" \
    fill=\"#5AC189\"/><rect x=\"92\" y=\"40\" width=\"36\" height=\"80\" fill=\"#1F77B4\"/>\
    <rect x=\"144\" y=\"20\" width=\"36\" height=\"100\" fill=\"#666666\"/></svg>";

/// At most this many result sets reach one drawing (a query context's queries).
pub const MAX_QUERIES: usize = 32;

/// A chart type the app shows, with the plugin that draws it.
#[derive(Debug, Clone)]
pub struct AppChartType {
    /// The plugin's name.
    pub plugin: String,
    /// The plugin's version.
    pub version: String,
    /// The chart type as the plugin describes it.
    pub chart: ChartType,
    /// Its thumbnail, sanitised: the plugin's, or a plain one when it gives none (or one
    /// the sanitiser refuses), since the gallery shows a picture for every chart type.
    pub thumbnail: String,
}

/// The chart types of the uploaded viz plugins, by viz type. Built-in viz types are
/// Superset's own charts in the app, so the built-in plugin adds none; a viz type two plugins
/// declare is listed once, for the plugin that draws it everywhere else
/// ([`crate::plugins::Plugins::viz_for`]: the first by name).
pub async fn chart_types(state: &AppState) -> Result<Vec<AppChartType>, Error> {
    let mut out: Vec<AppChartType> = Vec::new();
    for p in state.plugins.list().await? {
        if p.kind != Kind::Viz || p.source != Source::Uploaded {
            continue;
        }
        for chart in &p.chart_types {
            if out.iter().any(|t| t.chart.viz_type == chart.viz_type) {
                continue; // `list` is by name, so the first one is the one that draws it.
            }
            let thumbnail = chart.thumbnail.as_deref().and_then(|svg| {
                let (w, h) = THUMBNAIL_SIZE;
                sanitize::sanitize(svg, w, h)
                    .inspect_err(|e| {
                        tracing::warn!(plugin = %p.name, viz_type = %chart.viz_type, error = %e, "thumbnail refused")
                    })
                    .ok()
            })
            .unwrap_or_else(|| DEFAULT_THUMBNAIL.to_owned());
            out.push(AppChartType {
                plugin: p.name.clone(),
                version: p.version.clone(),
                chart: chart.clone(),
                thumbnail,
            });
        }
    }
    out.sort_by(|a, b| a.chart.viz_type.cmp(&b.chart.viz_type));
    Ok(out)
}

/// A short digest of what the app would load: changes whenever a plugin is installed,
/// replaced or removed, so bundle URLs carrying it are never served stale from a cache.
pub async fn revision(state: &AppState) -> Result<String, Error> {
    let mut h = Sha256::new();
    for p in state.plugins.list().await? {
        if p.kind == Kind::Viz && p.source == Source::Uploaded {
            h.update(p.sha256.as_bytes());
            h.update([0]);
        }
    }
    Ok(hex::encode(&h.finalize()[..8]))
}

/// One result set as the app holds it: a chart-data answer's `data` (records), `colnames`
/// and `coltypes` (Superset's `GenericDataType`: 2 is temporal).
#[derive(Debug)]
pub struct Rows {
    /// The records.
    pub data: Json,
    /// Column names in their order (may be empty: then the records' order).
    pub colnames: Vec<String>,
    /// Generic types, parallel to `colnames`.
    pub coltypes: Vec<i64>,
}

/// What the app asks to be drawn.
#[derive(Debug)]
pub struct Drawing {
    /// The chart's viz type.
    pub viz_type: String,
    /// The form data the app holds (a JSON object).
    pub form_data: Json,
    /// The results of its query context, in order.
    pub queries: Vec<Rows>,
    /// The holder's size in CSS pixels.
    pub size: (u32, u32),
}

/// What a drawing produced: the sanitised SVG and/or the plugin's JSON payload.
#[derive(Debug)]
pub struct Drawn {
    /// The sanitised SVG document.
    pub svg: Option<String>,
    /// The JSON payload for a client-side renderer.
    pub payload: Option<Json>,
}

/// Superset's `GenericDataType.TEMPORAL`.
const TEMPORAL: i64 = 2;

/// Draws rows the caller already holds with the viz plugin of `viz_type`. Nothing is read
/// from any database: the rows came from `/chart/data`, which checked the caller's access.
///
/// The form data of a saved chart (`slice_id`) gets what `render.svg` adds to its params, its
/// name and its dataset's verbose names (keys the app does not send), from the chart record
/// the caller may read, so both draw the same picture.
pub async fn draw(
    state: &AppState,
    user: &CurrentUser,
    mut input: Drawing,
    request_id: &str,
) -> Result<Drawn, Error> {
    let (width, height) = input.size;
    render::check_size(width, height, false)?;
    let Some(form) = input.form_data.as_object_mut() else {
        return Err(invalid("form_data", "Must be a JSON object."));
    };
    let slice_id = match form.get("slice_id") {
        None | Some(Json::Null) => None,
        Some(v) => Some(
            v.as_i64()
                .ok_or_else(|| invalid("form_data", "slice_id must be an integer."))?,
        ),
    };
    if let Some(id) = slice_id {
        let saved = super::chart_data::saved(state, user, id).await?;
        let filled = super::render::render_form_data(state, &saved.chart).await?;
        for key in ["slice_name", "verbose_map"] {
            if let (false, Some(v)) = (form.contains_key(key), filled.get(key)) {
                form.insert(key.to_owned(), v.clone());
            }
        }
    }
    if input.queries.len() > MAX_QUERIES {
        return Err(invalid(
            "queries",
            &format!("At most {MAX_QUERIES} result sets are drawn."),
        ));
    }
    let plugin = state
        .plugins
        .viz_for(&input.viz_type)
        .await?
        .ok_or_else(|| RenderError::NoPlugin(input.viz_type.clone()))?;
    let mut tables = Vec::with_capacity(input.queries.len());
    for (i, q) in input.queries.iter().enumerate() {
        let temporal: Vec<String> = q
            .colnames
            .iter()
            .zip(&q.coltypes)
            .filter(|(_, t)| **t == TEMPORAL)
            .map(|(c, _)| c.clone())
            .collect();
        let frame = Frame::from_records(&q.data, &q.colnames, &temporal)
            .map_err(|m| invalid("queries", &format!("result {i}: {m}")))?;
        tables.push((i as u32, frame_table(&frame)));
    }
    let out = state
        .plugins
        .render(
            &plugin,
            &input.form_data.to_string(),
            tables,
            (width, height),
            request_id,
        )
        .await?;
    let svg = match out.svg {
        None => None,
        Some(raw) => {
            Some(
                sanitize::sanitize(&raw, width, height).map_err(|e| RenderError::BadSvg {
                    plugin: plugin.summary.name.clone(),
                    detail: e.to_string(),
                })?,
            )
        }
    };
    Ok(Drawn {
        svg,
        payload: out.payload,
    })
}

fn invalid(field: &str, message: &str) -> Error {
    Error::Invalid(serde_json::json!({ field: [message] }))
}
