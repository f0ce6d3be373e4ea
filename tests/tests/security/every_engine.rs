//! The same hostile inputs against every analytical engine: PostgreSQL, ClickHouse and
//! MariaDB, each behind a read-only database (no `allow_dml`) and a DML one. Writes and DDL in
//! several spellings, statements hidden behind comments or after a first statement, session
//! and transaction statements, the engine's always-refused functions in several spellings,
//! and chart fragments that try to leave their clause. Each must be refused (4xx in Superset's
//! envelope, or the 500 `DML_NOT_ALLOWED_ERROR` Superset gives a synchronous write), and the
//! canary table must hold its one row afterwards.

use liteset_tests::{ADMIN_PASSWORD, Api, TestServer, pg};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::error_type;

/// One engine under attack.
struct Target {
    name: &'static str,
    /// Read-only and DML database ids, and the canary dataset's id.
    ro: i64,
    rw: i64,
    dataset: i64,
    /// Calls the engine always refuses, spelled as its users would.
    refused_calls: Vec<String>,
    /// Statements that change the session or server, whatever `allow_dml` says.
    session: Vec<&'static str>,
}

async fn sqllab(api: &Api, db: i64, sql: &str) -> (StatusCode, Value) {
    api.post(
        "/api/v1/sqllab/execute/",
        json!({"database_id": db, "sql": sql, "runAsync": false}),
    )
    .await
}

async fn database(api: &Api, name: &str, uri: &str, dml: bool) -> i64 {
    let (s, d) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": name, "sqlalchemy_uri": uri, "expose_in_sqllab": true,
                   "allow_dml": dml}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{name}: {d}");
    d["id"].as_i64().expect("id")
}

async fn dataset(api: &Api, db: i64, schema: &str) -> i64 {
    let (s, d) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db, "schema": schema, "table_name": "canary"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    d["id"].as_i64().expect("id")
}

/// A refusal: 4xx in the envelope, or the 500 with SIP-40 errors Superset answers a failed
/// synchronous query with (`DML_NOT_ALLOWED_ERROR`, or the database's own refusal of text
/// the parser could not read; the canary check shows nothing ran).
fn refused(s: StatusCode, r: &Value) -> bool {
    let envelope = r.get("errors").is_some() || r.get("message").is_some();
    envelope
        && (s.is_client_error()
            || (s == StatusCode::INTERNAL_SERVER_ERROR && !error_type(r).is_empty()))
}

async fn canary_rows(api: &Api, t: &Target) -> Value {
    let (s, r) = sqllab(api, t.ro, "SELECT id FROM canary").await;
    assert_eq!(s, StatusCode::OK, "{}: {r}", t.name);
    r["data"].clone()
}

#[tokio::test]
async fn hostile_sql_is_refused_alike_on_every_engine() {
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let mut targets = Vec::new();

    // PostgreSQL.
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute("CREATE TABLE public.canary (id int); INSERT INTO public.canary VALUES (1)")
        .await
        .expect("canary");
    let ro = database(&api, "pg_ro", &url, false).await;
    targets.push(Target {
        name: "postgresql",
        ro,
        rw: database(&api, "pg_rw", &url, true).await,
        dataset: dataset(&api, ro, "public").await,
        refused_calls: [
            "pg_read_file('/etc/hostname')",
            "\"pg_read_file\"('/etc/hostname')",
            "PG_CATALOG.PG_READ_FILE('/etc/hostname')",
        ]
        .map(String::from)
        .to_vec(),
        session: vec![
            "SET work_mem = '1MB'",
            "BEGIN",
            "/* x */ RESET ALL",
            "SELECT 1; COMMIT",
        ],
    });

    // ClickHouse.
    let ch = liteset_tests::clickhouse::clickhouse().await;
    let db = ch.fresh_database().await;
    ch.exec(&format!(
        "CREATE TABLE {db}.canary (id Int32) ENGINE = MergeTree ORDER BY id"
    ))
    .await;
    ch.exec(&format!("INSERT INTO {db}.canary VALUES (1)"))
        .await;
    let uri = ch.url_for("default", None, &db);
    let ro = database(&api, "ch_ro", &uri, false).await;
    targets.push(Target {
        name: "clickhouse",
        ro,
        rw: database(&api, "ch_rw", &uri, true).await,
        dataset: dataset(&api, ro, &db).await,
        refused_calls: [
            "file('x.csv', CSV, 'a String')",
            "`url`('http://127.0.0.1:1/', CSV, 'a String')",
            "REMOTE /* x */ ('127.0.0.1', system.one)",
        ]
        .map(String::from)
        .to_vec(),
        session: vec![
            "SET max_threads = 1",
            "/* x */ SET readonly = 0",
            "SELECT 1; SET max_threads = 1",
        ],
    });

    // MariaDB (skipped loudly without the test server).
    if let Some(my) = liteset_tests::mariadb::mariadb() {
        let admin = database(&api, "my_admin", &my.admin_url, true).await;
        for sql in [
            "DROP TABLE IF EXISTS canary",
            "CREATE TABLE canary (id INT)",
            "INSERT INTO canary VALUES (1)",
        ] {
            let (s, r) = sqllab(&api, admin, sql).await;
            assert_eq!(s, StatusCode::OK, "{sql}: {r}");
        }
        // The account with FILE and DML privileges: Liteset's checks must hold where the
        // server's privileges would not.
        let ro = database(&api, "my_ro", &my.file_url, false).await;
        targets.push(Target {
            name: "mariadb",
            ro,
            rw: database(&api, "my_rw", &my.file_url, true).await,
            dataset: dataset(&api, ro, "liteset_test").await,
            refused_calls: [
                "load_file('/etc/passwd')",
                "`LOAD_FILE`('/etc/passwd')",
                "LoAd_FiLe /* x */ ('/etc/passwd')",
            ]
            .map(String::from)
            .to_vec(),
            session: vec![
                "SET @a = 1",
                "/* x */ SET SESSION sql_mode = 'ANSI_QUOTES'",
                "SELECT 1; COMMIT",
            ],
        });
    }

    for t in &targets {
        // Writes and DDL on the read-only database, in several spellings.
        for sql in [
            "INSERT INTO canary (id) VALUES (2)",
            "insert into canary values (2)",
            "DELETE FROM canary WHERE 1 = 1",
            "UPDATE canary SET id = 3",
            "ALTER TABLE canary DELETE WHERE 1 = 1",
            "DROP TABLE canary",
            "TRUNCATE TABLE canary",
            "CREATE TABLE evil (a INT)",
            "/* x */ DROP TABLE canary",
            "-- x\nDROP TABLE canary",
            "SELECT 1; DROP TABLE canary",
            "SELECT * FROM canary; INSERT INTO canary (id) VALUES (2)",
        ] {
            let (s, r) = sqllab(&api, t.ro, sql).await;
            assert!(refused(s, &r), "{}: {sql}: {s} {r}", t.name);
        }
        // Session and transaction statements, even where DML is allowed: refused by Liteset.
        for sql in &t.session {
            for db in [t.ro, t.rw] {
                let (s, r) = sqllab(&api, db, sql).await;
                assert!(
                    s.is_client_error() && error_type(&r) == "INVALID_SQL_ERROR",
                    "{}: {sql}: {s} {r}",
                    t.name
                );
            }
        }
        // The engine's refused functions, alone, in a subquery, in a CTE, after a statement.
        for call in &t.refused_calls {
            for sql in [
                format!("SELECT * FROM {call}"),
                format!("SELECT id FROM canary WHERE id IN (SELECT count(*) FROM {call})"),
                format!("WITH c AS (SELECT * FROM {call}) SELECT * FROM c"),
                format!("SELECT 1; SELECT * FROM {call}"),
            ] {
                for db in [t.ro, t.rw] {
                    let (s, r) = sqllab(&api, db, &sql).await;
                    assert!(
                        s.is_client_error() && error_type(&r) == "INVALID_SQL_ERROR",
                        "{}: {sql}: {s} {r}",
                        t.name
                    );
                }
            }
        }
        // Chart fragments that leave their clause or call a refused function.
        let call = &t.refused_calls[0];
        let sql_metric =
            |e: &str| json!({"expressionType": "SQL", "sqlExpression": e, "label": "m"});
        let bodies = [
            (
                json!([sql_metric("count(*)")]),
                json!({"where": "1 = 1) OR (1 = 1"}),
                json!([]),
            ),
            (
                json!([sql_metric("count(*)")]),
                json!({"where": "id > 0; DROP TABLE canary"}),
                json!([]),
            ),
            (
                json!([sql_metric("count(*)")]),
                json!({"having": "count(*) > 0) UNION ALL (SELECT 1"}),
                json!([]),
            ),
            (
                json!([sql_metric(
                    "count(*) FROM canary; DROP TABLE canary; SELECT 1"
                )]),
                json!({}),
                json!([]),
            ),
            (
                json!([sql_metric(&format!("(SELECT count(*) FROM {call})"))]),
                json!({}),
                json!([]),
            ),
            (
                json!([sql_metric("count(*)")]),
                json!({"where": format!("id IN (SELECT count(*) FROM {call})")}),
                json!([]),
            ),
            (
                json!([sql_metric("count(*)")]),
                json!({}),
                json!([{"sqlExpression": format!("(SELECT count(*) FROM {call})"), "label": "c"}]),
            ),
        ];
        for (metrics, extras, columns) in bodies {
            let body = json!({"datasource": {"id": t.dataset, "type": "table"},
                              "queries": [{"columns": columns, "metrics": metrics,
                                           "extras": extras}]});
            let (s, r) = api.post("/api/v1/chart/data", body.clone()).await;
            assert!(
                s.is_client_error() && (r.get("errors").is_some() || r.get("message").is_some()),
                "{}: {body}: {s} {r}",
                t.name
            );
        }
        // Nothing was written, dropped or created.
        assert_eq!(canary_rows(&api, t).await, json!([{"id": 1}]), "{}", t.name);
        let (s, r) = sqllab(&api, t.ro, "SELECT * FROM evil").await;
        assert_ne!(s, StatusCode::OK, "{}: a table was created: {r}", t.name);
    }
    eprintln!(
        "hostile SQL refused alike on: {}",
        targets
            .iter()
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(", ")
    );
}
