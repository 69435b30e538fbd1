// tidy: long because its rewrite on the `tests` branch (issue 13's hypothesis part) moves the unit tests out; splitting it here too would conflict with that rewrite.
//! The kernel two-sample test with the maximum mean discrepancy (Gretton et al. 2012; seed 000 §2.2):
//! `H₀: P = Q` against `H₁: P ≠ Q`, from `x_1…x_n ~ P` and `y_1…y_m ~ Q`.
//!
//! Statistics ([`MmdStatistic`]): unbiased U-statistic (default), biased V-statistic, linear-time
//! (formulas in the [module docs](super)).
//!
//! # Permutation null as one matrix product
//! With the pooled Gram matrix `K` (`N = n + m`), a relabelling is an indicator `u ∈ {0,1}^N` with `n`
//! ones (the points called `x`). Everything the statistics need follows from `q = uᵀKu`,
//! `s = uᵀr` (`r = K1`, row sums), `d_x = uᵀ diag K`, `T = 1ᵀK1` and `D = tr K`:
//! `Σ_xx = q`, `Σ_yy = T − 2s + q`, `Σ_xy = s − q`, so
//! - biased: `q/n² + (T − 2s + q)/m² − 2(s − q)/(nm)`,
//! - unbiased: `(q − d_x)/(n(n−1)) + (T − 2s + q − D + d_x)/(m(m−1)) − 2(s − q)/(nm)`.
//!
//! `B` relabellings are `B` columns of `U`; `q_b = u_bᵀ(KU)_b` needs one GEMM `K·U` through the
//! [`Backend`] (`2N²B` flops), after which each draw costs `O(N)`. The Gram matrix is computed once and
//! nothing is allocated per draw. [`MmdPermutation::null_naive`] recomputes the three block sums per
//! draw from the definitions instead (same draws, same numbers): it is the oracle and the baseline of
//! `cargo xtask bench tests`.
//!
//! # Gamma null by moment matching
//! Under relabelling the biased statistic is `wᵀK̃w` with `w = ±1/n, 1/m` weights and
//! `K̃ = HKH` the pooled-centred Gram matrix. Its exact permutation mean is
//! `E = c tr K̃`, `c = N/(nm(N−1))`, and treating `w` as Gaussian with the same covariance `cH` gives
//! `Var = 2c² ‖K̃‖²_F`; for `n = m` these are Gretton et al. (2012, §5)'s moments. The gamma with this
//! mean and variance (shape `E²/Var`, scale `Var/E`) is the null of the biased statistic. The unbiased
//! statistic has null mean 0 and differs from the biased one by `O(n^{-3/2})` under `H₀` beyond that
//! shift, so its p-value is `P(G ≥ T_u + E)`.
//!
//! # Wild bootstrap (`n = m`)
//! With pairs `z_i = (x_i, y_i)` and `h_ij = k(x_i,x_j) + k(y_i,y_j) − k(x_i,y_j) − k(x_j,y_i)`, the
//! bootstrap statistic is `εᵀHε/n²` (biased) or `(εᵀHε − tr H)/(n(n−1))` (unbiased) for Rademacher
//! signs `ε`, batched as one GEMM `H·E`. With the wild bootstrap the unbiased statistic is the
//! U-statistic over pairs, Gretton et al. (2012) eq. (4), which omits the `k(x_i, y_i)` terms; that is
//! the statistic reported.
//!
//! # Linear time
//! `(1/⌊n/2⌋) Σ_i h(z_{2i−1}, z_{2i})` never forms a Gram matrix. Its nulls: permutation (relabel,
//! re-pair, `O(N)` kernel evaluations per draw), wild bootstrap `Σ ε_i h_i/⌊n/2⌋`, or the asymptotic
//! normal `N(0, s_h²/⌊n/2⌋)` ([`NullDistribution::Normal`]).

use super::{NullDistribution, TestOutcome, batch_size, check_alpha, check_draws, choice, draw_rng, invalid};
use crate::special::{gamma_sf, normal_cdf};
use crate::{CoreError, Kernel, Points};
use bke_linalg::{Backend, Mat, Trans};
use rand::Rng;
use rayon::prelude::*;

/// Which MMD² estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MmdStatistic {
    /// The unbiased U-statistic (Gretton et al. 2012, eq. 3). The default.
    #[default]
    Unbiased,
    /// The biased V-statistic (eq. 5).
    Biased,
    /// The linear-time statistic (Lemma 14); needs `n = m`.
    Linear,
}

impl MmdStatistic {
    /// Name used in outputs and on the command line: "unbiased", "biased", "linear".
    pub fn name(self) -> &'static str {
        match self {
            MmdStatistic::Unbiased => "unbiased",
            MmdStatistic::Biased => "biased",
            MmdStatistic::Linear => "linear",
        }
    }

    /// Parses a name as written by [`MmdStatistic::name`].
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        match name {
            "unbiased" => Ok(Self::Unbiased),
            "biased" => Ok(Self::Biased),
            "linear" => Ok(Self::Linear),
            other => Err(choice(&format!("MMD statistic '{other}'"), "use unbiased, biased or linear")),
        }
    }
}

/// Parameters of the MMD two-sample test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MmdParams {
    /// The estimator. Default [`MmdStatistic::Unbiased`].
    pub statistic: MmdStatistic,
    /// The null distribution. Default [`NullDistribution::Permutation`].
    pub null: NullDistribution,
    /// Number of permutations / bootstrap draws `B`. Default 1000.
    pub permutations: usize,
    /// Test level α ∈ (0, 1). Default 0.05.
    pub alpha: f64,
    /// Seed of the resampling streams. Default 0.
    pub seed: u64,
}

impl Default for MmdParams {
    fn default() -> Self {
        Self {
            statistic: MmdStatistic::Unbiased,
            null: NullDistribution::Permutation,
            permutations: 1000,
            alpha: 0.05,
            seed: 0,
        }
    }
}

impl MmdParams {
    /// Validates α, `B` (for resampling nulls) and the statistic/null combination.
    pub fn check(&self) -> Result<(), CoreError> {
        check_alpha(self.alpha)?;
        if self.null.is_resampling() {
            check_draws(self.permutations)?;
        }
        match (self.statistic, self.null) {
            (MmdStatistic::Linear, NullDistribution::Gamma) => Err(choice(
                "null distribution 'gamma' for the linear-time statistic",
                "the linear-time statistic is asymptotically normal: use --null normal, permutation or wild",
            )),
            (MmdStatistic::Unbiased | MmdStatistic::Biased, NullDistribution::Normal) => Err(choice(
                "null distribution 'normal' for a quadratic-time statistic",
                "the normal null is for the linear-time statistic; use permutation, gamma or wild",
            )),
            _ => Ok(()),
        }
    }
}

/// Errors unless `x` and `y` can be compared: both with at least 2 points, the same dimension, and
/// `n = m` where `statistic`/`null` pair the samples.
pub fn check_samples(x: &Points, y: &Points, params: &MmdParams) -> Result<(), CoreError> {
    x.check_len("sample x", 2)?;
    y.check_len("sample y", 2)?;
    x.check_dim("sample y", y.dim())?;
    let paired = params.statistic == MmdStatistic::Linear || params.null == NullDistribution::WildBootstrap;
    if paired && x.len() != y.len() {
        return Err(CoreError::DimensionMismatch {
            what: format!(
                "sample y size (the {} pairs x_i with y_i)",
                if params.statistic == MmdStatistic::Linear {
                    "linear-time statistic"
                } else {
                    "wild bootstrap"
                }
            ),
            expected: x.len(),
            found: y.len(),
        });
    }
    Ok(())
}

fn check_gram(k: &Mat, n: usize) -> Result<usize, CoreError> {
    if k.nrows() != k.ncols() {
        return Err(CoreError::DimensionMismatch {
            what: "Gram matrix columns".into(),
            expected: k.nrows(),
            found: k.ncols(),
        });
    }
    let big_n = k.nrows();
    if n < 2 || big_n < n + 2 {
        return Err(CoreError::Empty {
            what: format!("MMD with n = {n} of N = {big_n} pooled points"),
            needed: 2,
        });
    }
    if let Some((i, j)) = k.as_ref().find_non_finite() {
        return Err(CoreError::NonFinite { what: "Gram matrix".into(), row: i, col: j, value: k[(i, j)] });
    }
    Ok(big_n)
}

/// MMD² from the pooled Gram matrix `K` of `(x_1…x_n, y_1…y_m)` (first `n` rows are `x`), by the
/// block-sum definitions. For [`MmdStatistic::Linear`] it uses the pairs of the linear statistic
/// (needs `n = m`).
pub fn mmd_from_gram(k: &Mat, n: usize, statistic: MmdStatistic) -> Result<f64, CoreError> {
    let big_n = check_gram(k, n)?;
    let m = big_n - n;
    if statistic == MmdStatistic::Linear {
        if n != m {
            return Err(CoreError::DimensionMismatch {
                what: "sample y size (linear-time statistic)".into(),
                expected: n,
                found: m,
            });
        }
        let pairs = n / 2;
        let s: f64 = (0..pairs)
            .map(|i| {
                let (a, b) = (2 * i, 2 * i + 1);
                k[(a, b)] + k[(n + a, n + b)] - k[(a, n + b)] - k[(b, n + a)]
            })
            .sum();
        return Ok(s / pairs as f64);
    }
    let member: Vec<bool> = (0..big_n).map(|i| i < n).collect();
    Ok(block_sums_statistic(k, &member, n, statistic))
}

/// The statistic from the block sums of `K` for the labelling `member` (true = x), straight from the
/// definitions (diagonal excluded for the unbiased statistic).
fn block_sums_statistic(k: &Mat, member: &[bool], n: usize, statistic: MmdStatistic) -> f64 {
    let big_n = member.len();
    let m = big_n - n;
    let (mut sxx, mut syy, mut sxy, mut dxx, mut dyy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for j in 0..big_n {
        let col = k.col(j);
        let (mut cx, mut cy) = (0.0, 0.0);
        for i in 0..big_n {
            if member[i] {
                cx += col[i];
            } else {
                cy += col[i];
            }
        }
        if member[j] {
            sxx += cx;
            sxy += cy;
            dxx += col[j];
        } else {
            syy += cy;
            dyy += col[j];
        }
    }
    let (nf, mf) = (n as f64, m as f64);
    match statistic {
        MmdStatistic::Biased => sxx / (nf * nf) + syy / (mf * mf) - 2.0 * sxy / (nf * mf),
        _ => (sxx - dxx) / (nf * (nf - 1.0)) + (syy - dyy) / (mf * (mf - 1.0)) - 2.0 * sxy / (nf * mf),
    }
}

/// MMD² between `x` and `y` under `kernel`. Quadratic statistics build the pooled Gram matrix; the
/// linear-time statistic evaluates `2n` kernel values.
pub fn mmd_statistic(
    x: &Points,
    y: &Points,
    kernel: &Kernel,
    statistic: MmdStatistic,
) -> Result<f64, CoreError> {
    let params = MmdParams { statistic, ..MmdParams::default() };
    check_samples(x, y, &params)?;
    kernel.check_dim(x.dim())?;
    if statistic == MmdStatistic::Linear {
        let h = linear_h(kernel, x, y);
        return Ok(h.iter().sum::<f64>() / h.len() as f64);
    }
    let k = kernel.gram(&x.concat(y)?)?;
    mmd_from_gram(&k, x.len(), statistic)
}

/// Runs the MMD two-sample test of `x` against `y` with `kernel`.
pub fn mmd_test<B: Backend>(
    x: &Points,
    y: &Points,
    kernel: &Kernel,
    params: &MmdParams,
) -> Result<TestOutcome, CoreError> {
    params.check()?;
    check_samples(x, y, params)?;
    kernel.check_dim(x.dim())?;
    if params.statistic == MmdStatistic::Linear {
        return linear_test(x, y, kernel, params);
    }
    let k = kernel.gram(&x.concat(y)?)?;
    mmd_test_gram::<B>(&k, x.len(), params)
}

/// The MMD test from a precomputed pooled Gram matrix (first `n` points are `x`), for the quadratic
/// statistics. Lets experiments that test many labellings of one pooled sample build `K` once.
pub fn mmd_test_gram<B: Backend>(k: &Mat, n: usize, params: &MmdParams) -> Result<TestOutcome, CoreError> {
    params.check()?;
    let big_n = check_gram(k, n)?;
    if params.statistic == MmdStatistic::Linear {
        return Err(choice(
            "statistic 'linear' in mmd_test_gram",
            "the linear-time test takes the samples: use mmd_test",
        ));
    }
    let (alpha, stat) = (params.alpha, params.statistic);
    match params.null {
        NullDistribution::Permutation => {
            let observed = mmd_from_gram(k, n, stat)?;
            let perm = MmdPermutation::new(k, n)?;
            let null = perm.null::<B>(stat, params.permutations, params.seed)?;
            Ok(TestOutcome::from_samples(observed, null, alpha, params.null))
        }
        NullDistribution::WildBootstrap => {
            if 2 * n != big_n {
                return Err(CoreError::DimensionMismatch {
                    what: "sample y size (wild bootstrap)".into(),
                    expected: n,
                    found: big_n - n,
                });
            }
            let (observed, null) = wild_null::<B>(k, n, stat, params.permutations, params.seed)?;
            Ok(TestOutcome::from_samples(observed, null, alpha, params.null))
        }
        NullDistribution::Gamma => {
            let observed = mmd_from_gram(k, n, stat)?;
            let (mean, var) = gamma_moments(k, n);
            if !(mean > 0.0 && var > 0.0) {
                return Err(invalid(
                    "null variance of the MMD statistic",
                    var,
                    "the pooled Gram matrix is (numerically) constant, so the gamma fit is undefined: the lengthscale is far too large or too small for the data; use the permutation null or another lengthscale",
                ));
            }
            let (shape, scale) = (mean * mean / var, var / mean);
            let shifted = if stat == MmdStatistic::Biased { observed } else { observed + mean };
            let p = gamma_sf(shifted, shape, scale);
            let null_mean = if stat == MmdStatistic::Biased { mean } else { 0.0 };
            Ok(TestOutcome::from_p(observed, p, alpha, params.null, null_mean, var.sqrt()))
        }
        NullDistribution::Normal => unreachable!("rejected by MmdParams::check"),
    }
}

/// Mean `c tr K̃` and variance `2c²‖K̃‖²_F` of the biased statistic under relabelling (module docs).
fn gamma_moments(k: &Mat, n: usize) -> (f64, f64) {
    let big_n = k.nrows();
    let m = big_n - n;
    let nf = big_n as f64;
    let r: Vec<f64> = (0..big_n).map(|j| k.col(j).iter().sum::<f64>()).collect();
    let total: f64 = r.iter().sum();
    let trace: f64 = (0..big_n).map(|i| k[(i, i)]).sum();
    let tr_c = trace - total / nf;
    let g = total / (nf * nf);
    let fro2: f64 = (0..big_n)
        .into_par_iter()
        .map(|j| {
            let col = k.col(j);
            let cj = r[j] / nf;
            col.iter().zip(&r).map(|(v, ri)| (v - ri / nf - cj + g).powi(2)).sum::<f64>()
        })
        .sum();
    let c = nf / (n as f64 * m as f64 * (nf - 1.0));
    (c * tr_c, 2.0 * c * c * fro2)
}

/// Permutation null of the quadratic MMD statistics for one pooled Gram matrix: the precomputed
/// row sums, diagonal, total and trace of `K` (see the module docs).
#[derive(Debug)]
pub struct MmdPermutation<'a> {
    k: &'a Mat,
    n: usize,
    rowsum: Vec<f64>,
    diag: Vec<f64>,
    total: f64,
    trace: f64,
}

impl<'a> MmdPermutation<'a> {
    /// Precomputes the relabelling-invariant quantities of `K` (first `n` points are `x`).
    pub fn new(k: &'a Mat, n: usize) -> Result<Self, CoreError> {
        let big_n = check_gram(k, n)?;
        let rowsum: Vec<f64> = (0..big_n).map(|j| k.col(j).iter().sum::<f64>()).collect();
        let diag: Vec<f64> = (0..big_n).map(|i| k[(i, i)]).collect();
        let total = rowsum.iter().sum();
        let trace = diag.iter().sum();
        Ok(Self { k, n, rowsum, diag, total, trace })
    }

    /// The statistic for a labelling with `q = uᵀKu`, `s = uᵀr`, `d_x = uᵀ diag K`.
    #[inline]
    fn statistic(&self, q: f64, s: f64, dx: f64, statistic: MmdStatistic) -> f64 {
        let (nf, mf) = (self.n as f64, (self.k.nrows() - self.n) as f64);
        let syy = self.total - 2.0 * s + q;
        let sxy = s - q;
        match statistic {
            MmdStatistic::Biased => q / (nf * nf) + syy / (mf * mf) - 2.0 * sxy / (nf * mf),
            _ => {
                (q - dx) / (nf * (nf - 1.0)) + (syy - self.trace + dx) / (mf * (mf - 1.0))
                    - 2.0 * sxy / (nf * mf)
            }
        }
    }

    /// `draws` null statistics, draw `b` from stream `(seed, b)`, by one GEMM `K·U` per batch of
    /// draws (the fast path). Identical for any rayon thread count.
    pub fn null<B: Backend>(
        &self,
        statistic: MmdStatistic,
        draws: usize,
        seed: u64,
    ) -> Result<Vec<f64>, CoreError> {
        check_draws(draws)?;
        if statistic == MmdStatistic::Linear {
            return Err(choice(
                "statistic 'linear' in MmdPermutation",
                "use mmd_test for the linear-time statistic",
            ));
        }
        let big_n = self.k.nrows();
        let bs = batch_size(big_n, draws);
        let mut u = Mat::zeros(big_n, bs);
        let mut ku = Mat::zeros(big_n, bs);
        let mut sd = vec![(0.0, 0.0); bs];
        let mut out = Vec::with_capacity(draws);
        let mut start = 0;
        while start < draws {
            let len = bs.min(draws - start);
            let ucols = &mut u.as_mut_slice()[..big_n * len];
            ucols.par_chunks_mut(big_n).zip(sd[..len].par_iter_mut()).enumerate().for_each_init(
                || vec![0usize; big_n],
                |idx, (c, (col, sdx))| {
                    let chosen = draw_subset(&mut draw_rng(seed, start + c), idx, self.n);
                    col.fill(0.0);
                    let (mut s, mut dx) = (0.0, 0.0);
                    for &i in chosen {
                        col[i] = 1.0;
                        s += self.rowsum[i];
                        dx += self.diag[i];
                    }
                    *sdx = (s, dx);
                },
            );
            let uview = bke_linalg::MatRef::from_slice(&u.as_slice()[..big_n * len], big_n, len, big_n)?;
            let kuview =
                bke_linalg::MatMut::from_slice(&mut ku.as_mut_slice()[..big_n * len], big_n, len, big_n)?;
            B::gemm(1.0, self.k.as_ref(), Trans::No, uview, Trans::No, 0.0, kuview)?;
            let batch: Vec<f64> = (0..len)
                .into_par_iter()
                .map(|c| {
                    let q: f64 = u.col(c).iter().zip(ku.col(c)).map(|(a, b)| a * b).sum();
                    let (s, dx) = sd[c];
                    self.statistic(q, s, dx, statistic)
                })
                .collect();
            out.extend_from_slice(&batch);
            start += len;
        }
        Ok(out)
    }

    /// The same null statistics (same draws) recomputed per draw from the block-sum definitions,
    /// `O(N²)` per draw with the Gram matrix reused: the oracle of [`MmdPermutation::null`] and the
    /// baseline of the benchmark.
    pub fn null_naive(
        &self,
        statistic: MmdStatistic,
        draws: usize,
        seed: u64,
    ) -> Result<Vec<f64>, CoreError> {
        check_draws(draws)?;
        let big_n = self.k.nrows();
        Ok((0..draws)
            .into_par_iter()
            .map_init(
                || (vec![0usize; big_n], vec![false; big_n]),
                |(idx, member), b| {
                    let chosen = draw_subset(&mut draw_rng(seed, b), idx, self.n);
                    member.fill(false);
                    for &i in chosen {
                        member[i] = true;
                    }
                    block_sums_statistic(self.k, member, self.n, statistic)
                },
            )
            .collect())
    }
}

/// A uniformly random `n`-subset of `0..idx.len()` by a partial Fisher–Yates shuffle of the identity
/// (reset first, so the result depends only on the stream).
#[inline]
pub(crate) fn draw_subset<'s, R: Rng>(rng: &mut R, idx: &'s mut [usize], n: usize) -> &'s [usize] {
    for (i, v) in idx.iter_mut().enumerate() {
        *v = i;
    }
    let len = idx.len();
    for i in 0..n.min(len.saturating_sub(1)) {
        let j = rng.random_range(i..len);
        idx.swap(i, j);
    }
    &idx[..n]
}

/// A uniformly random permutation of `0..idx.len()` (Fisher–Yates from the identity).
#[inline]
pub(crate) fn draw_permutation<R: Rng>(rng: &mut R, idx: &mut [usize]) {
    let len = idx.len();
    draw_subset(rng, idx, len);
}

/// Wild-bootstrap observed statistic and null sample (module docs), `n = m`.
fn wild_null<B: Backend>(
    k: &Mat,
    n: usize,
    statistic: MmdStatistic,
    draws: usize,
    seed: u64,
) -> Result<(f64, Vec<f64>), CoreError> {
    let h = Mat::from_fn(n, n, |i, j| k[(i, j)] + k[(n + i, n + j)] - k[(i, n + j)] - k[(j, n + i)]);
    let tr: f64 = (0..n).map(|i| h[(i, i)]).sum();
    let all: f64 = h.as_slice().iter().sum();
    let nf = n as f64;
    let finish = |quad: f64| match statistic {
        MmdStatistic::Biased => quad / (nf * nf),
        _ => (quad - tr) / (nf * (nf - 1.0)),
    };
    let observed = finish(all);
    let bs = batch_size(n, draws);
    let mut e = Mat::zeros(n, bs);
    let mut he = Mat::zeros(n, bs);
    let mut out = Vec::with_capacity(draws);
    let mut start = 0;
    while start < draws {
        let len = bs.min(draws - start);
        e.as_mut_slice()[..n * len].par_chunks_mut(n).enumerate().for_each(|(c, col)| {
            let mut rng = draw_rng(seed, start + c);
            for v in col.iter_mut() {
                *v = if rng.random::<bool>() { 1.0 } else { -1.0 };
            }
        });
        let ev = bke_linalg::MatRef::from_slice(&e.as_slice()[..n * len], n, len, n)?;
        let hv = bke_linalg::MatMut::from_slice(&mut he.as_mut_slice()[..n * len], n, len, n)?;
        B::gemm(1.0, h.as_ref(), Trans::No, ev, Trans::No, 0.0, hv)?;
        let batch: Vec<f64> = (0..len)
            .into_par_iter()
            .map(|c| finish(e.col(c).iter().zip(he.col(c)).map(|(a, b)| a * b).sum()))
            .collect();
        out.extend_from_slice(&batch);
        start += len;
    }
    Ok((observed, out))
}

/// `h_i = h(z_{2i−1}, z_{2i})` of the linear-time statistic, `i = 1…⌊n/2⌋`, for `n = m`.
fn linear_h(kernel: &Kernel, x: &Points, y: &Points) -> Vec<f64> {
    (0..x.len() / 2)
        .map(|i| {
            let (a, b) = (2 * i, 2 * i + 1);
            kernel.eval(x.point(a), x.point(b)) + kernel.eval(y.point(a), y.point(b))
                - kernel.eval(x.point(a), y.point(b))
                - kernel.eval(x.point(b), y.point(a))
        })
        .collect()
}

fn linear_test(
    x: &Points,
    y: &Points,
    kernel: &Kernel,
    params: &MmdParams,
) -> Result<TestOutcome, CoreError> {
    let h = linear_h(kernel, x, y);
    let pairs = h.len() as f64;
    let observed = h.iter().sum::<f64>() / pairs;
    let alpha = params.alpha;
    match params.null {
        NullDistribution::Normal => {
            if h.len() < 2 {
                return Err(CoreError::Empty {
                    what: "pairs of the linear-time statistic".into(),
                    needed: 2,
                });
            }
            let var = h.iter().map(|v| (v - observed).powi(2)).sum::<f64>() / (pairs - 1.0);
            let sd = (var / pairs).sqrt();
            if !(sd > 0.0) {
                return Err(invalid(
                    "standard deviation of the linear-time statistic",
                    sd,
                    "all pair terms are equal; use another lengthscale or the permutation null",
                ));
            }
            Ok(TestOutcome::from_p(observed, normal_cdf(-observed / sd), alpha, params.null, 0.0, sd))
        }
        NullDistribution::WildBootstrap => {
            let null = (0..params.permutations)
                .into_par_iter()
                .map(|b| {
                    let mut rng = draw_rng(params.seed, b);
                    h.iter().map(|v| if rng.random::<bool>() { *v } else { -*v }).sum::<f64>() / pairs
                })
                .collect();
            Ok(TestOutcome::from_samples(observed, null, alpha, params.null))
        }
        NullDistribution::Permutation => {
            let pooled = x.concat(y)?;
            let n = x.len();
            let null = (0..params.permutations)
                .into_par_iter()
                .map_init(
                    || vec![0usize; 2 * n],
                    |idx, b| {
                        draw_permutation(&mut draw_rng(params.seed, b), idx);
                        let p = |i: usize| pooled.point(idx[i]);
                        (0..n / 2)
                            .map(|i| {
                                let (a, c) = (2 * i, 2 * i + 1);
                                kernel.eval(p(a), p(c)) + kernel.eval(p(n + a), p(n + c))
                                    - kernel.eval(p(a), p(n + c))
                                    - kernel.eval(p(c), p(n + a))
                            })
                            .sum::<f64>()
                            / pairs
                    },
                )
                .collect();
            Ok(TestOutcome::from_samples(observed, null, alpha, params.null))
        }
        NullDistribution::Gamma => unreachable!("rejected by MmdParams::check"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn gaussian_points(seed: u64, n: usize, dim: usize, shift: f64, scale: f64) -> Points {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let data = (0..n * dim)
            .map(|_| {
                // Box–Muller
                let u1: f64 = rng.random::<f64>().max(1e-300);
                let u2: f64 = rng.random();
                shift + scale * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect();
        Points::new("sample", data, dim).unwrap()
    }

    /// Direct formulas from the definitions over point pairs (no Gram matrix, no algebra).
    fn naive(x: &Points, y: &Points, k: &Kernel, biased: bool) -> f64 {
        let (n, m) = (x.len() as f64, y.len() as f64);
        let mut sxx = 0.0;
        for i in 0..x.len() {
            for j in 0..x.len() {
                if biased || i != j {
                    sxx += k.eval(x.point(i), x.point(j));
                }
            }
        }
        let mut syy = 0.0;
        for i in 0..y.len() {
            for j in 0..y.len() {
                if biased || i != j {
                    syy += k.eval(y.point(i), y.point(j));
                }
            }
        }
        let mut sxy = 0.0;
        for i in 0..x.len() {
            for j in 0..y.len() {
                sxy += k.eval(x.point(i), y.point(j));
            }
        }
        if biased {
            sxx / (n * n) + syy / (m * m) - 2.0 * sxy / (n * m)
        } else {
            sxx / (n * (n - 1.0)) + syy / (m * (m - 1.0)) - 2.0 * sxy / (n * m)
        }
    }

    #[test]
    fn statistics_match_naive_formulas() {
        let x = gaussian_points(1, 13, 2, 0.0, 1.0);
        let y = gaussian_points(2, 9, 2, 0.5, 1.3);
        let k = Kernel::se(0.8).unwrap();
        let u = mmd_statistic(&x, &y, &k, MmdStatistic::Unbiased).unwrap();
        let b = mmd_statistic(&x, &y, &k, MmdStatistic::Biased).unwrap();
        assert!((u - naive(&x, &y, &k, false)).abs() < 1e-13);
        assert!((b - naive(&x, &y, &k, true)).abs() < 1e-13);
        // linear-time: explicit pairs
        let y2 = gaussian_points(3, 13, 2, 0.5, 1.0);
        let lin = mmd_statistic(&x, &y2, &k, MmdStatistic::Linear).unwrap();
        let mut s = 0.0;
        for i in 0..6 {
            let (a, c) = (2 * i, 2 * i + 1);
            s += k.eval(x.point(a), x.point(c)) + k.eval(y2.point(a), y2.point(c))
                - k.eval(x.point(a), y2.point(c))
                - k.eval(x.point(c), y2.point(a));
        }
        assert!((lin - s / 6.0).abs() < 1e-14);
        let gram = k.gram(&x.concat(&y2).unwrap()).unwrap();
        assert!((mmd_from_gram(&gram, 13, MmdStatistic::Linear).unwrap() - lin).abs() < 1e-14);
    }

    /// The GEMM-batched permutation null equals the per-draw recomputation from the definitions, for
    /// both quadratic statistics and across batch boundaries (the backends agree: bke-bench's
    /// backend suite).
    #[test]
    fn batched_permutation_null_matches_naive() {
        let x = gaussian_points(4, 31, 3, 0.0, 1.0);
        let y = gaussian_points(5, 20, 3, 0.2, 1.0);
        let k = Kernel::se(1.1).unwrap();
        let gram = k.gram(&x.concat(&y).unwrap()).unwrap();
        let perm = MmdPermutation::new(&gram, 31).unwrap();
        for stat in [MmdStatistic::Unbiased, MmdStatistic::Biased] {
            let fast = perm.null::<DefaultBackend>(stat, 70, 9).unwrap();
            let slow = perm.null_naive(stat, 70, 9).unwrap();
            for (a, b) in fast.iter().zip(&slow) {
                assert!((a - b).abs() < 1e-12, "{stat:?}: {a} vs {b}");
            }
            // the draws really differ from each other
            assert!(fast.iter().any(|v| (v - fast[0]).abs() > 1e-6));
        }
    }

    /// Seeded resampling gives the same null sample and p-value on 1 and 2 threads.
    #[test]
    fn resampling_is_thread_count_invariant() {
        let x = gaussian_points(6, 40, 2, 0.0, 1.0);
        let y = gaussian_points(7, 40, 2, 0.3, 1.0);
        let k = Kernel::se(1.0).unwrap();
        let run = |threads: usize, null: NullDistribution, statistic: MmdStatistic| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let params = MmdParams { null, statistic, permutations: 300, seed: 42, ..MmdParams::default() };
            pool.install(|| mmd_test::<DefaultBackend>(&x, &y, &k, &params).unwrap())
        };
        for (null, stat) in [
            (NullDistribution::Permutation, MmdStatistic::Unbiased),
            (NullDistribution::WildBootstrap, MmdStatistic::Biased),
            (NullDistribution::Permutation, MmdStatistic::Linear),
            (NullDistribution::WildBootstrap, MmdStatistic::Linear),
        ] {
            let (a, b) = (run(1, null, stat), run(2, null, stat));
            assert_eq!(a.null_samples, b.null_samples, "{null:?} {stat:?}");
            assert_eq!(a.p_value, b.p_value);
            // and a different seed gives a different sample
            let params =
                MmdParams { null, statistic: stat, permutations: 300, seed: 43, ..MmdParams::default() };
            let c = mmd_test::<DefaultBackend>(&x, &y, &k, &params).unwrap();
            assert_ne!(a.null_samples, c.null_samples);
        }
    }

    /// The exact permutation mean of the biased statistic (c·tr K̃) against the mean of many draws,
    /// and the gamma p-value against the permutation p-value on the same data.
    #[test]
    fn gamma_moments_match_permutation_distribution() {
        let x = gaussian_points(8, 60, 2, 0.0, 1.0);
        let y = gaussian_points(9, 60, 2, 0.0, 1.0);
        let k = Kernel::se(1.0).unwrap();
        let gram = k.gram(&x.concat(&y).unwrap()).unwrap();
        let (mean, var) = gamma_moments(&gram, 60);
        let perm = MmdPermutation::new(&gram, 60).unwrap();
        let draws = 4000;
        let null = perm.null::<DefaultBackend>(MmdStatistic::Biased, draws, 1).unwrap();
        let emean = null.iter().sum::<f64>() / draws as f64;
        let evar = null.iter().map(|v| (v - emean).powi(2)).sum::<f64>() / (draws as f64 - 1.0);
        // mean is exact: 4 Monte-Carlo standard errors
        assert!((emean - mean).abs() < 4.0 * (evar / draws as f64).sqrt(), "{emean} vs {mean}");
        // variance is an O(1/N) approximation: within 15 %
        assert!((evar / var - 1.0).abs() < 0.15, "{evar} vs {var}");
        // the unbiased null has mean exactly 0 under relabelling
        let nu = perm.null::<DefaultBackend>(MmdStatistic::Unbiased, draws, 1).unwrap();
        let umean = nu.iter().sum::<f64>() / draws as f64;
        let usd = (nu.iter().map(|v| (v - umean).powi(2)).sum::<f64>() / draws as f64).sqrt();
        assert!(umean.abs() < 4.0 * usd / (draws as f64).sqrt(), "{umean}");
        for stat in [MmdStatistic::Biased, MmdStatistic::Unbiased] {
            let pg = mmd_test_gram::<DefaultBackend>(
                &gram,
                60,
                &MmdParams { statistic: stat, null: NullDistribution::Gamma, ..Default::default() },
            )
            .unwrap();
            let pp = mmd_test_gram::<DefaultBackend>(
                &gram,
                60,
                &MmdParams { statistic: stat, permutations: 2000, ..Default::default() },
            )
            .unwrap();
            assert!(
                (pg.p_value - pp.p_value).abs() < 0.05,
                "{stat:?}: gamma {} vs permutation {}",
                pg.p_value,
                pp.p_value
            );
        }
        // the gamma tail at the permutation distribution's 95 % quantile is 0.05 up to Monte-Carlo
        // error (sd ≈ 0.0035) and the approximation's own error
        let mut sorted = null.clone();
        sorted.sort_by(f64::total_cmp);
        let q95 = sorted[(0.95 * draws as f64) as usize];
        let tail = gamma_sf(q95, mean * mean / var, var / mean);
        assert!((tail - 0.05).abs() < 0.015, "gamma tail at the permutation 95 % quantile: {tail}");
    }

    #[test]
    fn wild_bootstrap_and_normal_null_agree_with_definitions() {
        let x = gaussian_points(10, 30, 1, 0.0, 1.0);
        let y = gaussian_points(11, 30, 1, 0.0, 1.0);
        let k = Kernel::se(0.7).unwrap();
        let gram = k.gram(&x.concat(&y).unwrap()).unwrap();
        // wild bootstrap: observed biased statistic is the usual V-statistic; draws match a direct sum
        let (obs, null) = wild_null::<DefaultBackend>(&gram, 30, MmdStatistic::Biased, 20, 3).unwrap();
        assert!((obs - mmd_from_gram(&gram, 30, MmdStatistic::Biased).unwrap()).abs() < 1e-13);
        let (obs_u, null_u) = wild_null::<DefaultBackend>(&gram, 30, MmdStatistic::Unbiased, 20, 3).unwrap();
        let h = |i: usize, j: usize| {
            k.eval(x.point(i), x.point(j)) + k.eval(y.point(i), y.point(j))
                - k.eval(x.point(i), y.point(j))
                - k.eval(x.point(j), y.point(i))
        };
        let mut u = 0.0;
        for i in 0..30 {
            for j in 0..30 {
                if i != j {
                    u += h(i, j);
                }
            }
        }
        assert!((obs_u - u / (30.0 * 29.0)).abs() < 1e-13);
        for (b, (&v, &vu)) in null.iter().zip(&null_u).enumerate() {
            let mut rng = draw_rng(3, b);
            let e: Vec<f64> = (0..30).map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 }).collect();
            let (mut quad, mut off) = (0.0, 0.0);
            for i in 0..30 {
                for j in 0..30 {
                    quad += e[i] * e[j] * h(i, j);
                    if i != j {
                        off += e[i] * e[j] * h(i, j);
                    }
                }
            }
            assert!((v - quad / 900.0).abs() < 1e-12);
            assert!((vu - off / 870.0).abs() < 1e-12);
        }
        // normal null of the linear statistic: p = Φ(−T/sd)
        let params = MmdParams {
            statistic: MmdStatistic::Linear,
            null: NullDistribution::Normal,
            ..Default::default()
        };
        let out = mmd_test::<DefaultBackend>(&x, &y, &k, &params).unwrap();
        let hs = linear_h(&k, &x, &y);
        let mean = hs.iter().sum::<f64>() / 15.0;
        let sd = (hs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 14.0 / 15.0).sqrt();
        assert!((out.p_value - normal_cdf(-mean / sd)).abs() < 1e-14);
    }

    /// A clear difference is detected by every null; p-values are bounded below by 1/(B+1).
    #[test]
    fn detects_a_shift() {
        let x = gaussian_points(12, 80, 2, 0.0, 1.0);
        let y = gaussian_points(13, 80, 2, 1.5, 1.0);
        let k = Kernel::se(1.0).unwrap();
        for (stat, null) in [
            (MmdStatistic::Unbiased, NullDistribution::Permutation),
            (MmdStatistic::Biased, NullDistribution::Permutation),
            (MmdStatistic::Unbiased, NullDistribution::Gamma),
            (MmdStatistic::Biased, NullDistribution::Gamma),
            (MmdStatistic::Unbiased, NullDistribution::WildBootstrap),
            (MmdStatistic::Linear, NullDistribution::Permutation),
            (MmdStatistic::Linear, NullDistribution::Normal),
        ] {
            let params = MmdParams { statistic: stat, null, permutations: 200, ..Default::default() };
            let out = mmd_test::<DefaultBackend>(&x, &y, &k, &params).unwrap();
            assert!(out.reject, "{stat:?} {null:?}: p = {}", out.p_value);
            if null.is_resampling() {
                assert_eq!(out.p_value, 1.0 / 201.0);
            }
        }
    }

    #[test]
    fn bad_input_is_rejected_with_clear_errors() {
        let x = gaussian_points(14, 10, 2, 0.0, 1.0);
        let k = Kernel::se(1.0).unwrap();
        let y3 = gaussian_points(15, 10, 3, 0.0, 1.0);
        let e = mmd_test::<DefaultBackend>(&x, &y3, &k, &MmdParams::default()).unwrap_err();
        assert!(matches!(e, CoreError::DimensionMismatch { .. }), "{e}");
        let one = gaussian_points(16, 1, 2, 0.0, 1.0);
        assert!(matches!(
            mmd_test::<DefaultBackend>(&x, &one, &k, &MmdParams::default()).unwrap_err(),
            CoreError::Empty { .. }
        ));
        let zero_b = MmdParams { permutations: 0, ..Default::default() };
        assert!(
            mmd_test::<DefaultBackend>(&x, &x, &k, &zero_b).unwrap_err().to_string().contains("at least 1")
        );
        for alpha in [0.0, 1.0, 2.0, f64::NAN] {
            assert!(
                mmd_test::<DefaultBackend>(&x, &x, &k, &MmdParams { alpha, ..Default::default() }).is_err()
            );
        }
        let y8 = gaussian_points(17, 8, 2, 0.0, 1.0);
        for p in [
            MmdParams { null: NullDistribution::WildBootstrap, ..Default::default() },
            MmdParams { statistic: MmdStatistic::Linear, ..Default::default() },
        ] {
            let e = mmd_test::<DefaultBackend>(&x, &y8, &k, &p).unwrap_err().to_string();
            assert!(e.contains("pairs x_i with y_i"), "{e}");
        }
        assert!(
            MmdParams {
                statistic: MmdStatistic::Linear,
                null: NullDistribution::Gamma,
                ..Default::default()
            }
            .check()
            .is_err()
        );
        assert!(MmdParams { null: NullDistribution::Normal, ..Default::default() }.check().is_err());
        assert!(Points::new("x", vec![1.0, f64::NAN], 1).is_err());
    }
}
