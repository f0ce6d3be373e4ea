//! The query engine's runtime guarantees, end to end against a real PostgreSQL: single flight
//! (100 identical chart requests, one database query), cancellation inside the database when a
//! client goes away or a deadline passes, the results cache (`is_cached`, `force`,
//! `GET /chart/data/<cache_key>`, a saved chart's `GET /chart/<pk>/data/`), access control, and
//! hostile SQL fragments refused before anything reaches the database.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use liteset_tests::{ADMIN_PASSWORD, Api, TestServer, pg, status_json};

// A test crate root resolves `mod x;` beside itself, hence the path.
#[path = "query_engine/templating.rs"]
mod templating;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A fresh analytics database (UTC) with a small `people` table; returns its URL.
async fn analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE people (id int PRIMARY KEY, name text, city text, score float8); \
             INSERT INTO people VALUES (1, 'O''Brien', 'Cork', 1.5), (2, 'Ann', 'Paris', 2.5), \
             (3, 'Bob', 'Paris', NULL), (4, 'Eve', NULL, 4.0);",
        )
        .await
        .expect("fixture");
    url
}

/// Statements of this database's other sessions currently running `marker`, as
/// (pid, query_start) pairs.
async fn active(url: &str, marker: &str) -> BTreeSet<(i32, String)> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let rows = client
        .query(
            "SELECT pid, query_start::text FROM pg_stat_activity \
             WHERE state = 'active' AND pid <> pg_backend_pid() AND position($1 in query) > 0",
            &[&marker],
        )
        .await
        .expect("pg_stat_activity");
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// Waits up to `within` for no session to run `marker`; returns how long it took.
async fn gone_within(url: &str, marker: &str, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if active(url, marker).await.is_empty() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    None
}

async fn database(api: &Api, name: &str, url: &str) -> i64 {
    let (s, db) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": name, "sqlalchemy_uri": url}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    db["id"].as_i64().expect("id")
}

async fn virtual_dataset(api: &Api, db: i64, name: &str, sql: &str) -> i64 {
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db, "schema": "public", "table_name": name, "sql": sql}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    ds["id"].as_i64().expect("id")
}

fn raw_query(ds: i64, force: bool) -> Value {
    json!({
        "datasource": {"id": ds, "type": "table"},
        "force": force,
        "queries": [{"columns": ["x"], "row_limit": 10}],
    })
}

async fn server() -> TestServer {
    TestServer::builder()
        // pg_sleep stands in for a slow query: allow it, keep another function refused.
        .env("LITESET_DISALLOWED_FUNCTIONS", "version")
        .env("LITESET_QUERY__DATABASES__SLOWDB__TIMEOUT_SECS", "1")
        .start()
        .await
        .expect("server")
}

#[tokio::test]
async fn identical_concurrent_chart_queries_run_once_and_force_runs_each() {
    let url = analytics().await;
    let server = server().await;
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = database(&api, "wh", &url).await;
    let ds = virtual_dataset(&api, db, "sleepy", "SELECT 1 AS x FROM pg_sleep(0.5)").await;

    for force in [false, true] {
        // Watch the database while the burst runs: every distinct (backend, start time) seen
        // running the statement is one query.
        let watcher = {
            let url = url.clone();
            tokio::spawn(async move {
                let mut seen = BTreeSet::new();
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(8) {
                    seen.extend(active(&url, "pg_sleep(0.5)").await);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                seen
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let burst = (0..100).map(|_| {
            let req = api
                .request(reqwest::Method::POST, "/api/v1/chart/data")
                .json(&raw_query(ds, force));
            async move { status_json(req.send().await.expect("send")).await }
        });
        let answers = futures_util::future::join_all(burst).await;
        for (status, body) in &answers {
            assert_eq!(*status, StatusCode::OK, "{body}");
            assert_eq!(body["result"][0]["data"], json!([{"x": 1}]));
        }
        let queries = watcher.await.expect("watcher");
        if force {
            assert!(
                queries.len() > 1,
                "force: true must run its own queries, saw {queries:?}"
            );
        } else {
            assert_eq!(
                queries.len(),
                1,
                "one database query for 100 requests: {queries:?}"
            );
            let cached = answers
                .iter()
                .filter(|(_, b)| b["result"][0]["is_cached"] == json!(true))
                .count();
            assert!(cached < 100, "the first answer comes from the database");
        }
    }
    // A later identical request is served from the cache.
    let (_, again) = api.post("/api/v1/chart/data", raw_query(ds, false)).await;
    assert_eq!(again["result"][0]["is_cached"], json!(true), "{again}");
    assert!(again["result"][0]["cached_dttm"].is_string(), "{again}");
}

#[tokio::test]
async fn abandoned_and_overdue_queries_are_cancelled_in_the_database() {
    let url = analytics().await;
    let server = server().await;
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = database(&api, "wh", &url).await;
    let ds = virtual_dataset(&api, db, "long", "SELECT 1 AS x FROM pg_sleep(30)").await;

    // A client sends the request over its own connection and closes it after 1 s, as a
    // browser tab does (reqwest would keep its pooled connection open).
    let body = raw_query(ds, true).to_string();
    let host = api.base.trim_start_matches("http://").to_owned();
    let mut conn = tokio::net::TcpStream::connect(&host)
        .await
        .expect("connect");
    let request = format!(
        "POST /api/v1/chart/data HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        api.token,
        body.len()
    );
    tokio::io::AsyncWriteExt::write_all(&mut conn, request.as_bytes())
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        active(&url, "pg_sleep(30)").await.len(),
        1,
        "the query is running in the database"
    );
    drop(conn);
    let took = gone_within(&url, "pg_sleep(30)", Duration::from_secs(1)).await;
    assert!(
        took.is_some(),
        "abandoned query still running 1 s after the client left"
    );

    // A database whose deadline is 1 s (config `query.databases.slowdb.timeout_secs`).
    let slow = database(&api, "slowdb", &url).await;
    let ds = virtual_dataset(&api, slow, "long2", "SELECT 1 AS x FROM pg_sleep(20)").await;
    let t = Instant::now();
    let (status, body) = api.post("/api/v1/chart/data", raw_query(ds, true)).await;
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{body}");
    assert_eq!(
        body["errors"][0]["error_type"], "BACKEND_TIMEOUT_ERROR",
        "{body}"
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let took = gone_within(&url, "pg_sleep(20)", Duration::from_secs(1)).await;
    assert!(
        took.is_some(),
        "overdue query still running 1 s after its deadline"
    );
    // The server keeps serving.
    let (status, _) = api.get("/api/v1/database/").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn saved_charts_cache_keys_access_and_hostile_fragments() {
    let url = analytics().await;
    let server = server().await;
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = database(&api, "wh", &url).await;
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db, "schema": "public", "table_name": "people"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let ds = ds["id"].as_i64().expect("id");
    let by_city = json!({
        "datasource": {"id": ds, "type": "table"},
        "queries": [{"columns": ["city"], "metrics": ["count"], "orderby": [["city", true]],
                     "filters": [{"col": "name", "op": "!=", "val": "O'Brien"}]}],
        "result_type": "full",
    });

    // A saved chart answers from its query_context; the second call comes from the cache.
    let (s, chart) = api
        .post(
            "/api/v1/chart/",
            json!({"slice_name": "by city", "datasource_id": ds, "datasource_type": "table",
                   "viz_type": "table", "query_context": by_city.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{chart}");
    let chart = chart["id"].as_i64().expect("id");
    let (s, first) = api.get(&format!("/api/v1/chart/{chart}/data/")).await;
    assert_eq!(s, StatusCode::OK, "{first}");
    let r = &first["result"][0];
    assert_eq!(r["colnames"], json!(["city", "count"]));
    assert_eq!(
        r["data"],
        json!([{"city": "Paris", "count": 2}, {"city": null, "count": 1}])
    );
    assert_eq!(r["is_cached"], json!(false));
    let (_, second) = api.get(&format!("/api/v1/chart/{chart}/data/")).await;
    assert_eq!(second["result"][0]["is_cached"], json!(true));
    let (_, forced) = api
        .get(&format!("/api/v1/chart/{chart}/data/?force=true"))
        .await;
    assert_eq!(forced["result"][0]["is_cached"], json!(false));
    let key = r["cache_key"].as_str().expect("cache key");
    let (s, by_key) = api.get(&format!("/api/v1/chart/data/{key}")).await;
    assert_eq!(s, StatusCode::OK, "{by_key}");
    assert_eq!(by_key["result"][0]["data"], r["data"]);
    let (s, miss) = api.get("/api/v1/chart/data/0123456789abcdef").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{miss}");
    let (s, csv) = status_json(
        api.request(
            reqwest::Method::GET,
            &format!("/api/v1/chart/{chart}/data/?format=csv"),
        )
        .send()
        .await
        .expect("send"),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(csv["raw"], "city,COUNT(*)\nParis,2\n,1\n");

    // The chart's definition is cached between requests, but an edit shows on the next one and
    // a deleted chart is gone at once.
    let mut descending = by_city.clone();
    descending["queries"][0]["orderby"] = json!([["city", false]]);
    let (s, b) = api
        .put(
            &format!("/api/v1/chart/{chart}"),
            json!({"query_context": descending.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let (_, edited) = api.get(&format!("/api/v1/chart/{chart}/data/")).await;
    assert_eq!(
        edited["result"][0]["data"],
        json!([{"city": null, "count": 1}, {"city": "Paris", "count": 2}]),
        "{edited}"
    );
    let (s, copy) = api
        .post(
            "/api/v1/chart/",
            json!({"slice_name": "copy", "datasource_id": ds, "datasource_type": "table",
                   "viz_type": "table", "query_context": by_city.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{copy}");
    let copy = copy["id"].as_i64().expect("id");
    let (s, _) = api.get(&format!("/api/v1/chart/{copy}/data/")).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = api.delete(&format!("/api/v1/chart/{copy}")).await;
    assert_eq!(s, StatusCode::OK);
    let (s, gone) = api.get(&format!("/api/v1/chart/{copy}/data/")).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{gone}");

    // Quotes in values are escaped, not interpreted.
    let (_, obrien) = api
        .post(
            "/api/v1/chart/data",
            json!({"datasource": {"id": ds, "type": "table"},
                   "queries": [{"columns": ["id"], "filters": [{"col": "name", "op": "==", "val": "O'Brien"}]}]}),
        )
        .await;
    assert_eq!(obrien["result"][0]["data"], json!([{"id": 1}]), "{obrien}");

    // Fragments that are more than one expression never reach the database.
    let fragment = |extras: Value, metrics: Value| {
        json!({"datasource": {"id": ds, "type": "table"},
               "queries": [{"columns": ["city"], "metrics": metrics, "extras": extras}]})
    };
    for (extras, metrics, status, error_type) in [
        (
            json!({"where": "1=1) OR (1=1"}),
            json!(["count"]),
            422,
            "INVALID_SQL_ERROR",
        ),
        (
            json!({"where": "1=1; DROP TABLE people"}),
            json!(["count"]),
            422,
            "INVALID_SQL_ERROR",
        ),
        (
            json!({"having": "COUNT(*) > (SELECT 1)"}),
            json!(["count"]),
            400,
            "ADHOC_SUBQUERY_NOT_ALLOWED_ERROR",
        ),
        (
            json!({}),
            json!([{"expressionType": "SQL", "sqlExpression": "(SELECT max(id) FROM people)", "label": "m"}]),
            400,
            "ADHOC_SUBQUERY_NOT_ALLOWED_ERROR",
        ),
        (
            json!({}),
            json!([{"expressionType": "SQL", "sqlExpression": "MAX(length(version()))", "label": "v"}]),
            400,
            "INVALID_SQL_ERROR",
        ),
    ] {
        let (s, body) = api
            .post("/api/v1/chart/data", fragment(extras.clone(), metrics))
            .await;
        assert_eq!(s.as_u16(), status, "{extras}: {body}");
        assert_eq!(
            body["errors"][0]["error_type"], error_type,
            "{extras}: {body}"
        );
    }
    // An empty expression is refused before any SQL is built.
    let (s, body) = api
        .post(
            "/api/v1/chart/data",
            fragment(
                json!({}),
                json!([{"expressionType": "SQL", "sqlExpression": " ", "label": "e"}]),
            ),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["message"], "Error: Empty SQL expression", "{body}");
    // A trailing comment cannot swallow the rest of the statement.
    let (s, body) = api
        .post(
            "/api/v1/chart/data",
            fragment(json!({"where": "score > 2 --"}), json!(["count"])),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["result"][0]["rowcount"], 2, "{body}");
    let (_, people) = api.get(&format!("/api/v1/dataset/{ds}")).await;
    assert_eq!(people["result"]["table_name"], "people");

    // A Gamma user without access to the dataset gets Superset's 403.
    let (_, roles) = api
        .get("/api/v1/security/roles/?q=(filters:!((col:name,opr:eq,value:Gamma)))")
        .await;
    let gamma = roles["result"][0]["id"].as_i64().expect("gamma");
    let (s, u) = api
        .post(
            "/api/v1/security/users/",
            json!({"username": "viewer", "first_name": "V", "last_name": "W",
                   "email": "v@example.com", "password": "viewer-pass-1", "active": true,
                   "roles": [gamma]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{u}");
    let viewer = Api::login(&server, "viewer", "viewer-pass-1").await;
    let (s, body) = viewer.post("/api/v1/chart/data", by_city.clone()).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["errors"][0]["error_type"],
        "DATASOURCE_SECURITY_ACCESS_ERROR"
    );
    let (s, _) = viewer.get(&format!("/api/v1/chart/data/{key}")).await;
    assert_eq!(
        s,
        StatusCode::FORBIDDEN,
        "a cache key does not bypass access checks"
    );
}

#[tokio::test]
async fn first_embedded_start_serves_example_charts() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, dbs) = api.get("/api/v1/database/").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(dbs["result"][0]["database_name"], "examples", "{dbs}");
    let (s, dash) = api.get("/api/v1/dashboard/sales-overview/charts").await;
    assert_eq!(s, StatusCode::OK, "{dash}");
    let charts = dash["result"].as_array().expect("charts");
    assert_eq!(charts.len(), 5, "{dash}");
    for c in charts {
        let id = c["id"].as_i64().expect("id");
        let (s, data) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
        assert_eq!(s, StatusCode::OK, "chart {id}: {data}");
        let r = &data["result"][0];
        assert!(
            r["rowcount"].as_u64().is_some_and(|n| n > 0),
            "chart {id}: {data}"
        );
    }
    let (_, sales) = api
        .get("/api/v1/dataset/?q=(filters:!((col:table_name,opr:eq,value:sales)))")
        .await;
    let sales = sales["ids"][0].as_i64().expect("sales dataset");
    // The monthly line: 24 months of 2024–2025, the axis typed temporal.
    let (_, line) = api
        .post(
            "/api/v1/chart/data",
            json!({"datasource": {"id": sales, "type": "table"},
                   "queries": [{"columns": [{"columnType": "BASE_AXIS", "sqlExpression": "order_date",
                                             "label": "order_date", "timeGrain": "P1M"}],
                                "metrics": ["count"], "orderby": [["order_date", true]],
                                "filters": [{"col": "order_date", "op": "TEMPORAL_RANGE",
                                             "val": "2024-01-01 : 2025-01-01"}]}]}),
        )
        .await;
    let r = &line["result"][0];
    assert_eq!(r["coltypes"], json!([2, 0]), "{line}");
    assert_eq!(r["rowcount"], 12, "{line}");
    assert_eq!(r["data"][0]["order_date"], json!(1_704_067_200_000.0_f64));
    assert_eq!(r["from_dttm"], json!(1_704_067_200_000.0_f64));
}
