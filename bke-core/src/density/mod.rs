//! Kernel student-t density estimation (Huszár & Lacoste-Julien, "A Kernel Approach to Tractable
//! Bayesian Nonparametrics", seed 003): a Normal-inverse-Wishart model in feature space, whose
//! posterior predictive (a Student-t) is kernelised and pulled back to the input space.
//!
//! # Derivation (seed 003 eq. (1)–(6), re-derived; it corrects the first draft of `docs/DESIGN.md` §3.4)
//!
//! **Model (seed 003 eq. (1)–(2)).** Features `φ_n = ϕ(x_n) ∈ ℝ^D`, `φ_{1:N} | μ, Σ ~ N(μ, Σ)` i.i.d.,
//! `Σ ~ W⁻¹(σ₀² I, α)` (scale `σ₀² I`, `α` degrees of freedom), `μ | Σ ~ N(0, Σ/β)`: a
//! Normal-inverse-Wishart prior `NIW(m₀ = 0, κ₀ = β, ν₀ = α, Ψ₀ = σ₀² I)`.
//!
//! **Posterior.** By conjugacy it is `NIW(m_N, κ_N, ν_N, Ψ_N)` with `κ_N = β + N`, `ν_N = α + N`,
//! `m_N = N φ̄ /(N + β)` and
//!
//! ```text
//! Ψ_N = σ₀² I + Σ_n (φ_n − φ̄)(φ_n − φ̄)ᵀ + βN/(β+N) φ̄ φ̄ᵀ  =  σ₀² I + Φ (I − 11ᵀ/(N+β)) Φᵀ,
//! ```
//!
//! where `Φ = [φ_1, …, φ_N]` is the **uncentred** feature matrix (expand `ΦΦᵀ = Σ_n φ_nφ_nᵀ` and
//! `Φ11ᵀΦᵀ = N² φ̄φ̄ᵀ`: `ΦΦᵀ − N²φ̄φ̄ᵀ/(N+β) = Σ_n(φ_n−φ̄)(φ_n−φ̄)ᵀ + (N − N²/(N+β)) φ̄φ̄ᵀ`).
//!
//! **Predictive (seed 003 eq. (3)).** Integrating `N(φ | μ, Σ)` against the posterior gives the Student-t
//! `t_{ν'}(m_N, (κ_N+1)/(κ_N ν') Ψ_N)` with `ν' = ν_N − D + 1`, whose density is
//! `∝ [1 + κ_N/(κ_N+1) · φ̃ᵀ Ψ_N⁻¹ φ̃]^{−(ν'+D)/2}`, and `ν' + D = 1 + N + α`, so
//!
//! ```text
//! p(φ | φ_{1:N}) ∝ (γ + φ̃ᵀ Ψ_N⁻¹ φ̃)^{−(1+N+α)/2},   γ = (1+β+N)/(β+N),   φ̃ = φ − N φ̄/(N+β).
//! ```
//!
//! The exponent does not involve `D`, which is what lets the kernel trick through.
//!
//! **Woodbury (seed 003 eq. (4)).** With `M = I − 11ᵀ/(N+β)`, Sherman–Morrison gives `M⁻¹ = I + 11ᵀ/β`, and
//! Woodbury gives `Ψ_N⁻¹ = I/σ₀² − Φ (σ₀⁴ M⁻¹ + σ₀² ΦᵀΦ)⁻¹ Φᵀ`, so with `v = Φᵀφ̃`
//!
//! ```text
//! Q(x) := φ̃ᵀ Ψ_N⁻¹ φ̃ = [ φ̃ᵀφ̃ − vᵀ (σ₀² I + K + (σ₀²/β) 11ᵀ)⁻¹ v ] / σ₀².
//! ```
//!
//! We factor `A = σ₀² I + K = L Lᵀ` once (O(N³)) and treat the rank-one `(σ₀²/β) 11ᵀ` by
//! Sherman–Morrison (better conditioned than folding it into the factor when `β` is small):
//! with `w = L⁻¹v`, `u = L⁻¹1`, `ρ = σ₀²/β`,
//! `vᵀ(A + ρ11ᵀ)⁻¹v = ‖w‖² − ρ (wᵀu)² / (1 + ρ‖u‖²)`. Each query costs one triangular solve, O(N²);
//! queries are batched into matrix triangular solves of the backend.
//!
//! **Kernel trick (seed 003 eq. (5)).** With `k_x = (k(x, x_n))_n`, `K = ΦᵀΦ`, row sums `s = K1`, `T = 1ᵀK1`:
//!
//! ```text
//! φ̃ᵀφ̃ = k(x,x) − 2 Σ_n k(x,x_n)/(N+β) + T/(N+β)²,     v = Φᵀφ̃ = k_x − s/(N+β),     ΦᵀΦ = K.
//! ```
//!
//! **Correction to the first draft of `docs/DESIGN.md` §3.4 (and to the extraction of the seed).** There, `Φ̃` is the
//! *centred* matrix `[φ_1 − φ̄, …]`, and seed 003 eq. (5) gives its centred Gram `Φ̃ᵀΦ̃`. But `Φ̃1 = 0`, so the
//! factor `(I − 11ᵀ/(N+β))` acts trivially and that reconstruction equals `σ₀²I + Φ̃Φ̃ᵀ`: it drops
//! the term `βN/(β+N) φ̄φ̄ᵀ` of `Ψ_N` (the pull of the prior mean 0). The correct expression uses the
//! uncentred `Φ` as above (equivalently, centred `Φ̃` plus that rank-one term). The two agree only as
//! `β → 0` (the seed's figures use `β = 0.01`, where the difference is small). The first formula of
//! seed 003 eq. (5), for `φ̃ᵀφ̃`, is right as printed. The test `explicit_feature_map_agrees` checks the
//! kernelised computation against the textbook NIW update in an explicit feature space to 1e-10,
//! and `design_reconstruction_differs_unless_beta_small` shows the discrepancy.
//!
//! **Pull-back (seed 003 eq. (6)).** `q_k(x) = q(ϕ(x)) · det(G(x))^{1/2}`, `G_ij = ⟨∂_iϕ(x), ∂_jϕ(x)⟩ =
//! ∂²k(x, y)/∂x_i∂y_j |_{y=x}`. For a stationary kernel `k = f(r²)`, `G = −2f'(0) diag(ℓ⁻²)` is
//! constant (seed 003 Appendix B) and is omitted ([`DensityKernel::log_jacobian`] returns `None`); it
//! cancels on normalisation. For the dot-product kernels of [`Polynomial`] it is computed.
//!
//! **Normalisability.** For a stationary kernel `k(x, x_n) → 0` as `‖x‖ → ∞`, so `Q(x)` tends to a
//! positive constant and `q_k` to a positive floor: `q_k` is *not* integrable on `ℝ^d`, whatever α
//! (the seed's remark that it is for `α > d − 1` holds for the parabola of its Fig. 1, not here).
//! [`KernelStudentT::normalise`] therefore integrates `q_k` numerically over a box (the data range
//! widened by a margin) and continues the density beyond it with a Cauchy tail weight of the box's
//! scale, integrated over the complement after mapping it to finite intervals: the density is
//! `p(x) = q_k(x) w(x)/Z` on the whole space, `w = 1` on the box, and every finite point has a
//! finite log density (`density::normalise` and `density::tails` module docs). The quadrature is
//! checked against a rigorous lower bound on the normaliser (`density::bound`), so a rule that
//! misses the density's peaks is refined or refused rather than reported. We still require
//! `α > d − 1`, the seed's condition (seed 003 §2.2), in [`NiwParams::validate_for_dim`].
//!
//! # Usage
//!
//! [`KernelStudentTParams`] (kernel family, fixed hyperparameters or grids to search, folds, seed,
//! normalisation box) `.check()?.fit::<B>(&x)` selects what is not fixed by cross-validation
//! ([`select_hyperparameters`]), fits, normalises on the whole space in 1-D/2-D, and returns a
//! [`KernelStudentT`] ([`crate::LogDensity`], [`KernelStudentT::sample`], a model file of kind
//! `density`). [`KdeParams`] fits the Gaussian KDE baseline ([`GaussianKde`]).
//!
//! ```
//! use bke_core::density::{KernelStudentTParams, SelectOptions};
//! use bke_core::{LogDensity, Params, Points};
//! use bke_linalg::DefaultBackend;
//! let x = Points::from_1d("x", &[-1.0, -0.8, -0.7, 0.9, 1.1, 1.3, 1.2, -0.9]).unwrap();
//! let params = KernelStudentTParams {
//!     select: SelectOptions { folds: 4, ..Default::default() },
//!     ..Default::default()
//! };
//! let model = params.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
//! let q = Points::from_1d("q", &[1.0, 0.1]).unwrap();
//! let lp = model.log_density::<DefaultBackend>(&q).unwrap();
//! assert!(lp[0] > lp[1]); // denser near the data
//! assert!(model.normalisation().unwrap().log_z.is_finite());
//! ```

mod bound;
mod domain;
mod kde;
mod model;
mod niw;
mod normalise;
mod select;
mod tails;

pub use kde::{Bandwidth, GaussianKde, KdeBandwidth, KdeParams};
// The density kernels live with the other kernel families; re-exported for the paths.
pub use crate::kernel::{DensityKernel, Polynomial};
pub use domain::Domain;
pub use model::{DensitySummary, KernelStudentT};
pub use niw::NiwParams;
pub use normalise::{Normalisation, NormaliseOptions, Sample, Tail, TailWeight};
pub use select::{Candidate, MAX_WIDENINGS, SelectOptions, Selection, select_hyperparameters};
pub use tails::gauss_legendre;

use crate::estimator::{Estimator, Params, Progress, Valid};
use crate::{CoreError, Kernel, KernelFamily, Points, check_positive};
use bke_linalg::Backend;
use niw::{check_alpha, check_finite};

/// Kernel student-t density estimation: the kernel, the hyperparameters that are fixed, the grids
/// and cross-validation that choose the others, and the normalisation box.
///
/// Defaults: squared exponential kernel, everything selected by seeded 5-fold cross-validated
/// log-likelihood of the normalised density (the grids of [`SelectOptions::default`]), normalised
/// on the whole space with the box the data range widened by 25% on each side. As an [`Estimator`] on [`Points`], it returns a
/// [`KernelStudentT`]. Selection and normalisation need 1-D or 2-D data; in more dimensions fix
/// every hyperparameter and set `normalise = false`.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelStudentTParams {
    /// The kernel family.
    pub family: KernelFamily,
    /// Fixed lengthscale(s): one, or one per dimension. `None`: `ℓ_d = c · sd_d` with the factor `c`
    /// selected from `select.lengthscale_factors` (`sd_d` the standard deviation of column `d`).
    pub lengthscales: Option<Vec<f64>>,
    /// Fixed `α` (`> d − 1`); `None`: selected (`α = d − 1 + a`, `a` from `select.alpha_offsets`).
    pub alpha: Option<f64>,
    /// Fixed `β > 0`; `None`: selected from `select.beta`.
    pub beta: Option<f64>,
    /// Fixed `σ₀² > 0`; `None`: selected from `select.sigma0_sq`.
    pub sigma0_sq: Option<f64>,
    /// Normalise the density on the box (1-D and 2-D data).
    pub normalise: bool,
    /// Grids, folds, seed and box of the selection (`select.domain`, else the data range widened by
    /// `select.margin` on each side, is also the normalisation box).
    pub select: SelectOptions,
    /// Quadrature of the final normaliser.
    pub quadrature: NormaliseOptions,
}

impl Default for KernelStudentTParams {
    fn default() -> Self {
        Self {
            family: KernelFamily::SquaredExponential,
            lengthscales: None,
            alpha: None,
            beta: None,
            sigma0_sq: None,
            normalise: true,
            select: SelectOptions::default(),
            quadrature: NormaliseOptions::default(),
        }
    }
}

impl KernelStudentTParams {
    /// Whether every hyperparameter is fixed (no selection).
    pub fn all_fixed(&self) -> bool {
        self.lengthscales.is_some() && self.alpha.is_some() && self.beta.is_some() && self.sigma0_sq.is_some()
    }
}

impl Params for KernelStudentTParams {
    type Error = CoreError;

    /// Fixed values valid (positive lengthscales, `β`, `σ₀²`; finite `α`), at least one lengthscale,
    /// valid selection settings ([`SelectOptions`]: grids, at least 2 folds) and quadrature.
    fn validate(&self) -> Result<(), CoreError> {
        if let Some(ls) = &self.lengthscales {
            if ls.is_empty() {
                return Err(CoreError::Empty { what: "fixed lengthscales".into(), needed: 1 });
            }
            ls.iter().try_for_each(|&l| check_positive("lengthscale", l))?;
        }
        if let Some(a) = self.alpha {
            check_finite("alpha", a)?;
        }
        if let Some(b) = self.beta {
            check_positive("beta", b)?;
        }
        if let Some(s) = self.sigma0_sq {
            check_positive("sigma0_sq", s)?;
        }
        if let KernelFamily::RationalQuadratic { alpha } = self.family {
            check_positive("rational quadratic alpha", alpha)?;
        }
        self.select.check()?;
        self.quadrature.check()
    }
}

impl Estimator for KernelStudentTParams {
    type Data = Points;
    type Fitted = KernelStudentT;

    /// Selects what is not fixed (stage `select`), fits (O(N³)), normalises (stage `normalise`).
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        x: &Points,
        progress: &dyn Progress,
    ) -> Result<KernelStudentT, CoreError> {
        x.check_len("density training data", 1)?;
        let d = x.dim();
        if x.len() > 1 {
            for k in 0..d {
                let first = x.point(0)[k];
                if x.iter().all(|p| p[k] == first) {
                    return Err(CoreError::InvalidChoice {
                        what: format!(
                            "a density of data whose column {} is constant (every value is {first})",
                            k + 1
                        ),
                        reason: "the data are a point mass in that column, not a continuous density: its \
                                 lengthscale, normaliser and likelihood are degenerate; drop the column, or \
                                 add the measurement noise the values were rounded from"
                            .into(),
                    });
                }
            }
        }
        if let Some(a) = params.alpha {
            check_alpha(a, d)?;
        }
        if let Some(ls) = &params.lengthscales {
            Kernel::new(params.family, ls.clone())?.check_dim(d)?;
        }
        if params.normalise && d > 2 {
            return Err(CoreError::InvalidChoice {
                what: format!("normalising a {d}-dimensional density"),
                reason:
                    "normalisation by quadrature is available for 1-D and 2-D data only; set normalise = \
                         false (the density is then unnormalised)"
                        .into(),
            });
        }
        let domain = match &params.select.domain {
            Some(dm) => dm.clone(),
            None => Domain::around(x, params.select.margin)?,
        };
        let (kernel, niw, cv, notes) =
            match (&params.lengthscales, params.alpha, params.beta, params.sigma0_sq) {
                (Some(ls), Some(alpha), Some(beta), Some(sigma0_sq)) => (
                    Kernel::new(params.family, ls.clone())?,
                    NiwParams { alpha, beta, sigma0_sq },
                    None,
                    Vec::new(),
                ),
                _ => {
                    if d > 2 {
                        return Err(CoreError::InvalidChoice {
                            what: format!("selecting the hyperparameters of a {d}-dimensional density"),
                            reason: "selection needs the normalised density, available for 1-D and 2-D data \
                                 only; fix the lengthscale, alpha, beta and sigma0_sq"
                                .into(),
                        });
                    }
                    let opts = params.selection_for(d, domain.clone());
                    let sel = select_hyperparameters::<B>(x, params.family, &opts, progress)?;
                    (sel.kernel, sel.params, Some(sel.cv_log_lik), sel.grid_notes)
                }
            };
        let mut model = KernelStudentT::with_kernel::<B>(kernel, x, niw)?;
        model.set_selection(cv, notes);
        if params.normalise {
            progress.checkpoint()?;
            progress.update("normalise", 0, 1);
            model = model.normalise::<B>(domain, &params.quadrature)?;
            progress.update("normalise", 1, 1);
        }
        Ok(model)
    }
}

impl KernelStudentTParams {
    /// The selection settings for `d`-dimensional data: fixed values become one-point grids.
    fn selection_for(&self, d: usize, domain: Domain) -> SelectOptions {
        let s = &self.select;
        SelectOptions {
            lengthscale_factors: if self.lengthscales.is_some() {
                vec![1.0]
            } else {
                s.lengthscale_factors.clone()
            },
            scales: self.lengthscales.clone().or_else(|| s.scales.clone()),
            sigma0_sq: self.sigma0_sq.map_or_else(|| s.sigma0_sq.clone(), |v| vec![v]),
            beta: self.beta.map_or_else(|| s.beta.clone(), |v| vec![v]),
            alpha_offsets: self.alpha.map_or_else(|| s.alpha_offsets.clone(), |v| vec![v - (d as f64 - 1.0)]),
            domain: Some(domain),
            ..s.clone()
        }
    }
}

#[cfg(test)]
mod degenerate_tests;
#[cfg(test)]
mod file_tests;
#[cfg(test)]
mod resolution_tests;
#[cfg(test)]
mod tail_tests;
#[cfg(test)]
mod tests;
