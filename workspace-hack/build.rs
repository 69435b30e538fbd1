//! Empty: the build-dependency on `syn` unifies its features for the workspace's proc-macros.
fn main() {}
