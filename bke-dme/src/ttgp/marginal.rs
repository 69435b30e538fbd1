//! Evaluation of the TTGP marginal likelihoods (see the parent module for the model) on Gram
//! matrices: value, predictive quantities and the adjoints `∂ log p/∂(K, L, L̃, Ľ)`.
//!
//! # Cost (flops, `n` transformation pairs, `m` task points)
//! Every product with an inner dimension of `n` or `m` is counted at `2` flops per multiply–add,
//! a triangular solve with `k` right-hand sides of order `p` at `p²k`, a Cholesky at `p³/3`, a
//! product known to be symmetric ([`Backend::gemm_symmetric`]) at half a general one. The `Map`
//! form with gradient (see [`flops`]):
//!
//! | step | flops |
//! |---|---|
//! | `P = L + nλI = R_P R_Pᵀ`, `A = P⁻¹L̃` | `n³/3 + 2n²m` |
//! | `Y = KA`, `C = γ²AᵀY + σ²I` (symmetric product), `C = R_C R_Cᵀ` | `2n²m + nm² + m³/3` |
//! | `X = R_C⁻¹Aᵀ`, `M = XᵀX = AC⁻¹Aᵀ` (symmetric) | `nm² + n²m` |
//! | `YC⁻¹ = (R_C⁻ᵀR_C⁻¹Yᵀ)ᵀ`, `H = γ²((Yα)αᵀ − YC⁻¹) = γ²KAW` | `2nm²` |
//! | `∂L̃ = R = P⁻¹H`, `∂L = −RAᵀ`, `∂K = ½γ²(aaᵀ − M)` | `4n²m` |
//!
//! in all `n³/3 + m³/3 + 9n²m + 4nm²` (`13.7 n³` at `n = m`), of which the value is
//! `n³/3 + m³/3 + 4n²m + nm²` (`5.7 n³`). The `Full` form adds `C⁻¹` (`2m³`, for the `Ľ` adjoint
//! `½β²(ααᵀ − C⁻¹)`, needed entry by entry) and `AC⁻¹ = (R_C⁻ᵀX)ᵀ` (`nm²`); `C` itself stays one
//! symmetric product. The `Alternative` form costs `11n³ + 9n²m`. No other inverse is formed.
//!
//! The gradient costs more than the value because each adjoint is an `n × n` or `n × m` matrix that
//! the kernel derivatives are contracted with entry by entry: `∂K` needs `M` (a solve and a
//! symmetric product), `∂L̃` a solve with `P` of the `n × m` matrix `KAW`, `∂L` one more product.

use super::params::{MarginalForm, TtgpParams};
use crate::DmeError;
use crate::data::TaskData;
use crate::ops::{
    add_diag, chol, chol_inverse, contract_params, contract_params_symmetric, frob, mm, mv, trace,
};
use bke_core::budget::Bytes;
use bke_core::numeric::{LN_2PI, dot};
use bke_linalg::{Backend, Mat, Trans};

/// Gram matrices of a TTGP (`K`, `L`, `L̃` and, for the full form, `Ľ`).
#[derive(Debug, Clone)]
pub(crate) struct Grams {
    pub k: Mat,
    pub l: Mat,
    pub lt: Mat,
    pub ltt: Option<Mat>,
}

impl Grams {
    pub(crate) fn new(data: &TaskData, h: &TtgpParams, form: MarginalForm) -> Result<Self, DmeError> {
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

/// The result of [`evaluate`]: value, and (unless `Mode::Value`) `a = Aα`; with
/// `Mode::Predictive` `M = A C⁻¹ Aᵀ` (else empty), with `Mode::Gradient` the adjoints.
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
    let y = mm::<B>(&g.k, Trans::No, &a, Trans::No)?; // Y = KA
    let amplitudes = Amplitudes { gamma2, beta2: full.then_some(beta2) };
    let rc = factor_covariance::<B>(g, &a, &y, amplitudes, s2)?;
    let mut alpha = z.to_vec();
    B::cholesky_solve_vec_in_place(rc.as_ref(), &mut alpha)?;
    let value = -0.5 * dot(z, &alpha) - 0.5 * B::cholesky_logdet(rc.as_ref()) - 0.5 * mf * LN_2PI;
    if mode == Mode::Value {
        return Ok(Evaluation { value, a: Vec::new(), m: Mat::zeros(0, 0), adj: None });
    }
    let av = mv::<B>(&a, Trans::No, &alpha)?;
    // X = R_C⁻¹ Aᵀ: M = A C⁻¹ Aᵀ = XᵀX without forming C⁻¹.
    let mut x = a.transpose();
    B::solve_lower_in_place(rc.as_ref(), x.as_mut())?;
    let mut m1 = B::gram(x.as_ref());
    if mode == Mode::Predictive {
        return Ok(Evaluation { value, a: av, m: m1, adj: None });
    }
    // H = γ² K A W = γ²((Yα)αᵀ − Y C⁻¹) (W = ααᵀ − C⁻¹), Y C⁻¹ = (R_C⁻ᵀ R_C⁻¹ Yᵀ)ᵀ.
    let ya = mv::<B>(&y, Trans::No, &alpha)?;
    let mut yt = y.transpose();
    drop(y);
    B::cholesky_solve_in_place(rc.as_ref(), yt.as_mut())?;
    let mut h = Mat::from_fn(n, m, |i, j| gamma2 * (ya[i] * alpha[j] - yt[(j, i)]));
    drop(yt);
    B::cholesky_solve_in_place(rp.as_ref(), h.as_mut())?; // R = P⁻¹ H = ∂ log p/∂L̃
    let mut gl = Mat::zeros(n, n);
    B::gemm(-1.0, h.as_ref(), Trans::No, a.as_ref(), Trans::Yes, 0.0, gl.as_mut())?;
    // A W Aᵀ = a aᵀ − M, in place of M.
    for (j, col) in m1.as_mut_slice().chunks_mut(n.max(1)).enumerate() {
        col.iter_mut().zip(&av).for_each(|(v, ai)| *v = ai * av[j] - *v);
    }
    let awa = m1;
    let mut glt = h;
    let mut gltt = None;
    let mut d_log_lambda_beta = 0.0;
    if full {
        let ltt = g.ltt.as_ref().expect("full form needs Ľ");
        B::solve_lower_transpose_in_place(rc.as_ref(), x.as_mut())?; // (A C⁻¹)ᵀ, m × n
        // AW = a αᵀ − A C⁻¹ (n × m).
        let aw = Mat::from_fn(n, m, |i, j| av[i] * alpha[j] - x[(j, i)]);
        let cinv = chol_inverse::<B>(&rc)?;
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
    drop(x);
    let mut gk = awa;
    gk.as_mut_slice().iter_mut().for_each(|v| *v *= 0.5 * gamma2);
    let adj = Adjoints {
        d_log_sigma: dot(z, &alpha) - mf,
        d_log_lambda: nf * s.lambda * trace(&gl) + d_log_lambda_beta,
        d_log_epsilon: -frob(&gk, &g.k),
        gk,
        gl,
        glt,
        gltt,
    };
    Ok(Evaluation { value, a: av, m: Mat::zeros(0, 0), adj: Some(adj) })
}

/// Prior amplitudes `γ²` of `f` and, in the `Full` form, `β²` of `g`.
#[derive(Debug, Clone, Copy)]
struct Amplitudes {
    gamma2: f64,
    beta2: Option<f64>,
}

/// The factor `R_C` of the task covariance `C = γ²AᵀKA + σ²I` (`Map`) or
/// `C = γ²AᵀKA + β²(Ľ − L̃ᵀA) + σ²I` (`Full`, `β²` given), given `A`, `Y = KA` and `σ²`. Since
/// `L̃ᵀA = L̃ᵀP⁻¹L̃` is symmetric, `C − β²Ľ − σ²I = Aᵀ(γ²Y − β²L̃)` is one symmetric product (`nm²`
/// flops).
fn factor_covariance<B: Backend>(
    g: &Grams,
    a: &Mat,
    y: &Mat,
    amp: Amplitudes,
    s2: f64,
) -> Result<Mat, DmeError> {
    let m = a.ncols();
    let gamma2 = amp.gamma2;
    let mut c = Mat::zeros(m, m);
    if let Some(beta2) = amp.beta2 {
        let ltt = g.ltt.as_ref().expect("full form needs Ľ");
        let v = Mat::from_fn(a.nrows(), m, |i, j| gamma2 * y[(i, j)] - beta2 * g.lt[(i, j)]);
        c.as_mut_slice().iter_mut().zip(ltt.as_slice()).for_each(|(cv, l)| *cv = beta2 * l);
        B::gemm_symmetric(1.0, a.as_ref(), Trans::Yes, v.as_ref(), Trans::No, 1.0, c.as_mut())?;
    } else {
        B::gemm_symmetric(gamma2, a.as_ref(), Trans::Yes, y.as_ref(), Trans::No, 0.0, c.as_mut())?;
    }
    add_diag(&mut c, s2);
    chol::<B>(c, "the TTGP marginal covariance", ADVICE_C)
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
    let sm = B::gram(a.transpose().as_ref()); // S = AAᵀ
    let u = sqrt_factor::<B>(&g.k)?;
    let su = mm::<B>(&sm, Trans::No, &u, Trans::No)?;
    let mut bm = Mat::zeros(n, n);
    B::gemm_symmetric(1.0, u.as_ref(), Trans::Yes, su.as_ref(), Trans::No, 0.0, bm.as_mut())?;
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
    B::gemm_symmetric(-1.0 / s2, sq.as_ref(), Trans::No, sm.as_ref(), Trans::No, 1.0 / s2, m1.as_mut())?;
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

/// Flops of one value + gradient evaluation of `form` with `n` transformation pairs and `m` task
/// points: the cubic terms of the module docs' table (Cholesky factors at `p³/3`, triangular solves
/// at `p²k`, symmetric products at half a general product). The `Alternative` form's `K = UUᵀ` is
/// counted as a Cholesky factorisation (not the eigendecomposition used when `K` is singular).
pub fn flops(form: MarginalForm, n: usize, m: usize) -> f64 {
    let (n, m) = (n as f64, m as f64);
    let map = (n.powi(3) + m.powi(3)) / 3.0 + 9.0 * n * n * m + 4.0 * n * m * m;
    match form {
        MarginalForm::Map => map,
        MarginalForm::Full => map + 2.0 * m.powi(3) + n * m * m,
        MarginalForm::Alternative => 11.0 * n.powi(3) + 9.0 * n * n * m,
    }
}

/// A log marginal likelihood and its gradient with respect to the log-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMarginal {
    /// `log p(z̃)`.
    pub value: f64,
    /// `∂ log p(z̃)/∂ log θ` in the layout of [`TtgpParams::log_params`].
    pub gradient: Vec<f64>,
}

pub(super) fn scalars(h: &TtgpParams) -> Scalars {
    Scalars { sigma: h.sigma, lambda: h.lambda, epsilon: h.epsilon }
}

pub(super) fn validate(data: &TaskData, h: &TtgpParams) -> Result<(), DmeError> {
    bke_core::Params::validate(h)?;
    h.check_dims(data.x.dim(), data.y.dim())?;
    check_budget(data.n(), data.m())
}

/// Refuses a TTGP whose dense matrices cannot fit in memory: the `n × n` Gram matrices of `k` and
/// `ℓ`, their factors and adjoints, the `n × m` cross-covariance and its adjoint, the `m × m`
/// task covariance and its factor.
pub(crate) fn check_budget(n: usize, m: usize) -> Result<(), DmeError> {
    let setting = format!("n = {n} transformation pairs (or inducing points) and m = {m} task points");
    let (nn, nm, mm) = (n.saturating_mul(n), n.saturating_mul(m), m.saturating_mul(m));
    let bytes = Bytes::f64s(nn).times(6).plus(Bytes::f64s(nm).times(3)).plus(Bytes::f64s(mm).times(3));
    Ok(bke_core::budget::check(&setting, bytes)?)
}

/// `log p(z̃)` of the form `hyper.form` (no gradient).
pub fn log_marginal_value<B: Backend>(data: &TaskData, hyper: &TtgpParams) -> Result<f64, DmeError> {
    validate(data, hyper)?;
    let form = hyper.form;
    let g = Grams::new(data, hyper, form)?;
    Ok(evaluate::<B>(&g, &data.z_tilde, scalars(hyper), form, Mode::Value)?.value)
}

/// `log p(z̃)` of the form `hyper.form` and its gradient with respect to the log-parameters.
pub fn log_marginal<B: Backend>(data: &TaskData, hyper: &TtgpParams) -> Result<LogMarginal, DmeError> {
    validate(data, hyper)?;
    let form = hyper.form;
    let g = Grams::new(data, hyper, form)?;
    let e = evaluate::<B>(&g, &data.z_tilde, scalars(hyper), form, Mode::Gradient)?;
    let adj = e.adj.expect("gradient mode");
    let mut grad = contract_params_symmetric(&hyper.kernel_x, &data.x, &adj.gk);
    let mut gy = contract_params_symmetric(&hyper.kernel_y, &data.y, &adj.gl);
    let gyt = contract_params(&hyper.kernel_y, &data.y, &data.y_tilde, &adj.glt);
    gy.iter_mut().zip(&gyt).for_each(|(a, b)| *a += b);
    if let Some(gltt) = &adj.gltt {
        let g3 = contract_params_symmetric(&hyper.kernel_y, &data.y_tilde, gltt);
        gy.iter_mut().zip(&g3).for_each(|(a, b)| *a += b);
    }
    grad.extend(gy);
    grad.extend([adj.d_log_sigma, adj.d_log_lambda, adj.d_log_epsilon]);
    Ok(LogMarginal { value: e.value, gradient: grad })
}

/// The dense `m × m` covariance of `z̃` under `hyper.form` (`Alternative` gives the `Map`
/// covariance, which it represents). For tests and small problems: `O(m²)` memory.
pub fn marginal_covariance<B: Backend>(data: &TaskData, hyper: &TtgpParams) -> Result<Mat, DmeError> {
    validate(data, hyper)?;
    let g = Grams::new(data, hyper, MarginalForm::Full)?;
    let (n, m) = (data.n(), data.m());
    let (_, a) = transform::<B>(&g.l, &g.lt, hyper.lambda)?;
    let ka = mm::<B>(&g.k, Trans::No, &a, Trans::No)?;
    let mut c = mm::<B>(&a, Trans::Yes, &ka, Trans::No)?;
    c.as_mut_slice().iter_mut().for_each(|v| *v *= hyper.gamma2(m));
    if hyper.form == MarginalForm::Full {
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
