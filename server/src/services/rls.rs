//! Row-level security: the predicates a caller's queries on a dataset carry (Superset's
//! `SecurityManager.get_rls_filters` and `SqlaTable.get_sqla_row_level_filters`).
//!
//! The rules are read once per catalog generation (`AppState::rls_rules`) and matched here
//! against the caller's roles; the query layer puts the predicates into the statement's WHERE
//! (through the same checks as `extras.where`), so they are part of the SQL the results cache
//! and single flight key on: no cached answer crosses rules.

use std::sync::Arc;

use super::Error;
use crate::auth::CurrentUser;
use crate::query::RowFilter;
use crate::state::AppState;
use crate::store::catalog::RlsRule;

/// Every rule, from the cache or the store.
async fn rules(state: &AppState) -> Result<Arc<Vec<RlsRule>>, Error> {
    if let Some(hit) = state.rls_rules.get(&()).await {
        return Ok(hit);
    }
    let seen = state.catalog_seen();
    let loaded = Arc::new(state.store.rls_rules().await?);
    if state.catalog_seen() == seen {
        state.rls_rules.insert((), loaded.clone()).await;
        // A rule written between the check and the insert: its invalidation may have run
        // first.
        if state.catalog_seen() != seen {
            state.rls_rules.invalidate(&()).await;
        }
    }
    Ok(loaded)
}

/// The row filters on `user`'s queries of dataset `dataset_id`: the clauses of the `Regular`
/// rules naming one of the user's roles and of the `Base` rules naming none of them, each rule
/// on its own, except that rules sharing a `group_key` form one filter whose clauses are
/// OR-ed. Every filter is AND-ed into the query.
pub async fn row_filters(
    state: &AppState,
    user: &CurrentUser,
    dataset_id: i64,
) -> Result<Vec<RowFilter>, Error> {
    let rules = rules(state).await?;
    let roles: Vec<i64> = user.roles.iter().map(|r| r.id).collect();
    let mut filters = applicable(&rules, &roles, dataset_id);
    // A guest token's clauses (Superset's `get_guest_rls_filters`): each on its own, on its
    // dataset or, without one, on every dataset.
    if let Some(g) = &user.guest {
        filters.extend(
            g.rls
                .iter()
                .filter(|r| r.dataset.is_none_or(|d| d == dataset_id))
                .map(|r| RowFilter {
                    any_of: vec![r.clause.clone()],
                }),
        );
    }
    Ok(filters)
}

/// [`row_filters`] over given rules and role ids.
pub fn applicable(rules: &[RlsRule], roles: &[i64], dataset_id: i64) -> Vec<RowFilter> {
    let mut alone = Vec::new();
    let mut groups: Vec<(String, RowFilter)> = Vec::new();
    for rule in rules {
        if !rule.tables.contains(&dataset_id) {
            continue;
        }
        let member = rule.roles.iter().any(|r| roles.contains(r));
        if member == rule.base {
            continue;
        }
        match &rule.group_key {
            None => alone.push(RowFilter {
                any_of: vec![rule.clause.clone()],
            }),
            Some(key) => match groups.iter_mut().find(|(k, _)| k == key) {
                Some((_, f)) => f.any_of.push(rule.clause.clone()),
                None => groups.push((
                    key.clone(),
                    RowFilter {
                        any_of: vec![rule.clause.clone()],
                    },
                )),
            },
        }
    }
    alone.extend(groups.into_iter().map(|(_, f)| f));
    alone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: i64, base: bool, clause: &str, key: Option<&str>, roles: &[i64]) -> RlsRule {
        RlsRule {
            id,
            base,
            clause: clause.into(),
            group_key: key.map(str::to_owned),
            tables: vec![7],
            roles: roles.to_vec(),
        }
    }

    fn clauses(f: &[RowFilter]) -> Vec<Vec<&str>> {
        f.iter()
            .map(|f| f.any_of.iter().map(String::as_str).collect())
            .collect()
    }

    /// Regular rules apply to their roles' members, Base rules to everyone else; a group's
    /// clauses are one OR-ed filter; other datasets are untouched.
    #[test]
    fn rules_apply_by_role_type_and_group() {
        let rules = [
            rule(1, false, "region = 'north'", None, &[10]),
            rule(2, false, "team = 'a'", Some("team"), &[10]),
            rule(3, false, "team = 'b'", Some("team"), &[11]),
            rule(4, true, "1 = 0", None, &[12]),
            rule(5, false, "x = 1", None, &[99]),
        ];
        assert_eq!(
            clauses(&applicable(&rules, &[10, 11], 7)),
            [
                vec!["region = 'north'"],
                vec!["1 = 0"],
                vec!["team = 'a'", "team = 'b'"]
            ]
        );
        // A member of the Base rule's role escapes it.
        assert_eq!(
            clauses(&applicable(&rules, &[11, 12], 7)),
            [vec!["team = 'b'"]]
        );
        assert!(applicable(&rules, &[10], 8).is_empty());
    }
}
