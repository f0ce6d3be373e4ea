//! `liteset load-examples`: the Star Schema Benchmark as example data for load tests.
//!
//! Generates SSB's five tables inside a user's PostgreSQL (`data.rs`, deterministic, streamed
//! through `COPY` in one transaction, then keys, indexes and `ANALYZE`), and registers the
//! database, 19 virtual datasets, their charts and 10 dashboards in the metadata store through
//! the bundle import (`catalog.rs`), as `examples.rs` does for the embedded examples. A rerun
//! with the same scale factor keeps the tables (their scale factor is recorded in `ssb_meta`)
//! and overwrites the catalog records, whose uuids are fixed.

pub mod catalog;
pub mod data;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::SinkExt;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_postgres::{Client, Transaction};

use crate::assets::{self, AssetsError, ImportOptions, Kind};
use crate::config::Config;
use crate::engines::EngineOptions;
use crate::state::AppState;
use crate::uri::{ConnectionUri, Engine};
use data::{RowSource, Sizes};

/// Changes whenever the generated rows change, so a rerun regenerates older tables.
const GENERATOR_VERSION: i32 = 1;

/// Pool size to recommend for the SSB database: 50 concurrent load-test users and headroom.
const RECOMMENDED_POOL_SIZE: u32 = 60;

/// `COPY` chunks of about this many bytes.
const CHUNK: usize = 1 << 20;

/// Arguments of `liteset load-examples` (no `Debug`: the URL may hold a password).
#[derive(clap::Args, Clone)]
pub struct LoadArgs {
    /// PostgreSQL database to create the SSB tables in (postgresql://user:password@host:port/db);
    /// its tables lineorder, customer, supplier, part, dates and ssb_meta are replaced.
    #[arg(long)]
    pub database_url: String,
    /// SSB scale factor: SF 1 is 6,000,000 lineorder rows (between 0.001 and 1000).
    #[arg(long, default_value_t = 0.1)]
    pub scale_factor: f64,
    /// Name of the database in Liteset's catalog.
    #[arg(long, default_value = "ssb")]
    pub database_name: String,
    /// Regenerate the tables even when they already hold this scale factor.
    #[arg(long)]
    pub force: bool,
}

/// Why `load-examples` failed.
#[derive(Debug, thiserror::Error)]
pub enum SsbError {
    /// Bad arguments (exit code 2).
    #[error("invalid arguments: {0}")]
    Usage(String),
    /// The PostgreSQL database could not be reached.
    #[error("cannot connect to {url}: {message}")]
    Connect {
        /// The URL, password masked.
        url: String,
        /// What PostgreSQL or the network said.
        message: String,
    },
    /// Creating or filling the tables failed (nothing was changed: it is one transaction).
    #[error("loading the SSB tables into {url} failed: {message}")]
    Load {
        /// The URL, password masked.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The bundle import refused the catalog records.
    #[error("registering the SSB examples in the catalog failed: {0}")]
    Catalog(String),
}

impl SsbError {
    /// `main`'s exit code: 2 for bad arguments, 1 for the rest.
    pub fn exit_code(&self) -> u8 {
        match self {
            SsbError::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Checked arguments.
pub struct Plan {
    uri: ConnectionUri,
    /// The URL as given (with its password, which only the catalog import sees).
    url: String,
    scale_factor: f64,
    sizes: Sizes,
    database_name: String,
    force: bool,
    pg: tokio_postgres::Config,
    /// The URL's TLS (`sslmode`, `sslrootcert`), as the engines would connect.
    tls: crate::pgtls::PgTls,
}

impl Plan {
    /// Validates the arguments before anything is opened.
    pub fn new(args: &LoadArgs) -> Result<Plan, SsbError> {
        let sf = args.scale_factor;
        if !(sf.is_finite() && (0.001..=1000.0).contains(&sf)) {
            return Err(SsbError::Usage(format!(
                "--scale-factor must be between 0.001 and 1000, not {sf}"
            )));
        }
        let name = args.database_name.trim();
        if name.is_empty() || name.len() > 250 {
            return Err(SsbError::Usage(
                "--database-name must have 1 to 250 characters".into(),
            ));
        }
        let uri = ConnectionUri::parse(&args.database_url)
            .map_err(|e| SsbError::Usage(format!("--database-url: {e}")))?;
        if uri.engine != Engine::Postgres {
            return Err(SsbError::Usage(
                "--database-url must be a PostgreSQL URL: postgresql://user:password@host:port/db"
                    .into(),
            ));
        }
        let options = EngineOptions {
            statement_timeout: Duration::ZERO,
            ..EngineOptions::default()
        };
        let (pg, tls) = crate::engines::postgres::config(&uri, None, &options)
            .map_err(|e| SsbError::Usage(format!("--database-url: {e}")))?;
        Ok(Plan {
            uri,
            url: args.database_url.trim().to_owned(),
            scale_factor: sf,
            sizes: Sizes::for_scale(sf),
            database_name: name.to_owned(),
            force: args.force,
            pg,
            tls,
        })
    }
}

/// What a run did.
pub struct Summary {
    /// The database URL, password masked.
    pub url: String,
    /// The scale factor.
    pub scale_factor: f64,
    /// Rows per table.
    pub sizes: Sizes,
    /// Whether the tables already held this scale factor and were kept.
    pub kept_tables: bool,
    /// Time spent on the tables.
    pub load_time: Duration,
    /// The catalog's id of the database.
    pub database_id: Option<i64>,
    /// The database's name in the catalog.
    pub database_name: String,
    /// Catalog records written.
    pub counts: catalog::Counts,
    /// The whole run.
    pub elapsed: Duration,
}

/// Loads the tables and registers the catalog records; the metadata store must be migrated.
pub async fn run(state: &AppState, plan: &Plan) -> Result<Summary, SsbError> {
    let started = Instant::now();
    let url = plan.uri.masked();
    tracing::info!(
        message = "Loading the Star Schema Benchmark.",
        url = %url,
        scale_factor = plan.scale_factor,
    );
    let (client, connection) =
        plan.pg
            .connect(plan.tls.clone())
            .await
            .map_err(|e| SsbError::Connect {
                url: url.clone(),
                message: pg_message(&e),
            })?;
    let connection = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(message = "SSB database connection failed.", error = %pg_message(&e));
        }
    });
    let tables = load_tables(client, plan).await.map_err(|e| SsbError::Load {
        url: url.clone(),
        message: pg_message(&e),
    });
    connection.abort();
    let (kept_tables, load_time) = tables?;

    let (files, counts) = catalog::bundle(&plan.database_name, &plan.url);
    assets::import(
        &state.store,
        &state.sealer,
        state.engines.guard(),
        // The server's own examples: Superset's `ignore_permissions=True`.
        &assets::FullAccess,
        Kind::Assets,
        &files,
        &ImportOptions {
            overwrite: true,
            passwords: Default::default(),
            user: None,
        },
    )
    .await
    .map_err(|e| match e {
        AssetsError::Invalid { problems, .. } | AssetsError::Malformed { problems, .. } => {
            SsbError::Catalog(serde_json::Value::Object(problems).to_string())
        }
        other => SsbError::Catalog(other.to_string()),
    })?;
    let database_id = state
        .store
        .find_id(
            &crate::store::catalog::DATABASE,
            "uuid",
            crate::store::Value::Text(catalog::database_uuid()),
        )
        .await
        .map_err(|e| SsbError::Catalog(e.to_string()))?;
    tracing::info!(
        message = "Registered the SSB database, datasets, charts and dashboards.",
        database = %plan.database_name,
    );
    Ok(Summary {
        url,
        scale_factor: plan.scale_factor,
        sizes: plan.sizes,
        kept_tables,
        load_time,
        database_id,
        database_name: plan.database_name.clone(),
        counts,
        elapsed: started.elapsed(),
    })
}

/// Creates and fills the tables in one transaction unless they already hold this scale
/// factor; returns whether they were kept, and the time spent.
async fn load_tables(
    mut client: Client,
    plan: &Plan,
) -> Result<(bool, Duration), tokio_postgres::Error> {
    let started = Instant::now();
    if !plan.force && loaded_scale(&client).await? == Some(plan.scale_factor) {
        tracing::info!(
            message = "The SSB tables already hold this scale factor; keeping them (--force regenerates).",
        );
        return Ok((true, started.elapsed()));
    }
    let s = plan.sizes;
    let tx = client.transaction().await?;
    tx.batch_execute(
        "SET LOCAL maintenance_work_mem = '256MB';
         SET LOCAL client_min_messages = warning;
         DROP TABLE IF EXISTS ssb_meta, lineorder, customer, supplier, part, dates",
    )
    .await?;
    for (_, ddl) in data::TABLES {
        tx.batch_execute(ddl).await?;
    }
    copy(&tx, "dates", data::Dates::new(), None).await?;
    copy(&tx, "customer", data::Parties::customers(s.customer), None).await?;
    copy(&tx, "supplier", data::Parties::suppliers(s.supplier), None).await?;
    copy(&tx, "part", data::Parts::new(s.part), None).await?;
    let bar = ProgressBar::new(s.lineorder).with_style(
        ProgressStyle::with_template(
            "lineorder {bar:40} {human_pos}/{human_len} rows ({per_sec}, {eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    copy(
        &tx,
        "lineorder",
        data::LineOrders::new(s),
        Some(bar.clone()),
    )
    .await?;
    bar.finish_and_clear();
    tracing::info!(
        message = "Rows loaded; creating keys and indexes.",
        seconds = started.elapsed().as_secs_f64(),
    );
    for statement in data::INDEXES {
        tx.batch_execute(statement).await?;
    }
    tx.batch_execute(
        "ANALYZE dates, customer, supplier, part, lineorder;
         CREATE TABLE ssb_meta (scale_factor DOUBLE PRECISION NOT NULL, \
         generator INTEGER NOT NULL, lineorder BIGINT NOT NULL, customer BIGINT NOT NULL, \
         supplier BIGINT NOT NULL, part BIGINT NOT NULL, dates BIGINT NOT NULL, \
         loaded_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .await?;
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    tx.execute(
        "INSERT INTO ssb_meta (scale_factor, generator, lineorder, customer, supplier, part, dates) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            &plan.scale_factor,
            &GENERATOR_VERSION,
            &count(s.lineorder),
            &count(s.customer),
            &count(s.supplier),
            &count(s.part),
            &count(s.dates),
        ],
    )
    .await?;
    tx.commit().await?;
    Ok((false, started.elapsed()))
}

/// The scale factor of complete tables of this generator version, if any.
async fn loaded_scale(client: &Client) -> Result<Option<f64>, tokio_postgres::Error> {
    let present = client
        .query_one(
            "SELECT to_regclass('ssb_meta') IS NOT NULL AND to_regclass('lineorder') IS NOT NULL \
             AND to_regclass('customer') IS NOT NULL AND to_regclass('supplier') IS NOT NULL \
             AND to_regclass('part') IS NOT NULL AND to_regclass('dates') IS NOT NULL",
            &[],
        )
        .await?
        .get::<_, bool>(0);
    if !present {
        return Ok(None);
    }
    let row = client
        .query_opt(
            "SELECT scale_factor FROM ssb_meta WHERE generator = $1 LIMIT 1",
            &[&GENERATOR_VERSION],
        )
        .await?;
    Ok(row.map(|r| r.get::<_, f64>(0)))
}

/// Streams one table's rows into `COPY … FROM STDIN`: a blocking thread generates chunks
/// while the database takes the previous ones, so at most a few chunks are in memory.
async fn copy(
    tx: &Transaction<'_>,
    table: &str,
    source: impl RowSource + 'static,
    bar: Option<ProgressBar>,
) -> Result<u64, tokio_postgres::Error> {
    let (send, mut chunks) = tokio::sync::mpsc::channel::<Bytes>(4);
    let producer = tokio::task::spawn_blocking(move || {
        let mut source = source;
        let mut buf = Vec::with_capacity(CHUNK + 4096);
        let mut pending = 0;
        loop {
            let n = source.write_next(&mut buf);
            pending += n;
            if n == 0 || buf.len() >= CHUNK {
                if let Some(bar) = &bar {
                    bar.inc(pending);
                }
                pending = 0;
                if !buf.is_empty() {
                    let chunk = Bytes::from(std::mem::replace(
                        &mut buf,
                        Vec::with_capacity(CHUNK + 4096),
                    ));
                    // The receiver is gone when COPY failed; stop generating.
                    if send.blocking_send(chunk).is_err() {
                        return;
                    }
                }
                if n == 0 {
                    return;
                }
            }
        }
    });
    let sink = tx
        .copy_in::<_, Bytes>(&format!("COPY {table} FROM STDIN"))
        .await?;
    futures_util::pin_mut!(sink);
    while let Some(chunk) = chunks.recv().await {
        sink.send(chunk).await?;
    }
    let rows = sink.as_mut().finish().await?;
    let _ = producer.await;
    tracing::debug!(message = "Table loaded.", table, rows);
    Ok(rows)
}

/// A PostgreSQL error as one line: the server's message (and detail), or the client error
/// with its causes. None of these carry the password.
fn pg_message(e: &tokio_postgres::Error) -> String {
    if let Some(tls) = crate::pgtls::describe(e) {
        return tls;
    }
    if let Some(db) = e.as_db_error() {
        let mut m = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            let _ = write!(m, " ({detail})");
        }
        return m;
    }
    let mut m = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let _ = write!(m, ": {s}");
        source = s.source();
    }
    m
}

/// The functions to refuse on the SSB database: the effective list without `pg_sleep`.
pub fn allowed_list(config: &Config) -> String {
    let mut list: BTreeSet<String> = config.disallowed_functions();
    list.remove("pg_sleep");
    list.into_iter().collect::<Vec<_>>().join(",")
}

impl Summary {
    /// The report printed on stdout: what was loaded, and the settings the sleep charts and
    /// a 50-user load test need.
    pub fn report(&self, config: &Config) -> String {
        let mut out = String::new();
        let s = &self.sizes;
        let _ = writeln!(
            out,
            "SSB scale factor {} in {}: {} ({:.1} s)",
            self.scale_factor,
            self.url,
            if self.kept_tables {
                "tables already loaded, kept"
            } else {
                "tables created"
            },
            self.load_time.as_secs_f64()
        );
        for (table, rows) in [
            ("lineorder", s.lineorder),
            ("customer", s.customer),
            ("supplier", s.supplier),
            ("part", s.part),
            ("dates", s.dates),
        ] {
            let _ = writeln!(out, "  {table:<10} {rows:>12} rows");
        }
        let _ = writeln!(
            out,
            "Catalog: database {:?} (id {}), {} datasets (ssb_q1_1 … ssb_q4_3, sleep_10ms … \
             sleep_5s), {} charts, {} dashboards (ssb-1 … ssb-10)",
            self.database_name,
            self.database_id
                .map_or_else(|| "?".to_owned(), |id| id.to_string()),
            self.counts.datasets,
            self.counts.charts,
            self.counts.dashboards
        );
        let _ = writeln!(out, "Done in {:.1} s.", self.elapsed.as_secs_f64());
        out.push('\n');
        let name = &self.database_name;
        let current = config.disallowed_functions_for(name);
        let pool = config.query.engine_options(name).pool_size;
        let list = allowed_list(config);
        if current.contains("pg_sleep") {
            let _ = writeln!(
                out,
                "pg_sleep is a disallowed function, so the Sleep charts answer 400 until it is \
                 allowed for this database."
            );
        } else {
            let _ = writeln!(
                out,
                "pg_sleep is already allowed for this database by the configuration."
            );
        }
        let _ = writeln!(
            out,
            "Start the server with (pool: one connection per concurrent user, 50 in the load \
             test, plus headroom; now {pool}):"
        );
        let env_ok = !name.contains("__")
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if env_ok {
            let upper = name.to_ascii_uppercase();
            let _ = writeln!(
                out,
                "  LITESET_QUERY__DATABASES__{upper}__DISALLOWED_FUNCTIONS={list}"
            );
            let _ = writeln!(
                out,
                "  LITESET_QUERY__DATABASES__{upper}__POOL_SIZE={RECOMMENDED_POOL_SIZE}"
            );
            let _ = writeln!(out, "or in the configuration file:");
        } else {
            let _ = writeln!(
                out,
                "(the name {name:?} cannot be written as an environment variable) in the \
                 configuration file:"
            );
        }
        let bare = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let key = if bare {
            name.clone()
        } else {
            toml::Value::String(name.clone()).to_string()
        };
        let _ = writeln!(out, "  [query.databases.{key}]");
        let _ = writeln!(out, "  disallowed_functions = \"{list}\"");
        let _ = writeln!(out, "  pool_size = {RECOMMENDED_POOL_SIZE}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: &str, sf: f64, name: &str) -> LoadArgs {
        LoadArgs {
            database_url: url.into(),
            scale_factor: sf,
            database_name: name.into(),
            force: false,
        }
    }

    #[test]
    fn arguments_are_checked() {
        let ok = "postgresql://u:pw@localhost:5432/ssb";
        assert!(Plan::new(&args(ok, 0.1, "ssb")).is_ok());
        for bad in [
            args(ok, 0.0, "ssb"),
            args(ok, f64::NAN, "ssb"),
            args(ok, 5000.0, "ssb"),
            args(ok, 0.1, " "),
            args("sqlite:///x.db", 0.1, "ssb"),
            args("mysql://u@h/db", 0.1, "ssb"),
            args("postgresql://h/db", 0.1, "ssb"),
        ] {
            let err = Plan::new(&bad).err().expect("refused");
            assert_eq!(err.exit_code(), 2, "{err}");
            assert!(!err.to_string().contains("pw@"), "{err}");
        }
    }

    #[test]
    fn the_report_names_the_settings_without_pg_sleep() {
        let summary = Summary {
            url: "postgresql://u:XXXXXXXXXX@h/db".into(),
            scale_factor: 0.1,
            sizes: Sizes::for_scale(0.1),
            kept_tables: false,
            load_time: Duration::from_secs(1),
            database_id: Some(3),
            database_name: "ssb".into(),
            counts: catalog::Counts::default(),
            elapsed: Duration::from_secs(2),
        };
        let report = summary.report(&Config::default());
        let line = report
            .lines()
            .find(|l| l.contains("LITESET_QUERY__DATABASES__SSB__DISALLOWED_FUNCTIONS="))
            .expect("env line");
        let list = line.split_once('=').expect("=").1;
        assert!(!list.split(',').any(|f| f == "pg_sleep"), "{line}");
        assert!(list.split(',').any(|f| f == "pg_sleep_for"), "{line}");
        assert!(report.contains("LITESET_QUERY__DATABASES__SSB__POOL_SIZE=60"));
        assert!(report.contains("[query.databases.ssb]"), "{report}");
    }
}
