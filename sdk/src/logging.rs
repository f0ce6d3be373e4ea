//! `log` forwarding to the host's `log` import, and the panic hook.

use std::sync::Once;

/// A [`log::Log`] that sends every record to the host (`liteset:plugin/host.log`); on
/// non-wasm targets (native unit tests) it prints to stderr instead.
///
/// The export macros install it on the first call into the plugin, with the max level set to
/// `Trace`: the host applies its own per-call line budget. Lower it with
/// [`log::set_max_level`] to save host calls.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostLogger;

impl log::Log for HostLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            host_log(record.level(), &record.args().to_string());
        }
    }

    fn flush(&self) {}
}

/// Sends one line to the host log (stderr on non-wasm targets).
pub fn host_log(level: log::Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::bindings::host::{LogLevel, log};
        let level = match level {
            log::Level::Error => LogLevel::Error,
            log::Level::Warn => LogLevel::Warn,
            log::Level::Info => LogLevel::Info,
            log::Level::Debug => LogLevel::Debug,
            log::Level::Trace => LogLevel::Trace,
        };
        log(level, message);
    }
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[plugin {level}] {message}");
}

/// Installs [`HostLogger`] as the `log` logger unless another logger is already set (on
/// wasm, also installs the panic hook). Idempotent and cheap; the export macros call it on
/// every entry into the plugin.
pub fn init() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        if log::set_logger(&HostLogger).is_ok() {
            log::set_max_level(log::LevelFilter::Trace);
        }
        #[cfg(target_arch = "wasm32")]
        install_panic_hook();
    });
}

/// Sends the panic message to the host log at level `error`, then runs the previous hook
/// (which writes it to stderr, where the host also captures it) before the abort.
#[cfg(target_arch = "wasm32")]
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        host_log(log::Level::Error, &format!("plugin panicked: {info}"));
        previous(info);
    }));
}
