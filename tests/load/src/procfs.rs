//! The server's CPU and memory, sampled from /proc once per second (Linux only).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::sync::watch;

/// Clock ticks per second of /proc's `utime`/`stime` (`USER_HZ`: 100 on every Linux ABI that
/// exposes it to user space).
const TICKS_PER_SEC: f64 = 100.0;

/// One sample: seconds since the run started, resident memory, CPU over the last interval as a
/// percentage of one core, and the phase it fell in.
#[derive(Debug, Clone)]
pub struct Sample {
    pub t_secs: f64,
    pub rss_mb: f64,
    pub cpu_pct: f64,
    pub phase: Arc<str>,
}

/// utime + stime (fields 14 and 15) of a `/proc/<pid>/stat` line, in ticks. The command name
/// (field 2) is in parentheses and may hold spaces, so fields are counted after the last `)`.
pub fn parse_stat_ticks(stat: &str) -> anyhow::Result<u64> {
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("no `)` in /proc/<pid>/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field n is fields[n - 3].
    let (Some(utime), Some(stime)) = (fields.get(11), fields.get(12)) else {
        bail!("/proc/<pid>/stat has too few fields");
    };
    Ok(utime.parse::<u64>()? + stime.parse::<u64>()?)
}

/// `VmRSS` of a `/proc/<pid>/status` text, in MB (the kernel reports kB).
pub fn parse_status_rss_mb(status: &str) -> anyhow::Result<f64> {
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS in /proc/<pid>/status")?;
    let kb: f64 = line
        .split_whitespace()
        .nth(1)
        .context("empty VmRSS line")?
        .parse()?;
    Ok(kb / 1024.0)
}

fn read(pid: u32) -> anyhow::Result<(u64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    Ok((parse_stat_ticks(&stat)?, parse_status_rss_mb(&status)?))
}

/// Checks that `pid` can be sampled (before the run starts, so a typo fails fast).
pub fn check(pid: u32) -> anyhow::Result<()> {
    read(pid).map(|_| ())
}

/// Samples `pid` every second until `stop` turns true (or the process is gone).
pub async fn sample(
    pid: u32,
    run_start: Instant,
    phase: watch::Receiver<Arc<str>>,
    mut stop: watch::Receiver<bool>,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    let Ok((mut last_ticks, _)) = read(pid) else {
        return samples;
    };
    let mut last_at = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            _ = tick.tick() => {}
        }
        let Ok((ticks, rss_mb)) = read(pid) else {
            break;
        };
        let now = Instant::now();
        let wall = now.duration_since(last_at).as_secs_f64();
        let cpu_pct = if wall > 0.0 {
            100.0 * (ticks.saturating_sub(last_ticks)) as f64 / TICKS_PER_SEC / wall
        } else {
            0.0
        };
        samples.push(Sample {
            t_secs: now.duration_since(run_start).as_secs_f64(),
            rss_mb,
            cpu_pct,
            phase: phase.borrow().clone(),
        });
        last_ticks = ticks;
        last_at = now;
    }
    samples
}

/// Peak RSS, mean RSS and mean CPU % of some samples.
pub fn aggregate<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Option<(f64, f64, f64)> {
    let (mut n, mut peak, mut rss, mut cpu) = (0usize, 0f64, 0f64, 0f64);
    for s in samples {
        n += 1;
        peak = peak.max(s.rss_mb);
        rss += s.rss_mb;
        cpu += s.cpu_pct;
    }
    (n > 0).then(|| (peak, rss / n as f64, cpu / n as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let stat = "4242 (liteset (serve) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 50 0 0 20 0 12 0 100 123456 789 18446744073709551615";
        assert_eq!(parse_stat_ticks(stat).unwrap(), 300);
        let status = "Name:\tliteset\nVmPeak:\t  99999 kB\nVmRSS:\t   51200 kB\nThreads:\t12\n";
        assert_eq!(parse_status_rss_mb(status).unwrap(), 50.0);
        assert!(parse_stat_ticks("no paren").is_err());
    }

    #[test]
    fn samples_this_process() {
        let (ticks, rss) = read(std::process::id()).unwrap();
        assert!(rss > 0.0);
        let _ = ticks;
    }
}
