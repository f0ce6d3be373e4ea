//! `/api/v1/security/*`: login, token refresh and the CSRF token (FAB `SecurityApi` and
//! Superset's `SecurityRestApi`).

use std::sync::Arc;

use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Tags;
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::session::{session_cookie, session_with_csrf};
use crate::auth::{GuestResource, GuestRls, GuestUser};
use crate::services::embedded::{self, GuestTokenRequest};
use crate::state::AppState;

/// Login request, as FAB's `SecurityApi.login` takes it.
#[derive(Debug, Deserialize, Object)]
pub struct LoginRequest {
    /// Username, or the user's email.
    username: String,
    /// Password.
    password: String,
    /// `db` (`ldap` is refused: this server authenticates against its own user table).
    provider: String,
    /// Also return a refresh token. Python truthiness, as FAB: `true`, `"true"`, `1`.
    #[serde(default)]
    refresh: Option<Any<Value>>,
}

/// Tokens of a successful login.
#[derive(Debug, Object)]
pub struct LoginResponse {
    /// JWT for `Authorization: Bearer`.
    access_token: String,
    /// JWT for `/security/refresh`, when requested.
    #[oai(skip_serializing_if_is_none)]
    refresh_token: Option<String>,
}

/// A new access token.
#[derive(Debug, Object)]
pub struct RefreshResponse {
    /// JWT for `Authorization: Bearer`.
    access_token: String,
}

/// The CSRF token to send back as `X-CSRFToken`.
#[derive(Debug, Object)]
pub struct CsrfTokenResponse {
    /// The token.
    result: String,
}

#[derive(ApiResponse)]
enum CsrfResponse {
    /// The token; the `session` cookie carries its secret and must be sent back with it.
    #[oai(status = 200)]
    Ok(
        Json<CsrfTokenResponse>,
        #[oai(header = "Set-Cookie")] String,
    ),
}

/// Superset's `UserSchema` of a guest token request (unknown keys ignored).
#[derive(Debug, Default, Deserialize, Object)]
pub struct GuestTokenUser {
    /// Shown as the visitor's name.
    username: Option<String>,
    /// Given name.
    first_name: Option<String>,
    /// Family name.
    last_name: Option<String>,
}

/// Superset's `ResourceSchema`: one dashboard the token grants.
#[derive(Debug, Deserialize, Object)]
pub struct GuestTokenResource {
    /// `dashboard`.
    #[serde(rename = "type")]
    #[oai(rename = "type")]
    kind: String,
    /// The embedded dashboard's uuid (or the dashboard's id).
    id: Any<Value>,
}

/// Superset's `RlsRuleSchema`: a clause, on one dataset or on all.
#[derive(Debug, Deserialize, Object)]
pub struct GuestTokenRls {
    /// Dataset id; every dataset when absent.
    dataset: Option<i64>,
    /// The SQL predicate.
    clause: String,
}

/// Superset's `GuestTokenCreateSchema`.
#[derive(Debug, Deserialize, Object)]
pub struct GuestTokenBody {
    /// Who the visitor is.
    #[serde(default)]
    user: Option<GuestTokenUser>,
    /// The dashboards the visitor may see.
    resources: Vec<GuestTokenResource>,
    /// Row-level clauses added for the visitor.
    rls: Vec<GuestTokenRls>,
}

/// `{"token": ...}`.
#[derive(Debug, Object)]
pub struct GuestTokenResponse {
    /// The guest token, for the embedding SDK's `fetchGuestToken`.
    token: String,
}

/// Python's truthiness of a JSON value, which FAB applies to `refresh`.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The security endpoints.
pub struct SecurityApi {
    pub(super) state: Arc<AppState>,
}

#[OpenApi(prefix_path = "/api/v1/security", tag = "Tags::Security")]
impl SecurityApi {
    /// Authenticate and get a JWT access token (and optionally a refresh token).
    #[oai(path = "/login", method = "post", operation_id = "security_login")]
    async fn login(
        &self,
        req: &Request,
        body: JsonBody<LoginRequest>,
    ) -> Result<Json<LoginResponse>, ApiError> {
        let b = body.0;
        let mut problems = serde_json::Map::new();
        for (field, v) in [("username", &b.username), ("password", &b.password)] {
            if v.is_empty() {
                problems.insert(field.into(), json!(["Shorter than minimum length 1."]));
            }
        }
        if !["db", "ldap"].contains(&b.provider.as_str()) {
            problems.insert("provider".into(), json!(["Must be one of: db, ldap."]));
        }
        if !problems.is_empty() {
            return Err(ApiError::fields(Fault::BadRequest, Value::Object(problems)));
        }
        if b.provider != "db" {
            return Err(ApiError::bad_request(
                "Alternative authentication provider is not allowed",
            ));
        }
        let client = req.remote_addr().as_socket_addr().map(|a| a.ip());
        let user = self
            .state
            .auth
            .login(&b.username, &b.password, client)
            .await?;
        let refresh = b.refresh.as_ref().is_some_and(|r| truthy(&r.0));
        let tokens = self.state.auth.issue_login_tokens(user.id, refresh)?;
        Ok(Json(LoginResponse {
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
        }))
    }

    /// Exchange a refresh token (sent as Bearer) for a new access token.
    #[oai(path = "/refresh", method = "post", operation_id = "security_refresh")]
    async fn refresh(&self, req: &Request) -> Result<Json<RefreshResponse>, ApiError> {
        let authorization = req
            .headers()
            .get(poem::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let access_token = self.state.auth.refresh(authorization).await?;
        Ok(Json(RefreshResponse { access_token }))
    }

    /// Get a guest token for an embedded dashboard (needs `can_grant_guest_token`).
    #[oai(
        path = "/guest_token",
        method = "post",
        operation_id = "security_guest_token"
    )]
    async fn guest_token(
        &self,
        auth: Auth,
        body: JsonBody<GuestTokenBody>,
    ) -> Result<Json<GuestTokenResponse>, ApiError> {
        let granter = super::resource::authorized(
            &self.state,
            &auth,
            "can_grant_guest_token",
            "SecurityRestApi",
        )
        .await?;
        let b = body.0;
        let mut resources = Vec::with_capacity(b.resources.len());
        for (i, r) in b.resources.into_iter().enumerate() {
            if r.kind != "dashboard" {
                return Err(ApiError::fields(
                    Fault::BadRequest,
                    json!({"resources": {i.to_string(): {"type": ["Must be one of: dashboard."]}}}),
                ));
            }
            let id = match r.id.0 {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                _ => {
                    return Err(ApiError::fields(
                        Fault::BadRequest,
                        json!({"resources": {i.to_string(): {"id": ["Not a valid string."]}}}),
                    ));
                }
            };
            resources.push(GuestResource { kind: r.kind, id });
        }
        let u = b.user.unwrap_or_default();
        let req = GuestTokenRequest {
            user: GuestUser {
                username: u.username,
                first_name: u.first_name,
                last_name: u.last_name,
            },
            resources,
            rls: b
                .rls
                .into_iter()
                .map(|r| GuestRls {
                    dataset: r.dataset,
                    clause: r.clause,
                })
                .collect(),
        };
        let token = embedded::grant_guest_token(&self.state, &granter, req).await?;
        Ok(Json(GuestTokenResponse { token }))
    }

    /// Get a CSRF token for writes; the response's `session` cookie must accompany it.
    #[oai(
        path = "/csrf_token",
        method = "get",
        operation_id = "security_csrf_token"
    )]
    async fn csrf_token(&self, auth: Auth) -> Result<CsrfResponse, ApiError> {
        self.state
            .auth
            .authorize(&auth.principal, "can_read", "SecurityRestApi")
            .await?;
        let session = session_with_csrf(auth.session);
        let secret = session.csrf.clone().unwrap_or_default();
        let token = self.state.auth.sessions().csrf_token(&secret);
        Ok(CsrfResponse::Ok(
            Json(CsrfTokenResponse { result: token }),
            session_cookie(&self.state, &session),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_flag_follows_python_truthiness() {
        assert!(truthy(&json!(true)));
        assert!(truthy(&json!("true")));
        assert!(truthy(&json!(1)));
        assert!(!truthy(&json!(false)));
        assert!(!truthy(&json!("")));
        assert!(!truthy(&json!(0)));
        assert!(!truthy(&Value::Null));
    }
}
