//! The Dirichlet-process mixture of Gaussians over the frequencies (seed 001 §2.2, §3.1, §3.2).
//!
//! Generative model: `π ~ GEM(α)`; `Σ_k ~ W⁻¹(Ψ₀, ν₀)`, `μ_k ~ N(μ₀, Σ_k/κ₀)`; `Z_j ~ Mult(π)`;
//! `W_j ~ N(μ_{Z_j}, Σ_{Z_j})`.
//!
//! * **Gibbs for `Z`** (seed 001 eq. (8), Neal 1998 algorithm 2, `π` integrated out by the Chinese restaurant
//!   process): `P(Z_j = k) ∝ m_k^{-j} N(W_j | μ_k, Σ_k)` for an occupied component and
//!   `∝ α t_{ν₀−d+1}(W_j | μ₀, Ψ₀(κ₀+1)/(κ₀(ν₀−d+1)))` for a new one, the NIW prior predictive
//!   (a multivariate Student-t). A new component gets `(μ, Σ)` drawn from its NIW posterior given `W_j`;
//!   an emptied component is dropped.
//! * **NIW posterior** (§3.2): `κ_k = κ₀ + m_k`, `ν_k = ν₀ + m_k`, `μ̃_k = (κ₀μ₀ + m_k W̄_k)/κ_k`,
//!   `Ψ_k = Ψ₀ + Σ_{j∈k}(W_j − W̄_k)(W_j − W̄_k)ᵀ + κ₀m_k/κ_k (W̄_k − μ₀)(W̄_k − μ₀)ᵀ`;
//!   `Σ_k ~ W⁻¹(Ψ_k, ν_k)` (Bartlett decomposition), `μ_k ~ N(μ̃_k, Σ_k/κ_k)`.
//! * **The base scale** `Ψ₀ = ψ₀ I` may carry a hyperprior `ψ₀ ~ Gamma(a_ψ, rate b_ψ)` (an extension
//!   of the seed, which fixes `Ψ₀`): given the components it is conjugate,
//!   `ψ₀ | Σ_{1..K} ~ Gamma(a_ψ + Kν₀d/2, b_ψ + ½ Σ_k tr Σ_k⁻¹)`, since
//!   `W⁻¹(Σ | ψ₀I, ν₀) ∝ ψ₀^{ν₀d/2} exp(−½ψ₀ tr Σ⁻¹)` as a function of `ψ₀` ([`Mixture::draw_psi0`]).

use crate::error::{BankError, check_positive, invalid, mismatch};
pub use crate::priors::GammaPrior;
use crate::priors::gamma_draw;
use crate::small;
use bke_core::numeric::LN_2PI;
use bke_core::special::ln_gamma;
use rand::Rng;
use rand_distr::{ChiSquared, Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// Hyperparameters of the DP mixture: the concentration `α` and the Normal-inverse-Wishart base
/// measure `NIW(μ₀, κ₀, Ψ₀, ν₀)` (with `Ψ₀ = ψ₀ I`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixtureParams {
    /// DP concentration `α > 0`. Default `1`.
    pub alpha: f64,
    /// Prior mean of the component means, `μ₀` (`None`: the zero vector). Default `None`.
    pub mu0: Option<Vec<f64>>,
    /// Prior pseudo-count of the component means, `κ₀ > 0`. Default `0.1` (component means may sit
    /// several `Σ` scales away from `μ₀`, so shifted spectral modes are reachable).
    pub kappa0: f64,
    /// Inverse-Wishart degrees of freedom `ν₀ > d − 1` (`None`: `d + 2`, the smallest value with a finite
    /// prior mean `E Σ = Ψ₀/(ν₀ − d − 1)`). Default `None`.
    pub nu0: Option<f64>,
    /// Inverse-Wishart scale `Ψ₀ = ψ₀ I`, `ψ₀ > 0`. Default `1` (with `ν₀ = d + 2`: `E Σ = I`, i.e. unit
    /// lengthscales for standardised inputs).
    pub psi0: f64,
}

impl Default for MixtureParams {
    fn default() -> Self {
        Self { alpha: 1.0, mu0: None, kappa0: 0.1, nu0: None, psi0: 1.0 }
    }
}

impl MixtureParams {
    /// Validates the hyperparameters for frequencies in `d` dimensions.
    pub fn check(&self, d: usize) -> Result<(), BankError> {
        check_positive("DP concentration alpha", self.alpha)?;
        check_positive("NIW kappa0", self.kappa0)?;
        check_positive("NIW psi0", self.psi0)?;
        if let Some(m) = &self.mu0 {
            if m.len() != d {
                return Err(mismatch("NIW mu0", d, m.len()));
            }
            if let Some(&v) = m.iter().find(|v| !v.is_finite()) {
                return Err(invalid("NIW mu0", v, "must be finite"));
            }
        }
        let nu0 = self.nu0(d);
        if !(nu0.is_finite() && nu0 > d as f64 - 1.0) {
            return Err(invalid("NIW nu0", nu0, format!("must exceed d - 1 = {}", d as f64 - 1.0)));
        }
        Ok(())
    }

    /// `ν₀` for dimension `d`.
    pub fn nu0(&self, d: usize) -> f64 {
        self.nu0.unwrap_or(d as f64 + 2.0)
    }

    /// `μ₀` for dimension `d`.
    pub fn mu0(&self, d: usize) -> Vec<f64> {
        self.mu0.clone().unwrap_or_else(|| vec![0.0; d])
    }
}

/// One mixture component `N(μ, Σ)` with its Cholesky factor cached (rebuilt, and `Σ` checked, when
/// it is read from JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ComponentData")]
pub struct Component {
    /// Mean `μ_k` (length `d`).
    pub mean: Vec<f64>,
    /// Covariance `Σ_k` (`d × d`, row-major).
    pub cov: Vec<f64>,
    #[serde(skip)]
    chol: Vec<f64>,
    #[serde(skip)]
    logdet: f64,
}

/// The serialised form of a [`Component`].
#[derive(Deserialize)]
struct ComponentData {
    mean: Vec<f64>,
    cov: Vec<f64>,
}

impl TryFrom<ComponentData> for Component {
    type Error = BankError;
    fn try_from(c: ComponentData) -> Result<Self, BankError> {
        Component::new(c.mean, c.cov)
    }
}

impl Component {
    /// A component from its mean and covariance; errors if `Σ` is not positive definite.
    pub fn new(mean: Vec<f64>, cov: Vec<f64>) -> Result<Self, BankError> {
        let d = mean.len();
        if cov.len() != d * d {
            return Err(mismatch("component covariance", d * d, cov.len()));
        }
        let chol = small::chol(&cov, d).ok_or_else(|| BankError::Numerical {
            what: "mixture component".into(),
            detail: "covariance is not positive definite".into(),
        })?;
        Ok(Self::with_chol(mean, cov, chol))
    }

    /// A component from its mean, covariance and that covariance's lower Cholesky factor.
    fn with_chol(mean: Vec<f64>, cov: Vec<f64>, chol: Vec<f64>) -> Self {
        let logdet = small::logdet_chol(&chol, mean.len());
        Self { mean, cov, chol, logdet }
    }

    /// `log N(w | μ, Σ)`.
    pub fn log_density(&self, w: &[f64]) -> f64 {
        let d = self.mean.len();
        let mut r: Vec<f64> = w.iter().zip(&self.mean).map(|(a, b)| a - b).collect();
        small::forward(&self.chol, d, &mut r);
        -0.5 * (d as f64 * LN_2PI + self.logdet + r.iter().map(|v| v * v).sum::<f64>())
    }

    /// `tr Σ⁻¹ = ‖L⁻¹‖²_F`.
    pub fn trace_inverse(&self) -> f64 {
        let d = self.mean.len();
        let mut total = 0.0;
        let mut e = vec![0.0; d];
        for c in 0..d {
            e.fill(0.0);
            e[c] = 1.0;
            small::forward(&self.chol, d, &mut e);
            total += e.iter().map(|v| v * v).sum::<f64>();
        }
        total
    }

    /// Draws `w ~ N(μ, Σ)` into `out`.
    pub fn sample<R: Rng>(&self, rng: &mut R, out: &mut [f64]) {
        let d = self.mean.len();
        let xi: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
        let x = small::lower_times(&self.chol, d, &xi);
        out[..d].iter_mut().zip(x.iter().zip(&self.mean)).for_each(|(o, (x, m))| *o = m + x);
    }
}

/// The mixture state: the components, the assignment `Z_j` of every frequency and the counts `m_k`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mixture {
    /// Dimension `d` of the frequencies.
    pub dim: usize,
    /// Occupied components.
    pub components: Vec<Component>,
    /// `Z_j`: index into `components` for each frequency.
    pub assignments: Vec<usize>,
    /// `m_k`: number of frequencies per component.
    pub counts: Vec<usize>,
}

impl Mixture {
    /// One component `N(0, σ² I)` holding all `m` frequencies.
    pub fn single(dim: usize, m: usize, scale: f64) -> Result<Self, BankError> {
        let mut cov = vec![0.0; dim * dim];
        for i in 0..dim {
            cov[i * dim + i] = scale * scale;
        }
        Ok(Self {
            dim,
            components: vec![Component::new(vec![0.0; dim], cov)?],
            assignments: vec![0; m],
            counts: vec![m],
        })
    }

    /// Checks the consistency of a mixture read from JSON (assignments, counts, dimensions).
    pub(crate) fn validate(&self) -> Result<(), bke_core::CoreError> {
        let mut counts = vec![0; self.components.len()];
        for &z in &self.assignments {
            if z >= counts.len() {
                return Err(crate::error::bad_model("mixture assignments do not match its components"));
            }
            counts[z] += 1;
        }
        if counts != self.counts || self.components.iter().any(|c| c.mean.len() != self.dim) {
            return Err(crate::error::bad_model("mixture counts or dimensions are inconsistent"));
        }
        if self.components.iter().any(|c| c.mean.iter().any(|v| !v.is_finite())) {
            return Err(crate::error::bad_model("a mixture component mean is not finite"));
        }
        Ok(())
    }

    /// The component of frequency `j`.
    pub fn component_of(&self, j: usize) -> &Component {
        &self.components[self.assignments[j]]
    }

    /// Mixture weights `m_k / M` (the posterior expectation of `π_k` given `Z`, up to the `α` mass
    /// reserved for new components).
    pub fn weights(&self) -> Vec<f64> {
        let m: usize = self.counts.iter().sum();
        self.counts.iter().map(|&c| c as f64 / m.max(1) as f64).collect()
    }

    /// One Gibbs sweep over the assignments (seed 001 eq. (8)), frequencies `w` row-major `M × d`.
    pub fn gibbs_assignments<R: Rng>(
        &mut self,
        w: &[f64],
        p: &MixtureParams,
        rng: &mut R,
    ) -> Result<(), BankError> {
        let d = self.dim;
        let m = self.assignments.len();
        let pred = StudentT::prior_predictive(p, d)?;
        let mut logw = Vec::new();
        for j in 0..m {
            let wj = &w[j * d..(j + 1) * d];
            let k_old = self.assignments[j];
            self.counts[k_old] -= 1;
            if self.counts[k_old] == 0 {
                self.remove_component(k_old);
            }
            logw.clear();
            for (k, c) in self.components.iter().enumerate() {
                logw.push((self.counts[k] as f64).ln() + c.log_density(wj));
            }
            logw.push(p.alpha.ln() + pred.log_density(wj));
            let k = sample_log_weights(&logw, rng);
            if k == self.components.len() {
                let comp = niw_posterior_draw(p, d, &[wj], rng)?;
                self.components.push(comp);
                self.counts.push(0);
            }
            self.assignments[j] = k;
            self.counts[k] += 1;
        }
        Ok(())
    }

    fn remove_component(&mut self, k: usize) {
        let last = self.components.len() - 1;
        self.components.swap_remove(k);
        self.counts.swap_remove(k);
        if k != last {
            for z in &mut self.assignments {
                if *z == last {
                    *z = k;
                }
            }
        }
    }

    /// Draws every component's `(μ_k, Σ_k)` from its NIW posterior (§3.2).
    pub fn draw_components<R: Rng>(
        &mut self,
        w: &[f64],
        p: &MixtureParams,
        rng: &mut R,
    ) -> Result<(), BankError> {
        let d = self.dim;
        for k in 0..self.components.len() {
            let members: Vec<&[f64]> = (0..self.assignments.len())
                .filter(|&j| self.assignments[j] == k)
                .map(|j| &w[j * d..(j + 1) * d])
                .collect();
            self.components[k] = niw_posterior_draw(p, d, &members, rng)?;
        }
        Ok(())
    }
}

impl Mixture {
    /// Draws the base scale `ψ₀` from its conditional given the components (module docs):
    /// `Gamma(a_ψ + Kν₀d/2, b_ψ + ½ Σ_k tr Σ_k⁻¹)`.
    pub fn draw_psi0<R: Rng>(&self, p: &MixtureParams, prior: &GammaPrior, rng: &mut R) -> f64 {
        let d = self.dim as f64;
        let k = self.components.len() as f64;
        let shape = prior.shape + 0.5 * k * p.nu0(self.dim) * d;
        let rate = prior.rate + 0.5 * self.components.iter().map(Component::trace_inverse).sum::<f64>();
        gamma_draw(shape, rate, rng)
    }
}

/// Samples an index with probabilities proportional to `exp(logw)`.
pub(crate) fn sample_log_weights<R: Rng>(logw: &[f64], rng: &mut R) -> usize {
    let mx = logw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = logw.iter().map(|l| (l - mx).exp()).sum();
    let mut u = rng.random::<f64>() * total;
    for (k, l) in logw.iter().enumerate() {
        u -= (l - mx).exp();
        if u < 0.0 {
            return k;
        }
    }
    logw.len() - 1
}

/// The NIW posterior parameters `(μ̃, κ, Ψ, ν)` given the member frequencies (§3.2).
pub fn niw_posterior(p: &MixtureParams, d: usize, members: &[&[f64]]) -> (Vec<f64>, f64, Vec<f64>, f64) {
    let mu0 = p.mu0(d);
    let m = members.len() as f64;
    let kappa = p.kappa0 + m;
    let nu = p.nu0(d) + m;
    let mut psi = vec![0.0; d * d];
    for i in 0..d {
        psi[i * d + i] = p.psi0;
    }
    let mut mean = mu0.clone();
    if !members.is_empty() {
        let mut bar = vec![0.0; d];
        for w in members {
            for i in 0..d {
                bar[i] += w[i] / m;
            }
        }
        for w in members {
            for a in 0..d {
                for b in 0..d {
                    psi[a * d + b] += (w[a] - bar[a]) * (w[b] - bar[b]);
                }
            }
        }
        let f = p.kappa0 * m / kappa;
        for a in 0..d {
            for b in 0..d {
                psi[a * d + b] += f * (bar[a] - mu0[a]) * (bar[b] - mu0[b]);
            }
        }
        for i in 0..d {
            mean[i] = (p.kappa0 * mu0[i] + m * bar[i]) / kappa;
        }
    }
    (mean, kappa, psi, nu)
}

/// Draws `(μ, Σ)` from the NIW posterior given the member frequencies.
pub fn niw_posterior_draw<R: Rng>(
    p: &MixtureParams,
    d: usize,
    members: &[&[f64]],
    rng: &mut R,
) -> Result<Component, BankError> {
    let (mean, kappa, psi, nu) = niw_posterior(p, d, members);
    let cov = sample_inverse_wishart(&psi, nu, d, rng)?;
    let chol = small::chol(&cov, d).ok_or_else(|| BankError::Numerical {
        what: "inverse-Wishart draw".into(),
        detail: "covariance draw is not positive definite".into(),
    })?;
    let s = 1.0 / kappa.sqrt();
    let xi: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
    let lxi = small::lower_times(&chol, d, &xi);
    let mu: Vec<f64> = mean.iter().zip(&lxi).map(|(m, v)| m + s * v).collect();
    Ok(Component::with_chol(mu, cov, chol))
}

/// `Σ ~ W⁻¹(Ψ, ν)` by the Bartlett decomposition: with `Ψ = L_Ψ L_Ψᵀ` and `A` lower triangular,
/// `A_ii = √χ²_{ν−i}`, `A_ij ~ N(0,1)`, `Σ⁻¹ = L_Ψ⁻ᵀ A Aᵀ L_Ψ⁻¹ ~ W(Ψ⁻¹, ν)`, so
/// `Σ = T Tᵀ` with `T = L_Ψ A⁻ᵀ`.
pub fn sample_inverse_wishart<R: Rng>(
    psi: &[f64],
    nu: f64,
    d: usize,
    rng: &mut R,
) -> Result<Vec<f64>, BankError> {
    let lpsi = small::chol(psi, d).ok_or_else(|| BankError::Numerical {
        what: "inverse-Wishart scale".into(),
        detail: "scale matrix is not positive definite".into(),
    })?;
    let mut a = vec![0.0; d * d];
    for i in 0..d {
        let chi = ChiSquared::new(nu - i as f64).map_err(|e| BankError::Numerical {
            what: "inverse-Wishart degrees of freedom".into(),
            detail: e.to_string(),
        })?;
        a[i * d + i] = chi.sample(rng).sqrt();
        for j in 0..i {
            a[i * d + j] = rng.sample(StandardNormal);
        }
    }
    // rows of A⁻¹ (lower): column c by forward substitution from e_c, zero above row c
    let mut ainv = vec![0.0; d * d];
    let mut e = vec![0.0; d];
    for c in 0..d {
        e.fill(0.0);
        e[c] = 1.0;
        small::forward(&a, d, &mut e);
        for r in c..d {
            ainv[r * d + c] = e[r];
        }
    }
    // T = L_Ψ A⁻ᵀ: T_rc = Σ_k (L_Ψ)_rk (A⁻¹)_ck, both lower, so k ≤ min(r, c)
    let mut t = vec![0.0; d * d];
    for r in 0..d {
        for c in 0..d {
            let k = r.min(c) + 1;
            t[r * d + c] = small::dot(&lpsi[r * d..r * d + k], &ainv[c * d..c * d + k]);
        }
    }
    let mut sigma = vec![0.0; d * d];
    for r in 0..d {
        for c in 0..=r {
            let v = small::dot(&t[r * d..(r + 1) * d], &t[c * d..(c + 1) * d]);
            sigma[r * d + c] = v;
            sigma[c * d + r] = v;
        }
    }
    Ok(sigma)
}

/// A multivariate Student-t density `t_ν(loc, S)`.
#[derive(Debug, Clone)]
pub struct StudentT {
    nu: f64,
    loc: Vec<f64>,
    chol: Vec<f64>,
    norm: f64,
}

impl StudentT {
    /// The NIW prior predictive of one frequency:
    /// `t_{ν₀−d+1}(μ₀, Ψ₀ (κ₀+1)/(κ₀ (ν₀−d+1)))`.
    pub fn prior_predictive(p: &MixtureParams, d: usize) -> Result<Self, BankError> {
        let nu = p.nu0(d) - d as f64 + 1.0;
        let s = p.psi0 * (p.kappa0 + 1.0) / (p.kappa0 * nu);
        let mut shape = vec![0.0; d * d];
        for i in 0..d {
            shape[i * d + i] = s;
        }
        Self::new(nu, p.mu0(d), &shape)
    }

    /// `t_ν(loc, S)` with shape matrix `S` (row-major).
    pub fn new(nu: f64, loc: Vec<f64>, shape: &[f64]) -> Result<Self, BankError> {
        let d = loc.len();
        let chol = small::chol(shape, d).ok_or_else(|| BankError::Numerical {
            what: "Student-t shape".into(),
            detail: "not positive definite".into(),
        })?;
        let dd = d as f64;
        let norm = ln_gamma((nu + dd) / 2.0)
            - ln_gamma(nu / 2.0)
            - 0.5 * dd * (nu * std::f64::consts::PI).ln()
            - 0.5 * small::logdet_chol(&chol, d);
        Ok(Self { nu, loc, chol, norm })
    }

    /// `log t_ν(w | loc, S) = log Γ((ν+d)/2) − log Γ(ν/2) − (d/2) log(νπ) − ½ log|S|
    /// − ((ν+d)/2) log(1 + δ²/ν)`, `δ² = (w−loc)ᵀS⁻¹(w−loc)`.
    pub fn log_density(&self, w: &[f64]) -> f64 {
        let d = self.loc.len();
        let mut r: Vec<f64> = w.iter().zip(&self.loc).map(|(a, b)| a - b).collect();
        small::forward(&self.chol, d, &mut r);
        let q: f64 = r.iter().map(|v| v * v).sum();
        self.norm - 0.5 * (self.nu + d as f64) * (q / self.nu).ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn inverse_wishart_mean_matches_theory() {
        // E Σ = Ψ/(ν − d − 1); Monte-Carlo error of each entry below 5 standard errors.
        let d = 2;
        let psi = vec![2.0, 0.5, 0.5, 1.0];
        let nu = 8.0;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 20000;
        let mut sum = [0.0; 4];
        let mut sq = [0.0; 4];
        for _ in 0..n {
            let s = sample_inverse_wishart(&psi, nu, d, &mut rng).unwrap();
            for i in 0..4 {
                sum[i] += s[i];
                sq[i] += s[i] * s[i];
            }
        }
        for i in 0..4 {
            let mean = sum[i] / n as f64;
            let se = ((sq[i] / n as f64 - mean * mean) / n as f64).sqrt();
            let truth = psi[i] / (nu - d as f64 - 1.0);
            assert!((mean - truth).abs() < 5.0 * se, "entry {i}: {mean} vs {truth} (se {se})");
        }
    }

    #[test]
    fn prior_predictive_is_the_niw_marginal() {
        // The Student-t prior predictive must equal ∫ N(w|μ,Σ) NIW(μ,Σ) dμ dΣ: check the Monte-Carlo
        // average of N(w|μ,Σ) over prior draws at a few points (relative error within 5 s.e.).
        let p = MixtureParams { kappa0: 0.5, psi0: 1.5, ..Default::default() };
        let d = 2;
        let t = StudentT::prior_predictive(&p, d).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let draws: Vec<Component> =
            (0..40000).map(|_| niw_posterior_draw(&p, d, &[], &mut rng).unwrap()).collect();
        for w in [[0.0, 0.0], [1.0, -0.5], [2.0, 1.0]] {
            let vals: Vec<f64> = draws.iter().map(|c| c.log_density(&w).exp()).collect();
            let n = vals.len() as f64;
            let mean = vals.iter().sum::<f64>() / n;
            let se = (vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
            let truth = t.log_density(&w).exp();
            assert!((mean - truth).abs() < 5.0 * se, "at {w:?}: {mean} vs {truth} (se {se})");
        }
    }

    #[test]
    fn component_density_is_normalised_in_1d() {
        let c = Component::new(vec![0.5], vec![0.25]).unwrap();
        let h = 1e-3;
        let total: f64 = (-8000..8000).map(|i| c.log_density(&[i as f64 * h]).exp() * h).sum();
        assert!((total - 1.0).abs() < 1e-9);
    }
}
