//! `/api/v1/sqllab/`: Superset's `SqlLabRestApi` (execute, results, CSV export, format,
//! cost estimate, bootstrap). The handlers check the request body, authorize, call one use
//! case of [`crate::services::sqllab`] (which checks access, records and runs the query) and
//! render Superset's payloads.

use std::sync::Arc;

use chrono::{NaiveTime, Utc};
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Json};
use poem_openapi::types::Any;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde_json::{Map, Value as Json_, json};

use super::Tags;
use super::error::{ApiError, sqllab_errors};
use super::extract::{Auth, JsonBody};
use super::resource::{self, render};
use super::wire::{JsonOf, Nullable, Obj, QueryDict, Reply, ResultOf};
use super::{database_wire, listquery};
use crate::auth::CurrentUser;
use crate::engines::{Cell, GenericType, ResultSet, dbapi_type, generic_type_for};
use crate::query::frame::cell_json;
use crate::query::sqllab::SqlLabError;
use crate::services::sqllab;
use crate::state::AppState;
use crate::store::catalog::{self, DATABASE, QUERY};
use crate::store::model::{Order, Page, Pred, Record};
use crate::uri::Engine;

/// `POST /sqllab/execute/` body (Superset's `ExecutePayloadSchema`).
#[derive(Debug, Object, serde::Deserialize)]
#[oai(rename = "ExecutePayloadSchema")]
pub struct ExecuteBody {
    /// The database to run on.
    database_id: i64,
    /// The script: one or more statements; the last one's rows are returned.
    sql: String,
    /// The client's id for the query (at most 11 characters); generated when absent.
    client_id: Option<String>,
    /// Row limit (0 or absent: `SQL_MAX_ROW`), capped at `SQL_MAX_ROW`.
    #[oai(rename = "queryLimit")]
    #[serde(rename = "queryLimit")]
    query_limit: Option<i64>,
    /// The SQL Lab editor the query came from.
    sql_editor_id: Option<String>,
    /// Catalog (recorded).
    catalog: Option<String>,
    /// Schema (recorded; qualify table names, see the README).
    schema: Option<String>,
    /// Tab name (recorded; names the CSV export).
    tab: Option<String>,
    /// `TABLE` or `VIEW` for CTAS (CTAS is refused).
    ctas_method: Option<String>,
    /// Jinja template parameters as a JSON string: refused unless empty.
    #[oai(rename = "templateParams")]
    #[serde(rename = "templateParams")]
    template_params: Option<String>,
    /// CTAS target table (CTAS is refused).
    tmp_table_name: Option<String>,
    /// CREATE TABLE AS SELECT: refused.
    select_as_cta: Option<bool>,
    /// Accepted and ignored (the answer is always JSON).
    json: Option<bool>,
    /// Run in the background (when the database allows it) and answer 202.
    #[oai(rename = "runAsync")]
    #[serde(rename = "runAsync")]
    run_async: Option<bool>,
    /// Accepted and ignored (nested types are not expanded).
    expand_data: Option<bool>,
}

/// `POST /sqllab/format_sql/` body.
#[derive(Debug, Object, serde::Deserialize)]
#[oai(rename = "FormatQueryPayloadSchema")]
pub struct FormatBody {
    /// The SQL to format.
    sql: String,
    /// `postgresql` (default) or `sqlite`.
    engine: Option<String>,
    /// Format in this database's dialect instead.
    database_id: Option<i64>,
}

/// `POST /sqllab/estimate/` body.
#[derive(Debug, Object, serde::Deserialize)]
#[oai(rename = "EstimateQueryCostSchema")]
pub struct EstimateBody {
    /// The database.
    database_id: i64,
    /// The SQL to estimate.
    sql: String,
    /// Jinja parameters: refused unless empty.
    template_params: Option<Json_>,
    /// Catalog (ignored).
    catalog: Option<String>,
    /// Schema (ignored; qualify table names).
    schema: Option<String>,
}

/// What `execute` answers.
#[derive(ApiResponse)]
pub enum Executed {
    /// Synchronous run: the results payload.
    #[oai(status = 200)]
    Done(JsonOf<Obj<SqlLabResults>>),
    /// Asynchronous run accepted: `{"query": {…, "state": "pending"}}`.
    #[oai(status = 202)]
    Accepted(Json<Box<QueryEnvelope>>),
}

/// A CSV download.
#[derive(ApiResponse)]
pub enum CsvFile {
    /// The CSV text.
    #[oai(status = 200, content_type = "text/csv; charset=utf-8")]
    Csv(
        Binary<Vec<u8>>,
        #[oai(header = "Content-Disposition")] String,
    ),
}

/// The SQL Lab endpoints.
pub struct SqlLabApi {
    pub(super) state: Arc<AppState>,
}

fn sqllab_error(e: SqlLabError) -> ApiError {
    e.into()
}

/// Refuses a request body's strings that hold a NUL character (neither database can store or
/// run one) and over-long client ids, marshmallow-style.
fn check_strings(fields: &[(&str, Option<&str>)]) -> Result<(), ApiError> {
    let mut errors = Map::new();
    for (name, value) in fields {
        if value.is_some_and(|v| v.contains('\0')) {
            errors.insert(
                (*name).to_owned(),
                json!(["Must not contain a NUL character."]),
            );
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        tracing::info!(message = "SQL Lab request with a NUL character refused.");
        Err(sqllab_error(SqlLabError::Body(Json_::Object(errors))))
    }
}

/// `templateParams`: a JSON object as text; empty, `null` and `{}` are none. Anything else is
/// refused with a field error (Superset would fail the `json.loads` with a 500).
fn template_params(raw: Option<&str>) -> Result<Map<String, Json_>, ApiError> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Json_>(raw) {
        Ok(Json_::Null) => Ok(Map::new()),
        Ok(Json_::Object(m)) => Ok(m),
        _ => Err(sqllab_error(SqlLabError::Body(
            json!({"templateParams": ["Not a valid JSON object."]}),
        ))),
    }
}

/// The request's query-string parameters (`url_param` in SQL Lab reads Flask's
/// `request.args`: the first value of each name).
fn query_string(req: &poem::Request) -> Map<String, Json_> {
    let mut out = Map::new();
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(req.uri().query().unwrap_or("")).unwrap_or_default();
    for (k, v) in pairs {
        out.entry(k).or_insert(Json_::String(v));
    }
    out
}

/// Superset's `Query.to_dict()` as JSON.
pub fn to_dict(rec: &Record) -> Json_ {
    QueryDict::of(rec).json()
}

/// pyarrow's type of a column's values, as Superset's `convert_pa_dtype` names it.
fn value_type<'a>(cells: impl Iterator<Item = &'a Cell>) -> Option<&'static str> {
    let mut found: Option<&'static str> = None;
    for c in cells {
        let t = match c {
            Cell::Null => continue,
            Cell::Bool(_) => "BOOL",
            Cell::Int(_) => "INT",
            Cell::Float(_) => "FLOAT",
            Cell::Decimal(_) => return None,
            Cell::Text(_) => "STRING",
            Cell::Timestamp(_) | Cell::TimestampTz(_) | Cell::Date(_) | Cell::Time(_) => "DATETIME",
            Cell::Json(_) => "STRING",
        };
        match found {
            None => found = Some(t),
            Some(prev) if prev != t => return Some("STRING"),
            _ => {}
        }
    }
    found
}

/// Superset's SQL Lab `columns`: `{column_name, name, type, type_generic, is_dttm}`.
fn columns(engine: Engine, rs: &ResultSet) -> Vec<Json_> {
    rs.columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // The DB-API cursor's type first, as Superset's result set does; pyarrow's type of
            // the values where the driver gives none.
            let ty = dbapi_type(engine, &c.type_name)
                .or_else(|| value_type(rs.rows.iter().filter_map(|r| r.get(i))).map(str::to_owned));
            let generic = ty
                .as_deref()
                .and_then(|t| generic_type_for(engine, t))
                .unwrap_or(GenericType::String);
            json!({
                "column_name": c.name,
                "name": c.name,
                "type": ty,
                "type_generic": generic.code(),
                "is_dttm": generic == GenericType::Temporal,
            })
        })
        .collect()
}

/// One cell as Superset's SQL Lab JSON (`json_iso_dttm_ser`): datetimes as ISO strings.
fn sqllab_cell(c: &Cell) -> Json_ {
    match c {
        Cell::Timestamp(t) => json!(t.format("%Y-%m-%dT%H:%M:%S%.f").to_string()),
        Cell::TimestampTz(t) => json!(format!("{}+00:00", t.format("%Y-%m-%dT%H:%M:%S%.f"))),
        Cell::Date(d) => json!(d.format("%Y-%m-%d").to_string()),
        Cell::Time(t) if *t == NaiveTime::MIN => json!("00:00:00"),
        Cell::Time(t) => json!(t.format("%H:%M:%S%.f").to_string()),
        Cell::Json(v) => v.clone(),
        other => cell_json(other),
    }
}

/// The results payload of a finished query (the synchronous 200 and `GET /sqllab/results/`).
fn results_payload(rec: &Record, engine: Engine, rs: &ResultSet, display: usize) -> Json_ {
    let names: Vec<&str> = rs.columns.iter().map(|c| c.name.as_str()).collect();
    let data: Vec<Json_> = rs
        .rows
        .iter()
        .take(display)
        .map(|row| {
            let mut obj = Map::with_capacity(names.len());
            for (name, cell) in names.iter().zip(row) {
                obj.insert((*name).to_owned(), sqllab_cell(cell));
            }
            Json_::Object(obj)
        })
        .collect();
    let cols = columns(engine, rs);
    let mut out = json!({
        "query_id": rec.id,
        "status": rec.text("status"),
        "data": data,
        "columns": cols,
        "selected_columns": cols,
        "expanded_columns": [],
        "query": to_dict(rec),
    });
    if rs.rows.len() > display {
        out["displayLimitReached"] = json!(true);
    }
    out
}

impl SqlLabApi {
    /// A run request (`/sqllab/execute/` and the legacy `/superset/sql_json/`): authorized,
    /// then run until done or the client hangs up.
    async fn execute_request(
        &self,
        req: &poem::Request,
        auth: &Auth,
        body: ExecuteBody,
    ) -> Result<Executed, ApiError> {
        let user =
            resource::authorized(&self.state, auth, "can_execute_sql_query", "SQLLab").await?;
        // hyper keeps a handler running after its client hung up; this notices and drops the
        // wait, whose guard stops the query.
        let url_params = query_string(req);
        super::extract::until_gone(
            &self.state,
            req,
            self.execute_inner(&user, body, url_params),
        )
        .await
    }

    /// Checks the body's strings, then runs the script (see [`sqllab::execute`]).
    async fn execute_inner(
        &self,
        user: &CurrentUser,
        b: ExecuteBody,
        url_params: Map<String, Json_>,
    ) -> Result<Executed, ApiError> {
        check_strings(&[
            ("sql", Some(&b.sql)),
            ("client_id", b.client_id.as_deref()),
            ("sql_editor_id", b.sql_editor_id.as_deref()),
            ("catalog", b.catalog.as_deref()),
            ("schema", b.schema.as_deref()),
            ("tab", b.tab.as_deref()),
            ("ctas_method", b.ctas_method.as_deref()),
            ("templateParams", b.template_params.as_deref()),
            ("tmp_table_name", b.tmp_table_name.as_deref()),
        ])?;
        if b.client_id.as_ref().is_some_and(|c| c.chars().count() > 11) {
            return Err(sqllab_error(SqlLabError::Body(
                json!({"client_id": ["Longer than maximum length 11."]}),
            )));
        }
        let script = sqllab::Script {
            database_id: b.database_id,
            template_params: template_params(b.template_params.as_deref())?,
            url_params,
            sql: b.sql,
            client_id: b.client_id,
            query_limit: b.query_limit,
            sql_editor_id: b.sql_editor_id,
            catalog: b.catalog,
            schema: b.schema,
            tab: b.tab,
            ctas_method: b.ctas_method,
            tmp_table_name: b.tmp_table_name,
            select_as_cta: b.select_as_cta == Some(true),
            run_async: b.run_async == Some(true),
        };
        match sqllab::execute(&self.state, user, script, sqllab_errors).await? {
            sqllab::Executed::Accepted(rec) => {
                Ok(Executed::Accepted(Json(Box::new(QueryEnvelope {
                    query: QueryDict::of(&rec),
                }))))
            }
            sqllab::Executed::Done(done) => Ok(Executed::Done(JsonOf::new(results_payload(
                &done.query,
                done.engine,
                &done.rows,
                done.display,
            )))),
        }
    }
}

/// `POST /superset/sql_json/`: SQL Lab's run endpoint before Superset 3.0 moved it to
/// `/api/v1/sqllab/execute/`, still what some clients send (superset-api-client's `run()`,
/// preset-cli after a 404 there). The same body, permission and answer as `execute`.
pub struct LegacySqlJsonApi {
    pub(super) state: Arc<AppState>,
}

#[OpenApi(tag = "Tags::SqlLab")]
impl LegacySqlJsonApi {
    /// Run a SQL script (Superset 2.x's `sql_json`); as `POST /api/v1/sqllab/execute/`.
    #[oai(
        path = "/superset/sql_json",
        method = "post",
        operation_id = "sqllab_sql_json"
    )]
    async fn sql_json(
        &self,
        req: &poem::Request,
        auth: Auth,
        body: JsonBody<ExecuteBody>,
    ) -> Result<Executed, ApiError> {
        let api = SqlLabApi {
            state: self.state.clone(),
        };
        api.execute_request(req, &auth, body.0).await
    }
}

/// `DATABASE_KEYS` of Superset's SQL Lab bootstrap.
const BOOTSTRAP_DATABASE_KEYS: &[&str] = &[
    "allow_file_upload",
    "allow_ctas",
    "allow_cvas",
    "allow_dml",
    "allow_run_async",
    "allows_subquery",
    "backend",
    "database_name",
    "expose_in_sqllab",
    "force_ctas_schema",
    "id",
    "disable_data_preview",
    "disable_drill_to_detail",
    "allow_multi_catalog",
];

#[OpenApi(prefix_path = "/api/v1/sqllab", tag = "Tags::SqlLab")]
impl SqlLabApi {
    /// SQL Lab's initial state: the databases the user can query, their recent queries.
    #[oai(path = "/", method = "get", operation_id = "sqllab_get")]
    async fn bootstrap(&self, auth: Auth) -> Result<Reply<Obj<ResultOf<Bootstrap>>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", "SQLLab").await?;
        let scope = Pred::And(vec![
            catalog::database_scope(user.grants()),
            catalog::database_exposed_in_sqllab(),
        ]);
        let (_, ids) = self
            .state
            .store
            .list_ids(
                &DATABASE,
                &scope,
                Some(Order {
                    field: "database_name",
                    desc: false,
                }),
                None,
            )
            .await?;
        let mut databases = Map::new();
        for rec in self.state.store.load(&DATABASE, &ids, &[]).await? {
            databases.insert(
                rec.id.to_string(),
                render(
                    &DATABASE,
                    &rec,
                    BOOTSTRAP_DATABASE_KEYS,
                    &database_wire::computed,
                ),
            );
        }
        let mine = catalog::queries_run_by(user.user.id);
        let (_, qids) = self
            .state
            .store
            .list_ids(
                &QUERY,
                &mine,
                Some(Order {
                    field: "changed_on",
                    desc: true,
                }),
                Some(Page {
                    index: 0,
                    size: 100,
                }),
            )
            .await?;
        let mut queries = Map::new();
        for rec in self
            .state
            .store
            .load(&QUERY, &qids, &["database", "user"])
            .await?
        {
            queries.insert(rec.text("client_id"), to_dict(&rec));
        }
        Ok(Reply::new(json!({"result": {
            "active_tab": null,
            "databases": databases,
            "queries": queries,
            "tab_state_ids": [],
        }})))
    }

    /// Run a script (synchronously: 200 with the rows; `runAsync`: 202, poll
    /// `/query/updated_since`, then fetch `/sqllab/results/`).
    #[oai(path = "/execute", method = "post", operation_id = "sqllab_execute")]
    async fn execute(
        &self,
        req: &poem::Request,
        auth: Auth,
        body: JsonBody<ExecuteBody>,
    ) -> Result<Executed, ApiError> {
        self.execute_request(req, &auth, body.0).await
    }

    /// The stored results of a finished query: `?q=(key:'<resultsKey>',rows:N)`. Results are
    /// kept in the process (replica) that ran the query, for `query.sqllab_results_ttl_secs`.
    #[oai(path = "/results", method = "get", operation_id = "sqllab_results")]
    async fn results(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<Obj<SqlLabResults>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_get_results", "SQLLab").await?;
        let v =
            listquery::decode_q(q.0.as_deref()).map_err(|e| ApiError::bad_request(e.message()))?;
        let Some(key) = v
            .get("key")
            .and_then(Json_::as_str)
            .filter(|k| !k.is_empty())
        else {
            return Err(sqllab_error(SqlLabError::Body(
                json!({"key": ["Missing data for required field."]}),
            )));
        };
        let rows = match v.get("rows") {
            None | Some(Json_::Null) => None,
            Some(r) => Some(r.as_u64().ok_or_else(|| {
                sqllab_error(SqlLabError::Body(json!({"rows": ["Not a valid integer."]})))
            })?),
        };
        let done = sqllab::results(&self.state, &user, key, rows).await?;
        Ok(Reply::new(results_payload(
            &done.query,
            done.engine,
            &done.rows,
            done.display,
        )))
    }

    /// A query's results as CSV: the kept results, or the query's last statement run again
    /// (read-only, at most its limit).
    #[oai(
        path = "/export/:client_id",
        method = "get",
        operation_id = "sqllab_export"
    )]
    async fn export(&self, auth: Auth, client_id: Path<String>) -> Result<CsvFile, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_export_csv", "SQLLab").await?;
        let sqllab::Export { query: rec, csv } =
            sqllab::export(&self.state, &user, &client_id.0).await?;
        let tab: String = rec
            .get::<String>("tab_name")
            .filter(|t| !t.is_empty())
            .map_or_else(
                || "notab".to_owned(),
                |t| {
                    t.replace(' ', "_")
                        .to_lowercase()
                        .chars()
                        .filter(|c| c.is_alphanumeric() || *c == '_')
                        .collect()
                },
            );
        let stamp = Utc::now().format("%Y%m%dT%H%M%S");
        Ok(CsvFile::Csv(
            Binary(csv.into_bytes()),
            format!("attachment; filename=sqllab_{tab}_{stamp}.csv"),
        ))
    }

    /// Pretty-print SQL (sqlparser's formatter; Superset uses sqlglot's, so whitespace and
    /// keyword case may differ).
    #[oai(
        path = "/format_sql",
        method = "post",
        operation_id = "sqllab_format_sql"
    )]
    async fn format_sql(
        &self,
        auth: Auth,
        body: JsonBody<FormatBody>,
    ) -> Result<Json<ResultOf<String>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_format_sql", "SQLLab").await?;
        let b = body.0;
        check_strings(&[("sql", Some(&b.sql)), ("engine", b.engine.as_deref())])?;
        let formatted =
            sqllab::format_sql(&self.state, b.database_id, b.engine.as_deref(), &b.sql).await?;
        Ok(ResultOf::json(formatted))
    }

    /// Estimate a query's cost with PostgreSQL's planner (`EXPLAIN`, never executed). Needs
    /// `"cost_estimate_enabled": true` in the database's `extra`; SQLite has no estimator.
    #[oai(path = "/estimate", method = "post", operation_id = "sqllab_estimate")]
    async fn estimate(
        &self,
        auth: Auth,
        body: JsonBody<EstimateBody>,
    ) -> Result<Json<ResultOf<Vec<CostEstimate>>>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_estimate_query_cost", "SQLLab").await?;
        let b = body.0;
        check_strings(&[
            ("sql", Some(&b.sql)),
            ("catalog", b.catalog.as_deref()),
            ("schema", b.schema.as_deref()),
        ])?;
        let params = match &b.template_params {
            None | Some(Json_::Null) => Map::new(),
            Some(Json_::Object(m)) => m.clone(),
            Some(Json_::String(s)) => template_params(Some(s))?,
            Some(_) => {
                return Err(sqllab_error(SqlLabError::Body(
                    json!({"template_params": ["Not a valid mapping type."]}),
                )));
            }
        };
        let result = sqllab::estimate(&self.state, &user, b.database_id, &b.sql, &params)
            .await?
            .into_iter()
            .map(|c| CostEstimate {
                startup: c.startup.into(),
                total: c.total.into(),
            })
            .collect();
        Ok(ResultOf::json(result))
    }
}

/// `{"query": …}`: an asynchronous run accepted.
#[derive(Object)]
pub struct QueryEnvelope {
    /// The run, pending.
    query: QueryDict,
}

/// A result column of a SQL Lab run.
#[derive(Object)]
struct SqlLabColumn {
    column_name: String,
    name: String,
    /// The type psycopg2 would report (null when unknown).
    #[oai(rename = "type")]
    ty: Nullable<String>,
    /// Superset's `GenericDataType`.
    type_generic: i64,
    is_dttm: bool,
}

/// The rows of a finished run (the synchronous answer and `GET /sqllab/results/`).
#[derive(Object)]
pub struct SqlLabResults {
    /// The run's id.
    query_id: i64,
    /// Its status.
    status: String,
    /// The rows, one object per row.
    data: Vec<Any<Json_>>,
    /// The columns.
    columns: Vec<SqlLabColumn>,
    /// The columns (the same).
    selected_columns: Vec<SqlLabColumn>,
    /// Nested columns expanded (none).
    expanded_columns: Vec<SqlLabColumn>,
    /// The run.
    query: QueryDict,
    /// Present (true) when more rows were returned than are shown.
    #[oai(rename = "displayLimitReached")]
    display_limit_reached: Option<bool>,
}

/// `GET /sqllab/`'s result.
#[derive(Object)]
struct Bootstrap {
    /// The open tab (tabs are kept by the browser).
    active_tab: Nullable<Any<Json_>>,
    /// Databases the user may query, by id.
    databases: std::collections::BTreeMap<String, Any<Json_>>,
    /// The user's recent runs, by client id.
    queries: std::collections::BTreeMap<String, QueryDict>,
    /// Server-side tab states (none).
    tab_state_ids: Vec<Any<Json_>>,
}

/// One statement's cost, as PostgreSQL's planner estimates it (Python float text).
#[derive(Object)]
struct CostEstimate {
    #[oai(rename = "Start-up cost")]
    startup: Nullable<String>,
    #[oai(rename = "Total cost")]
    total: Nullable<String>,
}
