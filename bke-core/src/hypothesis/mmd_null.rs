//! The resampled and approximate nulls of the MMD statistics (the math is in [`super::mmd`]'s module
//! docs): the permutation null as one GEMM per batch of relabellings ([`MmdPermutation`]), the wild
//! bootstrap, the gamma moments, and the linear-time statistic's nulls.
//!
//! Every resampling draw `b` uses its own stream `(seed, b)` ([`super::draw_rng`]) and every
//! reduction has a fixed order, so null samples and p-values are bitwise identical for any number of
//! threads and any batch size.

use super::kernels::WeightedKernel;
use super::mmd_statistic::{MmdStatistic, block_sums_statistic, check_gram, from_sums};
use super::resampling::{batch_size, check_draws, choice, draw_rng};
use crate::special::normal_cdf;
use crate::{CoreError, Points};
use bke_linalg::{Backend, Mat, Trans};
use rand::Rng;
use rayon::prelude::*;

/// Mean `c tr K̃` and variance `2c²‖K̃‖²_F` of the biased statistic under relabelling (module docs
/// of [`super::mmd`]). The column sums are computed in parallel and added in column order, so the
/// moments (and the gamma p-value) do not depend on the number of threads.
pub(crate) fn gamma_moments(k: &Mat, n: usize) -> (f64, f64) {
    let big_n = k.nrows();
    let m = big_n - n;
    let nf = big_n as f64;
    let r: Vec<f64> = (0..big_n).map(|j| k.col(j).iter().sum::<f64>()).collect();
    let total: f64 = r.iter().sum();
    let trace: f64 = (0..big_n).map(|i| k[(i, i)]).sum();
    let tr_c = trace - total / nf;
    let g = total / (nf * nf);
    let columns: Vec<f64> = (0..big_n)
        .into_par_iter()
        .map(|j| {
            let col = k.col(j);
            let cj = r[j] / nf;
            col.iter().zip(&r).map(|(v, ri)| (v - ri / nf - cj + g).powi(2)).sum::<f64>()
        })
        .collect();
    let fro2: f64 = columns.iter().sum();
    let c = nf / (n as f64 * m as f64 * (nf - 1.0));
    (c * tr_c, 2.0 * c * c * fro2)
}

/// The pooled Gram matrix of a permutation null: dense `K`, or the factor `Φᵀ` (`r × N`) of a
/// low-rank `K̃ = ΦΦᵀ` ([`super::nystrom`]).
#[derive(Debug, Clone, Copy)]
enum PooledGram<'a> {
    Dense(&'a Mat),
    Factor(&'a Mat),
}

/// Permutation null of the quadratic MMD statistics for one pooled Gram matrix, dense or low-rank:
/// the precomputed row sums, diagonal, total and trace of `K` (see the module docs).
#[derive(Debug)]
pub struct MmdPermutation<'a> {
    k: PooledGram<'a>,
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
        Ok(Self::with(PooledGram::Dense(k), n, rowsum, diag))
    }

    /// The same for the low-rank `K̃ = ΦΦᵀ` given by `Φᵀ` (`r × N`, [`super::nystrom`]): row sums
    /// `Φ(Φᵀ1)` and diagonal `‖φ_i‖²`, and each draw's `uᵀK̃u = ‖Φᵀu‖²` from one GEMM `Φᵀ·U` per batch.
    pub fn from_factor(phi_t: &'a Mat, n: usize) -> Result<Self, CoreError> {
        let big_n = phi_t.ncols();
        if n < 2 || big_n < n + 2 {
            return Err(CoreError::Empty {
                what: format!("MMD with n = {n} of N = {big_n} pooled points"),
                needed: 2,
            });
        }
        let sum = column_sum(phi_t, 0..big_n);
        let rowsum = (0..big_n).map(|i| phi_t.col(i).iter().zip(&sum).map(|(a, b)| a * b).sum()).collect();
        let diag = (0..big_n).map(|i| phi_t.col(i).iter().map(|a| a * a).sum()).collect();
        Ok(Self::with(PooledGram::Factor(phi_t), n, rowsum, diag))
    }

    fn with(k: PooledGram<'a>, n: usize, rowsum: Vec<f64>, diag: Vec<f64>) -> Self {
        let total = rowsum.iter().sum();
        let trace = diag.iter().sum();
        Self { k, n, rowsum, diag, total, trace }
    }

    fn pooled_len(&self) -> usize {
        self.rowsum.len()
    }

    /// The statistic of the observed labelling (the first `n` pooled points are `x`).
    pub fn observed(&self, statistic: MmdStatistic) -> f64 {
        let q = match self.k {
            PooledGram::Dense(k) => (0..self.n).map(|j| k.col(j)[..self.n].iter().sum::<f64>()).sum(),
            PooledGram::Factor(f) => column_sum(f, 0..self.n).iter().map(|v| v * v).sum(),
        };
        let s = self.rowsum[..self.n].iter().sum();
        let dx = self.diag[..self.n].iter().sum();
        self.statistic(q, s, dx, statistic)
    }

    /// `√(Σ_{i≠j} K_ij²)`, MMD-FUSE's relabelling-invariant normaliser ([`super::mmd`]); for the
    /// low-rank `K̃`, `‖ΦᵀΦ‖²_F − Σ_i ‖φ_i‖⁴` under the root.
    pub fn off_diagonal_norm<B: Backend>(&self) -> Result<f64, CoreError> {
        let square_sum = match self.k {
            PooledGram::Dense(k) => (0..k.ncols()).map(|j| k.col(j).iter().map(|v| v * v).sum::<f64>()).sum(),
            PooledGram::Factor(f) => {
                let mut g = Mat::zeros(f.nrows(), f.nrows());
                B::gemm_symmetric(1.0, f.as_ref(), Trans::No, f.as_ref(), Trans::Yes, 0.0, g.as_mut())?;
                g.as_slice().iter().map(|v| v * v).sum::<f64>()
            }
        };
        Ok((square_sum - self.diag.iter().map(|d| d * d).sum::<f64>()).max(0.0).sqrt())
    }

    /// The statistic for a labelling with `q = uᵀKu`, `s = uᵀr`, `d_x = uᵀ diag K`.
    #[inline]
    fn statistic(&self, q: f64, s: f64, dx: f64, statistic: MmdStatistic) -> f64 {
        from_sums(q, s, dx, self.n, self.pooled_len() - self.n, self.total, self.trace, statistic)
    }

    /// `draws` null statistics, draw `b` from stream `(seed, b)`, by one GEMM `K·U` per batch of
    /// draws (the fast path). Identical for any rayon thread count.
    pub fn null<B: Backend>(
        &self,
        statistic: MmdStatistic,
        draws: usize,
        seed: u64,
    ) -> Result<Vec<f64>, CoreError> {
        self.null_range::<B>(statistic, 0..draws, seed)
    }

    /// The null statistics of draws `range` only (draw `b` from stream `(seed, b)`): the null of
    /// [`MmdPermutation::null`] split into independent pieces (e.g. over processes), whose
    /// concatenation over a partition of `0..B` in order is `null(statistic, B, seed)` (the same
    /// draws; values equal up to the GEMM's rounding, ~1e-15 relative).
    pub fn null_range<B: Backend>(
        &self,
        statistic: MmdStatistic,
        range: std::ops::Range<usize>,
        seed: u64,
    ) -> Result<Vec<f64>, CoreError> {
        let draws = range.len();
        self.null_in_batches::<B>(statistic, range.start, draws, seed, batch_size(self.pooled_len(), draws))
    }

    /// The draws `first..first + draws` with `batch` draws per GEMM (the results depend on it only
    /// through the GEMM's rounding, ~1e-15 relative).
    pub(crate) fn null_in_batches<B: Backend>(
        &self,
        statistic: MmdStatistic,
        first: usize,
        draws: usize,
        seed: u64,
        batch: usize,
    ) -> Result<Vec<f64>, CoreError> {
        check_draws(draws)?;
        let relabellings = Relabellings::draw(self.pooled_len(), self.n, first..first + draws, seed);
        self.null_of::<B>(statistic, &relabellings, batch)
    }

    /// The null statistics of the given relabellings (drawn once and shared by every kernel of a
    /// collection), `batch` draws per GEMM.
    ///
    /// Both statistics are unchanged when `K` is replaced by the doubly centred `K̃ = HKH`
    /// (`H = I − 11ᵀ/N`: adding `a_i + a_j + c` to `K_ij` moves the three block sums of the unbiased
    /// statistic by amounts that cancel, and `aᵀ1 = 0` in the biased one), and `K̃1 = 0` leaves only
    /// `q = uᵀK̃u` and `d_x = uᵀ diag K̃` per relabelling. Both come from one GEMM of the centred
    /// operand (`MmdPermutation::centred`) times the indicator columns `U`, in single precision
    /// ([`Backend::gemm_f32`], twice the throughput): centring in `f64` first keeps a wide kernel's
    /// near-constant part out of the rounding, which is then ~1e-6 of the statistic's scale (tested;
    /// up to ~1e-4 for a nearly diagonal `K` on a few dozen points, whose diagonal dominates the
    /// sums), so a draw lands on the wrong side of the observed value only when it lies that close.
    /// Where relabellings tie *exactly* with the observed one — a pooled sample with repeated points,
    /// as discrete data have — rounding would break those ties at random and make the p-value
    /// anti-conservative, so such samples keep the `f64` GEMM and the exact tie counting of
    /// [`super::resampling_p_value`].
    pub fn null_of<B: Backend>(
        &self,
        statistic: MmdStatistic,
        relabellings: &Relabellings,
        batch: usize,
    ) -> Result<Vec<f64>, CoreError> {
        if statistic == MmdStatistic::Linear {
            return Err(choice(
                "statistic 'linear' in MmdPermutation",
                "the linear-time statistic has its own nulls (MmdParams with statistic Linear)",
            ));
        }
        if relabellings.pooled != self.pooled_len() || relabellings.n != self.n {
            return Err(CoreError::DimensionMismatch {
                what: "relabellings of the pooled sample".into(),
                expected: self.pooled_len(),
                found: relabellings.pooled,
            });
        }
        if self.has_repeated_points() {
            self.null_with::<B, f64>(statistic, relabellings, None, batch)
        } else {
            self.null_with::<B, f32>(statistic, relabellings, relabellings.indicators.as_deref(), batch)
        }
    }

    /// [`MmdPermutation::null_of`] in precision `T`, with the cached indicator columns if given.
    fn null_with<B: Backend, T: NullScalar>(
        &self,
        statistic: MmdStatistic,
        relabellings: &Relabellings,
        cached: Option<&[T]>,
        batch: usize,
    ) -> Result<Vec<f64>, CoreError> {
        let draws = relabellings.len();
        let (big_n, n) = (self.pooled_len(), self.n);
        let centred = self.centred::<T>();
        let rows = centred.rows;
        // the indicator columns: shared by every kernel when cached, else filled per batch into `u`
        // (zero at the start; after each batch only the entries it set are reset)
        let bs = if cached.is_some() { draws.max(1) } else { batch.clamp(1, draws.max(1)) };
        let mut u = vec![T::ZERO; if cached.is_some() { 0 } else { big_n * bs }];
        let mut ku = vec![T::ZERO; rows * bs];
        let mut out = Vec::with_capacity(draws);
        let mut start = 0;
        while start < draws {
            let len = bs.min(draws - start);
            let fill = |u: &mut [T], value: T| {
                u[..big_n * len].par_chunks_mut(big_n).enumerate().for_each(|(c, col)| {
                    relabellings.subset(start + c).iter().for_each(|&i| col[i as usize] = value);
                });
            };
            if cached.is_none() {
                fill(&mut u, T::ONE);
            }
            let columns = match cached {
                Some(all) => &all[start * big_n..(start + len) * big_n],
                None => &u[..big_n * len],
            };
            T::gemm::<B>(&centred.operand, columns, &mut ku[..rows * len], (rows, big_n, len))?;
            let batch: Vec<f64> = ku[..rows * len]
                .par_chunks(rows)
                .with_min_len(32)
                .enumerate()
                .map(|(c, col)| {
                    let (gram_part, diag_part) = col.split_at(rows - 1);
                    // uᵀ(K̃u) = Σ_{i chosen} (K̃u)_i for the dense K̃; ‖Φ̃ᵀu‖² for the factor
                    let q: f64 = match self.k {
                        PooledGram::Dense(_) => {
                            relabellings.subset(start + c).iter().map(|&i| gram_part[i as usize].into()).sum()
                        }
                        PooledGram::Factor(_) => gram_part.iter().map(|&a| a.into() * a.into()).sum(),
                    };
                    centred.statistic(q, diag_part[0].into(), n, big_n - n, statistic)
                })
                .collect();
            out.extend_from_slice(&batch);
            if cached.is_none() {
                fill(&mut u, T::ZERO);
            }
            start += len;
        }
        Ok(out)
    }

    /// Whether two pooled points coincide: two equal columns of `Φᵀ`, or an off-diagonal entry of
    /// `K` equal to its diagonal one (`k(x, y) = k(x, x)` only for `y = x` for the tests' kernels).
    fn has_repeated_points(&self) -> bool {
        match self.k {
            PooledGram::Dense(k) => gram_has_repeated_points(k),
            PooledGram::Factor(f) => {
                // columns sorted by a hash of their bits; only columns of equal hash are compared
                let bits = |i: usize| f.col(i).iter().map(|v| v.to_bits());
                let hash = |i: usize| {
                    bits(i).fold(0u64, |h, b| (h.rotate_left(5) ^ b).wrapping_mul(0x517c_c1b7_2722_0a95))
                };
                let mut keyed: Vec<(u64, usize)> = (0..f.ncols()).map(|i| (hash(i), i)).collect();
                keyed.sort_unstable();
                keyed.chunk_by(|a, b| a.0 == b.0).any(|same| {
                    same.iter()
                        .enumerate()
                        .any(|(a, &(_, i))| same[a + 1..].iter().any(|&(_, j)| bits(i).eq(bits(j))))
                })
            }
        }
    }

    /// The GEMM operand of [`MmdPermutation::null_of`], column-major, computed in `f64` and rounded
    /// once to `T`: `K̃ = HKH` (`N × N`, dense) or `Φ̃ᵀ = ΦᵀH` (`r × N`, factor), then the row
    /// `diag K̃ − mean`.
    fn centred<T: NullScalar>(&self) -> Centred<T> {
        let big_n = self.pooled_len();
        let nf = big_n as f64;
        // column j of K̃ or Φ̃ᵀ into `out`, and diag K̃
        type Column<'c, T> = Box<dyn Fn(usize, &mut [T]) + Sync + 'c>;
        let (gram_rows, diag, column): (usize, Vec<f64>, Column<'_, T>) = match self.k {
            PooledGram::Dense(k) => {
                let r: Vec<f64> = self.rowsum.iter().map(|v| v / nf).collect();
                let g = self.total / (nf * nf);
                let diag = (0..big_n).map(|i| self.diag[i] - 2.0 * r[i] + g).collect();
                let column = move |j: usize, out: &mut [T]| {
                    let shift = g - r[j];
                    out.iter_mut()
                        .zip(k.col(j))
                        .zip(&r)
                        .for_each(|((o, v), ri)| *o = T::round(v - ri + shift));
                };
                (big_n, diag, Box::new(column))
            }
            PooledGram::Factor(f) => {
                let mean: Vec<f64> = column_sum(f, 0..big_n).iter().map(|v| v / nf).collect();
                let diag = (0..big_n)
                    .map(|i| f.col(i).iter().zip(&mean).map(|(v, m)| (v - m) * (v - m)).sum())
                    .collect();
                let column = move |i: usize, out: &mut [T]| {
                    out.iter_mut().zip(f.col(i)).zip(&mean).for_each(|((o, v), m)| *o = T::round(v - m));
                };
                (f.nrows(), diag, Box::new(column))
            }
        };
        let trace: f64 = diag.iter().sum();
        let diag_mean = trace / nf;
        let rows = gram_rows + 1;
        let mut operand = vec![T::ZERO; rows * big_n];
        operand.par_chunks_mut(rows).enumerate().for_each(|(j, col)| {
            let (gram_part, diag_part) = col.split_at_mut(gram_rows);
            column(j, gram_part);
            diag_part[0] = T::round(diag[j] - diag_mean);
        });
        Centred { operand, rows, trace, diag_mean }
    }

    /// The same null statistics (same draws) recomputed per draw from the block-sum definitions,
    /// `O(N²)` per draw with the Gram matrix reused: the oracle of [`MmdPermutation::null`] and the
    /// baseline of the benchmark (dense Gram matrices only).
    pub fn null_naive(
        &self,
        statistic: MmdStatistic,
        draws: usize,
        seed: u64,
    ) -> Result<Vec<f64>, CoreError> {
        check_draws(draws)?;
        let PooledGram::Dense(k) = self.k else {
            return Err(choice(
                "the naive null of a low-rank Gram matrix",
                "build the dense Gram matrix ΦΦᵀ and use MmdPermutation::new",
            ));
        };
        let big_n = self.pooled_len();
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
                    block_sums_statistic(k, member, self.n, statistic)
                },
            )
            .collect())
    }
}

/// `Σ_{i ∈ columns} f[:, i]`, column by column (contiguous).
fn column_sum(f: &Mat, columns: std::ops::Range<usize>) -> Vec<f64> {
    let mut sum = vec![0.0; f.nrows()];
    for i in columns {
        sum.iter_mut().zip(f.col(i)).for_each(|(s, v)| *s += v);
    }
    sum
}

/// Whether two points of a Gram matrix `K` coincide: an off-diagonal entry equal to its column's
/// diagonal one (`k(x, y) = k(x, x)` only for `y = x` for the tests' kernels; a kernel so wide that
/// it rounds to its diagonal counts too, which only costs the single-precision null).
pub(super) fn gram_has_repeated_points(k: &Mat) -> bool {
    (0..k.ncols()).into_par_iter().any(|j| {
        let d = k[(j, j)];
        k.col(j).iter().enumerate().any(|(i, &v)| i != j && v == d)
    })
}

/// The precision of a permutation null's GEMM ([`MmdPermutation::null_of`]; the HSIC null's
/// block products, [`super::hsic_null`]).
pub(super) trait NullScalar: Copy + Send + Sync + Into<f64> + 'static {
    const ZERO: Self;
    const ONE: Self;
    /// `v` rounded to this precision.
    fn round(v: f64) -> Self;
    /// `C ← A B`, contiguous column-major, `(m, k, n)` = shape.
    fn gemm<B: Backend>(
        a: &[Self],
        b: &[Self],
        c: &mut [Self],
        shape: (usize, usize, usize),
    ) -> Result<(), CoreError>;
}

impl NullScalar for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn round(v: f64) -> Self {
        v as f32
    }
    fn gemm<B: Backend>(
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        shape: (usize, usize, usize),
    ) -> Result<(), CoreError> {
        Ok(B::gemm_f32(a, b, c, shape)?)
    }
}

impl NullScalar for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn round(v: f64) -> Self {
        v
    }
    fn gemm<B: Backend>(
        a: &[f64],
        b: &[f64],
        c: &mut [f64],
        (m, k, n): (usize, usize, usize),
    ) -> Result<(), CoreError> {
        use bke_linalg::{MatMut, MatRef};
        let (a, b) = (MatRef::from_slice(a, m, k, m.max(1))?, MatRef::from_slice(b, k, n, k.max(1))?);
        Ok(B::gemm(1.0, a, Trans::No, b, Trans::No, 0.0, MatMut::from_slice(c, m, n, m.max(1))?)?)
    }
}

/// The centred GEMM operand of a permutation null ([`MmdPermutation::centred`]).
struct Centred<T> {
    /// `rows × N`, column-major: `K̃` or `Φ̃ᵀ`, and last the row `diag K̃ − diag_mean`.
    operand: Vec<T>,
    rows: usize,
    /// `tr K̃`.
    trace: f64,
    /// `tr K̃ / N`.
    diag_mean: f64,
}

impl<T> Centred<T> {
    /// The statistic of a relabelling from `q = uᵀK̃u` and `uᵀ(diag K̃ − diag_mean)`: [`from_sums`]
    /// of `K̃` (row sums and total zero).
    fn statistic(&self, q: f64, centred_dx: f64, n: usize, m: usize, statistic: MmdStatistic) -> f64 {
        let dx = centred_dx + n as f64 * self.diag_mean;
        from_sums(q, 0.0, dx, n, m, 0.0, self.trace, statistic)
    }
}

/// The relabellings of a permutation null, drawn once and shared by every kernel of a collection:
/// draw `b` names the `n` pooled points called `x`, from stream `(seed, first + b)`
/// (`draw_rng`), so the draws do not depend on the thread count or on how they are split.
#[derive(Debug, Clone)]
pub struct Relabellings {
    pooled: usize,
    n: usize,
    subsets: Vec<u32>,
    /// The indicator matrix `U` (`pooled × draws`, column-major, single precision), when it fits
    /// [`INDICATOR_BUDGET`]: built once, multiplied by every kernel of a collection.
    indicators: Option<Vec<f32>>,
}

/// The most entries of a cached indicator matrix `U` (128 MB); above, each kernel fills its batches.
pub const INDICATOR_BUDGET: usize = 1 << 25;

impl Relabellings {
    /// The draws `range` of `n`-subsets of `0..pooled`.
    pub fn draw(pooled: usize, n: usize, range: std::ops::Range<usize>, seed: u64) -> Self {
        let mut subsets = vec![0u32; n * range.len()];
        if n > 0 {
            subsets.par_chunks_mut(n).enumerate().for_each_init(
                || vec![0usize; pooled],
                |idx, (c, out)| {
                    let chosen = draw_subset(&mut draw_rng(seed, range.start + c), idx, n);
                    out.iter_mut().zip(chosen).for_each(|(o, &i)| *o = i as u32);
                },
            );
        }
        let mut out = Self { pooled, n, subsets, indicators: None };
        if pooled * range.len() <= INDICATOR_BUDGET {
            let mut u = vec![0.0f32; pooled * range.len()];
            u.par_chunks_mut(pooled.max(1)).enumerate().for_each(|(c, col)| {
                out.subset(c).iter().for_each(|&i| col[i as usize] = 1.0);
            });
            out.indicators = Some(u);
        }
        out
    }

    /// Number of draws.
    pub fn len(&self) -> usize {
        self.subsets.len().checked_div(self.n).unwrap_or(0)
    }

    /// Whether there are no draws.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn subset(&self, b: usize) -> &[u32] {
        &self.subsets[b * self.n..(b + 1) * self.n]
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

/// Wild-bootstrap observed statistic and null sample (module docs of [`super::mmd`]), `n = m`.
pub(crate) fn wild_null<B: Backend>(
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
    let null = rademacher_forms::<B>(&h, draws, seed)?;
    Ok((finish(all), null.into_iter().map(finish).collect()))
}

/// `εᵀHε` for `draws` Rademacher vectors `ε` (draw `b` from stream `(seed, b)`), by one GEMM `H·E`
/// per batch of draws.
pub(crate) fn rademacher_forms<B: Backend>(h: &Mat, draws: usize, seed: u64) -> Result<Vec<f64>, CoreError> {
    let n = h.nrows();
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
            .map(|c| e.col(c).iter().zip(he.col(c)).map(|(a, b)| a * b).sum())
            .collect();
        out.extend_from_slice(&batch);
        start += len;
    }
    Ok(out)
}

/// The asymptotic normal null of the linear-time statistic: `(p, sd)` with `p = Φ(−T/sd)`,
/// `sd² = s_h²/⌊n/2⌋`.
pub(crate) fn linear_normal(h: &[f64]) -> Result<(f64, f64), CoreError> {
    if h.len() < 2 {
        return Err(CoreError::Empty { what: "pairs of the linear-time statistic".into(), needed: 2 });
    }
    let pairs = h.len() as f64;
    let observed = h.iter().sum::<f64>() / pairs;
    let var = h.iter().map(|v| (v - observed).powi(2)).sum::<f64>() / (pairs - 1.0);
    let sd = (var / pairs).sqrt();
    if !(sd > 0.0) {
        return Err(super::resampling::invalid(
            "standard deviation of the linear-time statistic",
            sd,
            "all pair terms are equal; use another lengthscale or the permutation null",
        ));
    }
    Ok((normal_cdf(-observed / sd), sd))
}

/// Wild-bootstrap null of the linear-time statistic: `Σ ε_i h_i/⌊n/2⌋`.
pub(crate) fn linear_wild(h: &[f64], draws: usize, seed: u64) -> Vec<f64> {
    let pairs = h.len() as f64;
    (0..draws)
        .into_par_iter()
        .map(|b| {
            let mut rng = draw_rng(seed, b);
            h.iter().map(|v| if rng.random::<bool>() { *v } else { -*v }).sum::<f64>() / pairs
        })
        .collect()
}

/// Permutation null of the linear-time statistic: relabel the pooled sample, re-pair, `O(N)` kernel
/// evaluations per draw.
pub(crate) fn linear_permutation(
    kernel: &WeightedKernel,
    x: &Points,
    y: &Points,
    draws: usize,
    seed: u64,
) -> Result<Vec<f64>, CoreError> {
    let pooled = x.concat(y)?;
    let n = x.len();
    let pairs = (n / 2) as f64;
    Ok((0..draws)
        .into_par_iter()
        .map_init(
            || vec![0usize; 2 * n],
            |idx, b| {
                draw_permutation(&mut draw_rng(seed, b), idx);
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
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Repeated points are found in a factor's columns (bit-equal columns anywhere in the sample),
    /// and distinct columns are not mistaken for them, `-0.0` against `0.0` included.
    #[test]
    fn repeated_factor_columns_are_found() {
        let columns = |cols: &[[f64; 2]]| Mat::from_fn(2, cols.len(), |i, j| cols[j][i]);
        let distinct = columns(&[[1.0, 0.0], [0.5, 0.25], [0.0, 1.0], [-0.0, 1.0], [0.25, 0.5]]);
        assert!(!MmdPermutation::from_factor(&distinct, 2).unwrap().has_repeated_points());
        let repeated = columns(&[[1.0, 0.0], [0.5, 0.25], [0.0, 1.0], [0.25, 0.5], [0.5, 0.25]]);
        assert!(MmdPermutation::from_factor(&repeated, 2).unwrap().has_repeated_points());
    }
}
