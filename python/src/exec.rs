//! What every call into Rust shares: the backend (`backend=`) and worker pool (`n_jobs=`), the GIL
//! released while Rust computes, Ctrl-C, and errors as Python exceptions.
//!
//! [`Exec::run`] starts the job on a helper thread (inside a rayon pool of `n_jobs` workers, or the
//! global pool for all cores) and, with the GIL released, waits for it on the calling thread. Every
//! [`POLL`] it takes the GIL back for a moment to run Python's signal handlers: a Ctrl-C raises
//! `KeyboardInterrupt` there, which sets the flag that the job's [`Progress::cancelled`] reads; the
//! library's long loops then stop at their next checkpoint with [`CoreError::Cancelled`], and the
//! `KeyboardInterrupt` is raised to the caller. Results never depend on `n_jobs`: the library's
//! parallel reductions have a fixed order.

use bke_core::{CoreError, Estimator, Progress};
use bke_linalg::{Backend, BackendKind, LinalgError};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// How often the waiting thread checks for Ctrl-C.
const POLL: Duration = Duration::from_millis(50);

/// Why a call failed, before it becomes a Python exception.
#[derive(Debug)]
pub enum Failure {
    /// Bad input or parameters: `ValueError` with the library's (the CLI's) message.
    Value(String),
    /// A numerical or internal failure: `RuntimeError`.
    Runtime(String),
    /// The caller pressed Ctrl-C.
    Cancelled,
    /// A Python callback raised this exception (raised again to the caller).
    Python(PyErr),
}

impl From<CoreError> for Failure {
    fn from(e: CoreError) -> Self {
        match e {
            CoreError::Cancelled => Failure::Cancelled,
            CoreError::Linalg(_) | CoreError::Sampler(_) => Failure::Runtime(e.to_string()),
            _ => Failure::Value(e.to_string()),
        }
    }
}

impl From<bke_bank::BankError> for Failure {
    fn from(e: bke_bank::BankError) -> Self {
        match e {
            bke_bank::BankError::Core(c) => c.into(),
            bke_bank::BankError::Numerical { .. } => Failure::Runtime(e.to_string()),
            _ => Failure::Value(e.to_string()),
        }
    }
}

impl From<bke_dme::DmeError> for Failure {
    fn from(e: bke_dme::DmeError) -> Self {
        match e {
            bke_dme::DmeError::Core(c) => c.into(),
            bke_dme::DmeError::NotPositiveDefinite { .. } | bke_dme::DmeError::Optimisation(_) => {
                Failure::Runtime(e.to_string())
            }
            _ => Failure::Value(e.to_string()),
        }
    }
}

impl From<LinalgError> for Failure {
    fn from(e: LinalgError) -> Self {
        Failure::Runtime(e.to_string())
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Value(m) => PyValueError::new_err(m),
            Failure::Runtime(m) => PyRuntimeError::new_err(m),
            Failure::Cancelled => PyKeyboardInterrupt::new_err("cancelled"),
            Failure::Python(e) => e,
        }
    }
}

/// Runs `$body` through [`Exec::run`] with the call's backend as the type `$B` (see
/// [`bke_linalg::with_backend`]) and `$progress: &dyn Progress` its cancellation flag:
/// `run_job!(exec, py, |B, progress| fit::<B>(params, data, progress))`. The body's values are moved
/// into it; its `?` converts errors into [`Failure`].
macro_rules! run_job {
    ($exec:expr, $py:expr, |$B:ident, $progress:ident| $body:expr) => {{
        let exec: &$crate::exec::Exec = &$exec;
        let kind = exec.backend();
        exec.run($py, move |$progress: &dyn bke_core::Progress| {
            bke_linalg::with_backend!(kind, $B => $body)?
        })
    }};
}
pub(crate) use run_job;

/// Adds the `#[pyfunction]`s `$f` to the module `$m` (a register function's body):
/// `add_functions!(m, mmd_test, hsic_test)` is `Ok(())` once each is added.
macro_rules! add_functions {
    ($m:expr, $($f:ident),+ $(,)?) => {{
        $($m.add_function(pyo3::wrap_pyfunction!($f, $m)?)?;)+
        Ok(())
    }};
}
pub(crate) use add_functions;

/// Checks `params` and fits them to `data` with backend `B`, polling `progress`.
pub fn fit<B: Backend, P>(params: &P, data: &P::Data, progress: &dyn Progress) -> Result<P::Fitted, Failure>
where
    P: Estimator,
    Failure: From<P::Error>,
{
    Ok(params.check()?.fit_with_progress::<B>(data, progress)?)
}

/// The backend and worker count of one call.
#[derive(Debug, Clone, Copy)]
pub struct Exec {
    backend: BackendKind,
    threads: Option<usize>,
}

impl Exec {
    /// From the keywords `backend=` (a name of `bke.backends()`) and `n_jobs=` (None or -1: all
    /// cores; `k > 0`: `k` workers; `k < -1`: all cores but `-k - 1`, as scikit-learn counts).
    pub fn new(backend: &str, n_jobs: Option<i64>) -> PyResult<Self> {
        let backend = BackendKind::parse(backend).map_err(PyValueError::new_err)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as i64;
        let threads = match n_jobs {
            None | Some(-1) => None,
            Some(0) => {
                return Err(PyValueError::new_err(
                    "n_jobs must be a positive number of worker threads, or -1 (or None) for all cores; got 0",
                ));
            }
            Some(k) if k > 0 => Some(
                bke_core::budget::check_threads("n_jobs", usize::try_from(k).unwrap_or(usize::MAX))
                    .map_err(PyValueError::new_err)?,
            ),
            Some(k) => Some((cores + 1 + k).max(1) as usize),
        };
        Ok(Self { backend, threads })
    }

    /// The backend of `backend=`.
    pub fn backend(&self) -> BackendKind {
        self.backend
    }

    /// Runs `job` with the GIL released, honouring Ctrl-C (see the module docs); `job` gets the
    /// cancellation flag. [`run_job!`] runs a backend-generic body this way.
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        job: impl FnOnce(&dyn Progress) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        let stop = Stop(AtomicBool::new(false));
        let threads = self.threads;
        let (result, interrupt) = py.detach(|| {
            std::thread::scope(|scope| {
                let (tx, rx) = channel();
                let stop = &stop;
                scope.spawn(move || {
                    let work = || job(stop);
                    let out =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| in_pool(threads, work)))
                            .unwrap_or_else(|p| {
                                Err(Failure::Runtime(format!("internal error: {}", panic_text(&p))))
                            });
                    let _ = tx.send(out);
                });
                let mut interrupt: Option<PyErr> = None;
                loop {
                    match rx.recv_timeout(POLL) {
                        Ok(out) => return (out, interrupt),
                        Err(RecvTimeoutError::Timeout) if interrupt.is_none() => {
                            if let Err(e) = Python::attach(|py| py.check_signals()) {
                                stop.0.store(true, Ordering::Relaxed);
                                interrupt = Some(e);
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => {
                            return (
                                Err(Failure::Runtime("internal error: the worker thread died".into())),
                                interrupt,
                            );
                        }
                    }
                }
            })
        });
        if let Some(e) = interrupt {
            return Err(e);
        }
        result.map_err(PyErr::from)
    }
}

/// The cancellation flag the job polls.
struct Stop(AtomicBool);

impl Progress for Stop {
    fn update(&self, _: &str, _: u64, _: u64) {}
    fn cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

fn in_pool<T: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> Result<T, Failure> + Send,
) -> Result<T, Failure> {
    match threads {
        None => f(),
        Some(t) => rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .map_err(|e| Failure::Runtime(format!("cannot start {t} worker threads: {e}")))?
            .install(f),
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}
