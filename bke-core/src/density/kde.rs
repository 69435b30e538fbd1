//! A Gaussian kernel density estimate, the baseline of the seed's comparisons:
//! `p̂(x) = (1/N) Σ_n Π_d N(x_d | x_{n,d}, h_d²)`, bandwidths `h_d = c · sd_d`.
//!
//! Bandwidths: the normal-reference rule (Silverman 1986, eq. (4.14); Scott)
//! `c = (4/((d+2)N))^{1/(d+4)}` (1-D: `1.06 N^{−1/5}`), or `c` maximising the leave-one-out
//! log-likelihood `Σ_i log[(1/(N−1)) Σ_{j≠i} N_h(x_i − x_j)]` over a log grid, or given.

use crate::estimator::{Estimator, LogDensity, Params, Progress, Valid};
use crate::numeric::{LN_2PI, log_sum_exp};
use crate::{CoreError, Points};
use bke_linalg::Backend;
use rayon::prelude::*;

/// How [`KdeParams`] chooses the bandwidths.
#[derive(Debug, Clone, PartialEq)]
pub enum Bandwidth {
    /// The normal-reference (Silverman/Scott) rule.
    NormalReference,
    /// `c · sd_d` with the factor `c` of this grid that maximises the leave-one-out likelihood.
    CrossValidated {
        /// Candidate factors `c > 0`.
        factors: Vec<f64>,
    },
    /// Given bandwidths, one per dimension.
    Fixed(Vec<f64>),
}

/// The Gaussian KDE baseline. Default: leave-one-out cross-validated bandwidth factor over 40
/// log-spaced values in `[0.02, 3]`. As an [`Estimator`] on [`Points`] it returns a [`GaussianKde`].
#[derive(Debug, Clone, PartialEq)]
pub struct KdeParams {
    /// The bandwidth rule.
    pub bandwidth: Bandwidth,
}

impl Default for KdeParams {
    fn default() -> Self {
        let factors = (0..40).map(|i| 0.02 * 150f64.powf(i as f64 / 39.0)).collect();
        Self { bandwidth: Bandwidth::CrossValidated { factors } }
    }
}

impl Params for KdeParams {
    type Error = CoreError;

    /// A non-empty grid of positive factors, or positive fixed bandwidths.
    fn validate(&self) -> Result<(), CoreError> {
        let (what, values) = match &self.bandwidth {
            Bandwidth::NormalReference => return Ok(()),
            Bandwidth::CrossValidated { factors } => ("KDE bandwidth factor", factors),
            Bandwidth::Fixed(h) => ("bandwidth", h),
        };
        if values.is_empty() {
            return Err(CoreError::Empty { what: format!("{what} list"), needed: 1 });
        }
        values.iter().try_for_each(|&v| crate::check_positive(what, v))
    }
}

impl Estimator for KdeParams {
    type Data = Points;
    type Fitted = GaussianKde;

    /// The KDE of `x` (at least 2 points for the data-driven rules), O(N² d) per candidate factor.
    fn fit_valid<B: Backend>(
        p: &Valid<Self>,
        x: &Points,
        progress: &dyn Progress,
    ) -> Result<GaussianKde, CoreError> {
        match &p.bandwidth {
            Bandwidth::Fixed(h) => GaussianKde::new(x, h.clone(), KdeBandwidth::Fixed),
            Bandwidth::NormalReference => {
                x.check_len("KDE data", 2)?;
                let d = x.dim() as f64;
                let c = (4.0 / ((d + 2.0) * x.len() as f64)).powf(1.0 / (d + 4.0));
                GaussianKde::new(x, scaled_std_devs(x, c), KdeBandwidth::Silverman)
            }
            Bandwidth::CrossValidated { factors } => {
                x.check_len("KDE data", 2)?;
                let mut best = (f64::NEG_INFINITY, factors[0]);
                for (i, &c) in factors.iter().enumerate() {
                    progress.checkpoint()?;
                    progress.update("bandwidth", i as u64, factors.len() as u64);
                    let loo =
                        GaussianKde::new(x, scaled_std_devs(x, c), KdeBandwidth::Silverman)?.loo_log_lik();
                    if loo > best.0 {
                        best = (loo, c);
                    }
                }
                let rule = KdeBandwidth::CrossValidated { loo_log_lik: best.0 };
                GaussianKde::new(x, scaled_std_devs(x, best.1), rule)
            }
        }
    }
}

/// How the bandwidth of a fitted KDE was chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KdeBandwidth {
    /// Normal-reference (Silverman/Scott) rule.
    Silverman,
    /// Leave-one-out likelihood cross-validation; carries the best LOO log-likelihood per point.
    CrossValidated {
        /// Mean leave-one-out log-likelihood at the chosen bandwidth.
        loo_log_lik: f64,
    },
    /// Given.
    Fixed,
}

/// A fitted Gaussian KDE with a diagonal bandwidth ([`LogDensity`]).
#[derive(Debug, Clone)]
pub struct GaussianKde {
    data: Points,
    bandwidths: Vec<f64>,
    rule: KdeBandwidth,
}

/// `c · sd_d` for every dimension (a constant column counts as sd 1).
fn scaled_std_devs(x: &Points, c: f64) -> Vec<f64> {
    let n = x.len() as f64;
    (0..x.dim())
        .map(|k| {
            let m = x.iter().map(|p| p[k]).sum::<f64>() / n;
            let v = x.iter().map(|p| (p[k] - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
            c * if v > 0.0 { v.sqrt() } else { 1.0 }
        })
        .collect()
}

impl GaussianKde {
    fn new(data: &Points, bandwidths: Vec<f64>, rule: KdeBandwidth) -> Result<Self, CoreError> {
        data.check_len("KDE data", 1)?;
        data.check_dim("bandwidths", bandwidths.len())?;
        for &h in &bandwidths {
            crate::check_positive("bandwidth", h)?;
        }
        Ok(Self { data: data.clone(), bandwidths, rule })
    }

    /// The bandwidths.
    pub fn bandwidths(&self) -> &[f64] {
        &self.bandwidths
    }

    /// How they were chosen.
    pub fn rule(&self) -> KdeBandwidth {
        self.rule
    }

    fn log_kernel(&self, x: &[f64], y: &[f64]) -> f64 {
        let mut s = 0.0;
        let mut norm = 0.0;
        for ((a, b), h) in x.iter().zip(y).zip(&self.bandwidths) {
            let z = (a - b) / h;
            s += z * z;
            norm += h.ln();
        }
        -0.5 * s - norm - 0.5 * x.len() as f64 * LN_2PI
    }

    /// Mean leave-one-out log-likelihood per point.
    pub fn loo_log_lik(&self) -> f64 {
        let n = self.data.len();
        let total = crate::numeric::ordered_sum((0..n).into_par_iter().map(|i| {
            let xi = self.data.point(i);
            let terms: Vec<f64> =
                (0..n).filter(|&j| j != i).map(|j| self.log_kernel(xi, self.data.point(j))).collect();
            log_sum_exp(&terms) - ((n - 1) as f64).ln()
        }));
        total / n as f64
    }
}

impl LogDensity for GaussianKde {
    type Error = CoreError;

    /// `log p̂(x)` at every query point (no linear algebra: `B` is unused).
    fn log_density<B: Backend>(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        self.data.check_dim("query points", q.dim())?;
        let ln_n = (self.data.len() as f64).ln();
        Ok((0..q.len())
            .into_par_iter()
            .map(|i| {
                let terms: Vec<f64> = self.data.iter().map(|p| self.log_kernel(q.point(i), p)).collect();
                log_sum_exp(&terms) - ln_n
            })
            .collect())
    }
}
