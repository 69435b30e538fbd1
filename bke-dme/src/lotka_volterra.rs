//! The stochastic Lotka–Volterra predator–prey model, the benchmark of seed 004 Fig. 5 (right),
//! in the setting of Papamakarios & Murray 2016 ("Fast ε-free inference of simulation models with
//! Bayesian conditional density estimation", §4 and appendix F), which the seed's Lotka–Volterra
//! comparison (ABC, MDN, KELFI, KBR) follows.
//!
//! * State: predators `X`, prey `Y`, starting at `(X, Y) = (50, 100)`.
//! * Reactions with rates `θ = (θ₁, θ₂, θ₃, θ₄)`: a predator is born at rate `θ₁XY`, a predator dies
//!   at rate `θ₂X`, a prey is born at rate `θ₃Y`, a prey is eaten at rate `θ₄XY`.
//! * Exact simulation by Gillespie's direct method (the stochastic simulation algorithm): wait an
//!   `Exp(Σ rates)` time, fire a reaction with probability proportional to its rate; the state is
//!   recorded every 0.2 time units on `[0, 30]` (151 observations per species). When every rate is
//!   zero (extinction) the state stays constant to the end.
//! * At most [`LotkaVolterra::max_events`] reactions (default 100 000; the true parameters need
//!   about 10⁴): a run that exceeds it (a population explosion) ends with
//!   [`Outcome::TooManyEvents`] and has no statistics; it never hangs.
//! * Parameters: `log θ` with a uniform prior on `[−5, 2]⁴`; the true parameters
//!   `θ = (0.01, 0.5, 1, 0.01)`.
//! * The 9 summary statistics: the mean of each series, the log of (1 + the variance) of each series
//!   (Papamakarios & Murray take the log variance; the `1 +` keeps an extinct, constant series
//!   finite), the autocorrelation of each series at lags 1 and 2, and the correlation between the
//!   two series. The autocorrelation and correlation of a constant series are 0.
//!
//! Many simulations run in parallel on the rayon pool ([`LotkaVolterra::simulate_many`]);
//! simulation `i` draws from its own ChaCha8 stream ([`crate::abc::stream`]), so the results are
//! the same for any thread count.

use crate::abc::{Marginal, ProductPrior, Simulator, stream};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::sync::Arc;

/// The true parameters of the benchmark (rates, not logs).
pub const TRUE_RATES: [f64; 4] = [0.01, 0.5, 1.0, 0.01];

/// How a simulation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The whole horizon was simulated: predator and prey series at the observation times.
    Complete {
        /// Predators at each observation time.
        predators: Vec<f64>,
        /// Prey at each observation time.
        prey: Vec<f64>,
    },
    /// More than `max_events` reactions before the horizon (a population explosion).
    TooManyEvents,
}

/// The simulator's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LotkaVolterra {
    /// Initial (predators, prey). Default (50, 100).
    pub initial: (u64, u64),
    /// Time between observations. Default 0.2.
    pub dt: f64,
    /// Number of observation intervals (observations at `0, dt, …, steps·dt`). Default 150.
    pub steps: usize,
    /// Most reactions per simulation. Default 100 000.
    pub max_events: u64,
}

impl Default for LotkaVolterra {
    fn default() -> Self {
        Self { initial: (50, 100), dt: 0.2, steps: 150, max_events: 100_000 }
    }
}

impl LotkaVolterra {
    /// The benchmark's prior on `log θ`: uniform on `[−5, 2]⁴`.
    pub fn prior() -> ProductPrior {
        ProductPrior { marginals: vec![Marginal::Uniform { low: -5.0, high: 2.0 }; 4] }
    }

    /// One exact (Gillespie) path at rates `θ` (not logs).
    pub fn simulate(&self, rates: &[f64; 4], rng: &mut ChaCha8Rng) -> Outcome {
        let (mut x, mut y) = self.initial;
        let mut predators = Vec::with_capacity(self.steps + 1);
        let mut prey = Vec::with_capacity(self.steps + 1);
        let (mut t, mut events) = (0.0, 0u64);
        for k in 0..=self.steps {
            let t_obs = k as f64 * self.dt;
            loop {
                let (xf, yf) = (x as f64, y as f64);
                let a = [rates[0] * xf * yf, rates[1] * xf, rates[2] * yf, rates[3] * xf * yf];
                let total: f64 = a.iter().sum();
                if !(total > 0.0) {
                    t = f64::INFINITY;
                    break;
                }
                let wait = -(1.0 - rng.random::<f64>()).ln() / total;
                if t + wait > t_obs {
                    // Memoryless: the next reaction after t_obs is drawn afresh from there.
                    t = t_obs;
                    break;
                }
                t += wait;
                events += 1;
                if events > self.max_events {
                    return Outcome::TooManyEvents;
                }
                let mut u = rng.random::<f64>() * total;
                let r = a.iter().position(|ai| {
                    u -= ai;
                    u < 0.0
                });
                match r.unwrap_or(3) {
                    0 => x += 1,
                    1 => x -= 1,
                    2 => y += 1,
                    _ => y -= 1,
                }
            }
            predators.push(x as f64);
            prey.push(y as f64);
        }
        Outcome::Complete { predators, prey }
    }

    /// The 9 summary statistics at log-rates `log θ` (`None` if the run exceeded `max_events`).
    pub fn statistics(&self, log_rates: &[f64], rng: &mut ChaCha8Rng) -> Option<Vec<f64>> {
        let rates = [log_rates[0].exp(), log_rates[1].exp(), log_rates[2].exp(), log_rates[3].exp()];
        match self.simulate(&rates, rng) {
            Outcome::Complete { predators, prey } => Some(summary_statistics(&predators, &prey)),
            Outcome::TooManyEvents => None,
        }
    }

    /// Statistics of simulation `i` at `log_rates[i]` (rows of length 4), in parallel; simulation `i`
    /// uses stream `(seed, 0, i)`.
    pub fn simulate_many(&self, log_rates: &[Vec<f64>], seed: u64) -> Vec<Option<Vec<f64>>> {
        log_rates
            .par_iter()
            .enumerate()
            .map(|(i, t)| self.statistics(t, &mut stream(seed, 0, i as u64)))
            .collect()
    }

    /// The simulator as an [`crate::abc::Simulator`] on log-rates.
    pub fn as_simulator(self) -> Simulator {
        Arc::new(move |t: &[f64], rng: &mut ChaCha8Rng| self.statistics(t, rng))
    }
}

/// Mean, log(1 + variance), autocorrelations at lags 1 and 2 of each series, and their correlation.
pub fn summary_statistics(predators: &[f64], prey: &[f64]) -> Vec<f64> {
    let (mx, vx) = mean_var(predators);
    let (my, vy) = mean_var(prey);
    let n = predators.len() as f64;
    let cov: f64 = predators.iter().zip(prey).map(|(a, b)| (a - mx) * (b - my)).sum::<f64>() / n;
    let corr = if vx > 0.0 && vy > 0.0 { cov / (vx * vy).sqrt() } else { 0.0 };
    vec![
        mx,
        my,
        vx.ln_1p(),
        vy.ln_1p(),
        autocorrelation(predators, 1),
        autocorrelation(predators, 2),
        autocorrelation(prey, 1),
        autocorrelation(prey, 2),
        corr,
    ]
}

fn mean_var(s: &[f64]) -> (f64, f64) {
    let m = s.iter().sum::<f64>() / s.len() as f64;
    (m, s.iter().map(|v| (v - m).powi(2)).sum::<f64>() / s.len() as f64)
}

/// `Σ_t (s_t − m)(s_{t+lag} − m) / Σ_t (s_t − m)²` (0 for a constant series).
fn autocorrelation(s: &[f64], lag: usize) -> f64 {
    let (m, v) = mean_var(s);
    if v <= 0.0 || s.len() <= lag {
        return 0.0;
    }
    let c: f64 = s.iter().zip(&s[lag..]).map(|(a, b)| (a - m) * (b - m)).sum();
    c / (v * s.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn linear_birth_and_death_means_match_the_exact_ones() {
        // Without interaction (θ₁ = θ₄ = 0) the species are a pure death process (E X(t) = X₀e^{−θ₂t})
        // and a Yule process (E Y(t) = Y₀e^{θ₃t}).
        let lv = LotkaVolterra { initial: (200, 100), dt: 0.5, steps: 4, ..Default::default() };
        let rates = [0.0, 0.5, 0.3, 0.0];
        let runs = 400;
        let (mut sx, mut sy, mut sy2) = (vec![0.0; 5], vec![0.0; 5], vec![0.0; 5]);
        for r in 0..runs {
            let Outcome::Complete { predators, prey } = lv.simulate(&rates, &mut stream(1, 0, r)) else {
                panic!("no explosion expected")
            };
            for k in 0..5 {
                sx[k] += predators[k] / runs as f64;
                sy[k] += prey[k] / runs as f64;
                sy2[k] += prey[k] * prey[k] / runs as f64;
            }
        }
        for k in 0..5 {
            let t = 0.5 * k as f64;
            let (ex, ey) = (200.0 * (-0.5 * t).exp(), 100.0 * (0.3 * t).exp());
            // Yule: Var Y(t) = Y₀ e^{2θ₃t}(1 − e^{−θ₃t}); pure death: Var X = X₀ p (1 − p).
            let p = (-0.5 * t).exp();
            let se_x = (200.0 * p * (1.0 - p) / runs as f64).sqrt();
            let se_y = ((sy2[k] - sy[k] * sy[k]).max(0.0) / runs as f64).sqrt();
            assert!((sx[k] - ex).abs() <= 4.0 * se_x + 1e-9, "t={t}: predators {} vs {ex}", sx[k]);
            assert!((sy[k] - ey).abs() <= 4.0 * se_y + 1e-9, "t={t}: prey {} vs {ey}", sy[k]);
        }
    }

    #[test]
    fn large_populations_follow_the_rate_equations() {
        // Ω-scaled system: x = X/Ω obeys ẋ = a x y − b x, ẏ = c y − d x y for θ = (a/Ω, b, c, d/Ω);
        // the SSA's fluctuations are O(Ω^{−1/2}).
        let omega = 2000.0;
        let (a, b, c, d) = (1.0, 1.0, 1.0, 1.0);
        let lv = LotkaVolterra {
            initial: (omega as u64 / 2, omega as u64),
            dt: 0.25,
            steps: 4,
            max_events: 10_000_000,
        };
        let Outcome::Complete { predators, prey } =
            lv.simulate(&[a / omega, b, c, d / omega], &mut ChaCha8Rng::seed_from_u64(5))
        else {
            panic!("no explosion expected")
        };
        // RK4 on the rate equations.
        let f = |s: [f64; 2]| [a * s[0] * s[1] - b * s[0], c * s[1] - d * s[0] * s[1]];
        let (mut s, h) = ([0.5, 1.0], 1e-3);
        for k in 1..=4 {
            for _ in 0..250 {
                let k1 = f(s);
                let k2 = f([s[0] + 0.5 * h * k1[0], s[1] + 0.5 * h * k1[1]]);
                let k3 = f([s[0] + 0.5 * h * k2[0], s[1] + 0.5 * h * k2[1]]);
                let k4 = f([s[0] + h * k3[0], s[1] + h * k3[1]]);
                for i in 0..2 {
                    s[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
                }
            }
            let (px, py) = (predators[k] / omega, prey[k] / omega);
            assert!(
                (px - s[0]).abs() < 0.03 && (py - s[1]).abs() < 0.03,
                "t={}: {px},{py} vs {s:?}",
                k as f64 * 0.25
            );
        }
    }

    #[test]
    fn explosions_are_flagged_and_statistics_are_finite_and_deterministic() {
        let lv = LotkaVolterra { max_events: 5_000, ..Default::default() };
        // Prey growth e² with no predation explodes.
        assert!(lv.statistics(&[-5.0, 2.0, 2.0, -5.0], &mut stream(0, 0, 0)).is_none());
        let rows = vec![TRUE_RATES.iter().map(|r| r.ln()).collect::<Vec<f64>>(); 8];
        let big = LotkaVolterra::default();
        let many = big.simulate_many(&rows, 9);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        assert_eq!(one.install(|| big.simulate_many(&rows, 9)), many);
        for s in &many {
            let s = s.as_ref().expect("the true parameters stay within the event cap");
            assert_eq!(s.len(), 9);
            assert!(s.iter().all(|v| v.is_finite()));
            assert!(s[4..].iter().all(|r| r.abs() <= 1.0 + 1e-12));
        }
        assert_ne!(many[0], many[1]);
        // Extinct predators: constant series, finite statistics.
        let s = summary_statistics(&[0.0; 5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!((s[0], s[2], s[4], s[8]), (0.0, 0.0, 0.0, 0.0));
    }
}
