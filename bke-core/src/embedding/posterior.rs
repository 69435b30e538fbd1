//! The BKE posterior of the embedding `μ_θ` (seed 000 eq. (7)–(8), §4.2). See the [module docs](super).

use super::params::{BkeParams, full_lengthscales};
use super::prior::EmbeddingPrior;
use crate::budget::Bytes;
use crate::estimator::{Predict, Prediction};
use crate::{CoreError, Points};
use bke_linalg::{Backend, JitterOptions, Mat, Trans};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

/// Queries per block when computing variances (bounds memory at `O(p · QBLOCK)`).
const QBLOCK: usize = 512;

/// The Gaussian posterior of the embedding `μ_θ` given the empirical embedding `μ̂_θ` observed at the
/// conditioning points `w` (seed 000 eq. (7)–(8)). Built by fitting [`BkeParams`] (conditioned at the data) or
/// by [`BkePosterior::conditioned_at`]; [`Predict`] gives the posterior mean and variance.
#[derive(Debug, Clone)]
pub struct BkePosterior {
    at: Points,
    ls: Vec<f64>,
    prior: EmbeddingPrior,
    chol: Mat,
    mu_hat: Vec<f64>,
    beta: Vec<f64>,
    jitter: f64,
}

impl BkePosterior {
    /// Conditions on `μ̂_θ(w) = (1/n) Σ_i k_θ(x_i, w)` at the points `w` (the data themselves in
    /// seed 000 eq. (7), which is what fitting [`BkeParams`] does; landmarks give an `O(p³ + np)` instead of
    /// `O(n³)` posterior). Factorises `A = R_ww + (τ²/n) I` (its eigenvalues are `≥ τ²/n`; if
    /// rounding still makes the Cholesky fail, the smallest jitter that works is added and reported
    /// by [`BkePosterior::jitter`]). Errors on invalid parameters, empty `x` or `w`, or a dimension
    /// mismatch.
    pub fn conditioned_at<B: Backend>(params: &BkeParams, x: &Points, w: &Points) -> Result<Self, CoreError> {
        x.check_len("data", 1)?;
        w.check_len("conditioning points", 1)?;
        x.check_dim("conditioning points", w.dim())?;
        params.validate_for_dim(x.dim())?;
        let (n, p, dim) = (x.len(), w.len(), x.dim());
        let setting = format!("{p} conditioning points (a {p} × {p} matrix, factorised)");
        crate::budget::check(&setting, Bytes::f64s(p).times(p).times(2))?;
        let ls = full_lengthscales(&params.lengthscales, dim);
        let kernel = params.kernel()?;
        let mu_hat: Vec<f64> = (0..p)
            .into_par_iter()
            .map(|j| {
                let wj = w.point(j);
                x.iter().map(|xi| kernel.eval(xi, wj)).sum::<f64>() / n as f64
            })
            .collect();
        let mut a = r_matrix(&params.prior, &ls, w, w);
        let noise = params.tau2 / n as f64;
        for i in 0..p {
            a[(i, i)] += noise;
        }
        let (chol, jitter) = B::cholesky_jittered(a.as_ref(), JitterOptions::default())?;
        let mut beta = mu_hat.clone();
        B::cholesky_solve_vec_in_place(chol.as_ref(), &mut beta)?;
        Ok(Self { at: w.clone(), ls, prior: params.prior, chol, mu_hat, beta, jitter })
    }

    /// Rows up to which the front ends condition at every row by default (`bke embed posterior`).
    pub const EXACT_ROWS: usize = 2000;
    /// Rows the front ends draw from larger data by default ([`BkePosterior::conditioned_at_rows`]).
    pub const DEFAULT_ROWS: usize = 1000;
    /// The default seed of the rows drawn ([`BkePosterior::conditioned_at_rows`]).
    pub const DEFAULT_SEED: u64 = 0;

    /// Conditions on `μ̂_θ` at `m` rows of `x` ([`BkePosterior::sampled_rows`]): [`BkePosterior::conditioned_at`]
    /// with `w = x[rows]`, the exact posterior of `μ` given the empirical embedding at those rows
    /// (seed 000 eq. (7)–(8) with the rows as conditioning points; `μ̂` still averages over all
    /// `n` points). Cost `O(n m d + m³)`, then `O(m d + m²)` per query: `O(n m²)` for `n` queries,
    /// instead of the `O(n³)` of conditioning at every point. With `m ≥ n`, conditions at every
    /// row (seed 000 eq. (7)), the same as [`BkePosterior::conditioned_at`]`(params, x, x)`.
    pub fn conditioned_at_rows<B: Backend>(
        params: &BkeParams,
        x: &Points,
        m: usize,
        seed: u64,
    ) -> Result<Self, CoreError> {
        if m == 0 {
            return Err(CoreError::InvalidParameter {
                name: "number of conditioning rows".into(),
                value: 0.0,
                reason: "at least one row is needed".into(),
            });
        }
        if m >= x.len() {
            return Self::conditioned_at::<B>(params, x, x);
        }
        Self::conditioned_at::<B>(params, x, &x.select(&Self::sampled_rows(x.len(), m, seed)))
    }

    /// The rows of [`BkePosterior::conditioned_at_rows`]: `min(m, n)` of `0..n` drawn uniformly
    /// without replacement (ChaCha8 seeded with `seed`), ascending.
    pub fn sampled_rows(n: usize, m: usize, seed: u64) -> Vec<usize> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut idx = rand::seq::index::sample(&mut rng, n, m.min(n)).into_vec();
        idx.sort_unstable();
        idx
    }

    /// The S-KMSE weights `β = (R_ww + (τ²/n) I)⁻¹ μ̂(w)` (§4.2): `E[μ(x*)] = Σ_j β_j r_θ(x*, w_j)`.
    pub fn weights(&self) -> &[f64] {
        &self.beta
    }

    /// The empirical embedding `μ̂_θ(w)` at the conditioning points.
    pub fn empirical(&self) -> &[f64] {
        &self.mu_hat
    }

    /// The conditioning points `w`.
    pub fn conditioning_points(&self) -> &Points {
        &self.at
    }

    /// Jitter added to the diagonal of `A` (0 unless rounding made the plain Cholesky fail).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    fn check_query(&self, q: &Points) -> Result<(), CoreError> {
        self.at.check_dim("query points", q.dim())
    }

    /// Posterior mean `E[μ(x*)] = r(x*, w)ᵀ β` at each query point (seed 000 eq. (8)).
    pub fn mean(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        self.check_query(q)?;
        Ok((0..q.len())
            .into_par_iter()
            .map(|i| {
                let qi = q.point(i);
                self.at.iter().zip(&self.beta).map(|(wj, b)| b * self.prior.r(&self.ls, qi, wj)).sum()
            })
            .collect())
    }

    fn mean_and_variance<B: Backend>(&self, q: &Points) -> Result<(Vec<f64>, Vec<f64>), CoreError> {
        self.check_query(q)?;
        let mut mean = Vec::with_capacity(q.len());
        let mut var = Vec::with_capacity(q.len());
        let mut start = 0;
        while start < q.len() {
            let end = (start + QBLOCK).min(q.len());
            let idx: Vec<usize> = (start..end).collect();
            let qb = q.select(&idx);
            let mut rw = r_matrix(&self.prior, &self.ls, &self.at, &qb);
            for j in 0..qb.len() {
                mean.push(rw.col(j).iter().zip(&self.beta).map(|(a, b)| a * b).sum());
            }
            B::solve_lower_in_place(self.chol.as_ref(), rw.as_mut())?;
            for j in 0..qb.len() {
                let qj = qb.point(j);
                let prior_var = self.prior.r(&self.ls, qj, qj);
                let red: f64 = rw.col(j).iter().map(|v| v * v).sum();
                var.push((prior_var - red).max(0.0));
            }
            start = end;
        }
        Ok((mean, var))
    }

    /// Joint posterior covariance `R_qq − R_qw A⁻¹ R_wq` of the embedding at the query points.
    pub fn covariance<B: Backend>(&self, q: &Points) -> Result<Mat, CoreError> {
        self.check_query(q)?;
        let (p, nq) = (self.at.len(), q.len());
        let setting = format!("{nq} query points (a {nq} × {nq} joint covariance)");
        crate::budget::check(&setting, Bytes::f64s(nq).times(nq.saturating_add(p)).times(2))?;
        let mut v = r_matrix(&self.prior, &self.ls, &self.at, q);
        B::solve_lower_in_place(self.chol.as_ref(), v.as_mut())?;
        let mut c = r_matrix(&self.prior, &self.ls, q, q);
        B::gemm(-1.0, v.as_ref(), Trans::Yes, v.as_ref(), Trans::No, 1.0, c.as_mut())?;
        // symmetrise (the product is symmetric up to rounding)
        let nq = q.len();
        for j in 0..nq {
            for i in j + 1..nq {
                let s = 0.5 * (c[(i, j)] + c[(j, i)]);
                c[(i, j)] = s;
                c[(j, i)] = s;
            }
        }
        Ok(c)
    }

    /// `draws` joint posterior samples of `(μ(q_1), …, μ(q_k))`, one per column (`k × draws`).
    ///
    /// `μ = mean + S ε` with `S = V diag(√max(λ, 0)) Vᵀ` the principal square root of the posterior
    /// covariance `V diag(λ) Vᵀ` (rank-deficient on fine grids: clipping round-off negatives is exact
    /// for a PSD matrix, unlike jittered Cholesky). `S` is unique, unlike `V diag(√λ)` whose columns'
    /// signs (and bases of repeated eigenvalues) depend on the eigensolver, so the draws are the same
    /// on every backend. `ε` column `j` comes from ChaCha8 seeded with `seed`, stream `j`, so draw `j`
    /// is the same whatever `draws` and however the work is scheduled.
    pub fn sample<B: Backend>(&self, q: &Points, draws: usize, seed: u64) -> Result<Mat, CoreError> {
        let setting = format!("draws = {draws} at {} query points", q.len());
        crate::budget::check(&setting, Bytes::f64s(q.len()).times(draws.saturating_add(4 * q.len())))?;
        let mean = self.mean(q)?;
        let cov = self.covariance::<B>(q)?;
        let k = q.len();
        let eig = B::sym_eigen(cov.as_ref())?;
        let mut scaled = eig.vectors.clone();
        for (j, lam) in eig.values.iter().enumerate() {
            let s = lam.max(0.0).sqrt();
            scaled.col_mut(j).iter_mut().for_each(|v| *v *= s);
        }
        let mut factor = Mat::zeros(k, k);
        B::gemm(1.0, scaled.as_ref(), Trans::No, eig.vectors.as_ref(), Trans::Yes, 0.0, factor.as_mut())?;
        let mut eps = Mat::zeros(k, draws);
        for j in 0..draws {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(j as u64);
            for v in eps.col_mut(j) {
                *v = StandardNormal.sample(&mut rng);
            }
        }
        let mut out = Mat::from_fn(k, draws, |i, _| mean[i]);
        B::gemm(1.0, factor.as_ref(), Trans::No, eps.as_ref(), Trans::No, 1.0, out.as_mut())?;
        Ok(out)
    }
}

impl Predict for BkePosterior {
    type Output = Prediction;
    type Error = CoreError;

    /// Posterior mean `r(x*, w)ᵀ β` and variance `r(x*, x*) − r(x*, w)ᵀ A⁻¹ r(w, x*)` of `μ(x*)`
    /// (seed 000 eq. (8), the variance clamped at 0) at each query point, in blocks of 512 queries.
    fn predict<B: Backend>(&self, q: &Points) -> Result<Prediction, CoreError> {
        let (mean, variance) = self.mean_and_variance::<B>(q)?;
        Ok(Prediction { mean, variance })
    }
}

/// `R[i, j] = r_θ(a_i, b_j)`, parallel over columns.
pub(crate) fn r_matrix(prior: &EmbeddingPrior, ls: &[f64], a: &Points, b: &Points) -> Mat {
    let (na, nb) = (a.len(), b.len());
    let mut r = Mat::zeros(na, nb);
    if na > 0 {
        r.as_mut_slice().par_chunks_mut(na).enumerate().for_each(|(j, col)| {
            let bj = b.point(j);
            for (i, v) in col.iter_mut().enumerate() {
                *v = prior.r(ls, a.point(i), bj);
            }
        });
    }
    r
}
