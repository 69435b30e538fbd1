//! The density beyond the normalisation box, and the quadrature rules of the box and of its
//! complement (`density::normalise` module docs).
//!
//! **Why a tail weight.** For a stationary kernel `q_k` tends to a positive floor far from the data
//! (module docs of [`super`]): `∫_{ℝ^d} q_k = ∞`. The density on the whole space is therefore
//!
//! ```text
//! p(x) = q_k(x) w(x) / Z,   w(x) = Π_k (1 + (δ_k(x)/h_k)²)⁻¹,   Z = ∫_B q_k + ∫_{ℝ^d∖B} q_k w,
//! ```
//!
//! with `δ_k(x)` the distance of `x_k` outside `[l_k, u_k]` (0 inside) and `h_k = u_k − l_k` the
//! box width: inside the box `p ∝ q_k` exactly as before (`w = 1`), beyond it the floor decays as a
//! Cauchy tail of the box's own scale, continuously at the faces. The weight is a modelling choice
//! where the model has no information (no data, `q_k` flat at its floor); it is the heaviest common
//! tail that is integrable in every direction, so a far test point costs `2 log(δ/h)` nats per
//! coordinate rather than `−∞`. For a kernel whose `q_k` decays by itself (the dot-product kernels of
//! [`super::Polynomial`], e.g. the linear kernel whose estimate is the NIW Student-t of seed 003
//! eq. (3) in input space) `w = 1` and the normaliser is `∫_{ℝ^d} q_k` itself.
//!
//! **A graded rule on wide boxes.** The density has its structure near the data and is flat (at its
//! floor) far from it, so on a box much wider than the data a uniform rule spends its nodes on empty
//! space and misses peaks the data carry. The box rule therefore puts its `p` equal panels per
//! dimension on the *core*, the data range widened by a quarter of the range on each side (the
//! default box), and between the core and the box's faces panels that double in width away from the
//! core (`≈ log₂(width/panel)` more per side): a box 100 ranges wide costs a few panels more than the
//! default box, with the same resolution near the data. On the default box (or a narrower one) the
//! rule is the uniform one. The graded pieces are those of the first rule (`base` panels on the
//! core); a refinement cuts every panel in two, graded ones included, so the rules are nested and
//! the error estimate of `density::normalise` covers the graded part too.
//!
//! **Quadrature of the complement.** Each axis is cut into three segments: below the box, the box,
//! above it. On a tail segment `x_k = u_k + h_k tan t` (or `l_k − h_k tan t`), `t ∈ [0, π/2)`:
//! `w_k dx_k = h_k dt` (Cauchy weight) or `dx_k = h_k sec² t dt` (`w = 1`), so the integrand in `t` is
//! bounded and the infinite half-line becomes a finite interval for the composite Gauss–Legendre rule.
//! The complement is the tensor product of the segments minus the box cell (2 cells in 1-D, 8 in 2-D).

use super::domain::Domain;
use crate::{CoreError, Points};
use std::f64::consts::FRAC_PI_2;

/// How the density continues beyond the normalisation box (module docs of `density::tails`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TailWeight {
    /// `w(x) = Π_k (1 + (δ_k/h_k)²)⁻¹`, `h_k` the box width: for kernels whose `q_k` has a positive
    /// floor (the stationary kernels).
    Cauchy,
    /// `w = 1`: for kernels whose `q_k` decays by itself (dot-product kernels).
    One,
}

impl TailWeight {
    /// `log w(x)` (0 inside the box).
    pub fn log_weight(self, domain: &Domain, x: &[f64]) -> f64 {
        match self {
            TailWeight::One => 0.0,
            TailWeight::Cauchy => (0..domain.dim())
                .map(|k| {
                    let (l, u) = (domain.lower[k], domain.upper[k]);
                    let r = (l - x[k]).max(x[k] - u).max(0.0) / (u - l);
                    // −log(1 + r²), without overflow far out.
                    if r > 1e8 { -2.0 * r.ln() - r.powi(-2).ln_1p() } else { -(r * r).ln_1p() }
                })
                .sum(),
        }
    }
}

/// Which segment of an axis a panel lies in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Seg {
    Below,
    Inside,
    Above,
}

/// One panel of one axis, in the mapped coordinate `t` (`x` itself inside the box, the angle `t` of
/// `x = u + h tan t` beyond it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Piece {
    seg: Seg,
    /// The segment's start; the panel is `[base + j·dt, base + (j+1)·dt]`.
    base: f64,
    j: usize,
    dt: f64,
}

impl Piece {
    /// `(x, log Jacobian)` at the mapped coordinate `t` of axis `k`.
    fn map(self, t: f64, k: usize, domain: &Domain, weight: TailWeight) -> (f64, f64) {
        let (l, u) = (domain.lower[k], domain.upper[k]);
        let h = u - l;
        let jac = |t: f64| match weight {
            TailWeight::Cauchy => h.ln(),
            TailWeight::One => h.ln() - 2.0 * t.cos().ln(),
        };
        match self.seg {
            Seg::Inside => (t, 0.0),
            Seg::Above => (u + h * t.tan(), jac(t)),
            Seg::Below => (l - h * t.tan(), jac(t)),
        }
    }
}

/// A tensor-product composite Gauss–Legendre rule in mapped coordinates, nodes grouped by panel:
/// panel `c` owns nodes `c·per_panel .. (c+1)·per_panel` and the per-axis pieces `panels[c]`.
#[derive(Debug, Clone)]
pub(crate) struct Grid {
    pub nodes: Points,
    /// `log` of (Gauss–Legendre weight × Jacobian) of each node: `Σ exp(log q + log_weights)` is the
    /// integral of `q w` over the rule's region.
    pub log_weights: Vec<f64>,
    /// The Jacobian part of `log_weights` (0 in the box).
    pub log_jac: Vec<f64>,
    /// Nodes per panel (`order^d`).
    pub per_panel: usize,
    pub panels: Vec<Vec<Piece>>,
    weight: TailWeight,
}

/// The pieces of one segment of axis `k`: `p` equal panels of the box, or of `[0, π/2]`.
fn pieces(seg: Seg, p: usize, k: usize, domain: &Domain) -> Vec<Piece> {
    let (t0, span) = match seg {
        Seg::Inside => (domain.lower[k], domain.upper[k] - domain.lower[k]),
        _ => (0.0, FRAC_PI_2),
    };
    let dt = span / p as f64;
    (0..p).map(|j| Piece { seg, base: t0, j, dt }).collect()
}

/// The margin of the core of a box (fraction of the data range on each side): the default box.
pub(crate) const CORE_MARGIN: f64 = 0.25;

/// The core of the box `domain` for the data `x`: the data range widened by [`CORE_MARGIN`] on each
/// side, clipped to the box; `None` when it is the whole box (the rule is then uniform).
pub(crate) fn core_of(x: &Points, domain: &Domain) -> Result<Option<Domain>, CoreError> {
    let around = Domain::around(x, CORE_MARGIN)?;
    if around.dim() != domain.dim() {
        return Ok(None);
    }
    let lower: Vec<f64> = around.lower.iter().zip(&domain.lower).map(|(a, b)| a.max(*b)).collect();
    let upper: Vec<f64> = around.upper.iter().zip(&domain.upper).map(|(a, b)| a.min(*b)).collect();
    if lower == domain.lower && upper == domain.upper {
        return Ok(None);
    }
    // Data outside a box given by the caller: no core.
    Ok(Domain::new(lower, upper).ok())
}

/// Graded panels from `from` over a length `len` (one way, `sign` = ±1): widths `h, 2h, 4h, …`, the
/// last one ending at `from + sign·len` (a sliver shorter than half its width joins its neighbour).
fn graded(from: f64, len: f64, h: f64, sign: f64) -> Vec<Piece> {
    let mut bounds = vec![0.0];
    // (a width that underflowed to 0 would never reach the face)
    let mut w = if h > 0.0 { h } else { len };
    while *bounds.last().unwrap() < len {
        bounds.push(bounds.last().unwrap() + w);
        w *= 2.0;
    }
    let m = bounds.len();
    if m > 2 && len - bounds[m - 2] < 0.25 * (bounds[m - 1] - bounds[m - 2]) {
        bounds.pop();
    }
    let m = bounds.len();
    bounds[m - 1] = len;
    bounds
        .windows(2)
        .map(|p| {
            let (a, b) = if sign > 0.0 { (from + p[0], from + p[1]) } else { (from - p[1], from - p[0]) };
            Piece { seg: Seg::Inside, base: a, j: 0, dt: b - a }
        })
        .collect()
}

/// The panels of axis `k` of the box rule at `p = base · 2^s` panels: `p` equal panels on the core;
/// beyond it the graded pieces of the `base` rule (widths `core/base · 2^j`), each cut into
/// `p/base` equal panels, so that doubling `p` halves every panel and the rules are nested.
fn box_pieces(domain: &Domain, core: Option<&Domain>, base: usize, p: usize, k: usize) -> Vec<Piece> {
    let Some(core) = core else { return pieces(Seg::Inside, p, k, domain) };
    let (l, u, a, b) = (domain.lower[k], domain.upper[k], core.lower[k], core.upper[k]);
    let split = (p / base.max(1)).max(1);
    let cut = move |g: Piece| (0..split).map(move |j| Piece { j, dt: g.dt / split as f64, ..g });
    let h = (b - a) / base.max(1) as f64;
    let mut out: Vec<Piece> =
        if a > l { graded(a, a - l, h, -1.0).into_iter().rev().flat_map(cut).collect() } else { Vec::new() };
    out.extend((0..p).map(|j| Piece { seg: Seg::Inside, base: a, j, dt: (b - a) / p as f64 }));
    if u > b {
        out.extend(graded(b, u - b, h, 1.0).into_iter().flat_map(cut));
    }
    out
}

/// The number of [`box_pieces`] (saturating, without building them: a model file may ask for
/// absurd panel counts, which validation must count before refusing).
fn box_piece_count(domain: &Domain, core: Option<&Domain>, base: usize, p: usize, k: usize) -> usize {
    let Some(core) = core else { return p };
    let (l, u, a, b) = (domain.lower[k], domain.upper[k], core.lower[k], core.upper[k]);
    let h = (b - a) / base.max(1) as f64;
    let graded_len =
        |from: f64, len: f64, sign: f64| if len > 0.0 { graded(from, len, h, sign).len() } else { 0 };
    let outer = graded_len(a, a - l, -1.0) + graded_len(b, u - b, 1.0);
    p.saturating_add(outer.saturating_mul((p / base.max(1)).max(1)))
}

impl Grid {
    /// The rule of the box: `panels` equal panels per dimension on the `core` (the whole box when
    /// `None`), graded ones beyond it (those of the `base` rule, cut in `panels/base`), `order`
    /// nodes each; `d ≤ 2`.
    pub fn new(
        domain: &Domain,
        core: Option<&Domain>,
        base: usize,
        panels: usize,
        order: usize,
    ) -> Result<Grid, CoreError> {
        let d = check_dim(domain)?;
        let axes: Vec<Vec<Piece>> = (0..d).map(|k| box_pieces(domain, core, base, panels, k)).collect();
        Self::product(domain, &[axes], order, TailWeight::One)
    }

    /// Nodes of the box rule of [`Grid::new`] (saturating).
    pub fn count(domain: &Domain, core: Option<&Domain>, base: usize, panels: usize, order: usize) -> usize {
        (0..domain.dim())
            .map(|k| box_piece_count(domain, core, base, panels, k).saturating_mul(order))
            .fold(1, usize::saturating_mul)
    }

    /// The rule of the complement of the box: `panels` per tail segment, and in the cells beside
    /// the box the box rule's panels along the box's axis (of [`Grid::new`] with `core` and `base`),
    /// `order` nodes each; `d ≤ 2`.
    pub fn tails(
        domain: &Domain,
        core: Option<&Domain>,
        base: usize,
        panels: usize,
        order: usize,
        weight: TailWeight,
    ) -> Result<Grid, CoreError> {
        let d = check_dim(domain)?;
        let segs = [Seg::Below, Seg::Inside, Seg::Above];
        let axis = |seg: Seg, k: usize| match seg {
            Seg::Inside => box_pieces(domain, core, base, panels, k),
            _ => pieces(seg, panels, k, domain),
        };
        let cells: Vec<Vec<Vec<Piece>>> = match d {
            1 => [Seg::Below, Seg::Above].iter().map(|&s| vec![axis(s, 0)]).collect(),
            _ => segs
                .iter()
                .flat_map(|&a| segs.iter().map(move |&b| (a, b)))
                .filter(|&(a, b)| !(a == Seg::Inside && b == Seg::Inside))
                .map(|(a, b)| vec![axis(a, 0), axis(b, 1)])
                .collect(),
        };
        Self::product(domain, &cells, order, weight)
    }

    /// Nodes of the rule of [`Grid::tails`] (saturating): 2 cells in 1-D; in 2-D 4 corner cells
    /// and, beside each pair of faces, 2 cells along the box rule's axis.
    pub fn tail_count(
        domain: &Domain,
        core: Option<&Domain>,
        base: usize,
        panels: usize,
        order: usize,
    ) -> usize {
        let outside = panels.saturating_mul(order);
        let side = |k: usize| box_piece_count(domain, core, base, panels, k).saturating_mul(order);
        match domain.dim() {
            1 => outside.saturating_mul(2),
            _ => outside
                .saturating_mul(outside)
                .saturating_mul(4)
                .saturating_add(outside.saturating_mul(2).saturating_mul(side(0).saturating_add(side(1)))),
        }
    }

    /// The distinct panel ends along axis `k` of the box part of the rule, sorted (tests).
    #[cfg(test)]
    pub fn break_points(&self, k: usize) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .panels
            .iter()
            .filter(|axes| axes[k].seg == Seg::Inside)
            .flat_map(|axes| {
                let p = axes[k];
                [p.base + p.j as f64 * p.dt, p.base + (p.j + 1) as f64 * p.dt]
            })
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * b.abs().max(1.0));
        v
    }

    /// The union of the tensor-product rules of `cells` (per cell, the pieces of each axis).
    fn product(
        domain: &Domain,
        cells: &[Vec<Vec<Piece>>],
        order: usize,
        weight: TailWeight,
    ) -> Result<Grid, CoreError> {
        let d = domain.dim();
        let (gx, gw) = gauss_legendre(order);
        let per_panel = order.pow(d as u32);
        let (mut data, mut lw, mut lj, mut panels) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // Per axis piece: the nodes' (x, log Jacobian, log GL weight).
        let nodes_of = |p: &Piece, k: usize| -> Vec<(f64, f64, f64)> {
            gx.iter()
                .zip(&gw)
                .map(|(z, w)| {
                    let t = p.base + (p.j as f64 + 0.5) * p.dt + 0.5 * p.dt * z;
                    let (x, j) = p.map(t, k, domain, weight);
                    (x, j, (0.5 * p.dt * w).ln())
                })
                .collect()
        };
        for cell in cells {
            match d {
                1 => {
                    for p in &cell[0] {
                        for (x, j, w) in nodes_of(p, 0) {
                            data.push(x);
                            lj.push(j);
                            lw.push(w + j);
                        }
                        panels.push(vec![*p]);
                    }
                }
                _ => {
                    let n1: Vec<Vec<(f64, f64, f64)>> = cell[1].iter().map(|p| nodes_of(p, 1)).collect();
                    for pa in &cell[0] {
                        let n0 = nodes_of(pa, 0);
                        for (pb, n1) in cell[1].iter().zip(&n1) {
                            for &(x0, j0, w0) in &n0 {
                                for &(x1, j1, w1) in n1 {
                                    data.extend([x0, x1]);
                                    lj.push(j0 + j1);
                                    lw.push(w0 + w1 + j0 + j1);
                                }
                            }
                            panels.push(vec![*pa, *pb]);
                        }
                    }
                }
            }
        }
        Ok(Grid {
            nodes: Points::new("quadrature nodes", data, d)?,
            log_weights: lw,
            log_jac: lj,
            per_panel,
            panels,
            weight,
        })
    }

    /// A uniform draw `(x, log Jacobian)` in panel `c` from the uniforms `u` (one per axis).
    pub fn draw(&self, c: usize, u: &[f64], domain: &Domain) -> (Vec<f64>, f64) {
        let mut x = Vec::with_capacity(u.len());
        let mut lj = 0.0;
        for (k, (p, &uk)) in self.panels[c].iter().zip(u).enumerate() {
            // Stay inside the open tail interval: t < π/2.
            let t = p.base + p.j as f64 * p.dt + uk * p.dt;
            let t = if p.seg == Seg::Inside { t } else { t.min(FRAC_PI_2 * (1.0 - f64::EPSILON)) };
            let (xk, j) = p.map(t, k, domain, self.weight);
            x.push(xk);
            lj += j;
        }
        (x, lj)
    }
}

pub(crate) fn check_dim(domain: &Domain) -> Result<usize, CoreError> {
    match domain.dim() {
        d @ (1 | 2) => Ok(d),
        d => Err(CoreError::InvalidParameter {
            name: "dimension for numerical normalisation".into(),
            value: d as f64,
            reason: "normalisation by quadrature is available in 1 and 2 dimensions only".into(),
        }),
    }
}

/// Gauss–Legendre nodes and weights on `[−1, 1]` (Newton iteration on `P_n`, to machine precision).
pub fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut x = vec![0.0; n];
    let mut w = vec![0.0; n];
    for i in 0..n.div_ceil(2) {
        let mut z = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        let mut dp = 1.0;
        for _ in 0..100 {
            let (mut p0, mut p1) = (1.0, 0.0);
            for j in 0..n {
                let p2 = p1;
                p1 = p0;
                p0 = ((2 * j + 1) as f64 * z * p1 - j as f64 * p2) / (j + 1) as f64;
            }
            dp = n as f64 * (z * p0 - p1) / (z * z - 1.0);
            let dz = p0 / dp;
            z -= dz;
            if dz.abs() < 1e-16 {
                break;
            }
        }
        // Recompute the derivative at the converged node.
        let (mut p0, mut p1) = (1.0, 0.0);
        for j in 0..n {
            let p2 = p1;
            p1 = p0;
            p0 = ((2 * j + 1) as f64 * z * p1 - j as f64 * p2) / (j + 1) as f64;
        }
        if n > 0 {
            dp = n as f64 * (z * p0 - p1) / (z * z - 1.0);
        }
        x[i] = -z;
        x[n - 1 - i] = z;
        w[i] = 2.0 / ((1.0 - z * z) * dp * dp);
        w[n - 1 - i] = w[i];
    }
    (x, w)
}
