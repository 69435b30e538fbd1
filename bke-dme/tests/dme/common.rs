//! Shared helpers of the integration tests: data generators and naive dense oracles
//! (Gaussian elimination, independent of every backend).
#![allow(dead_code)]

use bke_core::{Kernel, Points};
use bke_dme::TaskData;
use bke_dme::ttgp::{MarginalForm, TtgpParams};
use bke_linalg::Mat;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Naive `A⁻¹ B` and `log |det A|` by Gaussian elimination with partial pivoting.
pub fn naive_solve(a: &Mat, b: &Mat) -> (Mat, f64) {
    let n = a.nrows();
    let mut m = a.clone();
    let mut x = b.clone();
    let mut logdet = 0.0;
    for k in 0..n {
        let p = (k..n).max_by(|&i, &j| m[(i, k)].abs().total_cmp(&m[(j, k)].abs())).unwrap();
        if p != k {
            for j in 0..n {
                let t = m[(k, j)];
                m[(k, j)] = m[(p, j)];
                m[(p, j)] = t;
            }
            for j in 0..x.ncols() {
                let t = x[(k, j)];
                x[(k, j)] = x[(p, j)];
                x[(p, j)] = t;
            }
        }
        let piv = m[(k, k)];
        logdet += piv.abs().ln();
        for i in k + 1..n {
            let f = m[(i, k)] / piv;
            if f != 0.0 {
                for j in k..n {
                    m[(i, j)] -= f * m[(k, j)];
                }
                for j in 0..x.ncols() {
                    x[(i, j)] -= f * x[(k, j)];
                }
            }
        }
    }
    for k in (0..n).rev() {
        for j in 0..x.ncols() {
            let mut s = x[(k, j)];
            for i in k + 1..n {
                s -= m[(k, i)] * x[(i, j)];
            }
            x[(k, j)] = s / m[(k, k)];
        }
    }
    (x, logdet)
}

/// Naive product.
pub fn naive_mm(a: &Mat, b: &Mat) -> Mat {
    Mat::from_fn(a.nrows(), b.ncols(), |i, j| (0..a.ncols()).map(|k| a[(i, k)] * b[(k, j)]).sum())
}

/// Naive Gaussian log density `log N(z; 0, C)`.
pub fn naive_log_density(c: &Mat, z: &[f64]) -> f64 {
    let m = z.len();
    let zm = Mat::from_fn(m, 1, |i, _| z[i]);
    let (x, logdet) = naive_solve(c, &zm);
    let quad: f64 = (0..m).map(|i| z[i] * x[(i, 0)]).sum();
    -0.5 * quad - 0.5 * logdet - 0.5 * m as f64 * (2.0 * std::f64::consts::PI).ln()
}

/// The TTGP marginal covariance built naively from its definition (Thm 5.3 (3), (4)).
pub fn naive_covariance(data: &TaskData, h: &TtgpParams, full: bool) -> Mat {
    let (n, m) = (data.n(), data.m());
    let k = h.kernel_x.gram(&data.x).unwrap();
    let mut p = h.kernel_y.gram(&data.y).unwrap();
    for i in 0..n {
        p[(i, i)] += n as f64 * h.lambda;
    }
    let lt = h.kernel_y.cross_gram(&data.y, &data.y_tilde).unwrap();
    let ltt = h.kernel_y.gram(&data.y_tilde).unwrap();
    let (a, _) = naive_solve(&p, &lt);
    let ata = naive_mm(&a.transpose(), &naive_mm(&k, &a));
    let lta = naive_mm(&lt.transpose(), &a);
    let s2 = h.sigma * h.sigma;
    let gamma2 = s2 / (m as f64 * h.epsilon);
    let beta2 = s2 / (n as f64 * h.lambda);
    Mat::from_fn(m, m, |i, j| {
        let mut v = gamma2 * ata[(i, j)] + if i == j { s2 } else { 0.0 };
        if full {
            v += beta2 * (ltt[(i, j)] - lta[(i, j)]);
        }
        v
    })
}

/// Uniform values in `[lo, hi)`.
pub fn uniform(rng: &mut ChaCha8Rng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

/// A small TTGP problem of dimension `dx`/`dy` with `n` transformation and `m` task pairs.
pub fn problem(seed: u64, n: usize, m: usize, dx: usize, dy: usize) -> TaskData {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let y = uniform(&mut rng, n * dy, -2.0, 2.0);
    let x: Vec<f64> = (0..n)
        .flat_map(|i| {
            let yi: Vec<f64> = y[i * dy..(i + 1) * dy].to_vec();
            (0..dx).map(move |d| yi[d % dy].sin() * 1.5 + 0.1 * d as f64).collect::<Vec<_>>()
        })
        .zip(uniform(&mut rng, n * dx, -0.1, 0.1))
        .map(|(a, b)| a + b)
        .collect();
    let yt = uniform(&mut rng, m * dy, -2.0, 2.0);
    let zt: Vec<f64> = (0..m).map(|j| (yt[j * dy] * 1.3).cos() + rng.random_range(-0.1..0.1)).collect();
    TaskData::new(
        Points::new("x", x, dx).unwrap(),
        Points::new("y", y, dy).unwrap(),
        Points::new("ỹ", yt, dy).unwrap(),
        zt,
    )
    .unwrap()
}

/// Hyperparameters for [`problem`]; ARD kernels when `ard`.
pub fn hyper(dx: usize, dy: usize, ard: bool) -> TtgpParams {
    let kx = if ard {
        Kernel::se_ard((0..dx).map(|d| 0.8 + 0.3 * d as f64).collect()).unwrap()
    } else {
        Kernel::se(0.9).unwrap()
    };
    let ky = if ard {
        Kernel::se_ard((0..dy).map(|d| 0.7 + 0.2 * d as f64).collect()).unwrap()
    } else {
        Kernel::se(0.6).unwrap()
    };
    TtgpParams { kernel_x: kx, kernel_y: ky, sigma: 0.3, lambda: 0.02, epsilon: 0.05, ..Default::default() }
}

/// `h` with the marginal likelihood form `form`.
pub fn with_form(h: &TtgpParams, form: MarginalForm) -> TtgpParams {
    TtgpParams { form, ..h.clone() }
}
