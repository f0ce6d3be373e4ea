//! The real PyPI Superset clients (superset-api-client, preset-cli, superset-toolkit; pinned
//! in tests/clients/requirements.txt) driven against the real binary by
//! tests/clients/clients_test.py. `tests/run` builds their venv and sets
//! `LITESET_TEST_CLIENTS_PYTHON`.

use liteset_tests::{ADMIN_PASSWORD, Metadata, TestServer, pg};

#[tokio::test]
async fn pypi_superset_clients_log_in_list_create_read_and_update() {
    let Ok(python) = std::env::var("LITESET_TEST_CLIENTS_PYTHON") else {
        panic!("LITESET_TEST_CLIENTS_PYTHON is not set: run the tests with `bash tests/run`");
    };
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
    let server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .start()
        .await
        .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/clients_test.py");
    let out = tokio::process::Command::new(python)
        .arg(script)
        .env("LITESET_URL", server.base_url())
        .env("LITESET_USER", "admin")
        .env("LITESET_PASSWORD", ADMIN_PASSWORD)
        .env("ANALYTICS_URI", &url)
        .env("LITESET_CLIENTS_KEEP_GOING", "1")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "clients failed:\n{stdout}\n{stderr}\n--- server log ---\n{}",
        server.logs()
    );
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
