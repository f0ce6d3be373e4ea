//! The metadata store: users, roles, permissions and (from later migrations on) the catalog.
//!
//! Owns every SQL statement against the metadata schema and the versioned migrations for both
//! backends (SQLite, the embedded default, and PostgreSQL for production). It must not know
//! HTTP, auth policy or user data sources: it stores and loads, nothing more.

pub mod catalog;
pub mod db;
pub mod key_value;
mod migrations;
pub mod model;
pub mod plugins;
mod sqllab;
mod users;

use std::path::Path;
use std::time::Duration;

pub use db::{Backend, Db, Executor, Row, Tx, Value};
pub use migrations::{MIGRATIONS, Migration};
pub use sqllab::ACTIVE_STATUSES;
pub use users::{NewUser, Role, User};

/// Store failures; the API layer maps each kind to a status in one place.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The requested record does not exist.
    #[error("record not found")]
    NotFound,
    /// A unique constraint refused the write.
    #[error("record conflicts with an existing one: {message}")]
    Conflict {
        /// The engine's description of the violated constraint.
        message: String,
    },
    /// No pooled connection became free in time.
    #[error("timed out waiting for a metadata connection")]
    PoolTimeout,
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
    /// PostgreSQL failed.
    #[error("postgres: {0}")]
    Postgres(tokio_postgres::Error),
    /// A row did not have the expected shape.
    #[error("cannot decode column {column}: {message}")]
    Decode {
        /// Column name.
        column: String,
        /// What was wrong.
        message: String,
    },
    /// The schema was migrated by a newer Liteset; running older code on it could corrupt it.
    #[error(
        "the metadata schema is at version {found}, newer than this binary knows ({supported}); upgrade liteset"
    )]
    SchemaTooNew {
        /// Highest version found in the store.
        found: i64,
        /// Highest version this binary ships.
        supported: i64,
    },
    /// The store configuration is unusable.
    #[error("{message}")]
    Config {
        /// What is wrong.
        message: String,
    },
    /// A blocking task panicked or was cancelled.
    #[error("metadata task failed: {0}")]
    Task(String),
    /// A connection mutex was poisoned by a panic.
    #[error("metadata connection poisoned")]
    Poisoned,
    /// The transaction was already committed.
    #[error("transaction already closed")]
    TxClosed,
}

/// Result alias for store operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        match &e {
            rusqlite::Error::SqliteFailure(f, msg)
                if f.code == rusqlite::ErrorCode::ConstraintViolation
                    && matches!(
                        f.extended_code,
                        rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                            | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                    ) =>
            {
                Error::Conflict {
                    message: msg.clone().unwrap_or_else(|| "unique constraint".into()),
                }
            }
            _ => Error::Sqlite(e),
        }
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
            let message = e
                .as_db_error()
                .map_or_else(|| "unique constraint".into(), |d| d.message().to_owned());
            return Error::Conflict { message };
        }
        Error::Postgres(e)
    }
}

impl<E: Into<Error>> From<bb8::RunError<E>> for Error {
    fn from(e: bb8::RunError<E>) -> Self {
        match e {
            bb8::RunError::User(e) => e.into(),
            bb8::RunError::TimedOut => Error::PoolTimeout,
        }
    }
}

/// Where and how to open the store.
#[derive(Clone, Debug)]
pub enum Location<'a> {
    /// An SQLite file.
    Sqlite(&'a Path),
    /// A PostgreSQL URL.
    Postgres(&'a str),
}

/// Handle to the metadata store. Cheap to clone; every replica of the server opens its own.
#[derive(Clone, Debug)]
pub struct Store {
    db: Db,
}

impl Store {
    /// Opens the store without migrating it.
    pub async fn open(location: Location<'_>, max_connections: u32) -> Result<Store> {
        let opts = db::PoolOptions {
            max_size: max_connections.max(1),
            acquire_timeout: Duration::from_secs(10),
        };
        let db = match location {
            Location::Sqlite(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::Config {
                        message: format!("cannot create {}: {e}", dir.display()),
                    })?;
                }
                Db::open_sqlite(path, opts).await?
            }
            Location::Postgres(url) => Db::open_postgres(url, opts).await?,
        };
        Ok(Store { db })
    }

    /// The underlying connection pool, for repositories of later layers and for tests.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Which engine holds the metadata.
    pub fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// Applies every pending migration; returns the versions applied now.
    pub async fn migrate(&self) -> Result<Vec<i64>> {
        migrations::migrate(&self.db).await
    }

    /// Serialises first-start work (migrations, role sync, the first admin) across replicas
    /// that share a PostgreSQL metadata database: the returned transaction holds an advisory
    /// lock until it is committed or dropped. SQLite metadata belongs to one process, so there
    /// is nothing to serialise and `None` is returned.
    pub async fn bootstrap_lock(&self) -> Result<Option<Tx>> {
        match self.backend() {
            Backend::Sqlite => Ok(None),
            Backend::Postgres => {
                let tx = self.db.begin().await?;
                tx.execute(
                    "SELECT pg_advisory_xact_lock($1)",
                    crate::params![migrations::PG_BOOTSTRAP_LOCK],
                )
                .await?;
                Ok(Some(tx))
            }
        }
    }

    /// Cheap liveness probe of the store.
    pub async fn ping(&self) -> Result<()> {
        self.db.query("SELECT 1 AS one", vec![]).await.map(|_| ())
    }
}
