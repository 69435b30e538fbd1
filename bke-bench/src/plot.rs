//! A small SVG line-plot writer for the reproductions: lines, markers and shaded bands
//! (credible intervals) on linear or log-10 axes, with a legend. No dependencies.

use std::fmt::Write as _;

/// How a series is drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum Style {
    /// A polyline through the points.
    Line,
    /// A dashed polyline.
    Dashed,
    /// A marker at each point.
    Markers,
    /// A shaded band between `lower` and `upper` (same x as `points`, whose y is ignored).
    Band {
        /// Lower edge.
        lower: Vec<f64>,
        /// Upper edge.
        upper: Vec<f64>,
    },
}

/// One named series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// `(x, y)` pairs.
    pub points: Vec<(f64, f64)>,
    /// How to draw it.
    pub style: Style,
}

impl Series {
    /// A series drawn as a line.
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.into(), points, style: Style::Line }
    }
    /// A series drawn as a dashed line.
    pub fn dashed(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.into(), points, style: Style::Dashed }
    }
    /// A series drawn as markers.
    pub fn markers(name: &str, points: Vec<(f64, f64)>) -> Self {
        Self { name: name.into(), points, style: Style::Markers }
    }
    /// A shaded band between `lower` and `upper` over `xs`.
    pub fn band(name: &str, xs: &[f64], lower: Vec<f64>, upper: Vec<f64>) -> Self {
        Self {
            name: name.into(),
            points: xs.iter().map(|&x| (x, f64::NAN)).collect(),
            style: Style::Band { lower, upper },
        }
    }
}

/// A plot: title, axis labels, log axes, series.
#[derive(Debug, Clone, Default)]
pub struct Plot {
    /// Title.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// Log-10 x axis.
    pub log_x: bool,
    /// Log-10 y axis.
    pub log_y: bool,
    /// The series, drawn in order (put bands first).
    pub series: Vec<Series>,
}

const COLORS: [&str; 8] =
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
const W: f64 = 720.0;
const H: f64 = 440.0;
const L: f64 = 70.0;
const R: f64 = 170.0;
const T: f64 = 40.0;
const B: f64 = 55.0;

impl Plot {
    /// A plot with a title and axis labels.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        Self { title: title.into(), x_label: x_label.into(), y_label: y_label.into(), ..Self::default() }
    }

    /// Adds a series.
    pub fn with(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    fn tx(&self, x: f64) -> f64 {
        if self.log_x { x.log10() } else { x }
    }

    fn ty(&self, y: f64) -> f64 {
        if self.log_y { y.log10() } else { y }
    }

    fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let (mut x0, mut x1, mut y0, mut y1) =
            (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
        for s in &self.series {
            let ys: Vec<f64> = match &s.style {
                Style::Band { lower, upper } => lower.iter().chain(upper).copied().collect(),
                _ => s.points.iter().map(|p| p.1).collect(),
            };
            for &(x, _) in &s.points {
                let x = self.tx(x);
                if x.is_finite() {
                    (x0, x1) = (x0.min(x), x1.max(x));
                }
            }
            for y in ys {
                let y = self.ty(y);
                if y.is_finite() {
                    (y0, y1) = (y0.min(y), y1.max(y));
                }
            }
        }
        if !(x0 < x1) {
            (x0, x1) = (x0.min(0.0) - 1.0, x1.max(0.0) + 1.0);
        }
        if !(y0 < y1) {
            (y0, y1) = (y0.min(0.0) - 1.0, y1.max(0.0) + 1.0);
        }
        let pad = 0.04 * (y1 - y0);
        ((x0, x1), (y0 - pad, y1 + pad))
    }

    /// Renders the plot as an SVG document.
    pub fn to_svg(&self) -> String {
        let ((x0, x1), (y0, y1)) = self.ranges();
        let px = |x: f64| L + (self.tx(x) - x0) / (x1 - x0) * (W - L - R);
        let py = |y: f64| H - B - (self.ty(y) - y0) / (y1 - y0) * (H - T - B);
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
            (W - R + L) / 2.0,
            esc(&self.title)
        );
        let _ = write!(
            s,
            r##"<rect x="{L}" y="{T}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
            W - L - R,
            H - T - B
        );
        for i in 0..=5 {
            let f = i as f64 / 5.0;
            let (xv, yv) = (x0 + f * (x1 - x0), y0 + f * (y1 - y0));
            let (xs, ys) = (L + f * (W - L - R), H - B - f * (H - T - B));
            let xl = if self.log_x { format!("{:.3}", 10f64.powf(xv)) } else { fmt_tick(xv) };
            let yl = if self.log_y { format!("{:.3}", 10f64.powf(yv)) } else { fmt_tick(yv) };
            let _ = write!(
                s,
                r##"<line x1="{xs}" y1="{}" x2="{xs}" y2="{}" stroke="#ddd"/><text x="{xs}" y="{}" text-anchor="middle">{xl}</text><line x1="{L}" y1="{ys}" x2="{}" y2="{ys}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{yl}</text>"##,
                T,
                H - B,
                H - B + 16.0,
                W - R,
                L - 6.0,
                ys + 4.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"#,
            (W - R + L) / 2.0,
            H - 12.0,
            esc(&self.x_label),
            (H - B + T) / 2.0,
            (H - B + T) / 2.0,
            esc(&self.y_label)
        );
        for (k, ser) in self.series.iter().enumerate() {
            let c = COLORS[k % COLORS.len()];
            let pts: Vec<(f64, f64)> =
                ser.points.iter().filter(|p| self.tx(p.0).is_finite()).copied().collect();
            match &ser.style {
                Style::Line | Style::Dashed => {
                    let path: Vec<String> = pts
                        .iter()
                        .filter(|p| self.ty(p.1).is_finite())
                        .map(|&(x, y)| format!("{:.2},{:.2}", px(x), py(y)))
                        .collect();
                    let dash = if ser.style == Style::Dashed { r#" stroke-dasharray="6 4""# } else { "" };
                    let _ = write!(
                        s,
                        r#"<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"/>"#,
                        path.join(" ")
                    );
                }
                Style::Markers => {
                    for &(x, y) in pts.iter().filter(|p| self.ty(p.1).is_finite()) {
                        let _ =
                            write!(s, r#"<circle cx="{:.2}" cy="{:.2}" r="3" fill="{c}"/>"#, px(x), py(y));
                    }
                }
                Style::Band { lower, upper } => {
                    let up: Vec<String> = ser
                        .points
                        .iter()
                        .zip(upper)
                        .map(|(p, &u)| format!("{:.2},{:.2}", px(p.0), py(u)))
                        .collect();
                    let lo: Vec<String> = ser
                        .points
                        .iter()
                        .zip(lower)
                        .rev()
                        .map(|(p, &l)| format!("{:.2},{:.2}", px(p.0), py(l)))
                        .collect();
                    let _ = write!(
                        s,
                        r#"<polygon fill="{c}" fill-opacity="0.25" stroke="none" points="{} {}"/>"#,
                        up.join(" "),
                        lo.join(" ")
                    );
                }
            }
            let ly = T + 14.0 + 18.0 * k as f64;
            let _ = write!(
                s,
                r#"<rect x="{}" y="{}" width="14" height="4" fill="{c}"/><text x="{}" y="{}">{}</text>"#,
                W - R + 10.0,
                ly - 4.0,
                W - R + 30.0,
                ly + 1.0,
                esc(&ser.name)
            );
        }
        s.push_str("</svg>\n");
        s
    }

    /// Writes the SVG to `path`, creating parent directories.
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        bke_core::model_file::write_atomic(path, self.to_svg()).map_err(std::io::Error::other)
    }
}

fn fmt_tick(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e4 || v.abs() < 1e-2) { format!("{v:.2e}") } else { format!("{v:.3}") }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_style() {
        let xs = [1.0, 2.0, 4.0];
        let svg = Plot { log_x: true, ..Plot::new("t <&>", "x", "y") }
            .with(Series::band("band", &xs, vec![0.0, 1.0, 2.0], vec![1.0, 2.0, 3.0]))
            .with(Series::line("line", vec![(1.0, 0.5), (2.0, 1.5), (4.0, 2.5)]))
            .with(Series::markers("pts", vec![(1.0, 0.2)]))
            .to_svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("<polygon") && svg.contains("<polyline") && svg.contains("<circle"));
        assert!(svg.contains("t &lt;&amp;&gt;"));
    }
}
