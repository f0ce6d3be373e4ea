//! The catalog: databases, datasets (with their columns and metrics), charts, dashboards,
//! users, roles and permissions, declared as [`Model`]s, plus the writes that need more than
//! one statement (sealed passwords, data-access permissions, replace-the-set children).

use chrono::Utc;

use super::db::{Executor, Tx, Value};
use super::model::{self, Field, Kind, Model, Pred, Record};
use super::{Error, Result, Store};
use crate::params;

macro_rules! col {
    ($name:literal, $kind:ident) => {
        (
            $name,
            Field::Column {
                col: $name,
                kind: Kind::$kind,
            },
        )
    };
}

macro_rules! computed {
    ($name:literal, $sql:literal, $kind:ident) => {
        (
            $name,
            Field::Computed {
                sql: $sql,
                kind: Kind::$kind,
            },
        )
    };
}

macro_rules! with_audit {
    ($($f:expr),* $(,)?) => {
        &[
            computed!("id", "t.id", Int),
            col!("uuid", Text),
            col!("created_on", Time),
            col!("changed_on", Time),
            (
                "created_by",
                Field::ToOne {
                    fk: "created_by_fk",
                    target: &USER_REF,
                },
            ),
            (
                "changed_by",
                Field::ToOne {
                    fk: "changed_by_fk",
                    target: &USER_REF,
                },
            ),
            computed!(
                "changed_by.first_name",
                "(SELECT u.first_name FROM ab_user u WHERE u.id = t.changed_by_fk)",
                Text
            ),
            computed!(
                "created_by.first_name",
                "(SELECT u.first_name FROM ab_user u WHERE u.id = t.created_by_fk)",
                Text
            ),
            $($f),*
        ]
    };
}

/// A user as other records show it (never the password hash).
pub static USER_REF: Model = Model {
    table: "ab_user",
    fields: &[
        computed!("id", "t.id", Int),
        col!("first_name", Text),
        col!("last_name", Text),
        col!("username", Text),
        col!("email", Text),
        col!("active", Bool),
    ],
};

/// A user, as the security API manages it.
pub static USER: Model = Model {
    table: "ab_user",
    fields: &[
        computed!("id", "t.id", Int),
        col!("first_name", Text),
        col!("last_name", Text),
        col!("username", Text),
        col!("email", Text),
        col!("active", Bool),
        col!("login_count", Int),
        col!("fail_login_count", Int),
        col!("last_login", Time),
        col!("created_on", Time),
        col!("changed_on", Time),
        (
            "created_by",
            Field::ToOne {
                fk: "created_by_fk",
                target: &USER_REF,
            },
        ),
        (
            "changed_by",
            Field::ToOne {
                fk: "changed_by_fk",
                target: &USER_REF,
            },
        ),
        (
            "roles",
            Field::ToMany {
                link: "ab_user_role",
                own: "user_id",
                other: "role_id",
                target: &ROLE_REF,
            },
        ),
    ],
};

/// A role as other records show it.
pub static ROLE_REF: Model = Model {
    table: "ab_role",
    fields: &[computed!("id", "t.id", Int), col!("name", Text)],
};

/// A role with its granted permission-view pairs.
pub static ROLE: Model = Model {
    table: "ab_role",
    fields: &[
        computed!("id", "t.id", Int),
        col!("name", Text),
        (
            "permissions",
            Field::ToMany {
                link: "ab_permission_view_role",
                own: "role_id",
                other: "permission_view_id",
                target: &PERMISSION_VIEW,
            },
        ),
        (
            "users",
            Field::ToMany {
                link: "ab_user_role",
                own: "role_id",
                other: "user_id",
                target: &USER_REF,
            },
        ),
    ],
};

/// A permission name (`can_read`, `datasource_access`, ...).
pub static PERMISSION: Model = Model {
    table: "ab_permission",
    fields: &[computed!("id", "t.id", Int), col!("name", Text)],
};

/// A view menu (`Chart`, `[examples].[sales](id:3)`, ...).
pub static VIEW_MENU: Model = Model {
    table: "ab_view_menu",
    fields: &[computed!("id", "t.id", Int), col!("name", Text)],
};

/// A (permission, view menu) pair, the unit roles are granted.
pub static PERMISSION_VIEW: Model = Model {
    table: "ab_permission_view",
    fields: &[
        computed!("id", "t.id", Int),
        (
            "permission",
            Field::ToOne {
                fk: "permission_id",
                target: &PERMISSION,
            },
        ),
        (
            "view_menu",
            Field::ToOne {
                fk: "view_menu_id",
                target: &VIEW_MENU,
            },
        ),
        computed!(
            "permission.name",
            "(SELECT p.name FROM ab_permission p WHERE p.id = t.permission_id)",
            Text
        ),
        computed!(
            "view_menu.name",
            "(SELECT v.name FROM ab_view_menu v WHERE v.id = t.view_menu_id)",
            Text
        ),
    ],
};

const DATABASE_FIELDS: &[(&str, Field)] = with_audit![
    col!("database_name", Text),
    // Whether a sealed password is stored; the password itself is never a field.
    computed!("has_password", "(t.password IS NOT NULL)", Bool),
    col!("verbose_name", Text),
    col!("sqlalchemy_uri", Text),
    col!("extra", Text),
    col!("server_cert", Text),
    col!("cache_timeout", Int),
    col!("expose_in_sqllab", Bool),
    col!("allow_run_async", Bool),
    col!("allow_ctas", Bool),
    col!("allow_cvas", Bool),
    col!("allow_dml", Bool),
    col!("allow_file_upload", Bool),
    col!("force_ctas_schema", Text),
    col!("impersonate_user", Bool),
    col!("is_managed_externally", Bool),
    col!("external_url", Text),
    col!("configuration_method", Text),
];

/// A database connection (`dbs`). The sealed password is not a field: only
/// [`Store::database_secret`] reads it.
pub static DATABASE: Model = Model {
    table: "dbs",
    fields: DATABASE_FIELDS,
};

/// `dbs.extra` of a database created without one: Superset's `Database.extra` column default
/// (`json.dumps` of these four keys, in this order and spacing).
pub const DEFAULT_DATABASE_EXTRA: &str = r#"{"metadata_params": {}, "engine_params": {}, "metadata_cache_timeout": {}, "schemas_allowed_for_file_upload": []}"#;

/// A dataset (`tables`).
pub static DATASET: Model = Model {
    table: "tables",
    fields: with_audit![
        col!("table_name", Text),
        col!("catalog", Text),
        col!("schema", Text),
        col!("sql", Text),
        col!("description", Text),
        col!("main_dttm_col", Text),
        col!("default_endpoint", Text),
        col!("offset", Int),
        col!("cache_timeout", Int),
        col!("is_sqllab_view", Bool),
        col!("template_params", Text),
        col!("extra", Text),
        col!("filter_select_enabled", Bool),
        col!("fetch_values_predicate", Text),
        col!("normalize_columns", Bool),
        col!("always_filter_main_dttm", Bool),
        col!("is_managed_externally", Bool),
        col!("external_url", Text),
        col!("perm", Text),
        col!("schema_perm", Text),
        col!("catalog_perm", Text),
        (
            "database",
            Field::ToOne {
                fk: "database_id",
                target: &DATABASE,
            },
        ),
        (
            "owners",
            Field::ToMany {
                link: "sqlatable_user",
                own: "table_id",
                other: "user_id",
                target: &USER_REF,
            },
        ),
        computed!(
            "database.database_name",
            "(SELECT d.database_name FROM dbs d WHERE d.id = t.database_id)",
            Text
        ),
        computed!("database_id", "t.database_id", Int),
    ],
};

/// A dataset column (`table_columns`).
pub static DATASET_COLUMN: Model = Model {
    table: "table_columns",
    fields: &[
        computed!("id", "t.id", Int),
        col!("uuid", Text),
        col!("table_id", Int),
        col!("column_name", Text),
        col!("verbose_name", Text),
        col!("is_dttm", Bool),
        col!("is_active", Bool),
        col!("type", Text),
        col!("advanced_data_type", Text),
        col!("groupby", Bool),
        col!("filterable", Bool),
        col!("expression", Text),
        col!("description", Text),
        col!("python_date_format", Text),
        col!("extra", Text),
        col!("created_on", Time),
        col!("changed_on", Time),
    ],
};

/// A dataset metric (`sql_metrics`).
pub static DATASET_METRIC: Model = Model {
    table: "sql_metrics",
    fields: &[
        computed!("id", "t.id", Int),
        col!("uuid", Text),
        col!("table_id", Int),
        col!("metric_name", Text),
        col!("verbose_name", Text),
        col!("metric_type", Text),
        col!("expression", Text),
        col!("description", Text),
        col!("d3format", Text),
        col!("currency", Text),
        col!("warning_text", Text),
        col!("extra", Text),
        col!("created_on", Time),
        col!("changed_on", Time),
    ],
};

/// A chart (`slices`).
pub static CHART: Model = Model {
    table: "slices",
    fields: with_audit![
        col!("slice_name", Text),
        col!("datasource_id", Int),
        col!("datasource_type", Text),
        col!("datasource_name", Text),
        col!("viz_type", Text),
        col!("params", Text),
        col!("query_context", Text),
        col!("description", Text),
        col!("cache_timeout", Int),
        col!("perm", Text),
        col!("schema_perm", Text),
        col!("certified_by", Text),
        col!("certification_details", Text),
        col!("is_managed_externally", Bool),
        col!("external_url", Text),
        col!("last_saved_at", Time),
        (
            "last_saved_by",
            Field::ToOne {
                fk: "last_saved_by_fk",
                target: &USER_REF,
            },
        ),
        (
            "table",
            Field::ToOne {
                fk: "datasource_id",
                target: &DATASET,
            },
        ),
        (
            "owners",
            Field::ToMany {
                link: "slice_user",
                own: "slice_id",
                other: "user_id",
                target: &USER_REF,
            },
        ),
        (
            "dashboards",
            Field::ToMany {
                link: "dashboard_slices",
                own: "slice_id",
                other: "dashboard_id",
                target: &DASHBOARD_REF,
            },
        ),
        computed!(
            "last_saved_by.first_name",
            "(SELECT u.first_name FROM ab_user u WHERE u.id = t.last_saved_by_fk)",
            Text
        ),
    ],
};

/// A dashboard as charts show it.
pub static DASHBOARD_REF: Model = Model {
    table: "dashboards",
    fields: &[
        computed!("id", "t.id", Int),
        col!("dashboard_title", Text),
        col!("slug", Text),
        col!("json_metadata", Text),
        col!("published", Bool),
    ],
};

/// A dashboard.
pub static DASHBOARD: Model = Model {
    table: "dashboards",
    fields: with_audit![
        col!("dashboard_title", Text),
        col!("slug", Text),
        col!("position_json", Text),
        col!("json_metadata", Text),
        col!("description", Text),
        col!("css", Text),
        col!("published", Bool),
        col!("certified_by", Text),
        col!("certification_details", Text),
        col!("is_managed_externally", Bool),
        col!("external_url", Text),
        (
            "owners",
            Field::ToMany {
                link: "dashboard_user",
                own: "dashboard_id",
                other: "user_id",
                target: &USER_REF,
            },
        ),
        (
            "roles",
            Field::ToMany {
                link: "dashboard_roles",
                own: "dashboard_id",
                other: "role_id",
                target: &ROLE_REF,
            },
        ),
        (
            "slices",
            Field::ToMany {
                link: "dashboard_slices",
                own: "dashboard_id",
                other: "slice_id",
                target: &CHART,
            },
        ),
        computed!("created_by.id", "t.created_by_fk", Int),
    ],
};

/// `filter_type` of a rule applying to members of its roles.
pub const RLS_REGULAR: &str = "Regular";
/// `filter_type` of a rule applying to everyone except members of its roles.
pub const RLS_BASE: &str = "Base";

/// A row-level security rule as queries apply it ([`Store::rls_rules`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RlsRule {
    /// Its id.
    pub id: i64,
    /// `Base` (everyone except the roles) rather than `Regular` (the roles' members).
    pub base: bool,
    /// The SQL predicate.
    pub clause: String,
    /// Rules with the same key are OR-ed together; `None` stands alone.
    pub group_key: Option<String>,
    /// The datasets it filters.
    pub tables: Vec<i64>,
    /// The roles it names.
    pub roles: Vec<i64>,
}

/// What a guest token reaches (Superset's `has_guest_access` and the dashboard path of
/// `raise_for_access`): the dashboards it names, their charts, the datasets those charts and
/// the dashboards' native filters read, and each native filter's targets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuestReach {
    /// Dashboards named by the token (by id or by their embedded uuid).
    pub dashboards: Vec<i64>,
    /// Charts on those dashboards.
    pub charts: Vec<i64>,
    /// Datasets of those charts and of the dashboards' native filters.
    pub datasets: Vec<i64>,
    /// Native filters of those dashboards: (filter id, dataset id, column name).
    pub filters: Vec<(String, i64, String)>,
}

/// A dataset as row-level security rules show it.
pub static DATASET_REF: Model = Model {
    table: "tables",
    fields: &[
        computed!("id", "t.id", Int),
        col!("schema", Text),
        col!("table_name", Text),
    ],
};

/// A row-level security rule (Superset's `RowLevelSecurityFilter`): a `clause` added to the
/// WHERE of every query on its `tables`, for members of its `roles` (`filter_type`
/// `Regular`) or for everyone but them (`Base`); rules sharing a `group_key` are OR-ed.
pub static RLS_FILTER: Model = Model {
    table: "row_level_security_filters",
    fields: &[
        computed!("id", "t.id", Int),
        col!("created_on", Time),
        col!("changed_on", Time),
        (
            "created_by",
            Field::ToOne {
                fk: "created_by_fk",
                target: &USER_REF,
            },
        ),
        (
            "changed_by",
            Field::ToOne {
                fk: "changed_by_fk",
                target: &USER_REF,
            },
        ),
        computed!(
            "changed_by.first_name",
            "(SELECT u.first_name FROM ab_user u WHERE u.id = t.changed_by_fk)",
            Text
        ),
        col!("name", Text),
        col!("description", Text),
        col!("filter_type", Text),
        col!("group_key", Text),
        col!("clause", Text),
        // For ordering only; rendered humanized.
        computed!("changed_on_delta_humanized", "t.changed_on", Time),
        (
            "tables",
            Field::ToMany {
                link: "rls_filter_tables",
                own: "rls_filter_id",
                other: "table_id",
                target: &DATASET_REF,
            },
        ),
        (
            "roles",
            Field::ToMany {
                link: "rls_filter_roles",
                own: "rls_filter_id",
                other: "role_id",
                target: &ROLE_REF,
            },
        ),
    ],
};

/// A database as queries and saved queries show it (no URI, no settings).
pub static DATABASE_REF: Model = Model {
    table: "dbs",
    fields: &[computed!("id", "t.id", Int), col!("database_name", Text)],
};

/// A SQL Lab execution (`query`): Superset's query history, one row per run. Times are epoch
/// milliseconds (Superset's `Numeric(20, 6)` columns); `status` is a lower-case `QueryStatus`.
pub static QUERY: Model = Model {
    table: "query",
    fields: &[
        computed!("id", "t.id", Int),
        col!("client_id", Text),
        (
            "database",
            Field::ToOne {
                fk: "database_id",
                target: &DATABASE_REF,
            },
        ),
        computed!("database_id", "t.database_id", Int),
        (
            "user",
            Field::ToOne {
                fk: "user_id",
                target: &USER_REF,
            },
        ),
        computed!("user_id", "t.user_id", Int),
        col!("tmp_table_name", Text),
        col!("tmp_schema_name", Text),
        col!("tab_name", Text),
        col!("sql_editor_id", Text),
        col!("status", Text),
        col!("catalog", Text),
        col!("schema", Text),
        col!("sql", Text),
        col!("select_sql", Text),
        col!("executed_sql", Text),
        col!("limit", Int),
        col!("limiting_factor", Text),
        col!("select_as_cta", Bool),
        col!("select_as_cta_used", Bool),
        col!("ctas_method", Text),
        col!("progress", Int),
        col!("rows", Int),
        col!("error_message", Text),
        col!("results_key", Text),
        col!("start_time", Float),
        col!("start_running_time", Float),
        col!("end_time", Float),
        col!("end_result_backend_time", Float),
        col!("tracking_url", Text),
        col!("extra_json", Text),
        col!("changed_on", Time),
        computed!(
            "database.database_name",
            "(SELECT d.database_name FROM dbs d WHERE d.id = t.database_id)",
            Text
        ),
        computed!(
            "user.first_name",
            "(SELECT u.first_name FROM ab_user u WHERE u.id = t.user_id)",
            Text
        ),
    ],
};

/// A saved SQL Lab query (`saved_query`); its owner is its creator (`user_id`, also
/// `created_by_fk`).
pub static SAVED_QUERY: Model = Model {
    table: "saved_query",
    fields: with_audit![
        (
            "user",
            Field::ToOne {
                fk: "user_id",
                target: &USER_REF,
            },
        ),
        (
            "database",
            Field::ToOne {
                fk: "db_id",
                target: &DATABASE_REF,
            },
        ),
        computed!("db_id", "t.db_id", Int),
        col!("catalog", Text),
        col!("schema", Text),
        col!("label", Text),
        col!("description", Text),
        col!("sql", Text),
        col!("template_parameters", Text),
        col!("extra_json", Text),
        col!("last_run", Time),
        col!("rows", Int),
        // For ordering only; rendered humanized.
        computed!("last_run_delta_humanized", "t.last_run", Time),
        computed!(
            "database.database_name",
            "(SELECT d.database_name FROM dbs d WHERE d.id = t.db_id)",
            Text
        ),
    ],
};

/// What a write sets: scalar fields by name and to-many relations replaced by id lists.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    /// Scalar and to-one fields.
    pub values: Vec<(&'static str, Value)>,
    /// To-many relations to replace.
    pub links: Vec<(&'static str, Vec<i64>)>,
}

impl Changes {
    /// Sets a field.
    pub fn set(&mut self, name: &'static str, value: impl Into<Value>) {
        self.values.retain(|(n, _)| *n != name);
        self.values.push((name, value.into()));
    }

    /// Replaces a relation.
    pub fn link(&mut self, name: &'static str, ids: Vec<i64>) {
        self.links.retain(|(n, _)| *n != name);
        self.links.push((name, ids));
    }

    /// The value set for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// A column or metric in a dataset's replace-the-set update: `id` present means "keep and
/// update that one", absent means new.
#[derive(Clone, Debug, Default)]
pub struct ChildWrite {
    /// Existing id, if any.
    pub id: Option<i64>,
    /// Fields to set.
    pub values: Vec<(&'static str, Value)>,
}

fn has_field(model: &Model, name: &str) -> bool {
    model
        .fields
        .iter()
        .any(|(n, f)| *n == name && matches!(f, Field::Column { .. } | Field::ToOne { .. }))
}

async fn write_record(
    ex: &impl Executor,
    model: &Model,
    id: Option<i64>,
    changes: &Changes,
    user: Option<i64>,
) -> Result<i64> {
    let now = Value::Timestamp(Utc::now().naive_utc());
    let mut values: Vec<(&str, Value)> = changes
        .values
        .iter()
        .map(|(n, v)| (*n, v.clone()))
        .collect();
    let stamp = |values: &mut Vec<(&str, Value)>, name: &'static str, v: Value| {
        if has_field(model, name) && !values.iter().any(|(n, _)| *n == name) {
            values.push((name, v));
        }
    };
    let id = match id {
        None => {
            stamp(&mut values, "created_on", now.clone());
            stamp(&mut values, "changed_on", now.clone());
            stamp(&mut values, "created_by", Value::from(user));
            stamp(&mut values, "changed_by", Value::from(user));
            stamp(
                &mut values,
                "uuid",
                Value::Text(uuid::Uuid::new_v4().to_string()),
            );
            model::insert(ex, model, &values).await?
        }
        Some(id) => {
            stamp(&mut values, "changed_on", now.clone());
            stamp(&mut values, "changed_by", Value::from(user));
            model::update(ex, model, id, &values).await?;
            id
        }
    };
    for (name, ids) in &changes.links {
        model::set_links(ex, model, name, id, ids).await?;
    }
    Ok(id)
}

/// [`Store::save`] inside the caller's transaction.
pub async fn save_in(
    tx: &Tx,
    model: &Model,
    id: Option<i64>,
    changes: &Changes,
    user: Option<i64>,
) -> Result<i64> {
    write_record(tx, model, id, changes, user).await
}

/// [`Store::save_database`] inside the caller's transaction.
pub async fn save_database_in(
    tx: &Tx,
    id: Option<i64>,
    changes: &Changes,
    password: Option<Option<Vec<u8>>>,
    user: Option<i64>,
) -> Result<i64> {
    let old_name: Option<String> = match id {
        Some(id) => Some(
            tx.query_one("SELECT database_name FROM dbs WHERE id = $1", params![id])
                .await?
                .get("database_name")?,
        ),
        None => None,
    };
    // Superset's column default for `extra`: the web app parses it (SQL Lab's database list
    // does `JSON.parse(db.extra)`), so a database created without one must still have one.
    let defaulted;
    let changes = match (id, changes.get("extra")) {
        (None, None) => {
            defaulted = {
                let mut c = changes.clone();
                c.set("extra", DEFAULT_DATABASE_EXTRA);
                c
            };
            &defaulted
        }
        _ => changes,
    };
    let id = write_record(tx, &DATABASE, id, changes, user).await?;
    if let Some(pw) = password {
        tx.execute(
            "UPDATE dbs SET password = $1 WHERE id = $2",
            vec![pw.map_or(Value::Null, Value::Bytes), Value::Int(id)],
        )
        .await?;
    }
    let name: String = tx
        .query_one("SELECT database_name FROM dbs WHERE id = $1", params![id])
        .await?
        .get("database_name")?;
    let view = database_perm(&name, id);
    match old_name {
        Some(old) if old != name => {
            rename_view(tx, &database_perm(&old, id), &view).await?;
            let datasets = tx
                .query("SELECT id FROM tables WHERE database_id = $1", params![id])
                .await?;
            for r in datasets {
                refresh_dataset_perms(tx, r.get("id")?).await?;
            }
        }
        _ => ensure_pvm(tx, "database_access", &view).await.map(|_| ())?,
    }
    Ok(id)
}

/// [`Store::save_dataset`] inside the caller's transaction.
pub async fn save_dataset_in(
    tx: &Tx,
    id: Option<i64>,
    changes: &Changes,
    columns: Option<&[ChildWrite]>,
    metrics: Option<&[ChildWrite]>,
    user: Option<i64>,
) -> Result<i64> {
    let id = write_record(tx, &DATASET, id, changes, user).await?;
    if let Some(columns) = columns {
        replace_children(tx, &DATASET_COLUMN, id, columns).await?;
    }
    if let Some(metrics) = metrics {
        replace_children(tx, &DATASET_METRIC, id, metrics).await?;
    }
    refresh_dataset_perms(tx, id).await?;
    Ok(id)
}

impl Store {
    /// Creates (`id` None) or updates a record of any catalog model in one transaction,
    /// stamping timestamps, uuid and the acting user.
    pub async fn save(
        &self,
        model: &Model,
        id: Option<i64>,
        changes: &Changes,
        user: Option<i64>,
    ) -> Result<i64> {
        let tx = self.db().begin().await?;
        let id = save_in(&tx, model, id, changes, user).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Starts a transaction for a write that spans many records (a bundle import): pass it
    /// to the `*_in` functions, which then see each other's rows; nothing is visible to
    /// anyone else before `commit`, and dropping it undoes everything.
    pub async fn begin(&self) -> Result<Tx> {
        self.db().begin().await
    }

    /// Deletes records; returns how many existed.
    pub async fn delete_records(&self, model: &Model, ids: &[i64]) -> Result<u64> {
        let tx = self.db().begin().await?;
        let n = model::delete(&tx, model, ids).await?;
        tx.commit().await?;
        Ok(n)
    }

    /// Which of `ids` exist.
    pub async fn existing(
        &self,
        model: &Model,
        ids: &[i64],
    ) -> Result<std::collections::BTreeSet<i64>> {
        model::existing_ids(self.db(), model, ids).await
    }

    /// Creates or updates a database connection and keeps its `database_access` permission
    /// (`[name].(id:N)`) and its datasets' permission names in step with its name.
    /// `password`: `None` keeps the stored one, `Some(None)` clears it.
    pub async fn save_database(
        &self,
        id: Option<i64>,
        changes: &Changes,
        password: Option<Option<Vec<u8>>>,
        user: Option<i64>,
    ) -> Result<i64> {
        let tx = self.db().begin().await?;
        let id = save_database_in(&tx, id, changes, password, user).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// The sealed password of a database (`None` when it has none).
    pub async fn database_secret(&self, id: i64) -> Result<Option<Vec<u8>>> {
        self.db()
            .query_one("SELECT password FROM dbs WHERE id = $1", params![id])
            .await?
            .get("password")
    }

    /// Deletes a database and its permissions. Refused (`Conflict`) while datasets use it.
    pub async fn delete_database(&self, id: i64) -> Result<()> {
        let tx = self.db().begin().await?;
        let row = tx
            .query_opt("SELECT database_name FROM dbs WHERE id = $1", params![id])
            .await?
            .ok_or(Error::NotFound)?;
        let name: String = row.get("database_name")?;
        let used: i64 = tx
            .query_one(
                "SELECT COUNT(*) AS n FROM tables WHERE database_id = $1",
                params![id],
            )
            .await?
            .get("n")?;
        if used > 0 {
            return Err(Error::Conflict {
                message: format!("There are {used} datasets associated with this database"),
            });
        }
        delete_view(&tx, &database_perm(&name, id)).await?;
        model::delete(&tx, &DATABASE, &[id]).await?;
        tx.commit().await
    }

    /// Creates or updates a dataset with (optionally) its full set of columns and metrics
    /// (replace-the-set: children without id are added, missing ones deleted), and keeps its
    /// `datasource_access` and `schema_access` permissions current.
    pub async fn save_dataset(
        &self,
        id: Option<i64>,
        changes: &Changes,
        columns: Option<&[ChildWrite]>,
        metrics: Option<&[ChildWrite]>,
        user: Option<i64>,
    ) -> Result<i64> {
        let tx = self.db().begin().await?;
        let id = save_dataset_in(&tx, id, changes, columns, metrics, user).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Deletes datasets, their columns, metrics and permissions. Charts on them stay (as in
    /// Superset) but lose their datasource.
    pub async fn delete_datasets(&self, ids: &[i64]) -> Result<u64> {
        let tx = self.db().begin().await?;
        for id in ids {
            if let Some(r) = tx
                .query_opt("SELECT perm FROM tables WHERE id = $1", params![*id])
                .await?
                && let Some(perm) = r.get::<Option<String>>("perm")?
            {
                delete_view(&tx, &perm).await?;
            }
            tx.execute(
                "DELETE FROM rls_filter_tables WHERE table_id = $1",
                params![*id],
            )
            .await?;
        }
        let n = model::delete(&tx, &DATASET, ids).await?;
        tx.commit().await?;
        Ok(n)
    }

    /// Adds `(permission, view_menu)` pairs to a role (FAB's `POST /roles/<id>/permissions`
    /// replaces the set; `replace` chooses).
    pub async fn grant(&self, role_id: i64, pvm_ids: &[i64], replace: bool) -> Result<()> {
        let tx = self.db().begin().await?;
        if replace {
            tx.execute(
                "DELETE FROM ab_permission_view_role WHERE role_id = $1",
                params![role_id],
            )
            .await?;
        }
        for pv in pvm_ids {
            let exists = tx
                .query_opt(
                    "SELECT id FROM ab_permission_view_role WHERE role_id = $1 AND permission_view_id = $2",
                    params![role_id, *pv],
                )
                .await?;
            if exists.is_none() {
                tx.execute(
                    "INSERT INTO ab_permission_view_role (permission_view_id, role_id) VALUES ($1, $2)",
                    params![*pv, role_id],
                )
                .await?;
            }
        }
        tx.commit().await
    }

    /// The id of the `(permission, view_menu)` pair, created when missing.
    pub async fn ensure_permission_view(&self, permission: &str, view_menu: &str) -> Result<i64> {
        let tx = self.db().begin().await?;
        let id = ensure_pvm(&tx, permission, view_menu).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Stores a user's password hash (used by the security API).
    pub async fn set_user_password_hash(&self, id: i64, hash: &str) -> Result<()> {
        self.set_password(id, hash).await
    }

    /// Upserts the embedded configuration of a dashboard; returns its uuid.
    pub async fn upsert_embedded(
        &self,
        dashboard_id: i64,
        allowed_domains: &str,
    ) -> Result<String> {
        let tx = self.db().begin().await?;
        let now = Value::Timestamp(Utc::now().naive_utc());
        let existing = tx
            .query_opt(
                "SELECT uuid FROM embedded_dashboards WHERE dashboard_id = $1",
                params![dashboard_id],
            )
            .await?;
        let uuid = match existing {
            Some(r) => {
                let uuid: String = r.get("uuid")?;
                tx.execute(
                    "UPDATE embedded_dashboards SET allowed_domains = $1, changed_on = $2 WHERE uuid = $3",
                    vec![Value::Text(allowed_domains.into()), now, Value::Text(uuid.clone())],
                )
                .await?;
                uuid
            }
            None => {
                let uuid = uuid::Uuid::new_v4().to_string();
                tx.execute(
                    "INSERT INTO embedded_dashboards (uuid, dashboard_id, allowed_domains, created_on, changed_on) \
                     VALUES ($1, $2, $3, $4, $4)",
                    vec![
                        Value::Text(uuid.clone()),
                        Value::Int(dashboard_id),
                        Value::Text(allowed_domains.into()),
                        now,
                    ],
                )
                .await?;
                uuid
            }
        };
        tx.commit().await?;
        Ok(uuid)
    }

    /// The dashboard a guest token's resource names: a dashboard id, else an embedded
    /// dashboard's uuid (Superset's `validate_guest_token_resources` and `has_guest_access`
    /// accept both).
    pub async fn dashboard_for_key(&self, key: &str) -> Result<Option<i64>> {
        if let Ok(id) = key.parse::<i64>()
            && let Some(r) = self
                .db()
                .query_opt("SELECT id FROM dashboards WHERE id = $1", params![id])
                .await?
        {
            return Ok(Some(r.get("id")?));
        }
        self.db()
            .query_opt(
                "SELECT dashboard_id FROM embedded_dashboards WHERE uuid = $1",
                params![key],
            )
            .await?
            .map(|r| r.get::<i64>("dashboard_id"))
            .transpose()
    }

    /// The dashboards a guest token's resources name (each a dashboard id or an embedded
    /// dashboard's uuid, as Superset's `has_guest_access` accepts both) and what they reach.
    /// Keys naming nothing are skipped: the token grants only what exists.
    pub async fn guest_reach(&self, keys: &[String]) -> Result<GuestReach> {
        let mut reach = GuestReach::default();
        for key in keys {
            if let Some(id) = self.dashboard_for_key(key).await?
                && !reach.dashboards.contains(&id)
            {
                reach.dashboards.push(id);
            }
        }
        for &d in &reach.dashboards {
            for r in self
                .db()
                .query(
                    "SELECT s.id, s.datasource_id FROM dashboard_slices ds JOIN slices s \
                     ON s.id = ds.slice_id WHERE ds.dashboard_id = $1",
                    params![d],
                )
                .await?
            {
                let chart: i64 = r.get("id")?;
                if !reach.charts.contains(&chart) {
                    reach.charts.push(chart);
                }
                if let Some(ds) = r.get::<Option<i64>>("datasource_id")?
                    && !reach.datasets.contains(&ds)
                {
                    reach.datasets.push(ds);
                }
            }
            let meta = self
                .db()
                .query_opt(
                    "SELECT json_metadata FROM dashboards WHERE id = $1",
                    params![d],
                )
                .await?
                .map(|r| r.get::<Option<String>>("json_metadata"))
                .transpose()?
                .flatten()
                .unwrap_or_default();
            let meta: serde_json::Value = serde_json::from_str(&meta).unwrap_or_default();
            for f in meta["native_filter_configuration"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let Some(fid) = f["id"].as_str() else {
                    continue;
                };
                for t in f["targets"].as_array().into_iter().flatten() {
                    let Some(ds) = t["datasetId"].as_i64() else {
                        continue;
                    };
                    let column = t["column"]["name"].as_str().unwrap_or_default();
                    reach.filters.push((fid.to_owned(), ds, column.to_owned()));
                    if !reach.datasets.contains(&ds) {
                        reach.datasets.push(ds);
                    }
                }
            }
        }
        Ok(reach)
    }

    /// A database's physical datasets (no SQL of their own): (id, schema, table name), what
    /// SQL Lab's row-level filtering matches tables against.
    pub async fn physical_datasets(
        &self,
        database_id: i64,
    ) -> Result<Vec<(i64, Option<String>, String)>> {
        self.db()
            .query(
                "SELECT id, schema, table_name FROM tables WHERE database_id = $1 \
                 AND (sql IS NULL OR sql = '')",
                params![database_id],
            )
            .await?
            .iter()
            .map(|r| Ok((r.get("id")?, r.get("schema")?, r.get("table_name")?)))
            .collect()
    }

    /// Every row-level security rule with its datasets and roles, as queries apply them.
    pub async fn rls_rules(&self) -> Result<Vec<RlsRule>> {
        let rows = self
            .db()
            .query(
                "SELECT id, filter_type, clause, group_key FROM row_level_security_filters \
                 ORDER BY id",
                vec![],
            )
            .await?;
        let mut rules = Vec::with_capacity(rows.len());
        let mut at = std::collections::HashMap::new();
        for r in rows {
            let id: i64 = r.get("id")?;
            at.insert(id, rules.len());
            rules.push(RlsRule {
                id,
                base: r.get::<String>("filter_type")? == RLS_BASE,
                clause: r.get("clause")?,
                group_key: r
                    .get::<Option<String>>("group_key")?
                    .filter(|k| !k.is_empty()),
                tables: Vec::new(),
                roles: Vec::new(),
            });
        }
        for r in self
            .db()
            .query(
                "SELECT rls_filter_id, table_id FROM rls_filter_tables",
                vec![],
            )
            .await?
        {
            if let Some(&i) = at.get(&r.get::<i64>("rls_filter_id")?) {
                rules[i].tables.push(r.get("table_id")?);
            }
        }
        for r in self
            .db()
            .query(
                "SELECT rls_filter_id, role_id FROM rls_filter_roles",
                vec![],
            )
            .await?
        {
            if let Some(&i) = at.get(&r.get::<i64>("rls_filter_id")?) {
                rules[i].roles.push(r.get("role_id")?);
            }
        }
        Ok(rules)
    }

    /// The embedded configuration of a dashboard: (uuid, dashboard id, allowed domains JSON,
    /// changed_on).
    pub async fn embedded(
        &self,
        dashboard_id: Option<i64>,
        uuid: Option<&str>,
    ) -> Result<Option<(String, i64, String, chrono::NaiveDateTime)>> {
        let row = self
            .db()
            .query_opt(
                "SELECT uuid, dashboard_id, allowed_domains, changed_on FROM embedded_dashboards \
                 WHERE dashboard_id = $1 OR uuid = $2",
                params![dashboard_id, uuid],
            )
            .await?;
        row.map(|r| {
            Ok((
                r.get("uuid")?,
                r.get("dashboard_id")?,
                r.get::<Option<String>>("allowed_domains")?
                    .unwrap_or_else(|| "[]".into()),
                r.get("changed_on")?,
            ))
        })
        .transpose()
    }

    /// Removes a dashboard's embedded configuration.
    pub async fn delete_embedded(&self, dashboard_id: i64) -> Result<u64> {
        self.db()
            .execute(
                "DELETE FROM embedded_dashboards WHERE dashboard_id = $1",
                params![dashboard_id],
            )
            .await
    }

    /// Users whose full name or username contains `filter` (case-insensitive), ordered by
    /// first name, with the total count (FAB's related-owners lookup).
    pub async fn related_users(
        &self,
        filter: &str,
        include: &[i64],
        page: model::Page,
    ) -> Result<(i64, Vec<i64>)> {
        let pattern = Value::Text(format!("%{filter}%"));
        let mut pred = Pred::sql(
            "LOWER(t.first_name || ' ' || t.last_name) LIKE LOWER(?) OR LOWER(t.username) LIKE LOWER(?)",
            vec![pattern.clone(), pattern],
        );
        if !include.is_empty() {
            pred = Pred::Or(vec![
                pred,
                Pred::in_list(
                    "t.id",
                    include.iter().map(|i| Value::Int(*i)).collect(),
                    false,
                ),
            ]);
        }
        self.list_ids(
            &USER_REF,
            &pred,
            Some(model::Order {
                field: "first_name",
                desc: false,
            }),
            Some(page),
        )
        .await
    }
}

/// `[name].(id:N)`, Superset's `Database.perm`.
pub fn database_perm(name: &str, id: i64) -> String {
    format!("[{name}].(id:{id})")
}

/// `[db].[table](id:N)`, Superset's `SqlaTable.perm`.
pub fn dataset_perm(db: &str, table: &str, id: i64) -> String {
    format!("[{db}].[{table}](id:{id})")
}

/// `[db].[schema]`, Superset's `schema_perm` (no catalogs on our engines).
pub fn schema_perm(db: &str, schema: &str) -> String {
    format!("[{db}].[{schema}]")
}

async fn replace_children(
    ex: &impl Executor,
    model: &Model,
    table_id: i64,
    children: &[ChildWrite],
) -> Result<()> {
    let existing: std::collections::BTreeSet<i64> = ex
        .query(
            &format!("SELECT id FROM {} WHERE table_id = $1", model.table),
            params![table_id],
        )
        .await?
        .iter()
        .map(|r| r.get("id"))
        .collect::<Result<_>>()?;
    let keep: std::collections::BTreeSet<i64> = children.iter().filter_map(|c| c.id).collect();
    let gone: Vec<i64> = existing.difference(&keep).copied().collect();
    model::delete(ex, model, &gone).await?;
    // Updates first, so a renamed child frees its name before a new one takes it.
    for child in children.iter().filter(|c| c.id.is_some()) {
        let id = child.id.unwrap_or_default();
        if !existing.contains(&id) {
            return Err(Error::NotFound);
        }
        let changes = Changes {
            values: child.values.clone(),
            links: vec![],
        };
        write_record(ex, model, Some(id), &changes, None).await?;
    }
    for child in children.iter().filter(|c| c.id.is_none()) {
        let mut changes = Changes {
            values: child.values.clone(),
            links: vec![],
        };
        changes.set("table_id", table_id);
        write_record(ex, model, None, &changes, None).await?;
    }
    Ok(())
}

async fn ensure_named(ex: &impl Executor, table: &str, name: &str) -> Result<i64> {
    if let Some(row) = ex
        .query_opt(
            &format!("SELECT id FROM {table} WHERE name = $1"),
            params![name],
        )
        .await?
    {
        return row.get("id");
    }
    ex.query_one(
        &format!("INSERT INTO {table} (name) VALUES ($1) RETURNING id"),
        params![name],
    )
    .await?
    .get("id")
}

async fn ensure_pvm(ex: &impl Executor, permission: &str, view: &str) -> Result<i64> {
    let p = ensure_named(ex, "ab_permission", permission).await?;
    let v = ensure_named(ex, "ab_view_menu", view).await?;
    if let Some(r) = ex
        .query_opt(
            "SELECT id FROM ab_permission_view WHERE permission_id = $1 AND view_menu_id = $2",
            params![p, v],
        )
        .await?
    {
        return r.get("id");
    }
    ex.query_one(
        "INSERT INTO ab_permission_view (permission_id, view_menu_id) VALUES ($1, $2) RETURNING id",
        params![p, v],
    )
    .await?
    .get("id")
}

async fn rename_view(ex: &impl Executor, old: &str, new: &str) -> Result<()> {
    if old == new {
        return Ok(());
    }
    let n = ex
        .execute(
            "UPDATE ab_view_menu SET name = $1 WHERE name = $2",
            params![new, old],
        )
        .await?;
    if n == 0 {
        ensure_pvm(ex, "database_access", new).await?;
    }
    Ok(())
}

/// Deletes a view menu with its permission pairs and their grants.
async fn delete_view(ex: &impl Executor, view: &str) -> Result<()> {
    let Some(v) = ex
        .query_opt("SELECT id FROM ab_view_menu WHERE name = $1", params![view])
        .await?
    else {
        return Ok(());
    };
    let v: i64 = v.get("id")?;
    ex.execute(
        "DELETE FROM ab_permission_view_role WHERE permission_view_id IN \
         (SELECT id FROM ab_permission_view WHERE view_menu_id = $1)",
        params![v],
    )
    .await?;
    ex.execute(
        "DELETE FROM ab_permission_view WHERE view_menu_id = $1",
        params![v],
    )
    .await?;
    ex.execute("DELETE FROM ab_view_menu WHERE id = $1", params![v])
        .await?;
    Ok(())
}

/// Recomputes a dataset's `perm`/`schema_perm` from its database name and table name,
/// renaming the old `datasource_access` view menu so grants survive renames.
async fn refresh_dataset_perms(ex: &impl Executor, id: i64) -> Result<()> {
    let r = ex
        .query_one(
            "SELECT t.table_name AS table_name, t.schema AS schema_name, t.perm AS perm, \
             d.database_name AS database_name \
             FROM tables t JOIN dbs d ON d.id = t.database_id WHERE t.id = $1",
            params![id],
        )
        .await?;
    let table: String = r.get("table_name")?;
    let db: String = r.get("database_name")?;
    let schema: Option<String> = r.get("schema_name")?;
    let old: Option<String> = r.get("perm")?;
    let perm = dataset_perm(&db, &table, id);
    let sperm = schema.as_deref().map(|s| schema_perm(&db, s));
    if let Some(old) = old.filter(|o| *o != perm) {
        let renamed = ex
            .execute(
                "UPDATE ab_view_menu SET name = $1 WHERE name = $2",
                params![perm.as_str(), old.as_str()],
            )
            .await?;
        if renamed == 0 {
            ensure_pvm(ex, "datasource_access", &perm).await?;
        }
    } else {
        ensure_pvm(ex, "datasource_access", &perm).await?;
    }
    if let Some(s) = &sperm {
        ensure_pvm(ex, "schema_access", s).await?;
    }
    ex.execute(
        "UPDATE tables SET perm = $1, schema_perm = $2 WHERE id = $3",
        vec![
            Value::Text(perm.clone()),
            Value::from(sperm.clone()),
            Value::Int(id),
        ],
    )
    .await?;
    ex.execute(
        "UPDATE slices SET perm = $1, schema_perm = $2 WHERE datasource_id = $3 AND datasource_type = 'table'",
        vec![Value::Text(perm), Value::from(sperm), Value::Int(id)],
    )
    .await?;
    Ok(())
}

/// The relations that say who may change a record (its owners, else its creator): what
/// an ownership check loads with it.
pub fn ownership_relations(model: &Model) -> Vec<&'static str> {
    ["owners", "created_by"]
        .into_iter()
        .filter(|r| model.field(r).is_some())
        .collect()
}

/// A user's data-access grants, in the store's terms (the auth layer derives them from
/// permissions; the store turns them into list scopes).
#[derive(Clone, Debug, Default)]
pub struct Grants {
    /// `all_datasource_access` or `all_database_access`.
    pub all: bool,
    /// Databases granted whole (`database_access`).
    pub database_ids: Vec<i64>,
    /// `schema_access` view menus.
    pub schema_perms: Vec<String>,
    /// `datasource_access` view menus.
    pub datasource_perms: Vec<String>,
    /// The user, whose owned datasets are also accessible.
    pub user_id: Option<i64>,
    /// A guest (embedded) caller: only what the token reaches, whatever else is set.
    pub guest: Option<std::sync::Arc<GuestReach>>,
}

impl Grants {
    /// Superset's `can_access_database`: `all_datasource_access`, `all_database_access` or
    /// the database's `database_access`.
    pub fn database(&self, id: i64) -> bool {
        self.all || self.database_ids.contains(&id)
    }
}

fn texts(v: &[String]) -> Vec<Value> {
    v.iter().map(|s| Value::Text(s.clone())).collect()
}

fn dataset_cond(g: &Grants, alias: &str) -> Pred {
    let mut any = vec![
        Pred::in_list(
            &format!("{alias}.database_id"),
            g.database_ids.iter().map(|i| Value::Int(*i)).collect(),
            false,
        ),
        Pred::in_list(&format!("{alias}.perm"), texts(&g.datasource_perms), false),
        Pred::in_list(
            &format!("{alias}.schema_perm"),
            texts(&g.schema_perms),
            false,
        ),
    ];
    if let Some(u) = g.user_id {
        any.push(Pred::sql(
            format!(
                "EXISTS (SELECT 1 FROM sqlatable_user o WHERE o.table_id = {alias}.id AND o.user_id = ?)"
            ),
            vec![Value::Int(u)],
        ));
    }
    Pred::Or(any)
}

fn id_list(ids: &[i64]) -> Pred {
    Pred::in_list("t.id", ids.iter().map(|i| Value::Int(*i)).collect(), false)
}

/// Datasets the grants reach (Superset's `DatasourceFilter`).
pub fn dataset_scope(g: &Grants) -> Pred {
    if let Some(r) = &g.guest {
        return id_list(&r.datasets);
    }
    if g.all {
        return Pred::all();
    }
    dataset_cond(g, "t")
}

fn exists_dataset(g: &Grants, join: &str) -> Pred {
    let Pred::Or(inner) = dataset_cond(g, "tt") else {
        return Pred::none();
    };
    // Rendered inside the EXISTS: the placeholders keep their order.
    let mut sql = format!("EXISTS (SELECT 1 FROM tables tt WHERE {join} AND (");
    let mut params = Vec::new();
    for (i, p) in inner.iter().enumerate() {
        if i > 0 {
            sql.push_str(" OR ");
        }
        if let Pred::Sql(s, v) = p {
            sql.push('(');
            sql.push_str(s);
            sql.push(')');
            params.extend(v.iter().cloned());
        }
    }
    sql.push_str("))");
    Pred::sql(sql, params)
}

/// Charts whose dataset the grants reach (Superset's `ChartFilter`).
pub fn chart_scope(g: &Grants) -> Pred {
    if let Some(r) = &g.guest {
        return id_list(&r.charts);
    }
    if g.all {
        return Pred::all();
    }
    exists_dataset(g, "tt.id = t.datasource_id")
}

/// Databases granted whole, or holding a reachable dataset (Superset's `DatabaseFilter`).
pub fn database_scope(g: &Grants) -> Pred {
    if g.guest.is_some() {
        // A guest reads data only through its dashboards' charts, never a database.
        return Pred::none();
    }
    if g.all {
        return Pred::all();
    }
    Pred::Or(vec![
        Pred::in_list(
            "t.id",
            g.database_ids.iter().map(|i| Value::Int(*i)).collect(),
            false,
        ),
        exists_dataset(g, "tt.database_id = t.id"),
    ])
}

/// Dashboards the user owns, or published ones with a chart on a reachable dataset
/// (Superset's `DashboardAccessFilter`); admins see all.
pub fn dashboard_scope(g: &Grants, admin: bool) -> Pred {
    if let Some(r) = &g.guest {
        return id_list(&r.dashboards);
    }
    if admin {
        return Pred::all();
    }
    let mut any = vec![];
    if let Some(u) = g.user_id {
        any.push(Pred::sql(
            "EXISTS (SELECT 1 FROM dashboard_user o WHERE o.dashboard_id = t.id AND o.user_id = ?)",
            vec![Value::Int(u)],
        ));
        any.push(Pred::sql("t.created_by_fk = ?", vec![Value::Int(u)]));
    }
    // With every dataset reachable, Superset's outer join keeps published dashboards without
    // charts too (its `can_access_all_datasources()` term is true on every joined row).
    let reach = if g.all {
        Pred::all()
    } else {
        let Pred::Sql(inner, params) = exists_dataset(
            g,
            "tt.id IN (SELECT s.datasource_id FROM dashboard_slices ds JOIN slices s ON s.id = ds.slice_id WHERE ds.dashboard_id = t.id)",
        ) else {
            return Pred::Or(any);
        };
        Pred::sql(inner, params)
    };
    any.push(Pred::And(vec![
        Pred::sql("t.published = ?", vec![Value::Bool(true)]),
        reach,
    ]));
    Pred::Or(any)
}

// The named conditions the API's list filters and scopes ask for, so that the SQL behind
// each filter name lives here with the models it reads. Every value is a bound parameter.

/// `%text%`: FAB's case-insensitive "contains" pattern (its `%` and `_` are not escaped, as
/// in Superset).
fn contains(text: &str) -> Value {
    Value::Text(format!("%{text}%"))
}

/// Records created by the user (`created_by_fk`): Superset's `*_created_by_me` filters and
/// the non-admin scope of saved queries.
pub fn created_by(user_id: i64) -> Pred {
    Pred::sql("t.created_by_fk = ?", vec![Value::Int(user_id)])
}

/// Records whose creator is recorded (`yes`) or unknown (`!yes`): `*_has_created_by`.
pub fn has_creator(yes: bool) -> Pred {
    if yes {
        Pred::sql("t.created_by_fk IS NOT NULL", vec![])
    } else {
        Pred::sql("t.created_by_fk IS NULL", vec![])
    }
}

/// Records the user marked as favourite; `class` is Superset's `favstar` class name of the
/// listed model (`slice`, `Dashboard`, `query`), as [`Store::set_favorite`] writes it.
pub fn favorite_of(class: &str, user_id: i64) -> Pred {
    Pred::sql(
        "EXISTS (SELECT 1 FROM favstar fs WHERE fs.class_name = ? AND fs.obj_id = t.id AND fs.user_id = ?)",
        vec![Value::Text(class.into()), Value::Int(user_id)],
    )
}

/// Charts and dashboards with (`yes`) or without a non-empty `certified_by`: `*_is_certified`.
pub fn certified(yes: bool) -> Pred {
    if yes {
        Pred::sql(
            "t.certified_by IS NOT NULL AND t.certified_by <> ''",
            vec![],
        )
    } else {
        Pred::sql("t.certified_by IS NULL OR t.certified_by = ''", vec![])
    }
}

/// Charts the user created or co-owns (`slice_user`): who may change a chart besides admins.
pub fn chart_owned_or_created_by(user_id: i64) -> Pred {
    Pred::sql(
        "t.created_by_fk = ? OR EXISTS (SELECT 1 FROM slice_user o WHERE o.slice_id = t.id AND o.user_id = ?)",
        vec![Value::Int(user_id), Value::Int(user_id)],
    )
}

/// Charts the user created, co-owns or marked as favourite: Superset's
/// `chart_owned_created_favored_by_me`.
pub fn chart_owned_created_or_favored_by(user_id: i64, favorite_class: &str) -> Pred {
    Pred::Or(vec![
        chart_owned_or_created_by(user_id),
        favorite_of(favorite_class, user_id),
    ])
}

/// Charts whose name, description, viz type or dataset's table name contains `text`
/// (case-insensitive): Superset's `chart_all_text`.
pub fn chart_text_contains(text: &str) -> Pred {
    let p = contains(text);
    Pred::sql(
        "LOWER(t.slice_name) LIKE LOWER(?) OR LOWER(COALESCE(t.description, '')) LIKE LOWER(?) \
         OR LOWER(COALESCE(t.viz_type, '')) LIKE LOWER(?) OR EXISTS (SELECT 1 FROM tables tt \
         WHERE tt.id = t.datasource_id AND LOWER(tt.table_name) LIKE LOWER(?))",
        vec![p.clone(), p.clone(), p.clone(), p],
    )
}

/// Charts built on one of the datasets (`datasource_type` `table`): what deleting a dataset
/// or database would orphan.
pub fn charts_on_datasets(dataset_ids: &[i64]) -> Pred {
    Pred::And(vec![
        Pred::sql("t.datasource_type = ?", vec![Value::Text("table".into())]),
        Pred::in_list(
            "t.datasource_id",
            dataset_ids.iter().map(|i| Value::Int(*i)).collect(),
            false,
        ),
    ])
}

/// Dashboards whose title or slug contains `text` (case-insensitive): Superset's
/// `title_or_slug`.
pub fn dashboard_title_or_slug_contains(text: &str) -> Pred {
    let p = contains(text);
    Pred::sql(
        "LOWER(COALESCE(t.dashboard_title, '')) LIKE LOWER(?) OR LOWER(COALESCE(t.slug, '')) LIKE LOWER(?)",
        vec![p.clone(), p],
    )
}

/// Datasets of one database.
pub fn datasets_in_database(database_id: i64) -> Pred {
    Pred::sql("t.database_id = ?", vec![Value::Int(database_id)])
}

/// Physical datasets (no SQL of their own) when `yes`, virtual ones otherwise: Superset's
/// `dataset_is_null_or_empty` on `sql`.
pub fn dataset_is_physical(yes: bool) -> Pred {
    if yes {
        Pred::sql("t.sql IS NULL OR t.sql = ''", vec![])
    } else {
        Pred::sql("t.sql IS NOT NULL AND t.sql <> ''", vec![])
    }
}

/// Datasets whose `extra` names a `certified_by` (`yes`) or does not: Superset's
/// `dataset_is_certified`, which looks into the JSON text the same way.
pub fn dataset_certified(yes: bool) -> Pred {
    let pattern = Value::Text("%\"certified_by\"%".into());
    if yes {
        Pred::sql("t.extra LIKE ?", vec![pattern])
    } else {
        Pred::sql("t.extra IS NULL OR t.extra NOT LIKE ?", vec![pattern])
    }
}

/// Databases that allow (`yes`) or refuse file uploads: Superset's `database_file_upload`
/// filter on `allow_file_upload`.
pub fn database_allows_file_upload(yes: bool) -> Pred {
    Pred::sql("t.allow_file_upload = ?", vec![Value::Bool(yes)])
}

/// Databases shown in SQL Lab (`expose_in_sqllab`).
pub fn database_exposed_in_sqllab() -> Pred {
    Pred::sql("t.expose_in_sqllab = ?", vec![Value::Bool(true)])
}

/// SQL Lab queries the user ran (`query.user_id`).
pub fn queries_run_by(user_id: i64) -> Pred {
    Pred::sql("t.user_id = ?", vec![Value::Int(user_id)])
}

/// Records changed at or after `since` (naive UTC, as `changed_on` is stored).
pub fn changed_since(since: chrono::NaiveDateTime) -> Pred {
    Pred::sql("t.changed_on >= ?", vec![Value::Timestamp(since)])
}

/// Saved queries whose label, description, SQL or schema contains `text` (case-insensitive):
/// Superset's `all_text`.
pub fn saved_query_text_contains(text: &str) -> Pred {
    let p = contains(text);
    Pred::sql(
        "LOWER(COALESCE(t.label, '')) LIKE LOWER(?) OR LOWER(COALESCE(t.description, '')) \
         LIKE LOWER(?) OR LOWER(COALESCE(t.sql, '')) LIKE LOWER(?) \
         OR LOWER(COALESCE(t.\"schema\", '')) LIKE LOWER(?)",
        vec![p.clone(), p.clone(), p.clone(), p],
    )
}

impl Store {
    /// Rewrites a dashboard's `json_metadata` (an object; anything else reads as `{}`) with
    /// `edit`, in one transaction so concurrent edits of other keys are not lost. The acting
    /// user becomes `changed_by`; `changed_on` moves only when `touch` (Superset's
    /// `mark_updated`). Returns false when the dashboard does not exist.
    pub async fn edit_dashboard_metadata(
        &self,
        id: i64,
        user: i64,
        touch: bool,
        edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>) + Send,
    ) -> Result<bool> {
        let tx = self.db().begin().await?;
        // A no-op write first takes the row lock (PostgreSQL) or the write lock (SQLite),
        // so a concurrent edit waits instead of being overwritten; `FOR UPDATE` is not
        // shared by both engines.
        if tx
            .execute("UPDATE dashboards SET id = id WHERE id = $1", params![id])
            .await?
            == 0
        {
            return Ok(false);
        }
        let row = tx
            .query_one(
                "SELECT json_metadata FROM dashboards WHERE id = $1",
                params![id],
            )
            .await?;
        let text: Option<String> = row.get("json_metadata")?;
        let mut meta = match text.as_deref().map(serde_json::from_str) {
            Some(Ok(serde_json::Value::Object(m))) => m,
            _ => serde_json::Map::new(),
        };
        edit(&mut meta);
        let json = serde_json::Value::Object(meta).to_string();
        if touch {
            tx.execute(
                "UPDATE dashboards SET json_metadata = $1, changed_by_fk = $2, changed_on = $3 WHERE id = $4",
                vec![
                    Value::Text(json),
                    Value::Int(user),
                    Value::Timestamp(Utc::now().naive_utc()),
                    Value::Int(id),
                ],
            )
            .await?;
        } else {
            tx.execute(
                "UPDATE dashboards SET json_metadata = $1, changed_by_fk = $2 WHERE id = $3",
                vec![Value::Text(json), Value::Int(user), Value::Int(id)],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// A dataset's columns and saved metrics (what chart data, drill info and the dataset's
    /// show answer read besides the dataset itself).
    pub async fn dataset_children(&self, id: i64) -> Result<(Vec<Record>, Vec<Record>)> {
        let by_table = |m| Pred::field(m, "table_id", model::Op::Eq, Value::Int(id));
        let (_, cids) = self
            .list_ids(&DATASET_COLUMN, &by_table(&DATASET_COLUMN)?, None, None)
            .await?;
        let (_, mids) = self
            .list_ids(&DATASET_METRIC, &by_table(&DATASET_METRIC)?, None, None)
            .await?;
        Ok((
            self.load(&DATASET_COLUMN, &cids, &[]).await?,
            self.load(&DATASET_METRIC, &mids, &[]).await?,
        ))
    }

    /// Marks or unmarks a record as one of the user's favourites (`favstar`; `class` is
    /// Superset's class name: `slice`, `Dashboard`).
    pub async fn set_favorite(
        &self,
        user_id: i64,
        class: &str,
        obj_id: i64,
        on: bool,
    ) -> Result<()> {
        let tx = self.db().begin().await?;
        tx.execute(
            "DELETE FROM favstar WHERE user_id = $1 AND class_name = $2 AND obj_id = $3",
            params![user_id, class, obj_id],
        )
        .await?;
        if on {
            tx.execute(
                "INSERT INTO favstar (user_id, class_name, obj_id, dttm) VALUES ($1, $2, $3, $4)",
                vec![
                    Value::Int(user_id),
                    Value::Text(class.into()),
                    Value::Int(obj_id),
                    Value::Timestamp(Utc::now().naive_utc()),
                ],
            )
            .await?;
        }
        tx.commit().await
    }

    /// Which of `ids` the user has marked as favourites.
    pub async fn favorites(
        &self,
        user_id: i64,
        class: &str,
        ids: &[i64],
    ) -> Result<std::collections::BTreeSet<i64>> {
        let pred = Pred::And(vec![
            Pred::field(&FAVSTAR, "user_id", model::Op::Eq, Value::Int(user_id))?,
            Pred::field(
                &FAVSTAR,
                "class_name",
                model::Op::Eq,
                Value::Text(class.into()),
            )?,
            Pred::field_in(
                &FAVSTAR,
                "obj_id",
                ids.iter().map(|i| Value::Int(*i)).collect(),
            )?,
        ]);
        let (_, rows) = self.list_ids(&FAVSTAR, &pred, None, None).await?;
        Ok(self
            .load(&FAVSTAR, &rows, &[])
            .await?
            .iter()
            .filter_map(|r| r.get::<i64>("obj_id"))
            .collect())
    }
}

/// A user's favourite (`favstar`): Superset's class name and the record's id.
pub static FAVSTAR: Model = Model {
    table: "favstar",
    fields: &[
        col!("user_id", Int),
        col!("class_name", Text),
        col!("obj_id", Int),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Location;

    /// Every named predicate is valid SQL against the migrated schema of the model it is
    /// meant for (a misspelt column would otherwise only show when a client used the filter).
    #[tokio::test]
    async fn named_predicates_run_against_their_models() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(Location::Sqlite(&dir.path().join("meta.db")), 1)
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let since = chrono::DateTime::from_timestamp(0, 0).unwrap().naive_utc();
        let cases: Vec<(&Model, Pred)> = vec![
            (&CHART, created_by(1)),
            (&CHART, has_creator(true)),
            (&CHART, has_creator(false)),
            (&CHART, favorite_of("slice", 1)),
            (&CHART, certified(true)),
            (&CHART, certified(false)),
            (&CHART, chart_owned_or_created_by(1)),
            (&CHART, chart_owned_created_or_favored_by(1, "slice")),
            (&CHART, chart_text_contains("a")),
            (&CHART, charts_on_datasets(&[1, 2])),
            (&CHART, charts_on_datasets(&[])),
            (&DASHBOARD, dashboard_title_or_slug_contains("a")),
            (&DASHBOARD, certified(true)),
            (&DASHBOARD, favorite_of("Dashboard", 1)),
            (&DATASET, datasets_in_database(1)),
            (&DATASET, dataset_is_physical(true)),
            (&DATASET, dataset_is_physical(false)),
            (&DATASET, dataset_certified(true)),
            (&DATASET, dataset_certified(false)),
            (&DATABASE, database_allows_file_upload(true)),
            (&DATABASE, database_exposed_in_sqllab()),
            (&QUERY, queries_run_by(1)),
            (&QUERY, changed_since(since)),
            (&SAVED_QUERY, created_by(1)),
            (&SAVED_QUERY, saved_query_text_contains("a")),
            (&SAVED_QUERY, favorite_of("query", 1)),
        ];
        for (model, pred) in cases {
            let (count, _) = store
                .list_ids(model, &pred, None, None)
                .await
                .unwrap_or_else(|e| panic!("{} {pred:?}: {e}", model.table));
            assert_eq!(
                count, 0,
                "{}: an empty catalog matches nothing",
                model.table
            );
        }
        let (columns, metrics) = store.dataset_children(1).await.unwrap();
        assert!(columns.is_empty() && metrics.is_empty());
    }
}
