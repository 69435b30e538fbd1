//! Data files in: CSV, or NumPy `.npy` chosen by the extension (see [`crate::npy`]), read whole
//! into a [`CsvTable`] or straight into the selected columns as [`Points`].

use crate::note::note_integer_columns;
use crate::npy;
use crate::table::CsvTable;
use anyhow::{Context, bail};
use bke_core::Points;
use std::path::Path;

impl CsvTable {
    /// Reads a CSV file with a header row; every cell must parse as a finite number. A file whose
    /// name ends in `.npy` is read as a NumPy array instead (columns named `0`, `1`, …; see
    /// [`crate::npy`]).
    pub fn read(path: &Path) -> anyhow::Result<CsvTable> {
        let shown = path.display().to_string();
        let is_npy = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
        let kind = if is_npy { ".npy" } else { "CSV" };
        let bytes = std::fs::read(path).with_context(|| format!("cannot open {kind} file {shown}"))?;
        if is_npy {
            return npy::parse(&bytes, shown);
        }
        Self::from_bytes(&bytes, shown)
    }
}

/// Reads the selected columns of a CSV file as points.
pub fn read_points(path: &Path, columns: Option<&[String]>) -> anyhow::Result<Points> {
    CsvTable::read(path)?.points(columns)
}

/// The selected columns of `path` (at least one data row) and their names.
pub fn read_named(path: &Path, cols: Option<&[String]>) -> anyhow::Result<(Points, Vec<String>)> {
    let t = CsvTable::read(path)?;
    if t.rows == 0 {
        bail!("{}: no data rows", path.display());
    }
    let names = cols.map_or_else(|| t.names.clone(), <[String]>::to_vec);
    Ok((t.points(cols)?, names))
}

/// Errors unless the file of `other_flag` has the columns of `flag` (same names, same order), as
/// when a kernel compares the two coordinate by coordinate (e.g. `bke dme`'s `--ytilde` and `--y`).
pub fn check_same_columns(
    (flag, names): (&str, &[String]),
    (other_flag, other, other_names): (&str, &Path, &[String]),
) -> anyhow::Result<()> {
    if names != other_names {
        bail!(
            "{other_flag} {} has columns ({}) but {flag} has ({}): they must be the same variables in \
             the same order; rename or reorder the columns, or choose them in both files (--y-cols)",
            other.display(),
            other_names.join(", "),
            names.join(", ")
        );
    }
    Ok(())
}

/// Reads the selected columns of a CSV file of data to be modelled as continuous, noting
/// integer-valued columns ([`note_integer_columns`]).
pub fn read_continuous(path: &Path, columns: Option<&[String]>) -> anyhow::Result<Points> {
    let t = CsvTable::read(path)?;
    let x = t.points(columns)?;
    note_integer_columns(&x, path, columns.unwrap_or(&t.names));
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("bke-io-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn columns_whose_scale_overflows_are_refused_by_name() {
        let p = write("huge.csv", "a,b\n1e200,0.5\n1.1e200,0.7\n-3,0.1\n");
        let e = read_points(&p, None).unwrap_err().to_string();
        assert!(
            e.contains("column 'a'") && e.contains("the scale overflows") && e.contains("rescale"),
            "{e}"
        );
        // Only the selected columns are checked; chunked reading refuses the same way.
        assert!(read_points(&p, Some(&["b".to_string()])).is_ok());
        let mut chunks = crate::PointChunks::open(&p, None).unwrap();
        let e = chunks.next_chunk().unwrap_err().to_string();
        assert!(e.contains("column 'a'") && e.contains("the scale overflows"), "{e}");
    }

    #[test]
    fn reads_and_selects_columns() {
        let p = write("ok.csv", "a,b,c\n1,2,3\n4,5,6\n");
        let t = CsvTable::read(&p).unwrap();
        let pts = t.points(Some(&["c".to_string(), "a".to_string()])).unwrap();
        assert_eq!(pts.as_slice(), &[3.0, 1.0, 6.0, 4.0]);
        assert!(
            t.points(Some(&["zz".to_string()])).unwrap_err().to_string().contains("no column named 'zz'")
        );
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let p = write("bad.csv", "a,b\n1,2\n3,oops\n");
        let e = CsvTable::read(&p).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("column 2 ('b')") && e.contains("oops"), "{e}");
        let p = write("nan.csv", "a,b\n1,NaN\n");
        let e = CsvTable::read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("not finite"), "{e}");
        let p = write("ragged.csv", "a,b\n1,2,3\n");
        assert!(CsvTable::read(&p).is_err());
        let p = write("inf.csv", "a,b\n1,2\n3,-inf\n");
        let e = CsvTable::read(&p).unwrap_err().to_string();
        assert!(e.contains("inf.csv, line 3, column 2 ('b')") && e.contains("not finite"), "{e}");
    }

    #[test]
    fn duplicated_column_names_are_an_error() {
        let p = write("dup.csv", "x,y,x\n1,2,3\n");
        let e = CsvTable::read(&p).unwrap_err().to_string();
        assert!(e.contains("line 1: columns 1 and 3 are both named 'x'"), "{e}");
    }

    #[test]
    fn empty_cells_of_a_single_column_are_an_error_not_a_skipped_row() {
        let p = write("one.csv", "a\n1\n\n3\n");
        let e = CsvTable::read(&p).unwrap_err().to_string();
        assert!(e.contains("line 3, column 1 ('a')") && e.contains("empty"), "{e}");
        // Line numbers after a quoted field still count file lines; a trailing newline is fine.
        let p = write("tail.csv", "a\n1\n2\n");
        assert_eq!(CsvTable::read(&p).unwrap().rows, 2);
        let p = write("one_empty.csv", "a,b\n1,\n");
        let e = CsvTable::read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2, column 2 ('b')") && e.contains("not a number"), "{e}");
    }
}
