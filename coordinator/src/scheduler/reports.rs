//! A worker's result ([`Scheduler::on_result`]): stale ones only free their slot; a current one
//! frees its slot, starts the task its worker held ahead, and moves its job along. What a
//! report does to its job is one function per kind of report (`apply` picks one): a path is
//! replayed and, once its audits pass, ends the job; an exhausted unit counts towards the
//! bound's barrier; a split hands back pieces that become tasks of the same unit; failures
//! requeue the task and count against the worker. Any report no honest worker sends drops its
//! worker as a forger.

use std::time::Instant;

use npuzzle_solver::{HeuristicKind, Move};

use super::Scheduler;
use super::audit::{AuditOf, Auditing, MAX_LIE_RESTARTS, Scrutiny};
use super::job::{max_bound_step, valid_next_bound};
use super::messages::{
    Command, DisconnectReason, HandedBack, JobId, JobOutcome, Report, TaskId, UnitResult, WorkerId,
};
use super::task::{Task, TaskState, Which};

/// A current report (its task running on its worker in the job's epoch), with what every kind
/// of report needs to know about it.
pub(super) struct Reported {
    pub(super) job: JobId,
    /// The layer the task belongs to: the current bound, or the next one searched early.
    pub(super) which: Which,
    pub(super) task: TaskId,
    pub(super) worker: WorkerId,
    /// Nodes the worker expanded for it.
    pub(super) expanded: u64,
    /// For a whole job's task: each bound searched and its nodes.
    pub(super) iterations: Vec<(u32, u64)>,
    /// A whole job's task, searched bound after bound.
    pub(super) iterate: bool,
    /// Whether the report is checked by another worker.
    pub(super) scrutiny: Scrutiny,
    /// The task had been asked back (or, sent ahead, taken back).
    pub(super) asked_back: bool,
}

impl Scheduler {
    /// A worker's result. Stale ones (finished job, old epoch, task not running on this worker)
    /// only free the worker's slot. A result for a task that was running (not one sent ahead and
    /// not started) means its worker has started the next task it holds ahead, if any.
    pub fn on_result(
        &mut self,
        worker: WorkerId,
        result: UnitResult,
        now: Instant,
    ) -> Vec<Command> {
        self.clock = Some(now);
        let key = (result.job, result.epoch, result.task);
        let held = self.members.update(worker, |w| {
            w.last_seen = now;
            let held = w.outstanding.remove(&key);
            let ahead = w.queued.iter().position(|&k| k == key);
            let looked = ahead.map_or(w.queued.len(), |i| i + 1);
            if let Some(i) = ahead {
                w.queued.remove(i);
            }
            (held, ahead.is_some(), looked)
        });
        // Results of a worker already given up on are dropped: its tasks were requeued. So are
        // results for assignments it never held (or answered already): nothing of them, not
        // even their node counts, reaches a job or the totals.
        let Some((true, ahead, looked)) = held else {
            return Vec::new();
        };
        self.visits.add(looked);
        if !ahead {
            self.start_next(worker);
        }
        self.members.release(result.job, worker);
        // Room for what most results bring: an assignment or two, a progress report.
        let mut commands = Vec::with_capacity(4);
        if let Some(job) = self.jobs.get_mut(&result.job) {
            job.stats.nodes = job.stats.nodes.saturating_add(result.expanded);
            let per_worker = job.stats.worker_nodes.entry(worker).or_default();
            *per_worker = per_worker.saturating_add(result.expanded);
            let which = job.which(result.epoch, result.task);
            if matches!(which, Some(Which::Ahead(_))) {
                job.early_nodes = job.early_nodes.saturating_add(result.expanded);
            }
            let state = (which.and_then(|w| job.layer(w)))
                .and_then(|l| l.get(result.task))
                .map(|t| t.state);
            let current =
                matches!(state, Some(TaskState::Running { worker: w, .. }) if w == worker);
            let asked_back = matches!(state, Some(TaskState::Running { worker: w, asked_back: true }) if w == worker);
            if current {
                // Answered: whatever the report, the task stops running here.
                self.asks.unindex_task(job, result.task);
            }
            if asked_back && let Some(task) = job.task_mut(result.task) {
                // It answered: no longer out as an ask.
                self.asks.answered(task.queued);
                task.state = TaskState::Running {
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
                self.members.update(worker, |w| {
                    w.failures = 0;
                    w.good = w.good.saturating_add(1);
                });
            }
            if current {
                let job = result.job;
                commands.extend(self.apply(worker, result, asked_back));
                self.reindex(job);
            }
        } else {
            self.late_nodes = self.late_nodes.saturating_add(result.expanded);
        }
        self.dispatch_into(&mut commands);
        commands
    }

    /// A current result (its task running on this worker in the job's epoch, `asked_back` or
    /// not): one function per kind of report moves the task and the job along. An audit's
    /// result is judged against the report it checks, unless it never ran (cancelled, failed,
    /// refused, not started: requeued as any other task).
    fn apply(&mut self, worker: WorkerId, result: UnitResult, asked_back: bool) -> Vec<Command> {
        let scrutiny = self.scrutiny(worker, result.job, result.epoch, result.task);
        let Some(job) = self.jobs.get_mut(&result.job) else {
            return Vec::new();
        };
        job.task_back();
        let Some(which) = job.which(result.epoch, result.task) else {
            return Vec::new();
        };
        let Some(task) = job.task(result.task) else {
            return Vec::new();
        };
        let ran = !matches!(
            result.report,
            Report::Cancelled | Report::Failed(_) | Report::Unsupported(_) | Report::NotStarted
        );
        if let Some(audit) = task.audit
            && ran
        {
            return self.apply_audit(result.job, result.task, worker, audit, result.report);
        }
        let r = Reported {
            job: result.job,
            which,
            task: result.task,
            worker,
            expanded: result.expanded,
            iterations: result.iterations,
            iterate: task.iterate,
            scrutiny,
            asked_back,
        };
        match result.report {
            Report::Found(suffix) => self.on_found(r, suffix),
            Report::Exhausted { next_bound } => self.on_exhausted(r, next_bound),
            Report::Split {
                bound,
                next_bound,
                pieces,
            } => self.on_split(r, bound, next_bound, pieces),
            Report::BudgetExceeded => self.on_budget_exceeded(r),
            Report::Cancelled | Report::Failed(_) | Report::Unsupported(_) => {
                self.on_failed(r, result.report)
            }
            Report::NotStarted => self.on_not_started(r),
        }
    }

    /// A task `worker` was running has ended (it answered): it has started the oldest task sent
    /// ahead that it holds, if any. That one is indexed as running from now on (asked back, no
    /// longer taken back), its age counted from now.
    fn start_next(&mut self, worker: WorkerId) {
        let Some(Some((job_id, epoch, tid))) =
            self.members.update(worker, |w| w.queued.pop_front())
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
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return;
        };
        self.asks.unindex_task(job, tid);
        if let Some(task) = job.task_mut(tid) {
            task.queued = false;
            task.since = self.clock;
        }
        self.asks.index_task(job, tid);
    }

    /// Drops `worker` for a result no honest worker sends; its task goes back to the queue.
    pub(super) fn forged(
        &mut self,
        job_id: JobId,
        tid: TaskId,
        worker: WorkerId,
        what: &str,
    ) -> Vec<Command> {
        tracing::warn!(
            job = job_id.0,
            worker = worker.0,
            "{what}; dropping the worker"
        );
        if let Some(job) = self.jobs.get_mut(&job_id)
            && job.requeue_last(tid)
        {
            job.stats.requeued += 1;
        }
        self.drop_worker(worker, Some(DisconnectReason::ForgedResult))
    }

    /// A path from the task's board to the goal. Replayed before it is trusted: one that does
    /// not reach the goal is forged; then it is a whole search's answer or a unit's.
    pub(super) fn on_found(&mut self, r: Reported, suffix: Vec<Move>) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&r.job) else {
            return Vec::new();
        };
        let Some(task) = job.layer(r.which).and_then(|l| l.get(r.task)) else {
            return Vec::new();
        };
        let mut path = task.work.prefix.clone();
        path.extend(suffix);
        if !job.reaches_goal(&path) {
            return self.forged(
                r.job,
                r.task,
                r.worker,
                "rejected a path that does not check out",
            );
        }
        if r.iterate {
            self.on_whole_answer(r, path)
        } else {
            self.on_unit_answer(r, path)
        }
    }

    /// A whole job's worker found `path`, raising the bound itself: IDA* finds a path under
    /// the first bound that admits one, so its length is that bound, and the bounds before it
    /// rose from the coordinator's own lower bound (that they were exhausted is the worker's
    /// word, as any unit's `Exhausted` is). Held for an audit if it is audited and someone can
    /// search it now.
    fn on_whole_answer(&mut self, r: Reported, path: Vec<Move>) -> Vec<Command> {
        let Some(job) = self.jobs.get(&r.job) else {
            return Vec::new();
        };
        let len = path.len() as u32;
        let bounds: Vec<u32> = r.iterations.iter().map(|&(b, _)| b).collect();
        let step = max_bound_step(job.weight());
        let within = bounds.first().is_some_and(|&b| b >= job.now.bound)
            && bounds
                .windows(2)
                .all(|w| w[0] < w[1] && w[1] - w[0] <= step)
            && bounds.last().is_some_and(|&b| job.honest_length(len, b));
        if !within {
            return self.forged(
                r.job,
                r.task,
                r.worker,
                "rejected a path that does not check out",
            );
        }
        // A bounded-suboptimal answer claims no optimum for an audit to check.
        let held = r.scrutiny.audited()
            && job.weight().is_optimal()
            && len > job.floor
            && self.can_audit(job, r.worker);
        if held {
            // Hold the answer until another worker finds nothing shorter.
            self.unindex_job(r.job);
            let Some(job) = self.jobs.get_mut(&r.job) else {
                return Vec::new();
            };
            job.reporters.insert(r.worker);
            job.auditing = Some(Auditing::Answer { path, bounds });
            let Some(task) = job.now.get(r.task) else {
                return Vec::new();
            };
            let audit = AuditOf {
                reporter: r.worker,
                bound: len - 1,
                before_answer: true,
            };
            job.start_audits(vec![(task.unit, task.work.clone(), audit)]);
            return Vec::new();
        }
        let Some(mut job) = self.retire(r.job) else {
            return Vec::new();
        };
        job.stats.bounds = bounds;
        self.finish(job, JobOutcome::Solved { path })
    }

    /// A unit's task found `path` under its layer's bound. IDA* finds a path under the first
    /// bound that admits one, so its length is that bound, never less: a shorter one proves an
    /// earlier report false (the job starts over), a longer one is forged. Found early (in the
    /// next bound), it waits as the job's candidate until the current bound is exhausted
    /// everywhere.
    /// Before it is relied on, the last bound's reports of workers on probation are searched
    /// again.
    fn on_unit_answer(&mut self, r: Reported, path: Vec<Move>) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&r.job) else {
            return Vec::new();
        };
        let Some(bound) = job.layer(r.which).map(|l| l.bound) else {
            return Vec::new();
        };
        let len = path.len() as u32;
        let optimal = job.weight().is_optimal();
        if optimal && len < bound && job.lies_seen < MAX_LIE_RESTARTS {
            // A real path under a bound that every task of an earlier bound said held
            // none: one of those reports was false, not this one. Start over, auditing
            // every report, rather than drop the worker that found it.
            tracing::warn!(
                job = r.job.0,
                worker = r.worker.0,
                length = len,
                bound,
                "a path shorter than the bound: an earlier report was false; starting the job over with every report audited"
            );
            job.lies_seen += 1;
            job.reporters.insert(r.worker);
            return self.restart(r.job);
        }
        if !job.honest_length(len, bound) {
            return self.forged(
                r.job,
                r.task,
                r.worker,
                "rejected a path that does not check out",
            );
        }
        if let Which::Ahead(k) = r.which {
            // Optimal once every unit has exhausted every bound below it (AIDA*'s rule): until
            // then no task of its layer or above goes out. A path found in a lower layer
            // replaces it.
            job.task_done(r.which, r.task);
            job.reporters.insert(r.worker);
            if job.candidate.as_ref().is_none_or(|c| k < c.2) {
                job.candidate = Some((path, r.worker, k));
            }
            return Vec::new();
        }
        self.answer(r.job, r.worker, path)
    }

    /// `path`, found by `finder` under the current bound of job `job_id` with every lower
    /// bound exhausted, is its answer once the last bound's reports of workers on probation
    /// are searched again by others.
    pub(super) fn answer(
        &mut self,
        job_id: JobId,
        finder: WorkerId,
        path: Vec<Move>,
    ) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let len = path.len() as u32;
        if !job.deferred.is_empty() {
            // Before the answer is relied on: the last bound's reports of workers on
            // probation, searched again under one below it by others.
            let deferred = std::mem::take(&mut job.deferred);
            // Nothing shorter than the answer (an optimal one); nothing under its bound (a
            // weighted one, whose length is not its bound).
            let below = if job.weight().is_optimal() {
                len.saturating_sub(1)
            } else {
                job.now.bound.saturating_sub(1)
            };
            let audits = self.audits_of(job_id, deferred, |_| below, true);
            if !audits.is_empty() {
                // The bound's other tasks run on unheeded (their epoch is over).
                self.unindex_job(job_id);
            }
            if !audits.is_empty()
                && let Some(job) = self.jobs.get_mut(&job_id)
            {
                // Its tasks asked back are replaced: their answers will be stale.
                self.asks.forget(job.asked_out());
                job.drop_ahead();
                job.candidate = None;
                job.reporters.insert(finder);
                let bounds = job.stats.bounds.clone();
                job.auditing = Some(Auditing::Answer { path, bounds });
                job.start_audits(audits);
                return Vec::new();
            }
        }
        let Some(job) = self.retire(job_id) else {
            return Vec::new();
        };
        self.finish(job, JobOutcome::Solved { path })
    }

    /// Nothing under the bound in the task's subtree; `next_bound` the least f above it met.
    pub(super) fn on_exhausted(&mut self, r: Reported, next_bound: u32) -> Vec<Command> {
        if r.iterate {
            // A whole job's search ends only when it finds the goal or is stopped.
            return self.forged(r.job, r.task, r.worker, "a whole job reported exhausted");
        }
        let Some(job) = self.jobs.get_mut(&r.job) else {
            return Vec::new();
        };
        let Some(bound) = job.layer(r.which).map(|l| l.bound) else {
            return Vec::new();
        };
        // `u32::MAX` is honest: every path below the unit repeats a preferred move
        // sequence before it passes the bound, and the search skips those. Such a
        // report is audited under the job's next bound, as any other.
        if !valid_next_bound(next_bound, bound, job.weight()) {
            return self.forged(
                r.job,
                r.task,
                r.worker,
                "a next bound that is not above the bound or past the deepest search",
            );
        }
        let Some(unit) = job.searched(r.which, r.task, r.expanded, next_bound) else {
            return Vec::new();
        };
        job.reporters.insert(r.worker);
        job.claim(r.which, r.task, r.worker, None, r.scrutiny, &self.config);
        self.after_unit_task(r.job, r.which, unit)
    }

    /// After a task of `unit` of job `job_id` is done in layer `which`: a unit done with every
    /// bound it has tasks in goes on to the next (within the window), and the current bound may
    /// be over. (A task ahead changes nothing else: a bound ahead ends when it becomes the
    /// current one.)
    fn after_unit_task(&mut self, job_id: JobId, which: Which, unit: usize) -> Vec<Command> {
        let grain = self.jobs.get(&job_id).map(|j| self.grain(j));
        if let (Some(job), Some(grain)) = (self.jobs.get_mut(&job_id), grain) {
            job.go_on(unit, &self.config, grain);
        }
        if which != Which::Now {
            return Vec::new();
        }
        self.after_task(job_id)
    }

    /// The worker stopped part-way through `bound` (its node budget, or asked back), keeping
    /// what it searched: `pieces` are the rest, queued as tasks of the same unit. A whole job
    /// becomes a distributed one here.
    pub(super) fn on_split(
        &mut self,
        r: Reported,
        bound: u32,
        next_bound: u32,
        pieces: Vec<HandedBack>,
    ) -> Vec<Command> {
        if r.iterate {
            // A whole job's tasks are replaced by the pieces of its one task.
            self.unindex_job(r.job);
        }
        let Some(job) = self.jobs.get_mut(&r.job) else {
            return Vec::new();
        };
        let Some(layer_bound) = job.layer(r.which).map(|l| l.bound) else {
            return Vec::new();
        };
        let claimed_bound = if r.iterate {
            bound >= layer_bound
                && job.weight().lower_bound(bound) < npuzzle_solver::MAX_DEPTH as u32
        } else {
            bound == layer_bound
        };
        if !claimed_bound
            || !valid_next_bound(next_bound, bound, job.weight())
            || pieces.len() > 4 * npuzzle_solver::MAX_DEPTH
        {
            return self.forged(
                r.job,
                r.task,
                r.worker,
                "a split that does not fit its unit",
            );
        }
        let mut partial = r.expanded;
        let mut commands = Vec::new();
        job.reporters.insert(r.worker);
        // Its word: nothing in the part it searched at this bound (checked, with the
        // rest, by searching the whole task again) and, for a whole search, nothing
        // below the bound it reached.
        let claimed = r.iterate.then(|| bound.saturating_sub(1));
        if claimed.is_none_or(|b| b >= job.floor) {
            job.claim(r.which, r.task, r.worker, claimed, r.scrutiny, &self.config);
        }
        let mut tid = r.task;
        if r.iterate {
            partial = job.distribute_whole(r.task, bound, &r.iterations);
            tid = job.now.id(0);
            commands.push(job.progress(false));
        }
        let Some(task_predicted) = job
            .layer(r.which)
            .and_then(|l| l.get(tid))
            .map(|t| t.predicted)
        else {
            return commands;
        };
        let predicted = match job.bound_nodes.last() {
            Some(&last) if r.iterate => last as f64 * job.growth(),
            _ => task_predicted,
        };
        let remaining = (predicted - partial as f64).max(partial as f64);
        let Some(new_tasks) = job.pieces(r.which, tid, &pieces, remaining) else {
            return self.forged(
                r.job,
                tid,
                r.worker,
                "pieces that are not moves from the unit",
            );
        };
        if job.task_count() + new_tasks.len() > self.config.max_tasks_per_job {
            // Too many tasks for one job: search this one again whole, and never ask it
            // back. What it searched is lost.
            job.stats.discarded_nodes = job.stats.discarded_nodes.saturating_add(partial);
            job.requeue_unbudgeted(r.which, tid);
            return commands;
        }
        job.stats.splits += 1;
        job.stats.units += new_tasks.len();
        // The pieces first: the unit is not done with the bound while they are open.
        let ids = job.add_tasks(r.which, new_tasks);
        let Some(unit) = job.searched(r.which, tid, partial, next_bound) else {
            return commands;
        };
        if let Some(layer) = job.layer_mut(r.which) {
            layer.push_next(ids);
        }
        commands.extend(self.after_unit_task(r.job, r.which, unit));
        commands
    }

    /// The old way to stop at the node budget: the task is cut and its parts searched again;
    /// what it searched is lost.
    pub(super) fn on_budget_exceeded(&mut self, r: Reported) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&r.job) else {
            return Vec::new();
        };
        let Some(task) = job.layer(r.which).and_then(|l| l.get(r.task)) else {
            return Vec::new();
        };
        if r.iterate
            || task.unbudgeted
            || self.config.node_budget == 0
            || r.expanded < self.config.node_budget
        {
            // Only a search given a budget stops at it, and only once it has spent it.
            return self.forged(
                r.job,
                r.task,
                r.worker,
                "a unit reported over a budget it did not have or did not spend",
            );
        }
        let (unit, share, work) = (task.unit, task.predicted, task.work.clone());
        job.stats.discarded_nodes = job.stats.discarded_nodes.saturating_add(r.expanded);
        let parts = job.spec.solver.split_unit(&work, self.config.split_parts);
        if parts.len() <= 1 || job.task_count() + parts.len() > self.config.max_tasks_per_job {
            job.requeue_unbudgeted(r.which, r.task);
            return Vec::new();
        }
        let share = share / parts.len() as f64;
        job.stats.splits += 1;
        job.stats.units += parts.len();
        let tasks = parts.into_iter().map(|work| Task::new(unit, work, share));
        let ids = job.add_tasks(r.which, tasks);
        job.task_done(r.which, r.task);
        if let Some(layer) = job.layer_mut(r.which) {
            layer.push_next(ids);
        }
        Vec::new()
    }

    /// A task taken back before it started (sent ahead, not started): back to the queue, to go
    /// out next, as if never sent; nothing searched, nothing claimed, no failure counted. Not
    /// asked for, the report is a refusal like `Cancelled`.
    pub(super) fn on_not_started(&mut self, r: Reported) -> Vec<Command> {
        if !r.asked_back {
            return self.on_failed(r, Report::NotStarted);
        }
        let Some(job) = self.jobs.get_mut(&r.job) else {
            return Vec::new();
        };
        job.requeue(r.which, r.task);
        Vec::new()
    }

    /// The task was cancelled, failed or refused (`report`): it goes back to the queue, and
    /// the worker is dropped after [`max_failures`](super::SchedulerConfig::max_failures) of
    /// these in a row. A refusal for want of pattern databases strikes the worker's claim.
    pub(super) fn on_failed(&mut self, r: Reported, report: Report) -> Vec<Command> {
        let (job_id, worker) = (r.job, r.worker);
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        if let Report::Failed(e) = &report {
            tracing::warn!(job = job_id.0, worker = worker.0, error = %e, "unit failed; requeued");
        }
        let mut commands = Vec::new();
        if let Report::Unsupported(e) = &report {
            // Its hello promised more than it has: send it no more of these.
            tracing::warn!(job = job_id.0, worker = worker.0, error = %e, "unit unsupported; requeued");
            let (shape, pdb) = (
                job.spec.root.shape(),
                job.spec.heuristic == HeuristicKind::Pdb,
            );
            if pdb && self.members.revoke(worker, shape) {
                commands.push(Command::Revoked { worker, shape });
            }
        }
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return commands;
        };
        job.requeue(r.which, r.task);
        job.stats.requeued += 1;
        let limit = self.config.max_failures;
        let failing = self.members.update(worker, |w| {
            w.failures += 1;
            w.failures >= limit
        });
        if failing != Some(true) {
            return commands;
        }
        tracing::warn!(
            worker = worker.0,
            failures = limit,
            "a worker failed every unit it was given; dropping it"
        );
        commands.extend(self.drop_worker(worker, Some(DisconnectReason::Failing)));
        commands
    }
}
