//! Plain Rust mirrors of the non-table WIT types.

use std::fmt;

use crate::table::{Table, TableError};

/// What the host tells a plugin about the call (WIT `invocation`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    /// Correlates the plugin's log lines with the server's request log.
    pub request_id: String,
    /// The name the plugin was invoked under (a post-processing operation name).
    pub operation: String,
    /// BCP 47 locale of the user, e.g. `en`.
    pub locale: String,
    /// IANA time zone used to display times, e.g. `UTC`.
    pub time_zone: String,
}

/// Why a call failed, so the host can pick the HTTP status (WIT `error-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The parameters are wrong (answered with 400).
    InvalidParams,
    /// The input table does not suit the operation (answered with 400).
    InvalidInput,
    /// The plugin does not support what was asked (answered with 400).
    Unsupported,
    /// A bug in the plugin (answered with 500).
    Internal,
}

impl ErrorKind {
    /// The WIT spelling, e.g. `invalid-params`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidParams => "invalid-params",
            ErrorKind::InvalidInput => "invalid-input",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Internal => "internal",
        }
    }
}

/// A failure the plugin reports on purpose (WIT `plugin-error`). The message is shown to the
/// user as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginError {
    /// The kind of failure.
    pub kind: ErrorKind,
    /// Shown to the user as is.
    pub message: String,
}

impl PluginError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        PluginError {
            kind,
            message: message.into(),
        }
    }

    /// The parameters are wrong (HTTP 400).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        PluginError::new(ErrorKind::InvalidParams, message)
    }

    /// The input table does not suit the operation (HTTP 400).
    pub fn invalid_input(message: impl Into<String>) -> Self {
        PluginError::new(ErrorKind::InvalidInput, message)
    }

    /// The plugin does not support what was asked (HTTP 400).
    pub fn unsupported(message: impl Into<String>) -> Self {
        PluginError::new(ErrorKind::Unsupported, message)
    }

    /// A bug in the plugin (HTTP 500).
    pub fn internal(message: impl Into<String>) -> Self {
        PluginError::new(ErrorKind::Internal, message)
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for PluginError {}

/// An invalid table becomes an `invalid-input` error.
impl From<TableError> for PluginError {
    fn from(e: TableError) -> Self {
        PluginError::invalid_input(e.message)
    }
}

/// What kind of plugin this is (WIT `plugin-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PluginKind {
    /// Implements [`PostProcessor`](crate::PostProcessor); exports the `post-processor` world.
    PostProcessor,
    /// Implements [`Viz`](crate::Viz); exports the `viz` world.
    Viz,
}

/// Describes a plugin; the host checks it when the plugin is installed (WIT `plugin-info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// Unique name: lowercase letters, digits, `_` and `-`. A post-processor is invoked by
    /// this name as a `post_processing` operation.
    pub name: String,
    /// The plugin's own semantic version, e.g. `1.0.0`.
    pub version: String,
    /// Post-processor or viz.
    pub kind: PluginKind,
    /// Human-readable name.
    pub label: String,
    /// What the plugin does.
    pub description: String,
    /// For a viz plugin: the chart `viz_type`s it renders.
    pub viz_types: Vec<String>,
    /// JSON Schema of the params (post-processor) or form data controls (viz).
    pub params_schema: Option<String>,
}

impl PluginInfo {
    /// Info for a post-processor; `label` defaults to `name`.
    pub fn post_processor(name: impl Into<String>, version: impl Into<String>) -> Self {
        let name = name.into();
        PluginInfo {
            label: name.clone(),
            name,
            version: version.into(),
            kind: PluginKind::PostProcessor,
            description: String::new(),
            viz_types: Vec::new(),
            params_schema: None,
        }
    }

    /// Info for a viz plugin rendering `viz_types`; `label` defaults to `name`.
    pub fn viz<S: Into<String>>(
        name: impl Into<String>,
        version: impl Into<String>,
        viz_types: impl IntoIterator<Item = S>,
    ) -> Self {
        PluginInfo {
            kind: PluginKind::Viz,
            viz_types: viz_types.into_iter().map(Into::into).collect(),
            ..PluginInfo::post_processor(name, version)
        }
    }

    /// Sets the human-readable name.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the JSON Schema of the params or form data.
    pub fn params_schema(mut self, schema: impl Into<String>) -> Self {
        self.params_schema = Some(schema.into());
        self
    }

    /// Checks what the host checks at install time that the SDK can check locally: the name
    /// is non-empty and uses only lowercase ASCII letters, digits, `_` and `-`; the version is
    /// non-empty; a viz names at least one viz type and a post-processor none.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty()
            || !self
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "plugin name `{}` must be non-empty lowercase letters, digits, `_` or `-`",
                self.name
            ));
        }
        if self.version.is_empty() {
            return Err("plugin version is empty".into());
        }
        match self.kind {
            PluginKind::Viz if self.viz_types.is_empty() => {
                Err("a viz plugin must name at least one viz type".into())
            }
            PluginKind::PostProcessor if !self.viz_types.is_empty() => {
                Err("a post-processor must not name viz types".into())
            }
            _ => Ok(()),
        }
    }
}

/// Width and height in CSS pixels (WIT `size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Size {
    /// Width in CSS pixels.
    pub width: u32,
    /// Height in CSS pixels.
    pub height: u32,
}

/// The result of one query of the query context `build_query` returned (WIT `query-result`).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// Position of the query in the query context's `queries`.
    pub query_index: u32,
    /// The rows.
    pub data: Table,
}

/// What a render produces (WIT `chart-output`): a JSON payload for a client-side renderer
/// and/or an SVG document. The host validates and sanitises both.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChartOutput {
    /// JSON for a client-side renderer (for example ECharts options).
    pub payload: Option<String>,
    /// A standalone SVG document.
    pub svg: Option<String>,
}

impl ChartOutput {
    /// An output with only a JSON payload.
    pub fn payload(json: impl Into<String>) -> Self {
        ChartOutput {
            payload: Some(json.into()),
            svg: None,
        }
    }

    /// An output with only an SVG document.
    pub fn svg(svg: impl Into<String>) -> Self {
        ChartOutput {
            payload: None,
            svg: Some(svg.into()),
        }
    }
}
