//! `echarts_timeseries_line` and `echarts_timeseries_bar`: series over an x axis (time, number
//! or category), with a legend, nice value ticks, calendar time ticks and grid lines, in the
//! look of Superset's ECharts defaults.
//!
//! Results arrive either pivoted (what the chart's own query makes: the x column, then one
//! column per series named `metric` or `metric, group...`) or long (a saved query context
//! without post-processing: x, group-by columns, metrics); both are read.

use std::collections::HashMap;

use liteset_sdk::{Column, Size, Table};

use super::PAD;
use crate::data::{self, Kind};
use crate::form::{Form, column_label, metric_label, x_axis_label};
use crate::format;
use crate::scale::{self, Linear};
use crate::svg::{self, AXIS, Anchor, Font, GRID, MUTED, Svg, esc, n};

/// One x position.
#[derive(Debug, Clone, PartialEq)]
enum X {
    Time(i64),
    Num(f64),
    Text(String),
}

struct Series {
    name: String,
    values: Vec<Option<f64>>,
}

/// Series and x values read from the results.
struct Data {
    xs: Vec<X>,
    kind: Kind,
    series: Vec<Series>,
}

fn x_of(c: &Column, i: usize) -> X {
    match data::kind(c) {
        Kind::Time => data::time_ms(c, i).map_or(X::Text("<NULL>".into()), X::Time),
        Kind::Number => data::number(c, i).map_or(X::Text("<NULL>".into()), X::Num),
        Kind::Text => X::Text(data::text(c, i)),
    }
}

/// A flattened column name (`metric` or `metric, group`) with the metric's verbose name.
fn display_name(form: &Form, name: &str, metrics: &[String]) -> String {
    for m in metrics {
        if name == m {
            return form.verbose(m);
        }
        if let Some(rest) = name
            .strip_prefix(m.as_str())
            .and_then(|r| r.strip_prefix(", "))
        {
            return format!("{}, {rest}", form.verbose(m));
        }
    }
    name.to_owned()
}

fn read(form: &Form, t: &Table) -> Data {
    let x_label = x_axis_label(form);
    let x_col = t
        .column(&x_label)
        .or_else(|| t.columns.iter().find(|c| data::kind(c) == Kind::Time))
        .or_else(|| t.columns.first());
    let Some(x_col) = x_col else {
        return Data {
            xs: Vec::new(),
            kind: Kind::Text,
            series: Vec::new(),
        };
    };
    let kind = data::kind(x_col);
    let metrics: Vec<String> = form.metrics().iter().map(metric_label).collect();
    let groupby: Vec<String> = form.list("groupby").iter().map(column_label).collect();
    let rows = t.num_rows;
    // Unique x values, in order.
    let mut xs: Vec<X> = Vec::new();
    let mut x_index: Vec<usize> = Vec::with_capacity(rows);
    {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for i in 0..rows {
            let x = x_of(x_col, i);
            let key = format!("{x:?}");
            let at = *seen.entry(key).or_insert_with(|| {
                xs.push(x);
                xs.len() - 1
            });
            x_index.push(at);
        }
    }
    let long = !groupby.is_empty() && groupby.iter().all(|g| t.column(g).is_some());
    let mut series: Vec<Series> = Vec::new();
    if long {
        let group_cols: Vec<&Column> = groupby.iter().filter_map(|g| t.column(g)).collect();
        let metric_cols: Vec<(&String, &Column)> = metrics
            .iter()
            .filter_map(|m| t.column(m).map(|c| (m, c)))
            .collect();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        #[allow(clippy::needless_range_loop)] // i indexes every column of the row
        for i in 0..rows {
            let key: Vec<String> = group_cols.iter().map(|c| data::text(c, i)).collect();
            let key = key.join(", ");
            for (m, c) in &metric_cols {
                let name = if metric_cols.len() == 1 {
                    key.clone()
                } else {
                    format!("{}, {key}", form.verbose(m))
                };
                let at = *by_name.entry(name.clone()).or_insert_with(|| {
                    series.push(Series {
                        name,
                        values: vec![None; xs.len()],
                    });
                    series.len() - 1
                });
                series[at].values[x_index[i]] = data::number(c, i);
            }
        }
    } else {
        for c in &t.columns {
            if std::ptr::eq(c, x_col) || data::kind(c) != Kind::Number {
                continue;
            }
            let mut values = vec![None; xs.len()];
            for (i, at) in x_index.iter().enumerate() {
                if let Some(v) = data::number(c, i) {
                    values[*at] = Some(v);
                }
            }
            series.push(Series {
                name: display_name(form, &c.name, &metrics),
                values,
            });
        }
    }
    // Sort the x axis (times and numbers ascending; categories keep the query's order).
    if matches!(kind, Kind::Time | Kind::Number) {
        let mut order: Vec<usize> = (0..xs.len()).collect();
        let key = |x: &X| match x {
            X::Time(t) => *t as f64,
            X::Num(v) => *v,
            X::Text(_) => f64::INFINITY,
        };
        order.sort_by(|a, b| key(&xs[*a]).total_cmp(&key(&xs[*b])));
        xs = order.iter().map(|i| xs[*i].clone()).collect();
        for s in &mut series {
            s.values = order.iter().map(|i| s.values[*i]).collect();
        }
    }
    Data { xs, kind, series }
}

fn x_text(form: &Form, x: &X) -> String {
    match x {
        X::Time(ms) => format::time(form.str("x_axis_time_format").unwrap_or("smart_date"), *ms),
        X::Num(v) => format::number("~g", *v),
        X::Text(s) => s.clone(),
    }
}

/// Draws the chart; `bar` for the bar chart.
pub fn render(form: &Form, table: Option<&Table>, size: Size, bar: bool) -> String {
    let mut svg = Svg::new(size.width, size.height);
    let (w, h) = (svg.width(), svg.height());
    let mut top = PAD + svg::title(&mut svg, form.str("slice_name").unwrap_or(""), PAD);
    let d = match table {
        Some(t) if t.num_rows > 0 => read(form, t),
        _ => {
            svg::empty(&mut svg, top, "No results were returned for this query");
            return svg.finish();
        }
    };
    if d.series.is_empty() || d.xs.is_empty() {
        svg::empty(&mut svg, top, "No results were returned for this query");
        return svg.finish();
    }
    let colors: Vec<&'static str> = (0..d.series.len()).map(svg::color).collect();
    if form.flag("show_legend", true) {
        let items: Vec<(String, &'static str)> = d
            .series
            .iter()
            .zip(&colors)
            .map(|(s, c)| (s.name.clone(), *c))
            .collect();
        let legend_h = svg::legend(&mut svg, &items, PAD, top, w - 2.0 * PAD, 3);
        top += legend_h + 8.0;
    }
    let stacked = bar
        && form
            .get("stack")
            .is_some_and(|s| !s.is_null() && s != false);
    // Value domain.
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    if stacked {
        for i in 0..d.xs.len() {
            let (mut pos, mut neg) = (0.0, 0.0);
            for s in &d.series {
                match s.values[i] {
                    Some(v) if v >= 0.0 => pos += v,
                    Some(v) => neg += v,
                    None => {}
                }
            }
            lo = lo.min(neg);
            hi = hi.max(pos);
        }
    } else {
        for v in d.series.iter().flat_map(|s| s.values.iter().flatten()) {
            lo = lo.min(*v);
            hi = hi.max(*v);
        }
    }
    let y_format = form.str("y_axis_format").unwrap_or("SMART_NUMBER");
    let x_title = form.str("x_axis_title").unwrap_or("").to_owned();
    let y_title = form.str("y_axis_title").unwrap_or("").to_owned();
    let bottom_extra = if x_title.is_empty() { 0.0 } else { 22.0 };
    let left_extra = if y_title.is_empty() { 0.0 } else { 22.0 };
    let plot_bottom = h - PAD - 22.0 - bottom_extra;
    let plot_h = (plot_bottom - top - 6.0).max(10.0);
    let tick_count = ((plot_h / 45.0).round() as usize).clamp(2, 8);
    let truncate = form.flag("truncateYAxis", false) && !bar;
    let (y0, y1, yticks) = scale::nice(lo, hi, tick_count, !truncate);
    let labels: Vec<String> = yticks
        .iter()
        .map(|v| format::number(y_format, *v))
        .collect();
    let label_w = labels
        .iter()
        .map(|l| svg::text_width(l, 12.0))
        .fold(0.0, f64::max);
    let plot_left = PAD + left_extra + label_w + 10.0;
    let xs_text: Vec<String> = d.xs.iter().map(|x| x_text(form, x)).collect();
    let last_half = xs_text
        .last()
        .map_or(0.0, |s| svg::text_width(s, 12.0) / 2.0);
    let plot_right = w - PAD - if bar { 0.0 } else { (last_half - 8.0).max(0.0) };
    let plot_w = (plot_right - plot_left).max(10.0);
    let ys = Linear {
        d0: y0,
        d1: y1,
        r0: plot_bottom,
        r1: plot_bottom - plot_h,
    };

    // Grid and value axis.
    svg.open("y-axis", "");
    for (v, label) in yticks.iter().zip(&labels) {
        let y = ys.at(*v);
        svg.line(
            plot_left,
            y,
            plot_left + plot_w,
            y,
            GRID,
            r#" stroke-width="1""#,
        );
        svg.text(
            plot_left - 8.0,
            y + 4.0,
            label,
            Font::new(12.0, MUTED).anchor(Anchor::End),
            "tick-label",
        );
    }
    if !y_title.is_empty() {
        let cy = plot_bottom - plot_h / 2.0;
        svg.text_rotated(
            PAD + 12.0,
            cy,
            -90.0,
            &y_title,
            Font::new(12.0, MUTED).anchor(Anchor::Middle),
            "axis-title",
        );
    }
    svg.close();

    // Category axis (bars, text x) or continuous axis (time/number lines).
    let continuous = !bar && matches!(d.kind, Kind::Time | Kind::Number);
    let nx = d.xs.len();
    let band = plot_w / nx as f64;
    let x_pos: Vec<f64> = if continuous {
        let key = |x: &X| match x {
            X::Time(t) => *t as f64,
            X::Num(v) => *v,
            X::Text(_) => 0.0,
        };
        let (a, b) = (key(&d.xs[0]), key(&d.xs[nx - 1]));
        let xs = Linear {
            d0: a,
            d1: b,
            r0: plot_left,
            r1: plot_left + plot_w,
        };
        d.xs.iter().map(|x| xs.at(key(x))).collect()
    } else {
        (0..nx)
            .map(|i| plot_left + band * (i as f64 + 0.5))
            .collect()
    };
    svg.open("x-axis", "");
    svg.line(
        plot_left,
        plot_bottom,
        plot_left + plot_w,
        plot_bottom,
        AXIS,
        r#" stroke-width="1""#,
    );
    let label_y = plot_bottom + 18.0;
    if continuous && d.kind == Kind::Time && nx > 1 {
        let (a, b) = match (&d.xs[0], &d.xs[nx - 1]) {
            (X::Time(a), X::Time(b)) => (*a, *b),
            _ => (0, 1),
        };
        let sample = svg::text_width(&x_text(form, &d.xs[0]), 12.0).max(40.0);
        let count = ((plot_w / (sample + 28.0)).floor() as usize).clamp(2, 12);
        let ticks = scale::time_ticks(a, b, count);
        let xs = Linear {
            d0: a as f64,
            d1: b as f64,
            r0: plot_left,
            r1: plot_left + plot_w,
        };
        for t in ticks {
            let x = xs.at(t as f64);
            svg.line(x, plot_bottom, x, plot_bottom + 5.0, AXIS, "");
            svg.text(
                x,
                label_y,
                &x_text(form, &X::Time(t)),
                Font::new(12.0, MUTED).anchor(Anchor::Middle),
                "tick-label",
            );
        }
    } else if continuous && d.kind == Kind::Number && nx > 1 {
        let (a, b) = match (&d.xs[0], &d.xs[nx - 1]) {
            (X::Num(a), X::Num(b)) => (*a, *b),
            _ => (0.0, 1.0),
        };
        let (_, _, ticks) = scale::nice(a, b, ((plot_w / 80.0) as usize).clamp(2, 10), false);
        let xs = Linear {
            d0: a,
            d1: b,
            r0: plot_left,
            r1: plot_left + plot_w,
        };
        for t in ticks.into_iter().filter(|t| *t >= a && *t <= b) {
            let x = xs.at(t);
            svg.text(
                x,
                label_y,
                &format::number("~g", t),
                Font::new(12.0, MUTED).anchor(Anchor::Middle),
                "tick-label",
            );
        }
    } else {
        // Every k-th category, so labels never overlap.
        let widest = xs_text
            .iter()
            .map(|s| svg::text_width(s, 12.0))
            .fold(0.0, f64::max)
            .min(160.0);
        let every = ((widest + 10.0) / band).ceil().max(1.0) as usize;
        for (i, label) in xs_text.iter().enumerate() {
            if i % every != 0 {
                continue;
            }
            let fitted = svg::fit(label, 12.0, (band * every as f64 - 6.0).max(24.0));
            svg.text(
                x_pos[i],
                label_y,
                &fitted,
                Font::new(12.0, MUTED).anchor(Anchor::Middle),
                "tick-label",
            );
        }
    }
    if !x_title.is_empty() {
        svg.text(
            plot_left + plot_w / 2.0,
            h - PAD,
            &x_title,
            Font::new(12.0, MUTED).anchor(Anchor::Middle),
            "axis-title",
        );
    }
    svg.close();

    // The series.
    let y_fmt = |v: f64| format::number(y_format, v);
    if bar {
        let inner = band * 0.8;
        let k = d.series.len() as f64;
        let mut pos_acc = vec![0.0; nx];
        let mut neg_acc = vec![0.0; nx];
        for (si, (s, color)) in d.series.iter().zip(&colors).enumerate() {
            svg.open("series", &format!(r#" data-name="{}""#, esc(&s.name)));
            for (i, v) in s.values.iter().enumerate() {
                let Some(v) = *v else { continue };
                let (x, bw, base, end) = if stacked {
                    let base = if v >= 0.0 { pos_acc[i] } else { neg_acc[i] };
                    let end = base + v;
                    if v >= 0.0 {
                        pos_acc[i] = end;
                    } else {
                        neg_acc[i] = end;
                    }
                    (x_pos[i] - inner / 2.0, inner, base, end)
                } else {
                    let bw = inner / k;
                    (x_pos[i] - inner / 2.0 + bw * si as f64, bw, 0.0, v)
                };
                let (ya, yb) = (ys.at(base), ys.at(end));
                let gap = if bw > 6.0 && !stacked && k > 1.0 {
                    1.0
                } else {
                    0.0
                };
                svg.raw(&format!(
                    r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{color}"><title>{}</title></rect>"#,
                    n(x + gap / 2.0),
                    n(ya.min(yb)),
                    n((bw - gap).max(0.5)),
                    n((ya - yb).abs().max(if v != 0.0 { 1.0 } else { 0.0 })),
                    esc(&format!("{}: {} — {}", s.name, xs_text[i], y_fmt(v)))
                ));
            }
            svg.close();
        }
    } else {
        let markers = nx <= 36;
        for (s, color) in d.series.iter().zip(&colors) {
            svg.open("series", &format!(r#" data-name="{}""#, esc(&s.name)));
            let mut path = String::new();
            let mut pen_down = false;
            for (i, v) in s.values.iter().enumerate() {
                match v {
                    Some(v) => {
                        let cmd = if pen_down { 'L' } else { 'M' };
                        path.push_str(&format!("{cmd}{} {}", n(x_pos[i]), n(ys.at(*v))));
                        pen_down = true;
                    }
                    None => pen_down = false,
                }
            }
            svg.path(
                &path,
                &format!(
                    r#" fill="none" stroke="{color}" stroke-width="2" stroke-linejoin="round" stroke-linecap="round""#
                ),
            );
            for (i, v) in s.values.iter().enumerate() {
                let Some(v) = *v else { continue };
                let isolated = (i == 0 || s.values[i - 1].is_none())
                    && s.values.get(i + 1).is_none_or(Option::is_none);
                if markers || isolated {
                    svg.raw(&format!(
                        r##"<circle cx="{}" cy="{}" r="3" fill="#FFFFFF" stroke="{color}" stroke-width="1.5"><title>{}</title></circle>"##,
                        n(x_pos[i]),
                        n(ys.at(v)),
                        esc(&format!("{}: {} — {}", s.name, xs_text[i], y_fmt(v)))
                    ));
                }
            }
            svg.close();
        }
    }
    svg.finish()
}
