//! The Rust side of the Python-overhead measurement (`python/examples/bench_overhead.py` runs this
//! and `bke.mmd_test` on the same data): CPU and wall time of one MMD test call through the library
//! (`MmdParams` → `check` → `fit` → `test` → the report's JSON), median heuristic, 1000
//! permutations, one worker thread, at n = m = 200 and 2000 (x_i = (sin 0.37i, cos 0.53i), y = x + 0.1).
//!
//! `cargo run -p bke-bench --example mmd_call` prints one JSON line per size.

use bke_bench::timing::process_cpu_seconds;
use bke_core::hypothesis::MmdParams;
use bke_core::{Params, Points, TwoSamples};
use bke_linalg::DefaultBackend;
use std::time::Instant;

fn sample(n: usize, shift: f64) -> Points {
    let data =
        (0..n).flat_map(|i| [(0.37 * i as f64).sin() + shift, (0.53 * i as f64).cos() + shift]).collect();
    Points::new("x", data, 2).expect("finite")
}

fn main() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a thread pool");
    for (n, reps) in [(200usize, 200usize), (2000, 5)] {
        let data = TwoSamples { x: sample(n, 0.0), y: sample(n, 0.1) };
        let params = MmdParams { permutations: 1000, ..MmdParams::default() };
        let run = || {
            let report = params
                .check()
                .unwrap()
                .fit::<DefaultBackend>(&data)
                .unwrap()
                .test::<DefaultBackend>()
                .unwrap();
            serde_json::to_string(&report).unwrap().len()
        };
        pool.install(run); // warm-up
        let (c0, t0) = (process_cpu_seconds().unwrap_or(0.0), Instant::now());
        for _ in 0..reps {
            std::hint::black_box(pool.install(run));
        }
        let (cpu, wall) = (
            (process_cpu_seconds().unwrap_or(0.0) - c0) / reps as f64,
            t0.elapsed().as_secs_f64() / reps as f64,
        );
        println!("{{\"n\": {n}, \"reps\": {reps}, \"cpu_s\": {cpu:.6}, \"wall_s\": {wall:.6}}}");
    }
}
