//! Sparse representation learning with a TTGP (seed §8.2): `n` inducing points `u` stand in for
//! both transformation sets, `x = y = u` (so `X = Y`, one input space), and are learned jointly with
//! the hyperparameters by maximising the alternative marginal likelihood of Thm 5.3 (4),
//! `z̃ ~ N(0, σ²[I − Aᵀ(KAAᵀ + mεI)⁻¹KA]⁻¹)`, `K = k(u, u)`, `A = (ℓ(u, u) + nλI)⁻¹ ℓ(u, ỹ)`, in
//! `O(n³ + n²m)` per evaluation. Predictions use the same alternative form.
//!
//! Gradient with respect to the inducing points: with adjoints `G_K`, `G_L`, `G_L̃` of the marginal
//! likelihood, `∂/∂u_a = Σ_j (G_K + G_Kᵀ)_aj ∂₁k(u_a, u_j) + Σ_j (G_L + G_Lᵀ)_aj ∂₁ℓ(u_a, u_j)
//! + Σ_j (G_L̃)_aj ∂₁ℓ(u_a, ỹ_j)`.

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len};
use crate::ops::{contract_inputs, contract_params};
use crate::ttgp::{
    FitOptions, Grams, MarginalForm, Mode, Reseed, Scalars, Ttgp, TtgpData, TtgpHyper, multi_start,
    start_rng, tie_lambda_grad, tie_lambda_map,
};
use bke_core::{CoreError, Points};
use bke_linalg::Backend;
use rand::seq::index::sample;

/// The alternative log marginal likelihood with inducing points and its gradients.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseLogMarginal {
    /// `log p(z̃)`.
    pub value: f64,
    /// `∂ log p/∂ log θ` in the layout of [`TtgpHyper::log_params`].
    pub gradient: Vec<f64>,
    /// `∂ log p/∂u`, row-major `n × D`.
    pub gradient_inducing: Vec<f64>,
}

fn validate(u: &Points, y_tilde: &Points, z_tilde: &[f64], h: &TtgpHyper) -> Result<(), DmeError> {
    u.check_len("inducing points", 1)?;
    y_tilde.check_len("ỹ", 1)?;
    check_same_len("ỹ", y_tilde.len(), "z̃", z_tilde.len())?;
    u.check_dim("ỹ (must match the inducing points)", y_tilde.dim())?;
    check_finite_vec("z̃", z_tilde)?;
    h.check(u.dim(), u.dim())
}

/// `log p(z̃)` (alternative form, `x = y = u`) with gradients for the hyperparameters and `u`.
pub fn sparse_log_marginal<B: Backend>(
    u: &Points,
    y_tilde: &Points,
    z_tilde: &[f64],
    hyper: &TtgpHyper,
) -> Result<SparseLogMarginal, DmeError> {
    validate(u, y_tilde, z_tilde, hyper)?;
    let g = Grams {
        k: hyper.kernel_x.gram(u)?,
        l: hyper.kernel_y.gram(u)?,
        lt: hyper.kernel_y.cross_gram(u, y_tilde)?,
        ltt: None,
    };
    let s = Scalars { sigma: hyper.sigma, lambda: hyper.lambda, epsilon: hyper.epsilon };
    let e = crate::ttgp::evaluate::<B>(&g, z_tilde, s, MarginalForm::Alternative, Mode::Gradient)?;
    let adj = e.adj.expect("gradient mode");
    let mut grad = contract_params(&hyper.kernel_x, u, u, &adj.gk);
    let mut gy = contract_params(&hyper.kernel_y, u, u, &adj.gl);
    let gyt = contract_params(&hyper.kernel_y, u, y_tilde, &adj.glt);
    gy.iter_mut().zip(&gyt).for_each(|(a, b)| *a += b);
    grad.extend(gy);
    grad.extend([adj.d_log_sigma, adj.d_log_lambda, adj.d_log_epsilon]);
    let mut gu = contract_inputs(&hyper.kernel_x, u, u, &adj.gk, true);
    let gl = contract_inputs(&hyper.kernel_y, u, u, &adj.gl, true);
    let glt = contract_inputs(&hyper.kernel_y, u, y_tilde, &adj.glt, false);
    for ((a, b), c) in gu.iter_mut().zip(&gl).zip(&glt) {
        *a += b + c;
    }
    Ok(SparseLogMarginal { value: e.value, gradient: grad, gradient_inducing: gu })
}

/// `n` distinct points of `ỹ` chosen uniformly at random (seeded): the default initial inducing points.
pub fn initial_inducing(y_tilde: &Points, n: usize, seed: u64) -> Result<Points, DmeError> {
    if n == 0 || n > y_tilde.len() {
        return Err(CoreError::InvalidParameter {
            name: "number of inducing points".into(),
            value: n as f64,
            reason: format!("must be between 1 and the number of data points ({})", y_tilde.len()),
        }
        .into());
    }
    let mut rng = start_rng(seed, 0);
    let mut idx = sample(&mut rng, y_tilde.len(), n).into_vec();
    idx.sort_unstable();
    Ok(y_tilde.select(&idx))
}

/// The result of [`fit_inducing`].
#[derive(Debug, Clone)]
pub struct SparseFit {
    /// Learned hyperparameters.
    pub hyper: TtgpHyper,
    /// Learned inducing points.
    pub inducing: Points,
    /// `log p(z̃)` there.
    pub log_marginal: f64,
    /// Log marginal likelihood reached by each start (start order).
    pub start_values: Vec<f64>,
}

impl SparseFit {
    /// The conditioned TTGP (alternative form) for predictions.
    pub fn model<B: Backend>(&self, y_tilde: &Points, z_tilde: &[f64]) -> Result<Ttgp, DmeError> {
        sparse_model::<B>(&self.inducing, y_tilde, z_tilde, &self.hyper)
    }
}

/// The TTGP with `x = y = u` conditioned on `(ỹ, z̃)`, alternative form.
pub fn sparse_model<B: Backend>(
    u: &Points,
    y_tilde: &Points,
    z_tilde: &[f64],
    hyper: &TtgpHyper,
) -> Result<Ttgp, DmeError> {
    validate(u, y_tilde, z_tilde, hyper)?;
    let data = TtgpData::new(u.clone(), u.clone(), y_tilde.clone(), z_tilde.to_vec())?;
    Ttgp::new::<B>(data, hyper.clone(), MarginalForm::Alternative)
}

/// Options of [`fit_inducing`] beyond [`FitOptions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparseOptions {
    /// Learn the inducing points (else only the hyperparameters). Default true.
    pub learn_inducing: bool,
    /// Use one kernel for `k` and `ℓ` (`k = ℓ`, both on Y since `x = y = u`): the kernel of `k`
    /// is replaced by that of `ℓ` and learned through both. Without it the lengthscale of `k` is
    /// only identified through `K = k(u, u)` and can shrink until `f` vanishes away from `u`.
    /// Default true.
    pub tie_kernels: bool,
}

impl Default for SparseOptions {
    fn default() -> Self {
        Self { learn_inducing: true, tie_kernels: true }
    }
}

/// Learns inducing points jointly with the hyperparameters selected in `opts.learn`, by multi-start
/// L-BFGS on the alternative marginal likelihood. The first start is `(init, init_u)`; random starts
/// perturb the log-hyperparameters and, when the inducing points are learned, draw a fresh random
/// subset of `ỹ` ([`initial_inducing`] with seed `opts.seed + s`). `opts.form` is ignored.
pub fn fit_inducing<B: Backend>(
    y_tilde: &Points,
    z_tilde: &[f64],
    init: &TtgpHyper,
    init_u: &Points,
    sparse: SparseOptions,
    opts: &FitOptions,
) -> Result<SparseFit, DmeError> {
    let mut init = init.clone();
    if sparse.tie_kernels {
        init.kernel_x = init.kernel_y.clone();
    }
    let init = &init;
    validate(init_u, y_tilde, z_tilde, init)?;
    opts.check()?;
    let np = init.n_params();
    let nkx = init.kernel_x.n_params();
    let (nu, d) = (init_u.len(), init_u.dim());
    let mut p0 = tie_lambda_map(opts.tie_lambda, init.kernel_x.n_params() + init.kernel_y.n_params(), nu)(
        &init.log_params(),
    );
    p0.extend_from_slice(init_u.as_slice());
    let mut learn = opts.learn;
    if sparse.tie_kernels {
        // The parameters of k follow those of ℓ: freeze them in the optimiser.
        learn.kernel_x = false;
    }
    let mut mask = learn.mask(init);
    let is = init.kernel_x.n_params() + init.kernel_y.n_params();
    if opts.tie_lambda {
        mask[is + 1] = false;
    }
    let tie_l = tie_lambda_map(opts.tie_lambda, is, nu);
    let mut perturb = mask.clone();
    mask.extend(vec![sparse.learn_inducing; nu * d]);
    perturb.extend(vec![false; nu * d]);
    let tie = |p: &[f64]| {
        let mut p = tie_l(&p[..np]);
        if sparse.tie_kernels {
            let (kx, rest) = p.split_at_mut(nkx);
            kx.copy_from_slice(&rest[..nkx]);
        }
        p
    };
    let objective = |p: &[f64]| {
        let h = init.with_log_params(&tie(p)).ok()?;
        let u = Points::new("inducing points", p[np..].to_vec(), d).ok()?;
        let r = sparse_log_marginal::<B>(&u, y_tilde, z_tilde, &h).ok()?;
        let mut g = r.gradient;
        if sparse.tie_kernels {
            for i in 0..nkx {
                g[nkx + i] += g[i];
            }
        }
        tie_lambda_grad(opts.tie_lambda, is, &mut g);
        g.extend(r.gradient_inducing);
        Some((r.value, g))
    };
    // Random starts also draw fresh inducing points from the data (seeded per start).
    let reseed = |s: usize, p: &mut [f64]| {
        if let Ok(u) = initial_inducing(y_tilde, nu, opts.seed.wrapping_add(s as u64)) {
            p[np..].copy_from_slice(u.as_slice());
        }
    };
    let reseed_ref: &Reseed<'_> = &reseed;
    let results =
        multi_start(&p0, &mask, &perturb, opts, &objective, sparse.learn_inducing.then_some(reseed_ref));
    let start_values: Vec<f64> = results.iter().map(|r| r.1).collect();
    let best =
        results.into_iter().filter(|r| r.1.is_finite()).max_by(|a, b| a.1.total_cmp(&b.1)).ok_or_else(
            || DmeError::Optimisation("no start could be evaluated; increase sigma or epsilon".into()),
        )?;
    Ok(SparseFit {
        hyper: init.with_log_params(&tie(&best.0))?,
        inducing: Points::new("inducing points", best.0[np..].to_vec(), d)?,
        log_marginal: best.1,
        start_values,
    })
}
