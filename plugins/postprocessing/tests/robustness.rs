//! Robustness: hostile `post_processing` options must give a clean `PpError`, never a panic,
//! an unbounded allocation or a practically infinite loop.
//!
//! Every golden case in `tests/fixtures/postprocessing/` (repository root) is replayed with
//! many deterministic mutations of its steps' `options` (values of other JSON types, dropped
//! and unknown keys, missing/duplicate/unicode column names, negative/zero/huge numbers, ...)
//! and of its step list (repeated, reordered, steps borrowed from other cases). Each run is
//! wrapped in `catch_unwind`; the test fails listing every (case, mutation) that panicked,
//! that took too long, or that asked the allocator for an absurd block (which aborts the
//! process after printing the mutation, since an allocation failure cannot be unwound).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use liteset_plugin_postprocessing::io::{frame_from_records, frame_to_response};
use liteset_plugin_postprocessing::run_pipeline;
use serde_json::{Map, Value as Json, json};

/// Mutations generated per golden case (about 27,000 in all, well under a minute in a
/// debug build). `ROBUSTNESS_MUTATIONS=<n>` runs `n` per case instead (for a deeper search)
/// and `ROBUSTNESS_SEED=<n>` varies the seed.
const MUTATIONS_PER_CASE: usize = 200;
/// A single run (debug build, tiny frames) slower than this counts as a failure.
const SLOW_RUN: Duration = Duration::from_secs(60);
/// A run still going after this is reported as a hang and the test stops.
const HANG: Duration = Duration::from_secs(180);
/// A single allocation above this is a resource blow-up for frames of a few dozen rows.
const MAX_ALLOCATION: usize = 1 << 30;

// ---------------------------------------------------------------------------------------
// An allocator that refuses (loudly) any single allocation above `MAX_ALLOCATION` while a
// mutation runs, so that a blow-up is reported with its mutation instead of swapping.

struct Guard;

static ARMED: AtomicBool = AtomicBool::new(false);

// The only unsafe code of the crate's tests: a pass-through to `System` with a size check.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION && ARMED.load(Ordering::Relaxed) {
            oversized(layout.size());
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION && ARMED.load(Ordering::Relaxed) {
            oversized(layout.size());
            return std::ptr::null_mut();
        }
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION && ARMED.load(Ordering::Relaxed) {
            oversized(new_size);
            return std::ptr::null_mut();
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Guard = Guard;

/// The label of the running mutation, in a fixed buffer so that the allocator can print it
/// without allocating.
static LABEL: std::sync::Mutex<([u8; 4096], usize)> = std::sync::Mutex::new(([0; 4096], 0));

fn set_label(label: &str) {
    let mut l = LABEL.lock().unwrap_or_else(|e| e.into_inner());
    let n = label.len().min(l.0.len());
    l.0[..n].copy_from_slice(&label.as_bytes()[..n]);
    l.1 = n;
}

fn oversized(size: usize) {
    ARMED.store(false, Ordering::Relaxed);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(b"\nrobustness: oversized allocation during ");
    if let Ok(l) = LABEL.try_lock() {
        let _ = err.write_all(&l.0[..l.1]);
    }
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let _ = err.write_all(b": ");
    let _ = err.write_all(&digits[i..]);
    let _ = err.write_all(b" bytes\n");
}

// ---------------------------------------------------------------------------------------
// A small deterministic PRNG (splitmix64).

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---------------------------------------------------------------------------------------
// Hostile values.

fn long_string() -> String {
    "x".repeat(100_000)
}

fn nested(depth: usize) -> Json {
    (0..depth).fold(json!([]), |acc, i| {
        if i % 2 == 0 {
            json!({ "k": acc })
        } else {
            json!([acc])
        }
    })
}

/// Values of every JSON type, including numbers at and beyond the edges.
fn generic_value(rng: &mut Rng) -> Json {
    match rng.below(34) {
        0 => Json::Null,
        1 => json!(true),
        2 => json!(false),
        3 => json!(-1),
        4 => json!(0),
        5 => json!(1),
        6 => json!(1e308),
        7 => json!(-1e308),
        8 => json!("NaN"),
        9 => json!("nan"),
        10 => json!("inf"),
        11 => json!("-Infinity"),
        12 => json!(""),
        13 => json!(long_string()),
        14 => json!([]),
        15 => json!([[]]),
        16 => json!({}),
        17 => json!({"a": {"b": {"c": [1, {"d": null}]}}}),
        18 => json!(i64::MAX),
        19 => json!(i64::MIN),
        20 => json!(u64::MAX),
        21 => json!(2_147_483_648_i64),
        22 => json!(-2_147_483_649_i64),
        23 => json!(0.5),
        24 => json!(-0.5),
        25 => json!(1e-308),
        26 => json!(123_456_789_012_i64),
        27 => nested(64),
        28 => json!([null, true, 1, "x", [], {}]),
        29 => json!("日本語 🎉"),
        30 => json!("\u{0}\u{7f}\\'\""),
        31 => json!([1e308, -1e308]),
        32 => json!(-1_000_000),
        _ => json!(1_000_000_000),
    }
}

/// Values for options whose name says what they hold.
fn keyed_value(key: &str, rng: &mut Rng) -> Option<Json> {
    let ints = [
        json!(-1),
        json!(0),
        json!(1),
        json!(2),
        json!(-2_147_483_649_i64),
        json!(2_147_483_648_i64),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1e308),
        json!(-1e308),
        json!(1.5),
        json!(1_000_000_000),
        json!(100_000),
        json!("3"),
        json!(true),
    ];
    let v = match key {
        "window" | "periods" | "min_periods" | "bins" | "precision" | "level" | "axis" => {
            if key == "level" && rng.chance(30) {
                rng.pick(&[json!("gender"), json!("missing"), json!(-100), json!(100)])
                    .clone()
            } else {
                rng.pick(&ints).clone()
            }
        }
        "percentiles" => rng
            .pick(&[
                json!([2, 98]),
                json!([0, 100]),
                json!([-1, 101]),
                json!([50, 50]),
                json!([100, 0]),
                json!([1e308, -1e308]),
                json!([1]),
                json!([1, 2, 3]),
                json!(["a", "b"]),
                json!([null, null]),
                json!([]),
                json!([i64::MIN, i64::MAX]),
                json!(50),
            ])
            .clone(),
        "rule" | "time_grain" => rng
            .pick(&[
                json!("1ns"),
                json!("1N"),
                json!("1us"),
                json!("1U"),
                json!("1ms"),
                json!("1L"),
                // Minute and second rules over the fixtures' ranges are legitimate (under the
                // limits) but slow in a debug build; `resample_refuses_too_many_rows` covers
                // them. Finer rules are over the limits, coarser ones cheap.
                json!("15min"),
                json!("1H"),
                json!("1h"),
                json!("0D"),
                json!("-1D"),
                json!("1W"),
                json!("W-MON"),
                json!("W-XYZ"),
                json!("2MS"),
                json!("M"),
                json!("ME"),
                json!("Q"),
                json!("QS"),
                json!("Y"),
                json!("YS"),
                json!("A"),
                json!("AS"),
                json!("1000000000Y"),
                json!("99999999999999999999D"),
                json!("9223372036854775807D"),
                json!("9223372036854775807ns"),
                json!("-9223372036854775808D"),
                json!("P1D"),
                json!("PT1S"),
                json!("D"),
                json!("1.5D"),
                json!("1e9D"),
                json!("3B"),
                json!("BM"),
                json!("0"),
                json!("100000000000000W"),
                json!("1000000Q"),
                json!("5000000MS"),
            ])
            .clone(),
        "rolling_type_options" => rng
            .pick(&[
                json!({"quantile": -1}),
                json!({"quantile": 2}),
                json!({"quantile": 1e308}),
                json!({"quantile": "x"}),
                json!({"quantile": null}),
                json!({"q": 0.5}),
                json!({"ddof": -1}),
                json!({"ddof": i64::MAX}),
                json!({"ddof": 1_000_000}),
                json!({"interpolation": "nope", "quantile": 0.5}),
                json!({"interpolation": "nearest", "quantile": 0.5}),
                json!({"win_type": "gaussian", "std": 0}),
                json!([]),
            ])
            .clone(),
        "operator" | "rolling_type" | "whisker_type" | "compare_type" | "method"
        | "orientation" | "geodetic" | "win_type" => rng
            .pick(&[
                json!("sum"),
                json!("mean"),
                json!("std"),
                json!("var"),
                json!("median"),
                json!("quantile"),
                json!("percentile"),
                json!("nanpercentile"),
                json!("skew"),
                json!("kurt"),
                json!("cumsum"),
                json!("prod"),
                json!("min"),
                json!("max"),
                json!("count"),
                json!("count_nonzero"),
                json!("argmax"),
                json!("argmin"),
                json!("corr"),
                json!("cov"),
                json!("mode"),
                json!("tukey"),
                json!("min/max"),
                json!("difference"),
                json!("ratio"),
                json!("percentage"),
                json!("asfreq"),
                json!("ffill"),
                json!("bfill"),
                json!("linear"),
                json!("nearest"),
                json!("row"),
                json!("column"),
                json!("point"),
                json!("point_dms"),
                json!("SUM"),
                json!("boxcar"),
            ])
            .clone(),
        "ascending" => rng
            .pick(&[
                json!([true]),
                json!([true, false, true, false]),
                json!([]),
                json!("x"),
                json!([null]),
                json!({"a": true}),
            ])
            .clone(),
        "drop_levels" => rng
            .pick(&[
                json!([0]),
                json!([-1]),
                json!([100]),
                json!([-100]),
                json!(["missing"]),
                json!([0, 0]),
                json!([0, 1, 2, 3, 4]),
                json!(i64::MIN),
                json!([1e308]),
            ])
            .clone(),
        "fill_value" | "metric_fill_value" | "column_fill_value" => generic_value(rng),
        _ => return None,
    };
    Some(v)
}

/// A column name: one of the frame's, a missing one, or an odd one.
fn column_name(cols: &[String], rng: &mut Rng) -> Json {
    if !cols.is_empty() && rng.chance(75) {
        return json!(rng.pick(cols));
    }
    rng.pick(&[
        json!("missing_column"),
        json!(""),
        json!("日本語 🎉"),
        json!("__timestamp"),
        json!("a\u{0}b"),
        json!(" "),
        json!("SUM(num)"),
        json!("gender"),
        json!("boy"),
        json!("index"),
        json!("level_0"),
        json!(","),
    ])
    .clone()
}

/// Options each operation takes (so that mutations also inject absent ones).
fn known_keys(op: &str) -> &'static [&'static str] {
    match op {
        "aggregate" => &["groupby", "aggregates"],
        "boxplot" => &["groupby", "metrics", "whisker_type", "percentiles"],
        "compare" => &[
            "source_columns",
            "compare_columns",
            "compare_type",
            "drop_original_columns",
            "precision",
        ],
        "contribution" => &[
            "orientation",
            "columns",
            "time_shifts",
            "rename_columns",
            "contribution_totals",
        ],
        "cum" => &["operator", "columns"],
        "diff" => &["columns", "periods", "axis"],
        "flatten" => &["reset_index", "drop_levels"],
        "geohash_encode" | "geohash_decode" => &["geohash", "longitude", "latitude"],
        "geodetic_parse" => &["geodetic", "longitude", "latitude", "altitude"],
        "histogram" => &["column", "groupby", "bins", "cumulative", "normalize"],
        "pivot" => &[
            "index",
            "aggregates",
            "columns",
            "metric_fill_value",
            "column_fill_value",
            "drop_missing_columns",
            "combine_value_with_metric",
            "marginal_distributions",
            "marginal_distribution_name",
        ],
        "prophet" => &["time_grain", "periods", "confidence_interval", "index"],
        "rank" => &["metric", "group_by"],
        "rename" => &["columns", "inplace", "level"],
        "resample" => &["rule", "method", "fill_value"],
        "rolling" => &[
            "rolling_type",
            "columns",
            "window",
            "rolling_type_options",
            "center",
            "win_type",
            "min_periods",
        ],
        "select" => &["columns", "exclude", "rename"],
        "sort" => &["is_sort_index", "by", "ascending"],
        _ => &[],
    }
}

const OPERATIONS: &[&str] = &[
    "aggregate",
    "boxplot",
    "compare",
    "contribution",
    "cum",
    "diff",
    "flatten",
    "geohash_encode",
    "geohash_decode",
    "geodetic_parse",
    "histogram",
    "pivot",
    "prophet",
    "rank",
    "rename",
    "resample",
    "rolling",
    "select",
    "sort",
];

// ---------------------------------------------------------------------------------------
// Mutating one options tree.

/// A step into a JSON tree.
#[derive(Clone)]
enum Seg {
    Key(String),
    Idx(usize),
}

fn paths(v: &Json, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    out.push(prefix.clone());
    if prefix.len() > 6 {
        return;
    }
    match v {
        Json::Object(m) => {
            for (k, child) in m {
                prefix.push(Seg::Key(k.clone()));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        Json::Array(a) => {
            for (i, child) in a.iter().enumerate().take(8) {
                prefix.push(Seg::Idx(i));
                paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(v: &'a mut Json, path: &[Seg]) -> Option<&'a mut Json> {
    let mut cur = v;
    for seg in path {
        cur = match (seg, cur) {
            (Seg::Key(k), Json::Object(m)) => m.get_mut(k)?,
            (Seg::Idx(i), Json::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn last_key(path: &[Seg]) -> Option<&str> {
    path.iter().rev().find_map(|s| match s {
        Seg::Key(k) => Some(k.as_str()),
        Seg::Idx(_) => None,
    })
}

/// Applies one random mutation to `options` of operation `op`; returns its description.
fn mutate_options(op: &str, options: &mut Json, cols: &[String], rng: &mut Rng) -> String {
    if !options.is_object() {
        *options = json!({});
    }
    // Inject a known option (absent or present) with a value fit for its name.
    if rng.chance(40) {
        let keys = known_keys(op);
        if !keys.is_empty() {
            let key = *rng.pick(keys);
            let value = keyed_value(key, rng).unwrap_or_else(|| match rng.below(3) {
                0 => column_name(cols, rng),
                1 => json!([column_name(cols, rng), column_name(cols, rng)]),
                _ => generic_value(rng),
            });
            let desc = format!("set {key}={}", short(&value));
            options
                .as_object_mut()
                .expect("object")
                .insert(key.to_string(), value);
            return desc;
        }
    }
    let mut all = Vec::new();
    paths(options, &mut Vec::new(), &mut all);
    // The root itself (replaced by a non-mapping) is mostly a waste: rarely pick it.
    if all.len() > 1 && rng.chance(95) {
        all.remove(0);
    }
    let path = rng.pick(&all).clone();
    let where_ = describe(&path);
    let key = last_key(&path).map(str::to_string);
    let Some(target) = at_mut(options, &path) else {
        return "noop".into();
    };
    match rng.below(10) {
        0 | 1 => {
            let v = generic_value(rng);
            let d = format!("{where_}={}", short(&v));
            *target = v;
            d
        }
        2 => {
            if let Some(v) = key.as_deref().and_then(|k| keyed_value(k, rng)) {
                let d = format!("{where_}={}", short(&v));
                *target = v;
                d
            } else {
                let v = column_name(cols, rng);
                let d = format!("{where_}={}", short(&v));
                *target = v;
                d
            }
        }
        3 => {
            // Drop the last segment from its parent.
            if path.is_empty() {
                *target = json!({});
                return "options={}".into();
            }
            let parent = at_mut(options, &path[..path.len() - 1]).expect("parent");
            match (path.last().expect("non-empty"), parent) {
                (Seg::Key(k), Json::Object(m)) => {
                    m.remove(k);
                }
                (Seg::Idx(i), Json::Array(a)) => {
                    a.remove(*i);
                }
                _ => {}
            }
            format!("drop {where_}")
        }
        4 => {
            if let Json::Object(m) = target {
                let k = rng
                    .pick(&["unknown_key", "", "日本語", "operator", "column", "columns"])
                    .to_string();
                let v = generic_value(rng);
                let d = format!("{where_}.{k}+={}", short(&v));
                m.insert(k, v);
                d
            } else {
                let v = column_name(cols, rng);
                let d = format!("{where_}={}", short(&v));
                *target = v;
                d
            }
        }
        5 => {
            let v = column_name(cols, rng);
            let d = format!("{where_}={}", short(&v));
            *target = v;
            d
        }
        6 => match target {
            Json::Array(a) => match rng.below(4) {
                0 => {
                    a.clear();
                    format!("{where_}=[]")
                }
                1 if !a.is_empty() => {
                    let dup = a[rng.below(a.len())].clone();
                    a.push(dup);
                    format!("{where_} dup item")
                }
                2 => {
                    let c = column_name(cols, rng);
                    a.push(c.clone());
                    format!("{where_} push {}", short(&c))
                }
                _ => {
                    let inner = std::mem::take(a);
                    *target = json!([inner]);
                    format!("{where_} wrapped")
                }
            },
            Json::Object(m) => match rng.below(4) {
                0 => {
                    m.clear();
                    format!("{where_}={{}}")
                }
                1 if !m.is_empty() => {
                    let (_, v) = m.iter().nth(rng.below(m.len())).expect("entry");
                    let v = v.clone();
                    let k = column_name(cols, rng);
                    let k = k.as_str().unwrap_or("k").to_string();
                    m.insert(k.clone(), v);
                    format!("{where_} dup value under {k:?}")
                }
                2 if !m.is_empty() => {
                    let k = m.keys().nth(rng.below(m.len())).expect("key").clone();
                    let v = m.remove(&k).expect("value");
                    let nk = column_name(cols, rng);
                    let nk = nk.as_str().unwrap_or("k").to_string();
                    m.insert(nk.clone(), v);
                    format!("{where_} rename key {k:?}->{nk:?}")
                }
                _ => {
                    let all: Vec<Json> = m.values().cloned().collect();
                    *target = Json::Array(all);
                    format!("{where_} object->list")
                }
            },
            other => {
                let v = json!([other.clone(), other.clone()]);
                let d = format!("{where_}={}", short(&v));
                *other = v;
                d
            }
        },
        7 => {
            // Numbers: negate / zero / huge; anything else: a number.
            let v = match target.as_f64() {
                Some(f) => rng
                    .pick(&[
                        json!(-f),
                        json!(0),
                        json!(f * 1e12),
                        json!(i64::MAX),
                        json!(-1),
                    ])
                    .clone(),
                None => rng
                    .pick(&[json!(-1), json!(0), json!(i64::MAX), json!(1e308)])
                    .clone(),
            };
            let d = format!("{where_}={}", short(&v));
            *target = v;
            d
        }
        8 => {
            // Strings: numeric-looking, unicode, empty; others: their JSON text as a string.
            let v = match &*target {
                Json::String(s) => rng
                    .pick(&[
                        json!(format!("{s}{s}")),
                        json!(s.to_uppercase()),
                        json!(format!(" {s}")),
                        json!("-1"),
                        json!("1e308"),
                        json!("é"),
                    ])
                    .clone(),
                other => json!(other.to_string()),
            };
            let d = format!("{where_}={}", short(&v));
            *target = v;
            d
        }
        _ => {
            let v = nested(1 + rng.below(6));
            let d = format!("{where_}={}", short(&v));
            *target = v;
            d
        }
    }
}

fn describe(path: &[Seg]) -> String {
    let mut s = String::from("opts");
    for seg in path {
        match seg {
            Seg::Key(k) => {
                s.push('.');
                s.push_str(&k.chars().take(40).collect::<String>());
            }
            Seg::Idx(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

fn short(v: &Json) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!(
            "{}…({} chars)",
            s.chars().take(60).collect::<String>(),
            s.len()
        )
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------
// Mutating the step list.

/// One mutated pipeline: its description and steps.
fn mutate_pipeline(
    steps: &[Json],
    cols: &[String],
    donors: &[Json],
    rng: &mut Rng,
) -> (String, Json) {
    let mut steps: Vec<Json> = steps.to_vec();
    let mut descs = Vec::new();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        if steps.is_empty() {
            steps.push(rng.pick(donors).clone());
            descs.push("push donor step".to_string());
            continue;
        }
        let i = rng.below(steps.len());
        let d = match rng.below(30) {
            0 => {
                let s = steps[i].clone();
                steps.insert(i, s);
                format!("repeat step {i}")
            }
            1 => {
                steps.reverse();
                "reverse steps".to_string()
            }
            2 => {
                if let Some(o) = steps[i].as_object_mut() {
                    o.insert("options".into(), json!({}));
                }
                format!("step {i} options={{}}")
            }
            3 => {
                let v = rng
                    .pick(&[Json::Null, json!([]), json!("x"), json!(1), json!(true)])
                    .clone();
                let d = format!("step {i} options={}", short(&v));
                if let Some(o) = steps[i].as_object_mut() {
                    o.insert("options".into(), v);
                }
                d
            }
            4 => {
                let op = *rng.pick(OPERATIONS);
                if let Some(o) = steps[i].as_object_mut() {
                    o.insert("operation".into(), json!(op));
                }
                format!("step {i} operation={op}")
            }
            5 => {
                let donor = rng.pick(donors).clone();
                let d = format!(
                    "insert donor {} at {i}",
                    donor["operation"].as_str().unwrap_or("?")
                );
                steps.insert(i, donor);
                d
            }
            6 => {
                let donor = rng.pick(donors).clone();
                let d = format!(
                    "append donor {}",
                    donor["operation"].as_str().unwrap_or("?")
                );
                steps.push(donor);
                d
            }
            7 => {
                steps.remove(i);
                format!("remove step {i}")
            }
            8 => {
                let v = rng
                    .pick(&[Json::Null, json!({}), json!([]), json!({"operation": ""})])
                    .clone();
                let d = format!("step {i}={}", short(&v));
                steps[i] = v;
                d
            }
            _ => {
                let op = steps[i]["operation"].as_str().unwrap_or("").to_string();
                let mut options = steps[i].get("options").cloned().unwrap_or(Json::Null);
                let d = mutate_options(&op, &mut options, cols, rng);
                if let Some(o) = steps[i].as_object_mut() {
                    o.insert("options".into(), options);
                }
                format!("step {i} ({op}) {d}")
            }
        };
        descs.push(d);
    }
    (descs.join("; "), Json::Array(steps))
}

// ---------------------------------------------------------------------------------------

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/postprocessing")
}

struct Case {
    name: String,
    colnames: Vec<String>,
    dtypes: Map<String, Json>,
    records: Vec<Json>,
    steps: Vec<Json>,
}

fn load_cases() -> Vec<Case> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("readable fixture");
            let case: Json = serde_json::from_str(&text).expect("valid JSON fixture");
            let input = &case["input"];
            Case {
                name: case["name"].as_str().unwrap_or("?").to_string(),
                colnames: input["colnames"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|c| c.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
                dtypes: input["pandas_dtypes"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                records: input["data"].as_array().cloned().unwrap_or_default(),
                steps: case["post_processing"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            }
        })
        .collect()
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs one pipeline (and the response serialisation, as the server does) under
/// `catch_unwind`: the error message (`None` on success), or `Err(panic message with its
/// location)` if it panicked.
/// `rows` keeps only that many input rows (edge cases: empty and one-row frames).
fn run_one(case: &Case, steps: &Json, rows: Option<usize>) -> Result<Option<String>, String> {
    let records = &case.records[..rows.unwrap_or(usize::MAX).min(case.records.len())];
    let frame = frame_from_records(&case.colnames, &case.dtypes, records);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        run_pipeline(frame, steps)
            .and_then(|f| frame_to_response(&f))
            .err()
            .map(|e| e.message)
    }));
    match outcome {
        Ok(r) => Ok(r),
        Err(_) => Err(LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| "panic".into())),
    }
}

#[test]
fn hostile_options_never_panic() {
    std::panic::set_hook(Box::new(|info| {
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic".to_string()
        };
        let loc = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{loc}: {msg}")));
    }));

    let cases = load_cases();
    assert!(!cases.is_empty(), "no golden vectors found");
    let donors: Vec<Json> = cases
        .iter()
        .flat_map(|c| c.steps.iter().filter(|s| s.is_object()).cloned())
        .collect();

    // Build every mutation first (deterministic), then run them on a worker thread so that
    // a hang is reported instead of blocking the suite.
    let mut jobs: Vec<(usize, String, Json, Option<usize>)> = Vec::new();
    let per_case = std::env::var("ROBUSTNESS_MUTATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(MUTATIONS_PER_CASE);
    let seed: u64 = std::env::var("ROBUSTNESS_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    for (ci, case) in cases.iter().enumerate() {
        let mut rng = Rng::new(fnv1a(&case.name) ^ seed);
        for m in 0..per_case {
            let (desc, steps) = mutate_pipeline(&case.steps, &case.colnames, &donors, &mut rng);
            // One mutation in eight also runs on the first 0, 1 or 2 rows only.
            let rows = rng.chance(12).then(|| rng.below(3));
            let desc = match rows {
                Some(r) => format!("#{m} [first {r} rows] {desc}"),
                None => format!("#{m} {desc}"),
            };
            jobs.push((ci, desc, steps, rows));
        }
    }
    let total = jobs.len();

    type Outcome = (usize, Result<Option<String>, String>, Duration);
    let (tx, rx) = mpsc::channel::<Outcome>();
    let (job_tx, job_rx) = mpsc::channel::<(usize, usize, Json, Option<usize>)>();
    let cases = std::sync::Arc::new(cases);
    let worker_cases = std::sync::Arc::clone(&cases);
    std::thread::spawn(move || {
        for (job, ci, steps, rows) in job_rx {
            let start = Instant::now();
            ARMED.store(true, Ordering::Relaxed);
            let r = run_one(&worker_cases[ci], &steps, rows);
            ARMED.store(false, Ordering::Relaxed);
            if tx.send((job, r, start.elapsed())).is_err() {
                break;
            }
        }
    });

    let started = Instant::now();
    let mut failures: Vec<String> = Vec::new();
    let mut distinct: BTreeMap<String, usize> = BTreeMap::new();
    let (mut succeeded, mut errors) = (0usize, BTreeMap::<String, usize>::new());
    let mut slowest: Vec<(Duration, String)> = Vec::new();
    for (job, (ci, desc, steps, rows)) in jobs.into_iter().enumerate() {
        let label = format!("{} {desc}", cases[ci].name);
        set_label(&label);
        job_tx
            .send((job, ci, steps.clone(), rows))
            .expect("worker alive");
        match rx.recv_timeout(HANG) {
            Ok((_, Ok(outcome), took)) if took <= SLOW_RUN => match outcome {
                _ if took > Duration::from_millis(500) => slowest.push((took, label)),
                None => succeeded += 1,
                Some(message) => {
                    let message: String = message.chars().take(70).collect();
                    *errors.entry(message).or_default() += 1;
                }
            },
            Ok((_, Ok(_), took)) => {
                failures.push(format!(
                    "SLOW ({took:?}) {label}\n    steps: {}",
                    short(&steps)
                ));
                *distinct.entry("slow run".into()).or_default() += 1;
            }
            Ok((_, Err(panic), _)) => {
                let site = panic.split(": ").next().unwrap_or("").to_string();
                *distinct.entry(site).or_default() += 1;
                failures.push(format!("PANIC {label}\n    {panic}\n    steps: {}", steps));
            }
            Err(_) => {
                failures.push(format!("HANG (> {HANG:?}) {label}\n    steps: {steps}"));
                for f in &failures {
                    println!("{f}");
                }
                panic!("a mutation ran for more than {HANG:?}: {label}");
            }
        }
    }
    for f in &failures {
        println!("{f}");
    }
    println!(
        "robustness: {total} mutations over {} cases in {:?}, {} failures",
        cases.len(),
        started.elapsed(),
        failures.len()
    );
    println!(
        "robustness: {succeeded} succeeded, {} clean errors ({} distinct messages)",
        errors.values().sum::<usize>(),
        errors.len()
    );
    slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (took, label) in slowest.iter().take(5) {
        println!("  slowest: {took:?} {label}");
    }
    if std::env::var_os("ROBUSTNESS_VERBOSE").is_some() {
        let mut by_count: Vec<_> = errors.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1));
        for (message, n) in by_count.iter().take(60) {
            println!("  {n:6} {message}");
        }
    }
    for (site, n) in &distinct {
        println!("  {n:5} × {site}");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} mutations panicked, hung or ran slow (sites: {:?})",
        failures.len(),
        distinct.keys().collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------------------
// Resource limits: options that would make a tiny frame explode are refused up front.

fn run_records(colnames: &[&str], dtypes: Json, records: Json, steps: Json) -> Result<(), String> {
    let colnames: Vec<String> = colnames.iter().map(|c| c.to_string()).collect();
    let dtypes = dtypes.as_object().cloned().unwrap_or_default();
    let records = records.as_array().cloned().unwrap_or_default();
    let frame = frame_from_records(&colnames, &dtypes, &records);
    run_pipeline(frame, &steps)
        .and_then(|f| frame_to_response(&f))
        .map(|_| ())
        .map_err(|e| e.message)
}

fn two_timestamps(rule: &str) -> Result<(), String> {
    run_records(
        &["ts", "v"],
        json!({"ts": "datetime64[us]", "v": "float64"}),
        // 2001-01-01 and 2021-01-01, in milliseconds.
        json!([{"ts": 978_307_200_000.0_f64, "v": 1.0}, {"ts": 1_609_459_200_000.0_f64, "v": 2.0}]),
        json!([
            {"operation": "pivot", "options": {"index": ["ts"], "aggregates": {"v": {"operator": "sum"}}}},
            {"operation": "resample", "options": {"rule": rule, "method": "asfreq"}},
        ]),
    )
}

#[test]
fn resample_refuses_too_many_rows() {
    // Twenty years: daily is fine, every minute or finer is over the limit.
    assert_eq!(two_timestamps("1D"), Ok(()));
    assert_eq!(two_timestamps("W"), Ok(()));
    assert_eq!(two_timestamps("MS"), Ok(()));
    for rule in ["1min", "1s", "1ms", "1us"] {
        let err = two_timestamps(rule).expect_err(rule);
        assert!(err.contains("limit"), "{rule}: {err}");
    }
    for rule in ["99999999999999999999D", "1000000000Y", "100001D", "10001M"] {
        let err = two_timestamps(rule).expect_err(rule);
        assert!(err.contains("too long"), "{rule}: {err}");
    }
    assert_eq!(two_timestamps("10000Y"), Ok(()));
}

#[test]
fn pivot_refuses_too_many_cells() {
    // Without `drop_missing_columns`, six index columns of 20 distinct values each would be
    // a 64,000,000-row cartesian product.
    let records: Vec<Json> = (0..20)
        .map(|i| json!({"a": i, "b": i, "c": i, "d": i, "e": i, "f": i, "v": 1}))
        .collect();
    let cols = ["a", "b", "c", "d", "e", "f", "v"];
    let dtypes = json!({"a": "int64", "b": "int64", "c": "int64", "d": "int64",
                        "e": "int64", "f": "int64", "v": "int64"});
    let pivot = |index: Json, dropna: bool| {
        json!([{"operation": "pivot", "options": {
            "index": index, "aggregates": {"v": {"operator": "sum"}},
            "drop_missing_columns": dropna}}])
    };
    let err = run_records(
        &cols,
        dtypes.clone(),
        Json::Array(records.clone()),
        pivot(json!(["a", "b", "c", "d", "e", "f"]), false),
    )
    .expect_err("cartesian product over the limit");
    assert!(err.contains("cells"), "{err}");
    // The same index repeated overflows `usize` in the product: still a clean error.
    let err = run_records(
        &cols,
        dtypes.clone(),
        Json::Array(records.clone()),
        pivot(json!(vec!["a"; 40]), false),
    )
    .expect_err("product overflow");
    assert!(err.contains("cells"), "{err}");
    // Three levels (8,000 rows) are fine, and so is the product with dropna.
    run_records(
        &cols,
        dtypes.clone(),
        Json::Array(records.clone()),
        pivot(json!(["a", "b", "c"]), false),
    )
    .expect("8,000 rows");
    run_records(
        &cols,
        dtypes,
        Json::Array(records),
        pivot(json!(["a", "b", "c", "d", "e", "f"]), true),
    )
    .expect("20 rows");
}

#[test]
fn huge_numeric_options_are_errors_or_harmless() {
    let cols = ["a"];
    let dtypes = json!({"a": "int64"});
    let records = json!([{"a": 1}, {"a": 2}, {"a": 3}]);
    let run = |steps: Json| run_records(&cols, dtypes.clone(), records.clone(), steps);
    let err = run(json!([{"operation": "rolling", "options": {
        "rolling_type": "sum", "columns": {"a": "a"}, "window": i64::MAX}}]))
    .expect_err("window over the limit");
    assert!(err.contains("at most"), "{err}");
    // A window longer than the frame (within the limit) is fine, like in pandas.
    run(json!([{"operation": "rolling", "options": {
        "rolling_type": "sum", "columns": {"a": "a"}, "window": 2_147_483_647_i64,
        "min_periods": 1}}]))
    .expect("window longer than the frame");
    let err = run(json!([{"operation": "rolling", "options": {
        "rolling_type": "sum", "columns": {"a": "a"}, "window": 3,
        "min_periods": 4_294_967_297_i64}}]))
    .expect_err("min_periods over the window");
    assert!(err.contains("must be <= window"), "{err}");
    for periods in [json!(i64::MIN), json!(i64::MAX), json!(-1e308)] {
        run(
            json!([{"operation": "diff", "options": {"columns": {"a": "d"},
            "periods": periods}}]),
        )
        .expect("periods beyond the frame give NaN");
    }
    for precision in [i64::MIN, i64::MAX] {
        run_records(
            &["a", "b"],
            json!({"a": "int64", "b": "int64"}),
            json!([{"a": 1, "b": 2}]),
            json!([{"operation": "compare", "options": {"source_columns": ["a"],
                "compare_columns": ["b"], "compare_type": "ratio", "precision": precision}}]),
        )
        .expect("any precision rounds");
    }
}

#[test]
fn resample_refuses_too_many_cells() {
    // 5,000,001 hourly rows (about 570 years) of 20 columns: under the row limit, over the
    // cell limit.
    let mut record = serde_json::Map::new();
    let mut dtypes = serde_json::Map::new();
    let mut cols = vec!["ts".to_string()];
    dtypes.insert("ts".into(), json!("datetime64[us]"));
    for i in 0..20 {
        let c = format!("v{i}");
        record.insert(c.clone(), json!(1.0));
        dtypes.insert(c.clone(), json!("float64"));
        cols.push(c);
    }
    let hours = 5_000_000_i64;
    let mut first = record.clone();
    first.insert("ts".into(), json!(0.0));
    let mut last = record;
    last.insert("ts".into(), json!((hours * 3_600_000) as f64));
    let colrefs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let aggregates: Map<String, Json> = cols[1..]
        .iter()
        .map(|c| (c.clone(), json!({"operator": "sum"})))
        .collect();
    let err = run_records(
        &colrefs,
        Json::Object(dtypes),
        json!([first, last]),
        json!([
            {"operation": "pivot", "options": {"index": ["ts"], "aggregates": aggregates}},
            {"operation": "resample", "options": {"rule": "1H", "method": "asfreq"}},
        ]),
    )
    .expect_err("over the cell limit");
    assert!(err.contains("cells"), "{err}");
}
