//! `table`: the result rows as a table: a bold header of verbose names, numbers right-aligned
//! and formatted (with Superset's cell bars behind metric values), as many rows as fit and a
//! footer saying how many did not.

use liteset_sdk::{Column, Size, Table};

use super::PAD;
use crate::data::{self, Kind};
use crate::form::{Form, metric_label};
use crate::format;
use crate::svg::{self, Anchor, Font, MUTED, Svg, TEXT};

const FONT: f64 = 13.0;
const ROW_H: f64 = 32.0;
const HEADER_H: f64 = 36.0;
const CELL_PAD: f64 = 10.0;

/// The d3 format of a numeric column: the column's own config, percent metrics as
/// percentages, integers with thousands separators, others with two decimals.
fn number_format(form: &Form, c: &Column, percent: &[String]) -> String {
    if let Some(f) = form
        .get("column_config")
        .and_then(|cc| cc.get(&c.name))
        .and_then(|cfg| cfg.get("d3NumberFormat"))
        .and_then(|f| f.as_str())
        .filter(|f| !f.is_empty())
    {
        return f.to_owned();
    }
    if percent.contains(&c.name) {
        return ".1%".into();
    }
    let ints = (0..c.len()).all(|i| data::number(c, i).is_none_or(|v| v.fract() == 0.0));
    if ints { ",d".into() } else { ",.2f".into() }
}

fn cell(form: &Form, c: &Column, i: usize, fmt: &str) -> String {
    match data::kind(c) {
        Kind::Number => data::number(c, i).map_or_else(|| "N/A".into(), |v| format::number(fmt, v)),
        Kind::Time => data::time_ms(c, i).map_or_else(
            || "N/A".into(),
            |ms| match form.str("table_timestamp_format") {
                Some(f) if f != "smart_date" => format::time(f, ms),
                _ => format::datetime(ms),
            },
        ),
        Kind::Text => data::text(c, i),
    }
}

/// Draws the chart.
pub fn render(form: &Form, table: Option<&Table>, size: Size) -> String {
    let mut svg = Svg::new(size.width, size.height);
    let (w, h) = (svg.width(), svg.height());
    let top = PAD + svg::title(&mut svg, form.str("slice_name").unwrap_or(""), PAD);
    let Some(t) = table.filter(|t| !t.columns.is_empty()) else {
        svg::empty(&mut svg, top, "No results were returned for this query");
        return svg.finish();
    };
    let total_rows = t.num_rows;
    let footer_h = 24.0;
    let fit_rows = ((h - top - PAD - HEADER_H - footer_h) / ROW_H)
        .floor()
        .max(0.0) as usize;
    let shown = total_rows.min(fit_rows);
    let percent: Vec<String> = form
        .list("percent_metrics")
        .iter()
        .map(metric_label)
        .collect();
    let formats: Vec<String> = t
        .columns
        .iter()
        .map(|c| number_format(form, c, &percent))
        .collect();
    let headers: Vec<String> = t.columns.iter().map(|c| form.verbose(&c.name)).collect();
    let cells: Vec<Vec<String>> = t
        .columns
        .iter()
        .zip(&formats)
        .map(|(c, f)| (0..shown).map(|i| cell(form, c, i, f)).collect())
        .collect();
    // Column widths: the widest content, shrunk proportionally (text cut with an ellipsis)
    // when the table is too wide, stretched to the full width otherwise.
    let avail = w - 2.0 * PAD;
    let mut widths: Vec<f64> = headers
        .iter()
        .zip(&cells)
        .map(|(hd, col)| {
            let content = col
                .iter()
                .map(|s| svg::text_width(s, FONT))
                .fold(svg::text_width(hd, FONT) * 1.05, f64::max);
            (content + 2.0 * CELL_PAD).clamp(48.0, 420.0)
        })
        .collect();
    let sum: f64 = widths.iter().sum();
    let scale = avail / sum;
    for wd in &mut widths {
        *wd *= scale;
    }
    let xs: Vec<f64> = widths
        .iter()
        .scan(PAD, |x, wd| {
            let at = *x;
            *x += wd;
            Some(at)
        })
        .collect();

    // Header.
    svg.open("header", "");
    svg.rect(PAD, top, avail, HEADER_H, "#F7F7F7", "");
    svg.line(
        PAD,
        top + HEADER_H,
        PAD + avail,
        top + HEADER_H,
        "#CFD2D8",
        r#" stroke-width="1""#,
    );
    for (i, hd) in headers.iter().enumerate() {
        let numeric = data::kind(&t.columns[i]) == Kind::Number;
        let label = svg::fit(hd, FONT, widths[i] - 2.0 * CELL_PAD);
        let (x, anchor) = if numeric {
            (xs[i] + widths[i] - CELL_PAD, Anchor::End)
        } else {
            (xs[i] + CELL_PAD, Anchor::Start)
        };
        svg.text(
            x,
            top + HEADER_H / 2.0 + FONT * 0.36,
            &label,
            Font::new(FONT, TEXT).weight(600).anchor(anchor),
            "th",
        );
    }
    svg.close();

    // Cell bars scale by each metric column's largest magnitude.
    let show_bars = form.flag("show_cell_bars", true);
    let maxima: Vec<f64> = t
        .columns
        .iter()
        .map(|c| {
            (0..shown)
                .filter_map(|i| data::number(c, i))
                .fold(0.0, |m: f64, v| m.max(v.abs()))
        })
        .collect();
    let metric_cols: Vec<String> = form.metrics().iter().map(metric_label).collect();
    svg.open("body", "");
    #[allow(clippy::needless_range_loop)] // r indexes the rows of several columns
    for r in 0..shown {
        let y = top + HEADER_H + r as f64 * ROW_H;
        svg.open("row", "");
        for (i, c) in t.columns.iter().enumerate() {
            let text = &cells[i][r];
            let numeric = data::kind(c) == Kind::Number;
            if numeric
                && show_bars
                && metric_cols.contains(&c.name)
                && maxima[i] > 0.0
                && let Some(v) = data::number(c, r)
            {
                let bw = (widths[i] - 8.0) * v.abs() / maxima[i];
                svg.rect(
                    xs[i] + 4.0,
                    y + 4.0,
                    bw,
                    ROW_H - 8.0,
                    "#E6EBF0",
                    r#" rx="2""#,
                );
            }
            let fitted = svg::fit(text, FONT, widths[i] - 2.0 * CELL_PAD);
            let (x, anchor) = if numeric {
                (xs[i] + widths[i] - CELL_PAD, Anchor::End)
            } else {
                (xs[i] + CELL_PAD, Anchor::Start)
            };
            let color = if text == "N/A" || text == "<NULL>" {
                MUTED
            } else {
                TEXT
            };
            svg.text(
                x,
                y + ROW_H / 2.0 + FONT * 0.36,
                &fitted,
                Font::new(FONT, color).anchor(anchor),
                "td",
            );
        }
        svg.line(
            PAD,
            y + ROW_H,
            PAD + avail,
            y + ROW_H,
            "#EDEEF0",
            r#" stroke-width="1""#,
        );
        svg.close();
    }
    svg.close();
    let footer_y = top + HEADER_H + shown as f64 * ROW_H + 18.0;
    let footer = if shown < total_rows {
        format!(
            "Showing {} of {} rows",
            format::number(",d", shown as f64),
            format::number(",d", total_rows as f64)
        )
    } else {
        format!(
            "{} row{}",
            format::number(",d", total_rows as f64),
            if total_rows == 1 { "" } else { "s" }
        )
    };
    svg.raw(&format!(
        r#"<g class="footer" data-rows="{total_rows}" data-shown="{shown}">"#
    ));
    svg.text(
        PAD,
        footer_y.min(h - 6.0),
        &footer,
        Font::new(12.0, MUTED),
        "",
    );
    svg.close();
    svg.finish()
}
