//! The probabilistic side of the classification table of [`crate::repro::bank_table`]: for every
//! classifier its cross-validated log-loss, Brier score and expected calibration error (mean ±
//! standard error over folds; [`bke_bank::calibration`] gives the definitions and the 15 equal-width
//! bins), and per dataset the reliability diagram of the held-out probabilities (fraction of
//! positives against mean predicted probability per bin; a calibrated classifier lies on the
//! diagonal).

use crate::plot::{Figure, Series};
use crate::repro::bank_table::Row;
use crate::table::Table;
use bke_bank::Task;
use bke_bank::calibration::FoldScore;
use bke_bank::cv::Method;
use std::fmt::Write as _;

/// The classifiers of the table, in column order.
pub const METHODS: [Method; 6] =
    [Method::Rks, Method::Mkl, Method::Rfo, Method::Gbdt, Method::Gpc, Method::Bank];

fn fmt(s: &FoldScore) -> String {
    format!("{:.4} ± {:.4}", s.mean, s.stderr)
}

/// The table of error, log-loss, Brier score and ECE, one line per classification dataset and
/// method (`None` when no classification dataset ran).
pub fn table(rows: &[Row]) -> Option<Table> {
    let mut t = Table::new(
        "Table 2b: classification probabilities (5-fold CV, mean ± SE over folds)",
        &["dataset", "method", "error", "log-loss", "Brier", "ECE (15 bins)"],
    );
    for row in rows.iter().filter(|r| r.spec.task == Task::Classification) {
        for m in METHODS {
            let Some((_, r, _)) = row.results.iter().find(|(k, ..)| *k == m) else { continue };
            let Some(p) = &r.probabilistic else { continue };
            t.push(vec![
                row.spec.name.to_string(),
                m.name().to_string(),
                format!("{:.4} ± {:.4}", r.mean, r.stderr),
                fmt(&p.log_loss),
                fmt(&p.brier),
                fmt(&p.ece),
            ]);
        }
    }
    t.notes.push(
        "log-loss in nats per row (probabilities clipped to [1e-15, 1 - 1e-15]); ECE on P(y = 1) with 15 \
         equal-width bins; see bke_bank::calibration"
            .into(),
    );
    (!t.rows.is_empty()).then_some(t)
}

/// The reliability diagram of one classification dataset: every method's non-empty bins.
pub fn reliability_figure(row: &Row) -> Figure {
    let mut fig = Figure::new(
        &format!("Reliability on {} (held-out, 5-fold)", row.spec.name),
        "mean predicted P(y = 1) in the bin",
        "fraction of positives",
    )
    .with(Series::dashed("calibrated", vec![(0.0, 0.0), (1.0, 1.0)]).color(6));
    for (i, m) in METHODS.iter().enumerate() {
        let Some((_, r, _)) = row.results.iter().find(|(k, ..)| k == m) else { continue };
        let Some(p) = &r.probabilistic else { continue };
        let pts = p.reliability.iter().filter(|b| b.count > 0).map(|b| (b.mean_probability, b.frequency));
        fig = fig.with(Series::line(m.name(), pts.collect()).color(i));
    }
    fig
}

/// `reliability.csv`: dataset, method, bin edges, count, mean probability, fraction of positives.
pub fn reliability_csv(rows: &[Row]) -> String {
    let mut csv = String::from("dataset,method,lower,upper,count,mean_probability,frequency\n");
    for row in rows {
        for (m, r, _) in &row.results {
            for b in r.probabilistic.iter().flat_map(|p| &p.reliability) {
                let _ = writeln!(
                    csv,
                    "{},{},{},{},{},{},{}",
                    row.spec.name,
                    m.name(),
                    b.lower,
                    b.upper,
                    b.count,
                    b.mean_probability,
                    b.frequency
                );
            }
        }
    }
    csv
}
