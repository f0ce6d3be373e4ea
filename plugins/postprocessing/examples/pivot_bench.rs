//! The benchmark's pivot + flatten through the plugin's `process` (natively), in a loop, for
//! profiling: `cargo run --release --example pivot_bench -p liteset-plugin-postprocessing [rows] [iterations]`.
use liteset_plugin_postprocessing::plugin::Builtin;
use liteset_sdk::{PostProcessor, Table, testing};
const REGIONS: [&str; 5] = ["East", "North", "South", "West", "Central"];
fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let iters: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let data: Vec<_> = (0..rows)
        .map(|i| {
            let day = (i / 1000) as i64;
            (
                1_577_836_800_000_000 + day * 86_400_000_000,
                REGIONS[i % 5],
                ((i * 7919) % 1000) as f64 / 10.0,
            )
        })
        .collect();
    let t = Table::builder()
        .timestamp_us("__timestamp", data.iter().map(|r| r.0))
        .utf8("region", data.iter().map(|r| Some(r.1)))
        .float64("sum_revenue", data.iter().map(|r| r.2))
        .build()
        .unwrap();
    let p = r#"[{"operation": "pivot", "options": {"index": ["__timestamp"], "columns": ["region"],
    "aggregates": {"sum_revenue": {"operator": "sum"}}, "drop_missing_columns": false}},
  {"operation": "flatten", "options": {}}]"#;
    for _ in 0..iters {
        let s = std::time::Instant::now();
        let out = Builtin::process(&testing::invocation(), p, t.clone()).unwrap();
        eprintln!("{:?} rows={}", s.elapsed(), out.num_rows);
    }
}
