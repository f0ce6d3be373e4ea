//! Server-rendered charts: `GET /api/v1/chart/<pk>/render.svg` and `render.png`, Superset's
//! chart thumbnail (`/api/v1/chart/<pk>/thumbnail/<digest>/`), and the dashboard page
//! `/dashboard/<id_or_slug>/` laying out its charts' SVGs by `position_json`.
//!
//! A render runs the chart's query context (saved, or built by the viz plugin from `params`)
//! through the chart-data path (same RBAC, same results cache), hands the rows to the viz
//! plugin of the chart's `viz_type`, sanitises the SVG and caches the finished bytes under a
//! key of the plugin's identity, the size, the form data and the rows.

use std::sync::Arc;
use std::time::Instant;

use poem::http::StatusCode;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Html};
use poem_openapi::{ApiResponse, OpenApi};
use serde_json::{Value as Json_, json};

use super::Tags;
use super::chart_data::{self, Executed};
use super::error::ApiError;
use super::extract::Auth;
use super::resource;
use crate::auth::{CurrentUser, Principal};
use crate::plugins::viz::frame_table;
use crate::query::context::{self};
use crate::query::runner::CachePolicy;
use crate::render::{self, RenderError, raster, sanitize};
use crate::state::AppState;
use crate::store::catalog::{self, CHART, DASHBOARD};
use crate::store::model::Record;

/// Served SVG may be opened as a document: it may not run or load anything.
const SVG_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// An SVG chart.
#[derive(ApiResponse)]
pub enum SvgResponse {
    /// The sanitised SVG document.
    #[oai(status = 200, content_type = "image/svg+xml")]
    Svg(
        Binary<Vec<u8>>,
        #[oai(header = "Content-Security-Policy")] String,
        #[oai(header = "X-Content-Type-Options")] String,
    ),
}

/// A PNG chart.
#[derive(ApiResponse)]
pub enum PngResponse {
    /// The chart drawn as PNG.
    #[oai(status = 200, content_type = "image/png")]
    Png(Binary<Vec<u8>>),
}

/// Superset's thumbnail answers.
#[derive(ApiResponse)]
pub enum ThumbnailResponse {
    /// The thumbnail (rendered in process, so never "202 task queued").
    #[oai(status = 200, content_type = "image/png")]
    Png(Binary<Vec<u8>>),
    /// The digest is not the chart's current one: go to the current thumbnail.
    #[oai(status = 302)]
    Moved(#[oai(header = "Location")] String),
}

/// A browser page.
#[derive(ApiResponse)]
pub enum PageResponse {
    /// The page.
    #[oai(status = 200)]
    Page(Html<String>),
    /// Not logged in: the login form, coming back here afterwards.
    #[oai(status = 302)]
    Login(#[oai(header = "Location")] String),
}

/// The render endpoints.
pub struct RenderApi {
    pub(super) state: Arc<AppState>,
}

fn size(
    width: Option<u32>,
    height: Option<u32>,
    default: (u32, u32),
    png: bool,
) -> Result<(u32, u32), ApiError> {
    let (w, h) = (width.unwrap_or(default.0), height.unwrap_or(default.1));
    render::check_size(w, h, png)?;
    Ok((w, h))
}

fn truthy(v: Option<&str>) -> bool {
    v.is_some_and(|f| f == "true" || f == "1")
}

/// A chart the user may read (404 missing, 403 out of reach), as chart data checks it.
async fn readable_chart(
    state: &AppState,
    auth: &Auth,
    pk: i64,
) -> Result<(Arc<CurrentUser>, Record), ApiError> {
    let user = resource::authorized(state, auth, "can_read", "Chart").await?;
    let scope = catalog::chart_scope(&user.grants());
    resource::in_reach(state, &CHART, pk, &scope, resource::forbidden).await?;
    let chart = state.store.load_one(&CHART, pk, &[]).await?;
    Ok((user, chart))
}

/// The form data a viz plugin renders with: the chart's params with the ids Superset adds, its
/// name (for the title) and the dataset's verbose names (for labels), as Superset's frontend
/// has them.
async fn render_form_data(state: &AppState, chart: &Record) -> Result<Json_, ApiError> {
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
    chart: &Record,
    (width, height): (u32, u32),
    force: bool,
) -> Result<Rendered, ApiError> {
    let viz_type = chart.text("viz_type");
    let plugin = state
        .plugins
        .viz_for(&viz_type)
        .await?
        .ok_or_else(|| RenderError::NoPlugin(viz_type.clone()))?;
    let mut body = chart_data::chart_context(state, chart).await?;
    if let Some(obj) = body.as_object_mut() {
        obj.insert("force".into(), json!(force));
        obj.insert("result_type".into(), json!("full"));
        obj.insert("result_format".into(), json!("json"));
    }
    let ctx = context::parse(&body, &state.plugins.post_processor_names())?;
    let Executed { answers, policy } = chart_data::execute(state, user, ctx, &body).await?;
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
    chart: &Record,
    (width, height): (u32, u32),
    force: bool,
) -> Result<Vec<u8>, ApiError> {
    let rendered = chart_svg(state, user, chart, (width, height), force).await?;
    let key = render::key(&[b"png", rendered.key.as_bytes()]);
    if !force && let Some(png) = state.renders.get(&key).await {
        return Ok(png.to_vec());
    }
    let _slot = RASTER_SLOTS
        .acquire()
        .await
        .map_err(|e| ApiError::internal(&e))?;
    let svg = rendered.svg.clone();
    let started = Instant::now();
    let png = tokio::task::spawn_blocking(move || {
        raster::png(std::str::from_utf8(&svg).unwrap_or_default(), width, height)
    })
    .await
    .map_err(|e| ApiError::internal(&e))?
    .map_err(RenderError::from)?;
    tracing::debug!(
        chart = chart.id,
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

#[OpenApi(tag = "Tags::Chart")]
impl RenderApi {
    /// The chart drawn by its viz plugin as a sanitised SVG document (`width`/`height` in CSS
    /// pixels, 16–4096, default 800×500; `force=true` skips the caches). Needs the same
    /// access as the chart's data.
    #[oai(
        path = "/api/v1/chart/:pk/render.svg",
        method = "get",
        operation_id = "chart_render_svg"
    )]
    async fn render_svg(
        &self,
        req: &poem::Request,
        auth: Auth,
        pk: Path<i64>,
        width: Query<Option<u32>>,
        height: Query<Option<u32>>,
        force: Query<Option<String>>,
    ) -> Result<SvgResponse, ApiError> {
        let size = size(width.0, height.0, render::DEFAULT_SIZE, false)?;
        let (user, chart) = readable_chart(&self.state, &auth, pk.0).await?;
        let work = chart_svg(&self.state, &user, &chart, size, truthy(force.0.as_deref()));
        let rendered = chart_data::until_gone(&self.state, req, work).await?;
        Ok(SvgResponse::Svg(
            Binary(rendered.svg.to_vec()),
            SVG_CSP.into(),
            "nosniff".into(),
        ))
    }

    /// The chart as PNG, rasterised in process from its SVG (at most 2048×2048 pixels of
    /// area; default 800×500).
    #[oai(
        path = "/api/v1/chart/:pk/render.png",
        method = "get",
        operation_id = "chart_render_png"
    )]
    async fn render_png(
        &self,
        req: &poem::Request,
        auth: Auth,
        pk: Path<i64>,
        width: Query<Option<u32>>,
        height: Query<Option<u32>>,
        force: Query<Option<String>>,
    ) -> Result<PngResponse, ApiError> {
        let size = size(width.0, height.0, render::DEFAULT_SIZE, true)?;
        let (user, chart) = readable_chart(&self.state, &auth, pk.0).await?;
        let work = chart_png(&self.state, &user, &chart, size, truthy(force.0.as_deref()));
        let png = chart_data::until_gone(&self.state, req, work).await?;
        Ok(PngResponse::Png(Binary(png)))
    }

    /// Superset's chart thumbnail: the chart as an 800×600 PNG (`width`/`height` may ask for
    /// another size). A digest other than the chart's current one (its `thumbnail_url`)
    /// redirects to the current one.
    #[oai(
        path = "/api/v1/chart/:pk/thumbnail/:digest",
        method = "get",
        operation_id = "chart_thumbnail"
    )]
    #[allow(clippy::too_many_arguments)] // one per request parameter
    async fn thumbnail(
        &self,
        req: &poem::Request,
        auth: Auth,
        pk: Path<i64>,
        digest: Path<String>,
        width: Query<Option<u32>>,
        height: Query<Option<u32>>,
        force: Query<Option<String>>,
    ) -> Result<ThumbnailResponse, ApiError> {
        let size = size(width.0, height.0, render::THUMBNAIL_SIZE, true)?;
        let (user, chart) = readable_chart(&self.state, &auth, pk.0).await?;
        let current = super::chart::digest(&chart);
        if digest.0 != current {
            return Ok(ThumbnailResponse::Moved(format!(
                "/api/v1/chart/{}/thumbnail/{current}/",
                pk.0
            )));
        }
        let work = chart_png(&self.state, &user, &chart, size, truthy(force.0.as_deref()));
        let png = chart_data::until_gone(&self.state, req, work).await?;
        Ok(ThumbnailResponse::Png(Binary(png)))
    }

    /// The dashboard as a page for a browser: its title and its charts' SVGs laid out by
    /// `position_json` (rows of a 12-column grid). Logged-out visitors go to the login form.
    #[oai(
        path = "/dashboard/:key",
        method = "get",
        tag = "Tags::Dashboard",
        operation_id = "dashboard_page"
    )]
    async fn dashboard_page(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<PageResponse, ApiError> {
        if !matches!(auth.principal, Principal::User(_)) {
            let next = format!("/dashboard/{}/", super::dashboard_page::url_escape(&key.0));
            return Ok(PageResponse::Login(format!(
                "/login/?next={}",
                super::dashboard_page::url_escape(&next)
            )));
        }
        let user = resource::authorized(&self.state, &auth, "can_read", "Dashboard").await?;
        let api = super::dashboard::DashboardApi {
            state: self.state.clone(),
        };
        let id = api.resolve(&key.0, &user).await?;
        let dash = self
            .state
            .store
            .load_one(&DASHBOARD, id, &["slices"])
            .await?;
        let charts: Vec<(i64, String, String)> = dash
            .related("slices")
            .iter()
            .map(|s| (s.id, s.text("uuid"), s.text("slice_name")))
            .collect();
        Ok(PageResponse::Page(Html(super::dashboard_page::page(
            &dash.text("dashboard_title"),
            &dash.text("position_json"),
            &charts,
        ))))
    }
}

impl From<RenderError> for ApiError {
    fn from(e: RenderError) -> Self {
        let text = e.to_string();
        match e {
            RenderError::BadSize(_) | RenderError::NoPlugin(_) | RenderError::NoSvg(_) => {
                ApiError::bad_request(text)
            }
            RenderError::BadSvg { plugin, .. } => {
                tracing::error!(message = "Viz plugin returned an invalid SVG.", reason = %text);
                ApiError::sip40(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "GENERIC_BACKEND_ERROR",
                    text,
                    json!({"plugin": plugin, "reason": "bad_output"}),
                )
            }
            RenderError::Raster(r) => ApiError::internal(&r),
        }
    }
}
