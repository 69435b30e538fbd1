//! Step 2 of the demo: an MMD two-sample test on banana At1, class 0 against class 1, and its witness
//! function with a BKE posterior band, drawn where the data inform it ([`supported_range`]).

use super::session::{Demo, args, command, f64s, linspace, num, pairs, sig, write_csv};
use crate::html::Section;
use crate::plot::{Figure, Series};
use crate::repro::density::read_columns;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// The share of the pooled sample that must lie within 2θ of a grid point for the witness figure
/// to draw it.
const SUPPORT_SHARE: f64 = 0.02;

/// The first and last indices of `grid` with at least `share` of `sorted` within `radius` (the
/// whole grid when none has).
fn supported_range(grid: &[f64], sorted: &[f64], radius: f64, share: f64) -> (usize, usize) {
    let within =
        |g: f64| sorted.partition_point(|v| *v <= g + radius) - sorted.partition_point(|v| *v < g - radius);
    let need = share * sorted.len() as f64;
    let ok: Vec<usize> = (0..grid.len()).filter(|&i| within(grid[i]) as f64 >= need).collect();
    match (ok.first(), ok.last()) {
        (Some(&a), Some(&b)) => (a, b),
        _ => (0, grid.len().saturating_sub(1)),
    }
}

/// Step 2: MMD test and witness function, banana At1 of class 0 against class 1.
pub(super) fn two_sample(d: &mut Demo) -> anyhow::Result<()> {
    d.begin("two-sample test and witness function (banana, class 0 vs class 1)");
    let rows = read_columns(&d.root.join("data/banana.csv"), &["At1", "class"])?;
    let mut classes: [Vec<f64>; 2] = [vec![], vec![]];
    rows.iter().for_each(|r| classes[usize::from(r[1] > 0.0)].push(r[0]));
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut paths = Vec::new();
    for (c, v) in classes.iter_mut().enumerate() {
        v.shuffle(&mut rng);
        v.truncate(800);
        let p = d.data.join(format!("banana_At1_class{c}.csv"));
        write_csv(&p, &["At1"], v.iter().map(|x| vec![*x]))?;
        paths.push(d.rel(&p));
    }
    // The witness where the data are: between the 0.5 % and 99.5 % quantiles of the pooled sample
    // (beyond them the posterior band only shows the prior, not a difference).
    let mut pooled: Vec<f64> = classes.iter().flatten().copied().collect();
    pooled.sort_by(f64::total_cmp);
    let q = |p: f64| pooled[((pooled.len() - 1) as f64 * p).round() as usize];
    let (lo, hi) = (q(0.005), q(0.995));
    let grid = linspace(lo, hi, 121);
    let grid_path = d.data.join("banana_At1_grid.csv");
    write_csv(&grid_path, &["At1"], grid.iter().map(|x| vec![*x]))?;
    let test_args = args(&["test", "mmd", "--x", &paths[0], "--y", &paths[1], "--permutations", "500"]);
    let wit_args = args(&[
        "witness",
        "--x",
        &paths[0],
        "--y",
        &paths[1],
        "--grid",
        &d.rel(&grid_path),
        "--level",
        "0.8",
    ]);
    let test = d.bke(&test_args)?.json;
    let w = d.bke(&wit_args)?.json;
    let (p, theta) = (num(&test, "p_value")?, num(&w, "lengthscale")?);
    let kernels = test["kernels"].as_array().map_or(0, Vec::len);
    // Drawn where the data inform it: from the first to the last grid point with at least
    // SUPPORT_SHARE of the pooled sample within 2θ (where fewer lie, the band widens to the prior's).
    let (i0, i1) = supported_range(&grid, &pooled, 2.0 * theta, SUPPORT_SHARE);
    let trim = |v: Vec<f64>| v[i0..=i1].to_vec();
    let (mean, lower, upper) = (trim(f64s(&w, "mean")?), trim(f64s(&w, "lower")?), trim(f64s(&w, "upper")?));
    let grid = grid[i0..=i1].to_vec();
    let (lo, hi) = (grid[0], grid[grid.len() - 1]);
    let excl = lower.iter().zip(&upper).filter(|(l, u)| **l > 0.0 || **u < 0.0).count();
    let above: Vec<f64> = grid.iter().zip(&lower).filter(|(_, l)| **l > 0.0).map(|(g, _)| *g).collect();
    let below: Vec<f64> = grid.iter().zip(&upper).filter(|(_, u)| **u < 0.0).map(|(g, _)| *g).collect();
    let span = |v: &[f64]| match (v.first(), v.last()) {
        (Some(a), Some(b)) => format!("between {} and {}", sig(*a, 2), sig(*b, 2)),
        _ => "nowhere".into(),
    };
    let fig = Figure::new(
        "Witness function μ_P − μ_Q: banana At1, class 0 (P) against class 1 (Q)",
        "At1 (data units)",
        "witness μ_P(x) − μ_Q(x)",
    )
    .with(Series::band("80 % credible band (BKE posterior)", &grid, lower.clone(), upper.clone()).color(0))
    .with(Series::line("posterior mean", pairs(&grid, &mean)).color(0))
    .with(Series::hline("0", 0.0).color(6))
    .with(Series::rug("class 0 (P)", &classes[0]).color(1))
    .with(Series::rug("class 1 (Q)", &classes[1]).color(2))
    .x_range(lo, hi);
    let section = Section::new("demo-2-test", "Demo", 2, "2. A two-sample test and its witness function")
        .intro(
            "Are the first banana coordinates of class 0 and class 1 drawn from the same distribution? 800 points of each, \
             unbiased MMD² with a permutation null and the default kernel choice, BKL-Bayes (Gaussian kernels weighted \
             by the BKE posterior over the lengthscale, mixed with the MMDAgg ∪ MMD-FUSE collection); the witness \
             function shows where they differ, with the kernel of largest BKL-Bayes weight and a BKE posterior band \
             (seed 000 §5, Fig. 3).",
        )
        .measured(format!("MMD test: p = {} with 500 permutations, BKL-Bayes over {kernels} kernels", sig(p, 2)))
        .measured(format!("witness lengthscale θ = {} (the test's largest-weight Gaussian kernel)", sig(theta, 3)))
        .measured(format!("the 80 % band excludes 0 at {excl} of {} grid points", grid.len()))
        .figure(
            &fig,
            &format!(
                "The witness from {} to {}, where at least {} % of the pooled sample lies within 2θ of each point \
                 (elsewhere the band only shows the prior), the samples as rugs beneath. The band lies above 0 (class 0 has more mass) {} and below 0 (class 1 has more) {}: {excl} of {} grid points \
                 exclude 0, with θ = {}.",
                sig(lo, 3),
                sig(hi, 3),
                SUPPORT_SHARE * 100.0,
                span(&above),
                span(&below),
                grid.len(),
                sig(theta, 3)
            ),
        )?
        .command(command(&test_args))
        .command(command(&wit_args));
    let verdict = if num(&test, "p_value")? < 0.05 { "reject P = Q" } else { "no evidence against P = Q" };
    d.finish(
        section,
        format!(
            "two-sample test: p = {} ({verdict}), witness band off 0 at {excl}/{} points",
            sig(p, 2),
            grid.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::supported_range;

    #[test]
    fn the_witness_is_drawn_where_the_sample_is_dense_enough() {
        // 100 points on [0, 1] and 2 stragglers at 3 and 5: 2 % of 102 is 2.04 points within 0.1,
        // which the grid points from 0 to 1 have and -0.1 and 1.1 (1 point each) lack
        let mut sample: Vec<f64> = (0..100).map(|i| i as f64 / 99.0).chain([3.0, 5.0]).collect();
        sample.sort_by(f64::total_cmp);
        let grid: Vec<f64> = (0..=60).map(|i| -0.5 + i as f64 * 0.1).collect();
        let (a, b) = supported_range(&grid, &sample, 0.1, 0.02);
        assert!(grid[a].abs() < 1e-9 && (grid[b] - 1.0).abs() < 1e-9, "{} to {}", grid[a], grid[b]);
        // nothing dense enough: the whole grid
        assert_eq!(supported_range(&grid, &sample, 0.1, 0.9), (0, 60));
    }
}
