//! Times the fused pass of the BKE marginal pseudolikelihood (statistics only, one thread):
//! `cargo run --release -p bke-core --example bkl_pass -- N M D REPS`.
use bke_core::Points;
use bke_core::embedding::{BkeParams, PseudolikelihoodPlan};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

fn main() {
    let a: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().expect("integer")).collect();
    let (n, m, dim, reps) = (a[0], a[1], a[2], a.get(3).copied().unwrap_or(5));
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let spacing = if dim == 2 { 10.0 } else { 0.0 };
    let mut draw = |k: usize| -> Vec<f64> {
        (0..k * dim)
            .map(|_| {
                let v: f64 = StandardNormal.sample(&mut rng);
                spacing * rng.random_range(0..3) as f64 + v
            })
            .collect()
    };
    let x = Points::new("x", draw(n), dim).unwrap();
    let z = Points::new("z", draw(m), dim).unwrap();
    let p = BkeParams::new(vec![if dim == 2 { 1.0 } else { (dim as f64).sqrt() }], 1.0);
    let plan = PseudolikelihoodPlan::new(&z, &p).unwrap();
    let mut best = f64::INFINITY;
    let mut s = plan.empty_stats();
    for _ in 0..reps {
        let t = cpu();
        s = plan.partial(&x).unwrap();
        best = best.min(cpu() - t);
    }
    println!(
        "n={n} m={m} D={dim}: best CPU {:.2} ms, {:.2} ns/pair; stats[..4] {:?}, Σ|stats| {:.15e}",
        best * 1e3,
        best * 1e9 / (n * m) as f64,
        &s.to_vec()[..4],
        s.to_vec().iter().map(|v| v.abs()).sum::<f64>()
    );
}

/// CPU seconds of this process (all threads).
fn cpu() -> f64 {
    let mut t = Timespec { s: 0, ns: 0 };
    // SAFETY: `t` is a valid `struct timespec` for the call to write into.
    unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.s as f64 + t.ns as f64 * 1e-9
}
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
#[repr(C)]
struct Timespec {
    s: i64,
    ns: i64,
}
unsafe extern "C" {
    fn clock_gettime(clk: i32, t: *mut Timespec) -> i32;
}
