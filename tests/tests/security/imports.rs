//! Imports and connections (classes 1 and 2): a bundle may create or replace only what its
//! importer could create or edit through the REST API, and no database connection (created,
//! edited, tested, imported or stored before) may reach the server's own metadata.
//!
//! The attack that worked: a Gamma user imports a chart bundle whose database points at
//! `sqlite:///<data_dir>/liteset.db` with a dataset on `ab_user`, and reads every password
//! hash through chart data.

use std::io::{Cursor, Write};

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, both_backends, status_json};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::common::{permission, role_id, urlencode};

const SQLITE_REFUSED: &str =
    "SQLiteDialect_pysqlite cannot be used as a data source for security reasons.";
const INTERNAL_REFUSED: &str = "The metadata store and the server's data folder cannot be used \
     as a data source for security reasons.";
const NO_DB: &str = "Database doesn't exist and user doesn't have permission to create databases";
const NO_DATASET: &str =
    "Dataset doesn't exist and user doesn't have permission to create datasets";
const CHART_TAKEN: &str =
    "A chart already exists and user doesn't have permissions to overwrite it";
const DASHBOARD_TAKEN: &str =
    "A dashboard already exists and user doesn't have permissions to overwrite it";

const DB_UUID: &str = "0b6a7c1e-5b0f-4e0a-9c55-5e1c0e5a0001";
const DS_UUID: &str = "0b6a7c1e-5b0f-4e0a-9c55-5e1c0e5a0002";
const CHART_UUID: &str = "0b6a7c1e-5b0f-4e0a-9c55-5e1c0e5a0003";
const DASH_UUID: &str = "0b6a7c1e-5b0f-4e0a-9c55-5e1c0e5a0004";
/// A PostgreSQL URI nothing listens on: imports never connect, so it is a safe target.
const SAFE_URI: &str = "postgresql://reader:pw@127.0.0.1:9/analytics";

pub(crate) fn database_doc(name: &str, uuid: &str, uri: &str) -> Value {
    json!({"database_name": name, "sqlalchemy_uri": uri, "uuid": uuid, "version": "1.0.0",
           "expose_in_sqllab": true, "allow_csv_upload": false, "extra": {}})
}

pub(crate) fn dataset_doc(table: &str, uuid: &str, db_uuid: &str) -> Value {
    json!({"table_name": table, "uuid": uuid, "database_uuid": db_uuid, "version": "1.0.0",
           "schema": null, "sql": null, "metrics": [],
           "columns": [{"column_name": "username", "type": "TEXT"},
                       {"column_name": "password", "type": "TEXT"}]})
}

pub(crate) fn chart_doc(name: &str, uuid: &str, ds_uuid: &str) -> Value {
    json!({"slice_name": name, "uuid": uuid, "dataset_uuid": ds_uuid, "viz_type": "table",
           "version": "1.0.0",
           "params": {"viz_type": "table", "query_mode": "raw",
                      "all_columns": ["username", "password"]}})
}

fn dashboard_doc(title: &str, uuid: &str) -> Value {
    json!({"dashboard_title": title, "uuid": uuid, "version": "1.0.0", "published": true,
           "position": {}, "metadata": {}})
}

/// A bundle of `type_name` holding `docs` (JSON is YAML) below one root folder.
pub(crate) fn bundle(type_name: &str, docs: &[(String, Value)]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    let meta = json!({"version": "1.0.0", "type": type_name,
                      "timestamp": "2024-01-01T00:00:00+00:00"});
    for (name, doc) in std::iter::once(&("metadata.yaml".to_owned(), meta)).chain(docs) {
        out.start_file(format!("bundle/{name}"), opts).unwrap();
        out.write_all(doc.to_string().as_bytes()).unwrap();
    }
    out.finish().unwrap().into_inner()
}

/// The attack's bundle: database `uri`, a dataset on `ab_user`, a chart, a dashboard.
fn attack(type_name: &str, uri: &str, chart_name: &str) -> Vec<u8> {
    bundle(
        type_name,
        &[
            (
                "databases/evil.yaml".into(),
                database_doc("evil", DB_UUID, uri),
            ),
            (
                "datasets/evil/ab_user.yaml".into(),
                dataset_doc("ab_user", DS_UUID, DB_UUID),
            ),
            (
                "charts/hashes.yaml".into(),
                chart_doc(chart_name, CHART_UUID, DS_UUID),
            ),
            (
                "dashboards/d.yaml".into(),
                dashboard_doc("Hashes", DASH_UUID),
            ),
        ],
    )
}

pub(crate) async fn upload(
    api: &Api,
    path: &str,
    zip: Vec<u8>,
    overwrite: bool,
) -> (StatusCode, Value) {
    let field = if path.starts_with("/api/v1/assets") {
        "bundle"
    } else {
        "formData"
    };
    let mut form = reqwest::multipart::Form::new().part(
        field,
        reqwest::multipart::Part::bytes(zip).file_name("bundle.zip"),
    );
    if overwrite {
        form = form.text("overwrite", "true");
    }
    let resp = api
        .request(reqwest::Method::POST, path)
        .multipart(form)
        .send()
        .await
        .unwrap();
    status_json(resp).await
}

/// A new role holding `pvms`.
async fn role_with(admin: &Api, name: &str, pvms: &[i64]) -> i64 {
    let (s, role) = admin
        .post("/api/v1/security/roles/", json!({"name": name}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{role}");
    let id = role["id"].as_i64().unwrap();
    let (s, body) = admin
        .post(
            &format!("/api/v1/security/roles/{id}/permissions"),
            json!({"permission_view_menu_ids": pvms}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    id
}

/// Creates `username` with `roles` and logs them in.
async fn user(server: &TestServer, admin: &Api, username: &str, roles: &[i64]) -> Api {
    let password = format!("{username}-pass-1");
    let (s, body) = admin
        .post(
            "/api/v1/security/users/",
            json!({"username": username, "first_name": username, "last_name": "T",
                   "email": format!("{username}@example.com"), "password": password,
                   "roles": roles, "active": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    Api::login(server, username, &password).await
}

/// Every database, dataset, chart and dashboard as the admin sees them (name and uuid).
async fn catalog(admin: &Api) -> Vec<Value> {
    let mut all = Vec::new();
    for (res, name) in [
        ("database", "database_name"),
        ("dataset", "table_name"),
        ("chart", "slice_name"),
        ("dashboard", "dashboard_title"),
    ] {
        let (s, list) = admin
            .get(&format!(
                "/api/v1/{res}/?q={}",
                urlencode(&format!("(columns:!(id,uuid,{name}),page_size:100)"))
            ))
            .await;
        assert_eq!(s, StatusCode::OK, "{list}");
        all.push(json!({res: list["result"]}));
    }
    all
}

/// A show body without the fields that move with the clock ("a minute ago").
fn stable(mut v: Value) -> Value {
    if let Some(o) = v["result"].as_object_mut() {
        o.retain(|k, _| !k.ends_with("humanized"));
    }
    v
}

/// 422 GENERIC_COMMAND_ERROR naming `file` with `message`.
fn assert_refused(body: &Value, s: StatusCode, file: &str, message: &str, what: &str) {
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {body}");
    let e = &body["errors"][0];
    assert_eq!(e["error_type"], "GENERIC_COMMAND_ERROR", "{what}: {body}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Error importing")),
        "{what}: {body}"
    );
    assert_eq!(e["extra"][file], json!(message), "{what}: {body}");
}

both_backends! {
    /// Gamma and Alpha cannot create a database (or, for Gamma, a dataset) through any import
    /// endpoint, with a safe URI or with the metadata file; nothing is written.
    async fn imports_create_only_what_the_user_may_create(meta: Metadata) {
        let server = TestServer::builder()
            .metadata(meta)
            .env("LITESET_SECURITY__ALLOW_SQLITE_DATABASES", "true")
            .start()
            .await
            .unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let gamma = user(&server, &admin, "gina", &[role_id(&admin, "Gamma").await]).await;
        let alpha = user(&server, &admin, "alfred", &[role_id(&admin, "Alpha").await]).await;
        let before = catalog(&admin).await;
        let metadata_file = format!(
            "sqlite:///{}",
            server.data_dir().join("liteset.db").display()
        );
        for uri in [SAFE_URI, metadata_file.as_str(), "sqlite:///data/liteset.db"] {
            for (who, api, path, type_name, expected) in [
                ("gamma", &gamma, "/api/v1/chart/import/", "Slice", Some(NO_DB)),
                ("gamma", &gamma, "/api/v1/dashboard/import/", "Dashboard", Some(NO_DB)),
                ("gamma", &gamma, "/api/v1/dataset/import/", "SqlaTable", None),
                ("gamma", &gamma, "/api/v1/database/import/", "Database", None),
                ("gamma", &gamma, "/api/v1/assets/import/", "assets", None),
                ("alpha", &alpha, "/api/v1/assets/import/", "assets", Some(NO_DB)),
                ("alpha", &alpha, "/api/v1/dataset/import/", "SqlaTable", Some(NO_DB)),
                ("alpha", &alpha, "/api/v1/chart/import/", "Slice", Some(NO_DB)),
                ("alpha", &alpha, "/api/v1/dashboard/import/", "Dashboard", Some(NO_DB)),
                ("alpha", &alpha, "/api/v1/database/import/", "Database", None),
            ] {
                let what = format!("{who} {path} {uri}");
                for overwrite in [false, true] {
                    let (s, body) =
                        upload(api, path, attack(type_name, uri, "hashes"), overwrite).await;
                    match expected {
                        Some(message) => {
                            assert_refused(&body, s, "databases/evil.yaml", message, &what)
                        }
                        None => assert_eq!(s, StatusCode::FORBIDDEN, "{what}: {body}"),
                    }
                    assert_eq!(catalog(&admin).await, before, "{what}: nothing written");
                }
            }
        }
        // The dataset alone on the examples-less server: Gamma may not create datasets.
        let ds_only = bundle(
            "Slice",
            &[
                ("databases/evil.yaml".into(), database_doc("evil", DB_UUID, SAFE_URI)),
                ("datasets/evil/ab_user.yaml".into(), dataset_doc("ab_user", DS_UUID, DB_UUID)),
                ("charts/hashes.yaml".into(), chart_doc("hashes", CHART_UUID, DS_UUID)),
            ],
        );
        // Once the database exists (the admin made it), Gamma reuses it but still cannot
        // create the dataset.
        let (s, body) = upload(
            &admin,
            "/api/v1/database/import/",
            bundle("Database", &[("databases/evil.yaml".into(), database_doc("evil", DB_UUID, SAFE_URI))]),
            false,
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let with_db = catalog(&admin).await;
        let (s, body) = upload(&gamma, "/api/v1/chart/import/", ds_only, true).await;
        assert_refused(&body, s, "datasets/evil/ab_user.yaml", NO_DATASET, "gamma dataset");
        assert_eq!(catalog(&admin).await, with_db, "nothing written");
        assert_ne!(before, with_db);
        // The admin still imports everything.
        let (s, body) =
            upload(&admin, "/api/v1/assets/import/", attack("assets", SAFE_URI, "ok"), false)
                .await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }

    /// `overwrite=true` replaces only what the importer owns (or anything, for an admin).
    async fn overwrite_needs_ownership(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let gamma = user(&server, &admin, "gina", &[role_id(&admin, "Gamma").await]).await;
        let alpha = user(&server, &admin, "alfred", &[role_id(&admin, "Alpha").await]).await;
        let (s, body) =
            upload(&admin, "/api/v1/assets/import/", attack("assets", SAFE_URI, "admin's"), false)
                .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (_, charts) = admin.get("/api/v1/chart/").await;
        let chart_id = charts["ids"][0].as_i64().unwrap();
        let (_, dashboards) = admin.get("/api/v1/dashboard/").await;
        let dash_id = dashboards["ids"][0].as_i64().unwrap();
        let chart_before = stable(admin.get(&format!("/api/v1/chart/{chart_id}")).await.1);
        let dash_before = stable(admin.get(&format!("/api/v1/dashboard/{dash_id}")).await.1);
        let before = catalog(&admin).await;

        for (who, api, path, type_name) in [
            ("gamma", &gamma, "/api/v1/chart/import/", "Slice"),
            ("gamma", &gamma, "/api/v1/dashboard/import/", "Dashboard"),
            ("alpha", &alpha, "/api/v1/assets/import/", "assets"),
            ("alpha", &alpha, "/api/v1/chart/import/", "Slice"),
        ] {
            let what = format!("{who} {path}");
            let (s, body) = upload(api, path, attack(type_name, SAFE_URI, "stolen"), true).await;
            let (file, message) = if type_name == "Dashboard" {
                ("dashboards/d.yaml", DASHBOARD_TAKEN)
            } else {
                ("charts/hashes.yaml", CHART_TAKEN)
            };
            assert_refused(&body, s, file, message, &what);
            assert_eq!(catalog(&admin).await, before, "{what}: nothing written");
            assert_eq!(
                stable(admin.get(&format!("/api/v1/chart/{chart_id}")).await.1),
                chart_before,
                "{what}"
            );
            assert_eq!(
                stable(admin.get(&format!("/api/v1/dashboard/{dash_id}")).await.1),
                dash_before,
                "{what}"
            );
        }

        // Gamma's own chart on the existing dataset.
        let own = "0b6a7c1e-5b0f-4e0a-9c55-5e1c0e5a0099";
        let mine = |name: &str| {
            bundle(
                "Slice",
                &[
                    ("databases/evil.yaml".into(), database_doc("evil", DB_UUID, SAFE_URI)),
                    ("datasets/evil/ab_user.yaml".into(), dataset_doc("ab_user", DS_UUID, DB_UUID)),
                    ("charts/mine.yaml".into(), chart_doc(name, own, DS_UUID)),
                ],
            )
        };
        // On a dataset she may not read it is refused, as `POST /chart/` refuses it.
        let (s, body) = upload(&gamma, "/api/v1/chart/import/", mine("first"), false).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body.to_string().contains("not accessible"), "{body}");
        assert_eq!(catalog(&admin).await, before, "nothing written");
        // Another Gamma user granted the dataset: created, then replaced by its owner.
        let (_, dss) = admin.get("/api/v1/dataset/").await;
        let ds_id = dss["ids"][0].as_i64().unwrap();
        let view = format!("[evil].[ab_user](id:{ds_id})");
        let reader = role_with(
            &admin,
            "ab_user_reader",
            &[permission(&admin, &view, "datasource_access").await],
        )
        .await;
        let gamma = user(&server, &admin, "gus", &[role_id(&admin, "Gamma").await, reader]).await;
        let (s, body) = upload(&gamma, "/api/v1/chart/import/", mine("first"), false).await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (s, body) = upload(&gamma, "/api/v1/chart/import/", mine("second"), true).await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (_, list) = admin
            .get(&format!(
                "/api/v1/chart/?q={}",
                urlencode(&format!("(filters:!((col:uuid,opr:eq,value:'{own}')))"))
            ))
            .await;
        assert_eq!(list["result"][0]["slice_name"], "second", "{list}");
        // The database and dataset Gamma cannot write were reused, not replaced.
        let (_, dbs) = admin.get("/api/v1/database/").await;
        assert_eq!(dbs["count"], 1, "{dbs}");
        // The admin replaces anyone's.
        let (s, body) =
            upload(&admin, "/api/v1/chart/import/", attack("Slice", SAFE_URI, "admin's 2"), true)
                .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (_, c) = admin.get(&format!("/api/v1/chart/{chart_id}")).await;
        assert_eq!(c["result"]["slice_name"], "admin's 2", "{c}");
    }

    /// A dataset import needs data access to its database, as `POST /dataset/` does.
    async fn dataset_import_needs_database_access(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let db_bundle = bundle(
            "Database",
            &[("databases/evil.yaml".into(), database_doc("evil", DB_UUID, SAFE_URI))],
        );
        let (s, body) = upload(&admin, "/api/v1/database/import/", db_bundle, false).await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (_, dbs) = admin.get("/api/v1/database/").await;
        let db_id = dbs["ids"][0].as_i64().unwrap();
        let writer = role_with(
            &admin,
            "dataset_writer",
            &[
                permission(&admin, "Dataset", "can_write").await,
                permission(&admin, "Dataset", "can_read").await,
                // The CSRF token.
                permission(&admin, "SecurityRestApi", "can_read").await,
            ],
        )
        .await;
        let dora = user(&server, &admin, "dora", &[writer]).await;
        let ds = bundle(
            "SqlaTable",
            &[
                ("databases/evil.yaml".into(), database_doc("evil", DB_UUID, SAFE_URI)),
                ("datasets/evil/ab_user.yaml".into(), dataset_doc("ab_user", DS_UUID, DB_UUID)),
            ],
        );
        let before = catalog(&admin).await;
        for overwrite in [false, true] {
            let (s, body) = upload(&dora, "/api/v1/dataset/import/", ds.clone(), overwrite).await;
            assert_refused(
                &body,
                s,
                "datasets/evil/ab_user.yaml",
                "Dataset's database is not accessible to the user importing it",
                "no database access",
            );
            assert_eq!(catalog(&admin).await, before, "nothing written");
        }
        // The REST API asks the same question.
        let (s, body) = dora
            .post("/api/v1/dataset/", json!({"database": db_id, "table_name": "ab_user"}))
            .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
        // With database_access on it, the import goes through.
        let access = permission(&admin, &format!("[evil].(id:{db_id})"), "database_access").await;
        let pvms = [
            permission(&admin, "Dataset", "can_write").await,
            permission(&admin, "Dataset", "can_read").await,
            permission(&admin, "SecurityRestApi", "can_read").await,
            access,
        ];
        let (s, body) = admin
            .post(
                &format!("/api/v1/security/roles/{writer}/permissions"),
                json!({"permission_view_menu_ids": pvms}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        // Permissions are cached for a few seconds.
        let mut last = (StatusCode::OK, Value::Null);
        for _ in 0..40 {
            last = upload(&dora, "/api/v1/dataset/import/", ds.clone(), false).await;
            if last.0 == StatusCode::OK {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        assert_eq!(last.0, StatusCode::OK, "{}", last.1);
    }

    /// Unsafe connection URIs are refused on create, edit, test and import.
    async fn unsafe_connections_are_refused(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let (s, body) = upload(
            &admin,
            "/api/v1/database/import/",
            bundle("Database", &[("databases/safe.yaml".into(), database_doc("safe", DB_UUID, SAFE_URI))]),
            false,
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (_, dbs) = admin.get("/api/v1/database/").await;
        let safe_id = dbs["ids"][0].as_i64().unwrap();
        let conn_before = admin.get(&format!("/api/v1/database/{safe_id}/connection")).await.1;
        let data = server.data_dir().to_path_buf();
        let d = data.display().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("innocent.db");
        std::os::unix::fs::symlink(data.join("liteset.db"), &link).unwrap();
        let fresh = tmp.path().join("brand-new.db");
        let mut spellings: Vec<(String, &str)> = [
            format!("sqlite:///{d}/liteset.db"),
            format!("sqlite:////{}", d.trim_start_matches('/') ) + "/liteset.db",
            "sqlite:///data/liteset.db".to_owned(),
            "sqlite:///./data/../data//liteset.db".to_owned(),
            format!("sqlite:///{d}/nothing/../liteset.db"),
            format!("sqlite:///{}", link.display()),
            format!("sqlite:///file:{d}/liteset.db?mode=ro&uri=true"),
            format!("sqlite:///file:{d}/liteset.db%3Fmode%3Dro"),
            format!("SQLITE:///{d}/liteset.db"),
            format!("sqlite+pysqlite:///{d}/liteset.db"),
            format!("sqlite:///{d}/liteset.db-wal"),
            format!("sqlite:///{d}/secret_key"),
            format!("sqlite:///{d}"),
            format!("sqlite:///{d}/new.db"),
            format!("sqlite:///{}", fresh.display()),
        ]
        .into_iter()
        .map(|u| (u, SQLITE_REFUSED))
        .collect();
        if let Some(url) = server.metadata_url() {
            // The PostgreSQL metadata store itself, however the host is written.
            let u = url::Url::parse(url).unwrap();
            let (port, db) = (u.port().unwrap_or(5432), u.path().trim_start_matches('/'));
            for host in ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"] {
                spellings.push((
                    format!("postgresql://{}:{}@{host}:{port}/{db}", u.username(), u.password().unwrap_or("")),
                    INTERNAL_REFUSED,
                ));
            }
            spellings.push((
                format!("postgres://x@127.0.0.1:{port}/{db}?sslmode=disable"),
                INTERNAL_REFUSED,
            ));
        }
        for (uri, message) in &spellings {
            let field = json!({"message": {"sqlalchemy_uri": [message]}});
            let (s, body) = admin
                .post("/api/v1/database/", json!({"database_name": "x", "sqlalchemy_uri": uri}))
                .await;
            assert_eq!((s, &body), (StatusCode::BAD_REQUEST, &field), "POST {uri}");
            let (s, body) = admin
                .post("/api/v1/database/test_connection/", json!({"sqlalchemy_uri": uri}))
                .await;
            assert_eq!((s, &body), (StatusCode::BAD_REQUEST, &field), "test {uri}");
            let (s, body) = admin
                .put(&format!("/api/v1/database/{safe_id}"), json!({"sqlalchemy_uri": uri}))
                .await;
            assert_eq!((s, &body), (StatusCode::BAD_REQUEST, &field), "PUT {uri}");
            let b = bundle(
                "Database",
                &[("databases/x.yaml".into(),
                   database_doc("x", "0b6a7c1e-5b0f-4e0a-9c55-5e1c0e5a0042", uri))],
            );
            let (s, body) = upload(&admin, "/api/v1/database/import/", b, false).await;
            assert_refused(&body, s, "databases/x.yaml", message, &format!("import {uri}"));
            // Replacing the safe database's URI by import is refused the same way.
            let b = bundle("Database", &[("databases/safe.yaml".into(), database_doc("safe", DB_UUID, uri))]);
            let (s, body) = upload(&admin, "/api/v1/database/import/", b, true).await;
            assert_refused(&body, s, "databases/safe.yaml", message, &format!("overwrite {uri}"));
        }
        let (_, dbs) = admin.get("/api/v1/database/").await;
        assert_eq!(dbs["count"], 1, "nothing created: {dbs}");
        assert_eq!(
            admin.get(&format!("/api/v1/database/{safe_id}/connection")).await.1,
            conn_before,
            "nothing changed"
        );
        assert!(!fresh.exists() && !data.join("new.db").exists(), "no file created");
    }

    /// A record stored before the guard existed (edited in the store directly here) cannot
    /// be connected to either.
    async fn stored_unsafe_records_are_refused_at_connection_time(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let (s, body) = upload(
            &admin,
            "/api/v1/database/import/",
            bundle("Database", &[("databases/old.yaml".into(), database_doc("old", DB_UUID, SAFE_URI))]),
            false,
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (_, dbs) = admin.get("/api/v1/database/").await;
        let id = dbs["ids"][0].as_i64().unwrap();
        let (target, message) = match server.metadata_url() {
            Some(url) => {
                let u = url::Url::parse(url).unwrap();
                let target = format!(
                    "postgresql://{}@localhost:{}{}",
                    u.username(),
                    u.port().unwrap_or(5432),
                    u.path()
                );
                let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                // The id column is an integer of either width depending on the migration.
                let n = match client
                    .execute("UPDATE dbs SET sqlalchemy_uri = $1 WHERE id = $2", &[&target, &id])
                    .await
                {
                    Ok(n) => n,
                    Err(_) => client
                        .execute(
                            "UPDATE dbs SET sqlalchemy_uri = $1 WHERE id = $2",
                            &[&target, &(id as i32)],
                        )
                        .await
                        .unwrap(),
                };
                assert_eq!(n, 1);
                (target, INTERNAL_REFUSED)
            }
            None => {
                let target = "sqlite:///data/liteset.db".to_owned();
                let conn = rusqlite::Connection::open(server.data_dir().join("liteset.db")).unwrap();
                conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
                let n = conn
                    .execute("UPDATE dbs SET sqlalchemy_uri = ?1 WHERE id = ?2", rusqlite::params![target, id])
                    .unwrap();
                assert_eq!(n, 1);
                (target, SQLITE_REFUSED)
            }
        };
        for path in [
            format!("/api/v1/database/{id}/schemas/"),
            format!("/api/v1/database/{id}/tables/?q=(schema_name:main)"),
            format!("/api/v1/database/{id}/table_metadata/?name=ab_user"),
        ] {
            let (s, body) = admin.get(&path).await;
            assert!(s.is_client_error() || s.is_server_error(), "{path} {target}: {s} {body}");
            assert!(body.to_string().contains(message), "{path}: {body}");
            assert!(!body.to_string().contains("ab_user\""), "{path}: {body}");
        }
        let (s, body) = admin
            .post("/api/v1/dataset/", json!({"database": id, "table_name": "ab_user"}))
            .await;
        assert!(s.is_client_error(), "{s} {body}");
        let (_, ds) = admin.get("/api/v1/dataset/").await;
        assert_eq!(ds["count"], 0, "{ds}");
    }
}

/// With SQLite allowed, files outside the data folder work, the data folder still does not,
/// and the embedded examples answer chart data.
#[tokio::test]
async fn allowed_sqlite_still_keeps_the_data_folder_out() {
    let server = TestServer::builder()
        .env("LITESET_SECURITY__ALLOW_SQLITE_DATABASES", "true")
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside.db");
    rusqlite::Connection::open(&outside)
        .unwrap()
        .execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();
    let link = tmp.path().join("link.db");
    std::os::unix::fs::symlink(server.data_dir().join("liteset.db"), &link).unwrap();
    let d = server.data_dir().display().to_string();
    let (s, body) = admin
        .post(
            "/api/v1/database/test_connection/",
            json!({"sqlalchemy_uri": format!("sqlite:///{}", outside.display())}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let (s, body) = admin
        .post(
            "/api/v1/database/",
            json!({"database_name": "outside", "sqlalchemy_uri": format!("sqlite:///{}", outside.display())}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    for uri in [
        format!("sqlite:///{d}/liteset.db"),
        "sqlite:///data/liteset.db".to_owned(),
        format!("sqlite:///{}", link.display()),
        format!("sqlite+pysqlite:///{d}/../data/liteset.db-shm"),
        format!("Sqlite:///file:{d}/liteset.db?mode=ro"),
        format!("sqlite:///{d}/plugins/cache/x.db"),
        format!("sqlite:///{d}/secret_key"),
    ] {
        let field = json!({"message": {"sqlalchemy_uri": [INTERNAL_REFUSED]}});
        let (s, body) = admin
            .post(
                "/api/v1/database/",
                json!({"database_name": "x", "sqlalchemy_uri": uri}),
            )
            .await;
        assert_eq!((s, &body), (StatusCode::BAD_REQUEST, &field), "POST {uri}");
        let (s, body) = admin
            .post(
                "/api/v1/database/test_connection/",
                json!({"sqlalchemy_uri": uri}),
            )
            .await;
        assert_eq!((s, &body), (StatusCode::BAD_REQUEST, &field), "test {uri}");
    }
    // A `file:` name is never read as a URI: it is the literal (missing) relative file.
    let (s, body) = admin
        .post(
            "/api/v1/database/test_connection/",
            json!({"sqlalchemy_uri": format!("sqlite:///file:{}", outside.display())}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["errors"][0]["error_type"], "CONNECTION_UNKNOWN_DATABASE_ERROR",
        "{body}"
    );
    // The embedded examples database still answers chart data.
    let (s, dash) = admin.get("/api/v1/dashboard/sales-overview/charts").await;
    assert_eq!(s, StatusCode::OK, "{dash}");
    let id = dash["result"][0]["id"].as_i64().unwrap();
    let (s, data) = admin.get(&format!("/api/v1/chart/{id}/data/")).await;
    assert_eq!(s, StatusCode::OK, "{data}");
    assert!(
        data["result"][0]["rowcount"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{data}"
    );
}

/// Without the setting, the examples still work although every other SQLite file is refused.
#[tokio::test]
async fn examples_work_without_sqlite_allowed() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, dash) = admin.get("/api/v1/dashboard/sales-overview/charts").await;
    assert_eq!(s, StatusCode::OK, "{dash}");
    for c in dash["result"].as_array().unwrap() {
        let id = c["id"].as_i64().unwrap();
        let (s, data) = admin.get(&format!("/api/v1/chart/{id}/data/")).await;
        assert_eq!(s, StatusCode::OK, "chart {id}: {data}");
    }
    // Its export imports back (the examples URI is allowed on import too).
    let resp = admin
        .request(reqwest::Method::GET, "/api/v1/assets/export/")
        .send()
        .await
        .unwrap();
    let zip = resp.bytes().await.unwrap().to_vec();
    let (s, body) = upload(&admin, "/api/v1/assets/import/", zip, true).await;
    assert_eq!(s, StatusCode::OK, "{body}");
}
