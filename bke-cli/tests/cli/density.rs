//! `bke density …` end to end: the JSON contract of issue 8, the model file (format, kind, the bke
//! 0.1 layout), sampling, and error messages.

use std::path::PathBuf;

use crate::common::bke;

fn write(name: &str, body: &str) -> PathBuf {
    crate::common::write_in("density", name, body)
}

fn data() -> PathBuf {
    let rows: String = (0..30).map(|i| format!("{},{}\n", (i as f64 * 0.9).sin(), i % 4)).collect();
    write("d.csv", &format!("a,b\n{rows}"))
}

/// fit → model file → eval: the fields of issue 8, the envelope of the model file, and eval's log
/// densities (finite beyond the box too) on another backend.
#[test]
fn fit_then_eval_round_trip() {
    let (d, q) = (data(), write("q.csv", "a,b\n0.0,1\n0.5,1\n100.0,1\n"));
    let model = d.with_file_name("m.json");
    let (ok, j, err) = bke(&[
        "density",
        "fit",
        "--data",
        d.to_str().unwrap(),
        "--columns",
        "a",
        "--folds",
        "3",
        "--model-out",
        model.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    for f in ["n", "dim", "alpha", "beta", "sigma0_sq", "cv_log_lik", "log_z", "normaliser_rel_err"] {
        assert!(j[f].is_number(), "{f}: {j}");
    }
    assert_eq!((j["normalised"].as_bool(), j["kernel"].as_str()), (Some(true), Some("se")));
    assert_eq!(j["columns"], serde_json::json!(["a"]));
    assert!(j["domain"]["lower"].is_array() && j["lengthscales"].is_array());
    let text = std::fs::read_to_string(&model).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (file["format"].as_str(), file["kind"].as_str(), file["version"].as_u64()),
        (Some("bke-model"), Some("density"), Some(2))
    );
    // `bke density eval` of the model at the queries, then `extra`.
    let eval = |extra: &[&str]| {
        let (model, q) = (model.to_str().unwrap(), q.to_str().unwrap());
        bke(&[&["density", "eval", "--model", model, "--at", q][..], extra].concat())
    };
    let (ok, e, err) = eval(&["--backend", "nalgebra"]);
    assert!(ok, "{err}");
    assert_eq!(e.as_object().unwrap().len(), 2, "exactly log_density and normalised: {e}");
    assert_eq!(e["normalised"], true);
    // Far beyond the box the density continues with its tails: finite, no warning.
    assert!(e["log_density"][0].is_number() && e["log_density"][2].is_number(), "{e}");
    assert!(!err.contains("outside the normalisation box"), "{err}");
    // Sampling from the file: reproducible.
    let s = |seed: &str| {
        bke(&["density", "sample", "--model", model.to_str().unwrap(), "--n", "20", "--seed", seed])
    };
    let ((ok, a, err), (_, b, _)) = (s("3"), s("3"));
    assert!(ok, "{err}");
    assert_eq!(a["samples"].as_array().map(Vec::len), Some(20));
    assert_eq!(a["samples"], b["samples"]);
    // The wrong number of query columns names the model's columns.
    let (ok, _, err) = eval(&["--columns", "a,b"]);
    assert!(!ok && err.contains("fitted on 1 column(s): a"), "{err}");
}

/// A model file written by bke 0.1 (`"format": "bke-density-v1"`) still evaluates, with its box-only
/// density (`null`, −∞, outside the box, and a warning); a model file of
/// another kind is refused naming both kinds.
#[test]
fn legacy_files_load_and_other_kinds_are_refused() {
    let legacy = write(
        "old.json",
        r#"{"format": "bke-density-v1", "columns": ["a"], "kernel": "se", "lengthscales": [0.5],
            "alpha": 1.0, "beta": 0.01, "sigma0_sq": 1.0, "data": [[0.0], [0.3], [1.0], [1.2]],
            "normalisation": {"lower": [-1.0], "upper": [2.0], "log_z": 0.5, "rel_err": 1e-8,
                              "converged": true, "panels": 32, "evaluations": 768},
            "cv_log_lik": -1.2}"#,
    );
    let q = write("q1.csv", "a\n0.2\n3.0\n");
    let (ok, e, err) =
        bke(&["density", "eval", "--model", legacy.to_str().unwrap(), "--at", q.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(e["log_density"][0].is_number() && e["log_density"][1].is_null(), "{e}");
    let other = write(
        "bank.json",
        r#"{"format": "bke-model", "kind": "bank-regression", "version": 1, "model": {}}"#,
    );
    let (ok, _, err) =
        bke(&["density", "eval", "--model", other.to_str().unwrap(), "--at", q.to_str().unwrap()]);
    assert!(!ok && err.contains("'bank-regression'") && err.contains("'density'"), "{err}");
}

#[test]
fn bad_hyperparameters_are_clear_errors() {
    let d = write("e.csv", "a,b\n0,1\n1,0\n2,2\n0.5,0.3\n");
    let out = d.with_file_name("e.json");
    let run = |extra: &[&str]| {
        let mut args =
            vec!["density", "fit", "--data", d.to_str().unwrap(), "--model-out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        bke(&args)
    };
    let fixed = ["--lengthscale", "1", "--beta", "0.1"];
    for (extra, needle) in [
        (vec!["--alpha", "1", "--sigma0-sq", "1"], "improper"),
        (vec!["--alpha", "2", "--sigma0-sq", "0"], "sigma0_sq"),
        (vec!["--alpha", "2", "--sigma0-sq", "1", "--kernel", "cauchy"], "kernel"),
    ] {
        let mut args = fixed.to_vec();
        args.extend(extra);
        let (ok, _, err) = run(&args);
        assert!(!ok && err.contains(needle), "{args:?}: {err}");
        assert!(!out.exists(), "no model file after a failed fit");
    }
    let (ok, j, err) = run(&["--lengthscale", "1", "--beta", "1", "--alpha", "2", "--sigma0-sq", "1"]);
    assert!(ok, "{err}");
    assert!(j["cv_log_lik"].is_null() && out.exists());
}
