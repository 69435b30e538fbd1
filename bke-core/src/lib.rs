//! # bke-core
//!
//! Kernels and the Bayesian Kernel Embedding model (Flaxman et al., UAI 2016): GP prior on the kernel
//! mean embedding, closed-form posterior, marginal pseudolikelihood for kernel hyperparameters, kernel
//! tests with learned kernels, and kernel student-t density estimation (Huszár & Lacoste-Julien).
//! The model code is generic over [`bke_linalg::Backend`].
