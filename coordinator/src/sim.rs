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
//! asked back before it started, it is answered [`Report::NotStarted`] at once; a cancel drops
//! the job's queued tasks (answered cancelled) before it stops the running ones.
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

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npuzzle_solver::{
    ABSORB_NODES, ABSORB_PIECE_NODES, Board, BoundTrace, HeuristicKind, Move, Solver, Trace,
    TraceEntry, dfs_key,
};

use crate::scheduler::{
    Assignment, Capabilities, Command, HandedBack, JobId, JobSpec, Report, Scheduler,
    SchedulerConfig, TaskId, UnitResult, WorkerId,
};

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
    /// docs/performance.md): 1.2–2 µs per event on up to 64 slots, 4.0–4.7 µs on #29 and #36
    /// from 1,024 slots on (more tasks and workers than the caches hold), with 1.0–1.1 commands
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

/// One job's trace, indexed for the simulated workers.
struct JobTrace {
    trace: Trace,
    /// Per bound: the entries' prefixes as ranks, for range searches in depth-first order.
    keys: Vec<Vec<Vec<u8>>>,
}

/// How a simulated search of one task goes.
struct Outcome {
    /// Nodes until it reports.
    cost: u64,
    report: Report,
    iterations: Vec<(u32, u64)>,
}

impl JobTrace {
    fn new(trace: Trace) -> JobTrace {
        let keys = trace
            .bounds
            .iter()
            .map(|b| b.entries.iter().map(|e| dfs_key(&e.prefix)).collect())
            .collect();
        JobTrace { trace, keys }
    }

    fn bound_index(&self, bound: u32) -> Option<usize> {
        self.trace.bounds.iter().position(|b| b.bound == bound)
    }

    fn next_bound_after(&self, bound: u32) -> u32 {
        self.trace
            .bounds
            .iter()
            .map(|b| b.bound)
            .find(|&b| b > bound)
            .unwrap_or(bound + 2)
    }

    /// The entries below `prefix` in bound `bi`, and the share of each a task at `prefix` gets
    /// (below 1 when the prefix is deeper than the trace: see [`JobTrace::deep_share`]).
    fn range(&self, bi: usize, prefix: &[Move]) -> (std::ops::Range<usize>, f64) {
        let keys = &self.keys[bi];
        let depth = self.trace.bounds[bi].depth as usize;
        let (key, share) = if prefix.len() > depth {
            (dfs_key(&prefix[..depth]), self.deep_share(prefix, depth))
        } else {
            (dfs_key(prefix), 1.0)
        };
        let start = keys.partition_point(|k| k.as_slice() < key.as_slice());
        let end = start + keys[start..].partition_point(|k| k.starts_with(&key));
        (start..end, share)
    }

    /// The share of a traced subtree (at `depth`) that lies below `prefix`, deeper. The trace
    /// knows nothing below its depth, so a node's nodes are shared evenly among its children
    /// (the blank's moves other than back): a subtree's nodes stay the sum of its pieces'.
    fn deep_share(&self, prefix: &[Move], depth: usize) -> f64 {
        let Ok(mut board) = self.trace.board.apply(&prefix[..depth]) else {
            return 0.0;
        };
        let mut share = 1.0f64;
        for (i, &mv) in prefix.iter().enumerate().skip(depth) {
            let last = i.checked_sub(1).map(|j| prefix[j]);
            share /= children(&board, last).len().max(1) as f64;
            let Some(next) = board.after(mv) else {
                return 0.0;
            };
            board = next;
        }
        share
    }

    /// A depth-first search of the subtree at `root` (`nodes` in all, shared among children as
    /// in [`JobTrace::deep_share`]) that stops after `budget` nodes, as a real search asked back
    /// does: the nodes it searched, and the siblings it had not reached on each level of its
    /// path, deepest first (the order a real search hands them back in), with their nodes.
    fn stop_inside(&self, root: &[Move], nodes: u64, budget: u64) -> (u64, Vec<(Vec<Move>, u64)>) {
        let Ok(mut board) = self.trace.board.apply(root) else {
            return (nodes, Vec::new());
        };
        let mut path = root.to_vec();
        let (mut left, mut budget) = (nodes, budget);
        let mut spent = 0u64;
        let mut levels: Vec<Vec<(Vec<Move>, u64)>> = Vec::new();
        loop {
            let kids = children(&board, path.last().copied());
            // What is left fits in the budget (or nothing below can be split): searched whole.
            if left <= budget.saturating_add(1) || kids.is_empty() || path.len() >= 255 {
                spent += left;
                break;
            }
            let child = (left - 1) / kids.len() as u64;
            spent += 1;
            budget = budget.saturating_sub(1);
            let mut next = 0;
            while next + 1 < kids.len() && budget >= child {
                spent += child;
                budget -= child;
                next += 1;
            }
            levels.push(
                kids[next + 1..]
                    .iter()
                    .map(|&m| {
                        let mut p = path.clone();
                        p.push(m);
                        (p, child)
                    })
                    .collect(),
            );
            let Some(b) = board.after(kids[next]) else {
                break;
            };
            board = b;
            path.push(kids[next]);
            left = child;
        }
        (spent, levels.into_iter().rev().flatten().collect())
    }

    /// Task `prefix` under bound index `bi`, stopping once `stop_at` nodes are searched: its
    /// nodes and what it reports.
    fn search_bound(
        &self,
        bi: usize,
        prefix: &[Move],
        stop_at: u64,
        absorb: bool,
    ) -> (u64, Report) {
        let b = &self.trace.bounds[bi];
        let (range, share) = self.range(bi, prefix);
        // As the real search does (`Solver::search_unit`, a task of one bound): the first
        // pieces, in depth-first order, are searched here while each ends within
        // `ABSORB_PIECE_NODES` and all within `ABSORB_NODES`; the first that needs more is
        // handed back whole, with the rest.
        let split = |mut nodes: u64, pieces: Vec<(Vec<Move>, u64)>| {
            let mut spent = 0u64;
            let mut kept = Vec::new();
            let mut open = absorb;
            for (p, n) in pieces {
                if open && spent + ABSORB_PIECE_NODES <= ABSORB_NODES {
                    let holds = b.found.is_some() && self.trace.path.starts_with(&p);
                    if n <= ABSORB_PIECE_NODES {
                        spent += n;
                        if holds {
                            return (
                                nodes + spent,
                                Report::Found(self.trace.path[prefix.len()..].to_vec()),
                            );
                        }
                        continue;
                    }
                    spent += ABSORB_PIECE_NODES;
                }
                open = false;
                kept.push((p, n));
            }
            nodes += spent;
            if kept.is_empty() {
                return (
                    nodes,
                    Report::Exhausted {
                        next_bound: self.next_bound_after(b.bound),
                    },
                );
            }
            (
                nodes,
                Report::Split {
                    bound: b.bound,
                    next_bound: u32::MAX,
                    pieces: handed_back(b.bound, prefix.len(), kept),
                },
            )
        };
        let mut nodes = 0u64;
        for i in range.clone() {
            let entry = &b.entries[i];
            let entry_nodes = ((entry.nodes as f64) * share).ceil() as u64;
            if b.found == Some(i) && self.trace.path.starts_with(prefix) {
                return (
                    nodes + entry_nodes,
                    Report::Found(self.trace.path[prefix.len()..].to_vec()),
                );
            }
            if nodes + entry_nodes > stop_at {
                // Stopped inside this subtree: its siblings not reached, then the entries after.
                let root = if prefix.len() > entry.prefix.len() {
                    prefix
                } else {
                    &entry.prefix
                };
                let (spent, mut pieces) = self.stop_inside(root, entry_nodes, stop_at - nodes);
                nodes += spent;
                pieces.extend(self.rest(bi, entry, i + 1..range.end));
                if pieces.is_empty() {
                    continue;
                }
                return split(nodes, pieces);
            }
            nodes += entry_nodes;
            if nodes >= stop_at && i + 1 < range.end {
                return split(nodes, self.rest(bi, entry, i + 1..range.end));
            }
        }
        (
            nodes.max(1),
            Report::Exhausted {
                next_bound: self.next_bound_after(b.bound),
            },
        )
    }

    /// The entries `rest`, which follow `stopped` in depth-first order, grouped into the
    /// sibling subtrees they hang from (one group for each level of `stopped`'s path where
    /// they leave it), with their nodes.
    fn rest(
        &self,
        bi: usize,
        stopped: &TraceEntry,
        rest: std::ops::Range<usize>,
    ) -> Vec<(Vec<Move>, u64)> {
        let b = &self.trace.bounds[bi];
        let mut pieces: Vec<(Vec<Move>, u64)> = Vec::new();
        for i in rest {
            let e = &b.entries[i].prefix;
            let split = e
                .iter()
                .zip(&stopped.prefix)
                .position(|(a, b)| a != b)
                .unwrap_or(e.len().min(stopped.prefix.len()));
            let root = &e[..(split + 1).min(e.len())];
            match pieces.last_mut() {
                Some((p, n)) if p.as_slice() == root => *n += b.entries[i].nodes,
                _ => pieces.push((root.to_vec(), b.entries[i].nodes)),
            }
        }
        pieces
    }

    /// A task of a bound above the trace's last (searched ahead of the answer's bound, before
    /// the answer is found): the trace's last bound has the whole subtree, and a bound two
    /// higher searches it again grown by the trace's last growth per step (as the scheduler
    /// predicts). It reports the subtree exhausted (a path it may hold is longer than the
    /// answer, which is never waited on), and asked back it hands back the same pieces as at
    /// the last bound, with the same slack. `None` for a bound within the trace.
    fn beyond_the_trace(&self, a: &Assignment, stop_at: u64) -> Option<Outcome> {
        let bounds = &self.trace.bounds;
        let last = bounds.len().checked_sub(1)?;
        let top = bounds[last].bound;
        if a.bound <= top {
            return None;
        }
        let growth = match last.checked_sub(1) {
            Some(before) if bounds[before].total() > 0 => {
                (bounds[last].total() as f64 / bounds[before].total() as f64).clamp(1.0, 50.0)
            }
            _ => 4.0,
        };
        let scale = growth.powf((a.bound - top) as f64 / 2.0);
        let scaled_stop = (stop_at as f64 / scale).min(u64::MAX as f64) as u64;
        let (cost, report) = self.search_bound(last, &a.work.prefix, scaled_stop, true);
        let cost = ((cost as f64 * scale).ceil() as u64).max(1);
        let next_bound = a.bound + 2;
        let report = match report {
            Report::Split {
                next_bound: n,
                pieces,
                ..
            } => Report::Split {
                bound: a.bound,
                next_bound: n,
                pieces: pieces
                    .into_iter()
                    .map(|p| HandedBack {
                        f: p.f + (a.bound - top),
                        moves: p.moves,
                    })
                    .collect(),
            },
            _ => Report::Exhausted { next_bound },
        };
        Some(Outcome {
            cost,
            report,
            iterations: Vec::new(),
        })
    }

    /// A task's simulated search: one bound, or (`iterate`) bound after bound from `bound`.
    fn search(&self, a: &Assignment, stop_at: u64) -> Outcome {
        let prefix = &a.work.prefix;
        if !a.iterate {
            if let Some(outcome) = self.beyond_the_trace(a, stop_at) {
                return outcome;
            }
            let Some(bi) = self.bound_index(a.bound) else {
                // Below the worker's own value at the unit's root: pruned at once.
                return Outcome {
                    cost: 1,
                    report: Report::Exhausted {
                        next_bound: self.next_bound_after(a.bound),
                    },
                    iterations: Vec::new(),
                };
            };
            let (cost, report) = self.search_bound(bi, prefix, stop_at, true);
            return Outcome {
                cost,
                report,
                iterations: Vec::new(),
            };
        }
        let mut spent = 0u64;
        let mut iterations = Vec::new();
        for (bi, b) in self.trace.bounds.iter().enumerate() {
            if b.bound < a.bound {
                continue;
            }
            let (nodes, report) =
                self.search_bound(bi, prefix, stop_at.saturating_sub(spent), false);
            spent += nodes + b.internal;
            iterations.push((b.bound, nodes + b.internal));
            match report {
                Report::Exhausted { .. } if spent < stop_at => continue,
                Report::Exhausted { .. } => {
                    // Stopped just as the bound ended: the next bound's root is the one piece.
                    let next = self.next_bound_after(b.bound);
                    return Outcome {
                        cost: spent,
                        report: Report::Split {
                            bound: next,
                            next_bound: u32::MAX,
                            pieces: vec![HandedBack {
                                moves: Vec::new(),
                                f: next,
                            }],
                        },
                        iterations: {
                            iterations.push((next, 0));
                            iterations
                        },
                    };
                }
                report => {
                    return Outcome {
                        cost: spent,
                        report,
                        iterations,
                    };
                }
            }
        }
        Outcome {
            cost: spent.max(1),
            report: Report::Failed("the trace ends before a path".into()),
            iterations,
        }
    }
}

/// The pieces a simulated search hands back, from their paths (from the job's root) and nodes:
/// moves below the task's `prefix_len` moves, and f from each piece's size (a subtree grows
/// about 4 times per 2 of slack).
fn handed_back(bound: u32, prefix_len: usize, pieces: Vec<(Vec<Move>, u64)>) -> Vec<HandedBack> {
    let smallest = pieces.iter().map(|p| p.1).min().unwrap_or(1).max(1) as f64;
    pieces
        .into_iter()
        .map(|(p, n)| {
            let slack = (2.0 * (n.max(1) as f64 / smallest).ln() / 4f64.ln()).round() as u32;
            HandedBack {
                moves: p[prefix_len.min(p.len())..].to_vec(),
                f: bound.saturating_sub(slack),
            }
        })
        .collect()
}

/// The blank's moves from `board` in the search's order, other than back along `last`.
fn children(board: &Board, last: Option<Move>) -> Vec<Move> {
    Move::SEARCH_ORDER
        .into_iter()
        .filter(|&m| Some(m.opposite()) != last && board.after(m).is_some())
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct TaskKey {
    job: JobId,
    epoch: u32,
    task: TaskId,
}

enum Event {
    /// An assignment reaches its worker.
    Start {
        worker: WorkerId,
        assignment: Assignment,
    },
    /// A running task stops (if `generation` is still its own).
    End { key: TaskKey, generation: u64 },
    /// A yield reaches the worker.
    Yield {
        worker: WorkerId,
        key: TaskKey,
        after_nodes: u64,
    },
    /// A cancel reaches the worker.
    Cancel { worker: WorkerId, job: JobId },
    /// A result reaches the coordinator.
    Result {
        worker: WorkerId,
        result: UnitResult,
    },
    /// A client's request reaches the coordinator.
    Submit { index: usize },
    /// The coordinator is done with its current call.
    CoordinatorFree,
}

/// A message for the coordinator, in its queue.
enum Inbound {
    Result {
        worker: WorkerId,
        result: UnitResult,
    },
    Submit {
        index: usize,
    },
}

struct Scheduled {
    at: f64,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    // The earliest first from a max-heap; ties in the order scheduled.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

struct Running {
    worker: WorkerId,
    assignment: Assignment,
    started: f64,
    generation: u64,
    outcome: Outcome,
}

struct Sim<'a> {
    config: &'a SimConfig,
    jobs: Vec<JobTrace>,
    solvers: HashMap<npuzzle_solver::Goal, Arc<Solver>>,
    scheduler: Scheduler,
    epoch: Instant,
    queue: BinaryHeap<Scheduled>,
    seq: u64,
    now: f64,
    running: HashMap<TaskKey, Running>,
    /// The keys of `running` by worker: what a cancel stops, without a scan of every task.
    running_on: HashMap<WorkerId, BTreeSet<TaskKey>>,
    /// Each worker's slots, and the tasks it holds ahead of them (not started), oldest first.
    slots_of: HashMap<WorkerId, usize>,
    waiting: HashMap<WorkerId, VecDeque<Assignment>>,
    generation: u64,
    report: SimReport,
    /// Per (job, bound), its tasks so far: `report.bounds` at the end, in that order.
    spans: BTreeMap<(u64, u32), BoundSpan>,
    /// When each task searched, if a timeline is asked for: `report.timeline` at the end.
    intervals: Vec<(f64, f64)>,
    next_job: usize,
    answered: usize,
    last_answer: f64,
    /// Job id → trace index.
    job_trace: HashMap<JobId, usize>,
    /// Messages that reached the coordinator while it was busy, with when they arrived.
    inbox: VecDeque<(f64, Inbound)>,
    /// Whether the coordinator is in a call (until its `CoordinatorFree`).
    busy: bool,
}

impl Sim<'_> {
    fn at(&mut self, delay: f64, event: Event) {
        self.seq += 1;
        self.queue.push(Scheduled {
            at: self.now + delay,
            seq: self.seq,
            event,
        });
    }

    fn rate(&self, job: JobId) -> f64 {
        self.config
            .rate
            .unwrap_or(self.jobs[self.job_trace[&job]].trace.rate)
            .max(1.0)
    }

    fn instant(&self) -> Instant {
        self.epoch + Duration::from_secs_f64(self.now)
    }

    /// A message reaches the coordinator: handled now if it is free, else queued behind what
    /// it is doing.
    fn arrive(&mut self, message: Inbound) {
        self.inbox.push_back((self.now, message));
        if !self.busy {
            self.serve();
        }
    }

    /// Handles queued messages until a call occupies the coordinator (or none is left).
    fn serve(&mut self) {
        while let Some((arrived, message)) = self.inbox.pop_front() {
            let wait = self.now - arrived;
            self.report.wait_secs += wait;
            self.report.max_wait_secs = self.report.max_wait_secs.max(wait);
            let cost = match message {
                Inbound::Submit { index } => self.submit(index),
                Inbound::Result { worker, result } => {
                    self.scheduler_call(true, |s, now| s.on_result(worker, result, now))
                }
            };
            if cost > 0.0 {
                self.busy = true;
                self.at(cost, Event::CoordinatorFree);
                return;
            }
        }
    }

    /// Calls into the scheduler, timing it, and carries out what it says once the call's cost
    /// (if `charged`) has passed. Returns that cost, in virtual seconds.
    fn scheduler_call(
        &mut self,
        charged: bool,
        call: impl FnOnce(&mut Scheduler, Instant) -> Vec<Command>,
    ) -> f64 {
        let now = self.instant();
        let started = Instant::now();
        let commands = call(&mut self.scheduler, now);
        let measured = started.elapsed();
        self.report.scheduler_secs += measured.as_secs_f64();
        self.report.events += 1;
        self.report.commands += commands.len() as u64;
        let cost = if charged {
            self.config
                .coordinator_cost
                .charge(measured, commands.len())
        } else {
            0.0
        };
        self.report.coordinator_secs += cost;
        // What it sends leaves when the call is over.
        let latency = cost + self.config.latency.as_secs_f64();
        for command in commands {
            match command {
                Command::Assign { worker, assignment } => {
                    self.report.assignments += 1;
                    self.at(latency, Event::Start { worker, assignment });
                }
                Command::Yield {
                    worker,
                    job,
                    epoch,
                    task,
                    after_nodes,
                } => {
                    self.report.yields += 1;
                    let key = TaskKey { job, epoch, task };
                    self.at(
                        latency,
                        Event::Yield {
                            worker,
                            key,
                            after_nodes,
                        },
                    );
                }
                Command::Cancel { worker, job } => self.at(latency, Event::Cancel { worker, job }),
                Command::Finish {
                    job,
                    outcome,
                    stats,
                } => {
                    let index = self.job_trace[&job];
                    let trace = &self.jobs[index].trace;
                    match outcome {
                        crate::scheduler::JobOutcome::Solved { path }
                            if path.len() == trace.path.len() => {}
                        _ => self.report.wrong += 1,
                    }
                    self.report.nodes += stats.nodes;
                    self.report.splits += stats.splits as u64;
                    self.answered += 1;
                    // The answer reaches the client, who sends its next board.
                    self.last_answer = self.now + latency;
                    self.report.coordinator_secs_to_answer = self.report.coordinator_secs;
                    if self.next_job < self.jobs.len() {
                        let next = self.next_job;
                        self.next_job += 1;
                        let back = latency + self.config.latency.as_secs_f64();
                        self.at(back, Event::Submit { index: next });
                    }
                }
                Command::Progress { .. } | Command::Disconnect { .. } | Command::Revoked { .. } => {
                }
            }
        }
        cost
    }

    /// An assignment reaches `worker`: it starts on a free slot, else waits for one.
    fn arrive_at_worker(&mut self, worker: WorkerId, assignment: Assignment) {
        let busy = self.running_on.get(&worker).map_or(0, BTreeSet::len);
        if busy < self.slots_of.get(&worker).copied().unwrap_or(1) {
            self.start(worker, assignment);
        } else {
            self.waiting
                .entry(worker)
                .or_default()
                .push_back(assignment);
        }
    }

    fn start(&mut self, worker: WorkerId, assignment: Assignment) {
        let key = TaskKey {
            job: assignment.job,
            epoch: assignment.epoch,
            task: assignment.task,
        };
        let outcome = self.jobs[self.job_trace[&assignment.job]].search(&assignment, u64::MAX);
        self.generation += 1;
        let duration = outcome.cost as f64 / self.rate(assignment.job);
        let generation = self.generation;
        self.running_on.entry(worker).or_default().insert(key);
        self.running.insert(
            key,
            Running {
                worker,
                assignment,
                started: self.now,
                generation,
                outcome,
            },
        );
        self.at(duration, Event::End { key, generation });
    }

    fn end(&mut self, key: TaskKey) {
        let Some(r) = self.running.remove(&key) else {
            return;
        };
        if let Some(keys) = self.running_on.get_mut(&r.worker) {
            keys.remove(&key);
        }
        let busy = r.outcome.cost as f64 / self.rate(key.job);
        self.report.busy_secs += busy;
        self.bound_span(key.job, r.assignment.bound, r.started, busy);
        if self.config.timeline_bins > 0 {
            self.intervals.push((r.started, r.started + busy));
        }
        let result = UnitResult {
            job: key.job,
            epoch: key.epoch,
            task: key.task,
            report: r.outcome.report,
            expanded: r.outcome.cost,
            iterations: r.outcome.iterations,
        };
        self.at(
            self.config.latency.as_secs_f64(),
            Event::Result {
                worker: r.worker,
                result,
            },
        );
        // The slot takes the next task waiting on this worker at once.
        if let Some(next) = self
            .waiting
            .get_mut(&r.worker)
            .and_then(VecDeque::pop_front)
        {
            self.start(r.worker, next);
        }
    }

    /// Counts a task of `job` under `bound` that ran `busy` seconds from `started`.
    fn bound_span(&mut self, job: JobId, bound: u32, started: f64, busy: f64) {
        let span = self.spans.entry((job.0, bound)).or_insert(BoundSpan {
            job: job.0,
            bound,
            first_start: started,
            ..BoundSpan::default()
        });
        span.first_start = span.first_start.min(started);
        span.last_end = span.last_end.max(started + busy);
        span.tasks += 1;
        span.busy_secs += busy;
    }

    /// `worker` answers for an assignment it held without starting it.
    fn answer_unstarted(&mut self, worker: WorkerId, a: &Assignment, report: Report) {
        let result = UnitResult {
            job: a.job,
            epoch: a.epoch,
            task: a.task,
            report,
            expanded: 0,
            iterations: Vec::new(),
        };
        self.at(
            self.config.latency.as_secs_f64(),
            Event::Result { worker, result },
        );
    }

    fn yield_task(&mut self, worker: WorkerId, key: TaskKey, after_nodes: u64) {
        let queue = self.waiting.entry(worker).or_default();
        let unstarted = queue
            .iter()
            .position(|a| (a.job, a.epoch, a.task) == (key.job, key.epoch, key.task));
        if let Some(a) = unstarted.and_then(|i| queue.remove(i)) {
            self.report.taken_back += 1;
            self.answer_unstarted(worker, &a, Report::NotStarted);
            return;
        }
        let rate = self.rate(key.job);
        let Some(r) = self.running.get(&key) else {
            return;
        };
        let progress = ((self.now - r.started) * rate) as u64;
        let stop_at = progress.max(after_nodes);
        if stop_at >= r.outcome.cost {
            return;
        }
        let outcome = self.jobs[self.job_trace[&key.job]].search(&r.assignment, stop_at);
        self.generation += 1;
        let generation = self.generation;
        let ends = r.started + outcome.cost as f64 / rate;
        if let Some(r) = self.running.get_mut(&key) {
            r.outcome = outcome;
            r.generation = generation;
        }
        self.at((ends - self.now).max(0.0), Event::End { key, generation });
    }

    fn cancel(&mut self, worker: WorkerId, job: JobId) {
        // Its tasks waiting here go first, so that no freed slot starts one.
        let queue = self.waiting.entry(worker).or_default();
        let (dropped, kept): (VecDeque<Assignment>, VecDeque<Assignment>) =
            queue.drain(..).partition(|a| a.job == job);
        *queue = kept;
        for a in dropped {
            self.report.cancelled_unstarted += 1;
            self.answer_unstarted(worker, &a, Report::Cancelled);
        }
        let rate = self.rate(job);
        let keys: Vec<TaskKey> = self
            .running_on
            .get(&worker)
            .into_iter()
            .flatten()
            .filter(|k| k.job == job)
            .copied()
            .collect();
        for key in keys {
            if let Some(r) = self.running.get_mut(&key) {
                let progress = ((self.now - r.started) * rate) as u64;
                r.outcome = Outcome {
                    cost: progress.min(r.outcome.cost),
                    report: Report::Cancelled,
                    iterations: Vec::new(),
                };
            }
            self.end(key);
        }
    }

    /// The client's request for trace `index`; returns what the call cost.
    fn submit(&mut self, index: usize) -> f64 {
        let job = JobId(index as u64 + 1);
        self.job_trace.insert(job, index);
        let trace = &self.jobs[index].trace;
        let goal = trace.goal;
        let root = trace.board;
        let solver = Arc::clone(self.solvers.entry(goal).or_insert_with(|| {
            Arc::new(
                Solver::new(goal, HeuristicKind::best_for(goal.shape()))
                    .unwrap_or_else(|_| unreachable!("best_for supports its shape")),
            )
        }));
        let spec = JobSpec::whole(job, goal, HeuristicKind::Pdb, solver, root);
        self.scheduler_call(true, |s, _| s.submit(spec))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use npuzzle_solver::{Goal, Limits, SearchOutcome, Shape, WorkUnit};

    /// A trace of Korf's #12 with linear conflict, recorded here.
    fn korf12() -> Trace {
        let goal = Goal::blank_first(Shape::new(4, 4).unwrap());
        let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
        let board =
            npuzzle_solver::Board::parse("14 1 9 6 4 8 12 5 7 2 3 0 10 11 13 15", None).unwrap();
        let report = solver.solve(&board, &Limits::default()).unwrap();
        let SearchOutcome::Solved(path) = report.outcome else {
            panic!()
        };
        let bounds = report
            .stats
            .iterations
            .iter()
            .map(|i| solver.trace_bound(&board, i.bound, 6).unwrap())
            .collect();
        Trace {
            board,
            goal,
            heuristic: "lc".into(),
            rate: 1e7,
            path,
            bounds,
        }
    }

    /// The nodes a simulated task at `prefix` (from the root) takes under bound index `bi`.
    fn task_nodes(job: &JobTrace, bi: usize, prefix: &[Move]) -> u64 {
        job.search_bound(bi, prefix, u64::MAX, true).0
    }

    /// Korf's #12 as a simulated job, the index of its bound before the last, and that bound's
    /// largest traced subtree.
    fn largest_subtree_before_the_last_bound() -> (JobTrace, usize, TraceEntry) {
        let job = JobTrace::new(korf12());
        let bi = job.trace.bounds.len() - 2;
        let entry = (job.trace.bounds[bi].entries.iter())
            .max_by_key(|e| e.nodes)
            .expect("entries")
            .clone();
        (job, bi, entry)
    }

    #[test]
    fn a_subtree_below_the_trace_depth_is_shared_among_its_children_without_loss() {
        let (job, bi, entry) = largest_subtree_before_the_last_bound();
        assert_eq!(entry.prefix.len(), job.trace.bounds[bi].depth as usize);
        let board = job.trace.board.apply(&entry.prefix).expect("legal prefix");
        let kids = children(&board, entry.prefix.last().copied());
        assert!(kids.len() >= 2, "{kids:?}");
        let sum: u64 = (kids.iter())
            .map(|&m| {
                let mut p = entry.prefix.clone();
                p.push(m);
                task_nodes(&job, bi, &p)
            })
            .sum();
        // Each child's share is rounded up.
        assert!(
            sum >= entry.nodes && sum <= entry.nodes + kids.len() as u64,
            "{sum} against {}",
            entry.nodes
        );
    }

    #[test]
    fn a_task_at_the_trace_depth_asked_back_hands_back_its_rest_as_a_real_search_does() {
        let (job, bi, entry) = largest_subtree_before_the_last_bound();
        let b = &job.trace.bounds[bi];
        assert!(entry.nodes > 100, "{}", entry.nodes);
        let stop_at = entry.nodes / 10;
        let (spent, report) = job.search_bound(bi, &entry.prefix, stop_at, true);
        let Report::Split { bound, pieces, .. } = report else {
            panic!("one traced subtree, stopped early, still ran whole: {report:?}");
        };
        assert_eq!(bound, b.bound);
        assert!(spent >= stop_at && spent < entry.nodes, "{spent}");
        // The pieces continue the task's prefix with legal moves, none twice, and hold the
        // rest of its nodes.
        let mut rest = 0u64;
        let mut seen = std::collections::HashSet::new();
        for piece in &pieces {
            assert!(!piece.moves.is_empty() && piece.f <= b.bound, "{piece:?}");
            let mut path = entry.prefix.clone();
            path.extend(&piece.moves);
            job.trace.board.apply(&path).expect("legal moves");
            assert!(seen.insert(path.clone()), "{path:?} twice");
            rest += task_nodes(&job, bi, &path);
        }
        // Searched: the part before the stop, the smallest pieces, and at most one piece's
        // share of a piece given up and handed back whole.
        let total = spent + rest;
        let slack = 4 * pieces.len() as u64 + 64 + ABSORB_PIECE_NODES;
        assert!(
            total + slack >= entry.nodes && total <= entry.nodes + slack,
            "{spent} searched + {rest} handed back against {} nodes",
            entry.nodes
        );
    }

    #[test]
    fn a_task_above_the_last_traced_bound_searches_its_subtree_grown_not_nothing() {
        let job = JobTrace::new(korf12());
        let bounds = &job.trace.bounds;
        let last = bounds.len() - 1;
        let entry = (bounds[last].entries.iter())
            .filter(|e| !job.trace.path.starts_with(&e.prefix))
            .max_by_key(|e| e.nodes)
            .expect("entries")
            .clone();
        assert!(entry.nodes > 100, "{}", entry.nodes);
        let growth = bounds[last].total() as f64 / bounds[last - 1].total() as f64;
        assert!(growth > 1.0, "{growth}");
        let above = bounds[last].bound + 2;
        let assignment = Assignment {
            job: JobId(1),
            epoch: 1,
            task: TaskId(0),
            work: std::sync::Arc::new(WorkUnit {
                board: job.trace.board.apply(&entry.prefix).expect("legal prefix"),
                g: entry.prefix.len() as u32,
                last: entry.prefix.last().copied(),
                prefix: entry.prefix.clone(),
                trail: Vec::new(),
            }),
            goal: job.trace.goal,
            heuristic: HeuristicKind::LinearConflict,
            bound: above,
            node_budget: 0,
            iterate: false,
        };
        // Searched whole: the subtree's nodes at the last bound, grown by one step.
        let whole = job.search(&assignment, u64::MAX);
        assert_eq!(
            whole.report,
            Report::Exhausted {
                next_bound: above + 2
            }
        );
        let expected = entry.nodes as f64 * growth;
        assert!(
            (whole.cost as f64 - expected).abs() <= growth + 1.0,
            "{} nodes against {expected}",
            whole.cost
        );
        // Asked back part-way: it hands back pieces of its own bound, having searched about
        // what it was allowed.
        let stop_at = whole.cost / 4;
        let stopped = job.search(&assignment, stop_at);
        let Report::Split { bound, pieces, .. } = stopped.report else {
            panic!("stopped early, it still ran whole: {:?}", stopped.report);
        };
        assert_eq!(bound, above);
        assert!(!pieces.is_empty() && pieces.iter().all(|p| p.f <= above));
        assert!(
            stopped.cost >= stop_at && stopped.cost < whole.cost,
            "{} of {}",
            stopped.cost,
            whole.cost
        );
    }

    /// 8 slots, with a whole job cut after 2,000 nodes and units down to 1,000: Korf #12 is cut
    /// over several bounds.
    fn eight_slots_cut_early() -> SimConfig {
        SimConfig {
            slots: 8,
            scheduler: SchedulerConfig {
                hand_back_after: 2_000,
                min_split_nodes: 1_000,
                ..SchedulerConfig::default()
            },
            ..SimConfig::default()
        }
    }

    #[test]
    fn one_slot_takes_the_serial_time_and_more_slots_less() {
        let trace = korf12();
        let serial = serial_nodes(&trace);
        let one = simulate(
            std::slice::from_ref(&trace),
            &SimConfig {
                slots: 1,
                ..SimConfig::default()
            },
        );
        assert_eq!(one.wrong, 0);
        assert_eq!(
            one.nodes, serial,
            "one slot searches the job whole: {one:?}"
        );
        // The search's own time, and a few messages (100 µs each) on top: the unit out, its
        // result back, the answer out.
        let latency = SimConfig::default().latency.as_secs_f64();
        assert!(one.makespan < one.serial_secs + 5.0 * latency, "{one:?}");
        let eight = simulate(std::slice::from_ref(&trace), &eight_slots_cut_early());
        assert_eq!(eight.wrong, 0);
        assert!(eight.yields > 0 && eight.speedup() > 1.5, "{eight:?}");
    }

    #[test]
    fn a_saturated_coordinator_lengthens_the_makespan() {
        let trace = korf12();
        let run = |coordinator_cost| {
            simulate(
                std::slice::from_ref(&trace),
                &SimConfig {
                    slots: 32,
                    coordinator_cost,
                    ..SimConfig::default()
                },
            )
        };
        let free = run(CoordinatorCost::Free);
        assert_eq!(free.coordinator_secs, 0.0);
        // Far slower than the search per event: the coordinator is the bottleneck.
        let slow = run(CoordinatorCost::Calibrated {
            per_event: Duration::from_millis(1),
            per_command: Duration::ZERO,
        });
        for r in [&free, &slow] {
            assert_eq!(r.wrong, 0, "{r:?}");
        }
        // Every event is charged (but the 32 joins, before the batch); one thread: its busy
        // time up to the answer fits in the makespan.
        let charged = (slow.events - 32) as f64 * 1e-3;
        assert!((slow.coordinator_secs - charged).abs() < 1e-9, "{slow:?}");
        assert!(slow.coordinator_secs_to_answer > 0.0, "{slow:?}");
        assert!(slow.makespan >= slow.coordinator_secs_to_answer, "{slow:?}");
        assert!(slow.coordinator_load() > 0.5, "{slow:?}");
        assert!(slow.mean_wait() > 0.0 && slow.max_wait_secs >= slow.mean_wait());
        assert!(
            slow.makespan > free.makespan + 0.5 * slow.coordinator_secs_to_answer,
            "{free:?} {slow:?}"
        );
    }

    #[test]
    fn the_timeline_holds_the_slot_time_searched_before_the_answer() {
        let trace = korf12();
        let config = SimConfig {
            timeline_bins: 40,
            ..eight_slots_cut_early()
        };
        let r = simulate(std::slice::from_ref(&trace), &config);
        assert_eq!(r.wrong, 0);
        assert_eq!(r.timeline.len(), 40);
        assert!(
            r.timeline.iter().all(|&u| (0.0..=1.0 + 1e-9).contains(&u)),
            "{r:?}"
        );
        let width = r.makespan / 40.0;
        let in_bins: f64 = r.timeline.iter().sum::<f64>() * width * config.slots as f64;
        // Only what the cancels stopped after the answer is left out: at most a round trip on
        // every slot.
        let after = config.slots as f64 * 2.0 * config.latency.as_secs_f64();
        assert!(in_bins <= r.busy_secs + 1e-9, "{in_bins} {r:?}");
        assert!(in_bins >= r.busy_secs - after, "{in_bins} {r:?}");
        // The job starts whole on one slot (an eighth of the slots at most) and is cut later.
        assert!(r.timeline[0] <= 0.125 + 1e-9, "{:?}", r.timeline);
        assert!(r.timeline.iter().any(|&u| u > 0.7), "{:?}", r.timeline);
        // None asked for, none kept.
        let plain = simulate(std::slice::from_ref(&trace), &eight_slots_cut_early());
        assert!(plain.timeline.is_empty());
        assert_eq!(plain.makespan, r.makespan);
    }

    #[test]
    fn the_bounds_account_for_every_slot_second_in_bound_order() {
        let trace = korf12();
        let r = simulate(std::slice::from_ref(&trace), &eight_slots_cut_early());
        assert_eq!(r.wrong, 0);
        let tasks: u64 = r.bounds.iter().map(|b| b.tasks).sum();
        let busy: f64 = r.bounds.iter().map(|b| b.busy_secs).sum();
        assert!((busy - r.busy_secs).abs() < 1e-9, "{r:?}");
        // Every task ends once; the ones sent ahead and taken back, or dropped by the cancel
        // after the answer, never started.
        assert_eq!(
            tasks,
            r.assignments - r.taken_back - r.cancelled_unstarted,
            "{r:?}"
        );
        let searched: Vec<u32> = trace.bounds.iter().map(|b| b.bound).collect();
        // Once cut, the job's tasks are searched under the trace's own bounds, and under
        // bounds past the answer's that units went on to before the answer came.
        let cut: Vec<u32> = r.bounds.iter().skip(1).map(|b| b.bound).collect();
        assert!(cut.len() >= 2, "the job was cut: {r:?}");
        assert!(cut.windows(2).all(|w| w[0] < w[1]), "{cut:?}");
        let answer = *searched.last().expect("a trace holds its answer's bound");
        assert!(
            cut.iter().all(|b| searched.contains(b) || *b > answer),
            "{cut:?} {searched:?}"
        );
        assert!(cut.contains(&answer), "the answer's bound: {cut:?}");
        for b in &r.bounds {
            assert!(
                b.first_start <= b.last_end && b.last_end <= r.makespan + 1e-9,
                "{b:?}"
            );
        }
    }

    #[test]
    fn the_same_run_gives_the_same_figures() {
        let trace = korf12();
        let config = SimConfig {
            slots: 16,
            ..SimConfig::default()
        };
        let a = simulate(std::slice::from_ref(&trace), &config);
        let b = simulate(std::slice::from_ref(&trace), &config);
        assert_eq!(
            (a.makespan, a.nodes, a.assignments, a.yields),
            (b.makespan, b.nodes, b.assignments, b.yields)
        );
    }
}
