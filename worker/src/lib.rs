//! # npuzzle-worker
//!
//! A worker of an npuzzle cluster: it joins a coordinator over one bidirectional gRPC stream
//! (`npuzzle.v1.Cluster/Join`), searches the work units it is assigned on dedicated threads (never
//! on the async runtime), reports each unit's outcome with its node count, stops a job's units as
//! soon as the coordinator cancels it (the search looks at its cancel flag every 4096 nodes), and
//! reconnects with backoff when the coordinator goes away.
//!
//! It says in its hello that it takes units ahead (`prefetch`): units that arrive while every
//! thread is busy wait in the pool's queue, and the first thread to free starts the oldest, with
//! no round trip to the coordinator. Asked back (`YieldUnit`) before it started, such a unit is
//! answered `UNIT_STATUS_NOT_STARTED` at once; cancelled, `UNIT_STATUS_CANCELLED` at once.
//!
//! With [`Config::security`] it sends a worker token with its join, and over `https://` verifies
//! the coordinator's certificate. A refused token is fatal ([`run`] returns
//! [`Error::Unauthenticated`]): retrying cannot fix this worker's settings. A certificate that
//! does not verify is never trusted: the worker does not join, logs an ERROR naming the failure,
//! and tries again with backoff (the coordinator's certificate may be fixed without touching the
//! workers).
//!
//! # Layout
//!
//! - [`pool`]: the search threads and their queue.
//! - `priority`: the search threads run at a lower priority than the runtime's (the crate's
//!   only `unsafe`, a system call; denied everywhere else).
//! - [`metrics`]: the `npuzzle_worker_*` Prometheus metrics (units by outcome, nodes, busy
//!   slots), served with [`Config::metrics`].
//! - [`tables`]: pattern databases on disk: where they live, verified loading, rebuilding, and
//!   the set a worker serves.
//! - [`run`]: load the pattern databases present, connect, say hello (with the shapes it has
//!   tables for), serve assignments, heartbeat, reconnect.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = npuzzle_worker::Config::new("http://127.0.0.1:50051");
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! npuzzle_worker::run(config, shutdown).await?;
//! # Ok(()) }
//! ```

// `unsafe` lives in one place only: `priority.rs` (allowed there).
#![deny(unsafe_code)]

pub mod metrics;
pub mod pool;
mod priority;
pub mod tables;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use npuzzle_proto::security::{ClientSecurity, SecurityError, tls_failure};
use npuzzle_proto::v1;
use npuzzle_proto::v1::cluster_client::ClusterClient;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_util::sync::CancellationToken;

pub use npuzzle_telemetry::MetricsListener;

use crate::pool::{Pool, Start, Task};
use crate::tables::{ServedTables, TableStore};

/// Worker settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The coordinator's URL, e.g. `http://10.0.0.1:50051`, or `https://…` for TLS.
    pub coordinator: String,
    /// The worker token sent with the join, and the CA (and name) the coordinator's TLS
    /// certificate must verify against. Default: no token, and for `https://` the Mozilla roots.
    pub security: ClientSecurity,
    /// Search threads (= slots offered to the coordinator).
    pub threads: usize,
    /// A name for logs and the coordinator's records.
    pub name: String,
    /// How often to tell the coordinator this worker is alive.
    pub heartbeat: Duration,
    /// Longest wait between reconnection attempts.
    pub max_backoff: Duration,
    /// Where pattern databases are kept (`None`: `$NPUZZLE_PDB_DIR`, else the per-user cache;
    /// see [`TableStore::new`]).
    pub pdb_dir: Option<PathBuf>,
    /// Load the pattern databases present at start-up and serve `HEURISTIC_PDB` for their
    /// shapes (the default). Off, the worker starts at once and serves md, lc and exact only.
    pub load_pdbs: bool,
    /// Load tables for these shapes only (`None`: every shape whose files are present). An
    /// embedded worker that knows which boards it will see starts sooner.
    pub pdb_shapes: Option<std::collections::BTreeSet<npuzzle_solver::Shape>>,
    /// Where to serve Prometheus metrics (`GET /metrics`); `None`: no endpoint.
    pub metrics: Option<MetricsListener>,
}

impl Config {
    /// One thread per core, a name from the process id.
    pub fn new(coordinator: impl Into<String>) -> Config {
        Config {
            coordinator: coordinator.into(),
            security: ClientSecurity::default(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            name: format!("worker-{}", std::process::id()),
            heartbeat: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5),
            pdb_dir: None,
            load_pdbs: true,
            pdb_shapes: None,
            metrics: None,
        }
    }

    /// Refuses settings a worker cannot work with, naming the first one found: no search
    /// thread, a heartbeat or a backoff of zero (a heartbeat every instant, reconnections
    /// without a pause). [`run`] checks it first.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        if self.threads == 0 {
            return Err(InvalidConfig::NoThreads);
        }
        for (setting, value) in [
            ("heartbeat", self.heartbeat),
            ("largest backoff", self.max_backoff),
        ] {
            if value.is_zero() {
                return Err(InvalidConfig::Zero(setting));
            }
        }
        Ok(())
    }
}

/// A [`Config`] setting a worker cannot work with.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InvalidConfig {
    #[error("threads is 0: a worker needs at least one search thread")]
    NoThreads,
    #[error("the {0} is zero: it is how long the worker waits, and must be above 0")]
    Zero(&'static str),
}

/// Why a session with the coordinator ended.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("refusing to start: {0}")]
    Config(#[from] InvalidConfig),
    #[error("cannot use the coordinator URL or its security settings: {0}")]
    Settings(#[from] SecurityError),
    #[error(
        "the coordinator refused this worker's token ({}): check --token-file (NPUZZLE_WORKER_TOKEN_FILE) against the coordinator's --worker-token-file",
        .0.message()
    )]
    Unauthenticated(tonic::Status),
    #[error("cannot reach the coordinator: {0}")]
    Connect(#[from] tonic::transport::Error),
    #[error("the coordinator refused or dropped the stream: {0}")]
    Stream(#[from] tonic::Status),
}

enum SessionEnd {
    Shutdown,
    Closed,
}

/// Serves the coordinator until `shutdown` fires, reconnecting with exponential backoff (100 ms
/// doubling up to `max_backoff`) whenever the connection is lost. Fatal, returned at once:
/// settings out of range ([`Config::validate`], [`Error::Config`]), a malformed URL or TLS
/// settings that cannot apply to it ([`Error::Settings`]), and a join the coordinator refuses
/// as `UNAUTHENTICATED` ([`Error::Unauthenticated`], logged at ERROR). A coordinator whose TLS
/// certificate does not verify is logged at ERROR and retried; the worker never joins it.
///
/// Before joining, the pattern databases present in the table directory are loaded (once per
/// process; never built): a shape whose files fail to verify is logged and served without them.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<(), Error> {
    config.validate()?;
    let endpoint = config
        .security
        .endpoint(&config.coordinator)?
        .connect_timeout(Duration::from_secs(2))
        // A cut network leaves the stream open but silent: HTTP/2 pings notice it, so the
        // worker reconnects instead of waiting on a dead connection.
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true)
        .tcp_nodelay(true);
    if let Some(endpoint) = config.metrics.clone() {
        npuzzle_telemetry::metrics::install();
        metrics::describe();
        ::metrics::gauge!(metrics::SLOTS).set(config.threads as f64);
        metrics::connected(false);
        metrics::busy(0);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            if let Err(e) = endpoint.serve(shutdown).await {
                tracing::error!(error = %e, "the metrics endpoint stopped");
            }
        });
    }
    let tables = if config.load_pdbs {
        let store = TableStore::new(config.pdb_dir.clone());
        let only = config.pdb_shapes.clone();
        let loading =
            tokio::task::spawn_blocking(move || ServedTables::load_only(&store, only.as_ref()));
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            loaded = loading => loaded.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "loading pattern databases failed; serving without them");
                ServedTables::default()
            }),
        }
    } else {
        ServedTables::default()
    };
    let hello = hello(&config, &tables);
    let pool = Pool::start(config.threads, tables);
    let mut backoff = Duration::from_millis(100);
    loop {
        let started = Instant::now();
        match session(&config, &endpoint, &hello, &pool, &shutdown).await {
            Ok(SessionEnd::Shutdown) => return Ok(()),
            Ok(SessionEnd::Closed) => tracing::warn!("coordinator closed the stream"),
            Err(Error::Stream(status)) if status.code() == tonic::Code::Unauthenticated => {
                let error = Error::Unauthenticated(status);
                tracing::error!(coordinator = %config.coordinator, error = %error, "not joining");
                return Err(error);
            }
            Err(Error::Connect(e)) if tls_failure(&e).is_some() => {
                let why = tls_failure(&e).map(ToString::to_string).unwrap_or_default();
                tracing::error!(
                    coordinator = %config.coordinator,
                    tls_error = %why,
                    "TLS with the coordinator failed (its certificate does not verify, or it does not speak TLS); not joining"
                );
            }
            Err(e) => tracing::warn!(error = %e, "session ended"),
        }
        if started.elapsed() > Duration::from_secs(10) {
            backoff = Duration::from_millis(100);
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(config.max_backoff);
    }
}

/// What the worker tells the coordinator first: its slots, and the heuristics and pattern
/// databases it serves.
fn hello(config: &Config, tables: &ServedTables) -> v1::Hello {
    let mut heuristics = vec![
        v1::Heuristic::Manhattan as i32,
        v1::Heuristic::LinearConflict as i32,
        v1::Heuristic::Exact as i32,
    ];
    if !tables.is_empty() {
        heuristics.push(v1::Heuristic::Pdb as i32);
    }
    v1::Hello {
        worker_id: config.name.clone(),
        slots: config.threads as u32,
        version: env!("CARGO_PKG_VERSION").to_string(),
        heuristics,
        pattern_databases: tables
            .partitions()
            .map(npuzzle_proto::pattern_database_to_wire)
            .collect(),
        // Units beyond the threads wait in the pool's queue; `Held::start` answers for them.
        prefetch: true,
    }
}

/// A unit this worker holds (running or waiting for a thread): the flag that asks its search to
/// hand back the rest, and who answers for it.
struct Held {
    hand_back: Arc<AtomicU64>,
    start: Start,
}

/// What a session keeps about the units it holds.
#[derive(Default)]
struct Holding {
    /// Per job: its cancel flag and how many of its units this worker still holds.
    jobs: HashMap<u64, (Arc<AtomicBool>, usize)>,
    /// Per unit held, (job, epoch, unit).
    units: HashMap<(u64, u32, u32), Held>,
}

impl Holding {
    /// Units held, running or waiting for a thread (what the busy gauge and heartbeats count).
    fn held(&self) -> usize {
        self.jobs.values().map(|(_, n)| *n).sum()
    }

    /// Holds assignment `a` (a coordinator re-sending a unit still held replaces its flags)
    /// and queues it on `pool`, to answer on `done`.
    fn hold(
        &mut self,
        a: v1::Assignment,
        pool: &Pool,
        done: &mpsc::UnboundedSender<(u64, v1::UnitResult)>,
    ) {
        let entry = self
            .jobs
            .entry(a.job)
            .or_insert_with(|| (Arc::new(AtomicBool::new(false)), 0));
        entry.1 += 1;
        let cancel = Arc::clone(&entry.0);
        let held = Held {
            hand_back: Arc::new(AtomicU64::new(u64::MAX)),
            start: Start::default(),
        };
        let task = Task {
            cancel,
            hand_back: Arc::clone(&held.hand_back),
            start: held.start.clone(),
            done: done.clone(),
            assignment: a,
        };
        let a = &task.assignment;
        self.units.insert((a.job, a.epoch, a.unit), held);
        pool.submit(task);
    }

    /// Unit (`job`, `result`'s epoch and unit) is answered: forgotten, and its result goes out.
    fn answer(
        &mut self,
        job: u64,
        result: v1::UnitResult,
        out: &mpsc::UnboundedSender<v1::WorkerMessage>,
    ) {
        self.units.remove(&(job, result.epoch, result.unit));
        if let Some(entry) = self.jobs.get_mut(&job) {
            entry.1 = entry.1.saturating_sub(1);
            if entry.1 == 0 {
                self.jobs.remove(&job);
            }
        }
        metrics::unit_done(&result);
        metrics::busy(self.held());
        let _ = out.send(v1::WorkerMessage {
            message: Some(v1::worker_message::Message::Result(result)),
        });
    }

    /// Takes back the units of `job` that no thread has started: answered `status` at once.
    fn take_back_waiting(
        &mut self,
        job: u64,
        status: v1::UnitStatus,
        out: &mpsc::UnboundedSender<v1::WorkerMessage>,
    ) {
        let mut waiting: Vec<(u32, u32)> = self
            .units
            .iter()
            .filter(|((j, _, _), held)| *j == job && !held.start.started())
            .map(|(&(_, epoch, unit), _)| (epoch, unit))
            .collect();
        waiting.sort_unstable();
        for (epoch, unit) in waiting {
            self.take_back(job, epoch, unit, status, out);
        }
    }

    /// Takes unit (`job`, `epoch`, `unit`) back if no thread has started it, answering
    /// `status` for it at once; false if it is running (or not held).
    fn take_back(
        &mut self,
        job: u64,
        epoch: u32,
        unit: u32,
        status: v1::UnitStatus,
        out: &mpsc::UnboundedSender<v1::WorkerMessage>,
    ) -> bool {
        let taken = self
            .units
            .get(&(job, epoch, unit))
            .is_some_and(|held| held.start.take_back());
        if taken {
            let result = v1::UnitResult {
                job,
                epoch,
                unit,
                status: status as i32,
                ..Default::default()
            };
            self.answer(job, result, out);
        }
        taken
    }
}

const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection: hello, then assignments in, results and heartbeats out.
async fn session(
    config: &Config,
    endpoint: &tonic::transport::Endpoint,
    hello: &v1::Hello,
    pool: &Pool,
    shutdown: &CancellationToken,
) -> Result<SessionEnd, Error> {
    let channel = tokio::select! {
        _ = shutdown.cancelled() => return Ok(SessionEnd::Shutdown),
        c = endpoint.connect() => c?,
    };
    let mut client = ClusterClient::with_interceptor(channel, config.security.interceptor());
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let _ = out_tx.send(v1::WorkerMessage {
        message: Some(v1::worker_message::Message::Hello(hello.clone())),
    });
    let mut inbound = client
        .join(UnboundedReceiverStream::new(out_rx))
        .await?
        .into_inner();
    tracing::info!(
        coordinator = %config.coordinator,
        threads = config.threads,
        pattern_databases = hello.pattern_databases.len(),
        "joined"
    );
    metrics::connected(true);

    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(u64, v1::UnitResult)>();
    let mut holding = Holding::default();
    let mut heartbeat = tokio::time::interval(config.heartbeat);
    let end = loop {
        tokio::select! {
            _ = shutdown.cancelled() => break Ok(SessionEnd::Shutdown),
            _ = heartbeat.tick() => {
                let busy = holding.held() as u32;
                let _ = out_tx.send(v1::WorkerMessage {
                    message: Some(v1::worker_message::Message::Heartbeat(v1::Heartbeat { busy_slots: busy })),
                });
            }
            Some((job, result)) = done_rx.recv() => {
                holding.answer(job, result, &out_tx);
            }
            message = inbound.message() => match message {
                Ok(Some(m)) => match m.message {
                    Some(v1::coordinator_message::Message::Assign(a)) => {
                        holding.hold(a, pool, &done_tx);
                        metrics::busy(holding.held());
                    }
                    Some(v1::coordinator_message::Message::Cancel(c)) => {
                        if let Some((flag, _)) = holding.jobs.get(&c.job) {
                            flag.store(true, Ordering::Relaxed);
                        }
                        // Its units waiting for a thread are answered now, not when one frees.
                        holding.take_back_waiting(c.job, v1::UnitStatus::Cancelled, &out_tx);
                    }
                    Some(v1::coordinator_message::Message::YieldUnit(y)) => {
                        let status = v1::UnitStatus::NotStarted;
                        let taken = holding.take_back(y.job, y.epoch, y.unit, status, &out_tx);
                        if !taken && let Some(held) = holding.units.get(&(y.job, y.epoch, y.unit)) {
                            held.hand_back.fetch_min(y.after_nodes, Ordering::Relaxed);
                        }
                    }
                    None => {}
                },
                Ok(None) => break Ok(SessionEnd::Closed),
                Err(status) => break Err(Error::Stream(status)),
            },
        }
    };
    // Whatever is still running or waiting belongs to a connection that is gone.
    for (flag, _) in holding.jobs.values() {
        flag.store(true, Ordering::Relaxed);
    }
    metrics::connected(false);
    metrics::busy(0);
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An assignment of `job` searching Korf's #88 whole with Manhattan distance: far longer
    /// than any test, until cancelled.
    fn long_search(job: u64, unit: u32) -> v1::Assignment {
        let tiles = [15, 2, 12, 11, 14, 13, 9, 5, 1, 3, 8, 7, 0, 10, 6, 4];
        v1::Assignment {
            job,
            epoch: 1,
            unit,
            board: Some(v1::Board {
                width: 4,
                height: 4,
                tiles: tiles.to_vec(),
            }),
            goal: Some(v1::Goal {
                kind: v1::GoalKind::BlankFirst as i32,
                tiles: vec![],
            }),
            bound: 1,
            heuristic: v1::Heuristic::Manhattan as i32,
            iterate: true,
            ..Default::default()
        }
    }

    /// Holds `a` as the session does, and queues it on `pool`.
    fn hold(
        holding: &mut Holding,
        pool: &Pool,
        a: v1::Assignment,
        done: &mpsc::UnboundedSender<(u64, v1::UnitResult)>,
    ) {
        holding.hold(a, pool, done);
    }

    fn status(message: Option<v1::WorkerMessage>) -> (u64, u32, v1::UnitStatus) {
        match message.and_then(|m| m.message) {
            Some(v1::worker_message::Message::Result(r)) => (
                r.job,
                r.unit,
                v1::UnitStatus::try_from(r.status).unwrap_or(v1::UnitStatus::Unspecified),
            ),
            other => panic!("not a result: {other:?}"),
        }
    }

    #[tokio::test]
    async fn units_waiting_for_a_thread_are_answered_at_once_and_never_searched() {
        let pool = Pool::start(1, ServedTables::default());
        let (done_tx, mut done_rx) = mpsc::unbounded_channel();
        let (out_tx, mut out_rx) = mpsc::unbounded_channel();
        let mut holding = Holding::default();
        // The one thread takes job 1; jobs 2 and 3 wait for it.
        hold(&mut holding, &pool, long_search(1, 0), &done_tx);
        for job in [2, 3] {
            hold(&mut holding, &pool, long_search(job, 0), &done_tx);
        }
        let started = async || holding.units[&(1, 1, 0)].start.started().then_some(());
        until_some(started).await;
        assert_eq!(holding.held(), 3);
        // Asked back before it started: NOT_STARTED, at once.
        let taken = holding.take_back(2, 1, 0, v1::UnitStatus::NotStarted, &out_tx);
        assert!(taken);
        assert_eq!(
            status(out_rx.recv().await),
            (2, 0, v1::UnitStatus::NotStarted)
        );
        // Running: not taken back (it is asked for its rest instead).
        assert!(!holding.take_back(1, 1, 0, v1::UnitStatus::NotStarted, &out_tx));
        // Job 3 cancelled while it waits: CANCELLED, at once.
        holding.take_back_waiting(3, v1::UnitStatus::Cancelled, &out_tx);
        assert_eq!(
            status(out_rx.recv().await),
            (3, 0, v1::UnitStatus::Cancelled)
        );
        assert_eq!(holding.held(), 1);
        // The running search stops at its cancel; the thread then finds nothing to search.
        holding.jobs[&1].0.store(true, Ordering::Relaxed);
        let (job, result) = done_rx.recv().await.unwrap();
        assert_eq!((job, result.status), (1, v1::UnitStatus::Cancelled as i32));
        holding.answer(job, result, &out_tx);
        assert_eq!(holding.held(), 0);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            done_rx.try_recv().is_err(),
            "a unit taken back was searched"
        );
    }

    /// Polls `check` every millisecond for up to 10 s.
    async fn until_some(mut check: impl AsyncFnMut() -> Option<()>) {
        for _ in 0..10_000 {
            if check().await.is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("the search never started");
    }
}
