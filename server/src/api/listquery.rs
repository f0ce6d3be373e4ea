//! The `q` query argument of FAB's generic REST protocol (Superset's `/api/v1/<resource>/`
//! list, show, `_info`, bulk-delete and favourite-status endpoints).
//!
//! This module owns everything between the raw `q` string and a typed request:
//!
//! * [`parse_rison`]: a rison decoder that accepts exactly what the Python `prison` 0.2.1
//!   library (the one FAB uses) accepts, quirks included: no whitespace anywhere outside quoted
//!   strings, bare ids made of ASCII letters and digits, `%+-./\_~`, DEL and every non-ASCII
//!   character, `!`-escapes only for `!!` and `!'`, object keys that may be any scalar.
//! * [`decode_q`]: FAB's `@rison` decorator: rison first, then JSON after one more
//!   `parse_qs`-style URL-decoding pass (`FAB_API_ALLOW_JSON_QS`, on by default), otherwise
//!   400 `Not a valid rison/json argument`.
//! * [`parse_list_query`], [`parse_item_query`], [`parse_info_query`] and [`parse_ids`]: FAB's
//!   JSON-schema validation of the decoded value (`get_list_schema`, `get_item_schema`,
//!   `get_info_schema`, Superset's `get_delete_ids_schema`), reproducing `jsonschema`'s
//!   choice of error and its wording (`Not a valid rison schema 'up' is not one of ['asc',
//!   'desc']`), then the typed result.
//! * [`effective_page_size`]: FAB's `_sanitize_page_args` page-size clamp.
//! * [`QError`]: every client-facing 400 text of this protocol, including the ones resource
//!   modules raise after their own checks ([`QError::InvalidOrderColumn`],
//!   [`QError::FilterColumnNotAllowed`], [`QError::FilterOperationNotAllowed`]).
//!
//! What it must not do: build SQL, or know anything about resources, their columns, their
//! search columns, their filter operators or their order columns. Unknown keys in `q` are
//! ignored, as in FAB (its schemas do not set `additionalProperties: false`); column names in
//! `columns`, `select_columns`, `filters[].col` and `order_column` come back verbatim, and the
//! resource module validates them itself.
//!
//! Nesting is limited to [`MAX_DEPTH`] containers in both rison and JSON; deeper input is
//! rejected as an invalid argument instead of recursing further. No input makes this module
//! panic.
//!
//! Deliberate differences from FAB, all on inputs no real client sends:
//!
//! * Where `prison` crashes instead of raising its `ParserException` (`!`, `'abc!`, `1E5`,
//!   `1-2`, `((a:1):2)`, `(a:(`...), FAB answers 500 `Fatal error`; here it is an ordinary
//!   rison failure (JSON fallback, then 400).
//! * Non-finite numbers (`1e400`, JSON `NaN`/`Infinity`) and nesting beyond [`MAX_DEPTH`] are
//!   400s; integers beyond `u64` become floats (Python keeps them exact), and JSON `-0` is
//!   `-0.0`: this only shows in the wording of schema messages.
//! * A negative `page` is a 400 (FAB hands SQL a negative OFFSET).
//! * `select_columns` of a show request must be a list of strings.
//! * Python-`repr` details in schema messages: dict keys print in `serde_json::Map` order,
//!   unassigned code points print raw, and non-string rison keys (`(1:a,!t:b)`) are
//!   stringified, so Python's `1 == True` key merging does not happen.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use liteset_pyrepr as py;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// Deepest nesting of objects and arrays accepted in `q`, rison or JSON; the 65th level is an
/// error.
pub const MAX_DEPTH: usize = 64;

/// FAB's default `page_size` (`ModelRestApi.page_size`) when `q` gives none.
pub const FAB_DEFAULT_PAGE_SIZE: i64 = 20;

/// Superset's `FAB_API_MAX_PAGE_SIZE`, the clamp applied to `page_size`.
pub const FAB_API_MAX_PAGE_SIZE: i64 = 100;

/// A `max_page_size` of -1 (the database API's) lifts the cap; `page_size: -1` then means
/// "no pagination at all".
pub const UNLIMITED_PAGE_SIZE: i64 = -1;

// ------------------------------------------------------------------------------------------
// Rison
// ------------------------------------------------------------------------------------------

/// Why a string is not rison, and the byte offset where the parser gave up.
///
/// These texts are for logs only: clients always see [`QError::InvalidArgument`]'s fixed
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {position}")]
pub struct RisonError {
    /// What went wrong.
    pub kind: RisonErrorKind,
    /// Byte offset into the input.
    pub position: usize,
}

/// The kinds of rison syntax error. The texts follow `prison`'s where it has one; the
/// others name what `prison` crashes on (an `IndexError`, `TypeError`, `ValueError` or
/// `RecursionError` there, which FAB turns into a 500).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RisonErrorKind {
    /// Input ended where a value was expected.
    #[error("empty expression")]
    Empty,
    /// A character that cannot start a value.
    #[error("invalid character: '{0}'")]
    InvalidCharacter(char),
    /// An object `(` never closed.
    #[error("unmatched '('")]
    UnmatchedParen,
    /// An array `!(` never closed.
    #[error("unmatched '!('")]
    UnmatchedArray,
    /// Two elements not separated by a comma.
    #[error("missing ','")]
    MissingComma,
    /// A comma before the first element.
    #[error("extra ','")]
    ExtraComma,
    /// An object key not followed by a colon.
    #[error("missing ':'")]
    MissingColon,
    /// A `!` as the last character.
    #[error("\"!\" at end of input")]
    BangAtEnd,
    /// `!` followed by something other than `t`, `f`, `n` or `(`.
    #[error("unknown literal: \"!{0}\"")]
    UnknownLiteral(char),
    /// A quoted string never closed.
    #[error("unmatched \"'\"")]
    UnmatchedQuote,
    /// `!` inside a quoted string followed by something other than `!` or `'`.
    #[error("invalid string escape: \"!{0}\"")]
    InvalidEscape(char),
    /// `!` as the last character of an unterminated quoted string.
    #[error("string escape at end of input")]
    EscapeAtEnd,
    /// A number `prison` scans but Python's `int()`/`float()` refuses (`-`, `1E5`, `1-2`).
    #[error("invalid number")]
    InvalidNumber,
    /// A number too large for a finite double (`1e400`).
    #[error("number out of range")]
    NumberOutOfRange,
    /// An object or array used as an object key.
    #[error("unhashable object key")]
    UnhashableKey,
    /// More than [`MAX_DEPTH`] nested objects and arrays.
    #[error("nesting deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A complete value followed by more characters.
    #[error("unable to parse rison string: trailing characters")]
    TrailingCharacters,
}

/// Decodes one rison value, accepting exactly the grammar of Python `prison` 0.2.1's
/// `prison.loads`.
///
/// * `(k:v,...)` objects, `()` empty; keys are any value: strings, quoted strings, and
///   numbers, `!t`, `!f`, `!n` (stringified as Python's `str()` would: `1`, `1.5`, `True`,
///   `None`); a repeated key keeps its last value.
/// * `!(v,...)` arrays, `!()` empty; `!t`, `!f`, `!n`.
/// * Numbers as `prison` scans them then Python converts them: `-1`, `007`, `1.`, `-.5`,
///   `1e5`, `1.5E3`, `1e-5` (but `1E5` and `1-2` are errors). A lexeme with `.` or a lowercase
///   `e` becomes a float, otherwise an integer; integers beyond `u64` become floats.
/// * Bare ids: one or more of ASCII letters and digits, `%+-./\_~`, DEL or any non-ASCII
///   character, not starting with `-` or an ASCII digit.
/// * Quoted strings `'...'` with `!!` and `!'` as the only escapes.
///
/// No whitespace is skipped, and anything after the value is an error.
pub fn parse_rison(s: &str) -> Result<Value, RisonError> {
    let mut parser = RisonParser {
        src: s,
        pos: 0,
        depth: 0,
    };
    let value = parser.value()?;
    if parser.pos < s.len() {
        return Err(parser.error(parser.pos, RisonErrorKind::TrailingCharacters));
    }
    Ok(value)
}

struct RisonParser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum NumberState {
    Int,
    Frac,
    Exp,
}

/// Characters `prison` accepts inside a bare id: ASCII letters and digits, `%+-./\_~`, DEL,
/// and every byte of a non-ASCII character. (`\` gets in by accident: `prison` builds its
/// id regex by pasting the excluded characters into a `[^...]` class, where `\]` escapes.)
fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x7f || b"%+-./\\_~".contains(&b)
}

/// Characters that may start a bare id: id characters other than `-` and ASCII digits.
fn is_id_start(b: u8) -> bool {
    is_id_byte(b) && b != b'-' && !b.is_ascii_digit()
}

impl RisonParser<'_> {
    fn error(&self, position: usize, kind: RisonErrorKind) -> RisonError {
        RisonError { kind, position }
    }

    fn byte_at(&self, pos: usize) -> Option<u8> {
        self.src.as_bytes().get(pos).copied()
    }

    fn char_at(&self, pos: usize) -> char {
        self.src
            .get(pos..)
            .and_then(|rest| rest.chars().next())
            .unwrap_or(char::REPLACEMENT_CHARACTER)
    }

    /// `src[start..end]`; both ends always sit on ASCII bytes or the ends of the input.
    fn slice(&self, start: usize, end: usize) -> &str {
        self.src.get(start..end).unwrap_or_default()
    }

    fn value(&mut self) -> Result<Value, RisonError> {
        let start = self.pos;
        match self.byte_at(start) {
            None => Err(self.error(start, RisonErrorKind::Empty)),
            Some(b'!') => self.bang(),
            Some(b'(') => self.object(),
            Some(b'\'') => self.quoted().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b) if is_id_start(b) => {
                let mut end = start;
                while self.byte_at(end).is_some_and(is_id_byte) {
                    end += 1;
                }
                self.pos = end;
                Ok(Value::String(self.slice(start, end).to_owned()))
            }
            Some(_) => {
                Err(self.error(start, RisonErrorKind::InvalidCharacter(self.char_at(start))))
            }
        }
    }

    fn bang(&mut self) -> Result<Value, RisonError> {
        let bang = self.pos;
        let value = match self.byte_at(bang + 1) {
            None => return Err(self.error(bang, RisonErrorKind::BangAtEnd)),
            Some(b't') => Value::Bool(true),
            Some(b'f') => Value::Bool(false),
            Some(b'n') => Value::Null,
            Some(b'(') => {
                self.pos = bang + 2;
                return self.array(bang);
            }
            Some(_) => {
                return Err(
                    self.error(bang, RisonErrorKind::UnknownLiteral(self.char_at(bang + 1)))
                );
            }
        };
        self.pos = bang + 2;
        Ok(value)
    }

    fn enter(&mut self, open: usize) -> Result<(), RisonError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(open, RisonErrorKind::TooDeep));
        }
        self.depth += 1;
        Ok(())
    }

    /// Positions `self.pos` on the next element of a `(`/`!(` list, or returns `true` after
    /// consuming the closing `)`.
    fn list_step(
        &mut self,
        open: usize,
        first: bool,
        unmatched: RisonErrorKind,
    ) -> Result<bool, RisonError> {
        match self.byte_at(self.pos) {
            None => Err(self.error(open, unmatched)),
            Some(b')') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b',') if first => Err(self.error(self.pos, RisonErrorKind::ExtraComma)),
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(_) if !first => Err(self.error(self.pos, RisonErrorKind::MissingComma)),
            Some(_) => Ok(false),
        }
    }

    fn array(&mut self, open: usize) -> Result<Value, RisonError> {
        self.enter(open)?;
        let mut items = Vec::new();
        while !self.list_step(open, items.is_empty(), RisonErrorKind::UnmatchedArray)? {
            items.push(self.value()?);
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn object(&mut self) -> Result<Value, RisonError> {
        let open = self.pos;
        self.enter(open)?;
        self.pos += 1;
        let mut map = Map::new();
        let mut first = true;
        while !self.list_step(open, first, RisonErrorKind::UnmatchedParen)? {
            first = false;
            let key_pos = self.pos;
            let key = python_key(self.value()?)
                .ok_or_else(|| self.error(key_pos, RisonErrorKind::UnhashableKey))?;
            if self.byte_at(self.pos) != Some(b':') {
                return Err(self.error(self.pos, RisonErrorKind::MissingColon));
            }
            self.pos += 1;
            let value = self.value()?;
            map.insert(key, value);
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    fn quoted(&mut self) -> Result<String, RisonError> {
        let open = self.pos;
        let mut out = String::new();
        let mut segment = open + 1;
        let mut i = open + 1;
        loop {
            match self.byte_at(i) {
                None => return Err(self.error(open, RisonErrorKind::UnmatchedQuote)),
                Some(b'\'') => {
                    out.push_str(self.slice(segment, i));
                    self.pos = i + 1;
                    return Ok(out);
                }
                Some(b'!') => {
                    out.push_str(self.slice(segment, i));
                    match self.byte_at(i + 1) {
                        None => return Err(self.error(i, RisonErrorKind::EscapeAtEnd)),
                        Some(escaped @ (b'!' | b'\'')) => out.push(char::from(escaped)),
                        Some(_) => {
                            return Err(
                                self.error(i, RisonErrorKind::InvalidEscape(self.char_at(i + 1)))
                            );
                        }
                    }
                    i += 2;
                    segment = i;
                }
                Some(_) => i += 1,
            }
        }
    }

    /// `prison`'s number scanner: digits, one `-` anywhere (again after the exponent mark),
    /// one `.` before the exponent, one `e`/`E`; then Python's `int()` or `float()` decides.
    fn number(&mut self) -> Result<Value, RisonError> {
        let start = self.pos;
        let mut end = start + 1;
        let mut state = NumberState::Int;
        let mut sign_allowed = true;
        while let Some(b) = self.byte_at(end) {
            if b.is_ascii_digit() {
                end += 1;
                continue;
            }
            if b == b'-' && sign_allowed {
                sign_allowed = false;
                end += 1;
                continue;
            }
            state = match (state, b.to_ascii_lowercase()) {
                (NumberState::Int, b'.') => NumberState::Frac,
                (NumberState::Int | NumberState::Frac, b'e') => {
                    sign_allowed = true;
                    NumberState::Exp
                }
                _ => break,
            };
            end += 1;
        }
        self.pos = end;
        let lexeme = self.slice(start, end);
        let invalid = || self.error(start, RisonErrorKind::InvalidNumber);
        let out_of_range = || self.error(start, RisonErrorKind::NumberOutOfRange);
        if lexeme.contains(['.', 'e']) {
            let float: f64 = lexeme.parse().map_err(|_| invalid())?;
            return Number::from_f64(float)
                .map(Value::Number)
                .ok_or_else(out_of_range);
        }
        let digits = lexeme.strip_prefix('-').unwrap_or(lexeme);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        if let Ok(int) = lexeme.parse::<i64>() {
            return Ok(Value::from(int));
        }
        if let Ok(int) = lexeme.parse::<u64>() {
            return Ok(Value::from(int));
        }
        lexeme
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(out_of_range)
    }
}

/// Python's `str()` of a hashable rison value used as a dict key; `None` for the unhashable
/// ones (objects and arrays).
fn python_key(value: Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(py::number(&n)),
        Value::Bool(true) => Some("True".to_owned()),
        Value::Bool(false) => Some("False".to_owned()),
        Value::Null => Some("None".to_owned()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

// ------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------

/// A rejected `q`. Every variant is a 400 whose body is `{"message": <QError::message()>}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QError {
    /// `q` is neither rison nor (URL-decoded) JSON: `Not a valid rison/json argument`.
    #[error("Not a valid rison/json argument")]
    InvalidArgument {
        /// Why the rison decoder refused it (for logs).
        #[source]
        rison: RisonError,
    },
    /// The decoded value violates the endpoint's schema. Holds jsonschema's first message
    /// line, e.g. `'up' is not one of ['asc', 'desc']`; the text is
    /// `Not a valid rison schema <that>`.
    #[error("Not a valid rison schema {0}")]
    Schema(String),
    /// Both `columns` and `select_columns` given, non-empty:
    /// `Cannot use both select and sel columns`.
    #[error("Cannot use both select and sel columns")]
    BothColumnArgs,
    /// For resource modules: `order_column` is not one of their order columns.
    /// Text: `Invalid order by column: <col>`.
    #[error("Invalid order by column: {0}")]
    InvalidOrderColumn(String),
    /// For resource modules: a filter's `col` is not one of their search columns.
    /// Text: `Filter column: <col> not allowed to filter`.
    #[error("Filter column: {0} not allowed to filter")]
    FilterColumnNotAllowed(String),
    /// For resource modules: a filter's `opr` is not valid for its column.
    /// Text: `Filter operation: <opr> not allowed on column: <col>`.
    #[error("Filter operation: {opr} not allowed on column: {col}")]
    FilterOperationNotAllowed {
        /// The filter's column.
        col: String,
        /// The rejected operator.
        opr: String,
    },
}

impl QError {
    /// The exact client-facing text, to be sent as 400 `{"message": text}`.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

// ------------------------------------------------------------------------------------------
// `q` decoding
// ------------------------------------------------------------------------------------------

/// FAB's `@rison` decorator: decodes the `q` argument (already URL-decoded once by the HTTP
/// layer) into a JSON value.
///
/// * Absent or empty: `{}`. (When `q` is repeated, pass the first, like `request.args.get`.)
/// * Otherwise rison ([`parse_rison`]).
/// * If that fails, FAB runs `json.loads(parse_qs("q=" + value)["q"][0])`: the value is
///   URL-decoded once more (`+` becomes a space, `%XX` is decoded, bad UTF-8 becomes U+FFFD),
///   an unescaped `&` cuts it short, and the result is parsed as JSON.
/// * If both fail: [`QError::InvalidArgument`] (`Not a valid rison/json argument`).
///
/// Note that a percent-encoded JSON text made only of id characters
/// (`%7B%22page%22%3A1%7D`) is valid rison, a bare string, exactly as in FAB.
pub fn decode_q(raw: Option<&str>) -> Result<Value, QError> {
    let Some(raw) = raw.filter(|raw| !raw.is_empty()) else {
        return Ok(Value::Object(Map::new()));
    };
    match parse_rison(raw) {
        Ok(value) => Ok(value),
        Err(rison) => json_fallback(raw).ok_or(QError::InvalidArgument { rison }),
    }
}

fn json_fallback(raw: &str) -> Option<Value> {
    let text = parse_qs_first_q(raw)?;
    let value: Value = serde_json::from_str(&text).ok()?;
    (depth_within(&value, MAX_DEPTH)).then_some(value)
}

/// `urllib.parse.parse_qs(f"q={raw}").get("q")[0]`: the first `&`-separated field named `q`
/// (after decoding) with a non-empty value, decoded.
fn parse_qs_first_q(raw: &str) -> Option<String> {
    let query = format!("q={raw}");
    query
        .split('&')
        .filter_map(|field| field.split_once('='))
        .filter(|(_, value)| !value.is_empty())
        .find(|(name, _)| unquote_plus(name) == "q")
        .map(|(_, value)| unquote_plus(value))
}

/// Python's `unquote(s.replace('+', ' '))` with UTF-8 and `errors='replace'`.
fn unquote_plus(s: &str) -> String {
    fn hex(b: Option<&u8>) -> Option<u8> {
        let b = *b?;
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                if let (Some(high), Some(low)) = (hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
                    out.push(high << 4 | low);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `value` nests at most `limit` objects/arrays deep. Recursion is bounded by
/// `limit`.
fn depth_within(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit > 0 && items.iter().all(|v| depth_within(v, limit - 1)),
        Value::Object(map) => limit > 0 && map.values().all(|v| depth_within(v, limit - 1)),
        _ => true,
    }
}

// ------------------------------------------------------------------------------------------
// Typed requests
// ------------------------------------------------------------------------------------------

/// Sort direction of `order_direction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrderDirection {
    /// `asc`
    Asc,
    /// `desc`
    Desc,
}

impl OrderDirection {
    /// The wire spelling, `asc` or `desc`.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderDirection::Asc => "asc",
            OrderDirection::Desc => "desc",
        }
    }
}

/// One element of `filters`: `(col:<col>,opr:<opr>,value:<value>)`. Extra keys are ignored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Filter {
    /// The column (or custom filter's column) name, unchecked.
    pub col: String,
    /// The operator (`eq`, `ct`, `rel_m_m`, a custom filter's `arg_name`...), unchecked.
    pub opr: String,
    /// A number, string or boolean, or an array of those (never null or an object).
    pub value: Value,
}

/// A validated `q` of `GET /<resource>/` (FAB's `get_list_schema`).
///
/// An empty `columns`, `select_columns` or `keys` list is reported as `None`: FAB treats an
/// empty list exactly like an absent one.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ListQuery {
    /// `filters`, ANDed, in request order.
    pub filters: Vec<Filter>,
    /// `order_column`; an empty string is reported as `None`, since FAB then falls back to
    /// the resource's base order. Unchecked: the resource answers
    /// [`QError::InvalidOrderColumn`] for unknown ones.
    pub order_column: Option<String>,
    /// `order_direction`. FAB ignores it without an `order_column`, and sorts descending
    /// when it is absent: see [`ListQuery::order`].
    pub order_direction: Option<OrderDirection>,
    /// `page`, 0-based; absent means 0.
    pub page: Option<u64>,
    /// `page_size` as requested (beyond `i64` saturates); clamp it with
    /// [`effective_page_size`].
    pub page_size: Option<i64>,
    /// `columns`: the response columns wanted (subset of the resource's list columns).
    pub columns: Option<Vec<String>>,
    /// `select_columns`: the alternative to `columns`.
    pub select_columns: Option<Vec<String>>,
    /// `keys`: which metadata keys to return (`list_columns`, `order_columns`,
    /// `label_columns`, `description_columns`, `list_title`, `none`); `None` means all.
    pub keys: Option<Vec<String>>,
}

impl ListQuery {
    /// FAB's `_handle_order_args`: `Some((column, direction))` when an `order_column` was
    /// given (direction defaulting to descending, as FAB's `apply_order_by` does for
    /// anything but `asc`), `None` when the resource's base order applies.
    pub fn order(&self) -> Option<(&str, OrderDirection)> {
        self.order_column
            .as_deref()
            .map(|column| (column, self.order_direction.unwrap_or(OrderDirection::Desc)))
    }

    /// The 0-based page index (`page`, default 0).
    pub fn page_index(&self) -> u64 {
        self.page.unwrap_or(0)
    }

    /// FAB's `set_response_key_mappings`: whether the metadata key `key` (e.g.
    /// `list_columns`) belongs in the response.
    pub fn wants_key(&self, key: &str) -> bool {
        wants_key(self.keys.as_deref(), key)
    }
}

/// A validated `q` of `GET /<resource>/<pk>` (FAB's `get_item_schema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ItemQuery {
    /// `columns`: the response columns wanted (subset of the resource's show columns).
    pub columns: Option<Vec<String>>,
    /// `select_columns`: the alternative to `columns`.
    pub select_columns: Option<Vec<String>>,
    /// `keys`: `show_columns`, `description_columns`, `label_columns`, `show_title`, `none`;
    /// `None` means all.
    pub keys: Option<Vec<String>>,
}

impl ItemQuery {
    /// Whether the metadata key `key` (e.g. `show_columns`) belongs in the response.
    pub fn wants_key(&self, key: &str) -> bool {
        wants_key(self.keys.as_deref(), key)
    }
}

/// Pagination of one related column's values in `_info` (`add_columns:(owners:(page:0,
/// page_size:10))`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ColumnPage {
    /// `page`, 0-based.
    pub page: Option<u64>,
    /// `page_size` as requested; clamp it with [`effective_page_size`].
    pub page_size: Option<i64>,
}

/// A validated `q` of `GET /<resource>/_info` (FAB's `get_info_schema`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct InfoQuery {
    /// `keys`: `add_columns`, `edit_columns`, `filters`, `permissions`, `add_title`,
    /// `edit_title`, `none`; `None` means all.
    pub keys: Option<Vec<String>>,
    /// `add_columns`: per related column, the page of its `values` to return.
    pub add_columns: BTreeMap<String, ColumnPage>,
    /// `edit_columns`: likewise for the edit form.
    pub edit_columns: BTreeMap<String, ColumnPage>,
}

impl InfoQuery {
    /// Whether the key `key` (e.g. `permissions`) belongs in the response.
    pub fn wants_key(&self, key: &str) -> bool {
        wants_key(self.keys.as_deref(), key)
    }
}

fn wants_key(keys: Option<&[String]>, key: &str) -> bool {
    keys.is_none_or(|keys| keys.iter().any(|k| k == key))
}

/// Parses and validates the `q` of a list request (`GET /<resource>/`).
///
/// Errors, in FAB's order: [`QError::InvalidArgument`]; [`QError::Schema`] with
/// jsonschema's message (wrong types, `order_direction` not `asc`/`desc`, unknown `keys`,
/// filters that are not `{col, opr, value}` objects, a filter `value` that is null, an object
/// or nested arrays); [`QError::BothColumnArgs`]. Then one Liteset addition: a negative
/// `page` gives `Not a valid rison schema -1 is less than the minimum of 0` (FAB passes it
/// to SQL as a negative OFFSET, which Postgres rejects with a 500). Unknown keys are ignored.
pub fn parse_list_query(raw_q: Option<&str>) -> Result<ListQuery, QError> {
    let value = decode_q(raw_q)?;
    validate(&value, &LIST_SCHEMA)?;
    let (columns, select_columns) = column_args(&value)?;
    let filters = value
        .get("filters")
        .and_then(Value::as_array)
        .map(|filters| {
            filters
                .iter()
                .map(|filter| Filter {
                    col: str_field(filter, "col"),
                    opr: str_field(filter, "opr"),
                    value: filter.get("value").cloned().unwrap_or(Value::Null),
                })
                .collect()
        })
        .unwrap_or_default();
    let order_direction = match value.get("order_direction").and_then(Value::as_str) {
        Some("asc") => Some(OrderDirection::Asc),
        Some("desc") => Some(OrderDirection::Desc),
        _ => None,
    };
    Ok(ListQuery {
        filters,
        order_column: value
            .get("order_column")
            .and_then(Value::as_str)
            .filter(|column| !column.is_empty())
            .map(str::to_owned),
        order_direction,
        page: page_index(value.get("page"))?,
        page_size: value.get("page_size").and_then(integer).map(saturate_i64),
        columns,
        select_columns,
        keys: string_list(value.get("keys")),
    })
}

/// `columns` and `select_columns`, each absent when not given or empty.
type ColumnArgs = (Option<Vec<String>>, Option<Vec<String>>);

/// `columns` and `select_columns` of a list or show `q`; FAB refuses both at once.
fn column_args(value: &Value) -> Result<ColumnArgs, QError> {
    let columns = string_list(value.get("columns"));
    let select_columns = string_list(value.get("select_columns"));
    if columns.is_some() && select_columns.is_some() {
        return Err(QError::BothColumnArgs);
    }
    Ok((columns, select_columns))
}

/// Parses and validates the `q` of a show request (`GET /<resource>/<pk>`).
///
/// Like [`parse_list_query`] but against FAB's `get_item_schema` (`columns`, `keys`). FAB's
/// schema does not type `select_columns` here (a non-list makes it crash with a 500); Liteset
/// checks it as an array of strings with the same kind of message.
pub fn parse_item_query(raw_q: Option<&str>) -> Result<ItemQuery, QError> {
    let value = decode_q(raw_q)?;
    validate(&value, &ITEM_SCHEMA)?;
    validate(&value, &ITEM_SELECT_COLUMNS_SCHEMA)?;
    let (columns, select_columns) = column_args(&value)?;
    Ok(ItemQuery {
        columns,
        select_columns,
        keys: string_list(value.get("keys")),
    })
}

/// Parses and validates the `q` of `GET /<resource>/_info` against FAB's `get_info_schema`:
/// `keys`, and `add_columns`/`edit_columns` maps of `(page:..,page_size:..)`. A negative
/// `page` there is rejected like in [`parse_list_query`].
pub fn parse_info_query(raw_q: Option<&str>) -> Result<InfoQuery, QError> {
    let value = decode_q(raw_q)?;
    validate(&value, &INFO_SCHEMA)?;
    let column_pages = |key: &str| -> Result<BTreeMap<String, ColumnPage>, QError> {
        let mut pages = BTreeMap::new();
        if let Some(columns) = value.get(key).and_then(Value::as_object) {
            for (column, args) in columns {
                let page = ColumnPage {
                    page: page_index(args.get("page"))?,
                    page_size: args.get("page_size").and_then(integer).map(saturate_i64),
                };
                pages.insert(column.clone(), page);
            }
        }
        Ok(pages)
    };
    Ok(InfoQuery {
        keys: string_list(value.get("keys")),
        add_columns: column_pages("add_columns")?,
        edit_columns: column_pages("edit_columns")?,
    })
}

/// Parses the `q` of bulk delete (`DELETE /<resource>/?q=!(1,2)`), and of Superset's other
/// id-list endpoints (`favorite_status`, `export`): Superset's
/// `{"type": "array", "items": {"type": "integer"}}`.
///
/// Integral floats (`1.0`) are integers, as in jsonschema; ids beyond `i64` saturate. An
/// absent `q` is `{}`, hence `Not a valid rison schema {} is not of type 'array'`.
pub fn parse_ids(raw_q: Option<&str>) -> Result<Vec<i64>, QError> {
    let value = decode_q(raw_q)?;
    validate(&value, &IDS_SCHEMA)?;
    Ok(value
        .as_array()
        .map(|ids| ids.iter().filter_map(integer).map(saturate_i64).collect())
        .unwrap_or_default())
}

/// Parses the `q` of `GET /dataset/<pk>/drill_info/`: Superset's
/// `{"type": "object", "properties": {"dashboard_id": {"type": "integer"}}}`. Absent `q` is
/// `{}`, so no dashboard.
pub fn parse_drill_info_query(raw_q: Option<&str>) -> Result<Option<i64>, QError> {
    let value = decode_q(raw_q)?;
    validate(&value, &DRILL_INFO_SCHEMA)?;
    Ok(value
        .get("dashboard_id")
        .and_then(integer)
        .map(saturate_i64))
}

/// FAB's `_sanitize_page_args` for the page size: `None` means unpaginated (no LIMIT and no
/// OFFSET: FAB drops the page index too).
///
/// * `requested` absent or 0 becomes `default` (Python's `page_size or self.page_size`).
/// * `max == -1` ([`UNLIMITED_PAGE_SIZE`], the database API): `-1` means unpaginated and any
///   other value is returned as is (FAB passes even other negatives on to SQL).
/// * Otherwise a size above `max` or below 1 becomes `max`.
///
/// `max` is the resolved cap: the resource's `max_page_size`, or `FAB_API_MAX_PAGE_SIZE`
/// ([`FAB_API_MAX_PAGE_SIZE`]) when it has none.
pub fn effective_page_size(requested: Option<i64>, default: i64, max: i64) -> Option<i64> {
    let size = match requested {
        None | Some(0) => default,
        Some(size) => size,
    };
    if max == UNLIMITED_PAGE_SIZE {
        return (size != UNLIMITED_PAGE_SIZE).then_some(size);
    }
    if size > max || size < 1 {
        Some(max)
    } else {
        Some(size)
    }
}

fn string_list(value: Option<&Value>) -> Option<Vec<String>> {
    let items: Vec<String> = value?
        .as_array()?
        .iter()
        .filter_map(|item| item.as_str().map(str::to_owned))
        .collect();
    (!items.is_empty()).then_some(items)
}

fn str_field(object: &Value, key: &str) -> String {
    object
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// jsonschema's "integer": an integer, or a float with no fractional part.
fn integer(value: &Value) -> Option<i128> {
    let Value::Number(n) = value else {
        return None;
    };
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    // `as` saturates for out-of-range floats.
    n.as_f64()
        .filter(|f| f.is_finite() && f.fract() == 0.0)
        .map(|f| f as i128)
}

fn saturate_i64(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value < 0 { i64::MIN } else { i64::MAX })
}

fn page_index(value: Option<&Value>) -> Result<Option<u64>, QError> {
    let Some(value) = value else {
        return Ok(None);
    };
    match integer(value) {
        Some(page) if page < 0 => Err(QError::Schema(format!(
            "{} is less than the minimum of 0",
            py::json_to_depth(value, MAX_DEPTH + 1)
        ))),
        Some(page) => Ok(Some(u64::try_from(page).unwrap_or(u64::MAX))),
        None => Ok(None),
    }
}

// ------------------------------------------------------------------------------------------
// A small jsonschema (4.23, draft 2020-12) for FAB's fixed schemas
// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl JsonType {
    fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
        }
    }

    fn matches(self, value: &Value) -> bool {
        match self {
            JsonType::Object => value.is_object(),
            JsonType::Array => value.is_array(),
            JsonType::String => value.is_string(),
            JsonType::Integer => integer(value).is_some(),
            JsonType::Number => value.is_number(),
            JsonType::Boolean => value.is_boolean(),
        }
    }
}

/// One schema keyword, evaluated in declaration order like jsonschema does with the schema
/// dict's items.
enum Keyword {
    Type(JsonType),
    Enum(&'static [&'static str]),
    Properties(&'static [(&'static str, Schema)]),
    AdditionalProperties(&'static Schema),
    Required(&'static [&'static str]),
    Items(&'static Schema),
    AnyOf(&'static [Schema]),
}

struct Schema(&'static [Keyword]);

const STRING: Schema = Schema(&[Keyword::Type(JsonType::String)]);
const NUMBER: Schema = Schema(&[Keyword::Type(JsonType::Number)]);
const BOOLEAN: Schema = Schema(&[Keyword::Type(JsonType::Boolean)]);
const INTEGER: Schema = Schema(&[Keyword::Type(JsonType::Integer)]);
const STRING_ARRAY: Schema = Schema(&[Keyword::Type(JsonType::Array), Keyword::Items(&STRING)]);
const FILTER_SCALAR: Schema = Schema(&[Keyword::AnyOf(&[NUMBER, STRING, BOOLEAN])]);
const FILTER: Schema = Schema(&[
    Keyword::Type(JsonType::Object),
    Keyword::Properties(&[
        ("col", STRING),
        ("opr", STRING),
        (
            "value",
            Schema(&[Keyword::AnyOf(&[
                NUMBER,
                STRING,
                BOOLEAN,
                Schema(&[
                    Keyword::Type(JsonType::Array),
                    Keyword::Items(&FILTER_SCALAR),
                ]),
            ])]),
        ),
    ]),
    Keyword::Required(&["col", "opr", "value"]),
]);
const PAGE_ARGS: Schema = Schema(&[
    Keyword::Type(JsonType::Object),
    Keyword::Properties(&[("page_size", INTEGER), ("page", INTEGER)]),
]);

static LIST_SCHEMA: Schema = Schema(&[
    Keyword::Type(JsonType::Object),
    Keyword::Properties(&[
        (
            "keys",
            Schema(&[
                Keyword::Type(JsonType::Array),
                Keyword::Items(&Schema(&[
                    Keyword::Type(JsonType::String),
                    Keyword::Enum(&[
                        "list_columns",
                        "order_columns",
                        "label_columns",
                        "description_columns",
                        "list_title",
                        "none",
                    ]),
                ])),
            ]),
        ),
        ("columns", STRING_ARRAY),
        ("select_columns", STRING_ARRAY),
        ("order_column", STRING),
        (
            "order_direction",
            Schema(&[
                Keyword::Type(JsonType::String),
                Keyword::Enum(&["asc", "desc"]),
            ]),
        ),
        ("page", INTEGER),
        ("page_size", INTEGER),
        (
            "filters",
            Schema(&[Keyword::Type(JsonType::Array), Keyword::Items(&FILTER)]),
        ),
    ]),
]);

static ITEM_SCHEMA: Schema = Schema(&[
    Keyword::Type(JsonType::Object),
    Keyword::Properties(&[
        (
            "keys",
            Schema(&[
                Keyword::Type(JsonType::Array),
                Keyword::Items(&Schema(&[
                    Keyword::Type(JsonType::String),
                    Keyword::Enum(&[
                        "show_columns",
                        "description_columns",
                        "label_columns",
                        "show_title",
                        "none",
                    ]),
                ])),
            ]),
        ),
        ("columns", STRING_ARRAY),
    ]),
]);

/// Not in FAB's schema, checked after it: see [`parse_item_query`].
static ITEM_SELECT_COLUMNS_SCHEMA: Schema =
    Schema(&[Keyword::Properties(&[("select_columns", STRING_ARRAY)])]);

static INFO_SCHEMA: Schema = Schema(&[
    Keyword::Type(JsonType::Object),
    Keyword::Properties(&[
        (
            "keys",
            Schema(&[
                Keyword::Type(JsonType::Array),
                Keyword::Items(&Schema(&[
                    Keyword::Type(JsonType::String),
                    Keyword::Enum(&[
                        "add_columns",
                        "edit_columns",
                        "filters",
                        "permissions",
                        "add_title",
                        "edit_title",
                        "none",
                    ]),
                ])),
            ]),
        ),
        (
            "add_columns",
            Schema(&[
                Keyword::Type(JsonType::Object),
                Keyword::AdditionalProperties(&PAGE_ARGS),
            ]),
        ),
        (
            "edit_columns",
            Schema(&[
                Keyword::Type(JsonType::Object),
                Keyword::AdditionalProperties(&PAGE_ARGS),
            ]),
        ),
    ]),
]);

static DRILL_INFO_SCHEMA: Schema = Schema(&[
    Keyword::Type(JsonType::Object),
    Keyword::Properties(&[("dashboard_id", INTEGER)]),
]);

static IDS_SCHEMA: Schema = Schema(&[Keyword::Type(JsonType::Array), Keyword::Items(&INTEGER)]);

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PathItem {
    Index(usize),
    Key(String),
}

enum Failure {
    Type(JsonType),
    Enum(&'static [&'static str]),
    Required(&'static str),
    AnyOf,
}

struct SchemaError<'a> {
    instance: &'a Value,
    failure: Failure,
    /// The instance path, relative to where the error's validation started.
    path: Vec<PathItem>,
    /// The instance does not match the `type` of the schema holding the failing keyword
    /// (or that schema has no `type`): jsonschema's `not error._matches_type()`.
    type_mismatch: bool,
    context: Vec<SchemaError<'a>>,
}

impl SchemaError<'_> {
    fn message(&self) -> String {
        // Decoded values nest at most MAX_DEPTH deep, so the whole instance is printed.
        let instance = py::json_to_depth(self.instance, MAX_DEPTH + 1);
        match self.failure {
            Failure::Type(expected) => {
                format!("{instance} is not of type '{}'", expected.name())
            }
            Failure::Enum(options) => {
                let options: Vec<String> = options.iter().map(|o| py::str(o)).collect();
                format!("{instance} is not one of [{}]", options.join(", "))
            }
            Failure::Required(property) => {
                format!("{} is a required property", py::str(property))
            }
            Failure::AnyOf => format!("{instance} is not valid under any of the given schemas"),
        }
    }
}

/// jsonschema's `relevance` key: prefer shallower errors, then later siblings, then
/// anything but `anyOf`, then type mismatches.
fn relevance(a: &SchemaError<'_>, b: &SchemaError<'_>) -> Ordering {
    b.path
        .len()
        .cmp(&a.path.len())
        .then_with(|| a.path.cmp(&b.path))
        .then_with(|| {
            let a_weak = matches!(a.failure, Failure::AnyOf);
            let b_weak = matches!(b.failure, Failure::AnyOf);
            b_weak.cmp(&a_weak)
        })
        .then_with(|| a.type_mismatch.cmp(&b.type_mismatch))
}

/// `jsonschema.validate`: the `best_match` of all errors, as [`QError::Schema`].
fn validate(instance: &Value, schema: &Schema) -> Result<(), QError> {
    let mut errors = Vec::new();
    collect_errors(instance, schema, &[], &mut errors);
    match best_match(errors) {
        None => Ok(()),
        Some(error) => Err(QError::Schema(error.message())),
    }
}

fn best_match(errors: Vec<SchemaError<'_>>) -> Option<SchemaError<'_>> {
    let mut best: Option<SchemaError<'_>> = None;
    for error in errors {
        // `max` keeps the first of equals.
        if best
            .as_ref()
            .is_none_or(|b| relevance(&error, b) == Ordering::Greater)
        {
            best = Some(error);
        }
    }
    let mut best = best?;
    loop {
        let mut context = std::mem::take(&mut best.context);
        // Stable, like `heapq.nsmallest`.
        context.sort_by(relevance);
        let mut smallest = context.into_iter();
        let Some(first) = smallest.next() else {
            return Some(best);
        };
        if let Some(second) = smallest.next()
            && relevance(&first, &second) == Ordering::Equal
        {
            return Some(best);
        }
        best = first;
    }
}

fn collect_errors<'a>(
    instance: &'a Value,
    schema: &Schema,
    path: &[PathItem],
    out: &mut Vec<SchemaError<'a>>,
) {
    let type_mismatch = !schema
        .0
        .iter()
        .any(|keyword| matches!(keyword, Keyword::Type(t) if t.matches(instance)));
    let error = |failure, context| SchemaError {
        instance,
        failure,
        path: path.to_vec(),
        type_mismatch,
        context,
    };
    let descend = |step: PathItem| {
        let mut child = path.to_vec();
        child.push(step);
        child
    };
    for keyword in schema.0 {
        match keyword {
            Keyword::Type(expected) => {
                if !expected.matches(instance) {
                    out.push(error(Failure::Type(*expected), Vec::new()));
                }
            }
            Keyword::Enum(options) => {
                let found = instance.as_str().is_some_and(|s| options.contains(&s));
                if !found {
                    out.push(error(Failure::Enum(options), Vec::new()));
                }
            }
            Keyword::Properties(properties) => {
                if let Value::Object(map) = instance {
                    for (name, subschema) in *properties {
                        if let Some(value) = map.get(*name) {
                            let child = descend(PathItem::Key((*name).to_owned()));
                            collect_errors(value, subschema, &child, out);
                        }
                    }
                }
            }
            Keyword::AdditionalProperties(subschema) => {
                if let Value::Object(map) = instance {
                    let declared = |name: &str| {
                        schema.0.iter().any(|k| {
                            matches!(k, Keyword::Properties(p) if p.iter().any(|(n, _)| *n == name))
                        })
                    };
                    for (name, value) in map.iter().filter(|(name, _)| !declared(name)) {
                        let child = descend(PathItem::Key(name.clone()));
                        collect_errors(value, subschema, &child, out);
                    }
                }
            }
            Keyword::Required(names) => {
                if let Value::Object(map) = instance {
                    for name in *names {
                        if !map.contains_key(*name) {
                            out.push(error(Failure::Required(name), Vec::new()));
                        }
                    }
                }
            }
            Keyword::Items(subschema) => {
                if let Value::Array(items) = instance {
                    for (index, item) in items.iter().enumerate() {
                        collect_errors(item, subschema, &descend(PathItem::Index(index)), out);
                    }
                }
            }
            Keyword::AnyOf(alternatives) => {
                let mut context = Vec::new();
                let mut matched = false;
                for alternative in *alternatives {
                    let mut errors = Vec::new();
                    collect_errors(instance, alternative, &[], &mut errors);
                    if errors.is_empty() {
                        matched = true;
                        break;
                    }
                    context.extend(errors);
                }
                if !matched {
                    out.push(error(Failure::AnyOf, context));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rison(s: &str) -> Value {
        match parse_rison(s) {
            Ok(value) => value,
            Err(e) => panic!("{s:?} should parse: {e}"),
        }
    }

    fn rison_error(s: &str) -> RisonErrorKind {
        match parse_rison(s) {
            Ok(value) => panic!("{s:?} should not parse, got {value}"),
            Err(e) => e.kind,
        }
    }

    fn list_error(q: &str) -> String {
        match parse_list_query(Some(q)) {
            Ok(query) => panic!("{q:?} should be rejected, got {query:?}"),
            Err(e) => e.message(),
        }
    }

    fn list(q: &str) -> ListQuery {
        match parse_list_query(Some(q)) {
            Ok(query) => query,
            Err(e) => panic!("{q:?} should be accepted: {}", e.message()),
        }
    }

    // --- rison ------------------------------------------------------------------------

    #[test]
    fn an_object_with_one_integer_parses() {
        assert_eq!(rison("(a:1)"), json!({"a": 1}));
    }

    #[test]
    fn an_array_of_integers_parses() {
        assert_eq!(rison("!(1,2)"), json!([1, 2]));
    }

    #[test]
    fn a_quoted_string_keeps_its_space() {
        assert_eq!(rison("'a b'"), json!("a b"));
    }

    #[test]
    fn bang_literals_are_true_false_and_null() {
        assert_eq!(rison("!t"), json!(true));
        assert_eq!(rison("!f"), json!(false));
        assert_eq!(rison("!n"), Value::Null);
    }

    #[test]
    fn bang_quote_escapes_a_quote() {
        assert_eq!(rison("'it!'s'"), json!("it's"));
    }

    #[test]
    fn double_bang_escapes_a_bang() {
        assert_eq!(rison("'!!'"), json!("!"));
        assert_eq!(rison("'a!!b!'c'"), json!("a!b'c"));
    }

    #[test]
    fn empty_object_empty_array_and_empty_string_parse() {
        assert_eq!(rison("()"), json!({}));
        assert_eq!(rison("!()"), json!([]));
        assert_eq!(rison("''"), json!(""));
        assert_eq!(rison("(a:!(),b:())"), json!({"a": [], "b": {}}));
    }

    #[test]
    fn numbers_parse_as_python_int_and_float_would() {
        assert_eq!(rison("-1"), json!(-1));
        assert_eq!(rison("1.5"), json!(1.5));
        assert_eq!(rison("-1.5e-3"), json!(-0.0015));
        assert_eq!(rison("1e5"), json!(100000.0));
        assert_eq!(rison("1.5E3"), json!(1500.0));
        assert_eq!(rison("007"), json!(7));
        assert_eq!(rison("1."), json!(1.0));
        assert_eq!(rison("-.5"), json!(-0.5));
        assert_eq!(rison("18446744073709551615"), json!(u64::MAX));
        assert_eq!(rison("-9223372036854775808"), json!(i64::MIN));
    }

    #[test]
    fn a_float_is_not_an_integer_even_when_integral() {
        assert!(rison("1.0").as_f64().is_some());
        assert_eq!(rison("1.0").as_i64(), None);
        assert_eq!(rison("1").as_i64(), Some(1));
    }

    #[test]
    fn integers_beyond_u64_become_floats() {
        assert_eq!(rison("99999999999999999999999"), json!(1e23));
    }

    #[test]
    fn numbers_python_refuses_are_errors() {
        for s in ["1E5", "1-2", "--1", "-.e5", "1e-", "1.5-", "1e5-", "-"] {
            assert_eq!(rison_error(s), RisonErrorKind::InvalidNumber, "{s}");
        }
        assert_eq!(rison_error("1e400"), RisonErrorKind::NumberOutOfRange);
    }

    #[test]
    fn bare_ids_take_prisons_id_characters() {
        assert_eq!(rison("a~b.c_d-e+f%g/h"), json!("a~b.c_d-e+f%g/h"));
        assert_eq!(rison(r"b\c"), json!(r"b\c"));
        assert_eq!(rison("café"), json!("café"));
        assert_eq!(rison("\u{7f}"), json!("\u{7f}"));
        assert_eq!(rison(".5"), json!(".5"));
        assert_eq!(rison("true"), json!("true"));
    }

    #[test]
    fn quoted_keys_and_scalar_keys_become_python_str_keys() {
        assert_eq!(rison("('a b':1)"), json!({"a b": 1}));
        assert_eq!(
            rison("(1:a,1.5:b,!t:c,!f:d,!n:e)"),
            json!({"1": "a", "1.5": "b", "True": "c", "False": "d", "None": "e"})
        );
        assert_eq!(rison("(a:1,a:2)"), json!({"a": 2}));
    }

    #[test]
    fn objects_and_arrays_cannot_be_keys() {
        assert_eq!(rison_error("((a:1):2)"), RisonErrorKind::UnhashableKey);
        assert_eq!(rison_error("(!(1):2)"), RisonErrorKind::UnhashableKey);
    }

    #[test]
    fn malformed_rison_gives_prisons_errors() {
        let cases = [
            ("(a:1,)", RisonErrorKind::InvalidCharacter(')')),
            ("!(,1)", RisonErrorKind::ExtraComma),
            ("(,a:1)", RisonErrorKind::ExtraComma),
            ("(a)", RisonErrorKind::MissingColon),
            ("'abc", RisonErrorKind::UnmatchedQuote),
            ("'a!b'", RisonErrorKind::InvalidEscape('b')),
            ("'abc!", RisonErrorKind::EscapeAtEnd),
            ("! ", RisonErrorKind::UnknownLiteral(' ')),
            ("!", RisonErrorKind::BangAtEnd),
            ("(", RisonErrorKind::UnmatchedParen),
            ("(a:1", RisonErrorKind::UnmatchedParen),
            ("!(1", RisonErrorKind::UnmatchedArray),
            ("a b", RisonErrorKind::TrailingCharacters),
            ("(a:1))", RisonErrorKind::TrailingCharacters),
            ("1.5.3", RisonErrorKind::TrailingCharacters),
            ("( a:1)", RisonErrorKind::InvalidCharacter(' ')),
            ("!(1 2)", RisonErrorKind::MissingComma),
            ("(a:1b)", RisonErrorKind::MissingComma),
            ("(:1)", RisonErrorKind::InvalidCharacter(':')),
            ("", RisonErrorKind::Empty),
            ("(a:", RisonErrorKind::Empty),
        ];
        for (input, kind) in cases {
            assert_eq!(rison_error(input), kind, "{input:?}");
        }
    }

    #[test]
    fn rison_errors_report_where_they_happened() {
        let error = parse_rison("(a:1,b)").unwrap_err();
        assert_eq!(error.position, 6);
        assert_eq!(error.to_string(), "missing ':' at byte 6");
    }

    /// Inputs and `prison.loads` results (prison 0.2.1, keys passed through `str()`, dumped
    /// with `json.dumps`); `None` where prison raises.
    #[test]
    fn the_parser_agrees_with_prison_on_tricky_strings() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"(a:b\c)"#, Some(r#"{"a":"b\\c"}"#)),
            (r#"-1.5e-3"#, Some(r#"-0.0015"#)),
            (r#"1."#, Some(r#"1.0"#)),
            (r#"-.5"#, Some(r#"-0.5"#)),
            (r#"1e5"#, Some(r#"100000.0"#)),
            (r#"1.5E3"#, Some(r#"1500.0"#)),
            (r#"007"#, Some(r#"7"#)),
            (r#"-0"#, Some(r#"0"#)),
            (r#"-1e-5"#, Some(r#"-1e-05"#)),
            (r#"1.e5"#, Some(r#"100000.0"#)),
            (r#"-0.0"#, Some(r#"-0.0"#)),
            (r#"(1:2)"#, Some(r#"{"1":2}"#)),
            (r#"('a b':1)"#, Some(r#"{"a b":1}"#)),
            (r#"(!t:1)"#, Some(r#"{"True":1}"#)),
            (r#"(!n:x)"#, Some(r#"{"None":"x"}"#)),
            (r#"(1.5:x)"#, Some(r#"{"1.5":"x"}"#)),
            (r#"café"#, Some(r#""café""#)),
            (r#"a~b.c_d-e+f%g/h"#, Some(r#""a~b.c_d-e+f%g/h""#)),
            (r#".5"#, Some(r#"".5""#)),
            (r#"+1"#, Some(r#""+1""#)),
            (r#"true"#, Some(r#""true""#)),
            (r#"''"#, Some(r#""""#)),
            (r#"'it!'s'"#, Some(r#""it's""#)),
            (r#"'!!'"#, Some(r#""!""#)),
            (r#"(a:1,a:2)"#, Some(r#"{"a":2}"#)),
            (r#"!(!(!()))"#, Some(r#"[[[]]]"#)),
            (r#"(a:())"#, Some(r#"{"a":{}}"#)),
            (
                r#"(a:b,c:!(1,'x y',!t,!n,(d:e)))"#,
                Some(r#"{"a":"b","c":[1,"x y",true,null,{"d":"e"}]}"#),
            ),
            (r#"%7B%22page%22%3A1%7D"#, Some(r#""%7B%22page%22%3A1%7D""#)),
            (r#"'(a:1)'"#, Some(r#""(a:1)""#)),
            (r#"'!'!!'"#, Some(r#""'!""#)),
            (r#"(é:ü)"#, Some(r#"{"é":"ü"}"#)),
            (r#"(a:'')"#, Some(r#"{"a":""}"#)),
            (r#"'a''"#, None),
            (r#"!(-,1)"#, None),
            (r#"(:1)"#, None),
            (r#"0x10"#, None),
            (r#"(a:-)"#, None),
            (r#"!(1,2)x"#, None),
        ];
        for (input, expected) in cases {
            let expected: Option<Value> = expected.map(|e| serde_json::from_str(e).unwrap());
            assert_eq!(parse_rison(input).ok(), expected, "{input:?}");
        }
    }

    #[test]
    fn nesting_up_to_the_limit_parses_and_one_more_level_does_not() {
        let ok = format!("{}{}", "!(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse_rison(&ok).is_ok());
        let deep = format!(
            "{}{}",
            "!(".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(rison_error(&deep), RisonErrorKind::TooDeep);
        let objects = format!(
            "{}1{}",
            "(a:".repeat(MAX_DEPTH + 1),
            ")".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(rison_error(&objects), RisonErrorKind::TooDeep);
    }

    #[test]
    fn a_hundred_thousand_open_parens_are_an_error_not_a_crash() {
        let bomb = "(".repeat(100_000);
        assert_eq!(rison_error(&bomb), RisonErrorKind::TooDeep);
        let bomb = "(a:".repeat(100_000);
        assert_eq!(rison_error(&bomb), RisonErrorKind::TooDeep);
        let bomb = "!(".repeat(100_000);
        assert_eq!(rison_error(&bomb), RisonErrorKind::TooDeep);
        let json_bomb = "[".repeat(100_000);
        assert_eq!(
            decode_q(Some(&json_bomb)).unwrap_err().message(),
            "Not a valid rison/json argument"
        );
        assert_eq!(
            list_error(&"(".repeat(100_000)),
            "Not a valid rison/json argument"
        );
    }

    // --- decode_q ---------------------------------------------------------------------

    #[test]
    fn an_absent_or_empty_q_is_an_empty_object() {
        assert_eq!(decode_q(None), Ok(json!({})));
        assert_eq!(decode_q(Some("")), Ok(json!({})));
    }

    #[test]
    fn json_is_accepted_when_rison_fails() {
        assert_eq!(decode_q(Some(r#"{"page":1}"#)), Ok(json!({"page": 1})));
        assert_eq!(decode_q(Some("[1,2]")), Ok(json!([1, 2])));
        assert_eq!(decode_q(Some(r#""abc""#)), Ok(json!("abc")));
        assert_eq!(decode_q(Some(r#" {"a":1}"#)), Ok(json!({"a": 1})));
    }

    #[test]
    fn json_is_url_decoded_once_more_like_parse_qs() {
        assert_eq!(decode_q(Some("{%22page%22:1}")), Ok(json!({"page": 1})));
        assert_eq!(
            decode_q(Some("{%22page%22:%20%22a%2Bb%22}")),
            Ok(json!({"page": "a+b"}))
        );
        assert_eq!(decode_q(Some(r#"{"a":"x+y"}"#)), Ok(json!({"a": "x y"})));
        assert_eq!(decode_q(Some(r#"{"a":"x%26y"}"#)), Ok(json!({"a": "x&y"})));
        assert_eq!(
            decode_q(Some(r#"{"a":"%E2%82"}"#)),
            Ok(json!({"a": "\u{fffd}"}))
        );
        assert_eq!(decode_q(Some(r#"{"a":1}&q=5"#)), Ok(json!({"a": 1})));
    }

    #[test]
    fn an_unescaped_ampersand_cuts_the_json_short() {
        assert_eq!(
            decode_q(Some(r#"{"a":"x&y"}"#)).unwrap_err().message(),
            "Not a valid rison/json argument"
        );
    }

    #[test]
    fn fully_percent_encoded_json_is_a_rison_string() {
        assert_eq!(
            decode_q(Some("%7B%22page%22%3A1%7D")),
            Ok(json!("%7B%22page%22%3A1%7D"))
        );
        assert_eq!(
            list_error("%7B%22page%22%3A1%7D"),
            "Not a valid rison schema '%7B%22page%22%3A1%7D' is not of type 'object'"
        );
    }

    #[test]
    fn neither_rison_nor_json_is_not_a_valid_argument() {
        for q in [
            "(a:1,)", "{page:1}", "'abc", "(a: 1)", "!(1,2", "!x", "{\"a\":1", "1E5x",
        ] {
            let error = decode_q(Some(q)).unwrap_err();
            assert_eq!(error.message(), "Not a valid rison/json argument", "{q:?}");
            assert!(matches!(error, QError::InvalidArgument { .. }));
        }
    }

    #[test]
    fn json_nesting_beyond_the_limit_is_rejected() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(decode_q(Some(&ok)).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(decode_q(Some(&deep)).is_err());
    }

    // --- list -------------------------------------------------------------------------

    #[test]
    fn the_chart_list_query_of_the_frontend_parses() {
        let query = list(
            "(filters:!((col:slice_name,opr:ct,value:foo)),order_column:changed_on_delta_humanized,\
             order_direction:desc,page:0,page_size:25)",
        );
        assert_eq!(
            query,
            ListQuery {
                filters: vec![Filter {
                    col: "slice_name".into(),
                    opr: "ct".into(),
                    value: json!("foo"),
                }],
                order_column: Some("changed_on_delta_humanized".into()),
                order_direction: Some(OrderDirection::Desc),
                page: Some(0),
                page_size: Some(25),
                columns: None,
                select_columns: None,
                keys: None,
            }
        );
        assert_eq!(
            query.order(),
            Some(("changed_on_delta_humanized", OrderDirection::Desc))
        );
    }

    #[test]
    fn the_spec_example_parses() {
        let query = list(
            "(columns:!(id,slice_name),keys:!(none),filters:!((col:slice_name,opr:ct,value:foo)),\
             order_column:changed_on_delta_humanized,order_direction:desc,page:0,page_size:25)",
        );
        assert_eq!(
            query.columns,
            Some(vec!["id".to_owned(), "slice_name".to_owned()])
        );
        assert_eq!(query.keys, Some(vec!["none".to_owned()]));
        assert!(!query.wants_key("list_columns"));
        assert_eq!(query.filters.len(), 1);
        assert_eq!(query.page_index(), 0);
        assert_eq!(query.page_size, Some(25));
    }

    #[test]
    fn an_absent_q_is_an_empty_list_query() {
        assert_eq!(parse_list_query(None), Ok(ListQuery::default()));
        assert_eq!(parse_list_query(Some("")), Ok(ListQuery::default()));
        assert!(ListQuery::default().wants_key("list_columns"));
        assert_eq!(ListQuery::default().order(), None);
    }

    #[test]
    fn json_list_queries_work_like_rison_ones() {
        let query = list(r#"{"page":1,"filters":[{"col":"id","opr":"in","value":[1,2]}]}"#);
        assert_eq!(query.page, Some(1));
        assert_eq!(query.filters[0].value, json!([1, 2]));
    }

    #[test]
    fn filter_values_may_be_scalars_or_lists_of_scalars() {
        let query = list(
            "(filters:!((col:a,opr:eq,value:1),(col:b,opr:eq,value:!t),\
             (col:c,opr:in,value:!(1,x,!f)),(col:d,opr:eq,value:-2.5),(col:e,opr:eq,value:'')))",
        );
        let values: Vec<Value> = query.filters.into_iter().map(|f| f.value).collect();
        assert_eq!(
            values,
            vec![
                json!(1),
                json!(true),
                json!([1, "x", false]),
                json!(-2.5),
                json!("")
            ]
        );
    }

    #[test]
    fn unknown_keys_and_extra_filter_keys_are_ignored() {
        let query = list("(whatever:!(1),page:2,filters:!((col:a,opr:eq,value:1,extra:x)))");
        assert_eq!(query.page, Some(2));
        assert_eq!(query.filters.len(), 1);
    }

    #[test]
    fn an_order_column_without_direction_sorts_descending() {
        let query = list("(order_column:name)");
        assert_eq!(query.order_direction, None);
        assert_eq!(query.order(), Some(("name", OrderDirection::Desc)));
        assert_eq!(
            list("(order_column:name,order_direction:asc)").order(),
            Some(("name", OrderDirection::Asc))
        );
    }

    #[test]
    fn an_empty_order_column_means_the_base_order() {
        let query = list("(order_column:'',order_direction:asc)");
        assert_eq!(query.order_column, None);
        assert_eq!(query.order(), None);
    }

    #[test]
    fn empty_column_and_key_lists_mean_absent() {
        let query = list("(columns:!(),select_columns:!(a),keys:!())");
        assert_eq!(query.columns, None);
        assert_eq!(query.select_columns, Some(vec!["a".to_owned()]));
        assert_eq!(query.keys, None);
        assert!(query.wants_key("list_title"));
    }

    #[test]
    fn an_integral_float_page_is_an_integer() {
        assert_eq!(list("(page:1.0,page_size:1e16)").page, Some(1));
        assert_eq!(
            list("(page_size:1e16)").page_size,
            Some(10_000_000_000_000_000)
        );
        assert_eq!(list("(page_size:1e300)").page_size, Some(i64::MAX));
        assert_eq!(list("(page_size:-1)").page_size, Some(-1));
    }

    /// Each expected text was produced by FAB 5's `@rison` logic with jsonschema 4.23.
    #[test]
    fn schema_violations_give_jsonschemas_exact_message() {
        let cases = [
            (
                "(page:a,order_direction:up)",
                "'a' is not of type 'integer'",
            ),
            (
                "(order_direction:up,keys:!(foo))",
                "'up' is not one of ['asc', 'desc']",
            ),
            (
                "(keys:!(foo))",
                "'foo' is not one of ['list_columns', 'order_columns', 'label_columns', \
                 'description_columns', 'list_title', 'none']",
            ),
            (
                "(filters:!((col:a,opr:eq,value:!n)))",
                "None is not valid under any of the given schemas",
            ),
            (
                "(filters:!((col:a,opr:eq,value:!(a,!n))))",
                "None is not valid under any of the given schemas",
            ),
            (
                "(filters:!((col:a,opr:eq,value:(x:1))))",
                "{'x': 1} is not valid under any of the given schemas",
            ),
            (
                "(filters:!((col:a,opr:eq)))",
                "'value' is a required property",
            ),
            (
                "(filters:!((col:a,value:1)))",
                "'opr' is a required property",
            ),
            (
                "(filters:!((col:1,opr:2)))",
                "'value' is a required property",
            ),
            (
                "(filters:!(a,(col:a,opr:eq,value:!n)))",
                "'a' is not of type 'object'",
            ),
            ("(filters:(col:a))", "{'col': 'a'} is not of type 'array'"),
            ("(keys:!(1))", "1 is not of type 'string'"),
            ("(columns:a)", "'a' is not of type 'array'"),
            ("(page:1.5)", "1.5 is not of type 'integer'"),
            ("(page:!t)", "True is not of type 'integer'"),
            ("(page_size:!n)", "None is not of type 'integer'"),
            ("(page_size:1e-5)", "1e-05 is not of type 'integer'"),
            ("(page_size:0.0001)", "0.0001 is not of type 'integer'"),
            ("(page_size:'a\"b')", "'a\"b' is not of type 'integer'"),
            (
                "(page_size:'a\"b!'c')",
                r#"'a"b\'c' is not of type 'integer'"#,
            ),
            ("(page_size:'it!'s')", r#""it's" is not of type 'integer'"#),
            (r"(page_size:'\ x')", r"'\\ x' is not of type 'integer'"),
            ("(order_column:!(a))", "['a'] is not of type 'string'"),
            ("!(1,2)", "[1, 2] is not of type 'object'"),
            ("abc", "'abc' is not of type 'object'"),
            (r#"{"page": "x"}"#, "'x' is not of type 'integer'"),
        ];
        for (q, message) in cases {
            assert_eq!(
                list_error(q),
                format!("Not a valid rison schema {message}"),
                "{q:?}"
            );
        }
    }

    #[test]
    fn a_negative_page_is_rejected() {
        assert_eq!(
            list_error("(page:-1)"),
            "Not a valid rison schema -1 is less than the minimum of 0"
        );
    }

    #[test]
    fn columns_and_select_columns_together_are_rejected() {
        assert_eq!(
            list_error("(columns:!(a),select_columns:!(b))"),
            "Cannot use both select and sel columns"
        );
    }

    #[test]
    fn an_invalid_q_on_a_list_is_not_a_valid_argument() {
        assert_eq!(list_error("(a:1"), "Not a valid rison/json argument");
        assert_eq!(list_error("{\"page\":}"), "Not a valid rison/json argument");
    }

    // --- item, info, ids --------------------------------------------------------------

    #[test]
    fn an_item_query_takes_columns_and_keys() {
        let query =
            parse_item_query(Some("(columns:!(id,slice_name),keys:!(show_columns))")).unwrap();
        assert_eq!(
            query,
            ItemQuery {
                columns: Some(vec!["id".to_owned(), "slice_name".to_owned()]),
                select_columns: None,
                keys: Some(vec!["show_columns".to_owned()]),
            }
        );
        assert!(query.wants_key("show_columns"));
        assert!(!query.wants_key("show_title"));
        assert_eq!(parse_item_query(None), Ok(ItemQuery::default()));
    }

    #[test]
    fn an_item_query_rejects_list_keys_and_both_column_args() {
        assert_eq!(
            parse_item_query(Some("(keys:!(list_columns))"))
                .unwrap_err()
                .message(),
            "Not a valid rison schema 'list_columns' is not one of ['show_columns', \
             'description_columns', 'label_columns', 'show_title', 'none']"
        );
        assert_eq!(
            parse_item_query(Some("(columns:!(a),select_columns:!(b))"))
                .unwrap_err()
                .message(),
            "Cannot use both select and sel columns"
        );
        assert_eq!(
            parse_item_query(Some("(select_columns:5)"))
                .unwrap_err()
                .message(),
            "Not a valid rison schema 5 is not of type 'array'"
        );
    }

    #[test]
    fn an_info_query_takes_keys_and_related_pages() {
        let query = parse_info_query(Some(
            "(keys:!(permissions,add_columns),add_columns:(owners:(page:0,page_size:10)))",
        ))
        .unwrap();
        assert_eq!(
            query.keys,
            Some(vec!["permissions".to_owned(), "add_columns".to_owned()])
        );
        assert_eq!(
            query.add_columns.get("owners"),
            Some(&ColumnPage {
                page: Some(0),
                page_size: Some(10)
            })
        );
        assert!(query.edit_columns.is_empty());
        assert!(query.wants_key("permissions"));
        assert!(!query.wants_key("filters"));
    }

    #[test]
    fn an_info_query_gives_jsonschemas_messages() {
        let cases = [
            (
                "(add_columns:(owners:(page:a)))",
                "'a' is not of type 'integer'",
            ),
            ("(add_columns:(owners:5))", "5 is not of type 'object'"),
            ("(edit_columns:!())", "[] is not of type 'object'"),
            (
                "(keys:!(foo))",
                "'foo' is not one of ['add_columns', 'edit_columns', 'filters', 'permissions', \
                 'add_title', 'edit_title', 'none']",
            ),
        ];
        for (q, message) in cases {
            assert_eq!(
                parse_info_query(Some(q)).unwrap_err().message(),
                format!("Not a valid rison schema {message}"),
                "{q:?}"
            );
        }
    }

    #[test]
    fn bulk_delete_ids_parse_from_rison_and_json() {
        assert_eq!(parse_ids(Some("!(1,2)")), Ok(vec![1, 2]));
        assert_eq!(parse_ids(Some("!()")), Ok(vec![]));
        assert_eq!(parse_ids(Some("!(1.0,2)")), Ok(vec![1, 2]));
        assert_eq!(parse_ids(Some("[3,4]")), Ok(vec![3, 4]));
    }

    #[test]
    fn bad_bulk_delete_ids_give_jsonschemas_messages() {
        let cases = [
            (Some("!(a)"), "'a' is not of type 'integer'"),
            (Some("!(1,1.5,a)"), "'a' is not of type 'integer'"),
            (Some("!(!t)"), "True is not of type 'integer'"),
            (Some("(a:1,b:2)"), "{'a': 1, 'b': 2} is not of type 'array'"),
            (None, "{} is not of type 'array'"),
        ];
        for (q, message) in cases {
            assert_eq!(
                parse_ids(q).unwrap_err().message(),
                format!("Not a valid rison schema {message}"),
                "{q:?}"
            );
        }
        assert_eq!(
            parse_ids(Some("!(1,")).unwrap_err().message(),
            "Not a valid rison/json argument"
        );
    }

    // --- page size --------------------------------------------------------------------

    #[test]
    fn page_size_defaults_and_clamps_like_fab() {
        let clamp = |requested| effective_page_size(requested, 20, 100);
        assert_eq!(clamp(None), Some(20));
        assert_eq!(clamp(Some(0)), Some(20));
        assert_eq!(clamp(Some(1)), Some(1));
        assert_eq!(clamp(Some(25)), Some(25));
        assert_eq!(clamp(Some(100)), Some(100));
        assert_eq!(clamp(Some(101)), Some(100));
        assert_eq!(clamp(Some(-1)), Some(100));
        assert_eq!(clamp(Some(i64::MIN)), Some(100));
        assert_eq!(effective_page_size(None, 500, 100), Some(100));
    }

    #[test]
    fn an_unlimited_max_makes_minus_one_unpaginated() {
        let unlimited = |requested| effective_page_size(requested, 20, UNLIMITED_PAGE_SIZE);
        assert_eq!(unlimited(Some(-1)), None);
        assert_eq!(unlimited(Some(5000)), Some(5000));
        assert_eq!(unlimited(None), Some(20));
        assert_eq!(unlimited(Some(0)), Some(20));
        assert_eq!(unlimited(Some(-5)), Some(-5));
    }

    // --- error texts ------------------------------------------------------------------

    #[test]
    fn resource_level_errors_have_fabs_texts() {
        assert_eq!(
            QError::InvalidOrderColumn("x".into()).message(),
            "Invalid order by column: x"
        );
        assert_eq!(
            QError::FilterColumnNotAllowed("x".into()).message(),
            "Filter column: x not allowed to filter"
        );
        assert_eq!(
            QError::FilterOperationNotAllowed {
                col: "name".into(),
                opr: "gt".into()
            }
            .message(),
            "Filter operation: gt not allowed on column: name"
        );
    }

    // --- robustness -------------------------------------------------------------------

    /// xorshift64*, so the test needs no extra crate and is reproducible.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
        }
    }

    fn check_never_panics(q: &str) {
        if let Ok(value) = parse_rison(q) {
            assert!(depth_within(&value, MAX_DEPTH), "{q:?}");
        }
        if let Ok(value) = decode_q(Some(q)) {
            assert!(depth_within(&value, MAX_DEPTH), "{q:?}");
        }
        for message in [
            parse_list_query(Some(q)).err().map(|e| e.message()),
            parse_item_query(Some(q)).err().map(|e| e.message()),
            parse_info_query(Some(q)).err().map(|e| e.message()),
            parse_ids(Some(q)).err().map(|e| e.message()),
        ]
        .into_iter()
        .flatten()
        {
            assert!(!message.is_empty());
        }
    }

    #[test]
    fn random_garbage_never_panics() {
        const PIECES: &[&str] = &[
            "(",
            ")",
            "!(",
            "!",
            "'",
            ",",
            ":",
            "!t",
            "!f",
            "!n",
            "!!",
            "!'",
            "-",
            ".",
            "e",
            "E",
            "0",
            "7",
            "1.5",
            "a",
            "Z",
            "_",
            "%",
            "%2",
            "%22",
            "+",
            "&",
            "=",
            "q",
            " ",
            "\\",
            "\"",
            "{",
            "}",
            "[",
            "]",
            "é",
            "€",
            "😀",
            "\u{0}",
            "\u{7f}",
            "\u{fffd}",
            "page:",
            "page_size:",
            "filters:!((col:a,opr:eq,value:",
            "order_direction:",
            "keys:!(",
            "columns:!(",
            "select_columns:!(",
            "add_columns:(",
            "1e400",
            "99999999999999999999",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let mut q = String::new();
            for _ in 0..rng.below(16) {
                q.push_str(PIECES[rng.below(PIECES.len())]);
            }
            check_never_panics(&q);
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = Rng(42);
        for _ in 0..5_000 {
            let len = rng.below(40);
            let bytes: Vec<u8> = (0..len).map(|_| (rng.next() & 0xff) as u8).collect();
            check_never_panics(&String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn deep_and_wide_inputs_never_panic() {
        for q in [
            "(".repeat(100_000),
            "!(".repeat(100_000),
            "'".repeat(100_001),
            "!".repeat(100_001),
            "[".repeat(100_000),
            "{\"a\":".repeat(100_000),
            format!("!({})", vec!["1"; 100_000].join(",")),
            format!(
                "(filters:!({}))",
                vec!["(col:a,opr:eq,value:!n)"; 10_000].join(",")
            ),
            "9".repeat(10_000),
        ] {
            check_never_panics(&q);
        }
    }
}
