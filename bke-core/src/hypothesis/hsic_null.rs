//! The HSIC statistics of a collection of kernel pairs under the observed pairing and under the
//! resampled nulls (the math is in [`super::hsic`]'s module docs).
//!
//! **Permutation null as a GEMM.** For an `x`-kernel let `A` be `HKH` (biased) or `K̃` (unbiased)
//! and `a = K̃1`; for a `y`-kernel `L` (or `L̃`) and `b = L̃1`. Under a permutation `π` of `y`,
//! `Σ_ij A_ij L_{π(i)π(j)} = Σ_{i≤j} w_ij A_ij L_{π(i)π(j)}` (`w = 2` off the diagonal, 1 on it). The
//! weighted upper triangles of all `x`-kernels are the rows of one matrix `X` (`#x-kernels × n(n+1)/2`),
//! the permuted upper triangles of `L` for a batch of draws the columns of `P`; `X·P` through the
//! [`Backend`] gives every `x`-kernel's statistic for the batch, and the unbiased cross term
//! `Σ_i a_i b_{π(i)}` is a second, smaller GEMM. Building `P` (a gather of `n(n+1)/2` values per draw)
//! is the unavoidable `O(n²)` per draw: a permutation acts on both indices of `L`, so no algebra
//! avoids touching every pair. `P` is never built whole: the triangle is cut into fixed blocks of
//! columns ([`pair_blocks`]), and each block — the parallel task — gathers its rows of `P` for the
//! batch into a buffer that stays in cache and multiplies them by its columns of `X` in one
//! sequential GEMM; the blocks' products are added in block order. (One GEMM over the whole of `P`,
//! which the threads shared, spent a quarter of its time at the threads' barriers and wrote and read
//! `P` through memory: 1.7× the CPU time for BKL-Bayes at `n = 500`.) Draw `b` uses stream
//! `(seed, b)` for every kernel pair, so the joint null of the collection is sampled, identically
//! for any thread count.
//!
//! **Precision.** The biased statistic's block products run in single precision (half the bytes
//! to gather, twice the GEMM's throughput: `bke test hsic`, BKL-Bayes, `n = 500`, 2.3 → 1.6 CPU
//! seconds): its `A = HKH` is centred, so `L` may be replaced by the centred `HLH` (`tr(A·P_πᵀHLHP_π)
//! = tr(HAH·P_πᵀLP_π)`, `H` commuting with permutations) and both operands are rounded from `f64`
//! without their near-constant parts; the draws then agree with the `f64` ones to ~1e-7 of their
//! scale (tested to 1e-5), while the observed statistic stays `f64`. As for the MMD null
//! ([`super::mmd_null::MmdPermutation::null_of`]), a sample with repeated points — where
//! relabellings that swap equal values tie *exactly* with the observed pairing, and rounding would
//! break those ties at random — keeps `f64`, and so does the unbiased statistic (its `K̃` is not
//! centred).
//!
//! **Wild bootstrap (pairs of pairs).** With `h = ⌊n/2⌋` and the `i`-th pair of observations
//! `((x_i, y_i), (x_{h+i}, y_{h+i}))`, `H^x_ij = k(x_i,x_j) − k(x_i,x_{h+j}) − k(x_{h+i},x_j) +
//! k(x_{h+i},x_{h+j})`, `H^y` likewise and `H = H^x ∘ H^y` (Schrab et al. 2022, HSICAggInc with all
//! pairs). `U = Σ_{i≠j} H_ij/(4h(h−1))` is an unbiased estimator of HSIC; flipping the sign `ε_i`
//! swaps `x_i ↔ x_{h+i}` within the pair, which leaves the distribution unchanged under independence,
//! and the draws `(εᵀHε − tr H)/(4h(h−1))` are one GEMM per batch ([`super::mmd_null`]).

use super::aggregate::KernelStatistics;
use super::mmd_null::{NullScalar, draw_permutation, gram_has_repeated_points, rademacher_forms};
use super::resampling::{choice, draw_rng};
use crate::{CoreError, Progress};
use bke_linalg::{Backend, Mat, MatMut, MatRef, Trans};
use rayon::prelude::*;

/// Which HSIC estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HsicStatistic {
    /// The biased V-statistic `tr(KHLH)/n²` (Gretton et al. 2008). The default.
    #[default]
    Biased,
    /// The unbiased estimator of Song et al. (2012); needs `n ≥ 4`.
    Unbiased,
}

impl HsicStatistic {
    /// Name used in outputs and on the command line: "biased", "unbiased".
    pub fn name(self) -> &'static str {
        match self {
            HsicStatistic::Biased => "biased",
            HsicStatistic::Unbiased => "unbiased",
        }
    }

    /// Parses a name as written by [`HsicStatistic::name`].
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        match name {
            "biased" => Ok(Self::Biased),
            "unbiased" => Ok(Self::Unbiased),
            other => Err(choice(&format!("HSIC statistic '{other}'"), "use biased or unbiased")),
        }
    }

    /// The fewest observations the estimator is defined for.
    pub(super) fn min_points(self) -> usize {
        match self {
            HsicStatistic::Biased => 2,
            HsicStatistic::Unbiased => 4,
        }
    }
}

/// The centred Gram matrix `HKH`.
pub(crate) fn centre(k: &Mat) -> Mat {
    let n = k.nrows();
    let nf = n as f64;
    let r: Vec<f64> = (0..n).map(|j| k.col(j).iter().sum::<f64>() / nf).collect();
    let g = r.iter().sum::<f64>() / nf;
    Mat::from_fn(n, n, |i, j| k[(i, j)] - r[i] - r[j] + g)
}

fn zero_diagonal(m: &Mat) -> Mat {
    let n = m.nrows();
    Mat::from_fn(n, n, |i, j| if i == j { 0.0 } else { m[(i, j)] })
}

fn column_sums(m: &Mat) -> Vec<f64> {
    (0..m.ncols()).map(|j| m.col(j).iter().sum()).collect()
}

/// The pieces of one kernel that the statistic needs (module docs).
struct Side {
    /// `HKH` (biased) or `K̃` (unbiased); `L` or `L̃` for `y`.
    m: Mat,
    /// Row sums of `K̃` / `L̃` (unbiased only).
    sums: Vec<f64>,
    /// `1ᵀK̃1` (unbiased only).
    total: f64,
}

impl Side {
    fn x(k: &Mat, statistic: HsicStatistic) -> Self {
        match statistic {
            HsicStatistic::Biased => Side { m: centre(k), sums: Vec::new(), total: 0.0 },
            HsicStatistic::Unbiased => {
                let m = zero_diagonal(k);
                let sums = column_sums(&m);
                let total = sums.iter().sum();
                Side { m, sums, total }
            }
        }
    }

    fn y(l: &Mat, statistic: HsicStatistic) -> Self {
        match statistic {
            HsicStatistic::Biased => Side { m: l.clone(), sums: Vec::new(), total: 0.0 },
            HsicStatistic::Unbiased => Self::x(l, statistic),
        }
    }
}

/// The statistic from `s = Σ_ij A_ij L_{π(i)π(j)}` and `cross = Σ_i a_i b_{π(i)}`.
fn finish(statistic: HsicStatistic, n: usize, s: f64, cross: f64, x: &Side, y: &Side) -> f64 {
    let nf = n as f64;
    match statistic {
        HsicStatistic::Biased => s / (nf * nf),
        HsicStatistic::Unbiased => {
            let c = x.total * y.total / ((nf - 1.0) * (nf - 2.0));
            (s + c - 2.0 * cross / (nf - 2.0)) / (nf * (nf - 3.0))
        }
    }
}

/// The statistic of one pair of Gram matrices under the observed pairing, from the definitions.
pub(crate) fn observed(k: &Mat, l: &Mat, statistic: HsicStatistic) -> f64 {
    observed_of(&Side::x(k, statistic), &Side::y(l, statistic), statistic)
}

/// [`observed`] from the two kernels' [`Side`]s.
fn observed_of(x: &Side, y: &Side, statistic: HsicStatistic) -> f64 {
    let s: f64 = x.m.as_slice().iter().zip(y.m.as_slice()).map(|(a, b)| a * b).sum();
    let cross: f64 = x.sums.iter().zip(&y.sums).map(|(a, b)| a * b).sum();
    finish(statistic, x.m.nrows(), s, cross, x, y)
}

/// Every pair `(k, l)` of `ks × ls` (x-major: pair `i·|ls| + j`): the observed statistic and
/// `draws` permutation draws (module docs), `batch` draws at a time (default [`DRAWS_PER_BATCH`]),
/// reported as stage "null distribution" batch by batch (and stopped there when cancelled).
/// The biased statistic's block products run in single precision unless a Gram matrix has
/// repeated points (module docs); the unbiased one's in double.
pub(crate) fn permutation_stats<B: Backend>(
    ks: &[Mat],
    ls: &[Mat],
    statistic: HsicStatistic,
    draws: usize,
    seed: u64,
    batch: Option<usize>,
    progress: &dyn Progress,
) -> Result<KernelStatistics, CoreError> {
    let single = statistic == HsicStatistic::Biased && !ks.iter().chain(ls).any(gram_has_repeated_points);
    if single {
        permutation_stats_in::<B, f32>(ks, ls, statistic, draws, seed, batch, progress)
    } else {
        permutation_stats_in::<B, f64>(ks, ls, statistic, draws, seed, batch, progress)
    }
}

/// [`permutation_stats`] with the block products in precision `T`. The biased statistic's
/// `y`-kernel operand is the centred `HLH` (which leaves the statistic unchanged, `A` being
/// centred), so its near-constant part stays out of the rounding.
pub(super) fn permutation_stats_in<B: Backend, T: NullScalar>(
    ks: &[Mat],
    ls: &[Mat],
    statistic: HsicStatistic,
    draws: usize,
    seed: u64,
    batch: Option<usize>,
    progress: &dyn Progress,
) -> Result<KernelStatistics, CoreError> {
    let draws = PermutationDraws { count: draws, seed, inverse: false };
    permutation_stats_of::<B, T>(ks, ls, statistic, draws, batch, progress)
}

/// The permutations of a permutation null: draw `b` is the permutation of stream `(seed, b)`
/// ([`draw_permutation`]), or its inverse. Permuting `y` by `π` and permuting `x` by `π⁻¹` give the
/// same statistic, `Σ_ij A_ij L_{π(i)π(j)} = Σ_ij A_{π⁻¹(i)π⁻¹(j)} L_ij`, so the roles of the two
/// variables may be swapped ([`super::hsic_low_rank`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct PermutationDraws {
    pub count: usize,
    pub seed: u64,
    pub inverse: bool,
}

impl PermutationDraws {
    /// Draw `b` into `idx` (`n` entries).
    pub(super) fn draw(&self, b: usize, idx: &mut [usize]) {
        draw_permutation(&mut draw_rng(self.seed, b), idx);
        if self.inverse {
            let forward = idx.to_vec();
            for (i, &p) in forward.iter().enumerate() {
                idx[p] = i;
            }
        }
    }
}

/// [`permutation_stats_in`] with the draws given.
pub(super) fn permutation_stats_of<B: Backend, T: NullScalar>(
    ks: &[Mat],
    ls: &[Mat],
    statistic: HsicStatistic,
    draws: PermutationDraws,
    batch: Option<usize>,
    progress: &dyn Progress,
) -> Result<KernelStatistics, CoreError> {
    let (perm_draws, draws) = (draws, draws.count);
    let n = ks[0].nrows();
    let pairs = n * (n + 1) / 2;
    let xs: Vec<Side> = ks.iter().map(|k| Side::x(k, statistic)).collect();
    let nx = xs.len();
    // the weighted upper triangles of the x-kernels, pair-major (`nx × pairs`, column-major)
    let mut xa = Vec::with_capacity(nx * pairs);
    for j in 0..n {
        for i in 0..=j {
            let w = if i == j { 1.0 } else { 2.0 };
            xa.extend(xs.iter().map(|side| T::round(w * side.m[(i, j)])));
        }
    }
    let mut xs_sums = Mat::zeros(nx, n);
    for (r, side) in xs.iter().enumerate() {
        for (i, v) in side.sums.iter().enumerate() {
            xs_sums[(r, i)] = *v;
        }
    }
    let unbiased = statistic == HsicStatistic::Unbiased;
    let bs = batch.unwrap_or(DRAWS_PER_BATCH).clamp(1, draws.max(1));
    let blocks = pair_blocks(n);
    let mut observed = vec![0.0; nx * ls.len()];
    let mut null = vec![vec![0.0; draws]; nx * ls.len()];
    let mut perms = vec![0usize; n * bs];
    let mut permuted_sums = Mat::zeros(n, bs);
    let mut cross = Mat::zeros(nx, bs);
    let batches = (ls.len() * draws.div_ceil(bs)) as u64;
    let mut done = 0;
    for (c, l) in ls.iter().enumerate() {
        let y = Side::y(l, statistic);
        let operand = match statistic {
            HsicStatistic::Biased => centre(l),
            HsicStatistic::Unbiased => y.m.clone(),
        };
        let operand: Vec<T> = operand.as_slice().iter().map(|&v| T::round(v)).collect();
        for (r, x) in xs.iter().enumerate() {
            observed[r * ls.len() + c] = observed_of(x, &y, statistic);
        }
        let mut start = 0;
        while start < draws {
            let len = bs.min(draws - start);
            perms[..n * len]
                .par_chunks_mut(n)
                .enumerate()
                .for_each(|(b, idx)| perm_draws.draw(start + b, idx));
            let perms = &perms[..n * len];
            // each block of columns of the upper triangle: its permuted pairs for the batch, times
            // the x-kernels' weights of those pairs (one sequential GEMM per block, blocks in parallel)
            let partials: Vec<Vec<T>> = blocks
                .par_iter()
                .map_init(Vec::new, |buffer, &(j0, j1)| {
                    block_product::<B, T>(&xa, nx, &operand, perms, (j0, j1), len, buffer)
                })
                .collect::<Result<_, _>>()?;
            let mut out = vec![0.0f64; nx * len];
            for part in &partials {
                out.iter_mut().zip(part).for_each(|(o, &v)| *o += v.into());
            }
            if unbiased {
                for (b, idx) in perms.chunks(n).enumerate() {
                    for (i, &pi) in idx.iter().enumerate() {
                        permuted_sums[(i, b)] = y.sums[pi];
                    }
                }
                let sv = MatRef::from_slice(&permuted_sums.as_slice()[..n * len], n, len, n)?;
                let cv = MatMut::from_slice(&mut cross.as_mut_slice()[..nx * len], nx, len, nx)?;
                B::gemm(1.0, xs_sums.as_ref(), Trans::No, sv, Trans::No, 0.0, cv)?;
            }
            for (r, side) in xs.iter().enumerate() {
                let row = &mut null[r * ls.len() + c];
                for b in 0..len {
                    let cr = if unbiased { cross[(r, b)] } else { 0.0 };
                    row[start + b] = finish(statistic, n, out[b * nx + r], cr, side, &y);
                }
            }
            start += len;
            done += 1;
            progress.checkpoint()?;
            progress.update("null distribution", done, batches);
        }
    }
    Ok(KernelStatistics { observed, draws: null })
}

/// Draws per batch of the permutation null: the x-kernels' weights of a block of pairs are reused
/// across the batch's draws.
const DRAWS_PER_BATCH: usize = 64;

/// Pairs of the upper triangle per block of [`pair_blocks`]: a block's permuted pairs for a batch
/// (`PAIRS_PER_BLOCK × DRAWS_PER_BATCH` values, 4 MB) stay in cache for its product.
const PAIRS_PER_BLOCK: usize = 8192;

/// The columns `j0..j1` of the upper triangle (column `j` holds the pairs `(i, j)`, `i ≤ j`) in
/// blocks of at least [`PAIRS_PER_BLOCK`] pairs (the last may have fewer). The partition depends on
/// `n` only, so the sums over blocks, added in order, do not depend on the thread count.
fn pair_blocks(n: usize) -> Vec<(usize, usize)> {
    let mut blocks = Vec::new();
    let (mut j0, mut count) = (0, 0);
    for j in 0..n {
        count += j + 1;
        if count >= PAIRS_PER_BLOCK || j + 1 == n {
            blocks.push((j0, j + 1));
            (j0, count) = (j + 1, 0);
        }
    }
    blocks
}

/// `Σ_{j0 ≤ j < j1, i ≤ j} w_ij A_r(i, j) L(π_b(i), π_b(j))` for every x-kernel `r` (the `nx` rows
/// of `xa`, the weighted upper triangles, pair `j(j+1)/2 + i`) and every permutation `π_b` of `perms`
/// (`len` of them, `n` entries each), as an `nx × len` column-major matrix: the block's permuted
/// pairs of `l` (`n × n`, column-major) gathered into a buffer, times the block's columns of `xa` in
/// one sequential GEMM ([`bke_linalg::sequential`]: the blocks are the parallel tasks). `packed` is
/// the gather's buffer, reused from block to block.
fn block_product<B: Backend, T: NullScalar>(
    xa: &[T],
    nx: usize,
    l: &[T],
    perms: &[usize],
    (j0, j1): (usize, usize),
    len: usize,
    packed: &mut Vec<T>,
) -> Result<Vec<T>, CoreError> {
    let n = perms.len() / len;
    let (p0, p1) = (j0 * (j0 + 1) / 2, j1 * (j1 + 1) / 2);
    packed.clear();
    for idx in perms.chunks(n).take(len) {
        for j in j0..j1 {
            let lcol = &l[idx[j] * n..(idx[j] + 1) * n];
            packed.extend(idx[..=j].iter().map(|&pi| lcol[pi]));
        }
    }
    let mut out = vec![T::ZERO; nx * len];
    let x = &xa[p0 * nx..p1 * nx];
    bke_linalg::sequential(|| T::gemm::<B>(x, packed, &mut out, (nx, p1 - p0, len)))?;
    Ok(out)
}

/// The wild-bootstrap statistic of every pair of `ks × ls` (x-major) and its draws (module docs).
pub(crate) fn wild_stats<B: Backend>(
    ks: &[Mat],
    ls: &[Mat],
    draws: usize,
    seed: u64,
) -> Result<KernelStatistics, CoreError> {
    let h = ks[0].nrows() / 2;
    let hf = h as f64;
    let paired =
        |k: &Mat| Mat::from_fn(h, h, |i, j| k[(i, j)] - k[(i, h + j)] - k[(h + i, j)] + k[(h + i, h + j)]);
    let hy: Vec<Mat> = ls.iter().map(paired).collect();
    let mut stats = KernelStatistics { observed: Vec::new(), draws: Vec::new() };
    for k in ks {
        let hx = paired(k);
        for y in &hy {
            let mut m = hx.clone();
            m.as_mut_slice().iter_mut().zip(y.as_slice()).for_each(|(a, b)| *a *= b);
            let tr: f64 = (0..h).map(|i| m[(i, i)]).sum();
            let scale = 1.0 / (4.0 * hf * (hf - 1.0));
            stats.observed.push((m.as_slice().iter().sum::<f64>() - tr) * scale);
            let forms = rademacher_forms::<B>(&m, draws, seed)?;
            stats.draws.push(forms.into_iter().map(|q| (q - tr) * scale).collect());
        }
    }
    Ok(stats)
}

/// Mean and variance of `n·HSIC_b` under independence (Gretton et al. 2008; [`super::hsic`]).
pub(crate) fn gamma_moments(k: &Mat, l: &Mat) -> (f64, f64) {
    let n = k.nrows();
    let nf = n as f64;
    let (kc, lc) = (centre(k), centre(l));
    let mut s = 0.0;
    for j in 0..n {
        for i in 0..n {
            if i != j {
                s += (kc[(i, j)] * lc[(i, j)] / 6.0).powi(2);
            }
        }
    }
    let var_b =
        72.0 * (nf - 4.0) * (nf - 5.0) / (nf * (nf - 1.0) * (nf - 2.0) * (nf - 3.0)) * s / (nf * (nf - 1.0));
    let offdiag_mean = |m: &Mat| {
        let all: f64 = m.as_slice().iter().sum();
        let tr: f64 = (0..n).map(|i| m[(i, i)]).sum();
        ((all - tr) / (nf * (nf - 1.0)), tr / nf)
    };
    let ((mx, dx), (my, dy)) = (offdiag_mean(k), offdiag_mean(l));
    let mean_b = (dx - mx) * (dy - my) / nf;
    (nf * mean_b, nf * nf * var_b)
}
