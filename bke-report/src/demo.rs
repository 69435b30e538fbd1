//! `cargo xtask demo`: a tour of bke on the bundled data, run through the `bke` command (the stable
//! contract) and published as the "Demo" part of the HTML report (`target/bke-report/index.html`).
//!
//! Five steps, each a section with its figure, the exact `bke` commands that rerun it, and one
//! sentence of interpretation: kernel learning by the BKE marginal pseudolikelihood (seed 000) with
//! the curve and the median heuristic; an MMD two-sample test with its witness function; BaNK's
//! learned spectral density and predictions against random kitchen sinks (seed 001); a task-
//! transformed GP (deconditional mean embedding, seed 004) with its bands; a kernel student-t density
//! (seed 003).
//!
//! Integer-valued columns (ozone's temperatures are whole °F) make the pseudolikelihood lock onto
//! the integer lattice: the demo dequantises them — adds seeded `U(−½, ½)` noise — shows both curves,
//! and says so. The density step reports the search grids it had to widen.

mod bank;
mod density;
mod dme;
mod kernel_learning;
mod session;
mod two_sample;

use crate::html::Report;
pub use session::Demo;
use std::fmt::Write as _;

impl Demo {
    /// Runs the five steps.
    pub fn run(&mut self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.data)?;
        kernel_learning::kernel_learning(self)?;
        two_sample::two_sample(self)?;
        bank::bank(self)?;
        dme::dme(self)?;
        density::density(self)?;
        Ok(())
    }
}

/// The demo's summary: one line per step, the total time and the report's path.
pub fn summary(demo: &Demo, report: &Report) -> String {
    let mut s = String::from("\nbke demo: five steps on the bundled data\n");
    for (i, l) in demo.summary.iter().enumerate() {
        let _ = writeln!(s, "  {}. {l}", i + 1);
    }
    let _ = writeln!(
        s,
        "total {:.1} s after the build; inputs written to {}",
        demo.elapsed(),
        demo.data.display()
    );
    let _ = writeln!(s, "report: {}", report.index().display());
    s
}
