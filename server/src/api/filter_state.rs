//! `/api/v1/dashboard/<pk>/filter_state` and dashboard permalinks: the native filter state a
//! dashboard page keeps per tab (Superset's `DashboardFilterStateRestApi`) and links to a
//! dashboard in a given state (`DashboardPermalinkRestApi`).

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{Object, OpenApi};
use serde_json::{Map, Value as Json_, json};

use super::Tags;
use super::error::ApiError;
use super::extract::{Auth, JsonBody};
use super::resource;
use super::temporary_cache::{self as tc, FILTER_STATE, FILTER_STATE_TTL};
use super::wire::{
    Body, Created, KeyResponse, Message, Nullable, Obj, PermalinkResponse, TemporaryCacheBody,
    TemporaryCacheValue,
};
use crate::auth::CurrentUser;
use crate::services;
use crate::state::AppState;
use crate::store::{self, catalog::DASHBOARD};

/// The dashboard state endpoints.
pub struct FilterStateApi {
    pub(super) state: Arc<AppState>,
}

const VIEW: &str = "DashboardFilterStateRestApi";

impl FilterStateApi {
    /// The dashboard's id, in the temporary cache's wording when it is missing or unreadable.
    async fn dashboard(&self, pk: &str, user: &CurrentUser) -> Result<i64, ApiError> {
        match services::dashboard::resolve(&self.state, pk, user).await {
            Ok(id) => Ok(id),
            Err(services::Error::Store(store::Error::NotFound)) => Err(tc::resource_not_found()),
            Err(services::Error::DashboardForbidden) => Err(tc::access_denied()),
            Err(e) => Err(e.into()),
        }
    }

    /// The live entry `key` of dashboard `id`; an entry of another dashboard is not found.
    async fn entry(
        &self,
        id: i64,
        key: &str,
    ) -> Result<Option<crate::store::key_value::KvEntry>, ApiError> {
        Ok(self
            .state
            .store
            .kv_get(FILTER_STATE, key)
            .await?
            .filter(|e| e.resource == id.to_string()))
    }
}

/// The `value` of a body: a required string holding JSON.
fn value_of(body: &Json_) -> Result<String, ApiError> {
    if !body.is_object() {
        return Err(tc::field_error("_schema", "Invalid input type."));
    }
    let v = tc::required_str(body, "value")?;
    tc::check_json(v, Some("value"))?;
    Ok(v.to_owned())
}

#[OpenApi(prefix_path = "/api/v1/dashboard", tag = "Tags::Dashboard")]
impl FilterStateApi {
    /// Store a dashboard's filter state: `{"key"}`.
    #[oai(
        path = "/:pk/filter_state",
        method = "post",
        operation_id = "dashboard_filter_state_post"
    )]
    async fn post(
        &self,
        auth: Auth,
        pk: Path<String>,
        tab_id: Query<Option<String>>,
        body: JsonBody<Body<Obj<TemporaryCacheBody>>>,
    ) -> Result<Created<Obj<KeyResponse>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", VIEW).await?;
        let value = value_of(&body.0.value)?;
        let id = self.dashboard(&pk.0, &user).await?;
        let resource = id.to_string();
        let key = tc::key_for_tab(
            &self.state,
            &auth,
            FILTER_STATE,
            tab_id.0.as_deref(),
            &resource,
            FILTER_STATE_TTL,
        )
        .await?;
        tc::put(
            &self.state,
            &auth,
            FILTER_STATE,
            &key,
            &resource,
            value,
            Some(FILTER_STATE_TTL),
        )
        .await?;
        Ok(Created::of(KeyResponse { key }))
    }

    /// A stored filter state: `{"value": "<json text>"}`.
    #[oai(
        path = "/:pk/filter_state/:key",
        method = "get",
        operation_id = "dashboard_filter_state_get"
    )]
    async fn get(
        &self,
        auth: Auth,
        pk: Path<String>,
        key: Path<String>,
    ) -> Result<Json<TemporaryCacheValue>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", VIEW).await?;
        let id = self.dashboard(&pk.0, &user).await?;
        let entry = self
            .entry(id, &key.0)
            .await?
            .ok_or_else(ApiError::not_found)?;
        tc::get_refreshed(&self.state, FILTER_STATE, &key.0, FILTER_STATE_TTL).await?;
        Ok(Json(TemporaryCacheValue { value: entry.value }))
    }

    /// Replace a filter state (its owner only); the answer's key may be a new one.
    #[oai(
        path = "/:pk/filter_state/:key",
        method = "put",
        operation_id = "dashboard_filter_state_put"
    )]
    async fn put(
        &self,
        auth: Auth,
        pk: Path<String>,
        key: Path<String>,
        tab_id: Query<Option<String>>,
        body: JsonBody<Body<Obj<TemporaryCacheBody>>>,
    ) -> Result<Json<KeyResponse>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", VIEW).await?;
        let value = value_of(&body.0.value)?;
        let id = self.dashboard(&pk.0, &user).await?;
        let Some(entry) = self.entry(id, &key.0).await? else {
            // Superset answers an unknown key with the key itself, storing nothing.
            return Ok(Json(KeyResponse { key: key.0 }));
        };
        tc::ensure_owner(&auth, &entry)?;
        let resource = id.to_string();
        let new_key = tc::key_for_tab(
            &self.state,
            &auth,
            FILTER_STATE,
            tab_id.0.as_deref(),
            &resource,
            FILTER_STATE_TTL,
        )
        .await?;
        tc::put(
            &self.state,
            &auth,
            FILTER_STATE,
            &new_key,
            &resource,
            value,
            Some(FILTER_STATE_TTL),
        )
        .await?;
        Ok(Json(KeyResponse { key: new_key }))
    }

    /// Delete a filter state (its owner only).
    #[oai(
        path = "/:pk/filter_state/:key",
        method = "delete",
        operation_id = "dashboard_filter_state_delete"
    )]
    async fn delete(
        &self,
        auth: Auth,
        pk: Path<String>,
        key: Path<String>,
        tab_id: Query<Option<String>>,
    ) -> Result<Json<Message>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", VIEW).await?;
        let id = self.dashboard(&pk.0, &user).await?;
        let entry = self
            .entry(id, &key.0)
            .await?
            .ok_or_else(ApiError::not_found)?;
        tc::ensure_owner(&auth, &entry)?;
        tc::forget_tab(
            &self.state,
            &auth,
            FILTER_STATE,
            tab_id.0.as_deref(),
            &entry.resource,
        )
        .await?;
        if !self.state.store.kv_delete(FILTER_STATE, &key.0).await? {
            return Err(ApiError::not_found());
        }
        Ok(Json(Message {
            message: "Deleted successfully".into(),
        }))
    }

    /// A permanent link to the dashboard in a state (filters, tabs, anchor): `{"key", "url"}`.
    #[oai(
        path = "/:pk/permalink",
        method = "post",
        operation_id = "dashboard_permalink_post"
    )]
    async fn permalink_post(
        &self,
        auth: Auth,
        req: &poem::Request,
        pk: Path<String>,
        body: JsonBody<Body<Obj<DashboardPermalinkState>>>,
    ) -> Result<Created<Obj<PermalinkResponse>>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_write", "DashboardPermalinkRestApi")
                .await?;
        let state = permalink_state(&body.0.value)?;
        let id = services::dashboard::resolve(&self.state, &pk.0, &user).await?;
        let uuid = self
            .state
            .store
            .load_one(&DASHBOARD, id, &[])
            .await?
            .text("uuid");
        let value = json!({"dashboardId": uuid, "state": state}).to_string();
        if value.len() > tc::MAX_VALUE_BYTES {
            return Err(tc::field_error("dataMask", "Value is too large."));
        }
        let key = tc::random_key();
        tc::put(
            &self.state,
            &auth,
            tc::DASHBOARD_PERMALINK,
            &key,
            &id.to_string(),
            value,
            None,
        )
        .await?;
        let url = tc::external_url(req, &format!("/superset/dashboard/p/{key}/"));
        Ok(Created::of(PermalinkResponse { key, url }))
    }

    /// The state behind a dashboard permalink: `{"dashboardId", "state"}`.
    #[oai(
        path = "/permalink/:key",
        method = "get",
        operation_id = "dashboard_permalink_get"
    )]
    async fn permalink_get(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Json<DashboardPermalinkValue>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_read", "DashboardPermalinkRestApi")
                .await?;
        let entry = self
            .state
            .store
            .kv_get(tc::DASHBOARD_PERMALINK, &key.0)
            .await?
            .ok_or_else(ApiError::not_found)?;
        let value: Json_ =
            serde_json::from_str(&entry.value).map_err(|e| ApiError::internal(&e))?;
        let value = DashboardPermalinkValue {
            dashboard_id: value["dashboardId"].as_str().unwrap_or_default().to_owned(),
            state: Any(value["state"].clone()),
        };
        services::dashboard::resolve(&self.state, &entry.resource, &user).await?;
        Ok(Json(value))
    }
}

/// Superset's `DashboardPermalinkStateSchema` (the body of a new dashboard permalink).
#[derive(Object)]
struct DashboardPermalinkState {
    /// The native filters' state, by filter id.
    #[oai(rename = "dataMask")]
    data_mask: Option<Nullable<Any<Json_>>>,
    /// The open tabs.
    #[oai(rename = "activeTabs")]
    active_tabs: Option<Nullable<Vec<String>>>,
    /// The element scrolled to.
    anchor: Option<Nullable<String>>,
    /// Extra URL parameters, `[key, value]` pairs.
    #[oai(rename = "urlParams")]
    url_params: Option<Nullable<Vec<Vec<Nullable<String>>>>>,
}

/// What a dashboard permalink holds.
#[derive(Object)]
struct DashboardPermalinkValue {
    /// The dashboard's uuid.
    #[oai(rename = "dashboardId")]
    dashboard_id: String,
    /// The state it was shared in.
    state: Any<Json_>,
}

/// `DashboardPermalinkStateSchema`: only its four fields, each checked.
fn permalink_state(body: &Json_) -> Result<Json_, ApiError> {
    let Some(obj) = body.as_object() else {
        return Err(tc::field_error("_schema", "Invalid input type."));
    };
    let mut out = Map::new();
    for (k, v) in obj {
        let ok = match k.as_str() {
            "dataMask" => v.is_object() || v.is_null(),
            "activeTabs" => {
                v.is_null() || v.as_array().is_some_and(|a| a.iter().all(Json_::is_string))
            }
            "anchor" => v.is_string() || v.is_null(),
            "urlParams" => tc::check_url_params(body).is_ok(),
            _ => return Err(tc::field_error(k, "Unknown field.")),
        };
        if !ok {
            return Err(tc::field_error(k, "Invalid value."));
        }
        out.insert(k.clone(), v.clone());
    }
    Ok(Json_::Object(out))
}
