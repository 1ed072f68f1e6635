//! The scheduler: who searches which unit, under which bound, and when a job is done.
//!
//! A plain state machine with no I/O, no clock of its own and no gRPC (like raft-rs's core): the
//! caller feeds it events ([`Scheduler::add_worker`], [`Scheduler::submit`],
//! [`Scheduler::on_result`], [`Scheduler::tick`], …), with the time where it matters, and carries
//! out the [`Command`]s it returns. Unit tests drive it with a simulated cluster.
//!
//! # How a job is searched
//!
//! 1. **Whole first.** A job (from [`JobSpec::whole`]) goes to one worker slot as a single unit
//!    that the worker searches bound after bound, from its own heuristic's value (IDA* at the
//!    root, `iterate`): a job that ends there is never cut, and costs what the serial search
//!    costs. While more jobs are runnable than slots (a batch), that is the right grain.
//! 2. **Cut only when a slot would idle.** When a worker slot is free and no unit is queued that
//!    it could search, the coordinator asks the largest running unit back ([`Command::Yield`]):
//!    once it has searched [`SchedulerConfig::hand_back_after`] nodes, its worker stops and
//!    hands back the rest of its bound as *pieces* (the siblings not yet tried on each level of
//!    the depth-first path where it stopped, and the node it stopped at), keeping what it
//!    searched. A unit that exceeds its node budget does the same. The pieces are queued at
//!    once, in depth-first order.
//! 3. **Units for the later bounds.** A job's *units* persist from bound to bound; pieces only
//!    live for the bound they were cut in, and their nodes add up to their unit's. At each new
//!    bound, a unit predicted (its nodes at the bound before × the job's growth per bound) to
//!    exceed its share of the bound is cut breadth-first into smaller units
//!    ([`npuzzle_solver::Solver::split_unit`]) ahead of time. The whole job's first split turns
//!    its root into such a unit, with the bound nodes its worker measured.
//!
//! # Rules (see docs/design.md, "The scheduler")
//! - **Shared bound with a barrier.** Every task of a job in the distributed phase (its units, or
//!   the pieces cut from them) is searched under the job's bound. Only when every one has
//!   reported for that bound does the job move on, to the least `next_bound` reported (at
//!   least the bound + 1). A solution found under bound `b` is therefore optimal: every smaller
//!   bound was exhausted everywhere. A whole job's solution is optimal by the same rule, applied
//!   by its one worker to the whole tree.
//! - **Workers pull.** Assignments go to free slots, the job with the fewest running tasks first
//!   (fair sharing), and within a job in the serial search's depth-first order (Korf's operator
//!   order on the prefixes). In the last bound that makes the distributed search explore what
//!   serial IDA* explores before its solution, plus what is in flight on the other slots.
//! - **Nothing searched is thrown away.** A split keeps the nodes searched; each stop expands one
//!   node (the one it stopped at) a second time. Workers that answer with the old
//!   `BUDGET_EXCEEDED` have their unit cut and searched again (their nodes are counted as
//!   discarded).
//! - **Everything is tagged** with (job, epoch, unit): the epoch counts the job's bounds, so late,
//!   duplicated or out-of-order results are recognised and dropped.
//! - **Leases.** A worker silent for longer than the lease timeout is dropped; its tasks go back
//!   to the queue. So do the tasks of a worker that disconnects.
//! - **Cancel at once.** When a job is answered or cancelled, every worker holding one of its
//!   tasks gets a cancel command in the same step.
//! - **Capabilities.** A worker says in its hello which shapes it holds pattern databases for.
//!   Tasks of a job searched with pattern databases go only to workers with tables for the
//!   job's shape; they wait in the queue while no such worker is connected. Other jobs go
//!   anywhere.
//!
//! # Pattern databases on the workers, linear conflict here
//!
//! The coordinator keeps no tables. For its own estimates (a unit's `g + h`, hence a job's first
//! bound) it uses its [`JobSpec::solver`], which for a PDB job is linear conflict (or exact on
//! small boards), while the workers search with pattern databases. Mixing is sound because every
//! one of these heuristics is admissible:
//!
//! - A bound is only ever a claim that *no solution is cheaper*. A whole job starts at the
//!   coordinator's `g + h` at the root, which its worker raises at once to its own value. A job
//!   submitted as many units starts at the least linear-conflict `g + h` over them; a worker
//!   prunes a unit below its PDB value at the root and reports that value as its `next_bound`
//!   without searching.
//! - Every later bound is the least `next_bound` reported by the workers, i.e. the least f
//!   above the exhausted bound that their (PDB) search met, so the barrier's rule holds
//!   whichever admissible heuristic each side uses. PDBs here are not consistent (a move can
//!   change them by more than 1), which IDA* tolerates: bounds may then rise by more than 2.
//! - Splitting a unit and ordering units use no heuristic; the pieces' `f` values (the workers')
//!   only weigh their predicted sizes; checking a path replays it.
//!
//! So an answer is still optimal, and its length equals the bound it was found under.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npuzzle_solver::{Goal, HeuristicKind, Move, Shape, Solver, WorkUnit};

pub type JobId = u64;
pub type WorkerId = u64;
pub type UnitId = u32;
pub type Epoch = u32;

/// Tunables of the scheduler.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Expansions allowed per assignment before the unit is split (0: never split).
    pub node_budget: u64,
    /// A heavy unit is split into at least this many parts.
    pub split_parts: usize,
    /// Before each bound, a unit predicted to take more than this share of the bound's work
    /// per slot (1/32: a slot's work is cut into at least 32 units, so that the work other slots do past the answer in the last bound stays small) is split ahead of time.
    pub max_unit_share: f64,
    /// …but units predicted below this many nodes are never split ahead of time.
    pub min_split_nodes: u64,
    /// A worker silent for this long is considered lost.
    pub lease_timeout: Duration,
    /// A running task asked back for idle slots stops once it has searched this many nodes (a
    /// job that finishes within them is never cut; `u64::MAX`: never ask).
    pub hand_back_after: u64,
    /// Tasks one job may have in a bound, and units it may be cut into: past it, a task that
    /// hands back pieces is searched again whole without a budget instead, so that no worker can
    /// grow a job's memory without limit.
    pub max_tasks_per_job: usize,
    /// A worker that fails, refuses or cancels this many units in a row (with no good result
    /// between them) is dropped: a broken or hostile worker must not keep bouncing units.
    pub max_failures: u32,
    /// A task asked back that has not answered within this long is being held: its worker is
    /// dropped and the task searched elsewhere (an honest worker answers within a few thousand
    /// nodes).
    pub ask_timeout: Duration,
    /// A task running longer than this is asked back even when no slot is idle (an honest one
    /// stops at its node budget well before), so that a worker that holds units while it
    /// heartbeats is found out.
    pub max_task_age: Duration,
    /// The share of reports checked by another worker (0: none, 1: all): a unit reported
    /// exhausted (or handed back), and a whole search's answer, are searched again by a
    /// different worker before the job moves on, under the bound the report implies. A
    /// disagreement drops the reporter as a forger and restarts every running job it reported
    /// on. See README (Security and threat model) for what this does and does not guarantee.
    pub audit_fraction: f64,
    /// Which reports are audited is a hash of the report's place and this seed.
    pub audit_seed: u64,
    /// While audits are on (`audit_fraction` above 0), a worker is on probation until this
    /// many answers have passed their final audit with its reports in it (0: no probation).
    /// Before a job returns an answer of length L, every report a worker on probation made in
    /// the job's last exhausted bound (or its whole search's answer) is searched again under
    /// L - 1 by another worker: the one bound where a lie would have hidden a shorter answer.
    /// A worker that lies from the start is thus caught before its first lie that matters is
    /// relied on; one that behaves until trusted is caught with `audit_fraction` per lie.
    pub probation: u32,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            node_budget: 20_000_000,
            split_parts: 32,
            max_unit_share: 1.0 / 32.0,
            min_split_nodes: 20_000,
            lease_timeout: Duration::from_secs(10),
            hand_back_after: 50_000,
            max_tasks_per_job: 200_000,
            max_failures: 8,
            ask_timeout: Duration::from_secs(3),
            max_task_age: Duration::from_secs(120),
            audit_fraction: 0.0,
            audit_seed: 0,
            probation: 1,
        }
    }
}

/// What a worker can search, from its hello.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Shapes the worker holds pattern databases for.
    pub pdb_shapes: BTreeSet<Shape>,
}

impl Capabilities {
    /// Whether the worker can search units of `shape` with `heuristic`.
    pub fn can_search(&self, heuristic: HeuristicKind, shape: Shape) -> bool {
        heuristic != HeuristicKind::Pdb || self.pdb_shapes.contains(&shape)
    }
}

/// Why a request cannot get the heuristic it asked for from the workers connected now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeuristicUnavailable {
    #[error(
        "no connected worker has pattern databases for {shape} boards; build them on the workers with `npuzzle pdb build --size {shape} --partition P` (`npuzzle pdb build --help` lists the partitions) and restart the workers, or ask for another heuristic"
    )]
    NoPatternDatabases { shape: Shape },
}

/// The heuristic for a job on boards of `goal`'s shape, given what was `requested` (`None`:
/// auto) and the shapes connected workers hold pattern databases for. Auto means pattern
/// databases when a connected worker has them for the shape (boards of more than 9 cells,
/// goals they serve), else [`HeuristicKind::best_for`]. An explicit `Pdb` with no such worker
/// is an error naming the shape.
pub fn choose_heuristic(
    requested: Option<HeuristicKind>,
    goal: &Goal,
    pdb_shapes: &BTreeSet<Shape>,
) -> Result<HeuristicKind, HeuristicUnavailable> {
    let shape = goal.shape();
    let served = pdb_shapes.contains(&shape);
    match requested {
        Some(HeuristicKind::Pdb) if !served => {
            Err(HeuristicUnavailable::NoPatternDatabases { shape })
        }
        Some(kind) => Ok(kind),
        None if served
            && shape.cells() > npuzzle_solver::EXACT_MAX_CELLS
            && Solver::pdb_serves_goal(goal) =>
        {
            Ok(HeuristicKind::Pdb)
        }
        None => Ok(HeuristicKind::best_for(shape)),
    }
}

/// A job ready to distribute.
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub id: JobId,
    pub goal: Goal,
    /// What the workers search the units with.
    pub heuristic: HeuristicKind,
    /// The coordinator's solver for the same goal, for estimates, splitting and checking paths.
    /// Its heuristic is the job's, except for pattern databases, which the coordinator does not
    /// hold: then linear conflict or exact (see the module notes on why that is sound).
    pub solver: Arc<Solver>,
    pub root: npuzzle_solver::Board,
    /// The units to search under a shared bound; for a whole job, the root alone.
    pub units: Vec<WorkUnit>,
    /// Search the root as one unit, bound after bound, on one slot, until it is found or asked
    /// back (see the module notes).
    pub whole: bool,
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
        }
    }
}

/// One unit to search, as sent to a worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub job: JobId,
    pub epoch: Epoch,
    pub unit: UnitId,
    pub work: WorkUnit,
    pub goal: Goal,
    pub heuristic: HeuristicKind,
    pub bound: u32,
    pub node_budget: u64,
    /// Search bound after bound from `bound` (a whole job), not just `bound`.
    pub iterate: bool,
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
}

/// A worker's result for one assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitResult {
    pub job: JobId,
    pub epoch: Epoch,
    pub unit: UnitId,
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
    /// Nodes per worker.
    pub worker_nodes: HashMap<WorkerId, u64>,
    /// Running tasks asked to hand back their rest for idle slots.
    pub yields: usize,
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
    /// Ask `worker` to stop unit (`job`, `epoch`, `unit`) once it has searched `after_nodes`
    /// nodes and hand back the rest: slots are idle.
    Yield {
        worker: WorkerId,
        job: JobId,
        epoch: Epoch,
        unit: UnitId,
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
    /// It failed, refused or cancelled [`SchedulerConfig::max_failures`] units in a row.
    Failing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskState {
    Pending,
    Running {
        worker: WorkerId,
        /// A `Yield` was sent for it.
        asked_back: bool,
    },
    /// Reported for the bound (exhausted, or handed back its rest as other tasks).
    Done,
}

/// A unit: a subtree searched again at every bound, until it is cut into smaller units.
#[derive(Clone, Debug)]
struct Unit {
    work: WorkUnit,
    /// `g + h` at the unit's root (the coordinator's heuristic).
    f: u32,
    /// Nodes at the previous bound: the size prediction.
    last_nodes: u64,
    /// Nodes at this bound so far, its pieces' included.
    nodes: u64,
    /// Cut into other units; no longer searched.
    retired: bool,
}

/// One thing to search under the current bound: a unit, or a piece of one.
#[derive(Clone, Debug)]
struct Task {
    /// The unit it belongs to, whose nodes it adds to.
    unit: usize,
    work: WorkUnit,
    order: Vec<u8>,
    /// Expected nodes (to choose which running task to ask back: the largest).
    predicted: f64,
    state: TaskState,
    /// Searched without a node budget (the old `BUDGET_EXCEEDED` could not cut it further).
    unbudgeted: bool,
    /// When it was last handed out, and when it was asked back (the scheduler's clock).
    since: Option<Instant>,
    asked_at: Option<Instant>,
    /// A whole job: search bound after bound.
    iterate: bool,
    /// An audit: searched under its own bound, by any worker but the reporter.
    audit: Option<AuditOf>,
}

/// What an audit task checks: that `reporter`'s word holds, by searching under `bound`
/// (which must find nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AuditOf {
    reporter: WorkerId,
    bound: u32,
    /// Checks a report before an answer is returned: passed, it counts towards the reporter's
    /// probation.
    before_answer: bool,
}

/// A report picked for an audit, checked when its bound is over.
#[derive(Clone, Debug)]
struct Claim {
    unit: usize,
    work: WorkUnit,
    reporter: WorkerId,
    /// The bound to search it under; `None`: one below the next bound (the report said nothing
    /// shorter than that is in its subtree).
    bound: Option<u32>,
}

/// Audits a job waits for before it goes on.
#[derive(Clone, Debug)]
enum Auditing {
    /// Then the next bound.
    Bound { next: u32 },
    /// Then this answer of a whole search, with the bounds its worker reported.
    Answer { path: Vec<Move>, bounds: Vec<u32> },
}

/// Restarts of a job for traces of a lie (a path shorter than its bound, a bound past the
/// deepest search); past them such a path is taken for a forgery (its worker dropped) and such
/// a bound ends the job, so that no worker can restart a job forever.
const MAX_LIE_RESTARTS: u32 = 3;

/// Sampled claims kept per bound at most, unless every report is audited (`audit_fraction` 1,
/// which promises that no lie goes unchecked): audits add a bounded delay and memory. Claims of
/// workers on probation are all kept: at most one per task of the bound, so that they at most
/// double the job's task memory, itself capped by `max_tasks_per_job`.
const MAX_CLAIMS: usize = 64;

impl Unit {
    fn new(work: WorkUnit, solver: &Solver, last_nodes: u64) -> Unit {
        Unit {
            f: solver.unit_lower_bound(&work).unwrap_or(work.g),
            work,
            last_nodes,
            nodes: 0,
            retired: false,
        }
    }
}

impl Job {
    /// Keeps a report for an audit: a sampled one for the bound's end (at most
    /// [`MAX_CLAIMS`] a bound unless every report is audited), one of a worker on probation
    /// for the answer (at most one per task of the bound).
    fn keep_claim(
        &mut self,
        claim: Claim,
        sampled: bool,
        on_probation: bool,
        config: &SchedulerConfig,
    ) {
        let room =
            self.claims.len() < MAX_CLAIMS || config.audit_fraction >= 1.0 || self.lies_seen > 0;
        if sampled && room {
            self.claims.push(claim);
        } else if on_probation {
            self.probation_claims.push(claim);
        }
    }
}

impl Task {
    fn new(unit: usize, work: WorkUnit, predicted: f64) -> Task {
        Task {
            unit,
            order: npuzzle_solver::dfs_key(&work.prefix),
            work,
            predicted,
            state: TaskState::Pending,
            unbudgeted: false,
            since: None,
            asked_at: None,
            iterate: false,
            audit: None,
        }
    }
}

struct Job {
    spec: JobSpec,
    /// Nodes of each bound exhausted so far: the growth per bound.
    bound_nodes: Vec<u64>,
    units: Vec<Unit>,
    /// This bound's tasks; the epoch's unit ids index it.
    tasks: Vec<Task>,
    epoch: Epoch,
    bound: u32,
    /// Pending tasks, the one to hand out next at the end.
    queue: Vec<UnitId>,
    running: usize,
    /// Tasks of this bound not yet done.
    open: usize,
    next_bound: u32,
    stats: JobStats,
    /// Its key in [`Scheduler::runnable`] while it has queued tasks.
    indexed: Option<(usize, JobId)>,
    /// The bound it started from (the coordinator's own lower bound): where a restart begins.
    floor: u32,
    /// Reports of this bound picked for an audit.
    claims: Vec<Claim>,
    /// Reports of this bound by workers on probation, not sampled: at the bound's end they
    /// become `deferred`, replacing the previous bound's.
    probation_claims: Vec<Claim>,
    /// The last exhausted bound's reports by workers on probation: audited before an answer
    /// found in the next bound is returned.
    deferred: Vec<Claim>,
    /// Set while the job waits for its audits.
    auditing: Option<Auditing>,
    /// Workers whose reports it relies on: if one is caught lying, the job starts over.
    reporters: HashSet<WorkerId>,
    /// Traces of a lie seen so far (a path shorter than its bound, a bound past the deepest
    /// search): each proves an earlier report false, and from the first on every report of the
    /// job is audited.
    lies_seen: u32,
}

struct Worker {
    slots: usize,
    /// Which units it may be given.
    capabilities: Capabilities,
    outstanding: HashSet<(JobId, Epoch, UnitId)>,
    last_seen: Instant,
    /// Units it failed, refused or cancelled since its last good result.
    failures: u32,
    /// Good results so far (found, exhausted, handed back): trust earned.
    good: u32,
    /// Answers whose final audits confirmed its reports: from
    /// [`SchedulerConfig::probation`] on, its reports are only sampled.
    confirmed: u32,
}

/// Tasks a worker may hold before its first good result; each good result doubles it, up to
/// its slots. A worker that claims thousands of threads and answers nothing holds little.
const TRIAL_SLOTS: usize = 2;

impl Worker {
    /// Tasks it may hold at once now.
    fn capacity(&self) -> usize {
        self.slots.min(TRIAL_SLOTS << self.good.min(16))
    }
}

/// The scheduling state machine.
pub struct Scheduler {
    config: SchedulerConfig,
    /// Nodes in results for jobs already over (whole units that were running when it ended).
    late_nodes: u64,
    /// [`Totals`] of the jobs already over, plus every assignment ever made.
    totals: Totals,
    jobs: HashMap<JobId, Job>,
    workers: HashMap<WorkerId, Worker>,
    /// Workers with free slots, in [`FreeKey`] order.
    free: BTreeSet<FreeKey>,
    /// Jobs with queued tasks, the fewest running first (lowest id on ties).
    runnable: BTreeSet<(usize, JobId)>,
    /// Slots over all workers.
    total_slots: usize,
    /// Running tasks asked back and not yet reported.
    asked_out: usize,
    /// The latest time an event brought (the scheduler has no clock of its own).
    clock: Option<Instant>,
}

/// A worker's key in [`Scheduler::free`], if it has a free slot.
fn free_key(id: WorkerId, w: &Worker) -> Option<FreeKey> {
    let free = w.capacity().saturating_sub(w.outstanding.len());
    let proven = w.good > 0;
    // Among newcomers, claimed slots buy no precedence: the earliest joined goes first.
    let rank = if proven { free } else { free.min(1) };
    (free > 0).then_some((Reverse(proven), Reverse(rank), id))
}

/// A worker's place in [`Scheduler::free`]: workers with a good result first (work requeued
/// from a worker that held it goes to one that has answered before), then the freest (among
/// newcomers: none), then the lowest id.
type FreeKey = (Reverse<bool>, Reverse<usize>, WorkerId);

/// The highest next bound a worker may report: a path of the deepest search plus the largest
/// heuristic value is below it. Above it a report is forged.
const MAX_NEXT_BOUND: u32 = 2 * npuzzle_solver::MAX_DEPTH as u32;

/// How far above a bound a search from the root finds its next. The next bound is the least
/// `f = g + h` of a child pruned below a node with `f <= bound`, and one move raises `g` by 1
/// and `h` by at most 3 with every heuristic served here (Manhattan, pattern databases and
/// exact tables by 1; linear conflict by 1 plus one new conflict in the tile's new line). A
/// unit's own next bound can be higher (its root may lie above the bound), but not the job's:
/// a job whose reports add up to more moves on by this step only (a bound with nothing new
/// costs one repeated iteration), so that inflated reports skip no bound that holds an answer.
const MAX_BOUND_STEP: u32 = 4;

/// Whether `next` can be an honest next bound above `bound` (`u32::MAX`: none met).
fn valid_next_bound(next: u32, bound: u32) -> bool {
    next == u32::MAX || (next > bound && next <= MAX_NEXT_BOUND)
}

/// Whether the report on task `tid` of `job` in `epoch` is audited: a hash of those and the
/// seed, below [`SchedulerConfig::audit_fraction`]. A worker cannot tell which reports are.
fn audit_pick(config: &SchedulerConfig, job: JobId, epoch: Epoch, tid: UnitId) -> bool {
    if config.audit_fraction <= 0.0 {
        return false;
    }
    // splitmix64 over the report's place.
    let mut z = config.audit_seed
        ^ job.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ u64::from(epoch).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ u64::from(tid).wrapping_mul(0x1656_67B1_9E37_79F9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z as f64 / u64::MAX as f64) < config.audit_fraction
}

/// The least growth of nodes from one bound to the next assumed for predictions, and the most.
const GROWTH_RANGE: (f64, f64) = (1.0, 50.0);

impl Job {
    /// Nodes per bound grow by this factor (measured on the last two bounds; 4 until then).
    fn growth(&self) -> f64 {
        match self.bound_nodes[..] {
            [.., before, last] if before > 0 && last > 0 => {
                (last as f64 / before as f64).clamp(GROWTH_RANGE.0, GROWTH_RANGE.1)
            }
            _ => 4.0,
        }
    }

    /// Starts the current bound: one task per unit, in depth-first order, after cutting the
    /// units predicted to be too large for their share of the bound.
    fn queue_all(&mut self, config: &SchedulerConfig, slots: usize) {
        self.split_ahead(config, slots);
        let growth = self.growth();
        self.tasks = self
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| !u.retired)
            .map(|(i, u)| Task::new(i, u.work.clone(), u.last_nodes as f64 * growth))
            .collect();
        let mut ids: Vec<UnitId> = (0..self.tasks.len() as UnitId).collect();
        // Last in depth-first order at the front: tasks are popped from the end.
        ids.sort_by(|&a, &b| {
            self.tasks[b as usize]
                .order
                .cmp(&self.tasks[a as usize].order)
        });
        self.queue = ids;
        self.open = self.tasks.len();
        self.running = 0;
        self.next_bound = u32::MAX;
    }

    /// Cuts units whose predicted size exceeds their share of the coming bound.
    fn split_ahead(&mut self, config: &SchedulerConfig, slots: usize) {
        let Some(&last) = self.bound_nodes.last() else {
            return;
        };
        if last == 0 {
            return;
        }
        let growth = self.growth();
        let predicted_total = last as f64 * growth;
        let cap = (predicted_total * config.max_unit_share / slots.max(1) as f64)
            .max(config.min_split_nodes as f64);
        let heavy: Vec<usize> = (0..self.units.len())
            .filter(|&i| {
                let u = &self.units[i];
                !u.retired && u.last_nodes as f64 * growth > cap
            })
            .collect();
        for i in heavy {
            if self.units.len() >= config.max_tasks_per_job {
                break;
            }
            let predicted = self.units[i].last_nodes as f64 * growth;
            let room = config
                .max_tasks_per_job
                .saturating_sub(self.units.len())
                .max(2);
            let wanted = ((predicted / cap).ceil() as usize).clamp(2, 4096).min(room);
            let parts = self.spec.solver.split_unit(&self.units[i].work, wanted);
            if parts.len() <= 1 {
                continue;
            }
            let share = self.units[i].last_nodes / parts.len() as u64;
            self.units[i].retired = true;
            self.stats.splits += 1;
            for work in parts {
                let unit = Unit::new(work, &self.spec.solver, share);
                self.units.push(unit);
            }
        }
    }

    /// Replaces the bound's tasks by `audits`, each searched under its own bound by a worker
    /// other than its reporter, without a budget (never cut: a lie must be found whole).
    fn start_audits(&mut self, audits: Vec<(usize, WorkUnit, AuditOf)>) {
        self.epoch += 1;
        self.tasks = audits
            .into_iter()
            .map(|(unit, work, audit)| Task {
                unbudgeted: true,
                audit: Some(audit),
                ..Task::new(unit, work, 0.0)
            })
            .collect();
        self.queue = (0..self.tasks.len() as UnitId).rev().collect();
        self.open = self.tasks.len();
        self.running = 0;
        self.stats.audits += self.tasks.len();
    }

    /// Queues its first bound: a whole job (one unit, [`JobSpec::whole`]) as one task searched
    /// bound after bound, anything else as [`Job::queue_all`] does.
    fn start(&mut self, config: &SchedulerConfig, slots: usize) {
        self.queue_all(config, slots);
        let whole = self.spec.whole && self.units.iter().filter(|u| !u.retired).count() == 1;
        if whole && let Some(task) = self.tasks.first_mut() {
            task.iterate = true;
            task.predicted = f64::INFINITY;
        }
    }

    /// Its running tasks asked back and not yet answered (counted in [`Scheduler::asked_out`]).
    fn asked_out(&self) -> usize {
        self.tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.state,
                    TaskState::Running {
                        asked_back: true,
                        ..
                    }
                )
            })
            .count()
    }

    /// Whether `path` from the root reaches the goal.
    fn reaches_goal(&self, path: &[Move]) -> bool {
        self.spec
            .root
            .verify(path, &self.spec.goal)
            .is_ok_and(|v| v.reaches_goal)
    }

    fn progress(&self, finished: bool) -> Command {
        Command::Progress {
            job: self.spec.id,
            bound: self.bound,
            nodes: self.stats.nodes,
            units_done: self.tasks.len() - self.open,
            units_total: self.tasks.len(),
            finished,
        }
    }

    /// Adds tasks to the front of the queue (they go out next), in depth-first order.
    fn push_next(&mut self, mut ids: Vec<UnitId>) {
        ids.sort_by(|&a, &b| {
            self.tasks[b as usize]
                .order
                .cmp(&self.tasks[a as usize].order)
        });
        self.queue.extend(ids);
    }

    /// Turns what a worker handed back from task `tid` into tasks of the same unit. `None` if a
    /// piece is not a sequence of legal moves from the task's board.
    fn pieces(&self, tid: usize, handed: &[HandedBack], remaining: f64) -> Option<Vec<Task>> {
        let task = &self.tasks[tid];
        // A subtree's size grows about `growth` times per 2 of slack (bound - f).
        let growth = self.growth();
        let weights: Vec<f64> = handed
            .iter()
            .map(|p| {
                let slack = self.bound.saturating_sub(p.f).min(64) as f64;
                growth.powf(slack / 2.0)
            })
            .collect();
        let total: f64 = weights.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let mut out = Vec::with_capacity(handed.len());
        let mut seen = HashSet::with_capacity(handed.len());
        for (p, w) in handed.iter().zip(&weights) {
            // A piece is a node of the depth-first search under the bound, so it lies within
            // it (which also bounds every prefix, however often pieces are cut again); and
            // pieces are disjoint subtrees, so none comes twice.
            if task.work.g as usize + p.moves.len() > self.bound as usize
                || !seen.insert(p.moves.as_slice())
            {
                return None;
            }
            let board = task.work.board.apply(&p.moves).ok()?;
            let mut prefix = task.work.prefix.clone();
            prefix.extend_from_slice(&p.moves);
            let work = WorkUnit {
                board,
                g: task.work.g + p.moves.len() as u32,
                last: p.moves.last().copied().or(task.work.last),
                prefix,
                trail: task.work.trail.clone(),
            };
            out.push(Task::new(task.unit, work, remaining * w / total));
        }
        Some(out)
    }
}

impl Scheduler {
    pub fn new(config: SchedulerConfig) -> Scheduler {
        Scheduler {
            config,
            late_nodes: 0,
            totals: Totals::default(),
            jobs: HashMap::new(),
            workers: HashMap::new(),
            free: BTreeSet::new(),
            runnable: BTreeSet::new(),
            total_slots: 0,
            asked_out: 0,
            clock: None,
        }
    }

    /// Changes worker `id` (its outstanding assignments), keeping [`Scheduler::free`] in step.
    fn update_worker<R>(&mut self, id: WorkerId, f: impl FnOnce(&mut Worker) -> R) -> Option<R> {
        let w = self.workers.get_mut(&id)?;
        if let Some(key) = free_key(id, w) {
            self.free.remove(&key);
        }
        let r = f(w);
        if let Some(key) = free_key(id, w) {
            self.free.insert(key);
        }
        Some(r)
    }

    /// Puts job `id` in [`Scheduler::runnable`] at its place, or out of it.
    fn reindex(&mut self, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if let Some(key) = job.indexed.take() {
            self.runnable.remove(&key);
        }
        if !job.queue.is_empty() {
            let key = (job.running, id);
            self.runnable.insert(key);
            job.indexed = Some(key);
        }
    }

    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Slots over all workers.
    pub fn slots(&self) -> usize {
        self.total_slots
    }

    /// Assignments out on workers.
    pub fn busy_slots(&self) -> usize {
        self.workers.values().map(|w| w.outstanding.len()).sum()
    }

    /// Assignments out on worker `id` (0 for a worker it does not know).
    pub fn busy_slots_of(&self, id: WorkerId) -> usize {
        self.workers.get(&id).map_or(0, |w| w.outstanding.len())
    }

    pub fn running_jobs(&self) -> usize {
        self.jobs.len()
    }

    /// Tasks waiting for a slot, over all jobs.
    pub fn queue_depth(&self) -> usize {
        self.jobs.values().map(|j| j.queue.len()).sum()
    }

    /// Nodes workers reported for jobs that were already over.
    pub fn late_nodes(&self) -> u64 {
        self.late_nodes
    }

    /// Assignments, splits and requeues since the start, over every job.
    pub fn totals(&self) -> Totals {
        let mut totals = self.totals;
        for job in self.jobs.values() {
            totals.units_split += job.stats.splits as u64;
            totals.units_requeued += job.stats.requeued as u64;
        }
        totals
    }

    /// Forgets a job that is over, keeping its counts in the totals.
    fn retire(&mut self, job: JobId) -> Option<Job> {
        let job = self.jobs.remove(&job)?;
        if let Some(key) = job.indexed {
            self.runnable.remove(&key);
        }
        let asked = job.asked_out();
        self.asked_out -= asked;
        self.totals.units_split += job.stats.splits as u64;
        self.totals.units_requeued += job.stats.requeued as u64;
        Some(job)
    }

    pub fn has_job(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// The shapes some connected worker holds pattern databases for.
    pub fn pdb_shapes(&self) -> BTreeSet<Shape> {
        self.workers
            .values()
            .flat_map(|w| w.capabilities.pdb_shapes.iter().copied())
            .collect()
    }

    /// [`choose_heuristic`] with the workers connected now.
    pub fn choose_heuristic(
        &self,
        requested: Option<HeuristicKind>,
        goal: &Goal,
    ) -> Result<HeuristicKind, HeuristicUnavailable> {
        choose_heuristic(requested, goal, &self.pdb_shapes())
    }

    /// A worker joined with `slots` search threads and `capabilities`.
    pub fn add_worker(
        &mut self,
        id: WorkerId,
        slots: usize,
        capabilities: Capabilities,
        now: Instant,
    ) -> Vec<Command> {
        self.clock = Some(now);
        self.remove_worker_entry(id);
        let worker = Worker {
            slots: slots.max(1),
            capabilities,
            outstanding: HashSet::new(),
            last_seen: now,
            failures: 0,
            good: 0,
            confirmed: 0,
        };
        self.total_slots += worker.slots;
        if let Some(key) = free_key(id, &worker) {
            self.free.insert(key);
        }
        self.workers.insert(id, worker);
        self.dispatch()
    }

    /// A worker disconnected or its lease expired: its tasks go back to the queue.
    pub fn remove_worker(&mut self, id: WorkerId) -> Vec<Command> {
        let Some(worker) = self.remove_worker_entry(id) else {
            return Vec::new();
        };
        let mut touched = BTreeSet::new();
        for (job_id, epoch, tid) in worker.outstanding {
            touched.insert(job_id);
            let Some(job) = self.jobs.get_mut(&job_id) else {
                continue;
            };
            let Some(task) = job.tasks.get_mut(tid as usize) else {
                continue;
            };
            if epoch == job.epoch
                && let TaskState::Running { worker, asked_back } = task.state
                && worker == id
            {
                if asked_back {
                    self.asked_out -= 1;
                }
                task.state = TaskState::Pending;
                job.running -= 1;
                // Back at the end: requeued tasks go out next.
                job.queue.push(tid);
                job.stats.requeued += 1;
            }
        }
        for job in touched {
            self.reindex(job);
        }
        self.dispatch()
    }

    /// Forgets worker `id` and its place in the indexes.
    fn remove_worker_entry(&mut self, id: WorkerId) -> Option<Worker> {
        let worker = self.workers.remove(&id)?;
        if let Some(key) = free_key(id, &worker) {
            self.free.remove(&key);
        }
        self.total_slots -= worker.slots;
        Some(worker)
    }

    /// Any message from a worker renews its lease.
    pub fn heartbeat(&mut self, id: WorkerId, now: Instant) {
        self.clock = Some(now);
        if let Some(w) = self.workers.get_mut(&id) {
            w.last_seen = now;
        }
    }

    /// Drops workers whose lease expired.
    pub fn tick(&mut self, now: Instant) -> Vec<Command> {
        let timeout = self.config.lease_timeout;
        let mut expired: Vec<WorkerId> = self
            .workers
            .iter()
            .filter(|(_, w)| now.saturating_duration_since(w.last_seen) > timeout)
            .map(|(&id, _)| id)
            .collect();
        expired.sort_unstable();
        self.clock = Some(now);
        let mut commands = Vec::new();
        for id in expired {
            commands.push(Command::Disconnect {
                worker: id,
                reason: DisconnectReason::LeaseExpired,
            });
            commands.extend(self.remove_worker(id));
        }
        commands.extend(self.check_held(now));
        commands.extend(self.release_unauditable());
        commands
    }

    /// Finds tasks held too long: asked back without an answer within
    /// [`SchedulerConfig::ask_timeout`] (the worker is dropped), or running past
    /// [`SchedulerConfig::max_task_age`] (asked back now).
    fn check_held(&mut self, now: Instant) -> Vec<Command> {
        let mut holders = BTreeSet::new();
        let mut too_old = Vec::new();
        let mut stale_audits = Vec::new();
        for (&wid, w) in &self.workers {
            for &(job_id, epoch, tid) in &w.outstanding {
                let Some(job) = self.jobs.get(&job_id) else {
                    continue;
                };
                let Some(task) = job.tasks.get(tid as usize).filter(|_| epoch == job.epoch) else {
                    continue;
                };
                let age = |t: Option<Instant>| t.map(|t| now.saturating_duration_since(t));
                match task.state {
                    TaskState::Running {
                        asked_back: true, ..
                    } if age(task.asked_at).is_some_and(|a| a > self.config.ask_timeout) => {
                        holders.insert(wid);
                    }
                    TaskState::Running {
                        asked_back: false, ..
                    } if age(task.since).is_some_and(|a| a > self.config.max_task_age) => {
                        if task.audit.is_some() {
                            stale_audits.push((job_id, tid));
                        } else if !task.unbudgeted {
                            too_old.push((job_id, tid, wid));
                        }
                    }
                    _ => {}
                }
            }
        }
        too_old.sort_unstable();
        let mut commands = Vec::new();
        for (job_id, tid, worker) in too_old {
            commands.extend(self.ask(job_id, tid, worker, 0));
        }
        // An audit is never cut or asked back: one running past any honest task is given up,
        // and its job goes on as it would without it (an auditor cannot hold a job).
        stale_audits.sort_unstable();
        for (job_id, tid) in stale_audits {
            tracing::warn!(job = job_id, "an audit ran too long; going on without it");
            commands.extend(self.give_up_audit(job_id, tid));
        }
        for worker in holders {
            tracing::warn!(
                worker,
                "a worker holds a unit it was asked for; dropping it"
            );
            commands.push(Command::Disconnect {
                worker,
                reason: DisconnectReason::Failing,
            });
            commands.extend(self.remove_worker(worker));
        }
        commands
    }

    /// A new job. A whole job ([`JobSpec::whole`]) starts as its root searched bound after bound
    /// from the coordinator's estimate; otherwise its units are searched from the least bound
    /// any of them admits.
    pub fn submit(&mut self, spec: JobSpec) -> Vec<Command> {
        let units: Vec<Unit> = spec
            .units
            .iter()
            .map(|w| Unit::new(w.clone(), &spec.solver, 0))
            .collect();
        let bound = units.iter().map(|u| u.f).min().unwrap_or(0);
        let id = spec.id;
        let mut job = Job {
            stats: JobStats {
                bounds: vec![bound],
                ..JobStats::default()
            },
            spec,
            bound_nodes: Vec::new(),
            units,
            tasks: Vec::new(),
            epoch: 0,
            bound,
            queue: Vec::new(),
            running: 0,
            open: 0,
            next_bound: u32::MAX,
            indexed: None,
            floor: bound,
            claims: Vec::new(),
            probation_claims: Vec::new(),
            deferred: Vec::new(),
            auditing: None,
            reporters: HashSet::new(),
            lies_seen: 0,
        };
        job.start(&self.config, self.slots());
        job.stats.units = job.tasks.len();
        let mut commands = vec![job.progress(false)];
        self.jobs.insert(id, job);
        self.reindex(id);
        commands.extend(self.dispatch());
        commands
    }

    /// Stops a job (deadline, client gone). Returns its cancels and a `Finish` with the best
    /// proven lower bound.
    pub fn cancel(&mut self, job: JobId) -> Vec<Command> {
        match self.retire(job) {
            Some(j) => {
                let lower_bound = j.bound;
                let mut commands = self.cancel_everywhere(job);
                commands.push(Command::Finish {
                    job,
                    outcome: JobOutcome::Cancelled { lower_bound },
                    stats: j.stats,
                });
                commands.extend(self.dispatch());
                commands
            }
            None => Vec::new(),
        }
    }

    fn cancel_everywhere(&self, job: JobId) -> Vec<Command> {
        let mut workers: Vec<WorkerId> = self
            .workers
            .iter()
            .filter(|(_, w)| w.outstanding.iter().any(|&(j, _, _)| j == job))
            .map(|(&id, _)| id)
            .collect();
        workers.sort_unstable();
        workers
            .into_iter()
            .map(|worker| Command::Cancel { worker, job })
            .collect()
    }

    /// A worker's result. Stale ones (finished job, old epoch, task not running on this worker)
    /// only free the worker's slot.
    pub fn on_result(
        &mut self,
        worker: WorkerId,
        result: UnitResult,
        now: Instant,
    ) -> Vec<Command> {
        self.clock = Some(now);
        let key = (result.job, result.epoch, result.unit);
        let held = self.update_worker(worker, |w| {
            w.last_seen = now;
            w.outstanding.remove(&key)
        });
        // Results of a worker already given up on are dropped: its tasks were requeued. So are
        // results for assignments it never held (or answered already): nothing of them, not
        // even their node counts, reaches a job or the totals.
        if held != Some(true) {
            return Vec::new();
        }
        let mut commands = Vec::new();
        if let Some(job) = self.jobs.get_mut(&result.job) {
            job.stats.nodes = job.stats.nodes.saturating_add(result.expanded);
            let per_worker = job.stats.worker_nodes.entry(worker).or_default();
            *per_worker = per_worker.saturating_add(result.expanded);
            let state = job
                .tasks
                .get(result.unit as usize)
                .filter(|_| result.epoch == job.epoch)
                .map(|t| t.state);
            let current =
                matches!(state, Some(TaskState::Running { worker: w, .. }) if w == worker);
            if matches!(state, Some(TaskState::Running { worker: w, asked_back: true }) if w == worker)
            {
                // It answered: no longer out as an ask.
                self.asked_out -= 1;
                job.tasks[result.unit as usize].state = TaskState::Running {
                    worker,
                    asked_back: false,
                };
            }
            if current
                && matches!(
                    result.report,
                    Report::Found(_) | Report::Exhausted { .. } | Report::Split { .. }
                )
            {
                self.update_worker(worker, |w| {
                    w.failures = 0;
                    w.good = w.good.saturating_add(1);
                });
            }
            if current {
                let job = result.job;
                commands.extend(self.apply(worker, result));
                self.reindex(job);
            }
        } else {
            self.late_nodes = self.late_nodes.saturating_add(result.expanded);
        }
        commands.extend(self.dispatch());
        commands
    }

    /// Drops `worker` for a result no honest worker sends; its task goes back to the queue.
    fn forged(&mut self, job_id: JobId, tid: usize, worker: WorkerId, what: &str) -> Vec<Command> {
        tracing::warn!(job = job_id, worker, "{what}; dropping the worker");
        if let Some(job) = self.jobs.get_mut(&job_id) {
            job.tasks[tid].state = TaskState::Pending;
            job.queue.insert(0, tid as UnitId);
            job.stats.requeued += 1;
        }
        let mut commands = vec![Command::Disconnect {
            worker,
            reason: DisconnectReason::ForgedResult,
        }];
        commands.extend(self.remove_worker(worker));
        commands
    }

    /// A current result: move the task and the job along.
    fn apply(&mut self, worker: WorkerId, result: UnitResult) -> Vec<Command> {
        let job_id = result.job;
        // Whether this report is checked by another worker: a sample of all reports at the
        // bound's end, and, before an answer is returned, every report of a worker on probation
        // from the last bound. Whether anyone can check it is asked when the audit starts, not
        // now: the only other worker may not have answered anything yet.
        let on_probation = self.config.audit_fraction > 0.0
            && self
                .workers
                .get(&worker)
                .is_some_and(|w| w.confirmed < self.config.probation);
        let suspect = self.jobs.get(&job_id).is_some_and(|j| j.lies_seen > 0);
        let sampled = suspect || audit_pick(&self.config, job_id, result.epoch, result.unit);
        let audited = on_probation || sampled;
        // A whole search's answer is held for its audit only if someone can search it now.
        let answer_auditable = audited
            && matches!(result.report, Report::Found(_))
            && self
                .jobs
                .get(&job_id)
                .is_some_and(|j| self.can_audit(j, worker));
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let tid = result.unit as usize;
        job.running -= 1;
        let iterate = job.tasks[tid].iterate;
        if let Some(audit) = job.tasks[tid].audit
            && !matches!(
                result.report,
                Report::Cancelled | Report::Failed(_) | Report::Unsupported(_)
            )
        {
            return self.apply_audit(job_id, tid, worker, audit, result);
        }
        match result.report {
            Report::Found(suffix) => {
                let mut path = job.tasks[tid].work.prefix.clone();
                path.extend(suffix);
                // Replay before trusting: a wrong path, or one longer than the bound, is forged.
                // A whole job's worker raised the bound itself: its path may not be shorter
                // than the coordinator's own lower bound.
                let reaches = job.reaches_goal(&path);
                let len = path.len() as u32;
                // IDA* finds a path under the first bound that admits one, so its length is that
                // bound, never less.
                let within = if iterate {
                    // IDA* finds a path under the first bound that admits one, so its length is
                    // that bound; the bounds before it rose from the coordinator's own lower
                    // bound. (That they were exhausted is the worker's word, as any unit's
                    // `Exhausted` is.)
                    let bounds: Vec<u32> = result.iterations.iter().map(|&(b, _)| b).collect();
                    bounds.first().is_some_and(|&b| b >= job.bound)
                        && bounds
                            .windows(2)
                            .all(|w| w[0] < w[1] && w[1] - w[0] <= MAX_BOUND_STEP)
                        && bounds.last() == Some(&len)
                } else {
                    len == job.bound
                };
                if reaches && within && iterate && audited && len > job.floor && answer_auditable {
                    // Hold the answer until another worker finds nothing shorter.
                    let bounds = result.iterations.iter().map(|&(b, _)| b).collect();
                    job.reporters.insert(worker);
                    job.auditing = Some(Auditing::Answer { path, bounds });
                    let task = &job.tasks[tid];
                    let audit = AuditOf {
                        reporter: worker,
                        bound: len - 1,
                        before_answer: true,
                    };
                    job.start_audits(vec![(task.unit, task.work.clone(), audit)]);
                    return Vec::new();
                }
                if reaches && !iterate && len < job.bound && job.lies_seen < MAX_LIE_RESTARTS {
                    // A real path under a bound that every task of an earlier bound said held
                    // none: one of those reports was false, not this one. Start over, auditing
                    // every report, rather than drop the worker that found it.
                    tracing::warn!(
                        job = job_id,
                        worker,
                        length = len,
                        bound = job.bound,
                        "a path shorter than the bound: an earlier report was false; starting the job over with every report audited"
                    );
                    job.lies_seen += 1;
                    job.reporters.insert(worker);
                    return self.restart(job_id);
                }
                if reaches && within && !iterate && !job.deferred.is_empty() {
                    // Before the answer is relied on: the last bound's reports of workers on
                    // probation, searched again under one below it by others.
                    let deferred = std::mem::take(&mut job.deferred);
                    let audits = self.audits_of(job_id, deferred, |_| len.saturating_sub(1), true);
                    if !audits.is_empty()
                        && let Some(job) = self.jobs.get_mut(&job_id)
                    {
                        job.reporters.insert(worker);
                        let bounds = job.stats.bounds.clone();
                        job.auditing = Some(Auditing::Answer { path, bounds });
                        job.start_audits(audits);
                        return Vec::new();
                    }
                }
                if reaches && within {
                    let Some(job) = self.retire(job_id) else {
                        return Vec::new();
                    };
                    let mut commands = self.cancel_everywhere(job_id);
                    let mut stats = job.stats;
                    if iterate {
                        stats.bounds = result.iterations.iter().map(|&(b, _)| b).collect();
                    }
                    commands.push(Command::Finish {
                        job: job_id,
                        outcome: JobOutcome::Solved { path },
                        stats,
                    });
                    return commands;
                }
                self.forged(
                    job_id,
                    tid,
                    worker,
                    "rejected a path that does not check out",
                )
            }
            Report::Exhausted { next_bound } if !iterate => {
                // `u32::MAX` is honest: every path below the unit repeats a preferred move
                // sequence before it passes the bound, and the search skips those. Such a
                // report is audited under the job's next bound, as any other.
                if !valid_next_bound(next_bound, job.bound) {
                    return self.forged(
                        job_id,
                        tid,
                        worker,
                        "a next bound that is not above the bound or past the deepest search",
                    );
                }
                let task = &mut job.tasks[tid];
                task.state = TaskState::Done;
                let unit = &mut job.units[task.unit];
                unit.nodes = unit.nodes.saturating_add(result.expanded);
                job.next_bound = job.next_bound.min(next_bound);
                job.open -= 1;
                job.reporters.insert(worker);
                if audited {
                    let task = &job.tasks[tid];
                    let claim = Claim {
                        unit: task.unit,
                        work: task.work.clone(),
                        reporter: worker,
                        bound: None,
                    };
                    job.keep_claim(claim, sampled, on_probation, &self.config);
                }
                self.after_task(job_id)
            }
            Report::Split {
                bound,
                next_bound,
                pieces,
            } => {
                let claimed_bound = if iterate {
                    bound >= job.bound && bound < npuzzle_solver::MAX_DEPTH as u32
                } else {
                    bound == job.bound
                };
                if !claimed_bound
                    || !valid_next_bound(next_bound, bound)
                    || pieces.len() > 4 * npuzzle_solver::MAX_DEPTH
                {
                    return self.forged(job_id, tid, worker, "a split that does not fit its unit");
                }
                let mut partial = result.expanded;
                let mut commands = Vec::new();
                job.reporters.insert(worker);
                // Its word: nothing in the part it searched at this bound (checked, with the
                // rest, by searching the whole task again) and, for a whole search, nothing
                // below the bound it reached.
                let claimed = iterate.then(|| bound.saturating_sub(1));
                if audited && claimed.is_none_or(|b| b >= job.floor) {
                    let task = &job.tasks[tid];
                    let claim = Claim {
                        unit: task.unit,
                        work: task.work.clone(),
                        reporter: worker,
                        bound: claimed,
                    };
                    job.keep_claim(claim, sampled, on_probation, &self.config);
                }
                if iterate {
                    // The whole job becomes a distributed one at the bound its worker reached,
                    // with what that worker measured: nodes per bound, the partial bound.
                    let done: Vec<(u32, u64)> = result
                        .iterations
                        .iter()
                        .copied()
                        .filter(|&(b, _)| b < bound)
                        .collect();
                    job.bound_nodes = done.iter().map(|&(_, n)| n).collect();
                    job.stats.bounds = done.iter().map(|&(b, _)| b).collect();
                    job.stats.bounds.push(bound);
                    partial = result
                        .iterations
                        .last()
                        .filter(|&&(b, _)| b == bound)
                        .map_or(0, |&(_, n)| n);
                    job.bound = bound;
                    job.epoch += 1;
                    let whole = job.tasks[tid].clone();
                    job.tasks = vec![Task {
                        state: TaskState::Done,
                        iterate: false,
                        ..whole
                    }];
                    job.queue.clear();
                    job.open = 1;
                    job.running = 0;
                    job.next_bound = u32::MAX;
                    commands.push(job.progress(false));
                }
                let tid = if iterate { 0 } else { tid };
                let predicted = match job.bound_nodes.last() {
                    Some(&last) if iterate => last as f64 * job.growth(),
                    _ => job.tasks[tid].predicted,
                };
                let remaining = (predicted - partial as f64).max(partial as f64);
                let Some(new_tasks) = job.pieces(tid, &pieces, remaining) else {
                    return self.forged(
                        job_id,
                        tid,
                        worker,
                        "pieces that are not moves from the unit",
                    );
                };
                if job.tasks.len() + new_tasks.len() > self.config.max_tasks_per_job {
                    // Too many tasks for one job: search this one again whole, and never ask it
                    // back. What it searched is lost.
                    job.stats.discarded_nodes = job.stats.discarded_nodes.saturating_add(partial);
                    let task = &mut job.tasks[tid];
                    task.unbudgeted = true;
                    task.state = TaskState::Pending;
                    job.queue.push(tid as UnitId);
                    return commands;
                }
                let task = &mut job.tasks[tid];
                task.state = TaskState::Done;
                let unit = &mut job.units[task.unit];
                unit.nodes = unit.nodes.saturating_add(partial);
                job.next_bound = job.next_bound.min(next_bound);
                job.open -= 1;
                job.stats.splits += 1;
                let first = job.tasks.len() as UnitId;
                job.open += new_tasks.len();
                job.stats.units += new_tasks.len();
                job.tasks.extend(new_tasks);
                let ids = (first..job.tasks.len() as UnitId).collect();
                job.push_next(ids);
                commands.extend(self.after_task(job_id));
                commands
            }
            Report::Exhausted { .. } => {
                // A whole job's search ends only when it finds the goal or is stopped.
                self.forged(job_id, tid, worker, "a whole job reported exhausted")
            }
            Report::BudgetExceeded
                if iterate
                    || job.tasks[tid].unbudgeted
                    || self.config.node_budget == 0
                    || result.expanded < self.config.node_budget =>
            {
                // Only a search given a budget stops at it, and only once it has spent it.
                self.forged(
                    job_id,
                    tid,
                    worker,
                    "a unit reported over a budget it did not have or did not spend",
                )
            }
            Report::BudgetExceeded => {
                // The old way to stop at the budget: cut the task and search its parts again;
                // what it searched is lost.
                job.stats.discarded_nodes =
                    job.stats.discarded_nodes.saturating_add(result.expanded);
                let parts = job
                    .spec
                    .solver
                    .split_unit(&job.tasks[tid].work, self.config.split_parts);
                if parts.len() <= 1
                    || iterate
                    || job.tasks.len() + parts.len() > self.config.max_tasks_per_job
                {
                    let task = &mut job.tasks[tid];
                    task.unbudgeted = true;
                    task.state = TaskState::Pending;
                    job.queue.push(result.unit);
                    return Vec::new();
                }
                job.tasks[tid].state = TaskState::Done;
                job.open -= 1;
                job.stats.splits += 1;
                let unit = job.tasks[tid].unit;
                let share = job.tasks[tid].predicted / parts.len() as f64;
                let first = job.tasks.len() as UnitId;
                for work in parts {
                    job.tasks.push(Task::new(unit, work, share));
                    job.open += 1;
                    job.stats.units += 1;
                }
                let ids = (first..job.tasks.len() as UnitId).collect();
                job.push_next(ids);
                Vec::new()
            }
            Report::Cancelled | Report::Failed(_) | Report::Unsupported(_) => {
                if let Report::Failed(e) = &result.report {
                    tracing::warn!(job = job_id, worker, error = %e, "unit failed; requeued");
                }
                let mut commands = Vec::new();
                if let Report::Unsupported(e) = &result.report {
                    // Its hello promised more than it has: send it no more of these.
                    tracing::warn!(job = job_id, worker, error = %e, "unit unsupported; requeued");
                    let shape = job.spec.root.shape();
                    if job.spec.heuristic == HeuristicKind::Pdb
                        && let Some(w) = self.workers.get_mut(&worker)
                        && w.capabilities.pdb_shapes.remove(&shape)
                    {
                        commands.push(Command::Revoked { worker, shape });
                    }
                }
                job.tasks[tid].state = TaskState::Pending;
                job.queue.push(result.unit);
                job.stats.requeued += 1;
                let limit = self.config.max_failures;
                let failing = self.workers.get_mut(&worker).is_some_and(|w| {
                    w.failures += 1;
                    w.failures >= limit
                });
                if !failing {
                    return commands;
                }
                tracing::warn!(
                    worker,
                    failures = limit,
                    "a worker failed every unit it was given; dropping it"
                );
                commands.push(Command::Disconnect {
                    worker,
                    reason: DisconnectReason::Failing,
                });
                commands.extend(self.remove_worker(worker));
                commands
            }
        }
    }

    /// After a task of `job_id` is done: when none of the bound's is left, move to the next bound.
    fn after_task(&mut self, job_id: JobId) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        if job.open > 0 {
            return Vec::new();
        }
        match job.auditing.take() {
            // Every audit found nothing: the reports hold.
            Some(Auditing::Bound { next }) => return self.advance(job_id, next),
            Some(Auditing::Answer { path, bounds }) => {
                let Some(mut job) = self.retire(job_id) else {
                    return Vec::new();
                };
                // Each reporter whose reports held up to this answer's audits has served one
                // answer of its probation.
                let mut confirmed: Vec<WorkerId> = job
                    .tasks
                    .iter()
                    .filter_map(|t| t.audit.filter(|a| a.before_answer).map(|a| a.reporter))
                    .collect();
                confirmed.sort_unstable();
                confirmed.dedup();
                for reporter in confirmed {
                    self.update_worker(reporter, |w| w.confirmed = w.confirmed.saturating_add(1));
                }
                job.stats.bounds = bounds;
                let mut commands = self.cancel_everywhere(job_id);
                commands.push(Command::Finish {
                    job: job_id,
                    outcome: JobOutcome::Solved { path },
                    stats: job.stats,
                });
                return commands;
            }
            None => {}
        }
        // Barrier reached: every task exhausted this bound.
        let mut commands = vec![job.progress(true)];
        let mut total = 0u64;
        for unit in job.units.iter_mut().filter(|u| !u.retired) {
            unit.last_nodes = unit.nodes;
            unit.nodes = 0;
            total = total.saturating_add(unit.last_nodes);
        }
        job.bound_nodes.push(total);
        // Every task exhausted the bound, so no solution is that short: the next bound is at
        // least one more, whatever was reported, and at most MAX_BOUND_STEP more.
        let next = job
            .next_bound
            .clamp(job.bound + 1, job.bound + MAX_BOUND_STEP);
        let claims = std::mem::take(&mut job.claims);
        job.deferred = std::mem::take(&mut job.probation_claims);
        let audits = self.audits_of(job_id, claims, |c| c.bound.unwrap_or(next - 1), false);
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return commands;
        };
        if !audits.is_empty() {
            // The next bound waits until other workers have searched these again.
            job.auditing = Some(Auditing::Bound { next });
            job.start_audits(audits);
            return commands;
        }
        commands.extend(self.advance(job_id, next));
        commands
    }

    /// Audits of `claims` of job `job_id`, each under `bound(claim)`: those some worker other
    /// than their reporter can search. `before_answer`: they check reports an answer waits on.
    fn audits_of(
        &self,
        job_id: JobId,
        claims: Vec<Claim>,
        bound: impl Fn(&Claim) -> u32,
        before_answer: bool,
    ) -> Vec<(usize, WorkUnit, AuditOf)> {
        let Some(job) = self.jobs.get(&job_id) else {
            return Vec::new();
        };
        // Claims come mostly from a few reporters: ask once per reporter whether anyone else
        // can check it, not once per claim (each asks every worker).
        let mut auditable: HashMap<WorkerId, bool> = HashMap::new();
        claims
            .into_iter()
            .filter(|c| {
                *auditable
                    .entry(c.reporter)
                    .or_insert_with(|| self.can_audit(job, c.reporter))
            })
            .map(|c| {
                let audit = AuditOf {
                    reporter: c.reporter,
                    bound: bound(&c),
                    before_answer,
                };
                (c.unit, c.work, audit)
            })
            .collect()
    }

    /// Whether some connected worker other than `reporter`, with a good result already (a
    /// newcomer audits nobody), can search `job`'s units.
    fn can_audit(&self, job: &Job, reporter: WorkerId) -> bool {
        let shape = job.spec.root.shape();
        self.workers.iter().any(|(&id, w)| {
            id != reporter && w.good > 0 && w.capabilities.can_search(job.spec.heuristic, shape)
        })
    }

    /// The result of an audit task: nothing found under its bound confirms the report; a path
    /// that checks out proves the reporter lied.
    fn apply_audit(
        &mut self,
        job_id: JobId,
        tid: usize,
        worker: WorkerId,
        audit: AuditOf,
        result: UnitResult,
    ) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        match result.report {
            Report::Exhausted { .. } => {
                job.tasks[tid].state = TaskState::Done;
                job.open -= 1;
                self.after_task(job_id)
            }
            Report::Found(suffix) => {
                let mut path = job.tasks[tid].work.prefix.clone();
                path.extend(suffix);
                if !job.reaches_goal(&path) || path.len() as u32 > audit.bound {
                    return self.forged(job_id, tid, worker, "an audit's path does not check out");
                }
                job.stats.audits_failed += 1;
                tracing::warn!(
                    job = job_id,
                    liar = audit.reporter,
                    auditor = worker,
                    bound = audit.bound,
                    length = path.len(),
                    "an audit found a path its reporter said was not there; dropping the reporter and starting over every job it reported on"
                );
                self.caught(audit.reporter)
            }
            // Audits are searched without a budget and never asked back: an honest worker
            // neither splits nor stops them.
            _ => self.forged(
                job_id,
                tid,
                worker,
                "an audit searched without a budget came back cut",
            ),
        }
    }

    /// `liar` was caught by an audit: every running job that relied on its reports starts over
    /// from its first bound, and it is dropped as a forger.
    fn caught(&mut self, liar: WorkerId) -> Vec<Command> {
        let mut jobs: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.reporters.contains(&liar))
            .map(|(&id, _)| id)
            .collect();
        jobs.sort_unstable();
        let mut commands = Vec::new();
        for id in jobs {
            commands.extend(self.restart(id));
        }
        if self.workers.contains_key(&liar) {
            commands.push(Command::Disconnect {
                worker: liar,
                reason: DisconnectReason::ForgedResult,
            });
            commands.extend(self.remove_worker(liar));
        }
        commands
    }

    /// Starts job `job_id` over from its first bound, keeping its units. Tasks still running
    /// for it finish unheeded (their epoch is over): no cancel, which a worker would apply to
    /// the job's new tasks too.
    fn restart(&mut self, job_id: JobId) -> Vec<Command> {
        let slots = self.slots();
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let asked = job.asked_out();
        job.auditing = None;
        job.claims.clear();
        job.probation_claims.clear();
        job.deferred.clear();
        job.reporters.clear();
        job.bound = job.floor;
        job.epoch += 1;
        job.stats.bounds = vec![job.floor];
        job.start(&self.config, slots);
        job.stats.units += job.tasks.len();
        let progress = job.progress(false);
        self.asked_out -= asked;
        self.reindex(job_id);
        vec![progress]
    }

    /// Audits that no connected worker but their reporter could search are let go (a worker
    /// cannot check itself): the job goes on on the reporter's word, as without audits.
    fn release_unauditable(&mut self) -> Vec<Command> {
        let mut released = Vec::new();
        for (&job_id, job) in &self.jobs {
            if job.auditing.is_none() {
                continue;
            }
            for &tid in &job.queue {
                if let Some(audit) = job.tasks[tid as usize].audit
                    && !self.can_audit(job, audit.reporter)
                {
                    released.push((job_id, tid));
                }
            }
        }
        if released.is_empty() {
            return Vec::new();
        }
        released.sort_unstable();
        let mut commands = Vec::new();
        for (job_id, tid) in released {
            commands.extend(self.give_up_audit(job_id, tid));
        }
        commands.extend(self.dispatch());
        commands
    }

    /// Audit `tid` of `job_id` (queued or running) is done without an answer: the job goes on
    /// on its reporter's word.
    fn give_up_audit(&mut self, job_id: JobId, tid: UnitId) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let task = &mut job.tasks[tid as usize];
        match task.state {
            TaskState::Pending => job.queue.retain(|&t| t != tid),
            TaskState::Running { .. } => job.running -= 1,
            TaskState::Done => return Vec::new(),
        }
        task.state = TaskState::Done;
        job.open -= 1;
        let commands = self.after_task(job_id);
        self.reindex(job_id);
        commands
    }

    /// Moves job `job_id` on to bound `next`, or ends it past the deepest search.
    fn advance(&mut self, job_id: JobId, next: u32) -> Vec<Command> {
        let slots = self.slots();
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let mut commands = Vec::new();
        if next >= npuzzle_solver::MAX_DEPTH as u32 && job.lies_seen < MAX_LIE_RESTARTS {
            // Every board searched here is solvable (parity is checked before), and none of
            // the shapes served needs that many moves: some report on the way was false.
            tracing::warn!(
                job = job_id,
                bound = job.bound,
                "past the deepest search with a solvable board: an earlier report was false; starting the job over with every report audited"
            );
            job.lies_seen += 1;
            return self.restart(job_id);
        }
        if next >= npuzzle_solver::MAX_DEPTH as u32 {
            // No path within the deepest bound the search can hold.
            let lower_bound = job.bound;
            let Some(job) = self.retire(job_id) else {
                return commands;
            };
            commands.extend(self.cancel_everywhere(job_id));
            commands.push(Command::Finish {
                job: job_id,
                outcome: JobOutcome::Cancelled { lower_bound },
                stats: job.stats,
            });
            return commands;
        }
        job.bound = next;
        job.epoch += 1;
        job.stats.bounds.push(job.bound);
        job.queue_all(&self.config, slots);
        job.stats.units += job.tasks.len();
        commands.push(job.progress(false));
        commands
    }

    /// The next (worker, job) to pair: among the workers with free slots, the freest (lowest id
    /// on ties) that can search some job with queued tasks; for it, the job with the fewest
    /// running tasks (lowest id on ties) among those it can search.
    fn next_pairing(&self) -> Option<(WorkerId, JobId)> {
        self.free.iter().find_map(|&(_, _, wid)| {
            let w = self.workers.get(&wid)?;
            self.runnable.iter().find_map(|&(_, jid)| {
                let j = self.jobs.get(&jid)?;
                // An audit never goes to the worker whose report it checks, nor to a newcomer.
                let next = j.queue.last().and_then(|&t| j.tasks.get(t as usize))?;
                let barred = next.audit.is_some_and(|a| a.reporter == wid || w.good == 0);
                (!barred
                    && w.capabilities
                        .can_search(j.spec.heuristic, j.spec.root.shape()))
                .then_some((wid, jid))
            })
        })
    }

    /// Fills free slots: the job with the fewest running tasks first, its next task in
    /// depth-first order, each to a worker that can search it. Slots left idle then get work by
    /// asking running tasks back ([`Scheduler::ask_back`]).
    fn dispatch(&mut self) -> Vec<Command> {
        let mut commands = Vec::new();
        while let Some((wid, job_id)) = self.next_pairing() {
            let Some(job) = self.jobs.get_mut(&job_id) else {
                break;
            };
            let Some(tid) = job.queue.pop() else { break };
            let task = &mut job.tasks[tid as usize];
            task.state = TaskState::Running {
                worker: wid,
                asked_back: false,
            };
            task.since = self.clock;
            task.asked_at = None;
            job.running += 1;
            let assignment = Assignment {
                job: job.spec.id,
                epoch: job.epoch,
                unit: tid,
                work: task.work.clone(),
                goal: job.spec.goal,
                heuristic: job.spec.heuristic,
                bound: task.audit.map_or(job.bound, |a| a.bound),
                node_budget: if task.unbudgeted {
                    0
                } else {
                    self.config.node_budget
                },
                iterate: task.iterate,
            };
            let key = (assignment.job, assignment.epoch, tid);
            self.update_worker(wid, |w| w.outstanding.insert(key));
            self.totals.units_assigned += 1;
            commands.push(Command::Assign {
                worker: wid,
                assignment,
            });
            self.reindex(job_id);
        }
        commands.extend(self.ask_back());
        commands
    }

    /// Slots free now that no queued task can fill ask running tasks for the rest of their
    /// bound: the largest predicted ones first, one request per 32 idle slots (each answer
    /// brings many pieces), none twice. Every task held by a worker without a good result yet
    /// is asked back at once: an honest newcomer answers within milliseconds (and is trusted
    /// from then on); a worker that holds is found out in one ask timeout, however many of
    /// them there are.
    fn ask_back(&mut self) -> Vec<Command> {
        if self.free.is_empty() || self.config.hand_back_after == u64::MAX {
            return Vec::new();
        }
        let idle: Vec<&Worker> = self
            .free
            .iter()
            .filter_map(|(_, _, id)| self.workers.get(id))
            .collect();
        let idle_slots: usize = idle
            .iter()
            .map(|w| w.capacity().saturating_sub(w.outstanding.len()))
            .sum();
        let wanted = idle_slots
            .div_ceil(32)
            .saturating_sub(self.asked_out)
            .max(usize::from(self.asked_out == 0));
        let wanted = if self.asked_out >= idle_slots {
            0
        } else {
            wanted
        };
        let mut newcomers = Vec::new();
        let mut searchable: HashMap<JobId, bool> = HashMap::new();
        let mut asked = 0usize;
        let mut candidates: Vec<(f64, JobId, UnitId, WorkerId)> = Vec::new();
        for (&wid, w) in &self.workers {
            for &(job_id, epoch, tid) in &w.outstanding {
                let Some(job) = self.jobs.get(&job_id) else {
                    continue;
                };
                if epoch != job.epoch {
                    continue;
                }
                let Some(task) = job.tasks.get(tid as usize) else {
                    continue;
                };
                match task.state {
                    TaskState::Running {
                        asked_back: true, ..
                    } => asked += 1,
                    TaskState::Running { .. } if !task.unbudgeted => {
                        let can = *searchable.entry(job_id).or_insert_with(|| {
                            let shape = job.spec.root.shape();
                            idle.iter()
                                .any(|w| w.capabilities.can_search(job.spec.heuristic, shape))
                        });
                        if can && w.good == 0 {
                            newcomers.push((job_id, tid, wid));
                        } else if can {
                            candidates.push((task.predicted, job_id, tid, wid));
                        }
                    }
                    _ => {}
                }
            }
        }
        debug_assert_eq!(asked, self.asked_out);
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut commands = Vec::new();
        let after_nodes = self.config.hand_back_after;
        newcomers.sort_unstable();
        for (job_id, tid, worker) in newcomers {
            commands.extend(self.ask(job_id, tid, worker, after_nodes));
        }
        for &(_, job_id, tid, worker) in candidates.iter().take(wanted) {
            commands.extend(self.ask(job_id, tid, worker, after_nodes));
        }
        commands
    }

    /// Asks `worker` for the rest of running task `tid` of `job_id` once it has searched
    /// `after_nodes` nodes, and counts the ask.
    fn ask(
        &mut self,
        job_id: JobId,
        tid: UnitId,
        worker: WorkerId,
        after_nodes: u64,
    ) -> Option<Command> {
        let job = self.jobs.get_mut(&job_id)?;
        let task = &mut job.tasks[tid as usize];
        task.state = TaskState::Running {
            worker,
            asked_back: true,
        };
        task.asked_at = self.clock;
        job.stats.yields += 1;
        self.asked_out += 1;
        Some(Command::Yield {
            worker,
            job: job_id,
            epoch: job.epoch,
            unit: tid,
            after_nodes,
        })
    }
}
