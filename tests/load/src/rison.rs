//! The few rison `q` arguments of FAB's list API the harness sends, and their URL encoding.

/// A rison string: bare when it is a valid rison id, else quoted (`'` → `!'`, `!` → `!!`).
pub fn string(s: &str) -> String {
    const NOT_ID: &str = " '!:(),*@$";
    let bare = !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit() || c == '-')
        && !s.chars().any(|c| NOT_ID.contains(c));
    if bare {
        s.to_owned()
    } else {
        let escaped = s.replace('!', "!!").replace('\'', "!'");
        format!("'{escaped}'")
    }
}

/// `(filters:!((col:<col>,opr:<opr>,value:<value>)),page:<page>,page_size:<size>)`; no filter
/// when `filter` is `None`. Page 0 is left out (FAB's default).
pub fn list_query(filter: Option<(&str, &str, &str)>, page: u32, page_size: u32) -> String {
    let mut parts = Vec::new();
    if let Some((col, opr, value)) = filter {
        parts.push(format!(
            "filters:!((col:{},opr:{},value:{}))",
            string(col),
            string(opr),
            string(value)
        ));
    }
    if page > 0 {
        parts.push(format!("page:{page}"));
    }
    parts.push(format!("page_size:{page_size}"));
    format!("({})", parts.join(","))
}

/// The dashboards whose slug starts with `prefix` (all dashboards for an empty prefix).
pub fn dashboards_query(prefix: &str, page: u32) -> String {
    let filter = (!prefix.is_empty()).then_some(("slug", "sw", prefix));
    list_query(filter, page, 100)
}

/// The charts whose name starts with `prefix`.
pub fn charts_query(prefix: &str, page: u32) -> String {
    list_query(Some(("slice_name", "sw", prefix)), page, 100)
}

/// The database named `name`.
pub fn database_query(name: &str) -> String {
    format!(
        "(filters:!((col:database_name,opr:eq,value:{})))",
        string(name)
    )
}

/// Percent-encodes everything but RFC 3986's unreserved characters, so a rison value survives
/// any server's query-string decoding (no `+` for space).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rison_strings() {
        assert_eq!(string("ssb-"), "ssb-");
        assert_eq!(string("ssb"), "ssb");
        assert_eq!(string("Sleep "), "'Sleep '");
        assert_eq!(string(""), "''");
        assert_eq!(string("1abc"), "'1abc'");
        assert_eq!(string("-x"), "'-x'");
        assert_eq!(string("it's!"), "'it!'s!!'");
        assert_eq!(string("a:b"), "'a:b'");
    }

    #[test]
    fn list_queries() {
        assert_eq!(
            dashboards_query("ssb-", 0),
            "(filters:!((col:slug,opr:sw,value:ssb-)),page_size:100)"
        );
        assert_eq!(dashboards_query("", 0), "(page_size:100)");
        assert_eq!(
            dashboards_query("ssb-", 2),
            "(filters:!((col:slug,opr:sw,value:ssb-)),page:2,page_size:100)"
        );
        assert_eq!(
            charts_query("Sleep ", 0),
            "(filters:!((col:slice_name,opr:sw,value:'Sleep ')),page_size:100)"
        );
        assert_eq!(
            database_query("ssb"),
            "(filters:!((col:database_name,opr:eq,value:ssb)))"
        );
    }

    #[test]
    fn url_encoding() {
        assert_eq!(encode("(page_size:100)"), "%28page_size%3A100%29");
        assert_eq!(encode("'Sleep '"), "%27Sleep%20%27");
        assert_eq!(encode("a-b_c.d~"), "a-b_c.d~");
    }
}
