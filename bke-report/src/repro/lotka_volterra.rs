//! `cargo xtask repro lotka-volterra [--smoke] [--reps R] [--budgets 500,1000,2000,5000] [--sbi]`: seed 004
//! Fig. 5 (right) — likelihood-free inference of the stochastic Lotka–Volterra model (issue 17
//! part 2), in the setting of Papamakarios & Murray (2016) described in `bke_dme::lotka_volterra`.
//!
//! The observation is one simulation at the true rates `θ = (0.01, 0.5, 1, 0.01)` (stream 2016).
//! Per repetition, a pool of `10 · max(budgets)` simulations at prior draws of `log θ ~ U[−5, 2]⁴`
//! is run in parallel; budget `n` uses its first `n` (runs that exceeded the event cap are dropped:
//! their statistics do not exist, and rejection ABC would never accept them). Methods at budget `n`:
//! * DME with q̄-learned bandwidths (seed 004 Algorithm 8.1 line 11; 2 starts), `n` prior samples
//!   `log θ̃ ~ U[−5, 2]⁴`, 200 herded super-samples;
//! * KBR(b) with the library defaults, the same prior samples, 200 herded samples;
//! * rejection ABC (5% nearest, library default) on the `n` simulations, and on `10 n`;
//! * SMC-ABC (Beaumont et al. 2009) with `n/5` particles and a budget of `n` simulations, and of
//!   `10 n`;
//! * with `--sbi`, sbi's NPE (single round, its default flow) trained on the same `n` simulations
//!   (`repro sbc`'s anchor, [`super::sbc::npe`]); its time is training plus sampling; and sbi's
//!   SNPE with 2 rounds: the first `n / 2` simulations, then `n / 2` simulated (by the same
//!   simulator, through `bke-repro simulate`) at draws of the round-1 posterior at the observation;
//!   its time is both rounds' training, sampling and round 2's simulations.
//!
//! Measured per method and budget: the error of the posterior mean of `log θ` (mean over the four
//! parameters of |mean − true|), the mean width of the 95% central intervals, and their coverage
//! of the true values (over parameters and repetitions); mean ± standard error over repetitions,
//! drawn as the seed's Fig. 5 (right) with error bars. The seed's message: DME at 2000 simulations
//! is as accurate as ABC with more than 100 000.

use super::sbc::npe;
use super::sbc::problem::Problem;
use super::{Ctx, flag, switch};
use crate::plot::{Figure, Series};
use crate::stats::{mean_se, plus_minus};
use crate::table::Table;
use anyhow::Context;
use bke_core::{Params, Points};
use bke_dme::abc::{RejectionAbcParams, SmcAbcData, SmcAbcParams, WeightedSamples, stream};
use bke_dme::herding::HerdingParams;
use bke_dme::kbr::KbrParams;
use bke_dme::learn::MultiStartOptions;
use bke_dme::lfi::{LfiData, LfiLearnParams, LfiParams};
use bke_dme::lotka_volterra::{LotkaVolterra, TRUE_RATES};
use bke_linalg::Faer;
use std::path::Path;

/// The methods compared ("NPE (sbi)" and "SNPE-2 (sbi)" follow with `--sbi`).
const METHODS: [&str; 6] =
    ["DME (learned)", "KBR(b)", "rejection ABC", "rejection ABC 10×", "SMC-ABC", "SMC-ABC 10×"];

/// The anchors' names in the tables.
const NPE: &str = "NPE (sbi)";
const SNPE: &str = "SNPE-2 (sbi)";

/// Posterior summary of one method on one data set.
struct Summary {
    /// Mean over parameters of |posterior mean − true log θ|.
    mean_error: f64,
    /// Mean width of the 95% intervals.
    width: f64,
    /// Number of parameters whose 95% interval holds the true value.
    covered: usize,
    /// Per parameter (mean, 2.5%, 97.5%).
    per_param: Vec<(f64, f64, f64)>,
    /// Wall seconds of the method.
    seconds: f64,
}

impl Summary {
    /// From the posterior mean and 95% interval of each parameter.
    fn new(per_param: Vec<(f64, f64, f64)>, truth: &[f64], seconds: f64) -> Self {
        let p = truth.len() as f64;
        Summary {
            mean_error: per_param.iter().zip(truth).map(|(m, t)| (m.0 - t).abs()).sum::<f64>() / p,
            width: per_param.iter().map(|m| m.2 - m.1).sum::<f64>() / p,
            covered: per_param.iter().zip(truth).filter(|(m, t)| (m.1..=m.2).contains(*t)).count(),
            per_param,
            seconds,
        }
    }
}

fn summarise(post: &WeightedSamples, truth: &[f64], seconds: f64) -> Summary {
    let mean = post.mean();
    let per_param =
        (0..truth.len()).map(|k| (mean[k], post.quantile(k, 0.025), post.quantile(k, 0.975))).collect();
    Summary::new(per_param, truth, seconds)
}

/// The simulation pool of one repetition: log-rates and their statistics (`None`: past the event cap).
type Pool = (Vec<Vec<f64>>, Vec<Option<Vec<f64>>>);

/// sbi's name for repetition `rep` at budget `n`.
fn npe_name(rep: u64, n: usize) -> String {
    format!("lv-rep{rep}-n{n}")
}

/// Writes the simulations of rows `..n` of `pool` for sbi's NPE (failed runs dropped), or with
/// `snpe` the rows `..n / 2` for SNPE-2's first round (failed runs as NaN statistics, which sbi
/// drops: the round's budget is the rows written).
fn write_npe(
    dir: &Path,
    rep: u64,
    n: usize,
    pool: &Pool,
    observed: &[f64],
    truth: &[f64],
    snpe: bool,
) -> anyhow::Result<()> {
    let rows = if snpe { n / 2 } else { n };
    let failed = |s: &Option<Vec<f64>>| s.clone().or_else(|| snpe.then(|| vec![f64::NAN; observed.len()]));
    let sims: Vec<(Vec<f64>, Vec<f64>)> = pool.0[..rows]
        .iter()
        .zip(&pool.1[..rows])
        .filter_map(|(t, s)| failed(s).map(|s| (t.clone(), s)))
        .collect();
    let prior = LotkaVolterra::prior();
    let p = npe::NpeProblem {
        name: npe_name(rep, n),
        sims: &sims,
        observed: &[observed.to_vec()],
        truth: &[truth.to_vec()],
        prior: &prior,
    };
    npe::write(dir, &p)
}

/// sbi's summaries, per budget and repetition (NPE, or with `snpe` SNPE-2).
fn npe_results(
    ctx: &Ctx,
    dir: &Path,
    budgets: &[usize],
    reps: u64,
    truth: &[f64],
    snpe: bool,
) -> anyhow::Result<Vec<Vec<Option<Summary>>>> {
    // only this run's problems: the folder keeps those of earlier runs (and sbi.json their results)
    let only: Vec<String> =
        budgets.iter().flat_map(|&n| (0..reps).map(move |rep| npe_name(rep, n))).collect();
    let json = if snpe {
        ctx.progress("sbi's SNPE, 2 rounds of n / 2 simulations (scripts/bench/sbi_npe.py)");
        npe::run(dir, 3600, npe::Method::Snpe2(Problem::LotkaVolterra), &only)?
    } else {
        ctx.progress("sbi's NPE on the same simulations (scripts/bench/sbi_npe.py)");
        npe::run(dir, 1800, npe::Method::Npe, &only)?
    };
    let label = if snpe { SNPE } else { NPE };
    Ok(budgets
        .iter()
        .map(|&n| {
            (0..reps)
                .map(|rep| match npe::result(&json, &npe_name(rep, n)) {
                    Ok((rows, seconds)) => rows.into_iter().next().flatten().map(|r| {
                        let per =
                            r.mean.iter().zip(&r.interval).map(|(m, (lo, hi))| (*m, *lo, *hi)).collect();
                        Summary::new(per, truth, seconds)
                    }),
                    Err(e) => {
                        ctx.progress(&format!("rep {rep} n = {n:<5} {label:<18} failed: {e}"));
                        None
                    }
                })
                .collect()
        })
        .collect())
}

/// Simulations with statistics (failed runs dropped) from rows `..n` of the pool.
fn simulations(pool: &[Vec<f64>], stats: &[Option<Vec<f64>>], n: usize) -> anyhow::Result<(Points, Points)> {
    let (theta, x): (Vec<Vec<f64>>, Vec<Vec<f64>>) =
        pool[..n].iter().zip(&stats[..n]).filter_map(|(t, s)| s.clone().map(|s| (t.clone(), s))).unzip();
    Ok((Points::from_rows("log θ", &theta)?, Points::from_rows("statistics", &x)?))
}

fn herded(emb: &bke_dme::herding::PosteriorEmbedding, prior: &Points) -> anyhow::Result<WeightedSamples> {
    Ok(WeightedSamples::uniform(emb.herd(prior, &HerdingParams { samples: 200, ..Default::default() })?))
}

/// One method at budget `n` in repetition `rep`.
fn infer(
    method: &str,
    n: usize,
    rep: u64,
    pool: &Pool,
    prior: &Points,
    observed: &[f64],
) -> anyhow::Result<WeightedSamples> {
    let lfi = |n: usize| -> anyhow::Result<LfiData> {
        let (theta, x) = simulations(&pool.0, &pool.1, n)?;
        Ok(LfiData::new(theta, x, prior.clone(), observed.to_vec())?)
    };
    Ok(match method {
        "DME (learned)" => {
            let search = MultiStartOptions { starts: 2, seed: rep, ..Default::default() };
            let p = LfiParams {
                learn: Some(LfiLearnParams { search, ..Default::default() }),
                ..Default::default()
            };
            herded(p.check()?.fit::<Faer>(&lfi(n)?)?.embedding(), prior)?
        }
        "KBR(b)" => herded(KbrParams::default().check()?.fit::<Faer>(&lfi(n)?)?.embedding(), prior)?,
        "rejection ABC" => RejectionAbcParams::default().check()?.fit::<Faer>(&lfi(n)?)?.posterior,
        "rejection ABC 10×" => RejectionAbcParams::default().check()?.fit::<Faer>(&lfi(10 * n)?)?.posterior,
        _ => {
            let data = SmcAbcData {
                prior: LotkaVolterra::prior(),
                simulator: LotkaVolterra::default().as_simulator(),
                observed: observed.to_vec(),
            };
            let budget = if method.ends_with("10×") { 10 * n } else { n };
            let p = SmcAbcParams {
                particles: n / 5,
                max_simulations: budget,
                seed: 7000 + rep,
                ..Default::default()
            };
            p.check()?.fit::<Faer>(&data)?.posterior
        }
    })
}

/// Runs the study.
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let smoke = ctx.smoke;
    let reps: u64 = flag("--reps").map(|r| r.parse()).transpose()?.unwrap_or(if smoke { 1 } else { 3 });
    let budgets: Vec<usize> = match flag("--budgets") {
        Some(b) => b.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None if smoke => vec![200],
        None => vec![500, 1000, 2000, 5000],
    };
    let dir = ctx.dir("lotka-volterra")?;
    let lv = LotkaVolterra::default();
    let truth: Vec<f64> = TRUE_RATES.iter().map(|r| r.ln()).collect();
    let observed = lv
        .statistics(&truth, &mut stream(2016, 0, 0))
        .context("the observed data set exceeded the simulator's event cap")?;
    ctx.progress(&format!(
        "== seed 004 Fig. 5 (right): Lotka–Volterra, {reps} repetition(s), budgets {budgets:?}"
    ));
    ctx.progress(&format!("observed statistics {observed:.3?}"));
    let n_pool = 10 * budgets.iter().max().copied().unwrap_or(500);
    let mut results: Vec<Vec<Vec<Option<Summary>>>> =
        METHODS.iter().map(|_| budgets.iter().map(|_| Vec::new()).collect()).collect();
    let sbi = switch("--sbi").then(|| ctx.dir("lotka-volterra/sbi")).transpose()?;
    let snpe = switch("--sbi").then(|| ctx.dir("lotka-volterra/sbi-snpe2")).transpose()?;
    for rep in 0..reps {
        let mut rng = stream(100 + rep, 0, 0);
        let prior_rows: Vec<Vec<f64>> =
            (0..n_pool).map(|_| LotkaVolterra::prior().sample(&mut rng)).collect();
        let t0 = std::time::Instant::now();
        let stats = lv.simulate_many(&prior_rows, 200 + rep);
        let failed = stats.iter().filter(|s| s.is_none()).count();
        ctx.progress(&format!(
            "rep {rep}: {n_pool} simulations in {:.1} s, {failed} exceeded the event cap",
            t0.elapsed().as_secs_f64()
        ));
        let pool = (prior_rows, stats);
        for (b, &n) in budgets.iter().enumerate() {
            for (dir, is_snpe) in [(&sbi, false), (&snpe, true)] {
                if let Some(dir) = dir {
                    write_npe(dir, rep, n, &pool, &observed, &truth, is_snpe)?;
                }
            }
            let mut prng = stream(300 + rep, 0, n as u64);
            let prior_rows: Vec<Vec<f64>> =
                (0..n).map(|_| LotkaVolterra::prior().sample(&mut prng)).collect();
            let prior = Points::from_rows("log θ̃", &prior_rows)?;
            for (mi, method) in METHODS.iter().enumerate() {
                let t0 = std::time::Instant::now();
                match infer(method, n, rep, &pool, &prior, &observed) {
                    Ok(post) => {
                        let s = summarise(&post, &truth, t0.elapsed().as_secs_f64());
                        ctx.progress(&format!(
                            "rep {rep} n = {n:<5} {method:<18} mean err {:.3}  95% width {:.2}  covered {}/4  ({:.1} s)",
                            s.mean_error,
                            s.width,
                            s.covered,
                            t0.elapsed().as_secs_f64()
                        ));
                        results[mi][b].push(Some(s));
                    }
                    Err(e) => {
                        ctx.progress(&format!("rep {rep} n = {n:<5} {method:<18} failed: {e}"));
                        results[mi][b].push(None);
                    }
                }
            }
        }
    }
    let mut methods: Vec<&str> = METHODS.to_vec();
    for (dir, is_snpe) in [(&sbi, false), (&snpe, true)] {
        if let Some(dir) = dir {
            results.push(npe_results(ctx, dir, &budgets, reps, &truth, is_snpe)?);
            methods.push(if is_snpe { SNPE } else { NPE });
        }
    }
    report(ctx, &dir, &methods, &budgets, &truth, &results, reps)
}

/// Writes the tables and the figure.
fn report(
    ctx: &mut Ctx,
    dir: &Path,
    methods: &[&str],
    budgets: &[usize],
    truth: &[f64],
    results: &[Vec<Vec<Option<Summary>>>],
    reps: u64,
) -> anyhow::Result<()> {
    let mut table = Table::new(
        "Lotka–Volterra: posterior of log θ vs simulation budget n (mean ± se over repetitions)",
        &[
            "method",
            "n",
            "simulations used",
            "|mean − true| (avg over 4)",
            "95% width",
            "coverage",
            "s / run",
            "failed",
        ],
    );
    let mut intervals = Table::new(
        "Lotka–Volterra: posterior mean [95% interval] of each log θ_k, repetition 0",
        &["method", "n", "log θ₁", "log θ₂", "log θ₃", "log θ₄"],
    );
    let mut plot =
        Figure::new("Lotka–Volterra: posterior-mean error of log θ", "simulations used", "|mean − true|")
            .log_x();
    for (mi, method) in methods.iter().enumerate() {
        let (mut curve, mut lower, mut upper) = (Vec::new(), Vec::new(), Vec::new());
        for (b, &n) in budgets.iter().enumerate() {
            let runs: Vec<&Summary> = results[mi][b].iter().flatten().collect();
            let failed = results[mi][b].len() - runs.len();
            if runs.is_empty() {
                let mut row = vec![
                    method.to_string(),
                    n.to_string(),
                    "–".into(),
                    "failed".into(),
                    "–".into(),
                    "–".into(),
                    "–".into(),
                ];
                row.push(failed.to_string());
                table.push(row);
                continue;
            }
            let err = mean_se(&runs.iter().map(|s| s.mean_error).collect::<Vec<_>>());
            let width = mean_se(&runs.iter().map(|s| s.width).collect::<Vec<_>>());
            let covered: usize = runs.iter().map(|s| s.covered).sum();
            let used = if method.ends_with("10×") { 10 * n } else { n };
            table.push(vec![
                method.to_string(),
                n.to_string(),
                used.to_string(),
                plus_minus(err, 3),
                plus_minus(width, 2),
                format!("{covered}/{}", 4 * runs.len()),
                format!("{:.1}", runs.iter().map(|s| s.seconds).sum::<f64>() / runs.len() as f64),
                failed.to_string(),
            ]);
            let cells = runs[0].per_param.iter().map(|(m, lo, hi)| format!("{m:.2} [{lo:.2}, {hi:.2}]"));
            intervals.push([method.to_string(), n.to_string()].into_iter().chain(cells).collect());
            curve.push((used as f64, err.0));
            let se = if err.1.is_finite() { err.1 } else { 0.0 };
            lower.push(err.0 - se);
            upper.push(err.0 + se);
        }
        plot = plot
            .with(Series::line(method, curve.clone()).color(mi))
            .with(Series::error_bars("", curve, lower, upper).color(mi));
    }
    let truth_cells = truth.iter().map(|t| format!("{t:.2}"));
    intervals.push(["true".to_string(), "".to_string()].into_iter().chain(truth_cells).collect());
    plot.save(&dir.join("lv_error.svg"))?;
    let note = format!(
        "{reps} repetition(s); setting of Papamakarios & Murray (2016): initial (50, 100), observed every 0.2 up to t = 30, \
         9 statistics, log θ ~ U[−5, 2]⁴, true θ = (0.01, 0.5, 1, 0.01); runs over 100 000 events dropped. Seed 004 Fig. 5: \
         DME at 2000 simulations competitive with ABC at > 100 000"
    );
    table.notes.push(note);
    intervals.write_files(dir, "lv_intervals")?;
    table.write_files(dir, "lv_error")?;
    let section = ctx
        .section("methods", "Lotka–Volterra likelihood-free inference (seed 004 Fig. 5, right)")
        .intro(format!(
            "DME with learned hyperparameters, KBR(b), rejection ABC and SMC-ABC (each at the budget and at 10×), \
             and with --sbi sbi's NPE and 2-round SNPE, on the stochastic predator–prey model, {reps} repetition(s); error of the posterior mean of the \
             log-rates, 95% interval width and coverage of the true values."
        ))
        .figure(&plot, "Posterior-mean error of log θ against the simulations each method used, ± one standard error over repetitions.")?
        .table(&table)
        .table(&intervals);
    ctx.publish(section)
}
