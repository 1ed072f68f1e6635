//! The scheduler: who searches which unit, under which bound, and when a job is done.
//!
//! A plain state machine with no I/O, no clock and no gRPC (like raft-rs's core): the caller feeds
//! it events ([`Scheduler::add_worker`], [`Scheduler::submit`], [`Scheduler::on_result`],
//! [`Scheduler::tick`], …) and carries out the [`Command`]s it returns. Unit tests drive it with a
//! simulated cluster.
//!
//! # Rules (see `DESIGN.md` in the shared notes)
//! - **Shared bound with a barrier.** Every unit of a job is searched under the job's bound. Only
//!   when every unit has reported for that bound does the job move on, to the least `next_bound`
//!   any unit reported. A solution found under bound `b` is therefore optimal: every smaller
//!   bound was exhausted everywhere, so none is shorter than `b`, and the solution costs at most
//!   `b`.
//! - **Workers pull.** Assignments go to free slots (slots minus outstanding assignments), the
//!   job with the fewest running units first (fair sharing), and within a job in the serial
//!   search's depth-first order (Korf's operator order on the units' prefixes). In every bound
//!   but the last the order does not change the work; in the last one it makes the distributed
//!   search explore what serial IDA* explores before its solution, plus what is in flight on the
//!   other slots, instead of a random share of the bound.
//! - **Heavy units are split**, so that no unit is a long pole. Before each bound, a unit whose
//!   predicted size (its nodes at the previous bound × the job's growth per bound) exceeds its
//!   share of the bound is cut into smaller units ([`npuzzle_solver::Solver::split_unit`]) ahead
//!   of time, wasting nothing. As a safety net an assignment also carries a node budget; a unit
//!   that exceeds it is split then (the nodes it searched are lost).
//! - **Everything is tagged** with (job, epoch, unit): the epoch counts the job's bounds, so late,
//!   duplicated or out-of-order results are recognised and dropped.
//! - **Leases.** A worker silent for longer than the lease timeout is dropped; its units go back
//!   to the queue. So do the units of a worker that disconnects.
//! - **Cancel at once.** When a job is answered or cancelled, every worker holding one of its
//!   units gets a cancel command in the same step.
//! - **Capabilities.** A worker says in its hello which shapes it holds pattern databases for.
//!   Units of a job searched with pattern databases go only to workers with tables for the
//!   job's shape; they wait in the queue while no such worker is connected. Other jobs go
//!   anywhere.
//!
//! # Pattern databases on the workers, linear conflict here
//!
//! The coordinator keeps no tables. For its own estimates (a unit's `g + h`, hence a job's first
//! bound) it uses its [`JobSpec::solver`], which for a PDB job is linear conflict (or exact on
//! small boards), while the workers search the same units with pattern databases. Mixing is
//! sound because every one of these heuristics is admissible, and the barrier rule never needs
//! more than that:
//!
//! - A bound is only ever a claim that *no solution is cheaper*. The first bound is the least
//!   linear-conflict `g + h` over the units: admissible, so no solution is cheaper than it. It may
//!   lie below every unit's PDB value; a worker then prunes the unit at its root and reports that
//!   value (`g + h_pdb`, still a lower bound on any solution through the unit) as its
//!   `next_bound` at once, having expanded nothing. The job moves to the least reported value,
//!   as for any bound: the wasted bounds cost one round trip per unit and no search.
//! - Every later bound is the least `next_bound` reported by the workers, i.e. the least f
//!   above the exhausted bound that their (PDB) search met. Since the search under bound `b`
//!   with an admissible heuristic misses no path of cost `<= b`, and the least pruned f is a
//!   lower bound on any path it pruned, the barrier's rule (a solution found under `b` is
//!   optimal once every unit exhausted every smaller bound) holds whichever admissible
//!   heuristic each side uses. PDBs here are not consistent (a move can change them by more
//!   than 1), which IDA* tolerates: bounds may then rise by more than 2.
//! - Splitting a unit and ordering units use no heuristic; checking a path replays it.
//!
//! So an answer is still optimal, and its length equals the bound it was found under.

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
    /// per slot (1/8: a slot's work is cut into at least 8 units) is split ahead of time.
    pub max_unit_share: f64,
    /// …but units predicted below this many nodes are never split ahead of time.
    pub min_split_nodes: u64,
    /// A worker silent for this long is considered lost.
    pub lease_timeout: Duration,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            node_budget: 20_000_000,
            split_parts: 32,
            max_unit_share: 1.0 / 8.0,
            min_split_nodes: 2_000_000,
            lease_timeout: Duration::from_secs(10),
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

/// A job ready to distribute: the root's frontier and the first bound.
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
    pub units: Vec<WorkUnit>,
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
    /// Units at the end (after splits).
    pub units: usize,
    pub splits: usize,
    pub requeued: usize,
    /// Bounds searched.
    pub bounds: Vec<u32>,
    /// Nodes per worker.
    pub worker_nodes: HashMap<WorkerId, u64>,
}

/// Counts since the scheduler started, over every job (running or over), for the caller to
/// export: the scheduler itself records no metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Assignments handed to workers.
    pub units_assigned: u64,
    /// Units cut into smaller ones (ahead of a bound, or after exceeding their node budget).
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
    /// Stop every unit of `job` on `worker`.
    Cancel { worker: WorkerId, job: JobId },
    /// Close `worker`'s connection: it no longer counts as a member and its units went back to
    /// the queue.
    Disconnect {
        worker: WorkerId,
        reason: DisconnectReason,
    },
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
    /// It reported a path that does not reach the goal or is longer than the bound: an honest
    /// worker never does, so its other results are not trusted either.
    ForgedResult,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnitState {
    Pending,
    Running(WorkerId),
    Done,
    /// Split into other units; no longer searched.
    Retired,
}

#[derive(Clone, Debug)]
struct Unit {
    /// The prefix in serial depth-first order (Korf's operator order: U, L, R, D).
    order: Vec<u8>,
    work: WorkUnit,
    /// `g + h` at the unit's root.
    f: u32,
    /// Nodes at the previous bound: the size prediction.
    last_nodes: u64,
    state: UnitState,
    /// Searched without a node budget (it could not be split further).
    unbudgeted: bool,
}

/// A unit's place in serial depth-first order.
fn dfs_order(prefix: &[Move]) -> Vec<u8> {
    prefix
        .iter()
        .map(|m| match m {
            Move::Up => 0,
            Move::Left => 1,
            Move::Right => 2,
            Move::Down => 3,
        })
        .collect()
}

impl Unit {
    fn new(work: WorkUnit, solver: &Solver, last_nodes: u64) -> Unit {
        Unit {
            order: dfs_order(&work.prefix),
            f: solver.unit_lower_bound(&work).unwrap_or(work.g),
            work,
            last_nodes,
            state: UnitState::Pending,
            unbudgeted: false,
        }
    }
}

struct Job {
    spec: JobSpec,
    /// Nodes of the previous two bounds: the growth per bound.
    bound_nodes: Vec<u64>,
    units: Vec<Unit>,
    epoch: Epoch,
    bound: u32,
    /// Pending units, the one to hand out next at the end.
    queue: Vec<UnitId>,
    running: usize,
    active: usize,
    done: usize,
    next_bound: u32,
    stats: JobStats,
}

struct Worker {
    slots: usize,
    /// Which units it may be given.
    capabilities: Capabilities,
    outstanding: HashSet<(JobId, Epoch, UnitId)>,
    last_seen: Instant,
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
}

impl Job {
    /// Queues every active unit for the current bound in depth-first order, first splitting
    /// the units predicted to be too large for their share of the bound.
    fn queue_all(&mut self, config: &SchedulerConfig, slots: usize) {
        self.split_ahead(config, slots);
        let mut ids: Vec<UnitId> = (0..self.units.len() as UnitId)
            .filter(|&i| self.units[i as usize].state != UnitState::Retired)
            .collect();
        for &i in &ids {
            self.units[i as usize].state = UnitState::Pending;
        }
        // Last in depth-first order at the front: units are popped from the end.
        ids.sort_by(|&a, &b| {
            self.units[b as usize]
                .order
                .cmp(&self.units[a as usize].order)
        });
        self.queue = ids;
        self.active = self.queue.len();
        self.done = 0;
        self.running = 0;
        self.next_bound = u32::MAX;
    }

    /// Splits units whose predicted size exceeds their share of the coming bound.
    fn split_ahead(&mut self, config: &SchedulerConfig, slots: usize) {
        let [.., before, last] = self.bound_nodes[..] else {
            return;
        };
        if before == 0 || last == 0 {
            return;
        }
        let growth = last as f64 / before as f64;
        let predicted_total = last as f64 * growth;
        let cap = (predicted_total * config.max_unit_share / slots.max(1) as f64)
            .max(config.min_split_nodes as f64);
        let heavy: Vec<usize> = (0..self.units.len())
            .filter(|&i| {
                let u = &self.units[i];
                u.state != UnitState::Retired && u.last_nodes as f64 * growth > cap
            })
            .collect();
        for i in heavy {
            let predicted = self.units[i].last_nodes as f64 * growth;
            let wanted = ((predicted / cap).ceil() as usize).clamp(2, 4096);
            let parts = self.spec.solver.split_unit(&self.units[i].work, wanted);
            if parts.len() <= 1 {
                continue;
            }
            let share = self.units[i].last_nodes / parts.len() as u64;
            self.units[i].state = UnitState::Retired;
            self.stats.splits += 1;
            for work in parts {
                let unit = Unit::new(work, &self.spec.solver, share);
                self.units.push(unit);
            }
        }
        self.stats.units = self.units.len();
    }

    fn progress(&self, finished: bool) -> Command {
        Command::Progress {
            job: self.spec.id,
            bound: self.bound,
            nodes: self.stats.nodes,
            units_done: self.done,
            units_total: self.active,
            finished,
        }
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
        }
    }

    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Slots over all workers.
    pub fn slots(&self) -> usize {
        self.workers.values().map(|w| w.slots).sum()
    }

    /// Assignments out on workers.
    pub fn busy_slots(&self) -> usize {
        self.workers.values().map(|w| w.outstanding.len()).sum()
    }

    pub fn running_jobs(&self) -> usize {
        self.jobs.len()
    }

    /// Units waiting for a slot, over all jobs.
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
        self.workers.insert(
            id,
            Worker {
                slots: slots.max(1),
                capabilities,
                outstanding: HashSet::new(),
                last_seen: now,
            },
        );
        self.dispatch()
    }

    /// A worker disconnected or its lease expired: its units go back to the queue.
    pub fn remove_worker(&mut self, id: WorkerId) -> Vec<Command> {
        let Some(worker) = self.workers.remove(&id) else {
            return Vec::new();
        };
        for (job_id, epoch, unit) in worker.outstanding {
            let Some(job) = self.jobs.get_mut(&job_id) else {
                continue;
            };
            let u = &mut job.units[unit as usize];
            if epoch == job.epoch && u.state == UnitState::Running(id) {
                u.state = UnitState::Pending;
                job.running -= 1;
                // Back at the end: requeued units go out next.
                job.queue.push(unit);
                job.stats.requeued += 1;
            }
        }
        self.dispatch()
    }

    /// Any message from a worker renews its lease.
    pub fn heartbeat(&mut self, id: WorkerId, now: Instant) {
        if let Some(w) = self.workers.get_mut(&id) {
            w.last_seen = now;
        }
    }

    /// Drops workers whose lease expired.
    pub fn tick(&mut self, now: Instant) -> Vec<Command> {
        let timeout = self.config.lease_timeout;
        let expired: Vec<WorkerId> = self
            .workers
            .iter()
            .filter(|(_, w)| now.saturating_duration_since(w.last_seen) > timeout)
            .map(|(&id, _)| id)
            .collect();
        let mut commands = Vec::new();
        for id in expired {
            commands.push(Command::Disconnect {
                worker: id,
                reason: DisconnectReason::LeaseExpired,
            });
            commands.extend(self.remove_worker(id));
        }
        commands
    }

    /// A new job: its units are searched from the least bound any of them admits.
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
                units: units.len(),
                bounds: vec![bound],
                ..JobStats::default()
            },
            spec,
            bound_nodes: Vec::new(),
            units,
            epoch: 0,
            bound,
            queue: Vec::new(),
            running: 0,
            active: 0,
            done: 0,
            next_bound: u32::MAX,
        };
        job.queue_all(&self.config, self.slots());
        let mut commands = vec![job.progress(false)];
        self.jobs.insert(id, job);
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

    /// A worker's result. Stale ones (finished job, old epoch, unit not running on this worker)
    /// only free the worker's slot.
    pub fn on_result(
        &mut self,
        worker: WorkerId,
        result: UnitResult,
        now: Instant,
    ) -> Vec<Command> {
        let key = (result.job, result.epoch, result.unit);
        match self.workers.get_mut(&worker) {
            Some(w) => {
                w.last_seen = now;
                w.outstanding.remove(&key);
            }
            // Results of a worker already given up on are dropped: its units were requeued.
            None => return Vec::new(),
        }
        let mut commands = Vec::new();
        if let Some(job) = self.jobs.get_mut(&result.job) {
            job.stats.nodes += result.expanded;
            *job.stats.worker_nodes.entry(worker).or_default() += result.expanded;
            let current = result.epoch == job.epoch
                && job
                    .units
                    .get(result.unit as usize)
                    .is_some_and(|u| u.state == UnitState::Running(worker));
            if current {
                commands.extend(self.apply(worker, result));
            }
        } else {
            self.late_nodes += result.expanded;
        }
        commands.extend(self.dispatch());
        commands
    }

    /// A current result: move the unit and the job along.
    fn apply(&mut self, worker: WorkerId, result: UnitResult) -> Vec<Command> {
        let job_id = result.job;
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let uid = result.unit as usize;
        job.running -= 1;
        match result.report {
            Report::Found(suffix) => {
                let mut path = job.units[uid].work.prefix.clone();
                path.extend(suffix);
                // Replay before trusting: a wrong or too long path is treated as a failure.
                let reaches = job
                    .spec
                    .root
                    .verify(&path, &job.spec.goal)
                    .is_ok_and(|v| v.reaches_goal);
                if reaches && path.len() as u32 <= job.bound {
                    let Some(job) = self.retire(job_id) else {
                        return Vec::new();
                    };
                    let mut commands = self.cancel_everywhere(job_id);
                    let mut stats = job.stats;
                    stats.units = job.units.len();
                    commands.push(Command::Finish {
                        job: job_id,
                        outcome: JobOutcome::Solved { path },
                        stats,
                    });
                    return commands;
                }
                tracing::warn!(
                    job = job_id,
                    worker,
                    "rejected a path that does not check out; dropping the worker"
                );
                job.units[uid].state = UnitState::Pending;
                job.queue.insert(0, result.unit);
                job.stats.requeued += 1;
                let mut commands = vec![Command::Disconnect {
                    worker,
                    reason: DisconnectReason::ForgedResult,
                }];
                commands.extend(self.remove_worker(worker));
                commands
            }
            Report::Exhausted { next_bound } => {
                let unit = &mut job.units[uid];
                unit.state = UnitState::Done;
                unit.last_nodes = result.expanded;
                job.next_bound = job.next_bound.min(next_bound);
                job.done += 1;
                if job.done < job.active {
                    return Vec::new();
                }
                // Barrier reached: every unit exhausted this bound.
                let mut commands = vec![job.progress(true)];
                let bound_total: u64 = job
                    .units
                    .iter()
                    .filter(|u| u.state == UnitState::Done)
                    .map(|u| u.last_nodes)
                    .sum();
                job.bound_nodes.push(bound_total);
                job.bound = job.next_bound;
                job.epoch += 1;
                job.stats.bounds.push(job.bound);
                let slots: usize = self.workers.values().map(|w| w.slots).sum();
                job.queue_all(&self.config, slots);
                commands.push(job.progress(false));
                commands
            }
            Report::BudgetExceeded => {
                let parts = job
                    .spec
                    .solver
                    .split_unit(&job.units[uid].work, self.config.split_parts);
                if parts.len() <= 1 {
                    // Nothing to split: search it whole.
                    let unit = &mut job.units[uid];
                    unit.unbudgeted = true;
                    unit.state = UnitState::Pending;
                    job.queue.push(result.unit);
                    return Vec::new();
                }
                job.units[uid].state = UnitState::Retired;
                job.active -= 1;
                job.stats.splits += 1;
                // The parts share the heavy unit's size: predict each as a fair share of it.
                let share = result.expanded / parts.len() as u64;
                // The parts go out next, in depth-first order among themselves.
                let first = job.units.len();
                for work in parts {
                    let unit = Unit::new(work, &job.spec.solver, share);
                    job.units.push(unit);
                    job.active += 1;
                }
                let mut ids: Vec<UnitId> = (first as UnitId..job.units.len() as UnitId).collect();
                ids.sort_by(|&a, &b| {
                    job.units[b as usize]
                        .order
                        .cmp(&job.units[a as usize].order)
                });
                job.queue.extend(ids);
                job.stats.units = job.units.len();
                Vec::new()
            }
            Report::Cancelled | Report::Failed(_) | Report::Unsupported(_) => {
                if let Report::Failed(e) = &result.report {
                    tracing::warn!(job = job_id, worker, error = %e, "unit failed; requeued");
                }
                if let Report::Unsupported(e) = &result.report {
                    // Its hello promised more than it has: send it no more of these.
                    tracing::warn!(job = job_id, worker, error = %e, "unit unsupported; requeued");
                    let shape = job.spec.root.shape();
                    if job.spec.heuristic == HeuristicKind::Pdb
                        && let Some(w) = self.workers.get_mut(&worker)
                    {
                        w.capabilities.pdb_shapes.remove(&shape);
                    }
                }
                job.units[uid].state = UnitState::Pending;
                job.queue.push(result.unit);
                job.stats.requeued += 1;
                Vec::new()
            }
        }
    }

    /// The next (worker, job) to pair: among the workers with free slots, the freest (lowest id
    /// on ties) that can search some job with queued units; for it, the job with the fewest
    /// running units (lowest id on ties) among those it can search.
    fn next_pairing(&self) -> Option<(WorkerId, JobId)> {
        let mut free: Vec<(&WorkerId, &Worker)> = self
            .workers
            .iter()
            .filter(|(_, w)| w.outstanding.len() < w.slots)
            .collect();
        free.sort_by_key(|(id, w)| (std::cmp::Reverse(w.slots - w.outstanding.len()), **id));
        free.into_iter().find_map(|(&wid, w)| {
            self.jobs
                .values()
                .filter(|j| {
                    !j.queue.is_empty()
                        && w.capabilities
                            .can_search(j.spec.heuristic, j.spec.root.shape())
                })
                .min_by_key(|j| (j.running, j.spec.id))
                .map(|j| (wid, j.spec.id))
        })
    }

    /// Fills free slots: the job with the fewest running units first, its largest unit first,
    /// each unit to a worker that can search it.
    fn dispatch(&mut self) -> Vec<Command> {
        let mut commands = Vec::new();
        while let Some((wid, job_id)) = self.next_pairing() {
            let Some(job) = self.jobs.get_mut(&job_id) else {
                break;
            };
            let Some(uid) = job.queue.pop() else { break };
            let unit = &mut job.units[uid as usize];
            unit.state = UnitState::Running(wid);
            job.running += 1;
            let assignment = Assignment {
                job: job.spec.id,
                epoch: job.epoch,
                unit: uid,
                work: unit.work.clone(),
                goal: job.spec.goal,
                heuristic: job.spec.heuristic,
                bound: job.bound,
                node_budget: if unit.unbudgeted {
                    0
                } else {
                    self.config.node_budget
                },
            };
            if let Some(w) = self.workers.get_mut(&wid) {
                w.outstanding
                    .insert((assignment.job, assignment.epoch, uid));
            }
            self.totals.units_assigned += 1;
            commands.push(Command::Assign {
                worker: wid,
                assignment,
            });
        }
        commands
    }
}
