//! The gRPC services, thin adapters around the cache, the in-flight table and the cluster actor.
//!
//! A request is validated, answered from the cache if it can be, joined to an identical search
//! already running, or given a new *flight*: a driver task that solves boards of at most 9 cells
//! itself (exact tables), submits anything larger to the scheduler as a whole job (it goes to one
//! worker thread, and is cut only when other threads would idle), and, only while no connected
//! worker can search it, runs a serial probe with a node budget and cuts what survives into units
//! that wait for a worker. Every waiter on a flight watches its state; when the last waiter goes
//! (answered, deadline, client gone), the job is cancelled.
//!
//! The heuristic is settled before a flight starts, from what connected workers hold (see
//! [`crate::scheduler::choose_heuristic`]): pattern databases only where some worker has tables
//! for the board's shape. The coordinator's own searches (probe, frontier, splits, estimates)
//! never use pattern databases; for a PDB job they use linear conflict or exact.

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use npuzzle_proto::v1::cluster_server::Cluster;
use npuzzle_proto::v1::solver_server::Solver as SolverRpc;
use npuzzle_proto::{
    board_from_wire, goal_from_wire, heuristic_from_wire, heuristic_to_wire, moves_from_wire,
    moves_to_wire, pattern_database_from_wire, v1,
};
use npuzzle_solver::{
    Board, BoardKey, Goal, HeuristicKind, Limits, Move, SearchOutcome, Shape, Solver,
};
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::{ReceiverStream, UnboundedReceiverStream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use crate::Config;
use crate::cache::Cache;
use crate::cluster::{ClusterHandle, JobEvent};
use crate::flights::{Admission, Admissions, FlightKey, Flights, Left};
use crate::metrics::RequestMetric;
use crate::quarantine::Origin;
use crate::scheduler::{
    Capabilities, HandedBack, JobId, JobOutcome, JobSpec, JobStats, Report, TaskId, UnitResult,
    WorkerId, choose_heuristic,
};

/// Solvers (with their tables) kept at most; each custom goal needs its own.
const MAX_SOLVERS: usize = 64;

/// State shared by both services.
pub struct Shared {
    pub config: Config,
    pub cache: Cache,
    /// The cache's durable copy ([`Config::cache_dir`]): each answer cached is queued for it.
    store: Option<crate::store::Writer>,
    pub cluster: ClusterHandle,
    /// Searches running now, by puzzle and heuristic: identical requests share one.
    flights: Flights<Flight>,
    /// One solver (and its tables) per goal and heuristic.
    solvers: DashMap<(Goal, HeuristicKind), Arc<Solver>>,
    /// Places for requests that need a search (waiting or running): [`Config::max_searches`]
    /// in all, [`Config::max_searches_per_client`] per client address.
    admissions: Arc<Admissions>,
    /// Fired when the coordinator starts shutting down: from then on new requests are refused.
    draining: CancellationToken,
    /// Workers whose hello was accepted and whose stream is still open: [`Config::max_workers`].
    worker_streams: Arc<AtomicUsize>,
    /// Requests answered and their latency, for the console's charts (two atomic adds a
    /// request, whether or not a console is served).
    pub activity: Activity,
    /// The last [`MAX_RECENT`] searches to end, oldest first, for the console.
    recent: std::sync::Mutex<std::collections::VecDeque<FinishedView>>,
}

/// Searches kept in [`Shared::recent`].
const MAX_RECENT: usize = 20;

/// Requests answered (`Solve`, `SolveStream`, the HTTP API) and the sum of their latencies,
/// since the start.
#[derive(Debug, Default)]
pub struct Activity {
    requests: std::sync::atomic::AtomicU64,
    micros: std::sync::atomic::AtomicU64,
}

impl Activity {
    /// One request answered after `latency`.
    pub fn record(&self, latency: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.micros
            .fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
    }

    /// (requests, total latency in microseconds) so far.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.requests.load(Ordering::Relaxed),
            self.micros.load(Ordering::Relaxed),
        )
    }
}

/// A search that ended, as the console shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FinishedView {
    #[serde(flatten)]
    pub search: SearchView,
    /// `solved`, `cancelled`, `stopped` (shutdown) or `failed`.
    pub outcome: &'static str,
    /// The optimal path, when solved.
    pub moves: Option<String>,
    /// When it ended, in milliseconds since the Unix epoch.
    pub ended_ms: u64,
}

/// One open worker stream, counted until it ends.
struct WorkerStream(Arc<AtomicUsize>);

impl Drop for WorkerStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `RESOURCE_EXHAUSTED` with a `retry-after-ms` hint.
fn exhausted(message: String, retry_after: Duration) -> Status {
    let mut status = Status::resource_exhausted(message);
    status.metadata_mut().insert(
        "retry-after-ms",
        tonic::metadata::MetadataValue::from(retry_after.as_millis().max(1) as u64),
    );
    status
}

/// The retry hint sent with `RESOURCE_EXHAUSTED` for the search limits.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// How a flight ended.
#[derive(Clone, Debug)]
enum FlightEnd {
    Solved {
        path: Vec<Move>,
        nodes: u64,
        /// Set when workers took part.
        stats: Option<JobStats>,
        /// The heuristic of the search that found `path`.
        heuristic: HeuristicKind,
    },
    Cancelled {
        lower_bound: u32,
    },
    /// The coordinator is stopping: the job was dropped unfinished.
    ShuttingDown {
        lower_bound: u32,
    },
    Failed(String),
}

/// What waiters see of a running search.
#[derive(Clone, Debug, Default)]
struct FlightState {
    bound: u32,
    /// Every bound searched so far, in order (the last is `bound`); at most [`MAX_BOUNDS`].
    bounds: Vec<u32>,
    nodes: u64,
    units_done: usize,
    units_total: usize,
    bound_finished: bool,
    end: Option<FlightEnd>,
}

/// Bounds a flight keeps for [`Shared::searches`]: far more than any search goes through.
const MAX_BOUNDS: usize = 128;

struct Flight {
    job: JobId,
    /// The puzzle, and when its search started: for [`Shared::searches`].
    board: Board,
    goal: Goal,
    started: Instant,
    /// What the job's units are searched with, on boards of `shape`: which workers can serve it.
    heuristic: HeuristicKind,
    shape: Shape,
    state: watch::Sender<FlightState>,
    /// Raised when the last waiter leaves: stops the probe and any later submission.
    cancelled: Arc<AtomicBool>,
}

/// A place among a flight's waiters. Leaving is one step with the flight's removal from the
/// table (see [`crate::flights`]): the last one out cancels a flight no one else can join.
struct WaiterGuard {
    shared: Arc<Shared>,
    key: FlightKey,
    flight: Arc<Flight>,
}

impl Drop for WaiterGuard {
    fn drop(&mut self) {
        if self.shared.flights.leave(self.key, self.flight.job) == Left::Last {
            self.flight.cancelled.store(true, Ordering::Release);
            self.shared.cluster.cancel(self.flight.job);
        }
    }
}

/// How waiting on a flight ended.
enum Waited {
    Answer(Answer),
    /// The request asked for `HEURISTIC_AUTO`, the flight's pattern databases are served by no
    /// connected worker any more (one that claimed them refused its units), but connected
    /// workers serve this heuristic: search with it instead.
    Fallback(HeuristicKind),
}

/// A validated request.
struct Puzzle {
    board: Board,
    goal: Goal,
    /// `None` for `HEURISTIC_AUTO`; settled by [`Shared::choose`].
    requested: Option<HeuristicKind>,
    key: BoardKey,
    deadline: Option<Instant>,
    skip_cache: bool,
}

/// What a waiter returns: a response, or a gRPC error.
type Answer = Result<v1::SolveResponse, Status>;

fn response(outcome: v1::Outcome) -> v1::SolveResponse {
    v1::SolveResponse {
        outcome: outcome as i32,
        ..Default::default()
    }
}

/// The `grpc-timeout` header, if the client set a deadline (`None` for one too large to count).
fn grpc_timeout<T>(request: &Request<T>) -> Option<Duration> {
    let value = request.metadata().get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.checked_mul(3600)?),
        "M" => Duration::from_secs(n.checked_mul(60)?),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Who a request counts against for [`Config::max_searches_per_client`]: its peer's IP address
/// (behind a proxy, every client is the proxy).
fn client_address<T>(request: &Request<T>) -> Option<IpAddr> {
    request.remote_addr().map(|a| a.ip())
}

/// `UNAVAILABLE`: no worker is connected.
fn no_worker(started: Instant) -> Status {
    Status::unavailable(format!(
        "no worker is connected to the coordinator (waited {:.1} s); start npuzzle-worker --coordinator URL",
        started.elapsed().as_secs_f64()
    ))
}

impl Shared {
    /// Shared state; `draining` fires when the coordinator starts to shut down.
    /// `cache` may come filled from `store`'s file; `store` gets every answer cached from now on.
    pub fn new(
        config: Config,
        cache: Cache,
        store: Option<crate::store::Writer>,
        cluster: ClusterHandle,
        draining: CancellationToken,
    ) -> Shared {
        Shared {
            draining,
            admissions: Admissions::new(config.max_searches, config.max_searches_per_client),
            cache,
            store,
            config,
            cluster,
            flights: Flights::default(),
            worker_streams: Arc::new(AtomicUsize::new(0)),
            solvers: DashMap::new(),
            activity: Activity::default(),
            recent: std::sync::Mutex::new(std::collections::VecDeque::new()),
        }
    }

    /// Writes the answers queued for the store and closes it (blocks; once serving has ended).
    pub fn close_store(&self) {
        if let Some(store) = &self.store {
            store.close();
        }
    }

    /// Admission for one more request that needs a search, from `client`, or
    /// `RESOURCE_EXHAUSTED` with a `retry-after-ms` hint when [`Config::max_searches`] are
    /// already waiting or running, or that client already has
    /// [`Config::max_searches_per_client`]. Answers that need no search (cache hits, unsolvable
    /// and invalid boards) never take one, so they are still served under overload.
    fn admit(&self, client: Option<IpAddr>) -> Result<Admission, Status> {
        self.admissions
            .admit(client)
            .map_err(|refusal| exhausted(refusal.to_string(), RETRY_AFTER))
    }

    fn solver(&self, goal: Goal, kind: HeuristicKind) -> Result<Arc<Solver>, Status> {
        if let Some(s) = self.solvers.get(&(goal, kind)) {
            return Ok(s.clone());
        }
        let solver =
            Arc::new(Solver::new(goal, kind).map_err(|e| Status::invalid_argument(e.to_string()))?);
        // Custom goals are unbounded in number: keep the tables' memory bounded too.
        if self.solvers.len() >= MAX_SOLVERS {
            self.solvers.clear();
        }
        self.solvers.insert((goal, kind), solver.clone());
        Ok(solver)
    }

    /// Checks a request and settles its deadline: the sooner of `timeout_ms` and `transport`
    /// (the gRPC deadline; `None` over HTTP).
    fn validate(
        &self,
        r: &v1::SolveRequest,
        transport: Option<Duration>,
    ) -> Result<Puzzle, Status> {
        let invalid = |e: npuzzle_proto::WireError| Status::invalid_argument(e.to_string());
        let board = board_from_wire(r.board.as_ref()).map_err(invalid)?;
        let goal = goal_from_wire(r.goal.as_ref(), board.shape()).map_err(invalid)?;
        let requested = heuristic_from_wire(r.heuristic).map_err(invalid)?;
        match requested {
            // Whether some worker has the tables is settled later, by `choose`.
            Some(HeuristicKind::Pdb) if !Solver::pdb_serves_goal(&goal) => {
                return Err(Status::invalid_argument(
                    "pattern databases serve goals with the blank on the first or last cell only",
                ));
            }
            Some(HeuristicKind::Pdb) | None => {}
            Some(kind) if !kind.supports(board.shape()) => {
                return Err(Status::invalid_argument(format!(
                    "heuristic {kind} does not support {} boards",
                    board.shape()
                )));
            }
            Some(_) => {}
        }
        let key =
            BoardKey::new(&board, &goal).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let limits = [
            transport,
            (r.timeout_ms > 0).then(|| Duration::from_millis(r.timeout_ms)),
        ];
        let deadline = limits
            .into_iter()
            .flatten()
            .min()
            // A deadline past what the clock can hold is no deadline.
            .and_then(|d| Instant::now().checked_add(d));
        Ok(Puzzle {
            board,
            goal,
            requested,
            key,
            deadline,
            skip_cache: r.skip_cache,
        })
    }

    /// Answers without a search when it can: unsolvable, or in the cache.
    fn immediate(&self, p: &Puzzle) -> Option<v1::SolveResponse> {
        if !p.goal.can_reach(&p.board).unwrap_or(false) {
            return Some(response(v1::Outcome::Unsolvable));
        }
        if p.skip_cache {
            return None;
        }
        let found = self.cache.get(&p.board, &p.goal);
        let counter = if found.is_some() {
            crate::metrics::CACHE_HITS
        } else {
            crate::metrics::CACHE_MISSES
        };
        metrics::counter!(counter).increment(1);
        let path = found?;
        Some(v1::SolveResponse {
            length: path.len() as u32,
            moves: moves_to_wire(&path),
            cached: true,
            ..response(v1::Outcome::Solved)
        })
    }

    /// The heuristic for `p`, from what the workers connected now serve (see
    /// [`choose_heuristic`]). `HEURISTIC_PDB` with no worker connected at all first waits for
    /// one, as any request that needs workers does (until the deadline or `unavailable_after`);
    /// with workers connected and none holding tables for the shape it is `FAILED_PRECONDITION`.
    async fn choose(&self, p: &Puzzle, started: Instant) -> Result<HeuristicKind, Status> {
        if p.requested == Some(HeuristicKind::Pdb) {
            let mut membership = self.cluster.watch_membership();
            let patience = started + self.config.unavailable_after;
            let give_up = p.deadline.map_or(patience, |d| d.min(patience));
            while membership.borrow_and_update().workers == 0 {
                tokio::select! {
                    changed = membership.changed() => {
                        if changed.is_err() {
                            return Err(Status::unavailable("the coordinator is shutting down"));
                        }
                    }
                    _ = tokio::time::sleep_until(give_up.into()) => return Err(no_worker(started)),
                }
            }
        }
        choose_heuristic(p.requested, &p.goal, &self.cluster.membership().pdb_shapes)
            .map_err(|e| Status::failed_precondition(e.to_string()))
    }

    /// Joins the search for `p` with `heuristic`, starting it if none is running.
    fn join(self: &Arc<Self>, p: &Puzzle, heuristic: HeuristicKind) -> WaiterGuard {
        let key = (p.key, heuristic);
        let joined = self.flights.join(key, || {
            let (state, _) = watch::channel(FlightState::default());
            let job = JobId(self.cluster.next_id());
            let flight = Flight {
                job,
                board: p.board,
                goal: p.goal,
                started: Instant::now(),
                heuristic,
                shape: p.board.shape(),
                state,
                cancelled: Arc::new(AtomicBool::new(false)),
            };
            (job, flight)
        });
        if joined.started {
            let shared = Arc::clone(self);
            let (board, goal) = (p.board, p.goal);
            let f = Arc::clone(&joined.flight);
            tokio::spawn(async move { shared.drive(f, board, goal, heuristic, key).await });
        }
        WaiterGuard {
            shared: Arc::clone(self),
            key,
            flight: joined.flight,
        }
    }

    /// Follows the search for `p` to its answer: joins a flight with `heuristic` (telling
    /// `joined`), waits, and for an AUTO request whose tables went away, joins one with the
    /// heuristic the workers still serve.
    async fn follow(
        self: &Arc<Self>,
        p: &Puzzle,
        mut heuristic: HeuristicKind,
        started: Instant,
        mut joined: impl FnMut(&Flight),
        mut progress: impl FnMut(&FlightState),
    ) -> Answer {
        loop {
            let guard = self.join(p, heuristic);
            joined(&guard.flight);
            match self.wait(&guard, p, started, &mut progress).await {
                Waited::Answer(answer) => return answer,
                Waited::Fallback(kind) => {
                    tracing::info!(
                        job = guard.flight.job.0,
                        from = %heuristic,
                        to = %kind,
                        "no connected worker serves the tables any more; searching on with another heuristic"
                    );
                    heuristic = kind;
                }
            }
        }
    }

    /// Runs one flight to its end and publishes the end to its waiters.
    async fn drive(
        self: Arc<Self>,
        flight: Arc<Flight>,
        board: Board,
        goal: Goal,
        heuristic: HeuristicKind,
        key: FlightKey,
    ) {
        let span = tracing::info_span!("job", job = flight.job.0, board = %board);
        let end =
            tracing::Instrument::instrument(self.search(&flight, board, goal, heuristic), span)
                .await;
        if let FlightEnd::Solved { path, .. } = &end {
            if self.cache.insert(&board, &goal, path)
                && let Some(store) = &self.store
                && !store.save(crate::store::Answer {
                    board,
                    goal,
                    path: path.clone(),
                })
            {
                metrics::counter!(crate::metrics::STORE_DROPPED).increment(1);
            }
            metrics::gauge!(crate::metrics::CACHE_ENTRIES).set(self.cache.len() as f64);
        }
        self.flights.end(key, flight.job);
        self.remember(&flight, 0, &end);
        flight.state.send_modify(|s| s.end = Some(end));
    }

    async fn search(
        &self,
        flight: &Flight,
        board: Board,
        goal: Goal,
        heuristic: HeuristicKind,
    ) -> FlightEnd {
        // The coordinator holds no pattern databases: its own searches use the best it has.
        let own = match heuristic {
            HeuristicKind::Pdb => HeuristicKind::best_for(board.shape()),
            kind => kind,
        };
        let solver = match self.solver(goal, own) {
            Ok(s) => s,
            Err(e) => return FlightEnd::Failed(e.message().to_string()),
        };
        // Boards the exact tables cover are solved here at once. Everything else goes whole to a
        // worker slot (the scheduler cuts it only when slots would idle): the coordinator
        // searches nothing while a worker can. With no worker that could search it, a serial
        // probe with a node budget answers easy boards here, and the rest is cut into units
        // that wait for a worker.
        let exact = HeuristicKind::Exact.supports(board.shape());
        if !exact
            && self
                .cluster
                .membership()
                .can_serve(heuristic, board.shape())
        {
            let spec = JobSpec::whole(flight.job, goal, heuristic, solver, board);
            tracing::debug!(%heuristic, "submitted whole");
            return self.distribute(flight, spec, heuristic, 0).await;
        }
        let budget = (!exact).then_some(self.config.probe_nodes);
        let cancel = Arc::clone(&flight.cancelled);
        let probe_solver = Arc::clone(&solver);
        let probe = tokio::task::spawn_blocking(move || {
            let limits = Limits {
                cancel: Some(&cancel),
                node_budget: budget,
                ..Limits::default()
            };
            probe_solver.solve(&board, &limits)
        })
        .await;
        if let Ok(Ok(report)) = &probe {
            crate::metrics::nodes("coordinator", report.stats.expanded);
        }
        let probe_nodes = match probe {
            Ok(Ok(report)) => match report.outcome {
                SearchOutcome::Solved(path) => {
                    return FlightEnd::Solved {
                        path,
                        nodes: report.stats.expanded,
                        stats: None,
                        heuristic: own,
                    };
                }
                SearchOutcome::Cancelled => return FlightEnd::Cancelled { lower_bound: 0 },
                SearchOutcome::BudgetExceeded => report.stats.expanded,
                other => return FlightEnd::Failed(format!("probe ended with {other:?}")),
            },
            Ok(Err(e)) => return FlightEnd::Failed(e.to_string()),
            Err(e) => return FlightEnd::Failed(format!("probe task failed: {e}")),
        };
        // Distribute: many more units than slots, so that the pull model balances the load.
        let slots = self.cluster.stats().await.slots.max(1);
        let min_units = slots * self.config.units_per_slot;
        let frontier_solver = Arc::clone(&solver);
        let frontier =
            match tokio::task::spawn_blocking(move || frontier_solver.frontier(&board, min_units))
                .await
            {
                Ok(Ok(f)) => f,
                Ok(Err(e)) => return FlightEnd::Failed(e.to_string()),
                Err(e) => return FlightEnd::Failed(format!("frontier task failed: {e}")),
            };
        if let Some(path) = frontier.solved {
            return FlightEnd::Solved {
                path,
                nodes: probe_nodes,
                stats: None,
                heuristic: own,
            };
        }
        let units = frontier.units.len() as u32;
        tracing::info!(units, depth = frontier.depth, %heuristic, "distributing");
        let spec = JobSpec {
            id: flight.job,
            goal,
            heuristic,
            solver,
            root: board,
            units: frontier.units,
            whole: false,
        };
        self.distribute(flight, spec, heuristic, probe_nodes).await
    }

    /// Submits a job to the scheduler and follows it to its end, publishing its progress.
    async fn distribute(
        &self,
        flight: &Flight,
        spec: JobSpec,
        heuristic: HeuristicKind,
        probe_nodes: u64,
    ) -> FlightEnd {
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.cluster.submit(spec, tx);
        // A waiter may have left while the probe ran: cancel what was just submitted.
        if flight.cancelled.load(Ordering::Acquire) {
            self.cluster.cancel(flight.job);
        }
        while let Some(event) = rx.recv().await {
            match event {
                JobEvent::Progress {
                    bound,
                    nodes,
                    units_done,
                    units_total,
                    finished,
                } => flight.state.send_modify(|s| {
                    if s.bounds.last() != Some(&bound) && s.bounds.len() < MAX_BOUNDS {
                        s.bounds.push(bound);
                    }
                    s.bound = bound;
                    s.nodes = nodes + probe_nodes;
                    s.units_done = units_done;
                    s.units_total = units_total;
                    s.bound_finished = finished;
                }),
                JobEvent::Finished { outcome, stats } => {
                    tracing::info!(
                        nodes = stats.nodes,
                        units = stats.units,
                        splits = stats.splits,
                        requeued = stats.requeued,
                        "job finished"
                    );
                    return match outcome {
                        JobOutcome::Solved { path } => FlightEnd::Solved {
                            path,
                            nodes: stats.nodes + probe_nodes,
                            stats: Some(stats),
                            heuristic,
                        },
                        JobOutcome::Cancelled { lower_bound } => {
                            FlightEnd::Cancelled { lower_bound }
                        }
                    };
                }
            }
        }
        // The cluster task ended: the coordinator is shutting down.
        FlightEnd::ShuttingDown {
            lower_bound: flight.state.borrow().bound,
        }
    }

    /// Waits for a flight's end (or the deadline), reporting each state change to `progress`.
    async fn wait(
        &self,
        guard: &WaiterGuard,
        p: &Puzzle,
        started: Instant,
        mut progress: impl FnMut(&FlightState),
    ) -> Waited {
        let flight = &guard.flight;
        let deadline = p.deadline;
        let mut rx = flight.state.subscribe();
        let check = Duration::from_millis(200);
        let mut no_workers_since: Option<Instant> = None;
        loop {
            {
                let state = rx.borrow_and_update();
                if let Some(end) = &state.end {
                    return Waited::Answer(self.finish(end, started));
                }
                progress(&state);
            }
            let now = Instant::now();
            // No worker that could search this job's units (none at all, or none with pattern
            // databases for a PDB job's shape): the units wait in the queue, for a while.
            let membership = self.cluster.membership();
            if !membership.can_serve(flight.heuristic, flight.shape) {
                if p.requested.is_none()
                    && membership.workers > 0
                    && let Ok(kind) = choose_heuristic(None, &p.goal, &membership.pdb_shapes)
                    && kind != flight.heuristic
                {
                    return Waited::Fallback(kind);
                }
                let since = *no_workers_since.get_or_insert(now);
                let waited = now - since;
                let deadline_passed = deadline.is_some_and(|d| now >= d);
                if deadline_passed || waited >= self.config.unavailable_after {
                    if membership.workers == 0 {
                        return Waited::Answer(Err(no_worker(started)));
                    }
                    return Waited::Answer(Err(Status::unavailable(format!(
                        "no connected worker has pattern databases for {} boards any more (waited {:.1} s); restart a worker that has them",
                        flight.shape,
                        (now - started).as_secs_f64()
                    ))));
                }
            } else {
                no_workers_since = None;
            }
            if let Some(d) = deadline
                && now >= d
            {
                let state = rx.borrow();
                return Waited::Answer(Ok(v1::SolveResponse {
                    lower_bound: state.bound,
                    nodes: state.nodes,
                    millis: started.elapsed().as_secs_f64() * 1e3,
                    error: "deadline exceeded before an optimal answer was proven".into(),
                    ..response(v1::Outcome::DeadlineExceeded)
                }));
            }
            let wake = deadline.map_or(now + check, |d| d.min(now + check));
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Waited::Answer(Err(Status::internal("the search stopped without an answer")));
                    }
                }
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    fn finish(&self, end: &FlightEnd, started: Instant) -> Answer {
        let millis = started.elapsed().as_secs_f64() * 1e3;
        match end {
            FlightEnd::Solved {
                path,
                nodes,
                stats,
                heuristic,
            } => {
                let mut r = v1::SolveResponse {
                    moves: moves_to_wire(path),
                    length: path.len() as u32,
                    nodes: *nodes,
                    millis,
                    heuristic_used: heuristic_to_wire(*heuristic) as i32,
                    ..response(v1::Outcome::Solved)
                };
                if let Some(s) = stats {
                    r.units = s.units as u32;
                    r.splits = s.splits as u32;
                    r.requeued = s.requeued as u32;
                    let mut per_worker: Vec<(u64, u64)> =
                        s.worker_nodes.iter().map(|(&w, &n)| (w.0, n)).collect();
                    per_worker.sort_unstable();
                    r.worker_nodes = per_worker.into_iter().map(|(_, n)| n).collect();
                }
                Ok(r)
            }
            FlightEnd::Cancelled { lower_bound } => Ok(v1::SolveResponse {
                lower_bound: *lower_bound,
                millis,
                ..response(v1::Outcome::Cancelled)
            }),
            FlightEnd::ShuttingDown { lower_bound } => Err(Status::unavailable(format!(
                "the coordinator is shutting down; the search stopped before an optimal answer was proven (lower bound {lower_bound}); retry"
            ))),
            FlightEnd::Failed(e) => Err(Status::internal(e.clone())),
        }
    }

    /// `UNAVAILABLE` once the coordinator is shutting down: during the drain, searches already
    /// running go on (until the drain ends and they are stopped), new requests go elsewhere.
    fn refuse_while_draining(&self) -> Result<(), Status> {
        if self.draining.is_cancelled() {
            return Err(Status::unavailable(
                "the coordinator is shutting down and takes no new requests; retry on another coordinator",
            ));
        }
        Ok(())
    }

    /// One `Solve`, whichever way it came (gRPC, or the HTTP API of [`crate::http`]): validated,
    /// answered at once if it can be, else admitted (for `client`) and followed to its answer.
    /// `transport` is the deadline the transport set, if any.
    pub(crate) async fn solve(
        self: &Arc<Self>,
        request: &v1::SolveRequest,
        transport: Option<Duration>,
        client: Option<IpAddr>,
    ) -> Answer {
        let started = Instant::now();
        let answer = self.answer(request, transport, client, started).await;
        self.activity.record(started.elapsed());
        answer
    }

    async fn answer(
        self: &Arc<Self>,
        request: &v1::SolveRequest,
        transport: Option<Duration>,
        client: Option<IpAddr>,
        started: Instant,
    ) -> Answer {
        self.refuse_while_draining()?;
        let puzzle = self.validate(request, transport)?;
        if let Some(mut r) = self.immediate(&puzzle) {
            r.millis = started.elapsed().as_secs_f64() * 1e3;
            return Ok(r);
        }
        let _admission = self.admit(client)?;
        let heuristic = self.choose(&puzzle, started).await?;
        self.follow(&puzzle, heuristic, started, |_| {}, |_| {})
            .await
    }
}

/// The client-facing service.
#[derive(Clone)]
pub struct SolverService {
    pub shared: Arc<Shared>,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<v1::SolveEvent, Status>> + Send>>;

#[tonic::async_trait]
impl SolverRpc for SolverService {
    async fn solve(
        &self,
        request: Request<v1::SolveRequest>,
    ) -> Result<Response<v1::SolveResponse>, Status> {
        let mut metric = RequestMetric::start("Solve");
        let answer = self
            .shared
            .solve(
                request.get_ref(),
                grpc_timeout(&request),
                client_address(&request),
            )
            .await;
        metric.finish(&answer);
        answer.map(Response::new)
    }

    type SolveStreamStream = EventStream;

    async fn solve_stream(
        &self,
        request: Request<v1::SolveRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let started = Instant::now();
        let mut metric = RequestMetric::start("SolveStream");
        let shared = Arc::clone(&self.shared);
        shared
            .refuse_while_draining()
            .inspect_err(|e| metric.failed(e))?;
        let puzzle = shared
            .validate(request.get_ref(), grpc_timeout(&request))
            .inspect_err(|e| metric.failed(e))?;
        let (tx, rx) = mpsc::channel(16);
        let event = |e| v1::SolveEvent { event: Some(e) };
        if let Some(mut r) = shared.immediate(&puzzle) {
            r.millis = started.elapsed().as_secs_f64() * 1e3;
            let answer = Ok(r);
            metric.finish(&answer);
            shared.activity.record(started.elapsed());
            let _ = tx.try_send(answer.map(|r| event(v1::solve_event::Event::Result(r))));
            return Ok(Response::new(Box::pin(ReceiverStream::new(rx))));
        }
        let admission = shared
            .admit(client_address(&request))
            .inspect_err(|e| metric.failed(e))?;
        let heuristic = shared
            .choose(&puzzle, started)
            .await
            .inspect_err(|e| metric.failed(e))?;
        tokio::spawn(async move {
            let mut last = (0u32, false);
            let (queued_tx, progress_tx) = (tx.clone(), tx.clone());
            let following = shared.follow(
                &puzzle,
                heuristic,
                started,
                |flight| {
                    let running_jobs = shared.flights.len() as u32;
                    let _ =
                        queued_tx.try_send(Ok(event(v1::solve_event::Event::Queued(v1::Queued {
                            job: flight.job.0,
                            running_jobs,
                        }))));
                },
                |s| {
                    // Only bound changes and bound completions (at most two events per bound,
                    // never per node). The flight's state is a watch channel, so bounds that
                    // pass while this task is busy are coalesced into the latest, and
                    // `try_send` drops an event rather than queue it for a client that does
                    // not read.
                    if s.bound > 0 && (s.bound, s.bound_finished) != last {
                        last = (s.bound, s.bound_finished);
                        let _ = progress_tx.try_send(Ok(event(v1::solve_event::Event::Bound(
                            v1::BoundProgress {
                                bound: s.bound,
                                nodes: s.nodes,
                                units_done: s.units_done as u32,
                                units_total: s.units_total as u32,
                                finished: s.bound_finished,
                            },
                        ))));
                    }
                },
            );
            // A client that goes away drops the receiver: stop waiting (leaving the flight
            // cancels it if no one else waits).
            let answer = tokio::select! {
                a = following => a,
                _ = tx.closed() => return,
            };
            metric.finish(&answer);
            shared.activity.record(started.elapsed());
            let item = answer.map(|r| event(v1::solve_event::Event::Result(r)));
            let _ = tx.send(item).await;
            drop(admission);
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn stats(
        &self,
        _: Request<v1::StatsRequest>,
    ) -> Result<Response<v1::StatsResponse>, Status> {
        Ok(Response::new(self.shared.stats().await))
    }
}

/// A search running now, as `GET /api/v1/searches` and the console show it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SearchView {
    pub job: JobId,
    /// The board and the goal, as space-separated tiles (`0`: the blank).
    pub board: String,
    pub goal: String,
    pub heuristic: String,
    /// The bound searched now, and every bound so far (0 and none before the first).
    pub bound: u32,
    pub bounds: Vec<u32>,
    pub units_done: usize,
    pub units_total: usize,
    pub nodes: u64,
    /// Since the search started.
    pub elapsed_ms: u64,
    /// Requests waiting for its answer.
    pub waiters: usize,
}

/// `flight` as the console shows it, with `waiters` waiting for it.
fn view(flight: &Flight, waiters: usize) -> SearchView {
    let state = flight.state.borrow();
    SearchView {
        job: flight.job,
        board: flight.board.to_string(),
        goal: flight.goal.board().to_string(),
        heuristic: flight.heuristic.to_string(),
        bound: state.bound,
        bounds: state.bounds.clone(),
        units_done: state.units_done,
        units_total: state.units_total,
        nodes: state.nodes,
        elapsed_ms: flight.started.elapsed().as_millis() as u64,
        waiters,
    }
}

impl Shared {
    /// The searches running now, oldest first.
    pub fn searches(&self) -> Vec<SearchView> {
        let mut views: Vec<SearchView> = self
            .flights
            .snapshot()
            .into_iter()
            .map(|(flight, waiters)| view(&flight, waiters))
            .collect();
        views.sort_unstable_by_key(|v| v.job);
        views
    }

    /// The last searches to end, oldest first.
    pub fn finished(&self) -> Vec<FinishedView> {
        let recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.iter().cloned().collect()
    }

    /// Keeps `flight`'s end for [`Shared::finished`].
    fn remember(&self, flight: &Flight, waiters: usize, end: &FlightEnd) {
        let (outcome, moves) = match end {
            FlightEnd::Solved { path, .. } => ("solved", Some(moves_to_wire(path))),
            FlightEnd::Cancelled { .. } => ("cancelled", None),
            FlightEnd::ShuttingDown { .. } => ("stopped", None),
            FlightEnd::Failed(_) => ("failed", None),
        };
        let mut search = view(flight, waiters);
        if let FlightEnd::Solved { nodes, .. } = end {
            search.nodes = *nodes;
        }
        let finished = FinishedView {
            search,
            outcome,
            moves,
            ended_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        };
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if recent.len() >= MAX_RECENT {
            recent.pop_front();
        }
        recent.push_back(finished);
    }

    /// What `Stats` reports (and `GET /api/v1/stats`): the cluster, the searches, the cache.
    pub(crate) async fn stats(&self) -> v1::StatsResponse {
        let c = self.cluster.stats().await;
        let cache = &self.cache;
        let (hits, misses) = (cache.hits(), cache.misses());
        v1::StatsResponse {
            workers: c.workers as u32,
            slots: c.slots as u32,
            running_jobs: self.flights.len() as u32,
            queue_depth: c.queue_depth as u32,
            cache_entries: cache.len() as u64,
            cache_hits: hits,
            cache_misses: misses,
            cache_hit_rate: if hits + misses > 0 {
                hits as f64 / (hits + misses) as f64
            } else {
                0.0
            },
            busy_slots: c.busy_slots as u64,
            late_nodes: c.late_nodes,
        }
    }
}

/// The worker-facing service.
#[derive(Clone)]
pub struct ClusterService {
    pub shared: Arc<Shared>,
}

/// The most nodes one result may claim.
const MAX_REPORTED_NODES: u64 = 1 << 48;

fn result_from_wire(r: v1::UnitResult) -> UnitResult {
    let status = v1::UnitStatus::try_from(r.status).unwrap_or(v1::UnitStatus::Unspecified);
    let report = match status {
        v1::UnitStatus::Found => match moves_from_wire(&r.moves) {
            Ok(moves) => Report::Found(moves),
            Err(e) => Report::Failed(format!("unreadable path: {e}")),
        },
        v1::UnitStatus::Exhausted => Report::Exhausted {
            next_bound: r.next_bound,
        },
        v1::UnitStatus::Cancelled => Report::Cancelled,
        v1::UnitStatus::BudgetExceeded => Report::BudgetExceeded,
        v1::UnitStatus::Split => {
            let pieces: Result<Vec<HandedBack>, _> = r
                .pieces
                .iter()
                .map(|p| moves_from_wire(&p.moves).map(|moves| HandedBack { moves, f: p.f }))
                .collect();
            match pieces {
                Ok(pieces) => Report::Split {
                    bound: r.bound,
                    next_bound: if r.next_bound == 0 {
                        u32::MAX
                    } else {
                        r.next_bound
                    },
                    pieces,
                },
                Err(e) => Report::Failed(format!("unreadable piece: {e}")),
            }
        }
        v1::UnitStatus::Unsupported => Report::Unsupported(r.error),
        v1::UnitStatus::Failed | v1::UnitStatus::Unspecified => Report::Failed(r.error),
    };
    UnitResult {
        job: JobId(r.job),
        epoch: r.epoch,
        task: TaskId(r.unit),
        report,
        // No search runs long enough to expand more (2^48 is days at any rate); a larger count
        // would only overflow the totals it is added to.
        expanded: r.expanded.min(MAX_REPORTED_NODES),
        iterations: r
            .iterations
            .iter()
            .take(npuzzle_solver::MAX_DEPTH)
            .map(|i| (i.bound, i.expanded))
            .collect(),
    }
}

#[tonic::async_trait]
impl Cluster for ClusterService {
    type JoinStream = UnboundedReceiverStream<Result<v1::CoordinatorMessage, Status>>;

    async fn join(
        &self,
        request: Request<Streaming<v1::WorkerMessage>>,
    ) -> Result<Response<Self::JoinStream>, Status> {
        let address = request.remote_addr().map(|a| a.ip());
        let admitted = self
            .shared
            .cluster
            .quarantine()
            .admit_join(address, Instant::now());
        if let Err(wait) = admitted {
            return Err(exhausted(
                format!(
                    "too many joins from this address (at most {} a second); retry later",
                    crate::quarantine::JOINS_PER_SECOND
                ),
                wait,
            ));
        }
        let mut inbound = request.into_inner();
        let patience = self.shared.config.hello_timeout;
        let first = tokio::time::timeout(patience, inbound.message())
            .await
            .map_err(|_| {
                Status::deadline_exceeded(format!(
                    "no hello within {:.1} s of joining; a worker's first message must be hello",
                    patience.as_secs_f64()
                ))
            })?;
        let hello = match first? {
            Some(v1::WorkerMessage {
                message: Some(v1::worker_message::Message::Hello(h)),
            }) => h,
            _ => {
                return Err(Status::invalid_argument(
                    "a worker's first message must be hello",
                ));
            }
        };
        let config = &self.shared.config;
        let cluster = self.shared.cluster.clone();
        let id = WorkerId(cluster.next_id());
        let slots = (hello.slots as usize).clamp(1, config.max_slots_per_worker.max(1));
        // Names and versions are logged: cut to a length logs can carry.
        let name: String = hello.worker_id.chars().take(64).collect();
        let version: String = hello.version.chars().take(32).collect();
        let origin = Origin::new(address, &name);
        let now = Instant::now();
        let revoked = {
            let mut quarantine = cluster.quarantine();
            quarantine.purge(now);
            if let Some(left) = quarantine.refuses(&origin, now) {
                return Err(Status::permission_denied(format!(
                    "worker {origin} was dropped for misbehaving (forged results, or failing unit after unit) and is quarantined for another {} s; check its logs",
                    left.as_secs() + 1
                )));
            }
            quarantine.revoked(&origin, now)
        };
        let stream = WorkerStream(Arc::clone(&self.shared.worker_streams));
        if stream.0.fetch_add(1, Ordering::AcqRel) >= config.max_workers {
            return Err(Status::resource_exhausted(format!(
                "the coordinator already has its limit of {} workers connected",
                config.max_workers
            )));
        }
        let mut capabilities = Capabilities::default();
        let mut ignored = 0usize;
        let mut first_error = None;
        // A worker holds at most one set of tables per shape: there are 16 shapes.
        for db in hello.pattern_databases.iter().take(16) {
            match pattern_database_from_wire(db) {
                Ok(partition) => {
                    capabilities.pdb_shapes.insert(partition.shape);
                }
                // Not fatal: the worker serves everything else.
                Err(e) => {
                    ignored += 1;
                    first_error.get_or_insert(e.to_string());
                }
            }
        }
        ignored += hello.pattern_databases.len().saturating_sub(16);
        // Tables it claimed and then refused to search with, not long ago.
        capabilities.pdb_shapes.retain(|s| !revoked.contains(s));
        if ignored > 0 {
            // One line per hello, whatever it holds.
            let error: String = first_error.unwrap_or_default().chars().take(200).collect();
            tracing::warn!(worker = id.0, %name, ignored, first_error = %error, "ignoring pattern databases in hello");
        }
        tracing::info!(worker = id.0, %name, slots, %version, pattern_databases = hello.pattern_databases.len(), "hello");
        let (tx, rx) = mpsc::unbounded_channel();
        cluster.worker_joined(id, origin, slots, capabilities, tx);
        tokio::spawn(async move {
            let _counted = stream;
            // The stream ends (or breaks) when the worker goes away.
            while let Ok(Some(msg)) = inbound.message().await {
                match msg.message {
                    Some(v1::worker_message::Message::Result(r)) => {
                        cluster.result(id, result_from_wire(r))
                    }
                    Some(v1::worker_message::Message::Heartbeat(_)) => cluster.heartbeat(id),
                    Some(v1::worker_message::Message::Hello(_)) | None => {}
                }
            }
            cluster.worker_left(id);
        });
        Ok(Response::new(UnboundedReceiverStream::new(rx)))
    }
}
