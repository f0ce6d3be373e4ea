//! Installed plugins: the built-in ones embedded in the binary and the uploaded ones kept in
//! the metadata store, each compiled once into an `InstancePre`.
//!
//! Entries are `Arc`s in a map: an upload replaces the `Arc` under a short write lock, so calls
//! that already hold the old plugin finish on it and the next call gets the new one.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::NaiveDateTime;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;
use wasmtime::component::Component;

use super::bindings::{post_processor, types, v020, viz};
use super::call::{Call, CallState, Limits};
use super::chart_type::{self, ChartType};
use super::runtime::Runtime;
use super::{BUILTIN_POSTPROCESSING, BUILTIN_VIZ, Kind, PluginError, Result, table};
use crate::config::PluginConfig;
use crate::store::Store;
use crate::store::plugins::StoredPlugin;

/// The built-in post-processing plugin, built for wasm32-wasip2 by `build.rs`.
static BUILTIN_POSTPROCESSING_WASM: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/postprocessing.wasm"));

/// The built-in viz plugin (`plugins/viz`), built for wasm32-wasip2 by `build.rs`.
static BUILTIN_VIZ_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/viz.wasm"));

/// Where a plugin came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Embedded in the server binary.
    BuiltIn,
    /// Uploaded through the API.
    Uploaded,
}

impl Source {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::BuiltIn => "built-in",
            Source::Uploaded => "uploaded",
        }
    }
}

/// What the API shows about an installed plugin.
#[derive(Clone, Debug)]
pub struct PluginSummary {
    /// Unique name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// Its world.
    pub kind: Kind,
    /// Human-readable name.
    pub label: String,
    /// What it does.
    pub description: String,
    /// `viz_type`s a viz plugin renders.
    pub viz_types: Vec<String>,
    /// JSON Schema of its params or form data, when it declares one.
    pub params_schema: Option<Json>,
    /// How a viz plugin's chart types appear in Superset's app, one per `viz_types` entry in
    /// that order (post-processors: empty). From the plugin's `chart-app` export (0.2.0),
    /// validated at install; viz types it leaves out, and every viz type of a 0.1.0 plugin,
    /// get [`chart_type::default_chart_type`].
    pub chart_types: Vec<ChartType>,
    /// `liteset:plugin` version it targets.
    pub wit_version: String,
    /// Built-in or uploaded.
    pub source: Source,
    /// Hex sha256 of the component.
    pub sha256: String,
    /// Size of the component.
    pub size_bytes: usize,
    /// Memory cap of one call, in MiB.
    pub memory_mb: u64,
    /// Wall-clock budget of one call, in milliseconds.
    pub timeout_ms: u64,
    /// When it was uploaded (built-in plugins: `None`).
    pub changed_on: Option<NaiveDateTime>,
}

/// A compiled plugin ready to instantiate, by world and WIT version.
pub(super) enum Pre {
    PostProcessor(PostProcessorPre),
    Viz(VizPre),
}

/// A post-processor's `InstancePre`, by WIT version.
pub(super) enum PostProcessorPre {
    V010(post_processor::PostProcessorPre<CallState>),
    V020(v020::post_processor::PostProcessorPre<CallState>),
}

/// A viz plugin's `InstancePre`, by WIT version.
pub(super) enum VizPre {
    V010(viz::VizPre<CallState>),
    V020(v020::viz::VizPre<CallState>),
}

/// Instantiates a post-processor of either version in `$store` and evaluates `$body` with
/// `$inst` bound to the instance. Both versions' bindings have the same method names and, for
/// every type `$body` may pass across, the same Rust types (`bindings.rs` shares `types`), so
/// one body serves both; a macro because the instance types differ.
macro_rules! with_post_processor {
    ($pre:expr, $store:expr, |$inst:ident| $body:expr) => {
        match $pre {
            $crate::plugins::registry::PostProcessorPre::V010(pre) => {
                let $inst = pre.instantiate_async(&mut $store).await?;
                $body
            }
            $crate::plugins::registry::PostProcessorPre::V020(pre) => {
                let $inst = pre.instantiate_async(&mut $store).await?;
                $body
            }
        }
    };
}

/// [`with_post_processor!`] for viz plugins; `$m` names the version's bindings module, for the
/// `visualization` types that differ between versions (`query-result`, `chart-output`).
macro_rules! with_viz {
    ($pre:expr, $store:expr, |$inst:ident, $m:ident| $body:expr) => {
        match $pre {
            $crate::plugins::registry::VizPre::V010(pre) => {
                #[allow(unused_imports)]
                use $crate::plugins::bindings::viz as $m;
                let $inst = pre.instantiate_async(&mut $store).await?;
                $body
            }
            $crate::plugins::registry::VizPre::V020(pre) => {
                #[allow(unused_imports)]
                use $crate::plugins::bindings::v020::viz as $m;
                let $inst = pre.instantiate_async(&mut $store).await?;
                $body
            }
        }
    };
}
pub(super) use with_viz;

/// An installed, compiled plugin.
pub struct Loaded {
    /// What the API shows.
    pub summary: PluginSummary,
    pub(super) pre: Pre,
    pub(super) limits: Limits,
}

/// The plugin registry.
pub struct Plugins {
    pub(super) runtime: Arc<Runtime>,
    store: Store,
    pub(super) uploaded: RwLock<HashMap<String, Arc<Loaded>>>,
    builtin: OnceCell<Arc<Loaded>>,
    builtin_viz: OnceCell<Arc<Loaded>>,
}

/// Names a plugin may not take: the built-in operations it would shadow.
fn reserved(name: &str) -> bool {
    name == BUILTIN_POSTPROCESSING
        || name == BUILTIN_VIZ
        || crate::query::context::POST_PROCESSING_OPERATIONS.contains(&name)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

impl Plugins {
    /// Builds the runtime; `data_dir/plugins/cache` keeps compiled components.
    pub fn new(config: &PluginConfig, store: Store, data_dir: &std::path::Path) -> Result<Plugins> {
        let runtime = Runtime::new(config, Some(data_dir.join("plugins").join("cache")))?;
        Ok(Plugins {
            runtime: Arc::new(runtime),
            store,
            uploaded: RwLock::new(HashMap::new()),
            builtin: OnceCell::new(),
            builtin_viz: OnceCell::new(),
        })
    }

    fn limits(&self, name: &str) -> Limits {
        let c = &self.runtime.config;
        let o = c.overrides.get(name);
        let mb = o
            .and_then(|o| o.memory_mb)
            .unwrap_or(c.memory_mb)
            .min(c.max_memory_mb);
        let ms = o
            .and_then(|o| o.timeout_ms)
            .unwrap_or(c.timeout_ms)
            .min(c.max_timeout_ms);
        Limits {
            memory_bytes: usize::try_from(mb << 20).unwrap_or(usize::MAX),
            timeout: Duration::from_millis(ms),
        }
    }

    /// Compiles, inspects and smoke-calls a component; nothing is registered yet.
    async fn prepare(&self, wasm: Arc<[u8]>, source: Source) -> Result<Loaded> {
        let sha256 = hex::encode(Sha256::digest(&wasm));
        let component: Component = self.runtime.compile(wasm.clone()).await?;
        let inspection = self.runtime.inspect(&component)?;
        let instance_pre = self
            .runtime
            .linker
            .instantiate_pre(&component)
            .map_err(|e| PluginError::Rejected(format!("The component cannot be linked: {e}")))?;
        let reject = |e: wasmtime::Error| {
            PluginError::Rejected(format!(
                "The component does not match the liteset:plugin@{} {} world: {e}",
                inspection.wit_version,
                inspection.kind.as_str()
            ))
        };
        let v010 = inspection.wit_version == "0.1.0";
        let pre = match inspection.kind {
            Kind::PostProcessor if v010 => Pre::PostProcessor(PostProcessorPre::V010(
                post_processor::PostProcessorPre::new(instance_pre).map_err(reject)?,
            )),
            Kind::PostProcessor => Pre::PostProcessor(PostProcessorPre::V020(
                v020::post_processor::PostProcessorPre::new(instance_pre).map_err(reject)?,
            )),
            Kind::Viz if v010 => Pre::Viz(VizPre::V010(
                viz::VizPre::new(instance_pre).map_err(reject)?,
            )),
            // `VizPre::new` checks every export of the world, `chart-app` included.
            Kind::Viz => Pre::Viz(VizPre::V020(
                v020::viz::VizPre::new(instance_pre).map_err(reject)?,
            )),
        };
        // Smoke call under default limits: the plugin must describe itself.
        let limits = self.limits("");
        let info = self.info(&pre, limits).await.map_err(|e| {
            PluginError::Rejected(format!("The plugin failed its smoke call (meta.info): {e}"))
        })?;
        let declared = match info.kind {
            types::PluginKind::PostProcessor => Kind::PostProcessor,
            types::PluginKind::Viz => Kind::Viz,
        };
        if declared != inspection.kind {
            return Err(PluginError::Rejected(format!(
                "The plugin says it is a {} but exports the {} world",
                declared.as_str(),
                inspection.kind.as_str()
            )));
        }
        if !valid_name(&info.name) {
            return Err(PluginError::Rejected(format!(
                "Plugin name {:?} is invalid: use 1 to 64 lowercase letters, digits, '_' or '-'",
                info.name
            )));
        }
        if source == Source::Uploaded && reserved(&info.name) {
            return Err(PluginError::Rejected(format!(
                "Plugin name {:?} is reserved for a built-in operation",
                info.name
            )));
        }
        let params_schema = match &info.params_schema {
            None => None,
            Some(s) => Some(serde_json::from_str::<Json>(s).map_err(|e| {
                PluginError::Rejected(format!("The plugin's params schema is not JSON: {e}"))
            })?),
        };
        let chart_types = match &pre {
            Pre::PostProcessor(_) => Vec::new(),
            Pre::Viz(viz) => {
                let default_for = |viz_type: &str| {
                    chart_type::default_chart_type(
                        viz_type,
                        &info.label,
                        &info.description,
                        params_schema.as_ref(),
                    )
                };
                let declared = match viz {
                    VizPre::V010(_) => Vec::new(),
                    // A smoke call of its own, after meta.info: the description is read once
                    // here and kept in the summary.
                    VizPre::V020(pre) => self.chart_types(pre, limits).await.map_err(|e| {
                        PluginError::Rejected(format!(
                            "The plugin failed its smoke call (chart-app.chart-types): {e}"
                        ))
                    })?,
                };
                chart_type::validate(&info.viz_types, declared, default_for).map_err(|e| {
                    PluginError::Rejected(format!(
                        "The plugin's chart-app description is invalid: {e}"
                    ))
                })?
            }
        };
        let limits = self.limits(&info.name);
        let loaded = Loaded {
            summary: PluginSummary {
                name: info.name,
                version: info.version,
                kind: inspection.kind,
                label: info.label,
                description: info.description,
                viz_types: info.viz_types,
                params_schema,
                chart_types,
                wit_version: inspection.wit_version,
                source,
                sha256,
                size_bytes: wasm.len(),
                memory_mb: (limits.memory_bytes >> 20) as u64,
                timeout_ms: u64::try_from(limits.timeout.as_millis()).unwrap_or(u64::MAX),
                changed_on: None,
            },
            pre,
            limits,
        };
        if loaded.summary.kind == Kind::PostProcessor {
            // A second smoke call runs the entry point itself on an empty table: a plugin may
            // refuse it, but must not trap.
            let empty = types::Table {
                num_rows: 0,
                columns: Vec::new(),
                index: Vec::new(),
            };
            match self
                .post_process(&loaded, "smoke-test", "{}", &empty, "install")
                .await
            {
                Ok(_) | Err(PluginError::Failed { .. }) => {}
                Err(e) => {
                    return Err(PluginError::Rejected(format!(
                        "The plugin failed its smoke call (post-process on an empty table): {e}"
                    )));
                }
            }
        }
        Ok(loaded)
    }

    async fn info(&self, pre: &Pre, limits: Limits) -> Result<types::PluginInfo> {
        let _slot = self.runtime.slot().await?;
        let mut call = Call::new(&self.runtime.engine, "(installing)", "install", limits);
        let budget = call.outer_timeout();
        let outcome = match pre {
            Pre::PostProcessor(pre) => {
                tokio::time::timeout(budget, async {
                    with_post_processor!(pre, call.store, |inst| inst
                        .liteset_plugin_meta()
                        .call_info(&mut call.store)
                        .await
                        .map(Ok))
                })
                .await
            }
            Pre::Viz(pre) => {
                tokio::time::timeout(budget, async {
                    with_viz!(pre, call.store, |inst, _m| inst
                        .liteset_plugin_meta()
                        .call_info(&mut call.store)
                        .await
                        .map(Ok))
                })
                .await
            }
        };
        call.finish(outcome)
    }

    /// Calls a 0.2.0 viz plugin's `chart-app.chart-types` and converts the answer (validated
    /// by the caller).
    async fn chart_types(
        &self,
        pre: &v020::viz::VizPre<CallState>,
        limits: Limits,
    ) -> Result<Vec<ChartType>> {
        let _slot = self.runtime.slot().await?;
        let mut call = Call::new(&self.runtime.engine, "(installing)", "install", limits);
        let budget = call.outer_timeout();
        let outcome = tokio::time::timeout(budget, async {
            let inst = pre.instantiate_async(&mut call.store).await?;
            inst.liteset_plugin_chart_app()
                .call_chart_types(&mut call.store)
                .await
                .map(Ok)
        })
        .await;
        Ok(call
            .finish(outcome)?
            .into_iter()
            .map(super::viz::chart_type_from_wit)
            .collect())
    }

    /// The built-in post-processing plugin, compiled on first use.
    pub async fn builtin(&self) -> Result<Arc<Loaded>> {
        self.builtin
            .get_or_try_init(|| async {
                let loaded = self
                    .prepare(Arc::from(BUILTIN_POSTPROCESSING_WASM), Source::BuiltIn)
                    .await?;
                if loaded.summary.name != BUILTIN_POSTPROCESSING {
                    return Err(PluginError::Internal(format!(
                        "the embedded post-processing plugin calls itself {}",
                        loaded.summary.name
                    )));
                }
                Ok(Arc::new(loaded))
            })
            .await
            .cloned()
    }

    /// The built-in viz plugin, compiled on first use.
    pub async fn builtin_viz(&self) -> Result<Arc<Loaded>> {
        self.builtin_viz
            .get_or_try_init(|| async {
                let loaded = self
                    .prepare(Arc::from(BUILTIN_VIZ_WASM), Source::BuiltIn)
                    .await?;
                if loaded.summary.name != BUILTIN_VIZ {
                    return Err(PluginError::Internal(format!(
                        "the embedded viz plugin calls itself {}",
                        loaded.summary.name
                    )));
                }
                Ok(Arc::new(loaded))
            })
            .await
            .cloned()
    }

    /// Loads every uploaded plugin from the store (at startup, and when another replica may
    /// have changed them). A plugin that no longer loads is logged and skipped.
    pub async fn sync(&self) -> Result<()> {
        let stored = self.store.plugin_hashes().await?;
        let current: HashMap<String, String> = self
            .uploaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.summary.sha256.clone()))
            .collect();
        for (name, sha) in &stored {
            if current.get(name) == Some(sha) {
                continue;
            }
            let Some(p) = self.store.plugin(name).await? else {
                continue;
            };
            match self.prepare(Arc::from(p.wasm), Source::Uploaded).await {
                Ok(mut loaded) if loaded.summary.name == *name => {
                    loaded.summary.changed_on = Some(p.changed_on);
                    self.uploaded
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(name.clone(), Arc::new(loaded));
                }
                Ok(_) => {
                    tracing::error!(plugin = %name, "stored plugin now reports another name; skipped")
                }
                Err(e) => {
                    tracing::error!(plugin = %name, error = %e, "stored plugin no longer loads; skipped")
                }
            }
        }
        let keep: std::collections::HashSet<&String> = stored.iter().map(|(n, _)| n).collect();
        self.uploaded
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|name, _| keep.contains(name));
        Ok(())
    }

    /// Every installed plugin, built-in first, then uploaded by name.
    pub async fn list(&self) -> Result<Vec<PluginSummary>> {
        let mut out = vec![
            self.builtin().await?.summary.clone(),
            self.builtin_viz().await?.summary.clone(),
        ];
        let map = self.uploaded.read().unwrap_or_else(|e| e.into_inner());
        let mut uploaded: Vec<PluginSummary> = map.values().map(|l| l.summary.clone()).collect();
        uploaded.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(uploaded);
        Ok(out)
    }

    /// The plugin called `name`.
    pub async fn get(&self, name: &str) -> Result<Arc<Loaded>> {
        if name == BUILTIN_POSTPROCESSING {
            return self.builtin().await;
        }
        if name == BUILTIN_VIZ {
            return self.builtin_viz().await;
        }
        self.uploaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
            .ok_or_else(|| PluginError::NotFound(name.to_owned()))
    }

    /// Names of the uploaded post-processors: extra `post_processing` operations.
    pub fn post_processor_names(&self) -> Vec<String> {
        let map = self.uploaded.read().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = map
            .values()
            .filter(|l| l.summary.kind == Kind::PostProcessor)
            .map(|l| l.summary.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Validates, compiles and smoke-calls an uploaded component, stores it and makes it live
    /// (replacing a plugin of the same name).
    /// Returns the plugin and whether it replaced one of the same name.
    pub async fn install(
        &self,
        wasm: Vec<u8>,
        user_id: Option<i64>,
    ) -> Result<(PluginSummary, bool)> {
        let max = self.runtime.config.max_upload_mb << 20;
        if wasm.len() as u64 > max {
            return Err(PluginError::Rejected(format!(
                "The component is larger than plugins.max_upload_mb ({} MiB)",
                self.runtime.config.max_upload_mb
            )));
        }
        let wasm: Arc<[u8]> = Arc::from(wasm);
        let mut loaded = self.prepare(wasm.clone(), Source::Uploaded).await?;
        let s = &loaded.summary;
        let stored = StoredPlugin {
            name: s.name.clone(),
            version: s.version.clone(),
            kind: s.kind.as_str().to_owned(),
            wit_version: s.wit_version.clone(),
            sha256: s.sha256.clone(),
            wasm: wasm.to_vec(),
            changed_on: chrono::Utc::now().naive_utc(),
        };
        self.store.save_plugin(&stored, user_id).await?;
        loaded.summary.changed_on = Some(stored.changed_on);
        let summary = loaded.summary.clone();
        let replaced = self
            .uploaded
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(summary.name.clone(), Arc::new(loaded))
            .is_some();
        tracing::info!(plugin = %summary.name, version = %summary.version, sha256 = %summary.sha256, replaced, "plugin installed");
        Ok((summary, replaced))
    }

    /// Removes an uploaded plugin.
    pub async fn remove(&self, name: &str) -> Result<()> {
        if name == BUILTIN_POSTPROCESSING || name == BUILTIN_VIZ {
            return Err(PluginError::Rejected(
                "Built-in plugins cannot be deleted".into(),
            ));
        }
        let existed = self.store.delete_plugin(name).await?;
        let was_loaded = self
            .uploaded
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name)
            .is_some();
        if !existed && !was_loaded {
            return Err(PluginError::NotFound(name.to_owned()));
        }
        tracing::info!(plugin = %name, "plugin deleted");
        Ok(())
    }

    /// Runs a post-processor on `input` with `params` (JSON) in a fresh sandbox.
    pub async fn post_process(
        &self,
        plugin: &Loaded,
        operation: &str,
        params: &str,
        input: &types::Table,
        request_id: &str,
    ) -> Result<types::Table> {
        let Pre::PostProcessor(pre) = &plugin.pre else {
            return Err(PluginError::Rejected(format!(
                "Plugin {} is not a post-processor",
                plugin.summary.name
            )));
        };
        let _slot = self.runtime.slot().await?;
        let mut call = Call::new(
            &self.runtime.engine,
            &plugin.summary.name,
            request_id,
            plugin.limits,
        );
        let ctx = types::Invocation {
            request_id: request_id.to_owned(),
            operation: operation.to_owned(),
            locale: "en".into(),
            time_zone: "UTC".into(),
        };
        let budget = call.outer_timeout();
        let outcome = tokio::time::timeout(budget, async {
            with_post_processor!(pre, call.store, |inst| inst
                .liteset_plugin_post_process()
                .call_process(&mut call.store, &ctx, params, input)
                .await)
        })
        .await;
        let out = call.finish(outcome)?;
        tracing::debug!(plugin = %plugin.summary.name, peak_memory = call.peak_memory(), rows = out.num_rows, "plugin call");
        table::validate(&out).map_err(|detail| PluginError::BadOutput {
            plugin: plugin.summary.name.clone(),
            detail,
        })?;
        Ok(out)
    }
}
