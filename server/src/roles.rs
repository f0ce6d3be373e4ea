//! The names of the built-in roles. A leaf module: the configuration checks
//! `auth.public_role_like` against them and `auth` builds the roles, so neither depends on
//! the other for them.

/// Name of the built-in administrator role (`AUTH_ROLE_ADMIN`).
pub const ADMIN: &str = "Admin";
/// Name of the built-in role for power users: Admin minus user and security administration.
pub const ALPHA: &str = "Alpha";
/// Name of the built-in role for consumers: no data access except what is granted per object.
pub const GAMMA: &str = "Gamma";
/// Name of the built-in SQL Lab role, meant to be added on top of Gamma.
pub const SQL_LAB: &str = "sql_lab";
/// Name of the role of anonymous users and, by default, of embedded guest users
/// (`AUTH_ROLE_PUBLIC`, `GUEST_ROLE_NAME`).
pub const PUBLIC: &str = "Public";

/// Built-in role names in creation order, so in the order of `ab_role.id` on a fresh install.
///
/// FAB's `create_db` makes Admin and Public when the app starts (ids 1 and 2), before
/// `sync_role_definitions` makes Alpha, Gamma and sql_lab.
pub const BUILTIN_ROLE_NAMES: [&str; 5] = [ADMIN, PUBLIC, ALPHA, GAMMA, SQL_LAB];
