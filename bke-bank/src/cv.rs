//! K-fold cross-validation of BaNK and the baselines (seed 001 §4.2, 4.3): regression is scored by the
//! mean squared error on **standardised** targets (the whole target column is standardised once, as in
//! the seed's tables), classification by the error rate (threshold ½ on the predictive probability).
//! Folds come from a seeded shuffle; the standard error is `sd(fold scores)/√K`.

use crate::baselines::{Baseline, BaselineParams, fit_baseline};
use crate::error::{BankError, check_labels, check_targets};
use crate::features::target_moments;
use crate::model::{BankParams, Task, fit};
use bke_core::Points;
use bke_linalg::Backend;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The learner being cross-validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// BaNK.
    Bank,
    /// Random kitchen sinks (RBF random features).
    Rks,
    /// Multiple kernel learning with random features.
    Mkl,
}

impl Method {
    /// Parses `bank`, `rks` or `mkl`.
    pub fn parse(s: &str) -> Result<Method, BankError> {
        match s.to_ascii_lowercase().as_str() {
            "bank" => Ok(Method::Bank),
            "rks" => Ok(Method::Rks),
            "mkl" => Ok(Method::Mkl),
            _ => Err(BankError::InvalidParameter {
                name: format!("method '{s}'"),
                value: f64::NAN,
                reason: "must be one of bank, rks, mkl".into(),
            }),
        }
    }

    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Bank => "bank",
            Method::Rks => "rks",
            Method::Mkl => "mkl",
        }
    }
}

/// The result of a cross-validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CvResult {
    /// `"mse"` (regression, standardised targets) or `"error"` (classification).
    pub metric: String,
    /// Mean over folds.
    pub mean: f64,
    /// Standard error of the mean over folds.
    pub stderr: f64,
    /// Per-fold scores.
    pub folds: Vec<f64>,
}

/// The test indices of each of `k` folds of `n` rows (seeded shuffle, sizes differing by at most 1).
pub fn fold_indices(n: usize, k: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    (0..k).map(|f| idx.iter().enumerate().filter(|(i, _)| i % k == f).map(|(_, &v)| v).collect()).collect()
}

/// Runs `folds`-fold cross-validation of `method`. `on_step` is called after every BaNK iteration and
/// after every baseline fold (for progress bars). The frequencies count and seed of `bank` and
/// `baseline` are used as given; fold `f` fits with seed `seed + f`.
#[allow(clippy::too_many_arguments)]
pub fn cross_validate<B: Backend>(
    x: &Points,
    y: &[f64],
    task: Task,
    method: Method,
    folds: usize,
    bank: &BankParams,
    baseline: &BaselineParams,
    seed: u64,
    mut on_step: impl FnMut(),
) -> Result<CvResult, BankError> {
    if folds < 2 {
        return Err(BankError::InvalidParameter {
            name: "folds".into(),
            value: folds as f64,
            reason: "cross-validation needs at least 2 folds".into(),
        });
    }
    if y.len() != x.len() {
        return Err(BankError::ShapeMismatch { what: "targets".into(), expected: x.len(), found: y.len() });
    }
    if x.len() < 2 * folds {
        return Err(BankError::TooFewRows {
            what: format!("{folds}-fold cross-validation (2 rows per fold)"),
            needed: 2 * folds,
            found: x.len(),
        });
    }
    check_targets(y)?;
    let ys: Vec<f64> = match task {
        Task::Regression => {
            let (m, s) = target_moments(y);
            y.iter().map(|v| (v - m) / s).collect()
        }
        Task::Classification => {
            check_labels(y)?;
            y.to_vec()
        }
    };
    let parts = fold_indices(x.len(), folds, seed);
    let mut scores = Vec::with_capacity(folds);
    for (f, test) in parts.iter().enumerate() {
        let mut is_test = vec![false; x.len()];
        for &i in test {
            is_test[i] = true;
        }
        let train: Vec<usize> = (0..x.len()).filter(|&i| !is_test[i]).collect();
        let (xtr, xte) = (x.select(&train), x.select(test));
        let ytr: Vec<f64> = train.iter().map(|&i| ys[i]).collect();
        let yte: Vec<f64> = test.iter().map(|&i| ys[i]).collect();
        let pred = match method {
            Method::Bank => {
                let p = BankParams { seed: bank.seed.wrapping_add(f as u64), ..bank.clone() };
                let model = fit::<B>(&xtr, &ytr, task, &p, |_| on_step())?;
                match task {
                    Task::Regression => model.predict_regression::<B>(&xte)?.mean,
                    Task::Classification => model.predict_probability::<B>(&xte)?,
                }
            }
            Method::Rks | Method::Mkl => {
                let kind = if method == Method::Rks { Baseline::Rks } else { Baseline::Mkl };
                let p = BaselineParams { seed: baseline.seed.wrapping_add(f as u64), ..baseline.clone() };
                let model = fit_baseline::<B>(&xtr, &ytr, task, kind, &p)?;
                on_step();
                model.predict::<B>(&xte)?
            }
        };
        let score = match task {
            Task::Regression => {
                pred.iter().zip(&yte).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / yte.len() as f64
            }
            Task::Classification => {
                pred.iter().zip(&yte).filter(|(p, y)| (**p > 0.5) != (**y > 0.5)).count() as f64
                    / yte.len() as f64
            }
        };
        scores.push(score);
    }
    let k = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / k;
    let sd = (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    Ok(CvResult {
        metric: if task == Task::Regression { "mse".into() } else { "error".into() },
        mean,
        stderr: sd / k.sqrt(),
        folds: scores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::Faer;

    #[test]
    fn folds_partition_the_rows() {
        let f = fold_indices(23, 5, 1);
        let mut all: Vec<usize> = f.concat();
        all.sort();
        assert_eq!(all, (0..23).collect::<Vec<_>>());
        assert!(f.iter().all(|p| p.len() == 4 || p.len() == 5));
    }

    #[test]
    fn cv_runs_and_rejects_too_few_rows() {
        let xs: Vec<f64> = (0..60).map(|i| i as f64 / 6.0).collect();
        let y: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
        let x = Points::from_1d("x", &xs).unwrap();
        let bp = BaselineParams { frequencies: 20, ..Default::default() };
        let r = cross_validate::<Faer>(
            &x,
            &y,
            Task::Regression,
            Method::Rks,
            5,
            &BankParams::default(),
            &bp,
            1,
            || {},
        )
        .unwrap();
        assert_eq!(r.folds.len(), 5);
        assert!(r.mean < 0.05, "{r:?}");
        let small = x.select(&[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let e = cross_validate::<Faer>(
            &small,
            &y[..9],
            Task::Regression,
            Method::Rks,
            5,
            &BankParams::default(),
            &bp,
            1,
            || {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("5-fold") && e.to_string().contains("needs at least 10"), "{e}");
    }
}
