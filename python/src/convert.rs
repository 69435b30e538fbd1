//! numpy arrays in and out. The Python layer hands over float64 arrays of the right number of
//! dimensions (converting other dtypes and naming the argument in its errors); here any memory
//! order (C, Fortran, strided views) is read in logical row-major order into [`Points`], whose
//! constructor rejects NaN and ±∞ with the row and column. Arrays that rust-numpy cannot view in
//! place (empty ones, whose strides may be zero, and ones whose data are not aligned for `f64`, e.g.
//! `np.frombuffer` at an odd offset) are handled without a view, so calling `_bke` directly with
//! them gives an exception or a result, never a panic.

use crate::exec::Failure;
use bke_core::Points;
use numpy::ndarray::Dimension;
use numpy::{
    PyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;

/// The rows of `a` as points; `what` names the argument in errors.
pub fn points(what: &str, a: &PyReadonlyArray2<'_, f64>) -> Result<Points, Failure> {
    let dim = a.shape()[1];
    if dim == 0 {
        return Err(Failure::Value(format!("{what} has 0 columns: it needs at least one feature")));
    }
    Ok(Points::new(what, row_major(a).map_err(Failure::Python)?, dim)?)
}

/// The values of a 1-D array.
pub fn values(a: &PyReadonlyArray1<'_, f64>) -> PyResult<Vec<f64>> {
    row_major(a)
}

/// The elements of `a` in logical row-major order, whatever its memory layout. Empty arrays are
/// not viewed (their strides may be zero, which ndarray refuses with a panic), and arrays whose
/// data are not aligned for `f64` are first copied by numpy into aligned memory (a view of them
/// would be undefined behaviour).
fn row_major<D: Dimension>(a: &PyReadonlyArray<'_, f64, D>) -> PyResult<Vec<f64>> {
    if a.len() == 0 {
        return Ok(Vec::new());
    }
    if (a.data() as usize) % std::mem::align_of::<f64>() != 0 {
        let copy = a.as_any().call_method0("copy")?.cast_into::<PyArray<f64, D>>()?;
        return Ok(copy.readonly().as_array().iter().copied().collect());
    }
    Ok(a.as_array().iter().copied().collect())
}

/// A 1-D numpy array.
pub fn array1<'py>(py: Python<'py>, v: Vec<f64>) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_vec(py, v)
}

/// A `rows × cols` numpy array from a row-major buffer.
pub fn array2<'py>(
    py: Python<'py>,
    rows: usize,
    cols: usize,
    v: Vec<f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    PyArray1::from_vec(py, v).reshape([rows, cols])
}

/// Two 1-D numpy arrays (e.g. a mean and a variance).
pub type ArrayPair<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

/// The points as a `n × D` numpy array.
pub fn points_array<'py>(py: Python<'py>, p: &Points) -> PyResult<Bound<'py, PyArray2<f64>>> {
    array2(py, p.len(), p.dim(), p.as_slice().to_vec())
}
