//! Sanitised SVG → PNG, in process (resvg; no browser, no external process).
//!
//! Text is drawn with the fonts embedded in the binary (DejaVu Sans, regular and bold) and
//! every generic family (`sans-serif`, `serif`, ...) maps to them, so a thumbnail looks the
//! same on every machine, including one without any system font; a family the SVG names that
//! is not embedded falls back to them too. Nothing is read from disk or the network: `image`
//! hrefs resolve only as embedded PNG data.

use std::sync::{Arc, OnceLock};

use resvg::tiny_skia;
use resvg::usvg::{self, fontdb};

/// The embedded fonts (Bitstream Vera license, see `server/assets/fonts/LICENSE`).
static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
static DEJAVU_SANS_BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Bold.ttf");
const FAMILY: &str = "DejaVu Sans";

fn fonts() -> Arc<fontdb::Database> {
    static DB: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = fontdb::Database::new();
        db.load_font_data(DEJAVU_SANS.to_vec());
        db.load_font_data(DEJAVU_SANS_BOLD.to_vec());
        db.set_sans_serif_family(FAMILY);
        db.set_serif_family(FAMILY);
        db.set_monospace_family(FAMILY);
        db.set_cursive_family(FAMILY);
        db.set_fantasy_family(FAMILY);
        Arc::new(db)
    })
    .clone()
}

/// Why a rasterisation failed.
#[derive(Debug, thiserror::Error)]
pub enum RasterError {
    /// usvg could not read the (already sanitised) document.
    #[error("the SVG cannot be drawn: {0}")]
    Svg(String),
    /// The pixmap could not be allocated or encoded.
    #[error("the PNG cannot be produced: {0}")]
    Png(String),
}

/// Draws `svg` on a white `width` × `height` canvas and encodes it as PNG.
pub fn png(svg: &str, width: u32, height: u32) -> Result<Vec<u8>, RasterError> {
    let options = usvg::Options {
        font_family: FAMILY.into(),
        fontdb: fonts(),
        image_href_resolver: usvg::ImageHrefResolver {
            resolve_data: Box::new(|mime, data, _| {
                (mime == "image/png").then(|| usvg::ImageKind::PNG(data))
            }),
            resolve_string: Box::new(|_, _| None),
        },
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| RasterError::Svg(e.to_string()))?;
    let mut pixmap = tiny_skia::Pixmap::new(width, height)
        .ok_or_else(|| RasterError::Png(format!("cannot allocate {width}x{height}")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    let size = tree.size();
    let transform = tiny_skia::Transform::from_scale(
        width as f32 / size.width(),
        height as f32 / size.height(),
    );
    resvg::render(&tree, transform, &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| RasterError::Png(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_text_without_system_fonts() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40">
            <text x="4" y="28" font-family="Helvetica, Arial, sans-serif" font-size="24">Hello</text></svg>"#;
        let bytes = png(svg, 120, 40).expect("png");
        assert_eq!(&bytes[1..4], b"PNG");
        // Blank white would compress to almost nothing; drawn glyphs do not.
        let blank = png(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"/>"#,
            120,
            40,
        )
        .expect("png");
        assert!(
            bytes.len() > blank.len() + 100,
            "{} vs {}",
            bytes.len(),
            blank.len()
        );
    }
}
