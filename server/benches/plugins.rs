//! Plugin platform costs (criterion):
//! - the whole per-call overhead of an identity post-processor (slot, fresh store,
//!   instantiation from the `InstancePre`, the call, output validation);
//! - Superset's timeseries pivot + flatten over 10k and 1M rows through the built-in wasm
//!   plugin, against the same Rust compiled natively (the plugin's `process`, same table in and
//!   out), and the identity plugin on the same table (what crossing the sandbox costs). `tests/bench/pivot_pandas.py` times pandas on the same data.
//!
//! Run: `cargo bench -p liteset --bench plugins` (the fixture plugin is built on first use).

use std::path::PathBuf;
use std::sync::Arc;

use chrono::DateTime;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use liteset::config::PluginConfig;
use liteset::engines::{Cell, GenericType};
use liteset::plugins::{Plugins, table};
use liteset::query::frame::Frame;
use liteset::store::{Location, Store};
use liteset_sdk::{PostProcessor, Table as SdkTable, testing};

const REGIONS: [&str; 5] = ["East", "North", "South", "West", "Central"];

/// `rows` rows: 1000 a day from 2020-01-01, region `i % 5`, revenue `(i * 7919 % 1000) / 10`
/// (the same generator as `tests/bench/pivot_pandas.py`).
fn row(i: usize) -> (i64, &'static str, f64) {
    let day = (i / 1000) as i64;
    let ts = 1_577_836_800_000_000 + day * 86_400_000_000;
    (ts, REGIONS[i % 5], ((i * 7919) % 1000) as f64 / 10.0)
}

fn frame(rows: usize) -> Frame {
    Frame {
        colnames: vec!["__timestamp".into(), "region".into(), "sum_revenue".into()],
        coltypes: vec![
            GenericType::Temporal,
            GenericType::String,
            GenericType::Numeric,
        ],
        rows: (0..rows)
            .map(|i| {
                let (ts, region, v) = row(i);
                vec![
                    Cell::Timestamp(DateTime::from_timestamp_micros(ts).unwrap().naive_utc()),
                    Cell::Text(region.into()),
                    Cell::Float(v),
                ]
            })
            .collect(),
        index: None,
    }
}

fn sdk_table(rows: usize) -> SdkTable {
    let data: Vec<_> = (0..rows).map(row).collect();
    SdkTable::builder()
        .timestamp_us("__timestamp", data.iter().map(|r| r.0))
        .utf8("region", data.iter().map(|r| Some(r.1)))
        .float64("sum_revenue", data.iter().map(|r| r.2))
        .build()
        .unwrap()
}

const PIVOT_FLATTEN: &str = r#"[
  {"operation": "pivot", "options": {"index": ["__timestamp"], "columns": ["region"],
    "aggregates": {"sum_revenue": {"operator": "sum"}}, "drop_missing_columns": false}},
  {"operation": "flatten", "options": {}}
]"#;

/// Builds `tests/fixtures/plugins` for wasm32-wasip2 (once) and returns the component.
fn fixture_wasm() -> Vec<u8> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("fixture-plugins/default");
    let status = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(root.join("tests/fixtures/plugins/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .status()
        .expect("cargo");
    assert!(status.success());
    std::fs::read(target.join("wasm32-wasip2/release/liteset_fixture_plugin.wasm")).unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plugins = rt.block_on(async {
        let store = Store::open(Location::Sqlite(&dir.path().join("m.db")), 2)
            .await
            .unwrap();
        store.migrate().await.unwrap();
        // Room for a million rows, and enough of each sandbox kept resident that such a call
        // does not fault its memory in afresh each time (the default, 8 MiB, suits small
        // tables; `plugins.keep_resident_mb` is the operator's trade-off).
        let config = PluginConfig {
            timeout_ms: 60_000,
            memory_mb: 1024,
            keep_resident_mb: 32,
            ..PluginConfig::default()
        };
        let p = Arc::new(Plugins::new(&config, store, dir.path()).unwrap());
        p.install(fixture_wasm(), None).await.unwrap();
        p
    });

    let identity = rt.block_on(plugins.get("fixture")).unwrap();
    let empty = table::from_frame(&Frame::default());
    c.bench_function("identity post-processor call (empty table)", |b| {
        b.to_async(&rt).iter(|| {
            let (p, id, t) = (&plugins, &identity, &empty);
            async move {
                p.post_process(id, "fixture", "{}", t, "bench")
                    .await
                    .unwrap()
            }
        })
    });

    let builtin = rt.block_on(plugins.builtin()).unwrap();
    let mut group = c.benchmark_group("pivot+flatten");
    group.sample_size(10);
    for rows in [10_000usize, 1_000_000] {
        let wit = table::from_frame(&frame(rows));
        group.bench_with_input(BenchmarkId::new("wasm", rows), &wit, |b, wit| {
            b.to_async(&rt).iter(|| {
                let (p, bi) = (&plugins, &builtin);
                async move {
                    p.post_process(bi, "post_processing", PIVOT_FLATTEN, wit, "bench")
                        .await
                        .unwrap()
                }
            })
        });
        group.bench_with_input(BenchmarkId::new("wasm identity", rows), &wit, |b, wit| {
            b.to_async(&rt).iter(|| {
                let (p, id) = (&plugins, &identity);
                async move {
                    p.post_process(id, "fixture", "{}", wit, "bench")
                        .await
                        .unwrap()
                }
            })
        });
        let sdk = sdk_table(rows);
        group.bench_with_input(BenchmarkId::new("native", rows), &sdk, |b, sdk| {
            b.iter(|| {
                liteset_plugin_postprocessing::plugin::Builtin::process(
                    &testing::invocation(),
                    PIVOT_FLATTEN,
                    sdk.clone(),
                )
                .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
