//! The worker's integration tests: real workers against a real coordinator, killed, restarted and given broken tables.
//!
//! One test binary for the crate (each links the whole stack: one link instead of many);
//! one module per behaviour. Run one with `cargo test -p CRATE --test it MODULE::`.

mod common;

mod command_line;
mod coordinator_restart;
mod corrupt_tables;
mod refusals;
mod settings;
mod sigterm;
mod worker_killed;
