//! The browser session's cookie and CSRF secret, shared by the endpoints that hand a browser
//! its session (`/api/v1/security/csrf_token/`, the login form and logout in `web.rs`) and by
//! the app shell (`shell.rs`), which seeds a CSRF secret with the page.

use crate::auth::SessionData;
use crate::state::AppState;

/// The `Set-Cookie` value for a session.
pub fn session_cookie(state: &AppState, data: &SessionData) -> String {
    let secure = if state.config.auth.secure_cookies {
        "; Secure"
    } else {
        ""
    };
    format!(
        "session={}; HttpOnly; Path=/; SameSite=Lax; Max-Age={}{secure}",
        state.auth.sessions().encode_session(data),
        state.auth.sessions().session_ttl_secs()
    )
}

/// The session with a CSRF secret: the caller's, or a new one.
pub fn session_with_csrf(existing: Option<SessionData>) -> SessionData {
    let mut s = existing.unwrap_or_else(|| SessionData {
        uid: None,
        csrf: None,
        iat: chrono::Utc::now().timestamp(),
    });
    if s.csrf.is_none() {
        s.csrf = Some(crate::auth::SessionKeys::new_csrf_secret());
    }
    s
}
