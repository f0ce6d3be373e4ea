//! The catalog objects of the SSB examples, as a Superset bundle for `assets::import`: the
//! database, 13 virtual datasets (the standard queries Q1.1–Q4.3 over `dates` instead of
//! `date`), 6 `pg_sleep` datasets, their charts with saved query contexts and 10 dashboards.
//!
//! Every uuid is fixed, so a second run overwrites the same records instead of adding new ones.

use serde_json::{Value as Json, json};

use crate::assets::Files;
use crate::examples::{chart, column, metric};

/// A standard SSB query as a virtual dataset.
pub struct Query {
    /// `1.1` … `4.3`.
    pub id: &'static str,
    /// What it answers, for chart names.
    pub title: &'static str,
    /// The query, with the `dates` table.
    pub sql: &'static str,
    /// Result columns and their types.
    pub columns: &'static [(&'static str, &'static str)],
    /// The measure (`revenue` or `profit`).
    pub measure: &'static str,
    /// A text column to group a pie chart by, if any.
    pub dimension: Option<&'static str>,
}

impl Query {
    /// The dataset's name: `ssb_q1_1`.
    pub fn table_name(&self) -> String {
        format!("ssb_q{}", self.id.replace('.', "_"))
    }

    fn has_year(&self) -> bool {
        self.columns.iter().any(|(c, _)| *c == "d_year")
    }
}

const REVENUE: &[(&str, &str)] = &[("revenue", "BIGINT")];
const BRAND: &[(&str, &str)] = &[
    ("revenue", "BIGINT"),
    ("d_year", "INTEGER"),
    ("p_brand1", "VARCHAR(9)"),
];
const NATIONS: &[(&str, &str)] = &[
    ("c_nation", "VARCHAR(15)"),
    ("s_nation", "VARCHAR(15)"),
    ("d_year", "INTEGER"),
    ("revenue", "BIGINT"),
];
const CITIES: &[(&str, &str)] = &[
    ("c_city", "VARCHAR(10)"),
    ("s_city", "VARCHAR(10)"),
    ("d_year", "INTEGER"),
    ("revenue", "BIGINT"),
];

/// The 13 queries of the Star Schema Benchmark.
pub const QUERIES: [Query; 13] = [
    Query {
        id: "1.1",
        title: "revenue, 1993 discounts",
        sql: "SELECT SUM(lo_extendedprice * lo_discount) AS revenue\n\
              FROM lineorder, dates\n\
              WHERE lo_orderdate = d_datekey\n  AND d_year = 1993\n  \
              AND lo_discount BETWEEN 1 AND 3\n  AND lo_quantity < 25",
        columns: REVENUE,
        measure: "revenue",
        dimension: None,
    },
    Query {
        id: "1.2",
        title: "revenue, January 1994 discounts",
        sql: "SELECT SUM(lo_extendedprice * lo_discount) AS revenue\n\
              FROM lineorder, dates\n\
              WHERE lo_orderdate = d_datekey\n  AND d_yearmonthnum = 199401\n  \
              AND lo_discount BETWEEN 4 AND 6\n  AND lo_quantity BETWEEN 26 AND 35",
        columns: REVENUE,
        measure: "revenue",
        dimension: None,
    },
    Query {
        id: "1.3",
        title: "revenue, week 6 of 1994 discounts",
        sql: "SELECT SUM(lo_extendedprice * lo_discount) AS revenue\n\
              FROM lineorder, dates\n\
              WHERE lo_orderdate = d_datekey\n  AND d_weeknuminyear = 6\n  AND d_year = 1994\n  \
              AND lo_discount BETWEEN 5 AND 7\n  AND lo_quantity BETWEEN 26 AND 35",
        columns: REVENUE,
        measure: "revenue",
        dimension: None,
    },
    Query {
        id: "2.1",
        title: "revenue by brand, MFGR#12 in America",
        sql: "SELECT SUM(lo_revenue) AS revenue, d_year, p_brand1\n\
              FROM lineorder, dates, part, supplier\n\
              WHERE lo_orderdate = d_datekey\n  AND lo_partkey = p_partkey\n  \
              AND lo_suppkey = s_suppkey\n  AND p_category = 'MFGR#12'\n  \
              AND s_region = 'AMERICA'\n\
              GROUP BY d_year, p_brand1\nORDER BY d_year, p_brand1",
        columns: BRAND,
        measure: "revenue",
        dimension: Some("p_brand1"),
    },
    Query {
        id: "2.2",
        title: "revenue by brand, MFGR#2221-2228 in Asia",
        sql: "SELECT SUM(lo_revenue) AS revenue, d_year, p_brand1\n\
              FROM lineorder, dates, part, supplier\n\
              WHERE lo_orderdate = d_datekey\n  AND lo_partkey = p_partkey\n  \
              AND lo_suppkey = s_suppkey\n  AND p_brand1 BETWEEN 'MFGR#2221' AND 'MFGR#2228'\n  \
              AND s_region = 'ASIA'\n\
              GROUP BY d_year, p_brand1\nORDER BY d_year, p_brand1",
        columns: BRAND,
        measure: "revenue",
        dimension: Some("p_brand1"),
    },
    Query {
        id: "2.3",
        title: "revenue of MFGR#2239 in Europe",
        sql: "SELECT SUM(lo_revenue) AS revenue, d_year, p_brand1\n\
              FROM lineorder, dates, part, supplier\n\
              WHERE lo_orderdate = d_datekey\n  AND lo_partkey = p_partkey\n  \
              AND lo_suppkey = s_suppkey\n  AND p_brand1 = 'MFGR#2239'\n  \
              AND s_region = 'EUROPE'\n\
              GROUP BY d_year, p_brand1\nORDER BY d_year, p_brand1",
        columns: BRAND,
        measure: "revenue",
        dimension: Some("p_brand1"),
    },
    Query {
        id: "3.1",
        title: "Asian revenue by nation",
        sql: "SELECT c_nation, s_nation, d_year, SUM(lo_revenue) AS revenue\n\
              FROM customer, lineorder, supplier, dates\n\
              WHERE lo_custkey = c_custkey\n  AND lo_suppkey = s_suppkey\n  \
              AND lo_orderdate = d_datekey\n  AND c_region = 'ASIA'\n  AND s_region = 'ASIA'\n  \
              AND d_year >= 1992 AND d_year <= 1997\n\
              GROUP BY c_nation, s_nation, d_year\nORDER BY d_year ASC, revenue DESC",
        columns: NATIONS,
        measure: "revenue",
        dimension: Some("c_nation"),
    },
    Query {
        id: "3.2",
        title: "US revenue by city",
        sql: "SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue\n\
              FROM customer, lineorder, supplier, dates\n\
              WHERE lo_custkey = c_custkey\n  AND lo_suppkey = s_suppkey\n  \
              AND lo_orderdate = d_datekey\n  AND c_nation = 'UNITED STATES'\n  \
              AND s_nation = 'UNITED STATES'\n  AND d_year >= 1992 AND d_year <= 1997\n\
              GROUP BY c_city, s_city, d_year\nORDER BY d_year ASC, revenue DESC",
        columns: CITIES,
        measure: "revenue",
        dimension: Some("c_city"),
    },
    Query {
        id: "3.3",
        title: "revenue between two UK cities",
        sql: "SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue\n\
              FROM customer, lineorder, supplier, dates\n\
              WHERE lo_custkey = c_custkey\n  AND lo_suppkey = s_suppkey\n  \
              AND lo_orderdate = d_datekey\n  \
              AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')\n  \
              AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')\n  \
              AND d_year >= 1992 AND d_year <= 1997\n\
              GROUP BY c_city, s_city, d_year\nORDER BY d_year ASC, revenue DESC",
        columns: CITIES,
        measure: "revenue",
        dimension: Some("c_city"),
    },
    Query {
        id: "3.4",
        title: "revenue between two UK cities, December 1997",
        sql: "SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue\n\
              FROM customer, lineorder, supplier, dates\n\
              WHERE lo_custkey = c_custkey\n  AND lo_suppkey = s_suppkey\n  \
              AND lo_orderdate = d_datekey\n  \
              AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')\n  \
              AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')\n  \
              AND d_yearmonth = 'Dec1997'\n\
              GROUP BY c_city, s_city, d_year\nORDER BY d_year ASC, revenue DESC",
        columns: CITIES,
        measure: "revenue",
        dimension: Some("c_city"),
    },
    Query {
        id: "4.1",
        title: "American profit by nation",
        sql: "SELECT d_year, c_nation, SUM(lo_revenue - lo_supplycost) AS profit\n\
              FROM dates, customer, supplier, part, lineorder\n\
              WHERE lo_custkey = c_custkey\n  AND lo_suppkey = s_suppkey\n  \
              AND lo_partkey = p_partkey\n  AND lo_orderdate = d_datekey\n  \
              AND c_region = 'AMERICA'\n  AND s_region = 'AMERICA'\n  \
              AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')\n\
              GROUP BY d_year, c_nation\nORDER BY d_year, c_nation",
        columns: &[
            ("d_year", "INTEGER"),
            ("c_nation", "VARCHAR(15)"),
            ("profit", "BIGINT"),
        ],
        measure: "profit",
        dimension: Some("c_nation"),
    },
    Query {
        id: "4.2",
        title: "American profit by supplier nation and category, 1997-1998",
        sql: "SELECT d_year, s_nation, p_category, SUM(lo_revenue - lo_supplycost) AS profit\n\
              FROM dates, customer, supplier, part, lineorder\n\
              WHERE lo_custkey = c_custkey\n  AND lo_suppkey = s_suppkey\n  \
              AND lo_partkey = p_partkey\n  AND lo_orderdate = d_datekey\n  \
              AND c_region = 'AMERICA'\n  AND s_region = 'AMERICA'\n  \
              AND (d_year = 1997 OR d_year = 1998)\n  \
              AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')\n\
              GROUP BY d_year, s_nation, p_category\nORDER BY d_year, s_nation, p_category",
        columns: &[
            ("d_year", "INTEGER"),
            ("s_nation", "VARCHAR(15)"),
            ("p_category", "VARCHAR(7)"),
            ("profit", "BIGINT"),
        ],
        measure: "profit",
        dimension: Some("p_category"),
    },
    Query {
        id: "4.3",
        title: "US profit by city and brand, MFGR#14, 1997-1998",
        sql: "SELECT d_year, s_city, p_brand1, SUM(lo_revenue - lo_supplycost) AS profit\n\
              FROM dates, customer, supplier, part, lineorder\n\
              WHERE lo_custkey = c_custkey\n  AND lo_suppkey = s_suppkey\n  \
              AND lo_partkey = p_partkey\n  AND lo_orderdate = d_datekey\n  \
              AND c_region = 'AMERICA'\n  AND s_nation = 'UNITED STATES'\n  \
              AND (d_year = 1997 OR d_year = 1998)\n  AND p_category = 'MFGR#14'\n\
              GROUP BY d_year, s_city, p_brand1\nORDER BY d_year, s_city, p_brand1",
        columns: &[
            ("d_year", "INTEGER"),
            ("s_city", "VARCHAR(10)"),
            ("p_brand1", "VARCHAR(9)"),
            ("profit", "BIGINT"),
        ],
        measure: "profit",
        dimension: Some("s_city"),
    },
];

/// The sleep datasets: (name, chart name, seconds for `pg_sleep`).
pub const SLEEPS: [(&str, &str, &str); 6] = [
    ("sleep_10ms", "Sleep 10 ms", "0.01"),
    ("sleep_50ms", "Sleep 50 ms", "0.05"),
    ("sleep_100ms", "Sleep 100 ms", "0.1"),
    ("sleep_500ms", "Sleep 500 ms", "0.5"),
    ("sleep_1s", "Sleep 1000 ms", "1"),
    ("sleep_5s", "Sleep 5000 ms", "5"),
];

/// Charts per dashboard: `ssb-1` has 3, … `ssb-10` has 13.
pub const DASHBOARD_SIZES: [usize; 10] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13];

/// The calculated year column (a `DATE`) the bar charts use as their time axis.
const YEAR_COLUMN: &str = "order_year";

/// Kinds of record, the middle of their fixed uuids.
const DATABASE: u32 = 1;
const DATASET: u32 = 2;
const SLEEP_DATASET: u32 = 3;
const CHART: u32 = 4;
const SLEEP_CHART: u32 = 5;
const DASHBOARD: u32 = 6;

/// The fixed uuid of record `n` of a kind.
fn uuid(kind: u32, n: usize) -> String {
    format!("55b0e7a0-0c1d-4e5f-8a9b-{kind:04x}{n:08x}")
}

/// The database's fixed uuid.
pub fn database_uuid() -> String {
    uuid(DATABASE, 0)
}

/// The fixed uuids of the dashboards, `ssb-1` first.
pub fn dashboard_uuids() -> Vec<String> {
    (1..=DASHBOARD_SIZES.len())
        .map(|n| uuid(DASHBOARD, n))
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Viz {
    Table,
    BigNumber,
    Pie,
    Bar,
}

impl Viz {
    fn label(self) -> &'static str {
        match self {
            Viz::Table => "table",
            Viz::BigNumber => "big number",
            Viz::Pie => "pie",
            Viz::Bar => "bars by year",
        }
    }
}

/// The chart types that fit a query's columns.
fn fitting(q: &Query) -> Vec<Viz> {
    let mut v = vec![Viz::Table];
    if q.has_year() {
        v.push(Viz::Bar);
    }
    if q.dimension.is_some() {
        v.push(Viz::Pie);
    }
    v.push(Viz::BigNumber);
    v
}

fn dataset(name: &str, uuid: &str, database_uuid: &str, sql: &str, q: Option<&Query>) -> Json {
    let mut columns = Vec::new();
    let mut metrics = vec![metric("count", "COUNT(*)", Some("COUNT(*)"))];
    let mut main_dttm = Json::Null;
    match q {
        Some(q) => {
            for (c, ty) in q.columns {
                columns.push(column(c, ty, false, None));
            }
            if q.has_year() {
                columns.push(column(
                    YEAR_COLUMN,
                    "DATE",
                    true,
                    Some("MAKE_DATE(d_year, 1, 1)"),
                ));
                main_dttm = json!(YEAR_COLUMN);
            }
            metrics.push(metric(
                &format!("sum_{}", q.measure),
                &format!("SUM({})", q.measure),
                Some(if q.measure == "profit" {
                    "Profit"
                } else {
                    "Revenue"
                }),
            ));
        }
        None => columns.push(column("one", "INTEGER", false, None)),
    }
    json!({"table_name": name, "schema": null, "main_dttm_col": main_dttm,
           "uuid": uuid, "database_uuid": database_uuid, "version": "1.0.0",
           "sql": sql, "cache_timeout": null, "description": null,
           "columns": columns, "metrics": metrics})
}

/// A chart of `viz` over query `q`'s dataset, with Superset's form data and the query
/// context its frontend would save.
fn ssb_chart(q: &Query, viz: Viz, name: &str, uuid: &str) -> Json {
    let dataset_uuid = dataset_uuid(q);
    let sum = format!("sum_{}", q.measure);
    let no_filter = json!({"clause": "WHERE", "subject": YEAR_COLUMN, "operator": "TEMPORAL_RANGE",
                           "comparator": "No filter", "expressionType": "SIMPLE"});
    let columns: Vec<&str> = q.columns.iter().map(|(c, _)| *c).collect();
    match viz {
        Viz::Table => chart(
            name,
            uuid,
            &dataset_uuid,
            "table",
            json!({"viz_type": "table", "query_mode": "raw", "all_columns": columns,
                   "order_by_cols": [], "row_limit": 1000, "server_page_length": 10,
                   "adhoc_filters": [], "time_range": "No filter", "table_timestamp_format": "smart_date"}),
            json!({"columns": columns, "orderby": [], "row_limit": 1000, "filters": [],
                   "extras": {"having": "", "where": ""}}),
        ),
        Viz::BigNumber => chart(
            name,
            uuid,
            &dataset_uuid,
            "big_number_total",
            json!({"viz_type": "big_number_total", "metric": sum, "adhoc_filters": [],
                   "header_font_size": 0.4, "subheader_font_size": 0.15,
                   "y_axis_format": "SMART_NUMBER", "time_format": "smart_date"}),
            json!({"metrics": [sum], "row_limit": 1, "filters": []}),
        ),
        Viz::Pie => {
            let dim = q.dimension.unwrap_or(columns[0]);
            chart(
                name,
                uuid,
                &dataset_uuid,
                "pie",
                json!({"viz_type": "pie", "groupby": [dim], "metric": sum, "adhoc_filters": [],
                       "row_limit": 100, "sort_by_metric": true, "show_legend": true,
                       "label_type": "key", "number_format": "SMART_NUMBER"}),
                json!({"columns": [dim], "metrics": [sum], "orderby": [[sum, false]],
                       "row_limit": 100, "filters": []}),
            )
        }
        Viz::Bar => chart(
            name,
            uuid,
            &dataset_uuid,
            "echarts_timeseries_bar",
            json!({"viz_type": "echarts_timeseries_bar", "x_axis": YEAR_COLUMN,
                   "time_grain_sqla": "P1Y", "metrics": [sum], "groupby": [],
                   "adhoc_filters": [no_filter], "row_limit": 10000, "orientation": "vertical",
                   "x_axis_sort_asc": true}),
            json!({"columns": [{"columnType": "BASE_AXIS", "sqlExpression": YEAR_COLUMN,
                                "label": YEAR_COLUMN, "expressionType": "SQL", "timeGrain": "P1Y"}],
                   "metrics": [sum], "orderby": [],
                   "filters": [{"col": YEAR_COLUMN, "op": "TEMPORAL_RANGE", "val": "No filter"}],
                   "row_limit": 10000}),
        ),
    }
}

fn dataset_uuid(q: &Query) -> String {
    let i = QUERIES.iter().position(|x| x.id == q.id).unwrap_or(0);
    uuid(DATASET, i + 1)
}

/// A dashboard layout: rows of up to three charts, each (uuid, name).
fn position(title: &str, charts: &[(String, String)]) -> Json {
    let mut p = serde_json::Map::new();
    p.insert("DASHBOARD_VERSION_KEY".into(), json!("v2"));
    p.insert(
        "ROOT_ID".into(),
        json!({"id": "ROOT_ID", "type": "ROOT", "children": ["GRID_ID"]}),
    );
    p.insert(
        "HEADER_ID".into(),
        json!({"id": "HEADER_ID", "type": "HEADER", "meta": {"text": title}}),
    );
    let mut rows = Vec::new();
    for (r, members) in charts.chunks(3).enumerate() {
        let row = format!("ROW-ssb-{}", r + 1);
        let mut children = Vec::new();
        for (i, (uuid, name)) in members.iter().enumerate() {
            let id = format!("CHART-ssb-{}-{}", r + 1, i + 1);
            p.insert(
                id.clone(),
                json!({"id": id, "type": "CHART", "children": [],
                       "parents": ["ROOT_ID", "GRID_ID", row],
                       "meta": {"uuid": uuid, "sliceName": name, "width": 4, "height": 50}}),
            );
            children.push(json!(id));
        }
        p.insert(
            row.clone(),
            json!({"id": row, "type": "ROW", "parents": ["ROOT_ID", "GRID_ID"],
                   "children": children, "meta": {"background": "BACKGROUND_TRANSPARENT"}}),
        );
        rows.push(json!(row));
    }
    p.insert(
        "GRID_ID".into(),
        json!({"id": "GRID_ID", "type": "GRID", "parents": ["ROOT_ID"], "children": rows}),
    );
    Json::Object(p)
}

/// What the bundle holds, for the summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Virtual datasets.
    pub datasets: usize,
    /// Charts.
    pub charts: usize,
    /// Dashboards.
    pub dashboards: usize,
}

/// The whole bundle: the database `database_name` at `uri` (with its password, which the
/// import seals), datasets, charts and dashboards.
pub fn bundle(database_name: &str, uri: &str) -> (Files, Counts) {
    let mut files = Files::new();
    let mut counts = Counts::default();
    let db_uuid = database_uuid();
    files.insert(
        "metadata.yaml".into(),
        json!({"version": "1.0.0", "type": "assets", "timestamp": "2026-01-01T00:00:00+00:00"}),
    );
    files.insert(
        "databases/ssb.yaml".into(),
        json!({"database_name": database_name, "sqlalchemy_uri": uri,
               "expose_in_sqllab": true, "allow_run_async": true, "allow_dml": false,
               "allow_ctas": false, "allow_cvas": false, "allow_file_upload": false,
               "cache_timeout": null, "extra": {}, "uuid": db_uuid, "version": "1.0.0"}),
    );
    for q in &QUERIES {
        let name = q.table_name();
        files.insert(
            format!("datasets/ssb/{name}.yaml"),
            dataset(&name, &dataset_uuid(q), &db_uuid, q.sql, Some(q)),
        );
        counts.datasets += 1;
    }
    for (i, (name, chart_name, secs)) in SLEEPS.iter().enumerate() {
        let ds_uuid = uuid(SLEEP_DATASET, i + 1);
        let sql = format!("SELECT 1 AS one FROM pg_sleep({secs})");
        files.insert(
            format!("datasets/ssb/{name}.yaml"),
            dataset(name, &ds_uuid, &db_uuid, &sql, None),
        );
        counts.datasets += 1;
        // A raw query: `SELECT one FROM (<the dataset's SQL>) AS virtual_table LIMIT 10`, one
        // pg_sleep per run.
        files.insert(
            format!("charts/{}.yaml", chart_name.replace(' ', "_")),
            chart(
                chart_name,
                &uuid(SLEEP_CHART, i + 1),
                &ds_uuid,
                "table",
                json!({"viz_type": "table", "query_mode": "raw", "all_columns": ["one"],
                       "order_by_cols": [], "row_limit": 10, "adhoc_filters": []}),
                json!({"columns": ["one"], "orderby": [], "row_limit": 10, "filters": [],
                       "extras": {"having": "", "where": ""}}),
            ),
        );
        counts.charts += 1;
    }
    let mut chart_no = 0;
    for (d, size) in DASHBOARD_SIZES.iter().enumerate() {
        let n = d + 1;
        let mut members = Vec::new();
        for j in 0..*size {
            let q = &QUERIES[(d + j) % QUERIES.len()];
            let options = fitting(q);
            let viz = options[(d + j / QUERIES.len() + j) % options.len()];
            chart_no += 1;
            let chart_uuid = uuid(CHART, chart_no);
            let name = format!("SSB {n}.{} Q{}: {} ({})", j + 1, q.id, q.title, viz.label());
            files.insert(
                format!("charts/SSB_{n}_{}.yaml", j + 1),
                ssb_chart(q, viz, &name, &chart_uuid),
            );
            counts.charts += 1;
            members.push((chart_uuid, name));
        }
        let title = format!("SSB dashboard {n} ({size} charts)");
        files.insert(
            format!("dashboards/ssb-{n}.yaml"),
            json!({"dashboard_title": title, "slug": format!("ssb-{n}"), "published": true,
                   "uuid": uuid(DASHBOARD, n), "version": "1.0.0",
                   "position": position(&title, &members),
                   "metadata": {"color_scheme": "supersetColors", "refresh_frequency": 0,
                                "native_filter_configuration": [], "expanded_slices": {},
                                "timed_refresh_immune_slices": [], "label_colors": {},
                                "shared_label_colors": [], "color_scheme_domain": [],
                                "cross_filters_enabled": false}}),
        );
        counts.dashboards += 1;
    }
    (files, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_has_every_record_once() {
        let (files, counts) = bundle("ssb", "postgresql://u:pw@h/db");
        assert_eq!(counts.datasets, 19);
        assert_eq!(counts.charts, 6 + DASHBOARD_SIZES.iter().sum::<usize>());
        assert_eq!(counts.dashboards, 10);
        // metadata + database + datasets + charts + dashboards
        assert_eq!(files.len(), 2 + 19 + counts.charts + 10);
        let mut uuids: Vec<&str> = files.values().filter_map(|f| f["uuid"].as_str()).collect();
        let all = uuids.len();
        uuids.sort_unstable();
        uuids.dedup();
        assert_eq!(uuids.len(), all);
        for u in uuids {
            uuid::Uuid::parse_str(u).expect("valid uuid");
        }
        let vizzes: std::collections::BTreeSet<&str> = files
            .values()
            .filter_map(|f| f["viz_type"].as_str())
            .collect();
        assert_eq!(vizzes.len(), 4, "{vizzes:?}");
    }
}
