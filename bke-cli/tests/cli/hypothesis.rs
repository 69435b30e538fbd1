//! End-to-end tests of `bke test mmd`, `bke test hsic`: the JSON contract of issue #4, defaults,
//! determinism across thread counts, and clear errors on bad input.

use crate::common::bke;
use std::path::PathBuf;

fn dir() -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bke-cli-hypothesis-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Deterministic pseudo-random CSV (a small LCG, no dependency): `rows × cols`, shifted by `shift`.
fn write_csv(name: &str, rows: usize, cols: usize, shift: f64, seed: u64) -> PathBuf {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let header: Vec<String> = (0..cols).map(|j| format!("c{j}")).collect();
    let mut text = header.join(",") + "\n";
    for _ in 0..rows {
        let row: Vec<String> = (0..cols)
            .map(|_| {
                // sum of 4 uniforms: roughly normal, sd ≈ 0.58
                let v: f64 = (0..4).map(|_| next()).sum::<f64>() - 2.0;
                format!("{}", v + shift)
            })
            .collect();
        text += &(row.join(",") + "\n");
    }
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn mmd_json_contract_and_defaults() {
    let p = write_csv("p.csv", 60, 2, 0.0, 1);
    let q = write_csv("q.csv", 50, 2, 0.8, 2);
    let (ok, j, err) = bke(&["test", "mmd", "--x", p.to_str().unwrap(), "--y", q.to_str().unwrap()]);
    assert!(ok, "{err}");
    for key in ["statistic", "p_value", "reject", "lengthscale", "selection", "null"] {
        assert!(j.get(key).is_some(), "missing {key}: {j}");
    }
    // the default selection is BKL-Bayes (issue 31), and the JSON says so
    assert_eq!(j["selection"], "bkl-bayes");
    assert!(j["kernels"].as_array().is_some_and(|k| k.len() > 1), "{j}");
    assert_eq!(j["null"], "permutation");
    assert_eq!(j["statistic_kind"], "unbiased");
    assert_eq!(j["permutations"], 1000);
    assert_eq!(j["alpha"], 0.05);
    assert_eq!(j["reject"], true, "a 0.8 shift with 60 + 50 points: {j}");
    let p_value = j["p_value"].as_f64().unwrap();
    assert!((p_value - 1.0 / 1001.0).abs() < 1e-12, "{j}");
    // fixed lengthscale, other statistics and nulls, single thread
    for extra in [
        vec!["--lengthscale", "0.7", "--threads", "1"],
        vec!["--statistic", "biased", "--null", "gamma", "--select", "median"],
        vec!["--select", "median", "--median-convention", "mooij"],
    ] {
        let mut args = vec!["test", "mmd", "--x", p.to_str().unwrap(), "--y", q.to_str().unwrap()];
        args.extend(extra.iter());
        let (ok, j, err) = bke(&args);
        assert!(ok, "{extra:?}: {err}");
        assert_eq!(j["reject"], true, "{extra:?}: {j}");
    }
}

#[test]
fn mmd_p_value_does_not_depend_on_threads() {
    let p = write_csv("t1.csv", 40, 1, 0.0, 3);
    let q = write_csv("t2.csv", 40, 1, 0.1, 4);
    let run = |threads: &str, null: &str| {
        let (ok, j, err) = bke(&[
            "test",
            "mmd",
            "--x",
            p.to_str().unwrap(),
            "--y",
            q.to_str().unwrap(),
            "--threads",
            threads,
            "--null",
            null,
            "--seed",
            "7",
        ]);
        assert!(ok, "{err}");
        (j["p_value"].as_f64().unwrap(), j["statistic"].as_f64().unwrap())
    };
    for null in ["permutation", "wild"] {
        assert_eq!(run("1", null), run("2", null), "{null}");
    }
}

#[test]
fn hsic_json_contract() {
    let xy = dir().join("xy.csv");
    // y = x² + small noise: dependent but uncorrelated
    let mut text = String::from("x,y\n");
    for i in 0..80 {
        let x = (i as f64 / 79.0) * 4.0 - 2.0;
        let noise = ((i * 7919 % 101) as f64 / 101.0 - 0.5) * 0.3;
        text += &format!("{x},{}\n", x * x + noise);
    }
    std::fs::write(&xy, text).unwrap();
    let f = xy.to_str().unwrap();
    let (ok, j, err) = bke(&["test", "hsic", "--x", f, "--x-columns", "x", "--y", f, "--y-columns", "y"]);
    assert!(ok, "{err}");
    for key in ["statistic", "p_value", "reject", "lengthscale_x", "lengthscale_y", "selection", "null"] {
        assert!(j.get(key).is_some(), "missing {key}: {j}");
    }
    assert_eq!(j["selection"], "bkl-bayes");
    assert_eq!(j["reject"], true, "{j}");
    let (ok, j, err) = bke(&[
        "test",
        "hsic",
        "--x",
        f,
        "--x-columns",
        "x",
        "--y",
        f,
        "--y-columns",
        "y",
        "--lengthscale-x",
        "1",
        "--lengthscale-y",
        "2",
        "--null",
        "gamma",
    ]);
    assert!(ok, "{err}");
    assert_eq!(j["selection"], "fixed");
    assert_eq!(j["lengthscale_y"], 2.0);
    assert_eq!(j["null"], "gamma");
}

#[test]
fn bad_input_gives_clear_errors() {
    let p = write_csv("b1.csv", 20, 2, 0.0, 5);
    let q3 = write_csv("b2.csv", 20, 3, 0.0, 6);
    let one = write_csv("b3.csv", 1, 2, 0.0, 7);
    let q19 = write_csv("b4.csv", 19, 2, 0.0, 8);
    let nan = dir().join("nan.csv");
    std::fs::write(&nan, "c0,c1\n1,2\n3,NaN\n4,5\n").unwrap();
    let (p, q3, one, q19, nan) = (
        p.to_str().unwrap(),
        q3.to_str().unwrap(),
        one.to_str().unwrap(),
        q19.to_str().unwrap(),
        nan.to_str().unwrap(),
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["test", "mmd", "--x", p, "--y", q3], "dimension"),
        (vec!["test", "mmd", "--x", p, "--y", one], "at least 2"),
        (vec!["test", "mmd", "--x", p, "--y", nan], "line 3"),
        (vec!["test", "mmd", "--x", p, "--y", p, "--permutations", "0"], "at least 1"),
        (vec!["test", "mmd", "--x", p, "--y", p, "--alpha", "1.5"], "between 0 and 1"),
        (vec!["test", "mmd", "--x", p, "--y", p, "--alpha", "0"], "between 0 and 1"),
        (vec!["test", "mmd", "--x", p, "--y", q19, "--null", "wild"], "pairs x_i with y_i"),
        (vec!["test", "mmd", "--x", p, "--y", p, "--lengthscale", "-1"], "lengthscale"),
        (vec!["test", "hsic", "--x", p, "--y", q19], "paired"),
        (vec!["test", "hsic", "--x", p, "--y", p, "--null", "normal"], "permutation, wild and gamma"),
    ];
    for (args, needle) in cases {
        let (ok, _, err) = bke(&args);
        assert!(!ok, "{args:?} should fail");
        assert!(err.contains(needle), "{args:?}: '{needle}' not in: {err}");
    }
}

#[test]
fn bkl_selection_is_reported() {
    let p = write_csv("k1.csv", 120, 2, 0.0, 11);
    let q = write_csv("k2.csv", 120, 2, 0.6, 12);
    let (ok, j, err) =
        bke(&["test", "mmd", "--x", p.to_str().unwrap(), "--y", q.to_str().unwrap(), "--select", "bkl"]);
    assert!(ok, "{err}");
    assert_eq!(j["selection"], "bkl");
    let l = j["lengthscale"].as_f64().unwrap();
    // the rule among optima (bke_core::hypothesis::select): the best pseudolikelihood between the
    // resolution limit and the median distance, a local optimum there or one of the limits
    let optima = j["bkl_local_optima"].as_array().unwrap();
    let resolution = j["bkl_resolution"].as_f64().unwrap();
    let upper = j["bkl_upper_limit"].as_f64().unwrap();
    let median = j["median_distance"].as_f64().unwrap();
    let best = optima.iter().map(|o| o["log_marginal"].as_f64().unwrap()).fold(f64::NEG_INFINITY, f64::max);
    assert!(resolution > 0.0 && l >= resolution && l <= upper.max(median) && upper <= median, "{j}");
    let is_optimum = optima.iter().any(|o| o["lengthscale"].as_f64().unwrap() == l);
    assert!(l == resolution || l == upper || is_optimum, "{j}");
    assert!(j["bkl_log_marginal"].as_f64().unwrap() <= best, "{j}");
    assert_eq!(j["bkl_landmarks"], 100);
    let (ok, j, err) = bke(&[
        "test",
        "hsic",
        "--x",
        p.to_str().unwrap(),
        "--y",
        q.to_str().unwrap(),
        "--select",
        "bkl",
        "--null",
        "gamma",
    ]);
    assert!(ok, "{err}");
    assert_eq!(j["selection"], "bkl");
    assert!(j["lengthscale_x"].as_f64().unwrap() > 0.0 && j["bkl_local_optima_y"].is_array(), "{j}");
}

#[test]
fn witness_json_contract() {
    let p = write_csv("w1.csv", 80, 1, 0.0, 13);
    let q = write_csv("w2.csv", 70, 1, 1.0, 14);
    let grid = dir().join("grid.csv");
    std::fs::write(&grid, "c0\n-1\n0\n0.5\n1\n2\n").unwrap();
    let (p, q, g) = (p.to_str().unwrap(), q.to_str().unwrap(), grid.to_str().unwrap());
    let (ok, j, err) = bke(&["witness", "--x", p, "--y", q, "--grid", g, "--lengthscale", "0.5"]);
    assert!(ok, "{err}");
    let get =
        |k: &str| -> Vec<f64> { j[k].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect() };
    let (mean, lower, upper) = (get("mean"), get("lower"), get("upper"));
    assert_eq!(mean.len(), 5);
    for i in 0..5 {
        assert!(lower[i] < mean[i] && mean[i] < upper[i], "{j}");
    }
    // P sits left of Q: the witness is positive at −1 and negative at 2
    assert!(mean[0] > 0.0 && mean[4] < 0.0, "{j}");
    assert_eq!(j["level"], 0.8);
    assert_eq!(j["selection"], "fixed");
    let (ok, j, err) =
        bke(&["witness", "--x", p, "--y", q, "--grid", g, "--select", "bkl", "--level", "0.95"]);
    assert!(ok, "{err}");
    assert_eq!(j["selection"], "bkl");
    for (args, needle) in [
        (vec!["witness", "--x", p, "--y", q, "--grid", g, "--level", "1.2"], "level"),
        (vec!["witness", "--x", p, "--y", q, "--grid", g, "--tau2", "-1"], "tau2"),
    ] {
        let (ok, _, err) = bke(&args);
        assert!(!ok && err.contains(needle), "{args:?}: {err}");
    }
}

/// The aggregated selections (issue 15): `--select mmdagg|fuse|bkl-bayes` for MMD and
/// `hsicagg|bkl-bayes` for HSIC keep `statistic`, `p_value`, `reject` and list every kernel with its
/// `family`, `lengthscale`, `weight` and `statistic`; the weights sum to 1; a clear shift is detected;
/// a selection the test does not offer is refused with a message naming the alternative.
#[test]
fn aggregated_selections_report_their_kernels() {
    let p = write_csv("a1.csv", 80, 2, 0.0, 21);
    let q = write_csv("a2.csv", 80, 2, 0.8, 22);
    let (p, q) = (p.to_str().unwrap(), q.to_str().unwrap());
    for (test, select, count) in [
        ("mmd", "mmdagg", Some(20)),
        ("mmd", "fuse", Some(20)),
        ("mmd", "bkl-bayes", None),
        ("hsic", "hsicagg", Some(25)),
        ("hsic", "bkl-bayes", None),
    ] {
        let (ok, j, err) =
            bke(&["test", test, "--x", p, "--y", q, "--select", select, "--permutations", "300"]);
        assert!(ok, "{test} {select}: {err}");
        assert_eq!(j["selection"], select);
        for key in ["statistic", "p_value", "reject"] {
            assert!(j.get(key).is_some(), "{test} {select}: missing {key}: {j}");
        }
        let kernels = j["kernels"].as_array().unwrap();
        if let Some(c) = count {
            assert_eq!(kernels.len(), c, "{test} {select}");
        }
        let mut total = 0.0;
        for k in kernels {
            for key in ["family", "lengthscale", "weight", "statistic"] {
                assert!(k.get(key).is_some(), "{test} {select}: kernel without {key}: {k}");
            }
            total += k["weight"].as_f64().unwrap();
        }
        assert!((total - 1.0).abs() < 1e-9, "{test} {select}: weights sum to {total}");
        if test == "mmd" {
            assert_eq!(j["reject"], true, "{select}: a 0.8 shift with 80 + 80 points: {j}");
        }
    }
    let (ok, _, err) = bke(&["test", "hsic", "--x", p, "--y", q, "--select", "fuse"]);
    assert!(!ok && err.contains("hsicagg"), "{err}");
    let (ok, _, err) = bke(&["test", "mmd", "--x", p, "--y", q, "--select", "hsicagg"]);
    assert!(!ok && err.contains("mmdagg"), "{err}");
}
