//! Small endpoints the single-page app calls while loading: the webserver domains
//! (`AvailableDomainsRestApi`), language packs (`/superset/language_pack/<lang>/`), and
//! Superset features Liteset does not have (alerts & reports, tags, CSS templates,
//! annotation layers, themes), answered as empty lists in Superset's list shape so the pages
//! that list them render instead of failing.

use std::sync::Arc;

use poem::http::StatusCode;
use poem_openapi::OpenApi;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use serde_json::json;

use super::Tags;
use super::error::ApiError;
use super::extract::Auth;
use super::resource::{self, JsonValue};
use crate::app::AppState;

/// The app's small endpoints.
pub struct SpaApi {
    pub(super) state: Arc<AppState>,
}

/// Superset's `empty_language_pack.json`: English needs no translations.
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
) -> Result<JsonValue, ApiError> {
    resource::authorized(state, auth, "can_read", view).await?;
    resource::list_query(q)?;
    Ok(Json(json!({
        "count": 0,
        "ids": [],
        "result": [],
        "label_columns": {},
        "list_columns": [],
        "list_title": "",
        "order_columns": [],
        "description_columns": {},
    })))
}

#[OpenApi(tag = "Tags::Web")]
impl SpaApi {
    /// The domains charts may be fetched from in parallel (none configured).
    #[oai(
        path = "/api/v1/available_domains",
        method = "get",
        operation_id = "available_domains_get"
    )]
    async fn available_domains(&self, auth: Auth) -> Result<JsonValue, ApiError> {
        resource::authorized(&self.state, &auth, "can_read", "AvailableDomains").await?;
        Ok(Json(json!({"result": {"domains": null}})))
    }

    /// A language pack; Liteset ships English, whose pack is empty.
    #[oai(
        path = "/superset/language_pack/:lang",
        method = "get",
        operation_id = "language_pack"
    )]
    async fn language_pack(&self, auth: Auth, lang: Path<String>) -> Result<JsonValue, ApiError> {
        self.state
            .auth
            .authorize(&auth.principal, "can_language_pack", "Superset")
            .await?;
        if !valid_lang(&lang.0) {
            return Err(ApiError::bad_request("Invalid language code"));
        }
        if lang.0 != "en" {
            return Err(ApiError::message(
                StatusCode::NOT_FOUND,
                "Language pack doesn't exist on the server",
            ));
        }
        Ok(Json(english_pack()))
    }

    /// Alerts & reports (not supported): always empty.
    #[oai(path = "/api/v1/report", method = "get", operation_id = "report_list")]
    async fn reports(&self, auth: Auth, q: Query<Option<String>>) -> Result<JsonValue, ApiError> {
        empty_list(&self.state, &auth, "ReportSchedule", q.0.as_deref()).await
    }

    /// Tags (not supported): always empty.
    #[oai(path = "/api/v1/tag", method = "get", operation_id = "tag_list")]
    async fn tags(&self, auth: Auth, q: Query<Option<String>>) -> Result<JsonValue, ApiError> {
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
    ) -> Result<JsonValue, ApiError> {
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
    ) -> Result<JsonValue, ApiError> {
        empty_list(&self.state, &auth, "Annotation", q.0.as_deref()).await
    }

    /// Themes (not supported): always empty.
    #[oai(path = "/api/v1/theme", method = "get", operation_id = "theme_list")]
    async fn themes(&self, auth: Auth, q: Query<Option<String>>) -> Result<JsonValue, ApiError> {
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
