//! Fuzz target `model_files`: see `fuzz/src/entries.rs`.
#![no_main]

#[path = "../../bke-cli/src/finite.rs"]
#[allow(dead_code)]
mod finite;
#[path = "../../bke-cli/src/io.rs"]
#[allow(dead_code)]
mod io;
#[path = "../src/entries.rs"]
mod entries;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entries::model_files(data));
