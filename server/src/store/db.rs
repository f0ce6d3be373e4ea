//! The one SQL execution interface over both metadata backends.
//!
//! Repositories write each statement once, in the SQL subset that SQLite and PostgreSQL share,
//! with `$1, $2, …` placeholders. This module binds [`Value`]s to either engine and reads rows
//! back as [`Row`]s, so a repository never knows which backend it runs on. SQLite work runs on
//! tokio's blocking pool; PostgreSQL work is natively async through bb8-postgres.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::pgpool::PgManager;
use bb8::{ManageConnection, Pool, PooledConnection};
use bytes::BytesMut;
use chrono::{DateTime, NaiveDateTime, Utc};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::{Error, Result};

/// Which engine a [`Db`] talks to; migrations use it to pick per-engine DDL words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite file.
    Sqlite,
    /// PostgreSQL server.
    Postgres,
}

/// A value bound to, or read from, a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// Boolean (an INTEGER 0/1 in SQLite).
    Bool(bool),
    /// 64-bit integer; every integer column in the schema is BIGINT.
    Int(i64),
    /// Double precision float.
    Float(f64),
    /// Text.
    Text(String),
    /// Binary data.
    Bytes(Vec<u8>),
    /// A naive UTC timestamp (TEXT in SQLite, TIMESTAMP in PostgreSQL).
    Timestamp(NaiveDateTime),
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v.into())
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Bytes(v)
    }
}
impl From<NaiveDateTime> for Value {
    fn from(v: NaiveDateTime) -> Self {
        Value::Timestamp(v)
    }
}
impl From<DateTime<Utc>> for Value {
    fn from(v: DateTime<Utc>) -> Self {
        Value::Timestamp(v.naive_utc())
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// Builds a `Vec<Value>` from heterogeneous arguments: `params![id, name, None::<String>]`.
#[macro_export]
macro_rules! params {
    () => { ::std::vec::Vec::<$crate::store::db::Value>::new() };
    ($($v:expr),+ $(,)?) => { ::std::vec![$($crate::store::db::Value::from($v)),+] };
}

/// Converts a column of a [`Row`] into a Rust type, tolerating each backend's representation
/// (SQLite has no BOOLEAN or TIMESTAMP storage class).
pub trait FromValue: Sized {
    /// Converts, or returns `None` when the value has an incompatible type.
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for Value {
    fn from_value(v: &Value) -> Option<Self> {
        Some(v.clone())
    }
}
impl FromValue for i64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
}
impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Float(f) => Some(*f),
            #[allow(clippy::cast_precision_loss, reason = "metadata floats are small")]
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}
impl FromValue for bool {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(*b),
            Value::Int(i) => Some(*i != 0),
            _ => None,
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}
impl FromValue for Vec<u8> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Bytes(b) => Some(b.clone()),
            _ => None,
        }
    }
}
impl FromValue for NaiveDateTime {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Timestamp(t) => Some(*t),
            Value::Text(s) => parse_timestamp(s),
            _ => None,
        }
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// The text form timestamps take in SQLite; it sorts lexically in time order.
const SQLITE_TS_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.6f";

fn parse_timestamp(s: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f"))
        .ok()
}

/// One result row with its column names.
#[derive(Clone, Debug)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl Row {
    /// Reads column `name` as `T`; a missing column or a type mismatch is a store error.
    pub fn get<T: FromValue>(&self, name: &str) -> Result<T> {
        let idx = self
            .columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| Error::Decode {
                column: name.to_owned(),
                message: "no such column in result".into(),
            })?;
        T::from_value(&self.values[idx]).ok_or_else(|| Error::Decode {
            column: name.to_owned(),
            message: format!("unexpected value {:?}", self.values[idx]),
        })
    }

    /// Column names in result order.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Values in result order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }
}

/// Statements that both [`Db`] and [`Tx`] can run; repositories are generic over it so the
/// same function works inside and outside a transaction.
pub trait Executor: Sync {
    /// Runs a statement that returns rows.
    fn query(&self, sql: &str, params: Vec<Value>)
    -> impl Future<Output = Result<Vec<Row>>> + Send;

    /// Runs a statement and returns the number of affected rows.
    fn execute(&self, sql: &str, params: Vec<Value>) -> impl Future<Output = Result<u64>> + Send;

    /// Which engine runs the statements.
    fn backend(&self) -> Backend;

    /// Runs a statement expected to return at most one row.
    fn query_opt(
        &self,
        sql: &str,
        params: Vec<Value>,
    ) -> impl Future<Output = Result<Option<Row>>> + Send {
        async move { Ok(self.query(sql, params).await?.into_iter().next()) }
    }

    /// Runs a statement expected to return exactly one row.
    fn query_one(&self, sql: &str, params: Vec<Value>) -> impl Future<Output = Result<Row>> + Send {
        async move {
            self.query_opt(sql, params)
                .await?
                .ok_or_else(|| Error::NotFound)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SQLite

/// bb8 manager for rusqlite connections. Opening a file is quick and local, so the blocking
/// open runs inline; every statement runs on the blocking pool (see [`SqliteConn`]).
#[derive(Clone, Debug)]
pub struct SqliteManager {
    path: std::path::PathBuf,
}

impl ManageConnection for SqliteManager {
    type Connection = rusqlite::Connection;
    type Error = rusqlite::Error;

    async fn connect(&self) -> Result<Self::Connection, Self::Error> {
        // Opening a local file takes well under a millisecond and happens only when the pool
        // grows, so it runs inline rather than paying a blocking-pool hop.
        let conn = rusqlite::Connection::open(&self.path)?;
        // WAL lets readers proceed while one writer commits; the busy timeout makes
        // concurrent writers wait for each other instead of failing.
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
        )?;
        Ok(conn)
    }

    async fn is_valid(&self, _conn: &mut Self::Connection) -> Result<(), Self::Error> {
        Ok(())
    }

    fn has_broken(&self, conn: &mut Self::Connection) -> bool {
        // A statement still running on the blocking pool when its caller was dropped (a
        // cancelled BEGIN that ran after the transaction's drop looked) can return the
        // connection inside a transaction: closing it rolls that back; never reuse it.
        !conn.is_autocommit()
    }
}

/// A checked-out SQLite connection, shareable so a [`Tx`] can move it to a blocking thread
/// for each statement.
type SqliteConn = Arc<Mutex<PooledConnection<'static, SqliteManager>>>;

async fn sqlite_run<T: Send + 'static>(
    conn: SqliteConn,
    f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(move || {
        let guard = conn.lock().map_err(|_| Error::Poisoned)?;
        f(&guard).map_err(Error::from)
    })
    .await
    .map_err(|e| Error::Task(e.to_string()))?
}

fn sqlite_bind(stmt: &mut rusqlite::Statement<'_>, params: &[Value]) -> rusqlite::Result<()> {
    use rusqlite::types::Value as Sv;
    for (i, v) in params.iter().enumerate() {
        // Parameters are named `$N` in the SQL; SQLite numbers distinct names in order of
        // appearance, so look each one up rather than trusting positions.
        let Some(idx) = stmt.parameter_index(&format!("${}", i + 1))? else {
            continue;
        };
        let sv = match v {
            Value::Null => Sv::Null,
            Value::Bool(b) => Sv::Integer(i64::from(*b)),
            Value::Int(n) => Sv::Integer(*n),
            Value::Float(f) => Sv::Real(*f),
            Value::Text(s) => Sv::Text(s.clone()),
            Value::Bytes(b) => Sv::Blob(b.clone()),
            Value::Timestamp(t) => Sv::Text(t.format(SQLITE_TS_FORMAT).to_string()),
        };
        stmt.raw_bind_parameter(idx, sv)?;
    }
    Ok(())
}

fn sqlite_query(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
) -> rusqlite::Result<Vec<Row>> {
    use rusqlite::types::ValueRef;
    let mut stmt = conn.prepare_cached(sql)?;
    sqlite_bind(&mut stmt, params)?;
    let columns: Arc<[String]> = stmt
        .column_names()
        .iter()
        .map(|c| (*c).to_owned())
        .collect();
    let n = columns.len();
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            values.push(match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::Int(v),
                ValueRef::Real(v) => Value::Float(v),
                ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
            });
        }
        out.push(Row {
            columns: columns.clone(),
            values,
        });
    }
    Ok(out)
}

fn sqlite_execute(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
) -> rusqlite::Result<u64> {
    let mut stmt = conn.prepare_cached(sql)?;
    sqlite_bind(&mut stmt, params)?;
    Ok(stmt.raw_execute()? as u64)
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

type PgPool = Pool<PgManager>;
type PgConn = PooledConnection<'static, PgManager>;

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        // The server infers each parameter's type from the statement; convert to whatever it
        // expects so repositories need no per-engine casts.
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Bool(b) => b.to_sql(ty, out),
            Value::Int(i) => match *ty {
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                #[allow(clippy::cast_precision_loss, reason = "explicit numeric widening")]
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => i.to_string().to_sql(ty, out),
                _ => i.to_sql(ty, out),
            },
            Value::Float(f) => match *ty {
                #[allow(clippy::cast_possible_truncation, reason = "FLOAT4 column")]
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                _ => f.to_sql(ty, out),
            },
            Value::Text(s) => match *ty {
                Type::JSON | Type::JSONB => {
                    serde_json::from_str::<serde_json::Value>(s)?.to_sql(ty, out)
                }
                _ => s.to_sql(ty, out),
            },
            Value::Bytes(b) => b.to_sql(ty, out),
            Value::Timestamp(t) => match *ty {
                Type::TIMESTAMPTZ => t.and_utc().to_sql(ty, out),
                _ => t.to_sql(ty, out),
            },
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A tokio-postgres error with its causes (its own text is only the kind: "db error"). Neither
/// holds the password: tokio-postgres never puts it in an error.
fn error_chain(error: &tokio_postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn pg_params(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

fn pg_row(columns: &Arc<[String]>, row: &tokio_postgres::Row) -> Result<Row> {
    let mut values = Vec::with_capacity(columns.len());
    for (i, col) in row.columns().iter().enumerate() {
        let ty = col.type_();
        let v = match *ty {
            Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::Bool),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)?
                .map(|v| Value::Int(v.into())),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)?
                .map(|v| Value::Int(v.into())),
            Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::Int),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)?
                .map(|v| Value::Float(v.into())),
            Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Value::Float),
            Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Bytes),
            Type::TIMESTAMP => row
                .try_get::<_, Option<NaiveDateTime>>(i)?
                .map(Value::Timestamp),
            Type::TIMESTAMPTZ => row
                .try_get::<_, Option<DateTime<Utc>>>(i)?
                .map(|t| Value::Timestamp(t.naive_utc())),
            Type::JSON | Type::JSONB => row
                .try_get::<_, Option<serde_json::Value>>(i)?
                .map(|j| Value::Text(j.to_string())),
            Type::UUID => row
                .try_get::<_, Option<uuid::Uuid>>(i)?
                .map(|u| Value::Text(u.to_string())),
            Type::VOID => None,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                row.try_get::<_, Option<String>>(i)?.map(Value::Text)
            }
            ref other => {
                return Err(Error::Decode {
                    column: col.name().to_owned(),
                    message: format!("unsupported PostgreSQL type {other}"),
                });
            }
        };
        values.push(v.unwrap_or(Value::Null));
    }
    Ok(Row {
        columns: columns.clone(),
        values,
    })
}

async fn pg_query(
    client: &crate::pgpool::PgClient,
    sql: &str,
    params: &[Value],
) -> Result<Vec<Row>> {
    let stmt = client.prepare_cached(sql).await?;
    let columns: Arc<[String]> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
    let rows = client.query(&stmt, &pg_params(params)).await?;
    rows.iter().map(|r| pg_row(&columns, r)).collect()
}

// ---------------------------------------------------------------------------------------------
// The public handles

/// A pool of metadata connections to one backend. Cheap to clone.
#[derive(Clone)]
pub enum Db {
    /// SQLite file, statements on the blocking pool.
    Sqlite(Pool<SqliteManager>),
    /// PostgreSQL through bb8-postgres.
    Postgres(PgPool),
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print a connection URL: it may carry a password.
        match self {
            Db::Sqlite(_) => f.write_str("Db::Sqlite"),
            Db::Postgres(_) => f.write_str("Db::Postgres"),
        }
    }
}

/// Pool settings shared by both backends.
#[derive(Clone, Copy, Debug)]
pub struct PoolOptions {
    /// Most connections open at once.
    pub max_size: u32,
    /// How long a caller waits for a free connection before failing.
    pub acquire_timeout: Duration,
}

impl Db {
    /// Opens (creating if needed) the SQLite file at `path`.
    pub async fn open_sqlite(path: &std::path::Path, opts: PoolOptions) -> Result<Db> {
        let manager = SqliteManager {
            path: path.to_owned(),
        };
        let pool = Pool::builder()
            .max_size(opts.max_size)
            .connection_timeout(opts.acquire_timeout)
            .build(manager)
            .await?;
        Ok(Db::Sqlite(pool))
    }

    /// Connects to PostgreSQL at `url` (`postgresql://user:pass@host:port/db`, with libpq's
    /// `sslmode`/`sslrootcert` options, see `pgtls.rs`).
    ///
    /// One connection is opened and closed first: bb8 only reports a failure to connect as a
    /// timeout, after retrying for the whole acquire timeout, and a server that cannot reach
    /// its metadata (a wrong CA, a wrong password) should say why at once.
    pub async fn open_postgres(url: &str, opts: PoolOptions) -> Result<Db> {
        let (config, tls) = crate::pgtls::url_config(url).map_err(|e| Error::Config {
            message: e.to_string(),
        })?;
        let probe = tokio::time::timeout(opts.acquire_timeout, config.connect(tls.clone()));
        match probe.await {
            Ok(Ok((client, connection))) => {
                drop(client);
                // Ends once the client is gone; its error (if any) tells nothing new.
                let _ = connection.await;
            }
            Ok(Err(e)) => {
                let why = crate::pgtls::describe(&e).unwrap_or_else(|| error_chain(&e));
                return Err(Error::Config {
                    message: format!("cannot connect to the PostgreSQL metadata database: {why}"),
                });
            }
            Err(_) => {
                return Err(Error::Config {
                    message: "cannot connect to the PostgreSQL metadata database: timed out".into(),
                });
            }
        }
        let manager = PgManager::new(config, tls);
        let pool = Pool::builder()
            .max_size(opts.max_size)
            .connection_timeout(opts.acquire_timeout)
            .build(manager)
            .await
            .map_err(Error::from)?;
        Ok(Db::Postgres(pool))
    }

    /// Starts a transaction. It commits only through [`Tx::commit`]; dropping it rolls back.
    ///
    /// The connection is owned by the [`Tx`] before BEGIN is sent, so a caller dropped while
    /// BEGIN is on its way (its client went away, a deadline passed) still rolls back through
    /// [`Tx`]'s drop instead of handing the pool a connection inside a transaction, where the
    /// next borrower's writes would never commit and their row locks never be released.
    pub async fn begin(&self) -> Result<Tx> {
        let tx = match self {
            Db::Sqlite(pool) => Tx {
                inner: Some(TxInner::Sqlite(Arc::new(Mutex::new(
                    pool.get_owned().await?,
                )))),
                backend: Backend::Sqlite,
            },
            Db::Postgres(pool) => Tx {
                inner: Some(TxInner::Postgres(Box::new(pool.get_owned().await?))),
                backend: Backend::Postgres,
            },
        };
        // SQLite: IMMEDIATE takes the write lock up front, so two transactions that read and
        // then write cannot deadlock on lock upgrade.
        tx.batch(match self {
            Db::Sqlite(_) => "BEGIN IMMEDIATE",
            Db::Postgres(_) => "BEGIN",
        })
        .await?;
        Ok(tx)
    }

    /// Runs a script of several statements without parameters (migrations).
    pub async fn batch(&self, sql: &str) -> Result<()> {
        match self {
            Db::Sqlite(pool) => {
                let conn = Arc::new(Mutex::new(pool.get_owned().await?));
                let sql = sql.to_owned();
                sqlite_run(conn, move |c| c.execute_batch(&sql)).await
            }
            Db::Postgres(pool) => Ok(pool.get().await?.batch_execute(sql).await?),
        }
    }
}

impl Executor for Db {
    async fn query(&self, sql: &str, params: Vec<Value>) -> Result<Vec<Row>> {
        match self {
            Db::Sqlite(pool) => {
                let conn = Arc::new(Mutex::new(pool.get_owned().await?));
                let sql = sql.to_owned();
                sqlite_run(conn, move |c| sqlite_query(c, &sql, &params)).await
            }
            Db::Postgres(pool) => {
                let conn = pool.get().await?;
                pg_query(&conn, sql, &params).await
            }
        }
    }

    async fn execute(&self, sql: &str, params: Vec<Value>) -> Result<u64> {
        match self {
            Db::Sqlite(pool) => {
                let conn = Arc::new(Mutex::new(pool.get_owned().await?));
                let sql = sql.to_owned();
                sqlite_run(conn, move |c| sqlite_execute(c, &sql, &params)).await
            }
            Db::Postgres(pool) => Ok(pool.get().await?.execute(sql, &pg_params(&params)).await?),
        }
    }

    fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }
}

enum TxInner {
    Sqlite(SqliteConn),
    // Boxed: a pooled client with its statement cache is far larger than the SQLite handle.
    Postgres(Box<PgConn>),
}

/// An open transaction holding one connection until commit or drop.
pub struct Tx {
    inner: Option<TxInner>,
    backend: Backend,
}

impl Tx {
    fn inner(&self) -> Result<&TxInner> {
        self.inner.as_ref().ok_or(Error::TxClosed)
    }

    /// Commits the transaction.
    pub async fn commit(mut self) -> Result<()> {
        match self.inner.take() {
            Some(TxInner::Sqlite(conn)) => sqlite_run(conn, |c| c.execute_batch("COMMIT")).await,
            Some(TxInner::Postgres(conn)) => Ok(conn.batch_execute("COMMIT").await?),
            None => Err(Error::TxClosed),
        }
    }

    /// Runs a parameterless script inside the transaction.
    pub async fn batch(&self, sql: &str) -> Result<()> {
        match self.inner()? {
            TxInner::Sqlite(conn) => {
                let sql = sql.to_owned();
                sqlite_run(conn.clone(), move |c| c.execute_batch(&sql)).await
            }
            TxInner::Postgres(conn) => Ok(conn.batch_execute(sql).await?),
        }
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        // A transaction left open would leak into the next borrower of the pooled connection,
        // so roll back before the connection goes back to the pool.
        match self.inner.take() {
            Some(TxInner::Sqlite(conn)) => {
                if let Ok(guard) = conn.lock()
                    && !guard.is_autocommit()
                {
                    let _ = guard.execute_batch("ROLLBACK");
                }
            }
            Some(TxInner::Postgres(conn)) => {
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    handle.spawn(async move {
                        let _ = conn.batch_execute("ROLLBACK").await;
                    });
                }
            }
            None => {}
        }
    }
}

impl Executor for Tx {
    async fn query(&self, sql: &str, params: Vec<Value>) -> Result<Vec<Row>> {
        match self.inner()? {
            TxInner::Sqlite(conn) => {
                let sql = sql.to_owned();
                sqlite_run(conn.clone(), move |c| sqlite_query(c, &sql, &params)).await
            }
            TxInner::Postgres(conn) => pg_query(conn, sql, &params).await,
        }
    }

    async fn execute(&self, sql: &str, params: Vec<Value>) -> Result<u64> {
        match self.inner()? {
            TxInner::Sqlite(conn) => {
                let sql = sql.to_owned();
                sqlite_run(conn.clone(), move |c| sqlite_execute(c, &sql, &params)).await
            }
            TxInner::Postgres(conn) => Ok(conn.execute(sql, &pg_params(&params)).await?),
        }
    }

    fn backend(&self) -> Backend {
        self.backend
    }
}
