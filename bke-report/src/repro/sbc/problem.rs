//! The problems of `repro sbc`: a prior, a simulator, and the parameters' names; and the simulator
//! command sbi's sequential NPE calls between its rounds ([`simulate_command`]).

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

    /// The number of statistics the simulator returns.
    pub fn statistics(self) -> usize {
        match self {
            Problem::Conjugate1d => 1,
            Problem::Conjugate2d => 2,
            Problem::LotkaVolterra => 9,
        }
    }

    /// The problem named `name` ([`Problem::name`]).
    pub fn named(name: &str) -> anyhow::Result<Problem> {
        Problem::ALL
            .into_iter()
            .find(|q| q.name() == name)
            .ok_or_else(|| anyhow::anyhow!("unknown problem {name}"))
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

/// `bke-repro simulate PROBLEM NAME THETA OUT SEED ROW`: the simulator command that
/// `scripts/bench/sbi_npe.py --method snpe2` calls between its rounds (its docstring has the
/// contract): simulates `PROBLEM` at the θ rows of the CSV `THETA` and writes their statistics to
/// the CSV `OUT` (`x_0, x_1, …`, as `npe::write` names them; `NaN` for a failed simulation). Row
/// `i` uses the random stream `(h, 2 + ROW, i)` with `h` the FNV-1a hash of `NAME` plus `SEED`, so
/// that every problem file, seed and observation gets its own simulations, reproducibly.
pub fn simulate_command(args: &[String]) -> anyhow::Result<()> {
    let [problem, name, theta, out, seed, row] = args else {
        anyhow::bail!("usage: bke-repro simulate PROBLEM NAME THETA OUT SEED ROW");
    };
    let problem = Problem::named(problem)?;
    let text = std::fs::read_to_string(theta)?;
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|v| v.trim().parse::<f64>()).collect::<Result<_, _>>())
        .collect::<Result<_, _>>()?;
    let dim = problem.prior().dim();
    anyhow::ensure!(rows.iter().all(|r| r.len() == dim), "{theta}: every row needs {dim} parameters");
    let hash =
        name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let (seed, row): (u64, u64) = (seed.parse()?, row.parse()?);
    let sim = problem.simulator();
    let x: Vec<Option<Vec<f64>>> = rows
        .par_iter()
        .enumerate()
        .map(|(i, t)| sim(t, &mut stream(hash.wrapping_add(seed), 2 + row, i as u64)))
        .collect();
    let d = problem.statistics();
    let mut csv = (0..d).map(|k| format!("x_{k}")).collect::<Vec<_>>().join(",") + "\n";
    for r in &x {
        let cells: Vec<String> = match r {
            Some(v) => v.iter().map(|v| format!("{v:e}")).collect(),
            None => vec!["NaN".into(); d],
        };
        csv += &(cells.join(",") + "\n");
    }
    std::fs::write(out, csv)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulate_command_writes_one_row_of_statistics_per_theta_reproducibly() {
        let dir = std::env::temp_dir().join(format!("bke-sbc-simulate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (theta, out) = (dir.join("theta.csv"), dir.join("x.csv"));
        std::fs::write(&theta, "theta_0,theta_1\n0.0,1.0\n-1e0,2.5\n").unwrap();
        let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
        let args = |name: &str, row: &str| -> Vec<String> {
            vec!["conjugate-2d".into(), name.into(), path(&theta), path(&out), "0".into(), row.into()]
        };
        let read = |args: Vec<String>| {
            simulate_command(&args).unwrap();
            std::fs::read_to_string(&out).unwrap()
        };
        let first = read(args("p", "0"));
        let lines: Vec<&str> = first.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "x_0,x_1");
        let x: Vec<f64> = lines[2].split(',').map(|v| v.parse().unwrap()).collect();
        assert!((x[0] + 1.0).abs() < 3.0 && (x[1] - 2.5).abs() < 3.0, "{x:?}");
        assert_eq!(read(args("p", "0")), first);
        assert_ne!(read(args("p", "1")), first);
        assert_ne!(read(args("q", "0")), first);
        assert!(simulate_command(&args("p", "0")[..5]).is_err());
        std::fs::write(&theta, "theta_0\n0.0\n").unwrap();
        assert!(simulate_command(&args("p", "0")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
