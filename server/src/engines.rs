//! The analytical databases users connect Liteset to (not the metadata store).
//!
//! [`Engines`] holds one bounded bb8 pool per database id, built lazily on first use and rebuilt
//! when the database row is edited (its `revision` changes). On top of the pools it answers what
//! Superset's database endpoints need: connection tests, schema and table lists, table metadata
//! and the columns of a virtual dataset's SQL. Each engine's SQL dialect lives in its own file
//! (`postgres.rs`, `sqlite.rs`); this file holds the shared types, Superset's column typing rules
//! and [`EngineError`], whose `error_type`/`message`/`issue_codes`/`invalid` are what the api layer
//! renders as a SIP-40 error.
//!
//! **Invariants:** no password ever reaches a message, a `Debug` output or a log line
//! ([`ConnectionUri`]'s `Debug` masks it). Table and schema names from HTTP clients are only ever
//! bound as parameters or quoted with [`quote_ident`]. Dropping any future here is safe: a
//! PostgreSQL transaction that is dropped sends its ROLLBACK before the connection is reused, and a
//! SQLite call finishes on the blocking pool before its connection returns to the pool.

pub mod clickhouse;
pub mod guard;
pub mod mysql;
pub mod postgres;
pub mod sqlite;

pub use guard::{ConnectionGuard, GuardConfig};

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::uri::{ConnectionUri, Engine};

/// What is needed to reach one analytical database.
#[derive(Clone, Debug)]
pub struct ConnectionSpec {
    /// The database row's id; pools are keyed by it.
    pub database_id: i64,
    /// The connection URI, with its plaintext password (its `Debug` masks the password).
    pub uri: ConnectionUri,
    /// Changes whenever the database row is edited (e.g. its `changed_on`); a different revision
    /// makes [`Engines`] rebuild the pool.
    pub revision: String,
    /// This database's pool and timeout settings; `None` uses the registry's defaults.
    pub options: Option<EngineOptions>,
    /// The database's `server_cert` (PEM): the root its server's certificate must chain to
    /// (PostgreSQL; `pgtls.rs`). Public material, but still never logged.
    pub server_cert: Option<String>,
}

/// Pool and timeout settings of one database's pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineOptions {
    /// Maximum connections per database.
    pub pool_size: u32,
    /// Time allowed to open a connection.
    pub connect_timeout: Duration,
    /// How long a query waits for a free pooled connection before failing with
    /// [`EngineError::PoolTimeout`]; requests queue fairly (FIFO) meanwhile.
    pub pool_wait: Duration,
    /// Longest a single statement may run; `Duration::ZERO` disables the limit. Enforced twice:
    /// by the database (`statement_timeout`) and by a client-side timer that cancels the
    /// statement inside the database.
    pub statement_timeout: Duration,
    /// The most bytes one statement's result may hold (cell bytes plus [`CELL_OVERHEAD`] per
    /// cell), counted while rows arrive; past it the statement is cancelled and fails with
    /// [`EngineError::ResultTooLarge`]. 0 disables the budget.
    pub max_result_bytes: usize,
    /// The database allows DML (`allow_dml`): SQLite files are opened read-write and the
    /// SQLite authorizer lets writes through. Without it they are opened read-only.
    pub allow_dml: bool,
}

/// Default of [`EngineOptions::max_result_bytes`]: 64 MiB.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 64 * 1024 * 1024;

/// What each cell costs against the result budget besides its text or blob bytes: its
/// in-memory size, so a result of millions of tiny cells is bounded too.
pub const CELL_OVERHEAD: usize = std::mem::size_of::<Cell>();

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            pool_size: 10,
            connect_timeout: Duration::from_secs(10),
            pool_wait: Duration::from_secs(30),
            statement_timeout: Duration::from_secs(300),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            allow_dml: false,
        }
    }
}

/// The byte budget of one statement's result, charged as rows arrive (see
/// [`EngineOptions::max_result_bytes`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    limit: usize,
    used: usize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Budget {
        Budget { limit, used: 0 }
    }

    /// Charges one row of cells whose payloads are `bytes` long in total.
    pub(crate) fn charge(&mut self, cells: usize, bytes: usize) -> Result<(), EngineError> {
        self.used = self
            .used
            .saturating_add(bytes)
            .saturating_add(cells.saturating_mul(CELL_OVERHEAD));
        if self.limit > 0 && self.used > self.limit {
            return Err(EngineError::ResultTooLarge { limit: self.limit });
        }
        Ok(())
    }
}

/// One value of a query result, typed by what the database returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number (NaN and infinities included).
    Float(f64),
    /// An exact decimal, as the database printed it (`43320.70` keeps its scale for CSV).
    Decimal(String),
    /// Text (and any type without a better representation).
    Text(String),
    /// A timestamp without time zone.
    Timestamp(chrono::NaiveDateTime),
    /// A timestamp with time zone, in UTC.
    TimestampTz(chrono::NaiveDateTime),
    /// A date.
    Date(chrono::NaiveDate),
    /// A time of day.
    Time(chrono::NaiveTime),
    /// A nested value a plugin produced (a list of outliers, say); never read from a database.
    Json(serde_json::Value),
}

impl Cell {
    /// Rough heap plus inline size, for byte-bounded caches.
    pub fn weight(&self) -> usize {
        std::mem::size_of::<Cell>()
            + match self {
                Cell::Decimal(s) | Cell::Text(s) => s.len(),
                Cell::Json(v) => v.to_string().len(),
                _ => 0,
            }
    }
}

/// A column of a query result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultColumn {
    /// The column label.
    pub name: String,
    /// The database's type name (`int8`, `numeric`, `TEXT`, ...), when it reports one.
    pub type_name: String,
}

/// The rows of a query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultSet {
    /// Columns in select-list order.
    pub columns: Vec<ResultColumn>,
    /// Rows; each has one cell per column.
    pub rows: Vec<Vec<Cell>>,
}

impl ResultSet {
    /// Rough memory footprint, for byte-bounded caches.
    pub fn weight(&self) -> usize {
        let cols: usize = self
            .columns
            .iter()
            .map(|c| c.name.len() + c.type_name.len() + 48)
            .sum();
        let rows: usize = self
            .rows
            .iter()
            .map(|r| 24 + r.iter().map(Cell::weight).sum::<usize>())
            .sum();
        cols + rows
    }
}

/// How one statement is run.
#[derive(Clone, Copy, Debug)]
pub struct ExecOptions {
    /// Run inside a read-only transaction, so nothing can be written even by a function call.
    pub read_only: bool,
    /// Stop reading after this many rows (the rest is discarded).
    pub max_rows: usize,
}

/// Kind of a relation in a schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableKind {
    /// A table (PostgreSQL: also partitioned and foreign tables).
    Table,
    /// A view.
    View,
    /// A PostgreSQL materialized view.
    MaterializedView,
}

impl TableKind {
    /// The `type` Superset 6.0's `/database/<pk>/tables/` answers: it only knows `table` and
    /// `view` (SQLAlchemy lists materialized views among views).
    pub fn superset_type(self) -> &'static str {
        match self {
            TableKind::Table => "table",
            TableKind::View | TableKind::MaterializedView => "view",
        }
    }

    /// A precise name: `table`, `view` or `materialized_view`.
    pub fn as_str(self) -> &'static str {
        match self {
            TableKind::Table => "table",
            TableKind::View => "view",
            TableKind::MaterializedView => "materialized_view",
        }
    }
}

/// One relation of a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableEntry {
    /// Its name, unquoted.
    pub name: String,
    /// What it is.
    pub kind: TableKind,
}

/// Superset's `GenericDataType`; the discriminant is the wire value of `type_generic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum GenericType {
    /// Numbers.
    Numeric = 0,
    /// Text and everything unrecognised.
    String = 1,
    /// Dates, times and timestamps.
    Temporal = 2,
    /// Booleans.
    Boolean = 3,
}

impl GenericType {
    /// The integer Superset serialises.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// A column of a table or of a query's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnInfo {
    /// Column name.
    pub name: String,
    /// The type as Superset shows it (`VARCHAR(50)`, `TIMESTAMP WITHOUT TIME ZONE`, …).
    pub type_name: String,
    /// Superset's generic type for `type_name`.
    pub generic: GenericType,
    /// Whether Superset treats the column as temporal (`generic == Temporal`).
    pub is_dttm: bool,
    /// Whether the column accepts NULL (always true for query results, which do not say).
    pub nullable: bool,
    /// The column's comment.
    pub comment: Option<String>,
}

impl ColumnInfo {
    /// A column typed by `engine`'s rules ([`generic_type_for`]), text when none matches.
    pub(crate) fn for_engine(
        engine: Engine,
        name: String,
        type_name: String,
        nullable: bool,
        comment: Option<String>,
    ) -> ColumnInfo {
        let generic = generic_type_for(engine, &type_name).unwrap_or(GenericType::String);
        ColumnInfo {
            name,
            type_name,
            generic,
            is_dttm: generic == GenericType::Temporal,
            nullable,
            comment,
        }
    }

    /// A column typed by Superset's rules, with `fallback` when no rule matches `type_name`.
    pub(crate) fn typed(
        name: String,
        type_name: String,
        fallback: GenericType,
        nullable: bool,
        comment: Option<String>,
    ) -> ColumnInfo {
        let generic = generic_type(&type_name).unwrap_or(fallback);
        ColumnInfo {
            name,
            type_name,
            generic,
            is_dttm: generic == GenericType::Temporal,
            nullable,
            comment,
        }
    }
}

/// A table's primary key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrimaryKey {
    /// Constraint name (SQLite keys have none).
    pub name: Option<String>,
    /// Key columns in key order.
    pub column_names: Vec<String>,
}

/// A foreign key of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignKey {
    /// Constraint name (SQLite keys have none).
    pub name: Option<String>,
    /// Referencing columns, in key order.
    pub constrained_columns: Vec<String>,
    /// The referred table's schema when it is not on the search path (SQLAlchemy's rule).
    pub referred_schema: Option<String>,
    /// The referred table.
    pub referred_table: String,
    /// Referred columns, in key order.
    pub referred_columns: Vec<String>,
}

/// An index of a table (the primary key's own index excluded, as SQLAlchemy does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexInfo {
    /// Index name.
    pub name: String,
    /// Key columns; an expression key is given as its SQL text.
    pub column_names: Vec<String>,
    /// Whether the index is unique.
    pub unique: bool,
}

/// What Superset's `table_metadata` endpoint reports about a table or view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMetadata {
    /// Table name.
    pub name: String,
    /// Its schema (PostgreSQL: the one it was found in; SQLite: `main`).
    pub schema: Option<String>,
    /// What it is.
    pub kind: TableKind,
    /// Columns in table order.
    pub columns: Vec<ColumnInfo>,
    /// Primary key, if any.
    pub primary_key: Option<PrimaryKey>,
    /// Foreign keys, by name.
    pub foreign_keys: Vec<ForeignKey>,
    /// Indexes, by name.
    pub indexes: Vec<IndexInfo>,
    /// The table's comment.
    pub comment: Option<String>,
}

/// What Superset's `/database/available/` and a database's `backend`/`driver` say of one
/// engine spec Liteset speaks (Superset's `db_engine_specs` class of that backend).
#[derive(Clone, Copy, Debug)]
pub struct EngineSpec {
    /// The SQLAlchemy backend (`engine` of the spec).
    pub backend: &'static str,
    /// Its display name (`engine_name`).
    pub name: &'static str,
    /// The engine that runs it.
    pub engine: Engine,
    /// The driver a URI without one uses (SQLAlchemy's default for the dialect).
    pub default_driver: &'static str,
    /// The drivers Liteset accepts in URIs of this backend, sorted.
    pub drivers: &'static [&'static str],
    /// The URI shown to start from.
    pub placeholder: &'static str,
    /// Listed first (Superset's default `PREFERRED_DATABASES`).
    pub preferred: bool,
    /// Whether the spec has a connection form (`BasicParametersMixin`).
    pub form: bool,
    /// Whether CSV upload is possible (`supports_file_upload`).
    pub supports_file_upload: bool,
    /// `disable_ssh_tunneling`.
    pub disable_ssh_tunneling: bool,
}

/// The engine specs, in the order `/database/available/` lists them: the preferred ones in
/// `PREFERRED_DATABASES` order, then the others by name.
pub const ENGINE_SPECS: &[EngineSpec] = &[
    EngineSpec {
        backend: "postgresql",
        name: "PostgreSQL",
        engine: Engine::Postgres,
        default_driver: "psycopg2",
        drivers: &["psycopg2"],
        placeholder: "postgresql://user:password@host:port/dbname[?key=value&key=value...]",
        preferred: true,
        form: true,
        supports_file_upload: true,
        disable_ssh_tunneling: false,
    },
    EngineSpec {
        backend: "mysql",
        name: "MySQL",
        engine: Engine::MySql,
        default_driver: "mysqldb",
        drivers: &["mysqlconnector", "mysqldb", "pymysql"],
        placeholder: "mysql://user:password@host:port/dbname[?key=value&key=value...]",
        preferred: true,
        form: true,
        supports_file_upload: true,
        disable_ssh_tunneling: false,
    },
    EngineSpec {
        backend: "sqlite",
        name: "SQLite",
        engine: Engine::Sqlite,
        default_driver: "pysqlite",
        drivers: &["pysqlite"],
        placeholder: "engine+driver://user:password@host:port/dbname[?key=value&key=value...]",
        preferred: true,
        form: false,
        supports_file_upload: true,
        disable_ssh_tunneling: true,
    },
    EngineSpec {
        backend: "clickhouse",
        name: "ClickHouse",
        engine: Engine::ClickHouse,
        default_driver: "http",
        drivers: &["http", "https"],
        placeholder: "engine+driver://user:password@host:port/dbname[?key=value&key=value...]",
        preferred: false,
        form: false,
        supports_file_upload: false,
        disable_ssh_tunneling: false,
    },
    EngineSpec {
        backend: "clickhousedb",
        name: "ClickHouse Connect (Superset)",
        engine: Engine::ClickHouse,
        default_driver: "connect",
        drivers: &["connect"],
        placeholder: "clickhousedb://user:password@host[:port][/dbname][?secure=value&=value...]",
        preferred: false,
        form: true,
        supports_file_upload: false,
        disable_ssh_tunneling: false,
    },
    EngineSpec {
        backend: "mariadb",
        name: "MariaDB",
        engine: Engine::MySql,
        default_driver: "mysqldb",
        drivers: &["mariadbconnector", "mysqldb", "pymysql"],
        placeholder: "mysql://user:password@host:port/dbname[?key=value&key=value...]",
        preferred: false,
        form: true,
        supports_file_upload: true,
        disable_ssh_tunneling: false,
    },
];

/// The spec of a SQLAlchemy backend name (`postgres` is PostgreSQL's old alias).
pub fn engine_spec(backend: &str) -> Option<&'static EngineSpec> {
    let backend = if backend == "postgres" {
        "postgresql"
    } else {
        backend
    };
    ENGINE_SPECS.iter().find(|s| s.backend == backend)
}

/// Superset's engine name (`extra.engine_name` of its errors).
pub fn engine_name(engine: Engine) -> &'static str {
    match engine {
        Engine::Postgres => "PostgreSQL",
        Engine::Sqlite => "SQLite",
        Engine::ClickHouse => "ClickHouse Connect (Superset)",
        Engine::MySql => "MySQL",
    }
}

/// Superset's `get_column_spec` rules (`BaseEngineSpec._default_column_type_mappings`, first
/// match wins): the generic type of a type name, or `None` when no rule matches. Note that, as
/// in Superset, `INTERVAL` matches the `^int` rule first and is numeric.
pub fn generic_type(type_name: &str) -> Option<GenericType> {
    let t = type_name.trim().to_ascii_lowercase();
    let starts = |p: &str| t.starts_with(p);
    const STRING: &[&str] = &[
        "string",
        "nchar",
        "nvarchar",
        "ntext",
        "char",
        "varchar",
        "text",
        "tinytext",
        "mediumtext",
        "longtext",
    ];
    const NUMERIC: &[&str] = &[
        "smallint",
        "int",
        "bigint",
        "long",
        "decimal",
        "numeric",
        "float",
        "double",
        "real",
        "smallserial",
        "serial",
        "bigserial",
        "money",
    ];
    const TEMPORAL: &[&str] = &["timestamp", "datetime", "date", "time"];
    // The orders of the string and numeric groups matter only between groups: every string
    // rule precedes every numeric rule, which precede the temporal and boolean ones.
    if STRING.iter().any(|p| starts(p)) {
        Some(GenericType::String)
    } else if NUMERIC.iter().any(|p| starts(p)) {
        Some(GenericType::Numeric)
    } else if TEMPORAL.iter().any(|p| starts(p)) {
        Some(GenericType::Temporal)
    } else if starts("bool") {
        Some(GenericType::Boolean)
    } else {
        None
    }
}

/// [`generic_type`] with the engine's own extra rules (Superset's `column_type_mappings`):
/// the one place engine-specific type names are classified.
pub fn generic_type_for(engine: Engine, type_name: &str) -> Option<GenericType> {
    match engine {
        Engine::MySql => mysql::generic_type(type_name),
        Engine::ClickHouse => clickhouse::generic_type(type_name),
        Engine::Postgres | Engine::Sqlite => generic_type(type_name),
    }
}

/// The type SQL Lab reports for a result column of type `type_name`: the engine spec's
/// `get_datatype` of the DB-API cursor's type code (psycopg2's caster names, clickhouse-connect's
/// type names upper-cased, MySQLdb's `FIELD_TYPE` names), or `None` where the driver describes
/// none (SQLite, and types psycopg2 has no caster for).
pub fn dbapi_type(engine: Engine, type_name: &str) -> Option<String> {
    match engine {
        Engine::Postgres => postgres::psycopg2_type(type_name).map(str::to_owned),
        Engine::Sqlite => None,
        Engine::ClickHouse => (!type_name.is_empty()).then(|| type_name.to_uppercase()),
        Engine::MySql => mysql::field_type(type_name).map(str::to_owned),
    }
}

/// Quotes an identifier for `engine` the way SQLAlchemy does: left bare when it is lowercase
/// `[a-z_][a-z0-9_$]*` and not a reserved word, otherwise quoted as [`Dialect::quote`] quotes.
pub fn quote_ident(engine: Engine, ident: &str) -> String {
    let reserved = match engine {
        Engine::Postgres => postgres::is_reserved(ident),
        Engine::Sqlite => sqlite::is_reserved(ident),
        Engine::ClickHouse => clickhouse::is_reserved(ident),
        Engine::MySql => mysql::is_reserved(ident),
    };
    let bare = !ident.is_empty()
        && !reserved
        && !ident.starts_with(|c: char| c.is_ascii_digit() || c == '$')
        && ident
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$');
    if bare {
        ident.to_owned()
    } else {
        Dialect::of(engine).quote(ident)
    }
}

/// The function names SQL Lab's editor autocompletes for an engine.
pub fn function_names(engine: Engine) -> &'static [&'static str] {
    match engine {
        Engine::Postgres => postgres::FUNCTION_NAMES,
        Engine::Sqlite => sqlite::FUNCTION_NAMES,
        Engine::ClickHouse => clickhouse::FUNCTION_NAMES,
        Engine::MySql => mysql::FUNCTION_NAMES,
    }
}

/// Functions (and table functions) refused on `engine` whatever the configured deny-list says:
/// they reach outside the database (files, URLs, other servers, shells).
pub fn refused_functions(engine: Engine) -> &'static [&'static str] {
    match engine {
        Engine::Postgres | Engine::Sqlite => &[],
        Engine::ClickHouse => clickhouse::REFUSED_FUNCTIONS,
        Engine::MySql => mysql::REFUSED_FUNCTIONS,
    }
}

/// Superset's "SELECT * … LIMIT" preview query, formatted as Superset 6.0 formats it:
/// `SELECT *\nFROM public.my_table\nLIMIT 100`.
pub fn select_star(engine: Engine, schema: Option<&str>, table: &str, limit: u64) -> String {
    let name = match schema {
        Some(s) => format!("{}.{}", quote_ident(engine, s), quote_ident(engine, table)),
        None => quote_ident(engine, table),
    };
    format!("SELECT *\nFROM {name}\nLIMIT {limit}")
}

/// Why an engine operation failed. Messages are Superset's and never contain a password.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// Authentication failed (PostgreSQL 28P01).
    #[error("The password provided for username \"{username}\" is incorrect.")]
    InvalidPassword {
        /// The user name tried.
        username: String,
    },
    /// The role does not exist.
    #[error("The username \"{username}\" does not exist.")]
    InvalidUsername {
        /// The user name tried.
        username: String,
    },
    /// MySQL refused the user name and password together (it does not say which is wrong).
    #[error("Either the username \"{username}\" or the password is incorrect.")]
    AccessDenied {
        /// The user name tried.
        username: String,
    },
    /// The server asked for a password and the URI has none.
    #[error("Please re-enter the password.")]
    PasswordRequired,
    /// The database does not exist (PostgreSQL 3D000) or the SQLite file cannot be opened.
    #[error("Unable to connect to database \"{database}\".")]
    UnknownDatabase {
        /// Database name or SQLite path.
        database: String,
    },
    /// DNS could not resolve the host.
    #[error("The hostname \"{host}\" cannot be resolved.")]
    InvalidHostname {
        /// The host name.
        host: String,
    },
    /// The host refused the TCP connection.
    #[error("Port {port} on hostname \"{host}\" refused the connection.")]
    PortClosed {
        /// The host name.
        host: String,
        /// The port.
        port: u16,
    },
    /// The host did not answer (unreachable, or the connect timed out).
    #[error("The host \"{host}\" might be down, and can't be reached on port {port}.")]
    HostDown {
        /// The host name.
        host: String,
        /// The port.
        port: u16,
    },
    /// Opening or testing a connection took too long.
    #[error(
        "Please check your connection details and database settings, and ensure that your \
         database is accepting connections, then try connecting again."
    )]
    Timeout,
    /// A statement ran longer than the statement timeout and was cancelled.
    #[error("The query exceeded the statement timeout and was cancelled.")]
    StatementTimeout,
    /// No free pooled connection within the connection timeout.
    #[error("The database is currently running too many queries.")]
    PoolTimeout,
    /// The table does not exist (or is not visible to the connecting user).
    #[error("The table \"{table}\" does not exist. A valid table must be used to run this query.")]
    TableNotFound {
        /// The table name as asked.
        table: String,
    },
    /// The schema does not exist.
    #[error(
        "The schema \"{schema}\" does not exist. A valid schema must be used to run this query."
    )]
    SchemaNotFound {
        /// The schema name as asked.
        schema: String,
    },
    /// The SQL is not a single read-only query.
    #[error("Only `SELECT` statements are allowed")]
    NotReadOnly,
    /// The SQL holds more than one statement.
    #[error("Only single queries supported")]
    MultipleStatements,
    /// The engine itself refused an operation the statement needs (SQLite's authorizer:
    /// ATTACH, PRAGMA changes, transaction control, temporary objects, dangerous functions).
    #[error("This statement is not allowed: {action} is refused on this database.")]
    Refused {
        /// What was refused (`ATTACH`, `PRAGMA writable_schema`, `function readfile`, ...).
        action: String,
    },
    /// The result grew past [`EngineOptions::max_result_bytes`]; the statement was cancelled.
    #[error(
        "The query result exceeds the allowed limit of {} MB. Add filters or aggregations, \
         select fewer columns, or lower the row limit.",
        mebibytes(*.limit)
    )]
    ResultTooLarge {
        /// The budget in bytes.
        limit: usize,
    },
    /// The SQL does not parse; `message` is Superset's text when the database names the token.
    #[error("{message}")]
    Syntax {
        /// What to show.
        message: String,
    },
    /// The connection names something the server keeps for itself, or an engine the
    /// configuration does not allow ([`ConnectionGuard`]).
    #[error("{message}")]
    Unsafe {
        /// What to show.
        message: String,
    },
    /// Anything else, with the database's own message.
    #[error("{message}")]
    Other {
        /// The database's message.
        message: String,
    },
}

impl EngineError {
    /// Superset's SIP-40 `error_type`.
    pub fn error_type(&self) -> &'static str {
        match self {
            EngineError::InvalidPassword { .. } => "CONNECTION_INVALID_PASSWORD_ERROR",
            EngineError::InvalidUsername { .. } => "CONNECTION_INVALID_USERNAME_ERROR",
            EngineError::PasswordRequired | EngineError::AccessDenied { .. } => {
                "CONNECTION_ACCESS_DENIED_ERROR"
            }
            EngineError::UnknownDatabase { .. } => "CONNECTION_UNKNOWN_DATABASE_ERROR",
            EngineError::InvalidHostname { .. } => "CONNECTION_INVALID_HOSTNAME_ERROR",
            EngineError::PortClosed { .. } => "CONNECTION_PORT_CLOSED_ERROR",
            EngineError::HostDown { .. } => "CONNECTION_HOST_DOWN_ERROR",
            EngineError::Timeout | EngineError::PoolTimeout => "CONNECTION_DATABASE_TIMEOUT",
            EngineError::StatementTimeout => "BACKEND_TIMEOUT_ERROR",
            EngineError::TableNotFound { .. } => "TABLE_DOES_NOT_EXIST_ERROR",
            EngineError::SchemaNotFound { .. } => "SCHEMA_DOES_NOT_EXIST_ERROR",
            EngineError::NotReadOnly | EngineError::MultipleStatements => {
                "DATASOURCE_SECURITY_ACCESS_ERROR"
            }
            EngineError::Syntax { .. } => "SYNTAX_ERROR",
            EngineError::Refused { .. } => "INVALID_SQL_ERROR",
            EngineError::ResultTooLarge { .. } => "RESULT_TOO_LARGE_ERROR",
            EngineError::Other { .. } => "GENERIC_DB_ENGINE_ERROR",
            EngineError::Unsafe { .. } => "DATABASE_SECURITY_ACCESS_ERROR",
        }
    }

    /// The message to show (the `Display` text).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// Superset's `extra.issue_codes` for [`Self::error_type`]: `(code, "Issue <code> - <text>")`
    /// pairs are built by the caller from these `(code, text)` pairs.
    pub fn issue_codes(&self) -> Vec<(u32, &'static str)> {
        let codes: &[u32] = match self.error_type() {
            "CONNECTION_INVALID_PASSWORD_ERROR" => &[1013],
            "CONNECTION_INVALID_USERNAME_ERROR" => &[1012],
            "CONNECTION_ACCESS_DENIED_ERROR" => &[1014, 1015],
            "CONNECTION_UNKNOWN_DATABASE_ERROR" => &[1015],
            "CONNECTION_INVALID_HOSTNAME_ERROR" => &[1007],
            "CONNECTION_PORT_CLOSED_ERROR" => &[1008],
            "CONNECTION_HOST_DOWN_ERROR" => &[1009],
            "CONNECTION_DATABASE_TIMEOUT" => &[1001, 1009],
            "BACKEND_TIMEOUT_ERROR" => &[1000, 1001],
            "TABLE_DOES_NOT_EXIST_ERROR" => &[1003, 1005],
            "SCHEMA_DOES_NOT_EXIST_ERROR" => &[1003, 1016],
            "SYNTAX_ERROR" => &[1030],
            "INVALID_SQL_ERROR" => &[1003],
            // Superset maps no issue to this type; "too large to query" is the nearest.
            "RESULT_TOO_LARGE_ERROR" => &[1000],
            "GENERIC_DB_ENGINE_ERROR" => &[1002],
            _ => &[],
        };
        codes.iter().map(|&c| (c, issue_text(c))).collect()
    }

    /// Superset's `extra.invalid`: the connection form fields to highlight.
    pub fn invalid(&self) -> &'static [&'static str] {
        match self {
            EngineError::InvalidPassword { .. } | EngineError::AccessDenied { .. } => {
                &["username", "password"]
            }
            EngineError::InvalidUsername { .. } => &["username"],
            EngineError::PasswordRequired => &["password"],
            EngineError::UnknownDatabase { .. } => &["database"],
            EngineError::InvalidHostname { .. } => &["host"],
            EngineError::PortClosed { .. } | EngineError::HostDown { .. } => &["host", "port"],
            _ => &[],
        }
    }

    /// Whether the error is about reaching or logging into the database (as opposed to the SQL).
    pub fn is_connection_error(&self) -> bool {
        self.error_type().starts_with("CONNECTION_")
    }

    pub(crate) fn other(message: impl fmt::Display) -> EngineError {
        EngineError::Other {
            message: message.to_string(),
        }
    }
}

/// `bytes` in MiB for messages: whole when exact, else with two decimals.
fn mebibytes(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes.is_multiple_of(MIB) {
        (bytes / MIB).to_string()
    } else {
        format!("{:.2}", bytes as f64 / MIB as f64)
    }
}

/// Superset's `ISSUE_CODES` texts for the codes [`EngineError::issue_codes`] uses.
pub fn issue_text(code: u32) -> &'static str {
    match code {
        1000 => "The datasource is too large to query.",
        1001 => "The database is under an unusual load.",
        1002 => "The database returned an unexpected error.",
        1003 => {
            "There is a syntax error in the SQL query. Perhaps there was a misspelling or a typo."
        }
        1005 => "The table was deleted or renamed in the database.",
        1007 => "The hostname provided can't be resolved.",
        1008 => "The port is closed.",
        1009 => "The host might be down, and can't be reached on the provided port.",
        1012 => "The username provided when connecting to a database is not valid.",
        1013 => "The password provided when connecting to a database is not valid.",
        1014 => "Either the username or the password is wrong.",
        1015 => "Either the database is spelled incorrectly or does not exist.",
        1016 => "The schema was deleted or renamed in the database.",
        1030 => "The query has a syntax error.",
        _ => "",
    }
}

/// Registry of per-database connection pools. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Engines {
    inner: Arc<Inner>,
}

struct Inner {
    options: EngineOptions,
    guard: ConnectionGuard,
    pools: Mutex<HashMap<i64, Entry>>,
}

struct Entry {
    revision: String,
    uri: ConnectionUri,
    options: Option<EngineOptions>,
    server_cert: Option<String>,
    pool: EnginePool,
}

#[derive(Clone)]
enum EnginePool {
    Postgres(postgres::PgPool),
    Sqlite(sqlite::SqlitePool),
    ClickHouse(clickhouse::ChPool),
    MySql(mysql::MyPool),
}

impl fmt::Debug for Engines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<i64> = self.lock().keys().copied().collect();
        f.debug_struct("Engines")
            .field("options", &self.inner.options)
            .field("pools", &ids)
            .finish()
    }
}

impl Engines {
    /// An empty registry; pools are created on first use, and only for connections `guard`
    /// admits.
    pub fn new(options: EngineOptions, guard: ConnectionGuard) -> Engines {
        Engines {
            inner: Arc::new(Inner {
                options,
                guard,
                pools: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The settings every pool is built with.
    pub fn options(&self) -> &EngineOptions {
        &self.inner.options
    }

    /// Which connections may be opened; checked again before every connection.
    pub fn guard(&self) -> &ConnectionGuard {
        &self.inner.guard
    }

    /// Refuses a connection the guard does not admit (a record stored before the guard
    /// existed, or edited in the store directly).
    fn admit(&self, uri: &ConnectionUri) -> Result<(), EngineError> {
        self.inner.guard.check(uri).map_err(|e| {
            tracing::warn!(uri = %uri, "connection refused by the connection guard");
            EngineError::Unsafe {
                message: e.to_string(),
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Entry>> {
        // The map is only read and written whole under the lock, so a poisoned one is intact.
        self.inner
            .pools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Drops the pool of a deleted database. Connections in use close when they are returned.
    pub fn forget(&self, database_id: i64) {
        if self.lock().remove(&database_id).is_some() {
            tracing::debug!(database_id, "engine pool dropped");
        }
    }

    /// The pool for `spec`, built if missing or if the database was edited since.
    fn pool(&self, spec: &ConnectionSpec) -> Result<EnginePool, EngineError> {
        let mut pools = self.lock();
        if let Some(entry) = pools.get(&spec.database_id)
            && entry.revision == spec.revision
            && entry.uri == spec.uri
            && entry.options == spec.options
            && entry.server_cert == spec.server_cert
        {
            return Ok(entry.pool.clone());
        }
        self.admit(&spec.uri)?;
        let options = spec.options.as_ref().unwrap_or(&self.inner.options);
        let pool = match spec.uri.engine {
            Engine::Postgres => EnginePool::Postgres(postgres::build_pool(
                &spec.uri,
                spec.server_cert.as_deref(),
                options,
            )?),
            Engine::Sqlite => EnginePool::Sqlite(sqlite::build_pool(&spec.uri, options)?),
            Engine::ClickHouse => {
                EnginePool::ClickHouse(clickhouse::build_pool(&spec.uri, options)?)
            }
            Engine::MySql => EnginePool::MySql(mysql::build_pool(&spec.uri, options)?),
        };
        tracing::debug!(
            database_id = spec.database_id,
            uri = %spec.uri,
            "engine pool created"
        );
        pools.insert(
            spec.database_id,
            Entry {
                revision: spec.revision.clone(),
                uri: spec.uri.clone(),
                options: spec.options.clone(),
                server_cert: spec.server_cert.clone(),
                pool: pool.clone(),
            },
        );
        Ok(pool)
    }

    /// Opens a fresh connection (never a pooled one) and runs `SELECT 1`, within the connect
    /// timeout.
    pub async fn test_connection(&self, spec: &ConnectionSpec) -> Result<(), EngineError> {
        self.admit(&spec.uri)?;
        let options = &self.inner.options;
        match spec.uri.engine {
            Engine::Postgres => {
                postgres::test_connection(&spec.uri, spec.server_cert.as_deref(), options).await
            }
            Engine::Sqlite => sqlite::test_connection(&spec.uri, options).await,
            Engine::ClickHouse => clickhouse::test_connection(&spec.uri, options).await,
            Engine::MySql => mysql::test_connection(&spec.uri, options).await,
        }
    }

    /// Schema names, sorted (PostgreSQL: without system schemas; SQLite: `["main"]`).
    pub async fn schemas(&self, spec: &ConnectionSpec) -> Result<Vec<String>, EngineError> {
        match self.pool(spec)? {
            EnginePool::Postgres(p) => postgres::schemas(&p).await,
            EnginePool::Sqlite(p) => sqlite::schemas(&p).await,
            EnginePool::ClickHouse(p) => clickhouse::schemas(&p).await,
            EnginePool::MySql(p) => mysql::schemas(&p).await,
        }
    }

    /// Tables and views of `schema`, sorted by name; an unknown schema has none.
    pub async fn tables(
        &self,
        spec: &ConnectionSpec,
        schema: &str,
    ) -> Result<Vec<TableEntry>, EngineError> {
        let mut tables = match self.pool(spec)? {
            EnginePool::Postgres(p) => postgres::tables(&p, schema).await?,
            EnginePool::Sqlite(p) => sqlite::tables(&p, schema).await?,
            EnginePool::ClickHouse(p) => clickhouse::tables(&p, schema).await?,
            EnginePool::MySql(p) => mysql::tables(&p, schema).await?,
        };
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(tables)
    }

    /// Columns, keys, indexes and comment of a table or view. `schema` `None` means the
    /// connection's default (PostgreSQL: the search path).
    pub async fn table_metadata(
        &self,
        spec: &ConnectionSpec,
        schema: Option<&str>,
        table: &str,
    ) -> Result<TableMetadata, EngineError> {
        match self.pool(spec)? {
            EnginePool::Postgres(p) => postgres::table_metadata(&p, schema, table).await,
            EnginePool::Sqlite(p) => sqlite::table_metadata(&p, schema, table).await,
            EnginePool::ClickHouse(p) => clickhouse::table_metadata(&p, schema, table).await,
            EnginePool::MySql(p) => mysql::table_metadata(&p, schema, table).await,
        }
    }

    /// The columns a single read-only query returns (a virtual dataset's columns). Anything but
    /// one read-only statement is refused with [`EngineError::NotReadOnly`] or
    /// [`EngineError::MultipleStatements`]. PostgreSQL only prepares the statement (never runs
    /// it); SQLite runs it for at most one row when a column has no declared type.
    pub async fn query_columns(
        &self,
        spec: &ConnectionSpec,
        sql: &str,
    ) -> Result<Vec<ColumnInfo>, EngineError> {
        let sql = trim_statement(sql);
        if sql.is_empty() {
            return Err(EngineError::other("Virtual dataset query cannot be empty"));
        }
        match self.pool(spec)? {
            EnginePool::Postgres(p) => postgres::query_columns(&p, sql).await,
            EnginePool::Sqlite(p) => sqlite::query_columns(&p, sql).await,
            EnginePool::ClickHouse(p) => clickhouse::query_columns(&p, sql).await,
            EnginePool::MySql(p) => mysql::query_columns(&p, sql).await,
        }
    }
}

impl Engines {
    /// Runs one statement and returns its rows. The statement is cancelled inside the database
    /// when the returned future is dropped (the HTTP client went away) or when the database's
    /// statement timeout passes on the client-side timer; the connection goes back to the pool
    /// only once the database has stopped working on it.
    pub async fn execute(
        &self,
        spec: &ConnectionSpec,
        sql: &str,
        opts: ExecOptions,
    ) -> Result<ResultSet, EngineError> {
        let sql = trim_statement(sql);
        if sql.is_empty() {
            return Err(EngineError::other("Empty query?"));
        }
        let timeout = spec
            .options
            .as_ref()
            .unwrap_or(&self.inner.options)
            .statement_timeout;
        let run = async {
            match self.pool(spec)? {
                EnginePool::Postgres(p) => postgres::execute(&p, sql, opts).await,
                EnginePool::Sqlite(p) => sqlite::execute(&p, sql, opts).await,
                EnginePool::ClickHouse(p) => clickhouse::execute(&p, sql, opts).await,
                EnginePool::MySql(p) => mysql::execute(&p, sql, opts).await,
            }
        };
        if timeout.is_zero() {
            return run.await;
        }
        // The database's own `statement_timeout` normally fires first; this timer also covers
        // the wait for a connection and a database that does not answer at all.
        tokio::time::timeout(timeout + Duration::from_millis(250), run)
            .await
            .unwrap_or(Err(EngineError::StatementTimeout))
    }
}

/// A time grain an engine can truncate to: Superset's ISO-8601 duration key, its display name
/// and the SQL template (`{col}` stands for the column expression).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeGrain {
    /// `P1D`, `PT1H`, `1969-12-28T00:00:00Z/P1W`, ...
    pub duration: &'static str,
    /// `Day`, `Hour`, ...
    pub name: &'static str,
    /// SQL with `{col}` for the column.
    pub template: &'static str,
}

/// The SQL each engine speaks where engines differ; chart SQL is generated only through this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    engine: Engine,
}

impl Dialect {
    /// The dialect of `engine`.
    pub fn of(engine: Engine) -> Dialect {
        Dialect { engine }
    }

    /// The engine.
    pub fn engine(self) -> Engine {
        self.engine
    }

    /// Superset's backend name (`postgresql`, `sqlite`).
    pub fn backend(self) -> &'static str {
        self.engine.backend()
    }

    /// An identifier, always quoted (PostgreSQL and SQLite: double quotes, embedded ones
    /// doubled), so no name from a dataset or a request can change the statement's structure.
    pub fn quote(self, ident: &str) -> String {
        match self.engine {
            Engine::Postgres | Engine::Sqlite => {
                format!("\"{}\"", ident.replace('"', "\"\""))
            }
            Engine::ClickHouse => clickhouse::quote(ident),
            Engine::MySql => mysql::quote(ident),
        }
    }

    /// A string literal. PostgreSQL and SQLite double quotes and treat backslashes literally
    /// (PostgreSQL pools run with `standard_conforming_strings=on`); the others escape as
    /// their own lexers read literals.
    pub fn string(self, s: &str) -> String {
        match self.engine {
            Engine::Postgres | Engine::Sqlite => format!("'{}'", s.replace('\'', "''")),
            Engine::ClickHouse => clickhouse::string(s),
            Engine::MySql => mysql::string(s),
        }
    }

    /// The alias a query's output column is given for `label` (unquoted). ClickHouse resolves
    /// a name in WHERE, GROUP BY and ORDER BY to a select-list alias before a column, so
    /// `toStartOfMonth(d) AS d … WHERE d >= …` would filter the truncated value: as Superset's
    /// `ClickHouseConnectEngineSpec._mutate_label` does, labels get a suffix there
    /// (`label_<md5[:6]>`) and the rows are renamed back. Other engines keep the label.
    pub fn label(self, label: &str) -> String {
        match self.engine {
            Engine::ClickHouse => clickhouse::mutate_label(label),
            Engine::Postgres | Engine::Sqlite | Engine::MySql => label.to_owned(),
        }
    }

    /// The grains the engine supports, in Superset's display order.
    pub fn time_grains(self) -> &'static [TimeGrain] {
        match self.engine {
            Engine::Postgres => postgres::TIME_GRAINS,
            Engine::Sqlite => sqlite::TIME_GRAINS,
            Engine::ClickHouse => clickhouse::TIME_GRAINS,
            Engine::MySql => mysql::TIME_GRAINS,
        }
    }

    /// `expr` truncated to `grain`, or `None` when the engine has no such grain.
    pub fn truncate(self, grain: &str, expr: &str) -> Option<String> {
        self.time_grains()
            .iter()
            .find(|g| g.duration == grain)
            .map(|g| g.template.replace("{col}", expr))
    }

    /// A datetime literal for comparing with a column of type `type_name`.
    pub fn datetime(self, dt: chrono::NaiveDateTime, type_name: &str) -> String {
        match self.engine {
            Engine::Postgres => postgres::datetime_literal(dt, type_name),
            Engine::Sqlite => sqlite::datetime_literal(dt, type_name),
            Engine::ClickHouse => clickhouse::datetime_literal(dt, type_name),
            Engine::MySql => mysql::datetime_literal(dt, type_name),
        }
    }

    /// Superset's `convert_dttm(target_type, dttm)`: the literal of `dt` for a column of
    /// `target_type`, or `None` when the engine has no conversion for that type (the
    /// `get_time_filter` macro's `from_expr`/`to_expr`).
    pub fn convert_dttm(self, dt: chrono::NaiveDateTime, target_type: &str) -> Option<String> {
        match self.engine {
            Engine::Postgres => postgres::convert_dttm(dt, target_type),
            Engine::Sqlite => sqlite::convert_dttm(dt, target_type),
            Engine::ClickHouse => clickhouse::convert_dttm(dt, target_type),
            Engine::MySql => mysql::convert_dttm(dt, target_type),
        }
    }

    /// A boolean literal as SQLAlchemy's `literal_binds` renders it.
    pub fn boolean(self, b: bool) -> &'static str {
        match (self.engine, b) {
            (Engine::Postgres, true) => "true",
            (Engine::Postgres, false) => "false",
            (Engine::Sqlite, true) => "1",
            (Engine::Sqlite, false) => "0",
            (Engine::ClickHouse, b) => clickhouse::boolean(b),
            (Engine::MySql, b) => mysql::boolean(b),
        }
    }

    /// `expr` as text, for LIKE on a non-text column.
    pub fn cast_text(self, expr: &str) -> String {
        match self.engine {
            Engine::Postgres => format!("CAST({expr} AS VARCHAR)"),
            Engine::Sqlite => format!("CAST({expr} AS TEXT)"),
            Engine::ClickHouse => clickhouse::cast_text(expr),
            Engine::MySql => mysql::cast_text(expr),
        }
    }

    /// A constant that marks the rows of the series-limit subquery, for dialects where an
    /// unmatched row of a `LEFT OUTER JOIN` does not read NULL in the subquery's key columns
    /// (the "Others" test): ClickHouse fills them with the type's default (`''`, 0), Nullable
    /// or not, and only a Nullable non-key column reads NULL. `None`: test the key column.
    pub fn join_match_marker(self) -> Option<&'static str> {
        match self.engine {
            Engine::ClickHouse => Some("toNullable(1)"),
            Engine::Postgres | Engine::Sqlite | Engine::MySql => None,
        }
    }

    /// A join of a subquery (`JOIN`, `LEFT OUTER JOIN`) as the dialect spells it. ClickHouse:
    /// `GLOBAL`, so the subquery runs once and its result reaches every shard of a
    /// `Distributed` table (a plain join of one is refused, `distributed_product_mode`).
    pub fn subquery_join(self, kind: &str) -> String {
        match self.engine {
            Engine::ClickHouse => format!("GLOBAL {kind}"),
            Engine::Postgres | Engine::Sqlite | Engine::MySql => kind.to_owned(),
        }
    }

    /// A column of a joined subquery aliased `alias`. ClickHouse: unqualified, because a
    /// `GLOBAL` join ships the subquery as a temporary table and 18.16 forgets its alias (the
    /// series-limit columns' `__` suffix keeps them apart from the table's).
    pub fn joined_column(self, alias: &str, column: &str) -> String {
        match self.engine {
            Engine::ClickHouse => column.to_owned(),
            Engine::Postgres | Engine::Sqlite | Engine::MySql => format!("{alias}.{column}"),
        }
    }

    /// Case-insensitive `subject LIKE pattern` (the `ILIKE` filter operator), as SQLAlchemy's
    /// `ilike` renders it for the engine.
    pub fn ilike(self, subject: &str, pattern: &str) -> String {
        match self.engine {
            Engine::Postgres => format!("{subject} ILIKE {pattern}"),
            // SQLite's LIKE is already case-insensitive for ASCII.
            Engine::Sqlite => format!("{subject} LIKE {pattern}"),
            // No ILIKE in MySQL: `lower(x) LIKE lower(y)`, whatever the column's collation.
            Engine::MySql => format!("LOWER({subject}) LIKE LOWER({pattern})"),
            // ClickHouse 18.16 has no ILIKE (current releases do): case-folded LIKE means the
            // same on both.
            Engine::ClickHouse => format!("lowerUTF8({subject}) LIKE lowerUTF8({pattern})"),
        }
    }

    /// `TO_TIMESTAMP`-style conversion of epoch milliseconds (a number compared with a
    /// temporal column).
    pub fn from_epoch_ms(self, ms: f64) -> String {
        match self.engine {
            Engine::Postgres => format!("TO_TIMESTAMP({})", ms / 1000.0),
            Engine::Sqlite => format!("DATETIME({}, 'unixepoch')", ms / 1000.0),
            Engine::ClickHouse => clickhouse::from_epoch_ms(ms),
            Engine::MySql => mysql::from_epoch_ms(ms),
        }
    }
}

/// Strips surrounding whitespace and trailing semicolons, so `SELECT 1;` counts as one statement.
pub(crate) fn trim_statement(sql: &str) -> &str {
    sql.trim()
        .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
}

/// Remembers the most recent connection error a pool hit in the background, so that a caller
/// waiting for a connection gets the real cause ("password authentication failed") rather than
/// a bare timeout. bb8 reports connect failures only to its error sink.
#[derive(Clone, Debug, Default)]
pub(crate) struct LastError {
    inner: Arc<LastErrorInner>,
}

#[derive(Debug, Default)]
struct LastErrorInner {
    /// (errors seen so far, the latest one).
    state: Mutex<(u64, Option<EngineError>)>,
    notify: tokio::sync::Notify,
}

impl LastError {
    pub(crate) fn set(&self, error: EngineError) {
        {
            let mut state = self.lock();
            state.0 += 1;
            state.1 = Some(error);
        }
        self.inner.notify.notify_waiters();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Option<EngineError>)> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The latest error if it happened after the `since`-th one.
    fn since(&self, since: u64) -> Option<EngineError> {
        let state = self.lock();
        (state.0 > since).then(|| state.1.clone()).flatten()
    }

    /// Checks a connection out of `pool`, failing early with the cause when the pool's
    /// background connect fails while we wait; `map` converts the manager's own errors.
    pub(crate) async fn get<M>(
        &self,
        pool: &bb8::Pool<M>,
        map: impl FnOnce(M::Error) -> EngineError,
    ) -> Result<bb8::PooledConnection<'static, M>, EngineError>
    where
        M: bb8::ManageConnection,
    {
        let failed = self.inner.notify.notified();
        tokio::pin!(failed);
        failed.as_mut().enable();
        // Only errors from now on say anything about this attempt.
        let start = self.lock().0;
        let cause = || self.since(start).unwrap_or(EngineError::PoolTimeout);
        tokio::select! {
            got = pool.get_owned() => match got {
                Ok(conn) => Ok(conn),
                Err(bb8::RunError::User(e)) => Err(map(e)),
                Err(bb8::RunError::TimedOut) => Err(cause()),
            },
            () = &mut failed => Err(cause()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_types_follow_superset_rules() {
        use GenericType::*;
        let cases = [
            ("VARCHAR(50)", Some(String)),
            ("TEXT", Some(String)),
            ("CHAR(3)", Some(String)),
            ("INTEGER", Some(Numeric)),
            ("BIGINT", Some(Numeric)),
            ("SMALLINT", Some(Numeric)),
            ("NUMERIC(10, 2)", Some(Numeric)),
            ("DOUBLE PRECISION", Some(Numeric)),
            ("REAL", Some(Numeric)),
            ("MONEY", Some(Numeric)),
            ("INTERVAL", Some(Numeric)),
            ("TIMESTAMP WITHOUT TIME ZONE", Some(Temporal)),
            ("TIMESTAMP WITH TIME ZONE", Some(Temporal)),
            ("DATE", Some(Temporal)),
            ("DATETIME", Some(Temporal)),
            ("TIME WITHOUT TIME ZONE", Some(Temporal)),
            ("BOOLEAN", Some(Boolean)),
            ("UUID", None),
            ("JSONB", None),
        ];
        for (t, want) in cases {
            assert_eq!(generic_type(t), want, "{t}");
        }
        let c = ColumnInfo::typed("d".into(), "DATE".into(), String, true, None);
        assert!(c.is_dttm);
        let c = ColumnInfo::typed("u".into(), "UUID".into(), String, true, None);
        assert_eq!((c.generic, c.is_dttm), (String, false));
        assert_eq!(Temporal.code(), 2);
    }

    #[test]
    fn quoting_follows_sqlalchemy() {
        let pg = Engine::Postgres;
        assert_eq!(quote_ident(pg, "my_table"), "my_table");
        assert_eq!(quote_ident(pg, "t$1"), "t$1");
        assert_eq!(quote_ident(pg, "MyTable"), "\"MyTable\"");
        assert_eq!(quote_ident(pg, "user"), "\"user\"");
        assert_eq!(quote_ident(pg, "1abc"), "\"1abc\"");
        assert_eq!(quote_ident(pg, "a b"), "\"a b\"");
        assert_eq!(quote_ident(pg, "x\"; DROP"), "\"x\"\"; DROP\"");
        assert_eq!(quote_ident(pg, ""), "\"\"");
        assert_eq!(quote_ident(pg, "été"), "\"été\"");
        // Reserved in SQLite, not in PostgreSQL.
        assert_eq!(quote_ident(pg, "values"), "values");
        assert_eq!(quote_ident(Engine::Sqlite, "values"), "\"values\"");
    }

    #[test]
    fn select_star_matches_superset() {
        assert_eq!(
            select_star(Engine::Postgres, Some("public"), "my_table", 100),
            "SELECT *\nFROM public.my_table\nLIMIT 100"
        );
        assert_eq!(
            select_star(Engine::Postgres, Some("Sales"), "order", 10),
            "SELECT *\nFROM \"Sales\".\"order\"\nLIMIT 10"
        );
        assert_eq!(
            select_star(Engine::Sqlite, None, "birth_names", 100),
            "SELECT *\nFROM birth_names\nLIMIT 100"
        );
    }

    #[test]
    fn errors_carry_superset_types_codes_and_texts() {
        let e = EngineError::InvalidPassword {
            username: "x".into(),
        };
        assert_eq!(e.error_type(), "CONNECTION_INVALID_PASSWORD_ERROR");
        assert_eq!(
            e.message(),
            "The password provided for username \"x\" is incorrect."
        );
        assert_eq!(
            e.issue_codes(),
            vec![(
                1013,
                "The password provided when connecting to a database is not valid."
            )]
        );
        assert_eq!(e.invalid(), &["username", "password"]);
        assert!(e.is_connection_error());
        let e = EngineError::PortClosed {
            host: "h".into(),
            port: 5432,
        };
        assert_eq!(
            e.message(),
            "Port 5432 on hostname \"h\" refused the connection."
        );
        assert_eq!(e.invalid(), &["host", "port"]);
        let e = EngineError::HostDown {
            host: "h".into(),
            port: 5432,
        };
        assert_eq!(
            e.message(),
            "The host \"h\" might be down, and can't be reached on port 5432."
        );
        assert_eq!(
            EngineError::UnknownDatabase {
                database: "d".into()
            }
            .message(),
            "Unable to connect to database \"d\"."
        );
        assert_eq!(
            EngineError::Timeout
                .issue_codes()
                .iter()
                .map(|c| c.0)
                .collect::<Vec<_>>(),
            vec![1001, 1009]
        );
        assert_eq!(
            EngineError::TableNotFound { table: "t".into() }.error_type(),
            "TABLE_DOES_NOT_EXIST_ERROR"
        );
        assert!(!EngineError::NotReadOnly.is_connection_error());
    }

    #[test]
    fn statements_are_trimmed() {
        assert_eq!(trim_statement("  SELECT 1 ;; \n"), "SELECT 1");
        assert_eq!(trim_statement(" ; "), "");
    }

    #[test]
    fn spec_debug_hides_password() {
        let spec = ConnectionSpec {
            database_id: 1,
            uri: ConnectionUri::parse("postgresql://u:s3cr3t@h/db").expect("uri"),
            revision: "r".into(),
            options: None,
            server_cert: None,
        };
        let shown = format!("{spec:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("XXXXXXXXXX"), "{shown}");
    }
}
