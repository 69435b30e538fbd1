//! Helpers shared by the end-to-end CLI tests.

use std::path::PathBuf;
use std::process::Command;

/// Writes `body` to `name` inside a per-process scratch folder tagged `tag` under cargo's
/// `CARGO_TARGET_TMPDIR` (inside the build directory, not the system's /tmp); returns the path.
pub fn write_in(tag: &str, name: &str, body: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bke-{tag}-cli-{}", std::process::id()));
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

/// Runs `bke` with `args`: (success, stdout parsed as JSON or `Null`, stderr). The JSON of a
/// successful run is checked to hold no `null` where a number belongs ([`assert_no_null`]).
pub fn bke(args: &[&str]) -> (bool, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bke")).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    if out.status.success() && !out.stdout.is_empty() {
        assert_no_null(&json, &format!("{args:?}"));
    }
    (out.status.success(), json, stderr)
}

/// Fields whose value is legitimately `null` (an absent option, not a number): a path not given, a
/// setting left to its data-driven default (or a prior not used), R-hat of a single chain, the
/// gradient of a fixed hyperparameter, R-hat/ESS of a fixed (unsampled) parameter, landmarks read
/// from a file, a time column not given. Two values JSON cannot hold are `null` by contract: the
/// tolerance of SMC-ABC's generation 0 in `epsilons` (the prior sample, accepted without one: ∞),
/// and `log_density` outside the box of a density model file written before the density had tails
/// (its density is 0 there: −∞; a density fitted now is finite everywhere).
const OPTIONAL_FIELDS: &[&str] = &[
    "model",
    "out",
    "cv_log_lik",
    "target",
    "seed",
    "time",
    "landmark_indices",
    "weight_prior_variance",
    "tau2_prior",
    "rhat",
    "ess",
    "epsilon",
    "epsilons",
    "log_density",
];

/// Arrays whose entries may be `null` (see [`OPTIONAL_FIELDS`]).
const NULLABLE_ARRAYS: &[&str] = &["epsilons", "log_density"];

/// Asserts that the JSON of a command holds no `null` where a number belongs: no `null` in an
/// array, and none in an object except under [`OPTIONAL_FIELDS`] (serde_json writes NaN and ±∞ as
/// `null`, so a `null` number is a non-finite result reported as success).
pub fn assert_no_null(json: &serde_json::Value, what: &str) {
    fn walk(v: &serde_json::Value, path: &str, key: Option<&str>, what: &str) {
        match v {
            serde_json::Value::Null => {
                assert!(
                    key.is_some_and(|k| OPTIONAL_FIELDS.contains(&k)),
                    "{what}: null at {path} where a number belongs"
                );
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, &format!("{path}[{i}]"), key.filter(|k| NULLABLE_ARRAYS.contains(k)), what);
                }
            }
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    walk(x, &format!("{path}.{k}"), Some(k), what);
                }
            }
            _ => {}
        }
    }
    walk(json, "", None, what);
}

/// The arguments of `bke lfi` that name its inputs: the simulations `sims` (parameter column
/// `theta`, statistic column `stat`) and the prior samples `prior`.
pub fn lfi_inputs<'a>(sims: &'a str, prior: &'a str) -> [&'a str; 9] {
    ["lfi", "--simulations", sims, "--theta-cols", "theta", "--stat-cols", "stat", "--prior-samples", prior]
}
