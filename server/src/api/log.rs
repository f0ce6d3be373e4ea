//! The app's client event log: `POST /superset/log/` (where the app sends its batches, by
//! `navigator.sendBeacon` as multipart form data or by a form post), `POST /api/v1/log/`, and
//! `GET /api/v1/log/recent_activity/` (Superset's `LogRestApi`), which the welcome page reads.
//!
//! Only the events recent activity reads (a dashboard or explore page mounted) are kept; the
//! rest of a batch (timings, clicks) is dropped. Logging must never break a page, so a batch
//! that cannot be read, or a caller who may not log, still gets Superset's 200.

use std::sync::Arc;

use poem_openapi::OpenApi;
use poem_openapi::param::Query;
use poem_openapi::payload::{Json, PlainText};
use serde_json::Value as Json_;

use super::Tags;
use super::error::ApiError;
use super::extract::{self, Auth};
use super::listquery;
use super::resource;
use super::wire::{Message, ResultOf};
use crate::state::AppState;
use crate::store::key_value::LogEvent;

/// The events recent activity is made of, by default (Superset's `actions`).
const RECENT_EVENTS: &[&str] = &["mount_explorer", "mount_dashboard"];
/// `LogRestApi.page_size`.
const DEFAULT_PAGE_SIZE: i64 = 20;
/// Most events read from one batch.
const MAX_EVENTS: usize = 200;

/// The log endpoints.
pub struct LogApi {
    pub(super) state: Arc<AppState>,
}

/// The events of a batch: the `events` field (JSON text) of a form or JSON body, or the body
/// itself when it is a JSON list.
async fn read_events(req: &poem::Request, body: poem::Body, limit: u64) -> Vec<Json_> {
    let content_type = req.content_type().unwrap_or_default().to_owned();
    let text = if content_type.starts_with("multipart/form-data") {
        let Ok(mut form) = <poem::web::Multipart as poem::FromRequest>::from_request(
            req,
            &mut poem::RequestBody::new(body),
        )
        .await
        else {
            return Vec::new();
        };
        let mut events = None;
        while let Ok(Some(field)) = form.next_field().await {
            if field.name() == Some("events") {
                events = field.text().await.ok();
                break;
            }
        }
        events
    } else {
        let Ok(bytes) = extract::read_limited(body, limit).await else {
            return Vec::new();
        };
        if content_type.starts_with("application/x-www-form-urlencoded") {
            url::form_urlencoded::parse(&bytes)
                .find(|(k, _)| k == "events")
                .map(|(_, v)| v.into_owned())
        } else {
            match serde_json::from_slice::<Json_>(&bytes) {
                Ok(Json_::Object(m)) => m.get("events").map(|e| match e {
                    Json_::String(s) => s.clone(),
                    other => other.to_string(),
                }),
                Ok(list @ Json_::Array(_)) => Some(list.to_string()),
                _ => None,
            }
        }
    };
    match text.and_then(|t| serde_json::from_str::<Json_>(&t).ok()) {
        Some(Json_::Array(items)) => items.into_iter().take(MAX_EVENTS).collect(),
        Some(one @ Json_::Object(_)) => vec![one],
        _ => Vec::new(),
    }
}

fn int(v: Option<&Json_>) -> Option<i64> {
    v.and_then(|v| v.as_i64().or_else(|| v.as_str()?.trim().parse().ok()))
}

/// The events worth keeping, with the dashboard or chart each is about: the query string's
/// `dashboard_id`/`slice_id` first, as Superset's event logger takes them.
fn keep(req: &poem::Request, events: &[Json_]) -> Vec<LogEvent> {
    let args: Vec<(String, String)> = req
        .uri()
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let arg = |name: &str| {
        args.iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.parse::<i64>().ok())
    };
    events
        .iter()
        .filter_map(|e| {
            let name = e.get("event_name")?.as_str()?;
            if !RECENT_EVENTS.contains(&name) {
                return None;
            }
            let source_id = int(e.get("source_id"));
            let source = e.get("source").and_then(Json_::as_str);
            let dashboard_id = arg("dashboard_id")
                .or_else(|| int(e.get("dashboard_id")))
                .or(source_id.filter(|_| source == Some("dashboard")));
            let slice_id = arg("slice_id")
                .or_else(|| int(e.get("slice_id")))
                .or(source_id.filter(|_| source == Some("slice")));
            Some(LogEvent {
                event_name: Some(name.to_owned()),
                dashboard_id,
                slice_id,
            })
        })
        .collect()
}

impl LogApi {
    /// Records what is worth keeping of a batch; failures are logged, never answered.
    async fn record(&self, auth: &Auth, req: &poem::Request, body: poem::Body, perm: (&str, &str)) {
        if let Err(e) = self
            .state
            .auth
            .authorize(&auth.principal, perm.0, perm.1)
            .await
        {
            tracing::debug!(message = "Client events dropped.", reason = %e);
            extract::drain(body).await;
            return;
        }
        let limit = self.state.config.http.max_body_bytes;
        let events = read_events(req, body, limit).await;
        let kept = keep(req, &events);
        tracing::debug!(
            message = "Client events received.",
            events = events.len(),
            kept = kept.len()
        );
        let user = auth.principal.user().map(|u| u.user.id);
        if user.is_some()
            && let Err(e) = self.state.store.log_events(user, &kept).await
        {
            tracing::warn!(message = "Client events not recorded.", error = %e);
        }
    }
}

#[OpenApi(tag = "Tags::Log")]
impl LogApi {
    /// A batch of client events (Superset's `/superset/log/`): always 200 with an empty body.
    #[oai(path = "/superset/log", method = "post", operation_id = "superset_log")]
    async fn superset_log(
        &self,
        auth: Auth,
        req: &poem::Request,
        body: poem::Body,
    ) -> PlainText<String> {
        self.record(&auth, req, body, ("can_log", "Superset")).await;
        PlainText(String::new())
    }

    /// A batch of client events through the REST API.
    #[oai(path = "/api/v1/log", method = "post", operation_id = "log_post")]
    async fn post(
        &self,
        auth: Auth,
        req: &poem::Request,
        body: poem::Body,
    ) -> Result<Json<Message>, ApiError> {
        // Never an error: the `Result` documents Superset's error responses like every
        // other operation of the API.
        self.record(&auth, req, body, ("can_write", "Log")).await;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// The dashboards and charts the caller opened last, newest first.
    #[oai(
        path = "/api/v1/log/recent_activity",
        method = "get",
        operation_id = "log_recent_activity"
    )]
    async fn recent_activity(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<ResultOf<Vec<Activity>>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_recent_activity", "Log").await?;
        let args =
            listquery::decode_q(q.0.as_deref()).map_err(|e| ApiError::bad_request(e.message()))?;
        let schema_error = |field: &str, ty: &str| {
            ApiError::bad_request(format!(
                "Not a valid rison schema {:?} is not of type '{ty}'",
                args.get(field).cloned().unwrap_or_default()
            ))
        };
        let number = |field: &str| -> Result<Option<i64>, ApiError> {
            match args.get(field) {
                None => Ok(None),
                Some(v) => v
                    .as_f64()
                    .map(|f| Some(f as i64))
                    .ok_or_else(|| schema_error(field, "number")),
            }
        };
        let page = number("page")?.unwrap_or(0).max(0);
        let page_size = number("page_size")?
            .unwrap_or(DEFAULT_PAGE_SIZE)
            .clamp(1, listquery::FAB_API_MAX_PAGE_SIZE);
        let distinct = match args.get("distinct") {
            None => true,
            Some(Json_::Bool(b)) => *b,
            Some(_) => return Err(schema_error("distinct", "boolean")),
        };
        let actions: Vec<String> = match args.get("actions") {
            None => RECENT_EVENTS.iter().map(|s| (*s).to_owned()).collect(),
            Some(Json_::Array(a)) if a.iter().all(Json_::is_string) => a
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect(),
            Some(_) => return Err(schema_error("actions", "array")),
        };
        let rows = self
            .state
            .store
            .recent_activity(user.user.id, &actions, distinct, page, page_size)
            .await?;
        let result: Vec<Activity> = rows
            .iter()
            .map(|a| {
                let (item_type, url, title) = match (&a.dashboard, &a.slice) {
                    (Some((id, slug, title)), _) => (
                        "dashboard",
                        match slug.as_deref().filter(|s| !s.is_empty()) {
                            Some(s) => format!("/superset/dashboard/{s}/"),
                            None => format!("/superset/dashboard/{id}/"),
                        },
                        title.clone(),
                    ),
                    (None, Some((id, name))) => (
                        "slice",
                        format!("/explore/?slice_id={id}"),
                        if name.is_empty() {
                            "<empty>".to_owned()
                        } else {
                            name.clone()
                        },
                    ),
                    (None, None) => ("", String::new(), String::new()),
                };
                Activity {
                    action: a.action.clone(),
                    item_type: item_type.to_owned(),
                    item_url: url,
                    item_title: title,
                    time: a.dttm.and_utc().timestamp_millis() as f64,
                    time_delta_humanized: resource::humanize(a.dttm),
                }
            })
            .collect();
        Ok(ResultOf::json(result))
    }
}

/// One entry of `GET /log/recent_activity/`.
#[derive(poem_openapi::Object)]
pub struct Activity {
    /// The logged action (`dashboard`, `explore`, …).
    pub action: String,
    /// `dashboard` or `slice`.
    pub item_type: String,
    /// Where it opens.
    pub item_url: String,
    /// Its title.
    pub item_title: String,
    /// When, in epoch milliseconds.
    pub time: f64,
    /// When, humanized ("2 hours ago").
    pub time_delta_humanized: String,
}
