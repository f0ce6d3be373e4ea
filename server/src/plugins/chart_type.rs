//! How a viz plugin's chart types appear in Superset's web app (Explore's gallery and control
//! panel): the domain form of the WIT `chart-app` export (new in `liteset:plugin@0.2.0`), the
//! install-time rules a plugin's description must pass, and the description a plugin gets
//! when it gives none (0.1.0 components, or a 0.2.0 one leaving a viz type out).
//!
//! Plain domain types: the API layer decides how they are serialised. A plugin's text ends up
//! in the browser's control panel, so every size is bounded here; the thumbnail SVG is only
//! size-checked, and whoever sends it to a browser sanitises it.

use std::collections::HashSet;

use serde_json::Value as Json;

/// One chart type of a viz plugin, as Explore's gallery and control panel show it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartType {
    /// One of the plugin's `viz_types`.
    pub viz_type: String,
    /// Shown in the gallery.
    pub name: String,
    /// What the chart shows.
    pub description: String,
    /// Gallery category.
    pub category: String,
    /// Gallery tags.
    pub tags: Vec<String>,
    /// raw SVG from the plugin (size-checked, NOT sanitised; the caller sanitises)
    pub thumbnail: Option<String>,
    /// Control panel sections, in order.
    pub sections: Vec<Section>,
}

/// A collapsible section of the control panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// Section title.
    pub label: String,
    /// Whether it starts expanded.
    pub expanded: bool,
    /// Rows of one or more controls each.
    pub rows: Vec<Vec<Control>>,
}

/// One choice of a select control.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectOption {
    /// Stored in form data.
    pub value: String,
    /// Shown.
    pub label: String,
}

/// A control of the panel: one of Superset's shared controls, or the plugin's own, stored in
/// form data under `name`.
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// A shared control, by its form-data key.
    Shared(SharedControl),
    /// Free text.
    Text {
        /// Form-data key.
        name: String,
        /// Shown above the control.
        label: String,
        /// Tooltip.
        description: String,
        /// Initial value.
        default: String,
    },
    /// A number.
    Number {
        /// Form-data key.
        name: String,
        /// Shown above the control.
        label: String,
        /// Tooltip.
        description: String,
        /// Initial value.
        default: f64,
        /// Smallest allowed value.
        min: Option<f64>,
        /// Largest allowed value.
        max: Option<f64>,
        /// Whole numbers only.
        integer: bool,
    },
    /// A checkbox.
    Checkbox {
        /// Form-data key.
        name: String,
        /// Shown next to the box.
        label: String,
        /// Tooltip.
        description: String,
        /// Initial value.
        default: bool,
    },
    /// A single choice.
    Select {
        /// Form-data key.
        name: String,
        /// Shown above the control.
        label: String,
        /// Tooltip.
        description: String,
        /// Initial value, one of the options' values.
        default: String,
        /// The choices.
        options: Vec<SelectOption>,
    },
}

/// One of Superset's shared controls (`sharedControls` of `@superset-ui/chart-controls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SharedControl {
    /// `metric`
    Metric,
    /// `metrics`
    Metrics,
    /// `groupby`
    Groupby,
    /// `columns`
    Columns,
    /// `x_axis`
    XAxis,
    /// `time_grain_sqla`
    TimeGrainSqla,
    /// `adhoc_filters`
    AdhocFilters,
    /// `row_limit`
    RowLimit,
    /// `series_limit`
    SeriesLimit,
    /// `order_desc`
    OrderDesc,
    /// `color_scheme`
    ColorScheme,
    /// `y_axis_format`
    YAxisFormat,
    /// `x_axis_time_format`
    XAxisTimeFormat,
    /// `currency_format`
    CurrencyFormat,
}

impl SharedControl {
    /// Every shared control.
    pub const ALL: [SharedControl; 14] = [
        SharedControl::Metric,
        SharedControl::Metrics,
        SharedControl::Groupby,
        SharedControl::Columns,
        SharedControl::XAxis,
        SharedControl::TimeGrainSqla,
        SharedControl::AdhocFilters,
        SharedControl::RowLimit,
        SharedControl::SeriesLimit,
        SharedControl::OrderDesc,
        SharedControl::ColorScheme,
        SharedControl::YAxisFormat,
        SharedControl::XAxisTimeFormat,
        SharedControl::CurrencyFormat,
    ];

    /// Its form-data key (and name in `sharedControls`).
    pub fn key(self) -> &'static str {
        match self {
            SharedControl::Metric => "metric",
            SharedControl::Metrics => "metrics",
            SharedControl::Groupby => "groupby",
            SharedControl::Columns => "columns",
            SharedControl::XAxis => "x_axis",
            SharedControl::TimeGrainSqla => "time_grain_sqla",
            SharedControl::AdhocFilters => "adhoc_filters",
            SharedControl::RowLimit => "row_limit",
            SharedControl::SeriesLimit => "series_limit",
            SharedControl::OrderDesc => "order_desc",
            SharedControl::ColorScheme => "color_scheme",
            SharedControl::YAxisFormat => "y_axis_format",
            SharedControl::XAxisTimeFormat => "x_axis_time_format",
            SharedControl::CurrencyFormat => "currency_format",
        }
    }
}

/// Sections one chart type may have.
pub const MAX_SECTIONS: usize = 20;
/// Controls one chart type may have (over all sections).
pub const MAX_CONTROLS: usize = 100;
/// Options one select control may have.
pub const MAX_OPTIONS: usize = 50;
/// Tags one chart type may have.
pub const MAX_TAGS: usize = 20;
/// Bytes of any one text (label, description, value, tag).
pub const MAX_TEXT_BYTES: usize = 1024;
/// Characters of a chart type's name and category.
pub const MAX_NAME_CHARS: usize = 128;
/// Bytes of a thumbnail SVG.
pub const MAX_THUMBNAIL_BYTES: usize = 256 << 10;

/// Form-data keys Superset itself reads or writes for every chart: an own control stored
/// under one of them would corrupt the chart.
pub const RESERVED_KEYS: &[&str] = &[
    "datasource",
    "viz_type",
    "slice_id",
    "slice_name",
    "url_params",
    "time_range",
    "granularity",
    "granularity_sqla",
    "extra_form_data",
    "extras",
    "filters",
    "where",
    "having",
    "since",
    "until",
    "force",
    "result_format",
    "result_type",
    "query_mode",
    "queries",
    "form_data",
    "dashboards",
    "dashboard_id",
    "native_filters",
    "applied_time_extras",
    "label_colors",
    "shared_label_colors",
    "map_label_colors",
    "own_color_scheme",
    "annotation_layers",
    "post_processing",
    "cache_timeout",
    "standalone",
    "chart_id",
    "remote_id",
    "import_time",
    "time_compare",
    "comparison_type",
];

/// Whether `name` may name an own control: `^[a-z][a-z0-9_]{0,63}$`, not a shared control's
/// key and not a key Superset reserves.
pub fn valid_control_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
        && !SharedControl::ALL.iter().any(|s| s.key() == name)
        && !RESERVED_KEYS.contains(&name)
}

/// The description a viz type gets when its plugin gives none: named after the plugin, in the
/// "Liteset" category, a "Query" section with the shared controls every SDK-scaffolded viz
/// reads (metrics, group by, filters, row limit), and, when the plugin's `params_schema` is a
/// JSON Schema object, a "Customize" section with one control per top-level property whose
/// type maps to a control (string → text, or select with `enum`; number → number; integer →
/// whole number; boolean → checkbox), labelled by `title`. Properties with invalid or
/// colliding names are skipped, texts are cut to the limits, so the result always passes
/// [`validate`].
pub fn default_chart_type(
    viz_type: &str,
    label: &str,
    description: &str,
    params_schema: Option<&Json>,
) -> ChartType {
    let name = if label.is_empty() { viz_type } else { label };
    let mut sections = vec![Section {
        label: "Query".into(),
        expanded: true,
        rows: [
            SharedControl::Metrics,
            SharedControl::Groupby,
            SharedControl::AdhocFilters,
            SharedControl::RowLimit,
        ]
        .into_iter()
        .map(|s| vec![Control::Shared(s)])
        .collect(),
    }];
    let custom = params_schema.map(schema_controls).unwrap_or_default();
    if !custom.is_empty() {
        sections.push(Section {
            label: "Customize".into(),
            expanded: true,
            rows: custom.into_iter().map(|c| vec![c]).collect(),
        });
    }
    ChartType {
        viz_type: viz_type.to_owned(),
        name: cut_chars(name, MAX_NAME_CHARS),
        description: cut_bytes(description, MAX_TEXT_BYTES),
        category: "Liteset".into(),
        tags: vec!["Liteset".into()],
        thumbnail: None,
        sections,
    }
}

/// One control per mappable top-level property of a JSON Schema object.
fn schema_controls(schema: &Json) -> Vec<Control> {
    let Some(props) = schema.get("properties").and_then(Json::as_object) else {
        return Vec::new();
    };
    // The Query section's shared controls take room in the per-chart-type budget.
    let room = MAX_CONTROLS - 4;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (name, prop) in props {
        if out.len() == room {
            break;
        }
        if !valid_control_name(name) || !seen.insert(name.as_str()) {
            continue;
        }
        let text = |key: &str| {
            prop.get(key)
                .and_then(Json::as_str)
                .map(|s| cut_bytes(s, MAX_TEXT_BYTES))
        };
        let label = text("title").unwrap_or_else(|| name.clone());
        let description = text("description").unwrap_or_default();
        let name = name.clone();
        let control = match prop.get("type").and_then(Json::as_str) {
            Some("string") => match prop.get("enum").and_then(Json::as_array) {
                Some(values) => {
                    let options: Vec<SelectOption> = values
                        .iter()
                        .filter_map(Json::as_str)
                        .filter(|v| v.len() <= MAX_TEXT_BYTES)
                        .take(MAX_OPTIONS)
                        .map(|v| SelectOption {
                            value: v.to_owned(),
                            label: v.to_owned(),
                        })
                        .collect();
                    let Some(first) = options.first() else {
                        continue;
                    };
                    let default = text("default")
                        .filter(|d| options.iter().any(|o| &o.value == d))
                        .unwrap_or_else(|| first.value.clone());
                    Control::Select {
                        name,
                        label,
                        description,
                        default,
                        options,
                    }
                }
                None => Control::Text {
                    name,
                    label,
                    description,
                    default: text("default").unwrap_or_default(),
                },
            },
            Some(t @ ("number" | "integer")) => {
                let integer = t == "integer";
                let bound = |key: &str| {
                    prop.get(key)
                        .and_then(Json::as_f64)
                        .filter(|v| v.is_finite())
                };
                let (min, max) = (bound("minimum"), bound("maximum"));
                if matches!((min, max), (Some(a), Some(b)) if a > b) {
                    continue;
                }
                let mut default = bound("default").unwrap_or(0.0);
                if integer {
                    default = default.trunc();
                }
                if let Some(m) = min {
                    default = default.max(m);
                }
                if let Some(m) = max {
                    default = default.min(m);
                }
                Control::Number {
                    name,
                    label,
                    description,
                    default,
                    min,
                    max,
                    integer,
                }
            }
            Some("boolean") => Control::Checkbox {
                name,
                label,
                description,
                default: prop.get("default").and_then(Json::as_bool).unwrap_or(false),
            },
            _ => continue,
        };
        out.push(control);
    }
    // A default cut to the limits can still break a rule (an integer default clamped to a
    // fractional bound); such a control is dropped rather than refusing a 0.1.0 plugin.
    out.retain(|c| check_control(c, &mut HashSet::new(), &mut HashSet::new()).is_ok());
    out
}

/// Checks a plugin's chart types against its `viz_types` and the rules above, and completes
/// them: a declared viz type left out gets `default_for(viz_type)`. The result follows the
/// order of `viz_types`. The error names the chart type and the problem.
pub fn validate(
    viz_types: &[String],
    declared: Vec<ChartType>,
    default_for: impl Fn(&str) -> ChartType,
) -> Result<Vec<ChartType>, String> {
    let mut given: Vec<Option<ChartType>> = vec![None; viz_types.len()];
    for ct in declared {
        let Some(i) = viz_types.iter().position(|v| *v == ct.viz_type) else {
            return Err(format!(
                "chart type {:?} is not one of the plugin's viz types ({})",
                cut_chars(&ct.viz_type, 64),
                viz_types.join(", ")
            ));
        };
        if given[i].is_some() {
            return Err(format!(
                "chart type {:?} is described more than once",
                ct.viz_type
            ));
        }
        check_chart_type(&ct).map_err(|e| format!("chart type {:?}: {e}", ct.viz_type))?;
        given[i] = Some(ct);
    }
    Ok(given
        .into_iter()
        .zip(viz_types)
        .map(|(ct, v)| ct.unwrap_or_else(|| default_for(v)))
        .collect())
}

fn check_chart_type(ct: &ChartType) -> Result<(), String> {
    for (what, s) in [("name", &ct.name), ("category", &ct.category)] {
        if s.trim().is_empty() {
            return Err(format!("the {what} is empty"));
        }
        if s.chars().count() > MAX_NAME_CHARS {
            return Err(format!(
                "the {what} is longer than {MAX_NAME_CHARS} characters"
            ));
        }
    }
    text("the description", &ct.description)?;
    if ct.tags.len() > MAX_TAGS {
        return Err(format!("more than {MAX_TAGS} tags"));
    }
    for t in &ct.tags {
        text("a tag", t)?;
    }
    if ct
        .thumbnail
        .as_ref()
        .is_some_and(|t| t.len() > MAX_THUMBNAIL_BYTES)
    {
        return Err(format!(
            "the thumbnail is larger than {MAX_THUMBNAIL_BYTES} bytes"
        ));
    }
    if ct.sections.len() > MAX_SECTIONS {
        return Err(format!("more than {MAX_SECTIONS} sections"));
    }
    let total: usize = ct.sections.iter().flat_map(|s| &s.rows).map(Vec::len).sum();
    if total > MAX_CONTROLS {
        return Err(format!("more than {MAX_CONTROLS} controls"));
    }
    let (mut own, mut shared) = (HashSet::new(), HashSet::new());
    for s in &ct.sections {
        text("a section label", &s.label)?;
        for row in &s.rows {
            if row.is_empty() {
                return Err(format!("section {:?} has an empty row", s.label));
            }
            for c in row {
                check_control(c, &mut own, &mut shared)?;
            }
        }
    }
    Ok(())
}

fn check_control<'a>(
    c: &'a Control,
    own: &mut HashSet<&'a str>,
    shared: &mut HashSet<SharedControl>,
) -> Result<(), String> {
    let (name, label, description) = match c {
        Control::Shared(s) => {
            if !shared.insert(*s) {
                return Err(format!("the shared control {} appears twice", s.key()));
            }
            return Ok(());
        }
        Control::Text {
            name,
            label,
            description,
            ..
        }
        | Control::Number {
            name,
            label,
            description,
            ..
        }
        | Control::Checkbox {
            name,
            label,
            description,
            ..
        }
        | Control::Select {
            name,
            label,
            description,
            ..
        } => (name, label, description),
    };
    if !valid_control_name(name) {
        let why = if SharedControl::ALL.iter().any(|s| s.key() == name) {
            "is a shared control's key; use the shared control"
        } else if RESERVED_KEYS.contains(&name.as_str()) {
            "is a form-data key Superset reserves"
        } else {
            "must match ^[a-z][a-z0-9_]{0,63}$"
        };
        return Err(format!(
            "control name {:?} {why}",
            cut_chars(name, MAX_NAME_CHARS)
        ));
    }
    if !own.insert(name) {
        return Err(format!("control name {name:?} is used twice"));
    }
    if label.trim().is_empty() {
        return Err(format!("control {name:?} has an empty label"));
    }
    text("a control label", label)?;
    text("a control description", description)?;
    match c {
        Control::Text { default, .. } => text("a default", default)?,
        Control::Number {
            default,
            min,
            max,
            integer,
            ..
        } => {
            let finite = |v: &Option<f64>| v.is_none_or(|v| v.is_finite());
            if !default.is_finite() || !finite(min) || !finite(max) {
                return Err(format!("control {name:?} has a number that is not finite"));
            }
            if min.is_some_and(|m| *default < m) || max.is_some_and(|m| *default > m) {
                return Err(format!(
                    "control {name:?}'s default is outside its min and max"
                ));
            }
            if *integer && default.fract() != 0.0 {
                return Err(format!(
                    "control {name:?} takes whole numbers but its default is not one"
                ));
            }
        }
        Control::Select {
            default, options, ..
        } => {
            if options.is_empty() || options.len() > MAX_OPTIONS {
                return Err(format!("control {name:?} needs 1 to {MAX_OPTIONS} options"));
            }
            let mut values = HashSet::new();
            for o in options {
                text("an option value", &o.value)?;
                text("an option label", &o.label)?;
                if !values.insert(o.value.as_str()) {
                    return Err(format!(
                        "control {name:?} offers the value {:?} twice",
                        o.value
                    ));
                }
            }
            if !values.contains(default.as_str()) {
                return Err(format!(
                    "control {name:?}'s default {:?} is not one of its options",
                    cut_chars(default, 64)
                ));
            }
        }
        Control::Checkbox { .. } | Control::Shared(_) => {}
    }
    Ok(())
}

fn text(what: &str, s: &str) -> Result<(), String> {
    if s.len() > MAX_TEXT_BYTES {
        return Err(format!("{what} is longer than {MAX_TEXT_BYTES} bytes"));
    }
    Ok(())
}

fn cut_bytes(s: &str, max: usize) -> String {
    let mut cut = s.len().min(max);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s[..cut].to_owned()
}

fn cut_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn types(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn text_control(name: &str) -> Control {
        Control::Text {
            name: name.into(),
            label: "Label".into(),
            description: String::new(),
            default: String::new(),
        }
    }

    fn chart(viz_type: &str, controls: Vec<Control>) -> ChartType {
        ChartType {
            viz_type: viz_type.into(),
            name: "Chart".into(),
            description: String::new(),
            category: "Evolution".into(),
            tags: vec![],
            thumbnail: None,
            sections: vec![Section {
                label: "Query".into(),
                expanded: true,
                rows: controls.into_iter().map(|c| vec![c]).collect(),
            }],
        }
    }

    fn check(ct: ChartType) -> Result<Vec<ChartType>, String> {
        validate(&types(&["a", "b"]), vec![ct], |v| {
            default_chart_type(v, "Plugin", "", None)
        })
    }

    #[test]
    fn shared_control_keys_are_superset_form_data_keys() {
        let keys: Vec<&str> = SharedControl::ALL.iter().map(|s| s.key()).collect();
        assert_eq!(
            keys,
            [
                "metric",
                "metrics",
                "groupby",
                "columns",
                "x_axis",
                "time_grain_sqla",
                "adhoc_filters",
                "row_limit",
                "series_limit",
                "order_desc",
                "color_scheme",
                "y_axis_format",
                "x_axis_time_format",
                "currency_format"
            ]
        );
    }

    #[test]
    fn the_default_is_a_query_section_named_after_the_plugin() {
        let ct = default_chart_type("legacy", "Legacy chart", "Old", None);
        assert_eq!(ct.name, "Legacy chart");
        assert_eq!(ct.description, "Old");
        assert_eq!(ct.category, "Liteset");
        assert_eq!(ct.tags, ["Liteset"]);
        assert_eq!(ct.thumbnail, None);
        assert_eq!(ct.sections.len(), 1);
        assert_eq!(ct.sections[0].label, "Query");
        assert!(ct.sections[0].expanded);
        assert_eq!(
            ct.sections[0].rows,
            vec![
                vec![Control::Shared(SharedControl::Metrics)],
                vec![Control::Shared(SharedControl::Groupby)],
                vec![Control::Shared(SharedControl::AdhocFilters)],
                vec![Control::Shared(SharedControl::RowLimit)],
            ]
        );
        assert_eq!(default_chart_type("legacy", "", "", None).name, "legacy");
    }

    #[test]
    fn the_default_maps_params_schema_properties_to_controls() {
        let schema = json!({"type": "object", "properties": {
            "caption": {"type": "string", "title": "Caption", "default": "hello", "description": "Shown"},
            "shape": {"type": "string", "enum": ["bar", "dot"], "default": "dot"},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
            "count": {"type": "integer", "default": 3},
            "flag": {"type": "boolean", "default": true},
            "row_limit": {"type": "integer"},
            "viz_type": {"type": "string"},
            "Bad-Name": {"type": "string"},
            "nested": {"type": "object"},
        }});
        let ct = default_chart_type("v", "P", "", Some(&schema));
        assert_eq!(ct.sections.len(), 2);
        assert_eq!(ct.sections[1].label, "Customize");
        let controls: Vec<Control> = ct.sections[1].rows.iter().flatten().cloned().collect();
        assert_eq!(
            controls,
            vec![
                Control::Text {
                    name: "caption".into(),
                    label: "Caption".into(),
                    description: "Shown".into(),
                    default: "hello".into()
                },
                Control::Select {
                    name: "shape".into(),
                    label: "shape".into(),
                    description: String::new(),
                    default: "dot".into(),
                    options: vec![
                        SelectOption {
                            value: "bar".into(),
                            label: "bar".into()
                        },
                        SelectOption {
                            value: "dot".into(),
                            label: "dot".into()
                        }
                    ]
                },
                Control::Number {
                    name: "ratio".into(),
                    label: "ratio".into(),
                    description: String::new(),
                    default: 0.5,
                    min: Some(0.0),
                    max: Some(1.0),
                    integer: false
                },
                Control::Number {
                    name: "count".into(),
                    label: "count".into(),
                    description: String::new(),
                    default: 3.0,
                    min: None,
                    max: None,
                    integer: true
                },
                Control::Checkbox {
                    name: "flag".into(),
                    label: "flag".into(),
                    description: String::new(),
                    default: true
                },
            ]
        );
        // Whatever the schema, the default passes the rules.
        assert!(check_chart_type(&ct).is_ok());
    }

    #[test]
    fn a_schema_without_mappable_properties_adds_no_section() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "array"}}});
        assert_eq!(
            default_chart_type("v", "P", "", Some(&schema))
                .sections
                .len(),
            1
        );
        assert_eq!(
            default_chart_type("v", "P", "", Some(&json!(true)))
                .sections
                .len(),
            1
        );
    }

    #[test]
    fn missing_viz_types_get_the_default_in_declared_order() {
        let out = check(chart("b", vec![Control::Shared(SharedControl::Metric)])).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], default_chart_type("a", "Plugin", "", None));
        assert_eq!(out[1].name, "Chart");
    }

    #[test]
    fn unknown_and_repeated_viz_types_are_refused() {
        let err = check(chart("c", vec![])).unwrap_err();
        assert!(
            err.contains("\"c\" is not one of the plugin's viz types"),
            "{err}"
        );
        let err = validate(
            &types(&["a"]),
            vec![chart("a", vec![]), chart("a", vec![])],
            |v| default_chart_type(v, "", "", None),
        )
        .unwrap_err();
        assert!(err.contains("more than once"), "{err}");
    }

    #[test]
    fn control_names_are_checked() {
        for (name, why) in [
            ("Total", "must match"),
            ("1x", "must match"),
            ("", "must match"),
            ("row_limit", "shared control"),
            ("viz_type", "reserves"),
            ("datasource", "reserves"),
            ("time_range", "reserves"),
        ] {
            let err = check(chart("a", vec![text_control(name)])).unwrap_err();
            assert!(err.contains(why), "{name}: {err}");
            assert!(err.starts_with("chart type \"a\": control name"), "{err}");
        }
        let long = "x".repeat(65);
        assert!(check(chart("a", vec![text_control(&long)])).is_err());
        assert!(check(chart("a", vec![text_control(&"x".repeat(64))])).is_ok());
        let err = check(chart("a", vec![text_control("t"), text_control("t")])).unwrap_err();
        assert!(err.contains("\"t\" is used twice"), "{err}");
        let err = check(chart(
            "a",
            vec![
                Control::Shared(SharedControl::Metric),
                Control::Shared(SharedControl::Metric),
            ],
        ))
        .unwrap_err();
        assert!(err.contains("shared control metric appears twice"), "{err}");
    }

    #[test]
    fn sizes_are_bounded() {
        let mut ct = chart("a", vec![]);
        ct.name = String::new();
        assert!(check(ct).unwrap_err().contains("name is empty"));
        let mut ct = chart("a", vec![]);
        ct.category = "c".repeat(129);
        assert!(check(ct).unwrap_err().contains("category is longer"));
        let mut ct = chart("a", vec![]);
        ct.thumbnail = Some("<svg/>".repeat(50_000));
        assert!(check(ct).unwrap_err().contains("thumbnail is larger"));
        let mut ct = chart("a", vec![]);
        ct.description = "d".repeat(1025);
        assert!(check(ct).unwrap_err().contains("description is longer"));
        let mut ct = chart("a", vec![]);
        ct.sections = vec![ct.sections[0].clone(); 21];
        assert!(check(ct).unwrap_err().contains("more than 20 sections"));
        let controls = (0..101).map(|i| text_control(&format!("c{i}"))).collect();
        assert!(
            check(chart("a", controls))
                .unwrap_err()
                .contains("more than 100 controls")
        );
        let options = (0..51)
            .map(|i| SelectOption {
                value: i.to_string(),
                label: i.to_string(),
            })
            .collect();
        let select = Control::Select {
            name: "s".into(),
            label: "S".into(),
            description: String::new(),
            default: "0".into(),
            options,
        };
        assert!(
            check(chart("a", vec![select]))
                .unwrap_err()
                .contains("1 to 50 options")
        );
    }

    #[test]
    fn control_values_are_consistent() {
        let number = |default: f64, min, max, integer| Control::Number {
            name: "n".into(),
            label: "N".into(),
            description: String::new(),
            default,
            min,
            max,
            integer,
        };
        assert!(check(chart("a", vec![number(1.0, Some(0.0), Some(2.0), true)])).is_ok());
        assert!(check(chart("a", vec![number(3.0, Some(0.0), Some(2.0), false)])).is_err());
        assert!(check(chart("a", vec![number(0.5, None, None, true)])).is_err());
        assert!(check(chart("a", vec![number(f64::NAN, None, None, false)])).is_err());
        let select = |default: &str| Control::Select {
            name: "s".into(),
            label: "S".into(),
            description: String::new(),
            default: default.into(),
            options: vec![SelectOption {
                value: "x".into(),
                label: "X".into(),
            }],
        };
        assert!(check(chart("a", vec![select("x")])).is_ok());
        let err = check(chart("a", vec![select("y")])).unwrap_err();
        assert!(err.contains("not one of its options"), "{err}");
    }
}
