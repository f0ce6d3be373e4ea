-- Superset's web app parses every database's `extra` as JSON (SQL Lab's database list fails on
-- NULL): databases created before `extra` had Superset's column default get it now. And how a
-- connection was made (a typed URI or the engine's connection form), which the edit dialog
-- reopens with.
UPDATE dbs
SET extra = '{"metadata_params": {}, "engine_params": {}, "metadata_cache_timeout": {}, "schemas_allowed_for_file_upload": []}'
WHERE extra IS NULL;

ALTER TABLE dbs ADD COLUMN configuration_method TEXT NOT NULL DEFAULT 'sqlalchemy_form';
