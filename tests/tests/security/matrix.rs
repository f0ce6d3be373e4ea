//! The isolation matrix: every endpoint that takes an object id, asked by ordinary accounts
//! about objects owned by the administrator or by another user, on both metadata backends.
//!
//! The world: a PostgreSQL analytics database `wh` with two tables, `sales` (granted) and
//! `ledger_x9` (never granted, holding a secret value); datasets, charts, dashboards, a saved
//! query, a SQL Lab run and key-value entries, all the administrator's (plus one chart of the
//! Alpha user's). The callers:
//!
//! - `G` gina: Gamma + `datasource_access` on the `sales` dataset only;
//! - `A` alf: Alpha (all data, no ownership of anything here);
//! - `S` sam: sql_lab + Gamma + the same `sales` grant, as Superset deployments give analysts;
//! - `L` lou: sql_lab alone, no data grant.
//!
//! Each row is (method, path, body) and one expected status class per caller: `o` 2xx,
//! `d` refused (403 or 404, in Superset's envelope), `f` exactly 403, `n` exactly 404,
//! `4` any 4xx but 401. No row may answer 5xx or 401; every answer, allowed or not, is checked
//! for the ungranted table's name and secret value (ungranted callers), and for the
//! connection password (everyone). After the table, the administrator checks that nothing
//! was changed.

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, both_backends, pg};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::common::{role_id, urlencode};

/// The analytics role's password: never in a body.
const PASSWORD: &str = "Wh-pass-never-shown-93c1";
/// The table nobody but the administrator and Alpha may see, and a value in it.
const HIDDEN_TABLE: &str = "ledger_x9";
const HIDDEN_VALUE: &str = "ledger-secret-value-51";
/// A second connection nobody but the administrator and Alpha reaches.
const HIDDEN_DB: &str = "vault_db_q4";

/// A fresh analytics database: `sales` (granted) and `ledger_x9` (not); returns its URI.
async fn analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let role = format!("wh_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!(
            "CREATE TABLE public.sales (id serial PRIMARY KEY, region text NOT NULL, amount numeric); \
             INSERT INTO public.sales (region, amount) VALUES ('north', 10), ('south', 20); \
             CREATE TABLE public.{HIDDEN_TABLE} (id int, label text); \
             INSERT INTO public.{HIDDEN_TABLE} VALUES (1, '{HIDDEN_VALUE}'); \
             CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'; \
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role};"
        ))
        .await
        .unwrap();
    let parsed = url::Url::parse(&url).unwrap();
    format!(
        "postgresql://{role}:{PASSWORD}@{}:{}{}",
        parsed.host_str().unwrap(),
        parsed.port().unwrap(),
        parsed.path()
    )
}

async fn created(api: &Api, path: &str, body: Value) -> i64 {
    let (s, r) = api.post(path, body).await;
    assert!(s.is_success(), "POST {path}: {s} {r}");
    r["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("POST {path}: no id in {r}"))
}

/// A role holding `datasource_access` on one dataset.
async fn dataset_role(admin: &Api, name: &str, view: &str) -> i64 {
    let role = created(admin, "/api/v1/security/roles/", json!({"name": name})).await;
    let q = format!(
        "(filters:!((col:view_menu.name,opr:eq,value:'{view}'),(col:permission.name,opr:eq,value:datasource_access)))"
    );
    let (_, pvs) = admin
        .get(&format!(
            "/api/v1/security/permissions-resources/?q={}",
            urlencode(&q)
        ))
        .await;
    let pv = pvs["result"][0]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{view}: {pvs}"));
    let (s, r) = admin
        .post(
            &format!("/api/v1/security/roles/{role}/permissions"),
            json!({"permission_view_menu_ids": [pv]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    role
}

async fn user(admin: &Api, name: &str, roles: Vec<i64>) {
    created(
        admin,
        "/api/v1/security/users/",
        json!({"username": name, "first_name": name, "last_name": "Matrix",
               "email": format!("{name}@example.com"), "password": format!("{name}-pass-1"),
               "roles": roles, "active": true}),
    )
    .await;
}

/// A saved query context on `ds` (what `GET /chart/<id>/data` re-runs).
fn query_context(ds: i64, column: &str) -> String {
    json!({"datasource": {"id": ds, "type": "table"}, "force": false,
           "queries": [{"columns": [column], "metrics": [], "row_limit": 10}],
           "result_format": "json", "result_type": "full"})
    .to_string()
}

/// A Bearer token plus the CSRF token and session cookie of the login page: a sql_lab-only
/// user lacks `can_read` on `SecurityRestApi`, so `csrf_token/` is refused to them, as in
/// Superset, where the app's page carries the token.
async fn browser_login(server: &TestServer, user: &str, password: &str) -> Api {
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = client
        .get(server.url("/login/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = page
        .split(r#"name="csrf_token" type="hidden" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no csrf_token in the login form: {page}"))
        .to_owned();
    let tokens = liteset_tests::login(&client, server.base_url(), user, password).await;
    Api {
        client,
        base: server.base_url().to_owned(),
        token: tokens["access_token"].as_str().unwrap().to_owned(),
        csrf,
    }
}

struct Row {
    method: Method,
    path: String,
    body: Option<Value>,
    /// One class per caller, in the order G A S L.
    expect: &'static str,
}

fn row(method: Method, path: impl Into<String>, body: Option<Value>, expect: &'static str) -> Row {
    assert_eq!(expect.len(), 4, "four callers");
    Row {
        method,
        path: path.into(),
        body,
        expect,
    }
}

fn get(path: impl Into<String>, expect: &'static str) -> Row {
    row(Method::GET, path, None, expect)
}

fn sorted(ids: &Value) -> Value {
    let mut v: Vec<i64> = ids
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    v.sort_unstable();
    json!(v)
}

/// Whether a refusal is in one of Superset's envelopes.
fn is_envelope(body: &Value) -> bool {
    body.get("message").is_some() || body.get("errors").is_some() || body.get("msg").is_some()
}

/// Runs the rows for every caller and returns the failures (all of them, not just the first).
async fn run_rows(rows: &[Row], users: &[(&str, &Api, bool)]) -> Vec<String> {
    let mut failures = Vec::new();
    for r in rows {
        for (i, (name, api, granted_all)) in users.iter().enumerate() {
            let want = r.expect.as_bytes()[i] as char;
            let (s, body) = api.call(r.method.clone(), &r.path, r.body.as_ref()).await;
            let what = format!("{} {} as {name}", r.method, r.path);
            let text = body.to_string();
            let ok = match want {
                'o' => s.is_success(),
                'd' => {
                    (s == StatusCode::FORBIDDEN || s == StatusCode::NOT_FOUND) && is_envelope(&body)
                }
                'f' => s == StatusCode::FORBIDDEN && is_envelope(&body),
                'n' => s == StatusCode::NOT_FOUND && is_envelope(&body),
                '4' => s.is_client_error() && s != StatusCode::UNAUTHORIZED,
                '-' => !s.is_server_error() && s != StatusCode::UNAUTHORIZED,
                other => panic!("unknown class {other}"),
            };
            if !ok {
                failures.push(format!(
                    "{what}: expected {want}, got {s} {}",
                    text.chars().take(300).collect::<String>()
                ));
            }
            if text.contains(PASSWORD) {
                failures.push(format!("{what}: the connection password leaked"));
            }
            // Refusals may name what the caller asked for, as Superset's messages do; answers
            // may not name anything else, and no answer carries the ungranted data.
            let hidden: &[&str] = if s.is_success() {
                &[HIDDEN_TABLE, HIDDEN_VALUE, HIDDEN_DB]
            } else {
                &[HIDDEN_VALUE]
            };
            if !granted_all && hidden.iter().any(|h| text.contains(h)) {
                failures.push(format!(
                    "{what}: {s} leaks the ungranted table: {}",
                    text.chars().take(300).collect::<String>()
                ));
            }
        }
    }
    failures
}

/// The rows again for a guest (an embedded dashboard's visitor whose token names a dashboard
/// holding only the granted chart): nothing but reads may succeed, no answer is a 5xx or a 401
/// (the token is valid), and none carries the ungranted table, its value, the hidden database
/// or the password.
async fn run_guest(rows: &[Row], guest: &Api) -> Vec<String> {
    let mut failures = Vec::new();
    for r in rows {
        let (s, body) = guest.call(r.method.clone(), &r.path, r.body.as_ref()).await;
        let what = format!("{} {} as a guest", r.method, r.path);
        let text = body.to_string();
        if s.is_server_error() || s == StatusCode::UNAUTHORIZED {
            failures.push(format!(
                "{what}: {s} {}",
                text.chars().take(300).collect::<String>()
            ));
        }
        if r.method != Method::GET && s.is_success() {
            failures.push(format!("{what}: a guest's {s} write"));
        }
        if !s.is_success() && !is_envelope(&body) {
            failures.push(format!("{what}: {s} outside Superset's envelope: {text}"));
        }
        let hidden: &[&str] = if s.is_success() {
            &[HIDDEN_TABLE, HIDDEN_VALUE, HIDDEN_DB, PASSWORD]
        } else {
            &[HIDDEN_VALUE, PASSWORD]
        };
        if hidden.iter().any(|h| text.contains(h)) {
            failures.push(format!(
                "{what}: {s} leaks: {}",
                text.chars().take(300).collect::<String>()
            ));
        }
    }
    failures
}

both_backends! {
    async fn isolation_matrix(meta: Metadata) {
        matrix(meta, false).await;
    }

    /// Imports over someone else's objects, the administrator's bundles uploaded with
    /// `overwrite` by Gamma, Alpha and sql_lab users, must be refused and change nothing
    /// (Superset: "A chart already exists and user doesn't have permissions to overwrite it").
    async fn isolation_matrix_imports(meta: Metadata) {
        matrix(meta, true).await;
    }
}

/// The world, then the rows (or, with `imports`, the import attempts), then what must not
/// have changed.
async fn matrix(meta: Metadata, imports: bool) {
    {
        let uri = analytics().await;
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;

        // --- the administrator's world --------------------------------------------------
        let wh = created(
            &admin,
            "/api/v1/database/",
            json!({"database_name": "wh", "sqlalchemy_uri": uri, "expose_in_sqllab": true}),
        )
        .await;
        created(
            &admin,
            "/api/v1/database/",
            json!({"database_name": HIDDEN_DB, "sqlalchemy_uri": uri}),
        )
        .await;
        let da = created(
            &admin,
            "/api/v1/dataset/",
            json!({"database": wh, "schema": "public", "table_name": "sales"}),
        )
        .await;
        let dh = created(
            &admin,
            "/api/v1/dataset/",
            json!({"database": wh, "schema": "public", "table_name": HIDDEN_TABLE}),
        )
        .await;
        let ca = created(&admin, "/api/v1/chart/", json!({"slice_name": "Chart A", "viz_type": "table", "datasource_id": da, "datasource_type": "table", "params": json!({"viz_type": "table", "datasource": format!("{da}__table"), "all_columns": ["region"]}).to_string(), "query_context": query_context(da, "region")})).await;
        let ch = created(&admin, "/api/v1/chart/", json!({"slice_name": "Chart B", "viz_type": "table", "datasource_id": dh, "datasource_type": "table", "params": json!({"viz_type": "table", "datasource": format!("{dh}__table"), "all_columns": ["label"]}).to_string(), "query_context": query_context(dh, "label")})).await;
        // Published with a granted and an ungranted chart; draft; published, ungranted only.
        let dp = created(
            &admin,
            "/api/v1/dashboard/",
            json!({"dashboard_title": "Mixed", "slug": "mixed", "published": true}),
        )
        .await;
        let du = created(
            &admin,
            "/api/v1/dashboard/",
            json!({"dashboard_title": "Draft", "slug": "draft", "published": false}),
        )
        .await;
        let dx = created(
            &admin,
            "/api/v1/dashboard/",
            json!({"dashboard_title": "Hidden", "slug": "hidden", "published": true}),
        )
        .await;
        // Published without charts: Alpha (all data) sees it, a Gamma does not.
        let de = created(
            &admin,
            "/api/v1/dashboard/",
            json!({"dashboard_title": "Empty", "slug": "empty", "published": true}),
        )
        .await;
        // The guest's dashboard: a draft holding the granted chart only, embedded.
        let dg = created(
            &admin,
            "/api/v1/dashboard/",
            json!({"dashboard_title": "Guest", "slug": "guest", "published": false}),
        )
        .await;
        for (chart, dashboards) in [(ca, json!([dp, du, dg])), (ch, json!([dp, dx]))] {
            let (s, r) = admin
                .put(
                    &format!("/api/v1/chart/{chart}"),
                    json!({"dashboards": dashboards}),
                )
                .await;
            assert_eq!(s, StatusCode::OK, "{r}");
        }
        let sq = created(&admin, "/api/v1/saved_query/", json!({"db_id": wh, "label": "adm", "schema": "public", "sql": format!("SELECT * FROM {HIDDEN_TABLE}")})).await;
        let (s, r) = admin.post("/api/v1/sqllab/execute/", json!({"database_id": wh, "client_id": "admq1", "sql": format!("SELECT label FROM {HIDDEN_TABLE}")})).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let qid = r["query_id"].as_i64().unwrap();
        let results_key = r["query"]["resultsKey"].as_str().unwrap().to_owned();
        let (s, r) = admin.post("/api/v1/chart/data", json!({"datasource": {"id": dh, "type": "table"}, "queries": [{"columns": ["label"], "metrics": [], "row_limit": 5}], "result_format": "json", "result_type": "full"})).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let cache_key = r["result"][0]["cache_key"].as_str().unwrap().to_owned();
        let fd = |ds: i64, chart: i64| json!({"datasource_id": ds, "datasource_type": "table", "chart_id": chart, "form_data": json!({"viz_type": "table", "datasource": format!("{ds}__table"), "slice_id": chart}).to_string()});
        let (s, r) = admin.post("/api/v1/explore/form_data", fd(da, ca)).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let fd_a = r["key"].as_str().unwrap().to_owned();
        let (_, r) = admin.post("/api/v1/explore/form_data", fd(dh, ch)).await;
        let fd_h = r["key"].as_str().unwrap().to_owned();
        let (s, r) = admin.post("/api/v1/explore/permalink", json!({"formData": {"datasource": format!("{dh}__table"), "slice_id": ch, "viz_type": "table"}})).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let pl_h = r["key"].as_str().unwrap().to_owned();
        let (s, r) = admin
            .post(
                &format!("/api/v1/dashboard/{dp}/filter_state"),
                json!({"value": "{\"f\": 1}"}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let fs = r["key"].as_str().unwrap().to_owned();
        let (s, r) = admin
            .post(
                &format!("/api/v1/dashboard/{dp}/permalink"),
                json!({"activeTabs": []}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let dpl = r["key"].as_str().unwrap().to_owned();

        // --- the callers ------------------------------------------------------------------
        let sales_reader =
            dataset_role(&admin, "sales_reader", &format!("[wh].[sales](id:{da})")).await;
        let (gamma, alpha, sql_lab) = (
            role_id(&admin, "Gamma").await,
            role_id(&admin, "Alpha").await,
            role_id(&admin, "sql_lab").await,
        );
        user(&admin, "gina", vec![gamma, sales_reader]).await;
        user(&admin, "alf", vec![alpha]).await;
        user(&admin, "sam", vec![sql_lab, gamma, sales_reader]).await;
        user(&admin, "lou", vec![sql_lab]).await;
        let g = Api::login(&server, "gina", "gina-pass-1").await;
        let a = Api::login(&server, "alf", "alf-pass-1").await;
        let s_ = Api::login(&server, "sam", "sam-pass-1").await;
        let l = browser_login(&server, "lou", "lou-pass-1").await;
        // Alpha's own chart: readable by the granted Gamma, changeable by neither.
        let cal = created(&a, "/api/v1/chart/", json!({"slice_name": "Alf's", "viz_type": "table", "datasource_id": da, "datasource_type": "table"})).await;

        use Method as M;
        let mut failures = Vec::new();
        let chart_data = |ds: i64, col: &str| json!({"datasource": {"id": ds, "type": "table"}, "queries": [{"columns": [col], "metrics": [], "row_limit": 5}], "result_format": "json", "result_type": "full"});
        let rows = vec![
            // Charts.
            get(format!("/api/v1/chart/{ca}"), "oood"),
            get(format!("/api/v1/chart/{ch}"), "dodd"),
            get(format!("/api/v1/chart/{cal}"), "oood"),
            get(format!("/api/v1/chart/{ca}/data/"), "oood"),
            get(format!("/api/v1/chart/{ch}/data/"), "dodd"),
            get(format!("/api/v1/chart/{ch}/data/?format=csv"), "dodd"),
            get(format!("/api/v1/chart/{ch}/render.svg"), "dodd"),
            get(format!("/api/v1/chart/{ch}/render.png"), "dodd"),
            get(format!("/api/v1/chart/{ch}/thumbnail/abc/"), "d-dd"),
            row(
                M::POST,
                "/api/v1/chart/data",
                Some(chart_data(dh, "label")),
                "dodd",
            ),
            row(
                M::POST,
                "/api/v1/chart/data",
                Some(chart_data(da, "region")),
                "oood",
            ),
            get(format!("/api/v1/chart/data/{cache_key}"), "dodd"),
            row(
                M::POST,
                format!("/api/v1/chart/{ch}/favorites/"),
                None,
                "dodd",
            ),
            row(
                M::PUT,
                format!("/api/v1/chart/{ca}"),
                Some(json!({"slice_name": "taken"})),
                "dddd",
            ),
            row(
                M::PUT,
                format!("/api/v1/chart/{ca}"),
                Some(json!({"owners": []})),
                "dddd",
            ),
            row(
                M::PUT,
                format!("/api/v1/chart/{cal}"),
                Some(json!({"slice_name": "taken"})),
                "d-dd",
            ),
            row(
                M::PUT,
                format!("/api/v1/chart/{ch}"),
                Some(json!({"slice_name": "taken"})),
                "dddd",
            ),
            row(M::DELETE, format!("/api/v1/chart/{ca}"), None, "dddd"),
            row(M::DELETE, format!("/api/v1/chart/?q=!({ca})"), None, "dddd"),
            row(
                M::DELETE,
                format!("/api/v1/chart/?q=!({ch},{cal})"),
                None,
                "dddd",
            ),
            get(format!("/api/v1/chart/export/?q=!({ch})"), "dodd"),
            // A chart cannot be made on, or moved to, data the caller cannot read, nor added to
            // a dashboard the caller cannot change.
            row(
                M::POST,
                "/api/v1/chart/",
                Some(
                    json!({"slice_name": "mine", "datasource_id": dh, "datasource_type": "table"}),
                ),
                "fofd",
            ),
            row(
                M::POST,
                "/api/v1/chart/",
                Some(
                    json!({"slice_name": "mine", "datasource_id": da, "datasource_type": "table", "dashboards": [dp]}),
                ),
                "fffd",
            ),
            // Datasets.
            get(format!("/api/v1/dataset/{da}"), "oood"),
            get(format!("/api/v1/dataset/{dh}"), "dodd"),
            get(format!("/api/v1/dataset/{dh}/drill_info/"), "dodd"),
            get(
                format!("/api/v1/dataset/{dh}/drill_info/?q=(dashboard_id:{dp})"),
                "dodd",
            ),
            get(format!("/api/v1/dataset/{dh}/related_objects"), "dodd"),
            row(
                M::PUT,
                format!("/api/v1/dataset/{da}"),
                Some(json!({"description": "taken"})),
                "dddd",
            ),
            row(
                M::PUT,
                format!("/api/v1/dataset/{dh}/refresh"),
                None,
                "dddd",
            ),
            row(M::DELETE, format!("/api/v1/dataset/{da}"), None, "dddd"),
            row(
                M::DELETE,
                format!("/api/v1/dataset/?q=!({dh})"),
                None,
                "dddd",
            ),
            get(format!("/api/v1/dataset/export/?q=!({dh})"), "dodd"),
            // Databases: the granted dataset's database is visible, its other tables are not.
            get(format!("/api/v1/database/{wh}"), "oood"),
            get(format!("/api/v1/database/{wh}/connection"), "dddd"),
            get(format!("/api/v1/database/{wh}/schemas/"), "oood"),
            get(
                format!("/api/v1/database/{wh}/tables/?q=(schema_name:public)"),
                "oood",
            ),
            get(
                format!("/api/v1/database/{wh}/table_metadata/?name={HIDDEN_TABLE}&schema=public"),
                "dodd",
            ),
            get(
                format!("/api/v1/database/{wh}/table_metadata/?name=sales&schema=public"),
                "oood",
            ),
            get(
                format!("/api/v1/database/{wh}/select_star/{HIDDEN_TABLE}/public/"),
                "dodd",
            ),
            get(
                format!("/api/v1/database/{wh}/select_star/{HIDDEN_TABLE}"),
                "dodd",
            ),
            get(format!("/api/v1/database/{wh}/related_objects/"), "oood"),
            row(
                M::PUT,
                format!("/api/v1/database/{wh}"),
                Some(json!({"database_name": "taken"})),
                "dddd",
            ),
            row(M::DELETE, format!("/api/v1/database/{wh}"), None, "dddd"),
            get(format!("/api/v1/database/export/?q=!({wh})"), "dddd"),
            // Dashboards.
            get(format!("/api/v1/dashboard/{dp}"), "oood"),
            get("/api/v1/dashboard/mixed", "oood"),
            get(format!("/api/v1/dashboard/{du}"), "dddd"),
            get("/api/v1/dashboard/draft", "dddd"),
            get(format!("/api/v1/dashboard/{dx}"), "dodd"),
            get(format!("/api/v1/dashboard/{de}"), "dodd"),
            get("/api/v1/dashboard/hidden/charts", "dodd"),
            get(format!("/api/v1/dashboard/{dp}/charts"), "oood"),
            get(format!("/api/v1/dashboard/{dp}/datasets"), "oood"),
            get(format!("/api/v1/dashboard/{dx}/datasets"), "dodd"),
            get(format!("/api/v1/dashboard/{dp}/tabs"), "oood"),
            get(format!("/api/v1/dashboard/{du}/tabs"), "dddd"),
            get(format!("/dashboard/{dx}/"), "4o44"),
            row(
                M::PUT,
                format!("/api/v1/dashboard/{dp}"),
                Some(json!({"dashboard_title": "taken"})),
                "dddd",
            ),
            row(
                M::PUT,
                format!("/api/v1/dashboard/{dp}/colors"),
                Some(json!({"color_scheme": "x"})),
                "dddd",
            ),
            row(M::DELETE, format!("/api/v1/dashboard/{dp}"), None, "dddd"),
            row(
                M::DELETE,
                format!("/api/v1/dashboard/?q=!({du})"),
                None,
                "dddd",
            ),
            get(format!("/api/v1/dashboard/export/?q=!({du})"), "dddd"),
            get(format!("/api/v1/dashboard/export/?q=!({dx})"), "dodd"),
            // Saved queries and SQL Lab history are their creator's.
            get(format!("/api/v1/saved_query/{sq}"), "dddd"),
            row(
                M::PUT,
                format!("/api/v1/saved_query/{sq}"),
                Some(json!({"label": "taken"})),
                "dddd",
            ),
            row(M::DELETE, format!("/api/v1/saved_query/{sq}"), None, "dddd"),
            row(
                M::DELETE,
                format!("/api/v1/saved_query/?q=!({sq})"),
                None,
                "dddd",
            ),
            get(format!("/api/v1/saved_query/export/?q=!({sq})"), "dddd"),
            get(format!("/api/v1/query/{qid}"), "dddd"),
            get(
                format!("/api/v1/sqllab/results/?q=(key:'{results_key}')"),
                "dddd",
            ),
            get("/api/v1/sqllab/export/admq1/", "dddd"),
            row(
                M::POST,
                "/api/v1/query/stop",
                Some(json!({"client_id": "admq1"})),
                "dddd",
            ),
            row(
                M::POST,
                "/api/v1/sqllab/execute/",
                Some(
                    json!({"database_id": wh, "sql": format!("SELECT label FROM {HIDDEN_TABLE}")}),
                ),
                "dddd",
            ),
            row(
                M::POST,
                "/api/v1/sqllab/execute/",
                Some(
                    json!({"database_id": wh, "sql": format!("SELECT label FROM public.{HIDDEN_TABLE}")}),
                ),
                "dddd",
            ),
            row(
                M::POST,
                "/api/v1/sqllab/execute/",
                Some(json!({"database_id": wh, "sql": "SELECT region FROM sales"})),
                "ddod",
            ),
            // Key-value entries: readable by key where the resource is, never replaceable.
            get(format!("/api/v1/explore/form_data/{fd_a}"), "oood"),
            row(
                M::PUT,
                format!("/api/v1/explore/form_data/{fd_a}"),
                Some(fd(da, ca)),
                "fffd",
            ),
            row(
                M::DELETE,
                format!("/api/v1/explore/form_data/{fd_a}"),
                None,
                "fffd",
            ),
            get(format!("/api/v1/explore/form_data/{fd_h}"), "dodd"),
            get(format!("/api/v1/explore/?form_data_key={fd_h}"), "dodd"),
            get(format!("/api/v1/explore/permalink/{pl_h}"), "dodd"),
            get(format!("/api/v1/explore/?permalink_key={pl_h}"), "dodd"),
            get(format!("/api/v1/explore/?slice_id={ch}"), "dodd"),
            get(
                format!("/api/v1/explore/?datasource_id={dh}&datasource_type=table"),
                "dodd",
            ),
            get(format!("/api/v1/dashboard/{dp}/filter_state/{fs}"), "oood"),
            row(
                M::PUT,
                format!("/api/v1/dashboard/{dp}/filter_state/{fs}"),
                Some(json!({"value": "{}"})),
                "fffd",
            ),
            row(
                M::DELETE,
                format!("/api/v1/dashboard/{dp}/filter_state/{fs}"),
                None,
                "fffd",
            ),
            get(format!("/api/v1/dashboard/permalink/{dpl}"), "oood"),
            // Lists: ungranted objects never listed, related/distinct leak no names.
            get("/api/v1/chart/", "ooo-"),
            get("/api/v1/dataset/", "ooo-"),
            get("/api/v1/dashboard/", "ooo-"),
            get("/api/v1/database/", "ooo-"),
            get("/api/v1/chart/distinct/slice_name", "ooo-"),
            get("/api/v1/dataset/distinct/table_name", "ooo-"),
            get("/api/v1/dataset/distinct/schema", "ooo-"),
            get("/api/v1/dataset/related/database", "oo--"),
            get(
                "/api/v1/dataset/_info?q=(keys:!(add_columns,edit_columns))",
                "oo--",
            ),
            get("/api/v1/saved_query/related/database", "--o-"),
            get("/api/v1/query/related/database", "--o-"),
            get("/api/v1/database/distinct/database_name", "--o-"),
            get("/api/v1/chart/related/dashboards", "-o--"),
            get("/api/v1/dashboard/related/owners", "oo--"),
            get("/api/v1/saved_query/", "--o-"),
            get("/api/v1/query/", "--o-"),
            get(
                format!("/api/v1/chart/?q=(filters:!((col:id,opr:eq,value:{ch})))"),
                "ooo-",
            ),
            get(
                format!(
                    "/api/v1/dataset/?q=(filters:!((col:table_name,opr:ct,value:{HIDDEN_TABLE})))"
                ),
                "ooo-",
            ),
            get("/api/v1/sqllab/", "---o"),
        ];
        let users = [
            ("gina", &g, false),
            ("alf", &a, true),
            ("sam", &s_, false),
            ("lou", &l, false),
        ];
        if !imports {
            failures.extend(run_rows(&rows, &users).await);
            // An embedded dashboard's visitor, with a guest token for the guest dashboard.
            let (st, e) = admin
                .post(
                    &format!("/api/v1/dashboard/{dg}/embedded"),
                    json!({"allowed_domains": []}),
                )
                .await;
            assert_eq!(st, StatusCode::OK, "{e}");
            let (st, t) = admin
                .post(
                    "/api/v1/security/guest_token/",
                    json!({"resources": [{"type": "dashboard", "id": e["result"]["uuid"]}],
                           "rls": []}),
                )
                .await;
            assert_eq!(st, StatusCode::OK, "{t}");
            let guest = Api::guest(&server, t["token"].as_str().unwrap());
            failures.extend(run_guest(&rows, &guest).await);

            // Lists: counts, not only absent names.
            for (name, api) in [("gina", &g), ("sam", &s_)] {
                for (path, want) in [
                    ("/api/v1/chart/", json!([ca, cal])),
                    ("/api/v1/dataset/", json!([da])),
                    ("/api/v1/dashboard/", json!([dp])),
                    ("/api/v1/database/", json!([wh])),
                ] {
                    let (_, r) = api.get(path).await;
                    if sorted(&r["ids"]) != want {
                        failures.push(format!("{path} as {name}: ids {} (want {want})", r["ids"]));
                    }
                }
            }
            let (_, r) = a.get("/api/v1/dashboard/").await;
            if sorted(&r["ids"]) != json!([dp, dx, de]) {
                failures.push(format!(
                    "/api/v1/dashboard/ as alf: ids {} (want the published {dp}, {dx}, {de})",
                    r["ids"]
                ));
            }

            // Ownership: a Gamma's PUT cannot drop themselves, and cannot hand the chart to a
            // dashboard of someone else's.
            let mine = created(
                &g,
                "/api/v1/chart/",
                json!({"slice_name": "gina's", "datasource_id": da, "datasource_type": "table"}),
            )
            .await;
            let (s, r) = g
                .put(&format!("/api/v1/chart/{mine}"), json!({"owners": []}))
                .await;
            let (_, shown) = g.get(&format!("/api/v1/chart/{mine}")).await;
            if !s.is_success()
                || shown["result"]["owners"]
                    .as_array()
                    .is_none_or(|o| o.is_empty())
            {
                failures.push(format!(
                    "gina's PUT owners=[] on her chart: {s} {r}; owners now {}",
                    shown["result"]["owners"]
                ));
            }
            let (s, r) = g
                .put(
                    &format!("/api/v1/chart/{mine}"),
                    json!({"dashboards": [dp]}),
                )
                .await;
            if s != StatusCode::FORBIDDEN {
                failures.push(format!(
                    "gina adds her chart to the admin's dashboard: {s} {r}"
                ));
            }
            let (s, r) = g
                .put(
                    &format!("/api/v1/chart/{mine}"),
                    json!({"datasource_id": dh, "datasource_type": "table"}),
                )
                .await;
            if s != StatusCode::FORBIDDEN {
                failures.push(format!(
                    "gina moves her chart to the ungranted dataset: {s} {r}"
                ));
            }
            let (s, r) = g.delete(&format!("/api/v1/chart/?q=!({mine},{ca})")).await;
            if s != StatusCode::FORBIDDEN {
                failures.push(format!("bulk delete of her chart and the admin's: {s} {r}"));
            }
        }

        // Imports over someone else's objects (see `isolation_matrix_imports`).
        if imports {
            for (res, id) in [("chart", ca), ("dashboard", dp), ("dataset", da)] {
                let resp = admin
                    .request(M::GET, &format!("/api/v1/{res}/export/?q=!({id})"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), StatusCode::OK, "{res} export");
                let bundle = resp.bytes().await.unwrap().to_vec();
                for (name, api) in [("gina", &g), ("alf", &a), ("sam", &s_)] {
                    let form = reqwest::multipart::Form::new()
                        .part(
                            "formData",
                            reqwest::multipart::Part::bytes(bundle.clone()).file_name("bundle.zip"),
                        )
                        .text("overwrite", "true");
                    let resp = api
                        .request(M::POST, &format!("/api/v1/{res}/import/"))
                        .multipart(form)
                        .send()
                        .await
                        .unwrap();
                    let s = resp.status();
                    let body = resp.text().await.unwrap_or_default();
                    if !(s.is_client_error() && s != StatusCode::UNAUTHORIZED) {
                        failures.push(format!(
                            "{res} import over the admin's {res} as {name}: {s} {body}"
                        ));
                    }
                }
            }
        }

        // Nothing changed behind the refusals.
        let mut unchanged = |what: String, ok: bool| {
            if !ok {
                failures.push(format!("changed behind a refusal: {what}"));
            }
        };
        let (_, r) = admin.get(&format!("/api/v1/chart/{ca}")).await;
        unchanged(
            format!("chart A {r}"),
            r["result"]["slice_name"] == "Chart A"
                && r["result"]["owners"].as_array().map(Vec::len) == Some(1),
        );
        for (path, field, want) in [
            (format!("/api/v1/chart/{ch}"), "slice_name", "Chart B"),
            (format!("/api/v1/dataset/{da}"), "table_name", "sales"),
            (format!("/api/v1/dataset/{dh}"), "table_name", HIDDEN_TABLE),
            (format!("/api/v1/database/{wh}"), "database_name", "wh"),
            (
                format!("/api/v1/dashboard/{dp}"),
                "dashboard_title",
                "Mixed",
            ),
            (
                format!("/api/v1/dashboard/{du}"),
                "dashboard_title",
                "Draft",
            ),
            (format!("/api/v1/saved_query/{sq}"), "label", "adm"),
        ] {
            let (s, r) = admin.get(&path).await;
            unchanged(
                format!("{path}: {s} {r}"),
                s == StatusCode::OK && r["result"][field] == want,
            );
        }
        let (_, r) = admin.get(&format!("/api/v1/dataset/{da}")).await;
        unchanged(
            format!("dataset description {r}"),
            r["result"]["description"].is_null() || r["result"]["description"] == "",
        );
        let (_, r) = admin.get(&format!("/api/v1/query/{qid}")).await;
        unchanged(
            format!("admin's query {r}"),
            r["result"]["status"] == "success",
        );
        let (s, r) = admin
            .get(&format!("/api/v1/explore/form_data/{fd_a}"))
            .await;
        unchanged(format!("form data {s} {r}"), s == StatusCode::OK);
        let (s, r) = admin
            .get(&format!("/api/v1/dashboard/{dp}/filter_state/{fs}"))
            .await;
        unchanged(
            format!("filter state {s} {r}"),
            s == StatusCode::OK && r["value"] == "{\"f\": 1}",
        );
        let (_, r) = admin.get(&format!("/api/v1/dashboard/{dp}")).await;
        unchanged(
            format!("dashboard colors {r}"),
            !r["result"]["json_metadata"]
                .as_str()
                .unwrap_or("")
                .contains("\"x\""),
        );

        assert!(
            failures.is_empty(),
            "{} isolation failures:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}
