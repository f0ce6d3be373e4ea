//! `/api/v1/me/`: the current user and their roles (Superset's `CurrentUserRestApi`).

use std::collections::BTreeMap;
use std::sync::Arc;

use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{Object, OpenApi};
use serde_json::Value;

use super::Tags;
use super::error::{ApiError, Fault};
use super::extract::Auth;
use crate::auth::{CurrentUser, Principal};
use crate::state::AppState;

/// The current user.
#[derive(Debug, Object)]
pub struct MeUser {
    id: i64,
    username: String,
    email: String,
    first_name: String,
    last_name: String,
    is_active: bool,
    is_anonymous: bool,
    login_count: i64,
}

/// `{"result": user}`.
#[derive(Debug, Object)]
pub struct MeResponse {
    /// The user.
    result: MeUser,
}

/// The current user with roles and data-access permissions.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct MeRoles {
    username: String,
    first_name: String,
    last_name: String,
    /// Absent for a guest (an embedded dashboard's visitor), as in Superset.
    #[oai(skip_serializing_if_is_none)]
    user_id: Option<i64>,
    is_active: bool,
    is_anonymous: bool,
    /// ISO timestamp; absent for a guest.
    #[oai(skip_serializing_if_is_none)]
    created_on: Option<String>,
    /// Absent for a guest.
    #[oai(skip_serializing_if_is_none)]
    email: Option<String>,
    /// Absent for a guest.
    #[oai(skip_serializing_if_is_none)]
    login_count: Option<i64>,
    /// Role name → list of `[permission, view_menu]` pairs.
    roles: Any<BTreeMap<String, Vec<[String; 2]>>>,
    /// `datasource_access` and `database_access` → granted view menus.
    permissions: Any<Value>,
}

/// `{"result": roles}`.
#[derive(Debug, Object)]
pub struct MeRolesResponse {
    /// Roles and permissions.
    result: MeRoles,
}

/// The current-user endpoints.
pub struct MeApi {
    pub(super) state: Arc<AppState>,
}

/// `/me/` answers anonymous callers with FAB's 401, but bad tokens with flask-jwt's body so
/// that clients can refresh on "Token has expired".
fn current(principal: &Principal) -> Result<&Arc<CurrentUser>, ApiError> {
    match principal {
        Principal::User(u) => Ok(u),
        Principal::Rejected(e) => Err(ApiError::from(crate::auth::Error::clone_of(e))),
        Principal::Anonymous => Err(ApiError::message(Fault::Unauthorized, "Not authorized")),
    }
}

#[OpenApi(prefix_path = "/api/v1/me", tag = "Tags::CurrentUser")]
impl MeApi {
    /// The authenticated user.
    #[oai(path = "/", method = "get", operation_id = "me_get")]
    async fn me(&self, auth: Auth) -> Result<Json<MeResponse>, ApiError> {
        let u = &current(&auth.principal)?.user;
        Ok(Json(MeResponse {
            result: MeUser {
                id: u.id,
                username: u.username.clone(),
                email: u.email.clone(),
                first_name: u.first_name.clone(),
                last_name: u.last_name.clone(),
                is_active: u.active,
                is_anonymous: false,
                login_count: u.login_count,
            },
        }))
    }

    /// The authenticated user's roles, their permissions and data-access grants.
    #[oai(path = "/roles", method = "get", operation_id = "me_roles")]
    async fn roles(&self, auth: Auth) -> Result<Json<MeRolesResponse>, ApiError> {
        let cu = current(&auth.principal)?;
        let (roles, permissions) = super::shell::roles_and_permissions(&self.state, cu).await?;
        let u = &cu.user;
        // Superset's `bootstrap_user_data` gives a guest only its names and flags.
        let stored = cu.guest.is_none();
        Ok(Json(MeRolesResponse {
            result: MeRoles {
                username: u.username.clone(),
                first_name: u.first_name.clone(),
                last_name: u.last_name.clone(),
                user_id: stored.then_some(u.id),
                is_active: u.active,
                is_anonymous: false,
                created_on: stored
                    .then(|| u.created_on.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()),
                email: stored.then(|| u.email.clone()),
                login_count: stored.then_some(u.login_count),
                roles: Any(roles),
                permissions: Any(permissions),
            },
        }))
    }
}
