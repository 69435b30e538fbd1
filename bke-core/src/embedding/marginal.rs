//! The marginal pseudolikelihood of the BKE model (seed 000 eq. (15)) computed by seed 002 eq. (33),
//! with the corrected log-Jacobian term and analytic gradients. See the [module docs](super).
//!
//! The objective is a sum over the data given the landmarks, so it is computed as **partial
//! statistics per chunk → merge → finish** ([`PseudolikelihoodPlan`], [`PartialStats`]): a chunk's
//! statistics are its count `n`, the mean feature vector `μ̂ = (1/n) Σ_i φ_i` (`φ_i = k(x_i, z_·)`),
//! the centred sum of squares `SS = Σ_i ‖φ_i − μ̂‖²`, their derivatives in the log lengthscale(s),
//! and the Jacobian sums `Σ_i log γ(x_i)`, `Σ_i Σ_l p_il u_ild²`. Two chunks merge exactly by the
//! pairwise update of Chan, Golub & LeVeque (1979): with `δ = μ̂_b − μ̂_a`,
//! `SS = SS_a + SS_b + ‖δ‖² n_a n_b/n` and `∂SS = ∂SS_a + ∂SS_b + 2 (n_a n_b/n) δ·∂δ`, so no sum
//! of squares ever cancels. `finish` adds the `m × m` terms (`O(m³)`). Memory is `O(mD)` per chunk
//! whatever `n`: a file can be streamed through [`PseudolikelihoodPlan::partial`] chunk by chunk.

use super::params::{BkeParams, full_lengthscales, validate_data_landmarks};
use super::pass::{Landmarks, Scratch};
use super::stats::PartialStats;
use crate::numeric::LN_2PI;
use crate::{CoreError, Points};
use bke_linalg::{Backend, LinalgError, Mat};
use rayon::prelude::*;

/// Points per parallel task of [`PseudolikelihoodPlan::partial`].
const CHUNK: usize = 256;
/// Tasks per round: the statistics of one round are merged in task order, rounds in order, so the
/// result does not depend on the number of threads, and memory is `O(ROUND · m · D)` whatever `n`.
const ROUND: usize = 64;

/// The value of the log marginal pseudolikelihood and its gradient.
#[derive(Debug, Clone, PartialEq)]
pub struct MarginalLikelihood {
    /// `log p(x_1..x_n | θ, τ²) = log_gaussian + log_jacobian` (seed 000 eq. (15)).
    pub log_marginal: f64,
    /// The Gaussian term `log N(vec K_zx; 0, 1 1ᵀ ⊗ R_zz + τ² I_mn)` of seed 002 eq. (33).
    pub log_gaussian: f64,
    /// `Σ_i log γ_θ(x_i)` (0 when [`BkeParams::jacobian`] is off).
    pub log_jacobian: f64,
    /// `∂ log_marginal / ∂ log θ`: one entry for an isotropic lengthscale, one per dimension for ARD.
    pub grad_log_lengthscale: Vec<f64>,
    /// `∂ log_marginal / ∂ log τ²`.
    pub grad_log_tau2: f64,
}

impl MarginalLikelihood {
    /// The value itself when it and its gradient are finite, else an error saying why they are
    /// not: a `−∞` log-Jacobian means the landmarks' feature map loses rank at some data point
    /// (a constant or duplicated column, landmarks that do not span the input dimensions), a
    /// non-finite value otherwise means the lengthscale is far from the data's scale (e.g. data
    /// near 1e200). Inside optimisers and samplers a non-finite value is simply rejected; reports
    /// (the CLI, Python) call this.
    pub fn finite(self) -> Result<Self, CoreError> {
        let grads_ok =
            self.grad_log_lengthscale.iter().all(|g| g.is_finite()) && self.grad_log_tau2.is_finite();
        if self.log_marginal.is_finite() && grads_ok {
            return Ok(self);
        }
        let reason = if !self.log_jacobian.is_finite() {
            "the log-Jacobian Σ log γ(x_i) is not finite: the landmarks' feature map is rank-deficient at \
             some data point (a constant or duplicated column, or landmarks that do not span the input \
             dimensions); drop such columns, choose other landmarks, or leave the Jacobian out"
        } else {
            "the data are far from the lengthscale's scale (kernel values underflow or overflow); \
             standardise the columns or choose a lengthscale on the data's scale"
        };
        Err(CoreError::NonFiniteResult {
            what: format!("the log marginal pseudolikelihood ({}) or its gradient", self.log_marginal),
            reason: reason.into(),
        })
    }
}

/// Everything the objective needs besides the data: landmarks prepared for the streaming pass and
/// the `m × m` prior terms. Build once per parameter value, then stream the data through
/// [`PseudolikelihoodPlan::partial`] in chunks of any size and [`PseudolikelihoodPlan::finish`].
///
/// ```
/// use bke_core::embedding::{BkeParams, PseudolikelihoodPlan, marginal_pseudolikelihood};
/// use bke_core::Points;
/// use bke_linalg::DefaultBackend;
/// let x: Vec<f64> = (0..500).map(|i| (i as f64 * 0.37).sin() * 2.0).collect();
/// let z = Points::from_1d("z", &[-1.5, 0.0, 1.0]).unwrap();
/// let p = BkeParams::new(vec![0.8], 1.0);
/// let plan = PseudolikelihoodPlan::new(&z, &p).unwrap();
/// let mut stats = plan.empty_stats();
/// for chunk in x.chunks(128) {
///     stats.merge(&plan.partial(&Points::from_1d("x", chunk).unwrap()).unwrap()).unwrap();
/// }
/// let streamed = plan.finish::<DefaultBackend>(&stats).unwrap();
/// let whole = marginal_pseudolikelihood::<DefaultBackend>(&Points::from_1d("x", &x).unwrap(), &z, &p).unwrap();
/// assert!((streamed.log_marginal - whole.log_marginal).abs() < 1e-10 * whole.log_marginal.abs());
/// ```
#[derive(Debug, Clone)]
pub struct PseudolikelihoodPlan {
    params: BkeParams,
    ls: Vec<f64>,
    landmarks: Landmarks,
    /// `R_zz`.
    r: Mat,
    /// `∂R/∂log θ_g` (summed over dimensions for one lengthscale).
    dr: Vec<Mat>,
}

impl PseudolikelihoodPlan {
    /// Prepares the objective at landmarks `z` (`m ≥ D` points, not treated as data) and
    /// parameters `params` (`O(m²D)`). Errors on empty landmarks, `m < D` or invalid parameters.
    pub fn new(z: &Points, params: &BkeParams) -> Result<Self, CoreError> {
        z.check_len("landmarks", 1)?;
        let (m, dim) = (z.len(), z.dim());
        if m < dim {
            // The same message as for a full data set.
            validate_data_landmarks(z, z)?;
        }
        params.validate_for_dim(dim)?;
        let ard = params.lengthscales.len() > 1;
        let ls = full_lengthscales(&params.lengthscales, dim);
        let landmarks = Landmarks::new(z.as_slice(), dim, &ls, ard, params.jacobian);
        let gd = landmarks.gd;
        let mut r = Mat::zeros(m, m);
        let mut dr: Vec<Mat> = (0..gd).map(|_| Mat::zeros(m, m)).collect();
        let mut g = vec![0.0; dim];
        for j in 0..m {
            for i in j..m {
                let v = params.prior.r_grad(&ls, z.point(i), z.point(j), &mut g);
                r[(i, j)] = v;
                r[(j, i)] = v;
                for (c, drc) in dr.iter_mut().enumerate() {
                    let gv = if gd == 1 { g.iter().sum() } else { g[c] };
                    drc[(i, j)] = gv;
                    drc[(j, i)] = gv;
                }
            }
        }
        Ok(Self { params: params.clone(), ls, landmarks, r, dr })
    }

    /// The same plan computing the objective's value only (about half the work of the Jacobian
    /// term): [`PseudolikelihoodPlan::finish`] then reports the gradient as NaN. The value is bit
    /// for bit the full plan's (the gradient sums never feed it). For scans over a grid.
    pub fn without_gradient(mut self) -> Self {
        self.landmarks.gradient = false;
        self
    }

    /// The same plan computing an **upper bound** of the objective's value at `O(nmD)`, the cost of
    /// the Gaussian term, instead of the Jacobian's `O(nmD²)`: [`PseudolikelihoodPlan::finish`]
    /// then reports `log_gaussian` exactly and, as `log_jacobian`, `Σ_i ½ D log(tr G_i / D)` for
    /// `Σ_i ½ log det G_i` (the arithmetic–geometric mean inequality on the eigenvalues of each
    /// point's Jacobian Gram matrix `G_i`, seed 000 eq. (16)–(17)), and NaN as the gradient. Exact
    /// in one dimension. For scans that skip the grid points the bound shows to be negligible.
    pub fn upper_bound(mut self) -> Self {
        self.landmarks.gradient = false;
        self.landmarks.bound = true;
        self
    }

    /// The parameters it was built for.
    pub fn params(&self) -> &BkeParams {
        &self.params
    }

    /// Dimension `D` of the data.
    pub fn dim(&self) -> usize {
        self.landmarks.dim
    }

    /// Number of landmarks `m`.
    pub fn num_landmarks(&self) -> usize {
        self.landmarks.m
    }

    /// Gradient coordinates: 1 for one lengthscale, `D` for ARD.
    pub fn gradient_coordinates(&self) -> usize {
        self.landmarks.gd
    }

    /// The statistics of no points, to merge chunks into.
    pub fn empty_stats(&self) -> PartialStats {
        PartialStats::empty(self.num_landmarks(), self.gradient_coordinates())
    }

    /// The statistics of the data chunk `x` (any number of points, even none), in parallel blocks
    /// whose results are merged in a fixed order: bitwise identical for any thread count.
    /// Time `O(n m D²)` (`O(nmD)` without the Jacobian), memory `O(mD)` per thread.
    pub fn partial(&self, x: &Points) -> Result<PartialStats, CoreError> {
        x.check_dim("landmarks", self.dim())?;
        let mut total = self.empty_stats();
        self.accumulate(&mut total, x.as_slice())?;
        Ok(total)
    }

    /// Merges the statistics of the points `x` (row-major) into `total`, block by block of
    /// [`PseudolikelihoodPlan::BLOCK`] points (the last block may be shorter), in block order.
    fn accumulate(&self, total: &mut PartialStats, x: &[f64]) -> Result<(), CoreError> {
        let dim = self.dim();
        let n = x.len() / dim;
        let n_chunks = n.div_ceil(CHUNK);
        let mut first = 0;
        while first < n_chunks {
            let last = (first + ROUND).min(n_chunks);
            let parts: Vec<PartialStats> = (first..last)
                .into_par_iter()
                .map_init(Scratch::default, |s, ci| {
                    let rows = ci * CHUNK..((ci + 1) * CHUNK).min(n);
                    self.landmarks.block(&x[rows.start * dim..rows.end * dim], s)
                })
                .collect();
            for p in &parts {
                total.merge(p)?;
            }
            first = last;
        }
        Ok(())
    }

    /// Points per block of the streaming pass: [`PseudolikelihoodPlan::partial`] summarises blocks
    /// of this many consecutive points and merges them in order.
    pub const BLOCK: usize = CHUNK;

    /// A stream of data chunks of any sizes whose result is **bitwise identical** to
    /// [`marginal_pseudolikelihood`] on the concatenated data (for any thread count): the stream
    /// regroups the points into the same blocks of [`PseudolikelihoodPlan::BLOCK`] and merges them
    /// in the same order. Memory `O(BLOCK · D + mD)` besides the caller's chunk.
    pub fn stream(&self) -> PseudolikelihoodStream<'_> {
        PseudolikelihoodStream { plan: self, total: self.empty_stats(), pending: Vec::new() }
    }

    /// The objective and its gradient from the statistics of the whole data set (`O(m³)`).
    /// Errors when `stats` summarise no point or belong to another plan's shape, or when
    /// `R_zz + (τ²/n)I` is not positive definite even after the eigenvalue fallback (practically
    /// impossible: its eigenvalues are `≥ τ²/n`).
    pub fn finish<B: Backend>(&self, stats: &PartialStats) -> Result<MarginalLikelihood, CoreError> {
        if stats.n == 0 {
            return Err(CoreError::Empty { what: "data (0 points)".into(), needed: 1 });
        }
        self.empty_stats().merge(stats)?; // shape check
        let dense = DenseTerms::new::<B>(&self.r, self.params.tau2 / stats.n as f64)?;
        let mut ml = combine(stats, &dense, &self.dr, &self.params, &self.ls);
        if !self.landmarks.gradient {
            ml.grad_log_lengthscale.iter_mut().for_each(|g| *g = f64::NAN);
            ml.grad_log_tau2 = f64::NAN;
        }
        Ok(ml)
    }
}

/// The log marginal pseudolikelihood `log p(x | θ, τ²)` of seed 000 eq. (15), computed by seed 002
/// eq. (33) plus the corrected log-Jacobian, and its gradient with respect to `log θ` and `log τ²`.
///
/// `x`: the `n` data points; `z`: the `m ≥ D` landmarks (not treated as data). Time `O(m³ + nmD²)`
/// (`nmD` for the Gaussian term, `nmD²` for the Jacobian), memory `O(m²D + (n + m)D)`: `K_zx` is never
/// formed, the data are streamed in parallel chunks whose statistics are merged in a fixed order
/// (bitwise identical results for any thread count). The same computation, chunk by chunk:
/// [`PseudolikelihoodPlan`].
///
/// Errors: empty `x` or `z`, dimension mismatch, `m < D`, invalid parameters (see
/// [`BkeParams::validate_for_dim`]), or `R_zz + (τ²/n)I` not positive definite even after the eigenvalue
/// fallback (practically impossible: its eigenvalues are `≥ τ²/n`).
pub fn marginal_pseudolikelihood<B: Backend>(
    x: &Points,
    z: &Points,
    params: &BkeParams,
) -> Result<MarginalLikelihood, CoreError> {
    validate_data_landmarks(x, z)?;
    params.validate_for_dim(x.dim())?;
    let plan = PseudolikelihoodPlan::new(z, params)?;
    plan.finish::<B>(&plan.partial(x)?)
}

/// Data chunks streamed through a [`PseudolikelihoodPlan`] (see [`PseudolikelihoodPlan::stream`]):
/// [`PseudolikelihoodStream::push`] each chunk, then [`PseudolikelihoodStream::finish`].
///
/// ```
/// use bke_core::embedding::{BkeParams, PseudolikelihoodPlan, marginal_pseudolikelihood};
/// use bke_core::Points;
/// use bke_linalg::DefaultBackend;
/// let x: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.37).sin() * 2.0).collect();
/// let z = Points::from_1d("z", &[-1.5, 0.0, 1.0]).unwrap();
/// let p = BkeParams::new(vec![0.8], 1.0);
/// let plan = PseudolikelihoodPlan::new(&z, &p).unwrap();
/// let mut stream = plan.stream();
/// for chunk in x.chunks(333) {
///     stream.push(&Points::from_1d("x", chunk).unwrap()).unwrap();
/// }
/// let streamed = stream.finish::<DefaultBackend>().unwrap();
/// let whole = marginal_pseudolikelihood::<DefaultBackend>(&Points::from_1d("x", &x).unwrap(), &z, &p).unwrap();
/// assert_eq!(streamed, whole); // bit for bit
/// ```
#[derive(Debug)]
pub struct PseudolikelihoodStream<'a> {
    plan: &'a PseudolikelihoodPlan,
    total: PartialStats,
    /// The points of an incomplete block (fewer than `BLOCK`), row-major.
    pending: Vec<f64>,
}

impl PseudolikelihoodStream<'_> {
    /// Adds the points `x` (the next rows of the data). Errors when their dimension is not the
    /// landmarks'.
    pub fn push(&mut self, x: &Points) -> Result<(), CoreError> {
        let dim = self.plan.dim();
        x.check_dim("landmarks", dim)?;
        let block = CHUNK * dim;
        let mut rest = x.as_slice();
        if !self.pending.is_empty() {
            let take = (block - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() < block {
                return Ok(());
            }
            let full = std::mem::take(&mut self.pending);
            self.plan.accumulate(&mut self.total, &full)?;
        }
        let whole = rest.len() / block * block;
        self.plan.accumulate(&mut self.total, &rest[..whole])?;
        self.pending.extend_from_slice(&rest[whole..]);
        Ok(())
    }

    /// Number of points pushed so far.
    pub fn len(&self) -> usize {
        self.total.n + self.pending.len() / self.plan.dim()
    }

    /// Whether no point was pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The statistics of every point pushed (the last, incomplete block included).
    pub fn stats(mut self) -> Result<PartialStats, CoreError> {
        let pending = std::mem::take(&mut self.pending);
        self.plan.accumulate(&mut self.total, &pending)?;
        Ok(self.total)
    }

    /// The objective and its gradient over every point pushed ([`PseudolikelihoodPlan::finish`]);
    /// errors as [`marginal_pseudolikelihood`] does on no data.
    pub fn finish<B: Backend>(self) -> Result<MarginalLikelihood, CoreError> {
        let plan = self.plan;
        if self.is_empty() {
            return Err(CoreError::Empty { what: "data (0 points)".into(), needed: 1 });
        }
        plan.finish::<B>(&self.stats()?)
    }
}

/// The `m × m` quantities: `A = R + (τ²/n) I`, `A⁻¹`, `log det A`.
struct DenseTerms {
    a_inv: Mat,
    logdet: f64,
}

impl DenseTerms {
    fn new<B: Backend>(r: &Mat, noise: f64) -> Result<Self, CoreError> {
        let m = r.nrows();
        let mut a = r.clone();
        for i in 0..m {
            a[(i, i)] += noise;
        }
        let (a_inv, logdet) = match B::cholesky(a.as_ref()) {
            Ok(l) => {
                let logdet = B::cholesky_logdet(l.as_ref());
                (B::cholesky_inverse(l.as_ref())?, logdet)
            }
            Err(LinalgError::NotPositiveDefinite { .. }) => {
                // R is PSD in exact arithmetic; rounding made an eigenvalue < −τ²/n. Clip at 0.
                let e = B::sym_eigen(r.as_ref())?;
                let lam: Vec<f64> = e.values.iter().map(|v| v.max(0.0) + noise).collect();
                let logdet = lam.iter().map(|v| v.ln()).sum();
                let inv = Mat::from_fn(m, m, |i, j| {
                    (0..m).map(|k| e.vectors[(i, k)] * e.vectors[(j, k)] / lam[k]).sum()
                });
                (inv, logdet)
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Self { a_inv, logdet })
    }
}

/// Eq. (33) and its gradient from the statistics and the dense terms (see the module docs).
fn combine(
    s: &PartialStats,
    dense: &DenseTerms,
    dr: &[Mat],
    params: &BkeParams,
    ls: &[f64],
) -> MarginalLikelihood {
    let (m, dim, gd) = (s.m, ls.len(), s.gd);
    let (nf, mf) = (s.n as f64, m as f64);
    let tau2 = params.tau2;
    let mu = &s.mean;
    let ss = s.m2.max(0.0);
    let a_inv = &dense.a_inv;
    let mut alpha = vec![0.0; m];
    for j in 0..m {
        let col = a_inv.col(j);
        for i in 0..m {
            alpha[i] += col[i] * mu[j];
        }
    }
    let quad: f64 = alpha.iter().zip(mu).map(|(a, b)| a * b).sum();
    let log_gaussian = -0.5
        * (dense.logdet + quad + ss / tau2 + mf * nf.ln() + mf * (nf - 1.0) * tau2.ln() + mf * nf * LN_2PI);
    let tr_ainv: f64 = (0..m).map(|i| a_inv[(i, i)]).sum();
    let alpha2: f64 = alpha.iter().map(|v| v * v).sum();
    let grad_log_tau2 = -0.5 * ((tau2 / nf) * (tr_ainv - alpha2) - ss / tau2 + mf * (nf - 1.0));

    let mut grad = vec![0.0; gd];
    for (g, drg) in dr.iter().enumerate() {
        let mut tr = 0.0;
        let mut a_dr_a = 0.0;
        for j in 0..m {
            let (cj, ai) = (drg.col(j), a_inv.col(j));
            let mut t = 0.0;
            for i in 0..m {
                tr += ai[i] * cj[i];
                t += cj[i] * alpha[i];
            }
            a_dr_a += t * alpha[j];
        }
        let a_dmu: f64 = alpha.iter().zip(&s.dmean[g * m..(g + 1) * m]).map(|(a, b)| a * b).sum();
        grad[g] = -0.5 * (tr + 2.0 * a_dmu - a_dr_a + s.dm2[g] / tau2);
    }
    let mut log_jacobian = 0.0;
    if params.jacobian {
        log_jacobian = s.log_volume - nf * ls.iter().map(|l| l.ln()).sum::<f64>();
        // ∂ log γ/∂ log θ_d = Σ_l p_l u_d² − 2, summed over d for one lengthscale.
        let per_point = if gd == 1 { 2.0 * dim as f64 } else { 2.0 };
        for (g, dv) in grad.iter_mut().zip(&s.dlog_volume) {
            *g += dv - per_point * nf;
        }
    }
    let log_marginal = log_gaussian + log_jacobian;
    if log_marginal == f64::NEG_INFINITY {
        grad.iter_mut().for_each(|g| *g = f64::NAN);
    }
    MarginalLikelihood { log_marginal, log_gaussian, log_jacobian, grad_log_lengthscale: grad, grad_log_tau2 }
}
