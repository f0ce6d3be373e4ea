//! `waterfall`: a viz plugin drawing Superset's waterfall chart (`viz_type` `waterfall`) as SVG.
//!
//! - `build_query` reads Superset-shaped form data: `metric`, the x axis (`x_axis`, with
//!   `time_grain_sqla` when it is a time column; older charts name it in `groupby[0]`), the
//!   optional breakdown `groupby`, `adhoc_filters` (SIMPLE and SQL, WHERE clause), `time_range`
//!   and `row_limit`.
//! - `render` sums the metric per x value (breakdowns add up), sorts time and number axes,
//!   and draws one floating bar per step from the running total: increases green, decreases
//!   orange, and a final grey total bar, with a y axis of nice ticks, grid lines, x labels and
//!   each bar's change above it. Colours are Superset's defaults for this chart.
//! - `chart_types` describes the chart for Superset's app: the gallery entry and a control
//!   panel of shared query controls plus three own options `render` honours: `show_total`
//!   (draw the total bar), `total_label` (its x label) and `increase_color` (one of
//!   [`INCREASE_COLORS`]). Absent options keep the defaults, so charts saved before them
//!   render as they did.

use std::fmt::Write as _;

use liteset_sdk::{
    ChartOutput, ChartType, Column, Control, Invocation, PluginError, PluginInfo, QueryResult,
    Section, Shared, Size, Value, Viz,
};
use serde_json::{Map, Value as Json, json};

/// The plugin.
pub struct Waterfall;

/// Superset's waterfall colours.
pub const INCREASE: &str = "#5AC189";
/// See [`INCREASE`].
pub const DECREASE: &str = "#FF7F44";
/// See [`INCREASE`].
pub const TOTAL: &str = "#666666";

/// The colours the `increase_color` control offers, `(value, label)`; the first is the default.
pub const INCREASE_COLORS: [(&str, &str); 2] = [(INCREASE, "Green"), ("#1F77B4", "Blue")];

/// The gallery thumbnail: three floating bars and a total, in the chart's colours.
const THUMBNAIL: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="160" height="100" viewBox="0 0 160 100"><line x1="8" y1="92" x2="152" y2="92" stroke="#999"/><rect x="14" y="52" width="24" height="40" fill="#5AC189"/><rect x="48" y="28" width="24" height="24" fill="#5AC189"/><rect x="82" y="28" width="24" height="30" fill="#FF7F44"/><rect x="116" y="58" width="24" height="34" fill="#666666"/></svg>"##;

/// The options of the "Chart options" section, read from form data.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `show_total`: draw the final total bar (default true).
    pub show_total: bool,
    /// `total_label`: the total bar's x label (default `Total`).
    pub total_label: String,
    /// `increase_color`: one of [`INCREASE_COLORS`]' values (anything else: the default).
    pub increase_color: &'static str,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            show_total: true,
            total_label: "Total".into(),
            increase_color: INCREASE,
        }
    }
}

impl Options {
    /// The options in `form`; absent or mistyped values fall back to the defaults, and a
    /// colour is taken only from the offered list (it goes into the SVG).
    pub fn from_form(form: &Map<String, Json>) -> Options {
        let d = Options::default();
        Options {
            show_total: form
                .get("show_total")
                .and_then(Json::as_bool)
                .unwrap_or(d.show_total),
            total_label: form
                .get("total_label")
                .and_then(Json::as_str)
                .map_or(d.total_label, str::to_owned),
            increase_color: form
                .get("increase_color")
                .and_then(Json::as_str)
                .and_then(|c| INCREASE_COLORS.iter().find(|(v, _)| *v == c))
                .map_or(d.increase_color, |(v, _)| v),
        }
    }
}

fn parse(form_data: &str) -> Result<Map<String, Json>, PluginError> {
    match serde_json::from_str(form_data) {
        Ok(Json::Object(o)) => Ok(o),
        Ok(_) => Err(PluginError::invalid_params(
            "form data must be a JSON object",
        )),
        Err(e) => Err(PluginError::invalid_params(format!(
            "form data is not JSON: {e}"
        ))),
    }
}

fn metric(form: &Map<String, Json>) -> Result<&Json, PluginError> {
    form.get("metric")
        .or_else(|| form.get("metrics").and_then(|m| m.get(0)))
        .filter(|m| !m.is_null())
        .ok_or_else(|| PluginError::invalid_params("a waterfall chart needs a `metric`"))
}

/// The column label Superset gives a metric or column (a name, or an adhoc object's label).
fn label(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Object(o) => o
            .get("label")
            .or_else(|| o.get("sqlExpression"))
            .and_then(Json::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// The x axis: `x_axis`, else the first `groupby` entry (charts saved before GENERIC_CHART_AXES).
fn x_axis(form: &Map<String, Json>) -> Result<(Json, Vec<Json>), PluginError> {
    let mut groupby: Vec<Json> = form
        .get("groupby")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let x = match form.get("x_axis").filter(|x| !x.is_null()) {
        Some(x) => x.clone(),
        None if !groupby.is_empty() => groupby.remove(0),
        None => {
            return Err(PluginError::invalid_params(
                "a waterfall chart needs an `x_axis` (or a `groupby` column)",
            ));
        }
    };
    Ok((x, groupby))
}

/// SIMPLE adhoc filters as query `filters`, SQL ones ANDed into `extras.where`.
fn filters(form: &Map<String, Json>) -> (Vec<Json>, Vec<String>) {
    let mut simple = Vec::new();
    let mut sql = Vec::new();
    for f in form
        .get("adhoc_filters")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        if f.get("clause").and_then(Json::as_str).unwrap_or("WHERE") != "WHERE" {
            continue; // HAVING filters need the metric's aggregation: not supported here.
        }
        match f.get("expressionType").and_then(Json::as_str) {
            Some("SQL") => {
                if let Some(s) = f.get("sqlExpression").and_then(Json::as_str) {
                    sql.push(format!("({s})"));
                }
            }
            _ => {
                if let (Some(col), Some(op)) = (f.get("subject"), f.get("operator")) {
                    let mut filter = json!({"col": col, "op": op});
                    if let Some(val) = f.get("comparator").filter(|v| !v.is_null()) {
                        filter["val"] = val.clone();
                    }
                    simple.push(filter);
                }
            }
        }
    }
    (simple, sql)
}

/// Nice axis ticks: multiples of 1, 2 or 5 × 10^k covering `lo..=hi`, about `count` of them.
pub fn nice_ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let raw = (hi - lo) / count.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() as i64;
    let last = (hi / step).ceil() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A short number: thousands separators for integers, up to two decimals otherwise.
pub fn format_number(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let rounded = (v * 100.0).round() / 100.0;
    let int = rounded.trunc().abs() as u64;
    let mut digits = int.to_string();
    let mut i = digits.len() as isize - 3;
    while i > 0 {
        digits.insert(i as usize, ',');
        i -= 3;
    }
    let frac = (rounded.abs().fract() * 100.0).round() as u64;
    let sign = if rounded < 0.0 { "-" } else { "" };
    match frac {
        0 => format!("{sign}{digits}"),
        f if f % 10 == 0 => format!("{sign}{digits}.{}", f / 10),
        f => format!("{sign}{digits}.{f:02}"),
    }
}

/// `YYYY-MM-DD` of microseconds since the epoch (UTC), without a date library.
fn date(us: i64) -> String {
    let days = us.div_euclid(86_400_000_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// An x value: its sort key (numbers and times sort, text keeps query order) and label.
fn x_value(column: &Column, i: usize) -> (Option<f64>, String) {
    match column.get(i) {
        Value::Null => (None, "(null)".into()),
        Value::TimestampUs(us) => (Some(us as f64), date(us)),
        Value::Int64(v) => (Some(v as f64), v.to_string()),
        Value::Float64(v) => (Some(v), format_number(v)),
        Value::Boolean(b) => (None, b.to_string()),
        Value::Str(s) | Value::Json(s) => (None, s.to_owned()),
    }
}

/// One bar: its label, where it starts and ends on the value axis, and its kind.
#[derive(Debug, PartialEq)]
pub struct Step {
    /// The x label.
    pub label: String,
    /// Running total before the step (0 for the total bar).
    pub from: f64,
    /// Running total after it.
    pub to: f64,
    /// `increase`, `decrease` or `total`.
    pub kind: &'static str,
}

/// The steps of `(label, change)` pairs, plus the total bar.
pub fn steps(changes: &[(String, f64)]) -> Vec<Step> {
    let mut total = 0.0;
    let mut out: Vec<Step> = changes
        .iter()
        .map(|(label, change)| {
            let from = total;
            total += change;
            Step {
                label: label.clone(),
                from,
                to: total,
                kind: if *change < 0.0 {
                    "decrease"
                } else {
                    "increase"
                },
            }
        })
        .collect();
    out.push(Step {
        label: "Total".into(),
        from: 0.0,
        to: total,
        kind: "total",
    });
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart as SVG, increases in Superset's green.
pub fn draw(title: &str, steps: &[Step], size: Size) -> String {
    draw_with(title, steps, size, INCREASE)
}

/// The chart as SVG, increases in `increase`.
pub fn draw_with(title: &str, steps: &[Step], size: Size, increase: &str) -> String {
    let (w, h) = (f64::from(size.width), f64::from(size.height));
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
    );
    let top = if title.is_empty() {
        12.0
    } else {
        let _ = write!(
            s,
            r##"<text class="title" x="10" y="20" font-size="15" font-weight="bold" fill="#333">{}</text>"##,
            esc(title)
        );
        36.0
    };
    let (left, right, bottom) = (64.0, 12.0, 40.0);
    let plot_h = (h - top - bottom).max(10.0);
    let plot_w = (w - left - right).max(10.0);
    let lo = steps
        .iter()
        .flat_map(|s| [s.from, s.to])
        .fold(0.0, f64::min);
    let hi = steps
        .iter()
        .flat_map(|s| [s.from, s.to])
        .fold(0.0, f64::max);
    let ticks = nice_ticks(lo, hi, 5);
    let (t0, t1) = (ticks[0], ticks[ticks.len() - 1]);
    let y = |v: f64| top + plot_h - (v - t0) / (t1 - t0) * plot_h;

    s.push_str(r#"<g class="y-axis">"#);
    for t in &ticks {
        let _ = write!(
            s,
            r##"<line class="grid" x1="{left}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text class="tick-label" x="{tx}" y="{ty:.1}" text-anchor="end" fill="#666">{label}</text>"##,
            x2 = left + plot_w,
            y = y(*t),
            tx = left - 6.0,
            ty = y(*t) + 4.0,
            label = format_number(*t),
        );
    }
    s.push_str("</g>");

    let band = plot_w / steps.len().max(1) as f64;
    let bar_w = band * 0.7;
    s.push_str(r#"<g class="x-axis">"#);
    let _ = write!(
        s,
        r##"<line x1="{left}" x2="{x2}" y1="{y0:.1}" y2="{y0:.1}" stroke="#999"/>"##,
        x2 = left + plot_w,
        y0 = y(0.0)
    );
    for (i, st) in steps.iter().enumerate() {
        let _ = write!(
            s,
            r##"<text class="tick-label" x="{x:.1}" y="{ly:.1}" text-anchor="middle" fill="#666">{l}</text>"##,
            x = left + band * (i as f64 + 0.5),
            ly = top + plot_h + 16.0,
            l = esc(&st.label)
        );
    }
    s.push_str("</g>");

    for (i, st) in steps.iter().enumerate() {
        let colour = match st.kind {
            "increase" => increase,
            "decrease" => DECREASE,
            _ => TOTAL,
        };
        let (a, b) = (y(st.from), y(st.to));
        let x = left + band * i as f64 + (band - bar_w) / 2.0;
        let change = if st.kind == "total" {
            format_number(st.to)
        } else {
            let d = st.to - st.from;
            format!("{}{}", if d >= 0.0 { "+" } else { "" }, format_number(d))
        };
        let _ = write!(
            s,
            r##"<g class="bar {kind}" data-name="{n}"><rect x="{x:.1}" y="{ry:.1}" width="{bar_w:.1}" height="{rh:.1}" fill="{colour}"/><text class="value-label" x="{cx:.1}" y="{vy:.1}" text-anchor="middle" fill="#333">{change}</text></g>"##,
            kind = st.kind,
            n = esc(&st.label),
            ry = a.min(b),
            rh = (a - b).abs().max(1.0),
            cx = x + bar_w / 2.0,
            vy = a.min(b) - 4.0,
        );
    }
    s.push_str("</svg>");
    s
}

impl Viz for Waterfall {
    fn info() -> PluginInfo {
        PluginInfo::viz("waterfall", env!("CARGO_PKG_VERSION"), ["waterfall"])
            .label("Waterfall")
            .description("How a metric builds up step by step: increases, decreases and total")
    }

    fn build_query(_ctx: &Invocation, form_data: &str) -> Result<String, PluginError> {
        let form = parse(form_data)?;
        let metric = metric(&form)?.clone();
        let (x, breakdown) = x_axis(&form)?;
        let mut x_col = match &x {
            Json::String(name) => {
                json!({"columnType": "BASE_AXIS", "expressionType": "SQL", "sqlExpression": name, "label": name})
            }
            other => {
                let mut c = other.clone();
                c["columnType"] = json!("BASE_AXIS");
                c
            }
        };
        if let Some(grain) = form.get("time_grain_sqla").and_then(Json::as_str) {
            x_col["timeGrain"] = json!(grain);
        }
        let mut columns = vec![x_col];
        columns.extend(breakdown);
        let (simple, sql) = filters(&form);
        let mut query = json!({
            "columns": columns,
            "metrics": [metric],
            "filters": simple,
            "row_limit": form.get("row_limit").and_then(Json::as_u64).unwrap_or(10_000),
        });
        if !sql.is_empty() {
            query["extras"] = json!({"where": sql.join(" AND ")});
        }
        if let Some(tr) = form.get("time_range").and_then(Json::as_str) {
            query["time_range"] = json!(tr);
        }
        Ok(json!({
            "queries": [query],
            "form_data": form,
            "result_format": "json",
            "result_type": "full",
        })
        .to_string())
    }

    fn render(
        _ctx: &Invocation,
        form_data: &str,
        results: Vec<QueryResult>,
        size: Size,
    ) -> Result<ChartOutput, PluginError> {
        let form = parse(form_data)?;
        let table = &results
            .first()
            .ok_or_else(|| PluginError::invalid_input("no query results"))?
            .data;
        let metric_label = label(metric(&form)?)
            .ok_or_else(|| PluginError::invalid_params("the metric has no label"))?;
        let (x, _) = x_axis(&form)?;
        let x_label =
            label(&x).ok_or_else(|| PluginError::invalid_params("the x axis has no label"))?;
        let values = table.column(&metric_label).ok_or_else(|| {
            PluginError::invalid_input(format!("the results have no column `{metric_label}`"))
        })?;
        let xs = table.column(&x_label).ok_or_else(|| {
            PluginError::invalid_input(format!("the results have no column `{x_label}`"))
        })?;
        // Sum per x value (breakdown rows add up), first appearance order.
        let mut sums: Vec<(Option<f64>, String, f64)> = Vec::new();
        for i in 0..table.num_rows {
            let Some(v) = values.get(i).as_f64() else {
                continue;
            };
            let (key, text) = x_value(xs, i);
            match sums.iter_mut().find(|(_, t, _)| *t == text) {
                Some(entry) => entry.2 += v,
                None => sums.push((key, text, v)),
            }
        }
        if sums.iter().all(|(k, _, _)| k.is_some()) {
            sums.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        }
        let changes: Vec<(String, f64)> = sums.into_iter().map(|(_, t, v)| (t, v)).collect();
        let title = form.get("slice_name").and_then(Json::as_str).unwrap_or("");
        let options = Options::from_form(&form);
        let mut steps = steps(&changes);
        if options.show_total {
            if let Some(total) = steps.last_mut() {
                total.label = options.total_label;
            }
        } else {
            steps.pop();
        }
        Ok(ChartOutput::svg(draw_with(
            title,
            &steps,
            size,
            options.increase_color,
        )))
    }

    fn chart_types() -> Vec<ChartType> {
        vec![
            ChartType::new("waterfall", "Waterfall (Liteset)")
                .description(
                    "How a metric builds up step by step: increases, decreases and the total, \
                     one floating bar per x value",
                )
                .category("Evolution")
                .tags(["Liteset", "Comparison"])
                .thumbnail(THUMBNAIL)
                .section(
                    Section::new("Query")
                        .expanded(true)
                        .row([Shared::XAxis])
                        .row([Shared::TimeGrainSqla])
                        .row([Shared::Groupby])
                        .row([Shared::Metric])
                        .row([Shared::AdhocFilters])
                        .row([Shared::RowLimit]),
                )
                .section(
                    Section::new("Chart options")
                        .expanded(true)
                        .row([Control::checkbox("show_total", "Show total")
                            .default(true)
                            .description("Draw the final bar with the running total")])
                        .row([Control::text("total_label", "Total label")
                            .default("Total")
                            .description("The x label of the total bar")])
                        .row([Control::select(
                            "increase_color",
                            "Increase colour",
                            INCREASE_COLORS,
                        )
                        .default(INCREASE)
                        .description("The colour of bars that increase the total")]),
                ),
        ]
    }
}

liteset_sdk::export_viz!(Waterfall);

#[cfg(test)]
mod tests {
    use super::*;
    use liteset_sdk::testing::{run_build_query, run_render, table, viz_info};

    fn render(form: Json, data: liteset_sdk::Table) -> String {
        run_render::<Waterfall>(
            &form.to_string(),
            vec![QueryResult {
                query_index: 0,
                data,
            }],
            Size {
                width: 600,
                height: 400,
            },
        )
        .unwrap()
        .svg
        .unwrap()
    }

    #[test]
    fn builds_a_query_with_the_x_axis_first() {
        let form = json!({
            "metric": "revenue", "x_axis": "month", "time_grain_sqla": "P1M",
            "groupby": ["region"], "time_range": "Last year",
            "adhoc_filters": [
                {"expressionType": "SIMPLE", "subject": "country", "operator": "==",
                 "comparator": "IE", "clause": "WHERE"},
                {"expressionType": "SQL", "sqlExpression": "amount > 0", "clause": "WHERE"}
            ]
        });
        let q: Json =
            serde_json::from_str(&run_build_query::<Waterfall>(&form.to_string()).unwrap())
                .unwrap();
        let q = &q["queries"][0];
        assert_eq!(q["columns"][0]["columnType"], "BASE_AXIS");
        assert_eq!(q["columns"][0]["timeGrain"], "P1M");
        assert_eq!(q["columns"][1], "region");
        assert_eq!(q["metrics"], json!(["revenue"]));
        assert_eq!(
            q["filters"],
            json!([{"col": "country", "op": "==", "val": "IE"}])
        );
        assert_eq!(q["extras"]["where"], "(amount > 0)");
        assert_eq!(q["time_range"], "Last year");
    }

    #[test]
    fn old_charts_name_the_x_axis_in_groupby() {
        let form = json!({"metric": "m", "groupby": ["step"]});
        let q: Json =
            serde_json::from_str(&run_build_query::<Waterfall>(&form.to_string()).unwrap())
                .unwrap();
        assert_eq!(q["queries"][0]["columns"].as_array().unwrap().len(), 1);
        let err = run_build_query::<Waterfall>(r#"{"x_axis":"a"}"#).unwrap_err();
        assert_eq!(
            err,
            PluginError::invalid_params("a waterfall chart needs a `metric`")
        );
    }

    #[test]
    fn steps_run_from_the_previous_total() {
        let s = steps(&[("a".into(), 10.0), ("b".into(), -4.0)]);
        assert_eq!(
            s[1],
            Step {
                label: "b".into(),
                from: 10.0,
                to: 6.0,
                kind: "decrease"
            }
        );
        assert_eq!(
            s[2],
            Step {
                label: "Total".into(),
                from: 0.0,
                to: 6.0,
                kind: "total"
            }
        );
    }

    #[test]
    fn ticks_are_nice() {
        assert_eq!(
            nice_ticks(0.0, 87.0, 5),
            [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(
            nice_ticks(-3.0, 7.0, 5),
            [-4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0]
        );
        assert_eq!(nice_ticks(5.0, 5.0, 5), [4.0, 4.5, 5.0, 5.5, 6.0]);
        assert_eq!(format_number(1234567.0), "1,234,567");
        assert_eq!(format_number(-2.5), "-2.5");
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(1_709_251_200_000_000), "2024-03-01");
    }

    #[test]
    fn draws_increases_decreases_and_the_total() {
        let form = json!({"metric": {"expressionType": "SQL", "sqlExpression": "SUM(x)", "label": "delta"},
                          "x_axis": "month", "groupby": ["region"], "slice_name": "Cash <flow>"});
        // Breakdown rows of one month add up; months are sorted.
        let data = table! {
            "month" => timestamp_us [1_709_251_200_000_000, 1_704_067_200_000_000, 1_704_067_200_000_000],
            "region" => utf8 [Some("n"), Some("n"), Some("s")],
            "delta" => float64 [Some(-30.0), Some(100.0), Some(20.0)],
        };
        let svg = render(form, data);
        let doc = bars(&svg);
        assert_eq!(
            doc,
            [
                "increase:2024-01-01:+120",
                "decrease:2024-03-01:-30",
                "total:Total:90"
            ],
            "{svg}"
        );
        assert!(svg.contains(INCREASE) && svg.contains(DECREASE) && svg.contains(TOTAL));
        assert!(svg.contains("Cash &lt;flow&gt;"));
        assert!(
            svg.contains(r#"class="y-axis""#) && svg.contains(">150<"),
            "{svg}"
        );
    }

    /// `kind:label:change` of each bar, read from the SVG text.
    fn bars(svg: &str) -> Vec<String> {
        svg.split(r#"<g class="bar "#)
            .skip(1)
            .map(|g| {
                let kind = &g[..g.find('"').unwrap()];
                let name = g.split(r#"data-name=""#).nth(1).unwrap();
                let name = &name[..name.find('"').unwrap()];
                let change = g.split(r##"fill="#333">"##).nth(1).unwrap();
                let change = &change[..change.find('<').unwrap()];
                format!("{kind}:{name}:{change}")
            })
            .collect()
    }

    #[test]
    fn missing_columns_are_the_inputs_fault() {
        let err = run_render::<Waterfall>(
            r#"{"metric":"m","x_axis":"x"}"#,
            vec![QueryResult {
                query_index: 0,
                data: table! { "x" => int64 [1] },
            }],
            Size {
                width: 100,
                height: 100,
            },
        )
        .unwrap_err();
        assert_eq!(
            err,
            PluginError::invalid_input("the results have no column `m`")
        );
    }

    #[test]
    fn info_is_installable() {
        assert_eq!(viz_info::<Waterfall>().unwrap().viz_types, ["waterfall"]);
    }

    fn sample() -> (Json, liteset_sdk::Table) {
        let form = json!({"metric": "delta", "x_axis": "step"});
        let data = table! {
            "step" => utf8 [Some("a"), Some("b")],
            "delta" => float64 [Some(10.0), Some(-4.0)],
        };
        (form, data)
    }

    fn with(mut form: Json, key: &str, value: Json) -> Json {
        form[key] = value;
        form
    }

    #[test]
    fn show_total_false_omits_the_total_bar() {
        let (form, data) = sample();
        let all = render(form.clone(), data.clone());
        assert_eq!(
            bars(&all),
            ["increase:a:+10", "decrease:b:-4", "total:Total:6"]
        );
        let svg = render(with(form, "show_total", json!(false)), data);
        assert_eq!(bars(&svg), ["increase:a:+10", "decrease:b:-4"], "{svg}");
        assert!(!svg.contains(TOTAL) && !svg.contains(">Total<"), "{svg}");
    }

    #[test]
    fn total_label_names_the_total_bar() {
        let (form, data) = sample();
        let svg = render(with(form, "total_label", json!("Net <cash>")), data);
        assert_eq!(
            bars(&svg),
            [
                "increase:a:+10",
                "decrease:b:-4",
                "total:Net &lt;cash&gt;:6"
            ]
        );
        assert!(svg.contains(">Net &lt;cash&gt;<"), "{svg}");
    }

    #[test]
    fn increase_color_takes_only_the_offered_colours() {
        let (form, data) = sample();
        let blue = render(
            with(form.clone(), "increase_color", json!("#1F77B4")),
            data.clone(),
        );
        assert!(
            blue.contains(r##"fill="#1F77B4""##) && !blue.contains(INCREASE),
            "{blue}"
        );
        let forged = with(form.clone(), "increase_color", json!("red\"/><script/>"));
        assert_eq!(render(forged, data.clone()), render(form, data));
    }

    #[test]
    fn the_chart_type_describes_the_options_render_reads() {
        let types = liteset_sdk::testing::chart_types::<Waterfall>().unwrap();
        assert_eq!(types.len(), 1);
        let t = &types[0];
        assert_eq!(
            (t.viz_type.as_str(), t.name.as_str(), t.category.as_str()),
            ("waterfall", "Waterfall (Liteset)", "Evolution")
        );
        assert_eq!(t.tags, ["Liteset", "Comparison"]);
        assert!(
            t.thumbnail
                .as_deref()
                .is_some_and(|s| s.starts_with("<svg"))
        );
        let names: Vec<String> = t.sections[1]
            .rows
            .iter()
            .flatten()
            .map(|c| match c {
                Control::Checkbox(c) => format!("{}={}", c.name, c.default),
                Control::Text(c) => format!("{}={}", c.name, c.default),
                Control::Select(c) => format!("{}={}", c.name, c.default),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "show_total=true",
                "total_label=Total",
                "increase_color=#5AC189"
            ]
        );
        // The defaults the panel shows are what render uses when the keys are absent.
        assert_eq!(Options::from_form(&Map::new()), Options::default());
    }
}
