//! Numeric tables written to files: CSV (the default) or NumPy `.npy`, chosen by the output file's
//! extension (`.npy`, any case), always atomically (a temporary file beside the target, renamed
//! over it when complete; an error or an interrupt leaves the target as it was).
//!
//! **`.npy` layout** (NumPy format 1.0, `numpy.lib.format`): the magic `\x93NUMPY`, version bytes
//! `1, 0`, a little-endian `u16` header length, then the header, an ASCII Python dict
//! `{'descr': '<f8', 'fortran_order': False, 'shape': (ROWS, COLS), }` padded with spaces and
//! ended by `\n` so that the data start at a multiple of 64 bytes; then the values as
//! little-endian IEEE-754 doubles in C (row-major) order. A `.npy` file has no column names: column
//! `j` of the array is column `j` of the CSV the same command writes (its header names them, in
//! the same order), and every command that writes one reports the names in its JSON output. Every
//! value is an `f64`, integer-valued columns (counts, flags) included, exactly the value the CSV
//! prints (Rust's shortest round-trip formatting), so `numpy.load` and reading the CSV give the same
//! bits.

use anyhow::{Context, bail};
use bke_core::model_file::AtomicFile;
use serde_json::Value;
use std::io::Write as _;
use std::path::Path;

/// A command's per-row arrays moved from its JSON into the table file `out` (the CLI's `--out`):
/// moves the arrays `fields` of `value` (those present; each of `rows` entries, numbers or
/// equal-length lists of numbers) into the file, in the order of `fields`, and records the file in
/// `value` (`out`, `out_columns`, `out_rows`). A point-valued entry (a row of d numbers) takes d
/// columns, `NAME_0` … `NAME_{d-1}`. A `null` entry is written as −∞ (the JSON writes a log density
/// of −∞ as `null`). Without a file (`None`), leaves `value` as it is.
pub fn divert(out: Option<&Path>, value: &mut Value, rows: usize, fields: &[&str]) -> anyhow::Result<()> {
    let Some(path) = out else { return Ok(()) };
    let obj = value.as_object_mut().context("internal error: a command's JSON output must be an object")?;
    let mut names = Vec::new();
    let mut columns: Vec<Vec<f64>> = Vec::new();
    for &field in fields {
        let Some(Value::Array(entries)) = obj.get(field) else { continue };
        if entries.len() != rows {
            bail!("internal error: output '{field}' has {} entries for {rows} rows", entries.len());
        }
        let width = entries.first().and_then(Value::as_array).map(Vec::len);
        let number = |v: &Value| match v {
            Value::Null => Some(f64::NEG_INFINITY),
            v => v.as_f64(),
        };
        match width {
            None => {
                let col: Option<Vec<f64>> = entries.iter().map(number).collect();
                columns
                    .push(col.with_context(|| format!("internal error: output '{field}' is not numeric"))?);
                names.push(field.to_string());
            }
            Some(d) => {
                for j in 0..d {
                    let col: Option<Vec<f64>> = entries
                        .iter()
                        .map(|e| e.as_array().filter(|a| a.len() == d).and_then(|a| number(&a[j])))
                        .collect();
                    columns.push(col.with_context(|| format!("internal error: output '{field}' is ragged"))?);
                    names.push(format!("{field}_{j}"));
                }
            }
        }
        obj.remove(field);
    }
    if names.is_empty() {
        bail!("internal error: --out found none of the arrays {fields:?} in the output");
    }
    let values: Vec<f64> = (0..rows).flat_map(|i| columns.iter().map(move |c| c[i])).collect();
    write_table(path, &names, &values)?;
    obj.insert("out".into(), path.display().to_string().into());
    obj.insert("out_columns".into(), names.into());
    obj.insert("out_rows".into(), rows.into());
    Ok(())
}

/// The file format of a table output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    /// Comma-separated text with a header row of column names.
    Csv,
    /// NumPy `.npy` (format 1.0, `<f8`, C order).
    Npy,
}

impl TableFormat {
    /// `.npy` for a path ending in `.npy` (any case), CSV otherwise.
    pub fn of(path: &Path) -> Self {
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy")) { Self::Npy } else { Self::Csv }
    }

    /// Appends one row in this format (CSV: shortest round-trip decimals, comma-separated, `\n`).
    pub fn push_row(self, row: &[f64], out: &mut Vec<u8>) {
        match self {
            Self::Npy => row.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            Self::Csv => {
                for (j, v) in row.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    write!(out, "{v}").expect("writing to a Vec cannot fail");
                }
                out.push(b'\n');
            }
        }
    }

    /// What precedes the rows: the CSV header line, or the `.npy` header for `rows × names.len()`.
    pub fn preamble(self, names: &[String], rows: usize) -> Vec<u8> {
        match self {
            Self::Csv => format!("{}\n", names.join(",")).into_bytes(),
            Self::Npy => npy_header(rows, names.len()),
        }
    }
}

/// The NPY 1.0 header of a little-endian `f64` C-order array of shape `(rows, cols)`: magic,
/// version, header length and the padded dict, `64·k` bytes in all.
pub fn npy_header(rows: usize, cols: usize) -> Vec<u8> {
    npy_header_of("<f8", false, &format!("({rows}, {cols})"))
}

/// The NPY 1.0 header, as numpy writes it, of an array of dtype `descr` (e.g. `<f8`), in Fortran
/// order when `fortran`, of shape `shape` (a Python tuple, e.g. `(3, 2)`).
pub fn npy_header_of(descr: &str, fortran: bool, shape: &str) -> Vec<u8> {
    let order = if fortran { "True" } else { "False" };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    // 10 bytes of preamble + dict + '\n' must be a multiple of 64.
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    dict.extend(std::iter::repeat_n(' ', pad));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes the table `values` (row-major, `names.len()` columns) to `path`, as CSV or `.npy` by its
/// extension, atomically.
pub fn write_table(path: &Path, names: &[String], values: &[f64]) -> anyhow::Result<()> {
    let cols = names.len();
    if cols == 0 || values.len() % cols != 0 {
        bail!("internal error: a table of {} values cannot have {cols} columns", values.len());
    }
    let format = TableFormat::of(path);
    let rows = values.len() / cols;
    let mut bytes = format.preamble(names, rows);
    bytes.reserve(values.len() * 8);
    for row in values.chunks_exact(cols) {
        format.push_row(row, &mut bytes);
    }
    let mut f = AtomicFile::create(path)?;
    crate::interrupt::remove_on_exit(f.temp_path());
    f.write_all(&bytes).map_err(|e| f.error("write", e))?;
    f.commit().with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("bke-table-out-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The header, byte by byte, against the NPY 1.0 specification (numpy.lib.format): magic
    /// string, version 1.0, little-endian header length, a dict with exactly the three keys, space
    /// padding, a final newline, and the data aligned to 64 bytes.
    #[test]
    fn header_follows_the_npy_1_0_spec() {
        for (rows, cols) in [(0, 1), (3, 2), (12_345_678, 17), (1, 1000)] {
            let h = npy_header(rows, cols);
            assert_eq!(&h[..6], b"\x93NUMPY");
            assert_eq!((h[6], h[7]), (1, 0), "major, minor version");
            let len = u16::from_le_bytes([h[8], h[9]]) as usize;
            assert_eq!(h.len(), 10 + len);
            assert_eq!(h.len() % 64, 0, "data aligned to 64 bytes");
            let text = std::str::from_utf8(&h[10..]).unwrap();
            assert!(text.is_ascii() && text.ends_with('\n'));
            let dict = text.trim_end_matches('\n').trim_end_matches(' ');
            assert_eq!(
                dict,
                format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {cols}), }}")
            );
            assert!(!text[dict.len()..text.len() - 1].contains(|c| c != ' '), "padding is spaces");
        }
        // The exact bytes numpy 2.x writes for np.save(f, np.zeros((3, 2))) (header of 118 bytes).
        let mut want = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
        let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }";
        want.extend(dict.as_bytes());
        want.extend(std::iter::repeat_n(b' ', 118 - dict.len() - 1));
        want.push(b'\n');
        assert_eq!(npy_header(3, 2), want);
    }

    /// A table written as `.npy` reads back through the `.npy` reader of `io` with the same bits,
    /// and as the same values the CSV written beside it holds.
    #[test]
    fn npy_and_csv_round_trip_through_the_readers() {
        let d = dir("round");
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let values: Vec<f64> =
            (0..300).map(|i| ((i * 7919) % 1013) as f64 / 7.0 - 50.0 + 1e-300 * i as f64).collect();
        let (npy, csv) = (d.join("t.npy"), d.join("t.csv"));
        write_table(&npy, &names, &values).unwrap();
        write_table(&csv, &names, &values).unwrap();
        let a = crate::table::CsvTable::read(&npy).unwrap();
        let b = crate::table::CsvTable::read(&csv).unwrap();
        assert_eq!((a.rows, a.names.len()), (100, 3));
        assert_eq!(b.names, names);
        for ((x, y), v) in a.values.iter().zip(&b.values).zip(&values) {
            assert_eq!((x.to_bits(), y.to_bits()), (v.to_bits(), v.to_bits()));
        }
        let bytes = std::fs::read(&npy).unwrap();
        assert_eq!(bytes.len(), 128 + 8 * 300);
        // Atomic: no temporary file is left beside the targets.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        // Extension in any case.
        assert_eq!(TableFormat::of(Path::new("x.NPY")), TableFormat::Npy);
        assert_eq!(TableFormat::of(Path::new("x.npy.csv")), TableFormat::Csv);
    }

    /// `--out` moves exactly the named per-row arrays into the file (points as NAME_j columns,
    /// `null` as −∞) and leaves the rest of the JSON alone.
    #[test]
    fn divert_moves_the_per_row_arrays_into_the_file() {
        let d = dir("divert");
        let mut v = serde_json::json!({
            "mean": [1.5, -2.0, 3.25], "variance": [0.5, 0.25, 1e-300], "lengthscale": [9.0, 9.0, 9.0],
            "samples": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "log_density": [null, 0.5, -1.0], "n": 3,
        });
        let before = v.clone();
        divert(None, &mut v, 3, &["mean"]).unwrap();
        assert_eq!(v, before);
        let path = d.join("p.npy");
        divert(Some(&path), &mut v, 3, &["mean", "variance", "samples", "log_density", "absent"]).unwrap();
        let cols = ["mean", "variance", "samples_0", "samples_1", "log_density"];
        assert_eq!(v["out_columns"], serde_json::json!(cols));
        assert_eq!(
            (v["out_rows"].as_u64(), v["lengthscale"].clone(), v["n"].clone()),
            (Some(3), before["lengthscale"].clone(), 3.into())
        );
        assert!(v.get("mean").is_none() && v.get("samples").is_none());
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..128], &npy_header(3, 5)[..]);
        let vals: Vec<f64> =
            bytes[128..].chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(
            vals,
            [1.5, 0.5, 1.0, 2.0, f64::NEG_INFINITY, -2.0, 0.25, 3.0, 4.0, 0.5, 3.25, 1e-300, 5.0, 6.0, -1.0]
        );
        let mut bad = serde_json::json!({"mean": [1.0]});
        assert!(divert(Some(&path), &mut bad, 2, &["mean"]).is_err());
    }

    #[test]
    fn a_failed_write_leaves_the_target_alone() {
        let d = dir("fail");
        let missing = d.join("no-such-dir").join("t.npy");
        assert!(write_table(&missing, &["a".into()], &[1.0]).is_err());
        assert!(write_table(&d.join("t.npy"), &["a".into(), "b".into()], &[1.0]).is_err());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    }
}
