-- Users, roles and permissions, modelled on Flask-AppBuilder's ab_* tables so that operators
-- who know Superset's schema find the same shape here.
-- Written once for both engines: {{ID}} and {{BLOB}} are replaced per engine by migrations.rs.

CREATE TABLE ab_user (
    id {{ID}},
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    username TEXT NOT NULL UNIQUE,
    password TEXT,
    active BOOLEAN NOT NULL DEFAULT TRUE,
    email TEXT NOT NULL UNIQUE,
    last_login TIMESTAMP,
    login_count BIGINT NOT NULL DEFAULT 0,
    fail_login_count BIGINT NOT NULL DEFAULT 0,
    created_on TIMESTAMP NOT NULL,
    changed_on TIMESTAMP NOT NULL,
    created_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL,
    changed_by_fk BIGINT REFERENCES ab_user(id) ON DELETE SET NULL
);

CREATE TABLE ab_role (
    id {{ID}},
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE ab_user_role (
    id {{ID}},
    user_id BIGINT NOT NULL REFERENCES ab_user(id) ON DELETE CASCADE,
    role_id BIGINT NOT NULL REFERENCES ab_role(id) ON DELETE CASCADE,
    UNIQUE (user_id, role_id)
);

CREATE TABLE ab_permission (
    id {{ID}},
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE ab_view_menu (
    id {{ID}},
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE ab_permission_view (
    id {{ID}},
    permission_id BIGINT NOT NULL REFERENCES ab_permission(id) ON DELETE CASCADE,
    view_menu_id BIGINT NOT NULL REFERENCES ab_view_menu(id) ON DELETE CASCADE,
    UNIQUE (permission_id, view_menu_id)
);

CREATE TABLE ab_permission_view_role (
    id {{ID}},
    permission_view_id BIGINT NOT NULL REFERENCES ab_permission_view(id) ON DELETE CASCADE,
    role_id BIGINT NOT NULL REFERENCES ab_role(id) ON DELETE CASCADE,
    UNIQUE (permission_view_id, role_id)
);

CREATE INDEX ix_ab_permission_view_role_role ON ab_permission_view_role (role_id);
CREATE INDEX ix_ab_user_role_user ON ab_user_role (user_id);
CREATE INDEX ix_ab_user_email ON ab_user (email);
