//! `/api/v1/dataset/`: datasets (Superset's `DatasetRestApi`), physical (a table) or virtual
//! (an SQL query), with columns introspected from the database.

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde_json::{Value as Json_, json};

use super::Tags;
use super::bundles::{self, ImportForm, ZipFile};
use super::datasource::{computed, dataset_data, is_virtual, show_json};
use super::error::{ApiError, Fault, engine_error};
use super::extract::{Auth, JsonBody};
use super::resource::{self, BodyField, BodyType, Spec, body};
use super::wire::{
    Body, Created, DistinctResponse, InfoResponse, List, Message, Nullable, Obj, PostBody, PutBody,
    RelatedObjects, RelatedResponse, Reply, ResultOf, Saved, Wire,
};
use crate::assets::Kind;
use crate::auth::CurrentUser;
use crate::connections;
use crate::engines::{ColumnInfo, EngineError};
use crate::services;
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, ChildWrite, DATABASE, DATASET, DATASET_COLUMN, DATASET_METRIC};
use crate::store::model::{Op, Pred, Record};

const BODY: &[BodyField] = &[
    BodyField {
        key: "database",
        field: "database",
        ty: BodyType::Int,
        required: true,
        nullable: false,
    },
    BodyField {
        key: "database_id",
        field: "database",
        ty: BodyType::Int,
        required: false,
        nullable: false,
    },
    body("catalog", BodyType::Str(0, 250), false),
    body("schema", BodyType::Str(0, 250), false),
    body("table_name", BodyType::Str(1, 250), true),
    body("sql", BodyType::Str(0, 10_000_000), false),
    body("owners", BodyType::Ids("Owners are invalid"), false),
    body("description", BodyType::Str(0, 100_000), false),
    body("main_dttm_col", BodyType::Str(0, 250), false),
    body("filter_select_enabled", BodyType::Bool, false).not_null(),
    body("fetch_values_predicate", BodyType::Str(0, 100_000), false),
    body("normalize_columns", BodyType::Bool, false).not_null(),
    body("always_filter_main_dttm", BodyType::Bool, false).not_null(),
    body("offset", BodyType::Int, false).not_null(),
    body("default_endpoint", BodyType::Str(0, 10_000), false),
    body("cache_timeout", BodyType::Int, false),
    body("is_sqllab_view", BodyType::Bool, false).not_null(),
    body("template_params", BodyType::Str(0, 100_000), false),
    body("extra", BodyType::JsonStr, false),
    body("is_managed_externally", BodyType::Bool, false).not_null(),
    body("external_url", BodyType::Str(0, 10_000), false),
    body("uuid", BodyType::Str(36, 36), false).not_null(),
];

/// The dataset resource.
pub static SPEC: Spec = Spec {
    name: "Dataset",
    model: &DATASET,
    view_menu: "Dataset",
    noun: "dataset",
    list_title: "List Sqla Table",
    show_title: "Show Sqla Table",
    add_title: "Add Sqla Table",
    edit_title: "Edit Sqla Table",
    list_columns: &[
        "id",
        "uuid",
        "database.id",
        "database.database_name",
        "database.uuid",
        "changed_by_name",
        "changed_by.first_name",
        "changed_by.last_name",
        "changed_by.id",
        "changed_on_utc",
        "changed_on_delta_humanized",
        "default_endpoint",
        "description",
        "datasource_type",
        "explore_url",
        "extra",
        "kind",
        "owners.id",
        "owners.first_name",
        "owners.last_name",
        "catalog",
        "schema",
        "sql",
        "table_name",
    ],
    show_columns: &[],
    order_columns: &[
        "table_name",
        "catalog",
        "schema",
        "changed_by.first_name",
        "changed_on_delta_humanized",
        "database.database_name",
        "id",
        "changed_on",
    ],
    search: &[
        ("id", &[("dataset_is_certified", "Is certified")]),
        ("uuid", &[]),
        ("database", &[]),
        ("owners", &[]),
        ("catalog", &[]),
        ("schema", &[]),
        ("sql", &[("dataset_is_null_or_empty", "Null or Empty")]),
        ("table_name", &[]),
        ("created_by", &[]),
        ("changed_by", &[]),
    ],
    base_order: Some(("changed_on", true)),
    max_page_size: super::listquery::FAB_API_MAX_PAGE_SIZE,
    body: BODY,
    related: &["owners", "database", "created_by", "changed_by"],
    distinct: &["schema", "table_name", "catalog"],
    permissions: &[
        "can_read",
        "can_write",
        "can_export",
        "can_duplicate",
        "can_get_or_create_dataset",
        "can_get_drill_info",
        "can_warm_up_cache",
    ],
    computed: &[
        ("datasource_type", Wire::Str),
        ("explore_url", Wire::Str),
        ("kind", Wire::Str),
        ("url", Wire::Str),
        ("uid", Wire::Str),
        ("datasource_name", Wire::Str),
        ("name", Wire::Str),
    ],
};

crate::wire_resource!(Dataset, SPEC);

fn custom(f: &super::listquery::Filter, _: Option<&CurrentUser>) -> Result<Pred, ApiError> {
    let on = !matches!(f.value, Json_::Bool(false));
    Ok(match f.opr.as_str() {
        "dataset_is_null_or_empty" => catalog::dataset_is_physical(on),
        _ => catalog::dataset_certified(on),
    })
}

/// A person as a dataset's show names them.
#[derive(Object)]
struct PersonRef {
    id: i64,
    first_name: String,
    last_name: String,
}

/// A column of a dataset's show (Superset's `DatasetColumnsPutSchema` fields).
#[derive(Object)]
struct DatasetColumnWire {
    id: i64,
    uuid: String,
    column_name: String,
    verbose_name: Nullable<String>,
    description: Nullable<String>,
    /// SQL, for a calculated column.
    expression: Nullable<String>,
    filterable: bool,
    groupby: bool,
    is_active: bool,
    is_dttm: bool,
    python_date_format: Nullable<String>,
    #[oai(rename = "type")]
    ty: Nullable<String>,
    /// Superset's `GenericDataType`.
    type_generic: i64,
    advanced_data_type: Nullable<String>,
    extra: Nullable<String>,
    changed_on: Nullable<String>,
    created_on: Nullable<String>,
}

/// A metric of a dataset's show.
#[derive(Object)]
struct DatasetMetricWire {
    id: i64,
    uuid: String,
    metric_name: String,
    verbose_name: Nullable<String>,
    metric_type: Nullable<String>,
    /// Its SQL.
    expression: String,
    description: Nullable<String>,
    d3format: Nullable<String>,
    currency: Nullable<Any<Json_>>,
    extra: Nullable<String>,
    warning_text: Nullable<String>,
    changed_on: Nullable<String>,
    created_on: Nullable<String>,
}

/// The database of a dataset's show.
#[derive(Object)]
struct DatasetDatabaseWire {
    id: i64,
    database_name: String,
    uuid: String,
    backend: String,
}

/// `GET /dataset/<pk>`'s record: every stored field (as the model names it) plus these.
#[derive(Object)]
struct DatasetShowItemWire {
    id: i64,
    table_name: String,
    schema: Nullable<String>,
    sql: Nullable<String>,
    description: Nullable<String>,
    main_dttm_col: Nullable<String>,
    /// `physical` or `virtual`.
    kind: String,
    datasource_type: String,
    url: String,
    uid: String,
    name: String,
    database: Nullable<DatasetDatabaseWire>,
    owners: Vec<PersonRef>,
    created_by: Nullable<PersonRef>,
    changed_by: Nullable<PersonRef>,
    select_star: Nullable<String>,
    columns: Vec<DatasetColumnWire>,
    metrics: Vec<DatasetMetricWire>,
    /// Column and metric name → label.
    verbose_map: Any<Json_>,
}

/// `GET /dataset/<pk>`.
#[derive(Object)]
struct DatasetShowResponse {
    id: i64,
    result: DatasetShowItemWire,
    show_title: String,
}

/// A person's name in `drill_info`.
#[derive(Object)]
struct PersonName {
    first_name: String,
    last_name: String,
}

/// A groupable column in `drill_info`.
#[derive(Object)]
struct DrillColumn {
    column_name: String,
    verbose_name: Nullable<String>,
}

/// Superset's `DatasetDrillInfoSchema`.
#[derive(Object)]
struct DrillInfo {
    /// The dataset's id.
    id: i64,
    /// Its table name.
    table_name: String,
    /// The columns a chart may be drilled by.
    columns: Vec<DrillColumn>,
    /// Its owners.
    owners: Vec<PersonName>,
    /// Who created it.
    created_by: Nullable<PersonName>,
    /// When, humanized.
    created_on_humanized: Nullable<String>,
    /// Who changed it last.
    changed_by: Nullable<PersonName>,
    /// When, humanized.
    changed_on_humanized: Nullable<String>,
}

/// Superset's `DatasetDrillInfoSchema`: the groupable columns (name and verbose name), the
/// owners', creator's and last editor's names, and both times humanized.
async fn drill_info_json(state: &AppState, id: i64) -> Result<Json_, ApiError> {
    let rec = state
        .store
        .load_one(&DATASET, id, &["owners", "created_by", "changed_by"])
        .await?;
    let (columns, _) = state.store.dataset_children(id).await?;
    let name =
        |u: &Record| json!({"first_name": u.text("first_name"), "last_name": u.text("last_name")});
    let one = |rel: &str| rec.related(rel).first().map_or(Json_::Null, name);
    let humanized = |f: &str| {
        rec.get::<chrono::NaiveDateTime>(f)
            .map_or(Json_::Null, |t| json!(resource::humanize(t)))
    };
    Ok(json!({
        "id": rec.id,
        "table_name": rec.text("table_name"),
        "columns": columns
            .iter()
            .filter(|c| c.flag("groupby"))
            .map(|c| json!({"column_name": c.text("column_name"), "verbose_name": c.get::<String>("verbose_name")}))
            .collect::<Vec<_>>(),
        "owners": rec.related("owners").iter().map(name).collect::<Vec<_>>(),
        "created_by": one("created_by"),
        "created_on_humanized": humanized("created_on"),
        "changed_by": one("changed_by"),
        "changed_on_humanized": humanized("changed_on"),
    }))
}

fn child_writes(items: &Json_, key: &str, metric: bool) -> Result<Vec<ChildWrite>, ApiError> {
    let Some(items) = items.as_array() else {
        return Err(ApiError::fields(
            Fault::BadRequest,
            json!({ key: ["Not a valid list."] }),
        ));
    };
    let mut out = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let bad = |field: &str, msg: &str| {
            ApiError::fields(
                Fault::BadRequest,
                json!({ key: { i.to_string(): { field: [msg] } } }),
            )
        };
        let Some(obj) = item.as_object() else {
            return Err(bad("_schema", "Invalid input type."));
        };
        let texts: &[&'static str] = if metric {
            &[
                "metric_name",
                "expression",
                "metric_type",
                "d3format",
                "verbose_name",
                "warning_text",
                "description",
                "extra",
                "uuid",
            ]
        } else {
            &[
                "column_name",
                "type",
                "advanced_data_type",
                "verbose_name",
                "description",
                "expression",
                "extra",
                "python_date_format",
                "uuid",
            ]
        };
        let bools: &[&'static str] = if metric {
            &[]
        } else {
            &["filterable", "groupby", "is_active", "is_dttm"]
        };
        let required: &[&str] = if metric {
            &["metric_name", "expression"]
        } else {
            &["column_name"]
        };
        let mut w = ChildWrite {
            id: None,
            values: vec![],
        };
        for r in required {
            if obj
                .get(*r)
                .and_then(Json_::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(bad(r, "Missing data for required field."));
            }
        }
        for f in texts {
            match obj.get(*f) {
                None => {}
                Some(Json_::Null) => w.values.push((f, Value::Null)),
                Some(Json_::String(s)) => w.values.push((f, Value::Text(s.clone()))),
                Some(_) => return Err(bad(f, "Not a valid string.")),
            }
        }
        if metric {
            match obj.get("currency") {
                None => {}
                Some(Json_::Null) => w.values.push(("currency", Value::Null)),
                Some(Json_::String(s)) => w.values.push(("currency", Value::Text(s.clone()))),
                Some(v @ Json_::Object(_)) => {
                    w.values.push(("currency", Value::Text(v.to_string())))
                }
                Some(_) => return Err(bad("currency", "Not a valid string.")),
            }
        }
        for f in bools {
            match obj.get(*f) {
                None | Some(Json_::Null) => {}
                Some(Json_::Bool(b)) => w.values.push((f, Value::Bool(*b))),
                Some(_) => return Err(bad(f, "Not a valid boolean.")),
            }
        }
        match obj.get("id") {
            None | Some(Json_::Null) => {}
            Some(v) => {
                w.id = Some(
                    v.as_i64()
                        .ok_or_else(|| bad("id", "Not a valid integer."))?,
                )
            }
        }
        let name = obj
            .get(if metric { "metric_name" } else { "column_name" })
            .and_then(Json_::as_str)
            .unwrap_or("");
        if !names.insert(name.to_owned()) {
            let msg = if metric {
                "One or more metrics are duplicated"
            } else {
                "One or more columns are duplicated"
            };
            return Err(ApiError::fields(
                Fault::Unprocessable,
                json!({ key: [msg] }),
            ));
        }
        out.push(w);
    }
    Ok(out)
}

fn introspected(cols: &[ColumnInfo]) -> Vec<ChildWrite> {
    cols.iter()
        .map(|c| ChildWrite {
            id: None,
            values: vec![
                ("column_name", Value::Text(c.name.clone())),
                ("type", Value::Text(c.type_name.clone())),
                ("is_dttm", Value::Bool(c.is_dttm)),
                ("groupby", Value::Bool(true)),
                ("filterable", Value::Bool(true)),
                ("is_active", Value::Bool(true)),
            ],
        })
        .collect()
}

fn count_metric() -> ChildWrite {
    ChildWrite {
        id: None,
        values: vec![
            ("metric_name", Value::Text("count".into())),
            ("verbose_name", Value::Text("COUNT(*)".into())),
            ("metric_type", Value::Text("count".into())),
            ("expression", Value::Text("COUNT(*)".into())),
        ],
    }
}

/// The dataset endpoints.
pub struct DatasetApi {
    pub(super) state: Arc<AppState>,
}

impl DatasetApi {
    async fn resolve(&self, id: i64, user: &CurrentUser) -> Result<i64, ApiError> {
        let scope = catalog::dataset_scope(user.grants());
        resource::in_reach(&self.state, &DATASET, id, &scope, resource::forbidden).await
    }

    /// The columns of a table or query, from the database itself.
    async fn introspect(
        &self,
        user: &CurrentUser,
        database: i64,
        schema: Option<&str>,
        table: &str,
        sql: Option<(&str, Option<&str>)>,
    ) -> Result<Vec<ColumnInfo>, ApiError> {
        let spec = connections::connection_spec(&self.state, database).await?;
        match sql.filter(|(s, _)| !s.trim().is_empty()) {
            Some((sql, params)) => {
                let sql = self
                    .saved_sql(user, database, spec.uri.engine, sql, params)
                    .await?;
                self.state
                    .engines
                    .query_columns(&spec, &sql)
                    .await
                    .map_err(|e| {
                        ApiError::fields(Fault::Unprocessable, json!({"sql": [e.message()]}))
                    })
            }
            None => match self
                .state
                .engines
                .table_metadata(&spec, schema, table)
                .await
            {
                Ok(meta) => Ok(meta.columns),
                Err(EngineError::TableNotFound { .. }) => Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"table_name": [format!("Table [{table}] could not be found, please double check your database connection, schema, and table name")]}),
                )),
                Err(e) => Err(engine_error(Fault::Unprocessable, spec.uri.engine, &e)),
            },
        }
    }

    /// Superset's check of a virtual dataset's SQL when it is created or changed
    /// (`raise_for_access(database, sql)`, the SQL Lab rule): a user who may not read every
    /// table the SQL reads is refused with `DatasetDataAccessIsNotAllowed`, a 422 on `sql`.
    async fn check_sql_access(
        &self,
        user: &CurrentUser,
        database: i64,
        sql: &str,
        template_params: Option<&str>,
    ) -> Result<(), ApiError> {
        if sql.trim().is_empty() {
            return Ok(());
        }
        let db = self.state.store.load_one(&DATABASE, database, &[]).await?;
        let spec = connections::connection_spec(&self.state, database).await?;
        let dialect = crate::query::sql::sql_dialect(spec.uri.engine);
        let sql = self
            .saved_sql(user, database, spec.uri.engine, sql, template_params)
            .await?;
        match services::sqllab::access_refusal(&self.state, user, &db, Some((dialect, &sql)))
            .await?
        {
            None => Ok(()),
            Some(refusal) => Err(ApiError::fields(
                Fault::Unprocessable,
                json!({"sql": [refusal.to_string()]}),
            )),
        }
    }

    /// A virtual dataset's SQL as saved (its template rendered without request values, see
    /// [`services::templating::saved_sql`]); a template that does not render is a 422 on
    /// `sql`, as any SQL the database refuses.
    async fn saved_sql(
        &self,
        user: &CurrentUser,
        database: i64,
        engine: crate::uri::Engine,
        sql: &str,
        template_params: Option<&str>,
    ) -> Result<String, ApiError> {
        match services::templating::saved_sql(
            &self.state,
            user,
            database,
            engine,
            sql,
            template_params,
        )
        .await
        {
            Ok(sql) => Ok(sql),
            Err(services::Error::Query(e @ crate::query::QueryError::DatasetTemplate(_))) => {
                tracing::info!(message = "Dataset template refused.", reason = %e);
                Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"sql": [e.to_string()]}),
                ))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn create(&self, user: &CurrentUser, body: &Json_) -> Result<i64, ApiError> {
        let mut changes = resource::changes_from_body(&SPEC, body, false)?;
        let Some(Value::Int(db)) = changes.get("database").cloned() else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"database": ["Missing data for required field."]}),
            ));
        };
        let Some(Value::Text(table)) = changes.get("table_name").cloned() else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"table_name": ["Missing data for required field."]}),
            ));
        };
        if !self
            .state
            .store
            .matches(&DATABASE, db, &Pred::all())
            .await?
        {
            return Err(ApiError::fields(
                Fault::Unprocessable,
                json!({"database": ["Database does not exist"]}),
            ));
        }
        let sql = match changes.get("sql") {
            Some(Value::Text(s)) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        };
        // What the dataset reads must be readable by its creator (Superset lets an owner read
        // their dataset's data, so creating one must not widen access). A physical dataset
        // needs the database (`can_access_database`, as an import asks it); a virtual one is
        // judged by the tables its SQL reads, below, as SQL Lab judges it.
        if sql.is_none() && !user.grants().database(db) {
            return Err(resource::forbidden());
        }
        resource::check_links(&self.state, &SPEC, &changes).await?;
        let schema = match changes.get("schema") {
            Some(Value::Text(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        };
        let dup = Pred::And(vec![
            Pred::field(&DATASET, "database", Op::RelOneToMany, Value::Int(db))?,
            Pred::field(&DATASET, "table_name", Op::Eq, Value::Text(table.clone()))?,
            Pred::field(&DATASET, "schema", Op::Eq, Value::from(schema.clone()))?,
        ]);
        if self
            .state
            .store
            .list_ids(&DATASET, &dup, None, None)
            .await?
            .0
            > 0
        {
            return Err(ApiError::fields(
                Fault::Unprocessable,
                json!({"table_name": [format!("Dataset {} already exists", match &schema { Some(s) => format!("{s}.{table}"), None => table.clone() })]}),
            ));
        }
        let params = match changes.get("template_params") {
            Some(Value::Text(p)) => Some(p.clone()),
            _ => None,
        };
        if let Some(sql) = &sql {
            self.check_sql_access(user, db, sql, params.as_deref())
                .await?;
        }
        let cols = self
            .introspect(
                user,
                db,
                schema.as_deref(),
                &table,
                sql.as_deref().map(|s| (s, params.as_deref())),
            )
            .await?;
        resource::with_creator(&mut changes, user.user.id);
        if let Some(dttm) = cols.iter().find(|c| c.is_dttm)
            && changes.get("main_dttm_col").is_none()
        {
            changes.set("main_dttm_col", dttm.name.clone());
        }
        let id = self
            .state
            .store
            .save_dataset(
                None,
                &changes,
                Some(&introspected(&cols)),
                Some(&[count_metric()]),
                Some(user.user.id),
            )
            .await?;
        tracing::info!(dataset_id = id, columns = cols.len(), "dataset created");
        Ok(id)
    }

    /// Re-reads the columns from the database: new ones are added, types updated, columns
    /// gone from the source dropped unless they are expressions; metrics stay.
    async fn refresh(&self, user: &CurrentUser, id: i64) -> Result<(), ApiError> {
        let rec = self
            .state
            .store
            .load_one(&DATASET, id, &["database"])
            .await?;
        let db = rec
            .one("database")
            .map(|d| d.id)
            .ok_or_else(ApiError::not_found)?;
        let sql = rec.get::<String>("sql");
        let params = rec.get::<String>("template_params");
        let cols = self
            .introspect(
                user,
                db,
                rec.get::<String>("schema").as_deref(),
                &rec.text("table_name"),
                sql.as_deref().map(|s| (s, params.as_deref())),
            )
            .await?;
        let (existing, _) = self.state.store.dataset_children(id).await?;
        let mut writes = Vec::new();
        for c in &existing {
            let name = c.text("column_name");
            let fresh = cols.iter().find(|f| f.name == name);
            match fresh {
                Some(f) => writes.push(ChildWrite {
                    id: Some(c.id),
                    values: vec![
                        ("type", Value::Text(f.type_name.clone())),
                        ("is_dttm", Value::Bool(f.is_dttm || c.flag("is_dttm"))),
                    ],
                }),
                None if c.get::<String>("expression").is_some_and(|e| !e.is_empty()) => {
                    writes.push(ChildWrite {
                        id: Some(c.id),
                        values: vec![],
                    });
                }
                None => {}
            }
        }
        let known: Vec<String> = existing.iter().map(|c| c.text("column_name")).collect();
        let new: Vec<ColumnInfo> = cols
            .into_iter()
            .filter(|c| !known.contains(&c.name))
            .collect();
        writes.extend(introspected(&new));
        self.state
            .store
            .save_dataset(
                Some(id),
                &catalog::Changes::default(),
                Some(&writes),
                None,
                None,
            )
            .await?;
        Ok(())
    }
}

#[OpenApi(prefix_path = "/api/v1/dataset", tag = "Tags::Dataset")]
impl DatasetApi {
    /// Export as a bundle (with everything the records depend on).
    #[oai(path = "/export", method = "get", operation_id = "dataset_export")]
    async fn export(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
        token: Query<Option<String>>,
    ) -> Result<ZipFile, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_export", SPEC.view_menu).await?;
        let scope = catalog::dataset_scope(user.grants());
        let ids = bundles::export_ids(&self.state, SPEC.model, q.0.as_deref(), &scope).await?;
        bundles::export(&self.state, Kind::Dataset, &ids, token.0).await
    }

    /// Import a bundle (multipart `formData`, `overwrite`, `passwords`).
    #[oai(path = "/import", method = "post", operation_id = "dataset_import")]
    async fn import(&self, auth: Auth, form: ImportForm) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        bundles::import(&self.state, &auth, Kind::Dataset, user, form).await
    }

    /// List datasets.
    #[oai(path = "/", method = "get", operation_id = "dataset_list")]
    async fn list(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<Dataset>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::dataset_scope(user.grants());
        resource::list(
            &self.state,
            &SPEC,
            q.0.as_deref(),
            Some(&user),
            scope,
            &custom,
            &computed,
        )
        .await
    }

    /// Form and filter metadata.
    #[oai(path = "/_info", method = "get", operation_id = "dataset_info")]
    async fn info(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<InfoResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::info(&self.state, &SPEC, q.0.as_deref(), &user).await
    }

    /// Values of a related column.
    #[oai(
        path = "/related/:col",
        method = "get",
        operation_id = "dataset_related"
    )]
    async fn related(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<RelatedResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::related(&self.state, &SPEC, &col.0, q.0.as_deref(), &user).await
    }

    /// Distinct values of a column.
    #[oai(
        path = "/distinct/:col",
        method = "get",
        operation_id = "dataset_distinct"
    )]
    async fn distinct(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<DistinctResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::dataset_scope(user.grants());
        resource::distinct(&self.state, &SPEC, &col.0, q.0.as_deref(), scope).await
    }

    /// One dataset with its columns, metrics and database.
    #[oai(path = "/:pk", method = "get", operation_id = "dataset_get")]
    async fn get(
        &self,
        auth: Auth,
        pk: Path<i64>,
    ) -> Result<Reply<Obj<DatasetShowResponse>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        let result = show_json(&self.state, id).await?;
        Ok(Reply::new(
            json!({"id": id, "result": result, "show_title": SPEC.show_title}),
        ))
    }

    /// Create a dataset; its columns are read from the database.
    #[oai(path = "/", method = "post", operation_id = "dataset_post")]
    async fn post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<Dataset>>>,
    ) -> Result<Created<Saved<Dataset>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        resource::changes_from_body(
            &SPEC,
            &body.0.value,
            body.0.value.get("database_id").is_none_or(Json_::is_null),
        )?;
        let id = self.create(&user, &body.0.value).await?;
        let data = dataset_data(&self.state, id).await?;
        Ok(Created::new(
            json!({"id": id, "result": resource::echo(&SPEC, &body.0.value), "data": data}),
        ))
    }

    /// Update a dataset; `columns`/`metrics` replace the full sets.
    #[oai(path = "/:pk", method = "put", operation_id = "dataset_put")]
    async fn put(
        &self,
        auth: Auth,
        pk: Path<i64>,
        override_columns: Query<Option<bool>>,
        body: JsonBody<Body<PutBody<Dataset>>>,
    ) -> Result<Reply<Saved<Dataset>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        let mut changes = resource::changes_from_body(&SPEC, &body.0.value, false)?;
        resource::keep_owner(&mut changes, &user);
        resource::check_links(&self.state, &SPEC, &changes).await?;
        if let Some(Value::Int(db)) = changes.get("database").cloned()
            && !self
                .state
                .store
                .matches(&DATABASE, db, &Pred::all())
                .await?
        {
            return Err(ApiError::fields(
                Fault::Unprocessable,
                json!({"database": ["Database does not exist"]}),
            ));
        }
        // Superset's `DatabaseChangeValidationError`: a dataset stays on its database, or an
        // owner could carry it (and, as its owner, its data access) to any connection.
        if let Some(Value::Int(db)) = changes.get("database").cloned() {
            let current = self.state.store.load_one(&DATASET, id, &[]).await?;
            if current.get::<i64>("database_id") != Some(db) {
                return Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"database": ["Database not allowed to change"]}),
                ));
            }
        }
        changes.values.retain(|(n, _)| *n != "uuid");
        let new_sql = match changes.get("sql") {
            Some(Value::Text(s)) => Some(s.clone()),
            _ => None,
        };
        let new_db = match changes.get("database") {
            Some(Value::Int(db)) => Some(*db),
            _ => None,
        };
        // Template parameters change what a templated SQL renders to, so they are judged too.
        let new_params = match changes.get("template_params") {
            Some(Value::Text(p)) => Some(p.clone()),
            _ => None,
        };
        if new_sql.is_some() || new_db.is_some() || new_params.is_some() {
            // The SQL as it will be, on the database it will run on.
            let rec = self
                .state
                .store
                .load_one(&DATASET, id, &["database"])
                .await?;
            // Checked when it changes, as Superset does: unchanged SQL sent back with a form
            // is not re-judged.
            let old_db = rec.one("database").map(|d| d.id);
            let changed = new_sql.as_ref().is_some_and(|s| *s != rec.text("sql"))
                || new_db.is_some_and(|d| Some(d) != old_db)
                || new_params
                    .as_ref()
                    .is_some_and(|p| *p != rec.text("template_params"));
            let sql = new_sql.unwrap_or_else(|| rec.text("sql"));
            let params = new_params.unwrap_or_else(|| rec.text("template_params"));
            if changed && let Some(db) = new_db.or(old_db) {
                self.check_sql_access(&user, db, &sql, Some(&params))
                    .await?;
            }
        }
        let columns = body
            .0
            .value
            .get("columns")
            .map(|c| child_writes(c, "columns", false))
            .transpose()?;
        let metrics = body
            .0
            .value
            .get("metrics")
            .map(|m| child_writes(m, "metrics", true))
            .transpose()?;
        match self
            .state
            .store
            .save_dataset(
                Some(id),
                &changes,
                columns.as_deref(),
                metrics.as_deref(),
                Some(user.user.id),
            )
            .await
        {
            Err(crate::store::Error::NotFound) => {
                return Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"columns": ["One or more columns do not exist"]}),
                ));
            }
            Err(crate::store::Error::Conflict { .. }) => {
                return Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"table_name": ["Dataset already exists"]}),
                ));
            }
            other => other?,
        };
        if override_columns.0 == Some(true) {
            self.refresh(&user, id).await?;
        }
        let mut result = resource::echo(&SPEC, &body.0.value);
        for k in ["columns", "metrics"] {
            if let Some(v) = body.0.value.get(k) {
                result[k] = v.clone();
            }
        }
        Ok(Reply::new(json!({"id": id, "result": result})))
    }

    /// Re-read the columns from the database.
    #[oai(
        path = "/:pk/refresh",
        method = "put",
        operation_id = "dataset_refresh"
    )]
    async fn refresh_columns(&self, auth: Auth, pk: Path<i64>) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        self.refresh(&user, id).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Delete a dataset.
    #[oai(path = "/:pk", method = "delete", operation_id = "dataset_delete")]
    async fn delete(&self, auth: Auth, pk: Path<i64>) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        self.state.store.delete_datasets(&[id]).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Delete several datasets: `?q=!(1,2)`.
    #[oai(path = "/", method = "delete", operation_id = "dataset_bulk_delete")]
    async fn bulk_delete(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let ids = resource::ids_query(q.0.as_deref())?;
        resource::ensure_changeable(&self.state, &SPEC, &ids, &user).await?;
        let n = self.state.store.delete_datasets(&ids).await?;
        Ok(resource::deleted(&SPEC, n))
    }

    /// Delete one column of a dataset.
    #[oai(
        path = "/:pk/column/:cid",
        method = "delete",
        operation_id = "dataset_column_delete"
    )]
    async fn delete_column(
        &self,
        auth: Auth,
        pk: Path<i64>,
        cid: Path<i64>,
    ) -> Result<Json<Message>, ApiError> {
        self.delete_child(auth, pk.0, cid.0, false).await
    }

    /// Delete one metric of a dataset.
    #[oai(
        path = "/:pk/metric/:mid",
        method = "delete",
        operation_id = "dataset_metric_delete"
    )]
    async fn delete_metric(
        &self,
        auth: Auth,
        pk: Path<i64>,
        mid: Path<i64>,
    ) -> Result<Json<Message>, ApiError> {
        self.delete_child(auth, pk.0, mid.0, true).await
    }

    /// Charts and dashboards using the dataset.
    #[oai(
        path = "/:pk/related_objects",
        method = "get",
        operation_id = "dataset_related_objects"
    )]
    async fn related_objects(
        &self,
        auth: Auth,
        pk: Path<i64>,
    ) -> Result<Json<RelatedObjects>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        Ok(Json(
            resource::related_objects(&self.state, &[id], false).await?,
        ))
    }

    /// What drilling into the dataset shows: its groupable columns and who made it. Readable
    /// datasets answer directly; otherwise `?q=(dashboard_id:N)` is Superset's fallback for
    /// embedded and dashboard-RBAC users, neither of which Liteset has, so a dataset out of
    /// reach is 403 when both records exist and 404 otherwise.
    #[oai(
        path = "/:pk/drill_info",
        method = "get",
        operation_id = "dataset_drill_info"
    )]
    async fn drill_info(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Obj<ResultOf<DrillInfo>>>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_get_drill_info", SPEC.view_menu).await?;
        let dashboard = super::listquery::parse_drill_info_query(q.0.as_deref())
            .map_err(|e| ApiError::bad_request(e.message()))?;
        let id = pk.0;
        let scope = catalog::dataset_scope(user.grants());
        if self.state.store.reach(&DATASET, id, &scope).await? != Some(true) {
            let Some(dashboard) = dashboard else {
                return Err(ApiError::not_found());
            };
            let dashboard_exists = self
                .state
                .store
                .matches(&catalog::DASHBOARD, dashboard, &Pred::all())
                .await?;
            let dataset_exists = self.state.store.matches(&DATASET, id, &Pred::all()).await?;
            if !(dashboard_exists && dataset_exists) {
                return Err(ApiError::not_found());
            }
            return Err(resource::forbidden());
        }
        Ok(Reply::new(
            json!({"result": drill_info_json(&self.state, id).await?}),
        ))
    }

    /// Copy a virtual dataset under a new name.
    #[oai(
        path = "/duplicate",
        method = "post",
        operation_id = "dataset_duplicate"
    )]
    async fn duplicate(
        &self,
        auth: Auth,
        body: JsonBody<Body<Obj<DuplicateBody>>>,
    ) -> Result<Duplicated, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_duplicate", SPEC.view_menu).await?;
        let (Some(base), Some(name)) = (
            body.0.value.get("base_model_id").and_then(Json_::as_i64),
            body.0.value.get("table_name").and_then(Json_::as_str),
        ) else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"base_model_id": ["Missing data for required field."], "table_name": ["Missing data for required field."]}),
            ));
        };
        let base = self.resolve(base, &user).await?;
        let rec = self
            .state
            .store
            .load_one(&DATASET, base, &["database"])
            .await?;
        if !is_virtual(&rec) {
            return Err(ApiError::message(
                Fault::Unprocessable,
                "Dataset is not virtual",
            ));
        }
        let new_body = json!({
            "database": rec.one("database").map(|d| d.id),
            "schema": rec.get::<String>("schema"),
            "table_name": name,
            "sql": rec.get::<String>("sql"),
            "template_params": rec.get::<String>("template_params"),
        });
        let id = self.create(&user, &new_body).await?;
        let (_, metrics) = self.state.store.dataset_children(base).await?;
        let writes: Vec<ChildWrite> = metrics
            .iter()
            .map(|m| ChildWrite {
                id: None,
                values: [
                    "metric_name",
                    "verbose_name",
                    "metric_type",
                    "expression",
                    "description",
                    "d3format",
                    "warning_text",
                    "extra",
                ]
                .into_iter()
                .map(|f| (f, m.values.get(f).cloned().unwrap_or(Value::Null)))
                .collect(),
            })
            .collect();
        self.state
            .store
            .save_dataset(
                Some(id),
                &catalog::Changes::default(),
                None,
                Some(&writes),
                None,
            )
            .await?;
        Ok(Duplicated::Created(Json(DuplicateSaved {
            id,
            result: DuplicateBody {
                base_model_id: base,
                table_name: name.to_owned(),
            },
        })))
    }

    /// The id of the dataset for a table, created when missing.
    #[oai(
        path = "/get_or_create",
        method = "post",
        operation_id = "dataset_get_or_create"
    )]
    async fn get_or_create(
        &self,
        auth: Auth,
        body: JsonBody<Body<Obj<GetOrCreateBody>>>,
    ) -> Result<Json<ResultOf<TableId>>, ApiError> {
        let user = resource::authorized(
            &self.state,
            &auth,
            "can_get_or_create_dataset",
            SPEC.view_menu,
        )
        .await?;
        let (Some(db), Some(table)) = (
            body.0.value.get("database_id").and_then(Json_::as_i64),
            body.0.value.get("table_name").and_then(Json_::as_str),
        ) else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"database_id": ["Missing data for required field."], "table_name": ["Missing data for required field."]}),
            ));
        };
        let schema = body
            .0
            .value
            .get("schema")
            .and_then(Json_::as_str)
            .filter(|s| !s.is_empty());
        let existing = Pred::And(vec![
            Pred::field(&DATASET, "database", Op::RelOneToMany, Value::Int(db))?,
            Pred::field(&DATASET, "table_name", Op::Eq, Value::Text(table.into()))?,
            Pred::field(&DATASET, "schema", Op::Eq, Value::from(schema))?,
        ]);
        if let Some(id) = self
            .state
            .store
            .list_ids(&DATASET, &existing, None, None)
            .await?
            .1
            .first()
        {
            return Ok(ResultOf::json(TableId { table_id: *id }));
        }
        let mut new_body = body.0.value.clone();
        new_body["database"] = json!(db);
        let id = self.create(&user, &new_body).await?;
        Ok(ResultOf::json(TableId { table_id: id }))
    }
}

impl DatasetApi {
    async fn delete_child(
        &self,
        auth: Auth,
        pk: i64,
        child: i64,
        metric: bool,
    ) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        let model = if metric {
            &DATASET_METRIC
        } else {
            &DATASET_COLUMN
        };
        let owned = Pred::field(model, "table_id", Op::Eq, Value::Int(id))?;
        if !self.state.store.matches(model, child, &owned).await? {
            return Err(ApiError::not_found());
        }
        self.state.store.delete_records(model, &[child]).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }
}

/// The body of `POST /dataset/duplicate`.
#[derive(Object)]
pub struct DuplicateBody {
    /// The virtual dataset to copy.
    pub base_model_id: i64,
    /// The copy's name.
    pub table_name: String,
}

/// What `POST /dataset/duplicate` answers.
#[derive(Object)]
pub struct DuplicateSaved {
    /// The new dataset's id.
    pub id: i64,
    /// The accepted body.
    pub result: DuplicateBody,
}

/// 201 with the copy.
#[derive(ApiResponse)]
pub enum Duplicated {
    /// Created.
    #[oai(status = 201)]
    Created(Json<DuplicateSaved>),
}

/// The body of `POST /dataset/get_or_create`.
#[derive(Object)]
pub struct GetOrCreateBody {
    /// The database.
    pub database_id: i64,
    /// The table.
    pub table_name: String,
    /// Its schema (the default one when absent).
    #[oai(skip_serializing_if_is_none)]
    pub schema: Option<String>,
    /// The owners of a created dataset.
    #[oai(skip_serializing_if_is_none)]
    pub owners: Option<Vec<i64>>,
}

/// `{"table_id": …}`.
#[derive(Object)]
pub struct TableId {
    /// The dataset's id.
    pub table_id: i64,
}
