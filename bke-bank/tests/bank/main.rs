//! The integration tests of bke-bank in one test binary (so the tests link once).

mod fit;
mod geweke;
