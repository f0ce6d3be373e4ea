//! SQLite: files opened without CREATE, catalog queries through the bindable `pragma_*` table
//! functions, declared-type rendering and error mapping.
//!
//! Connections live in a small bb8 pool and every call runs on tokio's blocking pool. A
//! statement that outlives the statement timeout is interrupted by a progress handler.
//! Cancellation safety: if the caller's future is dropped, the blocking call still finishes
//! (bounded by that timeout) before its connection goes back to the pool.
//!
//! **Lock-down:** whatever the SQL text looks like (comments, spellings no parser of ours
//! knows), SQLite itself refuses what could escape the statement or the file: every connection
//! carries an authorizer ([`authorize`]) that denies ATTACH/DETACH, PRAGMAs that change
//! anything, transaction control and savepoints (state that would outlive the request on a
//! pooled connection), temporary tables, views and triggers (they would shadow the file's
//! tables for the connection's next users), dangerous functions, and every write unless the
//! database allows DML, in which case the file is also opened read-write (read-only
//! otherwise). The connection also runs with `trusted_schema=OFF`, the defensive flag, no
//! attached databases, and values no longer than the result budget. A connection that is
//! somehow left inside a transaction is discarded, never reused.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bb8::{ErrorSink, ManageConnection, Pool, PooledConnection};
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::Type;
use rusqlite::{Batch, Connection, ErrorCode, OpenFlags};

use super::{
    Budget, Cell, ColumnInfo, EngineError, EngineOptions, ExecOptions, ForeignKey, GenericType,
    IndexInfo, LastError, PrimaryKey, ResultColumn, ResultSet, TableEntry, TableKind,
    TableMetadata, TimeGrain,
};
use crate::uri::ConnectionUri;

/// The one schema of a SQLite database as Liteset exposes it.
const MAIN: &str = "main";

/// How long a statement waits on another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest SQL text a connection compiles (requests bodies are smaller by default).
const MAX_SQL_LENGTH: i32 = 16 * 1024 * 1024;

/// Smallest per-value length limit, whatever the result budget (catalog reads need room).
const MIN_VALUE_LENGTH: i32 = 1024 * 1024;

/// Deepest trigger recursion (SQLite's default is 1000).
const MAX_TRIGGER_DEPTH: i32 = 16;

/// A bounded pool of connections to one SQLite file.
#[derive(Clone)]
pub(crate) struct SqlitePool {
    pool: Pool<Manager>,
    last: LastError,
    statement_timeout: Duration,
    max_result_bytes: usize,
}

/// How a connection is locked down.
#[derive(Clone, Copy, Debug)]
struct Lockdown {
    /// The database allows DML: opened read-write, writes authorized.
    writable: bool,
    /// `SQLITE_LIMIT_LENGTH`: the longest string or blob any expression may produce.
    max_value_length: i32,
}

impl Lockdown {
    fn new(options: &EngineOptions) -> Lockdown {
        let budget = match options.max_result_bytes {
            0 => i32::MAX,
            n => i32::try_from(n).unwrap_or(i32::MAX),
        };
        Lockdown {
            writable: options.allow_dml,
            // SQLite caps the limit at its compile-time maximum (1e9) by itself.
            max_value_length: budget.max(MIN_VALUE_LENGTH),
        }
    }
}

/// Opens connections to one file.
#[derive(Debug)]
pub(crate) struct Manager {
    path: PathBuf,
    lockdown: Lockdown,
}

impl ManageConnection for Manager {
    type Connection = Connection;
    type Error = EngineError;

    async fn connect(&self) -> Result<Connection, EngineError> {
        let path = self.path.clone();
        let lockdown = self.lockdown;
        tokio::task::spawn_blocking(move || open(&path, lockdown))
            .await
            .map_err(|e| EngineError::other(format!("SQLite open task failed: {e}")))?
    }

    async fn is_valid(&self, _conn: &mut Connection) -> Result<(), EngineError> {
        // A local file handle does not go stale the way a socket does.
        Ok(())
    }

    fn has_broken(&self, conn: &mut Connection) -> bool {
        // The authorizer refuses BEGIN, so this should never happen; if a transaction is open
        // anyway, the connection is closed (which rolls it back) rather than handed to the
        // next user.
        let open = !conn.is_autocommit();
        if open {
            tracing::warn!("SQLite connection left inside a transaction discarded");
        }
        open
    }
}

#[derive(Clone, Debug)]
struct Sink(LastError);

impl ErrorSink<EngineError> for Sink {
    fn sink(&self, error: EngineError) {
        tracing::debug!(error = %error, "SQLite engine connection failed");
        self.0.set(error);
    }

    fn boxed_clone(&self) -> Box<dyn ErrorSink<EngineError>> {
        Box::new(self.clone())
    }
}

/// Opens `path` without CREATE (a missing file is an error, never created), read-only unless
/// the database allows DML, without URI interpretation, then reads the schema so a
/// non-database file fails here, and locks the connection down.
fn open(path: &Path, lockdown: Lockdown) -> Result<Connection, EngineError> {
    let mode = if lockdown.writable {
        OpenFlags::SQLITE_OPEN_READ_WRITE
    } else {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    };
    let flags = mode | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // The bundled SQLite is built with SQLITE_USE_URI, so a name starting with `file:` would
    // be read as a URI (its own path, `mode`, `vfs`, …) whatever the flags say: `./` makes it
    // the plain relative name the connection guard checked.
    let literal;
    let path = if path.as_os_str().as_encoded_bytes().starts_with(b"file:") {
        literal = Path::new(".").join(path);
        literal.as_path()
    } else {
        path
    };
    let conn = Connection::open_with_flags(path, flags).map_err(|e| open_error(path, &e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(map_error)?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| open_error(path, &e))?;
    lock_down(&conn, lockdown)?;
    Ok(conn)
}

/// Settings, limits and the authorizer of an analytics connection (see the module docs).
fn lock_down(conn: &Connection, lockdown: Lockdown) -> Result<(), EngineError> {
    use rusqlite::config::DbConfig;
    use rusqlite::limits::Limit;
    // Extension loading stays off: rusqlite never enables it, and `load_extension()` is also
    // refused by the authorizer below.
    for (setting, on) in [
        (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
        (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
        (DbConfig::SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, false),
        (DbConfig::SQLITE_DBCONFIG_WRITABLE_SCHEMA, false),
    ] {
        conn.set_db_config(setting, on).map_err(map_error)?;
    }
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0);
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, lockdown.max_value_length);
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_LENGTH);
    conn.set_limit(Limit::SQLITE_LIMIT_TRIGGER_DEPTH, MAX_TRIGGER_DEPTH);
    let writable = lockdown.writable;
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        match authorize(&ctx.action, writable) {
            Ok(()) => Authorization::Allow,
            Err(action) => {
                REFUSED.with(|r| *r.borrow_mut() = Some(action));
                Authorization::Deny
            }
        }
    }));
    Ok(())
}

thread_local! {
    /// What the authorizer last refused on this thread. SQLite reports a denial only as "not
    /// authorized"; the statement is compiled on the thread that then maps the error, so
    /// [`map_error_ref`] takes the reason from here.
    static REFUSED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Pragmas that only report, whatever their argument (the argument names a table or index).
const REPORTING_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_info",
    "index_xinfo",
    "index_list",
    "foreign_key_list",
    "collation_list",
    "function_list",
    "module_list",
    "pragma_list",
    "database_list",
    "compile_options",
];

/// Pragmas that report when given no value (and change a setting when given one).
const GETTER_PRAGMAS: &[&str] = &[
    "user_version",
    "application_id",
    "schema_version",
    "data_version",
    "encoding",
    "page_size",
    "page_count",
    "freelist_count",
    "foreign_keys",
    "journal_mode",
    "auto_vacuum",
];

/// Functions refused in every statement: they reach outside the database (files, shared
/// libraries) or corrupt the engine (`fts3_tokenizer` takes a raw pointer). Most exist only
/// in SQLite's shell or in extensions; refusing them by name keeps it so if one ever gets
/// registered.
const DENIED_FUNCTIONS: &[&str] = &[
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
    "lsdir",
    "sqlite_dbpage",
];

/// The authorizer's decision: `Err` names what is refused.
fn authorize(action: &AuthAction<'_>, writable: bool) -> Result<(), String> {
    let write = |what: &str| {
        if writable {
            Ok(())
        } else {
            Err(what.to_owned())
        }
    };
    match action {
        AuthAction::Select | AuthAction::Read { .. } | AuthAction::Recursive => Ok(()),
        AuthAction::Function { function_name } => {
            let name = function_name.to_ascii_lowercase();
            if DENIED_FUNCTIONS.contains(&name.as_str()) {
                Err(format!("the function {name}()"))
            } else {
                Ok(())
            }
        }
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => {
            let name = pragma_name.to_ascii_lowercase();
            let reports = REPORTING_PRAGMAS.contains(&name.as_str())
                || (pragma_value.is_none() && GETTER_PRAGMAS.contains(&name.as_str()));
            if reports {
                Ok(())
            } else {
                Err(format!("PRAGMA {name}"))
            }
        }
        AuthAction::Attach { .. } => Err("ATTACH".to_owned()),
        AuthAction::Detach { .. } => Err("DETACH".to_owned()),
        AuthAction::Transaction { .. } => Err("transaction control".to_owned()),
        AuthAction::Savepoint { .. } => Err("SAVEPOINT".to_owned()),
        // Temporary objects live on the pooled connection and would shadow the file's tables
        // for its next users.
        AuthAction::CreateTempIndex { .. }
        | AuthAction::CreateTempTable { .. }
        | AuthAction::CreateTempTrigger { .. }
        | AuthAction::CreateTempView { .. }
        | AuthAction::DropTempIndex { .. }
        | AuthAction::DropTempTable { .. }
        | AuthAction::DropTempTrigger { .. }
        | AuthAction::DropTempView { .. } => Err("a temporary object".to_owned()),
        AuthAction::Insert { .. }
        | AuthAction::Update { .. }
        | AuthAction::Delete { .. }
        | AuthAction::CreateIndex { .. }
        | AuthAction::CreateTable { .. }
        | AuthAction::CreateTrigger { .. }
        | AuthAction::CreateView { .. }
        | AuthAction::DropIndex { .. }
        | AuthAction::DropTable { .. }
        | AuthAction::DropTrigger { .. }
        | AuthAction::DropView { .. }
        | AuthAction::AlterTable { .. }
        | AuthAction::Reindex { .. }
        | AuthAction::Analyze { .. }
        | AuthAction::CreateVtable { .. }
        | AuthAction::DropVtable { .. } => write("a write"),
        _ => Err("an unknown operation".to_owned()),
    }
}

fn open_error(path: &Path, error: &rusqlite::Error) -> EngineError {
    match error.sqlite_error_code() {
        Some(ErrorCode::CannotOpen) => EngineError::UnknownDatabase {
            database: path.display().to_string(),
        },
        Some(ErrorCode::NotADatabase) => {
            EngineError::other(format!("{} is not a SQLite database", path.display()))
        }
        _ => map_error_ref(error),
    }
}

fn path_of(uri: &ConnectionUri) -> Result<PathBuf, EngineError> {
    uri.path
        .clone()
        .ok_or_else(|| EngineError::other("A SQLite URI needs a file path"))
}

/// A lazily opening pool (no file is opened until first use).
pub(crate) fn build_pool(
    uri: &ConnectionUri,
    options: &EngineOptions,
) -> Result<SqlitePool, EngineError> {
    let last = LastError::default();
    let pool = Pool::builder()
        .max_size(options.pool_size.max(1))
        .min_idle(None)
        .connection_timeout(options.pool_wait)
        .idle_timeout(Some(Duration::from_secs(600)))
        .test_on_check_out(false)
        .retry_connection(false)
        .error_sink(Box::new(Sink(last.clone())))
        .build_unchecked(Manager {
            path: path_of(uri)?,
            lockdown: Lockdown::new(options),
        });
    Ok(SqlitePool {
        pool,
        last,
        statement_timeout: options.statement_timeout,
        max_result_bytes: options.max_result_bytes,
    })
}

impl SqlitePool {
    /// `error` with the pool's budget in a result-too-large error (the error mapping does not
    /// know it).
    fn too_large(&self, error: EngineError) -> EngineError {
        match error {
            EngineError::ResultTooLarge { .. } => EngineError::ResultTooLarge {
                // Without a budget, SQLite's own maximum value length applied.
                limit: match self.max_result_bytes {
                    0 => 1_000_000_000,
                    n => n,
                },
            },
            other => other,
        }
    }

    /// Runs `f` on a pooled connection on the blocking pool, interrupted past the statement
    /// timeout.
    async fn run<T, F>(&self, f: F) -> Result<T, EngineError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, EngineError> + Send + 'static,
    {
        let conn: PooledConnection<'static, Manager> = self.last.get(&self.pool, |e| e).await?;
        let timeout = self.statement_timeout;
        tokio::task::spawn_blocking(move || {
            let limited = !timeout.is_zero();
            if limited {
                let deadline = Instant::now() + timeout;
                conn.progress_handler(1_000, Some(move || Instant::now() >= deadline));
            }
            REFUSED.with(|r| r.borrow_mut().take());
            let out = f(&conn);
            if limited {
                conn.progress_handler(0, None::<fn() -> bool>);
            }
            out
        })
        .await
        .map_err(|e| EngineError::other(format!("SQLite task failed: {e}")))?
        .map_err(|e| self.too_large(e))
    }
}

/// A fresh connection (not pooled) that reads the schema, within the connect timeout.
pub(crate) async fn test_connection(
    uri: &ConnectionUri,
    options: &EngineOptions,
) -> Result<(), EngineError> {
    let path = path_of(uri)?;
    let lockdown = Lockdown::new(options);
    let attempt = tokio::task::spawn_blocking(move || {
        let conn = open(&path, lockdown)?;
        conn.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
            .map_err(map_error)?;
        Ok(())
    });
    match tokio::time::timeout(options.connect_timeout, attempt).await {
        Ok(joined) => joined.map_err(|e| EngineError::other(format!("SQLite task failed: {e}")))?,
        Err(_) => Err(EngineError::Timeout),
    }
}

/// Always `["main"]`.
pub(crate) async fn schemas(_pool: &SqlitePool) -> Result<Vec<String>, EngineError> {
    Ok(vec![MAIN.to_owned()])
}

/// Tables and views of `main` (SQLite's internal `sqlite_*` tables left out); another schema
/// has none.
pub(crate) async fn tables(
    pool: &SqlitePool,
    schema: &str,
) -> Result<Vec<TableEntry>, EngineError> {
    if schema != MAIN {
        return Ok(Vec::new());
    }
    pool.run(|conn| {
        let mut stmt = conn
            .prepare(
                "SELECT name, type FROM sqlite_master \
                 WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
                 ORDER BY name",
            )
            .map_err(map_error)?;
        let rows = stmt
            .query_map([], |r| {
                let kind: String = r.get(1)?;
                Ok(TableEntry {
                    name: r.get(0)?,
                    kind: if kind == "view" {
                        TableKind::View
                    } else {
                        TableKind::Table
                    },
                })
            })
            .map_err(map_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(map_error)
    })
    .await
}

/// Columns, primary key, foreign keys and indexes of `table` in `main`.
pub(crate) async fn table_metadata(
    pool: &SqlitePool,
    schema: Option<&str>,
    table: &str,
) -> Result<TableMetadata, EngineError> {
    if let Some(schema) = schema.filter(|s| *s != MAIN) {
        return Err(EngineError::SchemaNotFound {
            schema: schema.to_owned(),
        });
    }
    let table = table.to_owned();
    pool.run(move |conn| read_metadata(conn, &table)).await
}

fn read_metadata(conn: &Connection, table: &str) -> Result<TableMetadata, EngineError> {
    let kind: Option<String> = conn
        .query_row(
            "SELECT type FROM sqlite_master \
             WHERE type IN ('table', 'view') AND name = ?1 COLLATE NOCASE",
            [table],
            |r| r.get(0),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })
        .map_err(map_error)?;
    let Some(kind) = kind else {
        return Err(EngineError::TableNotFound {
            table: table.to_owned(),
        });
    };

    let mut columns = Vec::new();
    let mut pk: Vec<(i64, String)> = Vec::new();
    {
        let mut stmt = conn
            .prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1) ORDER BY cid")
            .map_err(map_error)?;
        let mut rows = stmt.query([table]).map_err(map_error)?;
        while let Some(row) = rows.next().map_err(map_error)? {
            let name: String = row.get(0).map_err(map_error)?;
            let declared: String = row.get(1).map_err(map_error)?;
            let not_null: bool = row.get(2).map_err(map_error)?;
            let key_pos: i64 = row.get(3).map_err(map_error)?;
            if key_pos > 0 {
                pk.push((key_pos, name.clone()));
            }
            columns.push(column(name, &declared, !not_null));
        }
    }
    pk.sort();
    let primary_key = (!pk.is_empty()).then(|| PrimaryKey {
        name: None,
        column_names: pk.into_iter().map(|(_, n)| n).collect(),
    });

    // id → (referred table, [(from, to)]) in key order.
    let mut fks: BTreeMap<i64, (String, Vec<ColumnPair>)> = BTreeMap::new();
    {
        let mut stmt = conn
            .prepare(
                "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) \
                 ORDER BY id, seq",
            )
            .map_err(map_error)?;
        let mut rows = stmt.query([table]).map_err(map_error)?;
        while let Some(row) = rows.next().map_err(map_error)? {
            let id: i64 = row.get(0).map_err(map_error)?;
            let referred: String = row.get(1).map_err(map_error)?;
            let from: String = row.get(2).map_err(map_error)?;
            let to: Option<String> = row.get(3).map_err(map_error)?;
            fks.entry(id)
                .or_insert_with(|| (referred, Vec::new()))
                .1
                .push((from, to));
        }
    }
    let mut foreign_keys = Vec::new();
    for (referred_table, pairs) in fks.into_values() {
        let (constrained_columns, to): (Vec<String>, Vec<Option<String>>) =
            pairs.into_iter().unzip();
        // `REFERENCES t` without columns means t's primary key.
        let referred_columns = if to.iter().all(Option::is_some) {
            to.into_iter().flatten().collect()
        } else {
            primary_key_of(conn, &referred_table)?
        };
        foreign_keys.push(ForeignKey {
            name: None,
            constrained_columns,
            referred_schema: None,
            referred_table,
            referred_columns,
        });
    }

    let mut indexes = Vec::new();
    {
        let mut stmt = conn
            .prepare(
                "SELECT name, \"unique\" FROM pragma_index_list(?1) \
                 WHERE name NOT LIKE 'sqlite\\_autoindex%' ESCAPE '\\' ORDER BY name",
            )
            .map_err(map_error)?;
        let listed = stmt
            .query_map([table], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?))
            })
            .map_err(map_error)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(map_error)?;
        let mut info = conn
            .prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")
            .map_err(map_error)?;
        for (name, unique) in listed {
            // Expression keys have no name; SQLite does not give their text.
            let column_names = info
                .query_map([&name], |r| r.get::<_, Option<String>>(0))
                .map_err(map_error)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(map_error)?
                .into_iter()
                .flatten()
                .collect();
            indexes.push(IndexInfo {
                name,
                column_names,
                unique,
            });
        }
    }

    Ok(TableMetadata {
        name: table.to_owned(),
        schema: Some(MAIN.to_owned()),
        kind: if kind == "view" {
            TableKind::View
        } else {
            TableKind::Table
        },
        columns,
        primary_key,
        foreign_keys,
        indexes,
        comment: None,
    })
}

/// A foreign key's (constrained, referred) column; the referred one is NULL for `REFERENCES t`.
type ColumnPair = (String, Option<String>);

fn primary_key_of(conn: &Connection, table: &str) -> Result<Vec<String>, EngineError> {
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk")
        .map_err(map_error)?;
    let names = stmt
        .query_map([table], |r| r.get(0))
        .map_err(map_error)?
        .collect::<Result<Vec<String>, _>>()
        .map_err(map_error)?;
    Ok(names)
}

fn column(name: String, declared: &str, nullable: bool) -> ColumnInfo {
    let type_name = render_type(declared);
    let fallback = affinity(&type_name);
    ColumnInfo::typed(name, type_name, fallback, nullable, None)
}

/// The generic type SQLite's affinity rules give a declared type no Superset rule matches.
fn affinity(type_name: &str) -> GenericType {
    let t = type_name.to_ascii_uppercase();
    let numeric = ["INT", "REAL", "FLOA", "DOUB"];
    let text = ["CHAR", "CLOB", "TEXT", "BLOB"];
    if numeric.iter().any(|n| t.contains(n)) {
        GenericType::Numeric
    } else if t.is_empty() || text.iter().any(|n| t.contains(n)) {
        GenericType::String
    } else {
        // NUMERIC affinity.
        GenericType::Numeric
    }
}

/// A declared SQLite type as SQLAlchemy reflects and Superset shows it: known names kept
/// (`BOOL` → `BOOLEAN`, `INT` → `INTEGER`, `DOUBLE` → `FLOAT`, `*_CHAR` → the temporal type),
/// lengths and precisions kept for the types that take them (`VARCHAR(50)`, `NUMERIC(10, 2)`),
/// unknown names resolved by SQLite's affinity rules (`INTEGER`, `TEXT`, `REAL`, `NUMERIC`).
/// An empty declared type stays empty.
pub fn render_type(declared: &str) -> String {
    let declared = declared.trim();
    let (name, args) = match declared.find('(') {
        Some(i) => (
            declared[..i].trim(),
            declared[i + 1..].trim_end().trim_end_matches(')'),
        ),
        None => (declared, ""),
    };
    let name = name.to_ascii_uppercase();
    let numbers: Vec<&str> = args
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .collect();
    let with_args = |base: &str| {
        if numbers.is_empty() {
            base.to_owned()
        } else {
            format!("{base}({})", numbers.join(", "))
        }
    };
    match name.as_str() {
        "" => String::new(),
        "BOOL" | "BOOLEAN" => "BOOLEAN".to_owned(),
        "INT" | "INTEGER" => "INTEGER".to_owned(),
        "DOUBLE" => with_args("FLOAT"),
        "DATE_CHAR" => "DATE".to_owned(),
        "DATETIME_CHAR" => "DATETIME".to_owned(),
        "TIME_CHAR" => "TIME".to_owned(),
        "BIGINT" | "BLOB" | "DATE" | "DATETIME" | "JSON" | "SMALLINT" | "REAL" | "TIME"
        | "TIMESTAMP" => name,
        "CHAR" | "VARCHAR" | "NCHAR" | "NVARCHAR" | "TEXT" | "DECIMAL" | "NUMERIC" | "FLOAT" => {
            with_args(&name)
        }
        n if n.contains("INT") => "INTEGER".to_owned(),
        n if n.contains("CHAR") || n.contains("CLOB") || n.contains("TEXT") => "TEXT".to_owned(),
        n if n.contains("BLOB") => "BLOB".to_owned(),
        n if n.contains("REAL") || n.contains("FLOA") || n.contains("DOUB") => "REAL".to_owned(),
        _ => with_args("NUMERIC"),
    }
}

/// The columns of a single read-only statement. Columns with a declared type (those read
/// straight from a table) take it; for the others (expressions) the first row's value decides
/// (`INT`, `FLOAT`, `STRING`, as Superset's result sets name them), `STRING` when there is none.
pub(crate) async fn query_columns(
    pool: &SqlitePool,
    sql: &str,
) -> Result<Vec<ColumnInfo>, EngineError> {
    let sql = sql.to_owned();
    pool.run(move |conn| describe(conn, &sql)).await
}

fn describe(conn: &Connection, sql: &str) -> Result<Vec<ColumnInfo>, EngineError> {
    let mut batch = Batch::new(conn, sql);
    let mut stmt = batch
        .next()
        .map_err(map_error)?
        .ok_or_else(|| EngineError::other("Virtual dataset query cannot be empty"))?;
    // Whether the rest parses or not, a second statement is refused as such.
    if !matches!(batch.next(), Ok(None)) {
        return Err(EngineError::MultipleStatements);
    }
    if !stmt.readonly() {
        return Err(EngineError::NotReadOnly);
    }
    if stmt.parameter_count() > 0 {
        return Err(EngineError::other(
            "The query has bind parameters; a dataset query cannot have any.",
        ));
    }
    let described: Vec<(String, Option<String>)> = stmt
        .columns()
        .iter()
        .map(|c| (c.name().to_owned(), c.decl_type().map(str::to_owned)))
        .collect();
    let mut first_row: Vec<Option<Type>> = vec![None; described.len()];
    if described.iter().any(|(_, d)| d.is_none()) {
        let mut rows = stmt.query([]).map_err(map_error)?;
        if let Some(row) = rows.next().map_err(map_error)? {
            for (i, slot) in first_row.iter_mut().enumerate() {
                *slot = Some(row.get_ref(i).map_err(map_error)?.data_type());
            }
        }
    }
    Ok(described
        .into_iter()
        .zip(first_row)
        .map(|((name, declared), seen)| match declared {
            Some(declared) => column(name, &declared, true),
            None => {
                let inferred = match seen {
                    Some(Type::Integer) => "INT",
                    Some(Type::Real) => "FLOAT",
                    Some(Type::Blob) => "BLOB",
                    _ => "STRING",
                };
                ColumnInfo::typed(name, inferred.to_owned(), GenericType::String, true, None)
            }
        })
        .collect())
}

/// SQLite's time grains (Superset's `SqliteEngineSpec`), on ISO text or julian values.
pub(crate) const TIME_GRAINS: &[TimeGrain] = &[
    TimeGrain {
        duration: "PT1S",
        name: "Second",
        template: "DATETIME(STRFTIME('%Y-%m-%dT%H:%M:%S', {col}))",
    },
    TimeGrain {
        duration: "PT1M",
        name: "Minute",
        template: "DATETIME(STRFTIME('%Y-%m-%dT%H:%M:00', {col}))",
    },
    TimeGrain {
        duration: "PT1H",
        name: "Hour",
        template: "DATETIME(STRFTIME('%Y-%m-%dT%H:00:00', {col}))",
    },
    TimeGrain {
        duration: "P1D",
        name: "Day",
        template: "DATETIME({col}, 'start of day')",
    },
    TimeGrain {
        duration: "P1W",
        name: "Week",
        template: "DATETIME({col}, 'start of day', -((CAST(STRFTIME('%w', {col}) AS INTEGER) + 6) % 7) || ' days')",
    },
    TimeGrain {
        duration: "P1M",
        name: "Month",
        template: "DATETIME({col}, 'start of month')",
    },
    TimeGrain {
        duration: "P3M",
        name: "Quarter",
        template: "DATETIME({col}, 'start of month', PRINTF('-%d month', (CAST(STRFTIME('%m', {col}) AS INTEGER) - 1) % 3))",
    },
    TimeGrain {
        duration: "P1Y",
        name: "Year",
        template: "DATETIME({col}, 'start of year')",
    },
    TimeGrain {
        duration: "1969-12-28T00:00:00Z/P1W",
        name: "Week starting Sunday",
        template: "DATETIME({col}, 'start of day', -CAST(STRFTIME('%w', {col}) AS INTEGER) || ' days')",
    },
    TimeGrain {
        duration: "1969-12-29T00:00:00Z/P1W",
        name: "Week starting Monday",
        template: "DATETIME({col}, 'start of day', -((CAST(STRFTIME('%w', {col}) AS INTEGER) + 6) % 7) || ' days')",
    },
    TimeGrain {
        duration: "P1W/1970-01-03T00:00:00Z",
        name: "Week ending Saturday",
        template: "DATETIME({col}, 'start of day', 'weekday 6')",
    },
    TimeGrain {
        duration: "P1W/1970-01-04T00:00:00Z",
        name: "Week ending Sunday",
        template: "DATETIME({col}, 'start of day', 'weekday 0')",
    },
];

/// Superset's SQLite `convert_dttm`: ISO text, which is how SQLite stores datetimes.
pub(crate) fn datetime_literal(dt: chrono::NaiveDateTime, type_name: &str) -> String {
    if type_name.trim().eq_ignore_ascii_case("DATE") {
        format!("'{}'", dt.format("%Y-%m-%d"))
    } else {
        format!("'{}'", dt.format("%Y-%m-%d %H:%M:%S"))
    }
}

/// Superset's `SqliteEngineSpec.convert_dttm`: string and datetime types (SQLAlchemy's
/// `String`/`DateTime` by the type's leading word) as `'YYYY-MM-DD HH:MM:SS'`, anything else
/// (`DATE` included) none.
pub(crate) fn convert_dttm(dt: chrono::NaiveDateTime, target_type: &str) -> Option<String> {
    let t = target_type.trim().to_ascii_lowercase();
    let datetime = t.starts_with("timestamp") || t.starts_with("datetime");
    (datetime || super::generic_type(&t) == Some(super::GenericType::String))
        .then(|| format!("'{}'", dt.format("%Y-%m-%d %H:%M:%S")))
}

/// Runs one statement (see [`super::Engines::execute`]) on the blocking pool. Dropping the
/// returned future interrupts the statement; the interrupt is only ever delivered while this
/// statement is still running, never to a later user of the pooled connection.
pub(crate) async fn execute(
    pool: &SqlitePool,
    sql: &str,
    opts: ExecOptions,
) -> Result<ResultSet, EngineError> {
    let sql = sql.to_owned();
    let conn: PooledConnection<'static, Manager> = pool.last.get(&pool.pool, |e| e).await?;
    let running = Arc::new(Mutex::new(true));
    let mut guard = Interrupter {
        handle: Some(conn.get_interrupt_handle()),
        running: running.clone(),
    };
    let timeout = pool.statement_timeout;
    let budget = Budget::new(pool.max_result_bytes);
    let task = tokio::task::spawn_blocking(move || {
        let limited = !timeout.is_zero();
        if limited {
            let deadline = Instant::now() + timeout;
            conn.progress_handler(1_000, Some(move || Instant::now() >= deadline));
        }
        let out = read_rows(&conn, &sql, opts, budget);
        if limited {
            conn.progress_handler(0, None::<fn() -> bool>);
        }
        // Under the lock: after this, an interrupt can no longer reach this connection.
        *running.lock().unwrap_or_else(PoisonError::into_inner) = false;
        drop(conn);
        out.map_err(|e| match e {
            EngineError::Other { message } if message.contains("interrupted") && limited => {
                EngineError::StatementTimeout
            }
            other => other,
        })
    });
    let out = task
        .await
        .map_err(|e| EngineError::other(format!("SQLite task failed: {e}")))?;
    guard.handle = None;
    out.map_err(|e| pool.too_large(e))
}

fn read_rows(
    conn: &Connection,
    sql: &str,
    opts: ExecOptions,
    mut budget: Budget,
) -> Result<ResultSet, EngineError> {
    REFUSED.with(|r| r.borrow_mut().take());
    let mut stmt = conn.prepare(sql).map_err(map_error)?;
    if opts.read_only && !stmt.readonly() {
        return Err(EngineError::NotReadOnly);
    }
    let columns: Vec<ResultColumn> = stmt
        .columns()
        .iter()
        .map(|c| ResultColumn {
            name: c.name().to_owned(),
            type_name: c.decl_type().unwrap_or_default().to_owned(),
        })
        .collect();
    let width = columns.len();
    let mut rows_out = Vec::new();
    let mut rows = stmt.query([]).map_err(map_error)?;
    while let Some(row) = rows.next().map_err(map_error)? {
        if rows_out.len() >= opts.max_rows {
            break;
        }
        use rusqlite::types::ValueRef;
        // Charged before anything is copied out of SQLite (blobs become hex text: twice).
        let mut bytes = 0usize;
        for i in 0..width {
            bytes += match row.get_ref(i).map_err(map_error)? {
                ValueRef::Text(t) => t.len(),
                ValueRef::Blob(b) => 2 * b.len() + 2,
                _ => 0,
            };
        }
        budget.charge(width, bytes)?;
        let mut cells = Vec::with_capacity(width);
        for i in 0..width {
            let cell = match row.get_ref(i).map_err(map_error)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Int(v),
                ValueRef::Real(v) => Cell::Float(v),
                ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Cell::Text(format!("\\x{}", hex::encode(b))),
            };
            cells.push(cell);
        }
        rows_out.push(cells);
    }
    Ok(ResultSet {
        columns,
        rows: rows_out,
    })
}

/// Interrupts a running statement when dropped before it finished.
struct Interrupter {
    handle: Option<rusqlite::InterruptHandle>,
    running: Arc<Mutex<bool>>,
}

impl Drop for Interrupter {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if *running {
                handle.interrupt();
                tracing::debug!("abandoned SQLite query interrupted");
            }
        }
    }
}

/// Maps a rusqlite error to Superset's error kinds.
pub(crate) fn map_error(error: rusqlite::Error) -> EngineError {
    map_error_ref(&error)
}

fn map_error_ref(error: &rusqlite::Error) -> EngineError {
    let (code, message) = match error {
        rusqlite::Error::SqliteFailure(code, message) => (code, message.as_deref()),
        // What `prepare` reports (with the `modern_sqlite` feature `bundled` enables).
        rusqlite::Error::SqlInputError { error, msg, .. } => (error, Some(msg.as_str())),
        rusqlite::Error::MultipleStatement => return EngineError::MultipleStatements,
        other => return EngineError::other(other),
    };
    if code.code == ErrorCode::OperationInterrupted {
        return EngineError::StatementTimeout;
    }
    // A denied function call fails with a plain error ("not authorized to use function");
    // anything else the authorizer denies, with SQLITE_AUTH.
    if code.code == ErrorCode::AuthorizationForStatementDenied
        || message.is_some_and(|m| m.starts_with("not authorized"))
    {
        let refused = REFUSED.with(|r| r.borrow_mut().take());
        return match refused.as_deref() {
            // Writes keep the meaning they have everywhere: the database is read-only.
            Some("a write") => EngineError::NotReadOnly,
            Some(action) => EngineError::Refused {
                action: action.to_owned(),
            },
            None => EngineError::Refused {
                action: "an operation".to_owned(),
            },
        };
    }
    if code.code == ErrorCode::TooBig {
        // A value longer than SQLITE_LIMIT_LENGTH, which is the result budget.
        // [`SqlitePool::too_large`] fills in the pool's budget.
        return EngineError::ResultTooLarge { limit: 0 };
    }
    let Some(message) = message else {
        return EngineError::other(error);
    };
    if let Some(table) = message.strip_prefix("no such table: ") {
        EngineError::TableNotFound {
            table: table.to_owned(),
        }
    } else if message.contains("syntax error") || message.starts_with("incomplete input") {
        EngineError::Syntax {
            message: message.to_owned(),
        }
    } else if message.contains("readonly database") {
        EngineError::NotReadOnly
    } else {
        EngineError::other(message)
    }
}

/// SQLite's keywords as SQLAlchemy 1.4's SQLite dialect lists them (`reserved_words`).
const RESERVED: &[&str] = &[
    "add",
    "after",
    "all",
    "alter",
    "analyze",
    "and",
    "as",
    "asc",
    "attach",
    "autoincrement",
    "before",
    "begin",
    "between",
    "by",
    "cascade",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "commit",
    "conflict",
    "constraint",
    "create",
    "cross",
    "current_date",
    "current_time",
    "current_timestamp",
    "database",
    "default",
    "deferrable",
    "deferred",
    "delete",
    "desc",
    "detach",
    "distinct",
    "drop",
    "each",
    "else",
    "end",
    "escape",
    "except",
    "exclusive",
    "exists",
    "explain",
    "fail",
    "false",
    "for",
    "foreign",
    "from",
    "full",
    "glob",
    "group",
    "having",
    "if",
    "ignore",
    "immediate",
    "in",
    "index",
    "indexed",
    "initially",
    "inner",
    "insert",
    "instead",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "key",
    "left",
    "like",
    "limit",
    "match",
    "natural",
    "not",
    "notnull",
    "null",
    "of",
    "offset",
    "on",
    "or",
    "order",
    "outer",
    "plan",
    "pragma",
    "primary",
    "query",
    "raise",
    "references",
    "reindex",
    "rename",
    "replace",
    "restrict",
    "right",
    "rollback",
    "row",
    "select",
    "set",
    "table",
    "temp",
    "temporary",
    "then",
    "to",
    "transaction",
    "trigger",
    "true",
    "union",
    "unique",
    "update",
    "using",
    "vacuum",
    "values",
    "view",
    "virtual",
    "when",
    "where",
];

/// Whether `ident` is a reserved word in SQLite (case-insensitive).
pub fn is_reserved(ident: &str) -> bool {
    let lower = ident.to_ascii_lowercase();
    RESERVED.contains(&lower.as_str())
}

/// SQLite's built-in scalar, aggregate, window, date and math functions, for SQL Lab's
/// autocomplete (Superset's `SqliteEngineSpec.get_function_names`).
pub const FUNCTION_NAMES: &[&str] = &[
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "avg",
    "ceil",
    "ceiling",
    "changes",
    "char",
    "coalesce",
    "concat",
    "concat_ws",
    "cos",
    "cosh",
    "count",
    "cume_dist",
    "date",
    "datetime",
    "degrees",
    "dense_rank",
    "exp",
    "first_value",
    "floor",
    "format",
    "glob",
    "group_concat",
    "hex",
    "ifnull",
    "iif",
    "instr",
    "json",
    "json_array",
    "json_array_length",
    "json_each",
    "json_extract",
    "json_group_array",
    "json_group_object",
    "json_insert",
    "json_object",
    "json_patch",
    "json_quote",
    "json_remove",
    "json_replace",
    "json_set",
    "json_tree",
    "json_type",
    "json_valid",
    "julianday",
    "lag",
    "last_insert_rowid",
    "last_value",
    "lead",
    "length",
    "like",
    "likelihood",
    "likely",
    "ln",
    "load_extension",
    "log",
    "log10",
    "log2",
    "lower",
    "ltrim",
    "max",
    "min",
    "mod",
    "nth_value",
    "ntile",
    "nullif",
    "percent_rank",
    "pi",
    "pow",
    "power",
    "printf",
    "quote",
    "radians",
    "random",
    "randomblob",
    "rank",
    "replace",
    "round",
    "row_number",
    "rtrim",
    "sign",
    "sin",
    "sinh",
    "soundex",
    "sqlite_compileoption_get",
    "sqlite_compileoption_used",
    "sqlite_offset",
    "sqlite_source_id",
    "sqlite_version",
    "sqrt",
    "strftime",
    "string_agg",
    "substr",
    "substring",
    "sum",
    "tan",
    "tanh",
    "time",
    "total",
    "total_changes",
    "trim",
    "trunc",
    "typeof",
    "unhex",
    "unicode",
    "unixepoch",
    "unlikely",
    "upper",
    "zeroblob",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_types_render_like_sqlalchemy() {
        let cases = [
            ("varchar(50)", "VARCHAR(50)"),
            ("INTEGER", "INTEGER"),
            ("int", "INTEGER"),
            ("bool", "BOOLEAN"),
            ("NUMERIC(10,2)", "NUMERIC(10, 2)"),
            ("DECIMAL(10, 2)", "DECIMAL(10, 2)"),
            ("datetime", "DATETIME"),
            ("TEXT", "TEXT"),
            ("REAL", "REAL"),
            ("double", "FLOAT"),
            ("UNSIGNED BIG INT", "INTEGER"),
            ("VARYING CHARACTER(255)", "TEXT"),
            ("CLOB", "TEXT"),
            ("DOUBLE PRECISION", "REAL"),
            ("STRANGE", "NUMERIC"),
            ("", ""),
        ];
        for (declared, want) in cases {
            assert_eq!(render_type(declared), want, "{declared}");
        }
    }

    #[test]
    fn columns_type_by_superset_then_affinity() {
        let c = column("d".into(), "DATETIME", true);
        assert_eq!((c.generic, c.is_dttm), (GenericType::Temporal, true));
        let c = column("n".into(), "STRANGE", true);
        assert_eq!(c.generic, GenericType::Numeric);
        let c = column("x".into(), "", true);
        assert_eq!(c.generic, GenericType::String);
        let c = column("b".into(), "BLOB", true);
        assert_eq!(c.generic, GenericType::String);
    }

    #[test]
    fn errors_map() {
        let fail = |code: i32, msg: &str| {
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(msg.to_owned()))
        };
        assert_eq!(
            map_error(fail(1, "no such table: nope")),
            EngineError::TableNotFound {
                table: "nope".into()
            }
        );
        assert!(matches!(
            map_error(fail(1, "near \"FORM\": syntax error")),
            EngineError::Syntax { .. }
        ));
        assert_eq!(
            map_error(fail(9, "interrupted")),
            EngineError::StatementTimeout
        );
    }

    #[test]
    fn reserved_words() {
        assert!(is_reserved("Values"));
        assert!(!is_reserved("name"));
    }
}
