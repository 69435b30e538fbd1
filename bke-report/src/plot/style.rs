//! How a series is drawn.

use super::heat::ColorScale;

/// How a series is drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum Style {
    /// A solid line through the points.
    Line,
    /// A dashed line.
    Dashed,
    /// A dotted line (a third line style, for curves that run close together).
    Dotted,
    /// A marker at each point.
    Markers,
    /// A shaded band between `lower` and `upper` (same x as the points, whose y is ignored).
    Band {
        /// Lower edge.
        lower: Vec<f64>,
        /// Upper edge.
        upper: Vec<f64>,
    },
    /// A marker at each point with a vertical bar from `lower` to `upper`.
    ErrorBars {
        /// Lower ends.
        lower: Vec<f64>,
        /// Upper ends.
        upper: Vec<f64>,
    },
    /// A dashed vertical line across the plot at the x of the first point.
    VLine,
    /// A dotted horizontal line across the plot at the y of the first point.
    HLine,
    /// A short vertical tick at the bottom of the plot at the x of each point (a sample's
    /// locations); each rug gets its own row, and the y range grows downwards to make room.
    Rug,
    /// Cells of a regular grid coloured by value: `values[iy * xs.len() + ix]` at `(xs[ix], ys[iy])`;
    /// each cell reaches halfway to its neighbours. Non-finite values are left blank.
    HeatMap {
        /// Cell centres along x (increasing).
        xs: Vec<f64>,
        /// Cell centres along y (increasing).
        ys: Vec<f64>,
        /// The values, row by row (y outer).
        values: Vec<f64>,
        /// How values map to colours.
        scale: ColorScale,
    },
}
