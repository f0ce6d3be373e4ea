//! Scales: d3's nice linear ticks and calendar-aligned time ticks.

use crate::format::{civil, civil_from_days, days_from_civil};

/// d3's `tickIncrement`: a 1, 2 or 5 × 10ⁿ step giving about `count` ticks over the span.
pub fn tick_step(lo: f64, hi: f64, count: usize) -> f64 {
    let span = (hi - lo).abs();
    if span == 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / count.max(1) as f64;
    let power = 10f64.powf(raw.log10().floor());
    let err = raw / power;
    let factor = if err >= 50f64.sqrt() {
        10.0
    } else if err >= 10f64.sqrt() {
        5.0
    } else if err >= 2f64.sqrt() {
        2.0
    } else {
        1.0
    };
    factor * power
}

/// A linear scale from a data domain to a pixel range.
#[derive(Debug, Clone, Copy)]
pub struct Linear {
    /// Domain start.
    pub d0: f64,
    /// Domain end.
    pub d1: f64,
    /// Range start (pixels).
    pub r0: f64,
    /// Range end (pixels).
    pub r1: f64,
}

impl Linear {
    /// The value's position.
    pub fn at(&self, v: f64) -> f64 {
        if self.d1 == self.d0 {
            return (self.r0 + self.r1) / 2.0;
        }
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// A "nice" value domain covering `lo..hi` (and zero when `zero`), with its ticks.
pub fn nice(lo: f64, hi: f64, count: usize, zero: bool) -> (f64, f64, Vec<f64>) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    if zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if lo == hi {
        if lo == 0.0 {
            hi = 1.0;
        } else if lo > 0.0 {
            lo = 0.0;
        } else {
            hi = 0.0;
        }
    }
    // Tolerate float noise (0.3 / 0.05 = 5.999999999999999) when snapping to steps.
    let floor = |v: f64, step: f64| (v / step + 1e-9).floor();
    let ceil = |v: f64, step: f64| (v / step - 1e-9).ceil();
    let step = tick_step(lo, hi, count);
    let (lo, hi) = (floor(lo, step) * step, ceil(hi, step) * step);
    let step = tick_step(lo, hi, count);
    let (k0, k1) = (floor(lo, step) as i64, ceil(hi, step) as i64);
    let ticks: Vec<f64> = (k0..=k1.min(k0 + 1000))
        .map(|k| {
            // k × step, rounded to the step's decimals (0.1 × 3 = 0.30000000000000004).
            let decimals = (-step.log10().floor()).max(0.0) as i32 + 1;
            let f = 10f64.powi(decimals);
            (k as f64 * step * f).round() / f
        })
        .collect();
    (ticks[0], ticks[ticks.len() - 1], ticks)
}

const DAY: i64 = 86_400_000;
const HOUR: i64 = 3_600_000;

/// Calendar-aligned ticks (milliseconds) between `lo` and `hi`, about `count` of them.
pub fn time_ticks(lo: i64, hi: i64, count: usize) -> Vec<i64> {
    if hi <= lo {
        return vec![lo];
    }
    let span = hi - lo;
    let target = span / count.max(1) as i64;
    // (unit, step): fixed durations below a month, calendar months and years above.
    enum Unit {
        Fixed(i64),
        Months(u32),
        Years(i64),
    }
    let units = [
        Unit::Fixed(HOUR),
        Unit::Fixed(3 * HOUR),
        Unit::Fixed(6 * HOUR),
        Unit::Fixed(12 * HOUR),
        Unit::Fixed(DAY),
        Unit::Fixed(2 * DAY),
        Unit::Fixed(7 * DAY),
        Unit::Months(1),
        Unit::Months(3),
        Unit::Months(6),
        Unit::Years(1),
        Unit::Years(2),
        Unit::Years(5),
        Unit::Years(10),
        Unit::Years(25),
        Unit::Years(50),
        Unit::Years(100),
    ];
    let approx = |u: &Unit| match u {
        Unit::Fixed(d) => *d,
        Unit::Months(m) => i64::from(*m) * 30 * DAY,
        Unit::Years(y) => y * 365 * DAY,
    };
    let unit = units
        .iter()
        .find(|u| approx(u) >= target)
        .unwrap_or(&units[units.len() - 1]);
    let mut out = Vec::new();
    match unit {
        Unit::Fixed(step) => {
            // Weeks start on Sunday, as d3's timeWeek does; days and hours at midnight UTC.
            let offset = if *step == 7 * DAY { -4 * DAY } else { 0 };
            let mut t = (lo - offset).div_euclid(*step) * step + offset;
            if t < lo {
                t += step;
            }
            while t <= hi && out.len() < 1000 {
                out.push(t);
                t += step;
            }
        }
        Unit::Months(step) => {
            let c = civil(lo);
            let mut y = c.year;
            let mut m = c.month - 1; // 0-based
            m -= m % step;
            loop {
                let t = days_from_civil(y, m + 1, 1) * DAY;
                if t > hi || out.len() >= 1000 {
                    break;
                }
                if t >= lo {
                    out.push(t);
                }
                m += step;
                if m >= 12 {
                    m -= 12;
                    y += 1;
                }
            }
        }
        Unit::Years(step) => {
            let (y0, _, _) = civil_from_days(lo.div_euclid(DAY));
            let mut y = y0.div_euclid(*step) * step;
            loop {
                let t = days_from_civil(y, 1, 1) * DAY;
                if t > hi || out.len() >= 1000 {
                    break;
                }
                if t >= lo {
                    out.push(t);
                }
                y += step;
            }
        }
    }
    if out.is_empty() {
        out.push(lo);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_domains() {
        let (lo, hi, ticks) = nice(3.0, 97.0, 5, true);
        assert_eq!((lo, hi), (0.0, 100.0));
        assert_eq!(ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let (_, hi, ticks) = nice(0.0, 0.3, 5, true);
        assert_eq!(hi, 0.3);
        assert_eq!(ticks, vec![0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]);
        let (lo, hi, _) = nice(5.0, 5.0, 5, false);
        assert!(lo <= 0.0 && hi >= 5.0);
    }

    #[test]
    fn monthly_ticks_land_on_the_first() {
        // 2024-01-01 .. 2025-12-01
        let lo = days_from_civil(2024, 1, 1) * DAY;
        let hi = days_from_civil(2025, 12, 1) * DAY;
        let ticks = time_ticks(lo, hi, 8);
        assert!(ticks.len() >= 4 && ticks.len() <= 12, "{ticks:?}");
        for t in ticks {
            assert_eq!(civil(t).day, 1);
        }
    }
}
