//! The backend conformance suite: every check is written once, generic over `B: Backend`, and
//! instantiated for each compiled backend by `backend_suite!`. Oracles are independent of the
//! backends: naive triple loops for products, the defining identities (‖LLᵀ − A‖, ‖AV − VΛ‖,
//! ‖VᵀV − I‖), refactorisation from scratch for updates, and faer as the reference backend.

use bke_linalg::{Backend, Faer, JitterOptions, LinalgError, Mat, MatMut, MatRef, Trans};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

// ---- independent oracles -------------------------------------------------------------------------

fn naive_mul(a: MatRef<'_>, ta: Trans, b: MatRef<'_>, tb: Trans) -> Mat {
    let get =
        |m: MatRef<'_>, t: Trans, i: usize, j: usize| if t == Trans::No { m.at(i, j) } else { m.at(j, i) };
    let (m, k) = ta.shape(a.nrows(), a.ncols());
    let n = tb.shape(b.nrows(), b.ncols()).1;
    Mat::from_fn(m, n, |i, j| (0..k).map(|l| get(a, ta, i, l) * get(b, tb, l, j)).sum())
}

fn sub(a: &Mat, b: &Mat) -> Mat {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] - b[(i, j)])
}

fn gaussian(n: usize, m: usize, rng: &mut ChaCha8Rng) -> Mat {
    // Box–Muller keeps the oracle free of the crates under test.
    Mat::from_fn(n, m, |_, _| {
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    })
}

/// A random orthogonal matrix by modified Gram–Schmidt (twice, for orthogonality to rounding).
fn orthogonal(n: usize, rng: &mut ChaCha8Rng) -> Mat {
    let mut q = gaussian(n, n, rng);
    for _pass in 0..2 {
        for j in 0..n {
            for k in 0..j {
                let dot: f64 = q.col(j).iter().zip(q.col(k)).map(|(a, b)| a * b).sum();
                let qk = q.col(k).to_vec();
                q.col_mut(j).iter_mut().zip(&qk).for_each(|(a, b)| *a -= dot * b);
            }
            let norm = q.col(j).iter().map(|a| a * a).sum::<f64>().sqrt();
            q.col_mut(j).iter_mut().for_each(|a| *a /= norm);
        }
    }
    q
}

/// A symmetric positive-definite matrix with eigenvalues spread geometrically over [1/κ, 1].
fn spd_with_condition(n: usize, kappa: f64, rng: &mut ChaCha8Rng) -> Mat {
    let q = orthogonal(n, rng);
    let lambda: Vec<f64> =
        (0..n).map(|i| if n > 1 { kappa.powf(-(i as f64) / (n - 1) as f64) } else { 1.0 }).collect();
    let mut a = Mat::from_fn(n, n, |i, j| (0..n).map(|k| q[(i, k)] * lambda[k] * q[(j, k)]).sum());
    symmetrise(&mut a);
    a
}

fn symmetrise(a: &mut Mat) {
    for j in 0..a.ncols() {
        for i in 0..j {
            let v = 0.5 * (a[(i, j)] + a[(j, i)]);
            a[(i, j)] = v;
            a[(j, i)] = v;
        }
    }
}

fn rel_diff(a: &Mat, b: &Mat) -> f64 {
    sub(a, b).norm_fro() / b.norm_fro().max(f64::MIN_POSITIVE)
}

// ---- generic checks ------------------------------------------------------------------------------

fn check_cholesky_residual<B: Backend>(n: usize, kappa: f64, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let a = spd_with_condition(n, kappa, &mut rng);
    let l = B::cholesky(a.as_ref()).unwrap();
    for j in 0..n {
        for i in 0..j {
            assert_eq!(l[(i, j)], 0.0, "strict upper triangle must be zero");
        }
    }
    let llt = naive_mul(l.as_ref(), Trans::No, l.as_ref(), Trans::Yes);
    let res = sub(&llt, &a).norm_fro();
    assert!(res <= 1e-12 * n as f64 * a.norm_fro(), "{}: ‖LLᵀ−A‖ = {res:e}, n = {n}, κ = {kappa:e}", B::NAME);
}

fn check_eigen<B: Backend>(n: usize, kappa: f64, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut a = spd_with_condition(n, kappa, &mut rng);
    // make it indefinite too: shift by the median eigenvalue scale
    for i in 0..n {
        a[(i, i)] -= 0.5 / kappa.sqrt();
    }
    let e = B::sym_eigen(a.as_ref()).unwrap();
    assert!(e.values.windows(2).all(|w| w[0] <= w[1]), "{}: eigenvalues not ascending", B::NAME);
    let av = naive_mul(a.as_ref(), Trans::No, e.vectors.as_ref(), Trans::No);
    let vl = Mat::from_fn(n, n, |i, j| e.vectors[(i, j)] * e.values[j]);
    let res = sub(&av, &vl).norm_fro();
    assert!(res <= 1e-10 * n as f64 * a.norm_fro(), "{}: ‖AV−VΛ‖ = {res:e}", B::NAME);
    let vtv = naive_mul(e.vectors.as_ref(), Trans::Yes, e.vectors.as_ref(), Trans::No);
    let orth = sub(&vtv, &Mat::identity(n)).norm_fro();
    assert!(orth <= 1e-10 * n.max(1) as f64, "{}: ‖VᵀV−I‖ = {orth:e}", B::NAME);
    // against the reference backend: eigenvalues are perfectly conditioned
    let reference = Faer::sym_eigen(a.as_ref()).unwrap();
    for (x, y) in e.values.iter().zip(&reference.values) {
        assert!((x - y).abs() <= 1e-12 * n as f64 * a.norm_fro(), "{}: λ = {x} vs faer {y}", B::NAME);
    }
}

fn check_agrees_with_faer<B: Backend>(n: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let a = spd_with_condition(n, 1e3, &mut rng);
    let l = B::cholesky(a.as_ref()).unwrap();
    let lf = Faer::cholesky(a.as_ref()).unwrap();
    if n > 0 {
        assert!(
            rel_diff(&l, &lf) < 1e-11,
            "{}: factor differs from faer by {:e}",
            B::NAME,
            rel_diff(&l, &lf)
        );
        let (ld, lfd) = (B::cholesky_logdet(l.as_ref()), Faer::cholesky_logdet(lf.as_ref()));
        assert!((ld - lfd).abs() <= 1e-11 * (1.0 + lfd.abs()));
    }
    // solves: matrix and vector right-hand sides, against the defining identity
    let b = gaussian(n, 3, &mut rng);
    let mut x = b.clone();
    B::cholesky_solve_in_place(l.as_ref(), x.as_mut()).unwrap();
    let ax = naive_mul(a.as_ref(), Trans::No, x.as_ref(), Trans::No);
    assert!(sub(&ax, &b).norm_fro() <= 1e-9 * (1.0 + b.norm_fro()), "{}: ‖AX−B‖ too large", B::NAME);
    // the inverse: exactly symmetric, A·A⁻¹ = I, and equal to the solves against the identity
    let inv = B::cholesky_inverse(l.as_ref()).unwrap();
    let mut solved = Mat::identity(n);
    B::cholesky_solve_in_place(l.as_ref(), solved.as_mut()).unwrap();
    let eye = naive_mul(a.as_ref(), Trans::No, inv.as_ref(), Trans::No);
    assert!(sub(&eye, &Mat::identity(n)).norm_fro() <= 1e-9 * (1.0 + n as f64), "{}: ‖AA⁻¹−I‖", B::NAME);
    assert!(n == 0 || rel_diff(&inv, &solved) < 1e-10, "{}: inverse vs solves", B::NAME);
    assert!((0..n).all(|j| (0..n).all(|i| inv[(i, j)] == inv[(j, i)])), "{}: inverse not symmetric", B::NAME);
    let mut v = b.col(0).to_vec();
    B::cholesky_solve_vec_in_place(l.as_ref(), &mut v).unwrap();
    assert!(v.iter().zip(x.col(0)).all(|(p, q)| (p - q).abs() <= 1e-10 * (1.0 + q.abs())));
    let mut y = b.clone();
    B::solve_lower_in_place(l.as_ref(), y.as_mut()).unwrap();
    let ly = naive_mul(l.as_ref(), Trans::No, y.as_ref(), Trans::No);
    assert!(sub(&ly, &b).norm_fro() <= 1e-10 * (1.0 + b.norm_fro()));
    let mut z = b.clone();
    B::solve_lower_transpose_in_place(l.as_ref(), z.as_mut()).unwrap();
    let ltz = naive_mul(l.as_ref(), Trans::Yes, z.as_ref(), Trans::No);
    assert!(sub(&ltz, &b).norm_fro() <= 1e-10 * (1.0 + b.norm_fro()));
}

/// The single-precision product against the f64 triple loop of the same (rounded) operands, to
/// f32 rounding; NaN in `C` is overwritten; wrong lengths are an error.
fn check_products_f32<B: Backend>(m: usize, k: usize, n: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let single = |a: &Mat| a.as_slice().iter().map(|&v| v as f32).collect::<Vec<f32>>();
    let (a, b) = (gaussian(m, k, &mut rng), gaussian(k, n, &mut rng));
    let (a32, b32) = (single(&a), single(&b));
    let mut c = vec![f32::NAN; m * n];
    B::gemm_f32(&a32, &b32, &mut c, (m, k, n)).unwrap();
    let widen = |v: &[f32], r: usize, cols: usize| Mat::from_fn(r, cols, |i, j| f64::from(v[i + j * r]));
    let want = naive_mul(widen(&a32, m, k).as_ref(), Trans::No, widen(&b32, k, n).as_ref(), Trans::No);
    for j in 0..n {
        for i in 0..m {
            let scale: f64 = (0..k).map(|l| (a[(i, l)] * b[(l, j)]).abs()).sum();
            let err = (f64::from(c[i + j * m]) - want[(i, j)]).abs();
            assert!(err <= 4.0 * f64::from(f32::EPSILON) * (1.0 + scale), "{} gemm_f32 ({i}, {j})", B::NAME);
        }
    }
    let wrong = B::gemm_f32(&a32, &b32, &mut vec![0.0; m * n + 1], (m, k, n));
    assert!(matches!(wrong, Err(LinalgError::ShapeMismatch { .. })), "{}", B::NAME);
}

fn check_products<B: Backend>(m: usize, k: usize, n: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (ta, tb) in
        [(Trans::No, Trans::No), (Trans::Yes, Trans::No), (Trans::No, Trans::Yes), (Trans::Yes, Trans::Yes)]
    {
        let (ar, ac) = ta.shape(m, k);
        let (br, bc) = tb.shape(k, n);
        let a = gaussian(ar, ac, &mut rng);
        let b = gaussian(br, bc, &mut rng);
        let c0 = gaussian(m, n, &mut rng);
        for beta in [0.0, 1.0, -0.5] {
            let mut c = c0.clone();
            B::gemm(1.5, a.as_ref(), ta, b.as_ref(), tb, beta, c.as_mut()).unwrap();
            let ab = naive_mul(a.as_ref(), ta, b.as_ref(), tb);
            let want = Mat::from_fn(m, n, |i, j| 1.5 * ab[(i, j)] + beta * c0[(i, j)]);
            assert!(
                sub(&c, &want).norm_fro() <= 1e-12 * (1.0 + want.norm_fro()) * k.max(1) as f64,
                "{} gemm {ta:?} {tb:?}",
                B::NAME
            );
        }
        // beta = 0 must overwrite NaN in C
        let mut c = Mat::from_fn(m, n, |_, _| f64::NAN);
        B::gemm(1.0, a.as_ref(), ta, b.as_ref(), tb, 0.0, c.as_mut()).unwrap();
        assert!(c.as_slice().iter().all(|v| v.is_finite()), "{}: beta = 0 must overwrite C", B::NAME);
    }
    let a = gaussian(m, k, &mut rng);
    let g = B::gram(a.as_ref());
    let want = naive_mul(a.as_ref(), Trans::Yes, a.as_ref(), Trans::No);
    assert!(
        sub(&g, &want).norm_fro() <= 1e-12 * (1.0 + want.norm_fro()) * m.max(1) as f64,
        "{} gram",
        B::NAME
    );
    // A symmetric product AᵀSA (S symmetric), as Aᵀ(SA), onto a symmetric C: exactly symmetric.
    let s = B::gram(gaussian(k + 1, m, &mut rng).as_ref());
    let sa = naive_mul(s.as_ref(), Trans::No, a.as_ref(), Trans::No);
    for beta in [0.0, 1.0, -0.5] {
        let c0 = B::gram(gaussian(3, k, &mut rng).as_ref());
        let mut c = c0.clone();
        B::gemm_symmetric(0.7, a.as_ref(), Trans::Yes, sa.as_ref(), Trans::No, beta, c.as_mut()).unwrap();
        let asa = naive_mul(a.as_ref(), Trans::Yes, sa.as_ref(), Trans::No);
        let want = Mat::from_fn(k, k, |i, j| 0.7 * asa[(i, j)] + beta * c0[(i, j)]);
        let tol = 1e-12 * (1.0 + want.norm_fro()) * (m * m).max(1) as f64;
        assert!(sub(&c, &want).norm_fro() <= tol, "{} gemm_symmetric", B::NAME);
        assert!(sub(&c, &c.transpose()).norm_fro() == 0.0, "{} gemm_symmetric symmetry", B::NAME);
    }
    for ta in [Trans::No, Trans::Yes] {
        let (xl, yl) = if ta == Trans::No { (k, m) } else { (m, k) };
        let x = gaussian(xl, 1, &mut rng).into_vec();
        let y0 = gaussian(yl, 1, &mut rng).into_vec();
        let mut y = y0.clone();
        B::gemv(2.0, a.as_ref(), ta, &x, 0.5, &mut y).unwrap();
        let ax = naive_mul(a.as_ref(), ta, MatRef::col_vector(&x), Trans::No);
        for i in 0..yl {
            let want = 2.0 * ax[(i, 0)] + 0.5 * y0[i];
            assert!((y[i] - want).abs() <= 1e-12 * (1.0 + want.abs()) * xl.max(1) as f64, "{} gemv", B::NAME);
        }
    }
}

/// 1000 successive random rank-1 updates and downdates against refactorising the tracked matrix.
fn check_rank1_chain<B: Backend>(n: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut a = spd_with_condition(n, 10.0, &mut rng);
    let mut l = B::cholesky(a.as_ref()).unwrap();
    let mut added: Vec<Vec<f64>> = Vec::new();
    for step in 0..1000 {
        let downdate = !added.is_empty() && rng.random::<bool>();
        let w = if downdate {
            added.swap_remove(rng.random_range(0..added.len()))
        } else {
            let w = gaussian(n, 1, &mut rng).into_vec().iter().map(|v| v * 0.3).collect::<Vec<_>>();
            added.push(w.clone());
            w
        };
        let sign = if downdate { -1.0 } else { 1.0 };
        for j in 0..n {
            for i in 0..n {
                a[(i, j)] += sign * w[i] * w[j];
            }
        }
        if downdate {
            B::cholesky_downdate(l.as_mut(), MatRef::col_vector(&w)).unwrap();
        } else {
            B::cholesky_update(l.as_mut(), MatRef::col_vector(&w)).unwrap();
        }
        if step % 250 == 249 || step == 999 {
            let fresh = Faer::cholesky(a.as_ref()).unwrap();
            let d = rel_diff(&l, &fresh);
            assert!(
                d <= 1e-9,
                "{}: after {} steps the factor differs from refactorising by {d:e}",
                B::NAME,
                step + 1
            );
        }
    }
}

fn check_rank_k<B: Backend>(n: usize, k: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let a = spd_with_condition(n, 100.0, &mut rng);
    let w = Mat::from_fn(n, k, |_, _| 0.0);
    let w = Mat::from_fn(n, k, |i, j| w[(i, j)] + 0.2 * gaussian(1, 1, &mut rng)[(0, 0)]);
    let wwt = naive_mul(w.as_ref(), Trans::No, w.as_ref(), Trans::Yes);
    let plus = Mat::from_fn(n, n, |i, j| a[(i, j)] + wwt[(i, j)]);
    let mut l = B::cholesky(a.as_ref()).unwrap();
    B::cholesky_update(l.as_mut(), w.as_ref()).unwrap();
    assert!(rel_diff(&l, &Faer::cholesky(plus.as_ref()).unwrap()) < 1e-11, "{} rank-{k} update", B::NAME);
    B::cholesky_downdate(l.as_mut(), w.as_ref()).unwrap();
    assert!(rel_diff(&l, &Faer::cholesky(a.as_ref()).unwrap()) < 1e-10, "{} rank-{k} downdate", B::NAME);
    // An infeasible downdate (a last column of norm 1e3 √n against eigenvalues at most 1): errors and
    // leaves the factor bit-for-bit unchanged. (Scaling a random column instead failed when its
    // entries happened to be tiny: a feasible downdate.)
    if n > 0 {
        let before = l.clone();
        let mut big = w.clone();
        big.col_mut(k - 1).fill(1e3);
        let err = B::cholesky_downdate(l.as_mut(), big.as_ref()).unwrap_err();
        assert!(matches!(err, LinalgError::DowndateNotPositiveDefinite { .. }), "{}: {err}", B::NAME);
        assert!(l == before, "{}: failed downdate modified the factor", B::NAME);
    }
}

fn check_bad_input<B: Backend>() {
    // not positive definite: the error names the pivot
    for pivot in [0, 3, 6] {
        let mut a = Mat::identity(7);
        a[(pivot, pivot)] = -1.0;
        match B::cholesky(a.as_ref()) {
            Err(LinalgError::NotPositiveDefinite { pivot: p }) => assert_eq!(p, pivot, "{}", B::NAME),
            other => panic!("{}: expected NotPositiveDefinite, got {other:?}", B::NAME),
        }
    }
    // NaN / Inf
    let mut a = Mat::identity(4);
    a[(2, 1)] = f64::NAN;
    assert!(
        matches!(B::cholesky(a.as_ref()), Err(LinalgError::NonFinite { row: 2, col: 1, .. })),
        "{}",
        B::NAME
    );
    a[(2, 1)] = f64::INFINITY;
    assert!(matches!(B::sym_eigen(a.as_ref()), Err(LinalgError::NonFinite { .. })), "{}", B::NAME);
    let l = Mat::identity(4);
    let mut lm = l.clone();
    assert!(matches!(
        B::cholesky_update(lm.as_mut(), MatRef::col_vector(&[1.0, f64::NAN, 0.0, 0.0])),
        Err(LinalgError::NonFinite { .. })
    ));
    assert!(lm == l, "{}: rejected update modified the factor", B::NAME);
    // shape mismatches
    let rect = Mat::zeros(3, 4);
    assert!(matches!(B::cholesky(rect.as_ref()), Err(LinalgError::ShapeMismatch { .. })));
    assert!(matches!(B::sym_eigen(rect.as_ref()), Err(LinalgError::ShapeMismatch { .. })));
    let mut c = Mat::zeros(3, 3);
    assert!(matches!(
        B::gemm(1.0, rect.as_ref(), Trans::No, rect.as_ref(), Trans::No, 0.0, c.as_mut()),
        Err(LinalgError::ShapeMismatch { .. })
    ));
    let mut y = vec![0.0; 2];
    assert!(B::gemv(1.0, rect.as_ref(), Trans::No, &[1.0; 4], 0.0, &mut y).is_err());
    let mut b = Mat::zeros(3, 1);
    assert!(B::solve_lower_in_place(l.as_ref(), b.as_mut()).is_err());
    assert!(B::cholesky_update(lm.as_mut(), MatRef::col_vector(&[1.0; 3])).is_err());
    assert!(B::cholesky_downdate(lm.as_mut(), MatRef::col_vector(&[1.0; 5])).is_err());
    // 0x0 is fine everywhere
    let e = Mat::zeros(0, 0);
    let l0 = B::cholesky(e.as_ref()).unwrap();
    assert_eq!(B::cholesky_logdet(l0.as_ref()), 0.0);
    assert!(B::sym_eigen(e.as_ref()).unwrap().values.is_empty());
    let mut l0m = l0.clone();
    B::cholesky_update(l0m.as_mut(), Mat::zeros(0, 2).as_ref()).unwrap();
    B::cholesky_downdate(l0m.as_mut(), Mat::zeros(0, 2).as_ref()).unwrap();
    B::cholesky_solve_in_place(l0.as_ref(), Mat::zeros(0, 3).as_mut()).unwrap();
    B::gemm(1.0, e.as_ref(), Trans::No, e.as_ref(), Trans::No, 0.0, Mat::zeros(0, 0).as_mut()).unwrap();
    assert_eq!(B::gram(Mat::zeros(5, 0).as_ref()).nrows(), 0);
}

fn check_jitter<B: Backend>() {
    // rank-deficient PSD: x xᵀ + y yᵀ in 5 dimensions
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let g = gaussian(5, 2, &mut rng);
    let a = naive_mul(g.as_ref(), Trans::No, g.as_ref(), Trans::Yes);
    let (l, jitter) = B::cholesky_jittered(a.as_ref(), JitterOptions::default()).unwrap();
    assert!(jitter > 0.0, "{}: a singular matrix needs jitter", B::NAME);
    let mut shifted = a.clone();
    (0..5).for_each(|i| shifted[(i, i)] += jitter);
    let llt = naive_mul(l.as_ref(), Trans::No, l.as_ref(), Trans::Yes);
    assert!(rel_diff(&llt, &shifted) < 1e-12, "{}: factor is of A + δI", B::NAME);
    // well-posed matrices get no jitter
    let (_, none) = B::cholesky_jittered(Mat::identity(3).as_ref(), JitterOptions::default()).unwrap();
    assert_eq!(none, 0.0);
    // strongly indefinite matrices exhaust the jitter with a clear error
    let mut neg = Mat::identity(3);
    neg[(1, 1)] = -5.0;
    assert!(matches!(
        B::cholesky_jittered(neg.as_ref(), JitterOptions::default()),
        Err(LinalgError::JitterExhausted { pivot: 1, .. })
    ));
}

fn check_strided_views<B: Backend>() {
    // a 3x3 block inside a 5x4 buffer (ld = 5)
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let big = spd_with_condition(5, 10.0, &mut rng);
    let block = big.as_ref().submatrix(1, 1, 3, 3);
    let l = B::cholesky(block).unwrap();
    let llt = naive_mul(l.as_ref(), Trans::No, l.as_ref(), Trans::Yes);
    assert!(rel_diff(&llt, &block.to_owned()) < 1e-14);
    let mut buf = vec![0.0; 5 * 3];
    let c = MatMut::from_slice(&mut buf, 3, 3, 5).unwrap();
    B::gemm(1.0, block, Trans::No, block, Trans::Yes, 0.0, c).unwrap();
    let want = naive_mul(block, Trans::No, block, Trans::Yes);
    for j in 0..3 {
        for i in 0..3 {
            assert!((buf[i + 5 * j] - want[(i, j)]).abs() < 1e-14, "{} strided gemm", B::NAME);
        }
    }
    // In place on strided views (ld = n + 3): the factor and both triangular solves equal the
    // contiguous ones, and nothing outside the views changes.
    let n = 40;
    let a = spd_with_condition(n, 100.0, &mut rng);
    let rhs = gaussian(n, 7, &mut rng);
    let l = B::cholesky(a.as_ref()).unwrap();
    let ld = n + 3;
    let mut fbuf = vec![7.0; ld * n];
    (0..n).for_each(|j| fbuf[j * ld..j * ld + n].copy_from_slice(&a.as_slice()[j * n..(j + 1) * n]));
    B::cholesky_in_place(MatMut::from_slice(&mut fbuf, n, n, ld).unwrap()).unwrap();
    let mut bbuf = vec![7.0; ld * 7];
    (0..7).for_each(|j| bbuf[j * ld..j * ld + n].copy_from_slice(&rhs.as_slice()[j * n..(j + 1) * n]));
    let lv = MatRef::from_slice(&fbuf, n, n, ld).unwrap();
    B::cholesky_solve_in_place(lv, MatMut::from_slice(&mut bbuf, n, 7, ld).unwrap()).unwrap();
    let mut x = rhs.clone();
    B::cholesky_solve_in_place(l.as_ref(), x.as_mut()).unwrap();
    for j in 0..n {
        assert!(fbuf[j * ld + n..(j + 1) * ld].iter().all(|&v| v == 7.0), "{} wrote past a column", B::NAME);
        for i in 0..n {
            assert!((fbuf[i + j * ld] - l[(i, j)]).abs() < 1e-13, "{} strided cholesky ({i}, {j})", B::NAME);
        }
    }
    for j in 0..7 {
        for i in 0..n {
            assert!(
                (bbuf[i + j * ld] - x[(i, j)]).abs() < 1e-10 * (1.0 + x[(i, j)].abs()),
                "{} strided solve",
                B::NAME
            );
        }
    }
}

macro_rules! backend_suite {
    ($name:ident, $B:ty) => {
        mod $name {
            use super::*;

            proptest! {
                #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]
                #[test]
                fn cholesky_residual(n in 0usize..=300, log_kappa in 0.0f64..10.0, seed in any::<u64>()) {
                    check_cholesky_residual::<$B>(n, 10f64.powf(log_kappa), seed);
                }
                #[test]
                fn eigen_residual_and_orthogonality(n in 0usize..=300, log_kappa in 0.0f64..10.0, seed in any::<u64>()) {
                    check_eigen::<$B>(n, 10f64.powf(log_kappa), seed);
                }
                #[test]
                fn agrees_with_faer(n in 0usize..=300, seed in any::<u64>()) {
                    check_agrees_with_faer::<$B>(n, seed);
                }
                #[test]
                fn products(m in 0usize..40, k in 0usize..40, n in 0usize..40, seed in any::<u64>()) {
                    check_products::<$B>(m, k, n, seed);
                }
                #[test]
                fn products_f32(m in 0usize..70, k in 0usize..70, n in 0usize..70, seed in any::<u64>()) {
                    check_products_f32::<$B>(m, k, n, seed);
                }
                #[test]
                fn rank_k_update_downdate(n in 1usize..80, k in 1usize..6, seed in any::<u64>()) {
                    check_rank_k::<$B>(n, k, seed);
                }
            }

            #[test]
            fn rank1_chain_of_1000_matches_refactorisation() {
                check_rank1_chain::<$B>(40, 11);
            }

            #[test]
            fn bad_input_is_an_error_not_a_panic() {
                check_bad_input::<$B>();
            }

            #[test]
            fn jittered_factorisation() {
                check_jitter::<$B>();
            }

            #[test]
            fn strided_views() {
                check_strided_views::<$B>();
            }
        }
    };
}

backend_suite!(faer, bke_linalg::Faer);
#[cfg(feature = "nalgebra")]
backend_suite!(nalgebra, bke_linalg::Nalgebra);
#[cfg(feature = "openblas")]
backend_suite!(openblas, bke_linalg::OpenBlas);
