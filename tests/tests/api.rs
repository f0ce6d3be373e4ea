//! The HTTP contract around every endpoint: health probes, the OpenAPI document and Swagger
//! UI, trailing slashes, and Superset's envelopes for malformed and hostile input.

use std::time::Instant;

use liteset_tests::{
    ADMIN_PASSWORD, Metadata, TestServer, both_backends, csrf, login, status_json,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn health_probes_answer_ok_right_after_start() -> anyhow::Result<()> {
    let started = Instant::now();
    let server = TestServer::builder().start().await?;
    let c = server.client();
    let first = c.get(server.url("/health")).send().await?;
    let elapsed = started.elapsed();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.text().await?, "OK");
    // Reported, not asserted tightly: timing belongs to benchmarks. The bound only catches a
    // start-up that hangs.
    println!("process start to first /health answer: {elapsed:?}");
    assert!(elapsed.as_secs() < 30, "start-up took {elapsed:?}");
    for path in ["/healthcheck", "/ping", "/health/"] {
        let resp = c.get(server.url(path)).send().await?;
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        assert_eq!(resp.text().await?, "OK");
    }
    Ok(())
}

#[tokio::test]
async fn openapi_document_lists_every_endpoint_with_error_responses() -> anyhow::Result<()> {
    let server = TestServer::builder().start().await?;
    let c = server.client();
    let resp = c.get(server.url("/api/v1/_openapi")).send().await?;
    assert_eq!(resp.status(), StatusCode::OK);
    let text = resp.text().await?;
    let doc: Value = serde_json::from_str(&text)?;
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{}",
        doc["openapi"]
    );
    let paths = doc["paths"].as_object().expect("paths");
    for p in [
        "/api/v1/security/login",
        "/api/v1/security/refresh",
        "/api/v1/security/csrf_token",
        "/api/v1/me",
        "/api/v1/me/roles",
        "/login",
        "/logout",
        "/health",
        "/healthcheck",
        "/ping",
    ] {
        assert!(
            paths.contains_key(p),
            "{p} missing from the OpenAPI document"
        );
    }
    // Every JSON API operation documents Superset's error responses, and only those it can
    // send: 404 where the request names something, 429 where a password is checked, 410 where
    // SQL Lab's stored results are read, 413 where a body is read.
    for (path, item) in paths.iter().filter(|(p, _)| p.starts_with("/api/v1/")) {
        for (method, op) in item.as_object().expect("path item") {
            let responses = op["responses"].as_object().expect("responses");
            for code in ["400", "401", "403", "422", "500"] {
                assert!(responses.contains_key(code), "{method} {path} lacks {code}");
            }
            let takes_input = op["parameters"].as_array().is_some_and(|p| !p.is_empty())
                || op.get("requestBody").is_some();
            assert_eq!(
                responses.contains_key("404"),
                takes_input,
                "{method} {path}: 404"
            );
            let id = op["operationId"].as_str().unwrap_or_default();
            assert_eq!(
                responses.contains_key("429"),
                id == "security_login",
                "{method} {path}: 429"
            );
            assert_eq!(
                responses.contains_key("410"),
                ["sqllab_results", "sqllab_export"].contains(&id),
                "{method} {path}: 410"
            );
            assert_eq!(
                responses.contains_key("413"),
                ["post", "put"].contains(&method.as_str()),
                "{method} {path}: 413"
            );
        }
    }
    let schemes = doc["components"]["securitySchemes"]
        .as_object()
        .expect("security schemes");
    assert!(schemes.contains_key("jwt") && schemes.contains_key("session"));

    // Formal validation with the reference validator (installed by tests/run).
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec(&doc)?)?;
    let python = std::env::var("LITESET_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = std::process::Command::new(&python)
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {python}: {e}"))?;
    assert!(
        out.status.success(),
        "openapi-spec-validator rejected the document (run via `bash tests/run`, which installs it):\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Swagger UI loads and shows the served document, not another one.
    let ui = c.get(server.url("/swagger/v1")).send().await?;
    assert_eq!(ui.status(), StatusCode::OK);
    let html = ui.text().await?;
    assert!(
        html.contains("swagger-ui") && html.contains("SwaggerUIBundle"),
        "not a Swagger UI page"
    );
    assert!(html.contains(&text), "Swagger UI shows another document");
    Ok(())
}

/// Whether a schema (after `$ref`s) names its fields: an object with properties, an array of
/// such, a scalar, or a union of typed schemas. `{}` and free objects are untyped.
fn typed(doc: &Value, schema: &Value) -> bool {
    let mut s = schema;
    while let Some(r) = s["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or_default();
        s = &doc["components"]["schemas"][name];
    }
    if s["properties"].as_object().is_some_and(|p| !p.is_empty()) {
        return true;
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(all) = s[k].as_array() {
            return all.iter().all(|x| typed(doc, x));
        }
    }
    match s["type"].as_str() {
        Some("array") => typed(doc, &s["items"]),
        Some("string" | "integer" | "number" | "boolean") => true,
        _ => false,
    }
}

/// Every request body and 2xx response of the document, and the ones a generated client would
/// get as a bare dictionary. Non-JSON media (ZIP, CSV, PNG, multipart uploads) count as typed.
fn untyped_operations(doc: &Value) -> (usize, Vec<String>) {
    let mut total = 0;
    let mut untyped = Vec::new();
    let json_schema = |content: &Value| -> Option<Value> {
        let (ct, media) = content.as_object()?.iter().next()?;
        ct.contains("json").then(|| media["schema"].clone())
    };
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            if let Some(body) = op.get("requestBody") {
                total += 1;
                if let Some(schema) = json_schema(&body["content"])
                    && !typed(doc, &schema)
                {
                    untyped.push(format!("{method} {path} request body"));
                }
            }
            for (code, resp) in op["responses"].as_object().into_iter().flatten() {
                if !code.starts_with('2') {
                    continue;
                }
                total += 1;
                if let Some(schema) = resp.get("content").and_then(json_schema)
                    && !typed(doc, &schema)
                {
                    untyped.push(format!("{method} {path} {code}"));
                }
            }
        }
    }
    (total, untyped)
}

/// The typed share of the contract only grows: this floor is raised as endpoints are typed.
const TYPED_FLOOR: f64 = 0.95;

#[tokio::test]
async fn openapi_document_is_typed_and_matches_its_snapshot() -> anyhow::Result<()> {
    let server = TestServer::builder().start().await?;
    let doc: Value = server
        .client()
        .get(server.url("/api/v1/_openapi"))
        .send()
        .await?
        .json()
        .await?;
    let (total, untyped) = untyped_operations(&doc);
    let share = 1.0 - untyped.len() as f64 / total as f64;
    println!(
        "typed request bodies and 2xx responses: {} of {total} ({:.1} %); untyped:\n  {}",
        total - untyped.len(),
        share * 100.0,
        untyped.join("\n  ")
    );
    assert!(
        share >= TYPED_FLOOR,
        "only {:.1} % typed, below the floor of {:.1} %",
        share * 100.0,
        TYPED_FLOOR * 100.0
    );

    // The document is kept in the repository, so every contract change shows in review.
    let snapshot = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.json");
    let served = serde_json::to_string_pretty(&doc)? + "\n";
    if std::env::var_os("UPDATE_OPENAPI_SNAPSHOT").is_some() {
        std::fs::write(snapshot, &served)?;
    }
    let kept: Value = std::fs::read_to_string(snapshot)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if kept != doc {
        let fresh = std::env::temp_dir().join("liteset-openapi.json");
        std::fs::write(&fresh, &served)?;
        panic!(
            "the served OpenAPI document differs from tests/openapi.json (new one: {}). If the \
             change is intended, rerun with UPDATE_OPENAPI_SNAPSHOT=1 and commit it.",
            fresh.display()
        );
    }
    Ok(())
}

both_backends! {
    async fn malformed_bodies_get_400_in_superset_envelopes(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta).start().await?;
        let c = server.client();
        let url = server.url("/api/v1/security/login");
        let post = |body: reqwest::Body, ct: &'static str| c.post(&url).header("content-type", ct).body(body).send();

        let (s, b) = status_json(post("not json".into(), "application/json").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": "Request payload is not JSON"})));
        let (s, b) = status_json(post("{\"username\":\"admin\"}".into(), "text/plain").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": "Request payload is not JSON"})));
        let (s, b) = status_json(post("{}".into(), "application/json").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": {"username": ["Missing data for required field."]}})));
        let (s, b) = status_json(post(r#"{"username":"admin","password":["x"],"provider":"db"}"#.into(), "application/json").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": {"password": ["Not a valid string."]}})));
        let (s, b) = status_json(post(r#"{"username":"","password":"x","provider":"db"}"#.into(), "application/json").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": {"username": ["Shorter than minimum length 1."]}})));
        let (s, b) = status_json(post(r#"{"username":"a","password":"x","provider":"oauth"}"#.into(), "application/json").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": {"provider": ["Must be one of: db, ldap."]}})));
        let (s, b) = status_json(post(r#"{"username":"a","password":"x","provider":"ldap"}"#.into(), "application/json").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": "Alternative authentication provider is not allowed"})));
        let (s, b) = status_json(post("[1,2,3]".into(), "application/json").await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, json!({"message": {"_schema": ["Invalid input type."]}})));

        // 10 MB before signing in: refused by its declared length, and without one (chunked)
        // while reading, with 413 (`http.max_unauthenticated_body_bytes`).
        let big = format!("{{\"username\":\"{}\",\"password\":\"x\",\"provider\":\"db\"}}", "a".repeat(10 * 1024 * 1024));
        let (s, b) = status_json(post(big.clone().into(), "application/json").await?).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(b["message"].as_str().is_some_and(|m| m.contains("larger than 16384 bytes")), "{b}");
        let stream = futures_stream(big.into_bytes());
        let (s, b) = status_json(post(reqwest::Body::wrap_stream(stream), "application/json").await?).await;
        assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(b["message"].as_str().is_some_and(|m| m.contains("larger than 16384 bytes")), "{b}");

        // Deeply nested JSON does not overflow the stack (within the 16 KiB a caller may send
        // before signing in).
        let nested = format!("{}{}", "[".repeat(8_000), "]".repeat(8_000));
        let (s, _) = status_json(post(nested.into(), "application/json").await?).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);

        // Unknown routes and methods get FAB bodies; the server still serves afterwards.
        let (s, b) = status_json(c.get(server.url("/api/v1/no/such/thing")).send().await?).await;
        assert_eq!((s, b), (StatusCode::NOT_FOUND, json!({"message": "Not found"})));
        let (s, b) = status_json(c.delete(server.url("/api/v1/security/login")).send().await?).await;
        assert_eq!((s, b), (StatusCode::METHOD_NOT_ALLOWED, json!({"message": "The method is not allowed for the requested URL."})));
        let tokens = login(&c, server.base_url(), "admin", ADMIN_PASSWORD).await;
        assert!(tokens["access_token"].is_string());
        Ok(())
    }

    async fn trailing_slash_variants_reach_the_same_endpoint(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta).start().await?;
        let c = server.client();
        let tokens = login(&c, server.base_url(), "admin", ADMIN_PASSWORD).await;
        let access = tokens["access_token"].as_str().expect("token");
        for path in ["/api/v1/me", "/api/v1/me/", "/api/v1/me/roles", "/api/v1/me/roles/", "/api/v1/security/csrf_token"] {
            let s = c.get(server.url(path)).bearer_auth(access).send().await?.status();
            assert_eq!(s, StatusCode::OK, "{path}");
        }
        let s = c.post(server.url("/api/v1/security/login/"))
            .json(&json!({"username": "admin", "password": ADMIN_PASSWORD, "provider": "db"})).send().await?.status();
        assert_eq!(s, StatusCode::OK, "POST with a trailing slash is served, not redirected");
        let token = csrf(&c, server.base_url(), access).await;
        assert!(!token.is_empty());
        Ok(())
    }
}

/// A body with no Content-Length, delivered in chunks.
fn futures_stream(
    data: Vec<u8>,
) -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        data.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
    futures_util::stream::iter(chunks)
}

/// The server's sources, top-level module by top-level module, without comments and without
/// their `#[cfg(test)]` modules: what the layering test reads.
fn server_sources() -> Vec<(String, String, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    files
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let top = rel
                .split('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_owned();
            let mut text = std::fs::read_to_string(p).unwrap();
            if let Some(i) = text.find("#[cfg(test)]\nmod tests") {
                text.truncate(i);
            }
            let code: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            (rel, top, code.join("\n"))
        })
        .collect()
}

/// The layer rule, read off the source: top-level modules import each other without cycles;
/// nothing below `api` imports it and nothing below `services` imports them; a handler module
/// of `api` neither calls another handler module nor runs SQL or opens sealed secrets itself.
#[test]
fn layers_point_one_way_and_handlers_stay_thin() {
    use std::collections::{BTreeMap, BTreeSet};
    let sources = server_sources();
    let crate_ref = regex::Regex::new(r"crate::([a-z_0-9]+)").unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, top, code) in &sources {
        let deps = graph.entry(top.clone()).or_default();
        for c in crate_ref.captures_iter(code) {
            if &c[1] != top {
                deps.insert(c[1].to_owned());
            }
        }
    }
    let mut problems = Vec::new();
    // Cycles: a depth-first search reporting each back edge's loop.
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(i) = path.iter().position(|p| p == n) {
            cycles.push(format!("{} -> {n}", path[i..].join(" -> ")));
            return;
        }
        if !done.insert(n.to_owned()) {
            return;
        }
        path.push(n.to_owned());
        for d in graph.get(n).into_iter().flatten() {
            visit(d, graph, path, done, cycles);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        visit(n, &graph, &mut Vec::new(), &mut done, &mut problems);
    }
    // Only the composition root (`app`, `main`) and `api` may import `api`; `services` is
    // imported by `api` (and the root) only.
    for (m, deps) in &graph {
        if deps.contains("api") && !["app", "main", "lib"].contains(&m.as_str()) {
            problems.push(format!("{m} imports api"));
        }
        if deps.contains("services") && !["api", "app", "main", "lib"].contains(&m.as_str()) {
            problems.push(format!("{m} imports services"));
        }
    }
    // Handler modules: the files of `api` that declare endpoints.
    let handlers: BTreeSet<String> = sources
        .iter()
        .filter(|(rel, _, code)| rel.starts_with("api/") && code.contains("#[OpenApi("))
        .map(|(rel, _, _)| {
            rel.trim_start_matches("api/")
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    assert!(handlers.len() > 10, "handler modules found: {handlers:?}");
    let forbidden = [
        ".engines.execute(",
        "sealer.open(",
        ".db().query(",
        ".db().execute(",
        "Pred::sql(",
        "Pred::Sql(",
        "tokio_postgres::",
        "rusqlite::",
    ];
    for (rel, _, code) in &sources {
        let Some(m) = rel.strip_prefix("api/").map(|r| r.trim_end_matches(".rs")) else {
            continue;
        };
        if !handlers.contains(m) {
            continue;
        }
        for other in &handlers {
            let used = regex::Regex::new(&format!(r"super::{other}\b|super::\{{[^}}]*\b{other}\b"))
                .unwrap();
            if other != m && used.is_match(code) {
                problems.push(format!("handler {m} calls handler {other}"));
            }
        }
        for f in forbidden {
            if code.contains(f) {
                problems.push(format!("handler {m} does `{f}` itself"));
            }
        }
    }
    // Error statuses are chosen in `api/error.rs` alone: elsewhere an error names its `Fault`.
    // The only other statuses are success answers (`wire.rs`'s 201) and the web app shell's
    // redirect and asset 404, which are not API errors. (`reqwest::StatusCode` is the plugin
    // installer reading a server's answer, not choosing one.)
    let status = regex::Regex::new(r"(?:^|[^:])StatusCode::(?:([A-Z_]+)|from_u16)").unwrap();
    for (rel, _, code) in &sources {
        if rel == "api/error.rs" {
            continue;
        }
        for c in status.captures_iter(code) {
            let allowed = match rel.as_str() {
                "api/wire.rs" => ["CREATED"].as_slice(),
                "api/shell.rs" => ["FOUND", "NOT_FOUND"].as_slice(),
                _ => [].as_slice(),
            };
            if !c.get(1).is_some_and(|n| allowed.contains(&n.as_str())) {
                problems.push(format!("{rel} chooses a status itself: `{}`", c[0].trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "layering violations:\n  {}",
        problems.join("\n  ")
    );
}
