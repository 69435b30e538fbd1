//! Deconditional mean embeddings: the nonparametric estimator (seed Def. 4.4, Thm 4.3) in both of
//! its forms, and the parametric estimator (Def. 4.5) with random Fourier features.
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
//! Parametric (Def. 4.5): `w̄ = [Φ A Aᵀ Φᵀ + mεI]⁻¹ Φ A z̃`, `A = Ψᵀ(ΨΨᵀ + nλI)⁻¹ Ψ̃`, `f̄(x) = w̄ᵀ φ(x)`.

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len};
use crate::ops::{add_diag, chol, mm, mv};
use crate::ttgp::transform;
use bke_core::{CoreError, Kernel, KernelFamily, Points, check_positive};
use bke_linalg::{Backend, Mat, Trans};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal, Uniform};

/// Which computational form of the nonparametric DME (Def. 4.4).
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
pub struct DmeOperator {
    a: Mat,
    c: f64,
    factor: Factor,
}

impl DmeOperator {
    /// Builds the operator from `K = k(x, x)` (`n × n`), `L = ℓ(y, y)` (`n × n`) and
    /// `L̃ = ℓ(y, ỹ)` (`n × m`).
    pub fn from_grams<B: Backend>(
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
    pub fn transformation(&self) -> &Mat {
        &self.a
    }

    /// Embedding weights `V = [v(x*_1) … v(x*_q)]` (`m × q`) from the columns `k(x*)` of `kx`
    /// (`n × q`): `μ̄'_{X=x*|Y} = Σ_j V_j ℓ(ỹ_j, ·)`.
    pub fn embedding_weights<B: Backend>(&self, kx: &Mat) -> Result<Mat, DmeError> {
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
    pub fn alpha<B: Backend>(&self, z: &[f64]) -> Result<Vec<f64>, DmeError> {
        check_same_len("z̃", z.len(), "ỹ", self.a.ncols())?;
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

/// The nonparametric DME estimator (Def. 4.4) with kernels.
#[derive(Debug, Clone)]
pub struct Dme {
    x: Points,
    y_tilde: Points,
    kernel_x: Kernel,
    kernel_y: Kernel,
    op: DmeOperator,
}

impl Dme {
    /// Builds the DME of `P_{X|Y}` from transformation pairs `(x, y)` and prior samples `ỹ`.
    #[allow(clippy::too_many_arguments)]
    pub fn new<B: Backend>(
        x: Points,
        y: Points,
        y_tilde: Points,
        kernel_x: Kernel,
        kernel_y: Kernel,
        lambda: f64,
        epsilon: f64,
        form: DmeForm,
    ) -> Result<Self, DmeError> {
        x.check_len("x", 1)?;
        y_tilde.check_len("ỹ", 1)?;
        check_same_len("x", x.len(), "y", y.len())?;
        y.check_dim("ỹ (must match y)", y_tilde.dim())?;
        kernel_x.check_dim(x.dim())?;
        kernel_y.check_dim(y.dim())?;
        let k = kernel_x.gram(&x)?;
        let l = kernel_y.gram(&y)?;
        let lt = kernel_y.cross_gram(&y, &y_tilde)?;
        let op = DmeOperator::from_grams::<B>(&k, &l, &lt, lambda, epsilon, form)?;
        Ok(Self { x, y_tilde, kernel_x, kernel_y, op })
    }

    /// The Gram-level operator.
    pub fn operator(&self) -> &DmeOperator {
        &self.op
    }

    /// Embedding weights `v(x*)` (`m × q`): `μ̄'_{X=x*|Y} = Σ_j v_j ℓ(ỹ_j, ·)`.
    pub fn embedding_weights<B: Backend>(&self, at: &Points) -> Result<Mat, DmeError> {
        at.check_dim("query points (must match x)", self.x.dim())?;
        let kx = self.kernel_x.cross_gram(&self.x, at)?;
        self.op.embedding_weights::<B>(&kx)
    }

    /// The DME `μ̄'_{X=x*|Y}(y')` for every query `x*` (rows) and point `y'` (columns).
    pub fn embedding<B: Backend>(&self, at_x: &Points, at_y: &Points) -> Result<Mat, DmeError> {
        let v = self.embedding_weights::<B>(at_x)?;
        let l = self.kernel_y.cross_gram(&self.y_tilde, at_y)?;
        mm::<B>(&v, Trans::Yes, &l, Trans::No)
    }

    /// The deconditional mean estimate `f̄(x*) = z̃ᵀ v(x*)` from targets `z̃` at `ỹ`.
    pub fn estimate<B: Backend>(&self, z_tilde: &[f64], at: &Points) -> Result<Vec<f64>, DmeError> {
        let alpha = self.op.alpha::<B>(z_tilde)?;
        at.check_dim("query points (must match x)", self.x.dim())?;
        let kx = self.kernel_x.cross_gram(&self.x, at)?;
        mv::<B>(&kx, Trans::Yes, &alpha)
    }
}

/// Random Fourier features `φ(x) = √(2/p) cos(Ωx + b)` of a squared-exponential kernel
/// (Rahimi & Recht): `Ω_r ~ N(0, diag(ℓ⁻²))`, `b_r ~ U(0, 2π)`, so `E[φ(x)ᵀφ(x')] = k(x, x')`.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomFourierFeatures {
    omega: Vec<f64>,
    bias: Vec<f64>,
    dim: usize,
}

impl RandomFourierFeatures {
    /// `p` features for the SE `kernel` on `dim`-dimensional inputs, drawn from `seed`.
    pub fn new(kernel: &Kernel, dim: usize, p: usize, seed: u64) -> Result<Self, DmeError> {
        if kernel.family() != KernelFamily::SquaredExponential {
            return Err(CoreError::InvalidParameter {
                name: "random Fourier feature kernel".into(),
                value: f64::NAN,
                reason: "only the squared exponential kernel is supported".into(),
            }
            .into());
        }
        kernel.check_dim(dim)?;
        if p == 0 {
            return Err(CoreError::Empty { what: "random Fourier features".into(), needed: 1 }.into());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let ls = kernel.lengthscales();
        let mut omega = Vec::with_capacity(p * dim);
        for _ in 0..p {
            for d in 0..dim {
                let l = if ls.len() == 1 { ls[0] } else { ls[d] };
                let z: f64 = StandardNormal.sample(&mut rng);
                omega.push(z / l);
            }
        }
        let unif = Uniform::new(0.0, std::f64::consts::TAU).expect("valid range");
        let bias = (0..p).map(|_| unif.sample(&mut rng)).collect();
        Ok(Self { omega, bias, dim })
    }

    /// Number of features `p`.
    pub fn len(&self) -> usize {
        self.bias.len()
    }

    /// Whether there are no features (never, by construction).
    pub fn is_empty(&self) -> bool {
        self.bias.is_empty()
    }

    /// The feature matrix `[φ(x_1) … φ(x_n)]` (`p × n`).
    pub fn features(&self, xs: &Points) -> Result<Mat, DmeError> {
        xs.check_dim("feature inputs", self.dim)?;
        let p = self.len();
        let scale = (2.0 / p as f64).sqrt();
        Ok(Mat::from_fn(p, xs.len(), |r, i| {
            let w = &self.omega[r * self.dim..(r + 1) * self.dim];
            let t: f64 = w.iter().zip(xs.point(i)).map(|(a, b)| a * b).sum();
            scale * (t + self.bias[r]).cos()
        }))
    }
}

/// The parametric DME estimator (Def. 4.5): `f̄(x) = w̄ᵀ φ(x)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParametricDme {
    w: Vec<f64>,
}

impl ParametricDme {
    /// Fits `w̄ = [ΦAAᵀΦᵀ + mεI]⁻¹ Φ A z̃` with `A = Ψᵀ(ΨΨᵀ + nλI)⁻¹Ψ̃` from feature matrices
    /// `Φ` (`p × n`), `Ψ` (`q × n`), `Ψ̃` (`q × m`) and targets `z̃` (`m`). Cost `O(p³ + q³)` plus
    /// products linear in `n` and `m`.
    pub fn fit<B: Backend>(
        phi: &Mat,
        psi: &Mat,
        psi_tilde: &Mat,
        z_tilde: &[f64],
        lambda: f64,
        epsilon: f64,
    ) -> Result<Self, DmeError> {
        check_positive("lambda", lambda)?;
        check_positive("epsilon", epsilon)?;
        check_same_len("Φ columns (x)", phi.ncols(), "Ψ columns (y)", psi.ncols())?;
        check_same_len("Ψ̃ columns (ỹ)", psi_tilde.ncols(), "z̃", z_tilde.len())?;
        check_same_len("Ψ rows", psi.nrows(), "Ψ̃ rows", psi_tilde.nrows())?;
        check_finite_vec("z̃", z_tilde)?;
        let (n, m) = (psi.ncols(), psi_tilde.ncols());
        let mut g = mm::<B>(psi, Trans::No, psi, Trans::Yes)?;
        add_diag(&mut g, n as f64 * lambda);
        let rg = chol::<B>(g, "ΨΨᵀ + nλI", "increase λ")?;
        let mut t = psi_tilde.clone();
        B::cholesky_solve_in_place(rg.as_ref(), t.as_mut())?;
        let a = mm::<B>(psi, Trans::Yes, &t, Trans::No)?; // n × m
        let pa = mm::<B>(phi, Trans::No, &a, Trans::No)?; // p × m
        let mut h = mm::<B>(&pa, Trans::No, &pa, Trans::Yes)?;
        add_diag(&mut h, m as f64 * epsilon);
        let rh = chol::<B>(h, "ΦAAᵀΦᵀ + mεI", "increase ε")?;
        let mut w = mv::<B>(&pa, Trans::No, z_tilde)?;
        B::cholesky_solve_vec_in_place(rh.as_ref(), &mut w)?;
        Ok(Self { w })
    }

    /// The weights `w̄`.
    pub fn weights(&self) -> &[f64] {
        &self.w
    }

    /// `f̄ = Φ*ᵀ w̄` for the feature matrix `Φ*` (`p × q`) of the query points.
    pub fn predict<B: Backend>(&self, phi_star: &Mat) -> Result<Vec<f64>, DmeError> {
        check_same_len("query feature rows", phi_star.nrows(), "weights", self.w.len())?;
        mv::<B>(phi_star, Trans::Yes, &self.w)
    }
}
