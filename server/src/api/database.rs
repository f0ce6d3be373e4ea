//! `/api/v1/database/`: database connections (Superset's `DatabaseRestApi`).
//!
//! Passwords arrive inside `sqlalchemy_uri`, are sealed at rest (see `seal.rs`), and leave
//! only as `XXXXXXXXXX`. A URI sent back with the mask keeps the stored password.

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{Object, OpenApi};
use serde_json::{Value as Json_, json};

use super::Tags;
use super::bundles::{self, ImportForm, ZipFile};
use super::database_wire::{computed, masked_uri};
use super::error::{ApiError, Fault, engine_error};
use super::extract::{Auth, JsonBody};
use super::resource::{self, BodyField, BodyType, JsonValue, Spec, body};
use super::wire::{
    Body, Columns, Created, DistinctResponse, IdResult, InfoResponse, List, Message, Nullable, Obj,
    PostBody, PutBody, RelatedObjects, RelatedResponse, Reply, ResultOf, Saved, Show, Wire, concat,
};
use crate::assets::Kind;
use crate::auth::CurrentUser;
use crate::connections;
use crate::engines::{ConnectionSpec, EngineError};
use crate::services;
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, DATABASE, DATASET};
use crate::store::model::{Op, Pred, Record};
use crate::uri::{ConnectionUri, PASSWORD_MASK, ParametersError};

const BODY: &[BodyField] = &[
    body("database_name", BodyType::Str(1, 250), true),
    body("sqlalchemy_uri", BodyType::Str(1, 1024), true),
    body("cache_timeout", BodyType::Int, false),
    body("expose_in_sqllab", BodyType::Bool, false).not_null(),
    body("allow_run_async", BodyType::Bool, false).not_null(),
    body("allow_file_upload", BodyType::Bool, false).not_null(),
    body("allow_ctas", BodyType::Bool, false).not_null(),
    body("allow_cvas", BodyType::Bool, false).not_null(),
    body("allow_dml", BodyType::Bool, false).not_null(),
    body("force_ctas_schema", BodyType::Str(0, 250), false),
    body("impersonate_user", BodyType::Bool, false).not_null(),
    body("extra", BodyType::JsonStr, false),
    body("server_cert", BodyType::Str(0, 100_000), false),
    body("is_managed_externally", BodyType::Bool, false).not_null(),
    body("external_url", BodyType::Str(0, 10_000), false),
    body("uuid", BodyType::Str(36, 36), false).not_null(),
    body("configuration_method", BodyType::Str(0, 50), false).not_null(),
];

/// Superset's `ConfigurationMethod` values: a URI typed in, or the engine's connection form.
const CONFIGURATION_METHODS: [&str; 2] = ["sqlalchemy_form", "dynamic_form"];

/// The database resource.
/// What `GET /database/<pk>` shows.
const SHOW_COLUMNS: [&str; 17] = [
    "id",
    "uuid",
    "database_name",
    "cache_timeout",
    "expose_in_sqllab",
    "allow_run_async",
    "allow_file_upload",
    "configuration_method",
    "allow_ctas",
    "allow_cvas",
    "allow_dml",
    "backend",
    "driver",
    "force_ctas_schema",
    "impersonate_user",
    "is_managed_externally",
    "engine_information",
];

pub static SPEC: Spec = Spec {
    name: "Database",
    model: &DATABASE,
    view_menu: "Database",
    noun: "database",
    list_title: "List Database",
    show_title: "Show Database",
    add_title: "Add Database",
    edit_title: "Edit Database",
    list_columns: &[
        "allow_file_upload",
        "allow_ctas",
        "allow_cvas",
        "allow_dml",
        "allow_run_async",
        "allows_cost_estimate",
        "allows_subquery",
        "allows_virtual_table_explore",
        "backend",
        "changed_on",
        "changed_on_delta_humanized",
        "changed_by.first_name",
        "changed_by.last_name",
        "created_by.first_name",
        "created_by.last_name",
        "database_name",
        "explore_database_id",
        "expose_in_sqllab",
        "extra",
        "force_ctas_schema",
        "id",
        "uuid",
        "disable_data_preview",
        "disable_drill_to_detail",
        "allow_multi_catalog",
        "engine_information",
    ],
    show_columns: &SHOW_COLUMNS,
    order_columns: &[
        "allow_file_upload",
        "allow_dml",
        "allow_run_async",
        "changed_on",
        "changed_on_delta_humanized",
        "created_by.first_name",
        "database_name",
        "expose_in_sqllab",
        "id",
    ],
    search: &[
        (
            "allow_file_upload",
            &[("upload_is_enabled", "Upload Enabled")],
        ),
        ("allow_dml", &[]),
        ("allow_run_async", &[]),
        ("created_by", &[]),
        ("changed_by", &[]),
        ("database_name", &[]),
        ("expose_in_sqllab", &[]),
        ("uuid", &[]),
        ("id", &[]),
    ],
    base_order: Some(("changed_on", true)),
    max_page_size: super::listquery::UNLIMITED_PAGE_SIZE,
    body: BODY,
    related: &["created_by", "changed_by"],
    distinct: &["database_name"],
    permissions: &["can_read", "can_write", "can_export", "can_upload"],
    computed: &[
        ("allows_cost_estimate", Wire::Bool),
        ("allows_subquery", Wire::Bool),
        ("allows_virtual_table_explore", Wire::Bool),
        ("backend", Wire::Str),
        ("driver", Wire::Str),
        ("explore_database_id", Wire::Int),
        ("disable_data_preview", Wire::Bool),
        ("disable_drill_to_detail", Wire::Bool),
        ("allow_multi_catalog", Wire::Bool),
        ("engine_information", Wire::Object),
    ],
};

crate::wire_resource!(Database, SPEC);

fn custom(f: &super::listquery::Filter, _: Option<&CurrentUser>) -> Result<Pred, ApiError> {
    let on = !matches!(f.value, Json_::Bool(false));
    Ok(catalog::database_allows_file_upload(on))
}

/// Superset's `sqlalchemy_uri_validator`: a URI the connection guard refuses is a field
/// error of the request (400), before anything connects.
pub fn ensure_safe(state: &AppState, uri: &ConnectionUri) -> Result<(), ApiError> {
    state.engines.guard().check(uri).map_err(|e| {
        ApiError::fields(
            Fault::BadRequest,
            json!({"sqlalchemy_uri": [e.to_string()]}),
        )
    })
}

/// Superset's `server_cert_validator`: a given certificate must be PEM certificate(s), else a
/// field error of the request (400) before anything connects. Empty counts as none.
fn checked_server_cert(cert: Option<&str>) -> Result<Option<String>, ApiError> {
    match cert.filter(|c| !c.trim().is_empty()) {
        None => Ok(None),
        Some(pem) => match crate::pgtls::validate_server_cert(pem) {
            Ok(()) => Ok(Some(pem.to_owned())),
            Err(_) => Err(ApiError::fields(
                Fault::BadRequest,
                json!({"server_cert": ["Invalid certificate"]}),
            )),
        },
    }
}

/// The `server_cert` a write sets: `None` when the body leaves it alone, `Some(None)` when it
/// clears it.
fn server_cert_change(changes: &catalog::Changes) -> Result<Option<Option<String>>, ApiError> {
    match changes.get("server_cert") {
        None => Ok(None),
        Some(Value::Text(cert)) => checked_server_cert(Some(cert)).map(Some),
        Some(_) => Ok(Some(None)),
    }
}

fn uri_error(e: &crate::uri::UriError) -> ApiError {
    ApiError::fields(
        Fault::Unprocessable,
        json!({"sqlalchemy_uri": [e.to_string()]}),
    )
}

/// The database endpoints.
pub struct DatabaseApi {
    pub(super) state: Arc<AppState>,
}

impl DatabaseApi {
    /// 404 unless the database exists and is in the user's reach.
    async fn resolve(&self, id: i64, user: &CurrentUser) -> Result<i64, ApiError> {
        let scope = catalog::database_scope(user.grants());
        resource::in_reach(&self.state, &DATABASE, id, &scope, resource::forbidden).await
    }

    /// Validates the URI and name, tests the connection, and returns the changes with the
    /// password split off (`None` = keep stored, `Some(p)` = new password).
    async fn prepare(
        &self,
        body: &Json_,
        id: Option<i64>,
    ) -> Result<
        (
            catalog::Changes,
            Option<Option<String>>,
            Option<ConnectionUri>,
        ),
        ApiError,
    > {
        let (body, form_uri) = form_uri(body)?;
        let mut changes = resource::changes_from_body(&SPEC, &body, id.is_none())?;
        server_cert_change(&changes)?;
        if let Some(Value::Text(method)) = changes.get("configuration_method")
            && !CONFIGURATION_METHODS.contains(&method.as_str())
        {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"configuration_method": ["Must be one of: sqlalchemy_form, dynamic_form."]}),
            ));
        }
        if let Some(Value::Text(name)) = changes.get("database_name").cloned() {
            let name = name.trim().to_owned();
            if let Some(other) = self
                .state
                .store
                .find_id(&DATABASE, "database_name", Value::Text(name.clone()))
                .await?
                && Some(other) != id
            {
                return Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"database_name": ["A database with the same name already exists."]}),
                ));
            }
            changes.set("database_name", name);
        }
        let mut uri = match (form_uri, changes.get("sqlalchemy_uri")) {
            (Some(uri), _) => uri,
            (None, Some(Value::Text(raw))) => {
                ConnectionUri::parse(raw).map_err(|e| uri_error(&e))?
            }
            (None, _) => return Ok((changes, None, None)),
        };
        ensure_safe(&self.state, &uri)?;
        let password = match uri.password.as_deref() {
            Some(PASSWORD_MASK) => {
                // The client echoed the mask: keep (and test with) the stored password.
                match id {
                    Some(id) => {
                        let stored = connections::connection_spec(&self.state, id).await?;
                        uri.unmask(&stored.uri).map_err(|e| uri_error(&e))?;
                    }
                    None => uri.password = None,
                }
                None
            }
            Some(p) => Some(Some(p.to_owned())),
            None => Some(None),
        };
        changes.set("sqlalchemy_uri", uri.without_password());
        Ok((changes, password, Some(uri)))
    }

    async fn test(
        &self,
        uri: &ConnectionUri,
        server_cert: Option<String>,
        fault: Fault,
    ) -> Result<(), ApiError> {
        let spec = ConnectionSpec {
            database_id: 0,
            uri: uri.clone(),
            revision: String::new(),
            options: None,
            server_cert,
        };
        self.state
            .engines
            .test_connection(&spec)
            .await
            .map_err(|e| {
                tracing::info!(
                    error_type = e.error_type(),
                    "database connection test failed"
                );
                engine_error(fault, uri.engine, &e)
            })
    }

    fn seal(
        &self,
        password: Option<Option<String>>,
        uuid: &str,
    ) -> Result<Option<Option<Vec<u8>>>, ApiError> {
        password
            .map(|p| {
                p.map(|p| {
                    self.state
                        .sealer
                        .seal(p.as_bytes(), uuid.as_bytes())
                        .map_err(|e| ApiError::internal(&e))
                })
                .transpose()
            })
            .transpose()
    }

    fn result(&self, body: &Json_, rec: &Record) -> Json_ {
        let mut result = resource::echo(&SPEC, body);
        result["sqlalchemy_uri"] = json!(masked_uri(rec));
        result["uuid"] = json!(rec.text("uuid"));
        result["expose_in_sqllab"] = json!(rec.flag("expose_in_sqllab"));
        result["configuration_method"] = json!(rec.text("configuration_method"));
        result["driver"] = computed(rec, "driver").unwrap_or_default();
        result["parameters"] = stored_parameters(rec);
        result
    }

    async fn pk_spec(&self, auth: &Auth, pk: i64, perm: &str) -> Result<ConnectionSpec, ApiError> {
        Ok(self.pk_reach(auth, pk, perm).await?.0)
    }

    /// [`Self::pk_spec`] with what of the database's tables the caller may see.
    async fn pk_reach(
        &self,
        auth: &Auth,
        pk: i64,
        perm: &str,
    ) -> Result<(ConnectionSpec, TableReach), ApiError> {
        let user = resource::authorized(&self.state, auth, perm, SPEC.view_menu).await?;
        self.resolve(pk, &user).await?;
        let spec = connections::connection_spec(&self.state, pk).await?;
        let reach = TableReach::of(&self.state, &user, pk, &spec.uri).await?;
        Ok((spec, reach))
    }
}

/// What of one database's schemas and tables a user may see: Superset's
/// `get_schemas_accessible_by_user`, `get_datasources_accessible_by_user` and
/// `raise_for_access(database, table)`. Reaching a database through one dataset (which
/// lists the database) does not open its other tables: only `all_*_access`,
/// `database_access`, `schema_access` on the schema, or a physical dataset on the table
/// (granted or owned) does.
pub struct TableReach {
    whole: bool,
    schemas: Vec<String>,
    /// `(schema, table)` of the reachable physical datasets, schema as stored (may be empty).
    tables: Vec<(String, String)>,
    default_schema: String,
}

impl TableReach {
    pub async fn of(
        state: &AppState,
        user: &CurrentUser,
        db: i64,
        uri: &crate::uri::ConnectionUri,
    ) -> Result<Self, ApiError> {
        let default_schema = uri.default_schema();
        let g = user.grants();
        if g.all || g.database_ids.contains(&db) {
            return Ok(TableReach {
                whole: true,
                schemas: vec![],
                tables: vec![],
                default_schema,
            });
        }
        let name = state
            .store
            .load(&DATABASE, &[db], &[])
            .await?
            .pop()
            .map(|r| r.text("database_name"))
            .unwrap_or_default();
        let prefix = format!("[{name}].[");
        let schemas = g
            .schema_perms
            .iter()
            .filter_map(|p| p.strip_prefix(&prefix)?.strip_suffix(']'))
            .filter(|s| !s.contains("].["))
            .map(str::to_owned)
            .collect();
        let scope = Pred::And(vec![
            catalog::dataset_scope(g),
            catalog::datasets_in_database(db),
        ]);
        let (_, ids) = state.store.list_ids(&DATASET, &scope, None, None).await?;
        let tables = state
            .store
            .load(&DATASET, &ids, &[])
            .await?
            .iter()
            .filter(|d| d.text("sql").trim().is_empty())
            .map(|d| (d.text("schema"), d.text("table_name")))
            .collect();
        Ok(TableReach {
            whole: false,
            schemas,
            tables,
            default_schema,
        })
    }

    fn same_schema(&self, stored: &str, asked: Option<&str>) -> bool {
        let stored = if stored.is_empty() {
            &self.default_schema
        } else {
            stored
        };
        stored
            == asked
                .filter(|s| !s.is_empty())
                .unwrap_or(&self.default_schema)
    }

    /// Whether the schema may be listed: granted whole, or holding a reachable table.
    pub fn schema(&self, schema: &str) -> bool {
        self.whole
            || self.schemas.iter().any(|s| s == schema)
            || self
                .tables
                .iter()
                .any(|(s, _)| self.same_schema(s, Some(schema)))
    }

    /// Whether the table may be seen (`schema` `None` is the database's default schema).
    pub fn table(&self, schema: Option<&str>, table: &str) -> bool {
        self.whole
            || self.schemas.iter().any(|s| self.same_schema(s, schema))
            || self
                .tables
                .iter()
                .any(|(s, t)| t == table && self.same_schema(s, schema))
    }
}

/// Superset's answer for a table out of reach: the same 404 as a missing one, naming nothing.
fn table_hidden() -> ApiError {
    ApiError::sip40(
        Fault::NotFound,
        "TABLE_NOT_FOUND_ERROR",
        "No such table",
        json!({}),
    )
}

fn q_value(q: Option<&str>) -> Result<Json_, ApiError> {
    super::listquery::decode_q(q).map_err(|e| ApiError::bad_request(e.message()))
}

#[OpenApi(prefix_path = "/api/v1/database", tag = "Tags::Database")]
impl DatabaseApi {
    /// Export as a bundle (with everything the records depend on).
    #[oai(path = "/export", method = "get", operation_id = "database_export")]
    async fn export(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
        token: Query<Option<String>>,
    ) -> Result<ZipFile, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_export", SPEC.view_menu).await?;
        let scope = catalog::database_scope(user.grants());
        let ids = bundles::export_ids(&self.state, SPEC.model, q.0.as_deref(), &scope).await?;
        bundles::export(&self.state, Kind::Database, &ids, token.0).await
    }

    /// Import a bundle (multipart `formData`, `overwrite`, `passwords`).
    #[oai(path = "/import", method = "post", operation_id = "database_import")]
    async fn import(&self, auth: Auth, form: ImportForm) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        bundles::import(&self.state, &auth, Kind::Database, user, form).await
    }

    /// List database connections.
    #[oai(path = "/", method = "get", operation_id = "database_list")]
    async fn list(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<Database>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::database_scope(user.grants());
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
    #[oai(path = "/_info", method = "get", operation_id = "database_info")]
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
        operation_id = "database_related"
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
        operation_id = "database_distinct"
    )]
    async fn distinct(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<DistinctResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::database_scope(user.grants());
        resource::distinct(&self.state, &SPEC, &col.0, q.0.as_deref(), scope).await
    }

    /// One database connection.
    #[oai(path = "/:pk", method = "get", operation_id = "database_get")]
    async fn get(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<Database>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        resource::show(&self.state, &SPEC, id, q.0.as_deref(), &computed).await
    }

    /// The connection settings (URI with the password masked).
    #[oai(
        path = "/:pk/connection",
        method = "get",
        operation_id = "database_connection"
    )]
    async fn connection(
        &self,
        auth: Auth,
        pk: Path<i64>,
    ) -> Result<Reply<IdResult<Connection>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        let rec = self.state.store.load_one(&DATABASE, id, &[]).await?;
        let mut result = resource::render(&DATABASE, &rec, Connection::COLUMNS, &computed);
        result["parameters"] = stored_parameters(&rec);
        result["parameters_schema"] = parameters_schema(result["backend"].as_str().unwrap_or(""));
        result["masked_encrypted_extra"] = Json_::Null;
        Ok(Reply::new(json!({"id": id, "result": result})))
    }

    /// Create a database connection (tested first).
    #[oai(path = "/", method = "post", operation_id = "database_post")]
    async fn post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<Database>>>,
    ) -> Result<Created<Saved<Database>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let (mut changes, password, uri) = self.prepare(&body.0.value, None).await?;
        if let Some(uri) = &uri {
            let cert = server_cert_change(&changes)?.flatten();
            self.test(uri, cert, Fault::Unprocessable).await?;
        }
        let uuid = match changes.get("uuid") {
            Some(Value::Text(u)) => u.clone(),
            _ => uuid::Uuid::new_v4().to_string(),
        };
        changes.set("uuid", uuid.clone());
        let sealed = self.seal(password, &uuid)?;
        let id = self
            .state
            .store
            .save_database(None, &changes, sealed, Some(user.user.id))
            .await?;
        tracing::info!(database_id = id, "database created");
        let rec = self.state.store.load_one(&DATABASE, id, &[]).await?;
        Ok(Created::new(
            json!({"id": id, "result": self.result(&body.0.value, &rec)}),
        ))
    }

    /// Update a database connection.
    #[oai(path = "/:pk", method = "put", operation_id = "database_put")]
    async fn put(
        &self,
        auth: Auth,
        pk: Path<i64>,
        body: JsonBody<Body<PutBody<Database>>>,
    ) -> Result<Reply<Saved<Database>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        let (mut changes, password, uri) = self.prepare(&body.0.value, Some(id)).await?;
        if let Some(uri) = &uri {
            // The certificate the edited record will have: the body's, else the stored one.
            let cert = match server_cert_change(&changes)? {
                Some(cert) => cert,
                None => {
                    connections::connection_spec(&self.state, id)
                        .await?
                        .server_cert
                }
            };
            self.test(uri, cert, Fault::Unprocessable).await?;
        }
        changes.values.retain(|(n, _)| *n != "uuid");
        let rec = self.state.store.load_one(&DATABASE, id, &[]).await?;
        let sealed = self.seal(password, &rec.text("uuid"))?;
        self.state
            .store
            .save_database(Some(id), &changes, sealed, Some(user.user.id))
            .await?;
        self.state.engines.forget(id);
        let rec = self.state.store.load_one(&DATABASE, id, &[]).await?;
        Ok(Reply::new(
            json!({"id": id, "result": self.result(&body.0.value, &rec)}),
        ))
    }

    /// Delete a database connection without datasets.
    #[oai(path = "/:pk", method = "delete", operation_id = "database_delete")]
    async fn delete(&self, auth: Auth, pk: Path<i64>) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        match self.state.store.delete_database(id).await {
            Err(crate::store::Error::Conflict { message }) => {
                return Err(ApiError::message(Fault::Unprocessable, message));
            }
            other => other?,
        }
        self.state.engines.forget(id);
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Check the fields of the connection form, step by step (missing fields, host, port,
    /// then a real connection), as the dialog does while they are typed.
    #[oai(
        path = "/validate_parameters",
        method = "post",
        operation_id = "database_validate_parameters"
    )]
    async fn validate_parameters(
        &self,
        auth: Auth,
        body: JsonBody<Body<Obj<ValidateParametersBody>>>,
    ) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let form = form_check(&body.0.value)?;
        services::database::validate_form(&self.state, &user, form).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Test connection settings without saving them.
    #[oai(
        path = "/test_connection",
        method = "post",
        operation_id = "database_test_connection"
    )]
    async fn test_connection(
        &self,
        auth: Auth,
        body: JsonBody<Body<Obj<TestConnectionBody>>>,
    ) -> Result<Json<Message>, ApiError> {
        resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let body = &body.0.value;
        let Some(raw) = body.get("sqlalchemy_uri").and_then(Json_::as_str) else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"sqlalchemy_uri": ["Missing data for required field."]}),
            ));
        };
        let mut uri = ConnectionUri::parse(raw).map_err(|e| uri_error(&e))?;
        ensure_safe(&self.state, &uri)?;
        // The form's certificate, as Superset's command tests with (not the stored one).
        let cert = checked_server_cert(body.get("server_cert").and_then(Json_::as_str))?;
        if uri.password.as_deref() == Some(PASSWORD_MASK) {
            // Testing an existing connection from its edit form: use the stored password.
            let name = body
                .get("database_name")
                .and_then(Json_::as_str)
                .unwrap_or("");
            match self
                .state
                .store
                .find_id(&DATABASE, "database_name", Value::Text(name.into()))
                .await?
            {
                Some(id) => {
                    let stored = connections::connection_spec(&self.state, id).await?;
                    uri.unmask(&stored.uri).map_err(|e| uri_error(&e))?;
                }
                None => uri.password = None,
            }
        }
        self.test(&uri, cert, Fault::BadRequest).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Schemas of the database.
    #[oai(
        path = "/:pk/schemas",
        method = "get",
        operation_id = "database_schemas"
    )]
    async fn schemas(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Json<ResultOf<Vec<String>>>, ApiError> {
        q_value(q.0.as_deref())?;
        let (spec, reach) = self.pk_reach(&auth, pk.0, "can_read").await?;
        let mut schemas = self
            .state
            .engines
            .schemas(&spec)
            .await
            .map_err(|e| engine_error(Fault::Unprocessable, spec.uri.engine, &e))?;
        schemas.retain(|s| reach.schema(s));
        Ok(ResultOf::json(schemas))
    }

    /// The engines a connection can use, as Superset's connection dialog lists them: Liteset's
    /// two, both in Superset's default `PREFERRED_DATABASES` order (PostgreSQL, then SQLite).
    #[oai(
        path = "/available",
        method = "get",
        operation_id = "database_available"
    )]
    async fn available(&self, auth: Auth) -> Result<Reply<Obj<AvailableDatabases>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        Ok(Reply::new(json!({ "databases": available_engines() })))
    }

    /// Functions the editor autocompletes: `{"function_names": [...]}`.
    #[oai(
        path = "/:pk/function_names",
        method = "get",
        operation_id = "database_function_names"
    )]
    async fn function_names(
        &self,
        auth: Auth,
        pk: Path<i64>,
    ) -> Result<Json<FunctionNames>, ApiError> {
        let spec = self.pk_spec(&auth, pk.0, "can_read").await?;
        let names = crate::engines::function_names(spec.uri.engine);
        Ok(Json(FunctionNames {
            function_names: names.iter().map(|n| (*n).to_owned()).collect(),
        }))
    }

    /// Tables and views of a schema.
    #[oai(path = "/:pk/tables", method = "get", operation_id = "database_tables")]
    async fn tables(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Json<TablesWire>, ApiError> {
        let v = q_value(q.0.as_deref())?;
        let Some(schema) = v.get("schema_name").and_then(Json_::as_str) else {
            return Err(ApiError::bad_request(
                "Not a valid rison schema 'schema_name' is a required property",
            ));
        };
        let (spec, reach) = self.pk_reach(&auth, pk.0, "can_read").await?;
        let tables = self
            .state
            .engines
            .tables(&spec, schema)
            .await
            .map_err(|e| engine_error(Fault::Unprocessable, spec.uri.engine, &e))?;
        let result: Vec<TableWire> = tables
            .iter()
            .filter(|t| reach.table(Some(schema), &t.name))
            .map(|t| TableWire {
                value: t.name.clone(),
                ty: t.kind.as_str().to_owned(),
                extra: Nullable(None),
            })
            .collect();
        Ok(Json(TablesWire {
            count: result.len(),
            result,
        }))
    }

    /// Engine-specific extra metadata of a table (partitions, clustering, …). Neither
    /// PostgreSQL nor SQLite has any in Superset (`BaseEngineSpec`), so this is `{}` once
    /// the caller may read the database; explore asks for it on every dataset it opens.
    #[oai(
        path = "/:pk/table_metadata/extra",
        method = "get",
        operation_id = "database_table_extra_metadata"
    )]
    async fn table_extra_metadata(
        &self,
        auth: Auth,
        pk: Path<i64>,
        name: Query<Option<String>>,
        schema: Query<Option<String>>,
    ) -> Result<JsonValue, ApiError> {
        let Some(table) = name.0.filter(|n| !n.is_empty()) else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"name": ["Missing data for required field."]}),
            ));
        };
        // Superset answers a table out of reach as a missing one (`TableNotFoundException`).
        let (_, reach) = self.pk_reach(&auth, pk.0, "can_read").await?;
        if !reach.table(schema.0.as_deref(), &table) {
            return Err(table_hidden());
        }
        Ok(Json(json!({})))
    }

    /// Columns, keys and indexes of a table.
    #[oai(
        path = "/:pk/table_metadata",
        method = "get",
        operation_id = "database_table_metadata"
    )]
    async fn table_metadata(
        &self,
        auth: Auth,
        pk: Path<i64>,
        name: Query<Option<String>>,
        schema: Query<Option<String>>,
    ) -> Result<Json<TableMetadataWire>, ApiError> {
        let Some(table) = name.0.filter(|n| !n.is_empty()) else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"name": ["Missing data for required field."]}),
            ));
        };
        let (spec, reach) = self.pk_reach(&auth, pk.0, "can_read").await?;
        if !reach.table(schema.0.as_deref(), &table) {
            return Err(table_hidden());
        }
        let meta = self
            .state
            .engines
            .table_metadata(&spec, schema.0.as_deref(), &table)
            .await
            .map_err(|e| metadata_error(spec.uri.engine, &table, &e))?;
        let primary_key = meta.primary_key.as_ref().map(|p| KeyWire {
            column_names: p.column_names.clone(),
            name: p.name.clone().into(),
            ty: "pk".to_owned(),
        });
        let columns = meta
            .columns
            .iter()
            .map(|c| TableColumnWire {
                name: c.name.clone(),
                ty: c
                    .type_name
                    .split('(')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_owned(),
                long_type: c.type_name.clone(),
                keys: primary_key
                    .iter()
                    .filter(|p| p.column_names.contains(&c.name))
                    .cloned()
                    .collect(),
                comment: c.comment.clone().into(),
            })
            .collect();
        let select_star =
            crate::engines::select_star(spec.uri.engine, schema.0.as_deref(), &table, 100);
        Ok(Json(TableMetadataWire {
            name: table,
            columns,
            select_star,
            primary_key: primary_key.into(),
            foreign_keys: meta
                .foreign_keys
                .iter()
                .map(|f| ForeignKeyWire {
                    name: f.name.clone().into(),
                    constrained_columns: f.constrained_columns.clone(),
                    referred_schema: f.referred_schema.clone().into(),
                    referred_table: f.referred_table.clone(),
                    referred_columns: f.referred_columns.clone(),
                    ty: "fk".to_owned(),
                })
                .collect(),
            indexes: meta
                .indexes
                .iter()
                .map(|i| IndexWire {
                    name: i.name.clone(),
                    column_names: i.column_names.clone(),
                    unique: i.unique,
                    ty: "index".to_owned(),
                })
                .collect(),
            comment: meta.comment.clone().into(),
        }))
    }

    /// `SELECT *` for a table (default schema).
    #[oai(
        path = "/:pk/select_star/:table",
        method = "get",
        operation_id = "database_select_star"
    )]
    async fn select_star(
        &self,
        auth: Auth,
        pk: Path<i64>,
        table: Path<String>,
    ) -> Result<Json<ResultOf<String>>, ApiError> {
        self.select_star_in(auth, pk, table, Path(String::new()))
            .await
    }

    /// `SELECT *` for a table in a schema.
    #[oai(
        path = "/:pk/select_star/:table/:schema",
        method = "get",
        operation_id = "database_select_star_schema"
    )]
    async fn select_star_in(
        &self,
        auth: Auth,
        pk: Path<i64>,
        table: Path<String>,
        schema: Path<String>,
    ) -> Result<Json<ResultOf<String>>, ApiError> {
        let (spec, reach) = self.pk_reach(&auth, pk.0, "can_read").await?;
        let schema = Some(schema.0).filter(|s| !s.is_empty());
        if !reach.table(schema.as_deref(), &table.0) {
            return Err(table_hidden());
        }
        self.state
            .engines
            .table_metadata(&spec, schema.as_deref(), &table.0)
            .await
            .map_err(|e| metadata_error(spec.uri.engine, &table.0, &e))?;
        let sql = crate::engines::select_star(spec.uri.engine, schema.as_deref(), &table.0, 100);
        Ok(ResultOf::json(sql))
    }

    /// Charts and dashboards built on the database.
    #[oai(
        path = "/:pk/related_objects",
        method = "get",
        operation_id = "database_related_objects"
    )]
    async fn related_objects(
        &self,
        auth: Auth,
        pk: Path<i64>,
    ) -> Result<Json<RelatedObjects>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        let datasets = Pred::field(&DATASET, "database", Op::RelOneToMany, Value::Int(id))?;
        let (_, ds_ids) = self
            .state
            .store
            .list_ids(&DATASET, &datasets, None, None)
            .await?;
        Ok(Json(
            resource::related_objects(&self.state, &ds_ids, true).await?,
        ))
    }
}

/// 404 `TABLE_NOT_FOUND_ERROR` for a missing table, the engine's error otherwise.
fn metadata_error(engine: crate::uri::Engine, table: &str, e: &EngineError) -> ApiError {
    match e {
        EngineError::TableNotFound { .. } => ApiError::sip40(
            Fault::NotFound,
            "TABLE_NOT_FOUND_ERROR",
            format!("No such table: {table}"),
            json!({}),
        ),
        e => engine_error(Fault::Unprocessable, engine, e),
    }
}

/// The JSON schema of a backend's connection form, which `/available/` and `/<pk>/connection`
/// show: apispec's rendering of Superset's `BasicParametersSchema` (PostgreSQL, MySQL, MariaDB)
/// or `ClickHouseParametersSchema` (clickhousedb); `{}` for a backend without a form.
fn parameters_schema(backend: &str) -> Json_ {
    match crate::engines::engine_spec(backend) {
        Some(spec) if spec.form && spec.backend == "clickhousedb" => clickhouse_parameters_schema(),
        Some(spec) if spec.form => basic_parameters_schema(),
        _ => json!({}),
    }
}

/// `ClickHouseParametersSchema`: only the host is required; no SSH switch.
fn clickhouse_parameters_schema() -> Json_ {
    json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "nullable": true, "description": "Username"},
            "password": {"type": "string", "nullable": true, "description": "Password"},
            "host": {"type": "string", "description": "Hostname or IP address"},
            "port": {"type": "integer", "nullable": true, "description": "Database port",
                     "minimum": 0, "maximum": 65535},
            "database": {"type": "string", "nullable": true, "description": "Database name"},
            "encryption": {"type": "boolean", "default": true,
                           "description": "Use an encrypted connection to the database"},
            "query": {"type": "object", "additionalProperties": {},
                      "description": "Additional parameters"},
        },
        "required": ["host"],
        "additionalProperties": false,
    })
}

/// `BasicParametersSchema`.
fn basic_parameters_schema() -> Json_ {
    json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "nullable": true, "description": "Username"},
            "password": {"type": "string", "nullable": true, "description": "Password"},
            "host": {"type": "string", "description": "Hostname or IP address"},
            "port": {"type": "integer", "description": "Database port",
                     "minimum": 0, "maximum": 65536},
            "database": {"type": "string", "description": "Database name"},
            "query": {"type": "object", "additionalProperties": {},
                      "description": "Additional parameters"},
            "encryption": {"type": "boolean",
                           "description": "Use an encrypted connection to the database"},
            "ssh": {"type": "boolean",
                    "description": "Use an ssh tunnel connection to the database"},
        },
        "required": ["database", "host", "port", "username"],
        "additionalProperties": false,
    })
}

/// The connection form's fields of a stored database (password masked), `{}` when its URI
/// has no form.
fn stored_parameters(rec: &Record) -> Json_ {
    ConnectionUri::parse(&rec.text("sqlalchemy_uri"))
        .map(|u| u.parameters(rec.flag("has_password")))
        .unwrap_or_else(|_| json!({}))
}

/// Superset's `DatabaseParametersSchemaMixin.build_sqlalchemy_uri`, run before the body is
/// read: `engine`, `driver` and `parameters` are taken out, and with `configuration_method:
/// dynamic_form` the URI is built from the parameters (returned apart, so its password never
/// passes through the body). The body then carries the URI without its password.
fn form_uri(body: &Json_) -> Result<(Json_, Option<ConnectionUri>), ApiError> {
    let mut body = body.clone();
    let Some(obj) = body.as_object_mut() else {
        return Ok((body, None));
    };
    let mut parameters = obj.remove("parameters");
    let engine = obj
        .remove("engine")
        .filter(|e| !e.is_null())
        .or_else(|| {
            parameters
                .as_mut()
                .and_then(Json_::as_object_mut)
                .and_then(|p| p.remove("engine"))
        })
        .or_else(|| obj.get("backend").cloned());
    obj.remove("driver");
    if obj.get("configuration_method").and_then(Json_::as_str) != Some("dynamic_form") {
        return Ok((body, None));
    }
    let Some(engine) = engine
        .as_ref()
        .and_then(Json_::as_str)
        .filter(|e| !e.is_empty())
    else {
        return Err(ApiError::fields(
            Fault::BadRequest,
            json!({"_schema": ["An engine must be specified when passing individual parameters to a database."]}),
        ));
    };
    let params = match parameters {
        None | Some(Json_::Null) => serde_json::Map::new(),
        Some(Json_::Object(p)) => p,
        Some(_) => {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"parameters": ["Not a valid mapping type."]}),
            ));
        }
    };
    let uri = ConnectionUri::from_parameters(engine, &params).map_err(|e| match e {
        ParametersError::Fields(f) => ApiError::fields(Fault::BadRequest, f),
        ParametersError::Engine => {
            ApiError::fields(Fault::BadRequest, json!({"_schema": [e.to_string()]}))
        }
    })?;
    obj.insert("sqlalchemy_uri".into(), json!(uri.without_password()));
    Ok((body, Some(uri)))
}

/// Reads a `validate_parameters` body as Superset's `DatabaseValidateParametersSchema` does:
/// each bad field is one 422 `INVALID_PAYLOAD_SCHEMA_ERROR`.
fn form_check(body: &Json_) -> Result<services::database::FormCheck, ApiError> {
    use services::database::Problem;
    let mut problems = Vec::new();
    let mut bad = |field: &str, message: &str| {
        problems.push(Problem {
            error_type: "INVALID_PAYLOAD_SCHEMA_ERROR",
            level: "error",
            message: message.to_owned(),
            extra: json!({"invalid": [field]}),
        });
    };
    let mut form = services::database::FormCheck::default();
    match body.get("engine") {
        Some(Json_::String(e)) => form.engine.clone_from(e),
        None => bad("engine", "Missing data for required field."),
        Some(Json_::Null) => bad("engine", "Field may not be null."),
        Some(_) => bad("engine", "Not a valid string."),
    }
    match body.get("configuration_method") {
        Some(Json_::String(m)) if CONFIGURATION_METHODS.contains(&m.as_str()) => {}
        None => bad("configuration_method", "Missing data for required field."),
        Some(_) => bad(
            "configuration_method",
            "Must be one of: sqlalchemy_form, dynamic_form.",
        ),
    }
    match body.get("id") {
        None | Some(Json_::Null) => {}
        Some(v) => match v.as_i64() {
            Some(id) => form.id = Some(id),
            None => bad("id", "Not a valid integer."),
        },
    }
    match body.get("parameters") {
        None | Some(Json_::Null) => {}
        Some(Json_::Object(p)) => form.parameters = p.clone(),
        Some(_) => bad("parameters", "Not a valid mapping type."),
    }
    match body.get("database_name") {
        None | Some(Json_::Null) => {}
        Some(Json_::String(n)) if (1..=250).contains(&n.chars().count()) => {}
        Some(Json_::String(_)) => bad("database_name", "Length must be between 1 and 250."),
        Some(_) => bad("database_name", "Not a valid string."),
    }
    match body.get("server_cert") {
        None | Some(Json_::Null) => {}
        Some(Json_::String(c)) => match checked_server_cert(Some(c)) {
            Ok(cert) => form.server_cert = cert,
            Err(_) => bad("server_cert", "Invalid certificate"),
        },
        Some(_) => bad("server_cert", "Not a valid string."),
    }
    if problems.is_empty() {
        Ok(form)
    } else {
        Err(services::Error::ConnectionForm(problems).into())
    }
}

/// Superset's `DatabaseValidateParametersSchema`, as documented; [`form_check`] reads it.
#[derive(Object)]
struct ValidateParametersBody {
    /// The engine the form is for (`postgresql`).
    engine: String,
    /// `dynamic_form` (or `sqlalchemy_form`).
    configuration_method: String,
    /// The database being edited, if any.
    id: Option<Nullable<i64>>,
    /// The driver (`psycopg2`).
    driver: Option<Nullable<String>>,
    /// The form's fields: host, port, database, username, password, query, encryption.
    parameters: Option<Nullable<Any<Json_>>>,
    /// The name it would be saved under.
    database_name: Option<Nullable<String>>,
    /// A root certificate the server's certificate must chain to, PEM.
    server_cert: Option<Nullable<String>>,
}

/// Superset's `/database/available/` entries, one per engine spec Liteset speaks
/// ([`crate::engines::ENGINE_SPECS`]): the specs with a connection form carry its default
/// driver and the JSON schema apispec renders for it.
fn available_engines() -> Json_ {
    let entries: Vec<Json_> = crate::engines::ENGINE_SPECS
        .iter()
        .map(|spec| {
            let mut entry = json!({
                "name": spec.name,
                "engine": spec.backend,
                "available_drivers": spec.drivers,
                "sqlalchemy_uri_placeholder": spec.placeholder,
                "preferred": spec.preferred,
                "engine_information": {
                    "supports_file_upload": spec.supports_file_upload,
                    "disable_ssh_tunneling": spec.disable_ssh_tunneling,
                    "supports_dynamic_catalog": spec.engine == crate::uri::Engine::Postgres,
                    "supports_oauth2": false,
                },
                "supports_oauth2": false,
            });
            if spec.form {
                entry["default_driver"] = json!(spec.default_driver);
                entry["parameters"] = parameters_schema(spec.backend);
            }
            entry
        })
        .collect();
    Json_::Array(entries)
}

/// What `GET /database/<pk>/connection` answers: the show columns and the connection's own.
pub struct Connection;

impl Columns for Connection {
    type Of = Database;
    const NAME: &'static str = "DatabaseConnection";
    const COLUMNS: &'static [&'static str] =
        &concat::<{ SHOW_COLUMNS.len() }, 5, { SHOW_COLUMNS.len() + 5 }>(
            SHOW_COLUMNS,
            [
                "sqlalchemy_uri",
                "extra",
                "server_cert",
                "changed_on",
                "created_on",
            ],
        );
}

/// Superset's `DatabaseTestConnectionSchema`, as documented (the handler reads
/// `sqlalchemy_uri` and ignores the rest, as Superset's command does for a stored database).
#[derive(Object)]
struct TestConnectionBody {
    /// The connection URI to try.
    sqlalchemy_uri: String,
    /// The name it would be saved under.
    database_name: Option<Nullable<String>>,
    /// Engine parameters, as JSON text.
    extra: Option<Nullable<String>>,
    /// Whether SQL Lab would impersonate the user.
    impersonate_user: Option<Nullable<bool>>,
    /// A server certificate, PEM.
    server_cert: Option<Nullable<String>>,
}

/// Engine facts of an `available` entry.
#[derive(Object)]
struct EngineInformation {
    supports_file_upload: bool,
    disable_ssh_tunneling: bool,
    supports_dynamic_catalog: bool,
    supports_oauth2: bool,
}

/// One engine of `GET /database/available/`.
#[derive(Object)]
struct AvailableEngine {
    /// Its display name.
    name: String,
    /// The SQLAlchemy backend name.
    engine: String,
    /// Drivers installed for it.
    available_drivers: Vec<String>,
    /// A URI to start from.
    sqlalchemy_uri_placeholder: String,
    /// Listed first in the connection dialog.
    preferred: bool,
    /// What the engine supports.
    engine_information: EngineInformation,
    /// Whether it authenticates with OAuth2.
    supports_oauth2: bool,
    /// The driver used by default (engines with a parameters form).
    default_driver: Option<String>,
    /// The JSON schema of its parameters form (engines with one).
    parameters: Option<Any<Json_>>,
}

/// `GET /database/available/`.
#[derive(Object)]
struct AvailableDatabases {
    /// The engines, preferred ones first.
    databases: Vec<AvailableEngine>,
}

/// A primary key (`type: "pk"`), in a table's metadata and its columns' `keys`.
#[derive(Clone, Object)]
pub struct KeyWire {
    /// Its columns.
    pub column_names: Vec<String>,
    /// The constraint's name.
    pub name: Nullable<String>,
    /// `pk`.
    #[oai(rename = "type")]
    pub ty: String,
}

/// A column of `table_metadata`.
#[derive(Object)]
pub struct TableColumnWire {
    /// The column name.
    pub name: String,
    /// The type without its arguments (`VARCHAR`).
    #[oai(rename = "type")]
    pub ty: String,
    /// The full type (`VARCHAR(20)`).
    #[oai(rename = "longType")]
    pub long_type: String,
    /// The keys it is part of.
    pub keys: Vec<KeyWire>,
    /// Its comment.
    pub comment: Nullable<String>,
}

/// A foreign key of `table_metadata`.
#[derive(Object)]
pub struct ForeignKeyWire {
    /// The constraint's name.
    pub name: Nullable<String>,
    /// Its columns in this table.
    pub constrained_columns: Vec<String>,
    /// The referred table's schema.
    pub referred_schema: Nullable<String>,
    /// The referred table.
    pub referred_table: String,
    /// The referred columns.
    pub referred_columns: Vec<String>,
    /// `fk`.
    #[oai(rename = "type")]
    pub ty: String,
}

/// An index of `table_metadata`.
#[derive(Object)]
pub struct IndexWire {
    /// The index name.
    pub name: String,
    /// Its columns.
    pub column_names: Vec<String>,
    /// Whether it is unique.
    pub unique: bool,
    /// `index`.
    #[oai(rename = "type")]
    pub ty: String,
}

/// `GET /database/<pk>/table_metadata/`: a table as SQL Lab's schema browser shows it.
#[derive(Object)]
pub struct TableMetadataWire {
    /// The table.
    pub name: String,
    /// Its columns.
    pub columns: Vec<TableColumnWire>,
    /// A `SELECT *` for it.
    #[oai(rename = "selectStar")]
    pub select_star: String,
    /// Its primary key.
    #[oai(rename = "primaryKey")]
    pub primary_key: Nullable<KeyWire>,
    /// Its foreign keys.
    #[oai(rename = "foreignKeys")]
    pub foreign_keys: Vec<ForeignKeyWire>,
    /// Its indexes.
    pub indexes: Vec<IndexWire>,
    /// The table's comment.
    pub comment: Nullable<String>,
}

/// `GET /database/<pk>/function_names/`.
#[derive(Object)]
pub struct FunctionNames {
    /// The functions SQL Lab's editor autocompletes.
    pub function_names: Vec<String>,
}

/// A table or view of `GET /database/<pk>/tables/`.
#[derive(Object)]
pub struct TableWire {
    /// Its name.
    pub value: String,
    /// `table` or `view`.
    #[oai(rename = "type")]
    pub ty: String,
    /// Always null here.
    pub extra: Nullable<poem_openapi::types::Any<Json_>>,
}

/// `GET /database/<pk>/tables/`.
#[derive(Object)]
pub struct TablesWire {
    /// How many.
    pub count: usize,
    /// The tables and views the caller may see.
    pub result: Vec<TableWire>,
}
