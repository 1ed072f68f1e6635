//! A job's books: its [`Unit`]s (subtrees searched again at every bound until they are cut),
//! the [`Task`]s of the current bound (a unit, or a piece handed back from one), the queue and
//! the barrier counts, and the rules for bounds (how far a job may move on, which next bound is
//! honest). Everything here is about one job; who searches a task is decided in `dispatch.rs`,
//! and what a report does to a job in `reports.rs`.

use std::collections::HashSet;
use std::time::Instant;

use npuzzle_solver::{Move, Solver, WorkUnit};

use super::SchedulerConfig;
use super::audit::{AuditOf, Auditing, Claim};
use super::messages::{Command, Epoch, HandedBack, JobId, JobSpec, JobStats, TaskId, WorkerId};

/// The highest next bound a worker may report: a path of the deepest search plus the largest
/// heuristic value is below it. Above it a report is forged.
pub(super) const MAX_NEXT_BOUND: u32 = 2 * npuzzle_solver::MAX_DEPTH as u32;

/// How far above a bound a search from the root finds its next. The next bound is the least
/// `f = g + h` of a child pruned below a node with `f <= bound`, and one move raises `g` by 1
/// and `h` by at most 3 with every heuristic served here (Manhattan, pattern databases and
/// exact tables by 1; linear conflict by 1 plus one new conflict in the tile's new line). A
/// unit's own next bound can be higher (its root may lie above the bound), but not the job's:
/// a job whose reports add up to more moves on by this step only (a bound with nothing new
/// costs one repeated iteration), so that inflated reports skip no bound that holds an answer.
pub(super) const MAX_BOUND_STEP: u32 = 4;

/// Whether `next` can be an honest next bound above `bound` (`u32::MAX`: none met).
pub(super) fn valid_next_bound(next: u32, bound: u32) -> bool {
    next == u32::MAX || (next > bound && next <= MAX_NEXT_BOUND)
}

/// The least growth of nodes from one bound to the next assumed for predictions, and the most.
const GROWTH_RANGE: (f64, f64) = (1.0, 50.0);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskState {
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
pub(super) struct Unit {
    pub(super) work: WorkUnit,
    /// `g + h` at the unit's root (the coordinator's heuristic).
    pub(super) f: u32,
    /// Nodes at the previous bound: the size prediction.
    pub(super) last_nodes: u64,
    /// Nodes at this bound so far, its pieces' included.
    pub(super) nodes: u64,
    /// Cut into other units; no longer searched.
    pub(super) retired: bool,
}

/// One thing to search under the current bound: a unit, or a piece of one.
#[derive(Clone, Debug)]
pub(super) struct Task {
    /// The unit it belongs to, whose nodes it adds to.
    pub(super) unit: usize,
    pub(super) work: WorkUnit,
    pub(super) order: Vec<u8>,
    /// Expected nodes (to choose which running task to ask back: the largest).
    pub(super) predicted: f64,
    pub(super) state: TaskState,
    /// Searched without a node budget (the old `BUDGET_EXCEEDED` could not cut it further).
    pub(super) unbudgeted: bool,
    /// When it was last handed out, and when it was asked back (the scheduler's clock).
    pub(super) since: Option<Instant>,
    pub(super) asked_at: Option<Instant>,
    /// A whole job: search bound after bound.
    pub(super) iterate: bool,
    /// An audit: searched under its own bound, by any worker but the reporter.
    pub(super) audit: Option<AuditOf>,
    /// While running: sent ahead to a worker whose slots were all busy, and not started as far
    /// as the scheduler knows (an ask for it takes it back whole).
    pub(super) queued: bool,
}

pub(super) struct Job {
    pub(super) spec: JobSpec,
    /// Nodes of each bound exhausted so far: the growth per bound.
    pub(super) bound_nodes: Vec<u64>,
    pub(super) units: Vec<Unit>,
    /// This bound's tasks; the epoch's unit ids index it.
    pub(super) tasks: Vec<Task>,
    pub(super) epoch: Epoch,
    pub(super) bound: u32,
    /// Pending tasks, the one to hand out next at the end.
    pub(super) queue: Vec<TaskId>,
    pub(super) running: usize,
    /// Tasks of this bound not yet done.
    pub(super) open: usize,
    pub(super) next_bound: u32,
    pub(super) stats: JobStats,
    /// Its key in [`Scheduler::runnable`] while it has queued tasks.
    pub(super) indexed: Option<(usize, JobId)>,
    /// The bound it started from (the coordinator's own lower bound): where a restart begins.
    pub(super) floor: u32,
    /// Reports of this bound picked for an audit.
    pub(super) claims: Vec<Claim>,
    /// Reports of this bound by workers on probation, not sampled: at the bound's end they
    /// become `deferred`, replacing the previous bound's.
    pub(super) probation_claims: Vec<Claim>,
    /// The last exhausted bound's reports by workers on probation: audited before an answer
    /// found in the next bound is returned.
    pub(super) deferred: Vec<Claim>,
    /// Set while the job waits for its audits.
    pub(super) auditing: Option<Auditing>,
    /// Workers whose reports it relies on: if one is caught lying, the job starts over.
    pub(super) reporters: HashSet<WorkerId>,
    /// Traces of a lie seen so far (a path shorter than its bound, a bound past the deepest
    /// search): each proves an earlier report false, and from the first on every report of the
    /// job is audited.
    pub(super) lies_seen: u32,
}

impl Unit {
    pub(super) fn new(work: WorkUnit, solver: &Solver, last_nodes: u64) -> Unit {
        Unit {
            f: solver.unit_lower_bound(&work).unwrap_or(work.g),
            work,
            last_nodes,
            nodes: 0,
            retired: false,
        }
    }
}

impl Task {
    pub(super) fn new(unit: usize, work: WorkUnit, predicted: f64) -> Task {
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
            queued: false,
        }
    }
}

impl Job {
    /// Nodes per bound grow by this factor (measured on the last two bounds; 4 until then).
    pub(super) fn growth(&self) -> f64 {
        match self.bound_nodes[..] {
            [.., before, last] if before > 0 && last > 0 => {
                (last as f64 / before as f64).clamp(GROWTH_RANGE.0, GROWTH_RANGE.1)
            }
            _ => 4.0,
        }
    }

    /// Starts the current bound: one task per unit, in depth-first order, after cutting the
    /// units predicted to be too large for their share of the bound.
    pub(super) fn queue_all(&mut self, config: &SchedulerConfig, slots: usize) {
        self.split_ahead(config, slots);
        let growth = self.growth();
        self.tasks = self
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| !u.retired)
            .map(|(i, u)| Task::new(i, u.work.clone(), u.last_nodes as f64 * growth))
            .collect();
        let mut ids: Vec<TaskId> = TaskId::range(0, self.tasks.len()).collect();
        // Last in depth-first order at the front: tasks are popped from the end.
        ids.sort_by(|&a, &b| {
            self.tasks[b.index()]
                .order
                .cmp(&self.tasks[a.index()].order)
        });
        self.queue = ids;
        self.open = self.tasks.len();
        self.running = 0;
        self.next_bound = u32::MAX;
    }

    /// Cuts units whose predicted size exceeds their share of the coming bound.
    pub(super) fn split_ahead(&mut self, config: &SchedulerConfig, slots: usize) {
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

    /// Queues its first bound: a whole job (one unit, [`JobSpec::whole`]) as one task searched
    /// bound after bound, anything else as [`Job::queue_all`] does.
    pub(super) fn start(&mut self, config: &SchedulerConfig, slots: usize) {
        self.queue_all(config, slots);
        let whole = self.spec.whole && self.units.iter().filter(|u| !u.retired).count() == 1;
        if whole && let Some(task) = self.tasks.first_mut() {
            task.iterate = true;
            task.predicted = f64::INFINITY;
        }
    }

    /// Its running tasks asked back and not yet answered (counted in [`Scheduler::asked_out`]),
    /// and its tasks sent ahead being taken back (counted in [`Scheduler::revoking`]).
    pub(super) fn asked_out(&self) -> (usize, usize) {
        let asked = |t: &&Task| {
            matches!(
                t.state,
                TaskState::Running {
                    asked_back: true,
                    ..
                }
            )
        };
        let taken_back = self.tasks.iter().filter(asked).filter(|t| t.queued).count();
        let asked = self.tasks.iter().filter(asked).count();
        (asked - taken_back, taken_back)
    }

    /// Whether `path` from the root reaches the goal.
    pub(super) fn reaches_goal(&self, path: &[Move]) -> bool {
        self.spec
            .root
            .verify(path, &self.spec.goal)
            .is_ok_and(|v| v.reaches_goal)
    }

    pub(super) fn progress(&self, finished: bool) -> Command {
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
    pub(super) fn push_next(&mut self, mut ids: Vec<TaskId>) {
        ids.sort_by(|&a, &b| {
            self.tasks[b.index()]
                .order
                .cmp(&self.tasks[a.index()].order)
        });
        self.queue.extend(ids);
    }

    /// A whole job's worker stopped part-way through `bound`: the job becomes a distributed
    /// one at that bound, with what the worker measured (nodes per bound exhausted). Its one
    /// task, `tid`, stays as the only task of the bound, done, for the pieces to belong to.
    /// Returns the nodes searched in `bound`.
    pub(super) fn distribute_whole(
        &mut self,
        tid: usize,
        bound: u32,
        iterations: &[(u32, u64)],
    ) -> u64 {
        let done: Vec<(u32, u64)> = iterations
            .iter()
            .copied()
            .filter(|&(b, _)| b < bound)
            .collect();
        self.bound_nodes = done.iter().map(|&(_, n)| n).collect();
        self.stats.bounds = done.iter().map(|&(b, _)| b).collect();
        self.stats.bounds.push(bound);
        let partial = iterations
            .last()
            .filter(|&&(b, _)| b == bound)
            .map_or(0, |&(_, n)| n);
        self.bound = bound;
        self.epoch += 1;
        let whole = self.tasks[tid].clone();
        self.tasks = vec![Task {
            state: TaskState::Done,
            iterate: false,
            ..whole
        }];
        self.queue.clear();
        self.open = 1;
        self.running = 0;
        self.next_bound = u32::MAX;
        partial
    }

    /// Turns what a worker handed back from task `tid` into tasks of the same unit. `None` if a
    /// piece is not a sequence of legal moves from the task's board.
    pub(super) fn pieces(
        &self,
        tid: usize,
        handed: &[HandedBack],
        remaining: f64,
    ) -> Option<Vec<Task>> {
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
