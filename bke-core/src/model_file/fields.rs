//! Checks of a model file's fields, shared by every kind's [`super::ModelFile::validate`]: each
//! refusal names the field (its JSON path in the file, e.g. `hyperparameters.sigma`), says what is
//! wrong with it, and that the file is corrupt and the model must be refitted.
//!
//! The contract of each check:
//!
//! - [`finite`]: every value is finite (JSON cannot hold NaN or ±∞, but a reader of another
//!   format may hand them in).
//! - [`bounded`]: finite and within ±[`MAX_STORED`]: a stored value is multiplied with others in a
//!   prediction (quadratic forms, products of weights and features), and `|v| > 10¹⁵⁰` lets such a
//!   product overflow to ±∞ or NaN. A model fitted on data of any sane scale never comes near it.
//! - [`positive`]: finite and strictly positive.
//! - [`scale`]: a standard deviation, lengthscale, variance, regulariser or ridge: finite, positive,
//!   and its square a *normal* `f64` (`v²` neither overflows to ∞ nor underflows to 0 or a
//!   subnormal, which would turn `r²/v²` into `0/0` or a covariance into `∞ − ∞`).
//! - [`same_len`]: a field's length equals what the others imply.
//! - [`covariance`]: a covariance matrix: bounded, symmetric (to a relative `10⁻⁸`), a positive
//!   diagonal and `|C_ij| ≤ √(C_ii C_jj)` (to a relative `10⁻⁸`), conditions every positive
//!   definite matrix meets, checked in `O(p²)` (necessary, not sufficient, for definiteness).
//! - [`positive_diagonal`]: the diagonal of a triangular factor is positive (a Cholesky factor of a
//!   positive definite matrix).

use crate::CoreError;
use bke_linalg::Mat;

/// Largest magnitude of a stored value that takes part in products ([`bounded`]).
pub const MAX_STORED: f64 = 1e150;

/// The refusal: `invalid field `FIELD`: WHAT; the file is corrupt: refit the model`.
pub fn refuse(field: &str, what: impl std::fmt::Display) -> CoreError {
    CoreError::ModelFile(format!("invalid field `{field}`: {what}; the file is corrupt: refit the model"))
}

/// Errors unless every value of `v` is finite, naming `field` and the first bad index.
pub fn finite(field: &str, v: &[f64]) -> Result<(), CoreError> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(refuse(field, format_args!("entry {i} is {}, not a finite number", v[i]))),
        None => Ok(()),
    }
}

/// [`finite`], and every value within ±[`MAX_STORED`].
pub fn bounded(field: &str, v: &[f64]) -> Result<(), CoreError> {
    finite(field, v)?;
    match v.iter().position(|x| x.abs() > MAX_STORED) {
        Some(i) => Err(refuse(
            field,
            format_args!("entry {i} is {:e}, beyond ±{MAX_STORED:e}: its products overflow", v[i]),
        )),
        None => Ok(()),
    }
}

/// Errors unless `value` is finite and strictly positive.
pub fn positive(field: &str, value: f64) -> Result<(), CoreError> {
    if !(value.is_finite() && value > 0.0) {
        return Err(refuse(field, format_args!("{value} must be finite and strictly positive")));
    }
    Ok(())
}

/// Errors unless `value` is finite, positive and its square a normal `f64` (module docs).
pub fn scale(field: &str, value: f64) -> Result<(), CoreError> {
    positive(field, value)?;
    if !(value * value).is_normal() {
        return Err(refuse(
            field,
            format_args!(
                "{value:e} is too {} for its square to be a normal floating-point number",
                if value > 1.0 { "large" } else { "small" }
            ),
        ));
    }
    Ok(())
}

/// [`scale`] for each entry of `v` (named `field[i]`).
pub fn scales(field: &str, v: &[f64]) -> Result<(), CoreError> {
    v.iter().enumerate().try_for_each(|(i, &s)| scale(&format!("{field}[{i}]"), s))
}

/// Errors unless `found == expected`; `implied` says what implies `expected`.
pub fn same_len(field: &str, found: usize, expected: usize, implied: &str) -> Result<(), CoreError> {
    if found != expected {
        return Err(refuse(field, format_args!("it has {found} entries, but {implied} implies {expected}")));
    }
    Ok(())
}

/// Errors unless `c` is a square, bounded, symmetric matrix with a positive diagonal and
/// `|C_ij| ≤ √(C_ii C_jj)` (module docs).
pub fn covariance(field: &str, c: &Mat) -> Result<(), CoreError> {
    let p = c.nrows();
    if c.ncols() != p {
        return Err(refuse(field, format_args!("it is {p} × {}, not square", c.ncols())));
    }
    bounded(field, c.as_slice())?;
    const TOL: f64 = 1e-8;
    for i in 0..p {
        let cii = c[(i, i)];
        if !(cii > 0.0) {
            return Err(refuse(field, format_args!("diagonal entry {i} is {cii}, not positive")));
        }
        for j in 0..i {
            let (a, b) = (c[(i, j)], c[(j, i)]);
            let bound = (cii * c[(j, j)]).sqrt();
            if (a - b).abs() > TOL * bound {
                return Err(refuse(
                    field,
                    format_args!("entries ({i}, {j}) = {a} and ({j}, {i}) = {b} differ"),
                ));
            }
            if a.abs() > bound * (1.0 + TOL) {
                return Err(refuse(
                    field,
                    format_args!(
                        "entry ({i}, {j}) = {a} exceeds √(C_ii C_jj) = {bound} in magnitude: not a covariance"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Errors unless every value of `diagonal` (a triangular factor's diagonal) is positive.
pub fn positive_diagonal(field: &str, diagonal: impl IntoIterator<Item = f64>) -> Result<(), CoreError> {
    match diagonal.into_iter().enumerate().find(|(_, d)| !(*d > 0.0)) {
        Some((i, d)) => Err(refuse(field, format_args!("diagonal entry {i} is {d}, not positive"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<(), CoreError>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn each_check_names_the_field_and_accepts_sane_values() {
        assert!(finite("a", &[1.0, -2.0]).is_ok() && bounded("a", &[1e150, -1e150]).is_ok());
        assert!(message(finite("a.b", &[0.0, f64::NAN])).contains("`a.b`: entry 1 is NaN"));
        assert!(message(bounded("w", &[0.0, 1e151])).contains("`w`: entry 1 is 1e151"));
        assert!(positive("p", 1e-300).is_ok() && message(positive("p", 0.0)).contains("`p`: 0 must"));
        assert!(scale("s", 1e-150).is_ok() && scale("s", 1e150).is_ok());
        for bad in [0.0, -1.0, f64::INFINITY, f64::NAN, 1e-160, 1e160] {
            let m = message(scale("sigma", bad));
            assert!(m.starts_with("invalid field `sigma`") && m.ends_with("refit the model"), "{m}");
        }
        assert!(message(scales("ls", &[1.0, 0.0])).contains("`ls[1]`"));
        assert!(same_len("x", 3, 3, "y").is_ok());
        assert!(message(same_len("x", 2, 3, "the 3 rows of y")).contains("has 2 entries"));
        assert!(positive_diagonal("f", [1.0, 2.0]).is_ok());
        assert!(message(positive_diagonal("f", [1.0, 0.0])).contains("diagonal entry 1 is 0"));
    }

    #[test]
    fn covariance_accepts_a_covariance_and_refuses_each_defect() {
        let ok = Mat::from_rows(&[vec![2.0, 1.0], vec![1.0, 1.0]]).unwrap();
        assert!(covariance("c", &ok).is_ok());
        for (rows, needle) in [
            (vec![vec![2.0, 1.0], vec![0.5, 1.0]], "differ"),
            (vec![vec![0.0, 0.0], vec![0.0, 1.0]], "diagonal entry 0"),
            (vec![vec![1.0, 2.0], vec![2.0, 1.0]], "not a covariance"),
            (vec![vec![1e300, 0.0], vec![0.0, 1.0]], "beyond"),
        ] {
            let m = message(covariance("c", &Mat::from_rows(&rows).unwrap()));
            assert!(m.contains("`c`") && m.contains(needle), "{m}");
        }
        assert!(message(covariance("c", &Mat::zeros(2, 3))).contains("not square"));
    }
}
