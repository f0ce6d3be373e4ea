//! Superset 6.0's own web frontend, served by the real binary, driven in Debian's chromium by
//! tests/browser/spa.mjs (playwright-core): log in, dashboard list, the example dashboard with
//! every chart rendered, Explore, SQL Lab; then the everyday flows of tests/browser/flows.mjs
//! against a PostgreSQL analytics database (connect it by URI and by form, dataset, chart,
//! dashboard edits, native filter, SQL Lab saved query and history, CSV export, delete), on
//! the embedded default and on PostgreSQL metadata. Any failed /api/v1 call fails it.
//!
//! `tests/run` installs chromium and the script's node_modules, installs the frontend with
//! `liteset frontend install` into `$HOME/.cache/liteset-frontend` and sets
//! `LITESET_TEST_FRONTEND_DIR`. Screenshots, a Playwright trace and report.json go to
//! `<target dir>/browser-artifacts` (or `LITESET_BROWSER_ARTIFACTS`); the path is printed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use liteset_tests::{ADMIN_PASSWORD, Metadata, TestServer, both_backends};

/// The whole script: five or so page loads on a shared 2-core machine, each step bounded by
/// the script itself.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// `<target>/browser-artifacts`: next to the profile directories of the target dir this test
/// was built into (`<target>/<profile>/deps/<test>`), so it survives the run and stays out of
/// the clone.
fn artifacts_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("LITESET_BROWSER_ARTIFACTS").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("current_exe");
    exe.ancestors()
        .nth(3)
        .unwrap_or_else(|| exe.parent().expect("parent"))
        .join("browser-artifacts")
}

/// A fresh PostgreSQL analytics database holding `flows_orders`; its URL.
async fn flows_database() -> url::Url {
    let url = liteset_tests::pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect to the analytics database");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE public.flows_orders (id int PRIMARY KEY, region text, amount int, \
             ordered_at date); \
             INSERT INTO public.flows_orders VALUES (1, 'north', 10, '2024-01-01'), \
             (2, 'south', 20, '2024-01-02'), (3, 'north', 5, '2024-01-03');",
        )
        .await
        .expect("create flows_orders");
    url::Url::parse(&url).expect("database URL")
}

both_backends! {
    async fn superset_frontend_pages_and_everyday_flows(meta: Metadata) {
        run_browser(meta).await;
    }
}

/// A free loopback port (bound, then released for the script's host pages).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// What every browser test needs, checked: the installed frontend
/// (`LITESET_TEST_FRONTEND_DIR`) and `tests/browser` with its node_modules.
fn browser_setup() -> (std::ffi::OsString, PathBuf) {
    let Some(frontend) = std::env::var_os("LITESET_TEST_FRONTEND_DIR").filter(|d| !d.is_empty())
    else {
        panic!(
            "LITESET_TEST_FRONTEND_DIR is not set: run the tests with `bash tests/run` (it installs \
             chromium, the script's node_modules and the Superset frontend)"
        );
    };
    // The runtime value first: worktrees sharing one target dir share compiled tests.
    let tests_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let browser_dir = tests_dir.join("browser");
    for package in ["playwright-core", "@superset-ui/embedded-sdk"] {
        assert!(
            browser_dir.join("node_modules").join(package).is_dir(),
            "{}/node_modules/{package} is missing: run `bash tests/run` (it runs `npm ci` there)",
            browser_dir.display()
        );
    }
    assert!(
        Path::new(&frontend).is_dir(),
        "LITESET_TEST_FRONTEND_DIR={} is not a directory: `liteset frontend install` it first",
        Path::new(&frontend).display()
    );
    (frontend, browser_dir)
}

/// A dashboard embedded in another site's page through `@superset-ui/embedded-sdk`, with a
/// guest token whose clause keeps one tenant's rows: the chart in the frame shows those rows
/// only; a page on an origin outside the allowed domains is refused (tests/browser/embedded.mjs).
#[tokio::test(flavor = "multi_thread")]
async fn embedded_dashboard_in_another_site_with_a_guest_token() {
    use reqwest::StatusCode;
    use serde_json::json;
    let (frontend, browser_dir) = browser_setup();
    let url = liteset_tests::pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE public.tenant_orders (id int, tenant text, amount int); \
             INSERT INTO public.tenant_orders VALUES (1, 'acme', 10), (2, 'bolt', 20), \
             (3, 'acme', 30), (4, 'cyan', 40), (5, 'bolt', 50);",
        )
        .await
        .expect("tenant_orders");
    let server = TestServer::builder()
        .env("LITESET_FRONTEND__DIR", frontend.to_string_lossy())
        .start()
        .await
        .unwrap();
    let admin = liteset_tests::Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let post = |path: &'static str, body: serde_json::Value| {
        let admin = &admin;
        async move {
            let (s, r) = admin.post(path, body.clone()).await;
            assert!(s.is_success(), "POST {path} {body}: {s} {r}");
            r
        }
    };
    let db = post(
        "/api/v1/database/",
        json!({"database_name": "tenants", "sqlalchemy_uri": url}),
    )
    .await["id"]
        .clone();
    let ds = post(
        "/api/v1/dataset/",
        json!({"database": db, "schema": "public", "table_name": "tenant_orders"}),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let dash = post(
        "/api/v1/dashboard/",
        json!({"dashboard_title": "Customer orders", "published": true}),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let params = json!({"viz_type": "table", "datasource": format!("{ds}__table"),
                        "query_mode": "raw", "all_columns": ["id", "tenant"],
                        "order_by_cols": [], "row_limit": 100});
    let qc = json!({"datasource": {"id": ds, "type": "table"}, "force": false,
                    "queries": [{"columns": ["id", "tenant"], "metrics": [], "orderby": [],
                                 "row_limit": 100}],
                    "form_data": params, "result_format": "json", "result_type": "full"});
    post(
        "/api/v1/chart/",
        json!({"slice_name": "Orders by tenant", "viz_type": "table", "datasource_id": ds,
               "datasource_type": "table", "params": params.to_string(),
               "query_context": qc.to_string(), "dashboards": [dash]}),
    )
    .await;
    let (host_port, other_port) = (free_port(), free_port());
    let (s, e) = admin
        .post(
            &format!("/api/v1/dashboard/{dash}/embedded"),
            json!({"allowed_domains": [format!("http://localhost:{host_port}")]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{e}");
    let uuid = e["result"]["uuid"].as_str().unwrap().to_owned();
    let token = post(
        "/api/v1/security/guest_token/",
        json!({"user": {"username": "portal-visitor"},
               "resources": [{"type": "dashboard", "id": uuid}],
               "rls": [{"clause": "tenant = 'acme'"}]}),
    )
    .await["token"]
        .as_str()
        .unwrap()
        .to_owned();

    let artifacts = artifacts_dir().join("embedded");
    println!("browser artifacts: {}", artifacts.display());
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(browser_dir.join("embedded.mjs"))
        .current_dir(&browser_dir)
        .env("LITESET_URL", server.base_url())
        .env("LITESET_EMBED_UUID", &uuid)
        .env("LITESET_GUEST_TOKEN", &token)
        .env("LITESET_HOST_PORT", host_port.to_string())
        .env("LITESET_OTHER_PORT", other_port.to_string())
        .env("LITESET_SEEN", "acme")
        .env("LITESET_UNSEEN", "bolt,cyan")
        .env("LITESET_BROWSER_ARTIFACTS", &artifacts)
        .kill_on_drop(true);
    let out = tokio::time::timeout(SCRIPT_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("embedded.mjs did not finish in {SCRIPT_TIMEOUT:?}"))
        .expect("running node (is it installed?)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("embedded: 2 passed, 0 failed"),
        "the embedded browser test failed ({}); screenshots in {}\n{stdout}\n{stderr}\n--- server log ---\n{}",
        out.status,
        artifacts.display(),
        server.logs()
    );
}

async fn run_browser(meta: Metadata) {
    let (frontend, browser_dir) = browser_setup();

    let server = TestServer::builder()
        .metadata(meta)
        .env("LITESET_FRONTEND__DIR", frontend.to_string_lossy())
        // The embedded default's example database, charts and "Sales overview" dashboard
        // (SQLite metadata only).
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();
    let examples = matches!(meta, Metadata::Sqlite);
    let pg = flows_database().await;
    let artifacts = artifacts_dir().join(match meta {
        Metadata::Sqlite => "sqlite",
        Metadata::Postgres => "postgres",
    });
    println!("browser artifacts: {}", artifacts.display());

    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(browser_dir.join("spa.mjs"))
        .current_dir(&browser_dir)
        .env("LITESET_URL", server.base_url())
        .env("LITESET_USER", "admin")
        .env("LITESET_PASSWORD", ADMIN_PASSWORD)
        .env("LITESET_BROWSER_ARTIFACTS", &artifacts)
        .env("LITESET_BROWSER_EXAMPLES", examples.to_string())
        .env("LITESET_PG_HOST", pg.host_str().unwrap_or("127.0.0.1"))
        .env("LITESET_PG_PORT", pg.port().unwrap_or(5432).to_string())
        .env("LITESET_PG_DB", pg.path().trim_start_matches('/'))
        .env("LITESET_PG_USER", pg.username())
        .kill_on_drop(true);
    let out = tokio::time::timeout(SCRIPT_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("spa.mjs did not finish in {SCRIPT_TIMEOUT:?}"))
        .expect("running node (is it installed?)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "the browser test failed ({}); screenshots in {}\n{stdout}\n{stderr}\n--- server log ---\n{}",
        out.status,
        artifacts.display(),
        server.logs()
    );
    assert!(
        stdout.contains(" 0 failed"),
        "no final `browser: N passed, 0 failed` line:\n{stdout}\n{stderr}"
    );
}

/// The waterfall example, next version: copied, with its version raised and its change labels
/// starting with `mark`, as an author's edit would, and built.
fn waterfall_next_version(mark: &str) -> PathBuf {
    let src = liteset_tests::tests_dir()
        .parent()
        .expect("checkout")
        .join("examples/waterfall");
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .ancestors()
        .nth(3)
        .expect("target dir")
        .join("fixture-plugins/waterfall-next-src");
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    let sdk = src.join("../../sdk").canonicalize().expect("sdk");
    let manifest = std::fs::read_to_string(src.join("Cargo.toml"))
        .expect("Cargo.toml")
        .replacen("\nversion = \"", "\nversion = \"9", 1)
        .replace(
            "path = \"../../sdk\"",
            &format!("path = {:?}", sdk.display().to_string()),
        );
    let code = std::fs::read_to_string(src.join("src/lib.rs")).expect("lib.rs");
    let edited = code.replace(
        "if d >= 0.0 { \"+\" }",
        &format!("if d >= 0.0 {{ {mark:?} }}"),
    );
    assert_ne!(
        code, edited,
        "the waterfall's change label is not where this test edits it"
    );
    // Written only when changed, so cargo's fingerprint keeps a rerun incremental.
    for (path, text) in [("Cargo.toml", manifest), ("src/lib.rs", edited)] {
        if std::fs::read_to_string(dir.join(path)).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(dir.join(path), text).expect("write");
        }
    }
    std::fs::copy(src.join("Cargo.lock"), dir.join("Cargo.lock")).expect("Cargo.lock");
    liteset_tests::build_component(
        &dir.display().to_string(),
        "liteset_example_waterfall",
        "",
        "waterfall-next",
    )
}

/// A wasm viz plugin as a chart type of the unmodified app (tests/browser/chart_app.mjs):
/// installed through the API, picked in Explore's gallery, drawn, saved to a dashboard,
/// replaced by a new version, and next to plugins that trap or time out.
#[tokio::test(flavor = "multi_thread")]
async fn custom_viz_plugin_in_the_app() {
    let (frontend, browser_dir) = browser_setup();
    let mark = "↑";
    let (v1, v2, fixture) = tokio::task::spawn_blocking(move || {
        (
            liteset_tests::build_component(
                "../examples/waterfall",
                "liteset_example_waterfall",
                "",
                "waterfall",
            ),
            waterfall_next_version(mark),
            liteset_tests::fixture_plugin("viz"),
        )
    })
    .await
    .expect("building the plugins");
    let server = TestServer::builder()
        .env("LITESET_FRONTEND__DIR", frontend.to_string_lossy())
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();
    let artifacts = artifacts_dir().join("chart-app");
    println!("browser artifacts: {}", artifacts.display());
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(browser_dir.join("spa.mjs"))
        .current_dir(&browser_dir)
        .env("LITESET_URL", server.base_url())
        .env("LITESET_USER", "admin")
        .env("LITESET_PASSWORD", ADMIN_PASSWORD)
        .env("LITESET_BROWSER_ARTIFACTS", &artifacts)
        .env("LITESET_BROWSER_STEPS", "viz")
        .env("LITESET_VIZ_WATERFALL", &v1)
        .env("LITESET_VIZ_WATERFALL2", &v2)
        .env("LITESET_VIZ_V2_MARK", mark)
        .env("LITESET_VIZ_FIXTURE", &fixture)
        .kill_on_drop(true);
    let out = tokio::time::timeout(SCRIPT_TIMEOUT, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("spa.mjs did not finish in {SCRIPT_TIMEOUT:?}"))
        .expect("running node (is it installed?)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("browser: 6 passed, 0 failed"),
        "the custom viz browser test failed ({}); screenshots in {}\n{stdout}\n{stderr}\n--- server log ---\n{}",
        out.status,
        artifacts.display(),
        server.logs()
    );
}
