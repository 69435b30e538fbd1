//! # bke-dme
//!
//! Conditional and deconditional mean embeddings (Hsu & Ramos, ICML 2019): CME/DME estimators,
//! task-transformed Gaussian processes with their marginal likelihoods, inducing points, and
//! likelihood-free inference with kernel herding.
