//! The faer backend gives bit-identical results on 1 and 2 rayon threads for every operation (the
//! CLI promises results independent of `--threads`). Sizes above faer's parallel thresholds.
#![cfg(feature = "faer")]

use bke_linalg::{Backend, Faer, Mat, MatMut, MatRef, Trans};

fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

fn spd(n: usize) -> Mat {
    let a =
        Mat::from_fn(n, n, |i, j| ((i * 7 + j * 13) % 17) as f64 / 17.0 + (i as f64 * 0.3 + j as f64).sin());
    let mut g = Faer::gram(a.as_ref());
    for i in 0..n {
        g[(i, i)] += n as f64;
    }
    g
}

fn bits(m: &Mat) -> Vec<u64> {
    let mut v = Vec::new();
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            v.push(m[(i, j)].to_bits());
        }
    }
    v
}

#[test]
fn every_faer_operation_is_thread_invariant() {
    let n = 300;
    let a = spd(n);
    let run = || {
        let e = Faer::sym_eigen(a.as_ref()).unwrap();
        let l = Faer::cholesky(a.as_ref()).unwrap();
        let mut c = Mat::zeros(n, n);
        Faer::gemm(1.0, a.as_ref(), Trans::Yes, l.as_ref(), Trans::No, 0.0, c.as_mut()).unwrap();
        let mut g = Faer::gram(c.as_ref());
        Faer::gemm_symmetric(0.5, l.as_ref(), Trans::Yes, l.as_ref(), Trans::No, 1.0, g.as_mut()).unwrap();
        let mut b = c.clone();
        Faer::solve_lower_in_place(l.as_ref(), b.as_mut()).unwrap();
        let inverse = Faer::cholesky_inverse(l.as_ref()).unwrap();
        let single: Vec<f32> = a.as_slice().iter().map(|&v| v as f32).collect();
        let mut s = vec![0.0f32; n * n];
        Faer::gemm_f32(&single, &single, &mut s, (n, n, n)).unwrap();
        (
            e.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            bits(&e.vectors),
            bits(&l),
            bits(&c),
            bits(&g),
            bits(&b),
            bits(&inverse),
            s.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        )
    };
    let (one, two) = (on_threads(1, run), on_threads(2, run));
    assert!(one.0 == two.0, "eigenvalues");
    assert!(one.1 == two.1, "eigenvectors");
    assert!(one.2 == two.2, "cholesky");
    assert!(one.3 == two.3, "gemm");
    assert!(one.4 == two.4, "gram and gemm_symmetric");
    assert!(one.5 == two.5, "triangular solve");
    assert!(one.6 == two.6, "cholesky_inverse");
    assert!(one.7 == two.7, "gemm_f32");
}

/// Wide and tall shapes (a feature matrix `Φ` with few rows and many columns, its rank-deficient
/// Gram matrix), matrix–vector products both ways.
#[test]
fn faer_is_thread_invariant_on_wide_matrices_and_vectors() {
    let phi = Mat::from_fn(20, 257, |i, j| ((i as f64 + 1.0) * (j as f64 * 0.37 + 0.1)).cos());
    let x: Vec<f64> = (0..257).map(|j| (j as f64 * 0.11).sin()).collect();
    let y: Vec<f64> = (0..20).map(|i| (i as f64 * 0.7).cos()).collect();
    let run = || {
        let g = Faer::gram(phi.as_ref());
        let e = Faer::sym_eigen(g.as_ref()).unwrap();
        let mut u = vec![0.0; 20];
        Faer::gemv(1.0, phi.as_ref(), Trans::No, &x, 0.0, &mut u).unwrap();
        let mut v = vec![0.0; 257];
        Faer::gemv(1.0, phi.as_ref(), Trans::Yes, &y, 0.0, &mut v).unwrap();
        let mut w = vec![0.0; 257];
        Faer::gemv(1.0, e.vectors.as_ref(), Trans::Yes, &v, 0.0, &mut w).unwrap();
        let to_bits = |s: &[f64]| s.iter().map(|a| a.to_bits()).collect::<Vec<_>>();
        (bits(&g), to_bits(&e.values), bits(&e.vectors), to_bits(&u), to_bits(&v), to_bits(&w))
    };
    let (one, two) = (on_threads(1, run), on_threads(2, run));
    assert!(one.0 == two.0, "gram");
    assert!(one.1 == two.1, "eigenvalues");
    assert!(one.2 == two.2, "eigenvectors");
    assert!(one.3 == two.3, "gemv");
    assert!(one.4 == two.4, "gemv transposed");
    assert!(one.5 == two.5, "gemv of eigenvectors");
}

/// Matrix–vector products and single-column triangular solves above faer's parallel threshold
/// (`256²` entries), where faer splits the inner dimension among the threads.
#[test]
fn faer_matrix_vector_work_is_thread_invariant_above_the_parallel_threshold() {
    let n = 700;
    let a = spd(n);
    let tall = Mat::from_fn(1500, 60, |i, j| ((i * 3 + j) as f64 * 0.013).sin());
    let x: Vec<f64> = (0..n).map(|j| (j as f64 * 0.11).sin()).collect();
    let run = || {
        let to_bits = |s: &[f64]| s.iter().map(|a| a.to_bits()).collect::<Vec<_>>();
        let mut y = vec![0.0; n];
        Faer::gemv(1.0, a.as_ref(), Trans::No, &x, 0.0, &mut y).unwrap();
        let mut t = vec![0.0; 1500];
        Faer::gemv(1.0, tall.as_ref(), Trans::No, &x[..60], 0.0, &mut t).unwrap();
        let mut row = Mat::zeros(1, n);
        Faer::gemm(
            1.0,
            MatRef::from_slice(&x, 1, n, 1).unwrap(),
            Trans::No,
            a.as_ref(),
            Trans::No,
            0.0,
            row.as_mut(),
        )
        .unwrap();
        let l = Faer::cholesky(a.as_ref()).unwrap();
        let mut s = x.clone();
        Faer::solve_lower_in_place(l.as_ref(), MatMut::col_vector(&mut s)).unwrap();
        let mut u = x.clone();
        Faer::solve_lower_transpose_in_place(l.as_ref(), MatMut::col_vector(&mut u)).unwrap();
        let mut v = x.clone();
        Faer::cholesky_solve_vec_in_place(l.as_ref(), &mut v).unwrap();
        let mut two_cols = Mat::from_fn(n, 2, |i, j| x[i] + j as f64);
        Faer::solve_lower_in_place(l.as_ref(), two_cols.as_mut()).unwrap();
        (
            to_bits(&y),
            to_bits(&t),
            bits(&row),
            bits(&l),
            to_bits(&s),
            to_bits(&u),
            to_bits(&v),
            bits(&two_cols),
        )
    };
    let (one, two) = (on_threads(1, run), on_threads(2, run));
    assert!(one.0 == two.0, "gemv");
    assert!(one.1 == two.1, "gemv, tall");
    assert!(one.2 == two.2, "row vector times matrix");
    assert!(one.3 == two.3, "cholesky");
    assert!(one.4 == two.4, "lower solve");
    assert!(one.5 == two.5, "transposed lower solve");
    assert!(one.6 == two.6, "cholesky solve");
    assert!(one.7 == two.7, "lower solve, two columns");
}
