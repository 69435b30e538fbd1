//! `bke lfi` end to end on issue 17's conjugate problem (θ ~ N(0, 1), x | θ ~ N(θ, 0.5²), 600
//! simulations, 600 prior samples, y = 1; exact posterior N(0.8, 0.447²)): with default flags and
//! with `--learn` the herded samples have mean within 0.1 and sd within 25% of the exact ones; the
//! JSON fields of bke 0.1 stay; `--method kbr` runs; bad flags are clear errors.

use std::path::PathBuf;

use crate::common::bke;

fn write(name: &str, body: &str) -> PathBuf {
    crate::common::write_in("lfi", name, body)
}

/// Standard normal draws from splitmix64 and Box–Muller (deterministic, no dependency).
fn normals(k: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    let mut uniform = || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..k)
        .map(|_| {
            let (u, v) = (uniform().max(1e-300), uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        })
        .collect()
}

/// The simulations, prior samples and observation files.
fn files() -> [PathBuf; 3] {
    let (theta, noise, prior) = (normals(600, 1), normals(600, 2), normals(600, 3));
    let sims: String = theta.iter().zip(&noise).map(|(t, e)| format!("{t},{}\n", t + 0.5 * e)).collect();
    let prior: String = prior.iter().map(|t| format!("{t}\n")).collect();
    [
        write("sims.csv", &format!("theta,x\n{sims}")),
        write("prior.csv", &format!("theta\n{prior}")),
        write("obs.csv", "x\n1.0\n"),
    ]
}

fn run(extra: &[&str]) -> (bool, serde_json::Value, String) {
    let [sims, prior, obs] = files();
    let mut args = vec![
        "lfi",
        "--simulations",
        sims.to_str().unwrap(),
        "--theta-cols",
        "theta",
        "--stat-cols",
        "x",
        "--prior-samples",
        prior.to_str().unwrap(),
        "--observed",
        obs.to_str().unwrap(),
        "--herd",
        "200",
    ];
    args.extend_from_slice(extra);
    bke(&args)
}

fn mean_sd(j: &serde_json::Value) -> (f64, f64) {
    let s: Vec<f64> = j["samples"].as_array().unwrap().iter().map(|r| r[0].as_f64().unwrap()).collect();
    let m = s.iter().sum::<f64>() / s.len() as f64;
    (m, (s.iter().map(|x| (x - m).powi(2)).sum::<f64>() / s.len() as f64).sqrt())
}

#[test]
fn default_and_learned_posteriors_match_the_exact_conjugate_posterior() {
    for extra in [&[][..], &["--learn"][..]] {
        let (ok, j, err) = run(extra);
        assert!(ok, "{err}");
        let (m, sd) = mean_sd(&j);
        eprintln!("{extra:?}: mean {m:.3}, sd {sd:.3}");
        assert!((m - 0.8).abs() < 0.1, "{extra:?}: mean {m}");
        assert!((sd / 0.2f64.sqrt() - 1.0).abs() < 0.25, "{extra:?}: sd {sd}");
        assert_eq!(j["samples"].as_array().unwrap().len(), 200);
        for f in ["lengthscale_theta", "lengthscale_stat", "epsilon", "lambda", "delta"] {
            assert!(!j["hyperparameters"][f].is_null(), "{f}: {j}");
        }
        assert!(j["q_bar"].as_f64().unwrap() > 0.0);
        assert_eq!((j["n_simulations"].as_u64(), j["n_prior"].as_u64()), (Some(600), Some(600)));
        assert_eq!(j["method"], "dme");
        assert!(j["embedding"]["mean"][0].is_number());
    }
}

#[test]
fn kbr_runs_and_bad_flags_are_clear_errors() {
    let (ok, j, err) = run(&["--method", "kbr", "--kbr-variant", "a"]);
    assert!(ok, "{err}");
    assert_eq!((j["method"].as_str(), j["hyperparameters"]["variant"].as_str()), (Some("kbr"), Some("a")));
    let (ok, _, err) = run(&["--method", "abc"]);
    assert!(!ok && err.contains("use dme, kbr, abc-rejection or abc-smc"), "{err}");
    let (ok, _, err) = run(&["--method", "abc-smc"]);
    assert!(!ok && err.contains("--simulator lotka-volterra"), "{err}");
    let (ok, _, err) = run(&["--delta", "0"]);
    assert!(!ok && err.contains("delta"), "{err}");
    let (ok, _, err) = run(&["--method", "kbr", "--learn"]);
    assert!(!ok && err.contains("--learn applies to --method dme"), "{err}");
}

#[test]
fn rejection_abc_accepts_the_nearest_prior_simulations() {
    // The simulation parameters are prior draws: 20% of 600 accepted is 120 draws of the
    // ε-approximate posterior N(0.8, 0.2) blurred by the acceptance window.
    let (ok, j, err) = run(&["--method", "abc-rejection", "--abc-quantile", "0.2"]);
    assert!(ok, "{err}");
    assert_eq!((j["method"].as_str(), j["n_accepted"].as_u64()), (Some("abc-rejection"), Some(120)));
    let (m, sd) = mean_sd(&j);
    assert!((m - 0.8).abs() < 0.15 && (sd / 0.2f64.sqrt() - 1.0).abs() < 0.35, "mean {m}, sd {sd}");
    assert!(j["threshold"].as_f64().unwrap() > 0.0);
    let (ok, _, err) = run(&["--method", "abc-rejection", "--abc-epsilon", "1e-12"]);
    assert!(!ok && err.contains("--abc-epsilon = ") && err.contains("accepts no simulation"), "{err}");
    // Errors name the flags users type, not the library's parameter names.
    for (flags, needle) in [
        (["--abc-epsilon", "0"], "invalid --abc-epsilon = 0"),
        (["--abc-quantile", "1.5"], "invalid --abc-quantile = 1.5"),
    ] {
        let (ok, _, err) = run(&[&["--method", "abc-rejection"][..], &flags[..]].concat());
        assert!(!ok && err.contains(needle), "{err}");
    }
    let smc = ["--method", "abc-smc", "--simulator", "lotka-volterra"];
    let (ok, _, err) = run(&[&smc[..], &["--particles", "1"]].concat());
    assert!(!ok && err.contains("invalid --particles = 1"), "{err}");
    let (ok, _, err) = run(&[&smc[..], &["--particles", "50", "--abc-simulations", "10"]].concat());
    assert!(!ok && err.contains("invalid --abc-simulations = 10: must be at least --particles"), "{err}");
}

#[test]
fn smc_abc_runs_the_built_in_lotka_volterra_simulator() {
    // Statistics of one run at the true rates (0.01, 0.5, 1, 0.01), order as in --help.
    let obs =
        write("lv_obs.csv", "s1,s2,s3,s4,s5,s6,s7,s8,s9\n83.0,106.0,8.5,8.9,0.93,0.80,0.93,0.80,-0.2\n");
    let args = [
        "lfi",
        "--method",
        "abc-smc",
        "--simulator",
        "lotka-volterra",
        "--observed",
        obs.to_str().unwrap(),
        "--abc-simulations",
        "600",
        "--particles",
        "100",
    ];
    let (ok, j, err) = bke(&args);
    assert!(ok, "{err}");
    assert_eq!(j["method"], "abc-smc");
    assert!(j["n_simulations"].as_u64().unwrap() <= 600);
    let samples = j["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 100);
    assert!(
        samples.iter().all(|r| r
            .as_array()
            .unwrap()
            .iter()
            .all(|v| (-5.0..=2.0).contains(&v.as_f64().unwrap())))
    );
    assert!(j["epsilons"][0].is_null());
}
