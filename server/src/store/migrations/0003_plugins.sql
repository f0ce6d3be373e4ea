-- Plugins uploaded through POST /api/v1/plugin/. The component itself lives here (not in a
-- replica's data folder) so every replica sharing the metadata database serves the same
-- plugins; compiled code is a per-replica cache derived from it.

CREATE TABLE liteset_plugins (
    id {{ID}},
    name TEXT NOT NULL UNIQUE,
    version TEXT NOT NULL,
    kind TEXT NOT NULL,
    wit_version TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    wasm {{BLOB}} NOT NULL,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL
);
