//! Normalisation of the kernel student-t density on the whole space by composite Gauss–Legendre
//! quadrature (1 and 2 dimensions): the box, its complement, a check that the rule resolved the
//! density, and sampling from the normalised density.
//!
//! **Box and tails.** For stationary kernels `q_k` has a positive floor at infinity (module docs of
//! [`super`]), so it is not integrable on `ℝ^d`. The box `B` (by default the data range widened by
//! `margin × range` on each side) holds the data; beyond it the density continues with the tail
//! weight `w` of `density::tails` (a Cauchy decay of the box's scale; `w = 1` for kernels whose `q_k`
//! decays by itself). The normalised density is
//!
//! ```text
//! p(x) = q_k(x) w(x) / Z,   Z = Z_B + Z_T,   Z_B = ∫_B q_k,   Z_T = ∫_{ℝ^d∖B} q_k w,   w = 1 on B,
//! ```
//!
//! so every finite point has a finite log density, `log q_k(x) + log w(x) − log Z` (seed 003 eq. (6)
//! with the weight). Model files written before the tails carry `Z_B` alone and keep their box-only
//! density (0 outside), as does a normaliser with [`NormaliseOptions::tails`] off (the density
//! truncated to the box, for data known to live in it).
//!
//! **Quadrature.** `B` is cut into `p` panels per dimension, each with an `order`-point Gauss–Legendre
//! rule (tensor product in 2-D), summed in log space. Starting from `min_panels` (fewer when the
//! first refinement of a wide box's graded rule would not fit the node budget), `p` doubles until
//! two successive estimates agree to `rel_tol` (and the check below passes) or the node budget is
//! spent. The complement is mapped to finite intervals (`density::tails`) and refined the same way,
//! from `min_panels/2^d` panels per segment, until its estimate moves by less than `rel_tol × Z_B`.
//! The reported `rel_err` is `(|Z_{B,2p} − Z_{B,p}| + |Z_{T,2p} − Z_{T,p}|)/Z`: an estimate of the
//! error of the *coarser* rules, hence conservative for the returned finer ones (Gauss–Legendre on
//! analytic integrands converges geometrically). The integrand is analytic for the SE,
//! rational-quadratic and polynomial kernels; for the Laplace and Matérn kernels it has kinks at the
//! data and convergence is algebraic (the estimate still holds).
//!
//! **Check.** Two rules that both miss a peak narrower than their node spacing agree with each
//! other, so agreement alone does not show accuracy. For a stationary kernel `Z_B` has a rigorous
//! lower bound from the densest point of the box (`density::bound`: the Lipschitz bound of
//! `√Q` in the feature space of seed 003 eq. (4)); the box rule is refined until its estimate is at
//! least that bound, and the normalisation fails, naming the cause, when the node budget is spent
//! first. [`Normalisation::log_z_lower_bound`] records the bound. A last refinement (of the box or
//! of the tails) that moved the estimate by as much as the box's integral leaves no correct digit;
//! such a normaliser is refused too, naming the cause. Short of that, a normaliser that missed
//! `rel_tol` within the budget is returned with `converged = false` and its `rel_err`.
//!
//! **Sampling.** A panel of the rules is chosen with probability equal to its quadrature mass, then
//! a point in it by rejection from the uniform distribution in the panel's mapped coordinates under
//! the flat envelope `2 × (largest nodal value of q_k × Jacobian in the panel)`. This is exact up to
//! the quadrature error of the panel masses, provided the envelope holds; draws where it does not
//! are counted in [`Sample::envelope_violations`].

use super::bound::LowerBound;
use super::domain::Domain;
use super::tails::Grid;
pub use super::tails::TailWeight;
use crate::numeric::log_sum_exp;
use crate::{CoreError, Points};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::f64::consts::LN_2;

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
    /// Continue the density beyond the box with its tails (module docs). Default `true`; `false`
    /// gives the density truncated to the box (0 outside), e.g. for data that live in a known box.
    pub tails: bool,
}

impl Default for NormaliseOptions {
    fn default() -> Self {
        Self { order: 8, min_panels: 16, max_nodes: 1 << 18, rel_tol: 1e-6, tails: true }
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
    /// The box.
    pub domain: Domain,
    /// `log Z`, the log normaliser of the density: `log (Z_B + Z_T)` on the whole space when `tail`
    /// is set (module docs), `log Z_B = log ∫_B q_k` for a box-only normaliser.
    pub log_z: f64,
    /// Estimated relative error of `Z` (the box's and the tails' estimates summed; conservative, see
    /// module docs); `∞` when the node budget allowed no refinement.
    pub rel_err: f64,
    /// Whether the box and the tails reached `rel_tol` (and the box rule its lower bound) within the
    /// node budget.
    pub converged: bool,
    /// Panels per dimension of the returned box rule on its core (the whole box when `core` is
    /// `None`; graded panels fill the rest of the box, `density::tails`).
    pub panels: usize,
    /// The core of the box rule (the data range widened by a quarter of the range, within the box);
    /// `None`: the rule is uniform on the box.
    pub core: Option<Domain>,
    /// Panels on the core of the first rule, whose graded pieces every refinement cuts
    /// (`density::tails`); `panels / base_panels` is a power of two.
    pub base_panels: usize,
    /// Gauss–Legendre nodes per panel and dimension of the rules.
    pub order: usize,
    /// Density evaluations spent in total.
    pub evaluations: usize,
    /// The density beyond the box; `None` for a box-only normaliser (model files written before the
    /// tails): the density is then 0 outside the box.
    pub tail: Option<Tail>,
    /// The rigorous lower bound on `log Z_B` the box rule was checked against (stationary kernels;
    /// module docs).
    pub log_z_lower_bound: Option<f64>,
}

/// The part of a normaliser beyond the box (module docs of `density::normalise`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tail {
    /// How the density continues beyond the box.
    pub weight: TailWeight,
    /// Panels per tail segment (and per axis of the cells beside the box) of the returned rule.
    pub panels: usize,
    /// `log Z_T = log ∫_{ℝ^d∖B} q_k w`.
    pub log_z: f64,
}

impl Normalisation {
    /// `log Z_B`, the log of the part of the normaliser on the box.
    pub fn log_z_box(&self) -> f64 {
        match &self.tail {
            Some(t) => self.log_z + (-(t.log_z - self.log_z).exp()).ln_1p(),
            None => self.log_z,
        }
    }

    /// The probability of the complement of the box, `Z_T/Z` (0 for a box-only normaliser).
    pub fn tail_mass(&self) -> f64 {
        self.tail.map_or(0.0, |t| (t.log_z - self.log_z).exp())
    }

    /// `log p(x) − log q_k(x)` at `x`: `log w(x) − log Z` (`−∞` outside the box of a box-only
    /// normaliser).
    pub fn log_offset(&self, x: &[f64]) -> f64 {
        if self.domain.contains(x) {
            return -self.log_z;
        }
        match &self.tail {
            Some(t) => t.weight.log_weight(&self.domain, x) - self.log_z,
            None => f64::NEG_INFINITY,
        }
    }

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
        if let Some(c) = &self.core {
            let c = Domain::new(c.lower.clone(), c.upper.clone())?;
            let inside = (0..c.dim().min(dim))
                .all(|k| c.lower[k] >= self.domain.lower[k] && c.upper[k] <= self.domain.upper[k]);
            if c.dim() != dim || !inside {
                return Err(CoreError::InvalidChoice {
                    what: "normalisation.core".into(),
                    reason: "the core of the rule must be a box of the data's dimension inside the box"
                        .into(),
                });
            }
        }
        if let Some(t) = &self.tail {
            if !t.log_z.is_finite() || t.panels == 0 {
                return Err(CoreError::InvalidParameter {
                    name: "normalisation.tail".into(),
                    value: t.log_z,
                    reason: "the tail's log normaliser must be finite, with at least one panel".into(),
                });
            }
        }
        if !(self.rel_err >= 0.0) || self.panels == 0 || !(1..=64).contains(&self.order) {
            return Err(CoreError::InvalidParameter {
                name: "normaliser error estimate / panels / order".into(),
                value: self.rel_err,
                reason: "need rel_err ≥ 0, at least one panel and a quadrature order in 1..=64".into(),
            });
        }
        let ratio = self.panels / self.base_panels.max(1);
        if self.base_panels == 0 || self.panels % self.base_panels != 0 || !ratio.is_power_of_two() {
            return Err(CoreError::InvalidParameter {
                name: "normalisation.base_panels".into(),
                value: self.base_panels as f64,
                reason: format!("panels ({}) must be base_panels times a power of two", self.panels),
            });
        }
        // The rules are rebuilt when the density is sampled: a file cannot ask for more nodes than
        // a normaliser is allowed to spend.
        let (core, order) = (self.core.as_ref(), self.order);
        let nodes = [
            Grid::count(&self.domain, core, self.base_panels, self.panels, order),
            self.tail.map_or(0, |t| {
                let tb = tail_base(self.base_panels, dim);
                Grid::tail_count(&self.domain, core, tb, t.panels, order)
            }),
        ];
        if nodes.iter().any(|&n| n > MAX_FILE_NODES) {
            return Err(CoreError::InvalidParameter {
                name: "normalisation.panels".into(),
                value: self.panels as f64,
                reason: format!(
                    "the rules would have {nodes:?} nodes (box, tails), above {MAX_FILE_NODES}; the file is \
                     corrupt: refit the model"
                ),
            });
        }
        Ok(())
    }
}

/// The most nodes a rule read from a model file may have (16 × the default node budget).
const MAX_FILE_NODES: usize = 1 << 22;

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

/// The check of the box rule against the rigorous lower bound of `density::bound` (stationary
/// kernels): the bound, the model's `γ`, exponent `e = (1+N+α)/2` and `σ₀²`, and the largest
/// `log q_k` at the training points inside the box.
pub(super) struct BoundCheck {
    pub bound: LowerBound,
    pub gamma: f64,
    pub exponent: f64,
    pub sigma0_sq: f64,
    pub data_log_q_max: f64,
}

impl BoundCheck {
    /// `Q` from `log q_k = −e log(γ + Q)`.
    fn q_of(&self, log_q: f64) -> f64 {
        (-log_q / self.exponent).exp() - self.gamma
    }

    /// The bound from the densest of the training points and the nodes `lq` (all in the box).
    fn log_bound(&self, lq: &[f64]) -> f64 {
        let top = lq.iter().copied().fold(self.data_log_q_max, f64::max);
        self.bound.log_bound(self.q_of(top), self.gamma, self.exponent, self.sigma0_sq)
    }
}

/// The normalising constant of the `d`-dimensional density `q` on the whole space: the box `domain`
/// by the adaptive composite Gauss–Legendre rule of the module docs (checked against `check` when
/// given), plus the complement with the tail weight `tail` (`density::tails`). Errors for `d > 2`,
/// on invalid options, a domain of the wrong dimension, or a box rule that stays below the bound of
/// `check` when the node budget is spent.
#[allow(clippy::too_many_arguments)]
pub(super) fn normalise(
    log_q: &LogQ,
    d: usize,
    domain: Domain,
    core: Option<Domain>,
    opts: &NormaliseOptions,
    tail: TailWeight,
    check: Option<&BoundCheck>,
) -> Result<Normalisation, CoreError> {
    opts.check()?;
    if domain.dim() != d {
        return Err(CoreError::DimensionMismatch {
            what: "normalisation domain".into(),
            expected: d,
            found: domain.dim(),
        });
    }
    // The first rules: `min_panels` on the core, halved while a refinement of the box's or the tails'
    // rule would not fit the node budget (a wide box's graded panels), so that the error is always
    // estimated.
    let count = |base: usize, p: usize| Grid::count(&domain, core.as_ref(), base, p, opts.order);
    let tail_count = |base: usize| {
        let tb = tail_base(base, d);
        if opts.tails { Grid::tail_count(&domain, core.as_ref(), tb, 2 * tb, opts.order) } else { 0 }
    };
    let mut base = opts.min_panels;
    while base > 1 && (count(base, 2 * base) > opts.max_nodes || tail_count(base) > opts.max_nodes) {
        base /= 2;
    }
    let nodes_for = |p: usize| count(base, p);
    let mut p = base;
    let grid = Grid::new(&domain, core.as_ref(), base, p, opts.order)?;
    let (mut lz, mut lq) = integrate(log_q, &grid)?;
    let mut evaluations = grid.nodes.len();
    let mut rel_err = f64::INFINITY;
    // |log| of the last refinement's change of the estimate.
    let mut box_move = 0.0;
    let mut converged = false;
    let admitted = |lz: f64, lq: &[f64]| check.is_none_or(|c| lz >= c.log_bound(lq));
    while nodes_for(2 * p) <= opts.max_nodes {
        let grid2 = Grid::new(&domain, core.as_ref(), base, 2 * p, opts.order)?;
        let (lz2, lq2) = integrate(log_q, &grid2)?;
        evaluations += grid2.nodes.len();
        rel_err = (lz2 - lz).exp_m1().abs();
        box_move = (lz2 - lz).abs();
        p *= 2;
        (lz, lq) = (lz2, lq2);
        if rel_err <= opts.rel_tol && admitted(lz, &lq) {
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
    let log_z_lower_bound = check.map(|c| c.log_bound(&lq));
    if let Some(lb) = log_z_lower_bound.filter(|lb| lz < *lb) {
        let fine = core.as_ref().unwrap_or(&domain);
        let spacing: Vec<String> = (0..d)
            .map(|k| format!("{:.3e}", (fine.upper[k] - fine.lower[k]) / (p * opts.order) as f64))
            .collect();
        return Err(CoreError::InvalidChoice {
            what: "normalising the density on its box".into(),
            reason: format!(
                "the quadrature does not resolve the density: with {p} panels of {} nodes per dimension \
                 (spacing {}, the node budget) its estimate log Z = {lz:.6e} is below the rigorous lower \
                 bound {lb:.6e} on the mass around the densest point, so the density's peaks are \
                 narrower than the nodes are apart; narrow the box (a smaller margin), or choose a larger \
                 sigma0_sq or a smaller alpha (flatter peaks)",
                opts.order,
                spacing.join(" × ")
            ),
        });
    }
    if !(box_move < LN_2) {
        return Err(no_digit("box", box_move, p, opts.order));
    }
    if !opts.tails {
        return Ok(Normalisation {
            domain,
            log_z: lz,
            rel_err,
            converged,
            panels: p,
            core,
            base_panels: base,
            order: opts.order,
            evaluations,
            tail: None,
            log_z_lower_bound,
        });
    }
    // The complement of the box, to the box's relative tolerance.
    let pt0 = tail_base(base, d);
    let tail_nodes_for = |p: usize| Grid::tail_count(&domain, core.as_ref(), pt0, p, opts.order);
    let mut pt = pt0;
    let tgrid = Grid::tails(&domain, core.as_ref(), pt0, pt, opts.order, tail)?;
    let (mut lt, _) = integrate(log_q, &tgrid)?;
    evaluations += tgrid.nodes.len();
    let (mut tail_err, mut tail_move) = (f64::INFINITY, 0.0);
    while tail_nodes_for(2 * pt) <= opts.max_nodes {
        let grid2 = Grid::tails(&domain, core.as_ref(), pt0, 2 * pt, opts.order, tail)?;
        let (lt2, _) = integrate(log_q, &grid2)?;
        evaluations += grid2.nodes.len();
        // Relative to the box's integral.
        tail_err = ((lt2 - lz).exp() - (lt - lz).exp()).abs();
        tail_move = (log_sum_exp(&[lz, lt2]) - log_sum_exp(&[lz, lt])).abs();
        pt *= 2;
        lt = lt2;
        if tail_err <= opts.rel_tol {
            break;
        }
    }
    if !(tail_move < LN_2) {
        return Err(no_digit("tails", tail_move, p, opts.order));
    }
    let total = log_sum_exp(&[lz, lt]);
    Ok(Normalisation {
        domain,
        log_z: total,
        rel_err: (rel_err + tail_err) * (lz - total).exp(),
        converged: converged && tail_err <= opts.rel_tol,
        panels: p,
        core,
        base_panels: base,
        order: opts.order,
        evaluations,
        tail: Some(Tail { weight: tail, panels: pt, log_z: lt }),
        log_z_lower_bound,
    })
}

/// The panels per tail segment of the first tail rule, for `base` panels on the box's core.
pub(super) fn tail_base(base: usize, d: usize) -> usize {
    (base / 2usize.pow(d as u32)).max(1)
}

/// The refusal of a normaliser whose last refinement (of the `part`) changed it by a factor of
/// `exp(log_move)` ≥ 2: the estimate has no correct digit.
fn no_digit(part: &str, log_move: f64, p: usize, order: usize) -> CoreError {
    CoreError::InvalidChoice {
        what: "normalising the density on its box".into(),
        reason: format!(
            "the quadrature does not resolve the density: refining the rule of the {part} changed the estimate \
             of the normaliser by a factor of {:.2e} (within the node budget, {p} panels of {order} nodes per \
             dimension on the box), so the estimate has no correct digit; narrow the box (a smaller margin), \
             or choose a larger lengthscale, a larger sigma0_sq or a smaller alpha (a smoother density)",
            log_move.exp()
        ),
    }
}

/// The rules of a normaliser: its box rule, and its tail rule when it has one.
fn rules(norm: &Normalisation) -> Result<Vec<Grid>, CoreError> {
    let (core, base) = (norm.core.as_ref(), norm.base_panels);
    let mut out = vec![Grid::new(&norm.domain, core, base, norm.panels, norm.order)?];
    if let Some(t) = &norm.tail {
        let tb = tail_base(base, norm.domain.dim());
        out.push(Grid::tails(&norm.domain, core, tb, t.panels, norm.order, t.weight)?);
    }
    Ok(out)
}

/// `n` draws from the `d`-dimensional density `q` normalised by `norm` (seeded; the result does not
/// depend on the thread count): a panel of the normaliser's rules (box, then tails) is chosen with
/// probability equal to its quadrature mass (one pass of the rules), then a point in it by rejection
/// in the panel's mapped coordinates (module docs).
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
    // Per panel (over the rules): its rule, index, log mass and log envelope.
    let (mut panels, mut log_mass, mut panel_log_max) = (Vec::new(), Vec::new(), Vec::new());
    let grids = rules(norm)?;
    for (g, grid) in grids.iter().enumerate() {
        let lq = log_q(&grid.nodes)?;
        for c in 0..grid.nodes.len() / grid.per_panel {
            let r = c * grid.per_panel..(c + 1) * grid.per_panel;
            let terms: Vec<f64> =
                lq[r.clone()].iter().zip(&grid.log_weights[r.clone()]).map(|(a, b)| a + b).collect();
            log_mass.push(log_sum_exp(&terms));
            panel_log_max.push(
                lq[r.clone()]
                    .iter()
                    .zip(&grid.log_jac[r])
                    .map(|(a, j)| a + j)
                    .fold(f64::NEG_INFINITY, f64::max),
            );
            panels.push((g, c));
        }
    }
    let lz = log_sum_exp(&log_mass);
    let npanels = panels.len();
    let mut cdf = Vec::with_capacity(npanels);
    let mut acc = 0.0;
    for lm in &log_mass {
        acc += (lm - lz).exp();
        cdf.push(acc);
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
            let us: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
            let (g, pc) = panels[c];
            let (x, lj) = grids[g].draw(pc, &us, &norm.domain);
            props.extend(x);
            meta.push((c, lj, rng.random::<f64>()));
        }
        let pts = Points::new("proposals", props, d)?;
        let lq = log_q(&pts)?;
        proposals += batch;
        for (i, &(c, lj, u)) in meta.iter().enumerate() {
            let log_env = panel_log_max[c] + LN_2;
            let ratio = (lq[i] + lj - log_env).exp();
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
