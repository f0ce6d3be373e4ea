//! Reading Superset's form data (a chart's `params`): metrics and columns (saved names or
//! adhoc objects) and their labels, as `@superset-ui/core`'s `getMetricLabel` and
//! `getColumnLabel` compute them, plus typed accessors that tolerate what old charts store
//! (numbers as strings, a single value where a list is expected).

use serde_json::Value as Json;

/// The form data of a chart.
#[derive(Debug, Clone)]
pub struct Form(pub Json);

impl Form {
    /// Parses form data; anything but an object is an empty form.
    pub fn parse(text: &str) -> Result<Form, String> {
        let v: Json =
            serde_json::from_str(text).map_err(|e| format!("form data is not JSON: {e}"))?;
        if !v.is_object() {
            return Err("form data is not a JSON object".into());
        }
        Ok(Form(v))
    }

    /// A raw value.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// A string value (empty strings count as absent).
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key)
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty())
    }

    /// A boolean, with a default.
    pub fn flag(&self, key: &str, default: bool) -> bool {
        match self.get(key) {
            Some(Json::Bool(b)) => *b,
            Some(Json::String(s)) => matches!(s.as_str(), "true" | "True" | "1"),
            Some(Json::Number(n)) => n.as_f64().is_some_and(|v| v != 0.0),
            _ => default,
        }
    }

    /// A non-negative integer (numbers or numeric strings).
    pub fn int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            Json::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
            Json::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|v| *v >= 0)
    }

    /// A list value; a single non-list value is a list of one.
    pub fn list(&self, key: &str) -> Vec<Json> {
        match self.get(key) {
            None => Vec::new(),
            Some(Json::Array(a)) => a.iter().filter(|v| !v.is_null()).cloned().collect(),
            Some(v) => vec![v.clone()],
        }
    }

    /// The metrics of a chart: `metrics`, or the single `metric` of one-metric charts.
    pub fn metrics(&self) -> Vec<Json> {
        let mut m = self.list("metrics");
        if m.is_empty() {
            m = self.list("metric");
        }
        m
    }

    /// The display name of a label: the dataset's verbose name when it has one.
    pub fn verbose(&self, label: &str) -> String {
        self.get("verbose_map")
            .and_then(|m| m.get(label))
            .and_then(Json::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(label)
            .to_owned()
    }
}

/// `getMetricLabel`: a saved metric's name, or an adhoc metric's label (or what it computes).
pub fn metric_label(m: &Json) -> String {
    match m {
        Json::String(s) => s.clone(),
        Json::Object(o) => {
            if let Some(l) = o
                .get("label")
                .and_then(Json::as_str)
                .filter(|l| !l.is_empty())
            {
                return l.to_owned();
            }
            match o.get("expressionType").and_then(Json::as_str) {
                Some("SIMPLE") => {
                    let agg = o.get("aggregate").and_then(Json::as_str).unwrap_or("");
                    let col = o
                        .get("column")
                        .and_then(|c| c.get("column_name").or_else(|| c.get("columnName")))
                        .and_then(Json::as_str)
                        .unwrap_or("");
                    format!("{agg}({col})")
                }
                _ => o
                    .get("sqlExpression")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_owned(),
            }
        }
        other => other.to_string(),
    }
}

/// `getColumnLabel`: a physical column's name, or an adhoc column's label (or its SQL).
pub fn column_label(c: &Json) -> String {
    match c {
        Json::String(s) => s.clone(),
        Json::Object(o) => o
            .get("label")
            .and_then(Json::as_str)
            .filter(|l| !l.is_empty())
            .or_else(|| o.get("sqlExpression").and_then(Json::as_str))
            .unwrap_or("")
            .to_owned(),
        other => other.to_string(),
    }
}

/// The label of the x axis of a timeseries chart: `x_axis`, else the legacy
/// `granularity_sqla` time column (whose result column is `__timestamp`).
pub fn x_axis_label(form: &Form) -> String {
    match form.get("x_axis") {
        Some(x) if !column_label(x).is_empty() => column_label(x),
        _ => "__timestamp".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels() {
        assert_eq!(metric_label(&json!("count")), "count");
        assert_eq!(
            metric_label(&json!({"expressionType": "SIMPLE", "aggregate": "SUM",
                                 "column": {"column_name": "revenue"}})),
            "SUM(revenue)"
        );
        assert_eq!(
            metric_label(
                &json!({"expressionType": "SQL", "sqlExpression": "MAX(x)", "label": "Top"})
            ),
            "Top"
        );
        assert_eq!(column_label(&json!({"sqlExpression": "a + b"})), "a + b");
        let f = Form(json!({"row_limit": "100", "metric": "m", "verbose_map": {"m": "Metric"}}));
        assert_eq!(f.int("row_limit"), Some(100));
        assert_eq!(f.metrics(), vec![json!("m")]);
        assert_eq!(f.verbose("m"), "Metric");
        assert_eq!(f.verbose("x"), "x");
    }
}
