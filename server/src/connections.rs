//! Stored connections: a catalog database record turned into the [`ConnectionSpec`] the
//! engines open, with its password unsealed.
//!
//! It sits below `api` (and any service calling it) and above `store`, `seal` and `engines`,
//! which know nothing of each other: the store keeps the sealed password, the sealer opens it,
//! the engines take the result. Handlers get a finished `ConnectionSpec` and never unseal
//! anything themselves.
//!
//! **Invariant:** the plaintext password exists only inside the returned `ConnectionSpec` (whose
//! `Debug` masks it); no [`Error`] message contains it.

use crate::engines::ConnectionSpec;
use crate::seal::SealError;
use crate::state::AppState;
use crate::store::catalog::DATABASE;
use crate::uri::{ConnectionUri, UriError};

/// Why a stored connection could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the record failed (`NotFound` when there is no such database).
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// The stored `sqlalchemy_uri` no longer parses (e.g. an engine this build refuses).
    #[error(transparent)]
    Uri(#[from] UriError),
    /// The sealed password does not open under this server's key.
    #[error(transparent)]
    Seal(#[from] SealError),
}

/// The connection of a stored database, with its password unsealed (in memory only) and the
/// pool settings of `query.databases.<database_name>`. `revision` follows the record's
/// `changed_on`, so an edit makes the engines rebuild the pool.
pub async fn connection_spec(state: &AppState, id: i64) -> Result<ConnectionSpec, Error> {
    let rec = state.store.load_one(&DATABASE, id, &[]).await?;
    let mut uri = ConnectionUri::parse(&rec.text("sqlalchemy_uri"))?;
    if let Some(sealed) = state.store.database_secret(id).await? {
        // The record's uuid is the associated data it was sealed with.
        let plain = state.sealer.open(&sealed, rec.text("uuid").as_bytes())?;
        uri.password = Some(String::from_utf8_lossy(&plain).into_owned());
    }
    let mut options = state
        .config
        .query
        .engine_options(&rec.text("database_name"));
    options.allow_dml = rec.flag("allow_dml");
    let server_cert = rec.text("server_cert");
    Ok(ConnectionSpec {
        database_id: id,
        options: Some(options),
        uri,
        server_cert: (!server_cert.trim().is_empty()).then_some(server_cert),
        revision: rec
            .get::<chrono::NaiveDateTime>("changed_on")
            .map(|t| t.to_string())
            .unwrap_or_default(),
    })
}
