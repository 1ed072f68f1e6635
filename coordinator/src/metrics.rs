//! The coordinator's Prometheus metrics: their names, their descriptions, and the few helpers
//! the adapters (the gRPC services, the scheduler's actor) record them with. The scheduler records
//! nothing; the actor exports its totals ([`ClusterGauges`]). A leaf: the labels and values come
//! from the callers (`solve::outcome` names a request's outcome).
//!
//! Names follow Prometheus conventions: `npuzzle_coordinator_` first, counters end in `_total`,
//! durations are `_seconds` histograms. The endpoint is served only with
//! [`Config::metrics`](crate::Config::metrics). Until some endpoint of the process installs the
//! recorder, the `metrics` macros record nothing, at almost no cost; the scheduler's actor exports
//! its gauges only when this coordinator has an endpoint.

use std::time::{Duration, Instant};

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};

pub const REQUESTS: &str = "npuzzle_coordinator_requests_total";
pub const REQUEST_DURATION: &str = "npuzzle_coordinator_request_duration_seconds";
pub const CACHE_ENTRIES: &str = "npuzzle_coordinator_cache_entries";
pub const CACHE_HITS: &str = "npuzzle_coordinator_cache_hits_total";
pub const CACHE_MISSES: &str = "npuzzle_coordinator_cache_misses_total";
pub const STORE_DROPPED: &str = "npuzzle_coordinator_cache_store_dropped_total";
pub const WORKERS: &str = "npuzzle_coordinator_workers";
pub const SLOTS: &str = "npuzzle_coordinator_slots";
pub const BUSY_SLOTS: &str = "npuzzle_coordinator_busy_slots";
pub const QUEUED_UNITS: &str = "npuzzle_coordinator_queued_units";
pub const RUNNING_JOBS: &str = "npuzzle_coordinator_running_jobs";
pub const NODES: &str = "npuzzle_coordinator_nodes_expanded_total";
pub const UNITS_ASSIGNED: &str = "npuzzle_coordinator_units_assigned_total";
pub const UNITS_SPLIT: &str = "npuzzle_coordinator_units_split_total";
pub const UNITS_REQUEUED: &str = "npuzzle_coordinator_units_requeued_total";
pub const SERVING: &str = "npuzzle_coordinator_serving";
pub const UNAUTHENTICATED: &str = "npuzzle_coordinator_unauthenticated_total";
pub const CONNECTIONS_REFUSED: &str = "npuzzle_coordinator_connections_refused_total";
pub const CONNECTIONS_TIMED_OUT: &str = "npuzzle_coordinator_connections_timed_out_total";

/// Gives every metric its `# HELP` line. Call after the recorder is installed.
pub fn describe() {
    describe_counter!(
        REQUESTS,
        "Solve and SolveStream requests answered, by rpc and outcome (solved, unsolvable, cancelled, deadline_exceeded; refused: invalid, busy, failed_precondition, unavailable, internal)"
    );
    describe_histogram!(
        REQUEST_DURATION,
        Unit::Seconds,
        "Time from a request's arrival to its answer, by rpc and outcome"
    );
    describe_gauge!(
        CACHE_ENTRIES,
        "Boards in the answer cache (each state along a cached path is one)"
    );
    describe_counter!(CACHE_HITS, "Requests answered from the cache");
    describe_counter!(
        CACHE_MISSES,
        "Cache lookups that found nothing (the board was then searched)"
    );
    describe_counter!(
        STORE_DROPPED,
        "Answers cached in memory but not written to the --cache-dir store (its writer's queue was full)"
    );
    describe_gauge!(WORKERS, "Workers connected now");
    describe_gauge!(SLOTS, "Search threads offered by the connected workers");
    describe_gauge!(BUSY_SLOTS, "Assignments out on workers now");
    describe_gauge!(
        QUEUED_UNITS,
        "Work units waiting for a free slot, over all jobs"
    );
    describe_gauge!(RUNNING_JOBS, "Distributed searches in progress");
    describe_counter!(
        NODES,
        "Nodes expanded, by who searched them: the coordinator's own probes (searcher=coordinator), its fast searches for a first path (searcher=incumbent) or the workers' units (searcher=workers, including units that finished after their job)"
    );
    describe_counter!(UNITS_ASSIGNED, "Work units handed to workers");
    describe_counter!(
        UNITS_SPLIT,
        "Heavy work units cut into smaller ones (ahead of a bound or after exceeding their node budget)"
    );
    describe_counter!(
        UNITS_REQUEUED,
        "Work units put back in the queue (their worker was lost, or the unit failed)"
    );
    describe_gauge!(
        SERVING,
        "1 while the health service says SERVING (a worker is connected, not draining), else 0"
    );
    describe_counter!(
        UNAUTHENTICATED,
        "Calls refused for want of a valid token, by service (npuzzle.v1.Solver, npuzzle.v1.Cluster) and reason (missing, malformed, invalid)"
    );
    describe_counter!(
        CONNECTIONS_REFUSED,
        "TCP connections closed on accept because max_connections were open"
    );
    describe_counter!(
        CONNECTIONS_TIMED_OUT,
        "Connections closed for saying too little too slowly, by reason (silent: nothing sent within the first-byte timeout; handshake: the HTTP/2 preface not complete within the handshake timeout)"
    );
}

/// Times one request and counts it once, by outcome. A request dropped before it is recorded
/// (the client went away) counts as `cancelled`.
pub struct RequestMetric {
    rpc: &'static str,
    started: Instant,
    done: bool,
}

impl RequestMetric {
    /// Starts timing a call of `rpc` (`Solve`, `SolveStream`).
    pub fn start(rpc: &'static str) -> RequestMetric {
        RequestMetric {
            rpc,
            started: Instant::now(),
            done: false,
        }
    }

    /// Records how the request ended: its `outcome` label (see `solve::outcome`).
    pub fn finish(&mut self, outcome: &'static str) {
        self.record(outcome);
    }

    /// Records a request refused before it was understood (a body that is not a request).
    pub fn invalid(&mut self) {
        self.record("invalid");
    }

    fn record(&mut self, outcome: &'static str) {
        if self.done {
            return;
        }
        self.done = true;
        let labels = [("rpc", self.rpc), ("outcome", outcome)];
        counter!(REQUESTS, &labels).increment(1);
        histogram_seconds(REQUEST_DURATION, &labels, self.started.elapsed());
    }
}

impl Drop for RequestMetric {
    fn drop(&mut self) {
        self.record("cancelled");
    }
}

fn histogram_seconds(name: &'static str, labels: &[(&'static str, &'static str)], d: Duration) {
    metrics::histogram!(name, labels).record(d.as_secs_f64());
}

/// The cluster's gauges and the scheduler's totals, after an event changed them.
pub fn publish_cluster(c: &ClusterGauges) {
    gauge!(WORKERS).set(c.workers as f64);
    gauge!(SLOTS).set(c.slots as f64);
    gauge!(BUSY_SLOTS).set(c.busy_slots as f64);
    gauge!(QUEUED_UNITS).set(c.queued_units as f64);
    gauge!(RUNNING_JOBS).set(c.running_jobs as f64);
    counter!(UNITS_ASSIGNED).absolute(c.units_assigned);
    counter!(UNITS_SPLIT).absolute(c.units_split);
    counter!(UNITS_REQUEUED).absolute(c.units_requeued);
}

/// What [`publish_cluster`] exports: the cluster's state now and the scheduler's totals.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClusterGauges {
    pub workers: usize,
    pub slots: usize,
    pub busy_slots: usize,
    pub queued_units: usize,
    pub running_jobs: usize,
    pub units_assigned: u64,
    pub units_split: u64,
    pub units_requeued: u64,
}

/// A call to `service` refused by [`crate::auth::RequireToken`] for `reason`.
pub fn unauthenticated(service: &'static str, reason: &'static str) {
    counter!(UNAUTHENTICATED, "service" => service, "reason" => reason).increment(1);
}

/// Nodes expanded by `searcher` (`coordinator`, `incumbent` or `workers`).
pub fn nodes(searcher: &'static str, expanded: u64) {
    if expanded > 0 {
        counter!(NODES, "searcher" => searcher).increment(expanded);
    }
}
