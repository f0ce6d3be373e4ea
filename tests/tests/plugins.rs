//! The plugin platform end to end: the management API (Admin only), uploads that are live for
//! the very next chart-data request and survive a restart, atomic replacement, deletion, and a
//! hostile fixture plugin (`tests/fixtures/plugins`) whose every misbehaviour comes back as a
//! typed error while ordinary requests keep being served.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, fixture_plugin, pg};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A fresh analytics database with a small `people` table; returns its URL.
async fn analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE people (id int PRIMARY KEY, name text, city text, score float8); \
             INSERT INTO people VALUES (1, 'Ann', 'Cork', 1.5), (2, 'Bob', 'Paris', 2.5), \
             (3, 'Cy', 'Paris', NULL), (4, 'Dee', NULL, 4.0);",
        )
        .await
        .expect("fixture");
    url
}

/// Registers the database and a `people` dataset; returns the dataset id.
async fn people_dataset(api: &Api, url: &str) -> i64 {
    let (s, db) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": "analytics", "sqlalchemy_uri": url}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db["id"], "schema": "public", "table_name": "people"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    ds["id"].as_i64().expect("id")
}

/// A raw-records query over `people` (id, score) ordered by id, with `post_processing`.
fn query(ds: i64, post_processing: Value) -> Value {
    json!({
        "datasource": {"id": ds, "type": "table"},
        "force": true,
        "queries": [{
            "columns": ["id", "score"],
            "orderby": [["id", true]],
            "row_limit": 100,
            "post_processing": post_processing,
        }],
        "result_type": "full",
    })
}

async fn upload(api: &Api, wasm: &[u8]) -> (StatusCode, Value) {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(wasm.to_vec()).file_name("plugin.wasm"),
    );
    let resp = api
        .request(reqwest::Method::POST, "/api/v1/plugin/")
        .multipart(form)
        .send()
        .await
        .expect("upload");
    let status = resp.status();
    let body = resp.json().await.unwrap_or(Value::Null);
    (status, body)
}

fn scores(body: &Value) -> Vec<Value> {
    body["result"][0]["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {body}"))
        .iter()
        .map(|r| r["score"].clone())
        .collect()
}

#[tokio::test]
async fn uploaded_plugins_are_live_replaceable_persistent_and_deletable() {
    let url = analytics().await;
    // Metadata in PostgreSQL, as in production: a restarted (or another) replica shares it.
    let mut server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .start()
        .await
        .expect("server");
    let metadata_url = server.metadata_url().expect("metadata url").to_owned();
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let ds = people_dataset(&api, &url).await;

    // The built-in plugin is listed with its identity and limits; the API is in the OpenAPI
    // document and refuses anonymous callers.
    let (s, list) = api.get("/api/v1/plugin/").await;
    assert_eq!(s, StatusCode::OK, "{list}");
    let builtin = &list["result"][0];
    assert_eq!(builtin["name"], "postprocessing", "{list}");
    assert_eq!(builtin["kind"], "post-processor");
    assert_eq!(builtin["source"], "built-in");
    assert_eq!(builtin["wit_version"], "0.2.0");
    assert_eq!(builtin["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(builtin["limits"]["memory_mb"], 128);
    assert_eq!(builtin["limits"]["timeout_ms"], 2000);
    assert_eq!(list["supported_wit_versions"], json!(["0.1.0", "0.2.0"]));
    let anon = server
        .client()
        .get(server.url("/api/v1/plugin/"))
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), StatusCode::UNAUTHORIZED);
    let (_, spec) = api.get("/api/v1/_openapi").await;
    let paths = spec["paths"].as_object().expect("paths");
    let documented = |p: &str, m: &str| {
        paths
            .iter()
            .any(|(k, v)| k.trim_end_matches('/') == p && v[m].is_object())
    };
    assert!(
        documented("/api/v1/plugin", "get") && documented("/api/v1/plugin", "post"),
        "list and upload documented"
    );
    assert!(
        documented("/api/v1/plugin/{name}", "delete"),
        "delete documented"
    );

    // A Gamma user may not manage plugins.
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
    let (s, _) = viewer.get("/api/v1/plugin/").await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // Not a component: refused with a clear message, nothing installed.
    let (s, body) = upload(&api, b"definitely not wasm").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("not a WebAssembly"),
        "{body}"
    );
    let core_module = b"\0asm\x01\0\0\0";
    let (s, body) = upload(&api, core_module).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("not a component"),
        "{body}"
    );

    // Components outside the contract are refused at install, with the reason.
    let refused = [
        (
            r#"(component (import "wasi:http/outgoing-handler@0.2.0" (instance)))"#,
            "imports wasi:http/outgoing-handler@0.2.0, which plugins may not use",
        ),
        ("(component)", "exports no liteset:plugin interface"),
        (
            r#"(component (instance $i) (export "liteset:plugin/post-process@0.3.0" (instance $i)))"#,
            "targets liteset:plugin@0.3.0; this server supports liteset:plugin@0.1.0 and @0.2.0",
        ),
        (
            r#"(component (instance $i) (export "liteset:plugin/meta@0.1.0" (instance $i)) (export "liteset:plugin/post-process@0.2.0" (instance $i)))"#,
            "exports liteset:plugin interfaces of two versions (0.1.0 and 0.2.0)",
        ),
    ];
    for (text, why) in refused {
        let (s, body) = upload(&api, &wat::parse_str(text).expect("wat")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{text}: {body}");
        let msg = body["message"].as_str().unwrap_or_default();
        assert!(msg.contains(why), "{text}: {msg}");
    }
    // Only the two built-ins (post-processing and charts) are listed.
    let (_, list) = api.get("/api/v1/plugin/").await;
    let names: Vec<&str> = list["result"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        ["postprocessing", "charts"],
        "nothing refused was installed: {list}"
    );

    // Before the upload the operation is unknown to the schema.
    let doubled = query(
        ds,
        json!([{"operation": "fixture", "options": {"mode": "double"}}]),
    );
    let (s, body) = api.post("/api/v1/chart/data", doubled.clone()).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");

    let v1 = std::fs::read(fixture_plugin("")).expect("fixture wasm");
    let (s, body) = upload(&api, &v1).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    assert_eq!(body["result"]["name"], "fixture");
    assert_eq!(body["result"]["version"], "1.0.0");
    assert_eq!(body["result"]["source"], "uploaded");

    // Usable in the very next request; the plugin really ran (scores doubled).
    let (s, body) = api.post("/api/v1/chart/data", doubled.clone()).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        scores(&body),
        vec![json!(3.0), json!(5.0), Value::Null, json!(8.0)]
    );

    // Built-in and uploaded steps mix in one list.
    let mixed = query(
        ds,
        json!([
            {"operation": "fixture", "options": {"mode": "double"}},
            {"operation": "sort", "options": {"by": "score", "ascending": false}},
        ]),
    );
    let (s, body) = api.post("/api/v1/chart/data", mixed).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        scores(&body),
        vec![json!(8.0), json!(5.0), json!(3.0), Value::Null]
    );

    // Replacing: same name, new code; the next call runs the new version.
    let v2 = std::fs::read(fixture_plugin("v2")).expect("fixture v2 wasm");
    let (s, body) = upload(&api, &v2).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["version"], "2.0.0");
    let identity = query(ds, json!([{"operation": "fixture", "options": {}}]));
    let (s, body) = api.post("/api/v1/chart/data", identity.clone()).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["result"][0]["data"][0]["version"], "2", "{body}");

    // Uploaded plugins survive a restart: a new process (with an empty data folder and compile
    // cache) on the same metadata serves them at once.
    server.stop().await.expect("stop");
    let server = TestServer::builder()
        .env("LITESET_METADATA_URL", &metadata_url)
        .start()
        .await
        .expect("restart");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, body) = api.get("/api/v1/plugin/fixture").await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["version"], "2.0.0");
    let (s, body) = api.post("/api/v1/chart/data", identity.clone()).await;
    assert_eq!(s, StatusCode::OK, "{body}");

    // Deleting makes requests naming it fail with a clear 400.
    let (s, _) = api.delete("/api/v1/plugin/fixture").await;
    assert_eq!(s, StatusCode::OK);
    let (s, body) = api.post("/api/v1/chart/data", identity).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let msg = body["message"].as_str().unwrap_or_default();
    assert!(msg.contains("'operation': ['Must be one of:"), "{body}");
    let (s, _) = api.delete("/api/v1/plugin/fixture").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, body) = api.delete("/api/v1/plugin/postprocessing").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
}

/// Resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

#[tokio::test]
async fn hostile_plugin_behaviours_become_typed_errors_while_the_server_keeps_serving() {
    let url = analytics().await;
    let server = TestServer::builder()
        .env("LITESET_PLUGINS__TIMEOUT_MS", "2000")
        .env("LITESET_PLUGINS__MEMORY_MB", "64")
        .env("LITESET_PLUGINS__MAX_CONCURRENT_CALLS", "2")
        .env("LITESET_PLUGINS__QUEUE_TIMEOUT_MS", "300")
        .start()
        .await
        .expect("server");
    let api = Arc::new(Api::login(&server, "admin", ADMIN_PASSWORD).await);
    let ds = people_dataset(&api, &url).await;
    let wasm = std::fs::read(fixture_plugin("")).expect("fixture wasm");
    let (s, body) = upload(&api, &wasm).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let run = |mode: &str| {
        query(
            ds,
            json!([{"operation": "fixture", "options": {"mode": mode}}]),
        )
    };

    // Warm up, then take the baseline.
    for _ in 0..3 {
        let (s, body) = api.post("/api/v1/chart/data", run("identity")).await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    let baseline = rss(server.pid());

    // Ordinary traffic keeps flowing the whole time: /health and a chart-data query.
    let stop = Arc::new(AtomicBool::new(false));
    let probes = Arc::new(AtomicUsize::new(0));
    let probe = {
        let (api, stop, probes) = (api.clone(), stop.clone(), probes.clone());
        let plain = query(ds, json!([]));
        tokio::spawn(async move {
            let mut failures = Vec::new();
            let mut slowest = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let (s, _) = api.get("/health").await;
                let (s2, body) = api.post("/api/v1/chart/data", plain.clone()).await;
                slowest = slowest.max(t.elapsed());
                if s != StatusCode::OK || s2 != StatusCode::OK {
                    failures.push(format!("{s} {s2} {body}"));
                }
                probes.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (failures, slowest)
        })
    };

    let reason = |body: &Value| body["errors"][0]["extra"]["reason"].clone();
    let cases: &[(&str, StatusCode, &str, Duration)] = &[
        (
            "spin",
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            Duration::from_millis(4000),
        ),
        (
            "bomb",
            StatusCode::UNPROCESSABLE_ENTITY,
            "out_of_memory",
            Duration::from_secs(5),
        ),
        (
            "huge",
            StatusCode::UNPROCESSABLE_ENTITY,
            "out_of_memory",
            Duration::from_secs(5),
        ),
        (
            "panic",
            StatusCode::INTERNAL_SERVER_ERROR,
            "crashed",
            Duration::from_secs(2),
        ),
        (
            "recurse",
            StatusCode::INTERNAL_SERVER_ERROR,
            "crashed",
            Duration::from_secs(2),
        ),
        (
            "bad_table",
            StatusCode::INTERNAL_SERVER_ERROR,
            "bad_output",
            Duration::from_secs(2),
        ),
        (
            "bad_utf8",
            StatusCode::INTERNAL_SERVER_ERROR,
            "bad_output",
            Duration::from_secs(2),
        ),
    ];
    for (mode, status, want, within) in cases {
        let t = Instant::now();
        let (s, body) = api.post("/api/v1/chart/data", run(mode)).await;
        let took = t.elapsed();
        assert_eq!(s, *status, "{mode}: {body}");
        assert_eq!(reason(&body), json!(want), "{mode}: {body}");
        assert_eq!(
            body["errors"][0]["extra"]["plugin"], "fixture",
            "{mode}: {body}"
        );
        assert!(took < *within, "{mode} took {took:?}");
        if *mode == "panic" {
            let msg = body["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(
                msg.contains("fixture panic"),
                "the panic message reaches the client: {body}"
            );
        }
        if *mode == "recurse" {
            let msg = body["errors"][0]["message"].as_str().unwrap_or_default();
            assert!(msg.contains("stack overflow"), "{body}");
        }
        // The next call to the same plugin succeeds: every call has a fresh sandbox.
        let (s, body) = api.post("/api/v1/chart/data", run("identity")).await;
        assert_eq!(s, StatusCode::OK, "after {mode}: {body}");
    }

    // Capabilities the sandbox does not give: the guest's own calls fail.
    let (s, body) = api.post("/api/v1/chart/data", run("fs")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let text = body["result"][0]["data"].to_string();
    assert!(!text.contains("root:"), "no file content leaks: {text}");
    assert!(text.contains("read /etc/passwd: error"), "{text}");
    let (s, body) = api.post("/api/v1/chart/data", run("net")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(
        body["result"][0]["data"].to_string().contains("error"),
        "{body}"
    );
    let (s, body) = api.post("/api/v1/chart/data", run("env")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        body["result"][0]["data"],
        json!([{"env_vars": 0, "args": 0}]),
        "no environment or arguments reach the plugin"
    );

    // Flooding the log is cut at the per-call line budget. Flooding stdout/stderr (200 MB in
    // 4 KiB writes) is kept to 16 KiB but costs the guest time: it either finishes or is
    // stopped at its deadline; both are typed outcomes, never a crash.
    let (s, body) = api.post("/api/v1/chart/data", run("log_flood")).await;
    assert_eq!(s, StatusCode::OK, "log_flood: {body}");
    let (s, body) = api.post("/api/v1/chart/data", run("flood")).await;
    assert!(
        s == StatusCode::OK
            || (s == StatusCode::REQUEST_TIMEOUT && reason(&body) == json!("timeout")),
        "flood: {s} {body}"
    );

    // More concurrent calls than there are slots: the excess waits, then gets a 503 with
    // Retry-After; nothing fails otherwise.
    let calls: Vec<_> = (0..6)
        .map(|_| {
            let api = api.clone();
            let q = run("spin");
            tokio::spawn(async move { api.post("/api/v1/chart/data", q).await })
        })
        .collect();
    let mut busy = 0;
    let mut timeouts = 0;
    for c in calls {
        let (s, body) = c.await.expect("join");
        match s {
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(reason(&body), json!("busy"), "{body}");
                busy += 1;
            }
            StatusCode::REQUEST_TIMEOUT => timeouts += 1,
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(
        busy >= 1 && timeouts >= 2,
        "busy {busy}, timeouts {timeouts}"
    );

    stop.store(true, Ordering::Relaxed);
    let (failures, slowest) = probe.await.expect("probe");
    assert!(
        failures.is_empty(),
        "ordinary requests failed: {failures:?}"
    );
    assert!(
        probes.load(Ordering::Relaxed) > 20,
        "the probe kept running"
    );
    println!("slowest ordinary request while plugins misbehaved: {slowest:?}");

    // Memory returns near its baseline once the sandboxes are gone.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss(server.pid());
    println!(
        "RSS baseline {} MiB, after {} MiB",
        baseline >> 20,
        after >> 20
    );
    assert!(
        after < baseline + (48 << 20),
        "RSS grew from {} MiB to {} MiB",
        baseline >> 20,
        after >> 20
    );
}
