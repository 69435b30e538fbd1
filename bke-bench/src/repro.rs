//! Paper reproductions run by `cargo xtask repro <name>` (registered in `src/bin/bke-repro.rs`).
//! Each writes CSV + SVG under its output directory and prints its numbers beside the seed's.

pub mod bank_cv;
pub mod bank_data;
pub mod bank_fig3;
pub mod bank_fig4;
pub mod bank_table;
pub mod density;
pub mod dme;
pub mod fig2c;
pub mod fig2d;
pub mod fig3;
pub mod kbr;
pub mod level;
pub mod lfi_budget;
pub mod lotka_volterra;
pub mod power;
pub mod witness;
