//! Kernel learning by maximum marginal pseudolikelihood (ML-II, seed 000 §4.3, §5).
//!
//! The objective is multimodal in the lengthscale (seed 000 Fig. 2D), so fitting [`EmbeddingParams`]:
//! 1. holds out a random subset of `m` points as landmarks (the seed's choice; `m ≥ D` enforced) unless
//!    landmarks are given;
//! 2. scans a log-spaced grid of isotropic lengthscales at the initial `τ²`;
//! 3. polishes every local maximum of the scan with L-BFGS on `(log θ [one per dimension with ARD],
//!    [log τ²])` using the analytic gradient;
//! 4. returns the best optimum and all distinct local optima, best first, with the median heuristic
//!    alongside (convention: `θ_med = median_{i<j} ‖x_i − x_j‖`, used as `θ` in
//!    `exp(−‖x − y‖²/(2θ²))`), and the posterior of the embedding at the learned hyperparameters
//!    conditioned at the landmarks (all input points in `μ̂`; `O(m³ + nm)`), as a
//!    [`FittedEmbedding`].
//!
//! **Learning τ² by ML-II can be ill-posed.** As `θ → ∞` the features `k(x_i, z_l)` become constant,
//! the centred sum of squares `SS = Σ_i ‖φ_i − μ̂‖²` falls like `θ⁻⁴`, and with `τ² ∝ SS` the term
//! `−½ m(n−1) log τ²` grows like `2m(n−1) log θ` while the Jacobian only loses `2nD log θ`: for `m > D`
//! the pseudolikelihood is unbounded along that ray (seen on the seed's grid-of-Gaussians data).
//! Optima found with `learn_tau2` are therefore flagged [`LocalOptimum::at_boundary`] when polishing
//! runs into the search box; the seed fixes `τ² = 1` for ML-II and learns `τ²` only under a prior.

use super::marginal::PseudolikelihoodPlan;
use super::params::BkeParams;
use super::posterior::BkePosterior;
use super::prior::EmbeddingPrior;
use super::scan::{LengthscaleGrid, Split, base_params, default_grid};
use super::stats::PartialStats;
use crate::budget::Bytes;
use crate::estimator::{Estimator, Params, Predict, Prediction, Progress, Valid};
use crate::numeric::LogParams;
use crate::optim::{LbfgsOptions, minimize};
use crate::{CoreError, Points, check_positive};
use bke_linalg::Backend;
use rand::SeedableRng;
use rand::seq::index::sample;
use rand_chacha::ChaCha8Rng;
use serde::{Serialize, Serializer};

/// ML-II settings: learning the BKE hyperparameters by maximum marginal pseudolikelihood (see the
/// module docs). Defaults: 100 held-out landmarks, `τ² = 1` fixed, Lebesgue prior, Jacobian on,
/// isotropic, grid [`LengthscaleGrid::around`] the median heuristic, seed 0.
///
/// As an [`Estimator`] on [`Points`] (at least 2), it returns a [`FittedEmbedding`].
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingParams {
    /// Number `m` of landmarks held out of the data at random (ignored when `landmarks` is given).
    /// Must be `≥ D` and `< n`.
    pub num_landmarks: usize,
    /// User landmarks; then all data points are used as data.
    pub landmarks: Option<Points>,
    /// `τ²`: fixed, or the starting value when `learn_tau2`.
    pub tau2: f64,
    /// Learn `τ²` jointly with the lengthscale(s).
    pub learn_tau2: bool,
    /// Prior measure `ν`.
    pub prior: EmbeddingPrior,
    /// Include the log-Jacobian term.
    pub jacobian: bool,
    /// One lengthscale per dimension (polished from the best isotropic grid points).
    pub ard: bool,
    /// The scan grid (`None`: [`LengthscaleGrid::around`] the median heuristic with `grid_points`).
    pub grid: Option<LengthscaleGrid>,
    /// Number of points of the default grid (when `grid` is `None`). Default 41.
    pub grid_points: usize,
    /// Maximum number of scan maxima polished (the best ones by scan value). Default 8.
    pub max_starts: usize,
    /// Seed of the landmark selection and of the median-heuristic subsample.
    pub seed: u64,
}

impl Default for EmbeddingParams {
    fn default() -> Self {
        Self {
            num_landmarks: 100,
            landmarks: None,
            tau2: 1.0,
            learn_tau2: false,
            prior: EmbeddingPrior::Lebesgue,
            jacobian: true,
            ard: false,
            grid: None,
            grid_points: 41,
            max_starts: 8,
            seed: 0,
        }
    }
}

impl Params for EmbeddingParams {
    type Error = CoreError;

    /// `τ²` finite and positive, a valid prior measure and grid, at least 3 default grid points, at
    /// least one landmark and one start.
    fn validate(&self) -> Result<(), CoreError> {
        check_positive("tau2", self.tau2)?;
        self.prior.check()?;
        if let Some(g) = &self.grid {
            g.check()?;
        }
        if self.grid_points < 3 {
            return Err(CoreError::InvalidParameter {
                name: "grid_points".into(),
                value: self.grid_points as f64,
                reason: "the lengthscale scan needs at least 3 points".into(),
            });
        }
        if self.num_landmarks == 0 && self.landmarks.is_none() {
            return Err(CoreError::InvalidParameter {
                name: "number of landmarks".into(),
                value: 0.0,
                reason: "need at least D landmarks".into(),
            });
        }
        if self.max_starts == 0 {
            return Err(CoreError::InvalidParameter {
                name: "max_starts".into(),
                value: 0.0,
                reason: "need at least one start".into(),
            });
        }
        let grid_points = self.grid.map_or(self.grid_points, |g| g.points);
        let setting = format!("grid_points = {grid_points}");
        crate::budget::check(&setting, Bytes::f64s(grid_points).times(4))
    }
}

/// A local maximum of the marginal pseudolikelihood found by ML-II ([`EmbeddingParams`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocalOptimum {
    /// Lengthscale(s) (one, or one per dimension with ARD). JSON: `"lengthscale"`, a number when
    /// there is one, else an array.
    #[serde(rename = "lengthscale", serialize_with = "super::params::one_or_many")]
    pub lengthscales: Vec<f64>,
    /// `τ²` (the fixed value unless learned).
    pub tau2: f64,
    /// Log marginal pseudolikelihood there.
    pub log_marginal: f64,
    /// `‖∇‖∞` on the log scale at the end of polishing.
    pub grad_norm: f64,
    /// Whether L-BFGS met its tolerance.
    pub converged: bool,
    /// Whether polishing ended near the search box (log θ within 0.1 of `[grid.min/100, 100·grid.max]`,
    /// or log τ² within 0.1 of `τ²₀ · [1e-8, 1e8]`): then this is not an interior optimum.
    pub at_boundary: bool,
}

/// One point of the lengthscale scan. JSON: `{"lengthscale", "log_marginal"}`, or
/// `{"lengthscale", "failed": true}` where the objective was not finite there (JSON has no `−∞`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScanPoint {
    /// The isotropic lengthscale.
    pub lengthscale: f64,
    /// The log marginal pseudolikelihood at the initial `τ²` (`−∞` where it failed).
    pub log_marginal: f64,
}

impl Serialize for ScanPoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ScanPoint", 2)?;
        st.serialize_field("lengthscale", &self.lengthscale)?;
        if self.log_marginal.is_finite() {
            st.serialize_field("log_marginal", &self.log_marginal)?;
        } else {
            st.serialize_field("failed", &true)?;
        }
        st.end()
    }
}

/// The result of ML-II ([`EmbeddingParams`]): the learned hyperparameters, every local optimum, the
/// scan, and the posterior of the embedding at the learned hyperparameters conditioned at the
/// landmarks ([`Predict`]: posterior mean and variance of `μ`).
///
/// Its JSON (`bke embed fit`) has the fields `lengthscale` (a number, or an array with ARD), `tau2`,
/// `log_marginal`, `local_optima`, `median_heuristic`, `median_heuristic_convention`, `scan`,
/// `num_landmarks`, `landmark_indices`, `n_data`, `evaluations`, `prior`, `jacobian`.
#[derive(Debug, Clone)]
pub struct FittedEmbedding {
    /// The best parameters found.
    pub params: BkeParams,
    /// Log marginal pseudolikelihood at `params`.
    pub log_marginal: f64,
    /// All distinct local optima, best first (the first equals `params`).
    pub local_optima: Vec<LocalOptimum>,
    /// Median heuristic `median ‖x_i − x_j‖` of the data (for comparison).
    pub median_heuristic: f64,
    /// The scan over isotropic lengthscales at the initial `τ²`.
    pub scan: Vec<ScanPoint>,
    /// The landmarks used.
    pub landmarks: Points,
    /// Indices of the held-out landmarks in the input (None for user landmarks).
    pub landmark_indices: Option<Vec<usize>>,
    /// Number of data points in the objective (input minus held-out landmarks).
    pub n_data: usize,
    /// Objective evaluations (scan + polishing).
    pub evaluations: usize,
    /// The posterior of `μ` at `params`, `μ̂` from every input point, conditioned at the landmarks.
    pub posterior: BkePosterior,
}

/// How [`FittedEmbedding::median_heuristic`] is defined.
pub const MEDIAN_HEURISTIC_CONVENTION: &str =
    "median pairwise Euclidean distance, used as theta in exp(-|x-y|^2/(2 theta^2))";

impl Predict for FittedEmbedding {
    type Output = Prediction;
    type Error = CoreError;

    /// The posterior mean and variance of `μ` at `x` ([`BkePosterior`] conditioned at the landmarks).
    fn predict<B: Backend>(&self, x: &Points) -> Result<Prediction, CoreError> {
        self.posterior.predict::<B>(x)
    }
}

impl Serialize for FittedEmbedding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Report<'a> {
            #[serde(serialize_with = "super::params::one_or_many")]
            lengthscale: &'a [f64],
            tau2: f64,
            log_marginal: f64,
            local_optima: &'a [LocalOptimum],
            median_heuristic: f64,
            median_heuristic_convention: &'static str,
            scan: &'a [ScanPoint],
            num_landmarks: usize,
            landmark_indices: &'a Option<Vec<usize>>,
            n_data: usize,
            evaluations: usize,
            prior: EmbeddingPrior,
            jacobian: bool,
        }
        Report {
            lengthscale: &self.params.lengthscales,
            tau2: self.params.tau2,
            log_marginal: self.log_marginal,
            local_optima: &self.local_optima,
            median_heuristic: self.median_heuristic,
            median_heuristic_convention: MEDIAN_HEURISTIC_CONVENTION,
            scan: &self.scan,
            num_landmarks: self.landmarks.len(),
            landmark_indices: &self.landmark_indices,
            n_data: self.n_data,
            evaluations: self.evaluations,
            prior: self.params.prior,
            jacobian: self.params.jacobian,
        }
        .serialize(s)
    }
}

/// The default number of held-out landmarks for `n` points in `dim` dimensions:
/// `min(100, max(D, n/5))` (the CLI's default for `--num-landmarks`).
pub fn default_num_landmarks(n: usize, dim: usize) -> usize {
    100.min((n / 5).max(dim))
}

/// The rows held out as landmarks by [`hold_out_landmarks`] from `n` points in `dim` dimensions:
/// `m` indices drawn uniformly without replacement (ChaCha8 seeded with `seed`), ascending. Errors
/// unless `D ≤ m < n`. For data held elsewhere (chunks), which gathers these rows itself.
pub fn landmark_indices(n: usize, dim: usize, m: usize, seed: u64) -> Result<Vec<usize>, CoreError> {
    if m < dim || m >= n {
        return Err(CoreError::InvalidParameter {
            name: "number of landmarks m".into(),
            value: m as f64,
            reason: format!("need D = {dim} ≤ m < n = {n} (m points are held out of the data)"),
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut idx = sample(&mut rng, n, m).into_vec();
    idx.sort_unstable();
    Ok(idx)
}

/// Splits `x` into `(data, landmarks, landmark_indices)` with `m` landmarks drawn uniformly without
/// replacement (ChaCha8 seeded with `seed`); indices ascending. Errors unless `D ≤ m < n`.
pub fn hold_out_landmarks(
    x: &Points,
    m: usize,
    seed: u64,
) -> Result<(Points, Points, Vec<usize>), CoreError> {
    let n = x.len();
    let idx = landmark_indices(n, x.dim(), m, seed)?;
    let mut is_lm = vec![false; n];
    idx.iter().for_each(|&i| is_lm[i] = true);
    let rest: Vec<usize> = (0..n).filter(|&i| !is_lm[i]).collect();
    Ok((x.select(&rest), x.select(&idx), idx))
}

impl Estimator for EmbeddingParams {
    type Data = Points;
    type Fitted = FittedEmbedding;

    /// ML-II kernel learning: see the module docs. Reports the stages `scan` and `polish`.
    fn fit_valid<B: Backend>(
        opts: &Valid<Self>,
        x: &Points,
        progress: &dyn Progress,
    ) -> Result<FittedEmbedding, CoreError> {
        let Split { data, landmarks, landmark_indices, median } = Split::of(opts, x)?;
        let learned = learn_from_stats::<B>(opts, &landmarks, median, &|plan| plan.partial(&data), progress)?;
        let params = learned.params;
        let posterior = BkePosterior::conditioned_at::<B>(&params, x, &landmarks)?;
        Ok(FittedEmbedding {
            log_marginal: learned.log_marginal,
            params,
            local_optima: learned.local_optima,
            median_heuristic: median,
            scan: learned.scan,
            landmarks,
            landmark_indices,
            n_data: data.len(),
            evaluations: learned.evaluations,
            posterior,
        })
    }
}

/// The data's statistics for a plan: [`PseudolikelihoodPlan::partial`] over the data, merged in a
/// fixed order (in memory, over chunks of a file, or over the workers of a cluster).
pub type StatsSource<'a> = dyn Fn(&PseudolikelihoodPlan) -> Result<PartialStats, CoreError> + 'a;

/// What ML-II learned ([`learn_from_stats`]).
#[derive(Debug, Clone)]
pub struct Learned {
    /// The best parameters found.
    pub params: BkeParams,
    /// The log marginal pseudolikelihood there.
    pub log_marginal: f64,
    /// All distinct local optima, best first.
    pub local_optima: Vec<LocalOptimum>,
    /// The scan over isotropic lengthscales at the initial `τ²`.
    pub scan: Vec<ScanPoint>,
    /// Objective evaluations (scan + polishing).
    pub evaluations: usize,
}

/// Steps 2–4 of the module docs (scan, polish, best optimum) with the data reached only through
/// `stats`, one call per objective evaluation: the fit of [`EmbeddingParams`] with
/// `stats = |plan| plan.partial(&data)`, or the same fit on data held elsewhere (the chunks of a Dask
/// array: per-chunk [`PseudolikelihoodPlan::partial`] on the workers, merged by
/// [`PartialStats::merge`], the `O(m³)` finish here). `median` is the median heuristic of the input
/// (the centre of the default grid); `landmarks` are not data.
pub fn learn_from_stats<B: Backend>(
    opts: &Valid<EmbeddingParams>,
    landmarks: &Points,
    median: f64,
    stats: &StatsSource<'_>,
    progress: &dyn Progress,
) -> Result<Learned, CoreError> {
    let grid = default_grid(opts, median)?;
    let base = base_params(opts);
    let objective = Objective { stats, landmarks, base: &base };
    let scan = objective.scan::<B>(&grid, progress)?;
    let starts = scan_maxima(&scan, opts.max_starts);
    if starts.is_empty() {
        return Err(CoreError::InvalidParameter {
            name: "lengthscale grid".into(),
            value: grid.min,
            reason: "the marginal pseudolikelihood is −∞ on the whole grid: widen the grid or add landmarks"
                .into(),
        });
    }
    let box_ = SearchBox::new(&grid, opts, landmarks.dim());
    let mut optima: Vec<LocalOptimum> = Vec::new();
    let mut evaluations = scan.len();
    for (i, &s) in starts.iter().enumerate() {
        progress.checkpoint()?;
        progress.update("polish", i as u64, starts.len() as u64);
        let (found, count) = objective.polish::<B>(scan[s].lengthscale, &box_);
        evaluations += count;
        if let Some(cand) = found {
            merge_optimum(&mut optima, cand);
        }
    }
    progress.update("polish", starts.len() as u64, starts.len() as u64);
    optima.sort_by(|a, b| b.log_marginal.total_cmp(&a.log_marginal));
    let best = optima.first().ok_or_else(|| CoreError::InvalidParameter {
        name: "lengthscale".into(),
        value: f64::NAN,
        reason: "polishing failed from every start: check the data and landmarks".into(),
    })?;
    let params = BkeParams { lengthscales: best.lengthscales.clone(), tau2: best.tau2, ..base };
    Ok(Learned { params, log_marginal: best.log_marginal, local_optima: optima, scan, evaluations })
}

/// The marginal pseudolikelihood of the data at the landmarks, as a function of the hyperparameters.
pub(super) struct Objective<'a> {
    pub(super) stats: &'a StatsSource<'a>,
    pub(super) landmarks: &'a Points,
    pub(super) base: &'a BkeParams,
}

/// Where polishing may go (on the log scale) and how far one step may reach.
struct SearchBox {
    /// Number of lengthscales polished (1, or D with ARD).
    n_ls: usize,
    /// Bounds of log θ: `[grid.min/100, 100·grid.max]`.
    lo: f64,
    hi: f64,
    /// Bounds of log τ² (`τ²₀ · [1e-8, 1e8]`) when τ² is learned.
    tau2: Option<(f64, f64)>,
    /// The initial (or fixed) τ².
    tau2_0: f64,
    /// One grid spacing on the log scale: the largest L-BFGS step.
    step: f64,
}

impl SearchBox {
    fn new(grid: &LengthscaleGrid, opts: &EmbeddingParams, dim: usize) -> Self {
        let t0 = opts.tau2.ln();
        Self {
            n_ls: if opts.ard { dim } else { 1 },
            lo: grid.min.ln() - 100f64.ln(),
            hi: grid.max.ln() + 100f64.ln(),
            tau2: opts.learn_tau2.then(|| (t0 - 8.0 * 10f64.ln(), t0 + 8.0 * 10f64.ln())),
            tau2_0: opts.tau2,
            step: (grid.max.ln() - grid.min.ln()) / (grid.points - 1) as f64,
        }
    }

    fn contains(&self, p: &[f64]) -> bool {
        p[..self.n_ls].iter().all(|v| (self.lo..=self.hi).contains(v))
            && self.tau2.is_none_or(|(a, b)| (a..=b).contains(&p[self.n_ls]))
    }

    /// Within 0.1 of a bound: not an interior optimum.
    fn near_edge(&self, p: &[f64]) -> bool {
        let near = |v: f64, a: f64, b: f64| v < a + 0.1 || v > b - 0.1;
        p[..self.n_ls].iter().any(|&v| near(v, self.lo, self.hi))
            || self.tau2.is_some_and(|(a, b)| near(p[self.n_ls], a, b))
    }

    /// The log-scale point ([`LogParams`]) of `(θ, τ²)`; `τ²` only when it is learned.
    fn pack(&self, lengthscales: &[f64], tau2: f64) -> Vec<f64> {
        let mut p = LogParams::default();
        p.extend(lengthscales);
        if self.tau2.is_some() {
            p.push(tau2);
        }
        p.into_vec()
    }

    /// `(θ, τ²)` at the log-scale point `p` (the inverse of [`Self::pack`]); `None` where a value is
    /// not finite and positive.
    fn unpack(&self, p: &[f64]) -> Option<(Vec<f64>, f64)> {
        let mut r = LogParams::reader(p);
        let ls = r.take_n("lengthscale", self.n_ls).ok()?;
        let tau2 = if self.tau2.is_some() { r.take("tau2").ok()? } else { self.tau2_0 };
        r.finish().ok()?;
        Some((ls, tau2))
    }
}

impl Objective<'_> {
    /// The objective at `(lengthscales, τ²)`, with its gradient or (`gradient` false: a value-only
    /// plan, the same value bit for bit at about half the Jacobian term's cost) without it.
    fn eval<B: Backend>(
        &self,
        lengthscales: Vec<f64>,
        tau2: f64,
        gradient: bool,
    ) -> Result<super::MarginalLikelihood, CoreError> {
        let plan = self.plan(lengthscales, tau2)?;
        let plan = if gradient { plan } else { plan.without_gradient() };
        plan.finish::<B>(&(self.stats)(&plan)?)
    }

    /// The plan at `(lengthscales, τ²)` with the base parameters' other settings.
    fn plan(&self, lengthscales: Vec<f64>, tau2: f64) -> Result<PseudolikelihoodPlan, CoreError> {
        let p = BkeParams { lengthscales, tau2, ..self.base.clone() };
        p.validate_for_dim(self.landmarks.dim())?;
        PseudolikelihoodPlan::new(self.landmarks, &p)
    }

    /// An upper bound of the objective at the isotropic lengthscale `theta` and the initial `τ²`
    /// ([`PseudolikelihoodPlan::upper_bound`]); NaN where the data give no bound.
    pub(super) fn upper_bound<B: Backend>(&self, theta: f64) -> Result<f64, CoreError> {
        let plan = self.plan(vec![theta], self.base.tau2)?.upper_bound();
        Ok(plan.finish::<B>(&(self.stats)(&plan)?)?.log_marginal)
    }

    /// The objective's value at the isotropic lengthscale `theta` and the initial `τ²` (NaN counts
    /// as `−∞`).
    pub(super) fn scan_value<B: Backend>(&self, theta: f64) -> Result<f64, CoreError> {
        let v = self.eval::<B>(vec![theta], self.base.tau2, false)?.log_marginal;
        Ok(if v.is_nan() { f64::NEG_INFINITY } else { v })
    }

    /// The log-grid scan at the initial `τ²` (NaN counts as `−∞`).
    pub(super) fn scan<B: Backend>(
        &self,
        grid: &LengthscaleGrid,
        progress: &dyn Progress,
    ) -> Result<Vec<ScanPoint>, CoreError> {
        let thetas = grid.values();
        let mut scan = Vec::with_capacity(thetas.len());
        for (i, &t) in thetas.iter().enumerate() {
            progress.checkpoint()?;
            progress.update("scan", i as u64, thetas.len() as u64);
            scan.push(ScanPoint { lengthscale: t, log_marginal: self.scan_value::<B>(t)? });
        }
        Ok(scan)
    }

    /// L-BFGS from the isotropic lengthscale `theta0` (steps of at most one grid spacing, so a start
    /// stays in the basin of its scan maximum): the optimum reached (None if L-BFGS failed) and the
    /// number of evaluations.
    fn polish<B: Backend>(&self, theta0: f64, b: &SearchBox) -> (Option<LocalOptimum>, usize) {
        let x0 = b.pack(&vec![theta0; b.n_ls], b.tau2_0);
        let mut count = 0usize;
        let res = minimize(
            |p: &[f64]| {
                count += 1;
                if !b.contains(p) {
                    return None;
                }
                let (ls, tau2) = b.unpack(p)?;
                let ml = self.eval::<B>(ls, tau2, true).ok()?;
                let mut g: Vec<f64> = ml.grad_log_lengthscale.iter().map(|v| -v).collect();
                if b.tau2.is_some() {
                    g.push(-ml.grad_log_tau2);
                }
                Some((-ml.log_marginal, g))
            },
            x0,
            LbfgsOptions { memory: 8, max_iter: 100, grad_tol: 1e-6, f_tol: 1e-12, max_step: b.step },
        );
        let found = res.ok().and_then(|r| {
            let (lengthscales, tau2) = b.unpack(&r.x)?;
            Some(LocalOptimum {
                lengthscales,
                tau2,
                log_marginal: -r.f,
                grad_norm: r.grad_norm,
                converged: r.converged,
                at_boundary: b.near_edge(&r.x),
            })
        });
        (found, count)
    }
}

/// Indices of the local maxima of the scan (ties: the first of a plateau), best first, at most `max`.
pub(super) fn scan_maxima(scan: &[ScanPoint], max: usize) -> Vec<usize> {
    let vals: Vec<f64> = scan.iter().map(|s| s.log_marginal).collect();
    let k = vals.len();
    let mut starts: Vec<usize> = (0..k)
        .filter(|&i| {
            let left = i == 0 || vals[i] > vals[i - 1];
            let right = i + 1 == k || vals[i] >= vals[i + 1];
            vals[i].is_finite() && left && right
        })
        .collect();
    starts.sort_by(|&a, &b| vals[b].total_cmp(&vals[a]));
    starts.truncate(max);
    starts
}

/// Adds `cand` to `optima` unless an optimum within 1e-3 on the log scale is there (keeping the
/// better of the two).
fn merge_optimum(optima: &mut Vec<LocalOptimum>, cand: LocalOptimum) {
    let same = |o: &LocalOptimum| {
        o.lengthscales.iter().zip(&cand.lengthscales).all(|(a, b)| (a.ln() - b.ln()).abs() < 1e-3)
            && (o.tau2.ln() - cand.tau2.ln()).abs() < 1e-3
    };
    match optima.iter_mut().find(|o| same(o)) {
        Some(o) if o.log_marginal < cand.log_marginal => *o = cand,
        Some(_) => {}
        None => optima.push(cand),
    }
}

#[cfg(test)]
mod tests {
    use super::super::marginal_pseudolikelihood;
    use super::*;
    use bke_linalg::DefaultBackend;
    use rand::Rng;
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn holdout_is_a_partition() {
        let x = Points::from_1d("x", &(0..20).map(|i| i as f64).collect::<Vec<_>>()).unwrap();
        let (d, z, idx) = hold_out_landmarks(&x, 5, 3).unwrap();
        assert_eq!((d.len(), z.len(), idx.len()), (15, 5, 5));
        let mut all: Vec<f64> = d.as_slice().iter().chain(z.as_slice()).cloned().collect();
        all.sort_by(f64::total_cmp);
        assert_eq!(all, x.as_slice());
        assert_eq!(hold_out_landmarks(&x, 5, 3).unwrap().2, idx);
        assert!(hold_out_landmarks(&x, 20, 3).is_err());
        let x2 = Points::from_rows("x", &[vec![0.0, 0.0], vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap();
        assert!(hold_out_landmarks(&x2, 1, 0).is_err()); // m < D
    }

    /// ML-II on statistics merged over uneven chunks (as from a Dask array) finds the in-memory fit's
    /// optimum to 1e-8 with the same scan to 1e-10.
    #[test]
    fn fit_from_chunked_statistics_equals_in_memory_fit() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let data: Vec<f64> = (0..600)
            .map(|i| (i % 3) as f64 * 2.0 + 0.5 * Distribution::<f64>::sample(&StandardNormal, &mut rng))
            .collect();
        let x = Points::new("x", data, 2).unwrap();
        let opts = EmbeddingParams { num_landmarks: 30, seed: 4, ..Default::default() }.check().unwrap();
        let whole = opts.fit::<DefaultBackend>(&x).unwrap();
        let idx = landmark_indices(x.len(), 2, 30, 4).unwrap();
        assert_eq!(Some(&idx), whole.landmark_indices.as_ref());
        let rest: Vec<usize> = (0..x.len()).filter(|i| idx.binary_search(i).is_err()).collect();
        let chunks: Vec<Points> =
            [0..7, 7..200, 200..rest.len()].into_iter().map(|r| x.select(&rest[r])).collect();
        let stats = |plan: &PseudolikelihoodPlan| {
            let mut total = plan.empty_stats();
            for c in &chunks {
                total.merge(&PartialStats::from_slice(&plan.partial(c)?.to_vec())?)?;
            }
            Ok(total)
        };
        let median = crate::median_distance(&x).unwrap();
        let r = learn_from_stats::<DefaultBackend>(&opts, &x.select(&idx), median, &stats, &()).unwrap();
        let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
        assert!(rel(r.params.lengthscales[0], whole.params.lengthscales[0]) < 1e-8);
        assert!(rel(r.log_marginal, whole.log_marginal) < 1e-10);
        for (a, b) in r.scan.iter().zip(&whole.scan) {
            assert!(rel(a.log_marginal, b.log_marginal) < 1e-10);
        }
    }

    /// The optimum is a stationary point of the objective (gradient ≈ 0), beats every scan value, and
    /// learning τ² moves to a point with zero τ² gradient.
    #[test]
    fn fit_finds_stationary_maxima() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let data: Vec<f64> = (0..400)
            .flat_map(|i| {
                let c = if i % 2 == 0 { -3.0 } else { 3.0 };
                let a: f64 = StandardNormal.sample(&mut rng);
                let b: f64 = rng.random::<f64>();
                [c + a, b]
            })
            .collect();
        let x = Points::new("x", data, 2).unwrap();
        for (learn_tau2, ard) in [(false, false), (true, false), (false, true)] {
            let opts = EmbeddingParams { num_landmarks: 20, learn_tau2, ard, ..Default::default() };
            let r = opts.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
            assert!(r.scan.iter().all(|s| s.log_marginal <= r.log_marginal + 1e-9));
            assert_eq!(r.landmarks.len(), 20);
            assert_eq!(r.n_data, 380);
            let best = &r.local_optima[0];
            assert!(best.converged && !best.at_boundary, "{best:?}");
            let (data, z) = hold_out_landmarks(&x, 20, 0).map(|(d, z, _)| (d, z)).unwrap();
            let ml = marginal_pseudolikelihood::<DefaultBackend>(&data, &z, &r.params).unwrap();
            assert!((ml.log_marginal - r.log_marginal).abs() < 1e-9 * r.log_marginal.abs());
            for g in &ml.grad_log_lengthscale {
                assert!(g.abs() < 1e-3, "{ml:?}");
            }
            if learn_tau2 {
                assert!(ml.grad_log_tau2.abs() < 1e-3, "{ml:?}");
            } else {
                assert_eq!(r.params.tau2, 1.0);
            }
            assert_eq!(r.params.lengthscales.len(), if ard { 2 } else { 1 });
            assert!(r.median_heuristic > 1.0);
        }
    }
}
