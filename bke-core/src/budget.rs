//! Memory budget: refuse planned work that cannot fit, before anything is allocated.
//!
//! Every size-like setting (draws, chains, permutations, grid points, frequencies, landmarks, …)
//! implies a number of bytes. Estimators compute that number from their parameters (and, in
//! `fit_valid`, from the data) with [`Bytes`] arithmetic (saturating, so `u64::MAX` settings give a
//! huge estimate rather than an overflow) and call [`check`], which errors with
//! [`CoreError::TooLarge`] naming the setting, the estimate and the limit, instead of letting the
//! allocator abort the process.
//!
//! The limit is, in order: the value set by [`set_limit`] (the CLI's `--max-memory`), the
//! `BKE_MAX_MEMORY` environment variable (bytes, or with a suffix `K`, `M`, `G`, `T`), or the
//! available memory (`MemAvailable` of `/proc/meminfo`; unlimited where that file is missing).

use crate::CoreError;
use std::sync::atomic::{AtomicU64, Ordering};

/// 0: no explicit limit set (use the environment or `/proc/meminfo`).
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// A byte count computed with saturating arithmetic: `Bytes::f64s(n).times(m)` never overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl Bytes {
    /// The bytes of `n` values of 8 bytes (`f64`, `u64`, `usize`).
    pub fn f64s(n: usize) -> Bytes {
        Bytes((n as u64).saturating_mul(8))
    }

    /// `self × k`, saturating.
    pub fn times(self, k: usize) -> Bytes {
        Bytes(self.0.saturating_mul(k as u64))
    }

    /// `self + other`, saturating.
    pub fn plus(self, other: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(other.0))
    }
}

/// Where the limit came from (for the message).
fn limit_and_source() -> Option<(u64, &'static str)> {
    match LIMIT.load(Ordering::Relaxed) {
        0 => {}
        set => return Some((set, "the limit set by --max-memory")),
    }
    if let Some(v) = std::env::var("BKE_MAX_MEMORY").ok().and_then(|s| parse_size(&s).ok()) {
        return Some((v, "the limit set by BKE_MAX_MEMORY"));
    }
    available_memory().map(|v| (v, "the available memory, MemAvailable in /proc/meminfo"))
}

/// Sets the memory limit in bytes for this process (`None`: back to the environment or the
/// available memory).
pub fn set_limit(bytes: Option<u64>) {
    LIMIT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The current limit in bytes (`None`: unknown, no limit).
pub fn limit() -> Option<u64> {
    limit_and_source().map(|(v, _)| v)
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Errors with [`CoreError::TooLarge`] when `bytes` exceed the limit. `setting` names what made the
/// work that large, with its value (e.g. `"draws = 1000000"`).
pub fn check(setting: &str, bytes: Bytes) -> Result<(), CoreError> {
    check_against(setting, bytes, limit_and_source())
}

fn check_against(setting: &str, bytes: Bytes, limit: Option<(u64, &str)>) -> Result<(), CoreError> {
    match limit {
        Some((limit, source)) if bytes.0 > limit => Err(CoreError::TooLarge {
            setting: setting.into(),
            needed: human(bytes.0),
            limit: format!("{} ({source})", human(limit)),
        }),
        _ => Ok(()),
    }
}

/// The most worker threads a command may start: 4 × the machine's cores, at least 8 and at most
/// 1024. More threads than that only add start-up and scheduling cost (a pool of 10⁶ threads takes
/// minutes to start), never speed.
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    max_threads_for(cores)
}

fn max_threads_for(cores: usize) -> usize {
    cores.saturating_mul(4).clamp(8, 1024)
}

/// Checks a requested worker count `threads` (named `setting`, e.g. `"--threads"` or `"n_jobs"`):
/// at least 1 and at most [`max_threads`]. The error says what to use instead.
pub fn check_threads(setting: &str, threads: usize) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    check_threads_for(setting, threads, cores)
}

fn check_threads_for(setting: &str, threads: usize, cores: usize) -> Result<usize, String> {
    let max = max_threads_for(cores);
    if threads == 0 {
        return Err(format!("{setting} must be at least 1 (omit it to use all cores)"));
    }
    if threads > max {
        return Err(format!(
            "{setting} = {threads} is far more worker threads than this machine's {cores} core(s): use at \
             most {max} (4 × the cores, at least 8, at most 1024), or omit it to use all cores"
        ));
    }
    Ok(threads)
}

/// A size such as `4096`, `512M`, `2G`, `1.5T` (powers of 1024) in bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let scale: f64 = match unit.trim().to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 1.0,
        "K" => 1024.0,
        "M" => 1024f64.powi(2),
        "G" => 1024f64.powi(3),
        "T" => 1024f64.powi(4),
        _ => return Err(format!("'{text}' is not a size: use bytes or a number with K, M, G or T")),
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("'{text}' is not a size: use e.g. 512M or 8G"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("'{text}' is not a positive size"));
    }
    Ok((v * scale).min(u64::MAX as f64) as u64)
}

/// `bytes` for people: `12.3 GiB`.
pub fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", units[u]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_and_refuses_naming_setting_estimate_and_limit() {
        let huge = Bytes::f64s(usize::MAX).times(usize::MAX).plus(Bytes(1));
        assert_eq!(huge, Bytes(u64::MAX));
        let limit = Some((1 << 20, "the limit set by --max-memory"));
        let e = check_against("draws = 1000000", Bytes::f64s(1_000_000), limit).unwrap_err().to_string();
        assert!(e.contains("draws = 1000000") && e.contains("7.6 MiB") && e.contains("1.0 MiB"), "{e}");
        assert!(e.contains("--max-memory"), "{e}");
        assert!(check_against("draws = 10", Bytes::f64s(10), limit).is_ok());
        assert!(check("nothing", Bytes(0)).is_ok());
    }

    #[test]
    fn refuses_thread_counts_far_above_the_cores() {
        assert_eq!(check_threads_for("--threads", 1, 2), Ok(1));
        assert_eq!(check_threads_for("--threads", 8, 1), Ok(8));
        assert_eq!(check_threads_for("--threads", 64, 16), Ok(64));
        let e = check_threads_for("--threads", 1_000_000, 2).unwrap_err();
        assert!(e.contains("--threads = 1000000") && e.contains("2 core") && e.contains("at most 8"), "{e}");
        assert!(check_threads_for("n_jobs", 2000, 4096).unwrap_err().contains("at most 1024"));
        assert!(check_threads_for("--threads", 0, 4).unwrap_err().contains("at least 1"));
        assert!(max_threads() >= 8 && max_threads() <= 1024);
    }

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2K"), Ok(2048));
        assert_eq!(parse_size("1.5G"), Ok(1536 * 1024 * 1024));
        assert_eq!(parse_size("3GiB"), Ok(3 << 30));
        assert!(parse_size("lots").is_err() && parse_size("-1G").is_err() && parse_size("1X").is_err());
    }

    #[test]
    fn reads_available_memory_on_linux() {
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(available_memory().unwrap() > 0);
        }
    }
}
