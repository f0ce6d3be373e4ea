//! `/api/v1/sqllab/`: Superset's `SqlLabRestApi` (execute, results, CSV export, format,
//! cost estimate, bootstrap). The execution semantics live in [`crate::query::sqllab`]; this
//! module checks access, records every run in the `query` table (the history `/query/` lists),
//! runs it as a task on the runtime, and renders Superset's payloads.
//!
//! Every run is a spawned task registered under its client id, synchronous or not, so that
//! `POST /query/stop`, the SQL Lab timeout and a client that hangs up all end it the same way:
//! aborting the task drops the execution future, which cancels the statement inside the
//! database. The party that removes the client id from the registry first (the task finishing,
//! a stop, the timeout) writes the final state; the update is conditional on the row still
//! being pending or running, so a stop from another replica is never overwritten.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{NaiveTime, Utc};
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Json};
use poem_openapi::types::Any;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde_json::{Map, Value as Json_, json};

use super::Tags;
use super::error::{ApiError, ErrorBody};
use super::extract::{Auth, JsonBody};
use super::resource::{self, render};
use super::wire::{JsonOf, Nullable, Obj, QueryDict, Reply, ResultOf};
use super::{database, listquery};
use crate::auth::CurrentUser;
use crate::connections;
use crate::engines::{
    Cell, ConnectionSpec, EngineError, ExecOptions, GenericType, ResultSet, engine_name,
    generic_type,
};
use crate::query::frame::{Frame, cell_json};
use crate::query::sql::sql_dialect;
use crate::query::sqlcheck::{self, SqlDialect};
use crate::query::sqllab::{self, Plan, RunOutcome, SqlLabError};
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, DATABASE, DATASET, QUERY};
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

/// Epoch milliseconds now, as Superset stores query times.
fn now_ms() -> f64 {
    #[allow(
        clippy::cast_precision_loss,
        reason = "epoch microseconds fit a double"
    )]
    let us = Utc::now().timestamp_micros() as f64;
    us / 1000.0
}

/// Superset's 10-character `shortid` for a query without a client id.
fn short_id() -> String {
    use rand::Rng;
    use rand::distributions::Alphanumeric;
    rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(10)
        .map(char::from)
        .collect()
}

fn sqllab_error(e: SqlLabError) -> ApiError {
    e.into()
}

/// Whether the user sees every user's queries (Superset's `all_query_access`).
pub fn sees_all_queries(user: &CurrentUser) -> bool {
    user.is_admin() || user.has("all_query_access", "all_query_access")
}

/// The `query` rows the user may see (Superset's `QueryFilter`).
pub fn query_scope(user: &CurrentUser) -> Pred {
    if sees_all_queries(user) {
        Pred::all()
    } else {
        catalog::queries_run_by(user.user.id)
    }
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

/// Template parameters count as given unless empty (`""`, `"{}"`, `null`).
fn has_template_params(raw: Option<&str>) -> bool {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return false;
    };
    match serde_json::from_str::<Json_>(raw) {
        Ok(Json_::Null) => false,
        Ok(Json_::Object(m)) => !m.is_empty(),
        _ => true,
    }
}

/// Loads a database record, or Superset's SIP-40 "not found".
async fn database_record(state: &AppState, id: i64) -> Result<Record, ApiError> {
    state
        .store
        .load(&DATABASE, &[id], &[])
        .await?
        .pop()
        .ok_or_else(|| sqllab_error(SqlLabError::DatabaseNotFound))
}

/// Superset's `raise_for_access(database, sql)`: a user with access to the whole database (or
/// all of them) passes; a user who reaches it only through datasets may read only the tables
/// of the physical datasets they can access; anyone else gets a 403.
async fn check_access(
    state: &AppState,
    user: &CurrentUser,
    db: &Record,
    sql: Option<(SqlDialect, &str)>,
) -> Result<(), ApiError> {
    match access_refusal(state, user, db, sql).await? {
        None => Ok(()),
        Some(refusal) => Err(sqllab_error(refusal)),
    }
}

/// Why `user` may not run `sql` (or, without SQL, use the database `db` at all) under
/// Superset's `raise_for_access(database, sql)` rules, if they may not: `DatabaseForbidden`
/// or `TableForbidden`. Shared by SQL Lab and virtual datasets (whose SQL is checked the same
/// way when it is created or changed).
///
/// Tables are the ones `sqlcheck::tables_read` resolves as the database does (CTE scoping,
/// quoting). An unqualified name is compared with the database's default schema (`public`,
/// `main`): this server does not apply SQL Lab's schema selection to the connection, so the
/// name resolves there, not in the selected schema.
pub(super) async fn access_refusal(
    state: &AppState,
    user: &CurrentUser,
    db: &Record,
    sql: Option<(SqlDialect, &str)>,
) -> Result<Option<SqlLabError>, ApiError> {
    let g = user.grants();
    if g.all || g.database_ids.contains(&db.id) {
        return Ok(None);
    }
    let scope = Pred::And(vec![
        catalog::dataset_scope(&g),
        catalog::datasets_in_database(db.id),
    ]);
    let (count, ids) = state.store.list_ids(&DATASET, &scope, None, None).await?;
    if count == 0 {
        tracing::info!(
            message = "Access to a database refused.",
            database_id = db.id,
            user_id = user.user.id
        );
        return Ok(Some(SqlLabError::DatabaseForbidden(format!(
            "[{}].(id:{})",
            db.text("database_name"),
            db.id
        ))));
    }
    let Some((dialect, sql)) = sql else {
        return Ok(None);
    };
    let tables = match sqlcheck::tables_read(dialect, sql) {
        Ok(tables) => tables,
        Err(e) => return Ok(Some(e.into())),
    };
    let datasets = state.store.load(&DATASET, &ids, &[]).await?;
    let default_schema = match dialect {
        SqlDialect::Postgres => "public",
        SqlDialect::Sqlite => "main",
    };
    let missing: Vec<String> = tables
        .into_iter()
        .filter(|t| {
            !datasets.iter().any(|d| {
                d.text("sql").trim().is_empty()
                    && t.denotes(
                        dialect,
                        &d.text("schema"),
                        &d.text("table_name"),
                        default_schema,
                    )
            })
        })
        .map(|t| t.written)
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    tracing::info!(
        message = "Access to tables refused.",
        database_id = db.id,
        user_id = user.user.id
    );
    Ok(Some(SqlLabError::TableForbidden(missing)))
}

/// Loads a query row with its database and user.
async fn load_query(state: &AppState, id: i64) -> Result<Record, ApiError> {
    Ok(state
        .store
        .load_one(&QUERY, id, &["database", "user"])
        .await?)
}

/// The id of the query with this client id, if any.
pub async fn query_by_client_id(
    state: &AppState,
    client_id: &str,
) -> Result<Option<i64>, ApiError> {
    Ok(state
        .store
        .find_id(&QUERY, "client_id", Value::Text(client_id.to_owned()))
        .await?)
}

/// Superset's `Query.to_dict()` as JSON.
pub fn to_dict(rec: &Record) -> Json_ {
    QueryDict::of(rec).json()
}

/// psycopg2's type-caster name for a PostgreSQL type (what Superset reports as a SQL Lab
/// column's `type`), or `None` for types psycopg2 returns without a caster.
fn psycopg2_type(pg_type: &str) -> Option<&'static str> {
    Some(match pg_type {
        "int2" | "int4" | "oid" => "INTEGER",
        "int8" => "LONGINTEGER",
        "float4" | "float8" => "FLOAT",
        "numeric" => "DECIMAL",
        "text" | "varchar" | "bpchar" | "char" | "name" | "citext" => "UNICODE",
        "bool" => "BOOLEAN",
        "timestamp" => "DATETIME",
        "timestamptz" => "DATETIMETZ",
        "date" => "DATE",
        "time" | "timetz" => "TIME",
        "interval" => "INTERVAL",
        "json" => "JSON",
        "jsonb" => "JSONB",
        "bytea" => "BINARY",
        _ => return None,
    })
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
            let caster = match engine {
                Engine::Postgres => psycopg2_type(&c.type_name),
                Engine::Sqlite => None,
            };
            let ty = caster.or_else(|| value_type(rs.rows.iter().filter_map(|r| r.get(i))));
            let generic = ty.and_then(generic_type).unwrap_or(GenericType::String);
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

/// What the background task of one run needs.
struct Job {
    query_id: i64,
    client_id: String,
    spec: ConnectionSpec,
    plan: Plan,
    run_async: bool,
}

/// The SIP-40 `errors` list of an error (kept in the query's `extra_json`).
fn errors_json(e: &ApiError) -> Json_ {
    match &e.body {
        ErrorBody::Errors(list) => serde_json::to_value(list).unwrap_or_else(|_| json!([])),
        _ => json!([]),
    }
}

/// Records a run's failure in its row (if it is still active). Storage errors are logged:
/// the caller is already reporting a failure.
async fn record_failure(state: &AppState, query_id: i64, e: &SqlLabError) {
    let status = match e {
        SqlLabError::Timeout(_) => "timed_out",
        SqlLabError::Engine {
            error: EngineError::StatementTimeout,
            ..
        } => "timed_out",
        SqlLabError::Stopped => "stopped",
        _ => "failed",
    };
    let api = ApiError::from(e.clone());
    let extra = json!({"progress": null, "errors": errors_json(&api)});
    let values = [
        ("status", Value::Text(status.into())),
        ("error_message", Value::Text(e.to_string())),
        ("end_time", Value::Float(now_ms())),
        ("extra_json", Value::Text(extra.to_string())),
    ];
    if let Err(err) = state.store.update_active_query(query_id, &values).await {
        tracing::warn!(message = "Could not record a SQL Lab failure.", query_id, error = %err);
    }
}

/// The body of every run's task.
async fn run_job(state: Arc<AppState>, job: Job) -> Result<RunOutcome, SqlLabError> {
    let engine = job.spec.uri.engine;
    if job.run_async {
        let values = [
            ("status", Value::Text("running".into())),
            ("start_running_time", Value::Float(now_ms())),
        ];
        if let Err(e) = state.store.update_active_query(job.query_id, &values).await {
            tracing::warn!(message = "Could not mark a query running.", query_id = job.query_id, error = %e);
        }
    }
    tracing::debug!(query_id = job.query_id, sql = %job.plan.executed_sql(), "SQL Lab query started");
    let result = sqllab::run(&state.engines, &job.spec, &job.plan).await;
    // Whoever claims the query writes its final state; losing means it was stopped or timed
    // out meanwhile and that party has written it.
    if !state.sqllab.claim(&job.client_id) {
        return Err(SqlLabError::Stopped);
    }
    match result {
        Ok(out) => {
            let key = uuid::Uuid::new_v4().to_string();
            state.sqllab.keep(&key, out.rows.clone()).await;
            let rows = i64::try_from(out.rows.rows.len()).unwrap_or(i64::MAX);
            let values = [
                ("status", Value::Text("success".into())),
                ("rows", Value::Int(rows)),
                ("progress", Value::Int(100)),
                ("end_time", Value::Float(now_ms())),
                ("end_result_backend_time", Value::Float(now_ms())),
                ("results_key", Value::Text(key)),
                (
                    "limiting_factor",
                    Value::Text(out.factor.as_str().to_owned()),
                ),
            ];
            if let Err(e) = state.store.update_active_query(job.query_id, &values).await {
                tracing::warn!(message = "Could not record a SQL Lab success.", query_id = job.query_id, error = %e);
            }
            tracing::info!(
                message = "SQL Lab query finished.",
                query_id = job.query_id,
                rows
            );
            Ok(out)
        }
        Err(error) => {
            let err = match error {
                EngineError::NotReadOnly => SqlLabError::DmlNotAllowed,
                error => SqlLabError::Engine {
                    error,
                    engine_name: engine_name(engine),
                },
            };
            tracing::info!(message = "SQL Lab query failed.", query_id = job.query_id, reason = %err);
            record_failure(&state, job.query_id, &err).await;
            Err(err)
        }
    }
}

/// Stops a synchronous run whose HTTP request went away before it finished.
struct StopOnDrop {
    state: Option<Arc<AppState>>,
    client_id: String,
}

impl StopOnDrop {
    fn disarm(&mut self) {
        self.state = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        if let Some(query_id) = state.sqllab.stop(&self.client_id) {
            tracing::info!(
                message = "Client went away; SQL Lab query stopped.",
                query_id
            );
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    record_failure(&state, query_id, &SqlLabError::Stopped).await;
                });
            }
        }
    }
}

/// Marks a query stopped: aborts its task when it runs here (cancelling its statement in the
/// database), and records the state unless it already finished.
pub async fn stop_query(state: &AppState, client_id: &str, query_id: i64) -> Result<(), ApiError> {
    let here = state.sqllab.stop(client_id).is_some();
    let values = [
        ("status", Value::Text("stopped".into())),
        ("end_time", Value::Float(now_ms())),
    ];
    let updated = state.store.update_active_query(query_id, &values).await?;
    tracing::info!(
        message = "SQL Lab query stop requested.",
        query_id,
        running_here = here,
        stopped = updated
    );
    Ok(())
}

impl SqlLabApi {
    /// The effective row limit of a request (Superset: 0/absent → `SQL_MAX_ROW`, capped).
    fn limit(&self, requested: Option<i64>) -> u64 {
        let max = self.state.config.query.sql_max_row.max(1);
        match requested {
            Some(n) if n > 0 => u64::try_from(n).unwrap_or(max).min(max),
            _ => max,
        }
    }

    async fn execute_inner(
        &self,
        user: &CurrentUser,
        b: ExecuteBody,
    ) -> Result<Executed, ApiError> {
        let state = &self.state;
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
        let db = database_record(state, b.database_id).await?;
        let spec = connections::connection_spec(state, db.id).await?;
        let engine = spec.uri.engine;
        let d = sql_dialect(engine);
        if b.select_as_cta == Some(true) {
            return Err(sqllab_error(SqlLabError::CtasUnsupported));
        }
        if has_template_params(b.template_params.as_deref()) || sqllab::has_template(&b.sql) {
            return Err(sqllab_error(SqlLabError::TemplateUnsupported));
        }
        check_access(state, user, &db, Some((d, &b.sql))).await?;

        let limit = self.limit(b.query_limit);
        let client_id = b
            .client_id
            .clone()
            .filter(|c| !c.trim().is_empty())
            .unwrap_or_else(short_id);
        let run_async = b.run_async == Some(true) && db.flag("allow_run_async");
        let mut changes = catalog::Changes::default();
        changes.set("client_id", client_id.as_str());
        changes.set("database", db.id);
        changes.set("user", user.user.id);
        changes.set("status", if run_async { "pending" } else { "running" });
        changes.set("sql", b.sql.as_str());
        changes.set("limit", i64::try_from(limit).unwrap_or(i64::MAX));
        changes.set("select_as_cta", false);
        changes.set("progress", 0_i64);
        changes.set("start_time", now_ms());
        if !run_async {
            changes.set("start_running_time", now_ms());
        }
        for (field, v) in [
            ("tab_name", &b.tab),
            ("sql_editor_id", &b.sql_editor_id),
            ("catalog", &b.catalog),
            ("schema", &b.schema),
            ("ctas_method", &b.ctas_method),
            ("tmp_table_name", &b.tmp_table_name),
        ] {
            if let Some(v) = v {
                changes.set(field, v.as_str());
            }
        }
        let query_id = match state.store.save(&QUERY, None, &changes, None).await {
            Ok(id) => id,
            Err(crate::store::Error::Conflict { .. }) => {
                return Err(sqllab_error(SqlLabError::Body(
                    json!({"client_id": ["A query with this client_id already exists."]}),
                )));
            }
            Err(e) => return Err(e.into()),
        };

        let denied = state
            .config
            .disallowed_functions_for(&db.text("database_name"));
        let plan = match sqllab::plan(d, &b.sql, limit, db.flag("allow_dml"), &denied) {
            Ok(p) => p,
            Err(e) => {
                record_failure(state, query_id, &e).await;
                return Err(sqllab_error(e));
            }
        };
        {
            let values = [
                ("executed_sql", Value::Text(plan.executed_sql().to_owned())),
                (
                    "limit",
                    Value::Int(i64::try_from(plan.limit).unwrap_or(i64::MAX)),
                ),
                (
                    "limiting_factor",
                    Value::Text(plan.factor.as_str().to_owned()),
                ),
            ];
            state.store.update_active_query(query_id, &values).await?;
        }
        tracing::info!(
            message = "SQL Lab query accepted.",
            query_id,
            database_id = db.id,
            statements = plan.statements.len(),
            run_async
        );

        let job = Job {
            query_id,
            client_id: client_id.clone(),
            spec,
            plan,
            run_async,
        };
        // The task waits until it is registered, so it can always claim itself when done.
        let (go, ready) = tokio::sync::oneshot::channel::<()>();
        let task_state = state.clone();
        let mut handle = tokio::spawn(async move {
            if ready.await.is_err() {
                return Err(SqlLabError::Stopped);
            }
            run_job(task_state, job).await
        });
        state
            .sqllab
            .register(&client_id, query_id, handle.abort_handle());
        let _ = go.send(());

        if run_async {
            let rec = load_query(state, query_id).await?;
            return Ok(Executed::Accepted(Json(Box::new(QueryEnvelope {
                query: QueryDict::of(&rec),
            }))));
        }

        let secs = state.config.query.sqllab_timeout_secs;
        let mut guard = StopOnDrop {
            state: Some(state.clone()),
            client_id: client_id.clone(),
        };
        let joined = match tokio::time::timeout(Duration::from_secs(secs), &mut handle).await {
            Ok(joined) => joined,
            Err(_) => {
                guard.disarm();
                if state.sqllab.stop(&client_id).is_some() {
                    let e = SqlLabError::Timeout(secs);
                    tracing::info!(message = "SQL Lab query timed out.", query_id, secs);
                    record_failure(state, query_id, &e).await;
                    return Err(sqllab_error(e));
                }
                // It finished as the deadline passed: take its result.
                handle.await
            }
        };
        guard.disarm();
        let out = match joined {
            Ok(Ok(out)) => out,
            Ok(Err(e)) => return Err(sqllab_error(e)),
            Err(j) if j.is_cancelled() => return Err(sqllab_error(SqlLabError::Stopped)),
            Err(j) => return Err(sqllab_error(SqlLabError::Internal(j.to_string()))),
        };
        let rec = load_query(state, query_id).await?;
        let display = usize::try_from(state.config.query.display_max_row).unwrap_or(usize::MAX);
        Ok(Executed::Done(JsonOf::new(results_payload(
            &rec, engine, &out.rows, display,
        ))))
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
            catalog::database_scope(&user.grants()),
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
                    &database::computed,
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
        let user =
            resource::authorized(&self.state, &auth, "can_execute_sql_query", "SQLLab").await?;
        // hyper keeps a handler running after its client hung up; this notices and drops the
        // wait, whose guard stops the query.
        super::extract::until_gone(&self.state, req, self.execute_inner(&user, body.0)).await
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
        let Some(id) = self
            .state
            .store
            .find_id(&QUERY, "results_key", Value::Text(key.to_owned()))
            .await?
        else {
            return Err(sqllab_error(SqlLabError::QueryNotFound));
        };
        let rec = load_query(&self.state, id).await?;
        if rec.get::<i64>("user_id") != Some(user.user.id) && !sees_all_queries(&user) {
            return Err(sqllab_error(SqlLabError::QueryForbidden));
        }
        let db = database_record(&self.state, rec.get("database_id").unwrap_or_default()).await?;
        check_access(&self.state, &user, &db, None).await?;
        let Some(rs) = self.state.sqllab.results(key).await else {
            tracing::info!(message = "SQL Lab results no longer kept.", query_id = id);
            return Err(sqllab_error(SqlLabError::ResultsExpired));
        };
        let engine = crate::uri::ConnectionUri::parse(&db.text("sqlalchemy_uri"))
            .map_or(Engine::Postgres, |u| u.engine);
        let max = usize::try_from(self.state.config.query.display_max_row).unwrap_or(usize::MAX);
        let display = rows
            .map_or(max, |r| usize::try_from(r).unwrap_or(usize::MAX))
            .min(max);
        Ok(Reply::new(results_payload(&rec, engine, &rs, display)))
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
        let state = &self.state;
        let Some(id) = query_by_client_id(state, &client_id.0).await? else {
            return Err(sqllab_error(SqlLabError::QueryNotFound));
        };
        let rec = load_query(state, id).await?;
        if rec.get::<i64>("user_id") != Some(user.user.id) && !sees_all_queries(&user) {
            return Err(sqllab_error(SqlLabError::QueryForbidden));
        }
        let db = database_record(state, rec.get("database_id").unwrap_or_default()).await?;
        let spec = connections::connection_spec(state, db.id).await?;
        let d = sql_dialect(spec.uri.engine);
        let executed = rec.text("executed_sql");
        check_access(state, &user, &db, Some((d, &rec.text("sql")))).await?;
        let kept = match rec.get::<String>("results_key") {
            Some(key) => state.sqllab.results(&key).await,
            None => None,
        };
        let rows = match kept {
            Some(rows) => (*rows).clone(),
            None => {
                if executed.trim().is_empty() {
                    return Err(sqllab_error(SqlLabError::ResultsExpired));
                }
                // Never re-run a write; the run is read-only whatever the database allows.
                if sqlcheck::is_mutating(d, &executed).unwrap_or(false) {
                    return Err(sqllab_error(SqlLabError::Invalid(
                        "Only the results of a SELECT can be exported".into(),
                    )));
                }
                let denied = state
                    .config
                    .disallowed_functions_for(&db.text("database_name"));
                let bad = match sqlcheck::functions_called(d, &executed) {
                    Ok(called) => sqlcheck::disallowed(called, &denied),
                    Err(_) => {
                        sqlcheck::denied_words(d, &executed, &denied).map_err(SqlLabError::from)?
                    }
                };
                if !bad.is_empty() {
                    return Err(sqllab_error(SqlLabError::DisallowedFunctions(bad)));
                }
                let max = state.config.query.sql_max_row;
                let limit = rec
                    .get::<i64>("limit")
                    .and_then(|l| u64::try_from(l).ok())
                    .filter(|l| *l > 0)
                    .unwrap_or(max)
                    .min(max);
                let opts = ExecOptions {
                    read_only: true,
                    max_rows: usize::try_from(limit).unwrap_or(usize::MAX),
                };
                let run = state.engines.execute(&spec, &executed, opts);
                let secs = Duration::from_secs(state.config.query.sqllab_timeout_secs);
                match tokio::time::timeout(secs, run).await {
                    Ok(Ok(rows)) => rows,
                    Ok(Err(EngineError::NotReadOnly)) => {
                        return Err(sqllab_error(SqlLabError::DmlNotAllowed));
                    }
                    Ok(Err(error)) => {
                        return Err(sqllab_error(SqlLabError::Engine {
                            error,
                            engine_name: engine_name(spec.uri.engine),
                        }));
                    }
                    Err(_) => {
                        return Err(sqllab_error(SqlLabError::Timeout(
                            state.config.query.sqllab_timeout_secs,
                        )));
                    }
                }
            }
        };
        let frame = Frame::new(rows, &BTreeSet::new());
        let csv = frame.csv(&frame.colnames);
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
        tracing::info!(message = "SQL Lab results exported.", query_id = id);
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
        let d = match (b.database_id, b.engine.as_deref()) {
            (Some(id), _) => {
                let db = database_record(&self.state, id).await?;
                crate::uri::ConnectionUri::parse(&db.text("sqlalchemy_uri"))
                    .map_or(SqlDialect::Postgres, |u| sql_dialect(u.engine))
            }
            (None, Some(e)) if e.eq_ignore_ascii_case("sqlite") => SqlDialect::Sqlite,
            _ => SqlDialect::Postgres,
        };
        let formatted = sqlcheck::format_sql(d, &b.sql).map_err(SqlLabError::from)?;
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
        let state = &self.state;
        let b = body.0;
        check_strings(&[
            ("sql", Some(&b.sql)),
            ("catalog", b.catalog.as_deref()),
            ("schema", b.schema.as_deref()),
        ])?;
        let db = database_record(state, b.database_id).await?;
        let spec = connections::connection_spec(state, db.id).await?;
        let d = sql_dialect(spec.uri.engine);
        let params_given = match &b.template_params {
            None | Some(Json_::Null) => false,
            Some(Json_::Object(m)) => !m.is_empty(),
            Some(Json_::String(s)) => has_template_params(Some(s)),
            Some(_) => true,
        };
        if params_given || sqllab::has_template(&b.sql) {
            return Err(sqllab_error(SqlLabError::TemplateUnsupported));
        }
        check_access(state, &user, &db, Some((d, &b.sql))).await?;
        if spec.uri.engine != Engine::Postgres {
            return Err(sqllab_error(SqlLabError::Invalid(format!(
                "Cost estimation is not supported for {} databases",
                engine_name(spec.uri.engine)
            ))));
        }
        let enabled = db
            .get::<String>("extra")
            .and_then(|e| serde_json::from_str::<Json_>(&e).ok())
            .and_then(|e| e.get("cost_estimate_enabled").and_then(Json_::as_bool))
            .unwrap_or(false);
        if !enabled {
            return Err(sqllab_error(SqlLabError::Invalid(
                "Cost estimation is not enabled for this database: set \
                 \"cost_estimate_enabled\": true in its extra"
                    .into(),
            )));
        }
        let statements = sqlcheck::split_statements(d, &b.sql).map_err(SqlLabError::from)?;
        let denied = state
            .config
            .disallowed_functions_for(&db.text("database_name"));
        let called = sqlcheck::functions_called(d, &b.sql).map_err(SqlLabError::from)?;
        let bad = sqlcheck::disallowed(called, &denied);
        if !bad.is_empty() {
            return Err(sqllab_error(SqlLabError::DisallowedFunctions(bad)));
        }
        let mut result = Vec::new();
        for s in &statements {
            if let Some(word) = crate::query::sqllab::session_statement(d, &s.sql) {
                return Err(sqllab_error(SqlLabError::SessionStatement(word)));
            }
            if sqlcheck::leading_keyword(d, &s.sql) == "EXPLAIN" {
                return Err(sqllab_error(SqlLabError::SessionStatement(
                    "EXPLAIN".into(),
                )));
            }
            let explain = format!("EXPLAIN (FORMAT JSON) {}", s.sql);
            let opts = ExecOptions {
                read_only: true,
                max_rows: 1,
            };
            let rs = state
                .engines
                .execute(&spec, &explain, opts)
                .await
                .map_err(|error| {
                    sqllab_error(SqlLabError::Engine {
                        error,
                        engine_name: engine_name(spec.uri.engine),
                    })
                })?;
            let plan: Json_ = match rs.rows.first().and_then(|r| r.first()) {
                Some(Cell::Text(t)) => serde_json::from_str(t).unwrap_or(Json_::Null),
                _ => Json_::Null,
            };
            let cost = |k: &str| {
                plan.get(0)
                    .and_then(|p| p.get("Plan"))
                    .and_then(|p| p.get(k))
                    .and_then(Json_::as_f64)
                    .map(liteset_pyrepr::float)
            };
            result.push(CostEstimate {
                startup: cost("Startup Cost").into(),
                total: cost("Total Cost").into(),
            });
        }
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

/// Whether a run with this status is over.
pub fn is_final(status: &str) -> bool {
    !crate::store::ACTIVE_STATUSES.contains(&status)
}
