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
    pub fn points_at(&self, idx: &[usize]) -> anyhow::Result<Points> {
        let w = self.names.len();
        let data = (0..self.rows).flat_map(|i| idx.iter().map(move |&j| self.values[i * w + j])).collect();
        Ok(Points::new(&self.path, data, idx.len().max(1))?)
    }
}
