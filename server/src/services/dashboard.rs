//! Dashboards as the use cases that open one by its URL key need them.

use super::Error;
use crate::auth::CurrentUser;
use crate::state::AppState;
use serde_json::Value as Json;

use crate::store::catalog::{self, CHART, DASHBOARD};
use crate::store::model::Pred;
use crate::store::{self, Value};

/// A dashboard by id or slug (Superset's `get_by_id_or_slug`), for `user`: the store's
/// `NotFound` when no dashboard has this id or slug, [`Error::DashboardForbidden`] when the
/// user may not open it.
pub async fn resolve(state: &AppState, key: &str, user: &CurrentUser) -> Result<i64, Error> {
    let by_id = match key.parse::<i64>() {
        Ok(id) if state.store.matches(&DASHBOARD, id, &Pred::all()).await? => Some(id),
        _ => None,
    };
    let id = match by_id {
        Some(id) => id,
        None => state
            .store
            .find_id(&DASHBOARD, "slug", Value::Text(key.into()))
            .await?
            .ok_or(store::Error::NotFound)?,
    };
    // Superset's `get_by_id_or_slug` applies the list's access filter: a dashboard without
    // charts (or a draft) is its owners' (and admins') until it is published with data the
    // caller can read.
    let scope = catalog::dashboard_scope(user.grants(), user.is_admin());
    match state.store.reach(&DASHBOARD, id, &scope).await? {
        None => Err(store::Error::NotFound.into()),
        Some(false) => Err(Error::DashboardForbidden),
        Some(true) => Ok(id),
    }
}

/// Changes to a dashboard's native filters (Superset's `DashboardNativeFiltersConfigUpdateSchema`):
/// filters (or dividers) replaced or added by `id`, ids deleted, and the new order.
#[derive(Debug, Default)]
pub struct FilterChanges {
    /// Whole filter objects, each with a string `id`; an unknown id is a new filter.
    pub modified: Vec<serde_json::Map<String, Json>>,
    /// Ids to remove.
    pub deleted: Vec<String>,
    /// The complete new order, or empty to keep it. Filters not named are dropped, as in
    /// Superset.
    pub reordered: Vec<String>,
}

/// Applies `changes` to the stored `native_filter_configuration` of dashboard `id` (the
/// caller may change it) and returns the new configuration. The read and the write are one
/// transaction, so two editors saving at once do not lose each other's filters.
pub async fn update_filters(
    state: &AppState,
    user: &CurrentUser,
    id: i64,
    changes: FilterChanges,
) -> Result<Vec<Json>, Error> {
    let mut saved = None;
    let found = state
        .store
        .edit_dashboard_metadata(id, user.user.id, true, |meta| {
            let current = match meta.get("native_filter_configuration") {
                Some(Json::Array(items)) => items.clone(),
                _ => Vec::new(),
            };
            let merged = merge_filters(current, changes);
            meta.insert(
                "native_filter_configuration".into(),
                Json::Array(merged.clone()),
            );
            saved = Some(merged);
        })
        .await?;
    match (found, saved) {
        (true, Some(config)) => Ok(config),
        _ => Err(store::Error::NotFound.into()),
    }
}

/// Superset's `DashboardDAO.update_native_filters_config`: replace or drop each stored filter,
/// append the new ones, then apply the order.
fn merge_filters(current: Vec<Json>, changes: FilterChanges) -> Vec<Json> {
    let FilterChanges {
        modified,
        deleted,
        mut reordered,
    } = changes;
    let id_of = |f: &Json| f.get("id").and_then(Json::as_str).map(str::to_owned);
    let mut modified: Vec<(String, Json)> = modified
        .into_iter()
        .filter_map(|m| {
            let id = m.get("id").and_then(Json::as_str)?.to_owned();
            Some((id, Json::Object(m)))
        })
        .collect();
    let mut out: Vec<Json> = Vec::new();
    for filter in current {
        let id = id_of(&filter);
        if id.as_ref().is_some_and(|i| deleted.contains(i)) {
            continue;
        }
        match id.and_then(|i| modified.iter().position(|(m, _)| *m == i)) {
            Some(at) => out.push(modified.remove(at).1),
            None => out.push(filter),
        }
    }
    for (id, filter) in modified {
        if out.iter().any(|f| id_of(f).as_deref() == Some(id.as_str())) {
            continue;
        }
        if !reordered.is_empty() && !reordered.contains(&id) {
            reordered.push(id);
        }
        out.push(filter);
    }
    if reordered.is_empty() {
        return out;
    }
    reordered
        .iter()
        .filter_map(|id| {
            out.iter()
                .find(|f| id_of(f).as_deref() == Some(id.as_str()))
                .cloned()
        })
        .collect()
}

/// What saving a dashboard's `json_metadata` stores (Superset's `DashboardDAO.set_dash_metadata`).
#[derive(Debug)]
pub struct Metadata {
    /// The metadata to store: `positions` moved out, Superset's defaults filled in.
    pub json_metadata: String,
    /// The layout with each chart's uuid, when `positions` was sent.
    pub position_json: Option<String>,
    /// The charts the layout holds, when `positions` was sent: the dashboard's charts become
    /// exactly these.
    pub charts: Option<Vec<i64>>,
}

/// Most charts one layout may name (far beyond what the web app's 64 KiB layout limit holds).
const MAX_LAYOUT_CHARTS: usize = 1000;

/// The stored form of `json_metadata` sent with a dashboard edit (already checked to be JSON).
/// The charts a layout names are kept only if they exist and `user` may read them: linking a
/// chart never shows its definition to someone who could not read it before.
pub async fn metadata(state: &AppState, user: &CurrentUser, text: &str) -> Result<Metadata, Error> {
    let invalid =
        |msg: &str| Error::Invalid(serde_json::json!({"json_metadata": [{"positions": [msg]}]}));
    let mut md = match serde_json::from_str::<Json>(text) {
        Ok(Json::Object(m)) => m,
        _ => {
            return Ok(Metadata {
                json_metadata: text.to_owned(),
                position_json: None,
                charts: None,
            });
        }
    };
    let mut position_json = None;
    let mut charts = None;
    let mut slice_ids: Vec<i64> = Vec::new();
    match md.remove("positions") {
        None | Some(Json::Null) => {}
        Some(Json::Object(mut positions)) => {
            for entry in positions.values() {
                if let Some(id) = entry.pointer("/meta/chartId").and_then(Json::as_i64)
                    && !slice_ids.contains(&id)
                {
                    slice_ids.push(id);
                }
            }
            if slice_ids.len() > MAX_LAYOUT_CHARTS {
                return Err(invalid("A dashboard layout holds at most 1000 charts."));
            }
            let scope = Pred::And(vec![
                Pred::in_list(
                    "t.id",
                    slice_ids.iter().map(|i| Value::Int(*i)).collect(),
                    false,
                ),
                catalog::chart_scope(user.grants()),
            ]);
            let (_, readable) = state.store.list_ids(&CHART, &scope, None, None).await?;
            let records = state.store.load(&CHART, &readable, &[]).await?;
            for entry in positions.values_mut() {
                let is_chart = entry.get("type").and_then(Json::as_str) == Some("CHART");
                let id = entry.pointer("/meta/chartId").and_then(Json::as_i64);
                if let (true, Some(id), Some(meta)) = (
                    is_chart,
                    id,
                    entry.get_mut("meta").and_then(Json::as_object_mut),
                ) {
                    let uuid = records
                        .iter()
                        .find(|r| r.id == id)
                        .map(|r| Json::String(r.text("uuid")));
                    meta.insert("uuid".into(), uuid.unwrap_or(Json::Null));
                }
            }
            position_json = Some(sorted(Json::Object(positions)).to_string());
            charts = Some(readable);
        }
        Some(_) => return Err(invalid("Not a valid mapping type.")),
    }
    if charts.is_some() {
        let kept: serde_json::Map<String, Json> = md
            .get("default_filters")
            .and_then(Json::as_str)
            .and_then(|t| serde_json::from_str::<serde_json::Map<String, Json>>(t).ok())
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| k.parse::<i64>().is_ok_and(|k| slice_ids.contains(&k)))
            .collect();
        md.insert(
            "default_filters".into(),
            Json::String(Json::Object(kept).to_string()),
        );
    }
    // Legacy filter scopes survive only for filter charts the layout still holds.
    let scopes: serde_json::Map<String, Json> = match md.get("filter_scopes") {
        Some(Json::Object(s)) if charts.is_some() => s
            .iter()
            .filter(|(k, _)| k.parse::<i64>().is_ok_and(|k| slice_ids.contains(&k)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        _ => serde_json::Map::new(),
    };
    if scopes.is_empty() {
        md.remove("filter_scopes");
    } else {
        md.insert("filter_scopes".into(), Json::Object(scopes));
    }
    md.entry("timed_refresh_immune_slices")
        .or_insert_with(|| serde_json::json!([]));
    if md.get("color_namespace") == Some(&Json::Null) {
        md.remove("color_namespace");
    }
    for (key, default) in [
        ("expanded_slices", serde_json::json!({})),
        ("refresh_frequency", serde_json::json!(0)),
        ("color_scheme", serde_json::json!("")),
        ("label_colors", serde_json::json!({})),
        ("shared_label_colors", serde_json::json!([])),
        ("map_label_colors", serde_json::json!({})),
        ("color_scheme_domain", serde_json::json!([])),
        ("cross_filters_enabled", serde_json::json!(true)),
    ] {
        // Superset's `data.get(key, default)`: a key sent as null stays null.
        md.entry(key).or_insert(default);
    }
    Ok(Metadata {
        json_metadata: Json::Object(md).to_string(),
        position_json,
        charts,
    })
}

/// `value` with every object's keys sorted (Superset stores layouts with `sort_keys=True`).
fn sorted(value: Json) -> Json {
    match value {
        Json::Object(m) => {
            let mut m: serde_json::Map<String, Json> =
                m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            m.sort_keys();
            Json::Object(m)
        }
        Json::Array(items) => Json::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn changes(modified: Json, deleted: &[&str], reordered: &[&str]) -> FilterChanges {
        FilterChanges {
            modified: modified
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m.as_object().unwrap().clone())
                .collect(),
            deleted: deleted.iter().map(|s| s.to_string()).collect(),
            reordered: reordered.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn filters_are_replaced_deleted_added_and_ordered_as_superset_does() {
        let current = vec![
            json!({"id": "A", "name": "a"}),
            json!({"id": "B", "name": "b"}),
            json!({"id": "C", "name": "c"}),
        ];
        // Replace B, delete C, add D: kept in place, new at the end.
        let out = merge_filters(
            current.clone(),
            changes(
                json!([{"id": "B", "name": "b2"}, {"id": "D", "name": "d"}]),
                &["C"],
                &[],
            ),
        );
        assert_eq!(
            out,
            vec![
                json!({"id": "A", "name": "a"}),
                json!({"id": "B", "name": "b2"}),
                json!({"id": "D", "name": "d"}),
            ]
        );
        // A new order names B, A; the new D is appended to it; C is not named, so dropped.
        let out = merge_filters(
            current,
            changes(json!([{"id": "D", "name": "d"}]), &[], &["B", "A"]),
        );
        let ids: Vec<&str> = out.iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["B", "A", "D"]);
    }

    #[test]
    fn layouts_are_stored_with_sorted_keys() {
        let v = sorted(json!({"b": {"z": 1, "a": [ {"y": 2, "x": 1} ]}, "a": 0}));
        assert_eq!(v.to_string(), r#"{"a":0,"b":{"a":[{"x":1,"y":2}],"z":1}}"#);
    }
}
