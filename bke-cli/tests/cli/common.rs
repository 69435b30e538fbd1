//! Helpers shared by the end-to-end CLI tests.

use std::path::PathBuf;
use std::process::Command;

/// Writes `body` to `name` inside a per-process scratch folder tagged `tag`; returns the path.
pub fn write_in(tag: &str, name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bke-{tag}-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    // Tests of one file run in parallel threads and may rewrite the same file: write a private
    // temporary file and rename it, so a reader never sees a half-written one.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{k}.tmp"));
    std::fs::write(&tmp, body).unwrap();
    std::fs::rename(&tmp, &p).unwrap();
    p
}

/// Runs `bke` with `args`: (success, stdout parsed as JSON or `Null`, stderr).
pub fn bke(args: &[&str]) -> (bool, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bke")).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.success(), json, stderr)
}

/// The arguments of `bke lfi` that name its inputs: the simulations `sims` (parameter column
/// `theta`, statistic column `stat`) and the prior samples `prior`.
pub fn lfi_inputs<'a>(sims: &'a str, prior: &'a str) -> [&'a str; 9] {
    ["lfi", "--simulations", sims, "--theta-cols", "theta", "--stat-cols", "stat", "--prior-samples", prior]
}
