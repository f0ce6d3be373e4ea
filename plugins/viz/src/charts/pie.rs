//! `pie`: the metric by category as slices (a donut when `donut` is set), labelled inside
//! (`label_type`: key, value, percent, key_value, key_percent), with a legend beside or above.

use liteset_sdk::{Size, Table};

use super::PAD;
use crate::data;
use crate::form::{Form, column_label, metric_label};
use crate::format;
use crate::svg::{self, Anchor, Font, Svg, TEXT, esc, n};

/// Dark or light text for a fill, by its luminance.
fn ink(fill: &str) -> &'static str {
    let hex = fill.trim_start_matches('#');
    let c = |i: usize| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0);
    let lum = 0.299 * f64::from(c(0)) + 0.587 * f64::from(c(2)) + 0.114 * f64::from(c(4));
    if lum > 165.0 { TEXT } else { "#FFFFFF" }
}

/// Draws the chart.
pub fn render(form: &Form, table: Option<&Table>, size: Size) -> String {
    let mut svg = Svg::new(size.width, size.height);
    let (w, h) = (svg.width(), svg.height());
    let mut top = PAD + svg::title(&mut svg, form.str("slice_name").unwrap_or(""), PAD);
    let metric = form.metrics().first().map(metric_label).unwrap_or_default();
    let groupby: Vec<String> = form.list("groupby").iter().map(column_label).collect();
    let mut slices: Vec<(String, f64)> = Vec::new();
    if let Some(t) = table {
        let value_col = t.column(&metric).or_else(|| {
            t.columns
                .iter()
                .rev()
                .find(|c| data::kind(c) == data::Kind::Number)
        });
        if let Some(vc) = value_col {
            let group_cols: Vec<_> = groupby.iter().filter_map(|g| t.column(g)).collect();
            for i in 0..t.num_rows {
                let Some(v) = data::number(vc, i).filter(|v| *v > 0.0) else {
                    continue;
                };
                let name = if group_cols.is_empty() {
                    form.verbose(&metric)
                } else {
                    group_cols
                        .iter()
                        .map(|c| data::text(c, i))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                slices.push((name, v));
            }
        }
    }
    let total: f64 = slices.iter().map(|s| s.1).sum();
    if slices.is_empty() || total <= 0.0 {
        svg::empty(&mut svg, top, "No results were returned for this query");
        return svg.finish();
    }
    let number_format = form.str("number_format").unwrap_or("SMART_NUMBER");
    let colors: Vec<&'static str> = (0..slices.len()).map(svg::color).collect();
    let items: Vec<(String, &'static str)> = slices
        .iter()
        .zip(&colors)
        .map(|((name, _), c)| (name.clone(), *c))
        .collect();

    // Legend: beside a wide chart, above a tall one.
    let show_legend = form.flag("show_legend", true);
    let side = show_legend && w > h * 1.25;
    let (mut left, mut right) = (PAD, w - PAD);
    if show_legend {
        if side {
            let widest = items
                .iter()
                .map(|(s, _)| svg::text_width(s, 12.0))
                .fold(0.0, f64::max)
                .min(w * 0.3);
            let legend_w = widest + 16.0 + 10.0;
            let rows = ((h - top - PAD) / 20.0).floor().max(1.0) as usize;
            let lx = w - PAD - legend_w;
            let lh = 20.0 * items.len().min(rows) as f64;
            let ly = top + ((h - top - PAD - lh) / 2.0).max(0.0);
            svg::legend(&mut svg, &items, lx, ly, legend_w, rows);
            right = lx - 16.0;
        } else {
            top += svg::legend(&mut svg, &items, PAD, top, w - 2.0 * PAD, 3) + 8.0;
        }
    }
    if !side {
        left = PAD;
    }
    let (cx, cy) = ((left + right) / 2.0, (top + h - PAD) / 2.0);
    let radius = ((right - left).min(h - PAD - top) / 2.0 - 4.0).max(8.0);
    let donut = form.flag("donut", false);
    let inner = if donut {
        radius * (form.int("innerRadius").unwrap_or(30) as f64 / 70.0).clamp(0.1, 0.9)
    } else {
        0.0
    };
    let label_type = form.str("label_type").unwrap_or("key");
    let show_labels = form.flag("show_labels", true);
    let mut angle = -std::f64::consts::FRAC_PI_2;
    svg.open("pie", "");
    for ((name, v), color) in slices.iter().zip(&colors) {
        let share = v / total;
        let sweep = share * std::f64::consts::TAU;
        let (a0, a1) = (angle, angle + sweep);
        angle = a1;
        let value_text = format::number(number_format, *v);
        let pct = format::number(".1%", share);
        svg.open("series slice", &format!(r#" data-name="{}""#, esc(name)));
        let tooltip = esc(&format!("{name}: {value_text} ({pct})"));
        if share >= 0.9999 {
            let d = if inner > 0.0 {
                format!(
                    "M{} {}a{r} {r} 0 1 0 {} 0a{r} {r} 0 1 0 {} 0ZM{} {}a{ir} {ir} 0 1 1 {} 0a{ir} {ir} 0 1 1 {} 0Z",
                    n(cx - radius),
                    n(cy),
                    n(2.0 * radius),
                    n(-2.0 * radius),
                    n(cx - inner),
                    n(cy),
                    n(2.0 * inner),
                    n(-2.0 * inner),
                    r = n(radius),
                    ir = n(inner)
                )
            } else {
                format!(
                    "M{} {}a{r} {r} 0 1 0 {} 0a{r} {r} 0 1 0 {} 0Z",
                    n(cx - radius),
                    n(cy),
                    n(2.0 * radius),
                    n(-2.0 * radius),
                    r = n(radius)
                )
            };
            svg.raw(&format!(
                r#"<path d="{d}" fill="{color}" fill-rule="evenodd"><title>{tooltip}</title></path>"#
            ));
        } else {
            let large = if sweep > std::f64::consts::PI { 1 } else { 0 };
            let p = |r: f64, a: f64| (cx + r * a.cos(), cy + r * a.sin());
            let (x0, y0) = p(radius, a0);
            let (x1, y1) = p(radius, a1);
            let d = if inner > 0.0 {
                let (ix1, iy1) = p(inner, a1);
                let (ix0, iy0) = p(inner, a0);
                format!(
                    "M{} {}A{r} {r} 0 {large} 1 {} {}L{} {}A{ir} {ir} 0 {large} 0 {} {}Z",
                    n(x0),
                    n(y0),
                    n(x1),
                    n(y1),
                    n(ix1),
                    n(iy1),
                    n(ix0),
                    n(iy0),
                    r = n(radius),
                    ir = n(inner)
                )
            } else {
                format!(
                    "M{} {}L{} {}A{r} {r} 0 {large} 1 {} {}Z",
                    n(cx),
                    n(cy),
                    n(x0),
                    n(y0),
                    n(x1),
                    n(y1),
                    r = n(radius)
                )
            };
            svg.raw(&format!(
                r##"<path d="{d}" fill="{color}" stroke="#FFFFFF" stroke-width="1.5" stroke-linejoin="round"><title>{tooltip}</title></path>"##
            ));
        }
        // The label inside the slice, when the slice is wide enough to hold it.
        if show_labels && sweep > 0.3 {
            let mid = (a0 + a1) / 2.0;
            let r_label = if inner > 0.0 {
                (radius + inner) / 2.0
            } else {
                radius * 0.62
            };
            let (lx, ly) = (cx + r_label * mid.cos(), cy + r_label * mid.sin());
            let room = (2.0 * r_label * (sweep / 2.0).sin()).min(radius * 0.9) - 6.0;
            let wanted = match label_type {
                "value" => value_text.clone(),
                "percent" => pct.clone(),
                "key_value" => format!("{name}: {value_text}"),
                "key_percent" => format!("{name}: {pct}"),
                _ => name.clone(),
            };
            let text = if svg::text_width(&wanted, 12.0) <= room {
                wanted
            } else {
                pct.clone()
            };
            if svg::text_width(&text, 12.0) <= room.max(36.0) {
                svg.text(
                    lx,
                    ly + 4.0,
                    &text,
                    Font::new(12.0, ink(color))
                        .weight(600)
                        .anchor(Anchor::Middle),
                    "slice-label",
                );
            }
        }
        svg.close();
    }
    if donut && form.flag("show_total", false) {
        svg.text(
            cx,
            cy + 6.0,
            &format::number(number_format, total),
            Font::new((inner * 0.45).clamp(10.0, 28.0), TEXT)
                .weight(700)
                .anchor(Anchor::Middle),
            "total",
        );
    }
    svg.close();
    svg.finish()
}
