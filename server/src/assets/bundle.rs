//! The bundle as bytes: reading an uploaded ZIP into YAML documents without trusting it, and
//! writing one deterministically.
//!
//! An upload is hostile until proven otherwise. Before anything is inflated the central
//! directory is checked (entry count, declared sizes, compression ratio, entry names); while
//! inflating, every entry is bounded by what it declared and by the bundle's budget; while
//! parsing, every YAML document is bounded in nodes (alias expansion included) and depth;
//! afterwards every document's fields must have the types Superset's import schemas declare.
//! Any of these refusals is [`AssetsError::Unsafe`] or [`AssetsError::Malformed`] (400),
//! never a partial import.

use std::cell::Cell;
use std::fmt;
use std::io::{Cursor, Read, Write};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value as Json, json};

use super::{AssetsError, Files, Kind};

/// Most entries (files and folders) an archive may list. Superset's own export of a large
/// instance holds a few thousand files.
const MAX_ENTRIES: usize = 10_000;
/// Largest file inside a bundle, declared or inflated.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Most bytes all files of a bundle may inflate to together.
const MAX_TOTAL_BYTES: u64 = 32 * 1024 * 1024;
/// Superset's `ZIP_FILE_MAX_COMPRESS_RATIO`: inflated / compressed size of the whole archive.
const MAX_COMPRESS_RATIO: u64 = 200;
/// Deepest nesting of a YAML document (Superset's deepest, a dashboard position, is ~10).
const MAX_DEPTH: usize = 64;
/// Most YAML nodes a bundle may parse into, aliases expanded ("billion laughs" stops here).
const MAX_NODES: usize = 1_000_000;

// ------------------------------------------------------------------------------------------
// Reading

/// Why an entry name is refused: it would leave the bundle's root folder, or is not a path.
fn unsafe_name(name: &str) -> bool {
    name.starts_with('/')
        || name.starts_with('\\')
        || name.contains('\0')
        || name.as_bytes().get(1) == Some(&b':')
        || name.split(['/', '\\']).any(|seg| seg == "..")
}

/// Reads a bundle: the first path segment (the root folder) is dropped, only `.yaml`/`.yml`
/// files count and names starting with `.` or `_` are ignored (as Superset does). `kind`
/// names the import in error messages.
pub fn read_zip(bytes: &[u8], kind: Kind) -> Result<Files, AssetsError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|_| AssetsError::NotZip)?;
    if archive.len() > MAX_ENTRIES {
        return Err(AssetsError::Unsafe(format!(
            "ZIP contains too many entries ({} > {MAX_ENTRIES})",
            archive.len()
        )));
    }
    // The central directory first: nothing is inflated from an archive that declares a bomb.
    let (mut declared, mut compressed) = (0u64, 0u64);
    for i in 0..archive.len() {
        let entry = archive.by_index_raw(i).map_err(|_| AssetsError::NotZip)?;
        if unsafe_name(entry.name()) {
            return Err(AssetsError::Unsafe(format!(
                "ZIP entry contains path traversal: {}",
                entry.name().escape_debug()
            )));
        }
        if entry.size() > MAX_FILE_BYTES {
            return Err(AssetsError::Unsafe(
                "Found file with size above allowed threshold".into(),
            ));
        }
        declared = declared.saturating_add(entry.size());
        compressed = compressed.saturating_add(entry.compressed_size());
    }
    if declared > MAX_TOTAL_BYTES {
        return Err(AssetsError::Unsafe(
            "Found file with size above allowed threshold".into(),
        ));
    }
    if compressed > 0 && declared / compressed > MAX_COMPRESS_RATIO {
        return Err(AssetsError::Unsafe(
            "Zip compress ratio above allowed threshold".into(),
        ));
    }

    let budget = Budget::default();
    let mut inflated = 0u64;
    let mut files = Files::new();
    let mut invalid = Map::new();
    let mut malformed = Map::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|_| AssetsError::NotZip)?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().to_owned();
        let Some((_, path)) = name.split_once('/') else {
            continue;
        };
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('.') || base.starts_with('_') {
            continue;
        }
        if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
            continue;
        }
        // Declared sizes can lie: the inflated bytes are bounded on their own.
        let mut raw = Vec::new();
        (&mut entry)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut raw)
            .map_err(|_| AssetsError::NotZip)?;
        inflated += raw.len() as u64;
        if raw.len() as u64 > MAX_FILE_BYTES || inflated > MAX_TOTAL_BYTES {
            return Err(AssetsError::Unsafe(
                "Found file with size above allowed threshold".into(),
            ));
        }
        let Ok(text) = String::from_utf8(raw) else {
            malformed.insert(
                path.to_owned(),
                json!({"_schema": ["Not valid UTF-8 text."]}),
            );
            continue;
        };
        match parse_yaml(&text, &budget) {
            Ok(doc) => {
                files.insert(path.to_owned(), doc);
            }
            Err(Parse::Hostile(why)) => {
                malformed.insert(path.to_owned(), json!({ "_schema": [why] }));
            }
            Err(Parse::Invalid(e)) => {
                invalid.insert(
                    path.to_owned(),
                    json!({"_schema": [format!("Not a valid YAML file: {e}")]}),
                );
            }
        }
        if budget.spent.get() > MAX_NODES {
            break;
        }
    }
    if !malformed.is_empty() {
        return Err(AssetsError::Malformed {
            model: kind.model(),
            problems: malformed,
        });
    }
    if !invalid.is_empty() {
        return Err(AssetsError::Invalid {
            model: kind.model(),
            problems: invalid,
        });
    }
    if files.is_empty() {
        return Err(AssetsError::NoFiles);
    }
    check_types(&files, kind)?;
    Ok(files)
}

/// The outcome of a refused YAML document.
enum Parse {
    /// Over a bound or holding what no exporter writes: a hostile upload (400).
    Hostile(String),
    /// Not YAML at all (Superset's 422 "Not a valid YAML file").
    Invalid(String),
}

/// Nodes parsed so far in the whole bundle, and the first bound a document broke.
#[derive(Default)]
struct Budget {
    spent: Cell<usize>,
    broken: Cell<Option<&'static str>>,
}

impl Budget {
    fn refuse<E: de::Error>(&self, why: &'static str) -> E {
        self.broken.set(Some(why));
        E::custom(why)
    }
}

fn parse_yaml(text: &str, budget: &Budget) -> Result<Json, Parse> {
    budget.broken.set(None);
    let de = serde_norway::Deserializer::from_str(text);
    match (Node { budget, depth: 0 }).deserialize(de) {
        Ok(doc) => Ok(doc),
        Err(e) => match budget.broken.get() {
            Some(why) => Err(Parse::Hostile(why.into())),
            None => {
                // serde_norway's own bounds (alias jumps, its recursion limit) are hostile
                // too; anything else is a syntax or type error of an honest mistake.
                let text = e.to_string();
                if text.contains("repetition limit") || text.contains("recursion limit") {
                    Err(Parse::Hostile(
                        "YAML document too large or too deep.".into(),
                    ))
                } else {
                    Err(Parse::Invalid(text))
                }
            }
        },
    }
}

/// Builds a JSON value from YAML events, counting every node against the bundle's budget
/// (aliases are expanded by the deserializer, so a bomb is stopped while it expands) and
/// refusing nesting deeper than [`MAX_DEPTH`] and NUL characters (PostgreSQL cannot store
/// them in text, so they would fail the write instead of the validation).
#[derive(Clone, Copy)]
struct Node<'b> {
    budget: &'b Budget,
    depth: usize,
}

impl Node<'_> {
    fn count<E: de::Error>(&self) -> Result<(), E> {
        let spent = self.budget.spent.get() + 1;
        self.budget.spent.set(spent);
        if spent > MAX_NODES {
            return Err(self
                .budget
                .refuse("YAML documents too large (aliases expanded)."));
        }
        Ok(())
    }

    fn nested<E: de::Error>(&self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            return Err(self.budget.refuse("YAML document nested too deeply."));
        }
        Ok(Node {
            budget: self.budget,
            depth: self.depth + 1,
        })
    }

    fn text<E: de::Error>(&self, s: &str) -> Result<String, E> {
        if s.contains('\0') {
            return Err(self.budget.refuse("Must not contain a NUL character."));
        }
        Ok(s.to_owned())
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        self.count()?;
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        self.count()?;
        Ok(json!(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        self.count()?;
        Ok(json!(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        self.count()?;
        serde_json::Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("not a finite number"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        self.count()?;
        Ok(Json::String(self.text(v)?))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        self.count()?;
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        self.count()?;
        let inner = self.nested()?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        self.count()?;
        let inner = self.nested()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(inner)? {
            // PyYAML keeps non-string keys and json.dumps writes them as strings; so do we.
            let key = match key {
                Json::String(s) => s,
                Json::Number(n) => n.to_string(),
                Json::Bool(b) => if b { "true" } else { "false" }.to_owned(),
                Json::Null => "null".to_owned(),
                _ => return Err(self.budget.refuse("A mapping key must be a scalar.")),
            };
            let value = map.next_value_seed(inner)?;
            out.insert(key, value);
        }
        Ok(Json::Object(out))
    }
}

// ------------------------------------------------------------------------------------------
// Field types

/// The type a field must have when present and not null (required fields are checked by
/// the importer, which answers Superset's 422 for them).
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Uuid,
    Bool,
    Int,
    /// A mapping (`extra`, `position`, …).
    Map,
    /// A mapping, or JSON text of one (older exports wrote `extra` as text).
    MapOrJson,
    /// A list of mappings, each checked against the fields.
    Rows(&'static [(&'static str, Ty)]),
    /// Anything (checked where it is used, or ignored).
    Any,
}

const DATABASE_FIELDS: &[(&str, Ty)] = &[
    ("database_name", Ty::Str),
    ("sqlalchemy_uri", Ty::Str),
    ("password", Ty::Str),
    ("cache_timeout", Ty::Int),
    ("expose_in_sqllab", Ty::Bool),
    ("allow_run_async", Ty::Bool),
    ("allow_ctas", Ty::Bool),
    ("allow_cvas", Ty::Bool),
    ("allow_dml", Ty::Bool),
    ("allow_file_upload", Ty::Bool),
    ("allow_csv_upload", Ty::Bool),
    ("impersonate_user", Ty::Bool),
    ("extra", Ty::MapOrJson),
    ("encrypted_extra", Ty::MapOrJson),
    ("external_url", Ty::Str),
    ("is_managed_externally", Ty::Bool),
    ("ssh_tunnel", Ty::Map),
    ("uuid", Ty::Uuid),
    ("version", Ty::Str),
];

const COLUMN_FIELDS: &[(&str, Ty)] = &[
    ("column_name", Ty::Str),
    ("verbose_name", Ty::Str),
    ("is_dttm", Ty::Bool),
    ("is_active", Ty::Bool),
    ("type", Ty::Str),
    ("advanced_data_type", Ty::Str),
    ("groupby", Ty::Bool),
    ("filterable", Ty::Bool),
    ("expression", Ty::Str),
    ("description", Ty::Str),
    ("python_date_format", Ty::Str),
    ("extra", Ty::MapOrJson),
];

const METRIC_FIELDS: &[(&str, Ty)] = &[
    ("metric_name", Ty::Str),
    ("verbose_name", Ty::Str),
    ("metric_type", Ty::Str),
    ("expression", Ty::Str),
    ("description", Ty::Str),
    ("d3format", Ty::Str),
    ("currency", Ty::MapOrJson),
    ("extra", Ty::MapOrJson),
    ("warning_text", Ty::Str),
];

const DATASET_FIELDS: &[(&str, Ty)] = &[
    ("table_name", Ty::Str),
    ("main_dttm_col", Ty::Str),
    ("description", Ty::Str),
    ("default_endpoint", Ty::Str),
    ("offset", Ty::Int),
    ("cache_timeout", Ty::Int),
    ("catalog", Ty::Str),
    ("schema", Ty::Str),
    ("sql", Ty::Str),
    ("params", Ty::MapOrJson),
    ("template_params", Ty::MapOrJson),
    ("filter_select_enabled", Ty::Bool),
    ("fetch_values_predicate", Ty::Str),
    ("extra", Ty::MapOrJson),
    ("normalize_columns", Ty::Bool),
    ("always_filter_main_dttm", Ty::Bool),
    ("uuid", Ty::Uuid),
    ("metrics", Ty::Rows(METRIC_FIELDS)),
    ("columns", Ty::Rows(COLUMN_FIELDS)),
    ("version", Ty::Str),
    ("database_uuid", Ty::Uuid),
    ("data", Ty::Str),
];

const CHART_FIELDS: &[(&str, Ty)] = &[
    ("slice_name", Ty::Str),
    ("description", Ty::Str),
    ("certified_by", Ty::Str),
    ("certification_details", Ty::Str),
    ("viz_type", Ty::Str),
    ("params", Ty::MapOrJson),
    ("query_context", Ty::Str),
    ("cache_timeout", Ty::Int),
    ("uuid", Ty::Uuid),
    ("version", Ty::Str),
    ("dataset_uuid", Ty::Uuid),
    ("tags", Ty::Any),
    ("external_url", Ty::Str),
    ("is_managed_externally", Ty::Bool),
];

const DASHBOARD_FIELDS: &[(&str, Ty)] = &[
    ("dashboard_title", Ty::Str),
    ("description", Ty::Str),
    ("css", Ty::Str),
    ("slug", Ty::Str),
    ("certified_by", Ty::Str),
    ("certification_details", Ty::Str),
    ("published", Ty::Bool),
    ("uuid", Ty::Uuid),
    ("position", Ty::Map),
    ("metadata", Ty::Map),
    ("theme_uuid", Ty::Uuid),
    ("version", Ty::Str),
    ("tags", Ty::Any),
    ("external_url", Ty::Str),
    ("is_managed_externally", Ty::Bool),
];

const SAVED_QUERY_FIELDS: &[(&str, Ty)] = &[
    ("catalog", Ty::Str),
    ("schema", Ty::Str),
    ("label", Ty::Str),
    ("description", Ty::Str),
    ("sql", Ty::Str),
    ("uuid", Ty::Uuid),
    ("version", Ty::Str),
    ("database_uuid", Ty::Uuid),
];

const METADATA_FIELDS: &[(&str, Ty)] = &[
    ("version", Ty::Str),
    ("type", Ty::Str),
    ("timestamp", Ty::Any),
];

/// The fields of a file, by the folder it sits in (`None`: a file the import ignores).
fn fields_of(path: &str) -> Option<&'static [(&'static str, Ty)]> {
    let folder = path.split('/').next().unwrap_or_default();
    match folder {
        "databases" => Some(DATABASE_FIELDS),
        "datasets" => Some(DATASET_FIELDS),
        "charts" => Some(CHART_FIELDS),
        "dashboards" => Some(DASHBOARD_FIELDS),
        "queries" => Some(SAVED_QUERY_FIELDS),
        "metadata.yaml" | "metadata.yml" => Some(METADATA_FIELDS),
        _ => None,
    }
}

/// marshmallow's message when a value has the wrong type, if it does.
fn type_problem(ty: Ty, v: &Json) -> Option<Json> {
    if v.is_null() {
        return None;
    }
    let bad = |m: &str| Some(json!([m]));
    match ty {
        Ty::Any => None,
        Ty::Str => (!v.is_string()).then(|| json!(["Not a valid string."])),
        Ty::Uuid => match v.as_str().map(uuid::Uuid::parse_str) {
            Some(Ok(_)) => None,
            _ => bad("Not a valid UUID."),
        },
        Ty::Bool => as_bool(v)
            .is_none()
            .then(|| json!(["Not a valid boolean."])),
        Ty::Int => as_int(v).is_none().then(|| json!(["Not a valid integer."])),
        Ty::Map => (!v.is_object()).then(|| json!(["Not a valid mapping type."])),
        Ty::MapOrJson => match v {
            Json::Object(_) => None,
            Json::String(s) if s.trim().is_empty() => None,
            Json::String(s) => match serde_json::from_str::<Json>(s) {
                Ok(Json::Object(_)) => None,
                _ => bad("Not a valid mapping type."),
            },
            _ => bad("Not a valid mapping type."),
        },
        Ty::Rows(fields) => {
            let Some(items) = v.as_array() else {
                return bad("Not a valid list.");
            };
            let mut problems = Map::new();
            for (i, item) in items.iter().enumerate() {
                if let Some(p) = doc_problems(fields, item) {
                    problems.insert(i.to_string(), p);
                }
            }
            (!problems.is_empty()).then_some(Json::Object(problems))
        }
    }
}

/// marshmallow-style problems of one document against its fields.
fn doc_problems(fields: &[(&str, Ty)], doc: &Json) -> Option<Json> {
    let Some(obj) = doc.as_object() else {
        return Some(json!({"_schema": ["Invalid input type."]}));
    };
    let problems: Map<String, Json> = fields
        .iter()
        .filter_map(|(name, ty)| {
            obj.get(*name)
                .and_then(|v| type_problem(*ty, v))
                .map(|p| ((*name).to_owned(), p))
        })
        .collect();
    (!problems.is_empty()).then_some(Json::Object(problems))
}

/// Every file's fields have the types Superset's import schemas declare.
fn check_types(files: &Files, kind: Kind) -> Result<(), AssetsError> {
    let problems: Map<String, Json> = files
        .iter()
        .filter_map(|(path, doc)| {
            fields_of(path)
                .and_then(|fields| doc_problems(fields, doc))
                .map(|p| (path.clone(), p))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AssetsError::Malformed {
            model: kind.model(),
            problems,
        })
    }
}

/// marshmallow's `Boolean`: true/false, 0/1 and their usual spellings.
pub(super) fn as_bool(v: &Json) -> Option<bool> {
    match v {
        Json::Bool(b) => Some(*b),
        Json::Number(n) => match n.as_i64() {
            Some(0) => Some(false),
            Some(1) => Some(true),
            _ => None,
        },
        Json::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "t" | "yes" | "y" | "on" | "1" => Some(true),
            "false" | "f" | "no" | "n" | "off" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// marshmallow's `Integer`: a whole number, or text holding one.
pub(super) fn as_int(v: &Json) -> Option<i64> {
    match v {
        Json::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9e15)
                .map(|f| f as i64)
        }),
        Json::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

// ------------------------------------------------------------------------------------------
// Writing

/// Writes a bundle under one root folder; returns the ZIP bytes. The same documents give
/// the same bytes apart from the root folder's name: `metadata.yaml` first (as Superset
/// writes it), then the files by path, every entry dated 1980-01-01 (ZIP's epoch, which is
/// also what Superset's exports carry).
pub fn write_zip(root: &str, files: &Files) -> Result<Vec<u8>, AssetsError> {
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default());
    let io = |e: &dyn fmt::Display| AssetsError::Write(e.to_string());
    let metadata = files.get_key_value("metadata.yaml");
    let rest = files.iter().filter(|(p, _)| *p != "metadata.yaml");
    for (path, doc) in metadata.into_iter().chain(rest) {
        let text = super::yaml::to_string(doc);
        out.start_file(format!("{root}/{path}"), opts)
            .map_err(|e| io(&e))?;
        out.write_all(text.as_bytes()).map_err(|e| io(&e))?;
    }
    Ok(out.finish().map_err(|e| io(&e))?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            out.start_file(*name, opts).unwrap();
            out.write_all(data).unwrap();
        }
        out.finish().unwrap().into_inner()
    }

    const META: &[u8] = b"version: 1.0.0\ntype: Slice\n";

    #[test]
    fn bundles_round_trip_through_zip_and_yaml() {
        let mut files = Files::new();
        files.insert(
            "metadata.yaml".into(),
            json!({"version": "1.0.0", "type": "Slice"}),
        );
        files.insert(
            "charts/a_1.yaml".into(),
            json!({"slice_name": "a", "params": {"x": [1, 2]}}),
        );
        let zip = write_zip("chart_export_x", &files).unwrap();
        assert_eq!(read_zip(&zip, Kind::Chart).unwrap(), files);
        assert_eq!(
            write_zip("chart_export_x", &files).unwrap(),
            zip,
            "deterministic"
        );
        assert!(matches!(
            read_zip(b"not a zip", Kind::Chart),
            Err(AssetsError::NotZip)
        ));
    }

    #[test]
    fn traversal_and_absolute_names_are_refused() {
        for name in [
            "../x.yaml",
            "b/../../x.yaml",
            "/etc/x.yaml",
            "C:/x.yaml",
            "b\\..\\x.yaml",
        ] {
            let zip = zip_of(&[("b/metadata.yaml", META), (name, b"a: 1")]);
            let err = read_zip(&zip, Kind::Chart).unwrap_err();
            assert!(
                matches!(&err, AssetsError::Unsafe(m) if m.contains("path traversal")),
                "{name}: {err:?}"
            );
        }
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_refused() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = i - 1;
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let budget = Budget::default();
        assert!(matches!(parse_yaml(&bomb, &budget), Err(Parse::Hostile(_))));
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        assert!(matches!(
            parse_yaml(&deep, &Budget::default()),
            Err(Parse::Hostile(m)) if m.contains("deeply")
        ));
        assert!(matches!(
            parse_yaml("a: \"x\\0y\"", &Budget::default()),
            Err(Parse::Hostile(m)) if m.contains("NUL")
        ));
        assert!(matches!(
            parse_yaml("a: [1, 2", &Budget::default()),
            Err(Parse::Invalid(_))
        ));
        assert_eq!(
            parse_yaml("1: a\ntrue: b", &Budget::default()).ok(),
            Some(json!({"1": "a", "true": "b"}))
        );
    }

    #[test]
    fn wrong_types_are_reported_per_field() {
        let zip = zip_of(&[
            ("b/metadata.yaml", META),
            (
                "b/charts/a.yaml",
                b"slice_name: [1]\nuuid: 12\nparams: 3\ncache_timeout: x",
            ),
            ("b/dashboards/d.yaml", b"- a\n- b"),
        ]);
        match read_zip(&zip, Kind::Chart).unwrap_err() {
            AssetsError::Malformed { problems, .. } => {
                assert_eq!(
                    problems["charts/a.yaml"],
                    json!({
                        "slice_name": ["Not a valid string."],
                        "params": ["Not a valid mapping type."],
                        "cache_timeout": ["Not a valid integer."],
                        "uuid": ["Not a valid UUID."],
                    })
                );
                assert_eq!(
                    problems["dashboards/d.yaml"],
                    json!({"_schema": ["Invalid input type."]})
                );
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn bombs_are_refused_before_inflating() {
        let zeros = vec![b' '; 4 * 1024 * 1024];
        let zip = zip_of(&[("b/metadata.yaml", META), ("b/charts/a.yaml", &zeros)]);
        assert!(matches!(
            read_zip(&zip, Kind::Chart),
            Err(AssetsError::Unsafe(m)) if m.contains("ratio")
        ));
        let many: Vec<(String, Vec<u8>)> = (0..=MAX_ENTRIES)
            .map(|i| (format!("b/x{i}.txt"), vec![]))
            .collect();
        let refs: Vec<(&str, &[u8])> = many
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_slice()))
            .collect();
        assert!(matches!(
            read_zip(&zip_of(&refs), Kind::Chart),
            Err(AssetsError::Unsafe(m)) if m.contains("too many entries")
        ));
        assert!(matches!(
            read_zip(&zip_of(&[("b/metadata.yaml", META), ("b/charts/a.yaml", b"\xff\xfe")]), Kind::Chart),
            Err(AssetsError::Malformed { problems, .. }) if problems.contains_key("charts/a.yaml")
        ));
    }
}
