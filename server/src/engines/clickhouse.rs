//! ClickHouse over its HTTP interface: connection, catalog queries, dialect (quoting, literals,
//! time grains), type names, cancellation and error mapping.
//!
//! Every statement is one HTTP POST with a fresh `query_id` (a uuid), the credentials in the
//! `X-ClickHouse-User`/`X-ClickHouse-Key` headers (never in the URL, which proxies and the
//! server log), and the settings `max_execution_time` and, for read-only work, `readonly=1` as
//! URL parameters. `readonly=1` makes the server itself refuse writes, DDL, `SET` and a
//! query's own `SETTINGS` clause (so `SETTINGS readonly=0` cannot lift it), and on 18.16 every
//! table function.
//!
//! Results are read as `TabSeparatedWithNamesAndTypes`, which every release since 1.1 speaks
//! and which streams row by row: rows are decoded as chunks arrive, charged against the
//! result budget, and reading stops at `max_rows` or past the budget.
//!
//! **Cancellation:** ClickHouse 18.16 does not cancel an HTTP query when the client hangs up,
//! so a [`Flight`] guard is armed for every statement: dropped before the server finished
//! answering (the caller's future was dropped: client gone, `/api/v1/query/stop`, the
//! statement deadline; or reading stopped early), it sends `KILL QUERY WHERE query_id = …` on
//! its own short-timeout request.
//!
//! The SQL written here (catalog queries, time grains, literals) is accepted by both 18.16 and
//! current releases: no query parameters (`{name:Type}` came in 19.x), no `ILIKE`, no
//! `toDateTime64`, no `toStartOfFiveMinutes`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::{
    Budget, Cell, ColumnInfo, EngineError, EngineOptions, ExecOptions, GenericType, PrimaryKey,
    ResultColumn, ResultSet, TableEntry, TableKind, TableMetadata, TimeGrain,
};
use crate::uri::{ConnectionUri, Engine};

/// ClickHouse's HTTP port.
const DEFAULT_PORT: u16 = 8123;
/// The result format: streams row by row and carries names and types (since 1.1).
const FORMAT: &str = "TabSeparatedWithNamesAndTypes";
/// How long a `KILL QUERY` may take before we give up on it.
const KILL_TIMEOUT: Duration = Duration::from_secs(5);
/// Databases that are the server's own, never listed as schemas.
const SYSTEM_DATABASES: &[&str] = &["system", "INFORMATION_SCHEMA", "information_schema"];

/// A bounded set of concurrent queries against one ClickHouse database.
#[derive(Clone)]
pub(crate) struct ChPool {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    target: Target,
    /// One permit per concurrent query (`pool_size`).
    permits: Arc<Semaphore>,
    pool_wait: Duration,
    statement_timeout: Duration,
    max_result_bytes: usize,
}

/// Where and as whom to connect. The password lives only here, in memory; `Debug` is not
/// derived so it can never be printed.
#[derive(Clone)]
struct Target {
    /// `http://host:port/` or `https://…`.
    base: String,
    host: String,
    port: u16,
    user: String,
    password: Option<String>,
    /// The URI's database; `None` uses the user's default (clickhouse-connect's `__default__`).
    database: Option<String>,
}

impl Target {
    fn new(uri: &ConnectionUri) -> Result<Target, EngineError> {
        let mut https = matches!(uri.driver.as_deref(), Some("https"));
        for (key, value) in &uri.options {
            let v = value.to_ascii_lowercase();
            match key.as_str() {
                // clickhouse-connect's spellings (Superset's `encryption_parameters`).
                "secure" => https = matches!(v.as_str(), "true" | "1" | "yes"),
                "protocol" | "interface" => https = v == "https",
                _ => tracing::debug!(option = %key, "ignored ClickHouse connection option"),
            }
        }
        let host = uri.host.clone().unwrap_or_else(|| "localhost".to_owned());
        let port = uri.port.unwrap_or(if https { 8443 } else { DEFAULT_PORT });
        let shown_host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let scheme = if https { "https" } else { "http" };
        Ok(Target {
            base: format!("{scheme}://{shown_host}:{port}/"),
            host,
            port,
            user: uri.username.clone().unwrap_or_else(|| "default".to_owned()),
            password: uri.password.clone(),
            database: uri
                .database
                .clone()
                .filter(|d| !d.is_empty() && d != "__default__"),
        })
    }
}

fn client(options: &EngineOptions) -> Result<reqwest::Client, EngineError> {
    reqwest::Client::builder()
        .connect_timeout(options.connect_timeout)
        .pool_max_idle_per_host(options.pool_size.max(1) as usize)
        .pool_idle_timeout(Duration::from_secs(60))
        // Never follow a redirect: the credentials headers would go along.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| EngineError::other(format!("could not build the HTTP client: {e}")))
}

/// A lazily connecting pool (no connection is opened until first use).
pub(crate) fn build_pool(
    uri: &ConnectionUri,
    options: &EngineOptions,
) -> Result<ChPool, EngineError> {
    Ok(ChPool {
        inner: Arc::new(Inner {
            client: client(options)?,
            target: Target::new(uri)?,
            permits: Arc::new(Semaphore::new(options.pool_size.max(1) as usize)),
            pool_wait: options.pool_wait,
            statement_timeout: options.statement_timeout,
            max_result_bytes: options.max_result_bytes,
        }),
    })
}

/// One statement to send.
struct Request<'a> {
    sql: &'a str,
    read_only: bool,
    max_rows: usize,
    /// Append `FORMAT …` (queries); otherwise the format is only the default one.
    with_format: bool,
}

impl Inner {
    /// Sends `req` and reads its rows. The returned flight is disarmed once the whole answer
    /// was read; the caller drops it (killing the query) otherwise.
    async fn run(&self, req: Request<'_>) -> Result<ResultSet, EngineError> {
        let _permit = tokio::time::timeout(self.pool_wait, self.permits.clone().acquire_owned())
            .await
            .map_err(|_| EngineError::PoolTimeout)?
            .map_err(|_| EngineError::PoolTimeout)?;
        let query_id = uuid::Uuid::new_v4().to_string();
        let mut flight = Flight {
            client: self.client.clone(),
            target: self.target.clone(),
            query_id: query_id.clone(),
            armed: true,
        };
        let out = self.send_and_read(&req, &query_id, &mut flight).await;
        if flight.armed {
            // Reading stopped early (row limit, budget, error mid-stream): stop the query now
            // rather than leave it running until its own deadline. Still armed meanwhile, so
            // a caller dropped during the KILL sends another.
            kill(&self.client, &self.target, &query_id).await;
            flight.armed = false;
        }
        out
    }

    async fn send_and_read(
        &self,
        req: &Request<'_>,
        query_id: &str,
        flight: &mut Flight,
    ) -> Result<ResultSet, EngineError> {
        let mut params: Vec<(&str, String)> = vec![
            ("query_id", query_id.to_owned()),
            ("default_format", FORMAT.to_owned()),
        ];
        if let Some(db) = &self.target.database {
            params.push(("database", db.clone()));
        }
        if !self.statement_timeout.is_zero() {
            // Whole seconds (18.16's type); rounded up so the server never fires first on a
            // sub-second deadline the client-side timer is meant to enforce.
            let secs = self.statement_timeout.as_millis().div_ceil(1000).max(1);
            params.push(("max_execution_time", secs.to_string()));
        }
        if req.read_only {
            params.push(("readonly", "1".to_owned()));
        }
        // A newline first, so a trailing `--` comment cannot swallow the clause; a query that
        // has its own FORMAT clause then fails to parse instead of changing the format we read.
        let body = if req.with_format {
            format!("{}\nFORMAT {FORMAT}", req.sql)
        } else {
            req.sql.to_owned()
        };
        let mut resp = match send(&self.client, &self.target, &params, body).await {
            Ok(resp) => resp,
            Err(e) => {
                // Never connected: nothing runs on the server, and a KILL would only wait
                // for the same unreachable host.
                if e.is_connection_error() {
                    flight.armed = false;
                }
                return Err(e);
            }
        };
        let status = resp.status();
        if !status.is_success() {
            let text = read_capped(&mut resp, 64 * 1024).await;
            flight.armed = false;
            return Err(map_server_error(&text, &self.target));
        }
        let mut reader = TsvReader::new(Budget::new(self.max_result_bytes), req.max_rows);
        loop {
            let chunk = resp
                .chunk()
                .await
                .map_err(|e| map_http_error(&e, &self.target))?;
            let Some(chunk) = chunk else { break };
            if reader.feed(&chunk)? {
                // Enough rows: stop reading; the caller kills the rest.
                return reader.finish_early();
            }
        }
        flight.armed = false;
        reader.finish()
    }
}

/// Posts `body` with `params` in the URL and the credentials in headers.
async fn send(
    client: &reqwest::Client,
    target: &Target,
    params: &[(&str, String)],
    body: String,
) -> Result<reqwest::Response, EngineError> {
    let mut request = client
        .post(&target.base)
        .query(params)
        .header("X-ClickHouse-User", &target.user)
        .body(body);
    if let Some(password) = &target.password {
        request = request.header("X-ClickHouse-Key", password);
    }
    request.send().await.map_err(|e| map_http_error(&e, target))
}

/// At most `cap` bytes of an (error) body, as text.
async fn read_capped(resp: &mut reqwest::Response, cap: usize) -> String {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        out.extend_from_slice(&chunk);
        if out.len() >= cap {
            out.truncate(cap);
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `KILL QUERY` for `query_id`, on its own request with a short timeout. Best effort: a query
/// that already ended is simply not found.
async fn kill(client: &reqwest::Client, target: &Target, query_id: &str) {
    // A uuid we made ourselves: nothing in it needs escaping, but quote it properly anyway.
    let sql = format!("KILL QUERY WHERE query_id = {}", string(query_id));
    let params = [
        ("query_id", uuid::Uuid::new_v4().to_string()),
        ("default_format", "TabSeparated".to_owned()),
    ];
    let attempt = async {
        let mut resp = send(client, target, &params, sql).await?;
        let status = resp.status();
        let text = read_capped(&mut resp, 4096).await;
        if status.is_success() {
            Ok(())
        } else {
            Err(map_server_error(&text, target))
        }
    };
    match tokio::time::timeout(KILL_TIMEOUT, attempt).await {
        Ok(Ok(())) => tracing::debug!(query_id, "abandoned query killed in ClickHouse"),
        Ok(Err(e)) => tracing::warn!(query_id, error = %e, "could not kill an abandoned query"),
        Err(_) => tracing::warn!(query_id, "KILL QUERY timed out"),
    }
}

/// A statement the server may still be running. Dropped while armed (the caller's future was
/// dropped mid-statement), it kills the query on a spawned task: ClickHouse 18.16 keeps
/// running an HTTP query whose client went away.
struct Flight {
    client: reqwest::Client,
    target: Target,
    query_id: String,
    armed: bool,
}

impl Drop for Flight {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let target = self.target.clone();
        let query_id = std::mem::take(&mut self.query_id);
        rt.spawn(async move { kill(&client, &target, &query_id).await });
    }
}

/// Decodes `TabSeparatedWithNamesAndTypes` incrementally.
struct TsvReader {
    pending: Vec<u8>,
    names: Option<Vec<String>>,
    types: Option<Vec<ChType>>,
    type_names: Vec<String>,
    rows: Vec<Vec<Cell>>,
    budget: Budget,
    max_rows: usize,
    /// A line that looked like a server exception (`Code: …`) arrived after the header:
    /// ClickHouse writes an error into the body when it fails after the answer started.
    trailing_error: Option<String>,
}

impl TsvReader {
    fn new(budget: Budget, max_rows: usize) -> TsvReader {
        TsvReader {
            pending: Vec::new(),
            names: None,
            types: None,
            type_names: Vec::new(),
            rows: Vec::new(),
            budget,
            max_rows,
            trailing_error: None,
        }
    }

    /// Takes a chunk; `Ok(true)` once `max_rows` rows are read (stop reading).
    fn feed(&mut self, chunk: &[u8]) -> Result<bool, EngineError> {
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(pos) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let line = self.pending[start..end].to_vec();
            start = end + 1;
            if self.line(&line)? {
                self.pending.drain(..start);
                return Ok(true);
            }
        }
        self.pending.drain(..start);
        // A partial line longer than the whole budget can never fit: refuse before buffering
        // the rest of it.
        let limit = self.budget.limit;
        if limit > 0 && self.pending.len() > limit {
            return Err(EngineError::ResultTooLarge { limit });
        }
        Ok(false)
    }

    /// One line; `Ok(true)` when `max_rows` is reached.
    fn line(&mut self, line: &[u8]) -> Result<bool, EngineError> {
        let text = String::from_utf8_lossy(line);
        if self.names.is_none() {
            if looks_like_exception(&text) {
                self.trailing_error = Some(text.into_owned());
                return Ok(false);
            }
            self.names = Some(
                split_fields(&text)
                    .into_iter()
                    .map(|f| unescape(&f))
                    .collect(),
            );
            return Ok(false);
        }
        if self.types.is_none() {
            let names: Vec<String> = split_fields(&text)
                .into_iter()
                .map(|f| unescape(&f))
                .collect();
            self.types = Some(names.iter().map(|t| ChType::parse(t)).collect());
            self.type_names = names;
            return Ok(false);
        }
        if self.trailing_error.is_some() {
            return Ok(false);
        }
        let fields = split_fields(&text);
        let width = self.type_names.len();
        if fields.len() != width || (looks_like_exception(&text) && width <= 1) {
            if looks_like_exception(&text) {
                self.trailing_error = Some(text.into_owned());
                return Ok(false);
            }
            return Err(EngineError::other(format!(
                "ClickHouse sent a row of {} fields for {width} columns",
                fields.len()
            )));
        }
        if self.rows.len() >= self.max_rows {
            return Ok(true);
        }
        self.budget.charge(width, line.len())?;
        let types = self.types.as_deref().unwrap_or_default();
        let row = fields
            .iter()
            .zip(types)
            .map(|(f, t)| t.cell(f))
            .collect::<Vec<_>>();
        self.rows.push(row);
        Ok(false)
    }

    fn result(self) -> ResultSet {
        let names = self.names.unwrap_or_default();
        let columns = names
            .into_iter()
            .zip(
                self.type_names
                    .iter()
                    .cloned()
                    .chain(std::iter::repeat(String::new())),
            )
            .map(|(name, type_name)| ResultColumn { name, type_name })
            .collect();
        ResultSet {
            columns,
            rows: self.rows,
        }
    }

    /// The whole answer was read.
    fn finish(mut self) -> Result<ResultSet, EngineError> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.line(&rest)?;
        }
        if let Some(error) = self.trailing_error.take() {
            return Err(map_exception_text(&error, None));
        }
        Ok(self.result())
    }

    /// Reading stopped at `max_rows`.
    fn finish_early(self) -> Result<ResultSet, EngineError> {
        Ok(self.result())
    }
}

/// Whether a line is an exception ClickHouse wrote into a started answer.
fn looks_like_exception(text: &str) -> bool {
    text.starts_with("Code: ") && text.contains("DB::Exception")
}

/// Splits a TSV line at tabs (escaped tabs are `\t`, so every raw tab separates fields).
fn split_fields(line: &str) -> Vec<String> {
    line.split('\t').map(str::to_owned).collect()
}

/// TSV unescaping as ClickHouse writes it: `\t \n \r \\ \0 \' \b \f \a \v` and `\N` for NULL
/// (handled by the caller).
fn unescape(field: &str) -> String {
    if !field.contains('\\') {
        return field.to_owned();
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('a') => out.push('\u{7}'),
            Some('v') => out.push('\u{b}'),
            Some('e') => out.push('\u{1b}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// What a ClickHouse type decodes to.
#[derive(Clone, Debug, PartialEq)]
enum ChType {
    Int,
    /// UInt64: Superset configures clickhouse-connect to read it as signed (`"UInt64":
    /// "signed"`), so values past `i64::MAX` wrap as they do there.
    UInt64,
    Float,
    Decimal,
    Date,
    DateTime,
    Bool,
    /// Everything else (String, FixedString, UUID, Enum, Array, Tuple, Map, IPs, 128/256-bit
    /// integers, which Superset reads as strings) as its text.
    Text,
    /// FixedString: text without its padding NULs.
    FixedString,
}

impl ChType {
    fn parse(type_name: &str) -> ChType {
        let inner = strip_wrappers(type_name);
        let base = inner.split('(').next().unwrap_or_default();
        match base {
            "Int8" | "Int16" | "Int32" | "Int64" | "UInt8" | "UInt16" | "UInt32" => ChType::Int,
            "UInt64" => ChType::UInt64,
            "Float32" | "Float64" => ChType::Float,
            "Decimal" | "Decimal32" | "Decimal64" | "Decimal128" | "Decimal256" => ChType::Decimal,
            "Date" | "Date32" => ChType::Date,
            "DateTime" | "DateTime64" => ChType::DateTime,
            "Bool" | "Boolean" => ChType::Bool,
            "FixedString" => ChType::FixedString,
            _ => ChType::Text,
        }
    }

    fn cell(&self, raw: &str) -> Cell {
        if raw == "\\N" {
            return Cell::Null;
        }
        match self {
            ChType::Int => raw.parse().map(Cell::Int).unwrap_or_else(|_| text(raw)),
            ChType::UInt64 => match raw.parse::<u64>() {
                // Deliberate wrap: what Superset's driver gives for UInt64 past i64::MAX.
                Ok(v) => Cell::Int(v as i64),
                Err(_) => text(raw),
            },
            ChType::Float => match raw {
                "nan" | "-nan" => Cell::Float(f64::NAN),
                "inf" | "+inf" => Cell::Float(f64::INFINITY),
                "-inf" => Cell::Float(f64::NEG_INFINITY),
                _ => raw.parse().map(Cell::Float).unwrap_or_else(|_| text(raw)),
            },
            ChType::Decimal => Cell::Decimal(raw.to_owned()),
            ChType::Date => {
                if raw == "0000-00-00" {
                    return Cell::Date(
                        chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default(),
                    );
                }
                chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d")
                    .map(Cell::Date)
                    .unwrap_or_else(|_| text(raw))
            }
            ChType::DateTime => {
                if raw.starts_with("0000-00-00") {
                    return Cell::Timestamp(chrono::DateTime::UNIX_EPOCH.naive_utc());
                }
                chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%d %H:%M:%S%.f")
                    .map(Cell::Timestamp)
                    .unwrap_or_else(|_| text(raw))
            }
            ChType::Bool => match raw {
                "true" | "1" => Cell::Bool(true),
                "false" | "0" => Cell::Bool(false),
                _ => text(raw),
            },
            ChType::FixedString => Cell::Text(unescape(raw).trim_end_matches('\0').to_owned()),
            ChType::Text => text(raw),
        }
    }
}

fn text(raw: &str) -> Cell {
    Cell::Text(unescape(raw))
}

/// `T` of `Nullable(T)`, `LowCardinality(T)` and `LowCardinality(Nullable(T))`.
fn strip_wrappers(type_name: &str) -> &str {
    let mut t = type_name.trim();
    loop {
        let stripped = ["Nullable(", "LowCardinality(", "SimpleAggregateFunction("]
            .iter()
            .find_map(|p| t.strip_prefix(p).and_then(|r| r.strip_suffix(')')));
        match stripped {
            Some(inner) => t = inner.trim(),
            None => return t,
        }
    }
}

/// Superset's generic type of a ClickHouse type: `ClickHouseBaseEngineSpec.column_type_mappings`
/// (searched anywhere in the name, case-insensitively, first match wins), then the base
/// rules on the type without its `Nullable`/`LowCardinality` wrappers (`Float64` → numeric).
pub fn generic_type(type_name: &str) -> Option<GenericType> {
    let lower = type_name.to_ascii_lowercase();
    let has = |s: &str| lower.contains(s);
    let int_digits = {
        // `.*Int\d+.*`
        let b = lower.as_bytes();
        lower
            .match_indices("int")
            .any(|(i, _)| b.get(i + 3).is_some_and(u8::is_ascii_digit))
    };
    if has("enum") || has("array") || has("uuid") {
        Some(GenericType::String)
    } else if has("bool") {
        Some(GenericType::Boolean)
    } else if has("string") {
        Some(GenericType::String)
    } else if int_digits || has("decimal") {
        Some(GenericType::Numeric)
    } else if has("datetime") || has("date") {
        Some(GenericType::Temporal)
    } else {
        super::generic_type(strip_wrappers(type_name))
    }
}

/// A column typed by Superset's rules for ClickHouse.
fn column_info(
    name: String,
    type_name: String,
    nullable: bool,
    comment: Option<String>,
) -> ColumnInfo {
    ColumnInfo::for_engine(Engine::ClickHouse, name, type_name, nullable, comment)
}

/// Maps a transport failure (connect refused, DNS, timeout) to Superset's error kinds.
fn map_http_error(error: &reqwest::Error, target: &Target) -> EngineError {
    let host = target.host.clone();
    let port = target.port;
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind;
            match io.kind() {
                ErrorKind::ConnectionRefused => return EngineError::PortClosed { host, port },
                ErrorKind::TimedOut
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkUnreachable => {
                    return EngineError::HostDown { host, port };
                }
                _ => {}
            }
        }
        let text = cause.to_string();
        if [
            "dns error",
            "failed to lookup address",
            "Name or service not known",
            "No address associated",
            "Temporary failure in name resolution",
        ]
        .iter()
        .any(|d| text.contains(d))
        {
            return EngineError::InvalidHostname { host };
        }
        source = cause.source();
    }
    if error.is_timeout() || (error.is_connect() && error.to_string().contains("timed out")) {
        return EngineError::HostDown { host, port };
    }
    // reqwest's Display names the URL (scheme, host, port, query id): no credentials are in it.
    EngineError::other(format!("ClickHouse request failed: {error}"))
}

/// Maps ClickHouse's exception text (`Code: 60, e.displayText() = DB::Exception: …` in 18.16,
/// `Code: 60. DB::Exception: … (UNKNOWN_TABLE) (version …)` today) to an error kind.
fn map_server_error(text: &str, target: &Target) -> EngineError {
    map_exception_text(text, Some(target))
}

fn map_exception_text(text: &str, target: Option<&Target>) -> EngineError {
    let text = text.trim();
    let code: Option<u32> = text.strip_prefix("Code: ").and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    });
    let message = exception_message(text);
    let user = || target.map(|t| t.user.clone()).unwrap_or_default();
    match code {
        // WRONG_PASSWORD, REQUIRED_PASSWORD, AUTHENTICATION_FAILED (newer servers say this for
        // an unknown user too, deliberately).
        Some(193) | Some(516) => EngineError::InvalidPassword { username: user() },
        Some(194) => EngineError::PasswordRequired,
        Some(192) => EngineError::InvalidUsername { username: user() },
        Some(81) => {
            let name = between(&message, "Database ", " doesn't exist")
                .or_else(|| between(&message, "Database ", " does not exist"))
                .map(|d| d.trim_matches('`').to_owned());
            match (name, target.and_then(|t| t.database.clone())) {
                (Some(name), Some(own)) if name == own => {
                    EngineError::UnknownDatabase { database: own }
                }
                (Some(name), _) => EngineError::SchemaNotFound { schema: name },
                (None, Some(own)) => EngineError::UnknownDatabase { database: own },
                (None, None) => EngineError::other(message),
            }
        }
        Some(60) => match between(&message, "Table ", " doesn't exist")
            .or_else(|| between(&message, "Table ", " does not exist"))
        {
            Some(table) => EngineError::TableNotFound {
                table: table.trim_matches('`').to_owned(),
            },
            None => EngineError::other(message),
        },
        Some(62) if message.contains("Multi-statements are not allowed") => {
            EngineError::MultipleStatements
        }
        Some(62) => EngineError::Syntax { message },
        // TIMEOUT_EXCEEDED; QUERY_WAS_CANCELLED (our own KILL after the deadline).
        Some(159) | Some(394) => EngineError::StatementTimeout,
        Some(164) => {
            if message.contains("Table functions") {
                EngineError::Refused {
                    action: "a table function".to_owned(),
                }
            } else if message.contains("SET query") || message.contains("settings") {
                EngineError::Refused {
                    action: "changing settings".to_owned(),
                }
            } else {
                EngineError::NotReadOnly
            }
        }
        Some(358) => EngineError::Refused {
            action: "INTO OUTFILE".to_owned(),
        },
        _ => EngineError::other(message),
    }
}

/// The human part of an exception text.
fn exception_message(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let after = first
        .split_once("DB::Exception: ")
        .map(|(_, m)| m)
        .unwrap_or(first);
    let trimmed = after
        .split(", e.what() = ")
        .next()
        .unwrap_or(after)
        .split(" (version ")
        .next()
        .unwrap_or(after)
        .trim();
    trimmed.to_owned()
}

/// The text between `start` and `end` in `s`.
fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let to = s[from..].find(end)? + from;
    Some(&s[from..to])
}

/// A fresh client (no pooled connection) that runs `SELECT 1`.
pub(crate) async fn test_connection(
    uri: &ConnectionUri,
    options: &EngineOptions,
) -> Result<(), EngineError> {
    let inner = Inner {
        client: client(options)?,
        target: Target::new(uri)?,
        permits: Arc::new(Semaphore::new(1)),
        pool_wait: options.pool_wait,
        statement_timeout: options.connect_timeout,
        max_result_bytes: 1024 * 1024,
    };
    let attempt = inner.run(Request {
        sql: "SELECT 1",
        read_only: true,
        max_rows: 1,
        with_format: true,
    });
    tokio::time::timeout(options.connect_timeout + Duration::from_secs(2), attempt)
        .await
        .map_err(|_| EngineError::Timeout)?
        .map(|_| ())
}

/// A catalog query (read-only, small).
async fn catalog(pool: &ChPool, sql: &str) -> Result<ResultSet, EngineError> {
    pool.inner
        .run(Request {
            sql,
            read_only: true,
            max_rows: usize::MAX,
            with_format: true,
        })
        .await
}

fn text_at(row: &[Cell], i: usize) -> String {
    match row.get(i) {
        Some(Cell::Text(s)) | Some(Cell::Decimal(s)) => s.clone(),
        Some(Cell::Int(v)) => v.to_string(),
        _ => String::new(),
    }
}

/// Databases, sorted, without the server's own.
pub(crate) async fn schemas(pool: &ChPool) -> Result<Vec<String>, EngineError> {
    let excluded = SYSTEM_DATABASES
        .iter()
        .map(|d| string(d))
        .collect::<Vec<_>>()
        .join(", ");
    let rs = catalog(
        pool,
        &format!("SELECT name FROM system.databases WHERE name NOT IN ({excluded}) ORDER BY name"),
    )
    .await?;
    Ok(rs.rows.iter().map(|r| text_at(r, 0)).collect())
}

fn kind_of(engine: &str) -> TableKind {
    match engine {
        "View" | "LiveView" | "WindowView" => TableKind::View,
        "MaterializedView" => TableKind::MaterializedView,
        _ => TableKind::Table,
    }
}

/// Tables and views of `schema` (a database); a materialized view's hidden `.inner.` table is
/// left out.
pub(crate) async fn tables(pool: &ChPool, schema: &str) -> Result<Vec<TableEntry>, EngineError> {
    let rs = catalog(
        pool,
        &format!(
            "SELECT name, engine FROM system.tables \
             WHERE database = {} AND is_temporary = 0 AND NOT startsWith(name, '.inner') \
             ORDER BY name",
            string(schema)
        ),
    )
    .await?;
    Ok(rs
        .rows
        .iter()
        .map(|r| TableEntry {
            name: text_at(r, 0),
            kind: kind_of(&text_at(r, 1)),
        })
        .collect())
}

/// Columns (type, comment), kind and primary key of `schema.table` (`schema` `None`: the
/// connection's database).
pub(crate) async fn table_metadata(
    pool: &ChPool,
    schema: Option<&str>,
    table: &str,
) -> Result<TableMetadata, EngineError> {
    let db = match schema {
        Some(s) => string(s),
        None => match &pool.inner.target.database {
            Some(d) => string(d),
            None => "currentDatabase()".to_owned(),
        },
    };
    let found = catalog(
        pool,
        &format!(
            "SELECT database, engine FROM system.tables WHERE database = {db} AND name = {}",
            string(table)
        ),
    )
    .await?;
    let Some(row) = found.rows.first() else {
        return Err(EngineError::TableNotFound {
            table: table.to_owned(),
        });
    };
    let found_schema = text_at(row, 0);
    let kind = kind_of(&text_at(row, 1));
    let cols = catalog(
        pool,
        &format!(
            "SELECT name, type, comment, is_in_primary_key FROM system.columns \
             WHERE database = {} AND table = {}",
            string(&found_schema),
            string(table)
        ),
    )
    .await?;
    let mut columns = Vec::with_capacity(cols.rows.len());
    let mut key = Vec::new();
    for r in &cols.rows {
        let name = text_at(r, 0);
        let type_name = text_at(r, 1);
        let comment = Some(text_at(r, 2)).filter(|c| !c.is_empty());
        if matches!(r.get(3), Some(Cell::Int(1))) {
            key.push(name.clone());
        }
        let nullable =
            type_name.starts_with("Nullable(") || type_name.starts_with("LowCardinality(Nullable(");
        columns.push(column_info(name, type_name, nullable, comment));
    }
    Ok(TableMetadata {
        name: table.to_owned(),
        schema: Some(found_schema),
        kind,
        columns,
        primary_key: (!key.is_empty()).then_some(PrimaryKey {
            name: None,
            column_names: key,
        }),
        foreign_keys: Vec::new(),
        indexes: Vec::new(),
        comment: None,
    })
}

/// The first keyword of `sql` after whitespace and comments, upper-cased.
fn leading_keyword(sql: &str) -> String {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    if rest.starts_with('(') {
        return "(".to_owned();
    }
    rest.split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase()
}

/// Statements that return rows and accept a `FORMAT` clause.
fn returns_rows(sql: &str) -> bool {
    matches!(
        leading_keyword(sql).as_str(),
        "SELECT" | "WITH" | "(" | "SHOW" | "DESCRIBE" | "DESC" | "EXISTS" | "EXPLAIN"
    )
}

/// The result columns of one read-only query, found by `DESCRIBE TABLE (<sql>)` under
/// `readonly=1`: the server analyses the query without running it.
pub(crate) async fn query_columns(
    pool: &ChPool,
    sql: &str,
) -> Result<Vec<ColumnInfo>, EngineError> {
    if !matches!(leading_keyword(sql).as_str(), "SELECT" | "WITH" | "(") {
        return Err(EngineError::NotReadOnly);
    }
    let wrapped = format!("DESCRIBE TABLE (\n{sql}\n)");
    let rs = catalog(pool, &wrapped).await?;
    Ok(rs
        .rows
        .iter()
        .map(|r| column_info(text_at(r, 0), text_at(r, 1), true, None))
        .collect())
}

/// Runs one statement (see [`super::Engines::execute`]): with `readonly=1` when asked, reading
/// at most `max_rows` rows and at most the pool's result budget; killed inside ClickHouse when
/// the future is dropped or reading stops early.
pub(crate) async fn execute(
    pool: &ChPool,
    sql: &str,
    opts: ExecOptions,
) -> Result<ResultSet, EngineError> {
    pool.inner
        .run(Request {
            sql,
            read_only: opts.read_only,
            max_rows: opts.max_rows,
            with_format: returns_rows(sql),
        })
        .await
}

/// Superset's time grains for ClickHouse (`ClickHouseBaseEngineSpec._time_grain_expressions`,
/// which `clickhousedb` inherits), in its order. All accepted by 18.16.
pub(crate) const TIME_GRAINS: &[TimeGrain] = &[
    TimeGrain {
        duration: "PT1M",
        name: "Minute",
        template: "toStartOfMinute(toDateTime({col}))",
    },
    TimeGrain {
        duration: "PT5M",
        name: "5 minute",
        template: "toDateTime(intDiv(toUInt32(toDateTime({col})), 300)*300)",
    },
    TimeGrain {
        duration: "PT10M",
        name: "10 minute",
        template: "toDateTime(intDiv(toUInt32(toDateTime({col})), 600)*600)",
    },
    TimeGrain {
        duration: "PT15M",
        name: "15 minute",
        template: "toDateTime(intDiv(toUInt32(toDateTime({col})), 900)*900)",
    },
    TimeGrain {
        duration: "PT30M",
        name: "30 minute",
        template: "toDateTime(intDiv(toUInt32(toDateTime({col})), 1800)*1800)",
    },
    TimeGrain {
        duration: "PT1H",
        name: "Hour",
        template: "toStartOfHour(toDateTime({col}))",
    },
    TimeGrain {
        duration: "P1D",
        name: "Day",
        template: "toStartOfDay(toDateTime({col}))",
    },
    TimeGrain {
        duration: "P1W",
        name: "Week",
        template: "toMonday(toDateTime({col}))",
    },
    TimeGrain {
        duration: "P1M",
        name: "Month",
        template: "toStartOfMonth(toDateTime({col}))",
    },
    TimeGrain {
        duration: "P3M",
        name: "Quarter",
        template: "toStartOfQuarter(toDateTime({col}))",
    },
    TimeGrain {
        duration: "P1Y",
        name: "Year",
        template: "toStartOfYear(toDateTime({col}))",
    },
];

/// An identifier quoted for ClickHouse: double quotes (both 18.16 and current releases read
/// them), with backslashes and quotes backslash-escaped, because ClickHouse's lexer reads
/// escapes inside quoted identifiers too (`"a\"` would not end where it seems to).
pub(crate) fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A string literal: ClickHouse reads backslash escapes in literals, so both `\` and `'` are
/// escaped.
pub(crate) fn string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Superset's `ClickHouseConnectEngineSpec._mutate_label`: `label_<first six hex digits of
/// md5(label)>`, so no alias shadows a column (see [`super::Dialect::label`]).
pub(crate) fn mutate_label(label: &str) -> String {
    use md5::Digest;
    let digest = md5::Md5::digest(label.as_bytes());
    let hex = hex::encode(digest.as_slice());
    format!("{label}_{}", &hex[..6])
}

/// A boolean literal: 18.16 has no Bool type; Superset's SQLAlchemy renders `1`/`0`.
pub(crate) fn boolean(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

/// `expr` as text, for LIKE on a non-text column.
pub(crate) fn cast_text(expr: &str) -> String {
    format!("toString({expr})")
}

/// Epoch milliseconds as a DateTime (whole seconds: 18.16 has no DateTime64).
pub(crate) fn from_epoch_ms(ms: f64) -> String {
    format!("toDateTime({})", (ms / 1000.0).floor() as i64)
}

/// A datetime literal for comparing with a column of type `type_name`: Superset's
/// `convert_dttm`, with `toDateTime` for anything it has no rule for (a DateTime comparison
/// with a Date column works in both directions).
pub(crate) fn datetime_literal(dt: chrono::NaiveDateTime, type_name: &str) -> String {
    convert_dttm(dt, type_name)
        .unwrap_or_else(|| format!("toDateTime('{}')", dt.format("%Y-%m-%d %H:%M:%S")))
}

/// Superset's `ClickHouseBaseEngineSpec.convert_dttm`: by the SQLAlchemy type the column
/// mappings give, `toDate('YYYY-MM-DD')` for dates, `toDateTime('YYYY-MM-DD HH:MM:SS')` for
/// datetimes (`.*DateTime.*` is tried before `.*Date.*`), nothing otherwise.
pub(crate) fn convert_dttm(dt: chrono::NaiveDateTime, target_type: &str) -> Option<String> {
    let lower = target_type.to_ascii_lowercase();
    // Earlier mappings (Enum, Array, UUID, Bool, String, Int, Decimal) win over the dates.
    if generic_type(target_type) != Some(GenericType::Temporal) {
        return None;
    }
    if lower.contains("datetime") {
        Some(format!("toDateTime('{}')", dt.format("%Y-%m-%d %H:%M:%S")))
    } else {
        Some(format!("toDate('{}')", dt.format("%Y-%m-%d")))
    }
}

/// Whether clickhouse-sqlalchemy quotes `ident`: it quotes none of ClickHouse's keywords
/// (ClickHouse has no reserved words that break a bare name in a select list), only names
/// that are not plain identifiers, which [`super::quote_ident`] already handles.
pub fn is_reserved(_ident: &str) -> bool {
    false
}

/// Functions and table functions always refused: they read or write outside the database
/// (files, URLs, object stores, other servers, other database engines, programs). `readonly=1`
/// blocks table functions on 18.16 but not on current releases, and not at all when a
/// database allows DML, so the list applies everywhere. `dictionary` is refused too: a
/// dictionary's source may be an HTTP endpoint, another database or an executable, and the
/// table function loads it. `merge`, `cluster`, `clusterAllReplicas` and `remote*` read tables
/// by pattern or through other servers, past the table-level access checks.
pub const REFUSED_FUNCTIONS: &[&str] = &[
    "file",
    "filecluster",
    "url",
    "urlcluster",
    "s3",
    "s3cluster",
    "gcs",
    "oss",
    "cosn",
    "hdfs",
    "hdfscluster",
    "remote",
    "remotesecure",
    "cluster",
    "clusterallreplicas",
    "merge",
    "mysql",
    "postgresql",
    "odbc",
    "jdbc",
    "executable",
    "executablepool",
    "input",
    "azureblobstorage",
    "azureblobstoragecluster",
    "mongodb",
    "redis",
    "sqlite",
    "dictionary",
    "deltalake",
    "hudi",
    "iceberg",
    "iceberg*",
];

/// The function names SQL Lab's editor autocompletes (a common subset of 18.16's
/// `system.functions`).
pub const FUNCTION_NAMES: &[&str] = &[
    "abs",
    "any",
    "argMax",
    "argMin",
    "avg",
    "coalesce",
    "concat",
    "count",
    "countIf",
    "formatDateTime",
    "groupArray",
    "if",
    "ifNull",
    "intDiv",
    "length",
    "lower",
    "max",
    "median",
    "min",
    "now",
    "quantile",
    "replaceAll",
    "round",
    "substring",
    "sum",
    "sumIf",
    "toDate",
    "toDateTime",
    "toFloat64",
    "toInt64",
    "toMonday",
    "toStartOfDay",
    "toStartOfHour",
    "toStartOfMinute",
    "toStartOfMonth",
    "toStartOfQuarter",
    "toStartOfYear",
    "toString",
    "today",
    "uniq",
    "uniqExact",
    "upper",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(s: &str) -> chrono::NaiveDateTime {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").expect("dt")
    }

    #[test]
    fn literals_and_identifiers_escape_backslashes() {
        assert_eq!(string("it's"), "'it\\'s'");
        assert_eq!(string("a\\'b"), "'a\\\\\\'b'");
        assert_eq!(quote("a\"b"), "\"a\\\"b\"");
        assert_eq!(quote("x\\"), "\"x\\\\\"");
        assert_eq!(boolean(true), "1");
        assert_eq!(cast_text("x"), "toString(x)");
        assert_eq!(from_epoch_ms(1_500_000_000_123.0), "toDateTime(1500000000)");
    }

    #[test]
    fn labels_are_mutated_as_superset_does() {
        // hashlib.md5(b"count").hexdigest()[:6] == "e2942a"
        assert_eq!(mutate_label("count"), "count_e2942a");
    }

    #[test]
    fn convert_dttm_matches_superset() {
        let d = dt("2024-03-05 06:07:08");
        assert_eq!(
            convert_dttm(d, "Date").as_deref(),
            Some("toDate('2024-03-05')")
        );
        assert_eq!(
            convert_dttm(d, "DateTime").as_deref(),
            Some("toDateTime('2024-03-05 06:07:08')")
        );
        assert_eq!(
            convert_dttm(d, "Nullable(DateTime('UTC'))").as_deref(),
            Some("toDateTime('2024-03-05 06:07:08')")
        );
        assert_eq!(convert_dttm(d, "UInt32"), None);
        assert_eq!(convert_dttm(d, "String"), None);
    }

    #[test]
    fn generic_types_follow_the_clickhouse_spec() {
        use GenericType::*;
        for (t, want) in [
            ("UInt64", Some(Numeric)),
            ("Nullable(Int32)", Some(Numeric)),
            ("Float64", Some(Numeric)),
            ("Nullable(Float32)", Some(Numeric)),
            ("Decimal(18, 2)", Some(Numeric)),
            ("String", Some(String)),
            ("LowCardinality(String)", Some(String)),
            ("FixedString(3)", Some(String)),
            ("Enum8('a' = 1)", Some(String)),
            ("Array(UInt8)", Some(String)),
            ("UUID", Some(String)),
            ("Date", Some(Temporal)),
            ("DateTime('Europe/Paris')", Some(Temporal)),
            ("Bool", Some(Boolean)),
        ] {
            assert_eq!(generic_type(t), want, "{t}");
        }
    }

    #[test]
    fn tsv_is_decoded_by_type() {
        let mut r = TsvReader::new(Budget::new(0), 10);
        let body = "a\tb\tc\td\te\tf\tg\th\n\
                    UInt64\tNullable(String)\tFloat64\tDate\tDateTime\tDecimal(9, 2)\tFixedString(3)\tArray(String)\n\
                    18446744073709551615\t\\N\tnan\t2024-01-02\t2024-01-02 03:04:05\t1.50\tab\\0\t['x\\'y']\n\
                    1\ta\\tb\\\\c\\nd\t2.5\t0000-00-00\t2024-01-02 03:04:05\t-0.10\tabc\t[]\n";
        assert!(!r.feed(body.as_bytes()).expect("feed"));
        let rs = r.finish().expect("finish");
        assert_eq!(rs.columns[1].type_name, "Nullable(String)");
        assert_eq!(rs.rows[0][0], Cell::Int(-1));
        assert_eq!(rs.rows[0][1], Cell::Null);
        assert!(matches!(rs.rows[0][2], Cell::Float(f) if f.is_nan()));
        assert_eq!(
            rs.rows[0][3],
            Cell::Date(chrono::NaiveDate::from_ymd_opt(2024, 1, 2).expect("date"))
        );
        assert_eq!(rs.rows[0][4], Cell::Timestamp(dt("2024-01-02 03:04:05")));
        assert_eq!(rs.rows[0][5], Cell::Decimal("1.50".into()));
        assert_eq!(rs.rows[0][6], Cell::Text("ab".into()));
        assert_eq!(rs.rows[0][7], Cell::Text("['x'y']".into()));
        assert_eq!(rs.rows[1][1], Cell::Text("a\tb\\c\nd".into()));
        assert_eq!(
            rs.rows[1][3],
            Cell::Date(chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("date"))
        );
    }

    #[test]
    fn tsv_stops_at_max_rows_and_budget() {
        let mut r = TsvReader::new(Budget::new(0), 2);
        let body = "n\nUInt8\n1\n2\n3\n4\n";
        assert!(r.feed(body.as_bytes()).expect("feed"));
        assert_eq!(r.finish_early().expect("rows").rows.len(), 2);
        let mut r = TsvReader::new(Budget::new(200), 1000);
        let long = format!("s\nString\n{}\n", "x".repeat(300));
        assert!(matches!(
            r.feed(long.as_bytes()),
            Err(EngineError::ResultTooLarge { limit: 200 })
        ));
    }

    #[test]
    fn exceptions_map_to_superset_errors() {
        let t = Target::new(&ConnectionUri::parse("clickhousedb://bob:pw@h:8123/db").expect("uri"))
            .expect("target");
        let e = |s: &str| map_server_error(s, &t);
        assert_eq!(
            e(
                "Code: 193, e.displayText() = DB::Exception: Wrong password for user bob, e.what() = DB::Exception"
            ),
            EngineError::InvalidPassword {
                username: "bob".into()
            }
        );
        assert_eq!(
            e(
                "Code: 60, e.displayText() = DB::Exception: Table default.nosuch doesn't exist., e.what() = DB::Exception"
            ),
            EngineError::TableNotFound {
                table: "default.nosuch".into()
            }
        );
        assert_eq!(
            e(
                "Code: 81. DB::Exception: Database db doesn't exist. (UNKNOWN_DATABASE) (version 24.1)"
            ),
            EngineError::UnknownDatabase {
                database: "db".into()
            }
        );
        assert_eq!(
            e(
                "Code: 62, e.displayText() = DB::Exception: Syntax error (Multi-statements are not allowed): failed at position 9, e.what() = DB::Exception"
            ),
            EngineError::MultipleStatements
        );
        assert_eq!(
            e(
                "Code: 159, e.displayText() = DB::Exception: Timeout exceeded: elapsed 1.0 seconds, e.what() = DB::Exception"
            ),
            EngineError::StatementTimeout
        );
        assert!(matches!(
            e(
                "Code: 164, e.displayText() = DB::Exception: Table functions are forbidden in readonly mode, e.what() = DB::Exception"
            ),
            EngineError::Refused { .. }
        ));
    }

    #[test]
    fn https_from_driver_or_options() {
        let t = |u: &str| {
            Target::new(&ConnectionUri::parse(u).expect("uri"))
                .expect("t")
                .base
        };
        assert_eq!(t("clickhousedb://u@h/db"), "http://h:8123/");
        assert_eq!(t("clickhousedb://u@h/db?secure=true"), "https://h:8443/");
        assert_eq!(t("clickhouse+https://u@h:9000/db"), "https://h:9000/");
        assert_eq!(t("clickhousedb://u@h:1/db?protocol=https"), "https://h:1/");
        let t = Target::new(
            &ConnectionUri::parse("clickhousedb+connect://u@h/__default__").expect("uri"),
        )
        .expect("t");
        assert_eq!(t.database, None);
    }
}
