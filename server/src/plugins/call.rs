//! One plugin call: a call slot, a fresh `Store` with the plugin's memory cap and deadline, the
//! call itself, and the translation of whatever happened into a [`PluginError`].
//!
//! Instances are never reused: a trap poisons an instance, and a fresh store per call costs
//! about 30 µs with the pooling allocator, so per-call stores are both the simplest and the
//! safest design.
//!
//! This module knows only the wasmtime `Engine` a call runs on, not the [`super::runtime`]
//! that owns it: the runtime's linker is typed by [`CallState`], so the dependency goes one
//! way (runtime → call).

use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::bindings::LogLevel;
use super::bindings::post_processor::liteset::plugin::{host, types};
use super::stdio::Capture;
use super::{GuestErrorKind, PluginError, Result};

/// Bytes of stdout/stderr kept per call (the start of a panic message fits).
const STDIO_CAP: usize = 16 * 1024;
/// Log lines a plugin may write per call, and the length each is cut to.
const LOG_LINES: usize = 100;
const LOG_LINE_BYTES: usize = 1024;
/// Extra time the outer timeout allows beyond the budget: the epoch check normally stops the
/// guest first, this guards host code the guest is not in.
const GRACE: Duration = Duration::from_millis(250);

/// Limits of one call.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Linear memory cap, in bytes.
    pub memory_bytes: usize,
    /// Wall-clock budget.
    pub timeout: Duration,
}

/// Caps memory and records whether the guest asked for more than it may have, so an abort
/// that follows a refused `memory.grow` is reported as out-of-memory rather than a crash.
struct Limiter {
    memory_bytes: usize,
    refused_growth: bool,
    peak: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.refused_growth = true;
            return Ok(false);
        }
        self.peak = self.peak.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }

    fn instances(&self) -> usize {
        16
    }

    fn tables(&self) -> usize {
        16
    }

    fn memories(&self) -> usize {
        16
    }
}

/// The data of one call's store.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
    plugin: String,
    request_id: String,
    log_lines: usize,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for CallState {}

/// `host.log` of 0.2.0: the same function, its `log-level` generated a second time.
impl super::bindings::v020::post_processor::liteset::plugin::host::Host for CallState {
    fn log(
        &mut self,
        level: super::bindings::v020::post_processor::liteset::plugin::host::LogLevel,
        message: String,
    ) {
        use super::bindings::v020::post_processor::liteset::plugin::host::LogLevel as L;
        let level = match level {
            L::Trace => LogLevel::Trace,
            L::Debug => LogLevel::Debug,
            L::Info => LogLevel::Info,
            L::Warn => LogLevel::Warn,
            L::Error => LogLevel::Error,
        };
        host::Host::log(self, level, message);
    }
}

impl host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) {
        self.log_lines += 1;
        if self.log_lines > LOG_LINES {
            if self.log_lines == LOG_LINES + 1 {
                tracing::warn!(plugin = %self.plugin, request_id = %self.request_id, "plugin log budget reached; further lines dropped");
            }
            return;
        }
        let mut message = message;
        if message.len() > LOG_LINE_BYTES {
            let mut cut = LOG_LINE_BYTES;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        let (plugin, rid) = (&self.plugin, &self.request_id);
        match level {
            LogLevel::Trace => tracing::trace!(plugin = %plugin, request_id = %rid, "{message}"),
            LogLevel::Debug => tracing::debug!(plugin = %plugin, request_id = %rid, "{message}"),
            LogLevel::Info => tracing::info!(plugin = %plugin, request_id = %rid, "{message}"),
            LogLevel::Warn => tracing::warn!(plugin = %plugin, request_id = %rid, "{message}"),
            LogLevel::Error => tracing::error!(plugin = %plugin, request_id = %rid, "{message}"),
        }
    }
}

/// A started call: the store plus what is needed to explain its failure.
pub struct Call {
    pub store: Store<CallState>,
    stdio: Capture,
    limits: Limits,
    started: Instant,
}

impl Call {
    /// A fresh store for one call of `plugin`, with a deny-all WASI context: no preopened
    /// directories, no environment or arguments, no network, and clocks frozen at the epoch.
    pub fn new(engine: &wasmtime::Engine, plugin: &str, request_id: &str, limits: Limits) -> Call {
        let stdio = Capture::new(STDIO_CAP);
        let wasi = WasiCtxBuilder::new()
            .stdout(stdio.clone())
            .stderr(stdio.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock)
            .build();
        let state = CallState {
            wasi,
            table: ResourceTable::new(),
            limiter: Limiter {
                memory_bytes: limits.memory_bytes,
                refused_growth: false,
                peak: 0,
            },
            plugin: plugin.to_owned(),
            request_id: request_id.to_owned(),
            log_lines: 0,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limiter);
        let started = Instant::now();
        let deadline = started + limits.timeout;
        // Check the clock at every tick: yield to the scheduler before the deadline so other
        // requests keep running, stop the guest after it.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        Call {
            store,
            stdio,
            limits,
            started,
        }
    }

    /// How long the caller lets the call run before dropping it: the epoch check normally
    /// stops the guest at the budget, this outer bound guards host code the guest is not in.
    pub fn outer_timeout(&self) -> Duration {
        self.limits.timeout + GRACE
    }

    /// Classifies the outcome of a call run under [`Call::outer_timeout`]; the guest's own
    /// `result` error is translated too.
    pub fn finish<T>(
        &self,
        outcome: std::result::Result<
            wasmtime::Result<std::result::Result<T, types::PluginError>>,
            tokio::time::error::Elapsed,
        >,
    ) -> Result<T> {
        let plugin = self.store.data().plugin.clone();
        let elapsed = self.started.elapsed();
        match outcome {
            Err(_) => Err(self.timeout(&plugin)),
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(e))) => Err(PluginError::Failed {
                plugin,
                kind: match e.kind {
                    types::ErrorKind::InvalidParams => GuestErrorKind::InvalidParams,
                    types::ErrorKind::InvalidInput => GuestErrorKind::InvalidInput,
                    types::ErrorKind::Unsupported => GuestErrorKind::Unsupported,
                    types::ErrorKind::Internal => GuestErrorKind::Internal,
                },
                message: e.message,
            }),
            Ok(Err(e)) => Err(self.classify(&plugin, &e, elapsed)),
        }
    }

    fn timeout(&self, plugin: &str) -> PluginError {
        PluginError::Timeout {
            plugin: plugin.to_owned(),
            limit_ms: u64::try_from(self.limits.timeout.as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn classify(&self, plugin: &str, e: &wasmtime::Error, elapsed: Duration) -> PluginError {
        let stderr = self.stdio.text();
        let refused = self.store.data().limiter.refused_growth;
        let trap = e.downcast_ref::<Trap>().copied();
        tracing::warn!(plugin, error = %e, trap = ?trap, elapsed_ms = elapsed.as_millis() as u64, stderr = %tail(&stderr, 2048), "plugin call failed");
        match trap {
            Some(Trap::Interrupt) => self.timeout(plugin),
            _ if refused
                || stderr.contains("memory allocation of")
                || matches!(trap, Some(Trap::AllocationTooLarge)) =>
            {
                PluginError::OutOfMemory {
                    plugin: plugin.to_owned(),
                    limit_mb: (self.limits.memory_bytes >> 20) as u64,
                }
            }
            Some(Trap::StackOverflow) => PluginError::Crashed {
                plugin: plugin.to_owned(),
                detail: "stack overflow (the plugin recursed too deeply)".into(),
            },
            Some(t) => {
                let panic = panic_message(&stderr);
                PluginError::Crashed {
                    plugin: plugin.to_owned(),
                    detail: match panic {
                        Some(p) => format!("panicked: {p}"),
                        None => t.to_string(),
                    },
                }
            }
            // Not a trap: the host refused something on the guest's behalf (e.g. a resource
            // limit or an unusable instance).
            None => PluginError::Crashed {
                plugin: plugin.to_owned(),
                detail: format!("{e:#}"),
            },
        }
    }

    /// Peak linear memory the call asked for, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.store.data().limiter.peak
    }
}

/// The message of a Rust panic in the guest's stderr (`panicked at src/lib.rs:3:5:\nmsg`).
fn panic_message(stderr: &str) -> Option<String> {
    let at = stderr.find("panicked at ")?;
    let rest = &stderr[at..];
    let msg = rest.split_once(":\n").map_or(rest, |(_, m)| m);
    Some(
        msg.lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(500)
            .collect(),
    )
}

fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Clocks that never move: a plugin computes, it does not observe time.
struct FrozenClock;

impl wasmtime_wasi::HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl wasmtime_wasi::HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_panic_message() {
        let s = "thread '<unnamed>' panicked at src/lib.rs:10:9:\nfixture panic\nnote: run with…";
        assert_eq!(panic_message(s).as_deref(), Some("fixture panic"));
        assert_eq!(panic_message("nothing"), None);
    }
}
