//! The task-transformed Bayesian linear regression, TTBLR (seed 004 Thm 5.3 (1), (3), (4)): the
//! TTGP on explicit features, with cost linear in `n` and `m`.
//!
//! # Model
//! Features with one row per point: `Φ` (`n × p`) of the transformation inputs `x`, `Ψ` (`n × q`) of
//! their partners `y`, `Ψ̃` (`m × q`) of the task inputs `ỹ`. `f(x) = wᵀφ(x)`, `g(y) = vᵀψ(y)`,
//! priors `w ~ N(0, γ²I_p)`, `v ~ N(0, β²I_q)`; the task targets are `z̃ = Ψ̃v + N(0, σ²I)` and the
//! unobserved targets at the transformation points are `z = Φw` (noise-free) and `z = Ψv + N(0, σ²I)`.
//!
//! (1) Given `w`, the posterior of `v` from `(Ψ, z = Φw)` is Gaussian with mean `G⁻¹Ψᵀz` and
//! covariance `σ²G⁻¹`, `G = ΨᵀΨ + (σ²/β²)I`, so `z̃ | w ~ N(MᵀΦw, Σ)` with the transformation
//! `M = ΨG⁻¹Ψ̃ᵀ` (`n × m`) and the noise covariance `Σ = σ²Ψ̃G⁻¹Ψ̃ᵀ + σ²I`: a transformed BLR with
//! design `D = MᵀΦ = Ψ̃T`, `T = G⁻¹ΨᵀΦ` (`q × p`).
//!
//! (3) Marginal likelihood `z̃ ~ N(0, Σ + γ²DDᵀ)`. The seed's extraction of `C` is garbled (it reads
//! `C = [ΦAΣ⁻¹AᵀΦᵀ + ½ I]⁻¹`); derived: Woodbury's identity on `Σ + γ²DDᵀ` gives
//! `(Σ + γ²DDᵀ)⁻¹ = Σ⁻¹ − Σ⁻¹DCDᵀΣ⁻¹`, `C = (DᵀΣ⁻¹D + γ⁻²I)⁻¹`, i.e. in the seed's column
//! convention `C = [ΦMΣ⁻¹MᵀΦᵀ + γ⁻²I]⁻¹` — the posterior covariance of `w` (the "½" is `1/γ²`).
//! The matrix determinant lemma gives `log|Σ + γ²DDᵀ| = log|Σ| + p log γ² + log|C⁻¹|`, so with
//! `b = DᵀΣ⁻¹z̃`:
//!
//! `log p(z̃) = −½ z̃ᵀΣ⁻¹z̃ + ½ bᵀCb − ½ log|Σ| − p log γ − ½ log|C⁻¹| − (m/2) log 2π`.
//!
//! `Σ⁻¹` never appears as an `m × m` matrix: with `Q = Ψ̃ᵀΨ̃`, `r = Ψ̃ᵀz̃`, `H = G + Q` (Woodbury
//! again), `DᵀΣ⁻¹D = σ⁻²TᵀWT`, `W = Q − QH⁻¹Q`; `b = σ⁻²Tᵀ(r − QH⁻¹r)`;
//! `z̃ᵀΣ⁻¹z̃ = σ⁻²(z̃ᵀz̃ − rᵀH⁻¹r)`; `log|Σ| = m log σ² + log|H| − log|G|`. Cost
//! `O((n + m)(p + q)q + p³ + q³)`.
//!
//! (4) With the posterior of `g` at its MAP, `Σ = σ²I`: `W = Q`, `b = σ⁻²Tᵀr`. The predictive
//! mean `φ(x)ᵀw̄`, `w̄ = Cb = (TᵀQT + (σ²/γ²)I)⁻¹Tᵀr`, is then the parametric DME of seed 004 Def. 4.5
//! (`TᵀΨ̃ᵀ = ΦᵀM`, `M = A`) with `λ = σ²/(nβ²)` and `ε = σ²/(mγ²)`.
//!
//! # Gradient
//! Reverse mode through the expressions above (adjoints of `C⁻¹`, `b`, `T`, `W`, `H`, `G`, then of
//! the feature matrices `Φ`, `Ψ`, `Ψ̃`); for random Fourier features
//! `φ_c(x) = M^{-1/2} cos(ω_cᵀx)` with `ω_c = s_c z_c / ℓ`,
//! `∂φ_c/∂log ℓ_d = M^{-1/2} sin(ω_cᵀx) ω_cd x_d` and `∂φ_{M+c}/∂log ℓ_d = −M^{-1/2} cos(ω_cᵀx) ω_cd x_d`.
//! Parameters: log lengthscales of `k`, of `ℓ`, then `log σ`, `log β`, `log γ`.

mod features;
mod fitted;

pub use features::{
    FeatureData, FeatureMarginal, Scales, TtblrForm, WeightPosterior, feature_log_marginal,
    feature_log_marginal_value, weight_posterior,
};
pub use fitted::{Ttblr, TtblrLearn, TtblrParams, log_marginal};
