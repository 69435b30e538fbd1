//! Kernel hypothesis tests (seed 000 §2.2, §5; docs/DESIGN.md §3.2): the two-sample test with the maximum
//! mean discrepancy ([`mmd`]) and the independence test with the Hilbert–Schmidt independence criterion
//! ([`hsic`]), their null distributions, kernel choice ([`select`]: a fixed lengthscale, the median
//! heuristic ([`median`]), BKL, and the aggregated tests MMDAgg/HSICAgg, MMD-FUSE and BKL-Bayes over
//! the collections of [`kernels`], combined by [`aggregate`]), results that serialise to the CLI's JSON
//! ([`report`]), and the witness function with BKE posterior bands ([`mod@witness`]).
//!
//! Every test follows the estimator convention ([`crate::estimator`]):
//! `MmdParams { .. }.check()?.fit::<B>(&TwoSamples { x, y })?` chooses the kernels from the pooled
//! sample (for HSIC, from each variable), and `.test::<B>()` runs the test and returns its report.
//!
//! # Statistics
//! With a pooled sample `z = (x_1…x_n, y_1…y_m)` and Gram matrix `K`:
//! - MMD² unbiased (Gretton et al. 2012, eq. (3)): `Σ_{i≠j} k(x_i,x_j)/(n(n−1)) + Σ_{i≠j} k(y_i,y_j)/(m(m−1))
//!   − 2 Σ_{i,j} k(x_i,y_j)/(nm)`;
//! - MMD² biased (Gretton et al. 2012, eq. (5), the V-statistic): the same with all pairs and `1/n²`, `1/m²`;
//! - MMD² linear-time (Gretton et al. 2012, Lemma 14, needs `n = m`): `(1/⌊n/2⌋) Σ_i h(z_{2i−1}, z_{2i})`,
//!   `h((x,y),(x',y')) = k(x,x') + k(y,y') − k(x,y') − k(x',y)`;
//! - HSIC biased (Gretton et al. 2008): `tr(K H L H)/n²`, `H = I − 11ᵀ/n`;
//! - HSIC unbiased (Song et al. 2012): `[tr(K̃L̃) + 1ᵀK̃1·1ᵀL̃1/((n−1)(n−2)) − 2·1ᵀK̃L̃1/(n−2)]/(n(n−3))`
//!   with `K̃`, `L̃` the Gram matrices with zeroed diagonals.
//!
//! # Null distributions and p-values
//! - [`NullDistribution::Permutation`]: `B` random relabellings (MMD) or permutations of `y` (HSIC).
//!   Permutation `b` draws from its own ChaCha8 stream `(seed, b)`, so the null sample and the p-value
//!   are identical for any number of threads. `p = (1 + #{b : T_b ≥ T})/(1 + B)`, where `≥` allows
//!   a relative tolerance of `1e-10` so that relabellings equivalent to the observed one count as ties
//!   however the floating-point sums were ordered.
//! - [`NullDistribution::Gamma`]: a two-moment gamma fit (HSIC: Gretton et al. 2008; MMD: moment
//!   matching, see [`mmd`]).
//! - [`NullDistribution::WildBootstrap`]: MMD with `n = m`, Rademacher-signed pairs (Chwialkowski et
//!   al. 2014), `B` draws with per-draw streams as above.
//! - [`NullDistribution::Normal`]: the linear-time MMD's asymptotic normal null (Gretton et al. 2012,
//!   Cor. 16).
//!
//! A test rejects when `p ≤ α`.

pub mod aggregate;
pub mod hsic;
mod hsic_cost;
mod hsic_low_rank;
pub(crate) mod hsic_null;
mod hsic_sparse;
pub mod kernels;
pub mod median;
pub mod mmd;
mod mmd_blocked;
#[cfg(test)]
mod mmd_blocked_tests;
mod mmd_null;
mod mmd_statistic;
#[cfg(test)]
mod mmd_tests;
pub mod nystrom;
pub mod report;
pub mod select;
pub mod witness;

pub(crate) mod resampling;

pub use hsic::{FittedHsic, HsicParams, HsicStatistic};
pub use kernels::{BandwidthWeights, TestFamily, WeightedKernel};
pub use median::{MedianConvention, median_distance, median_lengthscale};
pub use mmd::{FittedMmd, MmdParams, MmdStatistic};
pub use mmd_blocked::{BlockedMmd, BlockedNull, Blocking};
pub use mmd_null::{MmdPermutation, Relabellings};
pub use report::{HsicReport, KernelReport, MmdReport, Outcome};
pub use resampling::{NullDistribution, check_alpha, check_draws, resampling_p_value};

pub use select::{
    AggParams, BklParams, Families, LengthscaleSelection, SelectRule, SelectedKernels, TestKind,
};
pub use witness::{FittedWitness, Witness, WitnessParams};
