//! A dataset as the wire shows it: `GET /dataset/<pk>`'s record ([`show_json`]) and
//! Superset's `dataset.data` ([`dataset_data`]), the datasource payload explore
//! (`GET /explore/`), `/dashboard/<id>/datasets` and a dataset's creation answer with. Shared
//! by `dataset.rs`, `explore.rs` and `dashboard.rs`; declares no endpoints.

use serde_json::{Map, Value as Json_, json};

use super::error::ApiError;
use super::resource::{self, common_computed, value_json};
use crate::state::AppState;
use crate::store::catalog::DATASET;
use crate::store::model::Record;

/// Whether the dataset is virtual (defined by SQL) rather than physical (a table).
pub fn is_virtual(rec: &Record) -> bool {
    rec.get::<String>("sql")
        .is_some_and(|s| !s.trim().is_empty())
}

/// A dataset's columns that are not stored fields, as its list and show render them.
pub fn computed(rec: &Record, col: &str) -> Option<Json_> {
    Some(match col {
        "kind" => json!(if is_virtual(rec) {
            "virtual"
        } else {
            "physical"
        }),
        "datasource_type" => json!("table"),
        "explore_url" => json!(format!(
            "/explore/?datasource_type=table&datasource_id={}",
            rec.id
        )),
        "url" => json!(format!("/tablemodelview/edit/{}", rec.id)),
        "uid" => json!(format!("{}__table", rec.id)),
        "datasource_name" => json!(rec.text("table_name")),
        "name" => json!(full_name(rec)),
        _ => return common_computed(rec, col),
    })
}

/// `schema.table`, or the table alone without a schema.
fn full_name(rec: &Record) -> String {
    match rec.get::<String>("schema").filter(|s| !s.is_empty()) {
        Some(s) => format!("{s}.{}", rec.text("table_name")),
        None => rec.text("table_name"),
    }
}

/// Superset's `GenericDataType` of a column type, and whether it is temporal.
fn type_generic(ty: &str) -> i64 {
    crate::engines::generic_type(ty).map_or(1, |g| i64::from(g.code()))
}

/// A column of a dataset's show.
fn column_json(c: &Record) -> Json_ {
    json!({
        "id": c.id,
        "uuid": c.text("uuid"),
        "column_name": c.text("column_name"),
        "verbose_name": c.get::<String>("verbose_name"),
        "description": c.get::<String>("description"),
        "expression": c.get::<String>("expression"),
        "filterable": c.flag("filterable"),
        "groupby": c.flag("groupby"),
        "is_active": c.flag("is_active"),
        "is_dttm": c.flag("is_dttm"),
        "python_date_format": c.get::<String>("python_date_format"),
        "type": c.get::<String>("type"),
        "type_generic": type_generic(&c.text("type")),
        "advanced_data_type": c.get::<String>("advanced_data_type"),
        "extra": c.get::<String>("extra"),
        "certified_by": Json_::Null,
        "certification_details": Json_::Null,
        "is_certified": false,
        "warning_markdown": Json_::Null,
        "changed_on": c.get::<chrono::NaiveDateTime>("changed_on").map(resource::iso),
        "created_on": c.get::<chrono::NaiveDateTime>("created_on").map(resource::iso),
    })
}

/// A metric of a dataset's show.
fn metric_json(m: &Record) -> Json_ {
    json!({
        "id": m.id,
        "uuid": m.text("uuid"),
        "metric_name": m.text("metric_name"),
        "verbose_name": m.get::<String>("verbose_name"),
        "metric_type": m.get::<String>("metric_type"),
        "expression": m.text("expression"),
        "description": m.get::<String>("description"),
        "d3format": m.get::<String>("d3format"),
        "currency": m.get::<String>("currency").and_then(|c| serde_json::from_str::<Json_>(&c).ok()),
        "extra": m.get::<String>("extra"),
        "warning_text": m.get::<String>("warning_text"),
        "certified_by": Json_::Null,
        "certification_details": Json_::Null,
        "is_certified": false,
        "warning_markdown": Json_::Null,
        "changed_on": m.get::<chrono::NaiveDateTime>("changed_on").map(resource::iso),
        "created_on": m.get::<chrono::NaiveDateTime>("created_on").map(resource::iso),
    })
}

/// The database of a dataset's show.
fn database_json(db: Option<&Record>) -> Json_ {
    db.map_or(Json_::Null, |d| {
        let backend = crate::uri::ConnectionUri::parse(&d.text("sqlalchemy_uri"))
            .map_or("", |u| u.engine.backend());
        json!({
            "id": d.id,
            "database_name": d.text("database_name"),
            "uuid": d.text("uuid"),
            "backend": backend,
            "allow_multi_catalog": false,
            "allows_subquery": true,
            "allows_cost_estimate": false,
            "allows_virtual_table_explore": true,
            "disable_data_preview": false,
            "disable_drill_to_detail": false,
            "explore_database_id": d.id,
            "name": d.text("database_name"),
        })
    })
}

/// People (owners) as a dataset's show names them.
fn users_json(users: &[Record]) -> Json_ {
    json!(users.iter().map(|u| json!({"id": u.id, "first_name": u.text("first_name"), "last_name": u.text("last_name")})).collect::<Vec<_>>())
}

/// The show payload of a dataset (`GET /dataset/<pk>`).
pub async fn show_json(state: &AppState, id: i64) -> Result<Json_, ApiError> {
    let rec = state
        .store
        .load_one(
            &DATASET,
            id,
            &["database", "owners", "created_by", "changed_by"],
        )
        .await?;
    let (columns, metrics) = state.store.dataset_children(id).await?;
    let mut out = Map::new();
    for (name, v) in &rec.values {
        out.insert((*name).to_owned(), value_json(v));
    }
    out.remove("perm");
    out.remove("catalog_perm");
    out.insert("id".into(), json!(id));
    for c in [
        "kind",
        "datasource_type",
        "url",
        "uid",
        "datasource_name",
        "name",
        "changed_on_delta_humanized",
        "created_on_delta_humanized",
        "changed_by_name",
    ] {
        out.insert(c.into(), computed(&rec, c).unwrap_or_default());
    }
    out.insert(
        "changed_on_humanized".into(),
        out["changed_on_delta_humanized"].clone(),
    );
    out.insert(
        "created_on_humanized".into(),
        out["created_on_delta_humanized"].clone(),
    );
    out.insert("database".into(), database_json(rec.one("database")));
    out.insert("owners".into(), users_json(rec.related("owners")));
    for rel in ["created_by", "changed_by"] {
        out.insert(
            rel.into(),
            rec.one(rel).map_or(Json_::Null, |u| json!({"id": u.id, "first_name": u.text("first_name"), "last_name": u.text("last_name")})),
        );
    }
    let engine = rec
        .one("database")
        .and_then(|d| crate::uri::ConnectionUri::parse(&d.text("sqlalchemy_uri")).ok())
        .map(|u| u.engine);
    out.insert(
        "select_star".into(),
        json!(engine.map(|e| crate::engines::select_star(
            e,
            rec.get::<String>("schema").as_deref(),
            &rec.text("table_name"),
            100
        ))),
    );
    out.insert(
        "columns".into(),
        json!(columns.iter().map(column_json).collect::<Vec<_>>()),
    );
    out.insert(
        "metrics".into(),
        json!(metrics.iter().map(metric_json).collect::<Vec<_>>()),
    );
    let dttm: Vec<Json_> = columns
        .iter()
        .filter(|c| c.flag("is_dttm"))
        .map(|c| json!([c.text("column_name"), c.text("column_name")]))
        .collect();
    out.insert("granularity_sqla".into(), json!(dttm));
    out.insert(
        "time_grain_sqla".into(),
        json!([
            ["PT1S", "Second"],
            ["PT1M", "Minute"],
            ["PT1H", "Hour"],
            ["P1D", "Day"],
            ["P1W", "Week"],
            ["P1M", "Month"],
            ["P3M", "Quarter"],
            ["P1Y", "Year"]
        ]),
    );
    let mut verbose = Map::new();
    verbose.insert("__timestamp".into(), json!("Time"));
    for c in &columns {
        verbose.insert(
            c.text("column_name"),
            json!(
                c.get::<String>("verbose_name")
                    .unwrap_or_else(|| c.text("column_name"))
            ),
        );
    }
    for m in &metrics {
        verbose.insert(
            m.text("metric_name"),
            json!(
                m.get::<String>("verbose_name")
                    .unwrap_or_else(|| m.text("metric_name"))
            ),
        );
    }
    out.insert("verbose_map".into(), Json_::Object(verbose));
    let formats: Map<String, Json_> = metrics
        .iter()
        .filter_map(|m| {
            m.get::<String>("d3format")
                .map(|f| (m.text("metric_name"), json!(f)))
        })
        .collect();
    out.insert("column_formats".into(), Json_::Object(formats));
    let mut order_by = Vec::new();
    for c in &columns {
        let n = c.text("column_name");
        order_by.push(json!([json!([n, true]).to_string(), format!("{n} [asc]")]));
        order_by.push(json!([
            json!([n, false]).to_string(),
            format!("{n} [desc]")
        ]));
    }
    out.insert("order_by_choices".into(), json!(order_by));
    Ok(Json_::Object(out))
}

/// `dataset.data`, as explore and `/dashboard/<id>/datasets` return it.
pub async fn dataset_data(state: &AppState, id: i64) -> Result<Json_, ApiError> {
    let mut d = show_json(state, id).await?;
    d["type"] = json!("table");
    d["filter_select"] = d["filter_select_enabled"].clone();
    d["edit_url"] = json!(format!("/tablemodelview/edit/{id}"));
    d["params"] = Json_::Null;
    d["health_check_message"] = Json_::Null;
    d["column_names"] = json!(
        d["columns"]
            .as_array()
            .map(|c| c
                .iter()
                .map(|c| c["column_name"].clone())
                .collect::<Vec<_>>())
            .unwrap_or_default()
    );
    d["column_types"] = json!(
        d["columns"]
            .as_array()
            .map(|c| c
                .iter()
                .map(|c| c["type_generic"].clone())
                .collect::<Vec<_>>())
            .unwrap_or_default()
    );
    Ok(d)
}
