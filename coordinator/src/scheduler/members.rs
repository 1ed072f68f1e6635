//! The cluster's members: each worker's slots, capabilities, outstanding assignments (those
//! running, and those sent ahead that it has not started), lease and the trust it has earned (a
//! newcomer holds [`TRIAL_SLOTS`] tasks until it answers well), the index of workers with free
//! slots, and how a worker leaves: its lease expires, it holds a task it was asked back, or it
//! disconnects. Its tasks then go back to their jobs' queues.

use std::cmp::Reverse;
use std::collections::{BTreeSet, VecDeque};

use foldhash::{HashSet, HashSetExt};
use std::time::Instant;

use npuzzle_solver::Shape;

use super::Scheduler;
use super::heuristic::Capabilities;
use super::messages::{Command, DisconnectReason, Epoch, JobId, TaskId, WorkerId};
use super::task::TaskState;

pub(super) struct Worker {
    pub(super) slots: usize,
    /// Which units it may be given.
    pub(super) capabilities: Capabilities,
    /// Every assignment it holds and has not answered: running, or sent ahead.
    pub(super) outstanding: HashSet<(JobId, Epoch, TaskId)>,
    /// Those of them sent ahead ([`SchedulerConfig::prefetch`](super::SchedulerConfig::prefetch))
    /// that it has not started as far as the scheduler knows, oldest first: it starts them in
    /// that order, one each time a running one ends.
    pub(super) queued: VecDeque<(JobId, Epoch, TaskId)>,
    /// It may be sent tasks ahead (it said it queues them, and the coordinator's config allows).
    pub(super) prefetch: bool,
    pub(super) last_seen: Instant,
    /// Units it failed, refused or cancelled since its last good result.
    pub(super) failures: u32,
    /// Good results so far (found, exhausted, handed back): trust earned.
    pub(super) good: u32,
    /// Answers whose final audits confirmed its reports: from
    /// [`SchedulerConfig::probation`] on, its reports are only sampled.
    pub(super) confirmed: u32,
}

/// Tasks a worker may hold before its first good result; each good result doubles it, up to
/// its slots. A worker that claims thousands of threads and answers nothing holds little.
pub(super) const TRIAL_SLOTS: usize = 2;

impl Worker {
    /// Tasks it may hold at once now.
    pub(super) fn capacity(&self) -> usize {
        self.slots.min(TRIAL_SLOTS << self.good.min(16))
    }

    /// Slots idle now: tasks it could start at once. (Tasks are only sent ahead while none is
    /// idle, and one of them starts whenever a running task ends, so a worker holding tasks
    /// ahead runs as many as its capacity.)
    pub(super) fn free_slots(&self) -> usize {
        self.capacity().saturating_sub(self.outstanding.len())
    }

    /// Assignments it is searching now (as far as the scheduler knows).
    pub(super) fn running(&self) -> usize {
        self.outstanding.len() - self.queued.len()
    }

    /// Tasks it could be sent ahead now: with no slot idle, up to one queued per slot, once it
    /// has answered well and holds as many tasks as it has slots.
    pub(super) fn room_ahead(&self) -> usize {
        if self.prefetch && self.good > 0 && self.capacity() == self.slots && self.free_slots() == 0
        {
            self.slots.saturating_sub(self.queued.len())
        } else {
            0
        }
    }
}

/// A worker's key in [`FreeWorkers::ahead`](super::index::FreeWorkers), if it could be sent a
/// task ahead: the most room first, then the lowest id.
fn ahead_key(id: WorkerId, w: &Worker) -> Option<(Reverse<usize>, WorkerId)> {
    let room = w.room_ahead();
    (room > 0).then_some((Reverse(room), id))
}

/// A worker's key in [`Scheduler::free`], if it has a free slot.
fn free_key(id: WorkerId, w: &Worker) -> Option<FreeKey> {
    let free = w.free_slots();
    let proven = w.good > 0;
    // Among newcomers, claimed slots buy no precedence: the earliest joined goes first.
    let rank = if proven { free } else { free.min(1) };
    (free > 0).then_some((Reverse(proven), Reverse(rank), id))
}

/// What [`Scheduler::free`] holds of a worker: its keys there and its free slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FreeEntry {
    pub(super) free: Option<FreeKey>,
    pub(super) ahead: Option<(Reverse<usize>, WorkerId)>,
    pub(super) slots: usize,
}

impl FreeEntry {
    /// A worker's entry outside the index.
    pub(super) const NONE: FreeEntry = FreeEntry {
        free: None,
        ahead: None,
        slots: 0,
    };

    pub(super) fn of(id: WorkerId, w: &Worker) -> FreeEntry {
        FreeEntry {
            free: free_key(id, w),
            ahead: ahead_key(id, w),
            slots: w.free_slots(),
        }
    }
}

/// A worker's place in [`Scheduler::free`]: workers with a good result first (work requeued
/// from a worker that held it goes to one that has answered before), then the freest (among
/// newcomers: none), then the lowest id.
pub(super) type FreeKey = (Reverse<bool>, Reverse<usize>, WorkerId);

impl Scheduler {
    /// Changes worker `id` (its outstanding assignments or trust, not its capabilities),
    /// keeping [`Scheduler::free`] and the busy slots in step. The free index is touched only
    /// where the worker's keys in it changed: most results leave one of the two alone.
    pub(super) fn update_worker<R>(
        &mut self,
        id: WorkerId,
        f: impl FnOnce(&mut Worker) -> R,
    ) -> Option<R> {
        let w = self.workers.get_mut(&id)?;
        let before = FreeEntry::of(id, w);
        let (running, ahead) = (w.running(), w.queued.len());
        let r = f(w);
        self.busy_slots = self.busy_slots + w.running() - running;
        self.ahead_out = self.ahead_out + w.queued.len() - ahead;
        self.free.update(id, &before, w);
        Some(r)
    }

    /// As [`Scheduler::update_worker`], for a change that may touch the worker's capabilities
    /// too (which tables it holds): it leaves the free index and joins it again.
    fn update_capabilities<R>(
        &mut self,
        id: WorkerId,
        f: impl FnOnce(&mut Worker) -> R,
    ) -> Option<R> {
        let w = self.workers.get_mut(&id)?;
        self.free.remove(id, w);
        let r = f(w);
        self.free.insert(id, w);
        Some(r)
    }

    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Slots over all workers.
    pub fn slots(&self) -> usize {
        self.total_slots
    }

    /// Assignments running on workers (not those sent ahead and not started).
    pub fn busy_slots(&self) -> usize {
        self.busy_slots
    }

    /// Assignments running on worker `id` (0 for a worker it does not know).
    pub fn busy_slots_of(&self, id: WorkerId) -> usize {
        self.workers.get(&id).map_or(0, Worker::running)
    }

    /// Assignments sent ahead to workers and not started, over all workers.
    pub fn queued_ahead(&self) -> usize {
        self.ahead_out
    }

    /// The shapes some connected worker holds pattern databases for.
    pub fn pdb_shapes(&self) -> BTreeSet<Shape> {
        self.table_holders.keys().copied().collect()
    }

    /// Strikes `shape` from what worker `id` said it holds tables for; whether it had claimed it.
    pub(super) fn revoke(&mut self, id: WorkerId, shape: Shape) -> bool {
        let revoked = self
            .update_capabilities(id, |w| w.capabilities.pdb_shapes.remove(&shape))
            .unwrap_or(false);
        if revoked {
            self.count_tables(shape, false);
        }
        revoked
    }

    /// One worker more (`joined`) or less holding tables for `shape`.
    fn count_tables(&mut self, shape: Shape, joined: bool) {
        let n = self.table_holders.entry(shape).or_default();
        if joined {
            *n += 1;
        } else {
            *n -= 1;
        }
        if *n == 0 {
            self.table_holders.remove(&shape);
        }
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
            prefetch: self.config.prefetch && capabilities.prefetch,
            capabilities,
            outstanding: HashSet::new(),
            queued: VecDeque::new(),
            last_seen: now,
            failures: 0,
            good: 0,
            confirmed: 0,
        };
        self.total_slots += worker.slots;
        self.free.insert(id, &worker);
        for &shape in &worker.capabilities.pdb_shapes {
            self.count_tables(shape, true);
        }
        self.workers.insert(id, worker);
        self.dispatch()
    }

    /// A worker disconnected (its stream ended, or could not be written): its tasks go back to
    /// the queue.
    pub fn remove_worker(&mut self, id: WorkerId) -> Vec<Command> {
        self.drop_worker(id, None)
    }

    /// The one way a member leaves. With a `reason`, the scheduler is the one dropping it (lease
    /// expired, a task held after an ask, a forged result, failure after failure, caught by an
    /// audit): a [`Command::Disconnect`] tells the caller to close its connection. Without, the
    /// worker left on its own. Either way its running tasks of the current epochs go back to
    /// their queues, to go out next, and the freed work is dispatched. A worker that is not a
    /// member (already dropped) is not dropped twice: nothing is sent.
    pub(super) fn drop_worker(
        &mut self,
        id: WorkerId,
        reason: Option<DisconnectReason>,
    ) -> Vec<Command> {
        let Some(worker) = self.remove_worker_entry(id) else {
            return Vec::new();
        };
        let mut commands: Vec<Command> = reason
            .map(|reason| Command::Disconnect { worker: id, reason })
            .into_iter()
            .collect();
        let mut touched = BTreeSet::new();
        self.visits.add(worker.outstanding.len());
        for (job_id, epoch, tid) in worker.outstanding {
            touched.insert(job_id);
            let Some(job) = self.jobs.get_mut(&job_id) else {
                continue;
            };
            let Some(which) = job.which(epoch, tid) else {
                continue;
            };
            let Some(layer) = job.layer_mut(which) else {
                continue;
            };
            let Some(task) = layer.get_mut(tid) else {
                continue;
            };
            if let TaskState::Running { worker, asked_back } = task.state
                && worker == id
            {
                if asked_back && task.queued {
                    self.revoking -= 1;
                } else if asked_back {
                    self.asked_out -= 1;
                }
                task.state = TaskState::Pending;
                // Back at the end: requeued tasks go out next.
                layer.queue.push_back(tid);
                job.running -= 1;
                job.stats.requeued += 1;
            }
        }
        for job in touched {
            self.reindex(job);
        }
        commands.extend(self.dispatch());
        commands
    }

    /// Forgets worker `id` and its place in the indexes: its assignments are no longer held by
    /// it, nor its running tasks to be asked back from it (their states are the caller's).
    pub(super) fn remove_worker_entry(&mut self, id: WorkerId) -> Option<Worker> {
        let worker = self.workers.remove(&id)?;
        self.free.remove(id, &worker);
        self.total_slots -= worker.slots;
        self.busy_slots -= worker.running();
        self.ahead_out -= worker.queued.len();
        for &shape in &worker.capabilities.pdb_shapes {
            self.count_tables(shape, false);
        }
        self.visits.add(worker.outstanding.len());
        for &(job_id, epoch, tid) in &worker.outstanding {
            self.release(job_id, id);
            let current = self.jobs.get(&job_id).is_some_and(|j| {
                j.task_at(epoch, tid).is_some_and(
                    |t| matches!(t.state, TaskState::Running { worker, .. } if worker == id),
                )
            });
            if current {
                self.unindex_task(job_id, tid);
            }
        }
        Some(worker)
    }

    /// Any message from a worker renews its lease.
    pub fn heartbeat(&mut self, id: WorkerId, now: Instant) {
        self.clock = Some(now);
        if let Some(w) = self.workers.get_mut(&id) {
            w.last_seen = now;
        }
    }

    /// Finds tasks held too long: asked back without an answer within
    /// [`SchedulerConfig::ask_timeout`] (the worker is dropped), running past
    /// [`SchedulerConfig::max_task_age`], or held by a worker without a good result yet past
    /// [`SchedulerConfig::newcomer_patience`] while slots idle (asked back now).
    ///
    /// [`SchedulerConfig::newcomer_patience`]: super::SchedulerConfig::newcomer_patience
    pub(super) fn check_held(&mut self, now: Instant) -> Vec<Command> {
        let mut holders = BTreeSet::new();
        let mut too_old = Vec::new();
        let mut stale_audits = Vec::new();
        let slots_idle = self.free.slots > 0;
        // Once per tick, not per event: a scan of every assignment out is affordable here.
        self.visits.add(self.busy_slots);
        for (&wid, w) in &self.workers {
            for &(job_id, epoch, tid) in &w.outstanding {
                let Some(job) = self.jobs.get(&job_id) else {
                    continue;
                };
                let Some(task) = job.task_at(epoch, tid) else {
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
                    } if slots_idle
                        && w.good == 0
                        && task.audit.is_none()
                        && !task.unbudgeted
                        && age(task.since).is_some_and(|a| a > self.config.newcomer_patience) =>
                    {
                        too_old.push((job_id, tid, wid));
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
            tracing::warn!(job = job_id.0, "an audit ran too long; going on without it");
            commands.extend(self.give_up_audit(job_id, tid));
        }
        for worker in holders {
            tracing::warn!(
                worker = worker.0,
                "a worker holds a unit it was asked for; dropping it"
            );
            commands.extend(self.drop_worker(worker, Some(DisconnectReason::Failing)));
        }
        commands
    }
}
