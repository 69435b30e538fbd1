//! Small dense helpers for `d × d` matrices (the dimension of the frequencies: a handful to about a
//! hundred) and the `4 × 4` systems of the Woodbury evaluation. Row-major `Vec<f64>`; no backend is
//! needed at this size. Every inner product runs through [`dot`], whose eight partial sums let the
//! loops vectorise (a single running sum is one dependent add per element: at `d = 60` the DP
//! mixture's inverse-Wishart draws were latency-bound).

/// `Σ_k a_k b_k` over the common length, in eight partial sums added in a fixed order.
#[inline]
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    const LANES: usize = 8;
    let n = a.len().min(b.len());
    let (ac, bc) = (a[..n].chunks_exact(LANES), b[..n].chunks_exact(LANES));
    let tail: f64 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    let mut acc = [0.0; LANES];
    for (x, y) in ac.zip(bc) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Lower Cholesky factor of the symmetric positive definite `d × d` matrix `a` (row-major), or `None`.
pub(crate) fn chol(a: &[f64], d: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; d * d];
    for j in 0..d {
        let row_j = &l[j * d..j * d + j];
        let s = a[j * d + j] - dot(row_j, row_j);
        if !(s > 0.0) || !s.is_finite() {
            return None;
        }
        let ljj = s.sqrt();
        l[j * d + j] = ljj;
        for i in j + 1..d {
            let v = (a[i * d + j] - dot(&l[i * d..i * d + j], &l[j * d..j * d + j])) / ljj;
            l[i * d + j] = v;
        }
    }
    Some(l)
}

/// `x ← L⁻¹ x` for lower-triangular `L` (row-major).
pub(crate) fn forward(l: &[f64], d: usize, x: &mut [f64]) {
    for i in 0..d {
        x[i] = (x[i] - dot(&l[i * d..i * d + i], &x[..i])) / l[i * d + i];
    }
}

/// `x = L ξ` for lower-triangular `L` (row-major).
pub(crate) fn lower_times(l: &[f64], d: usize, xi: &[f64]) -> Vec<f64> {
    (0..d).map(|i| dot(&l[i * d..=i * d + i], &xi[..=i])).collect()
}

/// `log det A = 2 Σ log L_ii`.
pub(crate) fn logdet_chol(l: &[f64], d: usize) -> f64 {
    2.0 * (0..d).map(|i| l[i * d + i].ln()).sum::<f64>()
}

/// `L Lᵀ` for a lower factor (row-major).
#[cfg(test)]
pub(crate) fn llt(l: &[f64], d: usize) -> Vec<f64> {
    let mut a = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let s = dot(&l[i * d..=i * d + j], &l[j * d..=j * d + j]);
            a[i * d + j] = s;
            a[j * d + i] = s;
        }
    }
    a
}

/// Solves the small general system `K x = r` in place by LU with partial pivoting and returns
/// `log |det K|` and the sign of `det K`; `None` when `K` is singular.
pub(crate) fn lu_solve_logdet(k: &mut [f64], n: usize, r: &mut [f64]) -> Option<(f64, f64)> {
    let mut logdet = 0.0;
    let mut sign = 1.0;
    for c in 0..n {
        let p = (c..n).max_by(|&a, &b| k[a * n + c].abs().total_cmp(&k[b * n + c].abs()))?;
        let piv = k[p * n + c];
        if piv == 0.0 || !piv.is_finite() {
            return None;
        }
        if p != c {
            for j in 0..n {
                k.swap(p * n + j, c * n + j);
            }
            r.swap(p, c);
            sign = -sign;
        }
        if piv < 0.0 {
            sign = -sign;
        }
        logdet += piv.abs().ln();
        for i in c + 1..n {
            let f = k[i * n + c] / piv;
            if f != 0.0 {
                for j in c..n {
                    k[i * n + j] -= f * k[c * n + j];
                }
                r[i] -= f * r[c];
            }
        }
    }
    for c in (0..n).rev() {
        let mut s = r[c];
        for j in c + 1..n {
            s -= k[c * n + j] * r[j];
        }
        r[c] = s / k[c * n + c];
    }
    Some((logdet, sign))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chol_and_lu_agree_with_definitions() {
        let a = vec![4.0, 2.0, 0.4, 2.0, 3.0, 0.5, 0.4, 0.5, 2.0];
        let l = chol(&a, 3).unwrap();
        let back = llt(&l, 3);
        for (x, y) in a.iter().zip(&back) {
            assert!((x - y).abs() < 1e-12);
        }
        // det by cofactors
        let det = a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6])
            + a[2] * (a[3] * a[7] - a[4] * a[6]);
        assert!((logdet_chol(&l, 3) - det.ln()).abs() < 1e-12);
        let mut k = vec![0.0, 1.0, 2.0, 1.0, 0.0, 3.0, 2.0, 3.0, -1.0];
        let k0 = k.clone();
        let mut r = vec![1.0, 2.0, 3.0];
        let (ld, sign) = lu_solve_logdet(&mut k, 3, &mut r).unwrap();
        let det0 = k0[0] * (k0[4] * k0[8] - k0[5] * k0[7]) - k0[1] * (k0[3] * k0[8] - k0[5] * k0[6])
            + k0[2] * (k0[3] * k0[7] - k0[4] * k0[6]);
        assert!((sign * ld.exp() - det0).abs() < 1e-10);
        for i in 0..3 {
            let s: f64 = (0..3).map(|j| k0[i * 3 + j] * r[j]).sum();
            assert!((s - [1.0, 2.0, 3.0][i]).abs() < 1e-12);
        }
        let mut x = vec![1.0, 2.0, 3.0];
        forward(&l, 3, &mut x);
        for i in 0..3 {
            let s: f64 = (0..=i).map(|k| l[i * 3 + k] * x[k]).sum();
            assert!((s - [1.0, 2.0, 3.0][i]).abs() < 1e-12);
        }
        assert!(chol(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
    }
}
