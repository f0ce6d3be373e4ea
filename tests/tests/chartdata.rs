//! `POST /api/v1/chart/data` against Superset 6.0.0's own answers.
//!
//! `tests/fixtures/chartdata` is the recorded golden set, unchanged: the fixture data is loaded
//! into a fresh test PostgreSQL database, the datasets are created through the REST API exactly
//! as the recording's `create_datasets.py` did, and every case is replayed and compared by the
//! rules of that folder's README §4. `recorded/` holds further cases this project recorded from
//! a real Superset 6.0.0 the same way (its README says how), replayed alike. Post-processing and
//! time comparison run for real: the built-in wasm plugin and the offset queries.

use std::collections::BTreeMap;
use std::path::PathBuf;

use liteset_tests::{Api, TestServer, pg};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/chartdata")
}

fn read_json(path: &PathBuf) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Loads `fixture.sql` into a fresh database and returns its URL.
async fn load_fixture() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let db = url.rsplit('/').next().expect("db name").to_owned();
    // The recording's server ran in UTC; timestamptz bounds and DATE_TRUNC depend on it.
    client
        .batch_execute(&format!("ALTER DATABASE {db} SET timezone = 'UTC'"))
        .await
        .expect("timezone");
    let sql = std::fs::read_to_string(fixtures().join("fixture.sql")).expect("fixture.sql");
    client.batch_execute(&sql).await.expect("load fixture.sql");
    url
}

/// Creates the database and the datasets of `datasets.json` the way `create_datasets.py` does;
/// returns `{key: id}`.
async fn create_datasets(api: &Api, db_url: &str) -> BTreeMap<String, i64> {
    let spec = read_json(&fixtures().join("datasets.json"));
    let name = spec["database"]["database_name"].clone();
    create_datasets_from(api, db_url, &name, &spec).await
}

/// [`create_datasets`] from a given `datasets.json`-shaped spec (another engine's spelling of
/// the virtual dataset's SQL and the calculated columns), under database name `name`.
async fn create_datasets_from(
    api: &Api,
    db_url: &str,
    name: &Value,
    spec: &Value,
) -> BTreeMap<String, i64> {
    use reqwest::Method;
    let ok = |(status, body): (StatusCode, Value)| {
        assert!(status.is_success(), "{status}: {body}");
        body
    };
    let db = ok(api
        .call(
            Method::POST,
            "/api/v1/database/",
            Some(&json!({
                "database_name": name,
                "sqlalchemy_uri": db_url,
                "expose_in_sqllab": true,
                "allow_dml": false,
            })),
        )
        .await);
    let db_id = db["id"].as_i64().expect("database id");
    let mut ids = BTreeMap::new();
    for ds in spec["datasets"].as_array().expect("datasets") {
        let mut body = json!({"database": db_id});
        for (k, v) in ds["create"].as_object().expect("create") {
            body[k] = v.clone();
        }
        let created = ok(api
            .call(Method::POST, "/api/v1/dataset/", Some(&body))
            .await);
        let id = created["id"].as_i64().expect("dataset id");
        let cur = ok(api
            .call(Method::GET, &format!("/api/v1/dataset/{id}"), None)
            .await)["result"]
            .clone();
        let column_keys = [
            "id",
            "column_name",
            "type",
            "advanced_data_type",
            "verbose_name",
            "description",
            "expression",
            "extra",
            "filterable",
            "groupby",
            "is_active",
            "is_dttm",
            "python_date_format",
            "uuid",
        ];
        let metric_keys = [
            "id",
            "expression",
            "description",
            "extra",
            "metric_name",
            "metric_type",
            "d3format",
            "currency",
            "verbose_name",
            "warning_text",
            "uuid",
        ];
        let pick = |item: &Value, keys: &[&str]| {
            let mut out = serde_json::Map::new();
            for k in keys {
                if let Some(v) = item.get(*k).filter(|v| !v.is_null()) {
                    out.insert((*k).to_owned(), v.clone());
                }
            }
            out
        };
        let calc: Vec<&Value> = ds["calculated_columns"]
            .as_array()
            .expect("calc")
            .iter()
            .collect();
        let mut columns = Vec::new();
        let mut seen = Vec::new();
        for col in cur["columns"].as_array().expect("columns") {
            let mut item = pick(col, &column_keys);
            let name = col["column_name"].as_str().expect("name").to_owned();
            if let Some(over) = ds["column_overrides"].get(&name).and_then(Value::as_object) {
                item.extend(over.clone());
            }
            if let Some(c) = calc.iter().find(|c| c["column_name"] == name.as_str()) {
                item.extend(c.as_object().expect("calc").clone());
            }
            seen.push(name);
            columns.push(Value::Object(item));
        }
        for c in &calc {
            if !seen.iter().any(|s| c["column_name"] == s.as_str()) {
                columns.push((*c).clone());
            }
        }
        let mut metrics = Vec::new();
        let wanted: Vec<&Value> = ds["metrics"].as_array().expect("metrics").iter().collect();
        let mut seen = Vec::new();
        for m in cur["metrics"].as_array().expect("metrics") {
            let mut item = pick(m, &metric_keys);
            let name = m["metric_name"].as_str().expect("name").to_owned();
            if let Some(w) = wanted.iter().find(|w| w["metric_name"] == name.as_str()) {
                item.extend(w.as_object().expect("metric").clone());
            }
            seen.push(name);
            metrics.push(Value::Object(item));
        }
        for w in &wanted {
            if !seen.iter().any(|s| w["metric_name"] == s.as_str()) {
                metrics.push((*w).clone());
            }
        }
        let put =
            json!({"columns": columns, "metrics": metrics, "main_dttm_col": ds["main_dttm_col"]});
        ok(api
            .call(Method::PUT, &format!("/api/v1/dataset/{id}"), Some(&put))
            .await);
        ids.insert(ds["key"].as_str().expect("key").to_owned(), id);
    }
    ids
}

/// Replaces `"${dataset:<key>}"` strings (and substrings) by the dataset ids.
fn substitute(v: &Value, ids: &BTreeMap<String, i64>) -> Value {
    match v {
        Value::String(s) => {
            if let Some(key) = s
                .strip_prefix("${dataset:")
                .and_then(|r| r.strip_suffix('}'))
                && let Some(id) = ids.get(key)
            {
                return json!(id);
            }
            let mut out = s.clone();
            for (key, id) in ids {
                out = out.replace(&format!("${{dataset:{key}}}"), &id.to_string());
            }
            Value::String(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, ids)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), substitute(x, ids)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Numbers within `1e-9 · max(1, |b|)`, integers equal to floats of the same value.
fn same(a: &Value, b: &Value) -> bool {
    same_within(a, b, 1e-9)
}

/// [`same`] with numbers within `tol · max(1, |b|)`.
fn same_within(a: &Value, b: &Value, tol: f64) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            (x - y).abs() <= tol * y.abs().max(1.0)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_within(p, q, tol))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_within(v, w, tol)))
        }
        _ => a == b,
    }
}

/// How much of a recorded answer a replay must reproduce.
#[derive(Clone, Copy)]
enum Compare {
    /// Everything README §4 lists: the answer Superset gave on PostgreSQL.
    Superset,
    /// What Superset's semantics make engine-independent, on another engine holding the same
    /// rows: status, error types, column names, row counts and the data (numbers within
    /// `tol` relative), not SQL text, column types or CSV number formatting.
    Engine { tol: f64 },
}

/// Compares one result entry by README §4; returns the differences.
fn compare_entry(got: &Value, want: &Value, cmp: &Value, mode: Compare) -> Vec<String> {
    let mut diffs = Vec::new();
    let (full, tol) = match mode {
        Compare::Superset => (true, 1e-9),
        Compare::Engine { tol } => (false, tol),
    };
    let same = |a: &Value, b: &Value| same_within(a, b, tol);
    let any_cols = cmp["colnames_order"] == "any";
    let any_rows = cmp["row_order"] == "any";
    if let Some(wc) = want.get("colnames") {
        let gc = &got["colnames"];
        let ok = if any_cols {
            let mut a: Vec<String> = gc
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.to_string())
                .collect();
            let mut b: Vec<String> = wc
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| v.to_string())
                .collect();
            a.sort();
            b.sort();
            a == b
        } else {
            gc == wc
        };
        if !ok {
            diffs.push(format!("colnames: got {gc}, want {wc}"));
        } else if let Some(wt) = want.get("coltypes").filter(|_| full) {
            // Position by position against colnames.
            let types = |names: &Value, types: &Value| -> BTreeMap<String, Value> {
                names
                    .as_array()
                    .into_iter()
                    .flatten()
                    .zip(types.as_array().into_iter().flatten())
                    .map(|(n, t)| (n.to_string(), t.clone()))
                    .collect()
            };
            if types(gc, &got["coltypes"]) != types(wc, wt) {
                diffs.push(format!("coltypes: got {}, want {wt}", got["coltypes"]));
            }
        }
    }
    let keys: &[&str] = if full {
        &[
            "rowcount",
            "sql_rowcount",
            "status",
            "error",
            "indexnames",
            "result_format",
            "applied_filters",
            "rejected_filters",
            "label_map",
            "from_dttm",
            "to_dttm",
            "annotation_data",
            "applied_template_filters",
            "language",
        ]
    } else {
        &[
            "rowcount",
            "sql_rowcount",
            "status",
            "indexnames",
            "applied_filters",
            "rejected_filters",
            "from_dttm",
            "to_dttm",
        ]
    };
    for key in keys {
        if let Some(w) = want.get(*key)
            && !same(&got[*key], w)
        {
            diffs.push(format!("{key}: got {}, want {w}", got[*key]));
        }
    }
    if (cmp["query_text"] == "loose" || want.get("language").is_some())
        && got["query"].as_str().is_none_or(str::is_empty)
    {
        diffs.push("query: empty".into());
    }
    if let Some(wd) = want.get("data").and_then(Value::as_array) {
        let Some(gd) = got["data"].as_array() else {
            diffs.push("data: missing".into());
            return diffs;
        };
        if gd.len() != wd.len() {
            diffs.push(format!("data: {} rows, want {}", gd.len(), wd.len()));
        } else if any_rows {
            let mut used = vec![false; gd.len()];
            for w in wd {
                match (0..gd.len()).find(|&i| !used[i] && same(&gd[i], w)) {
                    Some(i) => used[i] = true,
                    None => {
                        diffs.push(format!("data: no row matches {w}"));
                        break;
                    }
                }
            }
        } else if let Some((i, (g, w))) = gd
            .iter()
            .zip(wd)
            .enumerate()
            .find(|(_, (g, w))| !same(g, w))
        {
            diffs.push(format!("data[{i}]: got {g}, want {w}"));
        }
    }
    diffs
}

fn unzip(bytes: &[u8]) -> BTreeMap<String, String> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("zip");
    let mut out = BTreeMap::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).expect("member");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut f, &mut text).expect("utf-8 member");
        out.insert(f.name().to_owned(), text);
    }
    out
}

/// The case files of `dir` (under the fixtures), sorted; each one listed in its `_index.json`.
fn case_files(dir: &str) -> Vec<PathBuf> {
    let index = read_json(&fixtures().join(dir).join("_index.json"));
    let listed = index["cases"].as_array().expect("cases").len();
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures().join(dir))
        .expect("cases dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().is_some_and(|n| n != "_index.json")
        })
        .collect();
    files.sort();
    assert_eq!(
        files.len(),
        listed,
        "every case indexed in {dir} is on disk"
    );
    files
}

/// Sends one recorded case (its datasets substituted by `ids`) and returns how the answer
/// differs from the recorded one under `mode`.
async fn replay_case(
    api: &Api,
    case: &Value,
    ids: &BTreeMap<String, i64>,
    mode: Compare,
) -> Vec<String> {
    let full = matches!(mode, Compare::Superset);
    let request = substitute(&case["request"], ids);
    let resp = api
        .request(reqwest::Method::POST, "/api/v1/chart/data")
        .json(&request)
        .send()
        .await
        .expect("send");
    let status = resp.status();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = resp.bytes().await.expect("body");
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let want_status = case["status"].as_u64().expect("status") as u16;
    // CSV cells spell numbers as the engine's types do (`12.5` or `12.50`): on another engine
    // the header and the number of lines are what Superset's semantics fix.
    let csv_shape = |text: &str| {
        let header = text.lines().next().unwrap_or_default().to_owned();
        (header, text.lines().count())
    };

    let mut diffs = Vec::new();
    if want_status == 500 {
        // Superset crashed; a compatible server refuses cleanly with a 4xx envelope.
        let envelope = body.get("message").is_some() || body.get("errors").is_some();
        if !status.is_client_error() || !envelope {
            diffs.push(format!("status {status} {body}: want a 4xx error envelope"));
        }
    } else if status.as_u16() != want_status {
        diffs.push(format!(
            "status: got {status}, want {want_status}: {}",
            String::from_utf8_lossy(&bytes)
        ));
    } else {
        let want = &case["response"];
        let cmp = &case["compare"];
        match case["response_kind"].as_str() {
            Some("csv") => {
                let text = String::from_utf8_lossy(&bytes);
                let want = want.as_str().unwrap_or_default();
                if !content_type.starts_with("text/csv") {
                    diffs.push(format!("content-type {content_type}"));
                }
                let differs = if full {
                    text != want
                } else {
                    csv_shape(&text) != csv_shape(want)
                };
                if differs {
                    diffs.push(format!("csv: got {text:?}, want {want:?}"));
                }
            }
            Some("zip") => {
                let got = unzip(&bytes);
                let want: BTreeMap<String, String> = want
                    .as_object()
                    .expect("zip members")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect();
                let differs = if full {
                    got != want
                } else {
                    let shape = |m: &BTreeMap<String, String>| -> Vec<(String, (String, usize))> {
                        m.iter().map(|(k, v)| (k.clone(), csv_shape(v))).collect()
                    };
                    shape(&got) != shape(&want)
                };
                if differs {
                    diffs.push(format!("zip: got {got:?}, want {want:?}"));
                }
            }
            _ if want_status != 200 => {
                if let Some(errors) = want.get("errors").and_then(Value::as_array) {
                    let got_errors = body["errors"].as_array().cloned().unwrap_or_default();
                    if got_errors.len() != errors.len() {
                        diffs.push(format!("errors: got {body}, want {want}"));
                    }
                    for (g, w) in got_errors.iter().zip(errors) {
                        for k in ["error_type", "level"] {
                            if g[k] != w[k] {
                                diffs.push(format!("errors.{k}: got {}, want {}", g[k], w[k]));
                            }
                        }
                        if g["message"].as_str().is_none_or(str::is_empty) {
                            diffs.push("errors.message empty".into());
                        }
                    }
                } else {
                    let got = body["message"].as_str().unwrap_or_default();
                    let wm = want["message"].as_str().unwrap_or_default();
                    let ok = match cmp["message"].as_str() {
                        Some("exact") if full => got == wm,
                        Some("prefix") if full => {
                            got.starts_with(cmp["message_prefix"].as_str().unwrap_or_default())
                        }
                        _ => !got.is_empty(),
                    };
                    if !ok {
                        diffs.push(format!("message: got {got:?}, want {wm:?}"));
                    }
                }
            }
            _ => {
                let got = body["result"].as_array().cloned().unwrap_or_default();
                let want = want["result"].as_array().cloned().unwrap_or_default();
                if got.len() != want.len() {
                    diffs.push(format!(
                        "result: {} entries, want {}: {body}",
                        got.len(),
                        want.len()
                    ));
                }
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    for d in compare_entry(g, w, cmp, mode) {
                        diffs.push(format!("result[{i}].{d}"));
                    }
                }
            }
        }
    }
    diffs
}

/// Every recorded case: the shared recording, then the cases this project recorded from
/// Superset 6.0.0 the same way (`recorded/record.py`).
fn all_cases() -> Vec<Value> {
    let mut files = case_files("cases");
    files.extend(case_files("recorded"));
    files.iter().map(read_json).collect()
}

#[tokio::test]
async fn golden_chart_data_cases_match_superset() {
    let db_url = load_fixture().await;
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", liteset_tests::ADMIN_PASSWORD).await;
    let ids = create_datasets(&api, &db_url).await;

    let cases = all_cases();
    let mut failures = Vec::new();
    let mut passed = 0;
    let started = std::time::Instant::now();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_default();
        let diffs = replay_case(&api, case, &ids, Compare::Superset).await;
        if diffs.is_empty() {
            passed += 1;
        } else {
            let mut d = diffs.join("\n    ");
            d.truncate(3000);
            failures.push(format!("{name}:\n    {d}"));
        }
    }
    eprintln!(
        "chart-data goldens: {passed} passed, {} failed of {}, in {} ms",
        failures.len(),
        cases.len(),
        started.elapsed().as_millis()
    );
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(passed, cases.len());
}

// ---------------------------------------------------------------------------------------------
// ClickHouse: a Distributed table over two shards answers as PostgreSQL does on the same rows
// ---------------------------------------------------------------------------------------------

/// SSB-style lineorder rows, deterministic: (id, order date, order time, region, category,
/// revenue, quantity, discount or NULL).
#[allow(clippy::type_complexity)]
fn lineorder_rows() -> Vec<(
    u32,
    String,
    String,
    &'static str,
    String,
    i64,
    u32,
    Option<f64>,
)> {
    const REGIONS: [&str; 5] = ["AMERICA", "ASIA", "EUROPE", "AFRICA", "MIDDLE EAST"];
    let start = chrono::NaiveDate::from_ymd_opt(2023, 1, 1).expect("date");
    (0..3000u32)
        .map(|i| {
            let day = start + chrono::Duration::days(i64::from(i * 7 % 730));
            let ts = day.and_hms_opt(0, 0, 0).expect("ts")
                + chrono::Duration::seconds(i64::from(i * 37 % 86_400));
            (
                i,
                day.format("%Y-%m-%d").to_string(),
                ts.format("%Y-%m-%d %H:%M:%S").to_string(),
                REGIONS[(i % 5) as usize],
                format!("MFGR#{}{}", 1 + i % 5, 1 + (i / 5) % 5),
                i64::from(i * 7919 % 100_000),
                1 + i % 50,
                (i % 13 != 0).then_some(f64::from(i % 10)),
            )
        })
        .collect()
}

#[tokio::test]
async fn clickhouse_distributed_chart_data_matches_postgres() {
    use liteset_tests::clickhouse::{exec, start_servers};
    let cluster = tokio::task::spawn_blocking(|| start_servers(2, "liteset_two"))
        .await
        .expect("join")
        .expect("two ClickHouse servers");
    let rows = lineorder_rows();

    // ClickHouse: a local table on each shard, the Distributed table on the first server.
    let db = "ssb";
    for http in &cluster.http {
        exec(http, &format!("CREATE DATABASE IF NOT EXISTS {db}"))
            .await
            .expect("db");
        exec(
            http,
            &format!(
                "CREATE TABLE {db}.lineorder_local (id UInt32, lo_orderdate Date, \
                 lo_orderts DateTime, c_region String, p_category String, \
                 lo_revenue Int64, lo_quantity UInt32, lo_discount Nullable(Float64)) \
                 ENGINE = MergeTree ORDER BY id"
            ),
        )
        .await
        .expect("local table");
    }
    let first = &cluster.http[0];
    exec(
        first,
        &format!(
            "CREATE TABLE {db}.lineorder AS {db}.lineorder_local \
             ENGINE = Distributed({}, {db}, lineorder_local, id)",
            cluster.cluster
        ),
    )
    .await
    .expect("distributed table");
    let values: Vec<String> = rows
        .iter()
        .map(|(id, d, ts, r, c, rev, q, disc)| {
            let disc = disc.map_or("NULL".to_owned(), |v| v.to_string());
            format!("({id}, '{d}', '{ts}', '{r}', '{c}', {rev}, {q}, {disc})")
        })
        .collect();
    // Synchronous, so every row is on its shard when the INSERT answers.
    exec(
        &format!("{first}?insert_distributed_sync=1"),
        &format!("INSERT INTO {db}.lineorder VALUES {}", values.join(", ")),
    )
    .await
    .expect("insert through the Distributed table");
    let total = exec(first, &format!("SELECT count() FROM {db}.lineorder"))
        .await
        .expect("count");
    assert_eq!(total.trim(), "3000");
    for http in &cluster.http {
        let local = exec(http, &format!("SELECT count() FROM {db}.lineorder_local"))
            .await
            .expect("local count");
        let n: u32 = local.trim().parse().expect("n");
        assert!(
            n > 500 && n < 2500,
            "each shard holds part of the rows: {n}"
        );
    }

    // PostgreSQL: the same rows.
    let pg_url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&pg_url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let pg_values: Vec<String> = rows
        .iter()
        .map(|(id, d, ts, r, c, rev, q, disc)| {
            let disc = disc.map_or("NULL".to_owned(), |v| v.to_string());
            format!("({id}, '{d}', '{ts}', '{r}', '{c}', {rev}, {q}, {disc})")
        })
        .collect();
    client
        .batch_execute(&format!(
            "CREATE TABLE lineorder (id integer PRIMARY KEY, lo_orderdate date, \
             lo_orderts timestamp, c_region text, p_category text, lo_revenue bigint, \
             lo_quantity integer, lo_discount double precision); \
             INSERT INTO lineorder VALUES {};",
            pg_values.join(", ")
        ))
        .await
        .expect("pg rows");

    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", liteset_tests::ADMIN_PASSWORD).await;
    let port = cluster.http[0]
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .expect("port")
        .to_owned();
    let mut ids = Vec::new();
    for (name, uri, schema) in [
        (
            "ch",
            format!("clickhousedb://default@127.0.0.1:{port}/{db}"),
            db,
        ),
        ("pg", pg_url.clone(), "public"),
    ] {
        let (s, d) = api
            .post(
                "/api/v1/database/",
                json!({"database_name": name, "sqlalchemy_uri": uri, "expose_in_sqllab": true}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{d}");
        let database = d["id"].as_i64().expect("id");
        let (s, ds) = api
            .post(
                "/api/v1/dataset/",
                json!({"database": database, "schema": schema, "table_name": "lineorder"}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{ds}");
        ids.push((database, ds["id"].as_i64().expect("dataset id")));
    }

    let sum = |col: &str, label: &str| {
        json!({"expressionType": "SIMPLE", "column": {"column_name": col},
               "aggregate": "SUM", "label": label})
    };
    let agg = |col: &str, f: &str, label: &str| {
        json!({"expressionType": "SIMPLE", "column": {"column_name": col},
               "aggregate": f, "label": label})
    };
    let axis = |col: &str, grain: &str| {
        json!({"columnType": "BASE_AXIS", "sqlExpression": col, "label": col,
               "expressionType": "SQL", "timeGrain": grain})
    };
    let queries = vec![
        // Group by, two metrics, order by a metric, row limit.
        json!({"columns": ["c_region"], "metrics": ["count", sum("lo_revenue", "revenue")],
               "orderby": [[sum("lo_revenue", "revenue"), false]], "row_limit": 10}),
        // Month grain on a Date column, time range, order by time.
        json!({"columns": [axis("lo_orderdate", "P1M")], "metrics": [sum("lo_quantity", "qty")],
               "orderby": [["lo_orderdate", true]],
               "filters": [{"col": "lo_orderdate", "op": "TEMPORAL_RANGE",
                            "val": "2023-03-01 : 2023-09-01"}]}),
        // Week grain on a DateTime column, IN and LIKE filters.
        json!({"columns": [axis("lo_orderts", "P1W"), "c_region"], "metrics": ["count"],
               "orderby": [["lo_orderts", true], ["c_region", true]],
               "filters": [{"col": "lo_orderts", "op": "TEMPORAL_RANGE",
                            "val": "2024-01-01T00:00:00 : 2024-03-01T00:00:00"},
                           {"col": "c_region", "op": "IN", "val": ["ASIA", "EUROPE"]},
                           {"col": "p_category", "op": "LIKE", "val": "MFGR#2%"}]}),
        // IS NULL, order by a column.
        json!({"columns": ["p_category"], "metrics": ["count"],
               "orderby": [["p_category", true]],
               "filters": [{"col": "lo_discount", "op": "IS NULL"}]}),
        // ILIKE, NOT IN, IS NOT NULL, MIN/MAX/AVG of a nullable float.
        json!({"columns": ["c_region"],
               "metrics": [agg("lo_discount", "MAX", "mx"), agg("lo_discount", "MIN", "mn"),
                           agg("lo_discount", "AVG", "av")],
               "orderby": [["c_region", true]],
               "filters": [{"col": "c_region", "op": "ILIKE", "val": "%a%"},
                           {"col": "p_category", "op": "NOT IN", "val": ["MFGR#11"]},
                           {"col": "lo_discount", "op": "IS NOT NULL"}]}),
        // Series limit: the top 2 regions by revenue, per category.
        json!({"columns": ["c_region", "p_category"], "metrics": [sum("lo_revenue", "revenue")],
               "series_columns": ["c_region"], "series_limit": 2,
               "series_limit_metric": sum("lo_revenue", "revenue"),
               "orderby": [[sum("lo_revenue", "revenue"), false]], "row_limit": 100}),
        // Day grain with a numeric comparison filter and a WHERE fragment.
        json!({"columns": [axis("lo_orderdate", "P1D")], "metrics": ["count"],
               "orderby": [["lo_orderdate", true]], "row_limit": 20,
               "filters": [{"col": "lo_quantity", "op": ">=", "val": 25}],
               "extras": {"where": "lo_revenue > 1000"}}),
        // Year and quarter grains.
        json!({"columns": [axis("lo_orderts", "P3M")], "metrics": [sum("lo_revenue", "revenue")],
               "orderby": [["lo_orderts", true]]}),
        // Raw rows, ordered, limited.
        json!({"columns": ["id", "c_region", "lo_revenue", "lo_orderdate"],
               "orderby": [["id", true]], "row_limit": 5,
               "filters": [{"col": "id", "op": "<", "val": 20}]}),
    ];
    for (i, q) in queries.iter().enumerate() {
        let mut answers = Vec::new();
        for (_, ds) in &ids {
            let (s, r) = api
                .post(
                    "/api/v1/chart/data",
                    json!({"datasource": {"id": ds, "type": "table"}, "queries": [q],
                           "result_type": "full"}),
                )
                .await;
            assert_eq!(s, StatusCode::OK, "query {i} on dataset {ds}: {r}");
            answers.push(r["result"][0].clone());
        }
        let (ch, pg) = (&answers[0], &answers[1]);
        assert!(
            ch["rowcount"].as_u64().is_some_and(|n| n > 0),
            "query {i} returns rows: {ch}"
        );
        assert_eq!(ch["colnames"], pg["colnames"], "query {i}");
        assert_eq!(ch["rowcount"], pg["rowcount"], "query {i}");
        assert!(
            same(&ch["data"], &pg["data"]),
            "query {i}: ClickHouse {}\nPostgreSQL {}\nSQL: {}",
            ch["data"],
            pg["data"],
            ch["query"]
        );
    }

    // SQL Lab on the Distributed table answers as PostgreSQL does.
    let sql = "SELECT c_region, count(*) AS n, sum(lo_revenue) AS revenue FROM lineorder \
               WHERE lo_orderdate >= '2023-06-01' GROUP BY c_region ORDER BY c_region";
    let mut answers = Vec::new();
    for (database, _) in &ids {
        let (s, r) = api
            .post(
                "/api/v1/sqllab/execute/",
                json!({"database_id": database, "sql": sql, "runAsync": false}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        answers.push(r["data"].clone());
    }
    assert_eq!(
        answers[0].as_array().map(Vec::len),
        Some(5),
        "{}",
        answers[0]
    );
    assert!(
        same(&answers[0], &answers[1]),
        "{} vs {}",
        answers[0],
        answers[1]
    );
}

// ---------------------------------------------------------------------------------------------
// The golden fixture on ClickHouse and MariaDB: the cases answer as Superset does on PostgreSQL
// ---------------------------------------------------------------------------------------------

/// Another engine's copy of the golden fixture.
struct GoldenEngine {
    name: &'static str,
    /// `CREATE TABLE` for `golden.products`, `golden.sales`, `golden.events`, in that order.
    ddl: [&'static str; 3],
    /// The virtual dataset's SQL in the engine's dialect.
    virtual_sql: &'static str,
    /// Calculated columns and metrics whose PostgreSQL expression the engine spells otherwise.
    expressions: &'static [(&'static str, &'static str)],
    /// Relative tolerance for numbers (see [`Compare::Engine`]).
    tol: f64,
}

/// The fixture's rows as SQL tuples, read from the PostgreSQL copy: `(table, tuples)`.
async fn golden_rows(pg_url: &str) -> Vec<(&'static str, Vec<String>)> {
    let (client, conn) = tokio_postgres::connect(pg_url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let tables = [
        (
            "products",
            "SELECT format('(%L, %L, %s, %L)', product, category, unit_price, launched) \
             FROM golden.products ORDER BY product",
        ),
        (
            "sales",
            "SELECT format('(%s, %L, %L, %L, %L, %s, %s, %s, %s)', id, \
             to_char(order_date, 'YYYY-MM-DD HH24:MI:SS'), region, product, channel, quantity, \
             revenue, coalesce(discount::text, 'NULL'), coalesce(is_promo::int::text, 'NULL')) \
             FROM golden.sales ORDER BY id",
        ),
        (
            "events",
            "SELECT format('(%s, %L, %L, %s, %L, %s, %s)', event_id, \
             to_char(event_ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), event_day, user_id, \
             event_type, coalesce(duration_ms::text, 'NULL'), score) \
             FROM golden.events ORDER BY event_id",
        ),
    ];
    let mut out = Vec::new();
    for (table, sql) in tables {
        let rows = client.query(sql, &[]).await.expect(table);
        out.push((table, rows.iter().map(|r| r.get::<_, String>(0)).collect()));
    }
    out
}

/// The `datasets.json` spec in `engine`'s dialect.
fn golden_spec(engine: &GoldenEngine) -> Value {
    let mut spec = read_json(&fixtures().join("datasets.json"));
    for ds in spec["datasets"].as_array_mut().expect("datasets") {
        if ds["create"].get("sql").is_some() {
            ds["create"]["sql"] = json!(engine.virtual_sql);
        }
        let spelled = |name: &Value| {
            engine
                .expressions
                .iter()
                .find(|(n, _)| name == *n)
                .map(|(_, e)| json!(e))
        };
        for c in ds["calculated_columns"].as_array_mut().expect("calc") {
            if let Some(e) = spelled(&c["column_name"]) {
                c["expression"] = e;
            }
        }
        for m in ds["metrics"].as_array_mut().expect("metrics") {
            if let Some(e) = spelled(&m["metric_name"]) {
                m["expression"] = e;
            }
        }
    }
    spec
}

/// Replays every case on `engine` (fixture loaded by the caller, reachable at `url`) and
/// returns `(passed, skipped)`; panics listing the cases that differ.
async fn replay_on_engine(api: &Api, engine: &GoldenEngine, url: &str) -> (usize, usize) {
    let ids = create_datasets_from(
        api,
        url,
        &json!(format!("golden_{}", engine.name)),
        &golden_spec(engine),
    )
    .await;
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    let started = std::time::Instant::now();
    for case in all_cases() {
        let name = case["name"].as_str().unwrap_or_default().to_owned();
        if let Some(why) = engine_specific(engine.name, &case) {
            eprintln!("{}: {name} not compared: {why}", engine.name);
            skipped += 1;
            continue;
        }
        let mut case = case;
        if order_is_engine_specific(&case) {
            case["compare"]["row_order"] = json!("any");
        }
        let diffs = replay_case(api, &case, &ids, Compare::Engine { tol: engine.tol }).await;
        if diffs.is_empty() {
            passed += 1;
        } else {
            let mut d = diffs.join("\n    ");
            d.truncate(1500);
            failures.push(format!("{name}:\n    {d}"));
        }
    }
    eprintln!(
        "chart-data goldens on {}: {passed} passed, {} failed, {skipped} engine-specific, in {} ms",
        engine.name,
        failures.len(),
        started.elapsed().as_millis()
    );
    assert!(
        failures.is_empty(),
        "{}: {} failing cases:\n{}",
        engine.name,
        failures.len(),
        failures.join("\n")
    );
    (passed, skipped)
}

/// Whether the recorded rows' order is partly the engine's own: rows equal in the query's
/// sort keys (ties keep no defined order; numbers equal within [`same`]) or NULL in one (PostgreSQL sorts NULL last
/// ascending, MySQL first). Their order is then not compared, their contents are.
fn order_is_engine_specific(case: &Value) -> bool {
    let Some(query) = case["request"]["queries"].get(0) else {
        return false;
    };
    let keys: Vec<String> = query["orderby"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| match &o[0] {
            Value::String(name) => Some(name.clone()),
            other => other["label"].as_str().map(str::to_owned),
        })
        .collect();
    let Some(rows) = case["response"]["result"][0]["data"].as_array() else {
        return false;
    };
    if keys.is_empty() || rows.iter().any(|r| keys.iter().any(|k| r.get(k).is_none())) {
        return false;
    }
    let tuples: Vec<Vec<&Value>> = rows
        .iter()
        .map(|r| keys.iter().map(|k| &r[k]).collect())
        .collect();
    // Equal as numbers within rounding: an average computed in another order may differ in
    // its last digits, and so sort the other way round.
    let tie = |a: &Vec<&Value>, b: &Vec<&Value>| a.iter().zip(b).all(|(x, y)| same(x, y));
    tuples.iter().flatten().any(|v| v.is_null())
        || tuples
            .iter()
            .enumerate()
            .any(|(i, t)| tuples[..i].iter().any(|u| tie(t, u)))
}

/// Why a case's answer is not Superset's engine-independent one on ClickHouse or MySQL, or
/// `None`:
/// - booleans: ClickHouse 18.16 has no boolean type and MySQL's BOOLEAN is TINYINT(1), so a
///   boolean column (asked for, or in a sample of all columns) reads 1/0, not true/false;
/// - the case's own SQL is PostgreSQL's (`::` casts, time-zone offsets in literals);
/// - `result_type: timegrains` lists the engine's own time grains;
/// - on ClickHouse `NULL IN (…)` is false, not NULL, so `NOT IN` keeps the NULL rows (as
///   Superset's SQL does there too);
/// - Superset's MySQL week grain (`P1W`) starts on Sunday, PostgreSQL's on Monday;
/// - MySQL converts what PostgreSQL refuses as a type error (`SUM` of a text column).
fn engine_specific(engine: &str, case: &Value) -> Option<&'static str> {
    let request = case["request"].to_string();
    let response = case["response"].to_string();
    if ["is_promo", "is_long"]
        .iter()
        .any(|c| request.contains(c) || response.contains(c))
    {
        Some("a boolean column reads 1/0 on this engine")
    } else if request.contains("::") || request.contains("+00'") {
        Some("its SQL is PostgreSQL's dialect")
    } else if case["request"]["result_type"] == "timegrains" {
        Some("it lists the engine's own time grains")
    } else if engine == "clickhouse" && request.contains("\"NOT IN\"") {
        Some("NOT IN keeps NULL rows on ClickHouse")
    } else if engine == "mariadb" && request.contains("\"P1W\"") {
        Some("Superset's MySQL week grain starts on Sunday")
    } else if engine == "mariadb"
        && case["response"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Error: function"))
    {
        Some("MySQL converts types PostgreSQL refuses (SUM of text)")
    } else {
        None
    }
}

#[tokio::test]
async fn golden_chart_data_cases_on_clickhouse_and_mariadb() {
    let pg_url = load_fixture().await;
    let rows = golden_rows(&pg_url).await;
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", liteset_tests::ADMIN_PASSWORD).await;

    // ClickHouse: DateTime in the server's time zone (UTC), as the recording's PostgreSQL was.
    let clickhouse = GoldenEngine {
        name: "clickhouse",
        ddl: [
            "CREATE TABLE golden.products (product String, category String, \
             unit_price Decimal(10, 2), launched Date) ENGINE = MergeTree ORDER BY product",
            "CREATE TABLE golden.sales (id Int32, order_date DateTime, region Nullable(String), \
             product String, channel String, quantity Int32, revenue Decimal(12, 2), \
             discount Nullable(Float64), is_promo Nullable(UInt8)) ENGINE = MergeTree ORDER BY id",
            "CREATE TABLE golden.events (event_id Int32, event_ts DateTime, event_day Date, \
             user_id Int32, event_type String, duration_ms Nullable(Int64), score Float64) \
             ENGINE = MergeTree ORDER BY event_id",
        ],
        // Aggregates aliased apart from their columns: ClickHouse resolves an alias anywhere in
        // the query, so `sum(revenue) AS revenue` would nest the aggregate in itself.
        virtual_sql: "SELECT category, region, channel, order_month, orders, units_ AS units, \
                      revenue_ AS revenue FROM (SELECT category, region, channel, \
                      toStartOfMonth(order_date) AS order_month, count() AS orders, \
                      sum(quantity) AS units_, sum(revenue) AS revenue_ FROM golden.sales \
                      ALL INNER JOIN (SELECT product, category FROM golden.products) \
                      USING (product) GROUP BY category, region, channel, order_month)",
        expressions: &[
            (
                "revenue_per_unit",
                "toFloat64(revenue) / nullIf(quantity, 0)",
            ),
            ("order_day", "toDate(order_date)"),
            ("event_hour", "toHour(event_ts)"),
            // Decimal / integer stays Decimal(…, 2) in ClickHouse.
            ("avg_order_value", "toFloat64(SUM(revenue)) / SUM(orders)"),
        ],
        tol: 1e-9,
    };
    let ch = liteset_tests::clickhouse::clickhouse().await;
    ch.exec("DROP DATABASE IF EXISTS golden").await;
    ch.exec("CREATE DATABASE golden").await;
    for ddl in clickhouse.ddl {
        ch.exec(ddl).await;
    }
    for (table, tuples) in &rows {
        ch.exec(&format!(
            "INSERT INTO golden.{table} VALUES {}",
            tuples.join(", ")
        ))
        .await;
    }
    let (passed, _) =
        replay_on_engine(&api, &clickhouse, &ch.url_for("default", None, "golden")).await;
    assert!(passed >= 80, "ClickHouse replayed {passed} cases");

    let Some(my) = liteset_tests::mariadb::mariadb() else {
        return;
    };
    // MariaDB: binary collation, so text compares and sorts as in the recording's C locale.
    let mariadb = GoldenEngine {
        name: "mariadb",
        ddl: [
            "CREATE TABLE golden.products (product VARCHAR(64) PRIMARY KEY, \
             category VARCHAR(32) NOT NULL, unit_price DECIMAL(10, 2) NOT NULL, \
             launched DATE NOT NULL)",
            "CREATE TABLE golden.sales (id INT PRIMARY KEY, order_date DATETIME NOT NULL, \
             region VARCHAR(16), product VARCHAR(64) NOT NULL, channel VARCHAR(16) NOT NULL, \
             quantity INT NOT NULL, revenue DECIMAL(12, 2) NOT NULL, discount DOUBLE, \
             is_promo BOOLEAN)",
            "CREATE TABLE golden.events (event_id INT PRIMARY KEY, event_ts TIMESTAMP NOT NULL, \
             event_day DATE NOT NULL, user_id INT NOT NULL, event_type VARCHAR(16) NOT NULL, \
             duration_ms BIGINT, score DOUBLE NOT NULL)",
        ],
        virtual_sql: "SELECT p.category, s.region, s.channel, \
                      CAST(DATE_FORMAT(s.order_date, '%Y-%m-01') AS DATETIME) AS order_month, \
                      COUNT(*) AS orders, SUM(s.quantity) AS units, SUM(s.revenue) AS revenue \
                      FROM golden.sales AS s JOIN golden.products AS p ON p.product = s.product \
                      GROUP BY p.category, s.region, s.channel, order_month",
        expressions: &[("revenue_per_unit", "(revenue + 0e0) / NULLIF(quantity, 0)")],
        // MySQL divides DECIMALs to `div_precision_increment` (4) more digits: AVG of an
        // integer column is exact to 1e-4, not to PostgreSQL's 16 digits.
        tol: 1e-4,
    };
    let admin_db = add_dml_database(&api, "mariadb_admin", &my.admin_url).await;
    for sql in [
        "DROP DATABASE IF EXISTS golden".to_owned(),
        "CREATE DATABASE golden CHARACTER SET utf8mb4 COLLATE utf8mb4_bin".to_owned(),
    ]
    .into_iter()
    .chain(mariadb.ddl.iter().map(|d| d.to_string()))
    .chain(rows.iter().flat_map(|(table, tuples)| {
        tuples
            .chunks(500)
            .map(move |c| format!("INSERT INTO golden.{table} VALUES {}", c.join(", ")))
    })) {
        let (s, r) = api
            .post(
                "/api/v1/sqllab/execute/",
                json!({"database_id": admin_db, "sql": sql, "runAsync": false}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{}: {r}", &sql[..sql.len().min(200)]);
    }
    let url = match my.admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/golden"),
        None => panic!("no database in {}", my.admin_url),
    };
    let (passed, _) = replay_on_engine(&api, &mariadb, &url).await;
    assert!(passed >= 80, "MariaDB replayed {passed} cases");
}

/// A database with DML allowed (for loading a fixture through SQL Lab); returns its id.
async fn add_dml_database(api: &Api, name: &str, url: &str) -> i64 {
    let (s, d) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": name, "sqlalchemy_uri": url, "expose_in_sqllab": true,
                   "allow_dml": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    d["id"].as_i64().expect("id")
}
