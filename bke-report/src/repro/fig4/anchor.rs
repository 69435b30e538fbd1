//! The anchor of `repro fig4 --causal-learn`: causal-learn's PC with its KCI test (its defaults:
//! stable PC, the standard orientation rule, median-free "empirical" kernel widths, ε = 10⁻³, gamma
//! null) on the simulation's data sets, run by `scripts/bench/causallearn_pc.py` in the benchmark
//! venv that `scripts/bench-venv.sh` creates (its contract is in the script's docstring).

use bke_core::Points;
use bke_core::causal::Pdag;
use std::path::PathBuf;

/// The folder of data sets handed to causal-learn.
pub(super) struct Anchor {
    dir: PathBuf,
}

/// causal-learn's result on one data set: its CPDAG (`None` when it failed) and wall seconds.
pub(super) struct AnchorGraph {
    pub graph: Option<Pdag>,
    pub seconds: f64,
}

impl Anchor {
    /// The folder `dir` without data sets. Its `causallearn.json` stays: the script reruns only the
    /// data sets whose CSV changed, so a repeated study (or one whose data sets the script ran while
    /// the study wrote them) costs nothing extra.
    pub fn new(dir: PathBuf) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "csv") {
                std::fs::remove_file(path)?;
            }
        }
        Ok(Self { dir })
    }

    fn name(g: usize) -> String {
        format!("graph-{g:03}")
    }

    /// Writes graph `g`'s data as CSV (header `x0, x1, …`).
    pub fn write(&self, g: usize, values: &Points) -> anyhow::Result<()> {
        let mut csv = (0..values.dim()).map(|i| format!("x{i}")).collect::<Vec<_>>().join(",") + "\n";
        for row in values.iter() {
            csv += &row.iter().map(|v| format!("{v:e}")).collect::<Vec<_>>().join(",");
            csv.push('\n');
        }
        std::fs::write(self.dir.join(format!("{}.csv", Self::name(g))), csv)?;
        Ok(())
    }

    /// Runs causal-learn on every written data set (each at most `timeout` s) and reads its results,
    /// one per graph `0..graphs`.
    pub fn run(&self, graphs: usize, timeout: u64) -> anyhow::Result<Vec<AnchorGraph>> {
        let timeout = timeout.to_string();
        let args = [self.dir.as_os_str(), "--timeout".as_ref(), timeout.as_ref()];
        crate::repro::run_in_venv("bench-venv.sh", "causallearn_pc.py", &args)?;
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(self.dir.join("causallearn.json"))?)?;
        let list = json["graphs"].as_array().cloned().unwrap_or_default();
        (0..graphs)
            .map(|g| {
                let entry = list.iter().find(|e| e["name"] == Self::name(g));
                Ok(match entry {
                    Some(e) if e["error"].is_null() => AnchorGraph {
                        graph: Some(pdag(e)?),
                        seconds: e["seconds"].as_f64().unwrap_or(f64::NAN),
                    },
                    _ => AnchorGraph { graph: None, seconds: f64::NAN },
                })
            })
            .collect()
    }
}

/// The CPDAG of one entry of `causallearn.json`.
fn pdag(e: &serde_json::Value) -> anyhow::Result<Pdag> {
    let p = e["names"].as_array().map_or(0, Vec::len);
    let mut g = Pdag::empty(p);
    let pairs = |key: &str| -> anyhow::Result<Vec<(usize, usize)>> {
        e[key]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|pair| {
                let at = |k: usize| pair[k].as_u64().map(|v| v as usize).filter(|&v| v < p);
                Ok((
                    at(0).ok_or_else(|| anyhow::anyhow!("bad edge {pair}"))?,
                    at(1).ok_or_else(|| anyhow::anyhow!("bad edge {pair}"))?,
                ))
            })
            .collect()
    };
    for (a, b) in pairs("directed")? {
        g.add_directed(a, b);
    }
    for (a, b) in pairs("undirected")?.into_iter().chain(pairs("bidirected")?) {
        g.add_undirected(a, b);
    }
    Ok(g)
}
