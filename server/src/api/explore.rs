//! `/api/v1/explore/`: what the explore page loads (Superset's `ExploreRestApi`), its form data
//! (`ExploreFormDataRestApi`) and permalinks (`ExplorePermalinkRestApi`).

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{Object, OpenApi};
use serde_json::{Map, Value as Json_, json};

use super::Tags;
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::resource;
use super::temporary_cache::{self as tc, FORM_DATA, FORM_DATA_TTL};
use super::wire::{
    Body, Created, KeyResponse, Message, Nullable, Obj, PermalinkResponse, ResultOf,
};
use crate::auth::CurrentUser;
use crate::state::AppState;
use crate::store::catalog::{self, CHART, DATASET};
use crate::store::model::Record;

/// The explore endpoints.
pub struct ExploreApi {
    pub(super) state: Arc<AppState>,
}

/// Datasource types Superset's `DatasourceType` accepts in bodies.
const DATASOURCE_TYPES: &[&str] = &["table", "dataset", "query", "saved_query", "view"];

/// Why a datasource or chart cannot be used, before each endpoint picks its wording.
enum Denied {
    DatasetMissing,
    DatasetForbidden,
    ChartMissing,
    ChartForbidden,
}

/// Superset's explore `check_access`: the dataset exists and is readable, and a chart, when
/// named, exists and is the caller's or readable through `can_read` on Chart.
async fn check_access(
    state: &AppState,
    user: &CurrentUser,
    datasource_id: i64,
    datasource_type: &str,
    chart_id: Option<i64>,
) -> Result<(), Denied> {
    // Liteset's only datasources are datasets; a query or view id names nothing here.
    if !["table", "dataset"].contains(&datasource_type) {
        return Err(Denied::DatasetMissing);
    }
    let scope = catalog::dataset_scope(user.grants());
    match state.store.reach(&DATASET, datasource_id, &scope).await {
        Ok(Some(true)) => {}
        Ok(Some(false)) => return Err(Denied::DatasetForbidden),
        Ok(None) | Err(_) => return Err(Denied::DatasetMissing),
    }
    let Some(chart_id) = chart_id.filter(|c| *c != 0) else {
        return Ok(());
    };
    let chart = state
        .store
        .load(&CHART, &[chart_id], &["owners", "created_by"])
        .await
        .ok()
        .and_then(|mut v| v.pop())
        .ok_or(Denied::ChartMissing)?;
    if resource::can_change(user, &chart) || user.has("can_read", "Chart") {
        Ok(())
    } else {
        Err(Denied::ChartForbidden)
    }
}

/// The temporary cache's wording of a refused access.
fn cache_error(d: Denied) -> ApiError {
    match d {
        Denied::DatasetMissing | Denied::ChartMissing => tc::resource_not_found(),
        Denied::DatasetForbidden | Denied::ChartForbidden => tc::access_denied(),
    }
}

/// The commands' own wording (permalinks).
fn command_error(d: Denied) -> ApiError {
    match d {
        Denied::DatasetMissing => ApiError::message(Fault::NotFound, "Dataset does not exist"),
        Denied::ChartMissing => ApiError::message(Fault::NotFound, "Chart not found."),
        Denied::DatasetForbidden => {
            ApiError::message(Fault::Forbidden, "You don't have access to this dataset.")
        }
        Denied::ChartForbidden => {
            ApiError::message(Fault::Forbidden, "You don't have access to this chart.")
        }
    }
}

/// Superset's `FormDataPostSchema` / `FormDataPutSchema`, as documented (the body is checked
/// by [`form_data_body`] with Superset's messages).
#[derive(Object)]
struct FormDataSchema {
    /// The dataset (or query) the form data is about.
    datasource_id: i64,
    /// One of `table`, `dataset`, `query`, `saved_query`, `view`.
    datasource_type: String,
    /// The chart being edited, if any.
    chart_id: Option<Nullable<i64>>,
    /// The form data, as JSON text.
    form_data: String,
}

/// `GET /explore/form_data/<key>`.
#[derive(Object)]
struct FormDataValue {
    /// The stored form data, as JSON text.
    form_data: String,
}

/// Superset's `ExplorePermalinkStateSchema`.
#[derive(Object)]
struct ExplorePermalinkState {
    /// The chart's form data.
    #[oai(rename = "formData")]
    form_data: Any<Json_>,
    /// Extra URL parameters, `[key, value]` pairs.
    #[oai(rename = "urlParams")]
    url_params: Option<Nullable<Vec<Vec<Nullable<String>>>>>,
}

/// What an explore permalink holds.
#[derive(Object)]
struct ExplorePermalinkValue {
    /// The chart, when the state was a saved chart's.
    #[oai(rename = "chartId")]
    chart_id: Nullable<i64>,
    /// The dataset's id.
    #[oai(rename = "datasourceId")]
    datasource_id: i64,
    /// The dataset's type.
    #[oai(rename = "datasourceType")]
    datasource_type: String,
    /// `<id>__<type>`.
    datasource: String,
    /// The state shared (`formData`, `urlParams`).
    state: Any<Json_>,
}

/// `GET /explore/`'s result: the page's initial state.
#[derive(Object)]
struct ExploreState {
    /// The dataset, as the explore page reads it.
    dataset: Any<Json_>,
    /// The form data to start from.
    form_data: Any<Json_>,
    /// The saved chart, if any.
    slice: Nullable<Any<Json_>>,
    /// Why the form data is not the one asked for, if it is not.
    message: Nullable<String>,
    /// Who made the chart and when.
    metadata: Nullable<Any<Json_>>,
}

/// A form data body (`FormDataPostSchema`/`FormDataPutSchema`).
struct FormDataBody {
    datasource_id: i64,
    datasource_type: String,
    chart_id: Option<i64>,
    form_data: String,
}

fn form_data_body(body: &Json_) -> Result<FormDataBody, ApiError> {
    if !body.is_object() {
        return Err(tc::field_error("_schema", "Invalid input type."));
    }
    let datasource_id = tc::int_field(body, "datasource_id", true)?.unwrap_or_default();
    let datasource_type = tc::required_str(body, "datasource_type")?.to_owned();
    if !DATASOURCE_TYPES.contains(&datasource_type.as_str()) {
        return Err(tc::field_error(
            "datasource_type",
            "Must be one of: table, dataset, query, saved_query, view.",
        ));
    }
    let chart_id = tc::int_field(body, "chart_id", false)?;
    let form_data = tc::required_str(body, "form_data")?.to_owned();
    // The command validates the JSON, so its error has no field name.
    if !form_data.is_empty() {
        tc::check_json(&form_data, None)?;
    }
    Ok(FormDataBody {
        datasource_id,
        datasource_type,
        chart_id,
        form_data,
    })
}

/// The stored state of one form data key.
fn state_json(b: &FormDataBody) -> String {
    json!({
        "datasource_id": b.datasource_id,
        "datasource_type": b.datasource_type,
        "chart_id": b.chart_id,
        "form_data": b.form_data,
    })
    .to_string()
}

fn resource_of(b: &FormDataBody) -> String {
    format!(
        "{}__{}__{}",
        b.datasource_id,
        b.datasource_type,
        b.chart_id.unwrap_or_default()
    )
}

/// A stored form data state, read back.
fn stored_state(value: &str) -> FormDataBody {
    let v: Json_ = serde_json::from_str(value).unwrap_or_default();
    FormDataBody {
        datasource_id: v["datasource_id"].as_i64().unwrap_or_default(),
        datasource_type: v["datasource_type"].as_str().unwrap_or("table").to_owned(),
        chart_id: v["chart_id"].as_i64(),
        form_data: v["form_data"].as_str().unwrap_or_default().to_owned(),
    }
}

/// A full name as Superset's `get_full_name`.
fn full_name(u: &Record) -> String {
    format!("{} {}", u.text("first_name"), u.text("last_name"))
        .trim()
        .to_owned()
}

/// `Slice.data`: the chart as explore renders it.
fn slice_data(c: &Record) -> Json_ {
    let changed = c.get::<chrono::NaiveDateTime>("changed_on");
    json!({
        "cache_timeout": c.get::<i64>("cache_timeout"),
        "changed_on": changed.map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()),
        "changed_on_humanized": changed.map(resource::humanize),
        "datasource": c.get::<String>("datasource_name"),
        "description": c.get::<String>("description"),
        "description_markeddown": c.text("description"),
        "edit_url": format!("/chart/edit/{}", c.id),
        "form_data": crate::services::chart::form_data(c),
        "query_context": c.get::<String>("query_context"),
        "modified": changed.map(resource::humanize),
        "owners": c.related("owners").iter().map(|o| o.id).collect::<Vec<_>>(),
        "slice_id": c.id,
        "slice_name": c.text("slice_name"),
        "slice_url": format!("/explore/?slice_id={}", c.id),
        "certified_by": c.get::<String>("certified_by"),
        "certification_details": c.get::<String>("certification_details"),
        "is_managed_externally": c.flag("is_managed_externally"),
    })
}

/// The metadata block explore shows under a saved chart's name.
fn slice_metadata(c: &Record) -> Json_ {
    let mut m = json!({
        "created_on_humanized": c.get::<chrono::NaiveDateTime>("created_on").map(resource::humanize),
        "changed_on_humanized": c.get::<chrono::NaiveDateTime>("changed_on").map(resource::humanize),
        "owners": c.related("owners").iter().map(full_name).collect::<Vec<_>>(),
        "dashboards": c.related("dashboards").iter().map(|d| json!({
            "id": d.id, "dashboard_title": d.text("dashboard_title"),
        })).collect::<Vec<_>>(),
    });
    if let Some(u) = c.one("created_by") {
        m["created_by"] = json!(full_name(u));
    }
    if let Some(u) = c.one("changed_by") {
        m["changed_by"] = json!(full_name(u));
    }
    m
}

/// Superset's `update_time_range`: legacy `since`/`until` become `time_range`.
fn update_time_range(fd: &mut Map<String, Json_>) {
    if fd.contains_key("since") || fd.contains_key("until") {
        let side = |v: Option<Json_>| match v {
            Some(Json_::String(s)) if !s.is_empty() => s,
            _ => "No filter".to_owned(),
        };
        let since = side(fd.remove("since"));
        let until = side(fd.remove("until"));
        fd.insert("time_range".into(), json!(format!("{since} : {until}")));
    }
}

#[OpenApi(prefix_path = "/api/v1/explore", tag = "Tags::Explore")]
impl ExploreApi {
    /// The explore page's initial state: the dataset, the form data (from a form data key, a
    /// permalink, a saved chart or a dataset) and the saved chart, if any.
    #[oai(path = "/", method = "get", operation_id = "explore_get")]
    #[allow(clippy::too_many_arguments)]
    async fn get(
        &self,
        auth: Auth,
        req: &poem::Request,
        form_data_key: Query<Option<String>>,
        permalink_key: Query<Option<String>>,
        slice_id: Query<Option<String>>,
        datasource_id: Query<Option<String>>,
        datasource_type: Query<Option<String>>,
    ) -> Result<Json<ResultOf<ExploreState>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", "Explore").await?;
        let int_arg = |v: &Option<String>| v.as_deref().and_then(|s| s.trim().parse::<i64>().ok());
        let slice_id = int_arg(&slice_id.0).filter(|s| *s != 0);
        let mut ds_id = int_arg(&datasource_id.0);
        let mut ds_type = datasource_type.0.clone();

        let mut initial = Map::new();
        if let Some(key) = permalink_key.0.as_deref() {
            let value = self
                .state
                .store
                .kv_get(tc::EXPLORE_PERMALINK, key)
                .await?
                .and_then(|e| serde_json::from_str::<Json_>(&e.value).ok())
                .ok_or_else(|| {
                    ApiError::message(
                        Fault::NotFound,
                        "An error occurred while accessing the value.",
                    )
                })?;
            let st = &value["state"];
            if let Some(fd) = st["formData"].as_object() {
                initial = fd.clone();
            }
            if let Some(params) = st["urlParams"].as_array() {
                let pairs: Map<String, Json_> = params
                    .iter()
                    .filter_map(|p| Some((p.get(0)?.as_str()?.to_owned(), p.get(1)?.clone())))
                    .collect();
                if !pairs.is_empty() {
                    initial.insert("url_params".into(), Json_::Object(pairs));
                }
            }
        } else if let Some(key) = form_data_key.0.as_deref().filter(|k| !k.is_empty())
            && let Some(e) = tc::get_refreshed(&self.state, FORM_DATA, key, FORM_DATA_TTL).await?
        {
            {
                let st = stored_state(&e.value);
                check_access(
                    &self.state,
                    &user,
                    st.datasource_id,
                    &st.datasource_type,
                    st.chart_id,
                )
                .await
                .map_err(cache_error)?;
                if let Ok(Json_::Object(fd)) = serde_json::from_str::<Json_>(&st.form_data) {
                    initial = fd;
                }
            }
        }

        let mut message: Option<String> = None;
        let had_key = form_data_key.0.as_deref().is_some_and(|k| !k.is_empty());
        if initial.is_empty() {
            if let Some(s) = slice_id {
                initial.insert("slice_id".into(), json!(s));
                if had_key {
                    message =
                        Some("Form data not found in cache, reverting to chart metadata.".into());
                }
            } else if let Some(d) = ds_id {
                let t = ds_type.clone().unwrap_or_else(|| "None".into());
                initial.insert("datasource".into(), json!(format!("{d}__{t}")));
                if had_key {
                    message =
                        Some("Form data not found in cache, reverting to dataset metadata.".into());
                }
            }
        }

        // `get_form_data`: a saved chart's form data under what was asked for.
        let chart_id = initial
            .get("slice_id")
            .and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()))
            .or(slice_id);
        let chart = match chart_id {
            Some(id) => self
                .state
                .store
                .load(
                    &CHART,
                    &[id],
                    &["owners", "dashboards", "created_by", "changed_by"],
                )
                .await?
                .pop(),
            None => None,
        };
        let mut form_data = match &chart {
            Some(c) => {
                let mut fd = crate::services::chart::form_data(c)
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                fd.extend(initial);
                fd
            }
            None => initial,
        };
        update_time_range(&mut form_data);

        // `get_datasource_info`: the form data's datasource wins over the query arguments.
        if let Some(Json_::String(ds)) = form_data.get("datasource")
            && let Some((id, ty)) = ds.split_once("__")
        {
            ds_id = id.parse().ok();
            ds_type = Some(ty.to_owned());
        }
        let ds_type = ds_type.unwrap_or_else(|| "table".into());
        let dataset = match ds_id {
            Some(id) if ["table", "dataset"].contains(&ds_type.as_str()) => {
                let scope = catalog::dataset_scope(user.grants());
                match self.state.store.reach(&DATASET, id, &scope).await? {
                    None => None,
                    Some(true) => Some(super::datasource::dataset_data(&self.state, id).await?),
                    Some(false) => {
                        tracing::info!(
                            message = "Explore of an inaccessible dataset refused.",
                            dataset = id
                        );
                        return Err(ApiError::superset_error(
                            Fault::Forbidden,
                            "DATASOURCE_SECURITY_ACCESS_ERROR",
                            "warning",
                            format!(
                                "This endpoint requires the datasource {id}, database or `all_datasource_access` permission"
                            ),
                            json!({"link": Json_::Null, "datasource": id}),
                        ));
                    }
                }
            }
            _ => None,
        };
        form_data.insert(
            "datasource".into(),
            json!(format!(
                "{}__{ds_type}",
                ds_id.map_or_else(|| "None".to_owned(), |i| i.to_string())
            )),
        );
        // `merge_request_params`: every query argument but `form_data` and `r`.
        let mut url_params = form_data
            .remove("url_params")
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        if let Some(q) = req.uri().query() {
            for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
                if k != "form_data" && k != "r" {
                    url_params.insert(k.into_owned(), json!(v.into_owned()));
                }
            }
        }
        form_data.insert("url_params".into(), Json_::Object(url_params));

        let dataset = match dataset {
            Some(mut d) => {
                // `sanitize_datasource_data`: connection parameters never reach the page.
                if d["database"].is_object() {
                    d["database"]["parameters"] = json!({});
                }
                d
            }
            None => json!({
                "type": ds_type,
                "name": "[Missing Dataset]",
                "columns": [],
                "metrics": [],
                "database": {"id": 0, "backend": "", "parameters": {}},
            }),
        };
        Ok(ResultOf::json(ExploreState {
            dataset: Any(dataset),
            form_data: Any(Json_::Object(form_data)),
            slice: chart.as_ref().map(|c| Any(slice_data(c))).into(),
            message: message.into(),
            metadata: chart.as_ref().map(|c| Any(slice_metadata(c))).into(),
        }))
    }

    /// Store form data; `{"key"}` names it in the explore URL.
    #[oai(
        path = "/form_data",
        method = "post",
        operation_id = "explore_form_data_post"
    )]
    async fn form_data_post(
        &self,
        auth: Auth,
        tab_id: Query<Option<String>>,
        body: JsonBody<Body<Obj<FormDataSchema>>>,
    ) -> Result<Created<Obj<KeyResponse>>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_write", "ExploreFormDataRestApi").await?;
        let b = form_data_body(&body.0.value)?;
        check_access(
            &self.state,
            &user,
            b.datasource_id,
            &b.datasource_type,
            b.chart_id,
        )
        .await
        .map_err(cache_error)?;
        let resource = resource_of(&b);
        let key = tc::key_for_tab(
            &self.state,
            &auth,
            FORM_DATA,
            tab_id.0.as_deref(),
            &resource,
            FORM_DATA_TTL,
        )
        .await?;
        if !b.form_data.is_empty() {
            tc::put(
                &self.state,
                &auth,
                FORM_DATA,
                &key,
                &resource,
                state_json(&b),
                Some(FORM_DATA_TTL),
            )
            .await?;
        }
        Ok(Created::of(KeyResponse { key }))
    }

    /// Stored form data: `{"form_data": "<json text>"}`.
    #[oai(
        path = "/form_data/:key",
        method = "get",
        operation_id = "explore_form_data_get"
    )]
    async fn form_data_get(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Json<FormDataValue>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_read", "ExploreFormDataRestApi").await?;
        let entry = tc::get_refreshed(&self.state, FORM_DATA, &key.0, FORM_DATA_TTL)
            .await?
            .ok_or_else(ApiError::not_found)?;
        let st = stored_state(&entry.value);
        check_access(
            &self.state,
            &user,
            st.datasource_id,
            &st.datasource_type,
            st.chart_id,
        )
        .await
        .map_err(cache_error)?;
        Ok(Json(FormDataValue {
            form_data: st.form_data,
        }))
    }

    /// Replace stored form data (its owner only); the answer's key may be a new one.
    #[oai(
        path = "/form_data/:key",
        method = "put",
        operation_id = "explore_form_data_put"
    )]
    async fn form_data_put(
        &self,
        auth: Auth,
        key: Path<String>,
        tab_id: Query<Option<String>>,
        body: JsonBody<Body<Obj<FormDataSchema>>>,
    ) -> Result<Json<KeyResponse>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_write", "ExploreFormDataRestApi").await?;
        let b = form_data_body(&body.0.value)?;
        check_access(
            &self.state,
            &user,
            b.datasource_id,
            &b.datasource_type,
            b.chart_id,
        )
        .await
        .map_err(cache_error)?;
        let Some(entry) = self.state.store.kv_get(FORM_DATA, &key.0).await? else {
            // Superset answers an unknown key with the key itself, storing nothing.
            return Ok(Json(KeyResponse { key: key.0 }));
        };
        if b.form_data.is_empty() {
            return Ok(Json(KeyResponse { key: key.0 }));
        }
        tc::ensure_owner(&auth, &entry)?;
        let resource = resource_of(&b);
        let new_key = tc::key_for_tab(
            &self.state,
            &auth,
            FORM_DATA,
            tab_id.0.as_deref(),
            &resource,
            FORM_DATA_TTL,
        )
        .await?;
        tc::put(
            &self.state,
            &auth,
            FORM_DATA,
            &new_key,
            &resource,
            state_json(&b),
            Some(FORM_DATA_TTL),
        )
        .await?;
        Ok(Json(KeyResponse { key: new_key }))
    }

    /// Delete stored form data (its owner only).
    #[oai(
        path = "/form_data/:key",
        method = "delete",
        operation_id = "explore_form_data_delete"
    )]
    async fn form_data_delete(
        &self,
        auth: Auth,
        key: Path<String>,
        tab_id: Query<Option<String>>,
    ) -> Result<Json<Message>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_write", "ExploreFormDataRestApi").await?;
        let entry = self
            .state
            .store
            .kv_get(FORM_DATA, &key.0)
            .await?
            .ok_or_else(ApiError::not_found)?;
        let st = stored_state(&entry.value);
        check_access(
            &self.state,
            &user,
            st.datasource_id,
            &st.datasource_type,
            st.chart_id,
        )
        .await
        .map_err(cache_error)?;
        tc::ensure_owner(&auth, &entry)?;
        tc::forget_tab(
            &self.state,
            &auth,
            FORM_DATA,
            tab_id.0.as_deref(),
            &entry.resource,
        )
        .await?;
        if !self.state.store.kv_delete(FORM_DATA, &key.0).await? {
            return Err(ApiError::not_found());
        }
        Ok(Json(Message {
            message: "Deleted successfully".into(),
        }))
    }

    /// A permanent link to an explore state: `{"key", "url"}`.
    #[oai(
        path = "/permalink",
        method = "post",
        operation_id = "explore_permalink_post"
    )]
    async fn permalink_post(
        &self,
        auth: Auth,
        req: &poem::Request,
        body: JsonBody<Body<Obj<ExplorePermalinkState>>>,
    ) -> Result<Created<Obj<PermalinkResponse>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_write", "ExplorePermalinkRestApi")
            .await?;
        let state = &body.0.value;
        let form_data = match state.get("formData") {
            Some(Json_::Object(m)) => m,
            None => {
                return Err(tc::field_error(
                    "formData",
                    "Missing data for required field.",
                ));
            }
            Some(Json_::Null) => return Err(tc::field_error("formData", "Field may not be null.")),
            Some(_) => return Err(tc::field_error("formData", "Not a valid mapping type.")),
        };
        tc::check_url_params(state)?;
        let datasource = form_data
            .get("datasource")
            .and_then(Json_::as_str)
            .ok_or_else(|| tc::field_error("formData", "The datasource is missing."))?;
        let (id, ty) = datasource
            .split_once("__")
            .and_then(|(i, t)| Some((i.parse::<i64>().ok()?, t)))
            .ok_or_else(|| tc::field_error("formData", "The datasource is invalid."))?;
        let chart_id = form_data
            .get("slice_id")
            .and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()));
        check_access(&self.state, &user, id, ty, chart_id)
            .await
            .map_err(command_error)?;
        let mut clean = Map::new();
        clean.insert("formData".into(), Json_::Object(form_data.clone()));
        if let Some(p) = state.get("urlParams") {
            clean.insert("urlParams".into(), p.clone());
        }
        let value = json!({
            "chartId": chart_id,
            "datasourceId": id,
            "datasourceType": ty,
            "datasource": datasource,
            "state": clean,
        })
        .to_string();
        if value.len() > tc::MAX_VALUE_BYTES {
            return Err(tc::field_error("formData", "Value is too large."));
        }
        let key = tc::random_key();
        tc::put(
            &self.state,
            &auth,
            tc::EXPLORE_PERMALINK,
            &key,
            &format!("{id}__{ty}"),
            value,
            None,
        )
        .await?;
        let url = tc::external_url(req, &format!("/superset/explore/p/{key}/"));
        Ok(Created::of(PermalinkResponse { key, url }))
    }

    /// The state behind an explore permalink.
    #[oai(
        path = "/permalink/:key",
        method = "get",
        operation_id = "explore_permalink_get"
    )]
    async fn permalink_get(
        &self,
        auth: Auth,
        key: Path<String>,
    ) -> Result<Json<ExplorePermalinkValue>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_read", "ExplorePermalinkRestApi").await?;
        let value: Json_ = self
            .state
            .store
            .kv_get(tc::EXPLORE_PERMALINK, &key.0)
            .await?
            .and_then(|e| serde_json::from_str(&e.value).ok())
            .ok_or_else(ApiError::not_found)?;
        let id = value["datasourceId"].as_i64().unwrap_or_default();
        let ty = value["datasourceType"].as_str().unwrap_or("table");
        check_access(&self.state, &user, id, ty, value["chartId"].as_i64())
            .await
            .map_err(command_error)?;
        Ok(Json(ExplorePermalinkValue {
            chart_id: value["chartId"].as_i64().into(),
            datasource_id: id,
            datasource_type: ty.to_owned(),
            datasource: value["datasource"].as_str().unwrap_or_default().to_owned(),
            state: Any(value["state"].clone()),
        }))
    }
}
