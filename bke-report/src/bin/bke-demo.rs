//! `cargo xtask demo` (see `bke_report::demo`): `bke-demo --bke PATH [--report DIR] [--data DIR]
//! [--json]`, run from the project root. Prints timed progress lines on stderr and a short summary
//! with the report's path (or, with `--json`, every command and its JSON output) on stdout.

use anyhow::Context;
use bke_report::demo::{Demo, summary};
use bke_report::html::Report;
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let bke = PathBuf::from(
        value("--bke").context("usage: bke-demo --bke PATH [--report DIR] [--data DIR] [--json]")?,
    );
    let root = std::env::current_dir()?;
    let report = Report::new(value("--report").map_or_else(|| root.join("target/bke-report"), PathBuf::from));
    let data = value("--data").map_or_else(|| root.join("target/demo"), PathBuf::from);
    let mut demo = Demo::new(bke, root, data, report.clone());
    demo.run()?;
    if args.iter().any(|a| a == "--json") {
        let doc = serde_json::json!({"report": report.index(), "seconds": demo.elapsed(), "steps": demo.log});
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", summary(&demo, &report));
    }
    Ok(())
}
