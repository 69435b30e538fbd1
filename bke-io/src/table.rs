//! A numeric table read from a data file (CSV or `.npy`): column names and row-major values, and
//! the selection of columns as [`Points`].

use anyhow::Context;
use bke_core::Points;

/// A numeric CSV table: column names and the values, row-major.
#[derive(Debug, Clone)]
pub struct CsvTable {
    /// The file it came from (for messages).
    pub path: String,
    /// Column names, in file order.
    pub names: Vec<String>,
    /// Row-major values, `rows × names.len()`.
    pub values: Vec<f64>,
    /// Number of data rows.
    pub rows: usize,
}

/// Largest magnitude of a data value a kernel model can use: squared distances (and so kernel
/// values, bandwidth heuristics and gradients) stay finite with room to spare below it.
pub const MAX_ABS_VALUE: f64 = 1e150;

/// Errors, naming the column and the file, when a column spanning `[lo, hi]` reaches beyond
/// ±[`MAX_ABS_VALUE`]: the scale overflows (squared distances exceed the largest float), so every
/// kernel quantity on it would be ∞ or NaN. An empty column (`lo > hi`) passes.
pub fn check_scale(path: &str, column: &str, lo: f64, hi: f64) -> anyhow::Result<()> {
    let big = lo.abs().max(hi.abs());
    if lo <= hi && big > MAX_ABS_VALUE {
        anyhow::bail!(
            "{path}: column '{column}' has values up to {big:e}: the scale overflows (squared \
             distances between such values exceed the largest float, so kernels, lengthscales and \
             statistics on it are not finite); rescale the data (e.g. standardise the column: \
             subtract its mean, divide by its standard deviation) to values within ±{MAX_ABS_VALUE:e}"
        );
    }
    Ok(())
}

impl CsvTable {
    /// The index of the column called `name`, or an error listing the columns.
    pub fn column_index(&self, name: &str) -> anyhow::Result<usize> {
        self.names.iter().position(|n| n == name).with_context(|| {
            format!("{}: no column named '{name}'; the columns are: {}", self.path, self.names.join(", "))
        })
    }

    /// The values of one column.
    pub fn column(&self, j: usize) -> Vec<f64> {
        (0..self.rows).map(|i| self.values[i * self.names.len() + j]).collect()
    }

    /// The selected columns (all when `columns` is `None`) as points.
    pub fn points(&self, columns: Option<&[String]>) -> anyhow::Result<Points> {
        let idx: Vec<usize> = match columns {
            Some(cols) => cols.iter().map(|c| self.column_index(c)).collect::<anyhow::Result<_>>()?,
            None => (0..self.names.len()).collect(),
        };
        self.points_at(&idx)
    }

    /// The columns at the given indices as points.
    /// Errors when a selected column holds a value beyond ±[`MAX_ABS_VALUE`] (see
    /// [`check_scale`]).
    pub fn points_at(&self, idx: &[usize]) -> anyhow::Result<Points> {
        let w = self.names.len();
        for &j in idx {
            let (lo, hi) = (0..self.rows)
                .map(|i| self.values[i * w + j])
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
            check_scale(&self.path, &self.names[j], lo, hi)?;
        }
        let data = (0..self.rows).flat_map(|i| idx.iter().map(move |&j| self.values[i * w + j])).collect();
        Ok(Points::new(&self.path, data, idx.len().max(1))?)
    }
}
