//! Host bindings of `liteset:plugin@0.1.0`, generated from the frozen WIT folder. One module
//! per world; the viz world reuses the post-processor world's `types` and `host` so a table is
//! one Rust type whichever world it crosses.

/// The `post-processor` world.
pub mod post_processor {
    wasmtime::component::bindgen!({
        path: "../wit/liteset-plugin/v0.1.0",
        world: "post-processor",
        exports: { default: async },
    });
}

/// The `viz` world.
pub mod viz {
    wasmtime::component::bindgen!({
        path: "../wit/liteset-plugin/v0.1.0",
        world: "viz",
        exports: { default: async },
        with: {
            "liteset:plugin/types": super::post_processor::liteset::plugin::types,
            "liteset:plugin/host": super::post_processor::liteset::plugin::host,
        },
    });
}

pub use post_processor::liteset::plugin::host::LogLevel;
pub use post_processor::liteset::plugin::types;
