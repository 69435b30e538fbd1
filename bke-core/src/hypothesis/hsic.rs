//! The kernel independence test with the Hilbert–Schmidt independence criterion (Gretton et al. 2005,
//! 2008; seed 000 §2.2): `H₀: X ⫫ Y` from paired observations `(x_i, y_i)`, `i = 1…n`, with kernels
//! `k` on `x` and `l` on `y` (Gram matrices `K`, `L`).
//!
//! Statistics ([`HsicStatistic`]):
//! - biased (default; Gretton et al. 2008): `HSIC_b = tr(KHLH)/n² = Σ_ij K̄_ij L_ij / n²`,
//!   `K̄ = HKH`, `H = I − 11ᵀ/n`;
//! - unbiased (Song et al. 2012, Thm. 2): `HSIC_u = [tr(K̃L̃) + 1ᵀK̃1·1ᵀL̃1/((n−1)(n−2))
//!   − 2·1ᵀK̃L̃1/(n−2)] / (n(n−3))`, `K̃`, `L̃` with zeroed diagonals (needs `n ≥ 4`).
//!
//! Permutation null: `y` is permuted against `x`, `L → L_π = (L_{π(i)π(j)})`. The centred `K̄` (or
//! `K̃`, its row sums `a = K̃1` and `b = L̃1`) is computed once; each draw is then one symmetric pass
//! `Σ_ij K̄_ij L_{π(i)π(j)}` (half the pairs) plus, for the unbiased statistic, `Σ_i a_i b_{π(i)}`,
//! with no allocation per draw. Draw `b` uses stream `(seed, b)`: identical for any thread count.
//!
//! Gamma null (Gretton et al. 2008, §4): `n·HSIC_b` is approximately Gamma with mean
//! `E = (d_x − μ_x)(d_y − μ_y)` and variance
//! `Var = 72(n−4)(n−5)/((n)_4) · 1/(n(n−1)) Σ_{i≠j} (K̄_ij L̄_ij / 6)² · n²`, where `μ_x` is the mean
//! off-diagonal entry of `K` and `d_x` the mean diagonal entry (1 for bke's unit-amplitude kernels, which
//! is the paper's `1 + μ_xμ_y − μ_x − μ_y`). Needs `n ≥ 6`. For the unbiased statistic (null mean ≈ 0)
//! the p-value is `P(G ≥ n·HSIC_u + E)`.

use super::mmd::draw_permutation;
use super::{NullDistribution, TestOutcome, check_alpha, check_draws, choice, draw_rng, invalid};
use crate::special::gamma_sf;
use crate::{CoreError, Kernel, Points};
use bke_linalg::Mat;
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

    fn min_points(self) -> usize {
        match self {
            HsicStatistic::Biased => 2,
            HsicStatistic::Unbiased => 4,
        }
    }
}

/// Parameters of the HSIC independence test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HsicParams {
    /// The estimator. Default [`HsicStatistic::Biased`].
    pub statistic: HsicStatistic,
    /// The null: [`NullDistribution::Permutation`] (default) or [`NullDistribution::Gamma`].
    pub null: NullDistribution,
    /// Number of permutations `B`. Default 1000.
    pub permutations: usize,
    /// Test level α ∈ (0, 1). Default 0.05.
    pub alpha: f64,
    /// Seed of the permutation streams. Default 0.
    pub seed: u64,
}

impl Default for HsicParams {
    fn default() -> Self {
        Self {
            statistic: HsicStatistic::Biased,
            null: NullDistribution::Permutation,
            permutations: 1000,
            alpha: 0.05,
            seed: 0,
        }
    }
}

impl HsicParams {
    /// Validates α, `B` and the null (permutation or gamma).
    pub fn check(&self) -> Result<(), CoreError> {
        check_alpha(self.alpha)?;
        match self.null {
            NullDistribution::Permutation => check_draws(self.permutations),
            NullDistribution::Gamma => Ok(()),
            other => Err(choice(
                &format!("null distribution '{}' for HSIC", other.name()),
                "the HSIC test supports the permutation and gamma nulls",
            )),
        }
    }

    fn min_points(&self) -> usize {
        let g = if self.null == NullDistribution::Gamma { 6 } else { 0 };
        self.statistic.min_points().max(g)
    }
}

/// The centred Gram matrix `HKH`.
fn centre(k: &Mat) -> Mat {
    let n = k.nrows();
    let nf = n as f64;
    let r: Vec<f64> = (0..n).map(|j| k.col(j).iter().sum::<f64>() / nf).collect();
    let g = r.iter().sum::<f64>() / nf;
    Mat::from_fn(n, n, |i, j| k[(i, j)] - r[i] - r[j] + g)
}

fn check_grams(k: &Mat, l: &Mat, needed: usize) -> Result<usize, CoreError> {
    for (what, m) in [("Gram matrix of x", k), ("Gram matrix of y", l)] {
        if m.nrows() != m.ncols() {
            return Err(CoreError::DimensionMismatch {
                what: format!("{what} columns"),
                expected: m.nrows(),
                found: m.ncols(),
            });
        }
        if let Some((i, j)) = m.as_ref().find_non_finite() {
            return Err(CoreError::NonFinite { what: what.into(), row: i, col: j, value: m[(i, j)] });
        }
    }
    if k.nrows() != l.nrows() {
        return Err(CoreError::DimensionMismatch {
            what: "number of y observations (HSIC needs paired samples)".into(),
            expected: k.nrows(),
            found: l.nrows(),
        });
    }
    if k.nrows() < needed {
        return Err(CoreError::Empty { what: format!("paired sample ({} points)", k.nrows()), needed });
    }
    Ok(k.nrows())
}

/// Precomputed pieces for evaluating the statistic under any permutation of `y`.
struct HsicCore {
    statistic: HsicStatistic,
    /// `HKH` (biased) or `K̃` (unbiased).
    kc: Mat,
    /// `L` (biased) or `L̃` (unbiased).
    l: Mat,
    /// `K̃1` and `L̃1` (unbiased only).
    a: Vec<f64>,
    b: Vec<f64>,
    /// `1ᵀK̃1 · 1ᵀL̃1 / ((n−1)(n−2))` (unbiased only).
    const_term: f64,
}

impl HsicCore {
    fn new(k: &Mat, l: &Mat, statistic: HsicStatistic) -> Self {
        let n = k.nrows();
        match statistic {
            HsicStatistic::Biased => {
                Self { statistic, kc: centre(k), l: l.clone(), a: Vec::new(), b: Vec::new(), const_term: 0.0 }
            }
            HsicStatistic::Unbiased => {
                let zero_diag = |m: &Mat| Mat::from_fn(n, n, |i, j| if i == j { 0.0 } else { m[(i, j)] });
                let (kt, lt) = (zero_diag(k), zero_diag(l));
                let a: Vec<f64> = (0..n).map(|j| kt.col(j).iter().sum()).collect();
                let b: Vec<f64> = (0..n).map(|j| lt.col(j).iter().sum()).collect();
                let nf = n as f64;
                let const_term = a.iter().sum::<f64>() * b.iter().sum::<f64>() / ((nf - 1.0) * (nf - 2.0));
                Self { statistic, kc: kt, l: lt, a, b, const_term }
            }
        }
    }

    /// The statistic with `y` permuted by `perm` (`perm = identity` for the observed one).
    fn eval(&self, perm: &[usize]) -> f64 {
        let n = perm.len();
        let nf = n as f64;
        let mut s = 0.0;
        for j in 0..n {
            let kcol = self.kc.col(j);
            let lcol = self.l.col(perm[j]);
            let mut off = 0.0;
            for i in 0..j {
                off += kcol[i] * lcol[perm[i]];
            }
            s += 2.0 * off + kcol[j] * lcol[perm[j]];
        }
        match self.statistic {
            HsicStatistic::Biased => s / (nf * nf),
            HsicStatistic::Unbiased => {
                let cross: f64 = self.a.iter().zip(perm).map(|(ai, &p)| ai * self.b[p]).sum();
                (s + self.const_term - 2.0 * cross / (nf - 2.0)) / (nf * (nf - 3.0))
            }
        }
    }
}

/// HSIC from the Gram matrices `K` (of `x`) and `L` (of `y`).
pub fn hsic_from_grams(k: &Mat, l: &Mat, statistic: HsicStatistic) -> Result<f64, CoreError> {
    let n = check_grams(k, l, statistic.min_points())?;
    let identity: Vec<usize> = (0..n).collect();
    Ok(HsicCore::new(k, l, statistic).eval(&identity))
}

fn check_pair(x: &Points, y: &Points, needed: usize) -> Result<(), CoreError> {
    x.check_len("sample x", needed)?;
    if x.len() != y.len() {
        return Err(CoreError::DimensionMismatch {
            what: "number of y observations (HSIC needs paired samples: row i of x goes with row i of y)"
                .into(),
            expected: x.len(),
            found: y.len(),
        });
    }
    Ok(())
}

/// HSIC between paired samples `x` and `y` under kernels `kx` and `ky`.
pub fn hsic_statistic(
    x: &Points,
    y: &Points,
    kx: &Kernel,
    ky: &Kernel,
    statistic: HsicStatistic,
) -> Result<f64, CoreError> {
    check_pair(x, y, statistic.min_points())?;
    hsic_from_grams(&kx.gram(x)?, &ky.gram(y)?, statistic)
}

/// Runs the HSIC independence test of `x` and `y` (paired by row) with kernels `kx`, `ky`.
pub fn hsic_test(
    x: &Points,
    y: &Points,
    kx: &Kernel,
    ky: &Kernel,
    params: &HsicParams,
) -> Result<TestOutcome, CoreError> {
    params.check()?;
    check_pair(x, y, params.min_points())?;
    hsic_test_grams(&kx.gram(x)?, &ky.gram(y)?, params)
}

/// The HSIC test from precomputed Gram matrices `K` (of `x`) and `L` (of `y`).
pub fn hsic_test_grams(k: &Mat, l: &Mat, params: &HsicParams) -> Result<TestOutcome, CoreError> {
    params.check()?;
    let n = check_grams(k, l, params.min_points())?;
    let core = HsicCore::new(k, l, params.statistic);
    let identity: Vec<usize> = (0..n).collect();
    let observed = core.eval(&identity);
    match params.null {
        NullDistribution::Permutation => {
            let null = (0..params.permutations)
                .into_par_iter()
                .map_init(
                    || vec![0usize; n],
                    |idx, b| {
                        draw_permutation(&mut draw_rng(params.seed, b), idx);
                        core.eval(idx)
                    },
                )
                .collect();
            Ok(TestOutcome::from_samples(observed, null, params.alpha, params.null))
        }
        NullDistribution::Gamma => {
            let (mean, var) = gamma_moments(k, l);
            if !(mean > 0.0 && var > 0.0) {
                return Err(invalid(
                    "null variance of n·HSIC",
                    var,
                    "a Gram matrix is (numerically) constant, so the gamma fit is undefined: the lengthscale is far too large or too small for the data; use the permutation null or another lengthscale",
                ));
            }
            let nf = n as f64;
            let (shape, scale) = (mean * mean / var, var / mean);
            let shifted = match params.statistic {
                HsicStatistic::Biased => nf * observed,
                HsicStatistic::Unbiased => nf * observed + mean,
            };
            let null_mean = if params.statistic == HsicStatistic::Biased { mean / nf } else { 0.0 };
            Ok(TestOutcome::from_p(
                observed,
                gamma_sf(shifted, shape, scale),
                params.alpha,
                params.null,
                null_mean,
                var.sqrt() / nf,
            ))
        }
        _ => unreachable!("rejected by HsicParams::check"),
    }
}

/// Mean and variance of `n·HSIC_b` under independence (Gretton et al. 2008; module docs).
fn gamma_moments(k: &Mat, l: &Mat) -> (f64, f64) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn normals(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let u1: f64 = rng.random::<f64>().max(1e-300);
                let u2: f64 = rng.random();
                (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    /// `(x, y)` with `y = ρ x + noise` (2-D x, 1-D y).
    fn dependent(seed: u64, n: usize, rho: f64) -> (Points, Points) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = normals(&mut rng, 2 * n);
        let e = normals(&mut rng, n);
        let y: Vec<f64> = (0..n).map(|i| rho * x[2 * i] + e[i]).collect();
        (Points::new("x", x, 2).unwrap(), Points::from_1d("y", &y).unwrap())
    }

    #[test]
    fn statistics_match_definitions() {
        let (x, y) = dependent(1, 9, 0.8);
        let (kx, ky) = (Kernel::se(1.2).unwrap(), Kernel::se(0.7).unwrap());
        let (k, l) = (kx.gram(&x).unwrap(), ky.gram(&y).unwrap());
        let n = 9usize;
        let nf = n as f64;
        // biased: V-statistic expansion of Gretton et al. (2005)
        let (mut t1, mut sk, mut sl, mut t3) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..n {
            for j in 0..n {
                t1 += k[(i, j)] * l[(i, j)];
                sk += k[(i, j)];
                sl += l[(i, j)];
                for q in 0..n {
                    t3 += k[(i, j)] * l[(i, q)];
                }
            }
        }
        let v = t1 / (nf * nf) + sk * sl / nf.powi(4) - 2.0 * t3 / nf.powi(3);
        let b = hsic_statistic(&x, &y, &kx, &ky, HsicStatistic::Biased).unwrap();
        assert!((b - v).abs() < 1e-14, "{b} vs {v}");
        // also tr(KHLH)/n² by explicit products
        let h = Mat::from_fn(n, n, |i, j| f64::from(u8::from(i == j)) - 1.0 / nf);
        let prod = |a: &Mat, c: &Mat| Mat::from_fn(n, n, |i, j| (0..n).map(|t| a[(i, t)] * c[(t, j)]).sum());
        let m = prod(&prod(&prod(&k, &h), &l), &h);
        let tr: f64 = (0..n).map(|i| m[(i, i)]).sum();
        assert!((b - tr / (nf * nf)).abs() < 1e-14);
        // unbiased: brute-force order-4 U-statistic over distinct (i, j, q, r)
        let mut u = 0.0;
        let mut count = 0.0;
        for i in 0..n {
            for j in 0..n {
                for q in 0..n {
                    for r in 0..n {
                        if i == j || i == q || i == r || j == q || j == r || q == r {
                            continue;
                        }
                        u += k[(i, j)] * l[(i, j)] + k[(i, j)] * l[(q, r)] - 2.0 * k[(i, j)] * l[(i, q)];
                        count += 1.0;
                    }
                }
            }
        }
        let hu = hsic_statistic(&x, &y, &kx, &ky, HsicStatistic::Unbiased).unwrap();
        assert!((hu - u / count).abs() < 1e-13, "{hu} vs {}", u / count);
    }

    /// Every permutation draw equals the statistic recomputed on explicitly permuted y.
    #[test]
    fn permutation_draws_match_recomputation() {
        let (x, y) = dependent(2, 15, 0.5);
        let (kx, ky) = (Kernel::se(1.0).unwrap(), Kernel::se(1.0).unwrap());
        for stat in [HsicStatistic::Biased, HsicStatistic::Unbiased] {
            let params = HsicParams { statistic: stat, permutations: 25, seed: 5, ..Default::default() };
            let out = hsic_test(&x, &y, &kx, &ky, &params).unwrap();
            for (b, v) in out.null_samples.iter().enumerate() {
                let mut idx = vec![0usize; 15];
                draw_permutation(&mut draw_rng(5, b), &mut idx);
                let yp = y.select(&idx);
                let direct = hsic_statistic(&x, &yp, &kx, &ky, stat).unwrap();
                assert!((v - direct).abs() < 1e-13, "{stat:?} draw {b}: {v} vs {direct}");
            }
        }
    }

    #[test]
    fn thread_count_invariance_and_power() {
        let (x, y) = dependent(3, 60, 0.7);
        let (kx, ky) = (Kernel::se(1.0).unwrap(), Kernel::se(1.0).unwrap());
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                hsic_test(&x, &y, &kx, &ky, &HsicParams { permutations: 300, seed: 11, ..Default::default() })
                    .unwrap()
            })
        };
        let (a, b) = (run(1), run(2));
        assert_eq!(a.null_samples, b.null_samples);
        assert_eq!(a.p_value, b.p_value);
        assert!(a.reject && a.p_value == 1.0 / 301.0, "p = {}", a.p_value);
        for stat in [HsicStatistic::Biased, HsicStatistic::Unbiased] {
            let g = hsic_test(
                &x,
                &y,
                &kx,
                &ky,
                &HsicParams { statistic: stat, null: NullDistribution::Gamma, ..Default::default() },
            )
            .unwrap();
            assert!(g.reject, "{stat:?} gamma p = {}", g.p_value);
        }
    }

    /// Gamma moments against the permutation distribution of n·HSIC_b on independent data.
    #[test]
    fn gamma_moments_match_permutation_null() {
        let (x, y) = dependent(4, 80, 0.0);
        let (kx, ky) = (Kernel::se(1.0).unwrap(), Kernel::se(1.0).unwrap());
        let (k, l) = (kx.gram(&x).unwrap(), ky.gram(&y).unwrap());
        let (mean, var) = gamma_moments(&k, &l);
        let draws = 3000;
        let out = hsic_test_grams(&k, &l, &HsicParams { permutations: draws, ..Default::default() }).unwrap();
        let nf = 80.0;
        let s: Vec<f64> = out.null_samples.iter().map(|v| nf * v).collect();
        let em = s.iter().sum::<f64>() / draws as f64;
        let ev = s.iter().map(|v| (v - em).powi(2)).sum::<f64>() / (draws as f64 - 1.0);
        assert!((em - mean).abs() < 4.0 * (ev / draws as f64).sqrt() + 0.02 * mean, "{em} vs {mean}");
        assert!((ev / var - 1.0).abs() < 0.2, "{ev} vs {var}");
        // the gamma tail at the permutation distribution's 95 % quantile: 0.05 up to Monte-Carlo
        // error (sd ≈ 0.004) and the approximation's own error in the tail
        let mut sorted = s.clone();
        sorted.sort_by(f64::total_cmp);
        let q95 = sorted[(0.95 * draws as f64) as usize];
        let tail = gamma_sf(q95, mean * mean / var, var / mean);
        assert!((tail - 0.05).abs() < 0.015, "gamma tail at the permutation 95 % quantile: {tail}");
    }

    #[test]
    fn bad_input_is_rejected() {
        let (x, y) = dependent(5, 10, 0.0);
        let k = Kernel::se(1.0).unwrap();
        let y9 = y.select(&(0..9).collect::<Vec<_>>());
        let e = hsic_test(&x, &y9, &k, &k, &HsicParams::default()).unwrap_err().to_string();
        assert!(e.contains("paired"), "{e}");
        let x1 = x.select(&[0]);
        assert!(hsic_test(&x1, &y.select(&[0]), &k, &k, &HsicParams::default()).is_err());
        let x5 = x.select(&[0, 1, 2, 3, 4]);
        let y5 = y.select(&[0, 1, 2, 3, 4]);
        assert!(
            hsic_test(&x5, &y5, &k, &k, &HsicParams { null: NullDistribution::Gamma, ..Default::default() })
                .is_err()
        );
        assert!(hsic_test(&x, &y, &k, &k, &HsicParams { permutations: 0, ..Default::default() }).is_err());
        assert!(hsic_test(&x, &y, &k, &k, &HsicParams { alpha: 1.0, ..Default::default() }).is_err());
        assert!(
            hsic_test(
                &x,
                &y,
                &k,
                &k,
                &HsicParams { null: NullDistribution::WildBootstrap, ..Default::default() }
            )
            .is_err()
        );
    }
}
