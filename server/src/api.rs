//! The HTTP surface: every route, the OpenAPI document and Swagger UI.
//!
//! Owns HTTP, poem and the JSON wire shapes. Handlers authenticate through the [`extract::Auth`]
//! extractor, call `AuthService::authorize` with the permission Superset uses for the endpoint,
//! then call the layers below; errors become Superset's envelopes only in [`error`].
//! Domain types never derive poem-openapi traits: each resource module has its own wire types.

mod assets;
mod bundles;
pub(crate) mod chart;
mod chart_app;
mod chart_data;
mod dashboard;
mod dashboard_page;
pub(crate) mod database;
mod database_wire;
pub(crate) mod dataset;
mod datasource;
mod document;
pub mod error;
mod explore;
pub mod extract;
mod filter_state;
pub mod listquery;
mod log;
mod me;
mod middleware;
mod plugin;
mod query;
mod redirect;
mod render;
pub mod resource;
mod rls;
mod saved_query;
mod security;
mod session;
pub mod shell;
mod spa;
mod sqllab;
mod temporary_cache;
mod users;
mod web;
pub mod wire;

use std::sync::Arc;

use poem::{Endpoint, EndpointExt, IntoEndpoint, Route};
use poem_openapi::OpenApiService;

use crate::state::AppState;

/// OpenAPI tags, one per resource.
#[derive(poem_openapi::Tags)]
pub enum Tags {
    /// Login, tokens and CSRF.
    Security,
    /// The authenticated user.
    CurrentUser,
    /// Browser pages and health probes.
    Web,
    /// Charts.
    Chart,
    /// Dashboards.
    Dashboard,
    /// Datasets.
    Dataset,
    /// Database connections.
    Database,
    /// Users, roles and permissions.
    SecurityAdmin,
    /// Import and export of bundles.
    Assets,
    /// SQL Lab: running SQL, results, export, formatting, cost estimates.
    SqlLab,
    /// SQL Lab's query history.
    Query,
    /// Saved SQL Lab queries.
    SavedQuery,
    Plugin,
    /// Explore: its initial state, form data and permalinks.
    Explore,
    /// Row-level security rules.
    RowLevelSecurity,
    /// Client events and recent activity.
    Log,
}

/// Every API struct, in the order their operations appear in the document.
type Apis = (
    web::WebApi,
    security::SecurityApi,
    me::MeApi,
    chart::ChartApi,
    chart_data::ChartDataApi,
    render::RenderApi,
    dashboard::DashboardApi,
    dashboard::EmbeddedApi,
    database::DatabaseApi,
    dataset::DatasetApi,
    users::UsersApi,
    assets::AssetsApi,
    sqllab::SqlLabApi,
    query::QueryApi,
    saved_query::SavedQueryApi,
    // Tuples implement `OpenApi` up to 16 members; later APIs nest as one.
    (
        plugin::PluginApi,
        explore::ExploreApi,
        filter_state::FilterStateApi,
        log::LogApi,
        spa::SpaApi,
        sqllab::LegacySqlJsonApi,
        rls::RlsApi,
        chart_app::ChartAppApi,
    ),
);

/// The OpenAPI service over every API struct (also used to render the document in tests).
pub fn openapi(state: &Arc<AppState>) -> OpenApiService<Apis, ()> {
    OpenApiService::new(
        (
            web::WebApi {
                state: state.clone(),
            },
            security::SecurityApi {
                state: state.clone(),
            },
            me::MeApi {
                state: state.clone(),
            },
            chart::ChartApi {
                state: state.clone(),
            },
            chart_data::ChartDataApi {
                state: state.clone(),
            },
            render::RenderApi {
                state: state.clone(),
            },
            dashboard::DashboardApi {
                state: state.clone(),
            },
            dashboard::EmbeddedApi {
                state: state.clone(),
            },
            database::DatabaseApi {
                state: state.clone(),
            },
            dataset::DatasetApi {
                state: state.clone(),
            },
            users::UsersApi {
                state: state.clone(),
            },
            assets::AssetsApi {
                state: state.clone(),
            },
            sqllab::SqlLabApi {
                state: state.clone(),
            },
            query::QueryApi {
                state: state.clone(),
            },
            saved_query::SavedQueryApi {
                state: state.clone(),
            },
            (
                plugin::PluginApi {
                    state: state.clone(),
                },
                explore::ExploreApi {
                    state: state.clone(),
                },
                filter_state::FilterStateApi {
                    state: state.clone(),
                },
                log::LogApi {
                    state: state.clone(),
                },
                spa::SpaApi {
                    state: state.clone(),
                },
                sqllab::LegacySqlJsonApi {
                    state: state.clone(),
                },
                rls::RlsApi {
                    state: state.clone(),
                },
                chart_app::ChartAppApi {
                    state: state.clone(),
                },
            ),
        ),
        "Liteset",
        env!("CARGO_PKG_VERSION"),
    )
    .description("Apache Superset-compatible REST API served by Liteset.")
}

/// The complete application endpoint with its middleware.
pub fn routes(state: Arc<AppState>) -> impl Endpoint + 'static {
    let api = openapi(&state);
    let generated = api.spec();
    let document = Arc::new(document::Document::new(&generated));
    let served = document.clone();
    let spec = poem::endpoint::make_sync(move |_| {
        poem::IntoResponse::with_content_type(
            served.json().to_owned(),
            "application/json; charset=utf-8",
        )
    });
    // poem-openapi's page with the served document in place of the generated one.
    let swagger_html = api
        .swagger_ui_html()
        .replacen(&generated, document.json(), 1);
    let swagger = poem::endpoint::make_sync(move |_| poem::web::Html(swagger_html.clone()));
    let mut route = Route::new().at("/api/v1/_openapi", spec).at(
        "/static/*path",
        poem::get(shell::static_file).with(poem::middleware::Compression::new()),
    );
    for page in shell::PAGES {
        route = route.at(*page, poem::get(shell::spa_page));
    }
    route = route.at("/embedded/:uuid", poem::get(shell::embedded_page));
    route = route.at(chart_app::BRIDGE_PATH, poem::get(chart_app::bridge_script));
    route
        .at("/swagger/v1", swagger)
        .nest("/", api.into_endpoint())
        .around(middleware::csrf)
        .around(middleware::limit_body)
        .around(middleware::strip_trailing_slash)
        .around(move |ep, req| middleware::with_state(ep, req, state.clone(), document.clone()))
        // A bug that panics in a handler answers 500 "Fatal error" and is logged; the
        // connection and the process live on.
        .with(poem::middleware::CatchPanic::new().with_handler(middleware::panic_response))
        .around(middleware::trace)
}
