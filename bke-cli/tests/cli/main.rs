//! The end-to-end tests of the `bke` binary, one module per command family, in one test binary
//! (so the tests link once).

mod bank;
mod causal;
mod common;
mod defaults;
mod density;
mod density_wide;
mod dme;
mod embed;
mod fuzz_corpus;
mod hypothesis;
mod lfi;
mod reliability;
mod round3;
mod sample;
mod threads;
