//! The cost model of the low-rank HSIC null ([`super::hsic_low_rank`]): which kernels keep their
//! exact Gram matrices. Each exact kernel costs its pairs' share of the dense or sparse null per
//! draw; each low-rank one its rows in the product of the stacked factors. Flops are counted as the
//! low-rank product's, and the exact parts' memory loads are priced in them by measurement.

use super::hsic_sparse::LANES as SPARSE_LANES;

/// Flops of the low-rank product that cost as much as gathering one permuted value of a dense Gram
/// matrix (a load from a random place of a column, [`super::hsic_null`]'s block products). Measured
/// with `bke test hsic` (BKL-Bayes, 1-D, B = 1000, 2 cores, AVX-512): at n = 2000, 64 made the two
/// narrowest x-kernels exact and took 7.7 CPU seconds, 200 to 5000 kept every kernel low rank and
/// took 6.3–6.9; at n = 500 (the narrowest kernels exact either way) 0.82 against 0.72–0.80.
const GATHER_FLOPS: f64 = 256.0;
/// Flops of the low-rank product (as the cost model counts them, before the bases shrink it) that
/// cost as much as one kept entry of a sparse exact kernel against one lane group of partner
/// kernels ([`super::hsic_sparse`]): a read from a random place of the partners' interleaved
/// matrices, `64 n²` bytes per group, which outgrow the caches as `n` grows.
fn sparse_entry_flops(n: usize) -> f64 {
    2700.0 + 2.2 * n as f64
}

/// The kernels of each variable that keep their exact Gram matrix: those without a factor, then,
/// greedily from the highest rank, a low-rank kernel whose move to the exact parts lowers the cost
/// per draw. Per exact kernel: `GATHER_FLOPS · n²/2` plus the dense GEMMs (`n²` flops per
/// partner), or, held sparse with `e` kept entries (`kept(side, i)`), `sparse_entry_flops(n) · e`
/// per lane group of partners; `2n R_x R_y` for the low-rank product
/// ([`super::hsic_low_rank`]'s module docs). Depends on the ranks and on each variable's own Gram
/// matrices only.
pub(super) fn dense_kernels(
    n: usize,
    rx: &[Option<usize>],
    ry: &[Option<usize>],
    kept: &dyn Fn(usize, usize) -> Option<usize>,
) -> (Vec<usize>, Vec<usize>) {
    let mut dense = [
        (0..rx.len()).filter(|&k| rx[k].is_none()).collect::<Vec<_>>(),
        (0..ry.len()).filter(|&l| ry[l].is_none()).collect::<Vec<_>>(),
    ];
    let ranks = [rx, ry];
    let nn = (n * n) as f64;
    let cost = |dense: &[Vec<usize>; 2]| {
        let low = |side: usize| ranks[side].len() - dense[side].len();
        let rank_sum = |side: usize| -> f64 {
            (0..ranks[side].len())
                .filter(|i| !dense[side].contains(i))
                .map(|i| ranks[side][i].unwrap_or(0) as f64)
                .sum()
        };
        // an exact y-kernel pairs with every x-kernel; an exact x-kernel with the low-rank y-kernels
        let exact = |side: usize, i: usize, partners: usize| match kept(side, i) {
            Some(e) => sparse_entry_flops(n) * e as f64 * partners.div_ceil(SPARSE_LANES) as f64,
            None => GATHER_FLOPS * nn / 2.0 + nn * partners as f64,
        };
        let exact_y: f64 = dense[1].iter().map(|&l| exact(1, l, rx.len())).sum();
        let exact_x: f64 = if low(1) > 0 { dense[0].iter().map(|&k| exact(0, k, low(1))).sum() } else { 0.0 };
        let low_rank =
            if low(0) > 0 && low(1) > 0 { 2.0 * n as f64 * rank_sum(0) * rank_sum(1) } else { 0.0 };
        exact_y + exact_x + low_rank
    };
    loop {
        let current = cost(&dense);
        let best = (0..2)
            .filter_map(|side| {
                let top = (0..ranks[side].len())
                    .filter(|i| !dense[side].contains(i))
                    .max_by_key(|&i| (ranks[side][i], std::cmp::Reverse(i)))?;
                let mut moved = dense.clone();
                moved[side].push(top);
                Some((cost(&moved), moved))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0));
        match best {
            Some((c, moved)) if c < current => dense = moved,
            _ => break,
        }
    }
    dense.iter_mut().for_each(|d| d.sort_unstable());
    let [x, y] = dense;
    (x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernels without a factor stay exact; a rank that makes the product dearer than a gather moves
    /// to the dense parts, greedily from the highest; small ranks stay low rank.
    #[test]
    fn dense_kernels_follow_the_cost_model() {
        let s = |r: &[usize]| r.iter().map(|&r| Some(r)).collect::<Vec<_>>();
        let dense = |_: usize, _: usize| None;
        assert_eq!(dense_kernels(2000, &s(&[40, 5]), &s(&[30, 3]), &dense), (vec![], vec![]));
        assert_eq!(dense_kernels(2000, &[None, Some(5)], &s(&[30, 3]), &dense), (vec![0], vec![]));
        assert_eq!(dense_kernels(2000, &s(&[900, 5]), &s(&[400, 300]), &dense), (vec![0], vec![]));
        assert_eq!(dense_kernels(2000, &s(&[5, 900]), &s(&[400, 300]), &dense), (vec![1], vec![]));
        // a narrow kernel held sparse (10 000 kept entries) costs less than its rank: it moves,
        // where its gather would not
        let narrow = |side: usize, i: usize| (side == 0 && i == 0).then_some(10_000);
        assert_eq!(dense_kernels(2000, &s(&[900, 5]), &s(&[30, 3]), &dense), (vec![], vec![]));
        assert_eq!(dense_kernels(2000, &s(&[900, 5]), &s(&[30, 3]), &narrow), (vec![0], vec![]));
    }
}
