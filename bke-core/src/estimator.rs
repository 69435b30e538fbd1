//! The one way to use every model of bke (in the manner of linfa's `ParamGuard` → `Fit` → `Predict`).
//!
//! 1. **Hyperparameters** are a plain struct `XParams` with public fields and a `Default` (or builder
//!    methods). It implements [`Params`]: `validate` states every data-independent rule.
//! 2. **Checking**: [`Params::check`] returns [`Valid<XParams>`], the only way to build a `Valid`:
//!    a validated value that cannot be built invalid or changed afterwards (it derefs to `&XParams`).
//! 3. **Fitting**: the params implement [`Estimator`], and `Valid::fit::<B>(&data)` runs it with the
//!    linear-algebra backend `B`, returning the crate's fitted model (or its error, which wraps
//!    [`CoreError`]). Checks that need the data (dimensions, sample sizes) happen here.
//!    `fit_with_progress` takes a [`Progress`] sink for long fits; `fit` reports nowhere.
//! 4. **Using the fitted model**: [`Predict`] (mean/variance, probabilities, …), [`LogDensity`]
//!    (density models), or a `test` method (kernel tests). Fitted models carry no backend: every
//!    method takes `::<B>` again, so a model fitted on one backend can be used on another and
//!    written to a model file ([`crate::model_file`]).
//!
//! ```
//! use bke_core::estimator::{Estimator, Params, Predict};
//! use bke_core::{CoreError, Points};
//! use bke_linalg::{Backend, DefaultBackend};
//!
//! /// A toy estimator: predicts the training mean.
//! #[derive(Debug, Clone, Default)]
//! struct MeanParams { shrink: f64 }
//! struct MeanModel { mean: f64 }
//!
//! impl Params for MeanParams {
//!     type Error = CoreError;
//!     fn validate(&self) -> Result<(), CoreError> { bke_core::check_positive("shrink", 1.0 + self.shrink) }
//! }
//! impl Estimator for MeanParams {
//!     type Data = [f64];
//!     type Fitted = MeanModel;
//!     fn fit_valid<B: Backend>(p: &bke_core::estimator::Valid<Self>, y: &[f64], _: &dyn bke_core::Progress)
//!         -> Result<MeanModel, CoreError> {
//!         Ok(MeanModel { mean: y.iter().sum::<f64>() / (y.len() as f64 + p.shrink) })
//!     }
//! }
//! impl Predict for MeanModel {
//!     type Output = Vec<f64>;
//!     type Error = CoreError;
//!     fn predict<B: Backend>(&self, x: &Points) -> Result<Vec<f64>, CoreError> { Ok(vec![self.mean; x.len()]) }
//! }
//!
//! let model = MeanParams::default().check()?.fit::<DefaultBackend>(&[1.0, 2.0, 3.0])?;
//! assert_eq!(model.predict::<DefaultBackend>(&Points::from_1d("x", &[0.0])?)?, vec![2.0]);
//! # Ok::<(), CoreError>(())
//! ```

use crate::{CoreError, Points};
use bke_linalg::Backend;
use std::ops::Deref;

/// Hyperparameters of a model: a plain value with the rules it must satisfy.
pub trait Params: Clone {
    /// The error of the crate that owns the model (it converts from [`CoreError`]).
    type Error: From<CoreError>;

    /// Errors, naming the parameter and what it must satisfy, unless every value is valid.
    fn validate(&self) -> Result<(), Self::Error>;

    /// The validated hyperparameters, or the first rule they break.
    fn check(&self) -> Result<Valid<Self>, Self::Error> {
        self.validate()?;
        Ok(Valid(self.clone()))
    }
}

/// Hyperparameters that passed [`Params::check`]. The field is private: `check` is the only
/// constructor, and the value cannot be changed afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct Valid<P>(P);

impl<P> Deref for Valid<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.0
    }
}

impl<P> Valid<P> {
    /// The hyperparameters (still valid, but no longer marked so).
    pub fn into_inner(self) -> P {
        self.0
    }
}

/// A model that can be fitted to data with validated hyperparameters `Self`.
pub trait Estimator: Params {
    /// What the model is fitted to: [`Points`], a [`Dataset`], two samples, …
    type Data: ?Sized;
    /// The fitted model.
    type Fitted;

    /// Fits the model with backend `B`, reporting to `progress`. Called through [`Valid::fit`].
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Self::Data,
        progress: &dyn Progress,
    ) -> Result<Self::Fitted, Self::Error>;
}

impl<P: Estimator> Valid<P> {
    /// Fits the model with backend `B`.
    pub fn fit<B: Backend>(&self, data: &P::Data) -> Result<P::Fitted, P::Error> {
        P::fit_valid::<B>(self, data, &())
    }

    /// Fits the model with backend `B`, reporting progress (and polling for cancellation).
    pub fn fit_with_progress<B: Backend>(
        &self,
        data: &P::Data,
        progress: &dyn Progress,
    ) -> Result<P::Fitted, P::Error> {
        P::fit_valid::<B>(self, data, progress)
    }
}

/// A fitted model that predicts at new inputs.
pub trait Predict {
    /// What a prediction is: [`Prediction`] (mean and variance), class probabilities, …
    type Output;
    /// The error of the crate that owns the model.
    type Error: From<CoreError>;
    /// Predicts at the points `x` with backend `B`.
    fn predict<B: Backend>(&self, x: &Points) -> Result<Self::Output, Self::Error>;
}

/// A fitted density model.
pub trait LogDensity {
    /// The error of the crate that owns the model.
    type Error: From<CoreError>;
    /// `log p(x)` at every point of `x`, with backend `B`.
    fn log_density<B: Backend>(&self, x: &Points) -> Result<Vec<f64>, Self::Error>;
}

/// A predictive distribution summarised pointwise: mean and variance of the latent function (or of
/// the target, as the model documents).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prediction {
    /// Predictive mean at each point.
    pub mean: Vec<f64>,
    /// Predictive variance at each point.
    pub variance: Vec<f64>,
}

/// Inputs with one real target per point (regression), or a 0/1 label (classification).
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    x: Points,
    y: Vec<f64>,
}

impl Dataset {
    /// Errors unless there is one finite target per point.
    pub fn new(x: Points, y: Vec<f64>) -> Result<Self, CoreError> {
        if y.len() != x.len() {
            return Err(CoreError::DimensionMismatch {
                what: "targets (one per input row)".into(),
                expected: x.len(),
                found: y.len(),
            });
        }
        if let Some(row) = y.iter().position(|v| !v.is_finite()) {
            return Err(CoreError::NonFinite { what: "targets".into(), row, col: 0, value: y[row] });
        }
        Ok(Self { x, y })
    }

    /// The inputs.
    pub fn x(&self) -> &Points {
        &self.x
    }

    /// The targets.
    pub fn y(&self) -> &[f64] {
        &self.y
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The rows `idx`, in that order (for cross-validation folds).
    pub fn select(&self, idx: &[usize]) -> Dataset {
        Dataset { x: self.x.select(idx), y: idx.iter().map(|&i| self.y[i]).collect() }
    }
}

/// Two samples of the same dimension (the data of a two-sample test, or paired observations of
/// an independence test — see the test's docs for which).
#[derive(Debug, Clone, PartialEq)]
pub struct TwoSamples {
    /// The first sample.
    pub x: Points,
    /// The second sample.
    pub y: Points,
}

/// Where long computations report how far they are, and learn whether to stop.
///
/// Implemented by `()` (report nowhere, never cancel). The CLI draws progress bars; the Python
/// package checks for Ctrl-C in [`Progress::cancelled`].
pub trait Progress: Sync {
    /// `done` of `total` units of the stage `stage` are finished.
    fn update(&self, stage: &str, done: u64, total: u64);

    /// Whether the caller asked to stop; long loops then end with [`CoreError::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }

    /// `Err(Cancelled)` when [`Progress::cancelled`], for `?` in loops.
    fn checkpoint(&self) -> Result<(), CoreError> {
        if self.cancelled() { Err(CoreError::Cancelled) } else { Ok(()) }
    }
}

impl Progress for () {
    fn update(&self, _: &str, _: u64, _: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_validates() {
        let x = Points::from_1d("x", &[0.0, 1.0]).unwrap();
        assert!(Dataset::new(x.clone(), vec![1.0]).unwrap_err().to_string().contains("one per input row"));
        assert!(Dataset::new(x.clone(), vec![1.0, f64::NAN]).is_err());
        let d = Dataset::new(x, vec![1.0, 2.0]).unwrap();
        assert_eq!(d.select(&[1]).y(), &[2.0]);
    }

    #[test]
    fn cancelled_progress_stops() {
        struct Stop;
        impl Progress for Stop {
            fn update(&self, _: &str, _: u64, _: u64) {}
            fn cancelled(&self) -> bool {
                true
            }
        }
        assert_eq!(Stop.checkpoint(), Err(CoreError::Cancelled));
        assert_eq!(().checkpoint(), Ok(()));
    }
}
