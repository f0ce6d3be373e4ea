//! The catalog API end to end: a real PostgreSQL analytics database registered as a
//! connection, physical and virtual datasets introspected from it, charts and dashboards on
//! them, FAB's list protocol, RBAC down to one granted dataset, and secrets kept out of every
//! response and log line.

use liteset_tests::{
    ADMIN_PASSWORD, Metadata, TestServer, both_backends, csrf, login, pg, status_json,
};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The analytics password: it must never come back in a body or a log line.
const SECRET_PASSWORD: &str = "Pa55-w0rd-never-shown-7d1e";

/// A logged-in API client (Bearer token + CSRF token + session cookie, like every real client).
struct Api {
    c: reqwest::Client,
    base: String,
    token: String,
    csrf: String,
    seen: std::cell::RefCell<String>,
}

impl Api {
    async fn login(server: &TestServer, user: &str, password: &str) -> Api {
        let c = reqwest::Client::builder()
            .cookie_store(true)
            .build()
            .unwrap();
        let tokens = login(&c, server.base_url(), user, password).await;
        let token = tokens["access_token"].as_str().unwrap().to_owned();
        let csrf = csrf(&c, server.base_url(), &token).await;
        Api {
            c,
            base: server.base_url().to_owned(),
            token,
            csrf,
            seen: Default::default(),
        }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self
            .c
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .header("X-CSRFToken", &self.csrf);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let (status, json) = status_json(req.send().await.unwrap()).await;
        self.seen.borrow_mut().push_str(&json.to_string());
        (status, json)
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None).await
    }
    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body)).await
    }
    async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PUT, path, Some(body)).await
    }
    async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None).await
    }
}

/// A fresh analytics database with a `sales` table and a password-holding role; returns the
/// SQLAlchemy URI with the password.
async fn analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let role = format!("analyst_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!(
            "CREATE TABLE public.sales (id serial PRIMARY KEY, region varchar(50) NOT NULL, \
             amount numeric(10,2), sold_at timestamp, active boolean); \
             INSERT INTO public.sales (region, amount, sold_at, active) VALUES \
             ('north', 10.5, '2024-01-01 10:00', true), ('south', 20, '2024-02-01', false); \
             CREATE TABLE public.costs (id int, label text); \
             CREATE ROLE {role} LOGIN PASSWORD '{SECRET_PASSWORD}'; \
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role};"
        ))
        .await
        .unwrap();
    let parsed = url::Url::parse(&url).unwrap();
    format!(
        "postgresql://{role}:{SECRET_PASSWORD}@{}:{}{}",
        parsed.host_str().unwrap(),
        parsed.port().unwrap(),
        parsed.path()
    )
}

fn col<'a>(dataset: &'a Value, name: &str) -> &'a Value {
    dataset["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["column_name"] == name)
        .unwrap_or_else(|| panic!("no column {name} in {dataset}"))
}

both_backends! {
    async fn catalog_crud_list_protocol_and_secrets(meta: Metadata) {
        let uri = analytics().await;
        let mut server = TestServer::builder().metadata(meta).start().await.unwrap();
        let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;

        // Database: tested, created, password masked.
        let (s, db) = api.post("/api/v1/database/", json!({"database_name": "analytics", "sqlalchemy_uri": uri, "expose_in_sqllab": true})).await;
        assert_eq!(s, StatusCode::CREATED, "{db}");
        let db_id = db["id"].as_i64().unwrap();
        assert!(db["result"]["sqlalchemy_uri"].as_str().unwrap().contains(":XXXXXXXXXX@"), "{db}");
        let (s, conn) = api.get(&format!("/api/v1/database/{db_id}/connection")).await;
        assert_eq!(s, StatusCode::OK, "{conn}");
        assert!(conn["result"]["sqlalchemy_uri"].as_str().unwrap().contains("XXXXXXXXXX"));
        assert_eq!(conn["result"]["backend"], "postgresql");
        let (s, dup) = api.post("/api/v1/database/", json!({"database_name": "analytics", "sqlalchemy_uri": uri})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{dup}");
        let (s, bad) = api.post("/api/v1/database/", json!({"database_name": "m", "sqlalchemy_uri": "oracle://u:p@h/d"})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(bad.to_string().contains("Could not load database driver: oracle"), "{bad}");
        assert!(bad.to_string().contains("postgresql://"), "{bad}");
        // A supported engine whose server cannot be reached is tested, and not saved.
        let (s, bad) = api.post("/api/v1/database/", json!({"database_name": "m", "sqlalchemy_uri": "mysql://u:p@h.invalid/d"})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        assert_eq!(bad["errors"][0]["error_type"], "CONNECTION_INVALID_HOSTNAME_ERROR", "{bad}");
        assert_eq!(bad["errors"][0]["extra"]["engine_name"], "MySQL", "{bad}");
        for path in ["/api/v1/database/test_connection", "/api/v1/database/test_connection/"] {
            let (s, ok) = api.post(path, json!({"sqlalchemy_uri": uri})).await;
            assert_eq!((s, ok.clone()), (StatusCode::OK, json!({"message": "OK"})), "{path}");
        }
        let wrong = uri.replace(SECRET_PASSWORD, "not-the-password-3e1");
        let (s, fail) = api.post("/api/v1/database/test_connection", json!({"sqlalchemy_uri": wrong})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{fail}");
        assert_eq!(fail["errors"][0]["error_type"], "CONNECTION_INVALID_PASSWORD_ERROR", "{fail}");
        assert_eq!(fail["errors"][0]["extra"]["invalid"], json!(["username", "password"]));
        let (s, fail) = api.post("/api/v1/database/", json!({"database_name": "wrong", "sqlalchemy_uri": wrong})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "a connection that fails its test is not saved: {fail}");
        let (s, fail) = api.post("/api/v1/database/test_connection", json!({"sqlalchemy_uri": "postgresql://u:p@127.0.0.1:1/nodb"})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{fail}");
        assert_eq!(fail["errors"][0]["error_type"], "CONNECTION_PORT_CLOSED_ERROR", "{fail}");
        let (_, schemas) = api.get(&format!("/api/v1/database/{db_id}/schemas/")).await;
        assert!(schemas["result"].as_array().unwrap().contains(&json!("public")), "{schemas}");
        let (_, tables) = api.get(&format!("/api/v1/database/{db_id}/tables/?q=(schema_name:public)")).await;
        assert_eq!(tables["count"], 2, "{tables}");
        assert_eq!(tables["result"][1], json!({"value": "sales", "type": "table", "extra": null}));
        let (s, meta_) = api.get(&format!("/api/v1/database/{db_id}/table_metadata/?name=sales&schema=public")).await;
        assert_eq!(s, StatusCode::OK, "{meta_}");
        assert_eq!(meta_["primaryKey"]["column_names"], json!(["id"]));
        let (_, star) = api.get(&format!("/api/v1/database/{db_id}/select_star/sales/public/")).await;
        assert_eq!(star["result"], "SELECT *\nFROM public.sales\nLIMIT 100");

        // Physical dataset with introspected columns and the count metric.
        let (s, ds) = api.post("/api/v1/dataset/", json!({"database": db_id, "schema": "public", "table_name": "sales"})).await;
        assert_eq!(s, StatusCode::CREATED, "{ds}");
        let ds_id = ds["id"].as_i64().unwrap();
        let (s, show) = api.get(&format!("/api/v1/dataset/{ds_id}")).await;
        assert_eq!(s, StatusCode::OK, "{show}");
        let show = &show["result"];
        assert_eq!(show["database"]["id"], db_id);
        assert_eq!(show["kind"], "physical");
        assert_eq!(col(show, "sold_at")["is_dttm"], true);
        assert_eq!(col(show, "sold_at")["type_generic"], 2);
        assert_eq!(col(show, "amount")["type_generic"], 0);
        assert_eq!(col(show, "region")["type"], "VARCHAR(50)");
        assert_eq!(col(show, "active")["type_generic"], 3);
        assert_eq!(show["metrics"][0]["metric_name"], "count");
        assert_eq!(show["metrics"][0]["expression"], "COUNT(*)");
        let (s, dup) = api.post("/api/v1/dataset/", json!({"database": db_id, "schema": "public", "table_name": "sales"})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{dup}");
        let (s, missing) = api.post("/api/v1/dataset/", json!({"database": db_id, "schema": "public", "table_name": "nope"})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{missing}");

        // Virtual dataset.
        let (s, vds) = api.post("/api/v1/dataset/", json!({"database": db_id, "schema": "public", "table_name": "big_sales", "sql": "SELECT region, amount * 2 AS doubled FROM sales"})).await;
        assert_eq!(s, StatusCode::CREATED, "{vds}");
        let vds_id = vds["id"].as_i64().unwrap();
        let (_, vshow) = api.get(&format!("/api/v1/dataset/{vds_id}")).await;
        assert_eq!(vshow["result"]["kind"], "virtual");
        assert_eq!(col(&vshow["result"], "doubled")["type_generic"], 0);

        // Replace-the-set update of metrics and a calculated column.
        let cols: Vec<Value> = show["columns"].as_array().unwrap().iter().map(|c| json!({"id": c["id"], "column_name": c["column_name"], "type": c["type"], "is_dttm": c["is_dttm"]})).collect();
        let mut cols = cols;
        cols.push(json!({"column_name": "region_upper", "expression": "UPPER(region)", "type": "VARCHAR"}));
        let (s, upd) = api.put(&format!("/api/v1/dataset/{ds_id}"), json!({"description": "Sales", "columns": cols, "metrics": [{"metric_name": "total", "expression": "SUM(amount)"}]})).await;
        assert_eq!(s, StatusCode::OK, "{upd}");
        let (_, show2) = api.get(&format!("/api/v1/dataset/{ds_id}")).await;
        assert_eq!(show2["result"]["description"], "Sales");
        assert_eq!(show2["result"]["metrics"].as_array().unwrap().len(), 1);
        assert_eq!(show2["result"]["metrics"][0]["metric_name"], "total");
        assert_eq!(col(&show2["result"], "region_upper")["expression"], "UPPER(region)");
        let (s, refreshed) = api.put(&format!("/api/v1/dataset/{ds_id}/refresh"), json!({})).await;
        assert_eq!((s, refreshed), (StatusCode::OK, json!({"message": "OK"})));

        // Chart and dashboard.
        let (s, ch) = api.post("/api/v1/chart/", json!({"slice_name": "Sales by region", "viz_type": "table", "datasource_id": ds_id, "datasource_type": "table", "params": "{\"metrics\": [\"count\"]}"})).await;
        assert_eq!(s, StatusCode::CREATED, "{ch}");
        let ch_id = ch["id"].as_i64().unwrap();
        let (s, ch2) = api.post("/api/v1/chart/", json!({"slice_name": "Virtual", "viz_type": "pie", "datasource_id": vds_id, "datasource_type": "table"})).await;
        assert_eq!(s, StatusCode::CREATED, "{ch2}");
        let (s, bad_params) = api.post("/api/v1/chart/", json!({"slice_name": "x", "datasource_id": ds_id, "datasource_type": "table", "params": "{nope"})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad_params}");
        let (s, d) = api.post("/api/v1/dashboard/", json!({"dashboard_title": "Sales", "slug": "sales", "published": true, "json_metadata": "{}", "position_json": "{}"})).await;
        assert_eq!(s, StatusCode::CREATED, "{d}");
        let d_id = d["id"].as_i64().unwrap();
        let (s, linked) = api.put(&format!("/api/v1/chart/{ch_id}"), json!({"dashboards": [d_id]})).await;
        assert_eq!(s, StatusCode::OK, "{linked}");
        let (s, dash) = api.get("/api/v1/dashboard/sales").await;
        assert_eq!(s, StatusCode::OK, "{dash}");
        assert_eq!(dash["result"]["charts"], json!(["Sales by region"]));
        assert_eq!(dash["result"]["json_metadata"], "{}");
        let (_, dcharts) = api.get(&format!("/api/v1/dashboard/{d_id}/charts")).await;
        assert_eq!(dcharts["result"][0]["form_data"]["metrics"], json!(["count"]));
        assert_eq!(dcharts["result"][0]["form_data"]["datasource"], format!("{ds_id}__table"));
        let (_, dds) = api.get(&format!("/api/v1/dashboard/{d_id}/datasets")).await;
        assert_eq!(dds["result"][0]["id"], ds_id, "{dds}");
        let (_, chart) = api.get(&format!("/api/v1/chart/{ch_id}")).await;
        assert_eq!(chart["result"]["params"], "{\"metrics\": [\"count\"]}");
        assert_eq!(chart["result"]["dashboards"][0]["dashboard_title"], "Sales");
        let uuid = chart["result"]["uuid"].as_str().unwrap().to_owned();
        let (s, by_uuid) = api.get(&format!("/api/v1/chart/{uuid}")).await;
        assert_eq!((s, by_uuid["id"].clone()), (StatusCode::OK, json!(ch_id)));
        let (_, related) = api.get(&format!("/api/v1/dataset/{ds_id}/related_objects")).await;
        assert_eq!(related["charts"]["count"], 1);
        assert_eq!(related["dashboards"]["result"][0]["title"], "Sales");

        // Favourites.
        let (s, fav) = api.post(&format!("/api/v1/chart/{ch_id}/favorites/"), json!({})).await;
        assert_eq!((s, fav), (StatusCode::OK, json!({"result": "OK"})));
        let (_, st) = api.get(&format!("/api/v1/chart/favorite_status/?q=!({ch_id},{})", ch2["id"])).await;
        assert_eq!(st["result"], json!([{"id": ch_id, "value": true}, {"id": ch2["id"], "value": false}]));
        let (_, l) = api.get("/api/v1/chart/?q=(filters:!((col:id,opr:chart_is_favorite,value:!t)))").await;
        assert_eq!(l["ids"], json!([ch_id]), "{l}");
        let (s, _) = api.delete(&format!("/api/v1/chart/{ch_id}/favorites/")).await;
        assert_eq!(s, StatusCode::OK);
        let (_, st) = api.get(&format!("/api/v1/chart/favorite_status/?q=!({ch_id})")).await;
        assert_eq!(st["result"], json!([{"id": ch_id, "value": false}]));
        let (_, st) = api.get(&format!("/api/v1/dashboard/favorite_status/?q=!({d_id})")).await;
        assert_eq!(st["result"], json!([{"id": d_id, "value": false}]));

        // Embedded dashboard.
        let (s, emb) = api.post(&format!("/api/v1/dashboard/{d_id}/embedded"), json!({"allowed_domains": ["https://a.example"]})).await;
        assert_eq!(s, StatusCode::OK, "{emb}");
        let emb_uuid = emb["result"]["uuid"].as_str().unwrap().to_owned();
        let (_, emb2) = api.get(&format!("/api/v1/embedded_dashboard/{emb_uuid}")).await;
        assert_eq!(emb2["result"]["dashboard_id"], d_id.to_string());

        // Lists: rison and JSON q, filters, order, pages.
        let (s, l) = api.get("/api/v1/chart/?q=(filters:!((col:slice_name,opr:ct,value:region)),order_column:slice_name,order_direction:asc)").await;
        assert_eq!(s, StatusCode::OK, "{l}");
        assert_eq!(l["count"], 1);
        assert_eq!(l["result"][0]["slice_name"], "Sales by region");
        assert_eq!(l["result"][0]["table"]["table_name"], "sales");
        assert_eq!(l["result"][0]["owners"][0]["first_name"], "Superset");
        let json_q = urlencode(&json!({"order_column": "slice_name", "order_direction": "desc", "page": 0, "page_size": 1}).to_string());
        let (_, l) = api.get(&format!("/api/v1/chart/?q={json_q}")).await;
        assert_eq!((l["count"].clone(), l["result"][0]["slice_name"].clone()), (json!(2), json!("Virtual")), "{l}");
        assert_eq!(l["result"].as_array().unwrap().len(), 1);
        let (_, l) = api.get("/api/v1/chart/?q=(page:5,page_size:10)").await;
        assert_eq!((l["count"].clone(), l["result"].clone()), (json!(2), json!([])));
        let (_, l) = api.get("/api/v1/chart/?q=(columns:!(id,changed_by.first_name),filters:!((col:slice_name,opr:chart_all_text,value:pie)))").await;
        assert_eq!(l["count"], 1, "{l}");
        assert_eq!(l["list_columns"], json!(["id", "changed_by.first_name"]));
        assert_eq!(l["result"][0]["changed_by"], json!({"first_name": "Superset"}));
        let (_, l) = api.get("/api/v1/chart/?q=(columns:!(nope,slice_name))").await;
        assert_eq!(l["list_columns"], json!(["slice_name"]), "unknown columns are pruned, as FAB does");
        assert_eq!(l["result"][0].as_object().unwrap().len(), 1);
        let (_, l) = api.get("/api/v1/dataset/?q=(filters:!((col:sql,opr:dataset_is_null_or_empty,value:!t)))").await;
        assert_eq!(l["count"], 1, "{l}");
        assert_eq!(l["result"][0]["table_name"], "sales");
        let (_, l) = api.get(&format!("/api/v1/dataset/?q=(filters:!((col:database,opr:rel_o_m,value:{db_id})),order_column:table_name,order_direction:asc,keys:!(none))")).await;
        assert_eq!(l["ids"], json!([vds_id, ds_id]), "{l}");
        assert!(l.get("list_columns").is_none());
        let (_, l) = api.get("/api/v1/dashboard/?q=(filters:!((col:dashboard_title,opr:title_or_slug,value:sal)))").await;
        assert_eq!((l["count"].clone(), l["result"][0]["status"].clone()), (json!(1), json!("published")), "{l}");
        let (_, l) = api.get("/api/v1/database/?q=(filters:!((col:database_name,opr:sw,value:ANAL)))").await;
        assert_eq!(l["count"], 1, "{l}");
        assert_eq!(l["result"][0]["backend"], "postgresql");

        // Bad input: FAB's 400s, 404s, never a 500.
        for (path, status, message) in [
            ("/api/v1/chart/?q=(filters:!((col:nope,opr:eq,value:1)))", 400, json!("Filter column: nope not allowed to filter")),
            ("/api/v1/chart/?q=(filters:!((col:slice_name,opr:gt,value:1)))", 400, json!("Filter operation: gt not allowed on column: slice_name")),
            ("/api/v1/chart/?q=(order_column:nope)", 400, json!("Invalid order by column: nope")),
            ("/api/v1/chart/?q=(((", 400, json!("Not a valid rison/json argument")),
            ("/api/v1/chart/?q=(page:abc)", 400, Value::Null),
            ("/api/v1/chart/999999", 404, json!("Not found")),
            ("/api/v1/dataset/999999", 404, json!("Not found")),
            ("/api/v1/dashboard/no-such-slug", 404, json!("Not found")),
            ("/api/v1/database/999999", 404, json!("Not found")),
            ("/api/v1/chart/related/nope", 404, json!("Not found")),
            ("/api/v1/dataset/abc", 404, json!("Not found")),
            ("/api/v1/database/99999999999999999999/schemas/", 404, json!("Not found")),
            ("/api/v1/chart/export/?q=(a:1)", 400, Value::Null),
            ("/api/v1/dataset/?q=(filters:!((col:id,opr:eq,value:abc)))", 400, Value::Null),
        ] {
            let (s, body) = api.get(path).await;
            assert_eq!(s.as_u16(), status, "{path}: {body}");
            if !message.is_null() {
                assert_eq!(body["message"], message, "{path}");
            } else {
                assert!(body["message"].is_string(), "{path}: {body}");
            }
        }
        let (s, body) = api.put(&format!("/api/v1/chart/{ch_id}"), json!({"slice_name": 5})).await;
        assert_eq!((s, body), (StatusCode::BAD_REQUEST, json!({"message": {"slice_name": ["Not a valid string."]}})));
        let (s, body) = api.post("/api/v1/chart/", json!({"slice_name": "x", "datasource_id": 999999, "datasource_type": "table"})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let (s, body) = api.post("/api/v1/dashboard/", json!({"owners": [999999]})).await;
        assert_eq!((s, body), (StatusCode::UNPROCESSABLE_ENTITY, json!({"message": {"owners": ["Owners are invalid"]}})));
        // `null` for a field whose column cannot hold it is marshmallow's 400, never a 500 from
        // the store: on create and on update, for booleans, uuids and integers of every
        // resource, and next to valid fields.
        let may_not_be_null = |field: &str| json!({"message": {field: ["Field may not be null."]}});
        for (method, path, body, field) in [
            ("POST", "/api/v1/dashboard/".to_owned(), json!({"dashboard_title": "n", "published": null}), "published"),
            ("POST", "/api/v1/dashboard/".to_owned(), json!({"uuid": null}), "uuid"),
            ("PUT", format!("/api/v1/dashboard/{d_id}"), json!({"is_managed_externally": null}), "is_managed_externally"),
            ("PUT", format!("/api/v1/chart/{ch_id}"), json!({"slice_name": "ok", "uuid": null}), "uuid"),
            ("PUT", format!("/api/v1/database/{db_id}"), json!({"allow_cvas": null}), "allow_cvas"),
            ("PUT", format!("/api/v1/database/{db_id}"), json!({"database_name": "analytics", "expose_in_sqllab": null}), "expose_in_sqllab"),
            ("PUT", format!("/api/v1/dataset/{ds_id}"), json!({"offset": null}), "offset"),
            ("PUT", format!("/api/v1/dataset/{ds_id}"), json!({"filter_select_enabled": null}), "filter_select_enabled"),
        ] {
            let (s, r) = if method == "POST" { api.post(&path, body.clone()).await } else { api.put(&path, body.clone()).await };
            assert_eq!((s, r), (StatusCode::BAD_REQUEST, may_not_be_null(field)), "{method} {path} {body}");
        }
        let (_, db_after) = api.get(&format!("/api/v1/database/{db_id}")).await;
        assert_eq!(db_after["result"]["expose_in_sqllab"], true, "a refused update changed nothing");

        // _info for every resource.
        for res in ["chart", "dashboard", "dataset", "database"] {
            let (s, info) = api.get(&format!("/api/v1/{res}/_info?q=(keys:!(permissions,add_columns,edit_columns,filters))")).await;
            assert_eq!(s, StatusCode::OK, "{res}: {info}");
            assert!(info["permissions"].as_array().unwrap().contains(&json!("can_write")), "{res}");
            assert!(info["add_columns"].as_array().unwrap().iter().all(|c| c["name"].is_string()), "{res}");
            assert!(info["filters"].as_object().unwrap().len() > 2, "{res}");
        }
        let (_, info) = api.get("/api/v1/chart/_info").await;
        assert!(info["filters"]["slice_name"].as_array().unwrap().contains(&json!({"name": "All Text", "operator": "chart_all_text"})));

        // Related and distinct.
        let (_, rel) = api.get("/api/v1/chart/related/owners?q=(filter:adm)").await;
        assert_eq!(rel["count"], 1, "{rel}");
        assert_eq!(rel["result"][0]["text"], "Superset Admin", "{rel}");
        let (_, rel) = api.get("/api/v1/chart/related/owners?q=(filter:nobody)").await;
        assert_eq!(rel["count"], 0, "{rel}");
        let (_, dis) = api.get("/api/v1/dataset/distinct/schema").await;
        assert_eq!(dis["result"], json!([{"text": "public", "value": "public"}]));

        // Updates, deletes and bulk deletes.
        let (s, _) = api.put(&format!("/api/v1/dashboard/{d_id}"), json!({"dashboard_title": "Sales 2"})).await;
        assert_eq!(s, StatusCode::OK);
        let (s, body) = api.put(&format!("/api/v1/database/{db_id}"), json!({"database_name": "analytics2", "sqlalchemy_uri": db["result"]["sqlalchemy_uri"]})).await;
        assert_eq!(s, StatusCode::OK, "{body}");
        let (_, tables) = api.get(&format!("/api/v1/database/{db_id}/tables/?q=(schema_name:public)")).await;
        assert_eq!(tables["count"], 2, "the stored password is kept when the mask is sent back: {tables}");
        let (s, body) = api.delete(&format!("/api/v1/database/{db_id}")).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "datasets still use it: {body}");
        let (s, body) = api.delete(&format!("/api/v1/chart/?q=!({ch_id},{})", ch2["id"])).await;
        assert_eq!((s, body), (StatusCode::OK, json!({"message": "Deleted 2 charts"})));
        let (s, _) = api.delete(&format!("/api/v1/chart/{ch_id}")).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (s, body) = api.delete(&format!("/api/v1/dataset/?q=!({ds_id},{vds_id})")).await;
        assert_eq!((s, body), (StatusCode::OK, json!({"message": "Deleted 2 datasets"})));
        let (s, body) = api.delete(&format!("/api/v1/dashboard/{d_id}")).await;
        assert_eq!((s, body), (StatusCode::OK, json!({"message": "OK"})));
        let (s, body) = api.delete(&format!("/api/v1/database/{db_id}")).await;
        assert_eq!((s, body), (StatusCode::OK, json!({"message": "OK"})));

        // The password never left the server.
        server.stop().await.unwrap();
        assert!(!api.seen.borrow().contains(SECRET_PASSWORD), "password in a response body");
        assert!(!server.logs().contains(SECRET_PASSWORD), "password in the server log");
        assert!(!server.logs().contains("not-the-password-3e1"), "wrong password in the server log");
        assert!(!api.seen.borrow().contains("not-the-password-3e1"));
    }
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn gamma_user_granted_one_dataset_sees_only_it() {
    let uri = analytics().await;
    let server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .start()
        .await
        .unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (_, db) = admin
        .post(
            "/api/v1/database/",
            json!({"database_name": "wh", "sqlalchemy_uri": uri}),
        )
        .await;
    let db_id = db["id"].as_i64().unwrap();
    let (_, a) = admin
        .post(
            "/api/v1/dataset/",
            json!({"database": db_id, "schema": "public", "table_name": "sales"}),
        )
        .await;
    let (_, b) = admin
        .post(
            "/api/v1/dataset/",
            json!({"database": db_id, "schema": "public", "table_name": "costs"}),
        )
        .await;
    let (a, b) = (a["id"].as_i64().unwrap(), b["id"].as_i64().unwrap());
    let (_, ca) = admin.post("/api/v1/chart/", json!({"slice_name": "on sales", "datasource_id": a, "datasource_type": "table", "viz_type": "table"})).await;
    let (_, cb) = admin.post("/api/v1/chart/", json!({"slice_name": "on costs", "datasource_id": b, "datasource_type": "table", "viz_type": "table"})).await;
    let (ca, cb) = (ca["id"].as_i64().unwrap(), cb["id"].as_i64().unwrap());

    // The administrator creates a role holding datasource_access on `sales` only.
    let (s, role) = admin
        .post("/api/v1/security/roles/", json!({"name": "sales_reader"}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{role}");
    let role_id = role["id"].as_i64().unwrap();
    let (_, roles) = admin
        .get("/api/v1/security/roles/?q=(filters:!((col:name,opr:eq,value:Gamma)))")
        .await;
    let gamma_id = roles["result"][0]["id"].as_i64().unwrap();
    let view = format!("[wh].[sales](id:{a})");
    let q = format!(
        "(filters:!((col:view_menu.name,opr:eq,value:'{view}'),(col:permission.name,opr:eq,value:datasource_access)))"
    );
    let (s, pvs) = admin
        .get(&format!(
            "/api/v1/security/permissions-resources/?q={}",
            urlencode(&q)
        ))
        .await;
    assert_eq!(
        (s, pvs["count"].clone()),
        (StatusCode::OK, json!(1)),
        "{pvs}"
    );
    let pv = pvs["result"][0]["id"].as_i64().unwrap();
    let (s, granted) = admin
        .post(
            &format!("/api/v1/security/roles/{role_id}/permissions"),
            json!({"permission_view_menu_ids": [pv]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{granted}");
    let (_, perms) = admin
        .get(&format!("/api/v1/security/roles/{role_id}/permissions/"))
        .await;
    assert_eq!(perms["result"][0]["view_menu_name"], view);
    let (s, user) = admin.post("/api/v1/security/users/", json!({"username": "gina", "first_name": "Gina", "last_name": "Gamma", "email": "gina@example.com", "password": "gina-pass-1", "roles": [gamma_id, role_id], "active": true})).await;
    assert_eq!(s, StatusCode::CREATED, "{user}");
    let (_, users) = admin
        .get("/api/v1/security/users/?q=(filters:!((col:username,opr:eq,value:gina)))")
        .await;
    assert_eq!(
        users["result"][0]["roles"].as_array().unwrap().len(),
        2,
        "{users}"
    );

    let gina = Api::login(&server, "gina", "gina-pass-1").await;
    let (s, l) = gina.get("/api/v1/dataset/").await;
    assert_eq!(s, StatusCode::OK, "{l}");
    assert_eq!(
        (l["count"].clone(), l["ids"].clone()),
        (json!(1), json!([a])),
        "{l}"
    );
    let (_, l) = gina.get("/api/v1/chart/").await;
    assert_eq!(
        (l["count"].clone(), l["ids"].clone()),
        (json!(1), json!([ca])),
        "{l}"
    );
    let (s, _) = gina.get(&format!("/api/v1/dataset/{a}")).await;
    assert_eq!(s, StatusCode::OK);
    let (s, body) = gina.get(&format!("/api/v1/dataset/{b}")).await;
    assert_eq!(
        (s, body),
        (StatusCode::FORBIDDEN, json!({"message": "Forbidden"}))
    );
    let (s, _) = gina.get(&format!("/api/v1/chart/{cb}")).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = gina.get(&format!("/api/v1/chart/{ca}")).await;
    assert_eq!(s, StatusCode::OK);
    // Gamma may read but not change datasets, nor manage connections or users.
    let (s, _) = gina
        .put(&format!("/api/v1/dataset/{a}"), json!({"description": "x"}))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = gina
        .post(
            "/api/v1/database/",
            json!({"database_name": "x", "sqlalchemy_uri": "sqlite:///x.db"}),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = gina.get("/api/v1/security/users/").await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = gina
        .put(
            &format!("/api/v1/chart/{ca}"),
            json!({"slice_name": "mine now"}),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "not an owner");
    let (_, dbs) = gina.get("/api/v1/database/").await;
    assert_eq!(
        dbs["ids"],
        json!([db_id]),
        "the database holding the granted dataset: {dbs}"
    );
}

/// The dashboard bundle exported by a real Superset 6.0, kept byte for byte in
/// `tests/fixtures/` (see its README).
const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/superset-6.0-dashboard-export.zip"
);

async fn upload(
    api: &Api,
    path: &str,
    field: &str,
    zip: Vec<u8>,
    extra: &[(&str, &str)],
) -> (StatusCode, Value) {
    let mut form = reqwest::multipart::Form::new().part(
        field.to_owned(),
        reqwest::multipart::Part::bytes(zip).file_name("bundle.zip"),
    );
    for (k, v) in extra {
        form = form.text((*k).to_owned(), (*v).to_owned());
    }
    let resp = api
        .c
        .post(format!("{}{path}", api.base))
        .bearer_auth(&api.token)
        .header("X-CSRFToken", &api.csrf)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let (s, body) = status_json(resp).await;
    api.seen.borrow_mut().push_str(&body.to_string());
    (s, body)
}

fn unzip(bytes: &[u8]) -> std::collections::BTreeMap<String, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut f = archive.by_index(i).unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text).unwrap();
            (f.name().to_owned(), text)
        })
        .collect()
}

both_backends! {
    async fn superset_bundles_import_and_export(meta: Metadata) {
        let mut server = TestServer::builder().metadata(meta).start().await.unwrap();
        let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let fixture = std::fs::read(FIXTURE).unwrap();

        // Bad uploads.
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", b"not a zip".to_vec(), &[]).await;
        assert_eq!((s, body["message"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("Not a ZIP file")));
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "other", fixture.clone(), &[]).await;
        assert_eq!((s, body), (StatusCode::BAD_REQUEST, json!({"message": "Arguments are not correct"})));
        // The masked password must be supplied for a new database.
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", fixture.clone(), &[]).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["errors"][0]["error_type"], "GENERIC_COMMAND_ERROR");
        assert_eq!(
            body["errors"][0]["extra"]["databases/analytics.yaml"],
            json!({"_schema": ["Must provide a password for the database"]})
        );
        for res in ["database", "dataset", "chart", "dashboard"] {
            let (_, l) = api.get(&format!("/api/v1/{res}/")).await;
            assert_eq!(l["count"], 0, "a refused bundle writes nothing: {res}");
        }

        let passwords = json!({"databases/analytics.yaml": SECRET_PASSWORD}).to_string();
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", fixture.clone(), &[("passwords", &passwords)]).await;
        assert_eq!((s, body), (StatusCode::OK, json!({"message": "OK"})));
        let (s, dash) = api.get("/api/v1/dashboard/golden-sales").await;
        assert_eq!(s, StatusCode::OK, "{dash}");
        let mut charts: Vec<String> = serde_json::from_value(dash["result"]["charts"].clone()).unwrap();
        charts.sort();
        assert_eq!(charts, ["Monthly revenue", "Revenue by region", "Revenue share by category"]);
        let d_id = dash["id"].as_i64().unwrap();
        let (_, dcharts) = api.get(&format!("/api/v1/dashboard/{d_id}/charts")).await;
        let table = dcharts["result"].as_array().unwrap().iter().find(|c| c["slice_name"] == "Revenue by region").unwrap().clone();
        let (_, ds) = api.get("/api/v1/dataset/?q=(filters:!((col:table_name,opr:eq,value:sales)))").await;
        let ds_id = ds["ids"][0].as_i64().unwrap();
        assert_eq!(table["form_data"]["datasource"], format!("{ds_id}__table"), "params.datasource rewritten to the new id");
        let position: Value = serde_json::from_str(dash["result"]["position_json"].as_str().unwrap()).unwrap();
        assert_eq!(position["CHART-golden-table"]["meta"]["chartId"], table["id"], "chartId remapped by uuid");
        let (_, show) = api.get(&format!("/api/v1/dataset/{ds_id}")).await;
        assert_eq!(col(&show["result"], "revenue_per_unit")["expression"], "revenue / NULLIF(quantity, 0)");
        assert!(show["result"]["metrics"].as_array().unwrap().iter().any(|m| m["metric_name"] == "sum_revenue" && m["d3format"] == "$,.2f"));
        let (_, dbs) = api.get("/api/v1/database/").await;
        let db_id = dbs["ids"][0].as_i64().unwrap();
        let (_, conn) = api.get(&format!("/api/v1/database/{db_id}/connection")).await;
        assert_eq!(conn["result"]["sqlalchemy_uri"], "postgresql+psycopg2://analytics:XXXXXXXXXX@127.0.0.1:5433/analytics");

        // Importing again: refused without overwrite, replaced in place with it.
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", fixture.clone(), &[("passwords", &passwords)]).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(
            body["errors"][0]["extra"]["dashboards/Golden_sales_11.yaml"],
            "Dashboard already exists and `overwrite=true` was not passed"
        );
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", fixture.clone(), &[("overwrite", "true")]).await;
        assert_eq!((s, body), (StatusCode::OK, json!({"message": "OK"})), "existing database keeps its password");
        let (_, l) = api.get("/api/v1/dashboard/").await;
        assert_eq!(l["count"], 1);
        assert_eq!(l["ids"], json!([d_id]), "matched by uuid, same id");

        // Export: one root folder, masked password, charts referenced by uuid.
        let resp = api.c.get(format!("{}/api/v1/dashboard/export/?q=!({d_id})&token=abc", api.base)).bearer_auth(&api.token).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "application/zip");
        assert!(resp.headers()["set-cookie"].to_str().unwrap().starts_with("abc=done"));
        let disposition = resp.headers()["content-disposition"].to_str().unwrap().to_owned();
        assert!(disposition.starts_with("attachment; filename=dashboard_export_"), "{disposition}");
        let files = unzip(&resp.bytes().await.unwrap());
        let root = files.keys().next().unwrap().split('/').next().unwrap().to_owned();
        assert!(files.keys().all(|k| k.starts_with(&format!("{root}/"))));
        assert!(files[&format!("{root}/metadata.yaml")].contains("type: Dashboard"));
        let db_yaml = files.iter().find(|(k, _)| k.contains("/databases/")).unwrap().1;
        assert!(db_yaml.contains("analytics:XXXXXXXXXX@"), "{db_yaml}");
        assert_eq!(files.keys().filter(|k| k.contains("/charts/")).count(), 3);
        assert_eq!(files.keys().filter(|k| k.contains("/datasets/")).count(), 2);
        let dash_yaml = files.iter().find(|(k, _)| k.contains("/dashboards/")).unwrap().1;
        // Quoted: PyYAML (Superset's reader) would not read every digit-led scalar as text.
        assert!(dash_yaml.contains("uuid: \"6129893b-3201-459d-94ff-798229433b5e\"\n"), "{dash_yaml}");
        let (s, body) = api.get("/api/v1/chart/export/?q=!(999999)").await;
        assert_eq!((s, body), (StatusCode::NOT_FOUND, json!({"message": "Not found"})));

        // Our own export imports back (assets endpoint, field `bundle`).
        let resp = api.c.get(format!("{}/api/v1/assets/export/", api.base)).bearer_auth(&api.token).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let bytes = resp.bytes().await.unwrap().to_vec();
        let (s, body) = upload(&api, "/api/v1/assets/import/", "bundle", bytes, &[]).await;
        assert_eq!((s, body), (StatusCode::OK, json!({"message": "OK"})));
        let (_, l) = api.get("/api/v1/chart/").await;
        assert_eq!(l["count"], 3);

        server.stop().await.unwrap();
        assert!(!api.seen.borrow().contains(SECRET_PASSWORD));
        assert!(!server.logs().contains(SECRET_PASSWORD));
    }
}
