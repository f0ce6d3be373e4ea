//! Superset's own web app, prebuilt: what `liteset frontend install` put on disk and what the
//! HTTP layer needs to serve it (the static folder and the entry bundles of the asset
//! manifest).
//!
//! Nothing of Superset's code is part of Liteset: the app comes from the apache-superset
//! release on the Python package index (see [`install`]). The server runs without it; the
//! shell pages then explain how to install it.

pub mod install;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The file that records which version is installed; written last, so its presence means a
/// complete install.
const RECORD: &str = "installed.json";

/// What an install recorded.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    /// apache-superset version, e.g. `6.0.0`.
    pub version: String,
    /// The distribution file it came from (wheel or sdist).
    pub filename: String,
    /// Its sha256, as the index listed it and as verified.
    pub sha256: String,
}

/// One entry point of webpack's manifest: the files a page must load, in order.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Bundle {
    /// Script URLs (`/static/assets/….js`).
    #[serde(default)]
    pub js: Vec<String>,
    /// Stylesheet URLs.
    #[serde(default)]
    pub css: Vec<String>,
}

#[derive(Deserialize)]
struct Manifest {
    entrypoints: HashMap<String, Bundle>,
}

/// An installed, readable frontend.
#[derive(Debug)]
pub struct Installed {
    /// The recorded install.
    pub record: Record,
    /// The folder served under `/static/`.
    pub static_dir: PathBuf,
    entrypoints: HashMap<String, Bundle>,
    modified: Option<SystemTime>,
}

impl Installed {
    /// The files of a manifest entry point (`spa`, `theme`, …); empty when the release has no
    /// such entry.
    pub fn bundle(&self, entry: &str) -> Bundle {
        self.entrypoints.get(entry).cloned().unwrap_or_default()
    }
}

/// Why an installed frontend cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not installed (no record).
    #[error("no frontend installed in {0}")]
    Missing(PathBuf),
    /// The record or manifest is unreadable or malformed.
    #[error("the frontend in {path} is unusable: {reason}")]
    Broken {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

fn record_modified(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir.join(RECORD))
        .and_then(|m| m.modified())
        .ok()
}

/// Reads the install in `dir`.
pub fn load(dir: &Path) -> Result<Installed, LoadError> {
    let record_path = dir.join(RECORD);
    let modified = record_modified(dir);
    let text = match std::fs::read_to_string(&record_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LoadError::Missing(dir.to_owned()));
        }
        Err(e) => {
            return Err(LoadError::Broken {
                path: record_path,
                reason: e.to_string(),
            });
        }
    };
    let record: Record = serde_json::from_str(&text).map_err(|e| LoadError::Broken {
        path: record_path.clone(),
        reason: e.to_string(),
    })?;
    if !install::is_plain_version(&record.version) {
        return Err(LoadError::Broken {
            path: record_path,
            reason: format!("bad version {:?}", record.version),
        });
    }
    let static_dir = dir.join(&record.version).join("static");
    let manifest_path = static_dir.join("assets").join("manifest.json");
    let manifest: Manifest = std::fs::read(&manifest_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|reason| LoadError::Broken {
            path: manifest_path,
            reason,
        })?;
    Ok(Installed {
        record,
        static_dir,
        entrypoints: manifest.entrypoints,
        modified,
    })
}

/// The installed frontend as the server sees it. A later `liteset frontend install` (to the
/// same folder, e.g. another version) is picked up without a restart: each shell page checks
/// the record's modification time, one `stat`.
pub struct Frontend {
    dir: PathBuf,
    current: RwLock<Option<Arc<Installed>>>,
}

impl Frontend {
    /// Looks for an install in `dir`; a missing one is normal, a broken one is logged.
    pub fn new(dir: PathBuf) -> Frontend {
        let f = Frontend {
            dir,
            current: RwLock::new(None),
        };
        match f.get() {
            Some(i) => tracing::info!(
                message = "Serving Superset's web frontend.",
                version = %i.record.version,
                dir = %f.dir.display()
            ),
            None => tracing::info!(
                message = "No web frontend installed; `liteset frontend install` adds Superset's UI.",
                dir = %f.dir.display()
            ),
        }
        f
    }

    /// The folder the frontend is installed in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The current install, reloaded when its record changed.
    pub fn get(&self) -> Option<Arc<Installed>> {
        let modified = record_modified(&self.dir);
        if let Some(cur) = self.current.read().ok()?.as_ref()
            && cur.modified == modified
        {
            return Some(cur.clone());
        }
        let loaded = match load(&self.dir) {
            Ok(i) => Some(Arc::new(i)),
            Err(LoadError::Missing(_)) => None,
            Err(e) => {
                tracing::warn!(message = "Installed frontend is unusable.", error = %e);
                None
            }
        };
        if let Ok(mut cur) = self.current.write() {
            cur.clone_from(&loaded);
        }
        loaded
    }
}
