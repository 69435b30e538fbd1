//! # Causal discovery with learned kernels (seed 000 §5, Fig. 4; Flaxman, Neill & Smola 2015)
//!
//! Seed 000's last experiment learns the Markov equivalence class of the ozone data's causal graph
//! with the PC algorithm, where each conditional-independence test is a Gaussian-process regression
//! followed by HSIC with kernels chosen by BKL. This module builds that pipeline from three parts:
//!
//! 1. **Pre-whitening** ([`whiten`]): observations ordered in time are autocorrelated, which biases
//!    dependence tests (Flaxman et al. 2015). Each variable is regressed on the time index — by a GP
//!    ([`crate::gp`]) or an autoregression — and only the residuals are kept.
//! 2. **The kernel conditional-independence test** ([`ci`]): `X ⫫ Y | Z` is tested by regressing
//!    `X` on `Z` and `Y` on `Z` with GPs (hyperparameters by marginal likelihood), then testing the
//!    residuals for independence with HSIC ([`crate::hypothesis::hsic`]) under a permutation null, the
//!    lengthscale of each residual's kernel chosen by BKL (seed 000 §4.3), the median heuristic or
//!    fixed. With `Z = ∅` it is plain HSIC on `X` and `Y`.
//! 3. **The PC algorithm** ([`pc`]; Spirtes, Glymour & Scheines 2000), in the order-independent
//!    "stable" form of Colombo & Maathuis (2014): the skeleton by conditioning sets of increasing
//!    size with separating sets, v-structures (by the standard, conservative, majority or max-p rule,
//!    [`orient`]), then Meek's (1995) rules R1–R3 ([`graph`]), giving a CPDAG (a completed partially
//!    directed acyclic graph: the Markov equivalence class).
//!
//! The result, [`PcResult`], is a serde type: the JSON that `bke causal pc` prints. [`draw`] renders
//! a graph as SVG.
//!
//! ```
//! use bke_core::causal::{CausalData, PcParams};
//! use bke_core::hypothesis::LengthscaleSelection;
//! use bke_core::{Params, Points};
//! use bke_linalg::DefaultBackend;
//! // a chain x → y → z with noise: x and z are dependent, but independent given y
//! let n = 120;
//! let mut v = Vec::new();
//! for i in 0..n {
//!     let e = |k: f64| ((i as f64 * 12.9898 + k * 78.233).sin() * 43_758.545).fract(); // in (−1, 1)
//!     let x = e(1.0) * 3.0;
//!     let y = x + 0.5 * (2.0 * x).sin() + 0.5 * e(2.0);
//!     let z = y + 0.5 * e(3.0);
//!     v.extend([x, y, z]);
//! }
//! let data = CausalData::new(vec!["x".into(), "y".into(), "z".into()], Points::new("v", v, 3)?, None)?;
//! let mut params = PcParams::default();
//! params.ci.selection = LengthscaleSelection::median(Default::default()); // the fast single-kernel rule
//! params.ci.hsic.permutations = 200;
//! let result = params.check()?.fit::<DefaultBackend>(&data)?;
//! assert!(result.adjacent("x", "y") && result.adjacent("y", "z") && !result.adjacent("x", "z"));
//! # Ok::<(), bke_core::CoreError>(())
//! ```

pub mod ci;
mod data;
pub mod draw;
pub mod graph;
pub mod kci;
pub mod orient;
pub mod pc;
pub mod whiten;

pub use ci::{CiMethod, CiOutcome, CiParams, CiTester};
pub use data::CausalData;
pub use graph::{Pdag, Triple};
pub use kci::{KciNull, KciParams, ZRule};
pub use orient::Orientation;
pub use pc::{PcEdge, PcParams, PcResult, SeparatingSet, TestRecord, TripleRecord};
pub use whiten::{Prewhitening, VariableWhitening, WhiteningRecord};
