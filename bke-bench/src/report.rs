//! Timing and report tables: median of repeated runs, printed as an aligned table and written as
//! CSV and markdown under `target/bench/`.

use std::path::Path;
use std::time::Instant;

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

/// A report table: a title, column headers and string cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Title, printed above the table and used as the markdown heading.
    pub title: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
    /// Notes printed under the table (thread counts, machine, flop conventions).
    pub notes: Vec<String>,
}

impl Table {
    /// An empty table with the given title and headers.
    pub fn new(title: &str, headers: &[&str]) -> Self {
        Self {
            title: title.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            ..Self::default()
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// Aligned plain-text rendering.
    pub fn to_text(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|j| self.rows.iter().map(|r| r[j].len()).chain([self.headers[j].len()]).max().unwrap_or(0))
            .collect();
        let line = |cells: &[String]| {
            cells.iter().zip(&widths).map(|(c, w)| format!("{c:>w$}")).collect::<Vec<_>>().join("  ")
        };
        let mut out = format!("{}\n{}\n", self.title, line(&self.headers));
        for r in &self.rows {
            out += &line(r);
            out.push('\n');
        }
        for n in &self.notes {
            out += &format!("  {n}\n");
        }
        out
    }

    /// Markdown rendering.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "### {}\n\n| {} |\n|{}\n",
            self.title,
            self.headers.join(" | "),
            "---|".repeat(self.headers.len())
        );
        for r in &self.rows {
            out += &format!("| {} |\n", r.join(" | "));
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for n in &self.notes {
                out += &format!("- {n}\n");
            }
        }
        out
    }

    /// CSV rendering (cells never contain commas).
    pub fn to_csv(&self) -> String {
        let mut out = self.headers.join(",") + "\n";
        for r in &self.rows {
            out += &(r.join(",") + "\n");
        }
        out
    }

    /// Prints the table and writes `<dir>/<stem>.csv` and `<dir>/<stem>.md`.
    pub fn emit(&self, dir: &Path, stem: &str) -> anyhow::Result<()> {
        print!("{}", self.to_text());
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join(format!("{stem}.csv")), self.to_csv())?;
        std::fs::write(dir.join(format!("{stem}.md")), self.to_markdown())?;
        println!("wrote {}/{stem}.csv and {stem}.md\n", dir.display());
        Ok(())
    }
}

/// Formats seconds with a unit that keeps three significant digits.
pub fn fmt_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::process_cpu_seconds;

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
