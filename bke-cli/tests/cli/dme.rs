//! `bke dme loglik|fit|predict` end to end: the log marginal likelihood and its gradient against the
//! library, model files that `predict` reads back (TTGP, TTBLR, files of bke 0.1), inducing points,
//! and the errors of mismatched files and bad hyperparameters.

use crate::common::{bke, write_in};
use bke_core::{Kernel, KernelFamily, Points};
use bke_dme::TaskData;
use bke_dme::ttgp::{MarginalForm, TtgpParams, log_marginal};
use bke_linalg::DefaultBackend;
use serde_json::{Value, json};

/// A one-column CSV.
fn csv(tag: &str, name: &str, header: &str, v: &[f64]) -> String {
    let body: Vec<String> = v.iter().map(f64::to_string).collect();
    write_in(&format!("dme-{tag}"), name, &format!("{header}\n{}\n", body.join("\n"))).display().to_string()
}

/// The toy problem: 12 transformation pairs `x = 0.8 y + 0.05` and 9 task rows `z̃ ≈ sin(0.8 ỹ)`
/// (deterministic pseudo-noise keeps the optimum away from σ → 0).
fn problem() -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let y: Vec<f64> = (0..12).map(|i| -2.0 + 0.35 * i as f64).collect();
    let x: Vec<f64> = y.iter().map(|v| 0.8 * v + 0.05).collect();
    let yt: Vec<f64> = (0..9).map(|j| -1.9 + 0.45 * j as f64).collect();
    let z: Vec<f64> =
        yt.iter().enumerate().map(|(j, v)| (0.8 * v).sin() + 0.1 * (7.3 * j as f64).sin()).collect();
    (x, y, yt, z)
}

/// The data flags of [`problem`] (`short_z`: only 4 rows of z̃).
fn data_flags(tag: &str, short_z: bool) -> Vec<String> {
    let (x, y, yt, z) = problem();
    let z = if short_z { &z[..4] } else { &z[..] };
    let flags = [
        ("--x", csv(tag, "x.csv", "x", &x)),
        ("--y", csv(tag, "y.csv", "y", &y)),
        ("--ytilde", csv(tag, "yt.csv", "y", &yt)),
        ("--ztilde", csv(tag, if short_z { "zbad.csv" } else { "zt.csv" }, "z", z)),
    ];
    flags.into_iter().flat_map(|(f, p)| [f.to_string(), p]).collect()
}

const HYPER: [&str; 6] = ["--lengthscale-x", "0.9", "--lengthscale-y", "0.7", "--sigma", "0.2"];

fn run(cmd: &[&str], data: &[String], extra: &[&str]) -> (bool, Value, String) {
    let mut args: Vec<&str> = cmd.to_vec();
    args.extend(data.iter().map(String::as_str));
    args.extend_from_slice(extra);
    bke(&args)
}

#[test]
fn loglik_reports_the_library_value_and_natural_scale_gradient() {
    let data = data_flags("loglik", false);
    let (ok, out, err) = run(&["dme", "loglik"], &data, &[&HYPER[..], &["--form", "alternative"]].concat());
    assert!(ok, "{err}");
    let (x, y, yt, z) = problem();
    let task = TaskData::new(
        Points::from_1d("x", &x).unwrap(),
        Points::from_1d("y", &y).unwrap(),
        Points::from_1d("ỹ", &yt).unwrap(),
        z,
    )
    .unwrap();
    let se = |l: f64| Kernel::new(KernelFamily::SquaredExponential, vec![l]).unwrap();
    let h = TtgpParams { form: MarginalForm::Alternative, ..TtgpParams::tied(se(0.9), se(0.7), 0.2, 12, 9) };
    assert!((h.lambda - 0.04 / 12.0).abs() < 1e-15 && (h.epsilon - 0.04 / 9.0).abs() < 1e-15);
    let want = log_marginal::<DefaultBackend>(&task, &h).unwrap();
    assert!((out["log_marginal"].as_f64().unwrap() - want.value).abs() < 1e-12, "{out}");
    let gs = out["gradient"]["sigma"].as_f64().unwrap();
    assert!((gs - want.gradient[2] / 0.2).abs() < 1e-9 * gs.abs());
    assert!((out["gradient_log"]["lengthscale_x"][0].as_f64().unwrap() - want.gradient[0]).abs() < 1e-12);
    assert_eq!(out["hyperparameters"]["kernel"], "se");
    assert_eq!(out["form"], "alternative");
    assert_eq!((out["n"].as_u64(), out["m"].as_u64()), (Some(12), Some(9)));
}

#[test]
fn mismatched_files_and_bad_hyperparameters_are_reported() {
    let map = [&HYPER[..4], &["--form", "map"]].concat();
    let (ok, _, e) =
        run(&["dme", "loglik"], &data_flags("bad-rows", true), &[&map[..], &["--sigma", "0.2"]].concat());
    assert!(!ok && e.contains("9 rows") && e.contains('4'), "{e}");
    let (ok, _, e) =
        run(&["dme", "loglik"], &data_flags("bad-sigma", false), &[&map[..], &["--sigma", "-1"]].concat());
    assert!(!ok && e.contains("sigma") && e.contains("positive"), "{e}");
    let without_x: Vec<String> = data_flags("no-x", false)[2..].to_vec();
    let (ok, _, e) = run(&["dme", "loglik"], &without_x, &HYPER);
    assert!(!ok && e.contains("--x and --y are required"), "{e}");
}

/// `bke dme fit` with two starts and 50 iterations, then `extra`.
fn fit(tag: &str, extra: &[&str]) -> (bool, Value, String) {
    let flags =
        [&HYPER[..], &["--form", "map", "--seed", "1", "--starts", "2", "--max-iter", "50"], extra].concat();
    run(&["dme", "fit"], &data_flags(tag, false), &flags)
}

fn predict(tag: &str, model: &str, at: &[f64]) -> Value {
    let at = csv(tag, "at.csv", "x", at);
    let (ok, out, err) = bke(&["dme", "predict", "--model", model, "--at", &at]);
    assert!(ok, "{err}");
    out
}

fn scratch(tag: &str, name: &str) -> String {
    write_in(&format!("dme-{tag}"), name, "").display().to_string()
}

#[test]
fn fit_writes_a_model_that_predict_reads_back() {
    let model = scratch("fit", "model.json");
    let (ok, out, err) = fit("fit", &["--model-out", &model]);
    assert!(ok, "{err}");
    assert_eq!(out["start_log_marginals"].as_array().unwrap().len(), 2);
    let pred = predict("fit", &model, &[-0.5, 0.0, 0.5]);
    assert!((pred["log_marginal"].as_f64().unwrap() - out["log_marginal"].as_f64().unwrap()).abs() < 1e-8);
    assert_eq!(pred["mean"].as_array().unwrap().len(), 3);
    assert!(pred["variance"].as_array().unwrap().iter().all(|v| v.as_f64().unwrap() >= 0.0));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!((file["format"].as_str(), file["kind"].as_str()), (Some("bke-model"), Some("ttgp")));
}

#[test]
fn a_bke_0_1_model_file_still_predicts() {
    let legacy = json!({
        "format": "bke-dme-ttgp-1", "form": "map",
        "hyperparameters": {"kernel": "se", "lengthscale_x": [0.9], "lengthscale_y": [0.7],
                            "sigma": 0.2, "lambda": 0.01, "epsilon": 0.02},
        "x": [[-1.0], [0.0], [1.0]], "y": [[-1.2], [0.1], [0.9]],
        "y_tilde": [[-1.0], [0.5]], "z_tilde": [-0.8, 0.4],
    });
    let model = write_in("dme-legacy", "old.json", &legacy.to_string()).display().to_string();
    let pred = predict("legacy", &model, &[0.0]);
    assert!(pred["mean"][0].as_f64().unwrap().is_finite() && pred["log_marginal"].as_f64().is_some());
}

#[test]
fn parametric_fit_writes_a_ttblr_model_that_predict_reads_back() {
    let model = scratch("parametric", "model.json");
    let (ok, out, err) =
        fit("parametric", &["--model", "parametric", "--features", "30", "--model-out", &model]);
    assert!(ok, "{err}");
    assert_eq!(out["model"], "parametric");
    assert_eq!(out["start_log_marginals"].as_array().unwrap().len(), 2);
    let pred = predict("parametric", &model, &[-0.5, 0.5]);
    assert!((pred["log_marginal"].as_f64().unwrap() - out["log_marginal"].as_f64().unwrap()).abs() < 1e-9);
    // The fitted f tracks z̃ = sin(0.8 ỹ) through x = 0.8 y + 0.05.
    for (k, x) in [-0.5f64, 0.5].iter().enumerate() {
        assert!((pred["mean"][k].as_f64().unwrap() - (x - 0.05).sin()).abs() < 0.3, "{pred}");
    }
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(file["kind"], "ttblr");
    let (ok, _, e) = fit("parametric-bad", &["--model", "spline"]);
    assert!(!ok && e.contains("use gp or parametric"), "{e}");
}

#[test]
fn inducing_fit_reports_the_points_and_every_start() {
    let (ok, out, err) = fit("inducing", &["--inducing", "4"]);
    assert!(ok, "{err}");
    assert_eq!(out["form"], "alternative");
    assert_eq!(out["hyperparameters"]["inducing"].as_array().unwrap().len(), 4);
    assert_eq!(out["start_log_marginals"].as_array().unwrap().len(), 2);
}
