//! Steps 1–2 of ML-II ([`super::learn`]'s module docs): the held-out landmarks and the scan of the
//! marginal pseudolikelihood over a log-spaced grid of isotropic lengthscales, on their own for the
//! rules that weigh the grid points (BKL-Bayes, [`crate::hypothesis::select`]) at a fraction of the
//! cost of the whole fit, which polishes the scan's maxima and conditions the posterior.

use super::learn::{EmbeddingParams, Objective, ScanPoint, hold_out_landmarks, scan_maxima};
use super::params::{BkeParams, check_data_scale, validate_data_landmarks};
use crate::estimator::{Progress, Valid};
use crate::{CoreError, Points, check_positive};
use bke_linalg::Backend;

/// A log-spaced grid of isotropic lengthscales `min · (max/min)^{i/(points−1)}`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthscaleGrid {
    /// Smallest lengthscale (> 0).
    pub min: f64,
    /// Largest lengthscale (> min).
    pub max: f64,
    /// Number of grid points (≥ 3).
    pub points: usize,
}

impl LengthscaleGrid {
    /// The default grid relative to a data scale `s` (the median heuristic): `[s/100, 10 s]`.
    pub fn around(scale: f64, points: usize) -> Self {
        Self { min: scale / 100.0, max: scale * 10.0, points }
    }

    /// Errors unless `0 < min < max` (finite) and `points ≥ 3`.
    pub fn check(&self) -> Result<(), CoreError> {
        check_positive("grid minimum lengthscale", self.min)?;
        check_positive("grid maximum lengthscale", self.max)?;
        if !(self.max > self.min) || self.points < 3 {
            return Err(CoreError::InvalidParameter {
                name: "lengthscale grid".into(),
                value: self.points as f64,
                reason: "need 0 < min < max and at least 3 points".into(),
            });
        }
        Ok(())
    }

    /// The grid values, ascending.
    pub fn values(&self) -> Vec<f64> {
        let (a, b) = (self.min.ln(), self.max.ln());
        (0..self.points).map(|i| (a + (b - a) * i as f64 / (self.points - 1) as f64).exp()).collect()
    }
}

/// Step 1 of the module docs: the data and landmarks of the objective.
pub(super) struct Split {
    pub(super) data: Points,
    pub(super) landmarks: Points,
    /// Indices of the held-out landmarks in the input (None for user landmarks).
    pub(super) landmark_indices: Option<Vec<usize>>,
    /// Median distance of the whole input.
    pub(super) median: f64,
}

impl Split {
    pub(super) fn of(opts: &Valid<EmbeddingParams>, x: &Points) -> Result<Self, CoreError> {
        x.check_len("data", 2)?;
        check_data_scale(x, opts.jacobian)?;
        let (data, landmarks, landmark_indices) = match &opts.landmarks {
            Some(z) => (x.clone(), z.clone(), None),
            None => {
                let (d, z, idx) = hold_out_landmarks(x, opts.num_landmarks, opts.seed)?;
                (d, z, Some(idx))
            }
        };
        validate_data_landmarks(&data, &landmarks)?;
        Ok(Self { data, landmarks, landmark_indices, median: crate::median_distance(x)? })
    }
}

/// The lengthscale scan of ML-II alone (steps 1–2 of the module docs, no polishing): what a rule
/// that weighs the scan's grid points needs (BKL-Bayes, [`crate::hypothesis::select`]), at a
/// fraction of the cost of the whole fit.
#[derive(Debug, Clone)]
pub struct PseudolikelihoodScan {
    /// The scan over isotropic lengthscales at the initial `τ²`.
    pub scan: Vec<ScanPoint>,
    /// The landmarks used.
    pub landmarks: Points,
    /// Median heuristic `median ‖x_i − x_j‖` of the input.
    pub median_heuristic: f64,
    /// Number of data points in the objective (input minus held-out landmarks).
    pub n_data: usize,
    /// The grid points not evaluated (their `log_marginal` is `−∞`) have values below this one,
    /// proved by an upper bound ([`scan_pseudolikelihood`]); `−∞` when every point was evaluated.
    pub skipped_below: f64,
}

impl PseudolikelihoodScan {
    /// The scan's local maxima `(θ, log marginal)` at or above [`Self::skipped_below`], best first,
    /// at the grid's resolution. (Below it a neighbour may not have been evaluated.)
    pub fn maxima(&self) -> Vec<(f64, f64)> {
        scan_maxima(&self.scan, self.scan.len())
            .into_iter()
            .map(|i| (self.scan[i].lengthscale, self.scan[i].log_marginal))
            .filter(|&(_, v)| v >= self.skipped_below)
            .collect()
    }
}

/// The smallest dimension where [`scan_pseudolikelihood`] bounds before it evaluates: the bound
/// costs `O(nmD)` per grid point against the value's `O(nmD²)`, so in fewer dimensions it saves
/// too little for what it adds.
pub const SKIP_MIN_DIM: usize = 4;

/// Steps 1–2 of the module docs for `x`: the held-out landmarks and the scan (reported as stage
/// `scan`), without polishing the scan's maxima or conditioning the posterior.
///
/// With `negligible = Some(c)` a grid point is left unevaluated where an upper bound of its value
/// ([`PseudolikelihoodPlan::upper_bound`](super::PseudolikelihoodPlan::upper_bound), `O(nmD)`)
/// lies more than `c · n` below the best value found (`n` data points): for a posterior tempered
/// by `1/n` (BKL-Bayes) its mass relative to the mode is then below `e^{−c}`. The points are
/// evaluated in decreasing order of their bounds, from [`SKIP_MIN_DIM`] dimensions on; every
/// value evaluated is the full scan's, bit for bit.
pub fn scan_pseudolikelihood<B: Backend>(
    opts: &Valid<EmbeddingParams>,
    x: &Points,
    negligible: Option<f64>,
    progress: &dyn Progress,
) -> Result<PseudolikelihoodScan, CoreError> {
    let Split { data, landmarks, median, .. } = Split::of(opts, x)?;
    let base = base_params(opts);
    let objective = Objective { stats: &|plan| plan.partial(&data), landmarks: &landmarks, base: &base };
    let grid = default_grid(opts, median)?;
    let (scan, skipped_below) = match negligible {
        Some(c) if landmarks.dim() >= SKIP_MIN_DIM => {
            bounded_scan::<B>(&objective, &grid, c * data.len() as f64, progress)?
        }
        _ => (objective.scan::<B>(&grid, progress)?, f64::NEG_INFINITY),
    };
    Ok(PseudolikelihoodScan { scan, landmarks, median_heuristic: median, n_data: data.len(), skipped_below })
}

/// The scan with the points whose upper bound lies more than `margin` below the best value found
/// left at `−∞`, and the value below which they provably lie (`−∞` if none was left out).
fn bounded_scan<B: Backend>(
    objective: &Objective<'_>,
    grid: &LengthscaleGrid,
    margin: f64,
    progress: &dyn Progress,
) -> Result<(Vec<ScanPoint>, f64), CoreError> {
    let thetas = grid.values();
    let total = 2 * thetas.len() as u64;
    let mut bounds = Vec::with_capacity(thetas.len());
    for (i, &t) in thetas.iter().enumerate() {
        progress.checkpoint()?;
        progress.update("scan", i as u64, total);
        bounds.push(objective.upper_bound::<B>(t)?);
    }
    let mut order: Vec<usize> = (0..thetas.len()).collect();
    order.sort_by(|&a, &b| bounds[b].total_cmp(&bounds[a]));
    let mut scan: Vec<ScanPoint> =
        thetas.iter().map(|&t| ScanPoint { lengthscale: t, log_marginal: f64::NEG_INFINITY }).collect();
    let (mut best, mut skipped) = (f64::NEG_INFINITY, false);
    for (done, &i) in order.iter().enumerate() {
        progress.checkpoint()?;
        progress.update("scan", (thetas.len() + done) as u64, total);
        // a NaN bound proves nothing: evaluated
        if bounds[i] < best - margin {
            skipped = true;
            continue;
        }
        scan[i].log_marginal = objective.scan_value::<B>(thetas[i])?;
        best = best.max(scan[i].log_marginal);
    }
    Ok((scan, if skipped { best - margin } else { f64::NEG_INFINITY }))
}

/// The scan grid: the given one, or [`LengthscaleGrid::around`] the median distance `median`.
pub(super) fn default_grid(opts: &Valid<EmbeddingParams>, median: f64) -> Result<LengthscaleGrid, CoreError> {
    let grid = opts.grid.unwrap_or_else(|| {
        LengthscaleGrid::around(if median > 0.0 { median } else { 1.0 }, opts.grid_points)
    });
    grid.check()?;
    Ok(grid)
}

/// The isotropic starting parameters of the scan (lengthscale set per grid point).
pub(super) fn base_params(opts: &Valid<EmbeddingParams>) -> BkeParams {
    BkeParams { lengthscales: vec![1.0], tau2: opts.tau2, prior: opts.prior, jacobian: opts.jacobian }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimator::Params;
    use bke_linalg::DefaultBackend;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The scan alone is the whole fit's scan, bit for bit (same landmarks, grid and evaluations); its
    /// maxima are the scan points above both neighbours, best first, and polishing only improves on them.
    #[test]
    fn scan_alone_is_the_fits_scan() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let x = Points::new("x", (0..600).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect(), 2).unwrap();
        let opts = EmbeddingParams { num_landmarks: 40, ..EmbeddingParams::default() }.check().unwrap();
        let fit = opts.fit::<DefaultBackend>(&x).unwrap();
        let scan = scan_pseudolikelihood::<DefaultBackend>(&opts, &x, None, &()).unwrap();
        assert_eq!(scan.scan, fit.scan);
        assert_eq!(scan.landmarks.as_slice(), fit.landmarks.as_slice());
        assert_eq!((scan.median_heuristic, scan.n_data), (fit.median_heuristic, fit.n_data));
        let v: Vec<f64> = scan.scan.iter().map(|s| s.log_marginal).collect();
        let mut expected: Vec<(f64, f64)> = (0..v.len())
            .filter(|&i| (i == 0 || v[i] > v[i - 1]) && (i + 1 == v.len() || v[i] >= v[i + 1]))
            .map(|i| (scan.scan[i].lengthscale, v[i]))
            .collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert!(!expected.is_empty());
        assert_eq!(scan.maxima(), expected);
        assert!(fit.log_marginal >= expected[0].1, "{} < {:?}", fit.log_marginal, expected[0]);
    }

    /// The bounded scan (10 dimensions, where the smallest lengthscales are hopeless) evaluates
    /// fewer points, each bit for bit the full scan's; every point it leaves out lies below
    /// `skipped_below`, which is `c · n` below the best, and its maxima are the full scan's at or above
    /// that value. Below [`SKIP_MIN_DIM`] dimensions it is the full scan.
    #[test]
    fn bounded_scan_leaves_out_only_provably_negligible_points() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let opts = EmbeddingParams { num_landmarks: 40, ..EmbeddingParams::default() }.check().unwrap();
        for (dim, c) in [(10, 45.0), (10, 1.0), (2, 1.0)] {
            let x = Points::new("x", (0..500 * dim).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect(), dim)
                .unwrap();
            let full = scan_pseudolikelihood::<DefaultBackend>(&opts, &x, None, &()).unwrap();
            let bounded = scan_pseudolikelihood::<DefaultBackend>(&opts, &x, Some(c), &()).unwrap();
            let best = full.scan.iter().map(|s| s.log_marginal).fold(f64::NEG_INFINITY, f64::max);
            let mut left_out = 0;
            for (f, b) in full.scan.iter().zip(&bounded.scan) {
                assert_eq!(f.lengthscale, b.lengthscale);
                if b.log_marginal == f64::NEG_INFINITY && f.log_marginal.is_finite() {
                    left_out += 1;
                    assert!(f.log_marginal < bounded.skipped_below, "{f:?} vs {}", bounded.skipped_below);
                } else {
                    assert_eq!(f.log_marginal, b.log_marginal);
                }
            }
            if dim < SKIP_MIN_DIM {
                assert_eq!((left_out, bounded.skipped_below), (0, f64::NEG_INFINITY));
                continue;
            }
            assert!(left_out >= 5, "D={dim} c={c}: only {left_out} left out");
            assert_eq!(bounded.skipped_below, best - c * full.n_data as f64);
            let kept: Vec<(f64, f64)> =
                full.maxima().into_iter().filter(|m| m.1 >= bounded.skipped_below).collect();
            assert_eq!(bounded.maxima(), kept);
        }
    }
}
