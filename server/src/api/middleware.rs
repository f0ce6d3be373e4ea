//! Cross-cutting request handling, applied once around every route: the request span and
//! log line, Superset's envelope for every error poem produces, trailing-slash tolerance,
//! the body-size limit and CSRF protection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use poem::PathPattern;
use poem::http::{Method, Uri, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use tokio::io::AsyncReadExt;
use tracing::Instrument;

use super::document::Document;
use super::error::{ApiError, Fault, from_poem_error};
use super::extract::{self, read_limited};
use crate::state::AppState;

/// One span and one log line per request: method, route, status, latency, user id. The path is
/// logged without its query string, which may carry tokens.
pub async fn trace<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let span = tracing::info_span!(
        "liteset.http.request",
        method = %req.method(),
        path = %req.uri().path(),
        route = tracing::field::Empty,
        status = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
        user_id = tracing::field::Empty,
    );
    let started = Instant::now();
    async move {
        let mut resp = match ep.call(req).await {
            Ok(r) => r.into_response(),
            Err(e) => from_poem_error(e).into_response(),
        };
        // Superset's default (Talisman): no other site may frame a page of this server, so
        // its app cannot be overlaid to trick a signed-in user's clicks. A handler that serves
        // a page meant for framing sets its own policy.
        let own_policy = resp
            .headers()
            .get(poem::http::header::CONTENT_SECURITY_POLICY)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("frame-ancestors"));
        if !own_policy
            && !resp
                .headers()
                .contains_key(poem::http::header::X_FRAME_OPTIONS)
        {
            resp.headers_mut().insert(
                poem::http::header::X_FRAME_OPTIONS,
                poem::http::HeaderValue::from_static("SAMEORIGIN"),
            );
        }
        let span = tracing::Span::current();
        if let Some(op) = resp.data::<poem_openapi::OperationId>() {
            span.record("route", op.0);
        }
        let status = resp.status().as_u16();
        span.record("status", status);
        span.record("latency_ms", started.elapsed().as_secs_f64() * 1000.0);
        if resp.status().is_server_error() {
            tracing::warn!(message = "Request finished.", status);
        } else {
            tracing::info!(message = "Request finished.", status);
        }
        Ok(resp)
    }
    .instrument(span)
    .await
}

/// Superset clients call both `/x` and `/x/`; every route is registered without the trailing
/// slash and requests are normalised here, so both forms reach the same handler without a
/// redirect (superset-cli follows none).
pub async fn strip_trailing_slash<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
) -> poem::Result<Response> {
    let path = req.uri().path();
    if path.len() > 1 && path.ends_with('/') {
        let trimmed = path.trim_end_matches('/');
        let trimmed = if trimmed.is_empty() { "/" } else { trimmed };
        let pq = match req.uri().query() {
            Some(q) => format!("{trimmed}?{q}"),
            None => trimmed.to_owned(),
        };
        let mut parts = req.uri().clone().into_parts();
        parts.path_and_query = pq.parse().ok();
        if let Ok(uri) = Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
    ep.call(req).await.map(IntoResponse::into_response)
}

/// Bounds what a request body may cost before a handler sees it.
///
/// Who is calling is established here, before any body byte is read (and handed on to the
/// [`extract::Auth`] extractor, so it is done once). Without valid credentials a body may be
/// at most `http.max_unauthenticated_body_bytes` (a login form), refused with a 413 as soon as
/// it is known to be larger (the rest is read and discarded for a few seconds while the answer
/// goes out, never held: [`linger`]), and all such bodies together hold at most
/// `http.max_unauthenticated_buffered_bytes` (503 past it): nobody spends the server's memory
/// before signing in. With credentials the limit is `http.max_body_bytes` (plugin uploads:
/// `plugins.max_upload_mb`), a declared larger body refused with a 400 before it is read.
/// Every body must arrive within `http.read_timeout_secs` (408 after), so a client trickling
/// bytes cannot hold a handler forever. A body without a declared length (chunked) is read
/// here up to the limit and handed on from memory, so no extractor (multipart spools uploads
/// to temporary files) can be fed an unbounded one.
pub async fn limit_body<E: Endpoint>(ep: Arc<E>, mut req: Request) -> poem::Result<Response> {
    let state = extract::state(&req)?;
    let declared = req
        .headers()
        .get(poem::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let chunked = declared.is_none() && req.headers().contains_key(header::TRANSFER_ENCODING);
    if declared.unwrap_or(0) == 0 && !chunked {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let caller = extract::Auth::of(&req, &state).await;
    let signed_in = caller.principal.user().is_some();
    // Expired or invalid credentials get the answer the handler would give (a client then
    // refreshes its token), not a size refusal, when the body is past the anonymous limit.
    let rejected = match &caller.principal {
        crate::auth::Principal::Rejected(e) => Some(crate::auth::Error::clone_of(e)),
        _ => None,
    };
    req.extensions_mut().insert(caller);
    let http = &state.config.http;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(http.read_timeout_secs);
    if !signed_in {
        let limit = http.max_unauthenticated_body_bytes;
        let too_large = move || {
            close(rejected.map_or_else(|| too_large_unauthenticated(limit), ApiError::from))
        };
        if declared.is_some_and(|n| n > limit) {
            tracing::info!(
                message = "Refused an oversized body before authentication.",
                declared,
                limit
            );
            linger(req.take_body().into_async_read());
            return Ok(too_large());
        }
        let want = u32::try_from(declared.unwrap_or(limit)).unwrap_or(u32::MAX);
        let Ok(_permit) = state.unauthenticated_bodies.try_acquire_many(want) else {
            tracing::warn!(message = "Too many unauthenticated request bodies in flight.");
            let mut resp = close(ApiError::message(
                Fault::Busy,
                "The server is busy, try again shortly",
            ));
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            return Ok(resp);
        };
        let mut reader = req.take_body().into_async_read();
        let mut buf = Vec::new();
        let mut head = (&mut reader).take(limit + 1);
        match tokio::time::timeout_at(deadline, head.read_to_end(&mut buf)).await {
            Ok(Ok(n)) if n as u64 <= limit => {}
            Ok(Ok(_)) => {
                drop(buf);
                linger(reader);
                return Ok(too_large());
            }
            Ok(Err(e)) => return Ok(close(extract::read_error(e))),
            Err(_) => return Ok(close(extract::too_slow())),
        }
        req.set_body(buf);
        // The permit is held until the handler is done with the body.
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    // Plugin uploads have their own cap: a component is routinely larger than any JSON body.
    let limit = if req.uri().path().starts_with("/api/v1/plugin") {
        state.config.plugins.max_upload_mb << 20
    } else {
        http.max_body_bytes
    };
    if declared.is_some_and(|n| n > limit) {
        tracing::info!(message = "Refused an oversized body.", declared, limit);
        let _ = tokio::time::timeout_at(deadline, extract::drain(req.take_body())).await;
        return Err(
            ApiError::bad_request(format!("Request payload is larger than {limit} bytes")).into(),
        );
    }
    if chunked {
        let body = read_before(req.take_body(), limit, deadline).await?;
        req.set_body(body);
    } else {
        let body = with_deadline(req.take_body(), deadline);
        req.set_body(body);
    }
    ep.call(req).await.map(IntoResponse::into_response)
}

/// How long the rest of a refused unauthenticated body is still read (and discarded) after
/// the answer, as nginx's lingering close does: a client still sending then receives the
/// answer instead of a connection reset, and nobody holds the connection longer than this.
const LINGER: Duration = Duration::from_secs(5);

/// Reads and discards what is left of a refused body for at most [`LINGER`] and
/// `extract::DRAIN_CAP_BYTES`, in the background, while the answer goes out; the connection
/// closes when it stops.
fn linger(rest: impl tokio::io::AsyncRead + Send + Unpin + 'static) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(LINGER, extract::drain_reader(rest)).await;
    });
}

/// An error answer after which the connection is closed (its body was not wholly read).
fn close(e: ApiError) -> Response {
    let mut resp = e.into_response();
    resp.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    resp
}

fn too_large_unauthenticated(limit: u64) -> ApiError {
    ApiError::message(
        Fault::TooLarge,
        format!("Request payload is larger than {limit} bytes: sign in first"),
    )
}

/// [`read_limited`] that must finish by `deadline`.
async fn read_before(
    body: poem::Body,
    limit: u64,
    deadline: tokio::time::Instant,
) -> Result<bytes::Bytes, ApiError> {
    tokio::time::timeout_at(deadline, read_limited(body, limit))
        .await
        .unwrap_or_else(|_| Err(extract::too_slow()))
}

/// `body`, failing with a timeout error once `deadline` passes (the extractor reading it then
/// answers 400 with the reason).
fn with_deadline(body: poem::Body, deadline: tokio::time::Instant) -> poem::Body {
    use futures_util::StreamExt;
    let stream = Box::pin(body.into_bytes_stream());
    let timed = futures_util::stream::unfold(Some(stream), move |stream| async move {
        let mut stream = stream?;
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(item)) => Some((item, Some(stream))),
            Ok(None) => None,
            Err(_) => Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the request body was not received in time",
                )),
                None,
            )),
        }
    });
    poem::Body::from_bytes_stream(timed)
}

/// Endpoints Superset exempts from CSRF: FAB's own security API and the views in
/// `WTF_CSRF_EXEMPT_LIST` (paths without trailing slash).
fn csrf_exempt(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v1/") else {
        // Only the API is protected here; the browser login form checks its own token.
        return true;
    };
    let fab_security = [
        "security/login",
        "security/refresh",
        "security/users",
        "security/roles",
        "security/permissions",
        "security/resources",
        "security/permissions-resources",
        "security/groups",
    ];
    if fab_security
        .iter()
        .any(|p| rest == *p || rest.starts_with(&format!("{p}/")))
    {
        return true;
    }
    if rest == "chart/data" {
        return true;
    }
    let segments: Vec<&str> = rest.split('/').collect();
    matches!(
        segments.as_slice(),
        ["dashboard", _, "cache_dashboard_screenshot"]
    )
}

/// Flask-WTF's `CSRFProtect`: every POST/PUT/PATCH/DELETE to the API, Bearer-authenticated or
/// not, carries a token (header `X-CSRFToken`/`X-CSRF-Token`, or form field `csrf_token`)
/// matching the secret in its session cookie. Runs before authentication, as in Flask.
pub async fn csrf<E: Endpoint>(ep: Arc<E>, mut req: Request) -> poem::Result<Response> {
    let unsafe_method = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if !unsafe_method || csrf_exempt(req.uri().path()) {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let state = extract::state(&req)?;
    // A guest token travels in a header no other site can make a browser send, and the
    // embedded app runs in a third-party frame that gets no session cookie: a request that
    // a guest token alone authenticates needs no CSRF token (a session, when present, still
    // decides who is calling and is checked).
    if extract::guest_token(&req, &state).is_some()
        && extract::session(&req, &state).is_none_or(|s| s.uid.is_none())
    {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let header = ["x-csrftoken", "x-csrf-token"]
        .iter()
        .find_map(|h| req.headers().get(*h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let token = match header {
        Some(t) => Some(t),
        None if req
            .content_type()
            .is_some_and(|ct| ct.starts_with("application/x-www-form-urlencoded")) =>
        {
            // The form body is read here and put back for the handler.
            let body = read_limited(req.take_body(), state.config.http.max_body_bytes).await?;
            let token = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body)
                .ok()
                .and_then(|kv| kv.into_iter().find(|(k, _)| k == "csrf_token"))
                .map(|(_, v)| v);
            req.set_body(body);
            token
        }
        None => None,
    };
    let session = extract::session(&req, &state);
    if let Err(e) = state
        .auth
        .sessions()
        .check_csrf(token.as_deref(), session.as_ref())
    {
        tracing::info!(message = "CSRF check failed.", reason = %e);
        return Err(ApiError::from(crate::auth::Error::Csrf(e)).into());
    }
    ep.call(req).await.map(IntoResponse::into_response)
}

/// The response for a panicked handler: Superset's 500 body, with the panic message logged.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into());
    ApiError::internal(&format!("handler panicked: {text}")).into_response()
}

/// Attaches the shared state for extractors, and checks that every error answer is one the
/// document lists for its operation.
pub async fn with_state<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    state: Arc<AppState>,
    document: Arc<Document>,
) -> poem::Result<Response> {
    req.extensions_mut().insert(state.clone());
    let changes_catalog = changes_catalog(req.method(), req.uri().path());
    let method = req.method().clone();
    // An error becomes its answer here, as `trace` would make it, so the status checked is
    // the one sent (poem's 415 for a wrong content type is a 400 in Superset's envelope).
    let resp = match ep.call(req).await {
        Ok(r) => r.into_response(),
        Err(e) => {
            let pattern = e.data::<PathPattern>().cloned();
            let mut r = from_poem_error(e).into_response();
            if let Some(p) = pattern {
                r.set_data(p);
            }
            r
        }
    };
    if let Some(pattern) = resp.data::<PathPattern>()
        && !document.documents(method.as_str(), &pattern.0, resp.status().as_u16())
    {
        let status = resp.status();
        // Debug builds (every test) fail loudly; a release server logs and answers anyway.
        debug_assert!(
            false,
            "{method} {} answered {status}, which its operation does not document",
            pattern.0
        );
        tracing::error!(%method, pattern = %pattern.0, %status, "undocumented error status");
    }
    if changes_catalog {
        // Charts, datasets and databases are cached for chart data; any write to them (or an
        // import, or a plugin change) drops this process's copies. Other replicas' copies
        // expire within seconds.
        state.catalog_changed();
    }
    Ok(resp)
}

/// Whether a request may change a chart, dataset or database definition, the viz plugins
/// that build a saved chart's query, or the row-level security rules applied to it. Charts change through dashboards too (imports, copies).
fn changes_catalog(method: &poem::http::Method, path: &str) -> bool {
    use poem::http::Method;
    if !matches!(*method, Method::POST | Method::PUT | Method::DELETE) {
        return false;
    }
    let Some(rest) = path.strip_prefix("/api/v1/") else {
        return false;
    };
    // `POST /chart/data` reads: it is the hottest request there is.
    if rest.starts_with("chart/data") {
        return false;
    }
    [
        "dataset",
        "database",
        "assets",
        "chart",
        "dashboard",
        "plugin",
        // Row-level security rules decide which rows chart data returns.
        "rowlevelsecurity",
    ]
    .iter()
    .any(|p| rest.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_writes_are_recognised() {
        use poem::http::Method;
        assert!(changes_catalog(&Method::PUT, "/api/v1/dataset/3"));
        assert!(changes_catalog(
            &Method::DELETE,
            "/api/v1/dataset/3/column/9"
        ));
        assert!(changes_catalog(&Method::POST, "/api/v1/database/import/"));
        assert!(changes_catalog(&Method::POST, "/api/v1/assets/import/"));
        assert!(!changes_catalog(&Method::GET, "/api/v1/dataset/3"));
        assert!(changes_catalog(&Method::PUT, "/api/v1/chart/7"));
        assert!(changes_catalog(&Method::DELETE, "/api/v1/chart/?q=!(7)"));
        assert!(changes_catalog(&Method::POST, "/api/v1/dashboard/import/"));
        assert!(changes_catalog(&Method::POST, "/api/v1/plugin/"));
        assert!(!changes_catalog(&Method::POST, "/api/v1/chart/data"));
        assert!(!changes_catalog(
            &Method::POST,
            "/api/v1/chart/data?form_data=%7B%7D"
        ));
        assert!(!changes_catalog(&Method::GET, "/api/v1/chart/7"));
    }

    #[test]
    fn superset_csrf_exemptions() {
        assert!(csrf_exempt("/api/v1/security/login"));
        assert!(csrf_exempt("/api/v1/security/refresh"));
        assert!(csrf_exempt("/api/v1/security/users/3"));
        assert!(csrf_exempt("/api/v1/chart/data"));
        assert!(csrf_exempt(
            "/api/v1/dashboard/5/cache_dashboard_screenshot"
        ));
        assert!(!csrf_exempt("/api/v1/security/guest_token"));
        assert!(!csrf_exempt("/api/v1/chart"));
        assert!(!csrf_exempt("/api/v1/chart/1/data"));
        assert!(!csrf_exempt("/api/v1/dashboard/5"));
    }
}
