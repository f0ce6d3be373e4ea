//! Small endpoints the single-page app calls while loading: the webserver domains
//! (`AvailableDomainsRestApi`), language packs (`/superset/language_pack/<lang>/`), and
//! Superset features Liteset does not have (alerts & reports, tags, CSS templates,
//! annotation layers, themes), answered as empty lists in Superset's list shape so the pages
//! that list them render instead of failing.

use std::collections::BTreeMap;
use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use serde_json::json;

use super::Tags;
use super::error::{ApiError, Fault};
use super::extract::Auth;
use super::listquery;
use super::resource;
use super::wire::{Nullable, Obj, Reply, ResultOf};
use crate::query::timerange::{self, Relative};
use crate::state::AppState;

/// The app's small endpoints.
pub struct SpaApi {
    pub(super) state: Arc<AppState>,
}

/// Superset's `empty_language_pack.json`: English needs no translations.
/// A Jed language pack, as the web app's translation layer loads it.
#[derive(poem_openapi::Object)]
struct LanguagePack {
    /// The gettext domain (`superset`).
    domain: String,
    /// The translations by domain, with a header entry under `""`.
    locale_data: poem_openapi::types::Any<serde_json::Value>,
}

fn english_pack() -> serde_json::Value {
    json!({
        "domain": "superset",
        "locale_data": {
            "superset": {
                "": {
                    "domain": "superset",
                    "plural_forms": "nplurals=2; plural=(n != 1)",
                    "lang": "en"
                }
            }
        }
    })
}

/// Superset's accepted language codes: `en`, `pt_BR`, ….
fn valid_lang(lang: &str) -> bool {
    let (base, region) = match lang.split_once('_') {
        Some((b, r)) => (b, Some(r)),
        None => (lang, None),
    };
    (2..=3).contains(&base.len())
        && base.chars().all(|c| c.is_ascii_lowercase())
        && region.is_none_or(|r| r.len() == 2 && r.chars().all(|c| c.is_ascii_uppercase()))
}

/// `{"count": 0, "ids": [], "result": []}` plus the columns FAB echoes, for a feature Liteset
/// does not have; the caller still needs the feature's read permission, as in Superset.
async fn empty_list(
    state: &AppState,
    auth: &Auth,
    view: &str,
    q: Option<&str>,
) -> Result<Json<EmptyList>, ApiError> {
    resource::authorized(state, auth, "can_read", view).await?;
    resource::list_query(q)?;
    Ok(Json(EmptyList {
        count: 0,
        ids: vec![],
        result: vec![],
        label_columns: BTreeMap::new(),
        list_columns: vec![],
        list_title: String::new(),
        order_columns: vec![],
        description_columns: BTreeMap::new(),
    }))
}

/// The list envelope of a resource Liteset does not have: always empty.
#[derive(Object)]
pub struct EmptyList {
    /// 0.
    pub count: i64,
    /// None.
    pub ids: Vec<i64>,
    /// None.
    pub result: Vec<poem_openapi::types::Any<serde_json::Value>>,
    /// None.
    pub label_columns: BTreeMap<String, String>,
    /// None.
    pub list_columns: Vec<String>,
    /// Empty.
    pub list_title: String,
    /// None.
    pub order_columns: Vec<String>,
    /// None.
    pub description_columns: BTreeMap<String, String>,
}

/// `{"domains": null}`.
#[derive(Object)]
pub struct Domains {
    /// Extra domains charts may be fetched from (none).
    pub domains: Nullable<Vec<String>>,
}

/// One resolved time range.
#[derive(Object)]
pub struct TimeRangeWire {
    /// The start, ISO, `""` when open.
    pub since: String,
    /// The end, ISO, `""` when open.
    pub until: String,
    /// The range as asked.
    #[oai(rename = "timeRange")]
    pub time_range: String,
    /// The shift as asked.
    pub shift: Nullable<String>,
}

/// The `q` of `/time_range/`, checked against Superset's schema (a string, or a list of
/// `{timeRange, shift}` objects): the (range, shift) pairs to resolve.
fn time_range_query(q: Option<&str>) -> Result<Vec<(String, Option<String>)>, ApiError> {
    let value = listquery::decode_q(q).map_err(|e| ApiError::bad_request(e.message()))?;
    let schema = |v: &serde_json::Value, ty: &str| {
        ApiError::bad_request(format!(
            "Not a valid rison schema {} is not of type {ty}",
            liteset_pyrepr::json(v)
        ))
    };
    let items = match &value {
        serde_json::Value::String(s) => return Ok(vec![(s.clone(), None)]),
        serde_json::Value::Array(items) => items,
        other => return Err(schema(other, "'string', 'array'")),
    };
    let mut out = Vec::new();
    for item in items {
        let serde_json::Value::Object(map) = item else {
            return Err(schema(item, "'object'"));
        };
        for key in ["timeRange", "shift"] {
            if let Some(v) = map.get(key).filter(|v| !v.is_string()) {
                return Err(schema(v, "'string'"));
            }
        }
        let range = map
            .get("timeRange")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| ApiError::bad_request("Unexpected time range: 'timeRange'"))?;
        let shift = map.get("shift").and_then(|v| v.as_str()).map(str::to_owned);
        out.push((range.to_owned(), shift));
    }
    Ok(out)
}

#[OpenApi(tag = "Tags::Web")]
impl SpaApi {
    /// The domains charts may be fetched from in parallel (none configured).
    #[oai(
        path = "/api/v1/available_domains",
        method = "get",
        operation_id = "available_domains_get"
    )]
    async fn available_domains(&self, auth: Auth) -> Result<Json<ResultOf<Domains>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_read", "AvailableDomains").await?;
        Ok(ResultOf::json(Domains {
            domains: Nullable(None),
        }))
    }

    /// A language pack; Liteset ships English, whose pack is empty.
    #[oai(
        path = "/superset/language_pack/:lang",
        method = "get",
        operation_id = "language_pack"
    )]
    async fn language_pack(
        &self,
        auth: Auth,
        lang: Path<String>,
    ) -> Result<Reply<Obj<LanguagePack>>, ApiError> {
        self.state
            .auth
            .authorize(&auth.principal, "can_language_pack", "Superset")
            .await?;
        if !valid_lang(&lang.0) {
            return Err(ApiError::bad_request("Invalid language code"));
        }
        if lang.0 != "en" {
            return Err(ApiError::message(
                Fault::NotFound,
                "Language pack doesn't exist on the server",
            ));
        }
        Ok(Reply::new(english_pack()))
    }

    /// Resolves time ranges as chart queries would: `?q='Last week'` or
    /// `?q=!((timeRange:'Last week',shift:'1 year ago'))`. Bounds are ISO datetimes, `""`
    /// when open.
    #[oai(
        path = "/api/v1/time_range",
        method = "get",
        operation_id = "time_range"
    )]
    async fn time_range(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<ResultOf<Vec<TimeRangeWire>>>, ApiError> {
        self.state
            .auth
            .authorize(&auth.principal, "can_time_range", "Api")
            .await?;
        let ranges = time_range_query(q.0.as_deref())?;
        let now = chrono::Utc::now().naive_utc();
        let mut result = Vec::new();
        for (range, shift) in ranges {
            let r = timerange::get_since_until(
                Some(&range),
                shift.as_deref(),
                Relative::Today,
                Relative::Today,
                now,
            )
            .map_err(|e| ApiError::bad_request(format!("Unexpected time range: {e}")))?;
            let bound = |t: Option<chrono::NaiveDateTime>| t.map(resource::iso).unwrap_or_default();
            result.push(TimeRangeWire {
                since: bound(r.since),
                until: bound(r.until),
                time_range: range,
                shift: shift.into(),
            });
        }
        Ok(ResultOf::json(result))
    }

    /// Alerts & reports (not supported): always empty.
    #[oai(path = "/api/v1/report", method = "get", operation_id = "report_list")]
    async fn reports(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<EmptyList>, ApiError> {
        empty_list(&self.state, &auth, "ReportSchedule", q.0.as_deref()).await
    }

    /// Tags (not supported): always empty.
    #[oai(path = "/api/v1/tag", method = "get", operation_id = "tag_list")]
    async fn tags(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<EmptyList>, ApiError> {
        empty_list(&self.state, &auth, "Tag", q.0.as_deref()).await
    }

    /// CSS templates (not supported): always empty.
    #[oai(
        path = "/api/v1/css_template",
        method = "get",
        operation_id = "css_template_list"
    )]
    async fn css_templates(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<EmptyList>, ApiError> {
        empty_list(&self.state, &auth, "CssTemplate", q.0.as_deref()).await
    }

    /// Annotation layers (not supported): always empty.
    #[oai(
        path = "/api/v1/annotation_layer",
        method = "get",
        operation_id = "annotation_layer_list"
    )]
    async fn annotation_layers(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<EmptyList>, ApiError> {
        empty_list(&self.state, &auth, "Annotation", q.0.as_deref()).await
    }

    /// Themes (not supported): always empty.
    #[oai(path = "/api/v1/theme", method = "get", operation_id = "theme_list")]
    async fn themes(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<EmptyList>, ApiError> {
        empty_list(&self.state, &auth, "Theme", q.0.as_deref()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_follow_superset() {
        for ok in ["en", "pt_BR", "zh_TW", "fil"] {
            assert!(valid_lang(ok), "{ok}");
        }
        for bad in ["", "EN", "en_us", "../x", "en_BRA", "e"] {
            assert!(!valid_lang(bad), "{bad}");
        }
    }
}
