//! `/api/v1/assets/`: Superset's `ImportExportRestApi`, every catalog object in one bundle.
//! The bundle shell it shares with each resource's `export/`/`import/` is [`super::bundles`].

use std::sync::Arc;

use poem_openapi::OpenApi;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;

use super::Tags;
use super::bundles::{self, ImportForm, ZipFile};
use super::error::ApiError;
use super::extract::Auth;
use super::resource;
use super::wire::Message;
use crate::assets::Kind;
use crate::state::AppState;

/// `/api/v1/assets/`: every catalog object at once.
pub struct AssetsApi {
    pub(super) state: Arc<AppState>,
}

#[OpenApi(prefix_path = "/api/v1/assets", tag = "Tags::Assets")]
impl AssetsApi {
    /// Export every database, dataset, chart and dashboard as one bundle.
    #[oai(path = "/export", method = "get", operation_id = "assets_export")]
    async fn export(&self, auth: Auth, token: Query<Option<String>>) -> Result<ZipFile, ApiError> {
        resource::authorized(&self.state, &auth, "can_export", "ImportExportRestApi").await?;
        bundles::export(&self.state, Kind::Assets, &[], token.0).await
    }

    /// Import a bundle of any assets (records with a known uuid are replaced).
    #[oai(path = "/import", method = "post", operation_id = "assets_import")]
    async fn import(&self, auth: Auth, form: ImportForm) -> Result<Json<Message>, ApiError> {
        let user =
            resource::authorized(&self.state, &auth, "can_import_", "ImportExportRestApi").await?;
        bundles::import(&self.state, &auth, Kind::Assets, user, form).await
    }
}
