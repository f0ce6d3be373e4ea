//! Import/export bundles end to end: a dashboard exported, deleted through the API and
//! imported back with the same uuids, links and data; exports that are byte-identical for
//! unchanged objects; the real Superset 6.0 export answering chart data; hostile archives
//! refused with 400 and nothing changed; a failure in the middle of the write rolled back.

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Write};

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, both_backends, pg, status_json};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The analytics role's password: it must never come back in a body or a log line.
const SECRET: &str = "Bundle-pa55-never-shown-41c9";

/// A fresh analytics database loaded with `sql`, and a password-holding role that may read
/// it; returns the URI with the password and the superuser URL.
async fn analytics(sql: &str) -> (String, String) {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let db = url.rsplit('/').next().unwrap().to_owned();
    let role = format!("reader_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!(
            "ALTER DATABASE {db} SET timezone = 'UTC'; {sql}; \
             CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'; \
             GRANT USAGE ON SCHEMA public TO {role}; \
             GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role};"
        ))
        .await
        .unwrap();
    // The golden fixture's own schema, when loaded.
    let _ = client
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA golden TO {role}; \
             GRANT SELECT ON ALL TABLES IN SCHEMA golden TO {role};"
        ))
        .await;
    let parsed = url::Url::parse(&url).unwrap();
    let uri = format!(
        "postgresql://{role}:{SECRET}@{}:{}{}",
        parsed.host_str().unwrap(),
        parsed.port().unwrap(),
        parsed.path()
    );
    (uri, url)
}

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
        .request(reqwest::Method::POST, path)
        .multipart(form)
        .send()
        .await
        .unwrap();
    status_json(resp).await
}

async fn download(api: &Api, path: &str) -> Vec<u8> {
    let resp = api
        .request(reqwest::Method::GET, path)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "{path}");
    assert_eq!(resp.headers()["content-type"], "application/zip");
    resp.bytes().await.unwrap().to_vec()
}

/// Every entry of a ZIP: name, last-modified time and content, in archive order.
fn entries(bytes: &[u8]) -> Vec<(String, String, String)> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut f = archive.by_index(i).unwrap();
            let mut text = String::new();
            f.read_to_string(&mut text).unwrap();
            let modified = f
                .last_modified()
                .map(|d| {
                    format!(
                        "{}-{:02}-{:02} {:02}:{:02}",
                        d.year(),
                        d.month(),
                        d.day(),
                        d.hour(),
                        d.minute()
                    )
                })
                .unwrap_or_default();
            (f.name().to_owned(), modified, text)
        })
        .collect()
}

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        out.start_file(*name, opts).unwrap();
        out.write_all(data).unwrap();
    }
    out.finish().unwrap().into_inner()
}

/// The same archive with the entries `edit` changes (by name below the root folder).
fn rezip(bytes: &[u8], edit: impl Fn(&str, String) -> String) -> Vec<u8> {
    let owned: Vec<(String, Vec<u8>)> = entries(bytes)
        .into_iter()
        .map(|(name, _, text)| {
            let below = name
                .split_once('/')
                .map_or(name.as_str(), |x| x.1)
                .to_owned();
            let text = edit(&below, text);
            (name, text.into_bytes())
        })
        .collect();
    let refs: Vec<(&str, &[u8])> = owned
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_slice()))
        .collect();
    zip_of(&refs)
}

async fn counts(api: &Api) -> BTreeMap<&'static str, i64> {
    let mut out = BTreeMap::new();
    for res in ["database", "dataset", "chart", "dashboard", "saved_query"] {
        let (s, l) = api.get(&format!("/api/v1/{res}/")).await;
        assert_eq!(s, StatusCode::OK, "{res}: {l}");
        out.insert(res, l["count"].as_i64().unwrap());
    }
    out
}

/// `{uuid: id}` of every record of a resource, from its list.
async fn uuids(api: &Api, res: &str) -> BTreeMap<String, i64> {
    let l = ok(api.get(&format!("/api/v1/{res}/?q=(page_size:100)")).await);
    l["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["uuid"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{res} list has no uuid: {r}"))
                    .to_owned(),
                r["id"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn uuid_of(map: &BTreeMap<String, i64>, id: i64) -> String {
    map.iter()
        .find(|(_, v)| **v == id)
        .map(|(k, _)| k.clone())
        .unwrap()
}

fn ok(r: (StatusCode, Value)) -> Value {
    assert!(r.0.is_success(), "{}: {}", r.0, r.1);
    r.1
}

/// `{region: (sum, count)}` of a chart-data answer with columns region, metric, count.
fn by_region(data: &Value, metric: &str) -> BTreeMap<String, (f64, i64)> {
    data["result"][0]["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {data}"))
        .iter()
        .map(|r| {
            (
                r["region"].as_str().unwrap().to_owned(),
                (r[metric].as_f64().unwrap(), r["count"].as_i64().unwrap()),
            )
        })
        .collect()
}

both_backends! {
    async fn exported_dashboard_deleted_and_imported_comes_back(meta: Metadata) {
        let (uri, _) = analytics(
            "CREATE TABLE public.sales (id serial PRIMARY KEY, region text NOT NULL, \
             amount numeric(10,2), sold_at timestamp); INSERT INTO public.sales \
             (region, amount, sold_at) VALUES ('north', 10.5, '2024-01-01'), \
             ('south', 20, '2024-02-01'), ('north', 4.5, '2024-03-01')",
        )
        .await;
        let mut server = TestServer::builder().metadata(meta).start().await.unwrap();
        let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;

        let db = ok(api.post("/api/v1/database/", json!({"database_name": "bundle-db", "sqlalchemy_uri": uri})).await)["id"].as_i64().unwrap();
        let ds = ok(api.post("/api/v1/dataset/", json!({"database": db, "schema": "public", "table_name": "sales"})).await)["id"].as_i64().unwrap();
        let show = ok(api.get(&format!("/api/v1/dataset/{ds}")).await);
        let mut metrics: Vec<Value> = show["result"]["metrics"].as_array().unwrap().iter()
            .map(|m| json!({"id": m["id"], "metric_name": m["metric_name"], "expression": m["expression"]}))
            .collect();
        assert!(metrics.iter().any(|m| m["metric_name"] == "count"), "{show}");
        metrics.push(json!({"metric_name": "total", "expression": "SUM(amount)"}));
        ok(api.put(&format!("/api/v1/dataset/{ds}"), json!({"metrics": metrics})).await);
        let query_context = |ds: i64| json!({
            "datasource": {"id": ds, "type": "table"},
            "queries": [{"columns": ["region"], "metrics": ["total", "count"], "orderby": [["total", false]], "row_limit": 100}],
            "form_data": {"datasource": format!("{ds}__table"), "viz_type": "table"},
            "result_format": "json",
            "result_type": "full",
        }).to_string();
        let mut charts = Vec::new();
        for name in ["Totals by region", "Totals again"] {
            let id = ok(api.post("/api/v1/chart/", json!({
                "slice_name": name, "viz_type": "table", "datasource_id": ds, "datasource_type": "table",
                "params": json!({"datasource": format!("{ds}__table"), "viz_type": "table", "groupby": ["region"], "metrics": ["total", "count"]}).to_string(),
                "query_context": query_context(ds),
            })).await)["id"].as_i64().unwrap();
            charts.push(id);
        }
        // The first chart sits in the layout; the second is only linked (Superset's export
        // appends it in a row of its own, or the import could not link it back).
        let position = json!({
            "DASHBOARD_VERSION_KEY": "v2",
            "ROOT_ID": {"children": ["GRID_ID"], "id": "ROOT_ID", "type": "ROOT"},
            "GRID_ID": {"children": ["ROW-1"], "id": "GRID_ID", "parents": ["ROOT_ID"], "type": "GRID"},
            "ROW-1": {"children": ["CHART-1"], "id": "ROW-1", "parents": ["ROOT_ID", "GRID_ID"], "type": "ROW", "meta": {"background": "BACKGROUND_TRANSPARENT"}},
            "CHART-1": {"children": [], "id": "CHART-1", "parents": ["ROOT_ID", "GRID_ID", "ROW-1"], "type": "CHART", "meta": {"chartId": charts[0], "width": 6, "height": 50}},
        });
        let metadata = json!({
            "native_filter_configuration": [{"id": "NATIVE_FILTER-1", "name": "Region", "filterType": "filter_select",
                "targets": [{"datasetId": ds, "column": {"name": "region"}}], "chartsInScope": [charts[0], charts[1]],
                "scope": {"rootPath": ["ROOT_ID"], "excluded": [charts[1]]}}],
            "chart_configuration": {charts[0].to_string(): {"id": charts[0], "crossFilters": {"scope": "global", "chartsInScope": [charts[1]]}}},
            "timed_refresh_immune_slices": [charts[1]],
        });
        let dash = ok(api.post("/api/v1/dashboard/", json!({"dashboard_title": "Bundle round trip", "slug": "bundle-rt", "published": true,
            "position_json": position.to_string(), "json_metadata": metadata.to_string()})).await)["id"].as_i64().unwrap();
        for c in &charts {
            ok(api.put(&format!("/api/v1/chart/{c}"), json!({"dashboards": [dash]})).await);
        }
        let sq = ok(api.post("/api/v1/saved_query/", json!({"db_id": db, "label": "North sales", "schema": "public", "sql": "SELECT * FROM sales WHERE region = 'north'"})).await)["id"].as_i64().unwrap();

        let dash_uuid = uuid_of(&uuids(&api, "dashboard").await, dash);
        let ds_uuid = uuid_of(&uuids(&api, "dataset").await, ds);
        let chart_map = uuids(&api, "chart").await;
        let chart_uuids: Vec<String> = charts.iter().map(|c| uuid_of(&chart_map, *c)).collect();
        let before = ok(api.get(&format!("/api/v1/chart/{}/data/", charts[0])).await);
        let expected = BTreeMap::from([("north".to_owned(), (15.0, 2)), ("south".to_owned(), (20.0, 1))]);
        assert_eq!(by_region(&before, "total"), expected);

        // Two exports of unchanged objects: the same entries, dates and bytes; only the root
        // folder's name and the metadata timestamp may differ.
        let started = std::time::Instant::now();
        let first = download(&api, &format!("/api/v1/dashboard/export/?q=!({dash})")).await;
        let export_time = started.elapsed();
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let second = download(&api, &format!("/api/v1/dashboard/export/?q=!({dash})")).await;
        let strip = |e: Vec<(String, String, String)>| -> Vec<(String, String, String)> {
            e.into_iter()
                .map(|(n, m, t)| {
                    let below = n.split_once('/').unwrap().1.to_owned();
                    let t = if below == "metadata.yaml" { t.lines().filter(|l| !l.starts_with("timestamp:")).collect::<Vec<_>>().join("\n") } else { t };
                    (below, m, t)
                })
                .collect()
        };
        let (a, b) = (entries(&first), entries(&second));
        assert_ne!(a[0].0.split('/').next(), b[0].0.split('/').next(), "the root folder carries the export time");
        assert_eq!(strip(a.clone()), strip(b), "exports of unchanged objects are identical");
        assert!(a.iter().all(|(_, m, _)| m == "1980-01-01 00:00"), "fixed entry dates: {:?}", a.iter().map(|e| &e.1).collect::<Vec<_>>());
        let names: Vec<String> = strip(a.clone()).into_iter().map(|e| e.0).collect();
        assert_eq!(names[0], "metadata.yaml", "{names:?}");
        let mut sorted = names[1..].to_vec();
        sorted.sort();
        assert_eq!(names[1..], sorted[..], "entries in path order");
        assert_eq!(names.iter().filter(|n| n.starts_with("charts/")).count(), 2);
        assert_eq!(names.iter().filter(|n| n.starts_with("datasets/bundle-db/")).count(), 1, "{names:?}");
        let dash_yaml = &a.iter().find(|e| e.0.contains("/dashboards/")).unwrap().2;
        // A uuid starting with a digit is quoted (PyYAML would not read every such one back
        // as a string), one starting with a letter is plain.
        let has = |key: &str, value: &str| {
            dash_yaml.contains(&format!("{key}: {value}\n")) || dash_yaml.contains(&format!("{key}: \"{value}\"\n"))
        };
        assert!(has("datasetUuid", &ds_uuid.to_string()), "{dash_yaml}");
        for u in &chart_uuids {
            assert!(has("uuid", &u.to_string()), "chart {u} in the position: {dash_yaml}");
        }
        let db_yaml = &a.iter().find(|e| e.0.contains("/databases/")).unwrap().2;
        assert!(db_yaml.contains(":XXXXXXXXXX@"), "{db_yaml}");
        let sq_bundle = download(&api, &format!("/api/v1/saved_query/export/?q=!({sq})")).await;
        let sq_entries = strip(entries(&sq_bundle));
        assert_eq!(sq_entries.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(), ["metadata.yaml", "databases/bundle-db.yaml", "queries/bundle-db/public/North_sales.yaml"]);
        assert!(sq_entries[0].2.contains("type: SavedQuery"));

        // Delete everything through the API.
        ok(api.delete(&format!("/api/v1/dashboard/{dash}")).await);
        for c in &charts {
            ok(api.delete(&format!("/api/v1/chart/{c}")).await);
        }
        ok(api.delete(&format!("/api/v1/saved_query/{sq}")).await);
        ok(api.delete(&format!("/api/v1/dataset/{ds}")).await);
        ok(api.delete(&format!("/api/v1/database/{db}")).await);
        assert!(counts(&api).await.values().all(|n| *n == 0));

        // The masked password is required for a database that no longer exists.
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", first.clone(), &[]).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(body["errors"][0]["extra"]["databases/bundle-db.yaml"], json!({"_schema": ["Must provide a password for the database"]}));
        let passwords = json!({"databases/bundle-db.yaml": SECRET}).to_string();
        let started = std::time::Instant::now();
        let r = upload(&api, "/api/v1/dashboard/import/", "formData", first.clone(), &[("passwords", &passwords)]).await;
        let import_time = started.elapsed();
        assert_eq!(r, (StatusCode::OK, json!({"message": "OK"})));
        println!("dashboard bundle: {} bytes, export {export_time:?}, import {import_time:?}", first.len());
        let r = upload(&api, "/api/v1/saved_query/import/", "formData", sq_bundle.clone(), &[]).await;
        assert_eq!(r, (StatusCode::OK, json!({"message": "OK"})), "the database exists again: its stored password is kept");
        assert_eq!(counts(&api).await, BTreeMap::from([("chart", 2), ("dashboard", 1), ("database", 1), ("dataset", 1), ("saved_query", 1)]));

        // Same uuids, new ids, links remapped.
        let new_ds = uuids(&api, "dataset").await[&ds_uuid];
        assert_ne!(new_ds, ds, "a new id");
        let new_dash = uuids(&api, "dashboard").await[&dash_uuid];
        let chart_map = uuids(&api, "chart").await;
        let new_charts: Vec<i64> = chart_uuids.iter().map(|u| chart_map[u]).collect();
        let d = ok(api.get(&format!("/api/v1/dashboard/{new_dash}")).await)["result"].clone();
        let mut linked: Vec<String> = serde_json::from_value(d["charts"].clone()).unwrap();
        linked.sort();
        assert_eq!(linked, ["Totals again", "Totals by region"]);
        let pos: Value = serde_json::from_str(d["position_json"].as_str().unwrap()).unwrap();
        assert_eq!(pos["CHART-1"]["meta"]["chartId"], new_charts[0]);
        let meta: Value = serde_json::from_str(d["json_metadata"].as_str().unwrap()).unwrap();
        let nf = &meta["native_filter_configuration"][0];
        assert_eq!(nf["targets"][0], json!({"column": {"name": "region"}, "datasetId": new_ds}));
        assert_eq!(nf["chartsInScope"], json!([new_charts[0], new_charts[1]]));
        assert_eq!(nf["scope"]["excluded"], json!([new_charts[1]]));
        assert_eq!(meta["timed_refresh_immune_slices"], json!([new_charts[1]]));
        assert_eq!(meta["chart_configuration"][new_charts[0].to_string()]["crossFilters"]["chartsInScope"], json!([new_charts[1]]));
        let chart = ok(api.get(&format!("/api/v1/chart/{}", new_charts[0])).await)["result"].clone();
        let qc: Value = serde_json::from_str(chart["query_context"].as_str().unwrap()).unwrap();
        assert_eq!(qc["datasource"], json!({"id": new_ds, "type": "table"}), "query context points at the new dataset");
        assert_eq!(qc["form_data"]["datasource"], format!("{new_ds}__table"));
        let (_, sql) = api.get("/api/v1/saved_query/").await;
        assert_eq!(sql["result"][0]["label"], "North sales");

        // And the charts answer with the same data, both ways.
        for c in &new_charts {
            let data = ok(api.get(&format!("/api/v1/chart/{c}/data/")).await);
            assert_eq!(by_region(&data, "total"), expected, "chart {c}");
        }
        let data = ok(api.post("/api/v1/chart/data", qc.clone()).await);
        assert_eq!(by_region(&data, "total"), expected);

        // A second import without overwrite: Superset's 422 naming the file.
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", first.clone(), &[]).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
        let file = names.iter().find(|n| n.starts_with("dashboards/")).unwrap();
        assert_eq!(body["errors"][0]["extra"][file], "Dashboard already exists and `overwrite=true` was not passed");
        assert_eq!(body["errors"][0]["error_type"], "GENERIC_COMMAND_ERROR");
        let (s, body) = upload(&api, "/api/v1/saved_query/import/", "formData", sq_bundle, &[]).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(body["errors"][0]["message"], "Error importing saved_queries: queries/bundle-db/public/North_sales.yaml");

        // A database that needs an SSH tunnel is refused with a message saying why.
        let tunnel = rezip(&first, |name, text| if name.starts_with("databases/") { format!("{text}ssh_tunnel:\n  server_address: bastion\n  server_port: 22\n  username: me\n  password: XXXXXXXXXX\n") } else { text });
        let (s, body) = upload(&api, "/api/v1/dashboard/import/", "formData", tunnel, &[("overwrite", "true"), ("ssh_tunnel_passwords", "{\"databases/bundle-db.yaml\": \"x\"}")]).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert!(body["errors"][0]["extra"]["databases/bundle-db.yaml"]["ssh_tunnel"][0].as_str().unwrap().contains("SSH tunnels are not supported"), "{body}");

        server.stop().await.unwrap();
        assert!(!server.logs().contains(SECRET));
    }
}

both_backends! {
    async fn real_superset_export_imports_and_its_charts_answer(meta: Metadata) {
        let sql = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/chartdata/fixture.sql")).unwrap();
        let (uri, url) = analytics(&sql).await;
        let mut server = TestServer::builder().metadata(meta).start().await.unwrap();
        let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        // Only the connection is pointed at this test's database (as the fixture README says);
        // every other file stays as Superset wrote it.
        let fixture = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/superset-6.0-dashboard-export.zip")).unwrap();
        let masked = uri.replace(SECRET, "XXXXXXXXXX");
        let bundle = rezip(&fixture, |name, text| {
            if name == "databases/analytics.yaml" {
                text.lines().map(|l| if l.starts_with("sqlalchemy_uri:") { format!("sqlalchemy_uri: {masked}") } else { l.to_owned() }).collect::<Vec<_>>().join("\n")
            } else {
                text
            }
        });
        let passwords = json!({"databases/analytics.yaml": SECRET}).to_string();
        let r = upload(&api, "/api/v1/dashboard/import/", "formData", bundle, &[("passwords", &passwords)]).await;
        assert_eq!(r, (StatusCode::OK, json!({"message": "OK"})));

        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        let f = |row: &tokio_postgres::Row, i: usize| row.get::<_, String>(i).parse::<f64>().unwrap();
        let want: BTreeMap<String, (f64, i64)> = client
            .query("SELECT COALESCE(region, 'NULL'), SUM(revenue)::text, COUNT(*) FROM golden.sales GROUP BY 1", &[])
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, String>(0), (f(r, 1), r.get::<_, i64>(2))))
            .collect();
        let total: f64 = want.values().map(|v| v.0).sum();
        let months: i64 = client.query_one("SELECT COUNT(DISTINCT date_trunc('month', order_date)) FROM golden.sales", &[]).await.unwrap().get(0);

        let charts = uuids(&api, "chart").await;
        let chart = |uuid: &'static str| {
            let (api, id) = (&api, charts[uuid]);
            async move { ok(api.get(&format!("/api/v1/chart/{id}/data/")).await) }
        };
        let table = chart("6129893b-3201-459d-94ff-798229433b5e").await;
        let got: BTreeMap<String, (f64, i64)> = table["result"][0]["data"].as_array().unwrap().iter()
            .map(|r| (r["region"].as_str().unwrap_or("NULL").to_owned(), (r["sum_revenue"].as_f64().unwrap(), r["count"].as_i64().unwrap())))
            .collect();
        assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
        for (k, (sum, n)) in &want {
            assert!((got[k].0 - sum).abs() < 1e-6 && got[k].1 == *n, "{k}: {:?} vs {:?}", got[k], (sum, n));
        }
        let line = chart("37392da7-f8ed-4dc6-b2c4-18c6c207c330").await;
        let rows = line["result"][0]["data"].as_array().unwrap();
        assert_eq!(rows.len() as i64, months, "one row per month (pivot + flatten ran)");
        let line_total: f64 = rows.iter().map(|r| r["sum_revenue"].as_f64().unwrap()).sum();
        assert!((line_total - total).abs() < 1e-6, "{line_total} vs {total}");
        let pie = chart("10350968-fb2d-402b-b171-88aadb2ee4c7").await;
        let pie_total: f64 = pie["result"][0]["data"].as_array().unwrap().iter().map(|r| r["total_revenue"].as_f64().unwrap()).sum();
        assert!((pie_total - total).abs() < 1e-6, "{pie_total} vs {total}");
        server.stop().await.unwrap();
        assert!(!server.logs().contains(SECRET));
    }
}

/// A hostile upload: what it is, the archive, the expected `error_type`, a substring of the
/// message, and the file its problem is filed under in `extra` (if per file).
type Hostile = (
    &'static str,
    Vec<u8>,
    &'static str,
    &'static str,
    Option<&'static str>,
);

/// A legitimate chart bundle (database, dataset, chart) for `uri`.
fn small_bundle(uri: &str) -> Vec<u8> {
    let masked = uri.replace(SECRET, "XXXXXXXXXX");
    zip_of(&[
        ("b/metadata.yaml", b"version: 1.0.0\ntype: Slice\ntimestamp: '2025-01-01T00:00:00+00:00'\n"),
        ("b/databases/small.yaml", format!("database_name: small\nsqlalchemy_uri: {masked}\nuuid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427\nversion: 1.0.0\n").as_bytes()),
        ("b/datasets/small/t.yaml", b"table_name: t\nschema: public\nuuid: 2b4e28ba-2fa1-11d2-883f-0016d3cca427\ndatabase_uuid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427\ncolumns:\n- column_name: x\n  type: INTEGER\nmetrics:\n- metric_name: count\n  expression: COUNT(*)\nversion: 1.0.0\n"),
        ("b/charts/c.yaml", b"slice_name: c\nviz_type: table\nparams: {}\nuuid: 3b4e28ba-2fa1-11d2-883f-0016d3cca427\ndataset_uuid: 2b4e28ba-2fa1-11d2-883f-0016d3cca427\nversion: 1.0.0\n"),
    ])
}

both_backends! {
    async fn hostile_bundles_are_refused_and_change_nothing(meta: Metadata) {
        let (uri, _) = analytics("CREATE TABLE public.t (x int)").await;
        let server = TestServer::builder().metadata(meta).start().await.unwrap();
        let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        let passwords = json!({"databases/small.yaml": SECRET}).to_string();
        let r = upload(&api, "/api/v1/chart/import/", "formData", small_bundle(&uri), &[("passwords", &passwords)]).await;
        assert_eq!(r, (StatusCode::OK, json!({"message": "OK"})));
        let before = counts(&api).await;
        assert_eq!(before["chart"], 1);

        const META: &[u8] = b"version: 1.0.0\ntype: Slice\n";
        let chart = |body: &str| format!("slice_name: c\nuuid: 4b4e28ba-2fa1-11d2-883f-0016d3cca427\ndataset_uuid: 2b4e28ba-2fa1-11d2-883f-0016d3cca427\n{body}").into_bytes();
        let spaces = vec![b' '; 9 * 1024 * 1024];
        let ratio = vec![b' '; 4 * 1024 * 1024];
        let seven = vec![b' '; 7 * 1024 * 1024];
        let mut laughs = String::from("slice_name: c\nuuid: 4b4e28ba-2fa1-11d2-883f-0016d3cca427\ndataset_uuid: 2b4e28ba-2fa1-11d2-883f-0016d3cca427\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..10 {
            let p = format!("*l{}", i - 1);
            laughs.push_str(&format!("l{i}: &l{i} [{}]\n", vec![p; 10].join(", ")));
        }
        laughs.push_str("params: {bomb: *l9}\n");
        let deep = format!("params: {{a: {}1{}}}", "[".repeat(200), "]".repeat(200));
        let many: Vec<(String, Vec<u8>)> = (0..10_001).map(|i| (format!("b/x/{i}.txt"), vec![])).collect();
        let many_refs: Vec<(&str, &[u8])> = many.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
        // (name, bundle, expected error_type, a substring of the message, the file in `extra`)
        let cases: Vec<Hostile> = vec![
            ("zip bomb: file over the size limit", zip_of(&[("b/metadata.yaml", META), ("b/charts/a.yaml", &spaces)]), "GENERIC_BACKEND_ERROR", "Found file with size above allowed threshold", None),
            ("zip bomb: compression ratio", zip_of(&[("b/metadata.yaml", META), ("b/charts/a.yaml", &ratio)]), "GENERIC_BACKEND_ERROR", "Zip compress ratio above allowed threshold", None),
            ("zip bomb: total size", zip_of(&[("b/metadata.yaml", META), ("b/charts/a.yaml", &seven), ("b/charts/b.yaml", &seven), ("b/charts/c.yaml", &seven), ("b/charts/d.yaml", &seven), ("b/charts/e.yaml", &seven)]), "GENERIC_BACKEND_ERROR", "Found file with size above allowed threshold", None),
            ("zip bomb: many entries", zip_of(&many_refs), "GENERIC_BACKEND_ERROR", "too many entries", None),
            ("path traversal ../", zip_of(&[("b/metadata.yaml", META), ("../charts/x.yaml", &chart(""))]), "GENERIC_BACKEND_ERROR", "path traversal", None),
            ("path traversal inside", zip_of(&[("b/metadata.yaml", META), ("b/../../etc/x.yaml", &chart(""))]), "GENERIC_BACKEND_ERROR", "path traversal", None),
            ("absolute path", zip_of(&[("b/metadata.yaml", META), ("/etc/charts/x.yaml", &chart(""))]), "GENERIC_BACKEND_ERROR", "path traversal", None),
            ("billion laughs", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", laughs.as_bytes())]), "GENERIC_COMMAND_ERROR", "charts/x.yaml", Some("charts/x.yaml")),
            ("too deep", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", &chart(&deep))]), "GENERIC_COMMAND_ERROR", "charts/x.yaml", Some("charts/x.yaml")),
            ("non-UTF-8", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", b"slice_name: \xff\xfe\n")]), "GENERIC_COMMAND_ERROR", "charts/x.yaml", Some("charts/x.yaml")),
            ("NUL in text", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", &chart("description: \"a\\0b\"\n"))]), "GENERIC_COMMAND_ERROR", "charts/x.yaml", Some("charts/x.yaml")),
            ("list instead of mapping", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", b"- slice_name: c\n")]), "GENERIC_COMMAND_ERROR", "charts/x.yaml", Some("charts/x.yaml")),
            ("number instead of uuid", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", b"slice_name: c\nuuid: 12\ndataset_uuid: 2b4e28ba-2fa1-11d2-883f-0016d3cca427\n")]), "GENERIC_COMMAND_ERROR", "charts/x.yaml", Some("charts/x.yaml")),
            ("list instead of params mapping", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", &chart("params: [1, 2]\n"))]), "GENERIC_COMMAND_ERROR", "charts/x.yaml", Some("charts/x.yaml")),
            ("metadata as a list", zip_of(&[("b/metadata.yaml", b"- 1.0.0\n"), ("b/charts/x.yaml", &chart(""))]), "GENERIC_COMMAND_ERROR", "metadata.yaml", Some("metadata.yaml")),
        ];
        for (what, bundle, error_type, message, file) in cases {
            let size = bundle.len();
            let (s, body) = upload(&api, "/api/v1/chart/import/", "formData", bundle, &[("overwrite", "true")]).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{what} ({size} bytes): {body}");
            let err = &body["errors"][0];
            assert_eq!(err["error_type"], error_type, "{what}: {body}");
            assert!(err["message"].as_str().unwrap().contains(message), "{what}: {body}");
            assert_eq!(err["level"], "error");
            assert!(err["extra"]["issue_codes"].is_array(), "{what}: {body}");
            if let Some(file) = file {
                assert!(err["extra"][file].is_object(), "{what}: the problem is filed under {file}: {body}");
            }
            assert_eq!(counts(&api).await, before, "{what} changed nothing");
        }
        // Field-level messages are marshmallow's.
        let (_, body) = upload(&api, "/api/v1/chart/import/", "formData", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", b"slice_name: [c]\nuuid: 12\ndataset_uuid: 2b4e28ba-2fa1-11d2-883f-0016d3cca427\ncache_timeout: soon\n")]), &[]).await;
        assert_eq!(body["errors"][0]["extra"]["charts/x.yaml"], json!({"slice_name": ["Not a valid string."], "uuid": ["Not a valid UUID."], "cache_timeout": ["Not a valid integer."]}));
        let (_, body) = upload(&api, "/api/v1/chart/import/", "formData", zip_of(&[("b/metadata.yaml", META), ("b/charts/x.yaml", b"- a\n")]), &[]).await;
        assert_eq!(body["errors"][0]["extra"]["charts/x.yaml"], json!({"_schema": ["Invalid input type."]}));

        // A chunked upload (no Content-Length) is bounded like a declared one.
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..10).map(|_| Ok(vec![b'x'; 1024 * 1024])).collect();
        let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
        let resp = api.request(reqwest::Method::POST, "/api/v1/chart/import/")
            .header("content-type", "multipart/form-data; boundary=XyZ")
            .body(body)
            .send()
            .await
            .unwrap();
        let (s, body) = status_json(resp).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["message"].as_str().unwrap().starts_with("Request payload is larger than"), "{body}");

        // The server still serves, and a good bundle still imports.
        let (s, _) = api.get("/api/v1/me/").await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(counts(&api).await, before);
        let r = upload(&api, "/api/v1/chart/import/", "formData", small_bundle(&uri), &[("overwrite", "true")]).await;
        assert_eq!(r, (StatusCode::OK, json!({"message": "OK"})));
        assert_eq!(counts(&api).await, before);
    }
}

/// A failure in the middle of the write phase (the dry run passed; the metadata store then
/// refuses the chart) leaves nothing of the bundle behind: one transaction.
#[tokio::test]
async fn a_failure_midway_through_the_write_rolls_everything_back() {
    let (uri, _) = analytics("CREATE TABLE public.t (x int)").await;
    let server = TestServer::builder()
        .metadata(Metadata::Postgres)
        .start()
        .await
        .unwrap();
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (meta, conn) =
        tokio_postgres::connect(server.metadata_url().unwrap(), tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(conn);
    meta.batch_execute(
        "CREATE FUNCTION refuse_chart() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN RAISE EXCEPTION 'charts are refused today'; END$$; \
         CREATE TRIGGER refuse_chart BEFORE INSERT ON slices FOR EACH ROW EXECUTE FUNCTION refuse_chart();",
    )
    .await
    .unwrap();
    let passwords = json!({"databases/small.yaml": SECRET}).to_string();
    let (s, body) = upload(
        &api,
        "/api/v1/chart/import/",
        "formData",
        small_bundle(&uri),
        &[("passwords", &passwords)],
    )
    .await;
    assert_eq!(
        (s, body),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"message": "Fatal error"})
        )
    );
    // The database and the dataset were written before the chart failed; none is left, nor
    // the permissions created with them.
    assert!(counts(&api).await.values().all(|n| *n == 0));
    let pvms: i64 = meta
        .query_one(
            "SELECT COUNT(*) FROM ab_view_menu WHERE name LIKE '[small]%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(pvms, 0, "no database_access/datasource_access left behind");

    meta.batch_execute("DROP TRIGGER refuse_chart ON slices")
        .await
        .unwrap();
    let r = upload(
        &api,
        "/api/v1/chart/import/",
        "formData",
        small_bundle(&uri),
        &[("passwords", &passwords)],
    )
    .await;
    assert_eq!(r, (StatusCode::OK, json!({"message": "OK"})));
    let c = counts(&api).await;
    assert_eq!((c["database"], c["dataset"], c["chart"]), (1, 1, 1));
}
