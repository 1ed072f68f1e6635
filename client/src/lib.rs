//! # npuzzle-client
//!
//! The `npuzzle` command line, as a library so that tests drive it directly. The binary
//! (`src/main.rs`, one module per subcommand under `src/cmd/`) only parses flags and calls in
//! here.
//!
//! # Layout
//!
//! - [`input`]: streams boards out of batch files (`lines`, `uva10181`, `poj1077`, `auto`).
//! - [`engine`]: solves one board in-process and describes the answer as an [`engine::Answer`].
//! - [`batch`]: many boards on several threads, answers written in input order.
//! - [`sink`]: where the answers go: text, JSONL or CSV, the summary, the progress bar and
//!   `--resume`.
//! - [`tools`]: `gen` (random boards, reproducible by seed) and `verify` (replay a path).
//! - [`bench`](mod@bench): one thread, each heuristic, nodes and node rates per instance.
//! - [`cluster_bench`]: distribution's costs and gains, measured through a coordinator.
//! - [`load`]: many concurrent clients mixing cached, new, invalid and unsolvable boards
//!   against one coordinator; every answer checked, throughput and latency percentiles.
//! - [`remote`]: the same through a coordinator (`--coordinator URL`), and the options of the
//!   embedded cluster used when no coordinator is named ([`remote::embedded`]; the cluster
//!   itself, and the one wait for workers to join, are `npuzzle_cluster`'s).
//! - [`jobs`]: detached jobs on a coordinator: `submit`, `jobs`, `wait`, `cancel`.
//! - [`simulate`]: `trace` (record searches) and `simulate` (replay them through the real
//!   scheduler with simulated workers).
//! - [`ops`]: `stats` (the cluster's state) and `health` (a grpc.health.v1 check with probe
//!   exit codes).
//!
//! # Example
//!
//! ```
//! use npuzzle_client::batch::{self, BatchOptions, OutputFormat, Sink};
//!
//! let input = "2 3 4 1 5 x 7 6 8\n";
//! let mut out = Vec::new();
//! let sink = Sink::new(&mut out, OutputFormat::Text, false);
//! let summary = batch::run(input.as_bytes(), sink, &BatchOptions::default())?;
//! assert_eq!(summary.solved, 1);
//! assert_eq!(String::from_utf8(out)?.trim().len(), 19); // POJ 1077: 19 lower-case moves
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod batch;
pub mod bench;
pub mod cluster_bench;
pub mod engine;
pub mod input;
pub mod jobs;
pub mod load;
pub mod ops;
pub mod remote;
pub mod simulate;
pub mod sink;
pub mod tools;
