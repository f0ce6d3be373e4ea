//! `liteset plugin install`: upload a component to a server through its REST API, as any
//! Superset client would: `POST /api/v1/security/login` for a bearer token, then
//! `GET /api/v1/security/csrf_token/` (the API checks CSRF on every POST, bearer or not; the
//! token is bound to the `session` cookie that call sets), then the multipart
//! `POST /api/v1/plugin/`.
//!
//! Neither the password nor the tokens are ever printed or put in an error message.

use serde_json::{Value as Json, json};

use super::{AuthoringError, InstallArgs, Result, read_input};

/// The server's message from a Superset error body (`message`, `msg` or SIP-40 `errors`).
fn server_message(body: &Json) -> String {
    body.get("message")
        .or_else(|| body.get("msg"))
        .or_else(|| body.pointer("/errors/0/message"))
        .map(|m| match m {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| body.to_string())
}

/// Sends `req`; returns the status and JSON body (non-JSON bodies as a string).
async fn send(req: reqwest::RequestBuilder, what: &str) -> Result<(reqwest::StatusCode, Json)> {
    let resp = req
        .send()
        .await
        .map_err(|e| AuthoringError::Server(format!("{what}: {e}")))?;
    let status = resp.status();
    let text = resp
        .text()
        .await
        .map_err(|e| AuthoringError::Server(format!("{what}: reading the answer: {e}")))?;
    Ok((
        status,
        serde_json::from_str(&text).unwrap_or(Json::String(text)),
    ))
}

/// `liteset plugin install`.
pub async fn install(args: &InstallArgs) -> Result<()> {
    let base = args.server.trim_end_matches('/').to_owned();
    let url = |path: &str| format!("{base}{path}");
    let parsed = url::Url::parse(&base)
        .map_err(|e| AuthoringError::Usage(format!("--server {base}: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(AuthoringError::Usage(format!(
            "--server {base}: use an http:// or https:// URL"
        )));
    }
    let username = args
        .username
        .as_deref()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| AuthoringError::Usage("give --username or set LITESET_USERNAME".into()))?;
    let password = args
        .password
        .as_deref()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| AuthoringError::Usage("give --password or set LITESET_PASSWORD".into()))?;
    let wasm = read_input(&args.wasm, "the component")?;
    let file_name = args.wasm.file_name().map_or_else(
        || "plugin.wasm".into(),
        |n| n.to_string_lossy().into_owned(),
    );

    let client = reqwest::Client::builder()
        .cookie_store(true)
        .user_agent(concat!(
            "liteset-plugin-install/",
            env!("CARGO_PKG_VERSION")
        ))
        .build()
        .map_err(|e| AuthoringError::Server(format!("HTTP client: {e}")))?;

    let (status, body) = send(
        client.post(url("/api/v1/security/login")).json(&json!({
            "username": username,
            "password": password,
            "provider": "db",
            "refresh": false,
        })),
        "login",
    )
    .await?;
    if !status.is_success() {
        return Err(AuthoringError::Server(format!(
            "login as {username} failed ({status}): {}",
            server_message(&body)
        )));
    }
    let token = body["access_token"]
        .as_str()
        .ok_or_else(|| AuthoringError::Server("login answered no access_token".into()))?
        .to_owned();

    let (status, body) = send(
        client
            .get(url("/api/v1/security/csrf_token/"))
            .bearer_auth(&token),
        "CSRF token",
    )
    .await?;
    if !status.is_success() {
        return Err(AuthoringError::Server(format!(
            "fetching a CSRF token failed ({status}): {}",
            server_message(&body)
        )));
    }
    let csrf = body["result"]
        .as_str()
        .ok_or_else(|| AuthoringError::Server("the CSRF answer has no token".into()))?
        .to_owned();

    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(wasm)
            .file_name(file_name)
            .mime_str("application/wasm")
            .map_err(|e| AuthoringError::Server(e.to_string()))?,
    );
    let (status, body) = send(
        client
            .post(url("/api/v1/plugin/"))
            .bearer_auth(&token)
            .header("X-CSRFToken", &csrf)
            .multipart(form),
        "upload",
    )
    .await?;
    if !status.is_success() {
        return Err(AuthoringError::Server(format!(
            "the server refused the plugin ({status}): {}",
            server_message(&body)
        )));
    }
    let p = &body["result"];
    let outcome = if status == reqwest::StatusCode::CREATED {
        "installed"
    } else {
        "replaced"
    };
    println!(
        "{outcome}: {} {} on {base}",
        p["name"].as_str().unwrap_or("?"),
        p["version"].as_str().unwrap_or("?")
    );
    let text = serde_json::to_string_pretty(p)
        .map_err(|e| AuthoringError::Io(format!("printing the answer: {e}")))?;
    println!("{text}");
    Ok(())
}
