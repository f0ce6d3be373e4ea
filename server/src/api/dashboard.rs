//! `/api/v1/dashboard/` and `/api/v1/embedded_dashboard/`: dashboards (Superset's
//! `DashboardRestApi`).

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{Object, OpenApi};
use serde_json::{Value as Json_, json};

use super::Tags;
use super::bundles::{self, ImportForm, ZipFile};
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::resource::{self, BodyField, BodyType, JsonValue, Spec, body, common_computed};
use super::wire::{
    Body, Columns, Created, DistinctResponse, FavoriteStatusResponse, IdResult, InfoResponse, List,
    Message, Nullable, Obj, PostBody, PutBody, RelatedResponse, Reply, ResultOf, ResultOk, Saved,
    Wire,
};
use crate::assets::Kind;
use crate::auth::CurrentUser;
use crate::services;
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{self, CHART, DASHBOARD};
use crate::store::model::{Pred, Record};

/// Superset's `FavStarClassName` for this resource.
const FAVORITE_CLASS: &str = "Dashboard";

const BODY: &[BodyField] = &[
    body("dashboard_title", BodyType::Str(0, 500), false),
    body("slug", BodyType::Str(1, 255), false),
    body("owners", BodyType::Ids("Owners are invalid"), false),
    body("roles", BodyType::Ids("Some roles do not exist"), false),
    body("position_json", BodyType::JsonStr, false),
    body("css", BodyType::Str(0, 1_000_000), false),
    body("json_metadata", BodyType::JsonStr, false),
    body("published", BodyType::Bool, false).not_null(),
    body("certified_by", BodyType::Str(0, 1000), false),
    body("certification_details", BodyType::Str(0, 100_000), false),
    body("is_managed_externally", BodyType::Bool, false).not_null(),
    body("external_url", BodyType::Str(0, 10_000), false),
    body("uuid", BodyType::Str(36, 36), false).not_null(),
];

/// The dashboard resource.
pub static SPEC: Spec = Spec {
    name: "Dashboard",
    model: &DASHBOARD,
    view_menu: "Dashboard",
    noun: "dashboard",
    list_title: "List Dashboard",
    show_title: "Show Dashboard",
    add_title: "Add Dashboard",
    edit_title: "Edit Dashboard",
    list_columns: &[
        "id",
        "uuid",
        "dashboard_title",
        "slug",
        "url",
        "published",
        "status",
        "thumbnail_url",
        "certified_by",
        "certification_details",
        "changed_by.first_name",
        "changed_by.last_name",
        "changed_by.id",
        "changed_by_name",
        "changed_on_utc",
        "changed_on_delta_humanized",
        "created_on_delta_humanized",
        "created_by.first_name",
        "created_by.id",
        "created_by.last_name",
        "owners.id",
        "owners.first_name",
        "owners.last_name",
        "roles.id",
        "roles.name",
        "is_managed_externally",
        "tags",
        "position_json",
        "json_metadata",
        "css",
    ],
    show_columns: &[],
    order_columns: &[
        "changed_by.first_name",
        "changed_on_delta_humanized",
        "created_by.first_name",
        "dashboard_title",
        "published",
        "changed_on",
        "id",
        "slug",
    ],
    search: &[
        (
            "created_by",
            &[
                ("dashboard_created_by_me", "Created by me"),
                ("dashboard_has_created_by", "Has created by"),
            ],
        ),
        ("changed_by", &[]),
        ("dashboard_title", &[("title_or_slug", "Title or Slug")]),
        (
            "id",
            &[
                ("dashboard_is_favorite", "Is favorite"),
                ("dashboard_is_certified", "Is certified"),
            ],
        ),
        ("owners", &[]),
        ("published", &[]),
        ("roles", &[]),
        ("slug", &[]),
        ("uuid", &[]),
        (
            "tags",
            &[("dashboard_tags", "Tag"), ("dashboard_tag_id", "Tag id")],
        ),
    ],
    base_order: Some(("changed_on", true)),
    max_page_size: super::listquery::FAB_API_MAX_PAGE_SIZE,
    body: BODY,
    related: &["owners", "created_by", "changed_by", "roles"],
    distinct: &["dashboard_title", "slug"],
    permissions: &["can_read", "can_write", "can_export", "can_set_embedded"],
    computed: &[
        ("url", Wire::Str),
        ("status", Wire::Str),
        ("thumbnail_url", Wire::Str),
        ("tags", Wire::ObjectList),
        ("theme", Wire::Object),
        ("charts", Wire::StrList),
    ],
};

crate::wire_resource!(Dashboard, SPEC);

/// What `GET /dashboard/<id_or_slug>` answers (the dashboard page's own columns).
pub struct Detail;

impl Columns for Detail {
    type Of = Dashboard;
    const NAME: &'static str = "DashboardDetail";
    const COLUMNS: &'static [&'static str] = &[
        "id",
        "slug",
        "url",
        "dashboard_title",
        "thumbnail_url",
        "published",
        "css",
        "theme",
        "json_metadata",
        "position_json",
        "certified_by",
        "certification_details",
        "changed_by_name",
        "changed_by",
        "changed_on",
        "created_by",
        "charts",
        "owners",
        "roles",
        "tags",
        "changed_on_delta_humanized",
        "created_on_delta_humanized",
        "is_managed_externally",
        "uuid",
        "description",
    ];
}

fn custom(f: &super::listquery::Filter, user: Option<&CurrentUser>) -> Result<Pred, ApiError> {
    let uid = user.map_or(0, |u| u.user.id);
    let text = match &f.value {
        Json_::String(s) => s.clone(),
        other => other.to_string(),
    };
    let truthy = !matches!(f.value, Json_::Bool(false));
    Ok(match f.opr.as_str() {
        "title_or_slug" => catalog::dashboard_title_or_slug_contains(&text),
        "dashboard_created_by_me" => catalog::created_by(uid),
        "dashboard_has_created_by" => catalog::has_creator(truthy),
        "dashboard_is_favorite" if truthy => catalog::favorite_of(FAVORITE_CLASS, uid),
        "dashboard_is_favorite" => Pred::Not(Box::new(catalog::favorite_of(FAVORITE_CLASS, uid))),
        "dashboard_is_certified" => catalog::certified(truthy),
        _ => Pred::none(),
    })
}

fn url(rec: &Record) -> String {
    match rec.get::<String>("slug").filter(|s| !s.is_empty()) {
        Some(slug) => format!("/superset/dashboard/{slug}/"),
        None => format!("/superset/dashboard/{}/", rec.id),
    }
}

fn computed(rec: &Record, col: &str) -> Option<Json_> {
    Some(match col {
        "url" => json!(url(rec)),
        "status" => json!(if rec.flag("published") {
            "published"
        } else {
            "draft"
        }),
        "thumbnail_url" => json!(format!(
            "/api/v1/dashboard/{}/thumbnail/{}/",
            rec.id, rec.id
        )),
        "tags" => json!([]),
        "theme" => Json_::Null,
        "charts" => json!(
            rec.related("slices")
                .iter()
                .map(|s| s.text("slice_name"))
                .collect::<Vec<_>>()
        ),
        _ => return common_computed(rec, col),
    })
}

/// The dashboard endpoints.
pub struct DashboardApi {
    pub(super) state: Arc<AppState>,
}

impl DashboardApi {
    /// A dashboard by id or slug: 404 when missing, 403 when not accessible.
    async fn resolve(&self, key: &str, user: &CurrentUser) -> Result<i64, ApiError> {
        Ok(services::dashboard::resolve(&self.state, key, user).await?)
    }

    /// A dashboard by numeric id that `user` may change, for the endpoints that edit one part
    /// of its metadata: as Superset, found through the access filter (404), then ownership
    /// (403).
    async fn changeable(&self, pk: &str, user: &CurrentUser) -> Result<i64, ApiError> {
        let id = pk.parse::<i64>().map_err(|_| ApiError::not_found())?;
        let scope = catalog::dashboard_scope(user.grants(), user.is_admin());
        if !self.state.store.matches(&DASHBOARD, id, &scope).await? {
            return Err(ApiError::not_found());
        }
        resource::ensure_changeable(&self.state, &SPEC, &[id], user).await?;
        Ok(id)
    }

    async fn check_slug(
        &self,
        changes: &mut catalog::Changes,
        id: Option<i64>,
    ) -> Result<(), ApiError> {
        if let Some(Value::Text(slug)) = changes.get("slug").cloned() {
            let slug = slug.trim().to_owned();
            if slug.is_empty() {
                changes.set("slug", Value::Null);
                return Ok(());
            }
            if let Some(other) = self
                .state
                .store
                .find_id(&DASHBOARD, "slug", Value::Text(slug.clone()))
                .await?
                && Some(other) != id
            {
                return Err(ApiError::fields(
                    Fault::Unprocessable,
                    json!({"slug": ["Must be unique"]}),
                ));
            }
            changes.set("slug", slug);
        }
        Ok(())
    }

    async fn validate(
        &self,
        changes: &mut catalog::Changes,
        id: Option<i64>,
    ) -> Result<(), ApiError> {
        resource::check_links(&self.state, &SPEC, changes).await?;
        self.check_slug(changes, id).await
    }

    async fn set_embedded(
        &self,
        auth: Auth,
        key: &str,
        body: &Json_,
    ) -> Result<Json<ResultOf<EmbeddedConfig>>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_set_embedded", SPEC.view_menu).await?;
        let id = self.resolve(key, &user).await?;
        let domains = match body.get("allowed_domains") {
            Some(Json_::Array(items)) if items.iter().all(Json_::is_string) => {
                Json_::Array(items.clone())
            }
            None => json!([]),
            _ => {
                return Err(ApiError::fields(
                    Fault::BadRequest,
                    json!({"allowed_domains": ["Not a valid list."]}),
                ));
            }
        };
        self.state
            .store
            .upsert_embedded(id, &domains.to_string())
            .await?;
        Ok(ResultOf::json(
            embedded_config(&self.state, Some(id), None).await?,
        ))
    }
}

#[OpenApi(prefix_path = "/api/v1/dashboard", tag = "Tags::Dashboard")]
impl DashboardApi {
    /// Export as a bundle (with everything the records depend on).
    #[oai(path = "/export", method = "get", operation_id = "dashboard_export")]
    async fn export(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
        token: Query<Option<String>>,
    ) -> Result<ZipFile, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_export", SPEC.view_menu).await?;
        let scope = catalog::dashboard_scope(user.grants(), user.is_admin());
        let ids = bundles::export_ids(&self.state, SPEC.model, q.0.as_deref(), &scope).await?;
        bundles::export(&self.state, Kind::Dashboard, &ids, token.0).await
    }

    /// Import a bundle (multipart `formData`, `overwrite`, `passwords`).
    #[oai(path = "/import", method = "post", operation_id = "dashboard_import")]
    async fn import(&self, auth: Auth, form: ImportForm) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        bundles::import(&self.state, &auth, Kind::Dashboard, user, form).await
    }

    /// Which of `?q=!(ids)` are the user's favourites.
    #[oai(
        path = "/favorite_status",
        method = "get",
        operation_id = "dashboard_favorite_status"
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
        operation_id = "dashboard_favorite_add"
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
        operation_id = "dashboard_favorite_remove"
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

    /// List dashboards.
    #[oai(path = "/", method = "get", operation_id = "dashboard_list")]
    async fn list(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<Dashboard>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::dashboard_scope(user.grants(), user.is_admin());
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
    #[oai(path = "/_info", method = "get", operation_id = "dashboard_info")]
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
        operation_id = "dashboard_related"
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
        operation_id = "dashboard_distinct"
    )]
    async fn distinct(
        &self,
        auth: Auth,
        col: Path<String>,
        q: Query<Option<String>>,
    ) -> Result<Json<DistinctResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let scope = catalog::dashboard_scope(user.grants(), user.is_admin());
        resource::distinct(&self.state, &SPEC, &col.0, q.0.as_deref(), scope).await
    }

    /// One dashboard, by id or slug.
    #[oai(path = "/:key", method = "get", operation_id = "dashboard_get")]
    async fn get(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Reply<IdResult<Detail>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        let rec = self
            .state
            .store
            .load_one(
                &DASHBOARD,
                id,
                &["owners", "roles", "slices", "created_by", "changed_by"],
            )
            .await?;
        let result = resource::render(&DASHBOARD, &rec, Detail::COLUMNS, &computed);
        Ok(Reply::new(json!({"id": id, "result": result})))
    }

    /// The dashboard's charts with their form data.
    #[oai(
        path = "/:key/charts",
        method = "get",
        operation_id = "dashboard_charts"
    )]
    async fn charts(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Json<ResultOf<Vec<DashboardChart>>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        let rec = self
            .state
            .store
            .load_one(&DASHBOARD, id, &["slices"])
            .await?;
        let ids: Vec<i64> = rec.related("slices").iter().map(|s| s.id).collect();
        let charts = self.state.store.load(&CHART, &ids, &[]).await?;
        let result = charts
            .iter()
            .map(|c| DashboardChart {
                id: c.id,
                slice_name: c.text("slice_name").to_owned(),
                cache_timeout: c.get::<i64>("cache_timeout").into(),
                changed_on: c
                    .get::<chrono::NaiveDateTime>("changed_on")
                    .map(resource::iso)
                    .into(),
                description: c.get::<String>("description").into(),
                description_markeddown: c.text("description").to_owned(),
                form_data: poem_openapi::types::Any(crate::services::chart::form_data(c)),
                slice_url: format!("/explore/?slice_id={}", c.id),
                certified_by: c.get::<String>("certified_by").into(),
                certification_details: c.get::<String>("certification_details").into(),
                viz_type: c.text("viz_type").to_owned(),
                uuid: c.text("uuid").to_owned(),
            })
            .collect();
        Ok(ResultOf::json(result))
    }

    /// The datasets behind the dashboard's charts, as explore sees them.
    #[oai(
        path = "/:key/datasets",
        method = "get",
        operation_id = "dashboard_datasets"
    )]
    async fn datasets(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Json<ResultOf<Vec<Any<Json_>>>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        let rec = self
            .state
            .store
            .load_one(&DASHBOARD, id, &["slices"])
            .await?;
        let mut ds: Vec<i64> = rec
            .related("slices")
            .iter()
            .filter_map(|s| s.get::<i64>("datasource_id"))
            .collect();
        ds.sort_unstable();
        ds.dedup();
        // Only the datasets the caller may read: Superset lists every dataset of the
        // dashboard's charts, columns and all, to anyone who may open the dashboard; charts
        // on the others fail their data request anyway, so nothing the app needs is lost.
        let scope = catalog::dataset_scope(user.grants());
        let mut reachable = Vec::with_capacity(ds.len());
        for d in ds {
            if self
                .state
                .store
                .matches(&catalog::DATASET, d, &scope)
                .await?
            {
                reachable.push(d);
            }
        }
        let ds = reachable;
        let mut result = Vec::new();
        for d in ds {
            if let Ok(data) = super::datasource::dataset_data(&self.state, d).await {
                result.push(Any(data));
            }
        }
        Ok(ResultOf::json(result))
    }

    /// Create a dashboard.
    #[oai(path = "/", method = "post", operation_id = "dashboard_post")]
    async fn post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<Dashboard>>>,
    ) -> Result<Created<Saved<Dashboard>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let mut changes = resource::changes_from_body(&SPEC, &body.0.value, true)?;
        self.validate(&mut changes, None).await?;
        resource::with_creator(&mut changes, user.user.id);
        let id = self
            .state
            .store
            .save(&DASHBOARD, None, &changes, Some(user.user.id))
            .await?;
        Ok(Created::new(
            json!({"id": id, "result": resource::echo(&SPEC, &body.0.value)}),
        ))
    }

    /// Update a dashboard (owners and admins).
    #[oai(path = "/:key", method = "put", operation_id = "dashboard_put")]
    async fn put(
        &self,
        auth: Auth,
        key: Path<String>,
        body: JsonBody<Body<PutBody<Dashboard>>>,
    ) -> Result<Reply<Saved<Dashboard>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        let mut changes = resource::changes_from_body(&SPEC, &body.0.value, false)?;
        resource::keep_owner(&mut changes, &user);
        self.validate(&mut changes, Some(id)).await?;
        // A saved layout decides the dashboard's charts (Superset's `set_dash_metadata`).
        if let Some(Value::Text(text)) = changes.get("json_metadata").cloned()
            && !text.is_empty()
        {
            let stored = services::dashboard::metadata(&self.state, &user, &text).await?;
            changes.set("json_metadata", stored.json_metadata);
            if let Some(layout) = stored.position_json {
                changes.set("position_json", layout);
            }
            if let Some(charts) = stored.charts {
                changes.link("slices", charts);
            }
        }
        self.state
            .store
            .save(&DASHBOARD, Some(id), &changes, Some(user.user.id))
            .await?;
        let mut result = resource::echo(&SPEC, &body.0.value);
        result["last_modified_time"] = json!(chrono::Utc::now().timestamp());
        Ok(Reply::new(
            json!({"id": id, "result": result, "last_modified_time": chrono::Utc::now().timestamp()}),
        ))
    }

    /// Delete a dashboard (owners and admins).
    #[oai(path = "/:key", method = "delete", operation_id = "dashboard_delete")]
    async fn delete(&self, auth: Auth, key: Path<String>) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        resource::ensure_changeable(&self.state, &SPEC, &[id], &user).await?;
        self.state.store.delete_records(&DASHBOARD, &[id]).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Delete several dashboards: `?q=!(1,2)`.
    #[oai(path = "/", method = "delete", operation_id = "dashboard_bulk_delete")]
    async fn bulk_delete(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let ids = resource::ids_query(q.0.as_deref())?;
        resource::ensure_changeable(&self.state, &SPEC, &ids, &user).await?;
        let n = self.state.store.delete_records(&DASHBOARD, &ids).await?;
        Ok(resource::deleted(&SPEC, n))
    }

    /// Save the colors explore and the dashboard assign (owners and admins). Only the color
    /// keys of `json_metadata` change; `?mark_updated=false` keeps `changed_on`. Answers `{}`.
    #[oai(
        path = "/:pk/colors",
        method = "put",
        operation_id = "dashboard_put_colors"
    )]
    async fn put_colors(
        &self,
        auth: Auth,
        pk: Path<String>,
        mark_updated: Query<Option<String>>,
        body: JsonBody<Body<Obj<ColorsConfig>>>,
    ) -> Result<JsonValue, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let colors = colors_from_body(&body.0.value)?;
        let touch = mark_updated.0.as_deref().is_none_or(python_truthy);
        let id = self.changeable(&pk.0, &user).await?;
        let found = self
            .state
            .store
            .edit_dashboard_metadata(id, user.user.id, touch, |meta| {
                for (k, v) in colors {
                    meta.insert(k.to_owned(), v);
                }
            })
            .await?;
        if !found {
            return Err(ApiError::not_found());
        }
        Ok(Json(json!({})))
    }

    /// Save native filter changes (owners and admins): filters replaced or added by id,
    /// deleted, reordered. Answers the whole new `native_filter_configuration`.
    #[oai(
        path = "/:pk/filters",
        method = "put",
        operation_id = "dashboard_put_filters"
    )]
    async fn put_filters(
        &self,
        auth: Auth,
        pk: Path<String>,
        body: JsonBody<Body<Obj<NativeFilterChanges>>>,
    ) -> Result<Json<ResultOf<Vec<Any<Json_>>>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let changes = filter_changes(&body.0.value)?;
        let id = self.changeable(&pk.0, &user).await?;
        let config = services::dashboard::update_filters(&self.state, &user, id, changes).await?;
        Ok(Json(ResultOf {
            result: config.into_iter().map(Any).collect(),
        }))
    }

    /// The dashboard's tabs, as a tree and as an id → title map.
    #[oai(path = "/:key/tabs", method = "get", operation_id = "dashboard_tabs")]
    async fn tabs(&self, auth: Auth, key: Path<String>) -> Result<Json<ResultOf<Tabs>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        let rec = self.state.store.load_one(&DASHBOARD, id, &[]).await?;
        let position = rec
            .get::<String>("position_json")
            .filter(|p| !p.is_empty())
            .map(|p| serde_json::from_str::<Json_>(&p))
            .transpose()
            .map_err(|e| ApiError::bad_request(format!("Tab schema is invalid, caused by: {e}")))?;
        let tabs = tabs_of(position.as_ref());
        Ok(ResultOf::json(Tabs {
            all_tabs: tabs.get("all_tabs").cloned().map(Any),
            tab_tree: tabs.get("tab_tree").cloned().map(Any),
        }))
    }

    /// The dashboard's embedded configuration.
    #[oai(
        path = "/:key/embedded",
        method = "get",
        operation_id = "dashboard_embedded_get"
    )]
    async fn embedded(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Json<ResultOf<EmbeddedConfig>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        Ok(ResultOf::json(
            embedded_config(&self.state, Some(id), None).await?,
        ))
    }

    /// Enable or update embedding.
    #[oai(
        path = "/:key/embedded",
        method = "post",
        operation_id = "dashboard_embedded_post"
    )]
    async fn embedded_post(
        &self,
        auth: Auth,
        key: Path<String>,
        body: JsonBody<Body<Obj<EmbeddedBody>>>,
    ) -> Result<Json<ResultOf<EmbeddedConfig>>, ApiError> {
        self.set_embedded(auth, &key.0, &body.0.value).await
    }

    /// Enable or update embedding.
    #[oai(
        path = "/:key/embedded",
        method = "put",
        operation_id = "dashboard_embedded_put"
    )]
    async fn embedded_put(
        &self,
        auth: Auth,
        key: Path<String>,
        body: JsonBody<Body<Obj<EmbeddedBody>>>,
    ) -> Result<Json<ResultOf<EmbeddedConfig>>, ApiError> {
        self.set_embedded(auth, &key.0, &body.0.value).await
    }

    /// Disable embedding.
    #[oai(
        path = "/:key/embedded",
        method = "delete",
        operation_id = "dashboard_embedded_delete"
    )]
    async fn embedded_delete(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Json<Message>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_set_embedded", SPEC.view_menu).await?;
        let id = self.resolve(&key.0, &user).await?;
        self.state.store.delete_embedded(id).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }
}

/// Deepest tab nesting rendered; Superset's editor allows far fewer levels.
const MAX_TAB_DEPTH: usize = 64;

/// Superset's `Dashboard.tabs` as `TabsPayloadSchema` dumps it: `{}` without a layout,
/// otherwise `all_tabs` (tab id → title) and `tab_tree`. The layout is walked breadth-first
/// from `ROOT_ID` as Superset does: `ROOT`/`GRID` pass their children through, a `TABS`
/// contributes its children to the enclosing list, a `TAB` collects the tabs nested in it
/// (directly through a `TABS`; tabs inside rows or columns are not found, as in Superset).
/// Missing nodes are skipped and each node is visited once.
fn tabs_of(position: Option<&Json_>) -> Json_ {
    let Some(Json_::Object(nodes)) = position else {
        return json!({});
    };
    if nodes.is_empty() {
        return json!({});
    }
    // `lists[0]` is the tab tree; each TAB owns one list of the tabs nested in it.
    let mut lists: Vec<Vec<&str>> = vec![Vec::new()];
    let mut tab_children: std::collections::HashMap<&str, usize> = Default::default();
    let mut all_tabs = serde_json::Map::new();
    let mut visited = std::collections::HashSet::new();
    let mut queue = std::collections::VecDeque::from([("ROOT_ID", 0usize)]);
    while let Some((id, list)) = queue.pop_front() {
        let Some(node) = nodes.get(id) else { continue };
        if !visited.insert(id) {
            continue;
        }
        let ty = node.get("type").and_then(Json_::as_str).unwrap_or("");
        let own = lists.len();
        lists.push(Vec::new());
        let children = node.get("children").and_then(Json_::as_array);
        for child in children.into_iter().flatten().filter_map(Json_::as_str) {
            match ty {
                "TABS" => {
                    lists[list].push(child);
                    queue.push_back((child, own));
                }
                "GRID" | "ROOT" => queue.push_back((child, list)),
                "TAB" => queue.push_back((child, own)),
                _ => {}
            }
        }
        if ty == "TAB" {
            tab_children.insert(id, own);
            all_tabs.insert(id.to_owned(), json!(tab_title(node)));
        }
    }
    fn render(
        list: usize,
        lists: &[Vec<&str>],
        tabs: &std::collections::HashMap<&str, usize>,
        nodes: &serde_json::Map<String, Json_>,
        depth: usize,
    ) -> Json_ {
        if depth > MAX_TAB_DEPTH {
            return json!([]);
        }
        let items = lists[list].iter().map(|id| {
            let node = nodes.get(*id);
            let mut out = serde_json::Map::new();
            if let (Some(&own), Some(node)) = (tabs.get(id), node) {
                out.insert(
                    "children".into(),
                    render(own, lists, tabs, nodes, depth + 1),
                );
                out.insert("value".into(), json!(id));
                out.insert("title".into(), json!(tab_title(node)));
            }
            if let Some(parents) = node
                .and_then(|n| n.get("parents"))
                .and_then(Json_::as_array)
            {
                let parents: Vec<String> = parents.iter().map(liteset_pyrepr::json_str).collect();
                out.insert("parents".into(), json!(parents));
            }
            Json_::Object(out)
        });
        Json_::Array(items.collect())
    }
    json!({
        "all_tabs": all_tabs,
        "tab_tree": render(0, &lists, &tab_children, nodes, 0),
    })
}

/// A tab's title, `meta.text`, as marshmallow's `Str` dumps it.
fn tab_title(node: &Json_) -> String {
    node.get("meta")
        .and_then(|m| m.get("text"))
        .map_or_else(String::new, liteset_pyrepr::json_str)
}

/// Superset's `parse_boolean_string`: `true`, `1`, `yes`, `y`, `t`, `on` in any case.
fn python_truthy(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "true" | "1" | "yes" | "y" | "t" | "on"
    )
}

/// Validates a colors body as Superset's `DashboardColorsConfigUpdateSchema` does (400
/// `{"message": {field: [..]}}`), returning the `json_metadata` keys it sets.
/// `color_namespace` is accepted but, as in Superset, not stored; a `shared_label_colors`
/// object is the legacy form and becomes `[]`.
fn colors_from_body(body: &Json_) -> Result<Vec<(&'static str, Json_)>, ApiError> {
    let Json_::Object(map) = body else {
        return Err(ApiError::fields(
            Fault::BadRequest,
            json!({"_schema": ["Invalid input type."]}),
        ));
    };
    let mut errors = serde_json::Map::new();
    let mut out = Vec::new();
    for (key, value) in map {
        let err: Option<Json_> = match (key.as_str(), value) {
            ("color_namespace" | "color_scheme", Json_::Null | Json_::String(_)) => None,
            ("color_namespace" | "color_scheme", _) => Some(json!(["Not a valid string."])),
            ("map_label_colors" | "label_colors" | "shared_label_colors", Json_::Null) => {
                Some(json!(["Field may not be null."]))
            }
            ("map_label_colors" | "label_colors", Json_::Object(_)) => None,
            ("map_label_colors" | "label_colors", _) => Some(json!(["Not a valid mapping type."])),
            ("shared_label_colors", Json_::Object(_)) => None,
            ("shared_label_colors", Json_::Array(items)) if items.iter().all(Json_::is_string) => {
                None
            }
            ("shared_label_colors", _) => Some(json!(["Not a valid list"])),
            ("color_scheme_domain", Json_::Null) => Some(json!(["Field may not be null."])),
            ("color_scheme_domain", Json_::Array(items)) => {
                let bad: serde_json::Map<String, Json_> = items
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| !v.is_string())
                    .map(|(i, _)| (i.to_string(), json!(["Not a valid string."])))
                    .collect();
                (!bad.is_empty()).then(|| Json_::Object(bad))
            }
            ("color_scheme_domain", _) => Some(json!(["Not a valid list."])),
            _ => Some(json!(["Unknown field."])),
        };
        if let Some(e) = err {
            errors.insert(key.clone(), e);
            continue;
        }
        let stored = match key.as_str() {
            "color_scheme" => "color_scheme",
            "map_label_colors" => "map_label_colors",
            "label_colors" => "label_colors",
            "color_scheme_domain" => "color_scheme_domain",
            "shared_label_colors" => {
                let v = if value.is_object() {
                    json!([])
                } else {
                    value.clone()
                };
                out.push(("shared_label_colors", v));
                continue;
            }
            _ => continue,
        };
        out.push((stored, value.clone()));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ApiError::fields(Fault::BadRequest, Json_::Object(errors)))
    }
}

/// Superset's `DashboardNativeFiltersConfigUpdateSchema`, as documented; [`filter_changes`]
/// validates it.
#[derive(Object)]
struct NativeFilterChanges {
    /// Filters and dividers to replace or add, whole, each with its `id`.
    modified: Option<Vec<Any<Json_>>>,
    /// Ids of filters to remove.
    deleted: Option<Vec<String>>,
    /// Every filter id in the new order (empty: keep the order).
    reordered: Option<Vec<String>>,
}

/// Validates a filters body as Superset's schema does (400 `{"message": {field: [..]}}`).
fn filter_changes(body: &Json_) -> Result<services::dashboard::FilterChanges, ApiError> {
    let Json_::Object(map) = body else {
        return Err(ApiError::fields(
            Fault::BadRequest,
            json!({"_schema": ["Invalid input type."]}),
        ));
    };
    let mut errors = serde_json::Map::new();
    let mut out = services::dashboard::FilterChanges::default();
    for (key, value) in map {
        let items = match value {
            Json_::Null => {
                errors.insert(key.clone(), json!(["Field may not be null."]));
                continue;
            }
            Json_::Array(items) => items,
            _ if matches!(key.as_str(), "modified" | "deleted" | "reordered") => {
                errors.insert(key.clone(), json!(["Not a valid list."]));
                continue;
            }
            _ => {
                errors.insert(key.clone(), json!(["Unknown field."]));
                continue;
            }
        };
        let mut bad = serde_json::Map::new();
        match key.as_str() {
            "modified" => {
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Json_::Object(f) if f.get("id").is_some_and(Json_::is_string) => {
                            out.modified.push(f.clone());
                        }
                        Json_::Object(_) => {
                            bad.insert(i.to_string(), json!({"id": ["Not a valid string."]}));
                        }
                        _ => {
                            bad.insert(i.to_string(), json!(["Not a valid mapping type."]));
                        }
                    }
                }
            }
            "deleted" | "reordered" => {
                let list = if key == "deleted" {
                    &mut out.deleted
                } else {
                    &mut out.reordered
                };
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(s) => list.push(s.to_owned()),
                        None => {
                            bad.insert(i.to_string(), json!(["Not a valid string."]));
                        }
                    }
                }
            }
            _ => {
                errors.insert(key.clone(), json!(["Unknown field."]));
                continue;
            }
        }
        if !bad.is_empty() {
            errors.insert(key.clone(), Json_::Object(bad));
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ApiError::fields(Fault::BadRequest, Json_::Object(errors)))
    }
}

/// `/api/v1/embedded_dashboard/<uuid>`.
pub struct EmbeddedApi {
    pub(super) state: Arc<AppState>,
}

#[OpenApi(prefix_path = "/api/v1/embedded_dashboard", tag = "Tags::Dashboard")]
impl EmbeddedApi {
    /// An embedded dashboard's configuration by its uuid.
    #[oai(
        path = "/:uuid",
        method = "get",
        operation_id = "embedded_dashboard_get"
    )]
    async fn get(
        &self,
        auth: Auth,
        uuid: Path<String>,
    ) -> Result<Json<ResultOf<EmbeddedConfig>>, ApiError> {
        // Superset's `EmbeddedDashboardRestApi`: `can_read` on EmbeddedDashboard; and, as for
        // the dashboard's own `/embedded`, only for a dashboard the caller may open.
        let user =
            resource::authorized(&self.state, &auth, "can_read", "EmbeddedDashboard").await?;
        let config = embedded_config(&self.state, None, Some(&uuid.0)).await?;
        crate::services::dashboard::resolve(&self.state, &config.dashboard_id, &user).await?;
        Ok(ResultOf::json(config))
    }
}

/// Superset's `EmbeddedDashboardResponseSchema`.
#[derive(Object)]
pub struct EmbeddedConfig {
    /// The embedded configuration's own uuid (what the embedding SDK is given).
    uuid: String,
    /// Domains allowed to embed it (all when empty).
    allowed_domains: Vec<String>,
    /// The dashboard's id, as a string.
    dashboard_id: String,
    /// When it last changed.
    changed_on: String,
    /// Who changed it (not recorded).
    changed_by: Nullable<Any<Json_>>,
}

/// Superset's `EmbeddedDashboardConfigSchema`.
#[derive(Object)]
struct EmbeddedBody {
    /// Domains allowed to embed the dashboard (all when empty).
    allowed_domains: Option<Vec<String>>,
}

/// Superset's `DashboardColorsConfigUpdateSchema`.
#[derive(Object)]
struct ColorsConfig {
    /// The color namespace.
    color_namespace: Option<Nullable<String>>,
    /// The color scheme.
    color_scheme: Option<Nullable<String>>,
    /// Label → color.
    label_colors: Option<Nullable<Any<Json_>>>,
    /// Labels colored alike across charts.
    shared_label_colors: Option<Nullable<Vec<String>>>,
    /// Label → color, as the dashboard mapped them.
    map_label_colors: Option<Nullable<Any<Json_>>>,
    /// The scheme's domain.
    color_scheme_domain: Option<Nullable<Vec<String>>>,
}

/// Superset's `TabsPayloadSchema` (empty for a dashboard without a layout).
#[derive(Object)]
pub struct Tabs {
    /// Tab id → title.
    #[oai(skip_serializing_if_is_none)]
    all_tabs: Option<Any<Json_>>,
    /// The tabs as a tree.
    #[oai(skip_serializing_if_is_none)]
    tab_tree: Option<Any<Json_>>,
}

/// An embedded configuration, found by dashboard id or by its own uuid; 404 when absent.
async fn embedded_config(
    state: &AppState,
    dashboard_id: Option<i64>,
    uuid: Option<&str>,
) -> Result<EmbeddedConfig, ApiError> {
    let (uuid, did, domains, changed) = state
        .store
        .embedded(dashboard_id, uuid)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(EmbeddedConfig {
        uuid,
        allowed_domains: serde_json::from_str(&domains).unwrap_or_default(),
        dashboard_id: did.to_string(),
        changed_on: resource::iso(changed),
        changed_by: Nullable(None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabs_follow_superset() {
        assert_eq!(tabs_of(None), json!({}));
        let no_tabs = json!({
            "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
            "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": ["ROW-1"]},
            "ROW-1": {"type": "ROW", "id": "ROW-1", "children": []},
        });
        assert_eq!(
            tabs_of(Some(&no_tabs)),
            json!({"all_tabs": {}, "tab_tree": []})
        );
        let nested = json!({
            "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["TABS-1"]},
            "TABS-1": {"type": "TABS", "id": "TABS-1", "children": ["TAB-a", "TAB-b"], "parents": ["ROOT_ID"]},
            "TAB-a": {"type": "TAB", "id": "TAB-a", "children": ["TABS-2"], "meta": {"text": "A"}, "parents": ["ROOT_ID", "TABS-1"]},
            "TAB-b": {"type": "TAB", "id": "TAB-b", "children": [], "meta": {"text": "B"}},
            "TABS-2": {"type": "TABS", "id": "TABS-2", "children": ["TAB-c"]},
            "TAB-c": {"type": "TAB", "id": "TAB-c", "children": ["ROOT_ID"], "meta": {"text": "C"}},
        });
        assert_eq!(
            tabs_of(Some(&nested)),
            json!({
                "all_tabs": {"TAB-a": "A", "TAB-b": "B", "TAB-c": "C"},
                "tab_tree": [
                    {"children": [{"children": [], "value": "TAB-c", "title": "C"}],
                     "value": "TAB-a", "title": "A", "parents": ["ROOT_ID", "TABS-1"]},
                    {"children": [], "value": "TAB-b", "title": "B"},
                ]
            })
        );
    }
}

/// A chart of `GET /dashboard/<id>/charts`, with its form data.
#[derive(poem_openapi::Object)]
pub struct DashboardChart {
    /// The chart's id.
    pub id: i64,
    /// Its name.
    pub slice_name: String,
    /// Its cache timeout in seconds.
    pub cache_timeout: Nullable<i64>,
    /// When it last changed (ISO).
    pub changed_on: Nullable<String>,
    /// Its description.
    pub description: Nullable<String>,
    /// Its description as HTML.
    pub description_markeddown: String,
    /// Its form data (the saved `params` with its datasource and id).
    pub form_data: poem_openapi::types::Any<Json_>,
    /// Where explore opens it.
    pub slice_url: String,
    /// Who certified it.
    pub certified_by: Nullable<String>,
    /// The certification's details.
    pub certification_details: Nullable<String>,
    /// Its visualization type.
    pub viz_type: String,
    /// Its uuid.
    pub uuid: String,
}
