//! The problems of `repro sbc`: a prior, a simulator, and the parameters' names.

use bke_dme::abc::{Marginal, ProductPrior, Simulator, stream};
use bke_dme::lotka_volterra::LotkaVolterra;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;
use std::sync::Arc;

/// A simulation-based-calibration problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Problem {
    /// θ ~ N(0, 1), x | θ ~ N(θ, 0.5²) (the conjugate problem of `repro lfi-budget`).
    Conjugate1d,
    /// The same in two independent coordinates.
    Conjugate2d,
    /// The stochastic Lotka–Volterra model on log-rates, `log θ ~ U[−5, 2]⁴`, 9 statistics
    /// (`bke_dme::lotka_volterra`).
    LotkaVolterra,
}

impl Problem {
    /// Every problem, in the report's order.
    pub const ALL: [Problem; 3] = [Problem::Conjugate1d, Problem::Conjugate2d, Problem::LotkaVolterra];

    /// Short name (file names, table rows, `--problems`).
    pub fn name(self) -> &'static str {
        match self {
            Problem::Conjugate1d => "conjugate-1d",
            Problem::Conjugate2d => "conjugate-2d",
            Problem::LotkaVolterra => "lotka-volterra",
        }
    }

    /// The prior of θ.
    pub fn prior(self) -> ProductPrior {
        let normal = Marginal::Normal { mean: 0.0, sd: 1.0 };
        match self {
            Problem::Conjugate1d => ProductPrior { marginals: vec![normal] },
            Problem::Conjugate2d => ProductPrior { marginals: vec![normal; 2] },
            Problem::LotkaVolterra => LotkaVolterra::prior(),
        }
    }

    /// The simulator of the statistics at θ (`None`: a Lotka–Volterra run past its event cap).
    pub fn simulator(self) -> Simulator {
        match self {
            Problem::Conjugate1d | Problem::Conjugate2d => Arc::new(|theta: &[f64], rng: &mut ChaCha8Rng| {
                Some(
                    theta
                        .iter()
                        .map(|t| {
                            let z: f64 = StandardNormal.sample(rng);
                            t + 0.5 * z
                        })
                        .collect(),
                )
            }),
            Problem::LotkaVolterra => LotkaVolterra::default().as_simulator(),
        }
    }

    /// The parameters' names (the statistics of the Lotka–Volterra model are on log-rates).
    pub fn parameter(self, k: usize) -> String {
        match self {
            Problem::LotkaVolterra => format!("log θ{}", k + 1),
            _ => format!("θ{}", k + 1),
        }
    }

    /// `n` draws of θ from the prior and their statistics, in parallel, reproducible from `seed`
    /// (draw `i` uses streams `(seed, 0, i)` and `(seed, 1, i)`). A draw whose simulation fails is
    /// replaced by the next that succeeds (streams `i + n`, `i + 2n`, …), so the pairs come from
    /// the prior conditioned on a simulation that completes; 100 failures in a row are an error.
    pub fn draws(self, n: usize, seed: u64) -> anyhow::Result<Vec<(Vec<f64>, Vec<f64>)>> {
        let (prior, sim) = (self.prior(), self.simulator());
        (0..n)
            .into_par_iter()
            .map(|i| {
                (0..100u64)
                    .find_map(|t| {
                        let index = i as u64 + t * n as u64;
                        let theta = prior.sample(&mut stream(seed, 0, index));
                        sim(&theta, &mut stream(seed, 1, index)).map(|x| (theta, x))
                    })
                    .ok_or_else(|| anyhow::anyhow!("{}: 100 simulations in a row failed", self.name()))
            })
            .collect()
    }
}
