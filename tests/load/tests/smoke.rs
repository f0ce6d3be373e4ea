//! The harness against the real server: `liteset serve` on the embedded default (SQLite
//! metadata, the examples with their "Sales overview" dashboard), S1 for a few seconds with
//! 4 users and a probe, then the summary it wrote.
//!
//! Needs the `liteset` binary (`bash tests/run -p liteset-load` builds it; or `LITESET_BIN`).

use std::collections::HashMap;

use liteset_load::report::{SummaryRow, read_summary};
use liteset_tests::{ADMIN_PASSWORD, Api, TestServer};
use reqwest::StatusCode;

#[tokio::test(flavor = "multi_thread")]
async fn s1_against_the_embedded_examples() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .expect("server");
    // Warm-up: the first chart data request compiles the wasm plugins (seconds in a debug
    // build on a busy machine), which would eat most of a 5 s run.
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, dash) = api.get("/api/v1/dashboard/sales-overview/charts").await;
    assert_eq!(s, StatusCode::OK, "{dash}");
    let charts = dash["result"].as_array().expect("charts");
    assert!(!charts.is_empty(), "{dash}");
    for c in charts {
        let id = c["id"].as_i64().expect("id");
        let (s, data) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
        assert_eq!(s, StatusCode::OK, "chart {id}: {data}");
    }

    let out = tempfile::tempdir().expect("temp dir");
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_liteset-load"))
        .args([
            "s1",
            "--url",
            server.base_url(),
            "--username",
            "admin",
            "--users",
            "4",
            "--duration",
            "6s",
            "--ramp-up",
            "1s",
            "--think-min",
            "200ms",
            "--think-max",
            "400ms",
            "--dashboard-slug-prefix",
            "",
            "--probe-users",
            "1",
            "--seed",
            "7",
            "--server-pid",
            &server.pid().to_string(),
            "--out",
        ])
        .arg(out.path())
        .env("LOAD_PASSWORD", ADMIN_PASSWORD)
        .status()
        .await
        .expect("running liteset-load");
    assert!(
        status.success(),
        "liteset-load failed: {status}\n{}",
        server.logs()
    );

    let rows = read_summary(&out.path().join("summary.csv")).expect("summary.csv");
    let by_label: HashMap<(&str, &str), &SummaryRow> = rows
        .iter()
        .map(|r| ((r.phase.as_str(), r.label.as_str()), r))
        .collect();
    let chart_data = by_label
        .get(&("run", "chart_data"))
        .unwrap_or_else(|| panic!("no chart_data row in {rows:#?}"));
    assert!(chart_data.count > 0, "{chart_data:?}");
    assert!(chart_data.req_s.is_some_and(|r| r > 0.0), "{chart_data:?}");
    for label in ["dashboard", "dashboard_charts", "dashboard_load"] {
        let row = by_label
            .get(&("run", label))
            .unwrap_or_else(|| panic!("no {label} row in {rows:#?}"));
        assert!(row.count > 0, "{row:?}");
    }
    // Every complete load fetched every chart of the dashboard.
    assert!(chart_data.count >= charts.len() * by_label[&("run", "dashboard_load")].count);
    let errors: usize = rows.iter().map(|r| r.errors).sum();
    assert_eq!(errors, 0, "errors in {rows:#?}\n{}", server.logs());
    let probes: usize = rows
        .iter()
        .filter(|r| r.label == "probe_csrf_token")
        .map(|r| r.count)
        .sum();
    assert!(probes >= 2, "probe requests: {probes} in {rows:#?}");

    let requests = std::fs::read_to_string(out.path().join("requests.csv")).expect("requests.csv");
    assert!(requests.starts_with("scenario,phase,label,user,start_ms,latency_ms,status,error"));
    assert!(requests.lines().count() > chart_data.count);
    let md = std::fs::read_to_string(out.path().join("summary.md")).expect("summary.md");
    assert!(md.contains("| run | chart_data |"), "{md}");
    assert!(md.contains("Light endpoint (probe)"), "{md}");
    assert!(md.contains("RSS peak"), "{md}");
    let resources =
        std::fs::read_to_string(out.path().join("resources.csv")).expect("resources.csv");
    assert!(resources.lines().count() >= 3, "{resources}");
}
