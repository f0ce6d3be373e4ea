//! The WebAssembly plugin host: the only part of the server that knows wasmtime.
//!
//! Plugins are components implementing a world of the `liteset:plugin` WIT package (`wit/`).
//! One [`runtime::Runtime`] owns the engine (pooling allocator, epoch interruption driven by a
//! ticker thread), the linker and the on-disk cache of compiled components. The
//! [`registry::Plugins`] registry holds the installed plugins (built-in ones embedded in the
//! binary, uploaded ones persisted in the metadata store) as `Arc`s, so replacing a plugin never
//! disturbs calls already running on the old one. Every call gets a fresh `Store` with its own
//! memory cap and wall-clock deadline ([`call`]); whatever the guest does, the caller gets a
//! typed [`PluginError`].

mod bindings;
mod call;
pub mod chart_type;
pub mod pipeline;
pub mod registry;
pub mod runtime;
mod stdio;
pub mod table;
pub mod viz;

pub use registry::{PluginSummary, Plugins, Source};

/// The `liteset:plugin` WIT versions this server loads, oldest first. A component built against
/// any of them installs and runs; the SDK emits the newest.
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &["0.1.0", "0.2.0"];

/// Name of the built-in post-processing plugin.
pub const BUILTIN_POSTPROCESSING: &str = "postprocessing";

/// Name of the built-in viz plugin (`plugins/viz`).
pub const BUILTIN_VIZ: &str = "charts";

/// What a plugin is for, from the world its exports implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Exports `post-process`: a `post_processing` operation.
    PostProcessor,
    /// Exports `visualization`: builds queries for and renders a chart type (from 0.2.0 also
    /// `chart-app`, its chart types' look in Superset's app).
    Viz,
}

impl Kind {
    /// The name used in the API (`post-processor`, `viz`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PostProcessor => "post-processor",
            Kind::Viz => "viz",
        }
    }
}

/// Why a plugin could not be installed or a plugin call failed. Mapped to HTTP in
/// `api/error.rs`.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// No plugin of that name is installed.
    #[error("Plugin {0} is not installed")]
    NotFound(String),
    /// An upload was refused (not a component, wrong world or version, imports beyond the
    /// allowlist, a failing smoke call, a reserved name, ...).
    #[error("{0}")]
    Rejected(String),
    /// The plugin reported a failure on purpose; `message` is shown as is.
    #[error("{message}")]
    Failed {
        /// Plugin name.
        plugin: String,
        /// Whether the plugin blames the request or itself.
        kind: GuestErrorKind,
        /// The plugin's message.
        message: String,
    },
    /// The call ran past its wall-clock budget and was stopped.
    #[error("Plugin {plugin} ran longer than its limit of {limit_ms} ms and was stopped")]
    Timeout {
        /// Plugin name.
        plugin: String,
        /// The budget.
        limit_ms: u64,
    },
    /// The call needed more memory than its cap and was stopped.
    #[error("Plugin {plugin} needed more than its memory limit of {limit_mb} MiB and was stopped")]
    OutOfMemory {
        /// Plugin name.
        plugin: String,
        /// The cap.
        limit_mb: u64,
    },
    /// The guest trapped (a panic, a stack overflow, an invalid instruction, ...).
    #[error("Plugin {plugin} crashed: {detail}")]
    Crashed {
        /// Plugin name.
        plugin: String,
        /// The trap and the tail of what the guest wrote to stderr.
        detail: String,
    },
    /// The guest returned something that breaks the interface's rules.
    #[error("Plugin {plugin} returned an invalid result: {detail}")]
    BadOutput {
        /// Plugin name.
        plugin: String,
        /// What is wrong.
        detail: String,
    },
    /// Every call slot stayed busy for the whole queue timeout.
    #[error("All plugin slots are busy; try again shortly")]
    Busy,
    /// The metadata store failed.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// A fault of the host itself (engine setup, cache, a join error).
    #[error("plugin host: {0}")]
    Internal(String),
}

/// How a plugin classified its own failure (the WIT `error-kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestErrorKind {
    /// Bad parameters.
    InvalidParams,
    /// The input table does not suit the operation.
    InvalidInput,
    /// Not supported by the plugin.
    Unsupported,
    /// A bug in the plugin.
    Internal,
}

/// Result of this layer.
pub type Result<T, E = PluginError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    /// Released WIT versions are frozen: plugins built against them must keep loading. Change a
    /// released folder and this fails; put changes in a new version folder instead.
    #[test]
    fn released_wit_versions_are_frozen() {
        const RELEASED: &[(&str, &str)] = &[
            (
                "v0.1.0/plugin.wit",
                "447273b0693f42686710a693f7bab34e2f09eb486a186dc5d72893f7e0b689a8",
            ),
            (
                "v0.2.0/plugin.wit",
                "9ecf369340fc2b1db055f62160f9ad3b8a533a1428497cc666f2cece457ae628",
            ),
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/liteset-plugin");
        for (file, want) in RELEASED {
            let bytes = std::fs::read(root.join(file)).expect("released WIT file");
            assert_eq!(
                hex::encode(Sha256::digest(&bytes)),
                *want,
                "{file} changed, but released WIT versions are frozen"
            );
        }
        for version in ["v0.1.0", "v0.2.0"] {
            let files: Vec<String> = std::fs::read_dir(root.join(version))
                .expect("released version folder")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(files, ["plugin.wit"], "no file added to {version}");
        }
        // Every version the server loads is a released folder.
        for v in super::SUPPORTED_WIT_VERSIONS {
            assert!(root.join(format!("v{v}/plugin.wit")).is_file(), "{v}");
        }
    }
}
