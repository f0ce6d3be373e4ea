//! ClickHouse for the tests: the server `tests/run` starts (`LITESET_TEST_CLICKHOUSE_URL`,
//! written by tests/clickhouse.sh), or else private servers started here the same way, and the
//! two-shard cluster of the `Distributed` tests. [`start_servers`] is the one place servers are
//! started from Rust: it writes each server's configuration (users, UTC, loopback, and a
//! `remote_servers` cluster naming every server of the set as one shard), starts them on free
//! ports and leaves a watchdog that stops them and removes their folder once this process
//! exits, however it exits.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The password of the `liteset` user every test server has (the `default` user has none).
pub const CH_PASSWORD: &str = "ch-secret-pw";

/// A ClickHouse server reachable over HTTP.
pub struct TestClickHouse {
    /// `http://127.0.0.1:<port>/`.
    http: String,
    /// The `clickhousedb://default@127.0.0.1:<port>/default` URI.
    url: String,
    _servers: Option<ChServers>,
}

impl TestClickHouse {
    /// The server's `clickhousedb://` URI (user `default`, database `default`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `http://127.0.0.1:<port>/`.
    pub fn http(&self) -> &str {
        &self.http
    }

    /// The HTTP port.
    pub fn port(&self) -> u16 {
        port_of(&self.http)
    }

    /// Runs `sql` as `default` and returns the body; panics on failure (test set-up).
    pub async fn exec(&self, sql: &str) -> String {
        exec(&self.http, sql)
            .await
            .unwrap_or_else(|e| panic!("ClickHouse at {}: {e:#}", self.http))
    }

    /// Creates an empty, uniquely named database (`t_<uuid>`) and returns its name.
    pub async fn fresh_database(&self) -> String {
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        self.exec(&format!("CREATE DATABASE {name}")).await;
        name
    }

    /// The `clickhousedb://` URI of database `db` for `user` (`default`, or `liteset` with
    /// [`CH_PASSWORD`]).
    pub fn url_for(&self, user: &str, password: Option<&str>, db: &str) -> String {
        let auth = match password {
            Some(p) => format!("{user}:{p}"),
            None => user.to_owned(),
        };
        format!("clickhousedb://{auth}@127.0.0.1:{}/{db}", self.port())
    }
}

fn port_of(http: &str) -> u16 {
    http.trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

/// Runs `sql` on the server at `http` as `default`; a ClickHouse error is an error.
pub async fn exec(http: &str, sql: &str) -> anyhow::Result<String> {
    let resp = reqwest::Client::new()
        .post(http)
        .timeout(Duration::from_secs(120))
        .body(sql.to_owned())
        .send()
        .await
        .with_context(|| format!("POST {http}"))?;
    let status = resp.status();
    let body = resp.text().await?;
    if !status.is_success() {
        bail!("{sql}: {status}: {body}");
    }
    Ok(body)
}

static CH: OnceLock<Result<TestClickHouse, String>> = OnceLock::new();

/// The ClickHouse server for this test process: `LITESET_TEST_CLICKHOUSE_URL` when set (as
/// `bash tests/run` does), else one started here on first use. Panics if none can be had.
pub async fn clickhouse() -> &'static TestClickHouse {
    let ch = match CH.get() {
        Some(ch) => ch,
        None => tokio::task::spawn_blocking(|| CH.get_or_init(init))
            .await
            .expect("starting the test ClickHouse panicked"),
    };
    match ch {
        Ok(ch) => ch,
        Err(e) => panic!("no test ClickHouse: {e}"),
    }
}

fn init() -> Result<TestClickHouse, String> {
    if let Some(url) = std::env::var("LITESET_TEST_CLICKHOUSE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        let port = url
            .split('@')
            .nth(1)
            .and_then(|h| h.split('/').next())
            .and_then(|h| h.rsplit(':').next())
            .and_then(|p| p.parse::<u16>().ok())
            .ok_or_else(|| format!("no port in LITESET_TEST_CLICKHOUSE_URL={url}"))?;
        return Ok(TestClickHouse {
            http: format!("http://127.0.0.1:{port}/"),
            url,
            _servers: None,
        });
    }
    let started = Instant::now();
    let servers = start_servers(1, "liteset_single").map_err(|e| format!("{e:#}"))?;
    let http = servers.http[0].clone();
    let url = format!(
        "clickhousedb://default@127.0.0.1:{}/default",
        port_of(&http)
    );
    eprintln!(
        "liteset-tests: started ClickHouse at {url} in {} ms (set LITESET_TEST_CLICKHOUSE_URL to use an existing one)",
        started.elapsed().as_millis()
    );
    Ok(TestClickHouse {
        http,
        url,
        _servers: Some(servers),
    })
}

/// A set of servers started by [`start_servers`]; they live until this value is dropped or
/// the process exits (the watchdog then stops them).
pub struct ChServers {
    /// Each server's `http://127.0.0.1:<port>/`, in shard order.
    pub http: Vec<String>,
    /// Each server's native TCP port, in shard order.
    pub tcp: Vec<u16>,
    /// The cluster name in every server's `remote_servers`.
    pub cluster: String,
    _watchdog_stdin: ChildStdin,
}

impl ChServers {
    /// A [`TestClickHouse`] view of server `i` (not owning it).
    pub fn server(&self, i: usize) -> TestClickHouse {
        let http = self.http[i].clone();
        TestClickHouse {
            url: format!(
                "clickhousedb://default@127.0.0.1:{}/default",
                port_of(&http)
            ),
            http,
            _servers: None,
        }
    }
}

/// Run by `sh -c` with `$1` = the servers' folder: at end of stdin, kill the pids listed in
/// `$1/pids` (our own children) and remove the folder.
const WATCHDOG_SCRIPT: &str = r#"
cat >/dev/null
if [ -f "$1/pids" ]; then
    for pid in $(cat "$1/pids"); do kill "$pid" 2>/dev/null; done
    sleep 1
    for pid in $(cat "$1/pids"); do kill -9 "$pid" 2>/dev/null; done
fi
cd /
rm -rf "$1"
"#;

const USERS_XML: &str = r#"<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile><quota>default</quota>
        </default>
        <liteset>
            <password>ch-secret-pw</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile><quota>default</quota>
        </liteset>
    </users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></default></quotas>
</yandex>
"#;

fn clickhouse_bin() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("clickhouse-server"))
                .find(|f| f.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/clickhouse-server"))
}

/// Starts `n` ClickHouse servers on loopback, each configured with the cluster `cluster`
/// whose shards are the `n` servers (one replica each, at its TCP port), so a `Distributed`
/// table on any of them spans all. The configuration matches tests/clickhouse.sh's.
pub fn start_servers(n: usize, cluster: &str) -> anyhow::Result<ChServers> {
    let bin = clickhouse_bin();
    if !bin.is_file() {
        bail!(
            "{} not found: install ClickHouse (Debian: apt-get install clickhouse-server)",
            bin.display()
        );
    }
    let dir = tempfile::Builder::new()
        .prefix("liteset-ch.")
        .tempdir()
        .context("creating a temp dir")?
        .keep();
    // The watchdog first, so even a failed start cleans up.
    let mut watchdog = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG_SCRIPT)
        .arg("sh")
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group_0()
        .spawn()
        .context("spawning the ClickHouse watchdog (sh)")?;
    let watchdog_stdin = watchdog.stdin.take().expect("piped stdin");
    fs::write(dir.join("users.xml"), USERS_XML)?;

    let mut last_error = None;
    for _attempt in 0..3 {
        let http_ports = (0..n)
            .map(|_| crate::free_port())
            .collect::<anyhow::Result<Vec<_>>>()?;
        let tcp_ports = (0..n)
            .map(|_| crate::free_port())
            .collect::<anyhow::Result<Vec<_>>>()?;
        let shards: String = tcp_ports
            .iter()
            .map(|p| {
                format!("<shard><replica><host>127.0.0.1</host><port>{p}</port></replica></shard>")
            })
            .collect();
        let mut pids = Vec::new();
        for i in 0..n {
            let sdir = dir.join(format!("s{i}"));
            for sub in ["data", "tmp", "user_files"] {
                fs::create_dir_all(sdir.join(sub))?;
            }
            let config = config_xml(&dir, &sdir, http_ports[i], tcp_ports[i], cluster, &shards);
            fs::write(sdir.join("config.xml"), config)?;
            let log = fs::File::create(sdir.join("stdout.log"))?;
            let child = Command::new(&bin)
                .arg(format!(
                    "--config-file={}",
                    sdir.join("config.xml").display()
                ))
                .current_dir(&sdir)
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
                .with_context(|| format!("spawning {}", bin.display()))?;
            pids.push(child.id());
            // Recorded at once, so the watchdog knows every child even if a later one fails.
            fs::write(
                dir.join("pids"),
                pids.iter().map(|p| format!("{p}\n")).collect::<String>(),
            )?;
        }
        let http: Vec<String> = http_ports
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}/"))
            .collect();
        match wait_ready(&http, &pids) {
            Ok(()) => {
                return Ok(ChServers {
                    http,
                    tcp: tcp_ports,
                    cluster: cluster.to_owned(),
                    _watchdog_stdin: watchdog_stdin,
                });
            }
            Err(e) => {
                for pid in &pids {
                    let _ = Command::new("kill").arg(pid.to_string()).status();
                }
                std::thread::sleep(Duration::from_millis(500));
                last_error = Some(e);
            }
        }
    }
    let logs: String = (0..n)
        .map(|i| {
            fs::read_to_string(dir.join(format!("s{i}/err.log"))).unwrap_or_default()
                + &fs::read_to_string(dir.join(format!("s{i}/stdout.log"))).unwrap_or_default()
        })
        .collect();
    Err(last_error
        .expect("at least one attempt")
        .context(format!("ClickHouse did not start; logs:\n{logs}")))
}

fn config_xml(dir: &Path, sdir: &Path, http: u16, tcp: u16, cluster: &str, shards: &str) -> String {
    let s = sdir.display();
    format!(
        r#"<?xml version="1.0"?>
<yandex>
    <logger><level>information</level><log>{s}/ch.log</log><errorlog>{s}/err.log</errorlog></logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>{http}</http_port>
    <tcp_port>{tcp}</tcp_port>
    <path>{s}/data/</path>
    <tmp_path>{s}/tmp/</tmp_path>
    <user_files_path>{s}/user_files/</user_files_path>
    <users_config>{users}</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
    <remote_servers><{cluster}>{shards}</{cluster}></remote_servers>
</yandex>
"#,
        users = dir.join("users.xml").display(),
    )
}

/// Waits until every server answers `SELECT 1` (blocking; at most 30 s).
fn wait_ready(http: &[String], pids: &[u32]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    for (url, pid) in http.iter().zip(pids) {
        loop {
            if answers(url) {
                break;
            }
            if !Path::new(&format!("/proc/{pid}")).exists() {
                bail!("clickhouse-server (pid {pid}) exited before answering on {url}");
            }
            if Instant::now() > deadline {
                bail!("clickhouse-server did not answer on {url} within 30 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

/// Whether the server at `url` answers `SELECT 1`, over a plain TCP socket (this runs in a
/// blocking init, without an async runtime).
fn answers(url: &str) -> bool {
    use std::io::{Read, Write};
    let Some(addr) = url.strip_prefix("http://").map(|r| r.trim_end_matches('/')) else {
        return false;
    };
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("POST / HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 8\r\n\r\nSELECT 1");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.starts_with("HTTP/1.0 200") || out.starts_with("HTTP/1.1 200")
}

trait ProcessGroup {
    fn process_group_0(&mut self) -> &mut Self;
}

impl ProcessGroup for Command {
    fn process_group_0(&mut self) -> &mut Self {
        use std::os::unix::process::CommandExt;
        // Its own process group, so a Ctrl-C aimed at the test run does not kill it before it
        // has cleaned up.
        self.process_group(0)
    }
}
