//! SQL-text checks done with a real SQL parser (the `sqlparser` crate).
//!
//! Superset runs user-supplied SQL through its SQL parser before anything reaches a database:
//!
//! * **Chart queries** embed user *fragments* (SQL metrics, `extras.where`, `extras.having`,
//!   calculated columns, adhoc column `sqlExpression`s, adhoc filter subjects) into SQL it
//!   generates. [`check_fragment`] makes sure a fragment is exactly one expression, so it can
//!   neither end the surrounding clause early nor smuggle in a second statement, and refuses
//!   sub-queries (Superset's default `ALLOW_ADHOC_SUBQUERY = False`). Embed an accepted
//!   fragment with [`wrap_fragment`].
//! * **SQL Lab** runs scripts: [`split_statements`], [`is_mutating`] (the `allow_dml` check),
//!   [`apply_limit`] (the row-limit dropdown and `limitingFactor`), [`functions_called`] (the
//!   per-engine function deny-list), [`tables_referenced`] (access checks) and [`format_sql`]
//!   (`/api/v1/sqllab/format_sql/`).
//!
//! Errors are [`SqlError`]s carrying what a SIP-40 error payload needs.
//!
//! Robustness: every public function returns an error rather than panicking or overflowing
//! the stack on any input. Parenthesised nesting is bounded by the parser's recursion limit
//! ([`RECURSION_LIMIT`]); long operator chains such as `1+1+1…`, which the parser builds
//! iteratively into equally deep trees, are bounded by a token scan before parsing
//! ([`MAX_CHAIN`], [`MAX_SET_OPERATIONS`]) because dropping such a tree recurses once per level.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use sqlparser::ast::{
    Expr, Fetch, FromTable, LimitClause, ObjectName, ObjectType, Query, Select, SetExpr, Statement,
    TableFactor, Value, Visit, Visitor,
};
use sqlparser::dialect::{
    ClickHouseDialect, Dialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect,
};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, TokenizerError, Whitespace};

/// Maximum nesting the parser accepts (each parenthesis, function call, sub-query, nested
/// type or statement costs one or more levels). sqlparser's default, 50, is reachable by
/// generated SQL with a dozen nested sub-queries; 128 allows ~40. The parser itself is
/// stack-safe (the `recursive-protection` feature grows the stack on demand), but printing a
/// nested type such as `ARRAY<ARRAY<…>>` is not and costs ~3 KiB of stack per level in a debug
/// build, so the limit stays well below what a 2 MiB thread stack can print.
pub const RECURSION_LIMIT: usize = 128;

/// Upper bound on the "operator chain" estimate of one statement (a token scan before
/// parsing: symbols and keywords counted per bracket level, reset by commas). sqlparser builds `a + b + c + …`, `x::t::t…`, `a AND b AND …` iteratively into a tree one
/// level deeper per operator, bypassing its recursion limit; dropping that tree recurses per
/// level (the compiler's drop glue is not stack-protected), and a 16 000-level chain is about
/// what a 2 MiB thread stack survives in a debug build. 5 000 counted tokens keep such trees a
/// few thousand levels deep while leaving room for big generated `WHERE … AND …` (≈2 counted
/// tokens per condition) or `CASE` (≈3 per branch) chains.
pub const MAX_CHAIN: usize = 5_000;

/// Weight of a `[` in the chain estimate. Array type suffixes (`x::int[][]…`) are parsed in a
/// loop without the recursion limit, and printing a nested array type costs ~3 KiB of stack
/// per level in a debug build (`Display` of types is not stack-protected), so brackets are
/// limited to `MAX_CHAIN / BRACKET_WEIGHT` = 125 deep along a chain.
const BRACKET_WEIGHT: usize = 40;

/// Upper bound on `UNION`/`EXCEPT`/`INTERSECT` in one statement: set operations chain
/// left-deep like operators, but their operands (select lists) contain commas, which the chain
/// estimate treats as sibling separators, so they are counted separately.
pub const MAX_SET_OPERATIONS: usize = 2_000;

/// The SQL engine whose grammar the checks use.
///
/// Kept local to this module (rather than reusing the crate's engine type) so the module has
/// no crate dependencies; map the connection's engine onto it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlDialect {
    /// PostgreSQL (sqlparser's `PostgreSqlDialect`).
    Postgres,
    /// SQLite (sqlparser's `SQLiteDialect`).
    Sqlite,
    /// ClickHouse (sqlparser's `ClickHouseDialect`).
    ClickHouse,
    /// MySQL and MariaDB (sqlparser's `MySqlDialect`).
    MySql,
}

static POSTGRES: PostgreSqlDialect = PostgreSqlDialect {};
static SQLITE: SQLiteDialect = SQLiteDialect {};
static CLICKHOUSE: ClickHouseDialect = ClickHouseDialect {};
static MYSQL: MySqlDialect = MySqlDialect {};

impl SqlDialect {
    /// Superset's engine name for the dialect (`"postgresql"` / `"sqlite"`), as reported in
    /// the `engine` field of an `INVALID_SQL_ERROR`'s `extra`.
    pub fn engine(self) -> &'static str {
        match self {
            SqlDialect::Postgres => "postgresql",
            SqlDialect::Sqlite => "sqlite",
            SqlDialect::ClickHouse => "clickhousedb",
            SqlDialect::MySql => "mysql",
        }
    }

    fn parser_dialect(self) -> &'static dyn Dialect {
        match self {
            SqlDialect::Postgres => &POSTGRES,
            SqlDialect::Sqlite => &SQLITE,
            SqlDialect::ClickHouse => &CLICKHOUSE,
            SqlDialect::MySql => &MYSQL,
        }
    }
}

/// Where a user fragment is going to be embedded; decides how parse errors are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FragmentKind {
    /// A select-list item: SQL metric, calculated column, adhoc column, adhoc filter subject.
    /// Parse errors are reported against `"SELECT " + fragment`, as Superset does.
    Expression,
    /// `extras.where` or a custom-SQL `WHERE` filter (a boolean expression).
    Where,
    /// `extras.having` or a custom-SQL `HAVING` filter (a boolean expression).
    Having,
}

impl FragmentKind {
    /// Text parsed in front of the fragment. Superset parses metrics as `SELECT <metric>` and
    /// clauses on their own, and reports error positions against that text; we do the same so
    /// line/column match what a Superset client expects.
    fn prefix(self) -> &'static str {
        match self {
            FragmentKind::Expression => "SELECT ",
            FragmentKind::Where | FragmentKind::Having => "",
        }
    }
}

/// The SIP-40 error type of a [`SqlError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SqlErrorKind {
    /// The text does not parse (or is not a single expression / is too complex to analyse):
    /// `INVALID_SQL_ERROR`.
    InvalidSql,
    /// A fragment contains a sub-query: `ADHOC_SUBQUERY_NOT_ALLOWED_ERROR`.
    AdhocSubqueryNotAllowed,
}

impl SqlErrorKind {
    /// Superset's `SupersetErrorType` name.
    pub fn as_str(self) -> &'static str {
        match self {
            SqlErrorKind::InvalidSql => "INVALID_SQL_ERROR",
            SqlErrorKind::AdhocSubqueryNotAllowed => "ADHOC_SUBQUERY_NOT_ALLOWED_ERROR",
        }
    }
}

impl fmt::Display for SqlErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why SQL was refused, with what a Superset SIP-40 error needs: the error type, a message
/// shaped like Superset's (`Error parsing near 'revenue' at line 1:18`), the position, and the
/// SQL text the position refers to (`extra.sql`, `extra.line`, `extra.column`,
/// `extra.engine`).
///
/// The data is boxed so `Result<_, SqlError>` stays one pointer wide on the success path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .data.message)]
pub struct SqlError {
    data: Box<ErrorData>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ErrorData {
    kind: SqlErrorKind,
    message: String,
    detail: Option<String>,
    highlight: Option<String>,
    line: Option<u64>,
    column: Option<u64>,
    sql: String,
    engine: &'static str,
}

impl From<ErrorData> for SqlError {
    fn from(data: ErrorData) -> Self {
        SqlError {
            data: Box::new(data),
        }
    }
}

impl SqlError {
    /// The error's kind.
    pub fn kind(&self) -> SqlErrorKind {
        self.data.kind
    }

    /// SIP-40 `error_type`: `"INVALID_SQL_ERROR"` or `"ADHOC_SUBQUERY_NOT_ALLOWED_ERROR"`.
    pub fn error_type(&self) -> &'static str {
        self.data.kind.as_str()
    }

    /// SIP-40 `message`, worded like Superset's.
    pub fn message(&self) -> &str {
        &self.data.message
    }

    /// The parser's own explanation (e.g. `Expected: ), found: EOF`), when there is one.
    /// Not part of Superset's payload; useful for logs.
    pub fn detail(&self) -> Option<&str> {
        self.data.detail.as_deref()
    }

    /// The token the error points at (Superset's `highlight`), when known.
    pub fn highlight(&self) -> Option<&str> {
        self.data.highlight.as_deref()
    }

    /// 1-based line of the error in [`SqlError::sql`], when known.
    pub fn line(&self) -> Option<u64> {
        self.data.line
    }

    /// 1-based column of the error in [`SqlError::sql`], when known. Like Superset (sqlglot),
    /// this is the column of the *last* character of the highlighted token.
    pub fn column(&self) -> Option<u64> {
        self.data.column
    }

    /// The SQL text that was parsed and that `line`/`column` refer to (for a metric, Superset
    /// reports `"SELECT " + fragment`).
    pub fn sql(&self) -> &str {
        &self.data.sql
    }

    /// Superset engine name of the dialect used (`extra.engine`).
    pub fn engine(&self) -> &'static str {
        self.data.engine
    }

    fn invalid(dialect: SqlDialect, sql: &str, message: String, detail: Option<String>) -> Self {
        SqlError::from(ErrorData {
            kind: SqlErrorKind::InvalidSql,
            message,
            detail,
            highlight: None,
            line: None,
            column: None,
            sql: sql.to_owned(),
            engine: dialect.engine(),
        })
    }

    /// An error pointing at `token`, positioned like sqlglot: line and column of the token's
    /// last character.
    fn at_token(dialect: SqlDialect, sql: &str, token: &TokenWithSpan, detail: String) -> Self {
        let highlight = token.token.to_string();
        let (line, column) = last_char_position(token);
        SqlError::from(ErrorData {
            kind: SqlErrorKind::InvalidSql,
            message: format!("Error parsing near '{highlight}' at line {line}:{column}"),
            detail: Some(detail),
            highlight: Some(highlight),
            line: Some(line),
            column: Some(column),
            sql: sql.to_owned(),
            engine: dialect.engine(),
        })
    }

    fn from_tokenizer(dialect: SqlDialect, sql: &str, err: TokenizerError) -> Self {
        let Location { line, column } = err.location;
        let mut error = SqlError::invalid(dialect, sql, String::new(), Some(err.message.clone()));
        if line > 0 {
            error.data.message = format!("Error parsing at line {line}:{column}: {}", err.message);
            error.data.line = Some(line);
            error.data.column = Some(column);
        } else {
            error.data.message = format!("Error parsing: {}", err.message);
        }
        error
    }

    /// Converts a parser error. sqlparser reports positions only inside the message text
    /// (`"… at Line: L, Column: C"`, the *start* of the offending token, nothing at all at end
    /// of input), so we recover the token from our own token list to report it like Superset.
    fn from_parser(
        dialect: SqlDialect,
        sql: &str,
        tokens: &[TokenWithSpan],
        err: ParserError,
    ) -> Self {
        let detail = match err {
            ParserError::RecursionLimitExceeded => {
                return SqlError::invalid(
                    dialect,
                    sql,
                    "Error parsing: the SQL is nested too deeply".to_owned(),
                    Some("recursion limit exceeded".to_owned()),
                );
            }
            ParserError::ParserError(m) | ParserError::TokenizerError(m) => m,
        };
        let (detail, location) = split_location(&detail);
        let token = match location {
            Some(loc) => tokens
                .iter()
                .find(|t| t.span.start == loc && !is_trivia(&t.token)),
            // End of input: point at the last real token, as sqlglot does for `SUM(revenue`.
            None => tokens.iter().rev().find(|t| !is_trivia(&t.token)),
        };
        match (token, location) {
            (Some(token), _) => SqlError::at_token(dialect, sql, token, detail),
            (None, Some(loc)) => {
                let mut error = SqlError::invalid(
                    dialect,
                    sql,
                    format!("Error parsing at line {}:{}", loc.line, loc.column),
                    Some(detail),
                );
                error.data.line = Some(loc.line);
                error.data.column = Some(loc.column);
                error
            }
            (None, None) => {
                SqlError::invalid(dialect, sql, "Error parsing".to_owned(), Some(detail))
            }
        }
    }

    fn subquery(dialect: SqlDialect, fragment: &str) -> Self {
        SqlError::from(ErrorData {
            kind: SqlErrorKind::AdhocSubqueryNotAllowed,
            message: "Custom SQL fields cannot contain sub-queries.".to_owned(),
            detail: None,
            highlight: None,
            line: None,
            column: None,
            sql: fragment.to_owned(),
            engine: dialect.engine(),
        })
    }
}

/// Splits sqlparser's `"<text> at Line: L, Column: C"` into the text and the location.
fn split_location(message: &str) -> (String, Option<Location>) {
    if let Some((text, position)) = message.rsplit_once(" at Line: ")
        && let Some((line, column)) = position.split_once(", Column: ")
        && let (Ok(line), Ok(column)) = (line.trim().parse(), column.trim().parse())
    {
        return (text.to_owned(), Some(Location { line, column }));
    }
    (message.to_owned(), None)
}

/// Line and column of the last character of a token (sqlparser spans end one past it).
fn last_char_position(token: &TokenWithSpan) -> (u64, u64) {
    let end = token.span.end;
    if end.line == 0 {
        return (token.span.start.line, token.span.start.column);
    }
    if end.column > 1 {
        (end.line, end.column - 1)
    } else {
        // The token ends with a newline (a multi-line literal); its start is more useful.
        (token.span.start.line, token.span.start.column)
    }
}

/// Whitespace and comments, which the parser skips.
fn is_trivia(token: &Token) -> bool {
    matches!(token, Token::Whitespace(_) | Token::EOF)
}

// ---------------------------------------------------------------------------------------------
// Parsing plumbing
// ---------------------------------------------------------------------------------------------

/// Runs `f`, turning a panic inside sqlparser into an error: the checks sit on request paths
/// and must never take a worker down, whatever text a user sends. (Stack overflows cannot be
/// caught; those are prevented by the recursion limit and [`check_complexity`].)
fn guard<T>(
    dialect: SqlDialect,
    sql: &str,
    f: impl FnOnce() -> Result<T, SqlError>,
) -> Result<T, SqlError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(SqlError::invalid(
            dialect,
            sql,
            "Error parsing: the SQL parser failed on this input".to_owned(),
            None,
        ))
    })
}

fn tokenize(dialect: SqlDialect, sql: &str) -> Result<Vec<TokenWithSpan>, SqlError> {
    // SQLite stops reading SQL at a NUL and PostgreSQL's protocol cannot carry one, so text
    // after it would be seen by us but not by the database (or vice versa): refuse it.
    if let Some(at) = sql.find('\0') {
        let line = sql[..at].matches('\n').count() + 1;
        let column = sql[..at].rsplit('\n').next().unwrap_or("").chars().count() + 1;
        let mut error = SqlError::invalid(
            dialect,
            sql,
            format!("Error parsing at line {line}:{column}: NUL character"),
            Some("NUL character".to_owned()),
        );
        error.data.line = u64::try_from(line).ok();
        error.data.column = u64::try_from(column).ok();
        return Err(error);
    }
    let tokens = Tokenizer::new(dialect.parser_dialect(), sql)
        .tokenize_with_location()
        .map_err(|e| SqlError::from_tokenizer(dialect, sql, e))?;
    refuse_unicode_identifiers(dialect, sql, &tokens)?;
    refuse_mysql_hidden_code(dialect, sql, &tokens)?;
    refuse_clickhouse_ambiguities(dialect, sql, &tokens)?;
    Ok(tokens)
}

/// Message of the refusal of MySQL's executable comments and optimizer hints.
pub const MYSQL_EXECUTABLE_COMMENT_REFUSAL: &str = "Error parsing: executable comments \
     (/*! … */, /*M! … */) and optimizer hints (/*+ … */) are not supported";

/// The byte offset of the first `/*!`, `/*M!` or `/*+` that MySQL's lexer reads as the start
/// of a comment (not inside a string literal, a quoted identifier or another comment): quotes
/// `'` and `"` with backslash escapes and doubled quotes, backticks with doubled backticks,
/// `#` and `-- ` line comments, unnested `/* */` comments.
fn mysql_executable_comment(sql: &str) -> Option<usize> {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() {
                    if b[i] == b'\\' && q != b'`' {
                        i += 2;
                    } else if b[i] == q {
                        if b.get(i + 1) == Some(&q) {
                            i += 2;
                        } else {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                i += 1;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2)
                    .is_none_or(|c| c.is_ascii_whitespace() || c.is_ascii_control()) =>
            {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let rest = &sql[i + 2..];
                if rest.starts_with('!') || rest.starts_with("M!") || rest.starts_with('+') {
                    return Some(i);
                }
                match rest.find("*/") {
                    Some(end) => i += 2 + end + 2,
                    None => return None,
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Refuses MySQL text whose comments or whitespace the server reads differently from
/// sqlparser, so that no check below can be shown one statement while the server runs
/// another:
/// * `/*! … */` and `/*M! … */` (MariaDB) are comments to sqlparser but code to the server,
///   which runs their contents (a hidden `INTO OUTFILE`, `LOAD_FILE(…)` or second statement);
///   `/*+ … */` optimizer hints can override the session's statement timeout
///   (`MAX_EXECUTION_TIME`) or settings (`SET_VAR`);
/// * `--` starts a comment for MySQL only when a space or control character follows; sqlparser
///   also accepts any Unicode whitespace there (`--\u{a0}x, LOAD_FILE(…)` would be code to
///   MySQL), so a `--` comment must be followed by ASCII whitespace, a control character or the
///   end of the text;
/// * Unicode whitespace between tokens (MySQL reads it as part of an identifier) is refused
///   for the same reason.
fn refuse_mysql_hidden_code(
    dialect: SqlDialect,
    sql: &str,
    tokens: &[TokenWithSpan],
) -> Result<(), SqlError> {
    if dialect != SqlDialect::MySql {
        return Ok(());
    }
    // sqlparser expands `/*! … */` into tokens (no comment token is left to see), without
    // MySQL's version conditions: find them in the text as MySQL's lexer reads it.
    if let Some(at) = mysql_executable_comment(sql) {
        let line = sql[..at].matches('\n').count() + 1;
        let column = sql[..at].rsplit('\n').next().unwrap_or("").chars().count() + 1;
        let mut error = SqlError::invalid(
            dialect,
            sql,
            MYSQL_EXECUTABLE_COMMENT_REFUSAL.to_owned(),
            Some("/*!".to_owned()),
        );
        error.data.line = u64::try_from(line).ok();
        error.data.column = u64::try_from(column).ok();
        return Err(error);
    }
    let refuse = |t: &TokenWithSpan, message: &str| {
        let mut error = SqlError::at_token(dialect, sql, t, t.token.to_string());
        error.data.message = message.to_owned();
        Err(error)
    };
    for t in tokens {
        match &t.token {
            Token::Whitespace(Whitespace::MultiLineComment(text))
                if text.starts_with('!') || text.starts_with("M!") || text.starts_with('+') =>
            {
                return refuse(t, MYSQL_EXECUTABLE_COMMENT_REFUSAL);
            }
            Token::Whitespace(Whitespace::SingleLineComment { prefix, comment })
                if prefix == "--"
                    && comment
                        .chars()
                        .next()
                        .is_some_and(|c| !c.is_ascii_whitespace() && !c.is_ascii_control()) =>
            {
                return refuse(
                    t,
                    "Error parsing: a `--` comment must be followed by a space",
                );
            }
            _ => {}
        }
    }
    // Unicode whitespace outside literals: only looked for when the text has some at all.
    if sql.chars().any(|c| c.is_whitespace() && !c.is_ascii()) {
        let index = LineIndex::new(sql);
        for t in tokens {
            if t.token == Token::Whitespace(Whitespace::Space)
                && let Some(at) = index.offset(sql, t.span.start)
                && sql[at..].chars().next().is_some_and(|c| !c.is_ascii())
            {
                return refuse(
                    t,
                    "Error parsing: Unicode whitespace between words is not supported",
                );
            }
        }
    }
    Ok(())
}

/// Refuses ClickHouse text whose reading differs between sqlparser and a ClickHouse server,
/// so no name-based check could be trusted on it:
/// - a backslash in a quoted identifier: ClickHouse reads `\"` inside `"…"` (and `` \` ``
///   inside backticks) as an escaped quote, sqlparser as the end of the name, so
///   `"a\" , url('…') -- "` hides a call from one of them;
/// - a `/*` inside a block comment: current ClickHouse (and sqlparser) nest block comments,
///   18.16 does not, so `/* /* */ , url('…') -- */` is a comment to one and a call to the
///   other.
fn refuse_clickhouse_ambiguities(
    dialect: SqlDialect,
    sql: &str,
    tokens: &[TokenWithSpan],
) -> Result<(), SqlError> {
    if dialect != SqlDialect::ClickHouse {
        return Ok(());
    }
    for token in tokens {
        let refusal = match &token.token {
            Token::Word(w) if w.quote_style.is_some() && w.value.contains('\\') => {
                "Error parsing: backslashes in quoted identifiers are not supported"
            }
            Token::Whitespace(Whitespace::MultiLineComment(c)) if c.contains("/*") => {
                "Error parsing: nested block comments are not supported"
            }
            _ => continue,
        };
        let mut error = SqlError::at_token(dialect, sql, token, token.token.to_string());
        error.data.message = refusal.to_owned();
        return Err(error);
    }
    Ok(())
}

/// Message of the refusal of PostgreSQL's Unicode-escaped identifiers (also used by the
/// fallback check of SQL the parser cannot read).
pub const UNICODE_IDENTIFIER_REFUSAL: &str =
    "Error parsing: Unicode escapes in identifiers (U&\"…\") are not supported";

/// Refuses PostgreSQL's `U&"\0073et_config"`: sqlparser reads it as `U & "\0073et_config"`, so
/// the name it sees is not the name PostgreSQL resolves, and no name-based check (the function
/// deny-list, table access) could be trusted on it.
fn refuse_unicode_identifiers(
    dialect: SqlDialect,
    sql: &str,
    tokens: &[TokenWithSpan],
) -> Result<(), SqlError> {
    if dialect != SqlDialect::Postgres {
        return Ok(());
    }
    for window in tokens.windows(3) {
        if let [first, amp, quoted] = window
            && let Token::Word(u) = &first.token
            && u.quote_style.is_none()
            && u.value.eq_ignore_ascii_case("u")
            && amp.token == Token::Ampersand
            && matches!(&quoted.token, Token::Word(w) if w.quote_style == Some('"'))
        {
            let mut error = SqlError::at_token(dialect, sql, amp, "U&\"…\"".to_owned());
            error.data.message = UNICODE_IDENTIFIER_REFUSAL.to_owned();
            return Err(error);
        }
    }
    Ok(())
}

fn parser_for(dialect: SqlDialect, tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    Parser::new(dialect.parser_dialect())
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(tokens)
}

/// Refuses token streams whose statements would parse into trees too deep to drop safely.
///
/// The estimate is a cheap upper bound on the depth sqlparser's iterative loops (binary and
/// postfix operators, casts, array brackets, set operations) can build: per bracket level we
/// count tokens that can act as an operator (symbols and keywords, not identifiers or
/// literals), summed along the currently open brackets. A comma at a level resets that level's
/// count, because comma-separated items (select lists, arguments, `IN` lists, `VALUES` rows)
/// are siblings, not nested; set operations are the exception and are counted separately.
fn check_complexity(
    dialect: SqlDialect,
    sql: &str,
    tokens: &[TokenWithSpan],
) -> Result<(), SqlError> {
    let mut levels: Vec<usize> = vec![0];
    let mut chain = 0usize;
    let mut set_operations = 0usize;
    for token in tokens {
        let counted = match &token.token {
            Token::Whitespace(_) | Token::EOF => continue,
            Token::SemiColon => {
                levels.clear();
                levels.push(0);
                chain = 0;
                set_operations = 0;
                continue;
            }
            Token::LParen | Token::LBracket | Token::LBrace => {
                let weight = if token.token == Token::LBracket {
                    BRACKET_WEIGHT
                } else {
                    1
                };
                if let Some(top) = levels.last_mut() {
                    *top += weight;
                }
                chain += weight;
                levels.push(0);
                false
            }
            Token::RParen | Token::RBracket | Token::RBrace => {
                if levels.len() > 1
                    && let Some(inner) = levels.pop()
                {
                    chain -= inner;
                }
                false
            }
            Token::Comma => {
                if let Some(top) = levels.last_mut() {
                    chain -= *top;
                    *top = 0;
                }
                false
            }
            Token::Word(word)
                if word.quote_style.is_some() || word.keyword == Keyword::NoKeyword =>
            {
                false
            }
            Token::Word(word) => {
                if matches!(
                    word.keyword,
                    Keyword::UNION | Keyword::EXCEPT | Keyword::INTERSECT | Keyword::MINUS
                ) {
                    set_operations += 1;
                }
                true
            }
            Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::NationalStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::DollarQuotedString(_)
            | Token::Placeholder(_) => false,
            _ => true,
        };
        if counted {
            if let Some(top) = levels.last_mut() {
                *top += 1;
            }
            chain += 1;
        }
        if chain > MAX_CHAIN || set_operations > MAX_SET_OPERATIONS {
            let mut error = SqlError::at_token(
                dialect,
                sql,
                token,
                "operator chain or nesting too long".to_owned(),
            );
            error.data.message = format!(
                "Error parsing: the SQL is too complex to analyse (near line {})",
                error.data.line.unwrap_or(0)
            );
            return Err(error);
        }
    }
    Ok(())
}

/// Maps sqlparser locations (1-based line, 1-based column counted in characters) to byte
/// offsets, so statements can be cut out of, and edited within, the user's original text.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(sql: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    fn offset(&self, sql: &str, location: Location) -> Option<usize> {
        let line = usize::try_from(location.line).ok()?.checked_sub(1)?;
        let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
        let start = *self.starts.get(line)?;
        let rest = sql.get(start..)?;
        let mut count = 0;
        for (i, _) in rest.char_indices() {
            if count == column {
                return Some(start + i);
            }
            count += 1;
        }
        (count == column).then_some(sql.len())
    }
}

/// One parsed statement and where it sits in the source text.
struct ParsedStatement {
    ast: Statement,
    /// Byte range of the statement in the source: first to last token, without the `;`.
    start: usize,
    end: usize,
    /// Index range of the statement's tokens in [`Script::tokens`] (inclusive).
    tokens: std::ops::RangeInclusive<usize>,
}

/// A parsed script: its tokens and statements.
struct Script {
    tokens: Vec<TokenWithSpan>,
    statements: Vec<ParsedStatement>,
}

/// Parses a script statement by statement (the same loop as `Parser::parse_statements`), so
/// each statement's original text can be recovered from the token positions.
fn parse_script(dialect: SqlDialect, sql: &str) -> Result<Script, SqlError> {
    let tokens = tokenize(dialect, sql)?;
    check_complexity(dialect, sql, &tokens)?;
    let index = LineIndex::new(sql);
    let mut parser = parser_for(dialect, tokens.clone());
    let parse_err = |e: ParserError| SqlError::from_parser(dialect, sql, &tokens, e);
    let mut statements = Vec::new();
    let mut expecting_delimiter = false;
    loop {
        while parser.consume_token(&Token::SemiColon) {
            expecting_delimiter = false;
        }
        let next = parser.peek_token();
        if next.token == Token::EOF {
            break;
        }
        if expecting_delimiter {
            return Err(SqlError::at_token(
                dialect,
                sql,
                &next,
                format!("Expected: end of statement, found: {}", next.token),
            ));
        }
        let first = (parser.index()..tokens.len())
            .find(|&i| !is_trivia(&tokens[i].token))
            .unwrap_or(tokens.len());
        let ast = parser.parse_statement().map_err(parse_err)?;
        let last = (first..parser.index().min(tokens.len()))
            .rev()
            .find(|&i| !is_trivia(&tokens[i].token) && tokens[i].token != Token::SemiColon);
        let last = last.unwrap_or(first);
        let (start, end) = match (tokens.get(first), tokens.get(last)) {
            (Some(a), Some(b)) => (
                index.offset(sql, a.span.start).unwrap_or(0),
                index.offset(sql, b.span.end).unwrap_or(sql.len()),
            ),
            _ => (0, sql.len()),
        };
        let end = end.max(start);
        statements.push(ParsedStatement {
            ast,
            start,
            end,
            tokens: first..=last,
        });
        expecting_delimiter = true;
    }
    drop(parser);
    Ok(Script { tokens, statements })
}

// ---------------------------------------------------------------------------------------------
// Fragments
// ---------------------------------------------------------------------------------------------

/// Checks a user SQL fragment destined for a chart query: it must be exactly one SQL
/// expression (for `Where`/`Having` a boolean one), with nothing after it but whitespace and
/// comments, and must not contain a sub-query anywhere.
///
/// Refused: a second statement (`1=1; DROP TABLE x`), text after the expression (`1=1) OR
/// (1=1`, which would escape the parentheses the caller wraps the clause in; `SUM(a) AS x`),
/// a trailing `;`, unterminated strings or comments, and sub-queries (`(SELECT max(x) FROM
/// t)`, `x IN (SELECT …)`, `EXISTS (SELECT 1)`) — the last with
/// `ADHOC_SUBQUERY_NOT_ALLOWED_ERROR`, as Superset does with `ALLOW_ADHOC_SUBQUERY` off.
///
/// A trailing line comment (`x = 1 -- note`) is accepted: embed the fragment with
/// [`wrap_fragment`], which ends it with a newline so the comment cannot swallow the closing
/// parenthesis. That exact wrapped form is parsed too, as a second line of defence.
///
/// Empty or whitespace-only fragments return `Ok(())`: whether they are allowed is the
/// caller's decision.
pub fn check_fragment(
    dialect: SqlDialect,
    fragment: &str,
    kind: FragmentKind,
) -> Result<(), SqlError> {
    if fragment.trim().is_empty() {
        return Ok(());
    }
    guard(dialect, fragment, || {
        let sql = format!("{}{fragment}", kind.prefix());
        let tokens = tokenize(dialect, &sql)?;
        check_complexity(dialect, &sql, &tokens)?;
        let parse_err = |e: ParserError| SqlError::from_parser(dialect, &sql, &tokens, e);
        let mut parser = parser_for(dialect, tokens.clone());
        if kind == FragmentKind::Expression {
            parser
                .expect_keyword_is(Keyword::SELECT)
                .map_err(parse_err)?;
        }
        let expr = parser.parse_expr().map_err(parse_err)?;
        let next = parser.peek_token();
        if next.token != Token::EOF {
            return Err(SqlError::at_token(
                dialect,
                &sql,
                &next,
                format!("Expected: end of expression, found: {}", next.token),
            ));
        }
        // The fragment will be embedded in generated SQL; parse it the way it will be
        // embedded as well, so a tokenizer quirk cannot make it mean something else there.
        let wrapped = format!("SELECT {}", wrap_fragment(fragment));
        let script = parse_script(dialect, &wrapped)?;
        if script.statements.len() != 1 {
            return Err(SqlError::invalid(
                dialect,
                &wrapped,
                "Error parsing: the fragment is not a single expression".to_owned(),
                None,
            ));
        }
        if contains_subquery(&expr) {
            return Err(SqlError::subquery(dialect, fragment));
        }
        Ok(())
    })
}

/// Checks that the byte ranges `spans` of `sql` (values a template took from the request)
/// cannot have changed the statement's structure: each lies inside one quoted literal or
/// comment of the surrounding text (escaped quotes only, no line break or comment end that
/// would close it), or consists only of whole single-quoted literals, numbers, commas, minus
/// signs and blanks (a quoted `IN` list). A value that opens or closes a literal or comment,
/// or that holds a word, an operator or a parenthesis, is refused with a description.
pub fn check_value_spans(
    dialect: SqlDialect,
    sql: &str,
    spans: &[std::ops::Range<usize>],
) -> Result<(), String> {
    let tokens = tokenize(dialect, sql).map_err(|e| e.message().to_owned())?;
    let index = LineIndex::new(sql);
    let mut ranges = Vec::with_capacity(tokens.len());
    for t in tokens.iter().filter(|t| t.token != Token::EOF) {
        match (
            index.offset(sql, t.span.start),
            index.offset(sql, t.span.end),
        ) {
            (Some(a), Some(b)) => ranges.push((a, b, &t.token)),
            _ => return Err("the rendered SQL could not be checked".to_owned()),
        }
    }
    let shown = |span: &std::ops::Range<usize>| {
        let text = sql.get(span.clone()).unwrap_or_default();
        let short: String = text.chars().take(60).collect();
        if short.len() < text.len() {
            format!("{short}…")
        } else {
            short
        }
    };
    for span in spans {
        let text = sql.get(span.clone()).unwrap_or_default();
        for &(a, b, token) in &ranges {
            if b <= span.start || a >= span.end {
                continue;
            }
            let ok = if a >= span.start && b <= span.end {
                matches!(
                    token,
                    Token::SingleQuotedString(_)
                        | Token::NationalStringLiteral(_)
                        | Token::Number(..)
                        | Token::Comma
                        | Token::Minus
                        | Token::Whitespace(
                            Whitespace::Space | Whitespace::Newline | Whitespace::Tab
                        )
                )
            } else if a < span.start && b >= span.end {
                // A comment may end where the value ends (the end of the SQL); a literal's
                // closing quote must be the author's.
                match token {
                    Token::SingleQuotedString(_) | Token::NationalStringLiteral(_) => {
                        b > span.end && !text.replace("''", "").contains('\'')
                    }
                    Token::Whitespace(Whitespace::SingleLineComment { .. }) => {
                        !text.contains(['\n', '\r'])
                    }
                    Token::Whitespace(Whitespace::MultiLineComment(_)) => {
                        !text.contains("*/") && !text.contains("/*")
                    }
                    _ => false,
                }
            } else {
                false
            };
            if !ok {
                return Err(format!("`{}`", shown(span)));
            }
        }
    }
    Ok(())
}

/// Wraps an accepted fragment for embedding into generated SQL: `(<fragment>\n)`. The newline
/// ends a trailing `--` comment before the closing parenthesis (Superset's frontend does the
/// same), so `x = 1 --` cannot comment out the rest of the query.
pub fn wrap_fragment(fragment: &str) -> String {
    format!("({fragment}\n)")
}

/// True if any query (sub-query, `IN (SELECT …)`, `EXISTS`, `ARRAY(SELECT …)`, …) occurs
/// anywhere in the expression. Every such form contains a `Query` node, so visiting queries
/// catches them all without listing expression variants.
fn contains_subquery(expr: &Expr) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
            ControlFlow::Break(())
        }
    }
    expr.visit(&mut Finder).is_break()
}

// ---------------------------------------------------------------------------------------------
// SQL Lab: statements
// ---------------------------------------------------------------------------------------------

/// One statement of a SQL Lab script, as returned by [`split_statements`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlStatement {
    /// The statement's text exactly as written (from its first to its last token; no
    /// surrounding comments, no trailing `;`). Run this, not a re-rendering, so dialect
    /// details sqlparser does not model survive.
    pub sql: String,
    /// True for a row-returning query (`SELECT`, `WITH … SELECT`, `VALUES`, set operations)
    /// that is not `SELECT … INTO`: the statements [`apply_limit`] limits.
    pub is_query: bool,
    /// True if the statement is not read-only (see [`is_mutating`]).
    pub is_mutating: bool,
}

/// Splits a SQL Lab script into its statements, in order. Empty statements (`;;`), trailing
/// semicolons and comments are ignored; an empty script gives an empty list. SQL Lab runs the
/// statements one after another and shows the last one's rows.
pub fn split_statements(dialect: SqlDialect, sql: &str) -> Result<Vec<SqlStatement>, SqlError> {
    guard(dialect, sql, || {
        Ok(parse_script(dialect, sql)?
            .statements
            .iter()
            .map(|s| SqlStatement {
                sql: sql.get(s.start..s.end).unwrap_or_default().to_owned(),
                is_query: is_limitable_query(&s.ast),
                is_mutating: statement_is_mutating(&s.ast),
            })
            .collect())
    })
}

/// Superset's `RLS_IN_SQLLAB` (`RLSMethod.AS_SUBQUERY`): every table the script reads whose
/// row filter `filter(schema, table)` names (the schema is the written one, else
/// `default_schema`; names folded as the database folds them) is replaced by
/// `(SELECT * FROM <table> WHERE <filter>) AS <alias or table>`, so no statement can read
/// its rows unfiltered, however it spells the table. Statements without such a table are
/// kept as written; the others are re-rendered. A script that does not parse is refused
/// (nothing could be filtered in it).
pub fn apply_row_filters(
    dialect: SqlDialect,
    sql: &str,
    default_schema: Option<&str>,
    filter: &dyn Fn(Option<&str>, &str) -> Option<String>,
) -> Result<String, SqlError> {
    struct Rewrite<'a> {
        dialect: SqlDialect,
        default_schema: Option<&'a str>,
        filter: &'a dyn Fn(Option<&str>, &str) -> Option<String>,
        changed: bool,
        failed: Option<String>,
    }
    impl sqlparser::ast::VisitorMut for Rewrite<'_> {
        type Break = ();
        // After the children: the subquery put in place is not visited again.
        fn post_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
            let TableFactor::Table {
                name,
                alias,
                args: None,
                ..
            } = tf
            else {
                return ControlFlow::Continue(());
            };
            let parts: Vec<&sqlparser::ast::Ident> =
                name.0.iter().filter_map(|p| p.as_ident()).collect();
            let (schema, table) = match parts.as_slice() {
                [t] => (
                    self.default_schema.map(str::to_owned),
                    fold(self.dialect, t),
                ),
                [.., s, t] => (Some(fold(self.dialect, s)), fold(self.dialect, t)),
                [] => return ControlFlow::Continue(()),
            };
            let Some(predicate) = (self.filter)(schema.as_deref(), &table) else {
                return ControlFlow::Continue(());
            };
            let text = format!("SELECT * FROM {name} WHERE {predicate}");
            let subquery = match Parser::new(self.dialect.parser_dialect())
                .try_with_sql(&text)
                .and_then(|mut p| p.parse_query())
            {
                Ok(q) => q,
                Err(e) => {
                    self.failed = Some(e.to_string());
                    return ControlFlow::Break(());
                }
            };
            let alias = alias.clone().or_else(|| {
                parts.last().map(|t| sqlparser::ast::TableAlias {
                    explicit: true,
                    name: (*t).clone(),
                    columns: vec![],
                    at: None,
                })
            });
            *tf = TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                sample: None,
            };
            self.changed = true;
            ControlFlow::Continue(())
        }
    }
    guard(dialect, sql, || {
        let script = parse_script(dialect, sql)?;
        let mut out = Vec::with_capacity(script.statements.len());
        for st in script.statements {
            let mut ast = st.ast;
            let mut v = Rewrite {
                dialect,
                default_schema,
                filter,
                changed: false,
                failed: None,
            };
            let _ = sqlparser::ast::VisitMut::visit(&mut ast, &mut v);
            if let Some(e) = v.failed {
                return Err(SqlError::invalid(
                    dialect,
                    sql,
                    format!("A row-level security clause does not parse: {e}"),
                    None,
                ));
            }
            out.push(if v.changed {
                ast.to_string()
            } else {
                sql.get(st.start..st.end).unwrap_or_default().to_owned()
            });
        }
        Ok(out.join(";\n"))
    })
}

/// True if any statement of the script is not read-only: DML (`INSERT`, `UPDATE`, `DELETE`,
/// `MERGE`, `COPY`), DDL (`CREATE`, `DROP`, `ALTER`, `TRUNCATE`, …), privileges (`GRANT`,
/// `REVOKE`), session changes (`SET`, `SET ROLE`, `RESET`), transactions, `CALL`, SQLite
/// `PRAGMA` assignments, `SELECT … INTO`, and queries whose CTEs modify data (`WITH x AS
/// (DELETE … RETURNING *) SELECT …`).
///
/// Read-only are: queries (`SELECT`, `WITH … SELECT`, `VALUES`), `EXPLAIN` (unless it is
/// `EXPLAIN ANALYZE` of a mutating statement, which executes it), `DESCRIBE`, `SHOW …`, and
/// SQLite introspection pragmas (`PRAGMA table_info(…)`). Anything not recognised as read-only
/// counts as mutating. SQL that does not parse returns the parse error; the caller decides.
///
/// Side effects of functions called from a `SELECT` (`nextval`, `pg_terminate_backend`, …)
/// are not detected; use [`functions_called`] with a deny-list for those.
pub fn is_mutating(dialect: SqlDialect, sql: &str) -> Result<bool, SqlError> {
    guard(dialect, sql, || {
        Ok(parse_script(dialect, sql)?
            .statements
            .iter()
            .any(|s| statement_is_mutating(&s.ast)))
    })
}

/// True if text the parser could not read holds a write the database's read-only mode does
/// not stop: MySQL's `INTO OUTFILE`, `INTO DUMPFILE` and `INTO @variable` (a file is written
/// even inside a `READ ONLY` transaction, by any account with the FILE privilege). Read from
/// the tokens, so a string or comment holding the words is not one; other dialects' read-only
/// modes cover every write, and this is false for them.
pub fn writes_past_read_only(dialect: SqlDialect, sql: &str) -> Result<bool, SqlError> {
    if dialect != SqlDialect::MySql {
        return Ok(false);
    }
    let tokens: Vec<Token> = tokenize(dialect, sql)?
        .into_iter()
        .map(|t| t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    Ok(tokens.windows(2).any(|pair| match pair {
        [Token::Word(into), next] if into.keyword == Keyword::INTO => match next {
            Token::Word(w) => {
                w.value.starts_with('@')
                    || w.value.eq_ignore_ascii_case("outfile")
                    || w.value.eq_ignore_ascii_case("dumpfile")
            }
            Token::AtSign => true,
            _ => false,
        },
        _ => false,
    }))
}

/// SQLite pragmas that only report, whatever their argument.
const READ_ONLY_PRAGMAS: &[&str] = &[
    "collation_list",
    "compile_options",
    "database_list",
    "foreign_key_check",
    "foreign_key_list",
    "function_list",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "module_list",
    "pragma_list",
    "quick_check",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// SQLite pragmas that report when given no value (and change settings when given one).
const GETTER_PRAGMAS: &[&str] = &[
    "application_id",
    "auto_vacuum",
    "cache_size",
    "data_version",
    "encoding",
    "foreign_keys",
    "freelist_count",
    "journal_mode",
    "page_count",
    "page_size",
    "schema_version",
    "synchronous",
    "user_version",
];

fn statement_is_mutating(statement: &Statement) -> bool {
    match statement {
        Statement::Query(query) => query_writes(query),
        Statement::Explain {
            analyze,
            statement,
            options,
            ..
        } => {
            // Plain EXPLAIN only plans; EXPLAIN ANALYZE (either spelling) executes.
            let analyzes = *analyze
                || options
                    .iter()
                    .flatten()
                    .any(|o| o.name.value.eq_ignore_ascii_case("analyze"));
            analyzes && statement_is_mutating(statement)
        }
        Statement::ExplainTable { .. }
        | Statement::ShowFunctions { .. }
        | Statement::ShowVariable { .. }
        | Statement::ShowStatus { .. }
        | Statement::ShowVariables { .. }
        | Statement::ShowCreate { .. }
        | Statement::ShowColumns { .. }
        | Statement::ShowCatalogs { .. }
        | Statement::ShowDatabases { .. }
        | Statement::ShowProcessList { .. }
        | Statement::ShowSchemas { .. }
        | Statement::ShowCharset(_)
        | Statement::ShowObjects(_)
        | Statement::ShowTables { .. }
        | Statement::ShowViews { .. }
        | Statement::ShowCollation { .. } => false,
        Statement::Pragma {
            name, value, is_eq, ..
        } => {
            let name = last_name_part(name);
            let read_only = !*is_eq
                && (READ_ONLY_PRAGMAS.contains(&name.as_str())
                    || (value.is_none() && GETTER_PRAGMAS.contains(&name.as_str())));
            !read_only
        }
        _ => true,
    }
}

/// True if a query writes: `SELECT … INTO` anywhere, or any nested non-query statement
/// (data-modifying CTEs parse as `INSERT`/`UPDATE`/`DELETE`/`MERGE` statements inside the
/// query).
fn query_writes(query: &Query) -> bool {
    struct Finder;
    impl Visitor for Finder {
        type Break = ();
        fn pre_visit_statement(&mut self, _statement: &Statement) -> ControlFlow<()> {
            // Visiting a `Query` does not visit it as a statement, so any statement met here
            // is nested DML.
            ControlFlow::Break(())
        }
        fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
            if select.into.is_some() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }
    query.visit(&mut Finder).is_break()
}

/// A query [`apply_limit`] may limit: returns rows, and is not `SELECT … INTO` (limiting that
/// would change what it writes).
fn is_limitable_query(statement: &Statement) -> bool {
    match statement {
        Statement::Query(query) => {
            struct IntoFinder;
            impl Visitor for IntoFinder {
                type Break = ();
                fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
                    if select.into.is_some() {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                }
            }
            !query.visit(&mut IntoFinder).is_break()
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// SQL Lab: limits
// ---------------------------------------------------------------------------------------------

/// What limits a SQL Lab result (Superset's `limitingFactor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitingFactor {
    /// The query's own `LIMIT` is smaller than the dropdown limit.
    Query,
    /// The dropdown limit applies (the query had no limit, a larger one, or a non-literal one).
    Dropdown,
    /// The query's own limit equals the dropdown limit.
    QueryAndDropdown,
    /// Nothing limits the result (non-query statements; also what the caller should report
    /// when fewer rows than the limit came back, as Superset does).
    NotLimited,
}

impl LimitingFactor {
    /// Superset's wire value: `"QUERY"`, `"DROPDOWN"`, `"QUERY_AND_DROPDOWN"`, `"NOT_LIMITED"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitingFactor::Query => "QUERY",
            LimitingFactor::Dropdown => "DROPDOWN",
            LimitingFactor::QueryAndDropdown => "QUERY_AND_DROPDOWN",
            LimitingFactor::NotLimited => "NOT_LIMITED",
        }
    }
}

/// What [`apply_limit`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitOutcome {
    /// Which limit bounds the result.
    pub factor: LimitingFactor,
    /// The row limit now in force for the last statement (`None` if it is not a query).
    pub limit: Option<u64>,
    /// The literal limit the query had itself (`LIMIT n` or `FETCH FIRST n ROWS`), if any.
    pub query_limit: Option<u64>,
    /// True if the returned SQL differs from the input.
    pub changed: bool,
}

/// The limit a query had before [`apply_limit`].
enum ExistingLimit<'a> {
    None,
    /// A literal row count, with the expression holding it (for in-place replacement; `None`
    /// for `FETCH FIRST ROW ONLY`, which means one row).
    Literal(u64, Option<&'a Expr>),
    /// An expression, parameter, `NULL`, `FETCH … PERCENT`, …
    Other,
}

fn literal_u64(expr: &Expr) -> Option<u64> {
    match expr {
        // `to_string` works whether sqlparser stores numbers as text or as BigDecimal.
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.to_string().parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

fn classify(expr: &Expr) -> ExistingLimit<'_> {
    match literal_u64(expr) {
        Some(n) => ExistingLimit::Literal(n, Some(expr)),
        None => ExistingLimit::Other,
    }
}

fn existing_limit(query: &Query) -> (ExistingLimit<'_>, bool) {
    match &query.limit_clause {
        Some(LimitClause::LimitOffset { limit: Some(e), .. })
        | Some(LimitClause::OffsetCommaLimit { limit: e, .. }) => (classify(e), false),
        // `LIMIT ALL` parses as no limit; PostgreSQL's `FETCH FIRST n ROWS ONLY` is the
        // standard spelling of a limit and cannot be combined with `LIMIT`.
        _ => match &query.fetch {
            Some(Fetch {
                percent: false,
                quantity: None,
                ..
            }) => (ExistingLimit::Literal(1, None), true),
            Some(Fetch {
                percent: false,
                quantity: Some(e),
                ..
            }) => (classify(e), true),
            Some(_) => (ExistingLimit::Other, true),
            None => (ExistingLimit::None, false),
        },
    }
}

/// Applies SQL Lab's row limit to the **last** statement of `sql`, when it is a query:
///
/// * no `LIMIT` → `LIMIT <limit>` is added (factor `DROPDOWN`);
/// * a literal `LIMIT n` with `n > limit`, or a non-literal limit → replaced by `limit`
///   (`DROPDOWN`);
/// * `n < limit` → kept (`QUERY`); `n == limit` → kept (`QUERY_AND_DROPDOWN`).
///
/// `FETCH FIRST n ROWS ONLY` counts as the query's limit and is adjusted the same way. The
/// limit goes on the outermost query, so it bounds a whole `UNION` and a `WITH … SELECT`.
/// Non-query statements (and `SELECT … INTO`) are returned unchanged with `NOT_LIMITED`.
///
/// The rest of the text is preserved: a replaced literal is edited in place and an added
/// `LIMIT` is appended after the statement's last token (on a new line, so a trailing `--`
/// comment cannot swallow it). Only when the query has clauses that must follow `LIMIT`
/// (`OFFSET`, `FETCH`, `FOR UPDATE`) or a non-literal limit is the last statement re-rendered
/// through sqlparser (comments inside it are then lost). Earlier statements are never touched.
///
/// Superset also reports `NOT_LIMITED` when fewer rows than the limit come back; that is the
/// caller's to decide after running the query.
pub fn apply_limit(
    dialect: SqlDialect,
    sql: &str,
    limit: u64,
) -> Result<(String, LimitOutcome), SqlError> {
    guard(dialect, sql, || {
        let Script {
            tokens,
            mut statements,
        } = parse_script(dialect, sql)?;
        let unchanged = || {
            (
                sql.to_owned(),
                LimitOutcome {
                    factor: LimitingFactor::NotLimited,
                    limit: None,
                    query_limit: None,
                    changed: false,
                },
            )
        };
        let Some(last) = statements.last_mut() else {
            return Ok(unchanged());
        };
        if !is_limitable_query(&last.ast) {
            return Ok(unchanged());
        }
        let Statement::Query(query) = &mut last.ast else {
            return Ok(unchanged());
        };
        let (start, end) = (last.start, last.end);
        // `LIMIT ALL` leaves no trace in the tree; never append a second LIMIT after it.
        let has_limit_keyword = top_level_keyword(&tokens, last.tokens.clone(), Keyword::LIMIT);
        let (existing, via_fetch) = existing_limit(query);
        let index = LineIndex::new(sql);
        let splice = |from: usize, to: usize, text: &str| -> Option<String> {
            Some(format!("{}{text}{}", sql.get(..from)?, sql.get(to..)?))
        };

        let (query_limit, edit) = match existing {
            ExistingLimit::Literal(n, _) if n < limit => {
                return Ok((
                    sql.to_owned(),
                    outcome(LimitingFactor::Query, n, Some(n), false),
                ));
            }
            ExistingLimit::Literal(n, _) if n == limit => {
                let factor = LimitingFactor::QueryAndDropdown;
                return Ok((sql.to_owned(), outcome(factor, n, Some(n), false)));
            }
            ExistingLimit::Literal(n, expr) => {
                // Replace just the number, keeping everything else byte for byte.
                let in_place = match expr {
                    Some(Expr::Value(v)) => index
                        .offset(sql, v.span.start)
                        .zip(index.offset(sql, v.span.end))
                        .filter(|(a, b)| a < b && *a >= start && *b <= end)
                        .and_then(|(a, b)| splice(a, b, &limit.to_string())),
                    _ => None,
                };
                (Some(n), in_place)
            }
            ExistingLimit::None => {
                let appendable = !has_limit_keyword
                    && query.limit_clause.is_none()
                    && query.fetch.is_none()
                    && query.locks.is_empty()
                    && query.for_clause.is_none()
                    && query.settings.is_none()
                    && query.format_clause.is_none()
                    && query.pipe_operators.is_empty();
                let appended = appendable
                    .then(|| splice(end, end, &format!("\nLIMIT {limit}")))
                    .flatten();
                (None, appended)
            }
            ExistingLimit::Other => (None, None),
        };
        let text = match edit {
            Some(text) => text,
            None => {
                set_limit(dialect, query, limit, via_fetch)?;
                let rendered = last.ast.to_string();
                splice(start, end, &rendered).unwrap_or(rendered)
            }
        };
        Ok((
            text,
            outcome(LimitingFactor::Dropdown, limit, query_limit, true),
        ))
    })
}

/// True if `keyword` occurs outside parentheses among `tokens[range]`.
fn top_level_keyword(
    tokens: &[TokenWithSpan],
    range: std::ops::RangeInclusive<usize>,
    keyword: Keyword,
) -> bool {
    let mut depth = 0usize;
    for token in tokens.get(range).unwrap_or_default() {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Word(word)
                if depth == 0 && word.quote_style.is_none() && word.keyword == keyword =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

fn outcome(
    factor: LimitingFactor,
    limit: u64,
    query_limit: Option<u64>,
    changed: bool,
) -> LimitOutcome {
    LimitOutcome {
        factor,
        limit: Some(limit),
        query_limit,
        changed,
    }
}

/// Sets the query's row limit in the tree (for re-rendering).
fn set_limit(
    dialect: SqlDialect,
    query: &mut Query,
    limit: u64,
    via_fetch: bool,
) -> Result<(), SqlError> {
    // Built by parsing so this does not depend on how sqlparser's features represent numbers.
    let text = limit.to_string();
    let number = parser_for(dialect, tokenize(dialect, &text)?)
        .parse_expr()
        .map_err(|e| {
            SqlError::invalid(
                dialect,
                &text,
                "Error parsing".to_owned(),
                Some(e.to_string()),
            )
        })?;
    if via_fetch && let Some(fetch) = query.fetch.as_mut() {
        fetch.quantity = Some(number);
        fetch.percent = false;
        return Ok(());
    }
    match query.limit_clause.as_mut() {
        Some(LimitClause::LimitOffset { limit, .. }) => *limit = Some(number),
        Some(LimitClause::OffsetCommaLimit { limit, .. }) => *limit = number,
        None => {
            query.limit_clause = Some(LimitClause::LimitOffset {
                limit: Some(number),
                offset: None,
                limit_by: Vec::new(),
            })
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// SQL Lab: functions, tables, formatting
// ---------------------------------------------------------------------------------------------

/// Lower-cased last part of a name (`pg_catalog.pg_sleep` → `pg_sleep`).
fn last_name_part(name: &ObjectName) -> String {
    name.0
        .last()
        .map(|part| match part.as_ident() {
            Some(ident) => ident.value.to_lowercase(),
            None => part.to_string().to_lowercase(),
        })
        .unwrap_or_default()
}

/// Lower-cased names of every function called anywhere in the script: in select lists,
/// predicates, CTEs, sub-queries, nested DML, window specifications, `FILTER`, `CASE`, casts,
/// subscripts, `IN (…)` lists, defaults, `FROM`-clause table functions (`generate_series(…)`,
/// `pg_sleep(0.5)`, `LATERAL`), and `CALL`: the visitor walks every expression and table
/// factor of the tree, so no clause has to be listed here. Schema qualification is dropped
/// (`pg_catalog.pg_sleep` → `pg_sleep`) and quoted names are lower-cased too
/// (`"PG_SLEEP"` → `pg_sleep`, which PostgreSQL would not resolve to `pg_sleep`: this can only
/// over-report), so a deny-list of bare names (Superset's `DISALLOWED_SQL_FUNCTIONS`) cannot
/// be side-stepped by spelling. Comments and whitespace between a name and its `(` are the
/// tokenizer's business and never reach the tree.
///
/// Functions with dedicated syntax are reported under their SQL name: `extract`,
/// `substring`, `trim`, `position`, `overlay`, `ceil`, `floor`. `CAST`/`::` and operators are
/// not reported.
pub fn functions_called(dialect: SqlDialect, sql: &str) -> Result<BTreeSet<String>, SqlError> {
    struct Collector(BTreeSet<String>);
    impl Visitor for Collector {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            let name = match expr {
                Expr::Function(function) => last_name_part(&function.name),
                Expr::Extract { .. } => "extract".to_owned(),
                Expr::Substring { .. } => "substring".to_owned(),
                Expr::Trim { .. } => "trim".to_owned(),
                Expr::Position { .. } => "position".to_owned(),
                Expr::Overlay { .. } => "overlay".to_owned(),
                Expr::Ceil { .. } => "ceil".to_owned(),
                Expr::Floor { .. } => "floor".to_owned(),
                _ => return ControlFlow::Continue(()),
            };
            self.0.insert(name);
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            match factor {
                TableFactor::Table {
                    name,
                    args: Some(_),
                    ..
                }
                | TableFactor::Function { name, .. } => {
                    self.0.insert(last_name_part(name));
                }
                TableFactor::UNNEST { .. } => {
                    self.0.insert("unnest".to_owned());
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
            if let Statement::Call(function) = statement {
                self.0.insert(last_name_part(&function.name));
            }
            ControlFlow::Continue(())
        }
    }
    guard(dialect, sql, || {
        let script = parse_script(dialect, sql)?;
        let mut collector = Collector(BTreeSet::new());
        for statement in &script.statements {
            let _ = statement.ast.visit(&mut collector);
        }
        Ok(collector.0)
    })
}

/// True if the function `name` (lower-case) is on the deny-list `denied`. An entry is a name
/// or a pattern in which `*` stands for any run of characters (`pg_ls_*`, `*_to_xml*`), so a
/// family of functions is refused as a whole, including members a newer database adds.
pub fn is_denied(name: &str, denied: &BTreeSet<String>) -> bool {
    denied.iter().any(|pattern| glob_match(pattern, name))
}

/// The names among `called` that [`is_denied`], in order.
pub fn disallowed(
    called: impl IntoIterator<Item = String>,
    denied: &BTreeSet<String>,
) -> Vec<String> {
    let called: BTreeSet<String> = called.into_iter().collect();
    called
        .into_iter()
        .filter(|f| is_denied(f, denied))
        .collect()
}

/// `*`-only glob matching (no other metacharacters: SQL names contain no `*`).
fn glob_match(pattern: &str, name: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The deny-list check for SQL the parser cannot read, deliberately over-eager: every
/// identifier-like word anywhere in the text (strings and comments included) that is followed
/// by `(` is a candidate, quoted (`"set_config"(`, `[readfile](`, `` `edit`( ``), qualified
/// (`pg_catalog.x(`, since quotes and dots separate words) or with whitespace and comments
/// before its parenthesis alike. (A call always has one: names without it are columns, such
/// as SSB's `lo_discount`, which a pattern like `lo_*` must not refuse.) PostgreSQL's
/// `U&"…"` identifiers can spell any name without its letters, so the text is refused
/// outright when it holds one.
pub fn denied_words(
    dialect: SqlDialect,
    sql: &str,
    denied: &BTreeSet<String>,
) -> Result<Vec<String>, SqlError> {
    let lower = sql.to_ascii_lowercase();
    if dialect == SqlDialect::Postgres && lower.contains("u&\"") {
        return Err(SqlError::invalid(
            dialect,
            sql,
            UNICODE_IDENTIFIER_REFUSAL.to_owned(),
            None,
        ));
    }
    // MySQL runs what executable comments hold, which a word scan cannot follow: refused
    // outright, as `tokenize` refuses them.
    if dialect == SqlDialect::MySql
        && (lower.contains("/*!") || lower.contains("/*m!") || lower.contains("/*+"))
    {
        return Err(SqlError::invalid(
            dialect,
            sql,
            MYSQL_EXECUTABLE_COMMENT_REFUSAL.to_owned(),
            None,
        ));
    }
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in lower.char_indices().chain([(lower.len(), ' ')]) {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(from)) => {
                start = None;
                // ClickHouse 18.16 does not nest block comments, current releases do: a word
                // is a candidate when either reading puts a `(` after it.
                let rest = &lower[i..];
                let calls = skip_trivia(dialect, rest, true).starts_with('(')
                    || (dialect == SqlDialect::ClickHouse
                        && skip_trivia_nesting(dialect, rest, true, false).starts_with('('));
                if calls {
                    words.push(lower[from..i].to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(disallowed(words, denied))
}

/// `text` without the whitespace and comments at its start (read as `dialect` reads them:
/// PostgreSQL nests `/* */` and also ends `--` at a carriage return; SQLite does neither),
/// and, with `quotes`, without closing identifier quotes (`"`, `]`, `` ` ``) among them.
fn skip_trivia(dialect: SqlDialect, text: &str, quotes: bool) -> &str {
    // Current ClickHouse nests block comments too (18.16 does not; see `denied_words`).
    let nests = matches!(dialect, SqlDialect::Postgres | SqlDialect::ClickHouse);
    skip_trivia_nesting(dialect, text, quotes, nests)
}

/// [`skip_trivia`] with block-comment nesting chosen by the caller. ClickHouse and MySQL also
/// have `#` line comments.
fn skip_trivia_nesting(dialect: SqlDialect, text: &str, quotes: bool, nests: bool) -> &str {
    let mysql = dialect == SqlDialect::MySql;
    let hash_comments = mysql || dialect == SqlDialect::ClickHouse;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b']' | b'`' if quotes => i += 1,
            // MySQL runs what `/*! … */` and `/*M! … */` hold: code, not trivia.
            b'/' if mysql && (text[i..].starts_with("/*!") || text[i..].starts_with("/*M!")) => {
                break;
            }
            // MySQL: `--` is a comment only before a space or control character; `#` always.
            b'-' if mysql
                && bytes.get(i + 1) == Some(&b'-')
                && bytes
                    .get(i + 2)
                    .is_some_and(|b| !b.is_ascii_whitespace() && !b.is_ascii_control()) =>
            {
                break;
            }
            b'#' if hash_comments => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' && !(nests && bytes[i] == b'\r') {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < bytes.len() {
                    if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                        depth = if nests { depth + 1 } else { 1 };
                        i += 2;
                    } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            _ => match text[i..].chars().next() {
                Some(c) if c.is_whitespace() => i += c.len_utf8(),
                _ => break,
            },
        }
    }
    text.get(i..).unwrap_or("")
}

/// The first keyword of `sql`, upper-cased, after the whitespace, comments and empty
/// statements (`;`) the database skips, read as `dialect` reads them: PostgreSQL nests
/// `/* /* */ */` and ends `--` comments at a carriage return too; SQLite does neither. Empty
/// when nothing but trivia is left or the text starts with something else (`(`, a quote).
/// This is what classifies a statement the parser cannot read, so a leading comment cannot
/// hide its kind.
pub fn leading_keyword(dialect: SqlDialect, sql: &str) -> String {
    let mut rest = skip_trivia(dialect, sql, false);
    while let Some(after) = rest.strip_prefix(';') {
        rest = skip_trivia(dialect, after, false);
    }
    rest.split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_uppercase()
}

/// A table or view a script reads or writes, with its name compared the way the database
/// compares names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableRef {
    /// The schema the name is qualified with, if any (the part before the table; a catalog
    /// before it is ignored), folded like [`TableRef::table`].
    pub schema: Option<String>,
    /// The table name as the database resolves it: PostgreSQL folds unquoted names to lower
    /// case and keeps quoted ones as written (`Secret` → `secret`, `"Secret"` → `Secret`);
    /// SQLite compares names case-insensitively whether quoted or not, so both are
    /// lower-cased there.
    pub table: String,
    /// The name as written, for messages (`public."Secret"`).
    pub written: String,
}

impl TableRef {
    /// True if this reference denotes the table `table` in schema `schema` (names as the
    /// database stores them; an empty `schema` means unqualified), given that unqualified
    /// names resolve in `default_schema`.
    pub fn denotes(
        &self,
        dialect: SqlDialect,
        schema: &str,
        table: &str,
        default_schema: &str,
    ) -> bool {
        let same = |a: &str, b: &str| match dialect {
            // ClickHouse names are case-sensitive; MySQL's table names are on Linux (its
            // `lower_case_table_names=0` default).
            SqlDialect::Postgres | SqlDialect::ClickHouse | SqlDialect::MySql => a == b,
            SqlDialect::Sqlite => a.eq_ignore_ascii_case(b),
        };
        let schema = if schema.is_empty() {
            default_schema
        } else {
            schema
        };
        same(&self.table, table) && same(self.schema.as_deref().unwrap_or(default_schema), schema)
    }
}

/// An identifier as the database compares it (see [`TableRef::table`]). PostgreSQL folds
/// ASCII letters only in a UTF-8 database (`downcase_identifier`); ClickHouse and MySQL (table
/// names, on Linux) never fold.
fn fold(dialect: SqlDialect, ident: &sqlparser::ast::Ident) -> String {
    match dialect {
        SqlDialect::Postgres if ident.quote_style.is_some() => ident.value.clone(),
        SqlDialect::ClickHouse | SqlDialect::MySql => ident.value.clone(),
        _ => ident.value.to_ascii_lowercase(),
    }
}

/// The tables (and views) the script reads or writes, in `FROM`/`JOIN` clauses, sub-queries
/// anywhere (select list, `WHERE`, `JOIN … ON`, `LATERAL`), CTE bodies, `TABLE x`, and
/// DML/DDL targets, with names resolved the way the database resolves them:
///
/// * a one-part name is a CTE, not a table, only where that CTE is in scope: in the main query
///   of its `WITH` and in the bodies of the CTEs defined after it, not in its own body unless
///   the `WITH` is `RECURSIVE` (PostgreSQL resolves `WITH secret AS (SELECT * FROM secret)`'s
///   inner name to the real table), and not outside the (sub-)query whose `WITH` defines it;
///   an inner `WITH` shadows an outer one only within its query;
/// * a qualified name (`public.secret`) is never a CTE, nor is a DML target (`WITH secret AS
///   (…) DELETE FROM secret` deletes from the table);
/// * names compare as [`TableRef`] says (`"Secret"` is not `secret` on PostgreSQL).
///
/// Where the scoping rules of SQLite differ (its CTEs also see later ones), these stricter
/// rules report a CTE as a table at worst, which refuses a query rather than admitting one.
/// `FROM`-clause table functions (`generate_series(…)`) are not tables (see
/// [`functions_called`]).
pub fn tables_read(dialect: SqlDialect, sql: &str) -> Result<BTreeSet<TableRef>, SqlError> {
    /// The CTEs one query defines and how many of them are in scope at the walk's position.
    struct Frame {
        ctes: Vec<String>,
        /// The CTE bodies, by address (the visitor hands out the very nodes of the tree).
        bodies: Vec<*const Query>,
        recursive: bool,
        visible: usize,
    }
    struct Collector {
        dialect: SqlDialect,
        tables: BTreeSet<TableRef>,
        frames: Vec<Frame>,
        /// Names of table functions, which are visited as relations too.
        functions: Vec<*const ObjectName>,
    }
    impl Collector {
        fn is_cte(&self, name: &str) -> bool {
            self.frames
                .iter()
                .any(|f| f.ctes[..f.visible].iter().any(|c| c == name))
        }
        fn add_parts(&mut self, parts: &[&sqlparser::ast::Ident], written: String, target: bool) {
            let Some((table, qualifiers)) = parts.split_last() else {
                return;
            };
            let table = fold(self.dialect, table);
            let schema = qualifiers.last().map(|s| fold(self.dialect, s));
            if schema.is_none() && !target && self.is_cte(&table) {
                return;
            }
            self.tables.insert(TableRef {
                schema,
                table,
                written,
            });
        }
        fn add(&mut self, name: &ObjectName, target: bool) {
            if self.functions.contains(&(name as *const ObjectName)) {
                return;
            }
            let parts: Option<Vec<&sqlparser::ast::Ident>> =
                name.0.iter().map(|p| p.as_ident()).collect();
            match parts {
                Some(parts) => self.add_parts(&parts, name.to_string(), target),
                // A name with a function part is no table name PostgreSQL or SQLite accept;
                // report it whole rather than lose it.
                None => {
                    self.tables.insert(TableRef {
                        schema: None,
                        table: name.to_string(),
                        written: name.to_string(),
                    });
                }
            }
        }
        fn add_target(&mut self, factor: &TableFactor) {
            if let TableFactor::Table { name, .. } = factor {
                self.add(name, true);
            }
        }
        /// `TABLE x` (PostgreSQL's `SELECT * FROM x`) in a query body.
        fn add_table_commands(&mut self, body: &SetExpr) {
            match body {
                SetExpr::Table(table) => {
                    if let Some(name) = &table.table_name {
                        let parts: Vec<&sqlparser::ast::Ident> =
                            table.schema_name.iter().chain([name]).collect();
                        let written = parts
                            .iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join(".");
                        self.add_parts(&parts, written, false);
                    }
                }
                SetExpr::SetOperation { left, right, .. } => {
                    self.add_table_commands(left);
                    self.add_table_commands(right);
                }
                _ => {}
            }
        }
    }
    impl Visitor for Collector {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            if let Some(frame) = self.frames.last_mut()
                && let Some(i) = frame.bodies.iter().position(|b| std::ptr::eq(*b, query))
            {
                frame.visible = if frame.recursive { i + 1 } else { i };
            }
            let (ctes, bodies, recursive) = match &query.with {
                Some(with) => (
                    with.cte_tables
                        .iter()
                        .map(|cte| fold(self.dialect, &cte.alias.name))
                        .collect(),
                    with.cte_tables
                        .iter()
                        .map(|cte| &*cte.query as *const Query)
                        .collect(),
                    with.recursive,
                ),
                None => (Vec::new(), Vec::new(), false),
            };
            // The main query sees every CTE; the visitor walks the bodies first (`with` is
            // the first field of `Query`), lowering `visible` for each.
            let visible = ctes.len();
            self.frames.push(Frame {
                ctes,
                bodies,
                recursive,
                visible,
            });
            self.add_table_commands(&query.body);
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            self.frames.pop();
            if let Some(frame) = self.frames.last_mut()
                && frame.bodies.contains(&(query as *const Query))
            {
                frame.visible = frame.ctes.len();
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name,
                args: Some(_),
                ..
            } = factor
            {
                self.functions.push(name);
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
            self.add(relation, false);
            ControlFlow::Continue(())
        }
        fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
            // Targets, which never name a CTE, and those the visitor does not report as
            // relations.
            match statement {
                Statement::Insert(insert) => {
                    if let sqlparser::ast::TableObject::TableName(name) = &insert.table {
                        self.add(name, true);
                    }
                }
                Statement::Update(update) => self.add_target(&update.table.relation),
                Statement::Delete(delete) => {
                    for name in &delete.tables {
                        self.add(name, true);
                    }
                    let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) =
                        &delete.from;
                    for table in from {
                        self.add_target(&table.relation);
                    }
                }
                Statement::Merge(merge) => self.add_target(&merge.table),
                Statement::Drop {
                    object_type: ObjectType::Table | ObjectType::View | ObjectType::MaterializedView,
                    names,
                    ..
                } => {
                    for name in names {
                        self.add(name, true);
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    guard(dialect, sql, || {
        let script = parse_script(dialect, sql)?;
        let mut collector = Collector {
            dialect,
            tables: BTreeSet::new(),
            frames: Vec::new(),
            functions: Vec::new(),
        };
        for statement in &script.statements {
            collector.frames.clear();
            collector.functions.clear();
            let _ = statement.ast.visit(&mut collector);
        }
        Ok(collector.tables)
    })
}

/// Names of the tables (and views) the script references, as written (`golden.sales`,
/// `"Sales"`): [`tables_read`]'s names, for display.
pub fn tables_referenced(dialect: SqlDialect, sql: &str) -> Result<BTreeSet<String>, SqlError> {
    Ok(tables_read(dialect, sql)?
        .into_iter()
        .map(|t| t.written)
        .collect())
}

/// Pretty-prints a script (SQL Lab's "Format SQL"): each statement through sqlparser's
/// pretty printer (`{:#}`), joined with `";\n\n"`. Comments are not kept (the parser drops
/// them) and keywords/spacing are normalised; an empty script formats to `""`.
pub fn format_sql(dialect: SqlDialect, sql: &str) -> Result<String, SqlError> {
    guard(dialect, sql, || {
        let script = parse_script(dialect, sql)?;
        Ok(script
            .statements
            .iter()
            .map(|s| format!("{:#}", s.ast))
            .collect::<Vec<_>>()
            .join(";\n\n"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG: SqlDialect = SqlDialect::Postgres;
    const LITE: SqlDialect = SqlDialect::Sqlite;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn fragments_accepted() {
        use FragmentKind::{Expression as E, Having as H, Where as W};
        let cases: &[(SqlDialect, FragmentKind, &str)] = &[
            (PG, E, "SUM(a)/SUM(b)"),
            (PG, E, "order_date::date"),
            (PG, E, "EXTRACT(YEAR FROM order_date)"),
            (PG, E, "COALESCE(region, 'Unknown')"),
            (PG, E, "CAST(order_date AS DATE)"),
            (PG, E, "revenue / NULLIF(quantity, 0)"),
            (PG, E, "COUNT(DISTINCT user_id)"),
            (PG, E, "date_trunc('month', x)"),
            (
                PG,
                E,
                "CASE WHEN amount > 100 THEN 'big' WHEN amount > 10 THEN 'mid' ELSE 'small' END",
            ),
            (
                PG,
                E,
                "SUM(revenue) OVER (PARTITION BY region ORDER BY order_date)",
            ),
            (PG, E, "ROW_NUMBER() OVER (ORDER BY x DESC)"),
            (PG, E, "SUM(x) FILTER (WHERE y > 0)"),
            (PG, E, "x = 1 -- trailing comment"),
            (PG, E, "x=1 -- )"),
            (PG, E, "x /* inline */ + 1"),
            (PG, E, "  SUM(a)  \n"),
            (PG, W, "duration_ms > 30000"),
            (PG, W, "(discount IS NULL OR discount < 0.2)"),
            (PG, W, "event_ts >= '2024-06-01 00:00:00+00' AND score > 50"),
            (PG, W, "x = 1 --"),
            (PG, W, "region IN ('a', 'b') AND NOT (x BETWEEN 1 AND 2)"),
            (PG, W, "name ILIKE '%o''brien%'"),
            (PG, W, "'\\' = x"),
            (PG, H, "SUM(revenue) > 1000"),
            (PG, H, "COUNT(*) > 1"),
            (LITE, E, "strftime('%Y', order_date)"),
            (LITE, E, "\"quoted col\" + [bracket col] + `tick`"),
            (LITE, E, "CAST(x AS INTEGER)"),
            (LITE, W, "x = 'it''s' -- note"),
            (LITE, H, "SUM(a) > 0"),
            // SQLite comments run to a line feed only, so this is all comment there too.
            (LITE, W, "x = 1 -- \r) OR (1=1"),
            // A PostgreSQL escape string really does contain the quote.
            (PG, W, "x = E'\\' ) OR (1=1 --'"),
            (PG, W, "x = $a$ ) OR (1=1 $a$"),
            (PG, W, ""),
            (PG, E, "   \n\t "),
        ];
        for (dialect, kind, fragment) in cases {
            assert_eq!(
                check_fragment(*dialect, fragment, *kind),
                Ok(()),
                "{dialect:?} {kind:?} {fragment:?}"
            );
            // The wrapped form the caller embeds must parse as part of a query too.
            if !fragment.trim().is_empty() {
                let query = format!(
                    "SELECT * FROM t WHERE {} AND y = 1",
                    wrap_fragment(fragment)
                );
                if *kind != E {
                    assert!(split_statements(*dialect, &query).is_ok(), "{query:?}");
                }
            }
        }
    }

    #[test]
    fn fragments_refused_as_invalid() {
        use FragmentKind::{Expression as E, Having as H, Where as W};
        // (dialect, kind, fragment, highlight)
        let cases: &[(SqlDialect, FragmentKind, &str, Option<&str>)] = &[
            (PG, W, "1=1; DROP TABLE x", Some(";")),
            (PG, W, "1=1; DELETE FROM t", Some(";")),
            (PG, W, "1=1) OR (1=1", Some(")")),
            (PG, W, "1=1)) OR ((1=1", Some(")")),
            (PG, W, "x = 1;", Some(";")),
            (PG, W, "1=1 UNION SELECT password FROM users", Some("UNION")),
            (PG, E, "SUM(a) AS total", Some("AS")),
            (PG, E, "SUM(a), SUM(b)", Some(",")),
            (PG, E, "1=1) --", Some(")")),
            (PG, E, "SUM(revenue", Some("revenue")),
            (PG, E, "a +", Some("+")),
            (PG, H, "SUM(x) >", Some(">")),
            (PG, E, "SELECT 1", Some("1")),
            (PG, W, "'\\' ) OR (1=1 --'", Some(")")),
            (PG, W, "E'\\'' ) OR (1=1", Some(")")),
            (PG, W, "x = $$ ) $$ ) OR (1=1", Some(")")),
            (PG, W, "x = 'abc", None),
            (PG, W, "x = 1 /* open comment", None),
            (PG, W, "x = 1 /* a /* nested */ still open", None),
            (PG, W, "x = 1 */", Some("/")),
            (LITE, W, "x = 1 /* a /* b */ c */", Some("c")),
            (LITE, W, "1=1) OR (1=1", Some(")")),
            (LITE, W, "1=1; DELETE FROM t", Some(";")),
            // Tokenizer corner cases where a mismatch with the database would let text escape:
            // PostgreSQL ends `--` comments at a carriage return too; `$` continues an
            // identifier; SQLite has no dollar quoting and no E'' escape strings.
            (PG, W, "x = 1 -- \r) OR (1=1", Some(")")),
            (PG, W, "date$$ ) OR (1=1 --$$", Some(")")),
            (LITE, W, "x = $$ ) OR (1=1 --$$", Some(")")),
            (LITE, W, "E'\\' ) OR (1=1 --'", Some("'\\'")),
            (LITE, W, "x = 1 /* a /* b */ ) OR (1=1", Some(")")),
            (PG, W, "x = 1 --\0", None),
            (LITE, W, "x = '\0') OR (1=1", None),
        ];
        for (dialect, kind, fragment, highlight) in cases {
            let err = check_fragment(*dialect, fragment, *kind).expect_err(fragment);
            assert_eq!(
                err.kind(),
                SqlErrorKind::InvalidSql,
                "{fragment:?}: {err:?}"
            );
            assert_eq!(err.error_type(), "INVALID_SQL_ERROR");
            assert_eq!(err.highlight(), *highlight, "{fragment:?}: {err:?}");
            assert!(err.message().starts_with("Error parsing"), "{err:?}");
            assert_eq!(err.engine(), dialect.engine());
        }
    }

    #[test]
    fn fragment_error_positions() {
        let err = check_fragment(PG, "SUM(revenue", FragmentKind::Expression).unwrap_err();
        assert_eq!(err.message(), "Error parsing near 'revenue' at line 1:18");
        assert_eq!(err.sql(), "SELECT SUM(revenue");
        assert_eq!((err.line(), err.column()), (Some(1), Some(18)));
        assert_eq!(err.highlight(), Some("revenue"));
        assert_eq!(err.detail(), Some("Expected: ), found: EOF"));
        assert_eq!(err.to_string(), err.message());

        // Clauses are parsed (and positioned) on their own, as Superset's sanitize_clause does.
        let err = check_fragment(PG, "1=1) OR (1=1", FragmentKind::Where).unwrap_err();
        assert_eq!(err.message(), "Error parsing near ')' at line 1:4");
        assert_eq!(err.sql(), "1=1) OR (1=1");

        let err = check_fragment(PG, "x +\n  (1 + ", FragmentKind::Expression).unwrap_err();
        assert_eq!((err.line(), err.column()), (Some(2), Some(6)));
        assert_eq!(err.highlight(), Some("+"));

        let err = check_fragment(PG, "x = 'abc", FragmentKind::Where).unwrap_err();
        assert_eq!((err.line(), err.column()), (Some(1), Some(5)));
        assert_eq!(
            err.message(),
            "Error parsing at line 1:5: Unterminated string literal"
        );
    }

    #[test]
    fn fragments_refused_as_subqueries() {
        use FragmentKind::{Expression as E, Having as H, Where as W};
        let cases: &[(FragmentKind, &str)] = &[
            (E, "(SELECT max(x) FROM t)"),
            (W, "x IN (SELECT y FROM z)"),
            (W, "EXISTS (SELECT 1)"),
            (W, "NOT EXISTS (SELECT 1 FROM secrets)"),
            (E, "ARRAY(SELECT 1)"),
            (W, "x = ANY(SELECT y FROM z)"),
            (E, "COALESCE((SELECT 1), 0)"),
            (E, "SUM(x) FILTER (WHERE y IN (SELECT 1))"),
            (E, "CASE WHEN EXISTS (SELECT 1) THEN 1 END"),
            (H, "SUM(x) > (SELECT avg(x) FROM t)"),
        ];
        for (kind, fragment) in cases {
            let err = check_fragment(PG, fragment, *kind).expect_err(fragment);
            assert_eq!(
                err.kind(),
                SqlErrorKind::AdhocSubqueryNotAllowed,
                "{fragment:?}"
            );
            assert_eq!(err.error_type(), "ADHOC_SUBQUERY_NOT_ALLOWED_ERROR");
            assert_eq!(
                err.message(),
                "Custom SQL fields cannot contain sub-queries."
            );
            assert_eq!(err.sql(), *fragment);
        }
    }

    #[test]
    fn wrap_fragment_neutralises_trailing_comment() {
        assert_eq!(wrap_fragment("x = 1 --"), "(x = 1 --\n)");
        let sql = format!(
            "SELECT a FROM t WHERE {} AND tenant = 7",
            wrap_fragment("x=1 -- )")
        );
        let statements = split_statements(PG, &sql).unwrap();
        assert_eq!(statements.len(), 1);
        // The tenant predicate survives the comment.
        assert!(format_sql(PG, &sql).unwrap().contains("tenant = 7"));
    }

    #[test]
    fn splits_statements() {
        // (script, [(statement text, is_query, is_mutating)])
        type Case<'a> = (&'a str, &'a [(&'a str, bool, bool)]);
        let cases: &[Case] = &[
            (
                "SELECT 1; SELECT 2;",
                &[("SELECT 1", true, false), ("SELECT 2", true, false)],
            ),
            (
                "-- lead\nSELECT 1; -- c\n/* x */ SELECT 'a;b' ;;",
                &[("SELECT 1", true, false), ("SELECT 'a;b'", true, false)],
            ),
            (
                "SELECT 1;\nINSERT INTO t VALUES (1);\nSELECT * INTO t2 FROM t",
                &[
                    ("SELECT 1", true, false),
                    ("INSERT INTO t VALUES (1)", false, true),
                    ("SELECT * INTO t2 FROM t", false, true),
                ],
            ),
            (
                "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
                &[(
                    "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
                    true,
                    true,
                )],
            ),
            (
                "select  $$a;b$$ ,\n  \"x;y\"",
                &[("select  $$a;b$$ ,\n  \"x;y\"", true, false)],
            ),
            ("SHOW search_path", &[("SHOW search_path", false, false)]),
            ("", &[]),
            ("  ;; -- only a comment\n", &[]),
        ];
        for (sql, expected) in cases {
            let got = split_statements(PG, sql).unwrap();
            let got: Vec<(&str, bool, bool)> = got
                .iter()
                .map(|s| (s.sql.as_str(), s.is_query, s.is_mutating))
                .collect();
            assert_eq!(got, *expected, "{sql:?}");
        }
        let err = split_statements(PG, "SELECT 1 SELECT 2").unwrap_err();
        assert_eq!(err.highlight(), Some("SELECT"));
        assert_eq!((err.line(), err.column()), (Some(1), Some(15)));
        assert!(split_statements(PG, "SELECT FROM WHERE").is_err());
    }

    #[test]
    fn detects_mutating_statements() {
        let cases: &[(SqlDialect, &str, bool)] = &[
            (PG, "SELECT * FROM t", false),
            (PG, "WITH a AS (SELECT 1) SELECT * FROM a", false),
            (PG, "VALUES (1), (2)", false),
            (PG, "SELECT 1 UNION ALL SELECT 2", false),
            (PG, "SELECT * FROM t FOR UPDATE", false),
            (PG, "EXPLAIN SELECT 1", false),
            (PG, "EXPLAIN DELETE FROM t", false),
            (PG, "EXPLAIN ANALYZE SELECT 1", false),
            (PG, "EXPLAIN ANALYZE DELETE FROM t", true),
            (PG, "EXPLAIN (ANALYZE) DELETE FROM t", true),
            (
                PG,
                "EXPLAIN (ANALYZE, FORMAT JSON) UPDATE t SET a = 1",
                true,
            ),
            (PG, "SHOW search_path", false),
            (PG, "SHOW TABLES", false),
            (PG, "", false),
            (PG, "-- just a comment", false),
            (PG, "INSERT INTO t VALUES (1)", true),
            (PG, "UPDATE t SET a = 1", true),
            (PG, "DELETE FROM t", true),
            (
                PG,
                "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
                true,
            ),
            (PG, "CREATE TABLE t (a int)", true),
            (PG, "CREATE TABLE t AS SELECT 1", true),
            (PG, "CREATE VIEW v AS SELECT 1", true),
            (PG, "DROP TABLE t", true),
            (PG, "ALTER TABLE t ADD COLUMN b int", true),
            (PG, "TRUNCATE t", true),
            (PG, "GRANT SELECT ON t TO bob", true),
            (PG, "REVOKE SELECT ON t FROM bob", true),
            (PG, "COPY t TO STDOUT", true),
            (PG, "SET ROLE admin", true),
            (PG, "SET search_path = evil", true),
            (PG, "CALL do_it()", true),
            (PG, "BEGIN", true),
            (PG, "SELECT * INTO t2 FROM t", true),
            (PG, "SELECT 1; DROP TABLE t", true),
            (
                PG,
                "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
                true,
            ),
            (
                PG,
                "WITH i AS (INSERT INTO t VALUES (1) RETURNING id) SELECT id FROM i",
                true,
            ),
            (
                PG,
                "WITH u AS (UPDATE t SET a = 1 RETURNING *) SELECT count(*) FROM u",
                true,
            ),
            (
                PG,
                "WITH a AS (SELECT 1), b AS (DELETE FROM t RETURNING 1) SELECT * FROM a",
                true,
            ),
            (LITE, "SELECT * FROM t", false),
            (LITE, "PRAGMA table_info('t')", false),
            (LITE, "PRAGMA user_version", false),
            (LITE, "PRAGMA user_version = 3", true),
            (LITE, "PRAGMA journal_mode = 'wal'", true),
            (LITE, "PRAGMA writable_schema", true),
            (LITE, "ATTACH DATABASE 'other.db' AS other", true),
            (LITE, "INSERT OR REPLACE INTO t VALUES (1)", true),
            (LITE, "VACUUM", true),
        ];
        for (dialect, sql, expected) in cases {
            assert_eq!(is_mutating(*dialect, sql), Ok(*expected), "{sql:?}");
        }
        let err = is_mutating(PG, "DELETE FROM").unwrap_err();
        assert_eq!(err.kind(), SqlErrorKind::InvalidSql);
    }

    #[test]
    fn applies_limits() {
        use LimitingFactor::{Dropdown as D, NotLimited as N, Query as Q, QueryAndDropdown as QD};
        // (dialect, sql, limit, expected sql, factor, effective limit, query's own limit)
        type Case<'a> = (
            SqlDialect,
            &'a str,
            u64,
            &'a str,
            LimitingFactor,
            Option<u64>,
            Option<u64>,
        );
        let cases: &[Case] = &[
            (
                PG,
                "SELECT * FROM t",
                100,
                "SELECT * FROM t\nLIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT * FROM t LIMIT 1000",
                100,
                "SELECT * FROM t LIMIT 100",
                D,
                Some(100),
                Some(1000),
            ),
            (
                PG,
                "SELECT * FROM t LIMIT 10",
                100,
                "SELECT * FROM t LIMIT 10",
                Q,
                Some(10),
                Some(10),
            ),
            (
                PG,
                "SELECT * FROM t LIMIT 100",
                100,
                "SELECT * FROM t LIMIT 100",
                QD,
                Some(100),
                Some(100),
            ),
            (
                PG,
                "SELECT * FROM t ORDER BY a LIMIT 1000 OFFSET 20",
                100,
                "SELECT * FROM t ORDER BY a LIMIT 100 OFFSET 20",
                D,
                Some(100),
                Some(1000),
            ),
            (
                PG,
                "SELECT * FROM t OFFSET 20",
                100,
                "SELECT * FROM t LIMIT 100 OFFSET 20",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "WITH c AS (SELECT * FROM t LIMIT 5000) SELECT * FROM c",
                100,
                "WITH c AS (SELECT * FROM t LIMIT 5000) SELECT * FROM c\nLIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "WITH c AS (SELECT 1) SELECT * FROM c LIMIT 7",
                100,
                "WITH c AS (SELECT 1) SELECT * FROM c LIMIT 7",
                Q,
                Some(7),
                Some(7),
            ),
            (
                PG,
                "SELECT a FROM t UNION ALL SELECT b FROM u",
                100,
                "SELECT a FROM t UNION ALL SELECT b FROM u\nLIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT a FROM t UNION SELECT b FROM u LIMIT 500",
                100,
                "SELECT a FROM t UNION SELECT b FROM u LIMIT 100",
                D,
                Some(100),
                Some(500),
            ),
            (
                PG,
                "SELECT * FROM t LIMIT $1",
                100,
                "SELECT * FROM t LIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT * FROM t LIMIT 10 + 5",
                100,
                "SELECT * FROM t LIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT * FROM t LIMIT ALL",
                100,
                "SELECT * FROM t LIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT * FROM t FETCH FIRST 500 ROWS ONLY",
                100,
                "SELECT * FROM t FETCH FIRST 100 ROWS ONLY",
                D,
                Some(100),
                Some(500),
            ),
            (
                PG,
                "SELECT * FROM t FETCH FIRST ROW ONLY",
                100,
                "SELECT * FROM t FETCH FIRST ROW ONLY",
                Q,
                Some(1),
                Some(1),
            ),
            (
                PG,
                "SELECT * FROM t FOR UPDATE",
                100,
                "SELECT * FROM t LIMIT 100 FOR UPDATE",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT 1; SELECT * FROM t -- trailing\n",
                100,
                "SELECT 1; SELECT * FROM t\nLIMIT 100 -- trailing\n",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT * FROM t;",
                100,
                "SELECT * FROM t\nLIMIT 100;",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "VALUES (1), (2)",
                100,
                "VALUES (1), (2)\nLIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                PG,
                "SELECT 'é€🙂' AS x FROM t LIMIT 1000 -- ünïcode",
                100,
                "SELECT 'é€🙂' AS x FROM t LIMIT 100 -- ünïcode",
                D,
                Some(100),
                Some(1000),
            ),
            (
                PG,
                "SELECT *\r\nFROM t\r\nLIMIT 1000",
                100,
                "SELECT *\r\nFROM t\r\nLIMIT 100",
                D,
                Some(100),
                Some(1000),
            ),
            (
                PG,
                "INSERT INTO t VALUES (1)",
                100,
                "INSERT INTO t VALUES (1)",
                N,
                None,
                None,
            ),
            (
                PG,
                "SELECT * INTO t2 FROM t",
                100,
                "SELECT * INTO t2 FROM t",
                N,
                None,
                None,
            ),
            (
                PG,
                "SELECT * FROM t; DELETE FROM t",
                100,
                "SELECT * FROM t; DELETE FROM t",
                N,
                None,
                None,
            ),
            (
                PG,
                "EXPLAIN SELECT * FROM t",
                100,
                "EXPLAIN SELECT * FROM t",
                N,
                None,
                None,
            ),
            (PG, "", 100, "", N, None, None),
            (
                LITE,
                "SELECT * FROM t LIMIT 5, 1000",
                100,
                "SELECT * FROM t LIMIT 5, 100",
                D,
                Some(100),
                Some(1000),
            ),
            (
                LITE,
                "SELECT * FROM t",
                100,
                "SELECT * FROM t\nLIMIT 100",
                D,
                Some(100),
                None,
            ),
            (
                LITE,
                "SELECT * FROM t OFFSET 3",
                10,
                "SELECT * FROM t LIMIT 10 OFFSET 3",
                D,
                Some(10),
                None,
            ),
        ];
        for (dialect, sql, limit, expected, factor, effective, own) in cases {
            let (got, outcome) = apply_limit(*dialect, sql, *limit).unwrap();
            assert_eq!(got, *expected, "{sql:?}");
            assert_eq!(outcome.factor, *factor, "{sql:?}");
            assert_eq!(outcome.limit, *effective, "{sql:?}");
            assert_eq!(outcome.query_limit, *own, "{sql:?}");
            assert_eq!(outcome.changed, got != *sql, "{sql:?}");
            // Whatever we produce still parses.
            assert!(split_statements(*dialect, &got).is_ok(), "{got:?}");
        }
        assert!(apply_limit(PG, "SELECT (", 10).is_err());
        assert_eq!(
            LimitingFactor::QueryAndDropdown.as_str(),
            "QUERY_AND_DROPDOWN"
        );
        assert_eq!(LimitingFactor::NotLimited.as_str(), "NOT_LIMITED");
        assert_eq!(LimitingFactor::Dropdown.as_str(), "DROPDOWN");
        assert_eq!(LimitingFactor::Query.as_str(), "QUERY");
    }

    #[test]
    fn lists_functions() {
        let cases: &[(SqlDialect, &str, &[&str])] = &[
            (PG, "SELECT 1 AS x FROM pg_sleep(0.5)", &["pg_sleep"]),
            (PG, "SELECT pg_catalog.pg_sleep(1)", &["pg_sleep"]),
            (PG, "SELECT PG_READ_FILE('/etc/passwd')", &["pg_read_file"]),
            (
                PG,
                "SELECT query_to_xml('select 1', true, true, '')",
                &["query_to_xml"],
            ),
            (
                PG,
                "WITH a AS (SELECT version()) SELECT * FROM a",
                &["version"],
            ),
            (
                PG,
                "SELECT * FROM t WHERE x IN (SELECT max(y) FROM u)",
                &["max"],
            ),
            (
                PG,
                "SELECT COUNT(DISTINCT a), date_trunc('month', d), EXTRACT(YEAR FROM d) FROM t",
                &["count", "date_trunc", "extract"],
            ),
            (
                PG,
                "SELECT * FROM generate_series(1, 10) AS g(n)",
                &["generate_series"],
            ),
            (
                PG,
                "SELECT upper(lower(x)) FROM t; SELECT now()",
                &["lower", "now", "upper"],
            ),
            (
                PG,
                "WITH d AS (DELETE FROM t RETURNING pg_sleep(1)) SELECT * FROM d",
                &["pg_sleep"],
            ),
            (
                PG,
                "SELECT * FROM (SELECT inet_server_addr()) s",
                &["inet_server_addr"],
            ),
            (
                PG,
                "SELECT SUBSTRING(x FROM 1 FOR 2), TRIM(y)",
                &["substring", "trim"],
            ),
            (PG, "SELECT sum(x) OVER (PARTITION BY y) FROM t", &["sum"]),
            (PG, "SELECT 1", &[]),
            (PG, "", &[]),
            (LITE, "SELECT load_extension('x')", &["load_extension"]),
        ];
        for (dialect, sql, expected) in cases {
            assert_eq!(
                functions_called(*dialect, sql),
                Ok(set(expected)),
                "{sql:?}"
            );
        }
        assert!(functions_called(PG, "SELECT (").is_err());
    }

    #[test]
    fn lists_tables() {
        let cases: &[(SqlDialect, &str, &[&str])] = &[
            (PG, "SELECT * FROM golden.sales", &["golden.sales"]),
            (
                PG,
                "WITH s AS (SELECT * FROM golden.sales) SELECT * FROM s JOIN dim d ON s.id = d.id",
                &["dim", "golden.sales"],
            ),
            (
                PG,
                "SELECT * FROM (SELECT * FROM a) x WHERE y IN (SELECT y FROM b)",
                &["a", "b"],
            ),
            (PG, "SELECT * FROM generate_series(1, 3)", &[]),
            (PG, "SELECT 1", &[]),
            (
                PG,
                "INSERT INTO foo.bar SELECT * FROM baz",
                &["baz", "foo.bar"],
            ),
            (
                PG,
                "SELECT * FROM \"Golden\".\"Sales\"",
                &["\"Golden\".\"Sales\""],
            ),
            (
                PG,
                "WITH s AS (SELECT 1) SELECT * FROM s; SELECT * FROM s",
                &["s"],
            ),
            (PG, "WITH S AS (SELECT 1) SELECT * FROM s", &[]),
            (
                PG,
                "SELECT * FROM a, b LEFT JOIN c ON true",
                &["a", "b", "c"],
            ),
            (
                PG,
                "UPDATE t SET a = 1 FROM u WHERE t.id = u.id",
                &["t", "u"],
            ),
            (PG, "DROP TABLE x, y", &["x", "y"]),
            (
                LITE,
                "SELECT * FROM main.t JOIN [odd name] o ON 1",
                &["[odd name]", "main.t"],
            ),
        ];
        for (dialect, sql, expected) in cases {
            assert_eq!(
                tables_referenced(*dialect, sql),
                Ok(set(expected)),
                "{sql:?}"
            );
        }
    }

    #[test]
    fn cte_names_are_scoped_as_the_database_scopes_them() {
        // (dialect, sql, tables as written)
        let cases: &[(SqlDialect, &str, &[&str])] = &[
            // A CTE is not in scope inside its own non-recursive body.
            (
                PG,
                "WITH secret AS (SELECT * FROM secret) SELECT * FROM secret",
                &["secret"],
            ),
            (
                PG,
                "WITH a AS (SELECT 1), secret AS (SELECT * FROM secret) SELECT * FROM a, secret",
                &["secret"],
            ),
            // Earlier CTEs are in scope in later bodies; later ones are not in earlier bodies.
            (
                PG,
                "WITH secret AS (SELECT 1), b AS (SELECT * FROM secret) SELECT * FROM b",
                &[],
            ),
            (
                PG,
                "WITH b AS (SELECT * FROM secret), secret AS (SELECT 1) SELECT * FROM b",
                &["secret"],
            ),
            // Nested WITHs are scoped to their sub-query.
            (
                PG,
                "WITH x AS (SELECT 1) SELECT * FROM (WITH secret AS (SELECT * FROM secret) \
                 SELECT * FROM secret) s",
                &["secret"],
            ),
            (
                PG,
                "SELECT * FROM (WITH secret AS (SELECT 1) SELECT * FROM secret) s, secret",
                &["secret"],
            ),
            (
                PG,
                "WITH a AS (WITH secret AS (SELECT 1) SELECT * FROM secret) SELECT * FROM a, secret",
                &["secret"],
            ),
            (
                PG,
                "WITH secret AS (SELECT 1) SELECT * FROM (WITH other AS (SELECT 2) \
                 SELECT * FROM secret, other) s",
                &[],
            ),
            // A qualified name is never a CTE.
            (
                PG,
                "WITH secret AS (SELECT 1) SELECT * FROM public.secret",
                &["public.secret"],
            ),
            // Sub-queries anywhere see the CTEs of their query, and read tables.
            (
                PG,
                "WITH secret AS (SELECT 1) SELECT (SELECT count(*) FROM secret)",
                &[],
            ),
            (
                PG,
                "SELECT * FROM open WHERE x IN (SELECT x FROM secret)",
                &["open", "secret"],
            ),
            (
                PG,
                "SELECT (SELECT max(x) FROM secret) FROM open",
                &["open", "secret"],
            ),
            (
                PG,
                "SELECT * FROM open o JOIN open p ON EXISTS (SELECT 1 FROM secret)",
                &["open", "secret"],
            ),
            (
                PG,
                "SELECT * FROM open, LATERAL (SELECT * FROM secret) s",
                &["open", "secret"],
            ),
            (
                PG,
                "SELECT * FROM open UNION TABLE secret",
                &["open", "secret"],
            ),
            (
                PG,
                "WITH secret AS (SELECT 1) SELECT 1 UNION TABLE secret",
                &[],
            ),
            // RECURSIVE puts a CTE in scope in its own body.
            (
                PG,
                "WITH RECURSIVE secret AS (SELECT 1 UNION ALL SELECT * FROM secret) \
                 SELECT * FROM secret",
                &[],
            ),
            (
                PG,
                "WITH RECURSIVE r AS (SELECT * FROM secret UNION ALL SELECT * FROM r) \
                 SELECT * FROM r",
                &["secret"],
            ),
            (
                PG,
                "WITH RECURSIVE secret AS (SELECT * FROM public.secret UNION ALL \
                 SELECT * FROM secret) SELECT * FROM secret",
                &["public.secret"],
            ),
            // Case: PostgreSQL folds unquoted names, keeps quoted ones.
            (
                PG,
                "WITH \"Secret\" AS (SELECT 1) SELECT * FROM secret",
                &["secret"],
            ),
            (
                PG,
                "WITH secret AS (SELECT 1) SELECT * FROM \"Secret\"",
                &["\"Secret\""],
            ),
            (
                PG,
                "WITH Secret AS (SELECT 1) SELECT * FROM \"secret\"",
                &[],
            ),
            (PG, "WITH SECRET AS (SELECT 1) SELECT * FROM Secret", &[]),
            // SQLite compares names case-insensitively, quoted or not.
            (
                LITE,
                "WITH Secret AS (SELECT 1) SELECT * FROM \"SECRET\"",
                &[],
            ),
            (
                LITE,
                "WITH secret AS (SELECT * FROM secret) SELECT * FROM secret",
                &["secret"],
            ),
            // DML targets are tables, whatever CTEs are called.
            (
                PG,
                "WITH secret AS (SELECT 1) DELETE FROM secret",
                &["secret"],
            ),
            (
                PG,
                "WITH secret AS (SELECT 1) UPDATE secret SET x = 1",
                &["secret"],
            ),
            (
                PG,
                "WITH secret AS (SELECT 1) INSERT INTO secret SELECT * FROM secret",
                &["secret"],
            ),
        ];
        for (dialect, sql, expected) in cases {
            assert_eq!(
                tables_referenced(*dialect, sql),
                Ok(set(expected)),
                "{dialect:?} {sql:?}"
            );
        }
    }

    #[test]
    fn table_refs_compare_as_the_database_compares() {
        let one = |dialect, sql| {
            tables_read(dialect, sql)
                .unwrap()
                .into_iter()
                .next()
                .unwrap()
        };
        let t = one(PG, "SELECT * FROM Public.Open");
        assert!(t.denotes(PG, "public", "open", "public"));
        assert!(!t.denotes(PG, "other", "open", "public"));
        let t = one(PG, "SELECT * FROM open");
        assert!(t.denotes(PG, "", "open", "public"));
        assert!(t.denotes(PG, "public", "open", "public"));
        assert!(!t.denotes(PG, "other", "open", "public"));
        let t = one(PG, "SELECT * FROM \"OPEN\"");
        assert!(!t.denotes(PG, "public", "open", "public"));
        assert!(t.denotes(PG, "public", "OPEN", "public"));
        let t = one(LITE, "SELECT * FROM \"OPEN\"");
        assert!(t.denotes(LITE, "", "open", "main"));
        let t = one(LITE, "SELECT * FROM [Main].[OPEN]");
        assert!(t.denotes(LITE, "main", "open", "main"));
        let t = one(PG, "SELECT * FROM db.public.open");
        assert_eq!(t.schema.as_deref(), Some("public"));
    }

    #[test]
    fn every_spelling_of_a_call_is_reported() {
        let call = "set_config('a', 'b', false)";
        let spellings = [
            format!("SELECT {call}"),
            "SELECT \"set_config\"('a', 'b', false)".to_owned(),
            "SELECT SET_CONFIG('a', 'b', false)".to_owned(),
            "SELECT pg_catalog.set_config('a', 'b', false)".to_owned(),
            "SELECT \"pg_catalog\".\"set_config\"('a', 'b', false)".to_owned(),
            "SELECT set_config /* c */ ('a', 'b', false)".to_owned(),
            "SELECT set_config\n-- c\n('a', 'b', false)".to_owned(),
            format!("SELECT * FROM {call}"),
            format!("SELECT * FROM {call} AS s(x)"),
            format!("SELECT * FROM t, LATERAL {call} s"),
            format!("SELECT * FROM t, LATERAL (SELECT {call}) s"),
            format!("SELECT * FROM generate_series(1, length({call}))"),
            format!("CALL {call}"),
            format!("SELECT CAST({call} AS int)"),
            format!("SELECT {call}::int"),
            format!("SELECT 1 WHERE 'x' IN ({call})"),
            format!("SELECT 1 WHERE 'x' IN (SELECT {call})"),
            format!("SELECT sum(x) OVER (PARTITION BY {call}) FROM t"),
            format!("SELECT sum(x) OVER (ORDER BY {call}) FROM t"),
            format!("SELECT count(*) FILTER (WHERE {call} = '') FROM t"),
            format!("SELECT (ARRAY[1])[length({call})]"),
            format!("SELECT CASE WHEN true THEN {call} END"),
            format!("SELECT * FROM t ORDER BY {call}"),
            format!("SELECT x FROM t GROUP BY {call}"),
            format!("SELECT x FROM t GROUP BY x HAVING {call} = ''"),
            format!("SELECT 1 LIMIT length({call})"),
            format!("VALUES ({call})"),
            format!("SELECT ARRAY(SELECT {call})"),
            format!("SELECT ROW({call})"),
            format!("SELECT {call} COLLATE \"C\""),
            format!("SELECT x FROM t JOIN u ON {call} = ''"),
            format!("SELECT string_agg(x, ',' ORDER BY {call}) FROM t"),
            format!("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY length({call})) FROM t"),
            format!("SELECT coalesce(NULL, {call})"),
            format!("SELECT 1 WHERE EXISTS (SELECT {call})"),
            format!("WITH c AS (SELECT {call}) SELECT * FROM c"),
            format!("CREATE TABLE t (x text DEFAULT {call})"),
            format!("INSERT INTO t VALUES ({call})"),
            format!("UPDATE t SET x = {call}"),
            format!("DELETE FROM t WHERE x = {call}"),
            format!("EXPLAIN ANALYZE SELECT {call}"),
            format!("PREPARE p AS SELECT {call}"),
            format!("CREATE VIEW v AS SELECT {call}"),
            format!("SELECT x[length({call})] FROM t"),
            format!("SELECT {call} IS NULL"),
            format!("SELECT NOT ({call} = '')"),
            format!("SELECT sum(x) OVER w FROM t WINDOW w AS (PARTITION BY {call})"),
            format!("SELECT * FROM t WHERE x = ANY(ARRAY[{call}])"),
            format!("INSERT INTO t VALUES (1) ON CONFLICT (x) DO UPDATE SET x = {call}"),
            format!("SELECT * FROM t FETCH FIRST length({call}) ROWS ONLY"),
            format!("SELECT * FROM t OFFSET length({call})"),
            format!("SELECT DISTINCT ON ({call}) x FROM t"),
            format!("SELECT x FROM t GROUP BY GROUPING SETS (({call}), ())"),
            format!("SELECT x FROM t GROUP BY ROLLUP ({call})"),
            format!("SELECT {call}::timestamp AT TIME ZONE 'utc'"),
            format!("SELECT * FROM t TABLESAMPLE BERNOULLI (length({call}))"),
            format!("SELECT * FROM unnest(ARRAY[{call}])"),
            format!("SELECT * FROM t WHERE x IN (VALUES ({call}))"),
            format!("SELECT (1, {call})"),
            format!("SELECT CASE {call} WHEN 'a' THEN 1 END"),
            format!("SELECT ARRAY[{call}]"),
            format!("SELECT ({call})[1]"),
            format!("SELECT {call} IS DISTINCT FROM 'x'"),
            format!("SELECT * FROM t WHERE x = (SELECT {call})"),
            format!("MERGE INTO t USING (SELECT {call} AS y) s ON true WHEN MATCHED THEN DELETE"),
            format!("SELECT extract(epoch FROM {call}::timestamp)"),
            format!("SELECT substring({call} FROM 1 FOR 2)"),
            format!("SELECT trim(both {call} FROM 'x')"),
            format!("SELECT position({call} IN 'x')"),
            format!("SELECT x FROM t WHERE x LIKE {call} ESCAPE '!'"),
            format!("SELECT x FROM t WHERE x BETWEEN {call} AND 'z'"),
            "SELECT set_config(setting_name => 'a', new_value => 'b', is_local => false)"
                .to_owned(),
            format!("SELECT * FROM (SELECT * FROM t) s WHERE s.x = {call}"),
            format!("SELECT * FROM t JOIN LATERAL {call} s ON true"),
            format!("SELECT max(x) FILTER (WHERE {call} = '') OVER () FROM t"),
            format!("UPDATE t SET x = 1 FROM (SELECT {call}) s"),
            format!("DELETE FROM t USING (SELECT {call}) s"),
            format!("INSERT INTO t SELECT {call} RETURNING {call}"),
        ];
        // What the parser reads is checked on the tree; what it cannot read, by the fallback.
        let denied: BTreeSet<String> = set(&["set_config"]);
        for sql in &spellings {
            match functions_called(PG, sql) {
                Ok(called) => assert!(called.contains("set_config"), "{sql}: {called:?}"),
                Err(_) => assert_eq!(
                    denied_words(PG, sql, &denied),
                    Ok(vec!["set_config".to_owned()]),
                    "{sql}"
                ),
            }
        }
        for sql in [
            "SELECT load_extension('x')",
            "SELECT \"load_extension\"('x')",
            "SELECT [load_extension]('x')",
            "SELECT `LOAD_EXTENSION`('x')",
            "SELECT * FROM t WHERE x IN (SELECT load_extension('x'))",
        ] {
            let called = functions_called(LITE, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert!(called.contains("load_extension"), "{sql}: {called:?}");
        }
        // U&"…" spells names sqlparser would misread: refused before anything else.
        for sql in [
            "SELECT U&\"\\0073et_config\"('a', 'b', false)",
            "SELECT * FROM u&\"secret\"",
        ] {
            let err = functions_called(PG, sql).expect_err(sql);
            assert_eq!(err.message(), UNICODE_IDENTIFIER_REFUSAL);
            assert!(tables_read(PG, sql).is_err());
            assert!(split_statements(PG, sql).is_err());
        }
        assert!(functions_called(PG, "SELECT U&'\\0041'").is_ok());
        assert!(functions_called(LITE, "SELECT u&\"x\" FROM t").is_ok());
    }

    #[test]
    fn deny_list_patterns_match_whole_names() {
        let denied: BTreeSet<String> = ["*_to_xml*", "lo_*", "pg_sleep", "pg_*_slot"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        for name in [
            "query_to_xml",
            "schema_to_xmlschema",
            "cursor_to_xml",
            "table_to_xml_and_xmlschema",
            "lo_import",
            "lo_",
            "pg_sleep",
            "pg_create_logical_replication_slot",
        ] {
            assert!(is_denied(name, &denied), "{name}");
        }
        for name in [
            "xml",
            "to_xml",
            "lower",
            "pg_sleep_for",
            "pg_slot",
            "xlo_get",
            "pg_sleepx",
        ] {
            assert!(!is_denied(name, &denied), "{name}");
        }
        assert_eq!(
            disallowed(
                [
                    "lower".to_owned(),
                    "lo_get".to_owned(),
                    "pg_sleep".to_owned()
                ],
                &denied
            ),
            vec!["lo_get".to_owned(), "pg_sleep".to_owned()]
        );
    }

    #[test]
    fn the_fallback_finds_calls_in_any_spelling() {
        let denied: BTreeSet<String> = ["set_config", "readfile", "lo_*"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        let cases: &[(SqlDialect, &str, &[&str])] = &[
            (PG, "SELEC set_config('a','b',false)", &["set_config"]),
            (PG, "SELEC \"set_config\" ('a','b',false)", &["set_config"]),
            (
                PG,
                "SELEC \"pg_catalog\".\"set_config\"/* x */('a')",
                &["set_config"],
            ),
            (PG, "SELEC set_config/* /* */ ( */('a')", &["set_config"]),
            (PG, "SELEC set_config -- x\r('a')", &["set_config"]),
            (PG, "SELEC SET_CONFIG\n\t('a')", &["set_config"]),
            (PG, "SELEC lo_get(1), lo_discount FROM t", &["lo_get"]),
            (PG, "SELEC set_config FROM t", &[]),
            (LITE, "SELEC [readfile]('/etc/passwd')", &["readfile"]),
            (LITE, "SELEC `readfile` ('/etc/passwd')", &["readfile"]),
            (LITE, "SELEC readfile/* /* */('/etc/passwd')", &["readfile"]),
        ];
        for (dialect, sql, expected) in cases {
            let expected: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
            assert_eq!(
                denied_words(*dialect, sql, &denied),
                Ok(expected),
                "{sql:?}"
            );
        }
        assert!(denied_words(PG, "SELEC U&\"x\"", &denied).is_err());
    }

    #[test]
    fn leading_keywords_skip_what_the_database_skips() {
        let cases: &[(SqlDialect, &str, &str)] = &[
            (LITE, "ATTACH 'x' AS y", "ATTACH"),
            (LITE, "  /* x */ attach 'x' AS y", "ATTACH"),
            (LITE, "-- x\nATTACH 'x' AS y", "ATTACH"),
            (LITE, "/* /* */ ATTACH 'x' AS y", "ATTACH"),
            (LITE, "-- x\rATTACH 'x' AS y", ""),
            (LITE, ";; ;\nBegin", "BEGIN"),
            (PG, "/* /* */ */ SET x = 1", "SET"),
            (PG, "/* /* */ SET x = 1 */ SELECT 1", "SELECT"),
            (PG, "-- x\rSET x = 1", "SET"),
            (PG, "/* unterminated", ""),
            (PG, "(SELECT 1)", ""),
            (PG, "", ""),
            (PG, "\u{a0}\u{2003}VACUUM", "VACUUM"),
        ];
        for (dialect, sql, expected) in cases {
            assert_eq!(
                leading_keyword(*dialect, sql),
                *expected,
                "{dialect:?} {sql:?}"
            );
        }
    }

    #[test]
    fn formats_sql() {
        let cases: &[(&str, &str)] = &[
            (
                "select a, b from t where x = 1",
                "SELECT\n  a,\n  b\nFROM\n  t\nWHERE\n  x = 1",
            ),
            ("select 1; select 2;", "SELECT\n  1;\n\nSELECT\n  2"),
            ("", ""),
        ];
        for (sql, expected) in cases {
            assert_eq!(format_sql(PG, sql).as_deref(), Ok(*expected), "{sql:?}");
        }
        assert!(format_sql(PG, "select from where").is_err());
    }

    #[test]
    fn error_type_strings() {
        assert_eq!(SqlErrorKind::InvalidSql.to_string(), "INVALID_SQL_ERROR");
        assert_eq!(
            SqlErrorKind::AdhocSubqueryNotAllowed.as_str(),
            "ADHOC_SUBQUERY_NOT_ALLOWED_ERROR"
        );
        assert_eq!(SqlDialect::Postgres.engine(), "postgresql");
        assert_eq!(SqlDialect::Sqlite.engine(), "sqlite");
    }

    /// Runs every public entry point on `sql`; none may panic or overflow the stack.
    fn exercise(sql: &str) {
        for dialect in [PG, LITE] {
            for kind in [
                FragmentKind::Expression,
                FragmentKind::Where,
                FragmentKind::Having,
            ] {
                let _ = check_fragment(dialect, sql, kind);
            }
            let _ = split_statements(dialect, sql);
            let _ = is_mutating(dialect, sql);
            let _ = apply_limit(dialect, sql, 100);
            let _ = functions_called(dialect, sql);
            let _ = tables_referenced(dialect, sql);
            let _ = format_sql(dialect, sql);
        }
    }

    /// Runs `f` on a thread with a 2 MiB stack (tokio's default for workers), so the test does
    /// not depend on the test harness's stack size.
    fn on_small_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(f)
            .expect("spawn")
            .join()
            .expect("no panic");
    }

    #[test]
    fn garbage_never_panics() {
        const PIECES: &[&str] = &[
            "SELECT",
            "FROM",
            "WHERE",
            "LIMIT",
            "OFFSET",
            "UNION",
            "WITH",
            "AS",
            "CASE",
            "WHEN",
            "THEN",
            "END",
            "INTO",
            "INSERT",
            "VALUES",
            "ARRAY",
            "EXISTS",
            "NOT",
            "AND",
            "OR",
            "FETCH",
            "FIRST",
            "ROWS",
            "ONLY",
            "EXPLAIN",
            "ANALYZE",
            "PRAGMA",
            "DELETE",
            " ",
            " ",
            " ",
            "\n",
            "\r\n",
            "\t",
            "(",
            ")",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            "'",
            "\"",
            "`",
            "--",
            "/*",
            "*/",
            ";",
            ",",
            ".",
            "::",
            ":",
            "1",
            "0.5",
            "1e9",
            "x",
            "t",
            "$1",
            "$$",
            "$a$",
            "E'",
            "\\",
            "N'",
            "X'",
            "U&'",
            "+",
            "-",
            "*",
            "/",
            "%",
            "^",
            "||",
            "->",
            "->>",
            "@>",
            "!",
            "~",
            "=",
            "<>",
            "<",
            ">",
            "?",
            "@",
            "#",
            "é",
            "🙂",
            "\0",
            "18446744073709551616",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut inputs = Vec::new();
        for _ in 0..400 {
            let len = (next() % 40) as usize;
            let mut sql = String::new();
            for _ in 0..len {
                let r = next();
                if r % 7 == 0 {
                    // A raw character, occasionally outside ASCII.
                    let c = char::from_u32((r >> 8) as u32 % 0x3000).unwrap_or('?');
                    sql.push(c);
                } else {
                    sql.push_str(PIECES[(r >> 8) as usize % PIECES.len()]);
                    if r % 3 == 0 {
                        sql.push(' ');
                    }
                }
            }
            inputs.push(sql);
        }
        on_small_stack(move || {
            for sql in &inputs {
                exercise(sql);
            }
        });
    }

    #[test]
    fn deep_input_is_an_error_not_a_crash() {
        let nest = |n: usize, open: &str, inner: &str, close: &str| {
            format!("SELECT {}{inner}{}", open.repeat(n), close.repeat(n))
        };
        let mut refused = Vec::new();
        // 6 000 levels: past the chain estimate, refused before parsing.
        // 2 000 levels: under it, refused by the parser's recursion limit.
        for n in [6_000, 2_000] {
            refused.extend([
                format!("{}1{}", "(".repeat(n), ")".repeat(n)),
                nest(n, "(", "1", ")"),
                format!("SELECT * FROM {}t{}", "(".repeat(n), ")".repeat(n)),
                nest(n, "ARRAY[", "1", "]"),
                nest(n, "f(", "1", ")"),
                nest(n, "(SELECT ", "1", ")"),
                nest(n, "NOT ", "1", ""),
                nest(n, "- ", "1", ""),
                nest(n, "CASE WHEN 1 THEN ", "1", " END"),
                nest(n, "CAST(", "1", " AS int)"),
                nest(n, "EXISTS (SELECT ", "1", ")"),
                format!("SELECT x::{}INT{}", "ARRAY<".repeat(n), " >".repeat(n)),
                format!(
                    "SELECT * FROM t WHERE {}x{}",
                    "x IN (SELECT y FROM u WHERE ".repeat(n),
                    ")".repeat(n)
                ),
            ]);
        }
        let n = 6_000;
        refused.extend([
            format!("SELECT 1{}", "+1".repeat(n)),
            format!("SELECT x{}", "::int".repeat(n)),
            format!("SELECT x::int{}", "[]".repeat(n / BRACKET_WEIGHT * 2)),
            format!("SELECT x{}", "[1]".repeat(n / BRACKET_WEIGHT * 2)),
            format!("SELECT 1 WHERE a{}", " AND a".repeat(n)),
            format!(
                "SELECT 1, 2{}",
                " UNION SELECT 1, 2".repeat(MAX_SET_OPERATIONS + 1)
            ),
            format!("{}1", "1=1 OR ".repeat(n)),
            format!("SELECT x{}", " IS NULL".repeat(n)),
            format!("SELECT x{}", "->'a'".repeat(n)),
        ]);
        on_small_stack(move || {
            for sql in &refused {
                let prefix: String = sql.chars().take(40).collect();
                for dialect in [PG, LITE] {
                    let err = split_statements(dialect, sql).expect_err(&prefix);
                    assert_eq!(err.kind(), SqlErrorKind::InvalidSql);
                    assert!(
                        err.message().starts_with("Error parsing"),
                        "{}",
                        err.message()
                    );
                }
                assert!(
                    check_fragment(PG, sql, FragmentKind::Expression).is_err(),
                    "{prefix}"
                );
                assert!(
                    check_fragment(PG, sql, FragmentKind::Where).is_err(),
                    "{prefix}"
                );
                exercise(sql);
            }
        });
        let err = split_statements(PG, &format!("SELECT 1{}", "+1".repeat(6_000))).unwrap_err();
        assert!(err.message().contains("too complex"), "{}", err.message());
        let err = split_statements(
            PG,
            &format!("SELECT {}1{}", "(".repeat(300), ")".repeat(300)),
        )
        .unwrap_err();
        assert_eq!(err.message(), "Error parsing: the SQL is nested too deeply");
    }

    /// Nesting of `ARRAY<…>` the recursion limit still accepts (asserted below).
    const DEEPEST_ARRAY_TYPE: usize = 120;

    #[test]
    fn array_type_nesting_is_bounded_by_the_recursion_limit() {
        let nested = |n: usize| format!("SELECT x::{}INT{}", "ARRAY<".repeat(n), " >".repeat(n));
        assert!(split_statements(PG, &nested(DEEPEST_ARRAY_TYPE)).is_ok());
        assert!(split_statements(PG, &nested(RECURSION_LIMIT + 1)).is_err());
    }

    #[test]
    fn large_but_flat_input_is_fine() {
        let cases: Vec<(String, usize)> = vec![
            // Long comma-separated lists: siblings, nothing deep.
            (
                format!("SELECT * FROM t WHERE x IN ({}0)", "1, ".repeat(10_000)),
                1,
            ),
            (
                format!("INSERT INTO t VALUES {}(0)", "(1, 'a'), ".repeat(3_000)),
                1,
            ),
            (format!("SELECT {}0", "a + b, ".repeat(3_000)), 1),
            ("SELECT 1;".repeat(1_000), 1_000),
            // Chains just under the limits, built as deep as the guard lets through.
            (format!("SELECT 1{}", "+1".repeat(MAX_CHAIN - 10)), 1),
            (
                format!(
                    "SELECT x::int{}",
                    "[]".repeat(MAX_CHAIN / BRACKET_WEIGHT - 2)
                ),
                1,
            ),
            (
                format!("SELECT x{}", "[1]".repeat(MAX_CHAIN / BRACKET_WEIGHT - 2)),
                1,
            ),
            (format!("SELECT x{}", "::int".repeat(MAX_CHAIN / 2 - 10)), 1),
            (
                format!("SELECT 1 WHERE a{}", " AND a".repeat(MAX_CHAIN - 10)),
                1,
            ),
            (
                format!("SELECT 1{}", " UNION SELECT 1".repeat(MAX_SET_OPERATIONS)),
                1,
            ),
            (
                format!("SELECT CASE{} END", " WHEN a = 1 THEN 'b'".repeat(1_500)),
                1,
            ),
            (format!("SELECT {}1{}", "(".repeat(60), ")".repeat(60)), 1),
            // The deepest array type both limits let through, printed by format_sql and by
            // apply_limit's re-rendering (`OFFSET` forces it).
            (
                format!(
                    "SELECT x::{}INT{}{} FROM t OFFSET 1",
                    "ARRAY<".repeat(DEEPEST_ARRAY_TYPE),
                    " >".repeat(DEEPEST_ARRAY_TYPE),
                    // ARRAY, <, > count 3 per level; the brackets take the rest of the budget.
                    "[]".repeat((MAX_CHAIN - 3 * DEEPEST_ARRAY_TYPE - 20) / BRACKET_WEIGHT)
                ),
                1,
            ),
        ];
        on_small_stack(move || {
            for (sql, count) in &cases {
                let prefix: String = sql.chars().take(30).collect();
                let statements = split_statements(PG, sql)
                    .unwrap_or_else(|e| panic!("{prefix}: {}", e.message()));
                assert_eq!(statements.len(), *count, "{prefix}");
                assert!(is_mutating(PG, sql).is_ok());
                assert!(format_sql(PG, sql).is_ok());
                assert!(apply_limit(PG, sql, 10).is_ok());
            }
        });
    }

    #[test]
    fn nested_subqueries_within_recursion_limit() {
        let depth = 30;
        let sql = format!(
            "SELECT * FROM {}golden.sales{}",
            "(SELECT * FROM ".repeat(depth),
            ") s".repeat(depth)
        );
        assert_eq!(tables_referenced(PG, &sql), Ok(set(&["golden.sales"])));
        let fragment = format!("{}x{}", "COALESCE(".repeat(40), ", 0)".repeat(40));
        assert_eq!(
            check_fragment(PG, &fragment, FragmentKind::Expression),
            Ok(())
        );
    }

    const MY: SqlDialect = SqlDialect::MySql;

    fn my_denied() -> BTreeSet<String> {
        ["load_file", "sleep", "benchmark", "get_lock", "sys_exec"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    #[test]
    fn mysql_executable_comments_and_hints_are_refused() {
        for sql in [
            "SELECT 1 /*! , LOAD_FILE('/etc/passwd') */",
            "SELECT 1 /*!50000 INTO OUTFILE '/tmp/x' */",
            "SELECT 1 /*M! ; DROP TABLE t */",
            "SELECT 1 /*M!100000 , SLEEP(10) */",
            "SELECT /*+ MAX_EXECUTION_TIME(99999999) */ 1",
            "SELECT /*+ SET_VAR(sql_mode='ANSI_QUOTES') */ 1",
            "/*!SELECT*/ 1",
            "SELECT 1 FROM t WHERE a = 1 /*!OR 1=1*/",
        ] {
            let err = split_statements(MY, sql).expect_err(sql);
            assert!(
                err.message().contains("executable comments"),
                "{sql}: {}",
                err.message()
            );
            assert!(is_mutating(MY, sql).is_err(), "{sql}");
            assert!(functions_called(MY, sql).is_err(), "{sql}");
            assert!(denied_words(MY, sql, &my_denied()).is_err(), "{sql}");
        }
        for fragment in [
            "SUM(x) /*! , LOAD_FILE('/etc/passwd') */",
            "1 /*!50000 ) UNION SELECT LOAD_FILE('/etc/passwd') -- */",
            "COUNT(*) /*M!*/",
            "/*+ BKA(t) */ 1",
        ] {
            assert!(
                check_fragment(MY, fragment, FragmentKind::Expression).is_err(),
                "{fragment}"
            );
            assert!(
                check_fragment(MY, fragment, FragmentKind::Where).is_err(),
                "{fragment}"
            );
        }
        // Plain comments stay allowed.
        assert_eq!(
            split_statements(MY, "SELECT 1 /* note */ -- x\n# y").map(|s| s.len()),
            Ok(1)
        );
        assert_eq!(
            check_fragment(MY, "SUM(x) /* total */", FragmentKind::Expression),
            Ok(())
        );
    }

    #[test]
    fn mysql_comment_spellings_match_the_server() {
        // `--` without a space is not a comment to MySQL: `1 --1` is `1 - -1`.
        assert_eq!(
            functions_called(MY, "SELECT 1 --1, LOAD_FILE('/x')").map(|f| f.contains("load_file")),
            Ok(true)
        );
        // sqlparser would take Unicode whitespace after `--` as a comment; MySQL does not.
        for sql in [
            "SELECT 1 --\u{a0}x, LOAD_FILE('/etc/passwd')\nFROM (SELECT 1 AS `\u{a0}x`) s",
            "SELECT 1 --\u{2003}1, SLEEP(10)",
        ] {
            assert!(split_statements(MY, sql).is_err(), "{sql:?}");
            assert!(
                check_fragment(MY, &sql[7..], FragmentKind::Expression).is_err(),
                "{sql:?}"
            );
        }
        assert!(split_statements(MY, "SELECT\u{a0}1").is_err());
        // `#` comments: what follows on the line is not code, the next line is.
        let called =
            functions_called(MY, "SELECT a # LOAD_FILE('/x')\n, SLEEP(1) FROM t").expect("parses");
        assert!(called.contains("sleep"), "{called:?}");
        assert!(!called.contains("load_file"), "{called:?}");
        assert_eq!(
            denied_words(MY, "SELECT a # x\n, load_file # y\n ('/x')", &my_denied()),
            Ok(vec!["load_file".to_owned()])
        );
        assert_eq!(
            leading_keyword(MY, "# c\n-- c\n/* c */ DELETE FROM t"),
            "DELETE"
        );
        assert_eq!(leading_keyword(MY, "/*! DELETE FROM t */"), "");
        assert_eq!(leading_keyword(MY, "--x\nDELETE FROM t"), "");
    }

    #[test]
    fn mysql_backslash_escapes_in_literals() {
        // `'\\''` is a backslash then the end of the string in MySQL: what follows is code.
        for (sql, hidden) in [
            ("SELECT 'a\\'', LOAD_FILE('/etc/passwd') -- '", "load_file"),
            ("SELECT \"a\\\"\", SLEEP(10) -- \"", "sleep"),
            ("SELECT 'it\\'s', BENCHMARK(1, 1)", "benchmark"),
        ] {
            let called =
                functions_called(MY, sql).unwrap_or_else(|e| panic!("{sql}: {}", e.message()));
            assert!(called.contains(hidden), "{sql}: {called:?}");
            assert!(
                !denied_words(MY, sql, &my_denied())
                    .expect("words")
                    .is_empty(),
                "{sql}"
            );
        }
        // And a fragment cannot close the caller's literal or parenthesis with one.
        for fragment in [
            "name = 'x\\') OR (1=1",
            "name = 'x\\'' OR SLEEP(5) OR '",
            "name = \"x\\\") OR (\"1\"=\"1\"",
        ] {
            let ok = check_fragment(MY, fragment, FragmentKind::Where);
            if ok.is_ok() {
                // Accepted only as one expression, whose functions the deny-list still sees.
                let wrapped = format!("SELECT * FROM t WHERE ({fragment}\n)");
                assert_eq!(
                    split_statements(MY, &wrapped).map(|s| s.len()),
                    Ok(1),
                    "{fragment}"
                );
            }
        }
        assert!(check_fragment(MY, "name = 'x\\') OR (1=1", FragmentKind::Where).is_err());
    }

    #[test]
    fn mysql_writes_and_file_access_are_mutating_or_refused() {
        for sql in [
            "SELECT * FROM t INTO OUTFILE '/tmp/x'",
            "SELECT * INTO OUTFILE '/tmp/x' FROM t",
            "SELECT 'x' INTO DUMPFILE '/tmp/x'",
            "SELECT a INTO @v FROM t",
            "LOAD DATA INFILE '/etc/passwd' INTO TABLE t",
            "load data local infile '/etc/passwd' into table t",
            "HANDLER t OPEN",
            "LOCK TABLES t READ",
            "SET @a = 1",
            "SET SESSION sql_mode = 'ANSI_QUOTES'",
            "CALL p()",
            "DO SLEEP(1)",
            "INSERT INTO t VALUES (1)",
            "REPLACE INTO t VALUES (1)",
            "DELETE FROM t RETURNING a",
            "CREATE TEMPORARY TABLE x (a INT)",
            "RENAME TABLE a TO b",
            "TRUNCATE t",
            "GRANT ALL ON *.* TO x",
            "KILL 1",
            "FLUSH TABLES",
            "INSTALL PLUGIN x SONAME 'y.so'",
        ] {
            assert_ne!(is_mutating(MY, sql), Ok(false), "{sql}");
        }
        for sql in [
            "SELECT `a``b`, \"str\" FROM `db`.`t` WHERE x = 'it''s'",
            "SHOW TABLES",
            "SELECT 1",
        ] {
            assert_eq!(is_mutating(MY, sql), Ok(false), "{sql}");
        }
        for sql in [
            "SELECT LOAD_FILE('/etc/passwd')",
            "SELECT load_file ('/etc/passwd')",
            "SELECT `load_file`('/etc/passwd')",
            "SELECT LoAd_FiLe(0x2f6574632f706173737764)",
            "SELECT a FROM t WHERE SLEEP(1) = 0",
            "SELECT GET_LOCK('x', 10)",
            "SELECT sys_exec('id')",
            "SELECT BENCHMARK(100000000, MD5('x'))",
        ] {
            let words = denied_words(MY, sql, &my_denied()).expect(sql);
            let called = functions_called(MY, sql).expect(sql);
            assert!(
                !words.is_empty() && called.iter().any(|f| my_denied().contains(f)),
                "{sql}: {words:?} {called:?}"
            );
        }
        assert_eq!(
            split_statements(MY, "SELECT 1; SELECT 2").map(|s| s.len()),
            Ok(2)
        );
        assert_eq!(
            split_statements(MY, "SELECT ';'; # ;\nSELECT 2").map(|s| s.len()),
            Ok(2)
        );
        assert_eq!(
            split_statements(MY, "SELECT 'a\\';b'").map(|s| s.len()),
            Ok(1)
        );
    }

    const CH: SqlDialect = SqlDialect::ClickHouse;

    fn ch_refused() -> BTreeSet<String> {
        [
            "url",
            "file",
            "remote",
            "s3",
            "mysql",
            "executable",
            "input",
            "merge",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    }

    /// The name a check sees must be the one ClickHouse calls, however the table function is
    /// spelled or wherever it hides.
    #[test]
    fn clickhouse_table_functions_are_reported() {
        let cases = [
            ("SELECT * FROM url('http://x/', CSV, 'a String')", "url"),
            ("SELECT * FROM URL('http://x/', CSV, 'a String')", "url"),
            ("SELECT * FROM `url`('http://x/', CSV, 'a String')", "url"),
            ("SELECT * FROM \"url\"('http://x/', CSV, 'a String')", "url"),
            ("SELECT * FROM url ('http://x/', CSV, 'a String')", "url"),
            (
                "SELECT * FROM url /* c */ ('http://x/', CSV, 'a String')",
                "url",
            ),
            (
                "SELECT * FROM url -- c\n ('http://x/', CSV, 'a String')",
                "url",
            ),
            (
                "SELECT * FROM default.url('http://x/', CSV, 'a String')",
                "url",
            ),
            (
                "SELECT * FROM (SELECT * FROM file('/etc/passwd', CSV, 'a String'))",
                "file",
            ),
            (
                "SELECT a FROM t WHERE a IN (SELECT a FROM remote('h:9000', db.t))",
                "remote",
            ),
            (
                "SELECT * FROM t JOIN s3('http://b/k', 'CSV') AS x ON t.a = x.a",
                "s3",
            ),
            (
                "SELECT * FROM t LEFT JOIN mysql('h', 'd', 't', 'u', 'p') AS m ON t.a = m.a",
                "mysql",
            ),
            (
                "WITH x AS (SELECT * FROM executable('ls', TSV, 'a String')) SELECT * FROM x",
                "executable",
            ),
            ("SELECT * FROM input('a String')", "input"),
            ("SELECT * FROM merge(currentDatabase(), '^t')", "merge"),
            (
                "SELECT (SELECT count() FROM url('http://x/', CSV, 'a String'))",
                "url",
            ),
            (
                "SELECT * FROM t UNION ALL SELECT * FROM url('http://x/', CSV, 'a String')",
                "url",
            ),
        ];
        for (sql, name) in cases {
            let called = functions_called(CH, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert!(called.contains(name), "{sql}: {called:?}");
            assert_eq!(
                disallowed(called, &ch_refused()),
                vec![name.to_owned()],
                "{sql}"
            );
        }
    }

    /// Text ClickHouse and sqlparser would read differently is refused before any check.
    #[test]
    fn clickhouse_lexer_ambiguities_are_refused() {
        for sql in [
            // ClickHouse: one identifier `a" AS b, ` then a call and a comment.
            "SELECT \"a\\\" AS b, \" , url('http://x/', CSV, 'a String') -- \"",
            "SELECT `a\\` AS b, ` , url('http://x/', CSV, 'a String') -- `",
            // 18.16 does not nest block comments: the call is code there.
            "SELECT 1 /* /* */ , url('http://x/', CSV, 'a String') -- */",
        ] {
            assert!(functions_called(CH, sql).is_err(), "{sql}");
            assert!(split_statements(CH, sql).is_err(), "{sql}");
            // The fallback check over the raw text still finds the call.
            assert_eq!(
                denied_words(CH, sql, &ch_refused()).expect("words"),
                vec!["url".to_owned()],
                "{sql}"
            );
        }
        // Unterminated under nesting, a call under 18.16's reading.
        let sql = "SELECT 1 /* /* */ , url /* */ ('http://x/', CSV, 'a String')";
        assert_eq!(
            denied_words(CH, sql, &ch_refused()).expect("w"),
            vec!["url".to_owned()]
        );
        // `#` starts a comment in current ClickHouse.
        let sql = "SELECT * FROM url # c\n ('http://x/', CSV, 'a String')";
        assert_eq!(
            denied_words(CH, sql, &ch_refused()).expect("w"),
            vec!["url".to_owned()]
        );
        // Backslash escapes in string literals are read as ClickHouse reads them.
        let sql = "SELECT 'it\\'s', url('http://x/', CSV, 'a String')";
        assert!(functions_called(CH, sql).expect("parse").contains("url"));
        let sql = "SELECT 'a\\\\', 'b'";
        assert_eq!(split_statements(CH, sql).expect("parse").len(), 1);
        // Doubled quotes inside identifiers agree in both.
        assert!(functions_called(CH, "SELECT \"a\"\"b\" FROM t").is_ok());
    }

    #[test]
    fn clickhouse_statements_are_classified() {
        // sqlparser reads SETTINGS after a FROM only; either way it is not a write.
        assert!(!is_mutating(CH, "SELECT a FROM t SETTINGS max_threads = 1").unwrap_or(false));
        for sql in [
            "INSERT INTO t VALUES (1)",
            "ALTER TABLE t DELETE WHERE 1",
            "DROP TABLE t",
            "TRUNCATE TABLE t",
            "OPTIMIZE TABLE t",
            "CREATE TABLE x ENGINE = Memory AS SELECT 1",
        ] {
            assert!(is_mutating(CH, sql).unwrap_or(true), "{sql}");
        }
        assert_eq!(
            split_statements(CH, "SELECT 1; SELECT 2").expect("p").len(),
            2
        );
        assert!(
            check_fragment(CH, "1) OR (1", FragmentKind::Where).is_err(),
            "a fragment cannot leave its parentheses"
        );
        assert!(
            check_fragment(CH, "sum(x) SETTINGS readonly = 0", FragmentKind::Expression).is_err()
        );
        assert!(check_fragment(CH, "x = 1 FORMAT JSON", FragmentKind::Where).is_err());
        assert_eq!(
            functions_called(CH, "SELECT sum(x) FROM t").expect("p"),
            set(&["sum"])
        );
    }
}
