//! Jinja templating of user SQL (Superset's `jinja_context.py`, behind its
//! `ENABLE_TEMPLATE_PROCESSING` switch: `query.template_processing`).
//!
//! Templates are rendered by minijinja, sandboxed by construction: the context holds data
//! (strings, numbers, lists, maps) and the macros below, never a host object, so there is no
//! attribute to walk toward the process; there is no loader, so `include`, `import` and
//! `extends` find nothing; every render has a fuel budget (instructions and bytes created),
//! a recursion limit and an output limit, so loops, recursion and string multiplication end
//! with a 400 instead of holding a worker.
//!
//! The macros have Superset's names, arguments and semantics: `current_user_id`,
//! `current_username`, `current_user_email`, `current_user_roles`, `current_user_rls_rules`,
//! `url_param`, `filter_values`, `get_filters`, `get_time_filter`, `cache_key_wrapper`,
//! `dataset`, `metric`, the filters `where_in` and `to_datetime`, and the variables a chart
//! query passes (`columns`, `from_dttm`, `to_dttm`, `groupby`, `metrics`, `row_limit`,
//! `row_offset`, `time_column`, `time_grain`, `table_columns`, `filter`) plus the
//! `template_params`.
//!
//! **Values from the request never reach SQL unquoted.** In chart queries the author of a
//! template (a dataset's owner) is not the person whose request fills it, so every `{{ … }}`
//! whose value is a string the renderer cannot vouch for is marked while rendering, and the
//! rendered SQL is then tokenized (`sqlcheck::check_value_spans`): a marked value must lie
//! inside a quoted literal (or be made only of literals, numbers and commas, as a quoted
//! `IN` list is). Vouched for are SQL the macros generate (`where_in`, `dataset`, `metric`,
//! `get_time_filter`'s expressions: quoted by the engine's dialect), numbers, the dataset's
//! template parameters and column names (vouched for by where they come from), and string
//! literals the author wrote inside the template's own `{{ }}`/`{% %}` blocks. SQL Lab renders without marks: its user
//! writes the SQL and the values alike.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::NaiveDateTime;
use minijinja::value::{Kwargs, Rest};
use minijinja::{
    AutoEscape, Environment, Error as MjError, ErrorKind, State, UndefinedBehavior, Value,
};
use serde_json::{Map, Value as Json};

use super::sqlcheck::{self, SqlDialect};
use super::timerange::{self, Relative};
use crate::engines::Dialect;

/// Opens a value the renderer cannot vouch for (a private-use character, refused in sources).
const OPEN: char = '\u{E000}';
/// Closes it.
const CLOSE: char = '\u{E001}';

/// Nested renders (`dataset()` of a templated dataset, `metric()` of a templated metric).
const MAX_DEPTH: u8 = 4;

/// True when `sql` holds a Jinja expression, statement or comment.
pub fn has_template(sql: &str) -> bool {
    sql.contains("{{") || sql.contains("{%") || sql.contains("{#")
}

/// Why a template did not render.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// Template syntax while `query.template_processing` is off.
    #[error(
        "Jinja templating is disabled on this server (query.template_processing, Superset's \
         ENABLE_TEMPLATE_PROCESSING feature flag): the SQL contains template syntax ({{{{ … }}}}, \
         {{% … %}} or {{# … #}}) that would otherwise reach the database raw"
    )]
    Disabled,
    /// The template failed: Superset's `Jinja2 template error (<type>): <message>`.
    #[error("Jinja2 template error ({kind}): {message}")]
    Render {
        /// Jinja2's exception name (`TemplateSyntaxError`, `UndefinedError`, `SecurityError`).
        kind: &'static str,
        /// What went wrong.
        message: String,
        /// The template's line, when known.
        line: Option<usize>,
        /// Variables printed but not defined (SQL Lab's `MISSING_TEMPLATE_PARAMS_ERROR`).
        undefined: Vec<String>,
    },
    /// A macro refused (a dataset or metric not found, a bad argument): its own message.
    #[error("{0}")]
    Macro(String),
    /// A value from the request reached the SQL outside a quoted literal.
    #[error(
        "A template value reached the SQL outside a quoted literal ({0}). Values from the \
         request (url_param, filter_values, get_filters, current_username, …) must be quoted \
         ('{{{{ url_param('x') }}}}'), passed through |where_in, or converted with |int or |float"
    )]
    Unquoted(String),
}

impl TemplateError {
    /// The template line the error points at.
    pub fn line(&self) -> Option<usize> {
        match self {
            TemplateError::Render { line, .. } => *line,
            _ => None,
        }
    }

    /// Jinja2's exception name, for the error's `extra`.
    pub fn exception_type(&self) -> &'static str {
        match self {
            TemplateError::Render { kind, .. } => kind,
            TemplateError::Disabled => "TemplateProcessingDisabled",
            TemplateError::Macro(_) => "SupersetTemplateException",
            TemplateError::Unquoted(_) => "SecurityError",
        }
    }

    /// Names printed but never defined (empty for every other error).
    pub fn undefined(&self) -> &[String] {
        match self {
            TemplateError::Render { undefined, .. } => undefined,
            _ => &[],
        }
    }
}

/// The caller as the user macros see them.
#[derive(Clone, Debug, Default)]
pub struct UserFacts {
    /// `current_user_id()` (none for guests, as in Superset).
    pub id: Option<i64>,
    /// `current_username()`.
    pub username: Option<String>,
    /// `current_user_email()`.
    pub email: Option<String>,
    /// `current_user_roles()`, any order (sorted when returned).
    pub roles: Vec<String>,
}

/// What one request tells its templates: the same for every template it renders.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The caller.
    pub user: UserFacts,
    /// `url_param`'s parameters.
    pub url_params: Map<String, Json>,
    /// Escape `url_param`'s result for a quoted literal (charts, as Superset does with its
    /// form data's `url_params`); SQL Lab's own query string is returned as given.
    pub escape_url_params: bool,
    /// The request's simple filters `{"col", "op", "val"}` (`get_filters`, `filter_values`,
    /// `get_time_filter`'s TEMPORAL_RANGE filters).
    pub filters: Vec<Json>,
    /// The request's `time_range` (`get_time_filter` without a column's filter).
    pub time_range: Option<String>,
    /// "Now" of the request's relative time ranges.
    pub now: NaiveDateTime,
}

impl Facts {
    /// Facts with no parameters or filters and a placeholder user (id 0, no name, email or
    /// roles): a dataset's SQL as its author saved it, the same for every caller, so that
    /// `WHERE user_id = {{ current_user_id() }}` is still SQL.
    pub fn neutral(now: NaiveDateTime) -> Facts {
        Facts {
            user: UserFacts {
                id: Some(0),
                ..UserFacts::default()
            },
            url_params: Map::new(),
            escape_url_params: true,
            filters: Vec::new(),
            time_range: None,
            now,
        }
    }
}

/// A render's budget.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// minijinja fuel: instructions and bytes created.
    pub fuel: u64,
    /// The most bytes one render may produce.
    pub max_bytes: usize,
}

/// What the templates of one query consumed (Superset's `applied_filters`,
/// `removed_filters` and `extra_cache_keys`).
#[derive(Clone, Debug, Default)]
pub struct Tracker {
    /// Columns whose filters a template read: `applied_template_filters`.
    pub applied: Vec<String>,
    /// Columns whose filters a template took over (`remove_filter=True`): left out of the
    /// outer WHERE.
    pub removed: Vec<String>,
    /// Values that enter the results cache key.
    pub cache_keys: Vec<Json>,
    /// A macro's own refusal, reported instead of minijinja's wrapper of it.
    failure: Option<TemplateError>,
}

/// SQL of other datasets for `dataset()` and `metric()`, loaded (and access-checked) before
/// rendering, since macros run synchronously.
pub trait Catalog: Send + Sync {
    /// `dataset(id, include_metrics, columns)`: the dataset's query as SQL (its own templates
    /// rendered with `facts` at `depth`), or `None` when it is not among the caller's.
    fn dataset_sql(
        &self,
        id: i64,
        include_metrics: bool,
        columns: Option<Vec<String>>,
        depth: u8,
    ) -> Result<Option<String>, TemplateError>;
    /// The saved metrics `(name, expression)` and the name of dataset `id`, or `None` when it
    /// is not among the caller's.
    fn metrics(&self, id: i64) -> Option<(String, Vec<(String, String)>)>;
}

/// Everything a render needs; cheap to clone (the macros keep a clone).
#[derive(Clone)]
pub struct Renderer {
    /// Whether templates render at all (`query.template_processing`).
    pub enabled: bool,
    /// The request.
    pub facts: Arc<Facts>,
    /// The engine whose dialect quotes values and dates.
    pub dialect: Dialect,
    /// Variables: the query's (`columns`, `row_limit`, …) and the template parameters.
    pub vars: Arc<Map<String, Json>>,
    /// Column name → declared type (`get_time_filter`'s default `target_type`).
    pub column_types: Arc<HashMap<String, String>>,
    /// `current_user_rls_rules()`: the clauses row-level security applies to this dataset.
    pub rls_clauses: Arc<Vec<String>>,
    /// Variables the author supplied (the dataset's template parameters, its column names):
    /// their strings print as they are. They win over `vars`, as in Superset.
    pub params: Arc<Map<String, Json>>,
    /// Check that request values land inside quoted literals (charts: yes; SQL Lab: no).
    pub checked: bool,
    /// Other datasets, for `dataset()` and `metric()`.
    pub catalog: Option<Arc<dyn Catalog>>,
    /// The dataset `metric(name)` reads without an id.
    pub dataset_id: Option<i64>,
    /// The render's budget.
    pub budget: Budget,
    /// What the query's templates consumed.
    pub tracker: Arc<Mutex<Tracker>>,
    /// Nesting of `dataset()`/`metric()` renders.
    pub depth: u8,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("enabled", &self.enabled)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer of `facts` for `dialect` with the given variables, not checking values.
    pub fn new(enabled: bool, facts: Arc<Facts>, dialect: Dialect, budget: Budget) -> Renderer {
        Renderer {
            enabled,
            facts,
            dialect,
            vars: Arc::new(Map::new()),
            column_types: Arc::new(HashMap::new()),
            rls_clauses: Arc::new(Vec::new()),
            params: Arc::new(Map::new()),
            checked: false,
            catalog: None,
            dataset_id: None,
            budget,
            tracker: Arc::new(Mutex::new(Tracker::default())),
            depth: 0,
        }
    }

    /// What the templates rendered so far consumed.
    pub fn consumed(&self) -> Tracker {
        self.tracker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether a template took over the filters on `column` (`remove_filter=True`).
    pub fn removed(&self, column: &str) -> bool {
        self.track(|t| t.removed.iter().any(|c| c == column))
    }

    fn track<R>(&self, f: impl FnOnce(&mut Tracker) -> R) -> R {
        f(&mut self.tracker.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Renders `source`: returned unchanged when it holds no template syntax; refused when
    /// templating is off and it does.
    pub fn render(&self, source: &str) -> Result<String, TemplateError> {
        if !has_template(source) {
            return Ok(source.to_owned());
        }
        if !self.enabled {
            return Err(TemplateError::Disabled);
        }
        if self.depth > MAX_DEPTH {
            return Err(TemplateError::Macro(
                "Templates nest too deeply (dataset() or metric() calling itself?)".into(),
            ));
        }
        if source.contains([OPEN, CLOSE]) {
            return Err(render_error(
                "SecurityError",
                "the template contains reserved characters (U+E000, U+E001)".into(),
                None,
            ));
        }
        self.track(|t| t.failure = None);
        let env = self.environment(source);
        let out = env
            .template_from_str(source)
            .and_then(|t| t.render(self.context()));
        let failure = self.track(|t| t.failure.take());
        let rendered = match (out, failure) {
            (_, Some(f)) => return Err(f),
            (Ok(s), None) => s,
            (Err(e), None) => return Err(self.describe(&e)),
        };
        if rendered.len() > self.budget.max_bytes {
            return Err(render_error(
                "SecurityError",
                format!(
                    "the rendered SQL is longer than {} bytes (query.template_max_bytes)",
                    self.budget.max_bytes
                ),
                None,
            ));
        }
        if !self.checked {
            return Ok(rendered);
        }
        let (clean, spans) = unmark(&rendered)?;
        if !spans.is_empty() {
            sqlcheck::check_value_spans(sql_dialect(self.dialect), &clean, &spans)
                .map_err(TemplateError::Unquoted)?;
        }
        Ok(clean)
    }

    /// The error of a failed render, in Superset's words.
    fn describe(&self, e: &MjError) -> TemplateError {
        let detail = e.detail().unwrap_or("").to_owned();
        let line = e.line();
        match e.kind() {
            ErrorKind::SyntaxError | ErrorKind::BadEscape => {
                render_error("TemplateSyntaxError", detail, line)
            }
            ErrorKind::UndefinedError => {
                let names = undefined_names(&detail);
                TemplateError::Render {
                    kind: "UndefinedError",
                    message: detail,
                    line,
                    undefined: names,
                }
            }
            ErrorKind::OutOfFuel => render_error(
                "SecurityError",
                "the template exceeded its work budget (query.template_fuel)".into(),
                line,
            ),
            ErrorKind::TemplateNotFound => render_error(
                "SecurityError",
                "templates cannot include, import or extend other templates".into(),
                line,
            ),
            ErrorKind::InvalidOperation if detail.contains("recursion limit") => render_error(
                "SecurityError",
                "Infinite recursion detected in template".into(),
                line,
            ),
            ErrorKind::UnknownFunction
            | ErrorKind::UnknownFilter
            | ErrorKind::UnknownTest
            | ErrorKind::UnknownMethod => render_error("UndefinedError", detail, line),
            _ => render_error("TemplateError", detail, line),
        }
    }

    /// The render's variables: the query's, then the author's (macros are globals). The
    /// author's strings are vouched for by where they come from, so a request value equal to
    /// one is still checked.
    fn context(&self) -> Value {
        let mut m: std::collections::BTreeMap<String, Value> = self
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), json_value(v, false)))
            .collect();
        for (k, v) in self.params.iter() {
            m.insert(k.clone(), json_value(v, true));
        }
        Value::from(m)
    }

    fn environment<'s>(&self, source: &str) -> Environment<'s> {
        let mut env = Environment::new();
        // The builtins minus the ones that would vouch for a request's string (`safe`,
        // `escape`); `tojson` is replaced in `add_macros` for the same reason.
        for name in ["safe", "escape", "e"] {
            env.remove_filter(name);
        }
        // Names the undefined value an error is about (SQL Lab's missing parameters).
        env.set_debug(true);
        env.set_fuel(Some(self.budget.fuel));
        env.set_recursion_limit(100);
        env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        // Every capture (`{% set x %}…{% endset %}`, macro bodies) is then author text with
        // request values marked inside, returned as a vouched-for string.
        env.set_auto_escape_callback(|_| AutoEscape::Custom("sql".into()));
        let literals: Arc<BTreeSet<String>> = Arc::new(block_literals(source));
        let checked = self.checked;
        env.set_formatter(move |out, state, value| {
            format_value(out, state, value, checked, &literals)
        });
        self.add_macros(&mut env);
        env
    }

    fn add_macros(&self, env: &mut Environment<'_>) {
        let me = self.clone();
        env.add_function("current_user_id", move |kwargs: Kwargs| {
            let add = flag(&kwargs, "add_to_cache_keys", true)?;
            kwargs.assert_all_used()?;
            Ok(match me.facts.user.id {
                Some(id) => {
                    if add {
                        me.track(|t| t.cache_keys.push(Json::from(id)));
                    }
                    Value::from(id)
                }
                None => Value::from(()),
            })
        });
        for (name, field) in [("current_username", 0u8), ("current_user_email", 1u8)] {
            let me = self.clone();
            env.add_function(name, move |kwargs: Kwargs| {
                let add = flag(&kwargs, "add_to_cache_keys", true)?;
                kwargs.assert_all_used()?;
                let v = match field {
                    0 => me.facts.user.username.clone(),
                    _ => me.facts.user.email.clone(),
                };
                Ok(match v.filter(|s| !s.is_empty()) {
                    Some(s) => {
                        if add {
                            me.track(|t| t.cache_keys.push(Json::from(s.clone())));
                        }
                        Value::from(s)
                    }
                    None => Value::from(()),
                })
            });
        }
        let me = self.clone();
        env.add_function("current_user_roles", move |kwargs: Kwargs| {
            let add = flag(&kwargs, "add_to_cache_keys", true)?;
            kwargs.assert_all_used()?;
            let mut roles = me.facts.user.roles.clone();
            roles.sort();
            if roles.is_empty() {
                return Ok(Value::from(()));
            }
            if add {
                let key = serde_json::to_string(&roles).unwrap_or_default();
                me.track(|t| t.cache_keys.push(Json::from(key)));
            }
            Ok(Value::from(roles))
        });
        let me = self.clone();
        env.add_function("current_user_rls_rules", move || {
            let mut rules = (*me.rls_clauses).clone();
            rules.sort();
            if rules.is_empty() {
                return Value::from(());
            }
            let key = serde_json::to_string(&rules).unwrap_or_default();
            me.track(|t| t.cache_keys.push(Json::from(key)));
            Value::from(rules)
        });
        let me = self.clone();
        env.add_function("cache_key_wrapper", move |key: Value| {
            let json = serde_json::to_value(&key).unwrap_or(Json::Null);
            me.track(|t| t.cache_keys.push(json));
            key
        });
        let me = self.clone();
        env.add_function(
            "url_param",
            move |param: String, default: Option<Value>, kwargs: Kwargs| {
                let add = flag(&kwargs, "add_to_cache_keys", true)?;
                let escape = flag(&kwargs, "escape_result", true)?;
                let default = match default {
                    Some(d) => Some(d),
                    None => kwargs.get::<Option<Value>>("default")?,
                };
                kwargs.assert_all_used()?;
                let given = me.facts.url_params.get(&param).filter(|v| truthy(v));
                let mut result = match given {
                    Some(v) => json_value(v, false),
                    None => default.unwrap_or(Value::from(())),
                };
                if me.facts.escape_url_params
                    && escape
                    && let Some(s) = result.as_str().filter(|s| !s.is_empty())
                {
                    result = Value::from(s.replace('\'', "''"));
                }
                if add {
                    let json = serde_json::to_value(&result).unwrap_or(Json::Null);
                    me.track(|t| t.cache_keys.push(json));
                }
                Ok::<_, MjError>(result)
            },
        );
        let me = self.clone();
        env.add_function(
            "filter_values",
            move |column: String, default: Option<Value>, remove: Option<bool>, kwargs: Kwargs| {
                let default = match default {
                    Some(d) => Some(d),
                    None => kwargs.get::<Option<Value>>("default")?,
                };
                let remove = match remove {
                    Some(r) => r,
                    None => flag(&kwargs, "remove_filter", false)?,
                };
                kwargs.assert_all_used()?;
                let mut out: Vec<Json> = Vec::new();
                for f in me.filters_of(&column, remove) {
                    match f.get("val") {
                        Some(Json::Array(vs)) => out.extend(vs.iter().cloned()),
                        Some(v) if truthy(v) => out.push(v.clone()),
                        _ => {}
                    }
                }
                if out.is_empty()
                    && let Some(d) = default.filter(Value::is_true)
                {
                    return Ok(Value::from(vec![d]));
                }
                Ok::<_, MjError>(Value::from(
                    out.iter().map(|v| json_value(v, false)).collect::<Vec<_>>(),
                ))
            },
        );
        let me = self.clone();
        env.add_function(
            "get_filters",
            move |column: String, remove: Option<bool>, kwargs: Kwargs| {
                let remove = match remove {
                    Some(r) => r,
                    None => flag(&kwargs, "remove_filter", false)?,
                };
                kwargs.assert_all_used()?;
                Ok::<_, MjError>(Value::from(
                    me.filters_of(&column, remove)
                        .iter()
                        .map(|f| json_value(f, false))
                        .collect::<Vec<_>>(),
                ))
            },
        );
        let me = self.clone();
        env.add_function(
            "get_time_filter",
            move |args: Rest<Value>, kwargs: Kwargs| me.time_filter(&args, &kwargs),
        );
        let me = self.clone();
        env.add_function(
            "dataset",
            move |id: i64, args: Rest<Value>, kwargs: Kwargs| me.dataset(id, &args, &kwargs),
        );
        let me = self.clone();
        env.add_function(
            "metric",
            move |name: String, id: Option<i64>, kwargs: Kwargs| {
                let id = match id {
                    Some(i) => Some(i),
                    None => kwargs.get::<Option<i64>>("dataset_id")?,
                };
                kwargs.assert_all_used()?;
                me.metric(&name, id)
            },
        );
        let dialect = self.dialect;
        env.add_filter(
            "where_in",
            move |values: Value, mark: Option<Value>, kwargs: Kwargs| {
                let default_to_none = flag(&kwargs, "default_to_none", false)?;
                let mark = match mark {
                    Some(m) => Some(m),
                    None => kwargs.get::<Option<Value>>("mark")?,
                };
                kwargs.assert_all_used()?;
                where_in(
                    dialect,
                    &values,
                    mark.is_some_and(|m| m.is_true()),
                    default_to_none,
                )
            },
        );
        env.add_filter(
            "to_datetime",
            |value: Option<String>, format: Option<String>| -> Result<Value, MjError> {
                let Some(v) = value.filter(|v| !v.is_empty()) else {
                    return Ok(Value::from(()));
                };
                let fmt = format.unwrap_or_else(|| "%Y-%m-%d %H:%M:%S".into());
                let v = v.trim_matches(|c| c == '\'' || c == '"');
                // Python's strptime: the parts the format leaves out are midnight.
                let mut parsed = chrono::format::Parsed::new();
                chrono::format::parse(&mut parsed, v, chrono::format::StrftimeItems::new(&fmt))
                    .and_then(|()| parsed.to_naive_date())
                    .map(|d| {
                        let t = parsed.to_naive_time().unwrap_or(chrono::NaiveTime::MIN);
                        Value::from(d.and_time(t).format("%Y-%m-%d %H:%M:%S").to_string())
                    })
                    .map_err(|e| {
                        MjError::new(
                            ErrorKind::InvalidOperation,
                            format!("time data '{v}' does not match format '{fmt}': {e}"),
                        )
                    })
            },
        );
        // Jinja2's `tojson`, without minijinja's vouching for its output.
        env.add_filter("tojson", |value: Value| -> Result<Value, MjError> {
            let json = serde_json::to_string(&value).map_err(|e| {
                MjError::new(
                    ErrorKind::InvalidOperation,
                    format!("cannot serialize to JSON: {e}"),
                )
            })?;
            Ok(Value::from(
                json.replace('<', "\\u003c")
                    .replace('>', "\\u003e")
                    .replace('&', "\\u0026")
                    .replace('\'', "\\u0027"),
            ))
        });
    }

    /// Superset's `get_filters`: the request's simple WHERE filters on `column` with a value
    /// (or a null test), marking the column applied (and removed).
    fn filters_of(&self, column: &str, remove: bool) -> Vec<Json> {
        let mut out = Vec::new();
        for f in &self.facts.filters {
            if f.get("col").and_then(Json::as_str) != Some(column) {
                continue;
            }
            let op = f
                .get("op")
                .and_then(Json::as_str)
                .map(str::to_uppercase)
                .unwrap_or_default();
            let mut val = f.get("val").cloned().unwrap_or(Json::Null);
            if !(truthy(&val) || op == "IS NULL" || op == "IS NOT NULL") {
                continue;
            }
            self.track(|t| {
                if remove && !t.removed.iter().any(|c| c == column) {
                    t.removed.push(column.to_owned());
                }
                if !t.applied.iter().any(|c| c == column) {
                    t.applied.push(column.to_owned());
                }
            });
            if (op == "IN" || op == "NOT IN") && !val.is_array() {
                val = Json::Array(vec![val]);
            }
            out.push(serde_json::json!({"op": op, "col": column, "val": val}));
        }
        out
    }

    /// Superset's `get_time_filter(column, default, target_type, strftime, remove_filter)`.
    fn time_filter(&self, args: &[Value], kwargs: &Kwargs) -> Result<Value, MjError> {
        let arg = |i: usize, name: &str| -> Result<Option<String>, MjError> {
            if let Some(v) = args.get(i).filter(|v| !v.is_none() && !v.is_undefined()) {
                return Ok(Some(v.to_string()));
            }
            kwargs.get::<Option<String>>(name)
        };
        let column = arg(0, "column")?;
        let default = arg(1, "default")?;
        let mut target_type = arg(2, "target_type")?;
        let strftime = arg(3, "strftime")?;
        let remove = match args.get(4) {
            Some(v) => v.is_true(),
            None => flag(kwargs, "remove_filter", false)?,
        };
        kwargs.assert_all_used()?;
        let mut time_range = self.facts.time_range.clone();
        if let Some(col) = &column {
            let flt = self.facts.filters.iter().find(|f| {
                f.get("op").and_then(Json::as_str) == Some("TEMPORAL_RANGE")
                    && f.get("col").and_then(Json::as_str) == Some(col.as_str())
            });
            if let Some(flt) = flt {
                self.track(|t| {
                    if remove && !t.removed.iter().any(|c| c == col) {
                        t.removed.push(col.clone());
                    }
                    if !t.applied.iter().any(|c| c == col) {
                        t.applied.push(col.clone());
                    }
                });
                time_range = flt.get("val").and_then(Json::as_str).map(str::to_owned);
                if target_type.is_none() {
                    target_type = self.column_types.get(col).cloned();
                }
            }
        }
        let mut range = time_range
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| timerange::NO_TIME_RANGE.to_owned());
        if range == timerange::NO_TIME_RANGE
            && let Some(d) = default.filter(|d| !d.is_empty())
        {
            range = d;
        }
        let bounds = timerange::get_since_until(
            Some(&range),
            None,
            Relative::Today,
            Relative::Today,
            self.facts.now,
        )
        .map_err(|e| MjError::new(ErrorKind::InvalidOperation, e.to_string()))?;
        let format = |dttm: Option<NaiveDateTime>| -> Result<Value, MjError> {
            let Some(d) = dttm else {
                return Ok(Value::from(()));
            };
            if let Some(f) = &strftime {
                return strftime_of(d, f).map(Value::from_safe_string);
            }
            Ok(
                match self
                    .dialect
                    .convert_dttm(d, target_type.as_deref().unwrap_or(""))
                {
                    Some(sql) => Value::from_safe_string(sql),
                    None => Value::from(()),
                },
            )
        };
        let mut m = std::collections::BTreeMap::new();
        m.insert("from_expr", format(bounds.since)?);
        m.insert("to_expr", format(bounds.until)?);
        m.insert("time_range", Value::from(range));
        Ok(Value::from(m))
    }

    /// Superset's `dataset(id, include_metrics=False, columns=None)`.
    fn dataset(&self, id: i64, args: &[Value], kwargs: &Kwargs) -> Result<Value, MjError> {
        let include_metrics = match args.first() {
            Some(v) => v.is_true(),
            None => flag(kwargs, "include_metrics", false)?,
        };
        let columns = match args.get(1) {
            Some(v) => Some(v.clone()),
            None => kwargs.get::<Option<Value>>("columns")?,
        };
        kwargs.assert_all_used()?;
        let columns = match columns.filter(|c| !c.is_none()) {
            None => None,
            Some(c) => Some(
                c.try_iter()?
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .unwrap_or_else(|| v.to_string())
                    })
                    .collect::<Vec<_>>(),
            ),
        };
        let found = match &self.catalog {
            Some(c) => c.dataset_sql(id, include_metrics, columns, self.depth + 1),
            None => Ok(None),
        };
        match found {
            Ok(Some(sql)) => Ok(Value::from_safe_string(format!(
                "(\n{sql}\n) AS dataset_{id}"
            ))),
            Ok(None) => Err(self.fail(TemplateError::Macro(format!("Dataset {id} not found!")))),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Superset's `metric(metric_key, dataset_id=None)`: the metric's expression, its own
    /// templates rendered.
    fn metric(&self, name: &str, id: Option<i64>) -> Result<Value, MjError> {
        let Some(id) = id.or(self.dataset_id) else {
            return Err(self.fail(TemplateError::Macro(format!(
                "Please specify the Dataset ID for the ``{name}`` metric in the Jinja macro."
            ))));
        };
        let Some((table, metrics)) = self.catalog.as_ref().and_then(|c| c.metrics(id)) else {
            return Err(self.fail(TemplateError::Macro(format!("Dataset ID {id} not found."))));
        };
        let Some((_, expression)) = metrics.iter().find(|(n, _)| n == name) else {
            return Err(self.fail(TemplateError::Macro(format!(
                "Metric ``{name}`` not found in {table}."
            ))));
        };
        let nested = Renderer {
            depth: self.depth + 1,
            ..self.clone()
        };
        match nested.render(expression) {
            Ok(sql) => Ok(Value::from_safe_string(sql)),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Records a macro's refusal (reported as it is) and returns minijinja's error for it.
    fn fail(&self, e: TemplateError) -> MjError {
        let message = e.to_string();
        self.track(|t| {
            if t.failure.is_none() {
                t.failure = Some(e);
            }
        });
        MjError::new(ErrorKind::InvalidOperation, message)
    }
}

/// The SQL grammar of a dialect's engine.
fn sql_dialect(d: Dialect) -> SqlDialect {
    super::sql::sql_dialect(d.engine())
}

fn render_error(kind: &'static str, message: String, line: Option<usize>) -> TemplateError {
    TemplateError::Render {
        kind,
        message,
        line,
        undefined: Vec::new(),
    }
}

/// A JSON value as a template value; `vouched` strings print unchecked (the author's).
fn json_value(v: &Json, vouched: bool) -> Value {
    match v {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) if vouched => Value::from_safe_string(s.clone()),
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(a) => Value::from(a.iter().map(|v| json_value(v, vouched)).collect::<Vec<_>>()),
        Json::Object(o) => Value::from(
            o.iter()
                .map(|(k, v)| (k.clone(), json_value(v, vouched)))
                .collect::<std::collections::BTreeMap<_, _>>(),
        ),
    }
}

fn flag(kwargs: &Kwargs, name: &str, default: bool) -> Result<bool, MjError> {
    Ok(kwargs.get::<Option<bool>>(name)?.unwrap_or(default))
}

/// Python's truthiness of a JSON value.
fn truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Json::String(s) => !s.is_empty(),
        Json::Array(a) => !a.is_empty(),
        Json::Object(o) => !o.is_empty(),
    }
}

/// Prints one `{{ … }}` value: numbers, booleans and none as they are, SQL the macros made
/// and author strings as they are, anything else marked for the literal check (when checking).
fn format_value(
    out: &mut minijinja::Output<'_>,
    _state: &State<'_, '_>,
    value: &Value,
    checked: bool,
    literals: &BTreeSet<String>,
) -> Result<(), MjError> {
    if value.is_undefined() {
        // An `if` without `else` (printing a plain undefined value already failed, naming it).
        return Ok(());
    }
    let write = |out: &mut minijinja::Output<'_>, s: &str| {
        out.write_str(s)
            .map_err(|_| MjError::new(ErrorKind::WriteFailure, "could not write output"))
    };
    if value.is_none() {
        return write(out, "None");
    }
    if matches!(
        value.kind(),
        minijinja::value::ValueKind::Number | minijinja::value::ValueKind::Bool
    ) {
        let text = match value.as_str() {
            Some(s) => s.to_owned(),
            None if value.kind() == minijinja::value::ValueKind::Bool => {
                if value.is_true() { "True" } else { "False" }.to_owned()
            }
            None => value.to_string(),
        };
        return write(out, &text);
    }
    if let Some(s) = value.as_str() {
        if value.is_safe() || !checked || literals.contains(s) {
            return write(out, s);
        }
        // A string already carrying marks (a capture of author text with values inside) keeps
        // them; anything else is marked whole.
        if s.contains(OPEN) {
            return write(out, s);
        }
        let cleaned: String = s.chars().filter(|c| *c != OPEN && *c != CLOSE).collect();
        return write(out, &format!("{OPEN}{cleaned}{CLOSE}"));
    }
    // Lists and maps print as Python does; their strings are the request's.
    let text = value.to_string();
    if !checked {
        return write(out, &text);
    }
    let cleaned: String = text.chars().filter(|c| *c != OPEN && *c != CLOSE).collect();
    write(out, &format!("{OPEN}{cleaned}{CLOSE}"))
}

/// Removes the marks, returning the text and the byte ranges of the marked values in it.
fn unmark(rendered: &str) -> Result<(String, Vec<std::ops::Range<usize>>), TemplateError> {
    let mut clean = String::with_capacity(rendered.len());
    let mut spans = Vec::new();
    let mut open: Option<usize> = None;
    for c in rendered.chars() {
        match (c, open) {
            (OPEN, None) => open = Some(clean.len()),
            (CLOSE, Some(start)) => {
                if clean.len() > start {
                    spans.push(start..clean.len());
                }
                open = None;
            }
            (OPEN | CLOSE, _) => {
                return Err(TemplateError::Unquoted(
                    "a value's bounds were lost while rendering".into(),
                ));
            }
            _ => clean.push(c),
        }
    }
    if open.is_some() {
        return Err(TemplateError::Unquoted(
            "a value's bounds were lost while rendering".into(),
        ));
    }
    Ok((clean, spans))
}

/// The string literals inside a template's `{{ }}` and `{% %}` blocks: text the author wrote,
/// printed as it is.
fn block_literals(source: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = source;
    while let Some(start) = rest.find(['{']) {
        let after = &rest[start..];
        let close = if after.starts_with("{{") {
            "}}"
        } else if after.starts_with("{%") {
            "%}"
        } else {
            rest = &rest[start + 1..];
            continue;
        };
        let body_start = start + 2;
        let Some(len) = rest[body_start..].find(close) else {
            break;
        };
        let body = &rest[body_start..body_start + len];
        let mut chars = body.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if c != '\'' && c != '"' {
                continue;
            }
            let mut lit = String::new();
            let mut closed = false;
            while let Some((_, d)) = chars.next() {
                if d == '\\' {
                    if let Some((_, e)) = chars.next() {
                        lit.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                    }
                } else if d == c {
                    closed = true;
                    break;
                } else {
                    lit.push(d);
                }
            }
            if closed && !lit.is_empty() {
                out.insert(lit);
            }
        }
        rest = &rest[body_start + len + 2..];
    }
    out
}

/// Superset's `WhereInMacro`: `(1, 'Joe''s', 3)`, every value a literal of the dialect.
fn where_in(
    dialect: Dialect,
    values: &Value,
    mark: bool,
    default_to_none: bool,
) -> Result<Value, MjError> {
    let mut parts = Vec::new();
    for v in values.try_iter()? {
        parts.push(literal(dialect, &v)?);
    }
    if parts.is_empty() && default_to_none {
        return Ok(Value::from(()));
    }
    let mut sql = format!("({})", parts.join(", "));
    if mark {
        sql.push_str(
            "\n-- WARNING: the `mark` parameter was removed from the `where_in` macro for \
             security reasons\n",
        );
    }
    Ok(Value::from_safe_string(sql))
}

/// A value as a SQL literal (SQLAlchemy's `literal_binds`).
fn literal(dialect: Dialect, v: &Value) -> Result<String, MjError> {
    use minijinja::value::ValueKind;
    Ok(match v.kind() {
        ValueKind::None | ValueKind::Undefined => "NULL".into(),
        ValueKind::Bool => dialect.boolean(v.is_true()).to_owned(),
        ValueKind::Number => {
            let s = v.to_string();
            if s.parse::<f64>().is_ok_and(f64::is_finite) {
                s
            } else {
                return Err(MjError::new(
                    ErrorKind::InvalidOperation,
                    format!("cannot render {s} as a SQL literal"),
                ));
            }
        }
        ValueKind::String => dialect.string(v.as_str().unwrap_or_default()),
        other => {
            return Err(MjError::new(
                ErrorKind::InvalidOperation,
                format!("where_in cannot render a {other} as a SQL literal"),
            ));
        }
    })
}

/// `datetime.strftime`, refusing a format chrono cannot read instead of panicking.
fn strftime_of(d: NaiveDateTime, fmt: &str) -> Result<String, MjError> {
    use chrono::format::{Item, StrftimeItems};
    let items: Vec<Item<'_>> = StrftimeItems::new(fmt).collect();
    if items.iter().any(|i| matches!(i, Item::Error)) {
        return Err(MjError::new(
            ErrorKind::InvalidOperation,
            format!("invalid strftime format: {fmt}"),
        ));
    }
    let mut s = String::new();
    write!(s, "{}", d.format_with_items(items.into_iter())).map_err(|_| {
        MjError::new(
            ErrorKind::InvalidOperation,
            format!("invalid strftime format: {fmt}"),
        )
    })?;
    Ok(s)
}

/// The undefined name a failed render printed, as minijinja words it ("`name` is undefined").
fn undefined_names(detail: &str) -> Vec<String> {
    if let Some(start) = detail.find('`')
        && let Some(len) = detail[start + 1..].find('`')
    {
        return vec![detail[start + 1..start + 1 + len].to_owned()];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;
    use serde_json::json;

    fn now() -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2025, 6, 15)
            .and_then(|d| d.and_hms_opt(12, 0, 0))
            .expect("date")
    }

    fn renderer(engine: crate::uri::Engine, facts: Facts, checked: bool) -> Renderer {
        let mut r = Renderer::new(
            true,
            Arc::new(facts),
            Dialect::of(engine),
            Budget {
                fuel: 100_000,
                max_bytes: 1 << 16,
            },
        );
        r.checked = checked;
        r
    }

    fn facts() -> Facts {
        let mut f = Facts::neutral(now());
        f.user = UserFacts {
            id: Some(7),
            username: Some("alice".into()),
            email: Some("alice@example.com".into()),
            roles: vec!["Gamma".into(), "Alpha".into()],
        };
        f.url_params = json!({
            "region": "north", "evil": "x' OR '1'='1", "id": "42",
            "nl": "a\nUNION SELECT 1", "close": "*/ OR 1=1 /*",
        })
        .as_object()
        .cloned()
        .expect("map");
        f.filters = vec![
            json!({"col": "region", "op": "IN", "val": ["north", "O'Hara"]}),
            json!({"col": "ds", "op": "TEMPORAL_RANGE", "val": "Last week"}),
            json!({"col": "kind", "op": "==", "val": "a"}),
        ];
        f
    }

    #[test]
    fn user_macros_and_url_params_render_as_superset_does() {
        let r = renderer(crate::uri::Engine::Postgres, facts(), true);
        let sql = r
            .render(
                "SELECT {{ current_user_id() }}, '{{ current_username() }}', \
                 '{{ current_user_email() }}', '{{ url_param('region') }}', \
                 '{{ url_param('evil') }}', {{ url_param('id') }}, \
                 '{{ url_param('missing', 'dflt') }}'",
            )
            .expect("renders");
        assert_eq!(
            sql,
            "SELECT 7, 'alice', 'alice@example.com', 'north', 'x'' OR ''1''=''1', 42, 'dflt'"
        );
        let roles = r
            .render("{% if 'Alpha' in current_user_roles() %}a{% endif %}")
            .expect("renders");
        assert_eq!(roles, "a");
        assert_eq!(
            r.consumed().cache_keys,
            [
                json!(7),
                json!("alice"),
                json!("alice@example.com"),
                json!("north"),
                json!("x'' OR ''1''=''1"),
                json!("42"),
                json!("dflt"),
                json!("[\"Alpha\",\"Gamma\"]")
            ]
        );
    }

    #[test]
    fn filters_are_read_applied_and_removed() {
        let r = renderer(crate::uri::Engine::Postgres, facts(), true);
        let sql = r
            .render(
                "region IN {{ filter_values('region', remove_filter=True)|where_in }} \
                 {% for f in get_filters('kind') %}AND kind {{ '=' if f.op == '==' }} \
                 '{{ f.val }}'{% endfor %} {{ filter_values('none', 'dflt')|where_in }}",
            )
            .expect("renders");
        assert_eq!(
            sql,
            "region IN ('north', 'O''Hara') AND kind = 'a' ('dflt')"
        );
        let t = r.consumed();
        assert_eq!(t.applied, ["region", "kind"]);
        assert_eq!(t.removed, ["region"]);
    }

    #[test]
    fn time_filters_use_the_dialect() {
        let r = renderer(crate::uri::Engine::Postgres, facts(), true);
        let sql = r
            .render(
                "{% set t = get_time_filter('ds', target_type='TIMESTAMP', remove_filter=True) %}\
                 ds >= {{ t.from_expr }} AND ds < {{ t.to_expr }} -- {{ t.time_range }}",
            )
            .expect("renders");
        assert_eq!(
            sql,
            "ds >= TO_TIMESTAMP('2025-06-08 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') AND \
             ds < TO_TIMESTAMP('2025-06-15 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') -- Last week"
        );
        assert_eq!(r.consumed().removed, ["ds"]);
        let r = renderer(crate::uri::Engine::Sqlite, facts(), true);
        let sql = r
            .render(
                "{% set t = get_time_filter('other', default='Last week', target_type='TEXT') %}\
                 {{ t.from_expr }}|{{ get_time_filter(strftime='%Y').to_expr }}",
            )
            .expect("renders");
        assert_eq!(sql, "'2025-06-08 00:00:00'|None");
        // Superset's `convert_dttm` by SQLAlchemy type: SQLite converts strings and datetimes,
        // PostgreSQL dates and datetimes; anything else has no literal.
        let lite = Dialect::of(crate::uri::Engine::Sqlite);
        let pg = Dialect::of(crate::uri::Engine::Postgres);
        for (d, t, some) in [
            (lite, "VARCHAR(10)", true),
            (lite, "DATETIME", true),
            (lite, "DATE", false),
            (lite, "INTEGER", false),
            (pg, "DATE", true),
            (pg, "TIMESTAMP WITH TIME ZONE", true),
            (pg, "TEXT", false),
        ] {
            assert_eq!(d.convert_dttm(now(), t).is_some(), some, "{t}");
        }
    }

    #[test]
    fn request_values_outside_literals_are_refused() {
        let r = renderer(crate::uri::Engine::Postgres, facts(), true);
        for t in [
            "SELECT * FROM t WHERE id = {{ url_param('evil') }}",
            "SELECT * FROM t WHERE r = '{{ filter_values('region')[1] }}'",
            "SELECT * FROM {{ url_param('region') }}",
            "SELECT \"{{ url_param('region') }}\" FROM t",
            "SELECT * FROM t -- {{ url_param('nl') }}\nWHERE 1 = 0",
            "SELECT * FROM t /* {{ url_param('close') }} */",
            "SELECT * FROM t WHERE x IN ({{ \"'\" + \"','\".join(filter_values('region')) + \"'\" }})",
            "SELECT {{ filter_values('region') }}",
            "SELECT * FROM t WHERE r = '{{ url_param('evil')|replace(\"''\", \"'\") }}'",
            // Captures and macros keep the marks of what they print.
            "{% set x %}{{ url_param('evil') }}{% endset %}SELECT {{ x }}",
            "{% set x %}AND {{ url_param('region') }}{% endset %}SELECT 1 WHERE 1=1 {{ x }}",
            "{% macro q(v) %}'{{ v }}'{% endmacro %}SELECT {{ q(filter_values('region')[1]) }}",
            // Transformed values stay the request's.
            "SELECT {{ url_param('region')|upper }}",
            "SELECT {{ url_param('region') ~ '_x' }}",
            "SELECT {{ '%s'|format(url_param('region')) }}",
            "SELECT {{ url_param('region')|tojson }}",
            "SELECT {{ [url_param('region')]|join(',') }}",
        ] {
            let e = r.render(t).expect_err(t);
            assert!(matches!(e, TemplateError::Unquoted(_)), "{t}: {e:?}");
        }
        for (t, want) in [
            (
                "SELECT * FROM t WHERE x IN ({{ \"'\" + \"','\".join(filter_values('kind')) + \"'\" }})",
                "SELECT * FROM t WHERE x IN ('a')",
            ),
            (
                "{% set c = 'region' %}SELECT {{ c }} FROM t",
                "SELECT region FROM t",
            ),
            ("SELECT {{ url_param('id')|int }}", "SELECT 42"),
            ("SELECT {{ url_param('id') }}", "SELECT 42"),
            (
                "{% macro q(v) %}'{{ v }}'{% endmacro %}SELECT {{ q(url_param('evil')) }}",
                "SELECT 'x'' OR ''1''=''1'",
            ),
            (
                "SELECT '{{ url_param('nl') }}'",
                "SELECT 'a\nUNION SELECT 1'",
            ),
            (
                "{% set w %}WHERE r = '{{ url_param('region') }}'{% endset %}SELECT 1 {{ w }}",
                "SELECT 1 WHERE r = 'north'",
            ),
            (
                "SELECT 1 -- {{ url_param('evil') }}",
                "SELECT 1 -- x'' OR ''1''=''1",
            ),
        ] {
            assert_eq!(r.render(t).expect(t), want);
        }
        // SQL Lab: the user writes template and values alike.
        let lab = renderer(crate::uri::Engine::Postgres, facts(), false);
        assert_eq!(
            lab.render("SELECT * FROM {{ url_param('region') }}")
                .expect("renders"),
            "SELECT * FROM north"
        );
    }

    /// The examples of `jinja_context.py`'s docstrings, as Superset renders them.
    #[test]
    fn superset_docstring_examples() {
        let r = renderer(crate::uri::Engine::Postgres, facts(), true);
        let cases = [
            ("{{ [1, \"Joe's\", 3]|where_in }}", "(1, 'Joe''s', 3)"),
            ("{{ []|where_in }}", "()"),
            ("{{ []|where_in(default_to_none=True) }}", "None"),
            (
                "{{ ['a']|where_in(mark=\"'\") }}",
                "('a')\n-- WARNING: the `mark` parameter was removed from the `where_in` macro \
                 for security reasons\n",
            ),
            ("{{ [true, none, 1.5]|where_in }}", "(true, NULL, 1.5)"),
            (
                "{{ '2024-01-02 03:04:05'|to_datetime }}",
                "2024-01-02 03:04:05",
            ),
            (
                "{{ \"'2024-01-02'\"|to_datetime('%Y-%m-%d') }}",
                "2024-01-02 00:00:00",
            ),
            // `get_filters`: the docstring's loop over IN and LIKE.
            (
                "WHERE 1=1\n{%- for filter in get_filters('region', remove_filter=True) -%}\
                 {%- if filter.get('op') == 'IN' -%} AND region IN ( {{ \"'\" + \"', '\".join(filter.get('val')) + \"'\" }} )\
                 {%- endif -%}{%- endfor -%}",
                "WHERE 1=1AND region IN ( 'north', 'O'Hara' )",
            ),
            (
                "{{ filter_values('region')|tojson }}",
                "[\"north\",\"O\\u0027Hara\"]",
            ),
            ("{{ cache_key_wrapper(41) + 1 }}", "42"),
        ];
        for (t, want) in cases {
            let lab = renderer(crate::uri::Engine::Postgres, facts(), false);
            assert_eq!(lab.render(t).expect(t), want, "{t}");
        }
        // SQL Lab prints what the template joins; in charts a quote inside a filter value
        // breaks out of the example's literal, so it is refused (where_in escapes it instead).
        assert!(matches!(
            r.render(cases[7].0),
            Err(TemplateError::Unquoted(_))
        ));
        let sqlite = renderer(crate::uri::Engine::Sqlite, facts(), true);
        assert_eq!(
            sqlite
                .render("{{ [true, false]|where_in }}")
                .expect("renders"),
            "(1, 0)"
        );
    }

    #[test]
    fn hostile_templates_are_contained() {
        let r = renderer(crate::uri::Engine::Postgres, facts(), true);
        for t in [
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
            "{{ 'x' * 100000000 }}",
            "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
            "{% include 'x' %}",
            "{% import 'x' as y %}",
            "{{ url_param.__globals__ }}",
            "{{ ''.__class__.__mro__ }}",
            "{{ self }}",
            "{{ config }}",
            "{{ x }",
            "{{ dataset(1) }}",
            "{{ metric('count') }}",
            "{{ get_time_filter('ds', strftime='%Q%') }}",
            "{{ url_param('x'|safe) }}",
        ] {
            assert!(r.render(t).is_err(), "{t}");
        }
        let e = r.render("a\n{{ 1 + }}").expect_err("syntax");
        assert_eq!(e.line(), Some(2));
        assert_eq!(e.exception_type(), "TemplateSyntaxError");
        let e = r.render("{{ nope }}").expect_err("undefined");
        assert_eq!(e.undefined(), ["nope"]);
        let off = Renderer {
            enabled: false,
            ..r.clone()
        };
        assert_eq!(off.render("{{ 1 }}"), Err(TemplateError::Disabled));
        assert_eq!(off.render("SELECT 1").expect("plain"), "SELECT 1");
    }
}
