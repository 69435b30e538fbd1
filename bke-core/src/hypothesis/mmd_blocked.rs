//! The single-kernel MMD test on large samples without the pooled Gram matrix: the statistic, its
//! permutation null and the gamma null's moments from tiles of `K` recomputed from the points, in
//! memory linear in the pooled size `N` (the math of the nulls is in [`super::mmd`]'s module docs).
//!
//! # Tiles
//! The pooled sample is cut into blocks of [`Blocking::tile`] points. `K` is symmetric, so only the
//! tiles `K_IJ` with `I ≤ J` are evaluated, each once per pass; a tile off the diagonal stands for
//! itself and its transpose. For labellings `u_1…u_L` (indicators of the points called `x`)
//! `q_b = u_bᵀKu_b = Σ_{I≤J} w_IJ u_{b,I}ᵀ K_IJ u_{b,J}`, `w_IJ = 2` off the diagonal and 1 on it,
//! which is one GEMM `K_IJ · U_J` per tile (`U_J` the `J` rows of the `L` indicators) followed by
//! `O(|I| L)` sums. The row sums `r = K1` follow from the same tiles (`K_IJ 1` into `r_I`,
//! `K_IJᵀ 1` into `r_J` off the diagonal). With `q`, `s = uᵀr`, `d_x = uᵀ diag K`, `T = 1ᵀr` and
//! `D = tr K` the statistics are those of the dense path ([`super::mmd_statistic::from_sums`]).
//!
//! # Passes and memory
//! The relabellings are taken [`Blocking::labels`] at a time (at least one), as one byte per pooled
//! point each; every batch is one pass over the tiles, the first batch carrying the observed labelling
//! and the row sums. Memory: the points, `N` bytes per relabelling of a batch, one tile (`c²`), the
//! tile's rows of the indicators and of the GEMM's result (`2cL`), and `O(N)` sums — linear in `N` for
//! a fixed batch. Work: `N²/2` kernel evaluations per pass and `N² L` flops for the GEMMs (half those
//! of the dense path's `K·U`, by symmetry).
//!
//! # The contract
//! The draws are the dense path's: relabelling `b` is the `n`-subset drawn from stream `(seed, b)`
//! ([`super::mmd_null::Relabellings`]), so for the same seed the null sample equals the dense one up
//! to the rounding of the sums (≈ 1e-15 relative) and the p-value is the same. Every sum has a fixed
//! order, so the results do not depend on the number of threads; the GEMM is the backend's.
//! The gamma null takes a second pass: `‖HKH‖²_F = Σ_ij (K_ij − r_i/N − r_j/N + T/N²)²` needs the row
//! sums first, and is summed term by term as in the dense path rather than from the expansion
//! `Σ K² − 2Σr²/N + T²/N²`, whose terms cancel where the kernel is nearly constant.

use super::kernels::WeightedKernel;
use super::mmd_null::draw_subset;
use super::mmd_statistic::{MmdStatistic, from_sums};
use super::resampling::{check_draws, choice, draw_rng};
use crate::{CoreError, Points, Progress};
use bke_linalg::{Backend, MatMut, MatRef, Trans};
use rayon::prelude::*;
use std::ops::Range;

/// When and how the single-kernel test takes the blocked path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocking {
    /// Pooled sizes above this take the blocked path (the dense Gram matrix and its distances need
    /// `16 N²` bytes: 268 MB at the default 4096).
    pub above: usize,
    /// Points per tile side `c` (default 1024: tiles of 8 MB).
    pub tile: usize,
    /// Bytes of relabelling indicators per pass (`N` per relabelling; default 64 MiB): the number of
    /// relabellings per pass is this over `N`, at least 1.
    pub label_bytes: usize,
}

impl Default for Blocking {
    fn default() -> Self {
        Self { above: 4096, tile: 1024, label_bytes: 1 << 26 }
    }
}

impl Blocking {
    /// Whether `pooled` points take the blocked path.
    pub fn applies(&self, pooled: usize) -> bool {
        pooled > self.above
    }

    /// Relabellings per pass for `pooled` points: [`Blocking::label_bytes`] over `N` bytes each,
    /// and over `16 c` (a tile's rows of the indicators and of the GEMM's result, `f64`).
    pub fn labels(&self, pooled: usize) -> usize {
        (self.label_bytes / pooled.max(self.tile.saturating_mul(16)).max(1)).max(1)
    }
}

/// The pooled sample (first `n` points are `x`) and the kernel of a blocked single-kernel test.
#[derive(Debug)]
pub struct BlockedMmd<'a> {
    pooled: &'a Points,
    n: usize,
    kernel: WeightedKernel,
    blocking: Blocking,
    stage: String,
}

/// What one pass over the tiles gives: each labelling's `q`, and the row sums when asked for.
struct Pass {
    q: Vec<f64>,
    rowsum: Option<Vec<f64>>,
    /// `Σ_ij K_ij²`, with the row sums.
    square_sum: f64,
}

/// Errors unless every statistic is finite (kernel values are in `[0, 1]` for finite points, so this
/// only fails on data the readers let through by mistake).
fn check_finite(observed: f64, null: &[f64]) -> Result<(), CoreError> {
    match std::iter::once(&observed).chain(null).find(|v| !v.is_finite()) {
        Some(&v) => Err(CoreError::InvalidParameter {
            name: "MMD statistic".into(),
            value: v,
            reason: "is not finite: the data or the lengthscale hold a non-finite or overflowing value; \
                     check the input columns and rescale them"
                .into(),
        }),
        None => Ok(()),
    }
}

/// A stage of progress: its name, and which pass over the tiles of how many.
type Stage<'s> = (&'s str, usize, usize);

/// `T = 1ᵀK1` and `D = tr K`.
#[derive(Debug, Clone, Copy)]
struct Sums {
    total: f64,
    trace: f64,
}

impl Sums {
    fn new(rowsum: &[f64], diag: &[f64]) -> Self {
        Self { total: rowsum.iter().sum(), trace: diag.iter().sum() }
    }
}

/// The observed statistic and the relabellings' statistics of a blocked test.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockedNull {
    /// The statistic of the observed labelling.
    pub observed: f64,
    /// The statistics of the relabellings, in draw order.
    pub null: Vec<f64>,
    /// `√(Σ_{i≠j} K_ij²)`, MMD-FUSE's relabelling-invariant normaliser ([`super::mmd`]).
    pub off_diagonal_norm: f64,
}

impl<'a> BlockedMmd<'a> {
    /// Checks the sizes and the settings: `n ≥ 2` points called `x`, at least 2 others, a tile of at
    /// least one point, and a kernel with a positive finite lengthscale.
    pub fn new(
        pooled: &'a Points,
        n: usize,
        kernel: WeightedKernel,
        blocking: Blocking,
    ) -> Result<Self, CoreError> {
        let big_n = pooled.len();
        if n < 2 || big_n < n + 2 {
            return Err(CoreError::Empty {
                what: format!("MMD with n = {n} of N = {big_n} pooled points"),
                needed: 2,
            });
        }
        if blocking.tile == 0 {
            return Err(choice("a tile of 0 points", "the blocked MMD needs tiles of at least one point"));
        }
        if !(kernel.lengthscale > 0.0 && kernel.lengthscale.is_finite()) {
            return Err(CoreError::InvalidParameter {
                name: "kernel lengthscale".into(),
                value: kernel.lengthscale,
                reason: "must be positive and finite".into(),
            });
        }
        Ok(Self { pooled, n, kernel, blocking, stage: "permutation null".into() })
    }

    /// The same, reporting the permutation null's passes as the stage `stage` (default "permutation
    /// null").
    pub fn named(mut self, stage: &str) -> Self {
        self.stage = stage.into();
        self
    }

    /// The observed statistic and the null statistics of the relabellings `range` (draw `b` from
    /// stream `(seed, b)`), in passes of [`Blocking::labels`] relabellings.
    pub fn permutation<B: Backend>(
        &self,
        statistic: MmdStatistic,
        range: Range<usize>,
        seed: u64,
        progress: &dyn Progress,
    ) -> Result<BlockedNull, CoreError> {
        if statistic == MmdStatistic::Linear {
            return Err(choice(
                "statistic 'linear' in the blocked MMD",
                "the linear-time statistic never forms a Gram matrix: it has its own nulls",
            ));
        }
        check_draws(range.len())?;
        let big_n = self.pooled.len();
        let per_pass = self.blocking.labels(big_n);
        // the first pass carries the observed labelling as well
        let passes = (range.len() + 1).div_ceil(per_pass);
        let diag = self.diagonal();
        let mut observed = f64::NAN;
        let mut rowsum = Vec::new();
        let mut square_sum = 0.0;
        let mut null = Vec::with_capacity(range.len());
        let mut next = range.start;
        let stage = match passes {
            1 => self.stage.clone(),
            _ => format!("{} ({passes} passes over the Gram matrix)", self.stage),
        };
        for pass in 0..passes {
            let first = pass == 0;
            let count = if first { per_pass - 1 } else { per_pass }.min(range.end - next);
            let draws = next..next + count;
            let labels = self.labels(first, draws.clone(), seed);
            let out =
                self.pass::<B>(&labels, usize::from(first) + count, first, (&stage, pass, passes), progress)?;
            if let Some(r) = out.rowsum {
                rowsum = r;
                square_sum = out.square_sum;
            }
            let sums = Sums::new(&rowsum, &diag);
            let stats = out.q.iter().enumerate().map(|(c, &q)| {
                let member = &labels[c * big_n..(c + 1) * big_n];
                let (s, dx) = member
                    .iter()
                    .zip(rowsum.iter().zip(&diag))
                    .filter(|(m, _)| **m != 0)
                    .fold((0.0, 0.0), |(s, dx), (_, (r, d))| (s + r, dx + d));
                self.statistic(q, s, dx, sums, statistic)
            });
            let stats: Vec<f64> = stats.collect();
            if first {
                observed = stats[0];
                null.extend_from_slice(&stats[1..]);
            } else {
                null.extend_from_slice(&stats);
            }
            next += count;
        }
        check_finite(observed, &null)?;
        let diagonal_squares: f64 = diag.iter().map(|d| d * d).sum();
        let off_diagonal_norm = (square_sum - diagonal_squares).max(0.0).sqrt();
        Ok(BlockedNull { observed, null, off_diagonal_norm })
    }

    /// The statistic of the observed labelling, in one pass.
    pub fn observed<B: Backend>(
        &self,
        statistic: MmdStatistic,
        progress: &dyn Progress,
    ) -> Result<f64, CoreError> {
        Ok(self.observed_and_rowsum::<B>(statistic, ("MMD statistic", 0, 1), progress)?.0)
    }

    fn observed_and_rowsum<B: Backend>(
        &self,
        statistic: MmdStatistic,
        stage: Stage<'_>,
        progress: &dyn Progress,
    ) -> Result<(f64, Vec<f64>), CoreError> {
        if statistic == MmdStatistic::Linear {
            return Err(choice(
                "statistic 'linear' in the blocked MMD",
                "the linear-time statistic never forms a Gram matrix: it has its own nulls",
            ));
        }
        let labels = self.labels(true, 0..0, 0);
        let out = self.pass::<B>(&labels, 1, true, stage, progress)?;
        let rowsum = out.rowsum.unwrap_or_default();
        let diag = self.diagonal();
        let (s, dx) = (rowsum[..self.n].iter().sum(), diag[..self.n].iter().sum());
        let observed = self.statistic(out.q[0], s, dx, Sums::new(&rowsum, &diag), statistic);
        Ok((observed, rowsum))
    }

    /// The observed statistic and the mean and variance of the biased statistic under relabelling
    /// (the gamma null's moments, [`super::mmd`]), in two passes (module docs).
    pub fn gamma<B: Backend>(
        &self,
        statistic: MmdStatistic,
        progress: &dyn Progress,
    ) -> Result<(f64, f64, f64), CoreError> {
        let big_n = self.pooled.len();
        let (observed, rowsum) = self.observed_and_rowsum::<B>(statistic, ("gamma null", 0, 2), progress)?;
        let sums = Sums::new(&rowsum, &self.diagonal());
        let nf = big_n as f64;
        let Sums { total, trace } = sums;
        let g = total / (nf * nf);
        let mut fro2 = 0.0;
        self.tiles(("gamma null", 1, 2), progress, |rows, cols, k| {
            let w = if rows.start == cols.start { 1.0 } else { 2.0 };
            let ci = rows.len();
            let tile: f64 = cols
                .clone()
                .zip(k.chunks(ci))
                .map(|(j, col)| {
                    let cj = rowsum[j] / nf;
                    col.iter()
                        .zip(&rowsum[rows.clone()])
                        .map(|(v, ri)| (v - ri / nf - cj + g).powi(2))
                        .sum::<f64>()
                })
                .sum();
            fro2 += w * tile;
            Ok(())
        })?;
        let m = big_n - self.n;
        let c = nf / (self.n as f64 * m as f64 * (nf - 1.0));
        Ok((observed, c * (trace - total / nf), 2.0 * c * c * fro2))
    }

    fn statistic(&self, q: f64, s: f64, dx: f64, sums: Sums, stat: MmdStatistic) -> f64 {
        from_sums(q, s, dx, self.n, self.pooled.len() - self.n, sums.total, sums.trace, stat)
    }

    /// `k(z_i, z_i)` for every pooled point.
    fn diagonal(&self) -> Vec<f64> {
        (0..self.pooled.len()).map(|i| self.kernel.eval(self.pooled.point(i), self.pooled.point(i))).collect()
    }

    /// One byte per pooled point and labelling (1: called `x`): the observed labelling first when
    /// `observed`, then the draws `draws`.
    fn labels(&self, observed: bool, draws: Range<usize>, seed: u64) -> Vec<u8> {
        let big_n = self.pooled.len();
        let count = usize::from(observed) + draws.len();
        let mut labels = vec![0u8; big_n * count];
        if observed {
            labels[..self.n].fill(1);
        }
        let start = usize::from(observed) * big_n;
        labels[start..].par_chunks_mut(big_n).enumerate().for_each_init(
            || vec![0usize; big_n],
            |idx, (c, member)| {
                for &i in draw_subset(&mut draw_rng(seed, draws.start + c), idx, self.n) {
                    member[i] = 1;
                }
            },
        );
        labels
    }

    /// One pass over the tiles: `q` of each of the `count` labellings in `labels`, and the row sums
    /// when `with_rowsum`.
    fn pass<B: Backend>(
        &self,
        labels: &[u8],
        count: usize,
        with_rowsum: bool,
        stage: Stage<'_>,
        progress: &dyn Progress,
    ) -> Result<Pass, CoreError> {
        let big_n = self.pooled.len();
        let c = self.blocking.tile.min(big_n);
        let mut q = vec![0.0; count];
        let mut rowsum = with_rowsum.then(|| vec![0.0; big_n]);
        let mut square_sum = 0.0;
        // the J rows of the indicators (c × count) and the GEMM's result K_IJ·U_J (c × count)
        let mut u = vec![0.0; c * count];
        let mut g = vec![0.0; c * count];
        self.tiles(stage, progress, |rows, cols, k| {
            let (ci, cj) = (rows.len(), cols.len());
            if rows.start == 0 {
                u[..cj * count].par_chunks_mut(cj).enumerate().for_each(|(b, col)| {
                    let member = &labels[b * big_n + cols.start..b * big_n + cols.end];
                    col.iter_mut().zip(member).for_each(|(v, &m)| *v = f64::from(m));
                });
            }
            let w = if rows.start == cols.start { 1.0 } else { 2.0 };
            if let Some(r) = rowsum.as_mut() {
                square_sum += w * k.iter().map(|v| v * v).sum::<f64>();
                for (j, col) in cols.clone().zip(k.chunks(ci)) {
                    if rows.start != cols.start {
                        r[j] += col.iter().sum::<f64>();
                    }
                    r[rows.clone()].iter_mut().zip(col).for_each(|(ri, v)| *ri += v);
                }
            }
            let kt = MatRef::from_slice(k, ci, cj, ci)?;
            let ut = MatRef::from_slice(&u[..cj * count], cj, count, cj)?;
            let gt = MatMut::from_slice(&mut g[..ci * count], ci, count, ci)?;
            B::gemm(1.0, kt, Trans::No, ut, Trans::No, 0.0, gt)?;
            let g = &g;
            q.par_iter_mut().enumerate().with_min_len(32).for_each(|(b, qb)| {
                let member = &labels[b * big_n + rows.start..b * big_n + rows.end];
                let col = &g[b * ci..(b + 1) * ci];
                let sum: f64 = member.iter().zip(col).filter(|(m, _)| **m != 0).map(|(_, v)| v).sum();
                *qb += w * sum;
            });
            Ok(())
        })?;
        Ok(Pass { q, rowsum, square_sum })
    }

    /// Calls `f(I, J, K_IJ)` for every tile `I ≤ J` (`K_IJ` column-major, `|I| × |J|`), column
    /// blocks in order and within each the row blocks from the first, reporting one step per tile
    /// (pass `pass` of `passes` under the stage's name: one count over all passes).
    fn tiles(
        &self,
        (stage, pass, passes): Stage<'_>,
        progress: &dyn Progress,
        mut f: impl FnMut(Range<usize>, Range<usize>, &[f64]) -> Result<(), CoreError>,
    ) -> Result<(), CoreError> {
        let big_n = self.pooled.len();
        let c = self.blocking.tile.min(big_n);
        let blocks = big_n.div_ceil(c);
        let per_pass = (blocks * (blocks + 1) / 2) as u64;
        let total = per_pass * passes as u64;
        let mut done = per_pass * pass as u64;
        let mut k = vec![0.0; c * c];
        for jb in 0..blocks {
            let cols = jb * c..((jb + 1) * c).min(big_n);
            for ib in 0..=jb {
                progress.checkpoint()?;
                progress.update(stage, done, total);
                done += 1;
                let rows = ib * c..((ib + 1) * c).min(big_n);
                let ci = rows.len();
                let tile = &mut k[..ci * cols.len()];
                tile.par_chunks_mut(ci).zip(cols.clone()).for_each(|(col, j)| {
                    let b = self.pooled.point(j);
                    col.iter_mut()
                        .zip(rows.clone())
                        .for_each(|(v, i)| *v = self.kernel.eval(self.pooled.point(i), b));
                });
                f(rows, cols.clone(), tile)?;
            }
        }
        progress.update(stage, done, total);
        Ok(())
    }
}
