//! The scheduler's indexes: what an event looks up instead of scanning the cluster, so that the
//! cost of an event does not grow with the workers, the jobs or the tasks running (issue 23).
//!
//! - [`FreeWorkers`]: the workers with free slots, in the order slots are filled, with their free
//!   slots in all and, per shape, how many of them hold tables for it (can an idle slot search a
//!   job's tasks?); and those with no slot free that may be sent tasks ahead.
//! - `askable` ([`AskKey`], an [`AskIndex`]): the running tasks of the current epochs that may
//!   be asked back, the largest predicted first. `ahead`: as `askable`, for the tasks sent ahead
//!   and not started (taken back before any running task is asked back).
//! - `holders`: per job, the workers holding one of its assignments (of any epoch), for the
//!   cancels when it ends.
//! - Counters: busy slots, and the workers holding tables per shape.
//!
//! Each is updated where the state it mirrors changes: a task's entry in `askable` goes in when
//! it is handed out and comes out before its state changes (answered, asked back, requeued,
//! its epoch over, its job retired). [`Scheduler::visits`] counts the entries the scheduler's
//! loops look at: a deterministic cost per event, which a test keeps from growing with the
//! cluster.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BTreeSet;

use npuzzle_solver::{HeuristicKind, Shape};

use super::Scheduler;
use super::ask_index::AskIndex;
use super::members::{FreeEntry, FreeKey, Worker};
use super::messages::{JobId, TaskId, WorkerId};
use super::task::{Task, TaskState, Which};

/// `x`'s place in `f64::total_cmp`'s order, as an integer: the sign bit flipped for positive
/// numbers, every bit for negative ones.
fn total_order_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// A running task's place in `Scheduler::askable`: the current bounds' tasks before those
/// searched early, the nearest bound first (a job's next bound waits for the current one),
/// then the largest predicted first, the lowest job id, the lowest task id (the order in which
/// tasks are asked back). The first two are integers: a key compares in a few instructions,
/// and the indexes take one in and out on every assignment and result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct AskKey {
    /// The layer's rank, then the predicted size's total order inverted (two words, not a
    /// `u128`, whose alignment would make a key 48 bytes instead of 32).
    place: [u64; 2],
    pub(super) job: JobId,
    pub(super) task: TaskId,
}

/// Task `tid` of `job_id`'s place in the ask-back indexes.
pub(super) fn ask_key(job_id: JobId, which: Which, tid: TaskId, task: &Task) -> AskKey {
    ask_key_of(which.rank(), task.predicted, job_id, tid)
}

/// The key of a task of layer rank `rank` ([`Which::rank`]) predicted to take `predicted`
/// nodes.
pub(super) fn ask_key_of(rank: usize, predicted: f64, job: JobId, task: TaskId) -> AskKey {
    AskKey {
        place: [rank as u64, !total_order_bits(predicted)],
        job,
        task,
    }
}

/// Takes `key` out of the ask-back index a task's key goes into (`ahead` if it is `queued`,
/// sent ahead and not started), or, if it is not there, out of the other.
fn unindex_key(askable: &mut AskIndex, ahead: &mut AskIndex, key: &AskKey, queued: bool) {
    let (first, second) = if queued {
        (ahead, askable)
    } else {
        (askable, ahead)
    };
    if !first.remove(key) {
        second.remove(key);
    }
}

/// The workers with free slots.
#[derive(Default)]
pub(super) struct FreeWorkers {
    /// In the order slots are filled ([`FreeKey`]).
    pub(super) order: BTreeSet<FreeKey>,
    /// Free slots over them: how many slots would idle if no task were queued.
    pub(super) slots: usize,
    /// How many of them hold pattern databases for each shape (counted as workers join and leave
    /// the free ones, on most events: a fast hash).
    by_shape: foldhash::HashMap<Shape, usize>,
    /// The workers with no slot free that may be sent tasks ahead
    /// ([`SchedulerConfig::prefetch`](super::SchedulerConfig::prefetch)), the most room first:
    /// filled only after every free slot.
    pub(super) ahead: BTreeSet<(Reverse<usize>, WorkerId)>,
}

impl FreeWorkers {
    /// Indexes worker `id` if it has a free slot. Call after any change to the worker.
    pub(super) fn insert(&mut self, id: WorkerId, w: &Worker) {
        self.apply(&FreeEntry::NONE, &FreeEntry::of(id, w), w);
    }

    /// Takes worker `id` out, if it is in. Call before any change to the worker.
    pub(super) fn remove(&mut self, id: WorkerId, w: &Worker) {
        self.apply(&FreeEntry::of(id, w), &FreeEntry::NONE, w);
    }

    /// Worker `id` changed from `before` (its capabilities did not): only the keys that
    /// changed move.
    pub(super) fn update(&mut self, id: WorkerId, before: &FreeEntry, w: &Worker) {
        self.apply(before, &FreeEntry::of(id, w), w);
    }

    /// A worker's entry goes from `before` to `after`, `w` holding the tables it counts for.
    fn apply(&mut self, before: &FreeEntry, after: &FreeEntry, w: &Worker) {
        if after == before {
            return;
        }
        if after.ahead != before.ahead {
            if let Some(key) = before.ahead {
                self.ahead.remove(&key);
            }
            if let Some(key) = after.ahead {
                self.ahead.insert(key);
            }
        }
        match (before.free, after.free) {
            (Some(old), Some(new)) => {
                if old != new {
                    self.order.remove(&old);
                    self.order.insert(new);
                }
                self.slots = self.slots - before.slots + after.slots;
            }
            (Some(old), None) => {
                if self.order.remove(&old) {
                    self.slots -= before.slots;
                    self.count_shapes(w, false);
                }
            }
            (None, Some(new)) => {
                if self.order.insert(new) {
                    self.slots += after.slots;
                    self.count_shapes(w, true);
                }
            }
            (None, None) => {}
        }
    }

    /// One worker more (`joined`) or less among those with free slots, for each shape it
    /// holds tables for.
    fn count_shapes(&mut self, w: &Worker, joined: bool) {
        for shape in &w.capabilities.pdb_shapes {
            if joined {
                *self.by_shape.entry(*shape).or_default() += 1;
            } else if let Some(n) = self.by_shape.get_mut(shape) {
                *n -= 1;
                if *n == 0 {
                    self.by_shape.remove(shape);
                }
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Whether some worker with a free slot can search units of `shape` with `heuristic` (as
    /// [`Capabilities::can_search`](super::Capabilities::can_search) asks of one worker).
    pub(super) fn can_search(&self, heuristic: HeuristicKind, shape: Shape) -> bool {
        if heuristic == HeuristicKind::Pdb {
            self.by_shape.contains_key(&shape)
        } else {
            !self.order.is_empty()
        }
    }
}

/// Entries the scheduler's loops looked at, since it started.
#[derive(Default)]
pub(super) struct Visits(Cell<u64>);

impl Visits {
    pub(super) fn add(&self, n: usize) {
        self.0.set(self.0.get().saturating_add(n as u64));
    }

    pub(super) fn get(&self) -> u64 {
        self.0.get()
    }
}

impl Scheduler {
    /// Entries of workers, jobs, units and tasks the scheduler's loops have looked at so far: a
    /// deterministic measure of its work (the same events give the same count on any machine),
    /// for tests and the simulator. Divided by the events, it should not grow with the cluster.
    pub fn visits(&self) -> u64 {
        self.visits.get()
    }

    /// Task `tid` of `job_id` was just handed to a worker (or, sent ahead, has just started):
    /// indexed to be asked back (to be taken back, if sent ahead and not started), unless it
    /// can never be (searched without a budget: audits, tasks that could not be cut).
    pub(super) fn index_task(&mut self, job_id: JobId, tid: TaskId) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        let (Some(which), Some(task)) = (job.which_id(tid), job.task(tid)) else {
            return;
        };
        if task.unbudgeted {
            return;
        }
        let key = ask_key(job_id, which, tid, task);
        self.index_key(key, task.queued);
    }

    /// Indexes a running task's `key`: to be taken back if it is `queued` (sent ahead, not
    /// started), else to be asked back.
    pub(super) fn index_key(&mut self, key: AskKey, queued: bool) {
        if queued {
            self.ahead.insert(key);
        } else {
            self.askable.insert(key);
        }
    }

    /// Takes task `tid` of `job_id` out of the ask-back indexes, if it is there. Call before
    /// its state changes.
    pub(super) fn unindex_task(&mut self, job_id: JobId, tid: TaskId) {
        let Some(job) = self.jobs.get(&job_id) else {
            return;
        };
        let (Some(which), Some(task)) = (job.which_id(tid), job.task(tid)) else {
            return;
        };
        if let TaskState::Running {
            asked_back: false, ..
        } = task.state
        {
            let key = ask_key(job_id, which, tid, task);
            unindex_key(&mut self.askable, &mut self.ahead, &key, task.queued);
        }
    }

    /// Takes every task of `job_id`'s layers out of the ask-back indexes: call before its
    /// tasks are replaced (a new bound, audits, a restart) or it is retired. Costs the job's
    /// tasks, which the bound that made them paid for already.
    pub(super) fn unindex_job(&mut self, job_id: JobId) {
        self.unindex_layer(job_id, Which::Now);
        self.unindex_ahead(job_id);
    }

    /// As [`Scheduler::unindex_job`], for the layers ahead of the current bound only.
    pub(super) fn unindex_ahead(&mut self, job_id: JobId) {
        let ahead: Vec<Which> = (self.jobs.get(&job_id))
            .map(|j| j.ahead_layers().collect())
            .unwrap_or_default();
        for which in ahead {
            self.unindex_layer(job_id, which);
        }
    }

    /// As [`Scheduler::unindex_job`], for one layer.
    pub(super) fn unindex_layer(&mut self, job_id: JobId, which: Which) {
        let Some(layer) = self.jobs.get(&job_id).and_then(|j| j.layer(which)) else {
            return;
        };
        self.visits.add(layer.tasks.len());
        for (i, task) in layer.tasks.iter().enumerate() {
            if let TaskState::Running {
                asked_back: false, ..
            } = task.state
            {
                let key = ask_key(job_id, which, layer.id(i), task);
                unindex_key(&mut self.askable, &mut self.ahead, &key, task.queued);
            }
        }
    }

    /// Indexes the running tasks of one of `job_id`'s layers (taken out by
    /// [`Scheduler::unindex_layer`] while it changed).
    pub(super) fn index_layer(&mut self, job_id: JobId, which: Which) {
        let Some(layer) = self.jobs.get(&job_id).and_then(|j| j.layer(which)) else {
            return;
        };
        self.visits.add(layer.tasks.len());
        let running: Vec<TaskId> = (layer.tasks.iter().enumerate())
            .filter(|(_, t)| {
                matches!(
                    t.state,
                    TaskState::Running {
                        asked_back: false,
                        ..
                    }
                )
            })
            .map(|(i, _)| layer.id(i))
            .collect();
        for tid in running {
            self.index_task(job_id, tid);
        }
    }

    /// A task `worker` was running has ended (it answered): it has started the oldest task sent
    /// ahead that it holds, if any. That one is indexed as running from now on (asked back, no
    /// longer taken back), its age counted from now.
    pub(super) fn start_next(&mut self, worker: WorkerId) {
        let Some(Some((job_id, epoch, tid))) = self.update_worker(worker, |w| w.queued.pop_front())
        else {
            return;
        };
        let current = self.jobs.get(&job_id).is_some_and(|j| {
            j.task_at(epoch, tid).is_some_and(|t| {
                t.queued
                    && t.state
                        == TaskState::Running {
                            worker,
                            asked_back: false,
                        }
            })
        });
        if !current {
            // Its job moved on or ended, or it is being taken back (its answer settles it).
            return;
        }
        self.unindex_task(job_id, tid);
        if let Some(task) = self.jobs.get_mut(&job_id).and_then(|j| j.task_mut(tid)) {
            task.queued = false;
            task.since = self.clock;
        }
        self.index_task(job_id, tid);
    }

    /// `worker` now holds an assignment of `job`.
    pub(super) fn hold(&mut self, job: JobId, worker: WorkerId) {
        *self
            .holders
            .entry(job)
            .or_default()
            .entry(worker)
            .or_default() += 1;
    }

    /// `worker` no longer holds an assignment of `job` (answered, or the worker left).
    pub(super) fn release(&mut self, job: JobId, worker: WorkerId) {
        let Some(held) = self.holders.get_mut(&job) else {
            return;
        };
        if let Some(n) = held.get_mut(&worker) {
            *n -= 1;
            if *n == 0 {
                held.remove(&worker);
            }
        }
        if held.is_empty() {
            self.holders.remove(&job);
        }
    }

    /// In debug builds (the tests), checks every index against the state it mirrors, after each
    /// event of a cluster of at most 64 workers: a scan of everything, which the scheduler's
    /// tests can afford on the clusters they build and the scaling test's large ones could not.
    pub(super) fn check_indexes(&self) {
        #[cfg(debug_assertions)]
        if self.workers.len() <= 64 {
            self.assert_indexes();
        }
    }

    #[cfg(debug_assertions)]
    fn assert_indexes(&self) {
        use std::collections::{BTreeMap, HashMap};
        let mut askable = BTreeSet::new();
        let mut ahead = BTreeSet::new();
        let mut ahead_out = 0;
        let mut holders: HashMap<JobId, BTreeMap<WorkerId, usize>> = HashMap::new();
        let mut free = FreeWorkers::default();
        let mut busy = 0;
        for (&wid, w) in &self.workers {
            free.insert(wid, w);
            busy += w.running();
            ahead_out += w.queued.len();
            assert!(
                w.queued.iter().all(|k| w.outstanding.contains(k)),
                "tasks sent ahead are held"
            );
            assert!(
                w.queued.is_empty() || w.running() >= w.capacity(),
                "tasks wait ahead only behind busy slots"
            );
            for &(job_id, epoch, tid) in &w.outstanding {
                *holders.entry(job_id).or_default().entry(wid).or_default() += 1;
                let Some(job) = self.jobs.get(&job_id) else {
                    continue;
                };
                let (Some(which), Some(task)) = (job.which(epoch, tid), job.task_at(epoch, tid))
                else {
                    continue;
                };
                let running = task.state
                    == (TaskState::Running {
                        worker: wid,
                        asked_back: false,
                    });
                if running {
                    assert_eq!(
                        task.queued,
                        w.queued.contains(&(job_id, epoch, tid)),
                        "a task is sent ahead where its worker holds it ahead"
                    );
                }
                if running && !task.unbudgeted {
                    let key = ask_key(job_id, which, tid, task);
                    if task.queued {
                        ahead.insert(key);
                    } else {
                        askable.insert(key);
                    }
                }
            }
        }
        assert_eq!(askable, self.askable.members(), "askable");
        assert_eq!(ahead, self.ahead.members(), "tasks sent ahead");
        assert_eq!(ahead_out, self.ahead_out, "tasks sent ahead, counted");
        assert_eq!(free.ahead, self.free.ahead, "workers with room ahead");
        assert_eq!(free.order, self.free.order, "free workers");
        assert_eq!(free.slots, self.free.slots, "free slots");
        assert_eq!(free.by_shape, self.free.by_shape, "free workers by shape");
        assert_eq!(busy, self.busy_slots, "busy slots");
        for (id, job) in &self.jobs {
            assert_eq!(job.running, job.running_tasks(), "job {id}'s running tasks");
        }
        let live: HashMap<JobId, BTreeMap<WorkerId, usize>> = holders
            .into_iter()
            .filter(|(j, _)| self.jobs.contains_key(j))
            .collect();
        let indexed: HashMap<JobId, BTreeMap<WorkerId, usize>> = self
            .holders
            .iter()
            .filter(|(j, _)| self.jobs.contains_key(j))
            .map(|(&j, h)| (j, h.iter().map(|(&w, &n)| (w, n)).collect()))
            .collect();
        assert_eq!(live, indexed, "holders");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sizes_bits_order_as_total_cmp_orders_the_sizes() {
        let mut sizes = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            1e300,
            2.5e6,
            2.5e6 + 1.0,
            f64::NAN,
            -f64::NAN,
        ];
        sizes.sort_by(f64::total_cmp);
        for pair in sizes.windows(2) {
            assert!(
                total_order_bits(pair[0]) < total_order_bits(pair[1]),
                "{} then {}",
                pair[0],
                pair[1]
            );
        }
    }
}
