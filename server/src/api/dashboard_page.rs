//! The HTML of `/dashboard/<id_or_slug>/`: Superset's dashboard layout (`position_json`, a
//! flat map of components: ROOT → GRID or TABS → ROW/COLUMN → CHART, MARKDOWN, HEADER,
//! DIVIDER) rendered as a static page whose charts are `<img>`s of `render.svg`.
//!
//! Charts are images, not inline SVG: the browser then never runs anything in them even if the
//! sanitiser missed something, and their ids cannot collide. Everything from the layout is
//! escaped; only charts attached to the dashboard are shown.

use std::collections::HashSet;
use std::fmt::Write as _;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value as Json;

/// Superset's grid: 12 columns, heights in units of 8 px, a 16 px gutter.
const GRID_COLUMNS: f64 = 12.0;
const GRID_BASE_UNIT: f64 = 8.0;
const GUTTER: f64 = 16.0;
/// Width of the grid, in CSS pixels.
const GRID_WIDTH: f64 = 1200.0;
/// Deepest component nesting followed.
const MAX_DEPTH: usize = 16;

/// Percent-encodes a path segment or query value.
pub fn url_escape(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

fn width_px(units: f64) -> u32 {
    let unit = (GRID_WIDTH + GUTTER) / GRID_COLUMNS;
    (units.clamp(1.0, GRID_COLUMNS) * unit - GUTTER).round() as u32
}

fn height_px(units: f64) -> u32 {
    (units * GRID_BASE_UNIT).clamp(120.0, 2000.0).round() as u32
}

struct Layout<'a> {
    position: &'a serde_json::Map<String, Json>,
    /// (id, uuid, name) of the dashboard's charts.
    charts: &'a [(i64, String, String)],
    placed: HashSet<i64>,
    visited: HashSet<String>,
}

impl Layout<'_> {
    fn chart_card(&mut self, id: i64, name: &str, w: u32, h: u32) -> String {
        self.placed.insert(id);
        format!(
            r#"<figure class="chart" style="width:{w}px"><img src="/api/v1/chart/{id}/render.svg?width={w}&amp;height={h}" width="{w}" height="{h}" alt="{alt}" loading="lazy"></figure>"#,
            alt = esc(name)
        )
    }

    fn component(&mut self, key: &str, depth: usize, out: &mut String) {
        if depth > MAX_DEPTH || !self.visited.insert(key.to_owned()) {
            return;
        }
        let Some(c) = self.position.get(key) else {
            return;
        };
        let meta = &c["meta"];
        let children: Vec<String> = c["children"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let kind = c["type"].as_str().unwrap_or_default();
        let mut inner = String::new();
        for child in &children {
            self.component(child, depth + 1, &mut inner);
        }
        match kind {
            "ROW" => {
                let _ = write!(out, r#"<div class="row">{inner}</div>"#);
            }
            "COLUMN" => {
                let w = width_px(meta["width"].as_f64().unwrap_or(4.0));
                let _ = write!(
                    out,
                    r#"<div class="column" style="width:{w}px">{inner}</div>"#
                );
            }
            "TABS" => {
                let _ = write!(out, r#"<div class="tabs">{inner}</div>"#);
            }
            "TAB" => {
                let title = esc(meta["text"].as_str().unwrap_or_default());
                let _ = write!(
                    out,
                    r#"<section class="tab"><h2>{title}</h2>{inner}</section>"#
                );
            }
            "HEADER" => {
                let text = esc(meta["text"].as_str().unwrap_or_default());
                let _ = write!(out, "<h2>{text}</h2>{inner}");
            }
            "DIVIDER" => out.push_str("<hr>"),
            "MARKDOWN" => {
                let w = width_px(meta["width"].as_f64().unwrap_or(4.0));
                let code = esc(meta["code"].as_str().unwrap_or_default());
                let _ = write!(
                    out,
                    r#"<div class="markdown" style="width:{w}px">{code}</div>"#
                );
            }
            "CHART" => {
                let by_id = meta["chartId"].as_i64();
                let by_uuid = meta["uuid"].as_str();
                let found = self
                    .charts
                    .iter()
                    .find(|(id, uuid, _)| {
                        Some(*id) == by_id || (by_id.is_none() && by_uuid == Some(uuid.as_str()))
                    })
                    .cloned();
                if let Some((id, _, name)) = found {
                    let w = width_px(meta["width"].as_f64().unwrap_or(4.0));
                    let h = height_px(meta["height"].as_f64().unwrap_or(50.0));
                    out.push_str(&self.chart_card(id, &name, w, h));
                }
            }
            // ROOT, GRID and anything unknown: just their children.
            _ => out.push_str(&inner),
        }
    }
}

/// The dashboard page.
pub fn page(title: &str, position_json: &str, charts: &[(i64, String, String)]) -> String {
    let position: serde_json::Map<String, Json> = serde_json::from_str(position_json)
        .ok()
        .and_then(|v: Json| v.as_object().cloned())
        .unwrap_or_default();
    let mut layout = Layout {
        position: &position,
        charts,
        placed: HashSet::new(),
        visited: HashSet::new(),
    };
    let mut body = String::new();
    layout.component("ROOT_ID", 0, &mut body);
    // Charts of the dashboard the layout does not place (or no layout at all): two per row.
    let rest: Vec<(i64, String, String)> = charts
        .iter()
        .filter(|(id, _, _)| !layout.placed.contains(id))
        .cloned()
        .collect();
    for pair in rest.chunks(2) {
        body.push_str(r#"<div class="row">"#);
        for (id, _, name) in pair {
            let card = layout.chart_card(*id, name, width_px(6.0), height_px(50.0));
            body.push_str(&card);
        }
        body.push_str("</div>");
    }
    if charts.is_empty() {
        body.push_str(r#"<p class="empty">This dashboard has no charts yet.</p>"#);
    }
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - Liteset</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{{font-family:Inter,"Helvetica Neue",Arial,sans-serif;background:#f7f7f7;color:#1f1f1f;margin:0}}
header{{background:#fff;border-bottom:1px solid #e0e0e0;padding:16px 24px}}
header h1{{font-size:22px;font-weight:600;margin:0}}
main{{max-width:{grid}px;margin:16px auto;padding:0 16px}}
.row{{display:flex;flex-wrap:wrap;gap:{gutter}px;margin-bottom:{gutter}px;align-items:flex-start}}
.column{{display:flex;flex-direction:column;gap:{gutter}px}}
.chart{{margin:0;background:#fff;border:1px solid #e0e0e0;border-radius:4px;overflow:hidden;max-width:100%}}
.chart img{{display:block;max-width:100%;height:auto}}
.markdown{{background:#fff;border:1px solid #e0e0e0;border-radius:4px;padding:12px;white-space:pre-wrap}}
h2{{font-size:18px;font-weight:600;margin:8px 0 12px}}
hr{{border:0;border-top:1px solid #e0e0e0;margin:8px 0 16px}}
.empty{{color:#666}}
</style></head>
<body><header><h1>{title}</h1></header>
<main>{body}</main></body></html>
"#,
        title = esc(title),
        grid = GRID_WIDTH + 2.0 * GUTTER,
        gutter = GUTTER,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lays_out_rows_by_position_and_escapes() {
        let position = serde_json::json!({
            "ROOT_ID": {"type": "ROOT", "children": ["GRID_ID"]},
            "GRID_ID": {"type": "GRID", "children": ["ROW-1", "ROW-2"]},
            "ROW-1": {"type": "ROW", "children": ["CHART-a", "CHART-b"]},
            "ROW-2": {"type": "ROW", "children": ["MARKDOWN-1", "ROW-1"]},
            "CHART-a": {"type": "CHART", "meta": {"chartId": 7, "width": 4, "height": 50}},
            "CHART-b": {"type": "CHART", "meta": {"uuid": "u-9", "width": 8, "height": 40}},
            "MARKDOWN-1": {"type": "MARKDOWN", "meta": {"code": "<script>x</script>", "width": 12}},
        });
        let charts = vec![
            (7, "u-7".to_owned(), "A <b>".to_owned()),
            (9, "u-9".to_owned(), "B".to_owned()),
            (11, "u-11".to_owned(), "Unplaced".to_owned()),
        ];
        let html = page("T & <i>", &position.to_string(), &charts);
        assert!(html.contains("<h1>T &amp; &lt;i&gt;</h1>"), "{html}");
        assert!(
            html.contains("/api/v1/chart/7/render.svg?width=389&amp;height=400"),
            "{html}"
        );
        assert!(
            html.contains("/api/v1/chart/9/render.svg?width=795&amp;height=320"),
            "{html}"
        );
        assert!(html.contains("/api/v1/chart/11/render.svg"), "{html}");
        assert!(html.contains("alt=\"A &lt;b&gt;\""), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        // ROW-1 is visited once even though ROW-2 names it again.
        assert_eq!(html.matches("/api/v1/chart/7/").count(), 1, "{html}");
    }
}
