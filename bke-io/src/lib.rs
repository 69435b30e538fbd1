//! Data in and out for bke's front ends (the `bke` CLI and the fuzz targets).
//!
//! In: numeric tables from CSV files (header row, numeric columns; [`csv_parse`]) or NumPy `.npy`
//! files ([`npy`]), chosen by the extension, read whole ([`read`] into a [`CsvTable`]) or in
//! chunks of rows ([`chunks`]); errors name the file, the line and the column. Integer-valued
//! columns of data modelled as continuous get a note on stderr ([`note`]).
//!
//! Out: JSON on stdout ([`json`]), never with a non-finite number ([`finite`]); per-row tables to
//! CSV or `.npy` files, written atomically ([`table_out`]); a clean stop on SIGINT/SIGTERM
//! ([`interrupt`]).
//!
//! Modules depend one way (no two import each other): `table` ← {`csv_parse`, `npy`} ← {`read`,
//! `chunks`}, which also use `note`; `finite` ← `json`; `interrupt` ← `table_out`.

pub mod chunks;
pub mod csv_parse;
pub mod finite;
pub mod interrupt;
pub mod json;
pub mod note;
pub mod npy;
pub mod read;
pub mod table;
pub mod table_out;

pub use chunks::PointChunks;
pub use json::{emit, merge};
pub use note::note_integer_columns;
pub use read::{check_same_columns, read_continuous, read_named, read_points};
pub use table::CsvTable;
pub use table_out::{TableFormat, divert, write_table};
