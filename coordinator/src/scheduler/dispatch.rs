//! Dispatch: pairing free slots with queued tasks (the job with the fewest running tasks first,
//! its tasks in depth-first order, each to a worker that can search it), then sending tasks
//! ahead to workers whose slots are all busy ([`SchedulerConfig::prefetch`]), and, when slots
//! would still idle, taking back tasks sent ahead and not started, then asking running tasks
//! back for the rest of their bound (the largest first). A newcomer's tasks are asked like any
//! other's; one still running past [`SchedulerConfig::newcomer_patience`] while slots idle is
//! asked back at the next tick ([`Scheduler::check_held`]), so that a worker that holds units
//! is found out. Before a checkpoint, the tasks running long are asked back too
//! ([`Scheduler::ask_back_for_checkpoint`]). The tasks to ask come from the `Asks` part, the
//! slots to fill from the `Members` part.
//!
//! [`SchedulerConfig::prefetch`]: super::SchedulerConfig::prefetch
//! [`SchedulerConfig::newcomer_patience`]: super::SchedulerConfig::newcomer_patience

use std::time::{Duration, Instant};

use super::Scheduler;
use super::asks::{AskKey, ask_key};
use super::messages::{Assignment, ClientId, Command, JobId, TaskId, WorkerId};
use super::task::TaskState;

impl Scheduler {
    /// The next (worker, job) to pair: among the workers with free slots, the freest (lowest id
    /// on ties) that can search some job with queued tasks, and only then those that may be
    /// sent a task ahead (the most room first); for it, the job with the fewest running tasks
    /// (lowest id on ties) among those it can search. In a cluster whose workers can all search
    /// every job, that is the first free worker and the first runnable job: the loops look
    /// further only past workers barred from a job (an audit of their own report, a newcomer
    /// facing an audit, no tables for its shape).
    pub(super) fn next_pairing(&self) -> Option<(WorkerId, JobId)> {
        if self.runnable.is_empty() {
            return None;
        }
        self.members.free().fill_order().find_map(|wid| {
            self.visits.add(1);
            let w = self.members.get(wid)?;
            self.runnable.jobs().find_map(|jid| {
                self.visits.add(1);
                let j = self.jobs.get(&jid)?;
                // An audit never goes to the worker whose report it checks, nor to a newcomer.
                let next = j.next_queued().and_then(|(_, t)| j.task(t))?;
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
    pub(super) fn dispatch(&mut self) -> Vec<Command> {
        let mut commands = Vec::new();
        self.dispatch_into(&mut commands);
        commands
    }

    /// [`Scheduler::dispatch`], its commands added to `commands` (one vector for an event's
    /// commands, not one more per call).
    pub(super) fn dispatch_into(&mut self, commands: &mut Vec<Command>) {
        while let Some((wid, job_id)) = self.next_pairing() {
            let Some(job) = self.jobs.get_mut(&job_id) else {
                break;
            };
            let Some((which, _)) = job.next_queued() else {
                break;
            };
            let Some(layer) = job.layer_mut(which) else {
                break;
            };
            let Some(tid) = layer.pop() else { break };
            let (epoch, bound) = (layer.epoch, layer.bound);
            // No slot of its free: it queues the task and starts it when one frees.
            let ahead = self.members.get(wid).is_some_and(|w| w.free_slots() == 0);
            let Some(task) = layer.get_mut(tid) else {
                break;
            };
            task.state = TaskState::Running {
                worker: wid,
                asked_back: false,
            };
            task.queued = ahead;
            task.since = self.clock;
            task.asked_at = None;
            let (work, audit, unbudgeted, iterate) =
                (task.work.clone(), task.audit, task.unbudgeted, task.iterate);
            // Its place in the ask-back indexes, while the task is at hand.
            let ask = ask_key(job_id, which, tid, task);
            let first = job.running() == 0;
            job.task_out();
            let assignment = Assignment {
                job: job.spec.id,
                epoch,
                task: tid,
                work,
                goal: job.spec.goal,
                heuristic: job.spec.heuristic,
                bound: audit.map_or(bound, |a| a.bound),
                node_budget: if unbudgeted {
                    0
                } else {
                    self.config.node_budget
                },
                iterate,
                weight: job.spec.solver.weight(),
            };
            let key = (assignment.job, assignment.epoch, tid);
            if !unbudgeted {
                self.asks.insert(ask, ahead);
            }
            self.members.update(wid, |w| {
                w.outstanding.insert(key);
                if ahead {
                    w.queued.push_back(key);
                }
            });
            self.members.hold(job_id, wid);
            self.totals.units_assigned += 1;
            commands.push(Command::Assign {
                worker: wid,
                assignment,
            });
            self.reindex(job_id);
            // A job's first task queued behind busy slots: a slot of that worker is asked
            // back for it, so that a new search starts at once.
            if ahead && first {
                commands.extend(self.preempt_for(job_id, Some(wid)).map(|(_, _, ask)| ask));
            }
        }
        commands.extend(self.ask_back());
        commands.extend(self.preempt());
        self.check_indexes();
    }

    /// Gives each starving job a thread: while no slot is free and some job has queued tasks
    /// and none running (a new search behind long ones), a task of the job holding the most
    /// above its share of the slots is asked back ([`Scheduler::preempt_for`]), and the tasks
    /// that job has sent ahead to the same worker are taken back, so that the slot its answer
    /// frees goes to the starving job (dispatch serves the job with the fewest running tasks
    /// first). One ask per starving job at a time.
    fn preempt(&mut self) -> Vec<Command> {
        /// Starving jobs served per event: bounded work whatever the cluster holds.
        const MOST_STARVING: usize = 8;
        if self.config.preempt_slice.is_none()
            || !self.runnable.has_starving()
            || !self.members.free().is_empty()
        {
            return Vec::new();
        }
        let starving: Vec<JobId> = self.runnable.starving().take(MOST_STARVING).collect();
        let mut commands = Vec::new();
        for starving_id in starving.into_iter().skip(self.asks.asked_out()) {
            let Some((victim, worker, ask)) = self.preempt_for(starving_id, None) else {
                break;
            };
            commands.push(ask);
            let ahead: Vec<TaskId> = self.members.get(worker).map_or(Vec::new(), |w| {
                w.queued
                    .iter()
                    .filter(|&&(job, _, _)| job == victim)
                    .map(|&(_, _, tid)| tid)
                    .collect()
            });
            for tid in ahead {
                commands.extend(self.ask(victim, tid, worker, 0));
            }
        }
        commands
    }

    /// The job a starving job of `client` takes a thread from: first, among the other clients
    /// holding more running tasks than their share of the slots (the slots over the clients
    /// that run or wait), the one holding the most, and its job holding the most; else, among
    /// `client`'s own jobs, the one holding the most above their share of the client's tasks.
    /// None was asked for this within [`SchedulerConfig::preempt_slice`].
    ///
    /// [`SchedulerConfig::preempt_slice`]: super::SchedulerConfig::preempt_slice
    fn victim_for(&self, starving: JobId, client: ClientId) -> Option<JobId> {
        let slice = self.config.preempt_slice?;
        let now = self.clock;
        let share = (self.slots() / self.runnable.clients().max(1)).max(1);
        let other = self
            .runnable
            .running()
            .filter(|&(c, running)| c != client && running > share)
            .max_by_key(|&(c, running)| (running, std::cmp::Reverse(c)))
            .map(|(c, _)| c);
        let (from, job_share) = match other {
            Some(c) => (c, 0),
            None => {
                let (running, jobs) = self.runnable.of(client);
                (client, (running / jobs.max(1)).max(1))
            }
        };
        self.visits.add(self.jobs.len());
        self.jobs
            .iter()
            .filter(|&(&id, j)| id != starving && j.spec.client == from && j.running() > job_share)
            .filter(|(_, j)| {
                j.preempted_at
                    .zip(now)
                    .is_none_or(|(at, now)| now.saturating_duration_since(at) >= slice)
            })
            .max_by_key(|&(&id, j)| (j.running(), std::cmp::Reverse(id)))
            .map(|(&id, _)| id)
    }

    /// Asks back a running task for starving job `starving` (queued tasks, none started): one
    /// of the job holding the most running tasks above its share of the slots, not asked for
    /// this within [`SchedulerConfig::preempt_slice`], held by a worker (`on`, if given) that
    /// can search the starving job; the largest such task. What it searched is kept, as with
    /// every hand-back. Returns the job asked, the worker, and the ask.
    ///
    /// [`SchedulerConfig::preempt_slice`]: super::SchedulerConfig::preempt_slice
    fn preempt_for(
        &mut self,
        starving: JobId,
        on: Option<WorkerId>,
    ) -> Option<(JobId, WorkerId, Command)> {
        /// Ask-back candidates read for one ask.
        const MOST_READ: usize = 64;
        if self.config.preempt_slice.is_none() || self.config.hand_back_after == u64::MAX {
            return None;
        }
        // Every job holding assignments holds one: none is above any share (a batch of whole
        // searches), and no job is looked at.
        if self.members.assignments_out() <= self.members.holding_jobs() {
            return None;
        }
        let (heuristic, shape, client) = self
            .jobs
            .get(&starving)
            .map(|j| (j.spec.heuristic, j.spec.root.shape(), j.spec.client))?;
        let victim = self.victim_for(starving, client)?;
        let (jobs, members, visits) = (&self.jobs, &self.members, &self.visits);
        let picked = self.asks.pick_running_within(MOST_READ, |key| {
            visits.add(1);
            if key.job != victim {
                return None;
            }
            let Some(TaskState::Running { worker, .. }) =
                jobs.get(&key.job)?.task(key.task).map(|t| t.state)
            else {
                return None;
            };
            (on.is_none_or(|w| w == worker)
                && members
                    .get(worker)?
                    .capabilities
                    .can_search(heuristic, shape))
            .then_some((key.task, worker))
        });
        let (tid, worker) = picked?;
        let after_nodes = self.hand_back_after(victim, tid);
        let ask = self.ask(victim, tid, worker, after_nodes)?;
        if let Some(job) = self.jobs.get_mut(&victim) {
            job.preempted_at = self.clock;
            job.stats.preempted += 1;
        }
        Some((victim, worker, ask))
    }

    /// Slots free now that no queued task can fill take back tasks sent ahead and not started
    /// (nothing searched is lost; one per idle slot, the largest first), then ask running tasks
    /// for the rest of their bound for the slots still idle: the largest predicted ones first,
    /// one request per 32 idle slots (each answer brings many pieces), none twice. Only tasks
    /// some idle worker could search are asked back.
    ///
    /// All come from indexes (`ahead`, `askable`): the loops stop after the tasks asked, past
    /// only those no idle worker can search.
    pub(super) fn ask_back(&mut self) -> Vec<Command> {
        if self.members.free().is_empty() || self.config.hand_back_after == u64::MAX {
            return Vec::new();
        }
        let mut commands = self.take_back();
        // Slots that tasks being taken back will fill are not idle for the asks below.
        let idle_slots = self
            .members
            .free()
            .slots()
            .saturating_sub(self.asks.revoking());
        let asked_out = self.asks.asked_out();
        let wanted = idle_slots
            .div_ceil(32)
            .saturating_sub(asked_out)
            .max(usize::from(asked_out == 0));
        let wanted = if asked_out >= idle_slots { 0 } else { wanted };
        let candidates = self.pick_to_ask(false, wanted);
        for (job_id, tid, worker) in candidates {
            let after_nodes = self.hand_back_after(job_id, tid);
            commands.extend(self.ask(job_id, tid, worker, after_nodes));
        }
        commands
    }

    /// Up to `wanted` tasks from an ask-back index (of the tasks `sent_ahead` and not started,
    /// or of those running), in its order, that some idle worker could search: each with its
    /// job and the worker holding it.
    fn pick_to_ask(&mut self, sent_ahead: bool, wanted: usize) -> Vec<(JobId, TaskId, WorkerId)> {
        let (jobs, free, visits) = (&self.jobs, self.members.free(), &self.visits);
        self.asks.pick(
            sent_ahead,
            wanted,
            |&AskKey {
                 job: job_id,
                 task: tid,
                 ..
             }| {
                visits.add(1);
                let job = jobs.get(&job_id)?;
                let Some(TaskState::Running { worker, .. }) = job.task(tid).map(|t| t.state) else {
                    return None;
                };
                free.can_search(job.spec.heuristic, job.spec.root.shape())
                    .then_some((job_id, tid, worker))
            },
        )
    }

    /// After how many nodes task `tid` of `job_id`, asked back, stops: a whole search once it
    /// has searched [`SchedulerConfig::hand_back_after`] times the share of the cluster's slots
    /// that are busy (a job that ends within them is never cut while other work keeps the
    /// slots busy; alone on an idle cluster it waits as little as a cut job's task), a task of a
    /// job already cut after
    /// [`SchedulerConfig::cut_hand_back_after`] (only the speed of the bound's tail is at stake).
    ///
    /// [`SchedulerConfig::hand_back_after`]: super::SchedulerConfig::hand_back_after
    /// [`SchedulerConfig::cut_hand_back_after`]: super::SchedulerConfig::cut_hand_back_after
    fn hand_back_after(&self, job_id: JobId, tid: TaskId) -> u64 {
        let whole = (self.jobs.get(&job_id))
            .and_then(|j| j.task(tid))
            .is_none_or(|t| t.iterate);
        if whole {
            // What the wait costs is the idle slots', so it shrinks with them: a whole search
            // alone on a large idle cluster is cut as soon as a task of a cut job would be.
            let total = self.slots().max(1) as u64;
            let busy = (self.busy_slots() as u64).clamp(1, total);
            let scaled = self.config.hand_back_after.saturating_mul(busy) / total;
            scaled
                .max(self.config.cut_hand_back_after)
                .min(self.config.hand_back_after)
        } else {
            self.config
                .cut_hand_back_after
                .min(self.config.hand_back_after)
        }
    }

    /// Takes back tasks sent ahead and not started, the largest first, one for each idle slot
    /// that no task already being taken back will fill, each only if some idle worker can
    /// search it. The worker answers `NotStarted` at once; one that has started it meanwhile
    /// hands back its rest as for any ask.
    fn take_back(&mut self) -> Vec<Command> {
        let wanted = self
            .members
            .free()
            .slots()
            .saturating_sub(self.asks.revoking());
        if wanted == 0 || !self.asks.has_ahead() {
            return Vec::new();
        }
        self.pick_to_ask(true, wanted)
            .into_iter()
            .filter_map(|(job_id, tid, worker)| {
                let after_nodes = self.hand_back_after(job_id, tid);
                self.ask(job_id, tid, worker, after_nodes)
            })
            .collect()
    }

    /// Before a checkpoint of job `id`: its tasks running for `older_than` or longer (by the
    /// time `now`) are asked for the rest of their bound at once, so that the checkpoint
    /// taken once they have answered keeps what they searched (a running task's work is lost
    /// by a restart; a handed-back one's is not). Audits and tasks sent ahead are left alone. A task searched whole
    /// is asked too: the job is then cut, and can be checkpointed.
    pub fn ask_back_for_checkpoint(
        &mut self,
        id: JobId,
        older_than: Duration,
        now: Instant,
    ) -> Vec<Command> {
        self.clock = Some(now);
        let Some(job) = self.jobs.get(&id) else {
            return Vec::new();
        };
        self.visits.add(job.now.tasks.len());
        let old: Vec<(TaskId, WorkerId)> = (job.now.tasks.iter().enumerate())
            // Audits, and tasks sent ahead and not started (nothing searched to keep).
            .filter(|(_, t)| t.audit.is_none() && !t.queued)
            .filter(|(_, t)| {
                t.since
                    .is_some_and(|s| now.saturating_duration_since(s) >= older_than)
            })
            .filter_map(|(i, t)| match t.state {
                TaskState::Running {
                    worker,
                    asked_back: false,
                } => Some((job.now.id(i), worker)),
                _ => None,
            })
            .collect();
        old.into_iter()
            .filter_map(|(tid, worker)| self.ask(id, tid, worker, 0))
            .collect()
    }

    /// Asks `worker` for the rest of running task `tid` of `job_id` once it has searched
    /// `after_nodes` nodes (for a task sent ahead and not started: for the task), and counts
    /// the ask.
    pub(super) fn ask(
        &mut self,
        job_id: JobId,
        tid: TaskId,
        worker: WorkerId,
        after_nodes: u64,
    ) -> Option<Command> {
        let job = self.jobs.get_mut(&job_id)?;
        self.asks.unindex_task(job, tid);
        let epoch = job.layer(job.which_id(tid)?)?.epoch;
        job.stats.yields += 1;
        let task = job.task_mut(tid)?;
        task.state = TaskState::Running {
            worker,
            asked_back: true,
        };
        task.asked_at = self.clock;
        self.asks.asked(task.queued);
        Some(Command::Yield {
            worker,
            job: job_id,
            epoch,
            task: tid,
            after_nodes,
        })
    }
}
