//! The MMD² statistics (Gretton et al. 2012) from samples or from a pooled Gram matrix, by their
//! block-sum definitions ([module docs](super)): the unbiased U-statistic, the biased V-statistic and
//! the linear-time statistic over the pairs `(z_{2i−1}, z_{2i})`. The test ([`super::mmd`]) and its
//! nulls ([`super::mmd_null`]) both evaluate them.

use super::kernels::{Distances, WeightedKernel};
use super::resampling::NullDistribution;
use super::resampling::choice;
use crate::{CoreError, Points};
use bke_linalg::Mat;
use serde::Serialize;

/// Which MMD² estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MmdStatistic {
    /// The unbiased U-statistic (Gretton et al. 2012, eq. (3)). The default.
    #[default]
    Unbiased,
    /// The biased V-statistic (Gretton et al. 2012, eq. (5)).
    Biased,
    /// The linear-time statistic (Gretton et al. 2012, Lemma 14); needs `n = m`.
    Linear,
}

impl MmdStatistic {
    /// Name used in outputs and on the command line: "unbiased", "biased", "linear".
    pub fn name(self) -> &'static str {
        match self {
            MmdStatistic::Unbiased => "unbiased",
            MmdStatistic::Biased => "biased",
            MmdStatistic::Linear => "linear",
        }
    }

    /// Parses a name as written by [`MmdStatistic::name`].
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        match name {
            "unbiased" => Ok(Self::Unbiased),
            "biased" => Ok(Self::Biased),
            "linear" => Ok(Self::Linear),
            other => Err(choice(&format!("MMD statistic '{other}'"), "use unbiased, biased or linear")),
        }
    }
}

/// Errors unless `x` and `y` can be compared: both with at least 2 points, the same dimension, and
/// `n = m` where `statistic`/`null` pair the samples.
pub fn check_samples(
    x: &Points,
    y: &Points,
    statistic: MmdStatistic,
    null: NullDistribution,
) -> Result<(), CoreError> {
    x.check_len("sample x", 2)?;
    y.check_len("sample y", 2)?;
    x.check_dim("sample y", y.dim())?;
    let paired = statistic == MmdStatistic::Linear || null == NullDistribution::WildBootstrap;
    if paired && x.len() != y.len() {
        return Err(CoreError::DimensionMismatch {
            what: format!(
                "sample y size (the {} pairs x_i with y_i)",
                if statistic == MmdStatistic::Linear { "linear-time statistic" } else { "wild bootstrap" }
            ),
            expected: x.len(),
            found: y.len(),
        });
    }
    Ok(())
}

pub(crate) fn check_gram(k: &Mat, n: usize) -> Result<usize, CoreError> {
    if k.nrows() != k.ncols() {
        return Err(CoreError::DimensionMismatch {
            what: "Gram matrix columns".into(),
            expected: k.nrows(),
            found: k.ncols(),
        });
    }
    let big_n = k.nrows();
    if n < 2 || big_n < n + 2 {
        return Err(CoreError::Empty {
            what: format!("MMD with n = {n} of N = {big_n} pooled points"),
            needed: 2,
        });
    }
    if let Some((i, j)) = k.as_ref().find_non_finite() {
        return Err(CoreError::NonFinite { what: "Gram matrix".into(), row: i, col: j, value: k[(i, j)] });
    }
    Ok(big_n)
}

/// MMD² from the pooled Gram matrix `K` of `(x_1…x_n, y_1…y_m)` (first `n` rows are `x`), by the
/// block-sum definitions. For [`MmdStatistic::Linear`] it uses the pairs of the linear statistic
/// (needs `n = m`).
pub fn mmd_from_gram(k: &Mat, n: usize, statistic: MmdStatistic) -> Result<f64, CoreError> {
    let big_n = check_gram(k, n)?;
    let m = big_n - n;
    if statistic == MmdStatistic::Linear {
        if n != m {
            return Err(CoreError::DimensionMismatch {
                what: "sample y size (linear-time statistic)".into(),
                expected: n,
                found: m,
            });
        }
        let pairs = n / 2;
        let s: f64 = (0..pairs)
            .map(|i| {
                let (a, b) = (2 * i, 2 * i + 1);
                k[(a, b)] + k[(n + a, n + b)] - k[(a, n + b)] - k[(b, n + a)]
            })
            .sum();
        return Ok(s / pairs as f64);
    }
    let member: Vec<bool> = (0..big_n).map(|i| i < n).collect();
    Ok(block_sums_statistic(k, &member, n, statistic))
}

/// The statistic from the block sums of `K` for the labelling `member` (true = x), straight from the
/// definitions (diagonal excluded for the unbiased statistic).
pub(crate) fn block_sums_statistic(k: &Mat, member: &[bool], n: usize, statistic: MmdStatistic) -> f64 {
    let big_n = member.len();
    let m = big_n - n;
    let (mut sxx, mut syy, mut sxy, mut dxx, mut dyy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for j in 0..big_n {
        let col = k.col(j);
        let (mut cx, mut cy) = (0.0, 0.0);
        for i in 0..big_n {
            if member[i] {
                cx += col[i];
            } else {
                cy += col[i];
            }
        }
        if member[j] {
            sxx += cx;
            sxy += cy;
            dxx += col[j];
        } else {
            syy += cy;
            dyy += col[j];
        }
    }
    let (nf, mf) = (n as f64, m as f64);
    match statistic {
        MmdStatistic::Biased => sxx / (nf * nf) + syy / (mf * mf) - 2.0 * sxy / (nf * mf),
        _ => (sxx - dxx) / (nf * (nf - 1.0)) + (syy - dyy) / (mf * (mf - 1.0)) - 2.0 * sxy / (nf * mf),
    }
}

/// The quadratic statistic of a labelling with `n` points called `x` and `m` called `y` from
/// `q = uᵀKu`, `s = uᵀr`, `d_x = uᵀ diag K`, `T = 1ᵀK1` and `D = tr K` ([`super::mmd`]'s module
/// docs): `Σ_xx = q`, `Σ_yy = T − 2s + q`, `Σ_xy = s − q`, diagonals `d_x` and `D − d_x`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn from_sums(
    q: f64,
    s: f64,
    dx: f64,
    n: usize,
    m: usize,
    total: f64,
    trace: f64,
    statistic: MmdStatistic,
) -> f64 {
    let (nf, mf) = (n as f64, m as f64);
    let syy = total - 2.0 * s + q;
    let sxy = s - q;
    match statistic {
        MmdStatistic::Biased => q / (nf * nf) + syy / (mf * mf) - 2.0 * sxy / (nf * mf),
        _ => (q - dx) / (nf * (nf - 1.0)) + (syy - trace + dx) / (mf * (mf - 1.0)) - 2.0 * sxy / (nf * mf),
    }
}

/// MMD² between `x` and `y` under `kernel`. Quadratic statistics build the pooled Gram matrix; the
/// linear-time statistic evaluates `2n` kernel values.
pub fn mmd_statistic(
    x: &Points,
    y: &Points,
    kernel: &WeightedKernel,
    statistic: MmdStatistic,
) -> Result<f64, CoreError> {
    check_samples(x, y, statistic, NullDistribution::Permutation)?;
    if statistic == MmdStatistic::Linear {
        let h = linear_h(kernel, x, y);
        return Ok(h.iter().sum::<f64>() / h.len() as f64);
    }
    let pooled = x.concat(y)?;
    mmd_from_gram(&Distances::new(&pooled).gram(kernel), x.len(), statistic)
}

/// `h_i = h(z_{2i−1}, z_{2i})` of the linear-time statistic, `i = 1…⌊n/2⌋`, for `n = m`.
pub(crate) fn linear_h(kernel: &WeightedKernel, x: &Points, y: &Points) -> Vec<f64> {
    (0..x.len() / 2)
        .map(|i| {
            let (a, b) = (2 * i, 2 * i + 1);
            kernel.eval(x.point(a), x.point(b)) + kernel.eval(y.point(a), y.point(b))
                - kernel.eval(x.point(a), y.point(b))
                - kernel.eval(x.point(b), y.point(a))
        })
        .collect()
}
