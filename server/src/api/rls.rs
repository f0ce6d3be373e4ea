//! `/api/v1/rowlevelsecurity/`: row-level security rules (Superset's `RLSRestApi`). Only
//! holders of `can_read`/`can_write` on "Row Level Security" (Admin in a fresh install) see or
//! change them; there is no ownership. Which rows the rules keep is `services::rls`.

use std::sync::Arc;

use poem_openapi::OpenApi;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use serde_json::{Value as Json_, json};

use super::Tags;
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::listquery;
use super::resource::{self, BodyField, BodyType, Spec, body, common_computed};
use super::wire::{
    Body, Created, InfoResponse, List, Message, PostBody, PutBody, RelatedResponse, Reply, Saved,
    Show,
};
use crate::store::catalog::{RLS_BASE, RLS_FILTER, RLS_REGULAR};
use crate::store::model::{Pred, Record};

const BODY: &[BodyField] = &[
    body("name", BodyType::Str(1, 255), true),
    BodyField {
        nullable: true,
        ..body("description", BodyType::Str(0, 100_000), false)
    },
    body("filter_type", BodyType::Str(0, 255), true),
    body("tables", BodyType::Ids("Datasource does not exist"), true),
    body("roles", BodyType::Ids("Some roles do not exist"), true),
    BodyField {
        nullable: true,
        ..body("group_key", BodyType::Str(0, 255), false)
    },
    body("clause", BodyType::Str(0, 1_000_000), true),
];

/// The row-level security resource.
pub static SPEC: Spec = Spec {
    name: "RowLevelSecurity",
    model: &RLS_FILTER,
    view_menu: "Row Level Security",
    noun: "rule",
    list_title: "List Row Level Security Filter",
    show_title: "Show Row Level Security Filter",
    add_title: "Add Row Level Security Filter",
    edit_title: "Edit Row Level Security Filter",
    // Superset's list schema (`RLSListSchema`) also returns `description` and the tables'
    // `schema`, which its `list_columns` do not name.
    list_columns: &[
        "id",
        "name",
        "description",
        "filter_type",
        "tables.id",
        "tables.schema",
        "tables.table_name",
        "roles.id",
        "roles.name",
        "clause",
        "changed_on_delta_humanized",
        "changed_by.first_name",
        "changed_by.last_name",
        "changed_by.id",
        "group_key",
    ],
    show_columns: &[
        "name",
        "description",
        "filter_type",
        "tables.id",
        "tables.schema",
        "tables.table_name",
        "roles.id",
        "roles.name",
        "group_key",
        "clause",
    ],
    order_columns: &[
        "name",
        "filter_type",
        "clause",
        "changed_on_delta_humanized",
        "group_key",
    ],
    search: &[
        ("name", &[]),
        ("description", &[]),
        ("filter_type", &[]),
        ("tables", &[]),
        ("roles", &[]),
        ("group_key", &[]),
        ("clause", &[]),
        ("created_by", &[]),
        ("changed_by", &[]),
    ],
    base_order: None,
    max_page_size: listquery::FAB_API_MAX_PAGE_SIZE,
    body: BODY,
    related: &["tables", "roles", "created_by", "changed_by"],
    distinct: &[],
    permissions: &["can_read", "can_write"],
    computed: &[],
};

crate::wire_resource!(RowLevelSecurity, SPEC);

fn no_custom(
    _: &listquery::Filter,
    _: Option<&crate::auth::CurrentUser>,
) -> Result<Pred, ApiError> {
    Ok(Pred::none())
}

fn computed(rec: &Record, col: &str) -> Option<Json_> {
    common_computed(rec, col)
}

/// Superset's schema rules the generic body check does not know: `filter_type` is one of the
/// two types, and a new rule names at least one dataset.
fn check_body(body: &Json_, create: bool) -> Result<(), ApiError> {
    let mut errors = serde_json::Map::new();
    if let Some(t) = body.get("filter_type").and_then(Json_::as_str)
        && t != RLS_REGULAR
        && t != RLS_BASE
    {
        errors.insert(
            "filter_type".into(),
            json!([format!("Must be one of: {RLS_REGULAR}, {RLS_BASE}.")]),
        );
    }
    if create
        && body
            .get("tables")
            .and_then(Json_::as_array)
            .is_some_and(Vec::is_empty)
    {
        errors.insert("tables".into(), json!(["Shorter than minimum length 1."]));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::fields(Fault::BadRequest, Json_::Object(errors)))
    }
}

/// The row-level security endpoints.
pub struct RlsApi {
    pub(super) state: Arc<crate::state::AppState>,
}

impl RlsApi {
    /// 422 when a body names roles or datasets that do not exist, with Superset's text (the
    /// `str()` of its validation error, lazy-string prefix included), roles checked first.
    async fn check_links(&self, changes: &crate::store::catalog::Changes) -> Result<(), ApiError> {
        use crate::store::catalog::{DATASET_REF, ROLE_REF};
        for (field, target, text) in [
            ("roles", &ROLE_REF, "[l'Some roles do not exist']"),
            ("tables", &DATASET_REF, "[l'Datasource does not exist']"),
        ] {
            let Some((_, ids)) = changes.links.iter().find(|(n, _)| *n == field) else {
                continue;
            };
            let found = self.state.store.existing(target, ids).await?;
            if ids.iter().any(|i| !found.contains(i)) {
                return Err(ApiError::message(Fault::Unprocessable, text));
            }
        }
        Ok(())
    }

    /// 404 unless every rule exists.
    async fn existing(&self, ids: &[i64]) -> Result<(), ApiError> {
        let found = self.state.store.existing(&RLS_FILTER, ids).await?;
        if ids.iter().any(|i| !found.contains(i)) {
            return Err(ApiError::not_found());
        }
        Ok(())
    }
}

#[OpenApi(
    prefix_path = "/api/v1/rowlevelsecurity",
    tag = "Tags::RowLevelSecurity"
)]
impl RlsApi {
    /// List row-level security rules.
    #[oai(path = "/", method = "get", operation_id = "rowlevelsecurity_list")]
    async fn list(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<RowLevelSecurity>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::list(
            &self.state,
            &SPEC,
            q.0.as_deref(),
            Some(&user),
            Pred::all(),
            &no_custom,
            &computed,
        )
        .await
    }

    /// Metadata for building forms and filters.
    #[oai(
        path = "/_info",
        method = "get",
        operation_id = "rowlevelsecurity_info"
    )]
    async fn info(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<InfoResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        resource::info(&self.state, &SPEC, q.0.as_deref(), &user).await
    }

    /// Values of a related column (`tables` within the caller's data access, `roles`,
    /// `created_by`, `changed_by`).
    #[oai(
        path = "/related/:col",
        method = "get",
        operation_id = "rowlevelsecurity_related"
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

    /// One rule.
    #[oai(path = "/:pk", method = "get", operation_id = "rowlevelsecurity_get")]
    async fn get(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<RowLevelSecurity>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_read", SPEC.view_menu).await?;
        self.existing(&[pk.0]).await?;
        resource::show(&self.state, &SPEC, pk.0, q.0.as_deref(), &computed).await
    }

    /// Create a rule.
    #[oai(path = "/", method = "post", operation_id = "rowlevelsecurity_post")]
    async fn post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<RowLevelSecurity>>>,
    ) -> Result<Created<Saved<RowLevelSecurity>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let changes = resource::changes_from_body(&SPEC, &body.0.value, true)?;
        check_body(&body.0.value, true)?;
        self.check_links(&changes).await?;
        let id = self
            .state
            .store
            .save(&RLS_FILTER, None, &changes, Some(user.user.id))
            .await?;
        tracing::info!(rls_rule_id = id, "row-level security rule created");
        Ok(Created::new(
            json!({"id": id, "result": resource::echo(&SPEC, &body.0.value)}),
        ))
    }

    /// Update a rule.
    #[oai(path = "/:pk", method = "put", operation_id = "rowlevelsecurity_put")]
    async fn put(
        &self,
        auth: Auth,
        pk: Path<i64>,
        body: JsonBody<Body<PutBody<RowLevelSecurity>>>,
    ) -> Result<Reply<Saved<RowLevelSecurity>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let mut changes = resource::changes_from_body(&SPEC, &body.0.value, false)?;
        check_body(&body.0.value, false)?;
        self.existing(&[pk.0]).await?;
        // Superset's `UpdateRLSRuleCommand` sets the rule's datasets and roles to the body's,
        // an absent list being empty (superset-api.md §9: a PUT of `clause` alone empties
        // both). Its own app always sends both.
        for field in ["tables", "roles"] {
            if !changes.links.iter().any(|(n, _)| *n == field) {
                tracing::info!(
                    rls_rule_id = pk.0,
                    field,
                    "rule updated without this list: emptied"
                );
                changes.link(field, Vec::new());
            }
        }
        self.check_links(&changes).await?;
        self.state
            .store
            .save(&RLS_FILTER, Some(pk.0), &changes, Some(user.user.id))
            .await?;
        tracing::info!(rls_rule_id = pk.0, "row-level security rule updated");
        Ok(Reply::new(
            json!({"id": pk.0, "result": resource::echo(&SPEC, &body.0.value)}),
        ))
    }

    /// Delete a rule.
    #[oai(
        path = "/:pk",
        method = "delete",
        operation_id = "rowlevelsecurity_delete"
    )]
    async fn delete(&self, auth: Auth, pk: Path<i64>) -> Result<Json<Message>, ApiError> {
        resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        self.existing(&[pk.0]).await?;
        self.state
            .store
            .delete_records(&RLS_FILTER, &[pk.0])
            .await?;
        tracing::info!(rls_rule_id = pk.0, "row-level security rule deleted");
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Delete several rules: `?q=!(1,2)`; none is deleted unless all exist.
    #[oai(
        path = "/",
        method = "delete",
        operation_id = "rowlevelsecurity_bulk_delete"
    )]
    async fn bulk_delete(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<Message>, ApiError> {
        resource::authorized(&self.state, &auth, "can_write", SPEC.view_menu).await?;
        let ids = resource::ids_query(q.0.as_deref())?;
        if ids.is_empty() {
            return Err(ApiError::not_found());
        }
        self.existing(&ids).await?;
        self.state.store.delete_records(&RLS_FILTER, &ids).await?;
        tracing::info!(rules = ids.len(), "row-level security rules deleted");
        Ok(Json(Message {
            message: format!("Deleted {} rules", ids.len()),
        }))
    }
}
