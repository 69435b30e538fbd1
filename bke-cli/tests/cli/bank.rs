//! `bke bank fit|predict|cv`: the JSON contract and the bad-input messages.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bke(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bke")).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bke-bank-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `bke bank COMMAND --data DATA --target y`, then `extra`.
fn bank(command: &str, data: &Path, extra: &[&str]) -> (bool, String, String) {
    let head = ["bank", command, "--data", data.to_str().unwrap(), "--target", "y"];
    bke(&[&head[..], extra].concat())
}

fn dataset(classify: bool) -> String {
    let mut s = String::from("a,b,y\n");
    for i in 0..60 {
        let a = (i as f64 * 0.37).sin() * 2.0;
        let b = (i as f64 * 0.91).cos();
        let y = if classify { f64::from(u8::from(a + b > 0.0)) } else { a.sin() + 0.5 * b };
        s.push_str(&format!("{a},{b},{y}\n"));
    }
    s
}

#[test]
fn fit_predict_cv_regression_and_classification() {
    let data = write("reg.csv", &dataset(false));
    let model = data.with_file_name("m.json");
    let m = model.to_str().unwrap();
    let fit = ["--frequencies", "8", "--iterations", "6", "--burn-in", "3", "--seed", "4", "--model-out", m];
    let (ok, out, err) = bank("fit", &data, &fit);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["frequencies"], 8);
    let (ok, out, err) =
        bke(&["bank", "predict", "--model", model.to_str().unwrap(), "--data", data.to_str().unwrap()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mean"].as_array().unwrap().len(), 60);
    assert!(v["variance"].as_array().unwrap().iter().all(|x| x.as_f64().unwrap() > 0.0));
    for method in ["bank", "rks", "mkl"] {
        let cv =
            ["--folds", "3", "--method", method, "--frequencies", "8", "--iterations", "4", "--seed", "1"];
        let (ok, out, err) = bank("cv", &data, &cv);
        assert!(ok, "{method}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["metric"], "mse");
        assert_eq!(v["folds"].as_array().unwrap().len(), 3);
        assert!(v["mean"].as_f64().unwrap() >= 0.0 && v["stderr"].as_f64().unwrap() >= 0.0);
        assert!(v.get("probabilistic").is_none());
        // BaNK's folds say whether their inputs got per-input lengthscales, and why
        match v.get("relevance") {
            Some(r) if method == "bank" => {
                let folds = r.as_array().unwrap();
                assert_eq!(folds.len(), 3);
                // null: the fold's relevance GP failed numerically, so it kept one scale
                let told = |f: &serde_json::Value| f["used"].is_boolean() && f["held_out_gain"].is_f64();
                assert!(folds.iter().all(|f| f.is_null() || told(f)) && folds.iter().any(told), "{r}");
            }
            r => assert!(method != "bank" && r.is_none(), "{method}: {r:?}"),
        }
    }
    let cdata = write("cls.csv", &dataset(true));
    let fit = ["--task", "classification", "--frequencies", "6", "--iterations", "4", "--model-out", m];
    let (ok, _, err) = bank("fit", &cdata, &fit);
    assert!(ok, "{err}");
    let (ok, out, _) =
        bke(&["bank", "predict", "--model", model.to_str().unwrap(), "--data", cdata.to_str().unwrap()]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["probability"].as_array().unwrap().iter().all(|p| (0.0..=1.0).contains(&p.as_f64().unwrap())));
    let (ok, out, err) =
        bank("cv", &cdata, &["--task", "classification", "--method", "rks", "--frequencies", "6"]);
    assert!(ok, "{err}");
    assert!(out.contains("\"error\""));
    // classification CV adds log-loss, Brier score and ECE (mean ± SE over folds) and the reliability
    // diagram; regression CV has none of them
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let prob = &v["probabilistic"];
    for key in ["log_loss", "brier", "ece"] {
        assert_eq!(prob[key]["folds"].as_array().unwrap().len(), 5, "{key}");
        assert!(prob[key]["mean"].as_f64().unwrap() >= 0.0 && prob[key]["stderr"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(prob["bins"], 15);
    let rows: u64 =
        prob["reliability"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(rows, 60);
}

#[test]
fn bad_input_names_the_problem() {
    let data = write("bad.csv", &dataset(false));
    let m = data.with_file_name("never.json");
    let m = m.to_str().unwrap();
    let fit_as = |target: &str, task: &str| {
        let data = data.to_str().unwrap();
        let tail = ["--task", task, "--model-out", m, "--iterations", "2"];
        bke(&[&["bank", "fit", "--data", data, "--target", target][..], &tail].concat())
    };
    let (ok, _, err) = fit_as("nope", "regression");
    assert!(!ok && err.contains("no column named 'nope'"), "{err}");
    let (ok, _, err) = fit_as("y", "classification");
    assert!(!ok && err.contains("line 2") && err.contains("0 or 1"), "{err}");
    // `bke bank fit` of the file `name` holding `text`.
    let fit_y = |name: &str, text: &str| bank("fit", &write(name, text), &["--model-out", m]);
    let (ok, _, err) = fit_y("nan.csv", "a,y\n1,2\n2,NaN\n");
    assert!(!ok && err.contains("line 3") && err.contains("not finite"), "{err}");
    let (ok, _, err) = fit_y("text.csv", "a,y\n1,2\n2,abc\n");
    assert!(!ok && err.contains("not a number"), "{err}");
    let tiny = write("tiny.csv", "a,y\n1,2\n2,3\n3,1\n4,5\n");
    let (ok, _, err) = bank("cv", &tiny, &["--method", "rks"]);
    assert!(!ok && err.contains("5-fold") && err.contains("needs at least 10"), "{err}");
}
