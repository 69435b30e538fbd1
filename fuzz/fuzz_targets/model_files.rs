//! Fuzz target `model_files`: see `fuzz/src/lib.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bke_fuzz::model_files(data));
