//! The REST client of one virtual user: its own reqwest `Client` (cookie jar, connection pool),
//! login, CSRF token, and timed requests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use reqwest::RequestBuilder;
use serde_json::Value;

/// What one request gave: when it started, how long it took until the whole body was read,
/// the status, and an error text for anything but a 2xx.
#[derive(Debug)]
pub struct Outcome {
    pub start: Instant,
    pub latency: Duration,
    /// 0 for a transport error or timeout.
    pub status: u16,
    pub error: Option<String>,
    pub body: bytes::Bytes,
}

impl Outcome {
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// The body as JSON, or an error naming what was expected.
    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_slice(&self.body).context("response body is not JSON")
    }
}

/// A client for one virtual user: cookies kept, connections reused, every request bounded by
/// `timeout`.
pub fn http_client(timeout: Duration) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .cookie_store(true)
        .timeout(timeout)
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
        .context("building the HTTP client")
}

/// Sends a request and reads its whole body (so the connection goes back to the pool and the
/// latency is the one a browser waits for).
pub async fn send(req: RequestBuilder) -> Outcome {
    let start = Instant::now();
    let result = async {
        let resp = req.send().await?;
        let status = resp.status();
        let body = resp.bytes().await?;
        Ok::<_, reqwest::Error>((status, body))
    }
    .await;
    let latency = start.elapsed();
    match result {
        Ok((status, body)) => {
            let error = (!status.is_success()).then(|| {
                let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
                let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                format!("HTTP {}: {text}", status.as_u16())
            });
            Outcome {
                start,
                latency,
                status: status.as_u16(),
                error,
                body,
            }
        }
        Err(e) => Outcome {
            start,
            latency,
            status: 0,
            error: Some(if e.is_timeout() {
                "timeout".to_owned()
            } else {
                // The source chain holds the useful part (connection refused, reset, …).
                let mut text = format!("transport: {e}");
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    text.push_str(&format!(": {s}"));
                    source = s.source();
                }
                text
            }),
            body: bytes::Bytes::new(),
        },
    }
}

/// Who the virtual users log in as.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

/// `POST /api/v1/security/login`; the access token when it succeeded.
pub async fn login(
    http: &reqwest::Client,
    base: &str,
    creds: &Credentials,
) -> (Outcome, Option<String>) {
    let body = serde_json::json!({
        "username": creds.username,
        "password": creds.password,
        "provider": "db",
        "refresh": true,
    });
    let out = send(
        http.post(format!("{base}/api/v1/security/login"))
            .json(&body),
    )
    .await;
    let token = token_field(&out, "access_token");
    (out, token)
}

/// `GET /api/v1/security/csrf_token/` with the Bearer token; the token when it succeeded (the
/// `session` cookie it sets lands in the client's jar).
pub async fn csrf_token(
    http: &reqwest::Client,
    base: &str,
    access_token: &str,
) -> (Outcome, Option<String>) {
    let out = send(
        http.get(format!("{base}/api/v1/security/csrf_token/"))
            .bearer_auth(access_token),
    )
    .await;
    let token = token_field(&out, "result");
    (out, token)
}

fn token_field(out: &Outcome, field: &str) -> Option<String> {
    if !out.ok() {
        return None;
    }
    out.json().ok()?.get(field)?.as_str().map(str::to_owned)
}

/// A logged-in virtual user.
#[derive(Debug, Clone)]
pub struct User {
    pub http: reqwest::Client,
    pub base: Arc<str>,
    pub access_token: String,
    pub csrf: String,
}

impl User {
    /// Logs in and fetches a CSRF token on a fresh client (untimed: setup and probe users).
    pub async fn sign_in(
        base: Arc<str>,
        creds: &Credentials,
        timeout: Duration,
    ) -> anyhow::Result<User> {
        let http = http_client(timeout)?;
        let (out, token) = login(&http, &base, creds).await;
        let Some(access_token) = token else {
            bail!(
                "login as {:?} at {base} failed: {}",
                creds.username,
                out.error
                    .as_deref()
                    .unwrap_or("no access_token in the answer")
            );
        };
        let (out, csrf) = csrf_token(&http, &base, &access_token).await;
        let Some(csrf) = csrf else {
            bail!(
                "csrf_token at {base} failed: {}",
                out.error.as_deref().unwrap_or("no result in the answer")
            );
        };
        Ok(User {
            http,
            base,
            access_token,
            csrf,
        })
    }

    /// `GET <base><path_and_query>` with the Bearer token.
    pub fn get(&self, path_and_query: &str) -> RequestBuilder {
        self.http
            .get(format!("{}{path_and_query}", self.base))
            .bearer_auth(&self.access_token)
    }

    /// A JSON `POST` as Superset's frontend sends it: Bearer, `X-CSRFToken`, `Referer`.
    pub fn post_json(&self, path: &str, body: &Value) -> RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.access_token)
            .header("X-CSRFToken", &self.csrf)
            .header(reqwest::header::REFERER, format!("{}/", self.base))
            .json(body)
    }

    /// Every row of a FAB list endpoint (`path` without query), paging through `query(page)`.
    pub async fn list_all(
        &self,
        path: &str,
        query: impl Fn(u32) -> String,
    ) -> anyhow::Result<Vec<Value>> {
        let mut rows = Vec::new();
        for page in 0.. {
            let q = crate::rison::encode(&query(page));
            let out = send(self.get(&format!("{path}?q={q}"))).await;
            if let Some(e) = &out.error {
                bail!("GET {path} (page {page}) failed: {e}");
            }
            let body = out.json()?;
            let batch = body["result"]
                .as_array()
                .with_context(|| format!("GET {path}: no result array in {body}"))?;
            let count = body["count"].as_u64().unwrap_or(0) as usize;
            rows.extend(batch.iter().cloned());
            if batch.is_empty() || rows.len() >= count {
                break;
            }
        }
        Ok(rows)
    }
}
