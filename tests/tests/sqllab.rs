//! SQL Lab end to end: the real binary against a real PostgreSQL analytics database. Scripts,
//! types, limits, DML refusal (by parsing and by the database's read-only transaction), the
//! function deny-list, timeouts and stops that cancel the statement inside PostgreSQL,
//! asynchronous runs with polling and stored results, CSV export, formatting, cost estimates,
//! the per-user query history and saved queries.

use std::time::{Duration, Instant};

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, both_backends, pg};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Runs SQL synchronously on `db`.
async fn run(api: &Api, db: i64, sql: &str) -> (StatusCode, Value) {
    api.post(
        "/api/v1/sqllab/execute/",
        json!({"database_id": db, "sql": sql, "runAsync": false}),
    )
    .await
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A fresh analytics database; returns its URL and a connection to it.
async fn analytics() -> (String, tokio_postgres::Client) {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE public.sales (id serial PRIMARY KEY, region text NOT NULL, \
             amount numeric(10,2), sold_at timestamp, active boolean); \
             INSERT INTO public.sales (region, amount, sold_at, active) VALUES \
             ('north', 10.5, '2024-01-01 10:00', true), ('south', 20, '2024-02-01', false); \
             CREATE TABLE public.log (x int); \
             CREATE SEQUENCE public.seq;",
        )
        .await
        .unwrap();
    (url, client)
}

async fn add_database(api: &Api, name: &str, url: &str, extra: Value) -> i64 {
    let mut body = json!({"database_name": name, "sqlalchemy_uri": url, "expose_in_sqllab": true});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let (s, db) = api.post("/api/v1/database/", body).await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    db["id"].as_i64().unwrap()
}

/// Statements of the analytics database still running whose text contains `marker`.
async fn active(client: &tokio_postgres::Client, marker: &str) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' \
             AND pid <> pg_backend_pid() AND query LIKE '%' || $1 || '%'",
            &[&marker],
        )
        .await
        .unwrap()
        .get(0)
}

/// Waits up to `within` for `cond`; returns whether it became true.
async fn eventually<F, Fut>(within: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + within;
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn error_type(body: &Value) -> &str {
    body["errors"][0]["error_type"].as_str().unwrap_or("")
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[tokio::test]
async fn sqllab_runs_scripts_like_superset() {
    let (url, pgc) = analytics().await;
    let server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .env("LITESET_DISALLOWED_FUNCTIONS", "version")
        .env("LITESET_QUERY__SQLLAB_TIMEOUT_SECS", "1")
        .env("LITESET_QUERY__DISPLAY_MAX_ROW", "50")
        .start()
        .await
        .unwrap();
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let ro = add_database(
        &api,
        "ro",
        &url,
        json!({"allow_run_async": true, "extra": "{\"cost_estimate_enabled\": true}"}),
    )
    .await;
    let rw = add_database(&api, "rw", &url, json!({"allow_dml": true})).await;

    // Types, columns and Query.to_dict.
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute",
            json!({"database_id": ro, "client_id": "typed01", "tab": "Untitled Query 1",
                   "sql_editor_id": "7", "schema": "public", "queryLimit": 1000,
                   "sql": "SELECT 1 AS i, 2::bigint AS b, 1.5::numeric(10,2) AS n, 'x'::text AS t, \
                           TIMESTAMP '2024-01-02 03:04:05' AS ts, DATE '2024-01-02' AS d, true AS flag"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["status"], "success");
    assert_eq!(
        r["data"],
        json!([{"i": 1, "b": 2, "n": 1.5, "t": "x", "ts": "2024-01-02T03:04:05", "d": "2024-01-02", "flag": true}])
    );
    assert_eq!(
        r["columns"],
        json!([
            {"column_name": "i", "name": "i", "type": "INTEGER", "type_generic": 0, "is_dttm": false},
            {"column_name": "b", "name": "b", "type": "LONGINTEGER", "type_generic": 0, "is_dttm": false},
            {"column_name": "n", "name": "n", "type": "DECIMAL", "type_generic": 0, "is_dttm": false},
            {"column_name": "t", "name": "t", "type": "UNICODE", "type_generic": 1, "is_dttm": false},
            {"column_name": "ts", "name": "ts", "type": "DATETIME", "type_generic": 2, "is_dttm": true},
            {"column_name": "d", "name": "d", "type": "DATE", "type_generic": 2, "is_dttm": true},
            {"column_name": "flag", "name": "flag", "type": "BOOLEAN", "type_generic": 3, "is_dttm": false},
        ])
    );
    assert_eq!(r["selected_columns"], r["columns"]);
    assert_eq!(r["expanded_columns"], json!([]));
    assert!(r.get("displayLimitReached").is_none());
    let q = &r["query"];
    assert_eq!(q["id"], "typed01");
    assert_eq!(q["queryId"], r["query_id"]);
    assert_eq!(q["serverId"], r["query_id"]);
    assert_eq!(q["state"], "success");
    assert_eq!(q["dbId"], ro);
    assert_eq!(q["db"], "ro");
    assert_eq!(q["rows"], 1);
    assert_eq!(q["limit"], 1000);
    assert_eq!(q["limitingFactor"], "NOT_LIMITED");
    assert_eq!(q["progress"], 100);
    assert_eq!(q["tab"], "Untitled Query 1");
    assert_eq!(q["sqlEditorId"], "7");
    assert_eq!(q["schema"], "public");
    assert_eq!(q["ctas"], false);
    assert_eq!(q["user"], "Superset Admin");
    assert!(
        q["executedSql"].as_str().unwrap().ends_with("LIMIT 1001"),
        "{q}"
    );
    assert!(q["startDttm"].as_f64().unwrap() <= q["endDttm"].as_f64().unwrap());
    assert!(q["resultsKey"].is_string());

    // Limits: the dropdown, the query's own smaller limit, not limited.
    let series = "SELECT g AS n FROM generate_series(1, 100) g";
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "sql": series, "queryLimit": 10}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"].as_array().unwrap().len(), 10);
    assert_eq!(r["data"][9], json!({"n": 10}));
    assert_eq!(r["query"]["limitingFactor"], "DROPDOWN");
    assert_eq!(r["query"]["limit"], 10);
    assert_eq!(r["query"]["rows"], 10);
    assert_eq!(
        r["query"]["executedSql"],
        "SELECT g AS n FROM generate_series(1, 100) g\nLIMIT 11"
    );
    assert_eq!(r["query"]["id"].as_str().unwrap().len(), 10);
    let (_, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "sql": format!("{series} LIMIT 5"), "queryLimit": 10}),
        )
        .await;
    assert_eq!(r["data"].as_array().unwrap().len(), 5);
    assert_eq!(r["query"]["limitingFactor"], "QUERY");
    assert_eq!(r["query"]["limit"], 5);
    let (_, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "sql": "SELECT g AS n FROM generate_series(1, 3) g", "queryLimit": 10}),
        )
        .await;
    assert_eq!(r["data"].as_array().unwrap().len(), 3);
    assert_eq!(r["query"]["limitingFactor"], "NOT_LIMITED");

    // The display limit cuts `data`, not `rows`.
    let (s, r) = run(&api, ro, "SELECT g AS n FROM generate_series(1, 80) g").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"].as_array().unwrap().len(), 50);
    assert_eq!(r["displayLimitReached"], true);
    assert_eq!(r["query"]["rows"], 80);

    // Scripts run in order and answer with the last statement's rows.
    let (s, r) = run(&api, ro, "SELECT 1 AS a; SELECT 2 AS b;").await;
    assert_eq!((s, r["data"].clone()), (StatusCode::OK, json!([{"b": 2}])));

    // DML and DDL are refused without allow_dml, whether spelled out or hidden in a CTE.
    for sql in [
        "DELETE FROM sales",
        "CREATE TABLE made_here (a int)",
        "WITH d AS (DELETE FROM sales RETURNING *) SELECT * FROM d",
        "SELECT 1; UPDATE sales SET amount = 0",
    ] {
        let (s, r) = run(&api, ro, sql).await;
        assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{sql}: {r}");
        assert_eq!(error_type(&r), "DML_NOT_ALLOWED_ERROR", "{sql}: {r}");
        assert_eq!(
            r["errors"][0]["message"],
            "Only SELECT statements are allowed against this database."
        );
        assert_eq!(r["errors"][0]["extra"]["issue_codes"][0]["code"], 1022);
    }
    // A write the parser cannot see is refused by PostgreSQL's read-only transaction.
    let (s, r) = run(&api, ro, "SELECT nextval('seq') AS v").await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{r}");
    assert_eq!(error_type(&r), "DML_NOT_ALLOWED_ERROR", "{r}");
    let called: bool = pgc
        .query_one("SELECT is_called FROM public.seq", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!called, "nextval ran on a read-only database");
    let n: i64 = pgc
        .query_one("SELECT count(*) FROM public.sales", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    // With allow_dml they run, and a script sees its own writes.
    let (s, r) = run(
        &api,
        rw,
        "INSERT INTO log VALUES (1), (2); CREATE TABLE made_here (a int); \
             SELECT count(*) AS n FROM log",
    )
    .await;
    assert_eq!(
        (s, r["data"].clone()),
        (StatusCode::OK, json!([{"n": 2}])),
        "{r}"
    );
    let (s, r) = run(&api, rw, "DROP TABLE made_here").await;
    assert_eq!((s, r["data"].clone()), (StatusCode::OK, json!([])), "{r}");

    // The deny-list is the configured one: version refused, pg_sleep allowed.
    let (s, r) = run(&api, ro, "SELECT version()").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(error_type(&r), "INVALID_SQL_ERROR");
    assert_eq!(
        r["errors"][0]["message"],
        "SQL contains disallowed function(s): version"
    );
    let (s, r) = run(&api, ro, "SELECT pg_sleep(0.1) IS NULL AS slept").await;
    assert_eq!(
        (s, r["data"].clone()),
        (StatusCode::OK, json!([{"slept": false}])),
        "{r}"
    );

    // The database's syntax error, SIP-40 with its engine.
    let (s, r) = run(&api, ro, "SELEC 1").await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{r}");
    assert_eq!(error_type(&r), "SYNTAX_ERROR");
    assert_eq!(r["errors"][0]["extra"]["engine_name"], "PostgreSQL");
    assert_eq!(r["errors"][0]["extra"]["issue_codes"][0]["code"], 1030);
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("\"SELEC\""),
        "{r}"
    );
    let (s, r) = run(&api, ro, "SELECT nope FROM sales").await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{r}");
    assert_eq!(r["errors"][0]["level"], "error");

    // SQLLAB_TIMEOUT: 408, and the statement no longer runs in PostgreSQL.
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "client_id": "slow01", "sql": "SELECT pg_sleep(5) AS marker_timeout"}),
        )
        .await;
    assert_eq!(s, StatusCode::REQUEST_TIMEOUT, "{r}");
    assert_eq!(error_type(&r), "SQLLAB_TIMEOUT_ERROR");
    assert_eq!(
        r["errors"][0]["message"],
        "The query exceeded the 1 seconds timeout."
    );
    assert!(
        eventually(Duration::from_secs(1), || async {
            active(&pgc, "marker_timeout").await == 0
        })
        .await,
        "the timed-out statement still runs"
    );
    let (_, list) = api
        .get("/api/v1/query/?q=(filters:!((col:status,opr:eq,value:timed_out)))")
        .await;
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(list["result"][0]["client_id"], "slow01");
    assert_eq!(
        list["result"][0]["error_message"],
        "The query exceeded the 1 seconds timeout."
    );

    // Asynchronous: 202, poll updated_since, fetch the stored results.
    let since = now_ms() - 1;
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "client_id": "async01", "runAsync": true,
                   "sql": "SELECT g AS n FROM generate_series(1, 3) g"}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{r}");
    assert_eq!(r["query"]["id"], "async01");
    assert!(
        ["pending", "running", "success"].contains(&r["query"]["state"].as_str().unwrap()),
        "{r}"
    );
    let mut done = Value::Null;
    let until = Instant::now() + Duration::from_secs(10);
    while done.is_null() && Instant::now() < until {
        let (_, u) = api
            .get(&format!(
                "/api/v1/query/updated_since?q=(last_updated_ms:{since})"
            ))
            .await;
        if let Some(q) = u["result"].as_array().and_then(|a| {
            a.iter()
                .find(|q| q["id"] == "async01" && q["state"] == "success")
        }) {
            done = q.clone();
        } else {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let polled = !done.is_null();
    assert!(polled, "async query never succeeded");
    assert_eq!(done["rows"], 3);
    let key = done["resultsKey"].as_str().unwrap().to_owned();
    let (s, res) = api
        .get(&format!("/api/v1/sqllab/results/?q=(key:'{key}')"))
        .await;
    assert_eq!(s, StatusCode::OK, "{res}");
    assert_eq!(res["status"], "success");
    assert_eq!(res["data"], json!([{"n": 1}, {"n": 2}, {"n": 3}]));
    assert_eq!(res["query"]["id"], "async01");
    let (_, res) = api
        .get(&format!("/api/v1/sqllab/results/?q=(key:'{key}',rows:2)"))
        .await;
    assert_eq!(res["data"], json!([{"n": 1}, {"n": 2}]));
    assert_eq!(res["displayLimitReached"], true);
    let (s, _) = api
        .get("/api/v1/sqllab/results/?q=(key:'no-such-key')")
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Stop: the running statement is cancelled inside PostgreSQL.
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "client_id": "stop01", "runAsync": true,
                   "sql": "SELECT pg_sleep(30) AS marker_stop"}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{r}");
    let query_id = r["query"]["queryId"].as_i64().unwrap();
    assert!(
        eventually(Duration::from_secs(5), || async {
            active(&pgc, "marker_stop").await == 1
        })
        .await,
        "the async statement never started"
    );
    let (_, q) = api.get(&format!("/api/v1/query/{query_id}")).await;
    assert_eq!(q["result"]["status"], "running", "{q}");
    let (s, r) = api
        .post("/api/v1/query/stop", json!({"client_id": "stop01"}))
        .await;
    assert_eq!((s, r), (StatusCode::OK, json!({"result": "OK"})));
    assert!(
        eventually(Duration::from_secs(1), || async {
            active(&pgc, "marker_stop").await == 0
        })
        .await,
        "the stopped statement still runs"
    );
    let (_, q) = api.get(&format!("/api/v1/query/{query_id}")).await;
    assert_eq!(q["result"]["status"], "stopped", "{q}");
    let (s, _) = api
        .post("/api/v1/query/stop/", json!({"client_id": "nosuchquery"}))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // Stopping a finished query changes nothing.
    let (s, _) = api
        .post("/api/v1/query/stop", json!({"client_id": "async01"}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let (_, q) = api
        .get("/api/v1/query/?q=(filters:!((col:status,opr:eq,value:success)),page_size:100)")
        .await;
    assert!(
        q["result"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["client_id"] == "async01"),
        "{q}"
    );

    // CSV export of a query's results.
    let (s, _) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "client_id": "csv01", "tab": "My Tab!",
                   "sql": "SELECT 1 AS a, 'x,y' AS b, 1.5::float8 AS f UNION ALL SELECT 2, NULL, 2.0"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let resp = api
        .request(Method::GET, "/api/v1/sqllab/export/csv01/")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/csv; charset=utf-8"
    );
    let disposition = resp.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.starts_with("attachment; filename=sqllab_my_tab_")
            && disposition.ends_with(".csv"),
        "{disposition}"
    );
    assert_eq!(resp.text().await.unwrap(), "a,b,f\n1,\"x,y\",1.5\n2,,2.0\n");
    let (s, _) = api.get("/api/v1/sqllab/export/nosuchquery/").await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Format.
    let (s, r) = api
        .post(
            "/api/v1/sqllab/format_sql/",
            json!({"sql": "select a, b from t where a = 1", "engine": "postgresql"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"], "SELECT\n  a,\n  b\nFROM\n  t\nWHERE\n  a = 1");
    let (s, r) = api
        .post("/api/v1/sqllab/format_sql/", json!({"sql": "select (("}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");

    // Cost estimate (PostgreSQL's planner, never executed).
    let (s, r) = api
        .post(
            "/api/v1/sqllab/estimate/",
            json!({"database_id": ro, "sql": "SELECT * FROM sales; DELETE FROM sales"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let costs = r["result"].as_array().unwrap();
    assert_eq!(costs.len(), 2);
    assert_eq!(costs[0]["Start-up cost"], "0.0");
    assert!(
        costs[0]["Total cost"]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            > 0.0
    );
    let n: i64 = pgc
        .query_one("SELECT count(*) FROM public.sales", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2, "the estimate ran the DELETE");
    let (s, r) = api
        .post(
            "/api/v1/sqllab/estimate/",
            json!({"database_id": rw, "sql": "SELECT 1"}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");

    // Hostile and unsupported input: 4xx, never a crash.
    let deep = format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (
            json!({"database_id": ro, "sql": "SELECT 1\u{0}; DROP TABLE sales"}),
            StatusCode::BAD_REQUEST,
            "",
        ),
        (
            json!({"database_id": ro, "sql": deep}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "INVALID_SQL_ERROR",
        ),
        (
            json!({"database_id": 987_654, "sql": "SELECT 1"}),
            StatusCode::NOT_FOUND,
            "DATABASE_NOT_FOUND_ERROR",
        ),
        (
            json!({"database_id": ro, "sql": "SELECT 1", "client_id": "123456789012"}),
            StatusCode::BAD_REQUEST,
            "",
        ),
        (
            json!({"database_id": ro, "sql": "SELECT 1", "client_id": "typed01"}),
            StatusCode::BAD_REQUEST,
            "",
        ),
        (
            json!({"database_id": ro, "sql": "SELECT 1", "templateParams": "{\"a\": "}),
            StatusCode::BAD_REQUEST,
            "",
        ),
        (
            json!({"database_id": ro, "sql": "SELECT '{{ a }}'"}),
            StatusCode::BAD_REQUEST,
            "INVALID_TEMPLATE_PARAMS_ERROR",
        ),
        (
            json!({"database_id": ro, "sql": "SELECT 1", "select_as_cta": true, "tmp_table_name": "t2"}),
            StatusCode::BAD_REQUEST,
            "INVALID_CTAS_QUERY_ERROR",
        ),
        (
            json!({"database_id": rw, "sql": "BEGIN; DELETE FROM log; COMMIT"}),
            StatusCode::BAD_REQUEST,
            "INVALID_SQL_ERROR",
        ),
        (json!({"sql": "SELECT 1"}), StatusCode::BAD_REQUEST, ""),
        (
            json!({"database_id": "x", "sql": "SELECT 1"}),
            StatusCode::BAD_REQUEST,
            "",
        ),
    ];
    for (body, status, kind) in cases {
        let (s, r) = api.post("/api/v1/sqllab/execute/", body.clone()).await;
        let shown: String = body.to_string().chars().take(120).collect();
        assert_eq!(s, status, "{shown}: {r}");
        if !kind.is_empty() {
            assert_eq!(error_type(&r), kind, "{shown}: {r}");
        }
    }
    let huge = format!("SELECT 1 AS x{}", " ".repeat(4_000_000));
    let (s, r) = run(&api, ro, &huge).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let (s, _) = api
        .request(Method::POST, "/api/v1/sqllab/execute/")
        .body("not json")
        .header("content-type", "application/json")
        .send()
        .await
        .map(|r| (r.status(), ()))
        .unwrap();
    assert_eq!(s, StatusCode::BAD_REQUEST);

    // The bootstrap lists the databases and the user's recent queries.
    let (s, b) = api.get("/api/v1/sqllab/").await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let dbs = &b["result"]["databases"];
    assert_eq!(dbs[ro.to_string()]["database_name"], "ro");
    assert_eq!(dbs[ro.to_string()]["allow_run_async"], true);
    assert_eq!(dbs[rw.to_string()]["allow_dml"], true);
    assert_eq!(dbs[rw.to_string()]["backend"], "postgresql");
    assert_eq!(b["result"]["queries"]["async01"]["state"], "success");
    assert_eq!(b["result"]["active_tab"], Value::Null);
    assert_eq!(b["result"]["tab_state_ids"], json!([]));

    assert!(
        !server.logs().contains("panicked"),
        "a handler panicked:\n{}",
        server.logs()
    );
}

#[tokio::test]
async fn pg_sleep_is_refused_by_default() {
    let (url, _pgc) = analytics().await;
    let server = TestServer::builder().start().await.unwrap();
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = add_database(&api, "wh", &url, json!({})).await;
    let (s, r) = run(&api, db, "SELECT pg_sleep(1)").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(error_type(&r), "INVALID_SQL_ERROR");
    assert_eq!(
        r["errors"][0]["message"],
        "SQL contains disallowed function(s): pg_sleep"
    );
    // Even inside SQL the parser cannot read, and schema-qualified.
    let (s, r) = run(&api, db, "SELEC pg_catalog.pg_sleep(1)").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    // Refused queries are in the history, failed.
    let (_, list) = api
        .get("/api/v1/query/?q=(filters:!((col:status,opr:eq,value:failed)))")
        .await;
    assert_eq!(list["count"], 2, "{list}");
}

/// Creates `name` with the Gamma and sql_lab roles plus `database_access` on `db`.
async fn sql_lab_user(admin: &Api, name: &str, db_name: &str, db: i64) -> i64 {
    let role_name = format!("{name}_db");
    let (s, role) = admin
        .post("/api/v1/security/roles/", json!({"name": role_name}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{role}");
    let role_id = role["id"].as_i64().unwrap();
    let view = format!("[{db_name}].(id:{db})");
    let q = format!(
        "(filters:!((col:view_menu.name,opr:eq,value:'{view}'),(col:permission.name,opr:eq,value:database_access)))"
    );
    let (_, pvs) = admin
        .get(&format!(
            "/api/v1/security/permissions-resources/?q={}",
            urlencode(&q)
        ))
        .await;
    assert_eq!(pvs["count"], 1, "{pvs}");
    let pv = pvs["result"][0]["id"].as_i64().unwrap();
    let (s, r) = admin
        .post(
            &format!("/api/v1/security/roles/{role_id}/permissions"),
            json!({"permission_view_menu_ids": [pv]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let mut roles = vec![role_id];
    for builtin in ["Gamma", "sql_lab"] {
        let (_, found) = admin
            .get(&format!(
                "/api/v1/security/roles/?q=(filters:!((col:name,opr:eq,value:{builtin})))"
            ))
            .await;
        roles.push(found["result"][0]["id"].as_i64().unwrap());
    }
    let (s, user) = admin
        .post(
            "/api/v1/security/users/",
            json!({"username": name, "first_name": "Sam", "last_name": "Lab",
                   "email": format!("{name}@example.com"), "password": "sam-pass-123",
                   "roles": roles, "active": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{user}");
    user["id"].as_i64().unwrap()
}

both_backends! {
    async fn history_and_saved_queries_are_per_user(meta: Metadata) {
        let (url, _pgc) = analytics().await;
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let wh = add_database(&admin, "wh", &url, json!({"allow_run_async": true})).await;
        let other = add_database(&admin, "other", &url, json!({})).await;
        sql_lab_user(&admin, "sam", "wh", wh).await;
        let sam = Api::login(&server, "sam", "sam-pass-123").await;

        let (s, r) = admin
            .post("/api/v1/sqllab/execute/", json!({"database_id": wh, "client_id": "adm1", "sql": "SELECT region FROM sales ORDER BY id", "tab": "t1"}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["data"], json!([{"region": "north"}, {"region": "south"}]));
        let admin_query = r["query_id"].as_i64().unwrap();
        let (s, r) = sam
            .post("/api/v1/sqllab/execute/", json!({"database_id": wh, "client_id": "sam1", "sql": "SELECT count(*) AS n FROM sales"}))
            .await;
        assert_eq!((s, r["data"].clone()), (StatusCode::OK, json!([{"n": 2}])), "{r}");
        // Async on either metadata backend.
        let (s, r) = sam
            .post("/api/v1/sqllab/execute/", json!({"database_id": wh, "client_id": "sam2", "runAsync": true, "sql": "SELECT 42 AS answer"}))
            .await;
        assert_eq!(s, StatusCode::ACCEPTED, "{r}");
        let sam2 = r["query"]["queryId"].as_i64().unwrap();
        let ok = eventually(Duration::from_secs(10), || async {
            sam.get(&format!("/api/v1/query/{sam2}")).await.1["result"]["status"] == "success"
        })
        .await;
        assert!(ok, "sam's async query never finished");
        let (_, q) = sam.get(&format!("/api/v1/query/{sam2}")).await;
        let key = q["result"]["results_key"].as_str().unwrap().to_owned();
        let (s, res) = sam.get(&format!("/api/v1/sqllab/results/?q=(key:'{key}')")).await;
        assert_eq!((s, res["data"].clone()), (StatusCode::OK, json!([{"answer": 42}])), "{res}");
        // Someone else's results, export, stop and rows are out of reach.
        let (s, r) = admin.get(&format!("/api/v1/query/{admin_query}")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let admin_key = r["result"]["results_key"].as_str().unwrap().to_owned();
        let (s, r) = sam.get(&format!("/api/v1/sqllab/results/?q=(key:'{admin_key}')")).await;
        assert_eq!((s, error_type(&r)), (StatusCode::FORBIDDEN, "QUERY_SECURITY_ACCESS_ERROR"), "{r}");
        let (s, r) = sam.get("/api/v1/sqllab/export/adm1/").await;
        assert_eq!((s, error_type(&r)), (StatusCode::FORBIDDEN, "QUERY_SECURITY_ACCESS_ERROR"), "{r}");
        let (s, _) = sam.post("/api/v1/query/stop", json!({"client_id": "adm1"})).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (s, _) = sam.get(&format!("/api/v1/query/{admin_query}")).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        // A database sam was not granted.
        let (s, r) = run(&sam, other, "SELECT 1").await;
        assert_eq!((s, error_type(&r)), (StatusCode::FORBIDDEN, "DATABASE_SECURITY_ACCESS_ERROR"), "{r}");

        // The history: each user their own, admins everyone's.
        let (s, mine) = sam.get("/api/v1/query/").await;
        assert_eq!(s, StatusCode::OK, "{mine}");
        assert_eq!(mine["count"], 2, "{mine}");
        let first = &mine["result"][0];
        assert_eq!(first["client_id"], "sam2");
        assert_eq!(first["user"]["first_name"], "Sam");
        assert_eq!(first["database"], json!({"id": wh, "database_name": "wh"}));
        assert_eq!(first["sql_tables"], json!([]));
        assert_eq!(mine["result"][1]["sql_tables"], json!(["sales"]));
        let (_, all) = admin.get("/api/v1/query/?q=(order_column:changed_on,order_direction:asc)").await;
        assert_eq!(all["count"], 3, "{all}");
        assert_eq!(all["result"][0]["client_id"], "adm1");
        let (_, statuses) = sam.get("/api/v1/query/distinct/status").await;
        assert_eq!(statuses, json!({"count": 1, "result": [{"text": "success", "value": "success"}]}));
        let (s, info) = sam.get("/api/v1/query/_info?q=(keys:!(permissions))").await;
        assert_eq!((s, info["permissions"].clone()), (StatusCode::OK, json!(["can_read"])));
        let (s, rel) = admin.get("/api/v1/query/related/database").await;
        assert_eq!(s, StatusCode::OK, "{rel}");
        assert_eq!(rel["count"], 2);
        let (s, _) = admin.get("/api/v1/query/?q=(order_column:password)").await;
        assert_eq!(s, StatusCode::BAD_REQUEST);

        // Saved queries: full CRUD, each user sees their own.
        let (s, r) = sam
            .post("/api/v1/saved_query/", json!({"db_id": wh, "label": "regions", "description": "by region", "schema": "public", "sql": "SELECT region FROM sales", "template_parameters": "", "extra_json": "{}"}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let saved = r["id"].as_i64().unwrap();
        assert_eq!(r["result"]["label"], "regions");
        let (s, r) = sam.get(&format!("/api/v1/saved_query/{saved}")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"]["label"], "regions");
        assert_eq!(r["result"]["database"], json!({"id": wh, "database_name": "wh"}));
        assert_eq!(r["result"]["sql_tables"], json!(["sales"]));
        assert_eq!(r["result"]["created_by"]["first_name"], "Sam");
        let (s, r) = sam.put(&format!("/api/v1/saved_query/{saved}"), json!({"label": "regions v2"})).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let (_, list) = sam.get("/api/v1/saved_query/?q=(filters:!((col:label,opr:all_text,value:v2)))").await;
        assert_eq!(list["count"], 1, "{list}");
        assert_eq!(list["result"][0]["label"], "regions v2");
        assert_eq!(list["result"][0]["db_id"], wh);
        assert_eq!(list["result"][0]["database"]["database_name"], "wh");
        let (_, distinct) = sam.get("/api/v1/saved_query/distinct/schema").await;
        assert_eq!(distinct, json!({"count": 1, "result": [{"text": "public", "value": "public"}]}));
        let (s, info) = sam.get("/api/v1/saved_query/_info?q=(keys:!(add_columns))").await;
        assert_eq!(s, StatusCode::OK);
        let names: Vec<&str> = info["add_columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["db_id", "label", "description", "catalog", "schema", "sql", "template_parameters", "extra_json"]);
        let (s, r) = sam.post("/api/v1/saved_query/", json!({"label": "no db"})).await;
        assert_eq!((s, r), (StatusCode::BAD_REQUEST, json!({"message": {"db_id": ["Missing data for required field."]}})));
        let (s, r) = sam.post("/api/v1/saved_query/", json!({"db_id": 987_654, "label": "bad db"})).await;
        assert_eq!((s, r), (StatusCode::UNPROCESSABLE_ENTITY, json!({"message": {"db_id": ["Database does not exist"]}})));

        let (s, r) = admin.post("/api/v1/saved_query/", json!({"db_id": wh, "label": "admin's", "sql": "SELECT 1"})).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let admins = r["id"].as_i64().unwrap();
        let (_, list) = sam.get("/api/v1/saved_query/").await;
        assert_eq!(list["count"], 1, "{list}");
        let (s, _) = sam.get(&format!("/api/v1/saved_query/{admins}")).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (s, _) = sam.put(&format!("/api/v1/saved_query/{admins}"), json!({"label": "mine now"})).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (s, _) = sam.delete(&format!("/api/v1/saved_query/?q=!({admins})")).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (_, list) = admin.get("/api/v1/saved_query/").await;
        assert_eq!(list["count"], 2, "{list}");

        let (s, r) = sam.delete(&format!("/api/v1/saved_query/{saved}")).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"message": "OK"})));
        let (s, r) = admin.delete(&format!("/api/v1/saved_query/?q=!({admins})")).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"message": "Deleted 1 saved query"})));
        let (_, list) = admin.get("/api/v1/saved_query/").await;
        assert_eq!(list["count"], 0);
    }
}

/// Statements the MariaDB test server runs whose text contains `marker` (seen as the admin
/// user, through the engine layer).
async fn mysql_active(engines: &liteset::engines::Engines, admin_url: &str, marker: &str) -> i64 {
    let spec = liteset::engines::ConnectionSpec {
        database_id: 1,
        uri: liteset::uri::ConnectionUri::parse(admin_url).unwrap(),
        revision: "1".into(),
        options: None,
        server_cert: None,
    };
    let rs = engines
        .execute(
            &spec,
            &format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO LIKE '%{marker}%' AND ID <> CONNECTION_ID()"
            ),
            liteset::engines::ExecOptions {
                read_only: true,
                max_rows: 10,
            },
        )
        .await
        .unwrap();
    match rs.rows[0][0] {
        liteset::engines::Cell::Int(n) => n,
        ref other => panic!("{other:?}"),
    }
}

fn num(v: &Value) -> f64 {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(f64::NAN)
}

#[tokio::test]
async fn mysql_sqllab_datasets_charts_and_stop() {
    let Some(my) = liteset_tests::mariadb::mariadb() else {
        return;
    };
    let server = TestServer::builder()
        // SLEEP stands in for a slow query: allow it; MySQL's always-refused list stays.
        .env("LITESET_DISALLOWED_FUNCTIONS", "version")
        .start()
        .await
        .unwrap();
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let rw = add_database(&api, "my_rw", &my.admin_url, json!({"allow_dml": true})).await;
    for sql in [
        "DROP TABLE IF EXISTS http_sales",
        "CREATE TABLE http_sales (id INT AUTO_INCREMENT PRIMARY KEY, region VARCHAR(20) NOT NULL, \
         amount DECIMAL(10,2), sold_at DATETIME, active TINYINT(1))",
        "INSERT INTO http_sales (region, amount, sold_at, active) VALUES \
         ('north', 10.5, '2024-01-01 10:00:00', 1), ('south', 20, '2024-02-01 00:00:00', 0), \
         ('east', 5, '2024-01-15 12:00:00', 1), ('north', 1.5, '2024-02-03 08:00:00', 0)",
    ] {
        let (s, r) = run(&api, rw, sql).await;
        assert_eq!(s, StatusCode::OK, "{sql}: {r}");
    }
    let ro = add_database(
        &api,
        "my_ro",
        &my.reader_url,
        json!({"allow_run_async": true}),
    )
    .await;

    // The connection test and the catalog through the API.
    let (s, r) = api
        .post(
            "/api/v1/database/test_connection/",
            json!({"sqlalchemy_uri": my.reader_url, "database_name": "t"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let (s, r) = api.get(&format!("/api/v1/database/{ro}/schemas/")).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"], json!(["liteset_test"]));

    // SQL Lab.
    let (s, r) = run(
        &api,
        ro,
        "SELECT region, SUM(amount) AS total, MIN(sold_at) AS first_sale \
         FROM http_sales GROUP BY region ORDER BY region",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let data = r["data"].as_array().unwrap();
    let got: Vec<(&str, f64)> = data
        .iter()
        .map(|row| (row["region"].as_str().unwrap(), num(&row["total"])))
        .collect();
    assert_eq!(got, vec![("east", 5.0), ("north", 12.0), ("south", 20.0)]);
    // Writes are refused on the read-only database, by parsing and by the server.
    for sql in [
        "DELETE FROM http_sales",
        "SELECT * FROM http_sales INTO OUTFILE '/tmp/x'",
        "SET @a = 1",
        "LOAD DATA INFILE '/etc/passwd' INTO TABLE http_sales",
        "load data local infile '/etc/passwd' into table http_sales",
        "SELECT 1 INTO @a",
        "DO SLEEP(0)",
        "HANDLER http_sales OPEN",
        "CALL mysql.nothing()",
    ] {
        // Refused with Superset's answers: DML as a failed synchronous execution (500, as
        // Superset), anything else that is not a query as invalid SQL (4xx).
        let (s, r) = run(&api, ro, sql).await;
        match error_type(&r) {
            "DML_NOT_ALLOWED_ERROR" => assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{sql}"),
            "INVALID_SQL_ERROR" => assert!(s.is_client_error(), "{sql}: {s} {r}"),
            other => panic!("{sql}: {other}: {s} {r}"),
        }
    }
    // An account with the FILE privilege on a read-only database: a READ ONLY transaction does
    // not stop a file write, so SQL Lab refuses the clause before the server sees it.
    let filer = add_database(&api, "my_filer", &my.file_url, json!({})).await;
    if let Some(dir) = &my.files_dir {
        for (i, into) in ["INTO OUTFILE", "into  dumpfile", "INTO /* x */ OUTFILE"]
            .iter()
            .enumerate()
        {
            let path = format!("{dir}/sqllab-{i}.txt");
            let sql = format!("SELECT region FROM http_sales {into} '{path}'");
            let (s, r) = run(&api, filer, &sql).await;
            assert_eq!(
                (s, error_type(&r)),
                (StatusCode::INTERNAL_SERVER_ERROR, "DML_NOT_ALLOWED_ERROR"),
                "{sql}: {r}"
            );
            assert!(!std::path::Path::new(&path).exists(), "{sql} wrote {path}");
        }
    }

    // A dataset on the table and chart data with a time grain, filters, order and limit.
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": ro, "schema": "liteset_test", "table_name": "http_sales"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let ds = ds["id"].as_i64().unwrap();
    let total = json!({"expressionType": "SIMPLE", "column": {"column_name": "amount"},
                       "aggregate": "SUM", "label": "total"});
    let (s, body) = api
        .post(
            "/api/v1/chart/data",
            json!({"datasource": {"id": ds, "type": "table"},
                   "queries": [{"columns": [{"columnType": "BASE_AXIS", "sqlExpression": "sold_at",
                                             "label": "sold_at", "timeGrain": "P1M",
                                             "expressionType": "SQL"}, "region"],
                                "metrics": [total],
                                "filters": [{"col": "region", "op": "IN", "val": ["north", "east"]},
                                            {"col": "region", "op": "ILIKE", "val": "%OR%"}],
                                "orderby": [[total, false]],
                                "row_limit": 10}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let r = &body["result"][0];
    let rows: Vec<(f64, &str, f64)> = r["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                num(&row["sold_at"]),
                row["region"].as_str().unwrap(),
                num(&row["total"]),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (1_704_067_200_000.0, "north", 10.5),
            (1_706_745_600_000.0, "north", 1.5),
        ],
        "{body}"
    );
    assert!(
        r["query"].as_str().unwrap_or("").contains("`http_sales`") || r["query"].is_null(),
        "{body}"
    );

    // Hostile fragments and dataset SQL are refused before reaching the server.
    for metric in [
        "SUM(amount) /*! , LOAD_FILE('/etc/passwd') */",
        "LOAD_FILE('/etc/passwd')",
        "load_file /* x */ ('/etc/passwd')",
        "SUM(amount) --\u{a0}x, LOAD_FILE('/etc/passwd')",
        "GET_LOCK('x', 10)",
    ] {
        let (s, body) = api
            .post(
                "/api/v1/chart/data",
                json!({"datasource": {"id": ds, "type": "table"},
                       "queries": [{"columns": ["region"],
                                    "metrics": [{"expressionType": "SQL", "sqlExpression": metric,
                                                 "label": "m"}],
                                    "row_limit": 10}]}),
            )
            .await;
        assert_ne!(s, StatusCode::OK, "{metric}: {body}");
    }
    for where_ in [
        "1=1 /*!50000 ) UNION SELECT LOAD_FILE('/etc/passwd') -- */",
        "region = 'x\\') OR (1=1",
        "sys_exec('id') = 0",
    ] {
        let (s, body) = api
            .post(
                "/api/v1/chart/data",
                json!({"datasource": {"id": ds, "type": "table"},
                       "queries": [{"columns": ["region"], "metrics": [total],
                                    "extras": {"where": where_}, "row_limit": 10}]}),
            )
            .await;
        assert_ne!(s, StatusCode::OK, "{where_}: {body}");
    }
    // Dataset SQL: creating one only prepares it (never runs it); what cannot be a query is
    // refused at once, and a chart on a dataset calling a refused function is refused.
    for sql in [
        "SELECT 1 AS a INTO OUTFILE '/tmp/x'",
        "DELETE FROM http_sales",
    ] {
        let (s, body) = api
            .post(
                "/api/v1/dataset/",
                json!({"database": ro, "schema": "liteset_test", "table_name": "evil_ds",
                       "sql": sql}),
            )
            .await;
        assert_ne!(s, StatusCode::CREATED, "{sql}: {body}");
    }
    for (name, sql) in [
        ("evil_file", "SELECT LOAD_FILE('/etc/passwd') AS f"),
        (
            "evil_comment",
            "SELECT 1 AS f /*! , LOAD_FILE('/etc/passwd') */",
        ),
    ] {
        let (s, evil) = api
            .post(
                "/api/v1/dataset/",
                json!({"database": ro, "schema": "liteset_test", "table_name": name, "sql": sql}),
            )
            .await;
        if s == StatusCode::CREATED {
            let evil = evil["id"].as_i64().unwrap();
            let (s, body) = api
                .post(
                    "/api/v1/chart/data",
                    json!({"datasource": {"id": evil, "type": "table"},
                       "queries": [{"columns": ["f"], "row_limit": 10}]}),
                )
                .await;
            assert_ne!(s, StatusCode::OK, "{body}");
            assert!(!body.to_string().contains("root:x:0"), "{body}");
        }
    }
    for sql in [
        "SELECT LOAD_FILE('/etc/passwd')",
        "SELECT `LOAD_FILE`('/etc/passwd')",
        "SELECT 1 /*! , LOAD_FILE('/etc/passwd') */",
        "SELECT 1 /*M!100000 , LOAD_FILE('/etc/passwd') */",
        "SELECT 'a\\'', LOAD_FILE('/etc/passwd') -- '",
        "SELECT 1 --\u{a0}x, LOAD_FILE('/etc/passwd')\nFROM (SELECT 1 AS `\u{a0}x`) s",
        "SELECT GET_LOCK('x', 1)",
        "HANDLER http_sales OPEN",
        "LOCK TABLES http_sales READ",
        "DO 1",
        "CALL p()",
    ] {
        let (s, r) = run(&api, ro, sql).await;
        assert_ne!(s, StatusCode::OK, "{sql}: {r}");
        assert!(!r.to_string().contains("root:x:0"), "{sql}: {r}");
    }
    // Even on a DML-allowed database, the always-refused functions stay refused.
    let (s, r) = run(&api, rw, "SELECT LOAD_FILE('/etc/passwd')").await;
    assert_ne!(s, StatusCode::OK, "{r}");

    // Stop: the running statement is killed inside MariaDB.
    let engines = liteset::engines::Engines::new(
        liteset::engines::EngineOptions::default(),
        liteset::engines::ConnectionGuard::unrestricted(),
    );
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "client_id": "mystop01", "runAsync": true,
                   "sql": "SELECT SLEEP(30) AS marker_my_stop"}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{r}");
    assert!(
        eventually(Duration::from_secs(5), || async {
            mysql_active(&engines, &my.admin_url, "marker_my_stop").await == 1
        })
        .await,
        "the async statement never started"
    );
    let (s, r) = api
        .post("/api/v1/query/stop", json!({"client_id": "mystop01"}))
        .await;
    assert_eq!((s, r), (StatusCode::OK, json!({"result": "OK"})));
    assert!(
        eventually(Duration::from_secs(2), || async {
            mysql_active(&engines, &my.admin_url, "marker_my_stop").await == 0
        })
        .await,
        "the stopped statement still runs"
    );
    let (s, r) = run(&api, ro, "SELECT COUNT(*) AS n FROM http_sales").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"], json!([{"n": 4}]));
}

/// SQL Lab, chart data and stop against ClickHouse (the server tests/run starts): results,
/// read-only refusals by parsing and by the server, the always-refused table functions in
/// every spelling, and a stopped query killed inside ClickHouse.
#[tokio::test]
async fn sqllab_on_clickhouse() {
    let ch = liteset_tests::clickhouse::clickhouse().await;
    let db = ch.fresh_database().await;
    ch.exec(&format!(
        "CREATE TABLE {db}.sales (id UInt32, region String, amount Decimal(10, 2), \
         sold_at DateTime, day Date, note Nullable(String)) ENGINE = MergeTree ORDER BY id"
    ))
    .await;
    ch.exec(&format!(
        "INSERT INTO {db}.sales VALUES (1, 'north', 10.50, '2024-01-01 10:00:00', '2024-01-01', NULL), \
         (2, 'south', 20.00, '2024-02-01 00:00:00', '2024-02-01', 'it''s'), \
         (3, 'north', 5.25, '2024-02-15 12:30:00', '2024-02-15', 'x')"
    ))
    .await;
    let server = TestServer::builder().start().await.unwrap();
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let ro = add_database(
        &api,
        "ch",
        &ch.url_for("default", None, &db),
        json!({"allow_run_async": true}),
    )
    .await;
    let rw = add_database(
        &api,
        "ch_rw",
        &ch.url_for("default", None, &db),
        json!({"allow_dml": true}),
    )
    .await;

    let (s, r) = run(
        &api,
        ro,
        "SELECT region, count() AS n, sum(amount) AS total, max(sold_at) AS last, \
         any(note) AS note FROM sales WHERE region = 'north' GROUP BY region",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(
        r["data"],
        // SQL Lab's JSON spells datetimes in ISO; aggregates skip NULLs (`any` too).
        json!([{"region": "north", "n": 2, "total": 15.75,
                "last": "2024-02-15T12:30:00", "note": "x"}]),
        "{r}"
    );
    let (s, r) = run(&api, ro, "SELECT note FROM sales WHERE id = 2").await;
    assert_eq!(
        (s, r["data"].clone()),
        (StatusCode::OK, json!([{"note": "it's"}]))
    );

    // Writes are refused without allow_dml (by parsing), and by the server's readonly=1.
    for sql in [
        "INSERT INTO sales (id) VALUES (9)",
        "ALTER TABLE sales DELETE WHERE 1",
        "DROP TABLE sales",
        "SELECT 1; TRUNCATE TABLE sales",
    ] {
        let (s, r) = run(&api, ro, sql).await;
        assert_eq!(error_type(&r), "DML_NOT_ALLOWED_ERROR", "{sql}: {s} {r}");
    }
    // A query's own SETTINGS cannot lift readonly.
    let (s, r) = run(&api, ro, "SELECT 1 AS x SETTINGS readonly = 0").await;
    assert!(!s.is_success(), "{r}");
    let (s, r) = run(&api, ro, "SELECT count() AS n FROM sales").await;
    assert_eq!((s, r["data"].clone()), (StatusCode::OK, json!([{"n": 3}])));

    // Table functions that reach outside, in every spelling and position, even with DML.
    for sql in [
        "SELECT * FROM url('http://127.0.0.1:1/', CSV, 'a String')",
        "SELECT * FROM URL ('http://127.0.0.1:1/', CSV, 'a String')",
        "SELECT * FROM `file`('x.csv', CSV, 'a String')",
        "SELECT * FROM file /* c */ ('x.csv', CSV, 'a String')",
        "SELECT * FROM sales WHERE id IN (SELECT toUInt32(a) FROM remote('127.0.0.1', system.one))",
        "SELECT * FROM sales AS s JOIN url('http://127.0.0.1:1/', CSV, 'id UInt32') AS u ON s.id = u.id",
        "WITH x AS (SELECT * FROM executable('ls', TSV, 'a String')) SELECT * FROM x",
        "SELECT * FROM default.url('http://127.0.0.1:1/', CSV, 'a String')",
        "SELECT \"a\\\" AS b, \" , url('http://127.0.0.1:1/', CSV, 'a String') -- \"",
        "SELECT 1 /* /* */ , url('http://127.0.0.1:1/', CSV, 'a String') -- */",
    ] {
        for database in [ro, rw] {
            let (s, r) = run(&api, database, sql).await;
            assert!(
                s == StatusCode::BAD_REQUEST || s == StatusCode::UNPROCESSABLE_ENTITY,
                "{sql}: {s} {r}"
            );
            assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{sql}: {r}");
        }
    }
    // DML when allowed.
    let (s, r) = run(
        &api,
        rw,
        "INSERT INTO sales (id, region) VALUES (9, 'east')",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(
        ch.exec(&format!("SELECT region FROM {db}.sales WHERE id = 9"))
            .await
            .trim(),
        "east"
    );

    // Chart data on a ClickHouse table: metrics, group by, a time grain, filters, order, limit.
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": ro, "schema": db, "table_name": "sales"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let ds = ds["id"].as_i64().unwrap();
    let total = json!({"expressionType": "SIMPLE", "column": {"column_name": "amount"},
                       "aggregate": "SUM", "label": "total"});
    let (s, r) = api
        .post(
            "/api/v1/chart/data",
            json!({"datasource": {"id": ds, "type": "table"},
                   "queries": [{"columns": [{"columnType": "BASE_AXIS", "sqlExpression": "sold_at",
                                             "label": "sold_at", "expressionType": "SQL",
                                             "timeGrain": "P1M"}, "region"],
                                "metrics": ["count", total],
                                "orderby": [["sold_at", true], ["region", true]],
                                "row_limit": 10,
                                "filters": [{"col": "sold_at", "op": "TEMPORAL_RANGE",
                                             "val": "2024-01-01 : 2024-03-01"},
                                            {"col": "region", "op": "IN", "val": ["north", "south"]},
                                            {"col": "note", "op": "IS NOT NULL"}]}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(
        r["result"][0]["data"],
        // Epoch milliseconds as floats, as pandas hands them to Superset's JSON.
        json!([{"sold_at": 1_706_745_600_000.0, "region": "north", "count": 1, "total": 5.25},
               {"sold_at": 1_706_745_600_000.0, "region": "south", "count": 1, "total": 20.0}]),
        "{r}"
    );
    // Hostile chart fragments: a metric calling a table function, a WHERE leaving its
    // parentheses, SETTINGS in a fragment.
    for (metric, where_) in [
        (
            json!({"expressionType": "SQL", "sqlExpression": "(SELECT count() FROM url('http://127.0.0.1:1/', CSV, 'a String'))", "label": "m"}),
            "",
        ),
        (json!("count"), "1 = 1) OR (1 = 1"),
        (json!("count"), "1 = 1 SETTINGS readonly = 0"),
        (
            json!({"expressionType": "SQL", "sqlExpression": "count() FORMAT JSON", "label": "m"}),
            "",
        ),
    ] {
        let (s, r) = api
            .post(
                "/api/v1/chart/data",
                json!({"datasource": {"id": ds, "type": "table"},
                       "queries": [{"columns": ["region"], "metrics": [metric],
                                    "extras": {"where": where_}}]}),
            )
            .await;
        assert!(s.is_client_error(), "{metric} {where_}: {s} {r}");
    }

    // Stop: the running query is killed inside ClickHouse.
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": ro, "client_id": "chstop1", "runAsync": true,
                   "sql": format!("SELECT count() AS n_{marker} FROM system.numbers \
                                   WHERE sleepEachRow(0.000005) = 0")}),
        )
        .await;
    assert_eq!(s, StatusCode::ACCEPTED, "{r}");
    let running = || async {
        ch.exec(&format!(
            "SELECT count() FROM system.processes WHERE query LIKE '%{marker}%' \
             AND query NOT LIKE '%system.processes%'"
        ))
        .await
        .trim()
        .to_owned()
    };
    assert!(
        eventually(Duration::from_secs(5), || async { running().await == "1" }).await,
        "the async query never started: {}",
        server.logs()
    );
    let (s, r) = api
        .post("/api/v1/query/stop", json!({"client_id": "chstop1"}))
        .await;
    assert_eq!((s, r), (StatusCode::OK, json!({"result": "OK"})));
    let stopped = Instant::now();
    assert!(
        eventually(Duration::from_secs(2), || async { running().await == "0" }).await,
        "the stopped query still runs in ClickHouse"
    );
    eprintln!(
        "stopped query gone from system.processes after {:?}",
        stopped.elapsed()
    );
}
