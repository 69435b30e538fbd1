//! Small numerical helpers every model crate uses: constants, dot products, log-sum-exp, and the
//! packing of positive hyperparameters on the log scale for unconstrained optimisers.

use crate::{CoreError, Kernel};
use rayon::prelude::*;

/// `ln(2π)`.
pub const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// `Σ_i a_i b_i` over the common length, in four interleaved partial sums (so the compiler can use
/// vector registers; a single running sum fixes the order and keeps it scalar).
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut acc = [0.0; 4];
    for (x, y) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        for l in 0..4 {
            acc[l] += x[l] * y[l];
        }
    }
    let tail = len - len % 4;
    let rest: f64 = a[tail..].iter().zip(&b[tail..]).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + rest
}

/// The sum of the terms of a parallel iterator in index order, whatever the number of threads: the
/// terms are computed in parallel, then added sequentially (rayon's own `sum` splits the work, and
/// so the order of the additions, by the pool size, which changes the last digits).
pub fn ordered_sum<I>(terms: I) -> f64
where
    I: rayon::iter::IndexedParallelIterator<Item = f64>,
{
    let terms: Vec<f64> = terms.collect();
    terms.iter().sum()
}
/// `log(eᵃ + eᵇ)`, exact when either is `−∞`.
#[inline]
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        return b;
    }
    if b == f64::NEG_INFINITY {
        return a;
    }
    let m = a.max(b);
    m + ((a - m).exp() + (b - m).exp()).ln()
}

/// `log Σ_i exp(v_i)`, shifted by the maximum so nothing overflows; `−∞` for an empty slice or all
/// `−∞`, `+∞` if any value is `+∞`.
pub fn log_sum_exp(v: &[f64]) -> f64 {
    let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + v.iter().map(|a| (a - m).exp()).sum::<f64>().ln()
}

/// Positive hyperparameters packed as one vector of logarithms for an unconstrained optimiser, and
/// read back in the same order with every value checked.
///
/// ```
/// use bke_core::numeric::LogParams;
/// let mut p = LogParams::default();
/// p.push(0.5);
/// p.extend(&[2.0, 3.0]);
/// let v = p.into_vec();
/// let mut r = LogParams::reader(&v);
/// assert!((r.take("sigma").unwrap() - 0.5).abs() < 1e-15);
/// assert_eq!(r.take_n("lengthscale", 2).unwrap().len(), 2);
/// r.finish().unwrap();
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogParams(Vec<f64>);

impl LogParams {
    /// Appends `ln v`.
    pub fn push(&mut self, v: f64) {
        self.0.push(v.ln());
    }

    /// Appends `ln v` for each value.
    pub fn extend(&mut self, vs: &[f64]) {
        self.0.extend(vs.iter().map(|v| v.ln()));
    }

    /// Appends a kernel's log-hyperparameters ([`Kernel::log_params`]).
    pub fn push_kernel(&mut self, k: &Kernel) {
        self.0.extend(k.log_params());
    }

    /// The packed logarithms.
    pub fn into_vec(self) -> Vec<f64> {
        self.0
    }

    /// A reader of packed logarithms `p`.
    pub fn reader(p: &[f64]) -> LogParamReader<'_> {
        LogParamReader { rest: p, taken: 0 }
    }
}

/// Reads log-scale parameters back in packing order (see [`LogParams`]).
#[derive(Debug)]
pub struct LogParamReader<'a> {
    rest: &'a [f64],
    taken: usize,
}

impl LogParamReader<'_> {
    fn next_raw(&mut self, name: &str, k: usize) -> Result<&[f64], CoreError> {
        if self.rest.len() < k {
            return Err(CoreError::DimensionMismatch {
                what: format!("log-parameter vector (reading {name})"),
                expected: self.taken + k,
                found: self.taken + self.rest.len(),
            });
        }
        let (head, tail) = self.rest.split_at(k);
        self.rest = tail;
        self.taken += k;
        Ok(head)
    }

    /// The next value `exp(p_i)`, which must be finite and positive.
    pub fn take(&mut self, name: &str) -> Result<f64, CoreError> {
        Ok(self.take_n(name, 1)?[0])
    }

    /// The next `k` values `exp(p_i)`.
    pub fn take_n(&mut self, name: &str, k: usize) -> Result<Vec<f64>, CoreError> {
        let vs: Vec<f64> = self.next_raw(name, k)?.iter().map(|v| v.exp()).collect();
        for &v in &vs {
            crate::check_positive(name, v)?;
        }
        Ok(vs)
    }

    /// The next kernel of the same family and shape as `like`.
    pub fn kernel(&mut self, like: &Kernel) -> Result<Kernel, CoreError> {
        let raw = self.next_raw("kernel hyperparameters", like.n_params())?;
        like.with_log_params(raw)
    }

    /// Errors if values are left over.
    pub fn finish(self) -> Result<(), CoreError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(CoreError::DimensionMismatch {
                what: "log-parameter vector".into(),
                expected: self.taken,
                found: self.taken + self.rest.len(),
            })
        }
    }
}

/// Below this many multiply-adds (and kernel evaluations, counted as 16) a loop runs on the calling
/// thread: handing it to the thread pool costs more than it saves.
pub const PARALLEL_MIN_WORK: usize = 1 << 16;

/// Greedy pivoted Cholesky (Fine & Scheinberg 2001) of the `m × m` positive semi-definite matrix
/// with entries `k(i, j)`: the largest remaining diagonal is the next pivot, until it falls to
/// `tolerance` or `max_rank` pivots are taken. Returns the pivots in order and the rows `g[i]` of the
/// factor `G` (`K ≈ GGᵀ`, exact on the pivots), `O(m r²)` with `k` evaluated once per entry of the
/// pivots' columns. Each new column is `(k(·, p) − Σ_j G_{pj} G_{·j}) / √d_p`, the sum taken column
/// by column (contiguous, so it vectorises) in pivot order; large columns are computed in parallel
/// blocks of rows, each row in the same order, so the factor does not depend on the thread count.
pub fn pivoted_cholesky(
    m: usize,
    k: impl Fn(usize, usize) -> f64 + Sync,
    tolerance: f64,
    max_rank: usize,
) -> (Vec<usize>, Vec<Vec<f64>>) {
    const ROWS_PER_TASK: usize = 256;
    let mut residual: Vec<f64> = (0..m).map(|i| k(i, i)).collect();
    let mut columns: Vec<Vec<f64>> = Vec::new();
    let mut order = Vec::new();
    while order.len() < max_rank.min(m) {
        let (p, &largest) = residual.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).expect("m ≥ 1");
        if !(largest > tolerance) {
            break;
        }
        let root = largest.sqrt();
        let fill = |first: usize, block: &mut [f64]| {
            block.iter_mut().enumerate().for_each(|(i, v)| *v = k(first + i, p));
            for c in &columns {
                let (f, rows) = (c[p], &c[first..first + block.len()]);
                block.iter_mut().zip(rows).for_each(|(v, a)| *v -= f * a);
            }
            block.iter_mut().for_each(|v| *v /= root);
        };
        let mut column = vec![0.0; m];
        // a small column is cheaper than waking the thread pool (once per pivot)
        if m * (order.len() + 16) < PARALLEL_MIN_WORK {
            fill(0, &mut column);
        } else {
            column
                .par_chunks_mut(ROWS_PER_TASK)
                .enumerate()
                .for_each(|(b, block)| fill(b * ROWS_PER_TASK, block));
        }
        for (i, (r, c)) in residual.iter_mut().zip(&column).enumerate() {
            *r = if i == p { 0.0 } else { (*r - c * c).max(0.0) };
        }
        columns.push(column);
        order.push(p);
    }
    let rows = (0..m).map(|i| columns.iter().map(|c| c[i]).collect()).collect();
    (order, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_sum_is_thread_invariant() {
        use rayon::prelude::*;
        let terms: Vec<f64> = (0..10_000).map(|i| ((i as f64) * 0.37).sin() * 10f64.powi(i % 17)).collect();
        let sum = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| ordered_sum(terms.par_iter().copied()))
        };
        let one = sum(1);
        assert_eq!(one.to_bits(), sum(2).to_bits());
        assert_eq!(one.to_bits(), sum(3).to_bits());
        assert_eq!(one.to_bits(), terms.iter().sum::<f64>().to_bits());
    }

    /// `GGᵀ` reproduces a full-rank matrix (pivots chosen by the largest residual), stops at the
    /// tolerance on a rank-3 one, and the parallel path (large `m`) matches one thread bit for bit.
    #[test]
    fn pivoted_cholesky_reconstructs_and_is_thread_invariant() {
        let m = 40;
        let x: Vec<f64> = (0..m).map(|i| (i as f64 * 0.77).sin() * 3.0).collect();
        let k = |i: usize, j: usize| (-(x[i] - x[j]).powi(2) / 0.5).exp() + if i == j { 0.1 } else { 0.0 };
        let (order, g) = pivoted_cholesky(m, k, 1e-12, m);
        assert_eq!(order.len(), m);
        assert!(order.windows(2).all(|w| w[0] != w[1]));
        for i in 0..m {
            for j in 0..m {
                assert!((dot(&g[i], &g[j]) - k(i, j)).abs() < 1e-10, "({i}, {j})");
            }
        }
        let f = |i: usize, d: usize| (i as f64 * 0.3 * (d + 1) as f64).cos();
        let low = |i: usize, j: usize| (0..3).map(|d| f(i, d) * f(j, d)).sum::<f64>();
        assert_eq!(pivoted_cholesky(m, low, 1e-9, m).0.len(), 3);
        let big = 3000;
        let y: Vec<f64> = (0..big).map(|i| (i as f64 * 0.013).sin()).collect();
        let kb = |i: usize, j: usize| (-(y[i] - y[j]).powi(2) / 0.02).exp();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| pivoted_cholesky(big, kb, 1e-8, 40))
        };
        let (one, two) = (run(1), run(2));
        assert_eq!(one.0, two.0);
        assert!(one.1.iter().flatten().zip(two.1.iter().flatten()).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    #[test]
    fn log_sum_exp_is_stable() {
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert!((log_sum_exp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((log_add_exp(-1000.0, -1000.0) - (-1000.0 + 2f64.ln())).abs() < 1e-12);
        assert_eq!(log_add_exp(f64::NEG_INFINITY, 3.0), 3.0);
        assert!((LN_2PI - (2.0 * std::f64::consts::PI).ln()).abs() < 1e-15);
    }

    #[test]
    fn log_params_round_trip_and_check() {
        let k = Kernel::se_ard(vec![0.5, 2.0]).unwrap();
        let mut p = LogParams::default();
        p.push_kernel(&k);
        p.push(0.1);
        let v = p.into_vec();
        let mut r = LogParams::reader(&v);
        assert_eq!(r.kernel(&k).unwrap().lengthscales().len(), 2);
        assert!((r.take("sigma").unwrap() - 0.1).abs() < 1e-15);
        r.finish().unwrap();
        let mut short = LogParams::reader(&v[..1]);
        assert!(short.kernel(&k).is_err());
        let mut over = LogParams::reader(&[800.0]);
        assert!(over.take("sigma").is_err());
        assert!(LogParams::reader(&v).finish().is_err());
    }
}
