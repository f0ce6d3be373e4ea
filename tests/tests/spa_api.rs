//! The endpoints Superset's single-page app calls beyond the catalog: explore's initial state,
//! explore form data and dashboard filter state (round trips, owners, tabs, malformed input),
//! permalinks, the client event log with recent activity, and the small page-load endpoints.

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, both_backends};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Creates `name` (password `<name>-pass-123`) with the given built-in roles.
async fn user_with_roles(admin: &Api, name: &str, roles: &[&str]) -> Api {
    let mut ids = Vec::new();
    for role in roles {
        let (_, found) = admin
            .get(&format!(
                "/api/v1/security/roles/?q=(filters:!((col:name,opr:eq,value:{role})))"
            ))
            .await;
        ids.push(found["result"][0]["id"].as_i64().unwrap());
    }
    let (s, user) = admin
        .post(
            "/api/v1/security/users/",
            json!({"username": name, "first_name": name, "last_name": "Tester",
                   "email": format!("{name}@example.com"), "password": format!("{name}-pass-123"),
                   "roles": ids, "active": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{user}");
    admin_login_as(admin, name).await
}

async fn admin_login_as(admin: &Api, name: &str) -> Api {
    let server_base = admin.base.clone();
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap();
    let tokens =
        liteset_tests::login(&client, &server_base, name, &format!("{name}-pass-123")).await;
    let token = tokens["access_token"].as_str().unwrap().to_owned();
    let csrf = liteset_tests::csrf(&client, &server_base, &token).await;
    Api {
        client,
        base: server_base,
        token,
        csrf,
    }
}

/// The id of a record of `resource` whose `col` equals `value`.
async fn id_of(api: &Api, resource: &str, col: &str, value: &str) -> i64 {
    let (s, r) = api
        .get(&format!(
            "/api/v1/{resource}/?q=(filters:!((col:{col},opr:eq,value:'{value}')))"
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    r["result"][0]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("{resource} {value}: {r}"))
}

both_backends! {
    async fn filter_state_round_trip_and_owners(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let (s, d) = admin
            .post("/api/v1/dashboard/", json!({"dashboard_title": "Filters", "slug": "filters"}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{d}");
        let dash = d["id"].as_i64().unwrap();
        let base = format!("/api/v1/dashboard/{dash}/filter_state");

        let v1 = json!({"NATIVE_FILTER-1": {"filterState": {"value": ["north"]}}}).to_string();
        let (s, r) = admin.post(&base, json!({"value": v1})).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let key = r["key"].as_str().unwrap().to_owned();
        assert!(key.len() >= 16, "{key}");
        let (s, r) = admin.get(&format!("{base}/{key}")).await;
        assert_eq!((s, r.clone()), (StatusCode::OK, json!({"value": v1})), "{r}");

        // A tab keeps its key across updates.
        let (s, r) = admin.post(&format!("{base}?tab_id=7"), json!({"value": v1})).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let tab_key = r["key"].as_str().unwrap().to_owned();
        let v2 = json!({"NATIVE_FILTER-1": {"filterState": {"value": ["south"]}}}).to_string();
        let (s, r) = admin.put(&format!("{base}/{tab_key}?tab_id=7"), json!({"value": v2})).await;
        assert_eq!((s, r["key"].as_str()), (StatusCode::OK, Some(tab_key.as_str())), "{r}");
        let (_, r) = admin.get(&format!("{base}/{tab_key}")).await;
        assert_eq!(r["value"], json!(v2));

        // Without a tab, an update answers with a new key holding the new value.
        let (s, r) = admin.put(&format!("{base}/{key}"), json!({"value": v2})).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let new_key = r["key"].as_str().unwrap().to_owned();
        assert_ne!(new_key, key);
        let (_, r) = admin.get(&format!("{base}/{new_key}")).await;
        assert_eq!(r["value"], json!(v2));

        // By slug too; another dashboard does not see the key.
        let (s, r) = admin.get(&format!("/api/v1/dashboard/filters/filter_state/{new_key}")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let (_, other) = admin
            .post("/api/v1/dashboard/", json!({"dashboard_title": "Other"}))
            .await;
        let other = other["id"].as_i64().unwrap();
        let (s, r) = admin
            .get(&format!("/api/v1/dashboard/{other}/filter_state/{new_key}"))
            .await;
        assert_eq!((s, r), (StatusCode::NOT_FOUND, json!({"message": "Not found"})));

        // Another user who may open the dashboard (here a co-owner: a dashboard without
        // charts is its owners' alone, as in Superset's access filter) reads (keys are shared
        // links) but may not change or delete the entry.
        let gus = user_with_roles(&admin, "gus", &["Gamma"]).await;
        let (_, me) = gus.get("/api/v1/me/").await;
        let (s, r) = admin
            .put(&format!("/api/v1/dashboard/{dash}"), json!({"owners": [1, me["result"]["id"]]}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let (s, r) = gus.get(&format!("{base}/{new_key}")).await;
        assert_eq!((s, r["value"].clone()), (StatusCode::OK, json!(v2)), "{r}");
        let denied = json!({"message": "You don't have permission to modify the value."});
        let (s, r) = gus.put(&format!("{base}/{new_key}"), json!({"value": "{}"})).await;
        assert_eq!((s, r), (StatusCode::FORBIDDEN, denied.clone()));
        let (s, r) = gus.delete(&format!("{base}/{new_key}")).await;
        assert_eq!((s, r), (StatusCode::FORBIDDEN, denied));
        let (_, r) = admin.get(&format!("{base}/{new_key}")).await;
        assert_eq!(r["value"], json!(v2), "unchanged");

        // Malformed input.
        let (s, r) = admin.post(&base, json!({"value": "{not json"})).await;
        assert_eq!((s, r), (StatusCode::BAD_REQUEST, json!({"message": {"value": ["JSON not valid"]}})));
        let (s, r) = admin.post(&base, json!({})).await;
        assert_eq!((s, r), (StatusCode::BAD_REQUEST, json!({"message": {"value": ["Missing data for required field."]}})));
        let (s, r) = admin.post(&base, json!({"value": 3})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
        let big = format!("\"{}\"", "x".repeat(3 * 1024 * 1024));
        let (s, r) = admin.post(&base, json!({"value": big})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
        let (s, r) = admin
            .post("/api/v1/dashboard/99999/filter_state", json!({"value": "{}"}))
            .await;
        assert_eq!((s, r), (StatusCode::NOT_FOUND, json!({"message": "Resource was not found."})));

        // Delete → gone.
        let (s, r) = admin.delete(&format!("{base}/{new_key}")).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"message": "Deleted successfully"})));
        let (s, r) = admin.get(&format!("{base}/{new_key}")).await;
        assert_eq!((s, r), (StatusCode::NOT_FOUND, json!({"message": "Not found"})));
        let (s, _) = admin.delete(&format!("{base}/{new_key}")).await;
        assert_eq!(s, StatusCode::NOT_FOUND);

        // Dashboard permalinks.
        let state = json!({"dataMask": {"NATIVE_FILTER-1": {"filterState": {"value": ["north"]}}},
                           "activeTabs": ["TAB-1"], "urlParams": [["standalone", "1"]], "anchor": "CHART-1"});
        let (s, r) = admin.post(&format!("/api/v1/dashboard/{dash}/permalink"), state.clone()).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let pkey = r["key"].as_str().unwrap().to_owned();
        assert!(r["url"].as_str().unwrap().ends_with(&format!("/superset/dashboard/p/{pkey}/")), "{r}");
        let (s, r) = gus.get(&format!("/api/v1/dashboard/permalink/{pkey}")).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["state"], state);
        let (_, d) = admin.get(&format!("/api/v1/dashboard/{dash}")).await;
        assert_eq!(r["dashboardId"], d["result"]["uuid"]);
        let (s, _) = admin.get("/api/v1/dashboard/permalink/nope").await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (s, r) = admin
            .post(&format!("/api/v1/dashboard/{dash}/permalink"), json!({"activeTabs": "TAB-1"}))
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    }

    async fn log_and_recent_activity(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let (_, d) = admin
            .post("/api/v1/dashboard/", json!({"dashboard_title": "Visited", "slug": "visited"}))
            .await;
        let dash = d["id"].as_i64().unwrap();

        let (s, r) = admin.get("/api/v1/log/recent_activity/?q=(page_size:24,distinct:!f)").await;
        assert_eq!((s, r), (StatusCode::OK, json!({"result": []})));

        // The app's beacon: multipart form data with the events as JSON text.
        let events = json!([
            {"event_name": "mount_dashboard", "source": "dashboard", "source_id": dash, "ts": 1},
            {"event_name": "spa_navigation", "path": "/superset/welcome/"},
        ]);
        let form = reqwest::multipart::Form::new().text("events", events.to_string());
        let resp = admin
            .request(reqwest::Method::POST, &format!("/superset/log/?explode=events&dashboard_id={dash}"))
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.text().await.unwrap(), "");
        // The fallback form post, a JSON body, text, and garbage are all accepted.
        let resp = admin
            .request(reqwest::Method::POST, &format!("/superset/log/?explode=events&dashboard_id={dash}"))
            .form(&[("events", events.to_string())])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        for body in ["{\"events\": []}", "not json at all", ""] {
            let resp = admin
                .request(reqwest::Method::POST, "/superset/log/?explode=events")
                .header("content-type", "text/plain")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::OK, "{body}");
        }
        let (s, r) = admin.post("/api/v1/log/", json!({"events": events})).await;
        assert_eq!(s, StatusCode::OK, "{r}");

        let (s, r) = admin.get("/api/v1/log/recent_activity/?q=(page_size:24,distinct:!f)").await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let items = r["result"].as_array().unwrap();
        // One `mount_dashboard` from each of the beacon, the form post and the REST call.
        assert_eq!(items.len(), 3, "{r}");
        assert_eq!(items[0]["item_type"], "dashboard");
        assert_eq!(items[0]["item_title"], "Visited");
        assert_eq!(items[0]["item_url"], "/superset/dashboard/visited/");
        assert_eq!(items[0]["action"], "log");
        assert!(items[0]["time"].as_f64().unwrap() > 1.6e12, "{r}");
        let (_, r) = admin.get("/api/v1/log/recent_activity/").await;
        assert_eq!(r["result"].as_array().unwrap().len(), 1, "distinct by default: {r}");
        let (s, r) = admin.get("/api/v1/log/recent_activity/?q=(page:'x')").await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");

        // Another user's activity is their own.
        let gus = user_with_roles(&admin, "gus", &["Gamma"]).await;
        let (s, r) = gus.get("/api/v1/log/recent_activity/").await;
        assert_eq!((s, r), (StatusCode::OK, json!({"result": []})));
    }
}

/// Explore on the embedded examples (SQLite metadata): the initial state, form data, permalinks.
#[tokio::test]
async fn explore_state_form_data_and_permalinks() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let chart = id_of(&admin, "chart", "slice_name", "Quarterly units by channel").await;
    let dataset = id_of(&admin, "dataset", "table_name", "sales").await;
    let (_, c) = admin.get(&format!("/api/v1/chart/{chart}")).await;
    let chart_ds = c["result"]["datasource_id"].as_i64().unwrap_or(dataset);

    // A saved chart: its slice, its dataset, its form data.
    let (s, r) = admin
        .get(&format!("/api/v1/explore/?slice_id={chart}"))
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let res = &r["result"];
    assert_eq!(res["slice"]["slice_id"], chart);
    assert_eq!(res["slice"]["slice_name"], "Quarterly units by channel");
    assert_eq!(res["form_data"]["slice_id"], chart);
    assert_eq!(res["form_data"]["viz_type"], "echarts_timeseries_bar");
    assert_eq!(res["form_data"]["datasource"], format!("{chart_ds}__table"));
    assert_eq!(
        res["form_data"]["url_params"],
        json!({"slice_id": chart.to_string()})
    );
    assert_eq!(res["dataset"]["id"], chart_ds);
    assert_eq!(res["dataset"]["uid"], format!("{chart_ds}__table"));
    assert_eq!(res["dataset"]["type"], "table");
    assert_eq!(res["dataset"]["database"]["parameters"], json!({}));
    assert!(
        res["dataset"]["columns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["column_name"] == "order_date" || c["column_name"] == "month"),
        "{r}"
    );
    assert_eq!(res["message"], Value::Null);
    assert!(
        res["metadata"]["dashboards"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["dashboard_title"] == "Sales overview"),
        "{r}"
    );

    // A dataset alone.
    let (s, r) = admin
        .get(&format!(
            "/api/v1/explore/?datasource_id={dataset}&datasource_type=table"
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"]["slice"], Value::Null);
    assert_eq!(r["result"]["dataset"]["table_name"], "sales");
    assert_eq!(
        r["result"]["form_data"]["datasource"],
        format!("{dataset}__table")
    );

    // Nothing at all, or a missing dataset: Superset's placeholder dataset.
    let (s, r) = admin.get("/api/v1/explore/").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"]["dataset"]["name"], "[Missing Dataset]");
    assert_eq!(r["result"]["form_data"]["datasource"], "None__table");
    let (s, r) = admin
        .get("/api/v1/explore/?datasource_id=99999&datasource_type=table")
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"]["dataset"]["columns"], json!([]));

    // Form data round trip.
    let fd =
        json!({"viz_type": "table", "datasource": format!("{dataset}__table"), "row_limit": 7})
            .to_string();
    let body = json!({"datasource_id": dataset, "datasource_type": "table", "form_data": fd});
    let (s, r) = admin
        .post("/api/v1/explore/form_data?tab_id=3", body.clone())
        .await;
    assert_eq!(s, StatusCode::CREATED, "{r}");
    let key = r["key"].as_str().unwrap().to_owned();
    let (s, r) = admin.get(&format!("/api/v1/explore/form_data/{key}")).await;
    assert_eq!((s, r), (StatusCode::OK, json!({"form_data": fd})));
    // The explore page opens it.
    let (_, r) = admin
        .get(&format!("/api/v1/explore/?form_data_key={key}"))
        .await;
    assert_eq!(r["result"]["form_data"]["row_limit"], 7, "{r}");
    assert_eq!(r["result"]["dataset"]["id"], dataset);
    // Same tab: same key, new value.
    let fd2 =
        json!({"viz_type": "table", "datasource": format!("{dataset}__table"), "row_limit": 9})
            .to_string();
    let body2 = json!({"datasource_id": dataset, "datasource_type": "table", "form_data": fd2});
    let (s, r) = admin
        .put(
            &format!("/api/v1/explore/form_data/{key}?tab_id=3"),
            body2.clone(),
        )
        .await;
    assert_eq!((s, r), (StatusCode::OK, json!({"key": key})));
    let (_, r) = admin.get(&format!("/api/v1/explore/form_data/{key}")).await;
    assert_eq!(r["form_data"], json!(fd2));
    // A stale key: explore falls back to the chart with Superset's message.
    let (_, r) = admin
        .get(&format!(
            "/api/v1/explore/?form_data_key=stale&slice_id={chart}"
        ))
        .await;
    assert_eq!(
        r["result"]["message"],
        "Form data not found in cache, reverting to chart metadata."
    );
    assert_eq!(r["result"]["slice"]["slice_id"], chart);

    // Another admin reads the link but may not change it.
    let ada = user_with_roles(&admin, "ada", &["Admin"]).await;
    let (s, _) = ada.get(&format!("/api/v1/explore/form_data/{key}")).await;
    assert_eq!(s, StatusCode::OK);
    let denied = json!({"message": "You don't have permission to modify the value."});
    let (s, r) = ada
        .put(&format!("/api/v1/explore/form_data/{key}"), body.clone())
        .await;
    assert_eq!((s, r), (StatusCode::FORBIDDEN, denied.clone()));
    let (s, r) = ada
        .delete(&format!("/api/v1/explore/form_data/{key}"))
        .await;
    assert_eq!((s, r), (StatusCode::FORBIDDEN, denied.clone()));
    // A Gamma user without access to the dataset may not even read it.
    let gus = user_with_roles(&admin, "gus", &["Gamma"]).await;
    let (s, r) = gus.get(&format!("/api/v1/explore/form_data/{key}")).await;
    assert_eq!((s, r), (StatusCode::FORBIDDEN, denied));
    let (s, r) = gus
        .get(&format!(
            "/api/v1/explore/?datasource_id={dataset}&datasource_type=table"
        ))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
    assert_eq!(r["error_type"], "DATASOURCE_SECURITY_ACCESS_ERROR", "{r}");

    // Malformed input.
    let (s, r) = admin
        .post(
            "/api/v1/explore/form_data",
            json!({"datasource_id": dataset, "datasource_type": "table", "form_data": "{nope"}),
        )
        .await;
    assert_eq!(
        (s, r),
        (
            StatusCode::BAD_REQUEST,
            json!({"message": ["JSON not valid"]})
        )
    );
    let (s, r) = admin
        .post(
            "/api/v1/explore/form_data",
            json!({"datasource_type": "table", "form_data": "{}"}),
        )
        .await;
    assert_eq!(
        (s, r),
        (
            StatusCode::BAD_REQUEST,
            json!({"message": {"datasource_id": ["Missing data for required field."]}})
        )
    );
    let (s, r) = admin
        .post(
            "/api/v1/explore/form_data",
            json!({"datasource_id": dataset, "datasource_type": "cube", "form_data": "{}"}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    let (s, r) = admin
        .post(
            "/api/v1/explore/form_data",
            json!({"datasource_id": 99999, "datasource_type": "table", "form_data": "{}"}),
        )
        .await;
    assert_eq!(
        (s, r),
        (
            StatusCode::NOT_FOUND,
            json!({"message": "Resource was not found."})
        )
    );
    let resp = admin
        .request(reqwest::Method::POST, "/api/v1/explore/form_data")
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

    // Delete → gone.
    let (s, r) = admin
        .delete(&format!("/api/v1/explore/form_data/{key}?tab_id=3"))
        .await;
    assert_eq!(
        (s, r),
        (StatusCode::OK, json!({"message": "Deleted successfully"}))
    );
    let (s, r) = admin.get(&format!("/api/v1/explore/form_data/{key}")).await;
    assert_eq!(
        (s, r),
        (StatusCode::NOT_FOUND, json!({"message": "Not found"}))
    );

    // Explore permalinks, and explore opening one.
    let state = json!({"formData": {"datasource": format!("{dataset}__table"), "viz_type": "table", "row_limit": 5},
                       "urlParams": [["standalone", "true"]]});
    let (s, r) = admin.post("/api/v1/explore/permalink", state.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{r}");
    let pkey = r["key"].as_str().unwrap().to_owned();
    assert!(
        r["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/superset/explore/p/{pkey}/")),
        "{r}"
    );
    let (s, r) = admin
        .get(&format!("/api/v1/explore/permalink/{pkey}"))
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["state"], state);
    assert_eq!(r["datasourceId"], dataset);
    assert_eq!(r["datasource"], format!("{dataset}__table"));
    let (_, r) = admin
        .get(&format!("/api/v1/explore/?permalink_key={pkey}"))
        .await;
    assert_eq!(r["result"]["form_data"]["row_limit"], 5, "{r}");
    assert_eq!(
        r["result"]["form_data"]["url_params"]["standalone"], "true",
        "{r}"
    );
    let (s, r) = gus.get(&format!("/api/v1/explore/permalink/{pkey}")).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
    let (s, r) = admin
        .post("/api/v1/explore/permalink", json!({"urlParams": []}))
        .await;
    assert_eq!(
        (s, r),
        (
            StatusCode::BAD_REQUEST,
            json!({"message": {"formData": ["Missing data for required field."]}})
        )
    );
}

/// The small endpoints pages call on load.
#[tokio::test]
async fn page_load_endpoints() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, r) = admin.get("/api/v1/available_domains/").await;
    assert_eq!(
        (s, r),
        (StatusCode::OK, json!({"result": {"domains": null}}))
    );
    let (s, r) = admin.get("/superset/language_pack/en/").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(r["locale_data"]["superset"][""]["lang"], "en");
    assert_eq!(r["domain"], "superset");
    let (s, _) = admin.get("/superset/language_pack/fr/").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = admin.get("/superset/language_pack/..%2Fetc/").await;
    assert!(
        s == StatusCode::BAD_REQUEST || s == StatusCode::NOT_FOUND,
        "{s}"
    );
    for list in ["report", "tag", "css_template", "annotation_layer", "theme"] {
        let (s, r) = admin
            .get(&format!("/api/v1/{list}/?q=(page:0,page_size:25)"))
            .await;
        assert_eq!(s, StatusCode::OK, "{list}: {r}");
        assert_eq!(
            (r["count"].clone(), r["result"].clone()),
            (json!(0), json!([])),
            "{list}"
        );
    }
    let db = id_of(&admin, "database", "database_name", "examples").await;
    let (s, r) = admin
        .get(&format!("/api/v1/database/{db}/function_names/"))
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let names = r["function_names"].as_array().unwrap();
    assert!(names.iter().any(|n| n == "count"), "{r}");
    assert!(names.iter().any(|n| n == "strftime"), "sqlite's own: {r}");
    // Explore asks for a dataset table's extra metadata; SQLite has none.
    let (s, r) = admin
        .get(&format!(
            "/api/v1/database/{db}/table_metadata/extra/?name=sales&schema=main"
        ))
        .await;
    assert_eq!((s, r), (StatusCode::OK, json!({})));
    let (s, r) = admin
        .get(&format!("/api/v1/database/{db}/table_metadata/extra/"))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
    assert_eq!(r["message"]["name"][0], "Missing data for required field.");

    // Anonymous callers are refused as everywhere else.
    let anon = reqwest::Client::new();
    let resp = anon
        .get(server.url("/api/v1/available_domains/"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

/// Drill info on every dashboard load: the dataset's groupable columns and makers; a user
/// who cannot read the dataset gets 404 without a dashboard and 403 through one.
#[tokio::test]
async fn dataset_drill_info() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let dataset = id_of(&admin, "dataset", "table_name", "sales").await;
    let dash = id_of(&admin, "dashboard", "slug", "sales-overview").await;
    let (s, r) = admin
        .get(&format!(
            "/api/v1/dataset/{dataset}/drill_info/?q=(dashboard_id:{dash})"
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let res = &r["result"];
    assert_eq!(res["id"], dataset);
    assert_eq!(res["table_name"], "sales");
    let names: Vec<&str> = res["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["column_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "id",
            "order_date",
            "region",
            "product",
            "channel",
            "quantity",
            "revenue",
            "unit_revenue"
        ]
    );
    assert_eq!(
        res["columns"][0],
        json!({"column_name": "id", "verbose_name": null})
    );
    assert!(res["owners"].is_array(), "{r}");
    let created = res["created_on_humanized"].as_str().unwrap();
    assert!(created == "now" || created.ends_with(" ago"), "{created}");
    assert!(res["changed_on_humanized"].as_str().is_some(), "{r}");
    for key in ["created_by", "changed_by"] {
        let v = &res[key];
        assert!(v.is_null() || v.get("first_name").is_some(), "{key}: {r}");
    }
    // No dashboard needed for a readable dataset.
    let (s, r2) = admin
        .get(&format!("/api/v1/dataset/{dataset}/drill_info/"))
        .await;
    assert_eq!(
        (s, r2["result"]["id"].clone()),
        (StatusCode::OK, json!(dataset))
    );

    let (s, r) = admin
        .get(&format!(
            "/api/v1/dataset/{dataset}/drill_info/?q=(dashboard_id:abc)"
        ))
        .await;
    assert_eq!(
        (s, r),
        (
            StatusCode::BAD_REQUEST,
            json!({"message": "Not a valid rison schema 'abc' is not of type 'integer'"})
        )
    );
    let (s, _) = admin.get("/api/v1/dataset/99999/drill_info/").await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    let gus = user_with_roles(&admin, "gus", &["Gamma"]).await;
    let (s, r) = gus
        .get(&format!("/api/v1/dataset/{dataset}/drill_info/"))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{r}");
    let (s, r) = gus
        .get(&format!(
            "/api/v1/dataset/{dataset}/drill_info/?q=(dashboard_id:{dash})"
        ))
        .await;
    assert_eq!(
        (s, r),
        (StatusCode::FORBIDDEN, json!({"message": "Forbidden"}))
    );
    let (s, _) = gus
        .get(&format!(
            "/api/v1/dataset/{dataset}/drill_info/?q=(dashboard_id:99999)"
        ))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

both_backends! {
    async fn dashboard_colors_and_tabs(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let metadata = json!({"color_scheme": "old", "refresh_frequency": 30}).to_string();
        let (s, d) = admin
            .post("/api/v1/dashboard/", json!({"dashboard_title": "Colors", "json_metadata": metadata}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{d}");
        let dash = d["id"].as_i64().unwrap();
        let (_, before) = admin.get(&format!("/api/v1/dashboard/{dash}")).await;

        let body = json!({
            "color_namespace": "ns",
            "color_scheme": "supersetColors",
            "label_colors": {"north": "#ff0000"},
            "shared_label_colors": ["north", "south"],
            "map_label_colors": {"south": "#00ff00"},
            "color_scheme_domain": ["#ff0000", "#00ff00"],
        });
        let (s, r) = admin
            .put(&format!("/api/v1/dashboard/{dash}/colors?mark_updated=false"), body)
            .await;
        assert_eq!((s, r), (StatusCode::OK, json!({})));
        let (_, after) = admin.get(&format!("/api/v1/dashboard/{dash}")).await;
        let meta: Value =
            serde_json::from_str(after["result"]["json_metadata"].as_str().unwrap()).unwrap();
        assert_eq!(
            meta,
            json!({
                "color_scheme": "supersetColors",
                "refresh_frequency": 30,
                "label_colors": {"north": "#ff0000"},
                "shared_label_colors": ["north", "south"],
                "map_label_colors": {"south": "#00ff00"},
                "color_scheme_domain": ["#ff0000", "#00ff00"],
            })
        );
        assert_eq!(after["result"]["changed_on"], before["result"]["changed_on"], "not marked updated");

        // The legacy object form of shared_label_colors becomes a list; changed_on moves.
        let (s, _) = admin
            .put(&format!("/api/v1/dashboard/{dash}/colors"), json!({"shared_label_colors": {"a": "#000"}}))
            .await;
        assert_eq!(s, StatusCode::OK);
        let (_, later) = admin.get(&format!("/api/v1/dashboard/{dash}")).await;
        let meta: Value =
            serde_json::from_str(later["result"]["json_metadata"].as_str().unwrap()).unwrap();
        assert_eq!(meta["shared_label_colors"], json!([]));
        assert_eq!(meta["color_scheme"], "supersetColors");
        assert_ne!(later["result"]["changed_on"], before["result"]["changed_on"]);

        let (s, r) = admin
            .put(
                &format!("/api/v1/dashboard/{dash}/colors"),
                json!({"label_colors": [1], "color_scheme_domain": ["#fff", 3], "bogus": 1}),
            )
            .await;
        assert_eq!(
            (s, r),
            (
                StatusCode::BAD_REQUEST,
                json!({"message": {
                    "label_colors": ["Not a valid mapping type."],
                    "color_scheme_domain": {"1": ["Not a valid string."]},
                    "bogus": ["Unknown field."],
                }})
            )
        );
        let (s, _) = admin
            .put("/api/v1/dashboard/99999/colors", json!({"color_scheme": "x"}))
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        // Someone else's draft is out of reach (Superset's access filter: 404, not 403).
        let gus = user_with_roles(&admin, "gus", &["Alpha"]).await;
        let (s, r) = gus
            .put(&format!("/api/v1/dashboard/{dash}/colors"), json!({"color_scheme": "x"}))
            .await;
        assert_eq!((s, r), (StatusCode::NOT_FOUND, json!({"message": "Not found"})));

        // Tabs: none without a layout, an empty tree for a layout without tabs, the tree.
        let (s, r) = admin.get(&format!("/api/v1/dashboard/{dash}/tabs")).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"result": {}})));
        let position = json!({
            "DASHBOARD_VERSION_KEY": "v2",
            "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["TABS-1"]},
            "TABS-1": {"type": "TABS", "id": "TABS-1", "children": ["TAB-a", "TAB-b"], "parents": ["ROOT_ID"]},
            "TAB-a": {"type": "TAB", "id": "TAB-a", "children": ["TABS-2"], "meta": {"text": "Overview"}, "parents": ["ROOT_ID", "TABS-1"]},
            "TAB-b": {"type": "TAB", "id": "TAB-b", "children": [], "meta": {"text": "Details"}, "parents": ["ROOT_ID", "TABS-1"]},
            "TABS-2": {"type": "TABS", "id": "TABS-2", "children": ["TAB-c"], "parents": ["ROOT_ID", "TABS-1", "TAB-a"]},
            "TAB-c": {"type": "TAB", "id": "TAB-c", "children": [], "meta": {"text": "Inner"}, "parents": ["ROOT_ID", "TABS-1", "TAB-a", "TABS-2"]},
        });
        let (s, r) = admin
            .put(&format!("/api/v1/dashboard/{dash}"), json!({"slug": "tabbed", "position_json": position.to_string()}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let (s, r) = admin.get("/api/v1/dashboard/tabbed/tabs").await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(
            r,
            json!({"result": {
                "all_tabs": {"TAB-a": "Overview", "TAB-b": "Details", "TAB-c": "Inner"},
                "tab_tree": [
                    {"value": "TAB-a", "title": "Overview", "parents": ["ROOT_ID", "TABS-1"],
                     "children": [{"value": "TAB-c", "title": "Inner", "children": [],
                                   "parents": ["ROOT_ID", "TABS-1", "TAB-a", "TABS-2"]}]},
                    {"value": "TAB-b", "title": "Details", "children": [], "parents": ["ROOT_ID", "TABS-1"]},
                ],
            }})
        );
        let flat = json!({
            "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
            "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": []},
        });
        admin
            .put(&format!("/api/v1/dashboard/{dash}"), json!({"position_json": flat.to_string()}))
            .await;
        let (s, r) = admin.get(&format!("/api/v1/dashboard/{dash}/tabs")).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"result": {"all_tabs": {}, "tab_tree": []}})));
        let (s, _) = admin.get("/api/v1/dashboard/nope/tabs").await;
        assert_eq!(s, StatusCode::NOT_FOUND);
    }
}

/// Explore's time filter label: a rison string or a list of ranges with shifts.
#[tokio::test]
async fn time_range_resolution() {
    let server = TestServer::builder().start().await.unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, r) = admin.get("/api/v1/time_range/?q=%27No%20filter%27").await;
    assert_eq!(
        (s, r),
        (
            StatusCode::OK,
            json!({"result": [{"since": "", "until": "", "timeRange": "No filter", "shift": null}]})
        )
    );
    let (s, r) = admin
        .get("/api/v1/time_range/?q=%272021-01-01%20%3A%202021-02-01%27")
        .await;
    assert_eq!(
        (s, r["result"][0].clone()),
        (
            StatusCode::OK,
            json!({"since": "2021-01-01T00:00:00", "until": "2021-02-01T00:00:00",
                   "timeRange": "2021-01-01 : 2021-02-01", "shift": null})
        )
    );
    let (s, r) = admin
        .get("/api/v1/time_range/?q=!((timeRange:%27Last%20week%27),(timeRange:%272021-01-01%20%3A%202021-02-01%27,shift:%271%20year%20ago%27))")
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let today = chrono::Utc::now().date_naive();
    let week_ago = today - chrono::Duration::days(7);
    assert_eq!(
        r["result"][0],
        json!({"since": format!("{week_ago}T00:00:00"), "until": format!("{today}T00:00:00"),
               "timeRange": "Last week", "shift": null})
    );
    assert_eq!(
        r["result"][1],
        json!({"since": "2020-01-01T00:00:00", "until": "2020-02-01T00:00:00",
               "timeRange": "2021-01-01 : 2021-02-01", "shift": "1 year ago"})
    );
    let (s, r) = admin
        .get("/api/v1/time_range/?q=%27foo%20%3A%202021-01-01%27")
        .await;
    assert_eq!(
        (s, r),
        (
            StatusCode::BAD_REQUEST,
            json!({"message": "Unexpected time range: Cannot parse time string [foo]"})
        )
    );
    let (s, r) = admin
        .get("/api/v1/time_range/?q=%272022-01-01%20%3A%202021-01-01%27")
        .await;
    assert_eq!(
        (s, r),
        (
            StatusCode::BAD_REQUEST,
            json!({"message": "Unexpected time range: From date cannot be larger than to date"})
        )
    );
    let (s, r) = admin.get("/api/v1/time_range/?q=5").await;
    assert_eq!(
        (s, r),
        (
            StatusCode::BAD_REQUEST,
            json!({"message": "Not a valid rison schema 5 is not of type 'string', 'array'"})
        )
    );
}

/// The connection dialog's engine list: the engine specs Liteset speaks, in Superset's shape
/// and order (preferred ones first, then by name).
#[tokio::test]
async fn database_available_engines() {
    let server = TestServer::builder().start().await.unwrap();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, r) = admin.get("/api/v1/database/available/").await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let dbs = r["databases"].as_array().unwrap();
    let names: Vec<&str> = dbs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "PostgreSQL",
            "MySQL",
            "SQLite",
            "ClickHouse",
            "ClickHouse Connect (Superset)",
            "MariaDB"
        ]
    );
    let pg = &dbs[0];
    assert_eq!(pg["engine"], "postgresql");
    assert_eq!(pg["available_drivers"], json!(["psycopg2"]));
    assert_eq!(pg["default_driver"], "psycopg2");
    assert_eq!(pg["preferred"], true);
    assert_eq!(
        pg["sqlalchemy_uri_placeholder"],
        "postgresql://user:password@host:port/dbname[?key=value&key=value...]"
    );
    assert_eq!(
        pg["parameters"]["required"],
        json!(["database", "host", "port", "username"])
    );
    assert_eq!(
        pg["parameters"]["properties"]["port"],
        json!({"type": "integer", "description": "Database port", "minimum": 0, "maximum": 65536})
    );
    assert_eq!(
        pg["engine_information"],
        json!({"supports_file_upload": true, "disable_ssh_tunneling": false,
               "supports_dynamic_catalog": true, "supports_oauth2": false})
    );
    let lite = &dbs[2];
    assert_eq!(lite["engine"], "sqlite");
    assert_eq!(lite["available_drivers"], json!(["pysqlite"]));
    assert_eq!(lite["engine_information"]["disable_ssh_tunneling"], true);
    assert!(
        lite.get("parameters").is_none() && lite.get("default_driver").is_none(),
        "{lite}"
    );
    let mysql = &dbs[1];
    assert_eq!(mysql["engine"], "mysql");
    assert_eq!(mysql["default_driver"], "mysqldb");
    assert_eq!(mysql["parameters"], pg["parameters"]);
    let ch = &dbs[4];
    assert_eq!(ch["engine"], "clickhousedb");
    assert_eq!(ch["default_driver"], "connect");
    assert_eq!(ch["preferred"], false);
    assert_eq!(ch["parameters"]["required"], json!(["host"]));
    assert_eq!(
        ch["parameters"]["properties"]["port"],
        json!({"type": "integer", "nullable": true, "description": "Database port",
               "minimum": 0, "maximum": 65535})
    );
    assert_eq!(ch["engine_information"]["supports_file_upload"], false);
    assert!(dbs[3].get("parameters").is_none(), "{}", dbs[3]);
    assert_eq!(dbs[5]["engine"], "mariadb");

    let anon = reqwest::Client::new();
    let resp = anon
        .get(server.url("/api/v1/database/available/"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

/// A fresh PostgreSQL analytics database with `sales(region, amount)`; its URL.
async fn sales_database() -> String {
    let url = liteset_tests::pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE public.sales (region text, amount int); \
             INSERT INTO public.sales VALUES ('north', 10), ('south', 20), ('north', 5);",
        )
        .await
        .unwrap();
    url
}

/// A dashboard's stored `json_metadata`, parsed.
async fn stored_metadata(api: &Api, dash: i64) -> Value {
    let (_, d) = api.get(&format!("/api/v1/dashboard/{dash}")).await;
    serde_json::from_str(d["result"]["json_metadata"].as_str().unwrap()).unwrap()
}

/// The ids of a dashboard's charts, sorted.
async fn linked_charts(api: &Api, dash: i64) -> Vec<i64> {
    let (_, c) = api.get(&format!("/api/v1/dashboard/{dash}/charts")).await;
    let mut ids: Vec<i64> = c["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    ids.sort();
    ids
}

/// The SIP-40 `(error_type, level, extra)` of each error of a body.
fn problems(body: &Value) -> Vec<(String, String, Value)> {
    body["errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors: {body}"))
        .iter()
        .map(|e| {
            let mut extra = e["extra"].clone();
            extra.as_object_mut().map(|m| m.remove("issue_codes"));
            (
                e["error_type"].as_str().unwrap().to_owned(),
                e["level"].as_str().unwrap().to_owned(),
                extra,
            )
        })
        .collect()
}

both_backends! {
    /// The PostgreSQL connection form of Superset's database dialog: each field checked as it
    /// is typed (`validate_parameters`), the connection created from the parameters, shown
    /// back with the password masked, and edited with the mask standing for the password.
    async fn database_connection_form(meta: Metadata) {
        let url = url::Url::parse(&sales_database().await).unwrap();
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let (host, port, db, user) = (
            url.host_str().unwrap().to_owned(),
            url.port().unwrap(),
            url.path().trim_start_matches('/').to_owned(),
            url.username().to_owned(),
        );
        let form = |params: Value| {
            json!({"engine": "postgresql", "configuration_method": "dynamic_form",
                   "driver": "psycopg2", "database_name": "Form DB",
                   "engine_information": {"supports_file_upload": true},
                   "sqlalchemy_uri_placeholder": "postgresql://user:password@host:port/dbname",
                   "extra": "{\"allows_virtual_table_explore\":true}", "expose_in_sqllab": true,
                   "parameters": params})
        };
        let check = |body: Value| {
            let admin = &admin;
            async move { admin.post("/api/v1/database/validate_parameters/", body).await }
        };

        // Nothing typed yet: every required field missing, as a warning.
        let (s, r) = check(form(json!({"host": "", "port": ""}))).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(
            problems(&r),
            vec![("CONNECTION_MISSING_PARAMETERS_ERROR".into(), "warning".into(),
                  json!({"missing": ["database", "host", "port", "username"]}))]
        );
        assert_eq!(r["errors"][0]["message"], "One or more parameters are missing: database, host, port, username");
        assert_eq!(r["errors"][0]["extra"]["issue_codes"][0]["code"], 1018, "{r}");
        // A host that does not resolve; a port that is not a number; a closed port.
        let (s, r) = check(form(json!({"host": "no-such-host.invalid", "port": "5432", "database": db, "username": user}))).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(problems(&r), vec![("CONNECTION_INVALID_HOSTNAME_ERROR".into(), "error".into(), json!({"invalid": ["host"]}))]);
        let (s, r) = check(form(json!({"host": host, "port": "54x", "database": db, "username": user}))).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(
            problems(&r).iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["CONNECTION_INVALID_PORT_ERROR", "CONNECTION_INVALID_PORT_ERROR"]
        );
        let (s, r) = check(form(json!({"host": host, "port": 1, "database": db, "username": user}))).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(problems(&r), vec![("CONNECTION_PORT_CLOSED_ERROR".into(), "error".into(), json!({"invalid": ["port"]}))]);
        // Missing fields and a bad host together.
        let (_, r) = check(form(json!({"host": "no-such-host.invalid"}))).await;
        assert_eq!(
            problems(&r).iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
            ["CONNECTION_MISSING_PARAMETERS_ERROR", "CONNECTION_INVALID_HOSTNAME_ERROR"]
        );
        // The body itself malformed, and an engine without a form.
        let (s, r) = check(json!({})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(
            problems(&r),
            vec![("INVALID_PAYLOAD_SCHEMA_ERROR".into(), "error".into(), json!({"invalid": ["engine"]})),
                 ("INVALID_PAYLOAD_SCHEMA_ERROR".into(), "error".into(), json!({"invalid": ["configuration_method"]}))]
        );
        let (s, r) = check(json!({"engine": "sqlite", "configuration_method": "dynamic_form"})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(r["errors"][0]["message"], "Engine \"sqlite\" cannot be configured through parameters.");
        // The database does not exist: the connection itself fails (400, the engine's error).
        let (s, r) = check(form(json!({"host": host, "port": port.to_string(), "database": "no_such_db_x", "username": user}))).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
        assert_eq!(r["errors"][0]["error_type"], "CONNECTION_UNKNOWN_DATABASE_ERROR", "{r}");
        // Everything right.
        let good = json!({"host": host, "port": port.to_string(), "database": db, "username": user,
                          "password": "pw-Form-7", "query": {"application_name": "liteset"}});
        let (s, r) = check(form(good.clone())).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"message": "OK"})));

        // Connect: the URI is built from the parameters, the password sealed and masked.
        let (s, r) = admin.post("/api/v1/database/", form(good.clone())).await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let id = r["id"].as_i64().unwrap();
        let masked = format!("postgresql+psycopg2://{user}:XXXXXXXXXX@{host}:{port}/{db}?application_name=liteset");
        assert_eq!(r["result"]["sqlalchemy_uri"], masked, "{r}");
        assert_eq!(r["result"]["configuration_method"], "dynamic_form", "{r}");
        let shown = json!({"username": user, "password": "XXXXXXXXXX", "host": host, "port": port,
                           "database": db, "query": {"application_name": "liteset"}, "encryption": false});
        assert_eq!(r["result"]["parameters"], shown, "{r}");
        assert!(!r.to_string().contains("pw-Form-7"), "{r}");
        let (s, c) = admin.get(&format!("/api/v1/database/{id}/connection")).await;
        assert_eq!(s, StatusCode::OK, "{c}");
        assert_eq!(c["result"]["parameters"], shown, "{c}");
        assert_eq!(c["result"]["configuration_method"], "dynamic_form");
        assert_eq!(c["result"]["parameters_schema"]["required"], json!(["database", "host", "port", "username"]));
        assert!(!c.to_string().contains("pw-Form-7"), "{c}");
        let (_, g) = admin.get(&format!("/api/v1/database/{id}")).await;
        assert_eq!(g["result"]["configuration_method"], "dynamic_form", "{g}");
        assert_eq!(g["result"]["backend"], "postgresql", "{g}");
        // The dialog sent `extra`; a database created without one gets Superset's default,
        // which SQL Lab's database list parses.
        let (s, bare) = admin
            .post("/api/v1/database/", json!({"database_name": "Bare", "sqlalchemy_uri": url.as_str()}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{bare}");
        let (_, list) = admin.get("/api/v1/database/?q=(filters:!((col:database_name,opr:ct,value:Bare)))").await;
        assert_eq!(
            serde_json::from_str::<Value>(list["result"][0]["extra"].as_str().unwrap()).unwrap(),
            json!({"metadata_params": {}, "engine_params": {}, "metadata_cache_timeout": {},
                   "schemas_allowed_for_file_upload": []}),
            "{list}"
        );

        // Edit through the form: the mask keeps the stored password; the connection works.
        let mut edited = good.clone();
        edited["password"] = json!("XXXXXXXXXX");
        edited["encryption"] = json!(false);
        let (s, r) = check(json!({"id": id, "engine": "postgresql", "configuration_method": "dynamic_form", "parameters": edited})).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"message": "OK"})));
        edited["query"] = json!({"application_name": "edited"});
        let (s, r) = admin
            .put(&format!("/api/v1/database/{id}"), json!({"engine": "postgresql", "configuration_method": "dynamic_form", "parameters": edited, "database_name": "Form DB 2"}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"]["parameters"]["query"], json!({"application_name": "edited"}), "{r}");
        assert_eq!(r["result"]["parameters"]["password"], "XXXXXXXXXX", "{r}");
        let (s, schemas) = admin.get(&format!("/api/v1/database/{id}/schemas/")).await;
        assert_eq!(s, StatusCode::OK, "{schemas}");
        // The mask is no key to another server's door, however the other account is spelled,
        // nor in the hands of someone who may not change connections.
        let other_host = if host == "localhost" { "127.0.0.1" } else { "localhost" };
        for (key, value) in [("username", json!("someone_else")), ("host", json!(other_host)),
                             ("username", json!(format!("{user} ")))] {
            let mut other = edited.clone();
            other[key] = value.clone();
            let (s, r) = check(json!({"id": id, "engine": "postgresql", "configuration_method": "dynamic_form", "parameters": other})).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{key}={value}: {r}");
            assert!(r["message"]["sqlalchemy_uri"].is_array(), "{key}={value}: {r}");
        }
        // Another port is probed first (closed here), never tried with the stored password.
        let mut other = edited.clone();
        other["port"] = json!(port as i64 + 1);
        let (s, r) = check(json!({"id": id, "engine": "postgresql", "configuration_method": "dynamic_form", "parameters": other})).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        let gamma = user_with_roles(&admin, "gform", &["Gamma"]).await;
        let (s, r) = gamma
            .post("/api/v1/database/validate_parameters/", json!({"id": id, "engine": "postgresql", "configuration_method": "dynamic_form", "parameters": edited.clone()}))
            .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
        let mut elsewhere = edited.clone();
        elsewhere["host"] = json!("localhost.localdomain");
        elsewhere["username"] = json!("someone_else");
        let (s, r) = admin
            .put(&format!("/api/v1/database/{id}"), json!({"engine": "postgresql", "configuration_method": "dynamic_form", "parameters": elsewhere}))
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        // Malformed form bodies.
        for (body, field) in [
            (json!({"database_name": "x", "configuration_method": "dynamic_form", "parameters": good.clone()}), "_schema"),
            (json!({"database_name": "x", "configuration_method": "dynamic_form", "engine": "postgresql", "parameters": "h"}), "parameters"),
            (json!({"database_name": "x", "configuration_method": "dynamic_form", "engine": "postgresql", "parameters": {"host": host, "port": 99999, "database": db, "username": user}}), "port"),
            (json!({"database_name": "x", "configuration_method": "form", "sqlalchemy_uri": url.as_str()}), "configuration_method"),
        ] {
            let (s, r) = admin.post("/api/v1/database/", body.clone()).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {r}");
            assert!(r["message"][field].is_array(), "{body}: {r}");
        }
    }

    /// Native filters saved from the dashboard's filter dialog (`PUT /dashboard/<pk>/filters`)
    /// and a layout saved from edit mode, which decides the dashboard's charts.
    async fn dashboard_filters_and_layout(meta: Metadata) {
        let url = sales_database().await;
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let (_, db) = admin.post("/api/v1/database/", json!({"database_name": "wh", "sqlalchemy_uri": url})).await;
        let (s, ds) = admin.post("/api/v1/dataset/", json!({"database": db["id"], "schema": "public", "table_name": "sales"})).await;
        assert_eq!(s, StatusCode::CREATED, "{ds}");
        let ds = ds["id"].as_i64().unwrap();
        let mut charts = Vec::new();
        for name in ["One", "Two"] {
            let (s, c) = admin
                .post("/api/v1/chart/", json!({"slice_name": name, "viz_type": "table", "datasource_id": ds, "datasource_type": "table"}))
                .await;
            assert_eq!(s, StatusCode::CREATED, "{c}");
            charts.push(c["id"].as_i64().unwrap());
        }
        let metadata = json!({"color_scheme": "x", "native_filter_configuration": [
            {"id": "NATIVE_FILTER-old", "name": "Old", "type": "NATIVE_FILTER"}]});
        let (s, d) = admin
            .post("/api/v1/dashboard/", json!({"dashboard_title": "Flows", "json_metadata": metadata.to_string()}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{d}");
        let dash = d["id"].as_i64().unwrap();

        // The dialog adds a value filter on `region`.
        let region = json!({"id": "NATIVE_FILTER-r1", "name": "Region", "filterType": "filter_select",
            "type": "NATIVE_FILTER", "targets": [{"datasetId": ds, "column": {"name": "region"}}],
            "controlValues": {"multiSelect": true}, "defaultDataMask": {"extraFormData": {}, "filterState": {}},
            "cascadeParentIds": [], "scope": {"rootPath": ["ROOT_ID"], "excluded": []}, "description": ""});
        let (s, r) = admin
            .put(&format!("/api/v1/dashboard/{dash}/filters"), json!({"modified": [region.clone()], "deleted": [], "reordered": []}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"][1], region, "{r}");
        assert_eq!(r["result"].as_array().unwrap().len(), 2, "{r}");
        let md = stored_metadata(&admin, dash).await;
        assert_eq!(md["native_filter_configuration"], r["result"], "{md}");
        assert_eq!(md["color_scheme"], "x", "the rest of the metadata is kept: {md}");
        // Renamed, the old one deleted, a divider added first.
        let mut renamed = region.clone();
        renamed["name"] = json!("Area");
        let divider = json!({"id": "NATIVE_FILTER_DIVIDER-d", "type": "DIVIDER", "title": "T", "description": "",
                              "scope": {"rootPath": ["ROOT_ID"], "excluded": []}});
        let (s, r) = admin
            .put(&format!("/api/v1/dashboard/{dash}/filters"),
                 json!({"modified": [renamed.clone(), divider.clone()], "deleted": ["NATIVE_FILTER-old"],
                        "reordered": ["NATIVE_FILTER_DIVIDER-d", "NATIVE_FILTER-r1"]}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"], json!([divider, renamed]), "{r}");
        assert_eq!(stored_metadata(&admin, dash).await["native_filter_configuration"], r["result"]);
        // Malformed bodies change nothing.
        for body in [
            json!({"modified": null}),
            json!({"deleted": [1]}),
            json!({"modified": ["x"]}),
            json!({"modified": [{"name": "no id"}]}),
            json!({"other": []}),
            json!([]),
        ] {
            let (s, e) = admin.put(&format!("/api/v1/dashboard/{dash}/filters"), body.clone()).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {e}");
            assert!(e["message"].is_object(), "{body}: {e}");
        }
        assert_eq!(stored_metadata(&admin, dash).await["native_filter_configuration"], r["result"]);
        let (s, _) = admin.put("/api/v1/dashboard/999999/filters", json!({"modified": []})).await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        // Someone who does not own it may not change its filters.
        let gamma = user_with_roles(&admin, "gfilter", &["Gamma"]).await;
        let (s, e) = gamma.put(&format!("/api/v1/dashboard/{dash}/filters"), json!({"deleted": ["NATIVE_FILTER-r1"]})).await;
        assert!(s == StatusCode::FORBIDDEN || s == StatusCode::NOT_FOUND, "{s} {e}");
        assert_eq!(stored_metadata(&admin, dash).await["native_filter_configuration"], r["result"]);

        // Edit mode: a layout with chart One, then One and Two; the dashboard's charts follow.
        let chart_entry = |id: i64| json!({"type": "CHART", "id": format!("CHART-{id}"), "children": [],
                                          "parents": ["ROOT_ID", "GRID_ID", "ROW-1"],
                                          "meta": {"chartId": id, "width": 4, "height": 50}});
        let mut positions = json!({"DASHBOARD_VERSION_KEY": "v2",
            "ROOT_ID": {"type": "ROOT", "id": "ROOT_ID", "children": ["GRID_ID"]},
            "GRID_ID": {"type": "GRID", "id": "GRID_ID", "children": ["ROW-1"], "parents": ["ROOT_ID"]},
            "ROW-1": {"type": "ROW", "id": "ROW-1", "children": [format!("CHART-{}", charts[0])], "meta": {"background": "BACKGROUND_TRANSPARENT"}},
            "MARKDOWN-1": {"type": "MARKDOWN", "id": "MARKDOWN-1", "children": [], "meta": {"code": "# Hi", "width": 4, "height": 50}}});
        positions[format!("CHART-{}", charts[0])] = chart_entry(charts[0]);
        let mut md = stored_metadata(&admin, dash).await;
        md["positions"] = positions.clone();
        let (s, r) = admin
            .put(&format!("/api/v1/dashboard/{dash}"), json!({"dashboard_title": "Flows!", "json_metadata": md.to_string()}))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(linked_charts(&admin, dash).await, vec![charts[0]]);
        let (_, d) = admin.get(&format!("/api/v1/dashboard/{dash}")).await;
        let layout: Value = serde_json::from_str(d["result"]["position_json"].as_str().unwrap()).unwrap();
        let (_, one) = admin.get(&format!("/api/v1/chart/{}", charts[0])).await;
        assert_eq!(layout[format!("CHART-{}", charts[0])]["meta"]["uuid"], one["result"]["uuid"], "{layout}");
        assert_eq!(layout["MARKDOWN-1"]["meta"]["code"], "# Hi");
        let md_after = stored_metadata(&admin, dash).await;
        assert!(md_after.get("positions").is_none(), "positions live in position_json: {md_after}");
        assert_eq!(md_after["native_filter_configuration"], r["result"]["json_metadata"].as_str().map(|t| serde_json::from_str::<Value>(t).unwrap()["native_filter_configuration"].clone()).unwrap());
        assert_eq!(d["result"]["dashboard_title"], "Flows!");
        // Chart Two dragged in.
        positions[format!("CHART-{}", charts[1])] = chart_entry(charts[1]);
        md["positions"] = positions.clone();
        let (s, r) = admin.put(&format!("/api/v1/dashboard/{dash}"), json!({"json_metadata": md.to_string()})).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(linked_charts(&admin, dash).await, charts.clone());
        // A chart id that does not exist is not linked; malformed positions are refused.
        positions["CHART-999999"] = chart_entry(999_999);
        md["positions"] = positions.clone();
        let (s, _) = admin.put(&format!("/api/v1/dashboard/{dash}"), json!({"json_metadata": md.to_string()})).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(linked_charts(&admin, dash).await, charts.clone());
        md["positions"] = json!(["not", "a", "map"]);
        let (s, e) = admin.put(&format!("/api/v1/dashboard/{dash}"), json!({"json_metadata": md.to_string()})).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{e}");
        assert_eq!(linked_charts(&admin, dash).await, charts.clone());

        // Download → Export to .CSV: the chart data posted as an HTML form.
        let context = json!({"datasource": {"id": ds, "type": "table"}, "force": false,
            "queries": [{"columns": ["region"], "metrics": [{"label": "total", "expressionType": "SQL", "sqlExpression": "SUM(amount)"}],
                         "orderby": [["region", true]], "row_limit": 10}],
            "result_format": "csv", "result_type": "full"});
        let resp = admin
            .request(reqwest::Method::POST, "/api/v1/chart/data")
            .form(&[("form_data", context.to_string()), ("csrf_token", admin.csrf.clone())])
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let disposition = resp.headers()["content-disposition"].to_str().unwrap().to_owned();
        assert!(disposition.starts_with("attachment; filename=") && disposition.ends_with(".csv"), "{disposition}");
        assert_eq!(resp.text().await.unwrap(), "region,total\nnorth,15\nsouth,20\n");
        // A form without (or with unreadable) form_data is the same 400 as a body that is not JSON.
        for form in [vec![("other", "x".to_owned())], vec![("form_data", "{not json".to_owned())]] {
            let resp = admin
                .request(reqwest::Method::POST, "/api/v1/chart/data")
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body, json!({"message": "Request payload is not JSON"}));
        }
    }
}
