//! The one configuration tree, loaded in layers: compiled-in defaults → TOML file →
//! `LITESET_*` environment → command-line flags.
//!
//! This is the only module that reads the environment. Unknown keys are refused in every
//! layer, values are validated after loading, and secrets print as `***`.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// A configuration value that must never reach a log line or a response.
#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    /// The secret itself; call only where it is used, never to display it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

/// Log line format.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Everything a `liteset` process is configured with.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Folder for the embedded metadata database, the generated secret key and, later, plugins
    /// and the installed frontend.
    pub data_dir: PathBuf,
    /// `postgresql://…` to keep metadata in PostgreSQL (production mode); unset means SQLite
    /// in `data_dir`.
    pub metadata_url: Option<Secret>,
    /// Signs tokens and cookies and derives the credential-encryption key. Required in
    /// production mode; otherwise generated once into `data_dir`.
    pub secret_key: Option<Secret>,
    /// Password of the `admin` user created on first start when no admin exists.
    pub admin_password: Option<Secret>,
    /// Listen address.
    pub bind: String,
    /// `text` or `json`.
    pub log_format: LogFormat,
    /// Authentication settings.
    pub auth: AuthConfig,
    /// HTTP server settings.
    pub http: HttpConfig,
    /// Metadata store settings.
    pub metadata: MetadataConfig,
    /// Comma-separated SQL functions refused in SQL Lab and chart SQL (Superset's
    /// `DISALLOWED_SQL_FUNCTIONS`); unset means [`DEFAULT_DISALLOWED_FUNCTIONS`], empty means
    /// none.
    pub disallowed_functions: Option<String>,
    /// Query execution, results cache and SQL Lab settings.
    pub query: QueryConfig,
    /// Create the example database, datasets, charts and dashboard on the first start of the
    /// embedded default (SQLite metadata). Ignored in production mode.
    pub examples: bool,
    /// Plugin sandbox limits (`[plugins]`, `LITESET_PLUGINS__*`).
    pub plugins: PluginConfig,
    /// Superset's web frontend (`[frontend]`, `LITESET_FRONTEND__*`).
    pub frontend: FrontendConfig,
    /// What users may connect to (`[security]`, `LITESET_SECURITY__*`).
    pub security: SecurityConfig,
    /// Embedded dashboards and guest tokens (`[embedded]`, `LITESET_EMBEDDED__*`).
    pub embedded: EmbeddedConfig,
}

/// Superset's `PREVENT_UNSAFE_DB_CONNECTIONS`, always on; these keys only widen it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// Allow analytical databases on SQLite files (off: a SQLite URI opens any file the
    /// server can read). The data folder, the metadata store and the secret key stay refused
    /// either way; the embedded examples database is always allowed.
    pub allow_sqlite_databases: bool,
}

/// Embedded dashboards and their guest tokens (Superset's `EMBEDDED_SUPERSET` flag and
/// `GUEST_*` keys).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddedConfig {
    /// `EMBEDDED_SUPERSET`: serve `/embedded/<uuid>` and accept guest tokens. On by default:
    /// nothing is embedded until someone allowed to (`can_set_embedded`) embeds a dashboard
    /// and someone allowed to (`can_grant_guest_token`, Admin) mints tokens for it.
    pub enabled: bool,
    /// `GUEST_TOKEN_JWT_SECRET`; unset derives one from the server's secret key (so replicas
    /// agree, and no default secret is shared between deployments).
    pub guest_token_secret: Option<Secret>,
    /// `GUEST_TOKEN_JWT_AUDIENCE`: tokens for another audience are refused.
    pub guest_token_audience: String,
    /// `GUEST_TOKEN_JWT_EXP_SECONDS`: lifetime of a guest token.
    pub guest_token_ttl_secs: u64,
    /// `GUEST_ROLE_NAME`: the role whose viewing grants (CSV export, sharing) guests also get.
    pub guest_role_name: String,
    /// `GUEST_TOKEN_HEADER_NAME`: the header carrying the token.
    pub guest_token_header_name: String,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            enabled: true,
            guest_token_secret: None,
            guest_token_audience: "liteset".into(),
            guest_token_ttl_secs: 300,
            guest_role_name: "Public".into(),
            guest_token_header_name: "X-GuestToken".into(),
        }
    }
}

impl EmbeddedConfig {
    /// The key guest tokens are signed with: the configured one, else one derived from the
    /// server's secret key (HMAC with a fixed label, so it is not the login tokens' key).
    pub fn guest_secret(&self, server_secret: &[u8]) -> Vec<u8> {
        use hmac::Mac;
        match &self.guest_token_secret {
            Some(s) => s.expose().as_bytes().to_vec(),
            None => {
                let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(server_secret)
                    .expect("HMAC takes any key length");
                mac.update(b"liteset guest tokens");
                mac.finalize().into_bytes().to_vec()
            }
        }
    }
}

/// Where `liteset frontend install` puts Superset's prebuilt web app and `serve` finds it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FrontendConfig {
    /// Folder of the installed frontend; unset means `<data_dir>/frontend`. Replicas may
    /// share one read-only copy.
    pub dir: Option<PathBuf>,
}

/// Limits of the WebAssembly plugin sandbox. A plugin may ask for other limits per call kind
/// (`plugins.overrides.<name>`), but never beyond the `max_*` caps.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginConfig {
    /// Linear memory one post-processing or render call may use, in MiB.
    pub memory_mb: u64,
    /// Wall-clock budget of one post-processing or render call, in milliseconds.
    pub timeout_ms: u64,
    /// Largest `memory_mb` an override may set.
    pub max_memory_mb: u64,
    /// Largest `timeout_ms` an override may set.
    pub max_timeout_ms: u64,
    /// Plugin calls running at once; further calls wait up to `queue_timeout_ms`, then get 503.
    pub max_concurrent_calls: u32,
    /// How long a call waits for a free slot before the request is answered with 503.
    pub queue_timeout_ms: u64,
    /// Largest component accepted by `POST /api/v1/plugin/`, in MiB.
    pub max_upload_mb: u64,
    /// Memory of each pooled sandbox kept resident (zeroed, not returned to the kernel)
    /// between calls, in MiB. A call then touches no fresh page up to this size; larger
    /// values trade resident memory (up to this much per warm instance, twice
    /// `max_concurrent_calls` of them) for speed on large tables.
    pub keep_resident_mb: u64,
    /// Per-plugin limits, keyed by plugin name.
    pub overrides: std::collections::BTreeMap<String, PluginOverrides>,
}

impl Default for PluginConfig {
    fn default() -> Self {
        PluginConfig {
            memory_mb: 128,
            timeout_ms: 2_000,
            max_memory_mb: 1_024,
            max_timeout_ms: 60_000,
            max_concurrent_calls: 8,
            queue_timeout_ms: 2_000,
            max_upload_mb: 50,
            keep_resident_mb: 8,
            overrides: Default::default(),
        }
    }
}

/// Limits of one plugin that differ from `[plugins]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginOverrides {
    /// See [`PluginConfig::memory_mb`].
    pub memory_mb: Option<u64>,
    /// See [`PluginConfig::timeout_ms`].
    pub timeout_ms: Option<u64>,
}

/// Functions refused by default in chart SQL, chart fragments and SQL Lab, on every database
/// (an entry may be a pattern: `*` stands for any run of characters, so a family is refused
/// whole, including members a newer server adds). Names are matched however they are
/// spelled: quoted, schema-qualified, in any case (see `query::sqlcheck::functions_called`).
///
/// Superset's PostgreSQL list (`DISALLOWED_SQL_FUNCTIONS`: `version`, `inet_*_addr`, the XML
/// exports) plus what a read-only query must not be able to do with an ordinary role:
///
/// * run SQL given as text, which no check of the statement can see: `query_to_xml`,
///   `cursor_to_xml`, `table_to_xml` (reads a table by name), `schema_to_xml`,
///   `database_to_xml` and their `*_xmlschema` variants (`*_to_xml*`), `ts_stat`,
///   `ts_rewrite`;
/// * reach other servers: `dblink*` (also runs SQL text);
/// * read or list the server's files or large objects: `pg_read_file`, `pg_read_binary_file`,
///   `pg_ls_*`, `pg_stat_file`, `pg_current_logfile`, adminpack's `pg_file_*`/`pg_logdir_ls`,
///   `lo_*` (`lo_import`, `lo_export`, `lo_get`, …), `loread`, `lowrite`;
/// * change settings or server state, which outlive the statement on a pooled connection or
///   reach other sessions: `set_config`, `pg_reload_conf`, `pg_rotate_logfile`,
///   `pg_switch_wal`, `pg_promote`, `pg_cancel_backend`, `pg_terminate_backend`,
///   `pg_advisory_*` and `pg_try_advisory_*` (session locks stay on the connection),
///   `pg_notify`, backups, WAL replay, replication slots and origins (logical decoding reads
///   every table's changes), `pg_create_restore_point`, `pg_stat_reset*`,
///   `pg_log_backend_memory_contexts`, `pg_import_system_collations`, `binary_upgrade_*`;
/// * tell about the server: `version`, `inet_client_addr`/`_port`, `inet_server_addr`/`_port`,
///   `current_setting` and `pg_show_all_settings` (generated chart SQL never needs them;
///   harmless facts such as `pg_backend_pid` stay allowed);
/// * hold a connection on purpose: `pg_sleep`, `pg_sleep_for`, `pg_sleep_until` (listed one by
///   one, so `load-examples` can print the list without `pg_sleep` alone);
/// * MySQL/MariaDB: `sleep`, `benchmark` (hold a connection on purpose);
/// * SQLite: `load_extension` (native code), the shell's file functions `readfile`,
///   `writefile`, `edit`, `fsdir`, `lsdir`, `zipfile`, `fts3_tokenizer` (takes a pointer), and
///   `sqlite_dbpage` (raw pages).
///
/// Not listed: `nextval`/`setval` and other writes (a read-only transaction refuses them
/// where DML is not allowed, and where it is, they are DML); `xpath` (it reads XML values,
/// not tables); `zeroblob`/`randomblob` (result size is bounded elsewhere). On a database that
/// allows DML the list is not a boundary: a role that may create functions can wrap any of
/// these in one; the database role's privileges are.
pub const DEFAULT_DISALLOWED_FUNCTIONS: &[&str] = &[
    // Superset's PostgreSQL list and the rest of its families.
    "*_to_xml*",
    "inet_client_addr",
    "inet_client_port",
    "inet_server_addr",
    "inet_server_port",
    "version",
    // SQL given as text.
    "ts_rewrite",
    "ts_stat",
    // Other servers.
    "dblink*",
    // Files and large objects.
    "lo_*",
    "loread",
    "lowrite",
    "pg_current_logfile",
    "pg_file_*",
    "pg_logdir_ls",
    "pg_ls_*",
    "pg_read_binary_file",
    "pg_read_file",
    "pg_stat_file",
    // Settings and server state.
    "binary_upgrade_*",
    "current_setting",
    "pg_advisory_*",
    "pg_backup_*",
    "pg_cancel_backend",
    "pg_copy_*_replication_slot",
    "pg_create_*",
    "pg_drop_replication_slot",
    "pg_import_system_collations",
    "pg_log_backend_memory_contexts",
    "pg_logical_*",
    "pg_notify",
    "pg_promote",
    "pg_reload_conf",
    "pg_replication_*",
    "pg_rotate_logfile",
    "pg_show_all_settings",
    "pg_start_backup",
    "pg_stat_reset*",
    "pg_stop_backup",
    "pg_switch_wal",
    "pg_terminate_backend",
    "pg_try_advisory_*",
    "pg_wal_replay_*",
    "set_config",
    // Sleeping.
    "pg_sleep",
    "pg_sleep_for",
    "pg_sleep_until",
    // MySQL/MariaDB: sleeping and busy loops (its file, shell and lock functions are always
    // refused: `engines::mysql::REFUSED_FUNCTIONS`).
    "benchmark",
    "sleep",
    // SQLite.
    "edit",
    "fsdir",
    "fts3_tokenizer",
    "load_extension",
    "lsdir",
    "readfile",
    "sqlite_dbpage",
    "writefile",
    "zipfile",
];

/// Query execution settings; `databases.<database_name>` overrides the pool and timeout of one
/// database.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueryConfig {
    /// Longest a chart or SQL Lab statement may run before it is cancelled in the database.
    pub timeout_secs: u64,
    /// Connections per analytical database (per replica).
    pub pool_size: u32,
    /// How long a query waits for a free connection before answering "too many queries".
    pub pool_wait_secs: u64,
    /// Time allowed to open a connection.
    pub connect_timeout_secs: u64,
    /// Memory the results cache may use, in MiB; 0 disables the cache.
    pub cache_max_mb: u64,
    /// Cache lifetime when neither chart, dataset nor database sets one (Superset's
    /// `CACHE_DEFAULT_TIMEOUT`).
    pub cache_default_timeout_secs: u64,
    /// Superset's `ROW_LIMIT`: rows of a chart query without `row_limit`.
    pub row_limit: u64,
    /// Superset's `SAMPLES_ROW_LIMIT`: rows of a samples query without `row_limit` (a
    /// default, not a cap).
    pub samples_row_limit: u64,
    /// Superset's `SQL_MAX_ROW`: the cap of every chart and SQL Lab query.
    pub sql_max_row: u64,
    /// Superset's `DISPLAY_MAX_ROW`: rows SQL Lab returns inline.
    pub display_max_row: u64,
    /// Superset's `SQLLAB_TIMEOUT` for synchronous SQL Lab queries.
    pub sqllab_timeout_secs: u64,
    /// Memory the SQL Lab results store (Superset's `RESULTS_BACKEND`, per replica) may use,
    /// in MiB; least recently used results are evicted first.
    pub sqllab_results_max_mb: u64,
    /// How long SQL Lab keeps the results of an asynchronous query for
    /// `GET /api/v1/sqllab/results/`.
    pub sqllab_results_ttl_secs: u64,
    /// The most bytes one statement's result may hold (text and blob bytes plus a fixed cost
    /// per cell), counted while rows arrive; past it the statement is cancelled and the
    /// request answers 400 `RESULT_TOO_LARGE_ERROR`.
    pub max_result_bytes: u64,
    /// Superset's `RLS_IN_SQLLAB`: SQL Lab reads a table that a dataset with row-level rules
    /// covers through those rules (the table replaced by a filtered subquery). Off, as in
    /// Superset: SQL Lab users are trusted with their databases.
    pub rls_in_sqllab: bool,
    /// Superset's `ENABLE_TEMPLATE_PROCESSING`: Jinja templates in dataset SQL, SQL
    /// expressions and SQL Lab are rendered (sandboxed, see `query/template.rs`). Off, as in
    /// Superset; while off, SQL holding template syntax is refused with a 400 naming this
    /// switch instead of reaching the database raw.
    pub template_processing: bool,
    /// Work one template render may do (minijinja fuel: about one unit per instruction or per
    /// 64 bytes created), which bounds its time and memory.
    pub template_fuel: u64,
    /// The most bytes one rendered template may produce.
    pub template_max_bytes: u64,
    /// Per-database overrides, keyed by `database_name`.
    pub databases: std::collections::BTreeMap<String, DatabaseOverrides>,
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            timeout_secs: 300,
            pool_size: 20,
            pool_wait_secs: 30,
            connect_timeout_secs: 10,
            cache_max_mb: 256,
            cache_default_timeout_secs: 86_400,
            row_limit: 50_000,
            samples_row_limit: 1_000,
            sql_max_row: 100_000,
            display_max_row: 10_000,
            sqllab_timeout_secs: 30,
            sqllab_results_max_mb: 256,
            sqllab_results_ttl_secs: 86_400,
            max_result_bytes: crate::engines::DEFAULT_MAX_RESULT_BYTES as u64,
            rls_in_sqllab: false,
            template_processing: false,
            template_fuel: 500_000,
            template_max_bytes: 1 << 20,
            databases: Default::default(),
        }
    }
}

/// Settings of one database that differ from `[query]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseOverrides {
    /// See [`QueryConfig::timeout_secs`].
    pub timeout_secs: Option<u64>,
    /// See [`QueryConfig::pool_size`].
    pub pool_size: Option<u32>,
    /// See [`QueryConfig::pool_wait_secs`].
    pub pool_wait_secs: Option<u64>,
    /// This database's own comma-separated list of refused SQL functions, replacing
    /// [`Config::disallowed_functions`] for its charts and SQL Lab (empty means none).
    pub disallowed_functions: Option<String>,
}

impl QueryConfig {
    /// The pool and timeout settings of the database called `database_name`.
    pub fn engine_options(&self, database_name: &str) -> crate::engines::EngineOptions {
        let o = self.databases.get(database_name);
        let secs = std::time::Duration::from_secs;
        crate::engines::EngineOptions {
            pool_size: o.and_then(|o| o.pool_size).unwrap_or(self.pool_size),
            connect_timeout: secs(self.connect_timeout_secs),
            pool_wait: secs(
                o.and_then(|o| o.pool_wait_secs)
                    .unwrap_or(self.pool_wait_secs),
            ),
            statement_timeout: secs(o.and_then(|o| o.timeout_secs).unwrap_or(self.timeout_secs)),
            max_result_bytes: usize::try_from(self.max_result_bytes).unwrap_or(usize::MAX),
            // Known from the database row, not the configuration: the catalog sets it.
            allow_dml: false,
        }
    }
}

impl Config {
    /// Lower-cased names of the SQL functions queries may not call (the global list).
    pub fn disallowed_functions(&self) -> std::collections::BTreeSet<String> {
        match &self.disallowed_functions {
            None => DEFAULT_DISALLOWED_FUNCTIONS
                .iter()
                .map(|f| (*f).to_owned())
                .collect(),
            Some(list) => function_list(list),
        }
    }

    /// The SQL functions queries on the database called `database_name` may not call: its
    /// `query.databases.<name>.disallowed_functions` when set, else the global list.
    pub fn disallowed_functions_for(
        &self,
        database_name: &str,
    ) -> std::collections::BTreeSet<String> {
        match self
            .query
            .databases
            .get(database_name)
            .and_then(|o| o.disallowed_functions.as_deref())
        {
            Some(list) => function_list(list),
            None => self.disallowed_functions(),
        }
    }
}

fn function_list(list: &str) -> std::collections::BTreeSet<String> {
    list.split(',')
        .map(|f| f.trim().to_ascii_lowercase())
        .filter(|f| !f.is_empty())
        .collect()
}

/// Authentication and session settings.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Lifetime of access tokens (flask-jwt default: 15 minutes).
    pub access_token_ttl_secs: u64,
    /// Lifetime of refresh tokens (flask-jwt default: 30 days).
    pub refresh_token_ttl_secs: u64,
    /// Lifetime of the `session` cookie (Flask default: 31 days).
    pub session_ttl_secs: u64,
    /// Lifetime of a CSRF token (Flask-WTF default: 1 week).
    pub csrf_ttl_secs: u64,
    /// Failed logins allowed per username and client address within the window; 0 disables.
    pub max_failed_logins: u32,
    /// Window of the failed-login limit.
    pub failed_login_window_secs: u64,
    /// Logins that may wait for, or hold, a password-hashing worker at once; past it a login
    /// is answered 503 with `Retry-After`.
    pub login_queue_len: usize,
    /// Of those, how many may be for one username (the rest of its attempts wait), so a flood
    /// against one account leaves room for everyone else.
    pub login_queue_per_user: usize,
    /// Longest a login waits in that queue (and is verified) before a 503.
    pub login_queue_timeout_ms: u64,
    /// Copy this built-in role's permissions into Public (Superset's `PUBLIC_ROLE_LIKE`).
    pub public_role_like: Option<String>,
    /// How long a user's roles and permissions are cached in memory before being re-read.
    pub permission_cache_ttl_secs: u64,
    /// Mark the session cookie `Secure` (set when served over HTTPS).
    pub secure_cookies: bool,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            access_token_ttl_secs: 15 * 60,
            refresh_token_ttl_secs: 30 * 24 * 3600,
            session_ttl_secs: 31 * 24 * 3600,
            csrf_ttl_secs: 7 * 24 * 3600,
            max_failed_logins: 10,
            failed_login_window_secs: 300,
            login_queue_len: 32,
            login_queue_per_user: 4,
            login_queue_timeout_ms: 10_000,
            public_role_like: None,
            permission_cache_ttl_secs: 5,
            secure_cookies: false,
        }
    }
}

/// HTTP server settings.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Largest request body accepted; larger ones get a 400 without being read further.
    pub max_body_bytes: u64,
    /// Largest body of a request without valid credentials (a login form, a login JSON):
    /// bigger ones get a 413 before anything is read, so nobody spends the server's memory
    /// before signing in.
    pub max_unauthenticated_body_bytes: u64,
    /// Bytes all requests without valid credentials may hold in memory at once; past it they
    /// get a 503 with `Retry-After` until others finish.
    pub max_unauthenticated_buffered_bytes: u64,
    /// Seconds a client gets to send a request's headers (slow-loris), and to send its whole
    /// body: a request past either is closed (headers) or answered 408 (body).
    pub read_timeout_secs: u64,
    /// Seconds in-flight requests get to finish after SIGINT/SIGTERM.
    pub shutdown_grace_secs: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            max_body_bytes: 8 * 1024 * 1024,
            max_unauthenticated_body_bytes: 16 * 1024,
            max_unauthenticated_buffered_bytes: 16 * 1024 * 1024,
            read_timeout_secs: 30,
            shutdown_grace_secs: 30,
        }
    }
}

/// Metadata store settings.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetadataConfig {
    /// Connections in the metadata pool.
    pub pool_size: u32,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        MetadataConfig { pool_size: 16 }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./liteset-data"),
            metadata_url: None,
            secret_key: None,
            admin_password: None,
            bind: "127.0.0.1:8088".into(),
            log_format: LogFormat::Text,
            auth: AuthConfig::default(),
            http: HttpConfig::default(),
            metadata: MetadataConfig::default(),
            disallowed_functions: None,
            query: QueryConfig::default(),
            examples: true,
            plugins: PluginConfig::default(),
            frontend: FrontendConfig::default(),
            security: SecurityConfig::default(),
            embedded: EmbeddedConfig::default(),
        }
    }
}

/// Configuration could not be loaded; `liteset` exits with code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A layer had a bad or unknown key; one line per problem names the key and its source.
    #[error("invalid configuration:\n  - {}", .0.join("\n  - "))]
    Load(Vec<String>),
    /// Values parsed but do not make sense together.
    #[error("invalid configuration:\n  - {}", .0.join("\n  - "))]
    Invalid(Vec<String>),
    /// The generated secret key could not be read or written.
    #[error("cannot use the secret key file {path}: {source}")]
    SecretFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// `LITESET_*` variables that are not configuration keys: the config path itself, the test
/// harness's own settings, which spawned servers inherit, and the credentials of
/// `liteset plugin install` (a client; an operator may export them in the server's shell).
const NON_CONFIG_ENV: &[&str] = &["CONFIG", "BIN", "USERNAME", "PASSWORD"];

/// Values given on the command line; `None` means "not given".
#[derive(Clone, Debug, Default, Serialize)]
pub struct Overrides {
    /// `--bind`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// `--data-dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// `--log-format`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,
}

impl Config {
    /// The connection guard of this configuration: the data folder, the metadata store and
    /// the secret key are out of every analytical connection's reach.
    pub fn connection_guard(&self) -> crate::engines::ConnectionGuard {
        let mut protected = vec![self.sqlite_path(), self.data_dir.join("secret_key")];
        protected.push(self.data_dir.join("plugins"));
        crate::engines::ConnectionGuard::new(&crate::engines::GuardConfig {
            data_dir: Some(self.data_dir.clone()),
            protected,
            // Written by `examples.rs` on the embedded default only.
            examples_db: (!self.is_production()).then(|| self.data_dir.join("examples.db")),
            metadata_url: self.metadata_url.as_ref().map(|u| u.expose().to_owned()),
            allow_sqlite: self.security.allow_sqlite_databases,
        })
    }

    /// Loads every layer and validates the result.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Config, ConfigError> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            fig = fig.merge(Toml::file_exact(path));
        }
        let env = Env::prefixed("LITESET_")
            .filter(|k| {
                let k = k.as_str().to_ascii_uppercase();
                !NON_CONFIG_ENV.contains(&k.as_str()) && !k.starts_with("TEST_")
            })
            .split("__");
        fig = fig
            .merge(env)
            .merge(Serialized::defaults(overrides.clone()));
        let config: Config = fig.extract().map_err(describe)?;
        config.validate()?;
        Ok(config)
    }

    /// Production mode keeps metadata in PostgreSQL, shared by replicas.
    pub fn is_production(&self) -> bool {
        self.metadata_url.is_some()
    }

    /// The parsed listen address (validated at load).
    pub fn bind_addr(&self) -> SocketAddr {
        self.bind
            .parse()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 8088)))
    }

    /// Folder of the installed web frontend.
    pub fn frontend_dir(&self) -> PathBuf {
        self.frontend
            .dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("frontend"))
    }

    /// Path of the embedded SQLite metadata file.
    pub fn sqlite_path(&self) -> PathBuf {
        self.data_dir.join("liteset.db")
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if self.bind.parse::<SocketAddr>().is_err() {
            problems.push(format!(
                "bind: {:?} is not an address like 127.0.0.1:8088",
                self.bind
            ));
        }
        if let Some(url) = &self.metadata_url {
            let u = url.expose();
            if !(u.starts_with("postgresql://") || u.starts_with("postgres://")) {
                problems.push(
                    "metadata_url: must start with postgresql:// (unset it to use SQLite)".into(),
                );
            } else {
                // The TLS options are libpq's (`verify-full`, `sslrootcert`), which tokio-postgres
                // does not parse; their files are read when the store opens.
                match crate::pgtls::split_url(u) {
                    Err(e) => problems.push(format!("metadata_url: {e}")),
                    Ok((rest, _)) if rest.parse::<tokio_postgres::Config>().is_err() => {
                        problems.push("metadata_url: not a valid PostgreSQL connection URL".into());
                    }
                    Ok(_) => {}
                }
            }
            if self.secret_key.is_none() {
                problems.push(
                    "secret_key: required when metadata_url is set (LITESET_SECRET_KEY); every \
                     replica must share it"
                        .into(),
                );
            }
        }
        if let Some(key) = &self.secret_key
            && key.expose().len() < 32
        {
            problems.push("secret_key: must be at least 32 characters".into());
        }
        let p = &self.plugins;
        if p.memory_mb == 0 || p.memory_mb > p.max_memory_mb {
            problems.push(format!(
                "plugins.memory_mb: must be between 1 and plugins.max_memory_mb ({})",
                p.max_memory_mb
            ));
        }
        if p.keep_resident_mb > p.max_memory_mb {
            problems.push(format!(
                "plugins.keep_resident_mb: must be at most plugins.max_memory_mb ({})",
                p.max_memory_mb
            ));
        }
        if p.timeout_ms == 0 || p.timeout_ms > p.max_timeout_ms {
            problems.push(format!(
                "plugins.timeout_ms: must be between 1 and plugins.max_timeout_ms ({})",
                p.max_timeout_ms
            ));
        }
        if p.max_memory_mb > 4_096 {
            problems.push("plugins.max_memory_mb: at most 4096 (a wasm32 memory's size)".into());
        }
        let q = &self.query;
        if !(1_000..=100_000_000).contains(&q.template_fuel) {
            problems.push("query.template_fuel: must be between 1000 and 100000000".into());
        }
        if !(1_024..=64 << 20).contains(&q.template_max_bytes) {
            problems.push("query.template_max_bytes: must be between 1024 and 67108864".into());
        }
        if p.max_concurrent_calls == 0 || p.max_concurrent_calls > 1_000 {
            problems.push("plugins.max_concurrent_calls: must be between 1 and 1000".into());
        }
        for (name, o) in &p.overrides {
            if o.memory_mb.is_some_and(|m| m == 0 || m > p.max_memory_mb) {
                problems.push(format!(
                    "plugins.overrides.{name}.memory_mb: must be between 1 and plugins.max_memory_mb"
                ));
            }
            if o.timeout_ms.is_some_and(|t| t == 0 || t > p.max_timeout_ms) {
                problems.push(format!(
                    "plugins.overrides.{name}.timeout_ms: must be between 1 and plugins.max_timeout_ms"
                ));
            }
        }
        let a = &self.auth;
        for (name, v) in [
            ("auth.access_token_ttl_secs", a.access_token_ttl_secs),
            ("auth.refresh_token_ttl_secs", a.refresh_token_ttl_secs),
            ("auth.session_ttl_secs", a.session_ttl_secs),
            ("auth.csrf_ttl_secs", a.csrf_ttl_secs),
            ("auth.failed_login_window_secs", a.failed_login_window_secs),
            ("auth.login_queue_timeout_ms", a.login_queue_timeout_ms),
        ] {
            if v == 0 {
                problems.push(format!("{name}: must be greater than 0"));
            }
        }
        // The hashing workers' own queue holds 1024 jobs; the login queue must fit in it.
        if a.login_queue_len == 0 || a.login_queue_len > 1_000 {
            problems.push("auth.login_queue_len: must be between 1 and 1000".into());
        }
        if a.login_queue_per_user == 0 || a.login_queue_per_user > a.login_queue_len {
            problems.push(
                "auth.login_queue_per_user: must be between 1 and auth.login_queue_len".into(),
            );
        }
        if let Some(role) = &a.public_role_like
            && !crate::roles::BUILTIN_ROLE_NAMES.contains(&role.as_str())
        {
            problems.push(format!(
                "auth.public_role_like: {role:?} is not a built-in role"
            ));
        }
        if self.http.max_body_bytes < 1024 {
            problems.push("http.max_body_bytes: must be at least 1024".into());
        }
        if self.http.max_unauthenticated_body_bytes < 1024 {
            problems.push("http.max_unauthenticated_body_bytes: must be at least 1024".into());
        }
        if self.http.max_unauthenticated_buffered_bytes < self.http.max_unauthenticated_body_bytes
            || self.http.max_unauthenticated_buffered_bytes > u64::from(u32::MAX)
        {
            problems.push(
                "http.max_unauthenticated_buffered_bytes: must be at least \
                 http.max_unauthenticated_body_bytes and below 4 GiB"
                    .into(),
            );
        }
        if self.http.read_timeout_secs == 0 {
            problems.push("http.read_timeout_secs: must be at least 1".into());
        }
        let q = &self.query;
        for (name, v) in [
            ("query.pool_size", u64::from(q.pool_size)),
            ("query.row_limit", q.row_limit),
            ("query.samples_row_limit", q.samples_row_limit),
            ("query.sql_max_row", q.sql_max_row),
            ("query.display_max_row", q.display_max_row),
            ("query.sqllab_timeout_secs", q.sqllab_timeout_secs),
            ("query.sqllab_results_ttl_secs", q.sqllab_results_ttl_secs),
            ("query.connect_timeout_secs", q.connect_timeout_secs),
            ("query.max_result_bytes", q.max_result_bytes),
        ] {
            if v == 0 {
                problems.push(format!("{name}: must be greater than 0"));
            }
        }
        for (db, o) in &q.databases {
            if o.pool_size == Some(0) {
                problems.push(format!(
                    "query.databases.{db}.pool_size: must be at least 1"
                ));
            }
        }
        if self.metadata.pool_size == 0 {
            problems.push("metadata.pool_size: must be at least 1".into());
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid(problems))
        }
    }

    /// The secret key: configured, or (embedded mode only) generated once into the data
    /// folder with owner-only permissions.
    pub fn resolve_secret_key(&self) -> Result<Secret, ConfigError> {
        if let Some(key) = &self.secret_key {
            return Ok(key.clone());
        }
        let path = self.data_dir.join("secret_key");
        let io = |source| ConfigError::SecretFile {
            path: path.clone(),
            source,
        };
        match std::fs::read_to_string(&path) {
            Ok(s) if s.trim().len() >= 32 => return Ok(Secret::new(s.trim())),
            Ok(_) => {
                return Err(io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "shorter than 32 characters",
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        std::fs::create_dir_all(&self.data_dir).map_err(io)?;
        let key = hex::encode(rand::random::<[u8; 32]>());
        write_private(&path, &key).map_err(io)?;
        Ok(Secret::new(key))
    }

    /// The effective configuration as TOML, secrets redacted, for logs and `config` output.
    pub fn redacted_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render: {e}"))
    }
}

/// One line per figment problem: the dotted key, what is wrong, and where the value came from
/// (the environment variable's own name, or the file's path).
fn describe(err: figment::Error) -> ConfigError {
    let lines = err
        .into_iter()
        .map(|e| {
            let key = e.path.join(".").to_lowercase();
            let source = match &e.metadata {
                Some(md) => match &md.source {
                    Some(figment::Source::File(path)) => format!("file {}", path.display()),
                    _ if md.name.contains("environment") => format!(
                        "environment variable LITESET_{}",
                        e.path.join("__").to_uppercase()
                    ),
                    _ => md.name.to_string(),
                },
                None => "defaults".into(),
            };
            if key.is_empty() {
                format!("{} (from {source})", e.kind)
            } else {
                format!("{key}: {} (from {source})", e.kind)
            }
        })
        .collect();
    ConfigError::Load(lines)
}

fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)?.write_all(contents.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_in_debug_and_toml() {
        let c = Config {
            secret_key: Some(Secret::new("x".repeat(40))),
            metadata_url: Some(Secret::new("postgresql://u:hunter2@h/db")),
            ..Config::default()
        };
        assert!(!format!("{c:?}").contains("hunter2"));
        assert!(!c.redacted_toml().contains("hunter2"));
        assert!(!c.redacted_toml().contains("xxxx"));
    }

    #[test]
    fn production_mode_requires_a_secret_key() {
        let c = Config {
            metadata_url: Some(Secret::new("postgresql://u@h/db")),
            ..Config::default()
        };
        let err = c.validate().unwrap_err().to_string();
        assert!(err.contains("secret_key"), "{err}");
    }

    #[test]
    fn unknown_file_keys_are_rejected_with_their_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "bind = \"127.0.0.1:1\"\nbogus_key = 1\n").unwrap();
        let err = Config::load(Some(&path), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus_key"), "{err}");
    }

    #[test]
    fn flags_win_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(
            &path,
            "bind = \"127.0.0.1:1\"\n[auth]\naccess_token_ttl_secs = 60\n",
        )
        .unwrap();
        let c = Config::load(
            Some(&path),
            &Overrides {
                bind: Some("127.0.0.1:2".into()),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(c.bind, "127.0.0.1:2");
        assert_eq!(c.auth.access_token_ttl_secs, 60);
    }

    #[test]
    fn a_database_may_have_its_own_disallowed_functions() {
        let mut c = Config::default();
        c.query.databases.insert(
            "ssb".into(),
            DatabaseOverrides {
                disallowed_functions: Some(" Version, dblink ,".into()),
                ..DatabaseOverrides::default()
            },
        );
        assert!(c.disallowed_functions_for("other").contains("pg_sleep"));
        let ssb = c.disallowed_functions_for("ssb");
        assert!(!ssb.contains("pg_sleep"));
        assert_eq!(ssb.into_iter().collect::<Vec<_>>(), ["dblink", "version"]);
        c.disallowed_functions = Some(String::new());
        assert!(c.disallowed_functions_for("other").is_empty());
    }

    #[test]
    fn generated_secret_key_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config {
            data_dir: dir.path().to_owned(),
            ..Config::default()
        };
        let a = c.resolve_secret_key().unwrap();
        let b = c.resolve_secret_key().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.expose().len(), 64);
    }
}
