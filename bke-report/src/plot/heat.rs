//! Heat maps: their colour scales and grid geometry.

use plotters::style::RGBColor;

/// How a heat map colours its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorScale {
    /// White (smallest value) to near-black (largest): densities, as the seeds' grey levels.
    Sequential,
    /// Blue (negative) through white (0) to vermillion (positive), symmetric about 0: signed
    /// functions such as a witness.
    Diverging,
}

impl ColorScale {
    /// The colour range `(lo, hi)` of `values` (finite ones): min to max, or ±max|v| when diverging.
    pub(super) fn limits(self, values: &[f64]) -> (f64, f64) {
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
        match self {
            _ if !lo.is_finite() => (0.0, 1.0),
            Self::Sequential => (lo, hi),
            Self::Diverging => {
                let m = lo.abs().max(hi.abs());
                (-m, m)
            }
        }
    }

    /// Where `v` lies between the limits `(lo, hi)`, in `[0, 1]`; the middle colour when the map is
    /// constant (an all-zero witness is white, not the negative end).
    pub(super) fn position(v: f64, (lo, hi): (f64, f64)) -> f64 {
        if hi > lo { (v - lo) / (hi - lo) } else { 0.5 }
    }

    /// The colour of `t ∈ [0, 1]` (position between the limits).
    pub(super) fn color(self, t: f64) -> RGBColor {
        let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.5 };
        let mix = |a: (f64, f64, f64), b: (f64, f64, f64), u: f64| {
            let c = |x: f64, y: f64| (x + (y - x) * u).round() as u8;
            RGBColor(c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
        };
        let white = (255.0, 255.0, 255.0);
        match self {
            Self::Sequential => mix(white, (25.0, 25.0, 35.0), t),
            Self::Diverging if t < 0.5 => mix((0.0, 114.0, 178.0), white, 2.0 * t),
            Self::Diverging => mix(white, (213.0, 94.0, 0.0), 2.0 * t - 1.0),
        }
    }
}

/// The points of the grid `xs × ys` as `Points` data (`[x, y]` pairs), row by row with y outer: the
/// order of [`super::Series::heat_map`]'s values.
pub fn grid_points(xs: &[f64], ys: &[f64]) -> Vec<f64> {
    ys.iter().flat_map(|&y| xs.iter().flat_map(move |&x| [x, y])).collect()
}

/// Cell edges of centres `c`: halfway between neighbours, half a step beyond the ends (a single
/// centre gets a cell one data unit wide).
pub(super) fn cell_edges(c: &[f64]) -> Vec<f64> {
    let n = c.len();
    if n < 2 {
        return c.iter().flat_map(|&v| [v - 0.5, v + 0.5]).collect();
    }
    let mut e = Vec::with_capacity(n + 1);
    e.push(c[0] - 0.5 * (c[1] - c[0]));
    e.extend(c.windows(2).map(|w| 0.5 * (w[0] + w[1])));
    e.push(c[n - 1] + 0.5 * (c[n - 1] - c[n - 2]));
    e
}
