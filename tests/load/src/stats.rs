//! Records and their summaries: exact percentiles over sorted latencies (runs are at most a few
//! million requests, so sorting beats a histogram's bucket error), req/s over a phase's window.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One finished request (or one whole dashboard load).
#[derive(Debug, Clone)]
pub struct Record {
    /// `run` for S1/S2, the delay (`100ms`) for S3, `setup` before the measured windows.
    pub phase: Arc<str>,
    pub label: &'static str,
    /// Virtual user number (probe users have their own numbering under their own label).
    pub user: u32,
    /// Start, in ms since the run started.
    pub start_ms: f64,
    pub latency_ms: f64,
    /// HTTP status; 0 for a transport error or timeout.
    pub status: u16,
    /// `None` for a 2xx; otherwise what went wrong (`HTTP 500: …`, `timeout`, `transport: …`).
    pub error: Option<String>,
}

impl Record {
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// The key errors are counted under: the status code, or `timeout`/`transport`.
    pub fn error_code(&self) -> String {
        match (self.status, self.error.as_deref()) {
            (0, Some("timeout")) => "timeout".to_owned(),
            (0, _) => "transport".to_owned(),
            (s, _) => s.to_string(),
        }
    }
}

/// Nearest-rank percentile (`p` in 0..=100) of an ascending slice; `None` when empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// Requests per second: requests completed in the window over the window's length.
pub fn rate(count: usize, window_secs: f64) -> Option<f64> {
    (window_secs > 0.0).then(|| count as f64 / window_secs)
}

/// One (phase, label) row of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub phase: String,
    pub label: String,
    /// Completed requests, errors included.
    pub count: usize,
    /// The measured window of the phase, when it has one (setup has none).
    pub window_secs: Option<f64>,
    /// Successful (2xx) requests completed per second of the window: errors are not
    /// throughput (a server answering fast 400s would beat any ceiling).
    pub req_s: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub errors: usize,
    /// Error count by status code / `timeout` / `transport`.
    pub error_codes: BTreeMap<String, usize>,
}

impl Summary {
    pub fn error_pct(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            100.0 * self.errors as f64 / self.count as f64
        }
    }

    /// `500:3;timeout:1`.
    pub fn codes_text(&self) -> String {
        self.error_codes
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// Summarises records per (phase, label), phases in the order given (phases not listed come
/// after, in order of first appearance), labels in order of first appearance within a phase.
/// `windows` gives each measured phase's window in seconds.
pub fn summarize(records: &[Record], windows: &[(String, f64)]) -> Vec<Summary> {
    let mut order: Vec<String> = windows.iter().map(|(p, _)| p.clone()).collect();
    let mut groups: HashMap<(String, &'static str), Vec<&Record>> = HashMap::new();
    let mut label_order: Vec<(String, &'static str)> = Vec::new();
    for r in records {
        let key = (r.phase.to_string(), r.label);
        if !order.contains(&key.0) {
            order.push(key.0.clone());
        }
        groups
            .entry(key.clone())
            .or_insert_with(|| {
                label_order.push(key);
                Vec::new()
            })
            .push(r);
    }
    let window_of: HashMap<&str, f64> = windows.iter().map(|(p, w)| (p.as_str(), *w)).collect();
    let mut out = Vec::new();
    for phase in &order {
        for key in label_order.iter().filter(|(p, _)| p == phase) {
            let rs = &groups[key];
            let mut lat: Vec<f64> = rs.iter().map(|r| r.latency_ms).collect();
            lat.sort_by(f64::total_cmp);
            let mut error_codes = BTreeMap::new();
            for r in rs.iter().filter(|r| r.is_error()) {
                *error_codes.entry(r.error_code()).or_insert(0) += 1;
            }
            let window_secs = window_of.get(phase.as_str()).copied();
            let errors: usize = error_codes.values().sum();
            out.push(Summary {
                phase: phase.clone(),
                label: key.1.to_owned(),
                count: rs.len(),
                window_secs,
                req_s: window_secs.and_then(|w| rate(rs.len() - errors, w)),
                p50: percentile(&lat, 50.0),
                p95: percentile(&lat, 95.0),
                p99: percentile(&lat, 99.0),
                max: lat.last().copied(),
                errors,
                error_codes,
            });
        }
    }
    out
}

/// Latency percentiles of every record with `label`, whatever the phase (the probe's overall
/// p50/p99).
pub fn label_percentiles(records: &[Record], label: &str, ps: &[f64]) -> Vec<Option<f64>> {
    let mut lat: Vec<f64> = records
        .iter()
        .filter(|r| r.label == label)
        .map(|r| r.latency_ms)
        .collect();
    lat.sort_by(f64::total_cmp);
    ps.iter().map(|p| percentile(&lat, *p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(phase: &str, label: &'static str, latency_ms: f64, status: u16) -> Record {
        Record {
            phase: Arc::from(phase),
            label,
            user: 0,
            start_ms: 0.0,
            latency_ms,
            status,
            error: match status {
                200..=299 => None,
                0 => Some("timeout".to_owned()),
                s => Some(format!("HTTP {s}")),
            },
        }
    }

    #[test]
    fn percentiles_of_one_to_hundred() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 95.0), Some(95.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
        // Nearest rank on a small set: p50 of 4 values is the 2nd, p99 the last.
        let small = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(percentile(&small, 50.0), Some(20.0));
        assert_eq!(percentile(&small, 99.0), Some(40.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }

    #[test]
    fn req_per_second_is_count_over_window() {
        assert_eq!(rate(600, 120.0), Some(5.0));
        assert_eq!(rate(0, 10.0), Some(0.0));
        assert_eq!(rate(5, 0.0), None);
    }

    #[test]
    fn summary_groups_by_phase_and_label_and_counts_errors() {
        let mut records = Vec::new();
        for i in 1..=10 {
            records.push(rec("10ms", "chart_data", f64::from(i), 200));
        }
        records.push(rec("10ms", "chart_data", 500.0, 500));
        records.push(rec("10ms", "chart_data", 60_000.0, 0));
        records.push(rec("setup", "probe_csrf_token", 1.0, 200));
        records.push(rec("10ms", "probe_csrf_token", 2.0, 200));
        records.push(rec("50ms", "chart_data", 55.0, 200));
        let windows = vec![("10ms".to_owned(), 2.0), ("50ms".to_owned(), 4.0)];
        let s = summarize(&records, &windows);
        let names: Vec<(&str, &str)> = s
            .iter()
            .map(|s| (s.phase.as_str(), s.label.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("10ms", "chart_data"),
                ("10ms", "probe_csrf_token"),
                ("50ms", "chart_data"),
                ("setup", "probe_csrf_token"),
            ]
        );
        let c = &s[0];
        assert_eq!(c.count, 12);
        assert_eq!(c.req_s, Some(5.0), "10 successes in 2 s");
        assert_eq!(c.errors, 2);
        assert_eq!(c.codes_text(), "500:1;timeout:1");
        assert!((c.error_pct() - 100.0 * 2.0 / 12.0).abs() < 1e-9);
        assert_eq!(c.p50, Some(6.0));
        assert_eq!(c.max, Some(60_000.0));
        assert_eq!(s[2].req_s, Some(0.25));
        assert_eq!(s[3].window_secs, None);
        assert_eq!(s[3].req_s, None);
        assert_eq!(
            label_percentiles(&records, "probe_csrf_token", &[50.0, 99.0]),
            [Some(1.0), Some(2.0)]
        );
    }
}
