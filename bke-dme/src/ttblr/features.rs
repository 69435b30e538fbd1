//! The TTBLR on explicit features (the expressions (1), (3), (4) of the module docs of `ttblr` and
//! their reverse-mode gradient): [`FeatureData`] → [`weight_posterior`], [`feature_log_marginal`].

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len};
use crate::ops::{add_diag, chol, chol_inverse, frob, mm, mv, symmetrize, trace};
use bke_core::check_positive;
use bke_core::numeric::{LN_2PI, dot};
use bke_linalg::{Backend, Mat, Trans};
use serde::{Deserialize, Serialize};

/// Explicit features of a task-transformed regression problem, one row per point.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureData {
    /// `Φ` (`n × p`): features `φ(x_i)` of the transformation inputs.
    pub phi: Mat,
    /// `Ψ` (`n × q`): features `ψ(y_i)`.
    pub psi: Mat,
    /// `Ψ̃` (`m × q`): features `ψ(ỹ_j)` of the task inputs.
    pub psi_tilde: Mat,
    /// Task targets `z̃` (`m`).
    pub z_tilde: Vec<f64>,
}

impl FeatureData {
    /// Validates shapes and finiteness.
    pub fn new(phi: Mat, psi: Mat, psi_tilde: Mat, z_tilde: Vec<f64>) -> Result<Self, DmeError> {
        check_same_len("Φ (features of x)", phi.nrows(), "Ψ (features of y)", psi.nrows())?;
        check_same_len("Ψ̃ (features of ỹ)", psi_tilde.nrows(), "z̃", z_tilde.len())?;
        check_same_len("Ψ columns", psi.ncols(), "Ψ̃ columns", psi_tilde.ncols())?;
        for (what, m) in [("Φ", &phi), ("Ψ", &psi), ("Ψ̃", &psi_tilde)] {
            if m.nrows() == 0 || m.ncols() == 0 {
                return Err(
                    bke_core::CoreError::Empty { what: format!("feature matrix {what}"), needed: 1 }.into()
                );
            }
            check_finite_vec(what, m.as_slice())?;
        }
        check_finite_vec("z̃", &z_tilde)?;
        Ok(Self { phi, psi, psi_tilde, z_tilde })
    }
}

/// Which TTBLR marginal likelihood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TtblrForm {
    /// seed 004 Thm 5.3 (3): the posterior of `g` integrated out.
    #[default]
    Full,
    /// seed 004 Thm 5.3 (4): `g` at its MAP, `Σ = σ²I`; the predictive mean is the parametric DME.
    Map,
}

impl std::str::FromStr for TtblrForm {
    type Err = DmeError;

    /// Parses "full" or "map".
    fn from_str(s: &str) -> Result<Self, DmeError> {
        crate::error::parse_named(
            s,
            "TTBLR marginal likelihood form",
            &[(Self::Full, "full"), (Self::Map, "map")],
        )
    }
}

/// The noise and prior scales `(σ, β, γ)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scales {
    /// Noise standard deviation `σ`.
    pub sigma: f64,
    /// Prior standard deviation `β` of the weights of `g`.
    pub beta: f64,
    /// Prior standard deviation `γ` of the weights of `f`.
    pub gamma: f64,
}

impl Scales {
    pub(super) fn check(&self) -> Result<(), DmeError> {
        check_positive("sigma", self.sigma)?;
        check_positive("beta", self.beta)?;
        Ok(check_positive("gamma", self.gamma)?)
    }
}

/// The posterior of `w`: mean `w̄` and covariance `C`.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightPosterior {
    /// `w̄ = Cb`.
    pub mean: Vec<f64>,
    /// `C = (DᵀΣ⁻¹D + γ⁻²I)⁻¹` (`p × p`).
    pub covariance: Mat,
}

/// `log p(z̃)` and its gradient: scalars, and adjoints with respect to the feature matrices.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureMarginal {
    /// `log p(z̃)`.
    pub value: f64,
    /// `∂/∂(log σ, log β, log γ)`.
    pub d_log_scales: [f64; 3],
    /// `∂ log p/∂Φ`.
    pub phi_bar: Mat,
    /// `∂ log p/∂Ψ`.
    pub psi_bar: Mat,
    /// `∂ log p/∂Ψ̃`.
    pub psi_tilde_bar: Mat,
}

/// Everything the value, the posterior and the gradient share.
struct Pieces {
    lg: Mat,
    t: Mat,
    w: Mat,
    s: Vec<f64>,
    zz: f64,
    log_det_sigma: f64,
    lp: Mat,
    b: Vec<f64>,
    c: Vec<f64>,
    /// Full form only: factor of `H`, `K1 = H⁻¹Q`, `h = H⁻¹r`.
    full: Option<(Mat, Mat, Vec<f64>)>,
}

fn pieces<B: Backend>(d: &FeatureData, sc: Scales, form: TtblrForm) -> Result<Pieces, DmeError> {
    sc.check()?;
    let m = d.psi_tilde.nrows();
    let s2 = sc.sigma * sc.sigma;
    let tau = s2 / (sc.beta * sc.beta);
    let mut g = B::gram(d.psi.as_ref());
    add_diag(&mut g, tau);
    let lg = chol::<B>(g.clone(), "ΨᵀΨ + (σ²/β²)I", "increase sigma or decrease beta")?;
    let mut t = mm::<B>(&d.psi, Trans::Yes, &d.phi, Trans::No)?;
    B::cholesky_solve_in_place(lg.as_ref(), t.as_mut())?;
    let q = B::gram(d.psi_tilde.as_ref());
    let r = mv::<B>(&d.psi_tilde, Trans::Yes, &d.z_tilde)?;
    let zz0 = dot(&d.z_tilde, &d.z_tilde);
    let (w, s, zz, log_det_sigma, full) = match form {
        TtblrForm::Map => (q, r, zz0, m as f64 * s2.ln(), None),
        TtblrForm::Full => {
            let mut h = g;
            h.as_mut_slice().iter_mut().zip(q.as_slice()).for_each(|(a, b)| *a += b);
            let lh = chol::<B>(h, "ΨᵀΨ + (σ²/β²)I + Ψ̃ᵀΨ̃", "increase sigma")?;
            let mut k1 = q.clone();
            B::cholesky_solve_in_place(lh.as_ref(), k1.as_mut())?;
            let mut w = q.clone();
            B::gemm(-1.0, q.as_ref(), Trans::No, k1.as_ref(), Trans::No, 1.0, w.as_mut())?;
            symmetrize(&mut w);
            let mut hr = r.clone();
            B::cholesky_solve_vec_in_place(lh.as_ref(), &mut hr)?;
            let qh = mv::<B>(&q, Trans::No, &hr)?;
            let s: Vec<f64> = r.iter().zip(&qh).map(|(a, b)| a - b).collect();
            let zz = zz0 - dot(&r, &hr);
            let ld = m as f64 * s2.ln() + B::cholesky_logdet(lh.as_ref()) - B::cholesky_logdet(lg.as_ref());
            (w, s, zz, ld, Some((lh, k1, hr)))
        }
    };
    let wt = mm::<B>(&w, Trans::No, &t, Trans::No)?;
    let mut pw = mm::<B>(&t, Trans::Yes, &wt, Trans::No)?;
    pw.as_mut_slice().iter_mut().for_each(|v| *v /= s2);
    symmetrize(&mut pw);
    add_diag(&mut pw, 1.0 / (sc.gamma * sc.gamma));
    let lp = chol::<B>(pw, "the TTBLR weight precision", "increase gamma or sigma")?;
    let b: Vec<f64> = mv::<B>(&t, Trans::Yes, &s)?.iter().map(|v| v / s2).collect();
    let mut c = b.clone();
    B::cholesky_solve_vec_in_place(lp.as_ref(), &mut c)?;
    Ok(Pieces { lg, t, w, s, zz, log_det_sigma, lp, b, c, full })
}

fn value<B: Backend>(pc: &Pieces, sc: Scales, m: usize, p: usize) -> f64 {
    let s2 = sc.sigma * sc.sigma;
    -0.5 * pc.zz / s2 + 0.5 * dot(&pc.b, &pc.c)
        - 0.5 * pc.log_det_sigma
        - p as f64 * sc.gamma.ln()
        - 0.5 * B::cholesky_logdet(pc.lp.as_ref())
        - 0.5 * m as f64 * LN_2PI
}

/// The posterior of the weights `w` of `f` (seed 004 Thm 5.3 (1), (3); (4) with `form = Map`).
pub fn weight_posterior<B: Backend>(
    d: &FeatureData,
    sc: Scales,
    form: TtblrForm,
) -> Result<WeightPosterior, DmeError> {
    let pc = pieces::<B>(d, sc, form)?;
    Ok(WeightPosterior { mean: pc.c, covariance: chol_inverse::<B>(&pc.lp)? })
}

/// `log p(z̃)` of the TTBLR (no gradient).
pub fn feature_log_marginal_value<B: Backend>(
    d: &FeatureData,
    sc: Scales,
    form: TtblrForm,
) -> Result<f64, DmeError> {
    let pc = pieces::<B>(d, sc, form)?;
    Ok(value::<B>(&pc, sc, d.psi_tilde.nrows(), d.phi.ncols()))
}

/// `log p(z̃)` of the TTBLR with its gradient (see the module docs).
pub fn feature_log_marginal<B: Backend>(
    d: &FeatureData,
    sc: Scales,
    form: TtblrForm,
) -> Result<FeatureMarginal, DmeError> {
    let pc = pieces::<B>(d, sc, form)?;
    let (m, p) = (d.psi_tilde.nrows(), d.phi.ncols());
    let val = value::<B>(&pc, sc, m, p);
    let s2 = sc.sigma * sc.sigma;
    let is2 = 1.0 / s2;
    let tau = s2 / (sc.beta * sc.beta);
    // ∂/∂C⁻¹ = −½(ccᵀ + C).
    let cw = chol_inverse::<B>(&pc.lp)?;
    let gp = Mat::from_fn(p, p, |i, j| -0.5 * (pc.c[i] * pc.c[j] + cw[(i, j)]));
    let wt = mm::<B>(&pc.w, Trans::No, &pc.t, Trans::No)?;
    let twt = mm::<B>(&pc.t, Trans::Yes, &wt, Trans::No)?;
    let ts = mv::<B>(&pc.t, Trans::Yes, &pc.s)?;
    let u_bar = frob(&gp, &twt) + dot(&pc.c, &ts);
    // T̄ = 2σ⁻² WTḠ_P + σ⁻² s cᵀ; W̄ = σ⁻² T Ḡ_P Tᵀ; s̄ = σ⁻² T c.
    let mut t_bar = mm::<B>(&wt, Trans::No, &gp, Trans::No)?;
    let (qd, pd) = (pc.t.nrows(), p);
    for j in 0..pd {
        for i in 0..qd {
            t_bar[(i, j)] = 2.0 * is2 * t_bar[(i, j)] + is2 * pc.s[i] * pc.c[j];
        }
    }
    let tg = mm::<B>(&pc.t, Trans::No, &gp, Trans::No)?;
    let mut w_bar = mm::<B>(&tg, Trans::No, &pc.t, Trans::Yes)?;
    w_bar.as_mut_slice().iter_mut().for_each(|v| *v *= is2);
    let s_bar: Vec<f64> = mv::<B>(&pc.t, Trans::No, &pc.c)?.iter().map(|v| v * is2).collect();
    let zz_bar = -0.5 * is2;
    let ld_bar = -0.5;
    // W, s, zz, log|Σ| back to Q, r, G.
    let (q_bar, r_bar, mut g_bar) = match &pc.full {
        None => (w_bar, s_bar, Mat::zeros(qd, qd)),
        Some((lh, k1, h)) => {
            let wk = mm::<B>(&w_bar, Trans::No, k1, Trans::Yes)?;
            let kw = mm::<B>(k1, Trans::No, &w_bar, Trans::No)?;
            let kwk = mm::<B>(&kw, Trans::No, k1, Trans::Yes)?;
            let ks = mv::<B>(k1, Trans::No, &s_bar)?;
            let hinv = chol_inverse::<B>(lh)?;
            let ginv = chol_inverse::<B>(&pc.lg)?;
            let h_bar = Mat::from_fn(qd, qd, |i, j| {
                kwk[(i, j)] + ks[i] * h[j] + zz_bar * h[i] * h[j] + ld_bar * hinv[(i, j)]
            });
            let q_bar = Mat::from_fn(qd, qd, |i, j| {
                w_bar[(i, j)] - wk[(i, j)] - kw[(i, j)] - s_bar[i] * h[j] + h_bar[(i, j)]
            });
            let r_bar: Vec<f64> = (0..qd).map(|i| s_bar[i] - ks[i] - 2.0 * zz_bar * h[i]).collect();
            let g_bar = Mat::from_fn(qd, qd, |i, j| h_bar[(i, j)] - ld_bar * ginv[(i, j)]);
            (q_bar, r_bar, g_bar)
        }
    };
    // T = G⁻¹F: F̄ = G⁻¹T̄, Ḡ −= G⁻¹T̄Tᵀ.
    let mut f_bar = t_bar;
    B::cholesky_solve_in_place(pc.lg.as_ref(), f_bar.as_mut())?;
    B::gemm(-1.0, f_bar.as_ref(), Trans::No, pc.t.as_ref(), Trans::Yes, 1.0, g_bar.as_mut())?;
    let tau_bar = trace(&g_bar);
    let g_sym = Mat::from_fn(qd, qd, |i, j| g_bar[(i, j)] + g_bar[(j, i)]);
    let q_sym = Mat::from_fn(qd, qd, |i, j| q_bar[(i, j)] + q_bar[(j, i)]);
    let mut psi_bar = mm::<B>(&d.psi, Trans::No, &g_sym, Trans::No)?;
    B::gemm(1.0, d.phi.as_ref(), Trans::No, f_bar.as_ref(), Trans::Yes, 1.0, psi_bar.as_mut())?;
    let phi_bar = mm::<B>(&d.psi, Trans::No, &f_bar, Trans::No)?;
    let mut psi_tilde_bar = mm::<B>(&d.psi_tilde, Trans::No, &q_sym, Trans::No)?;
    for j in 0..qd {
        for i in 0..m {
            psi_tilde_bar[(i, j)] += d.z_tilde[i] * r_bar[j];
        }
    }
    let gi2 = 1.0 / (sc.gamma * sc.gamma);
    let d_log_scales = [
        -2.0 * is2 * u_bar + pc.zz * is2 - m as f64 + 2.0 * tau * tau_bar,
        -2.0 * tau * tau_bar,
        -(p as f64) - 2.0 * gi2 * trace(&gp),
    ];
    Ok(FeatureMarginal { value: val, d_log_scales, phi_bar, psi_bar, psi_tilde_bar })
}
