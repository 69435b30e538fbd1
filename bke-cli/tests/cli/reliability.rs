//! Bad inputs of issue 19 not covered elsewhere: memory refusals of `bke dme` / `bke lfi` (naming
//! the setting, the estimate and `--max-memory`), the columns of `--ytilde` and of `bke lfi`'s
//! observation, and SIGINT/SIGTERM (a prompt, clean stop that leaves no half-written output).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn w(name: &str, body: &str) -> String {
    crate::common::write_in("reliability", name, body).display().to_string()
}

fn column(name: &str, v: impl Iterator<Item = f64>) -> String {
    let body: Vec<String> = v.map(|x| x.to_string()).collect();
    format!("{name}\n{}\n", body.join("\n"))
}

/// x, y (12 rows), ỹ, z̃ (9 rows) of a small DME problem.
fn dme_files() -> [String; 4] {
    let y = || (0..12).map(|i| -2.0 + 0.35 * i as f64);
    let yt = || (0..9).map(|j| -1.9 + 0.45 * j as f64);
    [
        w("x.csv", &column("x", y().map(|v| 0.8 * v + 0.05))),
        w("y.csv", &column("y", y())),
        w("yt.csv", &column("y", yt())),
        w("zt.csv", &column("z", yt().map(|v| (0.8 * v).sin()))),
    ]
}

/// Runs `bke`, which must fail with a one-line error containing every one of `needles`.
fn fails_with(args: &[&str], needles: &[&str]) {
    let (ok, _, err) = crate::common::bke(args);
    assert!(!ok, "{args:?} succeeded");
    assert!(!err.contains("panicked") && !err.contains("memory allocation"), "{args:?}: {err}");
    let last = err.lines().last().unwrap_or("");
    assert!(last.starts_with("error: "), "{args:?}: {err}");
    for n in needles {
        assert!(last.contains(n), "{args:?}: '{n}' missing from {last}");
    }
}

#[test]
fn dme_work_beyond_the_memory_budget_is_refused_up_front() {
    let [x, y, yt, zt] = dme_files();
    let data = ["--x", &x, "--y", &y, "--ytilde", &yt, "--ztilde", &zt];
    let fit = [&["dme", "fit"][..], &data[..]].concat();
    fails_with(&[&fit[..], &["--max-memory", "1K"]].concat(), &["n = 12", "m = 9", "--max-memory"]);
    let sparse = ["dme", "fit", "--ytilde", &yt, "--ztilde", &zt, "--inducing", "3", "--max-memory", "1K"];
    fails_with(&sparse, &["n = 3", "--max-memory"]);
    fails_with(
        &[&fit[..], &["--model", "parametric", "--features", "100000000000"]].concat(),
        &["features = "],
    );
    fails_with(&[&fit[..], &["--starts", "100000000000"]].concat(), &["starts = 100000000000"]);
    let loglik = [&["dme", "loglik"][..], &data[..], &["--max-memory", "1K"]].concat();
    fails_with(&loglik, &["--max-memory"]);
}

/// HSIC holds dense `n × n` matrices per kernel: beyond the limit it is refused before any is
/// built, naming `n`, the kernels and the settings that need less.
#[test]
fn hsic_beyond_the_memory_budget_is_refused_up_front() {
    let x = w("hsic_x.csv", &column("x", (0..40).map(|i| (i as f64 * 0.37).sin())));
    let args = [
        "test",
        "hsic",
        "--x",
        &x,
        "--y",
        &x,
        "--select",
        "median",
        "--permutations",
        "100",
        "--max-memory",
        "40K",
    ];
    fails_with(&args, &["n = 40", "1 × 1 kernels", "--select median", "--max-memory"]);
}

/// KCI (forced with `--ci kci`) holds about eight `n × n` matrices: refused beyond the limit,
/// pointing to `--ci auto`.
#[test]
fn kci_beyond_the_memory_budget_is_refused_up_front() {
    let rows: Vec<String> =
        (0..40).map(|i| format!("{},{}", (i as f64 * 0.37).sin(), (i as f64 * 0.11).cos())).collect();
    let data = w("kci.csv", &format!("a,b\n{}\n", rows.join("\n")));
    let args = ["causal", "pc", "--data", &data, "--ci", "kci", "--max-memory", "60K"];
    fails_with(&args, &["observations = 40", "dense KCI", "--ci auto", "--max-memory"]);
}

#[test]
fn dme_task_inputs_must_have_the_columns_of_y() {
    let [x, y, _, zt] = dme_files();
    let other = w("yt_other.csv", &column("w", (0..9).map(|j| j as f64 * 0.4)));
    let args = ["dme", "loglik", "--x", &x, "--y", &y, "--ytilde", &other, "--ztilde", &zt];
    fails_with(&args, &["--ytilde", "(w)", "(y)", "--y-cols"]);
    // Inducing points stand in for y: they must have the columns of --ytilde, too.
    let [_, _, yt, _] = dme_files();
    let two = w("yt_two.csv", "y,w\n0.1,1\n0.5,2\n0.9,3\n1.3,4\n-0.2,5\n-0.6,6\n1.7,7\n-1.1,8\n0.3,9\n");
    let u_other = w("u_other.csv", &column("w", (0..3).map(|j| j as f64 - 1.0)));
    let u_swapped = w("u_swapped.csv", "w,y\n1,0.1\n2,0.5\n3,0.9\n");
    let u_good = w("u_good.csv", &column("y", (0..3).map(|j| j as f64 - 1.0)));
    let sparse = |yt: &'_ str, u: &'_ str| -> Vec<String> {
        ["dme", "loglik", "--ytilde", yt, "--ztilde", &zt, "--inducing-points", u].map(String::from).to_vec()
    };
    let run = |v: Vec<String>| crate::common::bke(&v.iter().map(String::as_str).collect::<Vec<_>>());
    let (ok, _, err) = run(sparse(&yt, &u_other));
    assert!(!ok && err.contains("--inducing-points") && err.contains("(w)") && err.contains("(y)"), "{err}");
    let (ok, _, err) = run(sparse(&two, &u_swapped));
    assert!(!ok && err.contains("(w, y)") && err.contains("(y, w)") && !err.contains("panicked"), "{err}");
    let (ok, j, err) = run(sparse(&yt, &u_good));
    assert!(ok && j["log_marginal"].is_number(), "{err}");
    // --y-cols picks the same columns from both.
    let (ok, j, err) = run([sparse(&two, &u_swapped), vec!["--y-cols".into(), "y".into()]].concat());
    assert!(ok && j["log_marginal"].is_number(), "{err}");
}

fn lfi_files() -> [String; 2] {
    let mut sims = String::from("theta,stat\n");
    for i in 0..30 {
        let t = 0.1 + 0.1 * i as f64;
        sims.push_str(&format!("{t},{}\n", 2.0 * t + 0.1 * (i as f64 * 2.3).sin()));
    }
    [w("sims.csv", &sims), w("prior.csv", &column("theta", (0..25).map(|i| 0.05 + 0.12 * i as f64)))]
}

#[test]
fn lfi_refuses_huge_herds_and_ambiguous_observation_columns() {
    let [sims, prior] = lfi_files();
    let obs = w("obs.csv", "stat\n3.1\n");
    let base = crate::common::lfi_inputs(&sims, &prior);
    fails_with(&[&base[..], &["--observed", &obs, "--herd", "100000000000"]].concat(), &["herding samples"]);
    fails_with(
        &[&base[..], &["--observed", &obs, "--herd", "100000", "--max-memory", "100K"]].concat(),
        &["herding samples = 100000", "--max-memory"],
    );
    // Two columns, neither named `stat`: which one is the statistic is ambiguous.
    let two = w("obs_two.csv", "a,b\n3.1,2\n");
    fails_with(&[&base[..], &["--observed", &two]].concat(), &["no column named stat", "a, b"]);
    // One unnamed column: taken by position, and said so.
    let one = w("obs_one.csv", "value\n3.1\n");
    let (ok, _, err) = crate::common::bke(&[&base[..], &["--observed", &one, "--herd", "5"]].concat());
    assert!(ok && err.contains("by position"), "{err}");
    // SMC-ABC's particle count is checked against the memory budget before anything is simulated.
    let lv_obs = w(
        "obs_lv.csv",
        &format!(
            "{}\n{}\n",
            (1..=9).map(|k| format!("s{k}")).collect::<Vec<_>>().join(","),
            ["1"; 9].join(",")
        ),
    );
    let smc = ["lfi", "--method", "abc-smc", "--simulator", "lotka-volterra", "--observed", &lv_obs];
    let huge = ["--particles", "100000000000", "--abc-simulations", "100000000000"];
    fails_with(&[&smc[..], &huge[..]].concat(), &["particles = 100000000000", "--max-memory"]);
}

/// Starts `bke args`, sends `signal` after `after`, and returns (exit status, stderr, seconds from the
/// signal to the exit).
fn interrupt(args: &[&str], signal: &str, after: Duration) -> (Option<i32>, String, f64) {
    let child = Command::new(env!("CARGO_BIN_EXE_bke"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let sent = Instant::now();
    let status = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string(), sent.elapsed().as_secs_f64())
}

#[test]
#[cfg(unix)]
fn a_huge_iteration_count_is_possible_and_its_duration_is_told_up_front() {
    let r: String = (0..300)
        .map(|i| format!("{},{},{}\n", (i as f64 * 0.7).sin(), (i as f64 * 1.3).cos(), (i as f64).sin()))
        .collect();
    let r = w("huge.csv", &format!("u,v,y\n{r}"));
    let model = w("huge-model.json", "");
    let fit = [
        "bank",
        "fit",
        "--data",
        &r,
        "--target",
        "y",
        "--iterations",
        "1000000000000",
        "--model-out",
        &model,
    ];
    let (_, err, _) = interrupt(&fit, "-INT", Duration::from_secs(5));
    let told = err.lines().find(|l| l.starts_with("bank fit: expected to take about "));
    assert!(told.is_some_and(|l| l.contains("years in all")), "{err}");
}

#[test]
#[cfg(unix)]
fn an_interrupted_run_stops_promptly_and_leaves_no_half_written_file() {
    let a: String =
        (0..200).map(|i| format!("{},{}\n", (i as f64 * 0.7).sin(), (i as f64 * 1.3).cos())).collect();
    let a = w("a.csv", &format!("u,v\n{a}"));
    let draws = crate::common::write_in("reliability", "draws.csv", "").display().to_string();
    std::fs::remove_file(&draws).unwrap();
    let sample =
        ["embed", "sample", "--data", &a, "--warmup", "1000000", "--draws", "1000000", "--draws-out", &draws];
    let (code, err, secs) = interrupt(&sample, "-INT", Duration::from_millis(1500));
    assert_eq!(code, Some(130), "{err}");
    assert!(err.lines().last().unwrap_or("").starts_with("error: interrupted"), "{err}");
    assert!(secs < 5.0, "took {secs} s to stop");
    assert!(!std::path::Path::new(&draws).exists(), "a draws file was written");
    let streamed: Vec<_> = std::fs::read_dir(std::path::Path::new(&draws).parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".draws.csv."))
        .collect();
    assert!(streamed.is_empty(), "temporary draws files left: {streamed:?}");
    // SIGTERM during a fit: the old model file is kept as it was.
    let r: String = (0..300)
        .map(|i| format!("{},{},{}\n", (i as f64 * 0.7).sin(), (i as f64 * 1.3).cos(), (i as f64).sin()))
        .collect();
    let r = w("r.csv", &format!("u,v,y\n{r}"));
    let model = w("model.json", "old");
    let fit =
        ["bank", "fit", "--data", &r, "--target", "y", "--iterations", "100000000", "--model-out", &model];
    let (code, err, secs) = interrupt(&fit, "-TERM", Duration::from_millis(1500));
    assert_eq!(code, Some(130), "{err}");
    assert!(secs < 5.0, "took {secs} s to stop");
    assert_eq!(std::fs::read_to_string(&model).unwrap(), "old");
    let dir = std::path::Path::new(&model).parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("model.json."))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn integer_valued_data_get_a_note_about_the_lattice() {
    let ints: String = (0..60).map(|i| format!("{},{}\n", (i * 7) % 9, (i as f64 * 0.37).sin())).collect();
    let data = w("ints.csv", &format!("count,level\n{ints}"));
    let (ok, j, err) = crate::common::bke(&["embed", "fit", "--data", &data, "--grid-points", "5"]);
    assert!(ok, "{err}");
    assert!(j["lengthscale"].is_array() || j["lengthscale"].is_number(), "{j}");
    assert!(err.contains("note: column count of") && err.contains("dequantise"), "{err}");
    assert!(!err.contains("column level"), "a continuous column was flagged: {err}");
    let (ok, _, err) =
        crate::common::bke(&["embed", "loglik", "--data", &data, "--landmarks", &data, "--lengthscale", "1"]);
    assert!(ok && err.contains("column count"), "{err}");
}
