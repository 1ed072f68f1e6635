//! # npuzzle-coordinator
//!
//! The coordinator of an npuzzle cluster. Clients call `npuzzle.v1.Solver`; workers join through
//! `npuzzle.v1.Cluster`. For each request the coordinator validates (malformed →
//! `INVALID_ARGUMENT`, unsolvable → an immediate answer), answers from its cache, joins an
//! identical search already running, solves boards of at most 9 cells itself, or sends the search
//! whole to one worker thread. A search still running when other threads would idle is cut into
//! work units (keeping what was searched) that workers search under a shared, rising f-bound. The
//! first solution found under the current bound is optimal (every smaller bound was exhausted
//! everywhere); it cancels the job on every worker at once and fills the cache.
//!
//! # Layout
//!
//! - [`scheduler`]: the pure state machine (units, bounds, acceptance, leases, splits). No I/O.
//! - [`scheduler_args`]: [`SchedulerArgs`], the scheduler's tuning flags, which the coordinator's
//!   binary and `npuzzle simulate` both flatten into their command lines.
//! - [`sim`]: a deterministic discrete-event simulation of a cluster of any size, driving the
//!   real scheduler with workers whose costs come from recorded traces.
//! - [`scheduler_actor`]: the scheduler's actor, the task that owns the scheduler and carries out
//!   its commands; every other task talks to it through its [`SchedulerHandle`](scheduler_actor::SchedulerHandle).
//! - [`flights`]: identical requests sharing one search, and the limits on searches waiting or
//!   running. No I/O.
//! - [`quarantine`]: workers dropped for misbehaving, refused for a while. No I/O.
//! - [`cache`]: board key → a path and its proven lower bound (optimal when they meet), bounded,
//!   every suffix stored.
//! - [`store`]: the cache's durable copy in [`Config::cache_dir`] (a redb file), read back and
//!   replayed at start-up, written by a background thread.
//! - `solve`: the solve pipeline of `Solve`, `SolveStream` and the HTTP API (validate, cache,
//!   admit, choose a heuristic, follow a search), `Pipeline`, what the services and the HTTP API
//!   share, and its errors, `SolveError`. No tonic.
//! - `searches`: the searches running now (`Searches`: the flights, the coordinator's solvers,
//!   checkpoints to resume from, searches ended lately, the cache and its store), one task per
//!   search: solved here, sent whole to a worker, or probed and cut into units; its progress and
//!   end published to its waiters.
//! - `progress`: a running search's progress and its forecast (fraction done, time left), for
//!   the console and `SolveStream`.
//! - `jobs`: detached jobs, a client of the pipeline: searches that outlive the call that
//!   submitted them, by id; `jobs/durable.rs`: their records in the store, so that they outlive
//!   the coordinator too.
//! - `console`: the records of searches running and ended, and the request rate.
//! - `handshake`: what a worker's hello gets it, a pure function (admitted or refused).
//! - `wire`: worker results into the scheduler's terms; `SolveStream`'s events.
//! - [`service`]: the two gRPC services, thin adapters over the above, and the gRPC form of
//!   their errors.
//! - [`health`]: `grpc.health.v1` statuses: SERVING only while a worker is connected and the
//!   coordinator is not draining.
//! - [`metrics`]: the `npuzzle_coordinator_*` Prometheus metrics the adapters record.
//! - [`incoming`]: the accepted connections, bounded in number, each closed if it sends
//!   nothing soon after connecting.
//! - [`auth`]: the client and worker tokens (an interceptor in front of each service) and the
//!   TLS identity both services are served with.
//! - [`http`]: the JSON API (and the web console) over HTTP, with [`Config::http`]: the same
//!   solve path as gRPC, from the same state.
//! - [`run`]: serve on a listener until a shutdown token fires: both services, health, server
//!   reflection (v1 and v1alpha) and, if configured, the metrics endpoint.
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

#![forbid(unsafe_code)]

pub mod auth;
pub mod cache;
mod console;
pub mod flights;
mod handshake;
pub mod health;
pub mod http;
pub mod incoming;
mod jobs;
pub mod metrics;
mod progress;
pub mod quarantine;
pub mod scheduler;
pub mod scheduler_actor;
pub mod scheduler_args;
mod searches;
pub mod service;
pub mod sim;
mod solve;
pub mod store;
mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use npuzzle_proto::v1::cluster_server::ClusterServer;
use npuzzle_proto::v1::solver_server::SolverServer;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::TcpIncoming;

use crate::cache::Cache;

pub use auth::{Auth, AuthError, ServerTls};
pub use http::HttpListener;
pub use npuzzle_telemetry::MetricsListener;
pub use scheduler::SchedulerConfig;
pub use scheduler_args::SchedulerArgs;

/// The address `npuzzle-coordinator` and `npuzzle cluster` listen on unless told otherwise:
/// loopback only, so that no other host can reach a coordinator nobody configured.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";

/// Coordinator settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Cache entries kept at most (each state along a solved path is one entry).
    pub cache_capacity: usize,
    /// Keep the answers in a store in this directory too (see [`store`]), so that they survive a
    /// restart: at start-up the newest stored answers that fill the cache are loaded, each one
    /// replayed first. `None`: memory only.
    pub cache_dir: Option<PathBuf>,
    /// Work units per worker slot when a search is distributed.
    pub units_per_slot: usize,
    /// Node budget of the serial probe that keeps easy problems on the coordinator.
    pub probe_nodes: u64,
    /// Nodes the coordinator spends, beside each search of a board of more than 9 cells, on a
    /// legal path found fast (weighted IDA\* with its own heuristic, see
    /// [`npuzzle_solver::Solver::quick_path`]): the search's incumbent, shown while it runs and
    /// answered at a deadline. 0: none.
    pub incumbent_nodes: u64,
    /// Requests that need a search (waiting or running) at most; past it `RESOURCE_EXHAUSTED`
    /// with a `retry-after-ms` hint. Cache hits, unsolvable and invalid boards are not counted.
    pub max_searches: usize,
    /// Of those, at most this many from one client (by peer IP address; 0: no per-client limit).
    /// Past it that client gets `RESOURCE_EXHAUSTED` with a `retry-after-ms` hint while others
    /// are still served. Behind a proxy every client shares the proxy's address.
    pub max_searches_per_client: usize,
    /// With no worker connected for this long, a waiting request gets `UNAVAILABLE`.
    pub unavailable_after: Duration,
    /// A detached job (`SubmitJob`) is kept this long after it finished, for `GetJob`,
    /// `WatchJob` and the CLI's `wait` to read its answer.
    pub job_ttl: Duration,
    /// A running detached job's progress is checkpointed to the store (with `cache_dir`) at
    /// each new bound and at least this often within one; a restarted coordinator resumes it
    /// from there.
    pub checkpoint_every: Duration,
    /// How often leases are checked.
    pub tick: Duration,
    /// A `Join` stream whose hello has not come within this long is closed
    /// (`DEADLINE_EXCEEDED`): a connection that never says who it is holds nothing for long.
    pub hello_timeout: Duration,
    /// Workers connected at most; past it a join gets `RESOURCE_EXHAUSTED`.
    pub max_workers: usize,
    /// Slots one worker is counted with at most, whatever its hello claims: a worker that claims
    /// thousands of threads cannot take more work at once than this.
    pub max_slots_per_worker: usize,
    /// A worker dropped for a forged result or for failing unit after unit is refused (its
    /// name at its address) for this long, and a claim it refused is struck from its hellos for
    /// as long (see [`quarantine`]). Zero: no quarantine.
    pub quarantine_for: Duration,
    /// TCP connections open at most (clients and workers together); past it a new connection
    /// is closed at once and counted.
    pub max_connections: usize,
    /// A connection that sends nothing (no HTTP/2 preface, no TLS hello) within this long of
    /// being accepted is closed.
    pub first_byte_timeout: Duration,
    /// A gRPC connection must have sent its whole opening within this long of being accepted
    /// (in plaintext the HTTP/2 client preface and its SETTINGS frame; with [`Config::tls`]
    /// the TLS handshake), or it is closed: a peer trickling its opening a byte at a time
    /// holds nothing for long.
    pub handshake_timeout: Duration,
    /// An HTTP request (on [`Config::http`]) must have sent its whole header within this long
    /// of the connection's opening, or of the previous response, or the connection is closed.
    pub header_read_timeout: Duration,
    pub scheduler: SchedulerConfig,
    /// The audit share when [`run`]'s listener accepts workers from other hosts (its address is
    /// not loopback, e.g. `0.0.0.0`) and `scheduler.audit_fraction` is 0: a worker on another
    /// machine may be anyone's, so its reports are sampled ([`Config::scheduler_for`]). Default
    /// [`SchedulerConfig::DEFAULT_AUDIT_FRACTION`]; 0 keeps audits off there too. On loopback,
    /// or when `scheduler.audit_fraction` is above 0, `scheduler` is used as it is.
    pub remote_audit_fraction: f64,
    /// Where to serve Prometheus metrics (`GET /metrics`); `None`: no endpoint. Bind it first
    /// ([`MetricsListener::bind`]) to learn its address (port 0 picks a free one).
    pub metrics: Option<MetricsListener>,
    /// Where to serve the JSON API and web console over HTTP (see [`http`]); `None`: nothing
    /// is served and nothing runs for it. Bind it first ([`HttpListener::bind`]) to learn its
    /// address. Plain HTTP, whatever [`Config::tls`] says; it requires the client token of
    /// [`Config::auth`] as `npuzzle.v1.Solver` does.
    pub http: Option<HttpListener>,
    /// After the shutdown token fires, how long the server goes on answering, with its health
    /// status NOT_SERVING, before it stops: time for load balancers to notice (0: stop at once).
    pub drain: Duration,
    /// The tokens each service requires (default: none, both open). See [`auth`].
    pub auth: Auth,
    /// Serve both services over TLS with this certificate and key (`None`: plaintext h2c).
    /// Health and reflection share the port, so they are TLS too; the metrics endpoint is not.
    pub tls: Option<ServerTls>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cache_capacity: 1_000_000,
            cache_dir: None,
            units_per_slot: 64,
            probe_nodes: 200_000,
            incumbent_nodes: 3_000_000,
            max_searches: 10_000,
            max_searches_per_client: 1_000,
            unavailable_after: Duration::from_secs(10),
            job_ttl: Duration::from_secs(24 * 3600),
            checkpoint_every: Duration::from_secs(30),
            tick: Duration::from_millis(500),
            hello_timeout: Duration::from_secs(10),
            max_workers: 1024,
            max_slots_per_worker: 256,
            quarantine_for: Duration::from_secs(120),
            max_connections: 16_384,
            first_byte_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            scheduler: SchedulerConfig::default(),
            remote_audit_fraction: SchedulerConfig::DEFAULT_AUDIT_FRACTION,
            metrics: None,
            http: None,
            drain: Duration::ZERO,
            auth: Auth::default(),
            tls: None,
        }
    }
}

/// Errors that stop the coordinator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("cannot build the reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("refusing to start: {0}")]
    Config(#[from] AuthError),
    #[error("refusing to start: {0}")]
    Scheduler(#[from] scheduler::InvalidSchedulerConfig),
    #[error("refusing to start: {0}")]
    Setting(#[from] InvalidConfig),
    #[error("cannot use the TLS certificate and key: {0}")]
    Tls(tonic::transport::Error),
    #[error("cannot use the answer store: {0}")]
    Store(#[from] store::StoreError),
    #[error("cannot start the answer store's writer: {0}")]
    StoreWriter(std::io::Error),
}

/// A [`Config`] setting the coordinator cannot work with: which, and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InvalidConfig {
    #[error("{setting} is 0: {why}")]
    Zero {
        setting: &'static str,
        why: &'static str,
    },
    #[error("the remote audit fraction is {0}: it is a share of reports, from 0 (none) to 1 (all)")]
    RemoteAuditFraction(f64),
}

impl Config {
    /// Refuses settings the coordinator must not run with, naming the first one found: equal
    /// client and worker tokens, a limit or timeout of 0 that would refuse or drop everything
    /// (units per slot, searches, workers, connections, slots per worker, the tick and every
    /// connection timeout), scheduler settings no scheduler can work with
    /// ([`SchedulerConfig::validate`]), and a remote audit share outside 0..=1. [`run`] checks
    /// it first.
    pub fn validate(&self) -> Result<(), Error> {
        self.auth.validate()?;
        let counts = [
            (
                "units per slot",
                self.units_per_slot,
                "a search the coordinator cuts needs at least one unit per slot",
            ),
            (
                "max searches",
                self.max_searches,
                "no request that needs a search would ever be let in",
            ),
            (
                "max workers",
                self.max_workers,
                "every worker would be refused",
            ),
            (
                "max connections",
                self.max_connections,
                "every connection would be closed",
            ),
            (
                "max slots per worker",
                self.max_slots_per_worker,
                "a worker must count for at least one search thread",
            ),
        ];
        if let Some(&(setting, _, why)) = counts.iter().find(|(_, value, _)| *value == 0) {
            return Err(InvalidConfig::Zero { setting, why }.into());
        }
        let timeouts = [
            ("the tick", self.tick, "leases are checked every tick"),
            (
                "the hello timeout",
                self.hello_timeout,
                "every join would time out",
            ),
            (
                "the first byte timeout",
                self.first_byte_timeout,
                "every connection would be closed",
            ),
            (
                "the handshake timeout",
                self.handshake_timeout,
                "every connection would be closed",
            ),
            (
                "the header read timeout",
                self.header_read_timeout,
                "every HTTP request would be cut off",
            ),
        ];
        if let Some(&(setting, _, why)) = timeouts.iter().find(|(_, value, _)| value.is_zero()) {
            return Err(InvalidConfig::Zero { setting, why }.into());
        }
        self.scheduler.validate()?;
        if !(0.0..=1.0).contains(&self.remote_audit_fraction) {
            let fraction = self.remote_audit_fraction;
            return Err(InvalidConfig::RemoteAuditFraction(fraction).into());
        }
        Ok(())
    }

    /// The scheduler settings of a coordinator listening on `address`: [`Config::scheduler`],
    /// with [`Config::remote_audit_fraction`] as its audit share when it has none of its own
    /// and `address` accepts other hosts (is not a loopback address). [`run`] uses this.
    pub fn scheduler_for(&self, address: SocketAddr) -> SchedulerConfig {
        let mut scheduler = self.scheduler.clone();
        if scheduler.audit_fraction == 0.0 && !address.ip().to_canonical().is_loopback() {
            scheduler.audit_fraction = self.remote_audit_fraction;
        }
        scheduler
    }
}

/// Serves on `listener` until `shutdown` fires (then [`Config::drain`] later): the solver and
/// cluster services, `grpc.health.v1` (see [`health`]), and server reflection in both its `v1`
/// and `v1alpha` versions (grpcurl 1.8 speaks only `v1alpha`), which describes the npuzzle and
/// health protos, so that `grpcurl -plaintext HOST:PORT list` needs no proto files. With
/// [`Config::metrics`], also the Prometheus endpoint. With [`Config::tls`], everything on
/// `listener` is TLS; with [`Config::auth`], each npuzzle service requires its token (health
/// and reflection never do). Invalid settings ([`Config::validate`]) return an error at once.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    config.validate()?;
    // HTTP/2 pings find peers that stopped answering on a connection that is still open.
    let mut server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)));
    if let Some(tls) = &config.tls {
        server = server
            .tls_config(
                tonic::transport::ServerTlsConfig::new()
                    .identity(tls.identity.clone())
                    .timeout(config.handshake_timeout),
            )
            .map_err(Error::Tls)?;
    }
    // `stop` ends the server, the scheduler's actor and the metrics endpoint: `drain` after
    // `shutdown`, or when this function returns early.
    let (cache, writer, stored_jobs) = open_cache(&config).await?;
    let stop = CancellationToken::new();
    let _stop_on_return = stop.clone().drop_guard();
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(npuzzle_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    if config.metrics.is_some() {
        npuzzle_telemetry::metrics::install();
        metrics::describe();
    }
    let (reporter, health_service) = tonic_health::server::health_reporter();
    // Not serving until a worker joins: set before the first request (or scrape) can ask.
    health::set(&reporter, false).await;
    if let Some(endpoint) = config.metrics.clone() {
        let stop = stop.clone();
        tokio::spawn(async move {
            if let Err(e) = endpoint.serve(stop).await {
                tracing::error!(error = %e, "the metrics endpoint stopped");
            }
        });
    }
    // A listener whose address cannot be read is taken to accept other hosts: audits on.
    let address = listener
        .local_addr()
        .unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
    let scheduler = config.scheduler_for(address);
    if scheduler.audit_fraction != config.scheduler.audit_fraction {
        tracing::info!(
            %address,
            audit_fraction = scheduler.audit_fraction,
            "workers may join from other hosts: audits are on"
        );
    }
    let scheduler = scheduler_actor::spawn(
        scheduler,
        config.quarantine_for,
        config.tick,
        config.metrics.is_some(),
        stop.clone(),
    );
    let draining = shutdown.clone();
    tokio::spawn(health::drive(
        reporter,
        scheduler.watch_membership(),
        shutdown,
        config.drain,
        stop.clone(),
    ));
    let limits = incoming::Limits {
        max_connections: config.max_connections.max(1),
        first_byte: config.first_byte_timeout,
        // TLS: tonic times the handshake (above), and the preface comes encrypted.
        preface: config.tls.is_none().then_some(config.handshake_timeout),
    };
    let header_read = config.header_read_timeout;
    let solver_auth = auth::RequireToken::solver(&config.auth);
    let cluster_auth = auth::RequireToken::cluster(&config.auth);
    let http_auth = auth::RequireToken::http(&config.auth);
    let http_listener = config.http.clone();
    let searches = Arc::new(searches::Searches::new(
        &config,
        cache,
        writer,
        scheduler.clone(),
    ));
    let pipeline = Arc::new(solve::Pipeline::new(
        config,
        Arc::clone(&searches),
        scheduler,
        draining,
    ));
    let jobs = Arc::new(jobs::Jobs::new(Arc::clone(&pipeline)));
    jobs.resume(stored_jobs);
    let http_server = http_listener.map(|listener| {
        let router = http::router(
            Arc::clone(&pipeline),
            Arc::clone(&jobs),
            http_auth,
            stop.clone(),
        );
        let stop = stop.clone();
        tokio::spawn(async move {
            let limits = incoming::Limits {
                preface: None,
                ..limits
            };
            if let Err(e) = http::serve(&listener, router, limits, header_read, stop).await {
                tracing::error!(error = %e, "the HTTP API stopped");
            }
        })
    });
    let closing = searches;
    // Small messages (cancels, results) must not wait for Nagle's algorithm and a delayed ACK:
    // that alone costs 40 ms. (`Server::tcp_nodelay` does not reach a listener we bring.)
    let incoming = incoming::bounded(
        TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            // Peers that vanished without closing (a cable pulled, a VM gone) are found out.
            .with_keepalive(Some(Duration::from_secs(60))),
        limits,
    );
    let served = server
        .add_service(SolverServer::with_interceptor(
            service::SolverService {
                pipeline: Arc::clone(&pipeline),
                jobs,
            },
            solver_auth,
        ))
        .add_service(ClusterServer::with_interceptor(
            service::ClusterService { pipeline },
            cluster_auth,
        ))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_incoming_shutdown(incoming, stop.cancelled())
        .await;
    // The HTTP API stops with the rest (`stop`), its open connections given a moment.
    if let Some(task) = http_server {
        stop.cancel();
        let _ = task.await;
    }
    // Answers already given are in the writer's queue: write them before returning.
    let _ = tokio::task::spawn_blocking(move || closing.close_store()).await;
    served?;
    Ok(())
}

/// The in-memory cache, filled from the store in [`Config::cache_dir`] if there is one, and the
/// store's writer. A corrupt store is set aside (see [`store`]): logged, not an error.
/// With the detached jobs the store kept, to resume.
async fn open_cache(
    config: &Config,
) -> Result<(Cache, Option<store::Writer>, Vec<store::StoredJob>), Error> {
    let capacity = config.cache_capacity;
    let Some(dir) = config.cache_dir.clone() else {
        return Ok((Cache::new(capacity), None, Vec::new()));
    };
    let started = Instant::now();
    let (cache, opened) = tokio::task::spawn_blocking(move || {
        let opened = store::Store::open(&dir, capacity)?;
        let file = dir.join(store::FILE_NAME);
        if let Some((aside, reason)) = &opened.set_aside {
            tracing::warn!(
                file = %file.display(),
                moved_to = %aside.display(),
                error = %reason,
                "the answer store is corrupt: set aside, starting with an empty one"
            );
        }
        if opened.dropped > 0 {
            tracing::warn!(
                file = %file.display(),
                dropped = opened.dropped,
                "dropped stored answers that do not decode or do not replay to their goal"
            );
        }
        let cache = Cache::new(capacity);
        for answer in &opened.answers {
            cache.insert(&answer.board, &answer.goal, &answer.path);
        }
        tracing::info!(
            file = %file.display(),
            stored = opened.valid,
            loaded = opened.answers.len(),
            entries = cache.len(),
            millis = started.elapsed().as_millis() as u64,
            "answer store loaded"
        );
        Ok::<_, Error>((cache, opened))
    })
    .await
    .map_err(|e| Error::StoreWriter(std::io::Error::other(e)))??;
    ::metrics::gauge!(crate::metrics::CACHE_ENTRIES).set(cache.len() as f64);
    let writer = store::Writer::spawn(opened.store).map_err(Error::StoreWriter)?;
    Ok((cache, Some(writer), opened.jobs))
}
