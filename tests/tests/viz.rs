//! Server-rendered charts end to end, over real HTTP with the real wasm plugins: the built-in
//! viz plugin draws the embedded example charts (and charts saved with `params` only, whose
//! query the plugin builds) as SVG and PNG of the requested size; thumbnails follow Superset's
//! digest protocol; the dashboard page lays the charts out; and a hostile viz plugin's SVG
//! reaches the client only after the sanitiser removed scripts, handlers and external links.

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, fixture_plugin, legacy_plugin, pg};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

/// GET `path` as bytes, with status and headers.
async fn fetch(api: &Api, path: &str) -> (StatusCode, HeaderMap, Vec<u8>) {
    let resp = api
        .request(reqwest::Method::GET, path)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let (status, headers) = (resp.status(), resp.headers().clone());
    (status, headers, resp.bytes().await.expect("body").to_vec())
}

/// The SVG at `path` (asserting a 200 SVG answer).
async fn svg(api: &Api, path: &str) -> String {
    let (s, h, body) = fetch(api, path).await;
    let text = String::from_utf8(body).expect("utf-8");
    assert_eq!(s, StatusCode::OK, "{path}: {text}");
    assert_eq!(h["content-type"], "image/svg+xml", "{path}");
    assert!(
        h["content-security-policy"]
            .to_str()
            .is_ok_and(|v| v.contains("default-src 'none'")),
        "{path}: {h:?}"
    );
    text
}

/// Decodes a PNG; returns (width, height).
fn png_size(bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    // Something was drawn: not every pixel is the white background.
    assert!(buf.iter().any(|b| *b != 255), "the PNG is blank");
    (info.width, info.height)
}

/// What a chart's SVG shows, read with an XML parser.
#[derive(Debug)]
struct Drawn {
    width: String,
    height: String,
    title: String,
    series: Vec<String>,
    tick_labels: Vec<String>,
    texts: Vec<String>,
}

fn has_class(n: &roxmltree::Node, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|c| c == class))
}

fn parse(svg: &str) -> Drawn {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}: {svg}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let text_of = |n: roxmltree::Node| n.text().unwrap_or_default().to_owned();
    let title = doc
        .descendants()
        .find(|n| n.has_tag_name("text") && has_class(n, "title"))
        .map(text_of)
        .unwrap_or_default();
    let series = doc
        .descendants()
        .filter(|n| n.is_element() && has_class(n, "series"))
        .map(|n| n.attribute("data-name").unwrap_or_default().to_owned())
        .collect();
    let tick_labels = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && has_class(n, "tick-label"))
        .filter(|n| n.ancestors().any(|a| has_class(&a, "x-axis")))
        .map(text_of)
        .collect();
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(text_of)
        .collect();
    Drawn {
        width: root.attribute("width").unwrap_or_default().to_owned(),
        height: root.attribute("height").unwrap_or_default().to_owned(),
        title,
        series,
        tick_labels,
        texts,
    }
}

/// A client that does not follow redirects, with the API's credentials.
fn no_redirects(api: &Api, path: &str) -> reqwest::RequestBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(format!("{}{path}", api.base))
        .bearer_auth(&api.token)
}

#[tokio::test]
async fn example_charts_render_as_svg_png_thumbnails_and_a_dashboard_page() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, charts) = api.get("/api/v1/chart/?q=(page_size:100)").await;
    assert_eq!(s, StatusCode::OK, "{charts}");
    let charts = charts["result"].as_array().expect("charts").clone();
    assert_eq!(charts.len(), 5, "one example chart per built-in viz type");
    for c in &charts {
        let (id, viz, name) = (
            c["id"].as_i64().expect("id"),
            c["viz_type"].as_str().expect("viz_type"),
            c["slice_name"].as_str().expect("name"),
        );
        let started = std::time::Instant::now();
        let text = svg(
            &api,
            &format!("/api/v1/chart/{id}/render.svg?width=640&height=360"),
        )
        .await;
        let svg_ms = started.elapsed().as_millis();
        let drawn = parse(&text);
        assert_eq!(
            (drawn.width.as_str(), drawn.height.as_str()),
            ("640", "360"),
            "{viz}"
        );
        assert_eq!(drawn.title, name, "{viz}: {text}");
        match viz {
            "echarts_timeseries_line" => {
                assert_eq!(drawn.series, ["Revenue"], "{text}");
                // 24 months of 2024–2025 on a time axis: year and month ticks.
                assert!(drawn.tick_labels.iter().any(|t| t == "2025"), "{drawn:?}");
                assert!(drawn.tick_labels.len() >= 4, "{drawn:?}");
            }
            "echarts_timeseries_bar" => {
                // Saved with params only: the plugin's build-query pivots by channel.
                assert_eq!(drawn.series, ["online", "partner", "retail"], "{text}");
                assert!(drawn.tick_labels.iter().any(|t| t == "2025"), "{drawn:?}");
            }
            "pie" => {
                let mut s = drawn.series.clone();
                s.sort();
                assert_eq!(s, ["Accessories", "Electronics", "Hardware"], "{text}");
            }
            "table" => {
                for header in ["region", "Revenue", "COUNT(*)"] {
                    assert!(
                        drawn.texts.iter().any(|t| t == header),
                        "{header}: {drawn:?}"
                    );
                }
                assert!(drawn.texts.iter().any(|t| t == "North"), "{drawn:?}");
            }
            "big_number_total" => {
                assert!(
                    drawn.texts.iter().any(|t| t.ends_with('k')),
                    "SMART_NUMBER of the total: {drawn:?}"
                );
            }
            other => panic!("unexpected example chart {other}"),
        }
        let started = std::time::Instant::now();
        let (s, h, png) = fetch(
            &api,
            &format!("/api/v1/chart/{id}/render.png?width=640&height=360"),
        )
        .await;
        let png_ms = started.elapsed().as_millis();
        assert_eq!(
            s,
            StatusCode::OK,
            "{viz}: {}",
            String::from_utf8_lossy(&png)
        );
        assert_eq!(h["content-type"], "image/png");
        assert_eq!(png_size(&png), (640, 360), "{viz}");
        println!(
            "{viz}: svg {svg_ms} ms, png (svg cached) {png_ms} ms, {} bytes",
            png.len()
        );

        // Thumbnails: the current digest answers 800×600 PNG, another one redirects to it.
        let thumb = c["thumbnail_url"].as_str().expect("thumbnail_url");
        let (s, h, png) = fetch(&api, thumb).await;
        assert_eq!(s, StatusCode::OK, "{thumb}");
        assert_eq!(h["content-type"], "image/png");
        assert_eq!(png_size(&png), (800, 600));
        let resp = no_redirects(&api, &format!("/api/v1/chart/{id}/thumbnail/stale/"))
            .send()
            .await
            .expect("thumbnail");
        assert_eq!(resp.status(), StatusCode::FOUND);
        assert_eq!(resp.headers()["location"], thumb);
    }

    // The rendered output is cached: the same request answers the same bytes.
    let id = charts[0]["id"].as_i64().expect("id");
    let path = format!("/api/v1/chart/{id}/render.svg?width=500&height=300");
    assert_eq!(svg(&api, &path).await, svg(&api, &path).await);

    // Bad input is a 400 in Superset's envelope; a missing chart a 404.
    let (s, _, body) = fetch(&api, &format!("/api/v1/chart/{id}/render.svg?width=5")).await;
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("width")),
        "{body}"
    );
    let (s, _, _) = fetch(
        &api,
        &format!("/api/v1/chart/{id}/render.png?width=4000&height=4000"),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _, _) = fetch(&api, "/api/v1/chart/9999/render.svg").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // Like Superset's `<int:pk>` routes, a pk that is not a number matches no route.
    let (s, _, _) = fetch(&api, "/api/v1/chart/abc/render.svg").await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // A bar chart saved with params only: the plugin builds its query (data and render).
    let (_, sales) = api
        .get("/api/v1/dataset/?q=(filters:!((col:table_name,opr:eq,value:sales)))")
        .await;
    let sales = sales["ids"][0].as_i64().expect("sales dataset");
    let params = json!({"viz_type": "echarts_timeseries_bar", "x_axis": "order_date",
                        "time_grain_sqla": "P3M", "metrics": ["sum_quantity"],
                        "groupby": ["channel"], "row_limit": 10000,
                        "adhoc_filters": [{"clause": "WHERE", "expressionType": "SIMPLE",
                                           "subject": "order_date", "operator": "TEMPORAL_RANGE",
                                           "comparator": "No filter"}]});
    let (s, bar) = api
        .post(
            "/api/v1/chart/",
            json!({"slice_name": "Units by channel", "viz_type": "echarts_timeseries_bar",
                   "datasource_id": sales, "datasource_type": "table",
                   "params": params.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{bar}");
    let bar = bar["id"].as_i64().expect("id");
    let (s, data) = api.get(&format!("/api/v1/chart/{bar}/data/")).await;
    assert_eq!(s, StatusCode::OK, "{data}");
    let r = &data["result"][0];
    assert_eq!(r["rowcount"], 8, "8 quarters, pivoted: {data}");
    assert_eq!(
        r["colnames"],
        json!(["order_date", "online", "partner", "retail"]),
        "{data}"
    );
    let drawn = parse(
        &svg(
            &api,
            &format!("/api/v1/chart/{bar}/render.svg?width=720&height=400"),
        )
        .await,
    );
    assert_eq!(drawn.series, ["online", "partner", "retail"], "{drawn:?}");
    assert_eq!(drawn.title, "Units by channel");
    assert!(drawn.tick_labels.iter().any(|t| t == "2025"), "{drawn:?}");

    // The dashboard page lays out every chart's SVG; logged-out visitors go to the login.
    let (s, h, html) = fetch(&api, "/dashboard/sales-overview/").await;
    let html = String::from_utf8(html).expect("utf-8");
    assert_eq!(s, StatusCode::OK, "{html}");
    assert!(
        h["content-type"]
            .to_str()
            .is_ok_and(|c| c.starts_with("text/html"))
    );
    assert!(html.contains("<h1>Sales overview</h1>"), "{html}");
    for c in &charts {
        let id = c["id"].as_i64().expect("id");
        assert!(
            html.contains(&format!("/api/v1/chart/{id}/render.svg?width=")),
            "chart {id}: {html}"
        );
    }
    let anon = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(server.url("/dashboard/sales-overview/"))
        .send()
        .await
        .expect("page");
    assert_eq!(anon.status(), StatusCode::FOUND);
    assert!(
        anon.headers()["location"]
            .to_str()
            .is_ok_and(|l| l.starts_with("/login/?next=")),
        "{:?}",
        anon.headers()
    );
    let (s, _, _) = fetch(&api, "/dashboard/no-such-dashboard/").await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // The render endpoints are in the OpenAPI document.
    let (_, doc) = api.get("/api/v1/_openapi").await;
    for p in [
        "/api/v1/chart/{pk}/render.svg",
        "/api/v1/chart/{pk}/render.png",
        "/api/v1/chart/{pk}/thumbnail/{digest}",
        "/dashboard/{key}",
    ] {
        assert!(
            doc["paths"].get(p).is_some(),
            "{p} missing from the OpenAPI document"
        );
    }
}

/// A fresh analytics database with a small `people` table; returns its URL.
async fn analytics() -> String {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "CREATE TABLE people (id int PRIMARY KEY, name text, city text, score float8, \
             joined timestamp); \
             INSERT INTO people VALUES (1, 'Ann', 'Cork', 1.5, '2024-01-15'), \
             (2, 'Bob', 'Paris', 2.5, '2024-02-10'), (3, 'Cy', 'Paris', NULL, '2024-03-05'), \
             (4, 'Dee', NULL, 4.0, '2024-03-20');",
        )
        .await
        .expect("fixture");
    url
}

/// Registers the database and a `people` dataset; returns the dataset id.
async fn people_dataset(api: &Api, url: &str) -> i64 {
    let (s, db) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": "analytics", "sqlalchemy_uri": url}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db["id"], "schema": "public", "table_name": "people"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    ds["id"].as_i64().expect("id")
}

async fn chart(api: &Api, ds: i64, viz: &str, params: Value) -> i64 {
    let (s, c) = api
        .post(
            "/api/v1/chart/",
            json!({"slice_name": format!("{viz} chart"), "viz_type": viz, "datasource_id": ds,
                   "datasource_type": "table", "params": params.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{c}");
    c["id"].as_i64().expect("id")
}

#[tokio::test]
async fn params_only_charts_render_on_postgres() {
    let url = analytics().await;
    let server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let ds = people_dataset(&api, &url).await;
    let count = json!({"expressionType": "SQL", "sqlExpression": "COUNT(*)", "label": "people"});
    let cases = [
        (
            "table",
            json!({"groupby": ["city"], "metrics": [count]}),
            3usize,
        ),
        ("pie", json!({"groupby": ["city"], "metric": count}), 3),
        ("big_number_total", json!({"metric": count}), 0),
        (
            "echarts_timeseries_line",
            json!({"x_axis": "joined", "time_grain_sqla": "P1M", "metrics": [count]}),
            1,
        ),
        (
            "echarts_timeseries_bar",
            json!({"x_axis": "joined", "time_grain_sqla": "P1M", "metrics": [count],
                   "groupby": ["city"]}),
            3,
        ),
    ];
    for (viz, params, series) in cases {
        let id = chart(&api, ds, viz, params).await;
        let (s, data) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
        assert_eq!(s, StatusCode::OK, "{viz}: {data}");
        let text = svg(
            &api,
            &format!("/api/v1/chart/{id}/render.svg?width=480&height=320"),
        )
        .await;
        let drawn = parse(&text);
        assert_eq!(drawn.title, format!("{viz} chart"), "{text}");
        match viz {
            "table" => assert!(drawn.texts.iter().any(|t| t == "Paris"), "{drawn:?}"),
            "big_number_total" => assert!(drawn.texts.iter().any(|t| t == "4"), "{drawn:?}"),
            // Cork, Paris and the NULL city (which pivoting may drop).
            "echarts_timeseries_bar" => assert!(drawn.series.len() >= 2, "{drawn:?}"),
            _ => assert_eq!(drawn.series.len(), series, "{viz}: {drawn:?}"),
        }
        let (s, _, png) = fetch(
            &api,
            &format!("/api/v1/chart/{id}/render.png?width=480&height=320"),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{viz}");
        assert_eq!(png_size(&png), (480, 320));
    }

    // A chart of a type no plugin renders, with no saved query: a 400 naming the problem.
    let id = chart(&api, ds, "sankey", json!({})).await;
    let (s, _, body) = fetch(&api, &format!("/api/v1/chart/{id}/render.svg")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("sankey"));
    let (s, body) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
}

async fn upload(api: &Api, wasm: &[u8]) -> (StatusCode, Value) {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(wasm.to_vec()).file_name("plugin.wasm"),
    );
    let resp = api
        .request(reqwest::Method::POST, "/api/v1/plugin/")
        .multipart(form)
        .send()
        .await
        .expect("upload");
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_hostile_viz_plugins_svg_is_sanitised() {
    let url = analytics().await;
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let ds = people_dataset(&api, &url).await;
    let wasm = std::fs::read(fixture_plugin("viz")).expect("fixture wasm");
    let (s, body) = upload(&api, &wasm).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    assert_eq!(body["result"]["kind"], "viz");
    assert_eq!(body["result"]["viz_types"], json!(["fixture_hostile"]));
    let (_, list) = api.get("/api/v1/plugin/").await;
    let names: Vec<&str> = list["result"]
        .as_array()
        .expect("plugins")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"charts") && names.contains(&"fixture_viz"),
        "{list}"
    );

    let hostile = chart(&api, ds, "fixture_hostile", json!({"mode": "hostile"})).await;
    let text = svg(
        &api,
        &format!("/api/v1/chart/{hostile}/render.svg?width=300&height=150"),
    )
    .await;
    let lower = text.to_lowercase();
    for banned in [
        "<script",
        "onload",
        "onclick",
        "onmouseover",
        "foreignobject",
        "evil.example",
        "javascript:",
        "@import",
        "alert(",
    ] {
        assert!(!lower.contains(banned), "{banned} survived: {text}");
    }
    // What is harmless is kept, and the root has the requested size.
    let drawn = parse(&text);
    assert_eq!(
        (drawn.width.as_str(), drawn.height.as_str()),
        ("300", "150")
    );
    assert!(text.contains(r##"class="kept""##), "{text}");
    assert!(drawn.texts.iter().any(|t| t == "rows=1"), "{text}");
    let (s, _, png) = fetch(
        &api,
        &format!("/api/v1/chart/{hostile}/render.png?width=300&height=150"),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(png_size(&png), (300, 150));

    // Other misbehaviours are typed errors, and the server keeps serving.
    for (mode, status, needle) in [
        ("not_svg", StatusCode::INTERNAL_SERVER_ERROR, "invalid SVG"),
        ("huge", StatusCode::INTERNAL_SERVER_ERROR, "invalid result"),
        ("payload_only", StatusCode::BAD_REQUEST, "renders no SVG"),
        (
            "bad_payload",
            StatusCode::INTERNAL_SERVER_ERROR,
            "invalid result",
        ),
        ("error", StatusCode::BAD_REQUEST, "fixture viz refuses"),
        // A real wasm trap and an endless loop: typed errors like a post-processor's.
        ("trap", StatusCode::INTERNAL_SERVER_ERROR, "crashed"),
        ("spin", StatusCode::REQUEST_TIMEOUT, "timeout"),
    ] {
        let id = chart(&api, ds, "fixture_hostile", json!({"mode": mode})).await;
        let (s, _, body) = fetch(&api, &format!("/api/v1/chart/{id}/render.svg")).await;
        let body: Value = serde_json::from_slice(&body).expect("JSON error");
        assert_eq!(s, status, "{mode}: {body}");
        let shown = body.to_string();
        if status == StatusCode::BAD_REQUEST {
            assert!(shown.contains(needle), "{mode}: {body}");
        } else {
            assert!(
                server.logs().contains(needle) || shown.contains(needle),
                "{mode}: {body}"
            );
        }
    }
    // A query context the plugin builds must be JSON.
    let id = chart(&api, ds, "fixture_hostile", json!({"mode": "bad_query"})).await;
    let (s, body) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    let (s, _) = api.get("/api/v1/me/").await;
    assert_eq!(s, StatusCode::OK);
}

/// A viz plugin in Superset's app: `/dynamic-plugins/api/read` lists its chart type (nothing
/// for an anonymous page), the bridge is served as JavaScript, `/api/v1/chart_type/` gives the
/// control panel; a query context without queries (what the bridge's build-query sends, and
/// what the app saves) is completed by the plugin's `build-query`; and the bridge's drawing
/// of the rows `/chart/data` answered is byte for byte the SVG `render.svg` draws for the
/// saved chart, whose thumbnail is that picture rasterised. Then the drawing endpoint's
/// refusals: malformed bodies, sizes, unknown types, and a saved chart the caller cannot read.
#[tokio::test]
async fn the_apps_drawing_is_the_servers_picture() {
    let server = TestServer::builder()
        .env("LITESET_EXAMPLES", "true")
        .start()
        .await
        .expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let anonymous = reqwest::get(server.url("/dynamic-plugins/api/read"))
        .await
        .expect("anonymous read");
    let status = anonymous.status();
    let body: Value = anonymous.json().await.expect("json");
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["count"].clone(), body["result"].clone()),
        (json!(0), json!([]))
    );
    let (s, list) = api.get("/dynamic-plugins/api/read").await;
    assert_eq!(
        (s, list["result"].clone()),
        (StatusCode::OK, json!([])),
        "built-in types are the app's own"
    );

    let wasm = tokio::task::spawn_blocking(move || {
        liteset_tests::build_component(
            "../examples/waterfall",
            "liteset_example_waterfall",
            "",
            "waterfall",
        )
    })
    .await
    .expect("build");
    let (s, body) = upload(&api, &std::fs::read(wasm).expect("wasm")).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");

    let (s, list) = api.get("/dynamic-plugins/api/read").await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert_eq!(list["modelview_name"], "DynamicPluginsView");
    assert_eq!(list["pks"], json!([1]));
    let entry = &list["result"][0];
    assert_eq!(entry["key"], "waterfall", "{list}");
    let bundle = entry["bundle_url"].as_str().expect("bundle_url");
    assert!(bundle.starts_with("/liteset/app/bridge.js?v="), "{bundle}");
    let (s, h, js) = fetch(&api, bundle).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-type"], "text/javascript; charset=utf-8");
    assert!(String::from_utf8_lossy(&js).contains("new core.ChartPlugin("));

    let (s, types) = api.get("/api/v1/chart_type/").await;
    assert_eq!(s, StatusCode::OK, "{types}");
    assert_eq!(types["count"], 1, "{types}");
    let t = &types["result"][0];
    assert_eq!(
        (t["viz_type"].as_str(), t["plugin"].as_str()),
        (Some("waterfall"), Some("waterfall"))
    );
    assert!(
        t["thumbnail"]
            .as_str()
            .unwrap()
            .starts_with("data:image/svg+xml;base64,")
    );
    let shared: Vec<&str> = t["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .flat_map(|s| s["rows"].as_array().into_iter().flatten())
        .flat_map(|row| row.as_array().into_iter().flatten())
        .filter(|c| c["kind"] == "shared")
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        shared.contains(&"x_axis") && shared.contains(&"adhoc_filters"),
        "{t}"
    );

    let q = "/api/v1/dataset/?q=(filters:!((col:table_name,opr:eq,value:sales)))";
    let ds = api.get(q).await.1["result"][0]["id"]
        .as_i64()
        .expect("sales dataset");
    let params = json!({"viz_type": "waterfall", "datasource": format!("{ds}__table"),
                        "x_axis": "region", "metric": "sum_revenue", "row_limit": 100});
    let qc = json!({"datasource": {"id": ds, "type": "table"}, "force": false, "queries": [],
                    "form_data": params, "result_format": "json", "result_type": "full"});
    let (s, created) = api
        .post(
            "/api/v1/chart/",
            json!({"slice_name": "Revenue waterfall", "viz_type": "waterfall",
                   "datasource_id": ds, "datasource_type": "table",
                   "params": params.to_string(), "query_context": qc.to_string()}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    let id = created["id"].as_i64().expect("id");
    let (s, data) = api.post("/api/v1/chart/data", qc.clone()).await;
    assert_eq!(s, StatusCode::OK, "{data}");
    let rows = &data["result"][0];
    assert_eq!(rows["colnames"], json!(["region", "sum_revenue"]), "{rows}");
    assert_eq!(
        rows["data"].as_array().map(Vec::len),
        Some(5),
        "four regions and null"
    );
    // A dashboard's native filter (extra_form_data) reaches the queries the plugin built.
    let mut filtered = qc.clone();
    filtered["form_data"]["extra_form_data"] =
        json!({"filters": [{"col": "region", "op": "IN", "val": ["North"]}]});
    let (s, only) = api.post("/api/v1/chart/data", filtered).await;
    assert_eq!(s, StatusCode::OK, "{only}");
    let regions: Vec<&Value> = only["result"][0]["data"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| &r["region"])
        .collect();
    assert_eq!(regions, [&json!("North")], "{only}");
    let (s, saved) = api.get(&format!("/api/v1/chart/{id}/data/")).await;
    assert_eq!(
        (s, &saved["result"][0]["data"]),
        (StatusCode::OK, &rows["data"])
    );

    let mut form = params.clone();
    form["slice_id"] = json!(id);
    let draw = |form: Value, width: u32| {
        json!({"form_data": form, "width": width, "height": 400,
               "queries": [{"data": rows["data"], "colnames": rows["colnames"],
                            "coltypes": rows["coltypes"]}]})
    };
    let (s, drawn) = api
        .post(
            "/api/v1/chart_type/waterfall/render",
            draw(form.clone(), 640),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{drawn}");
    let app_svg = drawn["result"]["svg"].as_str().expect("svg");
    let server_svg = svg(
        &api,
        &format!("/api/v1/chart/{id}/render.svg?width=640&height=400"),
    )
    .await;
    assert_eq!(app_svg, server_svg);
    let picture = parse(app_svg);
    assert_eq!(picture.title, "Revenue waterfall");
    for region in ["North", "South", "East", "West", "Total"] {
        assert!(
            picture.texts.iter().any(|t| t == region),
            "{region}: {:?}",
            picture.texts
        );
    }
    let (_, chart) = api.get(&format!("/api/v1/chart/{id}")).await;
    let thumb = chart["result"]["thumbnail_url"]
        .as_str()
        .expect("thumbnail_url")
        .to_owned();
    let (s, _, thumb_png) = fetch(&api, &thumb).await;
    assert_eq!(s, StatusCode::OK);
    let (_, _, png) = fetch(
        &api,
        &format!("/api/v1/chart/{id}/render.png?width=800&height=600"),
    )
    .await;
    assert_eq!(thumb_png, png, "the thumbnail is the same picture");

    // Refusals: each a 400 with Superset's envelope, nothing drawn.
    let bad = [
        json!({"form_data": "x", "queries": [], "width": 100, "height": 100}),
        json!({"form_data": {}, "queries": [{"data": {"a": 1}}], "width": 100, "height": 100}),
        json!({"form_data": {}, "queries": [{"data": [1, 2]}], "width": 100, "height": 100}),
        json!({"form_data": {}, "queries": [], "width": 0, "height": 100}),
        json!({"form_data": {}, "queries": [], "width": 100, "height": 99999}),
        json!({"form_data": {}, "queries": [], "width": -5, "height": 100}),
        json!({"form_data": {}, "queries": vec![json!({"data": []}); 33], "width": 100, "height": 100}),
        json!({"queries": [], "width": 100, "height": 100}),
        json!([1, 2, 3]),
    ];
    for body in bad {
        let (s, answer) = api
            .post("/api/v1/chart_type/waterfall/render", body.clone())
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} → {answer}");
        assert!(
            answer.get("message").is_some() || answer.get("errors").is_some(),
            "{answer}"
        );
    }
    let (s, answer) = api
        .post(
            "/api/v1/chart_type/no_such_type/render",
            draw(json!({}), 100),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{answer}");

    // A viewer without access to the dataset reads the chart types, but a saved chart out of
    // reach lends its name to nobody's drawing, whatever the spelling of its id.
    let (_, roles) = api
        .get("/api/v1/security/roles/?q=(filters:!((col:name,opr:eq,value:Gamma)))")
        .await;
    let gamma = roles["result"][0]["id"].as_i64().expect("gamma");
    let (s, u) = api
        .post(
            "/api/v1/security/users/",
            json!({"username": "viewer", "first_name": "V", "last_name": "W",
                   "email": "v@example.com", "password": "viewer-pass-1", "active": true,
                   "roles": [gamma]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{u}");
    let viewer = Api::login(&server, "viewer", "viewer-pass-1").await;
    let (s, types) = viewer.get("/api/v1/chart_type/").await;
    assert_eq!((s, &types["count"]), (StatusCode::OK, &json!(1)));
    let (s, _) = viewer
        .post(
            "/api/v1/chart_type/waterfall/render",
            draw(params.clone(), 320),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "rows the viewer holds are drawn");
    for slice in [
        json!(id),
        json!(id as f64),
        json!(id.to_string()),
        json!([id]),
    ] {
        let mut f = params.clone();
        f["slice_id"] = slice;
        let (s, answer) = viewer
            .post("/api/v1/chart_type/waterfall/render", draw(f, 320))
            .await;
        assert!(
            [
                StatusCode::FORBIDDEN,
                StatusCode::NOT_FOUND,
                StatusCode::BAD_REQUEST
            ]
            .contains(&s),
            "{s} {answer}"
        );
        assert!(
            !answer.to_string().contains("Revenue waterfall"),
            "{answer}"
        );
    }
    let anonymous = reqwest::get(server.url("/api/v1/chart_type/"))
        .await
        .expect("anonymous list");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
}

/// The plugin called `name` in `GET /api/v1/plugin/`.
async fn listed(api: &Api, name: &str) -> Value {
    let (s, list) = api.get("/api/v1/plugin/").await;
    assert_eq!(s, StatusCode::OK, "{list}");
    list["result"]
        .as_array()
        .expect("plugins")
        .iter()
        .find(|p| p["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} not listed: {list}"))
}

#[tokio::test]
async fn wit_0_1_0_and_0_2_0_viz_plugins_install_side_by_side_and_render() {
    let url = analytics().await;
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let ds = people_dataset(&api, &url).await;
    let (_, list) = api.get("/api/v1/plugin/").await;
    assert_eq!(list["supported_wit_versions"], json!(["0.1.0", "0.2.0"]));

    // A component built against the frozen 0.1.0 WIT, without the SDK, keeps installing and
    // rendering, its form data reaching it as before.
    let wasm = std::fs::read(legacy_plugin()).expect("legacy wasm");
    let (s, body) = upload(&api, &wasm).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    assert_eq!(body["result"]["wit_version"], "0.1.0", "{body}");
    assert_eq!(listed(&api, "legacy_viz").await["wit_version"], "0.1.0");
    let id = chart(&api, ds, "legacy_viz", json!({"caption": "old"})).await;
    let text = svg(
        &api,
        &format!("/api/v1/chart/{id}/render.svg?width=200&height=100"),
    )
    .await;
    let drawn = parse(&text);
    assert_eq!(
        (drawn.width.as_str(), drawn.height.as_str()),
        ("200", "100")
    );
    assert!(text.contains("legacy old rows=1"), "{text}");

    // A 0.2.0 component (the SDK's, with the chart-app export) next to it.
    let wasm = std::fs::read(fixture_plugin("viz")).expect("fixture wasm");
    let (s, body) = upload(&api, &wasm).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    assert_eq!(body["result"]["wit_version"], "0.2.0", "{body}");
    assert_eq!(listed(&api, "fixture_viz").await["wit_version"], "0.2.0");
    let id = chart(&api, ds, "fixture_hostile", json!({"mode": "hostile"})).await;
    let text = svg(&api, &format!("/api/v1/chart/{id}/render.svg")).await;
    assert!(parse(&text).texts.iter().any(|t| t == "rows=1"), "{text}");
    // The legacy plugin still renders after the other install.
    let id = chart(&api, ds, "legacy_viz", json!({})).await;
    let text = svg(&api, &format!("/api/v1/chart/{id}/render.svg")).await;
    assert!(text.contains("legacy hello rows=1"), "{text}");
}

#[tokio::test]
async fn an_invalid_chart_app_description_refuses_the_upload() {
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let wasm = std::fs::read(fixture_plugin("bad_chart_app")).expect("fixture wasm");
    let (s, body) = upload(&api, &wasm).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let shown = body.to_string();
    assert!(
        shown.contains("chart-app") && shown.contains("viz_type") && shown.contains("reserves"),
        "the message names the problem: {body}"
    );
    let (_, list) = api.get("/api/v1/plugin/").await;
    assert!(
        !list.to_string().contains("fixture_viz"),
        "nothing was installed: {list}"
    );
}
