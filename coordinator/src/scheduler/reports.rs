//! What a worker's report does to its job: a path is replayed and, once its audits pass, ends
//! the job; an exhausted unit counts towards the bound's barrier; a split hands back pieces that
//! become tasks of the same unit; failures requeue the task and count against the worker. Any
//! report no honest worker sends drops its worker as a forger.

use npuzzle_solver::HeuristicKind;

use super::Scheduler;
use super::audit::{AuditOf, Auditing, Claim, MAX_LIE_RESTARTS, audit_pick};
use super::job::{MAX_BOUND_STEP, Task, TaskState, valid_next_bound};
use super::messages::{
    Command, DisconnectReason, JobId, JobOutcome, Report, TaskId, UnitResult, WorkerId,
};

impl Scheduler {
    /// Drops `worker` for a result no honest worker sends; its task goes back to the queue.
    pub(super) fn forged(
        &mut self,
        job_id: JobId,
        tid: usize,
        worker: WorkerId,
        what: &str,
    ) -> Vec<Command> {
        tracing::warn!(
            job = job_id.0,
            worker = worker.0,
            "{what}; dropping the worker"
        );
        if let Some(job) = self.jobs.get_mut(&job_id) {
            job.tasks[tid].state = TaskState::Pending;
            job.queue.insert(0, TaskId::at(tid));
            job.stats.requeued += 1;
        }
        self.drop_worker(worker, Some(DisconnectReason::ForgedResult))
    }

    /// A current result: move the task and the job along.
    pub(super) fn apply(&mut self, worker: WorkerId, result: UnitResult) -> Vec<Command> {
        let job_id = result.job;
        // Whether this report is checked by another worker: a sample of all reports at the
        // bound's end, and, before an answer is returned, every report of a worker on probation
        // from the last bound. Whether anyone can check it is asked when the audit starts, not
        // now: the only other worker may not have answered anything yet.
        let on_probation = self.config.audit_fraction > 0.0
            && self
                .workers
                .get(&worker)
                .is_some_and(|w| w.confirmed < self.config.probation);
        let suspect = self.jobs.get(&job_id).is_some_and(|j| j.lies_seen > 0);
        let sampled = suspect || audit_pick(&self.config, job_id, result.epoch, result.task);
        let audited = on_probation || sampled;
        // A whole search's answer is held for its audit only if someone can search it now.
        let answer_auditable = audited
            && matches!(result.report, Report::Found(_))
            && self
                .jobs
                .get(&job_id)
                .is_some_and(|j| self.can_audit(j, worker));
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let tid = result.task.index();
        job.running -= 1;
        let iterate = job.tasks[tid].iterate;
        if let Some(audit) = job.tasks[tid].audit
            && !matches!(
                result.report,
                Report::Cancelled | Report::Failed(_) | Report::Unsupported(_)
            )
        {
            return self.apply_audit(job_id, tid, worker, audit, result);
        }
        match result.report {
            Report::Found(suffix) => {
                let mut path = job.tasks[tid].work.prefix.clone();
                path.extend(suffix);
                // Replay before trusting: a wrong path, or one longer than the bound, is forged.
                // A whole job's worker raised the bound itself: its path may not be shorter
                // than the coordinator's own lower bound.
                let reaches = job.reaches_goal(&path);
                let len = path.len() as u32;
                // IDA* finds a path under the first bound that admits one, so its length is that
                // bound, never less.
                let within = if iterate {
                    // IDA* finds a path under the first bound that admits one, so its length is
                    // that bound; the bounds before it rose from the coordinator's own lower
                    // bound. (That they were exhausted is the worker's word, as any unit's
                    // `Exhausted` is.)
                    let bounds: Vec<u32> = result.iterations.iter().map(|&(b, _)| b).collect();
                    bounds.first().is_some_and(|&b| b >= job.bound)
                        && bounds
                            .windows(2)
                            .all(|w| w[0] < w[1] && w[1] - w[0] <= MAX_BOUND_STEP)
                        && bounds.last() == Some(&len)
                } else {
                    len == job.bound
                };
                if reaches && within && iterate && audited && len > job.floor && answer_auditable {
                    // Hold the answer until another worker finds nothing shorter.
                    let bounds = result.iterations.iter().map(|&(b, _)| b).collect();
                    job.reporters.insert(worker);
                    job.auditing = Some(Auditing::Answer { path, bounds });
                    let task = &job.tasks[tid];
                    let audit = AuditOf {
                        reporter: worker,
                        bound: len - 1,
                        before_answer: true,
                    };
                    job.start_audits(vec![(task.unit, task.work.clone(), audit)]);
                    return Vec::new();
                }
                if reaches && !iterate && len < job.bound && job.lies_seen < MAX_LIE_RESTARTS {
                    // A real path under a bound that every task of an earlier bound said held
                    // none: one of those reports was false, not this one. Start over, auditing
                    // every report, rather than drop the worker that found it.
                    tracing::warn!(
                        job = job_id.0,
                        worker = worker.0,
                        length = len,
                        bound = job.bound,
                        "a path shorter than the bound: an earlier report was false; starting the job over with every report audited"
                    );
                    job.lies_seen += 1;
                    job.reporters.insert(worker);
                    return self.restart(job_id);
                }
                if reaches && within && !iterate && !job.deferred.is_empty() {
                    // Before the answer is relied on: the last bound's reports of workers on
                    // probation, searched again under one below it by others.
                    let deferred = std::mem::take(&mut job.deferred);
                    let audits = self.audits_of(job_id, deferred, |_| len.saturating_sub(1), true);
                    if !audits.is_empty()
                        && let Some(job) = self.jobs.get_mut(&job_id)
                    {
                        job.reporters.insert(worker);
                        let bounds = job.stats.bounds.clone();
                        job.auditing = Some(Auditing::Answer { path, bounds });
                        job.start_audits(audits);
                        return Vec::new();
                    }
                }
                if reaches && within {
                    let Some(job) = self.retire(job_id) else {
                        return Vec::new();
                    };
                    let mut commands = self.cancel_everywhere(job_id);
                    let mut stats = job.stats;
                    if iterate {
                        stats.bounds = result.iterations.iter().map(|&(b, _)| b).collect();
                    }
                    commands.push(Command::Finish {
                        job: job_id,
                        outcome: JobOutcome::Solved { path },
                        stats,
                    });
                    return commands;
                }
                self.forged(
                    job_id,
                    tid,
                    worker,
                    "rejected a path that does not check out",
                )
            }
            Report::Exhausted { next_bound } if !iterate => {
                // `u32::MAX` is honest: every path below the unit repeats a preferred move
                // sequence before it passes the bound, and the search skips those. Such a
                // report is audited under the job's next bound, as any other.
                if !valid_next_bound(next_bound, job.bound) {
                    return self.forged(
                        job_id,
                        tid,
                        worker,
                        "a next bound that is not above the bound or past the deepest search",
                    );
                }
                let task = &mut job.tasks[tid];
                task.state = TaskState::Done;
                let unit = &mut job.units[task.unit];
                unit.nodes = unit.nodes.saturating_add(result.expanded);
                job.next_bound = job.next_bound.min(next_bound);
                job.open -= 1;
                job.reporters.insert(worker);
                if audited {
                    let task = &job.tasks[tid];
                    let claim = Claim {
                        unit: task.unit,
                        work: task.work.clone(),
                        reporter: worker,
                        bound: None,
                    };
                    job.keep_claim(claim, sampled, on_probation, &self.config);
                }
                self.after_task(job_id)
            }
            Report::Split {
                bound,
                next_bound,
                pieces,
            } => {
                let claimed_bound = if iterate {
                    bound >= job.bound && bound < npuzzle_solver::MAX_DEPTH as u32
                } else {
                    bound == job.bound
                };
                if !claimed_bound
                    || !valid_next_bound(next_bound, bound)
                    || pieces.len() > 4 * npuzzle_solver::MAX_DEPTH
                {
                    return self.forged(job_id, tid, worker, "a split that does not fit its unit");
                }
                let mut partial = result.expanded;
                let mut commands = Vec::new();
                job.reporters.insert(worker);
                // Its word: nothing in the part it searched at this bound (checked, with the
                // rest, by searching the whole task again) and, for a whole search, nothing
                // below the bound it reached.
                let claimed = iterate.then(|| bound.saturating_sub(1));
                if audited && claimed.is_none_or(|b| b >= job.floor) {
                    let task = &job.tasks[tid];
                    let claim = Claim {
                        unit: task.unit,
                        work: task.work.clone(),
                        reporter: worker,
                        bound: claimed,
                    };
                    job.keep_claim(claim, sampled, on_probation, &self.config);
                }
                if iterate {
                    // The whole job becomes a distributed one at the bound its worker reached,
                    // with what that worker measured: nodes per bound, the partial bound.
                    let done: Vec<(u32, u64)> = result
                        .iterations
                        .iter()
                        .copied()
                        .filter(|&(b, _)| b < bound)
                        .collect();
                    job.bound_nodes = done.iter().map(|&(_, n)| n).collect();
                    job.stats.bounds = done.iter().map(|&(b, _)| b).collect();
                    job.stats.bounds.push(bound);
                    partial = result
                        .iterations
                        .last()
                        .filter(|&&(b, _)| b == bound)
                        .map_or(0, |&(_, n)| n);
                    job.bound = bound;
                    job.epoch += 1;
                    let whole = job.tasks[tid].clone();
                    job.tasks = vec![Task {
                        state: TaskState::Done,
                        iterate: false,
                        ..whole
                    }];
                    job.queue.clear();
                    job.open = 1;
                    job.running = 0;
                    job.next_bound = u32::MAX;
                    commands.push(job.progress(false));
                }
                let tid = if iterate { 0 } else { tid };
                let predicted = match job.bound_nodes.last() {
                    Some(&last) if iterate => last as f64 * job.growth(),
                    _ => job.tasks[tid].predicted,
                };
                let remaining = (predicted - partial as f64).max(partial as f64);
                let Some(new_tasks) = job.pieces(tid, &pieces, remaining) else {
                    return self.forged(
                        job_id,
                        tid,
                        worker,
                        "pieces that are not moves from the unit",
                    );
                };
                if job.tasks.len() + new_tasks.len() > self.config.max_tasks_per_job {
                    // Too many tasks for one job: search this one again whole, and never ask it
                    // back. What it searched is lost.
                    job.stats.discarded_nodes = job.stats.discarded_nodes.saturating_add(partial);
                    let task = &mut job.tasks[tid];
                    task.unbudgeted = true;
                    task.state = TaskState::Pending;
                    job.queue.push(TaskId::at(tid));
                    return commands;
                }
                let task = &mut job.tasks[tid];
                task.state = TaskState::Done;
                let unit = &mut job.units[task.unit];
                unit.nodes = unit.nodes.saturating_add(partial);
                job.next_bound = job.next_bound.min(next_bound);
                job.open -= 1;
                job.stats.splits += 1;
                let first = job.tasks.len();
                job.open += new_tasks.len();
                job.stats.units += new_tasks.len();
                job.tasks.extend(new_tasks);
                let ids = TaskId::range(first, job.tasks.len()).collect();
                job.push_next(ids);
                commands.extend(self.after_task(job_id));
                commands
            }
            Report::Exhausted { .. } => {
                // A whole job's search ends only when it finds the goal or is stopped.
                self.forged(job_id, tid, worker, "a whole job reported exhausted")
            }
            Report::BudgetExceeded
                if iterate
                    || job.tasks[tid].unbudgeted
                    || self.config.node_budget == 0
                    || result.expanded < self.config.node_budget =>
            {
                // Only a search given a budget stops at it, and only once it has spent it.
                self.forged(
                    job_id,
                    tid,
                    worker,
                    "a unit reported over a budget it did not have or did not spend",
                )
            }
            Report::BudgetExceeded => {
                // The old way to stop at the budget: cut the task and search its parts again;
                // what it searched is lost.
                job.stats.discarded_nodes =
                    job.stats.discarded_nodes.saturating_add(result.expanded);
                let parts = job
                    .spec
                    .solver
                    .split_unit(&job.tasks[tid].work, self.config.split_parts);
                if parts.len() <= 1
                    || iterate
                    || job.tasks.len() + parts.len() > self.config.max_tasks_per_job
                {
                    let task = &mut job.tasks[tid];
                    task.unbudgeted = true;
                    task.state = TaskState::Pending;
                    job.queue.push(result.task);
                    return Vec::new();
                }
                job.tasks[tid].state = TaskState::Done;
                job.open -= 1;
                job.stats.splits += 1;
                let unit = job.tasks[tid].unit;
                let share = job.tasks[tid].predicted / parts.len() as f64;
                let first = job.tasks.len();
                for work in parts {
                    job.tasks.push(Task::new(unit, work, share));
                    job.open += 1;
                    job.stats.units += 1;
                }
                let ids = TaskId::range(first, job.tasks.len()).collect();
                job.push_next(ids);
                Vec::new()
            }
            Report::Cancelled | Report::Failed(_) | Report::Unsupported(_) => {
                if let Report::Failed(e) = &result.report {
                    tracing::warn!(job = job_id.0, worker = worker.0, error = %e, "unit failed; requeued");
                }
                let mut commands = Vec::new();
                if let Report::Unsupported(e) = &result.report {
                    // Its hello promised more than it has: send it no more of these.
                    tracing::warn!(job = job_id.0, worker = worker.0, error = %e, "unit unsupported; requeued");
                    let shape = job.spec.root.shape();
                    if job.spec.heuristic == HeuristicKind::Pdb
                        && let Some(w) = self.workers.get_mut(&worker)
                        && w.capabilities.pdb_shapes.remove(&shape)
                    {
                        commands.push(Command::Revoked { worker, shape });
                    }
                }
                job.tasks[tid].state = TaskState::Pending;
                job.queue.push(result.task);
                job.stats.requeued += 1;
                let limit = self.config.max_failures;
                let failing = self.workers.get_mut(&worker).is_some_and(|w| {
                    w.failures += 1;
                    w.failures >= limit
                });
                if !failing {
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
    }
}
