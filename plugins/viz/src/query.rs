//! `build-query`: form data → chart-data query context, as each chart's `buildQuery.ts` in
//! Superset's frontend does it (through `buildQueryContext` and `buildQueryObject`):
//!
//! - `buildQueryObject`: `metrics`/`metric` → metrics, `groupby` → columns, `adhoc_filters`
//!   (SIMPLE WHERE → `filters`; custom SQL WHERE/HAVING → `extras.where`/`extras.having`),
//!   `time_range` (a `TEMPORAL_RANGE` filter on the time column when the form has none),
//!   `time_grain_sqla`, `row_limit`, `limit` → `series_limit`, `timeseries_limit_metric` →
//!   `series_limit_metric`, `order_desc`;
//! - then each chart's own additions (the x axis as a `BASE_AXIS` column, ordering, the
//!   pivot/rename/flatten post-processing of timeseries).

use serde_json::{Map, Value as Json, json};

use crate::form::{Form, column_label, metric_label, x_axis_label};

/// The `datasource` of the form (`"12__table"`) as a query-context datasource.
fn datasource(form: &Form) -> Result<Json, String> {
    match form.get("datasource") {
        Some(Json::String(s)) => {
            let (id, ty) = s.split_once("__").unwrap_or((s.as_str(), "table"));
            let id: i64 = id
                .parse()
                .map_err(|_| format!("form data datasource {s:?} is not <id>__<type>"))?;
            Ok(json!({"id": id, "type": ty}))
        }
        Some(Json::Object(o)) => Ok(Json::Object(o.clone())),
        _ => Err("form data has no datasource".into()),
    }
}

/// Superset's adhoc filter operators that map one-to-one onto query-object filter ops.
const OPS: &[&str] = &[
    "==",
    "!=",
    ">",
    "<",
    ">=",
    "<=",
    "IN",
    "NOT IN",
    "LIKE",
    "NOT LIKE",
    "ILIKE",
    "IS NULL",
    "IS NOT NULL",
    "IS TRUE",
    "IS FALSE",
    "TEMPORAL_RANGE",
];

/// `buildQueryObject`'s common part.
fn base(form: &Form) -> Map<String, Json> {
    let mut q = Map::new();
    let metrics = form.metrics();
    if !metrics.is_empty() {
        q.insert("metrics".into(), Json::Array(metrics));
    }
    let groupby = form.list("groupby");
    q.insert("columns".into(), Json::Array(groupby));

    let mut filters = Vec::new();
    let mut wheres = Vec::new();
    let mut havings = Vec::new();
    let mut has_temporal_range = false;
    for f in form.list("adhoc_filters") {
        let clause = f.get("clause").and_then(Json::as_str).unwrap_or("WHERE");
        match f.get("expressionType").and_then(Json::as_str) {
            Some("SQL") => {
                if let Some(sql) = f.get("sqlExpression").and_then(Json::as_str)
                    && !sql.trim().is_empty()
                {
                    let target = if clause == "HAVING" {
                        &mut havings
                    } else {
                        &mut wheres
                    };
                    target.push(format!("({sql})"));
                }
            }
            _ => {
                let (Some(col), Some(op)) = (
                    f.get("subject").filter(|s| !s.is_null()),
                    f.get("operator").and_then(Json::as_str),
                ) else {
                    continue;
                };
                if clause != "WHERE" || !OPS.contains(&op) {
                    continue;
                }
                has_temporal_range |= op == "TEMPORAL_RANGE";
                let mut filter = json!({"col": col, "op": op});
                if let Some(v) = f.get("comparator").filter(|v| !v.is_null()) {
                    filter["val"] = v.clone();
                }
                filters.push(filter);
            }
        }
    }
    // Charts saved before time ranges became filters carry `time_range` and a time column.
    if !has_temporal_range
        && let Some(range) = form.str("time_range")
        && range != "No filter"
    {
        let col = form
            .get("x_axis")
            .filter(|x| x.is_string())
            .cloned()
            .or_else(|| form.get("granularity_sqla").cloned());
        if let Some(col) = col {
            filters.push(json!({"col": col, "op": "TEMPORAL_RANGE", "val": range}));
        }
    }
    q.insert("filters".into(), Json::Array(filters));
    let mut extras = Map::new();
    if !wheres.is_empty() {
        extras.insert("where".into(), json!(wheres.join(" AND ")));
    }
    if !havings.is_empty() {
        extras.insert("having".into(), json!(havings.join(" AND ")));
    }
    if let Some(grain) = form.str("time_grain_sqla") {
        extras.insert("time_grain_sqla".into(), json!(grain));
    }
    q.insert("extras".into(), Json::Object(extras));
    if let Some(g) = form.str("granularity_sqla") {
        q.insert("granularity".into(), json!(g));
    }
    if let Some(n) = form.int("row_limit") {
        q.insert("row_limit".into(), json!(n));
    }
    if let Some(n) = form.int("limit").filter(|n| *n > 0) {
        q.insert("series_limit".into(), json!(n));
    }
    if let Some(m) = form.get("timeseries_limit_metric") {
        q.insert("series_limit_metric".into(), m.clone());
    }
    q.insert("order_desc".into(), json!(form.flag("order_desc", true)));
    q
}

/// `buildQueryContext`: one or more query objects with the datasource and form data.
fn context(form: &Form, queries: Vec<Map<String, Json>>) -> Result<Json, String> {
    Ok(json!({
        "datasource": datasource(form)?,
        "force": false,
        "queries": queries.into_iter().map(Json::Object).collect::<Vec<_>>(),
        "form_data": form.0,
        "result_format": "json",
        "result_type": "full",
    }))
}

/// The query context of a chart of `viz_type`.
pub fn build(viz_type: &str, form: &Form) -> Result<Json, String> {
    match viz_type {
        "table" => table(form),
        "big_number_total" => big_number_total(form),
        "echarts_timeseries_line" | "echarts_timeseries_bar" => timeseries(form),
        "pie" => pie(form),
        other => Err(format!("viz_type {other:?} is not rendered by this plugin")),
    }
}

/// `plugin-chart-table`'s buildQuery: aggregate mode (group by + metrics, ordered by the
/// sort metric or the first metric) or raw mode (`all_columns`, `order_by_cols`).
fn table(form: &Form) -> Result<Json, String> {
    let mut q = base(form);
    let raw = form.str("query_mode") == Some("raw")
        || (form.str("query_mode").is_none()
            && !form.list("all_columns").is_empty()
            && form.metrics().is_empty());
    if raw {
        q.insert("columns".into(), Json::Array(form.list("all_columns")));
        q.remove("metrics");
        let orderby: Vec<Json> = form
            .list("order_by_cols")
            .iter()
            .filter_map(|o| match o {
                Json::String(s) => serde_json::from_str::<Json>(s).ok(),
                other => Some(other.clone()),
            })
            .filter(|o| o.as_array().is_some_and(|a| a.len() == 2))
            .collect();
        q.insert("orderby".into(), Json::Array(orderby));
    } else {
        let mut metrics = form.metrics();
        // Percent metrics are queried like metrics; the table shows them as shares.
        for pm in form.list("percent_metrics") {
            if !metrics.iter().any(|m| metric_label(m) == metric_label(&pm)) {
                metrics.push(pm);
            }
        }
        q.insert("metrics".into(), Json::Array(metrics.clone()));
        let order_desc = form.flag("order_desc", true);
        let orderby = match form.get("timeseries_limit_metric") {
            Some(m) => vec![json!([m, !order_desc])],
            None => metrics
                .first()
                .map(|m| json!([m, false]))
                .into_iter()
                .collect(),
        };
        q.insert("orderby".into(), Json::Array(orderby));
        q.remove("series_limit_metric");
    }
    context(form, vec![q])
}

/// `BigNumberTotal`'s buildQuery: the metric over the whole (filtered) dataset.
fn big_number_total(form: &Form) -> Result<Json, String> {
    let mut q = base(form);
    q.insert("columns".into(), json!([]));
    context(form, vec![q])
}

/// `Pie`'s buildQuery: the metric by the group-by columns, largest first unless
/// `sort_by_metric` is off.
fn pie(form: &Form) -> Result<Json, String> {
    let mut q = base(form);
    if form.flag("sort_by_metric", true)
        && let Some(m) = form.metrics().first()
    {
        q.insert("orderby".into(), json!([[m, false]]));
    }
    context(form, vec![q])
}

/// `Timeseries`'s buildQuery: the x axis as a `BASE_AXIS` column (with the time grain) before
/// the group-by columns, ordered by the series-limit metric or the first metric, then
/// pivoted (x axis as index, one column per metric × group), renamed (one metric: the group
/// values alone name the series) and flattened.
fn timeseries(form: &Form) -> Result<Json, String> {
    let mut q = base(form);
    let metrics = form.metrics();
    if metrics.is_empty() {
        return Err("a timeseries chart needs at least one metric".into());
    }
    let groupby = form.list("groupby");
    let x_label = x_axis_label(form);
    let mut columns = Vec::new();
    match form.get("x_axis") {
        Some(Json::String(x)) => {
            let mut col = json!({"columnType": "BASE_AXIS", "sqlExpression": x, "label": x,
                                 "expressionType": "SQL"});
            if let Some(g) = form.str("time_grain_sqla") {
                col["timeGrain"] = json!(g);
            }
            columns.push(col);
        }
        Some(Json::Object(o)) => {
            let mut col = Json::Object(o.clone());
            col["columnType"] = json!("BASE_AXIS");
            if let Some(g) = form.str("time_grain_sqla") {
                col["timeGrain"] = json!(g);
            }
            columns.push(col);
        }
        _ => {
            q.insert("is_timeseries".into(), json!(true));
        }
    }
    columns.extend(groupby.iter().cloned());
    q.insert("columns".into(), Json::Array(columns));
    q.insert("series_columns".into(), Json::Array(groupby.clone()));
    let order_desc = form.flag("order_desc", true);
    let sort = form
        .get("timeseries_limit_metric")
        .cloned()
        .unwrap_or_else(|| metrics[0].clone());
    q.insert("orderby".into(), json!([[sort, !order_desc]]));
    let metric_labels: Vec<String> = metrics.iter().map(metric_label).collect();
    let aggregates: Map<String, Json> = metric_labels
        .iter()
        .map(|m| (m.clone(), json!({"operator": "mean"})))
        .collect();
    let mut post = vec![json!({"operation": "pivot", "options": {
        "index": [x_label],
        "columns": groupby.iter().map(column_label).collect::<Vec<_>>(),
        "aggregates": aggregates,
        "drop_missing_columns": !form.flag("show_empty_columns", true),
    }})];
    if !groupby.is_empty() && metrics.len() == 1 {
        post.push(json!({"operation": "rename", "options": {
            "columns": {metric_labels[0].clone(): null}, "level": 0, "inplace": true}}));
    }
    post.push(json!({"operation": "flatten"}));
    q.insert("post_processing".into(), Json::Array(post));
    context(form, vec![q])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(v: Json) -> Form {
        Form(v)
    }

    #[test]
    fn timeseries_like_superset() {
        let f = form(json!({
            "datasource": "3__table", "viz_type": "echarts_timeseries_line",
            "x_axis": "order_date", "time_grain_sqla": "P1M", "metrics": ["sum_revenue"],
            "groupby": ["region"], "row_limit": 10000, "time_range": "No filter",
            "adhoc_filters": [
                {"clause": "WHERE", "expressionType": "SIMPLE", "subject": "order_date",
                 "operator": "TEMPORAL_RANGE", "comparator": "Last year"},
                {"clause": "WHERE", "expressionType": "SIMPLE", "subject": "channel",
                 "operator": "IN", "comparator": ["online"]},
                {"clause": "WHERE", "expressionType": "SQL", "sqlExpression": "quantity > 1"},
                {"clause": "HAVING", "expressionType": "SQL", "sqlExpression": "SUM(revenue) > 0"}
            ]
        }));
        let ctx = build("echarts_timeseries_line", &f).expect("context");
        assert_eq!(ctx["datasource"], json!({"id": 3, "type": "table"}));
        let q = &ctx["queries"][0];
        assert_eq!(
            q["columns"][0],
            json!({"columnType": "BASE_AXIS", "sqlExpression": "order_date", "label": "order_date",
                   "expressionType": "SQL", "timeGrain": "P1M"})
        );
        assert_eq!(q["columns"][1], json!("region"));
        assert_eq!(q["filters"].as_array().map(Vec::len), Some(2));
        assert_eq!(q["extras"]["where"], json!("(quantity > 1)"));
        assert_eq!(q["extras"]["having"], json!("(SUM(revenue) > 0)"));
        assert_eq!(q["orderby"], json!([["sum_revenue", false]]));
        let ops: Vec<&str> = q["post_processing"]
            .as_array()
            .expect("pp")
            .iter()
            .filter_map(|p| p["operation"].as_str())
            .collect();
        assert_eq!(ops, ["pivot", "rename", "flatten"]);
        assert_eq!(
            q["post_processing"][0]["options"]["index"],
            json!(["order_date"])
        );
    }

    #[test]
    fn time_range_becomes_a_filter_when_missing() {
        let f = form(json!({"datasource": "1__table", "granularity_sqla": "ds",
                            "time_range": "Last week", "metric": "count"}));
        let ctx = build("big_number_total", &f).expect("context");
        assert_eq!(
            ctx["queries"][0]["filters"],
            json!([{"col": "ds", "op": "TEMPORAL_RANGE", "val": "Last week"}])
        );
        assert_eq!(ctx["queries"][0]["metrics"], json!(["count"]));
    }

    #[test]
    fn table_and_pie() {
        let f = form(json!({"datasource": "1__table", "groupby": ["region"],
                            "metrics": ["sum_revenue", "count"], "row_limit": 5}));
        let t = build("table", &f).expect("table");
        assert_eq!(t["queries"][0]["orderby"], json!([["sum_revenue", false]]));
        assert_eq!(t["queries"][0]["row_limit"], json!(5));
        let raw = form(json!({"datasource": "1__table", "query_mode": "raw",
                              "all_columns": ["a", "b"], "order_by_cols": ["[\"a\", true]"]}));
        let r = build("table", &raw).expect("raw");
        assert_eq!(r["queries"][0]["columns"], json!(["a", "b"]));
        assert_eq!(r["queries"][0]["orderby"], json!([["a", true]]));
        let p = build(
            "pie",
            &form(json!({"datasource": "2__table", "groupby": ["c"], "metric": "m"})),
        )
        .expect("pie");
        assert_eq!(p["queries"][0]["orderby"], json!([["m", false]]));
        assert!(build("pie", &form(json!({}))).is_err());
    }
}
