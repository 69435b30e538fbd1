//! # bke-bench
//!
//! Benchmark workloads, written once and shared by the divan benches (`cargo bench -p bke-bench`) and
//! by the `bke-bench` runner that `cargo xtask bench` drives. Each workload builds its inputs from a
//! seed, runs one operation generic over [`bke_linalg::Backend`], and knows its nominal flop count so
//! reports can state GFLOP/s against the machine's DGEMM rate.

pub mod bank;
pub mod bkl;
pub mod demo;
pub mod dme;
pub mod html;
pub mod hypothesis;
pub mod io;
pub mod linalg;
pub mod plot;
pub mod report;
pub mod repro;
pub mod stats;

/// The README's library examples, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;
