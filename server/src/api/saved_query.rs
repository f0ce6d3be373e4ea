//! `/api/v1/saved_query/`: SQL Lab's saved queries (Superset's `SavedQueryRestApi`). A saved
//! query belongs to its creator; users see and change only their own, admins all of them.

use std::sync::Arc;

use chrono::NaiveDateTime;
use poem_openapi::OpenApi;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use serde_json::{Value as Json_, json};

use super::Tags;
use super::bundles::{self, ImportForm, ZipFile};
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::listquery;
use super::resource::{self, BodyField, BodyType, Spec, body, common_computed, humanize};
use super::wire::{
    Body, Created, DistinctResponse, FavoriteStatusResponse, InfoResponse, List, Message, PostBody,
    PutBody, RelatedResponse, Reply, Saved, Show, Wire,
};
use crate::assets::Kind;
use crate::auth::CurrentUser;
use crate::query::sqlcheck::{self, SqlDialect};
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, DATABASE, SAVED_QUERY};
use crate::store::model::{Pred, Record};

const BODY: &[BodyField] = &[
    BodyField {
        key: "db_id",
        field: "database",
        ty: BodyType::Int,
        required: true,
        nullable: false,
    },
    body("label", BodyType::Str(0, 256), false),
    body("description", BodyType::Str(0, 100_000), false),
    body("catalog", BodyType::Str(0, 256), false),
    body("schema", BodyType::Str(0, 128), false),
    body("sql", BodyType::Str(0, 10_000_000), false),
    body("template_parameters", BodyType::Str(0, 1_000_000), false),
    body("extra_json", BodyType::JsonStr, false),
];

/// The saved query resource.
pub static SPEC: Spec = Spec {
    name: "SavedQuery",
    model: &SAVED_QUERY,
    view_menu: "SavedQuery",
    noun: "saved query",
    list_title: "List Saved Query",
    show_title: "Show Saved Query",
    add_title: "Add Saved Query",
    edit_title: "Edit Saved Query",
    list_columns: &[
        "id",
        "label",
        "description",
        "catalog",
        "schema",
        "sql",
        "sql_tables",
        "db_id",
        "database.id",
        "database.database_name",
        "extra",
        "rows",
        "last_run_delta_humanized",
        "created_on",
        "created_on_delta_humanized",
        "changed_on",
        "changed_on_delta_humanized",
        "created_by.id",
        "created_by.first_name",
        "created_by.last_name",
        "changed_by.id",
        "changed_by.first_name",
        "changed_by.last_name",
        "tags",
    ],
    show_columns: &[
        "id",
        "uuid",
        "label",
        "description",
        "catalog",
        "schema",
        "sql",
        "sql_tables",
        "template_parameters",
        "extra_json",
        "database.id",
        "database.database_name",
        "changed_on",
        "changed_on_delta_humanized",
        "changed_by.id",
        "changed_by.first_name",
        "changed_by.last_name",
        "created_by.id",
        "created_by.first_name",
        "created_by.last_name",
    ],
    order_columns: &[
        "schema",
        "label",
        "description",
        "sql",
        "rows",
        "created_by.first_name",
        "database.database_name",
        "created_on",
        "changed_on",
        "changed_on_delta_humanized",
        "last_run_delta_humanized",
    ],
    search: &[
        ("id", &[("saved_query_is_fav", "Is favorite")]),
        ("database", &[]),
        ("label", &[("all_text", "All Text")]),
        ("schema", &[]),
        ("created_by", &[]),
        ("changed_by", &[]),
    ],
    base_order: Some(("changed_on", true)),
    max_page_size: listquery::FAB_API_MAX_PAGE_SIZE,
    body: BODY,
    related: &["database", "created_by", "changed_by"],
    distinct: &["catalog", "schema"],
    permissions: &["can_read", "can_write", "can_export"],
    computed: &[
        ("sql_tables", Wire::StrList),
        ("extra", Wire::Object),
        ("tags", Wire::ObjectList),
        ("last_run_delta_humanized", Wire::Str),
    ],
};

crate::wire_resource!(SavedQuery, SPEC);

/// Superset's `FavStarClassName` for saved queries.
const FAVORITE_CLASS: &str = "query";

/// Saved queries the user sees: their own, or all for admins.
fn scope(user: &CurrentUser) -> Pred {
    if user.is_admin() {
        Pred::all()
    } else {
        catalog::created_by(user.user.id)
    }
}

fn custom(f: &listquery::Filter, user: Option<&CurrentUser>) -> Result<Pred, ApiError> {
    let text = match &f.value {
        Json_::String(s) => s.clone(),
        other => other.to_string(),
    };
    let uid = user.map_or(0, |u| u.user.id);
    Ok(match f.opr.as_str() {
        "all_text" => catalog::saved_query_text_contains(&text),
        "saved_query_is_fav" if !matches!(f.value, Json_::Bool(false)) => {
            catalog::favorite_of(FAVORITE_CLASS, uid)
        }
        "saved_query_is_fav" => Pred::Not(Box::new(catalog::favorite_of(FAVORITE_CLASS, uid))),
        _ => Pred::none(),
    })
}

fn computed(rec: &Record, col: &str) -> Option<Json_> {
    Some(match col {
        "sql_tables" => json!(
            sqlcheck::tables_referenced(SqlDialect::Postgres, &rec.text("sql"))
                .map(|t| t.into_iter().collect::<Vec<_>>())
                .unwrap_or_default()
        ),
        "extra" => rec
            .get::<String>("extra_json")
            .and_then(|e| serde_json::from_str::<Json_>(&e).ok())
            .unwrap_or_else(|| json!({})),
        "last_run_delta_humanized" => rec
            .get::<NaiveDateTime>("last_run")
            .map_or(Json_::Null, |t| json!(humanize(t))),
        "db_id" => rec.get::<i64>("db_id").map_or(Json_::Null, |i| json!(i)),
        "tags" => json!([]),
        _ => return common_computed(rec, col),
    })
}

/// The saved query endpoints.
pub struct SavedQueryApi {
    pub(super) state: Arc<AppState>,
}

impl SavedQueryApi {
    /// 404 unless the saved query exists and is the user's (or the user is an admin).
    async fn resolve(&self, id: i64, user: &CurrentUser) -> Result<i64, ApiError> {
        resource::in_reach(
            &self.state,
            &SAVED_QUERY,
            id,
            &scope(user),
            ApiError::not_found,
        )
        .await
    }

    /// 422 when `db_id` names no database.
    async fn check_database(
        &self,
        changes: &crate::store::catalog::Changes,
    ) -> Result<(), ApiError> {
        if let Some(Value::Int(db)) = changes.get("database") {
            let found = self.state.store.existing(&DATABASE, &[*db]).await?;
            if !found.contains(db) {
                return Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"db_id": ["Database does not exist"]}),
                ));
            }
        }
        Ok(())
    }

    fn check_nul(body: &Json_) -> Result<(), ApiError> {
        if let Some(obj) = body.as_object() {
            for (k, v) in obj {
                if v.as_str().is_some_and(|s| s.contains('\0')) {
                    return Err(ApiError::fields(
                        Fault::BadRequest,
                        json!({ k: ["Must not contain a NUL character."] }),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[OpenApi(prefix_path = "/api/v1/saved_query", tag = "Tags::SavedQuery")]
impl SavedQueryApi {
    /// List the user's saved queries (all of them for admins).
    #[oai(path = "/", method = "get", operation_id = "saved_query_list")]
    async fn list(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<SavedQuery>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::list(
            &self.state,
            &SPEC,
            q.0.as_deref(),
            Some(&user),
            scope(&user),
            &custom,
            &computed,
        )
        .await
    }

    /// Metadata for building forms and filters.
    #[oai(path = "/_info", method = "get", operation_id = "saved_query_info")]
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
        operation_id = "saved_query_related"
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

    /// Distinct values of a column (`schema`, `catalog`).
    #[oai(
        path = "/distinct/:col",
        method = "get",
        operation_id = "saved_query_distinct"
    )]
    async fn distinct(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<DistinctResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::distinct(&self.state, &SPEC, &col.0, q.0.as_deref(), scope(&user)).await
    }

    /// One saved query.
    #[oai(path = "/:pk", method = "get", operation_id = "saved_query_get")]
    async fn get(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<SavedQuery>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        resource::show(&self.state, &SPEC, id, q.0.as_deref(), &computed).await
    }

    /// Save a query.
    #[oai(path = "/", method = "post", operation_id = "saved_query_post")]
    async fn post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<SavedQuery>>>,
    ) -> Result<Created<Saved<SavedQuery>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        Self::check_nul(&body.0.value)?;
        let mut changes = resource::changes_from_body(&SPEC, &body.0.value, true)?;
        self.check_database(&changes).await?;
        changes.set("user", user.user.id);
        let id = self
            .state
            .store
            .save(&SAVED_QUERY, None, &changes, Some(user.user.id))
            .await?;
        tracing::info!(saved_query_id = id, "saved query created");
        Ok(Created::new(
            json!({"id": id, "result": resource::echo(&SPEC, &body.0.value)}),
        ))
    }

    /// Update a saved query (its owner, or an admin).
    #[oai(path = "/:pk", method = "put", operation_id = "saved_query_put")]
    async fn put(
        &self,
        auth: Auth,
        pk: Path<i64>,
        body: JsonBody<Body<PutBody<SavedQuery>>>,
    ) -> Result<Reply<Saved<SavedQuery>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        Self::check_nul(&body.0.value)?;
        let changes = resource::changes_from_body(&SPEC, &body.0.value, false)?;
        self.check_database(&changes).await?;
        self.state
            .store
            .save(&SAVED_QUERY, Some(id), &changes, Some(user.user.id))
            .await?;
        Ok(Reply::new(
            json!({"id": id, "result": resource::echo(&SPEC, &body.0.value)}),
        ))
    }

    /// Delete a saved query (its owner, or an admin).
    #[oai(path = "/:pk", method = "delete", operation_id = "saved_query_delete")]
    async fn delete(&self, auth: Auth, pk: Path<i64>) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(pk.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        self.state.store.delete_records(&SAVED_QUERY, &[id]).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Delete several saved queries: `?q=!(1,2)`.
    #[oai(
        path = "/",
        method = "delete",
        operation_id = "saved_query_bulk_delete"
    )]
    async fn bulk_delete(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let ids = resource::ids_query(q.0.as_deref())?;
        for id in &ids {
            self.resolve(*id, &user).await?;
        }
        resource::ensure_changeable(&self.state, &SPEC, &ids, &user).await?;
        let n = self.state.store.delete_records(&SAVED_QUERY, &ids).await?;
        let noun = if n == 1 {
            "saved query"
        } else {
            "saved queries"
        };
        Ok(Json(Message {
            message: format!("Deleted {n} {noun}"),
        }))
    }

    /// Export as a bundle (each query with its database).
    #[oai(path = "/export", method = "get", operation_id = "saved_query_export")]
    async fn export(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
        token: Query<Option<String>>,
    ) -> Result<ZipFile, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_export", SPEC.view_menu).await?;
        let ids =
            bundles::export_ids(&self.state, SPEC.model, q.0.as_deref(), &scope(&user)).await?;
        bundles::export(&self.state, Kind::SavedQuery, &ids, token.0).await
    }

    /// Import a bundle (multipart `formData`, `overwrite`, `passwords`).
    #[oai(path = "/import", method = "post", operation_id = "saved_query_import")]
    async fn import(&self, auth: Auth, form: ImportForm) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        bundles::import(&self.state, &auth, Kind::SavedQuery, user, form).await
    }

    /// Which of `?q=!(ids)` are the user's favourites.
    #[oai(
        path = "/favorite_status",
        method = "get",
        operation_id = "saved_query_favorite_status"
    )]
    async fn favorite_status(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<FavoriteStatusResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::favorite_status(&self.state, FAVORITE_CLASS, &user, q.0.as_deref()).await
    }
}
