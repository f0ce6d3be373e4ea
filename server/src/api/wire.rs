//! The typed wire shapes of every catalog resource (FAB's `ModelRestApi` envelopes), derived
//! from the resource's [`Spec`]: the list envelope and its items, show, the POST/PUT body and
//! its echo. The same `Spec` drives what [`super::resource`] renders, so the document and the
//! answers come from one declaration and cannot drift: a column is named in the schema exactly
//! when a response may carry it, with the type its model field (or its declared computed type)
//! has.
//!
//! Responses keep the JSON the resource code built (no copy, no second serialisation); only
//! their schema is typed. Shapes that do not depend on a resource are ordinary poem-openapi
//! `Object`s below.

use std::borrow::Cow;
use std::marker::PhantomData;

use poem::http::StatusCode;
use poem::{IntoResponse, Response};
use poem_openapi::registry::{
    MetaMediaType, MetaResponse, MetaResponses, MetaSchema, MetaSchemaRef, Registry,
};
use poem_openapi::types::{Any, ToJSON, Type};
use poem_openapi::{ApiResponse, Object};
use serde_json::Value as Json_;

use super::resource::{BodyType, Spec};
use crate::store::catalog::USER_REF;
use crate::store::model::{Field, Kind, Model};

/// The type of a computed column (one the resource renders itself, not a model field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// A string.
    Str,
    /// An integer.
    Int,
    /// A number.
    Float,
    /// A boolean.
    Bool,
    /// A JSON object with free keys (a parsed `params`, `form_data`).
    Object,
    /// A list of strings.
    StrList,
    /// A list of free objects (`tags`).
    ObjectList,
}

/// The computed columns every audited resource shares ([`super::resource::common_computed`]).
const COMMON: &[(&str, Wire)] = &[
    ("changed_on_delta_humanized", Wire::Str),
    ("created_on_delta_humanized", Wire::Str),
    ("changed_on_utc", Wire::Str),
    ("changed_on_dttm", Wire::Float),
    ("changed_by_name", Wire::Str),
    ("created_by_name", Wire::Str),
];

/// A catalog resource, named for the document (`Chart` gives `ChartList`, `ChartShow`, …).
pub trait Resource: Send + Sync + 'static {
    /// Its declaration.
    const SPEC: &'static Spec;
}

/// Declares a marker type for a resource's typed shapes.
#[macro_export]
macro_rules! wire_resource {
    ($marker:ident, $spec:expr) => {
        /// The resource's typed wire shapes (see `api/wire.rs`).
        pub struct $marker;
        impl $crate::api::wire::Resource for $marker {
            const SPEC: &'static $crate::api::resource::Spec = &$spec;
        }
    };
}

fn nullable(mut s: MetaSchema) -> MetaSchema {
    s.nullable = true;
    s
}

fn inline(s: MetaSchema) -> MetaSchemaRef {
    MetaSchemaRef::Inline(Box::new(s))
}

fn array_of(items: MetaSchemaRef) -> MetaSchema {
    MetaSchema {
        items: Some(Box::new(items)),
        ..MetaSchema::new("array")
    }
}

fn free_object() -> MetaSchema {
    MetaSchema {
        additional_properties: Some(Box::new(inline(MetaSchema::ANY))),
        ..MetaSchema::new("object")
    }
}

fn string_map() -> MetaSchema {
    MetaSchema {
        additional_properties: Some(Box::new(inline(MetaSchema::new("string")))),
        ..MetaSchema::new("object")
    }
}

fn kind_schema(kind: Kind) -> MetaSchema {
    match kind {
        Kind::Text | Kind::Time => MetaSchema::new("string"),
        Kind::Int => MetaSchema::new("integer"),
        Kind::Float => MetaSchema::new("number"),
        Kind::Bool => MetaSchema::new("boolean"),
    }
}

fn wire_schema(w: Wire) -> MetaSchema {
    match w {
        Wire::Str => MetaSchema::new("string"),
        Wire::Int => MetaSchema::new("integer"),
        Wire::Float => MetaSchema::new("number"),
        Wire::Bool => MetaSchema::new("boolean"),
        Wire::Object => free_object(),
        Wire::StrList => array_of(inline(MetaSchema::new("string"))),
        Wire::ObjectList => array_of(inline(free_object())),
    }
}

/// The columns a reference to `target` renders when named without a sub-column (`owners`).
pub fn default_ref_columns(target: &Model) -> Vec<&'static str> {
    if std::ptr::eq(target, &USER_REF) {
        return vec!["id", "first_name", "last_name"];
    }
    target
        .fields
        .iter()
        .filter(|(_, f)| matches!(f, Field::Column { .. } | Field::Computed { .. }))
        .map(|(n, _)| *n)
        .filter(|n| !n.contains('.'))
        .collect()
}

/// The schema of one rendered column, `None` when nothing declares its type.
fn column_schema(spec: &Spec, model: &Model, col: &str) -> Option<MetaSchema> {
    if let Some((_, w)) = spec.computed.iter().chain(COMMON).find(|(n, _)| *n == col) {
        return Some(nullable(wire_schema(*w)));
    }
    if col == "id" {
        return Some(MetaSchema::new("integer"));
    }
    match model.field(col)? {
        Field::Column { kind, .. } | Field::Computed { kind, .. } => {
            Some(nullable(kind_schema(*kind)))
        }
        Field::ToOne { target, .. } => {
            let cols = default_ref_columns(target);
            Some(nullable(object_schema(spec, target, &cols)))
        }
        Field::ToMany { target, .. } => {
            let cols = default_ref_columns(target);
            Some(array_of(inline(object_schema(spec, target, &cols))))
        }
    }
}

/// An object with the given (possibly dotted) columns, as [`super::resource::render`] nests
/// them: `owners.id` and `owners.first_name` become `owners: [{id, first_name}]`.
fn object_schema(spec: &Spec, model: &Model, columns: &[&'static str]) -> MetaSchema {
    let mut props: Vec<(&'static str, MetaSchemaRef)> = Vec::new();
    let mut nested: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for col in columns {
        if let Some((head, tail)) = col.split_once('.')
            && matches!(
                model.field(head),
                Some(Field::ToOne { .. } | Field::ToMany { .. })
            )
            && !spec.computed.iter().any(|(n, _)| n == col)
        {
            match nested.iter_mut().find(|(h, _)| *h == head) {
                Some((_, tails)) => tails.push(tail),
                None => nested.push((head, vec![tail])),
            }
            continue;
        }
        let schema = column_schema(spec, model, col).unwrap_or(MetaSchema::ANY);
        props.push((col, inline(schema)));
    }
    for (head, tails) in nested {
        let (Some(Field::ToOne { target, .. }) | Some(Field::ToMany { target, .. })) =
            model.field(head)
        else {
            continue;
        };
        let obj = object_schema(spec, target, &tails);
        let s = match model.field(head) {
            Some(Field::ToOne { .. }) => nullable(obj),
            _ => array_of(inline(obj)),
        };
        props.push((head, inline(s)));
    }
    MetaSchema {
        properties: props,
        ..MetaSchema::new("object")
    }
}

/// The columns of `columns` whose type nothing declares (for the typing test).
pub fn untyped_columns(spec: &Spec, columns: &[&'static str]) -> Vec<&'static str> {
    fn walk(spec: &Spec, model: &Model, col: &'static str, out: &mut Vec<&'static str>) {
        if let Some((head, tail)) = col.split_once('.')
            && let Some(Field::ToOne { target, .. } | Field::ToMany { target, .. }) =
                model.field(head)
            && !spec.computed.iter().any(|(n, _)| *n == col)
        {
            walk(spec, target, tail, out);
            return;
        }
        if column_schema(spec, model, col).is_none() {
            out.push(col);
        }
    }
    let mut out = Vec::new();
    for col in columns {
        walk(spec, spec.model, col, &mut out);
    }
    out
}

fn body_schema(spec: &Spec, create: bool) -> MetaSchema {
    let mut props = Vec::new();
    let mut required = Vec::new();
    for f in spec.body {
        let mut s = match f.ty {
            BodyType::Str(min, max) => MetaSchema {
                min_length: Some(min),
                max_length: Some(max),
                ..MetaSchema::new("string")
            },
            BodyType::JsonStr => MetaSchema {
                description: Some("A JSON document as a string"),
                ..MetaSchema::new("string")
            },
            BodyType::Int => MetaSchema::new("integer"),
            BodyType::Bool => MetaSchema::new("boolean"),
            BodyType::Ids(_) => array_of(inline(MetaSchema::new("integer"))),
        };
        s.nullable = f.nullable;
        if create && f.required {
            required.push(f.key);
        }
        props.push((f.key, inline(s)));
    }
    MetaSchema {
        properties: props,
        required,
        ..MetaSchema::new("object")
    }
}

// ------------------------------------------------------------------------------------------
// Schemas as types

/// A schema registered under a name.
pub trait Schema: Sized + Send + Sync + 'static {
    /// The component name.
    fn name() -> String;
    /// Builds it (registering what it refers to).
    fn build(registry: &mut Registry) -> MetaSchema;
    /// Registers it once.
    fn register(registry: &mut Registry) {
        registry.create_schema::<Self, _>(Self::name(), Self::build);
    }
    /// A reference to it.
    fn reference() -> MetaSchemaRef {
        MetaSchemaRef::Reference(Self::name())
    }
}

/// `GET /<res>/`: FAB's list envelope.
pub struct List<R>(PhantomData<R>);

impl<R: Resource> Schema for List<R> {
    fn name() -> String {
        format!("{}List", R::SPEC.name)
    }
    fn build(registry: &mut Registry) -> MetaSchema {
        ListItem::<R>::register(registry);
        let strings = || inline(array_of(inline(MetaSchema::new("string"))));
        MetaSchema {
            properties: vec![
                ("count", inline(MetaSchema::new("integer"))),
                ("ids", inline(array_of(inline(MetaSchema::new("integer"))))),
                ("result", inline(array_of(ListItem::<R>::reference()))),
                ("label_columns", inline(string_map())),
                ("list_columns", strings()),
                ("order_columns", strings()),
                ("description_columns", inline(string_map())),
                ("list_title", inline(MetaSchema::new("string"))),
            ],
            required: vec!["count", "ids", "result"],
            ..MetaSchema::new("object")
        }
    }
}

/// One record of a list: every list column (a `columns` selection sends fewer).
pub struct ListItem<R>(PhantomData<R>);

impl<R: Resource> Schema for ListItem<R> {
    fn name() -> String {
        format!("{}ListItem", R::SPEC.name)
    }
    fn build(_: &mut Registry) -> MetaSchema {
        object_schema(R::SPEC, R::SPEC.model, R::SPEC.list_columns)
    }
}

/// `GET /<res>/<pk>`: FAB's show envelope.
pub struct Show<R>(PhantomData<R>);

impl<R: Resource> Schema for Show<R> {
    fn name() -> String {
        format!("{}Show", R::SPEC.name)
    }
    fn build(registry: &mut Registry) -> MetaSchema {
        ShowItem::<R>::register(registry);
        MetaSchema {
            properties: vec![
                ("id", inline(MetaSchema::new("integer"))),
                ("result", ShowItem::<R>::reference()),
                (
                    "show_columns",
                    inline(array_of(inline(MetaSchema::new("string")))),
                ),
                ("label_columns", inline(string_map())),
                ("description_columns", inline(string_map())),
                ("show_title", inline(MetaSchema::new("string"))),
            ],
            required: vec!["id", "result"],
            ..MetaSchema::new("object")
        }
    }
}

/// The record of a show: every show column (a `columns` selection sends fewer).
pub struct ShowItem<R>(PhantomData<R>);

impl<R: Resource> Schema for ShowItem<R> {
    fn name() -> String {
        format!("{}ShowItem", R::SPEC.name)
    }
    fn build(_: &mut Registry) -> MetaSchema {
        object_schema(R::SPEC, R::SPEC.model, R::SPEC.show_columns)
    }
}

/// A POST body: the accepted keys with their types; required ones as marshmallow requires
/// them. Other keys are accepted and ignored, as Superset's schemas do for these resources.
pub struct PostBody<R>(PhantomData<R>);

impl<R: Resource> Schema for PostBody<R> {
    fn name() -> String {
        format!("{}PostBody", R::SPEC.name)
    }
    fn build(_: &mut Registry) -> MetaSchema {
        body_schema(R::SPEC, true)
    }
}

/// A PUT body: the same keys, none required.
pub struct PutBody<R>(PhantomData<R>);

impl<R: Resource> Schema for PutBody<R> {
    fn name() -> String {
        format!("{}PutBody", R::SPEC.name)
    }
    fn build(_: &mut Registry) -> MetaSchema {
        body_schema(R::SPEC, false)
    }
}

/// What POST and PUT answer: the id and the accepted body echoed.
pub struct Saved<R>(PhantomData<R>);

impl<R: Resource> Schema for Saved<R> {
    fn name() -> String {
        format!("{}Saved", R::SPEC.name)
    }
    fn build(registry: &mut Registry) -> MetaSchema {
        PutBody::<R>::register(registry);
        MetaSchema {
            properties: vec![
                ("id", inline(MetaSchema::new("integer"))),
                ("result", PutBody::<R>::reference()),
            ],
            required: vec!["id", "result"],
            ..MetaSchema::new("object")
        }
    }
}

// ------------------------------------------------------------------------------------------
// Bodies and responses carrying already-built JSON under a schema

/// A request body kept as JSON (the resource validates it with Superset's field messages),
/// documented with schema `S`.
pub struct Body<S> {
    /// The body.
    pub value: Json_,
    _schema: PhantomData<S>,
}

impl<S: Schema> Type for Body<S> {
    const IS_REQUIRED: bool = true;
    type RawValueType = Json_;
    type RawElementValueType = Json_;

    fn name() -> Cow<'static, str> {
        Cow::Owned(S::name())
    }
    fn schema_ref() -> MetaSchemaRef {
        S::reference()
    }
    fn register(registry: &mut Registry) {
        S::register(registry);
    }
    fn as_raw_value(&self) -> Option<&Json_> {
        Some(&self.value)
    }
    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Json_> + 'a> {
        Box::new(std::iter::once(&self.value))
    }
}

impl<'de, S> serde::Deserialize<'de> for Body<S> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Body {
            value: Json_::deserialize(d)?,
            _schema: PhantomData,
        })
    }
}

const JSON: &str = "application/json; charset=utf-8";

fn one_response(status: u16, description: &'static str, schema: MetaSchemaRef) -> MetaResponses {
    MetaResponses {
        responses: vec![MetaResponse {
            description,
            status: Some(status),
            status_range: None,
            content: vec![MetaMediaType {
                content_type: JSON,
                schema,
            }],
            headers: vec![],
        }],
    }
}

/// A 200 answer: JSON built by the resource code, documented with schema `S`.
pub struct Reply<S> {
    value: Json_,
    _schema: PhantomData<S>,
}

impl<S> Reply<S> {
    /// Wraps the JSON.
    pub fn new(value: Json_) -> Self {
        Reply {
            value,
            _schema: PhantomData,
        }
    }
}

impl<S: Schema> IntoResponse for Reply<S> {
    fn into_response(self) -> Response {
        poem::web::Json(self.value).into_response()
    }
}

impl<S: Schema> ApiResponse for Reply<S> {
    fn meta() -> MetaResponses {
        one_response(200, "OK", S::reference())
    }
    fn register(registry: &mut Registry) {
        S::register(registry);
    }
}

/// A 201 answer: JSON built by the resource code, documented with schema `S`.
pub struct Created<S> {
    value: Json_,
    _schema: PhantomData<S>,
}

impl<S> Created<S> {
    /// Wraps the JSON.
    pub fn new(value: Json_) -> Self {
        Created {
            value,
            _schema: PhantomData,
        }
    }
}

impl<T: ToJSON> Created<Obj<T>> {
    /// A typed object as the 201 answer.
    pub fn of(value: T) -> Self {
        Created::new(value.to_json().unwrap_or_default())
    }
}

impl<S: Schema> IntoResponse for Created<S> {
    fn into_response(self) -> Response {
        poem::web::Json(self.value)
            .with_status(StatusCode::CREATED)
            .into_response()
    }
}

impl<S: Schema> ApiResponse for Created<S> {
    fn meta() -> MetaResponses {
        one_response(201, "Created", S::reference())
    }
    fn register(registry: &mut Registry) {
        S::register(registry);
    }
}

/// JSON built by the handler, documented with schema `S`, as one variant of a response enum
/// (where [`Reply`] and [`Created`] cannot be used).
pub struct JsonOf<S> {
    value: Json_,
    _schema: PhantomData<S>,
}

impl<S> JsonOf<S> {
    /// Wraps the JSON.
    pub fn new(value: Json_) -> Self {
        JsonOf {
            value,
            _schema: PhantomData,
        }
    }
}

impl<S: Schema> poem_openapi::payload::Payload for JsonOf<S> {
    const CONTENT_TYPE: &'static str = JSON;
    fn schema_ref() -> MetaSchemaRef {
        S::reference()
    }
    fn register(registry: &mut Registry) {
        S::register(registry);
    }
}

impl<S: Send> IntoResponse for JsonOf<S> {
    fn into_response(self) -> Response {
        poem::web::Json(self.value).into_response()
    }
}

/// A poem-openapi object used as a [`Schema`] (for shapes built as structs).
pub struct Obj<T>(PhantomData<T>);

impl<T: Type + ToJSON + 'static> Schema for Obj<T> {
    fn name() -> String {
        T::name().into_owned()
    }
    fn build(_: &mut Registry) -> MetaSchema {
        MetaSchema::ANY
    }
    fn register(registry: &mut Registry) {
        T::register(registry);
    }
    fn reference() -> MetaSchemaRef {
        T::schema_ref()
    }
}

// ------------------------------------------------------------------------------------------
// Shapes every resource shares

/// A chart in `related_objects`.
#[derive(Object)]
pub struct RelatedChart {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub slice_name: String,
    /// Its chart type.
    pub viz_type: String,
}

/// A dashboard in `related_objects`.
#[derive(Object)]
pub struct RelatedDashboard {
    /// Its id.
    pub id: i64,
    /// Its metadata, as JSON text.
    pub json_metadata: Nullable<String>,
    /// Its slug.
    pub slug: Nullable<String>,
    /// Its title.
    pub title: String,
}

/// A counted list.
#[derive(Object)]
pub struct Counted<T: poem_openapi::types::ParseFromJSON + ToJSON> {
    /// How many.
    pub count: u64,
    /// Them.
    pub result: Vec<T>,
}

/// `GET /database/<pk>/related_objects` and `GET /dataset/<pk>/related_objects`.
#[derive(Object)]
pub struct RelatedObjects {
    /// Charts built on the datasets.
    pub charts: Counted<RelatedChart>,
    /// Dashboards showing those charts.
    pub dashboards: Counted<RelatedDashboard>,
    /// SQL Lab tabs using the database (databases only; Liteset keeps none server-side).
    #[oai(skip_serializing_if_is_none)]
    pub sqllab_tab_states: Option<Counted<Any<Json_>>>,
}

/// Superset's `Query.to_dict()`: a SQL Lab run as the app tracks it.
#[derive(Object)]
pub struct QueryDict {
    /// When the row last changed.
    pub changed_on: Nullable<String>,
    /// The database's id.
    #[oai(rename = "dbId")]
    pub db_id: Nullable<i64>,
    /// The database's name.
    pub db: Nullable<String>,
    /// When it ended (epoch ms).
    #[oai(rename = "endDttm")]
    pub end_dttm: Nullable<f64>,
    /// Why it failed.
    #[oai(rename = "errorMessage")]
    pub error_message: Nullable<String>,
    /// The SQL that ran (with its limit).
    #[oai(rename = "executedSql")]
    pub executed_sql: Nullable<String>,
    /// The client's id of the run.
    pub id: String,
    /// The server's id of the run.
    #[oai(rename = "queryId")]
    pub query_id: i64,
    /// The row limit.
    pub limit: Nullable<i64>,
    /// What limited the rows (`QUERY`, `DROPDOWN`, …).
    #[oai(rename = "limitingFactor")]
    pub limiting_factor: Nullable<String>,
    /// Progress, 0 to 100.
    pub progress: i64,
    /// Rows returned.
    pub rows: Nullable<i64>,
    /// The catalog.
    pub catalog: Nullable<String>,
    /// The schema.
    pub schema: Nullable<String>,
    /// Whether it was a CREATE TABLE AS.
    pub ctas: bool,
    /// The server's id of the run.
    #[oai(rename = "serverId")]
    pub server_id: i64,
    /// The SQL as typed.
    pub sql: Nullable<String>,
    /// The editor tab's id.
    #[oai(rename = "sqlEditorId")]
    pub sql_editor_id: Nullable<String>,
    /// When it started (epoch ms).
    #[oai(rename = "startDttm")]
    pub start_dttm: Nullable<f64>,
    /// `pending`, `running`, `success`, `failed`, `stopped`, `timed_out`.
    pub state: String,
    /// The editor tab's name.
    pub tab: Nullable<String>,
    /// CTAS target schema.
    #[oai(rename = "tempSchema")]
    pub temp_schema: Nullable<String>,
    /// CTAS target table.
    #[oai(rename = "tempTable")]
    pub temp_table: Nullable<String>,
    /// Who ran it.
    #[oai(rename = "userId")]
    pub user_id: Nullable<i64>,
    /// Their name.
    pub user: Nullable<String>,
    /// The key its results are kept under.
    #[oai(rename = "resultsKey")]
    pub results_key: Nullable<String>,
    /// The engine's tracking URL.
    #[oai(rename = "trackingUrl")]
    pub tracking_url: Nullable<String>,
    /// Everything else (progress text, errors).
    pub extra: Any<Json_>,
}

impl QueryDict {
    /// Superset's `Query.to_dict()` of a stored run (loaded with `database` and `user`).
    pub fn of(rec: &crate::store::model::Record) -> QueryDict {
        let text = |f: &str| Nullable(rec.get::<String>(f));
        let extra = rec
            .get::<String>("extra_json")
            .and_then(|e| serde_json::from_str::<Json_>(&e).ok())
            .filter(Json_::is_object)
            .unwrap_or_else(|| Json_::Object(Default::default()));
        QueryDict {
            changed_on: rec
                .get::<chrono::NaiveDateTime>("changed_on")
                .map(super::resource::iso)
                .into(),
            db_id: rec.get::<i64>("database_id").into(),
            db: rec.one("database").map(|d| d.text("database_name")).into(),
            end_dttm: rec.get::<f64>("end_time").into(),
            error_message: text("error_message"),
            executed_sql: text("executed_sql"),
            id: rec.text("client_id"),
            query_id: rec.id,
            limit: rec.get::<i64>("limit").into(),
            limiting_factor: text("limiting_factor"),
            progress: rec.get::<i64>("progress").unwrap_or(0),
            rows: rec.get::<i64>("rows").into(),
            catalog: text("catalog"),
            schema: text("schema"),
            ctas: rec.flag("select_as_cta"),
            server_id: rec.id,
            sql: text("sql"),
            sql_editor_id: text("sql_editor_id"),
            start_dttm: rec.get::<f64>("start_time").into(),
            state: rec.text("status").to_ascii_lowercase(),
            tab: text("tab_name"),
            temp_schema: text("tmp_schema_name"),
            temp_table: text("tmp_table_name"),
            user_id: rec.get::<i64>("user_id").into(),
            user: rec
                .one("user")
                .map(|u| {
                    format!("{} {}", u.text("first_name"), u.text("last_name"))
                        .trim()
                        .to_owned()
                })
                .into(),
            results_key: text("results_key"),
            tracking_url: text("tracking_url"),
            extra: Any(extra),
        }
    }

    /// As JSON.
    pub fn json(&self) -> Json_ {
        self.to_json().unwrap_or_default()
    }
}

/// `{"key": …}`: a stored temporary-cache entry (explore form data, dashboard filter state).
#[derive(Object)]
pub struct KeyResponse {
    /// The entry's key.
    pub key: String,
}

/// `{"key", "url"}`: a new permalink.
#[derive(Object)]
pub struct PermalinkResponse {
    /// The permalink's key.
    pub key: String,
    /// Its absolute URL.
    pub url: String,
}

/// Superset's `TemporaryCachePostSchema` / `TemporaryCachePutSchema`: `{"value": "<json>"}`.
#[derive(Object)]
pub struct TemporaryCacheBody {
    /// The state, as JSON text.
    pub value: String,
}

/// `GET /dashboard/<pk>/filter_state/<key>`: the stored state as JSON text.
#[derive(Object)]
pub struct TemporaryCacheValue {
    /// The state, as JSON text.
    pub value: String,
}

/// `{"message": "..."}`: deletions, imports.
#[derive(Object)]
pub struct Message {
    /// What happened ("OK", "Deleted 2 charts").
    pub message: String,
}

/// `{"result": "OK"}`.
#[derive(Object)]
pub struct ResultOk {
    /// "OK".
    pub result: String,
}

/// One id's favourite flag.
#[derive(Object)]
pub struct FavoriteStatus {
    /// The record's id.
    pub id: i64,
    /// Whether it is one of the caller's favourites.
    pub value: bool,
}

/// `GET /<res>/favorite_status/`.
#[derive(Object)]
pub struct FavoriteStatusResponse {
    /// One entry per requested id, in request order.
    pub result: Vec<FavoriteStatus>,
}

/// One value of `related/<col>`.
#[derive(Object)]
pub struct RelatedValue {
    /// The related record's id.
    pub value: i64,
    /// Its label.
    pub text: String,
    /// More about it (users: `email`, `active`).
    pub extra: poem_openapi::types::Any<Json_>,
}

/// `GET /<res>/related/<col>`.
#[derive(Object)]
pub struct RelatedResponse {
    /// How many match in all.
    pub count: i64,
    /// This page of them.
    pub result: Vec<RelatedValue>,
}

/// One value of `distinct/<col>`.
#[derive(Object)]
pub struct DistinctValue {
    /// The value as shown.
    pub text: poem_openapi::types::Any<Json_>,
    /// The value.
    pub value: poem_openapi::types::Any<Json_>,
}

/// `GET /<res>/distinct/<col>`.
#[derive(Object)]
pub struct DistinctResponse {
    /// How many distinct values match in all.
    pub count: i64,
    /// This page of them.
    pub result: Vec<DistinctValue>,
}

/// One operator of a searchable column in `_info`.
#[derive(Object)]
pub struct InfoFilter {
    /// Its label.
    pub name: String,
    /// The `opr` to send in a list query's filter.
    pub operator: String,
}

/// One related value offered by `_info`'s add/edit columns.
#[derive(Object)]
pub struct InfoValue {
    /// The related record's id.
    pub id: i64,
    /// Its label.
    pub value: String,
}

/// One body key described by `_info`'s `add_columns` / `edit_columns`.
#[derive(Object)]
pub struct InfoColumn {
    /// The key.
    pub name: String,
    /// FAB's label.
    pub label: String,
    /// Always empty here.
    pub description: String,
    /// `String`, `Integer`, `Boolean` or `Related`.
    #[oai(rename = "type")]
    pub ty: String,
    /// Required on create.
    pub required: bool,
    /// Always false here.
    pub unique: bool,
    /// marshmallow's validators, as FAB prints them.
    #[oai(skip_serializing_if_is_none)]
    pub validate: Option<Vec<String>>,
    /// How many related values there are (related columns only).
    #[oai(skip_serializing_if_is_none)]
    pub count: Option<i64>,
    /// A page of related values (related columns only).
    #[oai(skip_serializing_if_is_none)]
    pub values: Option<Vec<InfoValue>>,
}

/// `GET /<res>/_info`: the keys asked for with `?q=(keys:!(...))`, all by default.
#[derive(Object, Default)]
pub struct InfoResponse {
    /// The caller's permissions on the resource.
    #[oai(skip_serializing_if_is_none)]
    pub permissions: Option<Vec<String>>,
    /// Searchable columns and their operators.
    #[oai(skip_serializing_if_is_none)]
    pub filters: Option<std::collections::BTreeMap<String, Vec<InfoFilter>>>,
    /// The keys a POST accepts.
    #[oai(skip_serializing_if_is_none)]
    pub add_columns: Option<Vec<InfoColumn>>,
    /// The keys a PUT accepts.
    #[oai(skip_serializing_if_is_none)]
    pub edit_columns: Option<Vec<InfoColumn>>,
    /// FAB's add title.
    #[oai(skip_serializing_if_is_none)]
    pub add_title: Option<String>,
    /// FAB's edit title.
    #[oai(skip_serializing_if_is_none)]
    pub edit_title: Option<String>,
}

/// `{"result": …}` with a typed result.
#[derive(Object)]
pub struct ResultOf<T: poem_openapi::types::ParseFromJSON + ToJSON> {
    /// The result.
    pub result: T,
}

impl<T: poem_openapi::types::ParseFromJSON + ToJSON> ResultOf<T> {
    /// Wraps a result as a JSON payload.
    pub fn json(result: T) -> poem_openapi::payload::Json<Self> {
        poem_openapi::payload::Json(ResultOf { result })
    }
}

/// A fixed set of a resource's columns answered as `{"id", "result": {…}}` (a show with its
/// own columns, like `GET /dashboard/<id>`).
pub trait Columns: Send + Sync + 'static {
    /// The resource.
    type Of: Resource;
    /// The schema's name.
    const NAME: &'static str;
    /// The columns, as [`super::resource::render`] takes them.
    const COLUMNS: &'static [&'static str];
}

/// Two column lists as one, at compile time (a show's columns plus an endpoint's own).
pub const fn concat<const A: usize, const B: usize, const C: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
) -> [&'static str; C] {
    assert!(A + B == C, "C must be A + B");
    let mut out = [""; C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < C {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

/// `{"id": …, "result": {C's columns}}`.
pub struct IdResult<C>(PhantomData<C>);

impl<C: Columns> Schema for IdResult<C> {
    fn name() -> String {
        C::NAME.to_owned()
    }
    fn build(_: &mut Registry) -> MetaSchema {
        let spec = <C::Of as Resource>::SPEC;
        MetaSchema {
            properties: vec![
                ("id", inline(MetaSchema::new("integer"))),
                (
                    "result",
                    inline(object_schema(spec, spec.model, C::COLUMNS)),
                ),
            ],
            required: vec!["id", "result"],
            ..MetaSchema::new("object")
        }
    }
}

/// A field that is always sent and may be `null` (poem-openapi's `Option` documents an
/// optional field, not a nullable one, so a `null` it sends would break the document).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Nullable<T>(pub Option<T>);

impl<T> From<Option<T>> for Nullable<T> {
    fn from(v: Option<T>) -> Self {
        Nullable(v)
    }
}

impl<T: Type> Type for Nullable<T> {
    const IS_REQUIRED: bool = true;
    type RawValueType = T::RawValueType;
    type RawElementValueType = T::RawElementValueType;

    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("Nullable_{}", T::name()))
    }
    fn schema_ref() -> MetaSchemaRef {
        match T::schema_ref() {
            MetaSchemaRef::Inline(s) => inline(MetaSchema {
                nullable: true,
                ..*s
            }),
            r @ MetaSchemaRef::Reference(_) => inline(MetaSchema {
                nullable: true,
                all_of: vec![r],
                ..MetaSchema::ANY
            }),
        }
    }
    fn register(registry: &mut Registry) {
        T::register(registry);
    }
    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        self.0.as_ref().and_then(Type::as_raw_value)
    }
    fn raw_element_iter<'a>(
        &'a self,
    ) -> Box<dyn Iterator<Item = &'a Self::RawElementValueType> + 'a> {
        match &self.0 {
            Some(v) => v.raw_element_iter(),
            None => Box::new(std::iter::empty()),
        }
    }
}

impl<T: poem_openapi::types::ParseFromJSON> poem_openapi::types::ParseFromJSON for Nullable<T> {
    fn parse_from_json(value: Option<Json_>) -> poem_openapi::types::ParseResult<Self> {
        match value {
            None | Some(Json_::Null) => Ok(Nullable(None)),
            v => T::parse_from_json(v)
                .map(|x| Nullable(Some(x)))
                .map_err(poem_openapi::types::ParseError::propagate),
        }
    }
}

impl<T: ToJSON> ToJSON for Nullable<T> {
    fn to_json(&self) -> Option<Json_> {
        Some(
            self.0
                .as_ref()
                .and_then(ToJSON::to_json)
                .unwrap_or(Json_::Null),
        )
    }
}
