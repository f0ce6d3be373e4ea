//! Classes 3, 4 and 6: what the analytics engines themselves must refuse, whatever the SQL text
//! looks like, and what they must never leave behind on a pooled connection.
//!
//! - SQLite analytics connections are locked down by SQLite (authorizer, read-only open,
//!   limits): ATTACH in every spelling, transaction control, PRAGMA writes, temporary objects
//!   that would shadow tables for the next user, dangerous functions and writes without
//!   `allow_dml` are refused, and every pooled connection stays clean.
//! - PostgreSQL sessions cannot leak: `set_config(…, false)` in a chart metric or a SQL Lab
//!   statement, a session advisory lock, or a `SET` by a DML-allowed statement are undone
//!   before the connection is reused. The deny-list is emptied for those databases
//!   (`query.databases.<name>.disallowed_functions = ""`) so the engine's own fix is what is
//!   tested.
//! - Results are bounded in bytes (`query.max_result_bytes`): a huge cell or many rows are cut
//!   off while they stream in, the request answers 400 `RESULT_TOO_LARGE_ERROR`, and the
//!   server's memory stays put.
//!
//! The black-box SQLite tests use the embedded examples database (always allowed); the engine
//! tests drive `liteset::engines` directly on SQLite files and a real PostgreSQL, bypassing
//! SQL Lab's planner, so the planner cannot be what refuses the attack.

use std::time::{Duration, Instant};

use liteset::engines::{ConnectionSpec, EngineError, EngineOptions, Engines, ExecOptions};
use liteset::uri::ConnectionUri;
use liteset_tests::{ADMIN_PASSWORD, Api, TestServer, pg};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::common::{error_type, id_of};

const READ: ExecOptions = ExecOptions {
    read_only: true,
    max_rows: 1000,
};

fn spec(uri: &str, options: EngineOptions) -> ConnectionSpec {
    ConnectionSpec {
        database_id: 1,
        uri: ConnectionUri::parse(uri).expect("uri"),
        revision: "1".into(),
        options: Some(options),
        server_cert: None,
    }
}

fn small_pool() -> EngineOptions {
    EngineOptions {
        pool_size: 2,
        pool_wait: Duration::from_secs(10),
        statement_timeout: Duration::from_secs(10),
        ..EngineOptions::default()
    }
}

fn text(rs: &liteset::engines::ResultSet) -> Vec<Vec<String>> {
    rs.rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| match c {
                    liteset::engines::Cell::Text(s) | liteset::engines::Cell::Decimal(s) => {
                        s.clone()
                    }
                    liteset::engines::Cell::Int(i) => i.to_string(),
                    liteset::engines::Cell::Null => "NULL".into(),
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .collect()
}

/// Runs `check` `n` times at once, so every connection of a small pool serves some of them
/// (each check also takes a moment, so they overlap); returns every answer.
async fn on_every_connection(
    engines: &Engines,
    spec: &ConnectionSpec,
    sql: &str,
    n: usize,
) -> Vec<Vec<Vec<String>>> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (engines, spec, sql) = (engines.clone(), spec.clone(), sql.to_owned());
        tasks.push(tokio::spawn(async move {
            engines.execute(&spec, &sql, READ).await
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(text(&t.await.expect("join").expect("check query")));
    }
    out
}

/// An analytics file with `sales`, a secret file next to it, and their folder.
fn sqlite_files() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let analytics = dir.path().join("analytics.db");
    let secret = dir.path().join("secret.db");
    let conn = rusqlite::Connection::open(&analytics).expect("create");
    conn.execute_batch("CREATE TABLE sales (region TEXT); INSERT INTO sales VALUES ('north');")
        .expect("fill");
    let conn = rusqlite::Connection::open(&secret).expect("create");
    conn.execute_batch("CREATE TABLE secret (v TEXT); INSERT INTO secret VALUES ('TOPSECRET');")
        .expect("fill");
    let (a, s) = (
        analytics.display().to_string(),
        secret.display().to_string(),
    );
    (dir, a, s)
}

/// What SQLite refuses on every analytics connection, DML allowed or not: `{secret}` and
/// `{dir}` stand for the secret file and the folder.
const ALWAYS_REFUSED: &[&str] = &[
    "ATTACH '{secret}' AS x",
    "ATTACH DATABASE '{secret}' AS x KEY ''",
    "/* just a comment */ attach database '{secret}' as x",
    "-- leading comment\nATTACH\n'{secret}'\nAS \"x\"",
    "ATTACH 'file:{secret}?mode=ro' AS x",
    "ATTACH '{secret}' || '' AS x",
    "DETACH x",
    "BEGIN TRANSACTION 'x'",
    "/**/ begin immediate",
    "BEGIN EXCLUSIVE TRANSACTION",
    "SAVEPOINT s1",
    "COMMIT",
    "END TRANSACTION",
    "ROLLBACK",
    "PRAGMA writable_schema = 1",
    "PRAGMA main.query_only = 0",
    "pragma recursive_triggers(1)",
    "PRAGMA trusted_schema = ON",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA temp_store_directory = '{dir}'",
    "PRAGMA wal_checkpoint",
    "PRAGMA optimize",
    "PRAGMA cell_size_check = 1",
    "VACUUM INTO '{dir}/copy.db'",
    "SELECT load_extension('{dir}/evil.so')",
    "SELECT fts3_tokenizer('simple')",
    "CREATE TEMP VIEW sales AS SELECT 'evil' AS region",
    "CREATE TEMPORARY TABLE sales (region TEXT)",
    "create temp trigger t after insert on sales begin select 1; end",
];

/// Writes, refused unless the database allows DML.
const WRITES: &[&str] = &[
    "INSERT INTO sales VALUES ('south')",
    "REPLACE INTO sales VALUES ('south')",
    "WITH a AS (SELECT 'south') INSERT INTO sales SELECT * FROM a",
    "UPDATE sales SET region = 'west'",
    "DELETE FROM sales",
    "CREATE TABLE z (x)",
    "CREATE VIEW v AS SELECT 1",
    "DROP TABLE sales",
    "ALTER TABLE sales ADD COLUMN y",
    "CREATE INDEX i ON sales (region)",
    "ANALYZE",
];

fn fill(sql: &str, dir: &str, secret: &str) -> String {
    sql.replace("{secret}", secret).replace("{dir}", dir)
}

/// Every pooled connection sees only `main`, the real `sales`, and no open transaction.
async fn assert_clean_sqlite(engines: &Engines, spec: &ConnectionSpec, want_sales: &[&str]) {
    let check = "SELECT (SELECT group_concat(name) FROM pragma_database_list WHERE name <> 'temp'), \
                 (SELECT group_concat(region) FROM (SELECT region FROM sales ORDER BY region)), \
                 (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200000) \
                  SELECT count(*) FROM c)";
    let want = vec![vec![
        "main".to_owned(),
        want_sales.join(","),
        "200000".to_owned(),
    ]];
    for got in on_every_connection(engines, spec, check, 6).await {
        assert_eq!(got, want);
    }
    // No pooled connection can read the secret file.
    for _ in 0..4 {
        let err = engines
            .execute(spec, "SELECT v FROM x.secret", READ)
            .await
            .expect_err("the secret file is attached");
        assert_eq!(
            err,
            EngineError::TableNotFound {
                table: "x.secret".into()
            }
        );
    }
}

#[tokio::test]
async fn sqlite_engine_refuses_attach_transactions_pragmas_and_writes_in_every_spelling() {
    let (dir, analytics, secret) = sqlite_files();
    let dir_s = dir.path().display().to_string();
    let engines = Engines::new(
        small_pool(),
        liteset::engines::ConnectionGuard::unrestricted(),
    );
    let ro = spec(&format!("sqlite:///{analytics}"), small_pool());
    for raw in ALWAYS_REFUSED.iter().chain(WRITES) {
        let sql = fill(raw, &dir_s, &secret);
        // Twice: a spelling that slipped through once would show on the second run.
        for _ in 0..2 {
            let err = engines
                .execute(
                    &ro,
                    &sql,
                    ExecOptions {
                        read_only: false,
                        max_rows: 10,
                    },
                )
                .await
                .expect_err(&sql);
            let refused = matches!(&err, EngineError::Refused { .. } | EngineError::NotReadOnly);
            // Functions that do not exist in this build fail on their own.
            let missing = matches!(&err, EngineError::Other { message } if message.contains("no such function"));
            assert!(refused || missing, "{sql}: {err:?}");
            assert!(
                matches!(
                    err.error_type(),
                    "INVALID_SQL_ERROR" | "DATASOURCE_SECURITY_ACCESS_ERROR"
                ) || missing,
                "{sql}: {err:?}"
            );
        }
    }
    assert!(
        !dir.path().join("copy.db").exists(),
        "VACUUM INTO wrote a file"
    );
    assert_clean_sqlite(&engines, &ro, &["north"]).await;

    // With DML allowed, writes go through, and everything else is still refused.
    let rw_options = EngineOptions {
        allow_dml: true,
        ..small_pool()
    };
    let rw = ConnectionSpec {
        database_id: 2,
        ..spec(&format!("sqlite:///{analytics}"), rw_options)
    };
    let write = ExecOptions {
        read_only: false,
        max_rows: 10,
    };
    engines
        .execute(&rw, "INSERT INTO sales VALUES ('south')", write)
        .await
        .expect("DML allowed");
    for raw in ALWAYS_REFUSED {
        let sql = fill(raw, &dir_s, &secret);
        let err = engines.execute(&rw, &sql, write).await.expect_err(&sql);
        let missing =
            matches!(&err, EngineError::Other { message } if message.contains("no such function"));
        assert!(
            matches!(&err, EngineError::Refused { .. }) || missing,
            "{sql}: {err:?}"
        );
    }
    // A read-only run on a DML database still refuses a write (CSV export re-runs this way).
    let err = engines
        .execute(&rw, "DELETE FROM sales", READ)
        .await
        .expect_err("read-only run");
    assert_eq!(err, EngineError::NotReadOnly);
    assert!(
        !dir.path().join("copy.db").exists(),
        "VACUUM INTO wrote a file"
    );
    assert_clean_sqlite(&engines, &rw, &["north", "south"]).await;
    // Introspection still works through the pragma table functions.
    let meta = engines
        .table_metadata(&ro, None, "sales")
        .await
        .expect("metadata");
    assert_eq!(meta.columns.len(), 1);
    let rs = engines
        .execute(&ro, "PRAGMA table_info(sales)", READ)
        .await
        .expect("read-only pragma");
    assert_eq!(rs.rows.len(), 1);
}

/// A fresh PostgreSQL analytics database with one table; its URL.
async fn pg_analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE SCHEMA evil; \
             CREATE TABLE public.sales (region text); INSERT INTO public.sales VALUES ('north'); \
             CREATE TABLE evil.sales (region text); INSERT INTO evil.sales VALUES ('EVIL');",
        )
        .await
        .expect("fill");
    url
}

/// What every pooled PostgreSQL connection must report after the attacks.
const PG_CHECK: &str = "SELECT current_setting('search_path') AS sp, \
    current_setting('statement_timeout') AS st, \
    current_setting('standard_conforming_strings') AS scs, \
    current_setting('application_name') AS app, \
    (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks, \
    (SELECT region FROM sales) AS region, \
    pg_sleep(0.05)::text AS pause";

#[tokio::test]
async fn postgres_sessions_do_not_leak_between_statements() {
    let url = pg_analytics().await;
    let engines = Engines::new(
        small_pool(),
        liteset::engines::ConnectionGuard::unrestricted(),
    );
    let spec = spec(&url, small_pool());
    let baseline = on_every_connection(&engines, &spec, PG_CHECK, 1).await;
    assert_eq!(
        baseline[0],
        vec![vec![
            "\"$user\", public",
            "10s",
            "on",
            "liteset",
            "0",
            "north",
            ""
        ]]
    );
    let write = ExecOptions {
        read_only: false,
        max_rows: 10,
    };
    for (sql, opts) in [
        ("SELECT set_config('search_path', 'evil', false)", READ),
        ("SELECT set_config('statement_timeout', '1', false)", READ),
        (
            "SELECT set_config('standard_conforming_strings', 'off', false)",
            READ,
        ),
        ("SELECT set_config('application_name', 'evil', false)", READ),
        ("SELECT pg_advisory_lock(42)", READ),
        ("SELECT set_config('search_path', 'evil', false)", write),
        (
            "SELECT set_config('standard_conforming_strings', 'off', false)",
            write,
        ),
        ("SET search_path = evil", write),
        ("SET SESSION statement_timeout = 1", write),
        ("SELECT pg_advisory_lock(43)", write),
        (
            "/* c */ select set_config('search_path', 'evil', false) from sales",
            READ,
        ),
    ] {
        for _ in 0..3 {
            engines.execute(&spec, sql, opts).await.expect(sql);
        }
        for got in on_every_connection(&engines, &spec, PG_CHECK, 4).await {
            assert_eq!(got, baseline[0], "after {sql}");
        }
    }
    // A failing statement and a cancelled one leave nothing either.
    let err = engines
        .execute(
            &spec,
            "SELECT set_config('search_path', 'evil', false), 1 / 0",
            READ,
        )
        .await
        .expect_err("division by zero");
    assert!(matches!(err, EngineError::Other { .. }), "{err:?}");
    let run = engines.execute(
        &spec,
        "SELECT set_config('search_path', 'evil', false), pg_sleep(5)",
        write,
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(300), run)
            .await
            .is_err()
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    for got in on_every_connection(&engines, &spec, PG_CHECK, 4).await {
        assert_eq!(got, baseline[0], "after a failure and a cancel");
    }
    // DML-allowed statements still commit.
    engines
        .execute(&spec, "INSERT INTO sales VALUES ('south')", write)
        .await
        .expect("insert");
    let rs = engines
        .execute(&spec, "SELECT count(*) FROM sales", READ)
        .await
        .expect("count");
    assert_eq!(text(&rs), vec![vec!["2"]]);
}

/// SQL Lab, synchronous.
async fn sqllab(api: &Api, db: i64, sql: &str) -> (StatusCode, Value) {
    api.post(
        "/api/v1/sqllab/execute/",
        json!({"database_id": db, "sql": sql, "runAsync": false}),
    )
    .await
}

/// Another handle on the same session (`Api` is not `Clone`).
fn same(api: &Api) -> Api {
    Api {
        client: api.client.clone(),
        base: api.base.clone(),
        token: api.token.clone(),
        csrf: api.csrf.clone(),
    }
}

#[tokio::test]
async fn sqlite_attacks_through_sql_lab_and_charts_are_refused_and_leave_nothing() {
    let (dir, _analytics, secret) = sqlite_files();
    let dir_s = dir.path().display().to_string();
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .env("LITESET_QUERY__DATABASES__EXAMPLES__POOL_SIZE", "2")
        // The engine must refuse the functions itself.
        .env(
            "LITESET_QUERY__DATABASES__EXAMPLES__DISALLOWED_FUNCTIONS",
            "",
        )
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = id_of(&api, "/api/v1/database/", "database_name", "examples").await;
    for raw in ALWAYS_REFUSED {
        let sql = fill(raw, &dir_s, &secret);
        let (s, r) = sqllab(&api, db, &sql).await;
        if r.to_string().contains("no such function") {
            continue;
        }
        // SQL Lab's planner may see some spellings first and refuse them as DML (Superset
        // answers that with a 500); either way nothing runs.
        let planner_dml =
            s == StatusCode::INTERNAL_SERVER_ERROR && error_type(&r) == "DML_NOT_ALLOWED_ERROR";
        if !planner_dml {
            assert_eq!(s, StatusCode::BAD_REQUEST, "{sql}: {r}");
            assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{sql}: {r}");
        }
    }
    assert!(
        !dir.path().join("copy.db").exists(),
        "VACUUM INTO wrote a file"
    );
    // Chart metrics calling refused functions: the engine answers, with a 400.
    let sales = id_of(&api, "/api/v1/dataset/", "table_name", "sales").await;
    for metric in [
        "MAX(load_extension('/nonexistent/evil.so'))",
        "MAX(fts3_tokenizer('simple'))",
    ] {
        let (s, r) = api
            .post(
                "/api/v1/chart/data",
                json!({"datasource": {"id": sales, "type": "table"},
                       "queries": [{"metrics": [{"expressionType": "SQL", "sqlExpression": metric, "label": "m"}]}]}),
            )
            .await;
        if r.to_string().contains("no such function") {
            continue;
        }
        assert_eq!(s, StatusCode::BAD_REQUEST, "{metric}: {r}");
        assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{metric}: {r}");
    }
    // Every pooled connection: only main, no secret, no transaction left open (a write from
    // another connection of the server's pool would wait on it).
    for _ in 0..6 {
        let (s, r) = sqllab(
            &api,
            db,
            "SELECT group_concat(name) AS dbs FROM pragma_database_list WHERE name <> 'temp'",
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["data"], json!([{"dbs": "main"}]));
        let (s, r) = sqllab(&api, db, "SELECT v FROM x.secret").await;
        assert_ne!(s, StatusCode::OK, "{r}");
        assert!(!r.to_string().contains("TOPSECRET"), "{r}");
    }
}

#[tokio::test]
async fn chart_metrics_and_sql_lab_cannot_change_other_users_postgres_sessions() {
    let url = pg_analytics().await;
    let server = TestServer::builder()
        .env("LITESET_QUERY__DATABASES__LEAKY__POOL_SIZE", "2")
        .env("LITESET_QUERY__DATABASES__LEAKY__DISALLOWED_FUNCTIONS", "")
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, db) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": "leaky", "sqlalchemy_uri": url, "expose_in_sqllab": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    let db = db["id"].as_i64().expect("id");
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db, "schema": "public", "table_name": "sales"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let ds = ds["id"].as_i64().expect("id");
    let check = "SELECT current_setting('search_path') AS sp, \
                 current_setting('statement_timeout') AS st, \
                 current_setting('standard_conforming_strings') AS scs, \
                 (SELECT region FROM sales) AS region, 'a\\b' AS lit, pg_sleep(0.05)::text AS p";
    let want = json!([{"sp": "\"$user\", public", "st": "5min", "scs": "on", "region": "north",
                       "lit": "a\\b", "p": ""}]);
    let (s, r) = sqllab(&api, db, check).await;
    assert_eq!((s, &r["data"]), (StatusCode::OK, &want), "{r}");
    for metric in [
        "MAX(set_config('search_path', 'evil', false))",
        "MAX(set_config('statement_timeout', '1', false))",
        "MAX(set_config('standard_conforming_strings', 'off', false))",
        "MAX(pg_advisory_lock(7)::text)",
    ] {
        for _ in 0..3 {
            let (s, r) = api
                .post(
                    "/api/v1/chart/data",
                    json!({"datasource": {"id": ds, "type": "table"}, "force": true,
                           "queries": [{"metrics": [{"expressionType": "SQL", "sqlExpression": metric, "label": "m"}]}]}),
                )
                .await;
            assert_eq!(s, StatusCode::OK, "{metric}: {r}");
            let (s, r) = sqllab(
                &api,
                db,
                &metric
                    .replace("MAX(", "SELECT (")
                    .replace("::text)", ")::text"),
            )
            .await;
            assert_eq!(s, StatusCode::OK, "{metric}: {r}");
        }
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let api = same(&api);
                tokio::spawn(async move { sqllab(&api, db, check).await })
            })
            .collect();
        for t in tasks {
            let (s, r) = t.await.expect("join");
            assert_eq!(
                (s, &r["data"]),
                (StatusCode::OK, &want),
                "after {metric}: {r}"
            );
        }
    }
}

/// The server's resident memory, in bytes.
pub(crate) fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

const BUDGET: u64 = 8 * 1024 * 1024;

#[tokio::test]
async fn huge_results_are_cut_off_with_a_400_and_memory_stays_bounded() {
    let url = pg_analytics().await;
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .env("LITESET_QUERY__MAX_RESULT_BYTES", BUDGET.to_string())
        .env("LITESET_QUERY__CACHE_MAX_MB", "0")
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let examples = id_of(&api, "/api/v1/database/", "database_name", "examples").await;
    let sales = id_of(&api, "/api/v1/dataset/", "table_name", "sales").await;
    let (s, pgdb) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": "big", "sqlalchemy_uri": url, "expose_in_sqllab": true,
                   "allow_run_async": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{pgdb}");
    let pgdb = pgdb["id"].as_i64().expect("id");
    let dataset = |db: i64, name: &str, sql: &str| {
        let api = same(&api);
        let body = json!({"database": db, "schema": if db == pgdb { "public" } else { "main" },
                          "table_name": name, "sql": sql});
        async move {
            let (s, ds) = api.post("/api/v1/dataset/", body).await;
            assert_eq!(s, StatusCode::CREATED, "{ds}");
            ds["id"].as_i64().expect("id")
        }
    };
    let pg_one = dataset(pgdb, "one", "SELECT 1 AS x").await;
    let pg_many = dataset(
        pgdb,
        "many",
        "SELECT g AS x, repeat('x', 1000) AS pad FROM generate_series(1, 1000000) g",
    )
    .await;
    let lite_many = dataset(
        examples,
        "many",
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000000) \
         SELECT i AS x, printf('%.*c', 1000, 'x') AS pad FROM c",
    )
    .await;
    // Warm up, then the baseline.
    let (s, _) = api.get("/api/v1/chart/1/data/").await;
    assert_eq!(s, StatusCode::OK);
    let baseline = rss(server.pid());
    let metric = |ds: i64, sql: &str| {
        json!({"datasource": {"id": ds, "type": "table"}, "force": true,
               "queries": [{"metrics": [{"expressionType": "SQL", "sqlExpression": sql, "label": "m"}]}]})
    };
    let rows = |ds: i64| {
        json!({"datasource": {"id": ds, "type": "table"}, "force": true,
               "queries": [{"columns": ["x", "pad"], "row_limit": 100000}]})
    };
    let cases = [
        (
            "pg huge cell",
            metric(pg_one, "MAX(repeat('x', 100000000))"),
        ),
        ("pg many rows", rows(pg_many)),
        ("sqlite zeroblob", metric(sales, "MAX(zeroblob(200000000))")),
        (
            "sqlite hex",
            metric(sales, "MAX(replace(hex(zeroblob(100000000)), '00', 'x'))"),
        ),
        ("sqlite many rows", rows(lite_many)),
    ];
    for (name, body) in &cases {
        let started = Instant::now();
        let (s, r) = api.post("/api/v1/chart/data", body.clone()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{name}: {r}");
        assert_eq!(error_type(&r), "RESULT_TOO_LARGE_ERROR", "{name}: {r}");
        assert_eq!(
            r["errors"][0]["message"],
            "The query result exceeds the allowed limit of 8 MB. Add filters or aggregations, \
             select fewer columns, or lower the row limit.",
            "{name}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{name} took long"
        );
        let now = rss(server.pid());
        // For the notes: `cargo test … -- --nocapture` shows what each attempt cost.
        eprintln!("{name}: RSS {} MiB -> {} MiB", baseline >> 20, now >> 20);
        assert!(
            now < baseline + BUDGET + 200 * 1024 * 1024,
            "{name}: RSS grew from {baseline} to {now}"
        );
    }
    // SQLite's printf() answers NULL, not an error, for a string past the connection's
    // length limit (the result budget): nothing big is ever built.
    let (s, r) = api
        .post(
            "/api/v1/chart/data",
            metric(sales, "MAX(printf('%.*c', 200000000, 'x'))"),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"][0]["data"], json!([{"m": null}]), "{r}");
    assert!(rss(server.pid()) < baseline + BUDGET + 200 * 1024 * 1024);
    // SQL Lab, synchronous and asynchronous.
    for (db, sql) in [
        (pgdb, "SELECT repeat('x', 100000000) AS big"),
        (
            pgdb,
            "SELECT g, repeat('x', 1000) FROM generate_series(1, 1000000) g",
        ),
        (examples, "SELECT zeroblob(200000000) AS big"),
    ] {
        let (s, r) = sqllab(&api, db, sql).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{sql}: {r}");
        assert_eq!(error_type(&r), "RESULT_TOO_LARGE_ERROR", "{sql}: {r}");
    }
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": pgdb, "client_id": "big01", "runAsync": true,
                   "sql": "SELECT repeat('x', 100000000) AS big"}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{r}");
    let query_id = r["query"]["queryId"].as_i64().expect("query id");
    let until = Instant::now() + Duration::from_secs(20);
    let q = loop {
        let (_, q) = api.get(&format!("/api/v1/query/{query_id}")).await;
        if q["result"]["status"] == "failed" || Instant::now() > until {
            break q;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(q["result"]["status"], "failed", "{q}");
    assert!(
        q["result"]["error_message"]
            .as_str()
            .is_some_and(|m| m.contains("exceeds the allowed limit of 8 MB")),
        "{q}"
    );
    let now = rss(server.pid());
    assert!(
        now < baseline + BUDGET + 200 * 1024 * 1024,
        "RSS grew from {baseline} to {now}"
    );
    // The server still answers, and small results still flow.
    let (s, r) = sqllab(&api, pgdb, "SELECT repeat('x', 1000) AS fine").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let (s, r) = api.get("/api/v1/chart/1/data/").await;
    assert_eq!(s, StatusCode::OK, "{r}");
}
