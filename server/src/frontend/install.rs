//! `liteset frontend install`: fetch the apache-superset release from the Python package
//! index, verify it, and keep only its prebuilt web app (`superset/static/`).
//!
//! The index is read through its simple API in the PEP 691 JSON form, which every index
//! (PyPI, devpi, Artifactory, a corporate mirror) serves; the per-project JSON API is not
//! available everywhere. Where the index is and which CA bundle to trust are pip's settings,
//! so that a machine where `pip download` works needs no extra configuration here.
//!
//! A release has a wheel (a zip) or, for some versions only, an sdist (a tar.gz); both carry
//! the built app under `superset/static/`. The install is staged next to its destination and
//! switched in by renaming, then recorded: a failed or interrupted install leaves the previous
//! one in place.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use ini::Ini;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{RECORD, Record};

/// The project name on the index (PEP 503 normalised).
const PROJECT: &str = "apache-superset";
/// What is kept from the release, relative to its `superset/` package folder.
const KEEP: &str = "static";
/// The largest release accepted; the 6.x releases are 45–105 MB.
const MAX_DOWNLOAD: u64 = 512 * 1024 * 1024;
/// The largest unpacked app accepted (6.0.0's is 78 MB), against decompression bombs.
const MAX_UNPACKED: u64 = 1024 * 1024 * 1024;

/// Options of `liteset frontend install`.
#[derive(Debug, Clone, clap::Args)]
pub struct InstallArgs {
    /// apache-superset version whose web app to install.
    #[arg(long, default_value = "6.0.0")]
    pub version: String,
    /// Simple-API index URL; defaults to pip's (`PIP_INDEX_URL`, pip.conf, pip's default).
    #[arg(long)]
    pub index_url: Option<String>,
    /// Download and unpack again even when this version is already installed.
    #[arg(long)]
    pub force: bool,
}

/// Why an install failed; the previous install, if any, is untouched.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not a version string (it becomes a folder name).
    #[error("invalid version {0:?}: expected something like 6.0.0")]
    BadVersion(String),
    /// No index configured and no pip to ask.
    #[error(
        "no package index configured: set PIP_INDEX_URL (or index-url in pip.conf), or pass --index-url"
    )]
    NoIndex,
    /// The CA bundle pip is configured with cannot be used.
    #[error("cannot use the CA bundle {path}: {reason}")]
    Cert {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The index could not be reached or answered an error.
    #[error("package index: {0}")]
    Index(String),
    /// The index lists no usable file of that version.
    #[error("the index has no wheel or sdist of {PROJECT} {0}")]
    NoRelease(String),
    /// The download does not match the index's hash.
    #[error("{filename}: sha256 is {actual}, the index lists {expected}; not installed")]
    HashMismatch {
        /// The file.
        filename: String,
        /// Listed hash.
        expected: String,
        /// Computed hash.
        actual: String,
    },
    /// The archive is unreadable, has no app, or has unsafe or oversized entries.
    #[error("{filename}: {reason}")]
    Archive {
        /// The file.
        filename: String,
        /// What is wrong.
        reason: String,
    },
    /// Writing the install failed.
    #[error("{path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_owned(),
        source,
    }
}

/// Versions become folder names: digits, letters, dots only (`6.0.0`, `6.1.0rc2`).
pub fn is_plain_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 32
        && v.starts_with(|c: char| c.is_ascii_digit())
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
}

/// pip's settings that matter here.
#[derive(Debug, Default, PartialEq, Eq)]
struct PipSettings {
    index_url: Option<String>,
    cert: Option<PathBuf>,
}

/// pip's configuration files, lowest precedence first (`pip config debug` lists the same).
fn pip_config_files() -> Vec<PathBuf> {
    let mut files = vec![
        PathBuf::from("/etc/xdg/pip/pip.conf"),
        PathBuf::from("/etc/pip.conf"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        files.push(home.join(".pip/pip.conf"));
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"));
        files.push(xdg.join("pip/pip.conf"));
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        files.push(PathBuf::from(venv).join("pip.conf"));
    }
    if let Some(f) = std::env::var_os("PIP_CONFIG_FILE") {
        files.push(PathBuf::from(f));
    }
    files
}

impl PipSettings {
    /// Files in order, then the environment, as pip layers them; within a file the
    /// `[download]` section overrides `[global]` (what `pip download` reads).
    fn discover(env: impl Fn(&str) -> Option<String>, files: &[PathBuf]) -> PipSettings {
        let mut s = PipSettings::default();
        for file in files {
            let Ok(conf) = Ini::load_from_file(file) else {
                continue;
            };
            for section in ["global", "download"] {
                let Some(props) = conf.section(Some(section)) else {
                    continue;
                };
                let get = |k: &str| props.get(k).or_else(|| props.get(k.replace('-', "_")));
                if let Some(v) = get("index-url") {
                    s.index_url = Some(v.trim().to_owned());
                }
                if let Some(v) = get("cert") {
                    s.cert = Some(PathBuf::from(v.trim()));
                }
            }
        }
        if let Some(v) = env("PIP_INDEX_URL").filter(|v| !v.is_empty()) {
            s.index_url = Some(v);
        }
        if let Some(v) = env("PIP_CERT").filter(|v| !v.is_empty()) {
            s.cert = Some(PathBuf::from(v));
        }
        s
    }
}

/// pip's built-in index, asked from pip itself so that the two never disagree.
fn pip_default_index() -> Option<String> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "from pip._internal.models.index import PyPI; print(PyPI.simple_url)",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let url = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && url.starts_with("http")).then_some(url)
}

/// A file of the PEP 691 project page.
#[derive(Debug, Deserialize)]
struct IndexFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::HashMap<String, String>,
    #[serde(default)]
    yanked: serde_json::Value,
}

#[derive(Debug, Deserialize)]
struct ProjectPage {
    files: Vec<IndexFile>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Wheel,
    Sdist,
}

/// The release file to use: the pure-Python wheel when there is one, else the sdist (6.0.0
/// was published as an sdist only). Yanked files and files without a sha256 are skipped.
fn choose<'a>(files: &'a [IndexFile], version: &str) -> Option<(&'a IndexFile, Kind)> {
    let wheel = format!("apache_superset-{version}-py3-none-any.whl");
    let sdists = [
        format!("apache_superset-{version}.tar.gz"),
        format!("apache-superset-{version}.tar.gz"),
    ];
    // PEP 691: `yanked` is false, true, or the reason as a string.
    let usable = |f: &&IndexFile| {
        let yanked = match &f.yanked {
            serde_json::Value::Bool(b) => *b,
            serde_json::Value::String(_) => true,
            _ => false,
        };
        !yanked && f.hashes.contains_key("sha256")
    };
    files
        .iter()
        .filter(usable)
        .find(|f| f.filename == wheel)
        .map(|f| (f, Kind::Wheel))
        .or_else(|| {
            files
                .iter()
                .filter(usable)
                .find(|f| sdists.contains(&f.filename))
                .map(|f| (f, Kind::Sdist))
        })
}

fn http_client(cert: Option<&Path>) -> Result<reqwest::Client, Error> {
    let mut b = reqwest::Client::builder()
        .user_agent(concat!("liteset/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(std::time::Duration::from_secs(30));
    if let Some(path) = cert {
        let pem = std::fs::read(path).map_err(|e| Error::Cert {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| Error::Cert {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        if certs.is_empty() {
            return Err(Error::Cert {
                path: path.to_owned(),
                reason: "no certificates in it".into(),
            });
        }
        for c in certs {
            b = b.add_root_certificate(c);
        }
    }
    b.build().map_err(|e| Error::Index(e.to_string()))
}

/// Installs the web app of `args.version` into `dir` and returns what was recorded.
pub async fn install(dir: &Path, args: &InstallArgs) -> Result<Record, Error> {
    if !is_plain_version(&args.version) {
        return Err(Error::BadVersion(args.version.clone()));
    }
    if !args.force
        && let Ok(current) = super::load(dir)
        && current.record.version == args.version
    {
        println!(
            "Superset {} web app already installed in {}",
            args.version,
            dir.display()
        );
        return Ok(current.record);
    }
    let pip = PipSettings::discover(|k| std::env::var(k).ok(), &pip_config_files());
    let index = args
        .index_url
        .clone()
        .or(pip.index_url)
        .or_else(pip_default_index)
        .ok_or(Error::NoIndex)?;
    let client = http_client(pip.cert.as_deref())?;

    let page_url = url::Url::parse(&format!("{}/{PROJECT}/", index.trim_end_matches('/')))
        .map_err(|e| Error::Index(format!("bad index URL: {e}")))?;
    let resp = client
        .get(page_url.clone())
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| Error::Index(e.without_url().to_string()))?;
    let page: ProjectPage = resp.json().await.map_err(|e| {
        Error::Index(format!(
            "the index did not answer in the PEP 691 JSON form: {}",
            e.without_url()
        ))
    })?;
    let (file, kind) =
        choose(&page.files, &args.version).ok_or_else(|| Error::NoRelease(args.version.clone()))?;
    let expected = file.hashes["sha256"].to_ascii_lowercase();
    let file_url = page_url
        .join(&file.url)
        .map_err(|e| Error::Index(format!("bad file URL: {e}")))?;

    std::fs::create_dir_all(dir).map_err(io(dir))?;
    println!("Downloading {} …", file.filename);
    let mut download = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    let mut resp = client
        .get(file_url)
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| Error::Index(e.without_url().to_string()))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| Error::Index(e.without_url().to_string()))?
    {
        size += chunk.len() as u64;
        if size > MAX_DOWNLOAD {
            return Err(Error::Archive {
                filename: file.filename.clone(),
                reason: format!("larger than {MAX_DOWNLOAD} bytes"),
            });
        }
        hasher.update(&chunk);
        download.write_all(&chunk).map_err(io(dir))?;
    }
    let actual = hex::encode(hasher.finalize());
    if actual != expected {
        return Err(Error::HashMismatch {
            filename: file.filename.clone(),
            expected,
            actual,
        });
    }

    let record = Record {
        version: args.version.clone(),
        filename: file.filename.clone(),
        sha256: actual,
    };
    let dir = dir.to_owned();
    let archive = download.into_temp_path();
    let rec = record.clone();
    tokio::task::spawn_blocking(move || unpack_and_switch(&archive, kind, &dir, &rec))
        .await
        .map_err(|e| Error::Archive {
            filename: record.filename.clone(),
            reason: e.to_string(),
        })??;
    Ok(record)
}

/// Unpacks into a staging folder, moves it to `<dir>/<version>`, writes the record, and
/// removes other versions.
fn unpack_and_switch(archive: &Path, kind: Kind, dir: &Path, record: &Record) -> Result<(), Error> {
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(dir)
        .map_err(io(dir))?;
    let bad = |reason: String| Error::Archive {
        filename: record.filename.clone(),
        reason,
    };
    let file = std::fs::File::open(archive).map_err(io(archive))?;
    let mut budget = MAX_UNPACKED;
    match kind {
        Kind::Wheel => {
            let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
            for i in 0..zip.len() {
                let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
                let Some(name) = entry.enclosed_name() else {
                    return Err(bad(format!("unsafe path {:?}", entry.name())));
                };
                if entry.is_dir() {
                    continue;
                }
                if let Some(rel) = kept(&name, 0)? {
                    write_entry(&mut entry, &staging.path().join(rel), &mut budget, &bad)?;
                }
            }
        }
        Kind::Sdist => {
            let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
            for entry in tar.entries().map_err(|e| bad(e.to_string()))? {
                let mut entry = entry.map_err(|e| bad(e.to_string()))?;
                // Directories are created as files need them; links are never followed.
                if !entry.header().entry_type().is_file() {
                    continue;
                }
                let name = entry.path().map_err(|e| bad(e.to_string()))?.into_owned();
                // `apache_superset-6.0.0/superset/static/…`
                if let Some(rel) = kept(&name, 1)? {
                    write_entry(&mut entry, &staging.path().join(rel), &mut budget, &bad)?;
                }
            }
        }
    }
    let manifest = staging.path().join(KEEP).join("assets/manifest.json");
    if !manifest.is_file() {
        return Err(bad("no superset/static/assets/manifest.json in it".into()));
    }
    let target = dir.join(&record.version);
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(io(&target))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, &target).map_err(io(&target))?;

    let record_path = dir.join(RECORD);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io(dir))?;
    serde_json::to_writer_pretty(&mut tmp, record).map_err(|e| io(&record_path)(e.into()))?;
    tmp.persist(&record_path)
        .map_err(|e| io(&record_path)(e.error))?;

    // Earlier versions: a server that still serves one reloads on the record's change.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name != record.version && is_plain_version(&name) && e.path().is_dir() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    Ok(())
}

/// The part of an archive path to keep: `superset/static/x` → `static/x`, after skipping
/// `skip` leading components (an sdist's top folder). Anything else is `None`; a path that
/// climbs out is an error.
fn kept(path: &Path, skip: usize) -> Result<Option<PathBuf>, Error> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => parts.push(p),
            Component::CurDir => {}
            _ => {
                return Err(Error::Archive {
                    filename: String::new(),
                    reason: format!("unsafe path {}", path.display()),
                });
            }
        }
    }
    let rest = parts.get(skip..).unwrap_or_default();
    match rest {
        [pkg, keep, tail @ ..] if *pkg == "superset" && *keep == KEEP && !tail.is_empty() => Ok(
            Some(std::iter::once(*keep).chain(tail.iter().copied()).collect()),
        ),
        _ => Ok(None),
    }
}

fn write_entry(
    from: &mut impl Read,
    to: &Path,
    budget: &mut u64,
    bad: &impl Fn(String) -> Error,
) -> Result<(), Error> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    let mut out = std::fs::File::create(to).map_err(io(to))?;
    let copied = std::io::copy(&mut from.take(*budget + 1), &mut out).map_err(io(to))?;
    if copied > *budget {
        return Err(bad(format!("unpacks to more than {MAX_UNPACKED} bytes")));
    }
    *budget -= copied;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, yanked: serde_json::Value, sha: bool) -> IndexFile {
        IndexFile {
            filename: name.into(),
            url: format!("../../files/{name}"),
            hashes: if sha {
                [("sha256".to_owned(), "ab".to_owned())].into()
            } else {
                Default::default()
            },
            yanked,
        }
    }

    #[test]
    fn prefers_the_wheel_and_falls_back_to_the_sdist() {
        let f = vec![
            file("apache_superset-6.0.0.tar.gz", false.into(), true),
            file("apache_superset-6.0.0-py3-none-any.whl", false.into(), true),
            file("apache_superset-6.0.0rc1.tar.gz", false.into(), true),
        ];
        let (chosen, kind) = choose(&f, "6.0.0").unwrap();
        assert_eq!(
            (chosen.filename.as_str(), kind),
            ("apache_superset-6.0.0-py3-none-any.whl", Kind::Wheel)
        );
        let (chosen, kind) = choose(&f[..1], "6.0.0").unwrap();
        assert_eq!(
            (chosen.filename.as_str(), kind),
            ("apache_superset-6.0.0.tar.gz", Kind::Sdist)
        );
        assert!(choose(&f, "6.0").is_none());
    }

    #[test]
    fn skips_yanked_files_and_files_without_a_hash() {
        let f = vec![
            file(
                "apache_superset-6.0.0-py3-none-any.whl",
                "broken".into(),
                true,
            ),
            file("apache_superset-6.0.0.tar.gz", false.into(), false),
        ];
        assert!(choose(&f, "6.0.0").is_none());
        let f = vec![file("apache_superset-6.0.0.tar.gz", true.into(), true)];
        assert!(choose(&f, "6.0.0").is_none());
    }

    #[test]
    fn keeps_only_the_static_folder_and_refuses_climbing_paths() {
        let k = |p: &str, skip| kept(Path::new(p), skip).unwrap();
        assert_eq!(
            k("superset/static/assets/a.js", 0),
            Some(PathBuf::from("static/assets/a.js"))
        );
        assert_eq!(
            k(
                "apache_superset-6.0.0/superset/static/assets/manifest.json",
                1
            ),
            Some(PathBuf::from("static/assets/manifest.json"))
        );
        assert_eq!(k("superset/views/core.py", 0), None);
        assert_eq!(k("apache_superset-6.0.0/setup.py", 1), None);
        assert_eq!(k("superset/static", 0), None);
        assert!(kept(Path::new("superset/static/../../etc/passwd"), 0).is_err());
        assert!(kept(Path::new("/superset/static/x"), 0).is_err());
    }

    #[test]
    fn pip_settings_layer_files_then_environment() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("global.conf");
        let user = dir.path().join("user.conf");
        std::fs::write(
            &global,
            "[global]\nindex-url = https://mirror.invalid/simple\ncert = /etc/a.pem\n",
        )
        .unwrap();
        std::fs::write(
            &user,
            "[global]\nindex_url = https://user.invalid/simple\n[download]\ncert = /etc/b.pem\n",
        )
        .unwrap();
        let files = vec![global, user, dir.path().join("missing.conf")];
        let s = PipSettings::discover(|_| None, &files);
        assert_eq!(
            s,
            PipSettings {
                index_url: Some("https://user.invalid/simple".into()),
                cert: Some("/etc/b.pem".into()),
            }
        );
        let s = PipSettings::discover(
            |k| (k == "PIP_INDEX_URL").then(|| "https://env.invalid/simple".into()),
            &files,
        );
        assert_eq!(s.index_url.as_deref(), Some("https://env.invalid/simple"));
        assert_eq!(s.cert, Some(PathBuf::from("/etc/b.pem")));
    }

    #[test]
    fn versions_are_plain_folder_names() {
        assert!(is_plain_version("6.0.0"));
        assert!(is_plain_version("6.1.0rc2"));
        assert!(!is_plain_version("../6.0.0"));
        assert!(!is_plain_version("6.0.0/x"));
        assert!(!is_plain_version(""));
        assert!(!is_plain_version("latest"));
    }
}
