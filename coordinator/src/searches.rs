//! The searches running now: [`Searches`] owns them (their table, [`crate::flights`], with who
//! waits on which), the solvers the coordinator searches with, the checkpoints a search resumes
//! from, the searches ended lately (for the console), the answer cache and its durable copy. One
//! task per search (a *flight*), shared by every identical request.
//!
//! A flight solves boards of at most 9 cells on the coordinator (exact tables), submits anything
//! larger to the scheduler as a whole job (it goes to one worker thread, and is cut only when
//! other threads would idle), and, only while no connected worker can search it, runs a serial
//! probe with a node budget and cuts what survives into units that wait for a worker. It
//! publishes its progress and its end in a watch channel its waiters read (the solve pipeline,
//! `solve.rs`, which this file never calls), caches what it solves, and is cancelled when its
//! last waiter leaves.
//!
//! The heuristic is settled before a flight starts (see `solve.rs`). The coordinator's own
//! searches (probe, frontier, splits, estimates) never use pattern databases; for a PDB job
//! they use linear conflict or exact.
//!
//! **Never empty-handed.** Beside the search, a flight of a board of more than 9 cells looks
//! for a legal path fast ([`Solver::quick_path`], within [`crate::Config::incumbent_nodes`]):
//! its *incumbent*, shown to its waiters with the proven lower bound, and the answer of a
//! request past its deadline. An incumbent no longer than the lower bound the search has proven
//! is optimal, and ends the search before its last bound; one within the request's factor
//! (`within`, [`Weight`]) answers a bounded-suboptimal request at once. For a waiter with a
//! deadline, weighted searches on the workers improve the incumbent ([`COMPANION_WEIGHTS`]).
//! Answers are cached with their lower bound (a bounded one serves only the factors it is
//! within; only proven-optimal ones go to the store), and so is the incumbent of a flight that
//! ends unfinished; a new flight starts from what the cache knows of its board (its incumbent
//! and its lower bound).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use dashmap::DashMap;
use npuzzle_solver::{
    Board, BoardKey, Goal, HeuristicKind, Limits, Move, QuickPath, SearchOutcome, Shape, Solver,
    UnsupportedHeuristic, Weight,
};
use tokio::sync::{mpsc, oneshot, watch};

use npuzzle_proto::moves_to_wire;

use crate::cache::Cache;
use crate::console::{FinishedView, Recent, SearchView};
use crate::flights::{FlightKey, Flights, Left};
use crate::progress::BoundTracker;
use crate::scheduler::{Checkpoint, ClientId, JobId, JobOutcome, JobSpec, JobStats};
use crate::scheduler_actor::{JobEvent, SchedulerHandle};
use crate::store::Writer;

/// Solvers (with their tables) kept at most; each custom goal needs its own.
const MAX_SOLVERS: usize = 64;

/// Bounds a flight keeps for the console: far more than any search goes through.
const MAX_BOUNDS: usize = 128;

/// One solver (and its tables) per goal and heuristic, at most [`MAX_SOLVERS`].
#[derive(Default)]
pub(crate) struct Solvers(DashMap<(Goal, HeuristicKind), Arc<Solver>>);

impl Solvers {
    /// The solver for `goal` with `kind`, made the first time it is asked for.
    fn get(&self, goal: Goal, kind: HeuristicKind) -> Result<Arc<Solver>, UnsupportedHeuristic> {
        if let Some(s) = self.0.get(&(goal, kind)) {
            return Ok(s.clone());
        }
        let solver = Arc::new(Solver::new(goal, kind)?);
        // Custom goals are unbounded in number: keep the tables' memory bounded too.
        if self.0.len() >= MAX_SOLVERS {
            self.0.clear();
        }
        self.0.insert((goal, kind), solver.clone());
        Ok(solver)
    }
}

/// How a flight ended.
#[derive(Clone, Debug)]
pub(crate) enum FlightEnd {
    Solved {
        path: Vec<Move>,
        nodes: u64,
        /// Set when workers took part.
        stats: Option<JobStats>,
        /// The heuristic of the search that found `path`.
        heuristic: HeuristicKind,
        /// Proven optimal (always, for a flight with no factor).
        optimal: bool,
        /// No path is shorter (`path.len()` when `optimal`).
        lower_bound: u32,
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
pub(crate) struct FlightState {
    pub bound: u32,
    /// Every bound searched so far, in order (the last is `bound`); at most [`MAX_BOUNDS`].
    pub bounds: Vec<u32>,
    pub nodes: u64,
    pub units_done: usize,
    pub units_total: usize,
    pub bound_finished: bool,
    /// The current bound's nodes and forecast.
    pub bounds_seen: BoundTracker,
    /// No path is shorter: proven by the bounds exhausted (the root's estimate at first).
    pub lower_bound: u32,
    /// The best legal path found so far, not proven optimal (see the module's docs).
    pub incumbent: Option<Vec<Move>>,
    pub end: Option<FlightEnd>,
}

/// A search running now, with what its waiters and the console read of it.
pub(crate) struct Flight {
    pub job: JobId,
    /// The puzzle, and when its search started: for the console.
    pub board: Board,
    pub goal: Goal,
    pub started: Instant,
    /// What the job's units are searched with, on boards of `shape`: which workers can serve it.
    pub heuristic: HeuristicKind,
    pub shape: Shape,
    /// Who the search counts for when slots are shared: the client that started it.
    pub client: ClientId,
    /// Its answer may be this factor of the optimum ([`Weight::OPTIMAL`]: none).
    pub weight: Weight,
    /// Starts from what the cache knows of the board (not for a request that skips the cache).
    from_cache: bool,
    pub state: watch::Sender<FlightState>,
    /// The earliest deadline of its waiters, if any has one: the incumbent is improved for it
    /// (see [`COMPANION_WEIGHTS`]).
    deadline: watch::Sender<Option<tokio::time::Instant>>,
    /// Raised when the last waiter leaves: stops the probe and any later submission.
    cancelled: Arc<AtomicBool>,
}

impl Flight {
    /// A waiter wants an answer by `deadline`: kept if it is the earliest.
    pub(crate) fn answer_by(&self, deadline: tokio::time::Instant) {
        self.deadline.send_if_modified(|earliest| {
            let earlier = earliest.is_none_or(|e| deadline < e);
            if earlier {
                *earliest = Some(deadline);
            }
            earlier
        });
    }
}

/// The factors of the weighted searches that improve an optimal flight's incumbent for a waiter
/// with a deadline, one after the other (each a job of its own beside the flight's, sharing the
/// client's threads), from a quarter of the way to the deadline until it (or the flight's end):
/// on Korf & Felner's 50 24-puzzles with a 10 s deadline each the answers were 1.039 times the
/// optimum (median; 1.18 at most) against 1.206 (1.56) with the quick path alone
/// (docs/performance.md). A waiter without a deadline waits for the optimum and pays nothing
/// for them.
const COMPANION_WEIGHTS: [f64; 2] = [1.5, 1.2];

/// A weighted search improving a flight's incumbent.
struct Companion {
    job: JobId,
    weight: Weight,
    rx: mpsc::UnboundedReceiver<JobEvent>,
}

/// A place among a flight's waiters. Leaving is one step with the flight's removal from the
/// table (see [`crate::flights`]): the last one out cancels a flight no one else can join.
pub(crate) struct WaiterGuard {
    searches: Arc<Searches>,
    key: FlightKey,
    pub flight: Arc<Flight>,
}

impl Drop for WaiterGuard {
    fn drop(&mut self) {
        if self.searches.flights.leave(self.key, self.flight.job) == Left::Last {
            self.flight.cancelled.store(true, Ordering::Release);
            self.searches.scheduler.cancel(self.flight.job);
        }
    }
}

/// The searches running now, and what they need and leave behind.
pub(crate) struct Searches {
    /// Board → optimal path: what a search that ends solved leaves.
    cache: Cache,
    /// The cache's durable copy ([`crate::Config::cache_dir`]): each answer cached is queued for
    /// it, and the detached jobs' records.
    store: Option<Writer>,
    scheduler: SchedulerHandle,
    /// Searches running now, by puzzle and heuristic: identical requests share one.
    flights: Flights<Flight>,
    /// One solver (and its tables) per goal and heuristic, for the coordinator's own searches.
    solvers: Solvers,
    /// Checkpoints to resume from, by puzzle: taken by the flight that searches it next.
    resumes: Mutex<HashMap<BoardKey, Checkpoint>>,
    /// The last searches to end, for the console.
    recent: Recent,
    /// [`crate::Config::probe_nodes`], [`crate::Config::units_per_slot`] and
    /// [`crate::Config::incumbent_nodes`].
    probe_nodes: u64,
    units_per_slot: usize,
    incumbent_nodes: u64,
}

impl Searches {
    /// No search running yet. `cache` may come filled from `store`'s file; `store` gets every
    /// answer cached from now on.
    pub(crate) fn new(
        config: &crate::Config,
        cache: Cache,
        store: Option<Writer>,
        scheduler: SchedulerHandle,
    ) -> Searches {
        Searches {
            cache,
            store,
            scheduler,
            flights: Flights::default(),
            solvers: Solvers::default(),
            resumes: Mutex::default(),
            recent: Recent::default(),
            probe_nodes: config.probe_nodes,
            units_per_slot: config.units_per_slot,
            incumbent_nodes: config.incumbent_nodes,
        }
    }

    /// The answer cache the searches fill.
    pub(crate) fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The store, when the coordinator keeps one ([`crate::Config::cache_dir`]).
    pub(crate) fn store(&self) -> Option<&Writer> {
        self.store.as_ref()
    }

    /// How many searches are running now.
    pub(crate) fn running(&self) -> usize {
        self.flights.len()
    }

    /// The next search of puzzle `key` resumes from `checkpoint` (a detached job started
    /// again after a restart).
    pub(crate) fn resume_at(&self, key: BoardKey, checkpoint: Checkpoint) {
        if let Ok(mut resumes) = self.resumes.lock() {
            resumes.insert(key, checkpoint);
        }
    }

    /// The checkpoint the search of puzzle `key` resumes from, if there is one.
    fn take_resume(&self, key: &BoardKey) -> Option<Checkpoint> {
        self.resumes.lock().ok()?.remove(key)
    }

    /// Writes the answers queued for the store and closes it (blocks; once serving has ended).
    pub(crate) fn close_store(&self) {
        if let Some(store) = &self.store {
            store.close();
        }
    }

    /// The searches running now, oldest first.
    pub(crate) fn views(&self) -> Vec<SearchView> {
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
    pub(crate) fn finished(&self) -> Vec<FinishedView> {
        self.recent.list()
    }

    /// Keeps `flight`'s end for [`Searches::finished`].
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
        self.recent.push(FinishedView {
            search,
            outcome,
            moves,
            ended_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
        });
    }

    /// Joins the search for `key` (the puzzle `board` to `goal`, and the heuristic), starting it
    /// if none is running.
    ///
    /// A new search counts for `client` when the scheduler shares slots between clients, and
    /// starts from what the cache knows of the board if `from_cache`.
    pub(crate) fn join(
        self: &Arc<Self>,
        key: FlightKey,
        board: Board,
        goal: Goal,
        client: ClientId,
        from_cache: bool,
    ) -> WaiterGuard {
        let (heuristic, weight) = (key.1, key.2);
        let joined = self.flights.join(key, || {
            let (state, _) = watch::channel(FlightState::default());
            let job = JobId(self.scheduler.next_id());
            let flight = Flight {
                job,
                board,
                goal,
                started: Instant::now(),
                heuristic,
                shape: board.shape(),
                client,
                weight,
                from_cache,
                state,
                deadline: watch::channel(None).0,
                cancelled: Arc::new(AtomicBool::new(false)),
            };
            (job, flight)
        });
        if joined.started {
            let searches = Arc::clone(self);
            let f = Arc::clone(&joined.flight);
            tokio::spawn(async move { searches.drive(f, board, goal, heuristic, key).await });
        }
        WaiterGuard {
            searches: Arc::clone(self),
            key,
            flight: joined.flight,
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
        match &end {
            FlightEnd::Solved {
                path,
                optimal: true,
                ..
            } => {
                if self.cache.insert(&board, &goal, path)
                    && let Some(store) = &self.store
                    && !store.save(crate::store::StoredAnswer {
                        board,
                        goal,
                        path: path.clone(),
                    })
                {
                    metrics::counter!(crate::metrics::STORE_DROPPED).increment(1);
                }
            }
            // A bounded answer is cached with its proof (it serves the factors it is within;
            // never an optimal request) but not stored: the store holds optimal paths only.
            FlightEnd::Solved {
                path,
                optimal: false,
                lower_bound,
                ..
            } => {
                self.cache.insert_bounded(&board, &goal, path, *lower_bound);
            }
            // Ended unfinished (its waiters gone at their deadline, or the coordinator
            // stopping): its incumbent is kept with the bound proven, for requests it is within
            // the factor of and as the next search's start.
            FlightEnd::Cancelled { lower_bound } | FlightEnd::ShuttingDown { lower_bound } => {
                let state = flight.state.borrow();
                if let Some(path) = &state.incumbent {
                    // (A bound above the path's length, which no path can have, is refused.)
                    let proven = state.lower_bound.max(*lower_bound);
                    self.cache.insert_bounded(&board, &goal, path, proven);
                }
            }
            FlightEnd::Failed(_) => {}
        }
        metrics::gauge!(crate::metrics::CACHE_ENTRIES).set(self.cache.len() as f64);
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
        let solver = match self.solvers.get(goal, own) {
            Ok(s) => s,
            Err(e) => return FlightEnd::Failed(e.to_string()),
        };
        if let Ok(h) = solver.estimate(&board) {
            flight
                .state
                .send_modify(|s| s.lower_bound = s.lower_bound.max(h));
        }
        // What an earlier search left (a bounded answer, or the incumbent of one that ended
        // unfinished) is where this one starts: its path the incumbent, its bound proven.
        if let Some(known) = flight
            .from_cache
            .then(|| self.cache.known(&board, &goal))
            .flatten()
        {
            tracing::debug!(
                length = known.path.len(),
                lower_bound = known.lower_bound,
                "incumbent from the cache"
            );
            flight.state.send_modify(|s| {
                s.lower_bound = s.lower_bound.max(known.lower_bound);
                s.incumbent = Some(known.path);
            });
        }
        let incumbent = self.look_for_incumbent(flight, &solver, board);
        let weight = flight.weight;
        let solver = if weight.is_optimal() {
            solver
        } else {
            Arc::new(Solver::clone(&solver).with_weight(weight))
        };
        // Boards the exact tables cover are solved here at once. Everything else goes whole to a
        // worker slot (the scheduler cuts it only when slots would idle): the coordinator
        // searches nothing while a worker can. With no worker that could search it, a serial
        // probe with a node budget answers easy boards here, and the rest is cut into units
        // that wait for a worker.
        let exact = HeuristicKind::Exact.supports(board.shape());
        // A detached job started again after a restart goes on from its checkpoint: its units
        // and tasks wait for workers that can search them.
        if let Ok(key) = BoardKey::new(&board, &goal)
            && let Some(checkpoint) = self.take_resume(&key)
        {
            let mut spec = JobSpec::whole(flight.job, goal, heuristic, solver, board);
            spec.whole = false;
            spec.resume = Some(Box::new(checkpoint));
            tracing::info!(%heuristic, "resumed from a checkpoint");
            return self.distribute(flight, spec, heuristic, 0, incumbent).await;
        }
        if !exact
            && self
                .scheduler
                .membership()
                .can_serve(heuristic, board.shape())
        {
            let spec = JobSpec::whole(flight.job, goal, heuristic, solver, board);
            tracing::debug!(%heuristic, "submitted whole");
            return self.distribute(flight, spec, heuristic, 0, incumbent).await;
        }
        let budget = (!exact).then_some(self.probe_nodes);
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
                    let bound = report.stats.iterations.last().map_or(0, |i| i.bound);
                    return solved(path, report.stats.expanded, None, own, weight, bound);
                }
                SearchOutcome::Cancelled => return FlightEnd::Cancelled { lower_bound: 0 },
                SearchOutcome::BudgetExceeded => report.stats.expanded,
                other => return FlightEnd::Failed(format!("probe ended with {other:?}")),
            },
            Ok(Err(e)) => return FlightEnd::Failed(e.to_string()),
            Err(e) => return FlightEnd::Failed(format!("probe task failed: {e}")),
        };
        // Distribute: many more units than slots, so that the pull model balances the load.
        let slots = self.scheduler.stats().await.slots.max(1);
        let min_units = slots * self.units_per_slot;
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
            // Met breadth-first: the shortest.
            let length = path.len() as u32;
            return solved(path, probe_nodes, None, own, Weight::OPTIMAL, length);
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
            resume: None,
            client: flight.client,
        };
        self.distribute(flight, spec, heuristic, probe_nodes, incumbent)
            .await
    }

    /// Starts looking for `flight`'s incumbent ([`Solver::quick_path`] with `solver`, the
    /// coordinator's own heuristic, off the async threads): `None` for boards the coordinator
    /// solves at once (at most 9 cells) or when [`crate::Config::incumbent_nodes`] is 0.
    fn look_for_incumbent(
        &self,
        flight: &Flight,
        solver: &Arc<Solver>,
        board: Board,
    ) -> Option<oneshot::Receiver<QuickPath>> {
        if self.incumbent_nodes == 0 || HeuristicKind::Exact.supports(board.shape()) {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let (solver, budget) = (Arc::clone(solver), self.incumbent_nodes);
        let cancel = Arc::clone(&flight.cancelled);
        tokio::task::spawn_blocking(move || {
            if let Ok(Some(quick)) = solver.quick_path(&board, budget, Some(&cancel)) {
                crate::metrics::nodes("incumbent", quick.expanded);
                let _ = tx.send(quick);
            }
        });
        Some(rx)
    }

    /// Submits a job to the scheduler and follows it to its end, publishing its progress and
    /// the incumbent when it comes; ends it early with the incumbent once that is proven
    /// optimal, or within the flight's factor.
    async fn distribute(
        &self,
        flight: &Flight,
        mut spec: JobSpec,
        heuristic: HeuristicKind,
        probe_nodes: u64,
        mut incumbent: Option<oneshot::Receiver<QuickPath>>,
    ) -> FlightEnd {
        spec.client = flight.client;
        // What a companion search needs (optimal flights only, of boards the coordinator does
        // not solve itself).
        let base = (flight.weight.is_optimal()
            && !HeuristicKind::Exact.supports(spec.root.shape()))
        .then(|| (Arc::clone(&spec.solver), spec.root, spec.goal));
        let mut weights = COMPANION_WEIGHTS
            .iter()
            .filter_map(|&w| Weight::new(w).ok());
        let mut next_weight = weights.next();
        let mut companion: Option<Companion> = None;
        let mut companion_nodes = 0u64;
        let mut deadline = flight.deadline.subscribe();
        let begun = tokio::time::Instant::now();
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.scheduler.submit(spec, tx);
        // A waiter may have left while the probe ran: cancel what was just submitted.
        if flight.cancelled.load(Ordering::Acquire) {
            self.scheduler.cancel(flight.job);
        }
        let weight = flight.weight;
        // What the incumbent is known to be within, by how it was found.
        let mut incumbent_within: Option<Weight> = None;
        // The incumbent settled the flight: the job is cancelled, and its end (with what it
        // cost) awaited.
        let mut settled: Option<FlightEnd> = None;
        loop {
            let earliest = *deadline.borrow();
            // The next companion starts a quarter of the way to the earliest deadline; the one
            // running stops at it.
            let start_at = earliest
                .filter(|_| {
                    base.is_some()
                        && companion.is_none()
                        && next_weight.is_some()
                        && settled.is_none()
                })
                .map(|d| begun + d.saturating_duration_since(begun) / 4);
            let stop_at = earliest.filter(|_| companion.is_some());
            let event = tokio::select! {
                event = rx.recv() => event,
                changed = deadline.changed() => {
                    // The sender lives in the flight, which outlives this loop.
                    debug_assert!(changed.is_ok());
                    continue;
                }
                _ = sleep_until_some(start_at), if start_at.is_some() => {
                    if let (Some((solver, root, goal)), Some(w)) = (&base, next_weight.take()) {
                        if tokio::time::Instant::now() < earliest.unwrap_or(begun) {
                            companion = Some(self.start_companion(flight, solver, *root, *goal, heuristic, w));
                        }
                        next_weight = weights.next();
                    }
                    continue;
                }
                _ = sleep_until_some(stop_at), if stop_at.is_some() => {
                    if let Some(c) = companion.take() {
                        self.scheduler.cancel(c.job);
                    }
                    next_weight = None;
                    continue;
                }
                event = async { companion.as_mut().expect("guarded").rx.recv().await }, if companion.is_some() => {
                    match event {
                        Some(JobEvent::Progress { .. }) => {}
                        Some(JobEvent::Finished { outcome, stats }) => {
                            let weight = companion.take().map_or(Weight::OPTIMAL, |c| c.weight);
                            companion_nodes += stats.nodes;
                            if let (JobOutcome::Solved { path }, Some((_, root, goal))) = (outcome, &base)
                                && self.improve_incumbent(flight, root, goal, path)
                            {
                                incumbent_within = Some(incumbent_within.map_or(weight, |w| w.min(weight)));
                            }
                            if settled.is_none() {
                                settled = self.settled(flight, incumbent_within, heuristic);
                            }
                        }
                        None => companion = None,
                    }
                    continue;
                }
                quick = async { incumbent.as_mut().expect("guarded").await }, if incumbent.is_some() && settled.is_none() => {
                    incumbent = None;
                    if let Ok(quick) = quick {
                        tracing::debug!(length = quick.path.len(), weight = %quick.weight, "incumbent");
                        // The incumbent kept is the shorter: within the quick path's factor
                        // either way.
                        incumbent_within = Some(quick.weight);
                        flight.state.send_if_modified(|s| {
                            let shorter = s
                                .incumbent
                                .as_ref()
                                .is_none_or(|kept| quick.path.len() < kept.len());
                            if shorter {
                                s.incumbent = Some(quick.path);
                            }
                            shorter
                        });
                    }
                    settled = self.settled(flight, incumbent_within, heuristic);
                    continue;
                }
            };
            let Some(event) = event else {
                break;
            };
            match event {
                JobEvent::Progress {
                    bound,
                    nodes,
                    units_done,
                    units_total,
                    finished,
                } => {
                    flight.state.send_modify(|s| {
                        if s.bounds.last() != Some(&bound) && s.bounds.len() < MAX_BOUNDS {
                            s.bounds.push(bound);
                        }
                        s.bound = bound;
                        s.lower_bound = s.lower_bound.max(weight.lower_bound(bound));
                        s.nodes = nodes + probe_nodes + companion_nodes;
                        s.units_done = units_done;
                        s.units_total = units_total;
                        s.bound_finished = finished;
                        s.bounds_seen.report(bound, nodes, finished, Instant::now());
                    });
                    if settled.is_none() {
                        settled = self.settled(flight, incumbent_within, heuristic);
                    }
                }
                JobEvent::Finished { outcome, stats } => {
                    if let Some(c) = companion.take() {
                        self.scheduler.cancel(c.job);
                    }
                    let probe_nodes = probe_nodes + companion_nodes;
                    tracing::info!(
                        nodes = stats.nodes,
                        units = stats.units,
                        splits = stats.splits,
                        requeued = stats.requeued,
                        "job finished"
                    );
                    return match outcome {
                        // Ended for the incumbent: the answer with what the search cost.
                        JobOutcome::Cancelled { .. } if settled.is_some() => {
                            let mut end = settled.take().expect("guarded");
                            if let FlightEnd::Solved {
                                nodes, stats: s, ..
                            } = &mut end
                            {
                                *nodes = stats.nodes + probe_nodes;
                                *s = Some(stats);
                            }
                            end
                        }
                        JobOutcome::Solved { path } => {
                            // Found under the last bound, every one below it exhausted.
                            let bound = stats.bounds.last().copied().unwrap_or(0);
                            let nodes = stats.nodes + probe_nodes;
                            let proven = flight.state.borrow().lower_bound;
                            let mut end =
                                solved(path, nodes, Some(stats), heuristic, weight, bound);
                            if let FlightEnd::Solved {
                                path,
                                lower_bound,
                                optimal,
                                ..
                            } = &mut end
                            {
                                // The root's estimate may prove more than the bounds did.
                                *lower_bound = (*lower_bound).max(proven).min(path.len() as u32);
                                *optimal = *lower_bound == path.len() as u32;
                            }
                            end
                        }
                        JobOutcome::Cancelled { lower_bound } => FlightEnd::Cancelled {
                            lower_bound: weight.lower_bound(lower_bound),
                        },
                    };
                }
            }
        }
        // The scheduler's actor ended: the coordinator is shutting down.
        if let Some(c) = companion.take() {
            self.scheduler.cancel(c.job);
        }
        settled.unwrap_or_else(|| FlightEnd::ShuttingDown {
            lower_bound: flight.state.borrow().lower_bound,
        })
    }

    /// Submits a weighted search of `root` (factor `weight`, the flight's heuristic, counted for
    /// the flight's client) whose answer may improve the flight's incumbent.
    fn start_companion(
        &self,
        flight: &Flight,
        solver: &Arc<Solver>,
        root: Board,
        goal: Goal,
        heuristic: HeuristicKind,
        weight: Weight,
    ) -> Companion {
        let job = JobId(self.scheduler.next_id());
        let solver = Arc::new(Solver::clone(solver).with_weight(weight));
        let mut spec = JobSpec::whole(job, goal, heuristic, solver, root);
        spec.client = flight.client;
        let (tx, rx) = mpsc::unbounded_channel();
        tracing::debug!(companion = job.0, %weight, "improving the incumbent");
        self.scheduler.submit(spec, tx);
        Companion { job, weight, rx }
    }

    /// Takes `path` (a worker's answer: replayed here) as the flight's incumbent if it is
    /// shorter. Returns whether the path replayed. What the weighted search's bounds prove is
    /// not taken: a weighted answer is not audited (see the scheduler's `job.rs`), and only
    /// the optimal search's bounds, which are, may prove an incumbent optimal.
    fn improve_incumbent(
        &self,
        flight: &Flight,
        root: &Board,
        goal: &Goal,
        path: Vec<Move>,
    ) -> bool {
        if !root.verify(&path, goal).is_ok_and(|v| v.reaches_goal) {
            tracing::warn!("a companion search's path does not reach the goal: ignored");
            return false;
        }
        flight.state.send_if_modified(|s| {
            let shorter = s
                .incumbent
                .as_ref()
                .is_none_or(|kept| path.len() < kept.len());
            if shorter {
                tracing::debug!(length = path.len(), "a shorter incumbent");
                s.incumbent = Some(path);
            }
            shorter
        });
        true
    }

    /// The flight's end with its incumbent, when that settles it: no longer than the lower
    /// bound proven (optimal: all solutions share the board's parity, so the search stops
    /// without the bound that would find it), or known to be within the flight's factor. The
    /// job is cancelled then (its end brings what it cost).
    fn settled(
        &self,
        flight: &Flight,
        within: Option<Weight>,
        heuristic: HeuristicKind,
    ) -> Option<FlightEnd> {
        let state = flight.state.borrow();
        let path = state.incumbent.as_ref()?;
        let length = path.len() as u32;
        let optimal = length <= state.lower_bound;
        let admitted = optimal
            || flight.weight.admits(length, state.lower_bound)
            || within.is_some_and(|w| w <= flight.weight);
        if !admitted {
            return None;
        }
        tracing::info!(
            length,
            lower_bound = state.lower_bound,
            optimal,
            "answered by the incumbent"
        );
        self.scheduler.cancel(flight.job);
        Some(FlightEnd::Solved {
            path: path.clone(),
            nodes: state.nodes,
            stats: None,
            heuristic,
            optimal,
            lower_bound: if optimal { length } else { state.lower_bound },
        })
    }
}

/// Sleeps until `at`; never wakes for `None` (a `select!` branch guarded on it being set).
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A flight's end with `path`, found by a search with factor `weight` under `bound` (in the
/// weight's units) with every bound below exhausted.
fn solved(
    path: Vec<Move>,
    nodes: u64,
    stats: Option<JobStats>,
    heuristic: HeuristicKind,
    weight: Weight,
    bound: u32,
) -> FlightEnd {
    let length = path.len() as u32;
    let lower_bound = if weight.is_optimal() {
        length
    } else {
        weight.lower_bound(bound).min(length)
    };
    FlightEnd::Solved {
        path,
        nodes,
        stats,
        heuristic,
        optimal: lower_bound == length,
        lower_bound,
    }
}

/// `flight` as the console shows it, with `waiters` waiting for it.
fn view(flight: &Flight, waiters: usize) -> SearchView {
    let state = flight.state.borrow();
    let outlook = state.bounds_seen.outlook(std::time::Instant::now());
    let estimate = outlook.estimate;
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
        bound_nodes: outlook.nodes_in_bound,
        predicted_nodes: estimate.map(|e| e.predicted_nodes),
        fraction: estimate.map(|e| e.fraction),
        eta_secs: estimate.and_then(|e| e.eta_secs),
        next_bound_nodes: estimate.and_then(|e| e.next_bound_nodes),
        extrapolated: outlook.extrapolated,
        elapsed_ms: flight.started.elapsed().as_millis() as u64,
        waiters,
    }
}
