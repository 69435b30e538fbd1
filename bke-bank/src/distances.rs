//! Squared Euclidean distances between the rows of matrices by one product each:
//! `‖a − b‖² = ‖a‖² + ‖b‖² − 2 aᵀb`, clamped at 0 (the expansion's round-off, `~1e-16 (‖a‖² + ‖b‖²)`,
//! can make a tiny distance negative). The kernel baselines (RBF SVC, GP classification) build
//! their Gram matrices from these; a pair × input loop costs the same flops without the GEMM's speed.

use crate::BankError;
use bke_linalg::{Backend, Mat, Trans};
use rayon::prelude::*;

/// `D_ij = ‖x_i − x_j‖²` for the rows of `x` (`n × d`): symmetric with an exactly zero diagonal (the
/// norms are the product's own diagonal).
pub(crate) fn pairwise<B: Backend>(x: &Mat) -> Result<Mat, BankError> {
    let n = x.nrows();
    let mut gram = Mat::zeros(n, n);
    B::gemm_symmetric(1.0, x.as_ref(), Trans::No, x.as_ref(), Trans::Yes, 0.0, gram.as_mut())?;
    let norms: Vec<f64> = (0..n).map(|i| gram[(i, i)]).collect();
    Ok(expand(gram, &norms, &norms))
}

/// `D_ij = ‖a_i − b_j‖²` for the rows of `a` (`n × d`) and `b` (`m × d`).
pub(crate) fn between<B: Backend>(a: &Mat, b: &Mat) -> Result<Mat, BankError> {
    let mut cross = Mat::zeros(a.nrows(), b.nrows());
    B::gemm(1.0, a.as_ref(), Trans::No, b.as_ref(), Trans::Yes, 0.0, cross.as_mut())?;
    Ok(expand(cross, &row_norms(a), &row_norms(b)))
}

fn row_norms(x: &Mat) -> Vec<f64> {
    (0..x.nrows()).map(|i| (0..x.ncols()).map(|c| x[(i, c)].powi(2)).sum()).collect()
}

/// `G_ij → max(0, r_i + c_j − 2 G_ij)` in place, column by column in parallel.
fn expand(mut g: Mat, rows: &[f64], cols: &[f64]) -> Mat {
    let n = rows.len().max(1);
    g.as_mut_slice().par_chunks_mut(n).zip(cols).for_each(|(col, &cj)| {
        col.iter_mut().zip(rows).for_each(|(v, &ri)| *v = (ri + cj - 2.0 * *v).max(0.0));
    });
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &Mat, b: &Mat) -> Mat {
        Mat::from_fn(a.nrows(), b.nrows(), |i, j| {
            (0..a.ncols()).map(|k| (a[(i, k)] - b[(j, k)]).powi(2)).sum()
        })
    }

    #[test]
    fn products_match_the_definition() {
        type B = bke_linalg::DefaultBackend;
        let a = Mat::from_fn(70, 5, |i, j| ((i * 13 + j * 7) % 17) as f64 / 4.0 - 2.0);
        // repeated rows: their distance is exactly zero, never negative
        let b = Mat::from_fn(30, 5, |i, j| a[((i * 3) % 70, j)] + if i % 2 == 0 { 0.0 } else { 0.25 });
        for (fast, slow) in
            [(pairwise::<B>(&a).unwrap(), naive(&a, &a)), (between::<B>(&a, &b).unwrap(), naive(&a, &b))]
        {
            for j in 0..slow.ncols() {
                for i in 0..slow.nrows() {
                    assert!(fast[(i, j)] >= 0.0);
                    assert!((fast[(i, j)] - slow[(i, j)]).abs() < 1e-12 * (1.0 + slow[(i, j)]), "({i}, {j})");
                }
            }
        }
        let d = pairwise::<B>(&a).unwrap();
        assert!((0..70).all(|i| d[(i, i)] == 0.0 && (0..70).all(|j| d[(i, j)] == d[(j, i)])));
    }

    #[test]
    fn empty_inputs_give_empty_matrices() {
        type B = bke_linalg::DefaultBackend;
        assert_eq!(pairwise::<B>(&Mat::zeros(0, 3)).unwrap().nrows(), 0);
        assert_eq!(between::<B>(&Mat::zeros(4, 2), &Mat::zeros(0, 2)).unwrap().ncols(), 0);
    }
}
