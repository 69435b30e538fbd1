//! Result tables: a title, column headers, string cells and notes, rendered as aligned text, Markdown
//! and CSV. The reproductions put them in their report sections (and write them as files); the
//! benchmark suites of `bke-bench` append their timing columns to the same tables.

use std::path::Path;

/// A report table: a title, column headers and string cells.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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

    /// Markdown rendering, the title as a level-3 heading.
    pub fn to_markdown(&self) -> String {
        self.to_markdown_at(3)
    }

    /// Markdown rendering with the title as a heading of `level` (`#` repeated), then the table and
    /// its notes as a list.
    pub fn to_markdown_at(&self, level: usize) -> String {
        let mut out = format!(
            "{} {}\n\n| {} |\n|{}\n",
            "#".repeat(level),
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

    /// Prints the table and writes `<dir>/<stem>.csv` and `<dir>/<stem>.md`. A closed stdout (e.g.
    /// `… | head`) only stops the printing.
    pub fn emit(&self, dir: &Path, stem: &str) -> anyhow::Result<()> {
        self.write_files(dir, stem)?;
        let text = format!("{}wrote {}/{stem}.csv and {stem}.md\n\n", self.to_text(), dir.display());
        match std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => Ok(other?),
        }
    }

    /// Writes `<dir>/<stem>.csv` and `<dir>/<stem>.md` without printing (the reproductions put
    /// their tables in the HTML report instead).
    pub fn write_files(&self, dir: &Path, stem: &str) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        bke_core::model_file::write_atomic(dir.join(format!("{stem}.csv")), self.to_csv())?;
        bke_core::model_file::write_atomic(dir.join(format!("{stem}.md")), self.to_markdown())?;
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

/// Writes equal-length `columns` to `path` as CSV under `header`: one row per index, each value as
/// Rust prints it.
pub fn write_columns(path: impl AsRef<Path>, header: &str, columns: &[&[f64]]) -> anyhow::Result<()> {
    let rows = columns.first().map_or(0, |c| c.len());
    let mut csv = format!("{header}\n");
    for i in 0..rows {
        let row: Vec<String> = columns.iter().map(|c| c[i].to_string()).collect();
        csv += &(row.join(",") + "\n");
    }
    Ok(bke_core::model_file::write_atomic(path, csv)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text, Markdown and CSV show the same cells; the Markdown heading takes the level asked for.
    #[test]
    fn renderings_agree() {
        let mut t = Table::new("t", &["n", "rate"]);
        t.push(vec!["10".into(), "0.05".into()]);
        t.notes.push("note".into());
        assert_eq!(t.to_csv(), "n,rate\n10,0.05\n");
        assert_eq!(t.to_markdown(), "### t\n\n| n | rate |\n|---|---|\n| 10 | 0.05 |\n\n- note\n");
        assert!(t.to_markdown_at(4).starts_with("#### t\n"));
        assert_eq!(t.to_text(), "t\n n  rate\n10  0.05\n  note\n");
        assert_eq!(
            (fmt_seconds(2.0), fmt_seconds(2e-3), fmt_seconds(2e-6)),
            ("2.000 s".into(), "2.000 ms".into(), "2.0 us".into())
        );
    }
}
