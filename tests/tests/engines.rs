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
