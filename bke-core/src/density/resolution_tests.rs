//! The check that a quadrature resolved the density (`density::bound`), against independent
//! oracles: accurate normalisers of ordinary densities, brute-force integration of the narrow peaks of
//! a degenerate one, and the held-out log-likelihood recomputed with the accurate normaliser.

use super::bound::LowerBound;
use super::tail_tests::normal_draws;
use super::tails::Grid;
use super::*;
use crate::LogDensity;
use crate::numeric::log_sum_exp;
use bke_linalg::DefaultBackend;

/// `Q` and the bound at the densest training point of a model on `domain`.
fn bound_at_data(model: &KernelStudentT, domain: &Domain) -> f64 {
    let n = model.data().len();
    let niw = model.niw();
    let q = model.mahalanobis::<DefaultBackend>(model.data()).unwrap();
    let q_min = q.into_iter().fold(f64::INFINITY, f64::min);
    LowerBound::new(model.kernel(), domain).log_bound(q_min, niw.gamma(n), niw.exponent(n), niw.sigma0_sq)
}

/// The bound holds, and is not vacuous, for every stationary family in 1-D and 2-D: below the
/// box normaliser of a fine uniform rule (no check), within a factor `e^{6d}` of it for these
/// ordinary densities (the bound counts the orthant of one point of 25).
#[test]
fn the_lower_bound_holds_for_every_family() {
    for d in [1usize, 2] {
        let x = normal_draws(25, d, 40 + d as u64);
        for family in [
            KernelFamily::SquaredExponential,
            KernelFamily::Laplace,
            KernelFamily::Matern32,
            KernelFamily::Matern52,
            KernelFamily::RationalQuadratic { alpha: 0.7 },
        ] {
            for niw in [
                NiwParams { alpha: 1.5, beta: 0.1, sigma0_sq: 1.0 },
                NiwParams { alpha: 30.0, beta: 1e-3, sigma0_sq: 0.1 },
            ] {
                let kernel = Kernel::new(family, vec![0.4; d]).unwrap();
                let domain = Domain::around(&x, 0.25).unwrap();
                let model = KernelStudentT::with_kernel::<DefaultBackend>(kernel, &x, niw).unwrap();
                let lb = bound_at_data(&model, &domain);
                // The oracle, without the check: a fine uniform rule on the box.
                let fine = Grid::new(&domain, None, 1, if d == 1 { 1024 } else { 64 }, 8).unwrap();
                let lq = model.log_unnormalised::<DefaultBackend>(&fine.nodes).unwrap();
                let terms: Vec<f64> = lq.iter().zip(&fine.log_weights).map(|(a, b)| a + b).collect();
                let brute = log_sum_exp(&terms);
                assert!(lb <= brute, "{family:?} d={d} {niw:?}: bound {lb} above log Z_B {brute}");
                let fitted =
                    model.normalise::<DefaultBackend>(domain.clone(), &NormaliseOptions::default()).unwrap();
                let norm = fitted.normalisation().unwrap();
                let lz = norm.log_z_box();
                // (the Laplace kernel's cusps at the data slow both rules down: agreement to 1 %)
                assert!(
                    (lz - brute).abs() < 1e-2,
                    "{family:?} d={d} {niw:?}: log Z_B {lz} vs fine rule {brute}"
                );
                assert!(lb > lz - 6.0 * d as f64, "{family:?} d={d} {niw:?}: bound {lb} vacuous vs {lz}");
                assert!(norm.log_z_lower_bound.is_some_and(|b| b >= lb - 1e-9), "{norm:?}");
            }
        }
    }
}

/// Temperatures-like data: integers, spread 12 (the shape of `ozone.csv`'s `temp`).
fn integer_data(n: usize) -> Points {
    let z = normal_draws(n, 1, 44);
    Points::from_1d("temp", &z.iter().map(|p| (60.0 + 12.0 * p[0]).round()).collect::<Vec<_>>()).unwrap()
}

/// The corner the wide search of issue 34 escaped to (α = 1.4e6, β = 1e-6, σ₀² = 1e-4 on a box 100
/// ranges wide): the search rule sees only the floor and underestimates `Z_B` by a factor beyond
/// `e^{10^5}`; brute force around the peaks (fine midpoint rules over ±40 peak widths of every
/// distinct value, plus the floor elsewhere) gives the true `Z_B`, which the bound does not exceed
/// while the rule's estimate falls far below it. The fit with these values fails, naming the cause.
#[test]
fn the_degenerate_corner_is_detected() {
    let x = integer_data(120);
    let niw = NiwParams { alpha: 1.4e6, beta: 1e-6, sigma0_sq: 1e-4 };
    let kernel = Kernel::se(0.03 * 12.0).unwrap();
    let domain = Domain::around(&x, 100.0).unwrap();
    let model = KernelStudentT::with_kernel::<DefaultBackend>(kernel.clone(), &x, niw).unwrap();
    let lb = bound_at_data(&model, &domain);
    // a uniform rule of 48 panels on the box, as a search without a core would use
    let grid = Grid::new(&domain, None, 48, 48, 8).unwrap();
    let lq = model.log_unnormalised::<DefaultBackend>(&grid.nodes).unwrap();
    let terms: Vec<f64> = lq.iter().zip(&grid.log_weights).map(|(a, b)| a + b).collect();
    let search = log_sum_exp(&terms);
    // Brute force: the peaks sit at the distinct values, their widths from the second difference of
    // log q. Midpoint rules over disjoint windows of ±40 widths sum to less than Z_B (the rest of the
    // box is left out), so the bound must lie below their sum.
    let mut values: Vec<f64> = x.iter().map(|p| p[0]).collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let at = |v: &[f64]| model.log_unnormalised::<DefaultBackend>(&Points::from_1d("v", v).unwrap()).unwrap();
    let mut parts = Vec::new();
    for &v in &values {
        let mut e = 1e-2;
        let width = loop {
            let l = at(&[v - e, v, v + e]);
            let drop = l[1] - 0.5 * (l[0] + l[2]);
            if drop < 1.0 {
                break e / (2.0 * drop).sqrt();
            }
            e /= 4.0;
        };
        assert!(80.0 * width < 1.0, "windows overlap: width {width}");
        let m = 1000;
        let h = 80.0 * width / m as f64;
        let xs: Vec<f64> = (0..m).map(|i| v - 40.0 * width + (i as f64 + 0.5) * h).collect();
        parts.push(log_sum_exp(&at(&xs)) + h.ln());
    }
    let brute = log_sum_exp(&parts);
    assert!(lb <= brute, "bound {lb} above the brute-force log Z_B {brute}");
    assert!(search < lb - 1e5, "the search rule's {search} should fall far below the bound {lb}");
    let params = KernelStudentTParams {
        lengthscales: Some(kernel.lengthscales().to_vec()),
        alpha: Some(niw.alpha),
        beta: Some(niw.beta),
        sigma0_sq: Some(niw.sigma0_sq),
        select: SelectOptions { margin: 100.0, ..Default::default() },
        ..Default::default()
    };
    let e = params.check().unwrap().fit::<DefaultBackend>(&x).unwrap_err().to_string();
    assert!(e.contains("does not resolve") && e.contains("margin") && e.contains("sigma0_sq"), "{e}");
}

/// On a box 100 ranges wide the selection leaves the unresolved candidates out (and says so), and
/// the held-out log-likelihood it reports is the true one: recomputed fold by fold with the
/// accurate, checked normaliser it agrees, and it respects the data's resolution (integers: a
/// held-out log density above 0 would put more than all the mass in one unit bin).
#[test]
fn a_wide_box_selects_a_resolved_density() {
    let x = integer_data(60);
    let opts = SelectOptions { folds: 3, margin: 100.0, ..Default::default() };
    let sel =
        select_hyperparameters::<DefaultBackend>(&x, KernelFamily::SquaredExponential, &opts, &()).unwrap();
    assert!(
        sel.unresolved > 0 && sel.grid_notes.iter().any(|n| n.contains("left out")),
        "{:?}",
        sel.grid_notes
    );
    assert!(sel.cv_log_lik < 0.0, "cv {} exceeds the data's resolution bound 0", sel.cv_log_lik);
    let n = x.len();
    let mut perm: Vec<usize> = (0..n).collect();
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    perm.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed));
    let mut total = 0.0;
    for f in 0..3 {
        let val: Vec<usize> = perm.iter().copied().skip(f).step_by(3).collect();
        let train: Vec<usize> = (0..n).filter(|i| !val.contains(i)).collect();
        let m =
            KernelStudentT::with_kernel::<DefaultBackend>(sel.kernel.clone(), &x.select(&train), sel.params)
                .unwrap()
                .normalise::<DefaultBackend>(sel.domain.clone(), &NormaliseOptions::default())
                .unwrap();
        total += m.log_density::<DefaultBackend>(&x.select(&val)).unwrap().iter().sum::<f64>();
    }
    let direct = total / n as f64;
    assert!((direct - sel.cv_log_lik).abs() < 1e-3 * direct.abs().max(1.0), "{direct} vs {}", sel.cv_log_lik);
}

/// The graded rule refines by cutting every panel in two: the rule at `2p` has twice the pieces of
/// the rule at `p` on every axis, every break point of the coarse rule is one of the fine rule, and
/// both integrate a cubic over the wide box exactly.
#[test]
fn graded_rules_are_nested() {
    let x = integer_data(40);
    let domain = Domain::around(&x, 30.0).unwrap();
    let core = super::tails::core_of(&x, &domain).unwrap().expect("a wide box has a core");
    let (l, u) = (domain.lower[0], domain.upper[0]);
    let exact = (u.powi(4) - l.powi(4)) / 4.0;
    let mut previous: Option<Vec<f64>> = None;
    for p in [8usize, 16, 32] {
        let grid = Grid::new(&domain, Some(&core), 8, p, 4).unwrap();
        let breaks = grid.break_points(0);
        let integral: f64 =
            grid.nodes.iter().zip(&grid.log_weights).map(|(v, w)| v[0].powi(3) * w.exp()).sum();
        assert!((integral - exact).abs() < 1e-9 * exact.abs().max(u.powi(4)), "{integral} vs {exact}");
        if let Some(coarse) = previous {
            assert_eq!(breaks.len() - 1, 2 * (coarse.len() - 1), "p = {p}");
            for b in &coarse {
                assert!(breaks.iter().any(|f| (f - b).abs() <= 1e-9 * (u - l)), "{b} missing at p = {p}");
            }
        }
        previous = Some(breaks);
    }
}

/// No panic and no overflow on absurd scales: a box 2e300 wide with lengthscale 1e-300 gives a
/// finite bound (the ball is capped), and a domain of the wrong dimension is refused, not indexed.
#[test]
fn the_bound_survives_extreme_scales_and_wrong_dimensions() {
    let domain = Domain::new(vec![-1e300], vec![1e300]).unwrap();
    let bound = LowerBound::new(&Kernel::se(1e-300).unwrap(), &domain);
    let lb = bound.log_bound(0.0, 1.0, 2.0, 1.0);
    assert!(lb.is_finite(), "{lb}");
    let x = normal_draws(10, 2, 3);
    let ard = Kernel::se_ard(vec![0.5, 0.7]).unwrap();
    let model = KernelStudentT::with_kernel::<DefaultBackend>(
        ard,
        &x,
        NiwParams { alpha: 2.0, beta: 1.0, sigma0_sq: 1.0 },
    )
    .unwrap();
    let three = Domain::new(vec![-3.0; 3], vec![3.0; 3]).unwrap();
    let e = model.normalise::<DefaultBackend>(three, &NormaliseOptions::default()).unwrap_err();
    assert!(matches!(e, CoreError::DimensionMismatch { expected: 2, found: 3, .. }), "{e}");
}
