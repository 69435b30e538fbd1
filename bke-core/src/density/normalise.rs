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

use super::{DensityKernel, KernelStudentT, log_sum_exp};
use crate::{CoreError, Points};
use bke_linalg::Backend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A box `Π_d [lower_d, upper_d]`.
#[derive(Debug, Clone, PartialEq)]
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

/// Options of [`normalise()`].
#[derive(Debug, Clone, PartialEq)]
pub struct NormaliseOptions {
    /// The integration domain; `None`: [`Domain::around`] the training data with `margin`. Default `None`.
    pub domain: Option<Domain>,
    /// Widening of the data range on each side, as a fraction of the range. Default `0.25`.
    pub margin: f64,
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
        Self { domain: None, margin: 0.25, order: 8, min_panels: 16, max_nodes: 1 << 18, rel_tol: 1e-6 }
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
        crate::check_positive("rel_tol", self.rel_tol)?;
        if !(self.margin.is_finite() && self.margin >= 0.0) {
            return Err(CoreError::InvalidParameter {
                name: "margin".into(),
                value: self.margin,
                reason: "must be finite and non-negative".into(),
            });
        }
        Ok(())
    }
}

/// The result of a normalisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalisation {
    /// The integration domain.
    pub domain: Domain,
    /// `log Z_B = log ∫_B q_k(x) dx`.
    pub log_z: f64,
    /// Estimated relative error of `Z_B` (`|Z_2p − Z_p|/Z_2p`, conservative; see module docs).
    pub rel_err: f64,
    /// Whether `rel_err ≤ rel_tol` was reached within the node budget.
    pub converged: bool,
    /// Panels per dimension of the returned rule.
    pub panels: usize,
    /// Density evaluations spent in total.
    pub evaluations: usize,
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

/// A kernel student-t density normalised on a box (1-D or 2-D).
#[derive(Debug, Clone)]
pub struct NormalisedDensity<K: DensityKernel, B: Backend> {
    model: KernelStudentT<K, B>,
    norm: Normalisation,
    grid_panels: usize,
    /// Cumulative panel masses (normalised, last = 1).
    panel_cdf: Vec<f64>,
    /// Largest nodal `log q_k` per panel.
    panel_log_max: Vec<f64>,
}

/// Draws from [`NormalisedDensity::sample`].
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

/// Normalises `model` on a box in 1 or 2 dimensions (see the module docs for the rule and its
/// accuracy). Errors for `d > 2`, on invalid options, or a domain of the wrong dimension.
pub fn normalise<K: DensityKernel, B: Backend>(
    model: KernelStudentT<K, B>,
    opts: &NormaliseOptions,
) -> Result<NormalisedDensity<K, B>, CoreError> {
    opts.check()?;
    let domain = match &opts.domain {
        Some(d) => d.clone(),
        None => Domain::around(model.data(), opts.margin)?,
    };
    if domain.dim() != model.dim() {
        return Err(CoreError::DimensionMismatch {
            what: "normalisation domain".into(),
            expected: model.dim(),
            found: domain.dim(),
        });
    }
    let d = model.dim();
    let nodes_for = |p: usize| (p * opts.order).pow(d as u32);
    let eval = |p: usize| -> Result<(f64, Grid, Vec<f64>), CoreError> {
        let grid = Grid::new(&domain, p, opts.order)?;
        let lq = model.log_unnormalised(&grid.nodes)?;
        let lz = log_sum_exp(lq.iter().zip(&grid.log_weights).map(|(a, b)| a + b));
        Ok((lz, grid, lq))
    };
    let mut p = opts.min_panels;
    let (mut lz, mut grid, mut lq) = eval(p)?;
    let mut evaluations = grid.nodes.len();
    let mut rel_err = f64::INFINITY;
    let mut converged = false;
    while nodes_for(2 * p) <= opts.max_nodes {
        let (lz2, grid2, lq2) = eval(2 * p)?;
        evaluations += grid2.nodes.len();
        rel_err = (lz2 - lz).exp_m1().abs();
        p *= 2;
        (lz, grid, lq) = (lz2, grid2, lq2);
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
    let npanels = grid.nodes.len() / grid.per_panel;
    let mut panel_log_mass = Vec::with_capacity(npanels);
    let mut panel_log_max = Vec::with_capacity(npanels);
    for c in 0..npanels {
        let r = c * grid.per_panel..(c + 1) * grid.per_panel;
        panel_log_mass
            .push(log_sum_exp(lq[r.clone()].iter().zip(&grid.log_weights[r.clone()]).map(|(a, b)| a + b)));
        panel_log_max.push(lq[r].iter().cloned().fold(f64::NEG_INFINITY, f64::max));
    }
    let mut acc = 0.0;
    let panel_cdf = panel_log_mass
        .iter()
        .map(|m| {
            acc += (m - lz).exp();
            acc
        })
        .collect::<Vec<_>>();
    let panel_cdf = panel_cdf.iter().map(|c| c / acc).collect();
    Ok(NormalisedDensity {
        model,
        norm: Normalisation { domain, log_z: lz, rel_err, converged, panels: p, evaluations },
        grid_panels: p,
        panel_cdf,
        panel_log_max,
    })
}

impl<K: DensityKernel, B: Backend> NormalisedDensity<K, B> {
    /// Wraps a model with a normalising constant computed elsewhere (e.g. stored in a file).
    /// Sampling is unavailable on such a density (no panel masses): [`Self::sample`] errors.
    pub fn from_parts(model: KernelStudentT<K, B>, norm: Normalisation) -> Result<Self, CoreError> {
        if norm.domain.dim() != model.dim() {
            return Err(CoreError::DimensionMismatch {
                what: "normalisation domain".into(),
                expected: model.dim(),
                found: norm.domain.dim(),
            });
        }
        if !norm.log_z.is_finite() {
            return Err(CoreError::NonFinite {
                what: "log normaliser".into(),
                row: 0,
                col: 0,
                value: norm.log_z,
            });
        }
        Ok(Self { model, norm, grid_panels: 0, panel_cdf: Vec::new(), panel_log_max: Vec::new() })
    }

    /// The unnormalised model.
    pub fn model(&self) -> &KernelStudentT<K, B> {
        &self.model
    }

    /// The normalisation (domain, `log Z`, accuracy).
    pub fn normalisation(&self) -> &Normalisation {
        &self.norm
    }

    /// `log p(x) = log q_k(x) − log Z_B` on the domain, `−∞` outside it.
    pub fn log_density(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        let lq = self.model.log_unnormalised(q)?;
        Ok(lq
            .into_iter()
            .enumerate()
            .map(
                |(i, v)| {
                    if self.norm.domain.contains(q.point(i)) {
                        v - self.norm.log_z
                    } else {
                        f64::NEG_INFINITY
                    }
                },
            )
            .collect())
    }

    /// `n` draws (seeded; the result does not depend on the thread count). See the module docs.
    pub fn sample(&self, n: usize, seed: u64) -> Result<Sample, CoreError> {
        if self.panel_cdf.is_empty() {
            return Err(CoreError::InvalidParameter {
                name: "sampling".into(),
                value: 0.0,
                reason: "this density was built from stored parts without panel masses; normalise it with \
                         `normalise` to sample"
                    .into(),
            });
        }
        let d = self.model.dim();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::with_capacity(n * d);
        let (mut proposals, mut violations, mut accepted) = (0, 0, 0);
        while accepted < n {
            let batch = (2 * (n - accepted)).max(64);
            let mut props = Vec::with_capacity(batch * d);
            let mut meta = Vec::with_capacity(batch);
            for _ in 0..batch {
                let u: f64 = rng.random();
                let c = self.panel_cdf.partition_point(|&v| v < u).min(self.panel_cdf.len() - 1);
                let (lo, w) = panel_box(&self.norm.domain, self.grid_panels, c);
                for k in 0..d {
                    props.push(lo[k] + w[k] * rng.random::<f64>());
                }
                meta.push((c, rng.random::<f64>()));
            }
            let pts = Points::new("proposals", props, d)?;
            let lq = self.model.log_unnormalised(&pts)?;
            proposals += batch;
            for (i, &(c, u)) in meta.iter().enumerate() {
                let log_env = self.panel_log_max[c] + std::f64::consts::LN_2;
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
}
