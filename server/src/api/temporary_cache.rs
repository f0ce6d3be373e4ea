//! What explore form data, dashboard filter state and both permalinks share: Superset's
//! temporary-cache and key-value semantics over the store's `liteset_key_value` table.
//!
//! Superset keeps form data and filter state in a cache with an owner per entry: anyone who may
//! read the resource may read an entry by its (unguessable) key, so links can be shared, but
//! only the owner may replace or delete it. A `tab_id` makes a browser tab reuse its key, so
//! its URL stays stable while the user keeps editing. Entries live in the metadata store, not a
//! replica's memory, so every replica answers every key.

use chrono::{Duration, Utc};
use serde_json::{Value as Json_, json};

use super::error::{ApiError, Fault};
use super::extract::Auth;
use crate::state::AppState;
use crate::store::key_value::KvEntry;

/// Superset's `EXPLORE_FORM_DATA_CACHE_CONFIG` timeout.
pub const FORM_DATA_TTL: Duration = Duration::days(7);
/// Superset's `FILTER_STATE_CACHE_CONFIG` timeout.
pub const FILTER_STATE_TTL: Duration = Duration::days(90);
/// Largest value accepted; far above what the app writes, small enough that one entry cannot
/// weigh on the metadata database.
pub const MAX_VALUE_BYTES: usize = 2 * 1024 * 1024;

/// Namespaces of `liteset_key_value`.
pub const FORM_DATA: &str = "explore_form_data";
pub const FILTER_STATE: &str = "dashboard_filter_state";
pub const EXPLORE_PERMALINK: &str = "explore_permalink";
pub const DASHBOARD_PERMALINK: &str = "dashboard_permalink";

/// Superset's `TemporaryCacheAccessDeniedError`.
pub fn access_denied() -> ApiError {
    ApiError::message(
        Fault::Forbidden,
        "You don't have permission to modify the value.",
    )
}

/// Superset's `TemporaryCacheResourceNotFoundError`.
pub fn resource_not_found() -> ApiError {
    ApiError::message(Fault::NotFound, "Resource was not found.")
}

/// A new random URL-safe key (128 bits: a key is all it takes to read an entry).
pub fn random_key() -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>())
}

/// Checks a value that must be JSON text: marshmallow's `validate_json` under `field`, or at
/// the top level (`{"message": ["JSON not valid"]}`) as the explore commands raise it.
pub fn check_json(value: &str, field: Option<&str>) -> Result<(), ApiError> {
    let fail = |msg: String| {
        let list = json!([msg]);
        ApiError::fields(
            Fault::BadRequest,
            match field {
                Some(f) => json!({ f: list }),
                None => list,
            },
        )
    };
    if value.len() > MAX_VALUE_BYTES {
        return Err(fail(format!(
            "Value is larger than {MAX_VALUE_BYTES} bytes."
        )));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(value)
        .map(|_| ())
        .map_err(|_| fail("JSON not valid".into()))
}

/// A required string field of a JSON body, with marshmallow's messages.
pub fn required_str<'a>(body: &'a Json_, field: &str) -> Result<&'a str, ApiError> {
    match body.get(field) {
        Some(Json_::String(s)) => Ok(s),
        None => Err(field_error(field, "Missing data for required field.")),
        Some(Json_::Null) => Err(field_error(field, "Field may not be null.")),
        Some(_) => Err(field_error(field, "Not a valid string.")),
    }
}

/// An integer field of a JSON body (`required` as marshmallow's `required`).
pub fn int_field(body: &Json_, field: &str, required: bool) -> Result<Option<i64>, ApiError> {
    match body.get(field) {
        None if required => Err(field_error(field, "Missing data for required field.")),
        None => Ok(None),
        Some(Json_::Null) if required => Err(field_error(field, "Field may not be null.")),
        Some(Json_::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Some)
            .ok_or_else(|| field_error(field, "Not a valid integer.")),
    }
}

/// `{"message": {field: [msg]}}` with 400.
pub fn field_error(field: &str, msg: &str) -> ApiError {
    ApiError::fields(Fault::BadRequest, json!({ field: [msg] }))
}

/// The caller's user id (`None` for the anonymous Public user).
pub fn owner(auth: &Auth) -> Option<i64> {
    auth.principal
        .user()
        .filter(|u| u.guest.is_none())
        .map(|u| u.user.id)
}

/// The key a browser tab reuses for one resource: the caller's login session, the tab and the
/// resource, as Superset's `cache_key(session["_id"], tab_id, …)`.
fn contextual(auth: &Auth, tab_id: &str, resource: &str) -> String {
    let session = auth.session.as_ref().map_or(0, |s| s.iat);
    // Guests share no user id: each token is its own visitor.
    if let Some(g) = auth.principal.user().and_then(|u| u.guest.as_ref()) {
        return format!("guest-{}:{tab_id}:{resource}", g.key);
    }
    let user = owner(auth).unwrap_or(0);
    format!("{user}:{session}:{tab_id}:{resource}")
}

fn tab_namespace(namespace: &str) -> String {
    format!("{namespace}:tab")
}

/// The key to write under: the tab's existing key when there is a `tab_id`, else a new one.
pub async fn key_for_tab(
    state: &AppState,
    auth: &Auth,
    namespace: &str,
    tab_id: Option<&str>,
    resource: &str,
    ttl: Duration,
) -> Result<String, ApiError> {
    let Some(tab) = tab_id.filter(|t| !t.is_empty() && *t != "0") else {
        return Ok(random_key());
    };
    let ns = tab_namespace(namespace);
    let ctx = contextual(auth, tab, resource);
    if let Some(e) = state.store.kv_get(&ns, &ctx).await? {
        return Ok(e.value);
    }
    let key = random_key();
    state
        .store
        .kv_put(&KvEntry {
            namespace: ns,
            key: ctx,
            resource: resource.to_owned(),
            owner: owner(auth),
            value: key.clone(),
            expires_on: Some(Utc::now().naive_utc() + ttl),
        })
        .await?;
    Ok(key)
}

/// Forgets the tab's key for a resource (after its entry was deleted).
pub async fn forget_tab(
    state: &AppState,
    auth: &Auth,
    namespace: &str,
    tab_id: Option<&str>,
    resource: &str,
) -> Result<(), ApiError> {
    if let Some(tab) = tab_id.filter(|t| !t.is_empty()) {
        state
            .store
            .kv_delete(&tab_namespace(namespace), &contextual(auth, tab, resource))
            .await?;
    }
    Ok(())
}

/// Stores `value` under `key` for the caller, expiring after `ttl` (never when `None`).
pub async fn put(
    state: &AppState,
    auth: &Auth,
    namespace: &str,
    key: &str,
    resource: &str,
    value: String,
    ttl: Option<Duration>,
) -> Result<(), ApiError> {
    state
        .store
        .kv_put(&KvEntry {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            resource: resource.to_owned(),
            owner: owner(auth),
            value,
            expires_on: ttl.map(|t| Utc::now().naive_utc() + t),
        })
        .await?;
    Ok(())
}

/// A live entry, its expiry pushed back by `ttl` (Superset's `REFRESH_TIMEOUT_ON_RETRIEVAL`).
pub async fn get_refreshed(
    state: &AppState,
    namespace: &str,
    key: &str,
    ttl: Duration,
) -> Result<Option<KvEntry>, ApiError> {
    let found = state.store.kv_get(namespace, key).await?;
    if found.is_some() {
        state
            .store
            .kv_touch(namespace, key, Utc::now().naive_utc() + ttl)
            .await?;
    }
    Ok(found)
}

/// Only an entry's owner may replace or delete it.
pub fn ensure_owner(auth: &Auth, entry: &KvEntry) -> Result<(), ApiError> {
    if entry.owner == owner(auth) {
        Ok(())
    } else {
        tracing::info!(message = "Change of another user's UI state refused.");
        Err(access_denied())
    }
}

/// The absolute URL of `path` on the host the client called.
pub fn external_url(req: &poem::Request, path: &str) -> String {
    let host = req
        .headers()
        .get(poem::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            h.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        });
    match host {
        Some(h) => {
            let scheme = req
                .headers()
                .get("x-forwarded-proto")
                .and_then(|v| v.to_str().ok())
                .filter(|p| *p == "https")
                .unwrap_or("http");
            format!("{scheme}://{h}{path}")
        }
        None => path.to_owned(),
    }
}

/// `urlParams` of a permalink's state (explore's and a dashboard's): a list of `[key, value]`
/// string pairs (either may be null).
pub fn check_url_params(state: &Json_) -> Result<(), ApiError> {
    match state.get("urlParams") {
        None | Some(Json_::Null) => Ok(()),
        Some(Json_::Array(items))
            if items.iter().all(|p| {
                p.as_array().is_some_and(|pair| {
                    pair.len() == 2 && pair.iter().all(|v| v.is_string() || v.is_null())
                })
            }) =>
        {
            Ok(())
        }
        Some(_) => Err(field_error("urlParams", "Not a valid list.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_are_checked() {
        assert!(check_json("{\"a\": 1}", Some("value")).is_ok());
        assert!(check_json("[]", None).is_ok());
        let err = check_json("{oops", Some("value")).unwrap_err();
        assert_eq!(err.fault, Fault::BadRequest);
        assert_eq!(
            err.body,
            super::super::error::ErrorBody::Message(json!({"value": ["JSON not valid"]}))
        );
        let big = format!("\"{}\"", "x".repeat(MAX_VALUE_BYTES));
        assert!(check_json(&big, None).is_err());
    }

    #[test]
    fn keys_are_url_safe_and_distinct() {
        let (a, b) = (random_key(), random_key());
        assert_ne!(a, b);
        assert_eq!(a.len(), 22);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
    }
}
