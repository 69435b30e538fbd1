//! The biased HSIC permutation null of a collection of kernel pairs with Nyström factors, for the
//! aggregated tests above [`super::hsic::EXACT_MAX_OBSERVATIONS`] observations.
//!
//! **Low-rank pairs.** With Nyström factors `K̃ = ΦᵀΦ` on `x` (`Φ` of rank `r_k`, [`super::nystrom`],
//! landmarks from `x` alone) and `L̃ = ΨᵀΨ` on `y`, and `Φ̄ = ΦH`, `Ψ̄ = ΨH` their centred columns,
//! the biased statistic of the permutation `π` of `y` is
//! `n² HSIC_b = Σ_ij (φ̄_i·φ̄_j)(ψ̄_{π(i)}·ψ̄_{π(j)}) = ‖Φ̄ Ψ̄_πᵀ‖²_F`, `Ψ̄_π` the columns of `Ψ̄` in the
//! order `π`. Stacking the factors of all `x`-kernels (`R_x = Σ r_k` rows) and of all `y`-kernels
//! (`R_y` rows), one product `Φ̄_all Ψ̄_{all,π}ᵀ` per draw (`2n R_x R_y` flops) holds every pair's
//! cross-covariance as a block, whose squared norm is the pair's statistic — against a gather of
//! `n(n+1)/2` values per `y`-kernel and draw for the dense Gram matrices ([`super::hsic_null`]).
//! The observed statistic is the same computation with the identity, so ties between relabellings
//! that swap equal points stay exact in single precision.
//!
//! **One basis per variable.** The kernels of a collection overlap — a wide Gaussian's features are
//! nearly combinations of a narrower one's — so the stacked factors `F = Φ̄_all` (`R_x` rows) span
//! far fewer directions than `R_x`: with `FFᵀ = UΛUᵀ`, the stack is replaced by its projection
//! `A Q` on the leading eigen-directions (`Q` orthonormal `q_x × n`, `A = U_qΛ_q^{½}`), dropping
//! directions whose eigenvalues sum to at most [`BASIS_DROPPED_VARIANCE`] of the smallest kernel's
//! `‖Φ̄_k‖²_F` (so no kernel loses more than that share of its variance). A draw then costs
//! `2n q_x q_y` for `M = Q_x Q_{y,π}ᵀ` plus `2R_x q_x q_y + 2R_x q_y R_y` for the cross-covariance
//! `A_x M A_yᵀ`; each side is compressed where that lowers the flops per draw (1-D BKL-Bayes at
//! n = 2000: `q = 292` of 481 rows for `x`, 221 of 365 for `y`, 3.9 instead of 6.1 CPU seconds).
//!
//! **Exact kernels.** A kernel the landmarks cannot resolve ([`super::nystrom::NystromLandmarks::factor`]
//! answers `None`) keeps its exact Gram matrix, and so does a kernel whose rank makes the product
//! dearer than its exact pairs ([`super::hsic_cost`]: a cost model, greedy from the highest rank, that
//! knows which Gram matrices would be held sparse, see below). Every pair
//! with an exact `y`-kernel runs the dense null with the exact Gram matrices of every `x`-kernel; a
//! pair of an exact `x`-kernel and a low-rank `y`-kernel runs it with the roles swapped — the
//! `x`-kernel's Gram matrix permuted by `π⁻¹` against the `y`-kernel's exact Gram matrix
//! ([`super::hsic_null::PermutationDraws`]), which is the same statistic. Draw `b` is the same
//! permutation in every part. The permuted side of either part is an exact kernel, and an exact
//! kernel is mostly a narrow one whose Gram matrix is nearly diagonal: held sparse, its pairs cost
//! a few reads per kept entry instead of a gather of every entry ([`super::hsic_sparse`]; 1-D
//! BKL-Bayes at n = 500: 0.19 → 0.08 s wall for the two parts).
//!
//! **The test stays exact.** The landmarks, the factors, their ranks and so the choice of the exact
//! kernels, and the bases, depend on each variable's multiset of values only (every sum over the
//! points runs in their canonical order), which a relabelling of `y` leaves unchanged; every pair's
//! statistic is one fixed function of the paired data, computed the same way on the observed pairing
//! and on every relabelling (the argument of [`super::select`]'s docs). What the approximation costs
//! is power, not level (`cargo xtask repro level` checks the level at n = 400; `--dense` gives the
//! exact statistics to compare with).

use super::aggregate::KernelStatistics;
use super::hsic::EXACT_MAX_OBSERVATIONS;
use super::hsic_cost::dense_kernels;
use super::hsic_null::PermutationDraws;
use super::hsic_sparse::{kept_entries, permuted_part};
use super::kernels::{Distances, WeightedKernel};
use super::mmd_null::{NullScalar, gram_has_repeated_points};
use super::nystrom::NystromLandmarks;
use super::select::canonical_indices;
use crate::{CoreError, Points, Progress};
use bke_linalg::{Backend, Mat, Trans};
use rayon::prelude::*;
use std::cell::OnceCell;

/// Draws per batch of the low-rank null (progress and cancellation between batches).
const DRAWS_PER_BATCH: usize = 32;

/// The statistic (biased) of every pair of `xk × yk` (x-major) and `draws` permutation draws, draw
/// `b` the permutation of stream `(seed, b)` (module docs). `x` and `y` hold more than
/// [`EXACT_MAX_OBSERVATIONS`] paired observations.
pub(crate) fn low_rank_stats<B: Backend>(
    x: &Points,
    y: &Points,
    xk: &[WeightedKernel],
    yk: &[WeightedKernel],
    draws: usize,
    seed: u64,
    progress: &dyn Progress,
) -> Result<KernelStatistics, CoreError> {
    let (fx, fy) = plan::<B>(x, y, xk, yk, progress)?;
    let dense_of = |f: &[Option<Mat>]| (0..f.len()).filter(|&i| f[i].is_none()).collect::<Vec<_>>();
    let (dense_x, dense_y) = (dense_of(&fx), dense_of(&fy));
    let (nx, ny) = (xk.len(), yk.len());
    let mut stats = KernelStatistics { observed: vec![0.0; nx * ny], draws: vec![Vec::new(); nx * ny] };
    let mut put = |part: KernelStatistics, pairs: &mut dyn Iterator<Item = usize>| {
        for ((pair, observed), null) in pairs.zip(part.observed).zip(part.draws) {
            stats.observed[pair] = observed;
            stats.draws[pair] = null;
        }
    };
    let low_x: Vec<usize> = (0..nx).filter(|&k| fx[k].is_some()).collect();
    let low_y: Vec<usize> = (0..ny).filter(|&l| fy[l].is_some()).collect();
    // the exact Gram matrices the dense parts need: every x-kernel's when a y-kernel is exact, every
    // low-rank y-kernel's when an x-kernel is exact
    let grams = |pts: &Points, kernels: &[WeightedKernel], which: &[usize]| -> Vec<Mat> {
        let mut d = Distances::new(pts);
        which.iter().map(|&i| d.gram(&kernels[i])).collect()
    };
    let all_x: Vec<usize> = (0..nx).collect();
    let exact_x = if dense_y.is_empty() { dense_x.len() } else { nx };
    let exact_y = dense_y.len() + if dense_x.is_empty() { 0 } else { low_y.len() };
    check_memory(x.len(), dense_x.len() + dense_y.len(), exact_x + exact_y)?;
    let ks = if dense_y.is_empty() { grams(x, xk, &dense_x) } else { grams(x, xk, &all_x) };
    let ls_exact = grams(y, yk, &dense_y);
    let ls_low = if dense_x.is_empty() { Vec::new() } else { grams(y, yk, &low_y) };
    let single = !ks.iter().chain(&ls_exact).chain(&ls_low).any(gram_has_repeated_points);
    let dense = |a: &[Mat], b: &[Mat], inverse: bool| {
        permuted_part::<B>(a, b, single, PermutationDraws { count: draws, seed, inverse }, progress)
    };
    if !dense_y.is_empty() {
        // rows: every x-kernel (x-major over the exact y-kernels)
        let part = dense(&ks, &ls_exact, false)?;
        put(part, &mut all_x.iter().flat_map(|&k| dense_y.iter().map(move |&l| k * ny + l)));
    }
    if !dense_x.is_empty() && !low_y.is_empty() {
        // the roles swapped: the low-rank y-kernels' Gram matrices against the exact x-kernels'
        let exact_ks: Vec<Mat> = match dense_y.is_empty() {
            true => ks,
            false => dense_x.iter().map(|&k| ks[k].clone()).collect(),
        };
        let part = dense(&ls_low, &exact_ks, true)?;
        put(part, &mut low_y.iter().flat_map(|&l| dense_x.iter().map(move |&k| k * ny + l)));
    }
    if !low_x.is_empty() && !low_y.is_empty() {
        let stack = |f: &[Option<Mat>], which: &[usize], pts: &Points| {
            Stacked::new(which.iter().map(|&i| f[i].as_ref().unwrap()), canonical_indices(pts))
        };
        let (sx, sy) = cheapest::<B>(stack(&fx, &low_x, x), stack(&fy, &low_y, y))?;
        let part = low_rank_null::<B, f32>(&sx, &sy, draws, seed, progress)?;
        put(part, &mut low_x.iter().flat_map(|&k| low_y.iter().map(move |&l| k * ny + l)));
    }
    Ok(stats)
}

/// Each kernel's centred factor `Φ̄` (`r × n`), or `None` where it keeps its exact Gram matrix
/// ([`super::hsic_cost::dense_kernels`]), for `x`'s kernels and `y`'s.
#[allow(clippy::type_complexity)]
fn plan<B: Backend>(
    x: &Points,
    y: &Points,
    xk: &[WeightedKernel],
    yk: &[WeightedKernel],
    progress: &dyn Progress,
) -> Result<(Vec<Option<Mat>>, Vec<Option<Mat>>), CoreError> {
    let n = x.len();
    let factors = |pts: &Points, kernels: &[WeightedKernel]| -> Result<Vec<Option<Mat>>, CoreError> {
        let landmarks =
            NystromLandmarks::above(pts, EXACT_MAX_OBSERVATIONS).ok_or_else(|| CoreError::Empty {
                what: "observations for the low-rank HSIC null".into(),
                needed: EXACT_MAX_OBSERVATIONS + 1,
            })?;
        let order = canonical_indices(pts);
        kernels.par_iter().map(|k| Ok(landmarks.factor::<B>(k)?.map(|f| centred_rows(&f, &order)))).collect()
    };
    progress.update("low-rank factors", 0, 2);
    let mut fx = factors(x, xk)?;
    progress.update("low-rank factors", 1, 2);
    let mut fy = factors(y, yk)?;
    progress.update("low-rank factors", 2, 2);
    // a kernel's kept entries if held sparse, computed once for the kernels the cost model weighs;
    // none where the exact parts might not fit in memory (then only the unresolved kernels are exact)
    let cache: [Vec<OnceCell<Option<usize>>>; 2] =
        [xk, yk].map(|ks| ks.iter().map(|_| OnceCell::new()).collect());
    let room = check_memory(n, 1, xk.len() + yk.len()).is_ok();
    let kept = |side: usize, i: usize| {
        *cache[side][i].get_or_init(|| {
            if !room {
                return None;
            }
            let (pts, ks) = if side == 0 { (x, xk) } else { (y, yk) };
            kept_entries(&Distances::new(pts).gram(&ks[i]))
        })
    };
    let (dense_x, dense_y) = dense_kernels(n, &ranks(&fx), &ranks(&fy), &kept);
    dense_x.iter().for_each(|&k| fx[k] = None);
    dense_y.iter().for_each(|&l| fy[l] = None);
    Ok((fx, fy))
}

/// Refuses the dense parts' `n × n` matrices beyond the memory limit ([`crate::budget`]): `grams`
/// exact Gram matrices (for the `exact` kernels the landmarks do not resolve or the cost model keeps,
/// and the kernels paired with them), a centred copy and a single-precision operand of each, and
/// the distances — at most `(2·grams + 2) · 8n²` bytes.
fn check_memory(n: usize, exact: usize, grams: usize) -> Result<(), CoreError> {
    if grams == 0 {
        return Ok(());
    }
    let setting = format!(
        "n = {n} observations with {exact} kernel(s) kept exact (narrow against the spacing of the points, \
         so their Nyström factors would need most of the points as landmarks): the null holds {grams} dense n × n \
         Gram matrices, theirs and their partners'; --select hsicagg (bandwidths around the \
         median distance) or median need none at this size, or test a random subsample"
    );
    crate::budget::check(&setting, crate::budget::Bytes::f64s(n).times(n).times(2 * grams + 2))
}

/// The ranks of the factors (`None`: the exact Gram matrix).
fn ranks(factors: &[Option<Mat>]) -> Vec<Option<usize>> {
    factors.iter().map(|f| f.as_ref().map(Mat::nrows)).collect()
}

/// `Φ̄ = ΦH`: each row of the `r × n` factor less its mean, summed over the columns in `order` (the
/// canonical order of the points, [`canonical_indices`]: a relabelling permutes the columns and
/// changes no bit of the means).
fn centred_rows(f: &Mat, order: &[usize]) -> Mat {
    let (r, n) = (f.nrows(), f.ncols());
    let mut mean = vec![0.0; r];
    for &i in order {
        mean.iter_mut().zip(f.col(i)).for_each(|(m, v)| *m += v);
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    Mat::from_fn(r, n, |t, i| f[(t, i)] - mean[t])
}

/// The centred factors of several kernels stacked (`R = Σ r_k` rows), held as `A·Q`: the rows of
/// `Q` (`q × n`) span their row space and `A` (`R × q`) holds their coefficients — the factors
/// themselves with `A = I` ([`Stacked::new`]), or an orthonormal basis of their leading row space
/// ([`Stacked::compressed`]).
struct Stacked {
    n: usize,
    /// `Q`, row-major (row `t` contiguous).
    basis: Vec<f64>,
    /// `A`, or `None` for the identity (`Q` is the stack itself).
    coefficients: Option<Mat>,
    /// Each kernel's rows of the stack.
    ranges: Vec<std::ops::Range<usize>>,
    /// The canonical order of the points ([`canonical_indices`]), in which sums over them run.
    order: Vec<usize>,
}

/// The variance a compressed basis may drop, relative to the smallest centred variance `‖Φ̄_k‖²_F`
/// among the stacked kernels: each kernel's Nyström Gram matrix then loses at most this share of
/// its centred variance.
const BASIS_DROPPED_VARIANCE: f64 = 1e-3;

impl Stacked {
    fn new<'a>(factors: impl Iterator<Item = &'a Mat>, order: Vec<usize>) -> Self {
        let (mut basis, mut ranges, mut rows, mut n) = (Vec::new(), Vec::new(), 0, 0);
        for f in factors {
            n = f.ncols();
            for t in 0..f.nrows() {
                basis.extend((0..n).map(|i| f[(t, i)]));
            }
            ranges.push(rows..rows + f.nrows());
            rows += f.nrows();
        }
        Self { n, basis, coefficients: None, ranges, order }
    }

    /// Rows `R` of the stack.
    fn rows(&self) -> usize {
        self.ranges.last().map_or(0, |r| r.end)
    }

    /// Rows `q` of the basis.
    fn basis_rows(&self) -> usize {
        self.basis.len() / self.n.max(1)
    }

    /// The stack in an orthonormal basis of its leading row space (module docs): with the
    /// eigendecomposition `FFᵀ = UΛUᵀ` (sums over the points in canonical order), the smallest
    /// eigenvalues are dropped while their sum stays within [`BASIS_DROPPED_VARIANCE`] of the
    /// smallest kernel's `‖Φ̄_k‖²_F` (those at rounding level always), `Q = Λ_q^{-½}U_qᵀF` and
    /// `A = U_qΛ_q^{½}`, so `AQ = U_qU_qᵀF` is the stack projected on the kept directions.
    fn compressed<B: Backend>(&self) -> Result<Self, CoreError> {
        let (r, n) = (self.rows(), self.n);
        let f = Mat::from_fn(r, n, |t, i| self.basis[t * n + i]);
        // `FFᵀ` with the columns in canonical order, so that a relabelling changes no bit of it
        let canonical = Mat::from_fn(n, r, |i, t| self.basis[t * n + self.order[i]]);
        let g = B::gram(canonical.as_ref());
        let eigen = B::sym_eigen(g.as_ref())?;
        let smallest = self
            .ranges
            .iter()
            .map(|k| k.clone().map(|t| g[(t, t)]).sum::<f64>())
            .fold(f64::INFINITY, f64::min);
        // directions at rounding level (or below zero) always go: their `Λ^{-½}` is noise
        let rounding = 1e-12 * eigen.values[r - 1].max(0.0);
        let (mut first, mut dropped) = (0, 0.0);
        while first + 1 < r {
            let value = eigen.values[first].max(0.0);
            if value > rounding && dropped + value > BASIS_DROPPED_VARIANCE * smallest {
                break;
            }
            dropped += value;
            first += 1;
        }
        let kept: Vec<usize> = (first..r).collect();
        let u = Mat::from_fn(r, kept.len(), |t, j| eigen.vectors[(t, kept[j])]);
        let mut q = Mat::zeros(kept.len(), n);
        B::gemm(1.0, u.as_ref(), Trans::Yes, f.as_ref(), Trans::No, 0.0, q.as_mut())?;
        let root: Vec<f64> = kept.iter().map(|&j| eigen.values[j].sqrt()).collect();
        let basis = (0..kept.len())
            .flat_map(|j| {
                (0..n).map(|i| if root[j] > 0.0 { q[(j, i)] / root[j] } else { 0.0 }).collect::<Vec<_>>()
            })
            .collect();
        let coefficients = Mat::from_fn(r, kept.len(), |t, j| u[(t, j)] * root[j]);
        Ok(Self {
            n,
            basis,
            coefficients: Some(coefficients),
            ranges: self.ranges.clone(),
            order: self.order.clone(),
        })
    }

    /// The `n × q` column-major matrix `Q_πᵀ` (`[i, t] = Q[t, π(i)]`), `π = None` the identity.
    fn permuted_transpose<T: NullScalar>(&self, perm: Option<&[usize]>, out: &mut Vec<T>) {
        out.clear();
        for row in self.basis.chunks(self.n) {
            match perm {
                Some(p) => out.extend(p.iter().map(|&i| T::round(row[i]))),
                None => out.extend(row.iter().map(|&v| T::round(v))),
            }
        }
    }

    /// Flops per draw of the products that touch this side's coefficients, given the other side's
    /// basis rows (`S = A_x M`, `R_x q_x q_y`; `C = S A_yᵀ`, `R_x q_y R_y`: [`low_rank_null`]).
    fn cost_per_draw(x: &Self, y: &Self) -> f64 {
        let (qx, qy, rx, ry) =
            (x.basis_rows() as f64, y.basis_rows() as f64, x.rows() as f64, y.rows() as f64);
        let mut flops = 2.0 * x.n as f64 * qx * qy;
        let sx = if x.coefficients.is_some() {
            flops += 2.0 * rx * qx * qy;
            rx
        } else {
            qx
        };
        if y.coefficients.is_some() {
            flops += 2.0 * sx * qy * ry;
        }
        flops
    }

    /// `A` rounded to `T`, column-major (`R × q`); `transposed`: `Aᵀ` (`q × R`).
    fn coefficients_in<T: NullScalar>(&self, transposed: bool) -> Option<Vec<T>> {
        let a = self.coefficients.as_ref()?;
        let a = if transposed { a.transpose() } else { a.clone() };
        Some(a.as_slice().iter().map(|&v| T::round(v)).collect())
    }
}

/// `sx` and `sy`, each as it stands or compressed ([`Stacked::compressed`]), whichever of the four
/// choices costs the fewest flops per draw. The choice depends on the ranks and the eigenvalues only
/// (not on the number of draws), like everything else the statistic reads.
fn cheapest<B: Backend>(sx: Stacked, sy: Stacked) -> Result<(Stacked, Stacked), CoreError> {
    let (cx, cy) = (sx.compressed::<B>()?, sy.compressed::<B>()?);
    let costs = [
        Stacked::cost_per_draw(&sx, &sy),
        Stacked::cost_per_draw(&cx, &sy),
        Stacked::cost_per_draw(&sx, &cy),
        Stacked::cost_per_draw(&cx, &cy),
    ];
    let best = (0..4).min_by(|&i, &j| costs[i].total_cmp(&costs[j])).unwrap_or(0);
    Ok((if best & 1 == 1 { cx } else { sx }, if best & 2 == 2 { cy } else { sy }))
}

/// The low-rank statistics of every pair of `sx × sy` (x-major) on the identity and on `draws`
/// permutations of `y` (module docs), in precision `T`, draws in parallel: per draw the product
/// `M = Q_x Q_{y,π}ᵀ` (`q_x × q_y`), then `S = A_x M` and `C = S A_yᵀ` (the stacks' cross-covariance,
/// `R_x × R_y`) where the sides have coefficients, and each pair's block of `C` squared and summed.
fn low_rank_null<B: Backend, T: NullScalar>(
    sx: &Stacked,
    sy: &Stacked,
    draws: usize,
    seed: u64,
    progress: &dyn Progress,
) -> Result<KernelStatistics, CoreError> {
    let n = sx.n;
    let (qx, qy, rx, ry) = (sx.basis_rows(), sy.basis_rows(), sx.rows(), sy.rows());
    // `Q_x` as a `q_x × n` column-major matrix: the transpose of its row-major storage
    let mut ax: Vec<T> = Vec::with_capacity(qx * n);
    for i in 0..n {
        ax.extend((0..qx).map(|t| T::round(sx.basis[t * n + i])));
    }
    let (a_x, a_yt) = (sx.coefficients_in::<T>(false), sy.coefficients_in::<T>(true));
    let pairs = sx.ranges.len() * sy.ranges.len();
    let statistics = |perm: Option<&[usize]>, buffers: &mut [Vec<T>; 4]| {
        let [b_buf, m_buf, s_buf, c_buf] = buffers;
        sy.permuted_transpose(perm, b_buf);
        let gemm = |a: &[T], b: &[T], c: &mut Vec<T>, shape: (usize, usize, usize)| {
            c.clear();
            c.resize(shape.0 * shape.2, T::ZERO);
            bke_linalg::sequential(|| T::gemm::<B>(a, b, c, shape))
        };
        gemm(&ax, b_buf, m_buf, (qx, n, qy))?;
        let s: &Vec<T> = match &a_x {
            Some(a) => {
                gemm(a, m_buf, s_buf, (rx, qx, qy))?;
                s_buf
            }
            None => m_buf,
        };
        let c: &Vec<T> = match &a_yt {
            Some(at) => {
                gemm(s, at, c_buf, (rx, qy, ry))?;
                c_buf
            }
            None => s,
        };
        let scale = 1.0 / (n as f64 * n as f64);
        let mut out = Vec::with_capacity(pairs);
        for kx in &sx.ranges {
            for ky in &sy.ranges {
                let sum: f64 = ky
                    .clone()
                    .map(|col| {
                        c[col * rx + kx.start..col * rx + kx.end]
                            .iter()
                            .map(|&v| v.into().powi(2))
                            .sum::<f64>()
                    })
                    .sum();
                out.push(sum * scale);
            }
        }
        Ok::<_, CoreError>(out)
    };
    let observed = statistics(None, &mut Default::default())?;
    let mut null = vec![vec![0.0; draws]; pairs];
    let draws_of = PermutationDraws { count: draws, seed, inverse: false };
    let batches = draws.div_ceil(DRAWS_PER_BATCH) as u64;
    for (done, start) in (0..draws).step_by(DRAWS_PER_BATCH).enumerate() {
        let end = (start + DRAWS_PER_BATCH).min(draws);
        let batch: Vec<Vec<f64>> = (start..end)
            .into_par_iter()
            .map_init(
                || (vec![0usize; n], Default::default()),
                |(idx, buffers), b| {
                    draws_of.draw(b, idx);
                    statistics(Some(idx), buffers)
                },
            )
            .collect::<Result<_, _>>()?;
        for (offset, values) in batch.into_iter().enumerate() {
            for (pair, v) in values.into_iter().enumerate() {
                null[pair][start + offset] = v;
            }
        }
        progress.checkpoint()?;
        progress.update("null distribution (low rank)", done as u64 + 1, batches);
    }
    Ok(KernelStatistics { observed, draws: null })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hypothesis::hsic_null::{HsicStatistic, permutation_stats_in, permutation_stats_of};
    use bke_linalg::DefaultBackend;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn uniform(n: usize, dim: usize, seed: u64) -> Points {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Points::new("p", (0..n * dim).map(|_| rng.random::<f64>()).collect(), dim).unwrap()
    }

    /// A dependent pair: `y = (sin 6x + noise, noise)`, `n = 300`.
    fn dependent(n: usize) -> (Points, Points) {
        let x = uniform(n, 1, 1);
        let noise = uniform(n, 2, 2);
        let y: Vec<f64> = (0..n)
            .flat_map(|i| [(6.0 * x.point(i)[0]).sin() + noise.point(i)[0], noise.point(i)[1]])
            .collect();
        (x, Points::new("y", y, 2).unwrap())
    }

    /// Kernels per variable in [`kernels`].
    const K: usize = 6;

    /// A narrow kernel the landmarks cannot resolve (exact), and a ladder of smooth ones (low rank,
    /// overlapping: their stack compresses), on each side.
    fn kernels() -> (Vec<WeightedKernel>, Vec<WeightedKernel>) {
        let ladder = |first: f64, from: f64| {
            std::iter::once(first)
                .chain((0..K - 1).map(move |j| from * 2f64.powi(j as i32)))
                .map(WeightedKernel::gaussian)
        };
        (ladder(0.002, 0.05).collect(), ladder(0.01, 0.15).collect())
    }

    impl Stacked {
        /// Kernel `k`'s factor as the null reads it, `A_k Q` (`r_k × n`).
        fn factor(&self, k: usize) -> Mat {
            let rows = self.ranges[k].clone();
            let q = self.basis_rows();
            Mat::from_fn(rows.len(), self.n, |t, i| match &self.coefficients {
                None => self.basis[(rows.start + t) * self.n + i],
                Some(a) => (0..q).map(|j| a[(rows.start + t, j)] * self.basis[j * self.n + i]).sum(),
            })
        }
    }

    fn gram(f: &Mat) -> Mat {
        let mut k = Mat::zeros(f.ncols(), f.ncols());
        DefaultBackend::gemm(1.0, f.as_ref(), Trans::Yes, f.as_ref(), Trans::No, 0.0, k.as_mut()).unwrap();
        k
    }

    fn close(a: &KernelStatistics, b: &KernelStatistics, tol: f64) {
        for (pair, (da, db)) in a.draws.iter().zip(&b.draws).enumerate() {
            let (oa, ob) = (a.observed[pair], b.observed[pair]);
            let scale = ob.abs() + db.iter().map(|v| v.abs()).sum::<f64>() / db.len() as f64;
            assert!((oa - ob).abs() <= tol * scale, "pair {pair}: observed {oa} vs {ob}");
            let gap = da.iter().zip(db).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max) / scale;
            assert!(gap <= tol, "pair {pair}: draws differ by {gap:e} of the scale");
        }
    }

    /// Every pair's observed statistic and draws equal the dense null (f64, the GEMM path of
    /// [`super::super::hsic_null`]) of the Gram matrices the plan stands for: the Nyström Gram
    /// matrices `Φ̄ᵀΦ̄`, `Ψ̄ᵀΨ̄` of a pair of low-rank kernels, the exact ones of a pair with an exact
    /// kernel — all three parts (exact `y`, exact `x` with the roles swapped, both low rank) with
    /// the same draws.
    #[test]
    fn low_rank_null_is_the_dense_null_of_the_planned_grams() {
        let (x, y) = dependent(300);
        let (xk, yk) = kernels();
        let (fx, fy) = plan::<DefaultBackend>(&x, &y, &xk, &yk, &()).unwrap();
        for f in [&fx, &fy] {
            assert!(
                f[0].is_none() && f[K - 1].is_some(),
                "the narrow kernel is exact, the wide one low rank"
            );
        }
        // the low-rank kernels' factors as the null reads them
        let low = |f: &[Option<Mat>]| (0..K).filter(|&i| f[i].is_some()).collect::<Vec<_>>();
        let stack = |f: &[Option<Mat>], pts: &Points| {
            Stacked::new(low(f).into_iter().map(|i| f[i].as_ref().unwrap()), canonical_indices(pts))
        };
        let (sx, sy) = cheapest::<DefaultBackend>(stack(&fx, &x), stack(&fy, &y)).unwrap();
        assert!(sx.coefficients.is_some() || sy.coefficients.is_some(), "a compressed side");
        let projected = |f: &[Option<Mat>], s: &Stacked| -> Vec<Option<Mat>> {
            let mut out: Vec<Option<Mat>> = vec![None; K];
            low(f).into_iter().enumerate().for_each(|(j, i)| out[i] = Some(s.factor(j)));
            out
        };
        let (px, py) = (projected(&fx, &sx), projected(&fy, &sy));
        let nystrom = |f: &[Option<Mat>], pts: &Points, ks: &[WeightedKernel]| -> Vec<Mat> {
            let mut d = Distances::new(pts);
            f.iter().zip(ks).map(|(f, k)| f.as_ref().map_or_else(|| d.gram(k), gram)).collect()
        };
        let exact = |pts: &Points, ks: &[WeightedKernel]| -> Vec<Mat> {
            let mut d = Distances::new(pts);
            ks.iter().map(|k| d.gram(k)).collect()
        };
        let null = |gx: &[Mat], gy: &[Mat]| {
            permutation_stats_in::<DefaultBackend, f64>(gx, gy, HsicStatistic::Biased, 70, 9, None, &())
                .unwrap()
        };
        let (low_ref, exact_ref) =
            (null(&nystrom(&px, &x, &xk), &nystrom(&py, &y, &yk)), null(&exact(&x, &xk), &exact(&y, &yk)));
        let low_pair = |i: usize| fx[i / K].is_some() && fy[i % K].is_some();
        let reference = KernelStatistics {
            observed: (0..K * K)
                .map(|i| if low_pair(i) { low_ref.observed[i] } else { exact_ref.observed[i] })
                .collect(),
            draws: (0..K * K)
                .map(|i| if low_pair(i) { &low_ref.draws[i] } else { &exact_ref.draws[i] }.clone())
                .collect(),
        };
        let low = low_rank_stats::<DefaultBackend>(&x, &y, &xk, &yk, 70, 9, &()).unwrap();
        close(&low, &reference, 1e-5);
        assert!(low.observed.iter().all(|&s| s > 0.0));
    }

    /// The statistic of the data with `y` relabelled by draw `b`'s permutation is draw `b` of the
    /// original data's null: the factors, their ranks and the exact kernels depend on each sample's
    /// values only, so the test is exact (module docs).
    #[test]
    fn a_draw_is_the_statistic_of_the_relabelled_data() {
        let (x, y) = dependent(300);
        let (xk, yk) = kernels();
        let stats = low_rank_stats::<DefaultBackend>(&x, &y, &xk, &yk, 3, 4, &()).unwrap();
        let mut idx = vec![0; 300];
        PermutationDraws { count: 3, seed: 4, inverse: false }.draw(2, &mut idx);
        let relabelled = y.select(&idx);
        let again = low_rank_stats::<DefaultBackend>(&x, &relabelled, &xk, &yk, 1, 4, &()).unwrap();
        for (pair, draws) in stats.draws.iter().enumerate() {
            let scale = stats.observed[pair].abs() + draws.iter().map(|v| v.abs()).sum::<f64>() / 3.0;
            let gap = (again.observed[pair] - draws[2]).abs() / scale;
            assert!(gap <= 1e-5, "pair {pair}: {} vs {} ({gap:e})", again.observed[pair], draws[2]);
        }
    }

    /// Permuting `y` by `π` and `x` by `π⁻¹` give the same statistics: the dense null with the roles
    /// of the variables swapped and inverse draws is the transpose of the plain one.
    #[test]
    fn swapped_roles_with_inverse_draws_give_the_same_null() {
        let (x, y) = dependent(60);
        let (xk, yk) = kernels();
        let ks: Vec<Mat> = xk.iter().map(|k| Distances::new(&x).gram(k)).collect();
        let ls: Vec<Mat> = yk.iter().map(|k| Distances::new(&y).gram(k)).collect();
        let draws = |inverse| PermutationDraws { count: 20, seed: 3, inverse };
        let biased = HsicStatistic::Biased;
        let plain =
            permutation_stats_of::<DefaultBackend, f64>(&ks, &ls, biased, draws(false), None, &()).unwrap();
        let swapped =
            permutation_stats_of::<DefaultBackend, f64>(&ls, &ks, biased, draws(true), None, &()).unwrap();
        let transposed = KernelStatistics {
            observed: (0..K * K).map(|i| swapped.observed[(i % K) * K + i / K]).collect(),
            draws: (0..K * K).map(|i| swapped.draws[(i % K) * K + i / K].clone()).collect(),
        };
        close(&transposed, &plain, 1e-12);
    }

    /// The compressed stack of an overlapping ladder: fewer basis rows than factor rows, orthonormal
    /// rows, every kernel within [`BASIS_DROPPED_VARIANCE`] of the smallest kernel's variance of its
    /// factor, and a null within a few thousandths of the uncompressed one on the same draws.
    #[test]
    fn compression_keeps_every_kernel_and_the_null() {
        let (x, y) = dependent(400);
        let (xk, yk) = kernels();
        let (fx, fy) = plan::<DefaultBackend>(&x, &y, &xk, &yk, &()).unwrap();
        let stack =
            |f: &[Option<Mat>], pts: &Points| Stacked::new(f.iter().flatten(), canonical_indices(pts));
        let (plain_x, plain_y) = (stack(&fx, &x), stack(&fy, &y));
        let c = plain_x.compressed::<DefaultBackend>().unwrap();
        let (r, q, n) = (c.rows(), c.basis_rows(), c.n);
        assert!(q < r, "{q} basis rows for {r} factor rows");
        for a in 0..q {
            for b in 0..q {
                let dot: f64 = (0..n).map(|i| c.basis[a * n + i] * c.basis[b * n + i]).sum();
                assert!((dot - f64::from(u8::from(a == b))).abs() < 1e-9, "Q Qᵀ [{a}, {b}] = {dot}");
            }
        }
        let variance = |f: &Mat| f.as_slice().iter().map(|v| v * v).sum::<f64>();
        let kept: Vec<&Mat> = fx.iter().flatten().collect();
        let smallest = kept.iter().map(|f| variance(f)).fold(f64::INFINITY, f64::min);
        for (k, f) in kept.iter().enumerate() {
            let g = c.factor(k);
            let lost: f64 = f.as_slice().iter().zip(g.as_slice()).map(|(u, v)| (u - v).powi(2)).sum();
            assert!(lost <= BASIS_DROPPED_VARIANCE * smallest * (1.0 + 1e-9), "kernel {k} loses {lost}");
        }
        let null =
            |sx: &Stacked, sy: &Stacked| low_rank_null::<DefaultBackend, f64>(sx, sy, 30, 2, &()).unwrap();
        let both = (c, plain_y.compressed::<DefaultBackend>().unwrap());
        let (exact, approx) = (null(&plain_x, &plain_y), null(&both.0, &both.1));
        close(&approx, &exact, 5e-3);
    }
}
