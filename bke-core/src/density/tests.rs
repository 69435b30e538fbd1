//! Tests of the kernel student-t density against independent oracles: the textbook NIW update in an
//! explicit finite feature space, analytic Student-t normalisers, brute-force integration, and a
//! second backend.

use super::tails::Grid;
use super::*;
use crate::numeric::log_sum_exp;
use crate::special::ln_gamma;
use crate::{KernelFamily, LogDensity};
use bke_linalg::{Backend, DefaultBackend, Mat};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

/// A kernel given by an explicit finite feature map (for the oracle).
pub(super) trait FeatureMap: DensityKernel {
    fn features(&self, x: &[f64]) -> Vec<f64>;
}

impl FeatureMap for Polynomial {
    /// Scaled tensor powers `√w_p x^{⊗p}` (the constant feature for p = 0).
    fn features(&self, x: &[f64]) -> Vec<f64> {
        let mut out = Vec::new();
        let mut power = vec![1.0];
        for (p, &w) in self.weights().iter().enumerate() {
            if p > 0 {
                power = power.iter().flat_map(|a| x.iter().map(move |b| a * b)).collect();
            }
            if w > 0.0 {
                out.extend(power.iter().map(|v| w.sqrt() * v));
            }
        }
        out
    }
}

/// Shift-invariant kernel with explicit random-Fourier-type features
/// `ϕ(x) = (cos ωⱼᵀx, sin ωⱼᵀx)ⱼ/√m`, `k(x, y) = (1/m) Σⱼ cos ωⱼᵀ(x − y)`.
struct Fourier {
    omegas: Vec<Vec<f64>>,
}

impl DensityKernel for Fourier {
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        let m = self.omegas.len() as f64;
        self.omegas
            .iter()
            .map(|w| w.iter().zip(x.iter().zip(y)).map(|(a, (b, c))| a * (b - c)).sum::<f64>().cos())
            .sum::<f64>()
            / m
    }
    fn check_dim(&self, dim: usize) -> Result<(), CoreError> {
        if self.omegas[0].len() == dim {
            Ok(())
        } else {
            Err(CoreError::DimensionMismatch {
                what: "fourier".into(),
                expected: self.omegas[0].len(),
                found: dim,
            })
        }
    }
    fn log_jacobian(&self, _x: &[f64]) -> Option<f64> {
        None
    }
}

impl FeatureMap for Fourier {
    fn features(&self, x: &[f64]) -> Vec<f64> {
        let m = (self.omegas.len() as f64).sqrt();
        let mut out = Vec::new();
        for w in &self.omegas {
            let t: f64 = w.iter().zip(x).map(|(a, b)| a * b).sum();
            out.push(t.cos() / m);
            out.push(t.sin() / m);
        }
        out
    }
}

/// The textbook NIW posterior predictive (Murphy 2007) in the explicit feature space: the full,
/// normalised multivariate Student-t log density of `ϕ(x)`.
pub(super) fn explicit_log_t(fm: &impl FeatureMap, x: &Points, q: &[f64], p: NiwParams) -> f64 {
    let phis: Vec<Vec<f64>> = x.iter().map(|xi| fm.features(xi)).collect();
    let dd = phis[0].len();
    let n = phis.len() as f64;
    let mean: Vec<f64> = (0..dd).map(|a| phis.iter().map(|f| f[a]).sum::<f64>() / n).collect();
    let (kn, nun) = (p.beta + n, p.alpha + n);
    let m: Vec<f64> = mean.iter().map(|v| n * v / kn).collect();
    let psi = Mat::from_fn(dd, dd, |a, b| {
        let scatter: f64 = phis.iter().map(|f| (f[a] - mean[a]) * (f[b] - mean[b])).sum();
        let prior = if a == b { p.sigma0_sq } else { 0.0 };
        prior + scatter + p.beta * n / (p.beta + n) * mean[a] * mean[b]
    });
    let nu = nun - dd as f64 + 1.0;
    let scale = (kn + 1.0) / (kn * nu);
    let l = DefaultBackend::cholesky(psi.as_ref()).unwrap();
    let logdet = DefaultBackend::cholesky_logdet(l.as_ref()) + dd as f64 * scale.ln();
    let mut r: Vec<f64> = fm.features(q).iter().zip(&m).map(|(a, b)| a - b).collect();
    let rr = r.clone();
    DefaultBackend::cholesky_solve_vec_in_place(l.as_ref(), &mut r).unwrap();
    let delta: f64 = rr.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>() / scale;
    let ddf = dd as f64;
    ln_gamma((nu + ddf) / 2.0)
        - ln_gamma(nu / 2.0)
        - 0.5 * ddf * (nu * std::f64::consts::PI).ln()
        - 0.5 * logdet
        - 0.5 * (nu + ddf) * (delta / nu).ln_1p()
}

fn fig1_data() -> Points {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let (a, b) = (Normal::new(0.0, 0.35).unwrap(), Normal::new(2.0, 0.35).unwrap());
    let xs: Vec<f64> =
        (0..14).map(|i| if i % 2 == 0 { a.sample(&mut rng) } else { b.sample(&mut rng) }).collect();
    Points::from_1d("fig1", &xs).unwrap()
}

/// Kernelised (Woodbury, seed 003 eq. (4)–(5)) vs explicit NIW Student-t: `log q(ϕ(x)) − log t(ϕ(x))` must be a
/// constant (the normaliser). Fig. 1 quadratic features and a shift-invariant Fourier map.
#[test]
fn explicit_feature_map_agrees() {
    let x = fig1_data();
    for params in [
        NiwParams { alpha: 2.0, beta: 0.01, sigma0_sq: 1.0 },
        NiwParams { alpha: 0.5, beta: 5.0, sigma0_sq: 0.3 },
    ] {
        let k = Polynomial::quadratic_features();
        let model = KernelStudentT::with_kernel::<DefaultBackend>(k.clone(), &x, params).unwrap();
        let qs: Vec<f64> = (0..41).map(|i| -1.5 + 0.1 * i as f64).collect();
        let q = Points::from_1d("q", &qs).unwrap();
        let lr = model.log_restricted::<DefaultBackend>(&q).unwrap();
        let offsets: Vec<f64> =
            qs.iter().zip(&lr).map(|(xq, l)| l - explicit_log_t(&k, &x, &[*xq], params)).collect();
        for o in &offsets {
            assert!((o - offsets[0]).abs() < 1e-10, "{params:?}: {o} vs {}", offsets[0]);
        }
        // seed 003 eq. (6): the Jacobian of ϕ(x) = (x, x²) is √(1 + 4x²).
        let lu = model.log_unnormalised::<DefaultBackend>(&q).unwrap();
        for i in 0..qs.len() {
            assert!((lu[i] - lr[i] - 0.5 * (1.0 + 4.0 * qs[i] * qs[i]).ln()).abs() < 1e-13);
        }
    }
    // Shift-invariant explicit map in 2-D, D = 6.
    let f = Fourier { omegas: vec![vec![1.0, 0.3], vec![-0.4, 0.9], vec![0.7, -1.2]] };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let nd = Normal::new(0.0, 1.0).unwrap();
    let x2 = Points::new("x2", (0..40).map(|_| nd.sample(&mut rng)).collect(), 2).unwrap();
    let params = NiwParams { alpha: 3.0, beta: 0.7, sigma0_sq: 0.05 };
    let model = KernelStudentT::with_kernel::<DefaultBackend>(f, &x2, params).unwrap();
    let q = Points::new("q", (0..30).map(|i| (i as f64 * 0.37).sin() * 2.0).collect(), 2).unwrap();
    let lr = model.log_restricted::<DefaultBackend>(&q).unwrap();
    let f = Fourier { omegas: vec![vec![1.0, 0.3], vec![-0.4, 0.9], vec![0.7, -1.2]] };
    let off: Vec<f64> = (0..q.len()).map(|i| lr[i] - explicit_log_t(&f, &x2, q.point(i), params)).collect();
    for o in &off {
        assert!((o - off[0]).abs() < 1e-9, "{o} vs {}", off[0]);
    }
}

/// The constant-Jacobian claim (seed 003 App. B) on the explicit shift-invariant map, and the
/// polynomial Jacobian formula against finite differences of the explicit feature map (2-D).
#[test]
fn jacobians_match_feature_map_derivatives() {
    let h = 1e-5;
    let gram_of = |fm: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64]| -> Vec<f64> {
        let d = x.len();
        let cols: Vec<Vec<f64>> = (0..d)
            .map(|i| {
                let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
                xp[i] += h;
                xm[i] -= h;
                fm(&xp).iter().zip(fm(&xm)).map(|(a, b)| (a - b) / (2.0 * h)).collect()
            })
            .collect();
        (0..d * d).map(|ij| cols[ij / d].iter().zip(&cols[ij % d]).map(|(a, b)| a * b).sum()).collect()
    };
    let f = Fourier { omegas: vec![vec![1.0, 0.3], vec![-0.4, 0.9]] };
    let g1 = gram_of(&|x| f.features(x), &[0.1, 0.2]);
    let g2 = gram_of(&|x| f.features(x), &[-1.7, 2.9]);
    for (a, b) in g1.iter().zip(&g2) {
        assert!((a - b).abs() < 1e-8, "{a} vs {b}");
    }
    let p = Polynomial::new(vec![0.5, 1.0, 0.7, 0.2]).unwrap();
    for x in [[0.3, -0.8], [1.2, 0.4], [0.0, 0.0]] {
        let g = gram_of(&|x| p.features(x), &x);
        let det = g[0] * g[3] - g[1] * g[2];
        let lj = p.log_jacobian(&x).unwrap();
        assert!((0.5 * det.ln() - lj).abs() < 1e-7, "{x:?}: {} vs {lj}", 0.5 * det.ln());
        // The kernel is the inner product of the features.
        let y = [0.9, -0.1];
        let ip: f64 = p.features(&x).iter().zip(p.features(&y)).map(|(a, b)| a * b).sum();
        assert!((ip - p.eval(&x, &y)).abs() < 1e-12);
    }
}

/// The first draft of docs/DESIGN.md §3.4 (centred Φ̃ inside `(I − 11ᵀ/(N+β))`) drops `βN/(β+N) φ̄φ̄ᵀ`; it matches the
/// NIW predictive only as β → 0.
#[test]
fn design_reconstruction_differs_unless_beta_small() {
    let x = fig1_data();
    let k = Polynomial::quadratic_features();
    let qs = [-1.0, 0.5, 2.5];
    let centred_q = |beta: f64, s2: f64, xq: f64| -> f64 {
        let phis: Vec<[f64; 2]> = x.iter().map(|p| [p[0], p[0] * p[0]]).collect();
        let n = phis.len() as f64;
        let mean = [phis.iter().map(|f| f[0]).sum::<f64>() / n, phis.iter().map(|f| f[1]).sum::<f64>() / n];
        let s = Mat::from_fn(2, 2, |a, b| {
            phis.iter().map(|f| (f[a] - mean[a]) * (f[b] - mean[b])).sum::<f64>()
                + if a == b { s2 } else { 0.0 }
        });
        let r = [xq - n * mean[0] / (n + beta), xq * xq - n * mean[1] / (n + beta)];
        let det = s[(0, 0)] * s[(1, 1)] - s[(0, 1)] * s[(1, 0)];
        (r[0] * r[0] * s[(1, 1)] - 2.0 * r[0] * r[1] * s[(0, 1)] + r[1] * r[1] * s[(0, 0)]) / det
    };
    for (beta, differs) in [(1e-9, false), (3.0, true)] {
        let params = NiwParams { alpha: 1.0, beta, sigma0_sq: 1.0 };
        let model = KernelStudentT::with_kernel::<DefaultBackend>(k.clone(), &x, params).unwrap();
        let q = model.mahalanobis::<DefaultBackend>(&Points::from_1d("q", &qs).unwrap()).unwrap();
        let maxdiff =
            qs.iter().zip(&q).map(|(&xq, &m)| (m - centred_q(beta, 1.0, xq)).abs()).fold(0.0, f64::max);
        if differs {
            assert!(maxdiff > 1e-2, "expected a difference, got {maxdiff}");
        } else {
            assert!(maxdiff < 1e-6, "expected agreement, got {maxdiff}");
        }
    }
}

/// With the linear kernel `k(x, y) = xᵀy` (ϕ = id, Jacobian 1) the estimate *is* the NIW Student-t in
/// input space, whose normaliser is known: quadrature on a wide box must reproduce the analytic log
/// density (1-D and 2-D).
#[test]
fn normalisation_matches_known_student_t() {
    let lin = Polynomial::new(vec![0.0, 1.0]).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let nd = Normal::new(0.5, 1.0).unwrap();
    for d in [1usize, 2] {
        let x = Points::new("x", (0..20 * d).map(|_| nd.sample(&mut rng)).collect(), d).unwrap();
        let params = NiwParams { alpha: d as f64 + 1.0, beta: 0.5, sigma0_sq: 0.8 };
        let model = KernelStudentT::with_kernel::<DefaultBackend>(lin.clone(), &x, params).unwrap();
        let opts = NormaliseOptions { rel_tol: 1e-10, min_panels: 8, ..Default::default() };
        let nd_model = model.normalise::<DefaultBackend>(Domain::around(&x, 6.0).unwrap(), &opts).unwrap();
        let norm = nd_model.normalisation().unwrap();
        assert!(norm.converged, "{norm:?}");
        let q = Points::new("q", (0..10 * d).map(|i| (i as f64 * 0.7).cos() * 2.0).collect(), d).unwrap();
        let ld = nd_model.log_density::<DefaultBackend>(&q).unwrap();
        for i in 0..q.len() {
            let exact = explicit_log_t(&lin, &x, q.point(i), params);
            assert!((ld[i] - exact).abs() < 1e-8, "d={d}: {} vs {exact}", ld[i]);
        }
    }
}

/// Brute force: a fine midpoint rule of the normalised SE density over its box integrates to the
/// box's share of the mass, `1 − Z_T/Z`; beyond the box the density is positive.
#[test]
fn normalised_se_density_integrates_to_one_2d() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    let nd = Normal::new(0.0, 1.0).unwrap();
    let x = Points::new("x", (0..30).map(|_| nd.sample(&mut rng)).collect(), 2).unwrap();
    let model = KernelStudentT::with_kernel::<DefaultBackend>(
        Kernel::se_ard(vec![0.6, 0.5]).unwrap(),
        &x,
        NiwParams { alpha: 1.5, beta: 0.01, sigma0_sq: 2.0 },
    )
    .unwrap();
    let dens = model
        .normalise::<DefaultBackend>(Domain::around(&x, 0.25).unwrap(), &NormaliseOptions::default())
        .unwrap();
    let norm = dens.normalisation().unwrap().clone();
    assert!(norm.converged && norm.rel_err < 1e-6, "{norm:?}");
    let m = 300;
    let (lo, hi) = (&norm.domain.lower, &norm.domain.upper);
    let (h0, h1) = ((hi[0] - lo[0]) / m as f64, (hi[1] - lo[1]) / m as f64);
    let pts: Vec<f64> = (0..m * m)
        .flat_map(|c| [lo[0] + ((c / m) as f64 + 0.5) * h0, lo[1] + ((c % m) as f64 + 0.5) * h1])
        .collect();
    let ld = dens.log_density::<DefaultBackend>(&Points::new("grid", pts, 2).unwrap()).unwrap();
    let total: f64 = ld.iter().map(|v| v.exp()).sum::<f64>() * h0 * h1;
    // Midpoint rule with h ≈ range/300: error O(h²) ≈ 1e-5 for this smooth integrand.
    assert!((total - (1.0 - norm.tail_mass())).abs() < 2e-4, "{total} vs {}", 1.0 - norm.tail_mass());
    let out =
        dens.log_density::<DefaultBackend>(&Points::new("o", vec![hi[0] + 1.0, 0.0], 2).unwrap()).unwrap();
    assert!(out[0].is_finite(), "{out:?}");
}

/// Sampling: the known 1-D Student-t case, Kolmogorov–Smirnov distance against the quadrature CDF.
/// Critical value at level 1e-6 for n = 4000: √(ln(2e6)/(2n)) = 0.043.
#[test]
fn samples_follow_the_density() {
    let lin = Polynomial::new(vec![0.0, 1.0]).unwrap();
    let xs: Vec<f64> = (0..15).map(|i| (i as f64 * 1.3).sin() + 0.2).collect();
    let x = Points::from_1d("x", &xs).unwrap();
    let model = KernelStudentT::with_kernel::<DefaultBackend>(
        lin,
        &x,
        NiwParams { alpha: 1.0, beta: 1.0, sigma0_sq: 0.5 },
    )
    .unwrap();
    let dens = model
        .normalise::<DefaultBackend>(Domain::around(&x, 1.0).unwrap(), &NormaliseOptions::default())
        .unwrap();
    let n = 4000;
    let s = dens.sample::<DefaultBackend>(n, 42).unwrap();
    assert_eq!(s.envelope_violations, 0);
    assert_eq!(s.points.len(), n);
    let again = dens.sample::<DefaultBackend>(n, 42).unwrap();
    assert_eq!(again.points, s.points, "seeded sampling must be reproducible");
    let mut v: Vec<f64> = s.points.as_slice().to_vec();
    v.sort_by(f64::total_cmp);
    let dom = &dens.normalisation().unwrap().domain;
    let m = 20000;
    let h = (dom.upper[0] - dom.lower[0]) / m as f64;
    let grid: Vec<f64> = (0..m).map(|i| dom.lower[0] + (i as f64 + 0.5) * h).collect();
    let ld = dens.log_density::<DefaultBackend>(&Points::from_1d("g", &grid).unwrap()).unwrap();
    let mut cdf = Vec::with_capacity(m);
    let mut acc = 0.0;
    for l in ld {
        acc += l.exp() * h;
        cdf.push(acc);
    }
    let mut ks: f64 = 0.0;
    for (i, xv) in v.iter().enumerate() {
        let c = cdf[(((xv - dom.lower[0]) / h) as usize).min(m - 1)];
        ks = ks.max((c - i as f64 / n as f64).abs()).max((c - (i + 1) as f64 / n as f64).abs());
    }
    assert!(ks < 0.043, "KS distance {ks}");
}

#[test]
fn bad_input_is_rejected() {
    let x2 = Points::new("x", vec![0.0, 1.0, 2.0, 0.5, 1.0, 1.0], 2).unwrap();
    let k = Kernel::se(1.0).unwrap();
    let fit = |p: NiwParams| KernelStudentT::with_kernel::<DefaultBackend>(k.clone(), &x2, p);
    let e = fit(NiwParams { alpha: 1.0, ..Default::default() }).unwrap_err().to_string();
    assert!(e.contains("alpha") && e.contains("improper"), "{e}");
    assert!(fit(NiwParams { alpha: 1.01, ..Default::default() }).is_ok());
    assert!(
        fit(NiwParams { alpha: 2.0, beta: 0.0, ..Default::default() })
            .unwrap_err()
            .to_string()
            .contains("beta")
    );
    assert!(fit(NiwParams { alpha: 2.0, sigma0_sq: -1.0, ..Default::default() }).is_err());
    assert!(fit(NiwParams { alpha: f64::NAN, ..Default::default() }).is_err());
    let model = fit(NiwParams { alpha: 2.0, ..Default::default() }).unwrap();
    let e = model.log_unnormalised::<DefaultBackend>(&Points::from_1d("q", &[0.0]).unwrap()).unwrap_err();
    assert!(matches!(e, CoreError::DimensionMismatch { .. }), "{e}");
    assert!(Points::new("q", vec![0.0, f64::NAN], 2).is_err());
    let ard = Kernel::se_ard(vec![1.0, 1.0, 1.0]).unwrap();
    assert!(
        KernelStudentT::with_kernel::<DefaultBackend>(
            ard,
            &x2,
            NiwParams { alpha: 2.0, ..Default::default() }
        )
        .is_err()
    );
    let x3 = Points::new("x", vec![0.0; 6], 3).unwrap();
    let m3 = KernelStudentT::with_kernel::<DefaultBackend>(
        k.clone(),
        &x3,
        NiwParams { alpha: 2.5, ..Default::default() },
    )
    .unwrap();
    let box3 = Domain::new(vec![-1.0; 3], vec![1.0; 3]).unwrap();
    assert!(
        m3.normalise::<DefaultBackend>(box3, &NormaliseOptions::default()).is_err(),
        "no quadrature in 3-D"
    );
    assert!(Polynomial::new(vec![1.0, -1.0]).is_err());
    assert!(Polynomial::new(vec![1.0, 0.0]).is_err());
}

#[test]
fn gauss_legendre_is_exact_for_degree_2n_minus_1() {
    for n in [1, 2, 5, 8, 16] {
        let (x, w) = gauss_legendre(n);
        for deg in 0..2 * n {
            let quad: f64 = x.iter().zip(&w).map(|(a, b)| b * a.powi(deg as i32)).sum();
            let exact = if deg % 2 == 1 { 0.0 } else { 2.0 / (deg as f64 + 1.0) };
            assert!((quad - exact).abs() < 1e-13, "n={n} deg={deg}: {quad} vs {exact}");
        }
    }
}

/// The spectral fast path of the selection equals the Cholesky/Woodbury model normalised on the same
/// rule, fold by fold; and the chosen candidate is the best on the grid.
#[test]
fn selection_spectral_path_matches_direct() {
    let x = fig1_data();
    let opts = SelectOptions {
        lengthscale_factors: vec![0.2, 0.5],
        sigma0_sq: vec![0.3, 3.0],
        beta: vec![0.01, 2.0],
        alpha_offsets: vec![0.5, 4.0],
        folds: 4,
        seed: 1,
        ..Default::default()
    };
    let se = KernelFamily::SquaredExponential;
    let sel = select_hyperparameters::<DefaultBackend>(&x, se, &opts, &()).unwrap();
    // Two-value grids put every optimum on an edge: they are widened (see `selection_widens_edges`).
    assert!(sel.candidates.len() >= 16 && !sel.grid_notes.is_empty());
    let best = sel.candidates.iter().map(|c| c.cv_log_lik).fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(best, sel.cv_log_lik);
    // Recompute two candidates directly.
    let grid = Grid::new(&sel.domain, None, 48, 48, 8).unwrap();
    let tails = Grid::tails(&sel.domain, None, 16, 16, 8, TailWeight::Cauchy).unwrap();
    let n = x.len();
    let mut perm: Vec<usize> = (0..n).collect();
    use rand::seq::SliceRandom;
    perm.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
    for cand in [sel.candidates[0], sel.candidates[13]] {
        let kernel = Kernel::se(cand.lengthscale_factor * sel.scales[0]).unwrap();
        let mut total = 0.0;
        for f in 0..4 {
            let val: Vec<usize> = perm.iter().copied().skip(f).step_by(4).collect();
            let train: Vec<usize> = (0..n).filter(|i| !val.contains(i)).collect();
            let m =
                KernelStudentT::with_kernel::<DefaultBackend>(kernel.clone(), &x.select(&train), cand.params)
                    .unwrap();
            let mut terms = Vec::new();
            for g in [&grid, &tails] {
                let lq = m.log_unnormalised::<DefaultBackend>(&g.nodes).unwrap();
                terms.extend(lq.iter().zip(&g.log_weights).map(|(a, b)| a + b));
            }
            let lz = log_sum_exp(&terms);
            let lv = m.log_unnormalised::<DefaultBackend>(&x.select(&val)).unwrap();
            total += lv.iter().map(|v| v - lz).sum::<f64>();
        }
        let direct = total / n as f64;
        assert!((direct - cand.cv_log_lik).abs() < 1e-9, "{direct} vs {}", cand.cv_log_lik);
    }
    // Validation.
    assert!(
        select_hyperparameters::<DefaultBackend>(&x, se, &SelectOptions { folds: 1, ..opts.clone() }, &())
            .is_err()
    );
    assert!(
        select_hyperparameters::<DefaultBackend>(&x, se, &SelectOptions { beta: vec![], ..opts }, &())
            .is_err()
    );
}

/// An optimum at the edge of a grid widens that grid (and only grids with more than one value): the
/// widened search finds a better held-out score than the narrow one and lands inside the widened grid,
/// where the optimum equals the best of a single search over the final grid.
#[test]
fn selection_widens_edges() {
    let x = fig1_data();
    let narrow = SelectOptions {
        // above the optimum of these data (c < 1), so that the best candidate sits on the lower edge
        lengthscale_factors: vec![1.0, 2.0],
        sigma0_sq: vec![1.0],
        beta: vec![1.0],
        alpha_offsets: vec![1.0],
        folds: 4,
        ..Default::default()
    };
    let sel =
        select_hyperparameters::<DefaultBackend>(&x, KernelFamily::SquaredExponential, &narrow, &()).unwrap();
    assert!(sel.grid_notes.iter().all(|n| n.starts_with("lengthscale factor c")), "{:?}", sel.grid_notes);
    assert!(sel.grid_notes[0].contains("lower edge"), "{:?}", sel.grid_notes);
    let c = sel.kernel.lengthscales()[0] / sel.scales[0];
    assert!(c < 1.0 - 1e-12, "the optimum moved below the narrow grid: {c}");
    // The narrow grid's best is worse.
    let factors: Vec<f64> = sel.candidates.iter().map(|c| c.lengthscale_factor).collect();
    let at_edge = sel.candidates.iter().find(|k| k.lengthscale_factor == 1.0).unwrap().cv_log_lik;
    assert!(
        sel.cv_log_lik > at_edge && sel.unresolved == 0,
        "{} vs {at_edge}, {} unresolved",
        sel.cv_log_lik,
        sel.unresolved
    );
    // The widened search ends inside its grid, and one search over the final grid agrees.
    assert!(sel.grid_notes.iter().all(|n| !n.contains("still")), "{:?}", sel.grid_notes);
    let final_grid = SelectOptions { lengthscale_factors: factors.clone(), ..narrow.clone() };
    let direct =
        select_hyperparameters::<DefaultBackend>(&x, KernelFamily::SquaredExponential, &final_grid, &())
            .unwrap();
    assert_eq!(direct.cv_log_lik, sel.cv_log_lik);
    // Fixed values (one-value grids) are never widened; an interior optimum leaves no note.
    let fixed = SelectOptions { lengthscale_factors: vec![0.5], ..narrow.clone() };
    assert!(
        select_hyperparameters::<DefaultBackend>(&x, KernelFamily::SquaredExponential, &fixed, &())
            .unwrap()
            .grid_notes
            .is_empty()
    );
    let c0 = c;
    let around = SelectOptions { lengthscale_factors: vec![c0 / 2.0, c0, c0 * 2.0], ..narrow };
    let inner =
        select_hyperparameters::<DefaultBackend>(&x, KernelFamily::SquaredExponential, &around, &()).unwrap();
    assert!(inner.grid_notes.is_empty(), "{:?}", inner.grid_notes);
    assert_eq!(inner.candidates.len(), 3);
}

/// KDE: the LOO score against brute force, and the density integrates to 1.
#[test]
fn kde_oracles() {
    let xs: Vec<f64> = (0..40).map(|i| (i as f64 * 0.77).sin() * 2.0 + (i % 3) as f64).collect();
    let x = Points::from_1d("x", &xs).unwrap();
    let fit = |bandwidth| KdeParams { bandwidth }.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    let kde = fit(Bandwidth::Fixed(vec![0.4]));
    let brute: f64 = (0..xs.len())
        .map(|i| {
            let s: f64 = (0..xs.len())
                .filter(|&j| j != i)
                .map(|j| {
                    (-0.5 * ((xs[i] - xs[j]) / 0.4f64).powi(2)).exp()
                        / (0.4 * (2.0 * std::f64::consts::PI).sqrt())
                })
                .sum();
            (s / (xs.len() - 1) as f64).ln()
        })
        .sum::<f64>()
        / xs.len() as f64;
    assert!((kde.loo_log_lik() - brute).abs() < 1e-12);
    let h = 0.001;
    let grid: Vec<f64> = (0..20000).map(|i| -10.0 + (i as f64 + 0.5) * h).collect();
    let ld = kde.log_density::<DefaultBackend>(&Points::from_1d("g", &grid).unwrap()).unwrap();
    let total: f64 = ld.iter().map(|v| v.exp()).sum::<f64>() * h;
    assert!((total - 1.0).abs() < 1e-8, "{total}");
    let s = fit(Bandwidth::NormalReference);
    let sd = {
        let m = xs.iter().sum::<f64>() / 40.0;
        (xs.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 39.0).sqrt()
    };
    assert!((s.bandwidths()[0] - sd * (4.0f64 / (3.0 * 40.0)).powf(0.2)).abs() < 1e-12);
    let factors = vec![0.05, 0.1, 0.2, 0.4, 0.8];
    let cv = fit(Bandwidth::CrossValidated { factors: factors.clone() });
    let KdeBandwidth::CrossValidated { loo_log_lik } = cv.rule() else { panic!("{:?}", cv.rule()) };
    // The chosen factor maximises the LOO score over the grid (brute force over the factors).
    let best = factors
        .iter()
        .map(|&c| fit(Bandwidth::Fixed(vec![c * sd])).loo_log_lik())
        .fold(f64::NEG_INFINITY, f64::max);
    assert!((loo_log_lik - best).abs() < 1e-12, "{loo_log_lik} vs {best}");
    assert!(KdeParams { bandwidth: Bandwidth::CrossValidated { factors: vec![] } }.check().is_err());
    assert!(KdeParams { bandwidth: Bandwidth::Fixed(vec![-1.0]) }.check().is_err());
}

pub(super) fn two_bumps(n: usize, seed: u64) -> Points {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (a, b) = (Normal::new(-1.0, 0.4).unwrap(), Normal::new(1.5, 0.6).unwrap());
    let xs: Vec<f64> =
        (0..n).map(|i| if i % 3 == 0 { a.sample(&mut rng) } else { b.sample(&mut rng) }).collect();
    Points::from_1d("x", &xs).unwrap()
}

/// The estimator is the composition of its building blocks: selection on the box, the fit at the
/// selected values, and the normaliser on the same box; with every value fixed there is no selection.
#[test]
fn estimator_composes_selection_fit_and_normalisation() {
    let x = two_bumps(40, 21);
    let select =
        SelectOptions { lengthscale_factors: vec![0.3, 0.6, 1.2], folds: 4, seed: 3, ..Default::default() };
    let params = KernelStudentTParams { select: select.clone(), ..Default::default() };
    let model = params.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    let domain = Domain::around(&x, select.margin).unwrap();
    let opts = SelectOptions { domain: Some(domain.clone()), ..select };
    let sel =
        select_hyperparameters::<DefaultBackend>(&x, KernelFamily::SquaredExponential, &opts, &()).unwrap();
    assert_eq!(
        (model.kernel(), model.niw(), model.cv_log_lik()),
        (&sel.kernel, sel.params, Some(sel.cv_log_lik))
    );
    let direct = KernelStudentT::with_kernel::<DefaultBackend>(sel.kernel.clone(), &x, sel.params)
        .unwrap()
        .normalise::<DefaultBackend>(domain, &NormaliseOptions::default())
        .unwrap();
    assert_eq!(model.normalisation(), direct.normalisation());
    // Fixed values: no selection, the given kernel and prior.
    let fixed = KernelStudentTParams {
        family: KernelFamily::Matern52,
        lengthscales: Some(vec![0.5]),
        alpha: Some(1.5),
        beta: Some(0.1),
        sigma0_sq: Some(2.0),
        normalise: false,
        ..Default::default()
    };
    let m = fixed.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    assert!(m.cv_log_lik().is_none() && m.normalisation().is_none());
    assert_eq!(m.kernel(), &Kernel::new(KernelFamily::Matern52, vec![0.5]).unwrap());
    let q = Points::from_1d("q", &[0.0, 1.0, 9.0]).unwrap();
    assert_eq!(
        m.log_density::<DefaultBackend>(&q).unwrap(),
        m.log_unnormalised::<DefaultBackend>(&q).unwrap()
    );
    // A fixed α is validated against the data's dimension at fit time, not before.
    let x2 = Points::new("x", (0..20).map(|i| (i as f64 * 0.7).sin()).collect(), 2).unwrap();
    let bad = KernelStudentTParams { alpha: Some(0.5), ..Default::default() }.check().unwrap();
    assert!(bad.fit::<DefaultBackend>(&x).is_ok(), "α = 0.5 > d − 1 = 0 in 1-D");
    let e = bad.fit::<DefaultBackend>(&x2).unwrap_err().to_string();
    assert!(e.contains("alpha") && e.contains("d - 1 = 1"), "{e}");
    let x3 = Points::new("x", vec![0.0, 1.0, 2.0, 1.0, 0.0, 2.0, 0.5, 0.5, 0.5], 3).unwrap();
    let e =
        KernelStudentTParams::default().check().unwrap().fit::<DefaultBackend>(&x3).unwrap_err().to_string();
    assert!(e.contains("1-D and 2-D"), "{e}");
    for bad in [
        KernelStudentTParams { beta: Some(0.0), ..Default::default() },
        KernelStudentTParams { lengthscales: Some(vec![]), ..Default::default() },
        KernelStudentTParams {
            select: SelectOptions { folds: 1, ..Default::default() },
            ..Default::default()
        },
        KernelStudentTParams {
            quadrature: NormaliseOptions { order: 0, ..Default::default() },
            ..Default::default()
        },
    ] {
        assert!(bad.check().is_err(), "{bad:?}");
    }
}
