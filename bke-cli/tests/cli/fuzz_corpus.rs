//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/*`) through the fuzz targets' own entry
//! points (the `bke-fuzz` library, `fuzz/src/lib.rs`): in process, and through the `bke` binary for
//! the CSV and model files. No input may panic, abort or print `null`; bad input must end in a one-line error.
//! New crash inputs found by `cargo xtask fuzz` are added to the corpus and so become tests here.

use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 5, "the seed corpus of {target} is missing: {}", dir.display());
    files
}

/// Runs `bke`; the run must end cleanly: success with JSON free of `null`, or exit status 1 with
/// a one-line `error:` message.
fn clean_run(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_bke")).args(args).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation"), "{args:?}: {stderr}");
    match out.status.code() {
        Some(0) => assert!(!stdout.contains("null"), "{args:?} printed null: {stdout}"),
        Some(1) => assert!(stderr.contains("error: "), "{args:?}: {stderr}"),
        other => panic!("{args:?} ended with {other:?}: {stderr}"),
    }
}

#[test]
fn csv_corpus_replays_cleanly() {
    for f in corpus("csv_reader") {
        bke_fuzz::csv_reader(&std::fs::read(&f).unwrap());
        let p = f.to_str().unwrap();
        clean_run(&["embed", "loglik", "--data", p, "--landmarks", p, "--lengthscale", "1"]);
        clean_run(&["embed", "posterior", "--data", p, "--at", p, "--lengthscale", "1"]);
    }
}

#[test]
fn npy_corpus_replays_cleanly() {
    for f in corpus("npy_reader") {
        bke_fuzz::npy_reader(&std::fs::read(&f).unwrap());
        let p = f.to_str().unwrap();
        // `embed loglik` streams --data through the chunked reader, --landmarks the whole-file one.
        clean_run(&["embed", "loglik", "--data", p, "--landmarks", p, "--lengthscale", "1"]);
        clean_run(&["embed", "posterior", "--data", p, "--at", p, "--lengthscale", "1"]);
    }
}

#[test]
fn model_file_corpus_replays_cleanly() {
    let q = crate::common::write_in("fuzz-corpus", "q.csv", "a,b\n0.1,0.2\n-1,0.5\n2,-0.3\n");
    let q = q.to_str().unwrap();
    for f in corpus("model_files") {
        bke_fuzz::model_files(&std::fs::read(&f).unwrap());
        let m = f.to_str().unwrap();
        clean_run(&["bank", "predict", "--model", m, "--data", q]);
        clean_run(&["density", "eval", "--model", m, "--at", q]);
        clean_run(&["dme", "predict", "--model", m, "--at", q]);
    }
}

#[test]
fn the_seed_models_of_every_kind_load_and_predict() {
    let q = crate::common::write_in("fuzz-corpus", "q2.csv", "a,b\n0.1,0.2\n-1,0.5\n");
    let q = q.to_str().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/model_files");
    for (file, cmd) in [
        ("bank_ok.json", "bank"),
        ("density_ok.json", "density"),
        ("ttgp_ok.json", "dme"),
        ("ttblr_ok.json", "dme"),
        ("legacy_ttgp.json", "dme"),
    ] {
        let m = dir.join(file);
        let m = m.to_str().unwrap();
        let args = match cmd {
            "bank" => vec!["bank", "predict", "--model", m, "--data", q],
            "density" => vec!["density", "eval", "--model", m, "--at", q],
            _ => vec!["dme", "predict", "--model", m, "--at", q],
        };
        let (ok, out, err) = crate::common::bke(&args);
        assert!(ok && !out.to_string().contains("null"), "{file}: {err}");
    }
    let text = std::fs::read_to_string(dir.join("baseline_ok.json")).unwrap();
    let saved =
        bke_core::model_file::from_str::<bke_bank::baselines::BaselineModel>(&text, "b.json").unwrap();
    let at = bke_core::Points::new("q", vec![0.1, 0.2, -1.0, 0.5], 2).unwrap();
    let mean = saved.model.predict_mean::<bke_linalg::Faer>(&at).unwrap();
    assert!(mean.len() == 2 && mean.iter().all(|v| v.is_finite()), "{mean:?}");
}

#[test]
fn params_corpus_replays_cleanly() {
    for f in corpus("params") {
        bke_fuzz::params(&std::fs::read(&f).unwrap());
    }
}

#[test]
fn hand_edited_model_files_are_refused_naming_the_problem() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/model_files");
    let q = crate::common::write_in("fuzz-corpus", "q1.csv", "a,b\n0.1,0.2\n");
    for (file, cmd, needle) in [
        ("bank_zero_scale.json", "bank", "scale"),
        ("bank_negative_y_scale.json", "bank", "scale"),
        ("density_zero_lengthscale.json", "density", "lengthscale"),
        ("density_negative_variance.json", "density", "sigma0_sq"),
        ("density_negative_beta.json", "density", "beta"),
        ("ttgp_negative_sigma.json", "dme", "`hyperparameters.sigma`"),
        ("ttgp_huge_epsilon.json", "dme", "`hyperparameters.epsilon`"),
        ("ttgp_tiny_lengthscale.json", "dme", "`hyperparameters.lengthscale_y[0]`"),
        ("ttgp_huge_z_tilde.json", "dme", "`z_tilde`"),
        ("ttgp_lengthscale_dims.json", "dme", "`hyperparameters.lengthscale_x`"),
        ("ttgp_duplicate_columns.json", "dme", "`columns`"),
        ("ttblr_asymmetric_covariance.json", "dme", "`weights_covariance`"),
        ("ttblr_zero_variance.json", "dme", "`weights_covariance`"),
        ("ttblr_features_mismatch.json", "dme", "`frequencies`"),
        ("ttblr_huge_weights.json", "dme", "`weights_mean`"),
        ("ttblr_negative_gamma.json", "dme", "`gamma`"),
    ] {
        let m = dir.join(file);
        let (m, q) = (m.to_str().unwrap(), q.to_str().unwrap());
        let args = match cmd {
            "bank" => vec!["bank", "predict", "--model", m, "--data", q],
            "density" => vec!["density", "eval", "--model", m, "--at", q],
            _ => vec!["dme", "predict", "--model", m, "--at", q],
        };
        let (ok, _, err) = crate::common::bke(&args);
        assert!(!ok && err.contains(file) && err.contains(needle), "{file}: {err}");
    }
}
