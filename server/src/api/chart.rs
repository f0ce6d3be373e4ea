//! `/api/v1/chart/`: charts (Superset's `ChartRestApi`).

use std::sync::Arc;

use poem_openapi::OpenApi;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use serde_json::{Value as Json_, json};

use super::Tags;
use super::bundles::{self, ImportForm, ZipFile};
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::resource::{self, BodyField, BodyType, Spec, body, common_computed};
use super::wire::{
    Body, Created, DistinctResponse, FavoriteStatusResponse, InfoResponse, List, Message, PostBody,
    PutBody, RelatedResponse, Reply, ResultOk, Saved, Show, Wire,
};
use crate::assets::Kind;
use crate::auth::CurrentUser;
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, CHART, DATASET};
use crate::store::model::{Pred, Record};

/// Superset's `FavStarClassName` for this resource.
const FAVORITE_CLASS: &str = "slice";

const BODY: &[BodyField] = &[
    body("slice_name", BodyType::Str(1, 250), true),
    body("description", BodyType::Str(0, 100_000), false),
    body("viz_type", BodyType::Str(0, 250), false),
    body("owners", BodyType::Ids("Owners are invalid"), false),
    body("params", BodyType::JsonStr, false),
    body("query_context", BodyType::JsonStr, false),
    body("cache_timeout", BodyType::Int, false),
    body("datasource_id", BodyType::Int, true),
    body("datasource_type", BodyType::Str(1, 20), true),
    body("datasource_name", BodyType::Str(0, 2000), false),
    body(
        "dashboards",
        BodyType::Ids("Dashboards do not exist"),
        false,
    ),
    body("certified_by", BodyType::Str(0, 1000), false),
    body("certification_details", BodyType::Str(0, 100_000), false),
    body("is_managed_externally", BodyType::Bool, false).not_null(),
    body("external_url", BodyType::Str(0, 10_000), false),
    body("uuid", BodyType::Str(36, 36), false).not_null(),
];

/// The chart resource.
pub static SPEC: Spec = Spec {
    name: "Chart",
    model: &CHART,
    view_menu: "Chart",
    noun: "chart",
    list_title: "List Slice",
    show_title: "Show Slice",
    add_title: "Add Slice",
    edit_title: "Edit Slice",
    list_columns: &[
        "id",
        "uuid",
        "slice_name",
        "viz_type",
        "params",
        "form_data",
        "description",
        "description_markeddown",
        "cache_timeout",
        "certified_by",
        "certification_details",
        "is_managed_externally",
        "datasource_id",
        "datasource_type",
        "datasource_name_text",
        "datasource_url",
        "url",
        "slice_url",
        "edit_url",
        "thumbnail_url",
        "table.default_endpoint",
        "table.table_name",
        "changed_by.first_name",
        "changed_by.last_name",
        "changed_by.id",
        "changed_by_name",
        "changed_on_delta_humanized",
        "changed_on_dttm",
        "changed_on_utc",
        "created_by.first_name",
        "created_by.last_name",
        "created_by.id",
        "created_by_name",
        "created_on_delta_humanized",
        "last_saved_at",
        "last_saved_by.id",
        "last_saved_by.first_name",
        "last_saved_by.last_name",
        "owners.id",
        "owners.first_name",
        "owners.last_name",
        "dashboards.id",
        "dashboards.dashboard_title",
        "tags",
        "query_context",
    ],
    show_columns: &[
        "id",
        "url",
        "cache_timeout",
        "certified_by",
        "certification_details",
        "changed_on_delta_humanized",
        "description",
        "params",
        "slice_name",
        "thumbnail_url",
        "viz_type",
        "query_context",
        "is_managed_externally",
        "tags",
        "owners.id",
        "owners.first_name",
        "owners.last_name",
        "dashboards.id",
        "dashboards.dashboard_title",
        "dashboards.json_metadata",
        "uuid",
        "datasource_id",
        "datasource_name_text",
        "datasource_type",
        "datasource_url",
        "datasource_uuid",
    ],
    order_columns: &[
        "changed_by.first_name",
        "changed_on_delta_humanized",
        "datasource_id",
        "datasource_name",
        "last_saved_at",
        "last_saved_by.first_name",
        "slice_name",
        "viz_type",
        "id",
        "changed_on",
    ],
    search: &[
        (
            "created_by",
            &[
                ("chart_created_by_me", "Created by me"),
                ("chart_has_created_by", "Has created by"),
            ],
        ),
        ("changed_by", &[]),
        ("last_saved_at", &[]),
        ("last_saved_by", &[]),
        ("datasource_id", &[]),
        ("datasource_name", &[]),
        ("datasource_type", &[]),
        ("description", &[]),
        (
            "id",
            &[
                ("chart_is_favorite", "Is favorite"),
                ("chart_is_certified", "Is certified"),
                (
                    "chart_owned_created_favored_by_me",
                    "Owned Created or Favored",
                ),
            ],
        ),
        ("uuid", &[]),
        ("owners", &[]),
        ("dashboards", &[]),
        ("slice_name", &[("chart_all_text", "All Text")]),
        ("viz_type", &[]),
        ("tags", &[("chart_tags", "Tag"), ("chart_tag_id", "Tag id")]),
    ],
    base_order: Some(("changed_on", true)),
    max_page_size: listquery_max(),
    body: BODY,
    related: &["owners", "created_by", "changed_by", "dashboards"],
    distinct: &["slice_name", "viz_type", "datasource_name"],
    permissions: &["can_read", "can_write", "can_export", "can_warm_up_cache"],
    computed: &[
        ("url", Wire::Str),
        ("slice_url", Wire::Str),
        ("edit_url", Wire::Str),
        ("thumbnail_url", Wire::Str),
        ("form_data", Wire::Object),
        ("description_markeddown", Wire::Str),
        ("datasource_name_text", Wire::Str),
        ("datasource_url", Wire::Str),
        ("datasource_uuid", Wire::Str),
        ("tags", Wire::ObjectList),
    ],
};

crate::wire_resource!(Chart, SPEC);

const fn listquery_max() -> i64 {
    super::listquery::FAB_API_MAX_PAGE_SIZE
}

fn me(user: Option<&CurrentUser>) -> i64 {
    user.map_or(0, |u| u.user.id)
}

/// Chart custom filters (§3.1).
fn custom(f: &super::listquery::Filter, user: Option<&CurrentUser>) -> Result<Pred, ApiError> {
    let uid = me(user);
    let text = match &f.value {
        Json_::String(s) => s.clone(),
        other => other.to_string(),
    };
    let truthy = !matches!(f.value, Json_::Bool(false));
    Ok(match f.opr.as_str() {
        "chart_all_text" => catalog::chart_text_contains(&text),
        "chart_created_by_me" => catalog::created_by(uid),
        "chart_has_created_by" => catalog::has_creator(truthy),
        "chart_is_favorite" if truthy => catalog::favorite_of(FAVORITE_CLASS, uid),
        "chart_is_favorite" => Pred::Not(Box::new(catalog::favorite_of(FAVORITE_CLASS, uid))),
        "chart_is_certified" => catalog::certified(truthy),
        "chart_owned_created_favored_by_me" => {
            catalog::chart_owned_created_or_favored_by(uid, FAVORITE_CLASS)
        }
        // No tags are stored yet, so a tag filter matches nothing.
        _ => Pred::none(),
    })
}

fn datasource_name_text(rec: &Record) -> Json_ {
    rec.one("table").map_or(Json_::Null, |t| {
        let schema = t.text("schema");
        let name = t.text("table_name");
        if schema.is_empty() {
            json!(name)
        } else {
            json!(format!("{schema}.{name}"))
        }
    })
}

use crate::services::chart::{digest, form_data};

/// Chart columns that are not stored fields.
pub fn computed(rec: &Record, col: &str) -> Option<Json_> {
    let id = rec.id;
    Some(match col {
        "url" | "slice_url" => json!(format!("/explore/?slice_id={id}")),
        "edit_url" => json!(format!("/chart/edit/{id}")),
        "thumbnail_url" => json!(format!("/api/v1/chart/{id}/thumbnail/{}/", digest(rec))),
        "form_data" => form_data(rec),
        "description_markeddown" => json!(rec.text("description")),
        "datasource_name_text" => datasource_name_text(rec),
        "datasource_url" => rec.get::<i64>("datasource_id").map_or(Json_::Null, |ds| {
            json!(format!(
                "/explore/?datasource_type={}&datasource_id={ds}",
                rec.text("datasource_type")
            ))
        }),
        "datasource_uuid" => rec
            .one("table")
            .map_or(Json_::Null, |t| json!(t.text("uuid"))),
        "tags" => json!([]),
        "table.default_endpoint" | "table.table_name" => return None,
        _ => return common_computed(rec, col),
    })
}

/// The chart endpoints.
pub struct ChartApi {
    pub(super) state: Arc<AppState>,
}

impl ChartApi {
    /// The id of a chart by id or uuid, 404 when missing, 403 when out of the user's reach.
    async fn resolve(&self, pk: &str, user: &CurrentUser) -> Result<i64, ApiError> {
        let id = match pk.parse::<i64>() {
            Ok(id) => Some(id),
            Err(_) => {
                self.state
                    .store
                    .find_id(&CHART, "uuid", Value::Text(pk.into()))
                    .await?
            }
        };
        let Some(id) = id.filter(|id| *id > 0) else {
            return Err(ApiError::not_found());
        };
        let scope = catalog::chart_scope(user.grants());
        let owned = catalog::chart_owned_or_created_by(user.user.id);
        let reach = Pred::Or(vec![scope, owned]);
        resource::in_reach(&self.state, &CHART, id, &reach, resource::forbidden).await
    }

    /// Superset's `ChartForbiddenError` / `DashboardsForbiddenError` of chart create and
    /// update: the chart's dataset must be one the user may read (a chart cannot be made on,
    /// or moved to, data its author cannot see), and every dashboard it is newly linked to must
    /// be one the user may change (`existing`: the links it already has, which stay).
    async fn check_reach(
        &self,
        user: &CurrentUser,
        changes: &catalog::Changes,
        existing: &[i64],
    ) -> Result<(), ApiError> {
        if let Some(Value::Int(ds)) = changes.get("datasource_id")
            && self
                .state
                .store
                .reach(&DATASET, *ds, &catalog::dataset_scope(user.grants()))
                .await?
                == Some(false)
        {
            tracing::info!(
                dataset_id = ds,
                user_id = user.user.id,
                "chart on a dataset out of reach refused"
            );
            return Err(ApiError::message(
                Fault::Forbidden,
                "Changing this chart is forbidden",
            ));
        }
        if let Some((_, ids)) = changes.links.iter().find(|(n, _)| *n == "dashboards") {
            let added: Vec<i64> = ids
                .iter()
                .copied()
                .filter(|i| !existing.contains(i))
                .collect();
            if !added.is_empty() {
                let rels: Vec<&str> = ["owners", "created_by"]
                    .into_iter()
                    .filter(|r| catalog::DASHBOARD.field(r).is_some())
                    .collect();
                let dashboards = self
                    .state
                    .store
                    .load(&catalog::DASHBOARD, &added, &rels)
                    .await?;
                if dashboards.iter().any(|d| !resource::can_change(user, d)) {
                    return Err(ApiError::message(
                        Fault::Forbidden,
                        "Changing one or more of these dashboards is forbidden",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Validates the datasource and fills the fields derived from it.
    async fn with_datasource(&self, changes: &mut catalog::Changes) -> Result<(), ApiError> {
        if let Some(Value::Text(t)) = changes.get("datasource_type")
            && !["table", "dataset", "query", "saved_query", "view"].contains(&t.as_str())
        {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"datasource_type": ["Must be one of: table, dataset, query, saved_query, view."]}),
            ));
        }
        if matches!(changes.get("datasource_type"), Some(Value::Text(t)) if t == "dataset") {
            changes.set("datasource_type", "table");
        }
        let Some(Value::Int(ds)) = changes.get("datasource_id").cloned() else {
            return Ok(());
        };
        let missing = || {
            ApiError::fields(
                Fault::Unprocessable,
                json!({"datasource_id": ["Datasource does not exist"]}),
            )
        };
        let dataset = self
            .state
            .store
            .load(&DATASET, &[ds], &["database"])
            .await?
            .pop()
            .ok_or_else(missing)?;
        changes.set("datasource_name", dataset.text("table_name"));
        changes.set("perm", Value::from(dataset.get::<String>("perm")));
        changes.set(
            "schema_perm",
            Value::from(dataset.get::<String>("schema_perm")),
        );
        Ok(())
    }
}

#[OpenApi(prefix_path = "/api/v1/chart", tag = "Tags::Chart")]
impl ChartApi {
    /// Export as a bundle (with everything the records depend on).
    #[oai(path = "/export", method = "get", operation_id = "chart_export")]
    async fn export(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
        token: Query<Option<String>>,
    ) -> Result<ZipFile, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_export", SPEC.view_menu).await?;
        let scope = catalog::chart_scope(user.grants());
        let ids = bundles::export_ids(&self.state, SPEC.model, q.0.as_deref(), &scope).await?;
        bundles::export(&self.state, Kind::Chart, &ids, token.0).await
    }

    /// Import a bundle (multipart `formData`, `overwrite`, `passwords`).
    #[oai(path = "/import", method = "post", operation_id = "chart_import")]
    async fn import(&self, auth: Auth, form: ImportForm) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        bundles::import(&self.state, &auth, Kind::Chart, user, form).await
    }

    /// Which of `?q=!(ids)` are the user's favourites.
    #[oai(
        path = "/favorite_status",
        method = "get",
        operation_id = "chart_favorite_status"
    )]
    async fn favorite_status(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<FavoriteStatusResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::favorite_status(&self.state, FAVORITE_CLASS, &user, q.0.as_deref()).await
    }

    /// Mark as a favourite.
    #[oai(
        path = "/:pk/favorites",
        method = "post",
        operation_id = "chart_favorite_add"
    )]
    async fn favorite_add(&self, auth: Auth, pk: Path<String>) -> Result<Json<ResultOk>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&pk.0, &user).await?;
        resource::set_favorite(&self.state, FAVORITE_CLASS, &user, id, true).await
    }

    /// Unmark as a favourite.
    #[oai(
        path = "/:pk/favorites",
        method = "delete",
        operation_id = "chart_favorite_remove"
    )]
    async fn favorite_remove(
        &self,
        auth: Auth,
        pk: Path<String>,
    ) -> Result<Json<ResultOk>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&pk.0, &user).await?;
        resource::set_favorite(&self.state, FAVORITE_CLASS, &user, id, false).await
    }

    /// List charts (FAB list protocol).
    #[oai(path = "/", method = "get", operation_id = "chart_list")]
    async fn list(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<Chart>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::chart_scope(user.grants());
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

    /// Metadata for building forms and filters.
    #[oai(path = "/_info", method = "get", operation_id = "chart_info")]
    async fn info(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<InfoResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::info(&self.state, &SPEC, q.0.as_deref(), &user).await
    }

    /// Values of a related column.
    #[oai(path = "/related/:col", method = "get", operation_id = "chart_related")]
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
        operation_id = "chart_distinct"
    )]
    async fn distinct(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<DistinctResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::chart_scope(user.grants());
        resource::distinct(&self.state, &SPEC, &col.0, q.0.as_deref(), scope).await
    }

    /// One chart, by id or uuid.
    #[oai(path = "/:pk", method = "get", operation_id = "chart_get")]
    async fn get(
        &self,
        auth: Auth,
        pk: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<Chart>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&pk.0, &user).await?;
        resource::show(&self.state, &SPEC, id, q.0.as_deref(), &computed).await
    }

    /// Create a chart.
    #[oai(path = "/", method = "post", operation_id = "chart_post")]
    async fn post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<Chart>>>,
    ) -> Result<Created<Saved<Chart>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let mut changes = resource::changes_from_body(&SPEC, &body.0.value, true)?;
        resource::check_links(&self.state, &SPEC, &changes).await?;
        self.with_datasource(&mut changes).await?;
        self.check_reach(&user, &changes, &[]).await?;
        // The creator always owns what they create.
        resource::with_creator(&mut changes, user.user.id);
        changes.set(
            "last_saved_at",
            Value::Timestamp(chrono::Utc::now().naive_utc()),
        );
        changes.set("last_saved_by", user.user.id);
        let id = self
            .state
            .store
            .save(&CHART, None, &changes, Some(user.user.id))
            .await?;
        tracing::info!(chart_id = id, "chart created");
        Ok(Created::new(
            json!({"id": id, "result": resource::echo(&SPEC, &body.0.value)}),
        ))
    }

    /// Update a chart (owners and admins).
    #[oai(path = "/:pk", method = "put", operation_id = "chart_put")]
    async fn put(
        &self,
        auth: Auth,
        pk: Path<String>,
        body: JsonBody<Body<PutBody<Chart>>>,
    ) -> Result<Reply<Saved<Chart>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(&pk.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        let mut changes = resource::changes_from_body(&SPEC, &body.0.value, false)?;
        resource::keep_owner(&mut changes, &user);
        resource::check_links(&self.state, &SPEC, &changes).await?;
        self.with_datasource(&mut changes).await?;
        let linked: Vec<i64> = self
            .state
            .store
            .load_one(&CHART, id, &["dashboards"])
            .await?
            .related("dashboards")
            .iter()
            .map(|d| d.id)
            .collect();
        self.check_reach(&user, &changes, &linked).await?;
        changes.set(
            "last_saved_at",
            Value::Timestamp(chrono::Utc::now().naive_utc()),
        );
        changes.set("last_saved_by", user.user.id);
        self.state
            .store
            .save(&CHART, Some(id), &changes, Some(user.user.id))
            .await?;
        Ok(Reply::new(
            json!({"id": id, "result": resource::echo(&SPEC, &body.0.value)}),
        ))
    }

    /// Delete a chart (owners and admins).
    #[oai(path = "/:pk", method = "delete", operation_id = "chart_delete")]
    async fn delete(&self, auth: Auth, pk: Path<String>) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(&pk.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        self.state.store.delete_records(&CHART, &[id]).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Delete several charts: `?q=!(1,2)`.
    #[oai(path = "/", method = "delete", operation_id = "chart_bulk_delete")]
    async fn bulk_delete(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let ids = resource::ids_query(q.0.as_deref())?;
        resource::ensure_changeable(&self.state, &SPEC, &ids, &user).await?;
        let n = self.state.store.delete_records(&CHART, &ids).await?;
        Ok(resource::deleted(&SPEC, n))
    }
}
