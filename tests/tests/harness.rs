//! Tests of the harness itself: the PostgreSQL cluster, and `TestServer` driving a fake server
//! (a shell script that behaves like `liteset serve`), so none of this needs the real binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use liteset_tests::{ADMIN_PASSWORD, Metadata, SECRET_KEY, TestServer, both_backends, pg};

async fn select_one(url: &str) -> (i32, String) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    tokio::spawn(connection);
    let row = client
        .query_one("SELECT 1, current_database()::text", &[])
        .await
        .expect("SELECT 1");
    (row.get(0), row.get(1))
}

#[tokio::test]
async fn pg_is_started_once_and_reused() {
    let first = pg().await;
    let second = pg().await;
    assert!(std::ptr::eq(first, second));
    assert!(first.url().starts_with("postgresql://"), "{}", first.url());
    if let Ok(url) = std::env::var("LITESET_TEST_PG_URL") {
        assert_eq!(first.url(), url);
    }
}

#[tokio::test]
async fn fresh_database_is_connectable() {
    let url = pg().await.fresh_database().await;
    let (one, database) = select_one(&url).await;
    assert_eq!(one, 1);
    assert!(
        url.ends_with(&format!("/{database}")),
        "{url} vs {database}"
    );
    assert!(database.starts_with("t_"), "{database}");
}

#[tokio::test]
async fn fresh_databases_differ() {
    let pg = pg().await;
    let (a, b) = (pg.fresh_database().await, pg.fresh_database().await);
    assert_ne!(a, b);
    assert_ne!(select_one(&a).await.1, select_one(&b).await.1);
}

/// Prints what it was given, announces itself like `liteset serve`, and exits 0 on SIGTERM.
/// `FAKE_MODE=exit` makes it fail before `READY`.
const FAKE_SERVER: &str = r#"#!/bin/sh
echo "args: $*"
echo "data_dir=$LITESET_DATA_DIR" >&2
echo "admin=${LITESET_ADMIN_PASSWORD:-unset}" >&2
echo "secret=$LITESET_SECRET_KEY" >&2
echo "metadata=${LITESET_METADATA_URL:-unset}" >&2
echo "inherited=${LITESET_TEST_PG_URL:-unset}" >&2
if [ "${FAKE_MODE:-}" = exit ]; then
    echo "failing on purpose" >&2
    exit 3
fi
trap 'echo "bye"; exit 0' TERM
echo "READY http://127.0.0.1:9/"
while :; do sleep 0.05; done
"#;

/// The fake, written once per process into cargo's scratch dir for integration tests. A child
/// process does the writing: writing an executable from this multi-threaded process could leak
/// the write fd into a concurrently forked child, and exec would then fail with "text file busy".
fn fake_server() -> &'static Path {
    static FAKE: OnceLock<PathBuf> = OnceLock::new();
    FAKE.get_or_init(|| {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-liteset");
        let mut sh = Command::new("sh")
            .arg("-c")
            .arg(r#"cat > "$1.$$" && chmod 755 "$1.$$" && mv -f "$1.$$" "$1""#)
            .arg("sh")
            .arg(&path)
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawning sh");
        sh.stdin
            .take()
            .expect("stdin")
            .write_all(FAKE_SERVER.as_bytes())
            .expect("writing the fake server");
        assert!(sh.wait().expect("sh").success());
        path
    })
}

#[tokio::test]
async fn server_starts_on_ready_line_and_stops_on_sigterm() -> anyhow::Result<()> {
    let mut server = TestServer::builder()
        .bin(fake_server())
        .arg("--extra")
        .start()
        .await?;
    assert_eq!(server.base_url(), "http://127.0.0.1:9");
    assert_eq!(server.url("/api/v1/x"), "http://127.0.0.1:9/api/v1/x");
    assert_eq!(server.url("health"), "http://127.0.0.1:9/health");
    assert!(server.data_dir().is_dir());
    assert!(server.pid() > 0);
    assert_eq!(server.metadata_url(), None);

    let status = server.stop().await?;
    assert!(status.success(), "{status:?}");
    let logs = server.logs();
    assert!(
        logs.contains("args: serve --bind 127.0.0.1:0 --extra"),
        "{logs}"
    );
    assert!(
        logs.contains(&format!("data_dir={}", server.data_dir().display())),
        "{logs}"
    );
    assert!(logs.contains(&format!("admin={ADMIN_PASSWORD}")), "{logs}");
    assert!(logs.contains(&format!("secret={SECRET_KEY}")), "{logs}");
    assert!(logs.contains("metadata=unset"), "{logs}");
    assert!(logs.contains("inherited=unset"), "{logs}");
    assert!(logs.contains("bye"), "stdout is drained after exit: {logs}");
    assert_eq!(server.stop().await?.code(), Some(0), "stop is idempotent");
    Ok(())
}

#[tokio::test]
async fn env_overrides_and_removes_defaults() -> anyhow::Result<()> {
    let mut server = TestServer::builder()
        .bin(fake_server())
        .env("LITESET_SECRET_KEY", "other")
        .env_remove("LITESET_ADMIN_PASSWORD")
        .start()
        .await?;
    server.stop().await?;
    let logs = server.logs();
    assert!(logs.contains("secret=other\n"), "{logs}");
    assert!(logs.contains("admin=unset"), "{logs}");
    Ok(())
}

#[tokio::test]
async fn server_exiting_before_ready_is_an_error_with_its_logs() {
    let error = TestServer::builder()
        .bin(fake_server())
        .env("FAKE_MODE", "exit")
        .start()
        .await
        .err()
        .expect("start must fail");
    let message = format!("{error:#}");
    assert!(
        message.contains("exited before printing READY"),
        "{message}"
    );
    assert!(message.contains("failing on purpose"), "{message}");
}

#[tokio::test]
async fn dropping_a_server_kills_it() -> anyhow::Result<()> {
    let server = TestServer::builder().bin(fake_server()).start().await?;
    let pid = server.pid().to_string();
    drop(server);
    let alive = Command::new("kill")
        .args(["-0", &pid])
        .stderr(Stdio::null())
        .status()?;
    assert!(!alive.success(), "pid {pid} still running after drop");
    Ok(())
}

both_backends! {
    /// The macro's two tests, and what `Metadata::Postgres` adds to a server's environment.
    async fn metadata_backend_reaches_the_server(meta: Metadata) -> anyhow::Result<()> {
        let mut server = TestServer::builder().bin(fake_server()).metadata(meta).start().await?;
        assert!(server.stop().await?.success());
        let logs = server.logs();
        match meta {
            Metadata::Sqlite => assert!(logs.contains("metadata=unset"), "{logs}"),
            Metadata::Postgres => {
                let url = server.metadata_url().expect("a metadata database").to_owned();
                assert!(logs.contains(&format!("metadata={url}")), "{logs}");
                assert_eq!(select_one(&url).await.0, 1);
            }
        }
        Ok(())
    }
}
