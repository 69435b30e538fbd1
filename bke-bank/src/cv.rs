//! K-fold cross-validation of BaNK and the baselines (seed 001 §4.2, 4.3): regression is scored by the
//! mean squared error on **standardised** targets (the whole target column is standardised once, as in
//! the seed's tables), classification by the error rate (threshold ½ on the predictive probability)
//! and, from the same held-out probabilities, the log-loss, Brier score and expected calibration
//! error with a reliability diagram ([`crate::calibration`]).
//! Folds come from a seeded shuffle; the standard error is `sd(fold scores)/√K`. Every method sees
//! the same folds, so two results can be compared with paired tests ([`crate::compare`]).

use crate::alac::AlacParams;
use crate::baselines::{Baseline, BaselineParams};
use crate::calibration::ProbabilisticScores;
use crate::error::{BankError, check_labels, invalid};
use crate::features::target_moments;
use crate::gbdt::GbdtParams;
use crate::gp::GpArdParams;
use crate::gp_classify::GpClassParams;
use crate::params::{BankParams, Task};
use crate::relevance::RelevanceFit;
use crate::rfo::RfoParams;
use crate::svm::SvcParams;
use bke_core::{Dataset, Estimator, Params, Points, Predict, Progress, Valid};
use bke_linalg::Backend;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

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
    /// A la Carte (regression only).
    Alac,
    /// Random-frequency optimisation (classification only).
    Rfo,
    /// Gradient-boosted trees.
    Gbdt,
    /// Exact GP with ARD (regression only).
    Gp,
    /// GP classification, Laplace approximation, RBF kernel on a grid (classification only).
    Gpc,
    /// RBF support-vector classification, `C` and width tuned, Platt probabilities
    /// (classification only).
    Svc,
}

impl Method {
    /// Every method, in table order.
    pub const ALL: [Method; 9] = [
        Method::Rks,
        Method::Mkl,
        Method::Alac,
        Method::Rfo,
        Method::Gbdt,
        Method::Gp,
        Method::Gpc,
        Method::Svc,
        Method::Bank,
    ];

    /// Whether the method handles `task`.
    pub fn supports(self, task: Task) -> bool {
        match self {
            Method::Alac | Method::Gp => task == Task::Regression,
            Method::Rfo | Method::Gpc | Method::Svc => task == Task::Classification,
            _ => true,
        }
    }

    /// Parses a method name (see [`Method::name`]).
    pub fn parse(s: &str) -> Result<Method, BankError> {
        let names: Vec<&str> = Self::ALL.iter().map(|m| m.name()).collect();
        Self::ALL.into_iter().find(|m| m.name() == s.to_ascii_lowercase()).ok_or_else(|| {
            bke_core::CoreError::InvalidChoice {
                what: format!("method '{s}'"),
                reason: format!("must be one of {}", names.join(", ")),
            }
            .into()
        })
    }

    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Bank => "bank",
            Method::Rks => "rks",
            Method::Mkl => "mkl",
            Method::Alac => "alac",
            Method::Rfo => "rfo",
            Method::Gbdt => "gbdt",
            Method::Gp => "gp",
            Method::Gpc => "gpc",
            Method::Svc => "svc",
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
    /// The method.
    pub method: Method,
    /// The task.
    pub task: Task,
    /// The method's number of frequencies (0 for methods without random features).
    pub frequencies: usize,
    /// Classification: log-loss, Brier score and ECE per fold and the reliability diagram of the
    /// held-out probabilities (absent for regression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probabilistic: Option<ProbabilisticScores>,
    /// BaNK: each fold's input-relevance fit in fold order — whether it used per-input
    /// lengthscales and the held-out gain that decided it ([`crate::relevance`]), `None` for a fold
    /// whose relevance GP failed numerically (it kept one scale); empty for the other methods and
    /// where no fold fitted one (`--relevance off`, one input).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relevance: Vec<Option<RelevanceFit>>,
    /// The held-out prediction of every row (standardised target or probability), in row order.
    #[serde(skip)]
    pub predictions: Vec<f64>,
    /// The standardised target or label of every row, in row order.
    #[serde(skip)]
    pub targets: Vec<f64>,
}

/// Parameters of a cross-validation: the method, the folds, and each method's parameters (their
/// `task` and `seed` are replaced by the cross-validation's; fold `f` fits with seed `seed + f`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CvParams {
    /// The method.
    pub method: Option<Method>,
    /// The task.
    pub task: Task,
    /// Number of folds (at least 2). Default 5.
    pub folds: usize,
    /// Seed of the fold shuffle and of the fits.
    pub seed: u64,
    /// Fit the folds one after another instead of one per thread at a time (same results; for
    /// timing a single fit). Default `false`.
    pub sequential_folds: bool,
    /// BaNK's parameters.
    pub bank: BankParams,
    /// RKS/MKL parameters.
    pub baseline: BaselineParams,
    /// A la Carte parameters.
    pub alac: AlacParams,
    /// RFO parameters.
    pub rfo: RfoParams,
    /// Gradient-boosting parameters.
    pub gbdt: GbdtParams,
    /// GP-ARD parameters.
    pub gp: GpArdParams,
    /// GP classification parameters.
    pub gpc: GpClassParams,
    /// RBF SVC parameters.
    pub svc: SvcParams,
}

impl CvParams {
    /// Five folds of `method` with default parameters.
    pub fn new(method: Method, task: Task) -> Self {
        Self { method: Some(method), task, folds: 5, ..Default::default() }
    }

    fn method(&self) -> Method {
        self.method.unwrap_or(Method::Bank)
    }

    fn frequencies(&self) -> usize {
        match self.method() {
            Method::Bank => self.bank.frequencies,
            Method::Rks | Method::Mkl => self.baseline.frequencies,
            Method::Alac => self.alac.frequencies,
            Method::Rfo => self.rfo.frequencies,
            Method::Gbdt | Method::Gp | Method::Gpc | Method::Svc => 0,
        }
    }

    /// Fits the method on `train` (fold `fold`) and predicts at `test`: the predictive mean of the
    /// standardised target, or `P(y = 1)`; with BaNK's relevance fit.
    fn fit_predict<B: Backend>(
        &self,
        fold: usize,
        train: &Dataset,
        test: &Points,
        progress: &dyn Progress,
    ) -> Result<(Vec<f64>, Option<RelevanceFit>), BankError> {
        let seed = self.seed.wrapping_add(fold as u64);
        let task = self.task;
        let mean = match self.method() {
            Method::Bank => {
                let p = BankParams { seed, task, ..self.bank.clone() };
                let model = p.check()?.fit_with_progress::<B>(train, progress)?;
                let relevance = model.resolved.as_ref().and_then(|r| r.relevance.clone());
                return Ok((model.predict::<B>(test)?.mean, relevance));
            }
            Method::Rks | Method::Mkl => {
                let kind = if self.method() == Method::Rks { Baseline::Rks } else { Baseline::Mkl };
                let p = BaselineParams { seed, task, kind, ..self.baseline.clone() };
                p.check()?.fit::<B>(train)?.predict::<B>(test)?.mean
            }
            Method::Alac => {
                let p = AlacParams { seed, ..self.alac.clone() };
                p.check()?.fit_with_progress::<B>(train, progress)?.predict::<B>(test)?.mean
            }
            Method::Rfo => {
                let p = RfoParams { seed, ..self.rfo.clone() };
                p.check()?.fit::<B>(train)?.predict::<B>(test)?.mean
            }
            Method::Gbdt => {
                let p = GbdtParams { task, ..self.gbdt.clone() };
                p.check()?.fit_with_progress::<B>(train, progress)?.predict::<B>(test)?.mean
            }
            Method::Gp => self.gp.check()?.fit::<B>(train)?.predict::<B>(test)?.mean,
            Method::Gpc => {
                self.gpc.check()?.fit_with_progress::<B>(train, progress)?.predict::<B>(test)?.mean
            }
            Method::Svc => {
                let p = SvcParams { seed, ..self.svc.clone() };
                p.check()?.fit_with_progress::<B>(train, progress)?.predict::<B>(test)?.mean
            }
        };
        Ok((mean, None))
    }
}

impl Params for CvParams {
    type Error = BankError;

    fn validate(&self) -> Result<(), BankError> {
        if self.folds < 2 {
            return Err(invalid("folds", self.folds as f64, "cross-validation needs at least 2 folds"));
        }
        let m = self.method();
        if !m.supports(self.task) {
            return Err(bke_core::CoreError::InvalidChoice {
                what: format!("method '{}' for {:?}", m.name(), self.task),
                reason: "alac and gp are regression methods, rfo, gpc and svc are classification methods"
                    .into(),
            }
            .into());
        }
        match m {
            Method::Bank => self.bank.validate(),
            Method::Rks | Method::Mkl => self.baseline.validate(),
            Method::Alac => self.alac.validate(),
            Method::Rfo => self.rfo.validate(),
            Method::Gbdt => self.gbdt.validate(),
            Method::Gp => self.gp.validate(),
            Method::Gpc => self.gpc.validate(),
            Method::Svc => self.svc.validate(),
        }
    }
}

impl Estimator for CvParams {
    type Data = Dataset;
    type Fitted = CvResult;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<CvResult, BankError> {
        cross_validate::<B>(params, data, progress)
    }
}

/// The test indices of each of `k` folds of `n` rows (seeded shuffle, sizes differing by at most 1).
pub fn fold_indices(n: usize, k: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    (0..k).map(|f| idx.iter().enumerate().filter(|(i, _)| i % k == f).map(|(_, &v)| v).collect()).collect()
}

/// Reports the folds, which run concurrently, as one stage: each fold's latest fraction done, summed
/// in units of the folds' own steps (e.g. sweeps).
struct FoldProgress<'a> {
    inner: &'a dyn Progress,
    fold: usize,
    shared: &'a FoldsDone,
}

/// The fraction done of every fold (as `f64` bits) and the largest step count seen.
struct FoldsDone {
    fractions: Vec<AtomicU64>,
    steps: AtomicU64,
}

impl Progress for FoldProgress<'_> {
    fn update(&self, _stage: &str, done: u64, total: u64) {
        let s = self.shared;
        let fraction = if total == 0 { 1.0 } else { done as f64 / total as f64 };
        s.fractions[self.fold].store(fraction.to_bits(), Ordering::Relaxed);
        s.steps.fetch_max(total, Ordering::Relaxed);
        let k = s.fractions.len() as u64;
        let steps = s.steps.load(Ordering::Relaxed).max(1);
        let sum: f64 = s.fractions.iter().map(|f| f64::from_bits(f.load(Ordering::Relaxed))).sum();
        self.inner.update(&format!("{k}-fold cross-validation"), (sum * steps as f64) as u64, k * steps);
    }
    fn cancelled(&self) -> bool {
        self.inner.cancelled()
    }
}

/// `job(0), …, job(k − 1)` by as many workers as the current thread pool has threads (each job's
/// own parallel work runs on the same pool), handed out in order; stops handing out jobs after
/// the first error and returns it. The folds are independent fits with their own seeds, so
/// running them concurrently changes no result, and a fit that cannot use every core (BaNK's
/// sweep is sequential over frequencies) leaves the others to the next fold; at most one fold per
/// worker is alive, which bounds memory.
fn in_parallel<T: Send>(
    k: usize,
    job: impl Fn(usize) -> Result<T, BankError> + Sync,
) -> Result<Vec<T>, BankError> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<T, BankError>>>> = (0..k).map(|_| Mutex::new(None)).collect();
    rayon::scope(|scope| {
        for _ in 0..rayon::current_num_threads().clamp(1, k.max(1)) {
            scope.spawn(|_| {
                loop {
                    let f = next.fetch_add(1, Ordering::Relaxed);
                    if f >= k {
                        break;
                    }
                    let r = job(f);
                    if r.is_err() {
                        next.store(k, Ordering::Relaxed);
                    }
                    *slots[f].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    let mut out = Vec::with_capacity(k);
    // jobs are handed out in order and stop only after an error, so a job that never ran follows
    // an error that is returned here
    for r in slots.into_iter().filter_map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner())) {
        out.push(r?);
    }
    Ok(out)
}

fn cross_validate<B: Backend>(
    params: &CvParams,
    data: &Dataset,
    progress: &dyn Progress,
) -> Result<CvResult, BankError> {
    let (x, y, folds, task) = (data.x(), data.y(), params.folds, params.task);
    if x.len() / 2 < folds {
        return Err(BankError::TooFewRows {
            what: format!("{folds}-fold cross-validation (2 rows per fold)"),
            needed: folds.saturating_mul(2),
            found: x.len(),
        });
    }
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
    let all = Dataset::new(x.clone(), ys.clone())?;
    let shared =
        FoldsDone { fractions: (0..folds).map(|_| AtomicU64::new(0)).collect(), steps: AtomicU64::new(0) };
    let test_sets = fold_indices(x.len(), folds, params.seed);
    let run_fold = |f: usize| -> Result<(Vec<f64>, Option<RelevanceFit>), BankError> {
        progress.checkpoint()?;
        let test = &test_sets[f];
        let mut is_test = vec![false; x.len()];
        for &i in test {
            is_test[i] = true;
        }
        let train: Vec<usize> = (0..x.len()).filter(|&i| !is_test[i]).collect();
        let fp = FoldProgress { inner: progress, fold: f, shared: &shared };
        let fitted = params.fit_predict::<B>(f, &all.select(&train), &x.select(test), &fp)?;
        fp.update("done", 1, 1);
        Ok(fitted)
    };
    let fold_predictions = if params.sequential_folds {
        (0..folds).map(run_fold).collect::<Result<Vec<_>, _>>()?
    } else {
        in_parallel(folds, run_fold)?
    };
    let mut predictions = vec![0.0; x.len()];
    let mut scores = Vec::with_capacity(folds);
    let mut held_out = Vec::with_capacity(folds);
    let mut relevance = Vec::with_capacity(folds);
    for (test, (pred, fold_relevance)) in test_sets.iter().zip(fold_predictions) {
        relevance.push(fold_relevance);
        for (&i, &p) in test.iter().zip(&pred) {
            predictions[i] = p;
        }
        let yte: Vec<f64> = test.iter().map(|&i| ys[i]).collect();
        scores.push(score(task, &pred, &yte));
        held_out.push((pred, yte));
    }
    let k = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / k;
    let sd = (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    Ok(CvResult {
        metric: if task == Task::Regression { "mse".into() } else { "error".into() },
        mean,
        stderr: sd / k.sqrt(),
        folds: scores,
        method: params.method(),
        task,
        frequencies: params.frequencies(),
        probabilistic: (task == Task::Classification).then(|| ProbabilisticScores::of(&held_out)),
        relevance: if relevance.iter().any(Option::is_some) { relevance } else { Vec::new() },
        predictions,
        targets: ys,
    })
}

/// Mean squared error (regression) or error rate at threshold ½ (classification).
pub fn score(task: Task, pred: &[f64], y: &[f64]) -> f64 {
    let n = y.len().max(1) as f64;
    match task {
        Task::Regression => pred.iter().zip(y).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / n,
        Task::Classification => {
            pred.iter().zip(y).filter(|(p, y)| (**p > 0.5) != (**y > 0.5)).count() as f64 / n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

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
        let data = Dataset::new(Points::from_1d("x", &xs).unwrap(), y.clone()).unwrap();
        let mut p = CvParams::new(Method::Rks, Task::Regression);
        p.baseline.frequencies = 20;
        p.seed = 1;
        let r = p.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        assert_eq!(r.folds.len(), 5);
        assert!(r.mean < 0.05, "{r:?}");
        // the held-out predictions reproduce the fold scores
        let again = score(Task::Regression, &r.predictions, &r.targets);
        assert!((again - r.mean).abs() < 0.02);
        let small = data.select(&[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let e = p.check().unwrap().fit::<DefaultBackend>(&small).unwrap_err();
        assert!(e.to_string().contains("5-fold") && e.to_string().contains("needs at least 10"), "{e}");
        assert!(Method::parse("nope").unwrap_err().to_string().contains("bank"));
        assert!(r.probabilistic.is_none());
        assert!(serde_json::to_value(&r).unwrap().get("probabilistic").is_none());
    }

    /// Classification CV reports the probabilistic scores of each fold's held-out probabilities.
    #[test]
    fn classification_cv_reports_probabilistic_scores() {
        use crate::calibration::{ECE_BINS, brier_score, expected_calibration_error, log_loss};
        let xs: Vec<f64> = (0..80).map(|i| i as f64 / 8.0).collect();
        let y: Vec<f64> = xs.iter().map(|x| if (1.3 * x).sin() > 0.0 { 1.0 } else { 0.0 }).collect();
        let data = Dataset::new(Points::from_1d("x", &xs).unwrap(), y).unwrap();
        let mut p = CvParams::new(Method::Gbdt, Task::Classification);
        p.seed = 3;
        let r = p.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        let ps = r.probabilistic.as_ref().expect("classification has probabilistic scores");
        for (f, test) in fold_indices(80, 5, 3).iter().enumerate() {
            let pr: Vec<f64> = test.iter().map(|&i| r.predictions[i]).collect();
            let yt: Vec<f64> = test.iter().map(|&i| r.targets[i]).collect();
            assert!((ps.log_loss.folds[f] - log_loss(&pr, &yt)).abs() < 1e-12);
            assert!((ps.brier.folds[f] - brier_score(&pr, &yt)).abs() < 1e-12);
            assert!((ps.ece.folds[f] - expected_calibration_error(&pr, &yt, ECE_BINS)).abs() < 1e-12);
        }
        assert_eq!(ps.reliability.iter().map(|b| b.count).sum::<usize>(), 80);
        let json = serde_json::to_value(&r).unwrap();
        for key in ["metric", "mean", "stderr", "folds", "method"] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(json["probabilistic"]["log_loss"]["stderr"].is_number());
    }

    /// The folds run concurrently, one per thread: a BaNK classification CV gives the same result
    /// on one thread as on three, and an error in a fold is returned.
    #[test]
    fn concurrent_folds_do_not_change_the_result() {
        let xs: Vec<f64> = (0..90).map(|i| i as f64 / 9.0).collect();
        let y: Vec<f64> = xs.iter().map(|x| if (1.1 * x).sin() > 0.2 { 1.0 } else { 0.0 }).collect();
        let data = Dataset::new(Points::from_1d("x", &xs).unwrap(), y).unwrap();
        let mut p = CvParams::new(Method::Bank, Task::Classification);
        p.bank.frequencies = 8;
        p.bank.iterations = 6;
        let run = |p: &CvParams, threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| p.check().unwrap().fit::<DefaultBackend>(&data).unwrap())
        };
        let (one, three) = (run(&p, 1), run(&p, 3));
        assert_eq!(one.folds, three.folds);
        assert_eq!(one.predictions, three.predictions);
        let sequential = CvParams { sequential_folds: true, ..p };
        assert_eq!(run(&sequential, 3).predictions, three.predictions);
        let e =
            in_parallel(6, |f| if f == 3 { Err(invalid("fold", 3.0, "fails")) } else { Ok(f) }).unwrap_err();
        assert!(e.to_string().contains("fails"), "{e}");
        assert_eq!(in_parallel(4, Ok).unwrap(), vec![0, 1, 2, 3]);
    }
}
