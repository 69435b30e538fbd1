//! The density on the whole space (box and tails) against independent oracles: quadrature over a
//! very wide range in another parametrisation (1-D), Monte Carlo with a known Cauchy proposal (2-D),
//! the analytic Student-t of the linear kernel, and counts of draws.

use super::tests::explicit_log_t;
use super::*;
use crate::LogDensity;
use crate::numeric::log_sum_exp;
use bke_linalg::DefaultBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// `n` rows of `d` independent standard normal draws.
pub(super) fn normal_draws(n: usize, d: usize, seed: u64) -> Points {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let nd = Normal::new(0.0, 1.0).unwrap();
    Points::new("x", (0..n * d).map(|_| nd.sample(&mut rng)).collect(), d).unwrap()
}

/// `∫_a^∞ exp(f(x)) dx` (`dir = 1`) or `∫_{−∞}^a` (`dir = −1`) of a 1-D log density by
/// `x = a ± s sinh v`: the trapezoid rule in `v ∈ [0, 45]` with step `1e-3` (the substitution turns a
/// Cauchy tail into `e^{−v}`). Independent of the model's tan-mapped Gauss–Legendre rules.
fn half_line(model: &KernelStudentT, a: f64, dir: f64, s: f64) -> f64 {
    let h = 1e-3;
    let vs: Vec<f64> = (0..=45_000).map(|i| i as f64 * h).collect();
    let xs: Vec<f64> = vs.iter().map(|v| a + dir * s * v.sinh()).collect();
    let ld = model.log_density::<DefaultBackend>(&Points::from_1d("v", &xs).unwrap()).unwrap();
    let f: Vec<f64> = ld.iter().zip(&vs).map(|(l, v)| l.exp() * s * v.cosh()).collect();
    h * (f.iter().sum::<f64>() - 0.5 * (f[0] + f[f.len() - 1]))
}

/// The example of issue 34: the default fit on 150 draws of N(0, 1). The density integrates to 1
/// over ℝ (oracle: the trapezoid rule in `x = sinh v` over both half-lines), the mass beyond the
/// box is the reported tail mass, and the log density is finite and decreasing far out.
#[test]
fn the_density_of_the_issue_integrates_to_one_over_the_line() {
    let x = normal_draws(150, 1, 34);
    let model = KernelStudentTParams::default().check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    let norm = model.normalisation().unwrap().clone();
    assert!(norm.converged && norm.rel_err < 1e-6, "{norm:?}");
    assert_eq!(norm.tail.map(|t| t.weight), Some(TailWeight::Cauchy));
    let total = half_line(&model, 0.0, 1.0, 1.0) + half_line(&model, 0.0, -1.0, 1.0);
    assert!((total - 1.0).abs() < 1e-6, "∫ p = {total}");
    let (l, u) = (norm.domain.lower[0], norm.domain.upper[0]);
    let outside = half_line(&model, u, 1.0, 1.0) + half_line(&model, l, -1.0, 1.0);
    assert!((outside - norm.tail_mass()).abs() < 1e-6 * norm.tail_mass().max(1e-3), "{outside} vs {norm:?}");
    // The test point of the issue, and ever farther ones, both ways.
    for sign in [1.0, -1.0] {
        let far: Vec<f64> =
            [3.0, 5.0, 10.0, 100.0, 1e4, 1e8, 1e150, 1e300].iter().map(|v| sign * v).collect();
        let ld = model.log_density::<DefaultBackend>(&Points::from_1d("far", &far).unwrap()).unwrap();
        assert!(ld.iter().all(|v| v.is_finite()), "{ld:?}");
        assert!(ld.windows(2).all(|w| w[1] < w[0]), "not decreasing: {ld:?}");
    }
}

/// 2-D: importance sampling from a known proposal (a mixture of a standard normal and a product of
/// Cauchy densities of the box's width, as heavy-tailed as the density) estimates `∫ p = 1` within
/// its standard error.
#[test]
fn the_density_integrates_to_one_over_the_plane() {
    let x = normal_draws(40, 2, 35);
    let model = KernelStudentT::with_kernel::<DefaultBackend>(
        Kernel::se_ard(vec![0.6, 0.8]).unwrap(),
        &x,
        NiwParams { alpha: 1.5, beta: 0.1, sigma0_sq: 1.0 },
    )
    .unwrap()
    .normalise::<DefaultBackend>(Domain::around(&x, 0.25).unwrap(), &NormaliseOptions::default())
    .unwrap();
    let norm = model.normalisation().unwrap();
    assert!(norm.converged, "{norm:?}");
    assert!(norm.tail_mass() > 1e-3, "the tails matter here: {}", norm.tail_mass());
    // The proposal: with probability 0.8 a standard normal pair (where the data are), else a pair of
    // Cauchy draws of the box's width (the tails).
    let m = 500_000;
    let s = norm.domain.upper[0] - norm.domain.lower[0];
    let mut rng = ChaCha8Rng::seed_from_u64(36);
    let nd = Normal::new(0.0, 1.0).unwrap();
    let draws: Vec<f64> = (0..m)
        .flat_map(|_| {
            if rng.random::<f64>() < 0.8 {
                [nd.sample(&mut rng), nd.sample(&mut rng)]
            } else {
                [0, 1].map(|_| s * (std::f64::consts::PI * (rng.random::<f64>() - 0.5)).tan())
            }
        })
        .collect();
    let log_r = |p: &[f64]| -> f64 {
        let normal: f64 = p.iter().map(|v| -0.5 * v * v - 0.5 * (2.0 * std::f64::consts::PI).ln()).sum();
        let cauchy: f64 = p.iter().map(|v| -(std::f64::consts::PI * s).ln() - (v / s).powi(2).ln_1p()).sum();
        log_sum_exp(&[0.8f64.ln() + normal, 0.2f64.ln() + cauchy])
    };
    let pts = Points::new("is", draws, 2).unwrap();
    let ld = model.log_density::<DefaultBackend>(&pts).unwrap();
    let w: Vec<f64> = ld.iter().zip(pts.iter()).map(|(l, p)| (l - log_r(p)).exp()).collect();
    let mean = w.iter().sum::<f64>() / m as f64;
    let se = (w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (m as f64 * (m - 1) as f64)).sqrt();
    assert!(se < 2.5e-3 && (mean - 1.0).abs() < 5.0 * se, "∫ p ≈ {mean} ± {se}");
    // Along a ray out of the box the log density is finite and decreasing.
    let ray: Vec<f64> = [2.0, 5.0, 50.0, 1e3, 1e6].iter().flat_map(|r| [0.6 * r, -0.8 * r]).collect();
    let ld = model.log_density::<DefaultBackend>(&Points::new("ray", ray, 2).unwrap()).unwrap();
    assert!(ld.iter().all(|v| v.is_finite()) && ld.windows(2).all(|w| w[1] < w[0]), "{ld:?}");
}

/// With the linear kernel the estimate is the NIW Student-t in input space (seed 003 eq. (3)),
/// integrable by itself: its tails are integrated with weight 1, so the normalised density equals
/// the analytic Student-t everywhere, far beyond a narrow box included (1-D and 2-D).
#[test]
fn linear_kernel_density_is_the_student_t_on_the_whole_space() {
    let lin = Polynomial::new(vec![0.0, 1.0]).unwrap();
    for d in [1usize, 2] {
        let x = normal_draws(12 * d, d, 37 + d as u64);
        let params = NiwParams { alpha: d as f64 + 0.5, beta: 0.5, sigma0_sq: 0.8 };
        let model = KernelStudentT::with_kernel::<DefaultBackend>(lin.clone(), &x, params)
            .unwrap()
            .normalise::<DefaultBackend>(
                Domain::around(&x, 0.05).unwrap(),
                &NormaliseOptions { rel_tol: 1e-10, ..Default::default() },
            )
            .unwrap();
        let norm = model.normalisation().unwrap();
        assert_eq!(norm.tail.map(|t| t.weight), Some(TailWeight::One));
        assert!(norm.tail_mass() > 1e-3, "d={d}: {norm:?}");
        let q = Points::new(
            "q",
            (0..8 * d).map(|i| (i as f64 * 1.7).cos() * 4.0 * (1 + i % 3) as f64).collect(),
            d,
        )
        .unwrap();
        let ld = model.log_density::<DefaultBackend>(&q).unwrap();
        for i in 0..q.len() {
            let exact = explicit_log_t(&lin, &x, q.point(i), params);
            assert!((ld[i] - exact).abs() < 1e-7, "d={d} at {:?}: {} vs {exact}", q.point(i), ld[i]);
        }
    }
}

/// Draws reach the tails in proportion to their mass: the fraction outside the box, and beyond two
/// box widths past the upper face, against the oracle integrals (binomial z-scores below 5).
#[test]
fn samples_reach_the_tails() {
    let x = normal_draws(12, 1, 38);
    let model = KernelStudentT::with_kernel::<DefaultBackend>(
        Kernel::se(0.5).unwrap(),
        &x,
        NiwParams { alpha: 0.5, beta: 1.0, sigma0_sq: 1.0 },
    )
    .unwrap()
    .normalise::<DefaultBackend>(Domain::around(&x, 0.25).unwrap(), &NormaliseOptions::default())
    .unwrap();
    let norm = model.normalisation().unwrap().clone();
    let (l, u) = (norm.domain.lower[0], norm.domain.upper[0]);
    let far = u + 2.0 * (u - l);
    let n = 20_000;
    let s = model.sample::<DefaultBackend>(n, 5).unwrap();
    assert_eq!(s.envelope_violations, 0);
    let v = s.points.as_slice();
    for (count, p) in [
        (v.iter().filter(|&&t| t < l || t > u).count(), norm.tail_mass()),
        (v.iter().filter(|&&t| t > far).count(), half_line(&model, far, 1.0, u - l)),
    ] {
        assert!(p > 1e-3, "{p}");
        let z = (count as f64 - n as f64 * p) / (n as f64 * p * (1.0 - p)).sqrt();
        assert!(z.abs() < 5.0, "{count} of {n} vs p = {p}: z = {z}");
    }
}

/// `tails: false` truncates the density to the box (data known to live in it, as the fantasy data
/// of seed 003 Fig. 2): 0 outside, draws inside, the same box integral as the whole-space normaliser's.
#[test]
fn without_tails_the_density_is_truncated_to_the_box() {
    let x = normal_draws(12, 1, 39);
    let model = KernelStudentT::with_kernel::<DefaultBackend>(
        Kernel::se(0.5).unwrap(),
        &x,
        NiwParams { alpha: 0.5, beta: 1.0, sigma0_sq: 1.0 },
    )
    .unwrap();
    let domain = Domain::around(&x, 0.25).unwrap();
    let whole =
        model.clone().normalise::<DefaultBackend>(domain.clone(), &NormaliseOptions::default()).unwrap();
    let boxed = model
        .normalise::<DefaultBackend>(domain.clone(), &NormaliseOptions { tails: false, ..Default::default() })
        .unwrap();
    let (w, b) = (whole.normalisation().unwrap(), boxed.normalisation().unwrap());
    assert!(b.tail.is_none() && b.tail_mass() == 0.0 && w.tail_mass() > 1e-3);
    assert!((b.log_z - w.log_z_box()).abs() < 1e-9, "{b:?} vs {w:?}");
    let q = Points::from_1d("q", &[0.0, domain.upper[0] + 1.0]).unwrap();
    let ld = boxed.log_density::<DefaultBackend>(&q).unwrap();
    assert!(ld[0].is_finite() && ld[1] == f64::NEG_INFINITY, "{ld:?}");
    let s = boxed.sample::<DefaultBackend>(2000, 3).unwrap();
    assert!(s.points.iter().all(|p| domain.contains(p)));
}
