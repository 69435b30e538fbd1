//! Kernel Bayes' rule (Fukumizu, Song & Gretton 2013; Song, Fukumizu & Gretton 2013) beside the
//! DME as a nonparametric Bayes' rule (seed 004 §6, §7 and App. F), for the LFI setting of
//! [`crate::lfi`]: simulations `{θ_i, x_i}_{i=1}^n` from `π(θ) p(x | θ)`, prior samples
//! `{θ̃_j}_{j=1}^m ~ p(θ)`, an observation `y`; kernels `ℓ` on θ, `k` on statistics;
//! `L = ℓ(θ, θ)`, `L̃ = ℓ(θ, θ̃)`, `A = (L + nλI)⁻¹L̃`, `K = k(x, x)`, `Φ = [φ(x_1) … φ(x_n)]`.
//!
//! All three rules combine a *joint* operator with an *evidence* operator `C_XX` and invert the
//! latter with a regulariser `δ` (`ε` in seed 004 §7):
//!
//! | rule | joint `C_XΘ` | evidence `C_XX` |
//! |---|---|---|
//! | DME (seed 004 Def. 4.3) | `Ĉ_{X\|Θ} C̃_ΘΘ = ΦAΨ̃ᵀ/m` (2nd order) | `Φ (AAᵀ/m) Φᵀ` (2nd order) |
//! | KBR(a) | `ΦAΨ̃ᵀ/m` (2nd order) | `Φ Λ Φᵀ` (3rd order likelihood `C_{XX\|Θ}` times `μ̃_Θ`) |
//! | KBR(b) | `Φ Λ Ψᵀ` (3rd order `C_{XΘ\|Θ} μ̃_Θ`) | `Φ Λ Φᵀ` |
//!
//! with `Λ = diag(β)`, `β = A1/m` the weights that represent the prior embedding
//! `μ̃_Θ = Ψ̃1/m` through the simulations (`Σβ ≈ 1`; they can be negative). The posterior
//! embedding is `C_XΘᵀ g(C_XX) φ(y)`, and `Φᵀ g(ΦΛΦᵀ) = g(KΛ)Φᵀ` gives the weights
//!
//! * KBR(a): `v = Aᵀ g(KΛ) k(y)/m` on the prior samples `θ̃_j`;
//! * KBR(b): `w = Λ g(KΛ) k(y)` on the simulation parameters `θ_i` (Fukumizu et al.'s estimator);
//!
//! for the two regularised inverses [`EvidenceInverse`]: Tikhonov `g(E) = (E + δI)⁻¹` and
//! Fukumizu et al.'s `g(E) = E(E² + δI)⁻¹`, which stays defined when `Λ` has negative weights. (The
//! DME is `v = Aᵀ (K AAᵀ/m + δI)⁻¹ k(y)/m`, [`crate::lfi`].) `g(KΛ)k(y)` is computed symmetrically:
//! with `K = UUᵀ` (Cholesky) and `M = UᵀΛU`, `g(KΛ)U = U g(M)`, so `g(KΛ)k(y) = U g(M) U⁻¹k(y)`.
//!
//! As `δ → 0⁺`, both inverses give `g(KΛ) → Λ⁻¹K⁻¹` and KBR(b) degenerates to
//! `w = K⁻¹k(y)`: the conditional mean operator `Ψ K⁻¹ Φᵀ` of `Θ | X` under the simulation
//! distribution `π`, which no longer depends on the prior samples (seed 004 §7). KBR(a) and the
//! DME keep `Aᵀ`, and with it the prior samples.

use crate::DmeError;
use crate::error::{invalid, name_of, parse_named};
use crate::herding::PosteriorEmbedding;
use crate::lfi::{LfiData, adaptive_epsilon, rule_of_thumb};
use crate::ops::{add_diag, mm, mv, symmetrize};
use crate::ttgp::transform;
use bke_core::{Estimator, Kernel, Params, Points, Progress, Valid, check_positive};
use bke_linalg::{Backend, JitterOptions, Mat, Trans};

/// Which kernel Bayes' rule (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KbrVariant {
    /// KBR(a): second-order joint operator, posterior weights on the prior samples.
    A,
    /// KBR(b) (Fukumizu et al. 2013): third-order joint operator, weights on the simulations.
    #[default]
    B,
}

impl std::str::FromStr for KbrVariant {
    type Err = DmeError;

    /// Parses "a" or "b".
    fn from_str(s: &str) -> Result<Self, DmeError> {
        parse_named(s, "KBR variant", Self::NAMES)
    }
}

impl KbrVariant {
    const NAMES: &[(Self, &'static str)] = &[(Self::A, "a"), (Self::B, "b")];

    /// The name accepted by `str::parse`.
    pub fn name(self) -> &'static str {
        name_of(self, Self::NAMES)
    }
}

/// The regularised inverse of the evidence operator `E = C_XX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvidenceInverse {
    /// `(E + δI)⁻¹`.
    Tikhonov,
    /// `E(E² + δI)⁻¹` (Fukumizu et al. 2013), defined for indefinite `E`.
    #[default]
    Squared,
}

/// Kernel Bayes' rule for one observation. Unset kernels are chosen from the data as in
/// [`crate::lfi::LfiParams`]: `ℓ` SE with [`rule_of_thumb`] lengthscales of the simulation
/// parameters, `k` SE with lengthscales [`adaptive_epsilon`].
#[derive(Debug, Clone, PartialEq)]
pub struct KbrParams {
    /// Kernel `ℓ` on parameters [default: rule of thumb].
    pub kernel_theta: Option<Kernel>,
    /// Kernel `k` on statistics [default: rule of thumb].
    pub kernel_stats: Option<Kernel>,
    /// Regulariser `λ > 0` of `A = (L + nλI)⁻¹L̃`. Default `10⁻³`.
    pub lambda: f64,
    /// Regulariser `δ > 0` of the evidence inverse. Default 1.
    pub delta: f64,
    /// KBR(a) or KBR(b). Default [`KbrVariant::B`].
    pub variant: KbrVariant,
    /// Regularised inverse. Default [`EvidenceInverse::Squared`].
    pub inverse: EvidenceInverse,
}

impl Default for KbrParams {
    fn default() -> Self {
        Self {
            kernel_theta: None,
            kernel_stats: None,
            lambda: 1e-3,
            delta: 1.0,
            variant: KbrVariant::B,
            inverse: EvidenceInverse::Squared,
        }
    }
}

impl Params for KbrParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        check_positive("lambda", self.lambda)?;
        Ok(check_positive("delta", self.delta)?)
    }
}

impl std::str::FromStr for EvidenceInverse {
    type Err = DmeError;

    /// Parses "tikhonov" or "squared".
    fn from_str(s: &str) -> Result<Self, DmeError> {
        parse_named(s, "evidence inverse", Self::NAMES)
    }
}

impl EvidenceInverse {
    const NAMES: &[(Self, &'static str)] = &[(Self::Tikhonov, "tikhonov"), (Self::Squared, "squared")];

    /// The name accepted by `str::parse`.
    pub fn name(self) -> &'static str {
        name_of(self, Self::NAMES)
    }
}

/// A kernel Bayes' rule posterior: the embedding (normalised weights on the prior samples for
/// KBR(a), on the simulation parameters for KBR(b)) and the kernels used.
#[derive(Debug, Clone)]
pub struct KbrPosterior {
    kernel_theta: Kernel,
    kernel_stats: Kernel,
    embedding: PosteriorEmbedding,
}

impl KbrPosterior {
    /// The posterior embedding.
    pub fn embedding(&self) -> &PosteriorEmbedding {
        &self.embedding
    }

    /// The kernel `ℓ` on parameters.
    pub fn kernel_theta(&self) -> &Kernel {
        &self.kernel_theta
    }

    /// The kernel `k` on statistics.
    pub fn kernel_stats(&self) -> &Kernel {
        &self.kernel_stats
    }
}

/// The default kernel `k` on statistics at the observation `y`: SE with the default ε of
/// [`crate::lfi::LfiParams`] ([`adaptive_epsilon`]) as lengthscales.
fn default_stats_kernel(stats: &Points, y: &[f64]) -> Result<Kernel, DmeError> {
    Ok(Kernel::se_ard(adaptive_epsilon(stats, y))?)
}

impl Estimator for KbrParams {
    type Data = LfiData;
    type Fitted = KbrPosterior;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &LfiData,
        _: &dyn Progress,
    ) -> Result<KbrPosterior, DmeError> {
        let kernel_theta = match &params.kernel_theta {
            Some(k) => k.clone(),
            None => Kernel::se_ard(rule_of_thumb(&data.theta))?,
        };
        let kernel_stats = match &params.kernel_stats {
            Some(k) => k.clone(),
            None => default_stats_kernel(&data.stats, &data.observed)?,
        };
        kernel_theta.check_dim(data.theta.dim())?;
        kernel_stats.check_dim(data.stats.dim())?;
        let (points, w) = kbr_weights::<B>(data, &kernel_theta, &kernel_stats, params)?;
        let embedding = PosteriorEmbedding::new(points, kernel_theta.clone(), w)?;
        Ok(KbrPosterior { kernel_theta, kernel_stats, embedding })
    }
}

/// The (unnormalised) KBR weights and the points they sit on.
fn kbr_weights<B: Backend>(
    data: &LfiData,
    kernel_theta: &Kernel,
    kernel_stats: &Kernel,
    p: &KbrParams,
) -> Result<(Points, Vec<f64>), DmeError> {
    let (n, m) = (data.theta.len(), data.prior.len());
    let l = kernel_theta.gram(&data.theta)?;
    let lt = kernel_theta.cross_gram(&data.theta, &data.prior)?;
    let (_, a) = transform::<B>(&l, &lt, p.lambda)?;
    let beta: Vec<f64> = mv::<B>(&a, Trans::No, &vec![1.0 / m as f64; m])?;
    let k = kernel_stats.gram(&data.stats)?;
    let (u, _) = B::cholesky_jittered(k.as_ref(), JitterOptions::default())?;
    let mut c = kernel_stats.cross_gram(&data.stats, &data.observed_points()?)?.col(0).to_vec();
    let mut cm = Mat::from_fn(n, 1, |i, _| c[i]);
    B::solve_lower_in_place(u.as_ref(), cm.as_mut())?; // c = U⁻¹ k(y)
    c.copy_from_slice(cm.col(0));
    let lu = Mat::from_fn(n, n, |i, j| beta[i] * u[(i, j)]); // ΛU
    let mut mmat = mm::<B>(&u, Trans::Yes, &lu, Trans::No)?; // M = UᵀΛU
    symmetrize(&mut mmat);
    let x = apply_inverse::<B>(&mmat, &c, p.delta, p.inverse)?;
    let r = mv::<B>(&u, Trans::No, &x)?; // g(KΛ) k(y)
    Ok(match p.variant {
        KbrVariant::A => {
            let v = mv::<B>(&a, Trans::Yes, &r)?;
            (data.prior.clone(), v.iter().map(|x| x / m as f64).collect())
        }
        KbrVariant::B => (data.theta.clone(), beta.iter().zip(&r).map(|(b, x)| b * x).collect()),
    })
}

/// `g(M) c` for the symmetric `M`: `(M + δI)⁻¹c` or `(M² + δI)⁻¹Mc`.
fn apply_inverse<B: Backend>(
    m: &Mat,
    c: &[f64],
    delta: f64,
    inverse: EvidenceInverse,
) -> Result<Vec<f64>, DmeError> {
    match inverse {
        EvidenceInverse::Squared => {
            let mut m2 = mm::<B>(m, Trans::No, m, Trans::No)?;
            symmetrize(&mut m2);
            add_diag(&mut m2, delta);
            let f = crate::ops::chol::<B>(m2, "M² + δI", "increase delta")?;
            let mut x = mv::<B>(m, Trans::No, c)?;
            B::cholesky_solve_vec_in_place(f.as_ref(), &mut x)?;
            Ok(x)
        }
        EvidenceInverse::Tikhonov => {
            let mut shifted = m.clone();
            add_diag(&mut shifted, delta);
            if let Ok(f) = B::cholesky(shifted.as_ref()) {
                let mut x = c.to_vec();
                B::cholesky_solve_vec_in_place(f.as_ref(), &mut x)?;
                return Ok(x);
            }
            // Negative prior weights make M + δI indefinite: invert through its eigenvalues.
            let e = B::sym_eigen(m.as_ref())?;
            let vtc = mv::<B>(&e.vectors, Trans::Yes, c)?;
            let mut scaled = Vec::with_capacity(vtc.len());
            for (t, mu) in vtc.iter().zip(&e.values) {
                let d = mu + delta;
                if d.abs() < 1e-12 * (1.0 + mu.abs()) {
                    return Err(invalid(
                        "delta",
                        delta,
                        "the Tikhonov evidence inverse is singular (a negative prior weight cancels δ); \
                         change delta or use the squared inverse",
                    ));
                }
                scaled.push(t / d);
            }
            mv::<B>(&e.vectors, Trans::No, &scaled)
        }
    }
}
