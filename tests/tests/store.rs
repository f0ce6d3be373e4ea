//! The metadata store suite, run unchanged against SQLite and a real PostgreSQL: migrations,
//! users, roles and grants, constraints and transactions.

use liteset::auth::catalog;
use liteset::params;
use liteset::store::{self, Executor, Location, NewUser, Store};
use liteset_tests::{Metadata, both_backends, pg};

/// An empty store of the given kind; the temp dir keeps an SQLite file alive.
async fn empty_store(meta: Metadata) -> anyhow::Result<(Store, Option<tempfile::TempDir>)> {
    Ok(match meta {
        Metadata::Sqlite => {
            let dir = tempfile::tempdir()?;
            let store = Store::open(Location::Sqlite(&dir.path().join("meta.db")), 4).await?;
            (store, Some(dir))
        }
        Metadata::Postgres => {
            let url = pg().await.fresh_database().await;
            (Store::open(Location::Postgres(&url), 4).await?, None)
        }
    })
}

fn new_user(name: &str, roles: &[&str]) -> NewUser {
    NewUser {
        username: name.into(),
        first_name: "First".into(),
        last_name: "Last".into(),
        email: format!("{name}@example.com"),
        active: true,
        password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into()),
        roles: roles.iter().map(|r| (*r).to_owned()).collect(),
    }
}

both_backends! {
    async fn migrations_apply_once_and_are_idempotent(meta: Metadata) -> anyhow::Result<()> {
        let (store, _dir) = empty_store(meta).await?;
        let first = store.migrate().await?;
        let expected: Vec<i64> = store::MIGRATIONS.iter().map(|m| m.version).collect();
        assert_eq!(first, expected);
        assert_eq!(store.migrate().await?, Vec::<i64>::new());
        // The catalog tables exist with Superset's names.
        for table in ["ab_user", "ab_role", "ab_permission_view_role", "dbs", "tables",
                      "table_columns", "sql_metrics", "slices", "dashboards", "dashboard_slices",
                      "query", "saved_query", "logs", "key_value"] {
            let row = store.db().query_one(&format!("SELECT COUNT(*) AS n FROM {table}"), vec![]).await?;
            assert_eq!(row.get::<i64>("n")?, 0, "{table}");
        }
        Ok(())
    }

    async fn a_newer_schema_is_refused(meta: Metadata) -> anyhow::Result<()> {
        let (store, _dir) = empty_store(meta).await?;
        store.migrate().await?;
        store.db().execute(
            "INSERT INTO liteset_migrations (version, name, applied_on) VALUES ($1, $2, $3)",
            params![9999i64, "future", chrono::Utc::now()],
        ).await?;
        let err = store.migrate().await.expect_err("newer schema");
        assert!(matches!(err, store::Error::SchemaTooNew { found: 9999, .. }), "{err}");
        Ok(())
    }

    async fn users_round_trip_and_are_found_by_username_then_email(meta: Metadata) -> anyhow::Result<()> {
        let (store, _dir) = empty_store(meta).await?;
        store.migrate().await?;
        store.sync_role(catalog::GAMMA, &[("can_read", "Chart")]).await?;
        let alice = store.create_user(&new_user("alice", &[catalog::GAMMA])).await?;
        assert_eq!(alice.username, "alice");
        assert!(alice.active);
        assert_eq!(alice.login_count, 0);
        assert_eq!(store.user_by_id(alice.id).await?, Some(alice.clone()));
        assert_eq!(store.user_for_login("alice").await?.map(|u| u.id), Some(alice.id));
        assert_eq!(store.user_for_login("alice@example.com").await?.map(|u| u.id), Some(alice.id));
        assert_eq!(store.user_for_login("bob").await?, None);

        // A user whose username is another's email: username wins, as in FAB.
        let mut tricky = new_user("alice@example.com", &[]);
        tricky.email = "other@example.com".into();
        let tricky = store.create_user(&tricky).await?;
        assert_eq!(store.user_for_login("alice@example.com").await?.map(|u| u.id), Some(tricky.id));

        store.record_login_failure(alice.id).await?;
        store.record_login_failure(alice.id).await?;
        assert_eq!(store.user_by_id(alice.id).await?.map(|u| u.fail_login_count), Some(2));
        store.record_login_success(alice.id, Some("new-hash".into())).await?;
        let after = store.user_by_id(alice.id).await?.expect("alice");
        assert_eq!((after.login_count, after.fail_login_count), (1, 0));
        assert_eq!(after.password_hash.as_deref(), Some("new-hash"));
        assert!(after.last_login.is_some());
        assert_eq!(after.created_on, alice.created_on, "timestamps survive the round trip");

        let roles: Vec<String> = store.user_roles(alice.id).await?.into_iter().map(|r| r.name).collect();
        assert_eq!(roles, vec![catalog::GAMMA.to_owned()]);
        Ok(())
    }

    async fn unique_names_conflict_and_a_failed_create_leaves_nothing(meta: Metadata) -> anyhow::Result<()> {
        let (store, _dir) = empty_store(meta).await?;
        store.migrate().await?;
        store.create_user(&new_user("carol", &[])).await?;
        let err = store.create_user(&new_user("carol", &[])).await.expect_err("duplicate");
        assert!(matches!(err, store::Error::Conflict { .. }), "{err}");
        // Unknown role: the whole creation rolls back, the username stays free.
        let err = store.create_user(&new_user("dave", &["NoSuchRole"])).await.expect_err("unknown role");
        assert!(matches!(err, store::Error::NotFound), "{err}");
        assert_eq!(store.user_for_login("dave").await?, None);
        Ok(())
    }

    async fn dropped_transactions_roll_back(meta: Metadata) -> anyhow::Result<()> {
        let (store, _dir) = empty_store(meta).await?;
        store.migrate().await?;
        {
            let tx = store.db().begin().await?;
            tx.execute("INSERT INTO ab_role (name) VALUES ($1)", params!["Ghost"]).await?;
        }
        // The pool may hand back the same connection: it must not be inside the old transaction.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let tx = store.db().begin().await?;
        tx.execute("INSERT INTO ab_role (name) VALUES ($1)", params!["Kept"]).await?;
        tx.commit().await?;
        let names: Vec<String> = store.db()
            .query("SELECT name FROM ab_role ORDER BY name", vec![]).await?
            .iter().map(|r| r.get("name")).collect::<Result<_, _>>()?;
        assert_eq!(names, vec!["Kept".to_owned()]);
        Ok(())
    }

    async fn a_transaction_cancelled_while_it_begins_leaves_nothing_open(meta: Metadata) -> anyhow::Result<()> {
        // One connection, so every statement below runs on the one a cancelled BEGIN touched.
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("meta.db");
        let url = match meta {
            Metadata::Sqlite => None,
            Metadata::Postgres => Some(pg().await.fresh_database().await),
        };
        let open = |size| {
            let (path, url) = (path.clone(), url.clone());
            async move {
                match &url {
                    None => Store::open(Location::Sqlite(&path), size).await,
                    Some(url) => Store::open(Location::Postgres(url), size).await,
                }
            }
        };
        let store = open(1).await?;
        store.migrate().await?;
        let other = open(1).await?;
        // A handler's future can be dropped at any await (its client went away, a deadline
        // passed): drop `begin` after each number of polls, then write outside any transaction
        // on the same pooled connection. The write must be committed, seen by another
        // connection, not swallowed by a transaction the cancelled BEGIN left open.
        for polls in 0..8 {
            {
                let begin = store.db().begin();
                tokio::pin!(begin);
                let mut n = 0;
                std::future::poll_fn(|cx| {
                    if n == polls {
                        return std::task::Poll::Ready(());
                    }
                    n += 1;
                    match begin.as_mut().poll(cx) {
                        std::task::Poll::Ready(_) => std::task::Poll::Ready(()),
                        std::task::Poll::Pending => {
                            cx.waker().wake_by_ref();
                            std::task::Poll::Pending
                        }
                    }
                })
                .await;
            }
            let name = format!("after-{polls}-polls");
            store.db().execute("INSERT INTO ab_role (name) VALUES ($1)", params![name.clone()]).await?;
            let seen = other.db()
                .query("SELECT name FROM ab_role WHERE name = $1", params![name.clone()]).await?;
            assert_eq!(seen.len(), 1, "{name}: the write stayed inside a leftover transaction");
        }
        Ok(())
    }

    async fn builtin_roles_sync_exactly_and_idempotently(meta: Metadata) -> anyhow::Result<()> {
        let (store, _dir) = empty_store(meta).await?;
        store.migrate().await?;
        for _ in 0..2 {
            for (role, pvms) in catalog::builtin_roles(None) {
                store.sync_role(role, &pvms).await?;
            }
        }
        for (role, pvms) in catalog::builtin_roles(None) {
            let stored = store.role_permissions(role).await?;
            assert_eq!(stored.len(), pvms.len(), "{role}");
        }
        let alpha = store.role_permissions(catalog::ALPHA).await?;
        assert!(alpha.contains(&("can_write".into(), "Dataset".into())));
        assert!(!alpha.contains(&("can_grant_guest_token".into(), "SecurityRestApi".into())));
        assert!(store.role_permissions(catalog::PUBLIC).await?.is_empty());

        // Re-syncing with fewer grants removes the others (Superset's set_role).
        store.sync_role(catalog::GAMMA, &[("can_read", "Chart")]).await?;
        assert_eq!(store.role_permissions(catalog::GAMMA).await?, vec![("can_read".to_owned(), "Chart".to_owned())]);

        let admin = store.create_user(&new_user("root", &[catalog::ADMIN, catalog::GAMMA])).await?;
        let perms = store.user_permissions(admin.id).await?;
        assert!(perms.contains(&("can_grant_guest_token".into(), "SecurityRestApi".into())));
        assert!(store.role_has_users(catalog::ADMIN).await?);
        assert!(!store.role_has_users(catalog::ALPHA).await?);
        Ok(())
    }

    async fn concurrent_writers_do_not_fail(meta: Metadata) -> anyhow::Result<()> {
        let (store, _dir) = empty_store(meta).await?;
        store.migrate().await?;
        let mut tasks = Vec::new();
        for i in 0..32 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store.create_user(&new_user(&format!("user{i}"), &[])).await.map(|u| u.id)
            }));
        }
        let mut ids = Vec::new();
        for t in tasks {
            ids.push(t.await??);
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 32);
        Ok(())
    }
}

const META_PASSWORD: &str = "meta-s3cr3t-w0rd";

/// The PostgreSQL metadata store over TLS (`liteset_tests::TlsPg`: TCP connections over TLS
/// only), with the options analytical databases take: `sslmode` and `sslrootcert`.
#[tokio::test]
async fn metadata_store_over_tls() -> anyhow::Result<()> {
    use liteset_tests::{ADMIN_PASSWORD, Api, TestServer, tls_pg};
    let pg = tls_pg().await;
    let (role, db) = pg.role_and_database(META_PASSWORD).await;
    let url = |host: &str, mode: &str, ca: &std::path::Path| {
        format!(
            "postgresql://{role}:{META_PASSWORD}@{host}:{}/{db}?sslmode={mode}&sslrootcert={}",
            pg.port(),
            ca.display()
        )
    };

    // The store itself: migrated and used over a verified TLS connection.
    let store = Store::open(
        Location::Postgres(&url("localhost", "verify-full", pg.ca_file())),
        2,
    )
    .await?;
    store.migrate().await?;
    let row = store
        .db()
        .query_one(
            "SELECT count(*) AS n FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl",
            vec![],
        )
        .await?;
    assert_eq!(
        row.get::<i64>("n")?,
        1,
        "the metadata connection is not encrypted"
    );

    // Refusals say why at once, without the password: a wrong root, a wrong host name.
    for (bad, why) in [
        (
            url("localhost", "verify-full", pg.other_ca_file()),
            "certificate verify failed",
        ),
        (
            url("127.0.0.2", "verify-full", pg.ca_file()),
            "does not match host name",
        ),
        (
            url("localhost", "disable", pg.ca_file()),
            "no pg_hba.conf entry",
        ),
    ] {
        let err = Store::open(Location::Postgres(&bad), 2)
            .await
            .expect_err(why)
            .to_string();
        assert!(err.contains(why), "{why:?} not in {err}");
        assert!(!err.contains(META_PASSWORD), "password in {err}");
    }

    // `liteset serve` on it: logs in and lists.
    let mut server = TestServer::builder()
        .env(
            "LITESET_METADATA_URL",
            url("localhost", "verify-full", pg.ca_file()),
        )
        .start()
        .await?;
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, r) = api.get("/api/v1/database/").await;
    assert_eq!(s.as_u16(), 200, "{r}");
    server.stop().await?;
    assert!(
        !server.logs().contains(META_PASSWORD),
        "password in the logs"
    );

    // With a root that did not sign the server's certificate it refuses to start, and says so.
    let err = TestServer::builder()
        .env(
            "LITESET_METADATA_URL",
            url("localhost", "verify-full", pg.other_ca_file()),
        )
        .start()
        .await
        .err()
        .expect("a server trusting the wrong root must not start");
    let text = format!("{err:#}");
    assert!(text.contains("exited before printing READY"), "{text}");
    assert!(
        text.contains("SSL error: certificate verify failed"),
        "{text}"
    );
    assert!(!text.contains(META_PASSWORD), "password in {text}");
    Ok(())
}
