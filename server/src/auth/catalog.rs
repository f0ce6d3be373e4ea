//! The permission catalog and built-in role definitions of Superset 6.0.
//!
//! This module owns two things: the static list of `(permission, view_menu)` pairs ("pvms") that a
//! fresh Superset 6.0 holds after `superset db upgrade && superset init`, and the rules that derive
//! the built-in roles (Admin, Public, Alpha, Gamma, sql_lab) from that list, as
//! `SupersetSecurityManager.sync_role_definitions` does. It is pure data and pure functions: it never
//! touches the database. The metadata store syncs what it returns into the `ab_permission`,
//! `ab_view_menu`, `ab_permission_view`, `ab_role` and `ab_permission_view_role` tables.
//!
//! Where the data comes from:
//! - The catalog was checked against the `ab_*` tables of a real `superset init` (apache-superset
//!   6.0.0 with Flask-AppBuilder 5.0.0; 5.3.0 gives the same set) on an empty database with the
//!   default config (AUTH_TYPE = AUTH_DB, FAB_ADD_SECURITY_API = True, no feature flags). Its order is
//!   the order of `ab_permission_view.id` there. Inside one view menu that order is not stable even
//!   in Superset, because FAB iterates a Python `set` of permission names.
//! - The role rules are transcriptions of the `SupersetSecurityManager` class attributes
//!   (`ADMIN_ONLY_VIEW_MENUS`, `ALPHA_ONLY_PERMISSIONS`, `SQLLAB_ONLY_PERMISSIONS`, ...) and of its
//!   `_is_*_pvm` / `_is_*_only` predicates, kept under the same names so that they can be read side
//!   by side with `superset/security/manager.py`. The sets list names that a fresh install never
//!   creates (legacy views, "Access Requests", ...) because Superset lists them too.
//! - Per-object data-access pvms (`database_access`, `catalog_access`, `schema_access`,
//!   `datasource_access` on generated view menus such as `[db].(id:1)`) are not in the catalog: they
//!   are created per database, catalog, schema and dataset, and no built-in role is given them.

use std::sync::LazyLock;

/// A permission on a view menu, e.g. ("can_read", "Chart").
pub type Pvm = (&'static str, &'static str);

pub use crate::roles::{ADMIN, ALPHA, BUILTIN_ROLE_NAMES, GAMMA, PUBLIC, SQL_LAB};

/// Every pvm of a fresh Superset 6.0 after `superset init`, in creation order.
const CATALOG: [Pvm; 215] = [
    // `superset db upgrade`: pvms that migrations create before `superset init` runs, so they come
    // first in id order on a fresh database. The views and APIs registered at init declare them too.
    ("can_read", "SavedQuery"),
    ("can_write", "SavedQuery"),
    ("can_read", "CssTemplate"),
    ("can_write", "CssTemplate"),
    ("can_read", "ReportSchedule"),
    ("can_write", "ReportSchedule"),
    ("can_read", "Chart"),
    ("can_write", "Chart"),
    ("can_read", "Annotation"),
    ("can_write", "Annotation"),
    ("can_read", "Dataset"),
    ("can_write", "Dataset"),
    ("can_read", "Log"),
    ("can_write", "Log"),
    ("can_read", "Dashboard"),
    ("can_write", "Dashboard"),
    ("can_read", "Database"),
    ("can_write", "Database"),
    ("can_read", "Query"),
    ("can_upload", "Database"),
    // FAB security views for AUTH_DB (`SecurityManager.register_views`): form views first.
    ("can_this_form_post", "UserInfoEditView"),
    ("can_this_form_get", "UserInfoEditView"),
    ("can_this_form_post", "ResetPasswordView"),
    ("can_this_form_get", "ResetPasswordView"),
    ("can_this_form_post", "ResetMyPasswordView"),
    ("can_this_form_get", "ResetMyPasswordView"),
    // FAB security model views.
    ("can_show", "UserDBModelView"),
    ("can_userinfo", "UserDBModelView"),
    ("can_list", "UserDBModelView"),
    ("can_delete", "UserDBModelView"),
    ("can_add", "UserDBModelView"),
    ("can_download", "UserDBModelView"),
    ("can_edit", "UserDBModelView"),
    ("resetmypassword", "UserDBModelView"),
    ("resetpasswords", "UserDBModelView"),
    ("userinfoedit", "UserDBModelView"),
    ("can_show", "RoleModelView"),
    ("can_list", "RoleModelView"),
    ("can_delete", "RoleModelView"),
    ("can_add", "RoleModelView"),
    ("can_download", "RoleModelView"),
    ("can_edit", "RoleModelView"),
    ("copyrole", "RoleModelView"),
    ("can_show", "UserGroupModelView"),
    ("can_list", "UserGroupModelView"),
    ("can_delete", "UserGroupModelView"),
    ("can_add", "UserGroupModelView"),
    ("can_download", "UserGroupModelView"),
    ("can_edit", "UserGroupModelView"),
    // FAB security REST APIs (Superset sets FAB_ADD_SECURITY_API = True).
    ("can_get", "Permission"),
    ("can_info", "Permission"),
    ("can_delete", "Role"),
    ("can_info", "Role"),
    ("can_put", "Role"),
    ("can_list_role_permissions", "Role"),
    ("can_update_role_users", "Role"),
    ("can_post", "Role"),
    ("can_update_role_groups", "Role"),
    ("can_get", "Role"),
    ("can_add_role_permissions", "Role"),
    ("can_delete", "User"),
    ("can_info", "User"),
    ("can_put", "User"),
    ("can_post", "User"),
    ("can_get", "User"),
    ("can_delete", "ViewMenu"),
    ("can_info", "ViewMenu"),
    ("can_put", "ViewMenu"),
    ("can_post", "ViewMenu"),
    ("can_get", "ViewMenu"),
    ("can_delete", "PermissionViewMenu"),
    ("can_info", "PermissionViewMenu"),
    ("can_put", "PermissionViewMenu"),
    ("can_post", "PermissionViewMenu"),
    ("can_get", "PermissionViewMenu"),
    ("can_delete", "Group"),
    ("can_info", "Group"),
    ("can_put", "Group"),
    ("can_post", "Group"),
    ("can_get", "Group"),
    // FAB OpenAPI, Swagger UI and menu APIs.
    ("can_get", "OpenApi"),
    ("can_show", "SwaggerView"),
    ("can_get", "MenuApi"),
    // Superset REST APIs, in `init_views` add_api order (only pvms new at this point are listed).
    ("can_list", "AsyncEventsRestApi"),
    ("can_read", "AdvancedDataType"),
    ("can_read", "AvailableDomains"),
    ("can_invalidate", "CacheRestApi"),
    ("can_warm_up_cache", "Chart"),
    ("can_export", "Chart"),
    ("can_read", "Theme"),
    ("can_write", "Theme"),
    ("can_export", "Theme"),
    ("can_read", "DashboardFilterStateRestApi"),
    ("can_write", "DashboardFilterStateRestApi"),
    ("can_read", "DashboardPermalinkRestApi"),
    ("can_write", "DashboardPermalinkRestApi"),
    ("can_cache_dashboard_screenshot", "Dashboard"),
    ("can_get_embedded", "Dashboard"),
    ("can_export", "Dashboard"),
    ("can_delete_embedded", "Dashboard"),
    ("can_set_embedded", "Dashboard"),
    ("can_export", "Database"),
    ("can_get_or_create_dataset", "Dataset"),
    ("can_get_drill_info", "Dataset"),
    ("can_warm_up_cache", "Dataset"),
    ("can_export", "Dataset"),
    ("can_duplicate", "Dataset"),
    ("can_get_column_values", "Datasource"),
    ("can_read", "EmbeddedDashboard"),
    ("can_read", "Explore"),
    ("can_read", "ExploreFormDataRestApi"),
    ("can_write", "ExploreFormDataRestApi"),
    ("can_read", "ExplorePermalinkRestApi"),
    ("can_write", "ExplorePermalinkRestApi"),
    ("can_import_", "ImportExportRestApi"),
    ("can_export", "ImportExportRestApi"),
    ("can_read", "Row Level Security"),
    ("can_write", "Row Level Security"),
    ("can_export", "SavedQuery"),
    ("can_read", "Tag"),
    ("can_bulk_create", "Tag"),
    ("can_write", "Tag"),
    ("can_read", "SQLLab"),
    ("can_get_results", "SQLLab"),
    ("can_format_sql", "SQLLab"),
    ("can_export_csv", "SQLLab"),
    ("can_estimate_query_cost", "SQLLab"),
    ("can_execute_sql_query", "SQLLab"),
    ("can_read", "SqlLabPermalinkRestApi"),
    ("can_write", "SqlLabPermalinkRestApi"),
    ("can_recent_activity", "Log"),
    // Superset views (add_view / add_view_no_menu) and the APIs registered among them: RolesListView
    // & co. ("security"), DynamicPluginsView, Api, Datasource, SavedQueryView, Superset, TableSchemaView,
    // TabStateView, TaggedObjectsModelView, TagView, RoleRestAPI, UserInfoView ("user"),
    // UserRegistrationsRestAPI, SecurityRestApi, RowLevelSecurityView.
    ("can_read", "security"),
    ("can_show", "DynamicPlugin"),
    ("can_list", "DynamicPlugin"),
    ("can_write", "DynamicPlugin"),
    ("can_add", "DynamicPlugin"),
    ("can_download", "DynamicPlugin"),
    ("can_edit", "DynamicPlugin"),
    ("can_time_range", "Api"),
    ("can_query_form_data", "Api"),
    ("can_query", "Api"),
    ("can_samples", "Datasource"),
    ("can_save", "Datasource"),
    ("can_get", "Datasource"),
    ("can_external_metadata_by_name", "Datasource"),
    ("can_external_metadata", "Datasource"),
    ("can_list", "SavedQuery"),
    ("can_explore_json", "Superset"),
    ("can_explore", "Superset"),
    ("can_slice", "Superset"),
    ("can_sqllab_history", "Superset"),
    ("can_log", "Superset"),
    ("can_dashboard", "Superset"),
    ("can_language_pack", "Superset"),
    ("can_warm_up_cache", "Superset"),
    ("can_dashboard_permalink", "Superset"),
    ("can_fetch_datasource_metadata", "Superset"),
    ("can_delete", "TableSchemaView"),
    ("can_expanded", "TableSchemaView"),
    ("can_post", "TableSchemaView"),
    ("can_delete", "TabStateView"),
    ("can_put", "TabStateView"),
    ("can_delete_query", "TabStateView"),
    ("can_activate", "TabStateView"),
    ("can_post", "TabStateView"),
    ("can_get", "TabStateView"),
    ("can_migrate_query", "TabStateView"),
    ("can_list", "Tags"),
    ("can_tags", "TagView"),
    ("can_list_roles", "RoleRestAPI"),
    ("can_read", "user"),
    ("can_show", "UserRegistrationsRestAPI"),
    ("can_list", "UserRegistrationsRestAPI"),
    ("can_delete", "UserRegistrationsRestAPI"),
    ("can_add", "UserRegistrationsRestAPI"),
    ("can_edit", "UserRegistrationsRestAPI"),
    ("can_read", "SecurityRestApi"),
    ("can_grant_guest_token", "SecurityRestApi"),
    ("can_read", "RowLevelSecurity"),
    // Menu entries (`_add_menu_permissions`), in menu order; menu_cond does not stop the perm being
    // created, so feature-flagged menus (Plugins, Tags, Alerts & Report, CSS Templates) are here too.
    ("menu_access", "Security"),
    ("menu_access", "List Roles"),
    ("menu_access", "User Registrations"),
    ("menu_access", "List Users"),
    ("menu_access", "List Groups"),
    ("menu_access", "Action Log"),
    ("menu_access", "Row Level Security"),
    ("menu_access", "Home"),
    ("menu_access", "Data"),
    ("menu_access", "Databases"),
    ("menu_access", "Dashboards"),
    ("menu_access", "Charts"),
    ("menu_access", "Datasets"),
    ("menu_access", "Manage"),
    ("menu_access", "Plugins"),
    ("menu_access", "CSS Templates"),
    ("menu_access", "Themes"),
    ("menu_access", "Tags"),
    ("menu_access", "Alerts & Report"),
    ("menu_access", "Annotation Layers"),
    ("menu_access", "SQL Lab"),
    ("menu_access", "SQL Editor"),
    ("menu_access", "Saved Queries"),
    ("menu_access", "Query Search"),
    // `SupersetSecurityManager.create_custom_permissions`. can_view_query / can_view_chart_as_table on
    // Dashboard first come from a migration, but no Dashboard view declares them and no role holds them
    // yet, so `add_permissions(update_perms=True)` deletes them; they are created again here.
    ("all_datasource_access", "all_datasource_access"),
    ("all_database_access", "all_database_access"),
    ("all_query_access", "all_query_access"),
    ("can_csv", "Superset"),
    ("can_share_dashboard", "Superset"),
    ("can_share_chart", "Superset"),
    ("can_sqllab", "Superset"),
    ("can_view_query", "Dashboard"),
    ("can_view_chart_as_table", "Dashboard"),
    ("can_drill", "Dashboard"),
    ("can_tag", "Chart"),
    ("can_tag", "Dashboard"),
];

/// Every (permission, view_menu) pair that a fresh Superset 6.0 has after `superset init`, excluding
/// the per-object data-access perms (database_access/schema_access/catalog_access/datasource_access
/// on generated view menus). Includes the REST API perms, the FAB security perms, the `menu_access`
/// entries, `all_database_access` / `all_datasource_access` / `all_query_access`, and the legacy
/// Superset view perms that still exist in 6.0.
pub fn all_pvms() -> &'static [Pvm] {
    &CATALOG
}

// --- SupersetSecurityManager class attributes (superset/security/manager.py) ---------------------
//
// Python writes some of these as unions (`{...} | USER_MODEL_VIEWS`); here the union is spelt out
// in the predicate that reads them.

/// Views whose non-read perms are admin-only.
const READ_ONLY_MODEL_VIEWS: &[&str] = &["Database", "DynamicPlugin"];

const USER_MODEL_VIEWS: &[&str] = &[
    "RegisterUserModelView",
    "UserDBModelView",
    "UserLDAPModelView",
    "UserInfoEditView",
    "UserOAuthModelView",
    "UserOIDModelView",
    "UserRemoteUserModelView",
];

/// Views whose non-read perms are alpha-only; Superset's set also includes READ_ONLY_MODEL_VIEWS.
const GAMMA_READ_ONLY_MODEL_VIEWS: &[&str] = &["Dataset", "Datasource"];

/// Superset's set also includes USER_MODEL_VIEWS.
const ADMIN_ONLY_VIEW_MENUS: &[&str] = &[
    "Access Requests",
    "Action Logs",
    "Log",
    "List Users",
    "UsersListView",
    "List Roles",
    "List Groups",
    "ResetPasswordView",
    "RoleModelView",
    "UserGroupModelView",
    "Row Level Security",
    "Row Level Security Filters",
    "Security",
    "SQL Lab",
    "User Registrations",
    "User's Statistics",
    // Guarding all AB_ADD_SECURITY_API = True REST APIs.
    "RoleRestAPI",
    "Group",
    "Role",
    "Permission",
    "PermissionViewMenu",
    "ViewMenu",
    "User",
];

const ALPHA_ONLY_VIEW_MENUS: &[&str] = &[
    "Alerts & Report",
    "Annotation Layers",
    "Annotation",
    "CSS Templates",
    "ColumnarToDatabaseView",
    "CssTemplate",
    "ExcelToDatabaseView",
    "Import dashboards",
    "ImportExportRestApi",
    "Manage",
    "Queries",
    "ReportSchedule",
];

/// Pvms that Alpha gets even though the rules above would make them admin-only.
const ALPHA_ONLY_PMVS: &[Pvm] = &[("can_upload", "Database")];

const ADMIN_ONLY_PERMISSIONS: &[&str] = &[
    "update_roles_users",
    "list_roles",
    "can_update_role",
    "all_query_access",
    "can_grant_guest_token",
    "can_set_embedded",
    "can_warm_up_cache",
];

const READ_ONLY_PERMISSION: &[&str] = &[
    "can_show",
    "can_list",
    "can_get",
    "can_external_metadata",
    "can_external_metadata_by_name",
    "can_read",
    "can_get_drill_info",
];

const ALPHA_ONLY_PERMISSIONS: &[&str] =
    &["muldelete", "all_database_access", "all_datasource_access"];

/// Per-object data-access permissions: granted by hand, never by a built-in role.
const OBJECT_SPEC_PERMISSIONS: &[&str] = &[
    "database_access",
    "catalog_access",
    "schema_access",
    "datasource_access",
];

/// Permissions every built-in role except sql_lab gets, whatever the view menu.
const ACCESSIBLE_PERMS: &[&str] = &["can_userinfo", "resetmypassword", "can_recent_activity"];

/// Pvms reserved to sql_lab (and Admin). Some are never created in 6.0, e.g.
/// ("can_estimate_query_cost", "SQL Lab") and ("can_export_csv", "Query").
const SQLLAB_ONLY_PERMISSIONS: &[Pvm] = &[
    ("can_read", "SavedQuery"),
    ("can_write", "SavedQuery"),
    ("can_export", "SavedQuery"),
    ("can_read", "Query"),
    ("can_export_csv", "Query"),
    ("can_get_results", "SQLLab"),
    ("can_execute_sql_query", "SQLLab"),
    ("can_estimate_query_cost", "SQL Lab"),
    ("can_export_csv", "SQLLab"),
    ("can_read", "SQLLab"),
    ("can_sqllab_history", "Superset"),
    ("can_sqllab", "Superset"),
    ("can_test_conn", "Superset"),
    ("can_activate", "TabStateView"),
    ("can_get", "TabStateView"),
    ("can_delete_query", "TabStateView"),
    ("can_post", "TabStateView"),
    ("can_delete", "TabStateView"),
    ("can_put", "TabStateView"),
    ("can_migrate_query", "TabStateView"),
    ("menu_access", "SQL Lab"),
    ("menu_access", "SQL Editor"),
    ("menu_access", "Saved Queries"),
    ("menu_access", "Query Search"),
    ("can_read", "SqlLabPermalinkRestApi"),
    ("can_write", "SqlLabPermalinkRestApi"),
    ("can_post", "TableSchemaView"),
    ("can_expanded", "TableSchemaView"),
    ("can_delete", "TableSchemaView"),
];

/// Pvms sql_lab gets that other roles may have too.
const SQLLAB_EXTRA_PERMISSION_VIEWS: &[Pvm] = &[
    ("can_csv", "Superset"),
    ("can_read", "Superset"),
    ("can_read", "Database"),
];

// --- SupersetSecurityManager predicates ----------------------------------------------------------

fn is_user_defined_permission((perm, _): Pvm) -> bool {
    OBJECT_SPEC_PERMISSIONS.contains(&perm)
}

/// `_is_admin_only`: reads on READ_ONLY_MODEL_VIEWS are the exception, not the rule, so any other
/// perm on those views is admin-only.
fn is_admin_only(pvm: Pvm) -> bool {
    let (perm, view) = pvm;
    if ALPHA_ONLY_PMVS.contains(&pvm) {
        return false;
    }
    if READ_ONLY_MODEL_VIEWS.contains(&view) && !READ_ONLY_PERMISSION.contains(&perm) {
        return true;
    }
    ADMIN_ONLY_VIEW_MENUS.contains(&view)
        || USER_MODEL_VIEWS.contains(&view)
        || ADMIN_ONLY_PERMISSIONS.contains(&perm)
}

fn is_alpha_only(pvm: Pvm) -> bool {
    let (perm, view) = pvm;
    let gamma_read_only_view =
        GAMMA_READ_ONLY_MODEL_VIEWS.contains(&view) || READ_ONLY_MODEL_VIEWS.contains(&view);
    if gamma_read_only_view && !READ_ONLY_PERMISSION.contains(&perm) {
        return true;
    }
    if ALPHA_ONLY_PMVS.contains(&pvm) {
        return true;
    }
    ALPHA_ONLY_VIEW_MENUS.contains(&view) || ALPHA_ONLY_PERMISSIONS.contains(&perm)
}

fn is_accessible_to_all((perm, _): Pvm) -> bool {
    ACCESSIBLE_PERMS.contains(&perm)
}

fn is_admin_pvm(pvm: Pvm) -> bool {
    !is_user_defined_permission(pvm)
}

fn is_alpha_pvm(pvm: Pvm) -> bool {
    !(is_user_defined_permission(pvm) || is_admin_only(pvm) || is_sql_lab_only(pvm))
        || is_accessible_to_all(pvm)
}

fn is_gamma_pvm(pvm: Pvm) -> bool {
    !(is_user_defined_permission(pvm)
        || is_admin_only(pvm)
        || is_alpha_only(pvm)
        || is_sql_lab_only(pvm))
        || is_accessible_to_all(pvm)
}

fn is_sql_lab_only(pvm: Pvm) -> bool {
    SQLLAB_ONLY_PERMISSIONS.contains(&pvm)
}

fn is_sql_lab_pvm(pvm: Pvm) -> bool {
    is_sql_lab_only(pvm) || SQLLAB_EXTRA_PERMISSION_VIEWS.contains(&pvm)
}

/// `set_role`: the role gets every catalog pvm that passes its check, in catalog order.
fn derive_role(check: fn(Pvm) -> bool) -> Vec<Pvm> {
    CATALOG.iter().copied().filter(|&pvm| check(pvm)).collect()
}

/// The roles `sync_role_definitions` derives, in the order it derives them.
static DERIVED_ROLES: LazyLock<[(&str, Vec<Pvm>); 4]> = LazyLock::new(|| {
    [
        (ADMIN, derive_role(is_admin_pvm)),
        (ALPHA, derive_role(is_alpha_pvm)),
        (GAMMA, derive_role(is_gamma_pvm)),
        (SQL_LAB, derive_role(is_sql_lab_pvm)),
    ]
});

fn derived_role(name: &str) -> Option<&'static [Pvm]> {
    DERIVED_ROLES
        .iter()
        .find(|(role, _)| *role == name)
        .map(|(_, pvms)| pvms.as_slice())
}

/// What viewing an embedded dashboard needs: a guest token grants it for the dashboards it
/// names, whatever the guest role holds (reading the dashboard, its charts and their data, the
/// CSRF token the app asks for, native filters' state and the SDK's permalinks).
const GUEST_FLOOR: &[Pvm] = &[
    ("can_read", "Dashboard"),
    ("can_read", "Chart"),
    ("can_read", "SecurityRestApi"),
    ("can_read", "DashboardFilterStateRestApi"),
    ("can_write", "DashboardFilterStateRestApi"),
    ("can_read", "DashboardPermalinkRestApi"),
    ("can_write", "DashboardPermalinkRestApi"),
];

/// What else a guest may be given through its role (`embedded.guest_role_name`): viewing
/// powers only. Whatever the role holds beyond these (writes, SQL Lab, the catalog, other
/// users' data) never reaches a guest, so naming a powerful role cannot open more than
/// the embedded dashboards.
const GUEST_CEILING: &[Pvm] = &[
    ("can_csv", "Superset"),
    ("can_share_dashboard", "Superset"),
    ("can_share_chart", "Superset"),
    ("can_view_chart_as_table", "Dashboard"),
    ("can_view_query", "Dashboard"),
];

/// A guest's grants: the floor, plus the guest role's grants within the ceiling.
pub fn guest_permissions(
    role: &std::collections::HashSet<(String, String)>,
) -> std::collections::HashSet<(String, String)> {
    GUEST_FLOOR
        .iter()
        .chain(
            GUEST_CEILING
                .iter()
                .filter(|(p, v)| role.contains(&((*p).to_owned(), (*v).to_owned()))),
        )
        .map(|(p, v)| ((*p).to_owned(), (*v).to_owned()))
        .collect()
}

/// The pvms of each built-in role, computed from [`all_pvms`] with Superset's predicates.
///
/// Public is empty unless `public_role_like` (Superset's `PUBLIC_ROLE_LIKE`) names one of the other
/// built-in roles, in which case it gets a copy of that role's pvms (`copy_role`). Superset would
/// fail on a name that is not a role at all; here such a name, like `None`, leaves Public empty.
/// Roles come in creation order, see [`BUILTIN_ROLE_NAMES`].
pub fn builtin_roles(public_role_like: Option<&str>) -> Vec<(&'static str, Vec<Pvm>)> {
    BUILTIN_ROLE_NAMES
        .iter()
        .map(|&name| {
            let source = if name == PUBLIC {
                public_role_like.and_then(derived_role)
            } else {
                derived_role(name)
            };
            (name, source.map(<[Pvm]>::to_vec).unwrap_or_default())
        })
        .collect()
}

/// The permission kinds of MODEL_API_RW_METHOD_PERMISSION_MAP ("read", "write", "upload").
#[derive(Clone, Copy)]
enum Rw {
    Read,
    Write,
    Upload,
}

impl Rw {
    /// FAB's `@protect()` requires `can_<kind>`.
    const fn permission(self) -> &'static str {
        match self {
            Rw::Read => "can_read",
            Rw::Write => "can_write",
            Rw::Upload => "can_upload",
        }
    }
}

/// Superset's MODEL_API_RW_METHOD_PERMISSION_MAP (superset/constants.py), in its order.
const MODEL_API_RW_METHOD_PERMISSION_MAP: &[(&str, Rw)] = &[
    ("bulk_delete", Rw::Write),
    ("delete", Rw::Write),
    ("distinct", Rw::Read),
    ("get", Rw::Read),
    ("get_list", Rw::Read),
    ("info", Rw::Read),
    ("post", Rw::Write),
    ("put", Rw::Write),
    ("related", Rw::Read),
    ("related_objects", Rw::Read),
    ("tables", Rw::Read),
    ("schemas", Rw::Read),
    ("catalogs", Rw::Read),
    ("select_star", Rw::Read),
    ("table_metadata", Rw::Read),
    ("table_metadata_deprecated", Rw::Read),
    ("table_extra_metadata", Rw::Read),
    ("table_extra_metadata_deprecated", Rw::Read),
    ("test_connection", Rw::Write),
    ("validate_parameters", Rw::Write),
    ("favorite_status", Rw::Read),
    ("add_favorite", Rw::Read),
    ("remove_favorite", Rw::Read),
    ("thumbnail", Rw::Read),
    ("import_", Rw::Write),
    ("refresh", Rw::Write),
    ("cache_screenshot", Rw::Read),
    ("screenshot", Rw::Read),
    ("data", Rw::Read),
    ("data_from_cache", Rw::Read),
    ("get_charts", Rw::Read),
    ("get_datasets", Rw::Read),
    ("get_tabs", Rw::Read),
    ("function_names", Rw::Read),
    ("available", Rw::Read),
    ("validate_sql", Rw::Read),
    ("get_data", Rw::Read),
    ("samples", Rw::Read),
    ("delete_ssh_tunnel", Rw::Write),
    ("get_updated_since", Rw::Read),
    ("stop_query", Rw::Read),
    ("get_user_slices", Rw::Read),
    ("schemas_access_for_file_upload", Rw::Read),
    ("get_objects", Rw::Read),
    ("get_all_objects", Rw::Read),
    ("add_objects", Rw::Write),
    ("delete_object", Rw::Write),
    ("copy_dash", Rw::Write),
    ("get_connection", Rw::Write),
    ("upload_metadata", Rw::Upload),
    ("slack_channels", Rw::Write),
    ("put_filters", Rw::Write),
    ("put_colors", Rw::Write),
    ("sync_permissions", Rw::Write),
];

/// The permission required by each API method kind, Superset's MODEL_API_RW_METHOD_PERMISSION_MAP
/// with FAB's `can_` prefix: `get_list` needs `can_read`, `post` needs `can_write`. Methods outside
/// the map (`export`, `set_embedded`, ...) need `can_<method>`, which is for the caller to build.
pub fn method_permission(method: &str) -> Option<&'static str> {
    MODEL_API_RW_METHOD_PERMISSION_MAP
        .iter()
        .find(|(name, _)| *name == method)
        .map(|(_, kind)| kind.permission())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn role(name: &str) -> Vec<Pvm> {
        builtin_roles(None)
            .into_iter()
            .find(|(role, _)| *role == name)
            .map(|(_, pvms)| pvms)
            .unwrap_or_else(|| panic!("no built-in role {name}"))
    }

    fn set(pvms: &[Pvm]) -> HashSet<Pvm> {
        pvms.iter().copied().collect()
    }

    #[test]
    fn catalog_has_the_215_pvms_of_a_fresh_superset_without_duplicates() {
        assert_eq!(all_pvms().len(), 215);
        assert_eq!(set(all_pvms()).len(), all_pvms().len());
    }

    #[test]
    fn catalog_holds_no_per_object_data_access_pvms() {
        assert!(
            all_pvms()
                .iter()
                .all(|&(perm, _)| !OBJECT_SPEC_PERMISSIONS.contains(&perm))
        );
    }

    #[test]
    fn catalog_holds_api_security_menu_and_legacy_pvms() {
        let catalog = set(all_pvms());
        for pvm in [
            ("can_read", "Chart"),
            ("can_write", "Dashboard"),
            ("can_upload", "Database"),
            ("can_get_drill_info", "Dataset"),
            ("can_execute_sql_query", "SQLLab"),
            ("can_read", "Row Level Security"),
            ("can_recent_activity", "Log"),
            ("can_list", "AsyncEventsRestApi"),
            ("can_read", "AvailableDomains"),
            ("can_grant_guest_token", "SecurityRestApi"),
            ("can_import_", "ImportExportRestApi"),
            ("can_export", "ImportExportRestApi"),
            ("can_list_role_permissions", "Role"),
            ("can_add", "UserDBModelView"),
            ("menu_access", "List Users"),
            ("menu_access", "SQL Editor"),
            ("all_database_access", "all_database_access"),
            ("all_datasource_access", "all_datasource_access"),
            ("all_query_access", "all_query_access"),
            ("can_explore_json", "Superset"),
            ("can_tag", "Dashboard"),
        ] {
            assert!(catalog.contains(&pvm), "missing {pvm:?}");
        }
    }

    #[test]
    fn catalog_lacks_pvms_superset_names_but_never_creates() {
        let catalog = set(all_pvms());
        for pvm in [
            ("can_estimate_query_cost", "SQL Lab"),
            ("can_export_csv", "Query"),
            ("can_read", "Superset"),
            ("can_test_conn", "Superset"),
            ("can_write", "Query"),
        ] {
            assert!(!catalog.contains(&pvm), "unexpected {pvm:?}");
        }
    }

    #[test]
    fn roles_come_in_creation_order_with_public_second() {
        let names: Vec<_> = builtin_roles(None).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["Admin", "Public", "Alpha", "Gamma", "sql_lab"]);
    }

    #[test]
    fn role_sizes_match_a_fresh_superset() {
        let sizes: Vec<_> = builtin_roles(None)
            .into_iter()
            .map(|(name, pvms)| (name, pvms.len()))
            .collect();
        assert_eq!(
            sizes,
            [
                ("Admin", 215),
                ("Public", 0),
                ("Alpha", 110),
                ("Gamma", 88),
                ("sql_lab", 28)
            ]
        );
    }

    #[test]
    fn admin_has_every_catalog_pvm_in_catalog_order() {
        assert_eq!(role(ADMIN), all_pvms());
        let admin = set(&role(ADMIN));
        for pvm in [
            ("can_read", "Chart"),
            ("can_write", "Database"),
            ("can_grant_guest_token", "SecurityRestApi"),
            ("all_query_access", "all_query_access"),
            ("can_read", "SecurityRestApi"),
        ] {
            assert!(admin.contains(&pvm), "Admin lacks {pvm:?}");
        }
    }

    #[test]
    fn alpha_has_all_data_access_and_upload_but_no_administration() {
        let alpha = set(&role(ALPHA));
        for pvm in [
            ("can_write", "Dataset"),
            ("all_datasource_access", "all_datasource_access"),
            ("all_database_access", "all_database_access"),
            ("can_upload", "Database"),
            ("can_read", "Database"),
            ("can_export", "ImportExportRestApi"),
            ("can_write", "CssTemplate"),
            ("can_recent_activity", "Log"),
            ("can_userinfo", "UserDBModelView"),
        ] {
            assert!(alpha.contains(&pvm), "Alpha lacks {pvm:?}");
        }
        for pvm in [
            ("can_write", "Database"),
            ("can_export", "Database"),
            ("can_grant_guest_token", "SecurityRestApi"),
            ("can_set_embedded", "Dashboard"),
            ("can_warm_up_cache", "Chart"),
            ("all_query_access", "all_query_access"),
            ("menu_access", "Security"),
            ("menu_access", "List Users"),
            ("menu_access", "List Roles"),
            ("can_read", "Row Level Security"),
            ("can_read", "Log"),
            ("can_get", "User"),
            ("can_list_roles", "RoleRestAPI"),
            ("can_write", "DynamicPlugin"),
        ] {
            assert!(!alpha.contains(&pvm), "Alpha has {pvm:?}");
        }
    }

    #[test]
    fn alpha_lacks_sql_lab_only_pvms() {
        let alpha = set(&role(ALPHA));
        for pvm in [
            ("can_execute_sql_query", "SQLLab"),
            ("can_read", "SavedQuery"),
            ("can_read", "Query"),
            ("menu_access", "SQL Lab"),
        ] {
            assert!(!alpha.contains(&pvm), "Alpha has {pvm:?}");
        }
    }

    #[test]
    fn gamma_edits_charts_and_dashboards_but_not_data() {
        let gamma = set(&role(GAMMA));
        for pvm in [
            ("can_read", "Chart"),
            ("can_write", "Chart"),
            ("can_write", "Dashboard"),
            ("can_read", "Dataset"),
            ("can_get_drill_info", "Dataset"),
            ("can_read", "Database"),
            ("can_recent_activity", "Log"),
        ] {
            assert!(gamma.contains(&pvm), "Gamma lacks {pvm:?}");
        }
        for pvm in [
            ("can_write", "Dataset"),
            ("can_export", "Dataset"),
            ("all_datasource_access", "all_datasource_access"),
            ("all_database_access", "all_database_access"),
            ("can_export", "ImportExportRestApi"),
            ("can_upload", "Database"),
            ("can_read", "ReportSchedule"),
            ("can_read", "Annotation"),
            ("menu_access", "Manage"),
        ] {
            assert!(!gamma.contains(&pvm), "Gamma has {pvm:?}");
        }
    }

    #[test]
    fn alpha_is_gamma_plus_the_alpha_only_grants() {
        let alpha = set(&role(ALPHA));
        let gamma = set(&role(GAMMA));
        assert!(gamma.is_subset(&alpha));
        let alpha_only: HashSet<Pvm> = alpha.difference(&gamma).copied().collect();
        let expected = set(&[
            ("all_database_access", "all_database_access"),
            ("all_datasource_access", "all_datasource_access"),
            ("can_duplicate", "Dataset"),
            ("can_export", "Dataset"),
            ("can_export", "ImportExportRestApi"),
            ("can_get_column_values", "Datasource"),
            ("can_get_or_create_dataset", "Dataset"),
            ("can_import_", "ImportExportRestApi"),
            ("can_read", "Annotation"),
            ("can_read", "CssTemplate"),
            ("can_read", "ReportSchedule"),
            ("can_samples", "Datasource"),
            ("can_save", "Datasource"),
            ("can_upload", "Database"),
            ("can_write", "Annotation"),
            ("can_write", "CssTemplate"),
            ("can_write", "Dataset"),
            ("can_write", "ReportSchedule"),
            ("menu_access", "Alerts & Report"),
            ("menu_access", "Annotation Layers"),
            ("menu_access", "CSS Templates"),
            ("menu_access", "Manage"),
        ]);
        assert_eq!(alpha_only, expected);
    }

    #[test]
    fn sql_lab_has_exactly_the_sql_lab_pvms_that_exist() {
        let expected = set(&[
            ("can_read", "SavedQuery"),
            ("can_write", "SavedQuery"),
            ("can_export", "SavedQuery"),
            ("can_read", "Query"),
            ("can_read", "Database"),
            ("can_read", "SQLLab"),
            ("can_get_results", "SQLLab"),
            ("can_export_csv", "SQLLab"),
            ("can_execute_sql_query", "SQLLab"),
            ("can_read", "SqlLabPermalinkRestApi"),
            ("can_write", "SqlLabPermalinkRestApi"),
            ("can_sqllab_history", "Superset"),
            ("can_sqllab", "Superset"),
            ("can_csv", "Superset"),
            ("can_delete", "TableSchemaView"),
            ("can_expanded", "TableSchemaView"),
            ("can_post", "TableSchemaView"),
            ("can_activate", "TabStateView"),
            ("can_get", "TabStateView"),
            ("can_delete_query", "TabStateView"),
            ("can_post", "TabStateView"),
            ("can_delete", "TabStateView"),
            ("can_put", "TabStateView"),
            ("can_migrate_query", "TabStateView"),
            ("menu_access", "SQL Lab"),
            ("menu_access", "SQL Editor"),
            ("menu_access", "Saved Queries"),
            ("menu_access", "Query Search"),
        ]);
        assert_eq!(set(&role(SQL_LAB)), expected);
        // The Alpha/Gamma estimate-cost perm is on "SQLLab"; the sql_lab one names "SQL Lab",
        // which 6.0 never creates.
        assert!(!expected.contains(&("can_estimate_query_cost", "SQLLab")));
    }

    #[test]
    fn sql_lab_covers_the_spec_list_wherever_the_catalog_has_it() {
        let sql_lab = set(&role(SQL_LAB));
        let catalog = set(all_pvms());
        let spec = [
            ("can_read", "SavedQuery"),
            ("can_write", "SavedQuery"),
            ("can_export", "SavedQuery"),
            ("can_read", "Query"),
            ("can_execute_sql_query", "SQLLab"),
            ("can_get_results", "SQLLab"),
            ("can_export_csv", "SQLLab"),
            ("can_read", "SQLLab"),
            ("can_estimate_query_cost", "SQL Lab"),
            ("can_read", "Database"),
            ("can_read", "Superset"),
        ];
        for pvm in spec.into_iter().filter(|pvm| catalog.contains(pvm)) {
            assert!(sql_lab.contains(&pvm), "sql_lab lacks {pvm:?}");
        }
        let admin = set(&role(ADMIN));
        assert!(sql_lab.is_subset(&admin));
    }

    #[test]
    fn public_is_empty_by_default() {
        assert!(role(PUBLIC).is_empty());
    }

    #[test]
    fn public_copies_the_role_named_by_public_role_like() {
        for like in [ADMIN, ALPHA, GAMMA, SQL_LAB] {
            let roles = builtin_roles(Some(like));
            let public = &roles.iter().find(|(n, _)| *n == PUBLIC).expect("Public").1;
            let source = &roles.iter().find(|(n, _)| *n == like).expect("source").1;
            assert_eq!(public, source, "Public like {like}");
        }
        assert_eq!(builtin_roles(Some("Gamma"))[1], (PUBLIC, role(GAMMA)));
    }

    #[test]
    fn public_role_like_naming_no_builtin_role_leaves_public_empty() {
        for like in ["NoSuchRole", "gamma", "Public", ""] {
            assert!(
                builtin_roles(Some(like))[1].1.is_empty(),
                "Public like {like:?}"
            );
        }
    }

    #[test]
    fn no_role_has_duplicates_and_every_role_pvm_is_in_the_catalog() {
        let catalog = set(all_pvms());
        for (name, pvms) in builtin_roles(Some(GAMMA)) {
            assert_eq!(set(&pvms).len(), pvms.len(), "duplicates in {name}");
            assert!(
                pvms.iter().all(|pvm| catalog.contains(pvm)),
                "{name} outside catalog"
            );
        }
    }

    #[test]
    fn every_role_but_sql_lab_gets_the_accessible_to_all_pvms() {
        let accessible: Vec<Pvm> = all_pvms()
            .iter()
            .copied()
            .filter(|&pvm| is_accessible_to_all(pvm))
            .collect();
        assert_eq!(
            set(&accessible),
            set(&[
                ("can_userinfo", "UserDBModelView"),
                ("resetmypassword", "UserDBModelView"),
                ("can_recent_activity", "Log"),
            ])
        );
        for name in [ADMIN, ALPHA, GAMMA] {
            let pvms = set(&role(name));
            assert!(accessible.iter().all(|pvm| pvms.contains(pvm)), "{name}");
        }
    }

    #[test]
    fn per_object_data_access_pvms_belong_to_no_builtin_role() {
        for pvm in [
            ("database_access", "[examples].(id:1)"),
            ("catalog_access", "[examples].[main]"),
            ("schema_access", "[examples].[public]"),
            ("datasource_access", "[examples].[birth_names](id:3)"),
        ] {
            assert!(!is_admin_pvm(pvm));
            assert!(!is_alpha_pvm(pvm));
            assert!(!is_gamma_pvm(pvm));
            assert!(!is_sql_lab_pvm(pvm));
        }
    }

    #[test]
    fn method_permission_follows_the_rw_map() {
        assert_eq!(method_permission("get_list"), Some("can_read"));
        assert_eq!(method_permission("get"), Some("can_read"));
        assert_eq!(method_permission("related"), Some("can_read"));
        assert_eq!(method_permission("post"), Some("can_write"));
        assert_eq!(method_permission("bulk_delete"), Some("can_write"));
        assert_eq!(method_permission("import_"), Some("can_write"));
        assert_eq!(method_permission("get_connection"), Some("can_write"));
        assert_eq!(method_permission("upload_metadata"), Some("can_upload"));
    }

    #[test]
    fn method_permission_is_none_for_methods_outside_the_map() {
        for method in [
            "export",
            "set_embedded",
            "warm_up_cache",
            "upload",
            "",
            "GET",
        ] {
            assert_eq!(method_permission(method), None, "{method:?}");
        }
    }

    #[test]
    fn method_permission_map_has_no_duplicate_methods() {
        let methods: HashSet<_> = MODEL_API_RW_METHOD_PERMISSION_MAP
            .iter()
            .map(|(m, _)| m)
            .collect();
        assert_eq!(methods.len(), MODEL_API_RW_METHOD_PERMISSION_MAP.len());
    }
}
