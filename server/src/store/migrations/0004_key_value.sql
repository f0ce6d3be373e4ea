-- Short-lived and permanent UI state of Superset's single-page app: explore form data and
-- dashboard filter state (Superset's temporary caches, with an expiry) and dashboard/explore
-- permalinks (Superset's key_value table, no expiry). They live in the metadata store rather
-- than in a replica's memory, so a key created through one replica opens through any other.

CREATE TABLE liteset_key_value (
    id {{ID}},
    namespace TEXT NOT NULL,
    entry_key TEXT NOT NULL,
    resource TEXT NOT NULL,
    owner_id BIGINT REFERENCES ab_user(id) ON DELETE CASCADE,
    value TEXT NOT NULL,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    expires_on TIMESTAMP,
    UNIQUE (namespace, entry_key)
);
CREATE INDEX ix_liteset_key_value_expires ON liteset_key_value (expires_on);
