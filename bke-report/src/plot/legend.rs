//! The legend block under the plot: one swatch per series in its style, then its name.

use super::style::Style;
use super::text::{LEGEND_ROW, LEGEND_SIZE, SIDE, draw_err, font, text_width};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Draws the legend rows: a swatch in the series' style, then its name.
pub(super) fn draw_legend(
    area: &DrawingArea<SVGBackend, Shift>,
    rows: &[Vec<(String, RGBColor, Style)>],
) -> anyhow::Result<()> {
    for (r, row) in rows.iter().enumerate() {
        let y = 4 + (r as u32 * LEGEND_ROW) as i32 + LEGEND_ROW as i32 / 2;
        let mut x = SIDE as i32 + 8;
        for (name, c, style) in row {
            let sw = |a: i32, b: i32| vec![(a, y), (b, y)];
            match style {
                Style::Band { .. } => {
                    area.draw(&Rectangle::new([(x, y - 6), (x + 30, y + 6)], c.mix(0.3).filled()))
                        .map_err(draw_err)?;
                }
                Style::Markers => {
                    area.draw(&Circle::new((x + 15, y), 4, c.filled())).map_err(draw_err)?;
                }
                Style::ErrorBars { .. } => {
                    area.draw(&PathElement::new(vec![(x + 15, y - 8), (x + 15, y + 8)], c.stroke_width(2)))
                        .map_err(draw_err)?;
                    area.draw(&Circle::new((x + 15, y), 4, c.filled())).map_err(draw_err)?;
                }
                Style::Dashed | Style::Dotted | Style::VLine | Style::HLine => {
                    for a in [x, x + 12, x + 24] {
                        area.draw(&PathElement::new(sw(a, a + 7), c.stroke_width(2))).map_err(draw_err)?;
                    }
                }
                Style::Rug => {
                    for a in [x + 4, x + 10, x + 13, x + 20, x + 26] {
                        area.draw(&PathElement::new(vec![(a, y - 6), (a, y + 6)], c.stroke_width(1)))
                            .map_err(draw_err)?;
                    }
                }
                Style::Line => {
                    area.draw(&PathElement::new(sw(x, x + 30), c.stroke_width(2))).map_err(draw_err)?;
                }
                Style::HeatMap { scale, .. } => {
                    for i in 0..6 {
                        let a = x + 5 * i;
                        let fill = scale.color(i as f64 / 5.0).filled();
                        area.draw(&Rectangle::new([(a, y - 6), (a + 5, y + 6)], fill)).map_err(draw_err)?;
                    }
                    let frame = RGBColor(150, 150, 150).stroke_width(1);
                    area.draw(&Rectangle::new([(x, y - 6), (x + 30, y + 6)], frame)).map_err(draw_err)?;
                }
            }
            let style = font(LEGEND_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
            area.draw_text(name, &style, (x + 38, y)).map_err(draw_err)?;
            x += 40 + text_width(name, LEGEND_SIZE) as i32 + 24;
        }
    }
    Ok(())
}
