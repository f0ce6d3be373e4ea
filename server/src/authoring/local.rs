//! `liteset plugin build` and `liteset plugin test`: the component through the server's own
//! plugin host, locally.
//!
//! Both load the component with [`Plugins::install`] into a registry over a throwaway SQLite
//! store with the default [`PluginConfig`]: the same compile, inspection (world, WIT version,
//! import allowlist), smoke calls and limits as an upload to a server with default settings,
//! so nothing here duplicates the server's checks.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::{Value as Json, json};

use super::{AuthoringError, BuildArgs, Result, TestArgs, read_input};
use crate::config::PluginConfig;
use crate::plugins::registry::Loaded;
use crate::plugins::{Kind, PluginError, PluginSummary, Plugins, table, viz};
use crate::query::frame::Frame;
use crate::store::{Location, Store};

/// A plugin registry in a temp data dir, removed on drop.
struct LocalHost {
    plugins: Plugins,
    _dir: tempfile::TempDir,
}

impl LocalHost {
    async fn new() -> Result<LocalHost> {
        let dir = tempfile::Builder::new()
            .prefix("liteset-plugin.")
            .tempdir()
            .map_err(|e| AuthoringError::Io(format!("cannot create a temp dir: {e}")))?;
        let host_err = |e: crate::store::Error| {
            AuthoringError::Plugin(PluginError::Internal(format!("local store: {e}")))
        };
        let store = Store::open(Location::Sqlite(&dir.path().join("metadata.db")), 1)
            .await
            .map_err(host_err)?;
        store.migrate().await.map_err(host_err)?;
        let plugins = Plugins::new(&PluginConfig::default(), store, dir.path())?;
        Ok(LocalHost { plugins, _dir: dir })
    }

    /// Validates, compiles and smoke-calls `wasm` exactly as an upload does.
    async fn load(&self, wasm: Vec<u8>) -> Result<Arc<Loaded>> {
        let (summary, _) = self.plugins.install(wasm, None).await?;
        Ok(self.plugins.get(&summary.name).await?)
    }
}

/// `cargo`: the one running us when we run under cargo, else the one on `PATH`.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Builds the crate at `dir` for wasm32-wasip2 (release) and returns its component's path,
/// read from cargo's own artifact messages rather than guessed from the target dir.
fn cargo_build(dir: &Path) -> Result<PathBuf> {
    let manifest = dir.join("Cargo.toml");
    if !manifest.is_file() {
        return Err(AuthoringError::Usage(format!(
            "no Cargo.toml in {} (give the plugin crate with --path)",
            dir.display()
        )));
    }
    let manifest = std::fs::canonicalize(&manifest)
        .map_err(|e| AuthoringError::Usage(format!("{}: {e}", manifest.display())))?;
    // Diagnostics rendered for humans on stderr; artifact messages as JSON on stdout.
    let mut child = cargo()
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--message-format=json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| AuthoringError::Build(format!("cannot run cargo: {e}")))?;
    let mut wasm = None;
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(msg) = serde_json::from_str::<Json>(&line) else {
                continue;
            };
            // Dependencies are artifacts too; ours is the package of this manifest.
            let ours = msg["manifest_path"]
                .as_str()
                .and_then(|p| std::fs::canonicalize(p).ok())
                .is_some_and(|p| p == manifest);
            let cdylib = msg["target"]["crate_types"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "cdylib"));
            if msg["reason"] == "compiler-artifact" && ours && cdylib {
                wasm = msg["filenames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Json::as_str)
                    .find(|f| f.ends_with(".wasm"))
                    .map(PathBuf::from);
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| AuthoringError::Build(format!("cargo: {e}")))?;
    if !status.success() {
        return Err(AuthoringError::Build(
            "cargo build --release --target wasm32-wasip2 failed (if the target is missing: \
             rustup target add wasm32-wasip2)"
                .into(),
        ));
    }
    wasm.ok_or_else(|| {
        AuthoringError::Build(
            "the build produced no .wasm: the crate needs `crate-type = [\"cdylib\", ...]` \
             under [lib]"
                .into(),
        )
    })
}

fn print_summary(s: &PluginSummary) {
    println!("kind: {}", s.kind.as_str());
    println!("name: {}", s.name);
    println!("version: {}", s.version);
    if s.kind == Kind::Viz {
        println!("viz_types: {}", s.viz_types.join(", "));
    }
    println!("wit_version: {}", s.wit_version);
    println!("sha256: {}", s.sha256);
    println!("size_bytes: {}", s.size_bytes);
}

/// `liteset plugin build`.
pub async fn build(args: &BuildArgs) -> Result<()> {
    let wasm_path = cargo_build(&args.path)?;
    let wasm = std::fs::read(&wasm_path)
        .map_err(|e| AuthoringError::Build(format!("{}: {e}", wasm_path.display())))?;
    let host = LocalHost::new().await?;
    let plugin = host.load(wasm).await?;
    println!("wasm: {}", wasm_path.display());
    print_summary(&plugin.summary);
    Ok(())
}

/// JSON from an argument: the text itself, or `@path` for a file's content.
fn json_arg(value: &str, what: &str) -> Result<Json> {
    let text = match value.strip_prefix('@') {
        Some(path) => String::from_utf8(read_input(Path::new(path), what)?)
            .map_err(|_| AuthoringError::Usage(format!("{what} {path} is not UTF-8")))?,
        None => value.to_owned(),
    };
    serde_json::from_str(&text)
        .map_err(|e| AuthoringError::Usage(format!("{what} is not valid JSON: {e}")))
}

/// The input table format of `liteset plugin test`: a JSON list of records, as chart-data's
/// `data` (see [`Frame::from_records`]).
pub fn records_frame(records: &Json, temporal: &[String]) -> Result<Frame> {
    Frame::from_records(records, &[], temporal)
        .map_err(|m| AuthoringError::Usage(format!("input: {m}")))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes)
        .map_err(|e| AuthoringError::Io(format!("cannot write {}: {e}", path.display())))
}

/// `liteset plugin test`: prints the output table as JSON records (post-processor), or a JSON
/// object with the viz plugin's `query_context`, `payload` and sanitised `svg`.
pub async fn test(args: &TestArgs) -> Result<()> {
    let wasm = read_input(&args.wasm, "the component")?;
    let input: Json = serde_json::from_slice(&read_input(&args.input, "the input")?)
        .map_err(|e| AuthoringError::Usage(format!("input is not valid JSON: {e}")))?;
    let frame = records_frame(&input, &args.temporal)?;
    let host = LocalHost::new().await?;
    let plugin = host.load(wasm).await?;
    let out = match plugin.summary.kind {
        Kind::PostProcessor => {
            let params = json_arg(&args.params, "--params")?;
            let operation = args.operation.as_deref().unwrap_or(&plugin.summary.name);
            let t = host
                .plugins
                .post_process(
                    &plugin,
                    operation,
                    &params.to_string(),
                    &table::from_frame(&frame),
                    "plugin-test",
                )
                .await?;
            Json::Array(table::to_frame(&t).records())
        }
        Kind::Viz => {
            let form = json_arg(&args.form_data, "--form-data")?;
            crate::render::check_size(args.width, args.height, args.png.is_some())
                .map_err(|e| AuthoringError::Usage(e.to_string()))?;
            let form_text = form.to_string();
            // A viz plugin may not build queries (charts then need a saved query context).
            let query_context = match host
                .plugins
                .build_query(&plugin, &form_text, "plugin-test")
                .await
            {
                Ok(q) => q,
                Err(PluginError::Failed {
                    kind: crate::plugins::GuestErrorKind::Unsupported,
                    ..
                }) => Json::Null,
                Err(e) => return Err(e.into()),
            };
            let rendered = host
                .plugins
                .render(
                    &plugin,
                    &form_text,
                    vec![(0, viz::frame_table(&frame))],
                    (args.width, args.height),
                    "plugin-test",
                )
                .await?;
            let svg = match &rendered.svg {
                None => None,
                Some(raw) => Some(
                    crate::render::sanitize::sanitize(raw, args.width, args.height).map_err(
                        |e| {
                            AuthoringError::Plugin(PluginError::BadOutput {
                                plugin: plugin.summary.name.clone(),
                                detail: format!("the SVG is refused: {e}"),
                            })
                        },
                    )?,
                ),
            };
            if let Some(path) = &args.svg {
                let svg = svg.as_deref().ok_or_else(|| {
                    AuthoringError::Usage("--svg: the render returned no SVG".into())
                })?;
                write_file(path, svg.as_bytes())?;
            }
            if let Some(path) = &args.png {
                let svg = svg.as_deref().ok_or_else(|| {
                    AuthoringError::Usage("--png: the render returned no SVG".into())
                })?;
                let png = crate::render::raster::png(svg, args.width, args.height)
                    .map_err(|e| AuthoringError::Io(format!("rasterising the SVG: {e}")))?;
                write_file(path, &png)?;
            }
            json!({"query_context": query_context, "payload": rendered.payload, "svg": svg})
        }
    };
    let text = serde_json::to_string_pretty(&out)
        .map_err(|e| AuthoringError::Io(format!("printing the output: {e}")))?;
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{Cell, GenericType};

    #[test]
    fn records_become_a_typed_frame() {
        let input = json!([
            {"ds": 86_400_000, "city": "Cork", "n": 1, "x": 1.5, "ok": true},
            {"ds": "1970-01-03T00:00:00Z", "city": null, "n": 2, "x": 2},
            {"extra": {"a": 1}}
        ]);
        let f = records_frame(&input, &["ds".into()]).unwrap();
        assert_eq!(f.colnames, ["ds", "city", "n", "x", "ok", "extra"]);
        assert_eq!(f.coltypes[0], GenericType::Temporal);
        assert_eq!(f.coltypes[2], GenericType::Numeric);
        assert_eq!(f.rows[2][1], Cell::Null);
        let back = f.records();
        assert_eq!(back[0]["ds"], json!(86_400_000.0));
        assert_eq!(back[1]["ds"], json!(172_800_000.0));
        assert_eq!(back[0]["city"], "Cork");
    }

    #[test]
    fn bad_input_is_a_usage_error() {
        for input in [json!({"a": 1}), json!([1, 2])] {
            assert!(matches!(
                records_frame(&input, &[]),
                Err(AuthoringError::Usage(_))
            ));
        }
        assert!(matches!(
            records_frame(&json!([{"a": 1}]), &["b".into()]),
            Err(AuthoringError::Usage(_))
        ));
        assert!(matches!(
            json_arg("{nope", "--params"),
            Err(AuthoringError::Usage(_))
        ));
    }
}
