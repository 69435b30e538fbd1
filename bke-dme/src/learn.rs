//! Hyperparameter learning shared by the TTGP, the sparse TTGP, the TTBLR and LFI: multi-start
//! L-BFGS maximisation of an objective over log-parameters (seed 004 §5: "by maximizing the TTGP
//! marginal likelihood, we can learn DME hyperparameters"). Starts run in parallel with a seed
//! derived from the start index, so results do not depend on the thread count.

use crate::DmeError;
use crate::error::invalid;
use bke_core::Progress;
use bke_core::budget::Bytes;
use bke_core::optim::{LbfgsOptions, minimize};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Knobs of the multi-start L-BFGS search on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultiStartOptions {
    /// Number of starts: the initial values, then random perturbations of them. Default 5.
    pub starts: usize,
    /// Half-width of the uniform perturbation of the free log-parameters of the random starts.
    /// Default 1.5.
    pub spread: f64,
    /// Seed of the random starts. Default 0.
    pub seed: u64,
    /// L-BFGS options of each start.
    pub lbfgs: LbfgsOptions,
}

impl Default for MultiStartOptions {
    fn default() -> Self {
        Self { starts: 5, spread: 1.5, seed: 0, lbfgs: LbfgsOptions::default() }
    }
}

impl MultiStartOptions {
    /// Errors on zero starts, a negative/non-finite spread or zero iterations.
    pub fn validate(&self) -> Result<(), DmeError> {
        if self.starts == 0 {
            return Err(invalid("starts", 0.0, "at least one start is needed"));
        }
        if !(self.spread >= 0.0 && self.spread.is_finite()) {
            return Err(invalid("spread", self.spread, "must be finite and non-negative"));
        }
        if self.lbfgs.max_iter == 0 {
            return Err(invalid("max_iter", 0.0, "at least one L-BFGS iteration is needed"));
        }
        Ok(())
    }
}

/// Which TTGP hyperparameters are learned (the others keep their given values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Learn {
    /// Lengthscales (and α) of `k`.
    pub kernel_x: bool,
    /// Lengthscales (and α) of `ℓ`.
    pub kernel_y: bool,
    /// Noise `σ`.
    pub sigma: bool,
    /// Regulariser `λ`.
    pub lambda: bool,
    /// Regulariser `ε`.
    pub epsilon: bool,
}

impl Default for Learn {
    /// Nothing: the model is conditioned at the given hyperparameters.
    fn default() -> Self {
        Self::none()
    }
}

impl Learn {
    /// Every hyperparameter.
    pub fn all() -> Self {
        Self { kernel_x: true, kernel_y: true, sigma: true, lambda: true, epsilon: true }
    }

    /// No hyperparameter.
    pub fn none() -> Self {
        Self { kernel_x: false, kernel_y: false, sigma: false, lambda: false, epsilon: false }
    }

    /// Whether anything is learned.
    pub fn any(&self) -> bool {
        self.kernel_x || self.kernel_y || self.sigma || self.lambda || self.epsilon
    }

    /// The free-parameter mask in the layout `(θ_k…, θ_ℓ…, σ, λ, ε)` with `nx`, `ny` kernel
    /// parameters.
    pub(crate) fn mask(&self, nx: usize, ny: usize) -> Vec<bool> {
        let mut m = vec![self.kernel_x; nx];
        m.extend(vec![self.kernel_y; ny]);
        m.extend([self.sigma, self.lambda, self.epsilon]);
        m
    }
}

/// The seeded random stream of start (or task) `i`: independent of the thread count.
pub(crate) fn start_rng(seed: u64, i: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// An objective over log-parameters: `(value, gradient)`, `None` where it cannot be evaluated.
pub(crate) type Objective<'a> = dyn Fn(&[f64]) -> Option<(f64, Vec<f64>)> + Sync + 'a;

/// Rewrites the parameters of random start `s` (e.g. fresh inducing points).
pub(crate) type Reseed<'a> = dyn Fn(usize, &mut [f64]) + Sync + 'a;

/// One local optimum: log-parameters, objective value, iterations, whether a tolerance stopped it.
pub(crate) type StartOutcome = (Vec<f64>, f64, usize, bool);

/// Where a search reports: the progress sink and the name of its stage.
pub(crate) type Report<'a> = (&'a dyn Progress, &'a str);

/// Multi-start L-BFGS maximisation of `objective` over the free coordinates of `mask`; random starts
/// perturb the coordinates of `perturb`, then `reseed` (if any) may rewrite start `s > 0`. Starts
/// run in parallel; results are in start order (starts that cannot be evaluated are left out).
/// Reports each finished start; a cancelled `progress` stops every start at its next evaluation.
#[allow(clippy::too_many_arguments)]
pub(crate) fn multi_start(
    p0: &[f64],
    mask: &[bool],
    perturb: &[bool],
    opts: &MultiStartOptions,
    objective: &Objective<'_>,
    reseed: Option<&Reseed<'_>>,
    (progress, stage): Report<'_>,
) -> Result<Vec<StartOutcome>, DmeError> {
    let setting = format!("starts = {}", opts.starts);
    bke_core::budget::check(&setting, Bytes::f64s(p0.len() + 4).times(opts.starts))?;
    let free: Vec<usize> = (0..p0.len()).filter(|&i| mask[i]).collect();
    let done = AtomicU64::new(0);
    let total = opts.starts as u64;
    progress.update(stage, 0, total);
    let guarded = |p: &[f64]| if progress.cancelled() { None } else { objective(p) };
    let results = (0..opts.starts)
        .into_par_iter()
        .filter_map(|s| {
            let mut start = p0.to_vec();
            if s > 0 {
                let mut rng = start_rng(opts.seed, s);
                for &i in &free {
                    if perturb[i] {
                        start[i] += rng.random_range(-opts.spread..=opts.spread);
                    }
                }
                if let Some(f) = reseed {
                    f(s, &mut start);
                }
            }
            let x0: Vec<f64> = free.iter().map(|&i| start[i]).collect();
            let full = |x: &[f64]| {
                let mut p = start.clone();
                for (k, &i) in free.iter().enumerate() {
                    p[i] = x[k];
                }
                p
            };
            let r = minimize(
                |x| {
                    let (v, g) = guarded(&full(x))?;
                    Some((-v, free.iter().map(|&i| -g[i]).collect()))
                },
                x0,
                opts.lbfgs,
            );
            progress.update(stage, done.fetch_add(1, Ordering::Relaxed) + 1, total);
            let r = r.ok()?;
            Some((full(&r.x), -r.f, r.iterations, r.converged))
        })
        .collect();
    progress.checkpoint()?;
    Ok(results)
}

/// The start with the largest finite objective, or an error naming what to change.
pub(crate) fn best_start(results: &[StartOutcome], advice: &str) -> Result<StartOutcome, DmeError> {
    results
        .iter()
        .filter(|r| r.1.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .cloned()
        .ok_or_else(|| DmeError::Optimisation(format!("no start could be evaluated; {advice}")))
}

/// Ties `λ = σ²/n` in a TTGP objective over `(log θ…, log σ, log λ, log ε, …)`: the index of
/// `log σ` is `is`, `log λ` follows it. Maps optimiser parameters to model parameters.
pub(crate) fn tie_lambda_map(tie: bool, is: usize, n: usize) -> impl Fn(&[f64]) -> Vec<f64> + Sync {
    let ln_n = (n as f64).ln();
    move |p: &[f64]| {
        let mut q = p.to_vec();
        if tie {
            q[is + 1] = 2.0 * q[is] - ln_n;
        }
        q
    }
}

/// Chain rule of [`tie_lambda_map`]: `∂/∂log σ += 2 ∂/∂log λ`.
pub(crate) fn tie_lambda_grad(tie: bool, is: usize, g: &mut [f64]) {
    if tie {
        g[is] += 2.0 * g[is + 1];
        g[is + 1] = 0.0;
    }
}
