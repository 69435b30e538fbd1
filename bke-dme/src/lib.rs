//! # bke-dme
//!
//! Conditional and deconditional mean embeddings (Hsu & Ramos, ICML 2019; seed 004): CME/DME
//! estimators, task-transformed Gaussian processes with their marginal likelihoods, inducing points,
//! likelihood-free inference with kernel herding. All numerical code is generic over
//! [`bke_linalg::Backend`].
//!
//! Every estimator follows the convention of [`bke_core::estimator`]: a `…Params` struct,
//! `check()`, `fit::<B>(&data)`, then `predict`/embeddings on the fitted model.
//!
//! * [`cme`]: empirical CME (seed 004 eq. (3.4)).
//! * [`dme`]: nonparametric DME (seed 004 Def. 4.4, both forms), parametric DME (Def. 4.5) on random
//!   Fourier features.
//! * [`ttgp`]: task-transformed GP (seed 004 Thm 5.3): marginal likelihoods (3), (4) and the alternative
//!   form of (4) with analytic gradients, posterior predictive, multi-start L-BFGS learning, model
//!   files.
//! * [`ttblr`]: the task-transformed Bayesian linear regression on explicit (random Fourier or
//!   user) features (seed 004 Thm 5.3 (1), (3), (4)), marginal likelihood and gradient, model files.
//! * [`sparse`]: inducing points learned jointly with the hyperparameters (seed 004 §8.2).
//! * [`lfi`]: likelihood-free inference (seed 004 Algorithm 8.1): posterior embedding, `q̄`, learning;
//!   [`herding`]: posterior embeddings as weighted samples and kernel herding.
//! * [`kbr`]: kernel Bayes' rule, KBR(a) and KBR(b) (seed 004 §6, §7, App. F), beside the DME.
//!
//! ```
//! use bke_core::{Kernel, Params, Points, Predict};
//! use bke_dme::TaskData;
//! use bke_dme::ttgp::TtgpParams;
//! use bke_linalg::DefaultBackend;
//! // Transformation pairs x = y + noise, task pairs (ỹ, z̃ = sin ỹ).
//! let y: Vec<f64> = (0..20).map(|i| -3.0 + 0.3 * i as f64).collect();
//! let x: Vec<f64> = y.iter().map(|v| v + 0.05).collect();
//! let yt: Vec<f64> = (0..15).map(|j| -3.0 + 0.4 * j as f64).collect();
//! let zt: Vec<f64> = yt.iter().map(|v| v.sin()).collect();
//! let data = TaskData::new(
//!     Points::from_1d("x", &x)?,
//!     Points::from_1d("y", &y)?,
//!     Points::from_1d("ỹ", &yt)?,
//!     zt,
//! )?;
//! let gp = TtgpParams::tied(Kernel::se(1.0)?, Kernel::se(1.0)?, 0.1, 20, 15).check()?.fit::<DefaultBackend>(&data)?;
//! let pred = gp.predict::<DefaultBackend>(&Points::from_1d("x*", &[0.5])?)?;
//! assert!((pred.mean[0] - 0.5f64.sin()).abs() < 0.2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cme;
mod data;
pub mod dme;
mod error;
pub mod herding;
pub mod kbr;
pub mod learn;
pub mod lfi;
mod ops;
pub mod sparse;
pub mod ttblr;
pub mod ttgp;

pub use data::TaskData;
pub use error::DmeError;
