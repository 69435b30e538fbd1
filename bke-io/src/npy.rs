//! NumPy `.npy` input: the data of a `.npy` file becomes the same `CsvTable` a CSV file gives, so
//! every command that takes a CSV data file takes a `.npy` file too (chosen by the extension).
//!
//! Accepted: format versions 1.0, 2.0 and 3.0; little-endian `<f8`, `<f4` and `<i8` (and `|`/`=`
//! byte-order marks for the same types on this little-endian target); C or Fortran order; shape
//! `(n,)` (one column) or `(n, d)`. Columns are named `0`, `1`, … (their numpy indices), so
//! `--columns 0,2` selects as `a[:, [0, 2]]` would. Every value must be finite; errors name the row
//! and column (0-based, as in numpy). Anything else (big-endian, other dtypes, object arrays, more
//! dimensions, a truncated file, an array without rows of more than [`MAX_EMPTY_COLUMNS`] columns)
//! is an error that says what was found and what to write instead.

use crate::table::CsvTable;
use anyhow::{Context, bail};

/// The element type of a `.npy` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// Little-endian `f64`.
    F8,
    /// Little-endian `f32`.
    F4,
    /// Little-endian `i64`.
    I8,
}

impl Dtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F8 | Dtype::I8 => 8,
            Dtype::F4 => 4,
        }
    }

    /// The element in `b` (`size()` bytes) as an `f64`.
    pub fn value(self, b: &[u8]) -> f64 {
        match self {
            Dtype::F8 => f64::from_le_bytes(b.try_into().expect("8 bytes")),
            Dtype::F4 => f32::from_le_bytes(b.try_into().expect("4 bytes")) as f64,
            Dtype::I8 => i64::from_le_bytes(b.try_into().expect("8 bytes")) as f64,
        }
    }
}

/// The parsed header: element type, memory order and shape `(rows, columns)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Element type.
    pub dtype: Dtype,
    /// Column-major (Fortran) order.
    pub fortran: bool,
    /// Rows (the first dimension).
    pub rows: usize,
    /// Columns (1 for a 1-D array).
    pub cols: usize,
}

/// The most columns of an array without rows (module docs).
pub const MAX_EMPTY_COLUMNS: usize = 1 << 16;

const ADVICE: &str = "save a 1-D or 2-D float64, float32 or int64 array with numpy.save";

/// Parses the bytes of a `.npy` file; `shown` names it in errors.
pub fn parse(bytes: &[u8], shown: String) -> anyhow::Result<CsvTable> {
    let (header, start) = read_header(bytes).with_context(|| format!("{shown}: not a readable .npy file"))?;
    let Header { dtype, fortran, rows, cols } = header;
    let count = rows.checked_mul(cols).context("the shape overflows")?;
    let need = count.checked_mul(dtype.size()).context("the shape overflows")?;
    let data = &bytes[start..];
    if data.len() != need {
        bail!(
            "{shown}: the header promises {rows} × {cols} values ({need} bytes) but the file holds {} data bytes; \
             the file is truncated or not a .npy file",
            data.len()
        );
    }
    let mut values = vec![0.0; count];
    for (k, chunk) in data.chunks_exact(dtype.size()).enumerate() {
        let (i, j) = if fortran { (k % rows.max(1), k / rows.max(1)) } else { (k / cols, k % cols) };
        let v = dtype.value(chunk);
        if !v.is_finite() {
            bail!("{shown}: row {i}, column {j}: value {v} is not finite");
        }
        values[i * cols + j] = v;
    }
    let names = (0..cols).map(|j| j.to_string()).collect();
    Ok(CsvTable { path: shown, names, values, rows })
}

/// The header and the offset of the data.
pub fn read_header(bytes: &[u8]) -> anyhow::Result<(Header, usize)> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        bail!("the file does not start with the .npy magic string; {ADVICE}");
    }
    let (len, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize, 12)
        }
        v => bail!("unsupported .npy format version {v}.{}; {ADVICE}", bytes[7]),
    };
    let end = start.checked_add(len).filter(|&e| e <= bytes.len()).context("the header is truncated")?;
    let text = std::str::from_utf8(&bytes[start..end]).context("the header is not text")?;
    Ok((parse_dict(text)?, end))
}

/// The value text of `'key':` in the header dictionary.
fn field<'a>(dict: &'a str, key: &str) -> anyhow::Result<&'a str> {
    let pat = format!("'{key}':");
    let at = dict.find(&pat).with_context(|| format!("the header has no '{key}' entry"))?;
    Ok(dict[at + pat.len()..].trim_start())
}

fn parse_dict(dict: &str) -> anyhow::Result<Header> {
    let descr = field(dict, "descr")?;
    let descr = descr.strip_prefix('\'').and_then(|d| d.split('\'').next()).with_context(|| {
        format!("element type {} is a structured type; {ADVICE}", descr.split('}').next().unwrap_or(descr))
    })?;
    let dtype = match descr {
        "<f8" | "=f8" => Dtype::F8,
        "<f4" | "=f4" => Dtype::F4,
        "<i8" | "=i8" => Dtype::I8,
        other => bail!(
            "element type '{other}' is not supported (little-endian float64 '<f8', float32 '<f4' or \
             int64 '<i8' are); convert with a.astype('<f8') and {ADVICE}"
        ),
    };
    let fortran = match field(dict, "fortran_order")? {
        f if f.starts_with("True") => true,
        f if f.starts_with("False") => false,
        f => bail!("fortran_order is neither True nor False: {f}"),
    };
    let shape = field(dict, "shape")?;
    let inner =
        shape.strip_prefix('(').and_then(|s| s.split(')').next()).context("the shape is not a tuple")?;
    let dims: Vec<usize> = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse().with_context(|| format!("shape entry '{s}' is not a size")))
        .collect::<anyhow::Result<_>>()?;
    let (rows, cols) = match dims[..] {
        [n] => (n, 1),
        [n, d] => (n, d),
        _ => bail!("the array has shape ({inner}); {ADVICE}"),
    };
    if cols == 0 {
        bail!("the array has no columns (shape ({inner})); {ADVICE}");
    }
    // With rows, the data's size bounds the columns; an empty array's column count is bounded by
    // nothing but this (each column gets a name).
    if rows == 0 && cols > MAX_EMPTY_COLUMNS {
        bail!(
            "the array has no rows but {cols} columns (shape ({inner})), more than the {MAX_EMPTY_COLUMNS}              an empty table may have; {ADVICE}"
        );
    }
    Ok(Header { dtype, fortran, rows, cols })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A version-1.0 `.npy` file as numpy writes it (header padded with spaces to a multiple of 64).
    pub(crate) fn npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        [&crate::table_out::npy_header_of(descr, fortran, shape)[..], data].concat()
    }

    fn f8(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn reads_c_and_fortran_order_and_every_dtype() {
        // [[1, 2, 3], [4, 5, 6]] in C order and the same array in Fortran order.
        let c = parse(&npy("<f8", false, "(2, 3)", &f8(&[1., 2., 3., 4., 5., 6.])), "c".into()).unwrap();
        let f = parse(&npy("<f8", true, "(2, 3)", &f8(&[1., 4., 2., 5., 3., 6.])), "f".into()).unwrap();
        assert_eq!((c.rows, c.names.clone()), (2, vec!["0".to_string(), "1".into(), "2".into()]));
        assert_eq!(c.values, vec![1., 2., 3., 4., 5., 6.]);
        assert_eq!(f.values, c.values);
        let f4: Vec<u8> = [0.5f32, -2.25].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(parse(&npy("<f4", false, "(2,)", &f4), "s".into()).unwrap().values, vec![0.5, -2.25]);
        let i8: Vec<u8> = [7i64, -3].iter().flat_map(|x| x.to_le_bytes()).collect();
        let t = parse(&npy("<i8", false, "(2, 1)", &i8), "s".into()).unwrap();
        assert_eq!((t.rows, t.values), (2, vec![7.0, -3.0]));
        let empty = parse(&npy("<f8", false, "(0, 2)", &[]), "e".into()).unwrap();
        assert_eq!((empty.rows, empty.names.len()), (0, 2));
    }

    #[test]
    fn bad_files_are_clear_errors() {
        let err = |b: Vec<u8>| format!("{:#}", parse(&b, "a.npy".into()).unwrap_err());
        assert!(err(npy(">f8", false, "(1,)", &f8(&[1.0]))).contains("'>f8' is not supported"));
        assert!(err(npy("<c16", false, "(1,)", &[0; 16])).contains("'<c16' is not supported"));
        assert!(err(npy("|O", false, "(1,)", &[0; 8])).contains("'|O' is not supported"));
        assert!(err(npy("<f8", false, "(1, 1, 1)", &f8(&[1.0]))).contains("shape (1, 1, 1)"));
        assert!(err(npy("<f8", false, "(2, 2)", &f8(&[1.0; 3]))).contains("truncated"));
        assert!(err(npy("<f8", false, "(2,)", &f8(&[1.0, f64::NAN]))).contains("row 1, column 0"));
        assert!(err(b"a,b\n1,2\n".to_vec()).contains("magic"));
        assert!(err(b"\x93NUMPY\x01\x00\xff\x00{".to_vec()).contains("not a readable .npy file"));
        assert!(err(npy("<f8", false, "()", &f8(&[1.0]))).contains("shape ()"));
        // no rows: nothing bounds the columns but the limit (a name each would exhaust memory)
        assert!(
            err(npy("<f8", false, "(0, 1000000000000)", &[])).contains("no rows but 1000000000000 columns")
        );
        assert_eq!(parse(&npy("<f8", false, "(0, 65536)", &[]), "e".into()).unwrap().names.len(), 65536);
    }
}
