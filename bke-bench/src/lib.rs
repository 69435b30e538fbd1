//! # bke-bench
//!
//! Benchmark workloads, written once and shared by the divan benches (`cargo bench -p bke-bench`) and
//! by the `bke-bench` runner that `cargo xtask bench` drives. Each workload builds its inputs from a
//! seed, runs one operation generic over [`bke_linalg::Backend`], and knows its nominal flop count so
//! reports can state GFLOP/s against the machine's DGEMM rate ([`timing`]). The suites' tables are
//! [`bke_report::table::Table`]s with timing columns appended. `tests/backend_suite.rs` checks that
//! every model agrees across the compiled backends.
//!
//! The demo, the reproductions and the HTML report are in `bke-report`.

pub mod bank;
pub mod bank_classification;
pub mod bkl;
pub mod dme;
pub mod hypothesis;
pub mod io;
pub mod linalg;
pub mod timing;
