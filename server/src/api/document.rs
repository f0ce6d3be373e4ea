//! The OpenAPI document as served: poem-openapi's, with each operation's error responses cut to
//! the faults [`Operation::faults`] gives it, and the check that every error answer is one its
//! operation documents. Both read that one function, so they cannot disagree.

use std::collections::HashMap;

use serde_json::Value;

use super::error::{Fault, Operation};

/// The served document and, per operation, the error statuses it lists.
pub struct Document {
    json: String,
    /// (method, path template) → documented error statuses.
    errors: HashMap<(String, String), Vec<u16>>,
}

impl Document {
    /// Tailors poem-openapi's document (`OpenApiService::spec`).
    pub fn new(spec: &str) -> Document {
        let mut doc: Value = serde_json::from_str(spec).unwrap_or_default();
        let mut errors = HashMap::new();
        if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
            for (path, item) in paths.iter_mut() {
                let Some(item) = item.as_object_mut() else {
                    continue;
                };
                for (method, op) in item.iter_mut() {
                    let method = method.to_ascii_uppercase();
                    let takes_input = op
                        .get("parameters")
                        .and_then(Value::as_array)
                        .is_some_and(|p| !p.is_empty())
                        || op.get("requestBody").is_some();
                    let operation = Operation {
                        id: op.get("operationId").and_then(Value::as_str).unwrap_or(""),
                        method: &method,
                        path,
                        takes_input,
                    };
                    let allowed: Vec<u16> = operation.faults().iter().map(|f| f.code()).collect();
                    if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut)
                    {
                        responses.retain(|status, _| {
                            status
                                .parse::<u16>()
                                .map_or(true, |s| s < 400 || allowed.contains(&s))
                        });
                    }
                    errors.insert((method, path.clone()), allowed);
                }
            }
        }
        Document {
            json: serde_json::to_string(&doc).unwrap_or_default(),
            errors,
        }
    }

    /// The document's JSON.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// Whether the operation behind `method` and the router's `pattern` (`/api/v1/chart/:pk`)
    /// documents an answer with `status`. Answers of routes outside the document (static files,
    /// web app pages) and non-error statuses pass.
    pub fn documents(&self, method: &str, pattern: &str, status: u16) -> bool {
        if status < 400 {
            return true;
        }
        let template = pattern
            .split('/')
            .map(|seg| match seg.strip_prefix(':') {
                Some(name) => format!("{{{name}}}"),
                None => seg.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("/");
        let Some(allowed) = self.errors.get(&(method.to_owned(), template)) else {
            return true;
        };
        match Fault::of_status(status) {
            Some(fault) => fault.undocumented() || allowed.contains(&status),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Document {
        let all: serde_json::Map<String, Value> =
            [400, 401, 403, 404, 408, 410, 413, 422, 429, 500, 503]
                .iter()
                .map(|s| (s.to_string(), serde_json::json!({"description": "e"})))
                .chain([("200".to_owned(), serde_json::json!({"description": "ok"}))])
                .collect();
        let spec = serde_json::json!({"paths": {
            "/api/v1/me": {"get": {"operationId": "me_get", "responses": all}},
            "/api/v1/chart/{pk}": {
                "get": {"operationId": "chart_get", "responses": all,
                        "parameters": [{"name": "pk", "in": "path"}]},
                "put": {"operationId": "chart_put", "responses": all, "requestBody": {},
                        "parameters": [{"name": "pk", "in": "path"}]},
            },
            "/api/v1/security/login": {"post": {"operationId": "security_login", "responses": all,
                                                "requestBody": {}}},
            "/api/v1/sqllab/results": {"get": {"operationId": "sqllab_results", "responses": all,
                                               "parameters": [{"name": "q", "in": "query"}]}},
        }});
        Document::new(&spec.to_string())
    }

    fn listed(d: &Document, path: &str, method: &str) -> Vec<String> {
        let v: Value = serde_json::from_str(d.json()).unwrap_or_default();
        v["paths"][path][method]["responses"]
            .as_object()
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default()
    }

    #[test]
    fn each_operation_lists_the_errors_it_can_send() {
        let d = doc();
        let base = ["200", "400", "401", "403", "422", "500", "503"];
        let with = |extra: &[&str]| {
            let mut v: Vec<String> = base.iter().chain(extra).map(|s| (*s).to_owned()).collect();
            v.sort();
            v
        };
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(sorted(listed(&d, "/api/v1/me", "get")), with(&[]));
        assert_eq!(
            sorted(listed(&d, "/api/v1/chart/{pk}", "get")),
            with(&["404", "408"])
        );
        assert_eq!(
            sorted(listed(&d, "/api/v1/chart/{pk}", "put")),
            with(&["404", "408", "413"])
        );
        assert_eq!(
            sorted(listed(&d, "/api/v1/security/login", "post")),
            with(&["404", "408", "413", "429"])
        );
        assert_eq!(
            sorted(listed(&d, "/api/v1/sqllab/results", "get")),
            with(&["404", "408", "410"])
        );
    }

    #[test]
    fn answers_are_checked_against_their_operation() {
        let d = doc();
        assert!(d.documents("GET", "/api/v1/chart/:pk", 404));
        assert!(d.documents("GET", "/api/v1/chart/:pk", 200));
        assert!(!d.documents("GET", "/api/v1/me", 404));
        assert!(!d.documents("GET", "/api/v1/chart/:pk", 413));
        assert!(
            !d.documents("GET", "/api/v1/chart/:pk", 418),
            "a status no fault names"
        );
        assert!(d.documents("PUT", "/api/v1/chart/:pk", 413));
        // 405 and 499 are nobody's to document; routes outside the document are not checked.
        assert!(d.documents("GET", "/api/v1/me", 405));
        assert!(d.documents("GET", "/api/v1/me", 499));
        assert!(d.documents("GET", "/static/*path", 404));
    }
}
