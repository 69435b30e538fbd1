//! `--out FILE`: the flag of the commands whose per-row arrays can go to a table file
//! ([`bke_io::table_out`] writes it).

use serde_json::Value;
use std::path::PathBuf;

/// `--out FILE`: a command's per-row arrays written to a file instead of into its JSON.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OutArgs {
    /// Write the output's per-row arrays (one entry per query row, e.g. mean and variance) to this
    /// file as columns, CSV or, when the name ends in .npy, a NumPy float64 array, instead of into
    /// the JSON; the JSON then gives the file ("out"), its columns in order ("out_columns") and its
    /// number of rows ("out_rows"). A point-valued entry (a row of d numbers) takes d columns,
    /// NAME_0 … NAME_{d-1}.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

impl OutArgs {
    /// With `--out`: moves the arrays `fields` of `value` into the file ([`bke_io::divert`]).
    /// Without `--out`, leaves `value` as it is.
    pub fn divert(&self, value: &mut Value, rows: usize, fields: &[&str]) -> anyhow::Result<()> {
        bke_io::divert(self.out.as_deref(), value, rows, fields)
    }
}
