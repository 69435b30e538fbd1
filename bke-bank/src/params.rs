//! The hyperparameters of a BaNK fit ([`BankParams`], [`BankPrior`]) and their data-driven defaults.
//!
//! **What is learned.** Seed 001 fixes every hyperparameter of its model (§2.2). bke samples the
//! three that decide between fitting signal and fitting noise inside the MCMC, each with a
//! hyperprior, unless the user fixes it:
//!
//! | quantity | role | default | move |
//! |---|---|---|---|
//! | `λ₀` | regression weight precision, `β \| σ² ~ N(0, σ²/λ₀ I)` | learned, `log λ₀ ~ N(0, 3²)` | slice on `log λ₀` ([`crate::regression`]) |
//! | `σ²` | regression noise | integrated out, `IG(a₀, b₀)` | conjugate (seed 001 eq. (11)) |
//! | `s²` | classification weight variance, `β ~ N(0, s² I)` | learned, `s² ~ IG(1, 1)` | Gibbs + rescaling ([`crate::classification`]) |
//! | `ψ₀` | DP base scale `Ψ₀ = ψ₀ I` | learned, `ψ₀ ~ Gamma(1, rate 1/ψ̄)` | conjugate Gibbs ([`crate::dpmix`]) |
//!
//! **The frequency scale.** On standardised inputs the median pairwise distance `ℓ` (the RKS
//! bandwidth, ≈ `√(2d)`) sets the data's length scale, so the default base measure is centred on
//! frequencies of scale `1/ℓ`: the hyperprior mean of `ψ₀` is `ψ̄ = (ν₀ − d − 1)/ℓ²` (then the prior
//! mean of each component covariance is `E Σ = ψ̄/(ν₀ − d − 1) I = ℓ⁻² I`) and the initial
//! frequencies are `W_j ~ N(0, ℓ⁻² I)`. A unit base scale (`Ψ₀ = I`) would mean length scales of 1
//! on every standardised input, several times shorter than the data's.
//!
//! **The component means stay near `μ₀`: `κ₀ = 10`.** Seed 001 leaves the NIW base measure's
//! pseudo-counts open. The frequencies are its only data: the component means and covariances are
//! Gibbs draws given the `M` frequencies, and the frequencies are MH draws from the components,
//! accepted by the likelihood. Where the likelihood says little about single frequencies (most
//! proposals accepted: 86 % on breast cancer, 93 % on ozone, 95 % on diabetes) a component's mean
//! and its frequencies move together as a random walk, held back only by the prior
//! `μ_k ~ N(μ₀, Σ_k/κ₀)`. With `κ₀ = 0.1` (bke ≤ 0.3) that prior lets the mean sit three `Σ`
//! scales from `μ₀`, and on breast cancer it drifted to a norm of 0.7 in standardised frequency
//! units — a spectral mode that turns the kernel negative a few standardised units away, for no
//! gain in fit. `κ₀ = 10` keeps a mean within about `Σ^{½}/3` of `μ₀` a priori (a phase of a few
//! tenths of a radian at the data's typical distance); a shifted mode the data support is still
//! reached, the mean's conditional being `N((κ₀μ₀ + m_k W̄_k)/(κ₀ + m_k), Σ_k/(κ₀ + m_k))` for a
//! component of `m_k` frequencies. `cargo xtask repro bank-prior` measures both values by 5-fold CV
//! over several seeds (docs/results.md).
//!
//! **How anisotropic the spectral density may be: `ν₀`.** The component covariances
//! `Σ_k ~ W⁻¹(Ψ₀, ν₀)` are Gibbs draws given the component's frequencies: `ν₀` prior
//! pseudo-observations against `m_k` frequencies. Where the likelihood says little about single
//! frequencies, frequencies and covariance random-walk together, and under the vaguest prior
//! (`ν₀ = d + 2`: 32 pseudo-observations against 126 frequencies on breast cancer) the covariance
//! drifts into a random anisotropy — relative input scales the data never asked for, which the
//! posterior predictive then averages over. A prior worth as many observations as there are
//! frequencies, `ν₀ = d + 1 + M`, keeps `Σ_k` near isotropic (around the per-input scales the
//! relevance step applies, if any). Whether the data need more is what the input-relevance test
//! ([`crate::relevance`]) measures on held-out rows, and how much a single frequency can learn from
//! the data depends on the likelihood: a 0/1 label tells little about the latent function (Fisher
//! information `p(1 − p) ≤ ¼` per row, near 0 where the classifier is confident), a
//! regression target with noise variance `σ²` tells `1/σ²` (about 10 on concrete). So the default
//! ([`default_nu0`]) is `d + 1 + M` for **classification where one shared lengthscale predicts
//! held-out rows as well as per-input ones**, and `d + 2` otherwise. Measured by 5-fold CV, the
//! rule against `d + 2` everywhere, paired by seed (6 seeds): breast cancer error 0.0302 → 0.0231
//! (−0.0070 ± 0.0012; on 12 further seeds 0.0296 → 0.0253, −0.0042 ± 0.0016), pima
//! 0.2352 → 0.2316 (−0.0037 ± 0.0013), banana unchanged (−0.0008 ± 0.0011, per-input scales on
//! most folds), magic +0.0001 ± 0.0001 (2 seeds); applied to regression the same rule helped ozone (−0.0065 ± 0.0024 MSE) and diabetes (−0.0025 ± 0.0025) but cost concrete
//! (+0.0054 ± 0.0015) and abalone (+0.0049 ± 0.0011), and bikeshare, whose hourly pattern needs a
//! strongly anisotropic spectral density, a quarter (0.079 → 0.100, with per-input scales). `--nu0`
//! overrides the rule.
//!
//! **The prior on f does not change with M.** With the `1/√M` feature scaling of seed 001 eq. (3),
//! `φ(x)ᵀφ(x') = M⁻¹ Σ_j cos(ω_jᵀ(x − x'))`, so given the frequencies the prior on
//! `f(x) = φ(x)ᵀβ` is a Gaussian process with covariance `(σ²/λ₀) k̂_W(x − x')` (regression; `s² k̂_W`
//! for classification) whose variance `σ²/λ₀` at every point is the same for every `M`. Over the
//! frequencies' prior `E k̂_W = k_ρ` (seed 001 eq. (5)) for every `M`; more frequencies only shrink the
//! Monte-Carlo fluctuation of `k̂_W` around `k_ρ` (variance `O(1/M)`). As `M → ∞` BaNK's prior on `f`
//! becomes a GP whose stationary kernel is the DP mixture's spectral density (with the hyperpriors
//! above), not a different model per `M`.

use crate::dpmix::{GammaPrior, MixtureParams};
use crate::error::{BankError, check_count, check_features, check_positive, invalid, mismatch};
use crate::evidence::{LogNormalPrior, NigParams};
use crate::priors::InvGammaPrior;
use crate::relevance::{Relevance, RelevanceFit};
use serde::{Deserialize, Serialize};

/// The starting value of a learned `λ₀` (prior signal variance ten times the noise's).
pub const START_PRIOR_PRECISION: f64 = 0.1;
/// The starting value of a learned classification weight variance `s²`.
pub const START_WEIGHT_VARIANCE: f64 = 10.0;

/// Regression or (binary, 0/1 labels) classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Gaussian likelihood, conjugate NIG evidence (§3.3.1).
    #[default]
    Regression,
    /// Logistic likelihood, joint `(W_j, β_j)` MH with a Laplace proposal (§3.3.2).
    Classification,
}

impl Task {
    /// Parses `regression` or `classification`.
    pub fn parse(s: &str) -> Result<Task, BankError> {
        match s.to_ascii_lowercase().as_str() {
            "regression" => Ok(Task::Regression),
            "classification" => Ok(Task::Classification),
            _ => Err(bke_core::CoreError::InvalidChoice {
                what: format!("task '{s}'"),
                reason: "use 'regression' or 'classification'".into(),
            }
            .into()),
        }
    }
}

/// How the regression sweep evaluates the evidence of a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepMethod {
    /// Bulk Gram rows, Woodbury evaluation, rank-2 update + downdate on acceptance: `O(NM²)` a sweep.
    #[default]
    LowRank,
    /// Rebuild and refactorise `Λ_n` per proposal: `O(NM³ + M⁴)` a sweep (reference only).
    Refactorise,
}

/// The model's hyperparameters. `None` means *learned* (a sampled hyperparameter) or *data-driven*
/// (a default computed from the training inputs); a value fixes it. See the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BankPrior {
    /// DP concentration `α > 0`. Default `1`.
    pub alpha: f64,
    /// NIW prior mean `μ₀` of the component means (`None`: zero). Default `None`.
    pub mu0: Option<Vec<f64>>,
    /// NIW pseudo-count `κ₀ > 0` of the component means. Default `10` (module docs: a component
    /// mean stays within about `Σ^{½}/3` of `μ₀` a priori).
    pub kappa0: f64,
    /// Inverse-Wishart degrees of freedom `ν₀ > d − 1` (`None`: [`default_nu0`] — `d + 1 + M` for
    /// classification where one shared lengthscale suffices, else `d + 2`, the smallest value with a
    /// finite `E Σ`). Default `None`.
    pub nu0: Option<f64>,
    /// DP base scale `Ψ₀ = ψ₀ I` (`None`: learned under [`BankPrior::psi0_prior`]). Default `None`.
    pub psi0: Option<f64>,
    /// Hyperprior of `ψ₀` (`None`: `Gamma(1, rate 1/ψ̄)`, mean `ψ̄ = (ν₀ − d − 1)/ℓ²`). Default `None`.
    pub psi0_prior: Option<GammaPrior>,
    /// Initial frequencies `W_j ~ N(0, s² I)` with `s = init_scale` (standardised units; `None`:
    /// `1/ℓ`). Default `None`.
    pub init_scale: Option<f64>,
    /// Inverse-gamma shape `a₀ > 0` of the regression noise variance. Default `1`.
    pub a0: f64,
    /// Inverse-gamma scale `b₀ > 0` of the regression noise variance. Default `0.1`.
    pub b0: f64,
    /// Regression weight precision `λ₀` relative to the noise (`None`: learned). Default `None`.
    pub prior_precision: Option<f64>,
    /// Hyperprior of `λ₀`. Default `log λ₀ ~ N(log 1, 3²)`.
    pub prior_precision_prior: LogNormalPrior,
    /// Classification weight variance `s²` (`None`: learned). Default `None`.
    pub weight_prior_variance: Option<f64>,
    /// Hyperprior of `s²`. Default `IG(1, 1)`.
    pub weight_prior_variance_prior: InvGammaPrior,
    /// Classification intercept variance `v₀`, `β₀ ~ N(0, v₀)`. Default `10`.
    pub intercept_prior_variance: f64,
}

impl Default for BankPrior {
    fn default() -> Self {
        Self {
            alpha: 1.0,
            mu0: None,
            kappa0: 10.0,
            nu0: None,
            psi0: None,
            psi0_prior: None,
            init_scale: None,
            a0: 1.0,
            b0: 0.1,
            prior_precision: None,
            prior_precision_prior: LogNormalPrior { median: 1.0, log_sd: 3.0 },
            weight_prior_variance: None,
            weight_prior_variance_prior: InvGammaPrior { shape: 1.0, scale: 1.0 },
            intercept_prior_variance: 10.0,
        }
    }
}

impl BankPrior {
    /// Validates every value that does not depend on the data.
    pub fn validate(&self) -> Result<(), BankError> {
        check_positive("DP concentration alpha", self.alpha)?;
        check_positive("NIW kappa0", self.kappa0)?;
        check_positive("inverse-gamma shape a0", self.a0)?;
        check_positive("inverse-gamma scale b0", self.b0)?;
        check_positive("intercept prior variance", self.intercept_prior_variance)?;
        for (name, v) in [
            ("NIW psi0", self.psi0),
            ("init_scale", self.init_scale),
            ("prior precision", self.prior_precision),
            ("weight prior variance", self.weight_prior_variance),
            ("NIW nu0", self.nu0),
        ] {
            if let Some(v) = v {
                check_positive(name, v)?;
            }
        }
        if let Some(p) = &self.psi0_prior {
            p.check("psi0 hyperprior")?;
        }
        self.prior_precision_prior.check("prior precision hyperprior")?;
        self.weight_prior_variance_prior.check("weight prior variance hyperprior")
    }

    /// The concrete hyperparameters for `d`-dimensional (standardised) inputs whose median pairwise
    /// distance is `ell`, with `nu0_default` the `ν₀` used when it is not set ([`default_nu0`]).
    pub fn resolve(&self, d: usize, ell: f64, nu0_default: f64) -> Result<Resolved, BankError> {
        let nu0 = self.nu0.unwrap_or(nu0_default);
        // ν₀ ≤ d + 1 has no finite E Σ; centre the base measure's mode instead (mode Ψ₀/(ν₀ + d + 1)).
        let dof = if nu0 > d as f64 + 1.0 { nu0 - d as f64 - 1.0 } else { nu0 + d as f64 + 1.0 };
        let psi_bar = dof / (ell * ell);
        let psi0_prior = self.psi0_prior.unwrap_or(GammaPrior { shape: 1.0, rate: 1.0 / psi_bar });
        let psi0 = self.psi0.unwrap_or(psi_bar);
        let mixture = MixtureParams {
            alpha: self.alpha,
            mu0: self.mu0.clone(),
            kappa0: self.kappa0,
            nu0: Some(nu0),
            psi0,
        };
        mixture.check(d)?;
        let init_scale = self.init_scale.unwrap_or(1.0 / ell);
        let nig = NigParams {
            a0: self.a0,
            b0: self.b0,
            prior_precision: self.prior_precision.unwrap_or(START_PRIOR_PRECISION),
        };
        Ok(Resolved {
            mixture,
            psi0_prior: self.psi0.is_none().then_some(psi0_prior),
            init_scale,
            nig,
            learn_prior_precision: self.prior_precision.is_none(),
            weight_variance: self.weight_prior_variance.unwrap_or(START_WEIGHT_VARIANCE),
            learn_weight_variance: self.weight_prior_variance.is_none(),
            median_distance: ell,
            relevance: None,
        })
    }
}

/// The concrete hyperparameters of one fit (data-driven defaults filled in) and which are learned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    /// The DP-NIW base measure at the initial `ψ₀`.
    pub mixture: MixtureParams,
    /// The hyperprior of `ψ₀` when it is learned.
    pub psi0_prior: Option<GammaPrior>,
    /// Initial frequency scale.
    pub init_scale: f64,
    /// Noise prior and the initial `λ₀`.
    pub nig: NigParams,
    /// Whether `λ₀` is sampled.
    pub learn_prior_precision: bool,
    /// Initial classification weight variance.
    pub weight_variance: f64,
    /// Whether `s²` is sampled.
    pub learn_weight_variance: bool,
    /// Median pairwise distance `ℓ` of the (standardised) training inputs.
    pub median_distance: f64,
    /// The per-input lengthscales and whether they were used (`None`: relevance off, one input, or
    /// a bke ≤ 0.3 file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<RelevanceFit>,
}

/// Parameters of a BaNK fit. Frequencies live in the space of the standardised inputs unless
/// `standardize_inputs` is off; the exported kernel is always in the original units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankParams {
    /// Regression or classification. Default regression.
    #[serde(default)]
    pub task: Task,
    /// Number of frequencies `M` (`2M` features). Default `128`.
    pub frequencies: usize,
    /// MCMC iterations (sweeps). Default `100`.
    pub iterations: usize,
    /// Burn-in sweeps discarded (`None`: half of `iterations`). Default `None`.
    pub burn_in: Option<usize>,
    /// Post-burn-in states retained (evenly spaced) and averaged for prediction. Default `20`.
    pub samples: usize,
    /// Sweeps at the start of burn-in during which the learned hyperparameters stay at their
    /// starting values (`λ₀ = 0.1`, `s² = 10`: a prior that expects signal, so the frequencies find
    /// it before the hyperparameters may call it noise; `ψ₀ = ψ̄`). `None`: half the burn-in. The
    /// chain after burn-in is exact either way. Default `None`.
    #[serde(default)]
    pub warmup: Option<usize>,
    /// The model's hyperparameters and hyperpriors.
    #[serde(default)]
    pub prior: BankPrior,
    /// Classification: Newton iterations of each 2-D Laplace approximation. Default `12`.
    pub newton_iterations: usize,
    /// Standardise inputs (per column) before learning. Default `true`.
    pub standardize_inputs: bool,
    /// Per-input lengthscales (ARD) for the spectral prior, learned before the chain
    /// ([`crate::relevance`]). Default [`Relevance::Auto`]: used when they predict held-out rows better.
    #[serde(default)]
    pub relevance: Relevance,
    /// Proposals per bulk Gram-row product in the regression sweep. Default `64`.
    pub block: usize,
    /// Refactorise `Λ_n` (and check the drift) every this many sweeps. Default `1` (`O(M³)`, small
    /// beside the sweep's `O(NM²)`).
    pub refactor_every: usize,
    /// Regression sweep method. Default [`SweepMethod::LowRank`].
    pub method: SweepMethod,
    /// Seed of the random stream. Default `0`.
    pub seed: u64,
}

/// The inverse-Wishart degrees of freedom `ν₀` of the component covariances when the user sets none
/// (module docs, "How anisotropic the spectral density may be"): `d + 1 + M` where the input-relevance
/// test ran and found one shared lengthscale predicting held-out rows as well as per-input ones
/// (`isotropic_suffices`), the vaguest `d + 2` otherwise.
pub fn default_nu0(task: Task, d: usize, frequencies: usize, isotropic_suffices: bool) -> f64 {
    if task == Task::Classification && isotropic_suffices {
        (d + 1 + frequencies) as f64
    } else {
        d as f64 + 2.0
    }
}

impl Default for BankParams {
    fn default() -> Self {
        Self {
            task: Task::Regression,
            frequencies: 128,
            iterations: 100,
            burn_in: None,
            samples: 20,
            warmup: None,
            prior: BankPrior::default(),
            newton_iterations: 12,
            standardize_inputs: true,
            relevance: Relevance::Auto,
            block: 64,
            refactor_every: 1,
            method: SweepMethod::LowRank,
            seed: 0,
        }
    }
}

impl BankParams {
    /// The burn-in actually used.
    pub fn burn_in(&self) -> usize {
        self.burn_in.unwrap_or(self.iterations / 2)
    }

    /// The warm-up actually used (see [`BankParams::warmup`]).
    pub fn warmup(&self) -> usize {
        self.warmup.unwrap_or(self.burn_in() / 2).min(self.burn_in())
    }

    /// The iterations whose states are retained: `samples` evenly spaced after burn-in, ending at the
    /// last iteration.
    pub fn retained_iterations(&self) -> Vec<usize> {
        let b = self.burn_in();
        let post = self.iterations.saturating_sub(b);
        let k = self.samples.min(post);
        let mut v: Vec<usize> = (1..=k).map(|i| b + (i * post) / k - 1).collect();
        v.dedup();
        v
    }

    /// Validates what needs the input dimension `d` (`μ₀`'s length, `ν₀ > d − 1`).
    pub fn check_dim(&self, d: usize) -> Result<(), BankError> {
        if let Some(m) = &self.prior.mu0 {
            if m.len() != d {
                return Err(mismatch("NIW mu0", d, m.len()));
            }
        }
        if let Some(nu0) = self.prior.nu0 {
            if nu0 <= d as f64 - 1.0 {
                return Err(invalid("NIW nu0", nu0, format!("must exceed d - 1 = {}", d as f64 - 1.0)));
            }
        }
        Ok(())
    }
}

impl bke_core::Params for BankParams {
    type Error = BankError;

    fn validate(&self) -> Result<(), BankError> {
        check_count("frequencies", self.frequencies)?;
        check_count("iterations", self.iterations)?;
        check_count("samples", self.samples)?;
        check_count("block", self.block)?;
        check_count("refactor_every", self.refactor_every)?;
        check_count("newton_iterations", self.newton_iterations)?;
        if self.burn_in() >= self.iterations {
            return Err(invalid(
                "burn_in",
                self.burn_in() as f64,
                format!("must be smaller than iterations = {}", self.iterations),
            ));
        }
        check_features(self.frequencies, self.samples, 1, 1)?;
        self.prior.validate()
    }
}
