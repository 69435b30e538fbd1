//! The anchor of `repro sbc --sbi`: sbi's neural posterior estimation (single-round NPE, its default
//! masked autoregressive flow) trained on the same simulations as bke's methods and evaluated at
//! every replication's observation, and sbi's sequential NPE with 2 rounds (half the budget from
//! the prior, half simulated by bke's simulator at draws of the round-1 posterior at each
//! observation), run by `scripts/bench/sbi_npe.py` in the venv that `scripts/sbi-venv.sh` creates
//! (the files' contract is in the script's docstring).

use super::problem::Problem;
use bke_dme::abc::{Marginal, ProductPrior};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;

/// One problem handed to sbi.
pub struct NpeProblem<'a> {
    /// File stem.
    pub name: String,
    /// The simulations `(θ, x)` from the prior.
    pub sims: &'a [(Vec<f64>, Vec<f64>)],
    /// The observations, one per replication.
    pub observed: &'a [Vec<f64>],
    /// The θ that generated each observation.
    pub truth: &'a [Vec<f64>],
    /// The prior of θ.
    pub prior: &'a ProductPrior,
}

/// sbi's posterior at one observation: the SBC rank of each coordinate among its `samples`
/// draws, and the posterior mean and 95 % interval per coordinate.
pub struct NpeRow {
    /// The number of draws below the truth, per coordinate.
    pub rank: Vec<f64>,
    /// The draws behind `rank`.
    pub samples: usize,
    /// Posterior mean per coordinate.
    pub mean: Vec<f64>,
    /// 2.5 % and 97.5 % quantiles per coordinate.
    pub interval: Vec<(f64, f64)>,
}

/// sbi's result on one problem: rows in the order of the observations (`None`: the row had no
/// draws), and the wall seconds of training plus sampling (plus simulating, for SNPE); `Err` holds
/// sbi's error.
pub type NpeResult = Result<(Vec<Option<NpeRow>>, f64), String>;

fn csv(names: &[String], rows: impl Iterator<Item = Vec<f64>>) -> String {
    let mut s = names.join(",") + "\n";
    for row in rows {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:e}")).collect();
        let _ = writeln!(s, "{}", cells.join(","));
    }
    s
}

fn prior_json(prior: &ProductPrior) -> Value {
    let uniform = prior.marginals.iter().all(|m| matches!(m, Marginal::Uniform { .. }));
    let (a, b): (Vec<f64>, Vec<f64>) = prior
        .marginals
        .iter()
        .map(|m| match *m {
            Marginal::Uniform { low, high } => (low, high),
            Marginal::Normal { mean, sd } => (mean, sd),
        })
        .unzip();
    if uniform {
        json!({"kind": "uniform", "low": a, "high": b})
    } else {
        json!({"kind": "normal", "mean": a, "sd": b})
    }
}

/// Writes the four files of `p` into `dir`.
pub fn write(dir: &Path, p: &NpeProblem<'_>) -> anyhow::Result<()> {
    anyhow::ensure!(
        p.prior.marginals.iter().all(|m| matches!(m, Marginal::Uniform { .. }))
            || p.prior.marginals.iter().all(|m| matches!(m, Marginal::Normal { .. })),
        "sbi_npe.py takes a uniform or a normal prior, not a mix"
    );
    let (dt, ds) = (p.prior.dim(), p.sims.first().map_or(0, |s| s.1.len()));
    let theta: Vec<String> = (0..dt).map(|k| format!("theta_{k}")).collect();
    let stats: Vec<String> = (0..ds).map(|k| format!("x_{k}")).collect();
    let both: Vec<String> = theta.iter().chain(&stats).cloned().collect();
    let file = |suffix: &str| dir.join(format!("{}{suffix}", p.name));
    std::fs::write(
        file(".sims.csv"),
        csv(&both, p.sims.iter().map(|(t, x)| [t.clone(), x.clone()].concat())),
    )?;
    std::fs::write(file(".obs.csv"), csv(&stats, p.observed.iter().cloned()))?;
    std::fs::write(file(".truth.csv"), csv(&theta, p.truth.iter().cloned()))?;
    std::fs::write(file(".prior.json"), prior_json(p.prior).to_string())?;
    Ok(())
}

/// The script's method.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// Single-round NPE on the simulations written, amortised over the observations.
    Npe,
    /// Sequential NPE with 2 rounds per observation: the simulations written are round 1 (half the
    /// budget), round 2 simulates `problem` at the round-1 posterior's draws through
    /// `bke-repro simulate` ([`super::problem::simulate_command`]).
    Snpe2(Problem),
}

/// Creates the sbi venv if needed and runs the script with `method` on the problems `only` written
/// to `dir` (every problem there when empty; each at most `timeout` s); returns the parsed
/// `sbi.json`.
pub fn run(dir: &Path, timeout: u64, method: Method, only: &[String]) -> anyhow::Result<Value> {
    let timeout = timeout.to_string();
    let mut args: Vec<OsString> = vec![dir.into(), "--timeout".into(), timeout.into()];
    if let Method::Snpe2(problem) = method {
        let exe = std::env::current_exe()?;
        let exe = exe.to_str().ok_or_else(|| anyhow::anyhow!("the path of bke-repro is not UTF-8"))?;
        anyhow::ensure!(!exe.contains('\''), "the path of bke-repro holds a quote: {exe}");
        args.extend(["--method".into(), "snpe2".into(), "--simulator".into()]);
        args.push(format!("'{exe}' simulate {}", problem.name()).into());
    }
    if !only.is_empty() {
        args.push("--only".into());
        args.extend(only.iter().map(OsString::from));
    }
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    crate::repro::run_in_venv("sbi-venv.sh", "sbi_npe.py", &refs)?;
    Ok(serde_json::from_str(&std::fs::read_to_string(dir.join("sbi.json"))?)?)
}

fn numbers(v: &Value) -> Option<Vec<f64>> {
    v.as_array()?.iter().map(Value::as_f64).collect()
}

/// The result of problem `name` in `sbi.json`.
pub fn result(json: &Value, name: &str) -> NpeResult {
    let problems = json["problems"].as_array().cloned().unwrap_or_default();
    let entry =
        problems.iter().find(|e| e["name"] == name).ok_or_else(|| format!("{name} missing in sbi.json"))?;
    if let Some(e) = entry["error"].as_str() {
        return Err(e.to_string());
    }
    let row = |r: &Value| -> Option<NpeRow> {
        let (lo, hi) = (numbers(&r["q025"])?, numbers(&r["q975"])?);
        Some(NpeRow {
            rank: numbers(&r["rank"])?,
            samples: r["samples_used"].as_u64().filter(|&s| s > 0)? as usize,
            mean: numbers(&r["mean"])?,
            interval: lo.into_iter().zip(hi).collect(),
        })
    };
    let rows = entry["results"].as_array().cloned().unwrap_or_default();
    let seconds = entry["train_seconds"].as_f64().unwrap_or(f64::NAN)
        + entry["sample_seconds"].as_f64().unwrap_or(0.0)
        + entry["simulate_seconds"].as_f64().unwrap_or(0.0);
    Ok((rows.iter().map(row).collect(), seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_are_written_as_the_script_reads_them_and_results_parsed() {
        let dir = std::env::temp_dir().join(format!("bke-sbc-npe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prior = ProductPrior { marginals: vec![Marginal::Uniform { low: -5.0, high: 2.0 }; 2] };
        let sims = vec![(vec![0.5, -1.0], vec![1.0, 2.0, 3.0])];
        let p = NpeProblem {
            name: "p".into(),
            sims: &sims,
            observed: &[vec![1.0, 2.0, 3.5]],
            truth: &[vec![0.0, 0.0]],
            prior: &prior,
        };
        write(&dir, &p).unwrap();
        let read = |s: &str| std::fs::read_to_string(dir.join(format!("p{s}"))).unwrap();
        assert_eq!(read(".sims.csv"), "theta_0,theta_1,x_0,x_1,x_2\n5e-1,-1e0,1e0,2e0,3e0\n");
        assert_eq!(read(".obs.csv"), "x_0,x_1,x_2\n1e0,2e0,3.5e0\n");
        assert_eq!(read(".truth.csv"), "theta_0,theta_1\n0e0,0e0\n");
        assert_eq!(read(".prior.json"), r#"{"high":[2.0,2.0],"kind":"uniform","low":[-5.0,-5.0]}"#);
        std::fs::remove_dir_all(&dir).unwrap();

        let json = json!({"problems": [
            {"name": "p", "error": null, "train_seconds": 2.0, "sample_seconds": 0.5, "results": [
                {"rank": [3, 7], "samples_used": 10, "mean": [0.1, 0.2], "q025": [-1, -2], "q975": [1, 2]},
                {"rank": null, "samples_used": 0, "mean": null, "q025": null, "q975": null}]},
            {"name": "q", "error": "timeout after 5 s", "results": []}]});
        let (rows, seconds) = result(&json, "p").unwrap();
        assert_eq!(seconds, 2.5);
        let r = rows[0].as_ref().unwrap();
        assert_eq!(
            (r.rank.clone(), r.samples, r.interval.clone()),
            (vec![3.0, 7.0], 10, vec![(-1.0, 1.0), (-2.0, 2.0)])
        );
        assert!(rows[1].is_none());
        assert_eq!(result(&json, "q").err().unwrap(), "timeout after 5 s");
        assert!(result(&json, "r").is_err());
    }
}
