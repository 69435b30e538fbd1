//! Cholesky factorisation and triangular solves (`A X = B` with `n` right-hand sides), OpenBLAS
//! against faer, at n = 512, 1024, 2048: median wall time and mean process CPU time (user + system,
//! from `/proc/self/stat`, 10 ms ticks) per call, and the largest difference between the factors.
//! CPU time is the number to compare on a shared machine. Issue 20: the OpenBLAS path copied every
//! operand into an owned Fortran array and back.
//!
//! `OPENBLAS_NUM_THREADS=1 RAYON_NUM_THREADS=1 cargo run --release -p bke-linalg --features openblas --example cholesky_vs_faer`

use bke_linalg::{Backend, Faer, Mat, OpenBlas, Trans};
use std::time::Instant;

/// `GᵀG/n + I` with `G` uniform on (−½, ½) from a fixed LCG.
fn spd(n: usize) -> Mat {
    let mut s: u64 = 42;
    let g = Mat::from_fn(n, n, |_, _| {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    });
    let mut a = Mat::zeros(n, n);
    Faer::gemm(1.0 / n as f64, g.as_ref(), Trans::Yes, g.as_ref(), Trans::No, 0.0, a.as_mut()).unwrap();
    for i in 0..n {
        a[(i, i)] += 1.0;
    }
    a
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Process CPU seconds (user + system).
fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = s.rsplit(')').next().unwrap().split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

/// (median wall, mean CPU) of the Cholesky and of the solve, and the factor.
fn time<B: Backend>(a: &Mat, reps: usize) -> ((f64, f64), (f64, f64), Mat) {
    let n = a.nrows();
    let (mut chol, mut solve) = (Vec::new(), Vec::new());
    let (mut cc, mut cs) = (0.0, 0.0);
    let mut l = a.clone();
    for _ in 0..reps {
        let mut m = a.clone();
        let (t, c) = (Instant::now(), cpu());
        B::cholesky_in_place(m.as_mut()).unwrap();
        chol.push(t.elapsed().as_secs_f64());
        cc += cpu() - c;
        l = m;
        let mut b = Mat::identity(n);
        let (t, c) = (Instant::now(), cpu());
        B::cholesky_solve_in_place(l.as_ref(), b.as_mut()).unwrap();
        solve.push(t.elapsed().as_secs_f64());
        cs += cpu() - c;
    }
    ((median(chol), cc / reps as f64), (median(solve), cs / reps as f64), l)
}

fn main() {
    for n in [512, 1024, 2048] {
        let a = spd(n);
        let reps = match n {
            512 => 60,
            1024 => 20,
            _ => 6,
        };
        let (cf, sf, lf) = time::<Faer>(&a, reps);
        let (co, so, lo) = time::<OpenBlas>(&a, reps);
        let diff = lf.as_slice().iter().zip(lo.as_slice()).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        println!(
            "n={n}: cholesky wall/cpu ms faer {:.1}/{:.1}, openblas {:.1}/{:.1} (cpu {:.2}x); \
             solve(n rhs) faer {:.1}/{:.1}, openblas {:.1}/{:.1} (cpu {:.2}x); max|Lf-Lo| {diff:.1e}",
            cf.0 * 1e3,
            cf.1 * 1e3,
            co.0 * 1e3,
            co.1 * 1e3,
            co.1 / cf.1,
            sf.0 * 1e3,
            sf.1 * 1e3,
            so.0 * 1e3,
            so.1 * 1e3,
            so.1 / sf.1
        );
    }
}
