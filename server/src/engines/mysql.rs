//! MySQL and MariaDB: connection settings, catalog queries, dialect (quoting, literals, time
//! grains), type names, cancellation and error mapping, over `mysql_async`.
//!
//! **Sessions are pinned and do not leak.** Every connection runs one `SET SESSION` (on
//! connect and again after every `COM_RESET_CONNECTION`): `sql_mode` without `ANSI_QUOTES`
//! (so `"…"` is a string, as MySQL users write metric SQL, and identifiers are quoted with
//! backticks) and without `NO_BACKSLASH_ESCAPES` (so [`string`]'s escaping is the one the
//! server reads), `time_zone='+00:00'` (TIMESTAMP values read the same whatever the server's
//! zone) and the statement timeout (`max_statement_time` in seconds on MariaDB,
//! `max_execution_time` in milliseconds on MySQL, which only applies to SELECT; which one is
//! decided once per pool from `SELECT VERSION()`). After every statement the connection is
//! reset with `COM_RESET_CONNECTION`, which rolls back the transaction and drops user
//! variables, temporary tables, `SET SESSION` changes, prepared statements, table locks and
//! `GET_LOCK` locks, then the session settings are applied again.
//!
//! **Statements are prepared, never sent as text.** `mysql_async` always announces
//! `CLIENT_MULTI_STATEMENTS`, so a text query could carry a second statement; a prepared
//! statement (`COM_STMT_PREPARE`) is exactly one statement, and preparing gives the result
//! columns without running anything ([`query_columns`]).
//!
//! **No LOCAL INFILE.** No local-infile handler is ever installed (neither in the options nor
//! per connection): a `LOAD DATA LOCAL INFILE` answer from a malicious or compromised server,
//! asking the client for a file of the Liteset host, fails in the driver
//! (`LocalInfileError::NoHandler`) before anything is read. The cleartext authentication
//! plugin stays disabled, so the password is never sent in clear text to a server that asks.
//!
//! **Cancellation:** a statement whose future is dropped (client gone, `/query/stop`,
//! deadline), whose result outgrows the budget or that is cut at `max_rows` is killed with
//! `KILL QUERY <connection id>` from a fresh connection, and its own connection is closed
//! rather than returned to the pool, so no one ever gets a connection in the middle of a
//! result.

use std::sync::Arc;
use std::time::Duration;

use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Pool, PoolConstraints, PoolOpts, Value};

use super::{
    Budget, Cell, ColumnInfo, EngineError, EngineOptions, ExecOptions, ForeignKey, GenericType,
    IndexInfo, PrimaryKey, ResultColumn, ResultSet, TableEntry, TableKind, TableMetadata,
    TimeGrain,
};
use crate::uri::{ConnectionUri, Engine};

/// The port MySQL clients assume.
const DEFAULT_PORT: u16 = 3306;

/// The `sql_mode` every session runs with: MariaDB's and MySQL's strict defaults, and above all
/// neither `ANSI_QUOTES` nor `NO_BACKSLASH_ESCAPES` nor `PIPES_AS_CONCAT`, which change how
/// the SQL Liteset writes is read.
const SQL_MODE: &str = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION";

/// How long cancelling an abandoned statement may take (connect + `KILL QUERY`).
const KILL_TIMEOUT: Duration = Duration::from_secs(3);

/// Which server speaks: they name the statement timeout differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavor {
    MariaDb,
    MySql,
}

/// A bounded pool of connections to one MySQL or MariaDB database. The `mysql_async` pool is
/// built on first use, once the server's flavor is known (its session settings depend on it).
#[derive(Clone)]
pub(crate) struct MyPool {
    inner: Arc<Inner>,
}

struct Inner {
    /// Connection options without the session set-up (for the flavor probe and `KILL`).
    base: Opts,
    options: EngineOptions,
    ctx: ErrorContext,
    pool: tokio::sync::OnceCell<Pool>,
}

/// What error messages may name: never the password.
#[derive(Clone, Debug)]
pub(crate) struct ErrorContext {
    host: String,
    port: u16,
    database: String,
}

impl ErrorContext {
    fn new(uri: &ConnectionUri) -> ErrorContext {
        ErrorContext {
            host: uri.host.clone().unwrap_or_else(|| "localhost".to_owned()),
            port: uri.port.unwrap_or(DEFAULT_PORT),
            database: uri.database.clone().unwrap_or_default(),
        }
    }
}

fn truthy(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on" | "required" | "verify_ca" | "verify_identity"
    )
}

/// The driver options for `uri`. Recognised query options: `charset` (results are always read
/// as utf8mb4, which the server converts every character set to, so any value is accepted),
/// `ssl`/`ssl_mode` (TLS is not built in: `ssl=0`, `ssl_mode=DISABLED`/`PREFERRED` are
/// accepted and connect without TLS, anything asking for TLS is refused), `connect_timeout`
/// (seconds); `local_infile` other than off is refused. Others are ignored.
fn base_opts(
    uri: &ConnectionUri,
    options: &EngineOptions,
) -> Result<(OptsBuilder, Duration), EngineError> {
    let mut connect_timeout = options.connect_timeout;
    for (key, value) in &uri.options {
        match key.as_str() {
            "charset" => {}
            "ssl" | "ssl_mode" | "ssl-mode" | "sslmode" => {
                let v = value.to_ascii_lowercase();
                if truthy(&v) || v == "verify-ca" || v == "verify-full" || v == "require" {
                    return Err(EngineError::other(format!(
                        "{key}={value} is not supported: Liteset connects to MySQL without \
                         TLS for now."
                    )));
                }
            }
            "ssl_ca" | "ssl_cert" | "ssl_key" | "ssl_capath" | "ssl_cipher" => {
                return Err(EngineError::other(format!(
                    "{key} is not supported: Liteset connects to MySQL without TLS for now."
                )));
            }
            "local_infile" => {
                if value != "0" && !value.eq_ignore_ascii_case("false") {
                    return Err(EngineError::other(
                        "local_infile is never enabled: it would let the server read files of \
                         the Liteset host.",
                    ));
                }
            }
            "connect_timeout" => {
                let secs: u64 = value
                    .parse()
                    .map_err(|_| EngineError::other("connect_timeout must be a whole number"))?;
                connect_timeout = Duration::from_secs(secs.max(1));
            }
            _ => tracing::debug!(option = %key, "ignored MySQL connection option"),
        }
    }
    let builder = OptsBuilder::default()
        .ip_or_hostname(uri.host.clone().unwrap_or_else(|| "localhost".to_owned()))
        .tcp_port(uri.port.unwrap_or(DEFAULT_PORT))
        .user(uri.username.clone())
        .pass(uri.password.clone())
        .db_name(uri.database.clone().filter(|d| !d.is_empty()))
        // Never switch to a Unix socket the server names: connect where the URI says.
        .prefer_socket(false)
        // Statements are closed after use; none outlives its request on the connection.
        .stmt_cache_size(0)
        .enable_cleartext_plugin(false);
    Ok((builder, connect_timeout))
}

/// The one statement that sets a session up (on connect and after every reset).
fn session_setup(flavor: Flavor, statement_timeout: Duration) -> String {
    let timeout = match flavor {
        Flavor::MariaDb => format!("max_statement_time = {}", statement_timeout.as_secs_f64()),
        Flavor::MySql => format!("max_execution_time = {}", statement_timeout.as_millis()),
    };
    format!("SET SESSION sql_mode = '{SQL_MODE}', SESSION time_zone = '+00:00', SESSION {timeout}")
}

/// A lazily connecting pool (no connection is opened until first use).
pub(crate) fn build_pool(
    uri: &ConnectionUri,
    options: &EngineOptions,
) -> Result<MyPool, EngineError> {
    let (builder, connect_timeout) = base_opts(uri, options)?;
    let mut options = options.clone();
    options.connect_timeout = connect_timeout;
    Ok(MyPool {
        inner: Arc::new(Inner {
            base: Opts::from(builder),
            options,
            ctx: ErrorContext::new(uri),
            pool: tokio::sync::OnceCell::new(),
        }),
    })
}

/// Opens one unpooled connection within the connect timeout.
async fn connect(opts: Opts, timeout: Duration, ctx: &ErrorContext) -> Result<Conn, EngineError> {
    match tokio::time::timeout(timeout, Conn::new(opts)).await {
        Ok(conn) => conn.map_err(|e| map_error(&e, ctx)),
        Err(_) => Err(EngineError::HostDown {
            host: ctx.host.clone(),
            port: ctx.port,
        }),
    }
}

/// `VERSION()` names MariaDB (`10.11.6-MariaDB-0+deb12u1`); MySQL's does not.
async fn probe_flavor(conn: &mut Conn, ctx: &ErrorContext) -> Result<Flavor, EngineError> {
    let version: Option<String> = conn
        .query_first("SELECT VERSION()")
        .await
        .map_err(|e| map_error(&e, ctx))?;
    Ok(
        if version
            .unwrap_or_default()
            .to_ascii_lowercase()
            .contains("mariadb")
        {
            Flavor::MariaDb
        } else {
            Flavor::MySql
        },
    )
}

impl MyPool {
    fn ctx(&self) -> &ErrorContext {
        &self.inner.ctx
    }

    fn map(&self, e: &mysql_async::Error) -> EngineError {
        map_error(e, &self.inner.ctx)
    }

    /// The driver pool, built once the flavor is known.
    async fn pool(&self) -> Result<&Pool, EngineError> {
        let inner = &self.inner;
        inner
            .pool
            .get_or_try_init(|| async {
                let mut conn = connect(
                    inner.base.clone(),
                    inner.options.connect_timeout,
                    &inner.ctx,
                )
                .await?;
                let flavor = probe_flavor(&mut conn, &inner.ctx).await;
                let _ = conn.disconnect().await;
                let flavor = flavor?;
                let size = inner.options.pool_size.max(1) as usize;
                let constraints = PoolConstraints::new(0, size)
                    .ok_or_else(|| EngineError::other("invalid pool size"))?;
                let pool_opts = PoolOpts::default()
                    .with_constraints(constraints)
                    .with_inactive_connection_ttl(Duration::from_secs(600))
                    .with_reset_connection(true);
                let opts = OptsBuilder::from_opts(inner.base.clone())
                    .setup(vec![session_setup(flavor, inner.options.statement_timeout)])
                    .pool_opts(pool_opts);
                Ok::<_, EngineError>(Pool::new(opts))
            })
            .await
    }

    /// A pooled connection, waiting at most `pool_wait` for a free one (plus the connect
    /// timeout when a new one must be opened).
    async fn get(&self) -> Result<Conn, EngineError> {
        let pool = self.pool().await?;
        let wait = self.inner.options.pool_wait + self.inner.options.connect_timeout;
        match tokio::time::timeout(wait, pool.get_conn()).await {
            Ok(conn) => conn.map_err(|e| self.map(&e)),
            Err(_) => Err(EngineError::PoolTimeout),
        }
    }
}

/// A fresh connection (not pooled) that runs `SELECT 1`.
pub(crate) async fn test_connection(
    uri: &ConnectionUri,
    options: &EngineOptions,
) -> Result<(), EngineError> {
    let (builder, connect_timeout) = base_opts(uri, options)?;
    let ctx = ErrorContext::new(uri);
    let attempt = async {
        let mut conn = connect(Opts::from(builder), connect_timeout, &ctx).await?;
        let one: Option<i64> = conn
            .query_first("SELECT 1")
            .await
            .map_err(|e| map_error(&e, &ctx))?;
        let _ = conn.disconnect().await;
        if one == Some(1) {
            Ok(())
        } else {
            Err(EngineError::other("SELECT 1 did not answer 1"))
        }
    };
    tokio::time::timeout(connect_timeout + Duration::from_secs(2), attempt)
        .await
        .map_err(|_| EngineError::Timeout)?
}

/// Databases (MySQL's schemas), sorted, without the server's own.
pub(crate) async fn schemas(pool: &MyPool) -> Result<Vec<String>, EngineError> {
    let mut conn = pool.get().await?;
    let names: Vec<String> = conn
        .exec(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA \
             WHERE SCHEMA_NAME NOT IN ('information_schema', 'mysql', 'performance_schema', 'sys') \
             ORDER BY SCHEMA_NAME",
            (),
        )
        .await
        .map_err(|e| pool.map(&e))?;
    Ok(names)
}

fn table_kind(table_type: &str) -> TableKind {
    if table_type.contains("VIEW") {
        TableKind::View
    } else {
        TableKind::Table
    }
}

/// Tables and views of `schema` (a database).
pub(crate) async fn tables(pool: &MyPool, schema: &str) -> Result<Vec<TableEntry>, EngineError> {
    let mut conn = pool.get().await?;
    let rows: Vec<(String, String)> = conn
        .exec(
            "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME",
            (schema,),
        )
        .await
        .map_err(|e| pool.map(&e))?;
    Ok(rows
        .into_iter()
        .map(|(name, kind)| TableEntry {
            kind: table_kind(&kind),
            name,
        })
        .collect())
}

/// Columns, keys, indexes and comment of `schema.table` (`schema` `None`: the connection's
/// database).
pub(crate) async fn table_metadata(
    pool: &MyPool,
    schema: Option<&str>,
    table: &str,
) -> Result<TableMetadata, EngineError> {
    let mut conn = pool.get().await?;
    let map = |e: mysql_async::Error| pool.map(&e);
    let found: Option<(String, String, Option<String>)> = conn
        .exec_first(
            "SELECT TABLE_SCHEMA, TABLE_TYPE, TABLE_COMMENT FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?",
            (schema, table),
        )
        .await
        .map_err(map)?;
    let Some((found_schema, table_type, comment)) = found else {
        return Err(EngineError::TableNotFound {
            table: table.to_owned(),
        });
    };
    let kind = table_kind(&table_type);
    let comment = comment.filter(|c| !c.is_empty() && kind == TableKind::Table);

    let rows: Vec<(String, String, String, Option<String>)> = conn
        .exec(
            "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_COMMENT \
             FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
            (&found_schema, table),
        )
        .await
        .map_err(map)?;
    let columns = rows
        .into_iter()
        .map(|(name, column_type, nullable, comment)| {
            column(
                name,
                render_type(&column_type),
                nullable == "YES",
                comment.filter(|c| !c.is_empty()),
            )
        })
        .collect();

    let keys: Vec<KeyColumn> = conn
        .exec(
            "SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, \
                    REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME \
             FROM information_schema.KEY_COLUMN_USAGE \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
               AND (CONSTRAINT_NAME = 'PRIMARY' OR REFERENCED_TABLE_NAME IS NOT NULL) \
             ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION",
            (&found_schema, table),
        )
        .await
        .map_err(map)?;
    let mut pk_columns = Vec::new();
    let mut foreign_keys: Vec<ForeignKey> = Vec::new();
    for (name, column, ref_schema, ref_table, ref_column) in keys {
        if name == "PRIMARY" {
            pk_columns.push(column);
            continue;
        }
        let Some(ref_table) = ref_table else { continue };
        match foreign_keys.last_mut() {
            Some(fk) if fk.name.as_deref() == Some(name.as_str()) => {
                fk.constrained_columns.push(column);
                fk.referred_columns.extend(ref_column);
            }
            _ => foreign_keys.push(ForeignKey {
                name: Some(name),
                constrained_columns: vec![column],
                // SQLAlchemy names the referred schema only when it is another database.
                referred_schema: ref_schema.filter(|s| *s != found_schema),
                referred_table: ref_table,
                referred_columns: ref_column.into_iter().collect(),
            }),
        }
    }
    // SQLAlchemy's MySQL dialect reports the primary key without a name.
    let primary_key = (!pk_columns.is_empty()).then_some(PrimaryKey {
        name: None,
        column_names: pk_columns,
    });

    let stats: Vec<(String, i64, Option<String>)> = conn
        .exec(
            "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY' \
             ORDER BY INDEX_NAME, SEQ_IN_INDEX",
            (&found_schema, table),
        )
        .await
        .map_err(map)?;
    let mut indexes: Vec<IndexInfo> = Vec::new();
    for (name, non_unique, column) in stats {
        let column = column.unwrap_or_else(|| "(expression)".to_owned());
        match indexes.last_mut() {
            Some(ix) if ix.name == name => ix.column_names.push(column),
            _ => indexes.push(IndexInfo {
                name,
                column_names: vec![column],
                unique: non_unique == 0,
            }),
        }
    }

    Ok(TableMetadata {
        name: table.to_owned(),
        schema: Some(found_schema),
        kind,
        columns,
        primary_key,
        foreign_keys,
        indexes,
        comment,
    })
}

/// A row of `KEY_COLUMN_USAGE`: constraint, column, referred schema, table and column.
type KeyColumn = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// A column typed by Superset's rules for MySQL.
fn column(name: String, type_name: String, nullable: bool, comment: Option<String>) -> ColumnInfo {
    ColumnInfo::for_engine(Engine::MySql, name, type_name, nullable, comment)
}

/// Superset's `MySQLEngineSpec.get_column_spec`: the base rules first, then MySQL's own
/// `column_type_mappings` (`^tinyint`, `^mediumint`, `^bit` numeric; `^int.*`, `^decimal`,
/// `^float`, `^double` and the text types are already base rules).
pub fn generic_type(type_name: &str) -> Option<GenericType> {
    super::generic_type(type_name).or_else(|| {
        let t = type_name.trim().to_ascii_lowercase();
        // Also MySQLdb's FIELD_TYPE names, which SQL Lab reports ([`field_type`]).
        ["tiny", "mediumint", "bit", "short", "int24", "newdecimal"]
            .iter()
            .any(|p| t.starts_with(p))
            .then_some(GenericType::Numeric)
    })
}

/// `information_schema.COLUMNS.COLUMN_TYPE` as SQLAlchemy's MySQL dialect renders the reflected
/// type (and Superset upper-cases it, dropping any collation): `int(11)` → `INTEGER(11)`,
/// `decimal(10,2)` → `DECIMAL(10, 2)`, `bigint(20) unsigned` → `BIGINT(20) UNSIGNED`,
/// `varchar(50)` → `VARCHAR(50)`, `enum('a','b')` → `ENUM('a','b')` (values kept as written).
pub fn render_type(column_type: &str) -> String {
    let t = column_type.trim();
    let (head, tail) = match t.find('(') {
        Some(open) => t.split_at(open),
        None => match t.find(' ') {
            Some(sp) => t.split_at(sp),
            None => (t, ""),
        },
    };
    let mut head = head.to_ascii_uppercase();
    if head == "INT" {
        head = "INTEGER".to_owned();
    }
    if head == "ENUM" || head == "SET" {
        return format!("{head}{tail}");
    }
    let tail = match tail.find(')') {
        Some(close) if tail.starts_with('(') => {
            let args: Vec<&str> = tail[1..close].split(',').map(str::trim).collect();
            format!(
                "({}){}",
                args.join(", "),
                tail[close + 1..].to_ascii_uppercase()
            )
        }
        _ => tail.to_ascii_uppercase(),
    };
    format!("{head}{tail}")
}

/// The SQL type of a result column from its wire metadata, in the names [`render_type`] uses.
fn wire_type_name(col: &mysql_async::Column) -> String {
    let flags = col.flags();
    let unsigned = if flags.contains(ColumnFlags::UNSIGNED_FLAG) {
        " UNSIGNED"
    } else {
        ""
    };
    let binary = col.character_set() == 63;
    let name = match col.column_type() {
        ColumnType::MYSQL_TYPE_TINY => "TINYINT",
        ColumnType::MYSQL_TYPE_SHORT => "SMALLINT",
        ColumnType::MYSQL_TYPE_INT24 => "MEDIUMINT",
        ColumnType::MYSQL_TYPE_LONG => "INTEGER",
        ColumnType::MYSQL_TYPE_LONGLONG => "BIGINT",
        ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL => "DECIMAL",
        ColumnType::MYSQL_TYPE_FLOAT => "FLOAT",
        ColumnType::MYSQL_TYPE_DOUBLE => "DOUBLE",
        ColumnType::MYSQL_TYPE_BIT => "BIT",
        ColumnType::MYSQL_TYPE_YEAR => "YEAR",
        ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE => "DATE",
        ColumnType::MYSQL_TYPE_TIME | ColumnType::MYSQL_TYPE_TIME2 => "TIME",
        ColumnType::MYSQL_TYPE_DATETIME | ColumnType::MYSQL_TYPE_DATETIME2 => "DATETIME",
        ColumnType::MYSQL_TYPE_TIMESTAMP | ColumnType::MYSQL_TYPE_TIMESTAMP2 => "TIMESTAMP",
        ColumnType::MYSQL_TYPE_JSON => "JSON",
        ColumnType::MYSQL_TYPE_NULL => "NULL",
        ColumnType::MYSQL_TYPE_GEOMETRY => "GEOMETRY",
        ColumnType::MYSQL_TYPE_ENUM => "ENUM",
        ColumnType::MYSQL_TYPE_SET => "SET",
        ColumnType::MYSQL_TYPE_VARCHAR | ColumnType::MYSQL_TYPE_VAR_STRING => {
            if binary {
                "VARBINARY"
            } else {
                "VARCHAR"
            }
        }
        ColumnType::MYSQL_TYPE_STRING => {
            if flags.contains(ColumnFlags::ENUM_FLAG) {
                "ENUM"
            } else if flags.contains(ColumnFlags::SET_FLAG) {
                "SET"
            } else if binary {
                "BINARY"
            } else {
                "CHAR"
            }
        }
        ColumnType::MYSQL_TYPE_TINY_BLOB
        | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
        | ColumnType::MYSQL_TYPE_LONG_BLOB
        | ColumnType::MYSQL_TYPE_BLOB => {
            if binary {
                "BLOB"
            } else {
                "TEXT"
            }
        }
        _ => "UNKNOWN",
    };
    format!("{name}{unsigned}")
}

/// MySQLdb's `FIELD_TYPE` name for a result column typed `type_name` by [`wire_type_name`]
/// (what Superset's `MySQLEngineSpec.get_datatype` reports).
pub(crate) fn field_type(type_name: &str) -> Option<&'static str> {
    let base = type_name.trim_end_matches(" UNSIGNED");
    Some(match base {
        "TINYINT" => "TINY",
        "SMALLINT" => "SHORT",
        "MEDIUMINT" => "INT24",
        "INTEGER" => "LONG",
        "BIGINT" => "LONGLONG",
        "DECIMAL" => "NEWDECIMAL",
        "FLOAT" => "FLOAT",
        "DOUBLE" => "DOUBLE",
        "BIT" => "BIT",
        "YEAR" => "YEAR",
        "DATE" => "DATE",
        "TIME" => "TIME",
        "DATETIME" => "DATETIME",
        "TIMESTAMP" => "TIMESTAMP",
        "JSON" => "JSON",
        "NULL" => "NULL",
        "GEOMETRY" => "GEOMETRY",
        "VARCHAR" | "VARBINARY" => "VAR_STRING",
        "CHAR" | "BINARY" | "ENUM" | "SET" => "STRING",
        "TEXT" | "BLOB" => "BLOB",
        _ => return None,
    })
}

/// The result columns of `sql`, found by preparing it (`COM_STMT_PREPARE` returns the result
/// metadata without running anything). Like PostgreSQL's, the statement must also prepare as
/// the subquery of `SELECT * FROM (<sql>) AS virtual_table`, which only a query can; and it
/// must return rows.
pub(crate) async fn query_columns(
    pool: &MyPool,
    sql: &str,
) -> Result<Vec<ColumnInfo>, EngineError> {
    let mut conn = pool.get().await?;
    let map = |e: mysql_async::Error| pool.map(&e);
    let stmt = conn.prep(sql).await.map_err(map)?;
    if stmt.num_params() > 0 {
        return Err(EngineError::other(
            "The query has bind parameters (?), which a dataset query cannot have.",
        ));
    }
    let columns = stmt.columns();
    if columns.is_empty() {
        return Err(EngineError::NotReadOnly);
    }
    let _ = conn.close(stmt).await;
    let wrapped = format!("SELECT * FROM (\n{sql}\n) AS virtual_table LIMIT 0");
    match conn.prep(&wrapped).await {
        Ok(w) => {
            let _ = conn.close(w).await;
        }
        Err(mysql_async::Error::Server(e)) if e.code == 1064 || e.code == 1248 => {
            return Err(EngineError::NotReadOnly);
        }
        Err(e) => return Err(map(e)),
    }
    Ok(columns
        .iter()
        .map(|c| column(c.name_str().into_owned(), wire_type_name(c), true, None))
        .collect())
}

/// A checked-out connection with a statement possibly running on it. Dropped while still
/// holding the connection (the caller's future was dropped, or the result was cut short), it
/// kills the statement from another connection and closes its own, which never returns to the
/// pool mid-result.
struct InFlight {
    conn: Option<Conn>,
    id: u32,
    base: Opts,
    ctx: ErrorContext,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (id, base, ctx) = (self.id, self.base.clone(), self.ctx.clone());
        rt.spawn(async move {
            let kill = async {
                let mut killer = connect(base, KILL_TIMEOUT, &ctx).await?;
                let killed = killer
                    .query_drop(format!("KILL QUERY {id}"))
                    .await
                    .map_err(|e| map_error(&e, &ctx));
                let _ = killer.disconnect().await;
                killed
            };
            match tokio::time::timeout(KILL_TIMEOUT, kill).await {
                Ok(Ok(())) => tracing::debug!(id, "abandoned MySQL query killed"),
                Ok(Err(e)) => tracing::warn!(id, error = %e, "could not kill an abandoned query"),
                Err(_) => tracing::warn!(id, "killing an abandoned query timed out"),
            }
            // Closed, not pooled: whatever was left of the result dies with the socket.
            if let Err(e) = conn.disconnect().await {
                tracing::debug!(error = %e, "closing a cancelled connection failed");
            }
        });
    }
}

/// Runs one statement (see [`super::Engines::execute`]): prepared, inside `START TRANSACTION
/// READ ONLY` when asked (where it must also return rows: DDL would commit the transaction
/// implicitly and run outside it), reading at most `max_rows` rows and at most the pool's
/// result budget, then `COM_RESET_CONNECTION`.
pub(crate) async fn execute(
    pool: &MyPool,
    sql: &str,
    opts: ExecOptions,
) -> Result<ResultSet, EngineError> {
    let conn = pool.get().await?;
    let mut flight = InFlight {
        id: conn.id(),
        conn: Some(conn),
        base: pool.inner.base.clone(),
        ctx: pool.ctx().clone(),
    };
    let out = run_statement(&mut flight, pool, sql, opts).await;
    match out {
        // Cut short: the statement may still be producing rows; `flight` kills it on drop.
        Err(EngineError::ResultTooLarge { .. }) | Ok((_, true)) => out.map(|(rs, _)| rs),
        _ => {
            let Some(mut conn) = flight.conn.take() else {
                return out.map(|(rs, _)| rs);
            };
            // Rolls back and resets the session, then re-applies the session settings.
            if let Err(e) = conn.reset().await {
                tracing::debug!(error = %e, "connection reset failed; closing it");
                let _ = conn.disconnect().await;
            }
            out.map(|(rs, _)| rs)
        }
    }
}

/// The rows, and whether reading stopped before the end of the result.
async fn run_statement(
    flight: &mut InFlight,
    pool: &MyPool,
    sql: &str,
    opts: ExecOptions,
) -> Result<(ResultSet, bool), EngineError> {
    let map = |e: mysql_async::Error| pool.map(&e);
    let Some(conn) = flight.conn.as_mut() else {
        return Err(EngineError::other("connection already released"));
    };
    if opts.read_only {
        conn.query_drop("START TRANSACTION READ ONLY")
            .await
            .map_err(map)?;
    }
    let stmt = conn.prep(sql).await.map_err(map)?;
    if stmt.num_params() > 0 {
        return Err(EngineError::other(
            "The query has bind parameters (?), which cannot be supplied here.",
        ));
    }
    let meta = stmt.columns();
    if opts.read_only && meta.is_empty() {
        return Err(EngineError::NotReadOnly);
    }
    let columns: Vec<ResultColumn> = meta
        .iter()
        .map(|c| ResultColumn {
            name: c.name_str().into_owned(),
            type_name: wire_type_name(c),
        })
        .collect();
    let width = columns.len();
    let mut budget = Budget::new(pool.inner.options.max_result_bytes);
    let mut rows = Vec::new();
    let mut truncated = false;
    {
        let mut result = conn.exec_iter(&stmt, ()).await.map_err(map)?;
        while let Some(row) = result.next().await.map_err(map)? {
            if rows.len() >= opts.max_rows {
                truncated = true;
                break;
            }
            let values = row.unwrap();
            let bytes: usize = values.iter().map(value_len).sum();
            budget.charge(width, bytes)?;
            rows.push(
                values
                    .into_iter()
                    .zip(meta.iter())
                    .map(|(v, c)| to_cell(v, c))
                    .collect(),
            );
        }
    }
    Ok((ResultSet { columns, rows }, truncated))
}

/// The bytes a value holds on the wire (for the result budget; blobs count as their hex text).
fn value_len(v: &Value) -> usize {
    match v {
        Value::Bytes(b) => 2 * b.len() + 2,
        Value::NULL => 0,
        _ => 8,
    }
}

/// One value of the binary protocol as a [`Cell`], by its column's type.
fn to_cell(v: Value, col: &mysql_async::Column) -> Cell {
    let ty = col.column_type();
    match v {
        Value::NULL => Cell::Null,
        Value::Int(i) => Cell::Int(i),
        Value::UInt(u) => match i64::try_from(u) {
            Ok(i) => Cell::Int(i),
            Err(_) => Cell::Decimal(u.to_string()),
        },
        // FLOAT is single precision: read it as its shortest decimal (0.1, not 0.100000001…),
        // as MySQL prints it.
        Value::Float(f) => Cell::Float(f.to_string().parse().unwrap_or(f64::from(f))),
        Value::Double(d) => Cell::Float(d),
        Value::Date(y, mo, d, h, mi, s, us) => {
            let Some(date) =
                chrono::NaiveDate::from_ymd_opt(i32::from(y), u32::from(mo), u32::from(d))
            else {
                // '0000-00-00' and other zero dates: no date at all (mysqlclient gives None).
                return Cell::Null;
            };
            if matches!(
                ty,
                ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE
            ) {
                return Cell::Date(date);
            }
            match date.and_hms_micro_opt(u32::from(h), u32::from(mi), u32::from(s), us) {
                Some(dt) => Cell::Timestamp(dt),
                None => Cell::Null,
            }
        }
        Value::Time(neg, days, h, mi, s, us) => {
            if !neg
                && days == 0
                && let Some(t) = chrono::NaiveTime::from_hms_micro_opt(
                    u32::from(h),
                    u32::from(mi),
                    u32::from(s),
                    us,
                )
            {
                return Cell::Time(t);
            }
            // Outside a day (TIME spans ±838 hours): as MySQL prints it.
            let hours = u64::from(days) * 24 + u64::from(h);
            let sign = if neg { "-" } else { "" };
            let frac = if us > 0 {
                format!(".{us:06}")
            } else {
                String::new()
            };
            Cell::Text(format!("{sign}{hours:02}:{mi:02}:{s:02}{frac}"))
        }
        Value::Bytes(b) => bytes_cell(b, col),
    }
}

fn bytes_cell(b: Vec<u8>, col: &mysql_async::Column) -> Cell {
    match col.column_type() {
        ColumnType::MYSQL_TYPE_DECIMAL | ColumnType::MYSQL_TYPE_NEWDECIMAL => {
            Cell::Decimal(String::from_utf8_lossy(&b).into_owned())
        }
        ColumnType::MYSQL_TYPE_BIT => {
            // Big-endian, at most 64 bits.
            let v = b
                .iter()
                .fold(0u64, |acc, byte| (acc << 8) | u64::from(*byte));
            match i64::try_from(v) {
                Ok(i) => Cell::Int(i),
                Err(_) => Cell::Decimal(v.to_string()),
            }
        }
        _ if col.character_set() == 63 && col.column_type() != ColumnType::MYSQL_TYPE_JSON => {
            // Binary strings and blobs: hex, as the other engines show blobs.
            Cell::Text(format!("\\x{}", hex::encode(&b)))
        }
        _ => match String::from_utf8(b) {
            Ok(text) => Cell::Text(text),
            Err(e) => Cell::Text(format!("\\x{}", hex::encode(e.as_bytes()))),
        },
    }
}

/// Maps a driver error to Superset's error kinds (`MySQLEngineSpec.custom_errors` and the
/// server's error codes).
pub(crate) fn map_error(error: &mysql_async::Error, ctx: &ErrorContext) -> EngineError {
    use mysql_async::{Error, IoError};
    match error {
        Error::Server(e) => map_server_error(e.code, &e.message, ctx),
        Error::Io(IoError::Io(io)) => map_io_error(io, ctx),
        Error::Driver(d) => EngineError::other(d),
        Error::Other(o) => {
            let text = o.to_string();
            let dns = [
                "lookup address",
                "Name or service not known",
                "failed to lookup",
                "No address associated",
                "Temporary failure in name resolution",
            ];
            if dns.iter().any(|d| text.contains(d)) {
                EngineError::InvalidHostname {
                    host: ctx.host.clone(),
                }
            } else {
                EngineError::other(text)
            }
        }
        other => EngineError::other(other),
    }
}

fn map_io_error(io: &std::io::Error, ctx: &ErrorContext) -> EngineError {
    use std::io::ErrorKind;
    let (host, port) = (ctx.host.clone(), ctx.port);
    match io.kind() {
        ErrorKind::ConnectionRefused => EngineError::PortClosed { host, port },
        ErrorKind::TimedOut | ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => {
            EngineError::HostDown { host, port }
        }
        _ => {
            let text = io.to_string();
            let dns = [
                "lookup address",
                "Name or service not known",
                "No address associated",
                "Temporary failure in name resolution",
            ];
            if dns.iter().any(|d| text.contains(d)) {
                EngineError::InvalidHostname { host }
            } else {
                EngineError::other(format!("could not connect to server: {text}"))
            }
        }
    }
}

/// The quoted name right after `prefix` (`Unknown database 'x'` → `x`).
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let start = message.find(prefix)? + prefix.len();
    let rest = message[start..].strip_prefix('\'')?;
    let end = rest.find('\'')?;
    Some(rest[..end].to_owned())
}

/// Server error code (and message, as Superset's regexes read it) → error kind.
pub(crate) fn map_server_error(code: u16, message: &str, ctx: &ErrorContext) -> EngineError {
    if let Some(username) = quoted_after(message, "Access denied for user ") {
        // ER_ACCESS_DENIED_ERROR (1045) and ER_DBACCESS_DENIED_ERROR (1044).
        return EngineError::AccessDenied { username };
    }
    match code {
        1049 => EngineError::UnknownDatabase {
            database: quoted_after(message, "Unknown database ")
                .unwrap_or_else(|| ctx.database.clone()),
        },
        1064 => {
            // Superset's SYNTAX_ERROR_REGEX names MySQL only: MariaDB's text stays as it is.
            let marker = "check the manual that corresponds to your MySQL server version for \
                          the right syntax to use near '";
            match message.find(marker) {
                Some(at) => EngineError::Syntax {
                    message: format!(
                        "Please check your query for syntax errors near \"{}\". Then, try \
                         running your query again.",
                        &message[at + marker.len()..]
                    ),
                },
                None => EngineError::Syntax {
                    message: message.to_owned(),
                },
            }
        }
        1146 => match quoted_after(message, "Table ") {
            Some(table) => EngineError::TableNotFound { table },
            None => EngineError::other(message),
        },
        // ER_STATEMENT_TIMEOUT (MariaDB), ER_QUERY_TIMEOUT (MySQL).
        1969 | 3024 => EngineError::StatementTimeout,
        // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION.
        1792 => EngineError::NotReadOnly,
        _ => EngineError::other(message),
    }
}

/// Superset's MySQL time grains (`MySQLEngineSpec._time_grain_expressions`), in Superset's
/// display order.
pub(crate) const TIME_GRAINS: &[TimeGrain] = &[
    TimeGrain {
        duration: "PT1S",
        name: "Second",
        template: "DATE_ADD(DATE({col}), INTERVAL (HOUR({col})*60*60 + MINUTE({col})*60 + SECOND({col})) SECOND)",
    },
    TimeGrain {
        duration: "PT1M",
        name: "Minute",
        template: "DATE_ADD(DATE({col}), INTERVAL (HOUR({col})*60 + MINUTE({col})) MINUTE)",
    },
    TimeGrain {
        duration: "PT1H",
        name: "Hour",
        template: "DATE_ADD(DATE({col}), INTERVAL HOUR({col}) HOUR)",
    },
    TimeGrain {
        duration: "P1D",
        name: "Day",
        template: "DATE({col})",
    },
    TimeGrain {
        duration: "P1W",
        name: "Week",
        template: "DATE(DATE_SUB({col}, INTERVAL DAYOFWEEK({col}) - 1 DAY))",
    },
    TimeGrain {
        duration: "P1M",
        name: "Month",
        template: "DATE(DATE_SUB({col}, INTERVAL DAYOFMONTH({col}) - 1 DAY))",
    },
    TimeGrain {
        duration: "P3M",
        name: "Quarter",
        template: "MAKEDATE(YEAR({col}), 1) + INTERVAL QUARTER({col}) QUARTER - INTERVAL 1 QUARTER",
    },
    TimeGrain {
        duration: "P1Y",
        name: "Year",
        template: "DATE(DATE_SUB({col}, INTERVAL DAYOFYEAR({col}) - 1 DAY))",
    },
    TimeGrain {
        duration: "1969-12-29T00:00:00Z/P1W",
        name: "Week starting Monday",
        template: "DATE(DATE_SUB({col}, INTERVAL DAYOFWEEK(DATE_SUB({col}, INTERVAL 1 DAY)) - 1 DAY))",
    },
];

/// An identifier quoted for MySQL: backticks, embedded ones doubled (sessions never run with
/// `ANSI_QUOTES`, so double quotes would make a string).
pub(crate) fn quote(ident: &str) -> String {
    format!("`{}`", ident.replace('`', "``"))
}

/// A string literal for MySQL. Sessions run without `NO_BACKSLASH_ESCAPES` (see
/// [`SQL_MODE`]), so a backslash escapes: it is doubled, and a quote is doubled too (which is
/// right in either mode, so a quote can never end the literal early).
pub(crate) fn string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// A boolean literal, as SQLAlchemy's MySQL dialect (native booleans) renders it.
pub(crate) fn boolean(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// `expr` as text, for LIKE on a non-text column.
pub(crate) fn cast_text(expr: &str) -> String {
    format!("CAST({expr} AS CHAR)")
}

/// Epoch milliseconds as a datetime (Superset's `epoch_to_dttm` is `from_unixtime({col})`).
pub(crate) fn from_epoch_ms(ms: f64) -> String {
    format!("FROM_UNIXTIME({})", ms / 1000.0)
}

/// A datetime literal for comparing with a column of type `type_name`: Superset's
/// `convert_dttm`, else the plain literal SQLAlchemy renders for a bound datetime.
pub(crate) fn datetime_literal(dt: chrono::NaiveDateTime, type_name: &str) -> String {
    convert_dttm(dt, type_name).unwrap_or_else(|| format!("'{}'", dt.format("%Y-%m-%d %H:%M:%S")))
}

/// Superset's `MySQLEngineSpec.convert_dttm`: SQLAlchemy `DateTime` types (DATETIME,
/// TIMESTAMP) as `STR_TO_DATE` with microseconds, `Date` as `STR_TO_DATE` of the date,
/// anything else none.
pub(crate) fn convert_dttm(dt: chrono::NaiveDateTime, target_type: &str) -> Option<String> {
    let t = target_type.trim().to_ascii_lowercase();
    if t.starts_with("timestamp") || t.starts_with("datetime") {
        Some(format!(
            "STR_TO_DATE('{}', '%Y-%m-%d %H:%i:%s.%f')",
            dt.format("%Y-%m-%d %H:%M:%S%.6f")
        ))
    } else if t.starts_with("date") {
        Some(format!(
            "STR_TO_DATE('{}', '%Y-%m-%d')",
            dt.format("%Y-%m-%d")
        ))
    } else {
        None
    }
}

/// MySQL 8's and MariaDB's reserved words (SQLAlchemy's `RESERVED_WORDS_MYSQL` and
/// `RESERVED_WORDS_MARIADB`), lower-case.
const RESERVED: &[&str] = &[
    "accessible",
    "add",
    "all",
    "alter",
    "analyze",
    "and",
    "as",
    "asc",
    "asensitive",
    "before",
    "between",
    "bigint",
    "binary",
    "blob",
    "both",
    "by",
    "call",
    "cascade",
    "case",
    "change",
    "char",
    "character",
    "check",
    "collate",
    "column",
    "condition",
    "constraint",
    "continue",
    "convert",
    "create",
    "cross",
    "cube",
    "cume_dist",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "cursor",
    "database",
    "databases",
    "day_hour",
    "day_microsecond",
    "day_minute",
    "day_second",
    "dec",
    "decimal",
    "declare",
    "default",
    "delayed",
    "delete",
    "dense_rank",
    "desc",
    "describe",
    "deterministic",
    "distinct",
    "distinctrow",
    "div",
    "do_domain_ids",
    "double",
    "drop",
    "dual",
    "each",
    "else",
    "elseif",
    "empty",
    "enclosed",
    "escaped",
    "except",
    "exists",
    "exit",
    "explain",
    "false",
    "fetch",
    "first_value",
    "float",
    "float4",
    "float8",
    "for",
    "force",
    "foreign",
    "from",
    "fulltext",
    "function",
    "general",
    "generated",
    "get",
    "grant",
    "group",
    "grouping",
    "groups",
    "having",
    "high_priority",
    "hour_microsecond",
    "hour_minute",
    "hour_second",
    "if",
    "ignore",
    "ignore_domain_ids",
    "ignore_server_ids",
    "in",
    "index",
    "infile",
    "inner",
    "inout",
    "insensitive",
    "insert",
    "int",
    "int1",
    "int2",
    "int3",
    "int4",
    "int8",
    "integer",
    "intersect",
    "interval",
    "into",
    "io_after_gtids",
    "io_before_gtids",
    "is",
    "iterate",
    "join",
    "json_table",
    "key",
    "keys",
    "kill",
    "lag",
    "last_value",
    "lateral",
    "lead",
    "leading",
    "leave",
    "left",
    "like",
    "limit",
    "linear",
    "lines",
    "load",
    "localtime",
    "localtimestamp",
    "lock",
    "long",
    "longblob",
    "longtext",
    "loop",
    "low_priority",
    "master_bind",
    "master_heartbeat_period",
    "master_ssl_verify_server_cert",
    "match",
    "maxvalue",
    "mediumblob",
    "mediumint",
    "mediumtext",
    "middleint",
    "minute_microsecond",
    "minute_second",
    "mod",
    "modifies",
    "natural",
    "not",
    "no_write_to_binlog",
    "nth_value",
    "ntile",
    "null",
    "numeric",
    "of",
    "offset",
    "on",
    "optimize",
    "optimizer_costs",
    "option",
    "optionally",
    "or",
    "order",
    "out",
    "outer",
    "outfile",
    "over",
    "page_checksum",
    "parse_vcol_expr",
    "partition",
    "percent_rank",
    "position",
    "precision",
    "primary",
    "procedure",
    "purge",
    "range",
    "rank",
    "read",
    "reads",
    "read_write",
    "real",
    "recursive",
    "ref_system_id",
    "references",
    "regexp",
    "release",
    "rename",
    "repeat",
    "replace",
    "require",
    "resignal",
    "restrict",
    "return",
    "returning",
    "revoke",
    "right",
    "rlike",
    "row",
    "row_number",
    "rows",
    "schema",
    "schemas",
    "second_microsecond",
    "select",
    "sensitive",
    "separator",
    "set",
    "show",
    "signal",
    "slow",
    "smallint",
    "spatial",
    "specific",
    "sql",
    "sql_big_result",
    "sql_calc_found_rows",
    "sql_small_result",
    "sqlexception",
    "sqlstate",
    "sqlwarning",
    "ssl",
    "starting",
    "stats_auto_recalc",
    "stats_persistent",
    "stats_sample_pages",
    "stored",
    "straight_join",
    "system",
    "table",
    "terminated",
    "then",
    "tinyblob",
    "tinyint",
    "tinytext",
    "to",
    "trailing",
    "trigger",
    "true",
    "undo",
    "union",
    "unique",
    "unlock",
    "unsigned",
    "update",
    "usage",
    "use",
    "using",
    "utc_date",
    "utc_time",
    "utc_timestamp",
    "values",
    "varbinary",
    "varchar",
    "varcharacter",
    "varying",
    "virtual",
    "when",
    "where",
    "while",
    "window",
    "with",
    "write",
    "xor",
    "year_month",
    "zerofill",
];

/// Whether SQLAlchemy's MySQL dialect must quote `ident` as a reserved word.
pub fn is_reserved(ident: &str) -> bool {
    let lower = ident.to_ascii_lowercase();
    RESERVED.contains(&lower.as_str())
}

/// Functions always refused on MySQL/MariaDB, whatever the configured deny-list says (on top of
/// it; see [`super::refused_functions`]):
/// * `load_file`: reads any file the server process can (with the FILE privilege);
/// * `sys_exec`, `sys_eval`, `sys_get`, `sys_set`, `sys_bineval` (lib_mysqludf_sys): run shell
///   commands or native code on the server, or change its environment;
/// * `get_lock`, `release_lock`, `release_all_locks`, `is_free_lock`, `is_used_lock`: named
///   locks outlive the statement and reach other sessions (a reader could block writers);
/// * `master_pos_wait`, `source_pos_wait`, `master_gtid_wait`, `wait_for_executed_gtid_set`,
///   `wait_until_sql_thread_after_gtids`: hold a connection waiting on replication.
///
/// `sleep` and `benchmark` (holding a connection on purpose) are in the configurable default
/// list instead, like PostgreSQL's `pg_sleep`.
pub const REFUSED_FUNCTIONS: &[&str] = &[
    "get_lock",
    "is_free_lock",
    "is_used_lock",
    "load_file",
    "master_gtid_wait",
    "master_pos_wait",
    "release_all_locks",
    "release_lock",
    "source_pos_wait",
    "sys_bineval",
    "sys_eval",
    "sys_exec",
    "sys_get",
    "sys_set",
    "wait_for_executed_gtid_set",
    "wait_until_sql_thread_after_gtids",
];

/// MySQL's common built-in functions, for SQL Lab's autocomplete.
pub const FUNCTION_NAMES: &[&str] = &[
    "abs",
    "adddate",
    "addtime",
    "avg",
    "bit_and",
    "bit_or",
    "bit_xor",
    "cast",
    "ceil",
    "ceiling",
    "char_length",
    "coalesce",
    "concat",
    "concat_ws",
    "convert",
    "convert_tz",
    "count",
    "curdate",
    "current_date",
    "current_time",
    "current_timestamp",
    "curtime",
    "date",
    "date_add",
    "date_format",
    "date_sub",
    "datediff",
    "day",
    "dayname",
    "dayofmonth",
    "dayofweek",
    "dayofyear",
    "dense_rank",
    "exp",
    "extract",
    "field",
    "find_in_set",
    "first_value",
    "floor",
    "format",
    "from_unixtime",
    "greatest",
    "group_concat",
    "hex",
    "hour",
    "if",
    "ifnull",
    "instr",
    "isnull",
    "json_extract",
    "json_unquote",
    "lag",
    "last_day",
    "last_value",
    "lcase",
    "lead",
    "least",
    "left",
    "length",
    "ln",
    "locate",
    "log",
    "log10",
    "log2",
    "lower",
    "lpad",
    "ltrim",
    "makedate",
    "max",
    "md5",
    "min",
    "minute",
    "mod",
    "month",
    "monthname",
    "now",
    "ntile",
    "nullif",
    "percent_rank",
    "pi",
    "pow",
    "power",
    "quarter",
    "rand",
    "rank",
    "regexp_replace",
    "regexp_substr",
    "repeat",
    "replace",
    "reverse",
    "right",
    "round",
    "row_number",
    "rpad",
    "rtrim",
    "second",
    "sign",
    "sqrt",
    "std",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "str_to_date",
    "subdate",
    "substr",
    "substring",
    "substring_index",
    "sum",
    "sysdate",
    "time",
    "time_format",
    "timediff",
    "timestamp",
    "timestampadd",
    "timestampdiff",
    "to_days",
    "trim",
    "truncate",
    "ucase",
    "unix_timestamp",
    "upper",
    "utc_date",
    "utc_timestamp",
    "var_pop",
    "var_samp",
    "variance",
    "week",
    "weekday",
    "weekofyear",
    "year",
    "yearweek",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ErrorContext {
        ErrorContext {
            host: "db.example".into(),
            port: 3307,
            database: "sales".into(),
        }
    }

    #[test]
    fn reserved_words_are_sorted_and_found() {
        assert!(is_reserved("ORDER"));
        assert!(is_reserved("rank"));
        assert!(!is_reserved("name"));
    }

    #[test]
    fn quoting_and_literals() {
        assert_eq!(quote("a`b"), "`a``b`");
        assert_eq!(quote("order"), "`order`");
        assert_eq!(string("it's"), "'it''s'");
        assert_eq!(string("a\\'b"), "'a\\\\''b'");
        assert_eq!(string("\\"), "'\\\\'");
        assert_eq!(boolean(true), "true");
        assert_eq!(cast_text("`x`"), "CAST(`x` AS CHAR)");
        assert_eq!(from_epoch_ms(1_500_000.0), "FROM_UNIXTIME(1500)");
    }

    #[test]
    fn convert_dttm_like_superset() {
        let dt = chrono::NaiveDate::from_ymd_opt(2019, 1, 2)
            .unwrap()
            .and_hms_micro_opt(3, 4, 5, 678_900)
            .unwrap();
        assert_eq!(
            convert_dttm(dt, "DATE").as_deref(),
            Some("STR_TO_DATE('2019-01-02', '%Y-%m-%d')")
        );
        assert_eq!(
            convert_dttm(dt, "DATETIME").as_deref(),
            Some("STR_TO_DATE('2019-01-02 03:04:05.678900', '%Y-%m-%d %H:%i:%s.%f')")
        );
        assert_eq!(
            convert_dttm(dt, "TIMESTAMP").as_deref(),
            Some("STR_TO_DATE('2019-01-02 03:04:05.678900', '%Y-%m-%d %H:%i:%s.%f')")
        );
        assert_eq!(convert_dttm(dt, "TIME"), None);
        assert_eq!(convert_dttm(dt, "VARCHAR(10)"), None);
    }

    #[test]
    fn types_render_like_sqlalchemy() {
        let cases = [
            ("int(11)", "INTEGER(11)"),
            ("int", "INTEGER"),
            ("bigint(20) unsigned", "BIGINT(20) UNSIGNED"),
            ("decimal(10,2)", "DECIMAL(10, 2)"),
            ("varchar(50)", "VARCHAR(50)"),
            ("tinyint(1)", "TINYINT(1)"),
            ("datetime(6)", "DATETIME(6)"),
            ("double", "DOUBLE"),
            ("enum('a','B')", "ENUM('a','B')"),
            ("mediumtext", "MEDIUMTEXT"),
        ];
        for (my, want) in cases {
            assert_eq!(render_type(my), want, "{my}");
        }
        assert_eq!(generic_type("TINYINT(1)"), Some(GenericType::Numeric));
        assert_eq!(generic_type("MEDIUMINT"), Some(GenericType::Numeric));
        assert_eq!(generic_type("BIT(1)"), Some(GenericType::Numeric));
        assert_eq!(generic_type("LONGTEXT"), Some(GenericType::String));
        assert_eq!(generic_type("DATETIME(6)"), Some(GenericType::Temporal));
        assert_eq!(generic_type("YEAR"), None);
    }

    #[test]
    fn server_errors_map_to_superset_errors() {
        let c = ctx();
        assert_eq!(
            map_server_error(
                1045,
                "Access denied for user 'bob'@'localhost' (using password: YES)",
                &c
            ),
            EngineError::AccessDenied {
                username: "bob".into()
            }
        );
        assert_eq!(
            map_server_error(1049, "Unknown database 'nope'", &c),
            EngineError::UnknownDatabase {
                database: "nope".into()
            }
        );
        assert_eq!(
            map_server_error(
                1064,
                "You have an error in your SQL syntax; check the manual that corresponds to \
                 your MySQL server version for the right syntax to use near 'FORM t' at line 1",
                &c
            )
            .message(),
            "Please check your query for syntax errors near \"FORM t' at line 1\". Then, try \
             running your query again."
        );
        assert_eq!(
            map_server_error(1146, "Table 'sales.nope' doesn't exist", &c),
            EngineError::TableNotFound {
                table: "sales.nope".into()
            }
        );
        assert_eq!(
            map_server_error(
                1969,
                "Query execution was interrupted (max_statement_time exceeded)",
                &c
            ),
            EngineError::StatementTimeout
        );
        assert_eq!(
            map_server_error(
                1792,
                "Cannot execute statement in a READ ONLY transaction",
                &c
            ),
            EngineError::NotReadOnly
        );
    }

    #[test]
    fn options_refuse_tls_and_local_infile() {
        let o = EngineOptions::default();
        for bad in [
            "mysql://u:p@h/d?ssl=1",
            "mysql://u:p@h/d?ssl_mode=REQUIRED",
            "mysql://u:p@h/d?ssl_ca=/x",
            "mysql://u:p@h/d?local_infile=1",
        ] {
            let uri = ConnectionUri::parse(bad).expect("uri");
            assert!(base_opts(&uri, &o).is_err(), "{bad}");
        }
        let uri =
            ConnectionUri::parse("mysql://u:p@h/d?charset=utf8mb4&ssl_mode=DISABLED").expect("uri");
        let (b, _) = base_opts(&uri, &o).expect("opts");
        let opts = Opts::from(b);
        assert_eq!(opts.tcp_port(), 3306);
        assert!(opts.local_infile_handler().is_none());
        assert!(!opts.enable_cleartext_plugin());
    }

    #[test]
    fn session_setup_per_flavor() {
        assert_eq!(
            session_setup(Flavor::MariaDb, Duration::from_millis(1500)),
            "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,\
             NO_ENGINE_SUBSTITUTION', SESSION time_zone = '+00:00', SESSION \
             max_statement_time = 1.5"
        );
        assert!(
            session_setup(Flavor::MySql, Duration::from_secs(2))
                .ends_with("max_execution_time = 2000")
        );
    }

    #[test]
    fn grains_are_superset_s() {
        assert_eq!(
            TIME_GRAINS.iter().map(|g| g.duration).collect::<Vec<_>>(),
            [
                "PT1S",
                "PT1M",
                "PT1H",
                "P1D",
                "P1W",
                "P1M",
                "P3M",
                "P1Y",
                "1969-12-29T00:00:00Z/P1W"
            ]
        );
    }
}
