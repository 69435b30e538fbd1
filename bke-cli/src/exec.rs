//! What every command shares: `--backend` and `--threads` (one [`ExecArgs`], flattened into each
//! command), and progress on stderr ([`Bar`], a [`bke_core::Progress`] for the library's long fits).
//!
//! `--threads N` runs the command in a pool of `N` workers (`N ≥ 1`; omit the flag for all cores).
//! Results never depend on `N`: the library's parallel reductions have a fixed order.
//! `--max-memory SIZE` caps the memory planned work may need ([`bke_core::budget`]; default: the
//! available memory): work that needs more is refused up front, naming the setting that made it
//! large, instead of aborting in the allocator.

use anyhow::{Context, bail};
use bke_linalg::{BackendKind, WithBackend};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `--backend` and `--threads`.
#[derive(Args, Debug, Clone)]
pub struct ExecArgs {
    /// Linear-algebra backend: faer, nalgebra or openblas (when compiled in; see `bke backends`).
    #[arg(long, default_value = "faer")]
    pub backend: String,
    /// Worker threads, at least 1 [default: all cores]. Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Refuse work that needs more memory than this (bytes, or e.g. 512M, 8G) [default: the
    /// available memory].
    #[arg(long, value_parser = bke_core::budget::parse_size)]
    pub max_memory: Option<u64>,
}

impl Default for ExecArgs {
    fn default() -> Self {
        Self { backend: "faer".into(), threads: None, max_memory: None }
    }
}

impl ExecArgs {
    /// The backend named by `--backend`.
    pub fn kind(&self) -> anyhow::Result<BackendKind> {
        BackendKind::parse(&self.backend).map_err(anyhow::Error::msg)
    }

    /// Runs `job` with the chosen backend in a pool of `--threads` workers.
    pub fn run<J, T>(&self, job: J) -> anyhow::Result<T>
    where
        J: WithBackend<Output = anyhow::Result<T>> + Send,
        T: Send,
    {
        let kind = self.kind()?;
        self.install(|| kind.dispatch(job)?)
    }

    /// Runs `f` in a pool of `--threads` workers (the global pool when the flag is absent).
    /// Also sets the memory limit of `--max-memory`.
    pub fn install<T: Send>(&self, f: impl FnOnce() -> anyhow::Result<T> + Send) -> anyhow::Result<T> {
        bke_core::budget::set_limit(self.max_memory);
        match self.threads {
            None => f(),
            Some(0) => bail!("--threads must be at least 1 (omit it to use all cores)"),
            Some(t) => rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .with_context(|| format!("cannot start {t} worker threads"))?
                .install(f),
        }
    }
}

/// Progress on stderr: a bar on a terminal; otherwise a plain line at most every 10 seconds, so
/// long runs in logs and pipelines still show they are alive.
pub struct Bar {
    bar: ProgressBar,
    plain: Option<Mutex<Instant>>,
}

impl Bar {
    /// A progress reporter for a command; `what` labels the bar.
    pub fn new(what: &str) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(1), target);
        bar.set_style(
            ProgressStyle::with_template("{msg:>16} [{bar:40}] {pos}/{len} ({elapsed} < {eta})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        let plain = (!terminal).then(|| Mutex::new(Instant::now()));
        Self { bar, plain }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl bke_core::Progress for Bar {
    fn cancelled(&self) -> bool {
        bke_io::interrupt::interrupted()
    }

    fn update(&self, stage: &str, done: u64, total: u64) {
        self.bar.set_length(total.max(1));
        self.bar.set_position(done);
        self.bar.set_message(stage.to_string());
        if let Some(last) = &self.plain {
            let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() >= Duration::from_secs(10) || (done == total && total > 0) {
                *last = Instant::now();
                eprintln!("{stage}: {done}/{total} ({:.0?} elapsed)", self.bar.elapsed());
            }
        }
    }
}
