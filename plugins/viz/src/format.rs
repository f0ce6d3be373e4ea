//! Number and time formatting as Superset's frontend does it: d3-format specifiers
//! (`,.2f`, `.3s`, `+.1%`, `$,d`, ...), Superset's named formats (`SMART_NUMBER`), and
//! d3-time-format patterns plus the "smart date" multi-format of time axes.

/// A parsed d3-format specifier: `[[fill]align][sign][symbol][0][width][,][.precision][~][type]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    fill: char,
    align: char,
    sign: char,
    symbol: Option<char>,
    width: usize,
    comma: bool,
    precision: Option<usize>,
    trim: bool,
    ty: Option<char>,
}

impl Spec {
    /// Parses a specifier; `None` when it is not one.
    pub fn parse(s: &str) -> Option<Spec> {
        let c: Vec<char> = s.chars().collect();
        let mut i = 0;
        let mut spec = Spec {
            fill: ' ',
            align: '>',
            sign: '-',
            symbol: None,
            width: 0,
            comma: false,
            precision: None,
            trim: false,
            ty: None,
        };
        let is_align = |ch: char| matches!(ch, '<' | '>' | '^' | '=');
        if c.len() >= 2 && is_align(c[1]) {
            spec.fill = c[0];
            spec.align = c[1];
            i = 2;
        } else if !c.is_empty() && is_align(c[0]) {
            spec.align = c[0];
            i = 1;
        }
        if i < c.len() && matches!(c[i], '-' | '+' | '(' | ' ') {
            spec.sign = c[i];
            i += 1;
        }
        if i < c.len() && matches!(c[i], '$' | '#') {
            spec.symbol = Some(c[i]);
            i += 1;
        }
        if i < c.len() && c[i] == '0' {
            spec.fill = '0';
            spec.align = '=';
            i += 1;
        }
        let start = i;
        while i < c.len() && c[i].is_ascii_digit() {
            i += 1;
        }
        if i > start {
            spec.width = c[start..i].iter().collect::<String>().parse().ok()?;
        }
        if i < c.len() && c[i] == ',' {
            spec.comma = true;
            i += 1;
        }
        if i < c.len() && c[i] == '.' {
            i += 1;
            let start = i;
            while i < c.len() && c[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return None;
            }
            spec.precision = Some(c[start..i].iter().collect::<String>().parse().ok()?);
        }
        if i < c.len() && c[i] == '~' {
            spec.trim = true;
            i += 1;
        }
        if i < c.len() && "efgrsdopbxXc%".contains(c[i]) {
            spec.ty = Some(c[i]);
            i += 1;
        }
        (i == c.len()).then_some(spec)
    }

    /// Formats `x`.
    pub fn format(&self, x: f64) -> String {
        if !x.is_finite() {
            return if x.is_nan() {
                "NaN".into()
            } else if x > 0.0 {
                "∞".into()
            } else {
                "-∞".into()
            };
        }
        let negative = x < 0.0;
        let ax = x.abs();
        let (mut body, suffix) = match self.ty {
            Some('f') => (fixed(ax, self.precision.unwrap_or(6)), String::new()),
            Some('d') => (fixed(ax.round(), 0), String::new()),
            Some('%') => (fixed(ax * 100.0, self.precision.unwrap_or(6)), "%".into()),
            Some('p') => (
                significant(ax * 100.0, self.precision.unwrap_or(6)),
                "%".into(),
            ),
            Some('e') => (exponent(ax, self.precision.unwrap_or(6)), String::new()),
            Some('s') => si(ax, self.precision.unwrap_or(6).max(1)),
            Some('r') | Some('g') => (
                significant(ax, self.precision.unwrap_or(6).max(1)),
                String::new(),
            ),
            // No type: like `g` with insignificant zeros trimmed (d3's `~g`), 12 digits.
            _ => {
                let p = self.precision.unwrap_or(12).max(1);
                let s = significant(ax, p);
                (trim_zeros(&s), String::new())
            }
        };
        if self.trim {
            body = trim_zeros(&body);
        }
        if self.comma {
            body = group(&body);
        }
        let negative = negative && body.chars().any(|c| c.is_ascii_digit() && c != '0');
        let sign = match (negative, self.sign) {
            (true, '(') => "(",
            (true, _) => "-",
            (false, '+') => "+",
            (false, ' ') => " ",
            _ => "",
        };
        let currency = if self.symbol == Some('$') { "$" } else { "" };
        let close = if negative && self.sign == '(' {
            ")"
        } else {
            ""
        };
        let out = format!("{sign}{currency}{body}{suffix}{close}");
        let len = out.chars().count();
        if len >= self.width {
            return out;
        }
        let pad: String = std::iter::repeat_n(self.fill, self.width - len).collect();
        match self.align {
            '<' => format!("{out}{pad}"),
            '^' => {
                let half = pad.chars().count() / 2;
                let left: String = pad.chars().take(half).collect();
                let right: String = pad.chars().skip(half).collect();
                format!("{left}{out}{right}")
            }
            '=' => format!("{sign}{currency}{pad}{body}{suffix}{close}"),
            _ => format!("{pad}{out}"),
        }
    }
}

fn fixed(x: f64, p: usize) -> String {
    format!("{:.*}", p.min(20), x)
}

fn significant(x: f64, p: usize) -> String {
    if x == 0.0 {
        return fixed(0.0, p.saturating_sub(1));
    }
    let e = x.log10().floor() as i32;
    if !(-7..21).contains(&e) {
        return exponent(x, p.saturating_sub(1));
    }
    let decimals = (p as i32 - 1 - e).max(0) as usize;
    let s = fixed(x, decimals);
    // Rounding may have added a digit (9.99 → 10.0): drop one decimal.
    let digits = s.chars().filter(char::is_ascii_digit).count();
    let lead_zeros = s.chars().take_while(|c| *c == '0' || *c == '.').count();
    if digits - lead_zeros.min(digits) > p && decimals > 0 {
        return fixed(x, decimals - 1);
    }
    s
}

fn exponent(x: f64, p: usize) -> String {
    let s = format!("{:.*e}", p.min(20), x);
    match s.split_once('e') {
        Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
        Some((m, e)) => format!("{m}e{e}"),
        None => s,
    }
}

fn trim_zeros(s: &str) -> String {
    match s.split_once(['e', 'E']) {
        Some((m, e)) => format!("{}e{e}", trim_zeros(m)),
        None if s.contains('.') => s.trim_end_matches('0').trim_end_matches('.').to_owned(),
        None => s.to_owned(),
    }
}

fn group(s: &str) -> String {
    let (int, rest) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let mut out = String::with_capacity(int.len() + int.len() / 3 + rest.len());
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out.push_str(rest);
    out
}

const PREFIXES: [&str; 17] = [
    "y", "z", "a", "f", "p", "n", "µ", "m", "", "k", "M", "G", "T", "P", "E", "Z", "Y",
];

/// d3's `s`: `p` significant digits and an SI prefix. Returns (digits, prefix).
fn si(x: f64, p: usize) -> (String, String) {
    if x == 0.0 {
        return (fixed(0.0, p.saturating_sub(1)), String::new());
    }
    // Round to p significant digits first, so 999.95 with p=3 becomes "1.00k", not "1000".
    let e = x.log10().floor() as i32;
    let factor = 10f64.powi(p as i32 - 1 - e);
    let rounded = (x * factor).round() / factor;
    let e = rounded.log10().floor() as i32;
    let k = (e.div_euclid(3)).clamp(-8, 8);
    let mantissa = rounded / 10f64.powi(k * 3);
    let int_digits = mantissa.log10().floor() as i32 + 1;
    let decimals = (p as i32 - int_digits).max(0) as usize;
    (
        fixed(mantissa, decimals),
        PREFIXES[(k + 8) as usize].to_owned(),
    )
}

/// Formats `x` with a d3-format specifier or one of Superset's named formats
/// (`SMART_NUMBER`, `SMART_NUMBER_SIGNED`); an unknown format falls back to `SMART_NUMBER`.
pub fn number(format: &str, x: f64) -> String {
    match format {
        "" | "SMART_NUMBER" => smart_number(x, false),
        "SMART_NUMBER_SIGNED" => smart_number(x, true),
        f => match Spec::parse(f) {
            Some(spec) => spec.format(x),
            None => smart_number(x, false),
        },
    }
}

/// Superset's `SMART_NUMBER`: SI above 1000 (with B for billions), 2 or 4 decimals below.
pub fn smart_number(x: f64, signed: bool) -> String {
    let spec = |s: &str| Spec::parse(s).map(|f| f.format(x)).unwrap_or_default();
    let ax = x.abs();
    let s = if x == 0.0 {
        "0".to_owned()
    } else if ax >= 1000.0 {
        spec(".3~s").replace('G', "B")
    } else if ax >= 1.0 {
        spec(".2~f")
    } else if ax >= 0.001 {
        spec(".4~f")
    } else if ax > 0.000_001 {
        let micro = Spec::parse(".3~s")
            .map(|f| f.format(x * 1_000_000.0))
            .unwrap_or_default();
        format!("{micro}µ")
    } else {
        spec(".3~s")
    };
    if signed && x > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

// ---------------------------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------------------------

/// A UTC calendar time broken down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// Year.
    pub year: i64,
    /// Month, 1–12.
    pub month: u32,
    /// Day of month, 1–31.
    pub day: u32,
    /// Hour, 0–23.
    pub hour: u32,
    /// Minute.
    pub minute: u32,
    /// Second.
    pub second: u32,
    /// Day of the week, 0 = Sunday.
    pub weekday: u32,
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) → days since 1970-01-01.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Milliseconds since the epoch → calendar time (UTC).
pub fn civil(ms: i64) -> Civil {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000) / 1000;
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: (rem / 3600) as u32,
        minute: (rem / 60 % 60) as u32,
        second: (rem % 60) as u32,
        weekday: (days + 4).rem_euclid(7) as u32,
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// d3-time-format (`%Y-%m-%d`, `%b %d`, ...) of a time in milliseconds since the epoch, UTC.
pub fn strftime(pattern: &str, ms: i64) -> String {
    let t = civil(ms);
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(mut d) = chars.next() else { break };
        // d3's padding modifiers: `%-d` (none), `%_d` (space), `%0d` (zero).
        let mut pad = true;
        if matches!(d, '-' | '_' | '0') {
            pad = d != '-';
            match chars.next() {
                Some(n) => d = n,
                None => break,
            }
        }
        let two = |v: u32| {
            if pad {
                format!("{v:02}")
            } else {
                v.to_string()
            }
        };
        match d {
            'Y' => out.push_str(&t.year.to_string()),
            'y' => out.push_str(&format!("{:02}", t.year.rem_euclid(100))),
            'm' => out.push_str(&two(t.month)),
            'd' => out.push_str(&two(t.day)),
            'e' => out.push_str(&format!("{:>2}", t.day)),
            'H' => out.push_str(&two(t.hour)),
            'I' => out.push_str(&two(if t.hour.is_multiple_of(12) {
                12
            } else {
                t.hour % 12
            })),
            'M' => out.push_str(&two(t.minute)),
            'S' => out.push_str(&two(t.second)),
            'L' => out.push_str(&format!("{:03}", ms.rem_euclid(1000))),
            'p' => out.push_str(if t.hour < 12 { "AM" } else { "PM" }),
            'b' => out.push_str(&MONTHS[(t.month - 1) as usize][..3]),
            'B' => out.push_str(MONTHS[(t.month - 1) as usize]),
            'a' => out.push_str(&DAYS[t.weekday as usize][..3]),
            'A' => out.push_str(DAYS[t.weekday as usize]),
            'j' => {
                let doy =
                    days_from_civil(t.year, t.month, t.day) - days_from_civil(t.year, 1, 1) + 1;
                out.push_str(&format!("{doy:03}"));
            }
            'q' => out.push_str(&((t.month - 1) / 3 + 1).to_string()),
            '%' => out.push('%'),
            other => {
                out.push('%');
                out.push(other);
            }
        }
    }
    out
}

/// Superset's `smart_date`: the coarsest unit that still tells the time apart (d3's multi-
/// format): a year on 1 January, a month name on the 1st, a day otherwise, a time of day when
/// there is one.
pub fn smart_date(ms: i64) -> String {
    let t = civil(ms);
    if ms.rem_euclid(1000) != 0 {
        strftime(".%L", ms)
    } else if t.second != 0 {
        strftime(":%S", ms)
    } else if t.minute != 0 {
        strftime("%H:%M", ms)
    } else if t.hour != 0 {
        strftime("%H:00", ms)
    } else if t.day != 1 {
        strftime("%b %d", ms)
    } else if t.month != 1 {
        strftime("%b", ms)
    } else {
        strftime("%Y", ms)
    }
}

/// A time with a chart's format: a d3-time-format pattern, or `smart_date` (the default).
pub fn time(format: &str, ms: i64) -> String {
    match format {
        "" | "smart_date" => smart_date(ms),
        f if f.contains('%') => strftime(f, ms),
        _ => strftime("%Y-%m-%d %H:%M:%S", ms),
    }
}

/// A full, unambiguous rendering of a time for tables and tooltips.
pub fn datetime(ms: i64) -> String {
    let t = civil(ms);
    if t.hour == 0 && t.minute == 0 && t.second == 0 {
        strftime("%Y-%m-%d", ms)
    } else {
        strftime("%Y-%m-%d %H:%M:%S", ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d3_formats() {
        assert_eq!(number(",.2f", 1234567.891), "1,234,567.89");
        assert_eq!(number(",d", 1234567.5), "1,234,568");
        assert_eq!(number(".3s", 2_241_234.0), "2.24M");
        assert_eq!(number(".3s", 999.95), "1.00k");
        assert_eq!(number(".3~s", 1500.0), "1.5k");
        assert_eq!(number(".1%", 0.1234), "12.3%");
        assert_eq!(number("+,.1f", 5.0), "+5.0");
        assert_eq!(number(",.2f", -3.5), "-3.50");
        assert_eq!(number("$,.2f", 1234.5), "$1,234.50");
        assert_eq!(number(".2e", 12345.0), "1.23e+4");
        assert_eq!(number("~g", 0.5), "0.5");
        assert_eq!(number(",.0f", 0.4), "0");
        assert_eq!(number("(,.2f", -1.0), "(1.00)");
        assert_eq!(number("08.2f", 4.256), "00004.26");
    }

    #[test]
    fn smart_numbers() {
        assert_eq!(smart_number(0.0, false), "0");
        assert_eq!(smart_number(2_241_234.56, false), "2.24M");
        assert_eq!(smart_number(3_000_000_000.0, false), "3B");
        assert_eq!(smart_number(12.345, false), "12.35");
        assert_eq!(smart_number(0.012345, false), "0.0123");
        assert_eq!(smart_number(12.0, true), "+12");
        assert_eq!(smart_number(-1500.0, false), "-1.5k");
    }

    #[test]
    fn times() {
        // 2024-03-01T00:00:00Z
        let march = 1_709_251_200_000;
        assert_eq!(strftime("%Y-%m-%d %a", march), "2024-03-01 Fri");
        assert_eq!(smart_date(march), "Mar");
        assert_eq!(smart_date(1_704_067_200_000), "2024");
        assert_eq!(smart_date(march + 86_400_000 * 4), "Mar 05");
        assert_eq!(smart_date(march + 3_600_000 * 13), "13:00");
        assert_eq!(days_from_civil(2024, 3, 1), 19_783);
        assert_eq!(civil_from_days(19_783), (2024, 3, 1));
        assert_eq!(strftime("%b %-d, %Y", march), "Mar 1, 2024");
    }
}
