//! `/api/v1/chart/data`: Superset's `ChartDataRestApi` (POST a query context, GET a saved
//! chart's data, GET a cached result by key). The handlers authorize `can_read` on Chart and
//! hand the request to [`crate::services::chart_data`], which does the work; this module only
//! turns its output into JSON, CSV or ZIP responses.

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Json};
use poem_openapi::{ApiResponse, OpenApi};
use serde_json::Value as Json_;

use super::Tags;
use super::error::ApiError;
use super::extract::{Auth, JsonBody, until_gone};
use super::resource;
use crate::services::chart_data::{self, Output, SavedChartOptions};
use crate::state::AppState;

/// What chart data answers with.
#[derive(ApiResponse)]
pub enum ChartData {
    /// `{"result": [...]}`.
    #[oai(status = 200)]
    Json(Json<Json_>),
    /// One query as CSV.
    #[oai(status = 200, content_type = "text/csv; charset=utf-8")]
    Csv(
        Binary<Vec<u8>>,
        #[oai(header = "Content-Disposition")] String,
    ),
    /// Several queries as a ZIP of CSVs.
    #[oai(status = 200, content_type = "application/zip")]
    Zip(
        Binary<Vec<u8>>,
        #[oai(header = "Content-Disposition")] String,
    ),
}

/// The chart data endpoints.
pub struct ChartDataApi {
    pub(super) state: Arc<AppState>,
}

#[OpenApi(prefix_path = "/api/v1/chart", tag = "Tags::Chart")]
impl ChartDataApi {
    /// Run a query context (Superset's `POST /chart/data`).
    #[oai(path = "/data", method = "post", operation_id = "chart_data")]
    async fn data(
        &self,
        req: &poem::Request,
        auth: Auth,
        body: JsonBody<Json_>,
    ) -> Result<ChartData, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let work = chart_data::data(&self.state, &user, body.0);
        respond(until_gone(&self.state, req, work).await)
    }

    /// The data of a saved chart, from its saved query context.
    #[oai(path = "/:pk/data", method = "get", operation_id = "chart_data_get")]
    async fn chart_data(
        &self,
        req: &poem::Request,
        auth: Auth,
        pk: Path<i64>,
        format: Query<Option<String>>,
        #[oai(name = "type")] result_type: Query<Option<String>>,
        force: Query<Option<String>>,
    ) -> Result<ChartData, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let options = SavedChartOptions {
            format: format.0,
            result_type: result_type.0,
            force: force.0.as_deref().is_some_and(|f| f == "true" || f == "1"),
        };
        let work = chart_data::saved_chart(&self.state, &user, pk.0, options);
        respond(until_gone(&self.state, req, work).await)
    }

    /// A result by its `cache_key` (as returned by `POST /chart/data`).
    #[oai(
        path = "/data/:cache_key",
        method = "get",
        operation_id = "chart_data_cached"
    )]
    async fn cached(
        &self,
        req: &poem::Request,
        auth: Auth,
        cache_key: Path<String>,
    ) -> Result<ChartData, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let work = chart_data::cached(&self.state, &user, &cache_key.0);
        respond(until_gone(&self.state, req, work).await)
    }
}

/// The response of a service's output: JSON, or an attachment.
fn respond(out: Result<Output, ApiError>) -> Result<ChartData, ApiError> {
    Ok(match out? {
        Output::Json(v) => ChartData::Json(Json(v)),
        Output::Csv { body, filename } => {
            ChartData::Csv(Binary(body), format!("attachment; filename={filename}"))
        }
        Output::Zip { body, filename } => {
            ChartData::Zip(Binary(body), format!("attachment; filename={filename}"))
        }
    })
}
