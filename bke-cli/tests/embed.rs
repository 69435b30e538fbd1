//! `bke embed …` end to end: the JSON contract of issue 3 and error messages.

use std::path::PathBuf;

mod common;

use common::bke;

fn write(name: &str, body: &str) -> PathBuf {
    common::write_in("embed", name, body)
}

fn data() -> (PathBuf, PathBuf, PathBuf) {
    let mut body = String::from("a,b,label\n");
    for i in 0..60 {
        let t = i as f64 * 0.37;
        body.push_str(&format!(
            "{},{},{}\n",
            (t * 1.3).sin() * 3.0 + (i % 3) as f64,
            (t * 0.7).cos() * 2.0,
            i % 2
        ));
    }
    let x = write("x.csv", &body);
    let z = write("z.csv", "a,b\n0.0,0.0\n1.0,-1.0\n-2.0,1.5\n2.5,0.5\n");
    let q = write("q.csv", "a,b\n0.0,0.0\n3.0,3.0\n");
    (x, z, q)
}

#[test]
fn loglik_fit_posterior_emit_the_contracted_fields() {
    let (x, z, q) = data();
    let (x, z, q) = (x.to_str().unwrap(), z.to_str().unwrap(), q.to_str().unwrap());
    let cols = "--columns=a,b";
    let (ok, j, err) = bke(&[
        "embed",
        "loglik",
        "--data",
        x,
        cols,
        "--landmarks",
        z,
        "--lengthscale",
        "0.8",
        "--tau2",
        "0.5",
    ]);
    assert!(ok, "{err}");
    for f in ["log_marginal", "log_gaussian", "log_jacobian", "grad_log_tau2"] {
        assert!(j[f].is_number(), "{f}: {j}");
    }
    assert_eq!(j["grad_log_lengthscale"].as_array().unwrap().len(), 1);
    let lm = j["log_marginal"].as_f64().unwrap();
    assert!(
        (lm - j["log_gaussian"].as_f64().unwrap() - j["log_jacobian"].as_f64().unwrap()).abs()
            < 1e-9 * lm.abs()
    );
    // ARD, other priors, no Jacobian
    let (ok, j, err) = bke(&[
        "embed",
        "loglik",
        "--data",
        x,
        cols,
        "--landmarks",
        z,
        "--lengthscale",
        "0.8,1.2",
        "--tau2",
        "0.5",
        "--prior",
        "gaussian:3",
        "--no-jacobian",
        "--backend",
        "nalgebra",
    ]);
    assert!(ok, "{err}");
    assert_eq!(j["grad_log_lengthscale"].as_array().unwrap().len(), 2);
    assert_eq!(j["log_jacobian"].as_f64().unwrap(), 0.0);

    let (ok, j, err) =
        bke(&["embed", "fit", "--data", x, cols, "--num-landmarks", "8", "--seed", "3", "--tau2", "1"]);
    assert!(ok, "{err}");
    for f in ["lengthscale", "tau2", "log_marginal", "median_heuristic"] {
        assert!(j[f].is_number(), "{f}: {j}");
    }
    let opt = j["local_optima"].as_array().unwrap();
    assert!(!opt.is_empty() && opt[0]["lengthscale"].is_number() && opt[0]["log_marginal"].is_number());
    assert_eq!(opt[0]["log_marginal"], j["log_marginal"]);
    let (ok, _, err) = bke(&["embed", "fit", "--data", x, cols, "--landmarks", z, "--prior", "unit"]);
    assert!(ok, "{err}");

    let (ok, j, err) =
        bke(&["embed", "posterior", "--data", x, cols, "--at", q, "--lengthscale", "0.8", "--tau2", "1"]);
    assert!(ok, "{err}");
    assert_eq!(j["mean"].as_array().unwrap().len(), 2);
    assert!(j["variance"].as_array().unwrap().iter().all(|v| v.as_f64().unwrap() >= 0.0));
}

#[test]
fn bad_input_is_reported_clearly() {
    let (x, z, _) = data();
    let (x, z) = (x.to_str().unwrap(), z.to_str().unwrap());
    let bad = write("bad.csv", "a,b\n1.0,2.0\n3.0,nan\n");
    let (ok, _, err) =
        bke(&["embed", "loglik", "--data", bad.to_str().unwrap(), "--landmarks", z, "--lengthscale", "1"]);
    assert!(!ok && err.contains("line 3") && err.contains("column 2"), "{err}");
    let (ok, _, err) =
        bke(&["embed", "loglik", "--data", x, "--columns=a,b", "--landmarks", z, "--lengthscale", "-1"]);
    assert!(!ok && err.contains("lengthscale"), "{err}");
    let (ok, _, err) = bke(&[
        "embed",
        "loglik",
        "--data",
        x,
        "--columns=a,b",
        "--landmarks",
        z,
        "--lengthscale",
        "1",
        "--tau2",
        "0",
    ]);
    assert!(!ok && err.contains("tau2"), "{err}");
    // data has 3 columns, landmarks 2
    let (ok, _, err) = bke(&["embed", "loglik", "--data", x, "--landmarks", z, "--lengthscale", "1"]);
    assert!(!ok && err.contains("dimension"), "{err}");
    let one = write("one.csv", "a,b\n0.0,0.0\n");
    let (ok, _, err) = bke(&[
        "embed",
        "loglik",
        "--data",
        x,
        "--columns=a,b",
        "--landmarks",
        one.to_str().unwrap(),
        "--lengthscale",
        "1",
    ]);
    assert!(!ok && err.contains("m ≥ D"), "{err}");
    let (ok, _, err) = bke(&[
        "embed",
        "loglik",
        "--data",
        x,
        "--columns=a,b",
        "--landmarks",
        z,
        "--lengthscale",
        "1",
        "--prior",
        "cauchy",
    ]);
    assert!(!ok && err.contains("prior"), "{err}");
}
