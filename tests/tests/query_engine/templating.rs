//! Jinja templating (`query.template_processing`, Superset's `ENABLE_TEMPLATE_PROCESSING`):
//! Superset's macros as its documentation and `jinja_context.py` use them, rendered and run on
//! PostgreSQL and SQLite with their results; the same templates through a bundle's export and
//! import; SQL Lab's parameters; and hostile templates (loops, output, recursion, attribute
//! walks, includes, injection through `url_param` and `filter_values`) contained with a 4xx
//! while the server keeps serving.

use liteset_tests::{ADMIN_PASSWORD, Api, TestServer, pg, status_json};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The rows both engines hold: (id, region, amount, ds, owner).
const ORDERS: &[(i64, &str, i64, &str, &str)] = &[
    (1, "north", 10, "2024-01-05", "alice"),
    (2, "south", 20, "2024-01-06", "bob"),
    (3, "north", 30, "2024-02-01", "alice"),
    (4, "east", 40, "2024-02-10", "carol"),
];

fn error_type(body: &Value) -> &str {
    body["errors"][0]["error_type"].as_str().unwrap_or("")
}

/// An analytics PostgreSQL database with `orders` and `secrets`.
async fn pg_analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let rows: Vec<String> = ORDERS
        .iter()
        .map(|(id, r, a, d, o)| format!("({id}, '{r}', {a}, '{d}', '{o}')"))
        .collect();
    client
        .batch_execute(&format!(
            "CREATE TABLE orders (id int, region text, amount int, ds timestamp, owner text); \
             INSERT INTO orders VALUES {}; \
             CREATE TABLE secrets (id int, code text); INSERT INTO secrets VALUES (1, 's3cr3t');",
            rows.join(", ")
        ))
        .await
        .expect("fixture");
    url
}

/// The same tables in an SQLite file (dates as `YYYY-MM-DD HH:MM:SS` text).
fn sqlite_analytics(dir: &std::path::Path) -> String {
    let path = dir.join("templated.db");
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.execute_batch(
        "CREATE TABLE orders (id INTEGER, region TEXT, amount INTEGER, ds TEXT, owner TEXT); \
         CREATE TABLE secrets (id INTEGER, code TEXT); INSERT INTO secrets VALUES (1, 's3cr3t');",
    )
    .expect("tables");
    for (id, r, a, d, o) in ORDERS {
        conn.execute(
            "INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![id, r, a, format!("{d} 00:00:00"), o],
        )
        .expect("row");
    }
    format!("sqlite:///{}", path.display())
}

async fn templating_server() -> TestServer {
    TestServer::builder()
        .env("LITESET_QUERY__TEMPLATE_PROCESSING", "true")
        .env("LITESET_SECURITY__ALLOW_SQLITE_DATABASES", "true")
        .start()
        .await
        .expect("server")
}

async fn create_database(api: &Api, name: &str, uri: &str) -> i64 {
    let (s, db) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": name, "sqlalchemy_uri": uri}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    db["id"].as_i64().expect("id")
}

/// A dataset (virtual when `sql` is given); PostgreSQL's live in `public`.
async fn dataset(api: &Api, db: i64, pg: bool, name: &str, sql: Option<&str>) -> i64 {
    let mut body = json!({"database": db, "table_name": name});
    if pg {
        body["schema"] = json!("public");
    }
    if let Some(sql) = sql {
        body["sql"] = json!(sql);
    }
    let (s, ds) = api.post("/api/v1/dataset/", body).await;
    assert_eq!(s, StatusCode::CREATED, "{name}: {ds}");
    ds["id"].as_i64().expect("id")
}

/// A chart-data request on `ds`: `query` merged into one query object.
fn request(ds: i64, query: Value) -> Value {
    let mut q = json!({"row_limit": 100});
    for (k, v) in query.as_object().expect("object") {
        q[k] = v.clone();
    }
    json!({"datasource": {"id": ds, "type": "table"}, "queries": [q], "result_type": "full"})
}

/// `SUM(amount)` of `ds` under `query`.
fn total(ds: i64, query: Value) -> Value {
    let mut q = query;
    q["metrics"] =
        json!([{"expressionType": "SQL", "sqlExpression": "SUM(amount)", "label": "total"}]);
    request(ds, q)
}

async fn data(api: &Api, body: Value) -> (StatusCode, Value) {
    api.post("/api/v1/chart/data", body).await
}

/// The single `total` of a successful answer.
async fn sum(api: &Api, body: Value) -> Value {
    let (s, r) = data(api, body).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    r["result"][0]["data"][0]["total"].clone()
}

/// The SQL the `query` result type shows.
async fn rendered(api: &Api, mut body: Value) -> String {
    body["result_type"] = json!("query");
    let (s, r) = data(api, body).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    r["result"][0]["query"].as_str().expect("query").to_owned()
}

/// Grants `role` `datasource_access` on the dataset `[db].[table](id:ds)`.
async fn grant(admin: &Api, role: i64, db_name: &str, table: &str, ds: i64) {
    let q = format!(
        "(filters:!((col:view_menu.name,opr:eq,value:'[{db_name}].[{table}](id:{ds})'),(col:permission.name,opr:eq,value:datasource_access)))"
    );
    let q: String = url::form_urlencoded::byte_serialize(q.as_bytes()).collect();
    let (_, pvs) = admin
        .get(&format!("/api/v1/security/permissions-resources/?q={q}"))
        .await;
    let pv = pvs["result"][0]["id"].as_i64().expect("permission");
    let (_, role_now) = admin
        .get(&format!("/api/v1/security/roles/{role}/permissions/"))
        .await;
    let mut ids: Vec<i64> = role_now["result"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p["id"].as_i64()).collect())
        .unwrap_or_default();
    ids.push(pv);
    let (s, r) = admin
        .post(
            &format!("/api/v1/security/roles/{role}/permissions"),
            json!({"permission_view_menu_ids": ids}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
}

/// A Gamma user with the role `readers`; returns (id, logged-in client).
async fn reader(server: &TestServer, admin: &Api, name: &str, readers: i64) -> (i64, Api) {
    let (_, roles) = admin
        .get("/api/v1/security/roles/?q=(filters:!((col:name,opr:eq,value:Gamma)))")
        .await;
    let gamma = roles["result"][0]["id"].as_i64().expect("Gamma");
    let (s, u) = admin
        .post(
            "/api/v1/security/users/",
            json!({"username": name, "first_name": name, "last_name": "R",
                   "email": format!("{name}@example.com"), "password": "reader-pass-123",
                   "roles": [gamma, readers], "active": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{u}");
    let id = u["id"].as_i64().expect("user id");
    (id, Api::login(server, name, "reader-pass-123").await)
}

/// The datasets of one engine.
struct Sets {
    engine: &'static str,
    is_pg: bool,
    base: i64,
    by_region: i64,
    joined: i64,
    mine: i64,
    who: i64,
    timed: i64,
    nested: i64,
    per_region: i64,
    branchy: i64,
}

/// Creates one engine's database and datasets, readable by `readers` where a reader's view is
/// tested (granted before any reader logs in: grants reach a cached user within seconds).
async fn datasets(admin: &Api, engine: &'static str, uri: &str, is_pg: bool, readers: i64) -> Sets {
    let db_name = format!("tpl_{engine}");
    let db = create_database(admin, &db_name, uri).await;
    let base = dataset(admin, db, is_pg, "orders", None).await;
    let (s, r) = admin
        .put(
            &format!("/api/v1/dataset/{base}"),
            json!({"metrics": [{"metric_name": "total_amount", "expression": "SUM(amount)"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let sets = Sets {
        engine,
        is_pg,
        base,
        // filter_values with remove_filter, where_in and url_param (documentation examples).
        by_region: dataset(
            admin,
            db,
            is_pg,
            "by_region",
            Some(
                "SELECT region, amount, owner FROM orders WHERE 1 = 1\n\
                 {% if filter_values('region') %} AND region IN \
                 {{ filter_values('region', remove_filter=True)|where_in }}{% endif %}\n\
                 {% if url_param('min') %} AND amount >= {{ url_param('min') }}{% endif %}",
            ),
        )
        .await,
        // The documentation's join of filter_values.
        joined: dataset(
            admin,
            db,
            is_pg,
            "joined",
            Some("SELECT * FROM orders WHERE region IN ({{ \"'\" + \"','\".join(filter_values('region')) + \"'\" }})"),
        )
        .await,
        mine: dataset(
            admin,
            db,
            is_pg,
            "mine",
            Some("SELECT id, amount FROM orders WHERE owner = '{{ current_username() }}'"),
        )
        .await,
        who: dataset(
            admin,
            db,
            is_pg,
            "who",
            Some(
                "SELECT {{ current_user_id() }} AS uid, '{{ current_user_email() }}' AS email, \
                 '{{ (current_user_roles() or [])|join(',') }}' AS roles",
            ),
        )
        .await,
        timed: dataset(
            admin,
            db,
            is_pg,
            "timed",
            Some(
                "{% set tf = get_time_filter('ds', remove_filter=True, target_type='TIMESTAMP') %}\
                 SELECT id, amount, ds FROM orders\
                 {% if tf.from_expr %} WHERE ds >= {{ tf.from_expr }} AND ds < {{ tf.to_expr }}{% endif %}",
            ),
        )
        .await,
        nested: dataset(
            admin,
            db,
            is_pg,
            "nested",
            Some(&format!(
                "SELECT region, SUM(amount) AS amount FROM {{{{ dataset({base}) }}}} GROUP BY region"
            )),
        )
        .await,
        per_region: dataset(
            admin,
            db,
            is_pg,
            "per_region",
            Some(&format!(
                "SELECT region, {{{{ metric('total_amount', {base}) }}}} AS t FROM orders GROUP BY region"
            )),
        )
        .await,
        branchy: dataset(
            admin,
            db,
            is_pg,
            "branchy",
            Some(
                "{% if url_param('t') == 'secret' %}SELECT id, code AS region FROM secrets\
                 {% else %}SELECT id, region FROM orders{% endif %}",
            ),
        )
        .await,
    };
    for (name, id) in [
        ("mine", sets.mine),
        ("who", sets.who),
        ("nested", sets.nested),
        ("branchy", sets.branchy),
    ] {
        grant(admin, readers, &db_name, name, id).await;
    }
    sets
}

/// Superset's macros on both engines, with their documentation's spellings: each renders,
/// runs and answers the rows it should, for each user.
#[tokio::test]
async fn superset_macros_render_and_run_on_postgres_and_sqlite() {
    let dir = tempfile::tempdir().expect("tmp");
    let pg_url = pg_analytics().await;
    let lite_url = sqlite_analytics(dir.path());
    let server = templating_server().await;
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, readers) = admin
        .post("/api/v1/security/roles/", json!({"name": "readers"}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{readers}");
    let readers = readers["id"].as_i64().expect("role");
    let engines = [
        datasets(&admin, "pg", &pg_url, true, readers).await,
        datasets(&admin, "lite", &lite_url, false, readers).await,
    ];
    let (alice_id, alice) = reader(&server, &admin, "alice", readers).await;
    let (_, bob) = reader(&server, &admin, "bob", readers).await;

    for sets in &engines {
        let Sets {
            engine,
            is_pg,
            base,
            by_region,
            joined,
            mine,
            who,
            timed,
            nested,
            per_region,
            branchy,
        } = *sets;

        let north_east = json!({
            "filters": [{"col": "region", "op": "IN", "val": ["north", "east"]}],
            "url_params": {"min": "20"},
        });
        assert_eq!(
            sum(&admin, total(by_region, north_east.clone())).await,
            json!(70),
            "{engine}"
        );
        let (_, full) = data(&admin, total(by_region, north_east.clone())).await;
        assert_eq!(
            full["result"][0]["applied_template_filters"],
            json!(["region"])
        );
        let sql = rendered(&admin, total(by_region, north_east.clone())).await;
        assert!(
            sql.contains("region IN ('north', 'east')"),
            "{engine}: {sql}"
        );
        assert!(sql.contains("amount >= 20"), "{sql}");
        assert!(
            !sql.contains("\"region\" IN"),
            "the filter was removed: {sql}"
        );
        // Without the filter and parameter the template's branches are left out.
        assert_eq!(sum(&admin, total(by_region, json!({}))).await, json!(100));
        // Values are quoted by where_in: a quote in a filter value is data.
        let quoted =
            json!({"filters": [{"col": "region", "op": "IN", "val": ["north') OR ('1'='1"]}]});
        assert_eq!(sum(&admin, total(by_region, quoted)).await, Value::Null);
        // url_param unquoted: a number passes, SQL (a column name included) does not.
        for evil in [
            "0 OR 1=1",
            "1) UNION SELECT code FROM secrets --",
            "1; DROP TABLE orders",
            "amount",
        ] {
            let (s, r) = data(
                &admin,
                total(by_region, json!({"url_params": {"min": evil}})),
            )
            .await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{engine} {evil}: {r}");
            assert_eq!(error_type(&r), "INVALID_TEMPLATE_PARAMS_ERROR", "{r}");
        }

        // The documentation's join: benign values run, a quote is refused.
        let f = |v: Value| json!({"filters": [{"col": "region", "op": "IN", "val": v}]});
        assert_eq!(
            sum(&admin, total(joined, f(json!(["north"])))).await,
            json!(40)
        );
        let (s, r) = data(&admin, total(joined, f(json!(["north') OR ('1'='1"])))).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");

        // current_username(): each user their own rows, the cache never crossing users.
        assert_eq!(
            sum(&alice, total(mine, json!({}))).await,
            json!(40),
            "{engine}"
        );
        assert_eq!(sum(&bob, total(mine, json!({}))).await, json!(20));
        assert_eq!(sum(&alice, total(mine, json!({}))).await, json!(40));
        assert_eq!(sum(&admin, total(mine, json!({}))).await, Value::Null);

        // current_user_id(), current_user_email(), current_user_roles().
        let (s, r) = data(
            &alice,
            request(who, json!({"columns": ["uid", "email", "roles"]})),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(
            r["result"][0]["data"],
            json!([{"uid": alice_id, "email": "alice@example.com", "roles": "Gamma,readers"}]),
            "{engine}"
        );

        // get_time_filter with remove_filter and the dialect's conversion.
        let january = json!({"filters": [{"col": "ds", "op": "TEMPORAL_RANGE", "val": "2024-01-01 : 2024-02-01"}]});
        assert_eq!(
            sum(&admin, total(timed, january.clone())).await,
            json!(30),
            "{engine}"
        );
        let (_, full) = data(&admin, total(timed, january.clone())).await;
        assert_eq!(full["result"][0]["applied_template_filters"], json!(["ds"]));
        let sql = rendered(&admin, total(timed, january)).await;
        let from = if is_pg {
            "ds >= TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US')"
        } else {
            "ds >= '2024-01-01 00:00:00'"
        };
        assert!(sql.contains(from), "{engine}: {sql}");

        // dataset(): another dataset as a subquery, only the caller's.
        let (s, r) = data(
            &admin,
            request(
                nested,
                json!({"columns": ["region", "amount"], "orderby": [["region", true]]}),
            ),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(
            r["result"][0]["data"],
            json!([{"region": "east", "amount": 40}, {"region": "north", "amount": 40}, {"region": "south", "amount": 20}]),
            "{engine}"
        );
        let (s, r) = data(&alice, request(nested, json!({"columns": ["region"]}))).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
        assert!(
            r.to_string()
                .contains(&format!("Dataset {base} not found!")),
            "{r}"
        );

        // metric(): a saved metric by name, of this dataset or another.
        let m = json!({"metrics": [{"expressionType": "SQL", "sqlExpression": "{{ metric('total_amount') }}", "label": "total"}]});
        assert_eq!(sum(&admin, request(base, m)).await, json!(100), "{engine}");
        let (s, r) = data(
            &admin,
            request(
                per_region,
                json!({"columns": ["region", "t"], "orderby": [["t", false], ["region", true]]}),
            ),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(
            r["result"][0]["data"][0],
            json!({"region": "east", "t": 40})
        );
        let m = json!({"metrics": [{"expressionType": "SQL", "sqlExpression": "{{ metric('nope') }}", "label": "x"}]});
        let (s, r) = data(&admin, request(base, m)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
        assert!(
            r.to_string()
                .contains("Metric ``nope`` not found in orders."),
            "{r}"
        );

        // from_dttm / to_dttm: the query's time bounds as Python's isoformat().
        let bounds = json!({
            "filters": [{"col": "ds", "op": "TEMPORAL_RANGE", "val": "2024-01-01 : 2024-02-01"}],
            "extras": {"where": "'{{ from_dttm }}' = '2024-01-01T00:00:00' AND '{{ to_dttm }}' = '2024-02-01T00:00:00' AND {{ row_limit }} = 100"},
        });
        assert_eq!(
            sum(&admin, total(base, bounds)).await,
            json!(30),
            "{engine}"
        );

        // extras.where with a template, quoted.
        let south = json!({"extras": {"where": "region = '{{ url_param('r') }}'"}, "url_params": {"r": "south"}});
        assert_eq!(sum(&admin, total(base, south)).await, json!(20));

        // A branch reading a table beyond the dataset's saved form needs the caller's access.
        let secret = request(
            branchy,
            json!({"columns": ["region"], "url_params": {"t": "secret"}}),
        );
        let (s, r) = data(&alice, secret.clone()).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{engine}: {r}");
        let (s, r) = data(&admin, secret.clone()).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"][0]["data"], json!([{"region": "s3cr3t"}]));
        // The admin's answer is cached; the reader is still refused.
        let (s, _) = data(&alice, secret).await;
        assert_eq!(s, StatusCode::FORBIDDEN);
        let (s, r) = data(
            &alice,
            request(branchy, json!({"columns": ["region"], "row_limit": 1})),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{r}");
    }
}

/// A saved chart on a templated dataset survives its bundle's export and import, and answers
/// through `GET /chart/<pk>/data/` with the saved context's filters and parameters.
#[tokio::test]
async fn templated_datasets_export_import_and_chart() {
    let url = pg_analytics().await;
    let server = templating_server().await;
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = create_database(&admin, "bundle_tpl", &url).await;
    let (s, ds) = admin
        .post(
            "/api/v1/dataset/",
            json!({"database": db, "schema": "public", "table_name": "by_owner",
                   "sql": "SELECT owner, amount FROM orders WHERE amount >= {{ floor }}\
                           {% if filter_values('owner') %} AND owner IN {{ filter_values('owner', remove_filter=True)|where_in }}{% endif %}",
                   "template_params": "{\"floor\": 20}"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let ds = ds["id"].as_i64().expect("id");
    let context = total(
        ds,
        json!({"filters": [{"col": "owner", "op": "IN", "val": ["alice", "carol"]}]}),
    );
    let (s, chart) = admin
        .post(
            "/api/v1/chart/",
            json!({"slice_name": "templated", "datasource_id": ds, "datasource_type": "table",
                   "viz_type": "table", "query_context": context.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{chart}");
    let chart = chart["id"].as_i64().expect("id");
    let (s, r) = admin.get(&format!("/api/v1/chart/{chart}/data/")).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"][0]["data"], json!([{"total": 70}]));

    let resp = admin
        .request(
            reqwest::Method::GET,
            &format!("/api/v1/chart/export/?q=!({chart})"),
        )
        .send()
        .await
        .expect("export");
    assert_eq!(resp.status(), StatusCode::OK);
    let zip = resp.bytes().await.expect("zip").to_vec();
    for path in [
        format!("/api/v1/chart/{chart}"),
        format!("/api/v1/dataset/{ds}"),
    ] {
        let (s, r) = admin.delete(&path).await;
        assert_eq!(s, StatusCode::OK, "{path}: {r}");
    }
    let form = reqwest::multipart::Form::new()
        .part(
            "formData",
            reqwest::multipart::Part::bytes(zip).file_name("bundle.zip"),
        )
        .text("overwrite", "true");
    let (s, r) = status_json(
        admin
            .request(reqwest::Method::POST, "/api/v1/chart/import/")
            .multipart(form)
            .send()
            .await
            .expect("import"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let (_, charts) = admin
        .get("/api/v1/chart/?q=(filters:!((col:slice_name,opr:eq,value:templated)))")
        .await;
    let imported = charts["result"][0]["id"].as_i64().expect("imported chart");
    let (s, r) = admin.get(&format!("/api/v1/chart/{imported}/data/")).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"][0]["data"], json!([{"total": 70}]));
    assert_eq!(r["result"][0]["applied_template_filters"], json!(["owner"]));
}

/// SQL Lab renders `templateParams`, `_filters`, the query string's `url_param` and the
/// caller's macros; an undefined parameter and a syntax error are Superset's 400s.
#[tokio::test]
async fn sql_lab_renders_template_parameters() {
    let url = pg_analytics().await;
    let server = templating_server().await;
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = create_database(&admin, "lab_tpl", &url).await;
    let run = |sql: &str, params: Value, query: &str| {
        let body = json!({"database_id": db, "sql": sql, "templateParams": params.to_string(),
                          "runAsync": false});
        let path = format!("/api/v1/sqllab/execute/{query}");
        let admin = &admin;
        async move { admin.post(&path, body).await }
    };
    let (s, r) = run(
        "SELECT {{ a }} + 1 AS x, '{{ current_username() }}' AS who",
        json!({"a": 41}),
        "",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"], json!([{"x": 42, "who": "admin"}]));
    assert_eq!(
        r["query"]["executedSql"]
            .as_str()
            .map(|q| q.contains("41 + 1")),
        Some(true),
        "{r}"
    );
    let (s, r) = run(
        "SELECT SUM(amount) AS t FROM orders WHERE region IN {{ filter_values('region')|where_in }}",
        json!({"_filters": [{"col": "region", "op": "IN", "val": ["north"]}]}),
        "",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"], json!([{"t": 40}]));
    let (s, r) = run(
        "SELECT count(*) AS n FROM orders WHERE region = '{{ url_param('r') }}'",
        json!({}),
        "?r=south",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"], json!([{"n": 1}]));

    let (s, r) = run("SELECT {{ missing }}", json!({}), "").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(error_type(&r), "MISSING_TEMPLATE_PARAMS_ERROR", "{r}");
    assert_eq!(
        r["errors"][0]["message"],
        "The parameter \"missing\" in your query is undefined."
    );
    assert_eq!(
        r["errors"][0]["extra"]["undefined_parameters"],
        json!(["missing"])
    );
    let (s, r) = run("SELECT 1\n{% if %}", json!({}), "").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(error_type(&r), "INVALID_TEMPLATE_PARAMS_ERROR", "{r}");
    assert_eq!(r["errors"][0]["extra"]["line"], 2, "{r}");
    assert_eq!(
        r["errors"][0]["extra"]["exception_type"],
        "TemplateSyntaxError"
    );
    // The rendered SQL passes SQL Lab's checks like typed SQL.
    let (s, r) = run("{{ 'DELETE' }} FROM orders", json!({}), "").await;
    assert!(s.is_client_error() || s.is_server_error(), "{r}");
    assert_ne!(s, StatusCode::OK, "{r}");
    let (_, n) = run("SELECT count(*) AS n FROM orders", json!({}), "").await;
    assert_eq!(n["data"], json!([{"n": 4}]));
}

/// Hostile templates end with a 4xx in the error envelope, in every place templates render,
/// and the server keeps answering.
#[tokio::test]
async fn hostile_templates_are_contained() {
    let url = pg_analytics().await;
    let server = templating_server().await;
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = create_database(&admin, "hostile_tpl", &url).await;
    let base = dataset(&admin, db, true, "orders", None).await;
    let hostile = [
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "{% set ns = namespace(n=0) %}{% for i in range(99999) %}{% for j in range(99999) %}{% set ns.n = ns.n + 1 %}{% endfor %}{% endfor %}",
        "{{ 'x' * 100000000 }}",
        "{{ ('x' * 900000) * 900000 }}",
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
        "{{ url_param.__globals__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{{ self._TemplateReference__context }}",
        "{{ config.items() }}",
        "{{ request.environ }}",
        "{% include '/etc/passwd' %}",
        "{% import 'os' as os %}",
        "{% extends 'base' %}",
        "{{ range(10000000) }}",
        "{{ x }",
        "{{ dataset(999999) }}",
    ];
    for t in hostile {
        // In a request's SQL expression.
        let body = total(base, json!({"extras": {"where": format!("1 = 1 AND {t}")}}));
        let (s, r) = data(&admin, body).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{t}: {r}");
        assert!(
            r["errors"][0]["message"].is_string() || r["message"].is_string(),
            "{r}"
        );
        // In a virtual dataset's SQL: refused when it is saved.
        let (s, r) = admin
            .post(
                "/api/v1/dataset/",
                json!({"database": db, "schema": "public", "table_name": "hostile",
                       "sql": format!("SELECT 1 AS x {t}")}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{t}: {r}");
        // In SQL Lab.
        let (s, r) = admin
            .post(
                "/api/v1/sqllab/execute/",
                json!({"database_id": db, "sql": format!("SELECT 1 {t}"), "runAsync": false}),
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{t}: {r}");
    }
    // Still serving, the database untouched.
    let (s, r) = data(&admin, total(base, json!({}))).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"][0]["data"], json!([{"total": 100}]));
}

/// With `query.template_processing` off (the default), template syntax is refused with a 400
/// naming the switch instead of reaching the database raw.
#[tokio::test]
async fn templates_are_refused_while_the_switch_is_off() {
    let url = pg_analytics().await;
    let server = TestServer::builder().start().await.expect("server");
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let db = create_database(&admin, "off_tpl", &url).await;
    let base = dataset(&admin, db, true, "orders", None).await;
    let (s, r) = admin
        .post(
            "/api/v1/dataset/",
            json!({"database": db, "schema": "public", "table_name": "t",
                   "sql": "SELECT * FROM orders WHERE owner = '{{ current_username() }}'"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
    assert!(r.to_string().contains("query.template_processing"), "{r}");
    for extras in [
        json!({"where": "owner = '{{ current_username() }}'"}),
        json!({"having": "SUM(amount) > {{ 1 }}"}),
    ] {
        let (s, r) = data(&admin, total(base, json!({"extras": extras}))).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
        assert_eq!(error_type(&r), "INVALID_TEMPLATE_PARAMS_ERROR", "{r}");
        assert!(r.to_string().contains("ENABLE_TEMPLATE_PROCESSING"), "{r}");
    }
    let (s, r) = admin
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": db, "sql": "SELECT '{{ 1 }}'", "runAsync": false}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    assert!(r.to_string().contains("query.template_processing"), "{r}");
}
