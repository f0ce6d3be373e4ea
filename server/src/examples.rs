//! The embedded examples: on the first start of the embedded default (SQLite metadata), an
//! `examples` SQLite database appears in the data folder with a sales table, two datasets,
//! five charts (one per built-in viz type; four with saved query contexts, one with `params`
//! only) and one dashboard, so a newcomer's `liteset serve` answers real chart data at once.
//!
//! The data is generated deterministically (a fixed linear congruential sequence) and the
//! catalog records go through the same bundle import as a user's Superset export, so the
//! examples exercise the real paths.

use std::path::Path;

use serde_json::{Value as Json, json};

use crate::assets::{self, Files, ImportOptions, Kind};
use crate::state::AppState;

/// Stable ids, so re-running never duplicates the examples.
const DATABASE_UUID: &str = "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0001";
const SALES_UUID: &str = "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0002";
const MONTHLY_UUID: &str = "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0003";
const DASHBOARD_UUID: &str = "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0010";

/// Whether the examples are wanted and missing; then creates them.
pub async fn ensure(state: &AppState) -> anyhow::Result<()> {
    if !state.config.examples || state.config.is_production() {
        return Ok(());
    }
    let existing = state
        .store
        .find_id(
            &crate::store::catalog::DATABASE,
            "uuid",
            crate::store::Value::Text(DATABASE_UUID.into()),
        )
        .await?;
    if existing.is_some() {
        return Ok(());
    }
    let path = state.config.data_dir.join("examples.db");
    let db_path = path.clone();
    tokio::task::spawn_blocking(move || write_data(&db_path)).await??;
    let absolute = std::fs::canonicalize(&path)?;
    let files = bundle(&absolute);
    assets::import(
        &state.store,
        &state.sealer,
        state.engines.guard(),
        // The server's own examples: Superset's `ignore_permissions=True`.
        &assets::FullAccess,
        Kind::Assets,
        &files,
        &ImportOptions {
            overwrite: false,
            passwords: Default::default(),
            user: None,
        },
    )
    .await?;
    tracing::info!(
        message = "Created the example database, datasets, charts and dashboard.",
        path = %absolute.display()
    );
    Ok(())
}

const REGIONS: &[&str] = &["North", "South", "East", "West"];
const PRODUCTS: &[(&str, &str, f64)] = &[
    ("Widget", "Hardware", 12.5),
    ("Gadget", "Electronics", 49.0),
    ("Gizmo", "Electronics", 129.95),
    ("Doohickey", "Accessories", 4.75),
    ("Sprocket", "Hardware", 7.25),
];
const CHANNELS: &[&str] = &["online", "retail", "partner"];

/// Writes `examples.db`: `products` and 3,000 `sales` rows over 2024–2025.
fn write_data(path: &Path) -> anyhow::Result<()> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    let mut conn = rusqlite::Connection::open(path)?;
    let tx = conn.transaction()?;
    tx.execute_batch(
        "CREATE TABLE products (product TEXT PRIMARY KEY, category TEXT NOT NULL, unit_price REAL NOT NULL);
         CREATE TABLE sales (id INTEGER PRIMARY KEY, order_date DATETIME NOT NULL, region TEXT, \
         product TEXT NOT NULL, channel TEXT NOT NULL, quantity INTEGER NOT NULL, revenue REAL NOT NULL);",
    )?;
    for (product, category, price) in PRODUCTS {
        tx.execute(
            "INSERT INTO products VALUES (?1, ?2, ?3)",
            rusqlite::params![product, category, price],
        )?;
    }
    let start = chrono::NaiveDate::from_ymd_opt(2024, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .ok_or_else(|| anyhow::anyhow!("bad start date"))?;
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move |n: u64| {
        // Knuth's MMIX LCG: deterministic and good enough for sample data.
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    {
        let mut stmt = tx.prepare("INSERT INTO sales VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
        for id in 1..=3000_i64 {
            let minutes = next(731 * 24 * 60) as i64;
            let when = start + chrono::Duration::minutes(minutes);
            let region = (next(20) != 0).then(|| REGIONS[next(REGIONS.len() as u64) as usize]);
            let (product, _, price) = PRODUCTS[next(PRODUCTS.len() as u64) as usize];
            let channel = CHANNELS[next(CHANNELS.len() as u64) as usize];
            let quantity = 1 + next(12) as i64;
            let revenue = (quantity as f64 * price * (0.85 + next(30) as f64 / 100.0) * 100.0)
                .round()
                / 100.0;
            stmt.execute(rusqlite::params![
                id,
                when.format("%Y-%m-%d %H:%M:%S").to_string(),
                region,
                product,
                channel,
                quantity,
                revenue
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// A dataset column of a bundle.
pub(crate) fn column(name: &str, ty: &str, is_dttm: bool, expression: Option<&str>) -> Json {
    json!({"column_name": name, "type": ty, "is_dttm": is_dttm, "is_active": true,
           "groupby": true, "filterable": true, "expression": expression, "verbose_name": null})
}

/// A saved metric of a bundle.
pub(crate) fn metric(name: &str, expression: &str, verbose: Option<&str>) -> Json {
    json!({"metric_name": name, "expression": expression, "verbose_name": verbose})
}

/// A chart whose saved query context asks for `query`.
pub(crate) fn chart(
    name: &str,
    uuid: &str,
    dataset_uuid: &str,
    viz: &str,
    params: Json,
    query: Json,
) -> Json {
    let context = json!({
        "datasource": {"id": 0, "type": "table"},
        "force": false,
        "queries": [query],
        "result_format": "json",
        "result_type": "full",
        "form_data": params,
    });
    json!({"slice_name": name, "viz_type": viz, "params": params,
           "query_context": context.to_string(), "uuid": uuid,
           "dataset_uuid": dataset_uuid, "version": "1.0.0", "cache_timeout": null})
}

/// The catalog records, as a Superset bundle.
fn bundle(db_file: &Path) -> Files {
    let mut files = Files::new();
    files.insert(
        "metadata.yaml".into(),
        json!({"version": "1.0.0", "type": "assets", "timestamp": "2026-01-01T00:00:00+00:00"}),
    );
    files.insert(
        "databases/examples.yaml".into(),
        json!({"database_name": "examples",
               "sqlalchemy_uri": format!("sqlite:///{}", db_file.display()),
               "expose_in_sqllab": true, "allow_run_async": true, "allow_dml": false,
               "allow_ctas": false, "allow_cvas": false, "allow_file_upload": false,
               "cache_timeout": null, "extra": {}, "uuid": DATABASE_UUID, "version": "1.0.0"}),
    );
    files.insert(
        "datasets/examples/sales.yaml".into(),
        json!({"table_name": "sales", "schema": "main", "main_dttm_col": "order_date",
        "uuid": SALES_UUID, "database_uuid": DATABASE_UUID, "version": "1.0.0",
        "sql": null, "cache_timeout": null,
        "columns": [
            column("id", "INTEGER", false, None),
            column("order_date", "DATETIME", true, None),
            column("region", "TEXT", false, None),
            column("product", "TEXT", false, None),
            column("channel", "TEXT", false, None),
            column("quantity", "INTEGER", false, None),
            column("revenue", "REAL", false, None),
            column("unit_revenue", "REAL", false, Some("revenue / quantity")),
        ],
        "metrics": [
            metric("count", "COUNT(*)", Some("COUNT(*)")),
            metric("sum_revenue", "SUM(revenue)", Some("Revenue")),
            metric("sum_quantity", "SUM(quantity)", Some("Units")),
        ]}),
    );
    files.insert(
        "datasets/examples/monthly_sales.yaml".into(),
        json!({"table_name": "monthly_sales", "schema": "main", "main_dttm_col": "month",
        "uuid": MONTHLY_UUID, "database_uuid": DATABASE_UUID, "version": "1.0.0",
        "sql": "SELECT DATETIME(s.order_date, 'start of month') AS month, p.category, \
                s.region, COUNT(*) AS orders, SUM(s.revenue) AS revenue \
                FROM sales s JOIN products p ON p.product = s.product \
                GROUP BY 1, 2, 3",
        "cache_timeout": null,
        "columns": [
            column("month", "DATETIME", true, None),
            column("category", "TEXT", false, None),
            column("region", "TEXT", false, None),
            column("orders", "INTEGER", false, None),
            column("revenue", "REAL", false, None),
        ],
        "metrics": [
            metric("count", "COUNT(*)", Some("COUNT(*)")),
            metric("total_revenue", "SUM(revenue)", Some("Revenue")),
            metric("total_orders", "SUM(orders)", Some("Orders")),
        ]}),
    );
    let charts = [
        (
            "charts/Revenue_by_region.yaml",
            chart(
                "Revenue by region",
                "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0101",
                SALES_UUID,
                "table",
                json!({"viz_type": "table", "groupby": ["region"], "metrics": ["sum_revenue", "count"],
                       "query_mode": "aggregate", "row_limit": 1000}),
                json!({"columns": ["region"], "metrics": ["sum_revenue", "count"],
                       "orderby": [["sum_revenue", false]], "row_limit": 1000}),
            ),
        ),
        (
            "charts/Total_revenue.yaml",
            chart(
                "Total revenue",
                "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0102",
                SALES_UUID,
                "big_number_total",
                json!({"viz_type": "big_number_total", "metric": "sum_revenue"}),
                json!({"metrics": ["sum_revenue"], "row_limit": 1}),
            ),
        ),
        (
            "charts/Monthly_revenue.yaml",
            chart(
                "Monthly revenue",
                "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0103",
                SALES_UUID,
                "echarts_timeseries_line",
                json!({"viz_type": "echarts_timeseries_line", "x_axis": "order_date",
                       "time_grain_sqla": "P1M", "metrics": ["sum_revenue"], "groupby": []}),
                json!({"columns": [{"columnType": "BASE_AXIS", "sqlExpression": "order_date",
                                    "label": "order_date", "expressionType": "SQL", "timeGrain": "P1M"}],
                       "metrics": ["sum_revenue"], "orderby": [["order_date", true]],
                       "filters": [{"col": "order_date", "op": "TEMPORAL_RANGE", "val": "No filter"}],
                       "row_limit": 10000}),
            ),
        ),
        (
            "charts/Revenue_by_category.yaml",
            chart(
                "Revenue by category",
                "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0104",
                MONTHLY_UUID,
                "pie",
                json!({"viz_type": "pie", "groupby": ["category"], "metric": "total_revenue"}),
                json!({"columns": ["category"], "metrics": ["total_revenue"],
                       "orderby": [["total_revenue", false]], "row_limit": 100}),
            ),
        ),
        (
            // Saved with `params` only, as charts made by older Superset versions are: the
            // viz plugin's build-query makes its query context.
            "charts/Quarterly_units_by_channel.yaml",
            json!({"slice_name": "Quarterly units by channel", "viz_type": "echarts_timeseries_bar",
                   "params": {"viz_type": "echarts_timeseries_bar", "x_axis": "order_date",
                              "time_grain_sqla": "P3M", "metrics": ["sum_quantity"],
                              "groupby": ["channel"], "stack": "Stack", "row_limit": 10000,
                              "adhoc_filters": [{"clause": "WHERE", "expressionType": "SIMPLE",
                                                 "subject": "order_date",
                                                 "operator": "TEMPORAL_RANGE",
                                                 "comparator": "No filter"}]},
                   "query_context": null, "uuid": "6a1c3a4e-0d1b-4c41-9a55-1f0e1a7c0105",
                   "dataset_uuid": SALES_UUID, "version": "1.0.0", "cache_timeout": null}),
        ),
    ];
    let mut position = serde_json::Map::new();
    position.insert("DASHBOARD_VERSION_KEY".into(), json!("v2"));
    position.insert(
        "ROOT_ID".into(),
        json!({"id": "ROOT_ID", "type": "ROOT", "children": ["GRID_ID"]}),
    );
    position.insert(
        "HEADER_ID".into(),
        json!({"id": "HEADER_ID", "type": "HEADER", "meta": {"text": "Sales overview"}}),
    );
    position.insert(
        "GRID_ID".into(),
        json!({"id": "GRID_ID", "type": "GRID", "parents": ["ROOT_ID"],
               "children": ["ROW-1", "ROW-2", "ROW-3"]}),
    );
    let rows: [(&str, &[usize]); 3] = [("ROW-1", &[0, 1]), ("ROW-2", &[2, 3]), ("ROW-3", &[4])];
    for (row, members) in rows {
        let mut children = Vec::new();
        for &i in members {
            let width = 12 / members.len();
            let (_, c) = &charts[i];
            let id = format!("CHART-example-{i}");
            position.insert(
                id.clone(),
                json!({"id": id, "type": "CHART", "children": [],
                       "parents": ["ROOT_ID", "GRID_ID", row],
                       "meta": {"uuid": c["uuid"], "sliceName": c["slice_name"], "width": width, "height": 50}}),
            );
            children.push(json!(id));
        }
        position.insert(
            row.into(),
            json!({"id": row, "type": "ROW", "parents": ["ROOT_ID", "GRID_ID"], "children": children,
                   "meta": {"background": "BACKGROUND_TRANSPARENT"}}),
        );
    }
    for (path, doc) in charts {
        files.insert(path.into(), doc);
    }
    files.insert(
        "dashboards/Sales_overview.yaml".into(),
        json!({"dashboard_title": "Sales overview", "slug": "sales-overview", "published": true,
               "uuid": DASHBOARD_UUID, "version": "1.0.0", "position": position,
               "metadata": {"color_scheme": "supersetColors", "refresh_frequency": 0,
                            "native_filter_configuration": []}}),
    );
    files
}
