//! No code: this crate only turns on features of shared dependencies (see its `Cargo.toml`).
