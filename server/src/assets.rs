//! Superset's import/export bundle (v1.0.0): a ZIP with one root folder holding
//! `metadata.yaml` and one YAML file per database, dataset, chart and dashboard, related to
//! each other by uuid. Export renders catalog records into such a bundle; import resolves the
//! uuids and creates or updates records through the store, in dependency order.
//!
//! Knows nothing of HTTP: the API layer maps [`AssetsError`] to Superset's envelopes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Cursor, Read, Write};

use serde_json::{Map, Value as Json, json};

use crate::seal::Sealer;
use crate::store::catalog::{
    CHART, Changes, ChildWrite, DASHBOARD, DATABASE, DATASET, DATASET_COLUMN, DATASET_METRIC,
};
use crate::store::model::{Op, Pred, Record};
use crate::store::{self, Store, Value};
use crate::uri::{ConnectionUri, PASSWORD_MASK};

/// The bundle format version Superset writes and accepts.
pub const VERSION: &str = "1.0.0";

/// What a bundle holds at its top level (`metadata.yaml` `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `Database`
    Database,
    /// `SqlaTable`
    Dataset,
    /// `Slice`
    Chart,
    /// `Dashboard`
    Dashboard,
    /// `assets`: everything, as `/api/v1/assets/`.
    Assets,
}

impl Kind {
    /// `metadata.yaml`'s `type`.
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Database => "Database",
            Kind::Dataset => "SqlaTable",
            Kind::Chart => "Slice",
            Kind::Dashboard => "Dashboard",
            Kind::Assets => "assets",
        }
    }

    /// The resource name in paths and file names (`chart_export_…`).
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Database => "database",
            Kind::Dataset => "dataset",
            Kind::Chart => "chart",
            Kind::Dashboard => "dashboard",
            Kind::Assets => "assets",
        }
    }

    fn folder(self) -> &'static str {
        match self {
            Kind::Database => "databases/",
            Kind::Dataset => "datasets/",
            Kind::Chart => "charts/",
            Kind::Dashboard => "dashboards/",
            Kind::Assets => "",
        }
    }
}

/// Why an import or export failed.
#[derive(Debug, thiserror::Error)]
pub enum AssetsError {
    /// The upload is not a ZIP archive.
    #[error("Not a ZIP file")]
    NotZip,
    /// The archive holds no YAML file.
    #[error("No valid import files were found")]
    NoFiles,
    /// `metadata.yaml` is missing, or has another version or type.
    #[error("Import has incorrect version")]
    IncorrectVersion,
    /// Files failed validation: per file, the problems (Superset's `extra`).
    #[error("Error importing {model}")]
    Invalid {
        /// The model being imported (`dashboard`, …).
        model: &'static str,
        /// `{"charts/x.yaml": {...}}`.
        problems: Map<String, Json>,
    },
    /// An id to export does not exist.
    #[error("Not found")]
    NotFound,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// A bundle's documents by path below the root folder (`charts/Sales_3.yaml`).
pub type Files = BTreeMap<String, Json>;

// ------------------------------------------------------------------------------------------
// ZIP and YAML

/// Reads a bundle: the first path segment (the root folder) is dropped, only `.yaml`/`.yml`
/// files count and names starting with `.` or `_` are ignored (as Superset does).
pub fn read_zip(bytes: &[u8]) -> Result<Files, AssetsError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|_| AssetsError::NotZip)?;
    let mut files = Files::new();
    let mut problems = Map::new();
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
        // Bound what one entry may expand to, so a ZIP bomb is refused, not inflated.
        let mut text = String::new();
        if (&mut entry)
            .take(MAX_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .is_err()
            || text.len() as u64 > MAX_FILE_BYTES
        {
            problems.insert(
                path.to_owned(),
                json!({"_schema": ["Not a valid YAML file."]}),
            );
            continue;
        }
        match serde_norway::from_str::<Json>(&text) {
            Ok(doc) => {
                files.insert(path.to_owned(), doc);
            }
            Err(e) => {
                problems.insert(
                    path.to_owned(),
                    json!({"_schema": [format!("Not a valid YAML file: {e}")]}),
                );
            }
        }
    }
    if !problems.is_empty() {
        return Err(AssetsError::Invalid {
            model: "assets",
            problems,
        });
    }
    if files.is_empty() {
        return Err(AssetsError::NoFiles);
    }
    Ok(files)
}

/// Largest YAML file accepted inside a bundle.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Writes a bundle under one root folder; returns the ZIP bytes.
pub fn write_zip(root: &str, files: &Files) -> Result<Vec<u8>, AssetsError> {
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let io = |e: &dyn std::fmt::Display| AssetsError::Store(store::Error::Task(e.to_string()));
    for (path, doc) in files {
        let text = serde_norway::to_string(doc).map_err(|e| io(&e))?;
        out.start_file(format!("{root}/{path}"), opts)
            .map_err(|e| io(&e))?;
        out.write_all(text.as_bytes()).map_err(|e| io(&e))?;
    }
    Ok(out.finish().map_err(|e| io(&e))?.into_inner())
}

/// werkzeug's `secure_filename`: ASCII letters, digits, `_.-`; whitespace becomes `_`.
pub fn secure_filename(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if c == '/' || c == '\\' { ' ' } else { c })
        .filter(|c| c.is_ascii())
        .collect();
    let joined = cleaned.split_whitespace().collect::<Vec<_>>().join("_");
    let kept: String = joined
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .collect();
    kept.trim_matches(|c| c == '.' || c == '_').to_owned()
}

// ------------------------------------------------------------------------------------------
// Export

fn val(rec: &Record, name: &str) -> Json {
    match rec.values.get(name) {
        None | Some(Value::Null | Value::Bytes(_)) => Json::Null,
        Some(Value::Bool(b)) => json!(b),
        Some(Value::Int(i)) => json!(i),
        Some(Value::Float(f)) => json!(f),
        Some(Value::Text(s)) => json!(s),
        Some(Value::Timestamp(t)) => json!(t.to_string()),
    }
}

/// A JSON-in-text field as a document (`extra`, `params`): null stays null.
fn parsed(rec: &Record, name: &str) -> Json {
    rec.get::<String>(name)
        .filter(|s| !s.trim().is_empty())
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Json::Null)
}

fn doc(rec: &Record, fields: &[&str]) -> Map<String, Json> {
    fields
        .iter()
        .map(|f| ((*f).to_owned(), val(rec, f)))
        .collect()
}

/// Renders records and, when `related`, what they depend on.
struct Exporter<'a> {
    store: &'a Store,
    files: Files,
    databases: BTreeSet<i64>,
    datasets: BTreeSet<i64>,
    charts: BTreeSet<i64>,
}

impl Exporter<'_> {
    async fn database(&mut self, id: i64) -> Result<(String, String), AssetsError> {
        let db = self.store.load_one(&DATABASE, id, &[]).await?;
        let name = secure_filename(&db.text("database_name"));
        if self.databases.insert(id) {
            let mut d = doc(
                &db,
                &[
                    "database_name",
                    "cache_timeout",
                    "expose_in_sqllab",
                    "allow_run_async",
                    "allow_ctas",
                    "allow_cvas",
                    "allow_dml",
                    "allow_file_upload",
                    "impersonate_user",
                    "uuid",
                ],
            );
            let uri = ConnectionUri::parse(&db.text("sqlalchemy_uri")).map_or_else(
                |_| db.text("sqlalchemy_uri"),
                |mut u| {
                    if db.flag("has_password") {
                        u.password = Some(PASSWORD_MASK.into());
                    }
                    u.masked()
                },
            );
            d.insert("sqlalchemy_uri".into(), json!(uri));
            let extra = parsed(&db, "extra");
            d.insert(
                "extra".into(),
                if extra.is_null() { json!({}) } else { extra },
            );
            d.insert("version".into(), json!(VERSION));
            self.files
                .insert(format!("databases/{name}.yaml"), Json::Object(d));
        }
        Ok((name, db.text("uuid")))
    }

    /// `with_id`: Superset names a dataset `<table>_<id>.yaml`, except inside a database's
    /// export, where it is `<table>.yaml`.
    async fn dataset(&mut self, id: i64, with_id: bool) -> Result<String, AssetsError> {
        let ds = self.store.load_one(&DATASET, id, &["database"]).await?;
        let db_id = ds
            .one("database")
            .map(|d| d.id)
            .ok_or(AssetsError::NotFound)?;
        let (db_file, db_uuid) = self.database(db_id).await?;
        if self.datasets.insert(id) {
            let mut d = doc(
                &ds,
                &[
                    "table_name",
                    "main_dttm_col",
                    "description",
                    "default_endpoint",
                    "offset",
                    "cache_timeout",
                    "catalog",
                    "schema",
                    "sql",
                    "template_params",
                    "filter_select_enabled",
                    "fetch_values_predicate",
                    "normalize_columns",
                    "always_filter_main_dttm",
                    "uuid",
                ],
            );
            d.insert("params".into(), Json::Null);
            d.insert("extra".into(), parsed(&ds, "extra"));
            let by_table = |m| Pred::field(m, "table_id", Op::Eq, Value::Int(id));
            let (_, mids) = self
                .store
                .list_ids(&DATASET_METRIC, &by_table(&DATASET_METRIC)?, None, None)
                .await?;
            let (_, cids) = self
                .store
                .list_ids(&DATASET_COLUMN, &by_table(&DATASET_COLUMN)?, None, None)
                .await?;
            let metrics = self.store.load(&DATASET_METRIC, &mids, &[]).await?;
            let columns = self.store.load(&DATASET_COLUMN, &cids, &[]).await?;
            d.insert(
                "metrics".into(),
                Json::Array(
                    metrics
                        .iter()
                        .map(|m| {
                            let mut o = doc(m, METRIC_FIELDS);
                            o.insert("extra".into(), parsed(m, "extra"));
                            o.insert("currency".into(), parsed(m, "currency"));
                            Json::Object(o)
                        })
                        .collect(),
                ),
            );
            d.insert(
                "columns".into(),
                Json::Array(
                    columns
                        .iter()
                        .map(|c| {
                            let mut o = doc(c, COLUMN_FIELDS);
                            o.insert("extra".into(), parsed(c, "extra"));
                            Json::Object(o)
                        })
                        .collect(),
                ),
            );
            d.insert("version".into(), json!(VERSION));
            d.insert("database_uuid".into(), json!(db_uuid));
            let name = secure_filename(&ds.text("table_name"));
            let file = if with_id {
                format!("datasets/{db_file}/{name}_{id}.yaml")
            } else {
                format!("datasets/{db_file}/{name}.yaml")
            };
            self.files.insert(file, Json::Object(d));
        }
        Ok(ds.text("uuid"))
    }

    async fn chart(&mut self, id: i64) -> Result<String, AssetsError> {
        let ch = self.store.load_one(&CHART, id, &[]).await?;
        if self.charts.insert(id) {
            let mut d = doc(
                &ch,
                &[
                    "slice_name",
                    "description",
                    "certified_by",
                    "certification_details",
                    "viz_type",
                    "query_context",
                    "cache_timeout",
                    "uuid",
                ],
            );
            let params = parsed(&ch, "params");
            d.insert(
                "params".into(),
                if params.is_null() { json!({}) } else { params },
            );
            d.insert("version".into(), json!(VERSION));
            if let Some(ds) = ch.get::<i64>("datasource_id") {
                let uuid = self.dataset(ds, true).await?;
                d.insert("dataset_uuid".into(), json!(uuid));
            }
            let file = format!(
                "charts/{}_{id}.yaml",
                secure_filename(&ch.text("slice_name"))
            );
            self.files.insert(file, Json::Object(d));
        }
        Ok(ch.text("uuid"))
    }

    async fn dashboard(&mut self, id: i64) -> Result<(), AssetsError> {
        let dash = self.store.load_one(&DASHBOARD, id, &["slices"]).await?;
        let mut uuids = BTreeMap::new();
        for s in dash.related("slices") {
            uuids.insert(s.id, self.chart(s.id).await?);
        }
        let mut d = doc(
            &dash,
            &[
                "dashboard_title",
                "description",
                "css",
                "slug",
                "certified_by",
                "certification_details",
                "published",
                "uuid",
            ],
        );
        let mut position = parsed(&dash, "position_json");
        // Charts are referenced by uuid inside the position, so ids can change on import.
        if let Some(map) = position.as_object_mut() {
            for node in map.values_mut() {
                let chart = node["meta"]["chartId"].as_i64();
                if let Some(u) = chart.and_then(|c| uuids.get(&c)) {
                    node["meta"]["uuid"] = json!(u);
                }
            }
        }
        d.insert("position".into(), position);
        d.insert("metadata".into(), parsed(&dash, "json_metadata"));
        d.insert("theme_uuid".into(), Json::Null);
        d.insert("version".into(), json!(VERSION));
        let file = format!(
            "dashboards/{}_{id}.yaml",
            secure_filename(&dash.text("dashboard_title"))
        );
        self.files.insert(file, Json::Object(d));
        Ok(())
    }
}

const METRIC_FIELDS: &[&str] = &[
    "metric_name",
    "verbose_name",
    "metric_type",
    "expression",
    "description",
    "d3format",
    "warning_text",
];
const COLUMN_FIELDS: &[&str] = &[
    "column_name",
    "verbose_name",
    "is_dttm",
    "is_active",
    "type",
    "advanced_data_type",
    "groupby",
    "filterable",
    "expression",
    "description",
    "python_date_format",
];

/// Exports records of one kind with everything they depend on (a database with its datasets;
/// a dashboard with its charts, their datasets and databases). `Kind::Assets` exports
/// `ids` of every kind (already chosen by the caller) without duplicating shared records.
pub async fn export(
    store: &Store,
    kind: Kind,
    ids: &[i64],
    timestamp: &str,
) -> Result<Files, AssetsError> {
    let mut ex = Exporter {
        store,
        files: Files::new(),
        databases: BTreeSet::new(),
        datasets: BTreeSet::new(),
        charts: BTreeSet::new(),
    };
    let model = match kind {
        Kind::Database => &DATABASE,
        Kind::Dataset => &DATASET,
        Kind::Chart => &CHART,
        Kind::Dashboard | Kind::Assets => &DASHBOARD,
    };
    if kind != Kind::Assets
        && store.existing(model, ids).await?.len() != ids.iter().collect::<BTreeSet<_>>().len()
    {
        return Err(AssetsError::NotFound);
    }
    let all = |m| async move {
        store
            .list_ids(m, &Pred::all(), None, None)
            .await
            .map(|r| r.1)
    };
    match kind {
        Kind::Database => {
            for id in ids {
                ex.database(*id).await?;
                let p = Pred::field(&DATASET, "database", Op::RelOneToMany, Value::Int(*id))?;
                for ds in store.list_ids(&DATASET, &p, None, None).await?.1 {
                    ex.dataset(ds, false).await?;
                }
            }
        }
        Kind::Dataset => {
            for id in ids {
                ex.dataset(*id, true).await?;
            }
        }
        Kind::Chart => {
            for id in ids {
                ex.chart(*id).await?;
            }
        }
        Kind::Dashboard => {
            for id in ids {
                ex.dashboard(*id).await?;
            }
        }
        Kind::Assets => {
            for id in all(&DASHBOARD).await? {
                ex.dashboard(id).await?;
            }
            for id in all(&CHART).await? {
                ex.chart(id).await?;
            }
            for id in all(&DATASET).await? {
                ex.dataset(id, true).await?;
            }
            for id in all(&DATABASE).await? {
                ex.database(id).await?;
            }
        }
    }
    ex.files.insert(
        "metadata.yaml".into(),
        json!({"version": VERSION, "type": kind.type_name(), "timestamp": timestamp}),
    );
    Ok(ex.files)
}

// ------------------------------------------------------------------------------------------
// Import

/// How to import a bundle.
#[derive(Debug, Default)]
pub struct ImportOptions {
    /// Replace existing top-level records (matched by uuid); related ones are reused.
    pub overwrite: bool,
    /// Passwords for masked database URIs, by file path (`databases/x.yaml`).
    pub passwords: BTreeMap<String, String>,
    /// The user who imports (owner of new records).
    pub user: Option<i64>,
}

fn text(doc: &Json, key: &str) -> Value {
    match doc.get(key) {
        Some(Json::String(s)) => Value::Text(s.clone()),
        Some(Json::Number(n)) => Value::Text(n.to_string()),
        _ => Value::Null,
    }
}

fn int(doc: &Json, key: &str) -> Value {
    doc.get(key)
        .and_then(Json::as_i64)
        .map_or(Value::Null, Value::Int)
}

fn flag(doc: &Json, key: &str, default: bool) -> Value {
    Value::Bool(doc.get(key).and_then(Json::as_bool).unwrap_or(default))
}

/// A nested document stored as JSON text (`extra`, `params`, `position_json`).
fn json_text(doc: &Json, key: &str) -> Value {
    match doc.get(key) {
        None | Some(Json::Null) => Value::Null,
        Some(Json::String(s)) => Value::Text(s.clone()),
        Some(v) => Value::Text(v.to_string()),
    }
}

fn required<'d>(
    doc: &'d Json,
    keys: &[&str],
    problems: &mut Map<String, Json>,
) -> Option<&'d Json> {
    let missing: Map<String, Json> = keys
        .iter()
        .filter(|k| doc.get(**k).is_none_or(Json::is_null))
        .map(|k| ((*k).to_owned(), json!(["Missing data for required field."])))
        .collect();
    if missing.is_empty() {
        Some(doc)
    } else {
        problems.extend(missing);
        None
    }
}

struct Importer<'a> {
    store: &'a Store,
    sealer: &'a Sealer,
    top: Kind,
    opts: &'a ImportOptions,
    problems: Map<String, Json>,
    /// uuid → id of every record imported or reused so far.
    ids: BTreeMap<String, i64>,
    /// Validate and resolve only: nothing is written, new records get placeholder ids.
    dry_run: bool,
    /// The last placeholder id handed out (negative, never a real id).
    placeholder: i64,
}

impl Importer<'_> {
    /// In a dry run, records the uuid with its existing or a placeholder id and returns true:
    /// the caller stops before writing.
    fn dry(&mut self, uuid: &str, existing: Option<i64>) -> bool {
        if self.dry_run {
            self.placeholder -= 1;
            self.ids
                .insert(uuid.to_owned(), existing.unwrap_or(self.placeholder));
        }
        self.dry_run
    }

    /// The existing id for a uuid, and whether this file may write it.
    async fn target(
        &mut self,
        model: &'static crate::store::model::Model,
        kind: Kind,
        file: &str,
        uuid: &str,
    ) -> Result<(Option<i64>, bool), AssetsError> {
        let existing = self
            .store
            .find_id(model, "uuid", Value::Text(uuid.into()))
            .await?;
        let top = self.top == kind || self.top == Kind::Assets;
        match existing {
            Some(id) if top && !self.opts.overwrite && self.top != Kind::Assets => {
                let name = match kind {
                    Kind::Database => "Database",
                    Kind::Dataset => "Dataset",
                    Kind::Chart => "Chart",
                    _ => "Dashboard",
                };
                self.problems.insert(
                    file.to_owned(),
                    json!(format!(
                        "{name} already exists and `overwrite=true` was not passed"
                    )),
                );
                Ok((Some(id), false))
            }
            Some(id) => Ok((Some(id), top)),
            None => Ok((None, true)),
        }
    }

    async fn database(&mut self, file: &str, doc: &Json) -> Result<(), AssetsError> {
        let mut problems = Map::new();
        let Some(doc) = required(
            doc,
            &["database_name", "sqlalchemy_uri", "uuid"],
            &mut problems,
        ) else {
            self.problems
                .insert(file.to_owned(), Json::Object(problems));
            return Ok(());
        };
        let uuid = doc["uuid"].as_str().unwrap_or_default().to_owned();
        let (existing, write) = self.target(&DATABASE, Kind::Database, file, &uuid).await?;
        if let Some(id) = existing {
            self.ids.insert(uuid.clone(), id);
        }
        if !write {
            return Ok(());
        }
        let raw = doc["sqlalchemy_uri"].as_str().unwrap_or_default();
        let mut uri = match ConnectionUri::parse(raw) {
            Ok(u) => u,
            Err(e) => {
                self.problems
                    .insert(file.to_owned(), json!({"sqlalchemy_uri": [e.to_string()]}));
                return Ok(());
            }
        };
        let password = match (uri.password.as_deref(), self.opts.passwords.get(file)) {
            (_, Some(p)) => Some(Some(p.clone())),
            (Some(PASSWORD_MASK), None) if existing.is_some() => None,
            (Some(PASSWORD_MASK), None) => {
                self.problems.insert(
                    file.to_owned(),
                    json!({"_schema": ["Must provide a password for the database"]}),
                );
                return Ok(());
            }
            (Some(p), None) => Some(Some(p.to_owned())),
            (None, None) => Some(None),
        };
        uri.password = None;
        let mut c = Changes::default();
        c.set("database_name", text(doc, "database_name"));
        c.set("sqlalchemy_uri", uri.without_password());
        c.set("uuid", uuid.clone());
        c.set("cache_timeout", int(doc, "cache_timeout"));
        for (k, d) in [
            ("expose_in_sqllab", true),
            ("allow_run_async", false),
            ("allow_ctas", false),
            ("allow_cvas", false),
            ("allow_dml", false),
            ("impersonate_user", false),
        ] {
            c.set(k, flag(doc, k, d));
        }
        let upload = doc
            .get("allow_file_upload")
            .or_else(|| doc.get("allow_csv_upload"));
        c.set(
            "allow_file_upload",
            Value::Bool(upload.and_then(Json::as_bool).unwrap_or(false)),
        );
        c.set("extra", json_text(doc, "extra"));
        if let Some(other) = self
            .store
            .find_id(&DATABASE, "database_name", text(doc, "database_name"))
            .await?
            && Some(other) != existing
        {
            self.problems.insert(
                file.to_owned(),
                json!({"database_name": ["A database with the same name already exists."]}),
            );
            return Ok(());
        }
        if self.dry(&uuid, existing) {
            return Ok(());
        }
        let sealed = match password {
            None => None,
            Some(None) => Some(None),
            Some(Some(p)) => Some(Some(
                self.sealer
                    .seal(p.as_bytes(), uuid.as_bytes())
                    .map_err(|e| store::Error::Task(e.to_string()))?,
            )),
        };
        match self
            .store
            .save_database(existing, &c, sealed, self.opts.user)
            .await
        {
            Ok(id) => {
                self.ids.insert(uuid, id);
            }
            Err(store::Error::Conflict { .. }) => {
                self.problems.insert(
                    file.to_owned(),
                    json!({"database_name": ["A database with the same name already exists."]}),
                );
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    async fn dataset(&mut self, file: &str, doc: &Json) -> Result<(), AssetsError> {
        let mut problems = Map::new();
        let Some(doc) = required(doc, &["table_name", "uuid", "database_uuid"], &mut problems)
        else {
            self.problems
                .insert(file.to_owned(), Json::Object(problems));
            return Ok(());
        };
        let uuid = doc["uuid"].as_str().unwrap_or_default().to_owned();
        let Some(db) = doc["database_uuid"]
            .as_str()
            .and_then(|u| self.ids.get(u))
            .copied()
        else {
            self.problems.insert(
                file.to_owned(),
                json!({"database_uuid": ["Database does not exist"]}),
            );
            return Ok(());
        };
        let (existing, write) = self.target(&DATASET, Kind::Dataset, file, &uuid).await?;
        if let Some(id) = existing {
            self.ids.insert(uuid.clone(), id);
        }
        if !write {
            return Ok(());
        }
        let mut c = Changes::default();
        c.set("database", db);
        c.set("uuid", uuid.clone());
        for k in [
            "table_name",
            "main_dttm_col",
            "description",
            "default_endpoint",
            "catalog",
            "schema",
            "sql",
            "template_params",
            "fetch_values_predicate",
        ] {
            c.set(k, text(doc, k));
        }
        c.set(
            "offset",
            doc.get("offset").and_then(Json::as_i64).unwrap_or(0),
        );
        c.set("cache_timeout", int(doc, "cache_timeout"));
        c.set(
            "filter_select_enabled",
            flag(doc, "filter_select_enabled", true),
        );
        c.set("normalize_columns", flag(doc, "normalize_columns", false));
        c.set(
            "always_filter_main_dttm",
            flag(doc, "always_filter_main_dttm", false),
        );
        c.set("extra", json_text(doc, "extra"));
        if existing.is_none() {
            c.link("owners", self.opts.user.into_iter().collect());
        }
        let children = |key: &str,
                        texts: &[&'static str],
                        bools: &[(&'static str, bool)]|
         -> Vec<ChildWrite> {
            doc.get(key)
                .and_then(Json::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|item| {
                            let mut values: Vec<(&'static str, Value)> =
                                texts.iter().map(|k| (*k, text(item, k))).collect();
                            values.extend(bools.iter().map(|(k, d)| (*k, flag(item, k, *d))));
                            values.push(("extra", json_text(item, "extra")));
                            ChildWrite { id: None, values }
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let columns = children(
            "columns",
            &[
                "column_name",
                "verbose_name",
                "type",
                "advanced_data_type",
                "expression",
                "description",
                "python_date_format",
            ],
            &[
                ("is_dttm", false),
                ("is_active", true),
                ("groupby", true),
                ("filterable", true),
            ],
        );
        let mut metrics = children(
            "metrics",
            &[
                "metric_name",
                "verbose_name",
                "metric_type",
                "expression",
                "description",
                "d3format",
                "warning_text",
            ],
            &[],
        );
        if let Some(items) = doc.get("metrics").and_then(Json::as_array) {
            for (m, item) in metrics.iter_mut().zip(items) {
                m.values.push(("currency", json_text(item, "currency")));
            }
        }
        let bad_child = |c: &ChildWrite, name: &str| {
            c.values
                .iter()
                .any(|(k, v)| *k == name && *v == Value::Null)
        };
        if columns.iter().any(|c| bad_child(c, "column_name"))
            || metrics
                .iter()
                .any(|m| bad_child(m, "metric_name") || bad_child(m, "expression"))
        {
            self.problems.insert(
                file.to_owned(),
                json!({"columns": ["Missing data for required field."]}),
            );
            return Ok(());
        }
        if self.dry(&uuid, existing) {
            return Ok(());
        }
        match self
            .store
            .save_dataset(existing, &c, Some(&columns), Some(&metrics), self.opts.user)
            .await
        {
            Ok(id) => {
                self.ids.insert(uuid, id);
            }
            Err(store::Error::Conflict { message }) => {
                self.problems.insert(
                    file.to_owned(),
                    json!({"table_name": [format!("Dataset already exists: {message}")]}),
                );
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    async fn chart(&mut self, file: &str, doc: &Json) -> Result<(), AssetsError> {
        let mut problems = Map::new();
        let Some(doc) = required(doc, &["slice_name", "uuid", "dataset_uuid"], &mut problems)
        else {
            self.problems
                .insert(file.to_owned(), Json::Object(problems));
            return Ok(());
        };
        let uuid = doc["uuid"].as_str().unwrap_or_default().to_owned();
        let Some(ds) = doc["dataset_uuid"]
            .as_str()
            .and_then(|u| self.ids.get(u))
            .copied()
        else {
            self.problems.insert(
                file.to_owned(),
                json!({"dataset_uuid": ["Dataset does not exist"]}),
            );
            return Ok(());
        };
        let (existing, write) = self.target(&CHART, Kind::Chart, file, &uuid).await?;
        if let Some(id) = existing {
            self.ids.insert(uuid.clone(), id);
        }
        if !write {
            return Ok(());
        }
        if self.dry(&uuid, existing) {
            return Ok(());
        }
        let dataset = self.store.load_one(&DATASET, ds, &[]).await?;
        let mut params = doc.get("params").cloned().unwrap_or_else(|| json!({}));
        if let Json::String(s) = &params {
            params = serde_json::from_str(s).unwrap_or_else(|_| json!({}));
        }
        if params.is_object() {
            params["datasource"] = json!(format!("{ds}__table"));
        }
        let mut c = Changes::default();
        c.set("uuid", uuid.clone());
        for k in [
            "slice_name",
            "description",
            "certified_by",
            "certification_details",
            "viz_type",
        ] {
            c.set(k, text(doc, k));
        }
        c.set("params", params.to_string());
        c.set("query_context", json_text(doc, "query_context"));
        c.set("cache_timeout", int(doc, "cache_timeout"));
        c.set("datasource_id", ds);
        c.set("datasource_type", "table");
        c.set("datasource_name", dataset.text("table_name"));
        c.set("perm", Value::from(dataset.get::<String>("perm")));
        c.set(
            "schema_perm",
            Value::from(dataset.get::<String>("schema_perm")),
        );
        if existing.is_none() {
            c.link("owners", self.opts.user.into_iter().collect());
        }
        let id = self
            .store
            .save(&CHART, existing, &c, self.opts.user)
            .await?;
        self.ids.insert(uuid, id);
        Ok(())
    }

    async fn dashboard(&mut self, file: &str, doc: &Json) -> Result<(), AssetsError> {
        let mut problems = Map::new();
        let Some(doc) = required(doc, &["dashboard_title", "uuid"], &mut problems) else {
            self.problems
                .insert(file.to_owned(), Json::Object(problems));
            return Ok(());
        };
        let uuid = doc["uuid"].as_str().unwrap_or_default().to_owned();
        let (existing, write) = self
            .target(&DASHBOARD, Kind::Dashboard, file, &uuid)
            .await?;
        if !write {
            return Ok(());
        }
        // Charts are referenced by uuid; their ids are this server's.
        let mut position = doc.get("position").cloned().unwrap_or(Json::Null);
        let mut charts = Vec::new();
        if let Some(map) = position.as_object_mut() {
            for node in map.values_mut() {
                let chart = node["meta"]["uuid"]
                    .as_str()
                    .and_then(|u| self.ids.get(u))
                    .copied();
                if let Some(id) = chart.filter(|_| node["type"] == "CHART") {
                    node["meta"]["chartId"] = json!(id);
                    charts.push(id);
                }
            }
        }
        if position.is_null() {
            position = json!({
                "DASHBOARD_VERSION_KEY": "v2",
                "ROOT_ID": {"children": ["GRID_ID"], "id": "ROOT_ID", "type": "ROOT"},
                "GRID_ID": {"children": [], "id": "GRID_ID", "parents": ["ROOT_ID"], "type": "GRID"},
                "HEADER_ID": {"id": "HEADER_ID", "meta": {"text": doc["dashboard_title"]}, "type": "HEADER"},
            });
        }
        let mut metadata = doc.get("metadata").cloned().unwrap_or_else(|| json!({}));
        if let Some(filters) = metadata
            .get_mut("native_filter_configuration")
            .and_then(Json::as_array_mut)
        {
            for f in filters {
                if let Some(targets) = f.get_mut("targets").and_then(Json::as_array_mut) {
                    for t in targets {
                        let ds = t
                            .get("datasetUuid")
                            .and_then(Json::as_str)
                            .and_then(|u| self.ids.get(u))
                            .copied();
                        if let (Some(id), Some(obj)) = (ds, t.as_object_mut()) {
                            obj.remove("datasetUuid");
                            obj.insert("datasetId".into(), json!(id));
                        }
                    }
                }
            }
        }
        let mut c = Changes::default();
        c.set("uuid", uuid.clone());
        for k in [
            "dashboard_title",
            "description",
            "css",
            "certified_by",
            "certification_details",
        ] {
            c.set(k, text(doc, k));
        }
        let slug = text(doc, "slug");
        if let Value::Text(s) = &slug
            && let Some(other) = self
                .store
                .find_id(&DASHBOARD, "slug", Value::Text(s.clone()))
                .await?
            && Some(other) != existing
        {
            self.problems
                .insert(file.to_owned(), json!({"slug": ["Must be unique"]}));
            return Ok(());
        }
        c.set("slug", slug);
        c.set("published", flag(doc, "published", false));
        c.set("position_json", position.to_string());
        c.set("json_metadata", metadata.to_string());
        c.link("slices", charts);
        if existing.is_none() {
            c.link("owners", self.opts.user.into_iter().collect());
        }
        if self.dry(&uuid, existing) {
            return Ok(());
        }
        let id = self
            .store
            .save(&DASHBOARD, existing, &c, self.opts.user)
            .await?;
        self.ids.insert(uuid, id);
        Ok(())
    }
}

/// Imports a bundle whose top-level kind is `top` (for `Kind::Assets`, everything is
/// top-level and replaced). Records are matched by uuid. Validation problems of any file
/// fail the import with every problem listed and nothing written. (Each record is saved in
/// its own transaction, so only a store failure midway can leave part of a bundle.)
pub async fn import(
    store: &Store,
    sealer: &Sealer,
    top: Kind,
    files: &Files,
    opts: &ImportOptions,
) -> Result<(), AssetsError> {
    let meta = files
        .get("metadata.yaml")
        .ok_or(AssetsError::IncorrectVersion)?;
    let version_ok = meta.get("version").and_then(Json::as_str) == Some(VERSION);
    let type_ok = meta
        .get("type")
        .and_then(Json::as_str)
        .is_none_or(|t| t == top.type_name() || top == Kind::Assets);
    if !version_ok || !type_ok {
        return Err(AssetsError::IncorrectVersion);
    }
    if top != Kind::Assets && !files.keys().any(|p| p.starts_with(top.folder())) {
        return Err(AssetsError::NoFiles);
    }
    // A dry run first finds every problem, so a refused bundle writes nothing.
    for dry_run in [true, false] {
        let mut imp = Importer {
            store,
            sealer,
            top,
            opts,
            problems: Map::new(),
            ids: BTreeMap::new(),
            dry_run,
            placeholder: 0,
        };
        imp.run(files).await?;
        if !imp.problems.is_empty() {
            return Err(AssetsError::Invalid {
                model: top.resource(),
                problems: imp.problems,
            });
        }
    }
    Ok(())
}

impl Importer<'_> {
    /// Every file, dependencies first.
    async fn run(&mut self, files: &Files) -> Result<(), AssetsError> {
        let of = |kind: Kind| {
            files
                .iter()
                .filter(move |(p, _)| p.starts_with(kind.folder()))
        };
        for (path, doc) in of(Kind::Database) {
            self.database(path, doc).await?;
        }
        for (path, doc) in of(Kind::Dataset) {
            self.dataset(path, doc).await?;
        }
        for (path, doc) in of(Kind::Chart) {
            self.chart(path, doc).await?;
        }
        for (path, doc) in of(Kind::Dashboard) {
            self.dashboard(path, doc).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secure_filename_matches_werkzeug() {
        assert_eq!(secure_filename("My cool movie.mov"), "My_cool_movie.mov");
        assert_eq!(secure_filename("../../../etc/passwd"), "etc_passwd");
        assert_eq!(secure_filename("Revenue by region"), "Revenue_by_region");
    }

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
        assert_eq!(read_zip(&zip).unwrap(), files);
        assert!(matches!(read_zip(b"not a zip"), Err(AssetsError::NotZip)));
    }
}
