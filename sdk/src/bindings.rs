//! Generated bindings for `liteset:plugin@0.2.0` (vendored in `sdk/wit/`). Not public API.
//!
//! Why four `generate!` calls over small SDK-local worlds instead of one per WIT world: both
//! WIT worlds export `meta`, and with `pub_export_macro` wit-bindgen emits a
//! `#[macro_export]` macro per exported interface, so generating both worlds in one crate
//! defines `__export_liteset_plugin_meta_0_2_0_cabi` twice (E0428), and exports cannot be
//! remapped with `with`. So `meta` (plus the `host` import and the shared `types`) is
//! generated once, and each of `post-process`, `visualization` and `chart-app` in a world of its
//! own that reuses those types. An export macro emits the component-type custom sections of the worlds
//! it exports ("imports and exports"), and `wit-component` unions them: a post-processor
//! component ends up exporting exactly `liteset:plugin/meta@0.2.0` and
//! `liteset:plugin/post-process@0.2.0`, a viz exactly `meta`, `visualization` and `chart-app`.

/// `meta` export, `host` import, and the shared `types`.
pub mod meta {
    wit_bindgen::generate!({
        inline: "
            package liteset:sdk@0.2.0;
            world meta {
                import liteset:plugin/host@0.2.0;
                export liteset:plugin/meta@0.2.0;
            }
        ",
        path: "wit",
        world: "liteset:sdk/meta@0.2.0",
        generate_all,
        pub_export_macro: true,
        export_macro_name: "export_raw",
        default_bindings_module: "liteset_sdk::__private::bindings::meta",
    });
}

/// `post-process` export.
pub mod post_processor {
    wit_bindgen::generate!({
        inline: "
            package liteset:sdk@0.2.0;
            world post-processor {
                export liteset:plugin/post-process@0.2.0;
            }
        ",
        path: "wit",
        world: "liteset:sdk/post-processor@0.2.0",
        with: {
            "liteset:plugin/types@0.2.0": crate::bindings::meta::liteset::plugin::types,
        },
        pub_export_macro: true,
        export_macro_name: "export_raw",
        default_bindings_module: "liteset_sdk::__private::bindings::post_processor",
    });
}

/// `visualization` export.
pub mod viz {
    wit_bindgen::generate!({
        inline: "
            package liteset:sdk@0.2.0;
            world viz {
                export liteset:plugin/visualization@0.2.0;
            }
        ",
        path: "wit",
        world: "liteset:sdk/viz@0.2.0",
        with: {
            "liteset:plugin/types@0.2.0": crate::bindings::meta::liteset::plugin::types,
        },
        pub_export_macro: true,
        export_macro_name: "export_raw",
        default_bindings_module: "liteset_sdk::__private::bindings::viz",
    });
}

/// `chart-app` export (new in 0.2.0; its own types only).
pub mod chart_app {
    wit_bindgen::generate!({
        inline: "
            package liteset:sdk@0.2.0;
            world chart-app {
                export liteset:plugin/chart-app@0.2.0;
            }
        ",
        path: "wit",
        world: "liteset:sdk/chart-app@0.2.0",
        pub_export_macro: true,
        export_macro_name: "export_raw",
        default_bindings_module: "liteset_sdk::__private::bindings::chart_app",
    });
}

pub use chart_app::exports::liteset::plugin::chart_app as wit_chart_app;
pub use chart_app::exports::liteset::plugin::chart_app::Guest as ChartAppGuest;
pub use meta::exports::liteset::plugin::meta::Guest as MetaGuest;
pub use meta::liteset::plugin::host;
pub use meta::liteset::plugin::types as wit;
pub use post_processor::exports::liteset::plugin::post_process::Guest as PostProcessGuest;
pub use viz::exports::liteset::plugin::visualization as wit_viz;
pub use viz::exports::liteset::plugin::visualization::Guest as VisualizationGuest;
