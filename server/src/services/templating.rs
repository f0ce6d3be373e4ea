//! What Jinja templates (`query/template.rs`) need from the services: the caller as the user
//! macros see them, the budget from the configuration, the datasets `dataset()` and `metric()`
//! may read (the caller's own, in the same database: macros ask the same access question as
//! every other path), and the table check of a dataset SQL a template rendered.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::Error;
use crate::auth::CurrentUser;
use crate::query::Datasource;
use crate::query::sql::{Limits, Templating};
use crate::query::sqlcheck;
use crate::query::template::{self, Budget, Facts, UserFacts};
use crate::state::AppState;
use crate::store::catalog::{self, DATABASE, DATASET};

/// The most datasets one request's templates may reach through `dataset()` and `metric()`.
const MAX_DATASETS: usize = 16;

/// The caller as `current_user_id()`, `current_username()`, `current_user_email()` and
/// `current_user_roles()` see them (a guest: no id, the token's username, the guest role).
pub fn user_facts(user: &CurrentUser) -> UserFacts {
    UserFacts {
        id: user.guest.is_none().then_some(user.user.id),
        username: Some(user.user.username.clone()).filter(|u| !u.is_empty()),
        email: Some(user.user.email.clone()).filter(|e| !e.is_empty()),
        roles: user.roles.iter().map(|r| r.name.clone()).collect(),
    }
}

/// Each render's budget (`query.template_fuel`, `query.template_max_bytes`).
pub fn budget(state: &AppState) -> Budget {
    let q = &state.config.query;
    Budget {
        fuel: q.template_fuel,
        max_bytes: usize::try_from(q.template_max_bytes).unwrap_or(usize::MAX),
    }
}

/// The limits nested `dataset()` queries are built with.
pub fn limits(state: &AppState) -> Limits {
    let q = &state.config.query;
    Limits {
        row_limit: q.row_limit,
        samples_row_limit: q.samples_row_limit,
        sql_max_row: q.sql_max_row,
    }
}

/// Templating for a request by `user` whose templates live in `texts` (and in `main`'s SQL,
/// metrics and columns, when given): `facts`, and the datasets the texts name.
pub async fn templating(
    state: &AppState,
    user: &CurrentUser,
    facts: Facts,
    main: Option<&Datasource>,
    database_id: i64,
    texts: &[&str],
) -> Result<Templating, Error> {
    let enabled = state.config.query.template_processing;
    let mut datasets = HashMap::new();
    if enabled {
        let mut wanted = BTreeSet::new();
        for t in texts {
            referenced_ids(t, &mut wanted);
        }
        if let Some(ds) = main {
            datasets.insert(ds.id, Arc::new(ds.clone()));
            scan(ds, &mut wanted);
        }
        load(state, user, database_id, &mut wanted, &mut datasets).await?;
    }
    Ok(Templating::new(
        enabled,
        facts,
        budget(state),
        datasets,
        limits(state),
    ))
}

/// Loads the datasets in `wanted` (and those their own templates name) that the caller may
/// read and that live in `database_id`.
async fn load(
    state: &AppState,
    user: &CurrentUser,
    database_id: i64,
    wanted: &mut BTreeSet<i64>,
    datasets: &mut HashMap<i64, Arc<Datasource>>,
) -> Result<(), Error> {
    let mut tried = BTreeSet::new();
    while let Some(id) = wanted.iter().copied().find(|i| !tried.contains(i)) {
        tried.insert(id);
        if datasets.contains_key(&id) {
            continue;
        }
        if datasets.len() >= MAX_DATASETS {
            break;
        }
        let grants = user.grants();
        if !grants.all
            && !state
                .store
                .matches(&DATASET, id, &catalog::dataset_scope(grants))
                .await?
        {
            continue;
        }
        let loaded = match super::chart_data::datasource(state, id).await {
            Ok(l) => l,
            Err(Error::Query(crate::query::QueryError::NotFound)) => continue,
            Err(e) => return Err(e),
        };
        // Another database's SQL would run on this connection, reading whatever tables of
        // this database share its names.
        if loaded.0.database_id != database_id {
            continue;
        }
        scan(&loaded.0, wanted);
        datasets.insert(id, Arc::new(loaded.0.clone()));
    }
    Ok(())
}

/// Adds the dataset ids `ds`'s templates name.
fn scan(ds: &Datasource, wanted: &mut BTreeSet<i64>) {
    if let Some(sql) = &ds.sql {
        referenced_ids(sql, wanted);
    }
    for m in &ds.metrics {
        referenced_ids(&m.expression, wanted);
    }
    for c in &ds.columns {
        if let Some(e) = &c.expression {
            referenced_ids(e, wanted);
        }
    }
}

/// The dataset ids `text` passes to `dataset(N …)` and `metric('x', N)` /
/// `metric('x', dataset_id=N)` as literal numbers (the only ones loaded: a macro cannot wait
/// for the store, so a computed id finds no dataset).
pub fn referenced_ids(text: &str, out: &mut BTreeSet<i64>) {
    if !template::has_template(text) {
        return;
    }
    for (name, arg) in [("dataset(", 0usize), ("metric(", 1usize)] {
        for (at, _) in text.match_indices(name) {
            let args = &text[at + name.len()..];
            let args = &args[..args.find(')').unwrap_or(args.len()).min(300)];
            let parts: Vec<&str> = args.split(',').map(str::trim).collect();
            let candidate = parts
                .iter()
                .find_map(|p| {
                    p.strip_prefix("dataset_id")
                        .map(|r| r.trim_start_matches([' ', '=']))
                })
                .or_else(|| parts.get(arg).copied());
            if let Some(id) = candidate.and_then(|c| c.trim().parse::<i64>().ok()) {
                out.insert(id);
            }
        }
    }
}

/// A virtual dataset's SQL as its author saves it: rendered with no user and no request values
/// and its own template parameters (`template_params`, JSON text), the form its creator's
/// table access and its columns are judged on, and whose tables any caller of the dataset may
/// read through it (see [`check_rendered_tables`]). SQL without template syntax is returned as
/// it is; while templating is off, SQL with it is refused.
pub async fn saved_sql(
    state: &AppState,
    user: &CurrentUser,
    database_id: i64,
    engine: crate::uri::Engine,
    sql: &str,
    template_params: Option<&str>,
) -> Result<String, Error> {
    if !template::has_template(sql) {
        return Ok(sql.to_owned());
    }
    let params = template_params
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| match v {
            serde_json::Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let facts = Facts::neutral(chrono::Utc::now().naive_utc());
    let tpl = templating(state, user, facts, None, database_id, &[sql]).await?;
    let sql = sql.trim_matches(|c: char| matches!(c, '\t' | '\r' | '\n' | ';' | ' '));
    tpl.script_renderer(crate::engines::Dialect::of(engine), &params)
        .render(sql)
        .map_err(|e| crate::query::QueryError::DatasetTemplate(e).into())
}

/// The tables a dataset's rendered SQL reads beyond those of its SQL as its author saved it
/// (rendered with no user and no request values: what creating the dataset checked) must be
/// readable by the caller, as in SQL Lab. `Ok(true)` when there are none (an answer that holds
/// for every caller).
pub async fn check_rendered_tables(
    state: &AppState,
    user: &CurrentUser,
    tpl: &Templating,
    ds: &Datasource,
    rendered: &str,
) -> Result<bool, Error> {
    let dialect = crate::query::sql::sql_dialect(ds.engine);
    let read = sqlcheck::tables_read(dialect, rendered).map_err(crate::query::QueryError::from)?;
    let baseline = match tpl.neutral_dataset_sql(ds) {
        Ok(Some(sql)) => sqlcheck::tables_read(dialect, &sql).unwrap_or_default(),
        _ => BTreeSet::new(),
    };
    let extra: BTreeSet<_> = read.difference(&baseline).cloned().collect();
    if extra.is_empty() {
        return Ok(true);
    }
    let db = state.store.load_one(&DATABASE, ds.database_id, &[]).await?;
    match super::sqllab::tables_refusal(state, user, &db, dialect, extra).await? {
        None => Ok(false),
        Some(refusal) => Err(refusal.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_dataset_ids_are_found() {
        let mut ids = BTreeSet::new();
        referenced_ids(
            "SELECT * FROM {{ dataset(12) }} JOIN {{ dataset( 3 , include_metrics=True) }} \
             WHERE {{ metric('m') }} > {{ metric('n', 7) }} + {{ metric('o', dataset_id=9) }} \
             {{ dataset(x) }}",
            &mut ids,
        );
        assert_eq!(ids.into_iter().collect::<Vec<_>>(), [3, 7, 9, 12]);
        let mut none = BTreeSet::new();
        referenced_ids("SELECT dataset(4)", &mut none);
        assert!(none.is_empty());
    }
}
