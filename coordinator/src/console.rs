//! What the coordinator shows of itself: the searches running now and the last ones to end (the
//! web console and `GET /api/v1/searches`), the requests answered (the console's charts), and
//! what `Stats` reports (and `GET /api/v1/stats`). Views only: nothing here changes a search.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use npuzzle_proto::{moves_to_wire, v1};

use crate::flight::{Flight, FlightEnd};
use crate::scheduler::JobId;
use crate::state::Shared;

/// Searches kept in [`Recent`].
const MAX_RECENT: usize = 20;

/// Requests answered (`Solve`, `SolveStream`, the HTTP API) and the sum of their latencies,
/// since the start.
#[derive(Debug, Default)]
pub struct Activity {
    requests: AtomicU64,
    micros: AtomicU64,
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
    /// Nodes the current bound has expanded so far.
    pub bound_nodes: u64,
    /// The current bound's forecast, once two bounds have finished (see `BoundForecast`): what
    /// exhausting it should expand, the fraction done, the seconds left at its rate so far, and
    /// what the next bound should expand.
    pub predicted_nodes: Option<u64>,
    pub fraction: Option<f64>,
    pub eta_secs: Option<f64>,
    pub next_bound_nodes: Option<u64>,
    /// Whether `fraction` and `eta_secs` are extrapolated at the last bound's rate (nothing
    /// reported within the bound yet).
    pub extrapolated: bool,
    /// Since the search started.
    pub elapsed_ms: u64,
    /// Requests waiting for its answer.
    pub waiters: usize,
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

/// The last [`MAX_RECENT`] searches to end, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Recent(Mutex<VecDeque<FinishedView>>);

impl Recent {
    /// A panic elsewhere while the lock was held leaves a list that is still whole (each step
    /// is one push or pop), so a poisoned lock is used as it is.
    fn list(&self) -> std::sync::MutexGuard<'_, VecDeque<FinishedView>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, finished: FinishedView) {
        let mut recent = self.list();
        if recent.len() >= MAX_RECENT {
            recent.pop_front();
        }
        recent.push_back(finished);
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
        self.recent.list().iter().cloned().collect()
    }

    /// Keeps `flight`'s end for [`Shared::finished`].
    pub(crate) fn remember(&self, flight: &Flight, waiters: usize, end: &FlightEnd) {
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
