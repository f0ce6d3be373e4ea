//! The chart-data request (Superset's `ChartDataQueryContextSchema`): wire JSON in, validated
//! domain values out. Unknown top-level keys are refused and unknown query-object keys dropped,
//! as marshmallow does; errors carry marshmallow's nested message dict, rendered the way
//! Superset prints it (`{'queries': {0: {'filters': {0: {'op': [...]}}}}}`).

use serde_json::{Map, Value as Json};

use super::QueryError;

/// `result_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// Data with the full envelope.
    Full,
    /// Raw dataset rows.
    Samples,
    /// The SQL only.
    Query,
    /// Data with a short envelope.
    Results,
    /// The dataset's columns.
    Columns,
    /// The engine's time grains.
    Timegrains,
    /// Full, then a viz-specific client-side pivot.
    PostProcessed,
    /// Rows behind a data point.
    DrillDetail,
}

const RESULT_TYPES: &[(&str, ResultType)] = &[
    ("full", ResultType::Full),
    ("samples", ResultType::Samples),
    ("query", ResultType::Query),
    ("results", ResultType::Results),
    ("columns", ResultType::Columns),
    ("timegrains", ResultType::Timegrains),
    ("post_processed", ResultType::PostProcessed),
    ("drill_detail", ResultType::DrillDetail),
];

impl ResultType {
    /// Parses Superset's name.
    pub fn parse(s: &str) -> Option<ResultType> {
        RESULT_TYPES.iter().find(|(n, _)| *n == s).map(|(_, t)| *t)
    }
}

/// `result_format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResultFormat {
    /// JSON payloads.
    Json,
    /// CSV attachments.
    Csv,
    /// Excel (refused: not supported).
    Xlsx,
}

impl ResultFormat {
    /// Parses Superset's name.
    pub fn parse(s: &str) -> Option<ResultFormat> {
        match s {
            "json" => Some(ResultFormat::Json),
            "csv" => Some(ResultFormat::Csv),
            "xlsx" => Some(ResultFormat::Xlsx),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultFormat::Json => "json",
            ResultFormat::Csv => "csv",
            ResultFormat::Xlsx => "xlsx",
        }
    }
}

/// The post-processing operations Superset knows.
pub const POST_PROCESSING_OPERATIONS: &[&str] = &[
    "aggregate",
    "boxplot",
    "compare",
    "contribution",
    "cum",
    "diff",
    "escape_separator",
    "flatten",
    "geodetic_parse",
    "geohash_decode",
    "geohash_encode",
    "histogram",
    "pivot",
    "prophet",
    "rank",
    "rename",
    "resample",
    "rolling",
    "select",
    "sort",
    "unescape_separator",
];

/// Filter operators (`FilterOperator`), upper-case.
pub const FILTER_OPS: &[&str] = &[
    "==",
    "!=",
    ">",
    "<",
    ">=",
    "<=",
    "LIKE",
    "NOT LIKE",
    "ILIKE",
    "IS NULL",
    "IS NOT NULL",
    "IN",
    "NOT IN",
    "IS TRUE",
    "IS FALSE",
    "TEMPORAL_RANGE",
];

/// A whole chart-data request.
#[derive(Clone, Debug)]
pub struct QueryContext {
    /// Dataset id.
    pub datasource_id: i64,
    /// `force`: bypass the cache.
    pub force: bool,
    /// Top-level `result_type`.
    pub result_type: ResultType,
    /// `result_format`.
    pub result_format: ResultFormat,
    /// The query objects.
    pub queries: Vec<QueryObject>,
    /// `form_data` (for `slice_id`).
    pub form_data: Option<Json>,
    /// `custom_cache_timeout`.
    pub custom_cache_timeout: Option<i64>,
}

impl QueryContext {
    /// Superset's `QueryContextFactory._apply_granularity`, run on every query object before
    /// anything is planned. A query with `granularity` gets its time bounds from it, so the
    /// filter that stood for the time range goes: the chart's temporal x-axis (`form_data`'s
    /// `x_axis`, whose column and pivot index are renamed to the granularity), else the
    /// granularity's own TEMPORAL_RANGE filter, else the first TEMPORAL_RANGE filter. Every
    /// filter on that column goes, whatever its operator, as in Superset.
    pub fn apply_granularity(&mut self, ds: &super::Datasource) {
        let x_axis = self
            .form_data
            .as_ref()
            .and_then(|f| f.get("x_axis"))
            .and_then(|x| match x {
                Json::String(s) => Some(s.clone()),
                Json::Object(o) => o
                    .get("sqlExpression")
                    .and_then(Json::as_str)
                    .map(str::to_owned),
                _ => None,
            })
            .filter(|x| ds.column(x).is_some_and(|c| c.is_dttm));
        for q in &mut self.queries {
            let Some(granularity) = q.granularity.clone() else {
                continue;
            };
            let mut remove = None;
            if let Some(x_axis) = &x_axis {
                remove = Some(x_axis.clone());
                let axis = q.columns.iter_mut().find(|c| match c {
                    ColumnRef::Name(n) => n == x_axis,
                    ColumnRef::Adhoc { sql, .. } => sql == x_axis,
                });
                if let Some(axis) = axis {
                    match axis {
                        ColumnRef::Name(n) => *n = granularity.clone(),
                        ColumnRef::Adhoc { label, sql, .. } => {
                            *sql = granularity.clone();
                            *label = granularity.clone();
                        }
                    }
                    for (op, options) in &mut q.post_processing {
                        if op == "pivot"
                            && let Some(o) = options.as_object_mut()
                        {
                            o.insert("index".into(), Json::from(vec![granularity.clone()]));
                        }
                    }
                }
            }
            if remove.is_none() {
                let temporal: Vec<&str> = q
                    .filters
                    .iter()
                    .filter(|f| f.op == "TEMPORAL_RANGE")
                    .map(|f| match &f.col {
                        ColumnRef::Name(n) => n.as_str(),
                        ColumnRef::Adhoc { sql, .. } => sql.as_str(),
                    })
                    .collect();
                remove = if temporal.contains(&granularity.as_str()) {
                    Some(granularity.clone())
                } else {
                    temporal.first().map(|c| (*c).to_owned())
                };
            }
            // Superset compares the filter's `col` as given: an adhoc column (a dict) never
            // equals the name, so only named filters go.
            if let Some(remove) = remove {
                q.filters
                    .retain(|f| !matches!(&f.col, ColumnRef::Name(n) if *n == remove));
            }
        }
    }
}

/// A column reference: a dataset column name or an adhoc SQL column.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnRef {
    /// `"gender"`.
    Name(String),
    /// `{label, sqlExpression, columnType?, timeGrain?}`.
    Adhoc {
        /// The output label (`label`, else the expression).
        label: String,
        /// The SQL expression.
        sql: String,
        /// `columnType == "BASE_AXIS"`.
        base_axis: bool,
        /// `timeGrain`.
        time_grain: Option<String>,
    },
}

impl ColumnRef {
    /// The output label.
    pub fn label(&self) -> &str {
        match self {
            ColumnRef::Name(n) => n,
            ColumnRef::Adhoc { label, .. } => label,
        }
    }
}

/// A metric reference.
#[derive(Clone, Debug, PartialEq)]
pub enum MetricRef {
    /// A saved metric's name.
    Saved(String),
    /// `expressionType: SIMPLE`.
    Simple {
        /// Output label.
        label: String,
        /// `AVG|COUNT|COUNT_DISTINCT|MAX|MIN|SUM`.
        aggregate: String,
        /// The column name.
        column: String,
    },
    /// `expressionType: SQL`.
    Sql {
        /// Output label.
        label: String,
        /// The aggregate expression.
        sql: String,
    },
}

impl MetricRef {
    /// The output label.
    pub fn label(&self) -> &str {
        match self {
            MetricRef::Saved(n) => n,
            MetricRef::Simple { label, .. } | MetricRef::Sql { label, .. } => label,
        }
    }
}

/// One filter.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// The filtered column.
    pub col: ColumnRef,
    /// Upper-cased operator, one of [`FILTER_OPS`].
    pub op: String,
    /// The value (absent = null).
    pub val: Json,
}

/// `extras`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extras {
    /// `where`.
    pub where_: String,
    /// `having`.
    pub having: String,
    /// `time_grain_sqla`.
    pub time_grain_sqla: Option<String>,
    /// `relative_start` (`today` | `now`).
    pub relative_start: Option<String>,
    /// `relative_end`.
    pub relative_end: Option<String>,
}

/// An `orderby` target.
#[derive(Clone, Debug, PartialEq)]
pub enum OrderTarget {
    /// A column or metric name.
    Name(String),
    /// An adhoc metric object.
    Metric(MetricRef),
}

/// One query object (Superset's `QueryObject`), with deprecated aliases resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryObject {
    /// Dimensions.
    pub columns: Vec<ColumnRef>,
    /// `None` when the key is absent (raw records); `Some([])` groups by every column.
    pub metrics: Option<Vec<MetricRef>>,
    /// Filters.
    pub filters: Vec<Filter>,
    /// Extras.
    pub extras: Extras,
    /// `orderby` (target, ascending).
    pub orderby: Vec<(OrderTarget, bool)>,
    /// `row_limit` (0/absent → default).
    pub row_limit: Option<u64>,
    /// `row_offset`.
    pub row_offset: u64,
    /// `order_desc`.
    pub order_desc: bool,
    /// `series_columns`.
    pub series_columns: Option<Vec<String>>,
    /// `series_limit`.
    pub series_limit: u64,
    /// `series_limit_metric`.
    pub series_limit_metric: Option<MetricRef>,
    /// `group_others_when_limit_reached`.
    pub group_others: bool,
    /// `time_range`.
    pub time_range: Option<String>,
    /// `granularity`.
    pub granularity: Option<String>,
    /// `time_offsets`.
    pub time_offsets: Vec<String>,
    /// `time_shift`.
    pub time_shift: Option<String>,
    /// `is_timeseries` as given (`None` = derive).
    pub is_timeseries: Option<bool>,
    /// `is_rowcount`.
    pub is_rowcount: bool,
    /// Per-query `result_type`.
    pub result_type: Option<ResultType>,
    /// `post_processing` steps (operation, options).
    pub post_processing: Vec<(String, Json)>,
    /// Row-level security's filters for the caller: never read from a request, set by the
    /// service that runs the query, AND-ed into every statement built from this object.
    pub row_filters: Vec<RowFilter>,
    /// `url_params`: the dashboard's or Explore's query-string parameters (templates'
    /// `url_param`).
    pub url_params: Map<String, Json>,
}

impl QueryObject {
    /// A query object with nothing in it but Superset's defaults.
    pub fn bare() -> QueryObject {
        QueryObject {
            columns: Vec::new(),
            metrics: None,
            filters: Vec::new(),
            extras: Extras::default(),
            orderby: Vec::new(),
            row_limit: None,
            row_offset: 0,
            order_desc: true,
            series_columns: None,
            series_limit: 0,
            series_limit_metric: None,
            group_others: false,
            time_range: None,
            granularity: None,
            time_offsets: Vec::new(),
            time_shift: None,
            is_timeseries: None,
            is_rowcount: false,
            result_type: None,
            post_processing: Vec::new(),
            row_filters: Vec::new(),
            url_params: Map::new(),
        }
    }
}

/// One row-level security filter: its clauses OR-ed (a group of rules sharing a `group_key`,
/// or one rule alone).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowFilter {
    /// The rules' SQL predicates.
    pub any_of: Vec<String>,
}

/// A marshmallow error path segment.
#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A schema error at `path`.
fn schema_error(path: &[Seg], message: &str) -> QueryError {
    let mut text = format!("[{}]", liteset_pyrepr::str(message));
    for seg in path.iter().rev() {
        text = match seg {
            Seg::Key(k) => format!("{{{}: {text}}}", liteset_pyrepr::str(k)),
            Seg::Index(i) => format!("{{{i}: {text}}}"),
        };
    }
    QueryError::Schema(text)
}

/// Walks a JSON value keeping the marshmallow path for error messages.
struct At<'a> {
    path: Vec<Seg>,
    _v: std::marker::PhantomData<&'a ()>,
}

impl<'a> At<'a> {
    fn err(&self, key: Option<&str>, msg: &str) -> QueryError {
        let mut path = self.path.clone();
        if let Some(k) = key {
            path.push(Seg::Key(k.to_owned()));
        }
        schema_error(&path, msg)
    }

    fn push_key(&mut self, k: &str) {
        self.path.push(Seg::Key(k.to_owned()));
    }

    fn push_index(&mut self, i: usize) {
        self.path.push(Seg::Index(i));
    }

    fn pop(&mut self) {
        self.path.pop();
    }
}

fn int(at: &At, obj: &Map<String, Json>, key: &str) -> Result<Option<i64>, QueryError> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Some(i)),
            None => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                _ => Err(at.err(Some(key), "Not a valid integer.")),
            },
        },
        Some(Json::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| at.err(Some(key), "Not a valid integer.")),
        Some(_) => Err(at.err(Some(key), "Not a valid integer.")),
    }
}

fn boolean(at: &At, obj: &Map<String, Json>, key: &str) -> Result<Option<bool>, QueryError> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Bool(b)) => Ok(Some(*b)),
        Some(Json::Number(n)) if n.as_i64() == Some(0) || n.as_i64() == Some(1) => {
            Ok(Some(n.as_i64() == Some(1)))
        }
        Some(Json::String(s)) => match s.to_ascii_lowercase().as_str() {
            "true" | "t" | "1" | "yes" | "y" | "on" => Ok(Some(true)),
            "false" | "f" | "0" | "no" | "n" | "off" => Ok(Some(false)),
            _ => Err(at.err(Some(key), "Not a valid boolean.")),
        },
        Some(_) => Err(at.err(Some(key), "Not a valid boolean.")),
    }
}

fn string(at: &At, obj: &Map<String, Json>, key: &str) -> Result<Option<String>, QueryError> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(at.err(Some(key), "Not a valid string.")),
    }
}

fn list<'j>(
    at: &At,
    obj: &'j Map<String, Json>,
    key: &str,
) -> Result<Option<&'j Vec<Json>>, QueryError> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Array(a)) => Ok(Some(a)),
        Some(_) => Err(at.err(Some(key), "Not a valid list.")),
    }
}

/// The keys a chart-data request may have (others are refused).
pub const TOP_LEVEL: &[&str] = &[
    "datasource",
    "queries",
    "force",
    "result_type",
    "result_format",
    "form_data",
    "custom_cache_timeout",
];

/// Parses and validates a chart-data request body.
/// Parses a query context; `plugin_ops` are the uploaded post-processors a `post_processing`
/// step may name besides Superset's operations.
pub fn parse(body: &Json, plugin_ops: &[String]) -> Result<QueryContext, QueryError> {
    let mut at = At {
        path: Vec::new(),
        _v: std::marker::PhantomData,
    };
    let Some(obj) = body.as_object() else {
        return Err(at.err(Some("_schema"), "Invalid input type."));
    };
    if let Some(unknown) = obj.keys().find(|k| !TOP_LEVEL.contains(&k.as_str())) {
        return Err(at.err(Some(unknown), "Unknown field."));
    }
    let datasource_id = match obj.get("datasource") {
        None | Some(Json::Null) => {
            return Err(at.err(Some("datasource"), "Missing data for required field."));
        }
        Some(Json::Object(ds)) => {
            at.push_key("datasource");
            let id = int(&at, ds, "id")?
                .ok_or_else(|| at.err(Some("id"), "Missing data for required field."))?;
            if let Some(t) = string(&at, ds, "type")?
                && ![
                    "table",
                    "dataset",
                    "query",
                    "saved_query",
                    "view",
                    "sl_table",
                ]
                .contains(&t.as_str())
            {
                return Err(at.err(
                    Some("type"),
                    "Must be one of: sl_table, table, dataset, query, saved_query, view.",
                ));
            }
            at.pop();
            id
        }
        Some(_) => return Err(at.err(Some("datasource"), "Invalid input type.")),
    };
    let force = boolean(&at, obj, "force")?.unwrap_or(false);
    let result_type = match string(&at, obj, "result_type")? {
        None => ResultType::Full,
        Some(s) => ResultType::parse(&s).ok_or_else(|| {
            at.err(
                Some("result_type"),
                "Must be one of: columns, full, query, results, samples, timegrains, \
                 post_processed, drill_detail.",
            )
        })?,
    };
    let result_format = match string(&at, obj, "result_format")? {
        None => ResultFormat::Json,
        Some(s) => ResultFormat::parse(&s)
            .ok_or_else(|| at.err(Some("result_format"), "Must be one of: csv, json, xlsx."))?,
    };
    let form_data = match obj.get("form_data") {
        None | Some(Json::Null) => None,
        Some(v @ Json::Object(_)) => Some(v.clone()),
        Some(_) => return Err(at.err(Some("form_data"), "Not a valid mapping type.")),
    };
    let custom_cache_timeout = int(&at, obj, "custom_cache_timeout")?;
    let Some(raw_queries) = list(&at, obj, "queries")? else {
        return Err(at.err(Some("queries"), "Missing data for required field."));
    };
    at.push_key("queries");
    let mut queries = Vec::with_capacity(raw_queries.len());
    for (i, q) in raw_queries.iter().enumerate() {
        at.push_index(i);
        queries.push(query_object(&mut at, q, plugin_ops)?);
        at.pop();
    }
    Ok(QueryContext {
        datasource_id,
        force,
        result_type,
        result_format,
        queries,
        form_data,
        custom_cache_timeout,
    })
}

fn column_ref(at: &At, v: &Json) -> Result<ColumnRef, QueryError> {
    match v {
        Json::String(s) => Ok(ColumnRef::Name(s.clone())),
        Json::Object(o) => {
            let sql = match o.get("sqlExpression") {
                Some(Json::String(s)) => s.clone(),
                _ => return Err(at.err(None, "Not a valid adhoc column: sqlExpression missing.")),
            };
            let label = match o.get("label") {
                Some(Json::String(l)) if !l.is_empty() => l.clone(),
                _ => sql.clone(),
            };
            Ok(ColumnRef::Adhoc {
                label,
                sql,
                base_axis: o.get("columnType").and_then(Json::as_str) == Some("BASE_AXIS"),
                time_grain: o
                    .get("timeGrain")
                    .and_then(Json::as_str)
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned),
            })
        }
        _ => Err(at.err(None, "Not a valid column.")),
    }
}

fn metric_ref(at: &At, v: &Json) -> Result<MetricRef, QueryError> {
    match v {
        Json::String(s) => Ok(MetricRef::Saved(s.clone())),
        Json::Object(o) => {
            let label = o
                .get("label")
                .and_then(Json::as_str)
                .filter(|l| !l.is_empty())
                .map(str::to_owned);
            match o.get("expressionType").and_then(Json::as_str) {
                Some("SIMPLE") => {
                    let column = o
                        .get("column")
                        .and_then(|c| c.get("column_name"))
                        .and_then(Json::as_str)
                        .ok_or_else(|| at.err(None, "Adhoc metric is missing its column."))?
                        .to_owned();
                    let aggregate = o
                        .get("aggregate")
                        .and_then(Json::as_str)
                        .map(str::to_ascii_uppercase)
                        .ok_or_else(|| at.err(None, "Adhoc metric is missing its aggregate."))?;
                    if !["AVG", "COUNT", "COUNT_DISTINCT", "MAX", "MIN", "SUM"]
                        .contains(&aggregate.as_str())
                    {
                        return Err(at.err(
                            Some("aggregate"),
                            "Must be one of: AVG, COUNT, COUNT_DISTINCT, MAX, MIN, SUM.",
                        ));
                    }
                    Ok(MetricRef::Simple {
                        label: label.unwrap_or_else(|| format!("{aggregate}({column})")),
                        aggregate,
                        column,
                    })
                }
                Some("SQL") => {
                    let sql = o
                        .get("sqlExpression")
                        .and_then(Json::as_str)
                        .ok_or_else(|| at.err(None, "Adhoc metric is missing its sqlExpression."))?
                        .to_owned();
                    Ok(MetricRef::Sql {
                        label: label.unwrap_or_else(|| sql.clone()),
                        sql,
                    })
                }
                // Legacy `{label}` metrics name a saved metric.
                None => label
                    .map(MetricRef::Saved)
                    .ok_or_else(|| at.err(None, "Not a valid metric.")),
                Some(_) => Err(at.err(Some("expressionType"), "Must be one of: SIMPLE, SQL.")),
            }
        }
        _ => Err(at.err(None, "Not a valid metric.")),
    }
}

/// `url_params`: a map of strings (marshmallow's `Dict(keys=String, values=String)`, null
/// allowed).
fn url_params(at: &mut At, o: &Map<String, Json>) -> Result<Map<String, Json>, QueryError> {
    match o.get("url_params") {
        None | Some(Json::Null) => Ok(Map::new()),
        Some(Json::Object(m)) => {
            at.push_key("url_params");
            for (k, v) in m {
                if !v.is_string() {
                    at.push_key(k);
                    let e = at.err(Some("value"), "Not a valid string.");
                    return Err(e);
                }
            }
            at.pop();
            Ok(m.clone())
        }
        Some(_) => Err(at.err(Some("url_params"), "Not a valid mapping type.")),
    }
}

fn query_object(at: &mut At, v: &Json, plugin_ops: &[String]) -> Result<QueryObject, QueryError> {
    let Some(o) = v.as_object() else {
        return Err(at.err(Some("_schema"), "Invalid input type."));
    };
    // Deprecated aliases (Superset's `QueryObject.__init__`).
    let columns_key = if o.contains_key("columns") {
        "columns"
    } else {
        "groupby"
    };
    let mut columns = Vec::new();
    if let Some(cols) = list(at, o, columns_key)? {
        at.push_key(columns_key);
        for (i, c) in cols.iter().enumerate() {
            at.push_index(i);
            columns.push(column_ref(at, c)?);
            at.pop();
        }
        at.pop();
    }
    let metrics = match list(at, o, "metrics")? {
        None => None,
        Some(ms) => {
            at.push_key("metrics");
            let mut out = Vec::with_capacity(ms.len());
            for (i, m) in ms.iter().enumerate() {
                at.push_index(i);
                out.push(metric_ref(at, m)?);
                at.pop();
            }
            at.pop();
            Some(out)
        }
    };
    let mut filters = Vec::new();
    if let Some(fs) = list(at, o, "filters")? {
        at.push_key("filters");
        for (i, f) in fs.iter().enumerate() {
            at.push_index(i);
            let Some(fo) = f.as_object() else {
                return Err(at.err(Some("_schema"), "Invalid input type."));
            };
            let col = match fo.get("col") {
                None | Some(Json::Null) => {
                    return Err(at.err(Some("col"), "Missing data for required field."));
                }
                Some(c) => column_ref(at, c)?,
            };
            let op = match fo.get("op") {
                Some(Json::String(op)) => op.to_ascii_uppercase(),
                None => return Err(at.err(Some("op"), "Missing data for required field.")),
                Some(_) => return Err(at.err(Some("op"), "Not a valid string.")),
            };
            if !FILTER_OPS.contains(&op.as_str()) {
                return Err(at.err(
                    Some("op"),
                    &format!("Must be one of: {}.", FILTER_OPS.join(", ")),
                ));
            }
            filters.push(Filter {
                col,
                op,
                val: fo.get("val").cloned().unwrap_or(Json::Null),
            });
            at.pop();
        }
        at.pop();
    }
    let mut extras = Extras::default();
    if let Some(e) = o.get("extras").and_then(Json::as_object) {
        at.push_key("extras");
        extras.where_ = string(at, e, "where")?.unwrap_or_default();
        extras.having = string(at, e, "having")?.unwrap_or_default();
        extras.time_grain_sqla = string(at, e, "time_grain_sqla")?.filter(|g| !g.is_empty());
        extras.relative_start = string(at, e, "relative_start")?;
        extras.relative_end = string(at, e, "relative_end")?;
        at.pop();
    }
    // Top-level `where`/`having` move into extras.
    if let Some(w) = string(at, o, "where")?
        && extras.where_.is_empty()
    {
        extras.where_ = w;
    }
    if let Some(h) = string(at, o, "having")?
        && extras.having.is_empty()
    {
        extras.having = h;
    }
    let mut orderby = Vec::new();
    if let Some(obs) = list(at, o, "orderby")? {
        at.push_key("orderby");
        for (i, ob) in obs.iter().enumerate() {
            at.push_index(i);
            let pair = ob.as_array().filter(|a| a.len() == 2).ok_or_else(|| {
                at.err(
                    None,
                    "Not a valid orderby: expected [column or metric, ascending].",
                )
            })?;
            let target = match &pair[0] {
                Json::String(s) => OrderTarget::Name(s.clone()),
                m @ Json::Object(_) => OrderTarget::Metric(metric_ref(at, m)?),
                _ => return Err(at.err(None, "Not a valid orderby target.")),
            };
            let asc = pair[1]
                .as_bool()
                .ok_or_else(|| at.err(None, "Not a valid boolean."))?;
            orderby.push((target, asc));
            at.pop();
        }
        at.pop();
    }
    let row_limit = int(at, o, "row_limit")?;
    if row_limit.is_some_and(|r| r < 0) {
        return Err(at.err(Some("row_limit"), "Must be greater than or equal to 0."));
    }
    let row_offset = int(at, o, "row_offset")?.unwrap_or(0);
    if row_offset < 0 {
        return Err(at.err(Some("row_offset"), "Must be greater than or equal to 0."));
    }
    let series_limit_key = if o.contains_key("series_limit") {
        "series_limit"
    } else {
        "timeseries_limit"
    };
    let series_limit = int(at, o, series_limit_key)?.unwrap_or(0).max(0);
    let slm_key = if o.contains_key("series_limit_metric") {
        "series_limit_metric"
    } else {
        "timeseries_limit_metric"
    };
    let series_limit_metric = match o.get(slm_key) {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) if s.is_empty() => None,
        Some(m) => {
            at.push_key(slm_key);
            let r = metric_ref(at, m)?;
            at.pop();
            Some(r)
        }
    };
    let series_columns = list(at, o, "series_columns")?.map(|cols| {
        cols.iter()
            .map(|c| match c {
                Json::String(s) => s.clone(),
                other => other
                    .get("label")
                    .and_then(Json::as_str)
                    .or_else(|| other.get("sqlExpression").and_then(Json::as_str))
                    .unwrap_or_default()
                    .to_owned(),
            })
            .collect()
    });
    let granularity = match string(at, o, "granularity")? {
        Some(g) => Some(g),
        None => string(at, o, "granularity_sqla")?,
    }
    .filter(|g| !g.is_empty());
    let mut time_offsets = Vec::new();
    if let Some(offs) = list(at, o, "time_offsets")? {
        for off in offs {
            match off {
                Json::String(s) => time_offsets.push(s.clone()),
                _ => return Err(at.err(Some("time_offsets"), "Not a valid string.")),
            }
        }
    }
    let result_type = match string(at, o, "result_type")? {
        None => None,
        Some(s) => Some(ResultType::parse(&s).ok_or_else(|| {
            at.err(
                Some("result_type"),
                "Must be one of: columns, full, query, results, samples, timegrains, \
                 post_processed, drill_detail.",
            )
        })?),
    };
    let mut post_processing = Vec::new();
    if let Some(pps) = list(at, o, "post_processing")? {
        at.push_key("post_processing");
        for (i, pp) in pps.iter().enumerate() {
            // Superset drops null/empty steps the frontend leaves in the list.
            if pp.is_null() || pp.as_object().is_some_and(Map::is_empty) {
                continue;
            }
            at.push_index(i);
            let Some(ppo) = pp.as_object() else {
                return Err(at.err(Some("_schema"), "Invalid input type."));
            };
            let op = match ppo.get("operation") {
                Some(Json::String(s)) => s.clone(),
                _ => return Err(at.err(Some("operation"), "Missing data for required field.")),
            };
            if !POST_PROCESSING_OPERATIONS.contains(&op.as_str()) && !plugin_ops.contains(&op) {
                let known: Vec<&str> = POST_PROCESSING_OPERATIONS
                    .iter()
                    .copied()
                    .chain(plugin_ops.iter().map(String::as_str))
                    .collect();
                return Err(at.err(
                    Some("operation"),
                    &format!("Must be one of: {}.", known.join(", ")),
                ));
            }
            post_processing.push((op, ppo.get("options").cloned().unwrap_or(Json::Null)));
            at.pop();
        }
        at.pop();
    }
    Ok(QueryObject {
        columns,
        metrics,
        filters,
        extras,
        orderby,
        row_limit: row_limit.map(|r| r as u64).filter(|r| *r > 0),
        row_offset: row_offset as u64,
        order_desc: boolean(at, o, "order_desc")?.unwrap_or(true),
        series_columns,
        series_limit: series_limit as u64,
        series_limit_metric,
        group_others: boolean(at, o, "group_others_when_limit_reached")?.unwrap_or(false),
        time_range: string(at, o, "time_range")?.filter(|t| !t.is_empty()),
        granularity,
        time_offsets,
        time_shift: string(at, o, "time_shift")?.filter(|t| !t.is_empty()),
        is_timeseries: boolean(at, o, "is_timeseries")?,
        is_rowcount: boolean(at, o, "is_rowcount")?.unwrap_or(false),
        result_type,
        post_processing,
        row_filters: Vec::new(),
        url_params: url_params(at, o)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(body: Json) -> String {
        parse(&body, &[]).expect_err("must fail").to_string()
    }

    /// `_apply_granularity`: which filter a granularity replaces, and the x-axis renamed.
    #[test]
    fn granularity_replaces_the_time_filter_as_in_superset() {
        let ds = crate::query::Datasource::for_tests(
            &[
                ("ds", "DATE", true),
                ("ts", "TIMESTAMP", true),
                ("g", "TEXT", false),
            ],
            &[],
        );
        let run = |form_data: Json, query: Json| {
            let mut ctx = parse(
                &json!({"datasource": {"id": 1, "type": "table"}, "form_data": form_data,
                        "queries": [query]}),
                &[],
            )
            .expect("parses");
            ctx.apply_granularity(&ds);
            ctx.queries.remove(0)
        };
        let range = |col: &str| json!({"col": col, "op": "TEMPORAL_RANGE", "val": "No filter"});
        let names = |q: &QueryObject| -> Vec<String> {
            q.filters.iter().map(|f| f.col.label().to_owned()).collect()
        };
        // The granularity's own TEMPORAL_RANGE filter goes, with every filter on that column.
        let q = run(
            json!({}),
            json!({"granularity": "ts", "filters": [range("ds"), range("ts"),
            {"col": "ts", "op": ">=", "val": "2020-01-01"}, {"col": "g", "op": "==", "val": "a"}]}),
        );
        assert_eq!(names(&q), ["ds", "g"]);
        // Otherwise the first TEMPORAL_RANGE filter.
        let q = run(
            json!({}),
            json!({"granularity": "ts", "filters": [range("ds"), range("g")]}),
        );
        assert_eq!(names(&q), ["g"]);
        // No granularity: nothing changes.
        let q = run(json!({}), json!({"filters": [range("ds")]}));
        assert_eq!(names(&q), ["ds"]);
        // A temporal x-axis: its filter goes, and the axis and the pivot index become the
        // granularity.
        let q = run(
            json!({"x_axis": "ds"}),
            json!({"granularity": "ts", "filters": [range("ds"), range("ts")],
                   "columns": [{"sqlExpression": "ds", "label": "ds", "columnType": "BASE_AXIS"}, "g"],
                   "post_processing": [{"operation": "pivot", "options": {"index": ["ds"]}}]}),
        );
        assert_eq!(names(&q), ["ts"]);
        assert_eq!(q.columns[0].label(), "ts");
        assert_eq!(q.post_processing[0].1["index"], json!(["ts"]));
        // An x-axis that is not temporal is no x-axis here.
        let q = run(
            json!({"x_axis": "g"}),
            json!({"granularity": "ts", "filters": [range("ds")]}),
        );
        assert!(q.filters.is_empty());
    }

    #[test]
    fn schema_errors_read_like_marshmallow() {
        assert_eq!(
            err(
                json!({"datasource": {"id": 1, "type": "table"}, "queries": [{"filters": [{"col": "a", "op": "BETWEEN"}]}]})
            ),
            "Request is incorrect: {'queries': {0: {'filters': {0: {'op': ['Must be one of: ==, !=, >, <, >=, <=, LIKE, NOT LIKE, ILIKE, IS NULL, IS NOT NULL, IN, NOT IN, IS TRUE, IS FALSE, TEMPORAL_RANGE.']}}}}}"
        );
        assert_eq!(
            err(json!({"datasource": {"id": 1}, "queries": [], "nope": 1})),
            "Request is incorrect: {'nope': ['Unknown field.']}"
        );
        assert_eq!(
            err(json!({"queries": []})),
            "Request is incorrect: {'datasource': ['Missing data for required field.']}"
        );
        assert!(
            err(json!({"datasource": {"id": 1}, "queries": [{"post_processing": [{"operation": "explode"}]}]}))
                .starts_with("Request is incorrect: {'queries': {0: {'post_processing': {0: {'operation': ['Must be one of: aggregate,")
        );
    }

    #[test]
    fn aliases_and_defaults() {
        let ctx = parse(&json!({
            "datasource": {"id": "7", "type": "table"},
            "queries": [{"groupby": ["a"], "granularity_sqla": "ds", "timeseries_limit": 5,
                          "metrics": [{"expressionType": "SIMPLE", "column": {"column_name": "n"}, "aggregate": "sum"},
                                      {"expressionType": "SQL", "sqlExpression": "SUM(x)"}],
                          "where": "a > 1", "row_limit": 0, "unknown_key": 1}]
        }), &[])
        .expect("valid");
        let q = &ctx.queries[0];
        assert_eq!(ctx.datasource_id, 7);
        assert_eq!(ctx.result_type, ResultType::Full);
        assert_eq!(q.columns, vec![ColumnRef::Name("a".into())]);
        assert_eq!(q.granularity.as_deref(), Some("ds"));
        assert_eq!(q.series_limit, 5);
        assert_eq!(q.extras.where_, "a > 1");
        assert_eq!(q.row_limit, None);
        assert!(q.order_desc);
        let labels: Vec<&str> = q
            .metrics
            .as_ref()
            .expect("metrics")
            .iter()
            .map(MetricRef::label)
            .collect();
        assert_eq!(labels, ["SUM(n)", "SUM(x)"]);
    }
}
