//! `cargo xtask demo`: the main job on the bundled data. Builds the `bke` binary in release and runs
//! one command of every model on `data/`, printing each command line and its JSON (long arrays cut).

use anyhow::{Context, bail};
use std::path::Path;
use std::process::Command;

/// The demo steps: a title and the `bke` arguments. `{out}` stands for the demo's output folder.
const STEPS: &[(&str, &[&str])] = &[
    (
        "Learn an SE kernel for ozone temperature by the embedding marginal pseudolikelihood (ML-II, τ² = 1)",
        &["embed", "fit", "--data", "data/ozone.csv", "--columns", "temp"],
    ),
    (
        "HSIC independence test, temperature vs ozone, BKL-learned lengthscales",
        &[
            "test",
            "hsic",
            "--x",
            "data/ozone.csv",
            "--x-columns",
            "temp",
            "--y",
            "data/ozone.csv",
            "--y-columns",
            "O3",
            "--select",
            "bkl",
        ],
    ),
    (
        "MMD two-sample test, banana class 0 vs class 1, median-heuristic kernel",
        &[
            "test",
            "mmd",
            "--x",
            "{out}/banana_class0.csv",
            "--y",
            "{out}/banana_class1.csv",
            "--permutations",
            "500",
        ],
    ),
    (
        "BaNK regression, 5-fold cross-validation on concrete (MSE on standardised targets)",
        &[
            "bank",
            "cv",
            "--data",
            "data/concrete.csv",
            "--target",
            "compressive_strength",
            "--frequencies",
            "64",
            "--iterations",
            "60",
            "--seed",
            "1",
        ],
    ),
    (
        "Kernel student-t density of ozone temperature (cross-validated hyperparameters)",
        &[
            "density",
            "fit",
            "--data",
            "data/ozone.csv",
            "--columns",
            "temp",
            "--model-out",
            "{out}/density.json",
        ],
    ),
];

/// Runs the demo.
pub fn run(root: &Path, openblas: bool) -> anyhow::Result<()> {
    let out = root.join("target/demo");
    std::fs::create_dir_all(&out)?;
    split_by_class(&root.join("data/banana.csv"), "class", &out, "banana_class")?;
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build.args(["build", "--quiet", "--release", "-p", "bke-cli"]);
    if openblas {
        build.args(["--features", "openblas"]);
    }
    if !build.status().context("building bke")?.success() {
        bail!("building bke failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    let bke = target.join("release/bke");
    for (title, args) in STEPS {
        let args: Vec<String> = args.iter().map(|a| a.replace("{out}", &out.to_string_lossy())).collect();
        println!("\n== {title}\n$ bke {}", args.join(" "));
        let output = Command::new(&bke).args(&args).current_dir(root).output().context("running bke")?;
        if !output.status.success() {
            bail!("bke {} failed:\n{}", args.join(" "), String::from_utf8_lossy(&output.stderr));
        }
        let json: serde_json::Value =
            serde_json::from_slice(&output.stdout).context("bke printed something that is not JSON")?;
        println!("{}", serde_json::to_string_pretty(&shorten(json))?);
    }
    println!("\nOutputs are in {}", out.display());
    Ok(())
}

/// Cuts arrays to their first 6 entries so the demo stays readable.
fn shorten(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Array(a) if a.len() > 6 => {
            let n = a.len();
            let mut head: Vec<Value> = a.into_iter().take(6).map(shorten).collect();
            head.push(Value::String(format!("... {} more", n - 6)));
            Value::Array(head)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(shorten).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, shorten(v))).collect()),
        other => other,
    }
}

/// Writes one CSV per value of the 0/1 column `label`, without that column.
fn split_by_class(path: &Path, label: &str, out: &Path, stem: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().context("empty CSV")?.split(',').collect();
    let j = header.iter().position(|h| *h == label).with_context(|| format!("no column {label}"))?;
    let keep = |cells: &[&str]| {
        cells.iter().enumerate().filter(|(k, _)| *k != j).map(|(_, c)| *c).collect::<Vec<_>>().join(",")
    };
    let mut files = [keep(&header) + "\n", keep(&header) + "\n"];
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let class: f64 = cells[j].parse().with_context(|| format!("label '{}' is not a number", cells[j]))?;
        files[usize::from(class != 0.0)] += &(keep(&cells) + "\n");
    }
    for (c, body) in files.iter().enumerate() {
        std::fs::write(out.join(format!("{stem}{c}.csv")), body)?;
    }
    Ok(())
}
