//! Deconditional mean embeddings: the nonparametric estimator (seed 004 Def. 4.4, Thm 4.3) in both
//! of its forms, and the parametric estimator (seed 004 Def. 4.5) on random Fourier features.
//!
//! With `A = (L + nλI)⁻¹ L̃`, the empirical DMO is `C̄'_{X|Y} = Ψ̃ [AᵀKA + mεI]⁻¹ Aᵀ Φᵀ` (4.4), so the
//! DME at `x` is `μ̄'_{X=x|Y} = Σ_j v_j(x) ℓ(ỹ_j, ·)` with
//! * standard form: `v(x) = [AᵀKA + mεI]⁻¹ Aᵀ k(x)` — an `m × m` solve, `O(n³ + m³)`;
//! * alternative form: `v(x) = Aᵀ [KAAᵀ + mεI]⁻¹ k(x)` — `O(n³)` in `n`, `O(m)` in `m` (beyond
//!   forming `A`). The non-symmetric inverse is applied as
//!   `(KS + cI)⁻¹ = c⁻¹[I − U (cI + UᵀSU)⁻¹ UᵀS]`, `S = AAᵀ`, `c = mε`, `K = UUᵀ` (Cholesky, or
//!   eigendecomposition when `K` is numerically singular).
//!
//! The DME estimator of `f = E†[g]` from targets `z̃` is `f̄(x) = z̃ᵀ v(x) = ᾱᵀ k(x)`,
//! `ᾱ = A[AᵀKA + mεI]⁻¹ z̃ = (SK + cI)⁻¹ A z̃`.
//!
//! Parametric (seed 004 Def. 4.5), with feature matrices whose rows are points (`Φ`: `n × p`, `Ψ`: `n × q`,
//! `Ψ̃`: `m × q`): `A = Ψ(ΨᵀΨ + nλI)⁻¹Ψ̃ᵀ`, `w̄ = [ΦᵀAAᵀΦ + mεI]⁻¹ΦᵀA z̃`, `f̄(x) = w̄ᵀ φ(x)`;
//! cost `O(p³ + q³)` plus products linear in `n` and `m`.
//!
//! ```
//! use bke_core::{Kernel, Params, Points, Predict};
//! use bke_dme::TaskData;
//! use bke_dme::dme::DmeParams;
//! use bke_linalg::DefaultBackend;
//! // x = y + noise; task pairs (ỹ, z̃ = sin ỹ): the DME recovers f = sin.
//! let y: Vec<f64> = (0..30).map(|i| -3.0 + 0.2 * i as f64).collect();
//! let x: Vec<f64> = y.iter().map(|v| v + 0.05).collect();
//! let yt: Vec<f64> = (0..25).map(|j| -3.0 + 0.24 * j as f64).collect();
//! let zt: Vec<f64> = yt.iter().map(|v| v.sin()).collect();
//! let data = TaskData::new(Points::from_1d("x", &x)?, Points::from_1d("y", &y)?, Points::from_1d("ỹ", &yt)?, zt)?;
//! let dme = DmeParams { lambda: 1e-4, epsilon: 1e-4, ..Default::default() }.check()?.fit::<DefaultBackend>(&data)?;
//! let f = dme.predict::<DefaultBackend>(&Points::from_1d("x*", &[0.55])?)?;
//! assert!((f[0] - 0.5f64.sin()).abs() < 0.1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::DmeError;
use crate::data::TaskData;
use crate::error::{check_finite_vec, check_same_len};
use crate::ops::{add_diag, chol, mm, mv};
use crate::ttgp::transform;
use bke_core::rff::FourierFeatures;
use bke_core::{CoreError, Estimator, Kernel, Params, Points, Predict, Progress, Valid, check_positive};
use bke_linalg::{Backend, Mat, Trans};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Which computational form of the nonparametric DME (seed 004 Def. 4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DmeForm {
    /// `[AᵀKA + mεI]⁻¹ Aᵀ k(x)`: `O(n³ + m³)`.
    #[default]
    Standard,
    /// `Aᵀ[KAAᵀ + mεI]⁻¹ k(x)`: `O(n³ + n²m)`.
    Alternative,
}

#[derive(Debug, Clone)]
enum Factor {
    /// Cholesky factor of `AᵀKA + mεI`.
    Standard(Mat),
    /// `S = AAᵀ`, `U` (`K = UUᵀ`), Cholesky factor of `UᵀSU + mεI`.
    Alternative { s: Mat, u: Mat, rb: Mat },
}

/// A DME operator on Gram matrices: everything after the kernels are evaluated.
#[derive(Debug, Clone)]
pub(crate) struct DmeOperator {
    a: Mat,
    c: f64,
    factor: Factor,
}

impl DmeOperator {
    /// Builds the operator from `K = k(x, x)` (`n × n`), `L = ℓ(y, y)` (`n × n`) and
    /// `L̃ = ℓ(y, ỹ)` (`n × m`).
    pub(crate) fn from_grams<B: Backend>(
        k: &Mat,
        l: &Mat,
        lt: &Mat,
        lambda: f64,
        epsilon: f64,
        form: DmeForm,
    ) -> Result<Self, DmeError> {
        check_positive("lambda", lambda)?;
        check_positive("epsilon", epsilon)?;
        let n = l.nrows();
        for (what, mat, r, c) in [("K", k, n, n), ("L", l, n, n), ("L̃", lt, n, lt.ncols())] {
            if mat.nrows() != r || mat.ncols() != c {
                return Err(CoreError::DimensionMismatch {
                    what: format!("{what} rows"),
                    expected: r,
                    found: mat.nrows(),
                }
                .into());
            }
        }
        let m = lt.ncols();
        let c = m as f64 * epsilon;
        let (_, a) = transform::<B>(l, lt, lambda)?;
        let factor = match form {
            DmeForm::Standard => {
                let ka = mm::<B>(k, Trans::No, &a, Trans::No)?;
                let mut g = mm::<B>(&a, Trans::Yes, &ka, Trans::No)?;
                add_diag(&mut g, c);
                Factor::Standard(chol::<B>(g, "AᵀKA + mεI", "increase ε")?)
            }
            DmeForm::Alternative => {
                let s = mm::<B>(&a, Trans::No, &a, Trans::Yes)?;
                let u = crate::ttgp::sqrt_factor::<B>(k)?;
                let su = mm::<B>(&s, Trans::No, &u, Trans::No)?;
                let mut bm = mm::<B>(&u, Trans::Yes, &su, Trans::No)?;
                add_diag(&mut bm, c);
                let rb = chol::<B>(bm, "UᵀSU + mεI", "increase ε")?;
                Factor::Alternative { s, u, rb }
            }
        };
        Ok(Self { a, c, factor })
    }

    /// `A = (L + nλI)⁻¹ L̃` (`n × m`).
    pub(crate) fn transformation(&self) -> &Mat {
        &self.a
    }

    /// Embedding weights `V = [v(x*_1) … v(x*_q)]` (`m × q`) from the columns `k(x*)` of `kx`
    /// (`n × q`): `μ̄'_{X=x*|Y} = Σ_j V_j ℓ(ỹ_j, ·)`.
    pub(crate) fn embedding_weights<B: Backend>(&self, kx: &Mat) -> Result<Mat, DmeError> {
        match &self.factor {
            Factor::Standard(r) => {
                let mut v = mm::<B>(&self.a, Trans::Yes, kx, Trans::No)?;
                B::cholesky_solve_in_place(r.as_ref(), v.as_mut())?;
                Ok(v)
            }
            Factor::Alternative { s, u, rb } => {
                // (KS + cI)⁻¹ k = c⁻¹[k − U B⁻¹ Uᵀ S k].
                let sk = mm::<B>(s, Trans::No, kx, Trans::No)?;
                let mut t = mm::<B>(u, Trans::Yes, &sk, Trans::No)?;
                B::cholesky_solve_in_place(rb.as_ref(), t.as_mut())?;
                let mut y = kx.clone();
                B::gemm(-1.0, u.as_ref(), Trans::No, t.as_ref(), Trans::No, 1.0, y.as_mut())?;
                y.as_mut_slice().iter_mut().for_each(|v| *v /= self.c);
                mm::<B>(&self.a, Trans::Yes, &y, Trans::No)
            }
        }
    }

    /// `ᾱ = A[AᵀKA + mεI]⁻¹ z̃` (`n`), so that `f̄(x) = ᾱᵀ k(x)`.
    pub(crate) fn alpha<B: Backend>(&self, z: &[f64]) -> Result<Vec<f64>, DmeError> {
        check_same_len("ỹ", self.a.ncols(), "z̃", z.len())?;
        check_finite_vec("z̃", z)?;
        match &self.factor {
            Factor::Standard(r) => {
                let mut t = z.to_vec();
                B::cholesky_solve_vec_in_place(r.as_ref(), &mut t)?;
                mv::<B>(&self.a, Trans::No, &t)
            }
            Factor::Alternative { s, u, rb } => {
                // (SK + cI)⁻¹ A z̃ = c⁻¹[b − S U B⁻¹ Uᵀ b], b = A z̃.
                let b = mv::<B>(&self.a, Trans::No, z)?;
                let mut t = mv::<B>(u, Trans::Yes, &b)?;
                B::cholesky_solve_vec_in_place(rb.as_ref(), &mut t)?;
                let ut = mv::<B>(u, Trans::No, &t)?;
                let sut = mv::<B>(s, Trans::No, &ut)?;
                Ok(b.iter().zip(&sut).map(|(bv, sv)| (bv - sv) / self.c).collect())
            }
        }
    }
}

/// The nonparametric DME estimator (seed 004 Def. 4.4): kernels, regularisers and the computational form.
/// Fitted to [`TaskData`]; the fitted [`Dme`] gives embeddings and the estimate `f̄`.
#[derive(Debug, Clone, PartialEq)]
pub struct DmeParams {
    /// Kernel `k` on X. Default: squared exponential, lengthscale 1.
    pub kernel_x: Kernel,
    /// Kernel `ℓ` on Y. Default: squared exponential, lengthscale 1.
    pub kernel_y: Kernel,
    /// CME regulariser `λ > 0`. Default `10⁻³`.
    pub lambda: f64,
    /// DME regulariser `ε > 0`. Default `10⁻³`.
    pub epsilon: f64,
    /// Computational form. Default [`DmeForm::Standard`].
    pub form: DmeForm,
}

impl Default for DmeParams {
    fn default() -> Self {
        Self {
            kernel_x: Kernel::se(1.0).expect("positive lengthscale"),
            kernel_y: Kernel::se(1.0).expect("positive lengthscale"),
            lambda: 1e-3,
            epsilon: 1e-3,
            form: DmeForm::Standard,
        }
    }
}

impl Params for DmeParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        check_positive("lambda", self.lambda)?;
        Ok(check_positive("epsilon", self.epsilon)?)
    }
}

impl Estimator for DmeParams {
    type Data = TaskData;
    type Fitted = Dme;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TaskData,
        _: &dyn Progress,
    ) -> Result<Dme, DmeError> {
        let p = &**params;
        p.kernel_x.check_dim(data.x.dim())?;
        p.kernel_y.check_dim(data.y.dim())?;
        let k = p.kernel_x.gram(&data.x)?;
        let l = p.kernel_y.gram(&data.y)?;
        let lt = p.kernel_y.cross_gram(&data.y, &data.y_tilde)?;
        let op = DmeOperator::from_grams::<B>(&k, &l, &lt, p.lambda, p.epsilon, p.form)?;
        let alpha = op.alpha::<B>(&data.z_tilde)?;
        Ok(Dme { x: data.x.clone(), y_tilde: data.y_tilde.clone(), params: p.clone(), op, alpha })
    }
}

/// A fitted nonparametric DME of `P_{X|Y}` with the estimate `f̄ = ᾱᵀ k(·)` of the task targets.
#[derive(Debug, Clone)]
pub struct Dme {
    x: Points,
    y_tilde: Points,
    params: DmeParams,
    op: DmeOperator,
    alpha: Vec<f64>,
}

impl Dme {
    /// The hyperparameters.
    pub fn params(&self) -> &DmeParams {
        &self.params
    }

    /// `A = (L + nλI)⁻¹ L̃` (`n × m`).
    pub fn transformation(&self) -> &Mat {
        self.op.transformation()
    }

    /// `ᾱ`, with `f̄(x) = Σ_i ᾱ_i k(x_i, x)`.
    pub fn alpha(&self) -> &[f64] {
        &self.alpha
    }

    /// Embedding weights `v(x*)` (`m × q`): `μ̄'_{X=x*|Y} = Σ_j v_j ℓ(ỹ_j, ·)`.
    pub fn embedding_weights<B: Backend>(&self, at: &Points) -> Result<Mat, DmeError> {
        at.check_dim("query points (must match x)", self.x.dim())?;
        let kx = self.params.kernel_x.cross_gram(&self.x, at)?;
        self.op.embedding_weights::<B>(&kx)
    }

    /// The DME `μ̄'_{X=x*|Y}(y')` for every query `x*` (rows) and point `y'` (columns).
    pub fn embedding<B: Backend>(&self, at_x: &Points, at_y: &Points) -> Result<Mat, DmeError> {
        let v = self.embedding_weights::<B>(at_x)?;
        let l = self.params.kernel_y.cross_gram(&self.y_tilde, at_y)?;
        mm::<B>(&v, Trans::Yes, &l, Trans::No)
    }
}

impl Predict for Dme {
    type Output = Vec<f64>;
    type Error = DmeError;

    /// The deconditional mean estimate `f̄(x*) = z̃ᵀ v(x*) = ᾱᵀ k(x*)`.
    fn predict<B: Backend>(&self, at: &Points) -> Result<Vec<f64>, DmeError> {
        at.check_dim("query points (must match x)", self.x.dim())?;
        let kx = self.params.kernel_x.cross_gram(&self.x, at)?;
        mv::<B>(&kx, Trans::Yes, &self.alpha)
    }
}

/// Random Fourier feature maps of `k` (on X, dimension `dim_x`) and `ℓ` (on Y), `count` frequencies
/// each, drawn from one seeded stream: `k`'s first, then `ℓ`'s.
pub fn fourier_pair(
    kernel_x: &Kernel,
    kernel_y: &Kernel,
    (dim_x, dim_y): (usize, usize),
    count: usize,
    seed: u64,
) -> Result<(FourierFeatures, FourierFeatures), DmeError> {
    if count == 0 {
        return Err(CoreError::Empty { what: "random Fourier features".into(), needed: 1 }.into());
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let fx = FourierFeatures::sample(kernel_x, dim_x, count, &mut rng)?;
    let fy = FourierFeatures::sample(kernel_y, dim_y, count, &mut rng)?;
    Ok((fx, fy))
}

/// The parametric DME estimator (seed 004 Def. 4.5) on random Fourier features of `k` and `ℓ`
/// ([`bke_core::rff`]), `features` frequencies each (`2 × features` columns).
#[derive(Debug, Clone, PartialEq)]
pub struct ParametricDmeParams {
    /// Kernel `k` on X whose spectral density gives the features `φ`. Default: SE, lengthscale 1.
    pub kernel_x: Kernel,
    /// Kernel `ℓ` on Y whose spectral density gives the features `ψ`. Default: SE, lengthscale 1.
    pub kernel_y: Kernel,
    /// Number of frequencies per feature map. Default 100.
    pub features: usize,
    /// Seed of the frequencies. Default 0.
    pub seed: u64,
    /// CME regulariser `λ > 0`. Default `10⁻³`.
    pub lambda: f64,
    /// DME regulariser `ε > 0`. Default `10⁻³`.
    pub epsilon: f64,
}

impl Default for ParametricDmeParams {
    fn default() -> Self {
        let d = DmeParams::default();
        Self {
            kernel_x: d.kernel_x,
            kernel_y: d.kernel_y,
            features: 100,
            seed: 0,
            lambda: d.lambda,
            epsilon: d.epsilon,
        }
    }
}

impl Params for ParametricDmeParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        check_positive("lambda", self.lambda)?;
        check_positive("epsilon", self.epsilon)?;
        if self.features == 0 {
            return Err(CoreError::Empty { what: "random Fourier features".into(), needed: 1 }.into());
        }
        Ok(())
    }
}

impl Estimator for ParametricDmeParams {
    type Data = TaskData;
    type Fitted = ParametricDme;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TaskData,
        _: &dyn Progress,
    ) -> Result<ParametricDme, DmeError> {
        let p = &**params;
        let dims = (data.x.dim(), data.y.dim());
        let (fx, fy) = fourier_pair(&p.kernel_x, &p.kernel_y, dims, p.features, p.seed)?;
        let (phi, psi, psi_t) = (fx.features(&data.x)?, fy.features(&data.y)?, fy.features(&data.y_tilde)?);
        let w = parametric_weights::<B>(&phi, &psi, &psi_t, &data.z_tilde, p.lambda, p.epsilon)?;
        Ok(ParametricDme { features: fx, w })
    }
}

/// `w̄ = [ΦᵀAAᵀΦ + mεI]⁻¹ΦᵀA z̃`, `A = Ψ(ΨᵀΨ + nλI)⁻¹Ψ̃ᵀ` from feature matrices with one row per
/// point: `Φ` (`n × p`), `Ψ` (`n × q`), `Ψ̃` (`m × q`) and targets `z̃` (`m`). seed 004 Def. 4.5.
pub fn parametric_weights<B: Backend>(
    phi: &Mat,
    psi: &Mat,
    psi_tilde: &Mat,
    z_tilde: &[f64],
    lambda: f64,
    epsilon: f64,
) -> Result<Vec<f64>, DmeError> {
    check_positive("lambda", lambda)?;
    check_positive("epsilon", epsilon)?;
    check_same_len("Φ rows (x)", phi.nrows(), "Ψ rows (y)", psi.nrows())?;
    check_same_len("Ψ̃ rows (ỹ)", psi_tilde.nrows(), "z̃", z_tilde.len())?;
    check_same_len("Ψ columns", psi.ncols(), "Ψ̃ columns", psi_tilde.ncols())?;
    check_finite_vec("z̃", z_tilde)?;
    let (n, m) = (psi.nrows(), psi_tilde.nrows());
    let mut g = B::gram(psi.as_ref());
    add_diag(&mut g, n as f64 * lambda);
    let rg = chol::<B>(g, "ΨᵀΨ + nλI", "increase λ")?;
    let mut t = psi_tilde.transpose(); // q × m
    B::cholesky_solve_in_place(rg.as_ref(), t.as_mut())?;
    let phipsi = mm::<B>(phi, Trans::Yes, psi, Trans::No)?; // p × q
    let pa = mm::<B>(&phipsi, Trans::No, &t, Trans::No)?; // ΦᵀA, p × m
    let mut h = mm::<B>(&pa, Trans::No, &pa, Trans::Yes)?;
    add_diag(&mut h, m as f64 * epsilon);
    let rh = chol::<B>(h, "ΦᵀAAᵀΦ + mεI", "increase ε")?;
    let mut w = mv::<B>(&pa, Trans::No, z_tilde)?;
    B::cholesky_solve_vec_in_place(rh.as_ref(), &mut w)?;
    Ok(w)
}

/// A fitted parametric DME: `f̄(x) = w̄ᵀ φ(x)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParametricDme {
    features: FourierFeatures,
    w: Vec<f64>,
}

impl ParametricDme {
    /// The weights `w̄` (`cos` block, then `sin` block).
    pub fn weights(&self) -> &[f64] {
        &self.w
    }

    /// The feature map `φ` of `k`.
    pub fn features(&self) -> &FourierFeatures {
        &self.features
    }
}

impl Predict for ParametricDme {
    type Output = Vec<f64>;
    type Error = DmeError;

    /// `f̄(x*) = w̄ᵀ φ(x*)`.
    fn predict<B: Backend>(&self, at: &Points) -> Result<Vec<f64>, DmeError> {
        let phi = self.features.features(at)?;
        mv::<B>(&phi, Trans::No, &self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    /// seed 004 Lemma 5.2 / Def. 4.5: with `k(x, x') = φ(x)ᵀφ(x')` and `ℓ(y, y') = ψ(y)ᵀψ(y')` the parametric
    /// and the nonparametric (both forms) estimators agree.
    #[test]
    fn parametric_dme_is_the_nonparametric_dme_with_the_feature_kernel() {
        let xs: Vec<f64> = (0..30).map(|i| (0.37 * i as f64).sin() * 2.0).collect();
        let ys: Vec<f64> = xs.iter().map(|v| 0.8 * v + 0.1).collect();
        let yt: Vec<f64> = (0..25).map(|j| -1.9 + 0.16 * j as f64).collect();
        let z: Vec<f64> = yt.iter().map(|v| (1.3 * v).cos()).collect();
        let p = |v: &[f64]| Points::from_1d("p", v).unwrap();
        let (kx, ky) = (Kernel::se(0.8).unwrap(), Kernel::se(0.6).unwrap());
        let (fx, fy) = fourier_pair(&kx, &ky, (1, 1), 6, 7).unwrap();
        let (phi, psi, psit) =
            (fx.features(&p(&xs)).unwrap(), fy.features(&p(&ys)).unwrap(), fy.features(&p(&yt)).unwrap());
        let (lambda, epsilon) = (0.03, 0.02);
        let w = parametric_weights::<DefaultBackend>(&phi, &psi, &psit, &z, lambda, epsilon).unwrap();
        let at = p(&[-1.5, -0.2, 0.4, 1.1]);
        let phis = fx.features(&at).unwrap();
        let got = mv::<DefaultBackend>(&phis, Trans::No, &w).unwrap();
        let gram = |a: &Mat, b: &Mat| mm::<DefaultBackend>(a, Trans::No, b, Trans::Yes).unwrap();
        for form in [DmeForm::Standard, DmeForm::Alternative] {
            let op = DmeOperator::from_grams::<DefaultBackend>(
                &gram(&phi, &phi),
                &gram(&psi, &psi),
                &gram(&psi, &psit),
                lambda,
                epsilon,
                form,
            )
            .unwrap();
            let alpha = op.alpha::<DefaultBackend>(&z).unwrap();
            let kstar = gram(&phi, &phis);
            for q in 0..4 {
                let want: f64 = (0..30).map(|i| alpha[i] * kstar[(i, q)]).sum();
                assert!((got[q] - want).abs() < 1e-8 * want.abs().max(1.0), "{form:?}: {} vs {want}", got[q]);
            }
        }
    }
}
