//! Facts derived from a saved chart's record that both the API and the services need: the
//! form data a chart is explored and drawn with, and the digest its thumbnail is cached under.

use serde_json::{Value as Json_, json};

use crate::store::model::Record;

/// The chart's `form_data`: its params with the ids Superset adds.
pub fn form_data(rec: &Record) -> Json_ {
    let mut fd = rec
        .get::<String>("params")
        .and_then(|p| serde_json::from_str::<Json_>(&p).ok())
        .filter(Json_::is_object)
        .unwrap_or_else(|| json!({}));
    fd["slice_id"] = json!(rec.id);
    fd["viz_type"] = json!(rec.text("viz_type"));
    if let Some(ds) = rec.get::<i64>("datasource_id") {
        fd["datasource"] = json!(format!("{ds}__{}", rec.text("datasource_type")));
    }
    fd
}

/// The chart's thumbnail digest: changes whenever what the chart draws may change (its type,
/// params, saved query context or last change), so a thumbnail URL can be cached forever.
pub fn digest(rec: &Record) -> String {
    let changed = rec
        .get::<chrono::NaiveDateTime>("changed_on")
        .map(|t| t.and_utc().timestamp_micros())
        .unwrap_or_default();
    crate::render::key(&[
        &rec.id.to_le_bytes(),
        &changed.to_le_bytes(),
        rec.text("viz_type").as_bytes(),
        rec.text("params").as_bytes(),
        rec.text("query_context").as_bytes(),
    ])
}
