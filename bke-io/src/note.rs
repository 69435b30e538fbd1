//! The note on integer-valued columns of data modelled as continuous (a lattice).

use bke_core::Points;
use std::path::Path;

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
