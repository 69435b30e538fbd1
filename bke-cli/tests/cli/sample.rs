//! `bke embed sample` end to end: the JSON contract of issue 7, the draws CSV, reproducibility for
//! any thread count, and error messages.

use std::path::{Path, PathBuf};

use crate::common::bke;

fn write(name: &str, body: &str) -> PathBuf {
    crate::common::write_in("sample", name, body)
}

/// The arguments of `bke embed sample` on the column `x` of the file `x`, then `extra`.
fn sample_args<'a>(x: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    [&["embed", "sample", "--data", x.to_str().unwrap(), "--columns=x"][..], extra].concat()
}

fn data(name: &str) -> PathBuf {
    let mut body = String::from("x,other\n");
    for i in 0..40 {
        // A deterministic spread-out sample.
        let t = (i as f64 + 0.5) / 40.0;
        body.push_str(&format!("{},{}\n", (t * 6.1).sin() * 1.3 + (t - 0.5) * 2.0, i));
    }
    write(name, &body)
}

#[test]
fn sample_emits_the_contracted_fields_and_draws() {
    let x = data("x1.csv");
    let z = write("z.csv", "x\n0.0\n");
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bke-sample-draws-{}.csv", std::process::id()));
    let args = |threads: &str| {
        vec![
            "embed".to_string(),
            "sample".into(),
            "--data".into(),
            x.to_str().unwrap().into(),
            "--columns=x".into(),
            "--landmarks".into(),
            z.to_str().unwrap().into(),
            "--chains=4".into(),
            "--draws=150".into(),
            "--warmup=150".into(),
            "--seed=3".into(),
            format!("--threads={threads}"),
            "--draws-out".into(),
            out.to_str().unwrap().into(),
        ]
    };
    let a1 = args("1");
    let (ok, j, err) = bke(&a1.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{err}");
    for q in ["lengthscale", "tau2"] {
        for f in ["mean", "sd", "q05", "q50", "q95", "rhat", "ess"] {
            assert!(j[q][f].is_number(), "{q}.{f}: {j}");
        }
        assert!(j[q]["q05"].as_f64() < j[q]["q95"].as_f64());
    }
    assert!(j["divergences"].is_u64());
    assert!(j["warnings"].is_array());
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("chain,draw,lengthscale,tau2,log_density"));
    assert_eq!(lines.clone().count(), 4 * 150);
    // The streamed file holds the draws the summary was computed from, in chain order (oracle: the
    // mean of its lengthscale column and its divergence count against the JSON).
    let rows: Vec<Vec<f64>> =
        lines.map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap()).collect()).collect();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!((r[0] as usize, r[1] as usize), (i / 150, i % 150), "row {i} out of order");
    }
    let mean = rows.iter().map(|r| r[2]).sum::<f64>() / rows.len() as f64;
    let want = j["lengthscale"]["mean"].as_f64().unwrap();
    assert!((mean - want).abs() <= 1e-12 * want.abs(), "{mean} vs {want}");
    let divergent = rows.iter().filter(|r| r[8] == 1.0).count();
    assert_eq!(divergent as u64, j["divergences"].as_u64().unwrap());
    // Same numbers with another thread count, and the same file byte for byte.
    let a2 = args("2");
    let (ok, j2, err) = bke(&a2.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{err}");
    assert_eq!(j["lengthscale"], j2["lengthscale"]);
    assert_eq!(j["tau2"], j2["tau2"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), csv);
    // No temporary file of the streamed chains is left beside it.
    let name = out.file_name().unwrap().to_string_lossy().to_string();
    let litter: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!(".{name}.")))
        .collect();
    assert!(litter.is_empty(), "{litter:?}");
    std::fs::remove_file(&out).unwrap();
}

/// With --draws-out only the lengthscale/tau2 draws stay in memory: a run the memory budget refuses
/// when every sampler statistic is kept goes through when they are streamed to disk.
#[test]
fn streamed_draws_count_less_against_the_memory_budget() {
    let x = data("x4.csv");
    let dir = x.parent().unwrap();
    let out = dir.join("budget-draws.csv");
    let budget =
        ["--num-landmarks=2", "--tau2=1", "--chains=1", "--warmup=20", "--draws=6000", "--max-memory=256K"];
    let base = sample_args(&x, &budget);
    let (ok, _, err) = bke(&base);
    assert!(!ok && err.contains("draws = 6000"), "{err}");
    let mut streamed = base.to_vec();
    streamed.extend(["--draws-out", out.to_str().unwrap()]);
    let (ok, j, err) = bke(&streamed);
    assert!(ok, "{err}");
    assert_eq!(j["draws"], 6000);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 6001);
    // An output folder that does not exist: a clean error before any sampling, nothing written.
    let missing = dir.join("missing/draws.csv");
    let mut bad = base.to_vec();
    bad.extend(["--draws-out", missing.to_str().unwrap()]);
    let (ok, _, err) = bke(&bad);
    assert!(!ok && err.contains("missing/draws.csv"), "{err}");
    assert!(!dir.join("missing").exists());
}

#[test]
fn fixed_tau2_and_held_out_landmarks() {
    let x = data("x2.csv");
    let held_out = ["--num-landmarks=4", "--tau2=1", "--chains=2", "--draws=100", "--warmup=100"];
    let (ok, j, err) = bke(&sample_args(&x, &held_out));
    assert!(ok, "{err}");
    assert_eq!(j["tau2"]["fixed"], true);
    assert_eq!(j["num_landmarks"], 4);
    assert_eq!(j["n_data"], 36);
    assert!(j["lengthscale"]["mean"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_input_gives_clear_errors() {
    let x = data("x3.csv");
    let xs = x.to_str().unwrap();
    let bad = write("bad.csv", "x\n1.0\nnan\n");
    for (args, needle) in [
        (vec!["--data", bad.to_str().unwrap()], "line 3"),
        (vec!["--data", xs, "--columns=x", "--lengthscale-prior", "gamma:1"], "gamma:SHAPE,RATE"),
        (vec!["--data", xs, "--columns=x", "--tau2=-1"], "--tau2"),
        (vec!["--data", xs, "--columns=x", "--tau2=0"], "--tau2"),
        (vec!["--data", xs, "--columns=x", "--chains", "0"], "chain"),
        (vec!["--data", xs, "--columns=x,other", "--num-landmarks", "1"], "landmarks"),
        (vec!["--data", xs, "--columns=nope"], "no column named 'nope'"),
    ] {
        let mut a = vec!["embed", "sample", "--draws=10", "--warmup=10"];
        a.extend(args);
        let (ok, _, err) = bke(&a);
        assert!(!ok && err.contains(needle), "{a:?}: {err}");
    }
}

#[test]
fn witness_bayes_gives_integrated_bands() {
    let x = data("wx.csv");
    let mut body = String::from("x,other\n");
    for i in 0..40 {
        let t = (i as f64 + 0.5) / 40.0;
        body.push_str(&format!("{},{}\n", (t - 0.5) * 3.0, i));
    }
    let y = write("wy.csv", &body);
    let g = write("wg.csv", "x\n-2\n0\n2\n");
    let (ok, j, err) = bke(&[
        "witness",
        "--x",
        x.to_str().unwrap(),
        "--y",
        y.to_str().unwrap(),
        "--grid",
        g.to_str().unwrap(),
        "--columns=x",
        "--bayes",
        "--chains=2",
        "--draws=40",
        "--warmup=60",
    ]);
    assert!(ok, "{err}");
    for f in ["mean", "lower", "upper", "median", "prob_positive"] {
        assert_eq!(j[f].as_array().map(Vec::len), Some(3), "{f}: {j}");
    }
    for i in 0..3 {
        assert!(j["lower"][i].as_f64() <= j["upper"][i].as_f64());
    }
    assert_eq!(j["selection"], "bayes");
    assert_eq!(j["witness_draws"], 80);
    assert!(j["lengthscale"]["rhat"].is_number());
}

/// `--draws-out d.npy`: a NumPy float64 array holding the bits of the CSV written by the same run
/// (header checked against the NPY 1.0 layout), its columns named in the JSON.
#[test]
fn draws_out_npy_holds_the_csv_values() {
    let x = data("x_npy.csv");
    let dir = x.parent().unwrap();
    let (csv, npy) = (dir.join("draws-npy.csv"), dir.join("draws-npy.npy"));
    let run = |out: &Path| {
        let to = out.to_str().unwrap();
        let args =
            ["--num-landmarks=3", "--chains=3", "--draws=50", "--warmup=50", "--seed=4", "--draws-out", to];
        let (ok, j, err) = bke(&sample_args(&x, &args));
        assert!(ok, "{err}");
        j
    };
    let (a, b) = (run(&csv), run(&npy));
    assert_eq!(a["lengthscale"], b["lengthscale"]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let header: Vec<String> = text.lines().next().unwrap().split(',').map(String::from).collect();
    assert_eq!(b["draws_columns"], serde_json::json!(header));
    let want: Vec<f64> =
        text.lines().skip(1).flat_map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap())).collect();
    let bytes = std::fs::read(&npy).unwrap();
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((&bytes[..8], (10 + len) % 64), (&b"\x93NUMPY\x01\x00"[..], 0));
    let dict = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
    let shape = format!("'shape': ({}, {}), }}", 150, header.len());
    assert!(dict.starts_with("{'descr': '<f8', 'fortran_order': False, ") && dict.contains(&shape), "{dict}");
    let got: Vec<f64> =
        bytes[10 + len..].chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits()));
}
