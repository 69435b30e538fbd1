//! The kernel conditional-independence test KCI (Zhang, Peters, Janzing & Schölkopf 2011) and its
//! random-feature form RCIT (Strobl, Zhang & Visweswaran 2019), with learned kernels.
//!
//! # The statistic
//! Let `Ẍ = (X, Z)`, `K_Ẍ = K_X ∘ K_Z` (a product kernel), `K_Y` the kernel of `Y`, `H = I − 11ᵀ/n`
//! and, for each side `s ∈ {x, y}`, the regression operator of the conditional embedding
//!
//! `R_s = ε_s (K_Z^s + ε_s I)⁻¹ = I − K_Z^s (K_Z^s + ε_s I)⁻¹`
//!
//! (residual maker of kernel ridge regression on `Z` with ridge `ε_s`). With `P_s = H R_s H`,
//!
//! `K̃_Ẍ = P_x (H K_Ẍ H) P_x`, `K̃_Y = P_y (H K_Y H) P_y`, `T = Tr(K̃_Ẍ K̃_Y) / n`
//!
//! (Zhang et al. 2011, Prop. 5; the outer `H` re-centres the residual features, which
//! [`conditioned_features`] needs for its covariance form and which keeps the two forms equal). With
//! `Z = ∅`, `R = I` and `T = n · HSIC_b` of `X` and `Y`.
//!
//! # The null
//! Write `K̃_Ẍ = AAᵀ`, `K̃_Y = BBᵀ` (rows `a_i`, `b_i`). Then `T = ‖AᵀB‖²_F / n = n ‖Ĉ‖²_F` with the
//! cross-covariance `Ĉ = AᵀB / n`, and under conditional independence `T` is asymptotically
//! `Σ_k λ_k z_k²` with `z_k ~ N(0, 1)` and `λ_k` the eigenvalues of the covariance of
//! `u_i = a_i ⊗ b_i`, estimated by `S = UᵀU / n` (Zhang et al. 2011 Thm. 3). Its non-zero eigenvalues
//! are those of `UUᵀ/n = (K̃_Ẍ ∘ K̃_Y)/n`, so the dense test never needs the factors. Two
//! approximations of the null ([`KciNull`]):
//! - **gamma** (Zhang et al. §3.4; causal-learn's default): the gamma law with the mean `Tr S` and the
//!   variance `2 ‖S‖²_F` of `Σ λ_k z_k²`;
//! - **spectral**: `draws` samples of `Σ λ_k z_k²` from the eigenvalues of `S` (causal-learn's
//!   `approx = False`); p-value `(1 + #{T* ≥ T}) / (1 + draws)`.
//!
//! Both treat the diagonal part of `T`, `Σ_i S_ii = Tr S`, as random, although it equals its own
//! null mean. With rough kernels (`K ≈ I`, as the BKL-Bayes posterior mixture weights them on
//! one-dimensional samples) that part dominates and the null is too wide: KCI rejected 0 of 500
//! times under CI at α = 0.05 (`repro fig4 --parts ci`). The null of the off-diagonal part alone
//! (variance `2 ‖S − diag S‖²_F`) was measured too and rejected 7.8 % and 28.6 % of the time under
//! additive and heteroscedastic CI: the imperfect regression on `Z` leaves a positive off-diagonal
//! mean that the diagonal's spread had been covering. The published null is kept: valid, but
//! conservative with rough kernels.
//!
//! # The learned kernels
//! - `K_X`, `K_Y`: the kernel selection of the test ([`crate::hypothesis::LengthscaleSelection`],
//!   the median heuristic by default, [`super::ci`]) on each variable's own sample. A selection that weights a collection
//!   (BKL-Bayes, HSICAgg) gives the weighted sum `Σ_k w_k k_{θ_k}` (weights normalised): a kernel
//!   itself, and under BKL-Bayes the posterior average of the kernel over `θ`. KCI's null is analytic
//!   for one kernel, so the collection is averaged rather than aggregated by a multiple test.
//! - `K_Z^s` and `ε_s`: the conditional embedding's regression `φ(X) ↦ E[φ(X) | Z]` by marginal
//!   likelihood. A GP regression of the variable itself on `Z` ([`crate::gp`], ARD squared
//!   exponential, ML-II over at most [`KciParams::hyper_points`] evenly spaced rows) gives the ARD
//!   lengthscales' ratios; then [`ZKernel::learn`] maximises the marginal likelihood of the
//!   multi-output GP `Φ_j ~ N(0, σ²(K_Z + εI))` of the variable's own centred kernel features `Φ`
//!   (50 random frequencies; `σ²` profiled out) over a common factor of those lengthscales (¼ to 2)
//!   and `ε` (`10⁻⁶` to 10) — Zhang et al.'s GP variant, which regresses the kernel's leading
//!   eigenvectors, on features. The mean regression alone is not enough: `R_s` must remove what `Z`
//!   predicts of every feature of `X` (`k(x, ·)` is a rougher function of `z` than `x`), and with the
//!   mean GP's own `ε = σ_n²/σ_f²` KCI rejected 36, 4 and 13 of 40 times at α = 0.05 under CI on
//!   three problems (`x = sin 2z + e`, `y = z² + e`; heteroscedastic; two-dimensional `Z`; n = 150),
//!   against 4, 0 and 3 of 40 with the features' likelihood (power 25 and 38 of 40 on two dependent
//!   variants). `R_s` uses every row.
//! - The `Z` factor of `K_Ẍ` (`xz_factor`): the median heuristic on `Z` (standardised column by
//!   column) with lengthscales [`XZ_WIDENING`] = 2 times longer, whichever rule chose `K_Z^s`
//!   (causal-learn standardises the data and joins `x` with `z/2` into one kernel, the same ratio). It only has to make `K_Ẍ` characteristic on `(X, Z)` and smooth enough in `z`
//!   for the regression to remove; the regression's own lengthscales are too rough for that (13 of
//!   40 rejections under CI on the first problem above with a fixed `ε = 10⁻³`, 1–2 of 40 widened),
//!   and they are not always informative: where `X` does not depend on `Z` the GP's ML-II often
//!   lands on a lengthscale far below the spacing of `Z` (white noise, `K_Z ≈ I`). The regression
//!   is then a multiple of `I` and harmless, but a `Z` factor built from it made `K_Ẍ ≈ I` and the
//!   test blind: PC with the learned rule missed 1.10 true edges per graph against the median
//!   rule's 0.47 on the 40 random DAGs of `repro fig4` (SHD +0.80 ± 0.28, paired), and 0.53 with
//!   the factor from the median heuristic (the test `a_white_noise_regression_on_z_keeps_the_power`).
//!
//! [`ZRule::Median`] replaces `K_Z^s` and `ε_s` by the median heuristic on `Z` and `ε = 10⁻³`
//! (causal-learn's defaults); [`super::ci`] has the measured trade-off between the two rules.
//!
//! # RCIT: the same test with low-rank factors
//! [`rcit`] replaces `K_Ẍ` and `K_Y` by `M` paired random Fourier features each ([`crate::rff`];
//! Strobl et al. 2019): frequencies drawn from the mixture of the selected kernels' spectral
//! densities (times the `Z` kernel's for `Ẍ`). `K_Z^s` gets a pivoted Cholesky factor `Ψ` of rank
//! `r` instead (Fine & Scheinberg 2001), accurate to `1e-6`: with random features for `Z` too, as
//! Strobl et al. do, the regression leaves part of the dependence on `Z` in both residuals, and the
//! test rejects 11 of 30 times at α = 0.05 under CI (`n = 120`, 100 frequencies; the unit tests'
//! problem). `R_s` becomes ridge regression on `Ψ` (Woodbury: `R = I − Ψ(ΨᵀΨ + εI)⁻¹Ψᵀ`),
//! `T = ‖AᵀB‖²_F / n`, and the null's `S` is the small `UᵀU/n`. Cost `O(n (r² + M_x M_y))` per
//! test instead of `O(n³)`: the test for large `n`. With exact factors in place of the random
//! features it equals KCI (the tests check this).

use crate::gp::{GpKernel, se};
use crate::hypothesis::hsic_null::centre;
use crate::hypothesis::median::median_distance;
use crate::hypothesis::{TestFamily, WeightedKernel};
use crate::special::gamma_sf;
use crate::{CoreError, Points};
use bke_linalg::{Backend, Mat, Trans};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// How KCI's null distribution is approximated (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KciNull {
    /// The gamma law with the null's mean and variance (the default).
    #[default]
    Gamma,
    /// Samples of the weighted sum of χ²₁ from the eigenvalues of the null covariance.
    Spectral,
}

impl KciNull {
    /// "gamma" or "spectral".
    pub fn name(self) -> &'static str {
        match self {
            KciNull::Gamma => "gamma",
            KciNull::Spectral => "spectral",
        }
    }

    /// Parses a name written by [`KciNull::name`].
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        match s {
            "gamma" => Ok(Self::Gamma),
            "spectral" => Ok(Self::Spectral),
            _ => Err(CoreError::InvalidChoice {
                what: format!("KCI null '{s}'"),
                reason: "use gamma or spectral".into(),
            }),
        }
    }
}

/// How the kernel on `Z` and the ridge `ε` of the conditional embedding are chosen (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZRule {
    /// By marginal likelihood ([`ZKernel::learn`]; the default).
    #[default]
    Learned,
    /// The median heuristic on `Z` (one lengthscale, the median pairwise distance) and
    /// `ε = 10⁻³`, causal-learn's KCI defaults.
    Median,
}

/// The ridge of [`ZRule::Median`] (causal-learn's `epsilon_x`, `epsilon_y`).
pub const MEDIAN_RIDGE: f64 = 1e-3;

impl ZRule {
    /// "learned" or "median".
    pub fn name(self) -> &'static str {
        match self {
            ZRule::Learned => "learned",
            ZRule::Median => "median",
        }
    }

    /// Parses a name written by [`ZRule::name`].
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        [ZRule::Learned, ZRule::Median].into_iter().find(|r| r.name() == s).ok_or_else(|| {
            CoreError::InvalidChoice {
                what: format!("kernel rule on the conditioning set '{s}'"),
                reason: "use learned or median".into(),
            }
        })
    }
}

/// Settings of KCI and RCIT. Defaults: gamma null, 10 000 spectral draws, 10 random frequencies for
/// `Ẍ` and `Y` (20 features each) and a `Z` factor of rank at most 200 (RCIT), GP hyperparameters on
/// at most 200 rows, the kernel on `Z` learned.
#[derive(Debug, Clone, PartialEq)]
pub struct KciParams {
    /// The null approximation.
    pub null: KciNull,
    /// Samples of the spectral null.
    pub draws: usize,
    /// RCIT: random frequencies of the kernels of `Ẍ` and of `Y`.
    pub features: usize,
    /// RCIT: most columns of the pivoted Cholesky factor of each kernel on `Z`.
    pub z_rank: usize,
    /// Most rows the GP hyperparameters of `K_Z` are learned on. The GP sets only the shape of
    /// `K_Z` (the ratios of its ARD lengthscales): [`ZKernel::learn`] then scales it and picks `ε` on
    /// every row, so a subsample suffices; each GP evaluation costs `O(m³)`, and PC asks for one fit
    /// per variable and conditioning set.
    pub hyper_points: usize,
    /// How `K_Z` and `ε` are chosen.
    pub z_rule: ZRule,
}

impl Default for KciParams {
    fn default() -> Self {
        Self {
            null: KciNull::Gamma,
            draws: 10_000,
            features: 10,
            z_rank: 200,
            hyper_points: 200,
            z_rule: ZRule::Learned,
        }
    }
}

impl KciParams {
    /// Errors on a count that cannot work.
    pub fn validate(&self) -> Result<(), CoreError> {
        let at_least = |name: &str, v: usize, min: usize| {
            if v < min {
                return Err(CoreError::InvalidParameter {
                    name: name.into(),
                    value: v as f64,
                    reason: format!("must be at least {min}"),
                });
            }
            Ok(())
        };
        at_least("KCI spectral draws", self.draws, 99)?;
        at_least("RCIT features", self.features, 1)?;
        at_least("RCIT rank of the Z factor", self.z_rank, 1)?;
        at_least("KCI hyperparameter rows", self.hyper_points, 10)
    }
}

/// The kernel on `Z` and the ridge of one side's conditional embedding (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ZKernel {
    /// ARD lengthscales, one per conditioning variable.
    pub lengthscales: Vec<f64>,
    /// `ε = σ_n² / σ_f²`.
    pub ridge: f64,
}

/// The smallest ridge used: below it `K_Z + εI` is too ill-conditioned to factor reliably.
const MIN_RIDGE: f64 = 1e-6;

/// The lengthscales of the `Z` factor of `K_Ẍ` over the median heuristic's (`xz_factor`).
pub const XZ_WIDENING: f64 = 2.0;

impl ZKernel {
    /// [`ZRule::Median`]: one lengthscale, the median pairwise distance of `z`, and
    /// `ε =` [`MEDIAN_RIDGE`].
    pub fn median(z: &Points) -> Result<Self, CoreError> {
        let l = median_distance(z)?;
        Ok(Self { lengthscales: vec![l; z.dim()], ridge: MEDIAN_RIDGE })
    }

    /// The kernel on `Z` and the ridge that maximise the marginal likelihood of the features of the
    /// variable (module docs): the multi-output GP `Φ_j ~ N(0, σ²(K_Z + εI))` of the centred random
    /// features `Φ` of `kernels` at `values`, `σ²` profiled out, over the lengthscales of `gp` times
    /// ¼, ½, 1 and 2 and a grid of `ε`.
    pub fn learn<B: Backend>(
        gp: &GpKernel,
        z: &Points,
        values: &[f64],
        kernels: &[WeightedKernel],
        seed: u64,
    ) -> Result<Self, CoreError> {
        let n = z.len() as f64;
        let lengthscales = gp.full_lengthscales(z.dim())?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let phi = centre_columns(&mixture_features(values, kernels, z, None, RIDGE_FEATURES, &mut rng)?);
        let outputs = {
            let e = B::sym_eigen(B::gram(phi.as_ref()).as_ref())?.values;
            let top = e.iter().cloned().fold(0.0, f64::max);
            e.iter().filter(|v| **v > 1e-5 * top).count().max(1) as f64
        };
        let mut best = (f64::INFINITY, 1.0, 1.0);
        for scale in LENGTHSCALE_SCALES {
            let ls: Vec<f64> = lengthscales.iter().map(|l| l * scale).collect();
            let psi = pivoted_cholesky(z, &ZKernel { lengthscales: ls, ridge: 0.0 }, RIDGE_RANK);
            let (nll, ridge) = profile_ridge::<B>(&psi, &phi, outputs, n)?;
            if nll < best.0 {
                best = (nll, scale, ridge);
            }
        }
        let lengthscales = lengthscales.iter().map(|l| l * best.1).collect();
        let ridge = best.2;
        Ok(Self { lengthscales, ridge: ridge.max(MIN_RIDGE) })
    }
}

/// The `Z` factor of `K_Ẍ` (module docs), a function of `z` alone: with `m` the median pairwise
/// distance of `z` standardised column by column (or, when more than half of those pairs coincide,
/// as for a discrete `Z`, `√(2D)`, the root-mean-square distance of standardised data in `D`
/// dimensions), column `d` of standard deviation `s_d` gets the lengthscale `XZ_WIDENING · m · s_d`
/// (`XZ_WIDENING · m` for a constant column): the median heuristic, widened, in each column's units.
fn xz_factor(z: &Points) -> ZKernel {
    let (n, dim) = (z.len() as f64, z.dim());
    let sd: Vec<f64> = (0..dim)
        .map(|d| {
            let mean = z.iter().map(|p| p[d]).sum::<f64>() / n;
            let sd = (z.iter().map(|p| (p[d] - mean).powi(2)).sum::<f64>() / n).sqrt();
            if sd > 0.0 && sd.is_finite() { sd } else { 1.0 }
        })
        .collect();
    let standardised: Vec<f64> = z.iter().flat_map(|p| p.iter().zip(&sd).map(|(v, s)| v / s)).collect();
    let m = Points::new("conditioning set", standardised, dim)
        .and_then(|p| median_distance(&p))
        .unwrap_or((2.0 * dim as f64).sqrt());
    ZKernel { lengthscales: sd.iter().map(|s| XZ_WIDENING * m * s).collect(), ridge: 0.0 }
}

/// The factors of the GP's lengthscales tried by [`ZKernel::learn`].
const LENGTHSCALE_SCALES: [f64; 4] = [0.25, 0.5, 1.0, 2.0];

/// The smallest negative log marginal likelihood of the features `phi` under `σ²(ΨΨᵀ + εI)` over
/// the grid `ε = 10^(−6 … 1)`, and its `ε`.
fn profile_ridge<B: Backend>(psi: &Mat, phi: &Mat, outputs: f64, n: f64) -> Result<(f64, f64), CoreError> {
    // ΨΨᵀ = U S² Uᵀ; the energy of Φ along each u_k, and off the span of U
    let e = B::sym_eigen(B::gram(psi.as_ref()).as_ref())?;
    let mut proj = Mat::zeros(psi.ncols(), phi.ncols());
    B::gemm(1.0, psi.as_ref(), Trans::Yes, phi.as_ref(), Trans::No, 0.0, proj.as_mut())?;
    let mut rotated = Mat::zeros(psi.ncols(), phi.ncols());
    B::gemm(1.0, e.vectors.as_ref(), Trans::Yes, proj.as_ref(), Trans::No, 0.0, rotated.as_mut())?;
    let along: Vec<(f64, f64)> = e
        .values
        .iter()
        .enumerate()
        .filter(|(_, s2)| **s2 > 1e-12)
        .map(|(k, &s2)| (s2, (0..phi.ncols()).map(|j| rotated[(k, j)].powi(2)).sum::<f64>() / s2))
        .collect();
    let total: f64 = phi.as_slice().iter().map(|v| v * v).sum();
    let off = (total - along.iter().map(|a| a.1).sum::<f64>()).max(0.0);
    let rank = along.len() as f64;
    let nll = |eps: f64| {
        let quad = along.iter().map(|(s2, g)| g / (s2 + eps)).sum::<f64>() + off / eps;
        let logdet = along.iter().map(|(s2, _)| (s2 + eps).ln()).sum::<f64>() + (n - rank) * eps.ln();
        n * outputs * (quad / (n * outputs)).ln() + outputs * logdet
    };
    Ok((0..=70)
        .map(|i| 10f64.powf(-6.0 + 0.1 * i as f64))
        .map(|eps| (nll(eps), eps))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("non-empty grid"))
}

/// Random frequencies of the features whose marginal likelihood sets the ridge ([`ZKernel::learn`]).
const RIDGE_FEATURES: usize = 50;

/// Most columns of the `Z` factor in [`ZKernel::learn`].
const RIDGE_RANK: usize = 300;

/// One side of a test: the variable's values, its kernel (a weighted sum) and, when `Z ≠ ∅`, the
/// regression on `Z`.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The values.
    pub values: &'a [f64],
    /// The kernels and their weights.
    pub kernels: &'a [WeightedKernel],
    /// The kernel on `Z` and the ridge, `None` for `Z = ∅`.
    pub z: Option<&'a ZKernel>,
}

/// KCI's statistic and p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KciOutcome {
    /// `T = Tr(K̃_Ẍ K̃_Y) / n`.
    pub statistic: f64,
    /// The p-value under the chosen null approximation.
    pub p_value: f64,
}

/// `Σ_k w_k k_k(a, b) / Σ_k w_k`.
fn mixture(kernels: &[WeightedKernel], a: f64, b: f64) -> f64 {
    let total: f64 = kernels.iter().map(|k| k.weight).sum();
    kernels.iter().map(|k| k.weight * k.eval(&[a], &[b])).sum::<f64>() / total
}

/// The Gram matrix of the correlation kernel on `Z`.
fn z_gram(z: &Points, k: &ZKernel) -> Mat {
    let n = z.len();
    Mat::from_fn(n, n, |i, j| se(z.point(i), z.point(j), &k.lengthscales))
}

/// `K ∘ L` (element-wise).
fn hadamard(k: &Mat, l: &Mat) -> Mat {
    Mat::from_fn(k.nrows(), k.ncols(), |i, j| k[(i, j)] * l[(i, j)])
}

/// `P (HKH) P` with `P = H R H`, `R = ε (K_Z + εI)⁻¹` (module docs); `HKH` when `zk` is `None`.
fn conditioned<B: Backend>(k: &Mat, z: &Points, zk: Option<&ZKernel>) -> Result<Mat, CoreError> {
    let kc = centre(k);
    let Some(zk) = zk else { return Ok(kc) };
    let n = k.nrows();
    let mut a = z_gram(z, zk);
    for i in 0..n {
        a[(i, i)] += zk.ridge;
    }
    let l = B::cholesky(a.as_ref())?;
    let mut r = B::cholesky_inverse(l.as_ref())?;
    r.as_mut_slice().iter_mut().for_each(|v| *v *= zk.ridge);
    let p = centre(&r);
    let mut pk = Mat::zeros(n, n);
    B::gemm(1.0, p.as_ref(), Trans::No, kc.as_ref(), Trans::No, 0.0, pk.as_mut())?;
    let mut out = Mat::zeros(n, n);
    B::gemm_symmetric(1.0, pk.as_ref(), Trans::No, p.as_ref(), Trans::No, 0.0, out.as_mut())?;
    Ok(out)
}

/// KCI with dense Gram matrices, `O(n³)` (module docs). `z` has one row per value (`dim` 0 is not
/// allowed by [`Points`]: pass any points with both `z` kernels `None` for `Z = ∅`).
pub fn kci<B: Backend>(
    x: Side<'_>,
    y: Side<'_>,
    z: &Points,
    params: &KciParams,
    seed: u64,
) -> Result<KciOutcome, CoreError> {
    let n = x.values.len();
    // K_Ẍ, its Z factor, K_Y, the regressions' temporaries and the null's S and eigenvectors
    let setting = format!(
        "observations = {n} with the dense KCI test, which holds about eight n × n matrices (--ci auto \
         runs RCIT, its random-feature form, above {} observations)",
        super::ci::KCI_DENSE_MAX
    );
    crate::budget::check(&setting, crate::budget::Bytes::f64s(n).times(n).times(8))?;
    let gram = |s: Side<'_>| Mat::from_fn(n, n, |i, j| mixture(s.kernels, s.values[i], s.values[j]));
    let mut kx = gram(x);
    if x.z.is_some() {
        kx = hadamard(&kx, &z_gram(z, &xz_factor(z)));
    }
    let kx = conditioned::<B>(&kx, z, x.z)?;
    let ky = conditioned::<B>(&gram(y), z, y.z)?;
    let mut s = hadamard(&kx, &ky);
    s.as_mut_slice().iter_mut().for_each(|v| *v /= n as f64);
    let statistic = s.as_slice().iter().sum::<f64>();
    Ok(KciOutcome { statistic, p_value: null_p_value::<B>(statistic, &s, params, seed)? })
}

/// `H R H Φ` for `R = I − Ψ(ΨᵀΨ + εI)⁻¹Ψᵀ` (`HΦ` without `Z`): the residual features.
pub fn conditioned_features<B: Backend>(phi: &Mat, psi: Option<(&Mat, f64)>) -> Result<Mat, CoreError> {
    let mut a = centre_columns(phi);
    if let Some((psi, ridge)) = psi {
        let mut g = B::gram(psi.as_ref());
        for i in 0..g.nrows() {
            g[(i, i)] += ridge;
        }
        let l = B::cholesky(g.as_ref())?;
        let mut c = Mat::zeros(psi.ncols(), a.ncols());
        B::gemm(1.0, psi.as_ref(), Trans::Yes, a.as_ref(), Trans::No, 0.0, c.as_mut())?;
        B::cholesky_solve_in_place(l.as_ref(), c.as_mut())?;
        B::gemm(-1.0, psi.as_ref(), Trans::No, c.as_ref(), Trans::No, 1.0, a.as_mut())?;
        a = centre_columns(&a);
    }
    Ok(a)
}

fn centre_columns(m: &Mat) -> Mat {
    let n = m.nrows() as f64;
    let means: Vec<f64> = (0..m.ncols()).map(|j| m.col(j).iter().sum::<f64>() / n).collect();
    Mat::from_fn(m.nrows(), m.ncols(), |i, j| m[(i, j)] - means[j])
}

/// The test from residual features `A`, `B` (`K̃_Ẍ = AAᵀ`, `K̃_Y = BBᵀ`; module docs).
pub fn kci_of_features<B: Backend>(
    a: &Mat,
    b: &Mat,
    params: &KciParams,
    seed: u64,
) -> Result<KciOutcome, CoreError> {
    let n = a.nrows();
    let mut c = Mat::zeros(a.ncols(), b.ncols());
    B::gemm(1.0, a.as_ref(), Trans::Yes, b.as_ref(), Trans::No, 0.0, c.as_mut())?;
    let statistic = c.as_slice().iter().map(|v| v * v).sum::<f64>() / n as f64;
    let (p, q) = (a.ncols(), b.ncols());
    let s = if p * q <= n {
        let u = Mat::from_fn(n, p * q, |i, k| a[(i, k / q)] * b[(i, k % q)]);
        let mut s = B::gram(u.as_ref());
        s.as_mut_slice().iter_mut().for_each(|v| *v /= n as f64);
        s
    } else {
        let outer = |m: &Mat| {
            let mut g = Mat::zeros(n, n);
            B::gemm_symmetric(1.0, m.as_ref(), Trans::No, m.as_ref(), Trans::Yes, 0.0, g.as_mut()).map(|_| g)
        };
        let mut s = hadamard(&outer(a)?, &outer(b)?);
        s.as_mut_slice().iter_mut().for_each(|v| *v /= n as f64);
        s
    };
    Ok(KciOutcome { statistic, p_value: null_p_value::<B>(statistic, &s, params, seed)? })
}

/// RCIT: KCI on random Fourier features of `Ẍ` and `Y` and a pivoted Cholesky factor of each
/// `K_Z^s` (module docs); the features are drawn from `seed`.
pub fn rcit<B: Backend>(
    x: Side<'_>,
    y: Side<'_>,
    z: &Points,
    params: &KciParams,
    seed: u64,
) -> Result<KciOutcome, CoreError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7c1f_0000_0000_0001);
    let mut side = |s: Side<'_>, with_z: bool| -> Result<Mat, CoreError> {
        let zk = if with_z && s.z.is_some() { Some(xz_factor(z)) } else { None };
        let phi = mixture_features(s.values, s.kernels, z, zk.as_ref(), params.features, &mut rng)?;
        let psi = s.z.map(|k| (pivoted_cholesky(z, k, params.z_rank), k.ridge));
        conditioned_features::<B>(&phi, psi.as_ref().map(|(m, r)| (m, *r)))
    };
    let a = side(x, true)?;
    let b = side(y, false)?;
    kci_of_features::<B>(&a, &b, params, seed)
}

/// Residual variance (relative to `k(z, z) = 1`) at which [`pivoted_cholesky`] stops: far below any
/// ridge the GP learns, so the factor's error does not change `R`.
const Z_RESIDUAL_VARIANCE: f64 = 1e-6;

/// A factor `Ψ` (`n × r`, `r ≤ max_rank`) with `ΨΨᵀ ≈ K_Z` by greedy pivoted Cholesky (Fine &
/// Scheinberg 2001), `O(n r²)`: the largest remaining diagonal is the next pivot, until it falls to
/// [`Z_RESIDUAL_VARIANCE`].
fn pivoted_cholesky(z: &Points, zk: &ZKernel, max_rank: usize) -> Mat {
    let k = |i: usize, j: usize| se(z.point(i), z.point(j), &zk.lengthscales);
    let (order, g) = crate::numeric::pivoted_cholesky(z.len(), k, Z_RESIDUAL_VARIANCE, max_rank);
    let r = order.len();
    Mat::from_fn(z.len(), r.max(1), |i, c| if c < r { g[i][c] } else { 0.0 })
}

/// `M` paired random Fourier features (`n × 2M`) of `k(v) · k_Z(z)`, with `k` the normalised mixture
/// `kernels` on the values `v` (left out when `v` is empty) and `k_Z` the ARD Gaussian `zk` (left out
/// when `None`). A frequency picks a kernel of the mixture by weight, then draws from its spectral
/// density: `N(0, 1/ℓ²)` for the Gaussian, Cauchy with scale `1/ℓ` for the one-dimensional Laplace.
fn mixture_features(
    v: &[f64],
    kernels: &[WeightedKernel],
    z: &Points,
    zk: Option<&ZKernel>,
    m: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Mat, CoreError> {
    let n = if v.is_empty() { z.len() } else { v.len() };
    let total: f64 = kernels.iter().map(|k| k.weight).sum();
    let scale = 1.0 / (m as f64).sqrt();
    let mut out = Mat::zeros(n, 2 * m);
    for q in 0..m {
        let mut phase = vec![0.0; n];
        if !v.is_empty() {
            let mut u = rng.random::<f64>() * total;
            let k = kernels.iter().find(|k| {
                u -= k.weight;
                u <= 0.0
            });
            let k = k.unwrap_or(&kernels[kernels.len() - 1]);
            let w = match k.family {
                TestFamily::Gaussian => StandardNormal.sample(rng),
                TestFamily::LaplaceL1 => (std::f64::consts::PI * (rng.random::<f64>() - 0.5)).tan(),
            } / k.lengthscale;
            phase.iter_mut().zip(v).for_each(|(p, x)| *p += w * x);
        }
        if let Some(zk) = zk {
            for (d, l) in zk.lengthscales.iter().enumerate() {
                let w: f64 = StandardNormal.sample(rng);
                phase.iter_mut().enumerate().for_each(|(i, p)| *p += w / l * z.point(i)[d]);
            }
        }
        for (i, p) in phase.iter().enumerate() {
            out[(i, q)] = p.cos() * scale;
            out[(i, m + q)] = p.sin() * scale;
        }
    }
    if !out.as_slice().iter().all(|v| v.is_finite()) {
        return Err(CoreError::NonFiniteResult {
            what: "RCIT's random features".into(),
            reason: "a variable's scale overflows; rescale the data".into(),
        });
    }
    Ok(out)
}

/// The p-value of `T` under `Σ λ_k z_k²`, `λ` the eigenvalues of `s` (module docs).
fn null_p_value<B: Backend>(t: f64, s: &Mat, params: &KciParams, seed: u64) -> Result<f64, CoreError> {
    let trace: f64 = (0..s.nrows()).map(|i| s[(i, i)]).sum();
    if !(trace > 0.0) || !t.is_finite() {
        // nothing left after conditioning: no evidence against independence
        return Ok(1.0);
    }
    match params.null {
        KciNull::Gamma => {
            let var = 2.0 * s.as_slice().iter().map(|v| v * v).sum::<f64>();
            Ok(gamma_sf(t, trace * trace / var, var / trace).clamp(0.0, 1.0))
        }
        KciNull::Spectral => {
            let mut lambda = B::sym_eigen(s.as_ref())?.values;
            lambda.reverse();
            let total: f64 = lambda.iter().filter(|l| **l > 0.0).sum();
            // the smallest eigenvalues, 1e-9 of the total, enter by their mean
            let (mut kept, mut acc) = (0, 0.0);
            while kept < lambda.len() && lambda[kept] > 0.0 && acc < total * (1.0 - 1e-9) {
                acc += lambda[kept];
                kept += 1;
            }
            let tail = total - acc;
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x05be_c7a1_0000_0000);
            let exceed = (0..params.draws)
                .filter(|_| {
                    let draw: f64 = lambda[..kept]
                        .iter()
                        .map(|l| {
                            let g: f64 = StandardNormal.sample(&mut rng);
                            l * g * g
                        })
                        .sum();
                    draw + tail >= t
                })
                .count();
            Ok((1 + exceed) as f64 / (1 + params.draws) as f64)
        }
    }
}

#[cfg(test)]
mod tests;
