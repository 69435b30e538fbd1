//! Text in figures: the bundled font, its sizes, measuring and wrapping, and drawing errors.

use plotters::prelude::*;
use plotters::style::FontStyle;
use std::sync::Once;

/// The bundled font (DejaVu Sans, subset; licence in `assets/DejaVu-LICENSE.txt`).
pub const FONT_TTF: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");
/// The family name text is measured and drawn with.
pub const FONT_FAMILY: &str = "DejaVu Sans";
/// What the SVG asks the viewer for: the bundled face first, then look-alikes.
pub(super) const FONT_STACK: &str = "DejaVu Sans, Verdana, Geneva, sans-serif";

pub(super) const TITLE_MAX: f64 = 19.0;
pub(super) const TITLE_MIN: f64 = 14.0;
pub(super) const LABEL_SIZE: f64 = 16.0;
pub(super) const TICK_SIZE: f64 = 14.0;
pub(super) const LEGEND_SIZE: f64 = 14.0;
pub(super) const LEGEND_ROW: u32 = 22;
pub(super) const SIDE: u32 = 16;

/// An error while drawing (the backend's message).
pub(super) fn draw_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the figure failed: {e}")
}

pub(super) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT_TTF).is_err() {
            panic!("the bundled font assets/DejaVuSans-subset.ttf is not a valid TrueType font");
        }
    });
}

pub(super) fn font(size: f64) -> TextStyle<'static> {
    register_font();
    (FONT_FAMILY, size).into_font().color(&BLACK)
}

/// Width in pixels of `text` at `size` as the report will show it.
pub fn text_width(text: &str, size: f64) -> u32 {
    register_font();
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size, FontStyle::Normal).box_size(text).map_or(0, |b| b.0)
}

/// Splits `title` into at most two lines that each fit `width` at `size` (at a space near the middle).
pub(super) fn wrap_title(title: &str, size: f64, width: u32) -> Vec<String> {
    if text_width(title, size) <= width {
        return vec![title.to_string()];
    }
    let words: Vec<&str> = title.split(' ').collect();
    let mut best = (u32::MAX, vec![title.to_string()]);
    for k in 1..words.len() {
        let (a, b) = (words[..k].join(" "), words[k..].join(" "));
        let widest = text_width(&a, size).max(text_width(&b, size));
        if widest < best.0 {
            best = (widest, vec![a, b]);
        }
    }
    best.1
}
