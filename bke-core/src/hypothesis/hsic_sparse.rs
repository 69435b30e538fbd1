//! The biased HSIC permutation null against a narrow kernel's Gram matrix held sparse, for the
//! exact kernels of the low-rank null ([`super::hsic_low_rank`]).
//!
//! **Why.** The kernels the Nyström landmarks cannot resolve are the narrow ones (lengthscales
//! below the spacing of the landmarks: BKL-Bayes's sub-resolution posterior mode, 1-D at n = 500),
//! and a narrow Gaussian's Gram matrix `L` is nearly diagonal: at `θ` a hundredth of the median
//! distance in 1-D, 3 % of its entries are above single-precision rounding. The dense null gathers
//! all `n(n+1)/2` permuted entries of `L` per draw ([`super::hsic_null`]); this one touches only
//! the entries kept.
//!
//! **The statistic.** With `A = HKH` an `x`-kernel's centred Gram matrix and `S` the `y`-kernel's
//! Gram matrix with the entries below [`MIN_ENTRY`] of its largest dropped, the statistic of the
//! permutation `σ` of `y` is `n² HSIC = Σ_ij A_ij S_{σ(i)σ(j)} = Σ_{a ≤ c} w_ac S_ac A_{σ⁻¹(a)σ⁻¹(c)}`
//! (`w = 2` off the diagonal, `A` being centred, `S` needs no centring). Rows are taken in the
//! order `a = σ(0), σ(1), …`, so the entries read from `A` lie in one row `A_i` at a time; the
//! `x`-kernels' matrices are interleaved (kernel innermost), so one read gives every `x`-kernel's
//! entry. A draw costs `nnz(S) · #x-kernels` multiply-adds, against `n²/2` gathers.
//!
//! **The test stays exact.** `S` is a fixed function of `y`'s values: dropping entries changes
//! the statistic by less than single-precision rounding of the dense one, and the observed pairing
//! (the identity) goes through the same computation as every draw. Used only where no Gram matrix
//! has repeated points (so no relabelling ties the observed statistic), in single precision.

use super::aggregate::KernelStatistics;
use super::hsic_null::{HsicStatistic, PermutationDraws, permutation_stats_of};
use super::mmd_null::gram_has_repeated_points;
use crate::{CoreError, Progress};
use bke_linalg::{Backend, Mat};
use rayon::prelude::*;

/// Entries of a Gram matrix below this fraction of its largest are dropped (single-precision
/// rounding of the unit diagonal: below what the dense null's `f32` operands resolve).
const MIN_ENTRY: f64 = 1.0 / (1u64 << 24) as f64;

/// A Gram matrix is held sparse when at most this fraction of its upper triangle is kept: a kept
/// entry costs one read of `#x-kernels` interleaved values and their multiply-adds, a dense one a
/// gather and a share of a GEMM (`bke test hsic`, BKL-Bayes, 1-D, n = 500: the narrow kernels keep
/// 2–5 %).
const MAX_DENSITY: f64 = 0.125;

/// Draws per batch (progress and cancellation between batches).
const DRAWS_PER_BATCH: usize = 64;

/// The upper triangle of a Gram matrix without its entries below [`MIN_ENTRY`], by rows (`CSR`),
/// off-diagonal entries doubled.
struct SparseGram {
    starts: Vec<usize>,
    cols: Vec<u32>,
    vals: Vec<f32>,
}

impl SparseGram {
    /// `gram` held sparse, or `None` when it keeps more than [`MAX_DENSITY`] of its upper triangle.
    fn of(gram: &Mat) -> Option<Self> {
        let n = gram.nrows();
        let largest = gram.as_slice().iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let cut = MIN_ENTRY * largest;
        let budget = (MAX_DENSITY * (n * (n + 1) / 2) as f64) as usize;
        let (mut starts, mut cols, mut vals) = (Vec::with_capacity(n + 1), Vec::new(), Vec::new());
        starts.push(0);
        for a in 0..n {
            // column a holds the upper triangle's row a (symmetric matrix, column-major storage)
            for (c, &v) in gram.col(a).iter().enumerate().skip(a) {
                if v.abs() >= cut {
                    cols.push(c as u32);
                    vals.push((if c == a { v } else { 2.0 * v }) as f32);
                }
            }
            if cols.len() > budget {
                return None;
            }
            starts.push(cols.len());
        }
        Some(Self { starts, cols, vals })
    }

    fn rows(&self) -> usize {
        self.starts.len() - 1
    }
}

/// Kernels per lane group of [`Interleaved`]: one group's entries are one AVX-512 register.
pub(super) const LANES: usize = 16;

/// The `x`-kernels' centred Gram matrices interleaved in groups of [`LANES`] kernels (the last
/// padded with zeros): entry `(i, j)` of kernel `g · LANES + l` at `(i n + j) · groups · LANES + g · LANES + l`.
struct Interleaved {
    values: Vec<f32>,
    count: usize,
    groups: usize,
    n: usize,
}

impl Interleaved {
    /// `HKH` of every Gram matrix `K` (symmetric), entry `(i, j)` as `K_ij − k̄_i − k̄_j + k̄` with
    /// `k̄_i` the row means and `k̄` their mean; row `i` from column `i` (symmetry), rows in parallel.
    fn of(grams: &[Mat]) -> Self {
        let (n, count) = (grams[0].nrows(), grams.len());
        let groups = count.div_ceil(LANES);
        let stride = groups * LANES;
        let means: Vec<(Vec<f64>, f64)> = grams
            .iter()
            .map(|k| {
                let rows: Vec<f64> = (0..n).map(|j| k.col(j).iter().sum::<f64>() / n as f64).collect();
                let all = rows.iter().sum::<f64>() / n as f64;
                (rows, all)
            })
            .collect();
        let mut values = vec![0.0f32; n * n * stride];
        values.par_chunks_mut(n * stride).enumerate().for_each(|(i, row)| {
            for (r, (k, (m, all))) in grams.iter().zip(&means).enumerate() {
                let offset = (r / LANES) * LANES + r % LANES;
                for (j, &v) in k.col(i).iter().enumerate() {
                    row[j * stride + offset] = (v - m[i] - m[j] + all) as f32;
                }
            }
        });
        Self { values, count, groups, n }
    }

    /// `Σ_{a ≤ c} S_ac A_{σ⁻¹(a)σ⁻¹(c)}` for every `x`-kernel (module docs), `sigma` the permutation
    /// and `inv` its inverse, into `out` (`count` values). Row `i`'s sums are single precision (a
    /// few dozen terms), their total double.
    fn statistic(&self, s: &SparseGram, sigma: &[usize], inv: &[usize], out: &mut [f64]) {
        let (n, groups) = (self.n, self.groups);
        let stride = groups * LANES;
        let mut total = vec![0.0f64; stride];
        for (i, &a) in sigma.iter().enumerate() {
            let base = &self.values[i * n * stride..(i + 1) * n * stride];
            let (cols, vals) = (&s.cols[s.starts[a]..s.starts[a + 1]], &s.vals[s.starts[a]..s.starts[a + 1]]);
            for g in 0..groups {
                let mut acc = [0.0f32; LANES];
                for (&c, &v) in cols.iter().zip(vals) {
                    let at = inv[c as usize] * stride + g * LANES;
                    let entry: &[f32; LANES] = base[at..at + LANES].try_into().expect("one lane group");
                    for l in 0..LANES {
                        acc[l] += v * entry[l];
                    }
                }
                total[g * LANES..(g + 1) * LANES].iter_mut().zip(acc).for_each(|(t, v)| *t += f64::from(v));
            }
        }
        out.copy_from_slice(&total[..self.count]);
    }
}

/// The kept entries of `gram` when its pairs would run sparse (not on repeated points, whose exact
/// ties keep the dense null in double precision), for the cost model of the low-rank null.
pub(super) fn kept_entries(gram: &Mat) -> Option<usize> {
    if gram_has_repeated_points(gram) {
        return None;
    }
    SparseGram::of(gram).map(|s| s.cols.len())
}

/// Every pair of `a × b` (x-major) with `b`'s kernels permuted by the draws: against a `b`-kernel
/// whose Gram matrix is nearly diagonal, by its sparse form ([`sparse_stats`], in single
/// precision where no Gram matrix has repeated points); against the others, by the dense null.
pub(super) fn permuted_part<B: Backend>(
    a: &[Mat],
    b: &[Mat],
    single: bool,
    draws: PermutationDraws,
    progress: &dyn Progress,
) -> Result<KernelStatistics, CoreError> {
    let sparse: Vec<Option<SparseGram>> =
        b.iter().map(|l| if single { SparseGram::of(l) } else { None }).collect();
    let (held, full): (Vec<usize>, Vec<usize>) = (0..b.len()).partition(|&l| sparse[l].is_some());
    let (pairs, nb) = (a.len() * b.len(), b.len());
    let mut stats = KernelStatistics { observed: vec![0.0; pairs], draws: vec![Vec::new(); pairs] };
    let mut put = |part: KernelStatistics, which: &[usize]| {
        let pairs = (0..a.len()).flat_map(|k| which.iter().map(move |&l| k * nb + l));
        for ((pair, observed), null) in pairs.zip(part.observed).zip(part.draws) {
            stats.observed[pair] = observed;
            stats.draws[pair] = null;
        }
    };
    if !held.is_empty() {
        let grams: Vec<SparseGram> = sparse.into_iter().flatten().collect();
        put(sparse_stats(a, &grams, draws, progress)?, &held);
    }
    if !full.is_empty() {
        let ls: Vec<Mat> = full.iter().map(|&l| b[l].clone()).collect();
        let part = match single {
            true => permutation_stats_of::<B, f32>(a, &ls, HsicStatistic::Biased, draws, None, progress)?,
            false => permutation_stats_of::<B, f64>(a, &ls, HsicStatistic::Biased, draws, None, progress)?,
        };
        put(part, &full);
    }
    Ok(stats)
}

/// Every pair `(k, l)` of `ks × ls` (x-major, as [`super::hsic_null::permutation_stats_of`]) of
/// `x`-kernel Gram matrices `ks` and sparse `y`-kernel Gram matrices `ls`: the biased statistic of
/// the identity and of every draw of `draws` (the permutation `σ` acting on `y`).
fn sparse_stats(
    ks: &[Mat],
    ls: &[SparseGram],
    draws: PermutationDraws,
    progress: &dyn Progress,
) -> Result<KernelStatistics, CoreError> {
    let a = Interleaved::of(ks);
    let (n, nx, ny) = (a.n, ks.len(), ls.len());
    debug_assert!(ls.iter().all(|s| s.rows() == n));
    let scale = 1.0 / (n as f64 * n as f64);
    // the statistics of one permutation, pair-major
    let of = |sigma: &[usize], inv: &[usize]| -> Vec<f64> {
        let mut out = vec![0.0; nx];
        let mut stats = vec![0.0; nx * ny];
        for (c, s) in ls.iter().enumerate() {
            a.statistic(s, sigma, inv, &mut out);
            (0..nx).for_each(|r| stats[r * ny + c] = out[r] * scale);
        }
        stats
    };
    let identity: Vec<usize> = (0..n).collect();
    let observed = of(&identity, &identity);
    let mut null = vec![vec![0.0; draws.count]; nx * ny];
    let batches = draws.count.div_ceil(DRAWS_PER_BATCH) as u64;
    for (done, start) in (0..draws.count).step_by(DRAWS_PER_BATCH).enumerate() {
        let end = (start + DRAWS_PER_BATCH).min(draws.count);
        let batch: Vec<Vec<f64>> = (start..end)
            .into_par_iter()
            .map(|b| {
                let mut sigma = vec![0; n];
                draws.draw(b, &mut sigma);
                let mut inv = vec![0; n];
                sigma.iter().enumerate().for_each(|(i, &p)| inv[p] = i);
                of(&sigma, &inv)
            })
            .collect();
        for (b, stats) in (start..end).zip(batch) {
            null.iter_mut().zip(stats).for_each(|(row, v)| row[b] = v);
        }
        progress.checkpoint()?;
        progress.update("null distribution (sparse)", done as u64 + 1, batches);
    }
    Ok(KernelStatistics { observed, draws: null })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend as B;

    fn gaussian_gram(v: &[f64], lengthscale: f64) -> Mat {
        let n = v.len();
        Mat::from_fn(n, n, |i, j| (-(v[i] - v[j]).powi(2) / (2.0 * lengthscale * lengthscale)).exp())
    }

    fn points(n: usize, seed: u64) -> Vec<f64> {
        (0..n)
            .map(|i| (((i as u64 + 1) * (2 * seed + 7)) as f64 * 0.618_033_988_75).fract() * 2.0 - 1.0)
            .collect()
    }

    /// Against the dense null of the same Gram matrices, draw for draw, both orientations of the
    /// draws: the sparse statistic is the dense one up to the dropped entries and `f32` rounding.
    #[test]
    fn sparse_null_is_the_dense_null() {
        let n = 300;
        let (x, y) = (points(n, 1), points(n, 2));
        let y: Vec<f64> = y.iter().zip(&x).map(|(b, a)| 0.5 * b + (3.0 * a).sin()).collect();
        let ks = vec![gaussian_gram(&x, 0.01), gaussian_gram(&x, 0.3), gaussian_gram(&x, 2.0)];
        let ls = vec![gaussian_gram(&y, 0.004), gaussian_gram(&y, 0.01)];
        let sparse: Vec<SparseGram> =
            ls.iter().map(|l| SparseGram::of(l).expect("narrow kernels are sparse")).collect();
        for inverse in [false, true] {
            let draws = PermutationDraws { count: 40, seed: 5, inverse };
            let got = sparse_stats(&ks, &sparse, draws, &()).unwrap();
            let want =
                permutation_stats_of::<B, f64>(&ks, &ls, HsicStatistic::Biased, draws, None, &()).unwrap();
            for (pair, (g, w)) in got.draws.iter().zip(&want.draws).enumerate() {
                let scale = w.iter().fold(want.observed[pair].abs(), |m, v| m.max(v.abs()));
                assert!(
                    (got.observed[pair] - want.observed[pair]).abs() <= 1e-5 * scale,
                    "pair {pair} observed"
                );
                for (a, b) in g.iter().zip(w) {
                    assert!((a - b).abs() <= 1e-5 * scale, "pair {pair}: {a} vs {b}");
                }
            }
        }
    }

    /// A wide kernel's Gram matrix is not held sparse; a narrow one keeps few entries.
    #[test]
    fn only_narrow_grams_are_sparse() {
        let v = points(400, 3);
        assert!(SparseGram::of(&gaussian_gram(&v, 0.5)).is_none());
        let s = SparseGram::of(&gaussian_gram(&v, 0.005)).expect("narrow");
        assert!(s.cols.len() < 400 * 401 / 2 / 10);
        assert!(s.cols.len() >= 400, "the diagonal is kept");
    }
}
