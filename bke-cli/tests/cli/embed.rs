//! `bke embed …` end to end: the JSON contract of issue 3 and error messages.

use std::path::PathBuf;

use crate::common::bke;

fn write(name: &str, body: &str) -> PathBuf {
    crate::common::write_in("embed", name, body)
}

/// `bke embed loglik --data DATA --landmarks LANDMARKS --lengthscale THETA EXTRA…`.
fn loglik(
    data: &std::path::Path,
    landmarks: &std::path::Path,
    theta: &str,
    extra: &[&str],
) -> (bool, serde_json::Value, String) {
    let (data, landmarks) = (data.to_str().unwrap(), landmarks.to_str().unwrap());
    let args = ["embed", "loglik", "--data", data, "--landmarks", landmarks, "--lengthscale", theta];
    bke(&[&args[..], extra].concat())
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
    let (xp, zp, q) = data();
    let (x, z, q) = (xp.to_str().unwrap(), zp.to_str().unwrap(), q.to_str().unwrap());
    let cols = "--columns=a,b";
    let (ok, j, err) = loglik(&xp, &zp, "0.8", &[cols, "--tau2", "0.5"]);
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
    let ard = [cols, "--tau2", "0.5", "--prior", "gaussian:3", "--no-jacobian", "--backend", "nalgebra"];
    let (ok, j, err) = loglik(&xp, &zp, "0.8,1.2", &ard);
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
    let bad = write("bad.csv", "a,b\n1.0,2.0\n3.0,nan\n");
    let (ok, _, err) = loglik(&bad, &z, "1", &[]);
    assert!(!ok && err.contains("line 3") && err.contains("column 2"), "{err}");
    let ab = "--columns=a,b";
    let (ok, _, err) = loglik(&x, &z, "-1", &[ab]);
    assert!(!ok && err.contains("lengthscale"), "{err}");
    let (ok, _, err) = loglik(&x, &z, "1", &[ab, "--tau2", "0"]);
    assert!(!ok && err.contains("tau2"), "{err}");
    // data has 3 columns, landmarks 2
    let (ok, _, err) = loglik(&x, &z, "1", &[]);
    assert!(!ok && err.contains("dimension"), "{err}");
    let one = write("one.csv", "a,b\n0.0,0.0\n");
    let (ok, _, err) = loglik(&x, &one, "1", &[ab]);
    assert!(!ok && err.contains("m ≥ D"), "{err}");
    let (ok, _, err) = loglik(&x, &z, "1", &[ab, "--prior", "cauchy"]);
    assert!(!ok && err.contains("prior"), "{err}");
}

/// A version-1.0 `.npy` file of little-endian float64 values (C order unless `fortran`).
fn npy_f8(rows: usize, cols: usize, values: &[f64], fortran: bool) -> Vec<u8> {
    let mut out = bke_io::table_out::npy_header_of("<f8", fortran, &format!("({rows}, {cols})"));
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    out
}

#[test]
fn npy_input_gives_the_csv_result_in_either_memory_order() {
    let (rows, cols) = (40, 2);
    let x: Vec<f64> = (0..rows * cols).map(|k| ((k as f64) * 0.61).sin() * 2.0).collect();
    let mut csv = String::from("0,1\n");
    for r in x.chunks(cols) {
        csv.push_str(&format!("{},{}\n", r[0], r[1]));
    }
    let csv = write("npy_x.csv", &csv);
    let z = write("npy_z.csv", "0,1\n0.0,0.0\n1.0,-1.0\n-2.0,1.5\n");
    let c_order = csv.with_file_name("npy_x_c.npy");
    std::fs::write(&c_order, npy_f8(rows, cols, &x, false)).unwrap();
    let f_values: Vec<f64> =
        (0..cols).flat_map(|j| (0..rows).map(move |i| (i, j))).map(|(i, j)| x[i * cols + j]).collect();
    let f_order = csv.with_file_name("npy_x_f.npy");
    std::fs::write(&f_order, npy_f8(rows, cols, &f_values, true)).unwrap();
    let run = |data: &std::path::Path| {
        let (ok, j, err) = loglik(data, &z, "0.8", &["--columns=0,1", "--tau2", "0.5"]);
        assert!(ok, "{err}");
        ["log_marginal", "log_jacobian", "grad_log_tau2", "grad_log_lengthscale"].map(|f| j[f].clone())
    };
    let want = run(&csv);
    assert!(want[0].is_number(), "{want:?}");
    assert_eq!(run(&c_order), want);
    assert_eq!(run(&f_order), want);
    // An unsupported dtype is an error naming it, not a panic.
    let bad = csv.with_file_name("npy_bad.npy");
    let mut bytes = npy_f8(rows, cols, &x, false);
    let at = bytes.windows(3).position(|w| w == b"<f8").unwrap();
    bytes[at..at + 3].copy_from_slice(b">f8");
    std::fs::write(&bad, bytes).unwrap();
    let (ok, _, err) = loglik(&bad, &z, "0.8", &[]);
    assert!(!ok && err.contains("'>f8' is not supported"), "{err}");
}

/// `embed loglik` streams the file in blocks (8 MB): on a file of several blocks, as CSV and as
/// `.npy`, with 1 and 2 threads, the JSON holds bit for bit what the library computes on the whole
/// data in memory (oracle: `marginal_pseudolikelihood` on the same values).
#[test]
fn streamed_loglik_equals_the_in_memory_objective_bit_for_bit() {
    use bke_core::Points;
    use bke_core::embedding::{BkeParams, marginal_pseudolikelihood};
    let n = 260_000;
    let x: Vec<f64> =
        (0..2 * n).map(|k| ((k as f64) * 0.000_37).sin() * 2.0 + (k % 7) as f64 * 1e-3).collect();
    let mut csv = String::from("u,v\n");
    for r in x.chunks(2) {
        csv.push_str(&format!("{},{}\n", r[0], r[1]));
    }
    assert!(csv.len() > (8 << 20), "the file must span several blocks");
    let csv = write("stream_x.csv", &csv);
    let npy = csv.with_file_name("stream_x.npy");
    std::fs::write(&npy, npy_f8(n, 2, &x, false)).unwrap();
    let zv = [-1.5, 0.2, 0.0, 0.0, 1.0, -1.0, 2.0, 1.5, -0.5, -1.7];
    let z = write("stream_z.csv", "u,v\n-1.5,0.2\n0,0\n1,-1\n2,1.5\n-0.5,-1.7\n");
    let z_npy = write("stream_z01.csv", "0,1\n-1.5,0.2\n0,0\n1,-1\n2,1.5\n-0.5,-1.7\n");
    let p = BkeParams::new(vec![0.7, 1.2], 0.5);
    let want = marginal_pseudolikelihood::<bke_linalg::DefaultBackend>(
        &Points::new("x", x.clone(), 2).unwrap(),
        &Points::new("z", zv.to_vec(), 2).unwrap(),
        &p,
    )
    .unwrap();
    // Through the same text form as the CLI's output, so equal values compare equal exactly.
    let want: serde_json::Value = serde_json::from_str(&serde_json::to_string(&want).unwrap()).unwrap();
    for (data, landmarks) in [(&csv, &z), (&npy, &z_npy)] {
        for threads in ["1", "2"] {
            let (ok, j, err) = loglik(data, landmarks, "0.7,1.2", &["--tau2", "0.5", "--threads", threads]);
            assert!(ok, "{err}");
            assert_eq!(j["n"], n);
            for f in ["log_marginal", "log_gaussian", "log_jacobian", "grad_log_lengthscale", "grad_log_tau2"]
            {
                assert_eq!(j[f], want[f], "{f}, {}, {threads} threads", data.display());
            }
        }
    }
    // A bad cell in the last block: the whole-file reader's error, line and column named.
    let mut text = std::fs::read_to_string(&csv).unwrap();
    text.push_str("1,oops\n");
    let bad = write("stream_bad.csv", &text);
    let (ok, _, err) = loglik(&bad, &z, "1", &[]);
    assert!(!ok && err.contains(&format!("line {}, column 2 ('v')", n + 2)) && err.contains("oops"), "{err}");
}

/// `--out`: the posterior's mean and variance go to the file (CSV or `.npy`) with the values the
/// JSON gives without it; the rest of the JSON stays.
#[test]
fn posterior_out_writes_the_json_arrays_to_a_file() {
    let (x, _, q) = data();
    let args =
        ["embed", "posterior", "--data", x.to_str().unwrap(), "--columns=a,b", "--at", q.to_str().unwrap()];
    let run = |extra: &[&str]| {
        let (ok, j, err) = bke(&[&args[..], &["--lengthscale", "0.9"], extra].concat());
        assert!(ok, "{err}");
        j
    };
    let plain = run(&[]);
    let (csv, npy) = (x.with_file_name("post.csv"), x.with_file_name("post.npy"));
    for path in [&csv, &npy] {
        let j = run(&["--out", path.to_str().unwrap()]);
        assert!(j.get("mean").is_none() && j["jitter"] == plain["jitter"], "{j}");
        assert_eq!(
            (j["out_columns"].clone(), j["out_rows"].as_u64()),
            (serde_json::json!(["mean", "variance"]), Some(2))
        );
        let t = bke_read(path);
        for (i, row) in t.chunks(2).enumerate() {
            assert_eq!(row[0], plain["mean"][i].as_f64().unwrap());
            assert_eq!(row[1], plain["variance"][i].as_f64().unwrap());
        }
    }
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("mean,variance\n"));
}

/// The values of a CSV (header skipped) or a `<f8` `.npy` file written by bke, row-major.
fn bke_read(path: &std::path::Path) -> Vec<f64> {
    if path.extension().is_some_and(|e| e == "npy") {
        let b = std::fs::read(path).unwrap();
        let start = 10 + u16::from_le_bytes([b[8], b[9]]) as usize;
        b[start..].chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
    } else {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .skip(1)
            .flat_map(|l| l.split(',').map(|v| v.parse::<f64>().unwrap()).collect::<Vec<_>>())
            .collect()
    }
}

/// Where `bke embed posterior` conditions: at every row up to 2000 rows (or with `--exact`), at
/// 1000 rows drawn with `--seed` above (a note on stderr), at `--num-landmarks K` rows, which is
/// conditioning at those rows given as `--landmarks` (the same numbers).
#[test]
fn posterior_conditions_at_sampled_rows_on_large_data() {
    let rows = |n: usize| -> String {
        let mut t = String::from("a,b\n");
        for i in 0..n {
            let (s, c) = ((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos());
            t.push_str(&format!("{s},{c}\n"));
        }
        t
    };
    let big = write("big.csv", &rows(2500));
    let q = write("big_q.csv", "a,b\n0.1,0.2\n-0.5,0.4\n");
    let (big, q) = (big.to_str().unwrap(), q.to_str().unwrap());
    let base = ["embed", "posterior", "--data", big, "--at", q, "--lengthscale", "0.7", "--tau2", "1"];
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bke"))
            .args([&base[..], extra].concat())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        (serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(), stderr)
    };
    let (j, err) = run(&[]);
    assert_eq!(
        (j["conditioned_at"].as_str(), j["conditioning_points"].as_u64()),
        (Some("sampled rows"), Some(1000))
    );
    assert!(err.contains("note: 2500 rows") && err.contains("--exact"), "{err}");
    let (j, err) = run(&["--num-landmarks", "40", "--seed", "5"]);
    assert_eq!(j["conditioning_points"].as_u64(), Some(40));
    assert!(!err.contains("note"), "{err}");
    // the same rows, given as a file
    let idx = bke_core::embedding::BkePosterior::sampled_rows(2500, 40, 5);
    let text = rows(2500);
    let all: Vec<&str> = text.lines().skip(1).collect();
    let lm: String = std::iter::once("a,b").chain(idx.iter().map(|&i| all[i])).collect::<Vec<_>>().join("\n");
    let lm = write("big_lm.csv", &(lm + "\n"));
    let (f, _) = run(&["--landmarks", lm.to_str().unwrap()]);
    assert_eq!((f["mean"].clone(), f["variance"].clone()), (j["mean"].clone(), j["variance"].clone()));
    assert_eq!(f["conditioned_at"], "landmarks");
    let (e, _) = run(&["--exact"]);
    assert_eq!((e["conditioned_at"].as_str(), e["conditioning_points"].as_u64()), (Some("data"), Some(2500)));
    let small = write("small.csv", &rows(50));
    let (ok, j, err) =
        bke(&["embed", "posterior", "--data", small.to_str().unwrap(), "--at", q, "--lengthscale", "0.7"]);
    assert!(ok, "{err}");
    assert_eq!((j["conditioned_at"].as_str(), j["conditioning_points"].as_u64()), (Some("data"), Some(50)));
    let (ok, _, err) = bke(&[&base[..], &["--num-landmarks", "0"]].concat());
    assert!(!ok && err.contains("--num-landmarks 0"), "{err}");
}
