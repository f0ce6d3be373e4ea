//! Dashboards as the use cases that open one by its URL key need them.

use super::Error;
use crate::auth::CurrentUser;
use crate::state::AppState;
use crate::store::catalog::{self, DASHBOARD};
use crate::store::model::Pred;
use crate::store::{self, Value};

/// A dashboard by id or slug (Superset's `get_by_id_or_slug`), for `user`: the store's
/// `NotFound` when no dashboard has this id or slug, [`Error::DashboardForbidden`] when the
/// user may not open it.
pub async fn resolve(state: &AppState, key: &str, user: &CurrentUser) -> Result<i64, Error> {
    let by_id = match key.parse::<i64>() {
        Ok(id) if state.store.matches(&DASHBOARD, id, &Pred::all()).await? => Some(id),
        _ => None,
    };
    let id = match by_id {
        Some(id) => id,
        None => state
            .store
            .find_id(&DASHBOARD, "slug", Value::Text(key.into()))
            .await?
            .ok_or(store::Error::NotFound)?,
    };
    // Superset's `get_by_id_or_slug` applies the list's access filter: a dashboard without
    // charts (or a draft) is its owners' (and admins') until it is published with data the
    // caller can read.
    let scope = catalog::dashboard_scope(user.grants(), user.is_admin());
    match state.store.reach(&DASHBOARD, id, &scope).await? {
        None => Err(store::Error::NotFound.into()),
        Some(false) => Err(Error::DashboardForbidden),
        Some(true) => Ok(id),
    }
}
