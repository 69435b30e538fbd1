//! SIGINT / SIGTERM: a clean stop instead of a kill in the middle of a write.
//!
//! [`install`] replaces the default action of both signals with a handler that only sets a flag.
//! Long fits poll it through the caller's progress reporter (`Progress::cancelled`, e.g. the CLI's
//! progress bar) and end with `CoreError::Cancelled`; the caller's `main` then prints [`MESSAGE`]
//! and exits with [`EXIT_STATUS`]. Work that does not poll (a short step, or a loop without
//! progress) is stopped by a watchdog thread [`GRACE`] after the signal, with the same message and
//! status. A second signal exits at once.
//! Every output file is written atomically (a temporary file renamed into place), so a stopped run
//! leaves the old file or none, never half of one.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// How long cooperative cancellation may take before the watchdog exits.
pub const GRACE: Duration = Duration::from_secs(2);

/// Exit status after an interrupt (128 + SIGINT, the shell's convention).
pub const EXIT_STATUS: i32 = 130;

/// The one-line message printed when a run is stopped.
pub const MESSAGE: &str = "error: interrupted (SIGINT/SIGTERM): stopped before finishing; no output \
                           file was written or changed";

extern "C" fn on_signal(_: libc::c_int) {
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // Second signal: the user insists. `_exit` is async-signal-safe.
        // SAFETY: `_exit` may be called from a signal handler.
        unsafe { libc::_exit(EXIT_STATUS) };
    }
}

/// Temporary files the watchdog removes before it exits (see [`remove_on_exit`]).
static TEMPORARY: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers a temporary file (e.g. of `bke_core::model_file::AtomicFile`) for removal when the
/// watchdog ends the process, which runs no destructors. Files already renamed or removed are
/// skipped then.
pub fn remove_on_exit(path: &Path) {
    TEMPORARY.lock().unwrap_or_else(|e| e.into_inner()).push(path.to_path_buf());
}

/// Whether SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Installs the handler and starts the watchdog (Unix; elsewhere the default action stays).
pub fn install() {
    #[cfg(unix)]
    {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only touches an atomic and calls `_exit`, both async-signal-safe.
        unsafe {
            libc::signal(libc::SIGINT, handler);
            libc::signal(libc::SIGTERM, handler);
        }
        std::thread::spawn(|| {
            while !interrupted() {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(GRACE);
            for p in TEMPORARY.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                let _ = std::fs::remove_file(p);
            }
            eprintln!("{MESSAGE}");
            std::process::exit(EXIT_STATUS);
        });
    }
}
