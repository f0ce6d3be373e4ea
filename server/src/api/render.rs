//! Server-rendered charts: `GET /api/v1/chart/<pk>/render.svg` and `render.png`, Superset's
//! chart thumbnail (`/api/v1/chart/<pk>/thumbnail/<digest>/`), and the dashboard page
//! `/dashboard/<id_or_slug>/` laying out its charts' SVGs by `position_json`.
//!
//! The chart endpoints authorize `can_read` on Chart and hand the work to
//! [`crate::services::render`] (which runs the chart-data pipeline and the viz plugin).

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Html};
use poem_openapi::{ApiResponse, OpenApi};

use super::Tags;
use super::error::ApiError;
use super::extract::{Auth, until_gone};
use super::resource;
use crate::auth::Principal;
use crate::render::{self as draw};
use crate::services::render::{self, Thumbnail};
use crate::state::AppState;
use crate::store::catalog::DASHBOARD;

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
    draw::check_size(w, h, png)?;
    Ok((w, h))
}

fn truthy(v: Option<&str>) -> bool {
    v.is_some_and(|f| f == "true" || f == "1")
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
        let size = size(width.0, height.0, draw::DEFAULT_SIZE, false)?;
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let work = render::svg(&self.state, &user, pk.0, size, truthy(force.0.as_deref()));
        let svg = until_gone(&self.state, req, work).await?;
        Ok(SvgResponse::Svg(
            Binary(svg.to_vec()),
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
        let size = size(width.0, height.0, draw::DEFAULT_SIZE, true)?;
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let work = render::png(&self.state, &user, pk.0, size, truthy(force.0.as_deref()));
        let png = until_gone(&self.state, req, work).await?;
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
        let size = size(width.0, height.0, draw::THUMBNAIL_SIZE, true)?;
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let force = truthy(force.0.as_deref());
        let work = render::thumbnail(&self.state, &user, pk.0, &digest.0, size, force);
        Ok(match until_gone(&self.state, req, work).await? {
            Thumbnail::Png(png) => ThumbnailResponse::Png(Binary(png)),
            Thumbnail::Moved(current) => {
                ThumbnailResponse::Moved(format!("/api/v1/chart/{}/thumbnail/{current}/", pk.0))
            }
        })
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
        let id = crate::services::dashboard::resolve(&self.state, &key.0, &user).await?;
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
