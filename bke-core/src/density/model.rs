//! The fitted kernel student-t density `log q_k(x) = −(1+N+α)/2 · log(γ + Q(x)) + log J(x)` (seed 003
//! eq. (3)–(6)), fitted once in O(N³), O(N²) per query, and its model file (kind `density`). See the
//! [module docs](super) for the formulas.

use super::bound::LowerBound;
use super::domain::Domain;
use super::niw::NiwParams;
use super::normalise::{self, BoundCheck, Normalisation, NormaliseOptions, Sample, Tail, TailWeight};
use super::tails::core_of;
use crate::estimator::LogDensity;
use crate::kernel::DensityKernel;
use crate::model_file::{ModelFile, Saved};
use crate::numeric::dot;
use crate::{CoreError, Kernel, KernelFamily, Points};
use bke_linalg::{Backend, LinalgError, Mat};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Queries per batched triangular solve.
const BATCH: usize = 256;

/// A fitted kernel student-t density: the kernel, the NIW hyperparameters, the training points,
/// and (once normalised, 1-D/2-D) the normaliser.
///
/// [`LogDensity`] gives `log p(x) = log q_k(x) + log w(x) − log Z` when normalised (`w = 1` on the
/// box, the tail weight beyond it; `−∞` outside the box only for a box-only normaliser read from an
/// older model file), else the unnormalised `log q_k(x)` (seed 003 eq. (6), constant Jacobians
/// omitted). The model
/// carries no backend: the factor of `σ₀² I + K` is computed by the backend of the fit, or of the
/// first query after loading a model file, and kept.
#[derive(Debug, Clone)]
pub struct KernelStudentT<K: DensityKernel = Kernel> {
    kernel: K,
    niw: NiwParams,
    x: Points,
    normalisation: Option<Normalisation>,
    cv_log_lik: Option<f64>,
    grid_notes: Vec<String>,
    factor: OnceLock<Factor>,
}

/// What every query needs, computed once from the training points.
#[derive(Debug, Clone)]
struct Factor {
    /// Lower Cholesky factor of `A = σ₀² I + K`.
    chol: Mat,
    /// `u = L⁻¹ 1`.
    u: Vec<f64>,
    /// `‖u‖² = 1ᵀA⁻¹1`.
    uu: f64,
    /// Row sums `s = K1`.
    row_sums: Vec<f64>,
    /// `T = 1ᵀK1`.
    total: f64,
}

impl Factor {
    fn new<K: DensityKernel, B: Backend>(kernel: &K, x: &Points, niw: &NiwParams) -> Result<Self, CoreError> {
        let n = x.len();
        let mut a = kernel_gram(kernel, x);
        let row_sums: Vec<f64> = (0..n).map(|j| a.col(j).iter().sum()).collect();
        let total = row_sums.iter().sum();
        for i in 0..n {
            a[(i, i)] += niw.sigma0_sq;
        }
        let chol = B::cholesky(a.as_ref()).map_err(|e| match e {
            LinalgError::NotPositiveDefinite { pivot } => CoreError::InvalidParameter {
                name: "sigma0_sq".into(),
                value: niw.sigma0_sq,
                reason: format!(
                    "σ₀² I + K is numerically not positive definite (pivot {pivot}); increase sigma0_sq"
                ),
            },
            e => CoreError::Linalg(e),
        })?;
        let mut u = vec![1.0; n];
        B::solve_lower_in_place(chol.as_ref(), bke_linalg::MatMut::col_vector(&mut u))?;
        let uu = dot(&u, &u);
        Ok(Self { chol, u, uu, row_sums, total })
    }
}

impl<K: DensityKernel> KernelStudentT<K> {
    /// The density of the points `x` (at least one) under the kernel `kernel` and fixed NIW
    /// hyperparameters: builds `K`, factors `σ₀² I + K` with `B` (the building block of
    /// [`super::KernelStudentTParams`], which also selects hyperparameters and normalises; use this
    /// for kernels of your own, e.g. [`super::Polynomial`]). Errors on invalid hyperparameters, a
    /// kernel that does not fit the dimension, or a factorisation failure (then increase `σ₀²`).
    pub fn with_kernel<B: Backend>(kernel: K, x: &Points, niw: NiwParams) -> Result<Self, CoreError> {
        x.check_len("density training data", 1)?;
        kernel.check_dim(x.dim())?;
        niw.validate_for_dim(x.dim())?;
        let factor = Factor::new::<K, B>(&kernel, x, &niw)?;
        Ok(Self {
            kernel,
            niw,
            x: x.clone(),
            normalisation: None,
            cv_log_lik: None,
            grid_notes: Vec::new(),
            factor: OnceLock::from(factor),
        })
    }

    fn factor<B: Backend>(&self) -> Result<&Factor, CoreError> {
        if let Some(f) = self.factor.get() {
            return Ok(f);
        }
        let f = Factor::new::<K, B>(&self.kernel, &self.x, &self.niw)?;
        Ok(self.factor.get_or_init(|| f))
    }

    /// The kernel.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// The NIW hyperparameters.
    pub fn niw(&self) -> NiwParams {
        self.niw
    }

    /// The training points.
    pub fn data(&self) -> &Points {
        &self.x
    }

    /// Input dimension `d`.
    pub fn dim(&self) -> usize {
        self.x.dim()
    }

    /// The normaliser, if the density is normalised.
    pub fn normalisation(&self) -> Option<&Normalisation> {
        self.normalisation.as_ref()
    }

    /// The mean held-out log-likelihood per point of the selected hyperparameters (None when every
    /// hyperparameter was fixed).
    pub fn cv_log_lik(&self) -> Option<f64> {
        self.cv_log_lik
    }

    pub(super) fn set_normalisation(&mut self, n: Option<Normalisation>) {
        self.normalisation = n;
    }

    /// The same density normalised on the whole space with the box `domain` (1-D or 2-D; see the
    /// `density::normalise` module docs for the rule, the tails and the accuracy check):
    /// [`crate::LogDensity`] then gives `log q_k(x) + log w(x) − log Z`, finite everywhere. Errors for
    /// `d > 2`, on invalid options, a domain of the wrong dimension, or (stationary kernels) when the
    /// quadrature cannot resolve the density within its node budget (the message says what to do).
    pub fn normalise<B: Backend>(
        mut self,
        domain: Domain,
        opts: &NormaliseOptions,
    ) -> Result<Self, CoreError> {
        if domain.dim() != self.dim() {
            return Err(CoreError::DimensionMismatch {
                what: "normalisation domain".into(),
                expected: self.dim(),
                found: domain.dim(),
            });
        }
        super::tails::check_dim(&domain)?;
        let (weight, check) = match self.kernel.stationary() {
            Some(k) => {
                let inside: Vec<usize> =
                    (0..self.x.len()).filter(|&i| domain.contains(self.x.point(i))).collect();
                let lq = self.log_unnormalised::<B>(&self.x.select(&inside))?;
                let n = self.x.len();
                let check = BoundCheck {
                    bound: LowerBound::new(k, &domain),
                    gamma: self.niw.gamma(n),
                    exponent: self.niw.exponent(n),
                    sigma0_sq: self.niw.sigma0_sq,
                    data_log_q_max: lq.into_iter().fold(f64::NEG_INFINITY, f64::max),
                };
                (TailWeight::Cauchy, Some(check))
            }
            None => (TailWeight::One, None),
        };
        let core = core_of(&self.x, &domain)?;
        let log_q = |q: &Points| self.log_unnormalised::<B>(q);
        let norm = normalise::normalise(&log_q, self.dim(), domain, core, opts, weight, check.as_ref())?;
        self.set_normalisation(Some(norm));
        Ok(self)
    }

    /// `n` draws from the normalised density (seeded; the result does not depend on the thread
    /// count). A panel of the normaliser's rule is chosen with probability equal to its quadrature
    /// mass (one pass of that rule), then a point in it by rejection (the `density::normalise` module
    /// docs). Errors unless the density is normalised.
    pub fn sample<B: Backend>(&self, n: usize, seed: u64) -> Result<Sample, CoreError> {
        let norm = self.normalisation().ok_or_else(|| CoreError::InvalidChoice {
            what: "sampling an unnormalised density".into(),
            reason: "normalise it on a box first (KernelStudentT::normalise, or normalise = true)".into(),
        })?;
        let log_q = |q: &Points| self.log_unnormalised::<B>(q);
        normalise::sample(&log_q, self.dim(), norm, n, seed)
    }

    /// How the selection widened its grids because the optimum sat at an edge, and the edges that
    /// still hold it ([`super::Selection::grid_notes`]; empty when nothing was selected or widened).
    pub fn grid_notes(&self) -> &[String] {
        &self.grid_notes
    }

    pub(super) fn set_selection(&mut self, cv: Option<f64>, grid_notes: Vec<String>) {
        self.cv_log_lik = cv;
        self.grid_notes = grid_notes;
    }

    /// `Q(x) = φ̃ᵀ Ψ_N⁻¹ φ̃` (seed 003 eq. (4)–(5)) at every query point, O(N²) each, batched and parallel.
    pub fn mahalanobis<B: Backend>(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        self.x.check_dim("query points", q.dim())?;
        let f = self.factor::<B>()?;
        let n = self.x.len();
        let nb = self.niw.beta + n as f64;
        let rho = self.niw.sigma0_sq / self.niw.beta;
        let mut out = vec![0.0; q.len()];
        out.par_chunks_mut(BATCH).enumerate().try_for_each(|(c, chunk)| -> Result<(), CoreError> {
            let start = c * BATCH;
            let m = chunk.len();
            let mut v = Mat::zeros(n, m);
            let mut ptp = vec![0.0; m];
            for j in 0..m {
                let xq = q.point(start + j);
                let col = v.col_mut(j);
                let mut sum = 0.0;
                for i in 0..n {
                    let k = self.kernel.eval(xq, self.x.point(i));
                    sum += k;
                    col[i] = k - f.row_sums[i] / nb;
                }
                ptp[j] = self.kernel.eval(xq, xq) - 2.0 * sum / nb + f.total / (nb * nb);
            }
            B::solve_lower_in_place(f.chol.as_ref(), v.as_mut())?;
            for j in 0..m {
                let w = v.col(j);
                let (ww, wu) = (dot(w, w), dot(w, &f.u));
                let quad = ww - rho * wu * wu / (1.0 + rho * f.uu);
                chunk[j] = ((ptp[j] - quad) / self.niw.sigma0_sq).max(0.0);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// `log q(ϕ(x))`, the restricted feature-space predictive (seed 003 eq. (4)) without the Jacobian:
    /// `−(1+N+α)/2 · log(γ + Q(x))`.
    pub fn log_restricted<B: Backend>(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        let n = self.x.len();
        let (g, e) = (self.niw.gamma(n), self.niw.exponent(n));
        Ok(self.mahalanobis::<B>(q)?.into_iter().map(|m| -e * (g + m).ln()).collect())
    }

    /// The unnormalised log density `log q_k(x)` of seed 003 eq. (6): [`Self::log_restricted`] plus
    /// `½ log det G(x)` where the kernel's Jacobian varies (omitted where it is constant).
    pub fn log_unnormalised<B: Backend>(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        let mut out = self.log_restricted::<B>(q)?;
        out.par_iter_mut().enumerate().for_each(|(i, v)| {
            if let Some(j) = self.kernel.log_jacobian(q.point(i)) {
                *v += j;
            }
        });
        Ok(out)
    }
}

impl<K: DensityKernel> LogDensity for KernelStudentT<K> {
    type Error = CoreError;

    /// `log q_k(x) + log w(x) − log Z` when normalised ([`Normalisation::log_offset`]); else
    /// `log q_k(x)`.
    fn log_density<B: Backend>(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        let lq = self.log_unnormalised::<B>(q)?;
        let Some(norm) = &self.normalisation else { return Ok(lq) };
        Ok(lq.into_iter().zip(q.iter()).map(|(v, p)| v + norm.log_offset(p)).collect())
    }
}

/// The Gram matrix `K[i, j] = k(x_i, x_j)` of any density kernel (parallel over columns).
fn kernel_gram<K: DensityKernel>(kernel: &K, x: &Points) -> Mat {
    let n = x.len();
    let mut k = Mat::zeros(n, n);
    if n > 0 {
        k.as_mut_slice().par_chunks_mut(n).enumerate().for_each(|(j, col)| {
            let y = x.point(j);
            for (i, v) in col.iter_mut().enumerate() {
                *v = kernel.eval(x.point(i), y);
            }
        });
    }
    k
}

/// A fitted density as JSON (`bke density fit`): what was fitted and how well it is normalised,
/// without the training points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DensitySummary {
    /// Number of training points.
    pub n: usize,
    /// Input dimension.
    pub dim: usize,
    /// The kernel family ([`KernelFamily::spec`]).
    pub kernel: String,
    /// The lengthscales.
    pub lengthscales: Vec<f64>,
    /// `α`.
    pub alpha: f64,
    /// `β`.
    pub beta: f64,
    /// `σ₀²`.
    pub sigma0_sq: f64,
    /// Mean held-out log-likelihood per point of the selection (None: all fixed).
    pub cv_log_lik: Option<f64>,
    /// How the selection's grids were widened, and edges still holding the optimum
    /// ([`KernelStudentT::grid_notes`]).
    pub grid_adjustments: Vec<String>,
    /// Whether the density is normalised.
    pub normalised: bool,
    /// `log Z`, the log normaliser of the density on the whole space (box and tails), when
    /// normalised.
    pub log_z: Option<f64>,
    /// Estimated relative error of `Z`, when normalised and the estimate is finite (`None`/`null`
    /// when the quadrature could not estimate it).
    pub normaliser_rel_err: Option<f64>,
    /// Whether the normaliser reached its tolerance within the node budget, when normalised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normaliser_converged: Option<bool>,
    /// `log Z_B`, the part of `log Z` on the box, when normalised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_z_box: Option<f64>,
    /// The rigorous lower bound on `log Z_B` the quadrature was checked against (stationary
    /// kernels), when normalised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_z_lower_bound: Option<f64>,
    /// The probability outside the box, `Z_T/Z`, when normalised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_mass: Option<f64>,
    /// How the density continues beyond the box (`cauchy`, `one`), when normalised with tails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_weight: Option<TailWeight>,
    /// The normalisation box, when normalised.
    pub domain: Option<Domain>,
}

impl KernelStudentT<Kernel> {
    /// The summary of the fit ([`DensitySummary`]).
    pub fn summary(&self) -> DensitySummary {
        let norm = self.normalisation.as_ref();
        DensitySummary {
            n: self.x.len(),
            dim: self.x.dim(),
            kernel: self.kernel.family().spec(),
            lengthscales: self.kernel.lengthscales().to_vec(),
            alpha: self.niw.alpha,
            beta: self.niw.beta,
            sigma0_sq: self.niw.sigma0_sq,
            cv_log_lik: self.cv_log_lik,
            grid_adjustments: self.grid_notes.clone(),
            normalised: norm.is_some(),
            log_z: norm.map(|n| n.log_z),
            normaliser_rel_err: norm.and_then(|n| n.rel_err.is_finite().then_some(n.rel_err)),
            normaliser_converged: norm.map(|n| n.converged),
            log_z_box: norm.map(Normalisation::log_z_box),
            log_z_lower_bound: norm.and_then(|n| n.log_z_lower_bound),
            tail_mass: norm.map(Normalisation::tail_mass),
            tail_weight: norm.and_then(|n| n.tail.map(|t| t.weight)),
            domain: norm.map(|n| n.domain.clone()),
        }
    }
}

/// The `model` of a density model file, in the layout bke 0.1 wrote (`"format": "bke-density-v1"`,
/// with `columns` beside these fields).
#[derive(Serialize, Deserialize)]
struct DensityFile {
    kernel: String,
    lengthscales: Vec<f64>,
    alpha: f64,
    beta: f64,
    sigma0_sq: f64,
    data: Vec<Vec<f64>>,
    normalisation: Option<NormFile>,
    cv_log_lik: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    grid_adjustments: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct NormFile {
    lower: Vec<f64>,
    upper: Vec<f64>,
    log_z: f64,
    /// `null` for an infinite estimate (JSON has no ∞).
    rel_err: Option<f64>,
    converged: bool,
    panels: usize,
    #[serde(default = "default_order")]
    order: usize,
    evaluations: usize,
    /// The tails (absent in files written before them: a box-only density).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tail: Option<TailFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_z_lower_bound: Option<f64>,
    /// The core of a graded box rule (absent: uniform).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    core: Option<Domain>,
    /// Panels on the core of the first rule (absent: `panels`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base_panels: Option<usize>,
}

#[derive(Serialize, Deserialize)]
struct TailFile {
    weight: TailWeight,
    panels: usize,
    log_z: f64,
}

fn default_order() -> usize {
    8
}

/// The format of the density model files of bke 0.1.
const LEGACY_FORMAT: &str = "bke-density-v1";

impl From<&KernelStudentT<Kernel>> for DensityFile {
    fn from(m: &KernelStudentT<Kernel>) -> Self {
        DensityFile {
            kernel: m.kernel.family().spec(),
            lengthscales: m.kernel.lengthscales().to_vec(),
            alpha: m.niw.alpha,
            beta: m.niw.beta,
            sigma0_sq: m.niw.sigma0_sq,
            data: m.x.iter().map(<[f64]>::to_vec).collect(),
            normalisation: m.normalisation.as_ref().map(|n| NormFile {
                lower: n.domain.lower.clone(),
                upper: n.domain.upper.clone(),
                log_z: n.log_z,
                rel_err: n.rel_err.is_finite().then_some(n.rel_err),
                converged: n.converged,
                panels: n.panels,
                order: n.order,
                evaluations: n.evaluations,
                tail: n.tail.map(|t| TailFile { weight: t.weight, panels: t.panels, log_z: t.log_z }),
                log_z_lower_bound: n.log_z_lower_bound,
                core: n.core.clone(),
                base_panels: Some(n.base_panels),
            }),
            cv_log_lik: m.cv_log_lik,
            grid_adjustments: m.grid_notes.clone(),
        }
    }
}

impl TryFrom<DensityFile> for KernelStudentT<Kernel> {
    type Error = CoreError;
    fn try_from(f: DensityFile) -> Result<Self, CoreError> {
        let family: KernelFamily = f.kernel.parse()?;
        let model = KernelStudentT {
            kernel: Kernel::new(family, f.lengthscales)?,
            niw: NiwParams { alpha: f.alpha, beta: f.beta, sigma0_sq: f.sigma0_sq },
            x: Points::from_rows("model training data", &f.data)?,
            normalisation: match f.normalisation {
                Some(n) => Some(Normalisation {
                    domain: Domain::new(n.lower, n.upper)?,
                    log_z: n.log_z,
                    rel_err: n.rel_err.unwrap_or(f64::INFINITY),
                    converged: n.converged,
                    panels: n.panels,
                    order: n.order,
                    evaluations: n.evaluations,
                    tail: n.tail.map(|t| Tail { weight: t.weight, panels: t.panels, log_z: t.log_z }),
                    log_z_lower_bound: n.log_z_lower_bound,
                    base_panels: n.base_panels.unwrap_or(n.panels),
                    core: n.core,
                }),
                None => None,
            },
            cv_log_lik: f.cv_log_lik,
            grid_notes: f.grid_adjustments,
            factor: OnceLock::new(),
        };
        model.validate()?;
        Ok(model)
    }
}

impl KernelStudentT<Kernel> {
    /// Bounds on `log Z` for a stationary kernel (`0 ≤ k ≤ k(x, x) = 1`): `Ψ_N ⪰ σ₀² I` and
    /// `φ̃ᵀφ̃ ≤ 1 + N²/(N+β)² ≤ 2` give `0 ≤ Q ≤ 2/σ₀²`, so `log q_k` lies between
    /// `−e log(γ + 2/σ₀²)` and `−e log γ` (`e = (1+N+α)/2`), and `log Z` between those plus
    /// `log ∫ w = log vol(B) + d log(1 + π)` (Cauchy tails of the box's width; `log vol(B)` for a
    /// box-only normaliser).
    fn log_z_bounds(&self, norm: &Normalisation) -> (f64, f64) {
        let n = self.x.len();
        let d = self.x.dim() as f64;
        let tails = if norm.tail.is_some() { d * std::f64::consts::PI.ln_1p() } else { 0.0 };
        let log_vol = norm.domain.log_volume() + tails;
        let (g, e) = (self.niw.gamma(n), self.niw.exponent(n));
        (log_vol - e * (g + 2.0 / self.niw.sigma0_sq).ln(), log_vol - e * g.ln())
    }
}

impl Serialize for KernelStudentT<Kernel> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DensityFile::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for KernelStudentT<Kernel> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DensityFile::deserialize(d)?.try_into().map_err(serde::de::Error::custom)
    }
}

/// Model files of kind `density`: the kernel (family and lengthscales), `alpha`, `beta`,
/// `sigma0_sq`, the training points `data` (rows), the `normalisation` (box `lower`/`upper`,
/// `log_z`, `rel_err`, `converged`, `panels`, `order`, `evaluations`, the `tail` (`weight`,
/// `panels`, `log_z`; absent in files written before the tails, whose density is then 0 outside the
/// box), `log_z_lower_bound`, the `core` of a graded rule (`lower`/`upper`) and its
/// `base_panels`, or `null`) and `cv_log_lik`. The factor is recomputed on the first query
/// (O(N³)). Version 2 added the tails: `log_z` is the whole-space normaliser, which a reader of
/// version 1 would misread, so older bke refuses these files; version-1 files load as box-only
/// densities. Files of bke 0.1 (`"format": "bke-density-v1"`, the same fields beside `columns`)
/// still load.
impl ModelFile for KernelStudentT<Kernel> {
    const KINDS: &'static [&'static str] = &["density"];
    const VERSION: u32 = 2;

    fn kind(&self) -> &'static str {
        "density"
    }

    fn validate(&self) -> Result<(), CoreError> {
        self.x.check_len("model training data", 1)?;
        self.kernel.check_dim(self.x.dim())?;
        self.niw.validate_for_dim(self.x.dim())?;
        if let Some(n) = &self.normalisation {
            n.validate(self.x.dim())?;
            let (lo, hi) = self.log_z_bounds(n);
            let slack = 1.0 + 1e-6 * lo.abs().max(hi.abs());
            if !(n.log_z >= lo - slack && n.log_z <= hi + slack) {
                return Err(CoreError::InvalidParameter {
                    name: "normalisation.log_z".into(),
                    value: n.log_z,
                    reason: format!(
                        "inconsistent with the model: with these data, α, β, σ₀² and box, log Z lies in \
                         [{lo:.6e}, {hi:.6e}]; the file is corrupt: refit the model"
                    ),
                });
            }
            if let Some(t) = n.tail.filter(|t| !(t.log_z < n.log_z)) {
                return Err(CoreError::InvalidParameter {
                    name: "normalisation.tail.log_z".into(),
                    value: t.log_z,
                    reason: format!(
                        "the tail's part of the normaliser must be below the whole, log Z = {}; the file is \
                         corrupt: refit the model",
                        n.log_z
                    ),
                });
            }
            if let Some(t) = n.tail.filter(|t| t.weight != TailWeight::Cauchy) {
                return Err(CoreError::InvalidChoice {
                    what: format!("normalisation.tail.weight {:?}", t.weight),
                    reason: "the density of a stationary kernel continues with the Cauchy tail weight; the \
                             file is corrupt: refit the model"
                        .into(),
                });
            }
            if let Some(lb) = n.log_z_lower_bound.filter(|lb| !(n.log_z_box() >= lb - 1e-9 * lb.abs())) {
                return Err(CoreError::InvalidParameter {
                    name: "normalisation.log_z".into(),
                    value: n.log_z,
                    reason: format!(
                        "its box part {:.6e} is below the file's own lower bound log_z_lower_bound = \
                         {lb:.6e}; the file is corrupt: refit the model",
                        n.log_z_box()
                    ),
                });
            }
        }
        if let Some(cv) = self.cv_log_lik {
            if cv.is_nan() {
                return Err(CoreError::NonFinite { what: "cv_log_lik".into(), row: 0, col: 0, value: cv });
            }
        }
        Ok(())
    }

    fn from_legacy(file: &serde_json::Value) -> Option<Result<Saved<Self>, String>> {
        if file.get("format")?.as_str()? != LEGACY_FORMAT {
            return None;
        }
        let columns: Vec<String> = match file.get("columns") {
            Some(c) => match serde_json::from_value(c.clone()) {
                Ok(c) => c,
                Err(e) => return Some(Err(format!("malformed columns of a {LEGACY_FORMAT} file: {e}"))),
            },
            None => Vec::new(),
        };
        Some(
            serde_json::from_value::<KernelStudentT<Kernel>>(file.clone())
                .map(|model| Saved { columns, target: None, model })
                .map_err(|e| format!("malformed {LEGACY_FORMAT} model: {e}")),
        )
    }
}
