//! Step 1 of the demo: kernel learning by the BKE marginal pseudolikelihood (seed 000).

use super::session::{Demo, args, command, dequantise, integer_valued, num, scan, sig, write_csv};
use crate::html::Section;
use crate::plot::{Figure, Series};
use crate::repro::density::read_columns;
use crate::stats::mean_sd;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// Step 1: ML-II kernel learning on ozone temperature, raw and dequantised.
pub(super) fn kernel_learning(d: &mut Demo) -> anyhow::Result<()> {
    d.begin("kernel learning on ozone temperature (BKE marginal pseudolikelihood)");
    let temp: Vec<f64> =
        read_columns(&d.root.join("data/ozone.csv"), &["temp"])?.into_iter().map(|r| r[0]).collect();
    let deq_path = d.data.join("ozone_temp_dequantised.csv");
    let integer = integer_valued(&temp);
    let deq = if integer { dequantise(&temp, 1) } else { temp.clone() };
    write_csv(&deq_path, &["temp"], deq.iter().map(|v| vec![*v]))?;
    let raw_args =
        args(&["embed", "fit", "--data", "data/ozone.csv", "--columns", "temp", "--grid-points", "81"]);
    let deq_args = args(&["embed", "fit", "--data", &d.rel(&deq_path), "--grid-points", "81"]);
    // Control: a Gaussian sample of the same size, mean and sd (no lattice, no structure at small scales).
    let (m, sd) = mean_sd(&deq);
    let normal = Normal::new(m, sd)?;
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let gauss_path = d.data.join("gaussian_control.csv");
    write_csv(&gauss_path, &["temp"], (0..temp.len()).map(|_| vec![normal.sample(&mut rng)]))?;
    let gauss_args = args(&["embed", "fit", "--data", &d.rel(&gauss_path), "--grid-points", "81"]);
    let raw = d.bke(&raw_args)?.json;
    let fit = d.bke(&deq_args)?.json;
    let gauss = d.bke(&gauss_args)?.json;
    let theta_gauss = num(&gauss, "lengthscale")?;
    let (theta_raw, theta) = (num(&raw, "lengthscale")?, num(&fit, "lengthscale")?);
    let median = num(&fit, "median_heuristic")?;
    let (deq_scan, raw_scan, gauss_scan) = (scan(&fit)?, scan(&raw)?, scan(&gauss)?);
    // The range that decides: from the lowest point right of the optimum (the valley between the two
    // optima) to the top; the dive at small θ, which would set the range, is clipped.
    let top = [&deq_scan, &raw_scan, &gauss_scan]
        .iter()
        .flat_map(|s| s.iter().map(|p| p.1))
        .fold(f64::MIN, f64::max);
    let valley = deq_scan.iter().filter(|p| p.0 >= theta).map(|p| p.1).fold(f64::MAX, f64::min);
    let (y0, y1) = (valley - 0.25 * (top - valley), top + 0.08 * (top - valley));
    let bottom = deq_scan.iter().copied().fold((f64::NAN, f64::MAX), |a, p| if p.1 < a.1 { p } else { a });
    let second = fit["local_optima"].as_array().and_then(|o| {
        o.iter().filter_map(|p| p["lengthscale"].as_f64()).find(|l| (l / theta).ln().abs() > 1.0)
    });
    let best =
        |s: &[(f64, f64)]| s.iter().copied().fold((f64::NAN, f64::MIN), |a, p| if p.1 > a.1 { p } else { a });
    let fig = Figure::new(
        "Kernel learning on ozone temperature: marginal pseudolikelihood against θ",
        "lengthscale θ (°F, log scale)",
        "log marginal pseudolikelihood (nats)",
    )
    .log_x()
    .y_range(y0, y1)
    .focus_y(valley, top)
    .with(Series::line("dequantised temperatures", deq_scan.clone()).color(0))
    .with(Series::dashed("raw integer temperatures", raw_scan.clone()).color(6))
    .with(Series::dotted("Gaussian sample, same n, mean and sd", gauss_scan.clone()).color(1))
    .with(
        Series::markers("maximum of each curve", vec![best(&deq_scan), best(&raw_scan), best(&gauss_scan)])
            .color(4),
    )
    .with(Series::vline(&format!("ML-II optimum θ = {}", sig(theta, 3)), theta).color(0))
    .with(Series::vline(&format!("median heuristic θ = {}", sig(median, 3)), median).color(3));
    // Where the raw and dequantised curves agree to within 1 % of the plotted range.
    let agree = raw_scan
        .iter()
        .zip(&deq_scan)
        .filter(|(r, q)| (r.1 - q.1).abs() > 0.01 * (y1 - y0))
        .map(|(r, _)| r.0)
        .fold(0.0, f64::max);
    let mut section = Section::new("demo-1-kernel", "Demo", 1, "1. Learning a kernel: the BKE marginal pseudolikelihood")
        .intro(format!(
            "The squared-exponential lengthscale θ of {} daily maximum temperatures (data/ozone.csv) chosen by ML-II on \
             the marginal pseudolikelihood of a GP prior on the kernel mean embedding (seed 000 eq. 15, τ² = 1, \
             landmarks held out at random), against the median heuristic.",
            temp.len()
        ))
        .measured(format!("ML-II lengthscale on the dequantised data θ = {theta:.3} °F; median heuristic {median:.2} °F"))
        .measured(format!("on the raw integer data the optimum is θ = {theta_raw:.3} °F"))
        .measured(format!("control: a Gaussian sample of the same size, mean and sd gives θ = {theta_gauss:.3}"))
        .figure(
            &fig,
            &format!(
                "The y range shows the region that decides, from the valley between the optima to the top; below \
                 θ ≈ {} the curves leave the frame (the dequantised one falls to {} nats at θ = {}). The global maximum \
                 sits at θ = {} °F, {}× below the median heuristic{}. A Gaussian sample of the same size gives the same \
                 picture (θ = {}), so the small optimum is the pseudolikelihood's preference at this sample size \
                 (compare seed 000 Fig. 2D: 0.85 against a median heuristic of 20), not only the integer lattice. The raw \
                 integers (dashed grey) peak at θ = {} and differ from the dequantised curve by more than 1 % of the \
                 plotted range below θ ≈ {}, where the kernel starts to see the ties.",
                sig(deq_scan.iter().find(|p| p.1 >= y0).map_or(f64::NAN, |p| p.0), 2),
                sig(bottom.1, 4),
                sig(bottom.0, 2),
                sig(theta, 3),
                sig(median / theta, 2),
                second.map_or(String::new(), |l| format!(", with a second local optimum at θ = {} °F, the scale of the data's spread", sig(l, 3))),
                sig(theta_gauss, 3),
                sig(theta_raw, 3),
                sig(agree, 2)
            ),
        )?
        .command(command(&raw_args))
        .command(command(&deq_args))
        .command(command(&gauss_args));
    if integer {
        section.push_warning(format!(
            "The temperatures are whole numbers (ties): they were dequantised (U(−½, ½) noise, seed 1, written to {}) \
             before learning θ, so that no lengthscale is rewarded for resolving the lattice of whole degrees; on the \
             raw integers ML-II returns θ = {theta_raw:.2}.",
            d.rel(&deq_path)
        ));
    }
    let raw_note = if integer { format!("; {theta_raw:.2} on the raw integers") } else { String::new() };
    d.finish(
        section,
        format!("kernel learning: θ = {theta:.2} °F by ML-II (dequantised{raw_note}), median heuristic {median:.1} °F"),
    )
}
