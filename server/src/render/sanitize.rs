//! SVG from plugins is untrusted: it reaches browsers (opened directly, or inlined by a
//! client). This module parses it with a real XML parser (roxmltree, namespaces resolved, no
//! DTD) and writes a new document from an allowlist:
//!
//! - elements: static shapes, text, gradients, clip paths, masks, patterns, markers, `style`
//!   and `image` (data URLs of raster images only); anything else is dropped with its subtree
//!   (`script`, `foreignObject`, `iframe`, animation elements that could rewrite attributes,
//!   `use` whose fan-out can multiply a document exponentially, filters whose cost is
//!   unbounded). `a` becomes a plain `g` (no navigation).
//! - attributes: no event handlers (`on*`), no `href` but a same-document `#fragment` (or a
//!   raster `data:image/...` on `image`), no `url(...)` but `url(#fragment)`, nothing in a
//!   foreign namespace.
//! - `<style>` text with `@import`, an external `url(...)`, `expression(` or `javascript:` is
//!   dropped.
//!
//! Element and attribute names are written from the parsed document (valid XML names) and
//! every value is escaped again, so nothing the plugin wrote is echoed raw. The root's
//! `width`/`height` become the requested size (its own size moves into `viewBox`), which caps
//! the size a client or the rasteriser is asked to draw.

use std::fmt::Write as _;

use roxmltree::{Document, Node, NodeType, ParsingOptions};

/// The SVG namespace.
const SVG_NS: &str = "http://www.w3.org/2000/svg";
/// The XLink namespace (`xlink:href`).
const XLINK_NS: &str = "http://www.w3.org/1999/xlink";
/// The XML namespace (`xml:space`, `xml:lang`).
const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// Most nodes a document may have.
const MAX_NODES: u32 = 200_000;
/// Deepest element nesting kept (deeper subtrees are dropped): the rasteriser recurses.
const MAX_DEPTH: usize = 128;

/// Elements kept (SVG namespace, local names).
const ALLOWED: &[&str] = &[
    "svg",
    "g",
    "defs",
    "symbol",
    "title",
    "desc",
    "path",
    "rect",
    "circle",
    "ellipse",
    "line",
    "polyline",
    "polygon",
    "text",
    "tspan",
    "textPath",
    "linearGradient",
    "radialGradient",
    "stop",
    "clipPath",
    "mask",
    "pattern",
    "marker",
    "image",
    "style",
];

/// Elements whose `href` may point at a same-document fragment.
const FRAGMENT_HREF: &[&str] = &["linearGradient", "radialGradient", "textPath"];

/// Why a document was refused as a whole.
#[derive(Debug, thiserror::Error)]
pub enum SanitizeError {
    /// Not well-formed XML, a DTD, or too many nodes.
    #[error("the SVG is not well-formed XML: {0}")]
    Parse(String),
    /// The root is not an SVG `svg` element.
    #[error("the document's root is not an SVG <svg> element")]
    NotSvg,
}

/// Sanitises `svg` and sizes its root to `width` × `height`.
pub fn sanitize(svg: &str, width: u32, height: u32) -> Result<String, SanitizeError> {
    let options = ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_NODES,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(svg, options)
        .map_err(|e| SanitizeError::Parse(e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().namespace() != Some(SVG_NS) || root.tag_name().name() != "svg" {
        return Err(SanitizeError::NotSvg);
    }
    let mut out = String::with_capacity(svg.len());
    write_element(&mut out, root, 0, Some((width, height)));
    Ok(out)
}

fn escape_into(out: &mut String, s: &str, attr: bool) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attr => out.push_str("&quot;"),
            '\n' if attr => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attr => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
}

/// Whether every `url(...)` in `value` names a same-document fragment.
fn urls_are_local(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let mut rest = lower.as_str();
    while let Some(at) = rest.find("url(") {
        let inner = rest[at + 4..].trim_start();
        let inner = inner.trim_start_matches(['"', '\'']).trim_start();
        if !inner.starts_with('#') {
            return false;
        }
        rest = &rest[at + 4..];
    }
    true
}

/// CSS (a `style` attribute or element) that cannot load or run anything.
fn css_is_safe(css: &str) -> bool {
    let lower: String = css
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '\\')
        .flat_map(char::to_lowercase)
        .collect();
    !lower.contains("@import")
        && !lower.contains("expression(")
        && !lower.contains("javascript:")
        && !lower.contains("behavior:")
        && !lower.contains("-moz-binding")
        && urls_are_local(css)
}

/// A raster image embedded as a data URL.
fn is_raster_data_url(v: &str) -> bool {
    let v = v.trim().to_ascii_lowercase();
    ["png", "jpeg", "jpg", "gif", "webp"]
        .iter()
        .any(|t| v.starts_with(&format!("data:image/{t};base64,")))
}

/// The attribute as written in the output, or `None` to drop it.
fn keep_attribute(element: &str, attr: &roxmltree::Attribute) -> Option<String> {
    let value = attr.value();
    let lname = attr.name();
    match attr.namespace() {
        None => {}
        Some(XLINK_NS) if lname == "href" => {
            return keep_href(element, value).then(|| "xlink:href".to_owned());
        }
        Some(XML_NS) if lname == "space" || lname == "lang" => {
            return Some(format!("xml:{lname}"));
        }
        Some(_) => return None,
    }
    let lower = lname.to_ascii_lowercase();
    if lower.starts_with("on") || lower.starts_with("xmlns") {
        return None;
    }
    if lower == "href" {
        return keep_href(element, value).then(|| lname.to_owned());
    }
    let compact: String = value
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    if compact.contains("javascript:") || compact.contains("vbscript:") {
        return None;
    }
    if lower == "style" {
        return css_is_safe(value).then(|| lname.to_owned());
    }
    if !urls_are_local(value) {
        return None;
    }
    Some(lname.to_owned())
}

fn keep_href(element: &str, value: &str) -> bool {
    let v = value.trim();
    if element == "image" {
        return is_raster_data_url(v);
    }
    FRAGMENT_HREF.contains(&element) && v.starts_with('#') && !v.contains(['(', ')', ' '])
}

fn write_element(out: &mut String, node: Node, depth: usize, size: Option<(u32, u32)>) {
    let tag = node.tag_name();
    let mut name = tag.name();
    if depth > MAX_DEPTH || tag.namespace() != Some(SVG_NS) {
        return;
    }
    if name == "a" {
        name = "g";
    } else if !ALLOWED.contains(&name) {
        return;
    }
    if name == "style" {
        let css: String = node
            .children()
            .filter_map(|c| c.text())
            .collect::<Vec<_>>()
            .concat();
        if css_is_safe(&css) {
            out.push_str("<style>");
            escape_into(out, &css, false);
            out.push_str("</style>");
        }
        return;
    }
    out.push('<');
    out.push_str(name);
    if let Some((w, h)) = size {
        out.push_str(&format!(
            " xmlns=\"{SVG_NS}\" xmlns:xlink=\"{XLINK_NS}\" width=\"{w}\" height=\"{h}\""
        ));
        let own = |a: &str| {
            node.attribute(a)
                .and_then(|v| v.trim().trim_end_matches("px").parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v > 0.0)
        };
        if node.attribute("viewBox").is_none() {
            let (vw, vh) = (own("width"), own("height"));
            let _ = write!(
                out,
                " viewBox=\"0 0 {} {}\"",
                vw.unwrap_or(f64::from(w)),
                vh.unwrap_or(f64::from(h))
            );
        }
    }
    for attr in node.attributes() {
        if size.is_some()
            && attr.namespace().is_none()
            && ["width", "height"].contains(&attr.name())
        {
            continue;
        }
        if let Some(written) = keep_attribute(name, &attr) {
            out.push(' ');
            out.push_str(&written);
            out.push_str("=\"");
            escape_into(out, attr.value(), true);
            out.push('"');
        }
    }
    let mut children = node.children().peekable();
    if children.peek().is_none() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    for child in children {
        match child.node_type() {
            NodeType::Element => write_element(out, child, depth + 1, None),
            NodeType::Text => escape_into(out, child.text().unwrap_or_default(), false),
            // Comments and processing instructions carry nothing a chart needs.
            _ => {}
        }
    }
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(svg: &str) -> String {
        sanitize(svg, 400, 300).expect("sanitised")
    }

    const OPEN: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="800" height="600">"#;

    #[test]
    fn removes_scripts_handlers_and_foreign_objects() {
        let out = clean(&format!(
            r#"{OPEN}<script>alert(1)</script><g onload="alert(2)" ONCLICK="x"><rect width="5" height="5" fill="red"/></g>
            <foreignObject><div xmlns="http://www.w3.org/1999/xhtml">hi</div></foreignObject>
            <script xlink:href="https://evil.example/x.js"/></svg>"#
        ));
        assert!(!out.contains("script"), "{out}");
        assert!(!out.to_lowercase().contains("onload"), "{out}");
        assert!(!out.to_lowercase().contains("onclick"), "{out}");
        assert!(
            !out.contains("foreignObject") && !out.contains("div"),
            "{out}"
        );
        assert!(
            out.contains(r#"<rect width="5" height="5" fill="red"/>"#),
            "{out}"
        );
    }

    #[test]
    fn external_references_are_dropped_fragments_kept() {
        let out = clean(&format!(
            r##"{OPEN}<defs><linearGradient id="g1"><stop offset="0"/></linearGradient>
            <linearGradient id="g2" xlink:href="#g1"/><linearGradient id="g3" href="https://x/y#a"/></defs>
            <rect fill="url(#g1)" width="1" height="1"/><rect fill="url(https://evil/x.svg#a)" width="1" height="1"/>
            <rect style="fill:url('http://evil/')" width="2" height="2"/><rect style="fill:red" width="3" height="3"/>
            <image xlink:href="file:///etc/passwd"/><image href="data:image/png;base64,AAAA"/>
            <a xlink:href="javascript:alert(1)"><text>x</text></a></svg>"##
        ));
        assert!(out.contains(r##"xlink:href="#g1""##), "{out}");
        assert!(!out.contains("https://"), "{out}");
        assert!(!out.contains("http://evil"), "{out}");
        assert!(out.contains(r#"fill="url(#g1)""#), "{out}");
        assert!(out.contains(r#"style="fill:red""#), "{out}");
        assert!(!out.contains("file:"), "{out}");
        assert!(out.contains("data:image/png;base64,AAAA"), "{out}");
        assert!(!out.contains("javascript"), "{out}");
        assert!(out.contains("<g><text>x</text></g>"), "{out}");
    }

    #[test]
    fn other_namespace_prefixes_cannot_smuggle_links() {
        let out = clean(
            r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/1999/xlink" xmlns:h="http://www.w3.org/1999/xhtml">
            <image x:href="https://evil/a.png"/><h:script>alert(1)</h:script><svg:script xmlns:svg="http://www.w3.org/2000/svg">1</svg:script></svg>"#,
        );
        assert!(!out.contains("evil"), "{out}");
        assert!(!out.contains("alert") && !out.contains("script"), "{out}");
    }

    #[test]
    fn style_elements_with_imports_are_dropped() {
        let out = clean(&format!(
            r#"{OPEN}<style>@import url(https://evil/x.css);</style><style>.a{{fill:red}}</style>
            <style>.b{{background:url(http://evil/)}}</style></svg>"#
        ));
        assert!(!out.contains("@import") && !out.contains("evil"), "{out}");
        assert!(out.contains("<style>.a{fill:red}</style>"), "{out}");
    }

    #[test]
    fn root_is_resized_and_keeps_its_coordinates() {
        let out = clean(&format!("{OPEN}<rect width=\"1\" height=\"1\"/></svg>"));
        assert!(
            out.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="400" height="300" viewBox="0 0 800 600">"#),
            "{out}"
        );
    }

    #[test]
    fn text_is_escaped_again() {
        let out = clean(&format!(
            "{OPEN}<text>a &lt; b &amp; &lt;script&gt;</text><title>&quot;q&quot;</title></svg>"
        ));
        assert!(
            out.contains("<text>a &lt; b &amp; &lt;script&gt;</text>"),
            "{out}"
        );
    }

    #[test]
    fn refuses_what_is_not_svg() {
        assert!(matches!(
            sanitize("<html/>", 1, 1),
            Err(SanitizeError::NotSvg)
        ));
        assert!(matches!(
            sanitize("<svg", 1, 1),
            Err(SanitizeError::Parse(_))
        ));
        let dtd = r#"<!DOCTYPE svg [<!ENTITY a "aaaa">]><svg xmlns="http://www.w3.org/2000/svg">&a;</svg>"#;
        assert!(matches!(sanitize(dtd, 1, 1), Err(SanitizeError::Parse(_))));
    }

    #[test]
    fn deep_nesting_is_cut() {
        let mut svg = OPEN.to_owned();
        for _ in 0..1000 {
            svg.push_str("<g>");
        }
        for _ in 0..1000 {
            svg.push_str("</g>");
        }
        svg.push_str("</svg>");
        let out = clean(&svg);
        assert!(out.matches("<g").count() <= MAX_DEPTH, "{}", out.len());
    }
}
