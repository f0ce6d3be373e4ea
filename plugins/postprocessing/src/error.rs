//! The error every operation returns.
//!
//! Temporary copy of group A's definition (same shape) so group B's operations compile before
//! the branches are merged.

/// Why an operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The options are invalid (Superset's `InvalidPostProcessingError`, or a Python
    /// `TypeError`/`ValueError` caused by the options).
    InvalidParams,
    /// The data cannot go through the operation.
    InvalidInput,
    /// A feature Superset has that Liteset does not implement.
    Unsupported,
    /// A bug.
    Internal,
}

/// An operation's failure: a kind and a message without the "Error: " prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PpError {
    pub kind: ErrorKind,
    pub message: String,
}
