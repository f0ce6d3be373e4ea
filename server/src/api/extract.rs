//! Request extractors shared by every endpoint: who is calling ([`Auth`]) and a JSON body
//! parsed with marshmallow-style field errors ([`JsonBody`]).

use std::sync::Arc;

use poem::{Request, RequestBody};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaSecurityScheme, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use url::form_urlencoded;

use super::error::{ApiError, Fault};
use crate::auth::{Principal, SessionData, session::SESSION_COOKIE};
use crate::state::AppState;

/// The shared state, which `routes` attaches to every request.
pub fn state(req: &Request) -> poem::Result<Arc<AppState>> {
    req.data::<Arc<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::internal(&"application state missing from request").into())
}

/// The value of one cookie, if sent.
pub fn cookie<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers()
        .get_all(poem::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"'))
}

/// The verified session from the `session` cookie, if any.
pub fn session(req: &Request, state: &AppState) -> Option<SessionData> {
    cookie(req, SESSION_COOKIE).and_then(|c| state.auth.sessions().decode_session(c))
}

/// The guest token a request carries (`embedded.guest_token_header_name`), when embedding is
/// on.
pub fn guest_token<'a>(req: &'a Request, state: &AppState) -> Option<&'a str> {
    let cfg = &state.config.embedded;
    if !cfg.enabled {
        return None;
    }
    req.headers()
        .get(cfg.guest_token_header_name.as_str())
        .and_then(|v| v.to_str().ok())
        .filter(|t| !t.is_empty())
}

/// Who is calling, from the session cookie (first, as FAB does), a guest token or a Bearer
/// token.
pub async fn authenticate(
    req: &Request,
    state: &AppState,
    session: Option<&SessionData>,
) -> Principal {
    let authorization = req
        .headers()
        .get(poem::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let principal = state
        .auth
        .authenticate(session, authorization, guest_token(req, state))
        .await;
    if let Some(u) = principal.user() {
        tracing::Span::current().record("user_id", u.user.id);
    }
    principal
}

/// The caller: a session-cookie or Bearer-token user, anonymous, or rejected credentials.
/// Authentication only; each handler authorizes through `AuthService::authorize`.
#[derive(Clone)]
pub struct Auth {
    /// Who is calling.
    pub principal: Principal,
    /// The session cookie's content, if a valid one was sent.
    pub session: Option<SessionData>,
}

impl<'a> ApiExtractor<'a> for Auth {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::SecurityScheme];

    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        registry.create_security_scheme(
            "jwt",
            MetaSecurityScheme {
                ty: "http",
                description: Some("Access token from POST /api/v1/security/login"),
                name: None,
                key_in: None,
                scheme: Some("bearer"),
                bearer_format: Some("JWT"),
                flows: None,
                openid_connect_url: None,
            },
        );
        registry.create_security_scheme(
            "session",
            MetaSecurityScheme {
                ty: "apiKey",
                description: Some("Browser session cookie from POST /login/"),
                name: Some(SESSION_COOKIE),
                key_in: Some("cookie"),
                scheme: None,
                bearer_format: None,
                flows: None,
                openid_connect_url: None,
            },
        );
    }

    fn security_schemes() -> Vec<&'static str> {
        vec!["jwt", "session"]
    }

    async fn from_request(
        req: &'a Request,
        _body: &mut RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        // Established already when the request has a body (`middleware::limit_body`).
        if let Some(auth) = req.data::<Auth>() {
            return Ok(auth.clone());
        }
        let state = state(req)?;
        Ok(Auth::of(req, &state).await)
    }
}

impl Auth {
    /// Authenticates the request's credentials.
    pub async fn of(req: &Request, state: &AppState) -> Auth {
        let session = session(req, state);
        let principal = authenticate(req, state, session.as_ref()).await;
        Auth { principal, session }
    }
}

/// A JSON request body deserialised with serde, documented with `T`'s OpenAPI schema, whose
/// failures read like marshmallow's: `{"message": {"field": ["Missing data for required field."]}}`.
pub struct JsonBody<T>(pub T);

impl<'a, T: Type + DeserializeOwned + Send> ApiExtractor<'a> for JsonBody<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];

    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType {
                content_type: "application/json",
                schema: T::schema_ref(),
            }],
            required: true,
        })
    }

    async fn from_request(
        req: &'a Request,
        body: &mut RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        let value = read_json(req, body, false).await?;
        parse_value(value).map(JsonBody).map_err(Into::into)
    }
}

/// The JSON value of a request body (bounded by `http.max_body_bytes`): a JSON body, or with
/// `form` also an HTML form's `form_data` field holding JSON text (as Superset reads it; a
/// form without it, or any other body, is "not JSON").
async fn read_json(req: &Request, body: &mut RequestBody, form: bool) -> poem::Result<Value> {
    let limit = state(req)?.config.http.max_body_bytes;
    let mime = req
        .content_type()
        .and_then(|ct| ct.parse::<mime::Mime>().ok());
    let is_json = mime.as_ref().is_some_and(|m| {
        m.type_() == "application"
            && (m.subtype() == "json" || m.suffix().is_some_and(|s| s == "json"))
    });
    let is_form = form
        && mime
            .as_ref()
            .is_some_and(|m| m.essence_str() == "application/x-www-form-urlencoded");
    if !is_json && !is_form {
        return Err(not_json().into());
    }
    let bytes = read_limited(body.take()?, limit).await?;
    let value = if is_form {
        form_urlencoded::parse(&bytes)
            .find(|(k, _)| k == "form_data")
            .and_then(|(_, v)| serde_json::from_str(&v).ok())
    } else {
        serde_json::from_slice(&bytes).ok()
    };
    Ok(value.ok_or_else(not_json)?)
}

/// [`JsonBody`], or the same JSON as the `form_data` field of an HTML form
/// (`application/x-www-form-urlencoded`): Superset's `POST /chart/data` takes both, because
/// the web app's "Export to .CSV" submits a form so the browser downloads the answer.
pub struct JsonOrForm<T>(pub T);

impl<'a, T: Type + DeserializeOwned + Send> ApiExtractor<'a> for JsonOrForm<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];

    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
        let form_data = MetaSchema {
            description: Some("The JSON body, as text"),
            ..MetaSchema::new("string")
        };
        let form = MetaSchema {
            properties: vec![("form_data", MetaSchemaRef::Inline(Box::new(form_data)))],
            required: vec!["form_data"],
            ..MetaSchema::new("object")
        };
        Some(MetaRequest {
            description: None,
            content: vec![
                MetaMediaType {
                    content_type: "application/json",
                    schema: T::schema_ref(),
                },
                MetaMediaType {
                    content_type: "application/x-www-form-urlencoded",
                    schema: MetaSchemaRef::Inline(Box::new(form)),
                },
            ],
            required: true,
        })
    }

    async fn from_request(
        req: &'a Request,
        body: &mut RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        let value = read_json(req, body, true).await?;
        parse_value(value).map(JsonOrForm).map_err(Into::into)
    }
}

fn not_json() -> ApiError {
    ApiError::bad_request("Request payload is not JSON")
}

/// Most bytes of a refused body that are read and discarded so the client, still sending,
/// receives the 400 instead of a broken pipe. Beyond this the connection is simply closed.
const DRAIN_CAP_BYTES: u64 = 64 * 1024 * 1024;

/// Reads and discards up to [`DRAIN_CAP_BYTES`] of a body, never holding it in memory.
pub async fn drain(body: poem::Body) {
    drain_reader(body.into_async_read()).await;
}

/// [`drain`] for a body already being read.
pub async fn drain_reader(reader: impl tokio::io::AsyncRead + Unpin) {
    let mut reader = tokio::io::AsyncReadExt::take(reader, DRAIN_CAP_BYTES);
    let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
}

/// The answer to a body that did not arrive by its deadline (`http.read_timeout_secs`).
pub fn too_slow() -> ApiError {
    ApiError::message(Fault::Timeout, "The request body was not received in time")
}

/// A body that could not be read: too slow (408) or broken off (400).
pub fn read_error(e: std::io::Error) -> ApiError {
    if e.kind() == std::io::ErrorKind::TimedOut {
        too_slow()
    } else {
        ApiError::bad_request(format!("Cannot read the request body: {e}"))
    }
}

/// Reads a body up to `limit` bytes; a larger one is a 400, not a 500 or an unbounded read
/// (the rest is read and discarded, never held, up to [`DRAIN_CAP_BYTES`], so a client still
/// sending receives the 400 instead of a reset connection).
pub async fn read_limited(body: poem::Body, limit: u64) -> Result<bytes::Bytes, ApiError> {
    use tokio::io::AsyncReadExt;
    let mut reader = body.into_async_read();
    let mut buf = Vec::new();
    (&mut reader)
        .take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .await
        .map_err(read_error)?;
    if buf.len() as u64 > limit {
        drop(buf);
        drain_reader(reader).await;
        return Err(ApiError::bad_request(format!(
            "Request payload is larger than {limit} bytes"
        )));
    }
    Ok(bytes::Bytes::from(buf))
}

/// Deserialises `value` into `T`, turning serde's error into a FAB validation body.
pub fn parse_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    // Every request body is a JSON object; serde would otherwise accept an array for a struct.
    if !value.is_object() {
        return Err(ApiError::fields(
            Fault::BadRequest,
            json!({"_schema": ["Invalid input type."]}),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let (field, message) = marshmallow_message(&path, &inner);
        let mut fields = Map::new();
        fields.insert(field, json!([message]));
        ApiError::fields(Fault::BadRequest, Value::Object(fields))
    })
}

/// Maps a serde message at `path` to the field name and marshmallow's wording.
fn marshmallow_message(path: &str, serde_msg: &str) -> (String, String) {
    let join = |parent: &str, child: &str| {
        if parent.is_empty() || parent == "." {
            child.to_owned()
        } else {
            format!("{parent}.{child}")
        }
    };
    if let Some(rest) = serde_msg.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or_default();
        return (join(path, name), "Missing data for required field.".into());
    }
    if let Some(rest) = serde_msg.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or_default();
        return (join(path, name), "Unknown field.".into());
    }
    let field = if path.is_empty() || path == "." {
        "_schema".to_owned()
    } else {
        path.to_owned()
    };
    let msg = if serde_msg.contains("expected a string") {
        "Not a valid string."
    } else if serde_msg.contains("expected i64")
        || serde_msg.contains("expected u64")
        || serde_msg.contains("expected i32")
        || serde_msg.contains("expected u32")
    {
        "Not a valid integer."
    } else if serde_msg.contains("expected a boolean") {
        "Not a valid boolean."
    } else if serde_msg.contains("expected a sequence") {
        "Not a valid list."
    } else if serde_msg.contains("expected struct") || serde_msg.contains("expected a map") {
        "Invalid input type."
    } else {
        "Invalid value."
    };
    (field, msg.into())
}

/// Runs `work` until it finishes or the client closes its connection; dropping `work` then
/// cancels its queries inside the database.
pub async fn until_gone<T, E: Into<ApiError>>(
    state: &AppState,
    req: &Request,
    work: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, ApiError> {
    let peer = req.remote_addr().as_socket_addr().copied();
    tokio::select! {
        out = work => out.map_err(Into::into),
        () = state.connections.gone(peer.as_ref()) => {
            tracing::info!(message = "Client went away; its queries were cancelled.");
            // nginx's "client closed request"; nobody reads it.
            Err(ApiError::message(
                Fault::ClientClosed,
                "Client closed request",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code, reason = "fields exist to be deserialised")]
    struct Login {
        username: String,
        n: Option<i64>,
    }

    fn message_of(e: ApiError) -> Value {
        match e.body {
            super::super::error::ErrorBody::Message(m) => m,
            other => panic!("unexpected body {other:?}"),
        }
    }

    #[test]
    fn missing_field_reads_like_marshmallow() {
        let e = parse_value::<Login>(json!({})).unwrap_err();
        assert_eq!(e.fault, Fault::BadRequest);
        assert_eq!(
            message_of(e),
            json!({"username": ["Missing data for required field."]})
        );
    }

    #[test]
    fn wrong_types_name_the_field() {
        let e = parse_value::<Login>(json!({"username": 5})).unwrap_err();
        assert_eq!(message_of(e), json!({"username": ["Not a valid string."]}));
        let e = parse_value::<Login>(json!({"username": "a", "n": "x"})).unwrap_err();
        assert_eq!(message_of(e), json!({"n": ["Not a valid integer."]}));
        let e = parse_value::<Login>(json!([1])).unwrap_err();
        assert_eq!(message_of(e), json!({"_schema": ["Invalid input type."]}));
    }
}
