//! The CSV parser: a header row and numeric columns; errors name the file, the line (1-based, the
//! header is line 1) and the column (name and 1-based index). Plain files take a parallel fast path
//! that reads exactly the values of the full parser.

use crate::table::CsvTable;
use anyhow::{Context, bail};

impl CsvTable {
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

/// The fast path on `data`, whole lines from the start of a line (see `parse_plain_rows`; the
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
