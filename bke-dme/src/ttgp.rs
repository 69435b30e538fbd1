// tidy: long because its rewrite on the `dme` branch (issue 13's DME part) shortens it; splitting it here too would conflict with that rewrite.
//! Task-transformed Gaussian processes (seed Thm 5.3): marginal likelihoods with analytic gradients,
//! posterior predictive, and hyperparameter learning.
//!
//! # Model
//! Transformation data `{x_i, y_i}_{i=1}^n`, task data `{ỹ_j, z̃_j}_{j=1}^m`, kernels `k` on X and `ℓ`
//! on Y (unit amplitude, from bke-core). Priors `f ~ GP(0, γ² k)` and `g ~ GP(0, β² ℓ)`, likelihoods
//! `z = g(y) + N(0, σ²)` and `z = f(x)` (noise-free). The regularisers of the DME fix the amplitudes:
//! `λ = σ²/(nβ²)`, `ε = σ²/(mγ²)` (Thm 5.3 (4)); the paper's unit amplitudes are `λ = σ²/n`,
//! `ε = σ²/m` ([`TtgpHyper::tied`]). With `A = (L + nλI)⁻¹ L̃`, `L = ℓ(y, y)`, `L̃ = ℓ(y, ỹ)`,
//! `Ľ = ℓ(ỹ, ỹ)`, `K = k(x, x)`, the task targets are `z̃ | f ~ N(Aᵀ f, Σ)` and
//!
//! * [`MarginalForm::Full`], Thm 5.3 (3): `z̃ ~ N(0, γ² AᵀKA + Σ)`, `Σ = β²(Ľ − L̃ᵀA) + σ²I`
//!   (the posterior of `g` integrated out; the seed's `Σ = L̃ + σ²I − …` means `Ľ`);
//! * [`MarginalForm::Map`], Thm 5.3 (4): `g` at its MAP, `Σ = σ²I`:
//!   `z̃ ~ N(0, σ²(I + AᵀKA/(mε)))`, cost `O(n³ + m³)`;
//! * [`MarginalForm::Alternative`], Thm 5.3 (4), alternative form: the same density as `Map`,
//!   `C⁻¹ = σ⁻²[I − Aᵀ(KAAᵀ + mεI)⁻¹KA]`, computed in `O(n³ + n²m)` without any `m × m` matrix.
//!   The non-symmetric `(KAAᵀ + mεI)⁻¹K` is evaluated as `U (UᵀSU + mεI)⁻¹ Uᵀ` with `S = AAᵀ` and
//!   `K = UUᵀ` (Cholesky factor, or a symmetric eigendecomposition with eigenvalues clamped at 0
//!   when `K` is numerically singular), so it stays exact and symmetric.
//!
//! # Gradients
//! `∂ log p/∂θ = ½ tr((ααᵀ − C⁻¹) ∂C/∂θ)`, `α = C⁻¹z̃`, pushed back through `A` by the adjoint
//! `R = (L + nλI)⁻¹ γ² K A W` (`W = ααᵀ − C⁻¹`, never formed in the alternative form), then
//! contracted with `∂k/∂log θ` pair by pair. Parameters are the log lengthscales of `k`, of `ℓ`,
//! then `log σ`, `log λ`, `log ε` (see [`TtgpHyper::log_params`]). Since `C` is homogeneous of
//! degree 2 in `σ` at fixed `λ, ε`: `∂/∂log σ = z̃ᵀα − m`.
//!
//! # Prediction
//! `f(x*) | z̃ ~ N(γ² k*ᵀ A α, γ² k** − γ⁴ k*ᵀ A C⁻¹ Aᵀ k*)`. In the `Map`/`Alternative` forms the
//! mean is exactly the nonparametric DME of Def. 4.4 with these `λ, ε`.

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len};
use crate::ops::{add_diag, chol, chol_inverse, contract_params, dot, frob, mm, mv, trace};
use bke_core::optim::{LbfgsOptions, minimize};
use bke_core::{CoreError, Kernel, Points, check_positive};
use bke_linalg::{Backend, Mat, Trans};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// The data of a task-transformed regression problem: transformation pairs `(x_i, y_i)` and task
/// pairs `(ỹ_j, z̃_j)`. Validated on construction.
#[derive(Debug, Clone, PartialEq)]
pub struct TtgpData {
    /// Inputs `x` (n points in X).
    pub x: Points,
    /// Mediating inputs `y` paired with `x` (n points in Y).
    pub y: Points,
    /// Task inputs `ỹ` (m points in Y).
    pub y_tilde: Points,
    /// Task targets `z̃` (m values).
    pub z_tilde: Vec<f64>,
}

impl TtgpData {
    /// Validates lengths (`|x| = |y|`, `|ỹ| = |z̃|`), dimensions (`dim y = dim ỹ`), emptiness and
    /// finiteness of `z̃`.
    pub fn new(x: Points, y: Points, y_tilde: Points, z_tilde: Vec<f64>) -> Result<Self, DmeError> {
        x.check_len("x", 1)?;
        y_tilde.check_len("ỹ", 1)?;
        check_same_len("x", x.len(), "y", y.len())?;
        check_same_len("ỹ", y_tilde.len(), "z̃", z_tilde.len())?;
        y.check_dim("ỹ (must match y)", y_tilde.dim())?;
        check_finite_vec("z̃", &z_tilde)?;
        Ok(Self { x, y, y_tilde, z_tilde })
    }

    /// `n`, the number of transformation pairs.
    pub fn n(&self) -> usize {
        self.x.len()
    }

    /// `m`, the number of task pairs.
    pub fn m(&self) -> usize {
        self.y_tilde.len()
    }
}

/// TTGP hyperparameters: kernels `k` (on X) and `ℓ` (on Y), noise `σ`, regularisers `λ`, `ε`.
#[derive(Debug, Clone, PartialEq)]
pub struct TtgpHyper {
    /// Kernel `k` on X.
    pub kernel_x: Kernel,
    /// Kernel `ℓ` on Y.
    pub kernel_y: Kernel,
    /// Observation noise standard deviation `σ > 0`.
    pub sigma: f64,
    /// Regulariser `λ > 0` of the CME inverse `(L + nλI)⁻¹`.
    pub lambda: f64,
    /// Regulariser `ε > 0` of the DME inverse `(AᵀKA + mεI)⁻¹`.
    pub epsilon: f64,
}

impl TtgpHyper {
    /// The seed's parametrisation with unit prior amplitudes: `λ = σ²/n`, `ε = σ²/m`.
    pub fn tied(kernel_x: Kernel, kernel_y: Kernel, sigma: f64, n: usize, m: usize) -> Self {
        let s2 = sigma * sigma;
        Self { kernel_x, kernel_y, sigma, lambda: s2 / n.max(1) as f64, epsilon: s2 / m.max(1) as f64 }
    }

    /// Errors unless σ, λ, ε are finite and positive and the kernels fit the dimensions.
    pub fn check(&self, dim_x: usize, dim_y: usize) -> Result<(), DmeError> {
        check_positive("sigma", self.sigma)?;
        check_positive("lambda", self.lambda)?;
        check_positive("epsilon", self.epsilon)?;
        self.kernel_x.check_dim(dim_x)?;
        self.kernel_y.check_dim(dim_y)?;
        Ok(())
    }

    /// Number of log-parameters.
    pub fn n_params(&self) -> usize {
        self.kernel_x.n_params() + self.kernel_y.n_params() + 3
    }

    /// `(log θ_k…, log θ_ℓ…, log σ, log λ, log ε)`.
    pub fn log_params(&self) -> Vec<f64> {
        let mut p = self.kernel_x.log_params();
        p.extend(self.kernel_y.log_params());
        p.extend([self.sigma.ln(), self.lambda.ln(), self.epsilon.ln()]);
        p
    }

    /// The hyperparameters at log-parameters `p` (layout of [`TtgpHyper::log_params`]).
    pub fn with_log_params(&self, p: &[f64]) -> Result<Self, DmeError> {
        if p.len() != self.n_params() {
            return Err(CoreError::DimensionMismatch {
                what: "TTGP log-parameters".into(),
                expected: self.n_params(),
                found: p.len(),
            }
            .into());
        }
        let kx = self.kernel_x.n_params();
        let ky = self.kernel_y.n_params();
        let h = Self {
            kernel_x: self.kernel_x.with_log_params(&p[..kx])?,
            kernel_y: self.kernel_y.with_log_params(&p[kx..kx + ky])?,
            sigma: p[kx + ky].exp(),
            lambda: p[kx + ky + 1].exp(),
            epsilon: p[kx + ky + 2].exp(),
        };
        check_positive("sigma", h.sigma)?;
        check_positive("lambda", h.lambda)?;
        check_positive("epsilon", h.epsilon)?;
        Ok(h)
    }

    /// Prior amplitude `γ² = σ²/(mε)` of `f`.
    pub fn gamma2(&self, m: usize) -> f64 {
        self.sigma * self.sigma / (m as f64 * self.epsilon)
    }

    /// Prior amplitude `β² = σ²/(nλ)` of `g`.
    pub fn beta2(&self, n: usize) -> f64 {
        self.sigma * self.sigma / (n as f64 * self.lambda)
    }
}

/// Which TTGP marginal likelihood (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MarginalForm {
    /// Thm 5.3 (3): the posterior of `g` integrated out.
    Full,
    /// Thm 5.3 (4): `g` at its MAP, dense `m × m` computation.
    Map,
    /// Thm 5.3 (4), alternative form: same density as `Map`, `O(n³ + n²m)`.
    #[default]
    Alternative,
}

impl MarginalForm {
    /// Parses "full", "map" or "alternative".
    pub fn parse(s: &str) -> Result<Self, DmeError> {
        match s {
            "full" => Ok(Self::Full),
            "map" => Ok(Self::Map),
            "alternative" | "alt" => Ok(Self::Alternative),
            other => Err(CoreError::InvalidParameter {
                name: format!("marginal likelihood form '{other}'"),
                value: f64::NAN,
                reason: "use full, map or alternative".into(),
            }
            .into()),
        }
    }

    /// The name accepted by [`MarginalForm::parse`].
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Map => "map",
            Self::Alternative => "alternative",
        }
    }
}

/// A log marginal likelihood and its gradient with respect to the log-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMarginal {
    /// `log p(z̃)`.
    pub value: f64,
    /// `∂ log p(z̃)/∂ log θ` in the layout of [`TtgpHyper::log_params`].
    pub gradient: Vec<f64>,
}

/// Gram matrices of a TTGP (`K`, `L`, `L̃` and, for the full form, `Ľ`).
#[derive(Debug, Clone)]
pub(crate) struct Grams {
    pub k: Mat,
    pub l: Mat,
    pub lt: Mat,
    pub ltt: Option<Mat>,
}

impl Grams {
    pub(crate) fn new(data: &TtgpData, h: &TtgpHyper, form: MarginalForm) -> Result<Self, DmeError> {
        Ok(Self {
            k: h.kernel_x.gram(&data.x)?,
            l: h.kernel_y.gram(&data.y)?,
            lt: h.kernel_y.cross_gram(&data.y, &data.y_tilde)?,
            ltt: if form == MarginalForm::Full { Some(h.kernel_y.gram(&data.y_tilde)?) } else { None },
        })
    }
}

/// What [`evaluate`] computes beyond the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Value,
    Predictive,
    Gradient,
}

/// Adjoints `∂ log p/∂(K, L, L̃, Ľ)` and the scalar log-parameter derivatives.
#[derive(Debug, Clone)]
pub(crate) struct Adjoints {
    pub gk: Mat,
    pub gl: Mat,
    pub glt: Mat,
    pub gltt: Option<Mat>,
    pub d_log_sigma: f64,
    pub d_log_lambda: f64,
    pub d_log_epsilon: f64,
}

/// The result of [`evaluate`]: value, and (unless `Mode::Value`) `a = Aα`, `M = A C⁻¹ Aᵀ`,
/// and (with `Mode::Gradient`) the adjoints.
#[derive(Debug, Clone)]
pub(crate) struct Evaluation {
    pub value: f64,
    pub a: Vec<f64>,
    pub m: Mat,
    pub adj: Option<Adjoints>,
}

/// The regularisers as a tuple `(σ, λ, ε)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scalars {
    pub sigma: f64,
    pub lambda: f64,
    pub epsilon: f64,
}

const ADVICE_P: &str = "increase λ (the CME regulariser) or check y for duplicated points";
const ADVICE_C: &str = "increase σ or ε, or rescale the targets z̃";

/// `A = (L + nλI)⁻¹ L̃` and the factor of `P = L + nλI`.
pub(crate) fn transform<B: Backend>(l: &Mat, lt: &Mat, lambda: f64) -> Result<(Mat, Mat), DmeError> {
    let n = l.nrows();
    let mut p = l.clone();
    add_diag(&mut p, n as f64 * lambda);
    let rp = chol::<B>(p, "L + nλI", ADVICE_P)?;
    let mut a = lt.clone();
    B::cholesky_solve_in_place(rp.as_ref(), a.as_mut())?;
    Ok((rp, a))
}

/// Evaluates the chosen marginal likelihood on Gram matrices.
pub(crate) fn evaluate<B: Backend>(
    g: &Grams,
    z: &[f64],
    s: Scalars,
    form: MarginalForm,
    mode: Mode,
) -> Result<Evaluation, DmeError> {
    match form {
        MarginalForm::Full | MarginalForm::Map => dense::<B>(g, z, s, form == MarginalForm::Full, mode),
        MarginalForm::Alternative => alternative::<B>(g, z, s, mode),
    }
}

fn dense<B: Backend>(
    g: &Grams,
    z: &[f64],
    s: Scalars,
    full: bool,
    mode: Mode,
) -> Result<Evaluation, DmeError> {
    let (n, m) = (g.lt.nrows(), g.lt.ncols());
    let (nf, mf) = (n as f64, m as f64);
    let s2 = s.sigma * s.sigma;
    let gamma2 = s2 / (mf * s.epsilon);
    let beta2 = s2 / (nf * s.lambda);
    let (rp, a) = transform::<B>(&g.l, &g.lt, s.lambda)?;
    let ka = mm::<B>(&g.k, Trans::No, &a, Trans::No)?;
    let mut c = Mat::zeros(m, m);
    B::gemm(gamma2, a.as_ref(), Trans::Yes, ka.as_ref(), Trans::No, 0.0, c.as_mut())?;
    if full {
        let ltt = g.ltt.as_ref().expect("full form needs Ľ");
        for (cv, lv) in c.as_mut_slice().iter_mut().zip(ltt.as_slice()) {
            *cv += beta2 * lv;
        }
        B::gemm(-beta2, g.lt.as_ref(), Trans::Yes, a.as_ref(), Trans::No, 1.0, c.as_mut())?;
    }
    add_diag(&mut c, s2);
    for j in 0..m {
        for i in j + 1..m {
            let v = 0.5 * (c[(i, j)] + c[(j, i)]);
            c[(i, j)] = v;
            c[(j, i)] = v;
        }
    }
    let rc = chol::<B>(c, "the TTGP marginal covariance", ADVICE_C)?;
    let mut alpha = z.to_vec();
    B::cholesky_solve_vec_in_place(rc.as_ref(), &mut alpha)?;
    let value = -0.5 * dot(z, &alpha) - 0.5 * B::cholesky_logdet(rc.as_ref()) - 0.5 * mf * LN_2PI;
    if mode == Mode::Value {
        return Ok(Evaluation { value, a: Vec::new(), m: Mat::zeros(0, 0), adj: None });
    }
    let av = mv::<B>(&a, Trans::No, &alpha)?;
    // X = R_C⁻¹ Aᵀ: M = A C⁻¹ Aᵀ = XᵀX and A C⁻¹ = (R_C⁻ᵀ X)ᵀ, without forming C⁻¹.
    let mut x = a.transpose();
    B::solve_lower_in_place(rc.as_ref(), x.as_mut())?;
    let m1 = B::gram(x.as_ref());
    if mode == Mode::Predictive {
        return Ok(Evaluation { value, a: av, m: m1, adj: None });
    }
    B::solve_lower_transpose_in_place(rc.as_ref(), x.as_mut())?; // (A C⁻¹)ᵀ, m × n
    // AW = a αᵀ − A C⁻¹ (n × m); A W Aᵀ = a aᵀ − M.
    let aw = Mat::from_fn(n, m, |i, j| av[i] * alpha[j] - x[(j, i)]);
    drop(x);
    let awa = Mat::from_fn(n, n, |i, j| av[i] * av[j] - m1[(i, j)]);
    let mut gk = awa.clone();
    gk.as_mut_slice().iter_mut().for_each(|v| *v *= 0.5 * gamma2);
    let mut h = Mat::zeros(n, m);
    B::gemm(gamma2, g.k.as_ref(), Trans::No, aw.as_ref(), Trans::No, 0.0, h.as_mut())?;
    B::cholesky_solve_in_place(rp.as_ref(), h.as_mut())?; // R = P⁻¹ H
    let mut gl = Mat::zeros(n, n);
    B::gemm(-1.0, h.as_ref(), Trans::No, a.as_ref(), Trans::Yes, 0.0, gl.as_mut())?;
    let mut glt = h;
    let mut gltt = None;
    let mut d_log_lambda_beta = 0.0;
    if full {
        let ltt = g.ltt.as_ref().expect("full form needs Ľ");
        let cinv = chol_inverse::<B>(&rc)?;
        // W = ααᵀ − C⁻¹.
        let w = Mat::from_fn(m, m, |i, j| alpha[i] * alpha[j] - cinv[(i, j)]);
        for (gv, av_) in glt.as_mut_slice().iter_mut().zip(aw.as_slice()) {
            *gv -= beta2 * av_;
        }
        for (gv, v) in gl.as_mut_slice().iter_mut().zip(awa.as_slice()) {
            *gv += 0.5 * beta2 * v;
        }
        d_log_lambda_beta = -0.5 * beta2 * (frob(&w, ltt) - frob(&aw, &g.lt));
        let mut gw = w;
        gw.as_mut_slice().iter_mut().for_each(|v| *v *= 0.5 * beta2);
        gltt = Some(gw);
    }
    let adj = Adjoints {
        d_log_sigma: dot(z, &alpha) - mf,
        d_log_lambda: nf * s.lambda * trace(&gl) + d_log_lambda_beta,
        d_log_epsilon: -frob(&gk, &g.k),
        gk,
        gl,
        glt,
        gltt,
    };
    Ok(Evaluation { value, a: av, m: m1, adj: Some(adj) })
}

/// A factor `U` with `K = UUᵀ`: the Cholesky factor when `K` is numerically positive definite
/// (`n³/3` flops), else from the symmetric eigendecomposition with round-off negative eigenvalues
/// clamped at 0 (exact for a singular `K`, e.g. duplicated inputs). No inverse of `U` is ever used.
pub(crate) fn sqrt_factor<B: Backend>(k: &Mat) -> Result<Mat, DmeError> {
    if let Ok(l) = B::cholesky(k.as_ref()) {
        return Ok(l);
    }
    let e = B::sym_eigen(k.as_ref())?;
    let mut u = e.vectors;
    for (j, &v) in e.values.iter().enumerate() {
        let s = v.max(0.0).sqrt();
        u.col_mut(j).iter_mut().for_each(|x| *x *= s);
    }
    Ok(u)
}

fn alternative<B: Backend>(g: &Grams, z: &[f64], s: Scalars, mode: Mode) -> Result<Evaluation, DmeError> {
    let (n, m) = (g.lt.nrows(), g.lt.ncols());
    let (nf, mf) = (n as f64, m as f64);
    let s2 = s.sigma * s.sigma;
    let gamma2 = s2 / (mf * s.epsilon);
    let c = mf * s.epsilon;
    let (rp, a) = transform::<B>(&g.l, &g.lt, s.lambda)?;
    let sm = mm::<B>(&a, Trans::No, &a, Trans::Yes)?; // S = AAᵀ
    let u = sqrt_factor::<B>(&g.k)?;
    let su = mm::<B>(&sm, Trans::No, &u, Trans::No)?;
    let mut bm = mm::<B>(&u, Trans::Yes, &su, Trans::No)?;
    add_diag(&mut bm, c);
    let rb = chol::<B>(bm, "UᵀSU + mεI", ADVICE_C)?;
    // Q = U B⁻¹ Uᵀ = XᵀX, X = R_B⁻¹ Uᵀ.
    let mut x = u.transpose();
    B::solve_lower_in_place(rb.as_ref(), x.as_mut())?;
    let q = B::gram(x.as_ref());
    let b = mv::<B>(&a, Trans::No, z)?;
    let qb = mv::<B>(&q, Trans::No, &b)?;
    let zcz = (dot(z, z) - dot(&b, &qb)) / s2;
    let logdet = mf * s2.ln() + B::cholesky_logdet(rb.as_ref()) - nf * c.ln();
    let value = -0.5 * zcz - 0.5 * logdet - 0.5 * mf * LN_2PI;
    if mode == Mode::Value {
        return Ok(Evaluation { value, a: Vec::new(), m: Mat::zeros(0, 0), adj: None });
    }
    // α = C⁻¹ z̃ = σ⁻²(z̃ − Aᵀ Q A z̃).
    let atqb = mv::<B>(&a, Trans::Yes, &qb)?;
    let alpha: Vec<f64> = z.iter().zip(&atqb).map(|(zv, t)| (zv - t) / s2).collect();
    let av = mv::<B>(&a, Trans::No, &alpha)?;
    // M = A C⁻¹ Aᵀ = σ⁻²(S − SQS).
    let sq = mm::<B>(&sm, Trans::No, &q, Trans::No)?;
    let mut m1 = sm.clone();
    B::gemm(-1.0 / s2, sq.as_ref(), Trans::No, sm.as_ref(), Trans::No, 1.0 / s2, m1.as_mut())?;
    if mode == Mode::Predictive {
        return Ok(Evaluation { value, a: av, m: m1, adj: None });
    }
    let awa = Mat::from_fn(n, n, |i, j| av[i] * av[j] - m1[(i, j)]);
    let mut gk = awa;
    gk.as_mut_slice().iter_mut().for_each(|v| *v *= 0.5 * gamma2);
    // H = γ²(K a αᵀ − σ⁻² K(I − SQ) A).
    let mut nmat = g.k.clone();
    B::gemm(-1.0, g.k.as_ref(), Trans::No, sq.as_ref(), Trans::No, 1.0, nmat.as_mut())?;
    let ka = mv::<B>(&g.k, Trans::No, &av)?;
    let mut h = Mat::zeros(n, m);
    B::gemm(-gamma2 / s2, nmat.as_ref(), Trans::No, a.as_ref(), Trans::No, 0.0, h.as_mut())?;
    for j in 0..m {
        let col = h.col_mut(j);
        for i in 0..n {
            col[i] += gamma2 * ka[i] * alpha[j];
        }
    }
    B::cholesky_solve_in_place(rp.as_ref(), h.as_mut())?;
    let mut gl = Mat::zeros(n, n);
    B::gemm(-1.0, h.as_ref(), Trans::No, a.as_ref(), Trans::Yes, 0.0, gl.as_mut())?;
    let adj = Adjoints {
        d_log_sigma: dot(z, &alpha) - mf,
        d_log_lambda: nf * s.lambda * trace(&gl),
        d_log_epsilon: -frob(&gk, &g.k),
        gk,
        gl,
        glt: h,
        gltt: None,
    };
    Ok(Evaluation { value, a: av, m: m1, adj: Some(adj) })
}

fn scalars(h: &TtgpHyper) -> Scalars {
    Scalars { sigma: h.sigma, lambda: h.lambda, epsilon: h.epsilon }
}

fn validate(data: &TtgpData, h: &TtgpHyper) -> Result<(), DmeError> {
    h.check(data.x.dim(), data.y.dim())
}

/// `log p(z̃)` of the chosen form (no gradient).
pub fn log_marginal_value<B: Backend>(
    data: &TtgpData,
    hyper: &TtgpHyper,
    form: MarginalForm,
) -> Result<f64, DmeError> {
    validate(data, hyper)?;
    let g = Grams::new(data, hyper, form)?;
    Ok(evaluate::<B>(&g, &data.z_tilde, scalars(hyper), form, Mode::Value)?.value)
}

/// `log p(z̃)` of the chosen form and its gradient with respect to the log-parameters.
pub fn log_marginal<B: Backend>(
    data: &TtgpData,
    hyper: &TtgpHyper,
    form: MarginalForm,
) -> Result<LogMarginal, DmeError> {
    validate(data, hyper)?;
    let g = Grams::new(data, hyper, form)?;
    let e = evaluate::<B>(&g, &data.z_tilde, scalars(hyper), form, Mode::Gradient)?;
    let adj = e.adj.expect("gradient mode");
    let mut grad = contract_params(&hyper.kernel_x, &data.x, &data.x, &adj.gk);
    let mut gy = contract_params(&hyper.kernel_y, &data.y, &data.y, &adj.gl);
    let gyt = contract_params(&hyper.kernel_y, &data.y, &data.y_tilde, &adj.glt);
    gy.iter_mut().zip(&gyt).for_each(|(a, b)| *a += b);
    if let Some(gltt) = &adj.gltt {
        let g3 = contract_params(&hyper.kernel_y, &data.y_tilde, &data.y_tilde, gltt);
        gy.iter_mut().zip(&g3).for_each(|(a, b)| *a += b);
    }
    grad.extend(gy);
    grad.extend([adj.d_log_sigma, adj.d_log_lambda, adj.d_log_epsilon]);
    Ok(LogMarginal { value: e.value, gradient: grad })
}

/// The dense `m × m` covariance of `z̃` under the chosen form (`Alternative` gives the `Map`
/// covariance, which it represents). For tests and small problems: `O(m²)` memory.
pub fn marginal_covariance<B: Backend>(
    data: &TtgpData,
    hyper: &TtgpHyper,
    form: MarginalForm,
) -> Result<Mat, DmeError> {
    validate(data, hyper)?;
    let g = Grams::new(data, hyper, MarginalForm::Full)?;
    let (n, m) = (data.n(), data.m());
    let (_, a) = transform::<B>(&g.l, &g.lt, hyper.lambda)?;
    let ka = mm::<B>(&g.k, Trans::No, &a, Trans::No)?;
    let mut c = mm::<B>(&a, Trans::Yes, &ka, Trans::No)?;
    c.as_mut_slice().iter_mut().for_each(|v| *v *= hyper.gamma2(m));
    if form == MarginalForm::Full {
        let beta2 = hyper.beta2(n);
        let lta = mm::<B>(&g.lt, Trans::Yes, &a, Trans::No)?;
        let ltt = g.ltt.as_ref().expect("built with Full");
        for ((cv, l), q) in c.as_mut_slice().iter_mut().zip(ltt.as_slice()).zip(lta.as_slice()) {
            *cv += beta2 * (l - q);
        }
    }
    add_diag(&mut c, hyper.sigma * hyper.sigma);
    Ok(c)
}

/// Posterior predictive mean and variance of the latent `f`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// `E[f(x*) | z̃]`.
    pub mean: Vec<f64>,
    /// `Var[f(x*) | z̃]` (latent function, no observation noise).
    pub variance: Vec<f64>,
}

/// A conditioned TTGP: predicts `f` at new inputs.
#[derive(Debug, Clone)]
pub struct Ttgp {
    data: TtgpData,
    hyper: TtgpHyper,
    form: MarginalForm,
    log_marginal: f64,
    gamma2: f64,
    a: Vec<f64>,
    m: Mat,
}

impl Ttgp {
    /// Conditions the TTGP on `data` (cost of one marginal likelihood evaluation).
    pub fn new<B: Backend>(data: TtgpData, hyper: TtgpHyper, form: MarginalForm) -> Result<Self, DmeError> {
        validate(&data, &hyper)?;
        let g = Grams::new(&data, &hyper, form)?;
        let e = evaluate::<B>(&g, &data.z_tilde, scalars(&hyper), form, Mode::Predictive)?;
        let gamma2 = hyper.gamma2(data.m());
        Ok(Self { data, hyper, form, log_marginal: e.value, gamma2, a: e.a, m: e.m })
    }

    /// The hyperparameters.
    pub fn hyper(&self) -> &TtgpHyper {
        &self.hyper
    }

    /// The marginal likelihood form used.
    pub fn form(&self) -> MarginalForm {
        self.form
    }

    /// The data.
    pub fn data(&self) -> &TtgpData {
        &self.data
    }

    /// `log p(z̃)` at these hyperparameters.
    pub fn log_marginal(&self) -> f64 {
        self.log_marginal
    }

    /// DME weights `ᾱ = γ² A α` with `f̄(x) = Σ_i ᾱ_i k(x_i, x)` (Def. 4.4 in the MAP forms).
    pub fn weights(&self) -> Vec<f64> {
        self.a.iter().map(|v| v * self.gamma2).collect()
    }

    /// Predictive mean and variance of `f` at `at`.
    pub fn predict<B: Backend>(&self, at: &Points) -> Result<Prediction, DmeError> {
        at.check_dim("prediction points (must match x)", self.data.x.dim())?;
        let ks = self.hyper.kernel_x.cross_gram(&self.data.x, at)?; // n × q
        let mean: Vec<f64> = mv::<B>(&ks, Trans::Yes, &self.a)?.iter().map(|v| v * self.gamma2).collect();
        let mk = mm::<B>(&self.m, Trans::No, &ks, Trans::No)?;
        let variance = (0..at.len())
            .map(|j| {
                let kss = self.hyper.kernel_x.eval(at.point(j), at.point(j));
                let quad = dot(ks.col(j), mk.col(j));
                (self.gamma2 * (kss - self.gamma2 * quad)).max(0.0)
            })
            .collect();
        Ok(Prediction { mean, variance })
    }

    /// Predictive covariance matrix of `f` at `at` (`q × q`).
    pub fn predict_covariance<B: Backend>(&self, at: &Points) -> Result<Mat, DmeError> {
        at.check_dim("prediction points (must match x)", self.data.x.dim())?;
        let ks = self.hyper.kernel_x.cross_gram(&self.data.x, at)?;
        let mk = mm::<B>(&self.m, Trans::No, &ks, Trans::No)?;
        let quad = mm::<B>(&ks, Trans::Yes, &mk, Trans::No)?;
        let kss = self.hyper.kernel_x.gram(at)?;
        Ok(Mat::from_fn(at.len(), at.len(), |i, j| self.gamma2 * (kss[(i, j)] - self.gamma2 * quad[(i, j)])))
    }
}

/// Which hyperparameters [`fit`] learns (the others stay at their initial values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Learn {
    /// Lengthscales (and α) of `k`.
    pub kernel_x: bool,
    /// Lengthscales (and α) of `ℓ`.
    pub kernel_y: bool,
    /// Noise `σ`.
    pub sigma: bool,
    /// Regulariser `λ`.
    pub lambda: bool,
    /// Regulariser `ε`.
    pub epsilon: bool,
}

impl Default for Learn {
    /// Everything.
    fn default() -> Self {
        Self { kernel_x: true, kernel_y: true, sigma: true, lambda: true, epsilon: true }
    }
}

impl Learn {
    /// The free-parameter mask in the layout of [`TtgpHyper::log_params`].
    pub fn mask(&self, h: &TtgpHyper) -> Vec<bool> {
        let mut m = vec![self.kernel_x; h.kernel_x.n_params()];
        m.extend(vec![self.kernel_y; h.kernel_y.n_params()]);
        m.extend([self.sigma, self.lambda, self.epsilon]);
        m
    }
}

/// Options of [`fit`]: multi-start L-BFGS on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitOptions {
    /// Marginal likelihood maximised. Default [`MarginalForm::Map`].
    pub form: MarginalForm,
    /// Number of starts: the initial hyperparameters, then random perturbations of them. Default 5.
    pub starts: usize,
    /// Half-width of the uniform perturbation of the free log-parameters of the random starts.
    /// Default 1.5.
    pub spread: f64,
    /// Seed of the random starts. Default 0.
    pub seed: u64,
    /// Which hyperparameters are learned. Default: all.
    pub learn: Learn,
    /// Keep `λ = σ²/n` (unit prior amplitude `β = 1` of `g`, the seed's Thm 5.3 (4)) while `σ`
    /// moves, instead of learning `λ` freely. Default true: the MAP forms identify `λ` only weakly
    /// (a larger `λ` shrinks `A`, which a larger amplitude `γ²` of `f` compensates exactly in the
    /// limit), so a free `λ` lets the scale of the recovered `f` drift. Ignores `learn.lambda`.
    pub tie_lambda: bool,
    /// L-BFGS options.
    pub lbfgs: LbfgsOptions,
}

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            form: MarginalForm::Map,
            starts: 5,
            spread: 1.5,
            seed: 0,
            learn: Learn::default(),
            tie_lambda: true,
            lbfgs: LbfgsOptions::default(),
        }
    }
}

impl FitOptions {
    /// Errors on zero starts or a negative/non-finite spread.
    pub fn check(&self) -> Result<(), DmeError> {
        if self.starts == 0 {
            return Err(CoreError::InvalidParameter {
                name: "starts".into(),
                value: 0.0,
                reason: "at least one start is needed".into(),
            }
            .into());
        }
        if !(self.spread >= 0.0 && self.spread.is_finite()) {
            return Err(CoreError::InvalidParameter {
                name: "spread".into(),
                value: self.spread,
                reason: "must be finite and non-negative".into(),
            }
            .into());
        }
        Ok(())
    }
}

/// One local optimum found by [`fit`].
#[derive(Debug, Clone, PartialEq)]
pub struct StartResult {
    /// The hyperparameters reached.
    pub hyper: TtgpHyper,
    /// `log p(z̃)` there.
    pub log_marginal: f64,
    /// L-BFGS iterations.
    pub iterations: usize,
    /// Whether a tolerance stopped L-BFGS.
    pub converged: bool,
}

/// The result of [`fit`]: the best start and all of them (in start order).
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    /// The hyperparameters with the largest marginal likelihood.
    pub hyper: TtgpHyper,
    /// Its `log p(z̃)`.
    pub log_marginal: f64,
    /// Every start that could be evaluated.
    pub starts: Vec<StartResult>,
}

/// Seeds for parallel start `i`: independent of the thread count.
pub(crate) fn start_rng(seed: u64, i: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// An objective over log-parameters: `(value, gradient)`, `None` where it cannot be evaluated.
pub(crate) type Objective<'a> = dyn Fn(&[f64]) -> Option<(f64, Vec<f64>)> + Sync + 'a;

/// Rewrites the parameters of random start `s` (e.g. fresh inducing points).
pub(crate) type Reseed<'a> = dyn Fn(usize, &mut [f64]) + Sync + 'a;

/// Generic multi-start L-BFGS maximisation of `objective(log-params) → (value, gradient)` over the
/// free coordinates of `mask`; random starts perturb the coordinates of `perturb`, then `reseed`
/// (if any) may rewrite start `s > 0`. Starts run in parallel; results are in start order.
pub(crate) fn multi_start(
    p0: &[f64],
    mask: &[bool],
    perturb: &[bool],
    opts: &FitOptions,
    objective: &Objective<'_>,
    reseed: Option<&Reseed<'_>>,
) -> Vec<(Vec<f64>, f64, usize, bool)> {
    let free: Vec<usize> = (0..p0.len()).filter(|&i| mask[i]).collect();
    (0..opts.starts)
        .into_par_iter()
        .filter_map(|s| {
            let mut start = p0.to_vec();
            if s > 0 {
                let mut rng = start_rng(opts.seed, s);
                for &i in &free {
                    if perturb[i] {
                        start[i] += rng.random_range(-opts.spread..=opts.spread);
                    }
                }
                if let Some(f) = reseed {
                    f(s, &mut start);
                }
            }
            let x0: Vec<f64> = free.iter().map(|&i| start[i]).collect();
            let full = |x: &[f64]| {
                let mut p = start.clone();
                for (k, &i) in free.iter().enumerate() {
                    p[i] = x[k];
                }
                p
            };
            let r = minimize(
                |x| {
                    let (v, g) = objective(&full(x))?;
                    Some((-v, free.iter().map(|&i| -g[i]).collect()))
                },
                x0,
                opts.lbfgs,
            )
            .ok()?;
            Some((full(&r.x), -r.f, r.iterations, r.converged))
        })
        .collect()
}

/// Applies [`FitOptions::tie_lambda`] to a TTGP objective over `(log θ…, log σ, log λ, log ε, …)`:
/// the index of `log σ` is `is`, `log λ` follows it; `n` is the number of transformation pairs.
/// Returns the mask (λ frozen when tied) and the map from optimiser parameters to model parameters.
pub(crate) fn tie_lambda_map(tie: bool, is: usize, n: usize) -> impl Fn(&[f64]) -> Vec<f64> + Sync {
    let ln_n = (n as f64).ln();
    move |p: &[f64]| {
        let mut q = p.to_vec();
        if tie {
            q[is + 1] = 2.0 * q[is] - ln_n;
        }
        q
    }
}

/// Chain rule of [`tie_lambda_map`]: `∂/∂log σ += 2 ∂/∂log λ`.
pub(crate) fn tie_lambda_grad(tie: bool, is: usize, g: &mut [f64]) {
    if tie {
        g[is] += 2.0 * g[is + 1];
        g[is + 1] = 0.0;
    }
}

/// Learns the TTGP hyperparameters by maximising the chosen marginal likelihood with multi-start
/// L-BFGS on the log scale (seed §5: "by maximizing the TTGP marginal likelihood, we can learn DME
/// hyperparameters of kernels k and ℓ, and also λ and ε").
pub fn fit<B: Backend>(data: &TtgpData, init: &TtgpHyper, opts: &FitOptions) -> Result<FitResult, DmeError> {
    validate(data, init)?;
    opts.check()?;
    let mut mask = opts.learn.mask(init);
    let is = init.kernel_x.n_params() + init.kernel_y.n_params();
    if opts.tie_lambda {
        mask[is + 1] = false;
    }
    let tie = tie_lambda_map(opts.tie_lambda, is, data.n());
    let objective = |p: &[f64]| {
        let h = init.with_log_params(&tie(p)).ok()?;
        let r = log_marginal::<B>(data, &h, opts.form).ok()?;
        let mut g = r.gradient;
        tie_lambda_grad(opts.tie_lambda, is, &mut g);
        Some((r.value, g))
    };
    let results = multi_start(&tie(&init.log_params()), &mask, &mask, opts, &objective, None);
    let mut starts = Vec::new();
    for (p, v, iterations, converged) in results {
        starts.push(StartResult {
            hyper: init.with_log_params(&tie(&p))?,
            log_marginal: v,
            iterations,
            converged,
        });
    }
    let best = starts
        .iter()
        .filter(|s| s.log_marginal.is_finite())
        .max_by(|a, b| a.log_marginal.total_cmp(&b.log_marginal))
        .ok_or_else(|| {
            DmeError::Optimisation(
                "no start could be evaluated: the initial hyperparameters give a covariance that is not \
                 positive definite; increase sigma, lambda or epsilon"
                    .into(),
            )
        })?;
    Ok(FitResult { hyper: best.hyper.clone(), log_marginal: best.log_marginal, starts: starts.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    #[test]
    fn sqrt_factor_reproduces_definite_and_singular_matrices() {
        // Positive definite: the Cholesky path; rank one (all ones): the eigendecomposition path.
        let pd = Mat::from_rows(&[vec![2.0, 0.5, 0.1], vec![0.5, 1.0, 0.2], vec![0.1, 0.2, 0.7]]).unwrap();
        let ones = Mat::from_fn(3, 3, |_, _| 1.0);
        assert!(DefaultBackend::cholesky(ones.as_ref()).is_err());
        for k in [pd, ones] {
            let u = sqrt_factor::<DefaultBackend>(&k).unwrap();
            let uut = mm::<DefaultBackend>(&u, Trans::No, &u, Trans::Yes).unwrap();
            for (a, b) in uut.as_slice().iter().zip(k.as_slice()) {
                assert!((a - b).abs() < 1e-12, "{a} vs {b}");
            }
        }
    }
}
