//! PostgreSQL: connection settings, catalog queries, type names and error mapping.
//!
//! Every catalog query binds schema and table names as parameters. Connections carry
//! `statement_timeout` as a startup option, so a runaway statement is cancelled by the server
//! itself. Cancellation safety: dropping a query future leaves the request queued on the
//! connection and tokio-postgres discards its answer before the next request's, so a pooled
//! connection is never left mid-protocol; a dropped [`tokio_postgres::Transaction`] sends its
//! `ROLLBACK` first.
//!
//! **Sessions do not leak:** a read-only statement runs in a transaction that is rolled back
//! (so `set_config(…, false)` inside it is undone), and every statement [`execute`] runs is
//! followed by `DISCARD ALL` on the same pipeline, which also undoes what a rollback cannot:
//! session-level advisory locks, `LISTEN`, temporary tables, prepared statements, and settings
//! changed by a statement that ran outside a transaction (DML-allowed SQL Lab). `RESET` returns
//! settings to the connection's startup values, where `standard_conforming_strings=on` and the
//! statement timeout are pinned.

use std::sync::Arc;
use std::time::Duration;

use crate::pgpool::PgManager;
use crate::pgtls::{PgTls, TlsOptions};
use bb8::{ErrorSink, Pool};
use tokio_postgres::Config;
use tokio_postgres::error::SqlState;

use super::{
    Budget, Cell, ColumnInfo, EngineError, EngineOptions, ExecOptions, ForeignKey, GenericType,
    IndexInfo, LastError, PrimaryKey, ResultColumn, ResultSet, TableEntry, TableKind,
    TableMetadata, TimeGrain,
};
use crate::uri::ConnectionUri;

/// The port libpq assumes.
const DEFAULT_PORT: u16 = 5432;

/// A bounded pool for one PostgreSQL database.
#[derive(Clone)]
pub(crate) struct PgPool {
    pool: Pool<PgManager>,
    last: LastError,
    ctx: Arc<ErrorContext>,
    max_result_bytes: usize,
    /// The connections' TLS, for cancel requests (sent on a connection of their own).
    tls: PgTls,
}

/// What error messages may name: never the password.
#[derive(Clone, Debug)]
pub(crate) struct ErrorContext {
    username: String,
    host: String,
    port: u16,
    database: String,
}

impl ErrorContext {
    fn new(uri: &ConnectionUri) -> ErrorContext {
        ErrorContext {
            username: uri.username.clone().unwrap_or_default(),
            host: uri.host.clone().unwrap_or_else(|| "localhost".to_owned()),
            port: uri.port.unwrap_or(DEFAULT_PORT),
            database: uri.database.clone().unwrap_or_default(),
        }
    }
}

/// Records connection failures for [`LastError::get`]; never logs the password (it has none).
#[derive(Clone, Debug)]
struct Sink {
    last: LastError,
    ctx: Arc<ErrorContext>,
}

impl ErrorSink<tokio_postgres::Error> for Sink {
    fn sink(&self, error: tokio_postgres::Error) {
        // A pooled connection found dead at check-out is replaced; only failures to connect
        // are worth reporting to the caller.
        if error.is_closed() {
            return;
        }
        let mapped = map_error(&error, &self.ctx);
        tracing::debug!(error = %mapped, host = %self.ctx.host, "engine connection failed");
        self.last.set(mapped);
    }

    fn boxed_clone(&self) -> Box<dyn ErrorSink<tokio_postgres::Error>> {
        Box::new(self.clone())
    }
}

/// The tokio-postgres configuration for `uri` and its TLS (`server_cert`: the database's root
/// certificate, PEM). Recognised query options: libpq's `sslmode` and `sslrootcert` (see
/// `pgtls.rs`), `application_name`, `connect_timeout` (seconds) and `options` (passed through,
/// e.g. `-c search_path=x`). Others are ignored.
pub(crate) fn config(
    uri: &ConnectionUri,
    server_cert: Option<&str>,
    options: &EngineOptions,
) -> Result<(Config, PgTls), EngineError> {
    let mut cfg = Config::new();
    cfg.host(uri.host.as_deref().unwrap_or("localhost"))
        .port(uri.port.unwrap_or(DEFAULT_PORT))
        .dbname(uri.database.as_deref().unwrap_or_default())
        .application_name("liteset")
        .connect_timeout(options.connect_timeout);
    match uri.username.as_deref() {
        Some(user) => cfg.user(user),
        None => return Err(EngineError::other("The connection URI needs a user name.")),
    };
    if let Some(password) = &uri.password {
        cfg.password(password);
    }
    let mut server_options = Vec::new();
    let mut tls_options = TlsOptions::default();
    for (key, value) in &uri.options {
        if tls_options.take(key, value).map_err(EngineError::other)? {
            continue;
        }
        match key.as_str() {
            "application_name" => {
                cfg.application_name(value);
            }
            "connect_timeout" => {
                let secs: u64 = value
                    .parse()
                    .map_err(|_| EngineError::other("connect_timeout must be a whole number"))?;
                cfg.connect_timeout(Duration::from_secs(secs.max(1)));
            }
            "options" => server_options.push(value.clone()),
            _ => tracing::debug!(option = %key, "ignored PostgreSQL connection option"),
        }
    }
    // String literals in generated SQL double their quotes and nothing else; make sure the
    // server never reads backslashes in them as escapes.
    server_options.push("-c standard_conforming_strings=on".to_owned());
    if !options.statement_timeout.is_zero() {
        server_options.push(format!(
            "-c statement_timeout={}",
            options.statement_timeout.as_millis()
        ));
    }
    if !server_options.is_empty() {
        cfg.options(server_options.join(" "));
    }
    let tls = PgTls::new(&tls_options, server_cert).map_err(EngineError::other)?;
    tls.configure(&mut cfg);
    Ok((cfg, tls))
}

/// A lazily connecting pool (no connection is opened until first use).
pub(crate) fn build_pool(
    uri: &ConnectionUri,
    server_cert: Option<&str>,
    options: &EngineOptions,
) -> Result<PgPool, EngineError> {
    let (cfg, tls) = config(uri, server_cert, options)?;
    let ctx = Arc::new(ErrorContext::new(uri));
    let last = LastError::default();
    let pool = Pool::builder()
        .max_size(options.pool_size.max(1))
        .min_idle(None)
        .connection_timeout(options.pool_wait)
        .idle_timeout(Some(Duration::from_secs(600)))
        .retry_connection(false)
        .error_sink(Box::new(Sink {
            last: last.clone(),
            ctx: ctx.clone(),
        }))
        .build_unchecked(PgManager::new(cfg, tls.clone()));
    Ok(PgPool {
        pool,
        last,
        ctx,
        max_result_bytes: options.max_result_bytes,
        tls,
    })
}

impl PgPool {
    async fn get(&self) -> Result<bb8::PooledConnection<'static, PgManager>, EngineError> {
        let ctx = self.ctx.clone();
        self.last
            .get(&self.pool, move |e| map_error(&e, &ctx))
            .await
    }

    fn map(&self, e: &tokio_postgres::Error) -> EngineError {
        map_error(e, &self.ctx)
    }
}

/// A fresh connection (not pooled) that runs `SELECT 1`.
pub(crate) async fn test_connection(
    uri: &ConnectionUri,
    server_cert: Option<&str>,
    options: &EngineOptions,
) -> Result<(), EngineError> {
    let (cfg, tls) = config(uri, server_cert, options)?;
    let ctx = ErrorContext::new(uri);
    let attempt = async {
        let (client, connection) = cfg.connect(tls).await.map_err(|e| map_error(&e, &ctx))?;
        // The connection task ends by itself once `client` is dropped.
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "test connection ended with an error");
            }
        });
        client
            .simple_query("SELECT 1")
            .await
            .map_err(|e| map_error(&e, &ctx))?;
        Ok(())
    };
    // The TCP connect has its own timeout (→ HostDown); this one bounds the whole exchange.
    tokio::time::timeout(options.connect_timeout + Duration::from_secs(2), attempt)
        .await
        .map_err(|_| EngineError::Timeout)?
}

/// User schemas, sorted; system schemas (`pg_*`, `information_schema`) are left out.
pub(crate) async fn schemas(pool: &PgPool) -> Result<Vec<String>, EngineError> {
    let conn = pool.get().await?;
    let rows = conn
        .query(
            "SELECT nspname::text FROM pg_catalog.pg_namespace \
             WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' \
             ORDER BY nspname",
            &[],
        )
        .await
        .map_err(|e| pool.map(&e))?;
    rows.iter()
        .map(|r| r.try_get(0).map_err(|e| pool.map(&e)))
        .collect()
}

/// Tables (ordinary, partitioned, foreign), views and materialized views of `schema`.
pub(crate) async fn tables(pool: &PgPool, schema: &str) -> Result<Vec<TableEntry>, EngineError> {
    let conn = pool.get().await?;
    let rows = conn
        .query(
            "SELECT c.relname::text, c.relkind::text \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1::text AND c.relkind IN ('r', 'p', 'f', 'v', 'm') \
             ORDER BY c.relname",
            &[&schema],
        )
        .await
        .map_err(|e| pool.map(&e))?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let name: String = row.try_get(0).map_err(|e| pool.map(&e))?;
        let kind: String = row.try_get(1).map_err(|e| pool.map(&e))?;
        out.push(TableEntry {
            name,
            kind: relkind(&kind),
        });
    }
    Ok(out)
}

fn relkind(kind: &str) -> TableKind {
    match kind {
        "v" => TableKind::View,
        "m" => TableKind::MaterializedView,
        _ => TableKind::Table,
    }
}

/// Columns, keys, indexes and comment of `schema.table` (`schema` `None`: the table the search
/// path finds).
pub(crate) async fn table_metadata(
    pool: &PgPool,
    schema: Option<&str>,
    table: &str,
) -> Result<TableMetadata, EngineError> {
    let conn = pool.get().await?;
    let map = |e: tokio_postgres::Error| pool.map(&e);
    let found = conn
        .query_opt(
            "SELECT c.oid, c.relkind::text, n.nspname::text, \
                    pg_catalog.obj_description(c.oid, 'pg_class') \
             FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relname = $2::text AND c.relkind IN ('r', 'p', 'f', 'v', 'm') \
               AND CASE WHEN $1::text IS NULL THEN pg_catalog.pg_table_is_visible(c.oid) \
                        ELSE n.nspname = $1::text END",
            &[&schema, &table],
        )
        .await
        .map_err(map)?;
    let Some(found) = found else {
        return Err(EngineError::TableNotFound {
            table: table.to_owned(),
        });
    };
    let oid: u32 = found.try_get(0).map_err(map)?;
    let kind: String = found.try_get(1).map_err(map)?;
    let found_schema: String = found.try_get(2).map_err(map)?;
    let comment: Option<String> = found.try_get(3).map_err(map)?;

    let mut columns = Vec::new();
    for row in conn
        .query(
            "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), \
                    NOT a.attnotnull, pg_catalog.col_description(a.attrelid, a.attnum) \
             FROM pg_catalog.pg_attribute a \
             WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped \
             ORDER BY a.attnum",
            &[&oid],
        )
        .await
        .map_err(map)?
    {
        let pg_type: String = row.try_get(1).map_err(map)?;
        columns.push(ColumnInfo::typed(
            row.try_get(0).map_err(map)?,
            render_type(&pg_type),
            GenericType::String,
            row.try_get(2).map_err(map)?,
            row.try_get(3).map_err(map)?,
        ));
    }

    let primary_key = match conn
        .query_opt(
            "SELECT con.conname::text, ARRAY( \
                 SELECT a.attname::text \
                 FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord) \
                 JOIN pg_catalog.pg_attribute a \
                   ON a.attrelid = con.conrelid AND a.attnum = k.attnum \
                 ORDER BY k.ord) \
             FROM pg_catalog.pg_constraint con \
             WHERE con.conrelid = $1 AND con.contype = 'p'",
            &[&oid],
        )
        .await
        .map_err(map)?
    {
        Some(row) => Some(PrimaryKey {
            name: row.try_get(0).map_err(map)?,
            column_names: row.try_get(1).map_err(map)?,
        }),
        None => None,
    };

    let mut foreign_keys = Vec::new();
    for row in conn
        .query(
            "SELECT con.conname::text, \
                    ARRAY(SELECT a.attname::text \
                          FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord) \
                          JOIN pg_catalog.pg_attribute a \
                            ON a.attrelid = con.conrelid AND a.attnum = k.attnum \
                          ORDER BY k.ord), \
                    CASE WHEN pg_catalog.pg_table_is_visible(rc.oid) THEN NULL \
                         ELSE rn.nspname::text END, \
                    rc.relname::text, \
                    ARRAY(SELECT a.attname::text \
                          FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord) \
                          JOIN pg_catalog.pg_attribute a \
                            ON a.attrelid = con.confrelid AND a.attnum = k.attnum \
                          ORDER BY k.ord) \
             FROM pg_catalog.pg_constraint con \
             JOIN pg_catalog.pg_class rc ON rc.oid = con.confrelid \
             JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace \
             WHERE con.conrelid = $1 AND con.contype = 'f' \
             ORDER BY con.conname",
            &[&oid],
        )
        .await
        .map_err(map)?
    {
        foreign_keys.push(ForeignKey {
            name: row.try_get(0).map_err(map)?,
            constrained_columns: row.try_get(1).map_err(map)?,
            referred_schema: row.try_get(2).map_err(map)?,
            referred_table: row.try_get(3).map_err(map)?,
            referred_columns: row.try_get(4).map_err(map)?,
        });
    }

    let mut indexes = Vec::new();
    for row in conn
        .query(
            "SELECT ic.relname::text, ix.indisunique, ARRAY( \
                 SELECT CASE WHEN ix.indkey[k - 1] <> 0 \
                     THEN (SELECT a.attname::text FROM pg_catalog.pg_attribute a \
                           WHERE a.attrelid = ix.indrelid AND a.attnum = ix.indkey[k - 1]) \
                     ELSE pg_catalog.pg_get_indexdef(ix.indexrelid, k, true) END \
                 FROM generate_series(1, ix.indnkeyatts::int) AS k ORDER BY k) \
             FROM pg_catalog.pg_index ix \
             JOIN pg_catalog.pg_class ic ON ic.oid = ix.indexrelid \
             WHERE ix.indrelid = $1 AND NOT ix.indisprimary \
             ORDER BY ic.relname",
            &[&oid],
        )
        .await
        .map_err(map)?
    {
        indexes.push(IndexInfo {
            name: row.try_get(0).map_err(map)?,
            unique: row.try_get(1).map_err(map)?,
            column_names: row.try_get(2).map_err(map)?,
        });
    }

    Ok(TableMetadata {
        name: table.to_owned(),
        schema: Some(found_schema),
        kind: relkind(&kind),
        columns,
        primary_key,
        foreign_keys,
        indexes,
        comment,
    })
}

/// The result columns of `sql`, found by preparing it (never executing it) inside a READ ONLY
/// transaction that is rolled back. The statement must also prepare as the subquery of
/// `SELECT * FROM (<sql>) AS virtual_table`, which only queries can: DML, DDL, `SELECT … INTO`
/// and data-modifying CTEs are refused there.
pub(crate) async fn query_columns(
    pool: &PgPool,
    sql: &str,
) -> Result<Vec<ColumnInfo>, EngineError> {
    let mut conn = pool.get().await?;
    let map = |e: tokio_postgres::Error| pool.map(&e);
    let tx = conn
        .build_transaction()
        .read_only(true)
        .start()
        .await
        .map_err(map)?;
    let stmt = tx.prepare(sql).await.map_err(map)?;
    if !stmt.params().is_empty() {
        return Err(EngineError::other(
            "The query has bind parameters ($1, …); a dataset query cannot have any.",
        ));
    }
    let wrapped = format!("SELECT * FROM (\n{sql}\n) AS virtual_table LIMIT 1");
    if let Err(e) = tx.prepare(&wrapped).await {
        let not_a_query = e
            .code()
            .is_some_and(|c| c.code().starts_with("42") || *c == SqlState::FEATURE_NOT_SUPPORTED);
        return Err(if not_a_query {
            EngineError::NotReadOnly
        } else {
            map(e)
        });
    }
    let oids: Vec<u32> = stmt.columns().iter().map(|c| c.type_().oid()).collect();
    let mods: Vec<i32> = stmt.columns().iter().map(|c| c.type_modifier()).collect();
    let names = tx
        .query(
            "SELECT pg_catalog.format_type(t.oid, t.mod) \
             FROM unnest($1::oid[], $2::int4[]) WITH ORDINALITY AS t(oid, mod, ord) \
             ORDER BY t.ord",
            &[&oids, &mods],
        )
        .await
        .map_err(map)?;
    let mut out = Vec::with_capacity(names.len());
    for (column, row) in stmt.columns().iter().zip(&names) {
        let pg_type: Option<String> = row.try_get(0).map_err(map)?;
        let type_name = pg_type.map_or_else(
            || column.type_().name().to_ascii_uppercase(),
            |t| render_type(&t),
        );
        out.push(ColumnInfo::typed(
            column.name().to_owned(),
            type_name,
            GenericType::String,
            true,
            None,
        ));
    }
    tx.rollback().await.map_err(map)?;
    Ok(out)
}

/// PostgreSQL's time grains (Superset's `PostgresEngineSpec._time_grain_expressions`): no
/// `PT6H` and no week variants.
pub(crate) const TIME_GRAINS: &[TimeGrain] = &[
    TimeGrain {
        duration: "PT1S",
        name: "Second",
        template: "DATE_TRUNC('second', {col})",
    },
    TimeGrain {
        duration: "PT5S",
        name: "5 second",
        template: "DATE_TRUNC('minute', {col}) + INTERVAL '5 seconds' * FLOOR(EXTRACT(SECOND FROM {col}) / 5)",
    },
    TimeGrain {
        duration: "PT30S",
        name: "30 second",
        template: "DATE_TRUNC('minute', {col}) + INTERVAL '30 seconds' * FLOOR(EXTRACT(SECOND FROM {col}) / 30)",
    },
    TimeGrain {
        duration: "PT1M",
        name: "Minute",
        template: "DATE_TRUNC('minute', {col})",
    },
    TimeGrain {
        duration: "PT5M",
        name: "5 minute",
        template: "DATE_TRUNC('hour', {col}) + INTERVAL '5 minutes' * FLOOR(EXTRACT(MINUTE FROM {col}) / 5)",
    },
    TimeGrain {
        duration: "PT10M",
        name: "10 minute",
        template: "DATE_TRUNC('hour', {col}) + INTERVAL '10 minutes' * FLOOR(EXTRACT(MINUTE FROM {col}) / 10)",
    },
    TimeGrain {
        duration: "PT15M",
        name: "15 minute",
        template: "DATE_TRUNC('hour', {col}) + INTERVAL '15 minutes' * FLOOR(EXTRACT(MINUTE FROM {col}) / 15)",
    },
    TimeGrain {
        duration: "PT30M",
        name: "30 minute",
        template: "DATE_TRUNC('hour', {col}) + INTERVAL '30 minutes' * FLOOR(EXTRACT(MINUTE FROM {col}) / 30)",
    },
    TimeGrain {
        duration: "PT1H",
        name: "Hour",
        template: "DATE_TRUNC('hour', {col})",
    },
    TimeGrain {
        duration: "P1D",
        name: "Day",
        template: "DATE_TRUNC('day', {col})",
    },
    TimeGrain {
        duration: "P1W",
        name: "Week",
        template: "DATE_TRUNC('week', {col})",
    },
    TimeGrain {
        duration: "P1M",
        name: "Month",
        template: "DATE_TRUNC('month', {col})",
    },
    TimeGrain {
        duration: "P3M",
        name: "Quarter",
        template: "DATE_TRUNC('quarter', {col})",
    },
    TimeGrain {
        duration: "P1Y",
        name: "Year",
        template: "DATE_TRUNC('year', {col})",
    },
];

/// Superset's `convert_dttm`: `TO_DATE` for date columns, `TO_TIMESTAMP` otherwise.
pub(crate) fn datetime_literal(dt: chrono::NaiveDateTime, type_name: &str) -> String {
    let t = type_name.trim().to_ascii_uppercase();
    if t == "DATE" {
        format!("TO_DATE('{}', 'YYYY-MM-DD')", dt.format("%Y-%m-%d"))
    } else {
        format!(
            "TO_TIMESTAMP('{}', 'YYYY-MM-DD HH24:MI:SS.US')",
            dt.format("%Y-%m-%d %H:%M:%S%.6f")
        )
    }
}

/// Superset's `PostgresBaseEngineSpec.convert_dttm`: `DATE` types as `TO_DATE`, timestamp and
/// datetime types (SQLAlchemy's `DateTime` by the type's leading word) as `TO_TIMESTAMP`,
/// anything else none.
pub(crate) fn convert_dttm(dt: chrono::NaiveDateTime, target_type: &str) -> Option<String> {
    let t = target_type.trim().to_ascii_lowercase();
    if t.starts_with("timestamp") || t.starts_with("datetime") {
        Some(format!(
            "TO_TIMESTAMP('{}', 'YYYY-MM-DD HH24:MI:SS.US')",
            dt.format("%Y-%m-%d %H:%M:%S%.6f")
        ))
    } else if t.starts_with("date") {
        Some(format!(
            "TO_DATE('{}', 'YYYY-MM-DD')",
            dt.format("%Y-%m-%d")
        ))
    } else {
        None
    }
}

/// Runs one statement (see [`super::Engines::execute`]): inside `BEGIN READ ONLY` … `ROLLBACK`
/// when asked, reading at most `max_rows` rows and at most the pool's result budget, with every
/// value decoded from the binary protocol, then `DISCARD ALL`.
pub(crate) async fn execute(
    pool: &PgPool,
    sql: &str,
    opts: ExecOptions,
) -> Result<ResultSet, EngineError> {
    let conn = pool.get().await?;
    let token = conn.cancel_token();
    let mut flight = InFlight {
        conn: Some(conn),
        token,
        tls: pool.tls.clone(),
        in_transaction: false,
    };
    let out = run_statement(&mut flight, pool, sql, opts).await;
    if let Err(EngineError::ResultTooLarge { .. }) = &out {
        // The statement may still be producing rows: `flight` is dropped holding the
        // connection, which cancels the statement in PostgreSQL; the connection is then
        // closed rather than pooled, freeing the buffer that held the oversized row.
        if let Some(conn) = flight.conn.as_ref() {
            conn.discard();
        }
        return out;
    }
    if let Some(conn) = flight.conn.as_ref()
        && flight.in_transaction
    {
        // A failed statement aborted the transaction (or never reached the pipelined
        // ROLLBACK); end it and reset the session before the connection is reused.
        let (_, _) = tokio::join!(conn.batch_execute("ROLLBACK"), conn.batch_execute(RESET));
        flight.in_transaction = false;
    }
    // Finished (well or not): nothing is left running in the database, disarm the guard.
    drop(flight.conn.take());
    out
}

/// What every statement is followed by: the session as it was when the connection opened.
const RESET: &str = "DISCARD ALL";

/// The length of a value on the wire, without decoding it (for the result budget).
struct WireLen(usize);

impl<'a> tokio_postgres::types::FromSql<'a> for WireLen {
    fn from_sql(
        ty: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        // bytea becomes hex text: `\x` and two characters a byte.
        Ok(WireLen(if *ty == tokio_postgres::types::Type::BYTEA {
            2 * raw.len() + 2
        } else {
            raw.len()
        }))
    }

    fn from_sql_null(
        _: &tokio_postgres::types::Type,
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(WireLen(0))
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }
}

async fn run_statement(
    flight: &mut InFlight,
    pool: &PgPool,
    sql: &str,
    opts: ExecOptions,
) -> Result<ResultSet, EngineError> {
    use futures_util::TryStreamExt;
    let map = |e: tokio_postgres::Error| pool.map(&e);
    let Some(conn) = flight.conn.as_ref() else {
        return Err(EngineError::other("connection already released"));
    };
    // Requests on one connection are pipelined: BEGIN and the prepare share a round trip, and
    // Bind/Execute, ROLLBACK and DISCARD ALL share the next one, overlapping reading the rows.
    let stmt = if opts.read_only {
        flight.in_transaction = true;
        let (begin, stmt) = tokio::join!(conn.batch_execute("BEGIN READ ONLY"), conn.prepare(sql));
        begin.map_err(map)?;
        stmt.map_err(map)?
    } else {
        conn.prepare(sql).await.map_err(map)?
    };
    if !stmt.params().is_empty() {
        return Err(EngineError::other(
            "The query has bind parameters ($1, …), which cannot be supplied here.",
        ));
    }
    let columns = stmt
        .columns()
        .iter()
        .map(|c| ResultColumn {
            name: c.name().to_owned(),
            type_name: c.type_().name().to_owned(),
        })
        .collect::<Vec<_>>();
    let width = columns.len();
    let mut budget = Budget::new(pool.max_result_bytes);
    let read = async {
        // Polled first: Bind/Execute are queued before the ROLLBACK and DISCARD ALL below, so
        // all three leave in one write and the server runs them in that order.
        let stream = conn
            .query_raw(&stmt, std::iter::empty::<i32>())
            .await
            .map_err(map)?;
        futures_util::pin_mut!(stream);
        let mut rows = Vec::new();
        while let Some(row) = stream.try_next().await.map_err(map)? {
            if rows.len() >= opts.max_rows {
                break;
            }
            // Charged before any value is copied out of the row.
            let mut bytes = 0usize;
            for i in 0..width {
                bytes += row.try_get::<_, WireLen>(i).map_err(map)?.0;
            }
            budget.charge(width, bytes)?;
            let mut cells = Vec::with_capacity(width);
            for i in 0..width {
                cells.push(row.try_get::<_, PgCell>(i).map_err(map)?.0);
            }
            rows.push(cells);
        }
        Ok::<_, EngineError>(rows)
    };
    // A read-only transaction is rolled back, never committed: whatever it changed in the
    // session (`set_config(…, false)`) is undone. `try_join` polls `read` first (see there) and
    // gives up on the pipelined requests as soon as reading fails (their answers are discarded
    // by tokio-postgres), so a result past its budget is cancelled at once instead of being
    // drained.
    let end = async {
        if opts.read_only {
            conn.batch_execute("ROLLBACK").await.map_err(map)?;
        }
        Ok::<_, EngineError>(())
    };
    let reset = async { conn.batch_execute(RESET).await.map_err(map) };
    let (rows, (), ()) = futures_util::future::try_join3(read, end, reset).await?;
    flight.in_transaction = false;
    Ok(ResultSet { columns, rows })
}

/// A checked-out connection with a statement possibly running on it. Dropped while still
/// holding the connection (the caller's future was dropped: client gone or deadline passed),
/// it cancels the statement inside PostgreSQL and only then lets the connection return to the
/// pool, so a late cancel request can never hit the next statement on that connection.
struct InFlight {
    conn: Option<bb8::PooledConnection<'static, PgManager>>,
    token: tokio_postgres::CancelToken,
    /// The cancel request goes over TLS as the connection did (a `hostssl`-only server refuses
    /// it in the clear, and it carries the backend's secret key).
    tls: PgTls,
    in_transaction: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let token = self.token.clone();
        let tls = self.tls.clone();
        let in_transaction = self.in_transaction;
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        rt.spawn(async move {
            if let Err(e) = token.cancel_query(tls).await {
                tracing::warn!(error = %e, "could not cancel an abandoned query");
            }
            // Queued behind the cancelled statement: once these answer, the connection is idle
            // and its session as it was when it opened.
            let end = if in_transaction { "ROLLBACK" } else { "" };
            let (end, reset) = tokio::join!(conn.batch_execute(end), conn.batch_execute(RESET));
            if let Err(e) = end.and(reset) {
                tracing::debug!(error = %e, "connection reset after cancel failed");
            }
            tracing::debug!("abandoned query cancelled in the database");
        });
    }
}

/// Any PostgreSQL value, decoded from the binary wire format by type. Types without a known
/// layout fall back to their bytes as text (enums, domains over text, `citext`, ...), or hex.
struct PgCell(Cell);

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_OFFSET_DAYS: i64 = 10_957;

impl<'a> tokio_postgres::types::FromSql<'a> for PgCell {
    fn from_sql(
        ty: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        use tokio_postgres::types::Type;
        let cell = match *ty {
            Type::BOOL => Cell::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => Cell::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Cell::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Cell::Int(i64::from_sql(ty, raw)?),
            Type::OID => Cell::Int(u32::from_sql(ty, raw)?.into()),
            Type::FLOAT4 => Cell::Float(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Cell::Float(f64::from_sql(ty, raw)?),
            Type::NUMERIC => decode_numeric(raw)?,
            Type::TIMESTAMP => Cell::Timestamp(pg_timestamp(raw)?),
            Type::TIMESTAMPTZ => Cell::TimestampTz(pg_timestamp(raw)?),
            Type::DATE => {
                let days = i32::from_sql(ty, raw)?;
                let date = chrono::DateTime::from_timestamp(
                    (i64::from(days) + PG_EPOCH_OFFSET_DAYS) * 86_400,
                    0,
                )
                .map(|d| d.date_naive())
                .ok_or("date out of range")?;
                Cell::Date(date)
            }
            Type::TIME => Cell::Time(chrono::NaiveTime::from_sql(ty, raw)?),
            Type::JSON | Type::JSONB => {
                Cell::Text(serde_json::Value::from_sql(ty, raw)?.to_string())
            }
            Type::UUID => Cell::Text(uuid::Uuid::from_sql(ty, raw)?.to_string()),
            Type::BYTEA => Cell::Text(format!("\\x{}", hex::encode(raw))),
            _ => match std::str::from_utf8(raw) {
                Ok(text) => Cell::Text(text.to_owned()),
                Err(_) => Cell::Text(format!("\\x{}", hex::encode(raw))),
            },
        };
        Ok(PgCell(cell))
    }

    fn from_sql_null(
        _: &tokio_postgres::types::Type,
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(PgCell(Cell::Null))
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }
}

/// `timestamp`/`timestamptz` wire value: microseconds since 2000-01-01 (±infinity are the
/// extreme i64 values; they are mapped to chrono's bounds).
fn pg_timestamp(
    raw: &[u8],
) -> Result<chrono::NaiveDateTime, Box<dyn std::error::Error + Sync + Send>> {
    let bytes: [u8; 8] = raw.try_into().map_err(|_| "bad timestamp length")?;
    let micros = i64::from_be_bytes(bytes);
    match micros {
        i64::MAX => return Ok(chrono::NaiveDateTime::MAX),
        i64::MIN => return Ok(chrono::NaiveDateTime::MIN),
        _ => {}
    }
    let unix = micros
        .checked_add(PG_EPOCH_OFFSET_DAYS * 86_400 * 1_000_000)
        .ok_or("timestamp out of range")?;
    chrono::DateTime::from_timestamp_micros(unix)
        .map(|d| d.naive_utc())
        .ok_or_else(|| "timestamp out of range".into())
}

/// `numeric` wire value (base-10000 digits, weight, sign, display scale) → its decimal text,
/// exactly as PostgreSQL prints it, so no precision is lost before the API layer decides.
fn decode_numeric(raw: &[u8]) -> Result<Cell, Box<dyn std::error::Error + Sync + Send>> {
    let word = |i: usize| -> Result<u16, Box<dyn std::error::Error + Sync + Send>> {
        raw.get(i * 2..i * 2 + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "short numeric".into())
    };
    let ndigits = usize::from(word(0)?);
    let weight = i32::from(word(1)? as i16);
    let sign = word(2)?;
    let dscale = usize::from(word(3)?);
    match sign {
        0xC000 => return Ok(Cell::Float(f64::NAN)),
        0xD000 => return Ok(Cell::Float(f64::INFINITY)),
        0xF000 => return Ok(Cell::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let digits = (0..ndigits)
        .map(|i| word(4 + i))
        .collect::<Result<Vec<u16>, _>>()?;
    let digit = |pos: i32| -> u16 {
        // Group `pos` counts from the most significant group (weight) downwards.
        let idx = weight - pos;
        if idx < 0 {
            return 0;
        }
        digits.get(idx as usize).copied().unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        for pos in (0..=weight).rev() {
            let g = digit(pos);
            if pos == weight {
                out.push_str(&g.to_string());
            } else {
                out.push_str(&format!("{g:04}"));
            }
        }
    }
    if dscale > 0 {
        out.push('.');
        let mut frac = String::new();
        let mut pos = -1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(pos)));
            pos -= 1;
        }
        frac.truncate(dscale);
        out.push_str(&frac);
    }
    Ok(Cell::Decimal(out))
}

/// Renders PostgreSQL's `format_type` text the way SQLAlchemy compiles the reflected type and
/// Superset upper-cases it: `character varying(50)` → `VARCHAR(50)`, `numeric(10,2)` →
/// `NUMERIC(10, 2)`, `timestamp without time zone` → `TIMESTAMP WITHOUT TIME ZONE`,
/// `integer[]` → `INTEGER[]`.
pub fn render_type(pg_type: &str) -> String {
    let mut base = pg_type.trim();
    let mut dims = 0;
    while let Some(b) = base.strip_suffix("[]") {
        base = b;
        dims += 1;
    }
    let rendered = if let Some(rest) = base.strip_prefix("character varying") {
        format!("VARCHAR{rest}")
    } else if let Some(rest) = base.strip_prefix("character") {
        format!("CHAR{rest}")
    } else if let Some(args) = base
        .strip_prefix("numeric(")
        .and_then(|a| a.strip_suffix(')'))
    {
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        format!("NUMERIC({})", args.join(", "))
    } else {
        base.to_owned()
    };
    let mut out = rendered.to_uppercase();
    for _ in 0..dims {
        out.push_str("[]");
    }
    out
}

/// Maps a tokio-postgres error to Superset's error kinds: SQLSTATE first, then the I/O cause of
/// a failed connect.
pub(crate) fn map_error(error: &tokio_postgres::Error, ctx: &ErrorContext) -> EngineError {
    if let Some(db) = error.as_db_error() {
        return map_db_error(db.code(), db.message(), ctx);
    }
    // Before the io errors: a refused certificate arrives as one. Superset (psycopg2) shows
    // libpq's text as a generic engine error; so does this.
    if let Some(tls) = crate::pgtls::describe(error) {
        return EngineError::Other {
            message: format!(
                "connection to server at \"{}\", port {} failed: {tls}",
                ctx.host, ctx.port
            ),
        };
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return map_io_error(io, ctx);
        }
        source = cause.source();
    }
    let text = match std::error::Error::source(error) {
        Some(cause) => format!("{error}: {cause}"),
        None => error.to_string(),
    };
    if text.contains("password missing") {
        return EngineError::PasswordRequired;
    }
    EngineError::Other { message: text }
}

fn map_io_error(io: &std::io::Error, ctx: &ErrorContext) -> EngineError {
    use std::io::ErrorKind;
    let host = ctx.host.clone();
    let port = ctx.port;
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
                "nodename nor servname",
                "No address associated",
                "Temporary failure in name resolution",
                "could not resolve any addresses",
            ];
            if dns.iter().any(|d| text.contains(d)) {
                EngineError::InvalidHostname { host }
            } else {
                EngineError::Other {
                    message: format!("could not connect to server: {text}"),
                }
            }
        }
    }
}

/// SQLSTATE (and, where PostgreSQL shares a code, the message) → error kind.
pub(crate) fn map_db_error(code: &SqlState, message: &str, ctx: &ErrorContext) -> EngineError {
    if *code == SqlState::INVALID_PASSWORD {
        EngineError::InvalidPassword {
            username: ctx.username.clone(),
        }
    } else if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
        match quoted_after(message, "role ") {
            Some(username) if message.ends_with("does not exist") => {
                EngineError::InvalidUsername { username }
            }
            _ => EngineError::other(message),
        }
    } else if *code == SqlState::INVALID_CATALOG_NAME {
        EngineError::UnknownDatabase {
            database: quoted_after(message, "database ").unwrap_or_else(|| ctx.database.clone()),
        }
    } else if *code == SqlState::SYNTAX_ERROR {
        if message.contains("cannot insert multiple commands") {
            EngineError::MultipleStatements
        } else if let Some(near) = quoted_after(message, "syntax error at or near ") {
            EngineError::Syntax {
                message: format!(
                    "Please check your query for syntax errors at or near \"{near}\". Then, \
                     try running your query again."
                ),
            }
        } else {
            EngineError::Syntax {
                message: message.to_owned(),
            }
        }
    } else if *code == SqlState::UNDEFINED_TABLE {
        match quoted_after(message, "relation ") {
            Some(table) => EngineError::TableNotFound { table },
            None => EngineError::other(message),
        }
    } else if *code == SqlState::INVALID_SCHEMA_NAME {
        match quoted_after(message, "schema ") {
            Some(schema) => EngineError::SchemaNotFound { schema },
            None => EngineError::other(message),
        }
    } else if *code == SqlState::QUERY_CANCELED && message.contains("statement timeout") {
        EngineError::StatementTimeout
    } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        EngineError::NotReadOnly
    } else {
        EngineError::other(message)
    }
}

/// The double-quoted name right after `prefix` in `message` (`role "x" does not exist` → `x`).
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let start = message.find(prefix)? + prefix.len();
    let rest = message[start..].strip_prefix('"')?;
    let end = rest.rfind('"')?;
    Some(rest[..end].to_owned()).filter(|_| !rest[end + 1..].contains('"'))
}

/// PostgreSQL's reserved words, as SQLAlchemy 1.4 lists them (`RESERVED_WORDS`).
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "binary",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "leading",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "natural",
    "new",
    "not",
    "notnull",
    "null",
    "of",
    "off",
    "offset",
    "old",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "over",
    "overlaps",
    "placing",
    "primary",
    "references",
    "returning",
    "right",
    "select",
    "session_user",
    "similar",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// Whether `ident` is a reserved word in PostgreSQL (case-insensitive).
pub fn is_reserved(ident: &str) -> bool {
    let lower = ident.to_ascii_lowercase();
    RESERVED.contains(&lower.as_str())
}

/// PostgreSQL's common built-in functions, for SQL Lab's autocomplete. Superset lists none for
/// PostgreSQL; a static list costs no query and covers what analysts type.
pub const FUNCTION_NAMES: &[&str] = &[
    "abs",
    "age",
    "array_agg",
    "array_length",
    "avg",
    "bool_and",
    "bool_or",
    "cbrt",
    "ceil",
    "ceiling",
    "char_length",
    "coalesce",
    "concat",
    "concat_ws",
    "corr",
    "count",
    "covar_pop",
    "covar_samp",
    "cume_dist",
    "current_date",
    "current_time",
    "current_timestamp",
    "date_part",
    "date_trunc",
    "dense_rank",
    "div",
    "every",
    "exp",
    "extract",
    "first_value",
    "floor",
    "format",
    "generate_series",
    "greatest",
    "initcap",
    "json_agg",
    "json_build_object",
    "jsonb_agg",
    "jsonb_build_object",
    "lag",
    "last_value",
    "lead",
    "least",
    "left",
    "length",
    "ln",
    "localtime",
    "localtimestamp",
    "log",
    "lower",
    "lpad",
    "ltrim",
    "make_date",
    "make_interval",
    "make_timestamp",
    "max",
    "md5",
    "min",
    "mod",
    "mode",
    "now",
    "nth_value",
    "ntile",
    "nullif",
    "percent_rank",
    "percentile_cont",
    "percentile_disc",
    "pi",
    "position",
    "power",
    "random",
    "rank",
    "regexp_match",
    "regexp_replace",
    "regexp_split_to_array",
    "repeat",
    "replace",
    "reverse",
    "right",
    "round",
    "row_number",
    "rpad",
    "rtrim",
    "sign",
    "split_part",
    "sqrt",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "string_agg",
    "strpos",
    "substr",
    "substring",
    "sum",
    "to_char",
    "to_date",
    "to_number",
    "to_timestamp",
    "translate",
    "trim",
    "trunc",
    "upper",
    "var_pop",
    "var_samp",
    "variance",
    "width_bucket",
];

/// psycopg2's type-caster name for a PostgreSQL type (what Superset reports as a SQL Lab
/// column's `type`), or `None` for types psycopg2 returns without a caster.
pub(crate) fn psycopg2_type(pg_type: &str) -> Option<&'static str> {
    Some(match pg_type {
        "int2" | "int4" | "oid" => "INTEGER",
        "int8" => "LONGINTEGER",
        "float4" | "float8" => "FLOAT",
        "numeric" => "DECIMAL",
        "text" | "varchar" | "bpchar" | "char" | "name" | "citext" => "UNICODE",
        "bool" => "BOOLEAN",
        "timestamp" => "DATETIME",
        "timestamptz" => "DATETIMETZ",
        "date" => "DATE",
        "time" | "timetz" => "TIME",
        "interval" => "INTERVAL",
        "json" => "JSON",
        "jsonb" => "JSONB",
        "bytea" => "BINARY",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ErrorContext {
        ErrorContext {
            username: "ana".into(),
            host: "db.example".into(),
            port: 5433,
            database: "sales".into(),
        }
    }

    #[test]
    fn types_render_like_sqlalchemy() {
        let cases = [
            ("character varying(50)", "VARCHAR(50)"),
            ("character varying", "VARCHAR"),
            ("character(3)", "CHAR(3)"),
            ("integer", "INTEGER"),
            ("bigint", "BIGINT"),
            ("smallint", "SMALLINT"),
            ("numeric(10,2)", "NUMERIC(10, 2)"),
            ("numeric", "NUMERIC"),
            ("double precision", "DOUBLE PRECISION"),
            ("real", "REAL"),
            ("text", "TEXT"),
            ("boolean", "BOOLEAN"),
            ("date", "DATE"),
            ("timestamp without time zone", "TIMESTAMP WITHOUT TIME ZONE"),
            ("timestamp(3) with time zone", "TIMESTAMP(3) WITH TIME ZONE"),
            ("time without time zone", "TIME WITHOUT TIME ZONE"),
            ("integer[]", "INTEGER[]"),
            ("character varying(5)[]", "VARCHAR(5)[]"),
            ("jsonb", "JSONB"),
        ];
        for (pg, want) in cases {
            assert_eq!(render_type(pg), want, "{pg}");
        }
    }

    #[test]
    fn sqlstates_map_to_superset_errors() {
        let c = ctx();
        assert_eq!(
            map_db_error(
                &SqlState::INVALID_PASSWORD,
                "password authentication failed for user \"ana\"",
                &c
            ),
            EngineError::InvalidPassword {
                username: "ana".into()
            }
        );
        assert_eq!(
            map_db_error(
                &SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
                "role \"bob\" does not exist",
                &c
            ),
            EngineError::InvalidUsername {
                username: "bob".into()
            }
        );
        assert!(matches!(
            map_db_error(
                &SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
                "no pg_hba.conf entry for host \"1.2.3.4\"",
                &c
            ),
            EngineError::Other { .. }
        ));
        assert_eq!(
            map_db_error(
                &SqlState::INVALID_CATALOG_NAME,
                "database \"nope\" does not exist",
                &c
            ),
            EngineError::UnknownDatabase {
                database: "nope".into()
            }
        );
        assert_eq!(
            map_db_error(
                &SqlState::SYNTAX_ERROR,
                "syntax error at or near \"FORM\"",
                &c
            )
            .message(),
            "Please check your query for syntax errors at or near \"FORM\". Then, try running \
             your query again."
        );
        assert_eq!(
            map_db_error(
                &SqlState::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
                &c
            ),
            EngineError::MultipleStatements
        );
        assert_eq!(
            map_db_error(
                &SqlState::UNDEFINED_TABLE,
                "relation \"a.b\" does not exist",
                &c
            ),
            EngineError::TableNotFound {
                table: "a.b".into()
            }
        );
        assert_eq!(
            map_db_error(
                &SqlState::INVALID_SCHEMA_NAME,
                "schema \"x\" does not exist",
                &c
            ),
            EngineError::SchemaNotFound { schema: "x".into() }
        );
        assert_eq!(
            map_db_error(
                &SqlState::QUERY_CANCELED,
                "canceling statement due to statement timeout",
                &c
            ),
            EngineError::StatementTimeout
        );
        assert_eq!(
            map_db_error(
                &SqlState::UNDEFINED_COLUMN,
                "column \"z\" does not exist",
                &c
            ),
            EngineError::other("column \"z\" does not exist")
        );
    }

    #[test]
    fn io_errors_map_to_connection_errors() {
        use std::io::{Error, ErrorKind};
        let c = ctx();
        assert_eq!(
            map_io_error(&Error::from(ErrorKind::ConnectionRefused), &c),
            EngineError::PortClosed {
                host: "db.example".into(),
                port: 5433
            }
        );
        assert_eq!(
            map_io_error(&Error::from(ErrorKind::TimedOut), &c),
            EngineError::HostDown {
                host: "db.example".into(),
                port: 5433
            }
        );
        assert_eq!(
            map_io_error(
                &Error::other("failed to lookup address information: Name or service not known"),
                &c
            ),
            EngineError::InvalidHostname {
                host: "db.example".into()
            }
        );
    }

    #[test]
    fn config_carries_statement_timeout() {
        let uri = ConnectionUri::parse("postgresql://u:pw@h:6000/d?options=-c%20search_path%3Dx")
            .expect("uri");
        let (cfg, _) = config(&uri, None, &EngineOptions::default()).expect("config");
        assert_eq!(
            cfg.get_options(),
            Some("-c search_path=x -c standard_conforming_strings=on -c statement_timeout=300000")
        );
        assert_eq!(cfg.get_ports(), &[6000]);
        let anonymous = ConnectionUri::parse("postgresql://h/d").expect("uri");
        assert!(config(&anonymous, None, &EngineOptions::default()).is_err());
    }

    #[test]
    fn config_takes_libpq_tls_options() {
        use tokio_postgres::config::SslMode as Wire;
        let mode = |query: &str, cert: Option<&str>| {
            let uri = ConnectionUri::parse(&format!("postgresql://u:pw@h/d{query}")).expect("uri");
            config(&uri, cert, &EngineOptions::default())
                .map(|(cfg, tls)| (cfg.get_ssl_mode(), tls.mode().as_str()))
        };
        assert_eq!(mode("", None), Ok((Wire::Prefer, "prefer")));
        assert_eq!(
            mode("?sslmode=disable", None),
            Ok((Wire::Disable, "disable"))
        );
        assert_eq!(mode("?sslmode=allow", None), Ok((Wire::Prefer, "allow")));
        assert_eq!(
            mode("?sslmode=require", None),
            Ok((Wire::Require, "require"))
        );
        assert_eq!(
            mode("?sslmode=verify-ca", None),
            Ok((Wire::Require, "verify-ca"))
        );
        assert_eq!(
            mode("?sslmode=verify-full", None),
            Ok((Wire::Require, "verify-full"))
        );
        // Certificates are checked before anything connects, whatever the mode.
        let bad = mode("?sslmode=disable", Some("not PEM")).expect_err("bad cert");
        assert_eq!(bad.message(), "server_cert: Invalid certificate");
        let bad = mode("?sslmode=verify-everything", None).expect_err("bad mode");
        assert!(
            bad.message().starts_with("invalid sslmode value"),
            "{bad:?}"
        );
        assert!(!bad.message().contains("pw"), "{bad:?}");
    }

    #[test]
    fn reserved_words() {
        assert!(is_reserved("USER"));
        assert!(is_reserved("order"));
        assert!(!is_reserved("name"));
    }
}
