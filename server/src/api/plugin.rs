//! `/api/v1/plugin/`: list, inspect, upload and delete WebAssembly plugins (Admin only).

use std::sync::Arc;

use poem::http::StatusCode;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::types::multipart::Upload;
use poem_openapi::{ApiResponse, Multipart, OpenApi};
use serde_json::{Value as Json_, json};

use super::Tags;
use super::error::ApiError;
use super::extract::Auth;
use super::resource::JsonValue;
use crate::auth::{self, CurrentUser, Principal};
use crate::plugins::{PluginSummary, WIT_VERSION};
use crate::state::AppState;

/// The plugin management API.
pub struct PluginApi {
    /// Shared server state.
    pub state: Arc<AppState>,
}

/// `POST /api/v1/plugin/`: a component built for `wasm32-wasip2` against `liteset:plugin`.
#[derive(Debug, Multipart)]
pub struct PluginUpload {
    /// The `.wasm` component.
    file: Upload,
}

/// The outcome of an upload.
#[derive(ApiResponse)]
pub enum Installed {
    /// A new plugin is live.
    #[oai(status = 201)]
    Created(Json<Json_>),
    /// A plugin of the same name was replaced; calls already running finish on the old one.
    #[oai(status = 200)]
    Replaced(Json<Json_>),
}

/// Plugins are code running inside the server: only admins manage them.
fn admin(auth: &Auth) -> Result<Arc<CurrentUser>, ApiError> {
    match &auth.principal {
        Principal::User(u) if u.is_admin() => Ok(u.clone()),
        Principal::User(_) => Err(auth::Error::Forbidden.into()),
        Principal::Anonymous => Err(auth::Error::MissingCredentials.into()),
        Principal::Rejected(e) => Err(auth::Error::clone_of(e).into()),
    }
}

/// The API form of a plugin.
pub fn summary_json(p: &PluginSummary) -> Json_ {
    json!({
        "name": p.name,
        "version": p.version,
        "kind": p.kind.as_str(),
        "label": p.label,
        "description": p.description,
        "viz_types": p.viz_types,
        "params_schema": p.params_schema,
        "wit_version": p.wit_version,
        "source": p.source.as_str(),
        "sha256": p.sha256,
        "size_bytes": p.size_bytes,
        "limits": {"memory_mb": p.memory_mb, "timeout_ms": p.timeout_ms},
        "changed_on": p.changed_on.map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()),
    })
}

#[OpenApi(prefix_path = "/api/v1/plugin", tag = "Tags::Plugin")]
impl PluginApi {
    /// Installed plugins: the built-in ones, then uploaded ones by name.
    #[oai(path = "/", method = "get")]
    async fn list(&self, auth: Auth) -> Result<JsonValue, ApiError> {
        admin(&auth)?;
        let plugins = self.state.plugins.list().await?;
        let result: Vec<Json_> = plugins.iter().map(summary_json).collect();
        Ok(Json(json!({
            "count": result.len(),
            "result": result,
            "supported_wit_versions": [WIT_VERSION],
        })))
    }

    /// One plugin.
    #[oai(path = "/:name", method = "get")]
    async fn get(&self, auth: Auth, name: Path<String>) -> Result<JsonValue, ApiError> {
        admin(&auth)?;
        let p = self.state.plugins.get(&name.0).await?;
        Ok(Json(json!({"result": summary_json(&p.summary)})))
    }

    /// Uploads a component (multipart field `file`). It is validated (a component exporting a
    /// supported `liteset:plugin` world, imports within the allowlist), compiled and
    /// smoke-called, stored, and live for the next request, on every replica.
    #[oai(path = "/", method = "post")]
    async fn upload(&self, auth: Auth, form: PluginUpload) -> Result<Installed, ApiError> {
        let user = admin(&auth)?;
        let bytes = form
            .file
            .into_vec()
            .await
            .map_err(|e| ApiError::bad_request(format!("Could not read the upload: {e}")))?;
        let (summary, replaced) = self
            .state
            .plugins
            .install(bytes, Some(user.user.id))
            .await?;
        let body = Json(json!({"result": summary_json(&summary)}));
        Ok(if replaced {
            Installed::Replaced(body)
        } else {
            Installed::Created(body)
        })
    }

    /// Deletes an uploaded plugin; requests naming it fail from then on.
    #[oai(path = "/:name", method = "delete")]
    async fn delete(&self, auth: Auth, name: Path<String>) -> Result<JsonValue, ApiError> {
        admin(&auth)?;
        self.state.plugins.remove(&name.0).await?;
        Ok(Json(json!({"message": "OK"})))
    }
}

impl From<crate::plugins::PluginError> for ApiError {
    fn from(e: crate::plugins::PluginError) -> Self {
        use crate::plugins::{GuestErrorKind, PluginError as P};
        let text = e.to_string();
        let typed = |status: StatusCode, error_type: &str, reason: &str, plugin: &str| {
            ApiError::sip40(
                status,
                error_type,
                text.clone(),
                json!({"plugin": plugin, "reason": reason}),
            )
        };
        match e {
            P::NotFound(_) => ApiError::message(StatusCode::NOT_FOUND, text),
            P::Rejected(_) => {
                tracing::info!(message = "Plugin refused.", reason = %text);
                ApiError::bad_request(text)
            }
            P::Failed {
                plugin,
                kind,
                message,
            } => {
                if kind == GuestErrorKind::Internal {
                    tracing::error!(message = "Plugin reported an internal error.", plugin = %plugin, reason = %message);
                    typed(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "GENERIC_BACKEND_ERROR",
                        "plugin_error",
                        &plugin,
                    )
                } else {
                    tracing::info!(message = "Plugin refused the request.", plugin = %plugin, reason = %message);
                    // Superset's ChartDataQueryFailedError: `Error: <message>`.
                    ApiError::bad_request(format!("Error: {message}"))
                }
            }
            P::Timeout { plugin, .. } => typed(
                StatusCode::REQUEST_TIMEOUT,
                "BACKEND_TIMEOUT_ERROR",
                "timeout",
                &plugin,
            ),
            P::OutOfMemory { plugin, .. } => typed(
                StatusCode::UNPROCESSABLE_ENTITY,
                "GENERIC_BACKEND_ERROR",
                "out_of_memory",
                &plugin,
            ),
            P::Crashed { plugin, .. } => typed(
                StatusCode::INTERNAL_SERVER_ERROR,
                "GENERIC_BACKEND_ERROR",
                "crashed",
                &plugin,
            ),
            P::BadOutput { plugin, .. } => {
                tracing::error!(message = "Plugin returned an invalid table.", reason = %text);
                typed(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "GENERIC_BACKEND_ERROR",
                    "bad_output",
                    &plugin,
                )
            }
            P::Busy => {
                tracing::warn!(message = "Plugin slots exhausted.");
                let mut err = ApiError::sip40(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "GENERIC_BACKEND_ERROR",
                    text,
                    json!({"reason": "busy"}),
                );
                err.retry_after = Some(1);
                err
            }
            P::Store(s) => s.into(),
            P::Internal(m) => ApiError::internal(&m),
        }
    }
}
