//! Checks of the deployment files against the binaries (flags, environment variables, ports and
//! paths), and of the house rules every file keeps (`house_rules`).
//!
//! One test binary for the crate (each links the whole stack: one link instead of many);
//! one module per behaviour. Run one with `cargo test -p CRATE --test it MODULE::`.

mod common;

mod compose;
mod dockerfile;
mod house_rules;
mod kubernetes;
mod monitoring;
mod systemd;
mod yaml_files;
