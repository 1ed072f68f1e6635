//! A deterministic discrete-event simulation of a cluster: the real [`Scheduler`] with simulated
//! workers whose searches cost what recorded [traces](npuzzle_solver::Trace) say.
//!
//! Time is virtual. A slot searches [`SimConfig::rate`] nodes per second (by default the rate
//! the trace was recorded at); every message between the coordinator and a worker takes
//! [`SimConfig::latency`].
//!
//! The coordinator is one thread, as the real one's scheduler is (one actor): each call into
//! the scheduler (a result, a request) occupies it for [`SimConfig::coordinator_cost`] of virtual
//! time, the time the call really took here ([`CoordinatorCost::Measured`]) or a cost calibrated
//! on such measurements ([`CoordinatorCost::Calibrated`], the default: the same inputs give the
//! same figures on any machine). What it sends goes out when the call ends, and messages that
//! arrive meanwhile wait in line, so a saturated coordinator lengthens the makespan instead of
//! hiding in it ([`SimReport::coordinator_secs`], [`SimReport::mean_wait`]). The cluster joining
//! before the first request is not charged. The real time spent in the scheduler is reported
//! too ([`SimReport::scheduler_secs`]), whichever cost is charged.
//!
//! A simulated worker runs one task per slot and queues the tasks sent ahead of its slots
//! ([`SchedulerConfig::prefetch`]): one starts the moment a slot frees, without a round trip;
//! asked back before it started, it is answered
//! [`Report::NotStarted`](crate::scheduler::Report::NotStarted) at once; a cancel drops the
//! job's queued tasks (answered cancelled) before it stops the running ones.
//!
//! A simulated worker asked to search a task (a unit or a piece, under a bound) adds up the
//! traced subtrees below the task's prefix, in depth-first order. Asked back after `n` nodes, it
//! stops there, inside a traced subtree too, and hands back the siblings its depth-first walk
//! had not reached on each level, as the real worker does (searching the smallest itself first,
//! within `ABSORB_NODES`). Below the trace's depth a node's nodes are shared evenly among the
//! blank's moves other than back. A bound above the trace's last (searched ahead of the
//! answer's, before the path is found there) searches the last bound's subtrees grown by the
//! trace's last growth per step. Nothing else is modelled: no failures, no heartbeats.
//!
//! Besides the totals, a report says where the makespan went: per job and bound when its tasks
//! ran ([`SimReport::bounds`]), and, when asked for ([`SimConfig::timeline_bins`]), the share
//! of slot time busy in each equal part of the makespan ([`SimReport::timeline`]).
//!
//! ```
//! # use npuzzle_coordinator::sim::{SimConfig, simulate};
//! # fn demo(traces: &[npuzzle_solver::Trace]) {
//! let report = simulate(traces, &SimConfig { slots: 64, ..SimConfig::default() });
//! println!("speed-up {:.1} on 64 slots", report.speedup());
//! # }
//! ```
//!
//! # Layout
//!
//! - this file: [`SimConfig`], [`SimReport`] and [`simulate`];
//! - `trace`: a job's trace indexed for the simulated workers, and what one task's search costs;
//! - `world`: the event loop: virtual time, the coordinator's queue, the simulated workers.

mod trace;
mod world;

use trace::JobTrace;
use world::{Event, Inbound, Scheduled, Sim};
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use npuzzle_solver::{BoundTrace, Trace};

use crate::scheduler::{Capabilities, Scheduler, SchedulerConfig, WorkerId};

/// The simulated cluster.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Search threads in all.
    pub slots: usize,
    /// Search threads per worker.
    pub slots_per_worker: usize,
    /// One way, between the coordinator and any worker or client.
    pub latency: Duration,
    /// Nodes per second per slot (`None`: each trace's recorded rate).
    pub rate: Option<f64>,
    /// Jobs a client keeps in flight (the traces are its batch, sent in order).
    pub jobs_in_flight: usize,
    /// What each call into the scheduler costs the one-threaded coordinator in virtual time.
    pub coordinator_cost: CoordinatorCost,
    /// Bins of [`SimReport::timeline`] (0: none).
    pub timeline_bins: usize,
    pub scheduler: SchedulerConfig,
}

/// What a call into the scheduler costs the simulated coordinator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CoordinatorCost {
    /// Nothing: the coordinator answers at once however many events it gets (the simulator
    /// before issue 23; for comparisons).
    Free,
    /// The real time the call took on this machine: honest about this machine, but no two runs
    /// give quite the same figures.
    Measured,
    /// `per_event`, plus `per_command` for each command the call returns (an assignment, a
    /// yield, a cancel…): deterministic. [`CoordinatorCost::CALIBRATED`] is fitted to
    /// measured runs.
    Calibrated {
        per_event: Duration,
        per_command: Duration,
    },
}

impl CoordinatorCost {
    /// Fitted to `--coordinator-cost measured` runs of the four 24-puzzle traces (release
    /// build, 2 to 10,000 slots, the best of 3, AMD EPYC with 32 MiB of L3; see
    /// docs/benchmarks/2026-12-simulation-issue23.md): 1.2–2 µs per event on up to 64 slots,
    /// 4.0–4.7 µs on #29 and #36 from 1,024 slots on (more tasks and workers than the caches hold), with 1.0–1.1 commands
    /// per event. Charged at the high end: 3 µs per event and 1 µs per command.
    pub const CALIBRATED: CoordinatorCost = CoordinatorCost::Calibrated {
        per_event: Duration::from_micros(3),
        per_command: Duration::from_micros(1),
    };

    /// The virtual seconds a call that returned `commands` and took `measured` costs.
    fn charge(self, measured: Duration, commands: usize) -> f64 {
        match self {
            CoordinatorCost::Free => 0.0,
            CoordinatorCost::Measured => measured.as_secs_f64(),
            CoordinatorCost::Calibrated {
                per_event,
                per_command,
            } => (per_event + per_command * commands as u32).as_secs_f64(),
        }
    }
}

impl std::fmt::Display for CoordinatorCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoordinatorCost::Free => f.write_str("free"),
            CoordinatorCost::Measured => f.write_str("measured"),
            CoordinatorCost::Calibrated {
                per_event,
                per_command,
            } => write!(
                f,
                "calibrated ({:.2} µs per event + {:.2} µs per command)",
                per_event.as_secs_f64() * 1e6,
                per_command.as_secs_f64() * 1e6
            ),
        }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            slots: 2,
            slots_per_worker: 1,
            latency: Duration::from_micros(100),
            rate: None,
            jobs_in_flight: 1,
            coordinator_cost: CoordinatorCost::CALIBRATED,
            timeline_bins: 0,
            scheduler: SchedulerConfig::default(),
        }
    }
}

/// What a simulation gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimReport {
    pub slots: usize,
    /// Virtual seconds from the first request to the last answer.
    pub makespan: f64,
    /// Virtual seconds one slot needs for the serial searches of all the traces.
    pub serial_secs: f64,
    /// Nodes the simulated workers searched for answered jobs, and what serial IDA* expands.
    pub nodes: u64,
    /// Slot-seconds of search over all tasks, those still running when their job ended
    /// included.
    pub busy_secs: f64,
    pub serial_nodes: u64,
    /// Calls into the scheduler, and the real seconds they took.
    pub events: u64,
    pub scheduler_secs: f64,
    /// Commands the scheduler returned.
    pub commands: u64,
    /// Virtual seconds the coordinator spent in the scheduler ([`SimConfig::coordinator_cost`]).
    pub coordinator_secs: f64,
    /// The part of `coordinator_secs` spent before the last answer left (the rest went on the
    /// cancels after it): one thread's time, so never more than the makespan.
    pub coordinator_secs_to_answer: f64,
    /// Virtual seconds messages to the coordinator waited for it to be free, in all and at most.
    pub wait_secs: f64,
    pub max_wait_secs: f64,
    /// Entries of workers, jobs and tasks the scheduler's loops looked at
    /// ([`Scheduler::visits`]): its work, counted the same on any machine.
    pub scheduler_visits: u64,
    pub assignments: u64,
    pub yields: u64,
    /// Tasks sent ahead and taken back before they started (answered `NotStarted`).
    pub taken_back: u64,
    /// Tasks sent ahead and dropped before they started because their job was cancelled
    /// (answered `Cancelled`): they never run, so no bound counts them.
    pub cancelled_unstarted: u64,
    pub splits: u64,
    /// Answers whose length is not the trace's.
    pub wrong: usize,
    /// Per job and bound, when its tasks ran: where a makespan goes, bound by bound.
    pub bounds: Vec<BoundSpan>,
    /// The makespan in [`SimConfig::timeline_bins`] equal bins, each with the share of slot
    /// time spent searching in it: when the slots idle.
    pub timeline: Vec<f64>,
}

/// The tasks one job searched under one bound in a simulated run (a whole search, which goes
/// on from bound to bound on one slot, counts under the bound it started from).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BoundSpan {
    pub job: u64,
    pub bound: u32,
    /// Virtual seconds at which the first of them started and the last ended.
    pub first_start: f64,
    pub last_end: f64,
    /// Tasks ended (searched, stopped, cancelled), and their slot-seconds of search.
    pub tasks: u64,
    pub busy_secs: f64,
}

impl SimReport {
    pub fn speedup(&self) -> f64 {
        self.serial_secs / self.makespan
    }

    /// Speed-up per slot. Above 1 when the cut units skip duplicate states that serial IDA*
    /// searches again (transpositions), or when the last bound finds the path sooner.
    pub fn efficiency(&self) -> f64 {
        self.speedup() / self.slots as f64
    }

    /// The share of slot time spent searching (anything, wasted or not): how well the scheduler
    /// keeps the slots busy, whatever the search saves.
    pub fn utilization(&self) -> f64 {
        self.busy_secs / (self.slots as f64 * self.makespan).max(1e-12)
    }

    /// Scheduler events per real second of its own time.
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 / self.scheduler_secs.max(1e-12)
    }

    /// The share of the makespan the one-threaded coordinator was busy: near 1, it is the
    /// bottleneck.
    pub fn coordinator_load(&self) -> f64 {
        self.coordinator_secs / self.makespan.max(1e-12)
    }

    /// Virtual seconds a message waited for the coordinator, on average.
    pub fn mean_wait(&self) -> f64 {
        self.wait_secs / self.events.max(1) as f64
    }

    /// Entries the scheduler looked at per event: flat if no step scans the cluster.
    pub fn visits_per_event(&self) -> f64 {
        self.scheduler_visits as f64 / self.events.max(1) as f64
    }

    /// Scheduler events this cluster sent per virtual second.
    pub fn demanded_events_per_sec(&self) -> f64 {
        self.events as f64 / self.makespan.max(1e-12)
    }
}

/// Nodes serial IDA* expands for `trace`: every bound before the last, and the last one up to
/// its path.
pub fn serial_nodes(trace: &Trace) -> u64 {
    let Some((last, before)) = trace.bounds.split_last() else {
        return 0;
    };
    let upto = last.found.map_or(last.entries.len(), |i| i + 1);
    before.iter().map(BoundTrace::total).sum::<u64>()
        + last.internal
        + last.entries[..upto].iter().map(|e| e.nodes).sum::<u64>()
}

/// Runs the traces as a client's batch (in order, [`SimConfig::jobs_in_flight`] at a time)
/// through the real scheduler with simulated workers.
pub fn simulate(traces: &[Trace], config: &SimConfig) -> SimReport {
    let jobs: Vec<JobTrace> = traces.iter().cloned().map(JobTrace::new).collect();
    let serial_secs = traces
        .iter()
        .map(|t| serial_nodes(t) as f64 / config.rate.unwrap_or(t.rate).max(1.0))
        .sum();
    let mut sim = Sim {
        config,
        jobs,
        solvers: HashMap::new(),
        scheduler: Scheduler::new(config.scheduler.clone()),
        epoch: Instant::now(),
        queue: BinaryHeap::new(),
        seq: 0,
        now: 0.0,
        running: HashMap::new(),
        running_on: HashMap::new(),
        slots_of: HashMap::new(),
        waiting: HashMap::new(),
        generation: 0,
        report: SimReport {
            slots: config.slots,
            serial_secs,
            serial_nodes: traces.iter().map(serial_nodes).sum(),
            ..SimReport::default()
        },
        spans: BTreeMap::new(),
        intervals: Vec::new(),
        next_job: 0,
        answered: 0,
        last_answer: 0.0,
        job_trace: HashMap::new(),
        inbox: VecDeque::new(),
        busy: false,
    };
    let shapes: BTreeSet<npuzzle_solver::Shape> = traces.iter().map(|t| t.board.shape()).collect();
    let per_worker = config.slots_per_worker.max(1);
    let workers = config.slots.max(1).div_ceil(per_worker);
    for w in 0..workers {
        let slots = per_worker.min(config.slots.max(1) - w * per_worker);
        let capabilities = Capabilities {
            pdb_shapes: shapes.clone(),
            prefetch: true,
        };
        // The cluster forms before the batch begins: not charged.
        let id = WorkerId(w as u64 + 1);
        sim.slots_of.insert(id, slots);
        sim.scheduler_call(false, |s, now| s.add_worker(id, slots, capabilities, now));
    }
    let first = config.jobs_in_flight.max(1).min(sim.jobs.len());
    sim.next_job = first;
    let latency = config.latency.as_secs_f64();
    for index in 0..first {
        sim.at(latency, Event::Submit { index });
    }
    while let Some(Scheduled { at, event, .. }) = sim.queue.pop() {
        sim.now = at;
        match event {
            Event::Submit { index } => sim.arrive(Inbound::Submit { index }),
            Event::CoordinatorFree => {
                sim.busy = false;
                sim.serve();
            }
            Event::Start { worker, assignment } => sim.arrive_at_worker(worker, assignment),
            Event::End { key, generation } => {
                if sim
                    .running
                    .get(&key)
                    .is_some_and(|r| r.generation == generation)
                {
                    sim.end(key);
                }
            }
            Event::Yield {
                worker,
                key,
                after_nodes,
            } => sim.yield_task(worker, key, after_nodes),
            Event::Cancel { worker, job } => sim.cancel(worker, job),
            Event::Result { worker, result } => sim.arrive(Inbound::Result { worker, result }),
        }
    }
    sim.report.scheduler_visits = sim.scheduler.visits();
    sim.report.wrong += sim.jobs.len() - sim.answered;
    sim.report.makespan = sim.last_answer;
    sim.report.bounds = std::mem::take(&mut sim.spans).into_values().collect();
    sim.report.timeline = timeline(
        &sim.intervals,
        config.timeline_bins,
        sim.report.makespan,
        config.slots,
    );
    sim.report
}

/// The share of `slots`' time spent in `intervals` (of search, in virtual seconds) in each of
/// `bins` equal parts of `[0, makespan]`; search after the makespan (tasks stopped by the
/// answer's cancel) is left out.
fn timeline(intervals: &[(f64, f64)], bins: usize, makespan: f64, slots: usize) -> Vec<f64> {
    if bins == 0 || makespan <= 0.0 {
        return Vec::new();
    }
    let width = makespan / bins as f64;
    let mut busy = vec![0.0; bins];
    for &(start, end) in intervals {
        let (start, end) = (start.max(0.0), end.min(makespan));
        if end <= start {
            continue;
        }
        let first = ((start / width) as usize).min(bins - 1);
        let last = ((end / width) as usize).min(bins - 1);
        for (bin, b) in busy.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (bin as f64 * width, (bin + 1) as f64 * width);
            *b += end.min(hi) - start.max(lo);
        }
    }
    let capacity = width * slots.max(1) as f64;
    busy.into_iter().map(|b| b / capacity).collect()
}
