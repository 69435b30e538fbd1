//! Kernel choice for the tests (seed 000 §2.4, §5): a fixed lengthscale, the median heuristic (either
//! convention, [`MedianConvention::Muandet`] by default), or **BKL** — the lengthscale that maximises
//! the BKE marginal pseudolikelihood (ML-II, [`crate::embedding::EmbeddingParams`]).
//!
//! For the two-sample test BKL learns θ on the **pooled** sample `x ∪ y` (seed §5). The pooled sample
//! is invariant under relabelling, so the chosen θ is the same for every permutation and the
//! permutation test keeps its level (`cargo xtask repro level` checks this). For HSIC one lengthscale
//! per variable is learned, each on its own marginal sample, which is likewise invariant under
//! permuting `y` against `x`.

use super::median::{MedianConvention, median_lengthscale};
use crate::embedding::EmbeddingParams;
use crate::estimator::Params;
use crate::{CoreError, Points, check_positive};
use bke_linalg::Backend;

/// How the lengthscale θ of the squared exponential kernel `exp(−‖x − y‖²/(2θ²))` is chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum LengthscaleSelection {
    /// A given θ.
    Fixed(f64),
    /// The median heuristic with the given convention.
    Median(MedianConvention),
    /// ML-II on the BKE marginal pseudolikelihood with these options (isotropic; `ard` is ignored).
    /// When the options ask for at least as many held-out landmarks as there are points, `max(D, n/5)`
    /// landmarks are held out instead.
    Bkl(Box<EmbeddingParams>),
}

impl Default for LengthscaleSelection {
    /// The median heuristic, Muandet convention.
    fn default() -> Self {
        LengthscaleSelection::Median(MedianConvention::Muandet)
    }
}

impl LengthscaleSelection {
    /// BKL with the default [`EmbeddingParams`] (100 held-out landmarks, `τ² = 1`, Lebesgue prior measure,
    /// Jacobian term, 41-point scan around the median heuristic) and the given seed for the landmarks.
    pub fn bkl(seed: u64) -> Self {
        LengthscaleSelection::Bkl(Box::new(EmbeddingParams { seed, ..EmbeddingParams::default() }))
    }

    /// "fixed", "median" or "bkl".
    pub fn name(&self) -> &'static str {
        match self {
            LengthscaleSelection::Fixed(_) => "fixed",
            LengthscaleSelection::Median(_) => "median",
            LengthscaleSelection::Bkl(_) => "bkl",
        }
    }
}

/// What BKL found (for reports).
#[derive(Debug, Clone, PartialEq)]
pub struct BklSummary {
    /// Log marginal pseudolikelihood at the chosen θ.
    pub log_marginal: f64,
    /// All local optima `(θ, log marginal)`, best first.
    pub local_optima: Vec<(f64, f64)>,
    /// The median distance of the sample (for comparison).
    pub median_distance: f64,
    /// Number of held-out landmarks.
    pub landmarks: usize,
    /// `τ²` used.
    pub tau2: f64,
}

/// A selected lengthscale and how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedLengthscale {
    /// The lengthscale θ.
    pub lengthscale: f64,
    /// The method: "fixed", "median", "bkl".
    pub method: &'static str,
    /// The median convention, for the median heuristic.
    pub median_convention: Option<MedianConvention>,
    /// BKL details, for BKL.
    pub bkl: Option<BklSummary>,
}

/// Chooses θ for the sample `x` (the pooled sample for MMD, one marginal for HSIC).
pub fn select_lengthscale<B: Backend>(
    x: &Points,
    selection: &LengthscaleSelection,
) -> Result<SelectedLengthscale, CoreError> {
    let method = selection.name();
    match selection {
        LengthscaleSelection::Fixed(l) => {
            check_positive("lengthscale", *l)?;
            Ok(SelectedLengthscale { lengthscale: *l, method, median_convention: None, bkl: None })
        }
        LengthscaleSelection::Median(c) => Ok(SelectedLengthscale {
            lengthscale: median_lengthscale(x, *c)?,
            method,
            median_convention: Some(*c),
            bkl: None,
        }),
        LengthscaleSelection::Bkl(opts) => {
            x.check_len("sample for BKL", 2)?;
            let mut opts = (**opts).clone();
            opts.ard = false;
            if opts.landmarks.is_none() && opts.num_landmarks >= x.len() {
                opts.num_landmarks = (x.len() / 5).max(x.dim()).max(1);
            }
            let r = opts.check()?.fit::<B>(x)?;
            let summary = BklSummary {
                log_marginal: r.log_marginal,
                local_optima: r.local_optima.iter().map(|o| (o.lengthscales[0], o.log_marginal)).collect(),
                median_distance: r.median_heuristic,
                landmarks: r.landmarks.len(),
                tau2: r.params.tau2,
            };
            Ok(SelectedLengthscale {
                lengthscale: r.params.lengthscales[0],
                method,
                median_convention: None,
                bkl: Some(summary),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    #[test]
    fn selections() {
        let x = Points::from_1d("x", &[0.0, 1.0, 3.0, 7.0]).unwrap();
        let f = select_lengthscale::<DefaultBackend>(&x, &LengthscaleSelection::Fixed(0.3)).unwrap();
        assert_eq!((f.lengthscale, f.method), (0.3, "fixed"));
        assert!(select_lengthscale::<DefaultBackend>(&x, &LengthscaleSelection::Fixed(-1.0)).is_err());
        let m = select_lengthscale::<DefaultBackend>(&x, &LengthscaleSelection::default()).unwrap();
        assert_eq!((m.lengthscale, m.median_convention), (3.5, Some(MedianConvention::Muandet)));
    }

    /// BKL picks the within-cluster scale on well-separated tight clusters, where the median heuristic
    /// picks the between-cluster distance; and it is the maximiser of the objective it reports.
    #[test]
    fn bkl_finds_the_cluster_scale() {
        let mut data = Vec::new();
        for c in 0..4 {
            for i in 0..40 {
                // deterministic spread ±0.3 around centres 10 apart
                let u = ((i * 37 + c * 11) % 41) as f64 / 40.0 - 0.5;
                let v = ((i * 17 + c * 5) % 43) as f64 / 42.0 - 0.5;
                data.push(10.0 * (c % 2) as f64 + 0.6 * u);
                data.push(10.0 * (c / 2) as f64 + 0.6 * v);
            }
        }
        let x = Points::new("x", data, 2).unwrap();
        let s = select_lengthscale::<DefaultBackend>(&x, &LengthscaleSelection::bkl(0)).unwrap();
        let med = select_lengthscale::<DefaultBackend>(&x, &LengthscaleSelection::default()).unwrap();
        let b = s.bkl.as_ref().unwrap();
        assert!(
            s.lengthscale < 2.0 && med.lengthscale > 5.0,
            "bkl {} median {}",
            s.lengthscale,
            med.lengthscale
        );
        assert_eq!(b.local_optima[0].0, s.lengthscale);
        assert!(b.local_optima.iter().all(|o| o.1 <= b.log_marginal));
        assert_eq!(b.landmarks, 100);
        // fewer points than the default landmark count: n/5 are held out
        let small = x.select(&(0..60).map(|i| i * 2).collect::<Vec<_>>());
        let s = select_lengthscale::<DefaultBackend>(&small, &LengthscaleSelection::bkl(0)).unwrap();
        assert_eq!(s.bkl.unwrap().landmarks, 12);
    }
}
