//! The writes of SQL Lab's query history that the generic catalog `save` cannot express: state
//! transitions that must not overwrite a final state another party already wrote (a query
//! stopped from another replica, or stopped while its task was finishing).

use chrono::Utc;

use super::catalog::QUERY;
use super::db::{Executor, Value};
use super::{Result, Store, model};

/// The `query.status` values a query can still leave.
pub const ACTIVE_STATUSES: &[&str] = &["pending", "running"];

impl Store {
    /// Sets `values` (model field names of [`QUERY`]) and stamps `changed_on`, but only while
    /// the query is still pending or running; returns whether the row was updated.
    pub async fn update_active_query(&self, id: i64, values: &[(&str, Value)]) -> Result<bool> {
        let mut values: Vec<(&str, Value)> = values.to_vec();
        values.push(("changed_on", Value::Timestamp(Utc::now().naive_utc())));
        let cols = model::columns_for(&QUERY, &values)?;
        let sets: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, (c, _))| format!("\"{c}\" = ${}", i + 1))
            .collect();
        let mut params: Vec<Value> = cols.into_iter().map(|(_, v)| v.clone()).collect();
        params.push(Value::Int(id));
        let id_mark = params.len();
        let marks: Vec<String> = ACTIVE_STATUSES
            .iter()
            .map(|s| {
                params.push(Value::Text((*s).to_owned()));
                format!("${}", params.len())
            })
            .collect();
        let sql = format!(
            "UPDATE query SET {} WHERE id = ${id_mark} AND status IN ({})",
            sets.join(", "),
            marks.join(", ")
        );
        Ok(self.db().execute(&sql, params).await? > 0)
    }
}
