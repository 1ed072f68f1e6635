//! The cluster's members: each worker's slots, capabilities, outstanding assignments (those
//! running, and those sent ahead that it has not started), lease and the trust it has earned (a
//! newcomer holds [`TRIAL_SLOTS`] tasks until it answers well), and what the scheduler counts
//! over them. A part that owns its data ([`Members`]), as
//! [`Runnable`](super::runnable::Runnable) does: a worker joins, changes and leaves only
//! through its methods, which keep every count in step with the workers and assert it.
//!
//! - [`FreeWorkers`]: the workers with free slots, in the order slots are filled, with their
//!   free slots in all and, per shape, how many of them hold tables for it (can an idle slot
//!   search a job's tasks?); and those with no slot free that may be sent tasks ahead.
//! - The slots over all workers, those busy (`busy_slots <= total_slots`), and the assignments
//!   sent ahead and not started: each the sum over the workers, never below zero.
//! - The workers holding tables, per shape (what a job's heuristic is chosen from).
//! - Per job, the workers holding one of its assignments (of any epoch) and how many: who gets
//!   a cancel when it ends.
//!
//! How a worker joins and leaves (its lease, its tasks requeued) is the scheduler's, in
//! `workers.rs`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use foldhash::{HashMap, HashSet};
use npuzzle_solver::{HeuristicKind, Shape};

use super::heuristic::Capabilities;
use super::messages::{Epoch, JobId, TaskId, WorkerId};

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

/// A worker's key in [`FreeWorkers`]' workers with room ahead, if it could be sent a task
/// ahead: the most room first, then the lowest id.
fn ahead_key(id: WorkerId, w: &Worker) -> Option<(Reverse<usize>, WorkerId)> {
    let room = w.room_ahead();
    (room > 0).then_some((Reverse(room), id))
}

/// A worker's key in [`FreeWorkers`], if it has a free slot.
fn free_key(id: WorkerId, w: &Worker) -> Option<FreeKey> {
    let free = w.free_slots();
    let proven = w.good > 0;
    // Among newcomers, claimed slots buy no precedence: the earliest joined goes first.
    let rank = if proven { free } else { free.min(1) };
    (free > 0).then_some((Reverse(proven), Reverse(rank), id))
}

/// What [`FreeWorkers`] holds of a worker: its keys there and its free slots.
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

/// A worker's place in [`FreeWorkers`]: workers with a good result first (work requeued
/// from a worker that held it goes to one that has answered before), then the freest (among
/// newcomers: none), then the lowest id.
pub(super) type FreeKey = (Reverse<bool>, Reverse<usize>, WorkerId);

/// The workers with free slots.
#[derive(Default)]
pub(super) struct FreeWorkers {
    /// In the order slots are filled ([`FreeKey`]).
    order: BTreeSet<FreeKey>,
    /// Free slots over them: how many slots would idle if no task were queued.
    slots: usize,
    /// How many of them hold pattern databases for each shape (counted as workers join and leave
    /// the free ones, on most events: a fast hash).
    by_shape: foldhash::HashMap<Shape, usize>,
    /// The workers with no slot free that may be sent tasks ahead
    /// ([`SchedulerConfig::prefetch`](super::SchedulerConfig::prefetch)), the most room first:
    /// filled only after every free slot.
    ahead: BTreeSet<(Reverse<usize>, WorkerId)>,
}

impl FreeWorkers {
    /// Indexes worker `id` if it has a free slot. Call after any change to the worker.
    fn insert(&mut self, id: WorkerId, w: &Worker) {
        self.apply(&FreeEntry::NONE, &FreeEntry::of(id, w), w);
    }

    /// Takes worker `id` out, if it is in. Call before any change to the worker.
    fn remove(&mut self, id: WorkerId, w: &Worker) {
        self.apply(&FreeEntry::of(id, w), &FreeEntry::NONE, w);
    }

    /// Worker `id` changed from `before` (its capabilities did not): only the keys that
    /// changed move.
    fn update(&mut self, id: WorkerId, before: &FreeEntry, w: &Worker) {
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

    /// Free slots over the workers: how many slots would idle if no task were queued.
    pub(super) fn slots(&self) -> usize {
        self.slots
    }

    /// The workers to fill, in order: those with free slots (the order of [`FreeKey`]), then
    /// those that may be sent tasks ahead (the most room first).
    pub(super) fn fill_order(&self) -> impl Iterator<Item = WorkerId> + '_ {
        let free = self.order.iter().map(|&(_, _, wid)| wid);
        free.chain(self.ahead.iter().map(|&(_, wid)| wid))
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

/// The workers and what the scheduler counts over them (see the module's docs).
#[derive(Default)]
pub(super) struct Members {
    workers: HashMap<WorkerId, Worker>,
    /// Workers with free slots, in the order they are filled.
    free: FreeWorkers,
    /// Slots over all workers.
    total_slots: usize,
    /// Assignments running over all workers (not those sent ahead and not started).
    busy_slots: usize,
    /// Assignments sent ahead and not started, over all workers.
    ahead_out: usize,
    /// Workers holding pattern databases, per shape.
    table_holders: BTreeMap<Shape, usize>,
    /// Per job, the workers holding one of its assignments (any epoch) and how many: who gets
    /// a cancel when it ends.
    holders: HashMap<JobId, HashMap<WorkerId, usize>>,
}

impl Members {
    pub(super) fn len(&self) -> usize {
        self.workers.len()
    }

    pub(super) fn get(&self, id: WorkerId) -> Option<&Worker> {
        self.workers.get(&id)
    }

    /// Every worker, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (WorkerId, &Worker)> {
        self.workers.iter().map(|(&id, w)| (id, w))
    }

    /// The workers with free slots, and those that may be sent tasks ahead.
    pub(super) fn free(&self) -> &FreeWorkers {
        &self.free
    }

    /// Slots over all workers.
    pub(super) fn slots(&self) -> usize {
        self.total_slots
    }

    /// Assignments running on workers (not those sent ahead and not started).
    pub(super) fn busy_slots(&self) -> usize {
        self.busy_slots
    }

    /// Assignments running on worker `id` (0 for a worker it does not know).
    pub(super) fn busy_slots_of(&self, id: WorkerId) -> usize {
        self.workers.get(&id).map_or(0, Worker::running)
    }

    /// Assignments sent ahead to workers and not started, over all workers.
    pub(super) fn queued_ahead(&self) -> usize {
        self.ahead_out
    }

    /// Every assignment the workers hold: running, or sent ahead.
    pub(super) fn assignments_out(&self) -> usize {
        self.busy_slots + self.ahead_out
    }

    /// The shapes some worker holds pattern databases for.
    pub(super) fn pdb_shapes(&self) -> BTreeSet<Shape> {
        self.table_holders.keys().copied().collect()
    }

    /// The workers silent for longer than `timeout` by the time `now`, by id.
    pub(super) fn lease_expired(&self, now: Instant, timeout: Duration) -> Vec<WorkerId> {
        let mut expired: Vec<WorkerId> = (self.workers.iter())
            .filter(|(_, w)| now.saturating_duration_since(w.last_seen) > timeout)
            .map(|(&id, _)| id)
            .collect();
        expired.sort_unstable();
        expired
    }

    /// Worker `id` joins (it is not a member: one joining again leaves first), holding nothing.
    pub(super) fn join(&mut self, id: WorkerId, worker: Worker) {
        debug_assert!(!self.workers.contains_key(&id), "worker {id} joined twice");
        debug_assert!(
            worker.outstanding.is_empty(),
            "a worker joins holding nothing"
        );
        self.total_slots += worker.slots;
        self.free.insert(id, &worker);
        for &shape in &worker.capabilities.pdb_shapes {
            self.count_tables(shape, true);
        }
        self.workers.insert(id, worker);
    }

    /// Worker `id` leaves: it is forgotten, with its place in the counts and as a holder of
    /// its assignments' jobs (what becomes of its tasks is the caller's).
    pub(super) fn leave(&mut self, id: WorkerId) -> Option<Worker> {
        let worker = self.workers.remove(&id)?;
        self.free.remove(id, &worker);
        debug_assert!(
            self.total_slots >= worker.slots
                && self.busy_slots >= worker.running()
                && self.ahead_out >= worker.queued.len(),
            "worker {id} leaves more slots or assignments than were counted"
        );
        self.total_slots -= worker.slots;
        self.busy_slots -= worker.running();
        self.ahead_out -= worker.queued.len();
        for &shape in &worker.capabilities.pdb_shapes {
            self.count_tables(shape, false);
        }
        for &(job, _, _) in &worker.outstanding {
            self.release(job, id);
        }
        Some(worker)
    }

    /// Changes worker `id` (its outstanding assignments, lease or trust, not its slots or
    /// capabilities), keeping the free index and the counts in step. The free index is touched
    /// only where the worker's keys in it changed: most results leave one of the two alone.
    pub(super) fn update<R>(
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
        debug_assert!(
            self.busy_slots <= self.total_slots,
            "{} slots busy of {}",
            self.busy_slots,
            self.total_slots
        );
        self.free.update(id, &before, w);
        Some(r)
    }

    /// Any message from worker `id` renews its lease (a change no index or count sees).
    pub(super) fn renew_lease(&mut self, id: WorkerId, now: Instant) {
        if let Some(w) = self.workers.get_mut(&id) {
            w.last_seen = now;
        }
    }

    /// Strikes `shape` from what worker `id` said it holds tables for; whether it had claimed
    /// it. It leaves the free index and joins it again, counted for its tables as they are now.
    pub(super) fn revoke(&mut self, id: WorkerId, shape: Shape) -> bool {
        let Some(w) = self.workers.get_mut(&id) else {
            return false;
        };
        self.free.remove(id, w);
        let revoked = w.capabilities.pdb_shapes.remove(&shape);
        self.free.insert(id, w);
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
            debug_assert!(
                *n > 0,
                "a worker left tables for {shape} it was not counted for"
            );
            *n -= 1;
        }
        if *n == 0 {
            self.table_holders.remove(&shape);
        }
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

    /// The workers holding an assignment of `job`, by id, forgotten as its holders (it is over:
    /// late results only free slots).
    pub(super) fn take_holders(&mut self, job: JobId) -> Vec<WorkerId> {
        let holders = self.holders.remove(&job).unwrap_or_default();
        let mut workers: Vec<WorkerId> = holders.into_keys().collect();
        workers.sort_unstable();
        workers
    }

    /// Jobs some worker holds an assignment of (over jobs live or over).
    pub(super) fn holding_jobs(&self) -> usize {
        self.holders.len()
    }

    /// Checks every index and count against the workers (a scan of everything, for the tests):
    /// the holders only of the jobs `live`, since a job over keeps none.
    #[cfg(debug_assertions)]
    pub(super) fn assert_consistent(&self, live: impl Fn(JobId) -> bool) {
        use std::collections::HashMap;
        let mut free = FreeWorkers::default();
        let (mut total, mut busy, mut ahead_out) = (0, 0, 0);
        let mut tables: BTreeMap<Shape, usize> = BTreeMap::new();
        let mut holders: HashMap<JobId, BTreeMap<WorkerId, usize>> = HashMap::new();
        for (&wid, w) in &self.workers {
            free.insert(wid, w);
            total += w.slots;
            busy += w.running();
            ahead_out += w.queued.len();
            for &shape in &w.capabilities.pdb_shapes {
                *tables.entry(shape).or_default() += 1;
            }
            assert!(
                w.queued.iter().all(|k| w.outstanding.contains(k)),
                "tasks sent ahead are held"
            );
            assert!(
                w.queued.is_empty() || w.running() >= w.capacity(),
                "tasks wait ahead only behind busy slots"
            );
            for &(job, _, _) in w.outstanding.iter().filter(|k| live(k.0)) {
                *holders.entry(job).or_default().entry(wid).or_default() += 1;
            }
        }
        assert_eq!(free.ahead, self.free.ahead, "workers with room ahead");
        assert_eq!(free.order, self.free.order, "free workers");
        assert_eq!(free.slots, self.free.slots, "free slots");
        assert_eq!(free.by_shape, self.free.by_shape, "free workers by shape");
        assert_eq!(total, self.total_slots, "slots");
        assert_eq!(busy, self.busy_slots, "busy slots");
        assert_eq!(ahead_out, self.ahead_out, "tasks sent ahead, counted");
        assert_eq!(tables, self.table_holders, "workers holding tables");
        let indexed: HashMap<JobId, BTreeMap<WorkerId, usize>> = (self.holders.iter())
            .filter(|(j, _)| live(**j))
            .map(|(&j, h)| (j, h.iter().map(|(&w, &n)| (w, n)).collect()))
            .collect();
        assert_eq!(holders, indexed, "holders");
    }
}
