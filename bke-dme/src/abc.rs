//! Approximate Bayesian computation: the plain baselines of seed 004 §8.3 and Fig. 5 (right).
//!
//! Both compare summary statistics through the standardised Euclidean distance
//! `d(x, y) = ‖(x − y) / s‖₂`, where `s_k` is the median absolute deviation (× 1.4826, the sd of a
//! Gaussian; the sd where the MAD is 0, else 1) of statistic `k` over simulations from the prior
//! ([`stat_scales`]). A failed simulation (`None`, e.g. a runaway population) is infinitely far.
//!
//! * [`RejectionAbcParams`] (Pritchard et al. 1999): simulations `θ_i ~ p(θ)`, `x_i ~ p(x | θ_i)`;
//!   accept every `θ_i` with `d(x_i, y) ≤ ε`, or the `⌈q n⌉` nearest. The accepted parameters are
//!   samples of the ε-approximate posterior `p(θ | d(x, y) ≤ ε)`.
//! * [`SmcAbcParams`] (population Monte Carlo ABC, Beaumont, Cornuet, Marin & Robert 2009,
//!   Algorithm 2): generation 0 is `N` prior draws (ε₀ = ∞); generation `t` sets `ε_t` to the
//!   `α`-quantile of the previous generation's distances, and proposes `θ* = θ_j + N(0, Σ_t)`,
//!   `j ~ w^{(t−1)}`, `Σ_t = 2 × Cov_w(θ^{(t−1)})` (twice the weighted empirical covariance), until
//!   `N` proposals with `d ≤ ε_t` are accepted; the weights are
//!   `w_i ∝ p(θ_i) / Σ_j w_j^{(t−1)} N(θ_i; θ_j, Σ_t)`. It stops at the simulation budget (the last
//!   complete generation is returned), after `max_generations`, or when a generation's acceptance
//!   rate falls below `min_acceptance`.
//!
//! Simulations run in parallel batches on the rayon pool; proposal `k` of generation `t` draws from
//! its own ChaCha8 stream `(seed, t · 2⁴⁰ + k)`, so results are the same for any thread count.

use crate::DmeError;
use crate::error::invalid;
use crate::lfi::LfiData;
use bke_core::numeric::log_sum_exp;
use bke_core::{CoreError, Estimator, Params, Points, Progress, Valid};
use bke_linalg::{Backend, JitterOptions, Mat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;
use std::sync::Arc;

/// A simulator of summary statistics: `None` when the simulation failed (it is then rejected).
pub type Simulator = Arc<dyn Fn(&[f64], &mut ChaCha8Rng) -> Option<Vec<f64>> + Send + Sync>;

/// The random stream of draw `index` in `generation` under `seed`.
pub fn stream(seed: u64, generation: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream((generation << 40) | index);
    rng
}

/// One coordinate of a [`ProductPrior`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Marginal {
    /// Uniform on `[low, high]`.
    Uniform {
        /// Lower end.
        low: f64,
        /// Upper end.
        high: f64,
    },
    /// Normal with mean and standard deviation.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
    },
}

/// A prior with independent coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductPrior {
    /// The marginal of each coordinate.
    pub marginals: Vec<Marginal>,
}

impl ProductPrior {
    /// Checks that every marginal is proper.
    pub fn validate(&self) -> Result<(), DmeError> {
        if self.marginals.is_empty() {
            return Err(CoreError::Empty { what: "prior marginals".into(), needed: 1 }.into());
        }
        for m in &self.marginals {
            let ok = match *m {
                Marginal::Uniform { low, high } => low.is_finite() && high.is_finite() && low < high,
                Marginal::Normal { mean, sd } => mean.is_finite() && sd.is_finite() && sd > 0.0,
            };
            if !ok {
                return Err(invalid("prior", f64::NAN, &format!("{m:?} is not a proper distribution")));
            }
        }
        Ok(())
    }

    /// Dimension of θ.
    pub fn dim(&self) -> usize {
        self.marginals.len()
    }

    /// One draw.
    pub fn sample(&self, rng: &mut impl Rng) -> Vec<f64> {
        self.marginals
            .iter()
            .map(|m| match *m {
                Marginal::Uniform { low, high } => rng.random_range(low..high),
                Marginal::Normal { mean, sd } => mean + sd * rng.sample::<f64, _>(StandardNormal),
            })
            .collect()
    }

    /// `log p(θ)` (`−∞` outside the support).
    pub fn log_density(&self, theta: &[f64]) -> f64 {
        self.marginals
            .iter()
            .zip(theta)
            .map(|(m, &t)| match *m {
                Marginal::Uniform { low, high } if (low..=high).contains(&t) => -(high - low).ln(),
                Marginal::Uniform { .. } => f64::NEG_INFINITY,
                Marginal::Normal { mean, sd } => {
                    -0.5 * ((t - mean) / sd).powi(2) - sd.ln() - 0.5 * bke_core::numeric::LN_2PI
                }
            })
            .sum()
    }
}

/// Per-statistic scales `s_k`: 1.4826 × MAD over the rows of `stats`, else the sd, else 1.
pub fn stat_scales(stats: &Points) -> Vec<f64> {
    (0..stats.dim())
        .map(|k| {
            let mut v: Vec<f64> = stats.iter().map(|p| p[k]).collect();
            let mad = 1.4826 * median_abs_deviation(&mut v);
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
            [mad, sd].into_iter().find(|s| *s > 0.0 && s.is_finite()).unwrap_or(1.0)
        })
        .collect()
}

/// The median absolute deviation from the median (sorts `v`).
fn median_abs_deviation(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let med = v[v.len() / 2];
    let mut dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
    dev.sort_by(f64::total_cmp);
    dev[dev.len() / 2]
}

/// The standardised distance `‖(x − y)/s‖₂` (`∞` for a failed simulation or a non-finite one).
pub fn distance(x: Option<&[f64]>, y: &[f64], scales: &[f64]) -> f64 {
    let Some(x) = x else { return f64::INFINITY };
    let d2: f64 = x.iter().zip(y).zip(scales).map(|((a, b), s)| ((a - b) / s).powi(2)).sum();
    if d2.is_finite() { d2.sqrt() } else { f64::INFINITY }
}

/// Weighted posterior samples (the output of both ABC samplers).
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedSamples {
    /// The samples (one per row).
    pub points: Points,
    /// Normalised non-negative weights, one per sample.
    pub weights: Vec<f64>,
}

impl WeightedSamples {
    /// Equally weighted samples.
    pub fn uniform(points: Points) -> Self {
        let n = points.len();
        Self { points, weights: vec![1.0 / n as f64; n] }
    }

    /// Weighted mean of each coordinate.
    pub fn mean(&self) -> Vec<f64> {
        (0..self.points.dim())
            .map(|k| self.points.iter().zip(&self.weights).map(|(p, w)| w * p[k]).sum())
            .collect()
    }

    /// Weighted covariance (row-major `d × d`).
    pub fn covariance(&self) -> Vec<f64> {
        let (d, m) = (self.points.dim(), self.mean());
        let mut c = vec![0.0; d * d];
        for (p, w) in self.points.iter().zip(&self.weights) {
            for a in 0..d {
                for b in 0..d {
                    c[a * d + b] += w * (p[a] - m[a]) * (p[b] - m[b]);
                }
            }
        }
        c
    }

    /// Weighted standard deviation of each coordinate.
    pub fn sd(&self) -> Vec<f64> {
        let (d, c) = (self.points.dim(), self.covariance());
        (0..d).map(|k| c[k * d + k].max(0.0).sqrt()).collect()
    }

    /// The weighted `p`-quantile of coordinate `k` (the smallest sample whose cumulative weight
    /// reaches `p`).
    pub fn quantile(&self, k: usize, p: f64) -> f64 {
        let mut v: Vec<(f64, f64)> =
            self.points.iter().map(|x| x[k]).zip(self.weights.iter().copied()).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut acc = 0.0;
        for &(x, w) in &v {
            acc += w;
            if acc >= p {
                return x;
            }
        }
        v[v.len() - 1].0
    }

    /// Effective sample size `1 / Σ w²`.
    pub fn effective_size(&self) -> f64 {
        1.0 / self.weights.iter().map(|w| w * w).sum::<f64>()
    }
}

/// Rejection ABC settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RejectionAbcParams {
    /// Fraction `q ∈ (0, 1]` of the simulations accepted (the nearest). Default 0.05.
    pub quantile: f64,
    /// Accept every simulation within this standardised distance instead of a quantile.
    pub epsilon: Option<f64>,
    /// At least this many simulations are accepted with `quantile`. Default 10.
    pub min_accepted: usize,
}

impl Default for RejectionAbcParams {
    fn default() -> Self {
        Self { quantile: 0.05, epsilon: None, min_accepted: 10 }
    }
}

impl Params for RejectionAbcParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        if !(self.quantile > 0.0 && self.quantile <= 1.0) {
            return Err(invalid("quantile", self.quantile, "must lie in (0, 1]"));
        }
        if let Some(e) = self.epsilon {
            bke_core::check_positive("epsilon", e)?;
        }
        if self.min_accepted == 0 {
            return Err(invalid("min_accepted", 0.0, "at least one simulation must be accepted"));
        }
        Ok(())
    }
}

/// The accepted simulations of rejection ABC.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectionAbc {
    /// Parameters of the accepted simulations, equally weighted.
    pub posterior: WeightedSamples,
    /// The largest accepted standardised distance.
    pub threshold: f64,
}

impl Estimator for RejectionAbcParams {
    /// Simulations from the prior (`theta`, `stats`) and the observation; `prior` is not used.
    type Data = LfiData;
    type Fitted = RejectionAbc;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &LfiData,
        _: &dyn Progress,
    ) -> Result<RejectionAbc, DmeError> {
        let n = data.theta.len();
        let s = stat_scales(&data.stats);
        let dist: Vec<f64> = data.stats.iter().map(|x| distance(Some(x), &data.observed, &s)).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&i, &j| dist[i].total_cmp(&dist[j]).then(i.cmp(&j)));
        let k = match params.epsilon {
            Some(e) => order.iter().take_while(|&&i| dist[i] <= e).count(),
            None => ((params.quantile * n as f64).ceil() as usize).max(params.min_accepted).min(n),
        };
        if k == 0 {
            let nearest = dist[order[0]];
            return Err(invalid(
                "epsilon",
                params.epsilon.unwrap_or(0.0),
                &format!("accepts no simulation (the nearest is at {nearest:.4}); increase it"),
            ));
        }
        let accepted = &order[..k];
        Ok(RejectionAbc {
            posterior: WeightedSamples::uniform(data.theta.select(accepted)),
            threshold: dist[accepted[k - 1]],
        })
    }
}

/// SMC-ABC (population Monte Carlo ABC) settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmcAbcParams {
    /// Particles `N` per generation. Default 500.
    pub particles: usize,
    /// Quantile `α ∈ (0, 1)` of the previous distances that sets the next ε. Default 0.5.
    pub quantile: f64,
    /// Simulation budget, generation 0 included. Default 20 000.
    pub max_simulations: usize,
    /// Most generations after generation 0. Default 30.
    pub max_generations: usize,
    /// Stop after a generation whose acceptance rate is below this. Default 0.01.
    pub min_acceptance: f64,
    /// Proposals simulated per parallel batch (fixed, so results do not depend on the thread
    /// count). Default 256.
    pub batch: usize,
    /// Seed of every random stream.
    pub seed: u64,
}

impl Default for SmcAbcParams {
    fn default() -> Self {
        Self {
            particles: 500,
            quantile: 0.5,
            max_simulations: 20_000,
            max_generations: 30,
            min_acceptance: 0.01,
            batch: 256,
            seed: 0,
        }
    }
}

impl Params for SmcAbcParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        if self.particles < 2 {
            return Err(invalid("particles", self.particles as f64, "must be at least 2"));
        }
        if !(self.quantile > 0.0 && self.quantile < 1.0) {
            return Err(invalid("quantile", self.quantile, "must lie in (0, 1)"));
        }
        if self.max_simulations < self.particles {
            return Err(invalid(
                "max_simulations",
                self.max_simulations as f64,
                "must be at least `particles`",
            ));
        }
        if !(0.0..1.0).contains(&self.min_acceptance) {
            return Err(invalid("min_acceptance", self.min_acceptance, "must lie in [0, 1)"));
        }
        if self.batch == 0 {
            return Err(invalid("batch", 0.0, "must be at least 1"));
        }
        Ok(())
    }
}

/// What SMC-ABC needs: a prior, a simulator and the observed statistics.
#[derive(Clone)]
pub struct SmcAbcData {
    /// The prior `p(θ)`.
    pub prior: ProductPrior,
    /// The simulator `θ ↦ x`.
    pub simulator: Simulator,
    /// Observed statistics `y`.
    pub observed: Vec<f64>,
}

/// The result of SMC-ABC.
#[derive(Debug, Clone, PartialEq)]
pub struct SmcAbc {
    /// The last complete generation's weighted particles.
    pub posterior: WeightedSamples,
    /// ε of each complete generation (`∞` for generation 0).
    pub epsilons: Vec<f64>,
    /// Simulations run, the incomplete last generation's included.
    pub simulations: usize,
}

/// One generation's particles with their distances.
struct Generation {
    samples: WeightedSamples,
    distances: Vec<f64>,
}

/// The Gaussian perturbation kernel `N(0, Σ)` through the lower Cholesky factor of `Σ`.
struct Perturbation {
    chol: Mat,
}

impl Perturbation {
    /// `Σ = 2 Cov_w` of the previous generation.
    fn new<B: Backend>(previous: &WeightedSamples) -> Result<Self, DmeError> {
        let d = previous.points.dim();
        let c = previous.covariance();
        let sigma = Mat::from_fn(d, d, |a, b| 2.0 * c[a * d + b]);
        let (chol, _) =
            B::cholesky_jittered(sigma.as_ref(), JitterOptions { max: 1.0, ..Default::default() })?;
        Ok(Self { chol })
    }

    fn draw(&self, center: &[f64], rng: &mut ChaCha8Rng) -> Vec<f64> {
        let z: Vec<f64> = center.iter().map(|_| StandardNormal.sample(rng)).collect();
        (0..center.len())
            .map(|a| center[a] + (0..=a).map(|b| self.chol[(a, b)] * z[b]).sum::<f64>())
            .collect()
    }

    /// `log N(θ; c, Σ)` up to the constant shared by every pair.
    fn log_kernel(&self, theta: &[f64], center: &[f64]) -> f64 {
        let d = theta.len();
        let mut z = vec![0.0; d];
        for a in 0..d {
            let s: f64 = (0..a).map(|b| self.chol[(a, b)] * z[b]).sum();
            z[a] = (theta[a] - center[a] - s) / self.chol[(a, a)];
        }
        -0.5 * z.iter().map(|v| v * v).sum::<f64>()
    }
}

/// Picks an index with probability proportional to `weights` (which sum to 1).
fn pick(weights: &[f64], rng: &mut ChaCha8Rng) -> usize {
    let u: f64 = rng.random();
    let mut acc = 0.0;
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        if u < acc {
            return i;
        }
    }
    weights.len() - 1
}

impl SmcAbcParams {
    /// Generation 0: `N` prior draws and their scales.
    fn initial(&self, data: &SmcAbcData) -> Result<(Generation, Vec<f64>), DmeError> {
        let draws: Vec<(Vec<f64>, Option<Vec<f64>>)> = (0..self.particles)
            .into_par_iter()
            .map(|k| {
                let mut rng = stream(self.seed, 0, k as u64);
                let theta = data.prior.sample(&mut rng);
                let x = (data.simulator)(&theta, &mut rng);
                (theta, x)
            })
            .collect();
        let ok: Vec<Vec<f64>> = draws.iter().filter_map(|(_, x)| x.clone()).collect();
        if ok.len() < 2 {
            return Err(DmeError::Simulator(format!(
                "only {} of {} prior simulations succeeded",
                ok.len(),
                self.particles
            )));
        }
        for x in &ok {
            if x.len() != data.observed.len() {
                return Err(DmeError::Simulator(format!(
                    "returned {} statistics, the observation has {}",
                    x.len(),
                    data.observed.len()
                )));
            }
        }
        let scales = stat_scales(&Points::from_rows("simulated statistics", &ok)?);
        let distances = draws.iter().map(|(_, x)| distance(x.as_deref(), &data.observed, &scales)).collect();
        let rows: Vec<Vec<f64>> = draws.into_iter().map(|(t, _)| t).collect();
        let samples = WeightedSamples::uniform(Points::from_rows("θ", &rows)?);
        Ok((Generation { samples, distances }, scales))
    }

    /// Importance weights `p(θ_i) / Σ_j w_j N(θ_i; θ_j, Σ)`, normalised.
    fn weights(
        prior: &ProductPrior,
        prev: &WeightedSamples,
        kernel: &Perturbation,
        new: &[Vec<f64>],
    ) -> Vec<f64> {
        let log_w: Vec<f64> = new
            .par_iter()
            .map(|t| {
                let terms: Vec<f64> = prev
                    .points
                    .iter()
                    .zip(&prev.weights)
                    .map(|(c, w)| w.ln() + kernel.log_kernel(t, c))
                    .collect();
                prior.log_density(t) - log_sum_exp(&terms)
            })
            .collect();
        let z = log_sum_exp(&log_w);
        log_w.iter().map(|l| (l - z).exp()).collect()
    }
}

impl Estimator for SmcAbcParams {
    type Data = SmcAbcData;
    type Fitted = SmcAbc;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &SmcAbcData,
        progress: &dyn Progress,
    ) -> Result<SmcAbc, DmeError> {
        data.prior.validate()?;
        bke_core::Points::from_1d("observed statistics", &data.observed)?;
        // Two generations of particles (θ, statistics, distance, weight) are alive at once.
        let per_particle = data.prior.marginals.len() + data.observed.len() + 2;
        let bytes = bke_core::budget::Bytes::f64s(params.particles.saturating_mul(per_particle)).times(4);
        bke_core::budget::check(&format!("particles = {}", params.particles), bytes)?;
        let (mut current, scales) = params.initial(data)?;
        let (n, budget) = (params.particles, params.max_simulations);
        let mut simulations = n;
        let mut epsilons = vec![f64::INFINITY];
        for t in 1..=params.max_generations as u64 {
            progress.update("SMC-ABC simulations", simulations as u64, budget as u64);
            let mut finite: Vec<f64> = current.distances.iter().copied().filter(|d| d.is_finite()).collect();
            finite.sort_by(f64::total_cmp);
            let eps = finite[((params.quantile * finite.len() as f64) as usize).min(finite.len() - 1)];
            let kernel = Perturbation::new::<B>(&current.samples)?;
            let (mut thetas, mut dists, mut tried, mut k) = (Vec::new(), Vec::new(), 0usize, 0u64);
            while thetas.len() < n && simulations < budget {
                progress.checkpoint()?;
                let size = params.batch.min(budget - simulations) as u64;
                let batch: Vec<(Vec<f64>, Option<f64>)> = (k..k + size)
                    .into_par_iter()
                    .map(|idx| {
                        let mut rng = stream(params.seed, t, idx);
                        let j = pick(&current.samples.weights, &mut rng);
                        let theta = kernel.draw(current.samples.points.point(j), &mut rng);
                        if data.prior.log_density(&theta) == f64::NEG_INFINITY {
                            return (theta, None);
                        }
                        let x = (data.simulator)(&theta, &mut rng);
                        let d = distance(x.as_deref(), &data.observed, &scales);
                        (theta, Some(d))
                    })
                    .collect();
                k += size;
                simulations += batch.iter().filter(|(_, d)| d.is_some()).count();
                for (theta, d) in batch {
                    tried += usize::from(d.is_some());
                    match d {
                        Some(d) if d <= eps && thetas.len() < n => {
                            thetas.push(theta);
                            dists.push(d);
                        }
                        _ => {}
                    }
                }
                if k > (budget as u64) * 100 {
                    break; // every proposal leaves the prior's support: give up on this generation
                }
            }
            if thetas.len() < n {
                break;
            }
            let w = Self::weights(&data.prior, &current.samples, &kernel, &thetas);
            let samples = WeightedSamples { points: Points::from_rows("θ", &thetas)?, weights: w };
            current = Generation { samples, distances: dists };
            epsilons.push(eps);
            if (n as f64) < params.min_acceptance * tried as f64 {
                break;
            }
        }
        Ok(SmcAbc { posterior: current.samples, epsilons, simulations })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    /// θ ~ N(0, 1), x | θ ~ N(θ, 0.5²), y = 1: posterior N(0.8, 0.2).
    fn conjugate_simulator() -> Simulator {
        Arc::new(|t: &[f64], rng: &mut ChaCha8Rng| {
            let e: f64 = StandardNormal.sample(rng);
            Some(vec![t[0] + 0.5 * e])
        })
    }

    fn prior() -> ProductPrior {
        ProductPrior { marginals: vec![Marginal::Normal { mean: 0.0, sd: 1.0 }] }
    }

    fn assert_conjugate(post: &WeightedSamples, what: &str) {
        let (m, sd) = (post.mean()[0], post.sd()[0]);
        eprintln!("{what}: mean {m:.3}, sd {sd:.3}, ESS {:.0}", post.effective_size());
        assert!((m - 0.8).abs() < 0.1, "{what}: mean {m}");
        assert!((sd / 0.2f64.sqrt() - 1.0).abs() < 0.25, "{what}: sd {sd}");
    }

    #[test]
    fn rejection_abc_recovers_the_conjugate_posterior() {
        let (sim, pr) = (conjugate_simulator(), prior());
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let theta: Vec<f64> = (0..20_000).map(|_| pr.sample(&mut rng)[0]).collect();
        let x: Vec<f64> = theta.iter().map(|t| sim(&[*t], &mut rng).unwrap()[0]).collect();
        let data = LfiData::new(
            Points::from_1d("θ", &theta).unwrap(),
            Points::from_1d("x", &x).unwrap(),
            Points::from_1d("θ̃", &[0.0]).unwrap(),
            vec![1.0],
        )
        .unwrap();
        let q = RejectionAbcParams { quantile: 0.02, ..Default::default() };
        let r = q.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        assert_eq!(r.posterior.points.len(), 400);
        assert_conjugate(&r.posterior, "rejection (quantile)");
        let e = RejectionAbcParams { epsilon: Some(r.threshold), ..Default::default() };
        let r2 = e.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        assert_eq!(r2.posterior, r.posterior);
        let none = RejectionAbcParams { epsilon: Some(1e-12), ..Default::default() };
        let err = none.check().unwrap().fit::<DefaultBackend>(&data).unwrap_err().to_string();
        assert!(err.contains("accepts no simulation"), "{err}");
    }

    #[test]
    fn rejection_abc_standardises_statistics() {
        // Statistic 2 has 100 times the spread of statistic 1: standardised, both count alike.
        let theta = Points::from_1d("θ", &[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
        let stats =
            Points::new("x", vec![0.0, 0.0, 1.0, 100.0, 2.0, 200.0, 3.0, 300.0, 4.0, 400.0], 2).unwrap();
        let data =
            LfiData::new(theta, stats, Points::from_1d("θ̃", &[0.0]).unwrap(), vec![2.1, 185.0]).unwrap();
        let p = RejectionAbcParams { quantile: 0.4, min_accepted: 1, epsilon: None };
        let r = p.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        assert_eq!(r.posterior.points.as_slice(), &[2.0, 1.0]);
        let e = RejectionAbcParams { quantile: 0.0, ..Default::default() }.check().unwrap_err().to_string();
        assert!(e.contains("quantile"), "{e}");
    }

    #[test]
    fn smc_abc_recovers_the_conjugate_posterior_deterministically() {
        let data = SmcAbcData { prior: prior(), simulator: conjugate_simulator(), observed: vec![1.0] };
        let p = SmcAbcParams {
            particles: 400,
            max_simulations: 15_000,
            min_acceptance: 0.0,
            ..Default::default()
        };
        let r = p.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        eprintln!("ε schedule {:?}, {} simulations", r.epsilons, r.simulations);
        assert!(r.epsilons.len() >= 4 && r.epsilons.windows(2).all(|w| w[1] <= w[0]), "{:?}", r.epsilons);
        assert!(r.simulations <= 15_000);
        assert_conjugate(&r.posterior, "SMC-ABC");
        let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let again = one_thread.install(|| p.check().unwrap().fit::<DefaultBackend>(&data).unwrap());
        assert_eq!(again, r);
    }

    #[test]
    fn smc_abc_rejects_bad_settings_and_simulators() {
        let e = SmcAbcParams { quantile: 1.0, ..Default::default() }.check().unwrap_err().to_string();
        assert!(e.contains("quantile"), "{e}");
        let failing: Simulator = Arc::new(|_: &[f64], _: &mut ChaCha8Rng| None);
        let data = SmcAbcData { prior: prior(), simulator: failing, observed: vec![1.0] };
        let e =
            SmcAbcParams::default().check().unwrap().fit::<DefaultBackend>(&data).unwrap_err().to_string();
        assert!(e.contains("prior simulations succeeded"), "{e}");
    }

    #[test]
    fn weighted_quantiles_and_moments() {
        let w = WeightedSamples {
            points: Points::from_1d("θ", &[3.0, 1.0, 2.0]).unwrap(),
            weights: vec![0.5, 0.25, 0.25],
        };
        assert_eq!((w.quantile(0, 0.2), w.quantile(0, 0.5), w.quantile(0, 0.9)), (1.0, 2.0, 3.0));
        assert!((w.mean()[0] - 2.25).abs() < 1e-12);
        assert!((w.sd()[0] - (0.6875f64).sqrt()).abs() < 1e-12);
    }
}
