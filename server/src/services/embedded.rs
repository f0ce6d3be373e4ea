//! Embedded dashboards: minting guest tokens (`POST /security/guest_token/`), the page that
//! serves a dashboard inside another site (`/embedded/<uuid>`), and what a guest's chart-data
//! request may ask (Superset's `query_context_modified`, and the native-filter path of
//! `raise_for_access`).
//!
//! Who a guest is and what it reaches is decided once, in `auth` (the token) and the store
//! (`GuestReach`): every catalog scope narrows to it. What is decided here is the rest of
//! Superset's rule: a guest reads a chart's data only as the chart was saved, so a guest cannot
//! turn one chart's dataset into an open query on that dataset.

use std::collections::HashSet;

use serde_json::Value as Json_;

use super::Error;
use crate::auth::{CurrentUser, GuestResource, GuestRls, GuestUser};
use crate::state::{AppState, SavedChart};
use crate::store::catalog::{self, DASHBOARD};

/// `POST /security/guest_token/`'s body, parsed.
#[derive(Debug)]
pub struct GuestTokenRequest {
    /// Who the visitor is.
    pub user: GuestUser,
    /// The dashboards it may see.
    pub resources: Vec<GuestResource>,
    /// Row-level clauses to add.
    pub rls: Vec<GuestRls>,
}

/// Mints a guest token (Superset's `guest_token` endpoint and
/// `validate_guest_token_resources`). Each resource must name a dashboard (by id or embedded
/// uuid) that the granter itself may open: a grant never exceeds the granter's own reach.
pub async fn grant_guest_token(
    state: &AppState,
    granter: &CurrentUser,
    req: GuestTokenRequest,
) -> Result<String, Error> {
    if granter.guest.is_some() {
        return Err(crate::auth::Error::Forbidden.into());
    }
    let scope = catalog::dashboard_scope(granter.grants(), granter.is_admin());
    for r in &req.resources {
        let reachable = match state.store.dashboard_for_key(&r.id).await? {
            Some(d) => state.store.matches(&DASHBOARD, d, &scope).await?,
            None => false,
        };
        if !reachable {
            return Err(Error::EmbeddedNotFound);
        }
    }
    for (i, r) in req.rls.iter().enumerate() {
        if r.clause.trim().is_empty() {
            return Err(Error::Invalid(serde_json::json!({
                "rls": {i.to_string(): {"clause": ["Shorter than minimum length 1."]}}
            })));
        }
    }
    Ok(state
        .auth
        .issue_guest_token(req.user, req.resources, req.rls)?)
}

/// The embedded page of a dashboard: its id and the origins that may frame it.
#[derive(Debug)]
pub struct EmbeddedPage {
    /// The dashboard shown.
    pub dashboard_id: i64,
    /// Origins allowed to embed it; empty allows every origin (as Superset).
    pub allowed_domains: Vec<String>,
}

/// `/embedded/<uuid>` (Superset's `EmbeddedView`): 404 when embedding is off or the uuid
/// names nothing; 403 when the dashboard allows only some origins and the page asking
/// (its `Referer`) is none of them.
pub async fn embedded_page(
    state: &AppState,
    uuid: &str,
    referrer: Option<&str>,
) -> Result<EmbeddedPage, Error> {
    if !state.config.embedded.enabled {
        return Err(crate::store::Error::NotFound.into());
    }
    let (_, dashboard_id, domains, _) = state
        .store
        .embedded(None, Some(uuid))
        .await?
        .ok_or(crate::store::Error::NotFound)?;
    let allowed_domains: Vec<String> = serde_json::from_str(&domains).unwrap_or_default();
    if !allowed_domains.is_empty()
        && !allowed_domains
            .iter()
            .any(|d| referrer.is_some_and(|r| same_origin(r, d)))
    {
        tracing::info!(
            message = "Embedding refused: the page is not on an allowed domain.",
            uuid,
            referrer
        );
        return Err(crate::auth::Error::Forbidden.into());
    }
    Ok(EmbeddedPage {
        dashboard_id,
        allowed_domains,
    })
}

/// Flask-WTF's `same_origin`: scheme, host and port equal (default ports filled in).
pub fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            let oa = a.origin();
            oa.is_tuple() && oa == b.origin()
        }
        _ => false,
    }
}

/// Whether a guest may run this chart-data request: a saved chart's request may ask only for
/// what the chart was saved with (Superset's `query_context_modified`); a request without a
/// chart must be a native filter of a reached dashboard asking for its own column; neither may
/// ask for raw rows (`samples`, `drill_detail`), nor, without `can_view_query`, for the SQL.
pub async fn check_guest_request(
    state: &AppState,
    user: &CurrentUser,
    raw: &Json_,
    datasource_id: i64,
) -> Result<(), Error> {
    let Some(guest) = &user.guest else {
        return Ok(());
    };
    let refuse = || {
        tracing::info!(message = "Guest chart-data request refused.", datasource_id);
        Err(Error::GuestPayloadModified)
    };
    let queries: Vec<&Json_> = raw["queries"].as_array().into_iter().flatten().collect();
    let result_types = std::iter::once(&raw["result_type"])
        .chain(queries.iter().map(|q| &q["result_type"]))
        .filter_map(Json_::as_str);
    for t in result_types {
        match t {
            "samples" | "drill_detail" => return refuse(),
            "query" if !user.has("can_view_query", "Dashboard") => return refuse(),
            _ => {}
        }
    }
    let form_data = &raw["form_data"];
    match form_data.get("slice_id").and_then(Json_::as_i64) {
        Some(pk) => {
            if !guest.reach.charts.contains(&pk) {
                return refuse();
            }
            let saved = super::chart_data::saved(state, user, pk).await?;
            if saved.chart.get::<i64>("datasource_id") != Some(datasource_id)
                || modified(form_data, &queries, &saved)
            {
                return refuse();
            }
            Ok(())
        }
        None => {
            let Some(filter_id) = form_data.get("native_filter_id").and_then(Json_::as_str) else {
                return refuse();
            };
            let columns: HashSet<&str> = guest
                .reach
                .filters
                .iter()
                .filter(|(f, ds, _)| f == filter_id && *ds == datasource_id)
                .map(|(_, _, c)| c.as_str())
                .collect();
            if columns.is_empty() || !queries.iter().all(|q| filter_query(q, &columns)) {
                return refuse();
            }
            Ok(())
        }
    }
}

/// A native filter's query: its own column(s) only; metrics saved ones, or the column's
/// minimum and maximum (the range filter's).
fn filter_query(q: &Json_, columns: &HashSet<&str>) -> bool {
    let cols_ok = ["columns", "groupby"].iter().all(|k| {
        q[*k]
            .as_array()
            .into_iter()
            .flatten()
            .all(|c| c.as_str().is_some_and(|c| columns.contains(c)))
    });
    let metrics_ok = q["metrics"].as_array().into_iter().flatten().all(|m| {
        if m.is_string() {
            return true;
        }
        match m["expressionType"].as_str() {
            Some("SIMPLE") => m["column"]["column_name"]
                .as_str()
                .is_some_and(|c| columns.contains(c)),
            Some("SQL") => m["sqlExpression"].as_str().is_some_and(|e| {
                columns
                    .iter()
                    .any(|c| e == format!("MIN({c})") || e == format!("MAX({c})"))
            }),
            _ => false,
        }
    });
    let orderby_ok = q["orderby"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|o| o[0].as_str().is_some_and(|c| columns.contains(c)) || o[0].is_object());
    cols_ok && metrics_ok && orderby_ok
}

/// Superset's `freeze_value`: a value's canonical JSON (keys sorted).
fn freeze(v: &Json_) -> String {
    // serde_json's map keeps keys sorted (no `preserve_order` feature), so its text is
    // canonical.
    v.to_string()
}

fn frozen<'a>(values: impl Iterator<Item = &'a Json_>) -> HashSet<String> {
    values.map(freeze).collect()
}

fn list<'a>(v: &'a Json_, key: &str) -> impl Iterator<Item = &'a Json_> {
    v[key].as_array().into_iter().flatten()
}

/// Superset's `query_context_modified`: the request asks for another chart, or for metrics,
/// columns or orderings the saved chart (its params and saved query context) does not have.
fn modified(form_data: &Json_, queries: &[&Json_], saved: &SavedChart) -> bool {
    if form_data.get("slice_id").and_then(Json_::as_i64) != Some(saved.chart.id) {
        return true;
    }
    let params = super::chart::form_data(&saved.chart);
    for (key, equivalent) in [
        ("metrics", &["metrics"][..]),
        ("columns", &["columns", "groupby"][..]),
        ("groupby", &["columns", "groupby"][..]),
        ("orderby", &["orderby"][..]),
    ] {
        let requested = frozen(list(form_data, key));
        let mut stored = frozen(list(&params, key));
        if !requested.is_subset(&stored) {
            return true;
        }
        // The queries' own lists, including the deprecated `groupby` spelling the query
        // parser also reads as columns.
        let asked: HashSet<String> = queries
            .iter()
            .flat_map(|q| equivalent.iter().flat_map(move |k| list(q, k)))
            .map(freeze)
            .collect();
        if let Some(ctx) = &saved.context {
            for q in list(ctx, "queries") {
                for k in equivalent {
                    stored.extend(list(q, k).map(freeze));
                }
            }
        }
        if !asked.is_subset(&stored) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_as_flask_wtf_does() {
        assert!(same_origin(
            "http://localhost:9001/page",
            "http://localhost:9001"
        ));
        assert!(same_origin("https://a.example/x", "https://a.example:443/"));
        assert!(!same_origin(
            "http://localhost:9002/",
            "http://localhost:9001"
        ));
        assert!(!same_origin(
            "http://evil.example/?http://localhost:9001",
            "http://localhost:9001"
        ));
        assert!(!same_origin(
            "https://localhost:9001/",
            "http://localhost:9001"
        ));
        assert!(!same_origin("localhost:9001", "localhost:9001"));
    }
}
