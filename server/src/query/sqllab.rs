//! SQL Lab's execution semantics (Superset's `sql_lab.execute_sql_statements`), without HTTP
//! and without the metadata store:
//!
//! * [`plan`] checks a script before anything runs (its Jinja template already rendered by
//!   the services, `query/template.rs`): the
//!   configured function deny-list, statements that would leave state behind on a pooled
//!   connection (`BEGIN`, `SET`, …), DML/DDL against a database without `allow_dml`, and the
//!   row limit of the last statement with Superset's `limitingFactor`;
//! * [`run`] executes the planned statements one after another and settles the limit;
//! * [`SqlLab`] is the per-process state: the registry of running queries (client id → abort
//!   handle; aborting drops the execution future, which cancels the statement inside the
//!   database) and the results store for `GET /sqllab/results/` and CSV export, bounded by
//!   bytes and lifetime.
//!
//! The services layer (`services/sqllab.rs`) records every run in the `query` table and runs it
//! as a task; the api layer (`api/sqllab.rs`) renders payloads.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::AbortHandle;

use super::sqlcheck::{self, LimitingFactor, SqlDialect, SqlError};
use crate::engines::{ConnectionSpec, EngineError, Engines, ExecOptions, ResultSet};

/// Why a SQL Lab request failed, in the terms Superset reports (`api/error.rs` maps each to a
/// status and a SIP-40 body).
#[derive(Clone, Debug, thiserror::Error)]
pub enum SqlLabError {
    /// The request body is malformed (a marshmallow-style `{field: [messages]}` map).
    #[error("invalid request: {0}")]
    Body(serde_json::Value),
    /// A request this server refuses, with the reason.
    #[error("{0}")]
    Invalid(String),
    /// `database_id` names no database.
    #[error(
        "The database referenced in this query was not found. Please contact an administrator \
         for further assistance or try again."
    )]
    DatabaseNotFound,
    /// The caller may not query this database.
    #[error("You need access to the following database to run this query: {0}")]
    DatabaseForbidden(String),
    /// The caller reaches the database only through some of its datasets, and the SQL reads
    /// tables outside them.
    #[error("You need access to the following tables: {}", .0.join(", "))]
    TableForbidden(Vec<String>),
    /// The query belongs to another user.
    #[error("Cannot access the query")]
    QueryForbidden,
    /// No query has this client id (or results key).
    #[error("Not found")]
    QueryNotFound,
    /// The script's Jinja template did not render (or templating is off).
    #[error("{0}")]
    Template(super::template::TemplateError),
    /// `select_as_cta` (CREATE TABLE/VIEW AS SELECT) is not implemented.
    #[error("CREATE TABLE AS / CREATE VIEW AS (select_as_cta) is not supported by this server")]
    CtasUnsupported,
    /// The script calls functions the configuration refuses.
    #[error("SQL contains disallowed function(s): {}", .0.join(", "))]
    DisallowedFunctions(Vec<String>),
    /// A transaction, session or server-side statement (see `SESSION_WORDS`), which cannot
    /// work, or would leak state or reach outside the query, when each statement runs in its
    /// own transaction on a pooled connection.
    #[error(
        "{0} statements are not supported in SQL Lab: each statement of a script runs in its \
         own transaction on a pooled connection"
    )]
    SessionStatement(String),
    /// The SQL could not be analysed (too deep, too complex, NUL character).
    #[error("{0}")]
    Sql(Box<SqlError>),
    /// DML/DDL against a database without `allow_dml` (found by parsing, or refused by the
    /// database's read-only transaction).
    #[error("Only SELECT statements are allowed against this database.")]
    DmlNotAllowed,
    /// The database failed the query.
    #[error("{}", .error.message())]
    Engine {
        /// What the database said.
        error: EngineError,
        /// Superset's engine name (`extra.engine_name`).
        engine_name: &'static str,
    },
    /// A synchronous query ran past `SQLLAB_TIMEOUT` and was cancelled in the database.
    #[error("The query exceeded the {0} seconds timeout.")]
    Timeout(u64),
    /// The query was stopped (`POST /query/stop`) while it ran.
    #[error("The query was stopped.")]
    Stopped,
    /// The results key is known but its rows are gone (expired, evicted, or kept by another
    /// replica).
    #[error(
        "Data could not be retrieved from the results backend. You need to re-run the original \
         query."
    )]
    ResultsExpired,
    /// The background task died without reporting (a bug); the cause is logged.
    #[error("The query failed unexpectedly.")]
    Internal(String),
}

impl From<SqlError> for SqlLabError {
    fn from(e: SqlError) -> Self {
        SqlLabError::Sql(Box::new(e))
    }
}

/// What a script will run, decided before anything reaches the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The statements, in order, as they will be sent (the last one limited).
    pub statements: Vec<String>,
    /// Run inside read-only transactions (always, unless the database allows DML).
    pub read_only: bool,
    /// Superset's `query.limit`: the row limit in force for the last statement.
    pub limit: u64,
    /// The limiting factor before the rows are known (see [`settle`]).
    pub factor: LimitingFactor,
    /// Rows to read from each statement: one more than `limit`, to tell whether more exist.
    pub fetch: usize,
}

impl Plan {
    /// The last statement as it is executed (Superset's `executed_sql`).
    pub fn executed_sql(&self) -> &str {
        self.statements.last().map_or("", String::as_str)
    }
}

/// First keywords of statements SQL Lab never runs, whatever the database allows. Every
/// statement runs in its own transaction on whichever pooled connection is free, so
/// transaction control (`BEGIN`, `END`, `SAVEPOINT`, …) cannot work, and session changes
/// (`SET`, `RESET`, `DISCARD`, `LISTEN`, `PREPARE`, cursors, `LOCK`, SQLite's `ATTACH`/
/// `DETACH`) would leak into the connection another user gets next. The rest reach outside
/// the statement: `COPY` (server files and programs), `DO` and `CALL` (code whose calls the
/// function deny-list cannot see, and procedures may commit), `LOAD` (a shared library),
/// `VACUUM` (SQLite's `VACUUM INTO` writes a file anywhere), `CHECKPOINT`. SQLite's `PRAGMA`
/// is refused whole: the ones that set something change the pooled connection, and the ones
/// that read (`table_info(t)`) name tables the table-access check does not see.
const SESSION_WORDS: &[&str] = &[
    "BEGIN",
    "START",
    "COMMIT",
    "END",
    "ROLLBACK",
    "ABORT",
    "SAVEPOINT",
    "RELEASE",
    "SET",
    "RESET",
    "LISTEN",
    "UNLISTEN",
    "NOTIFY",
    "PREPARE",
    "EXECUTE",
    "DEALLOCATE",
    "DECLARE",
    "FETCH",
    "CLOSE",
    "MOVE",
    "LOCK",
    "DISCARD",
    "ATTACH",
    "DETACH",
    "COPY",
    "DO",
    "CALL",
    "LOAD",
    "VACUUM",
    "CHECKPOINT",
    "PRAGMA",
];

/// The kind of a statement SQL Lab refuses as a transaction or session statement (see
/// [`SESSION_WORDS`]), classified by its first keyword after comments and whitespace.
pub fn session_statement(dialect: SqlDialect, sql: &str) -> Option<String> {
    let word = sqlcheck::leading_keyword(dialect, sql);
    SESSION_WORDS.contains(&word.as_str()).then_some(word)
}

/// Whether a parse error is one of the analyser's own refusals (input too deep or too complex
/// to analyse safely, a NUL character) rather than SQL the parser does not know.
fn is_refusal(e: &SqlError) -> bool {
    let m = e.message();
    m.contains("nested too deeply")
        || m.contains("too complex")
        || m.contains("NUL character")
        || m.contains("parser failed")
        || m == sqlcheck::UNICODE_IDENTIFIER_REFUSAL
}

/// Checks and plans a script. `limit` is the effective row limit (the `queryLimit` dropdown
/// capped at `SQL_MAX_ROW`, at least 1).
///
/// SQL the parser cannot read is not refused outright: sqlparser does not know every
/// PostgreSQL construct, and the database's own error (`SYNTAX_ERROR` with its position) is
/// what the user needs. Such a script is sent whole, as one statement, in a read-only
/// transaction unless the database allows DML (so the database itself refuses any write),
/// after a word-level deny-list check; its rows are bounded by `fetch` instead of a `LIMIT`.
pub fn plan(
    dialect: SqlDialect,
    sql: &str,
    limit: u64,
    allow_dml: bool,
    denied: &BTreeSet<String>,
) -> Result<Plan, SqlLabError> {
    let limit = limit.max(1);
    let fetch = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    let read_only = !allow_dml;
    let statements = match sqlcheck::split_statements(dialect, sql) {
        Ok(s) => s,
        Err(e) if is_refusal(&e) => return Err(e.into()),
        Err(_) => {
            let bad = sqlcheck::denied_words(dialect, sql, denied)?;
            if !bad.is_empty() {
                return Err(SqlLabError::DisallowedFunctions(bad));
            }
            // Left to the database's read-only mode, except what that mode does not stop.
            if !allow_dml && sqlcheck::writes_past_read_only(dialect, sql)? {
                return Err(SqlLabError::DmlNotAllowed);
            }
            let text = sql.trim().trim_end_matches(';').trim_end().to_owned();
            if let Some(word) = session_statement(dialect, &text) {
                return Err(SqlLabError::SessionStatement(word));
            }
            return Ok(Plan {
                statements: vec![text],
                read_only,
                limit,
                factor: LimitingFactor::NotLimited,
                fetch,
            });
        }
    };
    if statements.is_empty() {
        return Err(SqlLabError::Invalid("The query is empty".into()));
    }
    if !denied.is_empty() {
        let bad = sqlcheck::disallowed(sqlcheck::functions_called(dialect, sql)?, denied);
        if !bad.is_empty() {
            return Err(SqlLabError::DisallowedFunctions(bad));
        }
    }
    for s in &statements {
        if let Some(word) = session_statement(dialect, &s.sql) {
            return Err(SqlLabError::SessionStatement(word));
        }
    }
    if !allow_dml && statements.iter().any(|s| s.is_mutating) {
        return Err(SqlLabError::DmlNotAllowed);
    }
    let mut texts: Vec<String> = statements.iter().map(|s| s.sql.clone()).collect();
    let Some(last) = statements.last().filter(|s| s.is_query) else {
        return Ok(Plan {
            statements: texts,
            read_only,
            limit,
            factor: LimitingFactor::NotLimited,
            fetch,
        });
    };
    let (_, outcome) = sqlcheck::apply_limit(dialect, &last.sql, limit)?;
    let (factor, limit) = match outcome.factor {
        // The query's own smaller limit stays as written.
        LimitingFactor::Query => (LimitingFactor::Query, outcome.query_limit.unwrap_or(limit)),
        factor => {
            // One row more than the limit tells whether the limit cut anything (Superset's
            // `increased_limit`); a query whose own limit equals ours keeps it.
            let (sql_plus, _) = sqlcheck::apply_limit(dialect, &last.sql, limit.saturating_add(1))?;
            if let Some(t) = texts.last_mut() {
                *t = sql_plus;
            }
            (factor, limit)
        }
    };
    Ok(Plan {
        statements: texts,
        read_only,
        limit,
        factor,
        fetch,
    })
}

/// Superset's rule once the rows are in: more rows than the limit → cut to the limit, the
/// factor stands; exactly the limit under the query's own limit → that limit applied; fewer
/// → `NOT_LIMITED`.
pub fn settle(factor: LimitingFactor, limit: u64, rows: &mut ResultSet) -> LimitingFactor {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if rows.rows.len() > limit {
        rows.rows.truncate(limit);
        return match factor {
            LimitingFactor::NotLimited => LimitingFactor::Dropdown,
            f => f,
        };
    }
    if rows.rows.len() == limit
        && matches!(
            factor,
            LimitingFactor::Query | LimitingFactor::QueryAndDropdown
        )
    {
        return factor;
    }
    LimitingFactor::NotLimited
}

/// What a finished run produced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The last statement's rows, cut to the limit.
    pub rows: Arc<ResultSet>,
    /// The settled limiting factor.
    pub factor: LimitingFactor,
}

/// Runs the planned statements one after another (each in its own transaction on a pooled
/// connection) and returns the last one's rows. Dropping the future cancels the running
/// statement inside the database.
pub async fn run(
    engines: &Engines,
    spec: &ConnectionSpec,
    plan: &Plan,
) -> Result<RunOutcome, EngineError> {
    let opts = ExecOptions {
        read_only: plan.read_only,
        max_rows: plan.fetch,
    };
    let mut last = ResultSet::default();
    for statement in &plan.statements {
        // Only the last statement's rows are kept: never hold two results at once.
        drop(std::mem::take(&mut last));
        last = engines.execute(spec, statement, opts).await?;
    }
    let factor = settle(plan.factor, plan.limit, &mut last);
    Ok(RunOutcome {
        rows: Arc::new(last),
        factor,
    })
}

/// A query running in this process.
#[derive(Debug)]
struct Running {
    query_id: i64,
    abort: AbortHandle,
}

/// Per-process SQL Lab state: running queries and stored results. Cheap to clone.
#[derive(Clone)]
pub struct SqlLab {
    inner: Arc<Inner>,
}

struct Inner {
    results: moka::future::Cache<String, Arc<ResultSet>>,
    running: Mutex<HashMap<String, Running>>,
}

impl std::fmt::Debug for SqlLab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlLab")
            .field("results", &self.inner.results.entry_count())
            .field("running", &self.running().len())
            .finish()
    }
}

impl SqlLab {
    /// Results kept up to `max_bytes` (by [`ResultSet::weight`]) for `ttl` each.
    pub fn new(max_bytes: u64, ttl: Duration) -> SqlLab {
        SqlLab {
            inner: Arc::new(Inner {
                results: moka::future::Cache::builder()
                    .max_capacity(max_bytes.max(1))
                    .weigher(|k: &String, v: &Arc<ResultSet>| {
                        u32::try_from(k.len() + v.weight() + 64).unwrap_or(u32::MAX)
                    })
                    .time_to_live(ttl.max(Duration::from_secs(1)))
                    .build(),
                running: Mutex::new(HashMap::new()),
            }),
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        // Entries are inserted and removed whole under the lock: a poisoned map is intact.
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `client_id` runs as the task behind `abort`.
    pub fn register(&self, client_id: &str, query_id: i64, abort: AbortHandle) {
        self.running()
            .insert(client_id.to_owned(), Running { query_id, abort });
    }

    /// Claims the right to write a running query's final state: true for exactly one caller
    /// (the task finishing, a stop, a timeout), which removes it from the registry.
    pub fn claim(&self, client_id: &str) -> bool {
        self.running().remove(client_id).is_some()
    }

    /// Stops a query running in this process: claims it and aborts its task, which cancels
    /// its statement inside the database. Returns its query id, or `None` when it is not
    /// running here (finished, or running in another replica).
    pub fn stop(&self, client_id: &str) -> Option<i64> {
        let running = self.running().remove(client_id)?;
        running.abort.abort();
        Some(running.query_id)
    }

    /// Whether `client_id` is running in this process.
    pub fn is_running(&self, client_id: &str) -> bool {
        self.running().contains_key(client_id)
    }

    /// Keeps the rows of a finished query under its results key.
    pub async fn keep(&self, key: &str, rows: Arc<ResultSet>) {
        self.inner.results.insert(key.to_owned(), rows).await;
    }

    /// The rows kept under `key`, if still there.
    pub async fn results(&self, key: &str) -> Option<Arc<ResultSet>> {
        self.inner.results.get(key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{Cell, ResultColumn};

    const PG: SqlDialect = SqlDialect::Postgres;

    fn denied() -> BTreeSet<String> {
        ["pg_sleep".to_owned()].into_iter().collect()
    }

    #[test]
    fn the_last_select_gets_one_row_more_than_the_limit() {
        let p = plan(PG, "SELECT 1; SELECT * FROM t", 10, false, &denied()).unwrap();
        assert_eq!(p.statements.len(), 2);
        assert_eq!(p.statements[0], "SELECT 1");
        assert!(p.statements[1].ends_with("LIMIT 11"), "{}", p.statements[1]);
        assert_eq!(p.factor, LimitingFactor::Dropdown);
        assert_eq!(p.limit, 10);
        assert_eq!(p.fetch, 11);
        assert!(p.read_only);
    }

    #[test]
    fn a_smaller_query_limit_is_kept() {
        let p = plan(PG, "SELECT * FROM t LIMIT 5", 10, false, &denied()).unwrap();
        assert_eq!(p.statements, vec!["SELECT * FROM t LIMIT 5"]);
        assert_eq!(p.factor, LimitingFactor::Query);
        assert_eq!(p.limit, 5);
    }

    #[test]
    fn mysql_file_writes_and_variables_are_dml() {
        for sql in [
            "SELECT * FROM http_sales INTO OUTFILE '/tmp/x'",
            "SELECT * INTO OUTFILE '/tmp/x' FROM t",
            "SELECT 'x' INTO DUMPFILE '/tmp/x'",
            "SELECT 1 INTO @a",
            "SELECT a FROM t INTO @a",
            "select a from t into   outfile '/tmp/x' fields terminated by ','",
            "SELECT a FROM t /* c */ INTO /* c */ DUMPFILE '/tmp/x'",
            "SELECT a FROM t INTO @`a`",
        ] {
            let got = plan(SqlDialect::MySql, sql, 10, false, &denied());
            assert!(
                matches!(got, Err(SqlLabError::DmlNotAllowed)),
                "{sql}: {got:?}"
            );
        }
        // The words inside strings and comments are not the clause.
        for sql in [
            "SELECT 'INTO OUTFILE' AS a",
            "SELECT a FROM t -- INTO OUTFILE '/tmp/x'",
        ] {
            assert!(
                plan(SqlDialect::MySql, sql, 10, false, &denied()).is_ok(),
                "{sql}"
            );
        }
    }

    #[test]
    fn writes_templates_and_denied_functions_are_refused_before_running() {
        let d = denied();
        assert!(matches!(
            plan(PG, "DELETE FROM t", 10, false, &d),
            Err(SqlLabError::DmlNotAllowed)
        ));
        assert!(matches!(
            plan(
                PG,
                "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
                10,
                false,
                &d
            ),
            Err(SqlLabError::DmlNotAllowed)
        ));
        assert!(plan(PG, "DELETE FROM t", 10, true, &d).is_ok());
        assert!(matches!(
            plan(PG, "SELECT pg_catalog.PG_SLEEP(1)", 10, false, &d),
            Err(SqlLabError::DisallowedFunctions(f)) if f == vec!["pg_sleep".to_owned()]
        ));
        assert!(matches!(
            plan(PG, "SET search_path = x; SELECT 1", 10, true, &d),
            Err(SqlLabError::SessionStatement(w)) if w == "SET"
        ));
    }

    #[test]
    fn unparsable_sql_goes_to_the_database_whole_but_not_past_the_deny_list() {
        let d = denied();
        let p = plan(PG, "SELEC 1;", 10, false, &d).unwrap();
        assert_eq!(p.statements, vec!["SELEC 1"]);
        assert!(p.read_only);
        assert!(matches!(
            plan(PG, "SELEC pg_sleep(1)", 10, false, &d),
            Err(SqlLabError::DisallowedFunctions(_))
        ));
        let deep = format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(matches!(
            plan(PG, &deep, 10, false, &d),
            Err(SqlLabError::Sql(_))
        ));
        assert!(matches!(
            plan(PG, "SELECT 1\0; DROP TABLE t", 10, true, &d),
            Err(SqlLabError::Sql(_))
        ));
    }

    #[test]
    fn session_statements_are_refused_however_they_are_written() {
        const LITE: SqlDialect = SqlDialect::Sqlite;
        let d = denied();
        let cases: &[(SqlDialect, &str, &str)] = &[
            (LITE, "ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH"),
            (LITE, "ATTACH '/tmp/x.db' AS x KEY ''", "ATTACH"),
            (LITE, "/* x */ ATTACH '/tmp/x.db' AS x KEY ''", "ATTACH"),
            (LITE, "-- x\nattach '/tmp/x.db' AS x", "ATTACH"),
            (LITE, ";\n ; Attach '/tmp/x.db' AS x KEY ''", "ATTACH"),
            (
                LITE,
                "/* /* */ ATTACH '/tmp/x.db' AS x KEY '' -- */",
                "ATTACH",
            ),
            (LITE, "DETACH x", "DETACH"),
            (LITE, "BEGIN TRANSACTION 'x'", "BEGIN"),
            (LITE, "/**/BEGIN DEFERRED", "BEGIN"),
            (LITE, "begin immediate", "BEGIN"),
            (LITE, "BEGIN EXCLUSIVE TRANSACTION", "BEGIN"),
            (LITE, "SAVEPOINT s", "SAVEPOINT"),
            (LITE, "RELEASE SAVEPOINT s", "RELEASE"),
            (LITE, "END TRANSACTION", "END"),
            (LITE, "COMMIT TRANSACTION", "COMMIT"),
            (LITE, "ROLLBACK TO SAVEPOINT s", "ROLLBACK"),
            (LITE, "VACUUM INTO '/tmp/copy.db'", "VACUUM"),
            (LITE, "PRAGMA writable_schema = ON", "PRAGMA"),
            (LITE, "/* x */ PRAGMA foreign_keys=OFF", "PRAGMA"),
            (LITE, "PRAGMA cache_size(-1) junk junk", "PRAGMA"),
            (
                PG,
                "/* a /* nested */ comment */ SET search_path = x",
                "SET",
            ),
            (PG, "-- x\rSET ROLE postgres", "SET"),
            (PG, "RESET ALL", "RESET"),
            (PG, "DISCARD ALL", "DISCARD"),
            (PG, "LOAD 'plpgsql'", "LOAD"),
            (PG, "LISTEN x", "LISTEN"),
            (PG, "NOTIFY x", "NOTIFY"),
            (PG, "COPY t TO '/tmp/x'", "COPY"),
            (PG, "COPY (SELECT 1) TO PROGRAM 'id'", "COPY"),
            (PG, "DO $$ BEGIN PERFORM 1; END $$", "DO"),
            (PG, "PREPARE p AS SELECT 1", "PREPARE"),
            (PG, "EXECUTE p", "EXECUTE"),
            (PG, "DEALLOCATE ALL", "DEALLOCATE"),
            (PG, "CALL p()", "CALL"),
            (PG, "CHECKPOINT", "CHECKPOINT"),
            (PG, "LOCK TABLE t", "LOCK"),
            (PG, "START TRANSACTION READ WRITE", "START"),
            (PG, "SELECT 1; COMMIT", "COMMIT"),
            (PG, "ABORT", "ABORT"),
        ];
        for (dialect, sql, word) in cases {
            for allow_dml in [false, true] {
                match plan(*dialect, sql, 10, allow_dml, &d) {
                    Err(SqlLabError::SessionStatement(w)) => assert_eq!(w, *word, "{sql:?}"),
                    other => panic!("{sql:?} (allow_dml {allow_dml}): {other:?}"),
                }
            }
        }
        // Every PRAGMA, even one that only reads; comments that merely mention a keyword
        // stay allowed.
        assert!(matches!(
            plan(LITE, "PRAGMA table_info(t)", 10, false, &d),
            Err(SqlLabError::SessionStatement(w)) if w == "PRAGMA"
        ));
        assert!(plan(LITE, "/* ATTACH */ SELECT 1", 10, false, &d).is_ok());
        assert!(plan(PG, "/* /* */ SET */ SELECT 1", 10, false, &d).is_ok());
    }

    #[test]
    fn unparsable_sql_is_checked_for_every_spelling_of_a_denied_call() {
        let d: BTreeSet<String> = ["pg_sleep", "set_config", "lo_*"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        for sql in [
            "SELEC pg_sleep(1)",
            "SELEC \"pg_sleep\"(1)",
            "SELEC pg_catalog.\"PG_SLEEP\" (1)",
            "SELEC \"pg_catalog\".pg_sleep/* x */(1)",
            "SELEC set_config\n-- c\n('a', 'b', false)",
            "SELEC lo_import('/etc/passwd')",
            "SELECT * FROM ROWS FROM (set_config('a', 'b', false))",
        ] {
            assert!(
                matches!(
                    plan(PG, sql, 10, true, &d),
                    Err(SqlLabError::DisallowedFunctions(_))
                ),
                "{sql:?}"
            );
        }
        // A column that matches a pattern is not a call.
        assert!(plan(PG, "SELEC lo_discount FROM lineorder", 10, false, &d).is_ok());
        assert!(matches!(
            plan(
                PG,
                "SELEC U&\"\\0073et_config\"('a', 'b', false)",
                10,
                false,
                &d
            ),
            Err(SqlLabError::Sql(_))
        ));
        assert!(matches!(
            plan(
                PG,
                "SELECT U&\"\\0073et_config\"('a', 'b', false)",
                10,
                false,
                &d
            ),
            Err(SqlLabError::Sql(_))
        ));
    }

    #[test]
    fn settling_follows_superset() {
        let rows = |n: i64| ResultSet {
            columns: vec![ResultColumn {
                name: "x".into(),
                type_name: "int4".into(),
            }],
            rows: (0..n).map(|i| vec![Cell::Int(i)]).collect(),
        };
        let mut r = rows(11);
        assert_eq!(
            settle(LimitingFactor::Dropdown, 10, &mut r),
            LimitingFactor::Dropdown
        );
        assert_eq!(r.rows.len(), 10);
        let mut r = rows(3);
        assert_eq!(
            settle(LimitingFactor::Dropdown, 10, &mut r),
            LimitingFactor::NotLimited
        );
        let mut r = rows(5);
        assert_eq!(
            settle(LimitingFactor::Query, 5, &mut r),
            LimitingFactor::Query
        );
    }
}
