//! Which analytical connections are safe to open (Superset's `PREVENT_UNSAFE_DB_CONNECTIONS`).
//!
//! A database record is a door into whatever its URI names. Pointing one at the server's own
//! files (the SQLite metadata store with every user's password hash, the secret key, the
//! plugin cache) or at the PostgreSQL metadata database would let anyone who can chart it read
//! the metadata, so [`ConnectionGuard::check`] refuses:
//! - any SQLite file unless `security.allow_sqlite_databases` is set, except the embedded
//!   examples database the server writes itself (`<data_dir>/examples.db`);
//! - even when SQLite is allowed, the metadata file and its `-wal`/`-shm`/`-journal`, the
//!   secret key, the plugin cache, the frontend folder and anything else inside the data
//!   folder;
//! - a PostgreSQL URI naming the metadata store's database on the same server.
//!
//! Paths are compared after resolving them the way the operating system will: relative to the
//! working directory, `.`/`..` and repeated separators folded, every existing symlink followed
//! (a path that does not exist yet is resolved as far as it exists, so a file that would be
//! created inside the data folder is refused too), and an existing file is also compared by
//! device and inode (a hard link is the same file). A `file:` name is checked both literally
//! and as the SQLite URI it would be read as (the SQLite engine opens it literally anyway).
//!
//! The check is one function; the api layer calls it before creating, editing or testing a
//! connection and the importer before writing a database, and [`super::Engines`] calls it
//! again before opening any connection, so a record stored before this check existed cannot
//! be used either.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Component, Path, PathBuf};

use crate::uri::{ConnectionUri, Engine};

/// Superset's text for a refused dialect (`check_sqlalchemy_uri`).
pub const SQLITE_REFUSED: &str =
    "SQLiteDialect_pysqlite cannot be used as a data source for security reasons.";

/// The text for a connection that names the server's own files or metadata database.
pub const INTERNAL_REFUSED: &str = "The metadata store and the server's data folder cannot be \
     used as a data source for security reasons.";

/// Where the server keeps what no analytical connection may reach.
#[derive(Clone, Debug, Default)]
pub struct GuardConfig {
    /// The data folder (metadata file, secret key, plugin cache, examples).
    pub data_dir: Option<PathBuf>,
    /// Other files or folders to protect (the metadata file, the secret key file, the
    /// frontend folder when it lives elsewhere).
    pub protected: Vec<PathBuf>,
    /// The embedded examples database, allowed even though it is in the data folder.
    pub examples_db: Option<PathBuf>,
    /// The PostgreSQL metadata URL, when metadata lives there.
    pub metadata_url: Option<String>,
    /// `security.allow_sqlite_databases`.
    pub allow_sqlite: bool,
}

/// The PostgreSQL metadata database as a connection would name it.
#[derive(Clone, Debug)]
struct PgTarget {
    /// Normalised host names (lower case, no trailing dot, no brackets).
    hosts: BTreeSet<String>,
    /// Addresses the hosts resolved to when the guard was built.
    addrs: BTreeSet<IpAddr>,
    /// Whether a host is this machine (loopback or a unix socket).
    local: bool,
    ports: BTreeSet<u16>,
    dbname: String,
}

/// Decides whether a connection URI may be opened. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ConnectionGuard {
    allow_sqlite: bool,
    /// Resolved protected paths: a path equal to or below one of them is refused.
    protected: Vec<PathBuf>,
    /// `(device, inode)` of the protected files that exist.
    inodes: Vec<(u64, u64)>,
    examples: Option<(PathBuf, Option<(u64, u64)>)>,
    metadata_pg: Option<PgTarget>,
    unrestricted: bool,
}

/// Why a connection was refused; the text is the message to show.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unsafe(pub &'static str);

impl ConnectionGuard {
    /// A guard that refuses nothing, for tools and tests that open files they chose
    /// themselves. The server never uses it.
    pub fn unrestricted() -> ConnectionGuard {
        ConnectionGuard {
            allow_sqlite: true,
            protected: Vec::new(),
            inodes: Vec::new(),
            examples: None,
            metadata_pg: None,
            unrestricted: true,
        }
    }

    /// The guard for a server's configuration. Resolves the protected paths now (the data
    /// folder exists by then) and the metadata host's addresses (a blocking DNS lookup, once).
    pub fn new(cfg: &GuardConfig) -> ConnectionGuard {
        let mut protected: Vec<PathBuf> = cfg.data_dir.iter().cloned().collect();
        protected.extend(cfg.protected.iter().cloned());
        let mut resolved = Vec::new();
        let mut inodes = Vec::new();
        for p in &protected {
            let r = resolve(p);
            for q in [p.as_path(), r.as_path()] {
                if let Some(id) = inode(q) {
                    inodes.push(id);
                }
            }
            // The metadata file's companions are created and removed while the server runs.
            if let Some(name) = r.file_name().map(|n| n.to_string_lossy().into_owned()) {
                for suffix in ["-wal", "-shm", "-journal"] {
                    resolved.push(r.with_file_name(format!("{name}{suffix}")));
                }
            }
            resolved.push(r);
        }
        let examples = cfg.examples_db.as_ref().map(|p| {
            let r = resolve(p);
            let id = inode(&r);
            (r, id)
        });
        ConnectionGuard {
            allow_sqlite: cfg.allow_sqlite,
            protected: resolved,
            inodes,
            examples,
            metadata_pg: cfg.metadata_url.as_deref().and_then(pg_target),
            unrestricted: false,
        }
    }

    /// Whether SQLite files outside the data folder may be connected to.
    pub fn allows_sqlite(&self) -> bool {
        self.allow_sqlite
    }

    /// Refuses a connection to anything the server keeps for itself, and SQLite unless
    /// allowed (see the module documentation).
    pub fn check(&self, uri: &ConnectionUri) -> Result<(), Unsafe> {
        if self.unrestricted {
            return Ok(());
        }
        match uri.engine {
            Engine::Sqlite => self.check_sqlite(uri.path.as_deref().unwrap_or(Path::new(""))),
            Engine::Postgres => self.check_postgres(uri),
            // Network servers that hold nothing of Liteset's own.
            Engine::ClickHouse | Engine::MySql => Ok(()),
        }
    }

    fn check_sqlite(&self, path: &Path) -> Result<(), Unsafe> {
        // Every reading of the name is checked: literal, and as a SQLite `file:` URI.
        let mut candidates = vec![path.to_path_buf()];
        if let Some(p) = sqlite_uri_path(path) {
            candidates.push(p);
        }
        let resolved: Vec<(PathBuf, Option<(u64, u64)>)> = candidates
            .iter()
            .map(|c| {
                let r = resolve(c);
                let id = inode(&r);
                (r, id)
            })
            .collect();
        let is_examples = |(r, id): &(PathBuf, Option<(u64, u64)>)| {
            self.examples
                .as_ref()
                .is_some_and(|(e, eid)| r == e || (id.is_some() && eid.is_some() && id == eid))
        };
        if resolved.iter().all(is_examples) {
            return Ok(());
        }
        if !self.allow_sqlite {
            return Err(Unsafe(SQLITE_REFUSED));
        }
        for (r, id) in &resolved {
            if is_examples(&(r.clone(), *id)) {
                continue;
            }
            if self.protected.iter().any(|p| r.starts_with(p))
                || id.is_some_and(|id| self.inodes.contains(&id))
            {
                return Err(Unsafe(INTERNAL_REFUSED));
            }
        }
        Ok(())
    }

    fn check_postgres(&self, uri: &ConnectionUri) -> Result<(), Unsafe> {
        let Some(meta) = &self.metadata_pg else {
            return Ok(());
        };
        let host = norm_host(uri.host.as_deref().unwrap_or("localhost"));
        let port = uri.port.unwrap_or(5432);
        let same_db = uri.database.as_deref() == Some(meta.dbname.as_str());
        let same_host = meta.hosts.contains(&host)
            || (meta.local && is_local(&host))
            || host
                .parse::<IpAddr>()
                .is_ok_and(|ip| meta.addrs.contains(&ip));
        if same_db && same_host && meta.ports.contains(&port) {
            return Err(Unsafe(INTERNAL_REFUSED));
        }
        Ok(())
    }
}

/// The path a SQLite `file:` URI names (`file:/a/b.db?mode=ro`, `file:///a/b.db`,
/// `file://localhost/a/b.db`), percent-decoded; `None` for a plain name.
fn sqlite_uri_path(path: &Path) -> Option<PathBuf> {
    let s = path.to_str()?;
    if !s.get(..5)?.eq_ignore_ascii_case("file:") {
        return None;
    }
    let rest = &s[5..];
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let rest = match rest.strip_prefix("//") {
        // An authority: empty or `localhost`, then the absolute path.
        Some(a) => a.find('/').map_or("", |i| &a[i..]),
        None => rest,
    };
    let decoded = percent_encoding::percent_decode_str(rest).collect::<Vec<u8>>();
    use std::os::unix::ffi::OsStrExt;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&decoded)))
}

/// `path` as the operating system would reach it: absolute, `.`/`..` folded, every existing
/// symlink on the way followed; the part that does not exist is kept as written.
pub fn resolve(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut out = PathBuf::from("/");
    for comp in abs.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                // Following the prefix now makes a later `..` leave the symlink's target,
                // as the kernel does.
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
        }
    }
    out
}

fn inode(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn norm_host(h: &str) -> String {
    h.trim_matches(['[', ']'])
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Loopback names and addresses, the wildcard addresses (which reach this machine) and unix
/// sockets.
fn is_local(host: &str) -> bool {
    if host.starts_with('/') || host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host == "localhost.localdomain"
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

fn pg_target(url: &str) -> Option<PgTarget> {
    // Without its TLS options, which tokio-postgres cannot parse (`sslmode=verify-full`).
    let (url, _) = crate::pgtls::split_url(url).ok()?;
    let cfg: tokio_postgres::Config = url.parse().ok()?;
    let mut hosts = BTreeSet::new();
    let mut local = false;
    for h in cfg.get_hosts() {
        match h {
            tokio_postgres::config::Host::Tcp(name) => {
                let n = norm_host(name);
                local |= is_local(&n);
                hosts.insert(n);
            }
            tokio_postgres::config::Host::Unix(_) => local = true,
        }
    }
    for a in cfg.get_hostaddrs() {
        hosts.insert(a.to_string());
        local |= a.is_loopback();
    }
    if cfg.get_hosts().is_empty() && cfg.get_hostaddrs().is_empty() {
        local = true;
    }
    let mut addrs: BTreeSet<IpAddr> = cfg.get_hostaddrs().iter().copied().collect();
    for h in &hosts {
        if let Ok(found) = std::net::ToSocketAddrs::to_socket_addrs(&(h.as_str(), 0)) {
            for a in found {
                local |= a.ip().is_loopback();
                addrs.insert(a.ip());
            }
        }
    }
    let mut ports: BTreeSet<u16> = cfg.get_ports().iter().copied().collect();
    if ports.is_empty() {
        ports.insert(5432);
    }
    // libpq's default database is the user's name.
    let dbname = cfg
        .get_dbname()
        .or(cfg.get_user())
        .unwrap_or("postgres")
        .to_owned();
    Some(PgTarget {
        hosts,
        addrs,
        local,
        ports,
        dbname,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(p: &str) -> ConnectionUri {
        ConnectionUri::parse(&format!("sqlite:///{p}")).unwrap()
    }

    #[test]
    fn paths_resolve_through_dots_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("liteset.db"), b"x").unwrap();
        std::os::unix::fs::symlink(data.join("liteset.db"), dir.path().join("link.db")).unwrap();
        let guard = ConnectionGuard::new(&GuardConfig {
            data_dir: Some(data.clone()),
            allow_sqlite: true,
            ..Default::default()
        });
        let d = dir.path().display();
        for bad in [
            format!("{d}/data/liteset.db"),
            format!("{d}//data/./liteset.db"),
            format!("{d}/data/nothing/../liteset.db"),
            format!("{d}/link.db"),
            format!("{d}/data/new.db"),
            format!("{d}/data/liteset.db-wal"),
            format!("{d}/data"),
            format!("file:{d}/data/liteset.db?mode=ro"),
            format!("file://localhost{d}/data/liteset.db"),
            format!("FILE:{d}/data/liteset%2Edb"),
        ] {
            assert_eq!(
                guard.check(&sqlite(&bad)),
                Err(Unsafe(INTERNAL_REFUSED)),
                "{bad}"
            );
        }
        assert_eq!(guard.check(&sqlite(&format!("{d}/other.db"))), Ok(()));
    }

    #[test]
    fn sqlite_needs_the_setting_except_for_the_examples() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("examples.db"), b"x").unwrap();
        let guard = ConnectionGuard::new(&GuardConfig {
            data_dir: Some(data.clone()),
            examples_db: Some(data.join("examples.db")),
            ..Default::default()
        });
        let d = dir.path().display();
        assert_eq!(
            guard.check(&sqlite(&format!("{d}/data/examples.db"))),
            Ok(())
        );
        assert_eq!(
            guard.check(&sqlite(&format!("{d}/x.db"))),
            Err(Unsafe(SQLITE_REFUSED))
        );
        // The examples file named in a URI with a protected literal reading is refused.
        assert!(
            guard
                .check(&sqlite(&format!("file:{d}/data/examples.db")))
                .is_err()
        );
    }

    #[test]
    fn the_postgres_metadata_database_is_refused() {
        let guard = ConnectionGuard::new(&GuardConfig {
            metadata_url: Some("postgresql://meta:pw@localhost:5433/liteset".into()),
            ..Default::default()
        });
        let pg = |u: &str| guard.check(&ConnectionUri::parse(u).unwrap());
        for bad in [
            "postgresql://u:p@localhost:5433/liteset",
            "postgresql+psycopg2://x@127.0.0.1:5433/liteset",
            "POSTGRES://x@[::1]:5433/liteset",
            "postgresql://x@LOCALHOST.:5433/liteset?sslmode=disable",
            "postgresql://x@0.0.0.0:5433/liteset",
        ] {
            assert_eq!(pg(bad), Err(Unsafe(INTERNAL_REFUSED)), "{bad}");
        }
        assert_eq!(pg("postgresql://u@localhost:5433/analytics"), Ok(()));
        assert_eq!(pg("postgresql://u@localhost:5432/liteset"), Ok(()));
        assert_eq!(pg("postgresql://u@db.example:5433/liteset"), Ok(()));
    }

    #[test]
    fn a_metadata_url_with_tls_options_is_still_protected() {
        let guard = ConnectionGuard::new(&GuardConfig {
            metadata_url: Some(
                "postgresql://meta:pw@localhost:5433/liteset?sslmode=verify-full&sslrootcert=/ca.pem"
                    .into(),
            ),
            ..Default::default()
        });
        let uri = ConnectionUri::parse("postgresql://x@127.0.0.1:5433/liteset?sslmode=require");
        assert_eq!(guard.check(&uri.unwrap()), Err(Unsafe(INTERNAL_REFUSED)));
    }
}
