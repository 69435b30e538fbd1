//! Timing: median of repeated runs, the process's CPU time, and the timing columns of the suites'
//! tables ([`bke_report::table::Table`], printed aligned and written as CSV and markdown under
//! `target/bench/`).
//!
//! Every suite's CSV is machine-readable: sizes are plain integers and the last columns of each
//! timed row are `seconds` (median wall time), `gflops` (where a flop count is defined, else empty),
//! `gemm_n`, `gemm_seconds` (one faer `n × n` GEMM timed in the same run: [`GemmReference`]) and
//! `x_gemm` (`seconds / gemm_seconds`), so a result can be judged as a share of the machine's own
//! GEMM rate on any machine.

use bke_linalg::{Backend, Faer, Mat, Trans};
use bke_report::table::{Table, fmt_seconds};
use std::time::Instant;

/// One faer GEMM `C ← A B` of `n × n` standard normal matrices, timed in the same run as a suite
/// (median of at least 3 runs and 0.5 s of work): the machine's own dense rate, against which every
/// other time is reported.
#[derive(Debug, Clone, Copy)]
pub struct GemmReference {
    /// Matrix order.
    pub n: usize,
    /// Median wall seconds of one GEMM.
    pub seconds: f64,
}

impl GemmReference {
    /// Times the GEMM at order `n`.
    pub fn measure(n: usize) -> Self {
        let a = crate::linalg::gaussian(n, n, 1);
        let b = crate::linalg::gaussian(n, n, 2);
        let mut c = Mat::zeros(n, n);
        let seconds = median_seconds(
            &mut c,
            3,
            0.5,
            |_| {},
            |c| {
                Faer::gemm(1.0, a.as_ref(), Trans::No, b.as_ref(), Trans::No, 0.0, c.as_mut())
                    .expect("square shapes");
                c[(0, 0)]
            },
        );
        Self { n, seconds }
    }

    /// `2n³` flops.
    pub fn flops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3)
    }

    /// Achieved GFLOP/s.
    pub fn gflops(&self) -> f64 {
        self.flops() / self.seconds / 1e9
    }

    /// The note printed under every table.
    pub fn note(&self) -> String {
        format!(
            "reference: one faer GEMM at n = {} in this run: {} ({:.1} GFLOP/s); x_gemm = seconds / that time",
            self.n,
            fmt_seconds(self.seconds),
            self.gflops()
        )
    }
}

/// Headers of the machine-readable timing columns appended by [`TimingColumns::push_timed`].
pub const TIMING_HEADERS: [&str; 5] = ["seconds", "gflops", "gemm_n", "gemm_seconds", "x_gemm"];

/// CPU seconds used so far by every thread of this process (the sum of the threads'
/// `/proc/self/task/*/schedstat` run times, nanosecond resolution), or `None` where that is not
/// available (not Linux). A thread that has exited no longer counts, so take differences across work
/// done on threads that persist (the main thread and the rayon pool). On a shared machine CPU time,
/// unlike wall time, does not grow with the other processes' load.
pub fn process_cpu_seconds() -> Option<f64> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        // a thread that exits while we read has no schedstat any more: it no longer counts
        let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total as f64 * 1e-9)
}

/// Median wall time in seconds of `run(state)` over repetitions, `prepare(state)` untimed before
/// each. Repeats at least `min_reps` times and until `min_total` seconds of timed work (at most 1000).
pub fn median_seconds<S>(
    state: &mut S,
    min_reps: usize,
    min_total: f64,
    mut prepare: impl FnMut(&mut S),
    mut run: impl FnMut(&mut S) -> f64,
) -> f64 {
    let mut times = Vec::new();
    let mut total = 0.0;
    let mut sink = 0.0;
    while times.len() < min_reps || (total < min_total && times.len() < 1000) {
        prepare(state);
        let t = Instant::now();
        sink += run(state);
        let dt = t.elapsed().as_secs_f64();
        times.push(dt);
        total += dt;
    }
    std::hint::black_box(sink);
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// [`median_seconds`] of `sweep` on a fresh clone of `base` per repetition (at least `min_reps`),
/// with the median CPU seconds (all threads) of the same runs where the platform reports CPU time,
/// and the state the last repetition left.
pub fn median_sweep<S: Clone>(
    base: &S,
    min_reps: usize,
    mut sweep: impl FnMut(&mut S),
) -> (f64, Option<f64>, S) {
    let (mut cpu, mut state) = (Vec::new(), None);
    let t = median_seconds(
        &mut state,
        min_reps,
        0.2,
        |s| *s = Some(base.clone()),
        |s| {
            let st = s.as_mut().expect("prepared");
            let c0 = process_cpu_seconds();
            sweep(st);
            cpu.extend(c0.zip(process_cpu_seconds()).map(|(a, b)| b - a));
            0.0
        },
    );
    (t, median(cpu), state.expect("at least one repetition"))
}

/// The median of `v` (`None` when empty).
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The machine-readable timing columns ([`TIMING_HEADERS`]) of a benchmark table, stated against the
/// run's [`GemmReference`].
pub trait TimingColumns {
    /// The same table with the timing columns appended to its headers and the reference's note under it.
    fn with_timing(self, gemm: GemmReference) -> Self;

    /// Appends a row followed by its timing cells: `seconds` (empty when not finite, e.g. a
    /// skipped configuration), `gflops` (empty without a flop count), the GEMM reference and the
    /// ratio.
    fn push_timed(&mut self, gemm: GemmReference, row: Vec<String>, seconds: f64, flops: Option<f64>);
}

impl TimingColumns for Table {
    fn with_timing(mut self, gemm: GemmReference) -> Self {
        self.headers.extend(TIMING_HEADERS.iter().map(|h| h.to_string()));
        self.notes.push(gemm.note());
        self
    }

    fn push_timed(&mut self, gemm: GemmReference, mut row: Vec<String>, seconds: f64, flops: Option<f64>) {
        let finite = seconds.is_finite();
        let num = |v: f64| if finite { format!("{v:.6e}") } else { String::new() };
        row.push(num(seconds));
        row.push(flops.filter(|_| finite).map_or(String::new(), |f| format!("{:.3}", f / seconds / 1e9)));
        row.push(gemm.n.to_string());
        row.push(format!("{:.6e}", gemm.seconds));
        row.push(if finite { format!("{:.4}", seconds / gemm.seconds) } else { String::new() });
        self.rows.push(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Timed rows end in plain numbers a script can parse; a skipped row leaves them empty.
    #[test]
    fn timing_columns_are_numeric() {
        let gemm = GemmReference { n: 4, seconds: 2e-3 };
        let mut t = Table::new("t", &["n", "backend"]).with_timing(gemm);
        t.push_timed(gemm, vec!["10".into(), "faer".into()], 1e-3, Some(4e6));
        t.push_timed(gemm, vec!["20".into(), "faer".into()], f64::NAN, Some(4e6));
        let csv = t.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "n,backend,seconds,gflops,gemm_n,gemm_seconds,x_gemm");
        let cells: Vec<f64> = lines[1].split(',').map(|c| c.parse().unwrap_or(f64::NAN)).collect();
        assert_eq!(cells[2], 1e-3);
        assert!((cells[3] - 4.0).abs() < 1e-12);
        assert_eq!(cells[4], 4.0);
        assert_eq!(cells[5], 2e-3);
        assert!((cells[6] - 0.5).abs() < 1e-12);
        assert_eq!(lines[2], "20,faer,,,4,2.000000e-3,");
    }

    /// Busy work on this thread shows up in the process's CPU time, which never exceeds the wall
    /// time times the cores that could run it (physical bounds, independent of the schedstat source).
    #[test]
    fn cpu_seconds_grow_with_busy_work_and_not_faster_than_wall_time() {
        let Some(c0) = process_cpu_seconds() else { return };
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while process_cpu_seconds().expect("still readable") - c0 < 0.02 {
            for i in 0..100_000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
            assert!(t0.elapsed().as_secs_f64() < 60.0, "CPU time did not grow in a minute of busy work");
        }
        std::hint::black_box(x);
        let used = process_cpu_seconds().expect("readable") - c0;
        let threads = std::thread::available_parallelism().map_or(1, usize::from) as f64;
        assert!(used >= 0.02 && used <= t0.elapsed().as_secs_f64() * threads + 0.01, "used {used}");
    }
}
