//! A rigorous lower bound on the normaliser of the kernel student-t density of a stationary kernel,
//! the check that a quadrature rule resolved the density (`density::normalise` module docs).
//!
//! **The bound.** `√Q(x) = ‖Ψ_N^{−1/2} φ̃(x)‖` is a norm of `ϕ(x) − m_N` (`m_N` the posterior mean of the feature
//! vectors, seed 003 eq. (4)), and
//! `Ψ_N = σ₀² I + Φ(I − 11ᵀ/(N+β))Φᵀ ⪰ σ₀² I`, so by the triangle inequality, for all `x, y`,
//!
//! ```text
//! √Q(y) ≤ √Q(x) + ‖ϕ(y) − ϕ(x)‖/σ₀ = √Q(x) + √(2 − 2κ(r))/σ₀,   r = ‖(y − x)/ℓ‖,
//! ```
//!
//! for a stationary kernel `k(x, y) = κ(‖(x − y)/ℓ‖)` with `κ(0) = 1`. Hence
//! `q_k(y) ≥ g(r) := (γ + (√Q(x) + √(2 − 2κ(r))/σ₀)²)^{−(1+N+α)/2}` (seed 003 eq. (3)), decreasing in
//! `r`. For `x` in the box `B`, the orthant of the ball of scaled radius `R = min_k (u_k − l_k)/(2ℓ_k)`
//! that points towards the farther face in every coordinate lies in `B`, so
//!
//! ```text
//! Z ≥ ∫_B q_k ≥ Π_k ℓ_k · (S_d/2^d) ∫_0^R g(r) r^{d−1} dr,   S_1/2 = 1,  S_2/4 = π/2,
//! ```
//!
//! evaluated as a lower Riemann sum (right end points of a geometric grid in `r` from `10⁻¹² R`,
//! a valid lower sum for a decreasing `g`; `R` capped at `10¹⁰⁰`), so the bound holds up to rounding. A quadrature estimate of `Z` below it has
//! missed the peak of the density at `x`: the rule's nodes are farther apart than the peak is wide.
//! The bound is largest at the point of smallest `Q`, the densest point.

use super::domain::Domain;
use crate::numeric::log_sum_exp;
use crate::{Kernel, KernelFamily};

/// Geometric grid ratio of the radial lower sum (the bound is within a factor `RATIO^d` of the
/// integral of `g` over `[r_min, R]`).
const RATIO: f64 = 1.15;

/// The radial lower sum of the bound for one kernel and box (module docs of `density::bound`).
#[derive(Debug, Clone)]
pub(crate) struct LowerBound {
    /// `√(2 − 2κ(r_i))` at the right end points.
    dist: Vec<f64>,
    /// `log(Π ℓ_k · S_d/2^d · (r_i^d − r_{i−1}^d)/d)`.
    log_shell: Vec<f64>,
    /// `log` of the orthant ball's volume `Π ℓ_k · S_d/2^d · R^d/d`.
    log_ball: f64,
}

/// `1 − κ(r)` without cancellation at small `r`.
fn one_minus_kappa(family: KernelFamily, r: f64) -> f64 {
    match family {
        KernelFamily::SquaredExponential => -(-0.5 * r * r).exp_m1(),
        KernelFamily::Laplace => -(-r).exp_m1(),
        KernelFamily::Matern32 => {
            let s = 3f64.sqrt() * r;
            -(-s).exp_m1() - s * (-s).exp()
        }
        KernelFamily::Matern52 => {
            let s = 5f64.sqrt() * r;
            -(-s).exp_m1() - (s + s * s / 3.0) * (-s).exp()
        }
        KernelFamily::RationalQuadratic { alpha } => -(-alpha * (r * r / (2.0 * alpha)).ln_1p()).exp_m1(),
    }
    .max(0.0)
}

impl LowerBound {
    /// The bound's radial grid for `kernel` on `domain` (`d = domain.dim()`).
    pub fn new(kernel: &Kernel, domain: &Domain) -> Self {
        let d = domain.dim();
        let ell =
            |k: usize| if kernel.is_ard() { kernel.lengthscales()[k] } else { kernel.lengthscales()[0] };
        // A ball of radius at most 1e100 (in lengthscales) keeps every power finite; a smaller ball
        // inside the box still gives a lower bound.
        let big_r =
            (0..d).map(|k| (domain.upper[k] - domain.lower[k]) / (2.0 * ell(k))).fold(1e100, f64::min);
        // S_d / 2^d / d, the orthant's share of the ball's surface: 1 for d = 1, π/4 for d = 2
        // (the callers normalise in 1-D and 2-D only).
        let log_scale = (0..d).map(|k| ell(k).ln()).sum::<f64>()
            + if d == 1 { 0.0 } else { std::f64::consts::FRAC_PI_2.ln() }
            - (d as f64).ln();
        // Shells from 1e-12 R (the inner ball is left out: a lower sum may drop mass) to R.
        let r_min = big_r * 1e-12;
        let m = ((big_r / r_min).ln() / RATIO.ln()).ceil().max(1.0) as usize;
        let step = (big_r / r_min).ln() / m as f64;
        let (mut dist, mut log_shell) = (Vec::with_capacity(m), Vec::with_capacity(m));
        let mut prev = r_min;
        for i in 1..=m {
            let r = if i == m { big_r } else { r_min * (step * i as f64).exp() };
            dist.push((2.0 * one_minus_kappa(kernel.family(), r)).sqrt());
            // log(r^d − prev^d), in logs so that no power overflows
            let dl = d as f64;
            log_shell.push(log_scale + dl * r.ln() + (-(dl * (prev / r).ln()).exp_m1()).ln());
            prev = r;
        }
        Self { dist, log_shell, log_ball: log_scale + d as f64 * big_r.ln() }
    }

    /// `log` of the lower bound on `∫_B q_k` from a point of the box where `Q = q` (γ, the exponent
    /// `e = (1+N+α)/2` and `σ₀²` of the model).
    pub fn log_bound(&self, q: f64, gamma: f64, e: f64, sigma0_sq: f64) -> f64 {
        let (sq, s0) = (q.max(0.0).sqrt(), sigma0_sq.sqrt());
        let terms: Vec<f64> = self
            .dist
            .iter()
            .zip(&self.log_shell)
            .map(|(dk, ls)| ls - e * (gamma + (sq + dk / s0).powi(2)).ln())
            .collect();
        log_sum_exp(&terms)
    }

    /// An upper bound on [`Self::log_bound`] that costs O(1): the peak value times the orthant
    /// ball's volume. A normaliser above it needs no further check.
    pub fn log_ball_bound(&self, q: f64, gamma: f64, e: f64) -> f64 {
        self.log_ball - e * (gamma + q.max(0.0)).ln()
    }

    /// Whether a quadrature estimate `log_z` of the normaliser can be right given a point of the
    /// box with `Q = q`: `log_z` at least the bound.
    pub fn admits(&self, log_z: f64, q: f64, gamma: f64, e: f64, sigma0_sq: f64) -> bool {
        log_z >= self.log_ball_bound(q, gamma, e) || log_z >= self.log_bound(q, gamma, e, sigma0_sq)
    }
}
