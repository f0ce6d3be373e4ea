//! How a viz plugin's chart types appear in Superset's web app (STUB: replaced by the WIT 0.2
//! branch).

/// A chart type as the app shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartType {
    pub viz_type: String,
    pub name: String,
    pub description: String,
    pub category: String,
    pub tags: Vec<String>,
    /// Raw SVG from the plugin (size-checked, not sanitised).
    pub thumbnail: Option<String>,
    pub sections: Vec<Section>,
}

/// A section of the control panel.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub label: String,
    pub expanded: bool,
    pub rows: Vec<Vec<Control>>,
}

/// An option of a select control.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectOption {
    pub value: String,
    pub label: String,
}

/// One control.
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    Shared(SharedControl),
    Text {
        name: String,
        label: String,
        description: String,
        default: String,
    },
    Number {
        name: String,
        label: String,
        description: String,
        default: f64,
        min: Option<f64>,
        max: Option<f64>,
        integer: bool,
    },
    Checkbox {
        name: String,
        label: String,
        description: String,
        default: bool,
    },
    Select {
        name: String,
        label: String,
        description: String,
        default: String,
        options: Vec<SelectOption>,
    },
}

/// One of Superset's shared controls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedControl {
    Metric,
    Metrics,
    Groupby,
    Columns,
    XAxis,
    TimeGrainSqla,
    AdhocFilters,
    RowLimit,
    SeriesLimit,
    OrderDesc,
    ColorScheme,
    YAxisFormat,
    XAxisTimeFormat,
    CurrencyFormat,
}

impl SharedControl {
    /// Its form-data key.
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

/// STUB default: a Query section.
pub fn default_for(viz_type: &str, label: &str, description: &str) -> ChartType {
    let shared = |s| vec![Control::Shared(s)];
    ChartType {
        viz_type: viz_type.to_owned(),
        name: if label.is_empty() {
            viz_type.to_owned()
        } else {
            label.to_owned()
        },
        description: description.to_owned(),
        category: "Liteset".into(),
        tags: vec!["Liteset".into()],
        thumbnail: None,
        sections: vec![Section {
            label: "Query".into(),
            expanded: true,
            rows: vec![
                shared(SharedControl::XAxis),
                shared(SharedControl::TimeGrainSqla),
                shared(SharedControl::Metric),
                shared(SharedControl::AdhocFilters),
                shared(SharedControl::RowLimit),
            ],
        }],
    }
}
