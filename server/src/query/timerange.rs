//! Superset's `time_range` grammar (`get_since_until` in `superset/utils/date_parser.py`,
//! Superset 6.0).
//!
//! [`get_since_until`] turns strings such as `"Last week"`, `"2021-01-01 : 2021-02-01"` or
//! `"DATEADD(DATETIME('today'), -1, month) : today"` into a pair of naive datetimes (UTC wall
//! clock). The pipeline follows the Python step by step, because clients depend on its odd
//! corners (which phrases fail, and with which message), not only on the common cases:
//!
//! 1. shorthands are rewritten into the two-sided form: `"Last <x>"` becomes
//!    `"Last <x> : <relative_end>"`, `"Next <x>"` becomes `"<relative_start> : Next <x>"`, and
//!    `"previous calendar <unit>"` / `"Current <unit>"` become fixed DATETRUNC/DATEADD pairs;
//! 2. the string is split once on `" : "`; each side is matched against the phrase patterns
//!    (`start of this month`, `last 2 weeks`, ...) and turned into an expression of the small
//!    function language (`DATETIME`, `DATEADD`, `DATETRUNC`, `LASTDAY`, `HOLIDAY`); any other
//!    text becomes `DATETIME('<text>')`;
//! 3. each expression is parsed by a recursive-descent parser (with pyparsing-style syntax error
//!    messages) and evaluated against the caller's "now";
//! 4. `time_shift` moves both bounds ([`shift`]), and `since > until` is rejected.
//!
//! `DATETIME('...')` strings are read like Superset reads them: first as an absolute date or
//! datetime (python-dateutil), then as a relative phrase (parsedatetime); see
//! [`parse_human_datetime`].

use std::fmt;
use std::str::FromStr;

use chrono::{
    Datelike, Days, Months, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, Timelike, Weekday,
};

/// The `time_range` value meaning "no time filter" (Superset's `NO_TIME_RANGE`).
pub const NO_TIME_RANGE: &str = "No filter";

/// Separator between the two sides of a time range. The spaces are part of it, which is what
/// lets `"2021-01-01T06:00:00"` contain colons without being split.
const SEPARATOR: &str = " : ";

/// Deepest nesting of function calls accepted in one expression. Python would give up with a
/// RecursionError far later; a small bound keeps a hostile string from exhausting our stack.
const MAX_DEPTH: usize = 64;

/// The base that relative phrases are computed from (`extras.relative_start|end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Relative {
    /// Midnight of the current day (Superset's default).
    #[default]
    Today,
    /// The current instant, without microseconds.
    Now,
}

impl Relative {
    /// The keyword as Superset spells it (`"today"` or `"now"`); it is spliced into
    /// `DATETIME('<keyword>')` expressions, exactly as the Python does.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Today => "today",
            Self::Now => "now",
        }
    }
}

impl FromStr for Relative {
    type Err = TimeRangeError;

    /// Accepts exactly `"today"` or `"now"`, the two choices Superset's extras schema allows.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "today" => Ok(Self::Today),
            "now" => Ok(Self::Now),
            other => Err(TimeRangeError::InvalidRelative(other.to_string())),
        }
    }
}

impl fmt::Display for Relative {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A resolved time range: `col >= since AND col < until`; `None` means unbounded on that side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TimeRange {
    /// Inclusive lower bound.
    pub since: Option<NaiveDateTime>,
    /// Exclusive upper bound.
    pub until: Option<NaiveDateTime>,
}

/// Why a time range or time shift could not be resolved. `Display` gives Superset's message.
/// Every variant is a client error (Superset answers 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeRangeError {
    /// A `DATETIME('...')` string that is neither an absolute date nor a known relative phrase.
    #[error("Cannot parse time string [{0}]")]
    ParseFail(String),
    /// A bare period such as `"5 days"`, which could mean either direction.
    #[error("Time string is ambiguous. Please specify [{0} ago] or [{0} later].")]
    AmbiguousTime(String),
    /// A time shift that is not of the form `"<N> <unit> ago"` (and its variants).
    #[error("Time delta is ambiguous. Please specify [{0} ago] or [{0} later].")]
    AmbiguousDelta(String),
    /// The resolved lower bound lies after the upper bound.
    #[error("From date cannot be larger than to date")]
    SinceAfterUntil,
    /// The function language did not parse; the message imitates pyparsing's
    /// (`Expected ')', found 's'  (at char 19), (line:1, col:20)`).
    #[error("{0}")]
    Syntax(String),
    /// `HOLIDAY('<name>')` matched no holiday of that country and year.
    #[error("Unable to find such a holiday: [{0}]")]
    HolidayNotFound(String),
    /// `HOLIDAY(..., '<country>')` for a country whose calendar is not built in (only `US` is).
    #[error("Country {0} not available")]
    CountryNotAvailable(String),
    /// Date arithmetic left Python's datetime range (years 1 to 9999).
    #[error("date value out of range")]
    OutOfRange,
    /// A `relative_start`/`relative_end` value other than `today` or `now`.
    #[error("Must be one of: today, now.")]
    InvalidRelative(String),
}

type Res<T> = Result<T, TimeRangeError>;

/// Resolves a Superset `time_range` string into its bounds.
///
/// * `time_range`: `None`, `""` (or blank) and `"No filter"` give an unbounded range.
/// * `time_shift`: an offset such as `"1 year ago"` applied to both bounds (see [`shift`]).
/// * `relative_start`: the base of relative phrases on either side (`last 2 weeks`, `this
///   month`, ...) and the left side of `"Next <x>"`.
/// * `relative_end`: the right side of `"Last <x>"`, and the upper bound for a string that has
///   no `" : "` and is not a known shorthand (Superset's legacy path: `(None, relative_end)`).
/// * `now`: the current instant, as a naive UTC wall-clock datetime.
pub fn get_since_until(
    time_range: Option<&str>,
    time_shift: Option<&str>,
    relative_start: Relative,
    relative_end: Relative,
    now: NaiveDateTime,
) -> Result<TimeRange, TimeRangeError> {
    // Superset maps a missing time_range to "No filter" before calling get_since_until; an empty
    // one is treated the same way here rather than falling into the legacy path below.
    let raw = match time_range {
        Some(raw) if !raw.trim().is_empty() && raw != NO_TIME_RANGE => raw,
        _ => return Ok(TimeRange::default()),
    };
    let range = rewrite_shorthand(raw, relative_start, relative_end);

    let (mut since, mut until) = match range.split_once(SEPARATOR) {
        Some((left, right)) => {
            // Both expressions are built before either is evaluated, and the left one is
            // evaluated first, so errors come out in the same order as in Superset.
            let left = side_expression(left.trim(), relative_start);
            let right = side_expression(right.trim(), relative_start);
            let since = left
                .map(|e| eval_datetime_expression(&e, now))
                .transpose()?;
            let until = right
                .map(|e| eval_datetime_expression(&e, now))
                .transpose()?;
            (since, until)
        }
        // Superset's pre-`time_range` path (separate since/until fields): with no since, the
        // range is everything up to relative_end.
        None => (
            None,
            Some(parse_human_datetime(relative_end.as_str(), now)?),
        ),
    };

    if let Some(offset) = time_shift.filter(|s| !s.trim().is_empty()) {
        since = since.map(|dt| shift(dt, offset)).transpose()?;
        until = until.map(|dt| shift(dt, offset)).transpose()?;
    }

    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        return Err(TimeRangeError::SinceAfterUntil);
    }
    Ok(TimeRange { since, until })
}

/// Shifts `dt` back by a time offset such as `"1 year ago"`, `"2 weeks ago"`, `"3 months ago"`
/// or `"52 weeks ago"`; this is how Superset applies `time_shift` to a range bound.
///
/// Months, quarters (3 months) and years use calendar arithmetic that clamps the day
/// (2024-03-31 shifted by `"1 month ago"` is 2024-02-29); the time of day and microseconds are
/// kept. As in Superset, whose `parse_past_timedelta` negates the phrase, `"1 week"`,
/// `"1 week later"` and `"-1 week"` also shift back; only `"+1 week"` and `"in 1 week"` move
/// forward. Anything else gives [`TimeRangeError::AmbiguousDelta`].
pub fn shift(dt: NaiveDateTime, offset: &str) -> Result<NaiveDateTime, TimeRangeError> {
    let ambiguous = || TimeRangeError::AmbiguousDelta(offset.to_string());
    let lower = offset.to_lowercase();
    let all: Vec<&str> = lower.split_whitespace().collect();
    let (in_prefix, words) = match all.split_first() {
        Some((&"in", rest)) => (true, rest),
        _ => (false, all.as_slice()),
    };
    let [count, unit, suffix @ ..] = words else {
        return Err(ambiguous());
    };
    let ago = match suffix {
        [] => false,
        ["ago"] if !in_prefix => true,
        ["later"] | ["from", "now"] if !in_prefix => false,
        _ => return Err(ambiguous()),
    };
    let unit = match *unit {
        // parsedatetime has no quarters (Superset 6.0 silently ignored "1 quarter ago");
        // later Superset versions rewrite them to months, which is what is done here.
        "quarter" | "quarters" => Unit::Quarter,
        other => phrase_unit(other).ok_or_else(ambiguous)?,
    };
    let (magnitude, sign) = parse_count(count)?.ok_or_else(ambiguous)?;
    let forward = in_prefix || (sign == Sign::Plus && !ago);
    add_units(dt, if forward { magnitude } else { -magnitude }, unit)
}

/// Reads the text of a `DATETIME('...')` the way Superset's `parse_human_datetime` does.
///
/// * A bare period (`"5 days"`) is rejected as ambiguous.
/// * Absolute forms (python-dateutil, defaulting to January 1st of the current year):
///   `2021-01-01`, `2021/1/5`, `2021.01.05`, `2021-01`, `2021`, `20210105`, `01/05/2021`
///   (month first), optionally followed by a time (`T06:00`, ` 06:00:00.123456`, `am`/`pm`) and
///   a zone (`Z`, `UTC`, `+02:00`, converted to UTC); month names (`Jan 5 2021`,
///   `5 January`, `January 2021`); a bare time (`10:30`); a bare day number (`5`).
/// * Relative phrases (parsedatetime; microseconds dropped; the time of day is reset to
///   midnight unless the phrase has a time part): `now`, `today`, `yesterday`, `tomorrow`,
///   `noon`, `midnight`, `N <unit> ago`, `a year ago`, `N <unit> from now` (keeps the time),
///   `in N <unit>`, `N <unit> later`, `+N <unit>`, `-N <unit>`, `last|next week|month|year|day`
///   (a month or year lands on its first day), `last|this|next hour` (on the full hour).
/// * Anything else is [`TimeRangeError::ParseFail`].
pub fn parse_human_datetime(
    text: &str,
    now: NaiveDateTime,
) -> Result<NaiveDateTime, TimeRangeError> {
    if is_bare_period(text) {
        return Err(TimeRangeError::AmbiguousTime(text.to_string()));
    }
    if let Some(dt) = parse_absolute(text, now.year()) {
        return Ok(dt);
    }
    match parse_relative(text, drop_micros(now))? {
        Some(dt) => Ok(dt),
        None => Err(TimeRangeError::ParseFail(text.to_string())),
    }
}

/// Parses and evaluates one expression of the function language, e.g.
/// `DATEADD(DATETIME('2021-01-31'), 1, month)`.
///
/// As with pyparsing's `parseString`, text after the first complete expression is ignored.
pub fn eval_datetime_expression(
    expression: &str,
    now: NaiveDateTime,
) -> Result<NaiveDateTime, TimeRangeError> {
    let expr = Parser::new(expression).top()?;
    eval_date(&expr, now)
}

// ---------------------------------------------------------------------------------------------
// Shorthands and per-side phrases
// ---------------------------------------------------------------------------------------------

/// Rewrites the one-sided shorthands into `"<since> : <until>"`. The checks are
/// case-sensitive prefix checks, as in Superset ("last week" without a capital L is not a
/// shorthand and takes the legacy path).
fn rewrite_shorthand(range: &str, relative_start: Relative, relative_end: Relative) -> String {
    if range.contains(SEPARATOR) {
        return range.to_string();
    }
    if range.starts_with("Last") {
        return format!("{range}{SEPARATOR}{}", relative_end.as_str());
    }
    if range.starts_with("Next") {
        return format!("{}{SEPARATOR}{range}", relative_start.as_str());
    }
    // These always count from 'today', whatever relative_start says (as in Superset).
    for unit in ["WEEK", "MONTH", "QUARTER", "YEAR"] {
        if range.starts_with(&format!("previous calendar {}", unit.to_lowercase())) {
            return format!(
                "DATETRUNC(DATEADD(DATETIME('today'), -1, {unit}), {unit}){SEPARATOR}DATETRUNC(DATETIME('today'), {unit})"
            );
        }
    }
    for unit in ["DAY", "WEEK", "MONTH", "QUARTER", "YEAR"] {
        if range.starts_with(&format!("Current {}", unit.to_lowercase())) {
            return format!(
                "DATETRUNC(DATEADD(DATETIME('today'), 0, {unit}), {unit}){SEPARATOR}DATETRUNC(DATEADD(DATETIME('today'), 1, {unit}), {unit})"
            );
        }
    }
    range.to_string()
}

const SCOPES: [&str; 4] = ["this", "last", "next", "prior"];

/// Turns one (trimmed) side into an expression of the function language; `None` for an empty
/// side, which means unbounded.
fn side_expression(part: &str, relative_start: Relative) -> Option<String> {
    if part.is_empty() {
        return None;
    }
    let base = relative_start.as_str();
    let expr = match_boundary_phrase(part, base)
        .or_else(|| match_scope_phrase(part, base))
        .unwrap_or_else(|| {
            if is_function_text(part) {
                part.to_string()
            } else {
                format!("DATETIME('{part}')")
            }
        });
    Some(expr)
}

/// `^(start of|beginning of|end of)\s+(this|last|next|prior)\s+([0-9]+)?\s*(day|week|month|quarter|year)s?$`
fn match_boundary_phrase(part: &str, base: &str) -> Option<String> {
    let mut s = Scan::new(part);
    let modifier = s.eat_ci_any(&["start of", "beginning of", "end of"])?;
    if s.eat_ws() == 0 {
        return None;
    }
    let scope = s.eat_ci_any(&SCOPES)?;
    if s.eat_ws() == 0 {
        return None;
    }
    let delta = s.eat_digits();
    s.eat_ws();
    let unit = s.eat_ci_any(&["day", "week", "month", "quarter", "year"])?;
    s.eat_ci("s");
    if !s.at_end() {
        return None;
    }
    let inner = scope_expression(scope, delta, unit, base);
    let unit = unit.to_ascii_lowercase();
    // "end of" yields LASTDAY, whose grammar only takes year|month|week in Superset 6.0, so
    // "end of this quarter" fails to parse there too.
    Some(if modifier.eq_ignore_ascii_case("end of") {
        format!("LASTDAY({inner}, {unit})")
    } else {
        format!("DATETRUNC({inner}, {unit})")
    })
}

/// `^(this|last|next|prior)\s+([0-9]+)?\s*(second|minute|day|week|month|quarter|year)s?$`.
/// There is no `hour` here in Superset 6.0, so "last 3 hours" falls through to DATETIME(...).
fn match_scope_phrase(part: &str, base: &str) -> Option<String> {
    let mut s = Scan::new(part);
    let scope = s.eat_ci_any(&SCOPES)?;
    if s.eat_ws() == 0 {
        return None;
    }
    let delta = s.eat_digits();
    s.eat_ws();
    let unit = s.eat_ci_any(&[
        "second", "minute", "day", "week", "month", "quarter", "year",
    ])?;
    s.eat_ci("s");
    if !s.at_end() {
        return None;
    }
    Some(scope_expression(scope, delta, unit, base))
}

/// Superset's `handle_scope_and_unit`: `this` is the base itself, `last|prior` subtract N
/// units, `next` adds them (N defaults to 1).
fn scope_expression(scope: &str, delta: &str, unit: &str, base: &str) -> String {
    // Python's int() drops leading zeros; the digits are kept as text so that a huge number
    // reaches the evaluator (and fails there) instead of being silently truncated.
    let delta = match delta.trim_start_matches('0') {
        "" if delta.is_empty() => "1",
        "" => "0",
        digits => digits,
    };
    match scope.to_ascii_lowercase().as_str() {
        "this" => format!("DATETIME('{base}')"),
        "last" | "prior" => format!("DATEADD(DATETIME('{base}'), -{delta}, {unit})"),
        _ => format!("DATEADD(DATETIME('{base}'), {delta}, {unit})"),
    }
}

/// `^(DATETIME.*|DATEADD.*|DATETRUNC.*|LASTDAY.*|HOLIDAY.*)$`, case-insensitive; `.` stops at
/// a newline, so a multi-line side does not count.
fn is_function_text(part: &str) -> bool {
    let mut s = Scan::new(part);
    s.eat_ci_any(&["DATETIME", "DATEADD", "DATETRUNC", "LASTDAY", "HOLIDAY"])
        .is_some()
        && !part.contains('\n')
}

/// `^\s*([0-9]+)\s+(second|minute|hour|day|week|month|quarter|year)s?\s*$`, case-insensitive.
fn is_bare_period(text: &str) -> bool {
    let mut s = Scan::new(text);
    s.eat_ws();
    if s.eat_digits().is_empty() || s.eat_ws() == 0 {
        return false;
    }
    if s.eat_ci_any(&[
        "second", "minute", "hour", "day", "week", "month", "quarter", "year",
    ])
    .is_none()
    {
        return false;
    }
    s.eat_ci("s");
    s.eat_ws();
    s.at_end()
}

/// A cursor for the few fixed-shape patterns Superset matches with regular expressions.
struct Scan<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    fn new(s: &'a str) -> Self {
        Self { s, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    /// Consumes whitespace (Python's `\s` on str is Unicode-aware too); returns how many
    /// characters were eaten.
    fn eat_ws(&mut self) -> usize {
        let mut count = 0;
        for c in self.rest().chars() {
            if !c.is_whitespace() {
                break;
            }
            self.pos += c.len_utf8();
            count += 1;
        }
        count
    }

    fn eat_digits(&mut self) -> &'a str {
        let rest = self.rest();
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        self.pos += n;
        rest.get(..n).unwrap_or("")
    }

    /// ASCII case-insensitive literal; since the literal is ASCII, a match ends on a char
    /// boundary.
    fn eat_ci(&mut self, lit: &str) -> bool {
        let matched = self
            .rest()
            .as_bytes()
            .get(..lit.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(lit.as_bytes()));
        if matched {
            self.pos += lit.len();
        }
        matched
    }

    /// The first matching literal, returned as spelled in the input.
    fn eat_ci_any(&mut self, lits: &[&str]) -> Option<&'a str> {
        let start = self.pos;
        lits.iter()
            .find(|lit| self.eat_ci(lit))
            .and_then(|_| self.s.get(start..self.pos))
    }
}

// ---------------------------------------------------------------------------------------------
// The function language: AST and parser
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
}

impl Unit {
    fn keyword(self) -> &'static str {
        match self {
            Self::Year => "year",
            Self::Quarter => "quarter",
            Self::Month => "month",
            Self::Week => "week",
            Self::Day => "day",
            Self::Hour => "hour",
            Self::Minute => "minute",
            Self::Second => "second",
        }
    }

    /// parsedatetime keeps the time of day only for phrases in these units.
    fn is_time(self) -> bool {
        matches!(self, Self::Hour | Self::Minute | Self::Second)
    }
}

const ALL_UNITS: [Unit; 8] = [
    Unit::Year,
    Unit::Quarter,
    Unit::Month,
    Unit::Week,
    Unit::Day,
    Unit::Hour,
    Unit::Minute,
    Unit::Second,
];
const LASTDAY_UNITS: [Unit; 3] = [Unit::Year, Unit::Month, Unit::Week];
const DATEDIFF_UNITS: [Unit; 2] = [Unit::Year, Unit::Day];

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    DateTime(String),
    DateAdd(Box<Expr>, IntExpr, Unit),
    DateTrunc(Box<Expr>, Unit),
    LastDay(Box<Expr>, Unit),
    Holiday {
        name: String,
        date: Option<Box<Expr>>,
        country: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum IntExpr {
    Literal(i64),
    DateDiff(Box<Expr>, Box<Expr>, Option<Unit>),
}

/// Keywords of the date-valued functions, in pyparsing's alternative order.
const DATE_FUNCS: [&str; 5] = ["datetime", "dateadd", "datetrunc", "lastday", "holiday"];
const TOP_FUNCS: [&str; 6] = [
    "datetime",
    "dateadd",
    "datetrunc",
    "lastday",
    "holiday",
    "datediff",
];
const DATE_EXPR_EXPECTED: &str = "Expected {datetime | dateadd | datetrunc | lastday | holiday}";
const TOP_EXPECTED: &str =
    "Expected {datetime | dateadd | datetrunc | lastday | holiday | datediff}";
const INT_EXPECTED: &str = "Expected {int_operand | datediff}";

enum KeywordMatch {
    Matched(usize),
    FollowedByKeywordChar(usize),
    NoMatch,
}

/// Recursive-descent parser for the grammar of Superset's `datetime_parser()`:
///
/// ```text
/// date_expr := DATETIME '(' text ')'
///            | DATEADD '(' date_expr ',' int ',' unit [','] ')'
///            | DATETRUNC '(' date_expr ',' unit [','] ')'
///            | LASTDAY '(' date_expr ',' (year|month|week) [','] ')'
///            | HOLIDAY '(' text [','] [date_expr] [','] [text] [','] ')'
/// int       := [+-]digits | DATEDIFF '(' date_expr ',' date_expr [',' (year|day) [',']] ')'
/// unit      := year|quarter|month|week|day|hour|minute|second      (keywords: any case)
/// text      := '...' | "..."   (pyparsing quotedString; the quotes are stripped, nothing else)
/// ```
///
/// Positions are byte offsets into `src`; error messages convert them to character counts.
struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Self {
            src,
            pos: 0,
            depth: 0,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.src.as_bytes()
    }

    /// pyparsing's default whitespace.
    fn skip_ws(&mut self) {
        while matches!(
            self.bytes().get(self.pos),
            Some(b' ' | b'\t' | b'\n' | b'\r')
        ) {
            self.pos += 1;
        }
    }

    fn error(&self, at: usize, expected: &str) -> TimeRangeError {
        syntax_error(self.src, at, expected)
    }

    fn expect(&mut self, c: u8) -> Res<()> {
        self.skip_ws();
        if self.bytes().get(self.pos) == Some(&c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(self.pos, &format!("Expected '{}'", char::from(c))))
        }
    }

    fn optional(&mut self, c: u8) -> bool {
        let save = self.pos;
        self.skip_ws();
        if self.bytes().get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            self.pos = save;
            false
        }
    }

    /// pyparsing's `Optional(...)`: on failure nothing is consumed and the error is dropped.
    fn attempt<T>(&mut self, f: impl FnOnce(&mut Self) -> Res<T>) -> Option<T> {
        let (pos, depth) = (self.pos, self.depth);
        match f(self) {
            Ok(v) => Some(v),
            Err(_) => {
                self.pos = pos;
                self.depth = depth;
                None
            }
        }
    }

    /// `CaselessKeyword`: the word must not run on into another identifier character.
    fn keyword_at(&self, at: usize, kw: &str) -> KeywordMatch {
        let end = at + kw.len();
        match self.bytes().get(at..end) {
            Some(b) if b.eq_ignore_ascii_case(kw.as_bytes()) => match self.bytes().get(end) {
                Some(&c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                    KeywordMatch::FollowedByKeywordChar(end)
                }
                _ => KeywordMatch::Matched(end),
            },
            _ => KeywordMatch::NoMatch,
        }
    }

    /// A `MatchFirst` of keywords. Like pyparsing, the error is that of the alternative that
    /// got furthest, or the collective "Expected {...}" when all failed where they started.
    fn choose_keyword(&mut self, kws: &[&str], expected: &str) -> Res<usize> {
        self.skip_ws();
        let start = self.pos;
        let mut deepest: Option<(usize, &str)> = None;
        for (i, kw) in kws.iter().enumerate() {
            match self.keyword_at(start, kw) {
                KeywordMatch::Matched(end) => {
                    self.pos = end;
                    return Ok(i);
                }
                KeywordMatch::FollowedByKeywordChar(end) => {
                    if deepest.is_none_or(|(at, _)| end > at) {
                        deepest = Some((end, kw));
                    }
                }
                KeywordMatch::NoMatch => {}
            }
        }
        Err(match deepest {
            Some((at, kw)) => self.error(
                at,
                &format!(
                    "Expected CaselessKeyword '{kw}', was immediately followed by keyword character"
                ),
            ),
            None => self.error(start, expected),
        })
    }

    fn unit(&mut self, units: &[Unit]) -> Res<Unit> {
        let names: Vec<&str> = units.iter().map(|u| u.keyword()).collect();
        let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
        let expected = format!("Expected {{{}}}", quoted.join(" | "));
        let i = self.choose_keyword(&names, &expected)?;
        Ok(units[i])
    }

    /// The whole expression (`date_expr | datediff_func`); trailing text is ignored.
    fn top(&mut self) -> Res<Expr> {
        let which = self.choose_keyword(&TOP_FUNCS, TOP_EXPECTED)?;
        if which == DATE_FUNCS.len() {
            self.datediff_args()?;
            // Python would hand back an int here and fail later comparing it with a datetime.
            return Err(TimeRangeError::Syntax(
                "DATEDIFF evaluates to a number, not a datetime".to_string(),
            ));
        }
        self.date_func(which)
    }

    fn date_expr(&mut self) -> Res<Expr> {
        let which = self.choose_keyword(&DATE_FUNCS, DATE_EXPR_EXPECTED)?;
        self.date_func(which)
    }

    fn enter(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(TimeRangeError::Syntax(
                "Time expression is nested too deeply".to_string(),
            ));
        }
        Ok(())
    }

    /// The arguments of the function whose keyword (index into `DATE_FUNCS`) was just read.
    fn date_func(&mut self, which: usize) -> Res<Expr> {
        self.enter()?;
        self.expect(b'(')?;
        let expr = match which {
            0 => Expr::DateTime(self.text_operand()?),
            1 => {
                let base = self.date_expr()?;
                self.expect(b',')?;
                let delta = self.int_operand()?;
                self.expect(b',')?;
                let unit = self.unit(&ALL_UNITS)?;
                self.optional(b',');
                Expr::DateAdd(Box::new(base), delta, unit)
            }
            2 | 3 => {
                let base = self.date_expr()?;
                self.expect(b',')?;
                let unit = self.unit(if which == 2 {
                    &ALL_UNITS
                } else {
                    &LASTDAY_UNITS
                })?;
                self.optional(b',');
                if which == 2 {
                    Expr::DateTrunc(Box::new(base), unit)
                } else {
                    Expr::LastDay(Box::new(base), unit)
                }
            }
            _ => {
                let name = self.text_operand()?;
                self.optional(b',');
                let date = self.attempt(Self::date_expr);
                self.optional(b',');
                let country = self.attempt(Self::text_operand);
                self.optional(b',');
                Expr::Holiday {
                    name,
                    date: date.map(Box::new),
                    country,
                }
            }
        };
        self.expect(b')')?;
        self.depth -= 1;
        if let Expr::Holiday {
            date: None,
            country: Some(_),
            ..
        } = &expr
        {
            // Superset would take the country for the date and crash on `.year`.
            return Err(TimeRangeError::Syntax(
                "HOLIDAY needs a date expression before the country code".to_string(),
            ));
        }
        Ok(expr)
    }

    /// `signed_integer | datediff_func`.
    fn int_operand(&mut self) -> Res<IntExpr> {
        self.skip_ws();
        let start = self.pos;
        let bytes = self.bytes();
        let mut i = start;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let digits_start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i > digits_start {
            let text = self.src.get(start..i).unwrap_or("");
            // Python ints are unbounded; anything past i64 is far outside the datetime range.
            let value: i64 = text.parse().map_err(|_| TimeRangeError::OutOfRange)?;
            self.pos = i;
            return Ok(IntExpr::Literal(value));
        }
        match self.keyword_at(start, "datediff") {
            KeywordMatch::Matched(end) => {
                self.pos = end;
                self.datediff_args()
            }
            KeywordMatch::FollowedByKeywordChar(end) => Err(self.error(
                end,
                "Expected CaselessKeyword 'datediff', was immediately followed by keyword character",
            )),
            KeywordMatch::NoMatch => Err(self.error(start, INT_EXPECTED)),
        }
    }

    fn datediff_args(&mut self) -> Res<IntExpr> {
        self.enter()?;
        self.expect(b'(')?;
        let from = self.date_expr()?;
        self.expect(b',')?;
        let to = self.date_expr()?;
        // Optional(',' + (YEAR | DAY) + Optional(',')): all or nothing.
        let unit = self.attempt(|p| {
            p.expect(b',')?;
            let unit = p.unit(&DATEDIFF_UNITS)?;
            p.optional(b',');
            Ok(unit)
        });
        self.expect(b')')?;
        self.depth -= 1;
        Ok(IntExpr::DateDiff(Box::new(from), Box::new(to), unit))
    }

    /// pyparsing's `quotedString`: a greedy run of non-quote characters, doubled quotes and
    /// backslash escapes, then the closing quote (no backtracking). Only the outer quotes are
    /// stripped; escapes stay as written, as in Superset's `EvalText`.
    fn text_operand(&mut self) -> Res<String> {
        self.skip_ws();
        let start = self.pos;
        let bytes = self.bytes();
        let quote = match bytes.get(start) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(self.error(start, "Expected text_operand")),
        };
        let mut i = start + 1;
        loop {
            match bytes.get(i) {
                Some(&c) if c == quote => {
                    if bytes.get(i + 1) == Some(&quote) {
                        i += 2;
                    } else {
                        break;
                    }
                }
                None | Some(b'\n' | b'\r') => break,
                Some(b'\\') => match bytes.get(i + 1) {
                    None => break,
                    Some(b'x') => {
                        let hex = bytes
                            .get(i + 2..)
                            .unwrap_or(&[])
                            .iter()
                            .take_while(|b| b.is_ascii_hexdigit())
                            .count();
                        if hex == 0 {
                            break;
                        }
                        i += 2 + hex;
                    }
                    Some(_) => i += 2,
                },
                Some(_) => i += 1,
            }
        }
        if bytes.get(i) == Some(&quote) {
            let text = self.src.get(start + 1..i).unwrap_or("").to_string();
            self.pos = i + 1;
            Ok(text)
        } else {
            Err(self.error(i, "Expected text_operand"))
        }
    }
}

/// Formats a syntax error like pyparsing's `ParseException.__str__`.
fn syntax_error(src: &str, at: usize, expected: &str) -> TimeRangeError {
    // Error positions are always ASCII or the end, but stay panic-free regardless.
    let mut at = at.min(src.len());
    while !src.is_char_boundary(at) {
        at -= 1;
    }
    let (before, after) = src.split_at(at);
    let loc = before.chars().count();
    let line = before.matches('\n').count() + 1;
    let col = match before.rfind('\n') {
        Some(nl) => loc - before[..nl].chars().count(),
        None => loc + 1,
    };
    let found = if after.is_empty() {
        "end of text".to_string()
    } else {
        let word: String = after
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .take(16)
            .collect();
        let token = if word.is_empty() {
            after.chars().next().map(String::from).unwrap_or_default()
        } else {
            word
        };
        // pyparsing: `repr(found).replace(r"\\", "\\")`, so a backslash shows unescaped.
        liteset_pyrepr::str(&token).replace("\\\\", "\\")
    };
    TimeRangeError::Syntax(format!(
        "{expected}, found {found}  (at char {loc}), (line:{line}, col:{col})"
    ))
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

fn eval_date(expr: &Expr, now: NaiveDateTime) -> Res<NaiveDateTime> {
    match expr {
        Expr::DateTime(text) => parse_human_datetime(text, now),
        Expr::DateAdd(base, delta, unit) => {
            let dt = eval_date(base, now)?;
            let n = eval_int(delta, now)?;
            add_units(dt, n, *unit)
        }
        Expr::DateTrunc(base, unit) => truncate(eval_date(base, now)?, *unit),
        Expr::LastDay(base, unit) => last_day(eval_date(base, now)?, *unit),
        Expr::Holiday {
            name,
            date,
            country,
        } => {
            let year = match date {
                Some(d) => eval_date(d, now)?.year(),
                None => now.year(),
            };
            holiday(name, year, country.as_deref().unwrap_or("US"))
        }
    }
}

fn eval_int(expr: &IntExpr, now: NaiveDateTime) -> Res<i64> {
    match expr {
        IntExpr::Literal(n) => Ok(*n),
        IntExpr::DateDiff(from, to, unit) => {
            // Superset evaluates the second argument first.
            let to = eval_date(to, now)?;
            let from = eval_date(from, now)?;
            if *unit == Some(Unit::Year) {
                return Ok(i64::from(to.year() - from.year()));
            }
            // timedelta.days floors (a span of minus one second is -1 day).
            let micros = (to - from)
                .num_microseconds()
                .ok_or(TimeRangeError::OutOfRange)?;
            Ok(micros.div_euclid(86_400_000_000))
        }
    }
}

/// `DATETRUNC`: everything below `unit` is zeroed; weeks start on Monday.
fn truncate(dt: NaiveDateTime, unit: Unit) -> Res<NaiveDateTime> {
    let date = dt.date();
    let first_of = |month: u32| NaiveDate::from_ymd_opt(dt.year(), month, 1).map(midnight);
    let out = match unit {
        Unit::Year => first_of(1),
        Unit::Quarter => first_of(3 * ((dt.month() - 1) / 3) + 1),
        Unit::Month => first_of(dt.month()),
        Unit::Week => date
            .checked_sub_days(Days::new(u64::from(dt.weekday().num_days_from_monday())))
            .map(midnight),
        Unit::Day => Some(midnight(date)),
        Unit::Hour => date.and_hms_opt(dt.hour(), 0, 0),
        Unit::Minute => date.and_hms_opt(dt.hour(), dt.minute(), 0),
        Unit::Second => Some(drop_micros(dt)),
    };
    out.ok_or(TimeRangeError::OutOfRange).and_then(python_range)
}

/// `LASTDAY`: the last day of the year, month or (Monday-based) week, at midnight. The grammar
/// only lets year|month|week through; quarter and day are handled as later Superset versions do.
fn last_day(dt: NaiveDateTime, unit: Unit) -> Res<NaiveDateTime> {
    let out = match unit {
        Unit::Year => NaiveDate::from_ymd_opt(dt.year(), 12, 31),
        Unit::Quarter => last_day_of_month(dt.year(), 3 * ((dt.month() - 1) / 3) + 3),
        Unit::Month => last_day_of_month(dt.year(), dt.month()),
        Unit::Week => {
            let monday = dt
                .date()
                .checked_sub_days(Days::new(u64::from(dt.weekday().num_days_from_monday())));
            monday.and_then(|d| d.checked_add_days(Days::new(6)))
        }
        Unit::Day | Unit::Hour | Unit::Minute | Unit::Second => Some(dt.date()),
    };
    out.map(midnight)
        .ok_or(TimeRangeError::OutOfRange)
        .and_then(python_range)
}

/// Adds `n` units; months, quarters and years clamp the day to the target month's length
/// (parsedatetime's `inc`), the rest is plain duration arithmetic.
fn add_units(dt: NaiveDateTime, n: i64, unit: Unit) -> Res<NaiveDateTime> {
    let delta = |f: fn(i64) -> Option<TimeDelta>| f(n).and_then(|d| dt.checked_add_signed(d));
    let out = match unit {
        Unit::Year => {
            return n
                .checked_mul(12)
                .map_or(Err(TimeRangeError::OutOfRange), |m| add_months(dt, m));
        }
        Unit::Quarter => {
            return n
                .checked_mul(3)
                .map_or(Err(TimeRangeError::OutOfRange), |m| add_months(dt, m));
        }
        Unit::Month => return add_months(dt, n),
        Unit::Week => delta(TimeDelta::try_weeks),
        Unit::Day => delta(TimeDelta::try_days),
        Unit::Hour => delta(TimeDelta::try_hours),
        Unit::Minute => delta(TimeDelta::try_minutes),
        Unit::Second => delta(TimeDelta::try_seconds),
    };
    out.ok_or(TimeRangeError::OutOfRange).and_then(python_range)
}

fn add_months(dt: NaiveDateTime, months: i64) -> Res<NaiveDateTime> {
    let count = u32::try_from(months.unsigned_abs()).map_err(|_| TimeRangeError::OutOfRange)?;
    let out = if months >= 0 {
        dt.checked_add_months(Months::new(count))
    } else {
        dt.checked_sub_months(Months::new(count))
    };
    out.ok_or(TimeRangeError::OutOfRange).and_then(python_range)
}

/// Python datetimes only span years 1 to 9999; leaving that range is an error there.
fn python_range(dt: NaiveDateTime) -> Res<NaiveDateTime> {
    if (1..=9999).contains(&dt.year()) {
        Ok(dt)
    } else {
        Err(TimeRangeError::OutOfRange)
    }
}

fn midnight(date: NaiveDate) -> NaiveDateTime {
    date.and_time(NaiveTime::MIN)
}

fn drop_micros(dt: NaiveDateTime) -> NaiveDateTime {
    dt.with_nanosecond(0).unwrap_or(dt)
}

fn last_day_of_month(year: i32, month: u32) -> Option<NaiveDate> {
    let (y, m) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(y, m, 1)?.pred_opt()
}

// ---------------------------------------------------------------------------------------------
// HOLIDAY
// ---------------------------------------------------------------------------------------------

/// `HOLIDAY(name, year, country)`: the first holiday whose name starts with `name`
/// (case-insensitive), in the order the `holidays` package lists them, at midnight.
fn holiday(name: &str, year: i32, country: &str) -> Res<NaiveDateTime> {
    // The `holidays` package knows ~150 countries; only the US federal calendar is built in.
    if country != "US" {
        return Err(TimeRangeError::CountryNotAvailable(country.to_string()));
    }
    let wanted = name.to_lowercase();
    us_holidays(year)
        .into_iter()
        .find(|(holiday, _)| holiday.to_lowercase().starts_with(&wanted))
        .map(|(_, date)| midnight(date))
        .ok_or_else(|| TimeRangeError::HolidayNotFound(name.to_string()))
}

/// US federal holidays (not observed-day shifted) as the `holidays` package lists them, in its
/// order, which decides ambiguous prefixes ("c" is Christmas, not Columbus).
fn us_holidays(year: i32) -> Vec<(&'static str, NaiveDate)> {
    let ymd = |m: u32, d: u32| NaiveDate::from_ymd_opt(year, m, d);
    let nth = |m: u32, wd: Weekday, n: u8| NaiveDate::from_weekday_of_month_opt(year, m, wd, n);
    let last = |m: u32, wd: Weekday| {
        let end = last_day_of_month(year, m)?;
        let back = (7 + end.weekday().num_days_from_monday() - wd.num_days_from_monday()) % 7;
        end.checked_sub_days(Days::new(u64::from(back)))
    };
    let uniform_monday = year >= 1971; // Uniform Monday Holiday Act
    let memorial = if uniform_monday {
        last(5, Weekday::Mon)
    } else {
        ymd(5, 30)
    };
    let washington = if uniform_monday {
        nth(2, Weekday::Mon, 3)
    } else {
        ymd(2, 22)
    };
    let columbus = if uniform_monday {
        nth(10, Weekday::Mon, 2)
    } else {
        ymd(10, 12)
    };
    let veterans = if (1971..=1977).contains(&year) {
        nth(10, Weekday::Mon, 4)
    } else {
        ymd(11, 11)
    };
    let thanksgiving = match year {
        1942.. => nth(11, Weekday::Thu, 4),
        1939..=1941 => last(11, Weekday::Thu).and_then(|d| d.checked_sub_days(Days::new(7))),
        _ => last(11, Weekday::Thu),
    };
    let entries: Vec<(bool, &'static str, Option<NaiveDate>)> = if uniform_monday {
        vec![
            (true, "New Year's Day", ymd(1, 1)),
            (true, "Memorial Day", memorial),
            (
                year >= 2021,
                "Juneteenth National Independence Day",
                ymd(6, 19),
            ),
            (true, "Independence Day", ymd(7, 4)),
            (true, "Labor Day", nth(9, Weekday::Mon, 1)),
            (true, "Thanksgiving Day", thanksgiving),
            (true, "Christmas Day", ymd(12, 25)),
            (
                year >= 1986,
                "Martin Luther King Jr. Day",
                nth(1, Weekday::Mon, 3),
            ),
            (true, "Washington's Birthday", washington),
            (true, "Columbus Day", columbus),
            (true, "Veterans Day", veterans),
        ]
    } else {
        vec![
            (year >= 1871, "New Year's Day", ymd(1, 1)),
            (year >= 1870, "Independence Day", ymd(7, 4)),
            (year >= 1894, "Labor Day", nth(9, Weekday::Mon, 1)),
            (year >= 1862, "Thanksgiving Day", thanksgiving),
            (year >= 1870, "Christmas Day", ymd(12, 25)),
            (year >= 1888, "Memorial Day", memorial),
            (year >= 1879, "Washington's Birthday", washington),
            (year >= 1937, "Columbus Day", columbus),
            ((1938..=1953).contains(&year), "Armistice Day", veterans),
            (year >= 1954, "Veterans Day", veterans),
        ]
    };
    entries
        .into_iter()
        .filter_map(|(observed, name, date)| date.filter(|_| observed).map(|d| (name, d)))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// DATETIME('...') text: absolute forms (python-dateutil)
// ---------------------------------------------------------------------------------------------

fn parse_absolute(text: &str, default_year: i32) -> Option<NaiveDateTime> {
    let s = text.trim();
    if s.is_empty() {
        return None;
    }
    parse_numeric_date(s)
        .or_else(|| parse_month_name_date(s, default_year))
        .or_else(|| {
            // A bare time lands on dateutil's default date, January 1st of the current year.
            let (time, offset) = parse_clock(s, false)?;
            combine(NaiveDate::from_ymd_opt(default_year, 1, 1)?, time, offset)
        })
        .or_else(|| {
            // A bare day number: dateutil fills in January of the current year.
            let day: u32 = s
                .parse()
                .ok()
                .filter(|_| s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit()))?;
            NaiveDate::from_ymd_opt(default_year, 1, day).map(midnight)
        })
}

fn split_digits(s: &str) -> (&str, &str) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    s.split_at(n)
}

fn ymd(year: &str, month: &str, day: &str) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(year.parse().ok()?, month.parse().ok()?, day.parse().ok()?)
}

/// `2021-01-05`, `2021/1/5`, `2021.01.05`, `2021-01`, `2021`, `20210105`, `01/05/2021`, each
/// optionally followed by a time and a zone.
fn parse_numeric_date(s: &str) -> Option<NaiveDateTime> {
    let (first, rest) = split_digits(s);
    let starts_digit = |r: &str| r.starts_with(|c: char| c.is_ascii_digit());
    let (date, rest) = match first.len() {
        4 => match rest.chars().next() {
            Some(sep @ ('-' | '/' | '.')) if starts_digit(&rest[1..]) => {
                let (month, after_month) = split_digits(&rest[1..]);
                if month.len() > 2 {
                    return None;
                }
                match after_month.strip_prefix(sep).filter(|r| starts_digit(r)) {
                    Some(after_sep) => {
                        let (day, after_day) = split_digits(after_sep);
                        if day.len() > 2 {
                            return None;
                        }
                        (ymd(first, month, day)?, after_day)
                    }
                    None => (ymd(first, month, "1")?, after_month),
                }
            }
            _ => (ymd(first, "1", "1")?, rest),
        },
        8 => (ymd(&first[..4], &first[4..6], &first[6..])?, rest),
        1 | 2 => {
            let sep = rest
                .chars()
                .next()
                .filter(|c| matches!(c, '-' | '/' | '.'))?;
            let (day, after_day) = split_digits(&rest[1..]);
            let (year, after_year) = split_digits(after_day.strip_prefix(sep)?);
            if !(1..=2).contains(&day.len()) || year.len() != 4 {
                return None;
            }
            (ymd(year, first, day)?, after_year)
        }
        _ => return None,
    };
    let (time, offset) = if rest.is_empty() {
        (NaiveTime::MIN, TimeDelta::zero())
    } else if let Some(clock) = rest.strip_prefix(['T', 't']) {
        parse_clock(clock, true)?
    } else if rest.starts_with(char::is_whitespace) {
        parse_clock(rest.trim_start(), false)?
    } else {
        return None;
    };
    combine(date, time, offset)
}

/// Dates with a month name: `Jan 5 2021`, `January 5, 2021`, `5 Jan`, `2021 Jan 5`,
/// `January 2021`, optionally followed by a time.
fn parse_month_name_date(s: &str, default_year: i32) -> Option<NaiveDateTime> {
    let tokens: Vec<&str> = s
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .collect();
    let split = tokens
        .iter()
        .position(|t| t.contains(':'))
        .unwrap_or(tokens.len());
    let (mut year, mut month, mut day) = (None, None, None);
    for token in &tokens[..split] {
        let (digits, suffix) = split_digits(token);
        let slot = if let Some(m) = month_number(token) {
            (&mut month, m)
        } else if digits.len() == 4 && suffix.is_empty() {
            (&mut year, digits.parse().ok()?)
        } else if (1..=2).contains(&digits.len())
            && matches!(
                suffix.to_ascii_lowercase().as_str(),
                "" | "st" | "nd" | "rd" | "th"
            )
        {
            (&mut day, digits.parse().ok()?)
        } else {
            return None;
        };
        if slot.0.replace(slot.1).is_some() {
            return None;
        }
    }
    let date = NaiveDate::from_ymd_opt(
        year.map_or(Some(default_year), |y: u32| i32::try_from(y).ok())?,
        month?,
        day.unwrap_or(1),
    )?;
    let (time, offset) = if split < tokens.len() {
        parse_clock(&tokens[split..].join(" "), false)?
    } else {
        (NaiveTime::MIN, TimeDelta::zero())
    };
    combine(date, time, offset)
}

fn month_number(token: &str) -> Option<u32> {
    let t = token.trim_end_matches('.').to_ascii_lowercase();
    let m = match t.as_str() {
        "jan" | "january" => 1,
        "feb" | "february" => 2,
        "mar" | "march" => 3,
        "apr" | "april" => 4,
        "may" => 5,
        "jun" | "june" => 6,
        "jul" | "july" => 7,
        "aug" | "august" => 8,
        "sep" | "sept" | "september" => 9,
        "oct" | "october" => 10,
        "nov" | "november" => 11,
        "dec" | "december" => 12,
        _ => return None,
    };
    Some(m)
}

/// `H:MM[:SS[.ffffff]]` (or `HHMM[SS]` right after a `T`), then optional `am`/`pm`, then an
/// optional zone (`Z`, `UTC`, `GMT`, `+HH`, `+HHMM`, `+HH:MM`). Returns the time and the zone's
/// offset from UTC.
fn parse_clock(s: &str, compact_ok: bool) -> Option<(NaiveTime, TimeDelta)> {
    let (hour_digits, rest) = split_digits(s);
    let (mut hour, minute, second, micro, rest): (u32, u32, u32, u32, &str) =
        if let Some(after) = rest.strip_prefix(':') {
            if !(1..=2).contains(&hour_digits.len()) {
                return None;
            }
            let (min_digits, rest) = split_digits(after);
            if min_digits.len() != 2 {
                return None;
            }
            let (second, micro, rest) = match rest.strip_prefix(':') {
                Some(after) => {
                    let (sec_digits, rest) = split_digits(after);
                    if sec_digits.len() != 2 {
                        return None;
                    }
                    let (micro, rest) = match rest.strip_prefix('.') {
                        Some(frac) => {
                            let (frac_digits, rest) = split_digits(frac);
                            if frac_digits.is_empty() {
                                return None;
                            }
                            // dateutil keeps six digits and drops the rest.
                            let six: String = frac_digits
                                .chars()
                                .chain(std::iter::repeat('0'))
                                .take(6)
                                .collect();
                            (six.parse().ok()?, rest)
                        }
                        None => (0, rest),
                    };
                    (sec_digits.parse().ok()?, micro, rest)
                }
                None => (0, 0, rest),
            };
            (
                hour_digits.parse().ok()?,
                min_digits.parse().ok()?,
                second,
                micro,
                rest,
            )
        } else if compact_ok && matches!(hour_digits.len(), 4 | 6) {
            let second = hour_digits.get(4..6).map_or(Some(0), |d| d.parse().ok())?;
            (
                hour_digits[..2].parse().ok()?,
                hour_digits[2..4].parse().ok()?,
                second,
                0,
                rest,
            )
        } else {
            return None;
        };

    let mut rest = rest.trim_start();
    let meridiem = ["am", "pm"].into_iter().find(|m| {
        rest.get(..2).is_some_and(|p| p.eq_ignore_ascii_case(m))
            && !rest[2..].starts_with(|c: char| c.is_ascii_alphanumeric())
    });
    if let Some(m) = meridiem {
        if !(1..=12).contains(&hour) {
            return None;
        }
        hour = match (m, hour) {
            ("am", 12) => 0,
            ("pm", h) if h < 12 => h + 12,
            (_, h) => h,
        };
        rest = rest[2..].trim_start();
    }

    let offset = parse_zone(rest.trim_end())?;
    Some((
        NaiveTime::from_hms_micro_opt(hour, minute, second, micro)?,
        offset,
    ))
}

fn parse_zone(zone: &str) -> Option<TimeDelta> {
    if zone.is_empty()
        || ["z", "utc", "gmt"]
            .iter()
            .any(|z| zone.eq_ignore_ascii_case(z))
    {
        return Some(TimeDelta::zero());
    }
    let (sign, digits) = match zone.chars().next()? {
        '+' => (1, &zone[1..]),
        '-' => (-1, &zone[1..]),
        _ => return None,
    };
    if !digits.is_ascii() {
        return None;
    }
    let (hours, minutes) = match (digits.len(), digits.as_bytes().get(2)) {
        (2, _) => (digits, "0"),
        (4, _) => (&digits[..2], &digits[2..]),
        (5, Some(b':')) => (&digits[..2], &digits[3..]),
        _ => return None,
    };
    if !hours
        .bytes()
        .chain(minutes.bytes())
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let minutes: i64 = hours.parse::<i64>().ok()? * 60 + minutes.parse::<i64>().ok()?;
    TimeDelta::try_minutes(sign * minutes)
}

/// Joins a local date and time; a zone offset is removed so the result is UTC wall clock
/// (dateutil would return an aware datetime, which Superset cannot compare with naive ones).
fn combine(date: NaiveDate, time: NaiveTime, offset: TimeDelta) -> Option<NaiveDateTime> {
    date.and_time(time)
        .checked_sub_signed(offset)
        .and_then(|dt| python_range(dt).ok())
}

// ---------------------------------------------------------------------------------------------
// DATETIME('...') text: relative phrases (parsedatetime)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sign {
    Plus,
    Minus,
    None,
}

/// A count word: `a`/`an`, or digits with an optional sign. `Ok(None)` when it is not a count.
fn parse_count(word: &str) -> Res<Option<(i64, Sign)>> {
    if word == "a" || word == "an" {
        return Ok(Some((1, Sign::None)));
    }
    let (sign, digits) = match word.as_bytes().first() {
        Some(b'+') => (Sign::Plus, &word[1..]),
        Some(b'-') => (Sign::Minus, &word[1..]),
        _ => (Sign::None, word),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let magnitude: i64 = digits.parse().map_err(|_| TimeRangeError::OutOfRange)?;
    Ok(Some((magnitude, sign)))
}

/// parsedatetime's unit words (as far as they behave; "hrs", "wks" and "yrs" it does not know).
fn phrase_unit(word: &str) -> Option<Unit> {
    let unit = match word {
        "second" | "seconds" | "sec" | "secs" | "s" => Unit::Second,
        "minute" | "minutes" | "min" | "mins" | "m" => Unit::Minute,
        "hour" | "hours" | "hr" | "h" => Unit::Hour,
        "day" | "days" | "d" => Unit::Day,
        "week" | "weeks" | "wk" | "w" => Unit::Week,
        "month" | "months" | "mth" => Unit::Month,
        "year" | "years" | "yr" | "y" => Unit::Year,
        _ => return None,
    };
    Some(unit)
}

/// The relative phrases of parsedatetime that Superset users meet. `now` is already without
/// microseconds. `Ok(None)` means "not a phrase we know".
fn parse_relative(text: &str, now: NaiveDateTime) -> Res<Option<NaiveDateTime>> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let today = now.date();
    let day_offset = |days: i64| {
        TimeDelta::try_days(days)
            .and_then(|d| today.checked_add_signed(d))
            .map(midnight)
            .ok_or(TimeRangeError::OutOfRange)
    };

    match words.as_slice() {
        ["now"] => return Ok(Some(now)),
        ["today"] | ["midnight"] => return Ok(Some(midnight(today))),
        ["noon"] => return Ok(today.and_hms_opt(12, 0, 0)),
        // The only "this <unit>" that reaches DATETIME(): the side pattern has no `hour`.
        ["this", "hour" | "hours"] => return truncate(now, Unit::Hour).map(Some),
        ["yesterday"] => return day_offset(-1).map(Some),
        ["tomorrow"] => return day_offset(1).map(Some),
        [modifier @ ("last" | "prior" | "next"), unit] => {
            let step = if *modifier == "next" { 1 } else { -1 };
            // parsedatetime anchors these: a month or year lands on its first day, an hour on
            // the full hour; minutes, seconds and quarters it does not understand.
            return match *unit {
                "day" | "days" => day_offset(step).map(Some),
                "week" | "weeks" => day_offset(7 * step).map(Some),
                "month" | "months" => {
                    let first =
                        NaiveDate::from_ymd_opt(today.year(), today.month(), 1).map(midnight);
                    first.map(|d| add_months(d, step)).transpose()
                }
                "year" | "years" => {
                    let first = NaiveDate::from_ymd_opt(today.year(), 1, 1).map(midnight);
                    first.map(|d| add_months(d, 12 * step)).transpose()
                }
                "hour" | "hours" => {
                    let full_hour = truncate(now, Unit::Hour)?;
                    add_units(full_hour, step, Unit::Hour).map(Some)
                }
                _ => Ok(None),
            };
        }
        _ => {}
    }

    // (count, unit, sign applied to the count, keep the time of day although the unit is a date unit)
    let (count, unit, direction, from_now) = match words.as_slice() {
        // parsedatetime ignores the modifier in "last 3 days" and counts forward: this is why
        // "Last 3 hours" (no `hour` in Superset 6.0's phrase pattern) ends up after its
        // upper bound and fails with "From date cannot be larger than to date".
        ["last" | "prior" | "next" | "this", count, unit]
            if count.bytes().all(|b| b.is_ascii_digit()) =>
        {
            (*count, *unit, 1, false)
        }
        [count, unit, "ago"] => (*count, *unit, -1, false),
        [count, unit, "later"] | ["in", count, unit] => (*count, *unit, 0, false),
        [count, unit, "from", "now"] => (*count, *unit, 0, true),
        [count, unit, "from", "today"] => (*count, *unit, 0, false),
        [count, unit] => (*count, *unit, 0, false),
        _ => return Ok(None),
    };
    let Some(unit) = phrase_unit(unit) else {
        return Ok(None);
    };
    let Some((magnitude, sign)) = parse_count(count)? else {
        return Ok(None);
    };
    let n = match (direction, sign) {
        (-1, _) | (0, Sign::Minus) => -magnitude,
        _ => magnitude,
    };
    let dt = add_units(now, n, unit)?;
    Ok(Some(if unit.is_time() || from_now {
        dt
    } else {
        midnight(dt.date())
    }))
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-29 14:35:12.345678, a Sunday.
    fn now() -> NaiveDateTime {
        dt("2026-11-29 14:35:12.345678")
    }

    fn dt(s: &str) -> NaiveDateTime {
        ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M"]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
            .or_else(|| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().map(midnight))
            .unwrap_or_else(|| panic!("bad test datetime {s}"))
    }

    fn run(
        range: &str,
        start: Relative,
        end: Relative,
        time_shift: Option<&str>,
    ) -> Result<TimeRange, TimeRangeError> {
        get_since_until(Some(range), time_shift, start, end, now())
    }

    fn show(r: &Result<TimeRange, TimeRangeError>) -> String {
        match r {
            Ok(TimeRange { since, until }) => {
                let f = |d: &Option<NaiveDateTime>| {
                    d.map_or("-".to_string(), |d| {
                        d.format("%Y-%m-%d %H:%M:%S%.f").to_string()
                    })
                };
                format!("{} .. {}", f(since), f(until))
            }
            Err(e) => format!("ERR {e}"),
        }
    }

    const T: Relative = Relative::Today;
    const N: Relative = Relative::Now;

    /// (time_range, relative_start, relative_end, time_shift, expected) with now = 2026-11-29
    /// 14:35:12.345678 (a Sunday); expected is "since .. until" ("-" = unbounded) or
    /// "ERR <message>". Each row was cross-checked against Superset's own date_parser.
    #[rustfmt::skip]
    const TABLE: &[(&str, Relative, Relative, Option<&str>, &str)] = &[
        // The examples of the contract (§5.2).
        ("Last day", T, T, None, "2026-11-28 00:00:00 .. 2026-11-29 00:00:00"),
        ("Last week", T, T, None, "2026-11-22 00:00:00 .. 2026-11-29 00:00:00"),
        ("Last month", T, T, None, "2026-10-29 00:00:00 .. 2026-11-29 00:00:00"),
        ("Last quarter", T, T, None, "2026-08-29 00:00:00 .. 2026-11-29 00:00:00"),
        ("Last year", T, T, None, "2025-11-29 00:00:00 .. 2026-11-29 00:00:00"),
        ("previous calendar week", T, T, None, "2026-11-16 00:00:00 .. 2026-11-23 00:00:00"),
        ("Current month", T, T, None, "2026-11-01 00:00:00 .. 2026-12-01 00:00:00"),
        ("2021-01-01 : 2021-02-01", T, T, None, "2021-01-01 00:00:00 .. 2021-02-01 00:00:00"),
        (r#"DATEADD(DATETIME("2021-01-31"), 1, month) : DATETRUNC(DATETIME("2021-05-17"), quarter)"#,
            T, T, None, "2021-02-28 00:00:00 .. 2021-04-01 00:00:00"),
        ("start of this month : end of this month", T, T, None,
            "2026-11-01 00:00:00 .. 2026-11-30 00:00:00"),
        ("1 year ago : now", T, T, None, "2025-11-29 00:00:00 .. 2026-11-29 14:35:12"),
        // Other shorthands.
        ("Next week", T, T, None, "2026-11-29 00:00:00 .. 2026-12-06 00:00:00"),
        ("Next quarter", T, T, None, "2026-11-29 00:00:00 .. 2027-02-28 00:00:00"),
        ("Last 2 weeks", T, T, None, "2026-11-15 00:00:00 .. 2026-11-29 00:00:00"),
        ("previous calendar month", T, T, None, "2026-10-01 00:00:00 .. 2026-11-01 00:00:00"),
        ("previous calendar quarter", T, T, None, "2026-07-01 00:00:00 .. 2026-10-01 00:00:00"),
        ("previous calendar year", T, T, None, "2025-01-01 00:00:00 .. 2026-01-01 00:00:00"),
        ("previous calendar week", N, N, None, "2026-11-16 00:00:00 .. 2026-11-23 00:00:00"),
        ("Current day", T, T, None, "2026-11-29 00:00:00 .. 2026-11-30 00:00:00"),
        ("Current week", T, T, None, "2026-11-23 00:00:00 .. 2026-11-30 00:00:00"),
        ("Current quarter", T, T, None, "2026-10-01 00:00:00 .. 2027-01-01 00:00:00"),
        ("Current year", T, T, None, "2026-01-01 00:00:00 .. 2027-01-01 00:00:00"),
        ("No filter", T, T, None, "- .. -"),
        // Superset's legacy path: no " : " and no known shorthand gives (None, relative_end).
        ("last week", T, T, None, "- .. 2026-11-29 00:00:00"),
        ("foo", N, N, None, "- .. 2026-11-29 14:35:12"),
        // One-sided ranges and times of day.
        ("2024-12-15 : ", T, T, None, "2024-12-15 00:00:00 .. -"),
        (" : 2023-01-05", T, T, None, "- .. 2023-01-05 00:00:00"),
        ("2024-03-01T06:00:00 : 2024-03-02T12:30:00", T, T, None,
            "2024-03-01 06:00:00 .. 2024-03-02 12:30:00"),
        ("2024-03-01 06:00 : 2024-03-02 12:30:00.25", T, T, None,
            "2024-03-01 06:00:00 .. 2024-03-02 12:30:00.250"),
        ("Jan 5 2021 : March 2021", T, T, None, "2021-01-05 00:00:00 .. 2021-03-01 00:00:00"),
        ("01/05/2021 : 20210105T101010", T, T, None, "2021-01-05 00:00:00 .. 2021-01-05 10:10:10"),
        ("2021-01-01T06:00:00+02:00 : 2021-01-01 10:30 pm", T, T, None,
            "2021-01-01 04:00:00 .. 2021-01-01 22:30:00"),
        // relative_start / relative_end = now.
        ("Last week", T, N, None, "2026-11-22 00:00:00 .. 2026-11-29 14:35:12"),
        ("Next week", N, T, None, "2026-11-29 14:35:12 .. 2026-12-06 14:35:12"),
        ("Last 3 days", N, N, None, "2026-11-26 14:35:12 .. 2026-11-29 14:35:12"),
        ("last 5 seconds : this second", N, T, None, "2026-11-29 14:35:07 .. 2026-11-29 14:35:12"),
        // Per-side phrases.
        ("start of last 2 quarters : end of next year", T, T, None,
            "2026-04-01 00:00:00 .. 2027-12-31 00:00:00"),
        ("beginning of prior week : end of this week", T, T, None,
            "2026-11-16 00:00:00 .. 2026-11-29 00:00:00"),
        ("LAST WEEK : TODAY", T, T, None, "2026-11-22 00:00:00 .. 2026-11-29 00:00:00"),
        ("THIS QUARTER : Next Quarter", T, T, None, "2026-11-29 00:00:00 .. 2027-02-28 00:00:00"),
        ("yesterday : tomorrow", T, T, None, "2026-11-28 00:00:00 .. 2026-11-30 00:00:00"),
        ("last week : now", T, T, None, "2026-11-22 00:00:00 .. 2026-11-29 14:35:12"),
        ("next hour : next day", T, T, None, "2026-11-29 15:00:00 .. 2026-11-30 00:00:00"),
        ("Last hour", T, N, None, "2026-11-29 13:00:00 .. 2026-11-29 14:35:12"),
        ("3 days from now : 1 week from now", T, T, None,
            "2026-12-02 14:35:12 .. 2026-12-06 14:35:12"),
        ("DATETIME('2 weeks ago') : DATETIME('3 hours ago')", T, T, None,
            "2026-11-15 00:00:00 .. 2026-11-29 11:35:12"),
        // The function language.
        ("DATEADD(DATETIME('2020-01-01'), DATEDIFF(DATETIME('2020-01-01'), DATETIME('2020-01-11')), day) : now",
            T, T, None, "2020-01-11 00:00:00 .. 2026-11-29 14:35:12"),
        ("DATEADD ( DATETIME ( '2020-01-01' ) , +1 , day , ) : now", T, T, None,
            "2020-01-02 00:00:00 .. 2026-11-29 14:35:12"),
        ("DATETRUNC(DATETIME('2024-02-10 10:11:12.7'), week) : DATETRUNC(DATETIME('2024-02-10 10:11:12.7'), day)",
            T, T, None, "2024-02-05 00:00:00 .. 2024-02-10 00:00:00"),
        ("DATETIME('2020-01-01') trailing junk : now", T, T, None,
            "2020-01-01 00:00:00 .. 2026-11-29 14:35:12"),
        ("HOLIDAY('christmas') : HOLIDAY('thanksgiving', DATETIME('2027-01-01'))", T, T, None,
            "2026-12-25 00:00:00 .. 2027-11-25 00:00:00"),
        ("HOLIDAY('new year') : HOLIDAY(\"independence day\", DATETIME('today'), 'US')", T, T, None,
            "2026-01-01 00:00:00 .. 2026-07-04 00:00:00"),
        // time_shift moves both bounds.
        ("Last week", T, T, Some("1 year ago"), "2025-11-22 00:00:00 .. 2025-11-29 00:00:00"),
        ("Last week", T, T, Some("52 weeks ago"), "2025-11-23 00:00:00 .. 2025-11-30 00:00:00"),
        ("2024-02-29 : 2024-03-31", T, T, Some("1 month ago"),
            "2024-01-29 00:00:00 .. 2024-02-29 00:00:00"),
        ("2024-02-29 : 2024-03-31", T, T, Some("1 year ago"),
            "2023-02-28 00:00:00 .. 2023-03-31 00:00:00"),
        ("2024-02-29 10:00 : 2024-03-31 11:30:00.25", T, T, Some("3 hours ago"),
            "2024-02-29 07:00:00 .. 2024-03-31 08:30:00.250"),
        ("today : now", T, T, Some("1 day ago"), "2026-11-28 00:00:00 .. 2026-11-28 14:35:12"),
        ("No filter", T, T, Some("1 week ago"), "- .. -"),
        // Errors, with Superset's messages.
        ("Last 3 hours", T, T, None, "ERR From date cannot be larger than to date"),
        ("Last 3 hours", N, N, None, "ERR From date cannot be larger than to date"),
        ("2021-03-01 : 2020-01-01", T, T, None, "ERR From date cannot be larger than to date"),
        ("garbage : nonsense", T, T, None, "ERR Cannot parse time string [garbage]"),
        ("Lastly", T, T, None, "ERR Cannot parse time string [Lastly]"),
        ("2021-02-30 : now", T, T, None, "ERR Cannot parse time string [2021-02-30]"),
        ("5 days : now", T, T, None,
            "ERR Time string is ambiguous. Please specify [5 days ago] or [5 days later]."),
        ("end of this quarter : now", T, T, None,
            "ERR Expected {'year' | 'month' | 'week'}, found 'quarter'  (at char 27), (line:1, col:28)"),
        ("DATEADD(DATETIME('today'), 1) : now", T, T, None,
            "ERR Expected ',', found ')'  (at char 28), (line:1, col:29)"),
        ("DATETIMEX('today') : now", T, T, None,
            "ERR Expected CaselessKeyword 'datetime', was immediately followed by keyword character, \
             found 'X'  (at char 8), (line:1, col:9)"),
        ("DATEADD(foo, 1, day) : now", T, T, None,
            "ERR Expected {datetime | dateadd | datetrunc | lastday | holiday}, found 'foo'  \
             (at char 8), (line:1, col:9)"),
        ("New Year's : now", T, T, None, "ERR Expected ')', found 's'  (at char 19), (line:1, col:20)"),
        ("HOLIDAY('nope') : now", T, T, None, "ERR Unable to find such a holiday: [nope]"),
        ("HOLIDAY('christmas', DATETIME('2020-01-01'), 'XX') : now", T, T, None,
            "ERR Country XX not available"),
        ("DATEADD(DATETIME('today'), 99999999, year) : now", T, T, None, "ERR date value out of range"),
        ("Last week", T, T, Some("garbage"),
            "ERR Time delta is ambiguous. Please specify [garbage ago] or [garbage later]."),
    ];

    #[test]
    fn table_of_phrases() {
        let mut failures = Vec::new();
        for (range, start, end, time_shift, expected) in TABLE {
            let got = show(&run(range, *start, *end, *time_shift));
            if got != *expected {
                failures.push(format!("{range:?} ({start}, {end}, shift {time_shift:?}):\n  expected {expected}\n  got      {got}"));
            }
        }
        assert!(TABLE.len() >= 40);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn missing_empty_and_no_filter_are_unbounded() {
        for range in [None, Some(""), Some("   "), Some(NO_TIME_RANGE)] {
            let got = get_since_until(range, Some("1 year ago"), T, T, now());
            assert_eq!(got, Ok(TimeRange::default()), "{range:?}");
        }
    }

    #[test]
    fn relative_base_today_is_midnight_and_now_drops_microseconds() {
        let today = get_since_until(Some("today : now"), None, T, T, now());
        assert_eq!(
            today,
            Ok(TimeRange {
                since: Some(dt("2026-11-29")),
                until: Some(dt("2026-11-29 14:35:12")),
            })
        );
        let from_now = get_since_until(Some("this day : next 2 days"), None, N, T, now());
        assert_eq!(
            from_now,
            Ok(TimeRange {
                since: Some(dt("2026-11-29 14:35:12")),
                until: Some(dt("2026-12-01 14:35:12")),
            })
        );
    }

    #[test]
    fn relative_parses_from_superset_spelling() {
        assert_eq!("today".parse::<Relative>(), Ok(Relative::Today));
        assert_eq!("now".parse::<Relative>(), Ok(Relative::Now));
        assert_eq!(Relative::default(), Relative::Today);
        assert_eq!(Relative::Now.to_string(), "now");
        let err = "Today".parse::<Relative>().unwrap_err();
        assert_eq!(err, TimeRangeError::InvalidRelative("Today".to_string()));
        assert_eq!(err.to_string(), "Must be one of: today, now.");
    }

    #[test]
    fn shift_moves_back_with_calendar_arithmetic() {
        let base = dt("2024-02-29 14:35:12.5");
        let cases = [
            ("1 year ago", "2023-02-28 14:35:12.5"),
            ("2 weeks ago", "2024-02-15 14:35:12.5"),
            ("3 months ago", "2023-11-29 14:35:12.5"),
            ("52 weeks ago", "2023-03-02 14:35:12.5"),
            ("1 day ago", "2024-02-28 14:35:12.5"),
            ("3 hours ago", "2024-02-29 11:35:12.5"),
            ("30 minutes ago", "2024-02-29 14:05:12.5"),
            ("10 seconds ago", "2024-02-29 14:35:02.5"),
            ("1 quarter ago", "2023-11-29 14:35:12.5"),
            ("  2 Weeks AGO ", "2024-02-15 14:35:12.5"),
            ("a year ago", "2023-02-28 14:35:12.5"),
            ("1 week", "2024-02-22 14:35:12.5"),
            ("1 week later", "2024-02-22 14:35:12.5"),
            ("-1 week", "2024-02-22 14:35:12.5"),
            ("+1 week", "2024-03-07 14:35:12.5"),
            ("in 1 year", "2025-02-28 14:35:12.5"),
            ("0 days ago", "2024-02-29 14:35:12.5"),
        ];
        for (offset, expected) in cases {
            assert_eq!(shift(base, offset), Ok(dt(expected)), "{offset}");
        }
        assert_eq!(shift(dt("2024-03-31"), "1 month ago"), Ok(dt("2024-02-29")));
    }

    #[test]
    fn shift_rejects_what_is_not_a_delta() {
        for offset in [
            "",
            "garbage",
            "yesterday",
            "last month",
            "2020-01-01",
            "1 fortnight ago",
            "in 1 week ago",
        ] {
            assert_eq!(
                shift(now(), offset),
                Err(TimeRangeError::AmbiguousDelta(offset.to_string())),
                "{offset}"
            );
        }
        assert_eq!(
            shift(now(), "9999 years ago"),
            Err(TimeRangeError::OutOfRange)
        );
        assert_eq!(
            shift(now(), "99999999999999999999 days ago"),
            Err(TimeRangeError::OutOfRange)
        );
        assert_eq!(
            TimeRangeError::AmbiguousDelta("x".into()).to_string(),
            "Time delta is ambiguous. Please specify [x ago] or [x later]."
        );
    }

    #[test]
    fn human_datetime_forms() {
        let ok = [
            ("2021-01-01", "2021-01-01"),
            ("2021-01-01T06:00:00", "2021-01-01 06:00:00"),
            ("2021-01-01 06:00:00", "2021-01-01 06:00:00"),
            ("2021-01-01 06:00", "2021-01-01 06:00:00"),
            ("2021-01-01T06:00:00.123456", "2021-01-01 06:00:00.123456"),
            ("2021-01-01 06:00:00.1234567", "2021-01-01 06:00:00.123456"),
            ("2021-01-01T06:00:00Z", "2021-01-01 06:00:00"),
            ("2021-01-01 06:00:00 -0130", "2021-01-01 07:30:00"),
            (" 2021-1-5 ", "2021-01-05"),
            ("2021/01/05", "2021-01-05"),
            ("2021.01.05", "2021-01-05"),
            ("2021-03", "2021-03-01"),
            ("2021", "2021-01-01"),
            ("20210105", "2021-01-05"),
            ("1/5/2021", "2021-01-05"),
            ("January 5, 2021", "2021-01-05"),
            ("5 Jan", "2026-01-05"),
            ("2021 Sept 5th 10:30", "2021-09-05 10:30:00"),
            ("10:30", "2026-01-01 10:30:00"),
            ("12:15 am", "2026-01-01 00:15:00"),
            ("5", "2026-01-05"),
            ("today", "2026-11-29"),
            ("Today", "2026-11-29"),
            ("NOW", "2026-11-29 14:35:12"),
            ("yesterday", "2026-11-28"),
            ("tomorrow", "2026-11-30"),
            ("noon", "2026-11-29 12:00:00"),
            ("1 year ago", "2025-11-29"),
            ("2 weeks ago", "2026-11-15"),
            ("3 months from now", "2027-02-28 14:35:12"),
            ("in 3 days", "2026-12-02"),
            ("2 hours later", "2026-11-29 16:35:12"),
            ("-3 months", "2026-08-29"),
            ("3 mins ago", "2026-11-29 14:32:12"),
            ("last month", "2026-10-01"),
            ("this hour", "2026-11-29 14:00:00"),
            ("next year", "2027-01-01"),
            ("prior day", "2026-11-28"),
            ("Last 30 minutes", "2026-11-29 15:05:12"),
        ];
        for (text, expected) in ok {
            assert_eq!(
                parse_human_datetime(text, now()),
                Ok(dt(expected)),
                "{text}"
            );
        }
        let parse_fail = [
            "garbage",
            "2021-13-01",
            "1 quarter ago",
            "last minute",
            "monday",
            "2021-01-01 25:00",
            "0",
            "",
        ];
        for text in parse_fail {
            assert_eq!(
                parse_human_datetime(text, now()),
                Err(TimeRangeError::ParseFail(text.to_string())),
                "{text}"
            );
        }
        assert_eq!(
            parse_human_datetime(" 3 Quarters ", now()),
            Err(TimeRangeError::AmbiguousTime(" 3 Quarters ".to_string()))
        );
    }

    #[test]
    fn expression_functions() {
        let eval = |e: &str| eval_datetime_expression(e, now());
        assert_eq!(
            eval("DATEADD(DATETIME('2021-01-31'), 1, month)"),
            Ok(dt("2021-02-28"))
        );
        assert_eq!(
            eval("DATEADD(DATETIME('2024-02-29'), -1, year)"),
            Ok(dt("2023-02-28"))
        );
        assert_eq!(
            eval("DATEADD(DATETIME('2024-01-31 10:11:12.5'), 1, quarter)"),
            Ok(dt("2024-04-30 10:11:12.5"))
        );
        assert_eq!(
            eval("dateadd(datetime(\"2024-01-01\"), -90, MINUTE)"),
            Ok(dt("2023-12-31 22:30:00"))
        );
        assert_eq!(
            eval("DATETRUNC(DATETIME('2021-05-17 10:11:12'), quarter)"),
            Ok(dt("2021-04-01"))
        );
        assert_eq!(
            eval("DATETRUNC(DATETIME('2021-05-17 10:11:12'), year)"),
            Ok(dt("2021-01-01"))
        );
        assert_eq!(
            eval("DATETRUNC(DATETIME('2021-05-17 10:11:12'), month)"),
            Ok(dt("2021-05-01"))
        );
        assert_eq!(
            eval("DATETRUNC(DATETIME('2021-05-19 10:11:12'), week)"),
            Ok(dt("2021-05-17"))
        );
        assert_eq!(
            eval("DATETRUNC(DATETIME('2021-05-17 10:11:12.9'), second)"),
            Ok(dt("2021-05-17 10:11:12"))
        );
        assert_eq!(
            eval("LASTDAY(DATETIME('2024-02-10 10:00'), month)"),
            Ok(dt("2024-02-29"))
        );
        assert_eq!(
            eval("LASTDAY(DATETIME('2024-02-10 10:00'), year)"),
            Ok(dt("2024-12-31"))
        );
        assert_eq!(
            eval("LASTDAY(DATETIME('2024-02-12'), week)"),
            Ok(dt("2024-02-18"))
        );
        assert_eq!(
            eval("LASTDAY(DATETIME('2024-02-18'), week)"),
            Ok(dt("2024-02-18"))
        );
        assert_eq!(eval("HOLIDAY('Thanksgiving')"), Ok(dt("2026-11-26")));
        assert_eq!(
            eval("HOLIDAY('c', DATETIME('2020-06-01'))"),
            Ok(dt("2020-12-25"))
        );
        assert_eq!(
            eval("HOLIDAY(\"Washington\", DATETIME('1950-06-01'), \"US\")"),
            Ok(dt("1950-02-22"))
        );
        // DATEDIFF floors like timedelta.days, and counts calendar years.
        assert_eq!(
            eval(
                "DATEADD(DATETIME('2020-01-11'), DATEDIFF(DATETIME('2020-01-11 00:00:01'), DATETIME('2020-01-01')), day)"
            ),
            Ok(dt("2019-12-31"))
        );
        assert_eq!(
            eval(
                "DATEADD(DATETIME('2020-01-01'), DATEDIFF(DATETIME('2020-01-01'), DATETIME('2023-01-11'), year), day)"
            ),
            Ok(dt("2020-01-04"))
        );
    }

    #[test]
    fn expression_errors() {
        let eval = |e: &str| eval_datetime_expression(e, now()).map_err(|e| e.to_string());
        assert_eq!(
            eval("DATETIME(today)"),
            Err("Expected text_operand, found 'today'  (at char 9), (line:1, col:10)".to_string())
        );
        assert_eq!(
            eval("DATEADD(DATETIME('today'), x, day)"),
            Err(
                "Expected {int_operand | datediff}, found 'x'  (at char 27), (line:1, col:28)"
                    .to_string()
            )
        );
        assert_eq!(
            eval("DATEADD(DATETIME('2020-01-01'), 1, weeks)"),
            Err("Expected CaselessKeyword 'week', was immediately followed by keyword character, found 's'  (at char 39), (line:1, col:40)".to_string())
        );
        assert_eq!(
            eval("DATETIME('2021-01-01'')"),
            Err(
                "Expected text_operand, found end of text  (at char 23), (line:1, col:24)"
                    .to_string()
            )
        );
        assert_eq!(
            eval("DATEADD(DATETIME('2020-01-01'), 1, day"),
            Err("Expected ')', found end of text  (at char 38), (line:1, col:39)".to_string())
        );
        assert!(eval("HOLIDAY('christmas', 'US')").is_err());
        assert!(eval("DATEDIFF(DATETIME('2020-01-01'), DATETIME('2020-01-02'))").is_err());
        let deep = format!(
            "{}DATETIME('2020-01-01'){}",
            "DATETRUNC(".repeat(200),
            ", day)".repeat(200)
        );
        assert_eq!(
            eval(&deep),
            Err("Time expression is nested too deeply".to_string())
        );
    }

    /// The `found` token as pyparsing 3 spells it (checked against pyparsing 3.3.2, which
    /// formats it as `repr(token).replace(r"\\", "\\")`).
    #[test]
    fn syntax_errors_show_the_token_like_pyparsing() {
        let cases = [
            ("x\\", r"'\'"),
            ("x\\\\", r"'\'"),
            ("x'", r#""'""#),
            ("x\"", r#"'"'"#),
            ("x\u{1}", r"'\x01'"),
            ("x\u{7f}", r"'\x7f'"),
            ("x\u{200b}", r"'\u200b'"),
            ("x\u{e9}", "'\u{e9}'"),
            ("xabc", "'abc'"),
        ];
        for (src, found) in cases {
            assert_eq!(
                syntax_error(src, 1, "Expected ')'").to_string(),
                format!("Expected ')', found {found}  (at char 1), (line:1, col:2)"),
                "{src:?}"
            );
        }
        assert_eq!(
            syntax_error("x", 1, "Expected ')'").to_string(),
            "Expected ')', found end of text  (at char 1), (line:1, col:2)"
        );
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let inputs = [
            "DATETIME('\u{e9}t\u{e9}') : DATETIME(\"\u{1F600}\\",
            "DATEADD(DATETIME('x\\x'), 1, day) : ",
            "HOLIDAY('\u{130}') : HOLIDAY(",
            " : : : ",
            "start of this 99999999999999999999999 years : now",
            "DATETIME('\u{30b9}\n') : x",
            "\u{fffd} : \u{2003}",
            "DATEADD(DATETIME('9999-12-31'), 1, day) : now",
            "DATETRUNC(DATETIME('0001-01-01'), week) : now",
            "LASTDAY(DATETIME('9999-12-31'), week) : now",
            "2021-01-01T06:00:00+99:99 : now",
            "Jan 31 31 : Feb 30",
            "2021-01-01 06:00 +1\u{e9}1 : 2021-01-01 06:00 pm\u{e9}",
            "5 \u{e9}\u{e9} ago : +\u{e9} days",
        ];
        for input in inputs {
            let _ = get_since_until(Some(input), Some(input), T, N, now());
        }
        assert_eq!(
            eval_datetime_expression("DATEADD(DATETIME('9999-12-31'), 1, day)", now()),
            Err(TimeRangeError::OutOfRange)
        );
        assert_eq!(
            eval_datetime_expression("LASTDAY(DATETIME('9999-12-31'), week)", now()),
            Err(TimeRangeError::OutOfRange)
        );
    }
}
