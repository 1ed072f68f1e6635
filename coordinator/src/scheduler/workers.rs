//! The workers' events: a worker joins ([`Scheduler::add_worker`]), renews its lease
//! ([`Scheduler::heartbeat`]), and leaves: it disconnects, its lease expires, it holds a task it
//! was asked back, or it is dropped for what it reported. Its tasks then go back to their jobs'
//! queues. Also what the scheduler says of its workers (slots, busy slots, tables). The workers
//! themselves and their counts are the `Members` part's (`members.rs`).

use std::collections::{BTreeSet, VecDeque};
use std::time::Instant;

use foldhash::{HashSet, HashSetExt};
use npuzzle_solver::{Goal, HeuristicKind, Shape};

use super::Scheduler;
use super::heuristic::{Capabilities, HeuristicUnavailable, choose_heuristic};
use super::members::Worker;
use super::messages::{Command, DisconnectReason, WorkerId};
use super::task::TaskState;

impl Scheduler {
    pub fn workers(&self) -> usize {
        self.members.len()
    }

    /// Slots over all workers.
    pub fn slots(&self) -> usize {
        self.members.slots()
    }

    /// Assignments running on workers (not those sent ahead and not started).
    pub fn busy_slots(&self) -> usize {
        self.members.busy_slots()
    }

    /// Assignments running on worker `id` (0 for a worker it does not know).
    pub fn busy_slots_of(&self, id: WorkerId) -> usize {
        self.members.busy_slots_of(id)
    }

    /// Assignments sent ahead to workers and not started, over all workers.
    pub fn queued_ahead(&self) -> usize {
        self.members.queued_ahead()
    }

    /// The shapes some connected worker holds pattern databases for.
    pub fn pdb_shapes(&self) -> BTreeSet<Shape> {
        self.members.pdb_shapes()
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
        self.forget_worker(id);
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
        self.members.join(id, worker);
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
        let Some(worker) = self.forget_worker(id) else {
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
                if asked_back {
                    self.asks.answered(task.queued);
                }
                task.state = TaskState::Pending;
                // Back at the end: requeued tasks go out next.
                layer.queue.push_back(tid);
                job.task_back();
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
    fn forget_worker(&mut self, id: WorkerId) -> Option<Worker> {
        let worker = self.members.leave(id)?;
        self.visits.add(worker.outstanding.len());
        for &(job_id, epoch, tid) in &worker.outstanding {
            let Some(job) = self.jobs.get(&job_id) else {
                continue;
            };
            let current = job.task_at(epoch, tid).is_some_and(
                |t| matches!(t.state, TaskState::Running { worker, .. } if worker == id),
            );
            if current {
                self.asks.unindex_task(job, tid);
            }
        }
        Some(worker)
    }

    /// Any message from a worker renews its lease.
    pub fn heartbeat(&mut self, id: WorkerId, now: Instant) {
        self.clock = Some(now);
        self.members.renew_lease(id, now);
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
        let slots_idle = self.members.free().slots() > 0;
        // Once per tick, not per event: a scan of every assignment out is affordable here.
        self.visits.add(self.members.busy_slots());
        for (wid, w) in self.members.iter() {
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
