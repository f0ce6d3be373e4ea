//! Uploaded plugins: the component bytes and what was checked when they were installed.

use chrono::{NaiveDateTime, Utc};

use super::db::{Executor, Value};
use super::{Result, Store};

/// An uploaded plugin as stored.
#[derive(Clone, Debug)]
pub struct StoredPlugin {
    /// Unique name (the plugin's own `info().name`).
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// `post-processor` or `viz`.
    pub kind: String,
    /// The `liteset:plugin` version it targets.
    pub wit_version: String,
    /// Hex sha256 of `wasm`.
    pub sha256: String,
    /// The component.
    pub wasm: Vec<u8>,
    /// When it was last uploaded.
    pub changed_on: NaiveDateTime,
}

impl Store {
    /// Names and hashes of every uploaded plugin: enough to tell whether another replica
    /// changed anything.
    pub async fn plugin_hashes(&self) -> Result<Vec<(String, String)>> {
        let rows = self
            .db()
            .query(
                "SELECT name, sha256 FROM liteset_plugins ORDER BY name",
                vec![],
            )
            .await?;
        rows.iter()
            .map(|r| Ok((r.get("name")?, r.get("sha256")?)))
            .collect()
    }

    /// One uploaded plugin with its bytes.
    pub async fn plugin(&self, name: &str) -> Result<Option<StoredPlugin>> {
        let row = self
            .db()
            .query_opt(
                "SELECT name, version, kind, wit_version, sha256, wasm, changed_on \
                 FROM liteset_plugins WHERE name = $1",
                vec![Value::Text(name.to_owned())],
            )
            .await?;
        row.map(|r| {
            Ok(StoredPlugin {
                name: r.get("name")?,
                version: r.get("version")?,
                kind: r.get("kind")?,
                wit_version: r.get("wit_version")?,
                sha256: r.get("sha256")?,
                wasm: r.get("wasm")?,
                changed_on: r.get("changed_on")?,
            })
        })
        .transpose()
    }

    /// Inserts or replaces the plugin called `p.name`.
    pub async fn save_plugin(&self, p: &StoredPlugin, user_id: Option<i64>) -> Result<()> {
        let now = Utc::now().naive_utc();
        let user = user_id.map_or(Value::Null, Value::Int);
        self.db()
            .execute(
                "INSERT INTO liteset_plugins (name, version, kind, wit_version, sha256, wasm, \
                 created_on, changed_on, created_by_fk, changed_by_fk) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $8) \
                 ON CONFLICT (name) DO UPDATE SET version = excluded.version, \
                 kind = excluded.kind, wit_version = excluded.wit_version, \
                 sha256 = excluded.sha256, wasm = excluded.wasm, \
                 changed_on = excluded.changed_on, changed_by_fk = excluded.changed_by_fk",
                vec![
                    Value::Text(p.name.clone()),
                    Value::Text(p.version.clone()),
                    Value::Text(p.kind.clone()),
                    Value::Text(p.wit_version.clone()),
                    Value::Text(p.sha256.clone()),
                    Value::Bytes(p.wasm.clone()),
                    Value::Timestamp(now),
                    user,
                ],
            )
            .await?;
        Ok(())
    }

    /// Deletes an uploaded plugin; returns whether it existed.
    pub async fn delete_plugin(&self, name: &str) -> Result<bool> {
        Ok(self
            .db()
            .execute(
                "DELETE FROM liteset_plugins WHERE name = $1",
                vec![Value::Text(name.to_owned())],
            )
            .await?
            > 0)
    }
}
