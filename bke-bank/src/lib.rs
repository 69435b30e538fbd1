//! # bke-bank
//!
//! BaNK (Oliva et al., AISTATS 2016; seed 001): random Fourier features (seed 001 eq. (3)) whose frequencies
//! follow a Dirichlet-process mixture of Gaussians with a Normal-inverse-Wishart base measure (§2.2),
//! learned by MCMC — Gibbs for the assignments (seed 001 eq. (8)), NIW posterior draws (§3.2), and
//! Metropolis–Hastings for each frequency with the conjugate Normal–inverse-gamma evidence (seed 001 eq. (11), (12))
//! for regression, or joint `(W_j, β_j)` moves with a 2-D Laplace proposal (§3.3.2) for classification.
//!
//! ```
//! use bke_bank::{BankParams, Task};
//! use bke_core::{Dataset, Params, Points, Predict};
//! use bke_linalg::DefaultBackend as B;
//!
//! let xs: Vec<f64> = (0..200).map(|i| i as f64 / 40.0).collect();
//! let y: Vec<f64> = xs.iter().map(|x| (1.5 * x).sin()).collect();
//! let data = Dataset::new(Points::from_1d("x", &xs)?, y.clone())?;
//! let params = BankParams { task: Task::Regression, frequencies: 16, iterations: 20, seed: 1, ..Default::default() };
//! let model = params.check()?.fit::<B>(&data)?;
//! let pred = model.predict::<B>(data.x())?;
//! let mse: f64 = pred.mean.iter().zip(&y).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / 200.0;
//! assert!(mse < 0.05, "mse {mse}");
//! // The learned kernel: k(t) on a grid, and the spectral mixture (weights, means, covariances).
//! let (k_features, k_mixture) = model.kernel(&Points::from_1d("t", &[0.0, 0.5, 1.0])?)?;
//! assert!((k_features[0] - 1.0).abs() < 1e-12 && (k_mixture[0] - 1.0).abs() < 1e-12);
//! let spectrum = model.spectral_mixture();
//! assert!((spectrum.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
//! # Ok::<(), bke_bank::BankError>(())
//! ```
//!
//! Modules:
//! * [`features`]: the random Fourier features and input standardisation;
//! * [`dpmix`]: the DP-NIW mixture over the frequencies (Gibbs for `Z`, NIW draws, Student-t predictive);
//! * [`evidence`]: the NIG evidence (seed 001 eq. (11)) and its dense oracle;
//! * [`regression`]: the `O(NM²)` frequency sweep (bulk Gram rows, Woodbury evaluation, rank-2
//!   Cholesky update + downdate on acceptance, drift-checked refactorisation) and its refactorising
//!   reference;
//! * [`classification`]: the logistic model and its Laplace-proposal moves;
//! * [`pair_laplace`]: the 2-D Laplace approximation of one frequency's weights (fused, chunk-parallel passes);
//! * [`logistic`]: the posterior mode and Laplace approximation of logistic regression on fixed
//!   features (the baselines' MAP fit, BaNK's joint weight move);
//! * [`params`]: the parameters, which hyperparameters are learned, their data-driven defaults, and
//!   what the prior on `f` is as `M` grows;
//! * [`priors`]: the hyperpriors of the learned hyperparameters;
//! * [`slice`](mod@slice): univariate slice sampling (the `log λ₀` update);
//! * [`relevance`]: per-input lengthscales (ARD) for the spectral prior, gated by the evidence;
//! * [`sampler`]: the fitting driver and one sweep of each task;
//! * [`model`]: the fitted model, prediction (Student-t mixture), the learned kernel, the model file;
//! * [`baselines`]: RKS and MKL with random features (§4.2);
//! * [`gp_classify`]: GP classification with the Laplace approximation (a baseline);
//! * [`svm`]: RBF support-vector classification with `C` and the width tuned, Platt probabilities (a baseline);
//! * [`cv`]: K-fold cross-validation;
//! * [`calibration`]: log-loss, Brier score, expected calibration error and the reliability diagram.
//!
//! Everything is generic over [`bke_linalg::Backend`] and seeded.

mod anderson;
mod distances;
mod error;
mod small;

pub mod alac;
pub mod baselines;
pub mod calibration;
pub mod classification;
pub mod compare;
pub mod cv;
pub mod dpmix;
pub mod evidence;
pub mod features;
pub mod gbdt;
pub mod gp;
pub mod gp_classify;
pub mod logistic;
pub mod model;
pub mod pair_laplace;
pub mod params;
pub mod priors;
pub mod regression;
pub mod relevance;
pub mod rfo;
pub mod sampler;
pub mod slice;
pub mod svm;

pub use error::BankError;
pub use model::BankModel;
pub use params::{BankParams, BankPrior, SweepMethod, Task};
pub use relevance::Relevance;
