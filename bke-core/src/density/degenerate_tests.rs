//! Degenerate inputs of the density estimator: constant columns at fit time, inconsistent
//! normalisers in model files.

use super::*;
use crate::model_file::{Saved, from_str, to_string};
use bke_linalg::DefaultBackend;

/// Data with a constant column (or all rows identical) are refused up front, naming the column,
/// instead of a degenerate fit with an undefined normaliser error.
#[test]
fn a_constant_column_is_refused() {
    let fit = |x: &Points| KernelStudentTParams::default().check().unwrap().fit::<DefaultBackend>(x);
    let e = fit(&Points::new("x", vec![5.0; 20], 1).unwrap()).unwrap_err().to_string();
    assert!(e.contains("column 1 is constant") && e.contains("every value is 5"), "{e}");
    let rows: Vec<f64> = (0..20).flat_map(|i| [i as f64 * 0.3, 2.0]).collect();
    let e = fit(&Points::new("x", rows, 2).unwrap()).unwrap_err().to_string();
    assert!(e.contains("column 2 is constant"), "{e}");
}

/// A model file whose `log_z` is inconsistent with the model (1e308, or far below the bound) is
/// refused on load, naming the field; the file as written loads.
#[test]
fn an_inconsistent_normaliser_is_refused_on_load() {
    let x = Points::new("x", (0..15).map(|i| (i as f64 * 0.77).sin()).collect(), 1).unwrap();
    let params = KernelStudentTParams {
        lengthscales: Some(vec![0.5]),
        alpha: Some(1.0),
        beta: Some(0.1),
        sigma0_sq: Some(1.0),
        ..Default::default()
    };
    let model = params.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    let log_z = model.normalisation().unwrap().log_z;
    let text = to_string(&Saved::new(model)).unwrap();
    assert!(from_str::<KernelStudentT>(&text, "ok.json").is_ok());
    let shown = format!("\"log_z\": {}", serde_json::to_string(&log_z).unwrap());
    assert!(text.contains(&shown), "{text}");
    for bad in ["1e308", "-1e6", "100.0"] {
        let e = from_str::<KernelStudentT>(&text.replace(&shown, &format!("\"log_z\": {bad}")), "bad.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.json") && e.contains("normalisation.log_z") && e.contains("refit"), "{e}");
    }
}
