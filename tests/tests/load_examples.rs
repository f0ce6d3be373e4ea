//! `liteset load-examples`: the Star Schema Benchmark generated into a real PostgreSQL and
//! registered in PostgreSQL metadata, then served: datasets, dashboards with their charts,
//! chart data equal to the same SQL run directly, the sleep charts allowed by the per-database
//! `disallowed_functions` override (and refused without it), and a rerun without duplicates.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use liteset_tests::{ADMIN_PASSWORD, Api, SECRET_KEY, TestServer, liteset_bin, pg};
use reqwest::StatusCode;
use serde_json::Value;

/// Runs `liteset load-examples` with a clean `LITESET_*` environment plus `env`.
fn load_examples(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(liteset_bin());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("LITESET_")) {
        cmd.env_remove(k);
    }
    cmd.arg("load-examples")
        .args(args)
        .envs(env.iter().copied());
    cmd.output().expect("run liteset load-examples")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to the SSB database");
    tokio::spawn(conn);
    client
}

async fn count(client: &tokio_postgres::Client, table: &str) -> i64 {
    client
        .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
        .await
        .expect("count")
        .get(0)
}

/// The value printed after `name=` on a line of the command's stdout.
fn printed(stdout: &str, name: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("{name} not printed:\n{stdout}"))
        .to_owned()
}

fn list(body: &Value) -> &Vec<Value> {
    body["result"].as_array().expect("result list")
}

/// (count of datasets, charts, dashboards) as the API lists them.
async fn catalog_counts(api: &Api) -> (u64, u64, u64) {
    let mut counts = Vec::new();
    for res in ["dataset", "chart", "dashboard"] {
        let (s, body) = api.get(&format!("/api/v1/{res}/?q=(page_size:100)")).await;
        assert_eq!(s, StatusCode::OK, "{res}: {body}");
        counts.push(body["count"].as_u64().expect("count"));
    }
    (counts[0], counts[1], counts[2])
}

#[tokio::test]
async fn load_examples_serves_the_star_schema_benchmark() {
    let pg = pg().await;
    let ssb_url = pg.fresh_database().await;
    let metadata_url = pg.fresh_database().await;
    let data = tempfile::tempdir().expect("tempdir");
    let data_dir = data.path().to_str().expect("utf-8 path");
    let env = [
        ("LITESET_DATA_DIR", data_dir),
        ("LITESET_METADATA_URL", metadata_url.as_str()),
        ("LITESET_SECRET_KEY", SECRET_KEY),
    ];
    let args = ["--database-url", ssb_url.as_str(), "--scale-factor", "0.01"];

    let started = Instant::now();
    let out = load_examples(&args, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    eprintln!("load-examples at SF 0.01: {:?}", started.elapsed());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let denied = printed(
        &stdout,
        "LITESET_QUERY__DATABASES__SSB__DISALLOWED_FUNCTIONS",
    );
    assert!(!denied.split(',').any(|f| f == "pg_sleep"), "{denied}");
    assert!(denied.split(',').any(|f| f == "pg_sleep_for"), "{denied}");
    assert!(denied.split(',').any(|f| f == "version"), "{denied}");
    assert_eq!(
        printed(&stdout, "LITESET_QUERY__DATABASES__SSB__POOL_SIZE"),
        "60"
    );
    assert!(stdout.contains("82 charts"), "{stdout}");

    // The tables, straight from PostgreSQL.
    let ssb = connect(&ssb_url).await;
    assert_eq!(count(&ssb, "lineorder").await, 60_000);
    assert_eq!(count(&ssb, "dates").await, 2_556);
    assert_eq!(count(&ssb, "customer").await, 300);
    assert_eq!(count(&ssb, "supplier").await, 20);
    let q1_1: i64 = ssb
        .query_one(
            "SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder, dates \
             WHERE lo_orderdate = d_datekey AND d_year = 1993 AND lo_discount BETWEEN 1 AND 3 \
             AND lo_quantity < 25",
            &[],
        )
        .await
        .expect("Q1.1")
        .get(0);
    assert!(q1_1 > 0);

    let server = TestServer::builder()
        .env("LITESET_METADATA_URL", &metadata_url)
        .env(
            "LITESET_QUERY__DATABASES__SSB__DISALLOWED_FUNCTIONS",
            &denied,
        )
        .env("LITESET_QUERY__DATABASES__SSB__POOL_SIZE", "60")
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    assert_eq!(catalog_counts(&api).await, (19, 82, 10));

    let (_, datasets) = api.get("/api/v1/dataset/?q=(page_size:100)").await;
    let mut names: Vec<&str> = list(&datasets)
        .iter()
        .map(|d| d["table_name"].as_str().expect("table_name"))
        .collect();
    names.sort_unstable();
    let mut expected: Vec<String> = [
        "1_1", "1_2", "1_3", "2_1", "2_2", "2_3", "3_1", "3_2", "3_3", "3_4", "4_1", "4_2", "4_3",
    ]
    .iter()
    .map(|q| format!("ssb_q{q}"))
    .chain(
        [
            "sleep_10ms",
            "sleep_50ms",
            "sleep_100ms",
            "sleep_500ms",
            "sleep_1s",
            "sleep_5s",
        ]
        .map(String::from),
    )
    .collect();
    expected.sort_unstable();
    assert_eq!(names, expected);

    // Dashboards ssb-1 … ssb-10 with 3, 4, …, 11 and 13 charts.
    let sizes = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13];
    let mut on_dashboards = Vec::new();
    for (i, size) in sizes.iter().enumerate() {
        let slug = format!("ssb-{}", i + 1);
        let (s, dash) = api.get(&format!("/api/v1/dashboard/{slug}")).await;
        assert_eq!(s, StatusCode::OK, "{slug}: {dash}");
        assert_eq!(
            dash["result"]["dashboard_title"],
            format!("SSB dashboard {} ({size} charts)", i + 1)
        );
        let position: Value = serde_json::from_str(
            dash["result"]["position_json"]
                .as_str()
                .expect("position_json"),
        )
        .expect("position is JSON");
        let (s, charts) = api.get(&format!("/api/v1/dashboard/{slug}/charts")).await;
        assert_eq!(s, StatusCode::OK, "{slug}: {charts}");
        assert_eq!(list(&charts).len(), *size, "{slug}: {charts}");
        for c in list(&charts) {
            let id = c["id"].as_i64().expect("id");
            // Every linked chart sits in the layout under its id.
            assert!(
                position
                    .as_object()
                    .expect("position object")
                    .values()
                    .any(|n| n["type"] == "CHART" && n["meta"]["chartId"] == id),
                "{slug}: chart {id} not in the layout"
            );
            on_dashboards.push(id);
        }
    }
    on_dashboards.sort_unstable();
    on_dashboards.dedup();
    assert_eq!(on_dashboards.len(), sizes.iter().sum::<usize>());

    // Every SSB chart answers rows; Q1.1's revenue is what PostgreSQL says.
    let (_, charts) = api.get("/api/v1/chart/?q=(page_size:100)").await;
    let mut q1_1_checked = 0;
    let mut viz_types = std::collections::BTreeSet::new();
    for c in list(&charts) {
        let name = c["slice_name"].as_str().expect("slice_name");
        if name.starts_with("Sleep ") {
            continue;
        }
        viz_types.insert(c["viz_type"].as_str().expect("viz_type").to_owned());
        let id = c["id"].as_i64().expect("id");
        let (s, data) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
        assert_eq!(s, StatusCode::OK, "{name}: {data}");
        let rows = data["result"][0]["data"].as_array().expect("data rows");
        assert!(!rows.is_empty(), "{name}: no rows: {data}");
        if name.contains(" Q1.1: ") {
            let row = &rows[0];
            let value = row
                .get("revenue")
                .or_else(|| row.get("sum_revenue"))
                .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()))
                .unwrap_or_else(|| panic!("{name}: {row}"));
            assert_eq!(value, q1_1 as f64, "{name}");
            q1_1_checked += 1;
        }
    }
    assert!(q1_1_checked >= 2, "Q1.1 charts checked: {q1_1_checked}");
    assert_eq!(
        viz_types.into_iter().collect::<Vec<_>>(),
        ["big_number_total", "echarts_timeseries_bar", "pie", "table"]
    );

    // The sleep charts: one pg_sleep per request, allowed by the override.
    let sleep_charts: Vec<(String, i64)> = list(&charts)
        .iter()
        .filter_map(|c| {
            let name = c["slice_name"].as_str()?;
            name.starts_with("Sleep ")
                .then(|| (name.to_owned(), c["id"].as_i64().expect("id")))
        })
        .collect();
    let mut sleep_names: Vec<&str> = sleep_charts.iter().map(|(n, _)| n.as_str()).collect();
    sleep_names.sort_unstable();
    let mut expected = [
        "Sleep 10 ms",
        "Sleep 50 ms",
        "Sleep 100 ms",
        "Sleep 500 ms",
        "Sleep 1000 ms",
        "Sleep 5000 ms",
    ];
    expected.sort_unstable();
    assert_eq!(sleep_names, expected);
    let sleep_100 = sleep_charts
        .iter()
        .find(|(n, _)| n == "Sleep 100 ms")
        .map(|(_, id)| *id)
        .expect("Sleep 100 ms");
    let started = Instant::now();
    let (s, data) = api
        .get(&format!("/api/v1/chart/{sleep_100}/data/?force=true"))
        .await;
    let took = started.elapsed();
    assert_eq!(s, StatusCode::OK, "{data}");
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert_eq!(data["result"][0]["data"], serde_json::json!([{"one": 1}]));
    let sql = data["result"][0]["query"].as_str().expect("query");
    assert_eq!(sql.matches("pg_sleep").count(), 1, "{sql}");

    // Without the override, pg_sleep is refused.
    let strict = TestServer::builder()
        .env("LITESET_METADATA_URL", &metadata_url)
        .start()
        .await
        .expect("server without the override");
    let strict_api = Api::login(&strict, "admin", ADMIN_PASSWORD).await;
    let (s, body) = strict_api
        .get(&format!("/api/v1/chart/{sleep_100}/data/"))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.to_string().contains("pg_sleep"), "{body}");

    // A second run keeps the tables and leaves the catalog as it was.
    let out = load_examples(&args, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("already loaded, kept"),
        "{}",
        text(&out)
    );
    // --force regenerates the same rows.
    let forced: Vec<&str> = args.iter().copied().chain(["--force"]).collect();
    let out = load_examples(&forced, &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("tables created"),
        "{}",
        text(&out)
    );
    assert_eq!(count(&ssb, "lineorder").await, 60_000);
    let again: i64 = ssb
        .query_one(
            "SELECT SUM(lo_extendedprice * lo_discount) FROM lineorder, dates \
             WHERE lo_orderdate = d_datekey AND d_year = 1993 AND lo_discount BETWEEN 1 AND 3 \
             AND lo_quantity < 25",
            &[],
        )
        .await
        .expect("Q1.1 again")
        .get(0);
    assert_eq!(again, q1_1, "same scale factor, same rows");
    assert_eq!(catalog_counts(&api).await, (19, 82, 10));
    for (i, size) in sizes.iter().enumerate() {
        let (_, charts) = api
            .get(&format!("/api/v1/dashboard/ssb-{}/charts", i + 1))
            .await;
        assert_eq!(list(&charts).len(), *size);
    }
    // One database, however often the command ran.
    let (_, dbs) = api.get("/api/v1/database/").await;
    assert_eq!(list(&dbs).len(), 1, "{dbs}");
    assert_eq!(list(&dbs)[0]["database_name"], "ssb");
}

#[tokio::test]
async fn load_examples_reports_bad_arguments_and_unreachable_databases() {
    let data = tempfile::tempdir().expect("tempdir");
    let data_dir = data.path().to_str().expect("utf-8 path");
    let env = [("LITESET_DATA_DIR", data_dir)];

    let out = load_examples(
        &[
            "--database-url",
            "postgresql://u:pw@127.0.0.1:1/db",
            "--scale-factor",
            "0",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--scale-factor"), "{}", text(&out));

    let out = load_examples(&["--database-url", "mysql://u@h/db"], &env);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--database-url"), "{}", text(&out));

    // Nothing listens on port 1: exit 1, a clear message, the password masked.
    let out = load_examples(
        &[
            "--database-url",
            "postgresql://ssb:hunter2secret@127.0.0.1:1/ssb",
            "--scale-factor",
            "0.01",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let msg = text(&out);
    assert!(
        msg.contains("cannot connect to postgresql://ssb:XXXXXXXXXX@127.0.0.1:1/ssb"),
        "{msg}"
    );
    assert!(!msg.contains("hunter2secret"), "{msg}");
}

#[tokio::test]
async fn the_password_is_sealed_and_never_printed() {
    let pg = pg().await;
    let ssb_url = pg.fresh_database().await;
    let db = ssb_url
        .rsplit('/')
        .next()
        .expect("database name")
        .to_owned();
    // A role that must give its password (the test cluster trusts only its superuser).
    let role = format!("ssb_{}", &db[2..14]);
    let admin = connect(&ssb_url).await;
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN PASSWORD 'ssb-s3cret-pw'; \
             GRANT ALL ON SCHEMA public TO {role}"
        ))
        .await
        .expect("role");
    let base = pg.url().rsplit_once('/').expect("url").0;
    let host = base.rsplit_once('@').expect("host").1;
    let url = format!("postgresql://{role}:ssb-s3cret-pw@{host}/{db}");

    let data = tempfile::tempdir().expect("tempdir");
    let data_dir = data.path().to_str().expect("utf-8 path");
    let out = load_examples(
        &[
            "--database-url",
            &url,
            "--scale-factor",
            "0.001",
            "--database-name",
            "ssb_small",
        ],
        &[("LITESET_DATA_DIR", data_dir)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let msg = text(&out);
    assert!(!msg.contains("ssb-s3cret-pw"), "{msg}");
    assert!(msg.contains("XXXXXXXXXX"), "{msg}");
    assert!(
        msg.contains("LITESET_QUERY__DATABASES__SSB_SMALL__DISALLOWED_FUNCTIONS="),
        "{msg}"
    );

    // The embedded store (SQLite in the data dir) serves it with the sealed password.
    let server = TestServer::builder()
        .env("LITESET_DATA_DIR", data_dir)
        .env_remove("LITESET_SECRET_KEY")
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (_, dbs) = api.get("/api/v1/database/").await;
    assert!(!dbs.to_string().contains("ssb-s3cret-pw"), "{dbs}");
    let (_, dash) = api.get("/api/v1/dashboard/ssb-1/charts").await;
    let id = list(&dash)[0]["id"].as_i64().expect("chart id");
    let (s, data) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
    assert_eq!(s, StatusCode::OK, "{data}");
    assert!(!server.logs().contains("ssb-s3cret-pw"));
}
