//! Chart data (Superset's `ChartDataCommand`): a query context in, the chart's data out, as
//! JSON payloads, one CSV or a ZIP of CSVs.
//!
//! The pipeline, top to bottom:
//! 1. **load the datasource** ([`datasource`]: the dataset and its connection, cached) and check
//!    the caller may read it;
//! 2. **plan** ([`Run::new`]: limits, the cache-timeout chain, `ensure_totals`; per query
//!    [`Run::plan`]: the SQL, its function check);
//! 3. **run** ([`Run::fetch`]: the results cache and single flight of the runner, time offsets
//!    joined);
//! 4. **post-process** ([`Run::post_process`]: the wasm pipeline);
//! 5. **shape** ([`Run::payload`] per query, [`shape`] for the whole response).

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use chrono::NaiveDateTime;
use serde_json::{Value as Json_, json};

use super::Error;
use crate::auth::CurrentUser;
use crate::engines::{Cell, ConnectionSpec, Dialect};
use crate::plugins::{GuestErrorKind, PluginError, pipeline};
use crate::query::context::{self, QueryContext, QueryObject, ResultFormat, ResultType};
use crate::query::frame::{self, Frame};
use crate::query::offsets;
use crate::query::runner::{self, CachePolicy, Outcome};
use crate::query::sql::{self, Limits, Plan};
use crate::query::{DatasetColumn, DatasetMetric, Datasource, QueryError, sqlcheck, template};
use crate::state::{AppState, SavedChart};
use crate::store::catalog::{self, CHART, DATASET};
use crate::store::model::Record;

/// A chart-data response in its format.
#[derive(Debug)]
pub enum Output {
    /// `{"result": [...]}`.
    Json(Json_),
    /// One query as CSV, with the attachment's file name.
    Csv { body: Vec<u8>, filename: String },
    /// Several queries as a ZIP of CSVs, with the attachment's file name.
    Zip { body: Vec<u8>, filename: String },
}

/// What a saved chart's data request may override in its saved query context.
#[derive(Debug, Default)]
pub struct SavedChartOptions {
    /// `result_format`, as given.
    pub format: Option<String>,
    /// `result_type`, as given.
    pub result_type: Option<String>,
    /// `force`: run the queries even if their results are cached.
    pub force: bool,
}

/// `POST /chart/data`: runs a query context sent by the client.
pub async fn data(state: &AppState, user: &CurrentUser, mut body: Json_) -> Result<Output, Error> {
    plugin_queries(state, &mut body, "chart-data").await?;
    let ctx = context::parse(&body, &state.plugins.post_processor_names())?;
    respond(state, user, ctx, &Arc::new(body), None).await
}

/// `GET /chart/<pk>/data`: the data of a saved chart, from its saved query context.
pub async fn saved_chart(
    state: &AppState,
    user: &CurrentUser,
    pk: i64,
    options: SavedChartOptions,
) -> Result<Output, Error> {
    let saved = saved(state, user, pk).await?;
    let mut body = saved.context.clone().ok_or(Error::NoQueryContext)?;
    if let Some(obj) = body.as_object_mut() {
        if let Some(f) = options.format {
            obj.insert("result_format".into(), json!(f));
        }
        if let Some(t) = options.result_type {
            obj.insert("result_type".into(), json!(t));
        }
        obj.insert("force".into(), json!(options.force));
    }
    let ctx = context::parse(&body, &state.plugins.post_processor_names())?;
    respond(state, user, ctx, &Arc::new(body), Some(&saved.chart)).await
}

/// `GET /chart/data/<cache_key>`: a result again, by the key a previous answer gave.
pub async fn cached(state: &AppState, user: &CurrentUser, key: &str) -> Result<Output, Error> {
    let Some(body) = state.runner.context(key).await else {
        return Err(QueryError::CacheMiss.into());
    };
    let mut body = (*body).clone();
    if let Some(obj) = body.as_object_mut() {
        obj.insert("force".into(), json!(false));
    }
    let ctx = context::parse(&body, &state.plugins.post_processor_names())?;
    respond(state, user, ctx, &Arc::new(body), None).await
}

/// A saved chart the user may read, with its query context: `NotFound` when it does not exist,
/// `Forbidden` when it is outside the user's data access.
///
/// The access question is asked of the catalog on every call; only the chart's definition
/// comes from the cache, so a dashboard's charts cost no metadata round trip and no JSON parse
/// (or `build-query` call) each. The dataset itself is checked again, live, by [`execute`].
pub async fn saved(
    state: &AppState,
    user: &CurrentUser,
    pk: i64,
) -> Result<Arc<SavedChart>, Error> {
    if !user.grants().all {
        readable(state, user, pk).await?;
    }
    if let Some(hit) = state.charts.get(&pk).await {
        return Ok(hit);
    }
    let seen = state.catalog_seen();
    let chart = state.store.load_one(&CHART, pk, &[]).await?;
    // A chart nothing can build a query for is still cached: rendering it answers which viz
    // type lacks a plugin, its data that it has no query context.
    let context = match chart_context(state, &chart).await {
        Ok(c) => Some(c),
        Err(Error::NoQueryContext) => None,
        Err(e) => return Err(e),
    };
    let loaded = Arc::new(SavedChart::new(chart, context));
    state
        .remember(&state.charts, pk, loaded.clone(), seen)
        .await;
    Ok(loaded)
}

/// Whether the chart exists and lies inside the user's data access.
async fn readable(state: &AppState, user: &CurrentUser, pk: i64) -> Result<(), Error> {
    match state
        .store
        .reach(&CHART, pk, &catalog::chart_scope(user.grants()))
        .await?
    {
        None => Err(crate::store::Error::NotFound.into()),
        Some(false) => Err(crate::auth::Error::Forbidden.into()),
        Some(true) => Ok(()),
    }
}

/// The query context of a saved chart: its saved `query_context`, or, for a chart saved
/// without one (created through the API with `params` only), the one its viz plugin's
/// `build-query` makes from the chart's form data. The chart row is authoritative for the
/// dataset, and unknown top-level keys (other Superset versions') are dropped.
async fn chart_context(state: &AppState, chart: &Record) -> Result<Json_, Error> {
    let saved = serde_json::from_str::<Json_>(&chart.text("query_context"))
        .ok()
        .filter(Json_::is_object);
    let mut body = match saved {
        Some(mut b) => {
            plugin_queries(state, &mut b, &format!("chart-{}", chart.id)).await?;
            b
        }
        None => {
            let viz_type = chart.text("viz_type");
            let Some(plugin) = state.plugins.viz_for(&viz_type).await? else {
                return Err(Error::NoQueryContext);
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
        return Err(Error::NoQueryContext);
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

/// A query context without queries leaves them to the viz plugin of its form data's
/// `viz_type`: the plugin's `build-query` of that form data supplies them, everything else
/// (datasource, result type and format, `force`, cache timeout) stays the client's. This is
/// what the app bridge's build-query sends (`services::chart_app`): the app's build-query is
/// synchronous and the plugin runs here. Such a context is also what the app saves as a
/// chart's `query_context`. A context without queries and without a viz plugin stays as it
/// is (and is refused as empty).
async fn plugin_queries(state: &AppState, body: &mut Json_, request_id: &str) -> Result<(), Error> {
    let empty = body
        .get("queries")
        .and_then(Json_::as_array)
        .is_some_and(Vec::is_empty);
    let Some(form) = body.get("form_data").filter(|f| f.is_object() && empty) else {
        return Ok(());
    };
    let Some(viz_type) = form.get("viz_type").and_then(Json_::as_str) else {
        return Ok(());
    };
    let Some(plugin) = state.plugins.viz_for(viz_type).await? else {
        return Ok(());
    };
    let built = state
        .plugins
        .build_query(&plugin, &form.to_string(), request_id)
        .await?;
    match built.get("queries") {
        Some(Json_::Array(queries)) => {
            let mut queries = queries.clone();
            if let Some(extra) = form.get("extra_form_data").filter(|e| e.is_object()) {
                for q in &mut queries {
                    apply_extra_form_data(q, extra);
                }
            }
            body["queries"] = Json_::Array(queries);
        }
        _ => {
            return Err(PluginError::BadOutput {
                plugin: plugin.summary.name.clone(),
                detail: "the query context has no `queries` list".into(),
            }
            .into());
        }
    }
    Ok(())
}

/// Superset's `overrideExtraFormData`, which the app's own build-queries apply to every query
/// object: a dashboard's native filters and cross-filters (`extra_form_data`) add their
/// filters and override the time range, time column and grain. A plugin's `build-query` runs
/// here instead, so the same is done to the queries it built.
fn apply_extra_form_data(query: &mut Json_, extra: &Json_) {
    let Some(q) = query.as_object_mut() else {
        return;
    };
    if let Some(Json_::Array(added)) = extra.get("filters") {
        match q.get_mut("filters") {
            Some(Json_::Array(filters)) => filters.extend(added.iter().cloned()),
            _ => {
                q.insert("filters".into(), Json_::Array(added.clone()));
            }
        }
    }
    for (key, target) in [
        ("granularity", "granularity"),
        ("granularity_sqla", "granularity"),
        ("time_column", "time_column"),
        ("time_grain", "time_grain"),
        ("time_range", "time_range"),
    ] {
        if let Some(v) = extra.get(key) {
            q.insert(target.into(), v.clone());
        }
    }
    for key in ["relative_start", "relative_end", "time_grain_sqla"] {
        if let Some(v) = extra.get(key) {
            let extras = q.entry("extras").or_insert_with(|| json!({}));
            if let Some(e) = extras.as_object_mut() {
                e.insert(key.into(), v.clone());
            }
        }
    }
}

/// Runs every query of `ctx` for `user` and shapes the response in the requested format.
async fn respond(
    state: &AppState,
    user: &CurrentUser,
    ctx: QueryContext,
    raw: &Arc<Json_>,
    chart: Option<&Record>,
) -> Result<Output, Error> {
    if ctx.result_format == ResultFormat::Xlsx {
        return Err(QueryError::Unsupported("result_format xlsx").into());
    }
    if ctx.result_format == ResultFormat::Csv && !user.has("can_csv", "Superset") {
        return Err(crate::auth::Error::Forbidden.into());
    }
    super::embedded::check_guest_request(state, user, raw, ctx.datasource_id).await?;
    let result_format = ctx.result_format;
    let answers = execute(state, user, ctx, raw, chart).await?.answers;
    shape(result_format, answers)
}

/// The dataset of a request with its connection, from the cache or the catalog.
pub async fn datasource(
    state: &AppState,
    id: i64,
) -> Result<Arc<(Datasource, ConnectionSpec)>, Error> {
    if let Some(hit) = state.datasources.get(&id).await {
        return Ok(hit);
    }
    let seen = state.catalog_seen();
    let loaded = Arc::new(load_datasource(state, id).await?);
    state
        .remember(&state.datasources, id, loaded.clone(), seen)
        .await;
    Ok(loaded)
}

/// Loads the dataset of a request as the query layer needs it.
async fn load_datasource(state: &AppState, id: i64) -> Result<(Datasource, ConnectionSpec), Error> {
    let Some(rec) = state
        .store
        .load(&DATASET, &[id], &["database"])
        .await?
        .pop()
    else {
        return Err(QueryError::NotFound.into());
    };
    let database_id: i64 = rec.get("database_id").unwrap_or_default();
    // Still the api layer's helpers (they unseal the password and list the children); they
    // move below `api` separately.
    let spec = crate::connections::connection_spec(state, database_id).await?;
    let (columns, metrics) = state.store.dataset_children(id).await?;
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
            template_params: serde_json::from_str::<Json_>(&rec.text("template_params"))
                .ok()
                .and_then(|v| match v {
                    Json_::Object(m) => Some(m),
                    _ => None,
                })
                .unwrap_or_default(),
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

/// One query's result, before the response is shaped.
pub struct Answer {
    /// The JSON entry of the query in `result`.
    pub payload: Json_,
    /// The rows (none for `columns`, `timegrains` and `query` results).
    pub frame: Option<Frame>,
    /// The CSV header of each column (the dataset's verbose names).
    headers: Vec<String>,
}

impl Answer {
    fn without_rows(payload: Json_) -> Answer {
        Answer {
            payload,
            frame: None,
            headers: Vec::new(),
        }
    }
}

/// What running a query context produced, before it is shaped as JSON or CSV (or drawn by a
/// viz plugin).
pub struct Executed {
    /// One answer per query, in order.
    pub answers: Vec<Answer>,
    /// How long the results may be cached (the chart → dataset → database → default chain).
    pub policy: CachePolicy,
}

/// Loads the context's dataset, checks the caller may read it and runs every query. `chart` is
/// the saved chart the context came from, when the caller has it loaded already.
pub async fn execute(
    state: &AppState,
    user: &CurrentUser,
    mut ctx: QueryContext,
    raw: &Arc<Json_>,
    chart: Option<&Record>,
) -> Result<Executed, Error> {
    if ctx.queries.is_empty() {
        return Err(Error::EmptyQuery);
    }
    // 1. Load the datasource.
    let loaded = datasource(state, ctx.datasource_id).await?;
    let (ds, spec) = (&loaded.0, &loaded.1);
    let grants = user.grants();
    if !grants.all
        && !state
            .store
            .matches(&DATASET, ds.id, &catalog::dataset_scope(grants))
            .await?
    {
        return Err(QueryError::Forbidden(format!("[{}](id:{})", ds.table_name, ds.id)).into());
    }
    // 2. Plan: row-level security's filters ride on every query object, so every statement
    // built from them (totals, series limits, time offsets, samples) carries them.
    let row_filters = super::rls::row_filters(state, user, ds.id).await?;
    for q in &mut ctx.queries {
        q.row_filters.clone_from(&row_filters);
    }
    // Templates read the request as sent (Superset's `get_form_data`: the first query
    // object, before the granularity rewrites its filters).
    let tpl = templating(state, user, ds, &ctx, raw).await?;
    ctx.apply_granularity(ds);
    let run = Run::new(state, user, ds, spec, &ctx, raw, chart, tpl).await?;
    run.ensure_totals(&mut ctx).await?;
    // 3–5. Run, post-process and shape each query.
    let mut answers = Vec::with_capacity(ctx.queries.len());
    for query in &ctx.queries {
        let kind = query.result_type.unwrap_or(ctx.result_type);
        answers.push(run.answer(query, kind).await?);
    }
    Ok(Executed {
        answers,
        policy: run.policy,
    })
}

/// What a chart-data request's templates see: the caller, the first query object's
/// `url_params` (else the form data's), simple filters and time range, and the datasets their
/// `dataset()`/`metric()` calls name.
async fn templating(
    state: &AppState,
    user: &CurrentUser,
    ds: &Datasource,
    ctx: &QueryContext,
    raw: &Json_,
) -> Result<sql::Templating, Error> {
    let now = chrono::Utc::now().naive_utc();
    let mut facts = template::Facts::neutral(now);
    if !state.config.query.template_processing {
        return super::templating::templating(state, user, facts, None, ds.database_id, &[]).await;
    }
    facts.user = super::templating::user_facts(user);
    if let Some(first) = ctx.queries.first() {
        facts.url_params = first.url_params.clone();
        facts.filters = first
            .filters
            .iter()
            .filter_map(|f| match &f.col {
                context::ColumnRef::Name(n) => Some(json!({"col": n, "op": f.op, "val": f.val})),
                context::ColumnRef::Adhoc { .. } => None,
            })
            .collect();
        facts.time_range = first.time_range.clone();
    }
    if facts.url_params.is_empty()
        && let Some(params) = ctx
            .form_data
            .as_ref()
            .and_then(|f| f.get("url_params"))
            .and_then(Json_::as_object)
    {
        facts.url_params = params
            .iter()
            .filter(|(_, v)| v.is_string())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    }
    let body = raw.to_string();
    super::templating::templating(state, user, facts, Some(ds), ds.database_id, &[&body]).await
}

/// The response of a chart-data request in its format.
fn shape(result_format: ResultFormat, answers: Vec<Answer>) -> Result<Output, Error> {
    match result_format {
        ResultFormat::Json | ResultFormat::Xlsx => Ok(Output::Json(json!({
            "result": answers.into_iter().map(|a| a.payload).collect::<Vec<_>>()
        }))),
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
                return Ok(Output::Csv {
                    body: body.into_bytes(),
                    filename: format!("{stamp}.csv"),
                });
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
                    .map_err(|e| Error::internal(&e))?;
            }
            let bytes = zip.finish().map_err(|e| Error::internal(&e))?.into_inner();
            Ok(Output::Zip {
                body: bytes,
                filename: format!("{stamp}.zip"),
            })
        }
    }
}

fn ms(t: Option<NaiveDateTime>) -> Json_ {
    t.map_or(
        Json_::Null,
        |t| json!(t.and_utc().timestamp_millis() as f64),
    )
}

/// What every query of one request shares: the dataset, the limits, "now", the cache policy.
struct Run<'a> {
    state: &'a AppState,
    user: &'a CurrentUser,
    ds: &'a Datasource,
    spec: &'a ConnectionSpec,
    limits: Limits,
    policy: CachePolicy,
    /// The `cache_timeout` the payload reports (the chain's first set value).
    cache_timeout: i64,
    force: bool,
    result_format: ResultFormat,
    /// The request's query context as sent, remembered for `GET /chart/data/<cache_key>`
    /// (shared, not copied, by every query that remembers it).
    raw: &'a Arc<Json_>,
    /// How the queries' templates render.
    tpl: sql::Templating,
}

/// What a query's payload reports besides its frame.
struct Shaped<'p> {
    plan: &'p Plan,
    fetched: &'p Fetched,
    /// The label map (computing it finishes the frame's column labels).
    labels: serde_json::Map<String, Json_>,
    sql_rowcount: usize,
    query_text: &'p str,
}

/// A query's rows as they came back from the runner.
struct Fetched {
    key: String,
    outcome: Outcome,
}

impl<'a> Run<'a> {
    /// The settings of a request: limits from the configuration, and the cache timeout by
    /// Superset's chain (the request's custom timeout, the chart's, the dataset's, the
    /// database's, the default).
    #[allow(clippy::too_many_arguments)]
    async fn new(
        state: &'a AppState,
        user: &'a CurrentUser,
        ds: &'a Datasource,
        spec: &'a ConnectionSpec,
        ctx: &QueryContext,
        raw: &'a Arc<Json_>,
        chart: Option<&Record>,
        tpl: sql::Templating,
    ) -> Result<Run<'a>, Error> {
        let slice_timeout = match ctx
            .form_data
            .as_ref()
            .and_then(|f| f.get("slice_id"))
            .and_then(Json_::as_i64)
        {
            // The chart the request came from is loaded already.
            Some(slice) if chart.is_some_and(|c| c.id == slice) => {
                chart.and_then(|c| c.get::<i64>("cache_timeout"))
            }
            Some(slice) => state
                .store
                .load(&CHART, &[slice], &[])
                .await?
                .pop()
                .and_then(|c| c.get::<i64>("cache_timeout")),
            None => None,
        };
        let q = &state.config.query;
        let (policy, cache_timeout) = CachePolicy::from_chain(
            &[
                ctx.custom_cache_timeout,
                slice_timeout,
                ds.cache_timeout,
                ds.database_cache_timeout,
            ],
            q.cache_default_timeout_secs,
        );
        Ok(Run {
            state,
            user,
            ds,
            spec,
            limits: Limits {
                row_limit: q.row_limit,
                samples_row_limit: q.samples_row_limit,
                sql_max_row: q.sql_max_row,
            },
            policy,
            cache_timeout,
            force: ctx.force,
            result_format: ctx.result_format,
            raw,
            tpl,
        })
    }

    /// One query object's answer of `kind`.
    async fn answer(&self, query: &QueryObject, kind: ResultType) -> Result<Answer, Error> {
        match kind {
            ResultType::Columns => {
                let data: Vec<Json_> = self
                    .ds
                    .columns
                    .iter()
                    .map(|c| {
                        json!({"column_name": c.name, "verbose_name": c.verbose_name, "dtype": c.dtype().code()})
                    })
                    .collect();
                return Ok(Answer::without_rows(json!({ "data": data })));
            }
            ResultType::Timegrains => {
                let data: Vec<Json_> = Dialect::of(self.ds.engine)
                    .time_grains()
                    .iter()
                    .map(
                        |g| json!({"name": g.name, "function": g.template, "duration": g.duration}),
                    )
                    .collect();
                return Ok(Answer::without_rows(json!({ "data": data })));
            }
            _ => {}
        }
        let plan = self.plan(query, kind)?;
        if kind == ResultType::Query {
            return Ok(Answer::without_rows(
                json!({"language": "sql", "query": plan.sql}),
            ));
        }
        let fetched = self.fetch(&plan).await?;
        self.state
            .runner
            .remember_context(&fetched.key, self.raw.clone())
            .await;
        let sql_rowcount = fetched.outcome.rows.rows.len();
        let mut frame = Frame::new(
            plan.relabel((*fetched.outcome.rows).clone()),
            &plan.temporal,
        );
        let mut query_text = format!("{};\n\n", plan.sql);
        let runs_pp = matches!(
            kind,
            ResultType::Full | ResultType::Results | ResultType::PostProcessed
        );
        if runs_pp {
            self.join_offsets(query, kind, &plan, &mut frame, &mut query_text)
                .await?;
        }
        if runs_pp && !query.post_processing.is_empty() {
            match self.post_process(query, &frame, &fetched.key).await {
                Ok(f) => frame = f,
                // Superset's ChartDataCommand only raises on a truthy error: a post-processing
                // error with an empty message leaves a 200 whose query entry failed.
                Err(PluginError::Failed { message, kind, .. })
                    if message.is_empty() && kind != GuestErrorKind::Internal =>
                {
                    return Ok(Answer::without_rows(json!({
                        "cache_key": fetched.key,
                        "status": "failed",
                        "error": "",
                        "query": query_text,
                        "annotation_data": {},
                        "applied_template_filters": [],
                    })));
                }
                Err(e) => return Err(e.into()),
            }
        }
        let labels = label_map(&mut frame, &plan);
        // Superset's `_get_full` types the final frame's columns against the dataset, every
        // result type alike (samples and raw records too, not only post-processed frames).
        frame.apply_dataset_types(self.ds);
        let shaped = Shaped {
            plan: &plan,
            fetched: &fetched,
            labels,
            sql_rowcount,
            query_text: &query_text,
        };
        let payload = self.payload(kind, &frame, shaped);
        let headers = frame::csv_headers(&frame.colnames, &self.verbose_names());
        Ok(Answer {
            payload,
            frame: Some(frame),
            headers,
        })
    }

    /// A query's SQL.
    fn plan(&self, query: &QueryObject, kind: ResultType) -> Result<Plan, Error> {
        Ok(sql::build(self.ds, query, kind, &self.limits, &self.tpl)?)
    }

    /// Runs a planned query through the results cache and single flight, refused when it
    /// calls a function the database may not call.
    async fn fetch(&self, plan: &Plan) -> Result<Fetched, Error> {
        let max_rows = usize::try_from(plan.row_limit.max(1)).unwrap_or(usize::MAX);
        let key = runner::cache_key_with(self.spec, &plan.sql, &plan.extra_cache_keys, max_rows);
        // The key names the database (id, revision) and the SQL: a statement that passed the
        // checks once passes again, so a chart's SQL is not parsed on every request. A
        // rendered dataset SQL reading tables beyond its saved form passed for this caller
        // only, so it is checked again for the next.
        if !self.state.runner.passed_checks(&key) {
            self.check_functions(&plan.sql)?;
            let for_everyone = match &plan.rendered_dataset_sql {
                None => true,
                Some(rendered) => {
                    super::templating::check_rendered_tables(
                        self.state, self.user, &self.tpl, self.ds, rendered,
                    )
                    .await?
                }
            };
            if for_everyone {
                self.state.runner.note_passed_checks(&key).await;
            }
        }
        let outcome = self
            .state
            .runner
            .run(
                self.spec,
                &key,
                &plan.sql,
                max_rows,
                self.policy,
                self.force,
            )
            .await
            .map_err(QueryError::from)?;
        Ok(Fetched { key, outcome })
    }

    /// Superset's `time_offsets`: each offset's query runs shifted in time and its metrics are
    /// joined to the frame.
    async fn join_offsets(
        &self,
        query: &QueryObject,
        kind: ResultType,
        plan: &Plan,
        frame: &mut Frame,
        query_text: &mut String,
    ) -> Result<(), Error> {
        let metrics: Vec<String> = plan.metric_sources.iter().map(|(l, _)| l.clone()).collect();
        let keys = offsets::join_keys(frame, &metrics);
        for offset in &query.time_offsets {
            let oq = offsets::offset_query(query, offset);
            let oplan = self.plan(&oq, kind)?;
            let out = self.fetch(&oplan).await?;
            let oframe = Frame::new(oplan.relabel((*out.outcome.rows).clone()), &oplan.temporal);
            offsets::join(frame, &oframe, offset, &keys, &metrics)?;
            query_text.push_str(&format!("{};\n\n", oplan.sql));
        }
        Ok(())
    }

    /// The query's post-processing steps through the plugin pipeline.
    async fn post_process(
        &self,
        query: &QueryObject,
        frame: &Frame,
        key: &str,
    ) -> Result<Frame, PluginError> {
        pipeline::run(&self.state.plugins, frame, &query.post_processing, key).await
    }

    /// The query's entry in `result`.
    fn payload(&self, kind: ResultType, frame: &Frame, shaped: Shaped<'_>) -> Json_ {
        let Shaped {
            plan,
            fetched,
            labels,
            sql_rowcount,
            query_text,
        } = shaped;
        let rowcount = frame.rows.len();
        let colnames = frame.colnames.clone();
        let coltypes = frame.coltype_codes();
        let data = frame.records();
        if kind == ResultType::Results {
            return json!({
                "data": data,
                "colnames": colnames,
                "coltypes": coltypes,
                "rowcount": rowcount,
                "sql_rowcount": sql_rowcount,
            });
        }
        let outcome = &fetched.outcome;
        json!({
            "cache_key": fetched.key,
            "cached_dttm": outcome.cached_at.map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string()),
            "cache_timeout": self.cache_timeout,
            "applied_template_filters": plan.applied_template_filters,
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
            "label_map": labels,
            "colnames": colnames,
            "indexnames": frame.index.as_ref().map_or_else(|| (0..rowcount).map(Json_::from).collect(), frame::Index::labels),
            "coltypes": coltypes,
            "data": data,
            "result_format": self.result_format.as_str(),
            "applied_filters": plan.applied_filters.iter().map(|c| json!({"column": c})).collect::<Vec<_>>(),
            "rejected_filters": plan.rejected_filters.iter().map(|c| json!({"reason": "not_in_datasource", "column": c})).collect::<Vec<_>>(),
        })
    }

    /// The CSV headers' renaming: Superset's `verbose_map`.
    fn verbose_names(&self) -> HashMap<String, String> {
        verbose_map(self.ds)
    }

    /// Superset's `ensure_totals_available`: when a query's post-processing has a
    /// `contribution` step and the context also holds a totals query (metrics, no columns, no
    /// post-processing), that query runs without a row limit and the sums of its numeric
    /// columns become the contribution's `contribution_totals`, so percentages are of all
    /// records, not of the rows the chart's limit kept.
    async fn ensure_totals(&self, ctx: &mut QueryContext) -> Result<(), Error> {
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
        let answer = self.answer(&tq, ResultType::Full).await?;
        let Some(frame) = answer.frame else {
            return Ok(());
        };
        let totals = column_sums(&frame);
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
    fn check_functions(&self, sql: &str) -> Result<(), QueryError> {
        let denied = super::denied_functions(self.state, &self.ds.database_name, self.ds.engine);
        if denied.is_empty() {
            return Ok(());
        }
        let dialect = crate::query::sql::sql_dialect(self.ds.engine);
        let bad = sqlcheck::disallowed(sqlcheck::functions_called(dialect, sql)?, &denied);
        if bad.is_empty() {
            Ok(())
        } else {
            Err(QueryError::DisallowedFunctions(bad))
        }
    }
}

/// Superset's `verbose_map` (`SqlaTable.data`): `__timestamp` is "Time", then each saved
/// metric's and then each column's verbose name (or its own name), so a column wins over a
/// metric of the same name and either over `__timestamp`.
fn verbose_map(ds: &Datasource) -> HashMap<String, String> {
    let mut verbose = HashMap::from([(sql::DTTM_ALIAS.to_owned(), "Time".to_owned())]);
    let metrics = ds.metrics.iter().map(|m| (&m.name, &m.verbose_name));
    let columns = ds.columns.iter().map(|c| (&c.name, &c.verbose_name));
    for (name, verbose_name) in metrics.chain(columns) {
        verbose.insert(
            name.clone(),
            verbose_name.clone().unwrap_or_else(|| name.clone()),
        );
    }
    verbose
}

/// label_map: the frame's own labels, then the query's columns and metrics, then the verbose
/// names of saved metrics.
fn label_map(frame: &mut Frame, plan: &Plan) -> serde_json::Map<String, Json_> {
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
    label_map
}

/// The sum of each numeric column (integers stay integers), for `contribution_totals`.
fn column_sums(frame: &Frame) -> serde_json::Map<String, Json_> {
    let mut totals = serde_json::Map::new();
    for (i, name) in frame.colnames.iter().enumerate() {
        if frame.coltypes.get(i) != Some(&crate::engines::GenericType::Numeric) {
            continue;
        }
        // `ensure_totals_available` sums only the columns pandas holds as numbers (dtype kind
        // `biufc`). A column of NULLs only (a SUM over no rows) and one of Decimals (a SUM of a
        // `numeric` column) are typed numeric here but are `object` columns there: no total.
        if frame
            .rows
            .iter()
            .all(|r| matches!(r.get(i), Some(Cell::Null) | None))
            || frame
                .rows
                .iter()
                .any(|r| matches!(r.get(i), Some(Cell::Decimal(_))))
        {
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
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CSV headers go through Superset's `verbose_map`: `__timestamp` is "Time", verbose names
    /// replace names, a column's over a metric's of the same name.
    #[test]
    fn csv_headers_use_the_verbose_map() {
        let mut ds = Datasource::for_tests(
            &[
                ("ds", "DATE", true),
                ("g", "TEXT", false),
                ("n", "INTEGER", false),
            ],
            &[("count", "COUNT(*)"), ("n", "SUM(n)"), ("plain", "SUM(x)")],
        );
        ds.columns[0].verbose_name = Some("Day".into());
        ds.columns[2].verbose_name = Some("Number".into());
        ds.metrics[0].verbose_name = Some("COUNT(*)".into());
        ds.metrics[1].verbose_name = Some("Total".into());
        let colnames: Vec<String> = ["__timestamp", "ds", "g", "n", "count", "plain", "SUM(x)"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            frame::csv_headers(&colnames, &verbose_map(&ds)),
            ["Time", "Day", "g", "Number", "COUNT(*)", "plain", "SUM(x)"]
        );
    }

    /// A totals column of NULLs only, or of Decimals, is an object column in pandas, not
    /// summed, so it gives no total (and no totals at all fall back to the page's sums).
    #[test]
    fn all_null_and_decimal_totals_are_not_summed() {
        let frame = Frame {
            colnames: vec!["SUM(x)".into(), "SUM(y)".into(), "SUM(z)".into()],
            coltypes: vec![crate::engines::GenericType::Numeric; 3],
            rows: vec![vec![
                Cell::Null,
                Cell::Int(150),
                Cell::Decimal("12.50".into()),
            ]],
            index: None,
        };
        assert_eq!(Json_::Object(column_sums(&frame)), json!({"SUM(y)": 150}));
    }
}
