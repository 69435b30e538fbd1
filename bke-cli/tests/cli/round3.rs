//! Reliability, round 3 (issue 34): data whose scale overflows are refused naming the column, no
//! `null` in a result, degenerate density data refused, corrupt model files refused naming the
//! field.

fn w(name: &str, body: &str) -> String {
    crate::common::write_in("round3", name, body).display().to_string()
}

fn column(name: &str, v: impl Iterator<Item = f64>) -> String {
    let body: Vec<String> = v.map(|x| x.to_string()).collect();
    format!("{name}\n{}\n", body.join("\n"))
}

/// Runs `bke`, which must fail with an error containing every one of `needles`.
fn fails_with(args: &[&str], needles: &[&str]) {
    let (ok, json, err) = crate::common::bke(args);
    assert!(!ok, "{args:?} succeeded: {json}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' missing from {err}");
    }
}

#[test]
fn columns_whose_scale_overflows_are_refused_naming_the_column() {
    let mut t = String::from("a,b\n");
    for i in 0..30 {
        let s = (i as f64 * 0.9).sin();
        t.push_str(&format!("{},{}\n", 1e200 * (1.0 + 0.1 * s), (i as f64 * 1.7).cos()));
    }
    let big = w("big.csv", &t);
    let hsic = ["test", "hsic", "--x", &big, "--x-columns", "a", "--y", &big, "--y-columns", "b"];
    fails_with(&hsic, &["column 'a'", "the scale overflows", "rescale the data"]);
    fails_with(&["test", "mmd", "--x", &big, "--y", &big], &["column 'a'", "the scale overflows"]);
    let y = || (0..12).map(|i| -2.0 + 0.35 * i as f64);
    let yt = || (0..9).map(|j| -1.9 + 0.45 * j as f64);
    let (x, yf) = (w("x.csv", &column("x", y())), w("y.csv", &column("y", y())));
    let (ytf, zt) = (w("yt.csv", &column("y", yt())), w("zt.csv", &column("z", yt().map(f64::sin))));
    let bx = w("bx.csv", &column("x", y().map(|v| 1e200 * (1.0 + 0.01 * v))));
    let bz = w("bz.csv", &column("z", yt().map(|v| 1e300 * (1.0 + 0.01 * v))));
    let loglik = |x: &str, z: &str| {
        ["dme", "loglik", "--x", x, "--y", &yf, "--ytilde", &ytf, "--ztilde", z].map(String::from).to_vec()
    };
    for (args, col) in [(loglik(&bx, &zt), "column 'x'"), (loglik(&x, &bz), "column 'z'")] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_with(&args, &[col, "the scale overflows"]);
    }
    // The same small problem at an ordinary scale gives finite numbers (no null anywhere).
    let ok = loglik(&x, &zt);
    let (ok, json, err) = crate::common::bke(&ok.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok && json["log_marginal"].is_number(), "{err}");
}

#[test]
fn density_fit_refuses_constant_data_instead_of_a_null_error() {
    let out = w("m.json", "");
    let same = w("same.csv", &column("x", (0..20).map(|_| 5.0)));
    fails_with(&["density", "fit", "--data", &same, "--model-out", &out], &["column 1 is constant"]);
    let mut t = String::from("u,v\n");
    for i in 0..20 {
        t.push_str(&format!("{},3.5\n", (i as f64 * 0.7).sin()));
    }
    let two = w("const_col.csv", &t);
    fails_with(&["density", "fit", "--data", &two, "--model-out", &out], &["column 2 is constant"]);
}

/// Every `factor` array in a JSON value: its first entry set to `v`.
fn set_factors(j: &mut serde_json::Value, v: f64) {
    match j {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match x {
                    serde_json::Value::Array(a) if k == "factor" && !a.is_empty() => a[0] = v.into(),
                    _ => set_factors(x, v),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| set_factors(x, v)),
        _ => {}
    }
}

#[test]
fn corrupt_model_files_are_refused_naming_the_field() {
    let mut t = String::from("u,v,y\n");
    for i in 0..30 {
        let (s, c) = ((i as f64 * 0.7).sin(), (i as f64 * 1.3).cos());
        t.push_str(&format!("{s},{c},{}\n", 2.0 * s - c));
    }
    let data = w("r.csv", &t);
    let model = w("bank.json", "");
    let fit = ["bank", "fit", "--data", &data, "--target", "y", "--iterations", "10", "--model-out", &model];
    let (ok, _, err) = crate::common::bke(&fit);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&model).unwrap();
    let mut j: serde_json::Value = serde_json::from_str(&text).unwrap();
    j["columns"] = serde_json::json!(["u", "u"]);
    let dup = w("dup.json", &j.to_string());
    fails_with(&["bank", "predict", "--model", &dup, "--data", &data], &["`columns`", "'u' appears twice"]);
    let mut j: serde_json::Value = serde_json::from_str(&text).unwrap();
    set_factors(&mut j, 1e308);
    let huge = w("huge.json", &j.to_string());
    fails_with(&["bank", "predict", "--model", &huge, "--data", &data], &["`samples.factor`", "1e308"]);
    // A density model whose normaliser is 1e308.
    let dens = w("dens.json", "");
    let fit = ["density", "fit", "--data", &data, "--columns", "u", "--model-out", &dens];
    let (ok, _, err) = crate::common::bke(&fit);
    assert!(ok, "{err}");
    let mut j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&dens).unwrap()).unwrap();
    j["model"]["normalisation"]["log_z"] = 1e308.into();
    let bad = w("dens_bad.json", &j.to_string());
    fails_with(&["density", "eval", "--model", &bad, "--at", &data], &["normalisation.log_z"]);
}

/// `bke test mmd` within a memory limit below the dense Gram matrix (16 N² bytes: 5.5 MiB for 600
/// pooled points) works on tiles of it, with the same statistic and p-value; the wild bootstrap,
/// which needs the dense matrix, is refused naming the way out.
#[test]
fn mmd_within_a_memory_limit_works_in_blocks() {
    let rows = |shift: f64, phase: f64| {
        let mut t = String::from("a,b\n");
        for i in 0..300 {
            let v = i as f64;
            t.push_str(&format!("{},{}\n", (v * 0.37 + phase).sin() + shift, (v * 0.61 + phase).cos()));
        }
        t
    };
    let (x, y) = (w("mx.csv", &rows(0.0, 0.0)), w("my.csv", &rows(0.15, 0.5)));
    for null in ["permutation", "gamma"] {
        let base = [
            "test",
            "mmd",
            "--x",
            &x,
            "--y",
            &y,
            "--select",
            "median",
            "--null",
            null,
            "--permutations",
            "200",
        ];
        let (ok, dense, err) = crate::common::bke(&base);
        assert!(ok, "{err}");
        let (ok, blocked, err) = crate::common::bke(&[&base[..], &["--max-memory", "4M"]].concat());
        assert!(ok, "{null}: {err}");
        let (a, b) = (dense["statistic"].as_f64().unwrap(), blocked["statistic"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-10, "{null}: {a} {b}");
        let (p, q) = (dense["p_value"].as_f64().unwrap(), blocked["p_value"].as_f64().unwrap());
        assert!((p - q).abs() <= 1e-10 * p, "{null}: {p} {q}");
    }
    let wild =
        ["test", "mmd", "--x", &x, "--y", &y, "--select", "median", "--null", "wild", "--max-memory", "4M"];
    fails_with(&wild, &["wild bootstrap", "--null permutation", "--max-memory"]);
}

/// `bke test hsic` above 256 observations: the default (BKL-Bayes) runs its null on Nyström factors,
/// close to the exact statistics of `--dense` and as decisive on dependent data; a memory limit below
/// the exact Gram matrices of its unresolved narrow kernels is refused naming the cheaper rules.
#[test]
fn hsic_above_256_observations_uses_low_rank_factors() {
    let mut t = String::from("x,y\n");
    for i in 0..400 {
        let x = (i as f64 * 0.618_034).fract() * 2.0 - 1.0;
        let noise = (i as f64 * 0.414_214 + 0.3).fract() - 0.5;
        t.push_str(&format!("{x},{}\n", (3.0 * x).sin() + noise));
    }
    let data = w("hsic400.csv", &t);
    let base = [
        "test",
        "hsic",
        "--x",
        &data,
        "--y",
        &data,
        "--x-columns",
        "x",
        "--y-columns",
        "y",
        "--permutations",
        "200",
    ];
    let (ok, low, err) = crate::common::bke(&base);
    assert!(ok, "{err}");
    let (ok, dense, err) = crate::common::bke(&[&base[..], &["--dense"]].concat());
    assert!(ok, "{err}");
    assert_eq!(low["selection"], "bkl-bayes");
    assert_eq!((&low["null_grams"], &dense["null_grams"]), (&"nystrom".into(), &"exact".into()));
    for out in [&low, &dense] {
        assert!(out["p_value"].as_f64().unwrap() < 0.01, "{out}");
    }
    let (a, b) = (low["statistic"].as_f64().unwrap(), dense["statistic"].as_f64().unwrap());
    assert!((a - b).abs() < 0.05 * b.abs(), "studentised statistic {a} against the dense {b}");
    fails_with(
        &[&base[..], &["--max-memory", "3M"]].concat(),
        &["kept exact", "--select hsicagg", "--max-memory"],
    );
}
