//! The error every operation returns.
//!
//! Superset distinguishes designed validation failures (`InvalidPostProcessingError`, answered
//! with a 400 whose text is `"Error: " + message`) from Python crashes (answered with a 500).
//! A compatible server must answer both with a 4xx, so the kind only tells the server glue how
//! to build the response; the message never carries the `"Error: "` prefix.

use std::fmt;

/// What went wrong, as far as the HTTP layer is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The options do not fit the operation or the data (Superset's
    /// `InvalidPostProcessingError`, or a Python `TypeError`/`ValueError`/`KeyError` that
    /// Superset let through as a 500).
    InvalidParams,
    /// The input frame itself cannot be handled (for example a column that must be numeric
    /// holds text, or the final frame cannot be serialised).
    InvalidInput,
    /// The operation exists in Superset but is not available here (`prophet`, and the
    /// operations of another group until they are merged).
    Unsupported,
    /// A bug: an invariant of the frame model was broken.
    Internal,
}

/// A post-processing failure: a kind for the HTTP layer and Superset's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PpError {
    pub kind: ErrorKind,
    /// Superset's message without the `"Error: "` prefix. May be empty: Superset raises
    /// `InvalidPostProcessingError()` without a message in one place (`rename` with a level
    /// out of range), which it answers with a 200 whose query status is `failed`.
    pub message: String,
}

impl PpError {
    /// An error of kind `InvalidParams`.
    pub fn params(message: impl Into<String>) -> PpError {
        PpError {
            kind: ErrorKind::InvalidParams,
            message: message.into(),
        }
    }

    /// An error of kind `InvalidInput`.
    pub fn input(message: impl Into<String>) -> PpError {
        PpError {
            kind: ErrorKind::InvalidInput,
            message: message.into(),
        }
    }

    /// An error of kind `Unsupported`.
    pub fn unsupported(message: impl Into<String>) -> PpError {
        PpError {
            kind: ErrorKind::Unsupported,
            message: message.into(),
        }
    }

    /// An error of kind `Internal`.
    pub fn internal(message: impl Into<String>) -> PpError {
        PpError {
            kind: ErrorKind::Internal,
            message: message.into(),
        }
    }

    /// Superset's "Referenced columns not available in DataFrame." (from
    /// `validate_column_args`), shared by most operations.
    pub fn missing_columns() -> PpError {
        PpError::params("Referenced columns not available in DataFrame.")
    }
}

impl fmt::Display for PpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PpError {}

/// Shorthand used throughout the crate.
pub type Result<T> = std::result::Result<T, PpError>;
