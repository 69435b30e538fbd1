//! Tests of [`super`]: kernel selection for the tests.
use super::*;
use crate::hypothesis::kernels::TestFamily;
use bke_linalg::DefaultBackend;

fn select(x: &Points, s: &LengthscaleSelection) -> SelectedKernels {
    select_kernels::<DefaultBackend>(x, s, TestKind::TwoSample, &()).unwrap()
}

#[test]
fn fixed_and_median() {
    let x = Points::from_1d("x", &[0.0, 1.0, 3.0, 7.0]).unwrap();
    let f = select(&x, &LengthscaleSelection::fixed(0.3));
    assert_eq!(f.kernels, vec![WeightedKernel::gaussian(0.3)]);
    assert!(
        select_kernels::<DefaultBackend>(&x, &LengthscaleSelection::fixed(-1.0), TestKind::TwoSample, &())
            .is_err()
    );
    let m = select(&x, &LengthscaleSelection::median(MedianConvention::Muandet));
    assert_eq!((m.kernels[0].lengthscale, m.median_convention), (3.5, Some(MedianConvention::Muandet)));
    assert!(LengthscaleSelection::new(SelectRule::Fuse).validate(TestKind::Independence).is_err());
}

/// Every selection is a function of the multiset: shuffling the points changes nothing.
#[test]
fn selections_ignore_the_order_of_the_points() {
    let data: Vec<f64> =
        (0..300).map(|i| ((i * 7919 % 601) as f64 / 60.0).sin() * 2.0 + (i % 3) as f64).collect();
    let x = Points::new("x", data, 2).unwrap();
    let shuffled = x.select(&(0..150).map(|i| (i * 37) % 150).collect::<Vec<_>>());
    for s in [
        LengthscaleSelection::default(),
        LengthscaleSelection::bkl(3),
        LengthscaleSelection::new(SelectRule::Mmdagg),
        LengthscaleSelection::new(SelectRule::Fuse),
        LengthscaleSelection::new(SelectRule::BklBayes),
    ] {
        assert_eq!(select(&x, &s), select(&shuffled, &s), "{s:?}");
    }
}

/// BKL picks the within-cluster scale on well-separated tight clusters, where the median heuristic
/// picks the between-cluster distance; the choice is the best optimum it reports.
#[test]
fn bkl_finds_the_cluster_scale() {
    let mut data = Vec::new();
    for c in 0..4 {
        for i in 0..40 {
            let u = ((i * 37 + c * 11) % 41) as f64 / 40.0 - 0.5;
            let v = ((i * 17 + c * 5) % 43) as f64 / 42.0 - 0.5;
            data.push(10.0 * (c % 2) as f64 + 0.6 * u);
            data.push(10.0 * (c / 2) as f64 + 0.6 * v);
        }
    }
    let x = Points::new("x", data, 2).unwrap();
    let s = select(&x, &LengthscaleSelection::bkl(0));
    let med = select(&x, &LengthscaleSelection::median(MedianConvention::Muandet));
    let b = s.bkl.as_ref().unwrap();
    let theta = s.kernels[0].lengthscale;
    assert!(
        theta < 2.0 && med.kernels[0].lengthscale > 5.0,
        "bkl {theta} median {}",
        med.kernels[0].lengthscale
    );
    assert_eq!(b.local_optima[0].0, theta);
    assert!(theta >= b.resolution && b.resolution > 0.0, "{b:?}");
    assert_eq!(b.landmarks, 100);
    let small = x.select(&(0..60).map(|i| i * 2).collect::<Vec<_>>());
    assert_eq!(select(&small, &LengthscaleSelection::bkl(0)).bkl.unwrap().landmarks, 12);
}

/// The BKL-Bayes weights are the tempered posterior masses of the scan cells: recomputed here from
/// the scan of an independent ML-II fit.
#[test]
fn bkl_bayes_weights_are_the_tempered_posterior() {
    let data: Vec<f64> =
        (0..200).map(|i| (i as f64 * 0.61803).fract() * if i % 2 == 0 { 1.0 } else { 3.0 }).collect();
    let x = Points::from_1d("x", &data).unwrap();
    let p = BklParams::default();
    let s = select(&x, &LengthscaleSelection::with_bkl(SelectRule::BklBayes, p.clone()));
    let r = p.fit::<DefaultBackend>(&canonical_order(&x), &()).unwrap();
    let top = r.scan.iter().map(|v| v.log_marginal).fold(f64::NEG_INFINITY, f64::max);
    let mut mass = [0.0; 11];
    for (j, l) in r.scan.iter().map(|v| v.log_marginal).enumerate() {
        mass[(j + 2) / 4] += ((l - top) / r.n_data as f64).exp();
    }
    let largest = mass.iter().copied().fold(0.0, f64::max);
    let kept: Vec<usize> = (0..11).filter(|&c| mass[c] >= 1e-3 * largest).collect();
    let total: f64 = kept.iter().map(|&c| mass[c]).sum();
    // the posterior kernels first, at (1 − ε) of their mass plus the prior kernels merged into them;
    // the prior: the 20 MMDAgg and 20 MMD-FUSE kernels at 1/40 each, a kernel within a factor MERGE_RATIO of an
    // earlier one of its family merged into it
    let families = Families::Both.list();
    let mut union = mmdagg_collection(&x, &families, 10, BandwidthWeights::Uniform).unwrap();
    union.extend(fuse_collection(&x, &families, 10).unwrap());
    let prior = prior_collection(&x, TestKind::TwoSample).unwrap();
    let near = |a: &WeightedKernel, b: &WeightedKernel| {
        a.family == b.family && (a.lengthscale / b.lengthscale).ln().abs() < MERGE_RATIO.ln()
    };
    for (i, a) in prior.iter().enumerate() {
        assert!(prior[..i].iter().all(|b| !near(a, b)), "{a:?} duplicates an earlier kernel");
        let absorbed = union.iter().filter(|u| prior.iter().position(|b| near(u, b)) == Some(i)).count();
        assert!((a.weight - absorbed as f64 / 40.0).abs() < 1e-12, "{a:?}: {absorbed} kernels");
    }
    assert!(prior.len() < 30 && union.iter().all(|u| prior.iter().any(|b| near(u, b))));
    for (k, &c) in s.kernels.iter().zip(&kept) {
        assert_eq!((k.family, k.lengthscale), (TestFamily::Gaussian, r.scan[4 * c].lengthscale));
        let posterior = (1.0 - PRIOR_SHARE) * mass[c] / total;
        let merged: f64 = prior.iter().filter(|u| near(u, k)).map(|u| PRIOR_SHARE * u.weight).sum();
        assert!(k.weight >= posterior - 1e-12 && k.weight <= posterior + merged + 1e-12);
    }
    assert!((s.kernels.iter().map(|k| k.weight).sum::<f64>() - 1.0).abs() < 1e-12);
    // HSIC: the prior is the variable's 5 HSICAgg bandwidths
    let h = select_kernels::<DefaultBackend>(
        &x,
        &LengthscaleSelection::with_bkl(SelectRule::BklBayes, p),
        TestKind::Independence,
        &(),
    )
    .unwrap();
    let hsicagg: Vec<WeightedKernel> =
        hsicagg_lengthscales(&x).unwrap().into_iter().map(WeightedKernel::gaussian).collect();
    assert!(h.kernels.len() >= kept.len() && h.kernels.len() <= kept.len() + 5);
    assert!(hsicagg.iter().all(|u| h.kernels.iter().any(|k| near(u, k))));
}

/// A kernel in both collections gets both shares.
#[test]
fn contamination_merges_shared_kernels() {
    let post = [
        WeightedKernel { weight: 0.75, ..WeightedKernel::gaussian(1.0) },
        WeightedKernel { weight: 0.25, ..WeightedKernel::gaussian(2.0) },
    ];
    let prior = [
        WeightedKernel { weight: 0.5, ..WeightedKernel::gaussian(2.0) },
        WeightedKernel { family: TestFamily::LaplaceL1, lengthscale: 2.0, weight: 0.5 },
    ];
    let w: Vec<f64> = contaminate(&post, &prior, 0.5).iter().map(|k| k.weight).collect();
    assert_eq!(w, vec![0.375, 0.125 + 0.25, 0.25]);
}

fn uniform(n: usize, d: usize, seed: u64) -> Points {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    Points::new("u", (0..n * d).map(|_| rng.random::<f64>()).collect(), d).unwrap()
}

/// For a Poisson sample of intensity `h^{−D}` the spacing estimate is `h`: uniform landmarks on the
/// unit interval and square, `h = m^{−1/D}`, within the estimate's sampling error.
#[test]
fn landmark_spacing_of_a_uniform_sample() {
    for (d, m) in [(1, 2000), (2, 2000), (3, 3000)] {
        let h = landmark_spacing(&uniform(m, d, 7));
        let expect = (m as f64).powf(-1.0 / d as f64);
        // boundary effects lengthen nearest-neighbour distances a little in d = 3
        assert!((h / expect - 1.0).abs() < 0.08, "d = {d}: {h} vs {expect}");
    }
    assert_eq!(landmark_spacing(&uniform(1, 2, 0)), 0.0);
}

/// The BKL rule recomputed from a fit's scan and optima (module docs): the best of the interior
/// optima between the limits and the scan points at the limits.
fn best_between_limits(r: &FittedEmbedding, b: &BklSummary) -> (f64, f64) {
    let at = |l: f64| r.scan.iter().find(|v| v.lengthscale == l).map(|v| (l, v.log_marginal)).unwrap();
    let top = b.upper_limit.max(b.median_distance);
    r.local_optima
        .iter()
        .filter(|o| !o.at_boundary && o.lengthscales[0] >= b.resolution && o.lengthscales[0] <= top)
        .map(|o| (o.lengthscales[0], o.log_marginal))
        .chain([at(b.resolution), at(b.upper_limit)])
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap()
}

/// On uniform 1-D data the global optimum of the pseudolikelihood lies below the landmark spacing
/// (the degenerate optimum, module docs): BKL rejects it and takes the best resolved value.
#[test]
fn bkl_rejects_the_sub_resolution_optimum() {
    let x = uniform(600, 1, 3);
    let p = BklParams::default();
    let s = select(&x, &LengthscaleSelection::with_bkl(SelectRule::Bkl, p.clone()));
    let b = s.bkl.as_ref().unwrap();
    let r = p.fit::<DefaultBackend>(&canonical_order(&x), &()).unwrap();
    let h = landmark_spacing(&r.landmarks);
    // 100 landmarks on [0, 1]: h ≈ 0.01; the degenerate optimum sits near 0.6 h
    assert!((h - 0.01).abs() < 0.004, "{h}");
    assert!(r.local_optima[0].lengthscales[0] < h, "{:?}", r.local_optima);
    let limit = r.scan.iter().find(|v| v.lengthscale >= h).unwrap();
    assert_eq!(b.resolution, limit.lengthscale);
    assert_eq!((s.kernels[0].lengthscale, b.log_marginal), best_between_limits(&r, b));
    assert!(s.kernels[0].lengthscale >= h && s.kernels[0].lengthscale < 0.1 * b.median_distance);
}

/// On a normal and a Laplace sample with equal variance pooled (`repro power --dims laplace`) the best
/// resolved value can be the "nearly constant" optimum at ≈ 3 × the median distance (module docs):
/// BKL takes the best value up to the median distance instead.
#[test]
fn bkl_ignores_optima_above_the_median_distance() {
    use rand::{Rng, SeedableRng};
    use rand_distr::{Distribution, StandardNormal};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let normal_and_laplace: Vec<f64> = (0..400)
        .map(|i| {
            if i % 2 == 0 {
                StandardNormal.sample(&mut rng)
            } else {
                let t = rng.random::<f64>() - 0.5;
                -t.signum() * (1.0 - 2.0 * t.abs()).max(f64::MIN_POSITIVE).ln() / std::f64::consts::SQRT_2
            }
        })
        .collect();
    let x = Points::from_1d("x", &normal_and_laplace).unwrap();
    let p = BklParams::default();
    let s = select(&x, &LengthscaleSelection::with_bkl(SelectRule::Bkl, p.clone()));
    let b = s.bkl.as_ref().unwrap();
    let r = p.fit::<DefaultBackend>(&canonical_order(&x), &()).unwrap();
    let chosen = best_between_limits(&r, b);
    assert_eq!((s.kernels[0].lengthscale, b.log_marginal), chosen);
    assert!(b.upper_limit <= b.median_distance && b.upper_limit > 0.8 * b.median_distance, "{b:?}");
    let far = r.local_optima.iter().find(|o| o.lengthscales[0] > 2.0 * b.median_distance).unwrap();
    assert!(far.log_marginal > chosen.1, "{:?} {chosen:?}", r.local_optima);
    assert!(chosen.0 <= b.median_distance && chosen.0 >= b.resolution);
}

/// The seed's ML-II takes the largest pseudolikelihood anywhere on the scan (the degenerate optimum
/// below the landmark spacing included), where BKL keeps to the resolved range; it parses as `ml-ii`.
#[test]
fn ml_ii_is_the_global_optimum_of_the_scan() {
    let x = uniform(300, 1, 11);
    let p = BklParams::default();
    let s = select(&x, &LengthscaleSelection::with_bkl(SelectRule::MlIi, p.clone()));
    let r = p.fit::<DefaultBackend>(&canonical_order(&x), &()).unwrap();
    let best = r
        .scan
        .iter()
        .map(|v| v.log_marginal)
        .chain(r.local_optima.iter().map(|o| o.log_marginal))
        .fold(f64::NEG_INFINITY, f64::max);
    let summary = s.bkl.as_ref().unwrap();
    assert_eq!(summary.log_marginal, best);
    let bkl = select(&x, &LengthscaleSelection::with_bkl(SelectRule::Bkl, p));
    assert!(bkl.bkl.as_ref().unwrap().log_marginal <= best);
    let rule = LengthscaleSelection::new("ml-ii".parse().unwrap());
    rule.validate(TestKind::Independence).unwrap();
    assert_eq!(rule.name(), "ml-ii");
}

/// A binary sample (78 zeros, 22 ones): the median heuristic takes the positive distances, and for
/// every landmark seed BKL-Bayes gives a collection — the prior collection alone for the seeds
/// whose held-out landmarks leave the pseudolikelihood nowhere finite (seed 122 among them).
#[test]
fn bkl_bayes_on_a_binary_sample_falls_back_to_the_prior() {
    let mut v = vec![0.0; 78];
    v.extend([1.0; 22]);
    let x = Points::from_1d("t", &v).unwrap();
    let prior = prior_collection(&canonical_order(&x), TestKind::Independence).unwrap();
    let mut prior_only = Vec::new();
    for seed in 0..200 {
        let s =
            LengthscaleSelection::with_bkl(SelectRule::BklBayes, BklParams { seed, ..BklParams::default() });
        let got = select_kernels::<DefaultBackend>(&x, &s, TestKind::Independence, &()).unwrap();
        if got.kernels == prior {
            prior_only.push(seed);
            let fields =
                serde_json::to_value(super::super::report::SelectionFields::new(&got, "_x", true)).unwrap();
            assert!(fields.get("bkl_log_marginal_x").is_none(), "{fields}");
            assert!(!fields.to_string().contains("null"), "{fields}");
        }
    }
    assert!(prior_only.contains(&122), "{prior_only:?}");
}

/// In 20 dimensions the BKL-Bayes scan leaves out the grid points of negligible posterior mass (most
/// of them), and its collection is the one of the full scan.
#[test]
fn bkl_bayes_collection_is_the_full_scans() {
    let x = canonical_order(&uniform(400, 20, 3));
    let p = BklParams::default();
    let bounded = p.scan::<DefaultBackend>(&x, &()).unwrap();
    let full = scan_of(&p.fit::<DefaultBackend>(&x, &()).unwrap());
    let left_out = bounded.scan.iter().filter(|s| s.log_marginal == f64::NEG_INFINITY).count();
    assert!(left_out >= 10, "{left_out} of {} left out", bounded.scan.len());
    assert_eq!(posterior_collection(&bounded), posterior_collection(&full));
}
