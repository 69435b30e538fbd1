//! End-to-end tests of `bke causal pc`: the JSON contract, the SVG, pre-whitening, and errors.

use std::path::Path;

use crate::common::{bke, write_in};

/// A collider a → c ← b with c → d, a time column t, nonlinear mechanisms and uniform noise (a
/// fixed linear-congruential stream, so the file is the same on every run).
fn collider_csv() -> String {
    let mut state: u64 = 12345;
    let mut u = move || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut s = String::from("a,b,c,d,t\n");
    for i in 0..160 {
        let (a, b) = (2.0 * u(), 2.0 * u());
        let c = a.sin() + 0.5 * b * b + 0.3 * u();
        let d = 2.0 * (1.5 * c).tanh() + 0.3 * u();
        s.push_str(&format!("{a},{b},{c},{d},{i}\n"));
    }
    s
}

/// `bke causal pc` on the four variables of the collider file `f` with gp-hsic, the median selection
/// and 200 permutations, then `extra` (these tests check PC's output; on this collider KCI removes
/// `a − c` given `d`, nearly a function of `c`: see bke-core's PC tests).
fn pc_on_all(f: &Path, extra: &[&str]) -> (bool, serde_json::Value, String) {
    let f = f.to_str().unwrap();
    let base = [
        "causal",
        "pc",
        "--data",
        f,
        "--columns",
        "a,b,c,d",
        "--ci",
        "gp-hsic",
        "--select",
        "median",
        "--permutations",
        "200",
    ];
    bke(&[&base[..], extra].concat())
}

#[test]
fn pc_prints_the_cpdag_tests_and_an_svg() {
    let f = write_in("causal", "collider.csv", &collider_csv());
    let svg = f.with_file_name("graph.svg");
    let (ok, json, err) =
        pc_on_all(&f, &["--alpha", "0.05", "--svg", svg.to_str().unwrap(), "--threads", "1"]);
    assert!(ok, "{err}");
    assert_eq!(json["nodes"], serde_json::json!(["a", "b", "c", "d"]));
    assert_eq!(json["selection"], "median");
    assert_eq!(json["ci_test"], "gp-hsic");
    assert_eq!(json["alpha"], 0.05);
    let edges = json["edges"].as_array().unwrap();
    let has = |from: &str, to: &str| {
        edges.iter().any(|e| e["from"] == from && e["to"] == to && e["directed"] == true)
    };
    assert!(has("a", "c") && has("b", "c") && has("c", "d"), "{edges:?}");
    let t = &json["tests"][0];
    for key in ["x", "y", "given", "p_value", "lengthscales"] {
        assert!(!t[key].is_null(), "tests[0].{key} missing: {t}");
    }
    assert_eq!(json["prewhitening"]["method"], "none");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg") && drawn.matches("<ellipse").count() == 4);
}

#[test]
fn pc_prewhitens_against_the_time_column() {
    let f = write_in("causal", "timed.csv", &collider_csv());
    let args = ["causal", "pc", "--data", f.to_str().unwrap(), "--time", "t", "--select", "median"];
    let (ok, json, err) =
        bke(&[&args[..], &["--prewhiten", "ar:1", "--permutations", "100", "--max-condition", "0"]].concat());
    assert!(ok, "{err}");
    assert_eq!(json["prewhitening"]["method"], "ar:1");
    assert_eq!(json["prewhitening"]["rows"], 159);
    assert_eq!(json["nodes"].as_array().unwrap().len(), 4, "the time column is not a variable");
    assert!(json["tests"].as_array().unwrap().iter().all(|t| t["given"].as_array().unwrap().is_empty()));
}

#[test]
fn pc_errors_name_the_problem() {
    let f = write_in("causal", "bad.csv", &collider_csv());
    let path = f.to_str().unwrap();
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--columns", "a,zz"]);
    assert!(!ok && err.contains("no column named 'zz'"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--columns", "a,t", "--time", "t"]);
    assert!(!ok && err.contains("also among the variables"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--alpha", "1.5"]);
    assert!(!ok && err.contains("alpha"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--prewhiten", "arma", "--time", "t"]);
    assert!(!ok && err.contains("pre-whitening"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--columns", "a"]);
    assert!(!ok && err.contains("at least 2 variables"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--ci", "fisher-z"]);
    assert!(!ok && err.contains("use auto, kci, rcit or gp-hsic"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--ci", "kci", "--kci-null", "chi2"]);
    assert!(!ok && err.contains("gamma or spectral"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--kci-z", "gp"]);
    assert!(!ok && err.contains("learned or median"), "{err}");
    let (ok, _, err) = bke(&["causal", "pc", "--data", path, "--kci-hyper-points", "3"]);
    assert!(!ok && err.contains("KCI hyperparameter rows") && err.contains("at least 10"), "{err}");
}

#[test]
fn pc_with_kci_and_rcit_finds_the_collider() {
    let f = write_in("causal", "kci.csv", &collider_csv());
    for (test, null, z) in [("kci", "gamma", "median"), ("rcit", "spectral", "learned")] {
        let (ok, json, err) = bke(&[
            "causal",
            "pc",
            "--data",
            f.to_str().unwrap(),
            "--columns",
            "a,b,c",
            "--select",
            "median",
            "--ci",
            test,
            "--kci-null",
            null,
            "--kci-z",
            z,
        ]);
        assert!(ok, "{err}");
        assert_eq!(json["ci_test"], test);
        assert_eq!(json["selection"], "median", "kci and rcit default to median-heuristic kernels");
        let edges = json["edges"].as_array().unwrap();
        let has =
            |from: &str| edges.iter().any(|e| e["from"] == from && e["to"] == "c" && e["directed"] == true);
        assert!(has("a") && has("b") && edges.len() == 2, "{test}: {edges:?}");
    }
}

#[test]
fn pc_defaults_to_kci_with_the_median_heuristic_and_gp_hsic_to_bkl_bayes() {
    let f = write_in("causal", "default.csv", &collider_csv());
    let base = ["causal", "pc", "--data", f.to_str().unwrap(), "--columns", "a,c", "--permutations", "50"];
    let (ok, json, err) = bke(&base);
    assert!(ok, "{err}");
    assert_eq!((json["ci_test"].as_str(), json["selection"].as_str()), (Some("kci"), Some("median")));
    assert_eq!(json["edges"].as_array().unwrap().len(), 1, "a → c is strong: {json}");
    let (ok, json, err) = bke(&[&base[..], &["--ci", "gp-hsic"]].concat());
    assert!(ok, "{err}");
    assert_eq!(json["selection"], "bkl-bayes");
    let (ok, json, err) = bke(&[&base[..], &["--ci", "gp-hsic", "--select", "bkl"]].concat());
    assert!(ok, "{err}");
    assert_eq!(json["selection"], "bkl");
}

#[test]
fn pc_orientation_rules_report_their_votes() {
    let f = write_in("causal", "rules.csv", &collider_csv());
    let (ok, json, err) = pc_on_all(&f, &["--orientation", "conservative"]);
    assert!(ok, "{err}");
    assert_eq!(json["orientation"], "conservative");
    let triples = json["triples"].as_array().unwrap();
    let ab = triples.iter().find(|t| t["x"] == "a" && t["via"] == "c" && t["y"] == "b").unwrap();
    assert_eq!(ab["decision"], "collider", "{triples:?}");
    assert_eq!(ab["sets_with"], 0);
    let phases: Vec<&str> =
        json["tests"].as_array().unwrap().iter().map(|t| t["phase"].as_str().unwrap()).collect();
    assert!(phases.contains(&"skeleton") && phases.contains(&"orientation"));
    let (ok, json, err) = pc_on_all(&f, &[]);
    assert!(ok, "{err}");
    assert_eq!(json["orientation"], "majority", "the default rule");
    let (ok, json, err) = pc_on_all(&f, &["--orientation", "standard"]);
    assert!(ok, "{err}");
    assert!(json["tests"].as_array().unwrap().iter().all(|t| t["phase"] == "skeleton"));
    let (ok, _, err) = pc_on_all(&f, &["--orientation", "cpc"]);
    assert!(!ok && err.contains("orientation rule"), "{err}");
}
