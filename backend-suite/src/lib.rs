//! The cross-backend model suite lives in `tests/backend_suite.rs`: one suite of model checks,
//! instantiated for every compiled `bke_linalg::Backend`, each comparing its results with faer's.
//! This crate has no library code; it exists so that the suite may use every model crate (`bke-core`,
//! `bke-bank`, `bke-dme`) without making a product crate depend on them all.
