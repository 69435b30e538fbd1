//! A data file read in chunks of rows, so that a command whose result is a sum over the data
//! (`bke embed loglik`) holds a bounded part of the file in memory whatever its length.
//!
//! **CSV**: blocks of about [`BLOCK_BYTES`] bytes, cut after the last complete line, each parsed by
//! the parallel fast path of [`crate::csv_parse`] (the same `str::parse::<f64>` as the whole-file
//! reader, so the values are identical). **`.npy`** (C order): blocks of rows read straight from the file. Memory:
//! one block of bytes and its values, whatever the number of rows.
//!
//! Anything the fast path does not handle — a quoted field, `\r` line ends, a bad cell, a ragged
//! row, a blank line followed by data, a Fortran-order or truncated `.npy` file — makes the reader
//! read the whole file with [`CsvTable::read`] instead and carry on from the row it had reached: a
//! bad file gives exactly the error message of the whole-file reader, and a valid file that is not
//! plain (quotes, `\r`) is still read correctly, in memory. (A file with several problems can name
//! a different one first: the column selection is checked from the header, before the rows.)

use crate::csv_parse::parse_plain_data;
use crate::note::integer_note;
use crate::npy;
use crate::table::CsvTable;
use anyhow::Context;
use bke_core::Points;
use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

/// Bytes per block of the CSV reader (the blocks' values take about half as much again).
pub const BLOCK_BYTES: usize = 8 << 20;

/// Distinct values tracked per column by the integer-column note ([`IntegerNote`]).
const NOTE_CAP: usize = 1 << 16;

/// Where the rows come from.
enum Source {
    /// A plain CSV file, read in blocks; `carry` holds the bytes of an incomplete last line.
    Csv { file: std::fs::File, carry: Vec<u8>, blank_seen: bool, done: bool },
    /// A C-order `.npy` file of `rows` rows positioned at row `next`.
    Npy { file: std::io::BufReader<std::fs::File>, dtype: npy::Dtype, rows: usize, next: usize },
    /// The whole file, read by [`CsvTable::read`] (the fallback), served from row `next`.
    Table { table: CsvTable, next: usize },
}

/// The selected columns of a CSV or `.npy` data file, chunk by chunk ([`PointChunks::next_chunk`]).
pub struct PointChunks {
    path: std::path::PathBuf,
    shown: String,
    /// Number of columns of the file.
    width: usize,
    /// Indices of the selected columns.
    idx: Vec<usize>,
    /// Names of the selected columns.
    selected: Vec<String>,
    /// Rows handed out so far.
    served: usize,
    source: Source,
    note: IntegerNote,
    /// Bytes per block.
    block: usize,
}

impl PointChunks {
    /// Opens `path` (CSV, or `.npy` by the extension) and selects `columns` (all when `None`).
    pub fn open(path: &Path, columns: Option<&[String]>) -> anyhow::Result<Self> {
        Self::open_with_blocks(path, columns, BLOCK_BYTES)
    }

    /// [`PointChunks::open`] with blocks of about `block` bytes.
    fn open_with_blocks(path: &Path, columns: Option<&[String]>, block: usize) -> anyhow::Result<Self> {
        let block = block.max(1);
        let shown = path.display().to_string();
        let is_npy = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"));
        let kind = if is_npy { ".npy" } else { "CSV" };
        let mut file =
            std::fs::File::open(path).with_context(|| format!("cannot open {kind} file {shown}"))?;
        let opened = if is_npy { open_npy(&mut file)? } else { open_csv(&mut file, block)? };
        let (names, source) = match opened {
            Some((names, source)) => (names, source),
            None => {
                let table = CsvTable::read(path)?;
                (table.names.clone(), Source::Table { table, next: 0 })
            }
        };
        let header = CsvTable { path: shown.clone(), names: names.clone(), values: Vec::new(), rows: 0 };
        let idx: Vec<usize> = match columns {
            Some(cols) => cols.iter().map(|c| header.column_index(c)).collect::<anyhow::Result<_>>()?,
            None => (0..names.len()).collect(),
        };
        let selected = idx.iter().map(|&j| names[j].clone()).collect();
        let note = IntegerNote::new(idx.len());
        let width = names.len();
        Ok(Self { path: path.to_path_buf(), shown, width, idx, selected, served: 0, source, note, block })
    }

    /// The next rows (at least one), or `None` at the end of the file.
    pub fn next_chunk(&mut self) -> anyhow::Result<Option<Points>> {
        loop {
            let values = match &mut self.source {
                Source::Table { table, next } => {
                    if *next >= table.rows {
                        return Ok(None);
                    }
                    let end = (*next + (self.block / 16 / self.width).max(1)).min(table.rows);
                    let v = table.values[*next * self.width..end * self.width].to_vec();
                    *next = end;
                    Some(v)
                }
                Source::Csv { file, carry, blank_seen, done } => {
                    if *done && carry.is_empty() {
                        return Ok(None);
                    }
                    csv_block(file, carry, (blank_seen, done), self.width, self.block)?
                }
                Source::Npy { file, dtype, rows, next } => {
                    if *next >= *rows {
                        return Ok(None);
                    }
                    let count = (self.block / dtype.size() / self.width).max(1).min(*rows - *next);
                    let mut bytes = vec![0; count * self.width * dtype.size()];
                    file.read_exact(&mut bytes).with_context(|| format!("cannot read {}", self.shown))?;
                    *next += count;
                    npy_values(&bytes, *dtype)
                }
            };
            let Some(values) = values else {
                self.fall_back()?;
                continue;
            };
            if values.is_empty() {
                continue;
            }
            let rows = values.len() / self.width;
            self.served += rows;
            let data: Vec<f64> =
                if self.idx.len() == self.width && self.idx.iter().enumerate().all(|(a, &b)| a == b) {
                    values
                } else {
                    values.chunks_exact(self.width).flat_map(|r| self.idx.iter().map(|&j| r[j])).collect()
                };
            self.note.observe(&data);
            let d = self.idx.len().max(1);
            for (k, name) in self.selected.iter().enumerate() {
                let (lo, hi) = data
                    .iter()
                    .skip(k)
                    .step_by(d)
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
                crate::table::check_scale(&self.shown, name, lo, hi)?;
            }
            return Ok(Some(Points::new(&self.shown, data, self.idx.len().max(1))?));
        }
    }

    /// Reads the whole file with [`CsvTable::read`] (its error, if any, is the answer) and carries
    /// on from the rows already handed out.
    fn fall_back(&mut self) -> anyhow::Result<()> {
        let table = CsvTable::read(&self.path)?;
        anyhow::ensure!(
            table.names.len() == self.width && table.rows >= self.served,
            "internal error: {} read differently in chunks and whole",
            self.shown
        );
        self.source = Source::Table { table, next: self.served };
        Ok(())
    }

    /// Prints the note of [`crate::note::note_integer_columns`] for the rows read (after the last chunk).
    pub fn note_integer_columns(&self) {
        self.note.report(&self.path, &self.selected, self.served);
    }
}

/// The header of a plain CSV file (`None`: not plain, use the whole-file reader): names from the
/// first line, read with the same CSV settings as `io`.
fn open_csv(file: &mut std::fs::File, block: usize) -> anyhow::Result<Option<(Vec<String>, Source)>> {
    let mut carry = Vec::new();
    let mut done = false;
    let newline = loop {
        if let Some(p) = carry.iter().position(|&b| b == b'\n') {
            break p;
        }
        if done || carry.len() > BLOCK_BYTES.max(block) {
            return Ok(None);
        }
        done = read_more(file, &mut carry, block)?;
    };
    let line = &carry[..newline];
    if line.contains(&b'"') || line.contains(&b'\r') {
        return Ok(None);
    }
    let mut reader = csv::ReaderBuilder::new().has_headers(true).trim(csv::Trim::All).from_reader(line);
    let Ok(header) = reader.headers() else { return Ok(None) };
    let names: Vec<String> = header.iter().map(str::to_string).collect();
    let unique = names.iter().enumerate().all(|(j, n)| !names[..j].contains(n));
    if names.is_empty() || !unique || line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    carry.drain(..=newline);
    Ok(Some((names, Source::Csv { file: file.try_clone()?, carry, blank_seen: false, done })))
}

/// Appends up to `block` bytes of `file` to `buf`; true at the end of the file.
fn read_more(file: &mut std::fs::File, buf: &mut Vec<u8>, block: usize) -> anyhow::Result<bool> {
    let start = buf.len();
    buf.resize(start + block, 0);
    let mut filled = start;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let eof = filled < buf.len();
    buf.truncate(filled);
    Ok(eof)
}

/// The values of the next block of complete lines (`Some(empty)` when it held none), or `None`
/// when the block is not plain (then the caller falls back to the whole-file reader).
fn csv_block(
    file: &mut std::fs::File,
    carry: &mut Vec<u8>,
    (blank_seen, done): (&mut bool, &mut bool),
    width: usize,
    block: usize,
) -> anyhow::Result<Option<Vec<f64>>> {
    if !*done {
        *done = read_more(file, carry, block)?;
    }
    let end = if *done { carry.len() } else { carry.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) };
    let lines = &carry[..end];
    // A blank line before a data line: the whole-file reader names it.
    let first_empty = if lines.first() == Some(&b'\n') {
        Some(0)
    } else {
        lines.windows(2).position(|w| w == b"\n\n").map(|p| p + 1)
    };
    if *blank_seen && lines.iter().any(|&b| b != b'\n') {
        return Ok(None);
    }
    if let Some(p) = first_empty {
        if lines[p..].iter().any(|&b| b != b'\n') {
            return Ok(None);
        }
        *blank_seen = true;
    }
    let values = if lines.is_empty() {
        Some(Vec::new())
    } else {
        parse_plain_data(lines, width, 1 << 20).map(|(v, _)| v)
    };
    if values.is_some() {
        carry.drain(..end);
    }
    Ok(values)
}

/// The header of a C-order `.npy` file whose size matches it (`None`: Fortran order or a size
/// mismatch, use the whole-file reader, which also gives the errors).
fn open_npy(file: &mut std::fs::File) -> anyhow::Result<Option<(Vec<String>, Source)>> {
    let mut head = Vec::new();
    file.by_ref().take(1 << 16).read_to_end(&mut head)?;
    let Ok((h, start)) = npy::read_header(&head) else { return Ok(None) };
    let len = file.metadata()?.len();
    let need = h.rows.checked_mul(h.cols).and_then(|c| c.checked_mul(h.dtype.size()));
    if h.fortran || need.and_then(|b| b.checked_add(start)).map(|b| b as u64) != Some(len) {
        return Ok(None);
    }
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(start as u64))?;
    let names = (0..h.cols).map(|j| j.to_string()).collect();
    let reader = std::io::BufReader::new(file.try_clone()?);
    Ok(Some((names, Source::Npy { file: reader, dtype: h.dtype, rows: h.rows, next: 0 })))
}

/// The values of a block of `.npy` data, or `None` when one is not finite (the whole-file reader
/// names its row and column).
fn npy_values(bytes: &[u8], dtype: npy::Dtype) -> Option<Vec<f64>> {
    let v: Vec<f64> = bytes.chunks_exact(dtype.size()).map(|b| dtype.value(b)).collect();
    v.iter().all(|x| x.is_finite()).then_some(v)
}

/// The streaming form of [`crate::note::note_integer_columns`]: per column, the distinct values
/// while every value seen is an integer, up to [`NOTE_CAP`] of them (past that the column is
/// dropped, so memory stays bounded: a column of more than 65 536 distinct integers is never
/// noted, where the whole-file reader would note it when there are at least twice as many rows).
struct IntegerNote {
    columns: Vec<Option<HashSet<u64>>>,
}

impl IntegerNote {
    fn new(dim: usize) -> Self {
        Self { columns: (0..dim).map(|_| Some(HashSet::new())).collect() }
    }

    /// Records the rows `data` (row-major, one value per column).
    fn observe(&mut self, data: &[f64]) {
        let d = self.columns.len();
        for (k, col) in self.columns.iter_mut().enumerate() {
            let Some(set) = col else { continue };
            for v in data.iter().skip(k).step_by(d.max(1)) {
                if v.fract() != 0.0 || (set.len() >= NOTE_CAP && !set.contains(&(v + 0.0).to_bits())) {
                    *col = None;
                    break;
                }
                set.insert((v + 0.0).to_bits());
            }
        }
    }

    fn report(&self, path: &Path, names: &[String], n: usize) {
        for (k, col) in self.columns.iter().enumerate() {
            if let Some(set) = col {
                if n >= 4 && set.len() * 2 <= n {
                    integer_note(path, names, k, set.len(), n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("bke-chunks-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Every chunk, concatenated (the oracle: the whole-file reader's points).
    fn read_all(p: &Path, cols: Option<&[String]>, block: usize) -> anyhow::Result<(Vec<f64>, usize)> {
        let mut r = PointChunks::open_with_blocks(p, cols, block)?;
        let mut all = Vec::new();
        let mut chunks = 0;
        while let Some(c) = r.next_chunk()? {
            assert!(!c.is_empty());
            all.extend_from_slice(c.as_slice());
            chunks += 1;
        }
        assert_eq!(r.served * r.selected.len(), all.len());
        Ok((all, chunks))
    }

    fn same(p: &Path, cols: Option<&[String]>, block: usize) -> usize {
        let whole = crate::read::read_points(p, cols);
        match (read_all(p, cols, block), whole) {
            (Ok((a, chunks)), Ok(w)) => {
                assert_eq!(a.len(), w.as_slice().len(), "{}", p.display());
                assert!(a.iter().zip(w.as_slice()).all(|(x, y)| x.to_bits() == y.to_bits()));
                chunks
            }
            (Err(a), Err(b)) => {
                assert_eq!(format!("{a:#}"), format!("{b:#}"));
                0
            }
            (a, b) => {
                panic!("{}: chunks {:?} vs whole {:?}", p.display(), a.map(|v| v.1), b.map(|v| v.len()))
            }
        }
    }

    /// Chunks of every size read exactly the whole-file reader's values (plain files in many
    /// blocks; files it does not handle through the fallback), and bad files give its errors.
    #[test]
    fn chunks_equal_the_whole_file_reader() {
        let mut big = String::from("x, y,z\n");
        for i in 0..5000 {
            big.push_str(&format!("{}e-3 ,{},{}\n", i * 7919 % 1000, -(i as f64) / 3.0, i % 7));
        }
        let p = write("big.csv", big.as_bytes());
        let cols = ["z".to_string(), "x".to_string()];
        for block in [1, 7, 100, 4096, 1 << 20] {
            let chunks = same(&p, None, block);
            assert!(block > 4096 || chunks > 10, "block {block}: {chunks} chunks");
            same(&p, Some(&cols), block);
        }
        let mut late_bad = big.clone();
        late_bad.push_str("1,2,oops\n");
        let mut late_blank = big.clone();
        late_blank.insert(big.len() / 2 + big[big.len() / 2..].find('\n').unwrap() + 1, '\n');
        let mut quoted = big.replace("x, y,z\n", "\"x\",y,z\n");
        quoted.push_str("\"1\",2,3\n");
        let cases: Vec<(&str, String)> = vec![
            ("late_quote.csv", format!("{big}\"1\",2,3\n")),
            ("late_bad.csv", late_bad),
            ("late_blank.csv", late_blank),
            ("quoted.csv", quoted),
            ("crlf.csv", big.replace('\n', "\r\n")),
            ("tail_blank.csv", format!("{big}\n\n")),
            ("no_newline.csv", "a,b\n1,2\n3,4".into()),
            ("header_only.csv", "a,b\n".into()),
            ("header_no_newline.csv", "a,b".into()),
            ("empty.csv", String::new()),
            ("dup.csv", "a,a\n1,2\n".into()),
            ("ragged.csv", "a,b\n1,2\n3\n".into()),
            ("space_line.csv", "a,b\n1,2\n  \n".into()),
            ("inf.csv", "a,b\n1,2\n3,-inf\n".into()),
        ];
        for (name, text) in &cases {
            let p = write(name, text.as_bytes());
            for block in [3, 64, 1 << 20] {
                same(&p, None, block);
            }
        }
        let p = write("cols.csv", b"a,b\n1,2\n");
        let e = read_all(&p, Some(&["c".to_string()]), 8).unwrap_err().to_string();
        assert!(e.contains("no column named 'c'"), "{e}");
        assert!(
            read_all(Path::new("/no/such/file.csv"), None, 8)
                .unwrap_err()
                .to_string()
                .contains("cannot open")
        );
    }

    #[test]
    fn npy_chunks_equal_the_whole_file_reader() {
        let npy = crate::npy::tests::npy;
        let v: Vec<f64> = (0..3000).map(|i| (i as f64 * 0.37).sin() * 1e3).collect();
        let f8: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let f4: Vec<u8> = v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect();
        let i8: Vec<u8> = v.iter().flat_map(|x| (*x as i64).to_le_bytes()).collect();
        let mut nan = f8.clone();
        nan[8 * 2500..8 * 2501].copy_from_slice(&f64::NAN.to_le_bytes());
        let files = [
            ("c.npy", npy("<f8", false, "(1000, 3)", &f8)),
            ("f.npy", npy("<f8", true, "(1000, 3)", &f8)),
            ("f4.npy", npy("<f4", false, "(1000, 3)", &f4)),
            ("i8.npy", npy("<i8", false, "(3000,)", &i8)),
            ("nan.npy", npy("<f8", false, "(1000, 3)", &nan)),
            ("short.npy", npy("<f8", false, "(1001, 3)", &f8)),
            ("bad.npy", b"\x93NUMPY\x07\x00".to_vec()),
        ];
        for (name, bytes) in &files {
            let p = write(name, bytes);
            for block in [1, 100, 1 << 20] {
                same(&p, None, block);
                if !name.starts_with("i8") {
                    same(&p, Some(&["2".to_string(), "0".to_string()]), block);
                }
            }
        }
    }

    /// The streaming integer-column note counts what the whole-file note counts.
    #[test]
    fn integer_note_tracks_distinct_integers() {
        let mut note = IntegerNote::new(3);
        let rows: Vec<f64> =
            (0..100).flat_map(|i| [(i % 5) as f64, i as f64 + 0.5, -((i % 3) as f64) * 0.0]).collect();
        note.observe(&rows[..150]);
        note.observe(&rows[150..]);
        let distinct: Vec<Option<usize>> =
            note.columns.iter().map(|c| c.as_ref().map(HashSet::len)).collect();
        assert_eq!(distinct, vec![Some(5), None, Some(1)]);
        let many: Vec<f64> = (0..NOTE_CAP as u64 + 1).map(|i| i as f64).collect();
        let mut capped = IntegerNote::new(1);
        capped.observe(&many);
        assert!(capped.columns[0].is_none());
    }
}
