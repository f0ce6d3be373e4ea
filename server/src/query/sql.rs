//! SQL generation for one query object (Superset's `get_sqla_query`), through the engine's
//! [`Dialect`] only: identifiers are always quoted, literals always escaped, a virtual dataset
//! is a `(<sql>) AS virtual_table` subquery, and every user fragment (SQL metrics, adhoc and
//! calculated columns, `extras.where/having`) is checked by [`super::sqlcheck`] to be exactly
//! one expression before it is pasted in.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use chrono::NaiveDateTime;
use serde_json::{Map, Value as Json, json};

use super::context::{ColumnRef, MetricRef, OrderTarget, QueryObject, ResultType};
use super::sqlcheck::{self, FragmentKind, SqlDialect};
use super::template::{self, Budget, Catalog, Facts, Renderer, TemplateError};
use super::timerange::{self, Relative};
use super::{Datasource, QueryError};
use crate::engines::{Dialect, GenericType};
use crate::uri::Engine;

/// The label of the legacy time column.
pub const DTTM_ALIAS: &str = "__timestamp";

/// Row limits (Superset's `ROW_LIMIT`, `SAMPLES_ROW_LIMIT`, `SQL_MAX_ROW`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Default row limit of every result type but samples.
    pub row_limit: u64,
    /// Default row limit of samples (not a cap: an explicit `row_limit` goes up to
    /// `sql_max_row`).
    pub samples_row_limit: u64,
    /// Cap of every query.
    pub sql_max_row: u64,
}

/// A generated statement and what the response reports about it.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The SELECT.
    pub sql: String,
    /// Lower time bound.
    pub from_dttm: Option<NaiveDateTime>,
    /// Upper time bound (exclusive).
    pub to_dttm: Option<NaiveDateTime>,
    /// Labels of the filters applied.
    pub applied_filters: Vec<String>,
    /// Columns of filters dropped because the dataset lacks them.
    pub rejected_filters: Vec<String>,
    /// `(label, source)` of every query column (`source` = name or SQL expression).
    pub column_sources: Vec<(String, String)>,
    /// Output labels to normalise to timestamps (temporal dataset columns, the time axis).
    pub temporal: BTreeSet<String>,
    /// `(label, source)` of every metric (`source` = SQL of an SQL metric, else the label).
    pub metric_sources: Vec<(String, String)>,
    /// `(verbose name, metric name)` of the saved metrics used.
    pub metric_verbose: Vec<(String, String)>,
    /// Rows the statement may return.
    pub row_limit: u64,
    /// Columns whose filters a template read (`applied_template_filters`).
    pub applied_template_filters: Vec<String>,
    /// Values templates added to the cache key (`cache_key_wrapper` and the user and request
    /// macros).
    pub extra_cache_keys: Vec<Json>,
    /// The virtual dataset's SQL as rendered, when it is a template (its tables are checked
    /// against the caller's access by the services).
    pub rendered_dataset_sql: Option<String>,
    /// `(alias in the SQL, label)` of every output column whose alias the dialect changed
    /// ([`crate::engines::Dialect::label`]); [`Plan::relabel`] gives the rows their labels back.
    pub label_map: Vec<(String, String)>,
}

impl Plan {
    /// `rows` with the dialect's aliases renamed back to the query's labels.
    pub fn relabel(&self, mut rows: crate::engines::ResultSet) -> crate::engines::ResultSet {
        if !self.label_map.is_empty() {
            for c in &mut rows.columns {
                if let Some((_, label)) = self.label_map.iter().find(|(a, _)| *a == c.name) {
                    c.name.clone_from(label);
                }
            }
        }
        rows
    }
}

/// How the templates of a query render (Superset's template processor): the switch, what the
/// request tells them, their budget, and the datasets `dataset()` and `metric()` may read (the
/// caller's, loaded and access-checked beforehand: macros cannot wait for the store).
#[derive(Clone, Debug)]
pub struct Templating {
    /// `query.template_processing`.
    pub enabled: bool,
    /// The request.
    pub facts: Arc<Facts>,
    /// Each render's budget.
    pub budget: Budget,
    /// Datasets by id.
    pub datasets: Arc<HashMap<i64, Arc<Datasource>>>,
    /// `row_limit` etc. of nested `dataset()` queries.
    pub limits: Limits,
    depth: u8,
}

impl Templating {
    /// Templating of a request.
    pub fn new(
        enabled: bool,
        facts: Facts,
        budget: Budget,
        datasets: HashMap<i64, Arc<Datasource>>,
        limits: Limits,
    ) -> Templating {
        Templating {
            enabled,
            facts: Arc::new(facts),
            budget,
            datasets: Arc::new(datasets),
            limits,
            depth: 0,
        }
    }

    /// The renderer of `ds`'s templates in query `q` (no query: the dataset's SQL alone, as
    /// its author saved it).
    pub fn renderer(&self, ds: &Datasource, q: Option<&QueryObject>) -> Renderer {
        let mut r = Renderer::new(
            self.enabled,
            self.facts.clone(),
            Dialect::of(ds.engine),
            self.budget,
        );
        if !self.enabled {
            // Nothing renders: the renderer only refuses template syntax.
            return r;
        }
        let table_columns: Vec<Json> = ds.columns.iter().map(|c| json!(c.name)).collect();
        let mut vars = Map::new();
        let null = Json::Null;
        vars.insert("table_columns".into(), Json::Array(table_columns));
        for key in [
            "columns",
            "from_dttm",
            "groupby",
            "metrics",
            "row_limit",
            "row_offset",
            "time_column",
            "time_grain",
            "to_dttm",
            "filter",
        ] {
            vars.insert(key.into(), null.clone());
        }
        if let Some(q) = q {
            vars.insert(
                "columns".into(),
                json!(q.columns.iter().map(column_json).collect::<Vec<_>>()),
            );
            vars.insert(
                "metrics".into(),
                match &q.metrics {
                    Some(ms) => json!(ms.iter().map(metric_json).collect::<Vec<_>>()),
                    None => Json::Null,
                },
            );
            vars.insert("row_limit".into(), json!(q.row_limit));
            vars.insert("row_offset".into(), json!(q.row_offset));
            vars.insert("time_column".into(), json!(q.granularity));
            vars.insert("time_grain".into(), json!(q.extras.time_grain_sqla));
            vars.insert(
                "filter".into(),
                json!(
                    q.filters
                        .iter()
                        .map(|f| json!({"col": column_json(&f.col), "op": f.op, "val": f.val}))
                        .collect::<Vec<_>>()
                ),
            );
        }
        // The author's variables: the column names and (Superset's
        // `template_kwargs.update(self.template_params_dict)`) the template parameters.
        let mut params = Map::new();
        params.insert(
            "table_columns".into(),
            vars.remove("table_columns").unwrap_or_default(),
        );
        for (k, v) in &ds.template_params {
            params.insert(k.clone(), v.clone());
        }
        r.vars = Arc::new(vars);
        r.params = Arc::new(params);
        r.column_types = Arc::new(
            ds.columns
                .iter()
                .map(|c| (c.name.clone(), c.type_name.clone()))
                .collect(),
        );
        if let Some(q) = q {
            r.rls_clauses = Arc::new(
                q.row_filters
                    .iter()
                    .flat_map(|f| f.any_of.iter().cloned())
                    .collect(),
            );
        }
        r.checked = true;
        r.catalog = Some(Arc::new(self.clone()) as Arc<dyn Catalog>);
        r.dataset_id = Some(ds.id);
        r.depth = self.depth;
        r
    }

    /// The renderer of a SQL Lab script: `params` as its variables, no value check (the user
    /// writes template and values alike).
    pub fn script_renderer(&self, dialect: Dialect, params: &Map<String, Json>) -> Renderer {
        let mut r = Renderer::new(self.enabled, self.facts.clone(), dialect, self.budget);
        r.params = Arc::new(params.clone());
        r.catalog = Some(Arc::new(self.clone()) as Arc<dyn Catalog>);
        r.depth = self.depth;
        r
    }

    /// A virtual dataset's SQL rendered as its author saved it: no user, no request values,
    /// its own template parameters (what its creator's table access is checked on, and what
    /// its rendered SQL may read without the caller's own access).
    pub fn neutral_dataset_sql(&self, ds: &Datasource) -> Result<Option<String>, QueryError> {
        let neutral = Templating {
            facts: Arc::new(Facts::neutral(self.facts.now)),
            ..self.clone()
        };
        match ds.sql.as_deref().map(trim_sql).filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(sql) => neutral
                .renderer(ds, None)
                .render(sql)
                .map(Some)
                .map_err(QueryError::DatasetTemplate),
        }
    }
}

impl Catalog for Templating {
    fn dataset_sql(
        &self,
        id: i64,
        include_metrics: bool,
        columns: Option<Vec<String>>,
        depth: u8,
    ) -> Result<Option<String>, TemplateError> {
        let Some(ds) = self.datasets.get(&id) else {
            return Ok(None);
        };
        let q = QueryObject {
            columns: columns
                .unwrap_or_else(|| ds.columns.iter().map(|c| c.name.clone()).collect())
                .into_iter()
                .map(ColumnRef::Name)
                .collect(),
            metrics: include_metrics.then(|| {
                ds.metrics
                    .iter()
                    .map(|m| MetricRef::Saved(m.name.clone()))
                    .collect()
            }),
            is_timeseries: Some(false),
            ..QueryObject::bare()
        };
        let nested = Templating {
            depth,
            ..self.clone()
        };
        match build_with(ds, &q, ResultType::Full, &self.limits, &nested, false) {
            Ok(plan) => Ok(Some(plan.sql)),
            Err(QueryError::DatasetTemplate(e) | QueryError::Template(e)) => Err(e),
            Err(e) => Err(TemplateError::Macro(format!("dataset({id}): {e}"))),
        }
    }

    fn metrics(&self, id: i64) -> Option<(String, Vec<(String, String)>)> {
        let ds = self.datasets.get(&id)?;
        Some((
            ds.table_name.clone(),
            ds.metrics
                .iter()
                .map(|m| (m.name.clone(), m.expression.clone()))
                .collect(),
        ))
    }
}

/// The series-limit subquery's match marker column, where the dialect needs one
/// ([`crate::engines::Dialect::join_match_marker`]).
const SERIES_MATCH: &str = "series_match__";

/// A query column as the template variable `columns` shows it (a name, or the adhoc object).
fn column_json(c: &ColumnRef) -> Json {
    match c {
        ColumnRef::Name(n) => json!(n),
        ColumnRef::Adhoc {
            label,
            sql,
            base_axis,
            time_grain,
        } => {
            let mut o = json!({"label": label, "sqlExpression": sql, "expressionType": "SQL"});
            if *base_axis {
                o["columnType"] = json!("BASE_AXIS");
            }
            if let Some(g) = time_grain {
                o["timeGrain"] = json!(g);
            }
            o
        }
    }
}

/// A query metric as the template variable `metrics` shows it.
fn metric_json(m: &MetricRef) -> Json {
    match m {
        MetricRef::Saved(n) => json!(n),
        MetricRef::Simple {
            label,
            aggregate,
            column,
        } => {
            json!({"expressionType": "SIMPLE", "label": label, "aggregate": aggregate, "column": {"column_name": column}})
        }
        MetricRef::Sql { label, sql } => {
            json!({"expressionType": "SQL", "label": label, "sqlExpression": sql})
        }
    }
}

/// Superset strips `\t\r\n; ` around a virtual dataset's SQL before and after rendering.
fn trim_sql(sql: &str) -> &str {
    sql.trim_matches(|c: char| matches!(c, '\t' | '\r' | '\n' | ';' | ' '))
}

/// The grammar [`sqlcheck`](super::sqlcheck) parses an engine's SQL with: the one mapping
/// from a connection's engine to it (chart SQL, dataset SQL, SQL Lab).
pub fn sql_dialect(engine: Engine) -> SqlDialect {
    match engine {
        Engine::Postgres => SqlDialect::Postgres,
        Engine::Sqlite => SqlDialect::Sqlite,
        Engine::ClickHouse => SqlDialect::ClickHouse,
        Engine::MySql => SqlDialect::MySql,
    }
}

struct Builder<'a> {
    ds: &'a Datasource,
    d: Dialect,
    now: NaiveDateTime,
    /// Renders the query's templates (and records what they consumed).
    r: Renderer,
}

/// A resolved dimension.
struct Dim {
    expr: String,
    label: String,
}

impl Builder<'_> {
    fn fragment(&self, sql: &str, kind: FragmentKind) -> Result<String, QueryError> {
        if sql.trim().is_empty() {
            return Err(QueryError::Invalid("Empty SQL expression".into()));
        }
        // Templates render first; what they produce passes the same check as typed SQL.
        let rendered = self.r.render(sql).map_err(QueryError::Template)?;
        let sql = rendered.as_str();
        if sql.trim().is_empty() {
            return Err(QueryError::Invalid("Empty SQL expression".into()));
        }
        sqlcheck::check_fragment(sql_dialect(self.d.engine()), sql, kind)?;
        // The closing parenthesis goes on its own line so a trailing `--` comment cannot
        // swallow it.
        Ok(sqlcheck::wrap_fragment(sql.trim()))
    }

    /// A dataset column's SQL: its quoted name, or its checked expression.
    fn column_expr(&self, name: &str) -> Result<Option<String>, QueryError> {
        let Some(c) = self.ds.column(name) else {
            return Ok(None);
        };
        match c
            .expression
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            Some(e) => self.fragment(e, FragmentKind::Expression).map(Some),
            None => Ok(Some(self.d.quote(&c.name))),
        }
    }

    /// The FROM: the quoted table, or the virtual dataset's SQL (rendered when it is a
    /// template: one read-only statement) as a subquery. Returns the rendered SQL of a
    /// template too.
    fn from(&self) -> Result<(String, Option<String>), QueryError> {
        match self
            .ds
            .sql
            .as_deref()
            .map(trim_sql)
            .filter(|s| !s.is_empty())
        {
            Some(sql) => {
                let templated = template::has_template(sql);
                let rendered = self.r.render(sql).map_err(QueryError::DatasetTemplate)?;
                let rendered = trim_sql(&rendered).to_owned();
                if templated {
                    let d = sql_dialect(self.d.engine());
                    if rendered.is_empty() {
                        return Err(QueryError::Invalid(
                            "Virtual dataset query cannot be empty".into(),
                        ));
                    }
                    if sqlcheck::split_statements(d, &rendered)?.len() > 1 {
                        return Err(QueryError::Invalid(
                            "Virtual dataset query cannot consist of multiple statements".into(),
                        ));
                    }
                    if sqlcheck::is_mutating(d, &rendered)? {
                        return Err(QueryError::Invalid(
                            "Virtual dataset query must be read-only".into(),
                        ));
                    }
                }
                if templated {
                    // A newline before the parenthesis, as Superset's `get_from_clause` adds:
                    // a trailing `--` comment cannot swallow it.
                    Ok((format!("({rendered}\n) AS virtual_table"), Some(rendered)))
                } else {
                    Ok((format!("({rendered}) AS virtual_table"), None))
                }
            }
            None => Ok((
                match self.ds.schema.as_deref().filter(|s| !s.is_empty()) {
                    Some(schema) => format!(
                        "{}.{}",
                        self.d.quote(schema),
                        self.d.quote(&self.ds.table_name)
                    ),
                    None => self.d.quote(&self.ds.table_name),
                },
                None,
            )),
        }
    }

    fn truncate(&self, grain: &str, expr: &str) -> Result<String, QueryError> {
        self.d
            .truncate(grain, expr)
            .ok_or_else(|| QueryError::UnsupportedGrain {
                grain: grain.to_owned(),
                backend: self.d.backend(),
            })
    }

    fn metric_expr(&self, m: &MetricRef) -> Result<String, QueryError> {
        match m {
            MetricRef::Saved(name) => match self.ds.metric(name) {
                Some(saved) => self.fragment(&saved.expression, FragmentKind::Expression),
                None => Err(QueryError::Invalid(format!(
                    "Metric '{name}' does not exist"
                ))),
            },
            MetricRef::Simple {
                aggregate, column, ..
            } => {
                let col = self.column_expr(column)?.ok_or_else(|| {
                    QueryError::Invalid(format!("Columns missing in dataset: ['{column}']"))
                })?;
                Ok(match aggregate.as_str() {
                    "COUNT_DISTINCT" => format!("COUNT(DISTINCT {col})"),
                    agg => format!("{agg}({col})"),
                })
            }
            MetricRef::Sql { sql, .. } => self.fragment(sql, FragmentKind::Expression),
        }
    }

    fn relative(&self, s: Option<&str>) -> Relative {
        match s {
            Some("now") => Relative::Now,
            _ => Relative::Today,
        }
    }

    fn time_bounds(
        &self,
        range: &str,
        q: &QueryObject,
    ) -> Result<(Option<NaiveDateTime>, Option<NaiveDateTime>), QueryError> {
        let r = timerange::get_since_until(
            Some(range),
            q.time_shift.as_deref(),
            self.relative(q.extras.relative_start.as_deref()),
            self.relative(q.extras.relative_end.as_deref()),
            self.now,
        )
        .map_err(|e| QueryError::Schema(format!("{{'time_range': ['{e}']}}")))?;
        Ok((r.since, r.until))
    }

    fn time_filter(
        &self,
        expr: &str,
        type_name: &str,
        since: Option<NaiveDateTime>,
        until: Option<NaiveDateTime>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(s) = since {
            out.push(format!("{expr} >= {}", self.d.datetime(s, type_name)));
        }
        if let Some(u) = until {
            out.push(format!("{expr} < {}", self.d.datetime(u, type_name)));
        }
        out
    }

    /// A filter value as a SQL literal, coerced to the column's generic type.
    fn literal(&self, v: &Json, generic: GenericType) -> Result<String, QueryError> {
        Ok(match v {
            Json::Null => "NULL".into(),
            Json::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
            Json::Number(n) => {
                let f = n
                    .as_f64()
                    .filter(|f| f.is_finite())
                    .ok_or_else(|| QueryError::Invalid(format!("Invalid filter value: {n}")))?;
                if generic == GenericType::Temporal {
                    self.d.from_epoch_ms(f)
                } else {
                    n.to_string()
                }
            }
            Json::String(s) if s == "<NULL>" => "NULL".into(),
            Json::String(s) if s == "<empty string>" => "''".into(),
            Json::String(s) => {
                if generic == GenericType::Numeric
                    && let Ok(f) = s.trim().parse::<f64>()
                    && f.is_finite()
                {
                    s.trim().to_owned()
                } else {
                    self.d.string(s)
                }
            }
            other => {
                return Err(QueryError::Invalid(format!(
                    "Invalid filter value: {other}"
                )));
            }
        })
    }
}

/// The effective row limit of a query object: Superset's `_process_row_limit`,
/// `apply_max_row_limit(row_limit or default)`. `SAMPLES_ROW_LIMIT` is the default only when
/// the query's result type is samples (drill-to-detail defaults to `ROW_LIMIT`), and
/// `SQL_MAX_ROW` is the only cap, samples included.
pub fn row_limit(q: &QueryObject, kind: ResultType, limits: &Limits) -> u64 {
    let default = if kind == ResultType::Samples {
        limits.samples_row_limit
    } else {
        limits.row_limit
    };
    q.row_limit.unwrap_or(default).min(limits.sql_max_row)
}

/// Builds the statement of `q` against `ds` for result type `kind`, its templates rendered by
/// `tpl`.
pub fn build(
    ds: &Datasource,
    q: &QueryObject,
    kind: ResultType,
    limits: &Limits,
    tpl: &Templating,
) -> Result<Plan, QueryError> {
    build_with(ds, q, kind, limits, tpl, true)
}

/// [`build`], without the LIMIT when `limited` is false (the `dataset()` macro's subquery).
fn build_with(
    ds: &Datasource,
    q: &QueryObject,
    kind: ResultType,
    limits: &Limits,
    tpl: &Templating,
    limited: bool,
) -> Result<Plan, QueryError> {
    let now = tpl.facts.now;
    let mut r = tpl.renderer(ds, Some(q));
    if r.enabled {
        let (from, to) = template_bounds(q, now);
        let vars = Arc::make_mut(&mut r.vars);
        vars.insert("from_dttm".into(), json!(from));
        vars.insert("to_dttm".into(), json!(to));
    }
    let b = Builder {
        ds,
        d: Dialect::of(ds.engine),
        now,
        r,
    };
    // The FROM renders first, as Superset's `get_sqla_query` processes it early: the filters
    // its template takes over (`remove_filter=True`) are then left out below.
    let (from, rendered_dataset_sql) = b.from()?;
    let mut q = q.clone();
    if matches!(kind, ResultType::Samples | ResultType::DrillDetail) {
        q.columns = ds
            .columns
            .iter()
            .map(|c| ColumnRef::Name(c.name.clone()))
            .collect();
        q.metrics = None;
        q.post_processing.clear();
        q.series_limit = 0;
        q.is_timeseries = Some(false);
        q.orderby = match (kind, ds.columns.first()) {
            (ResultType::DrillDetail, Some(first)) => {
                vec![(OrderTarget::Name(first.name.clone()), true)]
            }
            _ => Vec::new(),
        };
    }
    // Superset's `_get_samples` copies the query object with `from_dttm`/`to_dttm` set to None
    // and keeps everything else: `time_range` still overrides the TEMPORAL_RANGE filters (the
    // factory already copied it into them), `row_offset` still pages. Only the legacy
    // granularity predicate, built from those bounds, disappears, and the answer's bounds are
    // null.
    let unbounded = kind == ResultType::Samples;
    let mut plan = Plan {
        row_limit: row_limit(&q, kind, limits),
        rendered_dataset_sql,
        ..Plan::default()
    };
    let removed = |col: &str| b.r.removed(col);

    let is_timeseries = q.is_timeseries.unwrap_or_else(|| {
        q.columns
            .iter()
            .any(|c| matches!(c, ColumnRef::Name(n) if n == DTTM_ALIAS))
    });
    if is_timeseries && q.granularity.is_none() {
        return Err(QueryError::Invalid(
            "Datetime column not provided as part table configuration and is required by this \
             type of chart"
                .into(),
        ));
    }

    // Dimensions.
    let mut dims: Vec<Dim> = Vec::new();
    let mut missing = Vec::new();
    let mut where_parts: Vec<String> = Vec::new();
    let mut granularity_col: Option<(String, String)> = None;
    if let Some(g) = &q.granularity {
        let expr = b
            .column_expr(g)?
            .ok_or_else(|| QueryError::Invalid(format!("Columns missing in dataset: ['{g}']")))?;
        let type_name = ds
            .column(g)
            .map(|c| c.type_name.clone())
            .unwrap_or_default();
        if is_timeseries {
            let axis = match &q.extras.time_grain_sqla {
                Some(grain) => b.truncate(grain, &expr)?,
                None => expr.clone(),
            };
            dims.push(Dim {
                expr: axis,
                label: DTTM_ALIAS.into(),
            });
            plan.temporal.insert(DTTM_ALIAS.into());
        }
        granularity_col = Some((expr, type_name));
    }
    for c in &q.columns {
        match c {
            ColumnRef::Name(n) if n == DTTM_ALIAS && is_timeseries => {}
            ColumnRef::Name(n) => match b.column_expr(n)? {
                Some(expr) => {
                    if ds.column(n).is_some_and(|c| c.is_dttm) {
                        plan.temporal.insert(n.clone());
                    }
                    plan.column_sources.push((n.clone(), n.clone()));
                    dims.push(Dim {
                        expr,
                        label: n.clone(),
                    });
                }
                None => missing.push(n.clone()),
            },
            ColumnRef::Adhoc {
                label,
                sql,
                base_axis,
                time_grain,
            } => {
                let known = ds.column(sql.trim());
                let mut expr = match known {
                    Some(k) => b.column_expr(&k.name)?.unwrap_or_default(),
                    None => b.fragment(sql, FragmentKind::Expression)?,
                };
                if let Some(grain) = time_grain
                    && *base_axis
                    && known.is_none_or(|k| k.is_dttm)
                {
                    expr = b.truncate(grain, &expr)?;
                    plan.temporal.insert(label.clone());
                }
                if known.is_some_and(|k| k.is_dttm) {
                    plan.temporal.insert(label.clone());
                }
                plan.column_sources.push((label.clone(), sql.clone()));
                dims.push(Dim {
                    expr,
                    label: label.clone(),
                });
            }
        }
    }
    if !missing.is_empty() {
        let quoted: Vec<String> = missing.iter().map(|m| format!("'{m}'")).collect();
        return Err(QueryError::Invalid(format!(
            "Columns missing in dataset: [{}]",
            quoted.join(", ")
        )));
    }

    // Metrics.
    let mut metrics: Vec<(String, String)> = Vec::new();
    for m in q.metrics.iter().flatten() {
        let expr = b.metric_expr(m)?;
        if let MetricRef::Saved(name) = m
            && let Some(v) = ds
                .metric(name)
                .and_then(|s| s.verbose_name.clone())
                .filter(|v| !v.is_empty())
        {
            plan.metric_verbose.push((v, name.clone()));
        }
        let source = match m {
            MetricRef::Sql { sql, .. } => sql.clone(),
            other => other.label().to_owned(),
        };
        plan.metric_sources.push((m.label().to_owned(), source));
        metrics.push((expr, m.label().to_owned()));
    }
    if dims.is_empty() && metrics.is_empty() {
        return Err(QueryError::Invalid("Empty query?".into()));
    }
    let mut seen = BTreeSet::new();
    let mut dups = Vec::new();
    for label in dims
        .iter()
        .map(|d| &d.label)
        .chain(metrics.iter().map(|m| &m.1))
    {
        if !seen.insert(label.clone()) && !dups.contains(label) {
            dups.push(label.clone());
        }
    }
    if !dups.is_empty() {
        let quoted: Vec<String> = dups.iter().map(|d| format!("\"{d}\"")).collect();
        return Err(QueryError::Plain(format!(
            "Duplicate column/metric labels: {}. Please make sure all columns and metrics have \
             a unique label.",
            quoted.join(", ")
        )));
    }

    // Time range from `time_range` (granularity or overriding TEMPORAL_RANGE filters).
    let overriding = q.time_range.clone();
    let granularity_removed = q
        .granularity
        .as_deref()
        .is_some_and(|g| removed(g) || removed(DTTM_ALIAS));
    if let (Some(range), Some((expr, type_name)), false, false) = (
        &overriding,
        &granularity_col,
        unbounded,
        granularity_removed,
    ) {
        let (since, until) = b.time_bounds(range, &q)?;
        plan.from_dttm = since;
        plan.to_dttm = until;
        where_parts.extend(b.time_filter(expr, type_name, since, until));
    }

    // Filters.
    let axis_label = q.columns.iter().find_map(|c| match c {
        ColumnRef::Adhoc {
            label,
            base_axis: true,
            ..
        } => Some(label.clone()),
        _ => None,
    });
    let mut bounds_from_filter: Option<(bool, Option<NaiveDateTime>, Option<NaiveDateTime>)> = None;
    for f in &q.filters {
        // A filter a template took over (`remove_filter=True`) applies inside it only.
        if let ColumnRef::Name(n) = &f.col
            && removed(n)
        {
            continue;
        }
        let (expr, generic, type_name, label) = match &f.col {
            ColumnRef::Name(n) => match ds.column(n) {
                Some(c) => (
                    b.column_expr(n)?.unwrap_or_default(),
                    c.generic(),
                    c.type_name.clone(),
                    n.clone(),
                ),
                None => {
                    plan.rejected_filters.push(n.clone());
                    continue;
                }
            },
            ColumnRef::Adhoc { label, sql, .. } => match ds.column(sql.trim()) {
                Some(c) => (
                    b.column_expr(&c.name)?.unwrap_or_default(),
                    c.generic(),
                    c.type_name.clone(),
                    label.clone(),
                ),
                None => (
                    b.fragment(sql, FragmentKind::Expression)?,
                    GenericType::String,
                    String::new(),
                    label.clone(),
                ),
            },
        };
        let val = &f.val;
        let cond = match f.op.as_str() {
            "TEMPORAL_RANGE" => {
                let range = match (&overriding, val) {
                    (Some(r), _) => r.clone(),
                    (None, Json::String(s)) => s.clone(),
                    (None, Json::Null) => "No filter".into(),
                    (None, other) => {
                        return Err(QueryError::Invalid(format!("Invalid time range: {other}")));
                    }
                };
                let (since, until) = b.time_bounds(&range, &q)?;
                let is_axis = axis_label.as_deref() == Some(label.as_str());
                let better = match &bounds_from_filter {
                    None => true,
                    Some((was_axis, _, _)) => is_axis && !was_axis,
                };
                if better {
                    bounds_from_filter = Some((is_axis, since, until));
                }
                let type_name = if type_name.is_empty() {
                    "TIMESTAMP"
                } else {
                    &type_name
                };
                let parts = b.time_filter(&expr, type_name, since, until);
                plan.applied_filters.push(label.clone());
                if parts.is_empty() {
                    continue;
                }
                parts.join(" AND ")
            }
            "IS NULL" => format!("{expr} IS NULL"),
            "IS NOT NULL" => format!("{expr} IS NOT NULL"),
            "IS TRUE" => format!("{expr} IS TRUE"),
            "IS FALSE" => format!("{expr} IS FALSE"),
            "IN" | "NOT IN" => {
                let values: Vec<&Json> = match val {
                    Json::Array(a) => a.iter().collect(),
                    Json::Null => Vec::new(),
                    v => vec![v],
                };
                if values.is_empty() {
                    return Err(QueryError::Invalid(
                        "Must specify a value for filters with comparison operators".into(),
                    ));
                }
                let has_null = values
                    .iter()
                    .any(|v| v.is_null() || v.as_str() == Some("<NULL>"));
                let lits = values
                    .iter()
                    .filter(|v| !(v.is_null() || v.as_str() == Some("<NULL>")))
                    .map(|v| b.literal(v, generic))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut cond = if lits.is_empty() {
                    "1 = 0".to_owned()
                } else {
                    format!("{expr} IN ({})", lits.join(", "))
                };
                if has_null {
                    cond = format!("{cond} OR {expr} IS NULL");
                }
                if f.op == "NOT IN" {
                    format!("NOT ({cond})")
                } else {
                    format!("({cond})")
                }
            }
            "LIKE" | "NOT LIKE" | "ILIKE" => {
                let pattern = match val {
                    Json::String(s) => b.d.string(s),
                    Json::Null => {
                        return Err(QueryError::Invalid(
                            "Must specify a value for filters with comparison operators".into(),
                        ));
                    }
                    other => b.d.string(&other.to_string()),
                };
                let subject = if generic == GenericType::String {
                    expr.clone()
                } else {
                    b.d.cast_text(&expr)
                };
                match f.op.as_str() {
                    "ILIKE" => b.d.ilike(&subject, &pattern),
                    op => format!("{subject} {op} {pattern}"),
                }
            }
            op => {
                let sql_op = if op == "==" { "=" } else { op };
                if val.is_null() {
                    match op {
                        "==" => format!("{expr} IS NULL"),
                        "!=" => format!("{expr} IS NOT NULL"),
                        _ => {
                            return Err(QueryError::Invalid(
                                "Must specify a value for filters with comparison operators".into(),
                            ));
                        }
                    }
                } else {
                    format!("{expr} {sql_op} {}", b.literal(val, generic)?)
                }
            }
        };
        if f.op != "TEMPORAL_RANGE" {
            plan.applied_filters.push(label);
        }
        where_parts.push(cond);
    }
    if overriding.is_none()
        && !unbounded
        && let Some((_, since, until)) = bounds_from_filter
    {
        plan.from_dttm = since;
        plan.to_dttm = until;
    }
    if !q.extras.where_.trim().is_empty() {
        where_parts.push(b.fragment(&q.extras.where_, FragmentKind::Where)?);
    }
    // Row-level security: each rule's clause passes the checks `extras.where` does and stands
    // parenthesised (its own line closing it, past any `--`), a group's clauses OR-ed.
    for filter in &q.row_filters {
        let any: Vec<String> = filter
            .any_of
            .iter()
            .map(|c| b.fragment(c, FragmentKind::Where))
            .collect::<Result<_, _>>()?;
        if !any.is_empty() {
            where_parts.push(format!("({})", any.join(" OR ")));
        }
    }

    let grouped = q.metrics.is_some();
    let mut having = None;
    if grouped && !q.extras.having.trim().is_empty() {
        having = Some(b.fragment(&q.extras.having, FragmentKind::Having)?);
    }

    // ORDER BY.
    let metric_by_label = |label: &str| metrics.iter().find(|(_, l)| l == label);
    let mut order_parts = Vec::new();
    for (target, asc) in &q.orderby {
        let expr = match target {
            OrderTarget::Name(n) => {
                // A column's name that also labels a selected output computed from it means
                // that output, as SQL resolves ORDER BY names (a time-grained axis labelled
                // with its column's name orders by the bucket). Spelled as the output's alias,
                // because where the dialect mutates aliases (ClickHouse) the bare name would
                // mean the raw column. Other labels are not names to order by (Superset: 400).
                let column = match ds.column(n) {
                    Some(_) => b.column_expr(n)?,
                    None => None,
                };
                let names_other_output = column.is_some()
                    && dims
                        .iter()
                        .any(|d| &d.label == n && column.as_ref() != Some(&d.expr));
                if names_other_output {
                    b.d.quote(&b.d.label(n))
                } else if let Some(expr) = column {
                    expr
                } else if metric_by_label(n).is_some() {
                    b.d.quote(&b.d.label(n))
                } else if ds.metric(n).is_some() {
                    b.metric_expr(&MetricRef::Saved(n.clone()))?
                } else {
                    return Err(QueryError::Invalid(format!(
                        "Unknown column used in orderby: {n}"
                    )));
                }
            }
            OrderTarget::Metric(m) => match metric_by_label(m.label()) {
                Some(_) => b.d.quote(&b.d.label(m.label())),
                None => b.metric_expr(m)?,
            },
        };
        order_parts.push(format!("{expr} {}", if *asc { "ASC" } else { "DESC" }));
    }

    // Series limit: keep the top `series_limit` series by a metric.
    let mut select: Vec<String> = Vec::new();
    let mut group_by: Vec<String> = Vec::new();
    let mut join = String::new();
    let series_names: Vec<String> = match &q.series_columns {
        Some(s) => s.clone(),
        None if is_timeseries && !metrics.is_empty() => q
            .columns
            .iter()
            .map(|c| c.label().to_owned())
            .filter(|l| l != DTTM_ALIAS)
            .collect(),
        None => Vec::new(),
    };
    let series: Vec<&Dim> = dims
        .iter()
        .filter(|d| d.label != DTTM_ALIAS && series_names.contains(&d.label))
        .collect();
    let limit_series = q.series_limit > 0 && grouped && !metrics.is_empty() && !series.is_empty();
    if limit_series {
        let limit_metric = match &q.series_limit_metric {
            Some(m) => b.metric_expr(m)?,
            None => metrics[0].0.clone(),
        };
        let inner_select: Vec<String> = series
            .iter()
            .map(|d| format!("{} AS {}", d.expr, b.d.quote(&format!("{}__", d.label))))
            .chain(std::iter::once(format!("{limit_metric} AS mme_inner__")))
            .chain(
                b.d.join_match_marker()
                    .map(|m| format!("{m} AS {SERIES_MATCH}")),
            )
            .collect();
        let mut inner = format!("SELECT {} \nFROM {from}", inner_select.join(", "));
        if !where_parts.is_empty() {
            inner.push_str(&format!(" \nWHERE {}", where_parts.join(" AND ")));
        }
        inner.push_str(&format!(
            " GROUP BY {} ORDER BY {limit_metric} {} \n LIMIT {}",
            series
                .iter()
                .map(|d| d.expr.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if q.order_desc { "DESC" } else { "ASC" },
            q.series_limit
        ));
        let on: Vec<String> = series
            .iter()
            .map(|d| {
                format!(
                    "{} = {}",
                    d.expr,
                    b.d.joined_column("series_limit", &b.d.quote(&format!("{}__", d.label)))
                )
            })
            .collect();
        let kind = b.d.subquery_join(if q.group_others {
            "LEFT OUTER JOIN"
        } else {
            "JOIN"
        });
        join = format!(" {kind} ({inner}) AS series_limit ON {}", on.join(" AND "));
    }
    for label in dims
        .iter()
        .map(|d| d.label.as_str())
        .chain(metrics.iter().map(|(_, l)| l.as_str()))
    {
        let alias = b.d.label(label);
        if alias != label {
            plan.label_map.push((alias, label.to_owned()));
        }
    }
    for d in &dims {
        let is_series = limit_series && q.group_others && series.iter().any(|s| s.label == d.label);
        let expr = if is_series {
            // A row the series limit did not keep has no match in the outer join.
            let matched = match b.d.join_match_marker() {
                Some(_) => SERIES_MATCH.to_owned(),
                None => b.d.quote(&format!("{}__", d.label)),
            };
            format!(
                "CASE WHEN ({} IS NOT NULL) THEN {} ELSE 'Others' END",
                b.d.joined_column("series_limit", &matched),
                d.expr
            )
        } else {
            d.expr.clone()
        };
        select.push(format!("{expr} AS {}", b.d.quote(&b.d.label(&d.label))));
        group_by.push(expr);
    }
    for (expr, label) in &metrics {
        select.push(format!("{expr} AS {}", b.d.quote(&b.d.label(label))));
    }

    let mut sql = format!("SELECT {} \nFROM {from}{join}", select.join(", "));
    if !where_parts.is_empty() {
        sql.push_str(&format!(" \nWHERE {}", where_parts.join(" AND ")));
    }
    if grouped && !group_by.is_empty() {
        sql.push_str(&format!(" GROUP BY {}", group_by.join(", ")));
    }
    if let Some(h) = having {
        sql.push_str(&format!(" \nHAVING {h}"));
    }
    if !order_parts.is_empty() {
        sql.push_str(&format!(" ORDER BY {}", order_parts.join(", ")));
    }
    if limited {
        sql.push_str(&format!(" \n LIMIT {}", plan.row_limit));
    }
    if q.is_rowcount {
        sql = format!("SELECT COUNT(*) AS rowcount \nFROM ({sql}) AS rowcount_qry");
        plan.temporal.clear();
    } else if q.row_offset > 0 {
        sql.push_str(&format!(" OFFSET {}", q.row_offset));
    }
    plan.sql = sql;
    let consumed = b.r.consumed();
    plan.applied_template_filters = consumed.applied;
    plan.extra_cache_keys = consumed.cache_keys;
    Ok(plan)
}

/// `from_dttm`/`to_dttm` as the template variables show them (Python's `isoformat()`): the
/// bounds of `time_range`, else of the first TEMPORAL_RANGE filter.
fn template_bounds(q: &QueryObject, now: NaiveDateTime) -> (Option<String>, Option<String>) {
    let range = q.time_range.clone().or_else(|| {
        q.filters.iter().find_map(|f| match (&f.op[..], &f.val) {
            ("TEMPORAL_RANGE", Json::String(s)) => Some(s.clone()),
            _ => None,
        })
    });
    let Some(range) = range else {
        return (None, None);
    };
    let relative = |s: Option<&str>| match s {
        Some("now") => Relative::Now,
        _ => Relative::Today,
    };
    let Ok(r) = timerange::get_since_until(
        Some(&range),
        q.time_shift.as_deref(),
        relative(q.extras.relative_start.as_deref()),
        relative(q.extras.relative_end.as_deref()),
        now,
    ) else {
        return (None, None);
    };
    let iso = |d: NaiveDateTime| {
        if d.and_utc().timestamp_subsec_micros() == 0 {
            d.format("%Y-%m-%dT%H:%M:%S").to_string()
        } else {
            d.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
        }
    };
    (r.since.map(iso), r.until.map(iso))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::context::{QueryContext, parse};
    use chrono::NaiveDate;
    use serde_json::json;

    fn dataset() -> Datasource {
        Datasource::for_tests(
            &[
                ("ds", "TIMESTAMP WITHOUT TIME ZONE", true),
                ("g", "VARCHAR", false),
                ("n", "INTEGER", false),
            ],
            &[("count", "COUNT(*)")],
        )
    }

    const LIMITS: Limits = Limits {
        row_limit: 50_000,
        samples_row_limit: 1_000,
        sql_max_row: 100_000,
    };

    fn context(query: serde_json::Value) -> QueryContext {
        parse(
            &json!({"datasource": {"id": 1, "type": "table"}, "queries": [query]}),
            &[],
        )
        .expect("valid context")
    }

    fn plan(query: serde_json::Value, kind: ResultType) -> Plan {
        let now = NaiveDate::from_ymd_opt(2025, 6, 15)
            .and_then(|d| d.and_hms_opt(12, 0, 0))
            .expect("date");
        let tpl = Templating::new(
            false,
            Facts::neutral(now),
            Budget {
                fuel: 100_000,
                max_bytes: 1 << 20,
            },
            HashMap::new(),
            LIMITS,
        );
        build(&dataset(), &context(query).queries[0], kind, &LIMITS, &tpl).expect("plan")
    }

    fn day(d: u32) -> Option<NaiveDateTime> {
        NaiveDate::from_ymd_opt(2025, 6, d).and_then(|d| d.and_hms_opt(0, 0, 0))
    }

    /// Superset's `_get_samples` sets `from_dttm`/`to_dttm` to None on its copy: the legacy
    /// granularity predicate goes, the answer's bounds are null, but `time_range` still
    /// overrides a TEMPORAL_RANGE filter's value ("Last week" on 2025-06-15: 06-08..06-15)
    /// and `row_offset` still pages.
    #[test]
    fn samples_drop_the_bounds_but_keep_time_range_and_offset() {
        let query = json!({
            "granularity": "ds", "time_range": "Last week", "row_offset": 20,
            "columns": ["g"], "metrics": ["count"],
            "filters": [{"col": "ds", "op": "TEMPORAL_RANGE", "val": "No filter"}],
        });
        let samples = plan(query.clone(), ResultType::Samples);
        assert_eq!((samples.from_dttm, samples.to_dttm), (None, None));
        // Only the filter's predicate: one lower and one upper bound, both last week's.
        let sql = &samples.sql;
        assert_eq!(sql.matches("\"ds\" >= ").count(), 1, "{sql}");
        assert_eq!(sql.matches("\"ds\" < ").count(), 1, "{sql}");
        assert!(sql.contains("2025-06-08 00:00:00"), "{sql}");
        assert!(sql.contains("2025-06-15 00:00:00"), "{sql}");
        assert!(sql.ends_with(" LIMIT 1000 OFFSET 20"), "{sql}");
        assert_eq!(samples.applied_filters, ["ds"]);

        // Full and drill_detail keep the bounds.
        for kind in [ResultType::Full, ResultType::DrillDetail] {
            let p = plan(query.clone(), kind);
            assert_eq!((p.from_dttm, p.to_dttm), (day(8), day(15)), "{kind:?}");
        }

        // Bounds that come from a TEMPORAL_RANGE filter alone are not reported for samples.
        let filter_only = json!({
            "columns": ["g"],
            "filters": [{"col": "ds", "op": "TEMPORAL_RANGE", "val": "Last week"}],
        });
        let samples = plan(filter_only.clone(), ResultType::Samples);
        assert_eq!((samples.from_dttm, samples.to_dttm), (None, None));
        let sql = &samples.sql;
        assert!(sql.contains("2025-06-08 00:00:00"), "{sql}");
        let full = plan(filter_only, ResultType::Full);
        assert_eq!((full.from_dttm, full.to_dttm), (day(8), day(15)));
    }

    /// `apply_max_row_limit(row_limit or default)`: SAMPLES_ROW_LIMIT is the default of samples
    /// only, SQL_MAX_ROW the only cap.
    #[test]
    fn row_limits_follow_superset() {
        let limit = |row_limit: Option<u64>, kind: ResultType| {
            let mut q = json!({"columns": ["g"]});
            if let Some(r) = row_limit {
                q["row_limit"] = json!(r);
            }
            plan(q, kind).row_limit
        };
        assert_eq!(limit(None, ResultType::Samples), 1_000);
        assert_eq!(limit(Some(5_000), ResultType::Samples), 5_000);
        assert_eq!(limit(Some(500_000), ResultType::Samples), 100_000);
        assert_eq!(limit(None, ResultType::DrillDetail), 50_000);
        assert_eq!(limit(Some(5_000), ResultType::DrillDetail), 5_000);
        assert_eq!(limit(Some(500_000), ResultType::DrillDetail), 100_000);
        assert_eq!(limit(None, ResultType::Full), 50_000);
        assert_eq!(limit(Some(500_000), ResultType::Full), 100_000);
    }
}
