//! Paired comparison of aggregated MMD tests on the same data sets and the same permutations (issue
//! 15): every kernel of every collection gets its statistic and its permutation null once, then each
//! variant aggregates them. Variants:
//! - `agg-sf` / `agg-ref`: MMDAgg (weighted min-p, `B₁ = B₂ = B`) over the scale-free collection and the
//!   reference code's collection (absolute floors 0.1 / 0.3, `kernels::mmdagg_reference_range`);
//! - `fuse`: MMD-FUSE (normalised statistics, soft maximum at `λ = √(n(n−1))`, uniform weights);
//! - `bb-*`: BKL-Bayes weights `½ posterior + ½ uniform prior` with prior collection `sf` (scale-free
//!   MMDAgg), `ref` (reference MMDAgg), `fuse`, or `union` (reference MMDAgg ∪ FUSE), aggregated on
//!   studentised statistics at `λ = 1` (`stud`) or on FUSE-normalised ones at `λ = √(n(n−1))` (`fnorm`).
//!
//! `cargo run --release -p bke-report --example test_variants -- BENCH SCALE REPS [B] [FIRST_REP]` with
//! BENCH `d1`, `d2`, `blobs` or `laplace` (SCALE = n then); the data sets are those of
//! `bke-repro power` (same seeds).

use bke_core::TwoSamples;
use bke_core::hypothesis::aggregate::{KernelStatistics, min_p, soft_max_test, studentise};
use bke_core::hypothesis::kernels::{
    Distances, fuse_collection, mmdagg_collection, mmdagg_collection_scale_free,
};
use bke_core::hypothesis::mmd::mmd_from_gram;
use bke_core::hypothesis::select::{bkl_posterior_kernels, contaminate};
use bke_core::hypothesis::{
    BandwidthWeights, BklParams, MmdPermutation, MmdStatistic, TestFamily, WeightedKernel,
};
use bke_linalg::Faer;
use bke_report::repro::fig2c::blobs_iid;
use bke_report::repro::power::{normal_vs_laplace, perturbed_uniform};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

const ALPHA: f64 = 0.05;

fn draw(bench: &str, scale: f64, rep: usize) -> (TwoSamples, u64) {
    let code = match bench {
        "d1" => 1,
        "d2" => 2,
        "blobs" => 7,
        _ => 8,
    };
    let seed = 31_337 * (rep as u64 + 1) + 1000 * code + (scale * 1000.0).round() as u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let data = match bench {
        "d1" | "d2" => {
            let d = code as usize;
            let x = perturbed_uniform(&mut rng, 500, d, None);
            TwoSamples { x, y: perturbed_uniform(&mut rng, 500, d, (scale > 0.0).then_some(scale)) }
        }
        "blobs" => {
            let x = blobs_iid(None, 450, &mut rng);
            TwoSamples { x, y: blobs_iid((scale != 1.0).then_some(scale), 450, &mut rng) }
        }
        _ => normal_vs_laplace(&mut rng, scale as usize),
    };
    (data, seed)
}

fn same(a: &WeightedKernel, b: &WeightedKernel) -> bool {
    a.family == b.family && a.lengthscale == b.lengthscale
}

/// Uniform weights over the union of collections (a kernel in several gets one share).
fn uniform_union(parts: &[&[WeightedKernel]]) -> Vec<WeightedKernel> {
    let mut out: Vec<WeightedKernel> = Vec::new();
    for k in parts.iter().flat_map(|p| p.iter()) {
        if !out.iter().any(|o| same(o, k)) {
            out.push(*k);
        }
    }
    let w = 1.0 / out.len() as f64;
    out.iter_mut().for_each(|k| k.weight = w);
    out
}

struct Computed {
    kernels: Vec<WeightedKernel>,
    observed: Vec<f64>,
    draws: Vec<Vec<f64>>,
    fuse_scale: Vec<f64>,
}

impl Computed {
    fn stats(&self, of: &[WeightedKernel], draws: usize, fuse_norm: bool) -> KernelStatistics {
        let idx: Vec<usize> =
            of.iter().map(|k| self.kernels.iter().position(|o| same(o, k)).expect("computed")).collect();
        let c = |i: usize| if fuse_norm { self.fuse_scale[i] } else { 1.0 };
        KernelStatistics {
            observed: idx.iter().map(|&i| self.observed[i] * c(i)).collect(),
            draws: idx.iter().map(|&i| self.draws[i][..draws].iter().map(|v| v * c(i)).collect()).collect(),
        }
    }
}

fn run(bench: &str, scale: f64, rep: usize, b: usize) -> Vec<(String, bool)> {
    let (data, seed) = draw(bench, scale, rep);
    let n = data.x.len();
    let pooled = data.x.concat(&data.y).unwrap();
    let fam = [TestFamily::LaplaceL1, TestFamily::Gaussian];
    let agg_sf = mmdagg_collection_scale_free(&pooled, &fam, 10, BandwidthWeights::Uniform).unwrap();
    let agg_ref = mmdagg_collection(&pooled, &fam, 10, BandwidthWeights::Uniform).unwrap();
    let fuse = fuse_collection(&pooled, &fam, 10).unwrap();
    let bkl = BklParams { seed, ..BklParams::default() };
    let post = bkl_posterior_kernels::<Faer>(&pooled, &bkl, &()).unwrap();
    let all = uniform_union(&[&agg_sf, &agg_ref, &fuse, &post]);
    let mut dist = Distances::new(&pooled);
    let nn = (n * (n - 1)) as f64;
    let mut comp = Computed { kernels: all.clone(), observed: vec![], draws: vec![], fuse_scale: vec![] };
    for k in &all {
        let g = dist.gram(k);
        comp.observed.push(mmd_from_gram(&g, n, MmdStatistic::Unbiased).unwrap());
        comp.draws.push(
            MmdPermutation::new(&g, n).unwrap().null::<Faer>(MmdStatistic::Unbiased, 2 * b, seed).unwrap(),
        );
        let big = g.nrows();
        let mut s = 0.0;
        for j in 0..big {
            for (i, v) in g.col(j).iter().enumerate() {
                if i != j {
                    s += v * v;
                }
            }
        }
        comp.fuse_scale.push(nn / s.sqrt());
    }
    let lam = nn.sqrt();
    let union = uniform_union(&[&agg_ref, &fuse]);
    let mut out = Vec::new();
    for (name, coll) in [("agg-sf", &agg_sf), ("agg-ref", &agg_ref)] {
        let w: Vec<f64> = coll.iter().map(|k| k.weight).collect();
        out.push((name.to_string(), min_p(&comp.stats(coll, 2 * b, false), &w, b, ALPHA).p_value <= ALPHA));
    }
    let w: Vec<f64> = fuse.iter().map(|k| k.weight).collect();
    out.push(("fuse".into(), soft_max_test(&comp.stats(&fuse, b, true), &w, lam).p_value <= ALPHA));
    for (pname, prior) in [("sf", &agg_sf), ("ref", &agg_ref), ("fuse", &fuse), ("union", &union)] {
        let ks = contaminate(&post, prior, 0.5);
        let w: Vec<f64> = ks.iter().map(|k| k.weight).collect();
        let mut st = comp.stats(&ks, b, false);
        studentise(&mut st);
        out.push((format!("bb-{pname}-stud"), soft_max_test(&st, &w, 1.0).p_value <= ALPHA));
        let fst = comp.stats(&ks, b, true);
        out.push((format!("bb-{pname}-fnorm"), soft_max_test(&fst, &w, lam).p_value <= ALPHA));
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args[1].clone();
    let scale: f64 = args[2].parse().unwrap();
    let reps: usize = args[3].parse().unwrap();
    let b: usize = args.get(4).map_or(500, |v| v.parse().unwrap());
    let first: usize = args.get(5).map_or(0, |v| v.parse().unwrap());
    let results: Vec<Vec<(String, bool)>> =
        (first..first + reps).into_par_iter().map(|r| run(&bench, scale, r, b)).collect();
    for (r, res) in results.iter().enumerate() {
        let bits: String = res.iter().map(|(_, x)| if *x { '1' } else { '0' }).collect();
        println!("rep {} {bits}", first + r);
    }
    let r = reps as f64;
    let names: Vec<&String> = results[0].iter().map(|x| &x.0).collect();
    let fuse_i = names.iter().position(|n| *n == "fuse").unwrap();
    let agg_i = names.iter().position(|n| *n == "agg-ref").unwrap();
    println!("{bench} scale {scale}, {reps} data sets from {first}, B = {b}");
    for (i, name) in names.iter().enumerate() {
        let p = results.iter().filter(|x| x[i].1).count() as f64 / r;
        let vs = |j: usize| {
            let up = results.iter().filter(|x| x[i].1 && !x[j].1).count();
            let down = results.iter().filter(|x| !x[i].1 && x[j].1).count();
            format!("+{up}/-{down}")
        };
        println!(
            "{name:>16} {p:.3} ± {:.3}   vs fuse {}   vs agg-ref {}",
            (p * (1.0 - p) / r).sqrt(),
            vs(fuse_i),
            vs(agg_i)
        );
    }
}
