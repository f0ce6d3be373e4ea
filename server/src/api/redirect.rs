//! Redirect targets taken from a request (`next`), reduced to a path on this site.
//!
//! A browser reads a `Location` through the WHATWG URL parser, which forgives a lot: it strips
//! leading and trailing C0 controls and spaces, drops every tab and newline, and reads `\` as
//! `/`. So `/\t/evil.com`, `/\evil.com` and ` //evil.com` all leave the site. The check here
//! applies the same normalisation first, also to the target as it reads after the percent-
//! decoding servers do (a `%2F%2Fevil.com` or a double-encoded tab), requires exactly one
//! leading `/`, and emits the target re-serialised by the `url` crate from a parse against a
//! placeholder origin (whose origin must not change), so what leaves is a plain, encoded
//! path, query and fragment. Anything else becomes `/`, as Superset does with an unsafe
//! `next` (`is_safe_redirect_url`), absolute URLs to this host included: the `Host` header is
//! the client's word, not ours.

use percent_encoding::percent_decode_str;
use url::Url;

/// Parses relative targets; never contacted, never emitted.
const PLACEHOLDER: &str = "http://this.invalid/";

/// How many rounds of percent-decoding a target must survive.
const DECODE_ROUNDS: usize = 3;

/// `next` when it is a path on this site, re-serialised; else `/`.
pub fn safe_next(next: Option<&str>) -> String {
    next.and_then(local_path).unwrap_or_else(|| "/".to_owned())
}

fn local_path(raw: &str) -> Option<String> {
    let target = as_browser_reads(raw);
    if !single_leading_slash(&target) {
        return None;
    }
    let base = Url::parse(PLACEHOLDER).ok()?;
    let url = base.join(&target).ok()?;
    if url.origin() != base.origin() {
        return None;
    }
    let mut out = url.path().to_owned();
    if let Some(q) = url.query() {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = url.fragment() {
        out.push('#');
        out.push_str(f);
    }
    // Checked as emitted (dot segments resolve: `/.//evil.com` has become `//evil.com`) and
    // as it reads after each round of percent-decoding.
    let mut decoded = out.clone();
    for _ in 0..DECODE_ROUNDS {
        if !single_leading_slash(&decoded) {
            return None;
        }
        let once = as_browser_reads(&percent_decode_str(&decoded).decode_utf8_lossy());
        if once == decoded {
            break;
        }
        decoded = once;
    }
    single_leading_slash(&decoded).then_some(out)
}

/// The WHATWG URL parser's forgiveness: C0 controls and spaces trimmed at both ends, ASCII
/// tab and newlines removed everywhere, `\` read as `/` (as in every http(s) URL).
fn as_browser_reads(s: &str) -> String {
    s.trim_matches(|c: char| c <= '\u{20}')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .map(|c| if c == '\\' { '/' } else { c })
        .collect()
}

/// `/` alone or `/` followed by anything but another slash: a path, not `//host`.
fn single_leading_slash(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next() == Some('/') && !matches!(chars.next(), Some('/' | '\\'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_are_kept() {
        for (given, kept) in [
            ("/", "/"),
            ("/dashboard/list/", "/dashboard/list/"),
            (
                "/superset/dashboard/1/?a=1&b=2#x",
                "/superset/dashboard/1/?a=1&b=2#x",
            ),
            ("/sqllab/?q=%2F%2Fx", "/sqllab/?q=%2F%2Fx"),
            ("/a b", "/a%20b"),
            ("/é", "/%C3%A9"),
            ("/https:evil.com", "/https:evil.com"),
        ] {
            assert_eq!(safe_next(Some(given)), kept, "{given:?}");
        }
    }

    #[test]
    fn every_spelling_of_another_site_becomes_root() {
        for bad in [
            "//evil.com",
            "///evil.com",
            "/\\evil.com",
            "\\/evil.com",
            "\\\\evil.com",
            "/\t/evil.com",
            "/\n/evil.com",
            "/\r\n/evil.com",
            "\t//evil.com",
            " //evil.com",
            "\u{0}//evil.com",
            "\u{1f}/\\evil.com",
            "/%2F/evil.com",
            "%2F%2Fevil.com",
            "/%5Cevil.com",
            "/%09/evil.com",
            "/%252F/evil.com",
            "/./%2F/evil.com",
            "/.//evil.com",
            "/..//evil.com",
            "https:evil.com",
            "https://evil.com",
            "http://127.0.0.1.evil.com",
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "data:text/html,x",
            "evil.com",
            "\u{ff0f}\u{ff0f}evil.com",
            "",
        ] {
            assert_eq!(safe_next(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/");
    }

    #[test]
    fn output_carries_no_header_breaking_bytes() {
        let out = safe_next(Some("/a\u{0}b\u{7f}c\"<>'`{}"));
        assert!(out.bytes().all(|b| b.is_ascii_graphic()), "{out}");
    }
}
