//! Helpers every module of the adversarial suite uses.

use liteset_tests::Api;
use serde_json::Value;

pub(crate) fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The SIP-40 `error_type` of an error body (empty when it has none).
pub(crate) fn error_type(body: &Value) -> &str {
    body["errors"][0]["error_type"].as_str().unwrap_or("")
}

/// The id of the record of `path` whose `col` equals `value`.
pub(crate) async fn id_of(api: &Api, path: &str, col: &str, value: &str) -> i64 {
    let (_, found) = api
        .get(&format!(
            "{path}?q={}",
            urlencode(&format!("(filters:!((col:{col},opr:eq,value:'{value}')))"))
        ))
        .await;
    found["ids"][0]
        .as_i64()
        .or_else(|| found["result"][0]["id"].as_i64())
        .unwrap_or_else(|| panic!("{path} {value}: {found}"))
}

/// The id of the role called `name`.
pub(crate) async fn role_id(admin: &Api, name: &str) -> i64 {
    id_of(admin, "/api/v1/security/roles/", "name", name).await
}

/// The permission-view id of `(perm, view)`.
pub(crate) async fn permission(admin: &Api, view: &str, perm: &str) -> i64 {
    let q = format!(
        "(filters:!((col:view_menu.name,opr:eq,value:'{view}'),(col:permission.name,opr:eq,value:{perm})))"
    );
    let (_, pvs) = admin
        .get(&format!(
            "/api/v1/security/permissions-resources/?q={}",
            urlencode(&q)
        ))
        .await;
    assert_eq!(pvs["count"], 1, "{view} {perm}: {pvs}");
    pvs["result"][0]["id"].as_i64().expect("pv id")
}
