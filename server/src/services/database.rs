//! Database connections as the connection dialog of Superset's web app needs them: checking
//! the fields of its PostgreSQL form step by step before anything is saved.

use std::time::Duration;

use serde_json::{Value as Json, json};

use super::Error;
use crate::auth::CurrentUser;
use crate::connections;
use crate::engines::ConnectionSpec;
use crate::state::AppState;
use crate::store::catalog::{self, DATABASE};
use crate::uri::{ConnectionUri, PASSWORD_MASK, ParametersError};

/// One problem with a connection form, as a SIP-40 error describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Superset's `error_type`.
    pub error_type: &'static str,
    /// `"warning"` for fields still missing, `"error"` otherwise.
    pub level: &'static str,
    /// What the dialog shows.
    pub message: String,
    /// `{"missing": [..]}` or `{"invalid": [..]}`: the fields the dialog marks.
    pub extra: Json,
}

impl Problem {
    fn error(error_type: &'static str, message: impl Into<String>, extra: Json) -> Problem {
        Problem {
            error_type,
            level: "error",
            message: message.into(),
            extra,
        }
    }
}

/// What `POST /database/validate_parameters/` checks (Superset's
/// `DatabaseValidateParametersSchema`, already shape-checked by the api layer).
#[derive(Debug, Default)]
pub struct FormCheck {
    /// The engine the form is for (`postgresql`).
    pub engine: String,
    /// The database being edited, whose stored password a masked one stands for.
    pub id: Option<i64>,
    /// The form's fields.
    pub parameters: serde_json::Map<String, Json>,
    /// The root certificate to verify the server with (PEM, already checked), if any.
    pub server_cert: Option<String>,
}

/// How long the reachability probe of a form's host and port may take (Superset: 5 s).
const PORT_PROBE: Duration = Duration::from_secs(5);

/// Superset's `ValidateDatabaseParametersCommand`: the fields still missing (a warning the
/// dialog shows while typing), then whether the host resolves and the port is valid and open,
/// then a real connection. Field problems are [`Error::ConnectionForm`] (422), a failed
/// connection the engine's own error (400).
pub async fn validate_form(
    state: &AppState,
    user: &CurrentUser,
    form: FormCheck,
) -> Result<(), Error> {
    if !matches!(form.engine.as_str(), "postgresql" | "postgres") {
        return Err(Error::ConnectionForm(vec![Problem::error(
            "GENERIC_DB_ENGINE_ERROR",
            format!(
                "Engine \"{}\" cannot be configured through parameters.",
                form.engine
            ),
            json!({}),
        )]));
    }
    let p = &form.parameters;
    let present = |k: &str| match p.get(k) {
        None | Some(Json::Null) | Some(Json::Bool(false)) => false,
        Some(Json::String(s)) => !s.is_empty(),
        Some(Json::Number(n)) => n.as_f64() != Some(0.0),
        Some(Json::Array(a)) => !a.is_empty(),
        Some(Json::Object(o)) => !o.is_empty(),
        Some(Json::Bool(true)) => true,
    };
    let mut problems = Vec::new();
    let missing: Vec<&str> = ["database", "host", "port", "username"]
        .into_iter()
        .filter(|k| !present(k))
        .collect();
    if !missing.is_empty() {
        problems.push(Problem {
            error_type: "CONNECTION_MISSING_PARAMETERS_ERROR",
            level: "warning",
            message: format!("One or more parameters are missing: {}", missing.join(", ")),
            extra: json!({ "missing": missing }),
        });
    }
    let host = p.get("host").and_then(Json::as_str).unwrap_or_default();
    if !host.is_empty() {
        // Resolved once, within the probe's deadline; the port is probed at those addresses.
        let resolved: Vec<std::net::SocketAddr> =
            tokio::time::timeout(PORT_PROBE, tokio::net::lookup_host((host, 0)))
                .await
                .ok()
                .and_then(Result::ok)
                .map(Iterator::collect)
                .unwrap_or_default();
        if resolved.is_empty() {
            problems.push(Problem::error(
                "CONNECTION_INVALID_HOSTNAME_ERROR",
                "The hostname provided can't be resolved.",
                json!({"invalid": ["host"]}),
            ));
        } else if present("port") {
            match p.get("port").and_then(crate::uri::form_port) {
                Some(port) if (0..65536).contains(&port) => {
                    let targets: Vec<std::net::SocketAddr> = resolved
                        .into_iter()
                        .map(|mut a| {
                            a.set_port(port as u16);
                            a
                        })
                        .collect();
                    let probe = tokio::net::TcpStream::connect(&targets[..]);
                    if !matches!(tokio::time::timeout(PORT_PROBE, probe).await, Ok(Ok(_))) {
                        problems.push(Problem::error(
                            "CONNECTION_PORT_CLOSED_ERROR",
                            "The port is closed.",
                            json!({"invalid": ["port"]}),
                        ));
                    }
                }
                other => {
                    if other.is_none() {
                        problems.push(Problem::error(
                            "CONNECTION_INVALID_PORT_ERROR",
                            "Port must be a valid integer.",
                            json!({"invalid": ["port"]}),
                        ));
                    }
                    problems.push(Problem::error(
                        "CONNECTION_INVALID_PORT_ERROR",
                        "The port must be an integer between 0 and 65535 (inclusive).",
                        json!({"invalid": ["port"]}),
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::ConnectionForm(problems));
    }
    let mut uri = ConnectionUri::from_parameters(&form.engine, p).map_err(|e| match e {
        ParametersError::Fields(fields) => Error::Invalid(fields),
        ParametersError::Engine => Error::Invalid(json!({"_schema": [e.to_string()]})),
    })?;
    if uri.password.as_deref() == Some(PASSWORD_MASK) {
        uri.password = None;
        // Editing a saved connection: the mask stands for its password, for the same
        // account only, and only for a database the caller may reach.
        if let Some(id) = form.id {
            let scope = catalog::database_scope(user.grants());
            if state.store.matches(&DATABASE, id, &scope).await? {
                let stored = connections::connection_spec(state, id).await?;
                uri.password = Some(PASSWORD_MASK.into());
                uri.unmask(&stored.uri)
                    .map_err(|e| Error::Invalid(json!({"sqlalchemy_uri": [e.to_string()]})))?;
            }
        }
    }
    let spec = ConnectionSpec {
        database_id: 0,
        uri,
        revision: String::new(),
        options: None,
        server_cert: form.server_cert,
    };
    state
        .engines
        .test_connection(&spec)
        .await
        .map_err(|error| Error::ConnectionTest {
            engine: spec.uri.engine,
            error,
        })
}
