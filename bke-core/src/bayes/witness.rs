//! The witness function `μ_P − μ_Q` with the kernel hyperparameters integrated out (seed 000 Fig. 3):
//! one joint draw of each embedding from its BKE posterior (seed 000 eq. (7)–(8)) per hyperparameter
//! draw, differenced, then pointwise summaries.

use crate::embedding::{BkeParams, BkePosterior};
use crate::nuts;
use crate::{CoreError, Points};
use bke_linalg::Backend;
use rayon::prelude::*;
use serde::{Serialize, Serializer};

/// The posterior of the witness function `μ_P − μ_Q` on a grid with the hyperparameters integrated
/// out (seed 000 Fig. 3). JSON: `mean`, `lower`, `upper`, `median`, `prob_positive`,
/// `fraction_band_excludes_0`, `level` (not the draws).
#[derive(Debug, Clone)]
pub struct WitnessPosterior {
    /// Pointwise posterior mean.
    pub mean: Vec<f64>,
    /// Pointwise median.
    pub median: Vec<f64>,
    /// Pointwise `(1 − level)/2` quantile.
    pub lower: Vec<f64>,
    /// Pointwise `(1 + level)/2` quantile.
    pub upper: Vec<f64>,
    /// Pointwise posterior probability that the witness is positive.
    pub prob_positive: Vec<f64>,
    /// The central credible level of `lower`/`upper`.
    pub level: f64,
    /// The witness draws, row-major `draws × grid` (one row per hyperparameter draw).
    pub draws: Vec<f64>,
}

impl WitnessPosterior {
    /// Fraction of grid points whose credible band excludes 0.
    pub fn fraction_excluding_zero(&self) -> f64 {
        let n = self.lower.len();
        let k = self.lower.iter().zip(&self.upper).filter(|(l, u)| **l > 0.0 || **u < 0.0).count();
        k as f64 / n as f64
    }
}

impl Serialize for WitnessPosterior {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Report<'a> {
            mean: &'a [f64],
            lower: &'a [f64],
            upper: &'a [f64],
            median: &'a [f64],
            prob_positive: &'a [f64],
            fraction_band_excludes_0: f64,
            level: f64,
        }
        Report {
            mean: &self.mean,
            lower: &self.lower,
            upper: &self.upper,
            median: &self.median,
            prob_positive: &self.prob_positive,
            fraction_band_excludes_0: self.fraction_excluding_zero(),
            level: self.level,
        }
        .serialize(s)
    }
}

/// SplitMix64 finaliser: decorrelated seeds for the per-draw posterior samples.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The witness posterior on `grid`: for each hyperparameter draw `s` (e.g. [`HyperDraws::params`](super::HyperDraws::params)),
/// one joint draw of `μ_P` from the BKE posterior given `x_p` and one of `μ_Q` given `x_q` (each
/// conditioned on its own data, seed 000 eq. (7), or on the common points `at`), differenced; then the
/// pointwise mean, median, central `level` band and `P(witness > 0)`.
///
/// Draw `s` uses seeds derived from `(seed, s)` only and the draws run in parallel, so the result does
/// not depend on the thread count.
pub fn witness_posterior<B: Backend>(
    x_p: &Points,
    x_q: &Points,
    grid: &Points,
    at: Option<&Points>,
    draws: &[BkeParams],
    level: f64,
    seed: u64,
) -> Result<WitnessPosterior, CoreError> {
    x_p.check_len("sample x (P)", 1)?;
    x_q.check_len("sample y (Q)", 1)?;
    grid.check_len("grid", 1)?;
    x_p.check_dim("sample y (Q)", x_q.dim())?;
    x_p.check_dim("grid", grid.dim())?;
    if draws.is_empty() {
        return Err(CoreError::Empty { what: "hyperparameter draws".into(), needed: 1 });
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(CoreError::InvalidParameter {
            name: "level".into(),
            value: level,
            reason: "the credible level must lie strictly between 0 and 1 (e.g. 0.8)".into(),
        });
    }
    let g = grid.len();
    let rows: Vec<Vec<f64>> = draws
        .par_iter()
        .enumerate()
        .map(|(s, p)| {
            let pp = BkePosterior::conditioned_at::<B>(p, x_p, at.unwrap_or(x_p))?;
            let pq = BkePosterior::conditioned_at::<B>(p, x_q, at.unwrap_or(x_q))?;
            let a = pp.sample::<B>(grid, 1, mix(seed ^ mix(2 * s as u64)))?;
            let b = pq.sample::<B>(grid, 1, mix(seed ^ mix(2 * s as u64 + 1)))?;
            Ok((0..g).map(|i| a[(i, 0)] - b[(i, 0)]).collect())
        })
        .collect::<Result<_, CoreError>>()?;
    let s = rows.len();
    let mut out = WitnessPosterior {
        mean: vec![0.0; g],
        median: vec![0.0; g],
        lower: vec![0.0; g],
        upper: vec![0.0; g],
        prob_positive: vec![0.0; g],
        level,
        draws: rows.concat(),
    };
    let mut col = vec![0.0; s];
    for i in 0..g {
        for (r, c) in rows.iter().zip(col.iter_mut()) {
            *c = r[i];
        }
        out.mean[i] = col.iter().sum::<f64>() / s as f64;
        out.prob_positive[i] = col.iter().filter(|&&v| v > 0.0).count() as f64 / s as f64;
        col.sort_by(f64::total_cmp);
        out.median[i] = nuts::diagnostics::quantile_sorted(&col, 0.5);
        out.lower[i] = nuts::diagnostics::quantile_sorted(&col, (1.0 - level) / 2.0);
        out.upper[i] = nuts::diagnostics::quantile_sorted(&col, (1.0 + level) / 2.0);
    }
    Ok(out)
}
