//! Server-rendered charts: what happens to a viz plugin's output before anyone sees it, and the
//! cache of finished renders. Independent of HTTP; `api/render.rs` runs the chart's queries,
//! calls the plugin and answers.
//!
//! - [`sanitize`]: the plugin's SVG rebuilt from an allowlist (it is untrusted).
//! - [`raster`]: sanitised SVG → PNG with resvg and the embedded fonts.
//! - [`RenderCache`]: finished SVG and PNG bytes, bounded by bytes, each entry living as long
//!   as the chart's data may be cached (the same `cache_timeout` chain).

pub mod raster;
pub mod sanitize;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::query::runner::CachePolicy;

/// Smallest width or height a chart may be rendered at, in CSS pixels.
pub const MIN_SIDE: u32 = 16;
/// Largest width or height a chart may be rendered at, in CSS pixels.
pub const MAX_SIDE: u32 = 4096;
/// Largest area of a PNG, in pixels (a 4096 × 4096 RGBA pixmap would take 64 MiB).
pub const MAX_PIXELS: u64 = 2048 * 2048;
/// Default size of `render.svg` when the request names none (Superset's explore chart size).
pub const DEFAULT_SIZE: (u32, u32) = (800, 500);
/// Size of chart thumbnails (Superset's `THUMBNAIL_SIZE` ratio).
pub const THUMBNAIL_SIZE: (u32, u32) = (800, 600);

/// Why a chart could not be rendered (besides the query and plugin layers' own errors).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A width or height out of range.
    #[error("{0}")]
    BadSize(String),
    /// No installed viz plugin renders the chart's `viz_type`.
    #[error("No viz plugin renders the viz_type {0:?}")]
    NoPlugin(String),
    /// The plugin rendered only a payload: there is no SVG to serve.
    #[error("The viz plugin {0} renders no SVG for this chart")]
    NoSvg(String),
    /// The plugin's SVG was refused by the sanitiser.
    #[error("Plugin {plugin} returned an invalid SVG: {detail}")]
    BadSvg {
        /// Plugin name.
        plugin: String,
        /// Why.
        detail: String,
    },
    /// The sanitised SVG could not be rasterised.
    #[error(transparent)]
    Raster(#[from] raster::RasterError),
}

/// Checks a requested size; `png` also bounds the area.
pub fn check_size(width: u32, height: u32, png: bool) -> Result<(), RenderError> {
    for (name, v) in [("width", width), ("height", height)] {
        if !(MIN_SIDE..=MAX_SIDE).contains(&v) {
            return Err(RenderError::BadSize(format!(
                "{name} must be between {MIN_SIDE} and {MAX_SIDE}"
            )));
        }
    }
    if png && u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(RenderError::BadSize(format!(
            "width × height must be at most {MAX_PIXELS} pixels for a PNG"
        )));
    }
    Ok(())
}

/// The cache key of a render: hashes every part, each length-prefixed so parts cannot run
/// into each other.
pub fn key(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(&h.finalize()[..16])
}

struct Entry {
    bytes: Arc<[u8]>,
    ttl: Option<Duration>,
}

struct EntryExpiry;

impl moka::Expiry<String, Arc<Entry>> for EntryExpiry {
    fn expire_after_create(
        &self,
        _key: &String,
        value: &Arc<Entry>,
        _created_at: Instant,
    ) -> Option<Duration> {
        value.ttl
    }
}

/// Finished renders (sanitised SVG or PNG bytes) by [`key`].
pub struct RenderCache {
    cache: Option<moka::future::Cache<String, Arc<Entry>>>,
}

impl std::fmt::Debug for RenderCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderCache")
            .field("entries", &self.cache.as_ref().map(|c| c.entry_count()))
            .finish()
    }
}

impl RenderCache {
    /// A cache of at most `bytes` (0 disables it).
    pub fn new(bytes: u64) -> RenderCache {
        RenderCache {
            cache: (bytes > 0).then(|| {
                moka::future::Cache::builder()
                    .max_capacity(bytes)
                    .weigher(|k: &String, v: &Arc<Entry>| {
                        u32::try_from(k.len() + v.bytes.len() + 64).unwrap_or(u32::MAX)
                    })
                    .expire_after(EntryExpiry)
                    .build()
            }),
        }
    }

    /// The cached bytes of `key`.
    pub async fn get(&self, key: &str) -> Option<Arc<[u8]>> {
        let cache = self.cache.as_ref()?;
        cache.get(key).await.map(|e| e.bytes.clone())
    }

    /// Keeps `bytes` under `key` as `policy` allows.
    pub async fn insert(&self, key: String, bytes: Arc<[u8]>, policy: CachePolicy) {
        let Some(cache) = &self.cache else { return };
        let ttl = match policy {
            CachePolicy::Disabled => return,
            CachePolicy::Forever => None,
            CachePolicy::For(d) => Some(d),
        };
        cache.insert(key, Arc::new(Entry { bytes, ttl })).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_bounded() {
        assert!(check_size(800, 600, true).is_ok());
        assert!(check_size(15, 600, false).is_err());
        assert!(check_size(800, 5000, false).is_err());
        assert!(check_size(4096, 4096, false).is_ok());
        assert!(check_size(4096, 4096, true).is_err());
    }

    #[test]
    fn keys_separate_their_parts() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_eq!(key(&[b"a"]), key(&[b"a"]));
    }
}
