//! Black-box test harness for Liteset: the real `liteset` binary, spawned as a child process,
//! talking HTTP to tests over loopback, with its metadata in SQLite or in a real PostgreSQL.
//!
//! This crate is not a place for fakes or in-process API tests (those live next to the code
//! they test, see `docs` §3.6); everything here goes through a socket and a real process, the
//! way a Superset client would see the server.
//!
//! Where to start:
//! - [`TestServer::builder`] starts a server with a fresh data dir and, for
//!   [`Metadata::Postgres`], a fresh database; [`TestServer::client`] gives a cookie-keeping
//!   HTTP client and [`login`]/[`csrf`] do the two calls nearly every test needs.
//! - [`both_backends!`] turns one test body into a SQLite and a PostgreSQL test.
//! - [`pg`] is the PostgreSQL cluster shared by the whole test process: the one named by
//!   `LITESET_TEST_PG_URL` (as `bash tests/run` sets it), or else a private throwaway cluster
//!   started on first use and stopped when the process exits.
//! - [`tls_pg`] is a second private cluster that accepts TCP connections over TLS only, with a
//!   test CA made on the spot ([`TlsPg`]).
//!
//! ```no_run
//! use liteset_tests::{ADMIN_PASSWORD, Metadata, TestServer, both_backends, csrf, login};
//!
//! both_backends! {
//!     /// Runs twice: `admin_can_log_in_sqlite` and `admin_can_log_in_postgres`.
//!     async fn admin_can_log_in(meta: Metadata) -> anyhow::Result<()> {
//!         let server = TestServer::builder().metadata(meta).start().await?;
//!         let client = server.client();
//!         let tokens = login(&client, server.base_url(), "admin", ADMIN_PASSWORD).await;
//!         let access = tokens["access_token"].as_str().unwrap();
//!         let token = csrf(&client, server.base_url(), access).await;
//!         assert!(!token.is_empty());
//!         Ok(())
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! The server's stdout and stderr are captured: [`TestServer::logs`] returns them (to assert
//! that secrets are not logged), and a test that panics prints them when its server is dropped.
#![warn(missing_docs)]

pub mod mariadb;

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

pub mod clickhouse;

#[doc(hidden)]
pub use paste as __paste;

/// The admin password every [`TestServer`] starts with (`LITESET_ADMIN_PASSWORD`), unless a
/// test overrides it with [`TestServerBuilder::env`].
pub const ADMIN_PASSWORD: &str = "admin";

/// The `LITESET_SECRET_KEY` every [`TestServer`] starts with, unless overridden. Public so tests
/// can assert that it never shows up in [`TestServer::logs`].
pub const SECRET_KEY: &str = "liteset-test-secret-key-3f9c2a7e51b84d06a1c9e8f7d2b4a6c0";

/// How long a server may take to print its `READY` line.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`TestServer::stop`] waits after SIGTERM before it gives up and kills.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------------------------------

/// The PostgreSQL cluster shared by every test in this process. Get it with [`pg`].
pub struct TestPg {
    url: String,
    /// `None` when the cluster came from `LITESET_TEST_PG_URL` and is someone else's to stop.
    _cluster: Option<Cluster>,
}

impl TestPg {
    /// URL of the cluster's `postgres` database, e.g. `postgresql://postgres@127.0.0.1:5432/postgres`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Creates an empty, uniquely named database (`t_<uuid>`) and returns its URL.
    ///
    /// Databases are never dropped: the cluster `tests/run` or [`pg`] starts is thrown away
    /// whole. Panics if the cluster cannot be reached, since no test can go on without it.
    pub async fn fresh_database(&self) -> String {
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to test PostgreSQL at {}: {e}", self.url));
        let connection = tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name} at {}: {e}", self.url));
        drop(client);
        let _ = connection.await;
        database_url(&self.url, &name)
    }
}

static PG: OnceLock<Result<TestPg, String>> = OnceLock::new();

/// The PostgreSQL cluster for this test process.
///
/// Uses `LITESET_TEST_PG_URL` when it is set (as `bash tests/run` does). Otherwise the first
/// call starts a private cluster exactly as `tests/run` would (temp dir, `initdb`, loopback
/// only, durability off; as the `postgres` user when running as root), and a watchdog process
/// stops it and removes its directory once this process has exited, however it exits.
///
/// Panics if no cluster can be had; every later call panics with the same message.
pub async fn pg() -> &'static TestPg {
    let pg = match PG.get() {
        Some(pg) => pg,
        None => tokio::task::spawn_blocking(|| PG.get_or_init(TestPg::init))
            .await
            .expect("starting the test PostgreSQL cluster panicked"),
    };
    match pg {
        Ok(pg) => pg,
        Err(e) => panic!("no test PostgreSQL: {e}"),
    }
}

impl TestPg {
    fn init() -> Result<TestPg, String> {
        if let Some(url) = std::env::var("LITESET_TEST_PG_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            return Ok(TestPg {
                url,
                _cluster: None,
            });
        }
        let started = Instant::now();
        let cluster = Cluster::start(None).map_err(|e| format!("{e:#}"))?;
        let url = format!("postgresql://postgres@127.0.0.1:{}/postgres", cluster.port);
        eprintln!(
            "liteset-tests: started PostgreSQL at {url} in {} ms (set LITESET_TEST_PG_URL to use an existing one)",
            started.elapsed().as_millis()
        );
        Ok(TestPg {
            url,
            _cluster: Some(cluster),
        })
    }
}

/// A throwaway cluster owned by this process. Holding `_watchdog_stdin` is what keeps it alive:
/// the watchdog reads that pipe and, at end of file (this process exited, or the `Cluster` was
/// dropped after a failed start), stops PostgreSQL and removes the directory.
struct Cluster {
    port: u16,
    /// Its temp dir: the data dir, the Unix socket, the TLS files.
    dir: PathBuf,
    _watchdog_stdin: ChildStdin,
}

/// What makes a [`Cluster`] TLS-only: the server's certificate and key (PEM).
struct ServerTls {
    cert_pem: String,
    key_pem: String,
}

/// Run by `sh -c` with `$1` = cluster dir, `$2` = `root` or `user`, `$3` = pg_ctl.
const WATCHDOG_SCRIPT: &str = r#"
cat >/dev/null
PATH="$PATH:/usr/sbin:/sbin"
cd "$1" || exit 0
if [ -f "$1/data/postmaster.pid" ]; then
    if [ "$2" = root ]; then
        runuser -u postgres -- "$3" -D "$1/data" stop -m immediate
    else
        "$3" -D "$1/data" stop -m immediate
    fi
fi >/dev/null 2>&1
cd /
rm -rf "$1"
"#;

impl Cluster {
    /// A throwaway cluster; with `tls`, it serves that certificate and takes TCP connections
    /// over TLS only (`hostssl`), on 127.0.0.1 and 127.0.0.2.
    fn start(tls: Option<&ServerTls>) -> anyhow::Result<Cluster> {
        let bin = find_pg_bin()?;
        let initdb = bin.join("initdb");
        let pg_ctl = bin.join("pg_ctl");
        let root = is_root()?;

        // PostgreSQL refuses to run as root; the postgres user must be able to reach the dir,
        // which is why root uses /tmp rather than $TMPDIR.
        let parent = if root {
            ensure_postgres_user()?;
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("liteset-pg.")
            .tempdir_in(&parent)
            .with_context(|| format!("creating a temp dir in {}", parent.display()))?
            .keep();

        // The watchdog comes first so that even a failed start below cleans up after itself.
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG_SCRIPT)
            .arg("sh")
            .arg(&dir)
            .arg(if root { "root" } else { "user" })
            .arg(&pg_ctl)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so a Ctrl-C aimed at the test run does not kill it before
            // it has cleaned up.
            .process_group(0)
            .spawn()
            .context("spawning the PostgreSQL watchdog (sh)")?;
        let watchdog_stdin = watchdog.stdin.take().expect("piped stdin");

        if root {
            run(Command::new("chown").arg("postgres:").arg(&dir))?;
        }
        let data = dir.join("data");
        let as_pg = |program: &Path| -> Command {
            let mut cmd = if root {
                let mut cmd = Command::new(sbin("runuser"));
                cmd.args(["-u", "postgres", "--"]).arg(program);
                cmd
            } else {
                Command::new(program)
            };
            cmd.current_dir(&dir);
            cmd
        };

        let initdb_with = |locale: &str| {
            run(as_pg(&initdb)
                .arg("-D")
                .arg(&data)
                .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
                .arg(format!("--locale={locale}")))
        };
        if let Err(first) = initdb_with("C.UTF-8") {
            let _ = fs::remove_dir_all(&data);
            initdb_with("C").with_context(|| format!("initdb with --locale=C.UTF-8: {first:#}"))?;
        }

        let mut conf = OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .context("opening postgresql.conf")?;
        let listen = if tls.is_some() {
            // 127.0.0.2 is in no certificate name: the host-name check has a wrong name to see.
            "127.0.0.1,127.0.0.2"
        } else {
            "127.0.0.1"
        };
        write!(
            conf,
            "\n# liteset tests: a throwaway cluster, so durability is traded for speed.\n\
             listen_addresses = '{listen}'\n\
             unix_socket_directories = '{}'\n\
             fsync = off\n\
             synchronous_commit = off\n\
             full_page_writes = off\n\
             max_connections = 300\n\
             TimeZone = 'UTC'\n",
            dir.display()
        )
        .context("writing postgresql.conf")?;
        // The superuser is trusted; every other role must give its password, so tests see
        // real authentication failures (wrong password) as users' databases report them.
        let hba = match tls {
            None => {
                "local all all trust\n\
                 host all postgres 127.0.0.1/32 trust\n\
                 host all all 127.0.0.1/32 scram-sha-256\n"
            }
            Some(tls) => {
                // The key must belong to the server's user and be private to it, or
                // PostgreSQL refuses to start.
                let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));
                fs::write(&cert, &tls.cert_pem).context("writing server.crt")?;
                fs::write(&key, &tls.key_pem).context("writing server.key")?;
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&key, fs::Permissions::from_mode(0o600))?;
                if root {
                    run(Command::new("chown").arg("postgres:").arg(&cert).arg(&key))?;
                }
                write!(
                    conf,
                    "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
                    cert.display(),
                    key.display()
                )
                .context("writing postgresql.conf")?;
                // No `host` line: a connection in the clear finds no entry and is refused.
                "local all all trust\n\
                 hostssl all postgres 127.0.0.0/8 trust\n\
                 hostssl all all 127.0.0.0/8 scram-sha-256\n"
            }
        };
        drop(conf);
        fs::write(data.join("pg_hba.conf"), hba).context("writing pg_hba.conf")?;

        // A port free now may be taken before postgres binds it, so try a few.
        let log = dir.join("postgres.log");
        let mut last_error = None;
        for _ in 0..5 {
            let port = free_port()?;
            let started = run(as_pg(&pg_ctl)
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .arg("-o")
                .arg(format!("-p {port}"))
                .args(["-w", "-t", "60", "start"]));
            match started {
                Ok(()) => {
                    return Ok(Cluster {
                        port,
                        dir,
                        _watchdog_stdin: watchdog_stdin,
                    });
                }
                Err(e) => last_error = Some(e),
            }
        }
        let log = fs::read_to_string(&log).unwrap_or_default();
        Err(last_error
            .expect("at least one attempt")
            .context(format!("pg_ctl start failed; postgres.log:\n{log}")))
    }
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL over TLS
// ---------------------------------------------------------------------------------------------

/// A private cluster that accepts TCP connections over TLS only (`hostssl` lines, no `host`),
/// with a test CA made for this process: the server's certificate is an end-entity
/// certificate (`CA:FALSE`, CN and SAN `localhost` and `127.0.0.1`) signed by [`Self::ca_pem`];
/// [`Self::other_ca_pem`] is an unrelated CA that signed nothing of it. The server also listens
/// on 127.0.0.2, a name its certificate does not carry. Get it with [`tls_pg`].
///
/// Set-up goes through the Unix socket, where the superuser is trusted and TLS plays no part;
/// over TCP `postgres` is trusted and every other role gives its password (scram).
pub struct TlsPg {
    ca_pem: String,
    ca_file: PathBuf,
    other_ca_pem: String,
    other_ca_file: PathBuf,
    cluster: Cluster,
}

static TLS_PG: OnceLock<Result<TlsPg, String>> = OnceLock::new();

/// The TLS-only cluster of this test process, started on first use (a few seconds) and stopped
/// when the process exits. Panics if it cannot be started.
pub async fn tls_pg() -> &'static TlsPg {
    let pg = match TLS_PG.get() {
        Some(pg) => pg,
        None => tokio::task::spawn_blocking(|| TLS_PG.get_or_init(TlsPg::init))
            .await
            .expect("starting the TLS test cluster panicked"),
    };
    match pg {
        Ok(pg) => pg,
        Err(e) => panic!("no TLS test PostgreSQL: {e}"),
    }
}

impl TlsPg {
    fn init() -> Result<TlsPg, String> {
        let fail = |e: anyhow::Error| format!("{e:#}");
        let certs = TestCerts::new().map_err(fail)?;
        let cluster = Cluster::start(Some(&ServerTls {
            cert_pem: certs.server_pem.clone(),
            key_pem: certs.server_key_pem.clone(),
        }))
        .map_err(fail)?;
        let ca_file = cluster.dir.join("ca.pem");
        let other_ca_file = cluster.dir.join("other-ca.pem");
        fs::write(&ca_file, &certs.ca_pem).map_err(|e| e.to_string())?;
        fs::write(&other_ca_file, &certs.other_ca_pem).map_err(|e| e.to_string())?;
        Ok(TlsPg {
            ca_pem: certs.ca_pem,
            ca_file,
            other_ca_pem: certs.other_ca_pem,
            other_ca_file,
            cluster,
        })
    }

    /// The TCP port (on 127.0.0.1 and 127.0.0.2).
    pub fn port(&self) -> u16 {
        self.cluster.port
    }

    /// The CA that signed the server's certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// [`Self::ca_pem`] in a file, for `sslrootcert=`.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// A CA unrelated to the server's certificate, PEM.
    pub fn other_ca_pem(&self) -> &str {
        &self.other_ca_pem
    }

    /// [`Self::other_ca_pem`] in a file.
    pub fn other_ca_file(&self) -> &Path {
        &self.other_ca_file
    }

    /// A superuser session over the Unix socket (no TLS there).
    pub async fn admin(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::Config::new()
            .host_path(&self.cluster.dir)
            .port(self.cluster.port)
            .user("postgres")
            .dbname("postgres")
            .connect(tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to the TLS test cluster's socket: {e}"));
        tokio::spawn(connection);
        client
    }

    /// A new login role with `password` that owns a new database; returns (role, database),
    /// both uniquely named.
    pub async fn role_and_database(&self, password: &str) -> (String, String) {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let (role, database) = (format!("r_{id}"), format!("t_{id}"));
        let admin = self.admin().await;
        // Two statements: CREATE DATABASE cannot share a (implicit) transaction.
        for sql in [
            format!(
                "CREATE ROLE {role} LOGIN PASSWORD '{}'",
                password.replace('\'', "''")
            ),
            format!("CREATE DATABASE {database} OWNER {role}"),
        ] {
            admin
                .batch_execute(&sql)
                .await
                .unwrap_or_else(|e| panic!("creating {role} and {database}: {e:?}"));
        }
        (role, database)
    }
}

/// The test PKI of [`TlsPg`], made with rcgen (ECDSA P-256).
struct TestCerts {
    ca_pem: String,
    other_ca_pem: String,
    server_pem: String,
    server_key_pem: String,
}

impl TestCerts {
    fn new() -> anyhow::Result<TestCerts> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, KeyUsagePurpose,
        };
        let ca = |name: &str| -> anyhow::Result<(CertificateParams, KeyPair, String)> {
            let mut params = CertificateParams::new(Vec::<String>::new())?;
            params.distinguished_name.push(DnType::CommonName, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            let key = KeyPair::generate()?;
            let pem = params.self_signed(&key)?.pem();
            Ok((params, key, pem))
        };
        let (ca_params, ca_key, ca_pem) = ca("Liteset test CA")?;
        let (_, _, other_ca_pem) = ca("Unrelated test CA")?;
        // An end-entity certificate: rustls refuses a CA certificate used as one.
        let mut server = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])?;
        server
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        server.is_ca = IsCa::ExplicitNoCa;
        server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate()?;
        let issuer = Issuer::new(ca_params, ca_key);
        let server_pem = server.signed_by(&server_key, &issuer)?.pem();
        Ok(TestCerts {
            ca_pem,
            other_ca_pem,
            server_pem,
            server_key_pem: server_key.serialize_pem(),
        })
    }
}

/// Runs a command to completion; its output goes into the error when it fails. Output goes to
/// temp files rather than pipes because `pg_ctl start` leaves a daemon behind that could keep a
/// pipe open.
fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let mut out = tempfile::tempfile().context("creating a temp file for command output")?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out.try_clone()?)
        .status()
        .with_context(|| format!("running {cmd:?}"))?;
    if status.success() {
        return Ok(());
    }
    use std::io::{Read, Seek};
    let mut text = String::new();
    out.rewind()?;
    out.read_to_string(&mut text)?;
    bail!("{cmd:?} failed ({status}):\n{text}")
}

/// initdb and pg_ctl: from PATH, else the newest /usr/lib/postgresql/*/bin, else (as root)
/// after installing Debian's `postgresql` package.
fn find_pg_bin() -> anyhow::Result<PathBuf> {
    fn look() -> Option<PathBuf> {
        let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
        if let Some(path) = std::env::var_os("PATH")
            && let Some(dir) = std::env::split_paths(&path).find(|d| has_both(d))
        {
            return Some(dir);
        }
        let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .filter_map(|entry| {
                let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
                Some((version, entry.path().join("bin")))
            })
            .filter(|(_, bin)| has_both(bin))
            .collect();
        versions.sort();
        versions.pop().map(|(_, bin)| bin)
    }
    if let Some(bin) = look() {
        return Ok(bin);
    }
    if !is_root()? {
        bail!("initdb/pg_ctl not found; install PostgreSQL or set LITESET_TEST_PG_URL");
    }
    eprintln!("liteset-tests: initdb/pg_ctl not found; installing Debian's postgresql package");
    run(Command::new("apt-get")
        .args(["update", "-qq"])
        .env("DEBIAN_FRONTEND", "noninteractive"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "postgresql"])
        .env("DEBIAN_FRONTEND", "noninteractive"))?;
    look().context("postgresql installed, but initdb/pg_ctl still not found")
}

/// `name` from PATH, else from the sbin dirs a non-login root shell may lack on its PATH.
fn sbin(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

fn is_root() -> anyhow::Result<bool> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("running id -u")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn ensure_postgres_user() -> anyhow::Result<()> {
    let exists = || {
        Command::new("id")
            .args(["-u", "postgres"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if exists() {
        return Ok(());
    }
    let created = run(Command::new(sbin("useradd")).args([
        "--system",
        "--no-create-home",
        "--shell",
        "/usr/sbin/nologin",
        "postgres",
    ]));
    // Another test process may have created it in the meantime.
    if exists() { Ok(()) } else { created }
}

fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// `base` with its database (the last path segment) replaced by `database`; a query string is kept.
fn database_url(base: &str, database: &str) -> String {
    let (main, query) = match base.split_once('?') {
        Some((main, query)) => (main, Some(query)),
        None => (base, None),
    };
    let authority_start = main.find("://").map_or(0, |i| i + 3);
    let path_start = main[authority_start..]
        .find('/')
        .map_or(main.len(), |i| authority_start + i);
    let mut url = format!("{}/{database}", &main[..path_start]);
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    url
}

// ---------------------------------------------------------------------------------------------
// The liteset server
// ---------------------------------------------------------------------------------------------

/// Where a [`TestServer`] keeps its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metadata {
    /// The server's default: SQLite inside its data dir.
    #[default]
    Sqlite,
    /// A fresh database in the [`pg`] cluster, passed as `LITESET_METADATA_URL`.
    Postgres,
}

/// Configures and starts a [`TestServer`]; get one from [`TestServer::builder`].
#[derive(Debug, Default)]
pub struct TestServerBuilder {
    metadata: Metadata,
    /// In order; `None` removes the variable.
    env: Vec<(String, Option<String>)>,
    args: Vec<String>,
    bin: Option<PathBuf>,
}

impl TestServerBuilder {
    /// Where the server keeps its metadata (default [`Metadata::Sqlite`]).
    pub fn metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets an environment variable for the server; overrides the harness's defaults.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    /// Removes an environment variable, including one the harness would set (say, to start a
    /// server without `LITESET_ADMIN_PASSWORD`).
    pub fn env_remove(mut self, key: impl Into<String>) -> Self {
        self.env.push((key.into(), None));
        self
    }

    /// Adds a command-line argument after `serve --bind 127.0.0.1:0`.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Runs this executable instead of [`liteset_bin`] (the harness's own tests use a fake).
    pub fn bin(mut self, bin: impl Into<PathBuf>) -> Self {
        self.bin = Some(bin.into());
        self
    }

    /// Spawns the server and waits (up to 30 s) for its `READY http://<addr>` line.
    ///
    /// The child gets a fresh temp dir as working directory and `LITESET_DATA_DIR`,
    /// [`ADMIN_PASSWORD`], [`SECRET_KEY`], and for [`Metadata::Postgres`] a fresh
    /// `LITESET_METADATA_URL`. No other `LITESET_*` variable is inherited from the test
    /// process, so a developer's shell cannot change what a test sees.
    pub async fn start(self) -> anyhow::Result<TestServer> {
        let bin = self.bin.unwrap_or_else(liteset_bin);
        let dir = tempfile::Builder::new()
            .prefix("liteset-test.")
            .tempdir()
            .context("creating the server's temp dir")?;
        let data_dir = dir.path().join("data");
        fs::create_dir(&data_dir).context("creating the data dir")?;
        let stderr_path = dir.path().join("stderr.log");
        let stderr = File::create(&stderr_path).context("creating stderr.log")?;

        let metadata_url = match self.metadata {
            Metadata::Sqlite => None,
            Metadata::Postgres => Some(pg().await.fresh_database().await),
        };

        let mut cmd = Command::new(&bin);
        cmd.args(["serve", "--bind", "127.0.0.1:0"])
            .args(&self.args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("LITESET_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("LITESET_DATA_DIR", &data_dir)
            .env("LITESET_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("LITESET_SECRET_KEY", SECRET_KEY)
            // Tests count what they create; the embedded examples are tested on their own.
            .env("LITESET_EXAMPLES", "false");
        if let Some(url) = &metadata_url {
            cmd.env("LITESET_METADATA_URL", url);
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;
        let pid = child.id();

        let stdout = child.stdout.take().expect("piped stdout");
        let stdout_buf = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<String>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let buf = Arc::clone(&stdout_buf);
        // A plain thread rather than a task: it must outlive whichever runtime started the
        // server, and keeps draining so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut ready_tx = Some(ready_tx);
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&line);
                lock(&buf).push_str(&text);
                if let Some(addr) = text.trim_end().strip_prefix("READY ")
                    && let Some(tx) = ready_tx.take()
                {
                    let _ = tx.send(addr.trim().trim_end_matches('/').to_owned());
                }
            }
            let _ = done_tx.send(());
        });

        let mut server = TestServer {
            child: Some(child),
            pid,
            base_url: String::new(),
            data_dir,
            stderr_path,
            stdout: stdout_buf,
            stdout_done: Some(done_rx),
            exit_status: None,
            metadata_url,
            _dir: dir,
        };
        match tokio::time::timeout(READY_TIMEOUT, ready_rx).await {
            Ok(Ok(base_url)) => {
                server.base_url = base_url;
                Ok(server)
            }
            Ok(Err(_)) => {
                let status = server.wait_exit(Duration::from_secs(5)).await;
                bail!(
                    "{} exited before printing READY ({status:?}); logs:\n{}",
                    bin.display(),
                    server.logs()
                )
            }
            Err(_) => {
                server.kill();
                bail!(
                    "{} printed no READY line within {READY_TIMEOUT:?}; logs:\n{}",
                    bin.display(),
                    server.logs()
                )
            }
        }
    }
}

/// A running `liteset` process listening on a loopback port. Killed when dropped; if the test
/// is panicking, its logs are printed first.
pub struct TestServer {
    child: Option<Child>,
    pid: u32,
    base_url: String,
    data_dir: PathBuf,
    stderr_path: PathBuf,
    stdout: Arc<Mutex<String>>,
    stdout_done: Option<mpsc::Receiver<()>>,
    exit_status: Option<ExitStatus>,
    metadata_url: Option<String>,
    /// Dropped last: removes the data dir and the captured stderr.
    _dir: tempfile::TempDir,
}

impl TestServer {
    /// A builder with the defaults: SQLite metadata, no extra env or args.
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder::default()
    }

    /// `http://127.0.0.1:<port>`, as the server announced it (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `base_url()` joined with `path` (a leading `/` is added when missing).
    pub fn url(&self, path: &str) -> String {
        if path.starts_with('/') {
            format!("{}{path}", self.base_url)
        } else {
            format!("{}/{path}", self.base_url)
        }
    }

    /// A new HTTP client with its own cookie store that does not follow redirects, so tests
    /// see the 30x responses themselves.
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .cookie_store(true)
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(CLIENT_IDLE)
            .build()
            .expect("building a reqwest client")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The server's `LITESET_DATA_DIR` (empty at start, removed when the server is dropped).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The `LITESET_METADATA_URL` it was given, for [`Metadata::Postgres`].
    pub fn metadata_url(&self) -> Option<&str> {
        self.metadata_url.as_deref()
    }

    /// Everything the server wrote so far: stdout, then stderr. Complete after [`Self::stop`].
    pub fn logs(&self) -> String {
        let mut logs = lock(&self.stdout).clone();
        if let Ok(stderr) = fs::read(&self.stderr_path) {
            logs.push_str(&String::from_utf8_lossy(&stderr));
        }
        logs
    }

    /// Sends SIGTERM and waits (up to 15 s) for the server to exit; returns its exit status.
    /// If it does not exit in time it is killed and this fails. Calling it again returns the
    /// same status.
    pub async fn stop(&mut self) -> anyhow::Result<ExitStatus> {
        if let Some(status) = self.exit_status {
            return Ok(status);
        }
        // `kill` fails only if the process is already gone; wait_exit collects its status then.
        Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .context("running kill -TERM")?;
        match self.wait_exit(STOP_TIMEOUT).await {
            Some(status) => Ok(status),
            None => {
                self.kill();
                bail!(
                    "server (pid {}) did not exit within {STOP_TIMEOUT:?} of SIGTERM; logs:\n{}",
                    self.pid,
                    self.logs()
                )
            }
        }
    }

    /// Polls for exit up to `timeout`; on exit also waits briefly for stdout to be drained.
    async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            let child = self.child.as_mut()?;
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                _ => return None,
            }
        };
        self.child = None;
        self.exit_status = Some(status);
        self.wait_stdout_drained(Duration::from_secs(2));
        Some(status)
    }

    fn wait_stdout_drained(&mut self, timeout: Duration) {
        if let Some(done) = self.stdout_done.take() {
            let _ = done.recv_timeout(timeout);
        }
    }

    /// SIGKILL and reap, if still running.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            if let Ok(status) = child.wait() {
                self.exit_status = Some(status);
            }
            self.wait_stdout_drained(Duration::from_secs(2));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "----- liteset server logs (pid {}, {}) -----\n{}\n----- end of server logs -----",
                self.pid,
                self.base_url,
                self.logs()
            );
        }
    }
}

/// The `liteset` binary: `LITESET_BIN` if set, else `liteset` in the cargo target dir this test
/// executable was built into (`target/<profile>/deps/<test>` → `target/<profile>/liteset`).
///
/// Panics when it does not exist: `cargo test` does not build binaries for another package's
/// integration tests, so it has to be built first.
pub fn liteset_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("LITESET_BIN").filter(|b| !b.is_empty()) {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("test executable has a parent dir");
    if dir.ends_with("deps") {
        dir = dir.parent().expect("deps has a parent dir");
    }
    let bin = dir.join(format!("liteset{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "liteset binary not found at {}: run `cargo build -p liteset` first or use `bash tests/run` \
         (or set LITESET_BIN)",
        bin.display()
    );
    bin
}

fn lock(buf: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    buf.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------------------------------------
// HTTP helpers
// ---------------------------------------------------------------------------------------------

/// Logs in with `POST /api/v1/security/login` (`provider: db`, `refresh: true`) and returns the
/// JSON body (`access_token`, `refresh_token`). Panics unless the server answers 2xx with JSON.
pub async fn login(
    client: &reqwest::Client,
    base: &str,
    username: &str,
    password: &str,
) -> serde_json::Value {
    let url = format!("{}/api/v1/security/login", base.trim_end_matches('/'));
    let body = serde_json::json!({
        "username": username,
        "password": password,
        "provider": "db",
        "refresh": true,
    });
    let response = client
        .post(&url)
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    json_body(response, &format!("POST {url} as {username}")).await
}

/// Fetches a CSRF token with `GET /api/v1/security/csrf_token/` and the bearer `access_token`;
/// returns its `result`. Panics unless the server answers 2xx with a string `result`.
pub async fn csrf(client: &reqwest::Client, base: &str, access_token: &str) -> String {
    let url = format!("{}/api/v1/security/csrf_token/", base.trim_end_matches('/'));
    let response = client
        .get(&url)
        .bearer_auth(access_token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let body = json_body(response, &format!("GET {url}")).await;
    match body["result"].as_str() {
        Some(token) => token.to_owned(),
        None => panic!("GET {url}: no string `result` in {body}"),
    }
}

/// Status and JSON body of a response; a body that is not JSON comes back as `{"raw": text}`
/// so assertions on error envelopes show what the server actually said.
pub async fn status_json(resp: reqwest::Response) -> (reqwest::StatusCode, serde_json::Value) {
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let json = serde_json::from_str(&text).unwrap_or_else(|_| serde_json::json!({ "raw": text }));
    (status, json)
}

async fn json_body(response: reqwest::Response, what: &str) -> serde_json::Value {
    let status = response.status();
    let text = response
        .text()
        .await
        .unwrap_or_else(|e| panic!("{what}: reading body: {e}"));
    assert!(status.is_success(), "{what}: {status}: {text}");
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{what}: {status}, not JSON ({e}): {text}"))
}

// ---------------------------------------------------------------------------------------------
// Both metadata backends
// ---------------------------------------------------------------------------------------------

/// Writes each test body once and runs it on both metadata backends.
///
/// Each `async fn name(meta: Metadata) [-> T] { … }` becomes a plain async fn plus two
/// `#[tokio::test]`s, `name_sqlite` and `name_postgres`, that call it with [`Metadata::Sqlite`]
/// and [`Metadata::Postgres`]. Attributes written above the body (`#[ignore]`, doc comments)
/// go on both tests. The calling crate needs `tokio` as a dependency. See the crate docs for
/// an example.
#[macro_export]
macro_rules! both_backends {
    ($(
        $(#[$attr:meta])*
        async fn $name:ident($meta:ident : $meta_ty:ty) $(-> $ret:ty)? $body:block
    )*) => {
        $(
            async fn $name($meta: $meta_ty) $(-> $ret)? $body

            $crate::__paste::paste! {
                $(#[$attr])*
                #[tokio::test]
                async fn [<$name _sqlite>]() $(-> $ret)? {
                    $name($crate::Metadata::Sqlite).await
                }

                $(#[$attr])*
                #[tokio::test]
                async fn [<$name _postgres>]() $(-> $ret)? {
                    $name($crate::Metadata::Postgres).await
                }
            }
        )*
    };
}

/// How long the test clients keep an idle connection: well under the server's idle limit
/// (`http.read_timeout_secs`, 30 s by default), so a test that pauses (building a fixture
/// plugin on a cold cache) never sends on a connection the server is closing at that moment
/// (hyper's `IncompleteMessage`).
const CLIENT_IDLE: std::time::Duration = std::time::Duration::from_secs(10);

/// How [`Api::guest`] marks its token (a JWT never contains a space).
const GUEST_PREFIX: &str = "guest ";

/// A logged-in API client, authenticated the way real Superset clients are: a Bearer access
/// token, the CSRF token in `X-CSRFToken`, and the `session` cookie in its cookie store.
pub struct Api {
    /// The HTTP client (with cookies).
    pub client: reqwest::Client,
    /// The server's base URL.
    pub base: String,
    /// The access token.
    pub token: String,
    /// The CSRF token.
    pub csrf: String,
}

impl Api {
    /// Logs `user` in on `server`. Panics unless login and the CSRF token succeed.
    pub async fn login(server: &TestServer, user: &str, password: &str) -> Api {
        let client = reqwest::Client::builder()
            .cookie_store(true)
            .pool_idle_timeout(CLIENT_IDLE)
            .build()
            .expect("HTTP client");
        let tokens = login(&client, server.base_url(), user, password).await;
        let token = tokens["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned();
        let csrf = csrf(&client, server.base_url(), &token).await;
        Api {
            client,
            base: server.base_url().to_owned(),
            token,
            csrf,
        }
    }

    /// A client of an embedded dashboard's visitor: every request carries `guest_token` in
    /// `X-GuestToken` (and no cookie, no Bearer token, no CSRF token), as the embedded app
    /// sends it from its third-party frame.
    pub fn guest(server: &TestServer, guest_token: &str) -> Api {
        Api {
            client: reqwest::Client::builder()
                .pool_idle_timeout(CLIENT_IDLE)
                .build()
                .expect("HTTP client"),
            base: server.base_url().to_owned(),
            token: format!("{GUEST_PREFIX}{guest_token}"),
            csrf: String::new(),
        }
    }

    /// A request to `path` with the credentials attached.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let req = self.client.request(method, format!("{}{path}", self.base));
        match self.token.strip_prefix(GUEST_PREFIX) {
            Some(guest) => req.header("X-GuestToken", guest),
            None => req
                .bearer_auth(&self.token)
                .header("X-CSRFToken", &self.csrf),
        }
    }

    /// Sends a request with an optional JSON body; returns status and JSON (see [`status_json`]).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        let mut req = self.request(method.clone(), path);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        status_json(resp).await
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> (reqwest::StatusCode, serde_json::Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        self.call(reqwest::Method::POST, path, Some(&body)).await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        self.call(reqwest::Method::PUT, path, Some(&body)).await
    }

    /// `DELETE path`.
    pub async fn delete(&self, path: &str) -> (reqwest::StatusCode, serde_json::Value) {
        self.call(reqwest::Method::DELETE, path, None).await
    }
}

// ---------------------------------------------------------------------------------------------
// Plugin fixtures
// ---------------------------------------------------------------------------------------------

/// The hostile/diagnostic fixture plugin (`tests/fixtures/plugins`) built for wasm32-wasip2
/// with `features` (`""`, `"v2"`, `"renamed"`, `"viz"`, `"bad_chart_app"`), built once per
/// variant. Each variant has its own target directory (next to this test's), so concurrent
/// test processes never read each other's half-written output.
pub fn fixture_plugin(features: &str) -> PathBuf {
    let variant = if features.is_empty() {
        "default"
    } else {
        features
    };
    build_component(
        "fixtures/plugins",
        "liteset_fixture_plugin",
        features,
        variant,
    )
}

/// The `liteset:plugin@0.1.0` viz component of `tests/fixtures/plugin-v010` (`legacy_viz`),
/// built without the SDK straight from the frozen 0.1.0 WIT: what every plugin built before
/// 0.2.0 looks like to the server. Built once, like [`fixture_plugin`].
pub fn legacy_plugin() -> PathBuf {
    build_component("fixtures/plugin-v010", "liteset_plugin_v010", "", "v010")
}

/// This crate's folder (`tests/`): the runtime value first, since worktrees sharing one
/// target dir share this crate's compiled library (identical sources are fresh for cargo),
/// whose compile-time path may name another worktree.
pub fn tests_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Builds the crate at `crate_dir` (relative to this crate, or absolute) for wasm32-wasip2
/// with `features` into `<target>/fixture-plugins/<variant>`, once per process and variant;
/// `lib_name` is its library's name (the component's file name).
pub fn build_component(crate_dir: &str, lib_name: &str, features: &str, variant: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, p)) = built.iter().find(|(v, _)| v == variant) {
        return p.clone();
    }
    let exe = std::env::current_exe().expect("current_exe");
    // `<target>/<profile>/deps/<test>`: build next to the profile directories.
    let base = exe
        .ancestors()
        .nth(3)
        .unwrap_or_else(|| exe.parent().expect("parent"))
        .to_path_buf();
    let target_dir = base.join("fixture-plugins").join(variant);
    let manifest = tests_dir().join(crate_dir).join("Cargo.toml");
    let mut cmd =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args([
        "build",
        "--release",
        "--target",
        "wasm32-wasip2",
        "--manifest-path",
    ])
    .arg(&manifest)
    .arg("--target-dir")
    .arg(&target_dir);
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("run cargo for a fixture plugin");
    assert!(
        status.success(),
        "building the fixture plugin {crate_dir} ({variant}) failed"
    );
    let wasm = target_dir.join(format!("wasm32-wasip2/release/{lib_name}.wasm"));
    assert!(wasm.is_file(), "{} missing", wasm.display());
    built.push((variant.to_owned(), wasm.clone()));
    wasm
}

#[cfg(test)]
mod tests {
    use super::database_url;

    #[test]
    fn database_url_replaces_the_database() {
        assert_eq!(
            database_url("postgresql://postgres@127.0.0.1:5432/postgres", "t_1"),
            "postgresql://postgres@127.0.0.1:5432/t_1"
        );
    }

    #[test]
    fn database_url_keeps_the_query_string() {
        assert_eq!(
            database_url("postgres://u:p@h:1/db?sslmode=disable", "t_2"),
            "postgres://u:p@h:1/t_2?sslmode=disable"
        );
    }

    #[test]
    fn database_url_adds_a_missing_database() {
        assert_eq!(
            database_url("postgresql://h:1", "t_3"),
            "postgresql://h:1/t_3"
        );
    }
}
