//! CSV (or NumPy `.npy`, see the `npy` submodule) in, JSON out. CSV files have a header row and numeric columns; errors name the file, the
//! line (1-based, the header is line 1) and the column (name and 1-based index).

use anyhow::{Context, bail};
use bke_core::Points;
use std::path::Path;

// A file of its own, loaded by path so the fuzz targets and tests that include this file get it too.
#[path = "npy.rs"]
pub mod npy;

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
    /// Reads a CSV file with a header row; every cell must parse as a finite number. A file whose
    /// name ends in `.npy` is read as a NumPy array instead (columns named `0`, `1`, …; see the
    /// `npy` submodule).
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

    /// Parses the contents of a CSV file; `shown` names it in errors.
    pub fn from_bytes(bytes: &[u8], shown: String) -> anyhow::Result<CsvTable> {
        Self::parse(bytes, shown, true)
    }

    /// [`Self::from_bytes`], with (`fast`) or without the parallel fast path for plain files.
    fn parse(bytes: &[u8], shown: String, fast: bool) -> anyhow::Result<CsvTable> {
        let mut reader = csv::ReaderBuilder::new().has_headers(true).trim(csv::Trim::All).from_reader(bytes);
        let names: Vec<String> = reader
            .headers()
            .with_context(|| format!("{shown}: cannot read the header row"))?
            .iter()
            .map(str::to_string)
            .collect();
        if names.is_empty() {
            bail!("{shown}: the header row is empty; the first line must name the columns");
        }
        check_unique_names(&shown, &names)?;
        check_no_blank_lines(&shown, bytes, &names[0])?;
        let data_start = reader.position().byte() as usize;
        if let Some((values, rows)) =
            parse_plain_rows(bytes, data_start, names.len(), 1 << 20).filter(|_| fast)
        {
            return Ok(CsvTable { path: shown, names, values, rows });
        }
        // The full CSV parser: quoted fields, `\r` line ends, and every error message.
        let mut values = Vec::new();
        let mut rows = 0;
        for (i, record) in reader.records().enumerate() {
            let line = i + 2;
            let record = record.with_context(|| format!("{shown}, line {line}: malformed CSV"))?;
            if record.len() != names.len() {
                bail!(
                    "{shown}, line {line}: {} fields, but the header has {} columns",
                    record.len(),
                    names.len()
                );
            }
            for (j, cell) in record.iter().enumerate() {
                let v: f64 = cell.parse().map_err(|_| {
                    anyhow::anyhow!(
                        "{shown}, line {line}, column {} ('{}'): '{cell}' is not a number",
                        j + 1,
                        names[j]
                    )
                })?;
                if !v.is_finite() {
                    bail!(
                        "{shown}, line {line}, column {} ('{}'): value {cell} is not finite",
                        j + 1,
                        names[j]
                    );
                }
                values.push(v);
            }
            rows += 1;
        }
        Ok(CsvTable { path: shown, names, values, rows })
    }

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

/// The fast path of [`CsvTable::from_bytes`]: the data rows (from byte `start`, right after the
/// header line) when the file is plain — no quote, no `\r`, every row `width` comma-separated
/// cells that parse (after trimming ASCII whitespace, as the CSV parser does) as finite numbers,
/// empty lines only at the end (checked before). Chunks of whole lines (at least `min_chunk` bytes) are parsed in parallel with
/// the same `str::parse::<f64>` as the full parser, so values are identical. `None` on anything
/// else: the caller reparses with the full parser, which names the problem (line and column).
fn parse_plain_rows(bytes: &[u8], start: usize, width: usize, min_chunk: usize) -> Option<(Vec<f64>, usize)> {
    if start == 0 || start > bytes.len() || bytes[start - 1] != b'\n' {
        return None;
    }
    parse_plain_data(&bytes[start..], width, min_chunk)
}

/// The fast path on `data`, whole lines from the start of a line (see [`parse_plain_rows`]; the
/// chunked reader calls it block by block).
pub fn parse_plain_data(data: &[u8], width: usize, min_chunk: usize) -> Option<(Vec<f64>, usize)> {
    use rayon::prelude::*;
    if data.contains(&b'"') || data.contains(&b'\r') {
        return None;
    }
    let target = (data.len() / (4 * rayon::current_num_threads())).max(min_chunk);
    let mut bounds = vec![0];
    while let Some(&last) = bounds.last().filter(|&&b| b < data.len()) {
        let end = (last + target).min(data.len());
        let next = data[end..].iter().position(|&b| b == b'\n').map_or(data.len(), |p| end + p + 1);
        bounds.push(next);
    }
    let parts: Option<Vec<Vec<f64>>> =
        bounds.par_windows(2).map(|w| parse_plain_lines(&data[w[0]..w[1]], width)).collect();
    let parts = parts?;
    let mut values = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        values.extend_from_slice(&p);
    }
    let rows = values.len() / width;
    Some((values, rows))
}

/// The cells of whole lines (see [`parse_plain_rows`]); empty lines are skipped.
fn parse_plain_lines(chunk: &[u8], width: usize) -> Option<Vec<f64>> {
    let mut out = Vec::with_capacity(chunk.len() / 8);
    for line in chunk.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut cells = 0;
        for cell in line.split(|&b| b == b',') {
            let v: f64 = std::str::from_utf8(cell.trim_ascii()).ok()?.parse().ok()?;
            if !v.is_finite() {
                return None;
            }
            out.push(v);
            cells += 1;
        }
        if cells != width {
            return None;
        }
    }
    Some(out)
}

/// Errors on a blank line before the last data line: the CSV parser would skip it, silently
/// dropping a row (in a one-column file, a row whose cell is empty). Blank lines at the end are fine.
fn check_no_blank_lines(shown: &str, bytes: &[u8], first_column: &str) -> anyhow::Result<()> {
    let blank = |l: &[u8]| l.iter().all(u8::is_ascii_whitespace);
    let mut first_blank = None;
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if blank(line) {
            first_blank.get_or_insert(i);
        } else if let Some(b) = first_blank {
            bail!(
                "{shown}, line {}, column 1 ('{first_column}'): empty line (a row with an empty cell); \
                 remove it or fill in the value",
                b + 1
            );
        }
    }
    Ok(())
}

/// Errors when two columns have the same name (a column named twice cannot be selected by name).
fn check_unique_names(shown: &str, names: &[String]) -> anyhow::Result<()> {
    for (j, name) in names.iter().enumerate() {
        if let Some(k) = names[..j].iter().position(|n| n == name) {
            bail!(
                "{shown}, line 1: columns {} and {} are both named '{name}'; column names must be unique",
                k + 1,
                j + 1
            );
        }
    }
    Ok(())
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

/// Warns on stderr about columns of `x` (read from `path`) that hold integers only with many ties
/// (fewer distinct values than half the rows): a kernel density- or embedding-based likelihood of
/// continuous data then sees a lattice and can favour lengthscales near or below its spacing (the
/// lattice effect of the pseudolikelihood, issue 19). The result is still computed as asked.
pub fn note_integer_columns(x: &Points, path: &Path, names: &[String]) {
    let (n, d) = (x.len(), x.dim());
    for k in 0..d {
        let mut v: Vec<f64> = x.iter().map(|p| p[k]).collect();
        if n < 4 || v.iter().any(|a| a.fract() != 0.0) {
            continue;
        }
        v.sort_by(f64::total_cmp);
        v.dedup();
        if v.len() * 2 <= n {
            integer_note(path, names, k, v.len(), n);
        }
    }
}

/// The note of [`note_integer_columns`] on column `k` of `path` (`distinct` values in `n` rows).
pub fn integer_note(path: &Path, names: &[String], k: usize, distinct: usize, n: usize) {
    eprintln!(
        "note: column {} of {} holds integers only ({distinct} distinct values in {n} rows): a \
         continuous kernel model sees a lattice and can favour lengthscales near or below its \
         spacing; add uniform noise on (−½, ½) to dequantise it, or treat it as discrete",
        names.get(k).map_or_else(|| (k + 1).to_string(), Clone::clone),
        path.display(),
    );
}

/// Prints a JSON value on stdout. A closed pipe (e.g. `bke … | head`) is not an error.
pub fn emit(value: &serde_json::Value) -> anyhow::Result<()> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value)?;
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The JSON of a library value (its serde form, as the Python package sees it) with the command's
/// own fields (backend, paths, timings) added. Errors unless both are JSON objects.
/// A non-finite number anywhere in `value` is an error naming it ([`crate::finite::check`]), never
/// a `null` in the output.
pub fn merge(value: &impl serde::Serialize, extra: serde_json::Value) -> anyhow::Result<serde_json::Value> {
    crate::finite::check("the result", value)?;
    let mut v = serde_json::to_value(value)?;
    match (&mut v, extra) {
        (serde_json::Value::Object(m), serde_json::Value::Object(e)) => m.extend(e),
        _ => bail!("internal error: a command's JSON output must be an object"),
    }
    Ok(v)
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

    /// The fast path reads exactly what the full CSV parser reads, and leaves every file it does
    /// not handle (quotes, `\r`, bad cells, ragged rows, blank lines) to it, errors included.
    #[test]
    fn fast_path_agrees_with_the_full_parser() {
        let mut big = String::from("x, y\n");
        for i in 0..30_000 {
            big.push_str(&format!(" {}e-3 ,{}\n", i * 7919 % 1000, -(i as f64) / 3.0));
        }
        let cases = [
            big.as_str(),
            "a,b\n1,2\n3,4",
            "a,b\n1,2\n3,4\n\n\n",
            "a\n1\n\n2\n",
            "a,b\r\n1,2\r\n",
            "\"a\",b\n\"1\",2\n",
            "a,b\n1,2,3\n",
            "a,b\n1\n",
            "a,b\n1,x\n",
            "a,b\n1,inf\n",
            "a,b\n1,NaN\n",
            "a,b\n 1 ,\t2\x0c\n",
            "a,b\n+1.5,.5\n-0,5.\n",
            "a,b\n1,2\n  \n",
            "a\n",
            "a,b",
        ];
        for text in cases {
            let fast = CsvTable::parse(text.as_bytes(), "f".into(), true);
            let full = CsvTable::parse(text.as_bytes(), "f".into(), false);
            match (fast, full) {
                (Ok(a), Ok(b)) => {
                    assert_eq!((a.names, a.rows), (b.names, b.rows), "{text:?}");
                    assert!(a.values.iter().zip(&b.values).all(|(x, y)| x.to_bits() == y.to_bits()));
                    assert_eq!(a.values.len(), b.values.len());
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text:?}"),
                (a, b) => panic!("{text:?}: fast {a:?} vs full {b:?}"),
            }
        }
        // Many small chunks: the split on line boundaries loses and repeats nothing.
        let full = CsvTable::parse(big.as_bytes(), "f".into(), false).unwrap();
        let start = big.find('\n').unwrap() + 1;
        let (values, rows) = parse_plain_rows(big.as_bytes(), start, 2, 997).unwrap();
        assert_eq!(rows, full.rows);
        assert!(values.iter().zip(&full.values).all(|(x, y)| x.to_bits() == y.to_bits()));
        let header_only = CsvTable::parse(b"a,b\n", "f".into(), true).unwrap();
        assert_eq!(header_only.rows, 0);
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
