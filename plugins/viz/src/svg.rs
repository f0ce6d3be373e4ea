//! An SVG writer that escapes everything it is given, the look shared by every chart
//! (Superset's colours, fonts, greys), and text measurement for layout.
//!
//! The plugin cannot ask a font engine how wide a text is, so widths are estimated from
//! per-character advances of a typical sans-serif (within a few percent of DejaVu Sans, the
//! font the server rasterises with; browsers' Inter/Helvetica are narrower, so text estimated
//! to fit does fit).

use std::fmt::Write as _;

/// Superset's `supersetColors` categorical scheme.
pub const SUPERSET_COLORS: [&str; 20] = [
    "#1FA8C9", "#454E7C", "#5AC189", "#FF7F44", "#666666", "#E04355", "#FCC700", "#A868B7",
    "#3CCCCB", "#A38F79", "#8FD3E4", "#A1A6BD", "#ACE1C4", "#FEC0A1", "#B2B2B2", "#EFA1AA",
    "#FDE380", "#D3B3DA", "#9EE5E5", "#D1C6BC",
];

/// The colour of the `i`-th series.
pub fn color(i: usize) -> &'static str {
    SUPERSET_COLORS[i % SUPERSET_COLORS.len()]
}

/// Text colours and lines.
pub const TEXT: &str = "#1F1F1F";
/// Secondary text (axis labels, legends).
pub const MUTED: &str = "#6E7079";
/// Grid lines.
pub const GRID: &str = "#E0E6F1";
/// Axis lines.
pub const AXIS: &str = "#6E7079";
/// The font stack.
pub const FONT: &str = "Inter, 'Helvetica Neue', Helvetica, Arial, 'DejaVu Sans', sans-serif";

/// Estimated width of `s` at `size` px (DejaVu Sans advances, in em).
pub fn text_width(s: &str, size: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '\'' | '|' | '!' | '.' | ',' | ':' | ';' => 0.28,
            'f' | 't' | 'r' | 'I' | ' ' | '(' | ')' | '[' | ']' | '-' => 0.38,
            'm' | 'w' => 0.92,
            'M' | 'W' => 0.95,
            '0'..='9' | '$' | '%' | '+' | '=' | '<' | '>' | '#' | '_' => 0.64,
            c if c.is_ascii_uppercase() => 0.72,
            c if c.is_ascii_lowercase() => 0.6,
            c if c.is_ascii() => 0.5,
            // CJK and other wide scripts.
            c if (c as u32) >= 0x2E80 => 1.0,
            _ => 0.65,
        })
        .sum();
    em * size
}

/// `s` cut to fit `width` px at `size`, with an ellipsis when cut.
pub fn fit(s: &str, size: f64, width: f64) -> String {
    if text_width(s, size) <= width {
        return s.to_owned();
    }
    let budget = width - text_width("…", size);
    let mut out = String::new();
    let mut used = 0.0;
    for c in s.chars() {
        let w = text_width(c.encode_utf8(&mut [0; 4]), size);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Escapes text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t') => {}
            c => out.push(c),
        }
    }
    out
}

/// A number as an SVG coordinate (two decimals, no `-0`).
pub fn n(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let r = (v * 100.0).round() / 100.0;
    if r == 0.0 {
        "0".into()
    } else if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r}")
    }
}

/// Horizontal text anchoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Left-aligned.
    Start,
    /// Centred.
    Middle,
    /// Right-aligned.
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// A text's look.
#[derive(Debug, Clone, Copy)]
pub struct Font {
    /// Size in px.
    pub size: f64,
    /// CSS weight (400, 600, 700).
    pub weight: u32,
    /// Fill colour.
    pub color: &'static str,
    /// Anchoring.
    pub anchor: Anchor,
}

impl Font {
    /// Regular text of `size` in `color`, left-aligned.
    pub fn new(size: f64, color: &'static str) -> Font {
        Font {
            size,
            weight: 400,
            color,
            anchor: Anchor::Start,
        }
    }

    /// With another weight.
    pub fn weight(mut self, weight: u32) -> Font {
        self.weight = weight;
        self
    }

    /// With another anchoring.
    pub fn anchor(mut self, anchor: Anchor) -> Font {
        self.anchor = anchor;
        self
    }
}

/// An SVG document being written.
pub struct Svg {
    buf: String,
    width: f64,
    height: f64,
}

impl Svg {
    /// A document of `width` × `height` with a white background.
    pub fn new(width: u32, height: u32) -> Svg {
        let (w, h) = (f64::from(width), f64::from(height));
        let mut buf = String::with_capacity(16 * 1024);
        let _ = write!(
            buf,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{font}" text-rendering="geometricPrecision">"#,
            font = esc(FONT)
        );
        let _ = write!(
            buf,
            r##"<rect class="background" width="{w}" height="{h}" fill="#FFFFFF"/>"##
        );
        Svg {
            buf,
            width: w,
            height: h,
        }
    }

    /// The document's width.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// The document's height.
    pub fn height(&self) -> f64 {
        self.height
    }

    /// Opens a group with a class and optional extra attributes (already escaped by the
    /// caller through [`esc`]).
    pub fn open(&mut self, class: &str, extra: &str) {
        let _ = write!(self.buf, r#"<g class="{}"{extra}>"#, esc(class));
    }

    /// Closes a group.
    pub fn close(&mut self) {
        self.buf.push_str("</g>");
    }

    /// A `<title>` (tooltip in browsers) for the enclosing element.
    pub fn tooltip(&mut self, text: &str) {
        let _ = write!(self.buf, "<title>{}</title>", esc(text));
    }

    /// A text.
    pub fn text(&mut self, x: f64, y: f64, s: &str, font: Font, class: &str) {
        let weight = if font.weight == 400 {
            String::new()
        } else {
            format!(r#" font-weight="{}""#, font.weight)
        };
        let anchor = if font.anchor == Anchor::Start {
            String::new()
        } else {
            format!(r#" text-anchor="{}""#, font.anchor.as_str())
        };
        let class = if class.is_empty() {
            String::new()
        } else {
            format!(r#" class="{}""#, esc(class))
        };
        let _ = write!(
            self.buf,
            r#"<text x="{}" y="{}" font-size="{}" fill="{}"{weight}{anchor}{class}>{}</text>"#,
            n(x),
            n(y),
            n(font.size),
            font.color,
            esc(s)
        );
    }

    /// A text rotated by `deg` around its anchor point.
    pub fn text_rotated(&mut self, x: f64, y: f64, deg: f64, s: &str, font: Font, class: &str) {
        let _ = write!(
            self.buf,
            r#"<g transform="rotate({} {} {})">"#,
            n(deg),
            n(x),
            n(y)
        );
        self.text(x, y, s, font, class);
        self.buf.push_str("</g>");
    }

    /// A filled rectangle.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"{extra}/>"#,
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            esc(fill)
        );
    }

    /// A line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"{extra}/>"#,
            n(x1),
            n(y1),
            n(x2),
            n(y2),
            esc(stroke)
        );
    }

    /// A path; `d` is built by the caller from numbers only.
    pub fn path(&mut self, d: &str, attrs: &str) {
        let _ = write!(self.buf, r#"<path d="{d}"{attrs}/>"#);
    }

    /// A circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str, extra: &str) {
        let _ = write!(
            self.buf,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{}"{extra}/>"#,
            n(cx),
            n(cy),
            n(r),
            esc(fill)
        );
    }

    /// Appends raw markup the caller built from escaped parts.
    pub fn raw(&mut self, s: &str) {
        self.buf.push_str(s);
    }

    /// The finished document.
    pub fn finish(mut self) -> String {
        self.buf.push_str("</svg>");
        self.buf
    }
}

/// The chart title (the chart's name) at the top left; returns the height it takes.
pub fn title(svg: &mut Svg, text: &str, pad: f64) -> f64 {
    if text.trim().is_empty() {
        return 0.0;
    }
    let size = 16.0;
    let fitted = fit(text, size, svg.width() - 2.0 * pad);
    svg.text(
        pad,
        pad + size,
        &fitted,
        Font::new(size, TEXT).weight(600),
        "title",
    );
    size + 14.0
}

/// "No results" in the middle of the free area.
pub fn empty(svg: &mut Svg, top: f64, message: &str) {
    let (w, h) = (svg.width(), svg.height());
    let y = top + (h - top) / 2.0;
    svg.text(
        w / 2.0,
        y,
        message,
        Font::new(14.0, MUTED).anchor(Anchor::Middle),
        "empty",
    );
}

/// A legend laid out in rows from the top left; returns its height. Items that do not fit in
/// `max_rows` rows are summarised as "+N more".
pub fn legend(
    svg: &mut Svg,
    items: &[(String, &'static str)],
    x0: f64,
    y0: f64,
    width: f64,
    max_rows: usize,
) -> f64 {
    if items.is_empty() {
        return 0.0;
    }
    let size = 12.0;
    let row_h = 20.0;
    let swatch = 10.0;
    let gap = 16.0;
    // A side legend is as wide as its longest label; a top legend gives each label up to
    // almost half its width.
    let max_label = (width - swatch - 6.0).min((width * 0.45).max(160.0));
    svg.open("legend", "");
    let (mut x, mut row) = (x0, 0usize);
    for (i, (name, color)) in items.iter().enumerate() {
        let label = fit(name, size, max_label);
        let w = swatch + 6.0 + text_width(&label, size);
        if x > x0 && x + w > x0 + width {
            row += 1;
            x = x0;
        }
        if row >= max_rows {
            let more = format!("+{} more", items.len() - i);
            let y = y0 + (max_rows as f64 - 1.0) * row_h;
            svg.text(
                x0 + width,
                y + size - 1.0,
                &more,
                Font::new(size, MUTED).anchor(Anchor::End),
                "legend-more",
            );
            row = max_rows - 1;
            break;
        }
        let y = y0 + row as f64 * row_h;
        svg.open("legend-item", &format!(r#" data-name="{}""#, esc(name)));
        svg.rect(x, y + 1.0, swatch, swatch, color, r#" rx="2""#);
        svg.text(
            x + swatch + 6.0,
            y + size - 1.0,
            &label,
            Font::new(size, MUTED),
            "",
        );
        svg.close();
        x += w + gap;
    }
    svg.close();
    (row + 1) as f64 * row_h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_fits() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let long = "A very long label that does not fit";
        let cut = fit(long, 12.0, 80.0);
        assert!(
            cut.ends_with('…') && text_width(&cut, 12.0) <= 80.0 + 0.01,
            "{cut}"
        );
        assert_eq!(n(-0.001), "0");
        assert_eq!(n(2.5), "2.5");
        assert_eq!(n(3.0), "3");
    }
}
