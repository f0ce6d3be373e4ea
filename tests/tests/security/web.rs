//! Browser-facing attacks: racing the failed-login limit and starving other users' logins
//! (class 7), sending a user off-site with `next` (class 8) and planting spreadsheet formulas
//! in CSV exports (class 9).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use futures_util::future::join_all;
use liteset_tests::{ADMIN_PASSWORD, Api, Metadata, TestServer, both_backends, pg};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A client whose connections come from `127.0.0.<n>`, so the server sees another address.
fn client_from(n: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, n)))
        .build()
        .expect("client")
}

/// A Gamma user with `password`.
async fn gamma_user(admin: &Api, name: &str, password: &str) {
    let (_, found) = admin
        .get("/api/v1/security/roles/?q=(filters:!((col:name,opr:eq,value:Gamma)))")
        .await;
    let gamma = found["result"][0]["id"].as_i64().expect("Gamma role");
    let (s, user) = admin
        .post(
            "/api/v1/security/users/",
            json!({"username": name, "first_name": name, "last_name": "User",
                   "email": format!("{name}@example.com"), "password": password,
                   "roles": [gamma], "active": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{user}");
}

/// What one login attempt got: status, `Retry-After`, body.
#[derive(Debug)]
struct Outcome {
    status: StatusCode,
    retry_after: Option<String>,
    body: String,
}

async fn outcome(resp: reqwest::Response) -> Outcome {
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Outcome {
        status,
        retry_after,
        body: resp.text().await.unwrap_or_default(),
    }
}

/// `POST /api/v1/security/login`.
async fn api_login(c: &reqwest::Client, base: &str, user: &str, password: &str) -> Outcome {
    let resp = c
        .post(format!("{base}/api/v1/security/login"))
        .json(&json!({"username": user, "password": password, "provider": "db"}))
        .send()
        .await
        .expect("login request");
    outcome(resp).await
}

/// The CSRF token of the login form (the client keeps the cookie holding its secret).
async fn form_token(c: &reqwest::Client, base: &str) -> String {
    let html = c
        .get(format!("{base}/login/"))
        .send()
        .await
        .expect("login page")
        .text()
        .await
        .expect("page");
    let marker = r#"name="csrf_token" type="hidden" value=""#;
    let start = html.find(marker).expect("csrf input") + marker.len();
    html[start..start + html[start..].find('"').expect("end quote")].to_owned()
}

/// `POST /login/?<query>` from the browser form.
async fn form_login(
    c: &reqwest::Client,
    base: &str,
    query: &str,
    token: &str,
    user: &str,
    password: &str,
) -> Outcome {
    let resp = c
        .post(format!("{base}/login/{query}"))
        .form(&[
            ("username", user),
            ("password", password),
            ("csrf_token", token),
        ])
        .send()
        .await
        .expect("form login");
    outcome(resp).await
}

/// Every refused or evaluated attempt is a clear answer: 401 (evaluated), 429 or 503 with
/// `Retry-After` (not evaluated). Never a 500.
fn assert_clear(o: &Outcome, what: &str) {
    match o.status {
        StatusCode::UNAUTHORIZED => {}
        StatusCode::OK if o.body.contains("Invalid login") => {}
        StatusCode::TOO_MANY_REQUESTS => {
            assert!(o.retry_after.is_some(), "{what}: 429 without Retry-After");
            assert!(
                o.body.contains("Too many failed login attempts"),
                "{what}: {}",
                o.body
            );
        }
        StatusCode::SERVICE_UNAVAILABLE => {
            assert_eq!(o.retry_after.as_deref(), Some("1"), "{what}");
            assert!(
                o.body.contains("The server is busy; retry shortly"),
                "{what}: {}",
                o.body
            );
        }
        s => panic!("{what}: unexpected {s}: {}", o.body),
    }
}

/// Whether the password of this attempt was checked (and found wrong).
fn evaluated(o: &Outcome) -> bool {
    o.status == StatusCode::UNAUTHORIZED
        || (o.status == StatusCode::OK && o.body.contains("Invalid login"))
}

// ---------------------------------------------------------------------------------------------
// Class 7: the login limit
// ---------------------------------------------------------------------------------------------

both_backends! {
    /// 60 concurrent wrong passwords for one account from one address, through the API and the
    /// browser form, by username and by email: only `max_failed_logins` (10) are evaluated,
    /// the rest are 429 with `Retry-After`. The right password is then refused from that
    /// address (the limit holds) but accepted from another one (no lock-out by others).
    async fn concurrent_wrong_logins_cannot_race_the_limit(meta: Metadata) {
        let server = TestServer::builder().metadata(meta).start().await.expect("server");
        let base = server.base_url().to_owned();
        let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
        gamma_user(&admin, "victim", "victim-pass-1").await;

        let attacker = client_from(1);
        let token = form_token(&attacker, &base).await;
        let attempts = (0..60).map(|i| {
            let (c, base, token) = (&attacker, base.as_str(), token.as_str());
            async move {
                let login = if i % 3 == 0 { "victim@example.com" } else { "victim" };
                let pw = format!("guess-{i}");
                let o = if i % 2 == 0 {
                    api_login(c, base, login, &pw).await
                } else {
                    form_login(c, base, "", token, login, &pw).await
                };
                (format!("attempt {i} ({login}, {})", if i % 2 == 0 { "api" } else { "form" }), o)
            }
        });
        let outcomes = join_all(attempts).await;
        for (what, o) in &outcomes {
            assert_clear(o, what);
            assert_ne!(o.status, StatusCode::SERVICE_UNAVAILABLE, "{what}: the queue was not full");
        }
        let checked = outcomes.iter().filter(|(_, o)| evaluated(o)).count();
        assert_eq!(checked, 10, "passwords checked out of 60 concurrent attempts");

        // The right password from the same address: still limited, and not checked.
        let o = api_login(&attacker, &base, "victim", "victim-pass-1").await;
        assert_eq!(o.status, StatusCode::TOO_MANY_REQUESTS, "{o:?}");
        let o = form_login(&attacker, &base, "", &token, "victim", "victim-pass-1").await;
        assert_eq!(o.status, StatusCode::TOO_MANY_REQUESTS, "{o:?}");
        // The victim from elsewhere is not locked out, and neither is anyone else.
        let o = api_login(&client_from(2), &base, "victim", "victim-pass-1").await;
        assert_eq!(o.status, StatusCode::OK, "{o:?}");
        let o = api_login(&attacker, &base, "admin", ADMIN_PASSWORD).await;
        assert_eq!(o.status, StatusCode::OK, "{o:?}");
    }
}

/// 200 concurrent wrong logins for `victim` and `admin` from one address, plus a flood for
/// `victim` from 20 more addresses, while `other` logs in with the right password: `other`
/// gets in, and every flood attempt has a clear answer (never a 500, never a hang).
#[tokio::test]
async fn a_login_flood_does_not_starve_other_users() {
    let server = TestServer::builder().start().await.expect("server");
    let base = server.base_url().to_owned();
    let admin = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    gamma_user(&admin, "victim", "victim-pass-1").await;
    gamma_user(&admin, "other", "other-pass-1").await;

    let same = client_from(1);
    let many: Vec<reqwest::Client> = (10..30).map(client_from).collect();
    let mut flood = Vec::new();
    for i in 0..200 {
        let user = if i % 2 == 0 { "victim" } else { "admin" };
        flood.push((same.clone(), user, format!("same address, {user} #{i}")));
    }
    for (n, c) in many.iter().enumerate() {
        for i in 0..12 {
            flood.push((c.clone(), "victim", format!("address {n}, victim #{i}")));
        }
    }
    let flood = join_all(flood.into_iter().map(|(c, user, what)| {
        let base = base.clone();
        async move { (what, api_login(&c, &base, user, "wrong-guess").await) }
    }));
    let other = async {
        // Let the flood fill the queue first.
        tokio::time::sleep(Duration::from_millis(50)).await;
        api_login(&client_from(1), &base, "other", "other-pass-1").await
    };
    // A guard against a hang, not a timing assertion.
    let (flood, other) = tokio::time::timeout(Duration::from_secs(120), async {
        tokio::join!(flood, other)
    })
    .await
    .expect("the logins finished");
    assert_eq!(other.status, StatusCode::OK, "other's login: {other:?}");
    for (what, o) in &flood {
        assert_clear(o, what);
    }
    let checked_same = flood[..200].iter().filter(|(_, o)| evaluated(o)).count();
    assert!(
        checked_same <= 20,
        "{checked_same} checked from one address for two users"
    );
    // Either account can still log in from an address that did not guess.
    let o = api_login(&client_from(3), &base, "admin", ADMIN_PASSWORD).await;
    assert_eq!(o.status, StatusCode::OK, "{o:?}");
}

/// With a one-place queue, concurrent logins past it are answered 503 with `Retry-After` at
/// once (no hang, no 500), and an attempt turned away busy does not count against the limit.
#[tokio::test]
async fn a_full_login_queue_answers_busy_and_counts_nothing() {
    let server = TestServer::builder()
        .env("LITESET_AUTH__LOGIN_QUEUE_LEN", "1")
        .env("LITESET_AUTH__LOGIN_QUEUE_PER_USER", "1")
        .env("LITESET_AUTH__MAX_FAILED_LOGINS", "3")
        .start()
        .await
        .expect("server");
    let base = server.base_url().to_owned();
    let c = client_from(1);
    // Exactly the limit's worth of attempts for each of 20 names.
    let attempts = (0..60).map(|i| {
        let (c, base) = (&c, base.as_str());
        async move {
            let user = format!("nobody{}", i % 20);
            let o = api_login(c, base, &user, "x").await;
            (user, o)
        }
    });
    let outcomes = tokio::time::timeout(Duration::from_secs(60), join_all(attempts))
        .await
        .expect("no login hangs");
    for (user, o) in &outcomes {
        assert_clear(o, user);
        assert_ne!(
            o.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{user}: only 3 attempts"
        );
    }
    let mut turned_away: Vec<&str> = outcomes
        .iter()
        .filter(|(_, o)| o.status == StatusCode::SERVICE_UNAVAILABLE)
        .map(|(u, _)| u.as_str())
        .collect();
    turned_away.sort_unstable();
    turned_away.dedup();
    assert!(
        !turned_away.is_empty(),
        "a queue of one place took 60 concurrent logins"
    );
    // Each name turned away at least once has an attempt left: it is checked, not refused.
    for user in turned_away {
        let o = api_login(&c, &base, user, "x").await;
        assert_eq!(o.status, StatusCode::UNAUTHORIZED, "{user}: {o:?}");
    }
    let o = api_login(&c, &base, "admin", ADMIN_PASSWORD).await;
    assert_eq!(o.status, StatusCode::OK, "{o:?}");
}

/// The refresh token and the session cookie authenticate without a password, so they are no
/// way around the limit: a refresh token is refused as a password, and a locked-out address
/// cannot log in through the form with the session it already has.
#[tokio::test]
async fn no_other_path_checks_passwords_unlimited() {
    let server = TestServer::builder()
        .env("LITESET_AUTH__MAX_FAILED_LOGINS", "2")
        .start()
        .await
        .expect("server");
    let base = server.base_url().to_owned();
    let c = client_from(1);
    for _ in 0..2 {
        assert_eq!(
            api_login(&c, &base, "admin", "wrong").await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let token = form_token(&c, &base).await;
    for (what, o) in [
        ("api", api_login(&c, &base, "admin", ADMIN_PASSWORD).await),
        (
            "form",
            form_login(&c, &base, "?next=/", &token, "admin", ADMIN_PASSWORD).await,
        ),
        (
            "form, other case",
            form_login(&c, &base, "", &token, "ADMIN", ADMIN_PASSWORD).await,
        ),
    ] {
        if what == "form, other case" {
            // Another name is another subject; it resolves to no account, so it is checked
            // (and fails) rather than logging admin in.
            assert!(
                evaluated(&o) || o.status == StatusCode::TOO_MANY_REQUESTS,
                "{what}: {o:?}"
            );
        } else {
            assert_eq!(o.status, StatusCode::TOO_MANY_REQUESTS, "{what}: {o:?}");
        }
    }
    // The refresh endpoint takes only a refresh token, never a password.
    let resp = c
        .post(format!("{base}/api/v1/security/refresh"))
        .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send()
        .await
        .expect("refresh");
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let me = c
        .get(format!("{base}/api/v1/me/"))
        .send()
        .await
        .expect("me");
    assert_eq!(
        me.status(),
        StatusCode::UNAUTHORIZED,
        "no session was created"
    );
}

// ---------------------------------------------------------------------------------------------
// Class 8: redirects
// ---------------------------------------------------------------------------------------------

/// `next` values as the server receives them after decoding the query (sent encoded), each
/// an attempt to leave the site once a browser normalises it.
const OFFSITE: &[&str] = &[
    "//evil.com",
    "///evil.com",
    "////evil.com/x",
    "/\\evil.com",
    "\\/evil.com",
    "\\\\evil.com",
    "/\t/evil.com",
    "/\n/evil.com",
    "/\r/evil.com",
    "\t//evil.com",
    " //evil.com",
    "  /\\evil.com",
    "\u{0}//evil.com",
    "\u{1f}//evil.com",
    "//evil.com\u{20}",
    "/%09/evil.com",
    "/%2F/evil.com",
    "%2F%2Fevil.com",
    "/%5Cevil.com",
    "/%5C%5Cevil.com",
    "/%252F/evil.com",
    "/.//evil.com",
    "/./\\evil.com",
    "/../\\/evil.com",
    "https:evil.com",
    "https://evil.com",
    "http:/\\evil.com",
    "http://127.0.0.1.evil.com",
    "HTTPS://EVIL.COM",
    "javascript:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "evil.com",
    "\u{ff0f}\u{ff0f}evil.com",
    "",
];

/// Raw query strings (not encoded again) that the server decodes into an off-site target.
const OFFSITE_RAW: &[&str] = &[
    "next=/%09/evil.com",
    "next=%2F%2Fevil.com",
    "next=/%5Cevil.com",
    "next=%5C%2Fevil.com",
    "next=/%0D%0A/evil.com",
    "next=%20%2F%2Fevil.com",
    "next=/%2509/evil.com",
    "next=%2f%5c%09evil.com",
];

/// Where a browser on `base` goes with this `Location`, by the WHATWG parser (the `url`
/// crate), and whether that is this site.
fn same_site(base: &str, location: &str) -> bool {
    let base = url::Url::parse(base).expect("base");
    base.join(location)
        .is_ok_and(|to| to.origin() == base.origin())
        && location.starts_with('/')
        && !location.starts_with("//")
        && location.bytes().all(|b| b.is_ascii_graphic())
}

fn location(o: &reqwest::Response) -> String {
    o.headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

fn encoded(v: &str) -> String {
    url::form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

/// Every spelling of an off-site `next`: the login page (plain form) echoes `/` (escaped, in
/// the form's action), a login through the form lands on `/`, and a signed-in visit to
/// `/login/?next=` does too. Local targets survive, re-serialised.
#[tokio::test]
async fn next_never_leaves_the_site() {
    let server = TestServer::builder().start().await.expect("server");
    let base = server.base_url().to_owned();
    let queries: Vec<(String, String)> = OFFSITE
        .iter()
        .map(|v| (format!("{v:?}"), format!("?next={}", encoded(v))))
        .chain(
            OFFSITE_RAW
                .iter()
                .map(|q| (format!("raw {q}"), format!("?{q}"))),
        )
        .collect();
    let anon = server.client();
    let signed_in = server.client();
    let token = form_token(&signed_in, &base).await;
    let o = form_login(&signed_in, &base, "", &token, "admin", ADMIN_PASSWORD).await;
    assert_eq!(o.status, StatusCode::FOUND);

    for (what, query) in &queries {
        // The page echoes only `/`, escaped.
        let resp = anon
            .get(format!("{base}/login/{query}"))
            .send()
            .await
            .expect("page");
        assert_eq!(resp.status(), StatusCode::OK, "{what}");
        let html = resp.text().await.expect("html");
        assert!(
            html.contains(r#"<form method="post" action="/login/?next=%2F">"#),
            "{what}: the form's action is not the site root"
        );
        assert!(
            !html.contains("evil"),
            "{what}: the target reached the page"
        );

        // A wrong password re-renders the form with the same safe target.
        let token = form_token(&anon, &base).await;
        let o = form_login(&anon, &base, query, &token, "admin", "wrong").await;
        assert_eq!(o.status, StatusCode::OK, "{what}: {o:?}");
        assert!(o.body.contains(r#"action="/login/?next=%2F""#), "{what}");

        // A real login through the form.
        let browser = server.client();
        let token = form_token(&browser, &base).await;
        let resp = browser
            .post(format!("{base}/login/{query}"))
            .form(&[
                ("username", "admin"),
                ("password", ADMIN_PASSWORD),
                ("csrf_token", &token),
            ])
            .send()
            .await
            .expect("login");
        assert_eq!(resp.status(), StatusCode::FOUND, "{what}");
        assert_eq!(location(&resp), "/", "{what}");

        // Already signed in: straight on.
        let resp = signed_in
            .get(format!("{base}/login/{query}"))
            .send()
            .await
            .expect("signed-in login page");
        assert_eq!(resp.status(), StatusCode::FOUND, "{what}");
        assert_eq!(location(&resp), "/", "{what}");
    }

    // Local targets are followed, in a form that cannot be read otherwise.
    for (next, expected) in [
        ("/dashboard/list/", "/dashboard/list/"),
        (
            "/superset/dashboard/1/?a=1&b=2",
            "/superset/dashboard/1/?a=1&b=2",
        ),
        ("/sqllab/ x\"<y>", "/sqllab/%20x%22%3Cy%3E"),
    ] {
        let resp = signed_in
            .get(format!("{base}/login/?next={}", encoded(next)))
            .send()
            .await
            .expect("login page");
        assert_eq!(location(&resp), expected, "{next:?}");
        assert!(same_site(&base, &location(&resp)), "{next:?}");
        // Echoed into the plain form percent-encoded, so `&` does not cut it short.
        let html = anon
            .get(format!("{base}/login/?next={}", encoded(next)))
            .send()
            .await
            .expect("page")
            .text()
            .await
            .expect("html");
        let action = format!(r#"action="/login/?next={}""#, encoded_path(expected));
        assert!(html.contains(&action), "{next:?}: {action} not in the page");
    }

    // Anonymous visits to app pages go to the login page with a `next` that, followed through
    // a login, stays here; whatever the path looks like.
    for path in [
        "/superset/welcome/",
        "/superset/dashboard/%2F%2Fevil.com/",
        "/superset/dashboard/%5Cevil.com/",
        "/sqllab/?next=//evil.com",
        "/explore/?url=%2F%2Fevil.com",
    ] {
        let resp = anon
            .get(format!("{base}{path}"))
            .send()
            .await
            .expect("page");
        assert_eq!(resp.status(), StatusCode::FOUND, "{path}");
        let to_login = location(&resp);
        assert!(to_login.starts_with("/login/?next="), "{path}: {to_login}");
        assert!(same_site(&base, &to_login), "{path}: {to_login}");
        let resp = signed_in
            .get(format!("{base}{to_login}"))
            .send()
            .await
            .expect("login page");
        assert_eq!(resp.status(), StatusCode::FOUND, "{path}");
        let to = location(&resp);
        assert!(same_site(&base, &to), "{path}: went to {to}");
    }
}

/// `NON_ALPHANUMERIC` percent-encoding, as the login form writes `next` into its action.
fn encoded_path(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Class 9: CSV
// ---------------------------------------------------------------------------------------------

/// The planted values, one column each, and the SQL producing them in PostgreSQL.
const PLANTED_SQL: &str = "SELECT '=1+1' AS a, '+SUM(A1)' AS b, '-2+3' AS c, '@cmd' AS d, \
    E'\\t=x' AS e, E'\\r=x' AS f, '=HYPERLINK(\"http://x\")' AS g, -3 AS n, '-3' AS t, \
    '=cmd|'' /C calc''!A0' AS p, ' =a' AS s, '\"\"=b' AS q, '%pct' AS r, 'plain' AS ok, \
    -1.5::float8 AS fl, 'x' AS \"=h\"";

/// Superset's `df_to_escaped_csv` of that row (pandas' quoting on top). `escape_value` turns
/// `|` into `\|`, and `to_csv(escapechar="\\")` then doubles that backslash (checked with
/// Superset 6.0.0's own function: `'=cmd\\|' /C calc'!A0`).
const PLANTED_CSV: &str = "a,b,c,d,e,f,g,n,t,p,s,q,r,ok,fl,'=h\n\
    '=1+1,'+SUM(A1),'-2+3,'@cmd,'\t=x,\"'\r=x\",\"'=HYPERLINK(\"\"http://x\"\")\",-3,-3,\
    '=cmd\\\\|' /C calc'!A0,' =a,\"'\"\"\"\"=b\",'%pct,plain,-1.5,x\n";

/// CSV from SQL Lab's export and from chart data (one CSV, and the ZIP of two) carries every
/// formula-leading value with Superset's `'` prefix; numbers and plain text are unchanged.
#[tokio::test]
async fn csv_cells_are_escaped_like_superset() {
    let url = pg().await.fresh_database().await;
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let (s, db) = api
        .post(
            "/api/v1/database/",
            json!({"database_name": "wh", "sqlalchemy_uri": url, "expose_in_sqllab": true}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{db}");
    let db = db["id"].as_i64().expect("id");

    // SQL Lab.
    let (s, r) = api
        .post(
            "/api/v1/sqllab/execute/",
            json!({"database_id": db, "client_id": "csvinj1", "sql": PLANTED_SQL, "runAsync": false}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["data"][0]["a"], "=1+1", "JSON results are not escaped");
    let resp = api
        .request(Method::GET, "/api/v1/sqllab/export/csvinj1/")
        .send()
        .await
        .expect("export");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.text().await.expect("csv"),
        PLANTED_CSV,
        "SQL Lab export"
    );

    // Chart data over a virtual dataset of the same SQL.
    let (s, ds) = api
        .post(
            "/api/v1/dataset/",
            json!({"database": db, "schema": "public", "table_name": "planted", "sql": PLANTED_SQL}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ds}");
    let ds = ds["id"].as_i64().expect("id");
    let columns = json!([
        "a", "b", "c", "d", "e", "f", "g", "n", "t", "p", "s", "q", "r", "ok", "fl", "=h"
    ]);
    let query = json!({"columns": columns, "row_limit": 10});
    let body = |queries: Value| {
        json!({"datasource": {"id": ds, "type": "table"}, "force": true, "queries": queries,
               "result_format": "csv", "result_type": "full"})
    };
    let resp = api
        .request(Method::POST, "/api/v1/chart/data")
        .json(&body(json!([query])))
        .send()
        .await
        .expect("chart data");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.text().await.expect("csv"),
        PLANTED_CSV,
        "chart data CSV"
    );

    let resp = api
        .request(Method::POST, "/api/v1/chart/data")
        .json(&body(json!([query, {"columns": ["g"], "row_limit": 10}])))
        .send()
        .await
        .expect("chart data zip");
    assert_eq!(resp.status(), StatusCode::OK);
    let bytes = resp.bytes().await.expect("zip");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).expect("a zip");
    let mut read = |name: &str| {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut zip.by_name(name).expect(name), &mut s).expect(name);
        s
    };
    assert_eq!(
        read("query_1.csv"),
        format!("\u{feff}{PLANTED_CSV}"),
        "query_1.csv"
    );
    assert_eq!(
        read("query_2.csv"),
        "\u{feff}g\n\"'=HYPERLINK(\"\"http://x\"\")\"\n",
        "query_2.csv"
    );

    // The JSON answer is the data itself.
    let (s, r) = api
        .post(
            "/api/v1/chart/data",
            json!({"datasource": {"id": ds, "type": "table"}, "queries": [query],
                   "result_format": "json", "result_type": "full"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["result"][0]["data"][0]["p"], "=cmd|' /C calc'!A0");
}

/// Clickjacking: no other site may frame the app. Every answer (the login page, the app's
/// pages, the API, errors, static files) says `X-Frame-Options: SAMEORIGIN`, as Superset's
/// Talisman default does.
#[tokio::test]
async fn no_other_site_may_frame_the_app() {
    let server = TestServer::builder().start().await.expect("server");
    let api = Api::login(&server, "admin", ADMIN_PASSWORD).await;
    let anonymous = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    for (who, path) in [
        ("anonymous", "/login/"),
        ("anonymous", "/superset/welcome/"),
        ("anonymous", "/api/v1/chart/"),
        ("anonymous", "/health"),
        ("anonymous", "/no/such/page"),
        ("admin", "/superset/welcome/"),
        ("admin", "/api/v1/me/"),
        ("admin", "/api/v1/dashboard/999999"),
    ] {
        let resp = if who == "admin" {
            api.request(Method::GET, path).send().await
        } else {
            anonymous
                .get(format!("{}{path}", server.base_url()))
                .send()
                .await
        }
        .expect("answer");
        let status = resp.status();
        assert_eq!(
            resp.headers()
                .get("x-frame-options")
                .and_then(|v| v.to_str().ok()),
            Some("SAMEORIGIN"),
            "{who} {path} ({status})"
        );
    }
}
