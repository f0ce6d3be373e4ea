//! Golden vectors: every case in `tests/fixtures/postprocessing/` (repository root) runs
//! through `run_pipeline` + `frame_to_response` and must reproduce what Superset 6.0
//! returned. See that folder's README for the format and the semantics.

use std::path::PathBuf;

use liteset_plugin_postprocessing::io::{frame_from_records, frame_to_response};
use liteset_plugin_postprocessing::run_pipeline;
use serde_json::{Map, Value as Json};

/// Operations whose cases are skipped (implemented in another branch). Empty it once every
/// operation is merged. `unknown` is the server's request validation, not this crate's.
const SKIPPED_OPERATIONS: &[&str] = &["unknown"];

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/postprocessing")
}

/// Numbers equal within a relative tolerance of 1e-9 (absolute near 0); ints and floats
/// compare by value.
fn num_eq(a: f64, b: f64) -> bool {
    if a == b {
        return true;
    }
    let scale = a.abs().max(b.abs());
    if scale < 1e-9 {
        return (a - b).abs() <= 1e-12;
    }
    (a - b).abs() <= 1e-9 * scale
}

fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => num_eq(
            x.as_f64().unwrap_or(f64::NAN),
            y.as_f64().unwrap_or(f64::NAN),
        ),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn short(v: &Json) -> String {
    let s = v.to_string();
    if s.len() > 300 {
        format!("{}…", &s[..300])
    } else {
        s
    }
}

enum Outcome {
    Pass,
    /// Passed a "500 in Superset" case with Superset's own message.
    PassSame500,
    /// Passed, with a remark (a 500 case whose message differs from Superset's).
    PassNote(String),
    Fail(String),
}

fn run_case(case: &Json) -> Outcome {
    let input = &case["input"];
    let colnames: Vec<String> = input["colnames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let empty = Map::new();
    let dtypes = input["pandas_dtypes"].as_object().unwrap_or(&empty);
    let records = input["data"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let frame = frame_from_records(&colnames, dtypes, records);
    let result = run_pipeline(frame, &case["post_processing"]).and_then(|f| frame_to_response(&f));
    let expected = &case["expected"];
    let description = case["description"].as_str().unwrap_or("");

    if let Some(want) = expected.get("error").and_then(Json::as_str) {
        let got = match result {
            Ok(_) => return Outcome::Fail(format!("expected error {want:?}, got success")),
            Err(e) => e.message,
        };
        if want.is_empty() {
            return if got.is_empty() {
                Outcome::Pass
            } else {
                Outcome::Fail(format!("expected an empty error message, got {got:?}"))
            };
        }
        if description.starts_with("error (500 in Superset)") {
            if got.is_empty() {
                return Outcome::Fail("expected a non-empty error message".into());
            }
            return if want == got || want == format!("Error: {got}") {
                Outcome::PassSame500
            } else {
                Outcome::PassNote(format!(
                    "500 case, message differs: Superset {want:?}, ours {got:?}"
                ))
            };
        }
        let got = format!("Error: {got}");
        return if got == want {
            Outcome::Pass
        } else {
            Outcome::Fail(format!("error message: expected {want:?}, got {got:?}"))
        };
    }

    let resp = match result {
        Ok(r) => r,
        Err(e) => return Outcome::Fail(format!("unexpected error {:?}: {}", e.kind, e.message)),
    };
    let mut diffs = Vec::new();
    let want_cols: Vec<&str> = expected["colnames"]
        .as_array()
        .map(|a| a.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    if resp.colnames != want_cols {
        diffs.push(format!(
            "colnames: expected {want_cols:?}, got {:?}",
            resp.colnames
        ));
    }
    let got_types = Json::from(resp.coltypes.clone());
    if expected.get("coltypes").is_some_and(|t| *t != got_types) {
        diffs.push(format!(
            "coltypes: expected {}, got {got_types}",
            expected["coltypes"]
        ));
    }
    let want_rows = expected["data"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if want_rows.len() != resp.data.len() {
        diffs.push(format!(
            "rows: expected {}, got {}",
            want_rows.len(),
            resp.data.len()
        ));
    }
    for (i, (w, g)) in want_rows.iter().zip(&resp.data).enumerate() {
        let g = Json::Object(g.clone());
        if !json_eq(w, &g) {
            diffs.push(format!("row {i}: expected {}, got {}", short(w), short(&g)));
            break;
        }
    }
    let got_index = Json::Array(resp.indexnames.clone());
    if expected
        .get("indexnames")
        .is_some_and(|w| !json_eq(w, &got_index))
    {
        diffs.push(format!(
            "indexnames: expected {}, got {}",
            short(&expected["indexnames"]),
            short(&got_index)
        ));
    }
    if expected
        .get("rowcount")
        .and_then(Json::as_u64)
        .is_some_and(|r| r as usize != resp.rowcount)
    {
        diffs.push(format!(
            "rowcount: expected {}, got {}",
            expected["rowcount"], resp.rowcount
        ));
    }
    if diffs.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(diffs.join("\n    "))
    }
}

#[test]
fn golden_vectors() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no golden vectors found");
    let (mut pass, mut fail, mut skipped) = (0, 0, 0);
    let (mut crash_cases, mut crash_same) = (0, 0);
    let mut failures = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("readable fixture");
        let case: Json = serde_json::from_str(&text).expect("valid JSON fixture");
        let name = case["name"].as_str().unwrap_or("?").to_string();
        let op = case["operation"].as_str().unwrap_or("");
        if SKIPPED_OPERATIONS.contains(&op) {
            skipped += 1;
            continue;
        }
        match run_case(&case) {
            Outcome::Pass => pass += 1,
            Outcome::PassSame500 => {
                pass += 1;
                crash_cases += 1;
                crash_same += 1;
            }
            Outcome::PassNote(note) => {
                pass += 1;
                crash_cases += 1;
                println!("note {name}: {note}");
            }
            Outcome::Fail(diff) => {
                fail += 1;
                failures.push(format!("FAIL {name}: {diff}"));
            }
        }
    }
    for f in &failures {
        println!("{f}");
    }
    println!("golden: {pass} pass, {fail} fail, {skipped} skipped");
    println!(
        "golden: {crash_same} of {crash_cases} passing \"500 in Superset\" cases carry Superset's exact message"
    );
    assert!(failures.is_empty(), "{fail} golden case(s) failed");
}
