use crate::testing::{
    invocation, post_processor_info, run_build_query, run_post_processor, run_render, viz_info,
};
use crate::*;

#[test]
fn vendored_wit_is_identical_to_the_repository_copy() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let upstream = manifest.join("../wit/liteset-plugin/v0.2.0/plugin.wit");
    if !upstream.exists() {
        // Published crate: only the vendored copy exists.
        return;
    }
    let vendored = std::fs::read(manifest.join("wit/plugin.wit")).unwrap();
    let upstream = std::fs::read(upstream).unwrap();
    assert!(
        vendored == upstream,
        "sdk/wit/plugin.wit differs from wit/liteset-plugin/v0.2.0/plugin.wit; copy it again"
    );
    assert!(
        String::from_utf8(vendored)
            .unwrap()
            .contains(&format!("package liteset:plugin@{WIT_VERSION};"))
    );
}

// ---- columns --------------------------------------------------------------------------------

#[test]
fn numeric_constructors_build_bitmaps_only_with_nulls() {
    let c = Column::float64("x", [Some(1.0), None, Some(3.0)]);
    assert_eq!(c.len(), 3);
    assert_eq!(c.f64(), Some(&[1.0, 0.0, 3.0][..]));
    assert_eq!(c.validity, Some(vec![0b101]));
    assert!(!c.is_null(0) && c.is_null(1) && !c.is_null(2));
    assert_eq!(c.null_count(), 1);
    assert_eq!(c.get(1), Value::Null);
    assert_eq!(c.get(2), Value::Float64(3.0));
    assert_eq!(c.i64(), None);

    let c = Column::int64("n", [1, 2]);
    assert_eq!(c.validity, None);
    assert_eq!(c.i64(), Some(&[1, 2][..]));
    assert_eq!(c.get(0), Value::Int64(1));
    assert_eq!(c.get(0).as_f64(), Some(1.0));

    let c = Column::boolean("b", [Some(true), None]);
    assert_eq!(c.bool(), Some(&[true, false][..]));
    assert_eq!(c.get(0), Value::Boolean(true));
    assert!(c.get(1).is_null());

    let c = Column::timestamp_us("t", [5i64]);
    assert_eq!(c.ts_us(), Some(&[5][..]));
    assert_eq!(c.get(0), Value::TimestampUs(5));
}

#[test]
fn bitmaps_span_bytes() {
    let flags: Vec<bool> = (0..10).map(|i| i % 3 != 0).collect();
    let bitmap = bitmap_from_bools(flags.iter().copied());
    assert_eq!(bitmap.len(), bitmap_len(10));
    assert_eq!(bitmap.len(), 2);
    for (i, flag) in flags.iter().enumerate() {
        assert_eq!(bitmap_get(&bitmap, i), *flag, "bit {i}");
    }
    assert!(!bitmap_get(&bitmap, 100));
    assert_eq!(bitmap_len(0), 0);
    assert_eq!(bitmap_len(8), 1);
    assert_eq!(bitmap_len(9), 2);
}

#[test]
fn utf8_picks_dictionary_for_low_cardinality() {
    let c = Column::utf8(
        "s",
        [Some("a"), Some("b"), Some("a"), None, Some("b"), Some("a")],
    );
    match &c.data {
        ColumnData::Utf8Dict { dictionary, codes } => {
            assert_eq!(dictionary, &["a", "b"]);
            assert_eq!(codes.len(), 6);
        }
        other => panic!("expected utf8-dict, got {other:?}"),
    }
    let rows: Vec<_> = c.str_iter().unwrap().collect();
    assert_eq!(
        rows,
        [Some("a"), Some("b"), Some("a"), None, Some("b"), Some("a")]
    );
    assert_eq!(c.get(1), Value::Str("b"));
    assert_eq!(c.get(3), Value::Null);
    c.validate(6).unwrap();
}

#[test]
fn utf8_picks_packed_for_high_cardinality() {
    let values = [Some("x"), Some("héllo"), None, Some("")];
    let c = Column::utf8("s", values);
    match &c.data {
        ColumnData::Utf8Packed { offsets, data } => {
            assert_eq!(offsets, &[0, 1, 7, 7, 7]);
            assert_eq!(data, "xhéllo".as_bytes());
        }
        other => panic!("expected utf8-packed, got {other:?}"),
    }
    assert_eq!(c.str_iter().unwrap().collect::<Vec<_>>(), values);
    assert_eq!(c.str_iter().unwrap().len(), 4);
    c.validate(4).unwrap();
}

#[test]
fn utf8_of_only_nulls_is_packed_and_valid() {
    let c = Column::utf8("s", [None::<&str>, None, None, None]);
    assert!(matches!(c.data, ColumnData::Utf8Packed { .. }));
    assert_eq!(c.null_count(), 4);
    c.validate(4).unwrap();
    let empty = Column::utf8("s", Vec::<Option<String>>::new());
    empty.validate(0).unwrap();
    assert!(empty.is_empty());
}

#[test]
fn plain_utf8_and_json_read_uniformly() {
    let c = Column::new("s", ColumnData::Utf8(vec!["p".into(), "q".into()]));
    assert_eq!(
        c.str_iter().unwrap().collect::<Vec<_>>(),
        [Some("p"), Some("q")]
    );
    let j = Column::json("j", [Some("[1,2]"), None]);
    assert_eq!(j.get(0), Value::Json("[1,2]"));
    assert_eq!(j.get(1), Value::Null);
    assert!(j.str_iter().is_none(), "json is not text");
    assert_eq!(j.str_at(0), Some("[1,2]"));
    assert!(Column::float64("f", [1.0]).str_iter().is_none());
}

#[test]
#[should_panic(expected = "out of range")]
fn get_out_of_range_panics() {
    Column::int64("n", [1]).get(1);
}

// ---- validation -----------------------------------------------------------------------------

fn table_with(column: Column, rows: usize) -> Table {
    Table {
        num_rows: rows,
        columns: vec![column],
        index: Vec::new(),
    }
}

fn validation_error(table: Table) -> String {
    table.validate().unwrap_err().message
}

#[test]
fn validate_rejects_length_mismatch() {
    let msg = validation_error(table_with(Column::float64("x", [1.0, 2.0]), 3));
    assert!(
        msg.contains("column `x`") && msg.contains("expected 3"),
        "{msg}"
    );
}

#[test]
fn validate_rejects_bad_bitmap_size() {
    let c = Column::int64("n", [1, 2]).with_validity(Some(vec![0xff, 0xff]));
    let msg = validation_error(table_with(c, 2));
    assert!(
        msg.contains("validity bitmap has 2 bytes, expected 1"),
        "{msg}"
    );
}

#[test]
fn validate_rejects_dictionary_codes_out_of_range() {
    let c = Column::new(
        "d",
        ColumnData::Utf8Dict {
            dictionary: vec!["a".into()],
            codes: vec![0, 1],
        },
    );
    let msg = validation_error(table_with(c, 2));
    assert!(msg.contains("dictionary code 1 at row 1"), "{msg}");
}

#[test]
fn validate_rejects_bad_packed_offsets_and_utf8() {
    let packed = |offsets: Vec<u32>, data: &[u8]| {
        Column::new(
            "p",
            ColumnData::Utf8Packed {
                offsets,
                data: data.to_vec(),
            },
        )
    };
    let msg = validation_error(table_with(packed(vec![0, 2, 1], b"ab"), 2));
    assert!(msg.contains("decrease at row 1"), "{msg}");
    let msg = validation_error(table_with(packed(vec![0, 1, 5], b"ab"), 2));
    assert!(msg.contains("beyond the 2 data bytes"), "{msg}");
    let msg = validation_error(table_with(packed(vec![0, 1], b"ab"), 2));
    assert!(msg.contains("expected 3 (rows + 1)"), "{msg}");
    let msg = validation_error(table_with(packed(vec![0, 1, 3], b"a\xff\xfe"), 2));
    assert!(msg.contains("row 1 is not valid UTF-8"), "{msg}");
    // A multi-byte character split across rows is invalid in both rows.
    let msg = validation_error(table_with(packed(vec![0, 1, 2], "é".as_bytes()), 2));
    assert!(msg.contains("row 0 is not valid UTF-8"), "{msg}");
    // Invalid bytes outside every row do not matter; offsets need not start at 0.
    table_with(packed(vec![1, 2, 3], b"\xffab"), 2)
        .validate()
        .unwrap();
}

#[test]
fn validate_checks_index_levels() {
    let mut t = table_with(Column::int64("n", [1, 2]), 2);
    t.index.push(Column::utf8("label", [Some("a")]));
    let msg = validation_error(t);
    assert!(msg.starts_with("index column `label`"), "{msg}");
}

#[test]
fn table_accessors_and_builder() {
    let t = TableBuilder::new()
        .index(Column::timestamp_us("__timestamp", [0, 1, 2]))
        .float64("a", [1.0, 2.0, 3.0])
        .int64("b", [Some(1), None, Some(3)])
        .boolean("c", [true, false, true])
        .timestamp_us("d", [7, 8, 9])
        .utf8("e", [Some("x"), Some("y"), Some("z")])
        .json("f", [Some("{}"), None, Some("1")])
        .build()
        .unwrap();
    assert_eq!(t.num_rows, 3);
    assert_eq!(
        t.column_names().collect::<Vec<_>>(),
        ["a", "b", "c", "d", "e", "f"]
    );
    assert!(t.column("b").unwrap().is_null(1));
    assert!(t.column("missing").is_none());
    assert_eq!(t.index[0].ts_us(), Some(&[0, 1, 2][..]));

    let mut t = t;
    t.column_mut("a").unwrap().name = "renamed".into();
    assert!(t.column("renamed").is_some());
    assert!(t.push_column(Column::int64("short", [1])).is_err());
    t.push_column(Column::int64("ok", [1, 2, 3])).unwrap();

    let err = TableBuilder::new()
        .float64("a", [1.0])
        .float64("b", [1.0, 2.0])
        .build()
        .unwrap_err();
    assert!(err.message.contains("column `b`"), "{err}");

    let empty = TableBuilder::new().num_rows(4).build().unwrap();
    assert_eq!(empty, Table::new(4));
    assert_eq!(Table::builder().build().unwrap().num_rows, 0);
}

#[test]
fn table_macro_builds_index_and_columns() {
    let t = crate::table! {
        index: "day" => timestamp_us [0, 1], "region" => utf8 [Some("n"), Some("s")];
        "sales" => float64 [Some(1.0), None],
        "orders" => int64 [1, 2],
    };
    assert_eq!(t.num_rows, 2);
    assert_eq!(t.index.len(), 2);
    assert_eq!(t.index[1].name, "region");
    assert_eq!(t.columns.len(), 2);
    let t = crate::table! { "x" => boolean [true] };
    assert_eq!(t.num_rows, 1);
}

// ---- errors and info ------------------------------------------------------------------------

#[test]
fn plugin_error_constructors() {
    assert_eq!(
        PluginError::invalid_params("p").kind,
        ErrorKind::InvalidParams
    );
    assert_eq!(
        PluginError::invalid_input("i").kind,
        ErrorKind::InvalidInput
    );
    assert_eq!(PluginError::unsupported("u").kind, ErrorKind::Unsupported);
    assert_eq!(PluginError::internal("x").kind, ErrorKind::Internal);
    assert_eq!(
        PluginError::invalid_params("bad window").to_string(),
        "invalid-params: bad window"
    );
    let e: PluginError = TableError::new("column `x`: broken").into();
    assert_eq!(e.kind, ErrorKind::InvalidInput);
}

#[test]
fn plugin_info_validation() {
    let info = PluginInfo::post_processor("rolling_mean-2", "1.0.0");
    assert_eq!(info.label, "rolling_mean-2");
    info.validate().unwrap();
    assert!(
        PluginInfo::post_processor("Bad Name", "1")
            .validate()
            .is_err()
    );
    assert!(PluginInfo::post_processor("", "1").validate().is_err());
    assert!(PluginInfo::post_processor("ok", "").validate().is_err());
    assert!(
        PluginInfo::viz("v", "1", Vec::<String>::new())
            .validate()
            .is_err()
    );
    let viz = PluginInfo::viz("v", "1", ["echarts_bar"])
        .label("Bar")
        .description("d")
        .params_schema("{}");
    viz.validate().unwrap();
    assert_eq!(viz.kind, PluginKind::Viz);
    assert_eq!(viz.params_schema.as_deref(), Some("{}"));
}

// ---- harness and glue -----------------------------------------------------------------------

struct Scale;

impl PostProcessor for Scale {
    fn info() -> PluginInfo {
        PluginInfo::post_processor("scale", "0.1.0").description("Multiplies column `x`")
    }

    fn process(ctx: &Invocation, params: &str, mut input: Table) -> Result<Table, PluginError> {
        assert_eq!(ctx.time_zone, "UTC");
        let factor: f64 = params
            .trim()
            .parse()
            .map_err(|_| PluginError::invalid_params(format!("not a number: {params}")))?;
        if factor == 0.0 {
            // Deliberately broken output.
            input.num_rows += 1;
            return Ok(input);
        }
        let column = input
            .column_mut("x")
            .ok_or_else(|| PluginError::invalid_input("no column `x`"))?;
        match &mut column.data {
            ColumnData::Float64(v) => v.iter_mut().for_each(|v| *v *= factor),
            _ => return Err(PluginError::invalid_input("`x` is not float64")),
        }
        log::info!("scaled {} rows", input.num_rows);
        Ok(input)
    }
}

/// The export macros compile natively (there they only type-check).
mod export_check {
    crate::export_post_processor!(super::Scale);
    crate::export_viz!(super::Bars);
}

#[test]
fn harness_round_trips_tables() {
    let input = crate::table! {
        index: "label" => utf8 [Some("a"), Some("b"), Some("c")];
        "x" => float64 [Some(1.0), None, Some(3.0)],
        "s" => utf8 [Some("p"), Some("q"), Some("p")],
    };
    let out = run_post_processor::<Scale>("2", input.clone()).unwrap();
    assert_eq!(out.column("x").unwrap().f64(), Some(&[2.0, 0.0, 6.0][..]));
    assert!(out.column("x").unwrap().is_null(1));
    assert_eq!(out.column("s"), input.column("s"));
    assert_eq!(out.index, input.index);
}

#[test]
fn harness_reports_plugin_errors_and_bad_io() {
    let input = crate::table! { "x" => float64 [1.0] };
    let err = run_post_processor::<Scale>("two", input.clone()).unwrap_err();
    assert_eq!(err, PluginError::invalid_params("not a number: two"));

    let err = run_post_processor::<Scale>("0", input.clone()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Internal);
    assert!(err.message.starts_with("invalid output table"), "{err}");

    let bad_input = table_with(Column::float64("x", [1.0]), 2);
    let err = run_post_processor::<Scale>("1", bad_input).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidInput);
    assert!(err.message.starts_with("input table: column `x`"), "{err}");

    let other = crate::table! { "y" => float64 [1.0] };
    let err = run_post_processor::<Scale>("1", other).unwrap_err();
    assert_eq!(err, PluginError::invalid_input("no column `x`"));
}

#[test]
fn harness_checks_info() {
    let info = post_processor_info::<Scale>().unwrap();
    assert_eq!(info.name, "scale");
    assert_eq!(info.kind, PluginKind::PostProcessor);
    assert_eq!(info.description, "Multiplies column `x`");
    assert_eq!(viz_info::<Bars>().unwrap().viz_types, ["bars"]);
}

struct Bars;

impl Viz for Bars {
    fn info() -> PluginInfo {
        PluginInfo::viz("bars", "1.0.0", ["bars"])
    }

    fn render(
        ctx: &Invocation,
        form_data: &str,
        results: Vec<QueryResult>,
        size: Size,
    ) -> Result<ChartOutput, PluginError> {
        let rows: usize = results.iter().map(|r| r.data.num_rows).sum();
        Ok(ChartOutput::svg(format!(
            "<svg width=\"{}\" height=\"{}\"><!-- {} {form_data} {rows} --></svg>",
            size.width, size.height, ctx.locale
        )))
    }
}

#[test]
fn viz_harness() {
    let err = run_build_query::<Bars>("{}").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unsupported);

    let results = vec![
        QueryResult {
            query_index: 0,
            data: crate::table! { "x" => int64 [1, 2] },
        },
        QueryResult {
            query_index: 1,
            data: crate::table! { "y" => int64 [3] },
        },
    ];
    let out = run_render::<Bars>(
        "{}",
        results,
        Size {
            width: 10,
            height: 20,
        },
    )
    .unwrap();
    assert_eq!(
        out.svg.as_deref(),
        Some("<svg width=\"10\" height=\"20\"><!-- en {} 3 --></svg>")
    );
    assert_eq!(out.payload, None);

    let bad = vec![QueryResult {
        query_index: 4,
        data: table_with(Column::int64("x", [1]), 3),
    }];
    let err = run_render::<Bars>("{}", bad, Size::default()).unwrap_err();
    assert!(err.message.starts_with("result of query 4:"), "{err}");
}

#[test]
fn invocation_helper_and_logger() {
    let ctx = invocation();
    assert_eq!(ctx.locale, "en");
    crate::logging::init();
    log::warn!("native log lines go to stderr");
    host_log(log::Level::Info, "direct host log");
    assert_eq!(ChartOutput::payload("{}").payload.as_deref(), Some("{}"));
}

// ---- chart types ----------------------------------------------------------------------------

#[test]
fn default_chart_types_match_the_hosts_default() {
    let types = crate::testing::chart_types::<Bars>().unwrap();
    assert_eq!(types.len(), 1);
    let t = &types[0];
    assert_eq!((t.viz_type.as_str(), t.name.as_str()), ("bars", "bars"));
    assert_eq!(
        (t.category.as_str(), t.tags.clone()),
        ("Liteset", vec!["Liteset".to_owned()])
    );
    assert_eq!(t.sections.len(), 1);
    assert_eq!(t.sections[0].label, "Query");
    assert!(t.sections[0].expanded);
    let rows: Vec<Vec<Control>> = [
        Shared::Metrics,
        Shared::Groupby,
        Shared::AdhocFilters,
        Shared::RowLimit,
    ]
    .into_iter()
    .map(|s| vec![Control::shared(s)])
    .collect();
    assert_eq!(t.sections[0].rows, rows);
}

struct Described;

impl Viz for Described {
    fn info() -> PluginInfo {
        PluginInfo::viz("described", "1.0.0", ["d1", "d2"])
    }

    fn render(
        _ctx: &Invocation,
        _form_data: &str,
        _results: Vec<QueryResult>,
        _size: Size,
    ) -> Result<ChartOutput, PluginError> {
        Ok(ChartOutput::svg("<svg/>"))
    }

    fn chart_types() -> Vec<ChartType> {
        vec![
            ChartType::new("d1", "Described")
                .description("d")
                .category("Evolution")
                .tags(["a", "b"])
                .thumbnail("<svg/>")
                .section(
                    Section::new("Options")
                        .row([
                            Control::from(
                                Control::number("n", "N")
                                    .min(0.0)
                                    .max(9.0)
                                    .default(2.0)
                                    .integer(true),
                            ),
                            Control::checkbox("c", "C").default(true).into(),
                        ])
                        .row([Control::select("s", "S", [("x", "X"), ("y", "Y")]).default("y")])
                        .row([Control::text("t", "T").default("hi").description("tip")]),
                ),
        ]
    }
}

#[test]
fn chart_types_survive_the_wit_round_trip() {
    let types = crate::testing::chart_types::<Described>().unwrap();
    assert_eq!(types, Described::chart_types());
    let s = &types[0].sections[0];
    assert!(!s.expanded);
    assert_eq!(s.rows[0].len(), 2);
    let Control::Select(sel) = &s.rows[1][0] else {
        panic!("select")
    };
    assert_eq!(sel.default, "y");
    assert_eq!(sel.options[0].value, "x");
    assert_eq!(Shared::XAxis.key(), "x_axis");
}

struct Wrong;

impl Viz for Wrong {
    fn info() -> PluginInfo {
        PluginInfo::viz("wrong", "1.0.0", ["w"])
    }

    fn render(
        _ctx: &Invocation,
        _form_data: &str,
        _results: Vec<QueryResult>,
        _size: Size,
    ) -> Result<ChartOutput, PluginError> {
        Ok(ChartOutput::svg("<svg/>"))
    }

    fn chart_types() -> Vec<ChartType> {
        vec![ChartType::new("other", "Other")]
    }
}

#[test]
fn the_harness_refuses_chart_types_of_undeclared_viz_types() {
    let err = crate::testing::chart_types::<Wrong>().unwrap_err();
    assert!(err.contains("`other` is not one of"), "{err}");
}
