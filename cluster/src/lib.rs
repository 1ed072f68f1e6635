//! # npuzzle-cluster
//!
//! A whole cluster in one process, and how a client reaches any cluster: the one place that
//! starts a coordinator with in-process workers ([`LocalCluster`]) and the one wait for workers
//! to join ([`wait_for_workers`], at most [`JOIN_TIMEOUT`]). The `npuzzle` command line runs
//! its embedded engine (`solve` and `batch` without `--coordinator`), `npuzzle cluster`, `load`
//! and `cluster-bench` on it; every crate's tests start theirs here too.
//!
//! # Layout
//!
//! - `local`: [`LocalCluster`], [`Options`], [`ClusterError`]: a coordinator on loopback and its
//!   workers on the current tokio runtime; workers can be added ([`LocalCluster::add_worker`])
//!   and stopped one by one, and a task that fails is reported, not dropped.
//! - `connect`: [`connect`], [`Coordinator`], [`ConnectError`]: a client of a coordinator's
//!   `npuzzle.v1.Solver` carrying the client token, for a local cluster and a named one alike.
//! - `join`: [`wait_for_workers`], [`JoinError`], [`JOIN_TIMEOUT`]: the one join wait.
//! - `testing` (feature `test-util`, for dev-dependencies only): what the tests of every crate
//!   share: `testing::TestCluster` (a [`LocalCluster`] with panicking conveniences),
//!   `testing::ClusterThread` (one on a runtime thread of its own, for tests that run a
//!   blocking binary), `testing::assert_optimal` (the one check of an answer: replayed, at the
//!   goal, of the optimal length), `testing::Process` (a child process killed and reaped on
//!   drop), test certificates, the Prometheus scrape, Korf's instances,
//!   `testing::eventually` and the environment-variable check of a command line.
//!
//! # Example
//!
//! ```
//! use npuzzle_cluster::{LocalCluster, Options, connect};
//! use npuzzle_proto::v1;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A coordinator and one worker with one search thread and no pattern databases.
//! let cluster = LocalCluster::start(Options {
//!     threads: Some(1),
//!     load_pdbs: false,
//!     ..Options::default()
//! })
//! .await?;
//! let mut client = connect(cluster.url(), cluster.client_security()).await?;
//! let stats = client.stats(v1::StatsRequest {}).await?.into_inner();
//! assert_eq!(stats.workers, 1); // start returns once every worker has joined
//! cluster.shutdown().await?;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

mod connect;
mod join;
mod local;
#[cfg(feature = "test-util")]
pub mod testing;

pub use connect::{ConnectError, Coordinator, connect};
pub use join::{JOIN_TIMEOUT, JoinError, wait_for_workers};
pub use local::{ClusterError, LocalCluster, Options, cores};
