//! Normalisation of the kernel student-t density on a box by composite Gauss–Legendre quadrature
//! (1 and 2 dimensions), and sampling from the normalised density.
//!
//! **Why a box.** For stationary kernels `q_k` has a positive floor at infinity (module docs of
//! [`super`]), so it is normalised on a bounded domain `B`: by default the data range widened by
//! `margin × range` on each side. The normalised density is `q_k(x)/Z_B` on `B` and 0 outside.
//!
//! **Quadrature.** `B` is cut into `p` panels per dimension, each with an `order`-point Gauss–Legendre
//! rule (tensor product in 2-D), summed in log space. Starting from `min_panels`, `p` doubles until
//! two successive estimates agree to `rel_tol` or the node budget is spent. The reported `rel_err`
//! is `|Z_2p − Z_p| / Z_2p`: an estimate of the error of the *coarser* rule, hence conservative for
//! the returned finer one (Gauss–Legendre on analytic integrands converges geometrically). The
//! integrand is analytic for the SE, rational-quadratic and polynomial kernels; for the Laplace and
//! Matérn kernels it has kinks at the data and convergence is algebraic (the estimate still holds).
//!
//! **Sampling.** A panel is chosen with probability equal to its quadrature mass, then a point in it
//! by rejection from the uniform distribution under the flat envelope `2 × (largest nodal value in
//! the panel)`. This is exact up to the quadrature error of the panel masses, provided the envelope
//! holds; draws where it does not (`q > envelope`) are counted in [`Sample::envelope_violations`].

use crate::numeric::log_sum_exp;
use crate::{CoreError, Points};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A box `Π_d [lower_d, upper_d]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Domain {
    /// Lower corner.
    pub lower: Vec<f64>,
    /// Upper corner.
    pub upper: Vec<f64>,
}

impl Domain {
    /// A box; errors unless the corners are finite, of equal length ≥ 1, and `lower < upper`.
    pub fn new(lower: Vec<f64>, upper: Vec<f64>) -> Result<Self, CoreError> {
        if lower.is_empty() || lower.len() != upper.len() {
            return Err(CoreError::DimensionMismatch {
                what: "domain upper corner".into(),
                expected: lower.len().max(1),
                found: upper.len(),
            });
        }
        for (d, (&a, &b)) in lower.iter().zip(&upper).enumerate() {
            if !(a.is_finite() && b.is_finite() && a < b) {
                return Err(CoreError::InvalidParameter {
                    name: format!("domain interval of dimension {d} (lower bound)"),
                    value: a,
                    reason: format!("need finite lower < upper, got [{a}, {b}]"),
                });
            }
        }
        Ok(Self { lower, upper })
    }

    /// The bounding box of `x` widened by `margin × range` on each side (a zero range counts as 1).
    pub fn around(x: &Points, margin: f64) -> Result<Self, CoreError> {
        x.check_len("data for the domain", 1)?;
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(CoreError::InvalidParameter {
                name: "margin".into(),
                value: margin,
                reason: "must be finite and non-negative".into(),
            });
        }
        let d = x.dim();
        let (mut lo, mut hi) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
        for p in x.iter() {
            for k in 0..d {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        for k in 0..d {
            let range = if hi[k] > lo[k] { hi[k] - lo[k] } else { 1.0 };
            lo[k] -= margin * range;
            hi[k] += margin * range;
            if hi[k] <= lo[k] {
                hi[k] = lo[k] + 1.0;
            }
        }
        Self::new(lo, hi)
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.lower.len()
    }

    /// Whether `p` lies in the closed box.
    pub fn contains(&self, p: &[f64]) -> bool {
        p.iter().zip(self.lower.iter().zip(&self.upper)).all(|(&v, (&a, &b))| v >= a && v <= b)
    }

    /// `log` of the volume.
    pub fn log_volume(&self) -> f64 {
        self.lower.iter().zip(&self.upper).map(|(a, b)| (b - a).ln()).sum()
    }
}

/// The quadrature of [`KernelStudentT::normalise`](super::KernelStudentT::normalise) (inner knobs; see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct NormaliseOptions {
    /// Gauss–Legendre nodes per panel and dimension. Default `8`.
    pub order: usize,
    /// Panels per dimension of the first rule. Default `16`.
    pub min_panels: usize,
    /// Largest number of quadrature nodes (density evaluations) of one rule. Default `2^18`.
    pub max_nodes: usize,
    /// Stop when two successive estimates of `Z` agree to this relative tolerance. Default `1e-6`.
    pub rel_tol: f64,
}

impl Default for NormaliseOptions {
    fn default() -> Self {
        Self { order: 8, min_panels: 16, max_nodes: 1 << 18, rel_tol: 1e-6 }
    }
}

impl NormaliseOptions {
    /// Validates the options.
    pub fn check(&self) -> Result<(), CoreError> {
        if !(1..=64).contains(&self.order) {
            return Err(CoreError::InvalidParameter {
                name: "order".into(),
                value: self.order as f64,
                reason: "Gauss–Legendre order must be in 1..=64".into(),
            });
        }
        if self.min_panels == 0 {
            return Err(CoreError::InvalidParameter {
                name: "min_panels".into(),
                value: 0.0,
                reason: "need at least one panel".into(),
            });
        }
        crate::check_positive("rel_tol", self.rel_tol)
    }
}

/// The result of a normalisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalisation {
    /// The integration domain.
    pub domain: Domain,
    /// `log Z_B = log ∫_B q_k(x) dx`.
    pub log_z: f64,
    /// Estimated relative error of `Z_B` (`|Z_2p − Z_p|/Z_2p`, conservative; see module docs); `∞`
    /// when the node budget allowed no refinement.
    pub rel_err: f64,
    /// Whether `rel_err ≤ rel_tol` was reached within the node budget.
    pub converged: bool,
    /// Panels per dimension of the returned rule.
    pub panels: usize,
    /// Gauss–Legendre nodes per panel and dimension of the rule.
    pub order: usize,
    /// Density evaluations spent in total.
    pub evaluations: usize,
}

impl Normalisation {
    /// Errors unless the domain has dimension `dim`, `log Z` is finite, the error estimate is not
    /// negative or NaN, and the rule has at least one panel and an order in `1..=64`.
    pub fn validate(&self, dim: usize) -> Result<(), CoreError> {
        let d = Domain::new(self.domain.lower.clone(), self.domain.upper.clone())?;
        if d.dim() != dim {
            return Err(CoreError::DimensionMismatch {
                what: "normalisation domain".into(),
                expected: dim,
                found: d.dim(),
            });
        }
        if !self.log_z.is_finite() {
            return Err(CoreError::NonFinite {
                what: "log normaliser".into(),
                row: 0,
                col: 0,
                value: self.log_z,
            });
        }
        if !(self.rel_err >= 0.0) || self.panels == 0 || !(1..=64).contains(&self.order) {
            return Err(CoreError::InvalidParameter {
                name: "normaliser error estimate / panels / order".into(),
                value: self.rel_err,
                reason: "need rel_err ≥ 0, at least one panel and a quadrature order in 1..=64".into(),
            });
        }
        Ok(())
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

/// A tensor-product composite Gauss–Legendre rule on a box, nodes grouped by panel.
#[derive(Debug, Clone)]
pub(crate) struct Grid {
    pub nodes: Points,
    pub log_weights: Vec<f64>,
    /// Nodes per panel (`order^d`); panel `c` owns nodes `c·per_panel .. (c+1)·per_panel`.
    pub per_panel: usize,
}

impl Grid {
    /// `panels` per dimension, `order` nodes each; `d ≤ 2`.
    pub fn new(domain: &Domain, panels: usize, order: usize) -> Result<Grid, CoreError> {
        let d = domain.dim();
        let (gx, gw) = gauss_legendre(order);
        // 1-D composite nodes per dimension, grouped by panel.
        let axis = |k: usize| -> (Vec<f64>, Vec<f64>) {
            let h = (domain.upper[k] - domain.lower[k]) / panels as f64;
            let mut xs = Vec::with_capacity(panels * order);
            let mut ws = Vec::with_capacity(panels * order);
            for p in 0..panels {
                let c = domain.lower[k] + (p as f64 + 0.5) * h;
                for (t, w) in gx.iter().zip(&gw) {
                    xs.push(c + 0.5 * h * t);
                    ws.push((0.5 * h * w).ln());
                }
            }
            (xs, ws)
        };
        match d {
            1 => {
                let (xs, ws) = axis(0);
                Ok(Grid { nodes: Points::new("quadrature nodes", xs, 1)?, log_weights: ws, per_panel: order })
            }
            2 => {
                let (x0, w0) = axis(0);
                let (x1, w1) = axis(1);
                let total = panels * panels * order * order;
                let mut data = Vec::with_capacity(2 * total);
                let mut lw = Vec::with_capacity(total);
                for pa in 0..panels {
                    for pb in 0..panels {
                        for i in 0..order {
                            for j in 0..order {
                                let (a, b) = (pa * order + i, pb * order + j);
                                data.push(x0[a]);
                                data.push(x1[b]);
                                lw.push(w0[a] + w1[b]);
                            }
                        }
                    }
                }
                Ok(Grid {
                    nodes: Points::new("quadrature nodes", data, 2)?,
                    log_weights: lw,
                    per_panel: order * order,
                })
            }
            _ => Err(CoreError::InvalidParameter {
                name: "dimension for numerical normalisation".into(),
                value: d as f64,
                reason: "normalisation by quadrature is available in 1 and 2 dimensions only".into(),
            }),
        }
    }
}

/// Lower corner and widths of panel `c` of a grid with `panels` panels per dimension.
fn panel_box(domain: &Domain, panels: usize, c: usize) -> (Vec<f64>, Vec<f64>) {
    let d = domain.dim();
    let idx: Vec<usize> = if d == 1 { vec![c] } else { vec![c / panels, c % panels] };
    let mut lo = Vec::with_capacity(d);
    let mut w = Vec::with_capacity(d);
    for k in 0..d {
        let h = (domain.upper[k] - domain.lower[k]) / panels as f64;
        lo.push(domain.lower[k] + idx[k] as f64 * h);
        w.push(h);
    }
    (lo, w)
}

/// Draws from [`KernelStudentT::sample`](super::KernelStudentT::sample).
#[derive(Debug, Clone)]
pub struct Sample {
    /// The draws.
    pub points: Points,
    /// Proposals evaluated.
    pub proposals: usize,
    /// Accepted or rejected proposals where the density exceeded the envelope (0 means the rejection
    /// step was exact).
    pub envelope_violations: usize,
}

/// The unnormalised log density `log q(x)` at each of a set of points.
pub(super) type LogQ<'a> = dyn Fn(&Points) -> Result<Vec<f64>, CoreError> + 'a;

/// `log Z` of a rule: `log Σ w_i q(x_i)` and the nodal values `log q(x_i)`.
fn integrate(log_q: &LogQ, grid: &Grid) -> Result<(f64, Vec<f64>), CoreError> {
    let lq = log_q(&grid.nodes)?;
    let terms: Vec<f64> = lq.iter().zip(&grid.log_weights).map(|(a, b)| a + b).collect();
    Ok((log_sum_exp(&terms), lq))
}

/// The normalising constant of the `d`-dimensional density `q` on `domain` by the adaptive
/// composite Gauss–Legendre rule of the module docs. Errors for `d > 2`, on invalid options, or a
/// domain of the wrong dimension.
pub(super) fn normalise(
    log_q: &LogQ,
    d: usize,
    domain: Domain,
    opts: &NormaliseOptions,
) -> Result<Normalisation, CoreError> {
    opts.check()?;
    if domain.dim() != d {
        return Err(CoreError::DimensionMismatch {
            what: "normalisation domain".into(),
            expected: d,
            found: domain.dim(),
        });
    }
    let nodes_for = |p: usize| (p * opts.order).pow(d as u32);
    let mut p = opts.min_panels;
    let grid = Grid::new(&domain, p, opts.order)?;
    let (mut lz, _) = integrate(log_q, &grid)?;
    let mut evaluations = grid.nodes.len();
    let mut rel_err = f64::INFINITY;
    let mut converged = false;
    while nodes_for(2 * p) <= opts.max_nodes {
        let grid2 = Grid::new(&domain, 2 * p, opts.order)?;
        let (lz2, _) = integrate(log_q, &grid2)?;
        evaluations += grid2.nodes.len();
        rel_err = (lz2 - lz).exp_m1().abs();
        p *= 2;
        lz = lz2;
        if rel_err <= opts.rel_tol {
            converged = true;
            break;
        }
    }
    if !lz.is_finite() {
        return Err(CoreError::InvalidParameter {
            name: "normalising constant".into(),
            value: lz,
            reason: "the density underflows or overflows on the whole domain; check the domain and \
                         hyperparameters"
                .into(),
        });
    }
    Ok(Normalisation { domain, log_z: lz, rel_err, converged, panels: p, order: opts.order, evaluations })
}

/// `n` draws from the `d`-dimensional density `q` normalised by `norm` (seeded; the result does not
/// depend on the thread count): a panel of the normaliser's rule is chosen with probability equal to
/// its quadrature mass (one pass of that rule), then a point in it by rejection (module docs).
pub(super) fn sample(
    log_q: &LogQ,
    d: usize,
    norm: &Normalisation,
    n: usize,
    seed: u64,
) -> Result<Sample, CoreError> {
    // The samples, and batches of proposals (twice the samples still wanted, with their panel,
    // uniform draw and density).
    let bytes = crate::budget::Bytes::f64s(n).times(d).plus(crate::budget::Bytes::f64s(n).times(2 * d + 6));
    crate::budget::check(&format!("n = {n} samples"), bytes)?;
    let grid = Grid::new(&norm.domain, norm.panels, norm.order)?;
    let (lz, lq) = integrate(log_q, &grid)?;
    let npanels = grid.nodes.len() / grid.per_panel;
    let mut cdf = Vec::with_capacity(npanels);
    let mut panel_log_max = Vec::with_capacity(npanels);
    let mut acc = 0.0;
    for c in 0..npanels {
        let r = c * grid.per_panel..(c + 1) * grid.per_panel;
        let terms: Vec<f64> =
            lq[r.clone()].iter().zip(&grid.log_weights[r.clone()]).map(|(a, b)| a + b).collect();
        acc += (log_sum_exp(&terms) - lz).exp();
        cdf.push(acc);
        panel_log_max.push(lq[r].iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    }
    cdf.iter_mut().for_each(|c| *c /= acc);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n * d);
    let (mut proposals, mut violations, mut accepted) = (0, 0, 0);
    while accepted < n {
        let batch = (n - accepted).saturating_mul(2).max(64);
        let mut props = Vec::with_capacity(batch * d);
        let mut meta = Vec::with_capacity(batch);
        for _ in 0..batch {
            let u: f64 = rng.random();
            let c = cdf.partition_point(|&v| v < u).min(npanels - 1);
            let (lo, w) = panel_box(&norm.domain, norm.panels, c);
            for k in 0..d {
                props.push(lo[k] + w[k] * rng.random::<f64>());
            }
            meta.push((c, rng.random::<f64>()));
        }
        let pts = Points::new("proposals", props, d)?;
        let lq = log_q(&pts)?;
        proposals += batch;
        for (i, &(c, u)) in meta.iter().enumerate() {
            let log_env = panel_log_max[c] + std::f64::consts::LN_2;
            let ratio = (lq[i] - log_env).exp();
            if ratio > 1.0 {
                violations += 1;
            }
            if accepted < n && u < ratio {
                out.extend_from_slice(pts.point(i));
                accepted += 1;
            }
        }
    }
    Ok(Sample { points: Points::new("samples", out, d)?, proposals, envelope_violations: violations })
}
