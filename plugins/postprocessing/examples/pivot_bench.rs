//! Rough timing of the chart-typical `pivot` + `flatten` over a large frame:
//! `cargo run --release --example pivot_bench -p liteset-plugin-postprocessing [rows]`.

use std::time::Instant;

use liteset_plugin_postprocessing::frame::{Frame, Series, Value};
use liteset_plugin_postprocessing::io::frame_to_response;
use liteset_plugin_postprocessing::run_pipeline;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    // A deterministic pseudo-random stream (no dependency needed).
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let days = 1000i64;
    let genders = ["boy", "girl", "other"];
    let states = ["CA", "NY", "TX", "WA", "FL", "IL", "OH", "GA", "NC", "MI"];
    let mut ts = Vec::with_capacity(n);
    let mut gender = Vec::with_capacity(n);
    let mut state_col = Vec::with_capacity(n);
    let mut num = Vec::with_capacity(n);
    let mut price = Vec::with_capacity(n);
    for _ in 0..n {
        let r = next();
        ts.push(Some(
            1_609_459_200_000_000 + (r as i64 % days).abs() * 86_400_000_000,
        ));
        gender.push(Value::Str(genders[(r >> 20) as usize % 3].to_string()));
        state_col.push(Value::Str(states[(r >> 30) as usize % 10].to_string()));
        num.push((r >> 40) as i64 % 1000);
        price.push(((r >> 11) % 100_000) as f64 / 100.0);
    }
    let frame = Frame::from_columns(vec![
        ("__timestamp".into(), Series::Datetime(ts)),
        ("gender".into(), Series::Object(gender)),
        ("state".into(), Series::Object(state_col)),
        ("SUM(num)".into(), Series::Int64(num)),
        ("AVG(price)".into(), Series::Float64(price)),
    ]);
    if std::env::var_os("STAGES").is_some() {
        stages(&frame);
    }
    let steps = serde_json::json!([
        {"operation": "pivot", "options": {
            "index": ["__timestamp"], "columns": ["gender", "state"],
            "aggregates": {"SUM(num)": {"operator": "sum"}, "AVG(price)": {"operator": "mean"}}}},
        {"operation": "flatten"}
    ]);
    let t = Instant::now();
    let out = run_pipeline(frame, &steps).expect("pipeline");
    let pivot = t.elapsed();
    let t = Instant::now();
    let resp = frame_to_response(&out).expect("response");
    println!(
        "{n} rows -> {} x {}: pivot+flatten {:?}, response {:?}",
        resp.rowcount,
        resp.colnames.len(),
        pivot,
        t.elapsed()
    );
}

/// Times the grouping stages alone (`STAGES=1`).
fn stages(frame: &Frame) {
    use liteset_plugin_postprocessing::group::{factorize, group_by};
    for c in &frame.columns[..3] {
        let t = Instant::now();
        let _ = factorize(c).unwrap();
        println!("factorize {:?}", t.elapsed());
    }
    let t = Instant::now();
    let keys: Vec<&Series> = frame.columns[..3].iter().collect();
    let g = group_by(&keys, frame.num_rows(), true).unwrap();
    println!("group_by {:?} ({} groups)", t.elapsed(), g.len());
}
