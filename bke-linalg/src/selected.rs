//! [`Selected`]: the backend picked at run time, so that code generic over [`Backend`] compiles once
//! for every backend instead of once per backend.
//!
//! The CLI, the Python extension and the benchmarks take the backend as a value (`--backend`,
//! `backend=`). Monomorphising every estimator for faer, nalgebra and OpenBLAS tripled the largest
//! compile units of the tree (the `bke` binary, the extension) for no run-time gain: a backend's
//! work is in its kernels, which are large operations (a product, a factorisation, a solve), so one
//! branch per kernel call costs nothing measurable. [`Selected`] is a backend whose kernels call the
//! selected backend's, and [`with_backend!`](crate::with_backend) selects one for the duration of an
//! expression. Results are bit-identical to the static backend's: [`Selected`] forwards every
//! function a backend overrides and inherits the same provided ones (the conformance suite checks it).
//!
//! **The selection is per process**, because [`Backend`]'s functions take no `self` and the
//! kernels also run on rayon's worker threads. [`Selected::enter`] makes `kind` the selection until
//! the returned [`Selection`] drops; selections of the same kind may overlap (nested, or on other
//! threads); a selection of another kind waits until they have all ended. Selecting another kind
//! on a thread that already holds a selection would wait for itself, so it is an error instead.
//! Without any selection, [`Selected`] runs the default backend.

use crate::backend::{Backend, Product, SymEigen, Trans};
use crate::{BackendKind, LinalgError, Mat, MatMut, MatRef};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// The backend selected at run time (see the module docs). Its [`Backend::name`] is the selected
/// backend's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selected;

/// A selection of a backend for [`Selected`]; it ends when this value drops.
#[derive(Debug)]
#[must_use = "the selection ends when this value drops"]
pub struct Selection {
    kind: BackendKind,
    /// A selection is counted on the thread that entered it, so it must drop there.
    _on_this_thread: PhantomData<*const ()>,
}

/// The selected kind as its index in [`BackendKind::ALL`], or [`NONE`].
static CURRENT: AtomicU8 = AtomicU8::new(NONE);
const NONE: u8 = u8::MAX;

/// The selected kind and how many selections of it are alive; [`RELEASED`] signals when the count
/// falls to zero.
static ACTIVE: Mutex<(Option<BackendKind>, usize)> = Mutex::new((None, 0));
static RELEASED: Condvar = Condvar::new();

thread_local! {
    /// The kind this thread holds selections of, and how many.
    static HELD: Cell<(Option<BackendKind>, usize)> = const { Cell::new((None, 0)) };
}

impl Selected {
    /// Selects `kind` until the returned [`Selection`] drops (see the module docs). Errors: `kind`
    /// is not compiled in, or this thread already holds a selection of another kind.
    pub fn enter(kind: BackendKind) -> Result<Selection, LinalgError> {
        if !kind.is_available() {
            return Err(kind.not_compiled_in());
        }
        let (held, depth) = HELD.get();
        if let Some(other) = held.filter(|&h| h != kind) {
            return Err(LinalgError::Backend {
                backend: kind.name(),
                message: format!(
                    "cannot be selected inside a computation that runs on {other}: finish that first"
                ),
            });
        }
        let mut active = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner);
        while active.1 > 0 && active.0 != Some(kind) {
            active = RELEASED.wait(active).unwrap_or_else(PoisonError::into_inner);
        }
        *active = (Some(kind), active.1 + 1);
        CURRENT.store(index(kind), Ordering::Release);
        HELD.set((Some(kind), depth + 1));
        Ok(Selection { kind, _on_this_thread: PhantomData })
    }

    /// The backend [`Selected`] runs now: the selected one, or the default when none is.
    pub fn current() -> BackendKind {
        match CURRENT.load(Ordering::Acquire) {
            NONE => BackendKind::default_kind(),
            i => BackendKind::ALL[usize::from(i)],
        }
    }
}

impl Selection {
    /// The selected backend.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }
}

impl Drop for Selection {
    fn drop(&mut self) {
        let (held, depth) = HELD.get();
        HELD.set(if depth > 1 { (held, depth - 1) } else { (None, 0) });
        let mut active = ACTIVE.lock().unwrap_or_else(PoisonError::into_inner);
        active.1 -= 1;
        if active.1 == 0 {
            *active = (None, 0);
            CURRENT.store(NONE, Ordering::Release);
            RELEASED.notify_all();
        }
    }
}

fn index(kind: BackendKind) -> u8 {
    BackendKind::ALL.iter().position(|&k| k == kind).expect("ALL lists every kind") as u8
}

/// `Self::$f(args)` of the backend [`Selected::current`] names. Only compiled-in kinds are ever
/// selected, and the default kind is compiled in, so the fallback arm never runs.
macro_rules! forward {
    ($f:ident($($arg:expr),*)) => {
        match Selected::current() {
            #[cfg(feature = "faer")]
            BackendKind::Faer => crate::Faer::$f($($arg),*),
            #[cfg(feature = "nalgebra")]
            BackendKind::Nalgebra => crate::Nalgebra::$f($($arg),*),
            #[cfg(feature = "openblas")]
            BackendKind::OpenBlas => crate::OpenBlas::$f($($arg),*),
            #[allow(unreachable_patterns)]
            kind => unreachable!("backend {kind} is selected but not compiled in"),
        }
    };
}

impl Backend for Selected {
    const NAME: &'static str = "selected";

    fn name() -> &'static str {
        Self::current().name()
    }

    fn gemm_kernel(p: Product<'_>, beta: f64, c: MatMut<'_>) {
        forward!(gemm_kernel(p, beta, c))
    }

    fn gemm_f32_kernel(a: &[f32], b: &[f32], c: &mut [f32], shape: (usize, usize, usize)) {
        forward!(gemm_f32_kernel(a, b, c, shape))
    }

    fn gemv_kernel(p: Product<'_>, beta: f64, y: &mut [f64]) {
        forward!(gemv_kernel(p, beta, y))
    }

    fn gram(a: MatRef<'_>) -> Mat {
        forward!(gram(a))
    }

    fn gemm_lower_kernel(p: Product<'_>, beta: f64, c: MatMut<'_>) {
        forward!(gemm_lower_kernel(p, beta, c))
    }

    fn cholesky_kernel(a: MatMut<'_>) -> Result<(), LinalgError> {
        forward!(cholesky_kernel(a))
    }

    fn tri_solve_kernel(l: MatRef<'_>, tl: Trans, b: MatMut<'_>) -> Result<(), LinalgError> {
        forward!(tri_solve_kernel(l, tl, b))
    }

    fn cholesky_inverse_kernel(l: MatRef<'_>) -> Result<Mat, LinalgError> {
        forward!(cholesky_inverse_kernel(l))
    }

    fn sym_eigen_kernel(a: MatRef<'_>) -> Result<SymEigen, LinalgError> {
        forward!(sym_eigen_kernel(a))
    }

    fn cholesky_update(l: MatMut<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
        forward!(cholesky_update(l, w))
    }

    fn cholesky_downdate(l: MatMut<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
        forward!(cholesky_downdate(l, w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // In this test binary nothing else selects a backend, so the no-selection state is observable.
    #[test]
    fn without_a_selection_the_default_backend_runs() {
        assert_eq!(Selected::current(), BackendKind::default_kind());
        assert_eq!(Selected::name(), BackendKind::default_kind().name());
        let selection = Selected::enter(*BackendKind::available().last().unwrap()).unwrap();
        assert_eq!(Selected::current(), selection.kind());
        drop(selection);
        assert_eq!(Selected::current(), BackendKind::default_kind());
    }
}
