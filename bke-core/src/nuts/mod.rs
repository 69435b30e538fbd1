//! The No-U-Turn Sampler (Hoffman & Gelman 2014) in the form Stan uses (Betancourt 2017,
//! "A Conceptual Introduction to Hamiltonian Monte Carlo", §A.4–A.5): multinomial sampling of the
//! trajectory, the generalised no-U-turn criterion with the additional checks across merged
//! subtrees, dual-averaging step-size adaptation and a windowed diagonal metric during warmup, and
//! divergence detection. Several chains run in parallel (rayon); chain `c` draws its randomness from
//! its own ChaCha8 stream (`seed`, stream `c`), so the draws do not depend on the thread count.
//!
//! # The sampler
//! Target: a density `π(q)` on `ℝ^d` given through [`LogDensity`] (`log π` and its gradient).
//! Hamiltonian `H(q, p) = −log π(q) + ½ pᵀ M⁻¹ p` with a diagonal inverse metric `M⁻¹` (the
//! estimated posterior variances after warmup); momenta `p ~ N(0, M)`; leapfrog steps
//! `p ← p + ½ε ∇log π(q)`, `q ← q + ε M⁻¹ p`, `p ← p + ½ε ∇log π(q)`.
//!
//! Each transition doubles a trajectory in a random direction until (a) the generalised U-turn
//! criterion `p♯₋ · ρ > 0 and p♯₊ · ρ > 0` fails for the whole trajectory or for any subtree
//! (`ρ` = sum of the momenta, `p♯ = M⁻¹ p` at the two ends), also checked across the seam of every
//! merged pair of subtrees, (b) the maximum tree depth is reached, or (c) the energy error
//! `H − H₀` exceeds [`NutsParams::max_energy_error`] (a *divergence*; evaluations that fail or
//! give a non-finite value count as `H = ∞`). The next state is drawn from the trajectory with
//! weights `exp(H₀ − H)`: uniformly-progressive within subtrees and biased-progressive (favouring the
//! new half) when a subtree is merged into the trajectory. The acceptance statistic fed to the
//! step-size adaptation is the mean of `min(1, exp(H₀ − H))` over the new states.
//!
//! # Example
//! ```
//! use bke_core::nuts::{LogDensity, NutsParams, sample};
//! use bke_core::CoreError;
//! /// A standard normal in two dimensions.
//! struct StdNormal;
//! impl LogDensity for StdNormal {
//!     fn dim(&self) -> usize { 2 }
//!     fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
//!         grad.iter_mut().zip(q).for_each(|(g, x)| *g = -x);
//!         Ok(-0.5 * q.iter().map(|x| x * x).sum::<f64>())
//!     }
//! }
//! let params = NutsParams { warmup: 200, draws: 200, seed: 1, ..NutsParams::default() };
//! let out = sample(&StdNormal, &params).unwrap();
//! let s = out.summary(0);
//! assert!(s.mean.abs() < 0.2 && (s.sd - 1.0).abs() < 0.2 && s.rhat < 1.05);
//! ```

mod adapt;
pub mod diagnostics;

pub use diagnostics::Summary;

use crate::CoreError;
use adapt::{DualAveraging, WindowedVariance};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;

/// A log density on `ℝ^d` with its gradient: the target of [`sample`].
///
/// Implementations are shared by the chains running in parallel (hence `Sync`).
pub trait LogDensity: Sync {
    /// The dimension `d`.
    fn dim(&self) -> usize;

    /// Returns `log π(q)` (up to an additive constant) and writes `∇ log π(q)` into `grad`
    /// (`grad.len() == q.len() == dim()`).
    ///
    /// An error, or a non-finite value or gradient, marks `q` as outside the support: during sampling
    /// the trajectory ends there as a divergence; during initialisation the point is rejected, and the
    /// error is reported if no acceptable initial point is found.
    fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError>;
}

/// Settings of [`sample`]. Defaults follow Stan.
#[derive(Debug, Clone, PartialEq)]
pub struct NutsParams {
    /// Number of chains (default 4), run in parallel.
    pub chains: usize,
    /// Warmup (adaptation) iterations per chain, discarded (default 1000).
    pub warmup: usize,
    /// Draws kept per chain after warmup (default 1000).
    pub draws: usize,
    /// Seed; chain `c` uses ChaCha8 stream `c` of it (default 0).
    pub seed: u64,
    /// Maximum tree depth: at most `2^max_depth − 1` leapfrog steps per transition (default 10).
    pub max_depth: usize,
    /// Target mean acceptance statistic of the step-size adaptation, in (0, 1) (default 0.8).
    pub target_accept: f64,
    /// Energy error `H − H₀` beyond which a trajectory is divergent (default 1000).
    pub max_energy_error: f64,
    /// Step size before adaptation (default 1; refined by a doubling/halving search first).
    pub initial_step_size: f64,
    /// Adapt a diagonal metric during warmup (default true; otherwise the identity is used).
    pub adapt_metric: bool,
    /// Initial fast buffer of the metric adaptation (default 75 iterations).
    pub init_buffer: usize,
    /// First slow window of the metric adaptation (default 25 iterations, doubling).
    pub base_window: usize,
    /// Terminal fast buffer of the metric adaptation (default 50 iterations).
    pub term_buffer: usize,
    /// Random initial values are uniform on `(−init_radius, init_radius)^d` (default 2).
    pub init_radius: f64,
    /// Random initial points tried per chain before giving up (default 100).
    pub init_attempts: usize,
}

impl Default for NutsParams {
    fn default() -> Self {
        Self {
            chains: 4,
            warmup: 1000,
            draws: 1000,
            seed: 0,
            max_depth: 10,
            target_accept: 0.8,
            max_energy_error: 1000.0,
            initial_step_size: 1.0,
            adapt_metric: true,
            init_buffer: 75,
            base_window: 25,
            term_buffer: 50,
            init_radius: 2.0,
            init_attempts: 100,
        }
    }
}

impl NutsParams {
    /// Validates the settings.
    pub fn check(&self) -> Result<(), CoreError> {
        let bad = |name: &str, value: f64, reason: &str| {
            Err(CoreError::InvalidParameter { name: name.into(), value, reason: reason.into() })
        };
        if self.chains == 0 {
            return bad("chains", 0.0, "at least one chain is needed (4 or more to judge convergence)");
        }
        if self.draws == 0 {
            return bad("draws", 0.0, "at least one draw per chain is needed");
        }
        if self.max_depth == 0 || self.max_depth > 30 {
            return bad("max_depth", self.max_depth as f64, "must be between 1 and 30");
        }
        if !(self.target_accept > 0.0 && self.target_accept < 1.0) {
            return bad("target_accept", self.target_accept, "must lie strictly between 0 and 1");
        }
        crate::check_positive("max_energy_error", self.max_energy_error)?;
        crate::check_positive("initial_step_size", self.initial_step_size)?;
        crate::check_positive("init_radius", self.init_radius)?;
        if self.init_attempts == 0 {
            return bad("init_attempts", 0.0, "at least one attempt is needed");
        }
        Ok(())
    }
}

/// The draws and sampler statistics of one chain (after warmup).
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// Draws, row-major `draws × dim`.
    pub draws: Vec<f64>,
    /// `log π` at each draw.
    pub log_density: Vec<f64>,
    /// Mean Metropolis acceptance statistic of each transition.
    pub accept_stat: Vec<f64>,
    /// Tree depth of each transition.
    pub tree_depth: Vec<usize>,
    /// Leapfrog steps of each transition.
    pub n_leapfrog: Vec<usize>,
    /// Whether each transition diverged.
    pub divergent: Vec<bool>,
    /// Hamiltonian `H(q, p)` of each draw (for the E-BFMI diagnostic).
    pub energy: Vec<f64>,
    /// Divergent transitions during warmup.
    pub warmup_divergences: usize,
    /// Step size after adaptation.
    pub step_size: f64,
    /// Diagonal inverse metric after adaptation.
    pub inv_metric: Vec<f64>,
    /// The initial point of the chain.
    pub init: Vec<f64>,
}

/// The output of [`sample`]: one [`Chain`] per chain.
#[derive(Debug, Clone, PartialEq)]
pub struct NutsOutput {
    /// Dimension of the target.
    pub dim: usize,
    /// The chains, in chain order.
    pub chains: Vec<Chain>,
}

impl NutsOutput {
    /// Draws per chain.
    pub fn draws_per_chain(&self) -> usize {
        self.chains.first().map_or(0, |c| c.log_density.len())
    }

    /// Coordinate `j` of every draw, one vector per chain.
    pub fn coordinate(&self, j: usize) -> Vec<Vec<f64>> {
        self.chains.iter().map(|c| c.draws.iter().skip(j).step_by(self.dim).copied().collect()).collect()
    }

    /// A function of the draws, one vector per chain.
    pub fn map_draws(&self, f: impl Fn(&[f64]) -> f64) -> Vec<Vec<f64>> {
        self.chains.iter().map(|c| c.draws.chunks(self.dim).map(&f).collect()).collect()
    }

    /// Summary (mean, sd, quantiles, R̂, ESS) of coordinate `j`.
    pub fn summary(&self, j: usize) -> Summary {
        let cols = self.coordinate(j);
        let refs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        Summary::new(&refs)
    }

    /// Divergent transitions after warmup, over all chains.
    pub fn divergences(&self) -> usize {
        self.chains.iter().map(|c| c.divergent.iter().filter(|&&d| d).count()).sum()
    }

    /// Energy Bayesian fraction of missing information of each chain (Betancourt 2016):
    /// `Σ (E_t − E_{t−1})² / Σ (E_t − Ē)²`; values below 0.3 suggest the momentum resampling
    /// cannot explore the energy distribution (heavy tails, funnels).
    pub fn e_bfmi(&self) -> Vec<f64> {
        self.chains
            .iter()
            .map(|c| {
                let e = &c.energy;
                let mean = e.iter().sum::<f64>() / e.len() as f64;
                let num: f64 = e.windows(2).map(|w| (w[1] - w[0]) * (w[1] - w[0])).sum();
                let den: f64 = e.iter().map(|v| (v - mean) * (v - mean)).sum();
                num / den
            })
            .collect()
    }

    /// Transitions after warmup that stopped at the maximum tree depth `max_depth`.
    pub fn max_depth_hits(&self, max_depth: usize) -> usize {
        self.chains.iter().map(|c| c.tree_depth.iter().filter(|&&d| d >= max_depth).count()).sum()
    }
}

/// Runs NUTS on `model` with `params` (no progress reporting, random initial values).
pub fn sample<M: LogDensity + ?Sized>(model: &M, params: &NutsParams) -> Result<NutsOutput, CoreError> {
    sample_with(model, params, None, &|| {})
}

/// Runs NUTS: `inits` (one point per chain) replaces the random initial values, and `progress` is
/// called once per iteration (warmup and sampling) of every chain, from the worker threads.
pub fn sample_with<M: LogDensity + ?Sized>(
    model: &M,
    params: &NutsParams,
    inits: Option<&[Vec<f64>]>,
    progress: &(dyn Fn() + Sync),
) -> Result<NutsOutput, CoreError> {
    params.check()?;
    let dim = model.dim();
    if dim == 0 {
        return Err(CoreError::InvalidParameter {
            name: "dimension of the target".into(),
            value: 0.0,
            reason: "NUTS needs at least one parameter".into(),
        });
    }
    if let Some(inits) = inits {
        if inits.len() != params.chains {
            return Err(CoreError::DimensionMismatch {
                what: "initial values (number of chains)".into(),
                expected: params.chains,
                found: inits.len(),
            });
        }
        for (c, init) in inits.iter().enumerate() {
            if init.len() != dim {
                return Err(CoreError::DimensionMismatch {
                    what: format!("initial value of chain {c}"),
                    expected: dim,
                    found: init.len(),
                });
            }
        }
    }
    let chains = (0..params.chains)
        .into_par_iter()
        .map(|c| run_chain(model, params, c, inits.map(|i| i[c].as_slice()), progress))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(NutsOutput { dim, chains })
}

/// A point in phase space with the log density and its gradient at `q`.
#[derive(Debug, Clone)]
struct PsPoint {
    q: Vec<f64>,
    p: Vec<f64>,
    grad: Vec<f64>,
    logp: f64,
}

impl PsPoint {
    fn new(dim: usize) -> Self {
        Self { q: vec![0.0; dim], p: vec![0.0; dim], grad: vec![0.0; dim], logp: 0.0 }
    }

    fn copy_from(&mut self, o: &PsPoint) {
        self.q.copy_from_slice(&o.q);
        self.p.copy_from_slice(&o.p);
        self.grad.copy_from_slice(&o.grad);
        self.logp = o.logp;
    }
}

/// Per-depth scratch of the tree recursion, allocated once per chain.
#[derive(Debug, Clone)]
struct Level {
    p_sharp_init_end: Vec<f64>,
    p_init_end: Vec<f64>,
    rho_init: Vec<f64>,
    p_sharp_final_beg: Vec<f64>,
    p_final_beg: Vec<f64>,
    rho_final: Vec<f64>,
    rho_ext: Vec<f64>,
    z_propose_final: PsPoint,
}

impl Level {
    fn new(dim: usize) -> Self {
        let z = || vec![0.0; dim];
        Self {
            p_sharp_init_end: z(),
            p_init_end: z(),
            rho_init: z(),
            p_sharp_final_beg: z(),
            p_final_beg: z(),
            rho_final: z(),
            rho_ext: z(),
            z_propose_final: PsPoint::new(dim),
        }
    }
}

/// Evaluates the model at `z.q` into `z.logp`/`z.grad`; failures give `logp = −∞`.
fn evaluate<M: LogDensity + ?Sized>(model: &M, z: &mut PsPoint) -> Result<(), CoreError> {
    match model.log_density_grad(&z.q, &mut z.grad) {
        Ok(lp) if lp.is_finite() && z.grad.iter().all(|g| g.is_finite()) => {
            z.logp = lp;
            Ok(())
        }
        Ok(lp) => {
            z.logp = f64::NEG_INFINITY;
            Err(CoreError::InvalidParameter {
                name: "log density".into(),
                value: lp,
                reason: if lp.is_finite() {
                    "the gradient is not finite".into()
                } else {
                    "the log density is not finite".into()
                },
            })
        }
        Err(e) => {
            z.logp = f64::NEG_INFINITY;
            Err(e)
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The generalised no-U-turn criterion: `p♯₋·ρ > 0 and p♯₊·ρ > 0`.
fn criterion(p_sharp_minus: &[f64], p_sharp_plus: &[f64], rho: &[f64]) -> bool {
    dot(p_sharp_plus, rho) > 0.0 && dot(p_sharp_minus, rho) > 0.0
}

fn log_sum_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// The statistics of one transition.
#[derive(Debug, Clone, Copy)]
struct TransitionStats {
    accept_stat: f64,
    depth: usize,
    n_leapfrog: usize,
    divergent: bool,
    /// `H` of the new draw with its momentum.
    energy: f64,
}

/// The integrator and tree builder of one chain: step size, metric, RNG and transition counters.
struct Tree<'m, M: LogDensity + ?Sized> {
    model: &'m M,
    dim: usize,
    eps: f64,
    inv_metric: Vec<f64>,
    max_energy_error: f64,
    rng: ChaCha8Rng,
    n_leapfrog: usize,
    sum_metro_prob: f64,
    divergent: bool,
}

/// Mutable references to the outputs of one `build_tree` call.
struct TreeOut<'a> {
    z_propose: &'a mut PsPoint,
    p_sharp_beg: &'a mut [f64],
    p_sharp_end: &'a mut [f64],
    rho: &'a mut [f64],
    p_beg: &'a mut [f64],
    p_end: &'a mut [f64],
}

impl<M: LogDensity + ?Sized> Tree<'_, M> {
    /// The Hamiltonian `−log π(q) + ½ pᵀ M⁻¹ p`; ∞ where the log density failed.
    fn hamiltonian(&self, z: &PsPoint) -> f64 {
        let kinetic = 0.5 * z.p.iter().zip(&self.inv_metric).map(|(p, m)| m * p * p).sum::<f64>();
        let h = -z.logp + kinetic;
        if h.is_nan() { f64::INFINITY } else { h }
    }

    /// Draws `p ~ N(0, M)`.
    fn sample_momentum(&mut self, z: &mut PsPoint) {
        for (p, m) in z.p.iter_mut().zip(&self.inv_metric) {
            let n: f64 = self.rng.sample(StandardNormal);
            *p = n / m.sqrt();
        }
    }

    /// One leapfrog step of size `eps` (negative: backwards in time).
    fn leapfrog(&self, z: &mut PsPoint, eps: f64) {
        for i in 0..self.dim {
            z.p[i] += 0.5 * eps * z.grad[i];
            z.q[i] += eps * self.inv_metric[i] * z.p[i];
        }
        if evaluate(self.model, z).is_ok() {
            for i in 0..self.dim {
                z.p[i] += 0.5 * eps * z.grad[i];
            }
        }
    }

    /// Stan's step-size heuristic: from the current `ε`, double (or halve) it until the acceptance
    /// probability `exp(H₀ − H)` of one leapfrog step from `z` (fresh momentum each time) crosses 0.8.
    /// `z` is left unchanged.
    fn init_step_size(&mut self, z: &mut PsPoint) -> Result<(), CoreError> {
        let z_init = z.clone();
        let log08 = 0.8f64.ln();
        let mut direction = 0i32;
        let result = loop {
            z.copy_from(&z_init);
            self.sample_momentum(z);
            let h0 = self.hamiltonian(z);
            self.leapfrog(z, self.eps);
            let delta = h0 - self.hamiltonian(z);
            if direction == 0 {
                direction = if delta > log08 { 1 } else { -1 };
                continue;
            }
            if (direction == 1 && !(delta > log08)) || (direction == -1 && !(delta < log08)) {
                break Ok(());
            }
            self.eps = if direction == 1 { 2.0 * self.eps } else { 0.5 * self.eps };
            if self.eps > 1e7 {
                break Err(CoreError::Sampler(
                    "the step size grew beyond 1e7 while searching for an acceptable one: the posterior is \
                     probably improper (too flat); add or tighten the priors"
                        .into(),
                ));
            }
            if self.eps < 1e-300 {
                break Err(CoreError::Sampler(
                    "no acceptably small step size could be found: the log density is probably not \
                     continuous, or its gradient is wrong"
                        .into(),
                ));
            }
        };
        z.copy_from(&z_init);
        result
    }

    /// Builds a subtree of `2^depth` leapfrog steps from `z` in direction `sign`; returns whether it is
    /// valid (no divergence, no U-turn inside). `levels` holds the scratch of depths `1..=depth`.
    #[allow(clippy::too_many_arguments)]
    fn build_tree(
        &mut self,
        depth: usize,
        levels: &mut [Level],
        z: &mut PsPoint,
        out: TreeOut<'_>,
        h0: f64,
        sign: f64,
        log_sum_weight: &mut f64,
    ) -> bool {
        if depth == 0 {
            self.leapfrog(z, sign * self.eps);
            self.n_leapfrog += 1;
            let h = self.hamiltonian(z);
            if h - h0 > self.max_energy_error {
                self.divergent = true;
            }
            *log_sum_weight = log_sum_exp(*log_sum_weight, h0 - h);
            self.sum_metro_prob += if h0 - h > 0.0 { 1.0 } else { (h0 - h).exp() };
            out.z_propose.copy_from(z);
            for i in 0..self.dim {
                let ps = self.inv_metric[i] * z.p[i];
                out.p_sharp_beg[i] = ps;
                out.p_sharp_end[i] = ps;
                out.rho[i] += z.p[i];
                out.p_beg[i] = z.p[i];
                out.p_end[i] = z.p[i];
            }
            return !self.divergent;
        }
        let (lvl, lower) = levels.split_last_mut().expect("levels has `depth` entries");
        // The initial subtree.
        let mut log_sum_weight_init = f64::NEG_INFINITY;
        lvl.rho_init.iter_mut().for_each(|v| *v = 0.0);
        let valid_init = self.build_tree(
            depth - 1,
            lower,
            z,
            TreeOut {
                z_propose: out.z_propose,
                p_sharp_beg: out.p_sharp_beg,
                p_sharp_end: &mut lvl.p_sharp_init_end,
                rho: &mut lvl.rho_init,
                p_beg: out.p_beg,
                p_end: &mut lvl.p_init_end,
            },
            h0,
            sign,
            &mut log_sum_weight_init,
        );
        if !valid_init {
            return false;
        }
        // The final subtree.
        let mut log_sum_weight_final = f64::NEG_INFINITY;
        lvl.rho_final.iter_mut().for_each(|v| *v = 0.0);
        let valid_final = self.build_tree(
            depth - 1,
            lower,
            z,
            TreeOut {
                z_propose: &mut lvl.z_propose_final,
                p_sharp_beg: &mut lvl.p_sharp_final_beg,
                p_sharp_end: out.p_sharp_end,
                rho: &mut lvl.rho_final,
                p_beg: &mut lvl.p_final_beg,
                p_end: out.p_end,
            },
            h0,
            sign,
            &mut log_sum_weight_final,
        );
        if !valid_final {
            return false;
        }
        // Uniform progressive sampling between the two halves.
        let log_sum_weight_subtree = log_sum_exp(log_sum_weight_init, log_sum_weight_final);
        *log_sum_weight = log_sum_exp(*log_sum_weight, log_sum_weight_subtree);
        if log_sum_weight_final > log_sum_weight_subtree {
            out.z_propose.copy_from(&lvl.z_propose_final);
        } else {
            let accept = (log_sum_weight_final - log_sum_weight_subtree).exp();
            if self.rng.random::<f64>() < accept {
                out.z_propose.copy_from(&lvl.z_propose_final);
            }
        }
        // ρ of the subtree, added to the caller's running sum; the U-turn criterion over the subtree
        // and across the seam between its halves.
        for i in 0..self.dim {
            let r = lvl.rho_init[i] + lvl.rho_final[i];
            out.rho[i] += r;
            lvl.rho_ext[i] = r;
        }
        let mut persist = criterion(out.p_sharp_beg, out.p_sharp_end, &lvl.rho_ext);
        for i in 0..self.dim {
            lvl.rho_ext[i] = lvl.rho_init[i] + lvl.p_final_beg[i];
        }
        persist &= criterion(out.p_sharp_beg, &lvl.p_sharp_final_beg, &lvl.rho_ext);
        for i in 0..self.dim {
            lvl.rho_ext[i] = lvl.rho_final[i] + lvl.p_init_end[i];
        }
        persist &= criterion(&lvl.p_sharp_init_end, out.p_sharp_end, &lvl.rho_ext);
        persist
    }
}

/// The state of one chain: the tree builder, the current state and the trajectory buffers.
struct Sampler<'m, M: LogDensity + ?Sized> {
    tree: Tree<'m, M>,
    max_depth: usize,
    /// The integrator's moving point.
    z: PsPoint,
    /// The current state (the last draw).
    z_sample: PsPoint,
    z_fwd: PsPoint,
    z_bck: PsPoint,
    z_propose: PsPoint,
    p_fwd_fwd: Vec<f64>,
    p_sharp_fwd_fwd: Vec<f64>,
    p_fwd_bck: Vec<f64>,
    p_sharp_fwd_bck: Vec<f64>,
    p_bck_fwd: Vec<f64>,
    p_sharp_bck_fwd: Vec<f64>,
    p_bck_bck: Vec<f64>,
    p_sharp_bck_bck: Vec<f64>,
    rho: Vec<f64>,
    rho_fwd: Vec<f64>,
    rho_bck: Vec<f64>,
    rho_ext: Vec<f64>,
    levels: Vec<Level>,
}

impl<'m, M: LogDensity + ?Sized> Sampler<'m, M> {
    fn new(model: &'m M, params: &NutsParams, rng: ChaCha8Rng, start: &PsPoint) -> Self {
        let dim = model.dim();
        let v = || vec![0.0; dim];
        Self {
            tree: Tree {
                model,
                dim,
                eps: params.initial_step_size,
                inv_metric: vec![1.0; dim],
                max_energy_error: params.max_energy_error,
                rng,
                n_leapfrog: 0,
                sum_metro_prob: 0.0,
                divergent: false,
            },
            max_depth: params.max_depth,
            z: start.clone(),
            z_sample: start.clone(),
            z_fwd: start.clone(),
            z_bck: start.clone(),
            z_propose: start.clone(),
            p_fwd_fwd: v(),
            p_sharp_fwd_fwd: v(),
            p_fwd_bck: v(),
            p_sharp_fwd_bck: v(),
            p_bck_fwd: v(),
            p_sharp_bck_fwd: v(),
            p_bck_bck: v(),
            p_sharp_bck_bck: v(),
            rho: v(),
            rho_fwd: v(),
            rho_bck: v(),
            rho_ext: v(),
            levels: (0..params.max_depth).map(|_| Level::new(dim)).collect(),
        }
    }

    /// Re-runs the step-size heuristic at the current state.
    fn init_step_size(&mut self) -> Result<(), CoreError> {
        self.tree.init_step_size(&mut self.z_sample)
    }

    /// One NUTS transition from the current state `z_sample`, which it replaces by the next draw.
    fn transition(&mut self) -> TransitionStats {
        let dim = self.tree.dim;
        self.z.copy_from(&self.z_sample);
        self.tree.sample_momentum(&mut self.z);
        self.z_fwd.copy_from(&self.z);
        self.z_bck.copy_from(&self.z);
        self.z_sample.copy_from(&self.z);
        for i in 0..dim {
            let p = self.z.p[i];
            let ps = self.tree.inv_metric[i] * p;
            self.p_fwd_fwd[i] = p;
            self.p_fwd_bck[i] = p;
            self.p_bck_fwd[i] = p;
            self.p_bck_bck[i] = p;
            self.p_sharp_fwd_fwd[i] = ps;
            self.p_sharp_fwd_bck[i] = ps;
            self.p_sharp_bck_fwd[i] = ps;
            self.p_sharp_bck_bck[i] = ps;
            self.rho[i] = p;
        }
        let mut log_sum_weight = 0.0;
        let h0 = self.tree.hamiltonian(&self.z);
        self.tree.n_leapfrog = 0;
        self.tree.sum_metro_prob = 0.0;
        self.tree.divergent = false;
        let mut depth = 0;
        while depth < self.max_depth {
            self.rho_fwd.iter_mut().for_each(|v| *v = 0.0);
            self.rho_bck.iter_mut().for_each(|v| *v = 0.0);
            let mut log_sum_weight_subtree = f64::NEG_INFINITY;
            let forward = self.tree.rng.random::<f64>() > 0.5;
            let valid = if forward {
                // Extend the forward end; the old trajectory becomes the backward half.
                self.z.copy_from(&self.z_fwd);
                self.rho_bck.copy_from_slice(&self.rho);
                self.p_bck_fwd.copy_from_slice(&self.p_fwd_bck);
                self.p_sharp_bck_fwd.copy_from_slice(&self.p_sharp_fwd_bck);
                let valid = self.tree.build_tree(
                    depth,
                    &mut self.levels[..depth],
                    &mut self.z,
                    TreeOut {
                        z_propose: &mut self.z_propose,
                        p_sharp_beg: &mut self.p_sharp_fwd_bck,
                        p_sharp_end: &mut self.p_sharp_fwd_fwd,
                        rho: &mut self.rho_fwd,
                        p_beg: &mut self.p_fwd_bck,
                        p_end: &mut self.p_fwd_fwd,
                    },
                    h0,
                    1.0,
                    &mut log_sum_weight_subtree,
                );
                self.z_fwd.copy_from(&self.z);
                valid
            } else {
                // Extend the backward end; the old trajectory becomes the forward half.
                self.z.copy_from(&self.z_bck);
                self.rho_fwd.copy_from_slice(&self.rho);
                self.p_fwd_bck.copy_from_slice(&self.p_bck_fwd);
                self.p_sharp_fwd_bck.copy_from_slice(&self.p_sharp_bck_fwd);
                let valid = self.tree.build_tree(
                    depth,
                    &mut self.levels[..depth],
                    &mut self.z,
                    TreeOut {
                        z_propose: &mut self.z_propose,
                        p_sharp_beg: &mut self.p_sharp_bck_fwd,
                        p_sharp_end: &mut self.p_sharp_bck_bck,
                        rho: &mut self.rho_bck,
                        p_beg: &mut self.p_bck_fwd,
                        p_end: &mut self.p_bck_bck,
                    },
                    h0,
                    -1.0,
                    &mut log_sum_weight_subtree,
                );
                self.z_bck.copy_from(&self.z);
                valid
            };
            if !valid {
                break;
            }
            depth += 1;
            // Biased progressive sampling: move to the new subtree with probability
            // min(1, w_subtree / w_old).
            if log_sum_weight_subtree > log_sum_weight {
                self.z_sample.copy_from(&self.z_propose);
            } else {
                let accept = (log_sum_weight_subtree - log_sum_weight).exp();
                if self.tree.rng.random::<f64>() < accept {
                    self.z_sample.copy_from(&self.z_propose);
                }
            }
            log_sum_weight = log_sum_exp(log_sum_weight, log_sum_weight_subtree);
            for i in 0..dim {
                self.rho[i] = self.rho_bck[i] + self.rho_fwd[i];
            }
            // The no-U-turn criterion over the whole trajectory ...
            let mut persist = criterion(&self.p_sharp_bck_bck, &self.p_sharp_fwd_fwd, &self.rho);
            // ... and across the seam between its backward and forward halves.
            for i in 0..dim {
                self.rho_ext[i] = self.rho_bck[i] + self.p_fwd_bck[i];
            }
            persist &= criterion(&self.p_sharp_bck_bck, &self.p_sharp_fwd_bck, &self.rho_ext);
            for i in 0..dim {
                self.rho_ext[i] = self.rho_fwd[i] + self.p_bck_fwd[i];
            }
            persist &= criterion(&self.p_sharp_bck_fwd, &self.p_sharp_fwd_fwd, &self.rho_ext);
            if !persist {
                break;
            }
        }
        let t = &self.tree;
        TransitionStats {
            accept_stat: if t.n_leapfrog > 0 { t.sum_metro_prob / t.n_leapfrog as f64 } else { 0.0 },
            depth,
            n_leapfrog: t.n_leapfrog,
            divergent: t.divergent,
            energy: t.hamiltonian(&self.z_sample),
        }
    }
}

/// Finds an initial point: `init` if given, else uniform draws on `(−r, r)^d`.
fn initialise<M: LogDensity + ?Sized>(
    model: &M,
    params: &NutsParams,
    chain: usize,
    init: Option<&[f64]>,
    rng: &mut ChaCha8Rng,
    z: &mut PsPoint,
) -> Result<(), CoreError> {
    if let Some(init) = init {
        z.q.copy_from_slice(init);
        return evaluate(model, z).map_err(|e| {
            CoreError::Sampler(format!(
                "chain {chain} could not start at the given initial value {init:?}: {e}; choose another \
                 initial value"
            ))
        });
    }
    let r = params.init_radius;
    let mut last = None;
    for _ in 0..params.init_attempts {
        for q in z.q.iter_mut() {
            *q = rng.random_range(-r..r);
        }
        match evaluate(model, z) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some((z.q.clone(), e)),
        }
    }
    let (q, e) = last.expect("at least one attempt");
    Err(CoreError::Sampler(format!(
        "chain {chain} failed to initialise: none of {} random initial values drawn uniformly from \
         (-{r}, {r}) per coordinate (on the unconstrained scale) gave a finite log density with a finite \
         gradient; the last one tried, {q:?}, failed with: {e}. Check the data and priors, or give \
         initial values",
        params.init_attempts
    )))
}

fn run_chain<M: LogDensity + ?Sized>(
    model: &M,
    params: &NutsParams,
    chain: usize,
    init: Option<&[f64]>,
    progress: &(dyn Fn() + Sync),
) -> Result<Chain, CoreError> {
    let dim = model.dim();
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    rng.set_stream(chain as u64);
    let mut start = PsPoint::new(dim);
    initialise(model, params, chain, init, &mut rng, &mut start)?;
    let mut s = Sampler::new(model, params, rng, &start);
    let name_chain = |e: CoreError| match e {
        CoreError::Sampler(m) => CoreError::Sampler(format!("chain {chain}: {m}")),
        e => e,
    };
    s.init_step_size().map_err(name_chain)?;
    let mut dual = DualAveraging::new(s.tree.eps, params.target_accept);
    let mut windows =
        WindowedVariance::new(dim, params.warmup, params.init_buffer, params.base_window, params.term_buffer);
    let mut warmup_divergences = 0;
    for _ in 0..params.warmup {
        let st = s.transition();
        warmup_divergences += usize::from(st.divergent);
        s.tree.eps = dual.update(st.accept_stat);
        if params.adapt_metric && windows.learn(&s.z_sample.q, &mut s.tree.inv_metric) {
            s.init_step_size().map_err(name_chain)?;
            dual.restart(s.tree.eps);
        }
        progress();
    }
    if params.warmup > 0 {
        s.tree.eps = dual.final_step_size();
    }
    let n = params.draws;
    let mut out = Chain {
        draws: Vec::with_capacity(n * dim),
        log_density: Vec::with_capacity(n),
        accept_stat: Vec::with_capacity(n),
        tree_depth: Vec::with_capacity(n),
        n_leapfrog: Vec::with_capacity(n),
        divergent: Vec::with_capacity(n),
        energy: Vec::with_capacity(n),
        warmup_divergences,
        step_size: s.tree.eps,
        inv_metric: s.tree.inv_metric.clone(),
        init: start.q,
    };
    for _ in 0..n {
        let st = s.transition();
        out.draws.extend_from_slice(&s.z_sample.q);
        out.log_density.push(s.z_sample.logp);
        out.accept_stat.push(st.accept_stat);
        out.tree_depth.push(st.depth);
        out.n_leapfrog.push(st.n_leapfrog);
        out.divergent.push(st.divergent);
        out.energy.push(st.energy);
        progress();
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
