//! The records the coordinator shows of itself: a search running now or ended lately (the web
//! console and `GET /api/v1/searches`; kept by `searches.rs`) and the requests answered (the
//! console's charts). Plain records, a leaf: nothing here knows a search.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::scheduler::JobId;

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
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<FinishedView>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The searches kept, oldest first.
    pub(crate) fn list(&self) -> Vec<FinishedView> {
        self.lock().iter().cloned().collect()
    }

    /// Keeps `finished`, dropping the oldest past [`MAX_RECENT`].
    pub(crate) fn push(&self, finished: FinishedView) {
        let mut recent = self.lock();
        if recent.len() >= MAX_RECENT {
            recent.pop_front();
        }
        recent.push_back(finished);
    }
}
