//! What a run leaves in `--out`: requests.csv, summary.csv, summary.md, resources.csv and (s3)
//! plot.png.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Once;

use anyhow::{Context, anyhow};
use serde::Deserialize;

use crate::procfs::{self, Sample};
use crate::scenarios::probe;
use crate::stats::{self, Record, Summary};

/// What the report says about the run besides its records.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub scenario: &'static str,
    pub url: String,
    pub users: u32,
    pub duration: std::time::Duration,
    pub ramp_up: std::time::Duration,
    pub probe_users: u32,
    pub seed: u64,
    pub started: String,
    pub server_pid: Option<u32>,
    pub interrupted: bool,
    /// Scenario-specific settings worth a line (`force: false`, `database: ssb`).
    pub notes: Vec<String>,
}

pub fn write_requests(path: &Path, scenario: &str, records: &[Record]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("{}", path.display()))?;
    w.write_record([
        "scenario",
        "phase",
        "label",
        "user",
        "start_ms",
        "latency_ms",
        "status",
        "error",
    ])?;
    for r in records {
        w.write_record([
            scenario,
            &r.phase,
            r.label,
            &r.user.to_string(),
            &format!("{:.3}", r.start_ms),
            &format!("{:.3}", r.latency_ms),
            &r.status.to_string(),
            r.error.as_deref().unwrap_or(""),
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// One row of summary.csv as read back (by `plot`).
#[derive(Debug, Clone, Deserialize)]
pub struct SummaryRow {
    pub scenario: String,
    pub phase: String,
    pub label: String,
    pub users: u32,
    pub window_s: Option<f64>,
    pub count: usize,
    pub req_s: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub errors: usize,
    pub error_pct: f64,
    pub error_codes: String,
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|v| format!("{v:.decimals$}")).unwrap_or_default()
}

pub fn write_summary(path: &Path, info: &RunInfo, summaries: &[Summary]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("{}", path.display()))?;
    w.write_record([
        "scenario",
        "phase",
        "label",
        "users",
        "window_s",
        "count",
        "req_s",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "max_ms",
        "errors",
        "error_pct",
        "error_codes",
    ])?;
    for s in summaries {
        w.write_record([
            info.scenario,
            &s.phase,
            &s.label,
            &info.users.to_string(),
            &opt(s.window_secs, 3),
            &s.count.to_string(),
            &opt(s.req_s, 3),
            &opt(s.p50, 3),
            &opt(s.p95, 3),
            &opt(s.p99, 3),
            &opt(s.max, 3),
            &s.errors.to_string(),
            &format!("{:.3}", s.error_pct()),
            &s.codes_text(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

pub fn read_summary(path: &Path) -> anyhow::Result<Vec<SummaryRow>> {
    let mut r = csv::Reader::from_path(path).with_context(|| format!("{}", path.display()))?;
    r.deserialize()
        .map(|row| row.with_context(|| format!("reading {}", path.display())))
        .collect()
}

pub fn write_resources(path: &Path, samples: &[Sample]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path).with_context(|| format!("{}", path.display()))?;
    w.write_record(["t", "rss_mb", "cpu_pct", "phase"])?;
    for s in samples {
        w.write_record([
            &format!("{:.3}", s.t_secs),
            &format!("{:.1}", s.rss_mb),
            &format!("{:.1}", s.cpu_pct),
            &*s.phase,
        ])?;
    }
    w.flush()?;
    Ok(())
}

/// One delay of an s3 sweep, from its chart_data summary row.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    pub delay_ms: u64,
    pub req_s: f64,
    pub ceiling: f64,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub errors: usize,
    pub error_pct: f64,
}

impl SweepPoint {
    pub fn ratio(&self) -> f64 {
        self.req_s / self.ceiling
    }
}

/// The ceiling of a closed loop: `users` requests in flight, each taking `delay_ms`.
pub fn ceiling(users: u32, delay_ms: u64) -> f64 {
    f64::from(users) * 1000.0 / delay_ms as f64
}

/// The sweep's points from summary rows (label `chart_data`, phase `<n>ms`).
pub fn sweep(rows: &[SummaryRow]) -> Vec<SweepPoint> {
    let mut points: Vec<SweepPoint> = rows
        .iter()
        .filter(|r| r.label == "chart_data")
        .filter_map(|r| {
            let delay_ms: u64 = r.phase.strip_suffix("ms")?.parse().ok()?;
            Some(SweepPoint {
                delay_ms,
                req_s: r.req_s?,
                ceiling: ceiling(r.users, delay_ms),
                p50: r.p50_ms,
                p95: r.p95_ms,
                p99: r.p99_ms,
                errors: r.errors,
                error_pct: r.error_pct,
            })
        })
        .collect();
    points.sort_by_key(|p| p.delay_ms);
    points
}

fn ms(v: Option<f64>) -> String {
    match v {
        None => "–".to_owned(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

fn rate(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}"))
        .unwrap_or_else(|| "–".to_owned())
}

/// summary.md.
pub fn markdown(
    info: &RunInfo,
    summaries: &[Summary],
    records: &[Record],
    samples: &[Sample],
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# liteset-load {}\n", info.scenario);
    let _ = writeln!(md, "- target: {}", info.url);
    let _ = writeln!(
        md,
        "- users: {}, duration: {}{}, ramp-up: {}, seed: {}, started: {}",
        info.users,
        humantime::format_duration(info.duration),
        if info.scenario == "s3" {
            " per delay"
        } else {
            ""
        },
        humantime::format_duration(info.ramp_up),
        info.seed,
        info.started
    );
    for n in &info.notes {
        let _ = writeln!(md, "- {n}");
    }
    let _ = writeln!(
        md,
        "- probe: {} user(s), GET /api/v1/security/csrf_token/ once per second",
        info.probe_users
    );
    if info.interrupted {
        let _ = writeln!(
            md,
            "- **interrupted** (Ctrl-C): results cover the requests completed until then"
        );
    }
    let _ = writeln!(md);

    if info.scenario == "s3" {
        let rows: Vec<SummaryRow> = summaries
            .iter()
            .map(|s| SummaryRow {
                scenario: info.scenario.to_owned(),
                phase: s.phase.clone(),
                label: s.label.clone(),
                users: info.users,
                window_s: s.window_secs,
                count: s.count,
                req_s: s.req_s,
                p50_ms: s.p50,
                p95_ms: s.p95,
                p99_ms: s.p99,
                max_ms: s.max,
                errors: s.errors,
                error_pct: s.error_pct(),
                error_codes: s.codes_text(),
            })
            .collect();
        let _ = writeln!(md, "## IO-latency sweep (closed loop, `force=true`)\n");
        let _ = write!(
            md,
            "| delay | req/s | ceiling N/d | ratio | p50 ms | p95 ms | p99 ms | errors | error % | probe p50 ms | probe p99 ms |"
        );
        if !samples.is_empty() {
            let _ = write!(md, " server CPU % | server RSS peak MB |");
        }
        let _ = writeln!(md);
        let _ = write!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
        if !samples.is_empty() {
            let _ = write!(md, "---|---|");
        }
        let _ = writeln!(md);
        for p in sweep(&rows) {
            let phase = crate::scenarios::s3::phase_name(p.delay_ms);
            let probe = summaries
                .iter()
                .find(|s| s.phase == phase && s.label == probe::LABEL);
            let _ = write!(
                md,
                "| {} ms | {:.1} | {:.1} | {:.2} | {} | {} | {} | {} | {:.2} | {} | {} |",
                p.delay_ms,
                p.req_s,
                p.ceiling,
                p.ratio(),
                ms(p.p50),
                ms(p.p95),
                ms(p.p99),
                p.errors,
                p.error_pct,
                ms(probe.and_then(|s| s.p50)),
                ms(probe.and_then(|s| s.p99)),
            );
            if !samples.is_empty() {
                match procfs::aggregate(samples.iter().filter(|s| *s.phase == *phase)) {
                    Some((peak, _, cpu)) => {
                        let _ = write!(md, " {cpu:.0} | {peak:.0} |");
                    }
                    None => {
                        let _ = write!(md, " – | – |");
                    }
                }
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md);
    }

    let _ = writeln!(md, "## Requests\n");
    let _ = writeln!(
        md,
        "| phase | label | count | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | error % | codes |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
    for s in summaries {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} |",
            s.phase,
            s.label,
            s.count,
            rate(s.req_s),
            ms(s.p50),
            ms(s.p95),
            ms(s.p99),
            ms(s.max),
            s.errors,
            s.error_pct(),
            s.codes_text()
        );
    }
    let _ = writeln!(md);

    let probes: Vec<&Record> = records.iter().filter(|r| r.label == probe::LABEL).collect();
    let p = stats::label_percentiles(records, probe::LABEL, &[50.0, 99.0]);
    let _ = writeln!(md, "## Light endpoint (probe)\n");
    let _ = writeln!(
        md,
        "csrf_token: p50 {} ms, p99 {} ms over {} requests, {} errors\n",
        ms(p[0]),
        ms(p[1]),
        probes.len(),
        probes.iter().filter(|r| r.is_error()).count()
    );

    if let Some(pid) = info.server_pid {
        let _ = writeln!(md, "## Server process (pid {pid})\n");
        match procfs::aggregate(samples) {
            Some((peak, mean, cpu)) => {
                let _ = writeln!(
                    md,
                    "RSS peak {peak:.1} MB, mean {mean:.1} MB; CPU mean {cpu:.1} % of one core ({} samples)\n",
                    samples.len()
                );
            }
            None => {
                let _ = writeln!(md, "no samples (the process was gone?)\n");
            }
        }
    }
    md
}

static FONT: &[u8] = include_bytes!("../../../server/assets/fonts/DejaVuSans.ttf");
static FONT_BOLD: &[u8] = include_bytes!("../../../server/assets/fonts/DejaVuSans-Bold.ttf");

/// Registers the embedded DejaVu Sans as plotters' `sans-serif`, so text renders on machines
/// without fonts.
fn register_fonts() -> anyhow::Result<()> {
    use plotters::style::{FontStyle, register_font};
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = register_font("sans-serif", FontStyle::Normal, FONT)
            .and_then(|()| register_font("sans-serif", FontStyle::Bold, FONT_BOLD))
            .map_err(|_| anyhow!("the embedded font does not load"));
    });
    result
}

/// Draws req/s against delay (log–log) with the ceiling N/d, as a PNG.
pub fn plot_sweep(points: &[SweepPoint], users: u32, path: &Path) -> anyhow::Result<()> {
    use plotters::prelude::*;
    if points.is_empty() {
        anyhow::bail!("no s3 chart_data rows to plot");
    }
    register_fonts()?;
    let dmin = points.iter().map(|p| p.delay_ms).min().unwrap_or(1).max(1) as f64;
    let dmax = points.iter().map(|p| p.delay_ms).max().unwrap_or(1).max(1) as f64;
    let (xmin, xmax) = (dmin / 1.6, dmax * 1.6);
    let ceil_at = |d: f64| f64::from(users) * 1000.0 / d;
    let floor = 0.01;
    let ys = points
        .iter()
        .flat_map(|p| [p.req_s.max(floor), p.ceiling])
        .chain([ceil_at(xmin), ceil_at(xmax)]);
    let (ymin, ymax) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (ymin, ymax) = (ymin / 2.0, ymax * 2.0);

    let root = BitMapBackend::new(path, (1100, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Chart data throughput against query delay ({users} users, closed loop)"),
            ("sans-serif", 26),
        )
        .margin(24)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d((xmin..xmax).log_scale(), (ymin..ymax).log_scale())
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("query delay d (ms, log scale)")
        .y_desc("requests per second (log scale)")
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| {
            if *y >= 10.0 {
                format!("{y:.0}")
            } else {
                format!("{y:.2}")
            }
        })
        .draw()
        .map_err(|e| anyhow!("{e}"))?;

    let steps = 64;
    let ceiling_line = (0..=steps).map(|i| {
        let x = xmin * (xmax / xmin).powf(f64::from(i) / f64::from(steps));
        (x, ceil_at(x))
    });
    let red = RGBColor(214, 39, 40);
    let blue = RGBColor(31, 119, 180);
    chart
        .draw_series(LineSeries::new(ceiling_line, red.stroke_width(2)))
        .map_err(|e| anyhow!("{e}"))?
        .label(format!("ceiling N/d ({users}/d)"))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], red.stroke_width(2)));
    let measured: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.delay_ms as f64, p.req_s.max(floor)))
        .collect();
    chart
        .draw_series(LineSeries::new(measured.clone(), blue.stroke_width(3)))
        .map_err(|e| anyhow!("{e}"))?
        .label("measured req/s")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], blue.stroke_width(3)));
    chart
        .draw_series(
            measured
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 5, blue.filled())),
        )
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_points_and_plot() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = Vec::new();
        for (d, r) in [(10u64, 4000.0), (100, 495.0), (1000, 49.9)] {
            rows.push(SummaryRow {
                scenario: "s3".into(),
                phase: format!("{d}ms"),
                label: "chart_data".into(),
                users: 50,
                window_s: Some(120.0),
                count: 1,
                req_s: Some(r),
                p50_ms: Some(d as f64),
                p95_ms: None,
                p99_ms: None,
                max_ms: None,
                errors: 0,
                error_pct: 0.0,
                error_codes: String::new(),
            });
        }
        rows.push(SummaryRow {
            label: probe::LABEL.into(),
            ..rows[0].clone()
        });
        let pts = sweep(&rows);
        assert_eq!(pts.len(), 3);
        assert_eq!(pts[0].ceiling, 5000.0);
        assert!((pts[0].ratio() - 0.8).abs() < 1e-9);
        assert_eq!(pts[2].ceiling, 50.0);
        let png = dir.path().join("plot.png");
        plot_sweep(&pts, 50, &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    }
}
