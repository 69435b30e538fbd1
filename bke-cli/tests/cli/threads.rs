//! Results never depend on `--threads`: every command's JSON is byte-identical on 1 and 2 threads
//! (after removing wall-clock fields and the paths of output files), and `--threads 0` is an error
//! everywhere.

use std::process::Command;

/// Writes the scratch CSV files; returns (two-column sample, shifted sample, regression table).
fn data() -> (String, String, String) {
    let mut a = String::from("u,v\n");
    let mut b = String::from("u,v\n");
    let mut r = String::from("u,v,y\n");
    for i in 0..40 {
        let (s, c) = ((i as f64 * 0.7).sin(), (i as f64 * 1.3).cos());
        a.push_str(&format!("{s},{c}\n"));
        b.push_str(&format!("{},{}\n", s + 0.4, c * 0.8));
        r.push_str(&format!("{s},{c},{}\n", s * 2.0 - c + 0.1 * (i as f64 * 3.1).sin()));
    }
    let w = |n: &str, t: &str| crate::common::write_in("threads", n, t).display().to_string();
    (w("a.csv", &a), w("b.csv", &b), w("r.csv", &r))
}

/// Scratch files of the DME commands: x, y (12 rows), ỹ, z̃ (9 rows); simulations, prior samples
/// and an observation for `bke lfi`.
fn dme_data() -> [String; 7] {
    let col = |name: &str, v: &[f64]| {
        let body: Vec<String> = v.iter().map(f64::to_string).collect();
        format!("{name}\n{}\n", body.join("\n"))
    };
    let y: Vec<f64> = (0..12).map(|i| -2.0 + 0.35 * i as f64).collect();
    let x: Vec<f64> = y.iter().map(|v| 0.8 * v + 0.05).collect();
    let yt: Vec<f64> = (0..9).map(|j| -1.9 + 0.45 * j as f64).collect();
    let zt: Vec<f64> =
        yt.iter().enumerate().map(|(j, v)| (0.8 * v).sin() + 0.1 * (7.3 * j as f64).sin()).collect();
    let mut sims = String::from("theta,stat\n");
    for i in 0..30 {
        let t = 0.1 + 0.1 * i as f64;
        sims.push_str(&format!("{t},{}\n", 2.0 * t + 0.1 * (i as f64 * 2.3).sin()));
    }
    let prior: Vec<f64> = (0..25).map(|i| 0.05 + 0.12 * i as f64).collect();
    let w = |n: &str, t: String| crate::common::write_in("threads", n, &t).display().to_string();
    [
        w("x.csv", col("x", &x)),
        w("y.csv", col("y", &y)),
        w("yt.csv", col("y", &yt)),
        w("zt.csv", col("z", &zt)),
        w("sims.csv", sims),
        w("prior.csv", col("theta", &prior)),
        w("obs.csv", col("stat", &[3.1])),
    ]
}

/// Stdout of `bke args --threads t` with the wall-clock fields removed.
fn stdout(args: &[&str], threads: &str) -> String {
    let out =
        Command::new(env!("CARGO_BIN_EXE_bke")).args(args).args(["--threads", threads]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?} on {threads} thread(s): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    crate::common::assert_no_null(&json, &format!("{args:?}"));
    if let Some(m) = json.as_object_mut() {
        m.retain(|k, _| !matches!(k.as_str(), "seconds" | "elapsed_seconds" | "time_seconds"));
    }
    json.to_string()
}

#[test]
fn every_command_gives_identical_json_on_one_and_two_threads() {
    let (a, b, r) = data();
    let model = |t: &str| crate::common::write_in("threads", &format!("m{t}.json"), "").display().to_string();
    let (bank1, bank2) = (model("bank1"), model("bank2"));
    let (dens1, dens2) = (model("dens1"), model("dens2"));
    let commands: Vec<Vec<&str>> = vec![
        vec!["embed", "loglik", "--data", &a, "--landmarks", &b, "--lengthscale", "0.8"],
        vec!["embed", "fit", "--data", &a, "--grid-points", "9"],
        vec!["embed", "posterior", "--data", &a, "--at", &b, "--lengthscale", "0.8"],
        vec!["embed", "sample", "--data", &a, "--chains", "2", "--warmup", "30", "--draws", "20"],
        vec!["test", "mmd", "--x", &a, "--y", &b, "--permutations", "200"],
        vec![
            "test",
            "mmd",
            "--x",
            &a,
            "--y",
            &b,
            "--statistic",
            "biased",
            "--null",
            "gamma",
            "--select",
            "median",
        ],
        vec!["test", "hsic", "--x", &a, "--x-columns", "u", "--y", &a, "--y-columns", "v"],
        vec!["witness", "--x", &a, "--y", &b, "--grid", &b],
        vec!["bank", "cv", "--data", &r, "--target", "y", "--iterations", "20", "--folds", "2"],
    ];
    for args in &commands {
        assert_eq!(stdout(args, "1"), stdout(args, "2"), "{args:?}");
    }
    let [x, y, yt, zt, sims, prior, obs] = dme_data();
    let dme = ["--x", &x, "--y", &y, "--ytilde", &yt, "--ztilde", &zt, "--lengthscale-x", "0.9"];
    let lfi = crate::common::lfi_inputs(&sims, &prior);
    for args in [
        [&["dme", "loglik"][..], &dme[..], &["--lengthscale-y", "0.7", "--sigma", "0.2"]].concat(),
        [&["dme", "fit"][..], &dme[..]].concat(),
        [&lfi[..], &["--observed", &obs, "--herd", "10"]].concat(),
    ] {
        assert_eq!(stdout(&args, "1"), stdout(&args, "2"), "{args:?}");
    }
    // Commands writing model files: the JSON (minus the path) and the files themselves agree.
    let fit = |out: &str, t: &str| {
        let args = ["bank", "fit", "--data", &r, "--target", "y", "--iterations", "20", "--model-out", out];
        stdout(&args, t).replace(out, "MODEL")
    };
    assert_eq!(fit(&bank1, "1"), fit(&bank2, "2"));
    assert_eq!(std::fs::read(&bank1).unwrap(), std::fs::read(&bank2).unwrap());
    let predict = |m: &str, t: &str| stdout(&["bank", "predict", "--model", m, "--data", &r], t);
    assert_eq!(predict(&bank1, "1"), predict(&bank1, "2"));
    let fit = |out: &str, t: &str| {
        let args = ["density", "fit", "--data", &a, "--columns", "u", "--model-out", out];
        stdout(&args, t).replace(out, "MODEL")
    };
    assert_eq!(fit(&dens1, "1"), fit(&dens2, "2"));
    assert_eq!(std::fs::read(&dens1).unwrap(), std::fs::read(&dens2).unwrap());
    for args in [
        vec!["density", "eval", "--model", &dens1, "--at", &a],
        vec!["density", "sample", "--model", &dens1, "--n", "20"],
    ] {
        assert_eq!(stdout(&args, "1"), stdout(&args, "2"), "{args:?}");
    }
}

/// Asserts that `bke args` gives the same JSON on 1 and 2 threads.
fn same_on_one_and_two(args: &[&str]) {
    assert_eq!(stdout(args, "1"), stdout(args, "2"), "{args:?}");
}

/// Every kernel-selection rule and null distribution of `bke test` and `bke witness`, small sizes.
#[test]
fn every_test_variant_gives_identical_json_on_one_and_two_threads() {
    let (a, b, _) = data();
    let mmd = ["test", "mmd", "--x", &a, "--y", &b, "--permutations", "60"];
    for extra in [
        &["--null", "wild"][..],
        &["--statistic", "linear", "--null", "normal", "--select", "median"],
        &["--statistic", "linear", "--null", "permutation", "--select", "median"],
        &["--select", "bkl", "--bkl-landmarks", "10"],
        &["--select", "bkl-bayes", "--bkl-landmarks", "10"],
        &["--select", "mmdagg"],
        &["--select", "fuse"],
    ] {
        same_on_one_and_two(&[&mmd[..], extra].concat());
    }
    let hsic = ["test", "hsic", "--x", &a, "--x-columns", "u", "--y", &a, "--y-columns", "v"];
    for extra in [
        &["--permutations", "60"][..],
        &["--null", "gamma", "--select", "median"],
        &["--null", "wild", "--permutations", "60"],
        &["--statistic", "unbiased", "--permutations", "60"],
        &["--select", "hsicagg", "--permutations", "60"],
        &["--select", "bkl", "--bkl-landmarks", "10", "--permutations", "60"],
    ] {
        same_on_one_and_two(&[&hsic[..], extra].concat());
    }
    let witness = ["witness", "--x", &a, "--y", &b, "--grid", &b];
    same_on_one_and_two(
        &[&witness[..], &["--bayes", "--chains", "2", "--warmup", "20", "--draws", "10"]].concat(),
    );
}

/// The model variants of `bke embed`, `bke bank`, `bke dme` and `bke lfi` not covered above.
#[test]
fn every_model_variant_gives_identical_json_on_one_and_two_threads() {
    let (a, b, r) = data();
    same_on_one_and_two(&["embed", "fit", "--data", &a, "--grid-points", "5", "--ard"]);
    let nuts = ["--chains", "2", "--warmup", "20", "--draws", "10"];
    same_on_one_and_two(
        &[&["embed", "sample", "--data", &a, "--ard", "--num-landmarks", "12"][..], &nuts].concat(),
    );
    same_on_one_and_two(&["embed", "loglik", "--data", &a, "--landmarks", &b, "--lengthscale", "0.8,0.6"]);
    let cv = ["bank", "cv", "--data", &r, "--target", "y", "--folds", "2", "--iterations", "10"];
    for method in ["rks", "mkl", "alac", "gbdt", "gp"] {
        same_on_one_and_two(&[&cv[..], &["--method", method]].concat());
    }
    let mut labels = String::from("u,v,c\n");
    for i in 0..40 {
        let (s, c) = ((i as f64 * 0.7).sin(), (i as f64 * 1.3).cos());
        labels.push_str(&format!("{s},{c},{}\n", u8::from(s + 0.3 * c > 0.0)));
    }
    let labels = crate::common::write_in("threads", "labels.csv", &labels).display().to_string();
    let cls = ["bank", "cv", "--data", &labels, "--target", "c", "--task", "classification", "--folds", "2"];
    for method in ["bank", "rfo"] {
        same_on_one_and_two(&[&cls[..], &["--method", method, "--iterations", "10"]].concat());
    }
    let [x, y, yt, zt, sims, prior, obs] = dme_data();
    let dme = ["dme", "fit", "--x", &x, "--y", &y, "--ytilde", &yt, "--ztilde", &zt, "--starts", "2"];
    same_on_one_and_two(&[&dme[..], &["--form", "full"]].concat());
    same_on_one_and_two(&[&dme[..], &["--model", "parametric", "--features", "10"]].concat());
    let inducing = ["dme", "fit", "--ytilde", &yt, "--ztilde", &zt, "--inducing", "3", "--starts", "2"];
    same_on_one_and_two(&inducing);
    let model =
        |t: &str| crate::common::write_in("threads", &format!("dme{t}.json"), "").display().to_string();
    let (m1, m2) = (model("1"), model("2"));
    let fit =
        |out: &str, t: &str| stdout(&[&dme[..], &["--model-out", out]].concat(), t).replace(out, "MODEL");
    assert_eq!(fit(&m1, "1"), fit(&m2, "2"));
    assert_eq!(std::fs::read(&m1).unwrap(), std::fs::read(&m2).unwrap());
    same_on_one_and_two(&["dme", "predict", "--model", &m1, "--at", &yt]);
    let lfi = [&crate::common::lfi_inputs(&sims, &prior)[..], &["--observed", &obs, "--herd", "8"]].concat();
    same_on_one_and_two(&[&lfi[..], &["--method", "kbr"]].concat());
    same_on_one_and_two(
        &[&lfi[..], &["--method", "kbr", "--kbr-variant", "a", "--kbr-inverse", "tikhonov"]].concat(),
    );
    same_on_one_and_two(&[&lfi[..], &["--learn", "--starts", "2"]].concat());
    // The ABC baselines: rejection on the same simulations, SMC-ABC (parallel simulation batches)
    // against the built-in Lotka-Volterra simulator.
    same_on_one_and_two(&[&lfi[..], &["--method", "abc-rejection", "--abc-quantile", "0.3"]].concat());
    let lv_obs = crate::common::write_in(
        "threads",
        "lv_obs.csv",
        "s1,s2,s3,s4,s5,s6,s7,s8,s9\n83.0,106.0,8.5,8.9,0.93,0.80,0.93,0.80,-0.2\n",
    );
    let lv_obs = lv_obs.display().to_string();
    let smc = ["lfi", "--method", "abc-smc", "--simulator", "lotka-volterra", "--observed", &lv_obs];
    same_on_one_and_two(
        &[&smc[..], &["--abc-simulations", "400", "--particles", "50", "--seed", "3"]].concat(),
    );
}

/// `--threads 10⁶` (far above any machine's cores) is refused at once, before any data is read,
/// naming the flag and the largest allowed value, for every command.
#[test]
fn huge_thread_counts_are_refused_within_a_second_everywhere() {
    let (a, b, r) = data();
    let [x, y, yt, zt, sims, prior, obs] = dme_data();
    let lfi = [&crate::common::lfi_inputs(&sims, &prior)[..], &["--observed", &obs][..]].concat();
    let dme = ["--x", &x, "--y", &y, "--ytilde", &yt, "--ztilde", &zt];
    let commands: Vec<Vec<&str>> = vec![
        vec!["embed", "loglik", "--data", &a, "--landmarks", &b, "--lengthscale", "0.8"],
        vec!["embed", "fit", "--data", &a],
        vec!["embed", "posterior", "--data", &a, "--at", &b, "--lengthscale", "0.8"],
        vec!["embed", "sample", "--data", &a],
        vec!["test", "mmd", "--x", &a, "--y", &b],
        vec!["test", "hsic", "--x", &a, "--x-columns", "u", "--y", &a, "--y-columns", "v"],
        vec!["witness", "--x", &a, "--y", &b, "--grid", &b],
        vec!["bank", "cv", "--data", &r, "--target", "y"],
        vec!["bank", "fit", "--data", &r, "--target", "y", "--model-out", &b],
        vec!["bank", "predict", "--model", &a, "--data", &r],
        vec!["density", "fit", "--data", &a, "--model-out", &b],
        vec!["density", "eval", "--model", &a, "--at", &a],
        vec!["density", "sample", "--model", &a, "--n", "5"],
        vec!["causal", "pc", "--data", &r],
        [&["dme", "loglik"][..], &dme[..]].concat(),
        [&["dme", "fit"][..], &dme[..]].concat(),
        vec!["dme", "predict", "--model", &a, "--at", &yt],
        lfi,
    ];
    for args in commands {
        let mut all = args.clone();
        all.extend(["--threads", "1000000"]);
        let start = std::time::Instant::now();
        let (ok, _, err) = crate::common::bke(&all);
        let took = start.elapsed();
        assert!(!ok && err.contains("--threads = 1000000") && err.contains("at most"), "{args:?}: {err}");
        assert!(took < std::time::Duration::from_secs(1), "{args:?} took {took:?}");
    }
    // A count within the limit is accepted and gives the same JSON as 1 and 2 threads.
    let mmd = ["test", "mmd", "--x", &a, "--y", &b, "--permutations", "60"];
    assert_eq!(stdout(&mmd, "1"), stdout(&mmd, "8"));
}

#[test]
fn zero_threads_is_an_error_everywhere() {
    let (a, b, r) = data();
    for args in [
        vec!["embed", "fit", "--data", &a],
        vec!["test", "mmd", "--x", &a, "--y", &b],
        vec!["bank", "cv", "--data", &r, "--target", "y"],
        vec!["density", "fit", "--data", &a, "--model-out", &b],
    ] {
        let mut all = args.clone();
        all.extend(["--threads", "0"]);
        let (ok, _, err) = crate::common::bke(&all);
        assert!(!ok && err.contains("--threads must be at least 1"), "{args:?}: {err}");
    }
}
