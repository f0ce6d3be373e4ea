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

    let tls = fx.uri(PASSWORD) + "?sslmode=require";
    assert!(engines.test_connection(&spec(8, &tls)).await.is_err());
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
