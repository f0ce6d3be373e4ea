//! Guest tokens (embedded dashboards' visitors): minting them as Superset 6.0 does, and what a
//! token reaches: only the dashboards it names, their charts' data as the charts were saved,
//! with the token's row-level clauses on top of the datasets' rules; never another
//! dashboard, another chart, SQL Lab, the catalog or a write. Tokens that are expired,
//! tampered with, for another audience or of another type are refused. And the embedded page:
//! served only to the dashboard's allowed origins, framable only by them.
//!
//! The world is row-level security's (`rls.rs`): `orders` with three tenants' rows.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use liteset_tests::{Api, Metadata, both_backends};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::rls::{ROWS, Tenants, ids, tenants_with};

const SECRET: &str = "guest-secret-for-tests-only-7f3a";
const AUDIENCE: &str = "liteset-tests";

struct World {
    t: Tenants,
    /// Chart A (columns id, tenant) on dashboard A, which is embedded.
    chart_a: i64,
    /// Chart B (columns id, amount) on dashboard B only.
    chart_b: i64,
    dash_a: i64,
    dash_b: i64,
    /// Dashboard A's embedded uuid.
    uuid: String,
}

fn context(ds: i64, columns: Value, chart: Option<i64>, dashboard: i64) -> Value {
    let mut fd = json!({"dashboardId": dashboard, "viz_type": "table"});
    if let Some(c) = chart {
        fd["slice_id"] = json!(c);
    }
    json!({"datasource": {"id": ds, "type": "table"}, "force": false,
           "queries": [{"columns": columns, "metrics": [], "row_limit": 100,
                        "orderby": [["id", true]]}],
           "form_data": fd, "result_format": "json", "result_type": "full"})
}

async fn created(api: &Api, path: &str, body: Value) -> Value {
    let (s, r) = api.post(path, body.clone()).await;
    assert!(s.is_success(), "POST {path} {body}: {s} {r}");
    r
}

async fn world(meta: Metadata) -> World {
    let t = tenants_with(
        meta,
        &[
            ("LITESET_EMBEDDED__GUEST_TOKEN_SECRET", SECRET),
            ("LITESET_EMBEDDED__GUEST_TOKEN_AUDIENCE", AUDIENCE),
        ],
    )
    .await;
    let ds = t.dataset;
    let dash_a = created(
        &t.admin,
        "/api/v1/dashboard/",
        json!({"dashboard_title": "Tenant board", "published": true}),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let dash_b = created(
        &t.admin,
        "/api/v1/dashboard/",
        json!({"dashboard_title": "Other board", "published": true}),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let mut charts = vec![];
    for (name, cols, dash) in [
        ("A", json!(["id", "tenant"]), dash_a),
        ("B", json!(["id", "amount"]), dash_b),
    ] {
        let params = json!({"viz_type": "table", "datasource": format!("{ds}__table"),
                            "query_mode": "raw", "all_columns": cols});
        let qc = context(ds, cols, None, dash);
        let r = created(
            &t.admin,
            "/api/v1/chart/",
            json!({"slice_name": format!("Chart {name}"), "viz_type": "table",
                   "datasource_id": ds, "datasource_type": "table",
                   "params": params.to_string(), "query_context": qc.to_string(),
                   "dashboards": [dash]}),
        )
        .await;
        charts.push(r["id"].as_i64().unwrap());
    }
    let (s, e) = t
        .admin
        .post(
            &format!("/api/v1/dashboard/{dash_a}/embedded"),
            json!({"allowed_domains": ["http://host.example:8080"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{e}");
    let uuid = e["result"]["uuid"].as_str().unwrap().to_owned();
    World {
        t,
        chart_a: charts[0],
        chart_b: charts[1],
        dash_a,
        dash_b,
        uuid,
    }
}

async fn mint(w: &World, resources: Value, rls: Value) -> String {
    let r = created(
        &w.t.admin,
        "/api/v1/security/guest_token/",
        json!({"user": {"username": "visitor", "first_name": "Vi", "last_name": "Sitor"},
               "resources": resources, "rls": rls}),
    )
    .await;
    r["token"].as_str().expect("token").to_owned()
}

/// The ids of rows with these tenants.
fn rows_of(tenants: &[&str]) -> Vec<i64> {
    let mut v: Vec<i64> = ROWS
        .iter()
        .filter(|r| tenants.contains(&r.1))
        .map(|r| r.0)
        .collect();
    v.sort_unstable();
    v
}

/// A JWT segment: URL-safe base64 without padding.
fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

/// A token signed here with the server's guest secret, for claims the server never mints.
fn forge(claims: Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

both_backends! {
    /// `POST /security/guest_token/` as Superset 6.0 answers it, and only to holders of
    /// `can_grant_guest_token`, for dashboards they may open.
    async fn guest_tokens_are_minted_as_superset_does(meta: Metadata) {
        let w = world(meta).await;
        let by_uuid = mint(&w, json!([{"type": "dashboard", "id": w.uuid}]), json!([])).await;
        assert_eq!(by_uuid.split('.').count(), 3, "{by_uuid}");
        // By the dashboard's id too (Superset's fallback), as a string or a number.
        mint(&w, json!([{"type": "dashboard", "id": w.dash_a.to_string()}]), json!([])).await;
        mint(&w, json!([{"type": "dashboard", "id": w.dash_a}]), json!([])).await;

        for (body, message) in [
            (json!({"resources": [{"type": "dashboard", "id": w.uuid}]}),
             json!({"rls": ["Missing data for required field."]})),
            (json!({"rls": []}), json!({"resources": ["Missing data for required field."]})),
            (json!({"resources": [{"type": "dashboard", "id": "no-such-uuid"}], "rls": []}),
             json!("EmbeddedDashboard not found.")),
            (json!({"resources": [{"type": "chart", "id": w.chart_a}], "rls": []}),
             json!({"resources": {"0": {"type": ["Must be one of: dashboard."]}}})),
            (json!({"resources": [{"type": "dashboard", "id": w.uuid}],
                    "rls": [{"clause": "  "}]}),
             json!({"rls": {"0": {"clause": ["Shorter than minimum length 1."]}}})),
        ] {
            let (s, r) = w.t.admin.post("/api/v1/security/guest_token/", body.clone()).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {r}");
            assert_eq!(r["message"], message, "{body}");
        }
        // Ordinary accounts may not mint tokens (Superset: Admin only).
        for (name, _, api) in &w.t.users {
            let (s, r) = api
                .post("/api/v1/security/guest_token/",
                      json!({"resources": [{"type": "dashboard", "id": w.uuid}], "rls": []}))
                .await;
            assert_eq!(s, StatusCode::FORBIDDEN, "{name}: {r}");
        }
        // Without credentials: refused (Superset's CSRF check answers first, 400, as here;
        // with a CSRF token of an anonymous session, 401).
        let anon = reqwest::Client::new()
            .post(w.t.server.url("/api/v1/security/guest_token/"))
            .json(&json!({"resources": [{"type": "dashboard", "id": w.uuid}], "rls": []}))
            .send()
            .await
            .unwrap();
        let (s, r) = liteset_tests::status_json(anon).await;
        assert!(s == StatusCode::BAD_REQUEST || s == StatusCode::UNAUTHORIZED, "{s} {r}");
        assert!(r.get("token").is_none(), "{r}");
    }

    /// A guest reads its dashboard, its charts and their data as saved, with the token's
    /// clauses applied; nothing else, and never a changed chart payload.
    async fn a_guest_reaches_only_its_dashboard_as_saved(meta: Metadata) {
        let w = world(meta).await;
        let ds = w.t.dataset;
        let token = mint(
            &w,
            json!([{"type": "dashboard", "id": w.uuid}]),
            json!([{"clause": "tenant = 'acme'"},
                   {"dataset": 999_999, "clause": "1 = 0"}]),
        )
        .await;
        let g = Api::guest(&w.t.server, &token);

        let (s, me) = g.get("/api/v1/me/roles/").await;
        assert_eq!(s, StatusCode::OK, "{me}");
        assert_eq!(me["result"]["username"], "visitor");
        assert_eq!(me["result"]["firstName"], "Vi");
        assert_eq!(me["result"]["isAnonymous"], false);
        assert!(me["result"].get("userId").is_none(), "{me}");
        assert!(me["result"].get("email").is_none(), "{me}");

        let (s, d) = g.get(&format!("/api/v1/dashboard/{}", w.dash_a)).await;
        assert_eq!(s, StatusCode::OK, "{d}");
        assert_eq!(d["result"]["dashboard_title"], "Tenant board");
        let (s, c) = g.get(&format!("/api/v1/dashboard/{}/charts", w.dash_a)).await;
        assert_eq!(s, StatusCode::OK, "{c}");
        let charts: Vec<i64> = c["result"].as_array().unwrap().iter()
            .map(|c| c["id"].as_i64().unwrap()).collect();
        assert_eq!(charts, vec![w.chart_a]);
        let (s, l) = g.get("/api/v1/dashboard/").await;
        assert_eq!(s, StatusCode::OK, "{l}");
        assert_eq!(l["ids"], json!([w.dash_a]), "{l}");
        let (s, l) = g.get("/api/v1/chart/").await;
        assert_eq!(s, StatusCode::OK, "{l}");
        assert_eq!(l["ids"], json!([w.chart_a]), "{l}");

        // The chart's data as the dashboard asks it: acme's rows only.
        let (s, r) = g
            .post("/api/v1/chart/data",
                  context(ds, json!(["id", "tenant"]), Some(w.chart_a), w.dash_a))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(ids(&r), rows_of(&["acme"]));
        let (s, r) = g.get(&format!("/api/v1/chart/{}/data/", w.chart_a)).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(ids(&r), rows_of(&["acme"]));

        // Every other way of asking: refused with Superset's error.
        let refused = [
            // A column the chart was not saved with.
            context(ds, json!(["id", "tenant", "amount"]), Some(w.chart_a), w.dash_a),
            context(ds, json!(["amount"]), Some(w.chart_a), w.dash_a),
            // Another dashboard's chart.
            context(ds, json!(["id", "amount"]), Some(w.chart_b), w.dash_b),
            context(ds, json!(["id", "amount"]), Some(w.chart_b), w.dash_a),
            // No chart at all: an open query on the dataset.
            context(ds, json!(["id", "amount"]), None, w.dash_a),
            // The chart's columns with an ad-hoc SQL column smuggled in as `groupby`.
            {
                let mut c = context(ds, json!(["id", "tenant"]), Some(w.chart_a), w.dash_a);
                c["queries"][0]["groupby"] = json!([{"sqlExpression": "amount", "label": "x",
                                                      "expressionType": "SQL"}]);
                c["queries"][0].as_object_mut().unwrap().remove("columns");
                c
            },
            // Raw rows.
            {
                let mut c = context(ds, json!(["id", "tenant"]), Some(w.chart_a), w.dash_a);
                c["result_type"] = json!("samples");
                c
            },
            {
                let mut c = context(ds, json!(["id", "tenant"]), Some(w.chart_a), w.dash_a);
                c["result_type"] = json!("drill_detail");
                c
            },
            {
                let mut c = context(ds, json!(["id", "tenant"]), Some(w.chart_a), w.dash_a);
                c["queries"][0]["metrics"] = json!([{"expressionType": "SQL",
                    "sqlExpression": "SUM(amount)", "label": "s"}]);
                c
            },
        ];
        for body in refused {
            let (s, r) = g.post("/api/v1/chart/data", body.clone()).await;
            assert_eq!(s, StatusCode::FORBIDDEN, "{body}: {r}");
            assert_eq!(r["errors"][0]["error_type"], "DASHBOARD_SECURITY_ACCESS_ERROR", "{r}");
            assert!(!r.to_string().contains("bolt"), "{r}");
        }
        for (path, statuses) in [
            (format!("/api/v1/dashboard/{}", w.dash_b), &[403, 404][..]),
            (format!("/api/v1/dashboard/{}/charts", w.dash_b), &[403, 404][..]),
            (format!("/api/v1/chart/{}", w.chart_b), &[403, 404][..]),
            (format!("/api/v1/chart/{}/data/", w.chart_b), &[403, 404][..]),
            ("/api/v1/database/".into(), &[403][..]),
            (format!("/api/v1/dataset/{ds}"), &[403][..]),
            ("/api/v1/dataset/".into(), &[403][..]),
            ("/api/v1/rowlevelsecurity/".into(), &[403][..]),
            ("/api/v1/security/users/".into(), &[403][..]),
            ("/api/v1/query/".into(), &[403][..]),
            ("/api/v1/saved_query/".into(), &[403][..]),
            (format!("/api/v1/embedded_dashboard/{}", w.uuid), &[403][..]),
        ] {
            let (s, r) = g.get(&path).await;
            assert!(statuses.contains(&s.as_u16()), "GET {path}: {s} {r}");
            assert!(!r.to_string().contains("bolt"), "GET {path}: {r}");
        }
        for (path, body) in [
            ("/api/v1/sqllab/execute/".to_owned(),
             json!({"database_id": 1, "sql": "SELECT * FROM orders"})),
            ("/api/v1/security/guest_token/".to_owned(),
             json!({"resources": [{"type": "dashboard", "id": w.dash_b}], "rls": []})),
            ("/api/v1/dashboard/".to_owned(), json!({"dashboard_title": "mine"})),
            ("/api/v1/chart/".to_owned(),
             json!({"slice_name": "x", "datasource_id": ds, "datasource_type": "table"})),
            ("/api/v1/rowlevelsecurity/".to_owned(),
             json!({"name": "x", "filter_type": "Base", "tables": [ds], "roles": [],
                    "clause": "1 = 1"})),
        ] {
            let (s, r) = g.post(&path, body).await;
            assert_eq!(s, StatusCode::FORBIDDEN, "POST {path}: {r}");
        }
        let (s, r) = g
            .put(&format!("/api/v1/dashboard/{}", w.dash_a), json!({"dashboard_title": "x"}))
            .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
        let (s, r) = g.delete(&format!("/api/v1/chart/{}", w.chart_a)).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
        let (_, d) = w.t.admin.get(&format!("/api/v1/dashboard/{}", w.dash_a)).await;
        assert_eq!(d["result"]["dashboard_title"], "Tenant board");
    }

    /// Tokens the server did not mint as they are, or that are past their time: 401, and
    /// the credentials of a session never mix with a token's.
    async fn bad_guest_tokens_are_refused(meta: Metadata) {
        let w = world(meta).await;
        let now = chrono::Utc::now().timestamp() as f64;
        let claims = |exp: f64, aud: &str, kind: &str| json!({
            "user": {"username": "x"}, "resources": [{"type": "dashboard", "id": w.uuid}],
            "rls_rules": [], "iat": now, "exp": exp, "aud": aud, "type": kind});
        // A token forged with the right secret and claims passes (float times, as Superset
        // writes them): the refusals below are about what differs.
        let good = forge(claims(now + 60.0, AUDIENCE, "guest"), SECRET);
        let (s, r) = Api::guest(&w.t.server, &good)
            .get(&format!("/api/v1/dashboard/{}", w.dash_a))
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let minted = mint(&w, json!([{"type": "dashboard", "id": w.uuid}]), json!([])).await;
        let mut tampered: Vec<String> = minted.split('.').map(str::to_owned).collect();
        // The payload swapped for one naming the other dashboard, the signature kept.
        tampered[1] = b64(&claims(now + 60.0, AUDIENCE, "guest")
            .to_string()
            .replace(&w.uuid, &w.dash_b.to_string()));
        let bad = [
            ("expired", forge(claims(now - 1.0, AUDIENCE, "guest"), SECRET)),
            ("other audience", forge(claims(now + 60.0, "elsewhere", "guest"), SECRET)),
            ("other secret", forge(claims(now + 60.0, AUDIENCE, "guest"), "guess")),
            ("not a guest token", forge(claims(now + 60.0, AUDIENCE, "access"), SECRET)),
            ("no audience", forge(json!({"user": {}, "resources": [], "rls_rules": [],
                                          "exp": now + 60.0, "type": "guest"}), SECRET)),
            ("alg none", format!("{}.{}.",
                b64(r#"{"alg":"none","typ":"JWT"}"#),
                b64(&claims(now + 60.0, AUDIENCE, "guest").to_string()))),
            ("tampered", tampered.join(".")),
            ("garbage", "not-a-token".to_owned()),
        ];
        for (what, token) in bad {
            let (s, r) = Api::guest(&w.t.server, &token)
                .get(&format!("/api/v1/dashboard/{}", w.dash_a))
                .await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{what}: {r}");
            assert!(r.get("msg").is_some() || r.get("message").is_some(), "{what}: {r}");
        }
        // A guest header switches CSRF off only for the guest it authenticates: with a
        // Bearer token beside a bad (or empty-looking) guest token and no CSRF token, the
        // caller is the refused guest, not the Bearer user, and nothing is written.
        for junk in ["garbage", " ", &forge(claims(now - 5.0, AUDIENCE, "guest"), SECRET)] {
            let resp = reqwest::Client::new()
                .post(w.t.server.url("/api/v1/dashboard/"))
                .bearer_auth(&w.t.admin.token)
                .header("X-GuestToken", junk)
                .json(&json!({"dashboard_title": "csrf-smuggled"}))
                .send()
                .await
                .unwrap();
            assert!(resp.status().is_client_error(), "{junk:?}: {}", resp.status());
        }
        let (_, l) = w
            .t
            .admin
            .get("/api/v1/dashboard/?q=(filters:!((col:dashboard_title,opr:ct,value:smuggled)))")
            .await;
        assert_eq!(l["count"], 0, "{l}");
        // A login token is no guest token, nor the other way round.
        let (s, _) = Api::guest(&w.t.server, &w.t.admin.token)
            .get(&format!("/api/v1/dashboard/{}", w.dash_a))
            .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        let as_bearer = reqwest::Client::new()
            .get(w.t.server.url(&format!("/api/v1/dashboard/{}", w.dash_a)))
            .bearer_auth(&minted)
            .send()
            .await
            .unwrap();
        // flask-jwt's refusal of a token it did not sign (422), as in Superset.
        assert!(matches!(as_bearer.status().as_u16(), 401 | 422), "{}", as_bearer.status());
    }

    /// Two visitors of different tenants open the same chart at once, many times: each gets
    /// only its own rows (the results cache and single flight key on the clauses).
    async fn concurrent_guests_never_see_each_others_rows(meta: Metadata) {
        let w = world(meta).await;
        let ds = w.t.dataset;
        let mut guests = vec![];
        for tenant in ["acme", "bolt", "cyan"] {
            let token = mint(
                &w,
                json!([{"type": "dashboard", "id": w.uuid}]),
                json!([{"dataset": ds, "clause": format!("tenant = '{tenant}'")}]),
            )
            .await;
            guests.push((tenant, Api::guest(&w.t.server, &token)));
        }
        let body = context(ds, json!(["id", "tenant"]), Some(w.chart_a), w.dash_a);
        let mut tasks = vec![];
        for round in 0..6 {
            for (tenant, g) in &guests {
                let (tenant, body) = (*tenant, body.clone());
                let req = g.request(reqwest::Method::POST, "/api/v1/chart/data").json(&body);
                tasks.push(tokio::spawn(async move {
                    let resp = req.send().await.unwrap();
                    let (s, r) = liteset_tests::status_json(resp).await;
                    (round, tenant, s, r)
                }));
            }
        }
        for t in tasks {
            let (round, tenant, s, r) = t.await.unwrap();
            assert_eq!(s, StatusCode::OK, "{tenant} round {round}: {r}");
            assert_eq!(ids(&r), rows_of(&[tenant]), "{tenant} round {round}");
        }
        // The datasets' own rules still apply to a guest: a Base rule naming no role filters
        // everyone, guests included.
        let (s, r) = w
            .t
            .admin
            .post(
                "/api/v1/rowlevelsecurity/",
                json!({"name": "north only", "filter_type": "Base", "tables": [ds],
                       "roles": [], "clause": "region = 'north'"}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let (s, r) = guests[0].1.post("/api/v1/chart/data", body.clone()).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        let want: Vec<i64> = ROWS
            .iter()
            .filter(|r| r.1 == "acme" && r.2 == "north")
            .map(|r| r.0)
            .collect();
        assert_eq!(ids(&r), want);
    }

    /// `/embedded/<uuid>`: served to the allowed origin with a policy only it may frame,
    /// refused to any other page (Superset's `Referer` check), 404 for an unknown uuid.
    async fn the_embedded_page_is_served_only_to_allowed_origins(meta: Metadata) {
        let w = world(meta).await;
        let client = reqwest::Client::new();
        let page = |referer: Option<&str>, uuid: &str| {
            let mut req = client.get(w.t.server.url(&format!("/embedded/{uuid}")));
            if let Some(r) = referer {
                req = req.header("Referer", r);
            }
            req.send()
        };
        let ok = page(Some("http://host.example:8080/app/page?x=1"), &w.uuid).await.unwrap();
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(
            ok.headers().get("content-security-policy").and_then(|v| v.to_str().ok()),
            Some("frame-ancestors http://host.example:8080")
        );
        assert!(ok.headers().get("x-frame-options").is_none());
        for referer in [
            None,
            Some("http://host.example:8081/"),
            Some("https://host.example:8080/"),
            Some("http://evil.example/?http://host.example:8080"),
            Some("http://host.example:8080.evil.example/"),
            Some("not a url"),
        ] {
            let r = page(referer, &w.uuid).await.unwrap();
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "{referer:?}");
        }
        let r = page(Some("http://host.example:8080/"), "0f0e0d0c-no-such").await.unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        // No allowed domains: every page may embed it, as in Superset.
        let (s, e) = w
            .t
            .admin
            .put(&format!("/api/v1/dashboard/{}/embedded", w.dash_a), json!({"allowed_domains": []}))
            .await;
        assert_eq!(s, StatusCode::OK, "{e}");
        let r = page(None, &w.uuid).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(
            r.headers().get("content-security-policy").and_then(|v| v.to_str().ok()),
            Some("frame-ancestors *")
        );
        // Every other page still refuses framing by other sites.
        let r = client.get(w.t.server.url("/login/")).send().await.unwrap();
        assert_eq!(
            r.headers().get("x-frame-options").and_then(|v| v.to_str().ok()),
            Some("SAMEORIGIN")
        );
    }
}
