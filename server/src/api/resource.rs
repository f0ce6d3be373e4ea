//! FAB's generic `ModelRestApi`, once for every catalog resource: a static [`Spec`] names a
//! resource's list, order, search, related and writable columns, and the functions here turn
//! list/show/_info/related/distinct requests and JSON bodies into store calls and Superset's
//! response shapes. Resource modules add only what is specific to them (computed columns,
//! custom filters, side effects).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{NaiveDateTime, Utc};
use poem_openapi::ApiResponse;
use poem_openapi::payload::Json;
use serde_json::{Map, Value as Json_, json};

use super::error::{ApiError, Fault};
use super::extract::Auth;
use super::listquery::{
    self, FAB_API_MAX_PAGE_SIZE, FAB_DEFAULT_PAGE_SIZE, Filter, ListQuery, QError,
};
use super::wire::{
    Counted, DistinctResponse, DistinctValue, FavoriteStatus, FavoriteStatusResponse, InfoColumn,
    InfoFilter, InfoResponse, InfoValue, Message, RelatedChart, RelatedDashboard, RelatedObjects,
    RelatedResponse, RelatedValue, Reply, ResultOk, Schema, Wire, default_ref_columns,
};
use crate::auth::CurrentUser;
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, Changes, USER_REF};
use crate::store::model::{Field, Kind, Model, Op, Order, Page, Pred, Record};

/// A JSON object response.
pub type JsonValue = Json<Json_>;

/// 201 for creations, 200 otherwise.
#[derive(ApiResponse)]
pub enum Saved {
    /// Created.
    #[oai(status = 201)]
    Created(Json<Json_>),
    /// Updated.
    #[oai(status = 200)]
    Ok(Json<Json_>),
}

/// A body field's wire type and validation (marshmallow's field types).
#[derive(Clone, Copy, Debug)]
pub enum BodyType {
    /// A string with a length range.
    Str(usize, usize),
    /// A string that must hold JSON (or be empty/null).
    JsonStr,
    /// An integer.
    Int,
    /// A boolean.
    Bool,
    /// A list of related ids (a to-many relation), with the 422 message for unknown ones.
    Ids(&'static str),
}

/// One accepted key of a POST/PUT body.
#[derive(Clone, Copy, Debug)]
pub struct BodyField {
    /// The key in the body.
    pub key: &'static str,
    /// The model field it writes (a to-many relation for [`BodyType::Ids`]).
    pub field: &'static str,
    /// Type and validation.
    pub ty: BodyType,
    /// Required on POST.
    pub required: bool,
    /// `null` accepted.
    pub nullable: bool,
}

/// Shorthand for a [`BodyField`] writing the field of the same name.
pub const fn body(key: &'static str, ty: BodyType, required: bool) -> BodyField {
    BodyField {
        key,
        field: key,
        ty,
        required,
        nullable: !required,
    }
}

impl BodyField {
    /// The same field refusing `null` (its column is NOT NULL; marshmallow's default).
    pub const fn not_null(self) -> Self {
        BodyField {
            nullable: false,
            ..self
        }
    }
}

/// A resource's declaration.
pub struct Spec {
    /// Its name in the OpenAPI document (`Chart` gives `ChartList`, `ChartShow`, …).
    pub name: &'static str,
    /// The model.
    pub model: &'static Model,
    /// The view menu its permissions are granted on.
    pub view_menu: &'static str,
    /// What one record is called in messages ("chart": "Deleted 2 charts").
    pub noun: &'static str,
    /// FAB's titles.
    pub list_title: &'static str,
    /// Show title.
    pub show_title: &'static str,
    /// Add title.
    pub add_title: &'static str,
    /// Edit title.
    pub edit_title: &'static str,
    /// Default list columns (dotted names nest).
    pub list_columns: &'static [&'static str],
    /// Default show columns.
    pub show_columns: &'static [&'static str],
    /// Columns clients may order by (model field names).
    pub order_columns: &'static [&'static str],
    /// Searchable columns with their custom operators `(opr, name)`; generic operators come
    /// from the model field's type.
    pub search: &'static [(&'static str, &'static [(&'static str, &'static str)])],
    /// Order when none is requested.
    pub base_order: Option<(&'static str, bool)>,
    /// Page size cap (`-1`: unpaginated allowed).
    pub max_page_size: i64,
    /// Accepted body keys.
    pub body: &'static [BodyField],
    /// Columns of `related/<col>`.
    pub related: &'static [&'static str],
    /// Columns of `distinct/<col>`.
    pub distinct: &'static [&'static str],
    /// Permissions the API defines (for `_info`).
    pub permissions: &'static [&'static str],
    /// The types of the columns the resource computes itself (its `computed` function), for
    /// the document; model fields are typed by the model.
    pub computed: &'static [(&'static str, Wire)],
}

// ------------------------------------------------------------------------------------------
// Rendering

/// A timestamp as marshmallow renders a naive datetime.
pub fn iso(t: NaiveDateTime) -> String {
    if t.and_utc().timestamp_subsec_micros() == 0 {
        t.format("%Y-%m-%dT%H:%M:%S").to_string()
    } else {
        t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
    }
}

/// A store value as JSON.
pub fn value_json(v: &Value) -> Json_ {
    match v {
        Value::Null | Value::Bytes(_) => Json_::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::Text(s) => json!(s),
        Value::Timestamp(t) => json!(iso(*t)),
    }
}

/// Python `humanize.naturaltime` for a past moment, as Superset's `*_delta_humanized`.
pub fn humanize(t: NaiveDateTime) -> String {
    let secs = (Utc::now().naive_utc() - t).num_seconds().max(0);
    let plural = |n: i64, one: &str, many: &str| {
        if n == 1 {
            format!("{one} ago")
        } else {
            format!("{n} {many} ago")
        }
    };
    match secs {
        0 => "now".into(),
        1..=59 => plural(secs, "a second", "seconds"),
        60..=3599 => plural(secs / 60, "a minute", "minutes"),
        3600..=86_399 => plural(secs / 3600, "an hour", "hours"),
        _ => {
            let days = secs / 86_400;
            match days {
                0..=29 => plural(days, "a day", "days"),
                30..=364 => plural((days / 30).max(1), "a month", "months"),
                _ => plural(days / 365, "a year", "years"),
            }
        }
    }
}

fn user_name(r: &Record) -> Json_ {
    let name = format!("{} {}", r.text("first_name"), r.text("last_name"));
    json!(name.trim())
}

/// The computed columns every audited resource shares.
pub fn common_computed(rec: &Record, col: &str) -> Option<Json_> {
    let time = |f: &str| rec.get::<NaiveDateTime>(f);
    Some(match col {
        "changed_on_delta_humanized" => time("changed_on")
            .map(humanize)
            .map_or(Json_::Null, |s| json!(s)),
        "created_on_delta_humanized" => time("created_on")
            .map(humanize)
            .map_or(Json_::Null, |s| json!(s)),
        "changed_on_utc" => time("changed_on").map_or(Json_::Null, |t| {
            json!(t.format("%Y-%m-%dT%H:%M:%S%.6f+0000").to_string())
        }),
        "changed_on_dttm" => time("changed_on").map_or(Json_::Null, |t| {
            #[allow(clippy::cast_precision_loss, reason = "epoch ms fit a double")]
            let ms = t.and_utc().timestamp_millis() as f64;
            json!(ms)
        }),
        "changed_by_name" => rec.one("changed_by").map_or(json!(""), user_name),
        "created_by_name" => rec.one("created_by").map_or(json!(""), user_name),
        _ => return None,
    })
}

/// Renders the wanted columns of a record; dotted names become nested objects (arrays for
/// to-many relations). `computed` answers resource-specific columns first.
pub fn render(
    model: &Model,
    rec: &Record,
    columns: &[&str],
    computed: &(dyn Fn(&Record, &str) -> Option<Json_> + Sync),
) -> Json_ {
    let mut out = Map::new();
    let mut nested: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for col in columns {
        if let Some(v) = computed(rec, col) {
            out.insert((*col).to_owned(), v);
            continue;
        }
        if let Some((head, tail)) = col.split_once('.')
            && matches!(
                model.field(head),
                Some(Field::ToOne { .. } | Field::ToMany { .. })
            )
        {
            nested.entry(head).or_default().push(tail);
            continue;
        }
        match model.field(col) {
            Some(Field::ToOne { target, .. }) => {
                let sub = default_ref_columns(target);
                out.insert(
                    (*col).to_owned(),
                    rec.one(col)
                        .map_or(Json_::Null, |r| render(target, r, &sub, &|_, _| None)),
                );
            }
            Some(Field::ToMany { target, .. }) => {
                let sub = default_ref_columns(target);
                out.insert(
                    (*col).to_owned(),
                    Json_::Array(
                        rec.related(col)
                            .iter()
                            .map(|r| render(target, r, &sub, &|_, _| None))
                            .collect(),
                    ),
                );
            }
            _ => {
                let v = rec
                    .values
                    .get(*col)
                    .map(value_json)
                    .or_else(|| (*col == "id").then(|| json!(rec.id)))
                    .or_else(|| common_computed(rec, col))
                    .unwrap_or(Json_::Null);
                out.insert((*col).to_owned(), v);
            }
        }
    }
    for (head, subs) in nested {
        let Some(field) = model.field(head) else {
            continue;
        };
        let (Field::ToOne { target, .. } | Field::ToMany { target, .. }) = field else {
            continue;
        };
        let one = |r: &Record| render(target, r, &subs, &|_, _| None);
        let v = match field {
            Field::ToOne { .. } => rec.one(head).map_or(Json_::Null, one),
            _ => Json_::Array(rec.related(head).iter().map(one).collect()),
        };
        out.insert(head.to_owned(), v);
    }
    Json_::Object(out)
}

/// FAB's label: `re.sub("[._]", " ", col).title()`.
pub fn label(col: &str) -> String {
    col.split(['.', '_'])
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or(String::new(), |f| {
                f.to_uppercase().collect::<String>() + &c.as_str().to_lowercase()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn labels(cols: &[&str]) -> Json_ {
    Json_::Object(
        cols.iter()
            .map(|c| ((*c).to_owned(), json!(label(c))))
            .collect(),
    )
}

/// Computed columns made from a relation, and that relation: asking for the column loads it.
const DERIVED_FROM: &[(&str, &str)] = &[
    ("changed_by_name", "changed_by"),
    ("created_by_name", "created_by"),
    // A chart's dataset name and uuid (the dashboard editor's chart cards show the name).
    ("datasource_name_text", "table"),
    ("datasource_uuid", "table"),
];

/// Relations a set of columns needs loaded.
pub fn relations_for(model: &Model, columns: &[&str]) -> Vec<&'static str> {
    let mut rels: Vec<&'static str> = model
        .fields
        .iter()
        .filter(|(name, f)| {
            matches!(f, Field::ToOne { .. } | Field::ToMany { .. })
                && columns.iter().any(|c| {
                    *c == *name
                        || c.strip_prefix(*name).is_some_and(|r| r.starts_with('.'))
                        || DERIVED_FROM.contains(&(*c, *name))
                })
        })
        .map(|(n, _)| *n)
        .collect();
    rels.dedup();
    rels
}

// ------------------------------------------------------------------------------------------
// Filters

/// FAB's name of each generic operator.
fn op_of(opr: &str) -> Option<(Op, &'static str)> {
    Some(match opr {
        "eq" => (Op::Eq, "Equal to"),
        "neq" => (Op::Neq, "Not Equal to"),
        "gt" => (Op::Gt, "Greater than"),
        "lt" => (Op::Lt, "Smaller than"),
        "sw" => (Op::StartsWith, "Starts with"),
        "nsw" => (Op::NotStartsWith, "Not Starts With"),
        "ew" => (Op::EndsWith, "Ends with"),
        "new" => (Op::NotEndsWith, "Not Ends With"),
        "ct" => (Op::Contains, "Contains"),
        "nct" => (Op::NotContains, "Not Contains"),
        "in" => (Op::In, "One of"),
        "not_in" => (Op::NotIn, "Not One of"),
        "rel_o_m" => (Op::RelOneToMany, "Relation"),
        "nrel_o_m" => (Op::NotRelOneToMany, "No Relation"),
        "rel_m_m" => (Op::RelManyToMany, "Relation as Many"),
        _ => return None,
    })
}

/// The generic operators valid for a model field.
pub fn generic_ops(model: &Model, col: &str) -> &'static [&'static str] {
    match model.field(col) {
        Some(Field::ToOne { .. }) => &["rel_o_m", "nrel_o_m"],
        Some(Field::ToMany { .. }) => &["rel_m_m"],
        Some(Field::Column { kind, .. } | Field::Computed { kind, .. }) => match kind {
            Kind::Text => &[
                "sw", "nsw", "ew", "new", "ct", "nct", "eq", "neq", "in", "not_in",
            ],
            Kind::Int | Kind::Float => &["eq", "neq", "gt", "lt", "in", "not_in"],
            Kind::Time => &["eq", "neq", "gt", "lt"],
            Kind::Bool => &["eq", "neq"],
        },
        None => &[],
    }
}

fn invalid_value(col: &str) -> ApiError {
    ApiError::bad_request(format!(
        "Not a valid rison argument for filter column: {col}"
    ))
}

/// Converts a filter value to the field's type.
pub fn coerce(kind: Option<Kind>, col: &str, v: &Json_) -> Result<Value, ApiError> {
    Ok(match (kind, v) {
        (_, Json_::Null) => Value::Null,
        (Some(Kind::Int) | None, Json_::Number(n)) => n
            .as_i64()
            .map(Value::Int)
            .or_else(|| n.as_f64().map(Value::Float))
            .ok_or_else(|| invalid_value(col))?,
        (Some(Kind::Int) | None, Json_::String(s)) => {
            Value::Int(s.trim().parse().map_err(|_| invalid_value(col))?)
        }
        (Some(Kind::Float), Json_::Number(n)) => {
            Value::Float(n.as_f64().ok_or_else(|| invalid_value(col))?)
        }
        (Some(Kind::Float), Json_::String(s)) => {
            Value::Float(s.trim().parse().map_err(|_| invalid_value(col))?)
        }
        (Some(Kind::Bool), Json_::Bool(b)) => Value::Bool(*b),
        (Some(Kind::Bool), Json_::String(s)) => match s.to_ascii_lowercase().as_str() {
            "true" | "1" | "t" | "y" | "yes" => Value::Bool(true),
            "false" | "0" | "f" | "n" | "no" => Value::Bool(false),
            _ => return Err(invalid_value(col)),
        },
        (Some(Kind::Bool), Json_::Number(n)) => Value::Bool(n.as_i64().unwrap_or(0) != 0),
        (Some(Kind::Text), Json_::String(s)) => Value::Text(s.clone()),
        (Some(Kind::Text), Json_::Number(n)) => Value::Text(n.to_string()),
        (Some(Kind::Text), Json_::Bool(b)) => Value::Text(b.to_string()),
        (Some(Kind::Time), Json_::String(s)) => {
            let t = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
                .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f"))
                .or_else(|_| {
                    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                        .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default())
                })
                .map_err(|_| invalid_value(col))?;
            Value::Timestamp(t)
        }
        _ => return Err(invalid_value(col)),
    })
}

/// A resource's custom filter: `(filter, user) → predicate`.
pub type Custom<'a> = &'a (dyn Fn(&Filter, Option<&CurrentUser>) -> Result<Pred, ApiError> + Sync);

/// Turns a list request's filters into one predicate, with FAB's 400s for columns and
/// operators the resource does not allow.
pub fn filters_pred(
    spec: &Spec,
    filters: &[Filter],
    user: Option<&CurrentUser>,
    custom: Custom<'_>,
) -> Result<Pred, ApiError> {
    let mut preds = Vec::new();
    for f in filters {
        let Some((_, customs)) = spec.search.iter().find(|(c, _)| *c == f.col) else {
            return Err(ApiError::bad_request(
                QError::FilterColumnNotAllowed(f.col.clone()).message(),
            ));
        };
        if customs.iter().any(|(o, _)| *o == f.opr) {
            preds.push(custom(f, user)?);
            continue;
        }
        let allowed = generic_ops(spec.model, &f.col);
        let op = op_of(&f.opr).filter(|_| allowed.contains(&f.opr.as_str()));
        let Some((op, _)) = op else {
            return Err(ApiError::bad_request(
                QError::FilterOperationNotAllowed {
                    col: f.col.clone(),
                    opr: f.opr.clone(),
                }
                .message(),
            ));
        };
        let kind = spec.model.kind(&f.col);
        let rel = matches!(
            op,
            Op::RelOneToMany | Op::NotRelOneToMany | Op::RelManyToMany
        );
        let kind = if rel { Some(Kind::Int) } else { kind };
        let pred = match (&f.value, op) {
            (Json_::Array(items), Op::In | Op::NotIn) => {
                let values = items
                    .iter()
                    .map(|v| coerce(kind, &f.col, v))
                    .collect::<Result<Vec<_>, _>>()?;
                let preds = values
                    .into_iter()
                    .map(|v| Pred::field(spec.model, &f.col, Op::Eq, v))
                    .collect::<Result<Vec<_>, _>>()?;
                if op == Op::In {
                    Pred::Or(preds)
                } else {
                    Pred::Not(Box::new(Pred::Or(preds)))
                }
            }
            (Json_::Array(_), _) => return Err(invalid_value(&f.col)),
            (v, _) => Pred::field(spec.model, &f.col, op, coerce(kind, &f.col, v)?)?,
        };
        preds.push(pred);
    }
    Ok(Pred::And(preds))
}

// ------------------------------------------------------------------------------------------
// Generic endpoints

fn q_error(e: &QError) -> ApiError {
    ApiError::bad_request(e.message())
}

/// Parses `q` of a list request.
pub fn list_query(q: Option<&str>) -> Result<ListQuery, ApiError> {
    listquery::parse_list_query(q).map_err(|e| q_error(&e))
}

/// The requested `columns` (or `select_columns`) that the resource offers, in request order;
/// all of `offered` when none is requested or none survives (FAB prunes unknown names).
fn wanted<'a>(
    columns: &'a Option<Vec<String>>,
    select_columns: &'a Option<Vec<String>>,
    offered: &'static [&'static str],
) -> Vec<&'a str> {
    let requested: Vec<&str> = columns
        .as_ref()
        .or(select_columns.as_ref())
        .map(|c| {
            c.iter()
                .map(String::as_str)
                .filter(|c| offered.contains(c))
                .collect()
        })
        .unwrap_or_default();
    if requested.is_empty() {
        offered.to_vec()
    } else {
        requested
    }
}

/// `GET /<res>/`: FAB's list with the resource's base `scope`.
pub async fn list<S: Schema>(
    state: &AppState,
    spec: &Spec,
    q: Option<&str>,
    user: Option<&CurrentUser>,
    scope: Pred,
    custom: Custom<'_>,
    computed: &(dyn Fn(&Record, &str) -> Option<Json_> + Sync),
) -> Result<Reply<S>, ApiError> {
    debug_assert_schema_of::<S>(spec);
    let lq = list_query(q)?;
    let columns = wanted(&lq.columns, &lq.select_columns, spec.list_columns);
    let order = match lq.order() {
        Some((col, dir)) => {
            if !spec.order_columns.contains(&col) {
                return Err(q_error(&QError::InvalidOrderColumn(col.to_owned())));
            }
            Some(Order {
                field: col,
                desc: dir == listquery::OrderDirection::Desc,
            })
        }
        None => spec.base_order.map(|(field, desc)| Order { field, desc }),
    };
    let order = order.map(|o| Order {
        field: if o.field == "changed_on_delta_humanized" {
            "changed_on"
        } else {
            o.field
        },
        desc: o.desc,
    });
    let size =
        listquery::effective_page_size(lq.page_size, FAB_DEFAULT_PAGE_SIZE, spec.max_page_size);
    let page = size.map(|s| Page {
        index: lq.page_index(),
        size: u64::try_from(s.max(1)).unwrap_or(1),
    });
    let pred = Pred::And(vec![scope, filters_pred(spec, &lq.filters, user, custom)?]);
    let (count, ids) = state.store.list_ids(spec.model, &pred, order, page).await?;
    let rels = relations_for(spec.model, &columns);
    let records = state.store.load(spec.model, &ids, &rels).await?;
    let result: Vec<Json_> = records
        .iter()
        .map(|r| render(spec.model, r, &columns, computed))
        .collect();
    let mut out = Map::new();
    out.insert("count".into(), json!(count));
    out.insert("ids".into(), json!(ids));
    out.insert("result".into(), Json_::Array(result));
    if lq.wants_key("list_columns") {
        out.insert("list_columns".into(), json!(columns));
    }
    if lq.wants_key("order_columns") {
        out.insert("order_columns".into(), json!(spec.order_columns));
    }
    if lq.wants_key("label_columns") {
        out.insert("label_columns".into(), labels(&columns));
    }
    if lq.wants_key("description_columns") {
        out.insert("description_columns".into(), json!({}));
    }
    if lq.wants_key("list_title") {
        out.insert("list_title".into(), json!(spec.list_title));
    }
    Ok(Reply::new(Json_::Object(out)))
}

/// The schema a generic handler documents its answer with belongs to the resource it serves.
fn debug_assert_schema_of<S: Schema>(spec: &Spec) {
    debug_assert!(
        S::name().starts_with(spec.name),
        "{} for {}",
        S::name(),
        spec.name
    );
}

/// `GET /<res>/<pk>`: FAB's show of an already authorised record.
pub async fn show<S: Schema>(
    state: &AppState,
    spec: &Spec,
    id: i64,
    q: Option<&str>,
    computed: &(dyn Fn(&Record, &str) -> Option<Json_> + Sync),
) -> Result<Reply<S>, ApiError> {
    debug_assert_schema_of::<S>(spec);
    let iq = listquery::parse_item_query(q).map_err(|e| q_error(&e))?;
    let columns = wanted(&iq.columns, &iq.select_columns, spec.show_columns);
    let rels = relations_for(spec.model, &columns);
    let rec = state.store.load_one(spec.model, id, &rels).await?;
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    out.insert(
        "result".into(),
        render(spec.model, &rec, &columns, computed),
    );
    if iq.wants_key("show_columns") {
        out.insert("show_columns".into(), json!(columns));
    }
    if iq.wants_key("label_columns") {
        out.insert("label_columns".into(), labels(&columns));
    }
    if iq.wants_key("description_columns") {
        out.insert("description_columns".into(), json!({}));
    }
    if iq.wants_key("show_title") {
        out.insert("show_title".into(), json!(spec.show_title));
    }
    Ok(Reply::new(Json_::Object(out)))
}

fn body_type_name(ty: BodyType) -> &'static str {
    match ty {
        BodyType::Str(..) | BodyType::JsonStr => "String",
        BodyType::Int => "Integer",
        BodyType::Bool => "Boolean",
        BodyType::Ids(_) => "Related",
    }
}

/// `GET /<res>/_info`.
pub async fn info(
    state: &AppState,
    spec: &Spec,
    q: Option<&str>,
    user: &CurrentUser,
) -> Result<Json<InfoResponse>, ApiError> {
    let iq = listquery::parse_info_query(q).map_err(|e| q_error(&e))?;
    let mut out = InfoResponse::default();
    if iq.wants_key("permissions") {
        out.permissions = Some(
            spec.permissions
                .iter()
                .filter(|p| user.has(p, spec.view_menu))
                .map(|p| (*p).to_owned())
                .collect(),
        );
    }
    if iq.wants_key("filters") {
        let mut filters = BTreeMap::new();
        for (col, customs) in spec.search {
            let mut ops: Vec<InfoFilter> = customs
                .iter()
                .map(|(o, n)| InfoFilter {
                    name: (*n).to_owned(),
                    operator: (*o).to_owned(),
                })
                .collect();
            for o in generic_ops(spec.model, col) {
                if let Some((_, name)) = op_of(o) {
                    ops.push(InfoFilter {
                        name: name.to_owned(),
                        operator: (*o).to_owned(),
                    });
                }
            }
            filters.insert((*col).to_owned(), ops);
        }
        out.filters = Some(filters);
    }
    for (key, pages) in [
        ("add_columns", &iq.add_columns),
        ("edit_columns", &iq.edit_columns),
    ] {
        if !iq.wants_key(key) {
            continue;
        }
        let mut cols = Vec::new();
        for f in spec.body {
            let mut c = InfoColumn {
                name: f.key.to_owned(),
                label: label(f.key),
                description: String::new(),
                ty: body_type_name(f.ty).to_owned(),
                required: f.required && key == "add_columns",
                unique: false,
                validate: None,
                count: None,
                values: None,
            };
            if let BodyType::Str(min, max) = f.ty {
                c.validate = Some(vec![format!(
                    "<Length(min={min}, max={max}, equal=None, error=None)>"
                )]);
            }
            if matches!(f.ty, BodyType::Ids(_)) && spec.related.contains(&f.key) {
                let p = pages.get(f.key).copied().unwrap_or_default();
                let (count, values) =
                    related_values(state, user, spec, f.key, "", &[], p.page, p.page_size).await?;
                c.count = Some(count);
                c.values = Some(
                    values
                        .into_iter()
                        .map(|v| InfoValue {
                            id: v.value,
                            value: v.text,
                        })
                        .collect(),
                );
            }
            cols.push(c);
        }
        if key == "add_columns" {
            out.add_columns = Some(cols);
        } else {
            out.edit_columns = Some(cols);
        }
    }
    if iq.wants_key("add_title") {
        out.add_title = Some(spec.add_title.to_owned());
    }
    if iq.wants_key("edit_title") {
        out.edit_title = Some(spec.edit_title.to_owned());
    }
    Ok(Json(out))
}

/// The records of `target` within the user's reach: Superset's base filters of the catalog
/// objects (`DatabaseFilter`, `DatasourceFilter`, `ChartFilter`, `DashboardAccessFilter`),
/// which its `base_related_field_filters` also apply to `related/<col>` and `_info`, so a
/// relation never names an object its list would hide. Other models are not scoped here.
pub fn reach_scope(user: &CurrentUser, target: &Model) -> Pred {
    let g = user.grants();
    match target.table {
        "dbs" => catalog::database_scope(g),
        "tables" => catalog::dataset_scope(g),
        "slices" => catalog::chart_scope(g),
        "dashboards" => catalog::dashboard_scope(g, user.is_admin()),
        _ => Pred::all(),
    }
}

#[allow(clippy::too_many_arguments)]
async fn related_values(
    state: &AppState,
    user: &CurrentUser,
    spec: &Spec,
    col: &str,
    filter: &str,
    include: &[i64],
    page: Option<u64>,
    page_size: Option<i64>,
) -> Result<(i64, Vec<RelatedValue>), ApiError> {
    let target = match spec.model.field(col) {
        Some(Field::ToOne { target, .. } | Field::ToMany { target, .. }) => *target,
        _ => return Err(ApiError::not_found()),
    };
    let size =
        listquery::effective_page_size(page_size, FAB_DEFAULT_PAGE_SIZE, FAB_API_MAX_PAGE_SIZE)
            .unwrap_or(FAB_API_MAX_PAGE_SIZE);
    let page = Page {
        index: page.unwrap_or(0),
        size: u64::try_from(size.max(1)).unwrap_or(1),
    };
    if target.table == USER_REF.table {
        let (count, ids) = state.store.related_users(filter, include, page).await?;
        let users = state.store.load(&USER_REF, &ids, &[]).await?;
        let values = users
            .iter()
            .map(|u| RelatedValue {
                value: u.id,
                text: user_name(u).as_str().unwrap_or_default().to_owned(),
                extra: poem_openapi::types::Any(
                    json!({"email": u.text("email"), "active": u.flag("active")}),
                ),
            })
            .collect();
        return Ok((count, values));
    }
    let label_field = [
        "database_name",
        "name",
        "dashboard_title",
        "slice_name",
        "table_name",
    ]
    .into_iter()
    .find(|f| target.field(f).is_some())
    .ok_or_else(ApiError::not_found)?;
    let mut pred = reach_scope(user, target);
    if !filter.is_empty() {
        pred = Pred::And(vec![
            pred,
            Pred::field(
                target,
                label_field,
                Op::Contains,
                Value::Text(filter.into()),
            )?,
        ]);
    }
    let (count, ids) = state
        .store
        .list_ids(
            target,
            &pred,
            Some(Order {
                field: label_field,
                desc: false,
            }),
            Some(page),
        )
        .await?;
    let recs = state.store.load(target, &ids, &[]).await?;
    Ok((
        count,
        recs.iter()
            .map(|r| RelatedValue {
                value: r.id,
                // A dataset reads as Superset's `str(table)`: `schema.table_name`.
                text: match r.get::<String>("schema").filter(|s| !s.is_empty()) {
                    Some(schema) if label_field == "table_name" => {
                        format!("{schema}.{}", r.text(label_field))
                    }
                    _ => r.text(label_field).to_owned(),
                },
                extra: poem_openapi::types::Any(json!({})),
            })
            .collect(),
    ))
}

/// `GET /<res>/related/<col>`.
pub async fn related(
    state: &AppState,
    spec: &Spec,
    col: &str,
    q: Option<&str>,
    user: &CurrentUser,
) -> Result<Json<RelatedResponse>, ApiError> {
    if !spec.related.contains(&col) {
        return Err(ApiError::not_found());
    }
    let v = listquery::decode_q(q).map_err(|e| q_error(&e))?;
    let filter = v.get("filter").and_then(Json_::as_str).unwrap_or("");
    let page = v.get("page").and_then(Json_::as_u64);
    let page_size = v.get("page_size").and_then(Json_::as_i64);
    let include: Vec<i64> = v
        .get("include_ids")
        .and_then(Json_::as_array)
        .map(|a| a.iter().filter_map(Json_::as_i64).collect())
        .unwrap_or_default();
    if page.is_some() && !include.is_empty() {
        return Err(ApiError::message(
            Fault::Unprocessable,
            "include_ids is not compatible with page",
        ));
    }
    let (count, result) =
        related_values(state, user, spec, col, filter, &include, page, page_size).await?;
    Ok(Json(RelatedResponse { count, result }))
}

/// `GET /<res>/distinct/<col>`.
pub async fn distinct(
    state: &AppState,
    spec: &Spec,
    col: &str,
    q: Option<&str>,
    scope: Pred,
) -> Result<Json<DistinctResponse>, ApiError> {
    if !spec.distinct.contains(&col) {
        return Err(ApiError::not_found());
    }
    let v = listquery::decode_q(q).map_err(|e| q_error(&e))?;
    let filter = v.get("filter").and_then(Json_::as_str).unwrap_or("");
    let size = listquery::effective_page_size(
        v.get("page_size").and_then(Json_::as_i64),
        FAB_DEFAULT_PAGE_SIZE,
        FAB_API_MAX_PAGE_SIZE,
    )
    .unwrap_or(FAB_API_MAX_PAGE_SIZE);
    let page = Page {
        index: v.get("page").and_then(Json_::as_u64).unwrap_or(0),
        size: u64::try_from(size.max(1)).unwrap_or(1),
    };
    let (count, values) = state
        .store
        .distinct(spec.model, col, filter, &scope, page)
        .await?;
    let result = values
        .iter()
        .map(|v| DistinctValue {
            text: poem_openapi::types::Any(value_json(v)),
            value: poem_openapi::types::Any(value_json(v)),
        })
        .collect();
    Ok(Json(DistinctResponse { count, result }))
}

/// Parses the ids of a bulk delete (`?q=!(1,2)`).
pub fn ids_query(q: Option<&str>) -> Result<Vec<i64>, ApiError> {
    listquery::parse_ids(q).map_err(|e| q_error(&e))
}

// ------------------------------------------------------------------------------------------
// Bodies

fn field_error(errors: &mut Map<String, Json_>, key: &str, msg: &str) {
    errors.insert(key.to_owned(), json!([msg]));
}

/// Validates a POST (`create`) or PUT body against the spec's fields, marshmallow-style,
/// and returns the changes it makes. Unknown keys are ignored (Superset's database and
/// dataset schemas do the same, and clients send extra keys).
pub fn changes_from_body(spec: &Spec, body: &Json_, create: bool) -> Result<Changes, ApiError> {
    let Some(obj) = body.as_object() else {
        return Err(ApiError::fields(
            Fault::BadRequest,
            json!({"_schema": ["Invalid input type."]}),
        ));
    };
    let mut errors = Map::new();
    let mut changes = Changes::default();
    for f in spec.body {
        let Some(v) = obj.get(f.key) else {
            if create && f.required {
                field_error(&mut errors, f.key, "Missing data for required field.");
            }
            continue;
        };
        if v.is_null() {
            if f.nullable {
                if matches!(f.ty, BodyType::Ids(_)) {
                    changes.link(f.field, vec![]);
                } else {
                    changes.set(f.field, Value::Null);
                }
            } else {
                field_error(&mut errors, f.key, "Field may not be null.");
            }
            continue;
        }
        match f.ty {
            BodyType::Str(min, max) => match v.as_str() {
                Some(s) if s.chars().count() < min || s.chars().count() > max => field_error(
                    &mut errors,
                    f.key,
                    &format!("Length must be between {min} and {max}."),
                ),
                Some(s) => changes.set(f.field, s),
                None => field_error(&mut errors, f.key, "Not a valid string."),
            },
            BodyType::JsonStr => match v.as_str() {
                Some("") => changes.set(f.field, ""),
                Some(s) if serde_json::from_str::<Json_>(s).is_ok() => changes.set(f.field, s),
                Some(_) => field_error(&mut errors, f.key, "JSON not valid"),
                None => field_error(&mut errors, f.key, "Not a valid string."),
            },
            BodyType::Int => match v.as_i64() {
                Some(i) => changes.set(f.field, i),
                None => field_error(&mut errors, f.key, "Not a valid integer."),
            },
            BodyType::Bool => match v.as_bool() {
                Some(b) => changes.set(f.field, b),
                None => field_error(&mut errors, f.key, "Not a valid boolean."),
            },
            BodyType::Ids(_) => match v.as_array() {
                Some(items) => {
                    let ids: Option<Vec<i64>> = items.iter().map(Json_::as_i64).collect();
                    match ids {
                        Some(ids) => changes.link(f.field, ids),
                        None => field_error(&mut errors, f.key, "Not a valid integer."),
                    }
                }
                None => field_error(&mut errors, f.key, "Not a valid list."),
            },
        }
    }
    if errors.is_empty() {
        Ok(changes)
    } else {
        Err(ApiError::fields(Fault::BadRequest, Json_::Object(errors)))
    }
}

/// The accepted body echoed back as `result`, Superset-style (only the keys it accepted).
pub fn echo(spec: &Spec, body: &Json_) -> Json_ {
    let mut out = Map::new();
    if let Some(obj) = body.as_object() {
        for f in spec.body {
            if let Some(v) = obj.get(f.key) {
                out.insert(f.key.to_owned(), v.clone());
            }
        }
    }
    Json_::Object(out)
}

/// 422 `{"message": {"owners": ["Owners are invalid"]}}` when a body's related ids (every
/// [`BodyType::Ids`] field) name records that do not exist.
pub async fn check_links(state: &AppState, spec: &Spec, changes: &Changes) -> Result<(), ApiError> {
    for f in spec.body {
        let BodyType::Ids(message) = f.ty else {
            continue;
        };
        let Some((_, ids)) = changes.links.iter().find(|(n, _)| *n == f.field) else {
            continue;
        };
        let Some(Field::ToMany { target, .. }) = spec.model.field(f.field) else {
            continue;
        };
        let found = state.store.existing(target, ids).await?;
        if ids.iter().any(|i| !found.contains(i)) {
            return Err(ApiError::fields(
                Fault::Unprocessable,
                json!({ f.key: [message] }),
            ));
        }
    }
    Ok(())
}

/// The creator always owns what they create (Superset adds them to `owners`).
pub fn with_creator(changes: &mut Changes, user_id: i64) {
    let mut owners = changes
        .links
        .iter()
        .find(|(n, _)| *n == "owners")
        .map(|(_, ids)| ids.clone())
        .unwrap_or_default();
    if !owners.contains(&user_id) {
        owners.push(user_id);
    }
    changes.link("owners", owners);
}

/// Whether the caller holds `(perm, view)`, for decisions that are not a whole endpoint's
/// (what an import may create); the same check as [`authorized`].
pub async fn may(state: &AppState, auth: &Auth, perm: &str, view: &str) -> Result<bool, ApiError> {
    match state.auth.authorize(&auth.principal, perm, view).await {
        Ok(()) => Ok(true),
        Err(crate::auth::Error::Forbidden) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Superset's `populate_owner_list` on update: a non-admin who sets `owners` stays among
/// them, so nobody but an admin can give an object away (or orphan it) by mistake.
pub fn keep_owner(changes: &mut Changes, user: &CurrentUser) {
    if user.is_admin() {
        return;
    }
    if let Some((_, ids)) = changes.links.iter_mut().find(|(n, _)| *n == "owners")
        && !ids.contains(&user.user.id)
    {
        ids.push(user.user.id);
    }
}

/// Authorizes `(perm, view)` for the caller and returns the user (FAB's `@protect`).
pub async fn authorized(
    state: &AppState,
    auth: &Auth,
    perm: &str,
    view: &str,
) -> Result<Arc<CurrentUser>, ApiError> {
    state.auth.authorize(&auth.principal, perm, view).await?;
    auth.principal
        .user()
        .cloned()
        .ok_or_else(|| ApiError::message(Fault::Unauthorized, "Not authorized"))
}

/// 404 when the record does not exist, `denied` when it is outside `scope`.
pub async fn in_reach(
    state: &AppState,
    model: &Model,
    id: i64,
    scope: &Pred,
    denied: fn() -> ApiError,
) -> Result<i64, ApiError> {
    match state.store.reach(model, id, scope).await? {
        None => Err(ApiError::not_found()),
        Some(false) => Err(denied()),
        Some(true) => Ok(id),
    }
}

/// FAB's 403 `{"message": "Forbidden"}`.
pub fn forbidden() -> ApiError {
    crate::auth::Error::Forbidden.into()
}

/// Checks that every record exists (404) and that the user may change it (403), before an
/// update or a (bulk) delete.
pub async fn ensure_changeable(
    state: &AppState,
    spec: &Spec,
    ids: &[i64],
    user: &CurrentUser,
) -> Result<(), ApiError> {
    let rels = crate::store::catalog::ownership_relations(spec.model);
    let recs = state.store.load(spec.model, ids, &rels).await?;
    let unique: std::collections::BTreeSet<&i64> = ids.iter().collect();
    if recs.len() != unique.len() {
        return Err(ApiError::not_found());
    }
    for rec in &recs {
        if !can_change(user, rec) {
            return Err(ApiError::message(
                Fault::Forbidden,
                format!("Changing this {} is forbidden", spec.noun),
            ));
        }
    }
    Ok(())
}

/// `GET /<res>/favorite_status/?q=!(ids)`: `{"result": [{"id", "value"}]}` in request order.
pub async fn favorite_status(
    state: &AppState,
    class: &str,
    user: &CurrentUser,
    q: Option<&str>,
) -> Result<Json<FavoriteStatusResponse>, ApiError> {
    let ids = ids_query(q)?;
    let favs = state.store.favorites(user.user.id, class, &ids).await?;
    let result = ids
        .iter()
        .map(|id| FavoriteStatus {
            id: *id,
            value: favs.contains(id),
        })
        .collect();
    Ok(Json(FavoriteStatusResponse { result }))
}

/// `POST|DELETE /<res>/<pk>/favorites/` on a record already checked to be in reach.
pub async fn set_favorite(
    state: &AppState,
    class: &str,
    user: &CurrentUser,
    id: i64,
    on: bool,
) -> Result<Json<ResultOk>, ApiError> {
    state
        .store
        .set_favorite(user.user.id, class, id, on)
        .await?;
    Ok(Json(ResultOk {
        result: "OK".to_owned(),
    }))
}

/// Charts and dashboards using any of the datasets (`related_objects` of a database and of a
/// dataset); `tab_states` adds the SQL Lab tabs entry databases answer with.
pub async fn related_objects(
    state: &AppState,
    dataset_ids: &[i64],
    tab_states: bool,
) -> Result<RelatedObjects, ApiError> {
    let (_, chart_ids) = state
        .store
        .list_ids(
            &catalog::CHART,
            &catalog::charts_on_datasets(dataset_ids),
            None,
            None,
        )
        .await?;
    let charts = state
        .store
        .load(&catalog::CHART, &chart_ids, &["dashboards"])
        .await?;
    let mut dash_ids: Vec<i64> = charts
        .iter()
        .flat_map(|c| c.related("dashboards").iter().map(|d| d.id))
        .collect();
    dash_ids.sort_unstable();
    dash_ids.dedup();
    let dashboards = state
        .store
        .load(&catalog::DASHBOARD, &dash_ids, &[])
        .await?;
    Ok(RelatedObjects {
        charts: Counted {
            count: charts.len() as u64,
            result: charts
                .iter()
                .map(|c| RelatedChart {
                    id: c.id,
                    slice_name: c.text("slice_name"),
                    viz_type: c.text("viz_type"),
                })
                .collect(),
        },
        dashboards: Counted {
            count: dashboards.len() as u64,
            result: dashboards
                .iter()
                .map(|d| RelatedDashboard {
                    id: d.id,
                    json_metadata: d.get::<String>("json_metadata").into(),
                    slug: d.get::<String>("slug").into(),
                    title: d.text("dashboard_title"),
                })
                .collect(),
        },
        sqllab_tab_states: tab_states.then(|| Counted {
            count: 0,
            result: Vec::new(),
        }),
    })
}

/// `{"message": "Deleted 2 charts"}`.
pub fn deleted(spec: &Spec, n: u64) -> Json<Message> {
    let plural = if n == 1 { "" } else { "s" };
    Json(Message {
        message: format!("Deleted {n} {}{plural}", spec.noun),
    })
}

/// Whether the user may change a record: admins, and owners (or its creator when it has no
/// owners relation).
pub fn can_change(user: &CurrentUser, rec: &Record) -> bool {
    user.is_admin()
        || rec.related("owners").iter().any(|o| o.id == user.user.id)
        || rec.one("created_by").is_some_and(|c| c.id == user.user.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_fab() {
        assert_eq!(label("changed_by.first_name"), "Changed By First Name");
        assert_eq!(label("id"), "Id");
    }

    #[test]
    fn humanized_times_read_like_python_humanize() {
        let now = Utc::now().naive_utc();
        assert_eq!(humanize(now - chrono::Duration::days(2)), "2 days ago");
        assert_eq!(
            humanize(now - chrono::Duration::seconds(3600)),
            "an hour ago"
        );
    }

    /// A body field that accepts `null` must write a column that can hold it: otherwise the
    /// store refuses the write with a constraint error and the client gets a 500 instead of
    /// marshmallow's "Field may not be null.".
    #[tokio::test]
    async fn nullable_body_fields_write_nullable_columns() {
        use crate::store::{Executor, Location, Store};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(Location::Sqlite(&dir.path().join("meta.db")), 1)
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let specs = [
            &super::super::chart::SPEC,
            &super::super::dashboard::SPEC,
            &super::super::dataset::SPEC,
            &super::super::database::SPEC,
            &super::super::saved_query::SPEC,
            &super::super::query::SPEC,
        ];
        let (mut wrong, mut checked) = (Vec::new(), 0);
        for spec in specs {
            let not_null: Vec<String> = store
                .db()
                .query(&format!("PRAGMA table_info({})", spec.model.table), vec![])
                .await
                .unwrap()
                .iter()
                .filter(|r| r.get::<i64>("notnull").unwrap() == 1)
                .map(|r| r.get::<String>("name").unwrap())
                .collect();
            checked += not_null.len();
            for f in spec.body.iter().filter(|f| f.nullable) {
                if let Some(Field::Column { col, .. }) = spec.model.field(f.field)
                    && not_null.iter().any(|c| c == col)
                {
                    wrong.push(format!("{}.{}", spec.name, f.key));
                }
            }
        }
        assert!(
            checked > 10,
            "the schema was read ({checked} NOT NULL columns)"
        );
        assert!(
            wrong.is_empty(),
            "nullable body fields on NOT NULL columns: {wrong:?}"
        );
    }
}
