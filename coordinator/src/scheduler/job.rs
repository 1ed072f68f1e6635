//! A job's books: its [`Unit`]s (subtrees searched again at every bound until they are cut),
//! the [`Task`]s of the current bound (a unit, or a piece handed back from one) and of the
//! bounds after it, searched early ([`Layer`]s), their queues and the barrier counts, and the
//! rules for bounds (how far a job may move on, which next bound is honest). Everything here is about one
//! job; who searches a task is decided in `dispatch.rs`, and what a report does to a job in
//! `reports.rs`.

use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use foldhash::{HashSet, HashSetExt};
use npuzzle_solver::{Move, Weight, WorkUnit};

use super::SchedulerConfig;
use super::audit::{Auditing, Claim};
use super::messages::{Command, Epoch, HandedBack, JobSpec, JobStats, TaskId, WorkerId};
use super::runnable::Entry;
use super::task::{Layer, MAX_AHEAD, Task, TaskIds, TaskState, Unit, Which};

/// How far above a bound a search from the root finds its next. The next bound is the least
/// `f = g + h` of a child pruned below a node with `f <= bound`, and one move raises `g` by 1
/// and `h` by at most 3 with every heuristic served here (Manhattan, pattern databases and
/// exact tables by 1; linear conflict by 1 plus one new conflict in the tile's new line). A
/// unit's own next bound can be higher (its root may lie above the bound), but not the job's:
/// a job whose reports add up to more moves on by this step only (a bound with nothing new
/// costs one repeated iteration), so that inflated reports skip no bound that holds an answer.
pub(super) const MAX_BOUND_STEP: u32 = 4;

/// Whether `next` can be an honest next bound above `bound` (`u32::MAX`: none met), for a job
/// of factor `weight` (its bounds in [`Weight::f`]'s units).
pub(super) fn valid_next_bound(next: u32, bound: u32, weight: Weight) -> bool {
    next == u32::MAX || (next > bound && next <= max_next_bound(weight))
}

/// The highest next bound a worker may report for a job of factor `weight`: a path of the
/// deepest search plus the largest heuristic value is below it (`2 × MAX_DEPTH` for an optimal
/// search). Above it a report is forged.
pub(super) fn max_next_bound(weight: Weight) -> u32 {
    let depth = npuzzle_solver::MAX_DEPTH as u32;
    weight.f(depth, depth)
}

/// [`MAX_BOUND_STEP`] in the units of a job of factor `weight`: one move, `g` by 1 and `h` by
/// at most 3.
pub(super) fn max_bound_step(weight: Weight) -> u32 {
    weight.f(1, MAX_BOUND_STEP - 1)
}

/// The least growth of nodes from one bound to the next assumed for predictions, and the most.
const GROWTH_RANGE: (f64, f64) = (1.0, 50.0);

/// How finely a job's units are cut: the slots that share the bound, and the fewest nodes a
/// unit is cut down to (besides `min_split_nodes` and `task_cost_nodes`): what the cluster
/// searches in [`SchedulerConfig::cluster_time_per_task`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Grain {
    pub(super) slots: usize,
    pub(super) floor: f64,
}
pub(super) struct Job {
    pub(super) spec: JobSpec,
    /// Nodes of each bound exhausted so far: the growth per bound.
    pub(super) bound_nodes: Vec<u64>,
    pub(super) units: Vec<Unit>,
    /// The current bound's tasks: the lowest bound not yet exhausted by every unit.
    pub(super) now: Layer,
    /// The tasks of the bounds after the current one, of units that have exhausted every bound
    /// before ([`SchedulerConfig::async_bounds`], [`SchedulerConfig::bounds_ahead`]): `ahead[k]`
    /// is the current bound plus `k + 1` steps.
    pub(super) ahead: Vec<Layer>,
    /// The last epoch given to a layer: each new layer (a bound, audits, a restart) takes the
    /// next, so that no result of an old one is taken for a new one's.
    pub(super) epochs: Epoch,
    /// A path found early, in layer `ahead[k]` (its length that layer's bound), its finder, and
    /// `k`: returned once every bound below it is exhausted everywhere (when that layer becomes
    /// the current bound's).
    pub(super) candidate: Option<(Vec<Move>, WorkerId, usize)>,
    /// Running tasks, of every layer (sent ahead and not started included): changed only by
    /// [`Job::task_out`] and [`Job::task_back`], and recounted when layers are replaced.
    running: usize,
    /// Nodes of the results of the layers ahead so far (in `stats.nodes` too): the bounds
    /// after the current one, not the current one, in progress reports.
    pub(super) early_nodes: u64,
    pub(super) stats: JobStats,
    /// Layers it has done with, kept for their allocations (see [`Layer::reuse`]).
    spare: Vec<Layer>,
    /// What [`Scheduler::runnable`] counted of it.
    pub(super) runnable: Entry,
    /// The scheduler's clock and the job's nodes when its last bound ended (or it was
    /// submitted), and the nodes per second the cluster searched it at in that bound.
    pub(super) mark: Option<(Instant, u64)>,
    pub(super) rate: Option<f64>,
    /// The bound it started from (the coordinator's own lower bound): where a restart begins.
    pub(super) floor: u32,
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
    /// When a task of it was last asked back to give a starving job a thread (see
    /// `Scheduler::preempt`).
    pub(super) preempted_at: Option<Instant>,
}

impl Job {
    /// A job of `units` at `bound`, nothing queued yet (its first bound's tasks are the
    /// caller's to add).
    pub(super) fn with_units(spec: JobSpec, units: Vec<Unit>, bound: u32) -> Job {
        Job {
            stats: JobStats {
                bounds: vec![bound],
                ..JobStats::default()
            },
            spec,
            bound_nodes: Vec::new(),
            units,
            now: Layer::new(0, bound, 0),
            ahead: Vec::new(),
            spare: Vec::new(),
            epochs: 0,
            candidate: None,
            running: 0,
            early_nodes: 0,
            mark: None,
            rate: None,
            runnable: Entry::default(),
            floor: bound,
            deferred: Vec::new(),
            auditing: None,
            reporters: HashSet::new(),
            lies_seen: 0,
            preempted_at: None,
        }
    }

    /// Nodes per bound grow by this factor (measured on the last two bounds; 4 until then).
    pub(super) fn growth(&self) -> f64 {
        match self.bound_nodes[..] {
            [.., before, last] if before > 0 && last > 0 => {
                (last as f64 / before as f64).clamp(GROWTH_RANGE.0, GROWTH_RANGE.1)
            }
            _ => 4.0,
        }
    }

    /// The next epoch, for a new layer.
    pub(super) fn new_epoch(&mut self) -> Epoch {
        self.epochs += 1;
        self.epochs
    }

    pub(super) fn layer(&self, which: Which) -> Option<&Layer> {
        match which {
            Which::Now => Some(&self.now),
            Which::Ahead(k) => self.ahead.get(k),
        }
    }

    pub(super) fn layer_mut(&mut self, which: Which) -> Option<&mut Layer> {
        match which {
            Which::Now => Some(&mut self.now),
            Which::Ahead(k) => self.ahead.get_mut(k),
        }
    }

    /// The layer task `tid` belongs to (by its id alone: the layers' ids differ).
    pub(super) fn which_id(&self, tid: TaskId) -> Option<Which> {
        if self.now.get(tid).is_some() {
            return Some(Which::Now);
        }
        let k = self.ahead.iter().position(|l| l.get(tid).is_some())?;
        Some(Which::Ahead(k))
    }

    /// The layers ahead of the current bound.
    pub(super) fn ahead_layers(&self) -> impl Iterator<Item = Which> + use<> {
        (0..self.ahead.len()).map(Which::Ahead)
    }

    /// A task-list slot no layer of the job holds now, for a new layer.
    fn free_slot(&self) -> u32 {
        (0..TaskId::SLOTS)
            .find(|&s| s != self.now.slot && self.ahead.iter().all(|l| l.slot != s))
            .unwrap_or(0)
    }

    /// The layer of an assignment of `epoch` and task `tid`, if it is one of the job's now.
    pub(super) fn which(&self, epoch: Epoch, tid: TaskId) -> Option<Which> {
        self.which_id(tid)
            .filter(|&w| self.layer(w).is_some_and(|l| l.epoch == epoch))
    }

    /// Task `tid`, in whichever layer holds it.
    pub(super) fn task(&self, tid: TaskId) -> Option<&Task> {
        self.layer(self.which_id(tid)?)?.get(tid)
    }

    pub(super) fn task_mut(&mut self, tid: TaskId) -> Option<&mut Task> {
        let which = self.which_id(tid)?;
        self.layer_mut(which)?.get_mut(tid)
    }

    /// The task of an assignment of `epoch` and `tid`, if it is one of the job's now.
    pub(super) fn task_at(&self, epoch: Epoch, tid: TaskId) -> Option<&Task> {
        self.layer(self.which(epoch, tid)?)?.get(tid)
    }

    /// Layer `which` and the units, borrowed apart.
    fn layer_and_units(&mut self, which: Which) -> Option<(&mut Layer, &mut [Unit])> {
        let layer = match which {
            Which::Now => Some(&mut self.now),
            Which::Ahead(k) => self.ahead.get_mut(k),
        }?;
        Some((layer, &mut self.units))
    }

    /// Adds `tasks` to layer `which` (not queued), counting them open in their units.
    pub(super) fn add_tasks(
        &mut self,
        which: Which,
        tasks: impl IntoIterator<Item = Task>,
    ) -> TaskIds {
        let Some((layer, units)) = self.layer_and_units(which) else {
            return TaskIds::default();
        };
        let first = layer.tasks.len();
        for task in tasks {
            if task.audit.is_none() {
                *units[task.unit].open_in(which) += 1;
            }
            layer.tasks.push(task);
        }
        let end = layer.tasks.len();
        layer.open += end - first;
        layer.ids(first..end)
    }

    /// Task `tid` of layer `which` is done for its bound. Returns its unit (`None` for an
    /// audit, or a task done already).
    pub(super) fn task_done(&mut self, which: Which, tid: TaskId) -> Option<usize> {
        let (layer, units) = self.layer_and_units(which)?;
        let task = layer.get_mut(tid)?;
        if task.state == TaskState::Done {
            return None;
        }
        task.state = TaskState::Done;
        let (audit, unit) = (task.audit.is_some(), task.unit);
        layer.open -= 1;
        if audit {
            return None;
        }
        let open = units[unit].open_in(which);
        *open = open.saturating_sub(1);
        Some(unit)
    }

    /// Task `tid` of layer `which` reported its part of the bound searched (`nodes` of them;
    /// `next_bound` the least f above the bound it met): it is done, and its unit counts them.
    /// Returns its unit.
    pub(super) fn searched(
        &mut self,
        which: Which,
        tid: TaskId,
        nodes: u64,
        next_bound: u32,
    ) -> Option<usize> {
        let unit = self.task_done(which, tid)?;
        let (layer, units) = self.layer_and_units(which)?;
        layer.next_bound = layer.next_bound.min(next_bound);
        let count = units[unit].nodes_in(which);
        *count = count.saturating_add(nodes);
        Some(unit)
    }

    /// Task `tid` of layer `which` goes back to its queue: to go out next, or (`last`) after
    /// every task queued. False if there is no such task.
    fn requeue_at(&mut self, which: Which, tid: TaskId, last: bool) -> bool {
        let Some(layer) = self.layer_mut(which) else {
            return false;
        };
        let Some(task) = layer.get_mut(tid) else {
            return false;
        };
        task.state = TaskState::Pending;
        if last {
            layer.queue.push_front(tid);
        } else {
            layer.queue.push_back(tid);
        }
        true
    }

    /// Task `tid` of layer `which` goes back to its queue, to go out next.
    pub(super) fn requeue(&mut self, which: Which, tid: TaskId) {
        self.requeue_at(which, tid, false);
    }

    /// Task `tid` (of any layer) goes back to its queue, to go out after every task queued.
    /// False if there is no such task.
    pub(super) fn requeue_last(&mut self, tid: TaskId) -> bool {
        self.which_id(tid)
            .is_some_and(|which| self.requeue_at(which, tid, true))
    }

    /// Task `tid` of layer `which` goes back to its queue, to go out next, to be searched whole
    /// without a budget and never asked back (it could not be cut further).
    pub(super) fn requeue_unbudgeted(&mut self, which: Which, tid: TaskId) {
        if let Some(task) = self.layer_mut(which).and_then(|l| l.get_mut(tid)) {
            task.unbudgeted = true;
        }
        self.requeue(which, tid);
    }

    /// Whether the tasks of layer `ahead[k]` may go out (once those of the bounds before are
    /// all out): while no answer is pending, and only below a path found early (the bounds
    /// above it hold nothing it needs).
    fn ahead_dispatchable(&self, k: usize) -> bool {
        self.candidate.as_ref().is_none_or(|c| k < c.2)
            && !matches!(self.auditing, Some(Auditing::Answer { .. }))
    }

    /// The task to hand out next, and its layer: the current bound's first, then the layers
    /// ahead in order.
    pub(super) fn next_queued(&self) -> Option<(Which, TaskId)> {
        if let Some(tid) = self.now.peek() {
            return Some((Which::Now, tid));
        }
        self.ahead.iter().enumerate().find_map(|(k, layer)| {
            let tid = layer.peek()?;
            self.ahead_dispatchable(k).then_some((Which::Ahead(k), tid))
        })
    }

    pub(super) fn has_queued(&self) -> bool {
        self.next_queued().is_some()
    }

    /// A new layer (epoch, bound and task-id slot), in the allocations of one done with if
    /// there is one, with room for a task per unit (what a bound holds, but for pieces handed
    /// back): reserved, not touched, so it costs no memory until used.
    fn fresh_layer(&mut self, epoch: Epoch, bound: u32, slot: u32) -> Layer {
        let mut layer = match self.spare.pop() {
            Some(layer) => layer.reuse(epoch, bound, slot),
            None => Layer::new(epoch, bound, slot),
        };
        let room = self.units.len();
        // Emptied vectors too small are replaced, not grown: growing one copies what it held.
        if layer.tasks.capacity() < room {
            layer.tasks = Vec::with_capacity(room);
        }
        if layer.ordered.capacity() < room {
            layer.ordered = BinaryHeap::with_capacity(room);
        }
        layer
    }

    /// Keeps `layer`, done with, for its allocations (as many as a job has layers at once).
    fn recycle(&mut self, layer: Layer) {
        if self.spare.len() <= MAX_AHEAD {
            self.spare.push(layer);
        }
    }

    /// The current bound's tasks are replaced by a new layer's (of a new epoch, at `bound`):
    /// those still running finish unheeded (their epoch is over), so the job's running tasks
    /// are the early ones only.
    pub(super) fn replace_now(&mut self, epoch: Epoch, bound: u32) {
        self.renew_now(epoch, bound);
        self.running = self.ahead.iter().map(Layer::running).sum();
    }

    /// The current bound's tasks become a new layer's (of a new epoch, at `bound`), the old
    /// layer kept for its allocations.
    fn renew_now(&mut self, epoch: Epoch, bound: u32) {
        let layer = self.fresh_layer(epoch, bound, self.now.slot);
        self.set_now(layer);
    }

    /// `layer` becomes the current bound's, the old one kept for its allocations.
    fn set_now(&mut self, layer: Layer) {
        let old = std::mem::replace(&mut self.now, layer);
        self.recycle(old);
    }

    /// The first layer ahead becomes the current bound's (none: false).
    pub(super) fn promote_layer(&mut self) -> bool {
        if self.ahead.is_empty() {
            return false;
        }
        let next = self.ahead.remove(0);
        self.set_now(next);
        true
    }

    /// Drops the layers ahead of the current bound.
    pub(super) fn drop_ahead(&mut self) {
        while let Some(layer) = self.ahead.pop() {
            self.recycle(layer);
        }
    }

    /// Its tasks out on workers (running, or sent ahead and not started), in every layer.
    pub(super) fn running(&self) -> usize {
        self.running
    }

    /// One of its tasks went out to a worker.
    pub(super) fn task_out(&mut self) {
        self.running += 1;
    }

    /// One of its tasks out is back: answered, given up, or its worker gone.
    pub(super) fn task_back(&mut self) {
        debug_assert!(
            self.running > 0,
            "job {}: a task back that was not out",
            self.spec.id
        );
        self.running -= 1;
    }

    /// Its tasks running in every layer, counted (what `running` keeps).
    #[cfg(debug_assertions)]
    pub(super) fn running_tasks(&self) -> usize {
        self.now.running() + self.ahead.iter().map(Layer::running).sum::<usize>()
    }

    /// Tasks held in every layer (`max_tasks_per_job` caps them).
    pub(super) fn task_count(&self) -> usize {
        self.now.tasks.len() + self.ahead.iter().map(|l| l.tasks.len()).sum::<usize>()
    }

    /// Tasks queued in every layer.
    pub(super) fn queued(&self) -> usize {
        self.now.pending() + self.ahead.iter().map(Layer::pending).sum::<usize>()
    }

    /// Starts the current bound: one task per unit, in depth-first order, after cutting the
    /// units predicted to be too large for their share of the bound. A new epoch.
    pub(super) fn queue_all(&mut self, config: &SchedulerConfig, grain: Grain) {
        self.split_ahead(config, grain);
        let growth = self.growth();
        let epoch = self.new_epoch();
        self.replace_now(epoch, self.now.bound);
        for unit in &mut self.units {
            unit.open = 0;
            unit.leave_ahead();
        }
        let tasks: Vec<Task> = (self.units.iter().enumerate())
            .filter(|(_, u)| !u.retired)
            .map(|(i, u)| Task::new(i, u.work.clone(), u.last_nodes as f64 * growth))
            .collect();
        let ids = self.add_tasks(Which::Now, tasks);
        self.now.push_next(ids);
    }

    /// The most nodes a unit may be predicted to take at a bound whose nodes in all are
    /// predicted to be `predicted_total` before it is cut ahead of time.
    fn unit_cap(config: &SchedulerConfig, grain: Grain, predicted_total: f64) -> f64 {
        let balanced = (predicted_total.max(0.0) * config.task_cost_nodes as f64).sqrt();
        (predicted_total * config.max_unit_share / grain.slots.max(1) as f64)
            .max(config.min_split_nodes as f64)
            .max(balanced)
            .max(grain.floor)
    }

    /// A bound ended at `now`: the cluster's rate on the job is measured over it.
    pub(super) fn mark_bound(&mut self, now: Option<Instant>) {
        let Some(now) = now else {
            return;
        };
        if let Some((then, nodes)) = self.mark {
            let secs = now.saturating_duration_since(then).as_secs_f64();
            if secs > 0.0 {
                self.rate = Some(self.stats.nodes.saturating_sub(nodes) as f64 / secs);
            }
        }
        self.mark = Some((now, self.stats.nodes));
    }

    /// Cuts units whose predicted size exceeds their share of the coming bound.
    pub(super) fn split_ahead(&mut self, config: &SchedulerConfig, grain: Grain) {
        let Some(&last) = self.bound_nodes.last() else {
            return;
        };
        if last == 0 {
            return;
        }
        let growth = self.growth();
        let cap = Job::unit_cap(config, grain, last as f64 * growth);
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
            self.cut(i, predicted, cap, config);
        }
    }

    /// Cuts unit `i`, predicted to take `predicted` nodes, into parts of about `cap` each, each
    /// counted with its share of the unit's nodes (at the last bound and this one). Returns the
    /// parts' indices, or `None` if it was left whole.
    fn cut(
        &mut self,
        i: usize,
        predicted: f64,
        cap: f64,
        config: &SchedulerConfig,
    ) -> Option<Range<usize>> {
        let room = config
            .max_tasks_per_job
            .saturating_sub(self.units.len())
            .max(2);
        let wanted = ((predicted / cap).ceil() as usize).clamp(2, 4096).min(room);
        let parts = self.spec.solver.split_unit(&self.units[i].work, wanted);
        if parts.len() <= 1 {
            return None;
        }
        let n = parts.len() as u64;
        let parent = &self.units[i];
        let (last, now, f) = (parent.last_nodes / n, parent.nodes / n, parent.f);
        // A unit is only cut between its tasks: the parts have exhausted what it had.
        let (ahead_nodes, ahead) = (parent.ahead_nodes.map(|nodes| nodes / n), parent.ahead);
        self.units[i].retired = true;
        self.stats.splits += 1;
        let first = self.units.len();
        for work in parts {
            let mut unit = Unit::with_f(Arc::new(work), f, last);
            unit.nodes = now;
            unit.ahead_nodes = ahead_nodes;
            unit.ahead = ahead;
            self.units.push(unit);
        }
        Some(first..self.units.len())
    }

    /// Queues its first bound: a whole job (one unit, [`JobSpec::whole`]) as one task searched
    /// bound after bound, anything else as [`Job::queue_all`] does.
    pub(super) fn start(&mut self, config: &SchedulerConfig, grain: Grain) {
        self.drop_ahead();
        self.candidate = None;
        self.queue_all(config, grain);
        let whole = self.spec.whole && self.units.iter().filter(|u| !u.retired).count() == 1;
        if whole && let Some(task) = self.now.tasks.first_mut() {
            task.iterate = true;
            task.predicted = f64::INFINITY;
        }
    }

    /// Whether it is one task searched bound after bound on one worker.
    pub(super) fn is_whole(&self) -> bool {
        // Its one task, if it has one such.
        self.now.tasks.first().is_some_and(|t| t.iterate)
    }

    /// Unit `i` has exhausted the current bound and every layer ahead it has tasks in: it goes
    /// on at once to the next bound, as tasks of the next layer ahead (opened here at the bound
    /// before plus the job's last step), cut first if it is predicted too large for its share.
    /// Not past [`SchedulerConfig::bounds_ahead`] layers, nor to a layer at or past a path
    /// found early. Returns the tasks queued.
    pub(super) fn go_on(&mut self, i: usize, config: &SchedulerConfig, grain: Grain) -> usize {
        let unit = &self.units[i];
        let k = unit.ahead;
        let window = config.bounds_ahead.clamp(1, MAX_AHEAD);
        if !config.async_bounds
            || unit.retired
            || k >= window
            || unit.open > 0
            || unit.ahead_open[..k].iter().any(|&open| open > 0)
            || self.auditing.is_some()
            || self.candidate.as_ref().is_some_and(|c| k >= c.2)
            || self.is_whole()
            || self.ahead.len() < k
        {
            return 0;
        }
        if self.ahead.len() == k {
            let step = match self.stats.bounds[..] {
                [.., before, last] if last > before => {
                    (last - before).min(max_bound_step(self.weight()))
                }
                _ => 2,
            };
            let below = self.ahead.last().map_or(self.now.bound, |l| l.bound);
            let epoch = self.new_epoch();
            let slot = self.free_slot();
            let layer = self.fresh_layer(epoch, below + step, slot);
            self.ahead.push(layer);
        }
        let growth = self.growth();
        let below_nodes = |unit: &Unit| {
            if k == 0 {
                unit.nodes
            } else {
                unit.ahead_nodes[k - 1]
            }
        };
        let predicted = below_nodes(&self.units[i]) as f64 * growth;
        // Layer k's bound is k + 2 steps past the last exhausted one.
        let cap = match self.bound_nodes.last() {
            Some(&last) if last > 0 => {
                Job::unit_cap(config, grain, last as f64 * growth.powi(k as i32 + 2))
            }
            _ => f64::INFINITY,
        };
        let parts = if predicted > cap && self.units.len() < config.max_tasks_per_job {
            self.cut(i, predicted, cap, config)
        } else {
            None
        };
        let members = parts.unwrap_or(i..i + 1);
        if self.task_count() + members.len() > config.max_tasks_per_job {
            // No room: they get their tasks when the bound becomes the current one.
            return 0;
        }
        let mut tasks = Vec::with_capacity(members.len());
        for u in members {
            let unit = &mut self.units[u];
            unit.ahead = k + 1;
            let predicted = below_nodes(unit) as f64 * growth;
            tasks.push(Task::new(u, Arc::clone(&unit.work), predicted));
        }
        let ids = self.add_tasks(Which::Ahead(k), tasks);
        let queued = ids.len();
        self.stats.units += queued;
        if let Some(layer) = self.ahead.get_mut(k) {
            layer.push_ordered(ids);
        }
        queued
    }

    /// Its running tasks asked back and not yet answered, and its tasks sent ahead being taken
    /// back, in every layer: its part of the asks out that
    /// [`Asks`](super::asks::Asks) counts.
    pub(super) fn asked_out(&self) -> (usize, usize) {
        let (mut asked, mut taken_back) = self.now.asked_out();
        for layer in &self.ahead {
            let (a, t) = layer.asked_out();
            asked += a;
            taken_back += t;
        }
        (asked, taken_back)
    }

    /// The job's factor ([`Weight::OPTIMAL`] for an optimal search): its bounds are on
    /// [`Weight::f`].
    pub(super) fn weight(&self) -> Weight {
        self.spec.solver.weight()
    }

    /// Whether a path of `length` moves found under `bound` (every bound below exhausted) is
    /// what an honest search finds: exactly the bound for an optimal search (IDA* finds a path
    /// under the first bound that admits one), at most the bound's longest for a weighted one.
    pub(super) fn honest_length(&self, length: u32, bound: u32) -> bool {
        let weight = self.weight();
        if weight.is_optimal() {
            length == bound
        } else {
            length <= weight.longest_under(bound)
        }
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
            bound: self.now.bound,
            nodes: self.stats.nodes.saturating_sub(self.early_nodes),
            units_done: self.now.tasks.len() - self.now.open,
            units_total: self.now.tasks.len(),
            finished,
        }
    }

    /// A whole job's worker stopped part-way through `bound`: the job becomes a distributed
    /// one at that bound, with what the worker measured (nodes per bound exhausted). Its one
    /// task, `tid`, stays as the only task of the bound (id 0, open: the caller marks it done
    /// once its pieces are queued), for the pieces to belong to.
    /// Returns the nodes searched in `bound`.
    pub(super) fn distribute_whole(
        &mut self,
        tid: TaskId,
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
        let whole = self.now.tasks[tid.index()].clone();
        let epoch = self.new_epoch();
        self.renew_now(epoch, bound);
        for unit in &mut self.units {
            unit.open = 0;
        }
        // Open until the caller has queued its pieces (or queued it again).
        self.add_tasks(
            Which::Now,
            vec![Task {
                state: TaskState::Pending,
                iterate: false,
                ..whole
            }],
        );
        self.running = 0;
        partial
    }

    /// Turns what a worker handed back from task `tid` into tasks of the same unit. `None` if a
    /// piece is not a sequence of legal moves from the task's board.
    pub(super) fn pieces(
        &self,
        which: Which,
        tid: TaskId,
        handed: &[HandedBack],
        remaining: f64,
    ) -> Option<Vec<Task>> {
        let layer = self.layer(which)?;
        let bound = layer.bound;
        let task = layer.get(tid)?;
        // A subtree's size grows about `growth` times per 2 of slack (bound - f).
        let growth = self.growth();
        let weights: Vec<f64> = handed
            .iter()
            .map(|p| {
                let slack = bound.saturating_sub(p.f).min(64) as f64;
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
            if task.work.g as usize + p.moves.len() > bound as usize
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

#[cfg(test)]
mod tests {
    use super::*;

    fn units_for(config: &SchedulerConfig, slots: usize, bound_nodes: f64) -> f64 {
        let grain = Grain { slots, floor: 0.0 };
        bound_nodes / Job::unit_cap(config, grain, bound_nodes)
    }

    #[test]
    fn a_small_bound_is_cut_into_the_square_root_of_its_nodes_over_a_tasks_cost() {
        let config = SchedulerConfig::default();
        // 10^6 nodes on a thousand slots: √(10^6 / 32) ≈ 177 units, what balances the largest
        // unit against the coordinator's time for all of them.
        let units = units_for(&config, 1024, 1e6);
        assert!((170.0..=185.0).contains(&units), "{units}");
        // Without that floor `min_split_nodes` alone decides: 500 units of 2,000 nodes.
        let unbalanced = SchedulerConfig {
            task_cost_nodes: 0,
            ..SchedulerConfig::default()
        };
        let units = units_for(&unbalanced, 1024, 1e6);
        assert!((units - 500.0).abs() < 1e-6, "{units}");
    }

    #[test]
    fn a_large_bound_on_few_slots_keeps_the_slots_share() {
        let config = SchedulerConfig::default();
        // 10^9 nodes on two slots: 32 units a slot, far above the balanced floor's size.
        let units = units_for(&config, 2, 1e9);
        assert!((units - 64.0).abs() < 1e-6, "{units}");
        // On a thousand slots the balanced floor caps it near √(10^9 / 32) ≈ 5,590 units.
        let units = units_for(&config, 1024, 1e9);
        assert!((5_500.0..=5_700.0).contains(&units), "{units}");
    }
}
