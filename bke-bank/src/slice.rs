//! Univariate slice sampling with stepping out and shrinkage (Neal 2003, "Slice sampling", §4,
//! Figs. 3 and 5). BaNK uses it for the log prior precision `log λ₀` of the regression weights,
//! whose conditional `p(log λ₀ | W, y) ∝ p(y | W, λ₀) p(log λ₀)` (seed 001 eq. (11) times the
//! hyperprior) is evaluated with one Cholesky factorisation of `ΦᵀΦ + λ₀I` per point.
//!
//! The update leaves the target invariant for any `width`; stepping out (at most `max_steps`
//! widths) and shrinkage towards the current point make it robust to a badly chosen width.

use rand::Rng;

/// One slice-sampling update of `x0` (with `logf(x0) = f0`) for the unnormalised log density
/// `logf`, which may return `−∞` outside its support. Returns the new point and its log density.
pub fn slice_step<R: Rng, E>(
    x0: f64,
    f0: f64,
    mut logf: impl FnMut(f64) -> Result<f64, E>,
    width: f64,
    max_steps: usize,
    rng: &mut R,
) -> Result<(f64, f64), E> {
    let level = f0 + rng.random::<f64>().ln();
    let mut lo = x0 - width * rng.random::<f64>();
    let mut hi = lo + width;
    let mut left = (max_steps as f64 * rng.random::<f64>()).floor() as usize;
    let mut right = max_steps.saturating_sub(1 + left);
    while left > 0 && logf(lo)? > level {
        lo -= width;
        left -= 1;
    }
    while right > 0 && logf(hi)? > level {
        hi += width;
        right -= 1;
    }
    // Shrinkage: the interval always contains x0, so this ends (the cap only guards round-off).
    for _ in 0..200 {
        let x1 = lo + (hi - lo) * rng.random::<f64>();
        let f1 = logf(x1)?;
        if f1 > level {
            return Ok((x1, f1));
        }
        if x1 < x0 {
            lo = x1;
        } else {
            hi = x1;
        }
    }
    Ok((x0, f0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// The chain's moments match a skewed target (Gamma(3, 1) on the log scale: `x = log g`,
    /// density `∝ exp(3x − eˣ)`, mean `ψ(3) = 0.9228`, variance `ψ'(3) = 0.3949`), with a width far
    /// from the target's scale; tolerance 5 batch-means standard errors.
    #[test]
    fn slice_chain_has_the_target_moments() {
        let logf = |x: f64| -> Result<f64, ()> { Ok(3.0 * x - x.exp()) };
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let (mut x, mut f) = (5.0, logf(5.0).unwrap());
        let mut xs = Vec::new();
        for _ in 0..40_000 {
            (x, f) = slice_step(x, f, logf, 0.2, 20, &mut rng).unwrap();
            xs.push(x);
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let batches: Vec<f64> = xs.chunks(400).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect();
        let se = (batches.iter().map(|b| (b - mean).powi(2)).sum::<f64>()
            / (batches.len() - 1) as f64
            / batches.len() as f64)
            .sqrt();
        assert!((mean - 0.922_784).abs() < 5.0 * se, "mean {mean} ± {se}");
        assert!((var - 0.394_934).abs() < 0.03, "variance {var}");
    }
}
