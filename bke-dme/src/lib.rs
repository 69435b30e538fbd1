//! # bke-dme
//!
//! Conditional and deconditional mean embeddings (Hsu & Ramos, ICML 2019): CME/DME estimators,
//! task-transformed Gaussian processes with their marginal likelihoods, inducing points, and
//! likelihood-free inference with kernel herding. All numerical code is generic over
//! [`bke_linalg::Backend`].
//!
//! * [`cme`]: empirical CME (eq. 3.4).
//! * [`dme`]: nonparametric DME (Def. 4.4, both forms), parametric DME (Def. 4.5) with random
//!   Fourier features.
//! * [`ttgp`]: task-transformed GP (Thm 5.3): marginal likelihoods (3), (4) and the alternative
//!   form of (4) with analytic gradients, posterior predictive, multi-start L-BFGS learning.
//! * [`sparse`]: inducing points learned jointly with the hyperparameters (§8.2).
//! * [`lfi`]: likelihood-free inference (Algorithm 8.1): posterior embedding, kernel herding, `q̄`.
//!
//! ```
//! use bke_core::{Kernel, Points};
//! use bke_dme::ttgp::{MarginalForm, Ttgp, TtgpData, TtgpHyper};
//! use bke_linalg::DefaultBackend;
//! // Transformation pairs x = y + noise, task pairs (ỹ, z̃ = sin ỹ).
//! let y: Vec<f64> = (0..20).map(|i| -3.0 + 0.3 * i as f64).collect();
//! let x: Vec<f64> = y.iter().map(|v| v + 0.05).collect();
//! let yt: Vec<f64> = (0..15).map(|j| -3.0 + 0.4 * j as f64).collect();
//! let zt: Vec<f64> = yt.iter().map(|v| v.sin()).collect();
//! let data = TtgpData::new(
//!     Points::from_1d("x", &x).unwrap(),
//!     Points::from_1d("y", &y).unwrap(),
//!     Points::from_1d("ỹ", &yt).unwrap(),
//!     zt,
//! )
//! .unwrap();
//! let hyper = TtgpHyper::tied(Kernel::se(1.0).unwrap(), Kernel::se(1.0).unwrap(), 0.1, 20, 15);
//! let gp = Ttgp::new::<DefaultBackend>(data, hyper, MarginalForm::Map).unwrap();
//! let pred = gp.predict::<DefaultBackend>(&Points::from_1d("x*", &[0.5]).unwrap()).unwrap();
//! assert!((pred.mean[0] - 0.5f64.sin()).abs() < 0.2);
//! ```

pub mod cme;
pub mod dme;
mod error;
pub mod lfi;
mod ops;
pub mod sparse;
pub mod ttgp;

pub use error::DmeError;
