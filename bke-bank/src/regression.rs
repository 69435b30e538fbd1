//! The regression state of BaNK and its `O(M²N)` Metropolis–Hastings sweep over the frequencies
//! (seed 001 §3.3.1, seed 001 eq. (11), (12)).
//!
//! For each `j` a proposal `W_j* ~ N(μ_{Z_j}, Σ_{Z_j})` (the prior, so the acceptance ratio is the
//! evidence ratio, seed 001 eq. (12)) changes columns `c = j` and `s = M + j` of `Φ`, hence rows/columns `c, s`
//! of `Λ_n = ΦᵀΦ + λ₀I`. The sweep never refactorises (`O(M³)`) nor rebuilds `ΦᵀΦ` (`O(NM²)`) per
//! proposal:
//!
//! 1. **Gram rows in bulk.** Proposals are drawn up front (the proposal distribution does not depend on
//!    the other frequencies, so this is the paper's chain exactly). For a block of `P` proposals the new
//!    feature columns `Φ_new` (`N × 2P`) are formed and `Φᵀ Φ_new`, `Φ_newᵀ Φ_new`, `Φ_newᵀ y` are
//!    computed by matrix products (compute-bound). An earlier accepted proposal of the same block
//!    changed two columns of `Φ`; its entries are taken from `Φ_newᵀΦ_new` instead. `ΦᵀΦ` and `Φᵀy`
//!    are kept explicitly and patched on acceptance (`O(M)`), so they never drift.
//! 2. **Evaluation in `O(M²)`** by the matrix determinant lemma and Woodbury: with `u_c`, `u_s` the
//!    changes of columns `c, s` of `Λ_n` (diagonal entries halved, the shared entry counted once),
//!    `Λ_n' = Λ_n + U C Uᵀ`, `U = [u_c, u_s, e_c, e_s]`, `C = [[0, I₂], [I₂, 0]]`. With `P = L⁻¹U` and
//!    `z' = L⁻¹b'` (one forward substitution with five right-hand sides, reading `L` once),
//!    `K = C + PᵀP`: `log|Λ_n'| = log|Λ_n| + log det K` (`det C = 1`) and
//!    `b'ᵀΛ_n'⁻¹b' = ‖z'‖² − (Pᵀz')ᵀ K⁻¹ (Pᵀz')`.
//! 3. **Factor update on acceptance only**, `O(M²)`: `u eᵀ + e uᵀ = ppᵀ − qqᵀ` with
//!    `p, q = (u/σ ± σe)/√2`, `σ = ‖u‖^{1/2}` (balanced), so the new factor is a rank-2 update
//!    (`B::cholesky_update`) followed by a rank-2 downdate (`B::cholesky_downdate`).
//! 4. **Drift control**: [`RegressionState::refactorise`] rebuilds the factor from the exact `ΦᵀΦ`
//!    (`O(M³)`, negligible beside the sweep's `O(NM²)`) and records how far the updated factor and
//!    log evidence had drifted.
//!
//! [`RegressionState::sweep_refactorising`] is the reference: it rebuilds and refactorises `Λ_n` for
//! every proposal, from the same proposals and uniforms, so both give the same chain.
//!
//! **The prior precision** `λ₀` (an extension of the seed, which fixes it) is resampled once a sweep
//! by [`RegressionState::resample_prior_precision`]: a slice-sampling update ([`crate::slice`]) of
//! `log λ₀` under `p(y | W, λ₀) p(log λ₀)`. One symmetric eigendecomposition of the smaller Gram
//! matrix makes every evaluation `O(min(N, 2M))` ([`EvidenceSpectrum`]): with `ΦᵀΦ = V diag(e) Vᵀ`,
//! `log|ΦᵀΦ + λI| = Σ log(e_i + λ)` and `(Φᵀy)ᵀ(ΦᵀΦ + λI)⁻¹Φᵀy = Σ (Vᵀ Φᵀy)_i²/(e_i + λ)`; when
//! `N < 2M` the dual `ΦΦᵀ = U diag(e) Uᵀ` (`N × N`) gives `Σ log(e_i + λ) + (2M − N) log λ` and
//! `Σ e_i (Uᵀy)_i²/(e_i + λ)` (push-through identity). Cost `O(min(N, 2M)³)` a sweep, the order of
//! the refactorisation the sweep already pays; the factor is then rebuilt at the new `λ₀`.

use crate::error::{BankError, mismatch};
use crate::evidence::{LogNormalPrior, NigParams, log_evidence_dense};
use crate::features::{feature_matrix, fill_features};
use crate::small;
use bke_linalg::{Backend, Mat, MatRef, Trans};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;

/// Counters of the frequency sweeps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepStats {
    /// Proposals evaluated.
    pub proposals: usize,
    /// Proposals accepted.
    pub accepted: usize,
    /// Periodic refactorisations done.
    pub refactorisations: usize,
    /// Times the low-rank path fell back to a dense factorisation (indefinite Woodbury system or a
    /// failed downdate; should stay 0).
    pub fallbacks: usize,
    /// Largest relative drift `max|L_updated − L_refactorised| / max|L|` seen at a refactorisation.
    pub max_factor_drift: f64,
    /// Largest absolute drift of the log evidence seen at a refactorisation.
    pub max_evidence_drift: f64,
    /// Classification: joint weight moves accepted (one proposed per sweep).
    #[serde(default)]
    pub weight_moves_accepted: usize,
    /// Classification: negative Hessians `Φ̃ᵀDΦ̃` formed by the joint weight moves (one symmetric
    /// `O(N(2M)²)` product each).
    #[serde(default)]
    pub weight_hessians: usize,
    /// Classification: points the joint weight moves' mode searches evaluated (one `O(N 2M)` pass
    /// over the features each).
    #[serde(default)]
    pub weight_evaluations: usize,
}

/// The eigenvalues of `ΦᵀΦ` (or of `ΦΦᵀ` when `N < 2M`, `dual`) and the weights that make the
/// evidence a cheap function of `λ` ([`RegressionState::evidence_spectrum`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EvidenceSpectrum {
    /// Eigenvalues.
    pub values: Vec<f64>,
    /// `(Vᵀ Φᵀy)_i²` (primal) or `e_i (Uᵀy)_i²` (dual).
    pub weights: Vec<f64>,
    /// Whether the spectrum is of the `N × N` matrix `ΦΦᵀ`.
    pub dual: bool,
    /// The number of features `2M`.
    pub features: usize,
}

/// The regression state: inputs, targets, frequencies, `Φ`, `ΦᵀΦ`, `Φᵀy` and the factor of `Λ_n`.
#[derive(Debug, Clone)]
pub struct RegressionState<B: Backend> {
    x: Mat,
    y: Vec<f64>,
    m: usize,
    d: usize,
    w: Vec<f64>,
    phi: Mat,
    /// Scratch for a block of proposals' features (`N × 2P`), kept across sweeps: a matrix this size
    /// is larger than the allocator keeps, so a fresh one per sweep is mapped and page-faulted anew.
    proposed: Mat,
    gram: Mat,
    phity: Vec<f64>,
    yty: f64,
    chol: Mat,
    logdet: f64,
    quad: f64,
    nig: NigParams,
    /// Sweep counters.
    pub stats: SweepStats,
    _backend: PhantomData<B>,
}

impl<B: Backend> RegressionState<B> {
    /// The state for inputs `x` (`N × d`, column-major, already scaled as the caller wants), targets
    /// `y` and initial frequencies `w` (row-major `M × d`). `O(NM² + M³)`.
    pub fn new(x: Mat, y: Vec<f64>, w: Vec<f64>, nig: NigParams) -> Result<Self, BankError> {
        nig.check()?;
        let (n, d) = (x.nrows(), x.ncols());
        if y.len() != n {
            return Err(mismatch("targets", n, y.len()));
        }
        if d == 0 || w.is_empty() || w.len() % d != 0 {
            return Err(mismatch("frequencies (values)", d.max(1) * (w.len() / d.max(1)).max(1), w.len()));
        }
        crate::error::check_targets(&y)?;
        let m = w.len() / d;
        let phi = feature_matrix(&x, &w);
        let yty = y.iter().map(|v| v * v).sum();
        let mut s = Self {
            x,
            y,
            m,
            d,
            w,
            proposed: Mat::zeros(0, 0),
            gram: Mat::zeros(0, 0),
            phity: vec![0.0; 2 * m],
            phi,
            yty,
            chol: Mat::zeros(0, 0),
            logdet: 0.0,
            quad: 0.0,
            nig,
            stats: SweepStats::default(),
            _backend: PhantomData,
        };
        s.rebuild()?;
        Ok(s)
    }

    /// Recomputes `ΦᵀΦ`, `Φᵀy` and the factor from `Φ`.
    fn rebuild(&mut self) -> Result<(), BankError> {
        self.gram = B::gram(self.phi.as_ref());
        B::gemv(1.0, self.phi.as_ref(), Trans::Yes, &self.y, 0.0, &mut self.phity)?;
        self.factor_from_gram()
    }

    fn factor_from_gram(&mut self) -> Result<(), BankError> {
        let f = 2 * self.m;
        let mut lam = self.gram.clone();
        for i in 0..f {
            lam[(i, i)] += self.nig.prior_precision;
        }
        self.chol = B::cholesky(lam.as_ref())?;
        self.refresh_scalars()
    }

    /// `log|Λ_n|` and `‖L⁻¹Φᵀy‖²` from the current factor.
    fn refresh_scalars(&mut self) -> Result<(), BankError> {
        self.logdet = B::cholesky_logdet(self.chol.as_ref());
        let mut z = self.phity.clone();
        B::solve_lower_in_place(self.chol.as_ref(), bke_linalg::MatMut::col_vector(&mut z))?;
        self.quad = z.iter().map(|v| v * v).sum();
        Ok(())
    }

    /// Replaces the targets (same length), recomputing `Φᵀy`, `yᵀy` and `‖L⁻¹Φᵀy‖²` in `O(NM + M²)`.
    pub fn set_targets(&mut self, y: Vec<f64>) -> Result<(), BankError> {
        if y.len() != self.y.len() {
            return Err(mismatch("targets", self.y.len(), y.len()));
        }
        crate::error::check_targets(&y)?;
        self.y = y;
        self.yty = self.y.iter().map(|v| v * v).sum();
        B::gemv(1.0, self.phi.as_ref(), Trans::Yes, &self.y, 0.0, &mut self.phity)?;
        self.refresh_scalars()
    }

    /// The targets.
    pub fn targets(&self) -> &[f64] {
        &self.y
    }

    /// Number of frequencies `M`.
    pub fn frequencies(&self) -> usize {
        self.m
    }

    /// Dimension `d`.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Number of data points `N`.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are no data points (never true for a constructed state).
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The frequencies, row-major `M × d`.
    pub fn w(&self) -> &[f64] {
        &self.w
    }

    /// The feature matrix `Φ`.
    pub fn phi(&self) -> MatRef<'_> {
        self.phi.as_ref()
    }

    /// The lower Cholesky factor of `Λ_n`.
    pub fn factor(&self) -> MatRef<'_> {
        self.chol.as_ref()
    }

    /// The evidence hyperparameters.
    pub fn nig(&self) -> &NigParams {
        &self.nig
    }

    /// The current log evidence `log p(y | X, W)` (seed 001 eq. (11)) from the maintained factor.
    pub fn log_evidence(&self) -> f64 {
        self.nig.log_evidence(self.y.len(), 2 * self.m, self.logdet, self.yty, self.quad)
    }

    /// The log evidence `log p(y | X, W, λ)` at another prior precision `λ` (one Cholesky
    /// factorisation of `ΦᵀΦ + λI`); `−∞` where rounding makes that matrix indefinite.
    pub fn log_evidence_at(&self, lambda: f64) -> Result<f64, BankError> {
        let f = 2 * self.m;
        let mut lam = self.gram.clone();
        for i in 0..f {
            lam[(i, i)] += lambda;
        }
        let Ok(l) = B::cholesky(lam.as_ref()) else { return Ok(f64::NEG_INFINITY) };
        let mut z = self.phity.clone();
        B::solve_lower_in_place(l.as_ref(), bke_linalg::MatMut::col_vector(&mut z))?;
        let quad = z.iter().map(|v| v * v).sum();
        let nig = NigParams { prior_precision: lambda, ..self.nig };
        Ok(nig.log_evidence(self.y.len(), f, B::cholesky_logdet(l.as_ref()), self.yty, quad))
    }

    /// The spectrum that makes the evidence an `O(min(N, 2M))` function of `λ` (module docs).
    pub fn evidence_spectrum(&self) -> Result<EvidenceSpectrum, BankError> {
        let (n, f) = (self.y.len(), 2 * self.m);
        if f <= n {
            let eig = B::sym_eigen(self.gram.as_ref())?;
            let mut proj = vec![0.0; f];
            B::gemv(1.0, eig.vectors.as_ref(), Trans::Yes, &self.phity, 0.0, &mut proj)?;
            let weights = proj.iter().map(|p| p * p).collect();
            Ok(EvidenceSpectrum { values: eig.values, weights, dual: false, features: f })
        } else {
            let mut g = Mat::zeros(n, n);
            B::gemm(1.0, self.phi.as_ref(), Trans::No, self.phi.as_ref(), Trans::Yes, 0.0, g.as_mut())?;
            let eig = B::sym_eigen(g.as_ref())?;
            let mut proj = vec![0.0; n];
            B::gemv(1.0, eig.vectors.as_ref(), Trans::Yes, &self.y, 0.0, &mut proj)?;
            let weights = proj.iter().zip(&eig.values).map(|(p, e)| e.max(0.0) * p * p).collect();
            Ok(EvidenceSpectrum { values: eig.values, weights, dual: true, features: f })
        }
    }

    /// The log evidence at prior precision `λ` from a spectrum of this state's `Φ`.
    pub fn log_evidence_with(&self, spec: &EvidenceSpectrum, lambda: f64) -> f64 {
        let mut logdet: f64 = spec.values.iter().map(|e| (e.max(0.0) + lambda).ln()).sum();
        if spec.dual {
            logdet += (spec.features - spec.values.len()) as f64 * lambda.ln();
        }
        let quad: f64 = spec.values.iter().zip(&spec.weights).map(|(e, w)| w / (e.max(0.0) + lambda)).sum();
        let nig = NigParams { prior_precision: lambda, ..self.nig };
        nig.log_evidence(self.y.len(), spec.features, logdet, self.yty, quad)
    }

    /// Sets the prior precision `λ₀` and refactorises `Λ_n` (`O(M³)`).
    pub fn set_prior_precision(&mut self, lambda: f64) -> Result<(), BankError> {
        crate::error::check_positive("prior precision", lambda)?;
        self.nig.prior_precision = lambda;
        self.factor_from_gram()
    }

    /// One slice-sampling update of `log λ₀` under `p(y | W, λ₀) · prior(log λ₀)` (module docs);
    /// returns the new `λ₀`. Uses the exact `ΦᵀΦ`, so it also refactorises `Λ_n`.
    pub fn resample_prior_precision<R: Rng>(
        &mut self,
        prior: &LogNormalPrior,
        rng: &mut R,
    ) -> Result<f64, BankError> {
        let u0 = self.nig.prior_precision.ln();
        let spec = self.evidence_spectrum()?;
        let target = |u: f64| -> Result<f64, BankError> {
            if !u.is_finite() || u.abs() > 700.0 {
                return Ok(f64::NEG_INFINITY);
            }
            Ok(self.log_evidence_with(&spec, u.exp()) + prior.log_density(u))
        };
        let f0 = target(u0)?;
        let (u, _) = crate::slice::slice_step(u0, f0, target, 1.0, 8, rng)?;
        self.set_prior_precision(u.exp())?;
        Ok(u.exp())
    }

    /// The posterior of the weights and noise given `W`: `(μ_n, a_n, b_n)`.
    pub fn posterior(&self) -> Result<(Vec<f64>, f64, f64), BankError> {
        let mut mu = self.phity.clone();
        B::cholesky_solve_vec_in_place(self.chol.as_ref(), &mut mu)?;
        let (an, bn) = self.nig.posterior_ig(self.y.len(), self.yty, self.quad);
        Ok((mu, an, bn))
    }

    /// Rebuilds the factor from the exact `ΦᵀΦ` and records the drift of the updated factor and of the
    /// log evidence. Returns `(factor drift, evidence drift)`.
    pub fn refactorise(&mut self) -> Result<(f64, f64), BankError> {
        let old = self.chol.clone();
        let old_ev = self.log_evidence();
        self.factor_from_gram()?;
        let scale = self.chol.as_slice().iter().fold(0.0f64, |a, v| a.max(v.abs())).max(f64::MIN_POSITIVE);
        let drift =
            old.as_slice().iter().zip(self.chol.as_slice()).fold(0.0f64, |a, (x, y)| a.max((x - y).abs()))
                / scale;
        let ev_drift = (old_ev - self.log_evidence()).abs();
        self.stats.refactorisations += 1;
        self.stats.max_factor_drift = self.stats.max_factor_drift.max(drift);
        self.stats.max_evidence_drift = self.stats.max_evidence_drift.max(ev_drift);
        Ok((drift, ev_drift))
    }

    fn check_proposals(&self, proposals: &[f64], log_u: &[f64]) -> Result<(), BankError> {
        if proposals.len() != self.m * self.d {
            return Err(mismatch("proposals (values)", self.m * self.d, proposals.len()));
        }
        if log_u.len() != self.m {
            return Err(mismatch("log uniforms", self.m, log_u.len()));
        }
        Ok(())
    }

    /// One MH sweep over `j = 0..M` with proposals `proposals` (row-major `M × d`) and acceptance
    /// thresholds `log_u` (`log` of uniforms): proposal `j` is accepted iff
    /// `log_u[j] < log p(y | W_j*, W_−j) − log p(y | W)`. Gram rows are computed `block` proposals at a
    /// time. Returns the number accepted. See the module docs for the algebra.
    pub fn sweep(&mut self, proposals: &[f64], log_u: &[f64], block: usize) -> Result<usize, BankError> {
        self.check_proposals(proposals, log_u)?;
        let (n, m, d) = (self.y.len(), self.m, self.d);
        let f = 2 * m;
        let block = block.clamp(1, m);
        let mut accepted_total = 0;
        let mut phinew = std::mem::take(&mut self.proposed);
        if (phinew.nrows(), phinew.ncols()) != (n, 2 * block) {
            phinew = Mat::zeros(n, 2 * block);
        }
        let mut h = Mat::zeros(f, 2 * block);
        let mut h2 = Mat::zeros(2 * block, 2 * block);
        let mut hy = vec![0.0; 2 * block];
        let mut gc = vec![0.0; f];
        let mut gs = vec![0.0; f];
        let mut rhs = Mat::zeros(f, 5);
        for start in (0..m).step_by(block) {
            let p = block.min(m - start);
            if phinew.ncols() != 2 * p {
                phinew = Mat::zeros(n, 2 * p);
                h = Mat::zeros(f, 2 * p);
                h2 = Mat::zeros(2 * p, 2 * p);
                hy = vec![0.0; 2 * p];
            }
            fill_features(&self.x, &proposals[start * d..(start + p) * d], m, &mut phinew);
            B::gemm(1.0, self.phi.as_ref(), Trans::Yes, phinew.as_ref(), Trans::No, 0.0, h.as_mut())?;
            B::gemm(1.0, phinew.as_ref(), Trans::Yes, phinew.as_ref(), Trans::No, 0.0, h2.as_mut())?;
            B::gemv(1.0, phinew.as_ref(), Trans::Yes, &self.y, 0.0, &mut hy)?;
            let mut acc_block = vec![false; p];
            for i in 0..p {
                let j = start + i;
                let (c, s) = (j, m + j);
                let (ci, si) = (i, p + i);
                gc.copy_from_slice(h.col(ci));
                gs.copy_from_slice(h.col(si));
                for (i2, &a) in acc_block[..i].iter().enumerate() {
                    if a {
                        let (c2, s2) = (start + i2, m + start + i2);
                        gc[c2] = h2[(i2, ci)];
                        gc[s2] = h2[(p + i2, ci)];
                        gs[c2] = h2[(i2, si)];
                        gs[s2] = h2[(p + i2, si)];
                    }
                }
                gc[c] = h2[(ci, ci)];
                gc[s] = h2[(si, ci)];
                gs[c] = h2[(ci, si)];
                gs[s] = h2[(si, si)];
                // u_c, u_s: changes of columns c, s of Λ_n, diagonal halved, shared entry once.
                for k in 0..f {
                    gc[k] -= self.gram[(k, c)];
                    gs[k] -= self.gram[(k, s)];
                }
                gc[c] *= 0.5;
                gs[s] *= 0.5;
                gs[c] = 0.0;
                let (bc, bs) = (hy[ci], hy[si]);
                let new_ev = self.proposal_evidence(&gc, &gs, c, s, bc, bs, &mut rhs)?;
                self.stats.proposals += 1;
                if log_u[j] < new_ev - self.log_evidence() {
                    self.accept(j, &proposals[j * d..(j + 1) * d], &phinew, ci, si, &gc, &gs, bc, bs)?;
                    acc_block[i] = true;
                    accepted_total += 1;
                    self.stats.accepted += 1;
                }
            }
        }
        self.proposed = phinew;
        Ok(accepted_total)
    }

    /// The log evidence after changing columns `c, s` of `Λ_n` by `u_c, u_s` and `Φᵀy` entries to
    /// `bc, bs`, by the determinant lemma and Woodbury (module docs, step 2).
    #[allow(clippy::too_many_arguments)]
    fn proposal_evidence(
        &mut self,
        uc: &[f64],
        us: &[f64],
        c: usize,
        s: usize,
        bc: f64,
        bs: f64,
        rhs: &mut Mat,
    ) -> Result<f64, BankError> {
        let f = 2 * self.m;
        rhs.col_mut(0).copy_from_slice(uc);
        rhs.col_mut(1).copy_from_slice(us);
        rhs.col_mut(2).fill(0.0);
        rhs.col_mut(2)[c] = 1.0;
        rhs.col_mut(3).fill(0.0);
        rhs.col_mut(3)[s] = 1.0;
        rhs.col_mut(4).copy_from_slice(&self.phity);
        rhs.col_mut(4)[c] = bc;
        rhs.col_mut(4)[s] = bs;
        solve_lower_few(self.chol.as_ref(), rhs);
        let mut k = [0.0; 16];
        let mut r = [0.0; 4];
        for a in 0..4 {
            for b in 0..=a {
                let v: f64 = rhs.col(a).iter().zip(rhs.col(b)).map(|(x, y)| x * y).sum();
                k[a * 4 + b] = v;
                k[b * 4 + a] = v;
            }
            r[a] = rhs.col(a).iter().zip(rhs.col(4)).map(|(x, y)| x * y).sum();
        }
        for a in 0..2 {
            k[a * 4 + a + 2] += 1.0;
            k[(a + 2) * 4 + a] += 1.0;
        }
        let zz: f64 = rhs.col(4).iter().map(|v| v * v).sum();
        let r0 = r;
        match small::lu_solve_logdet(&mut k, 4, &mut r) {
            Some((ld, sign)) if sign > 0.0 => {
                let quad = zz - r0.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>();
                let logdet = self.logdet + ld;
                Ok(self.nig.log_evidence(self.y.len(), f, logdet, self.yty, quad))
            }
            _ => {
                // Rounding defeated the 4 × 4 system: evaluate this proposal densely from ΦᵀΦ.
                self.stats.fallbacks += 1;
                let mut lam = self.gram.clone();
                for kk in 0..f {
                    lam[(kk, c)] += uc[kk];
                    lam[(c, kk)] += uc[kk];
                    lam[(kk, s)] += us[kk];
                    lam[(s, kk)] += us[kk];
                    lam[(kk, kk)] += self.nig.prior_precision;
                }
                let l = B::cholesky(lam.as_ref())?;
                let mut z = self.phity.clone();
                z[c] = bc;
                z[s] = bs;
                B::solve_lower_in_place(l.as_ref(), bke_linalg::MatMut::col_vector(&mut z))?;
                let quad = z.iter().map(|v| v * v).sum();
                Ok(self.nig.log_evidence(self.y.len(), f, B::cholesky_logdet(l.as_ref()), self.yty, quad))
            }
        }
    }

    /// Applies an accepted proposal: frequencies, `Φ` columns, `ΦᵀΦ`, `Φᵀy` and the factor (rank-2
    /// update + rank-2 downdate).
    #[allow(clippy::too_many_arguments)]
    fn accept(
        &mut self,
        j: usize,
        wj: &[f64],
        phinew: &Mat,
        ci: usize,
        si: usize,
        uc: &[f64],
        us: &[f64],
        bc: f64,
        bs: f64,
    ) -> Result<(), BankError> {
        let (m, d) = (self.m, self.d);
        let f = 2 * m;
        let (c, s) = (j, m + j);
        self.w[j * d..(j + 1) * d].copy_from_slice(wj);
        self.phi.col_mut(c).copy_from_slice(phinew.col(ci));
        self.phi.col_mut(s).copy_from_slice(phinew.col(si));
        // ΦᵀΦ: undo the halving / sharing of the update vectors.
        for k in 0..f {
            let dc = if k == c { 2.0 * uc[k] } else { uc[k] };
            let ds = if k == s {
                2.0 * us[k]
            } else if k == c {
                0.0
            } else {
                us[k]
            };
            let vc = self.gram[(k, c)] + dc;
            self.gram[(k, c)] = vc;
            self.gram[(c, k)] = vc;
            let vs = self.gram[(k, s)] + ds;
            self.gram[(k, s)] = vs;
            self.gram[(s, k)] = vs;
        }
        self.phity[c] = bc;
        self.phity[s] = bs;
        let mut up = Mat::zeros(f, 2);
        let mut down = Mat::zeros(f, 2);
        let mut cols = 0;
        for (u, e) in [(uc, c), (us, s)] {
            let norm = u.iter().map(|v| v * v).sum::<f64>().sqrt();
            if norm == 0.0 {
                continue;
            }
            let sigma = norm.sqrt();
            let h = std::f64::consts::FRAC_1_SQRT_2;
            for k in 0..f {
                let a = u[k] / sigma;
                let b = if k == e { sigma } else { 0.0 };
                up[(k, cols)] = (a + b) * h;
                down[(k, cols)] = (a - b) * h;
            }
            cols += 1;
        }
        let up = up.as_ref().submatrix(0, 0, f, cols).to_owned();
        let down = down.as_ref().submatrix(0, 0, f, cols).to_owned();
        B::cholesky_update(self.chol.as_mut(), up.as_ref())?;
        if B::cholesky_downdate(self.chol.as_mut(), down.as_ref()).is_err() {
            // The exact result is positive definite (λ₀ > 0); rounding refused the downdate:
            // refactorise from the (already updated, exact) ΦᵀΦ.
            self.stats.fallbacks += 1;
            return self.factor_from_gram();
        }
        self.refresh_scalars()
    }

    /// The reference sweep: for every proposal `Λ_n'` is rebuilt from `Φ'` and refactorised
    /// (`O(NM² + M³)` per proposal) through [`log_evidence_dense`]. Same proposals and thresholds as
    /// [`RegressionState::sweep`], hence the same chain.
    pub fn sweep_refactorising(&mut self, proposals: &[f64], log_u: &[f64]) -> Result<usize, BankError> {
        self.sweep_refactorising_first(proposals, log_u, self.m)
    }

    /// [`RegressionState::sweep_refactorising`] over the first `count` proposals only (benchmarks
    /// time a few proposals of the reference and scale by `M / count`).
    pub fn sweep_refactorising_first(
        &mut self,
        proposals: &[f64],
        log_u: &[f64],
        count: usize,
    ) -> Result<usize, BankError> {
        self.check_proposals(proposals, log_u)?;
        let (n, m, d) = (self.y.len(), self.m, self.d);
        let mut current = log_evidence_dense::<B>(self.phi.as_ref(), &self.y, &self.nig)?;
        let mut one = Mat::zeros(n, 2);
        let mut accepted = 0;
        for j in 0..count.min(m) {
            fill_features(&self.x, &proposals[j * d..(j + 1) * d], m, &mut one);
            let mut cand = self.phi.clone();
            cand.col_mut(j).copy_from_slice(one.col(0));
            cand.col_mut(m + j).copy_from_slice(one.col(1));
            let ev = log_evidence_dense::<B>(cand.as_ref(), &self.y, &self.nig)?;
            self.stats.proposals += 1;
            if log_u[j] < ev - current {
                self.phi = cand;
                self.w[j * d..(j + 1) * d].copy_from_slice(&proposals[j * d..(j + 1) * d]);
                current = ev;
                accepted += 1;
                self.stats.accepted += 1;
            }
        }
        self.rebuild()?;
        Ok(accepted)
    }
}

/// `B ← L⁻¹ B` for a lower-triangular `L` and a few right-hand sides: column-oriented forward
/// substitution that reads each column of `L` once for all right-hand sides (a memory-bound `O(M²)`
/// pass; a library triangular solve with five right-hand sides gains nothing from blocking and pays
/// for its threading on every proposal).
fn solve_lower_few(l: MatRef<'_>, b: &mut Mat) {
    let (n, k) = (b.nrows(), b.ncols());
    let data = b.as_mut_slice();
    let mut xj = [0.0; 8];
    debug_assert!(k <= 8);
    for j in 0..n {
        let col = &l.col(j)[..n];
        let inv = 1.0 / col[j];
        for r in 0..k {
            let v = data[r * n + j] * inv;
            data[r * n + j] = v;
            xj[r] = v;
        }
        for r in 0..k {
            let x = xj[r];
            if x != 0.0 {
                for (bi, lij) in data[r * n + j + 1..(r + 1) * n].iter_mut().zip(&col[j + 1..]) {
                    *bi -= x * lij;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
