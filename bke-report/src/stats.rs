//! Summary statistics of repeated measurements, shared by the demo and the reproductions.
//!
//! The standard deviation is the *sample* one, with divisor `n − 1` (unbiased variance), and the
//! standard error of the mean is that SD over `√n`; with one value both are undefined (NaN).

/// Mean and sample standard deviation `√(Σ (x − x̄)² / (n − 1))` of `v` (NaN SD for `n < 2`).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let ss = v.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    (m, if v.len() > 1 { (ss / (n - 1.0)).sqrt() } else { f64::NAN })
}

/// Mean and its standard error `s / √n`, with `s` the sample SD of [`mean_sd`] (NaN for `n < 2`).
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let (m, sd) = mean_sd(v);
    (m, sd / (v.len() as f64).sqrt())
}

/// `mean ± se` to `prec` decimals, or the mean alone where the SE is undefined (one value).
pub fn plus_minus((mean, se): (f64, f64), prec: usize) -> String {
    if se.is_finite() { format!("{mean:.prec$} ± {se:.prec$}") } else { format!("{mean:.prec$}") }
}

/// Root-mean-square difference `√(Σ (a_i − b_i)² / n)` of two equally long vectors.
pub fn rmse(a: &[f64], b: &[f64]) -> f64 {
    (a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / a.len() as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_sd_and_standard_error_by_hand() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, Σ(x − 5)² = 32, sample variance 32/7.
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let (m, sd) = mean_sd(&v);
        assert_eq!(m, 5.0);
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-15);
        let (_, se) = mean_se(&v);
        assert!((se - (32.0f64 / 7.0 / 8.0).sqrt()).abs() < 1e-15);
        assert!(mean_sd(&[3.0]).1.is_nan() && mean_se(&[3.0]).1.is_nan());
    }

    #[test]
    fn rmse_by_hand() {
        // Differences 3, −4, 0: √(25/3).
        assert!((rmse(&[4.0, 0.0, 1.0], &[1.0, 4.0, 1.0]) - (25.0f64 / 3.0).sqrt()).abs() < 1e-15);
    }
}
