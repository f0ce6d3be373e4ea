//! `liteset frontend install` against a package index served here (PEP 691 JSON, on
//! loopback), and the shell pages and static files `serve` builds from the install.
//!
//! The real apache-superset release and a real browser are exercised by tests/tests/browser.rs;
//! this file pins down the install's rules (wheel before sdist, sha256 checked, only
//! `superset/static/` kept, idempotent, a failed install leaves the previous one) and the
//! shell's contract with the app (entry bundles from the manifest, bootstrap payload, CSRF
//! field, redirects, cache headers) with small archives built on the spot.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use liteset_tests::{ADMIN_PASSWORD, TestServer, liteset_bin};
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::Path as UrlPath;
use poem::{EndpointExt, IntoResponse, Response, Route, get, handler};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const MANIFEST: &str = r#"{"entrypoints": {
  "theme": {"css": [], "js": ["/static/assets/theme.0123456789abcdef0123.entry.js"]},
  "spa": {"css": ["/static/assets/spa.fedcba9876543210fedc.entry.css"],
          "js": ["/static/assets/vendors.aaaaaaaaaaaaaaaaaaaa.entry.js",
                 "/static/assets/spa.bbbbbbbbbbbbbbbbbbbb.entry.js"]}}}"#;

/// The files of a fake release, relative to the `superset/` package: the app plus Python
/// code that must not be installed.
fn release_files(marker: &str) -> Vec<(String, Vec<u8>)> {
    vec![
        (
            "static/assets/manifest.json".into(),
            MANIFEST.as_bytes().to_vec(),
        ),
        (
            "static/assets/spa.bbbbbbbbbbbbbbbbbbbb.entry.js".into(),
            format!("console.log('{marker}');").into_bytes(),
        ),
        (
            "static/assets/images/loading.gif".into(),
            b"GIF89a".to_vec(),
        ),
        ("views/core.py".into(), b"print('python')".to_vec()),
    ]
}

fn wheel(marker: &str) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (path, bytes) in release_files(marker) {
        zip.start_file(
            format!("superset/{path}"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn sdist(version: &str, marker: &str) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (path, bytes) in release_files(marker) {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(
            &mut header,
            format!("apache_superset-{version}/superset/{path}"),
            bytes.as_slice(),
        )
        .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A listed release file: name, the sha256 the index lists, the bytes it serves.
type IndexFile = (String, String, Vec<u8>);

/// A package index on loopback: the project page lists `files`; each file is served at
/// `/files/<name>` with the bytes given (which may differ from the listed hash on purpose).
#[derive(Clone, Default)]
struct Index {
    files: Arc<Mutex<Vec<IndexFile>>>,
    downloads: Arc<Mutex<Vec<String>>>,
}

impl Index {
    fn set(&self, files: Vec<IndexFile>) {
        *self.files.lock().unwrap() = files;
    }

    async fn serve(&self) -> String {
        #[handler]
        fn project(req: &poem::Request, index: poem::web::Data<&Index>) -> Response {
            // PEP 691: the JSON form only when asked for it.
            let accept = req
                .header("accept")
                .unwrap_or_default()
                .contains("application/vnd.pypi.simple.v1+json");
            if !accept {
                return poem::http::StatusCode::NOT_ACCEPTABLE.into_response();
            }
            let files: Vec<Value> = index
                .files
                .lock()
                .unwrap()
                .iter()
                .map(|(name, sha, _)| {
                    json!({"filename": name, "url": format!("../../files/{name}"),
                           "hashes": {"sha256": sha}, "yanked": false})
                })
                .collect();
            Response::builder()
                .content_type("application/vnd.pypi.simple.v1+json")
                .body(
                    json!({"meta": {"api-version": "1.1"}, "name": "apache-superset",
                             "files": files})
                    .to_string(),
                )
        }
        #[handler]
        fn file(UrlPath(name): UrlPath<String>, index: poem::web::Data<&Index>) -> Response {
            index.downloads.lock().unwrap().push(name.clone());
            match index.files.lock().unwrap().iter().find(|f| f.0 == name) {
                Some((_, _, bytes)) => bytes.clone().into_response(),
                None => poem::http::StatusCode::NOT_FOUND.into_response(),
            }
        }
        let app = Route::new()
            .at("/simple/apache-superset/", get(project))
            .at("/files/:name", get(file))
            .data(self.clone());
        let acceptor = TcpListener::bind("127.0.0.1:0")
            .into_acceptor()
            .await
            .unwrap();
        let addr = acceptor.local_addr()[0].as_socket_addr().copied().unwrap();
        tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
        format!("http://{addr}/simple")
    }
}

/// Runs `liteset frontend install` with the index given as pip's `PIP_INDEX_URL`.
async fn install(index_url: &str, dir: &Path, args: &[&str]) -> (bool, String) {
    let out = tokio::process::Command::new(liteset_bin())
        .args(["frontend", "install"])
        .args(args)
        .env("LITESET_FRONTEND__DIR", dir)
        .env("LITESET_DATA_DIR", dir.join("data"))
        .env("PIP_INDEX_URL", index_url)
        .env_remove("PIP_CONFIG_FILE")
        .output()
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn record(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("installed.json")).unwrap()).unwrap()
}

#[tokio::test]
async fn install_prefers_the_wheel_checks_its_hash_and_keeps_only_the_app() {
    let index = Index::default();
    let url = index.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let whl = wheel("from-wheel");
    let tgz = sdist("6.0.0", "from-sdist");
    index.set(vec![
        (
            "apache_superset-6.0.0.tar.gz".into(),
            sha256(&tgz),
            tgz.clone(),
        ),
        (
            "apache_superset-6.0.0-py3-none-any.whl".into(),
            sha256(&whl),
            whl.clone(),
        ),
    ]);
    let (ok, out) = install(&url, dir.path(), &[]).await;
    assert!(ok, "{out}");
    assert_eq!(
        record(dir.path()),
        json!({"version": "6.0.0", "filename": "apache_superset-6.0.0-py3-none-any.whl",
               "sha256": sha256(&whl)})
    );
    let app = dir.path().join("6.0.0/static/assets");
    assert_eq!(
        std::fs::read_to_string(app.join("spa.bbbbbbbbbbbbbbbbbbbb.entry.js")).unwrap(),
        "console.log('from-wheel');"
    );
    assert!(!dir.path().join("6.0.0/views").exists());
    assert!(!dir.path().join("6.0.0/static/views").exists());

    // The same version again: nothing is downloaded.
    let before = index.downloads.lock().unwrap().len();
    let (ok, out) = install(&url, dir.path(), &[]).await;
    assert!(ok, "{out}");
    assert!(out.contains("already installed"), "{out}");
    assert_eq!(index.downloads.lock().unwrap().len(), before);

    // A release whose bytes do not match the listed hash is refused, and the previous
    // install stays current.
    let tampered = sdist("6.1.0", "tampered");
    index.set(vec![(
        "apache_superset-6.1.0.tar.gz".into(),
        sha256(b"something else"),
        tampered,
    )]);
    let (ok, out) = install(&url, dir.path(), &["--version", "6.1.0"]).await;
    assert!(!ok, "{out}");
    assert!(out.contains("sha256"), "{out}");
    assert_eq!(record(dir.path())["version"], "6.0.0");
    assert!(!dir.path().join("6.1.0").exists());

    // A version the index lacks, and one that is not a version at all.
    let (ok, out) = install(&url, dir.path(), &["--version", "9.9.9"]).await;
    assert!(!ok && out.contains("no wheel or sdist"), "{out}");
    let (ok, out) = install(&url, dir.path(), &["--version", "../x"]).await;
    assert!(!ok && out.contains("invalid version"), "{out}");
    assert_eq!(record(dir.path())["version"], "6.0.0");
}

#[tokio::test]
async fn install_falls_back_to_the_sdist_and_replaces_the_previous_version() {
    let index = Index::default();
    let url = index.serve().await;
    let dir = tempfile::tempdir().unwrap();
    let whl = wheel("six-oh");
    index.set(vec![(
        "apache_superset-6.0.0-py3-none-any.whl".into(),
        sha256(&whl),
        whl,
    )]);
    let (ok, out) = install(&url, dir.path(), &[]).await;
    assert!(ok, "{out}");

    let tgz = sdist("6.1.0", "six-one");
    index.set(vec![(
        "apache_superset-6.1.0.tar.gz".into(),
        sha256(&tgz),
        tgz.clone(),
    )]);
    let (ok, out) = install(&url, dir.path(), &["--version", "6.1.0"]).await;
    assert!(ok, "{out}");
    assert_eq!(
        record(dir.path()),
        json!({"version": "6.1.0", "filename": "apache_superset-6.1.0.tar.gz",
               "sha256": sha256(&tgz)})
    );
    assert_eq!(
        std::fs::read_to_string(
            dir.path()
                .join("6.1.0/static/assets/spa.bbbbbbbbbbbbbbbbbbbb.entry.js")
        )
        .unwrap(),
        "console.log('six-one');"
    );
    assert!(!dir.path().join("6.0.0").exists(), "old version removed");
}

/// Where the shell's CSRF token starts.
const CSRF_FIELD: &str = "id=\"csrf_token\" value=\"";

fn bootstrap_of(html: &str) -> Value {
    let start = html.find("data-bootstrap=\"").expect("data-bootstrap") + 16;
    let end = start + html[start..].find('"').unwrap();
    let raw = html[start..end]
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&raw).unwrap()
}

#[tokio::test]
async fn serve_renders_the_shell_and_the_static_files_of_the_install() {
    let index = Index::default();
    let url = index.serve().await;
    let dir = tempfile::tempdir().unwrap();

    // Not installed yet: the server runs and says how to install the UI.
    let server = TestServer::builder()
        .env("LITESET_FRONTEND__DIR", dir.path().to_str().unwrap())
        .start()
        .await
        .unwrap();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .cookie_store(true)
        .build()
        .unwrap();
    let page = http.get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("liteset frontend install")
    );

    // Installed while the server runs: picked up without a restart.
    let whl = wheel("served");
    index.set(vec![(
        "apache_superset-6.0.0-py3-none-any.whl".into(),
        sha256(&whl),
        whl,
    )]);
    let (ok, out) = install(&url, dir.path(), &[]).await;
    assert!(ok, "{out}");

    let root = http.get(server.url("/")).send().await.unwrap();
    assert_eq!(root.status(), 302);
    assert_eq!(root.headers()["location"], "/login/");
    let welcome = http
        .get(server.url("/superset/welcome/?x=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(welcome.status(), 302);
    assert_eq!(
        welcome.headers()["location"],
        "/login/?next=%2Fsuperset%2Fwelcome%3Fx%3D1"
    );

    // The app's login page: theme bundle in the head, spa bundles in order, the CSRF field,
    // an anonymous bootstrap with the Public role and the AUTH_DB login type.
    let login = http
        .get(server.url("/login/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let theme = login
        .find("/static/assets/theme.0123456789abcdef0123.entry.js")
        .unwrap();
    let vendors = login
        .find("/static/assets/vendors.aaaaaaaaaaaaaaaaaaaa.entry.js")
        .unwrap();
    let spa = login
        .find("/static/assets/spa.bbbbbbbbbbbbbbbbbbbb.entry.js")
        .unwrap();
    assert!(theme < login.find("<body>").unwrap() && vendors < spa);
    assert!(login.contains("/static/assets/spa.fedcba9876543210fedc.entry.css"));
    let csrf_at = login.find(CSRF_FIELD).unwrap() + CSRF_FIELD.len();
    let csrf = &login[csrf_at..csrf_at + login[csrf_at..].find('"').unwrap()];
    let anon = bootstrap_of(&login);
    assert_eq!(anon["common"]["conf"]["AUTH_TYPE"], 1);
    assert_eq!(
        anon["common"]["menu_data"]["navbar_right"]["user_is_anonymous"],
        true
    );
    assert!(anon["user"]["roles"]["Public"].is_array());
    assert!(anon["user"].get("username").is_none());

    // A wrong password comes back as the app's flashed message.
    let failed = http
        .post(server.url("/login/"))
        .form(&[
            ("username", "admin"),
            ("password", "wrong"),
            ("csrf_token", csrf),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(failed.status(), 200, "{}", server.logs());
    let failed = bootstrap_of(&failed.text().await.unwrap());
    assert_eq!(
        failed["common"]["flash_messages"],
        json!([["danger", "Invalid login. Please try again."]])
    );

    // The form the app posts: fields plus the page's CSRF token, back to `next`.
    let login = http
        .get(server.url("/login/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf_at = login.find(CSRF_FIELD).unwrap() + CSRF_FIELD.len();
    let csrf = login[csrf_at..csrf_at + login[csrf_at..].find('"').unwrap()].to_owned();
    let signed_in = http
        .post(server.url("/login/?next=/dashboard/list/"))
        .form(&[
            ("username", "admin"),
            ("password", ADMIN_PASSWORD),
            ("csrf_token", csrf.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), 302);
    assert_eq!(signed_in.headers()["location"], "/dashboard/list/");

    for path in [
        "/superset/welcome/",
        "/dashboard/list/",
        "/superset/dashboard/sales-overview/",
        "/explore/?slice_id=1",
        "/sqllab/",
        "/chart/list/",
        "/tablemodelview/list/",
        "/databaseview/list/",
    ] {
        let resp = http.get(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(resp.headers()["cache-control"], "no-store", "{path}");
        let boot = bootstrap_of(&resp.text().await.unwrap());
        assert_eq!(boot["user"]["username"], "admin", "{path}");
        assert_eq!(boot["user"]["isAnonymous"], false);
        assert!(
            boot["user"]["roles"]["Admin"]
                .as_array()
                .unwrap()
                .contains(&json!(["can_read", "Dashboard"]))
        );
        assert!(boot["user"]["permissions"]["database_access"].is_array());
        assert_eq!(
            boot["common"]["feature_flags"]["SQLLAB_BACKEND_PERSISTENCE"],
            false
        );
        let menu = boot["common"]["menu_data"]["menu"].as_array().unwrap();
        let names: Vec<&str> = menu.iter().map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "Dashboards",
                "Charts",
                "Datasets",
                "SQL Lab",
                "Data",
                "Security"
            ],
            "{path}"
        );
    }
    // Signed in, `/` and `/login/` go on to the app.
    let root = http.get(server.url("/")).send().await.unwrap();
    assert_eq!(root.headers()["location"], "/superset/welcome/");
    let again = http.get(server.url("/login/")).send().await.unwrap();
    assert_eq!(again.status(), 302);

    // Static files: hashed names cached for a year, others revalidated; nothing outside.
    let js = http
        .get(server.url("/static/assets/spa.bbbbbbbbbbbbbbbbbbbb.entry.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(
        js.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(
        js.headers()["content-type"]
            .to_str()
            .unwrap()
            .contains("javascript")
    );
    assert_eq!(js.text().await.unwrap(), "console.log('served');");
    let gif = http
        .get(server.url("/static/assets/images/loading.gif"))
        .send()
        .await
        .unwrap();
    assert_eq!(gif.status(), 200);
    assert_eq!(gif.headers()["cache-control"], "no-cache");
    for bad in [
        "/static/../installed.json",
        "/static/%2e%2e/installed.json",
        "/static/assets/..%2F..%2Finstalled.json",
        "/static/assets/missing.js",
        "/static/",
    ] {
        let resp = http.get(server.url(bad)).send().await.unwrap();
        assert_eq!(resp.status(), 404, "{bad}");
    }
}
