//! # bke-report
//!
//! What users run to see results: the tour of bke on the bundled data ([`demo`], `cargo xtask demo`),
//! the paper reproductions ([`repro`], `cargo xtask repro <name|all> [--smoke]`), and what they
//! publish to — the self-contained HTML page ([`html`], `target/bke-report/index.html`) and the
//! Markdown record of the measured numbers ([`results`], `docs/results.md`), both rendered from one
//! [`html::Section`] model. Figures are drawn by [`plot`], tables by [`table`], and the summary
//! statistics of repeated measurements come from [`stats`].

pub mod demo;
pub mod html;
pub mod plot;
pub mod repro;
pub mod results;
pub mod stats;
pub mod table;

/// The README's library examples, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;
