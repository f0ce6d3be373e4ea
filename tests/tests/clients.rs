//! Python clients driven against the real binary:
//!
//! - the real PyPI Superset clients (superset-api-client, preset-cli, superset-toolkit; pinned
//!   in tests/clients/requirements.txt), by tests/clients/clients_test.py. `tests/run` builds
//!   their venv and sets `LITESET_TEST_CLIENTS_PYTHON`;
//! - a client generated from the server's own OpenAPI document by openapi-python-client
//!   (pinned in tests/clients/generator-requirements.txt), by
//!   tests/clients/generated_client_test.py. `tests/run` builds its venv and sets
//!   `LITESET_TEST_GENCLIENT_PYTHON`.

use std::path::Path;

use liteset_tests::{ADMIN_PASSWORD, Metadata, TestServer, pg};

/// A fresh PostgreSQL database holding `public.sales` (two rows), for the clients to register
/// as an analytical database; its URL.
async fn sales_database() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE public.sales (id serial PRIMARY KEY, region text, amount numeric(10,2), \
             sold_at timestamp); INSERT INTO public.sales (region, amount, sold_at) VALUES \
             ('north', 1.5, '2024-01-01'), ('south', 2, '2024-02-01');",
        )
        .await
        .unwrap();
    url
}

/// Runs `tests/clients/<script>` with `python` against `server` as admin, `analytics` as the
/// database URI to create, and `env`; asserts it succeeded (`what` names it in the failure,
/// with its output and the server's log) and returns its stdout.
async fn run_script(
    python: &str,
    script: &str,
    server: &TestServer,
    analytics: &str,
    env: &[(&str, &str)],
    what: &str,
) -> String {
    let path = format!("{}/clients/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::process::Command::new(python)
        .arg(path)
        .env("LITESET_URL", server.base_url())
        .env("LITESET_USER", "admin")
        .env("LITESET_PASSWORD", ADMIN_PASSWORD)
        .env("ANALYTICS_URI", analytics)
        .envs(env.iter().copied())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{stderr}\n--- server log ---\n{}",
        server.logs()
    );
    stdout
}

#[tokio::test]
async fn pypi_superset_clients_log_in_list_create_read_and_update() {
    let Ok(python) = std::env::var("LITESET_TEST_CLIENTS_PYTHON") else {
        panic!("LITESET_TEST_CLIENTS_PYTHON is not set: run the tests with `bash tests/run`");
    };
    let url = sales_database().await;
    let server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .start()
        .await
        .unwrap();
    let stdout = run_script(
        &python,
        "clients_test.py",
        &server,
        &url,
        &[("LITESET_CLIENTS_KEEP_GOING", "1")],
        "clients",
    )
    .await;
    for client in [
        "superset-api-client",
        "preset-cli",
        "superset-cli",
        "superset-toolkit",
    ] {
        assert!(
            stdout.contains(&format!("[{client}]")),
            "{client} did not run:\n{stdout}"
        );
    }
}

/// Generates a Python package from the live `GET /api/v1/_openapi` with openapi-python-client
/// and drives the server through it (tests/clients/generated_client_test.py: log in, create a
/// database, dataset, chart and dashboard, list, read, update, `_info`, `related`, `distinct`,
/// export, error answers, delete), once on SQLite metadata (with the embedded examples) and
/// once on PostgreSQL metadata, one server each.
///
/// The whole document must generate with `--fail-on-warning` (the generator drops an
/// operation or response it cannot parse with a WARNING), and every operation must come out
/// as a module. tests/clients/generator-config.yaml maps the binary response types the
/// generator does not know (ZIP, PNG, SVG) to octet-stream.
#[tokio::test]
async fn generated_openapi_client_drives_the_server_on_sqlite_and_postgres_metadata() {
    let Ok(python) = std::env::var("LITESET_TEST_GENCLIENT_PYTHON") else {
        panic!("LITESET_TEST_GENCLIENT_PYTHON is not set: run the tests with `bash tests/run`");
    };
    for meta in [Metadata::Sqlite, Metadata::Postgres] {
        drive_with_generated_client(&python, meta).await;
    }
}

async fn drive_with_generated_client(python: &str, meta: Metadata) {
    let analytics = sales_database().await;
    let server = TestServer::builder()
        .metadata(meta)
        // Created on the embedded default only: a PostgreSQL metadata store gets none.
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();

    let resp = reqwest::get(server.url("/api/v1/_openapi")).await.unwrap();
    assert_eq!(resp.status(), 200, "GET /api/v1/_openapi");
    let document: serde_json::Value = resp.json().await.unwrap();
    let dir = tempfile::Builder::new()
        .prefix("liteset-genclient.")
        .tempdir()
        .unwrap();
    let spec = dir.path().join("openapi.json");
    std::fs::write(&spec, serde_json::to_vec_pretty(&document).unwrap()).unwrap();

    // The venv's bin on PATH: the generator formats its output with the `ruff` installed
    // beside it.
    let bin_dir = Path::new(python)
        .parent()
        .expect("the venv's bin directory");
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut dirs = vec![bin_dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).unwrap()
        }
        None => bin_dir.as_os_str().to_owned(),
    };
    let package = dir.path().join("liteset_client");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/generator-config.yaml");
    let out = tokio::process::Command::new(python)
        .args(["-m", "openapi_python_client", "generate", "--path"])
        .arg(&spec)
        .arg("--output-path")
        .arg(&package)
        .args(["--meta", "none", "--config", config, "--fail-on-warning"])
        .env("PATH", path)
        .output()
        .await
        .unwrap();
    let generator = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("[{meta:?}] openapi-python-client:\n{generator}");
    assert!(
        out.status.success(),
        "[{meta:?}] openapi-python-client failed ({}):\n{generator}",
        out.status
    );
    for needle in [
        "Warning(s)",
        "Error(s)",
        "WARNING",
        "ERROR",
        "Unable to",
        "Cannot parse",
    ] {
        assert!(
            !generator.contains(needle),
            "[{meta:?}] the generator reported `{needle}`:\n{generator}"
        );
    }

    // Every operation of the document became a module under api/<tag>/.
    let operations = document["paths"]
        .as_object()
        .expect("paths")
        .values()
        .flat_map(|item| item.as_object().expect("path item").keys())
        .filter(|key| {
            matches!(
                key.as_str(),
                "get" | "put" | "post" | "delete" | "patch" | "head" | "options" | "trace"
            )
        })
        .count();
    let mut modules = 0;
    for tag in std::fs::read_dir(package.join("api")).unwrap() {
        let tag = tag.unwrap().path();
        if tag.is_dir() {
            modules += std::fs::read_dir(&tag)
                .unwrap()
                .filter(|f| {
                    let name = f.as_ref().unwrap().file_name();
                    let name = name.to_string_lossy();
                    name.ends_with(".py") && name != "__init__.py"
                })
                .count();
        }
    }
    assert_eq!(
        modules, operations,
        "[{meta:?}] {operations} operations in the document, {modules} generated"
    );

    let examples = if meta == Metadata::Sqlite { "1" } else { "0" };
    let package_dir = dir.path().to_string_lossy();
    println!("[{meta:?}] {operations} operations generated");
    let stdout = run_script(
        python,
        "generated_client_test.py",
        &server,
        &analytics,
        &[
            ("PYTHONPATH", &package_dir),
            ("LITESET_EXPECT_EXAMPLES", examples),
            ("PYTHONDONTWRITEBYTECODE", "1"),
        ],
        &format!("[{meta:?}] the generated client"),
    )
    .await;
    assert!(
        stdout.contains("[genclient] all ") && stdout.contains(" steps ok"),
        "[{meta:?}] the script did not finish:\n{stdout}"
    );
}
