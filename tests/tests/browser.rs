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

async fn run_browser(meta: Metadata) {
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
    assert!(
        browser_dir.join("node_modules/playwright-core").is_dir(),
        "{}/node_modules is missing: run `bash tests/run` (it runs `npm ci` there)",
        browser_dir.display()
    );
    assert!(
        Path::new(&frontend).is_dir(),
        "LITESET_TEST_FRONTEND_DIR={} is not a directory: `liteset frontend install` it first",
        Path::new(&frontend).display()
    );

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
