//! Superset's import/export bundle (v1.0.0): a ZIP with one root folder holding
//! `metadata.yaml` and one YAML file per database, dataset, chart and dashboard, related to
//! each other by uuid. Export renders catalog records into such a bundle; import resolves the
//! uuids and creates or updates records through the store, in dependency order.
//!
//! Knows nothing of HTTP: the API layer maps [`AssetsError`] to Superset's envelopes.

mod bundle;
mod yaml;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value as Json, json};

use bundle::{as_bool, as_int};
pub use bundle::{read_zip, write_zip};

use crate::engines::ConnectionGuard;
use crate::seal::Sealer;
use crate::store::catalog::{
    self as cat, CHART, Changes, ChildWrite, DASHBOARD, DATABASE, DATASET, DATASET_COLUMN,
    DATASET_METRIC, SAVED_QUERY,
};
use crate::store::model::{self, Op, Pred, Record};
use crate::store::{self, Store, Tx, Value};
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
    /// `SavedQuery`
    SavedQuery,
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
            Kind::SavedQuery => "SavedQuery",
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
            Kind::SavedQuery => "saved_query",
            Kind::Assets => "assets",
        }
    }

    /// Superset's `model_name` of the import command (`Error importing <model>`).
    pub fn model(self) -> &'static str {
        match self {
            Kind::SavedQuery => "saved_queries",
            k => k.resource(),
        }
    }

    /// How the "already exists" message names a record of this kind (Superset's
    /// `model_name.title()`).
    fn title(self) -> &'static str {
        match self {
            Kind::Database => "Database",
            Kind::Dataset => "Dataset",
            Kind::Chart => "Chart",
            Kind::Dashboard => "Dashboard",
            Kind::SavedQuery => "Saved_Queries",
            Kind::Assets => "Assets",
        }
    }

    /// How Superset's importers name a record of this kind in their permission messages.
    fn noun(self) -> &'static str {
        match self {
            Kind::Database => "database",
            Kind::Dataset => "dataset",
            Kind::Chart => "chart",
            Kind::Dashboard => "dashboard",
            Kind::SavedQuery => "saved query",
            Kind::Assets => "asset",
        }
    }

    fn folder(self) -> &'static str {
        match self {
            Kind::Database => "databases/",
            Kind::Dataset => "datasets/",
            Kind::Chart => "charts/",
            Kind::Dashboard => "dashboards/",
            Kind::SavedQuery => "queries/",
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
    /// The archive is refused before its files are read: a ZIP bomb, too many entries, an
    /// entry name leaving the root folder, a file over the size limit.
    #[error("{0}")]
    Unsafe(String),
    /// Files that no exporter writes: not UTF-8, over the YAML bounds, fields of the wrong
    /// type. Per file, the problems.
    #[error("Error importing {model}")]
    Malformed {
        /// The model being imported (`dashboard`, …).
        model: &'static str,
        /// `{"charts/x.yaml": {"uuid": ["Not a valid UUID."]}}`.
        problems: Map<String, Json>,
    },
    /// Well-formed files that cannot be imported (missing fields or references, conflicts
    /// with existing records): per file, the problems (Superset's `extra`).
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
    /// Rendering the archive failed.
    #[error("writing the bundle: {0}")]
    Write(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// A bundle's documents by path below the root folder (`charts/Sales_3.yaml`).
pub type Files = BTreeMap<String, Json>;

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
        if position.as_object().is_none_or(|p| p.is_empty()) {
            position = default_position(&dash.text("dashboard_title"));
        }
        // Charts are referenced by uuid inside the position, so ids can change on import.
        let mut placed = BTreeSet::new();
        if let Some(map) = position.as_object_mut() {
            for node in map.values_mut() {
                let chart = node["meta"]["chartId"].as_i64();
                if let Some((c, u)) = chart.and_then(|c| uuids.get_key_value(&c)) {
                    node["meta"]["uuid"] = json!(u);
                    placed.insert(*c);
                }
            }
        }
        // Linked charts missing from the layout are appended in a row of their own (as
        // Superset's export does), or the import could not link them.
        let orphans: Vec<&Record> = dash
            .related("slices")
            .iter()
            .filter(|s| !placed.contains(&s.id))
            .collect();
        append_charts(&mut position, &orphans, &uuids);
        d.insert("position".into(), position);
        let mut metadata = parsed(&dash, "json_metadata");
        // Native filters name their datasets by uuid in a bundle, and bring them along.
        let mut targets: Vec<i64> = Vec::new();
        for f in metadata["native_filter_configuration"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for t in f["targets"].as_array().into_iter().flatten() {
                targets.extend(t.get("datasetId").and_then(Json::as_i64));
            }
        }
        let existing = self.store.existing(&DATASET, &targets).await?;
        let mut dataset_uuids = BTreeMap::new();
        for ds in existing {
            dataset_uuids.insert(ds, self.dataset(ds, true).await?);
        }
        if let Some(filters) = metadata
            .get_mut("native_filter_configuration")
            .and_then(Json::as_array_mut)
        {
            for f in filters {
                let Some(targets) = f.get_mut("targets").and_then(Json::as_array_mut) else {
                    continue;
                };
                for obj in targets.iter_mut().filter_map(Json::as_object_mut) {
                    let ds = obj.get("datasetId").and_then(Json::as_i64);
                    if let Some(uuid) = ds.and_then(|d| dataset_uuids.get(&d)) {
                        obj.remove("datasetId");
                        obj.insert("datasetUuid".into(), json!(uuid));
                    }
                }
            }
        }
        d.insert("metadata".into(), metadata);
        d.insert("theme_uuid".into(), Json::Null);
        d.insert("version".into(), json!(VERSION));
        let file = format!(
            "dashboards/{}_{id}.yaml",
            secure_filename(&dash.text("dashboard_title"))
        );
        self.files.insert(file, Json::Object(d));
        Ok(())
    }

    async fn saved_query(&mut self, id: i64) -> Result<(), AssetsError> {
        let q = self.store.load_one(&SAVED_QUERY, id, &[]).await?;
        let mut d = doc(
            &q,
            &["catalog", "schema", "label", "description", "sql", "uuid"],
        );
        d.insert("version".into(), json!(VERSION));
        let mut file = String::from("queries/");
        if let Some(db) = q.get::<i64>("db_id") {
            let (db_file, db_uuid) = self.database(db).await?;
            d.insert("database_uuid".into(), json!(db_uuid));
            file.push_str(&db_file);
            file.push('/');
        }
        if let Some(schema) = q.get::<String>("schema") {
            file.push_str(&secure_filename(&schema));
            file.push('/');
        }
        let label = secure_filename(&q.text("label"));
        file.push_str(if label.is_empty() {
            d["uuid"].as_str().unwrap_or_default()
        } else {
            &label
        });
        file.push_str(".yaml");
        self.files.insert(file, Json::Object(d));
        Ok(())
    }
}

/// Superset's `get_default_position`: an empty layout with the title as header.
fn default_position(title: &str) -> Json {
    json!({
        "DASHBOARD_VERSION_KEY": "v2",
        "ROOT_ID": {"children": ["GRID_ID"], "id": "ROOT_ID", "type": "ROOT"},
        "GRID_ID": {"children": [], "id": "GRID_ID", "parents": ["ROOT_ID"], "type": "GRID"},
        "HEADER_ID": {"id": "HEADER_ID", "meta": {"text": title}, "type": "HEADER"},
    })
}

/// Superset's `append_charts`: one new row holding `charts`. Node ids derive from the
/// charts' uuids (Superset draws random ones), so an unchanged dashboard exports the same.
fn append_charts(position: &mut Json, charts: &[&Record], uuids: &BTreeMap<i64, String>) {
    let Some(map) = position.as_object_mut() else {
        return;
    };
    if charts.is_empty() {
        return;
    }
    let suffix = |u: &str| {
        u.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(10)
            .collect::<String>()
    };
    let nodes: Vec<(String, &Record, &String)> = charts
        .iter()
        .filter_map(|c| {
            uuids
                .get(&c.id)
                .map(|u| (format!("CHART-{}", suffix(u)), *c, u))
        })
        .collect();
    let grid = map
        .get("ROOT_ID")
        .and_then(|r| r["children"].as_array())
        .is_some_and(|c| c.iter().any(|x| x == "GRID_ID"))
        && map.get("GRID_ID").is_some_and(|g| g["children"].is_array());
    let row = grid.then(|| format!("ROW-N-{}", suffix(nodes.first().map_or("", |n| n.2))));
    if let Some(row) = &row {
        if let Some(children) = map
            .get_mut("GRID_ID")
            .and_then(|g| g.get_mut("children"))
            .and_then(Json::as_array_mut)
        {
            children.push(json!(row));
        }
        map.insert(
            row.clone(),
            json!({
                "children": nodes.iter().map(|n| &n.0).collect::<Vec<_>>(),
                "id": row,
                "meta": {"0": "ROOT_ID", "background": "BACKGROUND_TRANSPARENT"},
                "type": "ROW",
                "parents": ["ROOT_ID", "GRID_ID"],
            }),
        );
    }
    for (id, chart, uuid) in nodes {
        let mut node = json!({
            "children": [],
            "id": id,
            "meta": {
                "chartId": chart.id,
                "height": 50,
                "sliceName": chart.text("slice_name"),
                "uuid": uuid,
                "width": 4,
            },
            "type": "CHART",
        });
        if let Some(row) = &row {
            node["parents"] = json!(["ROOT_ID", "GRID_ID", row]);
        }
        map.insert(id, node);
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
        Kind::SavedQuery => &SAVED_QUERY,
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
        Kind::SavedQuery => {
            for id in ids {
                ex.saved_query(*id).await?;
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
            for id in all(&SAVED_QUERY).await? {
                ex.saved_query(id).await?;
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

/// What the importing user may do: the questions the REST create and update handlers ask,
/// answered by the api layer, which knows roles, grants and ownership. Importing a record
/// takes exactly what creating or editing it through the REST API takes.
pub trait ImportAccess: Send + Sync {
    /// `can_write` on the kind's view menu: create records of this kind, or replace them.
    fn may_write(&self, kind: Kind) -> bool;
    /// Whether the user may change this existing record (its owners and creator are loaded:
    /// [`cat::ownership_relations`]).
    fn may_change(&self, kind: Kind, rec: &Record) -> bool;
    /// Whether the user's data-access grants reach this database.
    fn may_access_database(&self, id: i64) -> bool;
    /// The datasets the user's data-access grants reach (a chart may only be put on one).
    fn dataset_scope(&self) -> Pred;
}

/// Every right (Superset's `ignore_permissions=True`): the examples the server writes
/// itself and `liteset load-examples`.
pub struct FullAccess;

impl ImportAccess for FullAccess {
    fn may_write(&self, _: Kind) -> bool {
        true
    }
    fn may_change(&self, _: Kind, _: &Record) -> bool {
        true
    }
    fn may_access_database(&self, _: i64) -> bool {
        true
    }
    fn dataset_scope(&self) -> Pred {
        Pred::all()
    }
}

fn text(doc: &Json, key: &str) -> Value {
    match doc.get(key) {
        Some(Json::String(s)) => Value::Text(s.clone()),
        _ => Value::Null,
    }
}

fn int(doc: &Json, key: &str) -> Value {
    doc.get(key)
        .and_then(as_int)
        .map_or(Value::Null, Value::Int)
}

fn flag(doc: &Json, key: &str, default: bool) -> Value {
    Value::Bool(doc.get(key).and_then(as_bool).unwrap_or(default))
}

fn uuid_of(doc: &Json, key: &str) -> String {
    // Field types are checked when the bundle is read; the canonical form makes `ABC…` and
    // `abc…` the same record, as Superset's UUID column does.
    doc.get(key)
        .and_then(Json::as_str)
        .and_then(|u| uuid::Uuid::parse_str(u).ok())
        .map(|u| u.to_string())
        .unwrap_or_default()
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
    /// The write phase's transaction. `None` in the dry run, which validates and resolves
    /// every file without writing (new records get placeholder ids).
    tx: Option<&'a Tx>,
    sealer: &'a Sealer,
    guard: &'a ConnectionGuard,
    access: &'a dyn ImportAccess,
    top: Kind,
    opts: &'a ImportOptions,
    problems: Map<String, Json>,
    /// Databases this import creates (ids or placeholders): the importer may use them.
    created_databases: BTreeSet<i64>,
    /// uuid → id of every record imported or reused so far.
    ids: BTreeMap<String, i64>,
    /// The last placeholder id handed out (negative, never a real id).
    placeholder: i64,
}

impl<'a> Importer<'a> {
    // Reads go through the write phase's transaction, so they see the records it wrote.

    async fn find_id(
        &self,
        model: &'static model::Model,
        field: &str,
        v: Value,
    ) -> store::Result<Option<i64>> {
        match self.tx {
            Some(tx) => model::find_id_in(tx, model, field, v).await,
            None => model::find_id_in(self.store.db(), model, field, v).await,
        }
    }

    async fn load_one(&self, model: &'static model::Model, id: i64) -> store::Result<Record> {
        match self.tx {
            Some(tx) => model::load_one_in(tx, model, id, &[]).await,
            None => model::load_one_in(self.store.db(), model, id, &[]).await,
        }
    }

    async fn count(&self, model: &'static model::Model, pred: &Pred) -> store::Result<Vec<i64>> {
        let found = match self.tx {
            Some(tx) => model::list_ids_in(tx, model, pred, None, None).await?,
            None => model::list_ids_in(self.store.db(), model, pred, None, None).await?,
        };
        Ok(found.1)
    }

    /// The transaction to write `uuid` in; in the dry run, records the uuid with its
    /// existing or a placeholder id and returns `None`: the caller stops before writing.
    fn writer(&mut self, uuid: &str, existing: Option<i64>) -> Option<&'a Tx> {
        if self.tx.is_none() {
            self.placeholder -= 1;
            self.ids
                .insert(uuid.to_owned(), existing.unwrap_or(self.placeholder));
        }
        self.tx
    }

    /// The existing id for a uuid, and whether this file may write it.
    async fn target(
        &mut self,
        model: &'static model::Model,
        kind: Kind,
        file: &str,
        uuid: &str,
    ) -> Result<(Option<i64>, bool), AssetsError> {
        let existing = self
            .find_id(model, "uuid", Value::Text(uuid.into()))
            .await?;
        let top = self.top == kind || self.top == Kind::Assets;
        match existing {
            Some(id) if top && !self.opts.overwrite && self.top != Kind::Assets => {
                self.problems.insert(
                    file.to_owned(),
                    json!(format!(
                        "{} already exists and `overwrite=true` was not passed",
                        kind.title()
                    )),
                );
                Ok((Some(id), false))
            }
            Some(id) => Ok((Some(id), top)),
            None => Ok((None, true)),
        }
    }

    /// Superset's importer rule (`import_chart` and its siblings): an existing record that
    /// is not to be replaced, or that the user may not write, is reused as it is; replacing
    /// one needs `can_write` and the right to change it (owner or admin), creating one needs
    /// `can_write`. Returns whether to write; a refusal is recorded as the file's problem.
    async fn permitted(
        &mut self,
        model: &'static model::Model,
        kind: Kind,
        file: &str,
        existing: Option<i64>,
        write: bool,
    ) -> Result<bool, AssetsError> {
        let may_write = self.access.may_write(kind);
        let refusal = match existing {
            Some(_) if !write || !may_write => return Ok(false),
            Some(id) => {
                let rels = cat::ownership_relations(model);
                let rec = match self.tx {
                    Some(tx) => model::load_one_in(tx, model, id, &rels).await?,
                    None => model::load_one_in(self.store.db(), model, id, &rels).await?,
                };
                if self.access.may_change(kind, &rec) {
                    return Ok(true);
                }
                format!(
                    "A {} already exists and user doesn't have permissions to overwrite it",
                    kind.noun()
                )
            }
            None if may_write => return Ok(true),
            None => format!(
                "{} doesn't exist and user doesn't have permission to create {}",
                capitalized(kind.noun()),
                match kind {
                    Kind::SavedQuery => "saved queries".to_owned(),
                    k => format!("{}s", k.noun()),
                }
            ),
        };
        self.problems.insert(file.to_owned(), json!(refusal));
        Ok(false)
    }

    /// The id a file refers to by uuid (`database_uuid`, …), when the bundle or the
    /// catalog has it.
    async fn reference(
        &self,
        model: &'static model::Model,
        doc: &Json,
        key: &str,
    ) -> store::Result<Option<i64>> {
        let uuid = uuid_of(doc, key);
        if let Some(id) = self.ids.get(&uuid) {
            return Ok(Some(*id));
        }
        self.find_id(model, "uuid", Value::Text(uuid)).await
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
        if doc.get("ssh_tunnel").is_some_and(|t| !t.is_null()) {
            // Importing the connection without its tunnel would leave a database that
            // cannot be reached; say so instead.
            self.problems.insert(
                file.to_owned(),
                json!({"ssh_tunnel": ["SSH tunnels are not supported by this server: connect \
                    to the database directly and remove `ssh_tunnel` from the file."]}),
            );
            return Ok(());
        }
        let uuid = uuid_of(doc, "uuid");
        let (existing, write) = self.target(&DATABASE, Kind::Database, file, &uuid).await?;
        if let Some(id) = existing {
            self.ids.insert(uuid.clone(), id);
        }
        if !self
            .permitted(&DATABASE, Kind::Database, file, existing, write)
            .await?
        {
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
        // Superset's importer raises the guard's message as its ImportFailedError.
        if let Err(e) = self.guard.check(&uri) {
            self.problems.insert(file.to_owned(), json!(e.to_string()));
            return Ok(());
        }
        let given = self
            .opts
            .passwords
            .get(file)
            .cloned()
            .or_else(|| {
                doc.get("password")
                    .and_then(Json::as_str)
                    .map(str::to_owned)
            })
            .filter(|p| p != PASSWORD_MASK);
        if let (Some(id), Some(PASSWORD_MASK), None) = (existing, uri.password.as_deref(), &given) {
            // The mask of an existing database keeps its stored password, for the same
            // account only (see `ConnectionUri::unmask`).
            let stored = self.load_one(&DATABASE, id).await?.text("sqlalchemy_uri");
            let same = ConnectionUri::parse(&stored).is_ok_and(|s| uri.same_account(&s));
            if !same {
                self.problems.insert(
                    file.to_owned(),
                    json!({"sqlalchemy_uri": [crate::uri::UriError::MaskForOtherAccount.to_string()]}),
                );
                return Ok(());
            }
        }
        let password = match (uri.password.as_deref(), given) {
            (_, Some(p)) => Some(Some(p)),
            // The mask of an existing database keeps its stored password.
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
            Value::Bool(upload.and_then(as_bool).unwrap_or(false)),
        );
        c.set("extra", json_text(doc, "extra"));
        if let Some(other) = self
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
        let Some(tx) = self.writer(&uuid, existing) else {
            if existing.is_none() {
                self.created_databases.insert(self.placeholder);
            }
            return Ok(());
        };
        let sealed = match password {
            None => None,
            Some(None) => Some(None),
            Some(Some(p)) => Some(Some(
                self.sealer
                    .seal(p.as_bytes(), uuid.as_bytes())
                    .map_err(|e| store::Error::Task(e.to_string()))?,
            )),
        };
        match cat::save_database_in(tx, existing, &c, sealed, self.opts.user).await {
            Ok(id) => {
                if existing.is_none() {
                    self.created_databases.insert(id);
                }
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
        let uuid = uuid_of(doc, "uuid");
        let Some(db) = self.reference(&DATABASE, doc, "database_uuid").await? else {
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
        if !self
            .permitted(&DATASET, Kind::Dataset, file, existing, write)
            .await?
        {
            return Ok(());
        }
        // As `POST /dataset/`: a dataset only on a database the user may use.
        if !self.created_databases.contains(&db) && !self.access.may_access_database(db) {
            self.problems.insert(
                file.to_owned(),
                json!("Dataset's database is not accessible to the user importing it"),
            );
            return Ok(());
        }
        // One dataset per table: another uuid on the same table is a conflict, found here
        // rather than by the write (which, inside the transaction, could not go on).
        let same_table = Pred::sql(
            "t.database_id = ? AND t.table_name = ? AND COALESCE(t.schema, '') = ? \
             AND COALESCE(t.catalog, '') = ?",
            vec![
                Value::Int(db),
                text(doc, "table_name"),
                Value::Text(doc["schema"].as_str().unwrap_or_default().to_owned()),
                Value::Text(doc["catalog"].as_str().unwrap_or_default().to_owned()),
            ],
        );
        if self
            .count(&DATASET, &same_table)
            .await?
            .iter()
            .any(|id| Some(*id) != existing)
        {
            self.problems.insert(
                file.to_owned(),
                json!({"table_name": [format!(
                    "Dataset {} already exists",
                    doc["table_name"].as_str().unwrap_or_default()
                )]}),
            );
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
            "fetch_values_predicate",
        ] {
            c.set(k, text(doc, k));
        }
        c.set("template_params", json_text(doc, "template_params"));
        c.set("offset", doc.get("offset").and_then(as_int).unwrap_or(0));
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
        let value = |c: &ChildWrite, name: &str| {
            c.values
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or(Value::Null)
        };
        let mut child_problems = Map::new();
        let mut seen = BTreeSet::new();
        for (i, col) in columns.iter().enumerate() {
            match value(col, "column_name") {
                Value::Null => {
                    child_problems.insert(
                        format!("columns.{i}.column_name"),
                        json!(["Missing data for required field."]),
                    );
                }
                Value::Text(name) if !seen.insert(name.clone()) => {
                    child_problems.insert(
                        format!("columns.{i}.column_name"),
                        json!(["Duplicate column name."]),
                    );
                }
                _ => {}
            }
        }
        let mut seen = BTreeSet::new();
        for (i, m) in metrics.iter().enumerate() {
            for key in ["metric_name", "expression"] {
                if value(m, key) == Value::Null {
                    child_problems.insert(
                        format!("metrics.{i}.{key}"),
                        json!(["Missing data for required field."]),
                    );
                }
            }
            if let Value::Text(name) = value(m, "metric_name")
                && !seen.insert(name)
            {
                child_problems.insert(
                    format!("metrics.{i}.metric_name"),
                    json!(["Duplicate metric name."]),
                );
            }
        }
        if !child_problems.is_empty() {
            self.problems
                .insert(file.to_owned(), Json::Object(child_problems));
            return Ok(());
        }
        let Some(tx) = self.writer(&uuid, existing) else {
            return Ok(());
        };
        match cat::save_dataset_in(
            tx,
            existing,
            &c,
            Some(&columns),
            Some(&metrics),
            self.opts.user,
        )
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
        let uuid = uuid_of(doc, "uuid");
        let Some(ds) = self.reference(&DATASET, doc, "dataset_uuid").await? else {
            self.problems.insert(
                file.to_owned(),
                json!({"dataset_uuid": ["Dataset does not exist"]}),
            );
            return Ok(());
        };

        if let Some(qc) = doc.get("query_context").and_then(Json::as_str)
            && !qc.trim().is_empty()
            && serde_json::from_str::<Json>(qc).is_err()
        {
            self.problems.insert(
                file.to_owned(),
                json!({"query_context": ["Not a valid JSON string."]}),
            );
            return Ok(());
        }
        let (existing, write) = self.target(&CHART, Kind::Chart, file, &uuid).await?;
        if let Some(id) = existing {
            self.ids.insert(uuid.clone(), id);
        }
        if !self
            .permitted(&CHART, Kind::Chart, file, existing, write)
            .await?
        {
            return Ok(());
        }
        // As `POST /chart/` and `PUT /chart/<pk>` ask: a chart is only written onto a dataset
        // the importer may read. One this import creates was checked with its database.
        let scope = self.access.dataset_scope();
        let reach = match self.tx {
            Some(tx) => model::reach_in(tx, &DATASET, ds, &scope).await?,
            None => self.store.reach(&DATASET, ds, &scope).await?,
        };
        if ds > 0 && reach == Some(false) {
            self.problems.insert(
                file.to_owned(),
                json!({"dataset_uuid": ["The chart's dataset is not accessible to you"]}),
            );
            return Ok(());
        }
        let Some(tx) = self.writer(&uuid, existing) else {
            return Ok(());
        };
        let dataset = self.load_one(&DATASET, ds).await?;
        let datasource = format!("{ds}__table");
        let mut params = match doc.get("params") {
            Some(Json::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| json!({})),
            Some(p @ Json::Object(_)) => p.clone(),
            _ => json!({}),
        };
        params["datasource"] = json!(datasource);
        // The saved query context names the exporting server's dataset id; it is pointed at
        // this server's (Superset drops it instead, and its charts then cannot answer
        // `GET /chart/<id>/data/` until saved again).
        let query_context = match doc.get("query_context").and_then(Json::as_str) {
            Some(qc) if !qc.trim().is_empty() => match serde_json::from_str::<Json>(qc) {
                Ok(Json::Object(mut o)) => {
                    o.insert("datasource".into(), json!({"id": ds, "type": "table"}));
                    if let Some(fd) = o.get_mut("form_data").and_then(Json::as_object_mut) {
                        fd.insert("datasource".into(), json!(datasource));
                    }
                    Value::Text(Json::Object(o).to_string())
                }
                _ => Value::Text(qc.to_owned()),
            },
            _ => Value::Null,
        };
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
        c.set("query_context", query_context);
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
        let id = cat::save_in(tx, &CHART, existing, &c, self.opts.user).await?;
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
        let uuid = uuid_of(doc, "uuid");
        let (existing, write) = self
            .target(&DASHBOARD, Kind::Dashboard, file, &uuid)
            .await?;
        if !self
            .permitted(&DASHBOARD, Kind::Dashboard, file, existing, write)
            .await?
        {
            return Ok(());
        }
        let mut position = doc.get("position").cloned().unwrap_or(Json::Null);
        if !position.is_object() {
            position = default_position(doc["dashboard_title"].as_str().unwrap_or_default());
        }
        let mut metadata = doc.get("metadata").cloned().unwrap_or_else(|| json!({}));
        let charts = remap_dashboard(&mut position, &mut metadata, &self.ids);
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
        let Some(tx) = self.writer(&uuid, existing) else {
            return Ok(());
        };
        let id = cat::save_in(tx, &DASHBOARD, existing, &c, self.opts.user).await?;
        self.ids.insert(uuid, id);
        Ok(())
    }

    async fn saved_query(&mut self, file: &str, doc: &Json) -> Result<(), AssetsError> {
        let mut problems = Map::new();
        let Some(doc) = required(doc, &["uuid", "database_uuid"], &mut problems) else {
            self.problems
                .insert(file.to_owned(), Json::Object(problems));
            return Ok(());
        };
        let uuid = uuid_of(doc, "uuid");
        let Some(db) = self.reference(&DATABASE, doc, "database_uuid").await? else {
            self.problems.insert(
                file.to_owned(),
                json!({"database_uuid": ["Database does not exist"]}),
            );
            return Ok(());
        };
        let (existing, write) = self
            .target(&SAVED_QUERY, Kind::SavedQuery, file, &uuid)
            .await?;
        if !self
            .permitted(&SAVED_QUERY, Kind::SavedQuery, file, existing, write)
            .await?
        {
            return Ok(());
        }
        let mut c = Changes::default();
        c.set("uuid", uuid.clone());
        c.set("database", db);
        for k in ["catalog", "schema", "label", "description", "sql"] {
            c.set(k, text(doc, k));
        }
        if existing.is_none() {
            c.set("user", Value::from(self.opts.user));
        }
        let Some(tx) = self.writer(&uuid, existing) else {
            return Ok(());
        };
        let id = cat::save_in(tx, &SAVED_QUERY, existing, &c, self.opts.user).await?;
        self.ids.insert(uuid, id);
        Ok(())
    }

    /// Every file, dependencies first. The write phase stops at its first problem: the
    /// transaction is then rolled back, and on PostgreSQL could not go on anyway.
    async fn run(&mut self, files: &Files) -> Result<(), AssetsError> {
        for kind in [
            Kind::Database,
            Kind::Dataset,
            Kind::Chart,
            Kind::Dashboard,
            Kind::SavedQuery,
        ] {
            for (path, doc) in files.iter().filter(|(p, _)| p.starts_with(kind.folder())) {
                match kind {
                    Kind::Database => self.database(path, doc).await?,
                    Kind::Dataset => self.dataset(path, doc).await?,
                    Kind::Chart => self.chart(path, doc).await?,
                    Kind::Dashboard => self.dashboard(path, doc).await?,
                    _ => self.saved_query(path, doc).await?,
                }
                if self.tx.is_some() && !self.problems.is_empty() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// Superset's `update_id_refs`: the position's charts are resolved by uuid to this server's
/// ids, and every chart id in the metadata (filter scopes, cross-filter configuration,
/// native filters) is mapped from the exporting server's id to the new one; ids of charts
/// the bundle does not hold are dropped. Native filter targets get their `datasetId` back
/// from `datasetUuid`. Returns the charts the dashboard links to.
fn remap_dashboard(
    position: &mut Json,
    metadata: &mut Json,
    ids: &BTreeMap<String, i64>,
) -> Vec<i64> {
    let mut id_map: BTreeMap<i64, i64> = BTreeMap::new();
    let mut charts = Vec::new();
    if let Some(map) = position.as_object_mut() {
        for node in map.values_mut() {
            if node["type"] != "CHART" {
                continue;
            }
            let Some(new) = node["meta"]["uuid"]
                .as_str()
                .and_then(|u| uuid::Uuid::parse_str(u).ok())
                .and_then(|u| ids.get(&u.to_string()))
                .copied()
            else {
                continue;
            };
            if let Some(old) = node["meta"]["chartId"].as_i64() {
                id_map.insert(old, new);
            }
            node["meta"]["chartId"] = json!(new);
            if !charts.contains(&new) {
                charts.push(new);
            }
        }
    }
    let by_uuid = |s: &str| {
        uuid::Uuid::parse_str(s)
            .ok()
            .and_then(|u| ids.get(&u.to_string()).copied())
    };
    // Old chart ids (or, in example-style exports, chart uuids) to new ids; unknown ones go.
    let remap_list = |list: &mut Json| {
        if let Some(items) = list.as_array() {
            let mapped: Vec<Json> = items
                .iter()
                .filter_map(|v| match v {
                    Json::Number(n) => n.as_i64().and_then(|o| id_map.get(&o)).map(|n| json!(n)),
                    Json::String(s) => by_uuid(s).map(|n| json!(n)),
                    _ => None,
                })
                .collect();
            *list = Json::Array(mapped);
        }
    };
    let remap_key = |k: &str| k.parse::<i64>().ok().and_then(|o| id_map.get(&o)).copied();
    let Some(meta) = metadata.as_object_mut() else {
        return charts;
    };
    if let Some(list) = meta.get_mut("timed_refresh_immune_slices") {
        remap_list(list);
    }
    if let Some(Json::Object(scopes)) = meta.get_mut("filter_scopes") {
        let old = std::mem::take(scopes);
        for (k, mut columns) in old {
            if let Some(new) = remap_key(&k) {
                if let Some(cols) = columns.as_object_mut() {
                    for attrs in cols.values_mut() {
                        if let Some(immune) = attrs.get_mut("immune") {
                            remap_list(immune);
                        }
                    }
                }
                scopes.insert(new.to_string(), columns);
            }
        }
    }
    if let Some(Json::Object(expanded)) = meta.get_mut("expanded_slices") {
        let old = std::mem::take(expanded);
        for (k, v) in old {
            if let Some(new) = remap_key(&k) {
                expanded.insert(new.to_string(), v);
            }
        }
    }
    if let Some(Json::String(text)) = meta.get_mut("default_filters")
        && let Ok(Json::Object(old)) = serde_json::from_str::<Json>(text)
    {
        let fixed: Map<String, Json> = old
            .into_iter()
            .filter_map(|(k, v)| remap_key(&k).map(|n| (n.to_string(), v)))
            .collect();
        *text = Json::Object(fixed).to_string();
    }
    let scope_of = |cfg: &mut Json| {
        if let Some(excluded) = cfg.get_mut("scope").and_then(|s| s.get_mut("excluded")) {
            remap_list(excluded);
        }
        if let Some(list) = cfg.get_mut("chartsInScope") {
            remap_list(list);
        }
    };
    if let Some(filters) = meta
        .get_mut("native_filter_configuration")
        .and_then(Json::as_array_mut)
    {
        for f in filters {
            if let Some(targets) = f.get_mut("targets").and_then(Json::as_array_mut) {
                for t in targets.iter_mut().filter_map(Json::as_object_mut) {
                    if let Some(Json::String(u)) = t.remove("datasetUuid") {
                        match by_uuid(&u) {
                            Some(id) => {
                                t.insert("datasetId".into(), json!(id));
                            }
                            None => {
                                t.remove("datasetId");
                            }
                        }
                    }
                }
            }
            scope_of(f);
        }
    }
    if let Some(global) = meta.get_mut("global_chart_configuration") {
        scope_of(global);
    }
    if let Some(Json::Object(configs)) = meta.get_mut("chart_configuration") {
        let old = std::mem::take(configs);
        for (k, mut cfg) in old {
            let new = remap_key(&k).or_else(|| by_uuid(&k));
            let Some(new) = new else {
                // Superset keeps entries it cannot place only when they are not ids.
                if k.parse::<i64>().is_err() {
                    configs.insert(k, cfg);
                }
                continue;
            };
            if let Some(o) = cfg.as_object_mut() {
                o.insert("id".into(), json!(new));
                if let Some(cross) = o.get_mut("crossFilters") {
                    scope_of(cross);
                }
            }
            configs.insert(new.to_string(), cfg);
        }
    }
    charts
}

/// Imports a bundle whose top-level kind is `top` (for `Kind::Assets`, everything is
/// top-level and replaced). Records are matched by uuid. A dry run first validates and
/// resolves every file, so a refused bundle is answered with all its problems at once; the
/// writes then run in one store transaction, so a failure midway (a store error, a conflict
/// with a concurrent write) leaves nothing behind either.
///
/// `access` answers what the importing user may create, replace and use (refusals are
/// problems of the files, so a refused bundle writes nothing), and `guard` refuses unsafe
/// database connections as the REST API does.
pub async fn import(
    store: &Store,
    sealer: &Sealer,
    guard: &ConnectionGuard,
    access: &dyn ImportAccess,
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
    let invalid = |problems| AssetsError::Invalid {
        model: top.model(),
        problems,
    };
    let mut dry = Importer {
        store,
        tx: None,
        sealer,
        guard,
        access,
        top,
        opts,
        problems: Map::new(),
        created_databases: BTreeSet::new(),
        ids: BTreeMap::new(),
        placeholder: 0,
    };
    dry.run(files).await?;
    if !dry.problems.is_empty() {
        return Err(invalid(dry.problems));
    }
    let tx = store.begin().await?;
    let mut write = Importer {
        store,
        tx: Some(&tx),
        sealer,
        guard,
        access,
        top,
        opts,
        problems: Map::new(),
        created_databases: BTreeSet::new(),
        ids: BTreeMap::new(),
        placeholder: 0,
    };
    write.run(files).await?;
    if !write.problems.is_empty() {
        // Dropping the transaction rolls back what this phase wrote.
        return Err(invalid(write.problems));
    }
    tx.commit().await?;
    Ok(())
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
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
    fn dashboard_ids_are_remapped_by_uuid() {
        let a = "6129893b-3201-459d-94ff-798229433b5e";
        let b = "10350968-fb2d-402b-b171-88aadb2ee4c7";
        let ds = "50ba8b78-a2e0-4731-a426-65974f2b8e49";
        let ids: BTreeMap<String, i64> =
            [(a.to_owned(), 7), (b.to_owned(), 8), (ds.to_owned(), 3)].into();
        let mut position = json!({
            "CHART-a": {"type": "CHART", "meta": {"chartId": 46, "uuid": a}},
            "CHART-b": {"type": "CHART", "meta": {"chartId": 48, "uuid": b.to_uppercase()}},
            "CHART-x": {"type": "CHART", "meta": {"chartId": 99, "uuid": "00000000-0000-0000-0000-000000000001"}},
        });
        let mut metadata = json!({
            "timed_refresh_immune_slices": [46, 99],
            "expanded_slices": {"48": true},
            "filter_scopes": {"46": {"region": {"scope": ["ROOT_ID"], "immune": [48, 99]}}},
            "default_filters": "{\"46\": {\"region\": [\"north\"]}}",
            "native_filter_configuration": [{
                "targets": [{"datasetUuid": ds, "column": {"name": "region"}}],
                "scope": {"rootPath": ["ROOT_ID"], "excluded": [48]},
                "chartsInScope": [46, 99],
            }],
            "global_chart_configuration": {"scope": {"excluded": [46]}, "chartsInScope": [48]},
            "chart_configuration": {"46": {"id": 46, "crossFilters": {"chartsInScope": [48]}}, "99": {}},
        });
        let charts = remap_dashboard(&mut position, &mut metadata, &ids);
        assert_eq!(charts, vec![7, 8]);
        assert_eq!(position["CHART-a"]["meta"]["chartId"], 7);
        assert_eq!(
            position["CHART-x"]["meta"]["chartId"], 99,
            "unknown uuids stay"
        );
        assert_eq!(
            metadata,
            json!({
                "timed_refresh_immune_slices": [7],
                "expanded_slices": {"8": true},
                "filter_scopes": {"7": {"region": {"scope": ["ROOT_ID"], "immune": [8]}}},
                "default_filters": "{\"7\":{\"region\":[\"north\"]}}",
                "native_filter_configuration": [{
                    "targets": [{"column": {"name": "region"}, "datasetId": 3}],
                    "scope": {"rootPath": ["ROOT_ID"], "excluded": [8]},
                    "chartsInScope": [7],
                }],
                "global_chart_configuration": {"scope": {"excluded": [7]}, "chartsInScope": [8]},
                "chart_configuration": {"7": {"id": 7, "crossFilters": {"chartsInScope": [8]}}},
            })
        );
    }
}
