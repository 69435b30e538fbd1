//! The integration tests of bke-linalg in one test binary (so the tests link once).

mod conformance;
mod selected;
mod thread_invariance;
mod with_backend;
