//! Running a backend's kernels on the calling thread only.
//!
//! The faer backend parallelises each product over rayon's pool. A caller that already splits its
//! work into independent products — one per rayon task — gains nothing from that and pays for it:
//! each product's threads meet at barriers, spinning while the slowest finishes. [`sequential`]
//! runs a closure with this thread's faer kernels sequential. nalgebra's kernels are sequential
//! anyway; OpenBLAS keeps its own threads.

use std::cell::Cell;

thread_local! {
    static SEQUENTIAL: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the faer backend's kernels on this thread sequential (module docs). Results are
/// the same as in parallel: every kernel is bit-identical for any thread count.
pub fn sequential<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the earlier state, also when `f` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SEQUENTIAL.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SEQUENTIAL.with(|s| s.replace(true)));
    f()
}

/// Whether the calling thread is inside [`sequential`].
pub(crate) fn is_sequential() -> bool {
    SEQUENTIAL.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_scopes_nest_and_restore() {
        assert!(!is_sequential());
        sequential(|| {
            assert!(is_sequential());
            sequential(|| assert!(is_sequential()));
            assert!(is_sequential());
        });
        assert!(!is_sequential());
        assert!(std::panic::catch_unwind(|| sequential(|| panic!("inside"))).is_err());
        assert!(!is_sequential());
    }
}
