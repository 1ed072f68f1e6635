//! # npuzzle-coordinator
pub mod scheduler;
