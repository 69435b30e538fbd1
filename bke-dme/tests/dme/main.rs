//! The integration tests of bke-dme, one module per model family, in one test binary (so the tests
//! link once).

mod common;
mod dme;
mod kbr;
mod lfi;
mod model_fields;
mod sparse;
mod ttblr;
mod ttgp;
