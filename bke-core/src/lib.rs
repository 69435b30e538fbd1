//! # bke-core
//!
//! Kernels and the Bayesian Kernel Embedding model (Flaxman et al., UAI 2016): GP prior on the kernel
//! mean embedding, closed-form posterior, marginal pseudolikelihood for kernel hyperparameters, kernel
//! tests with learned kernels, and kernel student-t density estimation (Huszár & Lacoste-Julien).
//! The model code is generic over [`bke_linalg::Backend`].
//!
//! ```
//! use bke_core::{Kernel, Points};
//! let x = Points::from_rows("x", &[vec![0.0, 0.0], vec![1.0, 0.0]]).unwrap();
//! let k = Kernel::se(1.0).unwrap();
//! let g = k.gram(&x).unwrap();
//! assert!((g[(0, 1)] - (-0.5f64).exp()).abs() < 1e-15);
//! ```

pub mod bayes;
pub mod budget;
pub mod causal;
pub mod choice;
pub mod density;
pub mod embedding;
mod error;
pub mod estimator;
pub mod gp;
pub mod hypothesis;
pub mod kernel;
pub mod model_file;
pub mod numeric;
pub mod nuts;
pub mod optim;
mod points;
pub mod rff;
pub mod simd;
pub mod special;

pub use choice::Choice;
pub use embedding::{BkeParams, BkePosterior, EmbeddingPrior, MarginalLikelihood, marginal_pseudolikelihood};
pub use error::{CoreError, check_positive};
pub use estimator::{
    Dataset, Estimator, LogDensity, Params, Predict, Prediction, Progress, TwoSamples, Valid,
};
pub use hypothesis::median::{MedianConvention, median_distance};
pub use kernel::{Kernel, KernelFamily};
pub use points::Points;
