-- The catalog (databases, datasets, charts, dashboards), SQL Lab queries, saved queries, logs,
-- favourites and the key-value store, in Superset's table and column names. Later issues add
-- columns through new migrations; a released migration is never edited.

CREATE TABLE dbs (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    database_name TEXT NOT NULL UNIQUE,
    verbose_name TEXT,
    sqlalchemy_uri TEXT NOT NULL,
    -- The connection password, sealed with a key derived from SECRET_KEY.
    password {{BLOB}},
    encrypted_extra {{BLOB}},
    extra TEXT,
    server_cert TEXT,
    cache_timeout BIGINT,
    expose_in_sqllab BOOLEAN NOT NULL DEFAULT TRUE,
    allow_run_async BOOLEAN NOT NULL DEFAULT FALSE,
    allow_ctas BOOLEAN NOT NULL DEFAULT FALSE,
    allow_cvas BOOLEAN NOT NULL DEFAULT FALSE,
    allow_dml BOOLEAN NOT NULL DEFAULT FALSE,
    allow_file_upload BOOLEAN NOT NULL DEFAULT FALSE,
    force_ctas_schema TEXT,
    impersonate_user BOOLEAN NOT NULL DEFAULT FALSE,
    is_managed_externally BOOLEAN NOT NULL DEFAULT FALSE,
    external_url TEXT,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL
);

CREATE TABLE tables (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    database_id BIGINT NOT NULL REFERENCES dbs(id),
    catalog TEXT,
    schema TEXT,
    table_name TEXT NOT NULL,
    sql TEXT,
    description TEXT,
    main_dttm_col TEXT,
    default_endpoint TEXT,
    "offset" BIGINT NOT NULL DEFAULT 0,
    cache_timeout BIGINT,
    is_sqllab_view BOOLEAN NOT NULL DEFAULT FALSE,
    template_params TEXT,
    extra TEXT,
    filter_select_enabled BOOLEAN NOT NULL DEFAULT TRUE,
    fetch_values_predicate TEXT,
    normalize_columns BOOLEAN NOT NULL DEFAULT FALSE,
    always_filter_main_dttm BOOLEAN NOT NULL DEFAULT FALSE,
    is_managed_externally BOOLEAN NOT NULL DEFAULT FALSE,
    external_url TEXT,
    perm TEXT,
    schema_perm TEXT,
    catalog_perm TEXT,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    UNIQUE (database_id, catalog, schema, table_name)
);

CREATE TABLE table_columns (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    table_id BIGINT NOT NULL REFERENCES tables(id) ON DELETE CASCADE,
    column_name TEXT NOT NULL,
    verbose_name TEXT,
    is_dttm BOOLEAN NOT NULL DEFAULT FALSE,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    type TEXT,
    advanced_data_type TEXT,
    groupby BOOLEAN NOT NULL DEFAULT TRUE,
    filterable BOOLEAN NOT NULL DEFAULT TRUE,
    expression TEXT,
    description TEXT,
    python_date_format TEXT,
    extra TEXT,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    UNIQUE (table_id, column_name)
);

CREATE TABLE sql_metrics (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    table_id BIGINT NOT NULL REFERENCES tables(id) ON DELETE CASCADE,
    metric_name TEXT NOT NULL,
    verbose_name TEXT,
    metric_type TEXT,
    expression TEXT NOT NULL,
    description TEXT,
    d3format TEXT,
    currency TEXT,
    warning_text TEXT,
    extra TEXT,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    UNIQUE (table_id, metric_name)
);

CREATE TABLE sqlatable_user (
    id {{ID}},
    table_id BIGINT NOT NULL REFERENCES tables(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES ab_user(id) ON DELETE CASCADE,
    UNIQUE (table_id, user_id)
);

CREATE TABLE slices (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    slice_name TEXT NOT NULL,
    datasource_id BIGINT,
    datasource_type TEXT,
    datasource_name TEXT,
    viz_type TEXT,
    params TEXT,
    query_context TEXT,
    description TEXT,
    cache_timeout BIGINT,
    perm TEXT,
    schema_perm TEXT,
    catalog_perm TEXT,
    certified_by TEXT,
    certification_details TEXT,
    is_managed_externally BOOLEAN NOT NULL DEFAULT FALSE,
    external_url TEXT,
    last_saved_at TIMESTAMP,
    last_saved_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL
);
CREATE INDEX ix_slices_datasource ON slices (datasource_type, datasource_id);

CREATE TABLE slice_user (
    id {{ID}},
    slice_id BIGINT NOT NULL REFERENCES slices(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES ab_user(id) ON DELETE CASCADE,
    UNIQUE (slice_id, user_id)
);

CREATE TABLE dashboards (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    dashboard_title TEXT,
    slug TEXT UNIQUE,
    position_json TEXT,
    json_metadata TEXT,
    description TEXT,
    css TEXT,
    published BOOLEAN NOT NULL DEFAULT FALSE,
    certified_by TEXT,
    certification_details TEXT,
    is_managed_externally BOOLEAN NOT NULL DEFAULT FALSE,
    external_url TEXT,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL
);

CREATE TABLE dashboard_slices (
    id {{ID}},
    dashboard_id BIGINT NOT NULL REFERENCES dashboards(id) ON DELETE CASCADE,
    slice_id BIGINT NOT NULL REFERENCES slices(id) ON DELETE CASCADE,
    UNIQUE (dashboard_id, slice_id)
);

CREATE TABLE dashboard_user (
    id {{ID}},
    dashboard_id BIGINT NOT NULL REFERENCES dashboards(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES ab_user(id) ON DELETE CASCADE,
    UNIQUE (dashboard_id, user_id)
);

CREATE TABLE dashboard_roles (
    id {{ID}},
    dashboard_id BIGINT NOT NULL REFERENCES dashboards(id) ON DELETE CASCADE,
    role_id BIGINT NOT NULL REFERENCES ab_role(id) ON DELETE CASCADE,
    UNIQUE (dashboard_id, role_id)
);

CREATE TABLE embedded_dashboards (
    uuid TEXT PRIMARY KEY,
    dashboard_id BIGINT NOT NULL REFERENCES dashboards(id) ON DELETE CASCADE,
    allowed_domains TEXT,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL
);

CREATE TABLE query (
    id {{ID}},
    client_id TEXT NOT NULL UNIQUE,
    database_id BIGINT NOT NULL REFERENCES dbs(id) ON DELETE CASCADE,
    user_id BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    tmp_table_name TEXT,
    tmp_schema_name TEXT,
    tab_name TEXT,
    sql_editor_id TEXT,
    status TEXT NOT NULL,
    catalog TEXT,
    schema TEXT,
    sql TEXT,
    select_sql TEXT,
    executed_sql TEXT,
    "limit" BIGINT,
    limiting_factor TEXT,
    select_as_cta BOOLEAN NOT NULL DEFAULT FALSE,
    select_as_cta_used BOOLEAN NOT NULL DEFAULT FALSE,
    ctas_method TEXT,
    progress BIGINT NOT NULL DEFAULT 0,
    "rows" BIGINT,
    error_message TEXT,
    results_key TEXT,
    start_time DOUBLE PRECISION,
    start_running_time DOUBLE PRECISION,
    end_time DOUBLE PRECISION,
    end_result_backend_time DOUBLE PRECISION,
    tracking_url TEXT,
    extra_json TEXT,
    changed_on TIMESTAMP NOT NULL
);
CREATE INDEX ix_query_user_changed ON query (user_id, changed_on);

CREATE TABLE saved_query (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    user_id BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    db_id BIGINT REFERENCES dbs(id) ON DELETE CASCADE,
    catalog TEXT,
    schema TEXT,
    label TEXT,
    description TEXT,
    sql TEXT,
    template_parameters TEXT,
    extra_json TEXT,
    last_run TIMESTAMP,
    "rows" BIGINT,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL
);

CREATE TABLE logs (
    id {{ID}},
    action TEXT,
    user_id BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    json TEXT,
    dttm TIMESTAMP NOT NULL,
    dashboard_id BIGINT,
    slice_id BIGINT,
    duration_ms BIGINT,
    referrer TEXT
);
CREATE INDEX ix_logs_user_dttm ON logs (user_id, dttm);

CREATE TABLE favstar (
    id {{ID}},
    user_id BIGINT NOT NULL REFERENCES ab_user(id) ON DELETE CASCADE,
    class_name TEXT NOT NULL,
    obj_id BIGINT NOT NULL,
    dttm TIMESTAMP NOT NULL,
    UNIQUE (user_id, class_name, obj_id)
);

CREATE TABLE key_value (
    id {{ID}},
    uuid TEXT NOT NULL UNIQUE,
    resource TEXT NOT NULL,
    value {{BLOB}} NOT NULL,
    created_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_on TIMESTAMP,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    expires_on TIMESTAMP
);

CREATE TABLE row_level_security_filters (
    id {{ID}},
    name TEXT NOT NULL UNIQUE,
    description TEXT,
    filter_type TEXT NOT NULL,
    group_key TEXT,
    clause TEXT NOT NULL,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL
);

CREATE TABLE rls_filter_roles (
    id {{ID}},
    rls_filter_id BIGINT NOT NULL REFERENCES row_level_security_filters(id) ON DELETE CASCADE,
    role_id BIGINT NOT NULL REFERENCES ab_role(id) ON DELETE CASCADE,
    UNIQUE (rls_filter_id, role_id)
);

CREATE TABLE rls_filter_tables (
    id {{ID}},
    rls_filter_id BIGINT NOT NULL REFERENCES row_level_security_filters(id) ON DELETE CASCADE,
    table_id BIGINT NOT NULL REFERENCES tables(id) ON DELETE CASCADE,
    UNIQUE (rls_filter_id, table_id)
);
