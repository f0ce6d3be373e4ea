//! Row-level security: the rules API with Superset 6.0's shapes (recorded from a real
//! Superset 6.0.0), and the rules applied to every way a dataset's rows leave the server, for
//! every combination of rule type, group key and role, with cached answers never crossing
//! rules (two tenants asking the same chart at once).
//!
//! The analytics table `orders` holds three tenants' rows; users hold tenant roles:
//!
//! | rule | type | roles | group | clause |
//! | --- | --- | --- | --- | --- |
//! | tenant acme | Regular | ta | tenant | `tenant = 'acme'` |
//! | tenant bolt | Regular | tb | tenant | `tenant = 'bolt'` |
//! | north | Regular | north | — | `region = 'north'` |
//! | nobody else | Base | ta, tb, auditor | — | `1 = 0` |

use std::collections::BTreeSet;

use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, both_backends, pg};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::common::{permission, role_id};

/// (id, tenant, region, amount, year).
pub(super) const ROWS: &[(i64, &str, &str, i64, i32)] = &[
    (1, "acme", "north", 10, 2024),
    (2, "acme", "south", 20, 2024),
    (3, "bolt", "north", 30, 2024),
    (4, "bolt", "south", 40, 2024),
    (5, "cyan", "north", 50, 2024),
    (11, "acme", "north", 100, 2023),
    (12, "bolt", "south", 200, 2023),
    (13, "cyan", "north", 300, 2023),
];

/// The users, their tenant roles and the rows the rules leave each of them.
const USERS: &[(&str, &[&str])] = &[
    ("alice", &["ta"]),
    ("bob", &["tb"]),
    ("carol", &["ta", "tb"]),
    ("nora", &["ta", "north"]),
    ("eve", &[]),
    ("audrey", &["auditor"]),
];

/// Whether the rules of the table above let a holder of `roles` see `row`.
fn visible(roles: &[&str], row: &(i64, &str, &str, i64, i32)) -> bool {
    let has = |r: &str| roles.contains(&r);
    // The group "tenant": a holder of ta or tb sees that tenant's rows (OR-ed).
    let tenant = !(has("ta") || has("tb"))
        || (has("ta") && row.1 == "acme")
        || (has("tb") && row.1 == "bolt");
    let north = !has("north") || row.2 == "north";
    // Base "1 = 0" for everyone outside ta, tb and auditor.
    let base = has("ta") || has("tb") || has("auditor");
    tenant && north && base
}

fn expected(roles: &[&str]) -> Vec<i64> {
    ROWS.iter()
        .filter(|r| visible(roles, r))
        .map(|r| r.0)
        .collect()
}

pub(super) struct Tenants {
    /// Kept running for the test's length.
    pub(super) server: TestServer,
    pub(super) admin: Api,
    pub(super) users: Vec<(&'static str, &'static [&'static str], Api)>,
    pub(super) dataset: i64,
    /// Role ids by name.
    pub(super) roles: Vec<(&'static str, i64)>,
}

impl Tenants {
    fn role(&self, name: &str) -> i64 {
        self.roles
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, id)| *id)
            .expect("role")
    }
}

async fn tenants(meta: Metadata) -> Tenants {
    tenants_with(meta, &[]).await
}

/// [`tenants`] on a server started with extra environment variables.
pub(super) async fn tenants_with(meta: Metadata, env: &[(&str, &str)]) -> Tenants {
    let url = pg().await.fresh_database().await;
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let values: Vec<String> = ROWS
        .iter()
        .map(|(id, t, r, a, y)| format!("({id}, '{t}', '{r}', {a}, '{y}-01-0{}')", id % 10))
        .collect();
    client
        .batch_execute(&format!(
            "CREATE TABLE public.orders (id int, tenant text, region text, amount int, ds date); \
             INSERT INTO public.orders VALUES {};",
            values.join(", ")
        ))
        .await
        .expect("orders");
    let mut builder = TestServer::builder().metadata(meta);
    for (k, v) in env {
        builder = builder.env(*k, *v);
    }
    let server = builder.start().await.expect("server");
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, db) = admin
        .post(
            "/api/v1/database/",
            json!({"database_name": "tenants", "sqlalchemy_uri": url}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    let (s, ds) = admin
        .post(
            "/api/v1/dataset/",
            json!({"database": db["id"], "schema": "public", "table_name": "orders"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let dataset = ds["id"].as_i64().expect("dataset id");

    let mut roles = Vec::new();
    for name in ["reader", "ta", "tb", "north", "auditor"] {
        let (s, r) = admin
            .post("/api/v1/security/roles/", json!({"name": name}))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        roles.push((name, r["id"].as_i64().expect("role id")));
    }
    let access = permission(
        &admin,
        &format!("[tenants].[orders](id:{dataset})"),
        "datasource_access",
    )
    .await;
    let (s, r) = admin
        .post(
            &format!("/api/v1/security/roles/{}/permissions", roles[0].1),
            json!({"permission_view_menu_ids": [access]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let gamma = role_id(&admin, "Gamma").await;
    let mut users = Vec::new();
    for (name, tenant_roles) in USERS {
        let mut ids = vec![gamma, roles[0].1];
        ids.extend(
            tenant_roles
                .iter()
                .map(|t| roles.iter().find(|(n, _)| n == t).expect("role").1),
        );
        let (s, u) = admin
            .post(
                "/api/v1/security/users/",
                json!({"username": name, "first_name": name, "last_name": "T",
                       "email": format!("{name}@example.com"), "password": "tenant-pass-123",
                       "roles": ids, "active": true}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{u}");
        users.push((
            *name,
            *tenant_roles,
            Api::login(&server, name, "tenant-pass-123").await,
        ));
    }
    Tenants {
        server,
        admin,
        users,
        dataset,
        roles,
    }
}

/// Creates the four rules of the module's table.
async fn create_rules(t: &Tenants) {
    let rules = [
        (
            "tenant a",
            "Regular",
            vec!["ta"],
            Some("tenant"),
            "tenant = 'acme'",
        ),
        (
            "tenant b",
            "Regular",
            vec!["tb"],
            Some("tenant"),
            "tenant = 'bolt'",
        ),
        ("north", "Regular", vec!["north"], None, "region = 'north'"),
        (
            "nobody else",
            "Base",
            vec!["ta", "tb", "auditor"],
            None,
            "1 = 0",
        ),
    ];
    for (name, kind, roles, group, clause) in rules {
        let roles: Vec<i64> = roles.iter().map(|r| t.role(r)).collect();
        let (s, r) = t
            .admin
            .post(
                "/api/v1/rowlevelsecurity/",
                json!({"name": name, "filter_type": kind, "tables": [t.dataset], "roles": roles,
                       "group_key": group, "clause": clause}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{name}: {r}");
    }
}

fn context(dataset: i64, result_type: &str, result_format: &str, queries: Value) -> Value {
    json!({"datasource": {"id": dataset, "type": "table"}, "force": false,
           "queries": queries, "result_type": result_type, "result_format": result_format})
}

/// The sorted `id`s of a JSON answer's first result.
pub(super) fn ids(body: &Value) -> Vec<i64> {
    let mut ids: Vec<i64> = body["result"][0]["data"]
        .as_array()
        .unwrap_or_else(|| panic!("no data: {body}"))
        .iter()
        .map(|r| r["id"].as_i64().expect("id"))
        .collect();
    ids.sort_unstable();
    ids
}

async fn chart_data(api: &Api, body: &Value) -> Value {
    let (s, r) = api.post("/api/v1/chart/data", body.clone()).await;
    assert_eq!(s, StatusCode::OK, "{body}: {r}");
    r
}

both_backends! {
    /// The rules API answers as Superset 6.0 does (recorded), and only to holders of its
    /// permissions.
    async fn the_rules_api_round_trips_with_superset_shapes(meta: Metadata) {
        let t = tenants(meta).await;
        let (ta, tb) = (t.role("ta"), t.role("tb"));
        let (s, r) = t
            .admin
            .post(
                "/api/v1/rowlevelsecurity/",
                json!({"name": "r1", "filter_type": "Regular", "tables": [t.dataset],
                       "roles": [ta], "clause": "region = 'North'", "group_key": "g",
                       "description": "d"}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let r1 = r["id"].as_i64().expect("id");
        assert_eq!(
            r["result"],
            json!({"clause": "region = 'North'", "description": "d", "filter_type": "Regular",
                   "group_key": "g", "name": "r1", "roles": [ta], "tables": [t.dataset]})
        );
        let (s, r) = t
            .admin
            .post(
                "/api/v1/rowlevelsecurity/",
                json!({"name": "r2", "filter_type": "Base", "tables": [t.dataset],
                       "roles": [], "clause": "1 = 1"}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{r}");
        let r2 = r["id"].as_i64().expect("id");

        // A second rule of the same name: 422, as Superset (whose text is an empty tuple).
        let (s, r) = t
            .admin
            .post(
                "/api/v1/rowlevelsecurity/",
                json!({"name": "r1", "filter_type": "Regular", "tables": [t.dataset],
                       "roles": [ta], "clause": "x"}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert!(r["message"].is_string(), "{r}");

        // Refusals, as Superset words them.
        for (body, status, message) in [
            (
                json!({"name": "r3", "filter_type": "Regular", "tables": [t.dataset],
                       "roles": [999_999], "clause": "x"}),
                StatusCode::UNPROCESSABLE_ENTITY,
                json!("[l'Some roles do not exist']"),
            ),
            (
                json!({"name": "r4", "filter_type": "Regular", "tables": [999_999],
                       "roles": [ta], "clause": "x"}),
                StatusCode::UNPROCESSABLE_ENTITY,
                json!("[l'Datasource does not exist']"),
            ),
            (
                json!({"name": "r5"}),
                StatusCode::BAD_REQUEST,
                json!({"clause": ["Missing data for required field."],
                       "filter_type": ["Missing data for required field."],
                       "roles": ["Missing data for required field."],
                       "tables": ["Missing data for required field."]}),
            ),
            (
                json!({"name": "r6", "filter_type": "Nope", "tables": [], "roles": [ta],
                       "clause": "x"}),
                StatusCode::BAD_REQUEST,
                json!({"filter_type": ["Must be one of: Regular, Base."],
                       "tables": ["Shorter than minimum length 1."]}),
            ),
            (
                json!({"name": "r7", "filter_type": "Base", "tables": [t.dataset],
                       "roles": [ta], "clause": null, "group_key": null, "description": null}),
                StatusCode::BAD_REQUEST,
                json!({"clause": ["Field may not be null."]}),
            ),
        ] {
            let (s, r) = t.admin.post("/api/v1/rowlevelsecurity/", body.clone()).await;
            assert_eq!(s, status, "{body}: {r}");
            assert_eq!(r["message"], message, "{body}");
        }

        let (s, list) = t.admin.get("/api/v1/rowlevelsecurity/").await;
        assert_eq!(s, StatusCode::OK, "{list}");
        assert_eq!(list["count"], 2, "{list}");
        let first = &list["result"][0];
        assert_eq!(first["id"], r1);
        assert_eq!(first["name"], "r1");
        assert_eq!(first["description"], "d");
        assert_eq!(first["filter_type"], "Regular");
        assert_eq!(first["group_key"], "g");
        assert_eq!(first["clause"], "region = 'North'");
        assert_eq!(first["roles"], json!([{"id": ta, "name": "ta"}]));
        assert_eq!(
            first["tables"],
            json!([{"id": t.dataset, "schema": "public", "table_name": "orders"}])
        );
        assert_eq!(first["changed_by"]["first_name"], "Superset", "{first}");
        assert_eq!(first["changed_on_delta_humanized"], "now", "{first}");
        assert_eq!(list["result"][1]["group_key"], Value::Null);
        assert_eq!(list["result"][1]["roles"], json!([]));

        let (s, show) = t.admin.get(&format!("/api/v1/rowlevelsecurity/{r1}")).await;
        assert_eq!(s, StatusCode::OK, "{show}");
        assert_eq!(show["id"], r1);
        assert_eq!(show["result"]["name"], "r1");
        assert_eq!(show["result"]["roles"], json!([{"id": ta, "name": "ta"}]));
        assert_eq!(
            show["result"]["tables"],
            json!([{"id": t.dataset, "schema": "public", "table_name": "orders"}])
        );
        assert_eq!(show["show_title"], "Show Row Level Security Filter");
        let (s, r) = t.admin.get("/api/v1/rowlevelsecurity/999999").await;
        assert_eq!((s, r), (StatusCode::NOT_FOUND, json!({"message": "Not found"})));

        let (s, r) = t
            .admin
            .put(
                &format!("/api/v1/rowlevelsecurity/{r1}"),
                json!({"clause": "region = 'South'", "roles": [tb]}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r, json!({"id": r1, "result": {"clause": "region = 'South'", "roles": [tb]}}));
        let (_, show) = t.admin.get(&format!("/api/v1/rowlevelsecurity/{r1}")).await;
        assert_eq!(show["result"]["roles"], json!([{"id": tb, "name": "tb"}]));
        assert_eq!(show["result"]["clause"], "region = 'South'");
        // As in Superset, a list the body leaves out is emptied (recorded: a PUT of `clause`
        // alone leaves the rule without datasets and roles); the rest stays.
        assert_eq!(show["result"]["tables"], json!([]));
        let (s, _) = t
            .admin
            .put(
                &format!("/api/v1/rowlevelsecurity/{r1}"),
                json!({"name": "r1b", "tables": [t.dataset]}),
            )
            .await;
        assert_eq!(s, StatusCode::OK);
        let (_, show) = t.admin.get(&format!("/api/v1/rowlevelsecurity/{r1}")).await;
        assert_eq!(show["result"]["name"], "r1b");
        assert_eq!(show["result"]["roles"], json!([]));
        assert_eq!(show["result"]["clause"], "region = 'South'");
        assert_eq!(show["result"]["description"], "d");
        assert_eq!(show["result"]["group_key"], "g");
        assert_eq!(
            show["result"]["tables"],
            json!([{"id": t.dataset, "schema": "public", "table_name": "orders"}])
        );
        let (s, r) = t
            .admin
            .put(&format!("/api/v1/rowlevelsecurity/{r1}"), json!({"roles": [999_999]}))
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(r["message"], "[l'Some roles do not exist']");
        let (s, _) = t
            .admin
            .put("/api/v1/rowlevelsecurity/999999", json!({"clause": "x"}))
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND);

        let (s, info) = t.admin.get("/api/v1/rowlevelsecurity/_info").await;
        assert_eq!(s, StatusCode::OK, "{info}");
        let mut perms: Vec<&str> = info["permissions"]
            .as_array()
            .expect("permissions")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        perms.sort_unstable();
        assert_eq!(perms, ["can_read", "can_write"]);
        let (s, related) = t.admin.get("/api/v1/rowlevelsecurity/related/tables").await;
        assert_eq!(s, StatusCode::OK, "{related}");
        assert_eq!(
            related,
            json!({"count": 1, "result": [{"extra": {}, "text": "public.orders", "value": t.dataset}]})
        );
        let (s, related) = t.admin.get("/api/v1/rowlevelsecurity/related/roles").await;
        assert_eq!(s, StatusCode::OK, "{related}");
        assert!(
            related["result"]
                .as_array()
                .expect("roles")
                .contains(&json!({"extra": {}, "text": "ta", "value": ta})),
            "{related}"
        );

        // Ordinary accounts neither read nor write rules.
        let alice = &t.users[0].2;
        for (s, r) in [
            alice.get("/api/v1/rowlevelsecurity/").await,
            alice.get(&format!("/api/v1/rowlevelsecurity/{r1}")).await,
            alice
                .post(
                    "/api/v1/rowlevelsecurity/",
                    json!({"name": "mine", "filter_type": "Base", "tables": [t.dataset],
                           "roles": [], "clause": "1 = 1"}),
                )
                .await,
            alice.delete(&format!("/api/v1/rowlevelsecurity/{r1}")).await,
        ] {
            assert_eq!(s, StatusCode::FORBIDDEN, "{r}");
        }

        let (s, r) = t.admin.delete("/api/v1/rowlevelsecurity/999999").await;
        assert_eq!((s, r), (StatusCode::NOT_FOUND, json!({"message": "Not found"})));
        let (s, _) = t
            .admin
            .delete(&format!("/api/v1/rowlevelsecurity/?q=!({r2},999999)"))
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND);
        let (s, r) = t.admin.delete(&format!("/api/v1/rowlevelsecurity/?q=!({r2})")).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"message": "Deleted 1 rules"})));
        let (s, r) = t.admin.delete(&format!("/api/v1/rowlevelsecurity/{r1}")).await;
        assert_eq!((s, r), (StatusCode::OK, json!({"message": "OK"})));
        let (_, list) = t.admin.get("/api/v1/rowlevelsecurity/").await;
        assert_eq!(list["count"], 0, "{list}");
    }

    /// Every result type, totals, series limits, time offsets and CSV carry each user's rules;
    /// the answers before the rules existed are not served after.
    async fn every_answer_carries_the_callers_rules(meta: Metadata) {
        let t = tenants(meta).await;
        let raw = |result_type: &str, format: &str| {
            context(
                t.dataset,
                result_type,
                format,
                json!([{"columns": ["id", "tenant", "region", "amount"], "orderby": [["id", true]],
                        "row_limit": 100}]),
            )
        };
        let all: Vec<i64> = ROWS.iter().map(|r| r.0).collect();
        // Before any rule, eve sees every row; that answer is cached.
        let eve = &t.users[4].2;
        assert_eq!(ids(&chart_data(eve, &raw("full", "json")).await), all);

        create_rules(&t).await;
        let mut everyone: Vec<(&str, &[&str], &Api)> =
            t.users.iter().map(|(n, r, a)| (*n, *r, a)).collect();
        // The administrator holds none of the rules' roles: the Base rule hides everything.
        everyone.push(("admin", &[], &t.admin));
        for (name, roles, api) in &everyone {
            let want = expected(roles);
            for result_type in ["full", "samples", "drill_detail", "results"] {
                let body = if result_type == "samples" || result_type == "drill_detail" {
                    context(t.dataset, result_type, "json", json!([{"row_limit": 100}]))
                } else {
                    raw(result_type, "json")
                };
                let r = chart_data(api, &body).await;
                assert_eq!(ids(&r), want, "{name} {result_type}: {r}");
            }
            // CSV.
            let resp = api
                .request(reqwest::Method::POST, "/api/v1/chart/data")
                .json(&raw("full", "csv"))
                .send()
                .await
                .expect("csv");
            assert_eq!(resp.status(), StatusCode::OK);
            let text = resp.text().await.expect("text");
            let mut csv_ids: Vec<i64> = text
                .lines()
                .skip(1)
                .map(|l| l.split(',').next().expect("id").parse().expect("int"))
                .collect();
            csv_ids.sort_unstable();
            assert_eq!(csv_ids, want, "{name} csv: {text}");

            // Totals for percentages over all records: the denominator is the visible sum.
            let visible_sum: i64 = ROWS
                .iter()
                .filter(|r| visible(roles, r))
                .map(|r| r.3)
                .sum();
            let sum = json!({"expressionType": "SQL", "sqlExpression": "SUM(amount)",
                             "label": "total"});
            let r = chart_data(
                api,
                &context(
                    t.dataset,
                    "full",
                    "json",
                    json!([
                        {"columns": ["tenant"], "metrics": [sum], "orderby": [[sum, false]],
                         "row_limit": 1,
                         "post_processing": [{"operation": "contribution",
                             "options": {"columns": ["total"], "rename_columns": ["%total"]}}]},
                        {"columns": [], "metrics": [sum], "row_limit": 0, "post_processing": []}
                    ]),
                ),
            )
            .await;
            let totals = &r["result"][1]["data"];
            if want.is_empty() {
                assert_eq!(totals, &json!([{"total": null}]), "{name}: {r}");
                assert_eq!(r["result"][0]["data"], json!([]), "{name}: {r}");
            } else {
                assert_eq!(totals, &json!([{"total": visible_sum}]), "{name}: {r}");
                let top = &r["result"][0]["data"][0];
                let share = top["%total"].as_f64().expect("share");
                let expect = top["total"].as_f64().expect("total") / visible_sum as f64;
                assert!((share - expect).abs() < 1e-12, "{name}: {r}");
            }

            // The series limit's inner query: the top tenant among the visible rows only.
            let r = chart_data(
                api,
                &context(
                    t.dataset,
                    "full",
                    "json",
                    json!([{"columns": ["tenant"], "metrics": [sum], "series_columns": ["tenant"],
                            "series_limit": 1, "series_limit_metric": sum,
                            "orderby": [[sum, false]], "row_limit": 100}]),
                ),
            )
            .await;
            let tenants: BTreeSet<&str> = r["result"][0]["data"]
                .as_array()
                .expect("data")
                .iter()
                .filter_map(|row| row["tenant"].as_str())
                .collect();
            let mut by_tenant = std::collections::BTreeMap::<&str, i64>::new();
            for row in ROWS.iter().filter(|row| visible(roles, row)) {
                *by_tenant.entry(row.1).or_default() += row.3;
            }
            let top: BTreeSet<&str> = by_tenant
                .iter()
                .max_by_key(|(_, v)| **v)
                .map(|(k, _)| *k)
                .into_iter()
                .collect();
            assert_eq!(tenants, top, "{name} series limit: {r}");

            // A time comparison's offset query: last year's visible total.
            let last_year: i64 = ROWS
                .iter()
                .filter(|r| visible(roles, r) && r.4 == 2023)
                .map(|r| r.3)
                .sum();
            let this_year: i64 = ROWS
                .iter()
                .filter(|r| visible(roles, r) && r.4 == 2024)
                .map(|r| r.3)
                .sum();
            let r = chart_data(
                api,
                &context(
                    t.dataset,
                    "full",
                    "json",
                    json!([{"columns": [{"sqlExpression": "ds", "columnType": "BASE_AXIS",
                                          "timeGrain": "P1Y", "label": "ds",
                                          "expressionType": "SQL"}],
                            "metrics": [sum], "time_offsets": ["1 year ago"],
                            "filters": [{"col": "ds", "op": "TEMPORAL_RANGE",
                                         "val": "2024-01-01 : 2025-01-01"}],
                            "row_limit": 100}]),
                ),
            )
            .await;
            let data = r["result"][0]["data"].as_array().expect("data");
            if this_year == 0 {
                assert!(data.is_empty(), "{name} offsets: {r}");
            } else {
                assert_eq!(data.len(), 1, "{name} offsets: {r}");
                assert_eq!(data[0]["total"].as_f64(), Some(this_year as f64), "{name}: {r}");
                let shifted = data[0]["total__1 year ago"].as_f64().unwrap_or(0.0);
                assert_eq!(shifted, last_year as f64, "{name} offsets: {r}");
            }
        }
    }

    /// Two tenants asking the same saved chart at the same time each get only their rows:
    /// no cached or in-flight answer crosses rules.
    async fn concurrent_tenants_never_share_an_answer(meta: Metadata) {
        let t = tenants(meta).await;
        create_rules(&t).await;
        let qc = context(
            t.dataset,
            "full",
            "json",
            json!([{"columns": ["id", "tenant"], "orderby": [["id", true]], "row_limit": 100}]),
        );
        let (s, chart) = t
            .admin
            .post(
                "/api/v1/chart/",
                json!({"slice_name": "orders", "viz_type": "table", "datasource_id": t.dataset,
                       "datasource_type": "table", "query_context": qc.to_string(),
                       "params": json!({"datasource": format!("{}__table", t.dataset),
                                        "viz_type": "table"}).to_string()}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{chart}");
        let path = format!("/api/v1/chart/{}/data/", chart["id"]);
        let askers: Vec<(&str, &[&str], &Api)> = t
            .users
            .iter()
            .filter(|(n, _, _)| ["alice", "bob", "carol", "audrey"].contains(n))
            .map(|(n, r, a)| (*n, *r, a))
            .collect();
        let mut calls = Vec::new();
        for round in 0..6 {
            for (name, roles, api) in &askers {
                let path = path.clone();
                calls.push(async move {
                    let (s, r) = api.get(&path).await;
                    assert_eq!(s, StatusCode::OK, "{name} round {round}: {r}");
                    assert_eq!(ids(&r), expected(roles), "{name} round {round}: {r}");
                });
            }
        }
        futures_util::future::join_all(calls).await;

        // The chart drawn by the server (SVG and PNG): each tenant's picture holds only its
        // own rows, though the chart, size and plugin are the same.
        for (name, roles, api) in &askers {
            let resp = api
                .request(
                    reqwest::Method::GET,
                    &format!("/api/v1/chart/{}/render.svg?width=480&height=320", chart["id"]),
                )
                .send()
                .await
                .expect("render");
            assert_eq!(resp.status(), StatusCode::OK, "{name}");
            let svg = resp.text().await.expect("svg");
            for (_, tenant, ..) in ROWS {
                let shown = svg.contains(&format!(">{tenant}<"));
                let allowed = ROWS.iter().any(|r| r.1 == *tenant && visible(roles, r));
                assert_eq!(shown, allowed, "{name} sees {tenant} drawn: {svg}");
            }
            let resp = api
                .request(
                    reqwest::Method::GET,
                    &format!("/api/v1/chart/{}/render.png?width=480&height=320", chart["id"]),
                )
                .send()
                .await
                .expect("png");
            assert_eq!(resp.status(), StatusCode::OK, "{name} png");
        }
    }

    /// A rule's clause stays one parenthesised predicate: however it is written to break out
    /// (closing the parenthesis, a comment, a second statement), the caller's answer is
    /// refused or keeps to the caller's rows.
    async fn a_clause_cannot_break_out_of_its_parentheses(meta: Metadata) {
        let t = tenants(meta).await;
        create_rules(&t).await;
        let alice = &t.users[0].2;
        let want = expected(&["ta"]);
        let body = context(
            t.dataset,
            "full",
            "json",
            json!([{"columns": ["id"], "orderby": [["id", true]], "row_limit": 100}]),
        );
        for clause in [
            "1 = 1) OR (1 = 1",
            "1 = 1 OR 1 = 1) OR (1 = 1",
            "1 = 1 --",
            "1 = 1) OR 1 = 1 --",
            "1 = 1 /* ) OR (1 = 1 */",
            "1 = 1; SELECT 1",
            "tenant IN (SELECT tenant FROM orders)",
            "pg_sleep(0) IS NOT NULL",
        ] {
            let (s, r) = t
                .admin
                .post(
                    "/api/v1/rowlevelsecurity/",
                    json!({"name": "escape", "filter_type": "Regular", "tables": [t.dataset],
                           "roles": [t.role("ta")], "clause": clause}),
                )
                .await;
            assert_eq!(s, StatusCode::CREATED, "{r}");
            let rule = r["id"].as_i64().expect("id");
            let (s, r) = alice.post("/api/v1/chart/data", body.clone()).await;
            if s == StatusCode::OK {
                let got = ids(&r);
                assert!(got.iter().all(|i| want.contains(i)), "{clause}: {r}");
            } else {
                assert!(s.is_client_error(), "{clause}: {s} {r}");
                assert!(r.get("message").is_some() || r.get("errors").is_some(), "{r}");
            }
            let (s, _) = t.admin.delete(&format!("/api/v1/rowlevelsecurity/{rule}")).await;
            assert_eq!(s, StatusCode::OK);
        }
    }
}

both_backends! {
    /// With `query.rls_in_sqllab` on (Superset's `RLS_IN_SQLLAB`), SQL Lab reads a table that
    /// a dataset with rules covers through the caller's rules, however the script spells the
    /// table (schema, case, quotes, alias, sub-query, CTE, join, union).
    async fn sql_lab_reads_covered_tables_through_the_rules_when_configured(meta: Metadata) {
        let t = tenants_with(meta, &[("LITESET_QUERY__RLS_IN_SQLLAB", "true")]).await;
        create_rules(&t).await;
        let (_, ds) = t.admin.get(&format!("/api/v1/dataset/{}", t.dataset)).await;
        let db = ds["result"]["database"]["id"].as_i64().expect("database id");
        let roles = vec![
            role_id(&t.admin, "Gamma").await,
            role_id(&t.admin, "sql_lab").await,
            t.role("reader"),
            t.role("ta"),
        ];
        let (s, u) = t
            .admin
            .post(
                "/api/v1/security/users/",
                json!({"username": "ann", "first_name": "Ann", "last_name": "A",
                       "email": "ann@example.com", "password": "tenant-pass-123",
                       "roles": roles, "active": true}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{u}");
        let ann = Api::login(&t.server, "ann", "tenant-pass-123").await;
        let rows = |body: &Value| -> Vec<i64> {
            let mut v: Vec<i64> = body["data"]
                .as_array()
                .unwrap_or_else(|| panic!("no data: {body}"))
                .iter()
                .map(|r| r["id"].as_i64().expect("id"))
                .collect();
            v.sort_unstable();
            v
        };
        for sql in [
            "SELECT id FROM orders ORDER BY id",
            "select id from PUBLIC.ORDERS order by 1",
            r#"SELECT o.id FROM "orders" AS o ORDER BY o.id"#,
            "SELECT id FROM (SELECT * FROM public.orders) x ORDER BY id",
            "WITH a AS (SELECT id FROM orders) SELECT id FROM a ORDER BY id",
            "SELECT id FROM orders WHERE tenant = 'bolt' UNION SELECT id FROM orders ORDER BY 1",
            "SELECT a.id FROM orders a JOIN public.orders b ON a.id = b.id ORDER BY 1",
            "SELECT id FROM orders WHERE id IN (SELECT id FROM orders WHERE tenant <> 'acme') \
             OR tenant = 'acme'",
        ] {
            let (s, r) = ann
                .post(
                    "/api/v1/sqllab/execute/",
                    json!({"database_id": db, "sql": sql, "runAsync": false}),
                )
                .await;
            assert_eq!(s, StatusCode::OK, "{sql}: {r}");
            assert_eq!(rows(&r), expected(&["ta"]), "{sql}");
            // The run records the filtered statement it executed.
            let executed = r["query"]["executedSql"].as_str().unwrap_or_default();
            assert!(executed.contains("tenant = 'acme'"), "{sql}: {executed}");
        }
        // The Base rule ("1 = 0" outside ta, tb, auditor) holds for the administrator too.
        let (s, r) = t
            .admin
            .post(
                "/api/v1/sqllab/execute/",
                json!({"database_id": db, "sql": "SELECT id FROM orders", "runAsync": false}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(rows(&r), Vec::<i64>::new());
    }
}
