//! `/api/v1/plugin/`: list, inspect, upload and delete WebAssembly plugins (Admin only).

use std::sync::Arc;

use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::types::multipart::Upload;
use poem_openapi::{ApiResponse, Multipart, Object, OpenApi};
use serde_json::Value as Json_;

use super::Tags;
use super::error::ApiError;
use super::extract::Auth;
use super::wire::{Message, Nullable, ResultOf};
use crate::auth::{self, CurrentUser, Principal};
use crate::plugins::{PluginSummary, SUPPORTED_WIT_VERSIONS};
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
    Created(Json<ResultOf<PluginInfo>>),
    /// A plugin of the same name was replaced; calls already running finish on the old one.
    #[oai(status = 200)]
    Replaced(Json<ResultOf<PluginInfo>>),
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

/// The resources one call of a plugin may use.
#[derive(Object)]
pub struct PluginLimits {
    /// Linear memory, in MiB.
    pub memory_mb: u64,
    /// Wall time per call, in milliseconds.
    pub timeout_ms: u64,
}

/// A plugin as the API shows it.
#[derive(Object)]
pub struct PluginInfo {
    /// Its unique name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// `postprocessor` or `viz`.
    pub kind: String,
    /// Its display name.
    pub label: String,
    /// What it does.
    pub description: String,
    /// The chart types it draws (viz plugins).
    pub viz_types: Vec<String>,
    /// The JSON schema of its parameters, if it declares one.
    pub params_schema: Nullable<Any<Json_>>,
    /// The `liteset:plugin` WIT version it was built against.
    pub wit_version: String,
    /// `builtin` or `uploaded`.
    pub source: String,
    /// The component's SHA-256.
    pub sha256: String,
    /// The component's size.
    pub size_bytes: u64,
    /// What one call may use.
    pub limits: PluginLimits,
    /// When it was uploaded (built-in plugins: null).
    pub changed_on: Nullable<String>,
}

impl From<&PluginSummary> for PluginInfo {
    fn from(p: &PluginSummary) -> Self {
        PluginInfo {
            name: p.name.clone(),
            version: p.version.clone(),
            kind: p.kind.as_str().to_owned(),
            label: p.label.clone(),
            description: p.description.clone(),
            viz_types: p.viz_types.clone(),
            params_schema: p.params_schema.clone().map(Any).into(),
            wit_version: p.wit_version.clone(),
            source: p.source.as_str().to_owned(),
            sha256: p.sha256.clone(),
            size_bytes: p.size_bytes as u64,
            limits: PluginLimits {
                memory_mb: p.memory_mb,
                timeout_ms: p.timeout_ms,
            },
            changed_on: p
                .changed_on
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
                .into(),
        }
    }
}

/// `GET /api/v1/plugin/`.
#[derive(Object)]
pub struct PluginList {
    /// How many plugins are installed.
    pub count: u64,
    /// The plugins.
    pub result: Vec<PluginInfo>,
    /// The WIT versions this server runs.
    pub supported_wit_versions: Vec<String>,
}

#[OpenApi(prefix_path = "/api/v1/plugin", tag = "Tags::Plugin")]
impl PluginApi {
    /// Installed plugins: the built-in ones, then uploaded ones by name.
    #[oai(path = "/", method = "get", operation_id = "plugin_list")]
    async fn list(&self, auth: Auth) -> Result<Json<PluginList>, ApiError> {
        admin(&auth)?;
        let plugins = self.state.plugins.list().await?;
        let result: Vec<PluginInfo> = plugins.iter().map(PluginInfo::from).collect();
        Ok(Json(PluginList {
            count: result.len() as u64,
            result,
            supported_wit_versions: SUPPORTED_WIT_VERSIONS
                .iter()
                .map(|v| (*v).to_owned())
                .collect(),
        }))
    }

    /// One plugin.
    #[oai(path = "/:name", method = "get", operation_id = "plugin_get")]
    async fn get(
        &self,
        auth: Auth,
        name: Path<String>,
    ) -> Result<Json<ResultOf<PluginInfo>>, ApiError> {
        admin(&auth)?;
        let p = self.state.plugins.get(&name.0).await?;
        Ok(ResultOf::json(PluginInfo::from(&p.summary)))
    }

    /// Uploads a component (multipart field `file`). It is validated (a component exporting a
    /// supported `liteset:plugin` world, imports within the allowlist), compiled and
    /// smoke-called, stored, and live for the next request, on every replica.
    #[oai(path = "/", method = "post", operation_id = "plugin_upload")]
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
        let body = ResultOf::json(PluginInfo::from(&summary));
        Ok(if replaced {
            Installed::Replaced(body)
        } else {
            Installed::Created(body)
        })
    }

    /// Deletes an uploaded plugin; requests naming it fail from then on.
    #[oai(path = "/:name", method = "delete", operation_id = "plugin_delete")]
    async fn delete(&self, auth: Auth, name: Path<String>) -> Result<Json<Message>, ApiError> {
        admin(&auth)?;
        self.state.plugins.remove(&name.0).await?;
        Ok(Json(Message {
            message: "OK".into(),
        }))
    }
}
