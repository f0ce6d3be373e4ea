//! SQL text checks: the function deny-list in every spelling, table access with names
//! resolved as PostgreSQL resolves them (CTE scoping, quoting), virtual dataset SQL, and the
//! statement classifier (transaction, session and server-side statements behind comments).
//!
//! One server (SQLite metadata, with the embedded examples database for the SQLite cases; a
//! later configuration key that refuses SQLite analytics files must leave the examples
//! database allowed) and one PostgreSQL analytics database holding `secret`, `"Open"` (both
//! ungranted) and `open`, the one table the user `tess` may read (`datasource_access`).

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, pg};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::common::{error_type, id_of, permission};

pub(crate) const SECRET: &str = "TOPSECRET-7f3a";

async fn analytics() -> (String, tokio_postgres::Client) {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(&format!(
            "CREATE TABLE public.secret (id int, s text); \
             INSERT INTO public.secret VALUES (1, '{SECRET}'); \
             CREATE TABLE public.\"Open\" (id int, v text); \
             INSERT INTO public.\"Open\" VALUES (1, '{SECRET}'); \
             CREATE TABLE public.open (id int, v text); \
             INSERT INTO public.open VALUES (1, 'a'), (2, 'b');"
        ))
        .await
        .expect("tables");
    (url, client)
}

async fn run(api: &Api, db: i64, sql: &str) -> (StatusCode, Value) {
    api.post(
        "/api/v1/sqllab/execute/",
        json!({"database_id": db, "sql": sql, "runAsync": false, "schema": "public"}),
    )
    .await
}

async fn dataset_count(api: &Api) -> Value {
    api.get("/api/v1/dataset/?q=(page_size:100)").await.1["count"].clone()
}

pub(crate) struct World {
    pub(crate) server: TestServer,
    pub(crate) admin: Api,
    pub(crate) tess: Api,
    pub(crate) pgc: tokio_postgres::Client,
    /// The analytics database's URL (no password: the test cluster trusts loopback).
    pub(crate) url: String,
    /// The PostgreSQL analytics database, read-only.
    pub(crate) wh: i64,
    /// The same database with DML allowed.
    pub(crate) rw: i64,
    /// The embedded SQLite examples database (-1 on PostgreSQL metadata, which has none).
    pub(crate) examples: i64,
    /// The physical dataset on `open`.
    pub(crate) open: i64,
    /// `tess`'s own role.
    pub(crate) role: i64,
}

/// The server, the databases, the `open` dataset and `tess` (Gamma + sql_lab, datasource
/// access on `open`, and `can_write` on datasets to create virtual ones).
async fn world() -> World {
    world_on(Metadata::Sqlite).await
}

/// [`world`] on the given metadata backend.
pub(crate) async fn world_on(meta: Metadata) -> World {
    let (url, pgc) = analytics().await;
    let server = TestServer::builder()
        .metadata(meta)
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .expect("server");
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    // The embedded examples exist with SQLite metadata only.
    let examples = match meta {
        Metadata::Sqlite => id_of(&admin, "/api/v1/database/", "database_name", "examples").await,
        Metadata::Postgres => -1,
    };
    let mut dbs = Vec::new();
    for (name, dml) in [("wh", false), ("rw", true)] {
        let (s, db) = admin
            .post(
                "/api/v1/database/",
                json!({"database_name": name, "sqlalchemy_uri": url, "expose_in_sqllab": true,
                       "allow_dml": dml}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{db}");
        dbs.push(db["id"].as_i64().expect("db id"));
    }
    let (wh, rw) = (dbs[0], dbs[1]);
    let (s, ds) = admin
        .post(
            "/api/v1/dataset/",
            json!({"database": wh, "schema": "public", "table_name": "open"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let open = ds["id"].as_i64().expect("dataset id");

    let (s, role) = admin
        .post("/api/v1/security/roles/", json!({"name": "open_reader"}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{role}");
    let role_id = role["id"].as_i64().expect("role id");
    let pvs = vec![
        permission(
            &admin,
            &format!("[wh].[open](id:{open})"),
            "datasource_access",
        )
        .await,
        permission(&admin, "Dataset", "can_write").await,
    ];
    let (s, r) = admin
        .post(
            &format!("/api/v1/security/roles/{role_id}/permissions"),
            json!({"permission_view_menu_ids": pvs}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let mut roles = vec![role_id];
    for builtin in ["Gamma", "sql_lab"] {
        roles.push(id_of(&admin, "/api/v1/security/roles/", "name", builtin).await);
    }
    let (s, user) = admin
        .post(
            "/api/v1/security/users/",
            json!({"username": "tess", "first_name": "Tess", "last_name": "Table",
                   "email": "tess@example.com", "password": "tess-pass-123",
                   "roles": roles, "active": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{user}");
    let tess = Api::login(&server, "tess", "tess-pass-123").await;
    World {
        server,
        admin,
        tess,
        pgc,
        url,
        wh,
        rw,
        examples,
        open,
        role: role_id,
    }
}

/// Reads of `secret` (or `"Open"`) hidden behind CTE names, sub-queries and case are refused
/// with Superset's 403; CTEs over the granted table still run.
#[tokio::test]
async fn table_access_resolves_names_as_postgresql_does() {
    let w = world().await;
    let refused = [
        "SELECT * FROM secret",
        "WITH secret AS (SELECT * FROM secret) SELECT * FROM secret",
        "with SECRET as (select * from Secret) select * from secret",
        "WITH a AS (SELECT 1), secret AS (SELECT * FROM secret) SELECT * FROM secret",
        "WITH b AS (SELECT * FROM secret), secret AS (SELECT * FROM open) SELECT * FROM b",
        "WITH x AS (SELECT 1) SELECT * FROM (WITH secret AS (SELECT * FROM secret) \
         SELECT * FROM secret) s",
        "SELECT * FROM (WITH secret AS (SELECT * FROM open) SELECT * FROM secret) s, secret",
        "WITH a AS (WITH secret AS (SELECT * FROM open) SELECT * FROM secret) \
         SELECT * FROM a, secret",
        "WITH secret AS (SELECT * FROM open) SELECT * FROM public.secret",
        "WITH secret AS (SELECT * FROM open) SELECT * FROM \"public\".\"secret\"",
        "SELECT * FROM open WHERE v IN (SELECT s FROM secret)",
        "SELECT (SELECT max(s) FROM secret) FROM open",
        "SELECT * FROM open o JOIN open p ON EXISTS (SELECT 1 FROM secret)",
        "SELECT * FROM open, LATERAL (SELECT s FROM secret) x",
        "SELECT v FROM open UNION ALL SELECT s FROM secret",
        "WITH RECURSIVE r AS (SELECT s FROM secret UNION ALL SELECT s FROM r WHERE false) \
         SELECT * FROM r",
        "WITH RECURSIVE secret AS (SELECT * FROM public.secret UNION ALL \
         SELECT * FROM secret WHERE false) SELECT * FROM secret",
        // Quoted names keep their case: "Open" is not open.
        "SELECT * FROM \"Open\"",
        "WITH \"Open\" AS (SELECT * FROM open) SELECT * FROM \"Open\", \"public\".\"Open\"",
        "WITH \"Secret\" AS (SELECT * FROM open) SELECT * FROM secret",
        "SELECT 1; SELECT * FROM secret",
    ];
    for sql in refused {
        let (s, r) = run(&w.tess, w.wh, sql).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{sql}: {r}");
        assert_eq!(error_type(&r), "TABLE_SECURITY_ACCESS_ERROR", "{sql}: {r}");
        let message = r["errors"][0]["message"].as_str().unwrap_or("");
        assert!(
            message.starts_with("You need access to the following tables: "),
            "{sql}: {r}"
        );
        assert!(!r.to_string().contains(SECRET), "{sql}: {r}");
    }
    let allowed = [
        ("SELECT count(*) AS n FROM open", 2),
        (
            "WITH o AS (SELECT * FROM open) SELECT count(*) AS n FROM o",
            2,
        ),
        (
            "WITH secret AS (SELECT * FROM open) SELECT count(*) AS n FROM secret",
            2,
        ),
        (
            "WITH Secret AS (SELECT * FROM open) SELECT count(*) AS n FROM \"secret\"",
            2,
        ),
        (
            "WITH secret AS (SELECT * FROM open), b AS (SELECT * FROM secret) \
             SELECT count(*) AS n FROM b",
            2,
        ),
        (
            "WITH secret AS (SELECT * FROM open) SELECT count(*) AS n FROM open \
             WHERE id IN (SELECT id FROM secret)",
            2,
        ),
        ("SELECT count(*) AS n FROM public.open", 2),
        ("SELECT count(*) AS n FROM \"open\"", 2),
        (
            "WITH RECURSIVE r AS (SELECT id FROM open UNION ALL SELECT id + 10 FROM r \
             WHERE id < 10) SELECT count(*) AS n FROM r",
            4,
        ),
    ];
    for (sql, n) in allowed {
        let (s, r) = run(&w.tess, w.wh, sql).await;
        assert_eq!(s, StatusCode::OK, "{sql}: {r}");
        assert_eq!(r["data"], json!([{"n": n}]), "{sql}: {r}");
    }
    // Cost estimation checks the same way.
    let (s, r) = w
        .tess
        .post(
            "/api/v1/sqllab/estimate/",
            json!({"database_id": w.wh, "sql": "WITH secret AS (SELECT * FROM secret) SELECT * FROM secret"}),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
    assert_eq!(error_type(&r), "TABLE_SECURITY_ACCESS_ERROR", "{r}");
    assert!(!w.server.logs().contains("panicked"));
}

/// Virtual datasets: SQL reading a table the user may not read is refused when the dataset
/// is created or its SQL changed (Superset's `DatasetDataAccessIsNotAllowed`, 422 on `sql`),
/// and nothing is stored.
#[tokio::test]
async fn virtual_dataset_sql_is_checked_like_sql_lab() {
    let w = world().await;
    let before = dataset_count(&w.admin).await;
    for (i, sql) in [
        "SELECT * FROM secret",
        "WITH secret AS (SELECT * FROM secret) SELECT * FROM secret",
        "WITH x AS (SELECT 1) SELECT * FROM (WITH secret AS (SELECT * FROM secret) \
         SELECT * FROM secret) s",
        "SELECT * FROM open WHERE v IN (SELECT s FROM public.secret)",
        "SELECT * FROM \"Open\"",
    ]
    .into_iter()
    .enumerate()
    {
        let (s, r) = w
            .tess
            .post(
                "/api/v1/dataset/",
                json!({"database": w.wh, "schema": "public", "table_name": format!("v{i}"), "sql": sql}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{sql}: {r}");
        let message = r["message"]["sql"][0].as_str().unwrap_or("");
        assert!(
            message.starts_with("You need access to the following tables: "),
            "{sql}: {r}"
        );
    }
    assert_eq!(
        dataset_count(&w.admin).await,
        before,
        "no dataset was stored"
    );

    // A virtual dataset over the granted table is fine, and its SQL cannot then be
    // changed to read another.
    let (s, r) = w
        .tess
        .post(
            "/api/v1/dataset/",
            json!({"database": w.wh, "schema": "public", "table_name": "mine",
                   "sql": "WITH secret AS (SELECT * FROM open) SELECT * FROM secret"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{r}");
    let mine = r["id"].as_i64().expect("id");
    // Granted to her, so she may edit it (she owns it).
    let pvs = vec![
        permission(
            &w.admin,
            &format!("[wh].[open](id:{})", w.open),
            "datasource_access",
        )
        .await,
        permission(&w.admin, "Dataset", "can_write").await,
        permission(
            &w.admin,
            &format!("[wh].[mine](id:{mine})"),
            "datasource_access",
        )
        .await,
    ];
    let (s, r) = w
        .admin
        .post(
            &format!("/api/v1/security/roles/{}/permissions", w.role),
            json!({"permission_view_menu_ids": pvs}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let tess = Api::login(&w.server, "tess", "tess-pass-123").await;
    let (s, r) = tess
        .put(
            &format!("/api/v1/dataset/{mine}"),
            json!({"description": "unchanged SQL is not re-judged",
                   "sql": "WITH secret AS (SELECT * FROM open) SELECT * FROM secret"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let (s, r) = tess
        .put(
            &format!("/api/v1/dataset/{mine}"),
            json!({"sql": "WITH secret AS (SELECT * FROM secret) SELECT * FROM secret"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    let (_, stored) = w.admin.get(&format!("/api/v1/dataset/{mine}")).await;
    assert_eq!(
        stored["result"]["sql"], "WITH secret AS (SELECT * FROM open) SELECT * FROM secret",
        "{stored}"
    );
    // The administrator may (database access).
    let (s, r) = w
        .admin
        .post(
            "/api/v1/dataset/",
            json!({"database": w.wh, "schema": "public", "table_name": "adm",
                   "sql": "SELECT * FROM secret"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{r}");
}

/// Functions that run SQL text, read files, change settings or reach the network are refused
/// in SQL Lab however they are spelled, before anything reaches the database; chart
/// fragments (metrics, where, having, columns) are held to the same list.
#[tokio::test]
async fn denied_functions_are_refused_in_every_spelling() {
    let w = world().await;
    let calls = [
        "schema_to_xml('public', true, false, '')",
        "table_to_xml('secret', true, false, '')",
        "query_to_xml('SELECT * FROM secret', true, false, '')",
        "query_to_xml_and_xmlschema('SELECT * FROM secret', true, false, '')",
        "cursor_to_xml('c', 1, true, false, '')",
        "database_to_xml(true, false, '')",
        "database_to_xmlschema(true, false, '')",
        "schema_to_xmlschema('public', true, false, '')",
        "table_to_xml_and_xmlschema('secret', true, false, '')",
        "ts_stat('SELECT to_tsvector(s) FROM secret')",
        "ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, s::tsquery FROM secret')",
        "set_config('work_mem', '1MB', false)",
        "\"set_config\"('work_mem', '1MB', false)",
        "pg_catalog.set_config('work_mem', '1MB', false)",
        "\"pg_catalog\".\"query_to_xml\"('SELECT * FROM secret', true, false, '')",
        "SET_CONFIG('work_mem', '1MB', false)",
        "set_config /* x */ ('work_mem', '1MB', false)",
        "set_config\n-- x\n('work_mem', '1MB', false)",
        "pg_read_file('/etc/hostname')",
        "pg_read_binary_file('/etc/hostname')",
        "pg_ls_dir('.')",
        "pg_ls_waldir()",
        "pg_stat_file('/etc/hostname')",
        "lo_import('/etc/hostname')",
        "lo_get(1)",
        "lo_create(0)",
        "dblink('dbname=postgres', 'SELECT 1')",
        "dblink_connect('x')",
        "pg_advisory_lock(42)",
        "pg_try_advisory_lock(42)",
        "pg_notify('c', 'x')",
        "pg_reload_conf()",
        "pg_terminate_backend(1)",
        "pg_cancel_backend(1)",
        "current_setting('data_directory')",
        "pg_sleep(0.01)",
        "pg_catalog.pg_sleep_for('1 ms')",
        "version()",
    ];
    let mut spellings = Vec::new();
    for call in calls {
        spellings.push(format!("SELECT {call}"));
    }
    let set = "set_config('work_mem', '1MB', false)";
    for wrap in [
        format!("SELECT * FROM {set}"),
        format!("SELECT * FROM open, LATERAL {set} s"),
        format!("SELECT * FROM ROWS FROM ({set})"),
        format!("SELECT * FROM open WHERE v IN ({set})"),
        format!("SELECT sum(id) OVER (PARTITION BY {set}) FROM open"),
        format!("SELECT count(*) FILTER (WHERE {set} = '') FROM open"),
        format!("SELECT (ARRAY[1])[length({set})]"),
        format!("SELECT CAST({set} AS text)"),
        format!("SELECT {set}::text"),
        format!("SELECT 1; SELECT {set}"),
        format!("WITH c AS (SELECT {set}) SELECT * FROM c"),
        format!("SELEC {set}"),
    ] {
        spellings.push(wrap);
    }
    for sql in &spellings {
        for db in [w.wh, w.rw] {
            let (s, r) = run(&w.admin, db, sql).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{sql}: {r}");
            assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{sql}: {r}");
            let message = r["errors"][0]["message"].as_str().unwrap_or("");
            assert!(
                message.starts_with("SQL contains disallowed function(s): "),
                "{sql}: {r}"
            );
        }
    }
    // Nothing ran: the setting is the server's default, no lock is held.
    let (s, r) = run(&w.admin, w.wh, "SHOW work_mem").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_ne!(r["data"][0]["work_mem"], "1MB", "{r}");
    let locks: i64 = w
        .pgc
        .query_one(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
            &[],
        )
        .await
        .expect("pg_locks")
        .get(0);
    assert_eq!(locks, 0);
    // A Unicode-escaped name is refused outright.
    for sql in [
        "SELECT U&\"\\0073et_config\"('work_mem', '1MB', false)",
        "SELEC u&\"\\0073et_config\"('work_mem', '1MB', false)",
    ] {
        let (s, r) = run(&w.admin, w.wh, sql).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{sql}: {r}");
        assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{sql}: {r}");
    }

    // Chart fragments.
    let fragment = |metric: Value, extras: Value, columns: Value| {
        json!({"datasource": {"id": w.open, "type": "table"},
               "queries": [{"columns": columns, "metrics": [metric], "extras": extras}]})
    };
    let sql_metric = |e: &str| json!({"expressionType": "SQL", "sqlExpression": e, "label": "m"});
    let count = json!("count");
    let mut cases = Vec::new();
    for call in [
        "set_config('work_mem', '1MB', false)",
        "\"pg_catalog\".\"set_config\"('work_mem', '1MB', false)",
        "query_to_xml('SELECT * FROM secret', true, false, '')::text",
        "schema_to_xml('public', true, false, '')::text",
        "pg_read_file('/etc/hostname')",
    ] {
        cases.push(fragment(
            sql_metric(&format!("max(length({call}))")),
            json!({}),
            json!([]),
        ));
        cases.push(fragment(
            count.clone(),
            json!({"where": format!("length({call}) > 0")}),
            json!([]),
        ));
        cases.push(fragment(
            count.clone(),
            json!({"having": format!("max(length({call})) > 0")}),
            json!([]),
        ));
        cases.push(fragment(
            count.clone(),
            json!({}),
            json!([{"sqlExpression": format!("length({call})"), "label": "c"}]),
        ));
    }
    for body in cases {
        let (s, r) = w.tess.post("/api/v1/chart/data", body.clone()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {r}");
        assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{body}: {r}");
    }
    let (s, r) = run(&w.admin, w.wh, "SHOW work_mem").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_ne!(r["data"][0]["work_mem"], "1MB", "{r}");
}

/// Transaction, session and server-side statements are refused with 400 INVALID_SQL_ERROR
/// whatever precedes them, on SQLite (the examples database) and PostgreSQL, even where DML
/// is allowed; nothing is attached, written or changed.
#[tokio::test]
async fn session_statements_are_refused_behind_comments() {
    let w = world().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("x.db");
    let f = file.display();
    let sqlite = [
        format!("ATTACH DATABASE '{f}' AS x"),
        format!("ATTACH '{f}' AS x KEY ''"),
        format!("/* x */ ATTACH '{f}' AS x KEY ''"),
        format!("-- x\nATTACH '{f}' AS x KEY ''"),
        format!("/* /* */ attach '{f}' AS x KEY '' -- */"),
        format!(" ;\n; Attach database '{f}' AS x"),
        "DETACH x".to_owned(),
        "BEGIN TRANSACTION 'x'".to_owned(),
        "/* x */ BEGIN TRANSACTION 'x'".to_owned(),
        "BEGIN DEFERRED".to_owned(),
        "begin immediate transaction".to_owned(),
        "BEGIN EXCLUSIVE".to_owned(),
        "SAVEPOINT s".to_owned(),
        "RELEASE s".to_owned(),
        "END".to_owned(),
        "COMMIT".to_owned(),
        "ROLLBACK TRANSACTION".to_owned(),
        format!("VACUUM INTO '{f}'"),
        format!("-- x\nVACUUM main INTO '{f}'"),
        "PRAGMA writable_schema = ON".to_owned(),
        "/* x */ PRAGMA query_only = 0".to_owned(),
        "SELECT 1; BEGIN".to_owned(),
    ];
    for sql in &sqlite {
        let (s, r) = run(&w.admin, w.examples, sql).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{sql}: {r}");
        assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{sql}: {r}");
        let message = r["errors"][0]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("statements are not supported in SQL Lab"),
            "{sql}: {r}"
        );
    }
    assert!(!file.exists(), "nothing was attached or written");
    let (s, r) = run(
        &w.admin,
        w.examples,
        "SELECT name FROM pragma_database_list ORDER BY name",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"], json!([{"name": "main"}]), "{r}");
    // SQLite's file functions, however quoted.
    for sql in [
        "SELECT [load_extension]('x')",
        "SELECT \"readfile\"('/etc/hostname')",
        "SELECT `WRITEFILE`('/tmp/x', 'y')",
        "SELECT fts3_tokenizer('simple')",
        "SELEC load_extension ('x')",
    ] {
        let (s, r) = run(&w.admin, w.examples, sql).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{sql}: {r}");
        assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{sql}: {r}");
    }

    let postgres = [
        "/* a /* nested */ comment */ SET work_mem = '1MB'",
        "-- x\rSET work_mem = '1MB'",
        "set work_mem = '1MB'; SELECT 1",
        "RESET ALL",
        "DISCARD ALL",
        "LOAD 'plpgsql'",
        "LISTEN x",
        "NOTIFY x",
        "COPY open TO '/tmp/liteset-copy'",
        "/* x */ COPY (SELECT 1) TO PROGRAM 'true'",
        "DO $$ BEGIN PERFORM set_config('work_mem', '1MB', false); END $$",
        "PREPARE p AS SELECT 1",
        "EXECUTE p",
        "DEALLOCATE ALL",
        "CALL p()",
        "CHECKPOINT",
        "LOCK TABLE open",
        "BEGIN",
        "START TRANSACTION",
        "SELECT 1; COMMIT",
        "END",
    ];
    for sql in postgres {
        for db in [w.wh, w.rw] {
            let (s, r) = run(&w.admin, db, sql).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{sql}: {r}");
            assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{sql}: {r}");
        }
    }
    let (s, r) = run(&w.admin, w.rw, "SHOW work_mem").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_ne!(r["data"][0]["work_mem"], "1MB", "{r}");
    assert!(!std::path::Path::new("/tmp/liteset-copy").exists());
    // Comments that merely mention a keyword, and read-only pragmas, still run.
    for (db, sql) in [
        (w.examples, "/* ATTACH */ SELECT 1 AS x"),
        (w.wh, "/* /* */ SET */ SELECT 1 AS x"),
        (w.wh, "-- BEGIN\nSELECT 1 AS x"),
    ] {
        let (s, r) = run(&w.admin, db, sql).await;
        assert_eq!(s, StatusCode::OK, "{sql}: {r}");
        assert_eq!(r["data"], json!([{"x": 1}]), "{sql}: {r}");
    }
    // SQL Lab refuses every PRAGMA (each statement runs on a pooled connection); the
    // engine's own introspection uses the read-only ones.
    let (s, r) = run(&w.admin, w.examples, "PRAGMA table_info(sales)").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(error_type(&r), "INVALID_SQL_ERROR", "{r}");
}
