//! `cargo xtask repro sbc [--smoke] [--reps R] [--budgets 1000,..] [--problems a,b] [--sbi]
//! [--snpe-reps R2]`:
//! simulation-based calibration (Talts et al. 2018) of every likelihood-free method of `bke lfi`
//! (issue 33).
//!
//! Per problem ([`problem::Problem`]: the conjugate Gaussian in 1-D and 2-D, Lotka–Volterra), one
//! bank of `10 · max(budgets)` simulations `(θ_i, x_i)` from the prior, and `R` replications: `θ*`
//! from the prior, `y` simulated at `θ*`, and each method's posterior at `y`, from which the
//! normalised rank of each coordinate of `θ*` ([`rank`]). At budget `n`:
//! * DME: `bke lfi`'s defaults (seed 004 Algorithm 8.1), the first `n` simulations, `n` prior
//!   samples, 200 herded super-samples;
//! * KBR: `bke lfi --method kbr`'s defaults, the same inputs;
//! * rejection ABC (5 % nearest) on the first `n` simulations, and on all `10 n`;
//! * SMC-ABC (Beaumont et al. 2009) with `n/5` particles and a budget of `10 n` fresh simulations;
//! * with `--sbi`, sbi's NPE trained once on the first `n` simulations (amortised: one network for
//!   every replication; [`npe`]), and sbi's SNPE with 2 rounds (per observation: the first `n / 2`
//!   simulations, then `n / 2` simulated at draws of the round-1 posterior at `y`) on the first
//!   `R2` replications (`--snpe-reps`, default `min(R, 20)`: it trains one network per
//!   observation).
//!
//! The bank is shared by the replications, as an amortised method's training set is: the ranks
//! check the posterior map the methods build from `n` simulations, averaged over observations from
//! the prior predictive. Reported per method: the coverage of central 50/80/95 % intervals, a χ²
//! test of uniform ranks (Bonferroni over coordinates), |posterior mean − θ*| and the width of the
//! 95 % interval (averaged over coordinates), seconds per inference, and rank histograms.

pub mod npe;
pub mod problem;
pub mod rank;

use super::{Ctx, flag, switch};
use crate::plot::{Figure, Series};
use crate::stats::{mean_se, plus_minus};
use crate::table::Table;
use bke_core::{Params, Points};
use bke_dme::abc::{RejectionAbcParams, SmcAbcData, SmcAbcParams, WeightedSamples, stream};
use bke_dme::herding::{HerdingParams, PosteriorEmbedding};
use bke_dme::kbr::KbrParams;
use bke_dme::lfi::{LfiData, LfiParams};
use bke_linalg::Faer;
use problem::Problem;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Nominal levels of the central intervals whose coverage is reported.
const LEVELS: [f64; 3] = [0.5, 0.8, 0.95];

/// The bke methods, in the table's order ("NPE (sbi)" follows with `--sbi`).
const METHODS: [&str; 5] = ["DME", "KBR", "rejection ABC", "rejection ABC 10×", "SMC-ABC 10×"];

/// Herded super-samples of the kernel methods' posteriors.
const HERDED: usize = 200;

/// What one method produced over the replications at one budget.
#[derive(Default)]
struct Record {
    /// Normalised ranks, per coordinate, one per completed replication.
    ranks: Vec<Vec<f64>>,
    /// |posterior mean − θ*| averaged over coordinates, per replication.
    error: Vec<f64>,
    /// Width of the central 95 % interval averaged over coordinates, per replication.
    width: Vec<f64>,
    /// Wall seconds per inference.
    seconds: Vec<f64>,
    /// Replications that failed, and the first failure's message.
    failed: usize,
    first_failure: Option<String>,
}

impl Record {
    fn new(dim: usize) -> Self {
        Self { ranks: vec![Vec::new(); dim], ..Default::default() }
    }

    /// Adds one replication: ranks `u`, posterior means and 95 % intervals per coordinate.
    fn push(&mut self, truth: &[f64], u: &[f64], mean: &[f64], interval: &[(f64, f64)], seconds: f64) {
        let d = truth.len() as f64;
        for (k, &u) in u.iter().enumerate() {
            self.ranks[k].push(u);
        }
        self.error.push(mean.iter().zip(truth).map(|(m, t)| (m - t).abs()).sum::<f64>() / d);
        self.width.push(interval.iter().map(|(lo, hi)| hi - lo).sum::<f64>() / d);
        self.seconds.push(seconds);
    }

    fn fail(&mut self, why: String) {
        self.failed += 1;
        self.first_failure.get_or_insert(why);
    }

    /// Coverage of the central interval at `level` over replications and coordinates, with its
    /// binomial standard error (coordinates counted as independent).
    fn coverage(&self, level: f64) -> (f64, f64) {
        let all: Vec<f64> = self.ranks.iter().flatten().copied().collect();
        let c = all.iter().filter(|&&u| rank::covers(u, level)).count() as f64 / all.len().max(1) as f64;
        (c, (c * (1.0 - c) / all.len().max(1) as f64).sqrt())
    }
}

/// The simulations and prior samples a budget's methods share, and the observations.
struct Setting {
    problem: Problem,
    /// The bank: `10 · max(budgets)` simulations from the prior.
    bank: Vec<(Vec<f64>, Vec<f64>)>,
    /// `(θ*, y)` per replication.
    observations: Vec<(Vec<f64>, Vec<f64>)>,
}

fn points(name: &str, rows: impl Iterator<Item = Vec<f64>>) -> anyhow::Result<Points> {
    Ok(Points::from_rows(name, &rows.collect::<Vec<_>>())?)
}

impl Setting {
    /// The first `n` simulations of the bank, `prior` samples and the observation `y`.
    fn data(&self, n: usize, prior: &Points, y: &[f64]) -> anyhow::Result<LfiData> {
        let bank = &self.bank[..n.min(self.bank.len())];
        let theta = points("θ", bank.iter().map(|s| s.0.clone()))?;
        let stats = points("x", bank.iter().map(|s| s.1.clone()))?;
        Ok(LfiData::new(theta, stats, prior.clone(), y.to_vec())?)
    }

    /// The posterior of `method` at budget `n` for replication `rep`.
    fn posterior(
        &self,
        method: &str,
        n: usize,
        rep: usize,
        prior: &Points,
    ) -> anyhow::Result<WeightedSamples> {
        let y = &self.observations[rep].1;
        let herd = |e: &PosteriorEmbedding| -> anyhow::Result<WeightedSamples> {
            let params = HerdingParams { samples: HERDED, ..Default::default() };
            Ok(WeightedSamples::uniform(e.herd(prior, &params)?))
        };
        Ok(match method {
            "DME" => herd(LfiParams::default().check()?.fit::<Faer>(&self.data(n, prior, y)?)?.embedding())?,
            "KBR" => herd(KbrParams::default().check()?.fit::<Faer>(&self.data(n, prior, y)?)?.embedding())?,
            "rejection ABC" => {
                RejectionAbcParams::default().check()?.fit::<Faer>(&self.data(n, prior, y)?)?.posterior
            }
            "rejection ABC 10×" => {
                RejectionAbcParams::default().check()?.fit::<Faer>(&self.data(10 * n, prior, y)?)?.posterior
            }
            "SMC-ABC 10×" => {
                let data = SmcAbcData {
                    prior: self.problem.prior(),
                    simulator: self.problem.simulator(),
                    observed: y.to_vec(),
                };
                let p = SmcAbcParams {
                    particles: (n / 5).max(20),
                    max_simulations: 10 * n,
                    seed: 9000 + rep as u64,
                    ..Default::default()
                };
                p.check()?.fit::<Faer>(&data)?.posterior
            }
            other => anyhow::bail!("unknown method {other}"),
        })
    }
}

/// Runs every method at budget `n` on every replication.
fn study(ctx: &Ctx, setting: &Setting, n: usize) -> anyhow::Result<Vec<Record>> {
    let dim = setting.problem.prior().dim();
    let prior_rows: Vec<Vec<f64>> =
        (0..n).map(|i| setting.problem.prior().sample(&mut stream(31, n as u64, i as u64))).collect();
    let prior = Points::from_rows("θ̃", &prior_rows)?;
    let mut jitter = ChaCha8Rng::seed_from_u64(n as u64);
    let mut records: Vec<Record> = METHODS.iter().map(|_| Record::new(dim)).collect();
    for (rep, (truth, _)) in setting.observations.iter().enumerate() {
        for (method, record) in METHODS.iter().zip(&mut records) {
            let t0 = Instant::now();
            match setting.posterior(method, n, rep, &prior) {
                Ok(post) => {
                    let u: Vec<f64> =
                        (0..dim).map(|k| rank::normalised_rank(&post, k, truth[k], &mut jitter)).collect();
                    let interval: Vec<(f64, f64)> =
                        (0..dim).map(|k| (post.quantile(k, 0.025), post.quantile(k, 0.975))).collect();
                    record.push(truth, &u, &post.mean(), &interval, t0.elapsed().as_secs_f64());
                }
                Err(e) => record.fail(e.to_string()),
            }
        }
        if (rep + 1) % 10 == 0 || rep + 1 == setting.observations.len() {
            ctx.progress(&format!(
                "{} n = {n}: {} of {} replications",
                setting.problem.name(),
                rep + 1,
                setting.observations.len()
            ));
        }
    }
    Ok(records)
}

/// Replications of SNPE-2 by default: it trains a network per observation.
const SNPE_REPS: usize = 20;

/// sbi's records with `method`, one per (problem, budget), in order, over the first `reps`
/// replications: NPE trained on the first `n` simulations of the bank, SNPE-2 on the first `n / 2`
/// and `n / 2` of its own.
fn sbi_records(
    ctx: &Ctx,
    settings: &[Setting],
    budgets: &[usize],
    snpe: bool,
    reps: usize,
) -> anyhow::Result<Vec<Record>> {
    let dir = ctx.dir(if snpe { "sbc/sbi-snpe2" } else { "sbc/sbi" })?;
    let name = |s: &Setting, n: usize| format!("{}-n{n}", s.problem.name());
    for s in settings {
        let (truth, observed): (Vec<Vec<f64>>, Vec<Vec<f64>>) =
            s.observations[..reps].iter().cloned().unzip();
        for &n in budgets {
            let prior = s.problem.prior();
            let p = npe::NpeProblem {
                name: name(s, n),
                sims: &s.bank[..if snpe { n / 2 } else { n }],
                observed: &observed,
                truth: &truth,
                prior: &prior,
            };
            npe::write(&dir, &p)?;
        }
    }
    let json = if snpe {
        ctx.progress(&format!("sbi's SNPE, 2 rounds, on {reps} replications (scripts/bench/sbi_npe.py)"));
        let mut json = serde_json::Value::Null;
        for s in settings {
            let only: Vec<String> = budgets.iter().map(|&n| name(s, n)).collect();
            json = npe::run(&dir, 3600, npe::Method::Snpe2(s.problem), &only)?;
        }
        json
    } else {
        ctx.progress("sbi's NPE on the same simulations (scripts/bench/sbi_npe.py)");
        let only: Vec<String> =
            settings.iter().flat_map(|s| budgets.iter().map(move |&n| name(s, n))).collect();
        npe::run(&dir, 1800, npe::Method::Npe, &only)?
    };
    let mut jitter = ChaCha8Rng::seed_from_u64(if snpe { 6 } else { 5 });
    let mut out = Vec::new();
    for s in settings {
        for &n in budgets {
            let dim = s.problem.prior().dim();
            let mut record = Record::new(dim);
            match npe::result(&json, &name(s, n)) {
                Ok((rows, seconds)) => {
                    let per = seconds / rows.len().max(1) as f64;
                    for ((truth, _), row) in s.observations.iter().zip(rows) {
                        match row {
                            Some(r) => {
                                let u: Vec<f64> = r
                                    .rank
                                    .iter()
                                    .map(|&k| {
                                        (k + rand::Rng::random::<f64>(&mut jitter)) / (r.samples as f64 + 1.0)
                                    })
                                    .collect();
                                record.push(truth, &u, &r.mean, &r.interval, per);
                            }
                            None => record.fail("no posterior draws".into()),
                        }
                    }
                }
                Err(e) => record.fail(e),
            }
            out.push(record);
        }
    }
    Ok(out)
}

/// Runs the study.
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let reps: usize = flag("--reps").map(|r| r.parse()).transpose()?.unwrap_or(ctx.size(100, 10));
    let budgets: Vec<usize> = match flag("--budgets") {
        Some(b) => b.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None => vec![ctx.size(500, 100)],
    };
    anyhow::ensure!(
        budgets.iter().all(|&n| n >= 20),
        "--budgets: every budget must be at least 20 simulations"
    );
    let problems: Vec<Problem> = match flag("--problems") {
        Some(list) => list
            .split(',')
            .map(|p| {
                Problem::ALL
                    .into_iter()
                    .find(|q| q.name() == p)
                    .ok_or_else(|| anyhow::anyhow!("unknown problem {p}"))
            })
            .collect::<anyhow::Result<_>>()?,
        None => Problem::ALL.to_vec(),
    };
    let largest = budgets.iter().copied().max().unwrap_or(1000);
    ctx.progress(&format!("== simulation-based calibration: {reps} replications, budgets {budgets:?}"));
    let mut settings = Vec::new();
    let mut records = Vec::new();
    for &problem in &problems {
        // seeds by problem, so that a --problems subset reproduces the full run's rows
        let i = Problem::ALL.iter().position(|&q| q == problem).unwrap_or(0);
        let t0 = Instant::now();
        let setting = Setting {
            problem,
            bank: problem.draws(10 * largest, 1000 + i as u64)?,
            observations: problem.draws(reps, 2000 + i as u64)?,
        };
        ctx.progress(&format!(
            "{}: {} simulations in {:.1} s",
            problem.name(),
            10 * largest + reps,
            t0.elapsed().as_secs_f64()
        ));
        for &n in &budgets {
            records.push(study(ctx, &setting, n)?);
        }
        settings.push(setting);
    }
    let mut sbi = Vec::new();
    if switch("--sbi") {
        sbi.push(("NPE (sbi)", reps, sbi_records(ctx, &settings, &budgets, false, reps)?));
        let snpe_reps: usize =
            flag("--snpe-reps").map(|r| r.parse()).transpose()?.unwrap_or(SNPE_REPS.min(reps)).min(reps);
        if snpe_reps > 0 {
            sbi.push(("SNPE-2 (sbi)", snpe_reps, sbi_records(ctx, &settings, &budgets, true, snpe_reps)?));
        }
    }
    report(ctx, &settings, &budgets, records, sbi, reps)
}

/// The table row of one method at one budget.
fn row(problem: Problem, n: usize, method: &str, used: usize, r: &Record) -> Vec<String> {
    let mut row = vec![problem.name().to_string(), n.to_string(), method.to_string(), used.to_string()];
    if r.error.is_empty() {
        row.extend(["–".to_string(), "–".into(), "–".into(), "–".into(), "–".into(), "–".into(), "–".into()]);
    } else {
        row.extend(LEVELS.iter().map(|&c| plus_minus(r.coverage(c), 2)));
        row.push(format!("{:.2e}", rank::joint_uniformity_p(&r.ranks)));
        row.push(plus_minus(mean_se(&r.error), 3));
        row.push(plus_minus(mean_se(&r.width), 2));
        row.push(format!("{:.3}", mean_se(&r.seconds).0));
    }
    row.push(match &r.first_failure {
        Some(why) => format!("{} ({why})", r.failed),
        None => r.failed.to_string(),
    });
    row
}

/// Issue 33's criterion at one budget: where the DME's mean error is within 1.5× that of rejection
/// ABC at 10× the budget, its 95 % intervals must cover θ* in 90–99 % of the replications.
fn criterion(problem: Problem, n: usize, at_n: &[(String, usize, Record)]) -> String {
    let find = |m: &str| at_n.iter().find(|e| e.0 == m).map(|e| &e.2).filter(|r| !r.error.is_empty());
    let (Some(dme), Some(abc)) = (find("DME"), find("rejection ABC 10×")) else {
        return format!("{} n = {n}: the DME or rejection ABC 10× has no result", problem.name());
    };
    let ratio = mean_se(&dme.error).0 / mean_se(&abc.error).0;
    let cover = dme.coverage(0.95).0;
    let verdict = match (ratio <= 1.5, (0.9..=0.99).contains(&cover)) {
        (false, _) => "the criterion does not apply",
        (true, true) => "within 90–99 %",
        (true, false) => "outside 90–99 %",
    };
    format!(
        "{} n = {n}: DME mean error {ratio:.2}× rejection ABC's at 10 n, 95 % coverage {cover:.2}: {verdict}",
        problem.name()
    )
}

/// The rank histogram of `r` (all coordinates pooled) as a step line of count / expected count.
fn histogram_series(method: &str, r: &Record, bins: usize) -> Series {
    let all: Vec<f64> = r.ranks.iter().flatten().copied().collect();
    let counts = rank::histogram(&all, bins);
    let e = all.len().max(1) as f64 / bins as f64;
    let steps = counts
        .iter()
        .enumerate()
        .flat_map(|(b, &c)| {
            [(b as f64 / bins as f64, c as f64 / e), ((b + 1) as f64 / bins as f64, c as f64 / e)]
        })
        .collect();
    Series::line(method, steps)
}

/// Writes the table and one rank-histogram figure per problem (at the largest budget).
fn report(
    ctx: &mut Ctx,
    settings: &[Setting],
    budgets: &[usize],
    records: Vec<Vec<Record>>,
    sbi: Vec<(&str, usize, Vec<Record>)>,
    reps: usize,
) -> anyhow::Result<()> {
    let dir = ctx.dir("sbc")?;
    let mut table = Table::new(
        "Simulation-based calibration: coverage of central intervals and uniformity of ranks (mean ± se)",
        &[
            "problem",
            "n",
            "method",
            "simulations used",
            "50% coverage",
            "80% coverage",
            "95% coverage",
            "χ² uniformity p",
            "|mean − θ*|",
            "95% width",
            "s / inference",
            "failed",
        ],
    );
    let mut section = ctx.section("calibration", "Simulation-based calibration of likelihood-free inference (issue 33)").intro(format!(
        "{reps} replications per problem: θ* from the prior, data simulated at θ*, each method's posterior at the data, and \
         the rank of θ* among the posterior's draws. A calibrated posterior has uniform ranks (a flat histogram) and \
         central intervals that cover θ* at their nominal rate."
    ));
    let notes: Vec<String> = sbi
        .iter()
        .filter(|e| e.1 < reps)
        .map(|(m, r, _)| format!("{m} on the first {r} replications only"))
        .collect();
    let mut sbi: Vec<(&str, std::vec::IntoIter<Record>)> =
        sbi.into_iter().map(|(m, _, r)| (m, r.into_iter())).collect();
    let mut records = records.into_iter();
    for s in settings {
        let dim = s.problem.prior().dim();
        let mut largest: Vec<(String, Record)> = Vec::new();
        for &n in budgets {
            let mut at_n: Vec<(String, usize, Record)> = METHODS
                .iter()
                .zip(records.next().unwrap_or_default())
                .map(|(m, r)| (m.to_string(), if m.ends_with("10×") { 10 * n } else { n }, r))
                .collect();
            for (m, r) in &mut sbi {
                if let Some(r) = r.next() {
                    at_n.push((m.to_string(), n, r));
                }
            }
            for (m, used, r) in &at_n {
                table.push(row(s.problem, n, m, *used, r));
            }
            section.push_measured(criterion(s.problem, n, &at_n));
            if Some(&n) == budgets.iter().max() {
                largest = at_n.into_iter().map(|(m, _, r)| (m, r)).collect();
            }
        }
        let n = budgets.iter().max().copied().unwrap_or(0);
        let bins = rank::bins_for(reps * dim);
        let sd = ((reps * dim) as f64 / bins as f64 * (1.0 - 1.0 / bins as f64)).sqrt()
            / ((reps * dim) as f64 / bins as f64);
        let xs: Vec<f64> = (0..=bins).map(|b| b as f64 / bins as f64).collect();
        let mut fig = Figure::new(
            &format!("{}: SBC rank histogram, n = {n}", s.problem.name()),
            "normalised rank of θ*",
            "count / expected count",
        )
        .with(Series::band(
            "uniform ± 2 sd",
            &xs,
            vec![(1.0 - 2.0 * sd).max(0.0); xs.len()],
            vec![1.0 + 2.0 * sd; xs.len()],
        ))
        .with(Series::hline("", 1.0));
        for (m, r) in &largest {
            if !r.error.is_empty() {
                fig = fig.with(histogram_series(m, r, bins));
            }
        }
        fig.save(&dir.join(format!("sbc_{}.svg", s.problem.name())))?;
        let names: Vec<String> = (0..dim).map(|k| s.problem.parameter(k)).collect();
        section.push_figure(
            &fig,
            &format!(
                "Ranks of θ* ({}) pooled over coordinates, {bins} bins; the band is ±2 sd of a bin under uniform ranks. \
                 A ∪ shape is an overconfident posterior, a ∩ shape an underconfident one, a slope a biased one.",
                names.join(", ")
            ),
        )?;
    }
    table.notes.push(
        "coverage's standard error counts coordinates as independent; χ² p is the smallest over coordinates times their number \
         (10 bins, fewer under 5 ranks per bin); SMC-ABC 10× runs 10 n fresh simulations per replication"
            .into(),
    );
    if sbi.iter().any(|(m, _)| m.starts_with("SNPE")) {
        table.notes.push(
            "SNPE-2 (sbi) trains on n / 2 simulations of the bank, then per replication on n / 2 more simulated at its \
             round-1 posterior's draws; its time counts both rounds, sampling and its simulations"
                .into(),
        );
    }
    table.notes.extend(notes);
    table.write_files(&dir, "sbc")?;
    section.push_table(&table);
    ctx.publish(section)
}
