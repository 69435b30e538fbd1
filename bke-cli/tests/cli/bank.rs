//! `bke bank fit|predict|cv`: the JSON contract and the bad-input messages.

use std::path::PathBuf;
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
    let dir = std::env::temp_dir().join(format!("bke-bank-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
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
    let (ok, out, err) = bke(&[
        "bank",
        "fit",
        "--data",
        data.to_str().unwrap(),
        "--target",
        "y",
        "--frequencies",
        "8",
        "--iterations",
        "6",
        "--burn-in",
        "3",
        "--seed",
        "4",
        "--model-out",
        model.to_str().unwrap(),
    ]);
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
        let (ok, out, err) = bke(&[
            "bank",
            "cv",
            "--data",
            data.to_str().unwrap(),
            "--target",
            "y",
            "--folds",
            "3",
            "--method",
            method,
            "--frequencies",
            "8",
            "--iterations",
            "4",
            "--seed",
            "1",
        ]);
        assert!(ok, "{method}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["metric"], "mse");
        assert_eq!(v["folds"].as_array().unwrap().len(), 3);
        assert!(v["mean"].as_f64().unwrap() >= 0.0 && v["stderr"].as_f64().unwrap() >= 0.0);
    }
    let cdata = write("cls.csv", &dataset(true));
    let (ok, _, err) = bke(&[
        "bank",
        "fit",
        "--data",
        cdata.to_str().unwrap(),
        "--target",
        "y",
        "--task",
        "classification",
        "--frequencies",
        "6",
        "--iterations",
        "4",
        "--model-out",
        model.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let (ok, out, _) =
        bke(&["bank", "predict", "--model", model.to_str().unwrap(), "--data", cdata.to_str().unwrap()]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["probability"].as_array().unwrap().iter().all(|p| (0.0..=1.0).contains(&p.as_f64().unwrap())));
    let (ok, out, err) = bke(&[
        "bank",
        "cv",
        "--data",
        cdata.to_str().unwrap(),
        "--target",
        "y",
        "--task",
        "classification",
        "--method",
        "rks",
        "--frequencies",
        "6",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("\"error\""));
}

#[test]
fn bad_input_names_the_problem() {
    let data = write("bad.csv", &dataset(false));
    let m = data.with_file_name("never.json");
    let args = |target: &str, task: &str| {
        vec![
            "bank".to_string(),
            "fit".into(),
            "--data".into(),
            data.to_str().unwrap().into(),
            "--target".into(),
            target.into(),
            "--task".into(),
            task.into(),
            "--model-out".into(),
            m.to_str().unwrap().into(),
            "--iterations".into(),
            "2".into(),
        ]
    };
    let run = |a: Vec<String>| bke(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (ok, _, err) = run(args("nope", "regression"));
    assert!(!ok && err.contains("no column named 'nope'"), "{err}");
    let (ok, _, err) = run(args("y", "classification"));
    assert!(!ok && err.contains("line 2") && err.contains("0 or 1"), "{err}");
    let nan = write("nan.csv", "a,y\n1,2\n2,NaN\n");
    let (ok, _, err) = bke(&[
        "bank",
        "fit",
        "--data",
        nan.to_str().unwrap(),
        "--target",
        "y",
        "--model-out",
        m.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("line 3") && err.contains("not finite"), "{err}");
    let text = write("text.csv", "a,y\n1,2\n2,abc\n");
    let (ok, _, err) = bke(&[
        "bank",
        "fit",
        "--data",
        text.to_str().unwrap(),
        "--target",
        "y",
        "--model-out",
        m.to_str().unwrap(),
    ]);
    assert!(!ok && err.contains("not a number"), "{err}");
    let tiny = write("tiny.csv", "a,y\n1,2\n2,3\n3,1\n4,5\n");
    let (ok, _, err) =
        bke(&["bank", "cv", "--data", tiny.to_str().unwrap(), "--target", "y", "--method", "rks"]);
    assert!(!ok && err.contains("5-fold") && err.contains("needs at least 10"), "{err}");
}
