//! `/api/v1/chart/data`: Superset's `ChartDataRestApi` (POST a query context, GET a saved
//! chart's data, GET a cached result by key). The query semantics live in [`crate::query`];
//! this module loads the dataset, checks access, and renders JSON, CSV or a ZIP of CSVs.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::{Binary, Json};
use poem_openapi::{ApiResponse, OpenApi};
use serde_json::{Value as Json_, json};

use super::Tags;
use super::error::ApiError;
use super::extract::{Auth, JsonBody};
use super::resource;
use crate::auth::CurrentUser;
use crate::engines::{Cell, ConnectionSpec, Dialect};
use crate::plugins::{GuestErrorKind, PluginError, pipeline};
use crate::query::context::{self, QueryContext, QueryObject, ResultFormat, ResultType};
use crate::query::frame::{self, Frame};
use crate::query::offsets;
use crate::query::runner::{self, CachePolicy};
use crate::query::sql::{self, Limits};
use crate::query::{DatasetColumn, DatasetMetric, Datasource, QueryError, sqlcheck};
use crate::state::AppState;
use crate::store::catalog::{self, CHART, DATASET};

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
        let ctx = context::parse(&body.0, &self.state.plugins.post_processor_names())?;
        until_gone(&self.state, req, run(&self.state, &user, ctx, &body.0)).await
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
        let scope = catalog::chart_scope(&user.grants());
        resource::in_reach(&self.state, &CHART, pk.0, &scope, resource::forbidden).await?;
        let chart = self.state.store.load_one(&CHART, pk.0, &[]).await?;
        let mut body = chart_context(&self.state, &chart).await?;
        if let Some(obj) = body.as_object_mut() {
            if let Some(f) = format.0 {
                obj.insert("result_format".into(), json!(f));
            }
            if let Some(t) = result_type.0 {
                obj.insert("result_type".into(), json!(t));
            }
            obj.insert(
                "force".into(),
                json!(force.0.as_deref().is_some_and(|f| f == "true" || f == "1")),
            );
        }
        let ctx = context::parse(&body, &self.state.plugins.post_processor_names())?;
        until_gone(&self.state, req, run(&self.state, &user, ctx, &body)).await
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
        let Some(body) = self.state.runner.context(&cache_key.0).await else {
            return Err(QueryError::CacheMiss.into());
        };
        let mut body = (*body).clone();
        if let Some(obj) = body.as_object_mut() {
            obj.insert("force".into(), json!(false));
        }
        let ctx = context::parse(&body, &self.state.plugins.post_processor_names())?;
        until_gone(&self.state, req, run(&self.state, &user, ctx, &body)).await
    }
}

/// The query context of a saved chart: its saved `query_context`, or, for a chart saved
/// without one (created through the API with `params` only), the one its viz plugin's
/// `build-query` makes from the chart's form data. The chart row is authoritative for the
/// dataset, and unknown top-level keys (other Superset versions') are dropped.
pub(super) async fn chart_context(
    state: &AppState,
    chart: &crate::store::model::Record,
) -> Result<Json_, ApiError> {
    const NO_CONTEXT: &str = "Chart has no query context saved. Please save the chart again.";
    let saved = serde_json::from_str::<Json_>(&chart.text("query_context"))
        .ok()
        .filter(Json_::is_object);
    let mut body = match saved {
        Some(b) => b,
        None => {
            let viz_type = chart.text("viz_type");
            let Some(plugin) = state.plugins.viz_for(&viz_type).await? else {
                return Err(ApiError::bad_request(NO_CONTEXT));
            };
            let form_data = super::chart::form_data(chart).to_string();
            let request_id = format!("chart-{}", chart.id);
            state
                .plugins
                .build_query(&plugin, &form_data, &request_id)
                .await?
        }
    };
    let Some(obj) = body.as_object_mut() else {
        return Err(ApiError::bad_request(NO_CONTEXT));
    };
    // The chart row is authoritative for its dataset: a query context saved on another
    // server (an imported bundle) still names that server's dataset id.
    if let Some(ds) = chart.get::<i64>("datasource_id") {
        obj.insert("datasource".into(), json!({"id": ds, "type": "table"}));
    }
    obj.retain(|k, _| context::TOP_LEVEL.contains(&k.as_str()));
    let form_data = obj.entry("form_data").or_insert_with(|| json!({}));
    if let Some(fd) = form_data.as_object_mut() {
        fd.insert("slice_id".into(), json!(chart.id));
    }
    Ok(body)
}

/// Runs `work` until it finishes or the client closes its connection; dropping `work` then
/// cancels its queries inside the database.
pub async fn until_gone<T>(
    state: &AppState,
    req: &poem::Request,
    work: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let peer = req.remote_addr().as_socket_addr().copied();
    tokio::select! {
        out = work => out,
        () = state.connections.gone(peer.as_ref()) => {
            tracing::info!(message = "Client went away; its queries were cancelled.");
            // nginx's "client closed request"; nobody reads it.
            Err(ApiError::message(
                poem::http::StatusCode::from_u16(499).unwrap_or(poem::http::StatusCode::BAD_REQUEST),
                "Client closed request",
            ))
        }
    }
}

/// The dataset of a request with its connection, from the cache or the catalog.
pub async fn datasource(
    state: &AppState,
    id: i64,
) -> Result<Arc<(Datasource, ConnectionSpec)>, ApiError> {
    if let Some(hit) = state.datasources.get(&id).await {
        return Ok(hit);
    }
    let loaded = Arc::new(load_datasource(state, id).await?);
    state.datasources.insert(id, loaded.clone()).await;
    Ok(loaded)
}

/// Loads the dataset of a request as the query layer needs it.
async fn load_datasource(
    state: &AppState,
    id: i64,
) -> Result<(Datasource, ConnectionSpec), ApiError> {
    let Some(rec) = state
        .store
        .load(&DATASET, &[id], &["database"])
        .await?
        .pop()
    else {
        return Err(QueryError::NotFound.into());
    };
    let database_id: i64 = rec.get("database_id").unwrap_or_default();
    let spec = super::database::connection_spec(state, database_id).await?;
    let (columns, metrics) = super::dataset::children(state, id).await?;
    let db = rec.one("database");
    let opt_text = |s: String| Some(s).filter(|s| !s.is_empty());
    Ok((
        Datasource {
            id,
            database_id,
            database_name: db.map(|d| d.text("database_name")).unwrap_or_default(),
            engine: spec.uri.engine,
            schema: opt_text(rec.text("schema")),
            table_name: rec.text("table_name"),
            sql: opt_text(rec.text("sql")),
            main_dttm_col: opt_text(rec.text("main_dttm_col")),
            cache_timeout: rec.get("cache_timeout"),
            database_cache_timeout: db.and_then(|d| d.get("cache_timeout")),
            columns: columns
                .iter()
                .map(|c| DatasetColumn {
                    name: c.text("column_name"),
                    expression: opt_text(c.text("expression")),
                    type_name: c.text("type"),
                    is_dttm: c.flag("is_dttm"),
                    verbose_name: opt_text(c.text("verbose_name")),
                })
                .collect(),
            metrics: metrics
                .iter()
                .map(|m| DatasetMetric {
                    name: m.text("metric_name"),
                    expression: m.text("expression"),
                    verbose_name: opt_text(m.text("verbose_name")),
                })
                .collect(),
        },
        spec,
    ))
}

fn ms(t: Option<chrono::NaiveDateTime>) -> Json_ {
    t.map_or(
        Json_::Null,
        |t| json!(t.and_utc().timestamp_millis() as f64),
    )
}

/// One query's result, before rendering.
pub(super) struct Answer {
    /// The JSON entry of the query in `result`.
    pub payload: Json_,
    /// The rows (none for `columns`, `timegrains` and `query` results).
    pub frame: Option<Frame>,
    headers: Vec<String>,
}

/// Runs every query of `ctx` for `user` and renders the response.
pub async fn run(
    state: &AppState,
    user: &CurrentUser,
    ctx: QueryContext,
    raw: &Json_,
) -> Result<ChartData, ApiError> {
    if ctx.result_format == ResultFormat::Xlsx {
        return Err(QueryError::Unsupported("result_format xlsx").into());
    }
    if ctx.result_format == ResultFormat::Csv && !user.has("can_csv", "Superset") {
        return Err(crate::auth::Error::Forbidden.into());
    }
    let result_format = ctx.result_format;
    let answers = execute(state, user, ctx, raw).await?.answers;
    render_answers(result_format, answers)
}

/// What running a query context produced, before it is rendered as JSON or CSV (or drawn by
/// a viz plugin).
pub(super) struct Executed {
    /// One answer per query, in order.
    pub answers: Vec<Answer>,
    /// How long the results may be cached (the chart → dataset → database → default chain).
    pub policy: CachePolicy,
}

/// Checks access to the context's dataset and runs every query.
pub(super) async fn execute(
    state: &AppState,
    user: &CurrentUser,
    ctx: QueryContext,
    raw: &Json_,
) -> Result<Executed, ApiError> {
    if ctx.queries.is_empty() {
        return Err(ApiError::bad_request("Empty query result"));
    }
    let loaded = datasource(state, ctx.datasource_id).await?;
    let (ds, spec) = (&loaded.0, &loaded.1);
    let grants = user.grants();
    if !grants.all
        && !state
            .store
            .matches(&DATASET, ds.id, &catalog::dataset_scope(&grants))
            .await?
    {
        return Err(QueryError::Forbidden(format!("[{}](id:{})", ds.table_name, ds.id)).into());
    }
    let slice_timeout = match ctx
        .form_data
        .as_ref()
        .and_then(|f| f.get("slice_id"))
        .and_then(Json_::as_i64)
    {
        Some(slice) => state
            .store
            .load(&CHART, &[slice], &[])
            .await?
            .pop()
            .and_then(|c| c.get::<i64>("cache_timeout")),
        None => None,
    };
    let q = &state.config.query;
    let limits = Limits {
        row_limit: q.row_limit,
        samples_row_limit: q.samples_row_limit,
        sql_max_row: q.sql_max_row,
    };
    let (policy, cache_timeout) = CachePolicy::from_chain(
        &[
            ctx.custom_cache_timeout,
            slice_timeout,
            ds.cache_timeout,
            ds.database_cache_timeout,
        ],
        q.cache_default_timeout_secs,
    );
    let now = chrono::Utc::now().naive_utc();
    let mut ctx = ctx;
    let totals_args = (&limits, now, (policy, cache_timeout), raw);
    ensure_totals(state, ds, spec, &mut ctx, totals_args).await?;
    let ctx = ctx;
    let mut answers = Vec::with_capacity(ctx.queries.len());
    for query in &ctx.queries {
        let kind = query.result_type.unwrap_or(ctx.result_type);
        answers.push(
            answer(
                state,
                ds,
                spec,
                query,
                kind,
                &limits,
                now,
                (policy, cache_timeout),
                &ctx,
                raw,
            )
            .await?,
        );
    }
    Ok(Executed { answers, policy })
}

/// The response of a chart-data request in its format.
fn render_answers(
    result_format: ResultFormat,
    answers: Vec<Answer>,
) -> Result<ChartData, ApiError> {
    match result_format {
        ResultFormat::Json | ResultFormat::Xlsx => Ok(ChartData::Json(Json(json!({
            "result": answers.into_iter().map(|a| a.payload).collect::<Vec<_>>()
        })))),
        ResultFormat::Csv => {
            let stamp = chrono::Utc::now().format("%Y%m%d_%H%M%S");
            let csvs: Vec<String> = answers
                .iter()
                .map(|a| match &a.frame {
                    Some(f) => f.csv(&a.headers),
                    None => String::new(),
                })
                .collect();
            if csvs.len() == 1 {
                let body = csvs.into_iter().next().unwrap_or_default();
                return Ok(ChartData::Csv(
                    Binary(body.into_bytes()),
                    format!("attachment; filename={stamp}.csv"),
                ));
            }
            let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            for (i, csv) in csvs.iter().enumerate() {
                zip.start_file(format!("query_{}.csv", i + 1), options)
                    .and_then(|()| {
                        zip.write_all("\u{feff}".as_bytes())
                            .and_then(|()| zip.write_all(csv.as_bytes()))
                            .map_err(Into::into)
                    })
                    .map_err(|e| ApiError::internal(&e))?;
            }
            let bytes = zip
                .finish()
                .map_err(|e| ApiError::internal(&e))?
                .into_inner();
            Ok(ChartData::Zip(
                Binary(bytes),
                format!("attachment; filename={stamp}.zip"),
            ))
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn answer(
    state: &AppState,
    ds: &Datasource,
    spec: &ConnectionSpec,
    query: &QueryObject,
    kind: ResultType,
    limits: &Limits,
    now: chrono::NaiveDateTime,
    (policy, cache_timeout): (CachePolicy, i64),
    ctx: &QueryContext,
    raw: &Json_,
) -> Result<Answer, ApiError> {
    match kind {
        ResultType::Columns => {
            let data: Vec<Json_> = ds
                .columns
                .iter()
                .map(|c| {
                    json!({"column_name": c.name, "verbose_name": c.verbose_name, "dtype": c.dtype().code()})
                })
                .collect();
            return Ok(Answer {
                payload: json!({ "data": data }),
                frame: None,
                headers: Vec::new(),
            });
        }
        ResultType::Timegrains => {
            let data: Vec<Json_> = Dialect::of(ds.engine)
                .time_grains()
                .iter()
                .map(|g| json!({"name": g.name, "function": g.template, "duration": g.duration}))
                .collect();
            return Ok(Answer {
                payload: json!({ "data": data }),
                frame: None,
                headers: Vec::new(),
            });
        }
        _ => {}
    }
    let plan = sql::build(ds, query, kind, limits, now)?;
    if kind == ResultType::Query {
        return Ok(Answer {
            payload: json!({"language": "sql", "query": plan.sql}),
            frame: None,
            headers: Vec::new(),
        });
    }
    let runs_pp = matches!(
        kind,
        ResultType::Full | ResultType::Results | ResultType::PostProcessed
    );
    check_functions(state, ds, &plan.sql)?;
    let max_rows = usize::try_from(plan.row_limit.max(1)).unwrap_or(usize::MAX);
    let key = runner::cache_key(spec, &plan.sql, max_rows);
    let outcome = state
        .runner
        .run(spec, &key, &plan.sql, max_rows, policy, ctx.force)
        .await
        .map_err(QueryError::from)?;
    state.runner.remember_context(&key, raw.clone()).await;
    let sql_rowcount = outcome.rows.rows.len();
    let mut frame = Frame::new((*outcome.rows).clone(), &plan.temporal);
    let mut query_text = format!("{};\n\n", plan.sql);
    if runs_pp {
        let metrics: Vec<String> = plan.metric_sources.iter().map(|(l, _)| l.clone()).collect();
        let keys = offsets::join_keys(&frame, &metrics);
        for offset in &query.time_offsets {
            let oq = offsets::offset_query(query, offset);
            let oplan = sql::build(ds, &oq, kind, limits, now)?;
            check_functions(state, ds, &oplan.sql)?;
            let omax = usize::try_from(oplan.row_limit.max(1)).unwrap_or(usize::MAX);
            let okey = runner::cache_key(spec, &oplan.sql, omax);
            let out = state
                .runner
                .run(spec, &okey, &oplan.sql, omax, policy, ctx.force)
                .await
                .map_err(QueryError::from)?;
            let oframe = Frame::new((*out.rows).clone(), &oplan.temporal);
            offsets::join(&mut frame, &oframe, offset, &keys, &metrics)?;
            query_text.push_str(&format!("{};\n\n", oplan.sql));
        }
    }
    if runs_pp && !query.post_processing.is_empty() {
        match pipeline::run(&state.plugins, &frame, &query.post_processing, &key).await {
            Ok(f) => frame = f,
            // Superset's ChartDataCommand only raises on a truthy error: a post-processing error
            // with an empty message leaves a 200 whose query entry failed.
            Err(PluginError::Failed { message, kind, .. })
                if message.is_empty() && kind != GuestErrorKind::Internal =>
            {
                return Ok(Answer {
                    payload: json!({
                        "cache_key": key,
                        "status": "failed",
                        "error": "",
                        "query": query_text,
                        "annotation_data": {},
                        "applied_template_filters": [],
                    }),
                    frame: None,
                    headers: Vec::new(),
                });
            }
            Err(e) => return Err(e.into()),
        }
        frame.retype_all_null(|name| {
            ds.columns
                .iter()
                .find(|c| c.name == name)
                .map(DatasetColumn::dtype)
        });
    }

    // label_map: the frame's own labels, then the query's columns and metrics, then the
    // verbose names of saved metrics.
    let mut label_map = frame.finish_labels();
    for (label, source) in &plan.column_sources {
        label_map.insert(label.clone(), json!([source]));
    }
    // Metrics by their verbose name when they have one (below), else by their label, as
    // Superset's `get_metric_names(metrics, verbose_map)` names them.
    for (label, source) in &plan.metric_sources {
        if !plan.metric_verbose.iter().any(|(_, name)| name == source) {
            label_map.insert(label.clone(), json!([source]));
        }
    }
    for (verbose, name) in &plan.metric_verbose {
        label_map.insert(verbose.clone(), json!([name]));
    }

    let rowcount = frame.rows.len();
    let colnames = frame.colnames.clone();
    let coltypes = frame.coltype_codes();
    let data = frame.records();
    let payload = if kind == ResultType::Results {
        json!({
            "data": data,
            "colnames": colnames,
            "coltypes": coltypes,
            "rowcount": rowcount,
            "sql_rowcount": sql_rowcount,
        })
    } else {
        json!({
            "cache_key": key,
            "cached_dttm": outcome.cached_at.map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string()),
            "cache_timeout": cache_timeout,
            "applied_template_filters": [],
            "annotation_data": {},
            "error": null,
            "is_cached": outcome.cached_at.is_some(),
            "query": query_text,
            "status": "success",
            "stacktrace": null,
            "rowcount": rowcount,
            "sql_rowcount": sql_rowcount,
            "from_dttm": ms(plan.from_dttm),
            "to_dttm": ms(plan.to_dttm),
            "label_map": label_map,
            "colnames": colnames,
            "indexnames": frame.index.clone().unwrap_or_else(|| (0..rowcount).map(Json_::from).collect()),
            "coltypes": coltypes,
            "data": data,
            "result_format": ctx.result_format.as_str(),
            "applied_filters": plan.applied_filters.iter().map(|c| json!({"column": c})).collect::<Vec<_>>(),
            "rejected_filters": plan.rejected_filters.iter().map(|c| json!({"reason": "not_in_datasource", "column": c})).collect::<Vec<_>>(),
        })
    };
    // CSV headers use the dataset's verbose names.
    let mut verbose: HashMap<String, String> = HashMap::new();
    for c in &ds.columns {
        if let Some(v) = &c.verbose_name {
            verbose.insert(c.name.clone(), v.clone());
        }
    }
    for m in &ds.metrics {
        if let Some(v) = &m.verbose_name {
            verbose.insert(m.name.clone(), v.clone());
        }
    }
    let headers = frame::csv_headers(&frame.colnames, &verbose);
    Ok(Answer {
        payload,
        frame: Some(frame),
        headers,
    })
}

/// Superset's `ensure_totals_available`: when a query's post-processing has a `contribution`
/// step and the context also holds a totals query (metrics, no columns, no post-processing),
/// that query runs without a row limit and the sums of its numeric columns become the
/// contribution's `contribution_totals`, so percentages are of all records, not of the rows the
/// chart's limit kept.
async fn ensure_totals(
    state: &AppState,
    ds: &Datasource,
    spec: &ConnectionSpec,
    ctx: &mut QueryContext,
    (limits, now, cache, raw): (&Limits, chrono::NaiveDateTime, (CachePolicy, i64), &Json_),
) -> Result<(), ApiError> {
    let needs: Vec<usize> = (0..ctx.queries.len())
        .filter(|&i| {
            let q = &ctx.queries[i];
            !q.is_rowcount && q.post_processing.iter().any(|(op, _)| op == "contribution")
        })
        .collect();
    let totals_query = ctx.queries.iter().find(|q| {
        q.columns.is_empty()
            && q.metrics.as_ref().is_some_and(|m| !m.is_empty())
            && q.post_processing.is_empty()
            && !q.is_rowcount
    });
    let (false, Some(totals_query)) = (needs.is_empty(), totals_query) else {
        return Ok(());
    };
    let mut tq = totals_query.clone();
    tq.row_limit = None;
    let answer = answer(
        state,
        ds,
        spec,
        &tq,
        ResultType::Full,
        limits,
        now,
        cache,
        ctx,
        raw,
    )
    .await?;
    let Some(frame) = answer.frame else {
        return Ok(());
    };
    let mut totals = serde_json::Map::new();
    for (i, name) in frame.colnames.iter().enumerate() {
        if frame.coltypes.get(i) != Some(&crate::engines::GenericType::Numeric) {
            continue;
        }
        let cells = frame.rows.iter().filter_map(|r| r.get(i));
        let total = if cells
            .clone()
            .all(|c| matches!(c, Cell::Int(_) | Cell::Null))
        {
            json!(
                cells
                    .map(|c| if let Cell::Int(v) = c { *v } else { 0 })
                    .fold(0i64, i64::wrapping_add)
            )
        } else {
            let sum: f64 = cells
                .filter_map(|c| match frame::cell_json(c) {
                    Json_::Number(n) => n.as_f64(),
                    _ => None,
                })
                .sum();
            json!(sum)
        };
        totals.insert(name.clone(), total);
    }
    for i in needs {
        for (op, options) in &mut ctx.queries[i].post_processing {
            if op != "contribution" {
                continue;
            }
            if !options.is_object() {
                *options = json!({});
            }
            if let Some(o) = options.as_object_mut() {
                o.insert("contribution_totals".into(), Json_::Object(totals.clone()));
            }
        }
    }
    Ok(())
}

/// Refuses SQL calling a function the dataset's database may not call
/// (`query.databases.<name>.disallowed_functions`, else `LITESET_DISALLOWED_FUNCTIONS`).
fn check_functions(state: &AppState, ds: &Datasource, sql: &str) -> Result<(), QueryError> {
    let denied = state.config.disallowed_functions_for(&ds.database_name);
    if denied.is_empty() {
        return Ok(());
    }
    let dialect = match ds.engine {
        crate::uri::Engine::Postgres => sqlcheck::SqlDialect::Postgres,
        crate::uri::Engine::Sqlite => sqlcheck::SqlDialect::Sqlite,
    };
    let bad = sqlcheck::disallowed(sqlcheck::functions_called(dialect, sql)?, &denied);
    if bad.is_empty() {
        Ok(())
    } else {
        Err(QueryError::DisallowedFunctions(bad))
    }
}
