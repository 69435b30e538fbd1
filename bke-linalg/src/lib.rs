//! # bke-linalg
//!
//! One dense, column-major `f64` matrix type ([`Mat`], with views [`MatRef`] / [`MatMut`]) and the
//! [`Backend`] trait over the operations bke's models spend their time in: products (`gemm`, Gram
//! `AᵀA`, `gemv`), Cholesky (factor, solves, log-determinant, jitter), symmetric eigendecomposition,
//! and rank-`k` Cholesky **updates and downdates** `L Lᵀ ± W Wᵀ`.
//!
//! Backends are zero-sized unit structs chosen by Cargo features: [`Faer`] (`faer`, default),
//! [`Nalgebra`] (`nalgebra`, default) and `OpenBlas` (`openblas`: LAPACK through ndarray-linalg,
//! linked against the system OpenBLAS). [`DefaultBackend`] is the first of faer, nalgebra, openblas
//! that is compiled in. Model crates are generic over `B: Backend` and never see the libraries' types.
//! A backend picked at run time (the CLI's `--backend`, Python's `backend=`) runs through
//! [`Selected`], which forwards each kernel to the selected backend, so front ends compile the
//! models once rather than once per backend ([`with_backend!`]).
//!
//! ```
//! use bke_linalg::{Backend, DefaultBackend as B, Mat};
//! let a = Mat::from_rows(&[vec![4.0, 2.0], vec![2.0, 3.0]]).unwrap();
//! let mut l = B::cholesky(a.as_ref()).unwrap();
//! assert!((B::cholesky_logdet(l.as_ref()) - 8f64.ln()).abs() < 1e-12);
//! // L Lᵀ + w wᵀ without refactorising:
//! B::cholesky_update(l.as_mut(), Mat::from_rows(&[vec![1.0], vec![0.5]]).unwrap().as_ref()).unwrap();
//! let mut x = vec![1.0, 1.0];
//! B::cholesky_solve_vec_in_place(l.as_ref(), &mut x).unwrap();
//! ```

mod backend;
mod error;
mod mat;
mod selected;
mod threads;
pub mod update;

#[cfg(feature = "faer")]
mod faer_backend;
#[cfg(feature = "nalgebra")]
mod nalgebra_backend;
#[cfg(feature = "openblas")]
mod openblas_backend;

pub use backend::{Backend, JitterOptions, Product, SymEigen, Trans};
pub use error::LinalgError;
pub(crate) use error::check_same_shape;
pub use mat::{Mat, MatMut, MatRef};
pub use selected::{Selected, Selection};
pub use threads::sequential;

#[cfg(feature = "faer")]
pub use faer_backend::Faer;
#[cfg(feature = "nalgebra")]
pub use nalgebra_backend::Nalgebra;
#[cfg(feature = "openblas")]
pub use openblas_backend::OpenBlas;

#[cfg(not(any(feature = "faer", feature = "nalgebra", feature = "openblas")))]
compile_error!("bke-linalg needs at least one backend feature: faer, nalgebra or openblas");

/// The backend model code uses when it is not told otherwise: faer if compiled in, else nalgebra,
/// else OpenBLAS.
#[cfg(feature = "faer")]
pub type DefaultBackend = Faer;
/// The backend model code uses when it is not told otherwise: faer if compiled in, else nalgebra,
/// else OpenBLAS.
#[cfg(all(not(feature = "faer"), feature = "nalgebra"))]
pub type DefaultBackend = Nalgebra;
/// The backend model code uses when it is not told otherwise: faer if compiled in, else nalgebra,
/// else OpenBLAS.
#[cfg(all(not(feature = "faer"), not(feature = "nalgebra"), feature = "openblas"))]
pub type DefaultBackend = OpenBlas;

/// A backend chosen at run time (e.g. from a `--backend` flag); [`with_backend!`] runs generic code with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// [`Faer`].
    Faer,
    /// [`Nalgebra`].
    Nalgebra,
    /// `OpenBlas`.
    OpenBlas,
}

impl BackendKind {
    /// Every backend kind, compiled in or not.
    pub const ALL: [BackendKind; 3] = [BackendKind::Faer, BackendKind::Nalgebra, BackendKind::OpenBlas];

    /// The backend's name, as its `Backend::NAME`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Faer => "faer",
            BackendKind::Nalgebra => "nalgebra",
            BackendKind::OpenBlas => "openblas",
        }
    }

    /// Whether this backend is compiled into this build.
    pub fn is_available(self) -> bool {
        match self {
            BackendKind::Faer => cfg!(feature = "faer"),
            BackendKind::Nalgebra => cfg!(feature = "nalgebra"),
            BackendKind::OpenBlas => cfg!(feature = "openblas"),
        }
    }

    /// The backends compiled into this build.
    pub fn available() -> Vec<BackendKind> {
        Self::ALL.into_iter().filter(|k| k.is_available()).collect()
    }

    /// The kind of [`DefaultBackend`].
    pub fn default_kind() -> BackendKind {
        if cfg!(feature = "faer") {
            BackendKind::Faer
        } else if cfg!(feature = "nalgebra") {
            BackendKind::Nalgebra
        } else {
            BackendKind::OpenBlas
        }
    }

    /// Parses a backend name; errors list the compiled-in backends.
    pub fn parse(name: &str) -> Result<BackendKind, String> {
        let names: Vec<&str> = Self::available().iter().map(|k| k.name()).collect();
        match Self::ALL.into_iter().find(|k| k.name().eq_ignore_ascii_case(name)) {
            Some(k) if k.is_available() => Ok(k),
            Some(k) => Err(format!(
                "backend '{}' is not compiled in (build with --features {}); available: {}",
                k.name(),
                k.name(),
                names.join(", ")
            )),
            None => Err(format!("unknown backend '{name}'; available: {}", names.join(", "))),
        }
    }

    /// The error of running generic code with a backend that is not compiled in.
    pub fn not_compiled_in(self) -> LinalgError {
        LinalgError::Backend {
            backend: self.name(),
            message: format!("not compiled in (enable the '{}' feature)", self.name()),
        }
    }
}

/// Runs an expression generic over the backend with the backend picked at run time: in
/// `with_backend!(kind, B => expr)`, `B` is [`Selected`] (compiled once, whatever `kind` is) and
/// `kind` is selected while `expr` runs. The value is `Ok(expr)`, or `Err(`[`LinalgError::Backend`]`)`
/// when `kind` is not compiled in (or this thread is already running another backend, see
/// [`Selected::enter`]). A `?` inside `expr` returns from the calling function.
///
/// ```
/// use bke_linalg::{Backend, BackendKind, with_backend};
/// fn name<B: Backend>() -> &'static str { B::name() }
/// assert_eq!(with_backend!(BackendKind::Faer, B => name::<B>()).unwrap(), "faer");
/// ```
#[macro_export]
macro_rules! with_backend {
    ($kind:expr, $B:ident => $body:expr) => {
        match $crate::Selected::enter($kind) {
            ::core::result::Result::Ok(selection) => ::core::result::Result::<_, $crate::LinalgError>::Ok({
                let _selection = selection;
                type $B = $crate::Selected;
                $body
            }),
            ::core::result::Result::Err(e) => ::core::result::Result::Err(e),
        }
    };
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
