//! The BKL pseudolikelihood profile behind the module docs of `bke_core::hypothesis::select`: on the
//! pooled sample of one perturbed-uniform data set (`repro power`), the scan of the log marginal
//! pseudolikelihood split into its Gaussian and Jacobian terms, the landmark spacing, and the kernels
//! BKL and BKL-Bayes choose.
//!
//! `cargo run --release -p bke-report --example bkl_profile -- [d=1] [scale=0.3] [landmarks=100] [seed=1] [q]`
//! (`q`: only the chosen kernels); `d = laplace`: normal vs Laplace (`repro power --dims laplace`),
//! the scale the sample size `n`.

use bke_core::embedding::EmbeddingParams;
use bke_core::hypothesis::select::canonical_order;
use bke_core::{BkeParams, Params, Points, marginal_pseudolikelihood};
use bke_linalg::Faer;
use bke_report::repro::power::{normal_vs_laplace, perturbed_uniform};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let laplace = args.get(1).is_some_and(|v| v == "laplace");
    let d: usize = if laplace { 1 } else { args.get(1).map_or(1, |v| v.parse().unwrap()) };
    let s: f64 = args.get(2).map_or(0.3, |v| v.parse().unwrap());
    let m: usize = args.get(3).map_or(100, |v| v.parse().unwrap());
    let seed: u64 = args.get(4).map_or(1, |v| v.parse().unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (x, y) = if laplace {
        let data = normal_vs_laplace(&mut rng, s as usize);
        (data.x, data.y)
    } else {
        (
            perturbed_uniform(&mut rng, 500, d, None),
            perturbed_uniform(&mut rng, 500, d, (s > 0.0).then_some(s)),
        )
    };
    let z = canonical_order(&x.concat(&y).unwrap());
    let r = EmbeddingParams { num_landmarks: m, seed: 0, ..EmbeddingParams::default() }
        .check()
        .unwrap()
        .fit::<Faer>(&z)
        .unwrap();
    for sel in [
        bke_core::hypothesis::LengthscaleSelection::default(),
        bke_core::hypothesis::LengthscaleSelection::bkl(0),
    ] {
        let k = bke_core::hypothesis::select::select_kernels::<Faer>(
            &z,
            &sel,
            bke_core::hypothesis::select::TestKind::TwoSample,
            &(),
        )
        .unwrap();
        println!("{:?}", k.kernels.iter().map(|k| (k.lengthscale, k.weight)).collect::<Vec<_>>());
        println!("resolution {:?}", k.bkl.map(|b| b.resolution));
    }
    if args.get(5).is_some() {
        return;
    }
    let held: std::collections::HashSet<usize> = r.landmark_indices.iter().flatten().copied().collect();
    let data_idx: Vec<usize> = (0..z.len()).filter(|i| !held.contains(i)).collect();
    let data = z.select(&data_idx);
    let lm: &Points = &r.landmarks;
    let nn = |p: &[f64], set: &Points, skip_self: bool| {
        set.iter()
            .map(|q| p.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt())
            .filter(|&v| !skip_self || v > 0.0)
            .fold(f64::INFINITY, f64::min)
    };
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let dl = med(data.iter().map(|p| nn(p, lm, false)).collect());
    let ll = med(lm.iter().map(|p| nn(p, lm, true)).collect());
    let dd = med(data.iter().map(|p| nn(p, &data, true)).collect());
    println!(
        "d={d} s={s} m={m}: median dist {:.4}, NN data->landmark {dl:.5}, landmark-landmark {ll:.5}, data-data {dd:.5}",
        r.median_heuristic
    );
    println!(
        "optima: {:?}",
        r.local_optima.iter().map(|o| (o.lengthscales[0], o.log_marginal, o.at_boundary)).collect::<Vec<_>>()
    );
    for sp in &r.scan {
        let ml =
            marginal_pseudolikelihood::<Faer>(&data, lm, &BkeParams::new(vec![sp.lengthscale], 1.0)).unwrap();
        // effective number of landmarks per point: (Σk)²/Σk²
        let neff = med(data
            .iter()
            .map(|p| {
                let k: Vec<f64> = lm
                    .iter()
                    .map(|q| {
                        (-0.5 * p.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum::<f64>()
                            / sp.lengthscale.powi(2))
                        .exp()
                    })
                    .collect();
                let s1: f64 = k.iter().sum();
                let s2: f64 = k.iter().map(|v| v * v).sum();
                if s2 > 0.0 { s1 * s1 / s2 } else { 0.0 }
            })
            .collect());
        println!(
            "{:9.5} {:12.1} gauss {:12.1} jac {:10.1}  neff {:7.2}",
            sp.lengthscale, sp.log_marginal, ml.log_gaussian, ml.log_jacobian, neff
        );
    }
}
