//! `/api/v1/query/`: SQL Lab's query history (Superset's `QueryRestApi`): FAB list, show,
//! `_info`, `related` and `distinct` over the `query` table, scoped to the caller's own
//! queries unless they hold `all_query_access`; `updated_since` for polling; `stop`.

use std::sync::Arc;

use chrono::DateTime;
use poem_openapi::OpenApi;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use serde_json::{Value as Json_, json};

use super::Tags;
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::listquery;
use super::resource::{self, Spec};
use super::wire::{
    DistinctResponse, InfoResponse, List, QueryDict, RelatedResponse, Reply, ResultOf, ResultOk,
    Show, Wire,
};
use crate::auth::CurrentUser;
use crate::query::sqlcheck::{self, SqlDialect};
use crate::services::sqllab::{self, query_scope};
use crate::state::AppState;
use crate::store::catalog::{self, QUERY};
use crate::store::model::{Order, Page, Pred, Record};

/// The query resource.
pub static SPEC: Spec = Spec {
    name: "Query",
    model: &QUERY,
    view_menu: "Query",
    noun: "query",
    list_title: "List Query",
    show_title: "Show Query",
    add_title: "Add Query",
    edit_title: "Edit Query",
    list_columns: &[
        "id",
        "changed_on",
        "client_id",
        "database.id",
        "database.database_name",
        "executed_sql",
        "error_message",
        "limit",
        "limiting_factor",
        "progress",
        "rows",
        "schema",
        "select_as_cta",
        "sql",
        "sql_editor_id",
        "sql_tables",
        "status",
        "tab_name",
        "user.first_name",
        "user.id",
        "user.last_name",
        "start_time",
        "start_running_time",
        "end_time",
        "tmp_table_name",
        "tracking_url",
        "results_key",
    ],
    show_columns: &[
        "id",
        "changed_on",
        "client_id",
        "database.id",
        "end_result_backend_time",
        "end_time",
        "error_message",
        "executed_sql",
        "limit",
        "progress",
        "results_key",
        "rows",
        "schema",
        "select_as_cta",
        "select_as_cta_used",
        "select_sql",
        "sql",
        "sql_editor_id",
        "start_running_time",
        "start_time",
        "status",
        "tab_name",
        "tmp_schema_name",
        "tmp_table_name",
        "tracking_url",
    ],
    order_columns: &[
        "changed_on",
        "database.database_name",
        "rows",
        "schema",
        "start_time",
        "sql",
        "tab_name",
        "user.first_name",
    ],
    search: &[
        ("changed_on", &[]),
        ("database", &[]),
        ("sql", &[]),
        ("status", &[]),
        ("user", &[]),
        ("start_time", &[]),
        ("sql_editor_id", &[]),
    ],
    base_order: Some(("changed_on", true)),
    max_page_size: listquery::FAB_API_MAX_PAGE_SIZE,
    body: &[],
    related: &["database", "user"],
    distinct: &["status"],
    permissions: &["can_read"],
    computed: &[("sql_tables", Wire::StrList)],
};

crate::wire_resource!(QueryRes, SPEC);

fn no_custom(_: &listquery::Filter, _: Option<&CurrentUser>) -> Result<Pred, ApiError> {
    Ok(Pred::all())
}

/// Query columns that are not stored fields.
fn computed(rec: &Record, col: &str) -> Option<Json_> {
    match col {
        // The tables the SQL reads, as written; unparsable SQL has none we can name.
        "sql_tables" => Some(json!(
            sqlcheck::tables_referenced(SqlDialect::Postgres, &rec.text("sql"))
                .map(|t| t.into_iter().collect::<Vec<_>>())
                .unwrap_or_default()
        )),
        _ => None,
    }
}

/// `POST /query/stop` body.
#[derive(Debug, poem_openapi::Object, serde::Deserialize)]
#[oai(rename = "StopQuerySchema")]
pub struct StopBody {
    /// The client id of the query to stop.
    client_id: String,
}

/// The query history endpoints.
pub struct QueryApi {
    pub(super) state: Arc<AppState>,
}

#[OpenApi(prefix_path = "/api/v1/query", tag = "Tags::Query")]
impl QueryApi {
    /// List queries (the caller's own, or everyone's with `all_query_access`).
    #[oai(path = "/", method = "get", operation_id = "query_list")]
    async fn list(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<QueryRes>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::list(
            &self.state,
            &SPEC,
            q.0.as_deref(),
            Some(&user),
            query_scope(&user),
            &no_custom,
            &computed,
        )
        .await
    }

    /// Metadata for building filters.
    #[oai(path = "/_info", method = "get", operation_id = "query_info")]
    async fn info(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<InfoResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::info(&self.state, &SPEC, q.0.as_deref(), &user).await
    }

    /// Queries changed since `?q=(last_updated_ms:<epoch ms>)`, the caller's own, as
    /// `Query.to_dict()` (SQL Lab polls this for asynchronous queries).
    #[oai(
        path = "/updated_since",
        method = "get",
        operation_id = "query_updated_since"
    )]
    async fn updated_since(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<ResultOf<Vec<QueryDict>>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let v =
            listquery::decode_q(q.0.as_deref()).map_err(|e| ApiError::bad_request(e.message()))?;
        let Some(ms) = v.get("last_updated_ms").and_then(Json_::as_f64) else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"last_updated_ms": ["Missing data for required field."]}),
            ));
        };
        #[allow(clippy::cast_possible_truncation, reason = "clamped to chrono's range")]
        let micros = (ms * 1000.0).clamp(0.0, 8.0e18) as i64;
        let since = DateTime::from_timestamp_micros(micros)
            .map(|t| t.naive_utc())
            .unwrap_or_default();
        let pred = Pred::And(vec![
            catalog::queries_run_by(user.user.id),
            catalog::changed_since(since),
        ]);
        // Bounded: a client asking for "everything since 1970" gets the latest thousand.
        let (_, ids) = self
            .state
            .store
            .list_ids(
                &QUERY,
                &pred,
                Some(Order {
                    field: "changed_on",
                    desc: true,
                }),
                Some(Page {
                    index: 0,
                    size: 1000,
                }),
            )
            .await?;
        let recs = self
            .state
            .store
            .load(&QUERY, &ids, &["database", "user"])
            .await?;
        Ok(ResultOf::json(
            recs.iter().rev().map(QueryDict::of).collect(),
        ))
    }

    /// Stop a running query: its statement is cancelled inside the database (when it runs in
    /// this replica) and its state becomes `stopped`.
    #[oai(path = "/stop", method = "post", operation_id = "query_stop")]
    async fn stop(&self, auth: Auth, body: JsonBody<StopBody>) -> Result<Json<ResultOk>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        sqllab::stop(&self.state, &user, &body.0.client_id).await?;
        Ok(Json(ResultOk {
            result: "OK".into(),
        }))
    }

    /// Values of a related column.
    #[oai(path = "/related/:col", method = "get", operation_id = "query_related")]
    async fn related(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<RelatedResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::related(&self.state, &SPEC, &col.0, q.0.as_deref(), &user).await
    }

    /// Distinct values of a column (`status`).
    #[oai(
        path = "/distinct/:col",
        method = "get",
        operation_id = "query_distinct"
    )]
    async fn distinct(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<DistinctResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::distinct(
            &self.state,
            &SPEC,
            &col.0,
            q.0.as_deref(),
            query_scope(&user),
        )
        .await
    }

    /// One query.
    #[oai(path = "/:pk", method = "get", operation_id = "query_get")]
    async fn get(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<QueryRes>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        // Out of scope reads as missing, as Superset's base filter makes it.
        resource::in_reach(
            &self.state,
            &QUERY,
            pk.0,
            &query_scope(&user),
            ApiError::not_found,
        )
        .await?;
        resource::show(&self.state, &SPEC, pk.0, q.0.as_deref(), &computed).await
    }
}
