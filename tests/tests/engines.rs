//! `liteset::engines` against a real PostgreSQL and real SQLite files.
//!
//! PostgreSQL tests need `LITESET_TEST_PG_URL`, a superuser URL (as `bash tests/run` sets it);
//! they are skipped without it. The test cluster asks every role but the superuser for its
//! password (scram), so the wrong-password case is real.

use std::time::{Duration, Instant};

use liteset::engines::{
    ConnectionSpec, EngineError, EngineOptions, Engines, GenericType, TableKind,
};
use liteset::uri::ConnectionUri;

const PASSWORD: &str = "p@ss:w0rd\"x";

fn spec(id: i64, uri: &str) -> ConnectionSpec {
    ConnectionSpec {
        database_id: id,
        uri: ConnectionUri::parse(uri).expect("uri"),
        revision: "1".into(),
        options: None,
        server_cert: None,
    }
}

fn quick() -> EngineOptions {
    EngineOptions {
        pool_size: 3,
        connect_timeout: Duration::from_secs(3),
        pool_wait: Duration::from_secs(3),
        statement_timeout: Duration::from_secs(2),
        ..EngineOptions::default()
    }
}

fn assert_no_password(err: &EngineError) {
    for shown in [format!("{err:?}"), err.message()] {
        assert!(!shown.contains("w0rd"), "password leaked: {shown}");
    }
}

struct PgFixture {
    host: String,
    port: u16,
    role: String,
    database: String,
}

impl PgFixture {
    fn uri(&self, password: &str) -> String {
        let pw: String = password
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        format!(
            "postgresql+psycopg2://{}:{pw}@{}:{}/{}",
            self.role, self.host, self.port, self.database
        )
    }
}

async fn admin(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("admin connect");
    tokio::spawn(conn);
    client
}

async fn pg_fixture() -> Option<PgFixture> {
    let url = std::env::var("LITESET_TEST_PG_URL").ok()?;
    let cfg: tokio_postgres::Config = url.parse().expect("LITESET_TEST_PG_URL");
    let host = match &cfg.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        #[allow(unreachable_patterns)]
        _ => "127.0.0.1".to_owned(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let suffix = format!(
        "{}_{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() + u128::from(rand_u32())
    );
    let role = format!("eng_role_{suffix}");
    let database = format!("eng_db_{suffix}");
    let a = admin(&url).await;
    a.batch_execute(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD '{}'",
        PASSWORD.replace('\'', "''")
    ))
    .await
    .expect("create role");
    a.batch_execute(&format!("CREATE DATABASE {database} OWNER {role}"))
        .await
        .expect("create database");
    let mut db_cfg = cfg.clone();
    db_cfg.dbname(&database);
    let (c, conn) = db_cfg.connect(tokio_postgres::NoTls).await.expect("db");
    tokio::spawn(conn);
    c.batch_execute(&format!(
        r#"
        SET ROLE {role};
        CREATE SCHEMA sales;
        CREATE TABLE sales.customers (
            id bigint PRIMARY KEY,
            email varchar(200) NOT NULL UNIQUE
        );
        CREATE TABLE sales."Orders" (
            id serial PRIMARY KEY,
            name varchar(50) NOT NULL,
            amount numeric(10,2),
            created timestamp,
            created_tz timestamptz,
            day date,
            flag boolean,
            price double precision,
            small smallint,
            ratio real,
            notes text,
            tags text[],
            span interval,
            customer_id bigint REFERENCES sales.customers (id),
            "user" int
        );
        COMMENT ON TABLE sales."Orders" IS 'All orders';
        COMMENT ON COLUMN sales."Orders".amount IS 'Total, in EUR';
        CREATE UNIQUE INDEX orders_name_day ON sales."Orders" (name, day);
        CREATE INDEX orders_lower_name ON sales."Orders" (lower(name));
        CREATE VIEW sales.big_orders AS SELECT * FROM sales."Orders" WHERE amount > 100;
        CREATE MATERIALIZED VIEW sales.order_totals AS
            SELECT sum(amount) AS total FROM sales."Orders";
        CREATE TABLE public.plain (x int);
        INSERT INTO sales.customers VALUES (1, 'a@example.com');
        INSERT INTO sales."Orders" (name, amount, customer_id) VALUES ('first', 10.5, 1);
        "#
    ))
    .await
    .expect("fixtures");
    Some(PgFixture {
        host,
        port,
        role,
        database,
    })
}

fn rand_u32() -> u32 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u64(42);
    // Truncation is the point: any 32 bits of a random hash.
    h.finish() as u32
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[tokio::test]
async fn postgres_catalog_and_queries() {
    let Some(fx) = pg_fixture().await else {
        eprintln!("skipped: LITESET_TEST_PG_URL is not set");
        return;
    };
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let s = spec(1, &fx.uri(PASSWORD));
    assert!(!format!("{s:?}").contains("w0rd"));
    engines.test_connection(&s).await.expect("test_connection");

    let schemas = engines.schemas(&s).await.expect("schemas");
    assert_eq!(schemas, vec!["public".to_owned(), "sales".to_owned()]);

    let tables = engines.tables(&s, "sales").await.expect("tables");
    let listed: Vec<(&str, TableKind)> = tables.iter().map(|t| (t.name.as_str(), t.kind)).collect();
    assert_eq!(
        listed,
        vec![
            ("Orders", TableKind::Table),
            ("big_orders", TableKind::View),
            ("customers", TableKind::Table),
            ("order_totals", TableKind::MaterializedView),
        ]
    );
    assert!(engines.tables(&s, "nope").await.expect("tables").is_empty());

    let md = engines
        .table_metadata(&s, Some("sales"), "Orders")
        .await
        .expect("metadata");
    assert_eq!(md.comment.as_deref(), Some("All orders"));
    assert_eq!(md.schema.as_deref(), Some("sales"));
    let types: Vec<(&str, &str, GenericType, bool)> = md
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str(), c.generic, c.is_dttm))
        .collect();
    use GenericType::*;
    assert_eq!(
        types,
        vec![
            ("id", "INTEGER", Numeric, false),
            ("name", "VARCHAR(50)", String, false),
            ("amount", "NUMERIC(10, 2)", Numeric, false),
            ("created", "TIMESTAMP WITHOUT TIME ZONE", Temporal, true),
            ("created_tz", "TIMESTAMP WITH TIME ZONE", Temporal, true),
            ("day", "DATE", Temporal, true),
            ("flag", "BOOLEAN", Boolean, false),
            ("price", "DOUBLE PRECISION", Numeric, false),
            ("small", "SMALLINT", Numeric, false),
            ("ratio", "REAL", Numeric, false),
            ("notes", "TEXT", String, false),
            ("tags", "TEXT[]", String, false),
            ("span", "INTERVAL", Numeric, false),
            ("customer_id", "BIGINT", Numeric, false),
            ("user", "INTEGER", Numeric, false),
        ]
    );
    assert!(!md.columns[1].nullable);
    assert!(md.columns[2].nullable);
    assert_eq!(md.columns[2].comment.as_deref(), Some("Total, in EUR"));
    let pk = md.primary_key.expect("pk");
    assert_eq!(pk.name.as_deref(), Some("Orders_pkey"));
    assert_eq!(pk.column_names, vec!["id"]);
    assert_eq!(md.foreign_keys.len(), 1);
    let fk = &md.foreign_keys[0];
    assert_eq!(fk.constrained_columns, vec!["customer_id"]);
    assert_eq!(fk.referred_schema.as_deref(), Some("sales"));
    assert_eq!(fk.referred_table, "customers");
    assert_eq!(fk.referred_columns, vec!["id"]);
    let idx: Vec<(&str, Vec<&str>, bool)> = md
        .indexes
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.column_names
                    .iter()
                    .map(std::string::String::as_str)
                    .collect(),
                i.unique,
            )
        })
        .collect();
    assert_eq!(
        idx,
        vec![
            ("orders_lower_name", vec!["lower(name::text)"], false),
            ("orders_name_day", vec!["name", "day"], true),
        ]
    );

    // Default schema: the search path.
    let plain = engines
        .table_metadata(&s, None, "plain")
        .await
        .expect("plain");
    assert_eq!(plain.schema.as_deref(), Some("public"));
    let view = engines
        .table_metadata(&s, Some("sales"), "big_orders")
        .await
        .expect("view");
    assert_eq!(view.kind, TableKind::View);

    for (schema, table) in [
        (Some("sales"), "orders"),
        (Some("sales"), "x'; DROP TABLE sales.customers; --"),
        (Some("nope"), "Orders"),
        (None, "Orders"),
    ] {
        let err = engines
            .table_metadata(&s, schema, table)
            .await
            .expect_err("missing");
        assert_eq!(
            err,
            EngineError::TableNotFound {
                table: table.to_owned()
            }
        );
        assert_eq!(err.error_type(), "TABLE_DOES_NOT_EXIST_ERROR");
    }

    // Virtual dataset columns.
    let cols = engines
        .query_columns(
            &s,
            "SELECT id, name, amount, created, 1 AS one, now() AS at, \
             'x'::varchar(7) AS v FROM sales.\"Orders\";",
        )
        .await
        .expect("query columns");
    let got: Vec<(&str, &str)> = cols
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("id", "INTEGER"),
            ("name", "VARCHAR(50)"),
            ("amount", "NUMERIC(10, 2)"),
            ("created", "TIMESTAMP WITHOUT TIME ZONE"),
            ("one", "INTEGER"),
            ("at", "TIMESTAMP WITH TIME ZONE"),
            ("v", "VARCHAR(7)"),
        ]
    );
    assert!(cols[3].is_dttm);

    for sql in [
        "DELETE FROM sales.\"Orders\"",
        "DELETE FROM sales.\"Orders\" RETURNING *",
        "WITH d AS (DELETE FROM sales.\"Orders\" RETURNING *) SELECT * FROM d",
        "SELECT * INTO sales.stolen FROM sales.\"Orders\"",
        "DROP TABLE sales.customers CASCADE",
        "CREATE TABLE sales.t2 (x int)",
    ] {
        let err = engines.query_columns(&s, sql).await.expect_err(sql);
        assert_eq!(err, EngineError::NotReadOnly, "{sql}");
    }
    assert_eq!(
        engines
            .query_columns(&s, "SELECT 1; DELETE FROM sales.\"Orders\"")
            .await,
        Err(EngineError::MultipleStatements)
    );
    let err = engines
        .query_columns(&s, "SELEC 1")
        .await
        .expect_err("syntax");
    assert_eq!(err.error_type(), "SYNTAX_ERROR");
    assert!(err.message().contains("\"SELEC\""), "{}", err.message());
    assert_eq!(
        engines.query_columns(&s, "SELECT * FROM sales.nope").await,
        Err(EngineError::TableNotFound {
            table: "sales.nope".into()
        })
    );
    // Nothing above ran: the rows and tables are all still there.
    let again = engines.tables(&s, "sales").await.expect("tables again");
    assert_eq!(again.len(), 4);
    let cols = engines
        .query_columns(&s, "SELECT count(*) AS n FROM sales.customers")
        .await
        .expect("count");
    assert_eq!(cols[0].type_name, "BIGINT");
}

#[tokio::test]
async fn postgres_connection_errors() {
    let Some(fx) = pg_fixture().await else {
        eprintln!("skipped: LITESET_TEST_PG_URL is not set");
        return;
    };
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());

    // Wrong password, through test_connection and through a pool.
    let bad = spec(2, &fx.uri("wrong-w0rd"));
    match engines.test_connection(&bad).await {
        Ok(()) => panic!(
            "a wrong password was accepted for {}: the test cluster must not trust it",
            fx.role
        ),
        Err(err) => {
            assert_no_password(&err);
            assert_eq!(
                err,
                EngineError::InvalidPassword {
                    username: fx.role.clone()
                }
            );
            assert_eq!(
                err.message(),
                format!(
                    "The password provided for username \"{}\" is incorrect.",
                    fx.role
                )
            );
            assert_eq!(err.invalid(), &["username", "password"]);
            let started = Instant::now();
            let pooled = engines
                .schemas(&bad)
                .await
                .expect_err("pooled bad password");
            assert_eq!(pooled, err);
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "the real cause, not a pool timeout"
            );
        }
    }

    // Unknown role: scram hides it behind "password authentication failed"; trust names it.
    let ghost = fx.uri(PASSWORD).replacen(&fx.role, "ghost_role", 1);
    let err = engines
        .test_connection(&spec(3, &ghost))
        .await
        .expect_err("ghost");
    assert!(
        matches!(
            &err,
            EngineError::InvalidUsername { username } | EngineError::InvalidPassword { username }
                if username == "ghost_role"
        ),
        "{err:?}"
    );

    let nodb = fx.uri(PASSWORD).replace(&fx.database, "no_such_db");
    let err = engines
        .test_connection(&spec(4, &nodb))
        .await
        .expect_err("no db");
    assert_eq!(
        err,
        EngineError::UnknownDatabase {
            database: "no_such_db".into()
        }
    );
    assert_eq!(
        err.message(),
        "Unable to connect to database \"no_such_db\"."
    );

    let port = free_port();
    let closed = format!("postgresql://u:{PASSWORD}@127.0.0.1:{port}/d").replace('"', "%22");
    let err = engines
        .test_connection(&spec(5, &closed))
        .await
        .expect_err("closed");
    assert_eq!(
        err,
        EngineError::PortClosed {
            host: "127.0.0.1".into(),
            port
        }
    );
    assert_eq!(err.error_type(), "CONNECTION_PORT_CLOSED_ERROR");
    assert_no_password(&err);

    let err = engines
        .test_connection(&spec(6, "postgresql://u:pw@no-such-host.invalid:5432/d"))
        .await
        .expect_err("dns");
    assert_eq!(
        err,
        EngineError::InvalidHostname {
            host: "no-such-host.invalid".into()
        }
    );

    // A blackholed address: unreachable at once, or no answer within the connect timeout
    // (some sandboxes accept and drop every outbound connection instead).
    let err = engines
        .test_connection(&spec(7, "postgresql://u:pw@10.255.255.1:5432/d"))
        .await
        .expect_err("down");
    assert!(
        matches!(
            err,
            EngineError::HostDown { port: 5432, .. }
                | EngineError::Timeout
                | EngineError::Other { .. }
        ),
        "{err:?}"
    );

    // The test cluster has no TLS: `require` is refused with libpq's words, `prefer` goes on
    // in the clear.
    let tls = fx.uri(PASSWORD) + "?sslmode=require";
    let err = engines
        .test_connection(&spec(8, &tls))
        .await
        .expect_err("no TLS");
    assert_no_password(&err);
    assert!(
        err.message()
            .ends_with("failed: server does not support SSL, but SSL was required"),
        "{err:?}"
    );
    let prefer = fx.uri(PASSWORD) + "?sslmode=prefer";
    engines
        .test_connection(&spec(8, &prefer))
        .await
        .expect("prefer");
}

#[tokio::test]
async fn postgres_pools_follow_revisions() {
    let Some(fx) = pg_fixture().await else {
        eprintln!("skipped: LITESET_TEST_PG_URL is not set");
        return;
    };
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let good = spec(10, &fx.uri(PASSWORD));
    engines.schemas(&good).await.expect("schemas");
    // The row is edited to point elsewhere: a new revision gets a new pool.
    let mut moved = spec(10, &fx.uri(PASSWORD).replace(&fx.database, "no_such_db"));
    moved.revision = "2".into();
    assert!(matches!(
        engines.schemas(&moved).await,
        Err(EngineError::UnknownDatabase { .. })
    ));
    engines.schemas(&good).await.expect("back to the first");
    engines.forget(10);
    engines
        .schemas(&good)
        .await
        .expect("recreated after forget");
    // Concurrent use stays within the pool and completes.
    let mut tasks = Vec::new();
    for _ in 0..12 {
        let engines = engines.clone();
        let good = good.clone();
        tasks.push(tokio::spawn(async move {
            engines.tables(&good, "sales").await.map(|t| t.len())
        }));
    }
    for t in tasks {
        assert_eq!(t.await.expect("join").expect("tables"), 4);
    }
}

fn sqlite_fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("examples.db");
    let conn = rusqlite::Connection::open(&path).expect("create");
    conn.execute_batch(
        r#"
        CREATE TABLE customers (id INTEGER PRIMARY KEY, email VARCHAR(200) NOT NULL UNIQUE);
        CREATE TABLE "Orders" (
            id INTEGER PRIMARY KEY,
            name VARCHAR(50) NOT NULL,
            amount NUMERIC(10,2),
            created DATETIME,
            flag BOOLEAN,
            price REAL,
            odd STRANGE_TYPE,
            customer_id INTEGER REFERENCES customers,
            untyped
        );
        CREATE UNIQUE INDEX orders_name ON "Orders" (name, created);
        CREATE VIEW big AS SELECT * FROM "Orders" WHERE amount > 100;
        INSERT INTO customers VALUES (1, 'a@example.com');
        INSERT INTO "Orders" (name, amount, customer_id) VALUES ('first', 10.5, 1);
        "#,
    )
    .expect("fixtures");
    (dir, path)
}

#[tokio::test]
async fn sqlite_catalog_and_queries() {
    let (_dir, path) = sqlite_fixture();
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let s = spec(20, &format!("sqlite:///{}", path.display()));
    engines.test_connection(&s).await.expect("test");
    assert_eq!(engines.schemas(&s).await.expect("schemas"), vec!["main"]);
    let tables = engines.tables(&s, "main").await.expect("tables");
    let listed: Vec<(&str, TableKind)> = tables.iter().map(|t| (t.name.as_str(), t.kind)).collect();
    assert_eq!(
        listed,
        vec![
            ("Orders", TableKind::Table),
            ("big", TableKind::View),
            ("customers", TableKind::Table),
        ]
    );
    assert!(engines.tables(&s, "other").await.expect("other").is_empty());

    let md = engines
        .table_metadata(&s, Some("main"), "Orders")
        .await
        .expect("metadata");
    let types: Vec<(&str, &str, GenericType)> = md
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str(), c.generic))
        .collect();
    use GenericType::*;
    assert_eq!(
        types,
        vec![
            ("id", "INTEGER", Numeric),
            ("name", "VARCHAR(50)", String),
            ("amount", "NUMERIC(10, 2)", Numeric),
            ("created", "DATETIME", Temporal),
            ("flag", "BOOLEAN", Boolean),
            ("price", "REAL", Numeric),
            ("odd", "NUMERIC", Numeric),
            ("customer_id", "INTEGER", Numeric),
            ("untyped", "", String),
        ]
    );
    assert!(!md.columns[1].nullable);
    assert_eq!(
        md.primary_key.expect("pk").column_names,
        vec!["id".to_owned()]
    );
    assert_eq!(md.foreign_keys.len(), 1);
    assert_eq!(md.foreign_keys[0].referred_table, "customers");
    assert_eq!(md.foreign_keys[0].referred_columns, vec!["id"]);
    assert_eq!(md.indexes.len(), 1);
    assert_eq!(md.indexes[0].column_names, vec!["name", "created"]);
    assert!(md.indexes[0].unique);

    assert_eq!(
        engines
            .table_metadata(&s, None, "x'); DROP TABLE customers; --")
            .await,
        Err(EngineError::TableNotFound {
            table: "x'); DROP TABLE customers; --".into()
        })
    );
    assert!(matches!(
        engines.table_metadata(&s, Some("other"), "Orders").await,
        Err(EngineError::SchemaNotFound { .. })
    ));

    let cols = engines
        .query_columns(
            &s,
            "SELECT name, amount, created, 1 AS one, 2.5 AS half, 'x' AS s, NULL AS n \
             FROM \"Orders\";",
        )
        .await
        .expect("columns");
    let got: Vec<(&str, &str, GenericType)> = cols
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str(), c.generic))
        .collect();
    assert_eq!(
        got,
        vec![
            ("name", "VARCHAR(50)", String),
            ("amount", "NUMERIC(10, 2)", Numeric),
            ("created", "DATETIME", Temporal),
            ("one", "INT", Numeric),
            ("half", "FLOAT", Numeric),
            ("s", "STRING", String),
            ("n", "STRING", String),
        ]
    );
    for sql in [
        "DELETE FROM customers",
        "INSERT INTO customers VALUES (2, 'b')",
        "DROP TABLE customers",
    ] {
        assert_eq!(
            engines.query_columns(&s, sql).await,
            Err(EngineError::NotReadOnly),
            "{sql}"
        );
    }
    assert_eq!(
        engines
            .query_columns(&s, "SELECT 1; DELETE FROM customers")
            .await,
        Err(EngineError::MultipleStatements)
    );
    assert!(matches!(
        engines.query_columns(&s, "SELEC 1").await,
        Err(EngineError::Syntax { .. })
    ));
    assert_eq!(
        engines.query_columns(&s, "SELECT * FROM nope").await,
        Err(EngineError::TableNotFound {
            table: "nope".into()
        })
    );
    let started = Instant::now();
    assert_eq!(
        engines
            .query_columns(
                &s,
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
                 SELECT max(x) FROM c",
            )
            .await,
        Err(EngineError::StatementTimeout)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Still usable afterwards, and nothing was deleted.
    assert_eq!(engines.tables(&s, "main").await.expect("tables").len(), 3);
}

#[tokio::test]
async fn sqlite_missing_or_foreign_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let missing = dir.path().join("missing.db");
    let s = spec(30, &format!("sqlite:///{}", missing.display()));
    let err = engines.test_connection(&s).await.expect_err("missing");
    assert_eq!(err.error_type(), "CONNECTION_UNKNOWN_DATABASE_ERROR");
    assert_eq!(engines.schemas(&s).await, Ok(vec!["main".to_owned()]));
    assert_eq!(
        engines
            .tables(&s, "main")
            .await
            .expect_err("pooled missing"),
        err
    );
    assert!(!missing.exists(), "a missing file must never be created");

    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "this is not a database, it is a long enough text file",
    )
    .expect("write");
    let err = engines
        .test_connection(&spec(31, &format!("sqlite:///{}", text.display())))
        .await
        .expect_err("not a db");
    assert_eq!(err.error_type(), "GENERIC_DB_ENGINE_ERROR");
}

// ---------------------------------------------------------------------------------------------
// TLS (a cluster that takes TCP connections over TLS only; see `liteset_tests::TlsPg`)
// ---------------------------------------------------------------------------------------------

const TLS_PASSWORD: &str = "tls-s3cr3t-w0rd";

/// A role with [`TLS_PASSWORD`] and its database on the TLS cluster; `uri(host, query)` names
/// them at `host` with `query` appended.
struct TlsFixture {
    pg: &'static liteset_tests::TlsPg,
    role: String,
    database: String,
}

impl TlsFixture {
    async fn new() -> TlsFixture {
        let pg = liteset_tests::tls_pg().await;
        let (role, database) = pg.role_and_database(TLS_PASSWORD).await;
        TlsFixture { pg, role, database }
    }

    fn uri(&self, host: &str, query: &str) -> String {
        format!(
            "postgresql://{}:{TLS_PASSWORD}@{host}:{}/{}{query}",
            self.role,
            self.pg.port(),
            self.database
        )
    }

    fn root_file(&self, mode: &str, file: &std::path::Path) -> String {
        format!("?sslmode={mode}&sslrootcert={}", file.display())
    }
}

fn tls_spec(id: i64, uri: &str, server_cert: Option<&str>) -> ConnectionSpec {
    ConnectionSpec {
        server_cert: server_cert.map(str::to_owned),
        ..spec(id, uri)
    }
}

fn assert_tls_refused(err: &EngineError, wanted: &str) {
    assert!(
        matches!(err, EngineError::Other { .. }),
        "a TLS failure is a generic engine error, as in Superset: {err:?}"
    );
    assert!(err.message().contains(wanted), "{wanted:?} not in {err:?}");
    assert!(
        !err.message().contains(TLS_PASSWORD),
        "password leaked: {err:?}"
    );
    assert!(
        !format!("{err:?}").contains(TLS_PASSWORD),
        "password leaked: {err:?}"
    );
}

const READ: liteset::engines::ExecOptions = liteset::engines::ExecOptions {
    read_only: true,
    max_rows: 100,
};

/// Whether this session's own connection is encrypted, as the server sees it.
const SSL_IN_USE: &str = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()";

#[tokio::test]
async fn postgres_tls_verifies_the_server_as_libpq_does() {
    let fx = TlsFixture::new().await;
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let (ca, other) = (fx.pg.ca_file(), fx.pg.other_ca_file());

    // verify-full with the right root, as a file: the DNS name and the IP address in the SAN.
    for host in ["localhost", "127.0.0.1"] {
        let s = tls_spec(1, &fx.uri(host, &fx.root_file("verify-full", ca)), None);
        engines
            .test_connection(&s)
            .await
            .unwrap_or_else(|e| panic!("{host}: {e:?}"));
    }
    // The same root as the database's server_cert: verify-full by default (Superset's rule),
    // through a pool, over TLS as the server sees it.
    let pem = tls_spec(2, &fx.uri("localhost", ""), Some(fx.pg.ca_pem()));
    engines.test_connection(&pem).await.expect("server_cert");
    let rows = engines
        .execute(&pem, SSL_IN_USE, READ)
        .await
        .expect("query");
    assert_eq!(rows.rows, vec![vec![liteset::engines::Cell::Bool(true)]]);

    // A root that did not sign the server's certificate: as a file, as server_cert, and
    // through a pool (the pool's background connect reports the same cause).
    let wrong = tls_spec(
        3,
        &fx.uri("localhost", &fx.root_file("verify-full", other)),
        None,
    );
    let err = engines.test_connection(&wrong).await.expect_err("wrong CA");
    assert_tls_refused(&err, "SSL error: certificate verify failed");
    let wrong_pem = tls_spec(4, &fx.uri("localhost", ""), Some(fx.pg.other_ca_pem()));
    let err = engines
        .test_connection(&wrong_pem)
        .await
        .expect_err("wrong CA");
    assert_tls_refused(&err, "certificate verify failed");
    let err = engines
        .schemas(&wrong_pem)
        .await
        .expect_err("wrong CA, pooled");
    assert_tls_refused(&err, "certificate verify failed");
    // `require` with a root checks the chain (libpq's rule), so the wrong root still fails.
    let wrong_require = tls_spec(
        5,
        &fx.uri("127.0.0.1", &fx.root_file("require", other)),
        None,
    );
    let err = engines
        .test_connection(&wrong_require)
        .await
        .expect_err("require + wrong CA");
    assert_tls_refused(&err, "certificate verify failed");
    // No root at all: verify-full trusts the public roots only, which signed nothing here.
    let public = tls_spec(6, &fx.uri("localhost", "?sslmode=verify-full"), None);
    let err = engines
        .test_connection(&public)
        .await
        .expect_err("public roots");
    assert_tls_refused(&err, "certificate verify failed");

    // 127.0.0.2 reaches the same server under a name its certificate does not carry:
    // verify-full refuses it, verify-ca (chain only) accepts it.
    let host = tls_spec(
        7,
        &fx.uri("127.0.0.2", &fx.root_file("verify-full", ca)),
        None,
    );
    let err = engines
        .test_connection(&host)
        .await
        .expect_err("wrong host name");
    assert_tls_refused(&err, "does not match host name \"127.0.0.2\"");
    let chain = tls_spec(
        8,
        &fx.uri("127.0.0.2", &fx.root_file("verify-ca", ca)),
        None,
    );
    engines
        .test_connection(&chain)
        .await
        .expect("verify-ca ignores the name");
    let err = engines
        .test_connection(&tls_spec(9, &fx.uri("127.0.0.2", ""), Some(fx.pg.ca_pem())))
        .await
        .expect_err("server_cert means verify-full");
    assert_tls_refused(&err, "does not match host name");

    // Encryption without verification: require and prefer take any certificate.
    for query in ["?sslmode=require", "?sslmode=prefer", ""] {
        let s = tls_spec(10, &fx.uri("127.0.0.2", query), None);
        let rows = engines.execute(&s, SSL_IN_USE, READ).await;
        assert_eq!(
            rows.expect(query).rows,
            vec![vec![liteset::engines::Cell::Bool(true)]]
        );
        engines.forget(10);
    }
    // sslmode=disable: the server has no entry for a connection in the clear.
    let plain = tls_spec(11, &fx.uri("127.0.0.1", "?sslmode=disable"), None);
    let err = engines.test_connection(&plain).await.expect_err("disable");
    assert!(err.message().contains("no pg_hba.conf entry"), "{err:?}");
    assert!(err.message().contains("no encryption"), "{err:?}");

    // Options that cannot be honoured are refused, not ignored.
    for query in [
        "?sslcert=/tmp/client.pem",
        "?sslmode=verify",
        "?sslrootcert=/dev/zero",
    ] {
        let s = tls_spec(12, &fx.uri("localhost", query), None);
        let err = engines.test_connection(&s).await.expect_err(query);
        assert!(!err.message().contains(TLS_PASSWORD), "{err:?}");
    }
}

#[tokio::test]
async fn postgres_tls_cancels_over_tls() {
    let fx = TlsFixture::new().await;
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let s = tls_spec(
        1,
        &fx.uri("localhost", &fx.root_file("verify-full", fx.pg.ca_file())),
        None,
    );
    // Dropped before it ends: the statement is cancelled inside PostgreSQL, which only a
    // cancel request on a connection of its own (TLS too, here) can do.
    let slow = engines.execute(&s, "SELECT pg_sleep(5)", READ);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), slow)
            .await
            .is_err()
    );
    let admin = fx.pg.admin().await;
    let started = Instant::now();
    loop {
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND state = 'active'",
                &[&fx.role],
            )
            .await
            .expect("activity")
            .get(0);
        if n == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_millis(1200),
            "the query was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The pooled connection is usable again.
    engines
        .execute(&s, "SELECT 1", READ)
        .await
        .expect("after cancel");
}

/// The database API over TLS, end to end through `liteset serve`: the connection dialog's test,
/// a saved database whose `server_cert` is its root, SQL Lab on it, and the refusals.
#[tokio::test]
async fn database_api_over_tls() {
    use liteset_tests::{ADMIN_PASSWORD, Api, TestServer};
    use serde_json::json;
    let fx = TlsFixture::new().await;
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let uri = fx.uri("localhost", "?sslmode=verify-full");
    let test =
        |cert: &str| json!({"sqlalchemy_uri": uri, "database_name": "tls", "server_cert": cert});

    let (s, r) = api
        .post("/api/v1/database/test_connection/", test(fx.pg.ca_pem()))
        .await;
    assert_eq!((s.as_u16(), &r), (200, &json!({"message": "OK"})));
    // The wrong root: Superset's 400 with its SIP-40 envelope, the password nowhere.
    let (s, r) = api
        .post(
            "/api/v1/database/test_connection/",
            test(fx.pg.other_ca_pem()),
        )
        .await;
    assert_eq!(s.as_u16(), 400, "{r}");
    assert_eq!(
        r["errors"][0]["error_type"], "GENERIC_DB_ENGINE_ERROR",
        "{r}"
    );
    let message = r["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("SSL error: certificate verify failed"),
        "{r}"
    );
    assert!(!r.to_string().contains(TLS_PASSWORD), "password in {r}");
    // Not a certificate at all: Superset's field error, before anything connects.
    let (s, r) = api
        .post(
            "/api/v1/database/test_connection/",
            test("not a certificate"),
        )
        .await;
    assert_eq!(
        (s.as_u16(), &r),
        (
            400,
            &json!({"message": {"server_cert": ["Invalid certificate"]}})
        )
    );

    // Saved with the wrong root: refused (the create tests the connection first).
    let create = |cert: &str| {
        json!({"database_name": "tls", "sqlalchemy_uri": uri, "server_cert": cert,
               "expose_in_sqllab": true})
    };
    let (s, r) = api
        .post("/api/v1/database/", create(fx.pg.other_ca_pem()))
        .await;
    assert_eq!(s.as_u16(), 422, "{r}");
    assert!(!r.to_string().contains(TLS_PASSWORD), "password in {r}");
    let (s, r) = api
        .post(
            "/api/v1/database/",
            create("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        )
        .await;
    assert_eq!(
        (s.as_u16(), &r),
        (
            400,
            &json!({"message": {"server_cert": ["Invalid certificate"]}})
        )
    );
    let (s, r) = api.post("/api/v1/database/", create(fx.pg.ca_pem())).await;
    assert_eq!(s.as_u16(), 201, "{r}");
    let id = r["id"].as_i64().expect("id");

    // SQL Lab runs on it, over TLS.
    let sql = json!({"database_id": id, "sql": format!("{SSL_IN_USE}"), "runAsync": false});
    let (s, r) = api.post("/api/v1/sqllab/execute/", sql.clone()).await;
    assert_eq!(s.as_u16(), 200, "{r}");
    assert_eq!(r["data"], json!([{"ssl": true}]), "{r}");

    // The stored certificate changes: the pool is rebuilt with it and refuses the server.
    let (s, r) = api
        .put(
            &format!("/api/v1/database/{id}"),
            json!({"server_cert": fx.pg.other_ca_pem()}),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{r}");
    let (s, r) = api.post("/api/v1/sqllab/execute/", sql).await;
    assert_ne!(s.as_u16(), 200, "{r}");
    assert!(r.to_string().contains("certificate verify failed"), "{r}");
    assert!(!r.to_string().contains(TLS_PASSWORD), "password in {r}");
    assert!(
        !server.logs().contains(TLS_PASSWORD),
        "password in the logs"
    );
}

// ------------------------------------------------------------------------------------------
// MySQL / MariaDB (the server `tests/mariadb.sh` starts)
// ------------------------------------------------------------------------------------------

fn rw() -> liteset::engines::ExecOptions {
    liteset::engines::ExecOptions {
        read_only: false,
        max_rows: 10_000,
    }
}

fn ro(max_rows: usize) -> liteset::engines::ExecOptions {
    liteset::engines::ExecOptions {
        read_only: true,
        max_rows,
    }
}

/// Creates `eng_*` fixtures in `liteset_test` as the admin user.
async fn mysql_fixture(engines: &Engines, admin: &ConnectionSpec) {
    for sql in [
        "DROP VIEW IF EXISTS eng_big_orders",
        "DROP TABLE IF EXISTS eng_orders",
        "DROP TABLE IF EXISTS eng_customers",
        "DROP TABLE IF EXISTS eng_evil",
        "CREATE TABLE eng_customers (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
        "CREATE TABLE eng_orders (\
            id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, \
            name VARCHAR(50) NOT NULL, \
            amount DECIMAL(10,2) COMMENT 'Total, in EUR', \
            created DATETIME(6), day DATE, ts TIMESTAMP NULL, flag TINYINT(1), \
            big BIGINT UNSIGNED, ratio FLOAT, price DOUBLE, bits BIT(8), yr YEAR, doc JSON, \
            raw VARBINARY(4), notes TEXT, customer_id INT, \
            KEY orders_name_day (name, day), UNIQUE KEY orders_big (big), \
            CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES eng_customers (id)\
         ) COMMENT 'All orders'",
        "CREATE VIEW eng_big_orders AS SELECT id, amount FROM eng_orders WHERE amount > 100",
        "INSERT INTO eng_customers VALUES (1, 'Ana')",
        "INSERT INTO eng_orders (name, amount, created, day, ts, flag, big, ratio, price, bits, \
            yr, doc, raw, notes, customer_id) VALUES ('a''b\\\\c\"d', 123.45, \
            '2024-01-02 03:04:05.678900', '2024-01-02', '2024-01-02 03:04:05', 1, \
            18446744073709551615, 0.1, 2.5, b'00000101', 2024, '{\"k\": 1}', X'DEADBEEF', \
            'ünï', 1)",
        "INSERT INTO eng_orders (name, amount) VALUES ('second', 5), ('third', 7)",
    ] {
        engines.execute(admin, sql, rw()).await.expect(sql);
    }
}

fn no_secret(err: &EngineError, secret: &str) {
    for shown in [format!("{err:?}"), err.message()] {
        assert!(!shown.contains(secret), "password leaked: {shown}");
    }
}

#[tokio::test]
async fn mysql_catalog_and_queries() {
    use liteset::engines::Cell;
    let Some(my) = liteset_tests::mariadb::mariadb() else {
        return;
    };
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let admin = spec(201, &my.admin_url);
    mysql_fixture(&engines, &admin).await;
    let s = spec(202, &my.reader_url);
    assert!(!format!("{s:?}").contains("p#ss"));
    engines.test_connection(&s).await.expect("test_connection");

    let schemas = engines.schemas(&s).await.expect("schemas");
    assert_eq!(schemas, vec!["liteset_test".to_owned()]);
    let all = engines.schemas(&admin).await.expect("admin schemas");
    for system in ["information_schema", "mysql", "performance_schema", "sys"] {
        assert!(!all.iter().any(|s| s == system), "{system} in {all:?}");
    }

    let tables = engines.tables(&s, "liteset_test").await.expect("tables");
    let listed: Vec<(&str, TableKind)> = tables
        .iter()
        .filter(|t| t.name.starts_with("eng_"))
        .map(|t| (t.name.as_str(), t.kind))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("eng_big_orders", TableKind::View),
            ("eng_customers", TableKind::Table),
            ("eng_orders", TableKind::Table),
        ]
    );
    assert!(engines.tables(&s, "nope").await.expect("tables").is_empty());

    let md = engines
        .table_metadata(&s, Some("liteset_test"), "eng_orders")
        .await
        .expect("metadata");
    assert_eq!(md.comment.as_deref(), Some("All orders"));
    assert_eq!(md.schema.as_deref(), Some("liteset_test"));
    use GenericType::*;
    let types: Vec<(&str, &str, GenericType)> = md
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str(), c.generic))
        .collect();
    assert_eq!(
        types,
        vec![
            ("id", "INTEGER(11)", Numeric),
            ("name", "VARCHAR(50)", String),
            ("amount", "DECIMAL(10, 2)", Numeric),
            ("created", "DATETIME(6)", Temporal),
            ("day", "DATE", Temporal),
            ("ts", "TIMESTAMP", Temporal),
            ("flag", "TINYINT(1)", Numeric),
            ("big", "BIGINT(20) UNSIGNED", Numeric),
            ("ratio", "FLOAT", Numeric),
            ("price", "DOUBLE", Numeric),
            ("bits", "BIT(8)", Numeric),
            ("yr", "YEAR(4)", String),
            ("doc", "LONGTEXT", String),
            ("raw", "VARBINARY(4)", String),
            ("notes", "TEXT", String),
            ("customer_id", "INTEGER(11)", Numeric),
        ]
    );
    assert!(md.columns[3].is_dttm);
    assert!(!md.columns[1].nullable);
    assert!(md.columns[2].nullable);
    assert_eq!(md.columns[2].comment.as_deref(), Some("Total, in EUR"));
    let pk = md.primary_key.expect("pk");
    assert_eq!(pk.name, None);
    assert_eq!(pk.column_names, vec!["id"]);
    assert_eq!(md.foreign_keys.len(), 1);
    let fk = &md.foreign_keys[0];
    assert_eq!(fk.name.as_deref(), Some("fk_customer"));
    assert_eq!(fk.constrained_columns, vec!["customer_id"]);
    assert_eq!(fk.referred_schema, None);
    assert_eq!(fk.referred_table, "eng_customers");
    assert_eq!(fk.referred_columns, vec!["id"]);
    let idx: Vec<(&str, Vec<std::string::String>, bool)> = md
        .indexes
        .iter()
        .map(|i| (i.name.as_str(), i.column_names.clone(), i.unique))
        .collect();
    assert_eq!(
        idx,
        vec![
            ("fk_customer", vec!["customer_id".to_owned()], false),
            ("orders_big", vec!["big".to_owned()], true),
            (
                "orders_name_day",
                vec!["name".to_owned(), "day".to_owned()],
                false
            ),
        ]
    );
    let plain = engines
        .table_metadata(&s, None, "eng_customers")
        .await
        .expect("default schema");
    assert_eq!(plain.schema.as_deref(), Some("liteset_test"));
    let view = engines
        .table_metadata(&s, Some("liteset_test"), "eng_big_orders")
        .await
        .expect("view");
    assert_eq!(view.kind, TableKind::View);
    assert_eq!(view.comment, None);
    for (schema, table) in [
        (Some("liteset_test"), "nope"),
        (Some("liteset_test"), "x'; DROP TABLE eng_customers; --"),
        (Some("nope"), "eng_orders"),
    ] {
        let err = engines
            .table_metadata(&s, schema, table)
            .await
            .expect_err("missing");
        assert_eq!(
            err,
            EngineError::TableNotFound {
                table: table.to_owned()
            }
        );
    }

    // Virtual dataset columns: prepared, never run.
    let cols = engines
        .query_columns(
            &s,
            "SELECT id, name, amount, created, day, flag, big, 1 AS one, NOW() AS at, \
             \"x\" AS v FROM eng_orders;",
        )
        .await
        .expect("query columns");
    let got: Vec<(&str, &str, GenericType)> = cols
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str(), c.generic))
        .collect();
    assert_eq!(
        got,
        vec![
            ("id", "INTEGER", Numeric),
            ("name", "VARCHAR", String),
            ("amount", "DECIMAL", Numeric),
            ("created", "DATETIME", Temporal),
            ("day", "DATE", Temporal),
            ("flag", "TINYINT", Numeric),
            ("big", "BIGINT UNSIGNED", Numeric),
            ("one", "INTEGER", Numeric),
            ("at", "DATETIME", Temporal),
            ("v", "VARCHAR", String),
        ]
    );
    // As a user who could write and read files, nothing but a query passes.
    let filer = spec(203, &my.file_url);
    let outfile = format!(
        "{}/qc_out",
        my.files_dir.clone().unwrap_or_else(|| "/tmp".into())
    );
    for sql in [
        "DELETE FROM eng_orders".to_owned(),
        "CREATE TABLE eng_evil (a INT)".to_owned(),
        "DROP TABLE eng_customers".to_owned(),
        format!("SELECT * FROM eng_orders INTO OUTFILE '{outfile}'"),
        "SELECT id INTO @x FROM eng_orders LIMIT 1".to_owned(),
        "SET @a = 1".to_owned(),
        "DO 1".to_owned(),
    ] {
        let err = engines.query_columns(&filer, &sql).await.expect_err(&sql);
        assert_eq!(err, EngineError::NotReadOnly, "{sql}");
    }
    assert!(
        engines
            .query_columns(&filer, "SELECT 1; DELETE FROM eng_orders")
            .await
            .is_err()
    );
    let err = engines
        .query_columns(&s, "SELEC 1")
        .await
        .expect_err("syntax");
    assert_eq!(err.error_type(), "SYNTAX_ERROR");
    assert_eq!(
        engines.query_columns(&s, "SELECT * FROM nope").await,
        Err(EngineError::TableNotFound {
            table: "liteset_test.nope".into()
        })
    );
    assert!(!std::path::Path::new(&outfile).exists());

    // Rows, typed.
    let rs = engines
        .execute(
            &s,
            "SELECT name, amount, created, day, ts, flag, big, ratio, price, bits, yr, doc, raw, \
             notes, NULL AS nothing, CAST('12:30:00' AS TIME) AS t FROM eng_orders ORDER BY id",
            ro(2),
        )
        .await
        .expect("select");
    assert_eq!(rs.rows.len(), 2);
    let d = chrono::NaiveDate::from_ymd_opt(2024, 1, 2).unwrap();
    assert_eq!(
        rs.rows[0],
        vec![
            Cell::Text("a'b\\c\"d".into()),
            Cell::Decimal("123.45".into()),
            Cell::Timestamp(d.and_hms_micro_opt(3, 4, 5, 678_900).unwrap()),
            Cell::Date(d),
            Cell::Timestamp(d.and_hms_opt(3, 4, 5).unwrap()),
            Cell::Int(1),
            Cell::Decimal("18446744073709551615".into()),
            Cell::Float(0.1),
            Cell::Float(2.5),
            Cell::Int(5),
            Cell::Int(2024),
            Cell::Text("{\"k\": 1}".into()),
            Cell::Text("\\xdeadbeef".into()),
            Cell::Text("ünï".into()),
            Cell::Null,
            Cell::Time(chrono::NaiveTime::from_hms_opt(12, 30, 0).unwrap()),
        ]
    );
    let names: Vec<&str> = rs.columns.iter().map(|c| c.type_name.as_str()).collect();
    assert_eq!(&names[..4], &["VARCHAR", "DECIMAL", "DATETIME", "DATE"]);

    // The pool still works after a result cut at max_rows (that connection was closed).
    for _ in 0..5 {
        let rs = engines
            .execute(&s, "SELECT COUNT(*) FROM eng_orders", ro(10))
            .await
            .expect("count");
        assert_eq!(rs.rows, vec![vec![Cell::Int(3)]]);
    }

    // Read-only statements hold even for a user whose privileges would allow the write.
    for sql in [
        "DELETE FROM eng_orders".to_owned(),
        "UPDATE eng_orders SET amount = 0".to_owned(),
        "CREATE TABLE eng_evil (a INT)".to_owned(),
        "DROP VIEW eng_big_orders".to_owned(),
        format!("SELECT * FROM eng_orders INTO OUTFILE '{outfile}'"),
        format!("SELECT 'x' INTO DUMPFILE '{outfile}'"),
        "DELETE FROM eng_orders RETURNING id".to_owned(),
        "INSERT INTO eng_customers VALUES (2, 'Eve') RETURNING id".to_owned(),
    ] {
        let err = engines
            .execute(&filer, &sql, ro(100))
            .await
            .expect_err(&sql);
        assert_eq!(err, EngineError::NotReadOnly, "{sql}: {err:?}");
    }
    assert!(!std::path::Path::new(&outfile).exists());
    let rs = engines
        .execute(&admin, "SELECT COUNT(*) FROM eng_orders", ro(10))
        .await
        .expect("count");
    assert_eq!(rs.rows, vec![vec![Cell::Int(3)]]);
    assert!(
        engines
            .table_metadata(&admin, Some("liteset_test"), "eng_evil")
            .await
            .is_err()
    );

    // Errors.
    let err = engines
        .execute(&s, "SELECT * FROM eng_nope", ro(10))
        .await
        .expect_err("missing");
    assert_eq!(
        err,
        EngineError::TableNotFound {
            table: "liteset_test.eng_nope".into()
        }
    );
    let err = engines
        .execute(&s, "SELECT 1 FORM eng_orders", ro(10))
        .await
        .expect_err("syntax");
    assert_eq!(err.error_type(), "SYNTAX_ERROR");
}

#[tokio::test]
async fn mysql_sessions_do_not_leak_and_budgets_hold() {
    use liteset::engines::Cell;
    let Some(my) = liteset_tests::mariadb::mariadb() else {
        return;
    };
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    // One connection, so every statement below runs on the same session.
    let mut one = spec(211, &my.file_url);
    one.options = Some(EngineOptions {
        pool_size: 1,
        ..quick()
    });
    for sql in [
        "SET @leak = 42",
        "SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'",
        "SET SESSION time_zone = '+05:00'",
        "CREATE TEMPORARY TABLE tmp_leak (a INT)",
    ] {
        engines.execute(&one, sql, rw()).await.expect(sql);
    }
    let rs = engines
        .execute(
            &one,
            "SELECT @leak, \"str\", 'a\\\\b', @@session.time_zone, @@session.sql_mode",
            ro(10),
        )
        .await
        .expect("after");
    assert_eq!(
        rs.rows,
        vec![vec![
            Cell::Null,
            Cell::Text("str".into()),
            Cell::Text("a\\b".into()),
            Cell::Text("+00:00".into()),
            Cell::Text(
                "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION".into()
            ),
        ]]
    );
    let err = engines
        .execute(&one, "SELECT * FROM tmp_leak", ro(10))
        .await
        .expect_err("temp table gone");
    assert!(matches!(err, EngineError::TableNotFound { .. }), "{err:?}");

    // Result budget: the statement fails rather than filling memory, and the pool recovers.
    let mut small = spec(212, &my.reader_url);
    small.options = Some(EngineOptions {
        max_result_bytes: 64 * 1024,
        pool_size: 1,
        ..quick()
    });
    let err = engines
        .execute(
            &small,
            "SELECT REPEAT('x', 1000) FROM information_schema.COLUMNS a, \
             information_schema.COLUMNS b",
            ro(1_000_000),
        )
        .await
        .expect_err("too large");
    assert_eq!(err, EngineError::ResultTooLarge { limit: 64 * 1024 });
    let rs = engines
        .execute(&small, "SELECT 7", ro(10))
        .await
        .expect("after budget");
    assert_eq!(rs.rows, vec![vec![Cell::Int(7)]]);

    // Statement timeout (quick(): 2 s): the server's own, or the client's timer.
    let started = Instant::now();
    let err = engines
        .execute(&small, "SELECT SLEEP(10)", ro(10))
        .await
        .expect_err("timeout");
    assert_eq!(err, EngineError::StatementTimeout);
    assert!(started.elapsed() < Duration::from_secs(5));
    let rs = engines
        .execute(&small, "SELECT 8", ro(10))
        .await
        .expect("after timeout");
    assert_eq!(rs.rows, vec![vec![Cell::Int(8)]]);

    // Pool exhaustion: the only connection is busy, the next caller waits `pool_wait`.
    let mut tiny = spec(213, &my.reader_url);
    tiny.options = Some(EngineOptions {
        pool_size: 1,
        pool_wait: Duration::from_millis(300),
        connect_timeout: Duration::from_millis(300),
        statement_timeout: Duration::from_secs(5),
        ..quick()
    });
    let busy = {
        let engines = engines.clone();
        let tiny = tiny.clone();
        tokio::spawn(async move { engines.execute(&tiny, "SELECT SLEEP(2)", ro(10)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let err = engines
        .execute(&tiny, "SELECT 1", ro(10))
        .await
        .expect_err("pool busy");
    assert_eq!(err, EngineError::PoolTimeout);
    busy.abort();
}

/// How many statements tagged `tag` the server is running (seen by the admin user).
async fn mysql_running(engines: &Engines, admin: &ConnectionSpec, tag: &str) -> i64 {
    let rs = engines
        .execute(
            admin,
            &format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO LIKE '%{tag}%' AND ID <> CONNECTION_ID()"
            ),
            ro(10),
        )
        .await
        .expect("processlist");
    match rs.rows[0][0] {
        liteset::engines::Cell::Int(n) => n,
        ref other => panic!("count: {other:?}"),
    }
}

#[tokio::test]
async fn mysql_dropped_query_is_killed_in_the_server() {
    let Some(my) = liteset_tests::mariadb::mariadb() else {
        return;
    };
    let mut opts = quick();
    opts.statement_timeout = Duration::from_secs(60);
    let engines = Engines::new(opts, liteset::engines::ConnectionGuard::unrestricted());
    let admin = spec(221, &my.admin_url);
    let s = spec(222, &my.reader_url);
    let task = {
        let engines = engines.clone();
        let s = s.clone();
        tokio::spawn(async move {
            engines
                .execute(&s, "SELECT SLEEP(30) AS drop_me_7391", ro(10))
                .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while mysql_running(&engines, &admin, "drop_me_7391").await == 0 {
        assert!(Instant::now() < deadline, "the query never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    task.abort();
    let dropped = Instant::now();
    while mysql_running(&engines, &admin, "drop_me_7391").await > 0 {
        assert!(
            dropped.elapsed() < Duration::from_secs(2),
            "still running 2 s after the future was dropped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "dropped query gone from the MySQL process list after {:?}",
        dropped.elapsed()
    );
    // The pool is usable afterwards.
    let rs = engines
        .execute(&s, "SELECT 1", ro(10))
        .await
        .expect("after");
    assert_eq!(rs.rows.len(), 1);
}

#[tokio::test]
async fn mysql_connection_errors() {
    let Some(my) = liteset_tests::mariadb::mariadb() else {
        return;
    };
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let wrong = my.reader_url.replace("r3%40d", "wr0ng");
    let err = engines
        .test_connection(&spec(231, &wrong))
        .await
        .expect_err("wrong password");
    assert_eq!(
        err,
        EngineError::AccessDenied {
            username: "reader".into()
        }
    );
    assert_eq!(err.error_type(), "CONNECTION_ACCESS_DENIED_ERROR");
    assert_eq!(
        err.message(),
        "Either the username \"reader\" or the password is incorrect."
    );
    no_secret(&err, "wr0ng");
    // The same through a pool.
    let err = engines
        .schemas(&spec(232, &wrong))
        .await
        .expect_err("wrong password");
    assert!(matches!(err, EngineError::AccessDenied { .. }), "{err:?}");

    let nodb = my.admin_url.replace("/liteset_test", "/nope_db");
    let err = engines
        .test_connection(&spec(233, &nodb))
        .await
        .expect_err("unknown db");
    assert_eq!(
        err,
        EngineError::UnknownDatabase {
            database: "nope_db".into()
        }
    );
    let port = free_port();
    let closed = format!("mysql://reader:x@127.0.0.1:{port}/liteset_test");
    let err = engines
        .test_connection(&spec(234, &closed))
        .await
        .expect_err("closed");
    assert_eq!(
        err,
        EngineError::PortClosed {
            host: "127.0.0.1".into(),
            port
        }
    );
    // Every URI form Superset accepts reaches the same server.
    let rest = my.reader_url.trim_start_matches("mysql://").to_owned();
    for scheme in [
        "mysql",
        "mysql+mysqldb",
        "mysql+pymysql",
        "mysql+mysqlconnector",
        "mariadb",
        "mariadb+mariadbconnector",
    ] {
        let uri = format!("{scheme}://{rest}?charset=utf8mb4");
        engines
            .test_connection(&spec(235, &uri))
            .await
            .unwrap_or_else(|e| panic!("{scheme}: {e:?}"));
    }
    let err = engines
        .test_connection(&spec(236, &format!("mysql://{rest}?ssl_mode=REQUIRED")))
        .await
        .expect_err("tls refused");
    assert!(err.message().contains("TLS"), "{}", err.message());
}

// ---------------------------------------------------------------------------------------------
// ClickHouse (the server tests/run starts, or one started by the harness)
// ---------------------------------------------------------------------------------------------

use liteset::engines::{Cell, ExecOptions};
use liteset_tests::clickhouse::{CH_PASSWORD, clickhouse};

const RO: ExecOptions = ExecOptions {
    read_only: true,
    max_rows: 1000,
};

/// A database with a table (every type family), a view and a materialized view.
async fn ch_fixture() -> String {
    let ch = clickhouse().await;
    let db = ch.fresh_database().await;
    ch.exec(&format!(
        "CREATE TABLE {db}.orders (\
            id UInt32 COMMENT 'Order id', \
            name String, \
            amount Decimal(10, 2), \
            created DateTime, \
            day Date, \
            price Nullable(Float64), \
            tags Array(String), \
            big UInt64, \
            code FixedString(3), \
            kind String\
         ) ENGINE = MergeTree ORDER BY id"
    ))
    .await;
    ch.exec(&format!(
        "INSERT INTO {db}.orders VALUES \
         (1, 'tab\\there', 12.50, '2024-01-02 03:04:05', '2024-01-02', 1.5, ['a','b'], 18446744073709551615, 'ab', 'x'), \
         (2, 'it''s \\\\ ok', 0.10, '2024-02-03 00:00:00', '2024-02-03', NULL, [], 7, 'xyz', 'y'), \
         (3, 'line\\nbreak', -3.00, '2024-03-04 12:00:00', '2024-03-04', 2.5, ['c'], 0, 'q', 'x')"
    ))
    .await;
    ch.exec(&format!(
        "CREATE VIEW {db}.big_orders AS SELECT id, amount FROM {db}.orders WHERE amount > 1"
    ))
    .await;
    ch.exec(&format!(
        "CREATE MATERIALIZED VIEW {db}.totals ENGINE = MergeTree ORDER BY kind \
         AS SELECT kind, sum(amount) AS total FROM {db}.orders GROUP BY kind"
    ))
    .await;
    db
}

#[tokio::test]
async fn clickhouse_catalog_and_queries() {
    let ch = clickhouse().await;
    let db = ch_fixture().await;
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    // The password-protected user, so every request carries credentials.
    let s = spec(1, &ch.url_for("liteset", Some(CH_PASSWORD), &db));
    engines.test_connection(&s).await.expect("test_connection");

    let schemas = engines.schemas(&s).await.expect("schemas");
    assert!(
        schemas.contains(&db) && schemas.contains(&"default".to_owned()),
        "{schemas:?}"
    );
    assert!(!schemas.iter().any(|s| s == "system"), "{schemas:?}");

    let tables = engines.tables(&s, &db).await.expect("tables");
    let listed: Vec<(&str, TableKind)> = tables.iter().map(|t| (t.name.as_str(), t.kind)).collect();
    assert_eq!(
        listed,
        vec![
            ("big_orders", TableKind::View),
            ("orders", TableKind::Table),
            ("totals", TableKind::MaterializedView),
        ]
    );
    assert!(engines.tables(&s, "nope").await.expect("tables").is_empty());

    // No schema: the URI's database.
    let md = engines
        .table_metadata(&s, None, "orders")
        .await
        .expect("metadata");
    assert_eq!(md.schema.as_deref(), Some(db.as_str()));
    assert_eq!(md.kind, TableKind::Table);
    use GenericType::*;
    let types: Vec<(&str, &str, GenericType, bool)> = md
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str(), c.generic, c.nullable))
        .collect();
    assert_eq!(
        types,
        vec![
            ("id", "UInt32", Numeric, false),
            ("name", "String", String, false),
            ("amount", "Decimal(10, 2)", Numeric, false),
            ("created", "DateTime", Temporal, false),
            ("day", "Date", Temporal, false),
            ("price", "Nullable(Float64)", Numeric, true),
            ("tags", "Array(String)", String, false),
            ("big", "UInt64", Numeric, false),
            ("code", "FixedString(3)", String, false),
            ("kind", "String", String, false),
        ]
    );
    assert!(md.columns[3].is_dttm && md.columns[4].is_dttm);
    assert_eq!(md.columns[0].comment.as_deref(), Some("Order id"));
    assert_eq!(md.primary_key.expect("pk").column_names, vec!["id"]);
    let err = engines
        .table_metadata(&s, Some(&db), "nope")
        .await
        .expect_err("missing table");
    assert_eq!(
        err,
        EngineError::TableNotFound {
            table: "nope".into()
        }
    );

    let cols = engines
        .query_columns(
            &s,
            "SELECT id, amount * 2 AS twice, toDate(created) AS d FROM orders",
        )
        .await
        .expect("query columns");
    let cols: Vec<(&str, &str, bool)> = cols
        .iter()
        .map(|c| (c.name.as_str(), c.type_name.as_str(), c.is_dttm))
        .collect();
    assert_eq!(
        cols,
        vec![
            ("id", "UInt32", false),
            ("twice", "Decimal(10, 2)", false),
            ("d", "Date", true)
        ]
    );
    for bad in ["INSERT INTO orders (id) VALUES (9)", "DROP TABLE orders"] {
        assert_eq!(
            engines.query_columns(&s, bad).await,
            Err(EngineError::NotReadOnly),
            "{bad}"
        );
    }
    assert!(
        engines
            .query_columns(&s, "SELECT 1; SELECT 2")
            .await
            .is_err()
    );

    // Values decoded by type, escapes undone.
    let rs = engines
        .execute(
            &s,
            "SELECT id, name, amount, created, day, price, tags, big, code, kind \
             FROM orders ORDER BY id",
            RO,
        )
        .await
        .expect("select");
    assert_eq!(rs.columns[5].type_name, "Nullable(Float64)");
    let d = |y, m, dd| chrono::NaiveDate::from_ymd_opt(y, m, dd).expect("date");
    assert_eq!(
        rs.rows[0],
        vec![
            Cell::Int(1),
            Cell::Text("tab\there".into()),
            Cell::Decimal("12.50".into()),
            Cell::Timestamp(d(2024, 1, 2).and_hms_opt(3, 4, 5).expect("t")),
            Cell::Date(d(2024, 1, 2)),
            Cell::Float(1.5),
            Cell::Text("['a','b']".into()),
            // Superset reads UInt64 as signed.
            Cell::Int(-1),
            Cell::Text("ab".into()),
            Cell::Text("x".into()),
        ]
    );
    assert_eq!(rs.rows[1][1], Cell::Text("it's \\ ok".into()));
    assert_eq!(rs.rows[1][5], Cell::Null);
    assert_eq!(rs.rows[2][1], Cell::Text("line\nbreak".into()));

    // max_rows: reading stops (and the rest of the query is killed).
    let rs = engines
        .execute(
            &s,
            "SELECT number FROM system.numbers LIMIT 100000",
            ExecOptions {
                read_only: true,
                max_rows: 5,
            },
        )
        .await
        .expect("limited");
    assert_eq!(rs.rows.len(), 5);
    assert_eq!(rs.rows[4], vec![Cell::Int(4)]);

    // Read-only: writes, DDL, SETTINGS and table functions are refused by the server.
    let err = engines
        .execute(&s, "INSERT INTO orders (id) VALUES (9)", RO)
        .await
        .expect_err("insert");
    assert_eq!(err, EngineError::NotReadOnly);
    let err = engines
        .execute(&s, "SELECT 1 SETTINGS readonly = 0", RO)
        .await
        .expect_err("settings");
    assert!(matches!(err, EngineError::Refused { .. }), "{err:?}");
    let err = engines
        .execute(&s, "SELECT * FROM numbers(3)", RO)
        .await
        .expect_err("table function");
    assert!(matches!(err, EngineError::Refused { .. }), "{err:?}");
    let err = engines
        .execute(
            &s,
            "SELECT * FROM url('http://127.0.0.1:1/', CSV, 'a String')",
            RO,
        )
        .await
        .expect_err("url");
    assert!(matches!(err, EngineError::Refused { .. }), "{err:?}");
    // A FORMAT of its own cannot change what we parse.
    assert!(
        engines
            .execute(&s, "SELECT 1 FORMAT JSON", RO)
            .await
            .is_err()
    );
    let rows = ch.exec(&format!("SELECT count() FROM {db}.orders")).await;
    assert_eq!(rows.trim(), "3");

    // Errors.
    assert_eq!(
        engines.execute(&s, "SELECT * FROM nope", RO).await,
        Err(EngineError::TableNotFound {
            table: format!("{db}.nope")
        })
    );
    assert_eq!(
        engines.execute(&s, "SELECT 1; SELECT 2", RO).await,
        Err(EngineError::MultipleStatements)
    );
    assert!(matches!(
        engines.execute(&s, "SELEC 1", RO).await,
        Err(EngineError::Syntax { .. })
    ));

    // DML when allowed (not read-only).
    engines
        .execute(
            &s,
            "INSERT INTO orders (id, name) VALUES (9, 'nine')",
            ExecOptions {
                read_only: false,
                max_rows: 10,
            },
        )
        .await
        .expect("insert allowed");
    assert_eq!(
        ch.exec(&format!("SELECT name FROM {db}.orders WHERE id = 9"))
            .await
            .trim(),
        "nine"
    );
}

#[tokio::test]
async fn clickhouse_budget_and_pool() {
    let ch = clickhouse().await;
    let tight = EngineOptions {
        max_result_bytes: 64 * 1024,
        pool_size: 1,
        pool_wait: Duration::from_millis(300),
        statement_timeout: Duration::from_secs(10),
        ..quick()
    };
    let engines = Engines::new(tight, liteset::engines::ConnectionGuard::unrestricted());
    let s = spec(2, ch.url());
    let err = engines
        .execute(
            &s,
            &format!(
                "SELECT '{}' AS s FROM system.numbers LIMIT 100000",
                "x".repeat(1000)
            ),
            RO,
        )
        .await
        .expect_err("too large");
    assert_eq!(err, EngineError::ResultTooLarge { limit: 64 * 1024 });

    // One query at a time: the second waits pool_wait, then fails.
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let long = format!(
        "SELECT count() /* {marker} */ FROM system.numbers WHERE sleepEachRow(0.000005) = 0"
    );
    let e2 = engines.clone();
    let s2 = s.clone();
    let running = tokio::spawn(async move { e2.execute(&s2, &long, RO).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    assert_eq!(
        engines.execute(&s, "SELECT 1", RO).await,
        Err(EngineError::PoolTimeout)
    );
    assert!(started.elapsed() >= Duration::from_millis(250));
    running.abort();
    wait_gone(&marker).await;
    // The permit came back.
    engines
        .execute(&s, "SELECT 1", RO)
        .await
        .expect("free again");
}

/// Waits until no query holding `marker` is in `system.processes` (at most 2 s), and panics
/// otherwise.
async fn wait_gone(marker: &str) -> Duration {
    let ch = clickhouse().await;
    let started = Instant::now();
    loop {
        let n = ch
            .exec(&format!(
                "SELECT count() FROM system.processes WHERE query LIKE '%{marker}%' \
                 AND query NOT LIKE '%system.processes%'"
            ))
            .await;
        if n.trim() == "0" {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "query {marker} still running after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_running(marker: &str) {
    let ch = clickhouse().await;
    for _ in 0..100 {
        let n = ch
            .exec(&format!(
                "SELECT count() FROM system.processes WHERE query LIKE '%{marker}%' \
                 AND query NOT LIKE '%system.processes%'"
            ))
            .await;
        if n.trim() == "1" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("query {marker} never showed in system.processes");
}

/// ClickHouse 18.16 keeps running an HTTP query whose client hung up: a dropped `execute`
/// and a statement past its deadline are killed inside the server.
#[tokio::test]
async fn clickhouse_queries_are_killed_on_drop_and_deadline() {
    let ch = clickhouse().await;
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let s = spec(3, ch.url());
    let long = |marker: &str| {
        format!(
            "SELECT count() /* {marker} */ FROM system.numbers WHERE sleepEachRow(0.000005) = 0"
        )
    };

    // Dropped mid-statement.
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let (e2, s2, sql) = (engines.clone(), s.clone(), long(&marker));
    let task = tokio::spawn(async move { e2.execute(&s2, &sql, RO).await });
    wait_running(&marker).await;
    task.abort();
    let gone = wait_gone(&marker).await;
    eprintln!("dropped query gone from system.processes after {gone:?}");

    // Past the 2 s statement timeout.
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let started = Instant::now();
    let err = engines
        .execute(&s, &long(&marker), RO)
        .await
        .expect_err("deadline");
    assert_eq!(err, EngineError::StatementTimeout);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    wait_gone(&marker).await;
}

#[tokio::test]
async fn clickhouse_connection_errors() {
    let ch = clickhouse().await;
    let engines = Engines::new(quick(), liteset::engines::ConnectionGuard::unrestricted());
    let port = ch.port();
    let err = engines
        .test_connection(&spec(
            4,
            &format!("clickhousedb://liteset:wrong-w0rd@127.0.0.1:{port}/default"),
        ))
        .await
        .expect_err("wrong password");
    assert_eq!(
        err,
        EngineError::InvalidPassword {
            username: "liteset".into()
        }
    );
    assert_no_password(&err);
    let err = engines
        .test_connection(&spec(
            4,
            &format!("clickhousedb://nobody@127.0.0.1:{port}/default"),
        ))
        .await
        .expect_err("unknown user");
    assert_eq!(
        err,
        EngineError::InvalidUsername {
            username: "nobody".into()
        }
    );
    let err = engines
        .test_connection(&spec(
            4,
            &format!("clickhousedb://default@127.0.0.1:{port}/nodb"),
        ))
        .await
        .expect_err("unknown database");
    assert_eq!(
        err,
        EngineError::UnknownDatabase {
            database: "nodb".into()
        }
    );
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let err = engines
        .test_connection(&spec(
            4,
            &format!("clickhousedb://liteset:x-w0rd@127.0.0.1:{closed}/default"),
        ))
        .await
        .expect_err("closed port");
    assert_eq!(
        err,
        EngineError::PortClosed {
            host: "127.0.0.1".into(),
            port: closed
        }
    );
    assert_no_password(&err);
    let err = engines
        .test_connection(&spec(
            4,
            "clickhousedb://default@no-such-host.invalid:8123/default",
        ))
        .await
        .expect_err("bad host");
    assert_eq!(
        err,
        EngineError::InvalidHostname {
            host: "no-such-host.invalid".into()
        }
    );
}
