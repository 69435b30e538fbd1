//! Density model files against their contract: round trips (same log densities and samples), kind
//! mismatches, the bke 0.1 layout, invalid and oversized contents, atomic writes.

use super::tests::two_bumps;
use super::*;
use crate::{KernelFamily, LogDensity};
use bke_linalg::DefaultBackend;

/// Model files: round trip (same log densities and samples, the factor
/// recomputed), kind mismatch, the bke 0.1 layout, invalid contents.
#[test]
fn model_file_round_trip_kind_and_legacy() {
    use crate::model_file::{FORMAT, ModelFile, Saved, from_str, to_string};
    let x = two_bumps(30, 22);
    let params = KernelStudentTParams {
        select: SelectOptions { lengthscale_factors: vec![0.5, 1.0], folds: 3, ..Default::default() },
        ..Default::default()
    };
    let model = params.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    let saved = Saved { columns: vec!["temp".into()], target: None, model: model.clone() };
    let text = to_string(&saved).unwrap();
    assert!(text.contains(FORMAT) && text.contains("\"kind\": \"density\""));
    let back = from_str::<KernelStudentT>(&text, "d.json").unwrap();
    assert_eq!(back.columns, vec!["temp".to_string()]);
    let q = Points::from_1d("q", &[-1.0, 0.3, 1.4, 50.0]).unwrap();
    let (a, b) = (
        model.log_density::<DefaultBackend>(&q).unwrap(),
        back.model.log_density::<DefaultBackend>(&q).unwrap(),
    );
    for (u, v) in a.iter().zip(&b) {
        assert!(u == v || (u - v).abs() < 1e-10, "{u} vs {v}");
    }
    assert!(a[3].is_finite() && a[3] < a[1], "{a:?}");
    assert_eq!(
        model.sample::<DefaultBackend>(50, 1).unwrap().points,
        back.model.sample::<DefaultBackend>(50, 1).unwrap().points
    );
    // A rule larger than any normaliser may spend is refused, naming the field.
    let panels = format!("\"panels\": {}", model.normalisation().unwrap().panels);
    assert!(text.contains(&panels), "{text}");
    let huge = text
        .replacen(&panels, "\"panels\": 1073741824", 1)
        .replace("\"base_panels\": 16", "\"base_panels\": 1");
    let e = from_str::<KernelStudentT>(&huge, "d.json").unwrap_err().to_string();
    assert!(e.contains("normalisation.panels"), "{e}");
    // Another kind is refused, naming both.
    let other = text.replace("\"kind\": \"density\"", "\"kind\": \"bank-regression\"");
    let e = from_str::<KernelStudentT>(&other, "d.json").unwrap_err().to_string();
    assert!(e.contains("'bank-regression'") && e.contains("'density'"), "{e}");
    // The layout `bke density fit` of bke 0.1 wrote.
    let n = model.normalisation().unwrap();
    let legacy = serde_json::json!({
        "format": "bke-density-v1",
        "columns": ["temp"],
        "kernel": "rq:1",
        "lengthscales": [0.7],
        "alpha": 1.0, "beta": 0.01, "sigma0_sq": 1.0,
        "data": x.iter().map(<[f64]>::to_vec).collect::<Vec<_>>(),
        "normalisation": {"lower": n.domain.lower, "upper": n.domain.upper, "log_z": 1.25, "rel_err": 1e-7,
                          "converged": true, "panels": 32, "evaluations": 768},
        "cv_log_lik": null,
    });
    let old = from_str::<KernelStudentT>(&legacy.to_string(), "old.json").unwrap();
    assert_eq!(old.columns, vec!["temp".to_string()]);
    assert_eq!(old.model.kernel().family(), KernelFamily::RationalQuadratic { alpha: 1.0 });
    let lu = old.model.log_unnormalised::<DefaultBackend>(&q).unwrap();
    assert!((old.model.log_density::<DefaultBackend>(&q).unwrap()[0] - (lu[0] - 1.25)).abs() < 1e-15);
    // Invalid contents fail with a message, not later.
    let bad = legacy.to_string().replace("\"alpha\":1.0", "\"alpha\":-1.0");
    assert!(from_str::<KernelStudentT>(&bad, "bad.json").unwrap_err().to_string().contains("alpha"));
    let bad = legacy.to_string().replace("\"kernel\":\"rq:1\"", "\"kernel\":\"cauchy\"");
    assert!(from_str::<KernelStudentT>(&bad, "bad.json").unwrap_err().to_string().contains("kernel"));
    assert_eq!(KernelStudentT::<Kernel>::KINDS, &["density"]);
}

/// `save` writes whole files atomically: a failed write (missing directory) leaves nothing behind and
/// an existing model file is replaced whole.
#[test]
fn model_file_writes_are_atomic() {
    use crate::model_file::{Saved, load, save};
    let dir = std::env::temp_dir().join(format!("bke-density-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = two_bumps(12, 23);
    let fixed = |l: f64| KernelStudentTParams {
        lengthscales: Some(vec![l]),
        alpha: Some(1.0),
        beta: Some(0.1),
        sigma0_sq: Some(1.0),
        ..Default::default()
    };
    let path = dir.join("d.json");
    save(&Saved::new(fixed(0.5).check().unwrap().fit::<DefaultBackend>(&x).unwrap()), &path).unwrap();
    save(&Saved::new(fixed(0.9).check().unwrap().fit::<DefaultBackend>(&x).unwrap()), &path).unwrap();
    assert_eq!(load::<KernelStudentT>(&path).unwrap().model.kernel().lengthscales(), &[0.9]);
    let m = fixed(0.9).check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    assert!(save(&Saved::new(m), &dir.join("missing/d.json")).is_err());
    let files: Vec<_> =
        std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(files, vec![std::ffi::OsString::from("d.json")], "no temporary file left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}
