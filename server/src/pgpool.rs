//! The bb8 connection manager both PostgreSQL pools use (metadata and analytical databases).
//!
//! bb8-postgres checks every connection handed out with an empty query, a round trip to the
//! server per checkout. A chart-data request checks out several metadata connections and one
//! analytical connection, so under load those pings were a large share of PostgreSQL's work.
//! This manager asks the client instead: tokio-postgres marks a client closed as soon as its
//! connection task sees the socket end (server restart, `pg_terminate_backend`, an idle
//! timeout that closes the socket). Only then does it ping, so the pool gets the real error and
//! opens a new connection. A peer that vanished without closing the socket goes unnoticed here
//! exactly as it did with the ping: both wait for TCP to give up.
//!
//! Its connections also keep the statements the metadata store prepares ([`PgClient::
//! prepare_cached`]): the store's SQL is generated from a fixed set of models, so the same
//! texts come back on every request, and each fresh prepare is a round trip and a parse.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use bb8::ManageConnection;
use bb8_postgres::PostgresConnectionManager;
use tokio_postgres::{Client, Statement};

use crate::pgtls::PgTls;

/// Prepared statements kept per connection; past this the cache starts over (list queries
/// with user-chosen filters make new texts, so it must not grow without bound).
const MAX_CACHED_STATEMENTS: usize = 256;

/// A pooled PostgreSQL client with its cache of prepared statements.
pub struct PgClient {
    client: Client,
    statements: Mutex<HashMap<String, Statement>>,
    /// Set by [`PgClient::discard`]: the pool closes this connection instead of reusing it.
    discarded: AtomicBool,
}

impl Deref for PgClient {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl DerefMut for PgClient {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

impl PgClient {
    /// Marks the connection to be closed when it returns to the pool. Its read buffer keeps
    /// the capacity of the largest message it ever received (tokio-postgres reads a row
    /// whole), so after a result past its byte budget the connection itself must go, or a
    /// single huge row would stay resident for the pool's lifetime.
    pub fn discard(&self) {
        self.discarded.store(true, Ordering::Relaxed);
    }

    /// `sql` prepared on this connection, reusing an earlier prepare of the same text.
    pub async fn prepare_cached(&self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        let cached = self
            .statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(sql)
            .cloned();
        if let Some(stmt) = cached {
            return Ok(stmt);
        }
        let stmt = self.client.prepare(sql).await?;
        let mut statements = self
            .statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if statements.len() >= MAX_CACHED_STATEMENTS {
            statements.clear();
        }
        statements.insert(sql.to_owned(), stmt.clone());
        Ok(stmt)
    }
}

/// [`PostgresConnectionManager`] without the per-checkout round trip.
#[derive(Debug)]
pub struct PgManager(PostgresConnectionManager<PgTls>);

impl PgManager {
    /// A manager opening connections with `config` and `tls` (which
    /// [`PgTls::configure`]d `config`'s TLS mode).
    pub fn new(config: tokio_postgres::Config, tls: PgTls) -> Self {
        Self(PostgresConnectionManager::new(config, tls))
    }
}

impl ManageConnection for PgManager {
    type Connection = PgClient;
    type Error = tokio_postgres::Error;

    async fn connect(&self) -> Result<PgClient, tokio_postgres::Error> {
        Ok(PgClient {
            client: self.0.connect().await?,
            statements: Mutex::default(),
            discarded: AtomicBool::new(false),
        })
    }

    async fn is_valid(&self, conn: &mut PgClient) -> Result<(), tokio_postgres::Error> {
        if conn.client.is_closed() {
            // Fails with the reason, which bb8 passes to the pool's error sink.
            self.0.is_valid(&mut conn.client).await
        } else {
            Ok(())
        }
    }

    fn has_broken(&self, conn: &mut PgClient) -> bool {
        conn.client.is_closed() || conn.discarded.load(Ordering::Relaxed)
    }
}
