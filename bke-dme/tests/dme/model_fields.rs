//! The field checks of the TTGP and TTBLR model files on load (`bke_core::model_file::fields`): a
//! file written by a fit loads; each class of corruption — a non-positive scale, a scale whose
//! square over- or underflows, a stored value beyond ±10¹⁵⁰, inconsistent dimensions, a matrix that
//! is not a covariance, repeated column names — is refused with a message naming the field.

use crate::common::*;
use bke_core::model_file::{Saved, from_str, to_string};
use bke_core::{Kernel, Params};
use bke_dme::ttblr::{Ttblr, TtblrParams};
use bke_dme::ttgp::Ttgp;
use bke_linalg::DefaultBackend;
use serde_json::{Value, json};

fn ttgp_file() -> Value {
    let data = problem(21, 9, 6, 1, 1);
    let gp = hyper(1, 1, false).check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    let saved = Saved { columns: vec!["x".into()], target: Some("z".into()), model: gp };
    serde_json::from_str(&to_string(&saved).unwrap()).unwrap()
}

fn ttblr_file() -> Value {
    let data = problem(22, 20, 15, 1, 1);
    let p = TtblrParams {
        kernel_x: Kernel::se(1.5).unwrap(),
        kernel_y: Kernel::se(1.5).unwrap(),
        features: 4,
        sigma: 0.4,
        ..Default::default()
    };
    let model = p.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    serde_json::from_str(&to_string(&Saved::new(model)).unwrap()).unwrap()
}

/// Sets `file[path] = value` (a JSON pointer) and returns the loader's error for the result.
fn refusal(file: &Value, path: &str, value: Value, ttgp: bool) -> String {
    let mut f = file.clone();
    *f.pointer_mut(path).unwrap_or_else(|| panic!("no {path}")) = value;
    let text = f.to_string();
    let e = if ttgp {
        from_str::<Ttgp>(&text, "m.json").map(|_| ()).unwrap_err()
    } else {
        from_str::<Ttblr>(&text, "m.json").map(|_| ()).unwrap_err()
    };
    e.to_string()
}

fn assert_names(e: &str, field: &str) {
    assert!(
        e.starts_with("m.json: ") && e.contains(&format!("`{field}`")) && e.contains("refit the model"),
        "expected a refusal naming `{field}`: {e}"
    );
}

#[test]
fn files_written_by_a_fit_load() {
    assert!(from_str::<Ttgp>(&ttgp_file().to_string(), "m.json").is_ok());
    assert!(from_str::<Ttblr>(&ttblr_file().to_string(), "m.json").is_ok());
}

#[test]
fn non_positive_scales_are_refused_naming_the_field() {
    let (gp, bl) = (ttgp_file(), ttblr_file());
    for (path, field) in [
        ("/model/hyperparameters/sigma", "hyperparameters.sigma"),
        ("/model/hyperparameters/lambda", "hyperparameters.lambda"),
        ("/model/hyperparameters/epsilon", "hyperparameters.epsilon"),
    ] {
        assert_names(&refusal(&gp, path, json!(0.0), true), field);
        assert_names(&refusal(&gp, path, json!(-2.0), true), field);
    }
    for field in ["sigma", "beta", "gamma"] {
        assert_names(&refusal(&bl, &format!("/model/{field}"), json!(-1.0), false), field);
    }
}

#[test]
fn scales_whose_squares_overflow_or_underflow_are_refused() {
    let (gp, bl) = (ttgp_file(), ttblr_file());
    assert_names(&refusal(&gp, "/model/hyperparameters/sigma", json!(1e300), true), "hyperparameters.sigma");
    assert_names(
        &refusal(&gp, "/model/hyperparameters/epsilon", json!(1e-320), true),
        "hyperparameters.epsilon",
    );
    let e = refusal(&gp, "/model/hyperparameters/lengthscale_y", json!([1e-300]), true);
    assert_names(&e, "hyperparameters.lengthscale_y[0]");
    // σ and λ pass alone, but σ²/(nλ) underflows.
    let mut tiny = gp.clone();
    tiny["model"]["hyperparameters"]["sigma"] = json!(1e-150);
    let e = refusal(&tiny, "/model/hyperparameters/lambda", json!(1e150), true);
    assert_names(&e, "hyperparameters.lambda");
    assert!(e.contains("β²"), "{e}");
    assert_names(&refusal(&bl, "/model/beta", json!(1e308), false), "beta");
    assert_names(&refusal(&bl, "/model/lengthscale_x", json!([1e200]), false), "lengthscale_x[0]");
}

#[test]
fn stored_values_beyond_the_bound_are_refused() {
    let (gp, bl) = (ttgp_file(), ttblr_file());
    assert_names(&refusal(&gp, "/model/z_tilde/0", json!(1e308), true), "z_tilde");
    assert_names(&refusal(&gp, "/model/x/3/0", json!(-1e200), true), "x");
    assert_names(&refusal(&gp, "/model/y_tilde/1/0", json!(1e151), true), "y_tilde");
    assert_names(&refusal(&bl, "/model/frequencies/0/0", json!(1e308), false), "frequencies");
    assert_names(&refusal(&bl, "/model/weights_mean/2", json!(-1e300), false), "weights_mean");
    assert_names(&refusal(&bl, "/model/log_marginal", json!(1e308), false), "log_marginal");
}

#[test]
fn inconsistent_dimensions_are_refused() {
    let (gp, bl) = (ttgp_file(), ttblr_file());
    let e = refusal(&gp, "/model/hyperparameters/lengthscale_x", json!([1.0, 2.0]), true);
    assert_names(&e, "hyperparameters.lengthscale_x");
    assert_names(&refusal(&bl, "/model/lengthscale_x", json!([1.0, 2.0]), false), "lengthscale_x");
    assert_names(&refusal(&bl, "/model/features", json!(7), false), "frequencies");
    let mut short = bl.clone();
    short["model"]["weights_mean"].as_array_mut().unwrap().pop();
    let e = from_str::<Ttblr>(&short.to_string(), "m.json").map(|_| ()).unwrap_err().to_string();
    assert_names(&e, "weights_mean");
}

#[test]
fn a_weight_covariance_that_is_not_one_is_refused() {
    let bl = ttblr_file();
    let c = |i: usize, j: usize| format!("/model/weights_covariance/{i}/{j}");
    let e = refusal(&bl, &c(0, 0), json!(0.0), false);
    assert_names(&e, "weights_covariance");
    assert!(e.contains("diagonal entry 0"), "{e}");
    let e = refusal(&bl, &c(0, 1), json!(123.0), false);
    assert_names(&e, "weights_covariance");
    assert!(e.contains("differ"), "{e}");
    // symmetric, but |C_01| > √(C_00 C_11)
    let mut f = bl.clone();
    let big = 2.0
        * (f.pointer(&c(0, 0)).unwrap().as_f64().unwrap() * f.pointer(&c(1, 1)).unwrap().as_f64().unwrap())
            .sqrt();
    *f.pointer_mut(&c(0, 1)).unwrap() = json!(big);
    *f.pointer_mut(&c(1, 0)).unwrap() = json!(big);
    let e = from_str::<Ttblr>(&f.to_string(), "m.json").map(|_| ()).unwrap_err().to_string();
    assert_names(&e, "weights_covariance");
    assert!(e.contains("not a covariance"), "{e}");
}

#[test]
fn repeated_column_names_are_refused() {
    let e = refusal(&ttgp_file(), "/columns", json!(["x", "x"]), true);
    assert!(e.contains("`columns`") && e.contains("'x' appears twice"), "{e}");
    let e = refusal(&ttgp_file(), "/target", json!("x"), true);
    assert!(e.contains("`target`"), "{e}");
}
