//! Liteset: a BI server that speaks Apache Superset's REST API on one async tokio process.
//!
//! Start at [`app`] (startup wiring), [`api`] (the HTTP surface), [`auth`] (who may do what) and
//! [`store`] (metadata persistence). ARCHITECTURE.md at the repository root has the code map.

pub mod api;
pub mod app;
pub mod assets;
pub mod auth;
pub mod authoring;
pub mod config;
pub mod connections;
pub mod engines;
pub mod examples;
pub mod frontend;
pub mod net;
pub mod pgpool;
pub mod pgtls;
pub mod plugins;
pub mod query;
pub mod render;
pub mod roles;
pub mod seal;
pub mod services;
pub mod ssb;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod uri;
