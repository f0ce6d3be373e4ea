//! Users, roles and (permission, view_menu) grants in the ab_* tables.

use std::collections::BTreeSet;

use chrono::{NaiveDateTime, Utc};

use super::db::{Executor, Row};
use super::{Error, Result, Store};
use crate::params;

/// A stored user. The password hash never leaves the auth layer.
#[derive(Clone, Debug, PartialEq)]
pub struct User {
    /// Primary key.
    pub id: i64,
    /// Login name.
    pub username: String,
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// Email address, also accepted as a login name.
    pub email: String,
    /// Inactive users cannot log in or use tokens.
    pub active: bool,
    /// PHC or werkzeug hash; `None` for users that cannot log in with a password.
    pub password_hash: Option<String>,
    /// Successful logins.
    pub login_count: i64,
    /// Failed logins since the last success.
    pub fail_login_count: i64,
    /// Time of the last successful login.
    pub last_login: Option<NaiveDateTime>,
    /// Creation time (UTC).
    pub created_on: NaiveDateTime,
    /// Last change (UTC).
    pub changed_on: NaiveDateTime,
}

/// Fields of a user to create.
#[derive(Clone, Debug)]
pub struct NewUser {
    /// Login name.
    pub username: String,
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// Email address.
    pub email: String,
    /// Active flag.
    pub active: bool,
    /// Already hashed password.
    pub password_hash: Option<String>,
    /// Names of the roles to grant; each must exist.
    pub roles: Vec<String>,
}

/// A role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    /// Primary key.
    pub id: i64,
    /// Unique name, e.g. "Admin".
    pub name: String,
}

const USER_COLUMNS: &str = "id, username, first_name, last_name, email, active, password, \
                            login_count, fail_login_count, last_login, created_on, changed_on";

fn user_from_row(r: &Row) -> Result<User> {
    Ok(User {
        id: r.get("id")?,
        username: r.get("username")?,
        first_name: r.get("first_name")?,
        last_name: r.get("last_name")?,
        email: r.get("email")?,
        active: r.get("active")?,
        password_hash: r.get("password")?,
        login_count: r.get("login_count")?,
        fail_login_count: r.get("fail_login_count")?,
        last_login: r.get("last_login")?,
        created_on: r.get("created_on")?,
        changed_on: r.get("changed_on")?,
    })
}

async fn ensure_named(tx: &impl Executor, table: &str, name: &str) -> Result<i64> {
    // Table names come from this module only, never from input.
    let select = format!("SELECT id FROM {table} WHERE name = $1");
    if let Some(row) = tx.query_opt(&select, params![name]).await? {
        return row.get("id");
    }
    tx.query_one(
        &format!("INSERT INTO {table} (name) VALUES ($1) RETURNING id"),
        params![name],
    )
    .await?
    .get("id")
}

impl Store {
    /// Creates a user with its roles in one transaction.
    pub async fn create_user(&self, new: &NewUser) -> Result<User> {
        let tx = self.db.begin().await?;
        let now = Utc::now();
        let row = tx
            .query_one(
                &format!(
                    "INSERT INTO ab_user (username, first_name, last_name, email, active, password, \
                     created_on, changed_on) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
                     RETURNING {USER_COLUMNS}"
                ),
                params![
                    &new.username,
                    &new.first_name,
                    &new.last_name,
                    &new.email,
                    new.active,
                    new.password_hash.clone(),
                    now
                ],
            )
            .await?;
        let user = user_from_row(&row)?;
        for role in &new.roles {
            let role_id: i64 = tx
                .query_opt("SELECT id FROM ab_role WHERE name = $1", params![role])
                .await?
                .ok_or(Error::NotFound)?
                .get("id")?;
            tx.execute(
                "INSERT INTO ab_user_role (user_id, role_id) VALUES ($1, $2)",
                params![user.id, role_id],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(user)
    }

    /// Loads a user by id.
    pub async fn user_by_id(&self, id: i64) -> Result<Option<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM ab_user WHERE id = $1");
        self.db
            .query_opt(&sql, params![id])
            .await?
            .map(|r| user_from_row(&r))
            .transpose()
    }

    /// Finds the user a login name refers to: by username first, then by email, as FAB does.
    pub async fn user_for_login(&self, login: &str) -> Result<Option<User>> {
        for column in ["username", "email"] {
            let sql = format!("SELECT {USER_COLUMNS} FROM ab_user WHERE {column} = $1");
            if let Some(row) = self.db.query_opt(&sql, params![login]).await? {
                return user_from_row(&row).map(Some);
            }
        }
        Ok(None)
    }

    /// Records a successful login: bumps `login_count`, sets `last_login`, clears failures,
    /// and optionally stores an upgraded password hash.
    pub async fn record_login_success(&self, id: i64, rehashed: Option<String>) -> Result<()> {
        let now = Utc::now();
        self.db
            .execute(
                "UPDATE ab_user SET login_count = login_count + 1, fail_login_count = 0, \
                 last_login = $2, password = COALESCE($3, password) WHERE id = $1",
                params![id, now, rehashed],
            )
            .await?;
        Ok(())
    }

    /// Records a failed login against an existing user.
    pub async fn record_login_failure(&self, id: i64) -> Result<()> {
        self.db
            .execute(
                "UPDATE ab_user SET fail_login_count = fail_login_count + 1 WHERE id = $1",
                params![id],
            )
            .await?;
        Ok(())
    }

    /// Replaces a user's password hash.
    pub async fn set_password(&self, id: i64, hash: &str) -> Result<()> {
        let n = self
            .db
            .execute(
                "UPDATE ab_user SET password = $2, changed_on = $3 WHERE id = $1",
                params![id, hash, Utc::now()],
            )
            .await?;
        if n == 0 {
            return Err(Error::NotFound);
        }
        Ok(())
    }

    /// Whether any user holds the named role.
    pub async fn role_has_users(&self, role: &str) -> Result<bool> {
        Ok(self
            .db
            .query_opt(
                "SELECT ur.id FROM ab_user_role ur JOIN ab_role r ON r.id = ur.role_id \
                 WHERE r.name = $1 LIMIT 1",
                params![role],
            )
            .await?
            .is_some())
    }

    /// Whether the role exists and holds at least one permission (i.e. roles were synced).
    pub async fn role_has_any_permissions(&self, role: &str) -> Result<bool> {
        Ok(self
            .db
            .query_opt(
                "SELECT pvr.id FROM ab_permission_view_role pvr JOIN ab_role r ON r.id = pvr.role_id \
                 WHERE r.name = $1 LIMIT 1",
                params![role],
            )
            .await?
            .is_some())
    }

    /// Roles granted to a user, by name.
    pub async fn user_roles(&self, user_id: i64) -> Result<Vec<Role>> {
        self.db
            .query(
                "SELECT r.id, r.name FROM ab_role r JOIN ab_user_role ur ON ur.role_id = r.id \
                 WHERE ur.user_id = $1 ORDER BY r.name",
                params![user_id],
            )
            .await?
            .iter()
            .map(|r| {
                Ok(Role {
                    id: r.get("id")?,
                    name: r.get("name")?,
                })
            })
            .collect()
    }

    /// A role by its name, if it exists.
    pub async fn role_by_name(&self, name: &str) -> Result<Option<Role>> {
        self.db
            .query_opt(
                "SELECT id, name FROM ab_role WHERE name = $1",
                params![name],
            )
            .await?
            .map(|r| {
                Ok(Role {
                    id: r.get("id")?,
                    name: r.get("name")?,
                })
            })
            .transpose()
    }

    /// The (permission, view_menu) pairs a role holds, sorted.
    pub async fn role_permissions(&self, role: &str) -> Result<Vec<(String, String)>> {
        self.db
            .query(
                "SELECT p.name AS permission, v.name AS view_menu \
                 FROM ab_permission_view_role pvr \
                 JOIN ab_role r ON r.id = pvr.role_id \
                 JOIN ab_permission_view pv ON pv.id = pvr.permission_view_id \
                 JOIN ab_permission p ON p.id = pv.permission_id \
                 JOIN ab_view_menu v ON v.id = pv.view_menu_id \
                 WHERE r.name = $1 ORDER BY p.name, v.name",
                params![role],
            )
            .await?
            .iter()
            .map(|r| Ok((r.get("permission")?, r.get("view_menu")?)))
            .collect()
    }

    /// Creates the role if needed and makes its grants exactly `pvms`, creating missing
    /// permissions and view menus, all in one transaction (Superset's `set_role`).
    pub async fn sync_role(&self, role: &str, pvms: &[(&str, &str)]) -> Result<()> {
        let tx = self.db.begin().await?;
        let role_id = ensure_named(&tx, "ab_role", role).await?;
        let mut wanted = BTreeSet::new();
        for (perm, view) in pvms {
            let perm_id = ensure_named(&tx, "ab_permission", perm).await?;
            let view_id = ensure_named(&tx, "ab_view_menu", view).await?;
            let pv_id: i64 = match tx
                .query_opt(
                    "SELECT id FROM ab_permission_view WHERE permission_id = $1 AND view_menu_id = $2",
                    params![perm_id, view_id],
                )
                .await?
            {
                Some(r) => r.get("id")?,
                None => tx
                    .query_one(
                        "INSERT INTO ab_permission_view (permission_id, view_menu_id) \
                         VALUES ($1, $2) RETURNING id",
                        params![perm_id, view_id],
                    )
                    .await?
                    .get("id")?,
            };
            wanted.insert(pv_id);
        }
        let current: BTreeSet<i64> = tx
            .query(
                "SELECT permission_view_id FROM ab_permission_view_role WHERE role_id = $1",
                params![role_id],
            )
            .await?
            .iter()
            .map(|r| r.get("permission_view_id"))
            .collect::<Result<_>>()?;
        for pv in current.difference(&wanted) {
            tx.execute(
                "DELETE FROM ab_permission_view_role WHERE role_id = $1 AND permission_view_id = $2",
                params![role_id, *pv],
            )
            .await?;
        }
        for pv in wanted.difference(&current) {
            tx.execute(
                "INSERT INTO ab_permission_view_role (permission_view_id, role_id) VALUES ($1, $2)",
                params![*pv, role_id],
            )
            .await?;
        }
        tx.commit().await
    }

    /// Every (permission, view_menu) pair granted to the user through any of their roles.
    pub async fn user_permissions(&self, user_id: i64) -> Result<BTreeSet<(String, String)>> {
        self.db
            .query(
                "SELECT DISTINCT p.name AS permission, v.name AS view_menu \
                 FROM ab_user_role ur \
                 JOIN ab_permission_view_role pvr ON pvr.role_id = ur.role_id \
                 JOIN ab_permission_view pv ON pv.id = pvr.permission_view_id \
                 JOIN ab_permission p ON p.id = pv.permission_id \
                 JOIN ab_view_menu v ON v.id = pv.view_menu_id \
                 WHERE ur.user_id = $1",
                params![user_id],
            )
            .await?
            .iter()
            .map(|r| Ok((r.get("permission")?, r.get("view_menu")?)))
            .collect()
    }
}
