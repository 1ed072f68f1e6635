//! The data a job's books are made of: a [`Unit`] (a subtree searched again at every bound), a
//! [`Task`] (a unit or a piece of one, under one bound), a [`Layer`] (one bound's tasks, their
//! queue and barrier counts) and [`Which`] layer. Plain data with the few rules that keep each
//! consistent on its own; what a job does with them is `job.rs`'s.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use npuzzle_solver::{DfsKey, Solver, WorkUnit};

use super::audit::{AuditOf, Claim};
use super::messages::{Epoch, TaskId, WorkerId};

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
    /// Shared with its tasks and their assignments: a task costs no copy of its moves.
    pub(super) work: Arc<WorkUnit>,
    /// `g + h` at the unit's root (the coordinator's heuristic).
    pub(super) f: u32,
    /// Nodes at the previous bound: the size prediction.
    pub(super) last_nodes: u64,
    /// Nodes at this bound so far, its pieces' included.
    pub(super) nodes: u64,
    /// Cut into other units; no longer searched.
    pub(super) retired: bool,
    /// Its tasks of the current bound not yet done: none left, it has exhausted the bound.
    pub(super) open: u32,
    /// Per layer ahead of the current bound (`Job::ahead`): its nodes at that bound so far,
    /// and its tasks there not yet done.
    pub(super) ahead_nodes: [u64; MAX_AHEAD],
    pub(super) ahead_open: [u32; MAX_AHEAD],
    /// The layers ahead it has been given tasks in (it went on that many bounds past the
    /// current one), the first ones of `Job::ahead`.
    pub(super) ahead: usize,
}

/// The most layers a job searches ahead of its current bound: a task id tells its job's task
/// lists apart in [`TaskId::SLOTS`] ways, the current bound's among them.
pub(super) const MAX_AHEAD: usize = TaskId::SLOTS as usize - 1;

/// One thing to search under the current bound: a unit, or a piece of one.
#[derive(Clone, Debug)]
pub(super) struct Task {
    /// The unit it belongs to, whose nodes it adds to.
    pub(super) unit: usize,
    pub(super) work: Arc<WorkUnit>,
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

/// Which of a job's task lists: the current bound's, or the `k`-th ahead of it
/// (`Job::ahead[k]`, the current bound plus `k + 1` steps), searched early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Which {
    Now,
    Ahead(usize),
}

impl Which {
    /// Its place in the order layers are served and asked back in: the current bound first.
    pub(super) fn rank(self) -> usize {
        match self {
            Which::Now => 0,
            Which::Ahead(k) => k + 1,
        }
    }
}

/// The ids of a run of a layer's tasks.
#[derive(Clone, Debug, Default)]
pub(super) struct TaskIds {
    slot: u32,
    range: Range<usize>,
}

impl Iterator for TaskIds {
    type Item = TaskId;

    fn next(&mut self) -> Option<TaskId> {
        self.range.next().map(|i| TaskId::new(self.slot, i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl DoubleEndedIterator for TaskIds {
    fn next_back(&mut self) -> Option<TaskId> {
        self.range.next_back().map(|i| TaskId::new(self.slot, i))
    }
}

impl ExactSizeIterator for TaskIds {}

/// The tasks of one bound, with their queue and what they reported. A job has the current
/// bound's (`now`) and, while units that have exhausted it go on, those of the bounds after it
/// (`ahead`).
pub(super) struct Layer {
    /// Tags its tasks' assignments: results of other epochs are stale.
    pub(super) epoch: Epoch,
    pub(super) bound: u32,
    /// Below [`TaskId::SLOTS`], in its task ids ([`TaskId::slot`]): no two layers of a job
    /// share one, so that a task id names one task of the job.
    pub(super) slot: u32,
    pub(super) tasks: Vec<Task>,
    /// Pending tasks, the one to hand out next at the end.
    pub(super) queue: VecDeque<TaskId>,
    /// Pending tasks handed out after those of `queue`, in depth-first order: the units that
    /// went on early, as they finished the bound before (the serial search's order, in which
    /// the last bound finds its answer soonest, whatever order they finish in).
    pub(super) ordered: BinaryHeap<Reverse<(DfsKey, TaskId)>>,
    /// Tasks not yet done.
    pub(super) open: usize,
    /// The least next bound reported.
    pub(super) next_bound: u32,
    /// Reports picked for an audit.
    pub(super) claims: Vec<Claim>,
    /// Reports by workers on probation, not sampled: at the bound's end they become the job's
    /// `deferred`, replacing the previous bound's.
    pub(super) probation_claims: Vec<Claim>,
}

impl Layer {
    pub(super) fn new(epoch: Epoch, bound: u32, slot: u32) -> Layer {
        Layer {
            epoch,
            bound,
            slot,
            tasks: Vec::new(),
            queue: VecDeque::new(),
            ordered: BinaryHeap::new(),
            open: 0,
            next_bound: u32::MAX,
            claims: Vec::new(),
            probation_claims: Vec::new(),
        }
    }

    /// A new layer in the allocations of an old one (emptied): at 1,024 slots a layer holds
    /// some 9,000 tasks on #29, and growing each new one's vectors from nothing (copies, and
    /// pages the system zeroes) took a sixth of the scheduler's time.
    pub(super) fn reuse(self, epoch: Epoch, bound: u32, slot: u32) -> Layer {
        let Layer {
            mut tasks,
            mut queue,
            mut ordered,
            mut claims,
            mut probation_claims,
            ..
        } = self;
        tasks.clear();
        queue.clear();
        ordered.clear();
        claims.clear();
        probation_claims.clear();
        Layer {
            tasks,
            queue,
            ordered,
            claims,
            probation_claims,
            ..Layer::new(epoch, bound, slot)
        }
    }

    pub(super) fn id(&self, index: usize) -> TaskId {
        TaskId::new(self.slot, index)
    }

    pub(super) fn ids(&self, range: Range<usize>) -> TaskIds {
        TaskIds {
            slot: self.slot,
            range,
        }
    }

    /// Its task `tid`, if the id is one of its own.
    pub(super) fn get(&self, tid: TaskId) -> Option<&Task> {
        (tid.slot() == self.slot)
            .then(|| self.tasks.get(tid.index()))
            .flatten()
    }

    pub(super) fn get_mut(&mut self, tid: TaskId) -> Option<&mut Task> {
        if tid.slot() != self.slot {
            return None;
        }
        self.tasks.get_mut(tid.index())
    }

    /// Its running tasks asked back and not yet answered, and its tasks sent ahead being taken
    /// back (see [`Job::asked_out`]).
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

    /// Its tasks running (the scheduler's view).
    pub(super) fn running(&self) -> usize {
        let running = |t: &&Task| matches!(t.state, TaskState::Running { .. });
        self.tasks.iter().filter(running).count()
    }

    /// Queues tasks in depth-first order behind those of `queue` (see `ordered`).
    pub(super) fn push_ordered(&mut self, ids: impl IntoIterator<Item = TaskId>) {
        for id in ids {
            let order = self.tasks[id.index()].order();
            self.ordered.push(Reverse((order, id)));
        }
    }

    /// The pending task to hand out next.
    pub(super) fn peek(&self) -> Option<TaskId> {
        (self.queue.back().copied()).or_else(|| self.ordered.peek().map(|Reverse((_, id))| *id))
    }

    pub(super) fn pop(&mut self) -> Option<TaskId> {
        (self.queue.pop_back()).or_else(|| self.ordered.pop().map(|Reverse((_, id))| id))
    }

    /// Tasks pending.
    pub(super) fn pending(&self) -> usize {
        self.queue.len() + self.ordered.len()
    }

    /// Adds tasks to the front of the queue (they go out next), in depth-first order.
    pub(super) fn push_next(&mut self, ids: impl IntoIterator<Item = TaskId>) {
        let mut ids: Vec<TaskId> = ids.into_iter().collect();
        ids.sort_by_cached_key(|id| Reverse(self.tasks[id.index()].order()));
        self.queue.extend(ids);
    }
}

impl Unit {
    /// Its count of tasks not yet done in layer `which`.
    pub(super) fn open_in(&mut self, which: Which) -> &mut u32 {
        match which {
            Which::Now => &mut self.open,
            Which::Ahead(k) => &mut self.ahead_open[k],
        }
    }

    /// Its nodes so far at the bound of layer `which`.
    pub(super) fn nodes_in(&mut self, which: Which) -> &mut u64 {
        match which {
            Which::Now => &mut self.nodes,
            Which::Ahead(k) => &mut self.ahead_nodes[k],
        }
    }

    /// Forgets the layers ahead (they are dropped, or the bound starts over).
    pub(super) fn leave_ahead(&mut self) {
        self.ahead = 0;
        self.ahead_nodes = [0; MAX_AHEAD];
        self.ahead_open = [0; MAX_AHEAD];
    }

    /// Its counts move down a layer: the first layer ahead becomes the current bound's.
    /// Returns whether it had gone on to that layer.
    pub(super) fn promote(&mut self) -> bool {
        let went_on = self.ahead > 0;
        self.nodes = self.ahead_nodes[0];
        self.open = self.ahead_open[0];
        self.ahead_nodes.rotate_left(1);
        self.ahead_open.rotate_left(1);
        self.ahead_nodes[MAX_AHEAD - 1] = 0;
        self.ahead_open[MAX_AHEAD - 1] = 0;
        self.ahead = self.ahead.saturating_sub(1);
        went_on
    }

    pub(super) fn new(work: WorkUnit, solver: &Solver, last_nodes: u64) -> Unit {
        let f = solver.unit_bound(&work).unwrap_or(work.g);
        Unit::with_f(Arc::new(work), f, last_nodes)
    }

    /// A unit whose `f` is known: a part of a cut unit keeps the whole's, a lower bound on
    /// any path through the part too (only the job's first bound and a restore's floor read
    /// it); the heuristic for every part was a tenth of the scheduler's instructions at 1,024
    /// slots.
    pub(super) fn with_f(work: Arc<WorkUnit>, f: u32, last_nodes: u64) -> Unit {
        Unit {
            f,
            work,
            last_nodes,
            nodes: 0,
            retired: false,
            open: 0,
            ahead_nodes: [0; MAX_AHEAD],
            ahead_open: [0; MAX_AHEAD],
            ahead: 0,
        }
    }
}

impl Task {
    /// Its place in the serial search's depth-first order (computed when it is queued, not
    /// stored: a task is smaller without it, and most are queued once).
    pub(super) fn order(&self) -> DfsKey {
        DfsKey::of(&self.work.prefix)
    }

    pub(super) fn new(unit: usize, work: impl Into<Arc<WorkUnit>>, predicted: f64) -> Task {
        let work: Arc<WorkUnit> = work.into();
        Task {
            unit,
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
