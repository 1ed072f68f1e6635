//! What goes in and out of the scheduler: the jobs submitted ([`JobSpec`]), the assignments
//! sent to workers and the results they report ([`Assignment`], [`UnitResult`], [`Report`]),
//! the [`Command`]s the caller carries out, and how a job ended ([`JobOutcome`], [`JobStats`]).
//! These are plain data with no gRPC in them: the service converts them to and from the wire,
//! the simulator and the tests build them directly.

use foldhash::HashMap;
use std::sync::Arc;

use npuzzle_solver::{Goal, HeuristicKind, Move, Shape, Solver, WorkUnit};

/// A job: one search the service asked for (its flight's id). A distinct type from
/// [`WorkerId`] so that passing one for the other does not compile:
///
/// ```compile_fail
/// use npuzzle_coordinator::scheduler::{JobId, WorkerId};
/// let job: JobId = WorkerId(7);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct JobId(pub u64);

/// Who a job counts for when slots are shared (see `runnable.rs`): the client that asked for
/// it, as the coordinator names clients (its address). Jobs of one client share that client's
/// part of the slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct ClientId(pub u64);

/// A worker's membership: a new id each time a worker joins (a worker that joins again is a new
/// member).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct WorkerId(pub u64);

/// A task of a job's current epoch: an index into the job's tasks (a unit, or a piece of one,
/// searched under one bound), not into its units. With the job and the epoch it names one
/// assignment; the wire calls it `unit`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u32);

impl TaskId {
    /// Index bits: below them, the two bits that tell a job's task lists apart (see `job.rs`,
    /// `Layer::slot`): slot 1 in the top bit, as when a job had two lists, slot 2 in the one
    /// below, slot 3 in both.
    const INDEX_BITS: u32 = 30;
    /// Task lists a job may hold at once: the current bound's and up to three ahead.
    pub(crate) const SLOTS: u32 = 4;

    /// The task at `index` in the task list of `slot` (below [`TaskId::SLOTS`];
    /// `max_tasks_per_job` keeps the index below the slot bits).
    pub(crate) fn new(slot: u32, index: usize) -> TaskId {
        let index = index as u32 & ((1 << Self::INDEX_BITS) - 1);
        TaskId(index | (slot & 1) << 31 | (slot >> 1 & 1) << 30)
    }

    /// Its place in its task list.
    pub(crate) fn index(self) -> usize {
        (self.0 & ((1 << Self::INDEX_BITS) - 1)) as usize
    }

    /// Which of a job's task lists it belongs to.
    pub(crate) fn slot(self) -> u32 {
        (self.0 >> 31 & 1) | (self.0 >> 30 & 1) << 1
    }
}

impl From<u64> for JobId {
    fn from(id: u64) -> JobId {
        JobId(id)
    }
}

impl From<u64> for WorkerId {
    fn from(id: u64) -> WorkerId {
        WorkerId(id)
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Counts a job's bounds (and restarts, and audit rounds): results tagged with an older epoch
/// are stale.
pub type Epoch = u32;

/// A job ready to distribute.
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub id: JobId,
    pub goal: Goal,
    /// What the workers search the units with.
    pub heuristic: HeuristicKind,
    /// The coordinator's solver for the same goal, for estimates, splitting and checking paths.
    /// Its heuristic is the job's, except for pattern databases, which the coordinator does not
    /// hold: then linear conflict or exact (the scheduler's module notes say why that is sound).
    pub solver: Arc<Solver>,
    pub root: npuzzle_solver::Board,
    /// The units to search under a shared bound; for a whole job, the root alone.
    pub units: Vec<WorkUnit>,
    /// Search the root as one unit, bound after bound, on one slot, until it is found or asked
    /// back (see the scheduler's module notes).
    pub whole: bool,
    /// Resume from this checkpoint instead of starting at the first bound (checked against
    /// `root`; a checkpoint refused is logged and the job starts from its first bound).
    pub resume: Option<Box<super::Checkpoint>>,
    /// Who the job counts for when slots are shared between clients.
    pub client: ClientId,
}

impl JobSpec {
    /// A job that starts whole: the root as one unit that its worker searches bound after bound.
    pub fn whole(
        id: JobId,
        goal: Goal,
        heuristic: HeuristicKind,
        solver: Arc<Solver>,
        root: npuzzle_solver::Board,
    ) -> JobSpec {
        JobSpec {
            id,
            goal,
            heuristic,
            solver,
            root,
            units: vec![WorkUnit {
                board: root,
                g: 0,
                last: None,
                prefix: Vec::new(),
                trail: Vec::new(),
            }],
            whole: true,
            resume: None,
            client: ClientId::default(),
        }
    }
}

/// One task to search (a unit, or a piece of one), as sent to a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub job: JobId,
    pub epoch: Epoch,
    pub task: TaskId,
    /// Shared with the scheduler's task: sending it copies no moves.
    pub work: Arc<WorkUnit>,
    pub goal: Goal,
    pub heuristic: HeuristicKind,
    pub bound: u32,
    pub node_budget: u64,
    /// Search bound after bound from `bound` (a whole job), not just `bound`.
    pub iterate: bool,
    /// The job's factor: `bound` is on `den·g + num·h` ([`npuzzle_solver::Weight::f`]).
    pub weight: npuzzle_solver::Weight,
}

/// One unsearched subtree a worker handed back: its moves from the assignment's board, and its
/// `g + h` with the worker's heuristic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandedBack {
    pub moves: Vec<Move>,
    pub f: u32,
}

/// What a worker reports for one assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// Moves from the unit's state to the goal, within the bound.
    Found(Vec<Move>),
    Exhausted {
        next_bound: u32,
    },
    Cancelled,
    /// Stopped part-way through `bound` (budget, or asked back) keeping its work: `pieces` are
    /// the rest; `next_bound` the least f above `bound` in what was searched (`u32::MAX`: none).
    Split {
        bound: u32,
        next_bound: u32,
        pieces: Vec<HandedBack>,
    },
    /// The old way to stop at the node budget: the nodes searched are lost.
    BudgetExceeded,
    Failed(String),
    /// The worker cannot search the unit's heuristic for its shape (no pattern databases).
    Unsupported(String),
    /// Asked back before it started (it was queued on the worker behind busy slots, see
    /// [`SchedulerConfig::prefetch`](super::SchedulerConfig::prefetch)): nothing was searched.
    NotStarted,
}

/// A worker's result for one assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitResult {
    pub job: JobId,
    pub epoch: Epoch,
    pub task: TaskId,
    pub report: Report,
    pub expanded: u64,
    /// For an `iterate` assignment: each bound searched and its nodes (the last one partial
    /// unless found in it).
    pub iterations: Vec<(u32, u64)>,
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// An optimal path from the root.
    Solved { path: Vec<Move> },
    /// Stopped before an answer; no solution is shorter than `lower_bound`.
    Cancelled { lower_bound: u32 },
}

/// Job totals, reported with its outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobStats {
    /// Nodes expanded by workers for this job.
    pub nodes: u64,
    /// Tasks searched: units and pieces (1 for a job solved whole).
    pub units: usize,
    /// Units cut ahead of a bound, and tasks that handed back their rest.
    pub splits: usize,
    pub requeued: usize,
    /// Bounds searched.
    pub bounds: Vec<u32>,
    /// Nodes per worker (foldhash: a result's worker is looked up on every event).
    pub worker_nodes: HashMap<WorkerId, u64>,
    /// Running tasks asked to hand back their rest for idle slots, or to give a starving job
    /// a thread.
    pub yields: usize,
    /// Of `yields`, those asked to give a starving job a thread
    /// ([`SchedulerConfig::preempt_slice`](super::SchedulerConfig::preempt_slice)).
    pub preempted: usize,
    /// Nodes searched by tasks that stopped the old way (`BUDGET_EXCEEDED`) and were searched
    /// again: the only work the scheduler throws away.
    pub discarded_nodes: u64,
    /// Reports searched again by another worker, and those that turned out to be lies.
    pub audits: usize,
    pub audits_failed: usize,
}

/// Counts since the scheduler started, over every job (running or over), for the caller to
/// export: the scheduler itself records no metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Assignments handed to workers.
    pub units_assigned: u64,
    /// Units cut into smaller ones (ahead of a bound, or handed back part-searched).
    pub units_split: u64,
    /// Units put back in the queue: their worker was lost, or the unit failed or was refused.
    pub units_requeued: u64,
}

/// What the caller must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Assign {
        worker: WorkerId,
        assignment: Assignment,
    },
    /// Ask `worker` to stop task (`job`, `epoch`, `task`) once it has searched `after_nodes`
    /// nodes and hand back the rest: slots are idle.
    Yield {
        worker: WorkerId,
        job: JobId,
        epoch: Epoch,
        task: TaskId,
        after_nodes: u64,
    },
    /// Stop every unit of `job` on `worker`.
    Cancel { worker: WorkerId, job: JobId },
    /// Close `worker`'s connection: it no longer counts as a member and its units went back to
    /// the queue.
    Disconnect {
        worker: WorkerId,
        reason: DisconnectReason,
    },
    /// `worker` refused a unit it claimed to serve (`UNSUPPORTED` for pattern databases of
    /// `shape`): the claim is struck, and should be struck from its next hellos for a while.
    Revoked { worker: WorkerId, shape: Shape },
    /// A bound started (`finished: false`) or was exhausted everywhere (`finished: true`).
    Progress {
        job: JobId,
        bound: u32,
        nodes: u64,
        units_done: usize,
        units_total: usize,
        finished: bool,
    },
    /// The job is over; it is forgotten after this.
    Finish {
        job: JobId,
        outcome: JobOutcome,
        stats: JobStats,
    },
}

/// Why the scheduler dropped a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisconnectReason {
    /// Silent past the lease timeout. A worker that is still alive (a network cut that healed,
    /// a stall that ended) sees its stream end and joins again as a new member, instead of
    /// lingering connected but never given work.
    LeaseExpired,
    /// It reported a path that does not reach the goal or is longer than the bound, or pieces
    /// that are not moves from its unit: an honest worker never does, so its other results are
    /// not trusted either.
    ForgedResult,
    /// It failed, refused or cancelled [`max_failures`](super::SchedulerConfig::max_failures)
    /// units in a row.
    Failing,
}

#[cfg(test)]
mod tests {
    use super::TaskId;

    #[test]
    fn a_task_id_names_its_list_and_place_and_the_first_two_lists_keep_their_old_ids() {
        let mut seen = std::collections::HashSet::new();
        for slot in 0..TaskId::SLOTS {
            for index in [0, 1, 12_345, (1 << 30) - 1] {
                let id = TaskId::new(slot, index);
                assert_eq!((id.slot(), id.index()), (slot, index), "{id:?}");
                assert!(seen.insert(id), "{id:?} twice");
            }
        }
        // Ids of the current bound's list and the first one ahead read as when a job had two.
        assert_eq!(TaskId::new(0, 5), TaskId(5));
        assert_eq!(TaskId::new(1, 5), TaskId(1 << 31 | 5));
    }
}
