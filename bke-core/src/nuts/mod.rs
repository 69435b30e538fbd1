//! The No-U-Turn Sampler (Hoffman & Gelman 2014) in the form Stan uses (Betancourt 2017,
//! "A Conceptual Introduction to Hamiltonian Monte Carlo", §A.4–A.5): multinomial sampling of the
//! trajectory, the generalised no-U-turn criterion with the additional checks across merged
//! subtrees, dual-averaging step-size adaptation and a windowed diagonal metric during warmup, and
//! divergence detection. Several chains run in parallel (rayon); chain `c` draws its randomness from
//! its own ChaCha8 stream (`seed`, stream `c`), so the draws do not depend on the thread count.
//!
//! # The sampler
//! Target: a density `π(q)` on `ℝ^d` given through [`Target`] (`log π` and its gradient).
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
//! use bke_core::nuts::{NutsParams, Target, sample};
//! use bke_core::CoreError;
//! /// A standard normal in two dimensions.
//! struct StdNormal;
//! impl Target for StdNormal {
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
mod target;
mod tree;

pub use diagnostics::Summary;
pub use target::Target;

use crate::CoreError;
use crate::budget::Bytes;
use crate::estimator::{Params, Progress};
use adapt::{DualAveraging, WindowedVariance};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use tree::{PsPoint, Sampler, Settings, evaluate};

/// Settings of [`sample`]. Defaults follow Stan. [`Params::validate`] checks them.
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

impl Params for NutsParams {
    type Error = CoreError;

    /// At least one chain and one draw, `1 ≤ max_depth ≤ 30`, `0 < target_accept < 1`, positive
    /// energy threshold, step size and initial radius, at least one initialisation attempt.
    fn validate(&self) -> Result<(), CoreError> {
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
        self.check_memory(1, true)
    }
}

impl NutsParams {
    /// Refuses (naming the setting) when the draws of all chains of a `dim`-dimensional target would
    /// not fit in memory ([`crate::budget`]): each kept draw stores `dim` values and, unless the
    /// draws are `streamed` to a [`DrawSink`] (which then receives the 6 sampler statistics of each
    /// draw instead), 6 statistics; each chain a few working vectors.
    pub fn check_memory(&self, dim: usize, streamed: bool) -> Result<(), CoreError> {
        let stats = if streamed { 0 } else { 6 };
        let per_draw = Bytes::f64s(dim.saturating_add(stats));
        let per_chain = per_draw.times(self.draws).plus(Bytes::f64s(dim.saturating_mul(16)));
        let setting = format!("chains = {}, draws = {} (dimension {dim})", self.chains, self.draws);
        crate::budget::check(&setting, per_chain.times(self.chains))
    }
}

/// One draw after warmup, as handed to a [`DrawSink`] when it is made.
#[derive(Debug, Clone, Copy)]
pub struct Draw<'a> {
    /// The chain (0-based).
    pub chain: usize,
    /// The draw's index within its chain (0-based, after warmup).
    pub index: usize,
    /// The draw (on the target's scale).
    pub q: &'a [f64],
    /// `log π(q)`.
    pub log_density: f64,
    /// Mean Metropolis acceptance statistic of the transition.
    pub accept_stat: f64,
    /// Tree depth of the transition.
    pub tree_depth: usize,
    /// Leapfrog steps of the transition.
    pub n_leapfrog: usize,
    /// Whether the transition diverged.
    pub divergent: bool,
    /// Hamiltonian `H(q, p)` of the draw.
    pub energy: f64,
}

/// Receives every draw after warmup as it is made (e.g. to write it to disk, `bke embed sample
/// --draws-out`). With a sink, [`sample_with`] keeps in memory only the draws' coordinates and the
/// running aggregates of [`ChainStats`], not the per-draw statistics, so the sink bounds their
/// storage by the disk instead of the memory. Draws of one chain arrive in order, from one thread;
/// chains run in parallel. An error stops the sampler and is returned by [`sample_with`].
pub trait DrawSink: Sync {
    /// Takes one draw.
    fn record(&self, draw: &Draw<'_>) -> Result<(), CoreError>;
}

/// Running aggregates of the sampler statistics of one chain after warmup, kept whether or not the
/// per-draw statistics are: the diagnostics of [`NutsOutput`] come from these.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChainStats {
    /// Draws seen.
    pub draws: usize,
    /// Divergent transitions.
    pub divergences: usize,
    /// `depth_counts[d]`: transitions of tree depth `d`.
    pub depth_counts: Vec<usize>,
    /// Sum of the acceptance statistics.
    pub accept_sum: f64,
    /// Mean energy (Welford).
    pub energy_mean: f64,
    /// Sum of squared deviations of the energy from its mean (Welford).
    pub energy_m2: f64,
    /// `Σ (E_t − E_{t−1})²`.
    pub energy_step_sq: f64,
    /// The last energy.
    pub energy_last: f64,
}

impl ChainStats {
    /// Adds one transition.
    fn push(&mut self, depth: usize, accept_stat: f64, divergent: bool, energy: f64) {
        if self.draws > 0 {
            self.energy_step_sq += (energy - self.energy_last) * (energy - self.energy_last);
        }
        self.draws += 1;
        self.divergences += usize::from(divergent);
        if self.depth_counts.len() <= depth {
            self.depth_counts.resize(depth + 1, 0);
        }
        self.depth_counts[depth] += 1;
        self.accept_sum += accept_stat;
        let delta = energy - self.energy_mean;
        self.energy_mean += delta / self.draws as f64;
        self.energy_m2 += delta * (energy - self.energy_mean);
        self.energy_last = energy;
    }

    /// E-BFMI of the chain: `Σ (E_t − E_{t−1})² / Σ (E_t − Ē)²`.
    pub fn e_bfmi(&self) -> f64 {
        self.energy_step_sq / self.energy_m2
    }
}

/// The draws and sampler statistics of one chain (after warmup). When the draws were streamed to a
/// [`DrawSink`], the per-draw statistics (`log_density` … `energy`) are empty; `stats` is always
/// filled.
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
    /// Running aggregates of the statistics above.
    pub stats: ChainStats,
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
        self.chains.first().map_or(0, |c| c.stats.draws)
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
        self.chains.iter().map(|c| c.stats.divergences).sum()
    }

    /// Energy Bayesian fraction of missing information of each chain (Betancourt 2016):
    /// `Σ (E_t − E_{t−1})² / Σ (E_t − Ē)²`; values below 0.3 suggest the momentum resampling
    /// cannot explore the energy distribution (heavy tails, funnels).
    pub fn e_bfmi(&self) -> Vec<f64> {
        self.chains.iter().map(|c| c.stats.e_bfmi()).collect()
    }

    /// Transitions after warmup that stopped at the maximum tree depth `max_depth`.
    pub fn max_depth_hits(&self, max_depth: usize) -> usize {
        self.chains.iter().flat_map(|c| c.stats.depth_counts.iter().skip(max_depth)).sum()
    }

    /// Mean acceptance statistic over every draw of every chain.
    pub fn mean_accept_stat(&self) -> f64 {
        let sum: f64 = self.chains.iter().map(|c| c.stats.accept_sum).sum();
        sum / self.chains.iter().map(|c| c.stats.draws).sum::<usize>() as f64
    }
}

/// Runs NUTS on `model` with `params` (no progress reporting, random initial values).
pub fn sample<M: Target + ?Sized>(model: &M, params: &NutsParams) -> Result<NutsOutput, CoreError> {
    sample_with(model, params, None, &(), None)
}

/// Runs NUTS: `inits` (one point per chain) replaces the random initial values; `progress` hears
/// of every iteration (warmup and sampling) of every chain as stage `NUTS`, `done` of
/// `chains × (warmup + draws)`, and is polled for cancellation once per iteration; `sink`, if any,
/// receives every draw after warmup as it is made (then the per-draw statistics are not kept, see
/// [`DrawSink`]).
pub fn sample_with<M: Target + ?Sized>(
    model: &M,
    params: &NutsParams,
    inits: Option<&[Vec<f64>]>,
    progress: &dyn Progress,
    sink: Option<&dyn DrawSink>,
) -> Result<NutsOutput, CoreError> {
    params.validate()?;
    let dim = model.dim();
    params.check_memory(dim, sink.is_some())?;
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
    let total =
        (params.chains as u64).saturating_mul((params.warmup as u64).saturating_add(params.draws as u64));
    let done = AtomicU64::new(0);
    let tick = || {
        progress.update("NUTS", done.fetch_add(1, Ordering::Relaxed) + 1, total);
        progress.checkpoint()
    };
    let chains = (0..params.chains)
        .into_par_iter()
        .map(|c| run_chain(model, params, c, inits.map(|i| i[c].as_slice()), &tick, sink))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(NutsOutput { dim, chains })
}

/// Finds an initial point: `init` if given, else uniform draws on `(−r, r)^d`.
fn initialise<M: Target + ?Sized>(
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

fn run_chain<M: Target + ?Sized>(
    model: &M,
    params: &NutsParams,
    chain: usize,
    init: Option<&[f64]>,
    tick: &(dyn Fn() -> Result<(), CoreError> + Sync),
    sink: Option<&dyn DrawSink>,
) -> Result<Chain, CoreError> {
    let dim = model.dim();
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    rng.set_stream(chain as u64);
    let mut start = PsPoint::new(dim);
    initialise(model, params, chain, init, &mut rng, &mut start)?;
    let settings = Settings {
        initial_step_size: params.initial_step_size,
        max_energy_error: params.max_energy_error,
        max_depth: params.max_depth,
    };
    let mut s = Sampler::new(model, &settings, rng, &start);
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
        tick()?;
    }
    if params.warmup > 0 {
        s.tree.eps = dual.final_step_size();
    }
    let n = params.draws;
    let kept = if sink.is_some() { 0 } else { n };
    let mut out = Chain {
        draws: Vec::with_capacity(n * dim),
        log_density: Vec::with_capacity(kept),
        accept_stat: Vec::with_capacity(kept),
        tree_depth: Vec::with_capacity(kept),
        n_leapfrog: Vec::with_capacity(kept),
        divergent: Vec::with_capacity(kept),
        energy: Vec::with_capacity(kept),
        stats: ChainStats::default(),
        warmup_divergences,
        step_size: s.tree.eps,
        inv_metric: s.tree.inv_metric.clone(),
        init: start.q,
    };
    for index in 0..n {
        let st = s.transition();
        out.draws.extend_from_slice(&s.z_sample.q);
        out.stats.push(st.depth, st.accept_stat, st.divergent, st.energy);
        match sink {
            Some(sink) => sink.record(&Draw {
                chain,
                index,
                q: &s.z_sample.q,
                log_density: s.z_sample.logp,
                accept_stat: st.accept_stat,
                tree_depth: st.depth,
                n_leapfrog: st.n_leapfrog,
                divergent: st.divergent,
                energy: st.energy,
            })?,
            None => {
                out.log_density.push(s.z_sample.logp);
                out.accept_stat.push(st.accept_stat);
                out.tree_depth.push(st.depth);
                out.n_leapfrog.push(st.n_leapfrog);
                out.divergent.push(st.divergent);
                out.energy.push(st.energy);
            }
        }
        tick()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
