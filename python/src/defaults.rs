//! `_bke.defaults()`: the library's defaults, by the Python keyword names, so the signatures of
//! `python/bke/` read them instead of restating them (each model's `…Params::default()` is the one
//! source; a test compares the signatures with this dict).

use bke_bank::BankParams;
use bke_bank::baselines::BaselineParams;
use bke_core::Choice;
use bke_core::bayes::SampleParams;
use bke_core::causal::PcParams;
use bke_core::density::KernelStudentTParams;
use bke_core::embedding::EmbeddingParams;
use bke_core::hypothesis::{AggParams, BklParams, HsicParams, LengthscaleSelection, MmdParams};
use bke_dme::herding::HerdingParams;
use bke_dme::kbr::KbrParams;
use bke_dme::learn::MultiStartOptions;
use bke_dme::ttgp::TtgpParams;
use bke_linalg::BackendKind;
use pyo3::prelude::*;
use serde_json::{Value, json};

/// The defaults as JSON: `backend`, then one object of keyword defaults per section (`selection`,
/// `mmd`, `hsic`, `embedding`, `sample`, `bank`, `baseline`, `density`, `ttgp`, `lfi`, `pc`).
fn defaults_json() -> Value {
    let (mmd, hsic, bkl) = (MmdParams::default(), HsicParams::default(), BklParams::default());
    let select = LengthscaleSelection::default().rule().map(Choice::name);
    let agg = AggParams::default();
    let emb = EmbeddingParams::default();
    let sample = SampleParams::default();
    let (bank, baseline) = (BankParams::default(), BaselineParams::default());
    let density = KernelStudentTParams::default();
    let (ttgp, search) = (TtgpParams::default(), MultiStartOptions::default());
    let kbr = KbrParams::default();
    let pc = PcParams::default();
    json!({
        "backend": BackendKind::default_kind().name(),
        "selection": {
            "select": select, "median_convention": Choice::name(bke_core::MedianConvention::default()),
            "bkl_landmarks": bkl.landmarks, "bkl_tau2": bkl.tau2, "bkl_prior": bkl.prior.name(),
            "agg_weights": agg.weights.name(), "agg_kernels": agg.families.name(),
        },
        "mmd": {"statistic": mmd.statistic.name(), "null": mmd.null.name(), "permutations": mmd.permutations,
                "alpha": mmd.alpha, "seed": mmd.seed, "dense": mmd.dense},
        "hsic": {"statistic": hsic.statistic.name(), "null": hsic.null.name(),
                 "permutations": hsic.permutations, "alpha": hsic.alpha, "seed": hsic.seed,
                 "dense": hsic.dense},
        "embedding": {"tau2": emb.tau2, "learn_tau2": emb.learn_tau2, "prior": emb.prior.name(),
                      "jacobian": emb.jacobian, "ard": emb.ard, "grid_points": emb.grid_points,
                      "max_starts": emb.max_starts, "seed": emb.seed},
        "sample": {"chains": sample.nuts.chains, "draws": sample.nuts.draws, "warmup": sample.nuts.warmup,
                   "lengthscale_prior": sample.lengthscale_prior.name(),
                   "tau2_prior": sample.tau2_prior.name(), "max_depth": sample.nuts.max_depth,
                   "target_accept": sample.nuts.target_accept},
        "bank": {"frequencies": bank.frequencies, "iterations": bank.iterations, "samples": bank.samples,
                 "seed": bank.seed, "relevance": bank.relevance.name()},
        "baseline": {"frequencies": baseline.frequencies, "scales": baseline.scales,
                     "standardize_inputs": baseline.standardize_inputs, "seed": baseline.seed},
        "density": {"kernel": density.family.spec(), "normalise": density.normalise,
                    "folds": density.select.folds, "margin": density.select.margin,
                    "seed": density.select.seed},
        "ttgp": {"kernel": ttgp.kernel_x.family().spec(), "lengthscale_x": ttgp.kernel_x.lengthscales()[0],
                 "lengthscale_y": ttgp.kernel_y.lengthscales()[0], "sigma": ttgp.sigma,
                 "form": ttgp.form.name(), "starts": search.starts, "spread": search.spread,
                 "max_iter": search.lbfgs.max_iter, "seed": search.seed},
        "lfi": {"herd": HerdingParams::default().samples, "continuous": HerdingParams::default().continuous,
                "starts": search.starts, "seed": search.seed, "kbr_variant": kbr.variant.name(),
                "kbr_inverse": kbr.inverse.name()},
        "pc": {"alpha": pc.alpha, "prewhiten": pc.prewhiten.name(), "ci": pc.ci.method.name(),
               "kci_null": pc.ci.kci.null.name(), "kci_z": pc.ci.kci.z_rule.name(),
               "kci_hyper_points": pc.ci.kci.hyper_points, "orientation": pc.orientation.name(),
               "permutations": pc.ci.hsic.permutations, "seed": pc.ci.hsic.seed},
    })
}

/// The library's defaults by the Python keyword names: `{"backend": "faer", "mmd": {...}, ...}`.
#[pyfunction]
pub fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("json")?.call_method1("loads", (defaults_json().to_string(),))
}
