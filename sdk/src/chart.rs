//! How a viz plugin's chart types appear in Superset's web app (the WIT `chart-app` export,
//! new in `liteset:plugin@0.2.0`): the gallery entry (name, description, category, tags,
//! thumbnail) and the control panel (sections of rows of controls), built with small builders.
//!
//! ```
//! use liteset_sdk::{ChartType, Control, Section, Shared};
//!
//! let chart = ChartType::new("waterfall", "Waterfall")
//!     .description("How a total is built up from increases and decreases")
//!     .category("Evolution")
//!     .tags(["Liteset", "Comparison"])
//!     .section(
//!         Section::new("Query")
//!             .expanded(true)
//!             .row([Control::shared(Shared::XAxis)])
//!             .row([Control::shared(Shared::Metric)]),
//!     )
//!     .section(
//!         Section::new("Chart options")
//!             .expanded(true)
//!             .row([Control::checkbox("show_total", "Show total").default(true)])
//!             .row([Control::text("total_label", "Total label").default("Total")])
//!             .row([Control::select("bar_color", "Bar colour", [("#1F77B4", "Blue"), ("#5AC189", "Green")])]),
//!     );
//! assert_eq!(chart.sections[1].rows.len(), 3);
//! ```
//!
//! The host checks the description when the plugin is installed (see the guide's "Your chart
//! type in Superset's app" rules): own control names match `^[a-z][a-z0-9_]{0,63}$`, are unique
//! within the chart type and are neither a [`Shared`] key nor a form-data key Superset
//! reserves; sizes are bounded. The values of own controls reach `render` in the form data
//! under their names.

/// One of Superset's shared controls (`sharedControls` of `@superset-ui/chart-controls`), stored
/// in form data under [`key`](Shared::key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shared {
    /// `metric`: one metric.
    Metric,
    /// `metrics`: several metrics.
    Metrics,
    /// `groupby`: dimensions.
    Groupby,
    /// `columns`: columns (table-like charts).
    Columns,
    /// `x_axis`: the x-axis column.
    XAxis,
    /// `time_grain_sqla`: the time grain of a temporal x axis.
    TimeGrainSqla,
    /// `adhoc_filters`: filters.
    AdhocFilters,
    /// `row_limit`.
    RowLimit,
    /// `series_limit`.
    SeriesLimit,
    /// `order_desc`.
    OrderDesc,
    /// `color_scheme`.
    ColorScheme,
    /// `y_axis_format`: a d3 number format.
    YAxisFormat,
    /// `x_axis_time_format`: a d3 time format.
    XAxisTimeFormat,
    /// `currency_format`.
    CurrencyFormat,
}

impl Shared {
    /// The form-data key, e.g. `x_axis`.
    pub fn key(self) -> &'static str {
        match self {
            Shared::Metric => "metric",
            Shared::Metrics => "metrics",
            Shared::Groupby => "groupby",
            Shared::Columns => "columns",
            Shared::XAxis => "x_axis",
            Shared::TimeGrainSqla => "time_grain_sqla",
            Shared::AdhocFilters => "adhoc_filters",
            Shared::RowLimit => "row_limit",
            Shared::SeriesLimit => "series_limit",
            Shared::OrderDesc => "order_desc",
            Shared::ColorScheme => "color_scheme",
            Shared::YAxisFormat => "y_axis_format",
            Shared::XAxisTimeFormat => "x_axis_time_format",
            Shared::CurrencyFormat => "currency_format",
        }
    }
}

/// A free-text control (built by [`Control::text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextControl {
    /// Form-data key.
    pub name: String,
    /// Shown above the control.
    pub label: String,
    /// Tooltip.
    pub description: String,
    /// Initial value (empty by default).
    pub default: String,
}

impl TextControl {
    /// Sets the tooltip.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the initial value.
    pub fn default(mut self, default: impl Into<String>) -> Self {
        self.default = default.into();
        self
    }
}

/// A number control (built by [`Control::number`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NumberControl {
    /// Form-data key.
    pub name: String,
    /// Shown above the control.
    pub label: String,
    /// Tooltip.
    pub description: String,
    /// Initial value (0 by default).
    pub default: f64,
    /// Smallest allowed value.
    pub min: Option<f64>,
    /// Largest allowed value.
    pub max: Option<f64>,
    /// Whole numbers only.
    pub integer: bool,
}

impl NumberControl {
    /// Sets the tooltip.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the initial value.
    pub fn default(mut self, default: f64) -> Self {
        self.default = default;
        self
    }

    /// Sets the smallest allowed value.
    pub fn min(mut self, min: f64) -> Self {
        self.min = Some(min);
        self
    }

    /// Sets the largest allowed value.
    pub fn max(mut self, max: f64) -> Self {
        self.max = Some(max);
        self
    }

    /// Accepts whole numbers only.
    pub fn integer(mut self, integer: bool) -> Self {
        self.integer = integer;
        self
    }
}

/// A checkbox (built by [`Control::checkbox`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckboxControl {
    /// Form-data key.
    pub name: String,
    /// Shown next to the box.
    pub label: String,
    /// Tooltip.
    pub description: String,
    /// Initial value (unchecked by default).
    pub default: bool,
}

impl CheckboxControl {
    /// Sets the tooltip.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the initial value.
    pub fn default(mut self, default: bool) -> Self {
        self.default = default;
        self
    }
}

/// One choice of a select control: the value stored in form data, and its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectOption {
    /// Stored in form data.
    pub value: String,
    /// Shown.
    pub label: String,
}

/// A single-choice select (built by [`Control::select`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectControl {
    /// Form-data key.
    pub name: String,
    /// Shown above the control.
    pub label: String,
    /// Tooltip.
    pub description: String,
    /// Initial value: one of the options' values (the first by default).
    pub default: String,
    /// The choices.
    pub options: Vec<SelectOption>,
}

impl SelectControl {
    /// Sets the tooltip.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the initial value (must be one of the options' values).
    pub fn default(mut self, default: impl Into<String>) -> Self {
        self.default = default.into();
        self
    }
}

/// A control of the chart's control panel: a shared one, or the plugin's own.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// A Superset shared control.
    Shared(Shared),
    /// Free text.
    Text(TextControl),
    /// A number.
    Number(NumberControl),
    /// A checkbox.
    Checkbox(CheckboxControl),
    /// A single choice.
    Select(SelectControl),
}

impl Control {
    /// A shared control.
    pub fn shared(control: Shared) -> Control {
        Control::Shared(control)
    }

    /// A free-text control stored under `name`.
    pub fn text(name: impl Into<String>, label: impl Into<String>) -> TextControl {
        TextControl {
            name: name.into(),
            label: label.into(),
            description: String::new(),
            default: String::new(),
        }
    }

    /// A number control stored under `name`.
    pub fn number(name: impl Into<String>, label: impl Into<String>) -> NumberControl {
        NumberControl {
            name: name.into(),
            label: label.into(),
            description: String::new(),
            default: 0.0,
            min: None,
            max: None,
            integer: false,
        }
    }

    /// A checkbox stored under `name`.
    pub fn checkbox(name: impl Into<String>, label: impl Into<String>) -> CheckboxControl {
        CheckboxControl {
            name: name.into(),
            label: label.into(),
            description: String::new(),
            default: false,
        }
    }

    /// A select stored under `name`, offering `(value, label)` pairs; the first is the default.
    pub fn select<V: Into<String>, L: Into<String>>(
        name: impl Into<String>,
        label: impl Into<String>,
        options: impl IntoIterator<Item = (V, L)>,
    ) -> SelectControl {
        let options: Vec<SelectOption> = options
            .into_iter()
            .map(|(value, label)| SelectOption {
                value: value.into(),
                label: label.into(),
            })
            .collect();
        SelectControl {
            name: name.into(),
            label: label.into(),
            description: String::new(),
            default: options.first().map(|o| o.value.clone()).unwrap_or_default(),
            options,
        }
    }
}

impl From<Shared> for Control {
    fn from(c: Shared) -> Control {
        Control::Shared(c)
    }
}

impl From<TextControl> for Control {
    fn from(c: TextControl) -> Control {
        Control::Text(c)
    }
}

impl From<NumberControl> for Control {
    fn from(c: NumberControl) -> Control {
        Control::Number(c)
    }
}

impl From<CheckboxControl> for Control {
    fn from(c: CheckboxControl) -> Control {
        Control::Checkbox(c)
    }
}

impl From<SelectControl> for Control {
    fn from(c: SelectControl) -> Control {
        Control::Select(c)
    }
}

/// A collapsible section of the control panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Title.
    pub label: String,
    /// Whether it starts expanded.
    pub expanded: bool,
    /// Rows of one or more controls each.
    pub rows: Vec<Vec<Control>>,
}

impl Section {
    /// An empty, collapsed section.
    pub fn new(label: impl Into<String>) -> Section {
        Section {
            label: label.into(),
            expanded: false,
            rows: Vec::new(),
        }
    }

    /// Whether it starts expanded.
    pub fn expanded(mut self, expanded: bool) -> Self {
        self.expanded = expanded;
        self
    }

    /// Adds a row of controls (`[Control::shared(Shared::Metric)]`, or several side by side:
    /// `[a.into(), b.into()]`).
    pub fn row<C: Into<Control>>(mut self, controls: impl IntoIterator<Item = C>) -> Self {
        self.rows
            .push(controls.into_iter().map(Into::into).collect());
        self
    }
}

/// One chart type as Explore's gallery and control panel show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartType {
    /// One of the plugin's `viz_types`.
    pub viz_type: String,
    /// Shown in the gallery.
    pub name: String,
    /// What the chart shows.
    pub description: String,
    /// Gallery category (`Liteset` by default).
    pub category: String,
    /// Gallery tags.
    pub tags: Vec<String>,
    /// A small SVG document for the gallery (the host sanitises it).
    pub thumbnail: Option<String>,
    /// Control panel sections, in order.
    pub sections: Vec<Section>,
}

impl ChartType {
    /// A chart type for `viz_type` shown as `name`, in category `Liteset`, without sections.
    pub fn new(viz_type: impl Into<String>, name: impl Into<String>) -> ChartType {
        ChartType {
            viz_type: viz_type.into(),
            name: name.into(),
            description: String::new(),
            category: "Liteset".into(),
            tags: Vec::new(),
            thumbnail: None,
            sections: Vec::new(),
        }
    }

    /// What the host shows for a viz type its plugin does not describe (and for every viz
    /// type of a 0.1.0 plugin): named after the plugin's label (else the viz type), its
    /// description, category and tag `Liteset`, and a "Query" section with metrics, group by,
    /// filters and row limit. (The host adds a "Customize" section for the top-level
    /// properties of a `params_schema`; return no chart type for a viz type to get that.)
    pub fn default_for(viz_type: &str, label: &str, description: &str) -> ChartType {
        let name = if label.is_empty() { viz_type } else { label };
        ChartType::new(viz_type, name)
            .description(description)
            .tags(["Liteset"])
            .section(
                Section::new("Query")
                    .expanded(true)
                    .row([Shared::Metrics])
                    .row([Shared::Groupby])
                    .row([Shared::AdhocFilters])
                    .row([Shared::RowLimit]),
            )
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the gallery category.
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = category.into();
        self
    }

    /// Sets the tags.
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the gallery thumbnail, an SVG document.
    pub fn thumbnail(mut self, svg: impl Into<String>) -> Self {
        self.thumbnail = Some(svg.into());
        self
    }

    /// Appends a control panel section.
    pub fn section(mut self, section: Section) -> Self {
        self.sections.push(section);
        self
    }
}
