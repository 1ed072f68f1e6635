//! The coordinator's integration tests: a real coordinator on loopback, real and scripted workers.
//!
//! One test binary for the crate (each links the whole stack: one link instead of many);
//! one module per behaviour. Run one with `cargo test -p CRATE --test it MODULE::`.

mod common;

mod anytime;
mod audit;
mod auto_fallback;
mod cache_and_dedup;
mod cancellation;
mod command_line;
mod detached_jobs;
mod distributed_optimal;
mod forged_worker;
mod graceful_shutdown;
mod health;
mod hostile_requests;
mod http_api;
mod hung_worker;
mod idle_connections;
mod job_checkpoints;
mod overload;
mod pattern_databases;
mod persistent_cache;
mod prefetch;
mod reflection;
mod rejoin_race;
mod scheduler_scaling;
mod scheduler_sim;
mod settings;
mod silent_fakes;
mod silent_join;
mod simulation;
mod solve_stream;
mod tls;
mod tokens;
mod trickle;
mod validation;
mod worker_limits;
