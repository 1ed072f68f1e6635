//! The solve pipeline: one path for `Solve`, `SolveStream` and `POST /api/v1/solve`, with no
//! tonic in it. What it refuses is a [`SolveError`]; the edges map that to a gRPC status
//! (`service.rs`) and to an HTTP status code and body (`http.rs`).
//!
//! A request is, in order: refused while the coordinator drains; validated (its deadline
//! settled); answered at once if it can be (unsolvable, cached); admitted under the search
//! limits; given its heuristic from what the connected workers hold (see
//! [`crate::scheduler::choose_heuristic`]: pattern databases only where some worker has tables
//! for the board's shape); and followed to its answer through a flight (`searches.rs`), an
//! identical search already running or a new one. [`Pipeline::begin`] takes the
//! steps up to the search, [`Pipeline::follow`] the rest, and [`Pipeline::solve`] both:
//! `SolveStream` calls the two halves itself, so that it can answer at once and then report the
//! search as it goes. The [`Pipeline`] is what the gRPC services and the HTTP API share, one per
//! coordinator; detached jobs (`jobs/`) are its clients too.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use tokio::time::Instant;

use npuzzle_proto::{
    WireError, board_from_wire, goal_from_wire, heuristic_from_wire, heuristic_to_wire,
    moves_to_wire, v1,
};
use npuzzle_solver::{
    BadWeight, Board, BoardKey, Goal, HeuristicKind, Shape, ShapeMismatch, Solver, Weight,
};

use tokio_util::sync::CancellationToken;

use crate::Config;
use crate::console::Activity;
use crate::flights::{Admission, Admissions, Refusal};
use crate::scheduler::{ClientId, HeuristicUnavailable, choose_heuristic};
use crate::scheduler_actor::SchedulerHandle;
use crate::searches::{Flight, FlightEnd, FlightState, Searches, WaiterGuard};

/// How long a request refused for the search limits is told to wait before it retries.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Why a request got no answer, in the words its client reads (each edge keeps the message and
/// picks the code that means it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SolveError {
    /// The coordinator is draining: searches already running go on, new requests go elsewhere.
    #[error(
        "the coordinator is shutting down and takes no new requests; retry on another coordinator"
    )]
    Draining,
    /// The request does not describe a puzzle that can be searched as asked.
    #[error(transparent)]
    Invalid(#[from] InvalidRequest),
    /// The search limits are reached, in all or for this client: retry after `retry_after`.
    #[error("{refusal}")]
    Busy {
        refusal: Refusal,
        retry_after: Duration,
    },
    /// Pattern databases were asked for, and no connected worker has them for the board's shape.
    #[error(transparent)]
    NoTables(#[from] HeuristicUnavailable),
    /// The search needs a worker, and none was connected for `waited`.
    #[error(
        "no worker is connected to the coordinator (waited {:.1} s); start npuzzle-worker --coordinator URL",
        .waited.as_secs_f64()
    )]
    NoWorker { waited: Duration },
    /// The search's pattern databases for `shape` left with the workers that held them.
    #[error(
        "no connected worker has pattern databases for {shape} boards any more (waited {:.1} s); restart a worker that has them",
        .waited.as_secs_f64()
    )]
    TablesGone { shape: Shape, waited: Duration },
    /// The cluster stopped while the request waited for a worker to join.
    #[error("the coordinator is shutting down")]
    ShuttingDown,
    /// The coordinator stopped the search unfinished; it had proved `lower_bound`.
    #[error(
        "the coordinator is shutting down; the search stopped before an optimal answer was proven (lower bound {lower_bound}); retry"
    )]
    Stopped { lower_bound: u32 },
    /// The search itself failed (its solver, probe or frontier), as the message says.
    #[error("{0}")]
    Failed(String),
    /// The flight went away without an end.
    #[error("the search stopped without an answer")]
    Lost,
}

impl SolveError {
    /// The `outcome` label of the requests it ends, in the coordinator's metrics: one per
    /// gRPC code it maps to, and `busy` for a refusal past the search limits.
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            SolveError::Invalid(_) => "invalid",
            SolveError::NoTables(_) => "failed_precondition",
            SolveError::Busy { .. } => "busy",
            SolveError::Draining
            | SolveError::NoWorker { .. }
            | SolveError::TablesGone { .. }
            | SolveError::ShuttingDown
            | SolveError::Stopped { .. } => "unavailable",
            SolveError::Failed(_) | SolveError::Lost => "internal",
        }
    }
}

/// The `outcome` label of an answer in the coordinator's metrics: what the request ended with,
/// or why it was refused ([`SolveError::outcome`]).
pub(crate) fn outcome(answer: &Reply) -> &'static str {
    match answer {
        Ok(r) => response_outcome(r),
        Err(error) => error.outcome(),
    }
}

/// The `outcome` label of a response.
pub(crate) fn response_outcome(r: &v1::SolveResponse) -> &'static str {
    match v1::Outcome::try_from(r.outcome) {
        Ok(v1::Outcome::Solved) => "solved",
        Ok(v1::Outcome::Unsolvable) => "unsolvable",
        Ok(v1::Outcome::Cancelled) => "cancelled",
        Ok(v1::Outcome::DeadlineExceeded) => "deadline_exceeded",
        _ => "unknown",
    }
}

/// What is wrong with a request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InvalidRequest {
    /// The board, goal or heuristic does not decode.
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("pattern databases serve goals with the blank on the first or last cell only")]
    PdbGoal,
    #[error("heuristic {kind} does not support {shape} boards")]
    Unsupported { kind: HeuristicKind, shape: Shape },
    /// The goal is for another board shape.
    #[error(transparent)]
    ShapeMismatch(#[from] ShapeMismatch),
    /// `within` is not a factor the search can take.
    #[error("within: {0}")]
    Within(#[from] BadWeight),
}

/// What a request ends with: a response (solved, unsolvable, cancelled, deadline passed), or
/// why there is none.
pub(crate) type Reply = Result<v1::SolveResponse, SolveError>;

/// A validated request.
pub(crate) struct Puzzle {
    board: Board,
    goal: Goal,
    /// `None` for `HEURISTIC_AUTO`; settled by [`Pipeline::choose`].
    requested: Option<HeuristicKind>,
    pub(crate) key: BoardKey,
    deadline: Option<Instant>,
    skip_cache: bool,
    /// The factor of the optimum its answer may be ([`Weight::OPTIMAL`]: an optimal path).
    within: Weight,
}

/// Where [`Pipeline::begin`] left a request.
pub(crate) enum Begun {
    /// Answered without a search (unsolvable, or cached).
    Answered(v1::SolveResponse),
    /// Admitted to a search: follow it with [`Pipeline::follow`].
    Searching(Search),
}

/// A request admitted to a search. It holds the request's place under the search limits until
/// it is dropped.
pub(crate) struct Search {
    puzzle: Puzzle,
    /// The heuristic settled for it.
    heuristic: HeuristicKind,
    /// When the request came.
    started: Instant,
    /// Waits for a worker however long none is connected (a detached job), instead of giving
    /// up after [`crate::Config::unavailable_after`].
    patient: bool,
    /// Who its search counts for when the scheduler shares slots between clients.
    client: ClientId,
    _admission: Admission,
}

impl Search {
    /// Its puzzle's key.
    pub(crate) fn key(&self) -> BoardKey {
        self.puzzle.key
    }

    /// The same search, waiting for workers as long as it takes (see `jobs/`).
    pub(crate) fn patient(self) -> Search {
        Search {
            patient: true,
            ..self
        }
    }
}

/// How waiting on a flight ended.
enum Waited {
    Answer(Reply),
    /// The request asked for `HEURISTIC_AUTO`, the flight's pattern databases are served by no
    /// connected worker any more (one that claimed them refused its units), but connected
    /// workers serve this heuristic: search with it instead.
    Fallback(HeuristicKind),
}

fn response(outcome: v1::Outcome) -> v1::SolveResponse {
    v1::SolveResponse {
        outcome: outcome as i32,
        ..Default::default()
    }
}

/// The scheduler's name for a client: its address (the same one the search limits count
/// against), 0 when it has none.
fn client_id(client: Option<IpAddr>) -> ClientId {
    ClientId(match client {
        None => 0,
        Some(IpAddr::V4(a)) => u64::from(u32::from(a)),
        Some(IpAddr::V6(a)) => {
            let bits = u128::from(a);
            (bits >> 64) as u64 ^ bits as u64
        }
    })
}

fn millis_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

/// The solve pipeline and what it holds: shared by both services and the HTTP API.
pub struct Pipeline {
    pub config: Config,
    pub scheduler: SchedulerHandle,
    /// The searches running now, the cache they fill and its store.
    pub(crate) searches: Arc<Searches>,
    /// Places for requests that need a search (waiting or running): [`Config::max_searches`]
    /// in all, [`Config::max_searches_per_client`] per client address.
    pub(crate) admissions: Arc<Admissions>,
    /// Fired when the coordinator starts shutting down: from then on new requests are refused.
    pub(crate) draining: CancellationToken,
    /// Workers whose hello was accepted and whose stream is still open: [`Config::max_workers`].
    pub(crate) worker_streams: Arc<AtomicUsize>,
    /// Requests answered and their latency, for the console's charts (two atomic adds a
    /// request, whether or not a console is served).
    pub activity: Activity,
}

impl Pipeline {
    /// The pipeline over `searches`; `draining` fires when the coordinator starts to shut down.
    pub(crate) fn new(
        config: Config,
        searches: Arc<Searches>,
        scheduler: SchedulerHandle,
        draining: CancellationToken,
    ) -> Pipeline {
        Pipeline {
            admissions: Admissions::new(config.max_searches, config.max_searches_per_client),
            config,
            scheduler,
            searches,
            draining,
            worker_streams: Arc::new(AtomicUsize::new(0)),
            activity: Activity::default(),
        }
    }

    /// What `Stats` reports (and `GET /api/v1/stats`): the cluster, the searches, the cache.
    pub(crate) async fn stats(&self) -> v1::StatsResponse {
        let c = self.scheduler.stats().await;
        let cache = self.searches.cache();
        let (hits, misses) = (cache.hits(), cache.misses());
        v1::StatsResponse {
            workers: c.workers as u32,
            slots: c.slots as u32,
            running_jobs: self.searches.running() as u32,
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

    /// One request, whichever way it came (gRPC `Solve`, or the HTTP API): validated, answered
    /// at once if it can be, else admitted (for `client`) and followed to its answer.
    /// `transport` is the deadline the transport set, if any.
    pub(crate) async fn solve(
        self: &Arc<Self>,
        request: &v1::SolveRequest,
        transport: Option<Duration>,
        client: Option<IpAddr>,
    ) -> Reply {
        let started = Instant::now();
        let answer = match self.begin(request, transport, client, started).await {
            Ok(Begun::Answered(response)) => Ok(response),
            Ok(Begun::Searching(search)) => self.follow(&search, |_| {}, |_| {}).await,
            Err(e) => Err(e),
        };
        self.activity.record(started.elapsed());
        answer
    }

    /// The pipeline up to the search, for a request that came at `started`: refused while
    /// draining, validated, answered at once if it can be, else admitted (for `client`) and
    /// given its heuristic.
    pub(crate) async fn begin(
        &self,
        request: &v1::SolveRequest,
        transport: Option<Duration>,
        client: Option<IpAddr>,
        started: Instant,
    ) -> Result<Begun, SolveError> {
        self.refuse_while_draining()?;
        let puzzle = self.validate(request, transport)?;
        if let Some(mut r) = self.immediate(&puzzle) {
            r.millis = millis_since(started);
            return Ok(Begun::Answered(r));
        }
        let admission = self.admit(client)?;
        let heuristic = self.choose(&puzzle, started).await?;
        Ok(Begun::Searching(Search {
            puzzle,
            heuristic,
            started,
            patient: false,
            client: client_id(client),
            _admission: admission,
        }))
    }

    /// `Draining` once the coordinator is shutting down: during the drain, searches already
    /// running go on (until the drain ends and they are stopped), new requests go elsewhere.
    fn refuse_while_draining(&self) -> Result<(), SolveError> {
        if self.draining.is_cancelled() {
            return Err(SolveError::Draining);
        }
        Ok(())
    }

    /// Checks a request and settles its deadline: the sooner of `timeout_ms` and `transport`
    /// (the gRPC deadline; `None` over HTTP).
    pub(crate) fn validate(
        &self,
        r: &v1::SolveRequest,
        transport: Option<Duration>,
    ) -> Result<Puzzle, InvalidRequest> {
        let board = board_from_wire(r.board.as_ref())?;
        let goal = goal_from_wire(r.goal.as_ref(), board.shape())?;
        let requested = heuristic_from_wire(r.heuristic)?;
        match requested {
            // Whether some worker has the tables is settled later, by `choose`.
            Some(HeuristicKind::Pdb) if !Solver::pdb_serves_goal(&goal) => {
                return Err(InvalidRequest::PdbGoal);
            }
            Some(HeuristicKind::Pdb) | None => {}
            Some(kind) if !kind.supports(board.shape()) => {
                return Err(InvalidRequest::Unsupported {
                    kind,
                    shape: board.shape(),
                });
            }
            Some(_) => {}
        }
        let key = BoardKey::new(&board, &goal)?;
        let within = Weight::new(r.within)?;
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
            within,
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
        // An optimal request takes only a proven-optimal entry; one with a factor, any entry
        // within it of its proven bound.
        let found = self.searches.cache().get(&p.board, &p.goal, p.within);
        let counter = if found.is_some() {
            crate::metrics::CACHE_HITS
        } else {
            crate::metrics::CACHE_MISSES
        };
        metrics::counter!(counter).increment(1);
        let entry = found?;
        Some(v1::SolveResponse {
            length: entry.path.len() as u32,
            lower_bound: entry.lower_bound,
            optimal: entry.optimal(),
            moves: moves_to_wire(&entry.path),
            cached: true,
            ..response(v1::Outcome::Solved)
        })
    }

    /// A place for one more request that needs a search, from `client`, or `Busy` when
    /// [`crate::Config::max_searches`] are already waiting or running, or that client already
    /// has [`crate::Config::max_searches_per_client`]. Answers that need no search (cache hits,
    /// unsolvable and invalid boards) never take one, so they are still served under overload.
    fn admit(&self, client: Option<IpAddr>) -> Result<Admission, SolveError> {
        self.admissions
            .admit(client)
            .map_err(|refusal| SolveError::Busy {
                refusal,
                retry_after: RETRY_AFTER,
            })
    }

    /// The heuristic for `p`, from what the workers connected now serve (see
    /// [`choose_heuristic`]). `HEURISTIC_PDB` with no worker connected at all first waits for
    /// one, as any request that needs workers does (until the deadline or `unavailable_after`);
    /// with workers connected and none holding tables for the shape it is `NoTables`.
    async fn choose(&self, p: &Puzzle, started: Instant) -> Result<HeuristicKind, SolveError> {
        if p.requested == Some(HeuristicKind::Pdb) {
            let mut membership = self.scheduler.watch_membership();
            let patience = started + self.config.unavailable_after;
            let give_up = p.deadline.map_or(patience, |d| d.min(patience));
            while membership.borrow_and_update().workers == 0 {
                tokio::select! {
                    changed = membership.changed() => {
                        if changed.is_err() {
                            return Err(SolveError::ShuttingDown);
                        }
                    }
                    _ = tokio::time::sleep_until(give_up) => {
                        return Err(SolveError::NoWorker { waited: started.elapsed() });
                    }
                }
            }
        }
        Ok(choose_heuristic(
            p.requested,
            &p.goal,
            &self.scheduler.membership().pdb_shapes,
        )?)
    }

    /// Follows `search` to its answer: joins a flight with its heuristic (telling `joined`),
    /// waits (telling `progress` of each change), and for an AUTO request whose tables went
    /// away, joins one with the heuristic the workers still serve.
    pub(crate) async fn follow(
        self: &Arc<Self>,
        search: &Search,
        mut joined: impl FnMut(&Flight),
        mut progress: impl FnMut(&FlightState),
    ) -> Reply {
        let p = &search.puzzle;
        let mut heuristic = search.heuristic;
        loop {
            let guard = self.searches.join(
                (p.key, heuristic, p.within),
                p.board,
                p.goal,
                search.client,
                !p.skip_cache,
            );
            if let Some(deadline) = p.deadline {
                guard.flight.answer_by(deadline);
            }
            joined(&guard.flight);
            match self.wait(&guard, search, &mut progress).await {
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

    /// Waits for a flight's end (or the deadline), reporting each state change to `progress`.
    async fn wait(
        &self,
        guard: &WaiterGuard,
        search: &Search,
        mut progress: impl FnMut(&FlightState),
    ) -> Waited {
        let (p, started) = (&search.puzzle, search.started);
        let flight = &guard.flight;
        let deadline = p.deadline;
        let mut rx = flight.state.subscribe();
        let check = Duration::from_millis(200);
        let mut no_workers_since: Option<Instant> = None;
        loop {
            {
                let state = rx.borrow_and_update();
                if let Some(end) = &state.end {
                    return Waited::Answer(finish(end, started));
                }
                progress(&state);
            }
            let now = Instant::now();
            // No worker that could search this job's units (none at all, or none with pattern
            // databases for a PDB job's shape): the units wait in the queue, for a while.
            let membership = self.scheduler.membership();
            // Boards of at most 9 cells the coordinator solves itself, however long a loaded
            // host takes to run that task: never refused for want of a worker.
            let needs_workers = !HeuristicKind::Exact.supports(flight.shape);
            if needs_workers && !membership.can_serve(flight.heuristic, flight.shape) {
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
                let gave_up = !search.patient && waited >= self.config.unavailable_after;
                if deadline_passed || gave_up {
                    if membership.workers == 0 {
                        let waited = started.elapsed();
                        return Waited::Answer(Err(SolveError::NoWorker { waited }));
                    }
                    return Waited::Answer(Err(SolveError::TablesGone {
                        shape: flight.shape,
                        waited: now - started,
                    }));
                }
            } else {
                no_workers_since = None;
            }
            if let Some(d) = deadline
                && now >= d
            {
                let state = rx.borrow();
                // The best path found so far, if any: legal, not proven optimal.
                let incumbent = state.incumbent.as_deref().unwrap_or_default();
                return Waited::Answer(Ok(v1::SolveResponse {
                    lower_bound: state.lower_bound,
                    moves: moves_to_wire(incumbent),
                    length: incumbent.len() as u32,
                    nodes: state.nodes,
                    millis: millis_since(started),
                    error: if incumbent.is_empty() {
                        "deadline exceeded before an answer was found".into()
                    } else {
                        format!(
                            "deadline exceeded before an optimal answer was proven; the best path found has {} moves",
                            incumbent.len()
                        )
                    },
                    ..response(v1::Outcome::DeadlineExceeded)
                }));
            }
            let wake = deadline.map_or(now + check, |d| d.min(now + check));
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Waited::Answer(Err(SolveError::Lost));
                    }
                }
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }
}

/// The answer a flight's `end` gives a request that came at `started`.
fn finish(end: &FlightEnd, started: Instant) -> Reply {
    let millis = millis_since(started);
    match end {
        FlightEnd::Solved {
            path,
            nodes,
            stats,
            heuristic,
            optimal,
            lower_bound,
        } => {
            let mut r = v1::SolveResponse {
                moves: moves_to_wire(path),
                length: path.len() as u32,
                optimal: *optimal,
                lower_bound: *lower_bound,
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
        FlightEnd::ShuttingDown { lower_bound } => Err(SolveError::Stopped {
            lower_bound: *lower_bound,
        }),
        FlightEnd::Failed(e) => Err(SolveError::Failed(e.clone())),
    }
}

#[cfg(test)]
impl SolveError {
    /// One error of each kind, in the order the enum declares them: what the edges' tests map.
    pub(crate) fn one_of_each() -> Vec<SolveError> {
        let shape = npuzzle_solver::Shape::new(4, 4).unwrap();
        vec![
            SolveError::Draining,
            InvalidRequest::PdbGoal.into(),
            SolveError::Busy {
                refusal: Refusal::Coordinator { limit: 3 },
                retry_after: RETRY_AFTER,
            },
            HeuristicUnavailable::NoPatternDatabases { shape }.into(),
            SolveError::NoWorker {
                waited: Duration::from_millis(1500),
            },
            SolveError::TablesGone {
                shape,
                waited: Duration::from_secs(2),
            },
            SolveError::ShuttingDown,
            SolveError::Stopped { lower_bound: 41 },
            SolveError::Failed("probe task failed".into()),
            SolveError::Lost,
        ]
    }

    /// Each of [`SolveError::one_of_each`] with what an edge expects of it, given in that order.
    pub(crate) fn each_paired_with<T>(expected: Vec<T>) -> impl Iterator<Item = (SolveError, T)> {
        let errors = SolveError::one_of_each();
        assert_eq!(errors.len(), expected.len(), "one expectation per error");
        errors.into_iter().zip(expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use npuzzle_cluster::testing::korf::{korf, request};

    /// A pipeline over a cluster that no worker joins, as `run` builds it (no network).
    fn pipeline_without_workers(unavailable_after: Duration) -> Arc<Pipeline> {
        let config = Config {
            unavailable_after,
            incumbent_nodes: 0,
            ..Config::default()
        };
        let stop = CancellationToken::new();
        let scheduler = crate::scheduler_actor::spawn(
            config.scheduler.clone(),
            config.quarantine_for,
            config.tick,
            false,
            stop.clone(),
        );
        let searches = Arc::new(Searches::new(
            &config,
            crate::cache::Cache::new(1000),
            None,
            scheduler.clone(),
        ));
        Arc::new(Pipeline::new(config, searches, scheduler, stop))
    }

    /// The pipeline's waits run on tokio's clock, so paused time drives them: a minute of
    /// waiting for a worker passes in no time, and the request is refused exactly when its
    /// deadline (or, without one, `unavailable_after`) has passed.
    #[tokio::test(start_paused = true)]
    async fn with_no_worker_a_request_waits_its_deadline_or_unavailable_after_on_tokio_time() {
        let pipeline = pipeline_without_workers(Duration::from_secs(60));
        let (_, _, tiles) = korf(&[3]).remove(0);
        let mut req = request(&tiles, v1::GoalKind::BlankFirst);
        let real = std::time::Instant::now();
        for (timeout_ms, waits) in [(0, 60), (10_000, 10)] {
            req.timeout_ms = timeout_ms;
            let started = Instant::now();
            let reply = pipeline.solve(&req, None, None).await;
            let waited = started.elapsed();
            assert!(
                matches!(reply, Err(SolveError::NoWorker { .. })),
                "{reply:?}"
            );
            // Checked every 200 ms of the clock: refused within one check of its time.
            let expected = Duration::from_secs(waits);
            assert!(
                waited >= expected && waited <= expected + Duration::from_millis(400),
                "timeout {timeout_ms} ms: refused after {waited:?}"
            );
        }
        assert!(
            real.elapsed() < Duration::from_secs(20),
            "{:?}",
            real.elapsed()
        );
    }

    /// Each refusal is counted under its own outcome: a request refused past the search
    /// limits is `busy` (it was once counted as `internal`, from the gRPC status it became).
    #[test]
    fn each_refusal_is_counted_under_what_refused_it() {
        let expected = vec![
            "unavailable",
            "invalid",
            "busy",
            "failed_precondition",
            "unavailable",
            "unavailable",
            "unavailable",
            "unavailable",
            "internal",
            "internal",
        ];
        for (error, label) in SolveError::each_paired_with(expected) {
            assert_eq!(outcome(&Err(error.clone())), label, "{error:?}");
        }
        let solved = v1::SolveResponse {
            outcome: v1::Outcome::Solved as i32,
            ..Default::default()
        };
        assert_eq!(outcome(&Ok(solved)), "solved");
    }

    #[test]
    fn messages_say_what_to_do_in_the_words_clients_have_always_read() {
        let messages: Vec<String> = SolveError::one_of_each()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            messages[4],
            "no worker is connected to the coordinator (waited 1.5 s); start npuzzle-worker --coordinator URL"
        );
        assert_eq!(
            messages[5],
            "no connected worker has pattern databases for 4x4 boards any more (waited 2.0 s); restart a worker that has them"
        );
        assert!(
            messages[7].contains("(lower bound 41); retry"),
            "{}",
            messages[7]
        );
        assert_eq!(messages[2], Refusal::Coordinator { limit: 3 }.to_string());
    }
}
