//! The report a person reads: one self-contained HTML page, `target/bke-report/index.html`, that
//! collects the sections written by `cargo xtask demo` and by every `cargo xtask repro` that ran.
//!
//! A [`Section`] is one experiment: a title, a short paragraph (what it is, what the seed reports,
//! what we measured), [`Figure`]s (inline SVG), [`Table`]s, warnings, and the exact command that
//! reruns it. [`Report::publish`] stores the section as JSON under `sections/` (so sections written
//! by different runs and processes accumulate, the newest of each id winning) and re-renders the page
//! from all of them, with the machine, backends and versions at the bottom. Nothing in the page is
//! fetched: figures are inline SVG, the font they were measured with is embedded, there is no script.
//! The same sections, less their figures, are the Markdown of `docs/results.md` ([`crate::results`]).
//!
//! A reproduction (`bke-report/src/repro/*.rs`, registered in `src/bin/bke-repro.rs`) receives a
//! [`crate::repro::Ctx`] that pre-fills the id, order and rerun command:
//!
//! ```no_run
//! # fn demo(ctx: &mut bke_report::repro::Ctx) -> anyhow::Result<()> {
//! use bke_report::plot::{Figure, Series};
//! use bke_report::table::Table;
//! let reps = ctx.size(1000, 20); // full size, smoke size (`--smoke`, what CI runs)
//! let mut table = Table::new("type-I error at α = 0.05", &["test", "rate"]);
//! table.push(vec!["MMD".into(), "0.049".into()]);
//! let fig = Figure::new("Power against sample size", "n (points per sample)", "rejection rate")
//!     .with(Series::line("BKL", vec![(50.0, 0.2), (100.0, 0.6)]));
//! let section = ctx
//!     .section("power", "Power of the MMD test (seed 000 Fig. 2C)")
//!     .intro("What the experiment is, in one or two sentences.")
//!     .seed("What the seed reports (its numbers, or 'qualitative only').")
//!     .measured(format!("What we measured over {reps} replications."))
//!     .figure(&fig, "One sentence saying what to look at.")?
//!     .table(&table);
//! ctx.publish(section)?;
//! # Ok(()) }
//! ```
//!
//! Outside a reproduction (the demo), build a [`Section`] with [`Section::new`] and call
//! [`Report::publish`] yourself.

use crate::plot::{FONT_FAMILY, FONT_TTF, Figure};
use crate::table::Table;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One figure of a section: its SVG and a caption.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FigureBlock {
    /// The SVG document.
    pub svg: String,
    /// What to look at in it (one sentence).
    pub caption: String,
}

/// One experiment of the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Section {
    /// Unique id (file name of the stored section, anchor in the page).
    pub id: String,
    /// The part of the page it belongs to (`"Demo"`, `"Reproductions"`).
    pub group: String,
    /// Position within its group (lower first).
    pub order: u32,
    /// Title.
    pub title: String,
    /// What the experiment is.
    pub intro: Vec<String>,
    /// What the seed (paper) reports.
    pub seed: Vec<String>,
    /// What we measured.
    pub measured: Vec<String>,
    /// Figures.
    pub figures: Vec<FigureBlock>,
    /// Tables.
    pub tables: Vec<Table>,
    /// Warnings a reader must see (data adjustments, failed checks, reduced sizes).
    pub warnings: Vec<String>,
    /// The exact commands that rerun this section.
    pub commands: Vec<String>,
    /// Wall-clock seconds the section took.
    pub seconds: f64,
    /// Whether it ran at the reduced (smoke) size.
    pub smoke: bool,
    /// When it finished (UTC, ISO 8601).
    pub finished: String,
}

impl Section {
    /// An empty section in `group` (sorted by `order` within the group).
    pub fn new(id: &str, group: &str, order: u32, title: &str) -> Self {
        Self { id: id.into(), group: group.into(), order, title: title.into(), ..Self::default() }
    }
    /// Adds a paragraph saying what the experiment is.
    pub fn intro(mut self, text: impl Into<String>) -> Self {
        self.intro.push(text.into());
        self
    }
    /// Adds a paragraph saying what the seed reports.
    pub fn seed(mut self, text: impl Into<String>) -> Self {
        self.seed.push(text.into());
        self
    }
    /// Adds a line of what we measured.
    pub fn measured(mut self, text: impl Into<String>) -> Self {
        self.measured.push(text.into());
        self
    }
    /// Draws `fig` into the section with a caption.
    pub fn figure(mut self, fig: &Figure, caption: &str) -> anyhow::Result<Self> {
        self.figures.push(FigureBlock { svg: fig.to_svg()?, caption: caption.into() });
        Ok(self)
    }
    /// Adds a table.
    pub fn table(mut self, table: &Table) -> Self {
        self.tables.push(table.clone());
        self
    }
    /// Adds a warning.
    pub fn warning(mut self, text: impl Into<String>) -> Self {
        self.warnings.push(text.into());
        self
    }
    /// Adds a rerun command.
    pub fn command(mut self, cmd: impl Into<String>) -> Self {
        self.commands.push(cmd.into());
        self
    }
    /// In-place forms of the builders, for sections filled in a loop.
    pub fn push_measured(&mut self, text: impl Into<String>) {
        self.measured.push(text.into());
    }
    /// Adds a figure in place.
    pub fn push_figure(&mut self, fig: &Figure, caption: &str) -> anyhow::Result<()> {
        self.figures.push(FigureBlock { svg: fig.to_svg()?, caption: caption.into() });
        Ok(())
    }
    /// Adds a table in place.
    pub fn push_table(&mut self, table: &Table) {
        self.tables.push(table.clone());
    }
    /// Adds a rerun command in place.
    pub fn push_command(&mut self, cmd: impl Into<String>) {
        self.commands.push(cmd.into());
    }
    /// Adds a warning in place.
    pub fn push_warning(&mut self, text: impl Into<String>) {
        self.warnings.push(text.into());
    }
}

/// The report directory: stored sections and the rendered page.
#[derive(Debug, Clone)]
pub struct Report {
    dir: PathBuf,
}

/// Group order on the page.
const GROUPS: [&str; 2] = ["Demo", "Reproductions"];

impl Report {
    /// The report under `dir` (created on first publish).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The page's path, `<dir>/index.html`.
    pub fn index(&self) -> PathBuf {
        self.dir.join("index.html")
    }

    /// The report directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stores `section` (replacing an earlier one with the same id) and re-renders the page.
    pub fn publish(&self, section: &Section) -> anyhow::Result<()> {
        let store = self.dir.join("sections");
        std::fs::create_dir_all(&store)?;
        let name =
            format!("{}.json", section.id.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
        write_atomic(&store.join(name), &serde_json::to_string(section)?)?;
        self.render()
    }

    /// Every stored section, in page order (group, then order, then id).
    pub fn sections(&self) -> anyhow::Result<Vec<Section>> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.dir.join("sections")) else { return Ok(out) };
        for e in entries {
            let path = e?.path();
            if path.extension().is_some_and(|x| x == "json") {
                let text = std::fs::read_to_string(&path)?;
                match serde_json::from_str::<Section>(&text) {
                    Ok(s) => out.push(s),
                    Err(err) => eprintln!("note: skipping {} ({err})", path.display()),
                }
            }
        }
        let rank = |g: &str| GROUPS.iter().position(|x| *x == g).unwrap_or(GROUPS.len());
        out.sort_by(|a, b| (rank(&a.group), a.order, &a.id).cmp(&(rank(&b.group), b.order, &b.id)));
        Ok(out)
    }

    /// Writes `index.html` from the stored sections.
    pub fn render(&self) -> anyhow::Result<()> {
        let html = render_page(&self.sections()?, &Environment::read());
        write_atomic(&self.index(), &html)
    }
}

/// Writes `text` to `path` atomically ([`bke_core::model_file::write_atomic`]), creating its
/// directory.
pub fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    bke_core::model_file::write_atomic(path, text)?;
    Ok(())
}

/// The machine, backends and versions the page states.
#[derive(Debug, Clone)]
pub struct Environment {
    /// `(name, value)` rows.
    pub rows: Vec<(String, String)>,
}

impl Environment {
    /// Reads the machine (CPU, cores, memory, OS), the compiled backends and the versions.
    pub fn read() -> Self {
        let file = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = file("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or("unknown".to_string(), |(_, v)| v.trim().to_string());
        let mem = file("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map_or("unknown".to_string(), |kb| format!("{:.1} GiB", kb / 1048576.0));
        let os = file("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map_or(std::env::consts::OS.to_string(), |v| v.trim_matches('"').to_string());
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let command = |prog: &str, args: &[&str]| {
            std::process::Command::new(prog)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map_or("unknown".to_string(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let backends: Vec<String> =
            bke_linalg::BackendKind::available().iter().map(|b| b.name().to_string()).collect();
        let rows = vec![
            ("CPU".into(), format!("{cpu} ({cores} logical cores available)")),
            ("memory".into(), mem),
            ("OS".into(), os),
            ("linear-algebra backends compiled in".into(), backends.join(", ")),
            ("default backend".into(), bke_linalg::BackendKind::default_kind().name().to_string()),
            ("rayon threads".into(), rayon::current_num_threads().to_string()),
            ("bke version".into(), env!("CARGO_PKG_VERSION").into()),
            ("git commit".into(), command("git", &["describe", "--always", "--dirty", "--abbrev=10"])),
            ("rustc".into(), command("rustc", &["-V"])),
            ("page written".into(), utc_now()),
        ];
        Self { rows }
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86400) as i64, secs % 86400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Standard base64 (RFC 4648) of `bytes`, for the embedded font.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let v = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(A[(v >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

const CSS: &str = "
body{font-family:'DejaVu Sans',Verdana,sans-serif;max-width:1100px;margin:0 auto;padding:1em 2em;color:#222;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em}h2{font-size:1.3em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
h3{font-size:1.05em;margin:1em 0 .3em}.meta{color:#666;font-size:.9em}
nav ol{columns:2;font-size:.92em}figure{margin:1em 0;display:inline-block;vertical-align:top}
figure svg{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:.9em;color:#444;max-width:760px}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}caption{text-align:left;font-weight:bold;padding:.3em 0}
.notes{font-size:.85em;color:#555}pre{background:#f6f6f6;padding:.5em .8em;font-size:.88em;white-space:pre-wrap;overflow-wrap:anywhere}
pre code{display:block;padding-left:2em;text-indent:-2em}
.warn{background:#fff4e0;border-left:4px solid #e69f00;padding:.4em .8em;margin:.5em 0}
.smoke{background:#e8f1fb;border-left:4px solid #0072b2;padding:.4em .8em}footer table td{text-align:left}
";

/// Renders the whole page.
pub fn render_page(sections: &[Section], env: &Environment) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>bke report</title><style>@font-face{{font-family:'{FONT_FAMILY}';\
         src:url(data:font/ttf;base64,{}) format('truetype')}}{CSS}</style></head><body>\n",
        base64(FONT_TTF)
    );
    h += "<header><h1>bke — Bayesian kernel learning: report</h1>\n";
    let _ = writeln!(
        h,
        "<p class=\"meta\">{} section(s), page written {}. Sections accumulate from every run of \
         <code>cargo xtask demo</code> and <code>cargo xtask repro …</code>; each shows the command that reruns it.</p>",
        sections.len(),
        esc(&utc_now())
    );
    if sections.is_empty() {
        h +=
            "<p>No section yet: run <code>cargo xtask demo</code> or <code>cargo xtask repro all</code>.</p>";
    }
    h += "<nav><ol>";
    for s in sections {
        let _ = write!(h, "<li><a href=\"#{}\">{}</a></li>", esc(&s.id), esc(&s.title));
    }
    h += "</ol></nav></header>\n<main>\n";
    let mut group = "";
    for s in sections {
        if s.group != group {
            group = &s.group;
            let _ = writeln!(h, "<h1>{}</h1>", esc(group));
        }
        render_section(&mut h, s);
    }
    h += "</main>\n<footer><h2>Machine, backends and versions</h2><table>";
    for (k, v) in &env.rows {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    h += "</table></footer>\n</body></html>\n";
    h
}

fn render_section(h: &mut String, s: &Section) {
    let _ = writeln!(h, "<section id=\"{}\"><h2>{}</h2>", esc(&s.id), esc(&s.title));
    let _ = writeln!(h, "<p class=\"meta\">finished {} · {:.1} s</p>", esc(&s.finished), s.seconds);
    if s.smoke {
        h.push_str(
            "<p class=\"smoke\">Reduced (smoke) size: a check that the pipeline runs, not the \
             reproduction's numbers. Rerun without <code>--smoke</code> for those.</p>\n",
        );
    }
    for p in &s.intro {
        let _ = writeln!(h, "<p>{}</p>", esc(p));
    }
    for w in &s.warnings {
        let _ = writeln!(h, "<p class=\"warn\">{}</p>", esc(w));
    }
    if !s.seed.is_empty() {
        h.push_str("<h3>What the seed reports</h3>\n");
        for p in &s.seed {
            let _ = writeln!(h, "<p>{}</p>", esc(p));
        }
    }
    if !s.measured.is_empty() {
        h.push_str("<h3>What we measured</h3>\n<ul>");
        for p in &s.measured {
            let _ = write!(h, "<li>{}</li>", esc(p));
        }
        h.push_str("</ul>\n");
    }
    for f in &s.figures {
        let _ = writeln!(
            h,
            "<figure>{}<figcaption>{}</figcaption></figure>",
            strip_prolog(&f.svg),
            esc(&f.caption)
        );
    }
    for t in &s.tables {
        render_table(h, t);
    }
    if !s.commands.is_empty() {
        // One block per command: long ones wrap (CSS `pre-wrap`, hanging indent) instead of scrolling.
        h.push_str("<h3>Rerun</h3>\n<pre>");
        for c in &s.commands {
            let _ = write!(h, "<code>{}</code>", esc(c));
        }
        h.push_str("</pre>\n");
    }
    h.push_str("</section>\n");
}

/// The `<svg>` element alone (no XML prolog).
fn strip_prolog(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

fn render_table(h: &mut String, t: &Table) {
    let _ = write!(h, "<table><caption>{}</caption><tr>", esc(&t.title));
    for c in &t.headers {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>");
    for r in &t.rows {
        h.push_str("<tr>");
        for c in r {
            let _ = write!(h, "<td>{}</td>", esc(c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>\n");
    for n in &t.notes {
        let _ = writeln!(h, "<p class=\"notes\">{}</p>", esc(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::Series;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (raw, enc) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
    }

    #[test]
    fn civil_date_is_well_formed() {
        let now = utc_now();
        assert_eq!(now.len(), 23, "{now}");
        assert!(now.starts_with("20") && now.ends_with(" UTC"));
    }

    #[test]
    fn sections_accumulate_in_group_order_and_render() {
        let dir = std::env::temp_dir().join(format!("bke-report-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let report = Report::new(&dir);
        let fig =
            Figure::new("f <1>", "x (m)", "y (s)").with(Series::line("l", vec![(0.0, 1.0), (1.0, 2.0)]));
        let mut t = Table::new("t", &["a", "b"]);
        t.push(vec!["1".into(), "<2>".into()]);
        let repro = Section::new("repro-b", "Reproductions", 1, "B").table(&t).command("cargo xtask repro b");
        let demo = Section::new("demo-a", "Demo", 5, "A & co").figure(&fig, "look").unwrap().warning("w");
        report.publish(&repro).unwrap();
        report.publish(&demo).unwrap();
        report.publish(&demo).unwrap(); // same id: replaced, not duplicated
        let ids: Vec<String> = report.sections().unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(ids, ["demo-a", "repro-b"]);
        let html = std::fs::read_to_string(report.index()).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(
            html.contains("A &amp; co") && html.contains("&lt;2&gt;") && html.contains("cargo xtask repro b")
        );
        assert!(html.find("id=\"demo-a\"").unwrap() < html.find("id=\"repro-b\"").unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
