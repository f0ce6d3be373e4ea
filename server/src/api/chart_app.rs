//! Viz plugins in Superset's own web app (its `DYNAMIC_PLUGINS` hook), over
//! [`crate::services::chart_app`]:
//! - `GET /dynamic-plugins/api/read`: Superset's `DynamicPluginsView` list (FAB's `api_read`),
//!   one entry per chart type, every entry naming the one app bridge as its bundle;
//! - `GET /api/v1/chart_type/`: the chart types with their control panels, which the bridge
//!   registers;
//! - `POST /api/v1/chart_type/<viz_type>/render`: the picture of rows the app holds.
//!
//! The bridge itself (`chart_app/bridge.js`) is a plain route at [`BRIDGE_PATH`]
//! ([`bridge_script`]), outside the OpenAPI document like the app's other assets.

use std::sync::Arc;

use base64::Engine as _;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::types::Any;
use poem_openapi::{Object, OpenApi};
use serde::Deserialize;
use serde_json::{Value as Json_, json};

use super::Tags;
use super::error::ApiError;
use super::extract::{Auth, JsonBody, parse_value};
use super::resource;
use super::wire::{Body, Nullable, Obj, ResultOf};
use crate::plugins::chart_type::{ChartType, Control};
use crate::services::chart_app::{self, AppChartType, Drawing, Rows};
use crate::state::AppState;

/// Where the app bridge is served (an ES module the app `import()`s).
pub const BRIDGE_PATH: &str = "/liteset/app/bridge.js";

/// The app bridge: a plain ES module over the app's shared modules, no build step.
pub const BRIDGE_JS: &str = include_str!("chart_app/bridge.js");

/// Serves the bridge. `no-cache`: the app revalidates it on each page load, so a server
/// upgrade's bridge is picked up (the `?v=` of its URL changes with the installed plugins).
#[poem::handler]
pub fn bridge_script() -> poem::Response {
    poem::Response::builder()
        .content_type("text/javascript; charset=utf-8")
        .header(poem::http::header::CACHE_CONTROL, "no-cache")
        .header("X-Content-Type-Options", "nosniff")
        .body(BRIDGE_JS)
}

/// The chart-type endpoints.
pub struct ChartAppApi {
    pub(super) state: Arc<AppState>,
}

/// One entry of Superset's dynamic plugin list.
#[derive(Object)]
pub struct DynamicPlugin {
    /// Position in the list.
    pub id: i64,
    /// The chart type's name.
    pub name: String,
    /// The `viz_type` it registers.
    pub key: String,
    /// The ES module the app imports (the bridge, for every entry).
    pub bundle_url: String,
}

/// FAB's column labels of the list.
#[derive(Object)]
pub struct DynamicPluginLabels {
    /// "Bundle URL".
    pub bundle_url: String,
    /// "Id".
    pub id: String,
    /// "Key".
    pub key: String,
    /// "Name".
    pub name: String,
}

/// FAB `ModelView.api_read`'s answer, as Superset's `DynamicPluginsView` gives it.
#[derive(Object)]
pub struct DynamicPluginList {
    /// Column labels.
    pub label_columns: DynamicPluginLabels,
    /// Columns of each entry.
    pub list_columns: Vec<String>,
    /// Columns the list may be ordered by.
    pub order_columns: Vec<String>,
    /// Page asked for (none).
    pub page: Nullable<i64>,
    /// Page size asked for (none).
    pub page_size: Nullable<i64>,
    /// How many entries.
    pub count: u64,
    /// The view's name.
    pub modelview_name: String,
    /// The entries' ids.
    pub pks: Vec<i64>,
    /// The entries.
    pub result: Vec<DynamicPlugin>,
}

/// One control of a chart type's control panel.
#[derive(Object)]
pub struct ControlWire {
    /// `shared` (one of Superset's shared controls), `text`, `number`, `checkbox` or `select`.
    pub kind: String,
    /// The form-data key it sets.
    pub name: String,
    /// Its label (own controls).
    pub label: Option<String>,
    /// Its help text (own controls).
    pub description: Option<String>,
    /// Its default value (own controls).
    pub default: Option<Any<Json_>>,
    /// Lowest value (number).
    pub min: Option<f64>,
    /// Highest value (number).
    pub max: Option<f64>,
    /// Whole numbers only (number).
    pub integer: Option<bool>,
    /// `[value, label]` pairs (select).
    pub options: Option<Vec<Vec<String>>>,
}

/// A section of a control panel.
#[derive(Object)]
pub struct SectionWire {
    /// Its title.
    pub label: String,
    /// Whether it starts open.
    pub expanded: bool,
    /// Rows of controls.
    pub rows: Vec<Vec<ControlWire>>,
}

/// A chart type of an installed viz plugin, as the app registers it.
#[derive(Object)]
pub struct ChartTypeWire {
    /// The `viz_type`.
    pub viz_type: String,
    /// Its name in the gallery.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// Its gallery category.
    pub category: String,
    /// Its gallery tags.
    pub tags: Vec<String>,
    /// The gallery picture: a `data:` URL of the sanitised SVG.
    pub thumbnail: String,
    /// The plugin drawing it.
    pub plugin: String,
    /// That plugin's version.
    pub version: String,
    /// The control panel.
    pub sections: Vec<SectionWire>,
}

/// `GET /api/v1/chart_type/`.
#[derive(Object)]
pub struct ChartTypeList {
    /// How many chart types.
    pub count: u64,
    /// The chart types, by viz type.
    pub result: Vec<ChartTypeWire>,
}

/// The body of a drawing request.
#[derive(Object)]
pub struct DrawSchema {
    /// The chart's form data.
    pub form_data: Any<Json_>,
    /// The chart-data results, in order.
    pub queries: Vec<RowsSchema>,
    /// Width in CSS pixels.
    pub width: u32,
    /// Height in CSS pixels.
    pub height: u32,
}

/// One chart-data result, as `/chart/data` answered it.
#[derive(Object)]
pub struct RowsSchema {
    /// The records.
    pub data: Any<Json_>,
    /// Column names.
    pub colnames: Option<Vec<String>>,
    /// Superset's `GenericDataType` per column.
    pub coltypes: Option<Vec<i64>>,
}

#[derive(Deserialize)]
struct DrawIn {
    form_data: Json_,
    queries: Vec<RowsIn>,
    width: u32,
    height: u32,
}

#[derive(Deserialize)]
struct RowsIn {
    data: Json_,
    #[serde(default)]
    colnames: Option<Vec<String>>,
    #[serde(default)]
    coltypes: Option<Vec<i64>>,
}

/// What a drawing produced.
#[derive(Object)]
pub struct DrawResult {
    /// The sanitised SVG document, sized to the request.
    pub svg: Nullable<String>,
    /// The plugin's JSON payload, if it returns one.
    pub payload: Nullable<Any<Json_>>,
}

fn control(c: &Control) -> ControlWire {
    let own =
        |kind: &str, name: &str, label: &str, description: &str, default: Json_| ControlWire {
            kind: kind.into(),
            name: name.into(),
            label: Some(label.into()),
            description: Some(description.into()),
            default: Some(Any(default)),
            min: None,
            max: None,
            integer: None,
            options: None,
        };
    match c {
        Control::Shared(s) => ControlWire {
            kind: "shared".into(),
            name: s.key().into(),
            label: None,
            description: None,
            default: None,
            min: None,
            max: None,
            integer: None,
            options: None,
        },
        Control::Text {
            name,
            label,
            description,
            default,
        } => own("text", name, label, description, json!(default)),
        Control::Number {
            name,
            label,
            description,
            default,
            min,
            max,
            integer,
        } => ControlWire {
            min: *min,
            max: *max,
            integer: Some(*integer),
            ..own("number", name, label, description, json!(default))
        },
        Control::Checkbox {
            name,
            label,
            description,
            default,
        } => own("checkbox", name, label, description, json!(default)),
        Control::Select {
            name,
            label,
            description,
            default,
            options,
        } => ControlWire {
            options: Some(
                options
                    .iter()
                    .map(|o| vec![o.value.clone(), o.label.clone()])
                    .collect(),
            ),
            ..own("select", name, label, description, json!(default))
        },
    }
}

fn chart_type(t: &AppChartType) -> ChartTypeWire {
    let c: &ChartType = &t.chart;
    ChartTypeWire {
        viz_type: c.viz_type.clone(),
        name: c.name.clone(),
        description: c.description.clone(),
        category: c.category.clone(),
        tags: c.tags.clone(),
        thumbnail: format!(
            "data:image/svg+xml;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&t.thumbnail)
        ),
        plugin: t.plugin.clone(),
        version: t.version.clone(),
        sections: c
            .sections
            .iter()
            .map(|s| SectionWire {
                label: s.label.clone(),
                expanded: s.expanded,
                rows: s
                    .rows
                    .iter()
                    .map(|r| r.iter().map(control).collect())
                    .collect(),
            })
            .collect(),
    }
}

#[OpenApi(tag = "Tags::Plugin")]
impl ChartAppApi {
    /// Superset's dynamic plugin list: every chart type of the installed viz plugins, each
    /// loaded through the app bridge. Anyone signed in (guests of embedded dashboards too)
    /// gets the list; an anonymous page gets an empty one, since the app waits for this
    /// answer before drawing dashboards.
    #[oai(
        path = "/dynamic-plugins/api/read",
        method = "get",
        operation_id = "dynamic_plugins_read"
    )]
    async fn read(&self, auth: Auth) -> Result<Json<DynamicPluginList>, ApiError> {
        let types = match auth.principal.user() {
            Some(_) => chart_app::chart_types(&self.state).await?,
            None => Vec::new(),
        };
        let revision = chart_app::revision(&self.state).await?;
        let bundle_url = format!("{BRIDGE_PATH}?v={revision}");
        let result: Vec<DynamicPlugin> = types
            .iter()
            .enumerate()
            .map(|(i, t)| DynamicPlugin {
                id: i as i64 + 1,
                name: t.chart.name.clone(),
                key: t.chart.viz_type.clone(),
                bundle_url: bundle_url.clone(),
            })
            .collect();
        let columns: Vec<String> = ["name", "key", "bundle_url", "id"]
            .map(String::from)
            .to_vec();
        Ok(Json(DynamicPluginList {
            label_columns: DynamicPluginLabels {
                bundle_url: "Bundle URL".into(),
                id: "Id".into(),
                key: "Key".into(),
                name: "Name".into(),
            },
            order_columns: columns.clone(),
            list_columns: columns,
            page: None.into(),
            page_size: None.into(),
            count: result.len() as u64,
            modelview_name: "DynamicPluginsView".into(),
            pks: result.iter().map(|p| p.id).collect(),
            result,
        }))
    }

    /// The chart types of the installed viz plugins with their control panels.
    #[oai(
        path = "/api/v1/chart_type/",
        method = "get",
        operation_id = "chart_type_list"
    )]
    async fn list(&self, auth: Auth) -> Result<Json<ChartTypeList>, ApiError> {
        resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let types = chart_app::chart_types(&self.state).await?;
        let result: Vec<ChartTypeWire> = types.iter().map(chart_type).collect();
        Ok(Json(ChartTypeList {
            count: result.len() as u64,
            result,
        }))
    }

    /// Draws the rows of a chart-data answer with the viz plugin of `viz_type`, at the given
    /// size: the app bridge's picture, the same as `render.svg` draws for a saved chart.
    #[oai(
        path = "/api/v1/chart_type/:viz_type/render",
        method = "post",
        operation_id = "chart_type_render"
    )]
    async fn render(
        &self,
        auth: Auth,
        viz_type: Path<String>,
        body: JsonBody<Body<Obj<DrawSchema>>>,
    ) -> Result<Json<ResultOf<DrawResult>>, ApiError> {
        let user = resource::authorized(&self.state, &auth, "can_read", "Chart").await?;
        let input: DrawIn = parse_value(body.0.value)?;
        let drawing = Drawing {
            viz_type: viz_type.0,
            form_data: input.form_data,
            queries: input
                .queries
                .into_iter()
                .map(|q| Rows {
                    data: q.data,
                    colnames: q.colnames.unwrap_or_default(),
                    coltypes: q.coltypes.unwrap_or_default(),
                })
                .collect(),
            size: (input.width, input.height),
        };
        let request_id = format!("app-{}", user.user.id);
        let drawn = chart_app::draw(&self.state, &user, drawing, &request_id).await?;
        Ok(ResultOf::json(DrawResult {
            svg: drawn.svg.into(),
            payload: drawn.payload.map(Any).into(),
        }))
    }
}
