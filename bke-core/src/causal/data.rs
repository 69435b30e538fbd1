//! The observations that causal discovery reads: named variables, optionally with a time index.

use crate::{CoreError, Points};

/// Observations of named variables (one column of `values` per variable), optionally with a time
/// index for pre-whitening.
#[derive(Debug, Clone, PartialEq)]
pub struct CausalData {
    names: Vec<String>,
    values: Points,
    time: Option<Vec<f64>>,
}

impl CausalData {
    /// Errors unless there is one distinct, non-empty name per column, at least two variables and
    /// five rows, no constant column (it can be neither cause nor effect, and no kernel tells its
    /// values apart), and (when given) one finite time value per row.
    pub fn new(names: Vec<String>, values: Points, time: Option<Vec<f64>>) -> Result<Self, CoreError> {
        if names.len() != values.dim() {
            return Err(CoreError::DimensionMismatch {
                what: "variable names (one per column)".into(),
                expected: values.dim(),
                found: names.len(),
            });
        }
        if names.len() < 2 {
            return Err(CoreError::Empty { what: "variables (causal discovery)".into(), needed: 2 });
        }
        for (i, a) in names.iter().enumerate() {
            if a.is_empty() || names[..i].contains(a) {
                return Err(CoreError::InvalidChoice {
                    what: format!("variable name '{a}'"),
                    reason: "names must be non-empty and distinct".into(),
                });
            }
        }
        values.check_len("observations", 5)?;
        for (j, name) in names.iter().enumerate() {
            let first = values.point(0)[j];
            if values.iter().all(|p| p[j] == first) {
                return Err(CoreError::InvalidChoice {
                    what: format!("variable '{name}'"),
                    reason: format!(
                        "it is constant (every observation is {first}), so it can be neither cause nor effect; remove it"
                    ),
                });
            }
        }
        if let Some(t) = &time {
            if t.len() != values.len() {
                return Err(CoreError::DimensionMismatch {
                    what: "time index (one value per row)".into(),
                    expected: values.len(),
                    found: t.len(),
                });
            }
            if let Some(row) = t.iter().position(|v| !v.is_finite()) {
                return Err(CoreError::NonFinite { what: "time index".into(), row, col: 0, value: t[row] });
            }
        }
        Ok(Self { names, values, time })
    }

    /// The variable names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The observations, one column per variable.
    pub fn values(&self) -> &Points {
        &self.values
    }

    /// The time index, if any.
    pub fn time(&self) -> Option<&[f64]> {
        self.time.as_deref()
    }

    /// Column `j` of the observations.
    pub fn column(&self, j: usize) -> Vec<f64> {
        self.values.iter().map(|p| p[j]).collect()
    }
}

/// The columns `cols` of `values` as points (in that order).
pub(crate) fn columns(values: &Points, cols: &[usize]) -> Points {
    let data = values.iter().flat_map(|p| cols.iter().map(move |&c| p[c])).collect();
    Points::new("columns", data, cols.len().max(1)).expect("finite values from finite points")
}
