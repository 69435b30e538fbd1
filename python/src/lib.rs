//! # bke-py: the extension module `bke._bke`
//!
//! The Rust half of the Python package `bke` (the other half, `python/bke/`, holds the scikit-learn
//! estimators, the result classes, `bke.dask`, the type stubs and the docstrings users see). Every
//! function here takes validated float64 arrays from that Python layer and returns numpy arrays,
//! numbers or JSON text; none is meant to be called by users directly.
//!
//! What every call shares lives in `exec`: the backend and worker-pool choice (`backend=`,
//! `n_jobs=`), the GIL released while Rust computes, Ctrl-C honoured through
//! [`bke_core::Progress::cancelled`], and errors raised as `ValueError` (bad input or parameters)
//! or `RuntimeError` (numerical failures) with the CLI's messages. `convert` turns numpy arrays
//! into [`bke_core::Points`] and back.

mod causal;
mod chunked;
mod convert;
mod defaults;
mod dme;
mod embedding;
mod exec;
mod hypothesis;
mod models;

use pyo3::prelude::*;

/// The linear-algebra backends compiled into this build, e.g. `["faer", "nalgebra"]`.
#[pyfunction]
fn backends() -> Vec<&'static str> {
    bke_linalg::BackendKind::available().iter().map(|k| k.name()).collect()
}

/// The module `bke._bke`.
#[pymodule]
fn _bke(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    m.add_function(wrap_pyfunction!(defaults::defaults, m)?)?;
    embedding::register(m)?;
    chunked::register(m)?;
    hypothesis::register(m)?;
    causal::register(m)?;
    dme::register(m)?;
    models::register(m)?;
    Ok(())
}
