//! `/api/v1/chart/data`: Superset's `ChartDataRestApi` (POST a query context, GET a saved
//! chart's data, GET a cached result by key). The handlers authorize `can_read` on Chart and
//! hand the request to [`crate::services::chart_data`], which does the work; this module only
//! turns its output into JSON, CSV or ZIP responses.

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Binary;
use poem_openapi::types::Any;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde_json::Value as Json_;

use super::Tags;
use super::error::ApiError;
use super::extract::{Auth, JsonOrForm, until_gone};
use super::resource;
use super::wire::{Body, JsonOf, Nullable, Obj};
use crate::services::chart_data::{self, Output, SavedChartOptions};
use crate::state::AppState;

/// What chart data answers with.
#[derive(ApiResponse)]
pub enum ChartData {
    /// `{"result": [...]}`.
    #[oai(status = 200)]
    Json(JsonOf<Obj<ChartDataResponse>>),
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

/// The dataset a query context reads.
#[derive(Object)]
struct DatasourceRef {
    /// Its id.
    id: i64,
    /// `table` (or `query`).
    #[oai(rename = "type")]
    ty: String,
}

/// Superset's `ChartDataFilterSchema`.
#[derive(Object)]
struct FilterSchema {
    /// The column (a name or an adhoc column).
    col: Any<Json_>,
    /// The operator (`==`, `IN`, `TEMPORAL_RANGE`, …).
    op: String,
    /// The value(s).
    val: Option<Nullable<Any<Json_>>>,
    /// A label for the filter's grain.
    grain: Option<Nullable<String>>,
    /// Whether it is an extra (native) filter.
    #[oai(rename = "isExtra")]
    is_extra: Option<Nullable<bool>>,
}

/// Superset's `ChartDataQueryObjectSchema` (the keys the query engine reads; others are
/// accepted and ignored).
#[derive(Object)]
struct QueryObjectSchema {
    /// Columns to group by (names or adhoc columns).
    columns: Option<Nullable<Vec<Any<Json_>>>>,
    /// Metrics (names or adhoc metrics).
    metrics: Option<Nullable<Vec<Any<Json_>>>>,
    /// Filters.
    filters: Option<Nullable<Vec<FilterSchema>>>,
    /// `[metric, ascending]` pairs.
    orderby: Option<Nullable<Vec<Any<Json_>>>>,
    /// Row limit.
    row_limit: Option<Nullable<i64>>,
    /// Rows skipped.
    row_offset: Option<Nullable<i64>>,
    /// A time range (`Last week`, `2024-01-01 : 2024-02-01`).
    time_range: Option<Nullable<String>>,
    /// The temporal column (legacy).
    granularity: Option<Nullable<String>>,
    /// `where`, `having`, `time_grain_sqla`, `relative_start`, `relative_end`.
    extras: Option<Nullable<Any<Json_>>>,
    /// Post-processing operations, run in order.
    post_processing: Option<Nullable<Vec<Nullable<Any<Json_>>>>>,
    /// Overrides the context's `result_type` for this query.
    result_type: Option<Nullable<String>>,
    /// Time offsets to compare with (`1 year ago`).
    time_offsets: Option<Nullable<Vec<String>>>,
    /// Columns a series limit applies to.
    series_columns: Option<Nullable<Vec<Any<Json_>>>>,
    /// Series limit.
    series_limit: Option<Nullable<i64>>,
    /// The metric the series limit ranks by.
    series_limit_metric: Option<Nullable<Any<Json_>>>,
    /// Descending order.
    order_desc: Option<Nullable<bool>>,
    /// Count the rows instead of returning them.
    is_rowcount: Option<Nullable<bool>>,
    /// Annotation layers.
    annotation_layers: Option<Nullable<Vec<Any<Json_>>>>,
    /// Time extras applied by native filters.
    applied_time_extras: Option<Nullable<Any<Json_>>>,
    /// URL parameters of the chart's page.
    url_params: Option<Nullable<Any<Json_>>>,
}

/// Superset's `ChartDataQueryContextSchema`: the body of `POST /chart/data`.
#[derive(Object)]
struct QueryContextSchema {
    /// The dataset queried.
    datasource: DatasourceRef,
    /// The queries, run in order.
    queries: Vec<QueryObjectSchema>,
    /// The chart's form data.
    form_data: Option<Nullable<Any<Json_>>>,
    /// `full`, `samples`, `query`, `results`, `columns`, `timegrains`, `drill_detail`, `post_processed`.
    result_type: Option<Nullable<String>>,
    /// `json` or `csv`.
    result_format: Option<Nullable<String>>,
    /// Bypass the results cache.
    force: Option<Nullable<bool>>,
    /// Seconds the result may be cached.
    custom_cache_timeout: Option<Nullable<i64>>,
}

/// One query's entry in `result` (the fields present depend on the result type).
#[derive(Object)]
struct QueryResult {
    /// The rows (or the columns, or the time grains).
    data: Option<Any<Json_>>,
    /// The key the result is cached under.
    cache_key: Option<Nullable<String>>,
    /// When it was cached.
    cached_dttm: Option<Nullable<String>>,
    /// Seconds it stays cached.
    cache_timeout: Option<Nullable<i64>>,
    /// Whether it came from the cache.
    is_cached: Option<Nullable<bool>>,
    /// `success` or `failed`.
    status: Option<Nullable<String>>,
    /// Why it failed.
    error: Option<Nullable<String>>,
    /// The SQL run.
    query: Option<Nullable<String>>,
    /// `sql` (result type `query`).
    language: Option<String>,
    /// Rows returned.
    rowcount: Option<Nullable<i64>>,
    /// Rows the database returned.
    sql_rowcount: Option<Nullable<i64>>,
    /// Column names.
    colnames: Option<Nullable<Vec<String>>>,
    /// Superset's `GenericDataType` per column.
    coltypes: Option<Nullable<Vec<i64>>>,
}

/// `{"result": [...]}`: one entry per query.
#[derive(Object)]
pub struct ChartDataResponse {
    /// The queries' results, in order.
    result: Vec<QueryResult>,
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
        body: JsonOrForm<Body<Obj<QueryContextSchema>>>,
    ) -> Result<ChartData, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let work = chart_data::data(&self.state, &user, body.0.value);
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
        Output::Json(v) => ChartData::Json(JsonOf::new(v)),
        Output::Csv { body, filename } => {
            ChartData::Csv(Binary(body), format!("attachment; filename={filename}"))
        }
        Output::Zip { body, filename } => {
            ChartData::Zip(Binary(body), format!("attachment; filename={filename}"))
        }
    })
}
