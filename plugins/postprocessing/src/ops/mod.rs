//! The operations, one module each, and the dispatch from an operation name.
//!
//! Every operation is `fn(Frame, &serde_json::Value) -> Result<Frame>`: the frame it
//! transforms and its raw `options` object. Options are parsed with [`Opts`], which refuses
//! keys the Superset function does not take and reports missing required ones with Python's
//! wording (Superset calls `op(df, **options)`).

use liteset_pyrepr as py;
use serde_json::{Map, Value as Json};

use crate::error::{PpError, Result};
use crate::frame::Frame;

pub mod aggregate;
pub mod append;
pub mod args;
pub mod boxplot;
pub mod compare;
pub mod contribution;
pub mod cum;
pub mod diff;
pub mod flatten;
pub mod geo;
pub mod geodetic;
pub mod histogram;
pub mod pivot;
pub mod prophet;
pub mod rank;
pub mod rename;
pub mod resample;
pub mod rolling;
pub mod select;
pub mod sort;

/// Runs the operation `name` with `options` (an object; `{}` when the step had none).
pub fn dispatch(name: &str, frame: Frame, options: &Json) -> Result<Frame> {
    match name {
        "aggregate" => aggregate::run(frame, options),
        "boxplot" => boxplot::run(frame, options),
        "flatten" => flatten::run(frame, options),
        "histogram" => histogram::run(frame, options),
        "pivot" => pivot::run(frame, options),
        "prophet" => prophet::run(frame, options),
        "rank" => rank::run(frame, options),
        "rename" => rename::run(frame, options),
        "select" => select::run(frame, options),
        "sort" => sort::run(frame, options),
        "rolling" => with_map(name, frame, options, rolling::rolling),
        "cum" => with_map(name, frame, options, cum::cum),
        "diff" => with_map(name, frame, options, diff::diff),
        "compare" => with_map(name, frame, options, compare::compare),
        "contribution" => with_map(name, frame, options, contribution::contribution),
        "resample" => with_map(name, frame, options, resample::resample),
        "geohash_encode" => with_map(name, frame, options, geo::geohash_encode),
        "geohash_decode" => with_map(name, frame, options, geo::geohash_decode),
        "geodetic_parse" => with_map(name, frame, options, geo::geodetic_parse),
        other => Err(PpError::params(format!(
            "Unsupported post processing operation: {other}"
        ))),
    }
}

/// Runs a group-B operation, which takes its options as a JSON object (`null` is `{}`, like
/// a step without options).
fn with_map(
    name: &str,
    frame: Frame,
    options: &Json,
    op: fn(Frame, &Map<String, Json>) -> Result<Frame>,
) -> Result<Frame> {
    match options {
        Json::Object(map) => op(frame, map),
        Json::Null => op(frame, EMPTY.get_or_init(Map::new)),
        _ => Err(PpError::params(format!(
            "{name}() argument after ** must be a mapping"
        ))),
    }
}

/// Python truthiness of a JSON value (`if value:`).
pub fn truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Json::String(s) => !s.is_empty(),
        Json::Array(a) => !a.is_empty(),
        Json::Object(o) => !o.is_empty(),
    }
}

/// Superset's `scalar_to_sequence`: `None` → `[]`, a string → `[s]`, a list as is. Items
/// that are not strings are kept as their JSON text (they can never name a column).
pub fn scalar_to_sequence(v: Option<&Json>) -> Vec<String> {
    match v {
        None | Some(Json::Null) => vec![],
        Some(Json::String(s)) => vec![s.clone()],
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| match i {
                Json::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Some(Json::Object(o)) => o.keys().cloned().collect(),
        Some(other) => vec![other.to_string()],
    }
}

/// Superset's `validate_column_args` decorator: every name listed under each of `argnames`
/// must be a first-level column label. Runs before the options are bound, like the
/// decorator runs before the call.
pub fn validate_column_args(frame: &Frame, options: &Json, argnames: &[&str]) -> Result<()> {
    for name in argnames {
        if let Some(v) = options.get(name)
            && !scalar_to_sequence(Some(v))
                .iter()
                .all(|c| frame.has_level0(c))
        {
            return Err(PpError::missing_columns());
        }
    }
    Ok(())
}

static EMPTY: std::sync::OnceLock<Map<String, Json>> = std::sync::OnceLock::new();

/// The options of one step, checked against the Python signature of the operation.
pub struct Opts<'a> {
    map: &'a Map<String, Json>,
}

impl<'a> Opts<'a> {
    /// Binds `options` to `op(df, *params)`: a key not in `params` is Python's
    /// "unexpected keyword argument", a missing `required` one its "missing required
    /// positional argument".
    pub fn parse(
        op: &str,
        options: &'a Json,
        params: &[&str],
        required: &[&str],
    ) -> Result<Opts<'a>> {
        let map = match options {
            Json::Object(m) => m,
            Json::Null => EMPTY.get_or_init(Map::new),
            other => {
                return Err(PpError::params(format!(
                    "{op}() argument after ** must be a mapping, not {}",
                    match other {
                        Json::Array(_) => "list",
                        Json::String(_) => "str",
                        Json::Bool(_) => "bool",
                        _ => "float",
                    }
                )));
            }
        };
        if let Some(key) = map.keys().find(|k| !params.contains(&k.as_str())) {
            return Err(PpError::params(format!(
                "{op}() got an unexpected keyword argument {}",
                py::str(key)
            )));
        }
        let missing: Vec<String> = required
            .iter()
            .filter(|r| !map.contains_key(**r))
            .map(|r| py::str(r))
            .collect();
        if !missing.is_empty() {
            let list = match missing.len() {
                1 => missing[0].clone(),
                2 => format!("{} and {}", missing[0], missing[1]),
                _ => format!(
                    "{}, and {}",
                    missing[..missing.len() - 1].join(", "),
                    missing[missing.len() - 1]
                ),
            };
            let s = if missing.len() == 1 { "" } else { "s" };
            return Err(PpError::params(format!(
                "{op}() missing {} required positional argument{s}: {list}",
                missing.len()
            )));
        }
        Ok(Opts { map })
    }

    /// The raw value of `key` (`None` when absent; an explicit `null` is `Some(Null)`).
    pub fn get(&self, key: &str) -> Option<&'a Json> {
        self.map.get(key)
    }

    /// The value of `key`, `None` when absent or `null`.
    pub fn value(&self, key: &str) -> Option<&'a Json> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Python truthiness of `key`, `default` when absent.
    pub fn flag(&self, key: &str, default: bool) -> bool {
        self.map.get(key).map_or(default, truthy)
    }

    /// A column-list option (`scalar_to_sequence`).
    pub fn names(&self, key: &str) -> Vec<String> {
        scalar_to_sequence(self.map.get(key))
    }

    /// An optional string option; a non-string is refused with `what`.
    pub fn string(&self, key: &str) -> Result<Option<&'a str>> {
        match self.map.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(PpError::params(format!(
                "option {key} must be a string, got {other}"
            ))),
        }
    }
}
