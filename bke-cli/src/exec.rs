//! What every command shares: `--backend` and `--threads` (one [`ExecArgs`], flattened into each
//! command), and progress on stderr ([`Bar`], a [`bke_core::Progress`] for the library's long fits).
//!
//! `--threads N` runs the command in a pool of `N` workers (`N ≥ 1`; omit the flag for all cores).
//! Results never depend on `N`: the library's parallel reductions have a fixed order.
//! `--max-memory SIZE` caps the memory planned work may need ([`bke_core::budget`]; default: the
//! available memory): work that needs more is refused up front, naming the setting that made it
//! large, instead of aborting in the allocator.

use anyhow::Context;
use bke_core::{Choice, Estimator};
use bke_linalg::{Backend, BackendKind};
use clap::Args;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::ffi::OsStr;
use std::io::IsTerminal;
use std::marker::PhantomData;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `--backend` and `--threads`.
#[derive(Args, Debug, Clone)]
pub struct ExecArgs {
    /// Linear-algebra backend: faer, nalgebra or openblas (when compiled in; see `bke backends`).
    #[arg(long, default_value = BackendKind::default_kind().name())]
    pub backend: String,
    /// Worker threads, at least 1 and at most 4 × the cores (at least 8, at most 1024) [default: all
    /// cores]. Results do not depend on it.
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Refuse work that needs more memory than this (bytes, or e.g. 512M, 8G) [default: the
    /// available memory].
    #[arg(long, value_parser = bke_core::budget::parse_size)]
    pub max_memory: Option<u64>,
}

/// `--threads`: a count of at least 1 and at most [`bke_core::budget::max_threads`], refused at
/// parse time (before any data is read) when it is far above the machine's cores.
fn parse_threads(text: &str) -> Result<usize, String> {
    let t: usize = text.trim().parse().map_err(|_| {
        format!("'{text}' is not a number of worker threads: use a whole number of at least 1")
    })?;
    bke_core::budget::check_threads("--threads", t)
}

impl Default for ExecArgs {
    fn default() -> Self {
        Self { backend: BackendKind::default_kind().name().into(), threads: None, max_memory: None }
    }
}

impl ExecArgs {
    /// The backend named by `--backend`.
    pub fn kind(&self) -> anyhow::Result<BackendKind> {
        BackendKind::parse(&self.backend).map_err(anyhow::Error::msg)
    }

    /// Runs `f` in a pool of `--threads` workers (the global pool when the flag is absent).
    /// Also sets the memory limit of `--max-memory`.
    pub fn install<T: Send>(&self, f: impl FnOnce() -> anyhow::Result<T> + Send) -> anyhow::Result<T> {
        bke_core::budget::set_limit(self.max_memory);
        match self.threads {
            None => f(),
            Some(t) => rayon::ThreadPoolBuilder::new()
                .num_threads(bke_core::budget::check_threads("--threads", t).map_err(anyhow::Error::msg)?)
                .build()
                .with_context(|| format!("cannot start {t} worker threads"))?
                .install(f),
        }
    }
}

/// Runs `$body` in a pool of `--threads` workers with the backend of `--backend` as the type `$B`:
/// `run_with_backend!(args.exec, B => fit::<B>(…))` (see [`bke_linalg::with_backend`]). The value
/// is the body's `anyhow::Result`.
macro_rules! run_with_backend {
    ($exec:expr, $B:ident => $body:expr) => {{
        let exec: &$crate::exec::ExecArgs = &$exec;
        exec.kind().and_then(|kind| exec.install(|| bke_linalg::with_backend!(kind, $B => $body)?))
    }};
}
pub(crate) use run_with_backend;

/// A clap value parser for a library option with named values ([`Choice`]): its names are the
/// possible values, each with its help line, as a derived `ValueEnum` would list them.
pub fn choice<T: Choice>() -> ChoiceParser<T> {
    ChoiceParser(PhantomData)
}

/// See [`choice`].
#[derive(Clone)]
pub struct ChoiceParser<T>(PhantomData<T>);

impl<T: Choice> ChoiceParser<T> {
    fn possible(&self) -> impl Iterator<Item = PossibleValue> + use<T> {
        T::ALL.iter().map(|(_, name, help)| PossibleValue::new(*name).help(*help))
    }
}

impl<T: Choice> TypedValueParser for ChoiceParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let name = PossibleValuesParser::new(self.possible()).parse_ref(cmd, arg, value)?;
        Ok(T::from_name(&name).expect("a possible value names a value"))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.possible()))
    }
}

/// Checks `params` and fits them to `data` with backend `B`, with a progress bar labelled `what`.
pub fn fit<B: Backend, P>(what: &str, params: &P, data: &P::Data) -> anyhow::Result<P::Fitted>
where
    P: Estimator,
    P::Error: std::error::Error + Send + Sync + 'static,
{
    let bar = Bar::new(what);
    let fitted = params.check().and_then(|p| p.fit_with_progress::<B>(data, &bar));
    bar.finish();
    Ok(fitted?)
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
