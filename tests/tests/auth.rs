//! Authentication and CSRF, black-box, on both metadata backends: what Superset clients
//! (superset-api-client, preset-cli, superset-toolkit) rely on, with Superset's exact bodies.

use std::time::{SystemTime, UNIX_EPOCH};

use liteset::store::{Location, NewUser, Store};
use liteset_tests::{
    ADMIN_PASSWORD, Metadata, SECRET_KEY, TestServer, both_backends, csrf, login, status_json,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// werkzeug `generate_password_hash` output of "superset-pw" and "legacy-pw", computed with
/// Python's hashlib exactly as werkzeug 3 does (Superset's `ab_user.password` formats).
const SCRYPT_HASH: &str = "scrypt:32768:8:1$Zq3xW8pLk2NvB7tY$87416acc992e3dbdbfd3001acbb0a785dd99105a245c30cd37b10fae2ceef2e15b4076171a0ff4bd58b08eff22af62bcd387e255890baf93c800bff841656203";
const PBKDF2_HASH: &str = "pbkdf2:sha256:600000$Hk9sPq2LmN4vX7cR$c4e0545a06f3d0fd701c8ccdc2eef29cf5985f64eff1391e90034aab8804b215";

/// Opens the server's own metadata store to plant users the way a migration from Superset
/// would leave them.
async fn metadata_store(server: &TestServer) -> Store {
    let store = match server.metadata_url() {
        Some(url) => Store::open(Location::Postgres(url), 2).await,
        None => Store::open(Location::Sqlite(&server.data_dir().join("liteset.db")), 2).await,
    };
    store.expect("open the server's metadata store")
}

async fn plant_user(server: &TestServer, username: &str, hash: &str, active: bool, roles: &[&str]) {
    metadata_store(server)
        .await
        .create_user(&NewUser {
            username: username.into(),
            first_name: "Migrated".into(),
            last_name: "User".into(),
            email: format!("{username}@example.com"),
            active,
            password_hash: Some(hash.into()),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        })
        .await
        .expect("plant user");
}

fn forge_token(claims: Value, key: &str) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(key.as_bytes()),
    )
    .expect("encode")
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

both_backends! {
    async fn login_me_refresh_and_token_errors(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta).start().await?;
        let c = server.client();
        let base = server.base_url();

        let tokens = login(&c, base, "admin", ADMIN_PASSWORD).await;
        let access = tokens["access_token"].as_str().expect("access_token");
        let refresh = tokens["refresh_token"].as_str().expect("refresh_token");

        // /me/ with the Bearer token returns the admin.
        let (s, me) = status_json(c.get(server.url("/api/v1/me/")).bearer_auth(access).send().await?).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(me["result"]["username"], "admin");
        assert_eq!(me["result"]["is_active"], true);
        assert_eq!(me["result"]["login_count"], 1);

        // /me/roles/ lists the Admin role with Superset permission names.
        let (s, roles) = status_json(c.get(server.url("/api/v1/me/roles/")).bearer_auth(access).send().await?).await;
        assert_eq!(s, StatusCode::OK);
        let admin = roles["result"]["roles"]["Admin"].as_array().expect("Admin role");
        assert!(admin.contains(&json!(["can_read", "Chart"])), "{admin:?}");
        assert!(admin.contains(&json!(["can_grant_guest_token", "SecurityRestApi"])));

        // Refresh returns a new access token that works.
        let (s, r) = status_json(c.post(server.url("/api/v1/security/refresh")).bearer_auth(refresh).send().await?).await;
        assert_eq!(s, StatusCode::OK);
        let new_access = r["access_token"].as_str().expect("new access token");
        assert!(r.get("refresh_token").is_none());
        let s = c.get(server.url("/api/v1/me/")).bearer_auth(new_access).send().await?.status();
        assert_eq!(s, StatusCode::OK);

        // An access token is refused by /refresh, a refresh token by the API.
        let (s, b) = status_json(c.post(server.url("/api/v1/security/refresh")).bearer_auth(access).send().await?).await;
        assert_eq!((s, b), (StatusCode::UNPROCESSABLE_ENTITY, json!({"msg": "Only refresh tokens are allowed"})));
        let (s, b) = status_json(c.get(server.url("/api/v1/me/")).bearer_auth(refresh).send().await?).await;
        assert_eq!((s, b), (StatusCode::UNPROCESSABLE_ENTITY, json!({"msg": "Only non-refresh tokens are allowed"})));

        // Expired: 401 with flask-jwt's exact text (superset-api-client refreshes on it).
        let t = now();
        let expired = forge_token(json!({"fresh": true, "iat": t - 1000, "jti": "j", "type": "access",
            "sub": "1", "nbf": t - 1000, "csrf": "c", "exp": t - 10}), SECRET_KEY);
        let (s, b) = status_json(c.get(server.url("/api/v1/me/")).bearer_auth(&expired).send().await?).await;
        assert_eq!((s, b), (StatusCode::UNAUTHORIZED, json!({"msg": "Token has expired"})));

        // Tampered (signed with another key): 422.
        let tampered = forge_token(json!({"fresh": true, "iat": t, "jti": "j", "type": "access",
            "sub": "1", "nbf": t, "csrf": "c", "exp": t + 600}), "not-the-server-secret-not-the-server-secret");
        let (s, b) = status_json(c.get(server.url("/api/v1/me/")).bearer_auth(&tampered).send().await?).await;
        assert_eq!((s, b), (StatusCode::UNPROCESSABLE_ENTITY, json!({"msg": "Signature verification failed"})));

        // Integer subject: PyJWT's refusal.
        let int_sub = forge_token(json!({"fresh": true, "iat": t, "jti": "j", "type": "access",
            "sub": 1, "nbf": t, "csrf": "c", "exp": t + 600}), SECRET_KEY);
        let (s, b) = status_json(c.get(server.url("/api/v1/me/")).bearer_auth(&int_sub).send().await?).await;
        assert_eq!((s, b), (StatusCode::UNPROCESSABLE_ENTITY, json!({"msg": "Subject must be a string"})));

        // No credentials: /me/ is FAB's 401, protected endpoints flask-jwt's.
        let (s, b) = status_json(c.get(server.url("/api/v1/me/")).send().await?).await;
        assert_eq!((s, b), (StatusCode::UNAUTHORIZED, json!({"message": "Not authorized"})));
        let (s, b) = status_json(c.get(server.url("/api/v1/security/csrf_token/")).send().await?).await;
        assert_eq!((s, b), (StatusCode::UNAUTHORIZED, json!({"msg": "Missing Authorization Header"})));
        Ok(())
    }

    async fn bad_credentials_and_inactive_users_are_not_authorized(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta).start().await?;
        let c = server.client();
        plant_user(&server, "dormant", SCRYPT_HASH, false, &["Gamma"]).await;
        for (user, pw) in [("admin", "wrong"), ("nobody", "x"), ("dormant", "superset-pw")] {
            let (s, b) = status_json(c.post(server.url("/api/v1/security/login"))
                .json(&json!({"username": user, "password": pw, "provider": "db"})).send().await?).await;
            assert_eq!((s, b), (StatusCode::UNAUTHORIZED, json!({"message": "Not authorized"})), "{user}");
        }
        // Without `refresh` only an access token comes back; email works as the login name.
        let (s, b) = status_json(c.post(server.url("/api/v1/security/login"))
            .json(&json!({"username": "admin@localhost", "password": ADMIN_PASSWORD, "provider": "db", "refresh": "true"}))
            .send().await?).await;
        assert_eq!(s, StatusCode::OK);
        assert!(b["refresh_token"].is_string(), "refresh as the string \"true\" is honoured: {b}");
        let (s, b) = status_json(c.post(server.url("/api/v1/security/login"))
            .json(&json!({"username": "admin", "password": ADMIN_PASSWORD, "provider": "db"}))
            .send().await?).await;
        assert_eq!(s, StatusCode::OK);
        assert!(b.get("refresh_token").is_none(), "{b}");
        Ok(())
    }

    async fn werkzeug_hashes_from_superset_verify(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta).start().await?;
        let c = server.client();
        plant_user(&server, "scrypt_user", SCRYPT_HASH, true, &["Gamma"]).await;
        plant_user(&server, "pbkdf2_user", PBKDF2_HASH, true, &["Alpha"]).await;
        for (user, good, bad) in [("scrypt_user", "superset-pw", "legacy-pw"), ("pbkdf2_user", "legacy-pw", "superset-pw")] {
            let s = c.post(server.url("/api/v1/security/login"))
                .json(&json!({"username": user, "password": bad, "provider": "db"})).send().await?.status();
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{user} with the wrong password");
            let tokens = login(&c, server.base_url(), user, good).await;
            let access = tokens["access_token"].as_str().expect("token");
            let (s, me) = status_json(c.get(server.url("/api/v1/me/")).bearer_auth(access).send().await?).await;
            assert_eq!(s, StatusCode::OK);
            assert_eq!(me["result"]["username"], user);
        }
        // After the first login the hash was upgraded; the password still works.
        let tokens = login(&c, server.base_url(), "pbkdf2_user", "legacy-pw").await;
        assert!(tokens["access_token"].is_string());
        // A Gamma user may read the CSRF token but not hold admin-only permissions.
        let tokens = login(&c, server.base_url(), "scrypt_user", "superset-pw").await;
        let access = tokens["access_token"].as_str().expect("token");
        let (s, roles) = status_json(c.get(server.url("/api/v1/me/roles/")).bearer_auth(access).send().await?).await;
        assert_eq!(s, StatusCode::OK);
        let gamma = roles["result"]["roles"]["Gamma"].as_array().expect("Gamma");
        assert!(!gamma.contains(&json!(["can_grant_guest_token", "SecurityRestApi"])));
        assert!(gamma.contains(&json!(["can_read", "Dashboard"])));
        let (s, _) = status_json(c.get(server.url("/api/v1/security/csrf_token/")).bearer_auth(access).send().await?).await;
        assert_eq!(s, StatusCode::OK, "Gamma holds can_read on SecurityRestApi");

        // A user without roles is authenticated but forbidden: FAB's 403 body.
        plant_user(&server, "roleless", SCRYPT_HASH, true, &[]).await;
        let tokens = login(&c, server.base_url(), "roleless", "superset-pw").await;
        let access = tokens["access_token"].as_str().expect("token");
        let (s, b) = status_json(c.get(server.url("/api/v1/security/csrf_token/")).bearer_auth(access).send().await?).await;
        assert_eq!((s, b), (StatusCode::FORBIDDEN, json!({"message": "Forbidden"})));
        Ok(())
    }

    async fn csrf_is_enforced_for_bearer_writes(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta).start().await?;
        let base = server.base_url();
        let c = server.client();
        let tokens = login(&c, base, "admin", ADMIN_PASSWORD).await;
        let access = tokens["access_token"].as_str().expect("token");

        let missing = json!({"errors": [{
            "message": "400 Bad Request: The CSRF token is missing.",
            "error_type": "GENERIC_BACKEND_ERROR", "level": "error",
            "extra": {"issue_codes": [{"code": 1011, "message": "Issue 1011 - Superset encountered an unexpected error."}]}
        }]});
        // A Bearer POST without the token.
        let (s, b) = status_json(c.post(server.url("/api/v1/me/")).bearer_auth(access).json(&json!({})).send().await?).await;
        assert_eq!((s, b), (StatusCode::BAD_REQUEST, missing));

        // With a token but no session cookie (a fresh client has no cookie jar entry).
        let token = csrf(&c, base, access).await;
        let bare = reqwest::Client::new();
        let (s, b) = status_json(bare.delete(server.url("/api/v1/me/")).bearer_auth(access)
            .header("X-CSRFToken", &token).send().await?).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert_eq!(b["errors"][0]["message"], "400 Bad Request: The CSRF session token is missing.");

        // A token that belongs to another session does not match.
        let other = server.client();
        let other_token = csrf(&other, base, access).await;
        let (s, b) = status_json(c.put(server.url("/api/v1/me/")).bearer_auth(access)
            .header("X-CSRF-Token", &other_token).json(&json!({})).send().await?).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert_eq!(b["errors"][0]["message"], "400 Bad Request: The CSRF tokens do not match.");

        // With cookie and header the request passes CSRF and reaches routing (no PUT /me yet
        // in this build: 405 in Superset's envelope, not 400).
        let s = c.put(server.url("/api/v1/me/")).bearer_auth(access)
            .header("X-CSRFToken", &token).json(&json!({})).send().await?.status();
        assert_ne!(s, StatusCode::BAD_REQUEST);

        // Login and refresh stay exempt, as in FAB.
        let s = bare.post(server.url("/api/v1/security/refresh"))
            .bearer_auth(tokens["refresh_token"].as_str().expect("refresh")).send().await?.status();
        assert_eq!(s, StatusCode::OK);
        Ok(())
    }

    async fn browser_login_form_sets_a_session_cookie_accepted_by_the_api(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta).start().await?;
        let c = server.client();
        let page = c.get(server.url("/login/")).send().await?;
        assert_eq!(page.status(), StatusCode::OK);
        let html = page.text().await?;
        let marker = r#"<input id="csrf_token" name="csrf_token" type="hidden" value=""#;
        let start = html.find(marker).expect("csrf input") + marker.len();
        let token = &html[start..start + html[start..].find('"').expect("end quote")];

        // A wrong password re-renders the form.
        let resp = c.post(server.url("/login/"))
            .form(&[("username", "admin"), ("password", "nope"), ("csrf_token", token)]).send().await?;
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(resp.text().await?.contains("Invalid login"));

        // A form without the CSRF field is refused.
        let resp = c.post(server.url("/login/"))
            .form(&[("username", "admin"), ("password", ADMIN_PASSWORD)]).send().await?;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

        let resp = c.post(server.url("/login/"))
            .form(&[("username", "admin"), ("password", ADMIN_PASSWORD), ("csrf_token", token)]).send().await?;
        assert_eq!(resp.status(), StatusCode::FOUND);
        let cookie = resp.headers().get("set-cookie").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        assert!(cookie.starts_with("session=") && cookie.contains("HttpOnly"), "{cookie}");

        // The cookie alone authenticates API calls, including the CSRF token for writes.
        let (s, me) = status_json(c.get(server.url("/api/v1/me/")).send().await?).await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(me["result"]["username"], "admin");
        let (s, t) = status_json(c.get(server.url("/api/v1/security/csrf_token/")).send().await?).await;
        assert_eq!(s, StatusCode::OK);
        assert!(t["result"].is_string());

        // Logout clears it.
        let resp = c.get(server.url("/logout/")).send().await?;
        assert_eq!(resp.status(), StatusCode::FOUND);
        let s = c.get(server.url("/api/v1/me/")).send().await?.status();
        assert_eq!(s, StatusCode::UNAUTHORIZED);
        Ok(())
    }

    async fn failed_logins_are_limited_per_user_and_address(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta)
            .env("LITESET_AUTH__MAX_FAILED_LOGINS", "3").start().await?;
        let c = server.client();
        let attempt = |pw: &'static str| c.post(server.url("/api/v1/security/login"))
            .json(&json!({"username": "admin", "password": pw, "provider": "db"})).send();
        for _ in 0..3 {
            assert_eq!(attempt("wrong").await?.status(), StatusCode::UNAUTHORIZED);
        }
        let resp = attempt(ADMIN_PASSWORD).await?;
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(resp.headers().contains_key("retry-after"));
        let (_, b) = status_json(resp).await;
        assert!(b["message"].as_str().is_some_and(|m| m.contains("Too many failed login attempts")), "{b}");
        Ok(())
    }

    async fn secrets_never_reach_the_logs(meta: Metadata) -> anyhow::Result<()> {
        let server = TestServer::builder().metadata(meta)
            .env("RUST_LOG", "debug")
            .env("LITESET_ADMIN_PASSWORD", DISTINCT_ADMIN_PASSWORD).start().await?;
        let c = server.client();
        let tokens = login(&c, server.base_url(), "admin", DISTINCT_ADMIN_PASSWORD).await;
        let access = tokens["access_token"].as_str().expect("token").to_owned();
        let _ = c.post(server.url("/api/v1/security/login"))
            .json(&json!({"username": "admin", "password": "hunter2-wrong", "provider": "db"})).send().await?;
        let _ = c.get(server.url("/api/v1/me/")).bearer_auth(&access).send().await?;
        let logs = server.logs();
        assert!(logs.contains("Request finished."), "requests are logged");
        for secret in [DISTINCT_ADMIN_PASSWORD, "hunter2-wrong", SECRET_KEY, access.as_str()] {
            assert!(!logs.contains(secret), "{secret:?} leaked into the logs");
        }
        if let Some(url) = server.metadata_url() {
            assert!(!logs.contains(url), "metadata URL leaked");
        }
        Ok(())
    }
}

/// Distinct enough that finding it in a log can only mean it leaked.
const DISTINCT_ADMIN_PASSWORD: &str = "Adm1n-pw-7c41e9";

/// A token is checked once and remembered, but a remembered token still expires on time and
/// keeps its type.
#[tokio::test]
async fn a_remembered_token_still_expires_and_keeps_its_type() -> anyhow::Result<()> {
    let server = TestServer::builder().start().await?;
    let c = server.client();
    let t = now();
    let claims = |kind: &str, exp: i64| {
        json!({"fresh": true, "iat": t, "jti": "j", "type": kind, "sub": "1", "nbf": t,
               "csrf": "c", "exp": exp})
    };
    // One bearer request: GET /me/ or POST /security/refresh with `token`.
    let call = |post: bool, token: String| {
        let req = if post {
            c.post(server.url("/api/v1/security/refresh"))
        } else {
            c.get(server.url("/api/v1/me/"))
        };
        async move { status_json(req.bearer_auth(token).send().await.expect("send")).await }
    };
    let short = forge_token(claims("access", t + 2), SECRET_KEY);
    for _ in 0..2 {
        assert_eq!(call(false, short.clone()).await.0, StatusCode::OK);
    }
    while now() <= t + 2 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(
        call(false, short).await,
        (
            StatusCode::UNAUTHORIZED,
            json!({"msg": "Token has expired"})
        )
    );

    // A refresh token remembered by /refresh is still no access token, and the other way round.
    let refresh = forge_token(claims("refresh", t + 600), SECRET_KEY);
    assert_eq!(call(true, refresh.clone()).await.0, StatusCode::OK);
    assert_eq!(
        call(false, refresh).await,
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"msg": "Only non-refresh tokens are allowed"})
        )
    );
    let access = forge_token(claims("access", t + 600), SECRET_KEY);
    assert_eq!(call(false, access.clone()).await.0, StatusCode::OK);
    assert_eq!(
        call(true, access).await,
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"msg": "Only refresh tokens are allowed"})
        )
    );
    Ok(())
}
