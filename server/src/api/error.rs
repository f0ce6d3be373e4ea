//! The one HTTP error type, and the one place where every layer's error becomes a status code
//! and one of Superset's three bodies: flask-jwt's `{"msg"}`, FAB's `{"message"}` and SIP-40's
//! `{"errors": [...]}`. Handlers never build error JSON themselves.

use poem::http::StatusCode;
use poem::{IntoResponse, Response};
use poem_openapi::registry::{
    MetaMediaType, MetaResponse, MetaResponses, MetaSchema, MetaSchemaRef, Registry,
};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, Object};
use serde_json::{Value, json};

use crate::auth;
use crate::store;

/// One entry of a SIP-40 error list.
#[derive(Clone, Debug, PartialEq, Object, serde::Serialize)]
pub struct SupersetError {
    /// Human-readable message.
    pub message: String,
    /// Superset's `SupersetErrorType` name.
    pub error_type: String,
    /// `info`, `warning` or `error`.
    pub level: String,
    /// Context, always including `issue_codes`.
    pub extra: poem_openapi::types::Any<Value>,
}

/// FAB's body: `message` is a string, or a `{field: [messages]}` map for validation errors.
#[derive(Object)]
#[oai(rename = "MessageError")]
struct MessageBody {
    /// A string, or field → messages.
    message: poem_openapi::types::Any<Value>,
}

/// flask-jwt-extended's body for token failures.
#[derive(Object)]
#[oai(rename = "TokenError")]
struct MsgBody {
    /// flask-jwt's text, e.g. "Token has expired".
    msg: String,
}

/// SIP-40 body.
#[derive(Object)]
#[oai(rename = "ErrorsList")]
struct ErrorsBody {
    /// The errors.
    errors: Vec<SupersetError>,
}

/// Which of Superset's bodies an error renders as.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorBody {
    /// `{"msg": …}`
    Msg(String),
    /// `{"message": …}`
    Message(Value),
    /// `{"errors": […]}`
    Errors(Vec<SupersetError>),
    /// One SIP-40 error as the whole body (`SupersetSecurityException.to_dict()`), as the
    /// explore endpoint answers a datasource it may not read.
    Error(Box<SupersetError>),
}

/// What went wrong, as the handlers and the other layers' mappings name it: the one vocabulary
/// for error responses outside this file, so that which status each fault answers, and which
/// bodies the document promises for it ([`ERRORS`]), are decided here alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// 400: malformed body or parameters, or a failed CSRF check.
    BadRequest,
    /// 401: not authenticated.
    Unauthorized,
    /// 403: authenticated but not allowed.
    Forbidden,
    /// 404: no such object, or one the caller may not know exists.
    NotFound,
    /// 405: no operation has this method on this path.
    MethodNotAllowed,
    /// 408: the query or the request body took too long.
    Timeout,
    /// 410: results no longer stored.
    Gone,
    /// 413: the request body is too large.
    TooLarge,
    /// 422: well-formed but refused (invalid fields, a refused query, an invalid token).
    Unprocessable,
    /// 429: too many failed attempts.
    TooMany,
    /// 499: the client went away (nginx's "client closed request"); nobody reads it.
    ClientClosed,
    /// 500: a fault of ours; the cause is logged, never sent.
    Internal,
    /// 503: busy, retry after `Retry-After` seconds.
    Busy,
}

impl Fault {
    fn status(self) -> StatusCode {
        match self {
            Fault::BadRequest => StatusCode::BAD_REQUEST,
            Fault::Unauthorized => StatusCode::UNAUTHORIZED,
            Fault::Forbidden => StatusCode::FORBIDDEN,
            Fault::NotFound => StatusCode::NOT_FOUND,
            Fault::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Fault::Timeout => StatusCode::REQUEST_TIMEOUT,
            Fault::Gone => StatusCode::GONE,
            Fault::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Fault::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
            Fault::TooMany => StatusCode::TOO_MANY_REQUESTS,
            Fault::ClientClosed => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
            Fault::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Fault::Busy => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// An HTTP error response in Superset's wire format.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}: {body:?}", .fault.status())]
pub struct ApiError {
    /// What went wrong; [`Fault::status`] is its HTTP status.
    pub fault: Fault,
    /// Body.
    pub body: ErrorBody,
    /// `Retry-After` seconds for 429/503.
    pub retry_after: Option<u64>,
}

/// Superset's issue codes (`superset/errors.py`), added to every SIP-40 error by type.
fn issue_codes(error_type: &str) -> Vec<(u16, &'static str)> {
    let codes: &[u16] = match error_type {
        "GENERIC_DB_ENGINE_ERROR" => &[1002],
        "COLUMN_DOES_NOT_EXIST_ERROR" => &[1003, 1004],
        "TABLE_DOES_NOT_EXIST_ERROR" => &[1003, 1005],
        "SCHEMA_DOES_NOT_EXIST_ERROR" => &[1003, 1016],
        "SYNTAX_ERROR" => &[1030],
        "INVALID_SQL_ERROR" => &[1003],
        "CONNECTION_INVALID_USERNAME_ERROR" => &[1012],
        "CONNECTION_INVALID_PASSWORD_ERROR" => &[1013],
        "CONNECTION_INVALID_HOSTNAME_ERROR" => &[1007],
        "CONNECTION_PORT_CLOSED_ERROR" => &[1008],
        "CONNECTION_HOST_DOWN_ERROR" => &[1009],
        "CONNECTION_ACCESS_DENIED_ERROR" => &[1014, 1015],
        "CONNECTION_UNKNOWN_DATABASE_ERROR" => &[1015],
        "CONNECTION_DATABASE_TIMEOUT" => &[1001, 1009],
        "CONNECTION_MISSING_PARAMETERS_ERROR" => &[1018],
        "CONNECTION_INVALID_PORT_ERROR" => &[1034],
        "GENERIC_COMMAND_ERROR" => &[1010],
        "DATASOURCE_SECURITY_ACCESS_ERROR"
        | "TABLE_SECURITY_ACCESS_ERROR"
        | "DATABASE_SECURITY_ACCESS_ERROR"
        | "DASHBOARD_SECURITY_ACCESS_ERROR"
        | "CHART_SECURITY_ACCESS_ERROR"
        | "QUERY_SECURITY_ACCESS_ERROR"
        | "MISSING_OWNERSHIP_ERROR" => &[1017],
        "INVALID_PAYLOAD_FORMAT_ERROR" => &[1019],
        "INVALID_PAYLOAD_SCHEMA_ERROR" => &[1020],
        "MARSHMALLOW_ERROR" => &[1038],
        "SQLLAB_TIMEOUT_ERROR" => &[1026, 1027],
        "RESULTS_BACKEND_NOT_CONFIGURED_ERROR" => &[1021],
        "DML_NOT_ALLOWED_ERROR" => &[1022],
        "ADHOC_SUBQUERY_NOT_ALLOWED_ERROR" => &[1037],
        "OBJECT_DOES_NOT_EXIST_ERROR" => &[1029],
        "DATABASE_NOT_FOUND_ERROR" => &[1011, 1036],
        "MISSING_TEMPLATE_PARAMS_ERROR" => &[1006],
        "INVALID_TEMPLATE_PARAMS_ERROR" => &[1028],
        "INVALID_CTAS_QUERY_ERROR" => &[1023],
        "RESULTS_BACKEND_ERROR" => &[1031, 1032, 1033],
        // Superset maps no issue to this type; "too large to query" is the nearest.
        "RESULT_TOO_LARGE_ERROR" => &[1000],
        _ => &[1011],
    };
    codes.iter().map(|c| (*c, issue_message(*c))).collect()
}

fn issue_message(code: u16) -> &'static str {
    match code {
        1000 => "The datasource is too large to query.",
        1001 => "The database is under an unusual load.",
        1002 => "The database returned an unexpected error.",
        1003 => {
            "There is a syntax error in the SQL query. Perhaps there was a misspelling or a typo."
        }
        1004 => "The column was deleted or renamed in the database.",
        1005 => "The table was deleted or renamed in the database.",
        1006 => "One or more parameters specified in the query are missing.",
        1007 => "The hostname provided can't be resolved.",
        1008 => "The port is closed.",
        1009 => "The host might be down, and can't be reached on the provided port.",
        1010 => "Superset encountered an error while running a command.",
        1012 => "The username provided when connecting to a database is not valid.",
        1013 => "The password provided when connecting to a database is not valid.",
        1014 => "Either the username or the password is wrong.",
        1015 => "Either the database is spelled incorrectly or does not exist.",
        1016 => "The schema was deleted or renamed in the database.",
        1017 => "The user doesn't have the proper permissions.",
        1018 => "One or more parameters needed to configure a database are missing.",
        1019 => "The submitted payload has the incorrect format.",
        1020 => "The submitted payload has the incorrect schema.",
        1021 => "Results backend needed for asynchronous queries is not configured.",
        1022 => "Database does not allow data manipulation.",
        1023 => {
            "The CTAS (create table as select) doesn't have a SELECT statement at the end. \
             Please make sure your query has a SELECT as its last statement. Then, try running \
             your query again."
        }
        1026 => "Query is too complex and takes too long to run.",
        1027 => "The database is currently running too many queries.",
        1028 => "The query contains one or more malformed template parameters.",
        1029 => "The object does not exist in the given database.",
        1030 => "The query has a syntax error.",
        1031 => "The results backend no longer has the data from the query.",
        1032 => "The query associated with the results was deleted.",
        1033 => {
            "The results stored in the backend were stored in a different format, and no longer \
             can be deserialized."
        }
        1034 => "The port number is invalid.",
        1036 => "The database was deleted.",
        1037 => "Custom SQL fields cannot contain sub-queries.",
        1038 => "The submitted payload failed validation.",
        _ => "Superset encountered an unexpected error.",
    }
}

/// A SIP-40 entry with the `issue_codes` of its type added to `extra`.
fn entry(error_type: &str, level: &str, message: String, extra: Value) -> SupersetError {
    let mut extra = match extra {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let codes: Vec<Value> = issue_codes(error_type)
        .into_iter()
        .map(|(code, text)| json!({"code": code, "message": format!("Issue {code} - {text}")}))
        .collect();
    extra.insert("issue_codes".into(), Value::Array(codes));
    SupersetError {
        message,
        error_type: error_type.to_owned(),
        level: level.to_owned(),
        extra: poem_openapi::types::Any(Value::Object(extra)),
    }
}

impl ApiError {
    /// flask-jwt-style error.
    pub fn msg(fault: Fault, msg: impl Into<String>) -> ApiError {
        ApiError {
            fault,
            body: ErrorBody::Msg(msg.into()),
            retry_after: None,
        }
    }

    /// FAB-style error with a string message.
    pub fn message(fault: Fault, message: impl Into<String>) -> ApiError {
        ApiError {
            fault,
            body: ErrorBody::Message(Value::String(message.into())),
            retry_after: None,
        }
    }

    /// FAB-style validation error: `{"message": {field: [messages]}}`.
    pub fn fields(fault: Fault, fields: Value) -> ApiError {
        ApiError {
            fault,
            body: ErrorBody::Message(fields),
            retry_after: None,
        }
    }

    /// SIP-40 error of one entry; `issue_codes` are added from the type.
    pub fn sip40(
        fault: Fault,
        error_type: &str,
        message: impl Into<String>,
        extra: Value,
    ) -> ApiError {
        ApiError {
            fault,
            body: ErrorBody::Errors(vec![entry(error_type, "error", message.into(), extra)]),
            retry_after: None,
        }
    }

    /// One SIP-40 error as the whole body at `level`; `issue_codes` are added from the type.
    pub fn superset_error(
        fault: Fault,
        error_type: &str,
        level: &str,
        message: impl Into<String>,
        extra: Value,
    ) -> ApiError {
        ApiError {
            fault,
            body: ErrorBody::Error(Box::new(entry(error_type, level, message.into(), extra))),
            retry_after: None,
        }
    }

    /// 404 `{"message": "Not found"}`.
    pub fn not_found() -> ApiError {
        ApiError::message(Fault::NotFound, "Not found")
    }

    /// 400 `{"message": …}`.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::message(Fault::BadRequest, message)
    }

    /// 500 `{"message": "Fatal error"}`: the cause goes to the log, never to the client.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(message = "Request failed.", error = %cause);
        ApiError::message(Fault::Internal, "Fatal error")
    }

    fn json(&self) -> Value {
        match &self.body {
            ErrorBody::Msg(m) => json!({ "msg": m }),
            ErrorBody::Message(m) => json!({ "message": m }),
            ErrorBody::Errors(e) => json!({ "errors": e }),
            ErrorBody::Error(e) => json!(e),
        }
    }
}

/// A template that did not render (Superset's `SupersetSyntaxErrorException` body, answered
/// 400): the message, with the template's line and Jinja2's exception name in `extra`; the
/// disabled switch and a value refused outside a literal are `INVALID_TEMPLATE_PARAMS_ERROR`,
/// undefined names `MISSING_TEMPLATE_PARAMS_ERROR`, any other failure `generic`.
pub fn template_error(
    text: String,
    err: &crate::query::template::TemplateError,
    mut extra: Value,
    generic: &str,
) -> ApiError {
    use crate::query::template::TemplateError as T;
    let error_type = match err {
        T::Disabled | T::Unquoted(_) => "INVALID_TEMPLATE_PARAMS_ERROR",
        T::Render { undefined, .. } if !undefined.is_empty() => "MISSING_TEMPLATE_PARAMS_ERROR",
        _ => generic,
    };
    if let Some(o) = extra.as_object_mut() {
        o.insert("line".into(), json!(err.line()));
        o.insert("exception_type".into(), json!(err.exception_type()));
        if !err.undefined().is_empty() {
            o.insert("undefined_parameters".into(), json!(err.undefined()));
        }
    }
    ApiError::sip40(Fault::BadRequest, error_type, text, extra)
}

/// Superset's SIP-40 body for a failed connection.
pub fn engine_error(
    fault: Fault,
    engine: crate::uri::Engine,
    e: &crate::engines::EngineError,
) -> ApiError {
    ApiError::sip40(
        fault,
        e.error_type(),
        e.message(),
        json!({"engine_name": crate::engines::engine_name(engine), "invalid": e.invalid()}),
    )
}

impl From<crate::query::QueryError> for ApiError {
    fn from(e: crate::query::QueryError) -> Self {
        use crate::engines::EngineError;
        use crate::query::QueryError as Q;
        let text = e.to_string();
        match e {
            Q::Schema(_) | Q::Invalid(_) | Q::Plain(_) => {
                tracing::info!(message = "Chart data request refused.", reason = %text);
                ApiError::bad_request(text)
            }
            Q::Unsupported(_) => {
                tracing::info!(message = "Chart data request refused.", reason = %text);
                ApiError::bad_request(text)
            }
            Q::DatasetTemplate(err) | Q::Template(err) => {
                tracing::info!(message = "Template refused.", reason = %text, line = ?err.line());
                template_error(text, &err, json!({}), "GENERIC_COMMAND_ERROR")
            }
            Q::Sql(err) => {
                tracing::info!(message = "SQL fragment refused.", reason = %err.message());
                // Superset: 422 for a `SupersetParseError`, 400 for the sub-query refusal
                // (raised as a query-object validation error).
                let status = match err.kind() {
                    crate::query::sqlcheck::SqlErrorKind::InvalidSql => Fault::Unprocessable,
                    crate::query::sqlcheck::SqlErrorKind::AdhocSubqueryNotAllowed => {
                        Fault::BadRequest
                    }
                };
                let extra = json!({
                    "sql": err.sql(),
                    "engine": err.engine(),
                    "line": err.line(),
                    "column": err.column(),
                });
                ApiError::sip40(status, err.error_type(), err.message(), extra)
            }
            Q::DisallowedFunctions(_) => {
                tracing::info!(message = "SQL with disallowed functions refused.", reason = %text);
                ApiError::sip40(Fault::BadRequest, "INVALID_SQL_ERROR", text, json!({}))
            }
            Q::UnsupportedGrain { .. } => {
                // Superset crashes with a 500 here; this is a client error.
                tracing::info!(message = "Chart data request refused.", reason = %text);
                ApiError::sip40(Fault::BadRequest, "GENERIC_BACKEND_ERROR", text, json!({}))
            }
            Q::Engine(EngineError::PoolTimeout) => {
                tracing::warn!(message = "No database connection became free in time.");
                let mut err = ApiError::sip40(
                    Fault::Busy,
                    "CONNECTION_DATABASE_TIMEOUT",
                    EngineError::PoolTimeout.message(),
                    json!({}),
                );
                err.retry_after = Some(1);
                err
            }
            Q::Engine(EngineError::StatementTimeout) => {
                tracing::info!(message = "Query cancelled at its deadline.");
                ApiError::sip40(
                    Fault::Timeout,
                    "BACKEND_TIMEOUT_ERROR",
                    EngineError::StatementTimeout.message(),
                    json!({}),
                )
            }
            // What the engine refuses (a result past its byte budget, an operation SQLite's
            // authorizer denies) is the request's fault: 400 with the SIP-40 type, the same
            // in chart data and SQL Lab. 413 would name the request body, which was fine.
            Q::Engine(err @ (EngineError::ResultTooLarge { .. } | EngineError::Refused { .. })) => {
                tracing::info!(message = "Query refused by the engine.", error_type = err.error_type(), reason = %err.message());
                ApiError::sip40(
                    Fault::BadRequest,
                    err.error_type(),
                    err.message(),
                    json!({}),
                )
            }
            Q::Engine(err) => {
                tracing::info!(message = "Query failed in the database.", error_type = err.error_type(), reason = %err.message());
                ApiError::bad_request(text)
            }
            Q::NotFound => ApiError::not_found(),
            Q::Forbidden(_) => ApiError::sip40(
                Fault::Forbidden,
                "DATASOURCE_SECURITY_ACCESS_ERROR",
                text,
                json!({}),
            ),
            Q::CacheMiss => ApiError::message(Fault::Unprocessable, text),
        }
    }
}

impl From<crate::query::sqllab::SqlLabError> for ApiError {
    fn from(e: crate::query::sqllab::SqlLabError) -> Self {
        use crate::engines::EngineError;
        use crate::query::sqllab::SqlLabError as S;
        let text = e.to_string();
        let sip40 = |fault: Fault, error_type: &str| {
            ApiError::sip40(fault, error_type, text.clone(), json!({}))
        };
        match e {
            S::Body(fields) => {
                tracing::info!(message = "SQL Lab request refused.", reason = %fields);
                ApiError::fields(Fault::BadRequest, fields)
            }
            S::Invalid(_) => {
                tracing::info!(message = "SQL Lab request refused.", reason = %text);
                ApiError::bad_request(text)
            }
            S::DatabaseNotFound => sip40(Fault::NotFound, "DATABASE_NOT_FOUND_ERROR"),
            S::DatabaseForbidden(_) => sip40(Fault::Forbidden, "DATABASE_SECURITY_ACCESS_ERROR"),
            S::TableForbidden(_) => sip40(Fault::Forbidden, "TABLE_SECURITY_ACCESS_ERROR"),
            S::QueryForbidden => {
                tracing::info!(message = "Access to another user's query refused.");
                sip40(Fault::Forbidden, "QUERY_SECURITY_ACCESS_ERROR")
            }
            S::QueryNotFound => ApiError::not_found(),
            S::Template(err) => {
                tracing::info!(message = "SQL Lab template refused.", reason = %text, line = ?err.line());
                let undefined = err.undefined();
                if undefined.is_empty() {
                    // SQL Lab calls every template failure a malformed parameter.
                    template_error(text, &err, json!({}), "INVALID_TEMPLATE_PARAMS_ERROR")
                } else {
                    let quoted: Vec<String> = undefined
                        .iter()
                        .map(|u| format!("\"{}\"", u.replace('"', "\\\"")))
                        .collect();
                    let message = if quoted.len() == 1 {
                        format!("The parameter {} in your query is undefined.", quoted[0])
                    } else {
                        format!(
                            "The following parameters in your query are undefined: {}.",
                            quoted.join(", ")
                        )
                    };
                    template_error(message, &err, json!({}), "INVALID_TEMPLATE_PARAMS_ERROR")
                }
            }
            S::CtasUnsupported => {
                tracing::info!(message = "SQL Lab CTAS refused.");
                sip40(Fault::BadRequest, "INVALID_CTAS_QUERY_ERROR")
            }
            S::DisallowedFunctions(_) | S::SessionStatement(_) => {
                tracing::info!(message = "SQL Lab query refused.", reason = %text);
                sip40(Fault::BadRequest, "INVALID_SQL_ERROR")
            }
            S::Sql(err) => crate::query::QueryError::Sql(err).into(),
            // Superset answers execution failures of a synchronous query with 500.
            S::DmlNotAllowed => sip40(Fault::Internal, "DML_NOT_ALLOWED_ERROR"),
            S::Engine {
                error: EngineError::PoolTimeout,
                ..
            } => crate::query::QueryError::Engine(EngineError::PoolTimeout).into(),
            S::Engine {
                error: EngineError::StatementTimeout,
                ..
            }
            | S::Timeout(_) => sip40(Fault::Timeout, "SQLLAB_TIMEOUT_ERROR"),
            // See the chart-data mapping: refusals by the engine are the request's fault.
            S::Engine {
                error: error @ (EngineError::ResultTooLarge { .. } | EngineError::Refused { .. }),
                engine_name,
            } => {
                tracing::info!(message = "SQL Lab query refused by the engine.", error_type = error.error_type(), reason = %error.message());
                ApiError::sip40(
                    Fault::BadRequest,
                    error.error_type(),
                    error.message(),
                    json!({ "engine_name": engine_name }),
                )
            }
            S::Engine { error, engine_name } => ApiError::sip40(
                Fault::Internal,
                error.error_type(),
                error.message(),
                json!({ "engine_name": engine_name }),
            ),
            S::Stopped => sip40(Fault::Internal, "GENERIC_DB_ENGINE_ERROR"),
            S::ResultsExpired => sip40(Fault::Gone, "RESULTS_BACKEND_ERROR"),
            S::Internal(cause) => ApiError::internal(&cause),
        }
    }
}

/// The SIP-40 `errors` list of a SQL Lab failure, as a failed run records it in its row's
/// `extra_json` (the entries of the body the failure answers with; `[]` for the other bodies).
pub fn sqllab_errors(e: &crate::query::sqllab::SqlLabError) -> Value {
    match ApiError::from(e.clone()).body {
        ErrorBody::Errors(list) => serde_json::to_value(list).unwrap_or_else(|_| json!([])),
        _ => json!([]),
    }
}

impl From<auth::Error> for ApiError {
    fn from(e: auth::Error) -> Self {
        use auth::Error as E;
        match e {
            E::MissingCredentials => {
                ApiError::msg(Fault::Unauthorized, "Missing Authorization Header")
            }
            E::BadAuthorizationHeader { msg } => ApiError::msg(
                if msg.starts_with("Missing") {
                    Fault::Unauthorized
                } else {
                    Fault::Unprocessable
                },
                msg,
            ),
            // flask-jwt-extended: 401 for an expired token, 422 for an invalid one.
            E::Token { expired, msg } => ApiError::msg(
                if expired {
                    Fault::Unauthorized
                } else {
                    Fault::Unprocessable
                },
                msg,
            ),
            e @ E::UserNotLoaded { .. } => ApiError::msg(Fault::Unauthorized, e.to_string()),
            E::BadCredentials | E::InvalidGuestToken => {
                ApiError::message(Fault::Unauthorized, "Not authorized")
            }
            E::Forbidden => ApiError::message(Fault::Forbidden, "Forbidden"),
            e @ E::TooManyAttempts { retry_after_secs } => ApiError {
                retry_after: Some(retry_after_secs),
                ..ApiError::message(Fault::TooMany, e.to_string())
            },
            e @ E::Busy { retry_after_secs } => {
                tracing::warn!(message = "Password hashing is saturated; answered busy.");
                ApiError {
                    retry_after: Some(retry_after_secs),
                    ..ApiError::message(Fault::Busy, e.to_string())
                }
            }
            E::Csrf(c) => ApiError::sip40(
                Fault::BadRequest,
                "GENERIC_BACKEND_ERROR",
                format!("400 Bad Request: {c}"),
                json!({}),
            ),
            E::Store(s) => s.into(),
            e @ E::Internal { .. } => ApiError::internal(&e),
        }
    }
}

impl From<store::Error> for ApiError {
    fn from(e: store::Error) -> Self {
        use store::Error as E;
        match e {
            E::NotFound => ApiError::not_found(),
            E::Conflict { .. } => ApiError::message(Fault::Unprocessable, "Object already exists"),
            E::PoolTimeout => {
                tracing::warn!(message = "Metadata pool exhausted.");
                ApiError {
                    retry_after: Some(1),
                    ..ApiError::message(Fault::Busy, "The server is busy; retry shortly")
                }
            }
            e @ (E::Sqlite(_)
            | E::Postgres(_)
            | E::Decode { .. }
            | E::SchemaTooNew { .. }
            | E::Config { .. }
            | E::Task(_)
            | E::Poisoned
            | E::TxClosed) => ApiError::internal(&e),
        }
    }
}

impl From<crate::connections::Error> for ApiError {
    fn from(e: crate::connections::Error) -> Self {
        use crate::connections::Error as E;
        match e {
            E::Store(e) => e.into(),
            // A stored URI that no longer parses is reported against the field, as when it
            // is sent.
            E::Uri(e) => ApiError::fields(
                Fault::Unprocessable,
                json!({"sqlalchemy_uri": [e.to_string()]}),
            ),
            E::Seal(e) => ApiError::internal(&e),
        }
    }
}

impl From<crate::assets::AssetsError> for ApiError {
    fn from(e: crate::assets::AssetsError) -> Self {
        use crate::assets::AssetsError as E;
        let command = |message: String, extra: Value| {
            ApiError::sip40(
                Fault::Unprocessable,
                "GENERIC_COMMAND_ERROR",
                message,
                extra,
            )
        };
        match e {
            E::NotZip => ApiError::message(Fault::Unprocessable, "Not a ZIP file"),
            E::NoFiles => ApiError::bad_request("No valid import files were found"),
            E::IncorrectVersion => command(e.to_string(), json!({})),
            E::Invalid { model, problems } => {
                let summary = problems.keys().cloned().collect::<Vec<_>>().join(", ");
                command(
                    format!("Error importing {model}: {summary}"),
                    Value::Object(problems),
                )
            }
            // A hostile or malformed upload is the client's error (400), whereas Superset
            // raises these as 500s or answers them with its validation 422.
            E::Unsafe(message) => ApiError::sip40(
                Fault::BadRequest,
                "GENERIC_BACKEND_ERROR",
                message,
                json!({}),
            ),
            E::Malformed { model, problems } => {
                let summary = problems.keys().cloned().collect::<Vec<_>>().join(", ");
                ApiError::sip40(
                    Fault::BadRequest,
                    "GENERIC_COMMAND_ERROR",
                    format!("Error importing {model}: {summary}"),
                    Value::Object(problems),
                )
            }
            E::NotFound => ApiError::not_found(),
            e @ E::Write(_) => ApiError::internal(&e),
            E::Store(s) => s.into(),
        }
    }
}

impl From<crate::plugins::PluginError> for ApiError {
    fn from(e: crate::plugins::PluginError) -> Self {
        use crate::plugins::{GuestErrorKind, PluginError as P};
        let text = e.to_string();
        let typed = |fault: Fault, error_type: &str, reason: &str, plugin: &str| {
            ApiError::sip40(
                fault,
                error_type,
                text.clone(),
                json!({"plugin": plugin, "reason": reason}),
            )
        };
        match e {
            P::NotFound(_) => ApiError::message(Fault::NotFound, text),
            P::Rejected(_) => {
                tracing::info!(message = "Plugin refused.", reason = %text);
                ApiError::bad_request(text)
            }
            P::Failed {
                plugin,
                kind,
                message,
            } => {
                if kind == GuestErrorKind::Internal {
                    tracing::error!(message = "Plugin reported an internal error.", plugin = %plugin, reason = %message);
                    typed(
                        Fault::Internal,
                        "GENERIC_BACKEND_ERROR",
                        "plugin_error",
                        &plugin,
                    )
                } else {
                    tracing::info!(message = "Plugin refused the request.", plugin = %plugin, reason = %message);
                    // Superset's ChartDataQueryFailedError: `Error: <message>`.
                    ApiError::bad_request(format!("Error: {message}"))
                }
            }
            P::Timeout { plugin, .. } => {
                typed(Fault::Timeout, "BACKEND_TIMEOUT_ERROR", "timeout", &plugin)
            }
            P::OutOfMemory { plugin, .. } => typed(
                Fault::Unprocessable,
                "GENERIC_BACKEND_ERROR",
                "out_of_memory",
                &plugin,
            ),
            P::Crashed { plugin, .. } => {
                typed(Fault::Internal, "GENERIC_BACKEND_ERROR", "crashed", &plugin)
            }
            P::BadOutput { plugin, .. } => {
                tracing::error!(message = "Plugin returned an invalid table.", reason = %text);
                typed(
                    Fault::Internal,
                    "GENERIC_BACKEND_ERROR",
                    "bad_output",
                    &plugin,
                )
            }
            P::Busy => {
                tracing::warn!(message = "Plugin slots exhausted.");
                let mut err = ApiError::sip40(
                    Fault::Busy,
                    "GENERIC_BACKEND_ERROR",
                    text,
                    json!({"reason": "busy"}),
                );
                err.retry_after = Some(1);
                err
            }
            P::Store(s) => s.into(),
            P::Internal(m) => ApiError::internal(&m),
        }
    }
}

impl From<crate::render::RenderError> for ApiError {
    fn from(e: crate::render::RenderError) -> Self {
        let text = e.to_string();
        match e {
            crate::render::RenderError::BadSize(_)
            | crate::render::RenderError::NoPlugin(_)
            | crate::render::RenderError::NoSvg(_) => ApiError::bad_request(text),
            crate::render::RenderError::BadSvg { plugin, .. } => {
                tracing::error!(message = "Viz plugin returned an invalid SVG.", reason = %text);
                ApiError::sip40(
                    Fault::Internal,
                    "GENERIC_BACKEND_ERROR",
                    text,
                    json!({"plugin": plugin, "reason": "bad_output"}),
                )
            }
            crate::render::RenderError::Raster(r) => ApiError::internal(&r),
        }
    }
}

impl From<crate::services::Error> for ApiError {
    fn from(e: crate::services::Error) -> Self {
        use crate::services::Error as E;
        let text = e.to_string();
        match e {
            E::Query(e) => e.into(),
            E::Store(e) => e.into(),
            E::Auth(e) => e.into(),
            E::Plugin(e) => e.into(),
            E::Render(e) => e.into(),
            E::EmptyQuery | E::NoQueryContext => ApiError::bad_request(text),
            E::Internal(cause) => ApiError::internal(&cause),
            E::Connection(e) => e.into(),
            E::SqlLab(e) => e.into(),
            E::Invalid(fields) => ApiError::fields(Fault::BadRequest, fields),
            E::ConnectionForm(problems) => {
                tracing::info!(problems = problems.len(), "connection form refused");
                ApiError {
                    fault: Fault::Unprocessable,
                    body: ErrorBody::Errors(
                        problems
                            .into_iter()
                            .map(|p| entry(p.error_type, p.level, p.message, p.extra))
                            .collect(),
                    ),
                    retry_after: None,
                }
            }
            E::ConnectionTest { engine, error } => {
                tracing::info!(error_type = error.error_type(), "connection test failed");
                engine_error(Fault::BadRequest, engine, &error)
            }
            E::DashboardForbidden => ApiError::sip40(
                Fault::Forbidden,
                "DASHBOARD_SECURITY_ACCESS_ERROR",
                text,
                json!({}),
            ),
            E::EmbeddedNotFound => ApiError::message(Fault::BadRequest, text),
            E::GuestPayloadModified => ApiError::sip40(
                Fault::Forbidden,
                "DASHBOARD_SECURITY_ACCESS_ERROR",
                text,
                json!({}),
            ),
        }
    }
}

impl poem::error::ResponseError for ApiError {
    fn status(&self) -> StatusCode {
        self.fault.status()
    }

    fn as_response(&self) -> Response {
        if !documented(self.fault, self.body.shape()) {
            debug_assert!(false, "undocumented error response: {self}");
            tracing::error!(error = %self, "undocumented error response");
        }
        let mut resp = poem::web::Json(self.json())
            .with_status(self.fault.status())
            .into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(poem::http::header::RETRY_AFTER, secs.into());
        }
        resp
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        poem::error::ResponseError::as_response(&self)
    }
}

/// The body shapes an error can take, as the document names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `{"msg": …}` (`TokenError`).
    Msg,
    /// `{"message": …}` (`MessageError`).
    Message,
    /// `{"errors": […]}` (`ErrorsList`).
    Errors,
    /// One SIP-40 error as the whole body (`SupersetError`).
    Error,
}

impl ErrorBody {
    fn shape(&self) -> Shape {
        match self {
            ErrorBody::Msg(_) => Shape::Msg,
            ErrorBody::Message(_) => Shape::Message,
            ErrorBody::Errors(_) => Shape::Errors,
            ErrorBody::Error(_) => Shape::Error,
        }
    }
}

/// Every error status an operation may answer, what it means, and the bodies it carries:
/// the one table the document's error responses are written from. [`ApiError::as_response`]
/// checks each error it sends against it (debug builds panic, so a test catches any drift;
/// release builds log), so the document and the answers cannot disagree.
const ERRORS: &[(Fault, &str, &[Shape])] = &[
    (
        Fault::BadRequest,
        "Bad request: malformed body or parameters, or a failed CSRF check",
        &[Shape::Message, Shape::Errors],
    ),
    (
        Fault::Unauthorized,
        "Not authenticated (flask-jwt `msg` body, or `message` for bad credentials)",
        &[Shape::Msg, Shape::Message],
    ),
    (
        Fault::Forbidden,
        "Forbidden",
        &[Shape::Message, Shape::Errors, Shape::Error],
    ),
    (
        Fault::NotFound,
        "Not found",
        &[Shape::Message, Shape::Errors],
    ),
    (
        Fault::Timeout,
        "The query or the request body took too long",
        &[Shape::Message, Shape::Errors],
    ),
    (
        Fault::Gone,
        "The results are no longer stored",
        &[Shape::Message, Shape::Errors],
    ),
    (
        Fault::TooLarge,
        "The request body is too large",
        &[Shape::Message],
    ),
    (
        Fault::Unprocessable,
        "Could not be processed: invalid token, invalid fields or a refused query",
        &[Shape::Msg, Shape::Message, Shape::Errors],
    ),
    (
        Fault::TooMany,
        "Too many failed attempts",
        &[Shape::Message],
    ),
    (
        Fault::Internal,
        "Fatal error",
        &[Shape::Message, Shape::Errors],
    ),
    (
        Fault::Busy,
        "Busy: retry after the `Retry-After` seconds",
        &[Shape::Message, Shape::Errors],
    ),
];

/// An operation of the document, as far as its error responses depend on it.
#[derive(Clone, Copy, Debug)]
pub struct Operation<'a> {
    /// `operationId`.
    pub id: &'a str,
    /// The HTTP method, upper case.
    pub method: &'a str,
    /// The path template (`/api/v1/chart/{pk}`).
    pub path: &'a str,
    /// Whether it takes any path, query or body parameter.
    pub takes_input: bool,
}

/// Operations that check a password, and so count failed attempts (429).
const PASSWORD_CHECKS: &[&str] = &["security_login", "web_login"];
/// Operations that read SQL Lab's stored results, which expire (410).
const STORED_RESULTS: &[&str] = &["sqllab_results", "sqllab_export"];
/// Path prefixes of the operations that run queries in an analytical database or call a
/// plugin, either of which has a deadline (408).
const RUNS_QUERIES: &[&str] = &[
    "/api/v1/chart/",
    "/api/v1/database/",
    "/api/v1/dataset/",
    "/api/v1/sqllab/",
    "/api/v1/explore/",
    "/api/v1/plugin",
];

impl Operation<'_> {
    /// The faults this operation answers with: the error responses the document lists for it,
    /// and the only ones the server may send for it (`api::document` checks each answer).
    pub fn faults(&self) -> Vec<Fault> {
        // Any operation: a malformed request or failed CSRF check, missing or invalid
        // credentials, a missing permission, our own failure, a full queue or pool.
        let mut faults = vec![
            Fault::BadRequest,
            Fault::Unauthorized,
            Fault::Forbidden,
            Fault::Unprocessable,
            Fault::Internal,
            Fault::Busy,
        ];
        // Only something named by the request can be missing.
        if self.takes_input {
            faults.push(Fault::NotFound);
        }
        let reads_body = matches!(self.method, "POST" | "PUT");
        if reads_body {
            faults.push(Fault::TooLarge);
        }
        if reads_body || RUNS_QUERIES.iter().any(|p| self.path.starts_with(p)) {
            faults.push(Fault::Timeout);
        }
        if STORED_RESULTS.contains(&self.id) {
            faults.push(Fault::Gone);
        }
        if PASSWORD_CHECKS.contains(&self.id) {
            faults.push(Fault::TooMany);
        }
        faults
    }
}

impl Fault {
    /// The status this fault answers with, as a number.
    pub fn code(self) -> u16 {
        self.status().as_u16()
    }

    /// The fault an answer's status names, if any.
    pub fn of_status(code: u16) -> Option<Fault> {
        ERRORS
            .iter()
            .map(|(f, _, _)| *f)
            .chain([Fault::MethodNotAllowed, Fault::ClientClosed])
            .find(|f| f.code() == code)
    }

    /// Whether every operation may answer with it without documenting it: 405 answers a
    /// method no operation has, and 499 a client that left.
    pub fn undocumented(self) -> bool {
        matches!(self, Fault::MethodNotAllowed | Fault::ClientClosed)
    }
}

/// Whether `ERRORS` documents this fault with this body. 405 answers a method no operation
/// has, and 499 a client that left, so no operation documents them.
fn documented(fault: Fault, shape: Shape) -> bool {
    fault.undocumented()
        || ERRORS
            .iter()
            .any(|(f, _, shapes)| *f == fault && shapes.contains(&shape))
}

impl ApiResponse for ApiError {
    const BAD_REQUEST_HANDLER: bool = true;

    fn meta() -> MetaResponses {
        let schema = |shape: Shape| match shape {
            Shape::Msg => MsgBody::schema_ref(),
            Shape::Message => MessageBody::schema_ref(),
            Shape::Errors => ErrorsBody::schema_ref(),
            Shape::Error => SupersetError::schema_ref(),
        };
        let responses = ERRORS
            .iter()
            .map(|(fault, description, shapes)| {
                let schema = match shapes {
                    [one] => schema(*one),
                    many => MetaSchemaRef::Inline(Box::new(MetaSchema {
                        any_of: many.iter().map(|s| schema(*s)).collect(),
                        ..MetaSchema::ANY
                    })),
                };
                MetaResponse {
                    description,
                    status: Some(fault.status().as_u16()),
                    status_range: None,
                    content: vec![MetaMediaType {
                        content_type: "application/json",
                        schema,
                    }],
                    headers: vec![],
                }
            })
            .collect();
        MetaResponses { responses }
    }

    fn register(registry: &mut Registry) {
        SupersetError::register(registry);
        MessageBody::register(registry);
        MsgBody::register(registry);
        ErrorsBody::register(registry);
    }

    fn from_parse_request_error(err: poem::Error) -> Self {
        from_poem_error(err)
    }
}

/// Any error poem produced (routing, extractors, payload parsing) in Superset's envelope.
pub fn from_poem_error(err: poem::Error) -> ApiError {
    if let Some(api) = err.downcast_ref::<ApiError>() {
        return api.clone();
    }
    // A path segment of the wrong type (`/dataset/abc`) names no resource: Flask's int
    // converter answers 404 there, and so do we.
    if err.is::<poem_openapi::error::ParsePathError>() {
        return ApiError::not_found();
    }
    let status = err.status();
    match status {
        StatusCode::NOT_FOUND => ApiError::not_found(),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::message(
            Fault::MethodNotAllowed,
            "The method is not allowed for the requested URL.",
        ),
        s if s.is_server_error() => ApiError::internal(&err),
        // Parameter and payload errors from poem-openapi: 400 with its explanation.
        _ => ApiError::bad_request(err.to_string()),
    }
}
