//! SQL Lab's use cases (Superset's `SqlLabRestApi` and `QueryRestApi.stop`): running a
//! script, a finished run's results and its CSV export, formatting, cost estimates, stopping a
//! run, and Superset's `raise_for_access(database, sql)`. The execution semantics (planning,
//! running the statements, the per-process registry and results store) live in
//! [`crate::query::sqllab`]; this module checks access, records every run in the `query`
//! table (the history `/query/` lists) and runs it as a task on the runtime.
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

use chrono::Utc;
use serde_json::{Map, Value as Json_, json};

use super::Error;
use crate::auth::CurrentUser;
use crate::connections;
use crate::engines::{Cell, ConnectionSpec, EngineError, ExecOptions, ResultSet, engine_name};
use crate::query::frame::Frame;
use crate::query::sql::sql_dialect;
use crate::query::sqlcheck::{self, SqlDialect};
use crate::query::sqllab::{self, Plan, RunOutcome, SqlLabError};
use crate::query::template;
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, DATABASE, DATASET, QUERY};
use crate::store::model::{Pred, Record};
use crate::uri::Engine;

/// The SIP-40 `errors` list a failed run is recorded with (in its row's `extra_json`, which
/// Superset's app shows). Superset's error bodies are the api layer's to write, so the caller
/// of [`execute`] hands in the function that writes this one.
pub type DescribeError = fn(&SqlLabError) -> Json_;

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

/// Whether a run with this status is over.
pub fn is_final(status: &str) -> bool {
    !crate::store::ACTIVE_STATUSES.contains(&status)
}

/// Loads a database record, or Superset's SIP-40 "not found".
async fn database_record(state: &AppState, id: i64) -> Result<Record, Error> {
    state
        .store
        .load(&DATABASE, &[id], &[])
        .await?
        .pop()
        .ok_or_else(|| SqlLabError::DatabaseNotFound.into())
}

/// Superset's `raise_for_access(database, sql)`: a user with access to the whole database (or
/// all of them) passes; a user who reaches it only through datasets may read only the tables
/// of the physical datasets they can access; anyone else is refused.
async fn check_access(
    state: &AppState,
    user: &CurrentUser,
    db: &Record,
    sql: Option<(SqlDialect, &str)>,
) -> Result<(), Error> {
    match access_refusal(state, user, db, sql).await? {
        None => Ok(()),
        Some(refusal) => Err(refusal.into()),
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
/// Superset's `RLS_IN_SQLLAB` (`query.rls_in_sqllab`): the script with every table that a
/// physical dataset of this database covers, and whose row-level rules apply to the caller,
/// read through those rules (`sqlcheck::apply_row_filters`). Each clause passes the same
/// check as a chart's `WHERE`. Unchanged when the switch is off or no rule applies.
async fn with_row_filters(
    state: &AppState,
    user: &CurrentUser,
    db: &Record,
    d: SqlDialect,
    sql: &str,
    schema: Option<&str>,
) -> Result<String, SqlLabError> {
    if !state.config.query.rls_in_sqllab {
        return Ok(sql.to_owned());
    }
    let failed = |e: Error| SqlLabError::Invalid(e.to_string());
    let mut covered: Vec<(Option<String>, String, String)> = Vec::new();
    let datasets = state
        .store
        .physical_datasets(db.id)
        .await
        .map_err(|e| failed(e.into()))?;
    for (id, ds_schema, table) in datasets {
        let filters = super::rls::row_filters(state, user, id)
            .await
            .map_err(failed)?;
        if filters.is_empty() {
            continue;
        }
        let mut all = Vec::with_capacity(filters.len());
        for f in &filters {
            let mut any = Vec::with_capacity(f.any_of.len());
            for clause in &f.any_of {
                sqlcheck::check_fragment(d, clause, sqlcheck::FragmentKind::Where)?;
                any.push(format!("({})", sqlcheck::wrap_fragment(clause)));
            }
            all.push(format!("({})", any.join(" OR ")));
        }
        covered.push((ds_schema, table, all.join(" AND ")));
    }
    if covered.is_empty() {
        return Ok(sql.to_owned());
    }
    // An unqualified name is in the editor's schema, else the database's default one.
    let default = schema
        .map(str::to_owned)
        .or_else(|| Some(default_schema(db)));
    let filter = |s: Option<&str>, t: &str| -> Option<String> {
        covered
            .iter()
            .find(|(ds, table, _)| {
                table.eq_ignore_ascii_case(t)
                    && match (ds.as_deref(), s) {
                        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                        (None, _) => true,
                        (Some(_), None) => false,
                    }
            })
            .map(|(_, _, p)| p.clone())
    };
    Ok(sqlcheck::apply_row_filters(
        d,
        sql,
        default.as_deref(),
        &filter,
    )?)
}

pub async fn access_refusal(
    state: &AppState,
    user: &CurrentUser,
    db: &Record,
    sql: Option<(SqlDialect, &str)>,
) -> Result<Option<SqlLabError>, Error> {
    let ids = match reach(state, user, db).await? {
        Reach::Database => return Ok(None),
        Reach::Refused(r) => return Ok(Some(r)),
        Reach::Datasets(ids) => ids,
    };
    let Some((dialect, sql)) = sql else {
        return Ok(None);
    };
    let tables = match sqlcheck::tables_read(dialect, sql) {
        Ok(tables) => tables,
        Err(e) => return Ok(Some(e.into())),
    };
    missing_tables(state, user, db, dialect, tables, &ids).await
}

/// [`access_refusal`] for tables already known (those a rendered template adds).
pub async fn tables_refusal(
    state: &AppState,
    user: &CurrentUser,
    db: &Record,
    dialect: SqlDialect,
    tables: std::collections::BTreeSet<sqlcheck::TableRef>,
) -> Result<Option<SqlLabError>, Error> {
    match reach(state, user, db).await? {
        Reach::Database => Ok(None),
        Reach::Refused(r) => Ok(Some(r)),
        Reach::Datasets(ids) => missing_tables(state, user, db, dialect, tables, &ids).await,
    }
}

/// The schema unqualified names resolve in on `db` ([`ConnectionUri::default_schema`]).
fn default_schema(db: &Record) -> String {
    crate::uri::ConnectionUri::parse(&db.text("sqlalchemy_uri"))
        .map_or_else(|_| "public".to_owned(), |u| u.default_schema())
}

/// How a caller reaches a database: whole, through some datasets, or not at all.
enum Reach {
    Database,
    Datasets(Vec<i64>),
    Refused(SqlLabError),
}

async fn reach(state: &AppState, user: &CurrentUser, db: &Record) -> Result<Reach, Error> {
    let g = user.grants();
    if g.guest.is_none() && (g.all || g.database_ids.contains(&db.id)) {
        return Ok(Reach::Database);
    }
    let scope = Pred::And(vec![
        catalog::dataset_scope(g),
        catalog::datasets_in_database(db.id),
    ]);
    let (count, ids) = state.store.list_ids(&DATASET, &scope, None, None).await?;
    // A guest reaches datasets only through its dashboards' saved charts, never by SQL.
    if count == 0 || g.guest.is_some() {
        tracing::info!(
            message = "Access to a database refused.",
            database_id = db.id,
            user_id = user.user.id
        );
        return Ok(Reach::Refused(SqlLabError::DatabaseForbidden(format!(
            "[{}].(id:{})",
            db.text("database_name"),
            db.id
        ))));
    }
    Ok(Reach::Datasets(ids))
}

/// The tables among `tables` that none of the physical datasets `ids` covers: refused.
async fn missing_tables(
    state: &AppState,
    user: &CurrentUser,
    db: &Record,
    dialect: SqlDialect,
    tables: std::collections::BTreeSet<sqlcheck::TableRef>,
    ids: &[i64],
) -> Result<Option<SqlLabError>, Error> {
    let datasets = state.store.load(&DATASET, ids, &[]).await?;
    let default_schema = default_schema(db);
    let missing: Vec<String> = tables
        .into_iter()
        .filter(|t| {
            !datasets.iter().any(|d| {
                d.text("sql").trim().is_empty()
                    && t.denotes(
                        dialect,
                        &d.text("schema"),
                        &d.text("table_name"),
                        &default_schema,
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
async fn load_query(state: &AppState, id: i64) -> Result<Record, Error> {
    Ok(state
        .store
        .load_one(&QUERY, id, &["database", "user"])
        .await?)
}

/// The id of the query with this client id, if any.
pub async fn query_by_client_id(state: &AppState, client_id: &str) -> Result<Option<i64>, Error> {
    Ok(state
        .store
        .find_id(&QUERY, "client_id", Value::Text(client_id.to_owned()))
        .await?)
}

/// What the background task of one run needs.
struct Job {
    query_id: i64,
    client_id: String,
    spec: ConnectionSpec,
    plan: Plan,
    run_async: bool,
}

/// Records a run's failure in its row (if it is still active). Storage errors are logged:
/// the caller is already reporting a failure.
async fn record_failure(state: &AppState, query_id: i64, e: &SqlLabError, describe: DescribeError) {
    let status = match e {
        SqlLabError::Timeout(_) => "timed_out",
        SqlLabError::Engine {
            error: EngineError::StatementTimeout,
            ..
        } => "timed_out",
        SqlLabError::Stopped => "stopped",
        _ => "failed",
    };
    let extra = json!({"progress": null, "errors": describe(e)});
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
async fn run_job(
    state: Arc<AppState>,
    job: Job,
    describe: DescribeError,
) -> Result<RunOutcome, SqlLabError> {
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
            record_failure(&state, job.query_id, &err, describe).await;
            Err(err)
        }
    }
}

/// Stops a synchronous run whose caller went away (its HTTP request was dropped) before it
/// finished.
struct StopOnDrop {
    state: Option<Arc<AppState>>,
    client_id: String,
    describe: DescribeError,
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
            let describe = self.describe;
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    record_failure(&state, query_id, &SqlLabError::Stopped, describe).await;
                });
            }
        }
    }
}

/// Marks a query stopped: aborts its task when it runs here (cancelling its statement in the
/// database), and records the state unless it already finished.
async fn stop_query(state: &AppState, client_id: &str, query_id: i64) -> Result<(), Error> {
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

/// `POST /query/stop`: stops the caller's run with this client id (its statement is cancelled
/// inside the database when it runs in this replica, and its state becomes `stopped`). A run
/// that is already over is left as it is. An unknown client id, or another user's run (for a
/// caller without `all_query_access`), is [`SqlLabError::QueryNotFound`].
pub async fn stop(state: &AppState, user: &CurrentUser, client_id: &str) -> Result<(), Error> {
    if client_id.contains('\0') || client_id.chars().count() > 64 {
        return Err(SqlLabError::QueryNotFound.into());
    }
    let Some(id) = query_by_client_id(state, client_id).await? else {
        tracing::info!(message = "Stop of an unknown query refused.");
        return Err(SqlLabError::QueryNotFound.into());
    };
    let rec = state.store.load_one(&QUERY, id, &[]).await?;
    // Someone else's query is not there as far as this user can tell.
    if rec.get::<i64>("user_id") != Some(user.user.id) && !sees_all_queries(user) {
        tracing::info!(
            message = "Stop of another user's query refused.",
            query_id = id,
            user_id = user.user.id
        );
        return Err(SqlLabError::QueryNotFound.into());
    }
    if is_final(&rec.text("status")) {
        return Ok(());
    }
    stop_query(state, client_id, id).await
}

/// A script to run (Superset's `ExecutePayloadSchema`, its strings already checked).
#[derive(Debug)]
pub struct Script {
    /// The database to run on.
    pub database_id: i64,
    /// One or more statements; the last one's rows are returned.
    pub sql: String,
    /// The client's id for the query; generated when absent or blank.
    pub client_id: Option<String>,
    /// Row limit (0 or absent: `SQL_MAX_ROW`), capped at `SQL_MAX_ROW`.
    pub query_limit: Option<i64>,
    /// Recorded with the run.
    pub sql_editor_id: Option<String>,
    /// Recorded with the run.
    pub catalog: Option<String>,
    /// Recorded with the run.
    pub schema: Option<String>,
    /// Recorded with the run (names the CSV export).
    pub tab: Option<String>,
    /// Recorded with the run.
    pub ctas_method: Option<String>,
    /// Recorded with the run.
    pub tmp_table_name: Option<String>,
    /// CREATE TABLE AS SELECT asked for: refused.
    pub select_as_cta: bool,
    /// Jinja template parameters (`templateParams`; `_filters` feeds `filter_values`).
    pub template_params: Map<String, Json_>,
    /// The request's query-string parameters (`url_param`, as given).
    pub url_params: Map<String, Json_>,
    /// Run in the background, when the database allows it.
    pub run_async: bool,
}

/// The rows of a finished run, and how many of them to show.
#[derive(Debug)]
pub struct Finished {
    /// The run's row (loaded with its database and user).
    pub query: Record,
    /// The engine that ran it (which decides the columns' reported types).
    pub engine: Engine,
    /// The last statement's rows.
    pub rows: Arc<ResultSet>,
    /// How many rows to show (`DISPLAY_MAX_ROW`, or fewer when asked).
    pub display: usize,
}

/// What running a script produced.
#[derive(Debug)]
pub enum Executed {
    /// A synchronous run finished.
    Done(Finished),
    /// An asynchronous run was accepted: its row, pending.
    Accepted(Record),
}

/// The effective row limit of a request (Superset: 0/absent → `SQL_MAX_ROW`, capped).
fn limit(state: &AppState, requested: Option<i64>) -> u64 {
    let max = state.config.query.sql_max_row.max(1);
    match requested {
        Some(n) if n > 0 => u64::try_from(n).unwrap_or(max).min(max),
        _ => max,
    }
}

/// `POST /sqllab/execute/`: checks the script and the caller's access, records the run in the
/// `query` table and runs it as a registered task; a synchronous run is awaited (up to the SQL
/// Lab timeout), an asynchronous one answered at once. Dropping the returned future before a
/// synchronous run finished stops the run.
pub async fn execute(
    state: &Arc<AppState>,
    user: &CurrentUser,
    b: Script,
    describe: DescribeError,
) -> Result<Executed, Error> {
    let db = database_record(state, b.database_id).await?;
    let spec = connections::connection_spec(state, db.id).await?;
    let engine = spec.uri.engine;
    let d = sql_dialect(engine);
    if b.select_as_cta {
        return Err(SqlLabError::CtasUnsupported.into());
    }
    // The template renders first: access, row-level security and the plan judge the SQL
    // that runs (Superset's `raise_for_access` renders it too).
    let rendered = render(
        state,
        user,
        db.id,
        engine,
        &b.sql,
        &b.template_params,
        &b.url_params,
    )
    .await?;
    check_access(state, user, &db, Some((d, &rendered))).await?;

    let limit = limit(state, b.query_limit);
    let client_id = b
        .client_id
        .clone()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(short_id);
    let run_async = b.run_async && db.flag("allow_run_async");
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
            return Err(SqlLabError::Body(
                json!({"client_id": ["A query with this client_id already exists."]}),
            )
            .into());
        }
        Err(e) => return Err(e.into()),
    };

    let denied = super::denied_functions(state, &db.text("database_name"), spec.uri.engine);
    let sql = match with_row_filters(state, user, &db, d, &rendered, b.schema.as_deref()).await {
        Ok(sql) => sql,
        Err(e) => {
            record_failure(state, query_id, &e, describe).await;
            return Err(e.into());
        }
    };
    let plan = match sqllab::plan(d, &sql, limit, db.flag("allow_dml"), &denied) {
        Ok(p) => p,
        Err(e) => {
            record_failure(state, query_id, &e, describe).await;
            return Err(e.into());
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
        run_job(task_state, job, describe).await
    });
    state
        .sqllab
        .register(&client_id, query_id, handle.abort_handle());
    let _ = go.send(());

    if run_async {
        let rec = load_query(state, query_id).await?;
        return Ok(Executed::Accepted(rec));
    }

    let secs = state.config.query.sqllab_timeout_secs;
    let mut guard = StopOnDrop {
        state: Some(state.clone()),
        client_id: client_id.clone(),
        describe,
    };
    let joined = match tokio::time::timeout(Duration::from_secs(secs), &mut handle).await {
        Ok(joined) => joined,
        Err(_) => {
            guard.disarm();
            if state.sqllab.stop(&client_id).is_some() {
                let e = SqlLabError::Timeout(secs);
                tracing::info!(message = "SQL Lab query timed out.", query_id, secs);
                record_failure(state, query_id, &e, describe).await;
                return Err(e.into());
            }
            // It finished as the deadline passed: take its result.
            handle.await
        }
    };
    guard.disarm();
    let out = match joined {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(e.into()),
        Err(j) if j.is_cancelled() => return Err(SqlLabError::Stopped.into()),
        Err(j) => return Err(SqlLabError::Internal(j.to_string()).into()),
    };
    let rec = load_query(state, query_id).await?;
    let display = usize::try_from(state.config.query.display_max_row).unwrap_or(usize::MAX);
    Ok(Executed::Done(Finished {
        query: rec,
        engine,
        rows: out.rows,
        display,
    }))
}

/// `GET /sqllab/results/`: the kept rows of the run whose results key is `key`, if the caller
/// may see that run and still reach its database; `rows` caps how many are shown. Rows kept by
/// another replica, or expired, are [`SqlLabError::ResultsExpired`].
pub async fn results(
    state: &AppState,
    user: &CurrentUser,
    key: &str,
    rows: Option<u64>,
) -> Result<Finished, Error> {
    let Some(id) = state
        .store
        .find_id(&QUERY, "results_key", Value::Text(key.to_owned()))
        .await?
    else {
        return Err(SqlLabError::QueryNotFound.into());
    };
    let rec = load_query(state, id).await?;
    if rec.get::<i64>("user_id") != Some(user.user.id) && !sees_all_queries(user) {
        return Err(SqlLabError::QueryForbidden.into());
    }
    let db = database_record(state, rec.get("database_id").unwrap_or_default()).await?;
    check_access(state, user, &db, None).await?;
    let Some(rs) = state.sqllab.results(key).await else {
        tracing::info!(message = "SQL Lab results no longer kept.", query_id = id);
        return Err(SqlLabError::ResultsExpired.into());
    };
    let engine = crate::uri::ConnectionUri::parse(&db.text("sqlalchemy_uri"))
        .map_or(Engine::Postgres, |u| u.engine);
    let max = usize::try_from(state.config.query.display_max_row).unwrap_or(usize::MAX);
    let display = rows
        .map_or(max, |r| usize::try_from(r).unwrap_or(usize::MAX))
        .min(max);
    Ok(Finished {
        query: rec,
        engine,
        rows: rs,
        display,
    })
}

/// A run's results as CSV.
#[derive(Debug)]
pub struct Export {
    /// The run's row.
    pub query: Record,
    /// The rows as CSV (`Frame::csv`: pandas' format, formula escaping).
    pub csv: String,
}

/// `GET /sqllab/export/<client_id>`: the caller's run's results as CSV: the kept rows, or
/// else its last statement run again (never a write; read-only, at most its limit, within the
/// SQL Lab timeout).
pub async fn export(
    state: &AppState,
    user: &CurrentUser,
    client_id: &str,
) -> Result<Export, Error> {
    let Some(id) = query_by_client_id(state, client_id).await? else {
        return Err(SqlLabError::QueryNotFound.into());
    };
    let rec = load_query(state, id).await?;
    if rec.get::<i64>("user_id") != Some(user.user.id) && !sees_all_queries(user) {
        return Err(SqlLabError::QueryForbidden.into());
    }
    let db = database_record(state, rec.get("database_id").unwrap_or_default()).await?;
    let spec = connections::connection_spec(state, db.id).await?;
    let d = sql_dialect(spec.uri.engine);
    let executed = rec.text("executed_sql");
    check_access(state, user, &db, Some((d, &rec.text("sql")))).await?;
    let kept = match rec.get::<String>("results_key") {
        Some(key) => state.sqllab.results(&key).await,
        None => None,
    };
    let rows = match kept {
        Some(rows) => (*rows).clone(),
        None => rerun(state, &db, &spec, &rec, &executed).await?,
    };
    let frame = Frame::new(rows, &BTreeSet::new());
    let csv = frame.csv(&frame.colnames);
    tracing::info!(message = "SQL Lab results exported.", query_id = id);
    Ok(Export { query: rec, csv })
}

/// The stored last statement of a run whose rows are no longer kept, run again read-only
/// (after the same function checks as any run), at most its limit.
async fn rerun(
    state: &AppState,
    db: &Record,
    spec: &ConnectionSpec,
    rec: &Record,
    executed: &str,
) -> Result<ResultSet, SqlLabError> {
    let d = sql_dialect(spec.uri.engine);
    if executed.trim().is_empty() {
        return Err(SqlLabError::ResultsExpired);
    }
    // Never re-run a write; the run is read-only whatever the database allows.
    if sqlcheck::is_mutating(d, executed).unwrap_or(false) {
        return Err(SqlLabError::Invalid(
            "Only the results of a SELECT can be exported".into(),
        ));
    }
    let denied = super::denied_functions(state, &db.text("database_name"), spec.uri.engine);
    let bad = match sqlcheck::functions_called(d, executed) {
        Ok(called) => sqlcheck::disallowed(called, &denied),
        Err(_) => sqlcheck::denied_words(d, executed, &denied)?,
    };
    if !bad.is_empty() {
        return Err(SqlLabError::DisallowedFunctions(bad));
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
    let run = state.engines.execute(spec, executed, opts);
    let secs = Duration::from_secs(state.config.query.sqllab_timeout_secs);
    match tokio::time::timeout(secs, run).await {
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(EngineError::NotReadOnly)) => Err(SqlLabError::DmlNotAllowed),
        Ok(Err(error)) => Err(SqlLabError::Engine {
            error,
            engine_name: engine_name(spec.uri.engine),
        }),
        Err(_) => Err(SqlLabError::Timeout(state.config.query.sqllab_timeout_secs)),
    }
}

/// `POST /sqllab/format_sql/`: `sql` pretty-printed in the dialect of the database
/// `database_id`, else of `engine` (`sqlite`; PostgreSQL otherwise).
pub async fn format_sql(
    state: &AppState,
    database_id: Option<i64>,
    engine: Option<&str>,
    sql: &str,
) -> Result<String, Error> {
    let d = match (database_id, engine) {
        (Some(id), _) => {
            let db = database_record(state, id).await?;
            crate::uri::ConnectionUri::parse(&db.text("sqlalchemy_uri"))
                .map_or(SqlDialect::Postgres, |u| sql_dialect(u.engine))
        }
        (None, Some(e)) if e.eq_ignore_ascii_case("sqlite") => SqlDialect::Sqlite,
        _ => SqlDialect::Postgres,
    };
    Ok(sqlcheck::format_sql(d, sql).map_err(SqlLabError::from)?)
}

/// One statement's cost, as PostgreSQL's planner estimates it (Python float text).
#[derive(Debug)]
pub struct Cost {
    /// `Startup Cost`.
    pub startup: Option<String>,
    /// `Total Cost`.
    pub total: Option<String>,
}

/// A SQL Lab script's Jinja template rendered (Superset's `SqlQueryRenderImpl`): the caller's
/// user macros, `template_params` as variables (their `_filters` feed `filter_values`), the
/// request's query string for `url_param`, and `dataset()`/`metric()` of the caller's datasets
/// in this database. No value check: the user writes the SQL and the values alike, and the
/// result passes every check a typed script does. SQL without template syntax is returned
/// as it is.
pub async fn render(
    state: &AppState,
    user: &CurrentUser,
    database_id: i64,
    engine: Engine,
    sql: &str,
    template_params: &Map<String, Json_>,
    url_params: &Map<String, Json_>,
) -> Result<String, Error> {
    if !template::has_template(sql) {
        return Ok(sql.to_owned());
    }
    let mut facts = template::Facts::neutral(chrono::Utc::now().naive_utc());
    facts.user = super::templating::user_facts(user);
    facts.url_params = url_params.clone();
    facts.escape_url_params = false;
    if let Some(Json_::Array(filters)) = template_params.get("_filters") {
        facts.filters = filters.clone();
    }
    let tpl = super::templating::templating(state, user, facts, None, database_id, &[sql]).await?;
    let sql = sql.trim().trim_end_matches(';');
    tpl.script_renderer(crate::engines::Dialect::of(engine), template_params)
        .render(sql)
        .map_err(|e| SqlLabError::Template(e).into())
}

/// `POST /sqllab/estimate/`: each statement's cost by PostgreSQL's planner (`EXPLAIN`, never
/// executed), after the same template rendering, access and function checks as a run. Needs
/// `"cost_estimate_enabled": true` in the database's `extra`.
pub async fn estimate(
    state: &AppState,
    user: &CurrentUser,
    database_id: i64,
    sql: &str,
    template_params: &Map<String, Json_>,
) -> Result<Vec<Cost>, Error> {
    let db = database_record(state, database_id).await?;
    let spec = connections::connection_spec(state, db.id).await?;
    let d = sql_dialect(spec.uri.engine);
    let rendered = render(
        state,
        user,
        db.id,
        spec.uri.engine,
        sql,
        template_params,
        &Map::new(),
    )
    .await?;
    let sql = rendered.as_str();
    check_access(state, user, &db, Some((d, sql))).await?;
    if spec.uri.engine != Engine::Postgres {
        return Err(SqlLabError::Invalid(format!(
            "Cost estimation is not supported for {} databases",
            engine_name(spec.uri.engine)
        ))
        .into());
    }
    let enabled = db
        .get::<String>("extra")
        .and_then(|e| serde_json::from_str::<Json_>(&e).ok())
        .and_then(|e| e.get("cost_estimate_enabled").and_then(Json_::as_bool))
        .unwrap_or(false);
    if !enabled {
        return Err(SqlLabError::Invalid(
            "Cost estimation is not enabled for this database: set \
             \"cost_estimate_enabled\": true in its extra"
                .into(),
        )
        .into());
    }
    let statements = sqlcheck::split_statements(d, sql).map_err(SqlLabError::from)?;
    let denied = super::denied_functions(state, &db.text("database_name"), spec.uri.engine);
    let called = sqlcheck::functions_called(d, sql).map_err(SqlLabError::from)?;
    let bad = sqlcheck::disallowed(called, &denied);
    if !bad.is_empty() {
        return Err(SqlLabError::DisallowedFunctions(bad).into());
    }
    let mut result = Vec::new();
    for s in &statements {
        if let Some(word) = sqllab::session_statement(d, &s.sql) {
            return Err(SqlLabError::SessionStatement(word).into());
        }
        if sqlcheck::leading_keyword(d, &s.sql) == "EXPLAIN" {
            return Err(SqlLabError::SessionStatement("EXPLAIN".into()).into());
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
            .map_err(|error| SqlLabError::Engine {
                error,
                engine_name: engine_name(spec.uri.engine),
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
        result.push(Cost {
            startup: cost("Startup Cost"),
            total: cost("Total Cost"),
        });
    }
    Ok(result)
}
