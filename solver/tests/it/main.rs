//! The solver's integration tests: known optimal lengths, exhaustive small boards, properties and parsers.
//!
//! One test binary for the crate (each links the whole stack: one link instead of many);
//! one module per behaviour. Run one with `cargo test -p CRATE --test it MODULE::`.

mod common;

mod bounded_suboptimal;
mod duplicate_pruning;
mod exhaustive_small_boards;
mod fuzz_parsers;
mod korf100;
mod limits;
mod pattern_databases;
mod properties;
mod unit_split;
mod work_units;
