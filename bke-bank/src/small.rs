//! Small dense helpers for `d × d` matrices (the dimension of the frequencies, a handful) and the
//! `4 × 4` systems of the Woodbury evaluation. Row-major `Vec<f64>`; no backend is needed at this size.

/// Lower Cholesky factor of the symmetric positive definite `d × d` matrix `a` (row-major), or `None`.
pub(crate) fn chol(a: &[f64], d: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; d * d];
    for j in 0..d {
        let mut s = a[j * d + j];
        for k in 0..j {
            s -= l[j * d + k] * l[j * d + k];
        }
        if !(s > 0.0) || !s.is_finite() {
            return None;
        }
        let ljj = s.sqrt();
        l[j * d + j] = ljj;
        for i in j + 1..d {
            let mut s = a[i * d + j];
            for k in 0..j {
                s -= l[i * d + k] * l[j * d + k];
            }
            l[i * d + j] = s / ljj;
        }
    }
    Some(l)
}

/// `x ← L⁻¹ x` for lower-triangular `L` (row-major).
pub(crate) fn forward(l: &[f64], d: usize, x: &mut [f64]) {
    for i in 0..d {
        let mut s = x[i];
        for k in 0..i {
            s -= l[i * d + k] * x[k];
        }
        x[i] = s / l[i * d + i];
    }
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
            let s: f64 = (0..=j).map(|k| l[i * d + k] * l[j * d + k]).sum();
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
