//! Paper reproductions run by `cargo xtask repro <name|all> [--smoke]` (registered in
//! `src/bin/bke-repro.rs`). Each writes its CSV under its output directory and publishes one or more
//! [`Section`]s — paragraphs, figures, tables, rerun command — to the HTML report
//! (`target/bke-report/index.html`, see [`crate::html`] for an example); the runner then writes the
//! measured part of those sections to `docs/results.md` ([`crate::results`]).
//!
//! A reproduction is a `fn(&mut Ctx) -> anyhow::Result<()>`. [`Ctx::size`] picks the full or the
//! reduced ("smoke") size: the smoke size runs in seconds and is what CI runs, to check the pipeline;
//! only the full size reproduces the seed's numbers. [`Ctx::progress`] prints one timed line.

pub mod bank_cv;
pub mod bank_data;
pub mod bank_fig3;
pub mod bank_fig4;
pub mod bank_prior;
pub mod bank_relevance;
pub mod bank_table;
pub mod density;
pub mod dme;
pub mod fantasy;
pub mod fig1;
pub mod fig2_panels;
pub mod fig2c;
pub mod fig2d;
pub mod fig3;
pub mod fig4;
pub mod kbr;
pub mod level;
pub mod lfi_budget;
pub mod lotka_volterra;
pub mod power;
pub mod sbc;
pub mod witness;

use crate::html::{Report, Section, utc_now};
use std::path::PathBuf;
use std::time::Instant;

/// The value after `name` among the process's arguments (`--reps 100`).
pub fn flag(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

/// Whether the switch `name` (`--sbi`) is among the process's arguments.
pub fn switch(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

/// Runs the benchmark script `scripts/bench/<script>` with `args` in the venv that
/// `scripts/<venv_script>` creates (or refreshes; it prints the venv's python).
pub fn run_in_venv(venv_script: &str, script: &str, args: &[&std::ffi::OsStr]) -> anyhow::Result<()> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let venv = std::process::Command::new("bash").arg(root.join("scripts").join(venv_script)).output()?;
    anyhow::ensure!(
        venv.status.success(),
        "scripts/{venv_script} failed: {}",
        String::from_utf8_lossy(&venv.stderr)
    );
    let python = String::from_utf8(venv.stdout)?.trim().to_string();
    let status = std::process::Command::new(root.join(python))
        .arg(root.join("scripts/bench").join(script))
        .args(args)
        .status()?;
    anyhow::ensure!(status.success(), "scripts/bench/{script} failed ({status})");
    Ok(())
}

/// Prints progress lines `[  12.3 s] message` measured from its creation.
#[derive(Debug, Clone)]
pub struct Progress {
    start: Instant,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// Starts the clock.
    pub fn new() -> Self {
        Self { start: Instant::now() }
    }
    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
    /// Prints one progress line on stderr.
    pub fn line(&self, msg: &str) {
        eprintln!("[{:>7.1} s] {msg}", self.elapsed());
    }
}

/// What a reproduction receives: where to write, which size, the report to publish to.
#[derive(Debug)]
pub struct Ctx {
    /// Output directory of the data files (`target/bench/repro`).
    pub out: PathBuf,
    /// Reduced size (`--smoke`).
    pub smoke: bool,
    /// The report sections go to.
    pub report: Report,
    /// The reproduction's registered name.
    pub name: String,
    /// Position of the reproduction in the registry (orders its sections in the page).
    pub index: u32,
    /// The command that reruns it.
    pub command: String,
    /// The run's clock.
    pub progress: Progress,
    section_start: Instant,
    parts: u32,
    /// Sections published so far, for the summary and `docs/results.md`.
    pub published: Vec<Section>,
}

/// `cargo xtask repro NAME` with the flags `args` of this run (those after the reproduction's name),
/// less the ones that only say where the output goes (`--out`, `--report`, `--results`, `--json`).
pub fn rerun_command(name: &str, args: &[String]) -> String {
    let mut cmd = format!("cargo xtask repro {name}");
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--out" | "--report" | "--results" => {
                rest.next();
            }
            "--json" => {}
            _ => cmd.push_str(&format!(" {a}")),
        }
    }
    cmd
}

impl Ctx {
    /// A context for reproduction `name` (registry position `index`).
    pub fn new(
        name: &str,
        index: u32,
        out: PathBuf,
        smoke: bool,
        report: Report,
        progress: Progress,
    ) -> Self {
        let command = format!("cargo xtask repro {name}{}", if smoke { " --smoke" } else { "" });
        Self {
            out,
            smoke,
            report,
            name: name.into(),
            index,
            command,
            progress,
            section_start: Instant::now(),
            parts: 0,
            published: Vec::new(),
        }
    }

    /// `full`, or `smoke` at the reduced size.
    pub fn size<T>(&self, full: T, smoke: T) -> T {
        if self.smoke { smoke } else { full }
    }

    /// `out/<sub>`, created.
    pub fn dir(&self, sub: &str) -> anyhow::Result<PathBuf> {
        let d = if sub.is_empty() { self.out.clone() } else { self.out.join(sub) };
        std::fs::create_dir_all(&d)?;
        Ok(d)
    }

    /// Prints a progress line prefixed with the reproduction's name.
    pub fn progress(&self, msg: &str) {
        self.progress.line(&format!("{}: {msg}", self.name));
    }

    /// A new section of this reproduction, with its id, order, smoke flag and rerun command filled in.
    pub fn section(&mut self, part: &str, title: &str) -> Section {
        self.parts += 1;
        let mut s = Section::new(
            &format!("repro-{}-{part}", self.name),
            "Reproductions",
            self.index * 100 + self.parts,
            title,
        );
        s.smoke = self.smoke;
        s.commands.push(self.command.clone());
        s
    }

    /// Publishes `section` (timing it since the previous publish) and prints a progress line.
    pub fn publish(&mut self, mut section: Section) -> anyhow::Result<()> {
        section.seconds = self.section_start.elapsed().as_secs_f64();
        section.finished = utc_now();
        self.report.publish(&section)?;
        self.progress(&format!("published \"{}\" ({:.1} s)", section.title, section.seconds));
        self.published.push(section);
        self.section_start = Instant::now();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The rerun command repeats every flag that shaped the run, not where its output went.
    #[test]
    fn rerun_command_keeps_the_flags() {
        let args: Vec<String> =
            ["--dims", "blobs", "--out", "/tmp/o", "--reps", "20", "--json", "--smoke", "--results", "r.md"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert_eq!(
            super::rerun_command("power", &args),
            "cargo xtask repro power --dims blobs --reps 20 --smoke"
        );
        assert_eq!(super::rerun_command("fig1", &[]), "cargo xtask repro fig1");
    }
}
