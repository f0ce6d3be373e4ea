//! Every golden post-processing vector (`tests/fixtures/postprocessing`, produced by Superset
//! 6.0's own code) through the real path: the query context schema, the wasm sandbox running
//! the built-in plugin (compiled from `plugins/postprocessing` by `build.rs`), and the frame
//! shaping chart data applies afterwards. No native shortcut: the plugin code only runs as the
//! embedded component.

use std::path::PathBuf;

use chrono::DateTime;
use liteset::config::PluginConfig;
use liteset::engines::{Cell, GenericType};
use liteset::plugins::{PluginError, Plugins, pipeline};
use liteset::query::Datasource;
use liteset::query::context;
use liteset::query::frame::{Frame, Index};
use liteset::store::{Location, Store};
use liteset::uri::Engine;
use serde_json::{Value, json};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/postprocessing")
}

/// The frame Superset's operations received, as the query layer would hand it over.
fn input_frame(input: &Value) -> Frame {
    let colnames: Vec<String> = input["colnames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    let coltypes = input["coltypes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| match t.as_u64() {
            Some(0) => GenericType::Numeric,
            Some(2) => GenericType::Temporal,
            Some(3) => GenericType::Boolean,
            _ => GenericType::String,
        })
        .collect();
    let dtypes = &input["pandas_dtypes"];
    let rows = input["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rec| {
            colnames
                .iter()
                .map(|c| {
                    let v = &rec[c];
                    let dtype = dtypes[c].as_str().unwrap_or("object");
                    match v {
                        Value::Null => Cell::Null,
                        _ if dtype.starts_with("datetime64") => {
                            let ms = v.as_f64().unwrap() as i64;
                            Cell::Timestamp(
                                DateTime::from_timestamp_millis(ms).unwrap().naive_utc(),
                            )
                        }
                        _ if dtype == "float64" => Cell::Float(v.as_f64().unwrap()),
                        Value::Bool(b) => Cell::Bool(*b),
                        Value::Number(n) if n.is_i64() => Cell::Int(n.as_i64().unwrap()),
                        Value::Number(n) => Cell::Float(n.as_f64().unwrap()),
                        Value::String(s) => Cell::Text(s.clone()),
                        other => Cell::Json(other.clone()),
                    }
                })
                .collect()
        })
        .collect();
    Frame {
        colnames,
        coltypes,
        rows,
        index: None,
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-9 * y.abs().max(1.0)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_golden_vector_passes_through_the_wasm_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(Location::Sqlite(&dir.path().join("meta.db")), 2)
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let plugins = Plugins::new(&PluginConfig::default(), store, dir.path()).unwrap();

    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 130,
        "golden vectors present: {}",
        files.len()
    );

    let no_dataset = Datasource {
        id: 1,
        database_id: 1,
        database_name: "golden".into(),
        engine: Engine::Postgres,
        schema: None,
        table_name: "golden".into(),
        sql: None,
        template_params: Default::default(),
        main_dttm_col: None,
        cache_timeout: None,
        database_cache_timeout: None,
        columns: Vec::new(),
        metrics: Vec::new(),
    };
    let mut failures = Vec::new();
    for file in &files {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let name = case["name"].as_str().unwrap().to_owned();
        let expected = &case["expected"];
        let want_status = expected["http_status"].as_u64().unwrap();
        let superset_crashed = case["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("error (500 in Superset)"));

        // The schema of the query context validates the operations first.
        let body = json!({
            "datasource": {"id": 1, "type": "table"},
            "queries": [{"post_processing": case["post_processing"]}],
        });
        let steps = match context::parse(&body, &[]) {
            Ok(ctx) => ctx.queries[0].post_processing.clone(),
            Err(e) => {
                let got = e.to_string();
                if want_status != 400 || expected["error"].as_str() != Some(got.as_str()) {
                    failures.push(format!("{name}: schema said {got:?}, want {expected}"));
                }
                continue;
            }
        };

        let result = pipeline::run(&plugins, &input_frame(&case["input"]), &steps, &name).await;
        let mut frame = match result {
            Err(PluginError::Failed { message, .. }) => {
                let got = format!("Error: {message}");
                let ok = if message.is_empty() {
                    // Superset's 200 with `status: failed` and an empty error.
                    expected["query_status"] == "failed" && expected["error"] == ""
                } else if superset_crashed {
                    // A 400 now; the message is Superset's own text.
                    expected["error"].as_str() == Some(message.as_str())
                } else {
                    want_status == 400 && expected["error"].as_str() == Some(got.as_str())
                };
                if !ok {
                    failures.push(format!("{name}: plugin said {got:?}, want {expected}"));
                }
                continue;
            }
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
            Ok(f) => f,
        };
        if want_status != 200 || expected.get("data").is_none() {
            failures.push(format!("{name}: succeeded, want {expected}"));
            continue;
        }
        frame.finish_labels();
        // The vectors' labels name no dataset column or saved metric: Superset's all-null rule
        // makes such columns strings.
        frame.apply_dataset_types(&no_dataset);
        let mut diffs = Vec::new();
        if json!(frame.colnames) != expected["colnames"] {
            diffs.push(format!(
                "colnames {:?} want {}",
                frame.colnames, expected["colnames"]
            ));
        }
        if json!(frame.coltype_codes()) != expected["coltypes"] {
            diffs.push(format!(
                "coltypes {:?} want {}",
                frame.coltype_codes(),
                expected["coltypes"]
            ));
        }
        let data = Value::Array(frame.records());
        if !same(&data, &expected["data"]) {
            diffs.push(format!("data {data} want {}", expected["data"]));
        }
        let n = frame.rows.len();
        let index = frame
            .index
            .as_ref()
            .map_or_else(|| (0..n).map(Value::from).collect(), Index::labels);
        if !same(&Value::Array(index.clone()), &expected["indexnames"]) {
            diffs.push(format!(
                "indexnames {index:?} want {}",
                expected["indexnames"]
            ));
        }
        if json!(n) != expected["rowcount"] {
            diffs.push(format!("rowcount {n} want {}", expected["rowcount"]));
        }
        if !diffs.is_empty() {
            failures.push(format!("{name}: {}", diffs.join("; ")));
        }
    }
    println!(
        "golden post-processing through wasm: {} pass, {} fail",
        files.len() - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
