//! The shared export/import shell of every resource's `export/`/`import/` and of
//! `/api/v1/assets/`: the bundle download, the multipart import form, and the HTTP half of
//! `crate::assets` (reach-checked export ids, the importing user's rights as
//! [`ImportAccess`]). Declares no endpoints itself.

use std::sync::Arc;

use poem_openapi::payload::{Binary, Json};
use poem_openapi::types::multipart::Upload;
use poem_openapi::{ApiResponse, Multipart};
use serde_json::json;

use super::error::{ApiError, Fault};
use super::extract::Auth;
use super::resource;
use super::wire::Message;
use crate::assets::{self, ImportAccess, ImportOptions, Kind};
use crate::auth::CurrentUser;
use crate::state::AppState;
use crate::store::catalog::Grants;
use crate::store::model::{Pred, Record};

/// A bundle download.
#[derive(ApiResponse)]
pub enum ZipFile {
    /// The ZIP archive.
    #[oai(status = 200, content_type = "application/zip")]
    Ok(
        Binary<Vec<u8>>,
        #[oai(header = "Content-Disposition")] String,
        #[oai(header = "Set-Cookie")] Option<String>,
    ),
}

/// The multipart form of an import. Not `Debug`: it carries passwords.
#[derive(Multipart)]
pub struct ImportForm {
    /// The bundle (`/<resource>/import/`).
    #[oai(rename = "formData")]
    form_data: Option<Upload>,
    /// The bundle (`/assets/import/`).
    bundle: Option<Upload>,
    /// `"true"` to replace existing records.
    overwrite: Option<String>,
    /// JSON `{"databases/x.yaml": "password"}` for masked URIs.
    passwords: Option<String>,
    /// Accepted and ignored: SSH tunnels are not supported, and a bundle whose database
    /// needs one is refused with a message saying so (422, `ssh_tunnel`).
    ssh_tunnel_passwords: Option<String>,
    /// Accepted and ignored, as `ssh_tunnel_passwords`.
    ssh_tunnel_private_keys: Option<String>,
    /// Accepted and ignored, as `ssh_tunnel_passwords`.
    ssh_tunnel_private_key_passwords: Option<String>,
    /// Accepted and ignored: every import here is complete (`/assets/import/`).
    #[oai(rename = "sparse")]
    _sparse: Option<String>,
}

/// `GET /<resource>/export/?q=!(ids)`: the ids must already be checked against the user's
/// reach (see [`export_ids`]).
pub async fn export(
    state: &AppState,
    kind: Kind,
    ids: &[i64],
    token: Option<String>,
) -> Result<ZipFile, ApiError> {
    let now = chrono::Utc::now();
    let files = assets::export(
        &state.store,
        kind,
        ids,
        &now.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string(),
    )
    .await?;
    let root = format!("{}_export_{}", kind.resource(), now.format("%Y%m%dT%H%M%S"));
    let zip = assets::write_zip(&root, &files)?;
    // The browser's download helper polls for this cookie (`?token=x` sets `x=done`).
    let cookie = token
        .filter(|t| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .map(|t| format!("{t}=done; Path=/; Max-Age=600"));
    Ok(ZipFile::Ok(
        Binary(zip),
        format!("attachment; filename={root}.zip"),
        cookie,
    ))
}

/// The ids of `?q=!(ids)`, each of which must exist (404) and be within `scope` (404 as well:
/// Superset's export applies the list's base filter).
pub async fn export_ids(
    state: &AppState,
    model: &crate::store::model::Model,
    q: Option<&str>,
    scope: &crate::store::model::Pred,
) -> Result<Vec<i64>, ApiError> {
    let ids = resource::ids_query(q)?;
    for id in &ids {
        resource::in_reach(state, model, *id, scope, ApiError::not_found).await?;
    }
    Ok(ids)
}

/// The importing user's rights, asked as the REST create and update handlers ask them:
/// `can_write` on the kind's view menu, [`resource::can_change`] for replacing a record, the
/// data-access grants for using a database.
struct UserAccess {
    user: Arc<CurrentUser>,
    grants: Grants,
    writable: Vec<Kind>,
}

impl UserAccess {
    async fn of(state: &AppState, auth: &Auth, user: Arc<CurrentUser>) -> Result<Self, ApiError> {
        let mut writable = Vec::new();
        for (kind, view) in [
            (Kind::Database, "Database"),
            (Kind::Dataset, "Dataset"),
            (Kind::Chart, "Chart"),
            (Kind::Dashboard, "Dashboard"),
            (Kind::SavedQuery, "SavedQuery"),
        ] {
            if resource::may(state, auth, "can_write", view).await? {
                writable.push(kind);
            }
        }
        Ok(UserAccess {
            grants: user.grants().clone(),
            user,
            writable,
        })
    }
}

impl ImportAccess for UserAccess {
    fn may_write(&self, kind: Kind) -> bool {
        self.writable.contains(&kind)
    }

    fn may_change(&self, kind: Kind, rec: &Record) -> bool {
        match kind {
            // Databases have no owners: `PUT /database/<pk>` asks `can_write` and reach.
            Kind::Database => self.grants.database(rec.id),
            _ => resource::can_change(&self.user, rec),
        }
    }

    fn may_access_database(&self, id: i64) -> bool {
        self.grants.database(id)
    }

    fn dataset_scope(&self) -> Pred {
        crate::store::catalog::dataset_scope(&self.grants)
    }
}

/// `POST /<resource>/import/` (field `formData`) and `/assets/import/` (field `bundle`).
/// The endpoint's own permission is checked by the caller; what the bundle may create or
/// replace is decided per record by [`UserAccess`].
pub async fn import(
    state: &AppState,
    auth: &Auth,
    kind: Kind,
    user: Arc<CurrentUser>,
    mut form: ImportForm,
) -> Result<Json<Message>, ApiError> {
    let user_id = user.user.id;
    let access = UserAccess::of(state, auth, user).await?;
    let Some(upload) = form.form_data.take().or(form.bundle.take()) else {
        return Err(ApiError::bad_request("Arguments are not correct"));
    };
    let bytes = upload
        .into_vec()
        .await
        .map_err(|e| ApiError::bad_request(format!("Cannot read the upload: {e}")))?;
    let passwords = match form.passwords.as_deref().map(str::trim) {
        None | Some("") => Default::default(),
        Some(p) => serde_json::from_str(p).map_err(|_| {
            ApiError::fields(
                Fault::BadRequest,
                json!({"passwords": ["Not a valid JSON object of strings."]}),
            )
        })?,
    };
    let opts = ImportOptions {
        overwrite: form.overwrite.as_deref() == Some("true"),
        passwords,
        user: Some(user_id),
    };
    let tunnels = [
        &form.ssh_tunnel_passwords,
        &form.ssh_tunnel_private_keys,
        &form.ssh_tunnel_private_key_passwords,
    ];
    if tunnels
        .iter()
        .any(|f| f.as_deref().is_some_and(|v| !matches!(v.trim(), "" | "{}")))
    {
        // Without an `ssh_tunnel` in a database file they cannot apply to anything; with
        // one, the import is refused below with a message naming the file.
        tracing::info!("ssh_tunnel_* import fields ignored: SSH tunnels are not supported");
    }
    let started = std::time::Instant::now();
    let files = assets::read_zip(&bytes, kind)?;
    assets::import(
        &state.store,
        &state.sealer,
        state.engines.guard(),
        &access,
        kind,
        &files,
        &opts,
    )
    .await?;
    tracing::info!(
        kind = kind.resource(),
        files = files.len(),
        bytes = bytes.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "bundle imported"
    );
    Ok(Json(Message {
        message: "OK".to_owned(),
    }))
}
