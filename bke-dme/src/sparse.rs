//! Sparse representation learning with a TTGP (seed 004 §8.2): `n` inducing points `u` stand in
//! for both transformation sets, `x = y = u` (so `X = Y`, one input space), and are learned jointly
//! with the hyperparameters by maximising the alternative marginal likelihood of seed 004 Thm 5.3 (4),
//! `z̃ ~ N(0, σ²[I − Aᵀ(KAAᵀ + mεI)⁻¹KA]⁻¹)`, `K = k(u, u)`, `A = (ℓ(u, u) + nλI)⁻¹ ℓ(u, ỹ)`, in
//! `O(n³ + n²m)` per evaluation. Predictions use the same alternative form.
//!
//! Gradient with respect to the inducing points: with adjoints `G_K`, `G_L`, `G_L̃` of the marginal
//! likelihood, `∂/∂u_a = Σ_j (G_K + G_Kᵀ)_aj ∂₁k(u_a, u_j) + Σ_j (G_L + G_Lᵀ)_aj ∂₁ℓ(u_a, u_j)
//! + Σ_j (G_L̃)_aj ∂₁ℓ(u_a, ỹ_j)`.
//!
//! ```
//! use bke_core::{Dataset, Kernel, Params, Points, Predict};
//! use bke_dme::sparse::SparseTtgpParams;
//! use bke_dme::ttgp::TtgpParams;
//! use bke_linalg::DefaultBackend;
//! let y: Vec<f64> = (0..40).map(|j| -3.0 + 0.15 * j as f64).collect();
//! let z: Vec<f64> = y.iter().map(|v| v.sin()).collect();
//! let data = Dataset::new(Points::from_1d("ỹ", &y)?, z)?;
//! let ttgp = TtgpParams::tied(Kernel::se(1.0)?, Kernel::se(1.0)?, 0.1, 8, 40);
//! let model = SparseTtgpParams { ttgp, inducing: 8, ..Default::default() }.check()?.fit::<DefaultBackend>(&data)?;
//! let p = model.predict::<DefaultBackend>(&Points::from_1d("x*", &[0.5])?)?;
//! assert!((p.mean[0] - 0.5f64.sin()).abs() < 0.1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::DmeError;
use crate::data::TaskData;
use crate::error::{check_finite_vec, check_same_len, invalid};
use crate::learn::{Reseed, best_start, multi_start, start_rng, tie_lambda_grad, tie_lambda_map};
use crate::ops::{contract_inputs, contract_params, contract_params_symmetric};
use crate::ttgp::{Grams, MarginalForm, Mode, Scalars, StartResult, Ttgp, TtgpParams};
use bke_core::{Dataset, Estimator, Params, Points, Progress, Valid};
use bke_linalg::Backend;
use rand::seq::index::sample;

/// The alternative log marginal likelihood with inducing points and its gradients.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseLogMarginal {
    /// `log p(z̃)`.
    pub value: f64,
    /// `∂ log p/∂ log θ` in the layout of [`TtgpParams::log_params`].
    pub gradient: Vec<f64>,
    /// `∂ log p/∂u`, row-major `n × D`.
    pub gradient_inducing: Vec<f64>,
}

fn validate(u: &Points, y_tilde: &Points, z_tilde: &[f64], h: &TtgpParams) -> Result<(), DmeError> {
    u.check_len("inducing points", 1)?;
    y_tilde.check_len("ỹ", 1)?;
    check_same_len("ỹ", y_tilde.len(), "z̃", z_tilde.len())?;
    u.check_dim("ỹ (must match the inducing points)", y_tilde.dim())?;
    check_finite_vec("z̃", z_tilde)?;
    h.validate()?;
    h.check_dims(u.dim(), u.dim())?;
    crate::ttgp::check_budget(u.len(), y_tilde.len())
}

/// `log p(z̃)` (alternative form, `x = y = u`) with gradients for the hyperparameters and `u`.
pub fn sparse_log_marginal<B: Backend>(
    u: &Points,
    y_tilde: &Points,
    z_tilde: &[f64],
    hyper: &TtgpParams,
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
    let mut grad = contract_params_symmetric(&hyper.kernel_x, u, &adj.gk);
    let mut gy = contract_params_symmetric(&hyper.kernel_y, u, &adj.gl);
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

/// `n` distinct points of `ỹ` chosen uniformly at random (seeded): the default initial inducing
/// points.
pub fn initial_inducing(y_tilde: &Points, n: usize, seed: u64) -> Result<Points, DmeError> {
    if n == 0 || n > y_tilde.len() {
        return Err(invalid(
            "number of inducing points",
            n as f64,
            &format!("must be between 1 and the number of data points ({})", y_tilde.len()),
        ));
    }
    let mut rng = start_rng(seed, 0);
    let mut idx = sample(&mut rng, y_tilde.len(), n).into_vec();
    idx.sort_unstable();
    Ok(y_tilde.select(&idx))
}

/// A sparse TTGP: `inducing` points learned (by default) jointly with the hyperparameters that
/// `ttgp.learn` selects, by multi-start L-BFGS on the alternative marginal likelihood (`ttgp.form`
/// is ignored: the alternative form is the one of seed 004 §8.2). Fitted to a [`Dataset`] `(ỹ, z̃)`; the
/// result is a [`Ttgp`] with `x = y = u`.
///
/// The first start is (`ttgp`, `initial`); random starts perturb the log-hyperparameters and,
/// when the inducing points are learned, draw a fresh random subset of `ỹ` ([`initial_inducing`]
/// with seed `ttgp.search.seed + s`).
#[derive(Debug, Clone, PartialEq)]
pub struct SparseTtgpParams {
    /// Hyperparameters (initial values), which of them to learn, and the search settings.
    pub ttgp: TtgpParams,
    /// Number of inducing points `n`. Default 10.
    pub inducing: usize,
    /// Initial inducing points [default: `inducing` rows of `ỹ` drawn with `ttgp.search.seed`].
    pub initial: Option<Points>,
    /// Learn the inducing points. Default true.
    pub learn_inducing: bool,
    /// Use one kernel for `k` and `ℓ` (both on Y since `x = y = u`): `k` is replaced by `ℓ` and
    /// learned through both. Without it the lengthscale of `k` is only identified through
    /// `K = k(u, u)` and can shrink until `f` vanishes away from `u`. Default true.
    pub tie_kernels: bool,
}

impl Default for SparseTtgpParams {
    fn default() -> Self {
        Self {
            ttgp: TtgpParams::default(),
            inducing: 10,
            initial: None,
            learn_inducing: true,
            tie_kernels: true,
        }
    }
}

impl Params for SparseTtgpParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        self.ttgp.validate()?;
        if self.inducing == 0 {
            return Err(invalid("number of inducing points", 0.0, "at least one is needed"));
        }
        if let Some(u) = &self.initial
            && u.len() != self.inducing
        {
            return Err(invalid(
                "initial inducing points",
                u.len() as f64,
                &format!("one per inducing point ({}) is needed", self.inducing),
            ));
        }
        Ok(())
    }
}

impl Estimator for SparseTtgpParams {
    type Data = Dataset;
    type Fitted = Ttgp;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<Ttgp, DmeError> {
        let (y_tilde, z_tilde) = (data.x(), data.y());
        let u0 = match &params.initial {
            Some(u) => u.clone(),
            None => initial_inducing(y_tilde, params.inducing, params.ttgp.search.seed)?,
        };
        let mut init = params.ttgp.clone();
        if params.tie_kernels {
            init.kernel_x = init.kernel_y.clone();
        }
        validate(&u0, y_tilde, z_tilde, &init)?;
        let (h, u, starts) = if init.learn.any() || params.learn_inducing {
            learn_inducing::<B>(y_tilde, z_tilde, &init, &u0, params, progress)?
        } else {
            (init, u0, Vec::new())
        };
        let model = TtgpParams { form: MarginalForm::Alternative, learn: Default::default(), ..h };
        let data = TaskData::new(u.clone(), u, y_tilde.clone(), z_tilde.to_vec())?;
        Ok(model.check()?.fit::<B>(&data)?.with_starts(starts))
    }
}

fn learn_inducing<B: Backend>(
    y_tilde: &Points,
    z_tilde: &[f64],
    init: &TtgpParams,
    init_u: &Points,
    sparse: &SparseTtgpParams,
    progress: &dyn Progress,
) -> Result<(TtgpParams, Points, Vec<StartResult>), DmeError> {
    let np = init.n_params();
    let (nkx, nky) = (init.kernel_x.n_params(), init.kernel_y.n_params());
    let (nu, d) = (init_u.len(), init_u.dim());
    let is = nkx + nky;
    let tie_l = tie_lambda_map(init.tie_lambda, is, nu);
    let mut p0 = tie_l(&init.log_params());
    p0.extend_from_slice(init_u.as_slice());
    let mut learn = init.learn;
    if sparse.tie_kernels {
        // The parameters of k follow those of ℓ: freeze them in the optimiser.
        learn.kernel_x = false;
    }
    let mut mask = learn.mask(nkx, nky);
    if init.tie_lambda {
        mask[is + 1] = false;
    }
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
        tie_lambda_grad(init.tie_lambda, is, &mut g);
        g.extend(r.gradient_inducing);
        Some((r.value, g))
    };
    // Random starts also draw fresh inducing points from the data (seeded per start).
    let seed = init.search.seed;
    let reseed = |s: usize, p: &mut [f64]| {
        if let Ok(u) = initial_inducing(y_tilde, nu, seed.wrapping_add(s as u64)) {
            p[np..].copy_from_slice(u.as_slice());
        }
    };
    let reseed_ref: &Reseed<'_> = &reseed;
    let results = multi_start(
        &p0,
        &mask,
        &perturb,
        &init.search,
        &objective,
        sparse.learn_inducing.then_some(reseed_ref),
        (progress, "learning inducing points"),
    )?;
    let best = best_start(&results, "increase sigma or epsilon")?;
    let starts = results
        .iter()
        .map(|(p, v, iterations, converged)| {
            let params = TtgpParams { form: MarginalForm::Alternative, ..init.with_log_params(&tie(p))? };
            Ok(StartResult { params, log_marginal: *v, iterations: *iterations, converged: *converged })
        })
        .collect::<Result<Vec<_>, DmeError>>()?;
    let u = Points::new("inducing points", best.0[np..].to_vec(), d)?;
    Ok((init.with_log_params(&tie(&best.0))?, u, starts))
}
