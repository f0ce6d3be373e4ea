//! `big_number_total`: one number, as large as the chart allows, with an optional subheader.

use liteset_sdk::{Size, Table};

use super::PAD;
use crate::data;
use crate::form::{Form, metric_label};
use crate::format;
use crate::svg::{self, Anchor, Font, MUTED, Svg, TEXT};

/// Draws the chart.
pub fn render(form: &Form, table: Option<&Table>, size: Size) -> String {
    let mut svg = Svg::new(size.width, size.height);
    let top = PAD + svg::title(&mut svg, form.str("slice_name").unwrap_or(""), PAD);
    let label = form.metrics().first().map(metric_label).unwrap_or_default();
    let value = table.and_then(|t| {
        let col = t.column(&label).or_else(|| {
            t.columns
                .iter()
                .find(|c| data::kind(c) == data::Kind::Number)
        })?;
        (t.num_rows > 0).then(|| data::number(col, 0)).flatten()
    });
    let Some(value) = value else {
        svg::empty(&mut svg, top, "No data");
        return svg.finish();
    };
    let text = format::number(form.str("y_axis_format").unwrap_or("SMART_NUMBER"), value);
    let subheader = form
        .str("subheader")
        .or_else(|| form.str("subtitle"))
        .unwrap_or("")
        .to_owned();
    let (w, h) = (svg.width(), svg.height());
    let free_h = (h - top - PAD).max(10.0);
    let sub_size = if subheader.is_empty() {
        0.0
    } else {
        (free_h * 0.12).clamp(11.0, 24.0)
    };
    // As large as the height allows (Superset's default header takes ~40% of the chart) and
    // no wider than the chart.
    let by_height = (free_h - sub_size * 1.8) * 0.45;
    let by_width = (w - 2.0 * PAD) / svg::text_width(&text, 1.0).max(0.5);
    let size_px = by_height.min(by_width).clamp(10.0, 200.0);
    let block = size_px + if sub_size > 0.0 { sub_size * 1.8 } else { 0.0 };
    let baseline = top + (free_h - block) / 2.0 + size_px * 0.85;
    svg.open("big-number", &format!(r#" data-value="{value}""#));
    svg.tooltip(&format!(
        "{}: {}",
        form.verbose(&label),
        format::number(",.2f", value)
    ));
    svg.text(
        w / 2.0,
        baseline,
        &text,
        Font::new(size_px, TEXT).weight(700).anchor(Anchor::Middle),
        "value",
    );
    svg.close();
    if !subheader.is_empty() {
        let fitted = svg::fit(&subheader, sub_size, w - 2.0 * PAD);
        svg.text(
            w / 2.0,
            baseline + size_px * 0.15 + sub_size * 1.4,
            &fitted,
            Font::new(sub_size, MUTED).anchor(Anchor::Middle),
            "subheader",
        );
    }
    svg.finish()
}
