//! The app's UI state (`liteset_key_value`) and client event log (`logs`, created by the catalog migration).
//!
//! Entries are plain records: a namespace, a key unique within it, the resource they belong to,
//! their owner, a text value and an optional expiry. Who may read or change an entry is the API
//! layer's decision; this module only stores, finds and forgets, and never returns an expired
//! entry (expired rows are purged lazily on writes, so no replica needs a sweeper).

use chrono::{NaiveDateTime, Utc};

use super::db::{Executor, Row, Value};
use super::{Result, Store};

/// One stored entry.
#[derive(Clone, Debug, PartialEq)]
pub struct KvEntry {
    /// What kind of state (`explore_form_data`, `dashboard_filter_state`, …).
    pub namespace: String,
    /// The key, unique within the namespace.
    pub key: String,
    /// What the entry belongs to (a dashboard id, `<id>__<type>` of a datasource).
    pub resource: String,
    /// Who created it; `None` for anonymous callers.
    pub owner: Option<i64>,
    /// The value (JSON text).
    pub value: String,
    /// When it stops existing; `None` for never.
    pub expires_on: Option<NaiveDateTime>,
}

/// One row of recent activity: a dashboard or chart the user opened.
#[derive(Clone, Debug, PartialEq)]
pub struct Activity {
    /// The log action (`log` for client events).
    pub action: String,
    /// The dashboard opened, with its slug and title.
    pub dashboard: Option<(i64, Option<String>, String)>,
    /// The chart opened, with its name.
    pub slice: Option<(i64, String)>,
    /// When.
    pub dttm: NaiveDateTime,
}

/// A client event to record.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEvent {
    /// Superset's `event_name` (`mount_dashboard`, `mount_explorer`, …).
    pub event_name: Option<String>,
    /// The dashboard the event happened on.
    pub dashboard_id: Option<i64>,
    /// The chart the event happened on.
    pub slice_id: Option<i64>,
}

/// The `json` of a logged event as Superset writes it (`json.dumps`, so `": "`), which is what
/// recent activity matches on.
fn event_json(event_name: Option<&str>) -> String {
    match event_name {
        Some(n) => format!(
            "{{\"event_name\": {}}}",
            serde_json::Value::String(n.to_owned())
        ),
        None => "{}".to_owned(),
    }
}

fn entry(r: &Row) -> Result<KvEntry> {
    Ok(KvEntry {
        namespace: r.get("namespace")?,
        key: r.get("entry_key")?,
        resource: r.get("resource")?,
        owner: r.get("owner_id")?,
        value: r.get("value")?,
        expires_on: r.get("expires_on")?,
    })
}

impl Store {
    /// The live entry `key` of `namespace`.
    pub async fn kv_get(&self, namespace: &str, key: &str) -> Result<Option<KvEntry>> {
        let row = self
            .db()
            .query_opt(
                "SELECT namespace, entry_key, resource, owner_id, value, expires_on \
                 FROM liteset_key_value WHERE namespace = $1 AND entry_key = $2 \
                 AND (expires_on IS NULL OR expires_on > $3)",
                crate::params![namespace, key, Utc::now().naive_utc()],
            )
            .await?;
        row.as_ref().map(entry).transpose()
    }

    /// Creates or replaces an entry (by namespace and key), purging expired entries first.
    pub async fn kv_put(&self, e: &KvEntry) -> Result<()> {
        let now = Utc::now().naive_utc();
        self.db()
            .execute(
                "DELETE FROM liteset_key_value WHERE expires_on <= $1",
                crate::params![now],
            )
            .await?;
        self.db()
            .execute(
                "INSERT INTO liteset_key_value (namespace, entry_key, resource, owner_id, value, \
                 created_on, changed_on, expires_on) VALUES ($1, $2, $3, $4, $5, $6, $6, $7) \
                 ON CONFLICT (namespace, entry_key) DO UPDATE SET resource = excluded.resource, \
                 owner_id = excluded.owner_id, value = excluded.value, \
                 changed_on = excluded.changed_on, expires_on = excluded.expires_on",
                vec![
                    Value::from(e.namespace.as_str()),
                    Value::from(e.key.as_str()),
                    Value::from(e.resource.as_str()),
                    e.owner.map_or(Value::Null, Value::Int),
                    Value::from(e.value.as_str()),
                    Value::Timestamp(now),
                    e.expires_on.map_or(Value::Null, Value::Timestamp),
                ],
            )
            .await?;
        Ok(())
    }

    /// Moves a live entry's expiry (Superset refreshes a temporary cache entry on every read).
    pub async fn kv_touch(
        &self,
        namespace: &str,
        key: &str,
        expires_on: NaiveDateTime,
    ) -> Result<()> {
        self.db()
            .execute(
                "UPDATE liteset_key_value SET expires_on = $3 \
                 WHERE namespace = $1 AND entry_key = $2 AND expires_on IS NOT NULL",
                crate::params![namespace, key, expires_on],
            )
            .await?;
        Ok(())
    }

    /// Deletes an entry; returns whether a live one existed.
    pub async fn kv_delete(&self, namespace: &str, key: &str) -> Result<bool> {
        Ok(self
            .db()
            .execute(
                "DELETE FROM liteset_key_value WHERE namespace = $1 AND entry_key = $2 \
                 AND (expires_on IS NULL OR expires_on > $3)",
                crate::params![namespace, key, Utc::now().naive_utc()],
            )
            .await?
            > 0)
    }

    /// Records client events of one user.
    pub async fn log_events(&self, user_id: Option<i64>, events: &[LogEvent]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let now = Utc::now().naive_utc();
        let tx = self.db().begin().await?;
        for e in events {
            tx.execute(
                "INSERT INTO logs (action, json, user_id, dashboard_id, slice_id, dttm) \
                 VALUES ('log', $1, $2, $3, $4, $5)",
                vec![
                    Value::from(event_json(e.event_name.as_deref())),
                    user_id.map_or(Value::Null, Value::Int),
                    e.dashboard_id.map_or(Value::Null, Value::Int),
                    e.slice_id.map_or(Value::Null, Value::Int),
                    Value::Timestamp(now),
                ],
            )
            .await?;
        }
        tx.commit().await
    }

    /// A user's most recent `events` on dashboards and charts that still exist, newest first;
    /// `distinct` keeps the latest of each (dashboard, chart) pair within the last year.
    pub async fn recent_activity(
        &self,
        user_id: i64,
        events: &[String],
        distinct: bool,
        page: i64,
        page_size: i64,
    ) -> Result<Vec<Activity>> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let mut params = vec![Value::Int(user_id)];
        let marks: Vec<String> = events
            .iter()
            .map(|e| {
                let pattern = event_json(Some(e));
                let inner = &pattern[1..pattern.len() - 1];
                params.push(Value::Text(format!("%{inner}%")));
                format!("l.json LIKE ${}", params.len())
            })
            .collect();
        let base = format!(
            "l.action = 'log' AND l.user_id = $1 AND ({}) \
             AND (l.dashboard_id IS NOT NULL OR l.slice_id IS NOT NULL)",
            marks.join(" OR ")
        );
        let source = if distinct {
            params.push(Value::Timestamp(
                Utc::now().naive_utc() - chrono::Duration::days(365),
            ));
            format!(
                "(SELECT l.action, l.dashboard_id, l.slice_id, MAX(l.dttm) AS dttm FROM logs l \
                 WHERE {base} AND l.dttm > ${} GROUP BY l.action, l.dashboard_id, l.slice_id)",
                params.len()
            )
        } else {
            format!(
                "(SELECT l.action, l.dashboard_id, l.slice_id, l.dttm FROM logs l WHERE {base})"
            )
        };
        params.push(Value::Int(page_size));
        let limit = params.len();
        params.push(Value::Int(page.saturating_mul(page_size)));
        let offset = params.len();
        let sql = format!(
            "SELECT a.action, a.dashboard_id, a.slice_id, a.dttm, d.slug AS dashboard_slug, \
             d.dashboard_title, s.slice_name FROM {source} a \
             LEFT JOIN dashboards d ON d.id = a.dashboard_id \
             LEFT JOIN slices s ON s.id = a.slice_id \
             WHERE (d.dashboard_title IS NOT NULL AND d.dashboard_title <> '') \
             OR (s.slice_name IS NOT NULL AND s.slice_name <> '') \
             ORDER BY a.dttm DESC LIMIT ${limit} OFFSET ${offset}"
        );
        let rows = self.db().query(&sql, params).await?;
        rows.iter()
            .map(|r| {
                let dashboard = match r.get::<Option<i64>>("dashboard_id")? {
                    Some(id) => Some((
                        id,
                        r.get::<Option<String>>("dashboard_slug")?,
                        r.get::<Option<String>>("dashboard_title")?
                            .unwrap_or_default(),
                    )),
                    None => None,
                };
                let slice = match r.get::<Option<i64>>("slice_id")? {
                    Some(id) => Some((
                        id,
                        r.get::<Option<String>>("slice_name")?.unwrap_or_default(),
                    )),
                    None => None,
                };
                Ok(Activity {
                    action: r.get("action")?,
                    dashboard,
                    slice,
                    dttm: r.get("dttm")?,
                })
            })
            .collect()
    }
}
