//! A database record as the wire shows it: the columns of Superset's `DatabaseRestApi` that
//! are not stored fields (backend, driver, the flags read from `extra`, the URI with its
//! password masked). Shared by `database.rs` (list, show, connection) and `sqllab.rs` (its
//! bootstrap's databases).

use serde_json::{Value as Json_, json};

use super::resource::common_computed;
use crate::store::model::Record;
use crate::uri::{ConnectionUri, PASSWORD_MASK};

/// The database's `extra` as a JSON object (`{}` when absent or not an object).
fn extra_json(rec: &Record) -> Json_ {
    rec.get::<String>("extra")
        .and_then(|e| serde_json::from_str::<Json_>(&e).ok())
        .filter(Json_::is_object)
        .unwrap_or_else(|| json!({}))
}

/// Superset's `backend` and `driver` of the database's URI (`postgresql`/`psycopg2`, a
/// driver the URI names or the backend's default), or `""`s.
fn backend_driver(rec: &Record) -> (String, String) {
    let Ok(uri) = ConnectionUri::parse(&rec.text("sqlalchemy_uri")) else {
        return (String::new(), String::new());
    };
    let backend = uri.backend().to_owned();
    let driver = uri
        .driver()
        .or_else(|| crate::engines::engine_spec(&backend).map(|s| s.default_driver))
        .unwrap_or_default()
        .to_owned();
    (backend, driver)
}

/// A database's columns that are not stored fields, as its list, show and SQL Lab's
/// bootstrap render them.
pub fn computed(rec: &Record, col: &str) -> Option<Json_> {
    let extra = || extra_json(rec);
    Some(match col {
        "backend" => json!(backend_driver(rec).0),
        "driver" => json!(backend_driver(rec).1),
        "allows_cost_estimate" => json!(
            extra()
                .get("cost_estimate_enabled")
                .and_then(Json_::as_bool)
                .unwrap_or(false)
        ),
        "allows_subquery" => json!(true),
        "allows_virtual_table_explore" => json!(
            extra()
                .get("allows_virtual_table_explore")
                .and_then(Json_::as_bool)
                .unwrap_or(true)
        ),
        "disable_data_preview" => json!(
            extra()
                .get("disable_data_preview")
                .and_then(Json_::as_bool)
                .unwrap_or(false)
        ),
        "disable_drill_to_detail" => json!(
            extra()
                .get("disable_drill_to_detail")
                .and_then(Json_::as_bool)
                .unwrap_or(false)
        ),
        "allow_multi_catalog" => json!(
            extra()
                .get("allow_multi_catalog")
                .and_then(Json_::as_bool)
                .unwrap_or(false)
        ),
        "explore_database_id" => json!(rec.id),
        "engine_information" => json!({
            "supports_file_upload": true,
            "disable_ssh_tunneling": true,
            "supports_dynamic_catalog": false,
            "supports_oauth2": false,
        }),
        "sqlalchemy_uri" => json!(masked_uri(rec)),
        _ => return common_computed(rec, col),
    })
}

/// The stored URI with the mask standing in for a password, if the database has one.
pub fn masked_uri(rec: &Record) -> String {
    let stored = rec.text("sqlalchemy_uri");
    match ConnectionUri::parse(&stored) {
        Ok(mut u) => {
            if rec.flag("has_password") {
                u.password = Some(PASSWORD_MASK.into());
            }
            u.masked()
        }
        Err(_) => stored,
    }
}
