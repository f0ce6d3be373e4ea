//! What an ordinary account could learn or spend without being granted it (security, part
//! two): catalog metadata of ungranted tables, charts put on ungranted datasets, the stored
//! password of a database sent to another host, and memory or connections held before
//! authentication.
//!
//! The catalog and chart tests reuse the SQL-check world ([`super::sqlcheck::world_on`]):
//! `tess` (Gamma + sql_lab) may read the table `open` only; `secret` and `"Open"` sit beside
//! it in the same PostgreSQL schema.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use liteset_tests::{Api, Metadata, TestServer, both_backends};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::common::{error_type, permission, urlencode};
use super::engines::rss;
use super::imports::{bundle, chart_doc, upload};
use super::sqlcheck::{SECRET, World, world_on};

async fn chart_count(api: &Api) -> Value {
    api.get("/api/v1/chart/?q=(page_size:100)").await.1["count"].clone()
}

/// `GET path` as `api`: the status and the body as text (lossy for images).
async fn raw(api: &Api, path: &str) -> (StatusCode, String) {
    let resp = api
        .request(reqwest::Method::GET, path)
        .send()
        .await
        .expect("send");
    let status = resp.status();
    let bytes = resp.bytes().await.expect("body");
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// The administrator's dataset on the table `tess` may not read; its id.
async fn secret_dataset(w: &World) -> i64 {
    let (s, ds) = w
        .admin
        .post(
            "/api/v1/dataset/",
            json!({"database": w.wh, "schema": "public", "table_name": "secret"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    ds["id"].as_i64().expect("id")
}

/// The names in a `tables` answer.
fn table_names(body: &Value) -> Vec<String> {
    let mut names: Vec<String> = body["result"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["value"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

both_backends! {
    /// Superset's scoping of a database's metadata endpoints: `tess` sees the one table she
    /// may read; every other table, however its name or schema is spelled, answers as a
    /// missing one (404 `TABLE_NOT_FOUND_ERROR`) without a column of it.
    async fn catalog_metadata_only_for_what_the_caller_may_see(meta: Metadata) {
        let w = world_on(meta).await;
        let wh = w.wh;

        let (s, r) = w.admin.get(&format!("/api/v1/database/{wh}/tables/?q=(schema_name:public)")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(table_names(&r), ["Open", "open", "secret"], "{r}");
        let (s, r) = w.tess.get(&format!("/api/v1/database/{wh}/tables/?q=(schema_name:public)")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(table_names(&r), ["open"], "{r}");
        assert_eq!(r["count"], 1, "{r}");
        let (s, r) = w.tess.get(&format!("/api/v1/database/{wh}/schemas/")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"], json!(["public"]), "{r}");

        // The granted table's metadata is there.
        let (s, r) = w
            .tess
            .get(&format!("/api/v1/database/{wh}/table_metadata/?name=open&schema=public"))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let cols: Vec<&str> = r["columns"].as_array().expect("columns").iter()
            .filter_map(|c| c["name"].as_str()).collect();
        assert_eq!(cols, ["id", "v"], "{r}");
        let (s, r) = w.tess.get(&format!("/api/v1/database/{wh}/select_star/open/public/")).await;
        assert_eq!(s, StatusCode::OK, "{r}");

        let hidden = |r: &Value, what: &str| {
            let text = r.to_string();
            assert!(!text.contains("\"s\""), "{what} names a column of secret: {r}");
            assert!(!text.to_lowercase().contains("secret"), "{what} echoes the table: {r}");
        };
        for (name, schema) in [
            ("secret", Some("public")),
            ("secret", None),
            ("secret", Some("")),
            ("Open", Some("public")),
            ("SECRET", Some("public")),
            ("secret", Some("PUBLIC")),
            ("secret", Some("pg_catalog")),
            ("pg_authid", Some("pg_catalog")),
        ] {
            let q = match schema {
                Some(sc) => format!("name={}&schema={}", urlencode(name), urlencode(sc)),
                None => format!("name={}", urlencode(name)),
            };
            for path in ["table_metadata", "table_metadata/extra"] {
                let (s, r) = w.tess.get(&format!("/api/v1/database/{wh}/{path}/?{q}")).await;
                assert_eq!(s, StatusCode::NOT_FOUND, "{path}?{q}: {r}");
                assert_eq!(error_type(&r), "TABLE_NOT_FOUND_ERROR", "{path}?{q}: {r}");
                hidden(&r, path);
            }
            let star = match schema {
                Some(sc) if !sc.is_empty() => format!("select_star/{}/{}/", urlencode(name), urlencode(sc)),
                _ => format!("select_star/{}/", urlencode(name)),
            };
            let (s, r) = w.tess.get(&format!("/api/v1/database/{wh}/{star}")).await;
            assert_eq!(s, StatusCode::NOT_FOUND, "{star}: {r}");
            assert_eq!(error_type(&r), "TABLE_NOT_FOUND_ERROR", "{star}: {r}");
            hidden(&r, &star);
        }
        // The administrator still sees everything.
        let (s, r) = w
            .admin
            .get(&format!("/api/v1/database/{wh}/table_metadata/?name=secret&schema=public"))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
    }

    /// A chart cannot be created on, moved to, or imported onto a dataset its author may not
    /// read; every refusal leaves the charts as they were.
    async fn charts_only_on_reachable_datasets(meta: Metadata) {
        let w = world_on(meta).await;
        let secret = secret_dataset(&w).await;
        // Charts need `can_write` on Chart (Gamma has it in Superset; granted here anyway).
        let pv = permission(&w.admin, "Chart", "can_write").await;
        let (s, r) = w
            .admin
            .post(
                &format!("/api/v1/security/roles/{}/permissions", w.role),
                json!({"permission_view_menu_ids": [
                    pv,
                    permission(&w.admin, &format!("[wh].[open](id:{})", w.open), "datasource_access").await,
                    permission(&w.admin, "Dataset", "can_write").await,
                ]}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let tess = Api::login(&w.server, "tess", "tess-pass-123").await;
        let before = chart_count(&w.admin).await;
        for body in [
            json!({"slice_name": "s1", "viz_type": "table", "datasource_id": secret, "datasource_type": "table"}),
            json!({"slice_name": "s2", "viz_type": "table", "datasource_id": secret.to_string(), "datasource_type": "table"}),
            json!({"slice_name": "s3", "viz_type": "table", "datasource_id": secret, "datasource_type": "table",
                   "params": json!({"datasource": format!("{}__table", w.open)}).to_string()}),
        ] {
            let (s, r) = tess.post("/api/v1/chart/", body.clone()).await;
            assert!(s == StatusCode::FORBIDDEN || s == StatusCode::BAD_REQUEST, "{body}: {s} {r}");
        }
        assert_eq!(chart_count(&w.admin).await, before, "no chart was created");

        let (s, r) = tess
            .post("/api/v1/chart/", json!({"slice_name": "mine", "viz_type": "table",
                                           "datasource_id": w.open, "datasource_type": "table"}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let mine = r["id"].as_i64().expect("id");
        let (s, r) = tess
            .put(&format!("/api/v1/chart/{mine}"), json!({"datasource_id": secret, "datasource_type": "table"}))
            .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
        let (_, r) = w.admin.get(&format!("/api/v1/chart/{mine}")).await;
        assert_eq!(r["result"]["datasource_id"].as_i64(), Some(w.open), "{r}");

        // Import: a new chart on the existing `secret` dataset (reused, not written: she
        // does not own it).
        let (_, d) = w.admin.get(&format!("/api/v1/dataset/{secret}")).await;
        let ds_uuid = d["result"]["uuid"].as_str().expect("dataset uuid").to_owned();
        let chart_uuid = "0b6a7c1e-5b0f-4e0a-9c55-5e1c0e5a0f27";
        let zip = bundle("Slice", &[(
            "charts/peek.yaml".into(),
            chart_doc("peek", chart_uuid, &ds_uuid),
        )]);
        for overwrite in [false, true] {
            let (s, r) = upload(&tess, "/api/v1/chart/import/", zip.clone(), overwrite).await;
            assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
            assert!(r.to_string().contains("not accessible"), "{r}");
        }
        assert_eq!(chart_count(&w.admin).await, json!(before.as_i64().unwrap() + 1), "only her own chart");
        let (_, r) = w.admin.get("/api/v1/chart/?q=(filters:!((col:slice_name,opr:eq,value:peek)))").await;
        assert_eq!(r["count"], 0, "{r}");
    }

    /// A chart's definition is cached once anyone has asked for it, but access is not: after
    /// the administrator warmed a chart on `secret`, `tess` is still refused its data and its
    /// picture in every spelling, without a byte of the table; once the chart is moved onto
    /// `open` she gets its new data at once.
    async fn a_warmed_chart_is_no_granted_chart(meta: Metadata) {
        let w = world_on(meta).await;
        let secret = secret_dataset(&w).await;
        let on = |ds: i64, column: &str| {
            json!({"datasource_id": ds, "datasource_type": "table",
                   "params": json!({"viz_type": "table", "datasource": format!("{ds}__table"),
                                    "all_columns": [column]}).to_string(),
                   "query_context": json!({"datasource": {"id": ds, "type": "table"},
                       "queries": [{"columns": [column], "metrics": [], "orderby": [[column, true]],
                                    "row_limit": 10}],
                       "result_format": "json", "result_type": "full"}).to_string()})
        };
        let mut body = on(secret, "s");
        body["slice_name"] = json!("warm");
        body["viz_type"] = json!("table");
        let (s, r) = w.admin.post("/api/v1/chart/", body).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let chart = r["id"].as_i64().expect("id");
        let paths = [
            format!("/api/v1/chart/{chart}/data/"),
            format!("/api/v1/chart/{chart}/data"),
            format!("/api/v1/chart/{chart}/data/?format=csv"),
            format!("/api/v1/chart/{chart}/data/?format=json&type=samples"),
            format!("/api/v1/chart/{chart}/data/?force=true"),
            format!("/api/v1/chart/{chart}/render.svg?width=400&height=300"),
            format!("/api/v1/chart/{chart}/render.png?width=400&height=300"),
        ];
        // Warm every answer as the administrator, twice, so both the chart's definition and
        // its results are cached.
        for _ in 0..2 {
            for path in &paths {
                let (s, r) = raw(&w.admin, path).await;
                assert_eq!(s, StatusCode::OK, "{path}: {r}");
            }
        }
        let (_, r) = raw(&w.admin, &paths[0]).await;
        assert!(r.contains(SECRET), "the warmed answer holds the secret: {r}");

        for path in &paths {
            let (s, r) = raw(&w.tess, path).await;
            // The refusal every saved-chart read gives a chart outside the caller's data.
            assert_eq!(s, StatusCode::FORBIDDEN, "{path}: {r}");
            let body: Value = serde_json::from_str(&r).unwrap_or_else(|_| panic!("{path}: {r}"));
            assert_eq!(body, json!({"message": "Forbidden"}), "{path}");
        }

        // Moved onto the dataset she may read: the next request answers from `open`.
        let (s, r) = w.admin.put(&format!("/api/v1/chart/{chart}"), on(w.open, "v")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let (s, r) = w.tess.get(&paths[0]).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"][0]["data"], json!([{"v": "a"}, {"v": "b"}]), "{r}");
        let (s, r) = raw(&w.tess, &paths[5]).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert!(r.starts_with("<svg") && !r.contains(SECRET), "{r}");
        // And moved back, she is refused again at once.
        let (s, r) = w.admin.put(&format!("/api/v1/chart/{chart}"), on(secret, "s")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        for path in [&paths[0], &paths[5]] {
            let (s, r) = raw(&w.tess, path).await;
            assert_eq!(s, StatusCode::FORBIDDEN, "{path}: {r}");
            assert!(!r.contains(SECRET), "{path}: {r}");
        }
    }

    /// A URI sent back with the password mask keeps the stored password only for the same
    /// host, port and user: any other destination is refused before a connection is opened,
    /// so a server listening there never sees the password.
    async fn masked_password_stays_with_its_host(meta: Metadata) {
        let w = world_on(meta).await;
        // The test cluster trusts loopback, so any password connects; the one stored here must
        // never leave for another address.
        let password = "sekrit-pw-4471";
        let with_pw = w.url.replacen("postgres@", &format!("postgres:{password}@"), 1);
        assert_ne!(with_pw, w.url, "the URL has a user to add a password to");
        let (s, db) = w
            .admin
            .post("/api/v1/database/", json!({"database_name": "masked", "sqlalchemy_uri": with_pw}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{db}");
        let id = db["id"].as_i64().expect("id");
        let (_, conn) = w.admin.get(&format!("/api/v1/database/{id}/connection")).await;
        let masked = conn["result"]["sqlalchemy_uri"].as_str().expect("uri").to_owned();
        assert!(masked.contains("XXXXXXXXXX"), "{conn}");

        // A "database" that asks for the password in clear text and records what it gets.
        let trap = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let trap_port = trap.local_addr().unwrap().port();
        let heard = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = heard.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = trap.accept().await {
                let sink = sink.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    if let Ok(n) = sock.read(&mut buf).await {
                        sink.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                    // AuthenticationCleartextPassword.
                    let _ = sock.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]).await;
                    if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(3), sock.read(&mut buf)).await {
                        sink.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                });
            }
        });
        let url = url::Url::parse(&masked).expect("masked URL");
        let port = url.port().unwrap_or(5432);
        let moved = |host: &str, port: u16, user: &str| {
            let mut u = url.clone();
            u.set_host(Some(host)).unwrap();
            u.set_port(Some(port)).unwrap();
            u.set_username(user).unwrap();
            u.to_string()
        };
        let elsewhere = [
            moved("127.0.0.1", trap_port, "postgres"),
            moved("localhost", trap_port, "postgres"),
            moved("127.0.0.2", port, "postgres"),
            moved(url.host_str().unwrap(), port, "other"),
            moved(url.host_str().unwrap(), trap_port, "postgres"),
        ];
        for uri in &elsewhere {
            let (s, r) = w
                .admin
                .put(&format!("/api/v1/database/{id}"), json!({"sqlalchemy_uri": uri}))
                .await;
            assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "PUT {uri}: {r}");
            assert!(r["message"]["sqlalchemy_uri"][0].as_str().unwrap_or("").contains("password"), "{r}");
            let (s, r) = w
                .admin
                .post("/api/v1/database/test_connection/",
                      json!({"database_name": "masked", "sqlalchemy_uri": uri}))
                .await;
            assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "test_connection {uri}: {r}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let heard = String::from_utf8_lossy(&heard.lock().unwrap()).into_owned();
        assert!(!heard.contains(password), "the password reached another host: {heard:?}");
        let (_, conn) = w.admin.get(&format!("/api/v1/database/{id}/connection")).await;
        assert_eq!(conn["result"]["sqlalchemy_uri"], masked.as_str(), "nothing changed");

        // The same account, spelled as the mask came back, keeps its password and works.
        let (s, r) = w
            .admin
            .post("/api/v1/database/test_connection/",
                  json!({"database_name": "masked", "sqlalchemy_uri": masked}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let (s, r) = w
            .admin
            .put(&format!("/api/v1/database/{id}"),
                 json!({"sqlalchemy_uri": format!("{masked}?application_name=x")}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let (_, conn) = w.admin.get(&format!("/api/v1/database/{id}/connection")).await;
        assert!(conn["result"]["sqlalchemy_uri"].as_str().unwrap_or("").contains("XXXXXXXXXX"), "{conn}");

        // An import of the same database (same uuid) with the mask and another host.
        let (_, d) = w.admin.get(&format!("/api/v1/database/{id}")).await;
        let uuid = d["result"]["uuid"].as_str().expect("uuid").to_owned();
        let zip = bundle("Database", &[(
            "databases/masked.yaml".into(),
            super::imports::database_doc("masked", &uuid, &elsewhere[0]),
        )]);
        let (s, r) = upload(&w.admin, "/api/v1/database/import/", zip, true).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        let (_, conn) = w.admin.get(&format!("/api/v1/database/{id}/connection")).await;
        assert!(!conn["result"]["sqlalchemy_uri"].as_str().unwrap_or("").contains(&trap_port.to_string()), "{conn}");
    }
}

/// A raw HTTP/1.1 connection to the server.
async fn connect(server: &TestServer) -> TcpStream {
    let addr = server.base_url().trim_start_matches("http://").to_owned();
    TcpStream::connect(addr).await.expect("connect")
}

/// Whatever the server has answered on `sock` within `wait` (empty if nothing).
async fn answer(sock: &mut TcpStream, wait: Duration) -> String {
    let mut buf = vec![0u8; 4096];
    match tokio::time::timeout(wait, sock.read(&mut buf)).await {
        Ok(Ok(n)) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        _ => String::new(),
    }
}

/// Twenty unauthenticated clients each streaming a 40 MiB chunked body and holding the
/// connection: the server reads a few KiB of each, refuses it, keeps its memory and keeps
/// answering `/health`. Declared large bodies are refused unread, forged credentials count as
/// none, and the limit is the caller's, not the endpoint's.
#[tokio::test]
async fn unauthenticated_bodies_cost_almost_nothing() {
    let server = TestServer::builder().start().await.expect("server");
    let admin = Api::login(&server, "admin", liteset_tests::ADMIN_PASSWORD).await;
    let (s, _) = admin.get("/api/v1/chart/").await;
    assert_eq!(s, StatusCode::OK);
    let baseline = rss(server.pid());
    let chunk = vec![b'x'; 1 << 20];
    let mut held = Vec::new();
    let mut answers = Vec::new();
    for i in 0..20 {
        let mut sock = connect(&server).await;
        let credentials = match i % 4 {
            0 => String::new(),
            1 => "Authorization: Bearer forged.token.value\r\n".to_owned(),
            2 => "Cookie: session=forged\r\n".to_owned(),
            _ => format!("Authorization: Bearer {}x\r\n", admin.token),
        };
        let head = format!(
            "POST /api/v1/plugin/ HTTP/1.1\r\nHost: x\r\n{credentials}\
             Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        sock.write_all(head.as_bytes()).await.unwrap();
        // Up to 40 MiB, as long as the server keeps reading.
        for _ in 0..40 {
            let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
            match tokio::time::timeout(Duration::from_millis(500), sock.write_all(&frame)).await {
                Ok(Ok(())) => {}
                _ => break,
            }
        }
        answers.push(answer(&mut sock, Duration::from_secs(2)).await);
        held.push(sock);
    }
    for (i, a) in answers.iter().enumerate() {
        // Invalid tokens get the answer the handler would give (flask-jwt-extended's 422, so
        // clients see what is wrong); no credentials, or a cookie that is not a session, 413.
        let expected = if i % 2 == 1 {
            "HTTP/1.1 422"
        } else {
            "HTTP/1.1 413"
        };
        assert!(a.starts_with(expected), "client {i}: {a:?}");
    }
    let resp = server
        .client()
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(resp.status(), StatusCode::OK);
    let now = rss(server.pid());
    eprintln!(
        "20 x 40 MiB unauthenticated: RSS {} MiB -> {} MiB",
        baseline >> 20,
        now >> 20
    );
    assert!(
        now < baseline + 200 * 1024 * 1024,
        "RSS grew from {baseline} to {now}"
    );

    // A declared body past the limit is refused before a byte of it is read.
    let mut sock = connect(&server).await;
    sock.write_all(
        b"POST /api/v1/security/login HTTP/1.1\r\nHost: x\r\n\
        Content-Type: application/json\r\nContent-Length: 41943040\r\n\r\n",
    )
    .await
    .unwrap();
    let a = answer(&mut sock, Duration::from_secs(5)).await;
    assert!(a.starts_with("HTTP/1.1 413"), "{a:?}");
    // Small unauthenticated bodies (logins) still work, and the same big body is accepted up
    // to the authenticated limit once signed in (a 400 for what it is, not a 413).
    let resp = server
        .client()
        .post(server.url("/api/v1/security/login"))
        .json(&json!({"username": "admin", "password": liteset_tests::ADMIN_PASSWORD, "provider": "db"}))
        .send()
        .await
        .expect("login");
    assert_eq!(resp.status(), StatusCode::OK);
    let big = json!({"slice_name": "x".repeat(64 * 1024), "viz_type": "table"});
    let (s, r) = admin.post("/api/v1/chart/", big.clone()).await;
    assert_ne!(s, StatusCode::PAYLOAD_TOO_LARGE, "{r}");
    let resp = server
        .client()
        .post(server.url("/api/v1/chart/"))
        .json(&big)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    drop(held);
    assert!(!server.logs().contains("panicked"));
}

/// Slow-loris: headers trickled in are cut off after `http.read_timeout_secs`, and a body
/// trickled in (even by a signed-in client) is answered 408 at the same deadline; other
/// clients are served meanwhile.
#[tokio::test]
async fn trickled_requests_are_cut_off() {
    let server = TestServer::builder()
        .env("LITESET_HTTP__READ_TIMEOUT_SECS", "2")
        .start()
        .await
        .expect("server");
    let admin = Api::login(&server, "admin", liteset_tests::ADMIN_PASSWORD).await;

    let mut slow = Vec::new();
    for _ in 0..3 {
        let mut sock = connect(&server).await;
        sock.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        slow.push(sock);
    }
    let started = Instant::now();
    let mut closed = vec![false; slow.len()];
    while started.elapsed() < Duration::from_secs(8) && closed.iter().any(|c| !c) {
        for (i, sock) in slow.iter_mut().enumerate() {
            if !closed[i] && sock.write_all(b"X-Slow: 1\r\n").await.is_err() {
                closed[i] = true;
            }
            let mut b = [0u8; 256];
            if let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(10), sock.read(&mut b)).await
                && n == 0
            {
                closed[i] = true;
            }
        }
        let (s, _) = admin.get("/api/v1/chart/").await;
        assert_eq!(s, StatusCode::OK, "served while others trickle");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(
        closed.iter().all(|c| *c),
        "header trickles still open after 8 s: {closed:?}"
    );

    // A body trickled by a signed-in client (chart data is CSRF-exempt).
    let mut sock = connect(&server).await;
    let head = format!(
        "POST /api/v1/chart/data HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
        admin.token
    );
    sock.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut got = String::new();
    while started.elapsed() < Duration::from_secs(8) && got.is_empty() {
        let _ = sock.write_all(b" ").await;
        got = answer(&mut sock, Duration::from_millis(250)).await;
    }
    assert!(got.starts_with("HTTP/1.1 408"), "{got:?}");
    assert!(!server.logs().contains("panicked"));
}
