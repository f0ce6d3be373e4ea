//! Reading an operation's `options` the way Python reads keyword arguments.
//!
//! Superset calls every operation as `op(df, **options)`, so an unknown key is a Python
//! `TypeError` ("got an unexpected keyword argument") and a missing required one is another
//! ("missing 1 required positional argument"). Both checks are reproduced with Python's
//! wording, and values are rendered with Python's `repr` where Superset's messages embed them.

use liteset_pyrepr as py;
use serde_json::{Map, Value as Json};

use crate::error::{ErrorKind, PpError};

/// The options of one operation call.
pub type Options = Map<String, Json>;

/// An `InvalidParams` error (Superset's `InvalidPostProcessingError`, or a Python error caused
/// by the options).
pub fn invalid(message: impl Into<String>) -> PpError {
    PpError {
        kind: ErrorKind::InvalidParams,
        message: message.into(),
    }
}

/// An `Unsupported` error: something Superset would do that Liteset does not.
pub fn unsupported(message: impl Into<String>) -> PpError {
    PpError {
        kind: ErrorKind::Unsupported,
        message: message.into(),
    }
}

/// A Python function signature: its name and its keyword parameters (after `df`), each with
/// whether it is required (has no default).
pub struct Signature {
    pub name: &'static str,
    pub params: &'static [(&'static str, bool)],
}

impl Signature {
    /// Python's argument binding checks: unknown keywords first, then missing required ones.
    pub fn check(&self, options: &Options) -> Result<(), PpError> {
        if let Some(key) = options
            .keys()
            .find(|k| !self.params.iter().any(|(p, _)| p == k))
        {
            return Err(invalid(format!(
                "{}() got an unexpected keyword argument '{key}'",
                self.name
            )));
        }
        let missing: Vec<String> = self
            .params
            .iter()
            .filter(|(p, required)| *required && !options.contains_key(*p))
            .map(|(p, _)| format!("'{p}'"))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let list = match missing.as_slice() {
            [one] => one.clone(),
            [a, b] => format!("{a} and {b}"),
            [init @ .., last] => format!("{}, and {last}", init.join(", ")),
            [] => unreachable!("checked non-empty"),
        };
        let plural = if missing.len() == 1 { "" } else { "s" };
        Err(invalid(format!(
            "{}() missing {} required positional argument{plural}: {list}",
            self.name,
            missing.len()
        )))
    }
}

/// The option `key`, with JSON `null` read as Python `None` (absent).
pub fn get<'a>(options: &'a Options, key: &str) -> Option<&'a Json> {
    options.get(key).filter(|v| !v.is_null())
}

/// Whether a value is falsy in Python (`None`, `False`, `0`, `""`, `[]`, `{}`).
pub fn is_falsy(value: Option<&Json>) -> bool {
    match value {
        None | Some(Json::Null) => true,
        Some(Json::Bool(b)) => !b,
        Some(Json::Number(n)) => n.as_f64() == Some(0.0),
        Some(Json::String(s)) => s.is_empty(),
        Some(Json::Array(a)) => a.is_empty(),
        Some(Json::Object(o)) => o.is_empty(),
    }
}

/// An optional string option; anything else than a string or `None` is refused.
pub fn opt_str<'a>(options: &'a Options, key: &str) -> Result<Option<&'a str>, PpError> {
    match get(options, key) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(other) => Err(invalid(format!(
            "`{key}` must be a string, not {}",
            py::json(other)
        ))),
    }
}

/// An optional integer option (Python `bool` counts as an integer, as in Python).
pub fn opt_int(options: &Options, key: &str) -> Result<Option<i64>, PpError> {
    match get(options, key) {
        None => Ok(None),
        Some(Json::Bool(b)) => Ok(Some(i64::from(*b))),
        Some(Json::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64()),
        Some(other) => Err(invalid(format!(
            "`{key}` must be an integer, not {}",
            py::json(other)
        ))),
    }
}

/// An optional boolean option, read with Python truthiness.
pub fn opt_bool(options: &Options, key: &str) -> Option<bool> {
    options.get(key).map(|v| !is_falsy(Some(v)))
}

/// An optional `{source: target}` mapping of column names, in the order given.
pub fn opt_mapping(options: &Options, key: &str) -> Result<Vec<(String, String)>, PpError> {
    match get(options, key) {
        None => Ok(Vec::new()),
        Some(Json::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Json::String(s) => Ok((k.clone(), s.clone())),
                other => Err(invalid(format!(
                    "`{key}` must map column names to column names, not to {}",
                    py::json(other)
                ))),
            })
            .collect(),
        Some(other) => Err(invalid(format!(
            "`{key}` must be a mapping of column names, not {}",
            py::json(other)
        ))),
    }
}

/// An optional list of strings.
pub fn opt_str_list(options: &Options, key: &str) -> Result<Option<Vec<String>>, PpError> {
    match get(options, key) {
        None => Ok(None),
        Some(Json::Array(items)) => items
            .iter()
            .map(|v| match v {
                Json::String(s) => Ok(s.clone()),
                other => Err(invalid(format!(
                    "`{key}` must be a list of strings, not contain {}",
                    py::json(other)
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(invalid(format!(
            "`{key}` must be a list of strings, not {}",
            py::json(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_argument_errors() {
        let sig = Signature {
            name: "cum",
            params: &[("operator", true), ("columns", true)],
        };
        let opts: Options = serde_json::from_value(json!({"foo": 1})).unwrap();
        assert_eq!(
            sig.check(&opts).unwrap_err().message,
            "cum() got an unexpected keyword argument 'foo'"
        );
        let opts = Options::new();
        assert_eq!(
            sig.check(&opts).unwrap_err().message,
            "cum() missing 2 required positional arguments: 'operator' and 'columns'"
        );
    }
}
