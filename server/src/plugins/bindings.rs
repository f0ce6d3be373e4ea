//! Host bindings of every `liteset:plugin` version the server loads, generated from the frozen
//! WIT folders. One module per world and version. Every world reuses the 0.1.0
//! post-processor world's `types`, so a table is one Rust type whichever world or version it
//! crosses: the component model typechecks records and variants structurally (field and case
//! names and types), and 0.2.0's `types` is 0.1.0's unchanged. `host` is generated per version
//! because the linker names the instance it defines by the interface's version
//! (`liteset:plugin/host@0.1.0` vs `@0.2.0`); both are implemented by the same `CallState`.

/// The 0.1.0 `post-processor` world.
pub mod post_processor {
    wasmtime::component::bindgen!({
        path: "../wit/liteset-plugin/v0.1.0",
        world: "post-processor",
        exports: { default: async },
    });
}

/// The 0.1.0 `viz` world.
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

/// The 0.2.0 worlds. `post-processor` is 0.1.0's at the new version; `viz` adds `chart-app`.
pub mod v020 {
    /// The 0.2.0 `post-processor` world.
    pub mod post_processor {
        wasmtime::component::bindgen!({
            path: "../wit/liteset-plugin/v0.2.0",
            world: "post-processor",
            exports: { default: async },
            with: {
                "liteset:plugin/types": crate::plugins::bindings::post_processor::liteset::plugin::types,
            },
        });
    }

    /// The 0.2.0 `viz` world.
    pub mod viz {
        wasmtime::component::bindgen!({
            path: "../wit/liteset-plugin/v0.2.0",
            world: "viz",
            exports: { default: async },
            with: {
                "liteset:plugin/types": crate::plugins::bindings::post_processor::liteset::plugin::types,
                "liteset:plugin/host": super::post_processor::liteset::plugin::host,
            },
        });
    }
}

pub use post_processor::liteset::plugin::host::LogLevel;
pub use post_processor::liteset::plugin::types;
