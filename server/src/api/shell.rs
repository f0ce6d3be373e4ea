//! Superset's own web app: the HTML shell of its pages (with the bootstrap payload the app
//! reads at start) and its static files, from the install `liteset frontend install` made.
//!
//! The app is a single-page app: every page is the same shell with the `spa` entry bundles,
//! and the app's router draws the page for the URL. What differs between users is the
//! bootstrap payload (`data-bootstrap` on `#app`): the user with roles and permissions, and
//! the common part (config keys the app reads, feature flags, locale, theme, menu). These
//! pages are not REST API operations, so they are plain poem routes outside the OpenAPI
//! document.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use poem::http::{StatusCode, header};
use poem::web::StaticFileRequest;
use poem::{IntoResponse, Request, Response, handler};
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract;
use crate::auth::{CurrentUser, Principal};
use crate::frontend::Installed;
use crate::state::AppState;

/// The SPA's pages, as Superset routes them (trailing slashes are stripped before routing).
/// Each renders the same shell; the app draws the page for the URL.
pub const PAGES: &[&str] = &[
    "/superset/welcome",
    "/dashboard/list",
    "/superset/dashboard/:key",
    "/superset/dashboard/p/:key",
    "/explore",
    "/explore/p/:key",
    "/sqllab",
    "/sqllab/history",
    "/chart/list",
    "/chart/add",
    "/tablemodelview/list",
    "/dataset/add",
    "/dataset/:key",
    "/databaseview/list",
    "/savedqueryview/list",
    "/users/list",
    "/roles/list",
    "/user_info",
];

/// Escapes text for an HTML attribute value or element content.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

/// The shell page: Superset's `spa.html` layout with the `theme` bundle in the head, the
/// bootstrap payload on `#app`, the CSRF token where the app looks for it, and the `entry`
/// bundle (`spa`, or `embedded` for an embedded dashboard) at the end of the body.
pub fn shell(
    fe: &Installed,
    title: &str,
    bootstrap: &Value,
    csrf_token: &str,
    entry: &str,
) -> String {
    let scripts = |entry: &str| {
        fe.bundle(entry)
            .js
            .iter()
            .map(|src| format!("<script src=\"{}\" async></script>\n", escape_html(src)))
            .collect::<String>()
    };
    let styles = fe
        .bundle(entry)
        .css
        .iter()
        .map(|href| {
            format!(
                "<link rel=\"stylesheet\" type=\"text/css\" href=\"{}\">\n",
                escape_html(href)
            )
        })
        .collect::<String>();
    format!(
        r#"<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="icon" type="image/png" href="/static/assets/images/favicon.png">
<style>body{{background:#fff;color:#000}}@media (prefers-color-scheme: dark){{body{{background:#000;color:#fff}}}}</style>
{styles}{theme}<input type="hidden" name="csrf_token" id="csrf_token" value="{csrf}">
</head>
<body>
<div id="app" data-bootstrap="{bootstrap}">
<img src="/static/assets/images/loading.gif" alt="" aria-label="Loading" style="width:50px;position:absolute;top:50%;left:50%;transform:translate(-50%,-50%)">
</div>
{spa}</body>
</html>
"#,
        title = escape_html(title),
        theme = scripts("theme"),
        spa = scripts(entry),
        csrf = escape_html(csrf_token),
        bootstrap = escape_html(&bootstrap.to_string()),
    )
}

/// The page shown in place of the app while it is not installed.
pub fn not_installed_page(state: &AppState, who: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Liteset</title></head>\
         <body style=\"font-family:system-ui,sans-serif;max-width:42rem;margin:3rem auto\">\
         <h1>Liteset</h1><p>A Superset-compatible BI server. {who}</p>\
         <p>Superset's web UI is not installed. Install it with</p>\
         <pre>liteset frontend install</pre>\
         <p>(it downloads the apache-superset release from your Python package index, as pip \
         would, into <code>{dir}</code>); this page then becomes Superset's UI, no restart \
         needed.</p>\
         <p>REST API: <a href=\"/swagger/v1\">Swagger UI</a>, \
         <a href=\"/api/v1/_openapi\">OpenAPI document</a>.</p></body></html>",
        dir = escape_html(&state.frontend.dir().display().to_string()),
    )
}

/// `user` of the payload: Superset's `bootstrap_user_data(user, include_perms=True)`.
pub async fn user_payload(state: &AppState, principal: &Principal) -> Result<Value, ApiError> {
    match principal.user() {
        Some(cu) => {
            let (roles, permissions) = roles_and_permissions(state, cu).await?;
            let u = &cu.user;
            Ok(json!({
                "username": u.username,
                "firstName": u.first_name,
                "lastName": u.last_name,
                "userId": u.id,
                "isActive": u.active,
                "isAnonymous": false,
                "createdOn": u.created_on.format("%Y-%m-%dT%H:%M:%S%.6f").to_string(),
                "email": u.email,
                "loginCount": u.login_count,
                "roles": roles,
                "permissions": permissions,
            }))
        }
        // Anonymous visitors carry the Public role's grants, as in Superset.
        None => {
            let public = crate::auth::catalog::PUBLIC;
            let pvms = state.store.role_permissions(public).await?;
            let pairs: Vec<[String; 2]> = pvms.into_iter().map(|(p, v)| [p, v]).collect();
            Ok(json!({
                "roles": {public: pairs},
                "permissions": {},
            }))
        }
    }
}

/// Role name → `[permission, view_menu]` pairs, and the data-access grants
/// (`datasource_access`, `database_access` → view menus), as `/api/v1/me/roles/` and the
/// bootstrap payload give them.
pub async fn roles_and_permissions(
    state: &AppState,
    cu: &CurrentUser,
) -> Result<(BTreeMap<String, Vec<[String; 2]>>, Value), ApiError> {
    let mut roles = BTreeMap::new();
    if cu.guest.is_some() {
        // A guest holds exactly its computed grants, under its role's name.
        let mut pvms: Vec<[String; 2]> = cu
            .permissions
            .iter()
            .map(|(p, v)| [p.clone(), v.clone()])
            .collect();
        pvms.sort();
        let name = cu.roles.first().map_or_else(
            || state.config.embedded.guest_role_name.clone(),
            |r| r.name.clone(),
        );
        roles.insert(name, pvms);
        let permissions = json!({"datasource_access": [], "database_access": []});
        return Ok((roles, permissions));
    }
    for role in &cu.roles {
        let pvms = state.store.role_permissions(&role.name).await?;
        roles.insert(
            role.name.clone(),
            pvms.into_iter().map(|(p, v)| [p, v]).collect(),
        );
    }
    let access = |perm: &str| {
        let mut views: Vec<&str> = cu
            .permissions
            .iter()
            .filter(|(p, _)| p == perm)
            .map(|(_, v)| v.as_str())
            .collect();
        views.sort_unstable();
        views
    };
    let permissions = json!({
        "datasource_access": access("datasource_access"),
        "database_access": access("database_access"),
    });
    Ok((roles, permissions))
}

/// One navbar entry: shown when the user has `menu_access` on its name (FAB's rule).
struct MenuItem {
    name: &'static str,
    label: &'static str,
    icon: &'static str,
    url: &'static str,
}

const fn item(
    name: &'static str,
    label: &'static str,
    icon: &'static str,
    url: &'static str,
) -> MenuItem {
    MenuItem {
        name,
        label,
        icon,
        url,
    }
}

/// Superset's default menu: top-level links, then categories with their children.
const MENU: &[(MenuItem, &[MenuItem])] = &[
    (
        item(
            "Dashboards",
            "Dashboards",
            "fa-dashboard",
            "/dashboard/list/",
        ),
        &[],
    ),
    (
        item("Charts", "Charts", "fa-bar-chart", "/chart/list/"),
        &[],
    ),
    (
        item("Datasets", "Datasets", "fa-table", "/tablemodelview/list/"),
        &[],
    ),
    (
        item("SQL Lab", "SQL", "fa-flask", ""),
        &[
            item("SQL Editor", "SQL Lab", "fa-flask", "/sqllab/"),
            item(
                "Saved Queries",
                "Saved Queries",
                "fa-save",
                "/savedqueryview/list/",
            ),
            item(
                "Query Search",
                "Query History",
                "fa-search",
                "/sqllab/history/",
            ),
        ],
    ),
    (
        item("Data", "Data", "fa-database", ""),
        &[item(
            "Databases",
            "Database Connections",
            "fa-database",
            "/databaseview/list/",
        )],
    ),
    (
        item("Security", "Security", "fa-cogs", ""),
        &[
            item("List Users", "List Users", "fa-user", "/users/list/"),
            item("List Roles", "List Roles", "fa-group", "/roles/list/"),
        ],
    ),
];

fn menu(cu: Option<&CurrentUser>) -> Value {
    let allowed = |name: &str| {
        cu.is_some_and(|cu| {
            cu.permissions
                .contains(&("menu_access".to_owned(), name.to_owned()))
        })
    };
    let entry =
        |i: &MenuItem| json!({"name": i.name, "label": i.label, "icon": i.icon, "url": i.url});
    let mut out = Vec::new();
    for (top, children) in MENU {
        if !allowed(top.name) {
            continue;
        }
        if children.is_empty() {
            out.push(entry(top));
            continue;
        }
        let childs: Vec<Value> = children
            .iter()
            .filter(|c| allowed(c.name))
            .map(entry)
            .collect();
        if !childs.is_empty() {
            out.push(
                json!({"name": top.name, "label": top.label, "icon": top.icon,
                            "childs": childs}),
            );
        }
    }
    Value::Array(out)
}

/// Superset 6.0's feature flags with their defaults, except `SQLLAB_BACKEND_PERSISTENCE`:
/// SQL Lab keeps its tabs in the browser (Superset's behaviour with the flag off), since
/// Liteset has no tab-state API.
const FEATURE_FLAGS: &str = include_str!("shell/feature_flags.json");

/// Superset 6.0's defaults for the configuration keys the app reads (`FRONTEND_CONF_KEYS`,
/// plus what `cached_common_bootstrap_data` adds: `AUTH_TYPE` 1 is flask_appbuilder's
/// AUTH_DB, a username and password checked by the server).
const CONF: &str = include_str!("shell/conf.json");

/// `common` of the payload: Superset's `common_bootstrap_payload()` with its default
/// configuration (the `FRONTEND_CONF_KEYS` subset, feature flags, theme, menu).
pub fn common_payload(state: &AppState, cu: Option<&CurrentUser>) -> Value {
    let mut feature_flags: Value = serde_json::from_str(FEATURE_FLAGS).unwrap_or_else(|e| {
        tracing::error!(message = "Built-in feature flags are not JSON.", error = %e);
        json!({})
    });
    // The flags Liteset has its own settings for (SQL Lab shows its "Parameters" editor with
    // this one).
    feature_flags["ENABLE_TEMPLATE_PROCESSING"] = json!(state.config.query.template_processing);
    let mut conf: Value = serde_json::from_str(CONF).unwrap_or_else(|e| {
        tracing::error!(message = "Built-in frontend configuration is not JSON.", error = %e);
        json!({})
    });
    // The keys Liteset has its own settings for.
    conf["SQL_MAX_ROW"] = json!(state.config.query.sql_max_row);
    conf["DISPLAY_MAX_ROW"] = json!(state.config.query.display_max_row);
    conf["SAMPLES_ROW_LIMIT"] = json!(state.config.query.samples_row_limit);
    let anonymous = cu.is_none();
    json!({
        "application_root": "/",
        "static_assets_prefix": "",
        "conf": conf,
        "locale": "en",
        "d3_format": {},
        "d3_time_format": {},
        "currencies": ["USD", "EUR", "GBP", "INR", "MXN", "JPY", "CNY"],
        "deckgl_tiles": null,
        "feature_flags": feature_flags,
        "extra_sequential_color_schemes": [],
        "extra_categorical_color_schemes": [],
        "menu_data": {
            "menu": menu(cu),
            "brand": {
                "path": "/superset/welcome/",
                "icon": "/static/assets/images/superset-logo-horiz.png",
                "alt": "Liteset",
                "tooltip": "",
                "text": "",
            },
            "environment_tag": {},
            "navbar_right": {
                "show_watermark": false,
                "bug_report_url": null,
                "bug_report_icon": null,
                "bug_report_text": null,
                "documentation_url": null,
                "documentation_icon": null,
                "documentation_text": null,
                "version_string": env!("CARGO_PKG_VERSION"),
                "version_sha": "",
                "build_number": null,
                // The navbar reads the current locale's entry (its flag) even with the
                // picker hidden.
                "languages": {"en": {"flag": "us", "name": "English", "url": "/lang/en"}},
                "show_language_picker": false,
                "user_is_anonymous": anonymous,
                "user_info_url": "/user_info/",
                "user_logout_url": "/logout/",
                "user_login_url": "/login/",
                "locale": "en",
            },
        },
        "theme": {
            "default": {"algorithm": "default"},
            "dark": {"algorithm": "dark"},
            "enableUiThemeAdministration": false,
        },
        "flash_messages": [],
    })
}

/// The whole bootstrap payload for a caller.
pub async fn bootstrap(state: &AppState, principal: &Principal) -> Result<Value, ApiError> {
    Ok(json!({
        "user": user_payload(state, principal).await?,
        "common": common_payload(state, principal.user().map(|u| u.as_ref())),
    }))
}

/// A CSRF token for the page's hidden field, and the session cookie that carries its
/// secret when the request had none yet.
fn csrf_for(state: &AppState, req: &Request) -> (String, Option<String>) {
    let current = extract::session(req, state);
    let had_secret = current.as_ref().is_some_and(|s| s.csrf.is_some());
    let session = super::session::session_with_csrf(current);
    let token = state
        .auth
        .sessions()
        .csrf_token(session.csrf.as_deref().unwrap_or_default());
    let cookie = (!had_secret).then(|| super::session::session_cookie(state, &session));
    (token, cookie)
}

/// Renders the shell for `req` (or the not-installed page), with a fresh CSRF token.
pub async fn page(state: &AppState, req: &Request, principal: &Principal) -> Response {
    let (token, cookie) = csrf_for(state, req);
    let body = match state.frontend.get() {
        Some(fe) => match bootstrap(state, principal).await {
            Ok(payload) => shell(&fe, "Liteset", &payload, &token, "spa"),
            Err(e) => return e.into_response(),
        },
        None => not_installed_page(state, ""),
    };
    let mut resp = Response::builder()
        .content_type("text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .body(body);
    if let Some(c) = cookie {
        resp.headers_mut().append(
            header::SET_COOKIE,
            c.parse().expect("session cookie is a valid header value"),
        );
    }
    resp
}

/// Every SPA page: anonymous visitors go to the login page first, as in Superset, and come
/// back afterwards.
#[handler]
pub async fn spa_page(req: &Request) -> Response {
    let state = match extract::state(req) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let session = extract::session(req, &state);
    let auth = extract::authenticate(req, &state, session.as_ref()).await;
    if auth.user().is_none() {
        let target = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let next = percent_encoding::utf8_percent_encode(
            &super::redirect::safe_next(Some(target)),
            percent_encoding::NON_ALPHANUMERIC,
        )
        .to_string();
        return Response::builder()
            .status(StatusCode::FOUND)
            .header(header::LOCATION, format!("/login/?next={next}"))
            .finish();
    }
    page(&state, req, &auth).await
}

/// `GET /embedded/<uuid>`: a dashboard inside another site's page (Superset's `EmbeddedView`):
/// the `embedded` bundle with the bootstrap Superset builds for it (no user: the visitor
/// signs in with the guest token the embedding SDK hands over), framable by the dashboard's
/// allowed domains only (`Content-Security-Policy: frame-ancestors`, besides Superset's
/// `Referer` check), or by any site when it names none.
#[handler]
pub async fn embedded_page(
    req: &Request,
    poem::web::Path(uuid): poem::web::Path<String>,
) -> Response {
    let state = match extract::state(req) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let referrer = req
        .headers()
        .get(header::REFERER)
        .and_then(|v| v.to_str().ok());
    let page = match crate::services::embedded::embedded_page(&state, &uuid, referrer).await {
        Ok(p) => p,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let policy = format!("frame-ancestors {}", frame_ancestors(&page.allowed_domains));
    let Some(fe) = state.frontend.get() else {
        return Response::builder()
            .content_type("text/html; charset=utf-8")
            .header(header::CONTENT_SECURITY_POLICY, policy)
            .body(not_installed_page(&state, ""));
    };
    let mut common = common_payload(&state, None);
    common["feature_flags"]["EMBEDDED_SUPERSET"] = json!(true);
    let payload = json!({
        "config": {"GUEST_TOKEN_HEADER_NAME": state.config.embedded.guest_token_header_name},
        "common": common,
        "embedded": {"dashboard_id": page.dashboard_id},
    });
    let (token, _) = csrf_for(&state, req);
    Response::builder()
        .content_type("text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::CONTENT_SECURITY_POLICY, policy)
        .body(shell(&fe, "Liteset", &payload, &token, "embedded"))
}

/// The `frame-ancestors` sources for allowed domains: each one's origin (anything that is not
/// a URL with a host is dropped, so no entry can inject into the policy); `*` for none given,
/// `'none'` when none of those given is usable.
fn frame_ancestors(domains: &[String]) -> String {
    if domains.is_empty() {
        return "*".into();
    }
    let origins: Vec<String> = domains
        .iter()
        .filter_map(|d| url::Url::parse(d).ok())
        .map(|u| u.origin())
        .filter(url::Origin::is_tuple)
        .map(|o| o.ascii_serialization())
        .collect();
    if origins.is_empty() {
        "'none'".into()
    } else {
        origins.join(" ")
    }
}

/// Webpack names long-term-cacheable files by content hash (`vendors.060463e7f705ce0eda57.entry.js`,
/// `00c5e5ac1f196d6fa58e.woff2`): such a file never changes under its name.
fn is_hashed(name: &str) -> bool {
    name.split('.')
        .any(|part| part.len() >= 16 && part.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `GET /static/<path>`: the installed app's files, with ETag/Last-Modified revalidation;
/// hashed files are cacheable for a year.
#[handler]
pub async fn static_file(req: &Request, file: StaticFileRequest) -> Response {
    let not_found = || StatusCode::NOT_FOUND.into_response();
    let Some(fe) = extract::state(req).ok().and_then(|s| s.frontend.get()) else {
        return not_found();
    };
    let rel = req
        .uri()
        .path()
        .strip_prefix("/static/")
        .unwrap_or_default();
    let Ok(rel) = percent_encoding::percent_decode_str(rel).decode_utf8() else {
        return not_found();
    };
    let rel = Path::new(rel.as_ref());
    // Only plain names inside the static folder; no `..`, no absolute paths.
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return not_found();
    }
    let path = fe.static_dir.join(rel);
    if !path.is_file() {
        return not_found();
    }
    let hashed = rel
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(is_hashed);
    match file.create_response(&path, true, false) {
        Ok(r) => {
            let mut resp = r.into_response();
            let cache = if hashed {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            };
            resp.headers_mut().insert(
                header::CACHE_CONTROL,
                header::HeaderValue::from_static(cache),
            );
            resp
        }
        Err(e) => poem::error::ResponseError::as_response(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_names_are_recognised() {
        assert!(is_hashed("vendors.060463e7f705ce0eda57.entry.js"));
        assert!(is_hashed("00c5e5ac1f196d6fa58e.woff2"));
        assert!(!is_hashed("manifest.json"));
        assert!(!is_hashed("loading.gif"));
        assert!(!is_hashed("superset-logo-horiz.png"));
    }

    #[test]
    fn feature_flags_are_json_with_backend_persistence_off() {
        let flags: Value = serde_json::from_str(FEATURE_FLAGS).unwrap();
        assert_eq!(flags["SQLLAB_BACKEND_PERSISTENCE"], json!(false));
        assert_eq!(flags["DASHBOARD_VIRTUALIZATION"], json!(true));
        assert_eq!(flags["DRILL_TO_DETAIL"], json!(true));
    }

    #[test]
    fn bootstrap_cannot_break_out_of_its_attribute() {
        let v = json!({"x": "\"><script>alert(1)</script>&'"});
        let e = escape_html(&v.to_string());
        assert!(!e.contains('"') && !e.contains('<') && !e.contains('\''));
        assert!(e.contains("&quot;&gt;&lt;script&gt;"));
    }

    #[test]
    fn menu_follows_menu_access() {
        assert_eq!(menu(None), json!([]));
    }
}
