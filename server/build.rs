//! Builds the built-in plugins (post-processing and viz) for `wasm32-wasip2` and leaves the
//! components in `OUT_DIR`, where `plugins/registry.rs` embeds them: a plain `cargo build` of
//! the server is all a fresh clone needs.
//!
//! The nested cargo uses its own target directory: the outer build holds the lock on ours.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// Code generation for the sandbox (measured on the pivot + flatten bench, see BENCHMARKS.md;
/// sdk/README.md recommends the same flags to plugin authors):
/// - wasmtime checks for interruption (the epoch deadline) on every loop iteration, and LLVM
///   does not unroll wasm loops that contain a call, which every bounds-checked row loop does
///   (its panic path). Forced unrolling by 8 pays that check once per 8 rows: 10k rows went
///   from 172 to 139 µs.
/// - SIMD128 (wasmtime compiles it to SSE/NEON) vectorises the plain loops: 139 to 133 µs.
/// - An 8 MiB initial memory (the default `plugins.keep_resident_mb`) spares a table of
///   moderate size the `memory.grow` calls, each an `mprotect`, that growing the heap
///   step by step costs: 133 to 121 µs.
const GUEST_RUSTFLAGS: &[&str] = &[
    "-Ctarget-feature=+simd128",
    "-Cllvm-args=-unroll-runtime",
    "-Cllvm-args=-unroll-count=8",
    "-Clink-arg=--initial-memory=8388608",
];

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("workspace root").to_path_buf();
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    for p in [
        "plugins/postprocessing",
        "plugins/viz",
        "sdk",
        "wit",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map(|d| PathBuf::from(d).join("wasm-plugins"))
        .unwrap_or_else(|| root.join("target").join("wasm-plugins"));
    // A fresh rustup toolchain lacks the guest target; adding it here keeps `cargo build` (and
    // the README's one-command start) working from a fresh clone. Idempotent and quick when the
    // target is present; without rustup the build below explains what is missing.
    let _ = Command::new("rustup")
        .args(["target", "add", "wasm32-wasip2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args([
            "build",
            "--profile",
            "wasm-plugin",
            "--target",
            "wasm32-wasip2",
            "-p",
            "liteset-plugin-postprocessing",
            "-p",
            "liteset-plugin-viz",
            "--target-dir",
        ])
        .arg(&target_dir);
    // Flags meant for the host build (clippy's wrapper, coverage or sanitizer flags) must not
    // leak into the guest build.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("CARGO_ENCODED_RUSTFLAGS", GUEST_RUSTFLAGS.join("\x1f"));
    let status = cmd.status().expect("running cargo for the built-in plugin");
    if !status.success() {
        panic!(
            "building the built-in plugins failed; is the wasm32-wasip2 target installed? \
             (rustup target add wasm32-wasip2)"
        );
    }
    for (artifact, embedded) in [
        ("liteset_plugin_postprocessing.wasm", "postprocessing.wasm"),
        ("liteset_plugin_viz.wasm", "viz.wasm"),
    ] {
        let wasm = target_dir
            .join("wasm32-wasip2")
            .join("wasm-plugin")
            .join(artifact);
        std::fs::copy(&wasm, out.join(embedded))
            .unwrap_or_else(|e| panic!("copying {}: {e}", wasm.display()));
    }
}
