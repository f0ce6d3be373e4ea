//! The plugin author's path, end to end, as the guide (`sdk/README.md`, "From nothing to a
//! chart") walks it: the real `liteset` binary scaffolds a crate (`liteset plugin new`), cargo
//! tests and builds it for wasm32-wasip2 (`liteset plugin build`), `liteset plugin test` runs
//! the component locally, and `liteset plugin install` uploads it to a real server whose chart
//! of the new `viz_type` renders as SVG and thumbnail PNG. The standalone `examples/` plugins
//! go through the same tools.
//!
//! Plugin crates build into one shared target dir, `<target>/authoring-plugins`, so reruns
//! are incremental (a cold wasm build of the SDK takes about a minute).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, liteset_bin, pg};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// `<target>/authoring-plugins`: next to the profile folders of the target dir this test was
/// built into.
fn plugins_target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.ancestors()
        .nth(3)
        .unwrap_or_else(|| exe.parent().expect("parent"))
        .join("authoring-plugins")
}

/// The examples folder of this checkout.
fn examples_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("../examples")
}

/// A command with the environment of a plugin author's shell: no `LITESET_*` from the test
/// process, no flags that would make cargo rebuild the world, the shared target dir.
fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("LITESET_") {
            cmd.env_remove(key);
        }
    }
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("CARGO_TARGET_DIR", plugins_target_dir());
    cmd
}

/// Runs `liteset <args>` with extra environment; returns its output.
fn liteset(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(liteset_bin());
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run liteset")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `liteset <args>`, asserting success; returns stdout.
fn liteset_ok(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = liteset(args, env);
    assert!(
        out.status.success(),
        "liteset {args:?}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `cargo test` in a plugin crate, as its author would run it.
fn cargo_test(dir: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = command(cargo)
        .args(["test", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .output()
        .expect("run cargo test");
    assert!(
        out.status.success(),
        "cargo test in {}:\n{}\n{}",
        dir.display(),
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("test result: ok"),
        "{}",
        text(&out.stdout)
    );
}

/// `liteset plugin build --path dir`: the `key: value` lines it prints, and how long it took.
fn build(dir: &Path) -> (Vec<(String, String)>, f64) {
    let started = Instant::now();
    let out = liteset_ok(
        &[
            "plugin",
            "build",
            "--path",
            dir.to_str().expect("utf-8 path"),
        ],
        &[],
    );
    let secs = started.elapsed().as_secs_f64();
    let fields = out
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    (fields, secs)
}

fn field<'a>(fields: &'a [(String, String)], key: &str) -> &'a str {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in {fields:?}"))
}

/// Decodes a PNG; returns (width, height), asserting something was drawn.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    assert!(buf.iter().any(|b| *b != 255), "the PNG is blank");
    (info.width, info.height)
}

async fn get_bytes(api: &Api, path: &str) -> (StatusCode, String, Vec<u8>) {
    let resp = api
        .request(reqwest::Method::GET, path)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = resp.status();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, ct, resp.bytes().await.expect("body").to_vec())
}

/// A fresh analytics database with a small `people` table; returns its URL.
async fn analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE people (id int PRIMARY KEY, name text, city text, score float8); \
             INSERT INTO people VALUES (1, 'Ann', 'Cork', 1.5), (2, 'Bob', 'Paris', 2.5), \
             (3, 'Cy', 'Paris', NULL), (4, 'Dee', NULL, 4.0);",
        )
        .await
        .expect("fixture");
    url
}

#[tokio::test]
async fn a_scaffolded_viz_plugin_is_built_installed_and_draws_a_chart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crate_dir = dir.path().join("myviz");
    let crate_path = crate_dir.to_str().expect("utf-8 path");
    let out = liteset_ok(
        &[
            "plugin", "new", "myviz", "--kind", "viz", "--path", crate_path,
        ],
        &[],
    );
    assert!(out.contains("created viz plugin myviz"), "{out}");
    // The scaffold passes its own tests and builds exactly as generated.
    cargo_test(&crate_dir);
    let (fields, secs) = build(&crate_dir);
    assert_eq!(field(&fields, "kind"), "viz");
    assert_eq!(field(&fields, "name"), "myviz");
    assert_eq!(field(&fields, "version"), "0.1.0");
    assert_eq!(field(&fields, "viz_types"), "myviz");
    assert_eq!(field(&fields, "wit_version"), "0.2.0");
    let wasm = PathBuf::from(field(&fields, "wasm"));
    println!(
        "scaffolded viz: built in {secs:.1} s, {} bytes",
        std::fs::metadata(&wasm).expect("wasm").len()
    );

    // Locally first, as the guide does: build-query on the form data, render on records.
    let records = dir.path().join("result.json");
    std::fs::write(
        &records,
        json!([{"city": "Cork", "people": 3}, {"city": "Paris", "people": 5}]).to_string(),
    )
    .expect("write");
    let png_path = dir.path().join("chart.png");
    let out = liteset_ok(
        &[
            "plugin",
            "test",
            wasm.to_str().expect("utf-8"),
            "--input",
            records.to_str().expect("utf-8"),
            "--form-data",
            r#"{"metric": "people", "groupby": ["city"], "slice_name": "Local"}"#,
            "--width",
            "400",
            "--height",
            "300",
            "--png",
            png_path.to_str().expect("utf-8"),
        ],
        &[],
    );
    let local: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        local["query_context"]["queries"][0]["columns"],
        json!(["city"])
    );
    let svg = local["svg"].as_str().expect("svg");
    assert_eq!(svg.matches(r#"class="bar""#).count(), 2, "{svg}");
    assert!(svg.find("Paris") < svg.find("Cork"), "{svg}");
    assert_eq!(
        png_size(&std::fs::read(&png_path).expect("png")),
        (400, 300)
    );

    // Install it on a server (PostgreSQL metadata) with the credentials in the environment.
    let url = analytics().await;
    let server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .start()
        .await
        .expect("server");
    let creds = [
        ("LITESET_USERNAME", "admin"),
        ("LITESET_PASSWORD", ADMIN_PASSWORD),
    ];
    let wasm_arg = wasm.to_str().expect("utf-8");
    let out = liteset_ok(
        &["plugin", "install", wasm_arg, "--server", server.base_url()],
        &creds,
    );
    assert!(out.starts_with("installed: myviz 0.1.0"), "{out}");
    assert!(!out.contains(ADMIN_PASSWORD));
    let out = liteset_ok(
        &["plugin", "install", wasm_arg, "--server", server.base_url()],
        &creds,
    );
    assert!(out.starts_with("replaced: myviz 0.1.0"), "{out}");

    // A wrong password fails (exit 1) without echoing it; none at all is a usage error (2).
    let bad = liteset(
        &["plugin", "install", wasm_arg, "--server", server.base_url()],
        &[
            ("LITESET_USERNAME", "admin"),
            ("LITESET_PASSWORD", "not-the-password"),
        ],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("login as admin failed"));
    assert!(!text(&bad.stderr).contains("not-the-password"));
    let missing = liteset(
        &["plugin", "install", wasm_arg, "--server", server.base_url()],
        &[("LITESET_USERNAME", "admin")],
    );
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing.stderr));

    // A chart of the new viz_type, created through the API as the guide's curl does.
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, db) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": "analytics", "sqlalchemy_uri": url}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db["id"], "schema": "public", "table_name": "people"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let count = json!({"expressionType": "SQL", "sqlExpression": "COUNT(*)", "label": "people"});
    let params = json!({"metric": count, "groupby": ["city"]});
    let (s, chart) = api
        .post(
            "/api/v1/chart/",
            json!({"slice_name": "People by city", "viz_type": "myviz",
                   "datasource_id": ds["id"], "datasource_type": "table",
                   "params": params.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{chart}");
    let id = chart["id"].as_i64().expect("id");

    let (s, ct, body) = get_bytes(
        &api,
        &format!("/api/v1/chart/{id}/render.svg?width=480&height=320"),
    )
    .await;
    let svg = text(&body);
    assert_eq!(s, StatusCode::OK, "{svg}");
    assert_eq!(ct, "image/svg+xml");
    // What the scaffold draws: the title, one bar per city (NULL included), longest first.
    let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(texts.first(), Some(&"People by city"), "{svg}");
    let bars: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("bar"))
        .filter_map(|n| n.attribute("data-name"))
        .collect();
    assert_eq!(bars.len(), 3, "{svg}");
    assert_eq!(bars[0], "Paris", "{svg}");
    assert!(bars.contains(&"Cork") && bars.contains(&"(null)"), "{svg}");
    assert_eq!(doc.root_element().attribute("width"), Some("480"), "{svg}");

    // Its thumbnail: Superset's digest URL from the chart, an 800×600 PNG.
    let (s, c) = api.get(&format!("/api/v1/chart/{id}")).await;
    assert_eq!(s, StatusCode::OK, "{c}");
    let thumb = c["result"]["thumbnail_url"]
        .as_str()
        .unwrap_or_else(|| panic!("no thumbnail_url: {c}"));
    let (s, ct, png) = get_bytes(&api, thumb).await;
    assert_eq!(s, StatusCode::OK, "{thumb}: {}", text(&png));
    assert_eq!(ct, "image/png");
    assert_eq!(png_size(&png), (800, 600));
}

#[tokio::test]
async fn a_scaffolded_post_processor_runs_locally() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crate_dir = dir.path().join("scale");
    let crate_path = crate_dir.to_str().expect("utf-8 path");

    // Names the server would refuse are refused here, with the usage exit code.
    let bad = liteset(
        &[
            "plugin",
            "new",
            "Pivot!",
            "--kind",
            "post-processor",
            "--path",
            crate_path,
        ],
        &[],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    let bad = liteset(
        &[
            "plugin",
            "new",
            "pivot",
            "--kind",
            "post-processor",
            "--path",
            crate_path,
        ],
        &[],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("reserved"));

    liteset_ok(
        &[
            "plugin",
            "new",
            "scale",
            "--kind",
            "post-processor",
            "--path",
            crate_path,
        ],
        &[],
    );
    cargo_test(&crate_dir);
    let (fields, secs) = build(&crate_dir);
    assert_eq!(field(&fields, "kind"), "post-processor");
    assert_eq!(field(&fields, "name"), "scale");
    let wasm = field(&fields, "wasm").to_owned();
    println!(
        "scaffolded post-processor: built in {secs:.1} s, {} bytes",
        std::fs::metadata(&wasm).expect("wasm").len()
    );

    let input = dir.path().join("input.json");
    std::fs::write(
        &input,
        r#"[{"city": "Cork", "sales": 1.5}, {"city": "Paris", "sales": null}, {"city": "Oslo", "sales": 2}]"#,
    )
    .expect("write");
    let input = input.to_str().expect("utf-8");
    let out = liteset_ok(
        &[
            "plugin",
            "test",
            &wasm,
            "--input",
            input,
            "--params",
            r#"{"column": "sales", "factor": 10}"#,
        ],
        &[],
    );
    let records: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        records,
        json!([
            {"city": "Cork", "sales": 1.5, "sales_scaled": 15.0},
            {"city": "Paris", "sales": null, "sales_scaled": null},
            {"city": "Oslo", "sales": 2.0, "sales_scaled": 20.0},
        ])
    );

    // The plugin's own error is shown (exit 1); unreadable input is a usage error (exit 2).
    let failed = liteset(
        &["plugin", "test", &wasm, "--input", input, "--params", "{}"],
        &[],
    );
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        text(&failed.stderr).contains("`column` is required"),
        "{}",
        text(&failed.stderr)
    );
    let bad_json = dir.path().join("bad.json");
    std::fs::write(&bad_json, "[{").expect("write");
    let failed = liteset(
        &[
            "plugin",
            "test",
            &wasm,
            "--input",
            bad_json.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(failed.status.code(), Some(2), "{}", text(&failed.stderr));
    // A file that is not a component is refused by the server's own checks.
    let failed = liteset(&["plugin", "test", input, "--input", input], &[]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    assert!(text(&failed.stderr).contains("not a WebAssembly binary"));
}

/// The standalone examples pass their own tests, build as components the server accepts, and
/// do what their READMEs say through `liteset plugin test`.
#[tokio::test]
async fn the_examples_build_test_and_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let examples = examples_dir();

    let zscore = examples.join("zscore");
    cargo_test(&zscore);
    let (fields, secs) = build(&zscore);
    assert_eq!(field(&fields, "kind"), "post-processor");
    assert_eq!(field(&fields, "name"), "zscore");
    let wasm = field(&fields, "wasm").to_owned();
    println!(
        "examples/zscore: built in {secs:.1} s, {} bytes",
        std::fs::metadata(&wasm).expect("wasm").len()
    );
    let input = dir.path().join("in.json");
    std::fs::write(
        &input,
        r#"[{"day":"a","sales":5},{"day":"b","sales":5},{"day":"c","sales":6},{"day":"d","sales":60},{"day":"e","sales":null}]"#,
    )
    .expect("write");
    let out = liteset_ok(
        &[
            "plugin",
            "test",
            &wasm,
            "--input",
            input.to_str().expect("utf-8"),
            "--params",
            r#"{"column": "sales", "threshold": 1.4}"#,
        ],
        &[],
    );
    let rows: Value = serde_json::from_str(&out).expect("JSON");
    let flags: Vec<&Value> = rows
        .as_array()
        .expect("records")
        .iter()
        .map(|r| &r["sales__outlier"])
        .collect();
    assert_eq!(
        flags,
        [
            &json!(false),
            &json!(false),
            &json!(false),
            &json!(true),
            &Value::Null
        ],
        "{out}"
    );
    let z = rows[3]["sales__zscore"].as_f64().expect("z");
    assert!((z - 1.5).abs() < 0.01, "{z}");

    let waterfall = examples.join("waterfall");
    cargo_test(&waterfall);
    let (fields, secs) = build(&waterfall);
    assert_eq!(field(&fields, "kind"), "viz");
    assert_eq!(field(&fields, "viz_types"), "waterfall");
    let wasm = field(&fields, "wasm").to_owned();
    println!(
        "examples/waterfall: built in {secs:.1} s, {} bytes",
        std::fs::metadata(&wasm).expect("wasm").len()
    );
    let input = dir.path().join("result.json");
    std::fs::write(
        &input,
        r#"[{"step":"Sales","v":120},{"step":"Costs","v":-70},{"step":"Tax","v":-15}]"#,
    )
    .expect("write");
    let png = dir.path().join("waterfall.png");
    let out = liteset_ok(
        &[
            "plugin",
            "test",
            &wasm,
            "--input",
            input.to_str().expect("utf-8"),
            "--form-data",
            r#"{"metric": "v", "x_axis": "step", "slice_name": "Profit"}"#,
            "--png",
            png.to_str().expect("utf-8"),
        ],
        &[],
    );
    let result: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        result["query_context"]["queries"][0]["columns"][0]["columnType"],
        "BASE_AXIS"
    );
    let svg = result["svg"].as_str().expect("svg");
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
    let bars: Vec<(String, String)> = doc
        .descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("bar ")))
        .map(|n| {
            (
                n.attribute("class").unwrap_or_default().to_owned(),
                n.attribute("data-name").unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let want = [
        ("bar increase", "Sales"),
        ("bar decrease", "Costs"),
        ("bar decrease", "Tax"),
        ("bar total", "Total"),
    ];
    assert_eq!(
        bars,
        want.map(|(c, n)| (c.to_owned(), n.to_owned())),
        "{svg}"
    );
    assert!(svg.contains(">35<"), "the total: {svg}");
    assert_eq!(png_size(&std::fs::read(&png).expect("png")), (800, 600));
}
