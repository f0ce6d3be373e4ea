//! The renderers natively, on tables shaped like the chart-data results the host sends:
//! every chart type draws a well-formed SVG of the requested size with its title, its series
//! and its axis labels. `VIZ_PREVIEW_DIR=/some/dir` also writes the SVGs there for a look.

use liteset_plugin_viz::form::Form;
use liteset_plugin_viz::{charts, query};
use liteset_sdk::{Column, QueryResult, Size, Table};
use serde_json::json;

fn months(n: usize) -> Vec<i64> {
    // The first of each month of 2024–2025.
    (0..n)
        .map(|i| {
            let (y, m) = (2024 + (i / 12) as i64, (i % 12) as u32 + 1);
            liteset_plugin_viz::format::days_from_civil(y, m, 1) * 86_400 * 1_000_000
        })
        .collect()
}

fn render(viz: &str, form: serde_json::Value, table: Table, w: u32, h: u32) -> String {
    let form = Form(form);
    let svg = charts::render(
        viz,
        &form,
        &[QueryResult {
            query_index: 0,
            data: table,
        }],
        Size {
            width: w,
            height: h,
        },
    )
    .expect("render");
    if let Some(dir) = std::env::var_os("VIZ_PREVIEW_DIR") {
        std::fs::write(std::path::Path::new(&dir).join(format!("{viz}.svg")), &svg).expect("write");
    }
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    assert!(
        svg.contains(&format!("width=\"{w}\" height=\"{h}\"")),
        "{svg}"
    );
    assert!(svg.ends_with("</svg>"));
    svg
}

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

#[test]
fn line_chart_of_pivoted_series() {
    let xs = months(24);
    let t = Table {
        num_rows: 24,
        columns: vec![
            Column::timestamp_us("order_date", xs.iter().map(|v| Some(*v))),
            Column::float64("North", (0..24).map(|i| Some(1000.0 + 150.0 * i as f64))),
            Column::float64("South", (0..24).map(|i| Some(2400.0 - 40.0 * i as f64))),
        ],
        index: Vec::new(),
    };
    let svg = render(
        "echarts_timeseries_line",
        json!({"slice_name": "Monthly revenue", "x_axis": "order_date", "metrics": ["sum_revenue"],
               "groupby": ["region"], "verbose_map": {"sum_revenue": "Revenue"}}),
        t,
        800,
        450,
    );
    assert_eq!(count(&svg, r#"<g class="series""#), 2, "{svg}");
    assert!(svg.contains(">Monthly revenue</text>"));
    assert!(svg.contains(">2025</text>"), "a year tick: {svg}");
    assert!(svg.contains(r#"data-name="North""#));
}

#[test]
fn long_results_are_pivoted_by_the_renderer() {
    let xs = months(3);
    let mut x = Vec::new();
    let mut region = Vec::new();
    let mut rev = Vec::new();
    for (i, t) in xs.iter().enumerate() {
        for (j, r) in ["East", "West"].iter().enumerate() {
            x.push(Some(*t));
            region.push(Some(*r));
            rev.push(Some(100.0 * (i + j + 1) as f64));
        }
    }
    let t = Table {
        num_rows: 6,
        columns: vec![
            Column::timestamp_us("order_date", x),
            Column::utf8("region", region),
            Column::float64("sum_revenue", rev),
        ],
        index: Vec::new(),
    };
    let svg = render(
        "echarts_timeseries_bar",
        json!({"slice_name": "By region", "x_axis": "order_date", "metrics": ["sum_revenue"],
               "groupby": ["region"], "y_axis_format": ",.0f"}),
        t,
        600,
        400,
    );
    assert_eq!(count(&svg, r#"<g class="series""#), 2, "{svg}");
    assert_eq!(
        count(&svg, "<rect x="),
        6 + 2, /* legend swatches */
        "{svg}"
    );
    assert!(
        svg.contains(">Jan</text>") || svg.contains(">2024</text>"),
        "{svg}"
    );
}

#[test]
fn single_metric_line_and_empty_results() {
    let xs = months(12);
    let t = Table {
        num_rows: 12,
        columns: vec![
            Column::timestamp_us("order_date", xs.iter().map(|v| Some(*v))),
            Column::float64(
                "sum_revenue",
                (0..12).map(|i| Some(1.0e5 + 1.0e4 * i as f64)),
            ),
        ],
        index: Vec::new(),
    };
    let svg = render(
        "echarts_timeseries_line",
        json!({"slice_name": "Monthly", "x_axis": "order_date", "metrics": ["sum_revenue"],
               "verbose_map": {"sum_revenue": "Revenue"}}),
        t,
        500,
        300,
    );
    assert!(svg.contains(r#"data-name="Revenue""#), "{svg}");
    assert!(
        svg.contains(">200k</text>") || svg.contains(">150k</text>"),
        "{svg}"
    );
    let empty = render(
        "echarts_timeseries_line",
        json!({"slice_name": "Nothing", "metrics": ["m"]}),
        Table::new(0),
        300,
        200,
    );
    assert!(empty.contains("No results"), "{empty}");
}

#[test]
fn pie_table_and_big_number() {
    let t = || Table {
        num_rows: 3,
        columns: vec![
            Column::utf8(
                "category",
                [Some("Electronics"), Some("Hardware"), Some("Accessories")],
            ),
            Column::float64(
                "total_revenue",
                [Some(500_000.0), Some(120_000.0), Some(30_000.5)],
            ),
            Column::int64("count", [Some(1200), Some(900), Some(450)]),
        ],
        index: Vec::new(),
    };
    let pie = render(
        "pie",
        json!({"slice_name": "Revenue by category", "groupby": ["category"], "metric": "total_revenue"}),
        t(),
        640,
        400,
    );
    assert_eq!(count(&pie, r#"<g class="series slice""#), 3, "{pie}");
    assert!(pie.contains(">Electronics</text>"), "{pie}");
    let table = render(
        "table",
        json!({"slice_name": "Revenue by region", "groupby": ["category"],
               "metrics": ["total_revenue", "count"], "verbose_map": {"total_revenue": "Revenue"}}),
        t(),
        640,
        400,
    );
    assert!(table.contains(">Revenue</text>"), "{table}");
    assert!(table.contains(">500,000.00</text>"), "{table}");
    assert!(table.contains(">1,200</text>"), "{table}");
    assert_eq!(count(&table, r#"<g class="row">"#), 3);
    let big = render(
        "big_number_total",
        json!({"slice_name": "Total revenue", "metric": "total_revenue", "subheader": "all time"}),
        Table {
            num_rows: 1,
            columns: vec![Column::float64("total_revenue", [Some(2_241_234.56)])],
            index: Vec::new(),
        },
        400,
        300,
    );
    assert!(big.contains(">2.24M</text>"), "{big}");
    assert!(big.contains(">all time</text>"), "{big}");
}

#[test]
fn hostile_labels_are_escaped() {
    let t = Table {
        num_rows: 1,
        columns: vec![
            Column::utf8("category", [Some("<script>alert(1)</script>\"&")]),
            Column::float64("m", [Some(1.0)]),
        ],
        index: Vec::new(),
    };
    let svg = render(
        "pie",
        json!({"slice_name": "<b>x</b>", "groupby": ["category"], "metric": "m"}),
        t,
        300,
        300,
    );
    assert!(!svg.contains("<script>") && !svg.contains("<b>"), "{svg}");
}

#[test]
fn every_viz_type_builds_a_query() {
    for viz in liteset_plugin_viz::VIZ_TYPES {
        let form = Form(
            json!({"datasource": "1__table", "viz_type": viz, "metrics": ["count"],
                               "metric": "count", "groupby": ["region"], "x_axis": "ds"}),
        );
        let ctx = query::build(viz, &form).expect("query context");
        assert_eq!(ctx["datasource"]["id"], 1, "{viz}");
        assert_eq!(ctx["queries"].as_array().map(Vec::len), Some(1), "{viz}");
    }
}
