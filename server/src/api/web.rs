//! Browser-facing pages: the login form that sets the `session` cookie (FAB's `/login/`),
//! logout, the landing page and the health probes.

use std::sync::Arc;

use poem::Request;
use poem_openapi::param::Query;
use poem_openapi::payload::{Form, Html, PlainText};
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde::Deserialize;

use super::Tags;
use super::dashboard_page::url_escape;
use super::error::ApiError;
use super::extract::{self, Auth};
use super::redirect::safe_next;
use super::session::{session_cookie, session_with_csrf};
use super::shell::{self, escape_html as escape};
use crate::auth::{self, Principal, SessionData};
use crate::state::AppState;

/// The login form's fields.
#[derive(Debug, Deserialize, Object)]
pub struct LoginForm {
    /// Username or email.
    username: String,
    /// Password.
    password: String,
    /// The hidden CSRF field of the form.
    csrf_token: Option<String>,
}

#[derive(ApiResponse)]
enum IndexResponse {
    /// The landing page.
    #[oai(status = 200)]
    Page(Html<String>),
    /// To Superset's welcome page, or its login page first.
    #[oai(status = 302)]
    Redirect(#[oai(header = "Location")] String),
}

#[derive(ApiResponse)]
enum PageResponse {
    /// The page; the cookie carries the form's CSRF secret.
    #[oai(status = 200)]
    Page(Html<String>, #[oai(header = "Set-Cookie")] String),
    /// Logged in (or out): go on, with the new session cookie.
    #[oai(status = 302)]
    Redirect(
        #[oai(header = "Location")] String,
        #[oai(header = "Set-Cookie")] Option<String>,
    ),
}

fn login_page(csrf_token: &str, error: Option<&str>, next: &str) -> String {
    let error = error
        .map(|e| format!(r#"<p class="error" role="alert">{}</p>"#, escape(e)))
        .unwrap_or_default();
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Login - Liteset</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{{font-family:system-ui,sans-serif;background:#f5f7fa;display:flex;align-items:center;justify-content:center;min-height:100vh;margin:0}}
form{{background:#fff;padding:2rem 2.5rem;border-radius:8px;box-shadow:0 2px 12px rgba(0,0,0,.08);min-width:18rem}}
h1{{font-size:1.25rem;margin:0 0 1.25rem}} label{{display:block;font-size:.85rem;color:#444;margin:.75rem 0 .25rem}}
input[type=text],input[type=password]{{width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #ccd;border-radius:4px}}
button{{margin-top:1.25rem;width:100%;padding:.6rem;border:0;border-radius:4px;background:#20a7c9;color:#fff;font-weight:600;cursor:pointer}}
.error{{color:#b00020;font-size:.9rem}}
</style></head>
<body><form method="post" action="/login/?next={next}">
<h1>Sign in to Liteset</h1>{error}
<input id="csrf_token" name="csrf_token" type="hidden" value="{csrf}">
<label for="username">Username</label><input id="username" name="username" type="text" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form></body></html>"#,
        // A query value: `&` or `#` in the path must not end it early.
        next = escape(&url_escape(next)),
        csrf = escape(csrf_token),
    )
}

/// Browser pages and probes.
pub struct WebApi {
    pub(super) state: Arc<AppState>,
}

impl WebApi {
    /// The login page: Superset's own (the app's `/login/` route, with a failed attempt as a
    /// flashed message) when the frontend is installed, else a plain form with the same
    /// fields. Either way the cookie carries the CSRF secret of the page's `csrf_token`.
    async fn form(
        &self,
        session: Option<SessionData>,
        error: Option<&str>,
        next: &str,
    ) -> Result<PageResponse, ApiError> {
        let session = session_with_csrf(session);
        let token = self
            .state
            .auth
            .sessions()
            .csrf_token(session.csrf.as_deref().unwrap_or_default());
        let html = match self.state.frontend.get() {
            Some(fe) => {
                let mut payload = shell::bootstrap(&self.state, &Principal::Anonymous).await?;
                if let Some(e) = error {
                    payload["common"]["flash_messages"] = serde_json::json!([["danger", e]]);
                }
                shell::shell(&fe, "Liteset", &payload, &token, "spa")
            }
            None => login_page(&token, error, next),
        };
        Ok(PageResponse::Page(
            Html(html),
            session_cookie(&self.state, &session),
        ))
    }
}

#[OpenApi(tag = "Tags::Web")]
impl WebApi {
    /// The login form; sets the `session` cookie holding the form's CSRF secret.
    #[oai(path = "/login", method = "get", operation_id = "web_login_form")]
    async fn login_form(
        &self,
        req: &Request,
        auth: Auth,
        next: Query<Option<String>>,
    ) -> Result<PageResponse, ApiError> {
        let next = safe_next(next.0.as_deref());
        // Already signed in: straight on, as FAB does.
        if auth.principal.user().is_some() {
            return Ok(PageResponse::Redirect(next, None));
        }
        self.form(extract::session(req, &self.state), None, &next)
            .await
    }

    /// Logs in from the form and sets the `session` cookie that every /api/v1 route accepts.
    #[oai(path = "/login", method = "post", operation_id = "web_login")]
    async fn login(
        &self,
        req: &Request,
        next: Query<Option<String>>,
        form: Form<LoginForm>,
    ) -> Result<PageResponse, ApiError> {
        let next = safe_next(next.0.as_deref());
        let session = extract::session(req, &self.state);
        self.state
            .auth
            .sessions()
            .check_csrf(form.csrf_token.as_deref(), session.as_ref())
            .map_err(auth::Error::Csrf)?;
        let client = req.remote_addr().as_socket_addr().map(|a| a.ip());
        match self
            .state
            .auth
            .login(&form.username, &form.password, client)
            .await
        {
            Ok(user) => {
                // A new session on login that keeps the CSRF secret the form was checked
                // against, as Flask-WTF does: clients that scrape the token from the login
                // page (preset-cli's form login) send that same token with every write after
                // it. The secret is the server's own random value, and the session cookie
                // carrying it is host-only, HttpOnly and SameSite, so no other site can have
                // planted it.
                let fresh = SessionData {
                    uid: Some(user.id),
                    csrf: session
                        .and_then(|s| s.csrf)
                        .or_else(|| Some(auth::SessionKeys::new_csrf_secret())),
                    iat: chrono::Utc::now().timestamp(),
                };
                Ok(PageResponse::Redirect(
                    next,
                    Some(session_cookie(&self.state, &fresh)),
                ))
            }
            Err(auth::Error::BadCredentials) => {
                self.form(session, Some("Invalid login. Please try again."), &next)
                    .await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Ends the browser session.
    #[oai(path = "/logout", method = "get", operation_id = "web_logout")]
    async fn logout(&self) -> PageResponse {
        PageResponse::Redirect(
            "/login/".into(),
            Some("session=; HttpOnly; Path=/; SameSite=Lax; Max-Age=0".into()),
        )
    }

    /// Landing page: Superset's welcome page when the frontend is installed (after login),
    /// else a page that says how to install it.
    #[oai(path = "/", method = "get", operation_id = "web_index")]
    async fn index(&self, auth: Auth) -> IndexResponse {
        let signed_in = auth.principal.user();
        if self.state.frontend.get().is_some() {
            let to = if signed_in.is_some() {
                "/superset/welcome/"
            } else {
                "/login/"
            };
            return IndexResponse::Redirect(to.into());
        }
        let who = signed_in
            .map(|u| {
                format!(
                    "Signed in as {}. <a href=\"/logout/\">Sign out</a>",
                    escape(&u.user.username)
                )
            })
            .unwrap_or_else(|| "<a href=\"/login/\">Sign in</a>".into());
        IndexResponse::Page(Html(shell::not_installed_page(&self.state, &who)))
    }

    /// Liveness probe.
    #[oai(path = "/health", method = "get", operation_id = "health")]
    async fn health(&self) -> PlainText<&'static str> {
        PlainText("OK")
    }

    /// Liveness probe (Superset's name).
    #[oai(path = "/healthcheck", method = "get", operation_id = "healthcheck")]
    async fn healthcheck(&self) -> PlainText<&'static str> {
        PlainText("OK")
    }

    /// Liveness probe (Superset's other name).
    #[oai(path = "/ping", method = "get", operation_id = "ping")]
    async fn ping(&self) -> PlainText<&'static str> {
        PlainText("OK")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_page_has_superset_csrf_input() {
        let page = login_page("tok.en", None, "/");
        assert!(
            page.contains(
                r#"<input id="csrf_token" name="csrf_token" type="hidden" value="tok.en">"#
            )
        );
    }
}
