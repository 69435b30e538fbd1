//! # bke-bank
//!
//! BaNK (Oliva et al., AISTATS 2016): random Fourier features whose frequencies follow a
//! Dirichlet-process mixture of Gaussians, sampled by MCMC with low-rank Cholesky updates, for
//! regression and classification in `O(M²N)` per sweep.
