//! The `npuzzle` client's integration tests, in one test binary (one link instead of one per
//! file): each module was a file of its own, and [`common`] holds what they share (running the
//! real `npuzzle` binary, checking answers, a local cluster on a thread of its own).

mod common;

mod bad_input;
mod batch_order;
mod batch_resume;
mod cluster_audits;
mod coordinator_flag;
mod dependable_batch;
mod detached_jobs;
mod env_vars;
mod fuzz_reader;
mod gen_verify;
mod hdu1043_poj1077;
mod load_mix;
mod operator_commands;
mod pdb_command;
mod simulate_command;
mod solve_command;
mod solve_progress;
mod token_file;
mod uva10181;
