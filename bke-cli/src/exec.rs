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
/// long runs in logs and pipelines still show they are alive. A stage that will run for more than
/// [`LONG_STAGE`] says so once, [`ESTIMATE_AFTER`] into it: "expected to take about 3 h 20 min in
/// all", extrapolated from its first steps (so `--iterations 1e12` is possible, and its cost is
/// known before it is spent).
pub struct Bar {
    bar: ProgressBar,
    plain: Option<Mutex<Instant>>,
    clock: Mutex<StageClock>,
}

/// How long a stage runs before its expected duration is estimated.
pub const ESTIMATE_AFTER: Duration = Duration::from_secs(2);
/// The expected duration from which a stage tells it.
pub const LONG_STAGE: Duration = Duration::from_secs(60);

/// When the current stage started, its first step (time and count), and whether its expected
/// duration was told.
struct StageClock {
    stage: String,
    start: Instant,
    first: Option<(Instant, u64)>,
    told: bool,
}

impl StageClock {
    fn new(stage: &str) -> Self {
        Self { stage: stage.to_string(), start: Instant::now(), first: None, told: false }
    }

    /// The line announcing a long stage, once per stage, when `done` of `total` steps are done:
    /// the time so far plus the remaining steps at the rate measured since the first step, once
    /// that rate has been measured for [`ESTIMATE_AFTER`] (so setup work before the first step,
    /// such as BaNK's input-relevance fit, is not extrapolated).
    fn estimate(&mut self, stage: &str, done: u64, total: u64) -> Option<String> {
        if self.stage != stage {
            *self = Self::new(stage);
        }
        if self.told || done == 0 || done >= total {
            return None;
        }
        let now = Instant::now();
        let (t0, d0) = *self.first.get_or_insert((now, done));
        let measured = now - t0;
        if measured < ESTIMATE_AFTER || done <= d0 {
            return None;
        }
        self.told = true;
        let elapsed = self.start.elapsed().as_secs_f64();
        let expected = elapsed + measured.as_secs_f64() * (total - done) as f64 / (done - d0) as f64;
        (expected >= LONG_STAGE.as_secs_f64()).then(|| {
            format!(
                "{stage}: expected to take about {} in all ({done} of {total} done after {})",
                human_duration(expected),
                human_duration(elapsed)
            )
        })
    }
}

/// `seconds` for people: "45 s", "5 min 10 s", "3 h 20 min", "2.5 days", "31710 years".
pub fn human_duration(seconds: f64) -> String {
    const DAY: f64 = 86_400.0;
    let s = seconds.max(0.0);
    if s < 60.0 {
        format!("{s:.0} s")
    } else if s < 3600.0 {
        format!("{} min {} s", (s / 60.0).floor(), (s % 60.0).floor())
    } else if s < DAY {
        format!("{} h {} min", (s / 3600.0).floor(), ((s % 3600.0) / 60.0).floor())
    } else if s < 365.0 * DAY {
        format!("{:.1} days", s / DAY)
    } else {
        format!("{:.0} years", s / (365.25 * DAY))
    }
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
        Self { bar, plain, clock: Mutex::new(StageClock::new(what)) }
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
        let estimate = self.clock.lock().unwrap_or_else(|e| e.into_inner()).estimate(stage, done, total);
        if let Some(line) = estimate {
            match self.plain {
                Some(_) => eprintln!("{line}"),
                None => self.bar.println(line),
            }
        }
        if let Some(last) = &self.plain {
            let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() >= Duration::from_secs(10) || (done == total && total > 0) {
                *last = Instant::now();
                eprintln!("{stage}: {done}/{total} ({:.0?} elapsed)", self.bar.elapsed());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_largest_sensible_unit() {
        assert_eq!(human_duration(44.6), "45 s");
        assert_eq!(human_duration(310.0), "5 min 10 s");
        assert_eq!(human_duration(12_000.0), "3 h 20 min");
        assert_eq!(human_duration(2.5 * 86_400.0), "2.5 days");
        assert_eq!(human_duration(1e12), "31688 years");
        assert_eq!(human_duration(-1.0), "0 s");
    }

    /// A clock whose stage started `ago` seconds ago and whose first step (`first` done) came
    /// `since` seconds ago.
    fn started(stage: &str, ago: f64, since: f64, first: u64) -> StageClock {
        let now = Instant::now();
        StageClock {
            start: now - Duration::from_secs_f64(ago),
            first: Some((now - Duration::from_secs_f64(since), first)),
            ..StageClock::new(stage)
        }
    }

    #[test]
    fn a_long_stage_is_announced_once_with_its_extrapolated_duration() {
        // sweeps 1 → 2 took 3 s after 10 s of setup: about 95 years for 10⁹ sweeps.
        let mut clock = started("bank fit", 13.0, 3.0, 1);
        let line = clock.estimate("bank fit", 2, 1_000_000_000).expect("a long stage is announced");
        assert!(
            line.starts_with("bank fit: expected to take about 95 years in all (2 of 1000000000"),
            "{line}"
        );
        assert_eq!(clock.estimate("bank fit", 3, 1_000_000_000), None, "told once");
        // A new stage starts its own clock: too early to tell.
        assert_eq!(clock.estimate("NUTS", 1, 1_000_000_000), None);
        // setup is not extrapolated: 30 s before the first of 100 steps, then 1 step a second
        let line = started("fit", 32.0, 2.0, 1).estimate("fit", 3, 100).expect("long");
        assert!(line.contains("about 2 min 9 s"), "{line}");
    }

    #[test]
    fn short_or_young_stages_say_nothing() {
        // 900 of 1000 after 3 s: 3.3 s in all.
        assert_eq!(started("NUTS", 3.0, 3.0, 1).estimate("NUTS", 900, 1000), None);
        // a rate measured for less than ESTIMATE_AFTER, whatever the projection
        assert_eq!(started("NUTS", 9.0, 0.5, 1).estimate("NUTS", 2, 1_000_000), None);
        // the first step only: no rate yet
        assert_eq!(StageClock::new("NUTS").estimate("NUTS", 1, 1_000_000), None);
        // nothing done yet, or all done
        assert_eq!(started("NUTS", 3.0, 3.0, 1).estimate("NUTS", 0, 1000), None);
        assert_eq!(started("NUTS", 3.0, 3.0, 1).estimate("NUTS", 1000, 1000), None);
    }
}
