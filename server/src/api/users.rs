//! `/api/v1/security/{users,roles,permissions,resources,permissions-resources}`: FAB 5's
//! security REST API (Superset enables it with `FAB_ADD_SECURITY_API`), so administrators can
//! manage users and roles and grant data access over HTTP.

use std::sync::Arc;

use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};
use serde_json::{Value as Json_, json};

use super::Tags;
use super::error::{ApiError, Fault};
use super::extract::{Auth, JsonBody};
use super::resource::{self, BodyField, BodyType, Spec, body};
use super::wire::{
    Body, Created, InfoResponse, List, Message, Nullable, Obj, PostBody, PutBody, Reply, ResultOf,
    Saved, Show,
};
use crate::auth::CurrentUser;
use crate::auth::password;
use crate::state::AppState;
use crate::store::Value;
use crate::store::catalog::{PERMISSION, PERMISSION_VIEW, ROLE, ROLE_REF, USER, VIEW_MENU};
use crate::store::model::{Model, Pred, Record};

const USER_BODY: &[BodyField] = &[
    body("active", BodyType::Bool, false),
    body("email", BodyType::Str(1, 320), true),
    body("first_name", BodyType::Str(1, 64), true),
    body("last_name", BodyType::Str(1, 64), true),
    body("roles", BodyType::Ids("Some roles do not exist"), true),
    body("username", BodyType::Str(1, 100), true),
];

static USERS: Spec = Spec {
    name: "User",
    computed: &[],
    model: &USER,
    view_menu: "User",
    noun: "user",
    list_title: "List User",
    show_title: "Show User",
    add_title: "Add User",
    edit_title: "Edit User",
    list_columns: &[
        "active",
        "changed_by.id",
        "changed_on",
        "created_by.id",
        "created_on",
        "email",
        "fail_login_count",
        "first_name",
        "id",
        "last_login",
        "last_name",
        "login_count",
        "roles.id",
        "roles.name",
        "username",
    ],
    show_columns: &[
        "active",
        "changed_by.id",
        "changed_on",
        "created_by.id",
        "created_on",
        "email",
        "fail_login_count",
        "first_name",
        "id",
        "last_login",
        "last_name",
        "login_count",
        "roles.id",
        "roles.name",
        "username",
    ],
    order_columns: &[
        "active",
        "changed_on",
        "created_on",
        "email",
        "fail_login_count",
        "first_name",
        "id",
        "last_login",
        "last_name",
        "login_count",
        "username",
    ],
    search: &[
        ("active", &[]),
        ("changed_by", &[]),
        ("changed_on", &[]),
        ("created_by", &[]),
        ("created_on", &[]),
        ("email", &[]),
        ("first_name", &[]),
        ("id", &[]),
        ("last_login", &[]),
        ("last_name", &[]),
        ("login_count", &[]),
        ("roles", &[]),
        ("username", &[]),
    ],
    base_order: None,
    max_page_size: super::listquery::FAB_API_MAX_PAGE_SIZE,
    body: USER_BODY,
    related: &["roles"],
    distinct: &[],
    permissions: &["can_get", "can_post", "can_put", "can_delete", "can_info"],
};

/// A `(id, name)` resource of FAB's security API, read-only unless extended.
const fn named(
    model: &'static Model,
    view_menu: &'static str,
    noun: &'static str,
    [list_title, show_title, add_title, edit_title]: [&'static str; 4],
) -> Spec {
    Spec {
        name: view_menu,
        computed: &[],
        model,
        view_menu,
        noun,
        list_title,
        show_title,
        add_title,
        edit_title,
        list_columns: &["id", "name"],
        show_columns: &["id", "name"],
        order_columns: &["id", "name"],
        search: &[("id", &[]), ("name", &[])],
        base_order: None,
        max_page_size: super::listquery::FAB_API_MAX_PAGE_SIZE,
        body: &[],
        related: &[],
        distinct: &[],
        permissions: &["can_get", "can_info"],
    }
}

static ROLES: Spec = Spec {
    search: &[("id", &[]), ("name", &[]), ("users", &[])],
    body: &[body("name", BodyType::Str(1, 64), true)],
    permissions: &["can_get", "can_post", "can_put", "can_delete", "can_info"],
    ..named(
        &ROLE,
        "Role",
        "role",
        ["List Role", "Show Role", "Add Role", "Edit Role"],
    )
};

static PERMISSIONS: Spec = named(
    &PERMISSION,
    "Permission",
    "permission",
    [
        "List Permission",
        "Show Permission",
        "Add Permission",
        "Edit Permission",
    ],
);

static RESOURCES: Spec = named(
    &VIEW_MENU,
    "ViewMenu",
    "view menu",
    [
        "List View Menu",
        "Show View Menu",
        "Add View Menu",
        "Edit View Menu",
    ],
);

static PERMISSION_VIEWS: Spec = Spec {
    name: "PermissionViewMenu",
    computed: &[],
    model: &PERMISSION_VIEW,
    view_menu: "PermissionViewMenu",
    noun: "permission view",
    list_title: "List Permission View",
    show_title: "Show Permission View",
    add_title: "Add Permission View",
    edit_title: "Edit Permission View",
    list_columns: &["id", "permission.name", "view_menu.name"],
    show_columns: &["id", "permission.name", "view_menu.name"],
    order_columns: &["id", "permission.name", "view_menu.name"],
    search: &[
        ("id", &[]),
        ("permission", &[]),
        ("view_menu", &[]),
        ("permission.name", &[]),
        ("view_menu.name", &[]),
    ],
    base_order: None,
    max_page_size: super::listquery::FAB_API_MAX_PAGE_SIZE,
    body: &[],
    related: &["permission", "view_menu"],
    distinct: &[],
    permissions: &["can_get", "can_info"],
};

crate::wire_resource!(User, USERS);
crate::wire_resource!(Role, ROLES);
crate::wire_resource!(Permission, PERMISSIONS);
crate::wire_resource!(ViewMenu, RESOURCES);
crate::wire_resource!(PermissionViewMenu, PERMISSION_VIEWS);

fn no_custom(f: &super::listquery::Filter, _: Option<&CurrentUser>) -> Result<Pred, ApiError> {
    Err(ApiError::bad_request(format!(
        "Filter column: {} not allowed to filter",
        f.col
    )))
}

fn none(_: &Record, _: &str) -> Option<Json_> {
    None
}

/// The security administration endpoints.
pub struct UsersApi {
    pub(super) state: Arc<AppState>,
}

impl UsersApi {
    async fn exists(&self, spec: &Spec, id: i64) -> Result<(), ApiError> {
        resource::in_reach(
            &self.state,
            spec.model,
            id,
            &Pred::all(),
            resource::forbidden,
        )
        .await
        .map(|_| ())
    }

    async fn unique(
        &self,
        spec: &Spec,
        field: &str,
        value: Option<&Value>,
        id: Option<i64>,
    ) -> Result<(), ApiError> {
        if let Some(v) = value
            && let Some(other) = self
                .state
                .store
                .find_id(spec.model, field, v.clone())
                .await?
            && Some(other) != id
        {
            return Err(ApiError::fields(
                Fault::Unprocessable,
                json!({ field: [format!("{} already exists", resource::label(field))] }),
            ));
        }
        Ok(())
    }

    async fn save_user(&self, auth: &Auth, id: Option<i64>, body: &Json_) -> Result<i64, ApiError> {
        let me = resource::authorized(
            &self.state,
            auth,
            if id.is_some() { "can_put" } else { "can_post" },
            "User",
        )
        .await?;
        let mut changes = resource::changes_from_body(&USERS, body, id.is_none())?;
        let password = match body.get("password") {
            None => None,
            Some(Json_::String(p)) if !p.is_empty() => Some(p.clone()),
            Some(_) => {
                return Err(ApiError::fields(
                    Fault::BadRequest,
                    json!({"password": ["Not a valid string."]}),
                ));
            }
        };
        if id.is_none() && password.is_none() {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"password": ["Missing data for required field."]}),
            ));
        }
        resource::check_links(&self.state, &USERS, &changes).await?;
        self.unique(&USERS, "username", changes.get("username"), id)
            .await?;
        self.unique(&USERS, "email", changes.get("email"), id)
            .await?;
        if id.is_none() && changes.get("active").is_none() {
            changes.set("active", true);
        }
        let id = self
            .state
            .store
            .save(&USER, id, &changes, Some(me.user.id))
            .await?;
        if let Some(p) = password {
            let hash = password::hash_password_blocking(p)
                .await
                .map_err(|e| ApiError::internal(&e))?;
            self.state.store.set_user_password_hash(id, &hash).await?;
        }
        self.state.auth.forget_user(id).await;
        Ok(id)
    }
}

fn qs(q: &Query<Option<String>>) -> Option<&str> {
    q.0.as_deref()
}

/// `{"permission_view_menu_ids": [...]}`: a role's permissions, set or granted.
#[derive(Object)]
struct PermissionViewMenuIds {
    /// Ids of permission-view-menu pairs.
    permission_view_menu_ids: Vec<i64>,
}

/// One permission of a role.
#[derive(Object)]
struct RolePermission {
    /// The permission-view-menu pair's id.
    id: i64,
    /// The permission (`can_read`).
    permission_name: Nullable<String>,
    /// What it is granted on (`Chart`).
    view_menu_name: Nullable<String>,
}

#[OpenApi(prefix_path = "/api/v1/security", tag = "Tags::SecurityAdmin")]
impl UsersApi {
    /// List users.
    #[oai(path = "/users", method = "get", operation_id = "security_users_list")]
    async fn users(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<User>>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_get", "User").await?;
        resource::list(
            &self.state,
            &USERS,
            qs(&q),
            Some(&me),
            Pred::all(),
            &no_custom,
            &none,
        )
        .await
    }

    /// User form metadata.
    #[oai(
        path = "/users/_info",
        method = "get",
        operation_id = "security_users_info"
    )]
    async fn users_info(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<InfoResponse>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_info", "User").await?;
        resource::info(&self.state, &USERS, qs(&q), &me).await
    }

    /// One user.
    #[oai(
        path = "/users/:pk",
        method = "get",
        operation_id = "security_users_get"
    )]
    async fn user_get(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<User>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_get", "User").await?;
        self.exists(&USERS, pk.0).await?;
        resource::show(&self.state, &USERS, pk.0, qs(&q), &none).await
    }

    /// Create a user.
    #[oai(path = "/users", method = "post", operation_id = "security_users_post")]
    async fn user_post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<User>>>,
    ) -> Result<Created<Saved<User>>, ApiError> {
        let id = self.save_user(&auth, None, &body.0.value).await?;
        Ok(Created::new(
            json!({"id": id, "result": resource::echo(&USERS, &body.0.value)}),
        ))
    }

    /// Update a user.
    #[oai(
        path = "/users/:pk",
        method = "put",
        operation_id = "security_users_put"
    )]
    async fn user_put(
        &self,
        auth: Auth,
        pk: Path<i64>,
        body: JsonBody<Body<PutBody<User>>>,
    ) -> Result<Reply<Saved<User>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_put", "User").await?;
        self.exists(&USERS, pk.0).await?;
        let id = self.save_user(&auth, Some(pk.0), &body.0.value).await?;
        Ok(Reply::new(
            json!({"id": id, "result": resource::echo(&USERS, &body.0.value)}),
        ))
    }

    /// Delete a user.
    #[oai(
        path = "/users/:pk",
        method = "delete",
        operation_id = "security_users_delete"
    )]
    async fn user_delete(&self, auth: Auth, pk: Path<i64>) -> Result<Json<Message>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_delete", "User").await?;
        self.exists(&USERS, pk.0).await?;
        if pk.0 == me.user.id {
            return Err(ApiError::message(
                Fault::Unprocessable,
                "You cannot delete yourself",
            ));
        }
        self.state.store.delete_records(&USER, &[pk.0]).await?;
        self.state.auth.forget_user(pk.0).await;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// List roles.
    #[oai(path = "/roles", method = "get", operation_id = "security_roles_list")]
    async fn roles(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<Role>>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_get", "Role").await?;
        resource::list(
            &self.state,
            &ROLES,
            qs(&q),
            Some(&me),
            Pred::all(),
            &no_custom,
            &none,
        )
        .await
    }

    /// Role form metadata.
    #[oai(
        path = "/roles/_info",
        method = "get",
        operation_id = "security_roles_info"
    )]
    async fn roles_info(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Json<InfoResponse>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_info", "Role").await?;
        resource::info(&self.state, &ROLES, qs(&q), &me).await
    }

    /// One role.
    #[oai(
        path = "/roles/:pk",
        method = "get",
        operation_id = "security_roles_get"
    )]
    async fn role_get(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<Role>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_get", "Role").await?;
        self.exists(&ROLES, pk.0).await?;
        resource::show(&self.state, &ROLES, pk.0, qs(&q), &none).await
    }

    /// Create a role.
    #[oai(path = "/roles", method = "post", operation_id = "security_roles_post")]
    async fn role_post(
        &self,
        auth: Auth,
        body: JsonBody<Body<PostBody<Role>>>,
    ) -> Result<Created<Saved<Role>>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_post", "Role").await?;
        let changes = resource::changes_from_body(&ROLES, &body.0.value, true)?;
        self.unique(&ROLES, "name", changes.get("name"), None)
            .await?;
        let id = self
            .state
            .store
            .save(&ROLE, None, &changes, Some(me.user.id))
            .await?;
        Ok(Created::new(
            json!({"id": id, "result": resource::echo(&ROLES, &body.0.value)}),
        ))
    }

    /// Rename a role.
    #[oai(
        path = "/roles/:pk",
        method = "put",
        operation_id = "security_roles_put"
    )]
    async fn role_put(
        &self,
        auth: Auth,
        pk: Path<i64>,
        body: JsonBody<Body<PutBody<Role>>>,
    ) -> Result<Reply<Saved<Role>>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_put", "Role").await?;
        self.exists(&ROLES, pk.0).await?;
        let changes = resource::changes_from_body(&ROLES, &body.0.value, false)?;
        self.unique(&ROLES, "name", changes.get("name"), Some(pk.0))
            .await?;
        self.state
            .store
            .save(&ROLE, Some(pk.0), &changes, Some(me.user.id))
            .await?;
        Ok(Reply::new(
            json!({"id": pk.0, "result": resource::echo(&ROLES, &body.0.value)}),
        ))
    }

    /// Delete a role.
    #[oai(
        path = "/roles/:pk",
        method = "delete",
        operation_id = "security_roles_delete"
    )]
    async fn role_delete(&self, auth: Auth, pk: Path<i64>) -> Result<Json<Message>, ApiError> {
        resource::authorized(&self.state, &auth, "can_delete", "Role").await?;
        self.exists(&ROLES, pk.0).await?;
        self.state.store.delete_records(&ROLE_REF, &[pk.0]).await?;
        Ok(Json(Message {
            message: "OK".to_owned(),
        }))
    }

    /// Set a role's permissions (`{"permission_view_menu_ids": [...]}`).
    #[oai(
        path = "/roles/:pk/permissions",
        method = "post",
        operation_id = "security_roles_add_permissions"
    )]
    async fn role_permissions_post(
        &self,
        auth: Auth,
        pk: Path<i64>,
        body: JsonBody<Body<Obj<PermissionViewMenuIds>>>,
    ) -> Result<Json<ResultOf<PermissionViewMenuIds>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_add_role_permissions", "Role").await?;
        self.exists(&ROLES, pk.0).await?;
        let ids: Option<Vec<i64>> = body
            .0
            .value
            .get("permission_view_menu_ids")
            .and_then(Json_::as_array)
            .and_then(|a| a.iter().map(Json_::as_i64).collect());
        let Some(ids) = ids else {
            return Err(ApiError::fields(
                Fault::BadRequest,
                json!({"permission_view_menu_ids": ["Missing data for required field."]}),
            ));
        };
        let found = self.state.store.existing(&PERMISSION_VIEW, &ids).await?;
        if ids.iter().any(|i| !found.contains(i)) {
            return Err(ApiError::message(Fault::NotFound, "Not found"));
        }
        self.state.store.grant(pk.0, &ids, true).await?;
        Ok(ResultOf::json(PermissionViewMenuIds {
            permission_view_menu_ids: ids,
        }))
    }

    /// A role's permissions.
    #[oai(
        path = "/roles/:pk/permissions",
        method = "get",
        operation_id = "security_roles_list_permissions"
    )]
    async fn role_permissions(
        &self,
        auth: Auth,
        pk: Path<i64>,
    ) -> Result<Json<ResultOf<Vec<RolePermission>>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_list_role_permissions", "Role").await?;
        self.exists(&ROLES, pk.0).await?;
        let role = self
            .state
            .store
            .load_one(&ROLE, pk.0, &["permissions"])
            .await?;
        let ids: Vec<i64> = role.related("permissions").iter().map(|p| p.id).collect();
        let pvs = self
            .state
            .store
            .load(&PERMISSION_VIEW, &ids, &["permission", "view_menu"])
            .await?;
        Ok(ResultOf::json(
            pvs.iter()
                .map(|pv| RolePermission {
                    id: pv.id,
                    permission_name: pv.one("permission").map(|p| p.text("name")).into(),
                    view_menu_name: pv.one("view_menu").map(|v| v.text("name")).into(),
                })
                .collect(),
        ))
    }

    /// List permission names.
    #[oai(
        path = "/permissions",
        method = "get",
        operation_id = "security_permissions_list"
    )]
    async fn permissions(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<Permission>>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_get", "Permission").await?;
        resource::list(
            &self.state,
            &PERMISSIONS,
            qs(&q),
            Some(&me),
            Pred::all(),
            &no_custom,
            &none,
        )
        .await
    }

    /// List resources (view menus).
    #[oai(
        path = "/resources",
        method = "get",
        operation_id = "security_resources_list"
    )]
    async fn resources(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<ViewMenu>>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_get", "ViewMenu").await?;
        resource::list(
            &self.state,
            &RESOURCES,
            qs(&q),
            Some(&me),
            Pred::all(),
            &no_custom,
            &none,
        )
        .await
    }

    /// List (permission, resource) pairs.
    #[oai(
        path = "/permissions-resources",
        method = "get",
        operation_id = "security_permission_views_list"
    )]
    async fn permission_views(
        &self,
        auth: Auth,
        q: Query<Option<String>>,
    ) -> Result<Reply<List<PermissionViewMenu>>, ApiError> {
        let me = resource::authorized(&self.state, &auth, "can_get", "PermissionViewMenu").await?;
        resource::list(
            &self.state,
            &PERMISSION_VIEWS,
            qs(&q),
            Some(&me),
            Pred::all(),
            &no_custom,
            &none,
        )
        .await
    }

    /// One (permission, resource) pair.
    #[oai(
        path = "/permissions-resources/:pk",
        method = "get",
        operation_id = "security_permission_views_get"
    )]
    async fn permission_view(
        &self,
        auth: Auth,
        pk: Path<i64>,
        q: Query<Option<String>>,
    ) -> Result<Reply<Show<PermissionViewMenu>>, ApiError> {
        resource::authorized(&self.state, &auth, "can_get", "PermissionViewMenu").await?;
        self.exists(&PERMISSION_VIEWS, pk.0).await?;
        resource::show(&self.state, &PERMISSION_VIEWS, pk.0, qs(&q), &none).await
    }
}
