//! # npuzzle-coordinator
//!
//! The coordinator of an npuzzle cluster. Clients call `npuzzle.v1.Solver`; workers join through
//! `npuzzle.v1.Cluster`. For each request the coordinator validates (malformed →
//! `INVALID_ARGUMENT`, unsolvable → an immediate answer), answers from its cache, joins an
//! identical search already running, solves small problems itself, or cuts the search into many
//! work units that workers search under a shared, rising f-bound. The first solution found under
//! the current bound is optimal (every smaller bound was exhausted everywhere); it cancels the
//! job on every worker at once and fills the cache.
//!
//! # Layout
//!
//! - [`scheduler`]: the pure state machine (units, bounds, acceptance, leases, splits). No I/O.
//! - [`cluster`]: the task that owns the scheduler and carries out its commands.
//! - [`cache`]: board key → optimal path, bounded, every suffix stored.
//! - [`service`]: the two gRPC services, thin adapters over the above.
//! - [`run`]: serve on a listener until a shutdown token fires.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! tokio::spawn(npuzzle_coordinator::run(listener, npuzzle_coordinator::Config::default(), shutdown.clone()));
//! // … workers connect, clients call Solve …
//! shutdown.cancel();
//! # Ok(()) }
//! ```

pub mod cache;
pub mod cluster;
pub mod scheduler;
pub mod service;

use std::sync::Arc;
use std::time::Duration;

use npuzzle_proto::v1::cluster_server::ClusterServer;
use npuzzle_proto::v1::solver_server::SolverServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::TcpIncoming;

pub use scheduler::SchedulerConfig;

/// Coordinator settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Cache entries kept at most (each state along a solved path is one entry).
    pub cache_capacity: usize,
    /// Work units per worker slot when a search is distributed.
    pub units_per_slot: usize,
    /// Node budget of the serial probe that keeps easy problems on the coordinator.
    pub probe_nodes: u64,
    /// With no worker connected for this long, a waiting request gets `UNAVAILABLE`.
    pub unavailable_after: Duration,
    /// How often leases are checked.
    pub tick: Duration,
    pub scheduler: SchedulerConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cache_capacity: 1_000_000,
            units_per_slot: 64,
            probe_nodes: 200_000,
            unavailable_after: Duration::from_secs(10),
            tick: Duration::from_millis(500),
            scheduler: SchedulerConfig::default(),
        }
    }
}

/// Errors that stop the coordinator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Serves both services on `listener` until `shutdown` fires.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let cluster = cluster::spawn(config.scheduler.clone(), config.tick, shutdown.clone());
    let shared = Arc::new(service::Shared::new(config, cluster));
    // Small messages (cancels, results) must not wait for Nagle's algorithm and a delayed ACK:
    // that alone costs 40 ms. (`Server::tcp_nodelay` does not reach a listener we bring.)
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(SolverServer::new(service::SolverService {
            shared: Arc::clone(&shared),
        }))
        .add_service(ClusterServer::new(service::ClusterService { shared }))
        .serve_with_incoming_shutdown(incoming, shutdown.cancelled())
        .await?;
    Ok(())
}
