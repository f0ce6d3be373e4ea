//! `sqlalchemy_uri` parsing for the analytical databases Liteset can run queries on.
//!
//! Superset clients send SQLAlchemy URLs (`postgresql+psycopg2://user:pass@host/db`); this module
//! turns one into a typed [`ConnectionUri`] for a supported engine and renders it back with the
//! password masked as Superset does (`XXXXXXXXXX`). It must not open connections or log.

use std::fmt;
use std::path::PathBuf;

/// What Superset shows instead of a password.
pub const PASSWORD_MASK: &str = "XXXXXXXXXX";

/// Engines with a native driver in Liteset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// PostgreSQL through bb8-postgres.
    Postgres,
    /// A local SQLite file (the embedded examples).
    Sqlite,
    /// ClickHouse over its HTTP interface (`clickhousedb://`, `clickhouse+http://`,
    /// `clickhouse://`).
    ClickHouse,
    /// MySQL or MariaDB (`mysql://`, `mysql+mysqldb://`, `mysql+pymysql://`, `mariadb://`).
    MySql,
}

impl Engine {
    /// Superset's `backend` name for the engine.
    pub fn backend(self) -> &'static str {
        match self {
            Engine::Postgres => "postgresql",
            Engine::Sqlite => "sqlite",
            Engine::ClickHouse => "clickhousedb",
            Engine::MySql => "mysql",
        }
    }

    /// The port a URI without one reaches (libpq's, ClickHouse's HTTP, MySQL's).
    pub fn default_port(self) -> Option<u16> {
        match self {
            Engine::Postgres => Some(5432),
            Engine::Sqlite => None,
            Engine::ClickHouse => Some(8123),
            Engine::MySql => Some(3306),
        }
    }
}

/// Why a URI was refused; texts are meant for the 422 `message`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    /// The password mask came back with a different host, port or user: the stored password
    /// belongs to the old account and is not sent anywhere else.
    #[error(
        "The host, port or user changed: enter the password again (the stored one is only \
         kept for the same host, port and user)."
    )]
    MaskForOtherAccount,
    /// Not a URL at all.
    #[error("Invalid connection string: could not parse the SQLAlchemy URI")]
    Malformed,
    /// A scheme Liteset has no driver for.
    #[error(
        "Could not load database driver: {scheme}. Supported engines: postgresql:// \
         (also postgresql+psycopg2://, postgres://), clickhousedb:// (also clickhouse://, \
         clickhouse+http://), mysql:// (also mysql+mysqldb://, mysql+pymysql://, mariadb://) \
         and sqlite:///path"
    )]
    UnsupportedEngine {
        /// The scheme as given.
        scheme: String,
    },
    /// A SQLite URI without a file path (in-memory databases are not shareable).
    #[error("A SQLite URI needs a file path: sqlite:///relative.db or sqlite:////absolute.db")]
    SqliteWithoutPath,
    /// A PostgreSQL URI without a database name.
    #[error("A PostgreSQL URI needs a database name: postgresql://user@host:5432/database")]
    PostgresWithoutDatabase,
}

/// A parsed connection URI. `Debug` and `Display` never show the password.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionUri {
    /// The engine.
    pub engine: Engine,
    /// The driver part of `dialect+driver`, if any (`psycopg2`).
    pub driver: Option<String>,
    /// User name (percent-decoded).
    pub username: Option<String>,
    /// Password (percent-decoded). Never displayed.
    pub password: Option<String>,
    /// Host name.
    pub host: Option<String>,
    /// Port.
    pub port: Option<u16>,
    /// PostgreSQL database name.
    pub database: Option<String>,
    /// SQLite file path.
    pub path: Option<PathBuf>,
    /// Query-string options (`sslmode=require`, …), in order.
    pub options: Vec<(String, String)>,
    scheme: String,
}

impl ConnectionUri {
    /// Parses a SQLAlchemy URI for a supported engine.
    pub fn parse(uri: &str) -> Result<ConnectionUri, UriError> {
        let (scheme, rest) = uri.trim().split_once("://").ok_or(UriError::Malformed)?;
        let scheme_lc = scheme.to_ascii_lowercase();
        let (dialect, driver) = match scheme_lc.split_once('+') {
            Some((d, drv)) => (d.to_owned(), Some(drv.to_owned())),
            None => (scheme_lc.clone(), None),
        };
        let engine = match dialect.as_str() {
            "postgresql" | "postgres" => Engine::Postgres,
            "sqlite" => Engine::Sqlite,
            // clickhouse-connect's `clickhousedb://`; clickhouse-sqlalchemy's `clickhouse://`
            // and `clickhouse+http://` (its native TCP driver is not spoken here).
            "clickhousedb" => Engine::ClickHouse,
            "clickhouse" if matches!(driver.as_deref(), None | Some("http" | "https")) => {
                Engine::ClickHouse
            }
            "mysql" | "mariadb" => Engine::MySql,
            _ => {
                return Err(UriError::UnsupportedEngine {
                    scheme: scheme.to_owned(),
                });
            }
        };
        if engine == Engine::Sqlite {
            // sqlite:///rel.db → "rel.db"; sqlite:////abs.db → "/abs.db" (SQLAlchemy's rule).
            let path = rest.strip_prefix('/').ok_or(UriError::SqliteWithoutPath)?;
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() || path == ":memory:" {
                return Err(UriError::SqliteWithoutPath);
            }
            return Ok(ConnectionUri {
                engine,
                driver,
                username: None,
                password: None,
                host: None,
                port: None,
                database: None,
                path: Some(PathBuf::from(decode(path))),
                options: Vec::new(),
                scheme: scheme_lc,
            });
        }
        // Parse with a neutral scheme: the `url` crate treats unknown schemes uniformly.
        let parsed =
            url::Url::parse(&format!("liteset://{rest}")).map_err(|_| UriError::Malformed)?;
        let database = parsed
            .path()
            .trim_start_matches('/')
            .split('/')
            .next()
            .filter(|d| !d.is_empty())
            .map(decode);
        // ClickHouse and MySQL connect without one (ClickHouse's `default`, MySQL's none).
        if database.is_none() && engine == Engine::Postgres {
            return Err(UriError::PostgresWithoutDatabase);
        }
        Ok(ConnectionUri {
            engine,
            driver,
            username: Some(parsed.username())
                .filter(|u| !u.is_empty())
                .map(decode),
            password: parsed.password().map(decode),
            host: parsed
                .host_str()
                .map(|h| h.trim_matches(['[', ']']).to_owned()),
            port: parsed.port(),
            database,
            path: None,
            options: parsed
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            scheme: scheme_lc,
        })
    }

    /// The SQLAlchemy backend name (`get_backend_name()`): the dialect part of the scheme,
    /// `postgres` read as `postgresql`.
    pub fn backend(&self) -> &str {
        match self.scheme.split('+').next().unwrap_or_default() {
            "postgres" => "postgresql",
            dialect => dialect,
        }
    }

    /// The driver part of the scheme, if the URI names one.
    pub fn driver(&self) -> Option<&str> {
        self.driver.as_deref()
    }

    /// The schema an unqualified table name resolves in on a fresh connection: PostgreSQL's
    /// `public`, SQLite's `main`, and for ClickHouse and MySQL (whose schemas are databases)
    /// the URI's database (ClickHouse's `default` without one; empty for a MySQL URI without
    /// one, where no unqualified name resolves).
    pub fn default_schema(&self) -> String {
        match self.engine {
            Engine::Postgres => "public".to_owned(),
            Engine::Sqlite => "main".to_owned(),
            Engine::ClickHouse => match self.database.as_deref() {
                None | Some(CLICKHOUSE_DEFAULT_DATABASE) => "default".to_owned(),
                Some(db) => db.to_owned(),
            },
            Engine::MySql => self.database.clone().unwrap_or_default(),
        }
    }

    /// Whether `self` (a URI sent back with the password mask) reaches the same account as
    /// `stored`: same engine, host, port and user. Only then may the stored password stand in
    /// for the mask; otherwise it would be sent to whatever server the new URI names.
    pub fn same_account(&self, stored: &ConnectionUri) -> bool {
        let host = |u: &ConnectionUri| {
            u.host
                .as_deref()
                .unwrap_or("localhost")
                .trim_end_matches('.')
                .to_ascii_lowercase()
        };
        let port = |u: &ConnectionUri| u.port.or(u.engine.default_port());
        self.engine == stored.engine
            && host(self) == host(stored)
            && port(self) == port(stored)
            && self.username == stored.username
    }

    /// A URI sent back with the password mask takes `stored`'s password, if it names the same
    /// account ([`ConnectionUri::same_account`]); any other password is left as given.
    pub fn unmask(&mut self, stored: &ConnectionUri) -> Result<(), UriError> {
        if self.password.as_deref() != Some(PASSWORD_MASK) {
            return Ok(());
        }
        if !self.same_account(stored) {
            return Err(UriError::MaskForOtherAccount);
        }
        self.password.clone_from(&stored.password);
        Ok(())
    }

    /// The URI as Superset shows it: the password replaced by `XXXXXXXXXX`.
    pub fn masked(&self) -> String {
        self.render(Some(PASSWORD_MASK))
    }

    /// The URI without its password, for storage next to the sealed password.
    pub fn without_password(&self) -> String {
        self.render(None)
    }

    fn render(&self, password: Option<&str>) -> String {
        if let Some(path) = &self.path {
            return format!(
                "{}:///{}",
                self.scheme,
                encode_path(&path.to_string_lossy())
            );
        }
        let mut out = format!("{}://", self.scheme);
        if let Some(user) = &self.username {
            out.push_str(&encode(user));
            if let (Some(_), Some(shown)) = (&self.password, password) {
                out.push(':');
                out.push_str(shown);
            }
            out.push('@');
        }
        if let Some(host) = &self.host {
            if host.contains(':') {
                out.push_str(&format!("[{host}]"));
            } else {
                out.push_str(host);
            }
        }
        if let Some(port) = self.port {
            out.push_str(&format!(":{port}"));
        }
        out.push('/');
        if let Some(db) = &self.database {
            out.push_str(&encode(db));
        }
        if !self.options.is_empty() {
            let q: Vec<String> = self
                .options
                .iter()
                .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
                .collect();
            out.push('?');
            out.push_str(&q.join("&"));
        }
        out
    }
}

impl fmt::Display for ConnectionUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.masked())
    }
}

impl fmt::Debug for ConnectionUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConnectionUri({})", self.masked())
    }
}

/// One engine's connection form (Superset's `BasicParametersMixin` on the engine's spec).
#[derive(Clone, Copy, Debug)]
struct Form {
    engine: Engine,
    /// `dialect+driver` of the URI the form builds (`{engine}+{default_driver}`).
    scheme: &'static str,
    /// The query option the form's "SSL" switch adds (`encryption_parameters`).
    encryption: (&'static str, &'static str),
    /// Whether `port` and `database` are required (`BasicParametersSchema`) or may be left
    /// out (`ClickHouseParametersSchema`).
    required: bool,
}

/// The connection forms, by the `engine` names Superset's `/database/available/` gives.
fn form(engine: &str) -> Option<Form> {
    let (engine, scheme, encryption, required) = match engine {
        "postgresql" | "postgres" => (
            Engine::Postgres,
            "postgresql+psycopg2",
            ("sslmode", "require"),
            true,
        ),
        "clickhousedb" => (
            Engine::ClickHouse,
            "clickhousedb+connect",
            ("secure", "true"),
            false,
        ),
        "mysql" => (Engine::MySql, "mysql+mysqldb", ("ssl", "1"), true),
        "mariadb" => (Engine::MySql, "mariadb+mysqldb", ("ssl", "1"), true),
        _ => return None,
    };
    Some(Form {
        engine,
        scheme,
        encryption,
        required,
    })
}

/// The database name clickhouse-connect's form writes when none is given (its
/// `build_sqlalchemy_uri`): the server's default database.
pub const CLICKHOUSE_DEFAULT_DATABASE: &str = "__default__";

/// Why connection-form parameters do not make a URI: marshmallow-style messages by field
/// (Superset's `BasicParametersSchema`), or an engine without a form.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ParametersError {
    /// Field errors, `{"port": ["Not a valid integer."]}`.
    #[error("invalid connection parameters: {0}")]
    Fields(serde_json::Value),
    /// The engine has no connection form.
    #[error(
        "Engine spec \"InvalidEngine\" does not support being configured via individual parameters."
    )]
    Engine,
}

impl ConnectionUri {
    /// The URI Superset's connection form describes (`BasicParametersMixin.build_sqlalchemy_uri`
    /// after `BasicParametersSchema` loaded the fields): `postgresql+psycopg2://user:password@
    /// host:port/database?options`, options sorted by name, `sslmode=require` with `encryption`.
    pub fn from_parameters(
        engine: &str,
        params: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<ConnectionUri, ParametersError> {
        use serde_json::{Value, json};
        let form = form(engine).ok_or(ParametersError::Engine)?;
        let mut errors = serde_json::Map::new();
        let mut text = |key: &str, required: bool, nullable: bool| -> Option<String> {
            match params.get(key) {
                None if required => {
                    errors.insert(key.into(), json!(["Missing data for required field."]));
                    None
                }
                None => None,
                Some(Value::Null) if nullable => None,
                Some(Value::Null) => {
                    errors.insert(key.into(), json!(["Field may not be null."]));
                    None
                }
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    errors.insert(key.into(), json!(["Not a valid string."]));
                    None
                }
            }
        };
        let username = text("username", form.required, true);
        let password = text("password", false, true);
        let host = text("host", true, false);
        let database = text("database", form.required, !form.required)
            .filter(|d| form.required || !d.is_empty());
        // marshmallow's Integer takes 5432 and "5432".
        let port = match params.get("port") {
            None | Some(Value::Null) if !form.required => None,
            None => {
                errors.insert("port".into(), json!(["Missing data for required field."]));
                None
            }
            Some(v) => match form_port(v) {
                Some(p) if (0..65536).contains(&p) => Some(p as u16),
                Some(_) => {
                    errors.insert(
                        "port".into(),
                        json!(["Must be greater than or equal to 0 and less than 65536."]),
                    );
                    None
                }
                None => {
                    errors.insert("port".into(), json!(["Not a valid integer."]));
                    None
                }
            },
        };
        let mut options: Vec<(String, String)> = Vec::new();
        match params.get("query") {
            None | Some(Value::Null) => {}
            Some(Value::Object(q)) => {
                for (k, v) in q {
                    match v {
                        Value::String(v) => options.push((k.clone(), v.clone())),
                        _ => {
                            errors.insert("query".into(), json!({k: ["Not a valid string."]}));
                        }
                    }
                }
            }
            Some(_) => {
                errors.insert("query".into(), json!(["Not a valid mapping type."]));
            }
        }
        let encryption = match params.get("encryption") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                errors.insert("encryption".into(), json!(["Not a valid boolean."]));
                false
            }
        };
        for key in params.keys() {
            if !matches!(
                key.as_str(),
                "username"
                    | "password"
                    | "host"
                    | "port"
                    | "database"
                    | "query"
                    | "encryption"
                    | "ssh"
            ) {
                errors.insert(key.clone(), json!(["Unknown field."]));
            }
        }
        if !errors.is_empty() {
            return Err(ParametersError::Fields(Value::Object(errors)));
        }
        if encryption {
            options.retain(|(k, _)| k != form.encryption.0);
            options.push((form.encryption.0.into(), form.encryption.1.into()));
        }
        options.sort();
        let database = match (form.engine, database) {
            (Engine::ClickHouse, None) => Some(CLICKHOUSE_DEFAULT_DATABASE.to_owned()),
            (_, database) => database,
        };
        Ok(ConnectionUri {
            engine: form.engine,
            driver: form.scheme.split_once('+').map(|(_, d)| d.to_owned()),
            username: username.filter(|u| !u.is_empty()),
            password,
            host: host.map(|h| h.trim_matches(['[', ']']).to_owned()),
            port,
            database,
            path: None,
            options,
            scheme: form.scheme.into(),
        })
    }

    /// The connection form's fields of this URI (Superset's `get_parameters_from_uri`), the
    /// password as the mask when `has_password`; empty for an engine without a form.
    pub fn parameters(&self, has_password: bool) -> serde_json::Value {
        let dialect = self.scheme.split('+').next().unwrap_or_default();
        let Some(form) = form(dialect).filter(|f| f.engine == self.engine) else {
            return serde_json::json!({});
        };
        let encryption = self
            .options
            .iter()
            .any(|(k, v)| (k.as_str(), v.as_str()) == form.encryption);
        let database = match self.database.as_deref() {
            Some(CLICKHOUSE_DEFAULT_DATABASE) if self.engine == Engine::ClickHouse => Some(""),
            other => other,
        };
        let query: serde_json::Map<String, serde_json::Value> = self
            .options
            .iter()
            .filter(|(k, v)| (k.as_str(), v.as_str()) != form.encryption)
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        serde_json::json!({
            "username": self.username,
            "password": has_password.then_some(PASSWORD_MASK),
            "host": self.host,
            "port": self.port,
            "database": database,
            "query": query,
            "encryption": encryption,
        })
    }
}

/// A connection form's port as marshmallow's `Integer` reads it: `5432` or `"5432"`.
pub fn form_port(v: &serde_json::Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Characters kept literal in user names, passwords, database names and options.
const COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, COMPONENT).to_string()
}

/// [`COMPONENT`] plus `/`, for SQLite file paths.
const PATH: &percent_encoding::AsciiSet = &COMPONENT.remove(b'/');

fn encode_path(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, PATH).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_uri_with_driver_and_options_parses() {
        let u = ConnectionUri::parse(
            "postgresql+psycopg2://ana:p%40ss%3Aw@db.example:5433/analytics?sslmode=require",
        )
        .unwrap();
        assert_eq!(u.engine, Engine::Postgres);
        assert_eq!(u.driver.as_deref(), Some("psycopg2"));
        assert_eq!(u.username.as_deref(), Some("ana"));
        assert_eq!(u.password.as_deref(), Some("p@ss:w"));
        assert_eq!(u.host.as_deref(), Some("db.example"));
        assert_eq!(u.port, Some(5433));
        assert_eq!(u.database.as_deref(), Some("analytics"));
        assert_eq!(u.options, vec![("sslmode".into(), "require".into())]);
        assert_eq!(
            u.masked(),
            "postgresql+psycopg2://ana:XXXXXXXXXX@db.example:5433/analytics?sslmode=require"
        );
        assert_eq!(
            u.without_password(),
            "postgresql+psycopg2://ana@db.example:5433/analytics?sslmode=require"
        );
        assert!(!format!("{u:?}").contains("p@ss"));
    }

    #[test]
    fn postgres_alias_and_missing_parts() {
        let u = ConnectionUri::parse("postgres://localhost/x").unwrap();
        assert_eq!(u.engine, Engine::Postgres);
        assert_eq!((&u.username, &u.password, u.port), (&None, &None, None));
        assert_eq!(u.masked(), "postgres://localhost/x");
        assert_eq!(
            ConnectionUri::parse("postgresql://u:p@h:5432/"),
            Err(UriError::PostgresWithoutDatabase)
        );
    }

    #[test]
    fn sqlite_paths_follow_sqlalchemy() {
        let rel = ConnectionUri::parse("sqlite:///examples.db").unwrap();
        assert_eq!(rel.path, Some(PathBuf::from("examples.db")));
        let abs = ConnectionUri::parse("sqlite:////var/lib/x.db").unwrap();
        assert_eq!(abs.path, Some(PathBuf::from("/var/lib/x.db")));
        assert_eq!(abs.masked(), "sqlite:////var/lib/x.db");
        assert_eq!(
            ConnectionUri::parse("sqlite://"),
            Err(UriError::SqliteWithoutPath)
        );
        assert_eq!(
            ConnectionUri::parse("sqlite:///:memory:"),
            Err(UriError::SqliteWithoutPath)
        );
    }

    fn params(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn connection_form_parameters_build_superset_uris() {
        let u = ConnectionUri::from_parameters(
            "postgresql",
            &params(serde_json::json!({"host": "db.example.com", "port": "5432",
                "database": "examples", "username": "u", "password": "p@ss:w/rd",
                "query": {"sslmode": "disable", "application_name": "x"}, "encryption": true})),
        )
        .unwrap();
        assert_eq!(u.password.as_deref(), Some("p@ss:w/rd"));
        assert_eq!(
            u.masked(),
            "postgresql+psycopg2://u:XXXXXXXXXX@db.example.com:5432/examples?application_name=x&sslmode=require"
        );
        assert_eq!(
            u.parameters(true),
            serde_json::json!({"username": "u", "password": "XXXXXXXXXX", "host": "db.example.com",
                "port": 5432, "database": "examples", "query": {"application_name": "x"},
                "encryption": true})
        );
        // Parsed back from storage, the same fields.
        let stored = ConnectionUri::parse(&u.without_password()).unwrap();
        assert_eq!(stored.parameters(true), u.parameters(true));
        let bare = ConnectionUri::from_parameters(
            "postgresql",
            &params(
                serde_json::json!({"host": "h", "port": 5433, "database": "d", "username": null}),
            ),
        )
        .unwrap();
        assert_eq!(bare.masked(), "postgresql+psycopg2://h:5433/d");
    }

    #[test]
    fn clickhouse_and_mysql_uris_parse_as_superset_spells_them() {
        for (uri, engine, backend, port, database, default_schema) in [
            (
                "clickhousedb://u:p@h/sales",
                Engine::ClickHouse,
                "clickhousedb",
                8123,
                Some("sales"),
                "sales",
            ),
            (
                "clickhousedb+connect://h:8443/__default__?secure=true",
                Engine::ClickHouse,
                "clickhousedb",
                8443,
                Some("__default__"),
                "default",
            ),
            (
                "clickhouse+http://u@h:8124/",
                Engine::ClickHouse,
                "clickhouse",
                8124,
                None,
                "default",
            ),
            (
                "clickhouse://u@h",
                Engine::ClickHouse,
                "clickhouse",
                8123,
                None,
                "default",
            ),
            (
                "mysql://u:p@h/shop",
                Engine::MySql,
                "mysql",
                3306,
                Some("shop"),
                "shop",
            ),
            (
                "mysql+pymysql://u:p@h:3307/shop?charset=utf8mb4",
                Engine::MySql,
                "mysql",
                3307,
                Some("shop"),
                "shop",
            ),
            (
                "mysql+mysqldb://u@h",
                Engine::MySql,
                "mysql",
                3306,
                None,
                "",
            ),
            (
                "mariadb://u:p@h/shop",
                Engine::MySql,
                "mariadb",
                3306,
                Some("shop"),
                "shop",
            ),
        ] {
            let u = ConnectionUri::parse(uri).unwrap();
            assert_eq!(u.engine, engine, "{uri}");
            assert_eq!(u.backend(), backend, "{uri}");
            assert_eq!(u.port.or(u.engine.default_port()), Some(port), "{uri}");
            assert_eq!(u.database.as_deref(), database, "{uri}");
            assert_eq!(u.default_schema(), default_schema, "{uri}");
            assert!(!format!("{u:?}").contains(":p@"), "{uri}");
        }
        // The mask only stands in for the same account, default ports included.
        let stored = ConnectionUri::parse("mysql://u:secret@h/shop").unwrap();
        let mut same = ConnectionUri::parse("mysql://u:XXXXXXXXXX@h:3306/other").unwrap();
        same.unmask(&stored).unwrap();
        assert_eq!(same.password.as_deref(), Some("secret"));
        let mut other = ConnectionUri::parse("mysql://u:XXXXXXXXXX@h:3307/shop").unwrap();
        assert_eq!(other.unmask(&stored), Err(UriError::MaskForOtherAccount));
    }

    #[test]
    fn clickhouse_and_mysql_forms_build_their_specs_uris() {
        let ch = ConnectionUri::from_parameters(
            "clickhousedb",
            &params(serde_json::json!({"host": "ch.example", "encryption": true})),
        )
        .unwrap();
        assert_eq!(ch.engine, Engine::ClickHouse);
        assert_eq!(
            ch.masked(),
            "clickhousedb+connect://ch.example/__default__?secure=true"
        );
        assert_eq!(
            ch.parameters(false),
            serde_json::json!({"username": null, "password": null, "host": "ch.example",
                "port": null, "database": "", "query": {}, "encryption": true})
        );
        let my = ConnectionUri::from_parameters(
            "mariadb",
            &params(
                serde_json::json!({"host": "h", "port": 3306, "database": "shop",
                "username": "u", "password": "pw", "encryption": true}),
            ),
        )
        .unwrap();
        assert_eq!(my.engine, Engine::MySql);
        assert_eq!(
            my.masked(),
            "mariadb+mysqldb://u:XXXXXXXXXX@h:3306/shop?ssl=1"
        );
        let stored = ConnectionUri::parse(&my.without_password()).unwrap();
        assert_eq!(stored.parameters(false)["encryption"], true);
        // MySQL's form is the basic one: port and database required.
        assert!(matches!(
            ConnectionUri::from_parameters("mysql", &params(serde_json::json!({"host": "h"}))),
            Err(ParametersError::Fields(_))
        ));
    }

    #[test]
    fn bad_connection_form_parameters_name_their_fields() {
        let err =
            |v: serde_json::Value| match ConnectionUri::from_parameters("postgresql", &params(v)) {
                Err(ParametersError::Fields(f)) => f,
                other => panic!("{other:?}"),
            };
        assert_eq!(
            err(serde_json::json!({"host": "h", "port": 1})),
            serde_json::json!({"username": ["Missing data for required field."],
                               "database": ["Missing data for required field."]})
        );
        assert_eq!(
            err(serde_json::json!({"host": "h", "port": "x", "database": "d", "username": "u"})),
            serde_json::json!({"port": ["Not a valid integer."]})
        );
        assert_eq!(
            err(
                serde_json::json!({"host": "h", "port": 70000, "database": "d", "username": "u", "catalog": 1})
            ),
            serde_json::json!({"port": ["Must be greater than or equal to 0 and less than 65536."],
                               "catalog": ["Unknown field."]})
        );
        assert_eq!(
            ConnectionUri::from_parameters("sqlite", &params(serde_json::json!({}))),
            Err(ParametersError::Engine)
        );
    }

    #[test]
    fn other_engines_are_refused_naming_the_supported_ones() {
        for uri in [
            "mssql+pyodbc://u:p@h/db",
            "clickhouse+native://u:p@h/db",
            "oracle://u@h/db",
        ] {
            let err = ConnectionUri::parse(uri).unwrap_err();
            assert!(err.to_string().contains("postgresql://"), "{err}");
            assert!(err.to_string().contains("clickhousedb://"), "{err}");
            assert!(err.to_string().contains("mariadb://"), "{err}");
        }
        assert_eq!(ConnectionUri::parse("not a uri"), Err(UriError::Malformed));
        assert_eq!(ConnectionUri::parse(""), Err(UriError::Malformed));
    }
}
