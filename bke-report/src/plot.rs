//! Figures of the reports: one look for every plot, drawn with [plotters]' SVG backend.
//!
//! A [`Figure`] is a title, two axes (label with unit, linear or log-10) and [`Series`]: lines, dashed
//! and dotted lines, markers, shaded bands (credible intervals), error bars, vertical reference lines
//! (an optimum, a heuristic), rugs (a sample's points as ticks along the bottom), and heat maps of a
//! function on a 2-D grid ([`ColorScale`]). A fixed range ([`Figure::y_range`]) clips what lies
//! outside it, so a figure can zoom on the region that decides.
//!
//! Figures declare what a reader's checks need, as attributes of the SVG that `cargo xtask
//! check-report` reads: a band's support ([`Series::support`], `data-support="lo hi"` on its
//! polygon: the check fails when the band leaves it, read off the y tick labels) and the y range that
//! must carry at least two tick labels ([`Figure::focus_y`], `data-focus-y="lo hi"` on the `<svg>`).
//! [`Figure::to_svg`] draws it: ticks at round values, the title shrunk (then wrapped) until it fits,
//! the legend in its own block under the plot so it never hides data, and a colour-blind-safe palette
//! (Okabe & Ito) shared by all figures. Text is measured with a subset of DejaVu Sans bundled in
//! `assets/` (no system fonts are read, so the layout is the same on every machine); the HTML report
//! embeds the same font so the page renders as it was measured.
//!
//! ```
//! use bke_report::plot::{Figure, Series};
//! let xs: Vec<f64> = (1..=50).map(|i| 0.1 * i as f64).collect();
//! let fig = Figure::new("Pseudolikelihood against lengthscale", "lengthscale θ (°F)", "log p(x | θ) (nats)")
//!     .log_x()
//!     .with(Series::line("log p", xs.iter().map(|&x| (x, -(x - 1.0f64).powi(2))).collect()))
//!     .with(Series::vline("median heuristic", 2.0));
//! let svg = fig.to_svg().unwrap();
//! assert!(svg.starts_with("<svg") && svg.contains("median heuristic"));
//! ```

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod clip;
mod heat;
mod legend;
mod log_ticks;
mod style;
mod text;
use clip::{annotate, clip_polyline};
use heat::cell_edges;
pub use heat::{ColorScale, grid_points};
use legend::draw_legend;
use log_ticks::{log_grid, log_ticks};
pub use style::Style;
pub use text::{FONT_FAMILY, FONT_TTF, text_width};
use text::{
    FONT_STACK, LABEL_SIZE, LEGEND_ROW, LEGEND_SIZE, SIDE, TICK_SIZE, TITLE_MAX, TITLE_MIN, draw_err, font,
    wrap_title,
};

/// Okabe & Ito's colour-blind-safe palette (black last: reference curves use it explicitly).
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(230, 159, 0),   // orange
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(120, 120, 120), // grey
];

/// Width of every figure in pixels (the report shows them at this size or smaller).
pub const WIDTH: u32 = 760;
/// Height of the plotting part (title and legend come on top of it).
pub const PLOT_HEIGHT: u32 = 380;
/// Height of one rug row, as a fraction of the y range.
const RUG_ROW: f64 = 0.07;

/// One named series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend entry (empty: not in the legend).
    pub name: String,
    /// `(x, y)` pairs.
    pub points: Vec<(f64, f64)>,
    /// How to draw it.
    pub style: Style,
    /// Palette colour index (default: the series' position among the coloured ones).
    pub color: Option<usize>,
    /// A band's support `(lo, hi)` (either may be infinite), declared on its polygon for the
    /// report's check.
    pub support: Option<(f64, f64)>,
}

impl Series {
    fn of(name: &str, points: Vec<(f64, f64)>, style: Style) -> Self {
        Self { name: name.into(), points, style, color: None, support: None }
    }
    /// A series drawn as a line.
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::of(name, points, Style::Line)
    }
    /// A series drawn as a dashed line.
    pub fn dashed(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::of(name, points, Style::Dashed)
    }
    /// A series drawn as a dotted line.
    pub fn dotted(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::of(name, points, Style::Dotted)
    }
    /// A rug: a tick at the bottom of the plot at each of `xs` (a sample beneath a curve).
    pub fn rug(name: &str, xs: &[f64]) -> Self {
        Self::of(name, xs.iter().map(|&x| (x, f64::NAN)).collect(), Style::Rug)
    }
    /// Declares the support `[lo, hi]` of a band's quantity (e.g. `(0, ∞)` for counts): the SVG
    /// carries it so that the report's check fails if the drawn band leaves it.
    pub fn support(mut self, lo: f64, hi: f64) -> Self {
        self.support = Some((lo, hi));
        self
    }
    /// A series drawn as markers.
    pub fn markers(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self::of(name, points, Style::Markers)
    }
    /// A shaded band between `lower` and `upper` over `xs`.
    pub fn band(name: &str, xs: &[f64], lower: Vec<f64>, upper: Vec<f64>) -> Self {
        Self::of(name, xs.iter().map(|&x| (x, f64::NAN)).collect(), Style::Band { lower, upper })
    }
    /// Markers at `points` with vertical error bars from `lower` to `upper`.
    pub fn error_bars(name: &str, points: Vec<(f64, f64)>, lower: Vec<f64>, upper: Vec<f64>) -> Self {
        Self::of(name, points, Style::ErrorBars { lower, upper })
    }
    /// A vertical reference line at `x` (an optimum, a heuristic's choice).
    pub fn vline(name: &str, x: f64) -> Self {
        Self::of(name, vec![(x, f64::NAN)], Style::VLine)
    }
    /// A horizontal reference line at `y` (zero, a nominal level).
    pub fn hline(name: &str, y: f64) -> Self {
        Self::of(name, vec![(f64::NAN, y)], Style::HLine)
    }
    /// A heat map of `values` (row by row, y outer) on the grid `xs × ys` of cell centres; add it
    /// first so that other series are drawn on top. The legend shows the colour range.
    pub fn heat_map(name: &str, xs: &[f64], ys: &[f64], values: Vec<f64>, scale: ColorScale) -> Self {
        let (ex, ey) = (cell_edges(xs), cell_edges(ys));
        let corners = match (ex.first().zip(ey.first()), ex.last().zip(ey.last())) {
            (Some(a), Some(b)) => vec![(*a.0, *a.1), (*b.0, *b.1)],
            _ => vec![],
        };
        let style = Style::HeatMap { xs: xs.to_vec(), ys: ys.to_vec(), values, scale };
        Self::of(name, corners, style)
    }
    /// Draws the series in palette colour `index` (to pair a band with its line, say).
    pub fn color(mut self, index: usize) -> Self {
        self.color = Some(index);
        self
    }

    /// The y values that set the vertical range.
    fn ys(&self) -> Vec<f64> {
        match &self.style {
            Style::Band { lower, upper } | Style::ErrorBars { lower, upper } => {
                lower.iter().chain(upper).copied().collect()
            }
            Style::VLine | Style::Rug => vec![],
            _ => self.points.iter().map(|p| p.1).collect(),
        }
    }
}

/// A figure: title, axis labels (with units), log axes, series.
#[derive(Debug, Clone, Default)]
pub struct Figure {
    /// Title.
    pub title: String,
    /// x-axis label, with its unit.
    pub x_label: String,
    /// y-axis label, with its unit.
    pub y_label: String,
    /// Log-10 x axis.
    pub log_x: bool,
    /// Log-10 y axis.
    pub log_y: bool,
    /// Fixed x range (default: the data's).
    pub x_range: Option<(f64, f64)>,
    /// Fixed y range (default: the data's, padded).
    pub y_range: Option<(f64, f64)>,
    /// The series, drawn in order (bands first, then lines on top).
    pub series: Vec<Series>,
    /// One data unit as long on the x axis as on the y axis (2-D samples, maps): the plot is narrowed
    /// to fit, so it takes effect when the x range is at most about twice the y range; linear axes
    /// only.
    pub equal_aspect: bool,
    /// The y range a reader must be able to read values in (declared on the SVG; the report's check
    /// wants at least two y tick labels inside it).
    pub focus_y: Option<(f64, f64)>,
}

/// The former name of [`Figure`].
pub type Plot = Figure;

/// `v` rounded to 3 significant digits (the heat-map legend's range).
fn sig3(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let p = 10f64.powi(2 - v.abs().log10().floor() as i32);
    (v * p).round() / p
}

/// Formats a tick value: round values print short (`0.2`, `1500`, `2e−5`), with a true minus sign.
pub fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.3e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}").replace('-', "\u{2212}");
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    // Keep at most 4 significant digits (round ticks never need more).
    let digits = (a.log10().floor() as i32 + 1).max(1);
    let decimals = (4 - digits).max(0) as usize;
    let r = format!("{v:.decimals$}");
    let r = if r.contains('.') { r.trim_end_matches('0').trim_end_matches('.').to_string() } else { r };
    let t = if r.len() < s.len() { r } else { s.to_string() };
    t.replacen('-', "\u{2212}", 1)
}

impl Figure {
    /// A figure with a title and axis labels (name and unit, e.g. `"lengthscale θ (°F)"`).
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        Self { title: title.into(), x_label: x_label.into(), y_label: y_label.into(), ..Self::default() }
    }

    /// Adds a series.
    pub fn with(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    /// Log-10 x axis.
    pub fn log_x(mut self) -> Self {
        self.log_x = true;
        self
    }

    /// Log-10 y axis.
    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }

    /// Draws one data unit as long on both axes (for 2-D samples and heat maps over a plane) by
    /// narrowing the plot; see [`Figure::equal_aspect`](struct.Figure.html#structfield.equal_aspect).
    pub fn equal_aspect(mut self) -> Self {
        self.equal_aspect = true;
        self
    }

    /// Fixes the x range.
    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_range = Some((lo, hi));
        self
    }

    /// Fixes the y range; lines, markers and bands are clipped to it.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Declares the y range that decides the figure's point (see [`Figure::focus_y`]).
    pub fn focus_y(mut self, lo: f64, hi: f64) -> Self {
        self.focus_y = Some((lo, hi));
        self
    }

    /// The data range of one axis: finite values (positive on a log axis), padded by 4 % (linear) or
    /// a factor (log); a degenerate range is widened around its value.
    fn range(values: impl Iterator<Item = f64>, log: bool, pad: bool) -> (f64, f64) {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            (lo, hi) = (lo.min(v), hi.max(v));
        }
        if !lo.is_finite() {
            return if log { (0.1, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            if hi <= lo {
                return (lo / 2.0, hi * 2.0);
            }
            let f = if pad { (hi / lo).powf(0.03) } else { 1.0 };
            return (lo / f, hi * f);
        }
        if hi <= lo {
            let w = if lo == 0.0 { 1.0 } else { 0.1 * lo.abs() };
            return (lo - w, hi + w);
        }
        let p = if pad { 0.04 * (hi - lo) } else { 0.0 };
        (lo - p, hi + p)
    }

    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let x = self.x_range.unwrap_or_else(|| {
            Self::range(self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), self.log_x, false)
        });
        let y = self.y_range.unwrap_or_else(|| {
            let (lo, hi) = Self::range(self.series.iter().flat_map(|s| s.ys()), self.log_y, true);
            // Room for the rugs: RUG_ROW of the range per row, below the data.
            let f = RUG_ROW * self.rugs() as f64;
            if self.log_y { (lo * (lo / hi).powf(f), hi) } else { (lo - f * (hi - lo), hi) }
        });
        (x, y)
    }

    /// The number of rugs.
    fn rugs(&self) -> usize {
        self.series.iter().filter(|s| s.style == Style::Rug).count()
    }

    /// The legend entries: (name, colour, style).
    fn legend(&self) -> Vec<(String, RGBColor, Style)> {
        self.series
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.name.is_empty())
            .map(|(k, s)| {
                let name = match &s.style {
                    Style::HeatMap { values, scale, .. } => {
                        let (lo, hi) = scale.limits(values);
                        format!("{}: {} to {}", s.name, fmt_tick(sig3(lo)), fmt_tick(sig3(hi)))
                    }
                    _ => s.name.clone(),
                };
                (name, self.color_of(k), s.style.clone())
            })
            .collect()
    }

    /// A series' colour: its explicit index, else the next palette colour no series asked for.
    fn color_of(&self, k: usize) -> RGBColor {
        if let Some(c) = self.series[k].color {
            return PALETTE[c % PALETTE.len()];
        }
        let taken: Vec<usize> =
            self.series.iter().filter_map(|t| t.color.map(|c| c % PALETTE.len())).collect();
        let free: Vec<usize> = (0..PALETTE.len()).filter(|c| !taken.contains(c)).collect();
        let auto = self.series[..k]
            .iter()
            .filter(|t| t.color.is_none() && !matches!(t.style, Style::HeatMap { .. }))
            .count();
        if free.is_empty() { PALETTE[auto % PALETTE.len()] } else { PALETTE[free[auto % free.len()]] }
    }

    /// Lays the legend out in rows that fit the width: the entries' columns per row.
    fn legend_rows(&self) -> Vec<Vec<(String, RGBColor, Style)>> {
        let usable = WIDTH - 2 * SIDE;
        let mut rows: Vec<Vec<_>> = Vec::new();
        let mut used = u32::MAX;
        for e in self.legend() {
            let w = 40 + text_width(&e.0, LEGEND_SIZE) + 24;
            if used.saturating_add(w) > usable {
                rows.push(Vec::new());
                used = 0;
            }
            used += w;
            rows.last_mut().expect("a row was pushed").push(e);
        }
        rows
    }

    /// Renders the figure as an SVG document (`<svg …>…</svg>`).
    pub fn to_svg(&self) -> anyhow::Result<String> {
        let mut size = TITLE_MAX;
        while size > TITLE_MIN && text_width(&self.title, size) > WIDTH - 2 * SIDE {
            size -= 1.0;
        }
        let title = wrap_title(&self.title, size, WIDTH - 2 * SIDE);
        let title_h = 14 + (size * 1.25) as u32 * title.len() as u32;
        let legend = self.legend_rows();
        let legend_h = if legend.is_empty() { 0 } else { 8 + LEGEND_ROW * legend.len() as u32 };
        let height = title_h + PLOT_HEIGHT + legend_h;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
            root.fill(&WHITE).map_err(draw_err)?;
            let (top, rest) = root.split_vertically(title_h);
            for (i, line) in title.iter().enumerate() {
                let y = 8 + (i as f64 * size * 1.25) as i32;
                let style = font(size).pos(Pos::new(HPos::Center, VPos::Top));
                top.draw_text(line, &style, ((WIDTH / 2) as i32, y)).map_err(draw_err)?;
            }
            let (plot, legend_area) = rest.split_vertically(PLOT_HEIGHT);
            let ((x0, x1), (y0, y1)) = self.ranges();
            let log = |lo: f64, hi: f64| {
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi)).with_light_points(log_grid(lo, hi))
            };
            match (self.log_x, self.log_y) {
                (false, false) => self.draw_chart(&plot, x0..x1, y0..y1)?,
                (true, false) => self.draw_chart(&plot, log(x0, x1), y0..y1)?,
                (false, true) => self.draw_chart(&plot, x0..x1, log(y0, y1))?,
                (true, true) => self.draw_chart(&plot, log(x0, x1), log(y0, y1))?,
            }
            draw_legend(&legend_area, &legend)?;
            root.present().map_err(draw_err)?;
        }
        let svg =
            svg.replace(&format!("font-family=\"{FONT_FAMILY}\""), &format!("font-family=\"{FONT_STACK}\""));
        let bands = self.series.iter().filter(|s| matches!(s.style, Style::Band { .. }));
        Ok(annotate(svg, self.focus_y, &bands.map(|b| b.support).collect::<Vec<_>>()))
    }

    fn draw_chart<X, Y>(&self, area: &DrawingArea<SVGBackend, Shift>, xr: X, yr: Y) -> anyhow::Result<()>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let y_label_w = 18 + 12 + self.y_tick_width();
        let (x_label_h, top) = (46, 4);
        let mut squeeze = 0;
        if self.equal_aspect && !self.log_x && !self.log_y {
            let ((x0, x1), (y0, y1)) = self.ranges();
            let inner_h = f64::from(PLOT_HEIGHT - x_label_h - top);
            let inner_w = f64::from(WIDTH - SIDE - (SIDE + 8) - y_label_w);
            let want = inner_h * (x1 - x0) / (y1 - y0);
            if want.is_finite() && want < inner_w {
                squeeze = ((inner_w - want) / 2.0) as u32;
            }
        }
        let mut chart = ChartBuilder::on(area)
            .margin_left(SIDE + squeeze)
            .margin_right(SIDE + 8 + squeeze)
            .margin_top(top)
            .x_label_area_size(x_label_h)
            .y_label_area_size(y_label_w)
            .build_cartesian_2d(xr, yr)
            .map_err(draw_err)?;
        let (xs, ys) = (chart.x_range(), chart.y_range());
        // Ticks computed in floating point can land a rounding error away from 0.
        let (x_eps, y_eps) = (1e-9 * (xs.end - xs.start).abs(), 1e-9 * (ys.end - ys.start).abs());
        let x_fmt = move |v: &f64| fmt_tick(if v.abs() < x_eps { 0.0 } else { *v });
        let y_fmt = move |v: &f64| fmt_tick(if v.abs() < y_eps { 0.0 } else { *v });
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .axis_desc_style(font(LABEL_SIZE))
            .label_style(font(TICK_SIZE))
            .x_labels(8)
            .y_labels(7)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(RGBColor(245, 245, 245))
            .axis_style(RGBColor(90, 90, 90))
            .draw()
            .map_err(draw_err)?;
        let ok = |p: &(f64, f64)| {
            p.0.is_finite() && p.1.is_finite() && (!self.log_x || p.0 > 0.0) && (!self.log_y || p.1 > 0.0)
        };
        let (ylo, yhi) = (ys.start.min(ys.end), ys.start.max(ys.end));
        let inside = |p: &(f64, f64)| p.1 >= ylo && p.1 <= yhi;
        let mut rug = 0;
        for (k, s) in self.series.iter().enumerate() {
            let c = self.color_of(k);
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(ok).collect();
            match &s.style {
                Style::Line | Style::Dashed | Style::Dotted => {
                    for run in clip_polyline(&pts, ylo, yhi) {
                        let st = c.stroke_width(2);
                        match s.style {
                            Style::Line => chart.draw_series(LineSeries::new(run, st)),
                            Style::Dashed => chart.draw_series(DashedLineSeries::new(run, 7, 5, st)),
                            _ => chart.draw_series(DashedLineSeries::new(run, 2, 4, st)),
                        }
                        .map_err(draw_err)?;
                    }
                }
                Style::Rug => {
                    let frac =
                        |f: f64| if self.log_y { ylo * (yhi / ylo).powf(f) } else { ylo + f * (yhi - ylo) };
                    let (a, b) =
                        (frac(RUG_ROW * rug as f64 + 0.012), frac(RUG_ROW * (rug + 1) as f64 - 0.012));
                    rug += 1;
                    let (xlo, xhi) = (xs.start.min(xs.end), xs.start.max(xs.end));
                    let ticks =
                        s.points.iter().filter(|p| p.0 >= xlo && p.0 <= xhi && (!self.log_x || p.0 > 0.0));
                    chart
                        .draw_series(ticks.map(|p| PathElement::new(vec![(p.0, a), (p.0, b)], c.mix(0.45))))
                        .map_err(draw_err)?;
                }
                Style::Markers => {
                    let pts: Vec<(f64, f64)> = pts.into_iter().filter(inside).collect();
                    chart
                        .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.mix(0.75).filled())))
                        .map_err(draw_err)?;
                }
                Style::Band { lower, upper } => {
                    let clamp = |v: f64| v.clamp(ylo, yhi);
                    let up: Vec<(f64, f64)> =
                        s.points.iter().zip(upper).map(|(p, &u)| (p.0, clamp(u))).filter(ok).collect();
                    let lo: Vec<(f64, f64)> =
                        s.points.iter().zip(lower).rev().map(|(p, &l)| (p.0, clamp(l))).filter(ok).collect();
                    let poly: Vec<(f64, f64)> = up.into_iter().chain(lo).collect();
                    chart.draw_series(std::iter::once(Polygon::new(poly, c.mix(0.22)))).map_err(draw_err)?;
                }
                Style::ErrorBars { lower, upper } => {
                    let bars: Vec<[(f64, f64); 3]> = s
                        .points
                        .iter()
                        .zip(lower.iter().zip(upper))
                        .map(|(p, (&l, &u))| [*p, (p.0, l), (p.0, u)])
                        .filter(|b| b.iter().all(ok))
                        .collect();
                    chart
                        .draw_series(
                            bars.iter().map(|b| PathElement::new(vec![b[1], b[2]], c.stroke_width(2))),
                        )
                        .map_err(draw_err)?;
                    chart
                        .draw_series(bars.iter().map(|b| Circle::new(b[0], 4, c.filled())))
                        .map_err(draw_err)?;
                }
                Style::VLine => {
                    if let Some(&(x, _)) = s.points.first().filter(|p| p.0.is_finite()) {
                        let line = vec![(x, ys.start), (x, ys.end)];
                        chart
                            .draw_series(DashedLineSeries::new(line, 9, 5, c.stroke_width(2)))
                            .map_err(draw_err)?;
                    }
                }
                Style::HeatMap { xs, ys, values, scale } => {
                    anyhow::ensure!(
                        values.len() == xs.len() * ys.len(),
                        "heat map '{}': {} values for a {} × {} grid (need one per cell)",
                        s.name,
                        values.len(),
                        xs.len(),
                        ys.len()
                    );
                    let limits = scale.limits(values);
                    let (ex, ey) = (cell_edges(xs), cell_edges(ys));
                    let cells =
                        values.iter().enumerate().filter(|(_, v)| v.is_finite()).filter_map(|(i, &v)| {
                            let (ix, iy) = (i % xs.len(), i / xs.len());
                            let corners = [(ex[ix], ey[iy]), (ex[ix + 1], ey[iy + 1])];
                            let fill = scale.color(ColorScale::position(v, limits)).filled();
                            corners.iter().all(ok).then(|| Rectangle::new(corners, fill))
                        });
                    chart.draw_series(cells).map_err(draw_err)?;
                }
                Style::HLine => {
                    if let Some(&(_, y)) = s.points.first().filter(|p| p.1.is_finite()) {
                        let line = vec![(xs.start, y), (xs.end, y)];
                        chart
                            .draw_series(DashedLineSeries::new(line, 3, 4, c.stroke_width(1)))
                            .map_err(draw_err)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Width of the widest y tick label a chart of this figure can show (for the label area).
    fn y_tick_width(&self) -> u32 {
        let (_, (y0, y1)) = self.ranges();
        [y0, y1, 0.5 * (y0 + y1), -(y1 - y0) / 7.0]
            .iter()
            .map(|v| text_width(&fmt_tick(*v), TICK_SIZE) + 8)
            .max()
            .unwrap_or(40)
            .clamp(30, 90)
    }

    /// Writes the SVG to `path`, creating parent directories.
    pub fn save(&self, path: &std::path::Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let svg = self.to_svg()?;
        bke_core::model_file::write_atomic(path, svg)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
