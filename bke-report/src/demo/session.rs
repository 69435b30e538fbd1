//! The demo's runner (`bke` commands, progress, the report's sections) and the helpers its steps share.

use crate::html::{Report, Section, utc_now};
use crate::repro::Progress;
use anyhow::{Context, bail};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Uniform};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Runs `bke` commands and keeps what they printed.
pub struct Demo {
    bke: PathBuf,
    pub(super) root: PathBuf,
    /// Inputs the demo writes (dequantised and split data, grids).
    pub data: PathBuf,
    report: Report,
    progress: Progress,
    /// Every command with its JSON output (for `--json`).
    pub log: Vec<Value>,
    /// One summary line per step.
    pub summary: Vec<String>,
    step_start: Instant,
    steps: usize,
}

/// A finished `bke` command: its JSON and the notes/warnings it printed on stderr.
pub(super) struct Output {
    pub(super) json: Value,
    pub(super) notes: Vec<String>,
}

/// Number of demo steps (for the progress lines).
const STEPS: usize = 5;

impl Demo {
    /// A demo using the `bke` binary at `bke`, run from `root`, writing inputs under `data`.
    pub fn new(bke: PathBuf, root: PathBuf, data: PathBuf, report: Report) -> Self {
        Self {
            bke,
            root,
            data,
            report,
            progress: Progress::new(),
            log: Vec::new(),
            summary: Vec::new(),
            step_start: Instant::now(),
            steps: 0,
        }
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.progress.elapsed()
    }

    pub(super) fn begin(&mut self, what: &str) {
        self.steps += 1;
        self.step_start = Instant::now();
        self.progress.line(&format!("step {}/{STEPS}: {what} …", self.steps));
    }

    /// Publishes the step's section and prints its progress line.
    pub(super) fn finish(&mut self, mut section: Section, summary: String) -> anyhow::Result<()> {
        section.seconds = self.step_start.elapsed().as_secs_f64();
        section.finished = utc_now();
        self.report.publish(&section)?;
        self.progress
            .line(&format!("step {}/{STEPS} done in {:.1} s: {summary}", self.steps, section.seconds));
        self.summary.push(summary);
        Ok(())
    }

    /// A path relative to the project root when it lies under it (for the rerun commands).
    pub(super) fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.root).unwrap_or(p).display().to_string()
    }

    /// Runs `bke args…` from the project root; errors carry its stderr.
    pub(super) fn bke(&mut self, args: &[String]) -> anyhow::Result<Output> {
        let out = std::process::Command::new(&self.bke)
            .args(args)
            .current_dir(&self.root)
            .output()
            .with_context(|| format!("running {}", self.bke.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            bail!("`bke {}` failed:\n{stderr}", args.join(" "));
        }
        let json: Value = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("`bke {}` printed something that is not JSON", args.join(" ")))?;
        let notes = stderr
            .lines()
            .filter(|l| l.starts_with("note") || l.starts_with("warning"))
            .map(str::to_string)
            .collect();
        self.log.push(serde_json::json!({"command": command(args), "output": json}));
        Ok(Output { json, notes })
    }
}

/// The rerun form of a `bke` command line.
pub(super) fn command(args: &[String]) -> String {
    let quoted: Vec<String> =
        args.iter().map(|a| if a.contains([' ', ',', '*']) { format!("'{a}'") } else { a.clone() }).collect();
    format!("cargo run --release -p bke-cli -- {}", quoted.join(" "))
}

pub(super) fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Writes a CSV with a header and one row per entry.
pub(super) fn write_csv(
    path: &Path,
    header: &[&str],
    rows: impl Iterator<Item = Vec<f64>>,
) -> anyhow::Result<()> {
    let mut s = header.join(",") + "\n";
    for r in rows {
        let cells: Vec<String> = r.iter().map(|v| format!("{v}")).collect();
        s += &(cells.join(",") + "\n");
    }
    bke_core::model_file::write_atomic(path, s).with_context(|| format!("writing {}", path.display()))
}

pub(super) fn f64s(v: &Value, key: &str) -> anyhow::Result<Vec<f64>> {
    v[key]
        .as_array()
        .with_context(|| format!("`{key}` missing from bke's JSON"))?
        .iter()
        .map(|x| x.as_f64().with_context(|| format!("`{key}` holds a non-number")))
        .collect()
}

pub(super) fn num(v: &Value, key: &str) -> anyhow::Result<f64> {
    v[key].as_f64().with_context(|| format!("`{key}` missing from bke's JSON"))
}

/// `v` with `digits` significant digits, trailing zeros after the point dropped (`3.162`, `59.1`,
/// `1e-6` for tiny or huge values): numbers in the report's text say what they mean, no more.
pub fn sig(v: f64, digits: usize) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let e = v.abs().log10().floor() as i32;
    if !(-3..6).contains(&e) {
        let s = format!("{:.*e}", digits.saturating_sub(1), v);
        let (m, x) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
        return format!("{m}e{x}");
    }
    let decimals = (digits as i32 - 1 - e).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// The runs of sorted `xs` with gaps of at most `step`, as `a–b` (or `a` alone).
pub(super) fn runs(xs: &[f64], step: f64) -> Vec<String> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for &x in xs {
        match out.last_mut() {
            Some(r) if x - r.1 <= step => r.1 = x,
            _ => out.push((x, x)),
        }
    }
    out.iter()
        .map(|(a, b)| if a == b { sig(*a, 3) } else { format!("{}–{}", sig(*a, 3), sig(*b, 3)) })
        .collect()
}

pub(super) fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| a + (b - a) * i as f64 / (n - 1) as f64).collect()
}

pub(super) fn pairs(xs: &[f64], ys: &[f64]) -> Vec<(f64, f64)> {
    xs.iter().copied().zip(ys.iter().copied()).collect()
}

/// Whether every value is a whole number (the lattice case of the pseudolikelihood).
pub fn integer_valued(v: &[f64]) -> bool {
    !v.is_empty() && v.iter().all(|x| x.fract() == 0.0)
}

/// `v + U(−½, ½)` with a fixed seed: a continuous sample whose rounding gives back `v`.
pub fn dequantise(v: &[f64], seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let u = Uniform::new(-0.5, 0.5).expect("valid bounds");
    v.iter().map(|x| x + u.sample(&mut rng)).collect()
}

/// The `scan` of `bke embed fit` as `(lengthscale, log_marginal)` pairs.
pub(super) fn scan(fit: &Value) -> anyhow::Result<Vec<(f64, f64)>> {
    fit["scan"]
        .as_array()
        .context("`scan` missing from `bke embed fit`")?
        .iter()
        .map(|p| Ok((num(p, "lengthscale")?, num(p, "log_marginal")?)))
        .collect()
}
