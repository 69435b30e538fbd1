//! # bke-bank
//!
//! BaNK (Oliva et al., AISTATS 2016): random Fourier features whose frequencies follow a
//! Dirichlet-process mixture of Gaussians, sampled by MCMC with low-rank Cholesky updates, for
//! regression and classification in `O(M²N)` per sweep.

mod error;
mod small;

pub mod baselines;
pub mod classification;
pub mod cv;
pub mod dpmix;
pub mod evidence;
pub mod features;
pub mod model;
pub mod regression;

pub use error::BankError;
pub use model::{BankModel, BankParams, SweepMethod, Task, fit};
