//! The `liteset` command as operators use it: exit codes, configuration layers, first-start
//! bootstrap, the admin commands, JSON logs, graceful shutdown and replicas sharing one
//! PostgreSQL metadata database.

use std::process::{Command, Output};

use liteset_tests::{
    ADMIN_PASSWORD, Metadata, SECRET_KEY, TestServer, both_backends, liteset_bin, login, pg,
};
use reqwest::StatusCode;
use serde_json::Value;

/// Runs the binary with a clean `LITESET_*` environment plus `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(liteset_bin());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("LITESET_")) {
        cmd.env_remove(k);
    }
    cmd.args(args).envs(env.iter().copied());
    cmd.output().expect("run liteset")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn invalid_configuration_exits_2_naming_the_key_and_its_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_str().expect("utf-8 path");

    let out = run(
        &["check-config"],
        &[
            ("LITESET_DATA_DIR", data),
            ("LITESET_AUTH__ACCESS_TOKEN_TTL_SECS", "soon"),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let msg = text(&out);
    assert!(
        msg.contains("access_token_ttl_secs")
            && msg.contains("LITESET_AUTH__ACCESS_TOKEN_TTL_SECS"),
        "{msg}"
    );

    let out = run(
        &["check-config"],
        &[("LITESET_DATA_DIR", data), ("LITESET_NO_SUCH_SETTING", "1")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("no_such_setting"), "{}", text(&out));

    let file = dir.path().join("liteset.toml");
    std::fs::write(
        &file,
        "bind = \"127.0.0.1:1\"\n[auth]\nmax_failed_logins = 3\nunknown = true\n",
    )
    .expect("write");
    let out = run(
        &["--config", file.to_str().expect("path"), "check-config"],
        &[("LITESET_DATA_DIR", data)],
    );
    assert_eq!(out.status.code(), Some(2));
    let msg = text(&out);
    assert!(
        msg.contains("unknown") && msg.contains("liteset.toml"),
        "{msg}"
    );

    // Production mode (PostgreSQL metadata) needs a secret key every replica shares.
    let out = run(
        &["serve"],
        &[
            ("LITESET_DATA_DIR", data),
            ("LITESET_METADATA_URL", "postgresql://u@127.0.0.1:1/db"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("secret_key"), "{}", text(&out));

    let out = run(
        &["serve", "--bind", "nonsense"],
        &[("LITESET_DATA_DIR", data)],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("bind"), "{}", text(&out));
}

#[test]
fn layers_apply_in_order_and_secrets_are_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_str().expect("utf-8 path");
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "bind = \"127.0.0.1:1111\"\nlog_format = \"json\"\n[auth]\nmax_failed_logins = 7\n",
    )
    .expect("write");
    let out = run(
        &["--config", file.to_str().expect("path"), "check-config"],
        &[
            ("LITESET_DATA_DIR", data),
            ("LITESET_BIND", "127.0.0.1:2222"),
            ("LITESET_SECRET_KEY", SECRET_KEY),
            ("LITESET_METADATA_URL", "postgresql://u:hunter2@h/db"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        shown.contains("bind = \"127.0.0.1:2222\""),
        "env beats file: {shown}"
    );
    assert!(
        shown.contains("log_format = \"json\""),
        "file beats default: {shown}"
    );
    assert!(shown.contains("max_failed_logins = 7"), "{shown}");
    assert!(
        !shown.contains("hunter2") && !shown.contains(SECRET_KEY),
        "secrets redacted: {shown}"
    );
}

#[test]
fn init_migrate_and_create_admin_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_str().expect("utf-8 path");
    let env = [
        ("LITESET_DATA_DIR", data),
        ("LITESET_ADMIN_PASSWORD", "first-admin-pw"),
    ];
    let out = run(&["migrate"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("applied 5 migration(s)"),
        "{}",
        text(&out)
    );
    let out = run(&["migrate"], &env);
    assert!(String::from_utf8_lossy(&out.stdout).contains("applied 0 migration(s)"));
    let out = run(&["init"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = run(
        &[
            "create-admin",
            "--username",
            "ops",
            "--password",
            "ops-pw-1",
            "--email",
            "ops@example.com",
            "--first-name",
            "Op",
            "--last-name",
            "Erator",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("created admin user ops"));
    // The same username again is refused with exit code 1, not a panic.
    let out = run(
        &[
            "create-admin",
            "--username",
            "ops",
            "--password",
            "x",
            "--email",
            "other@example.com",
            "--first-name",
            "A",
            "--last-name",
            "B",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[tokio::test]
async fn first_start_prints_a_generated_admin_password_once() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    let data_dir = data.path().to_str().expect("utf-8 path").to_owned();
    let mut server = TestServer::builder()
        .env_remove("LITESET_ADMIN_PASSWORD")
        .env_remove("LITESET_SECRET_KEY")
        .env("LITESET_DATA_DIR", &data_dir)
        .start()
        .await?;
    let logs = server.logs();
    let password = logs
        .lines()
        .find_map(|l| l.strip_prefix("Created user 'admin' with password: "))
        .expect("generated password printed")
        .trim()
        .to_owned();
    assert!(password.len() >= 16);
    let tokens = login(&server.client(), server.base_url(), "admin", &password).await;
    assert!(tokens["access_token"].is_string());
    assert!(
        data.path().join("secret_key").is_file(),
        "embedded secret key kept in the data folder"
    );
    let status = server.stop().await?;
    assert_eq!(status.code(), Some(0), "clean shutdown exits 0");

    // Second start on the same data: no new password, same secret key, same admin.
    let mut again = TestServer::builder()
        .env_remove("LITESET_ADMIN_PASSWORD")
        .env_remove("LITESET_SECRET_KEY")
        .env("LITESET_DATA_DIR", &data_dir)
        .start()
        .await?;
    assert!(!again.logs().contains("Created user 'admin'"));
    // A token from before the restart still verifies: the key was kept, not regenerated.
    let access = tokens["access_token"].as_str().expect("token");
    let s = again
        .client()
        .get(again.url("/api/v1/me/"))
        .bearer_auth(access)
        .send()
        .await?
        .status();
    assert_eq!(s, StatusCode::OK);
    again.stop().await?;
    Ok(())
}

#[tokio::test]
async fn json_logs_carry_one_structured_line_per_request() -> anyhow::Result<()> {
    let server = TestServer::builder()
        .env("LITESET_LOG_FORMAT", "json")
        .start()
        .await?;
    let c = server.client();
    let tokens = login(&c, server.base_url(), "admin", ADMIN_PASSWORD).await;
    let access = tokens["access_token"].as_str().expect("token");
    c.get(server.url("/api/v1/me/"))
        .bearer_auth(access)
        .send()
        .await?;
    let logs = server.logs();
    let line: Value = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["message"] == "Request finished." && v["span"]["route"] == "me_get")
        .expect("a JSON request line for GET /api/v1/me/");
    assert_eq!(line["span"]["method"], "GET");
    assert_eq!(line["span"]["status"], 200);
    assert_eq!(line["span"]["user_id"], 1);
    assert!(line["span"]["latency_ms"].as_f64().is_some());
    Ok(())
}

#[tokio::test]
async fn replicas_share_one_postgresql_metadata_database() -> anyhow::Result<()> {
    let url = pg().await.fresh_database().await;
    // Two replicas start at the same time on an empty database: migrations serialise.
    let (a, b) = tokio::join!(
        TestServer::builder()
            .metadata(Metadata::Sqlite)
            .env("LITESET_METADATA_URL", &url)
            .start(),
        TestServer::builder()
            .metadata(Metadata::Sqlite)
            .env("LITESET_METADATA_URL", &url)
            .start(),
    );
    let (a, b) = (a?, b?);
    // A token minted by one replica is honoured by the other (shared SECRET_KEY and users).
    let tokens = login(&a.client(), a.base_url(), "admin", ADMIN_PASSWORD).await;
    let access = tokens["access_token"].as_str().expect("token");
    let (resp, body) = {
        let r = b
            .client()
            .get(b.url("/api/v1/me/"))
            .bearer_auth(access)
            .send()
            .await?;
        let s = r.status();
        (s, r.json::<Value>().await?)
    };
    assert_eq!(resp, StatusCode::OK);
    assert_eq!(body["result"]["login_count"], 1);
    Ok(())
}

both_backends! {
    async fn public_role_like_opens_endpoints_to_anonymous_callers(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta)
            .env("LITESET_AUTH__PUBLIC_ROLE_LIKE", "Gamma").start().await?;
        // Gamma holds can_read on SecurityRestApi, so Public now does too: no token needed.
        let resp = server.client().get(server.url("/api/v1/security/csrf_token/")).send().await?;
        assert_eq!(resp.status(), StatusCode::OK);
        // /me/ still needs a real user.
        let resp = server.client().get(server.url("/api/v1/me/")).send().await?;
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        Ok(())
    }
}
