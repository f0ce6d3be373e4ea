//! The process-wide wasmtime engine, its linker, the epoch ticker and the compiled-component
//! cache.
//!
//! One engine configuration for the whole process: compiled artifacts are only valid for the
//! tunables they were compiled with, so a single configuration keeps the on-disk cache valid.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use wasmtime::component::{Component, Linker, types::ComponentItem};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::call::CallState;
use super::{Kind, PluginError, Result, SUPPORTED_WIT_VERSIONS};
use crate::config::PluginConfig;

/// How often the epoch advances. A running guest yields to the tokio scheduler at every tick
/// and is stopped within one tick of its deadline.
pub const TICK: Duration = Duration::from_millis(10);

/// Interfaces a plugin may import. The WASI ones are linked but deny-all (no preopened
/// directories, no sockets, no environment, frozen clocks): Rust's standard library imports
/// some of them even when a plugin never opens a file, so refusing them would refuse ordinary
/// plugins, while linking them without capabilities gives a plugin nothing.
const ALLOWED_IMPORTS: &[&str] = &[
    "liteset:plugin/host@0.1.0",
    "liteset:plugin/types@0.1.0",
    "liteset:plugin/host@0.2.0",
    "liteset:plugin/types@0.2.0",
    "wasi:cli/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "wasi:sockets/",
];

/// Component instances the pool holds. Calls beyond `max_concurrent_calls` queue on a
/// semaphore before they reach the pool, so the pool never runs dry; the extra room covers
/// installs' smoke calls.
fn pool_instances(cfg: &PluginConfig) -> u32 {
    cfg.max_concurrent_calls.saturating_mul(2).max(4)
}

/// The engine and everything shared by all plugins.
pub struct Runtime {
    pub(super) engine: Engine,
    pub(super) linker: Linker<CallState>,
    /// Call slots; see [`PluginConfig::max_concurrent_calls`].
    slots: Arc<Semaphore>,
    pub(super) config: PluginConfig,
    cache_dir: Option<PathBuf>,
    ticker_stop: Arc<AtomicBool>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// What an inspected component exports.
#[derive(Debug)]
pub struct Inspection {
    /// The world its exports implement.
    pub kind: Kind,
    /// The `liteset:plugin` version of its exports (one of [`SUPPORTED_WIT_VERSIONS`]).
    pub wit_version: String,
    /// Whether it exports `chart-app` (a 0.2.0 viz must).
    pub chart_app: bool,
}

impl Runtime {
    /// Takes a call slot, waiting at most the queue timeout.
    pub async fn slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let wait = Duration::from_millis(self.config.queue_timeout_ms);
        match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(_)) => Err(PluginError::Internal("plugin slots closed".into())),
            Err(_) => Err(PluginError::Busy),
        }
    }

    /// Builds the engine (pooling allocator when the address space allows it, on-demand
    /// otherwise), the linker and the ticker thread.
    pub fn new(config: &PluginConfig, cache_dir: Option<PathBuf>) -> Result<Runtime> {
        let max_memory = usize::try_from(config.max_memory_mb << 20).unwrap_or(usize::MAX);
        let keep_resident = usize::try_from(config.keep_resident_mb << 20).unwrap_or(max_memory);
        let build = |pooling: bool| {
            let mut c = Config::new();
            c.wasm_component_model(true);
            c.epoch_interruption(true);
            if pooling {
                let n = pool_instances(config);
                let mut pool = PoolingAllocationConfig::default();
                // A Rust wasm32-wasip2 component uses three core instances, one or two
                // memories and tables; four of each per component leaves headroom.
                pool.total_component_instances(n)
                    .total_core_instances(4 * n)
                    .total_memories(4 * n)
                    .total_tables(4 * n)
                    .total_stacks(n)
                    .max_memory_size(max_memory)
                    .max_unused_warm_slots(n)
                    // Reset a reused slot's dirty pages with memset instead of madvise, and
                    // only those pages (PAGEMAP_SCAN, Linux 6.7+; ignored elsewhere): a fresh
                    // store then starts without page faults. Measured: the identity call went
                    // from 83 µs to 33–44 µs, pivot+flatten of 10k rows from 3.8 to 0.9 ms.
                    // Bounded (`plugins.keep_resident_mb`) so the pool's resident memory stays
                    // small: warm slots × this.
                    .linear_memory_keep_resident(keep_resident)
                    .table_keep_resident(64 << 10)
                    .pagemap_scan(wasmtime::Enabled::Auto);
                c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
            }
            Engine::new(&c)
        };
        let engine = match build(true) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "pooling allocator unavailable; plugins use on-demand allocation");
                build(false).map_err(|e| PluginError::Internal(e.to_string()))?
            }
        };
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| PluginError::Internal(e.to_string()))?;
        super::bindings::post_processor::liteset::plugin::host::add_to_linker::<
            CallState,
            wasmtime::component::HasSelf<CallState>,
        >(&mut linker, |s| s)
        .map_err(|e| PluginError::Internal(e.to_string()))?;
        // The same `host.log` under its 0.2.0 name: the linker matches instance names with
        // their version, and 0.1 and 0.2 are not semver-compatible.
        super::bindings::v020::post_processor::liteset::plugin::host::add_to_linker::<
            CallState,
            wasmtime::component::HasSelf<CallState>,
        >(&mut linker, |s| s)
        .map_err(|e| PluginError::Internal(e.to_string()))?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let weak = engine.weak();
        let stop = ticker_stop.clone();
        std::thread::Builder::new()
            .name("plugin-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| PluginError::Internal(e.to_string()))?;

        if let Some(dir) = &cache_dir {
            create_private_dir(dir)?;
        }
        Ok(Runtime {
            engine,
            linker,
            slots: Arc::new(Semaphore::new(config.max_concurrent_calls as usize)),
            config: config.clone(),
            cache_dir,
            ticker_stop,
        })
    }

    /// Compiles `wasm`, or loads it from the cache. Runs on the blocking pool: compiling takes
    /// tens to hundreds of milliseconds of CPU.
    pub async fn compile(self: &Arc<Self>, wasm: Arc<[u8]>) -> Result<Component> {
        let rt = self.clone();
        tokio::task::spawn_blocking(move || rt.compile_blocking(&wasm))
            .await
            .map_err(|e| PluginError::Internal(e.to_string()))?
    }

    fn compile_blocking(&self, wasm: &[u8]) -> Result<Component> {
        if wasm.len() < 8 || &wasm[..4] != b"\0asm" {
            return Err(PluginError::Rejected(
                "The file is not a WebAssembly binary".into(),
            ));
        }
        // A core module has version 1; a component has layer 1 in bytes 6..8.
        if wasm[6..8] != [1, 0] {
            return Err(PluginError::Rejected(
                "The file is a core WebAssembly module, not a component; build it for \
                 wasm32-wasip2 (see sdk/README.md)"
                    .into(),
            ));
        }
        let path = self.cache_dir.as_ref().map(|d| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            self.engine.precompile_compatibility_hash().hash(&mut h);
            let key = format!("{}-{:016x}", hex::encode(Sha256::digest(wasm)), h.finish());
            d.join(format!("{key}.cwasm"))
        });
        if let Some(p) = &path
            && p.exists()
        {
            match load_cached(&self.engine, p) {
                Ok(c) => return Ok(c),
                Err(e) => {
                    tracing::warn!(path = %p.display(), error = %e, "discarding unusable compiled plugin")
                }
            }
        }
        let component = Component::from_binary(&self.engine, wasm)
            .map_err(|e| PluginError::Rejected(format!("The component is invalid: {e}")))?;
        if let Some(p) = &path {
            // A cache write failure costs a recompile next time, nothing more.
            if let Err(e) = component
                .serialize()
                .map_err(|e| e.to_string())
                .and_then(|bytes| write_private(p, &bytes).map_err(|e| e.to_string()))
            {
                tracing::warn!(path = %p.display(), error = %e, "could not cache a compiled plugin");
            }
        }
        Ok(component)
    }

    /// Finds the world and WIT version from the component's export names and checks its
    /// imports against the allowlist.
    pub fn inspect(&self, component: &Component) -> Result<Inspection> {
        let ty = component.component_type();
        for (name, _) in ty.imports(&self.engine) {
            if !ALLOWED_IMPORTS.iter().any(|a| name.starts_with(a)) {
                return Err(PluginError::Rejected(format!(
                    "The component imports {name}, which plugins may not use (allowed: \
                     liteset:plugin/host, wasi:cli, wasi:io, wasi:clocks, wasi:random, \
                     wasi:filesystem, wasi:sockets; the WASI ones without any capability)"
                )));
            }
        }
        let mut kind = None;
        let mut version: Option<String> = None;
        let mut chart_app = false;
        for (name, item) in ty.exports(&self.engine) {
            let Some(rest) = name.strip_prefix("liteset:plugin/") else {
                continue;
            };
            let (iface, v) = rest.split_once('@').unwrap_or((rest, ""));
            if !matches!(item.ty, ComponentItem::ComponentInstance(_)) {
                continue;
            }
            match &version {
                None => version = Some(v.to_owned()),
                Some(first) if first != v => {
                    return Err(PluginError::Rejected(format!(
                        "The component exports liteset:plugin interfaces of two versions \
                         ({first} and {v})"
                    )));
                }
                Some(_) => {}
            }
            match iface {
                "post-process" => kind = Some(Kind::PostProcessor),
                "visualization" => kind = Some(Kind::Viz),
                "chart-app" => chart_app = true,
                _ => {}
            }
        }
        let Some(version) = version else {
            return Err(PluginError::Rejected(
                "The component exports no liteset:plugin interface; build it with liteset-sdk \
                 and one of its export macros"
                    .into(),
            ));
        };
        if !SUPPORTED_WIT_VERSIONS.contains(&version.as_str()) {
            return Err(PluginError::Rejected(format!(
                "The component targets liteset:plugin@{version}; this server supports \
                 liteset:plugin@{}",
                SUPPORTED_WIT_VERSIONS.join(" and @")
            )));
        }
        let kind = kind.ok_or_else(|| {
            PluginError::Rejected(
                "The component exports neither liteset:plugin/post-process nor \
                 liteset:plugin/visualization"
                    .into(),
            )
        })?;
        Ok(Inspection {
            kind,
            wit_version: version,
            chart_app,
        })
    }
}

/// Loads a compiled component the server wrote itself.
#[allow(unsafe_code)]
fn load_cached(engine: &Engine, path: &std::path::Path) -> wasmtime::Result<Component> {
    // SAFETY: `deserialize_file` trusts the file to be native code produced by this engine.
    // Only the server writes this directory (mode 0700, files 0600, written to a temporary
    // name and renamed into place), its names carry the wasm's sha256 plus the engine's
    // compatibility hash, and wasmtime itself rejects artifacts of another version or
    // configuration. Uploads are never accepted in precompiled form.
    unsafe { Component::deserialize_file(engine, path) }
}

fn create_private_dir(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| PluginError::Internal(format!("{}: {e}", dir.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| PluginError::Internal(format!("{}: {e}", dir.display())))?;
    }
    Ok(())
}

fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_damaged_cache_entry_is_recompiled_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let rt = Arc::new(Runtime::new(&PluginConfig::default(), Some(cache.clone())).unwrap());
        let wasm: Arc<[u8]> = Arc::from(wat::parse_str("(component)").unwrap());
        rt.compile(wasm.clone()).await.unwrap();
        let entries = || -> Vec<PathBuf> {
            std::fs::read_dir(&cache)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
                .collect()
        };
        let files = entries();
        assert_eq!(files.len(), 1, "one cache entry per component and engine");
        std::fs::write(&files[0], b"not a compiled component").unwrap();
        rt.compile(wasm).await.expect("recompiled, not crashed");
        let rewritten = std::fs::read(&files[0]).unwrap();
        assert!(
            Engine::detect_precompiled(&rewritten).is_some(),
            "the entry was rewritten with a compiled component"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "only the server may write compiled code");
        }
    }

    #[tokio::test]
    async fn core_modules_and_garbage_are_refused_before_compiling() {
        let rt = Arc::new(Runtime::new(&PluginConfig::default(), None).unwrap());
        let module: Arc<[u8]> = Arc::from(wat::parse_str("(module)").unwrap());
        let err = rt.compile(module).await.unwrap_err().to_string();
        assert!(err.contains("not a component"), "{err}");
        let err = rt
            .compile(Arc::from(&b"hello"[..]))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a WebAssembly binary"), "{err}");
    }
}
