//! Fuzz target `npy_reader`: see `fuzz/src/lib.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bke_fuzz::npy_reader(data));
