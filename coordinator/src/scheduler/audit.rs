//! Audits and probation: which reports are searched again by another worker ([`audit_pick`],
//! and every report of a worker on probation), the claims a job keeps for that, the audit
//! tasks that replace a bound's tasks while they run, and what happens when one finds a lie (the
//! liar dropped, every job that relied on it started over). An audit is the only defence
//! against a worker that reports "nothing here" falsely: the barrier makes every other lie
//! visible, this one only a second search can see.

use std::collections::HashMap;
use std::sync::Arc;

use npuzzle_solver::{Move, WorkUnit};

use super::job::Job;
use super::messages::{Command, DisconnectReason, Epoch, JobId, Report, TaskId, WorkerId};
use super::task::{Layer, Task, TaskState, Which};
use super::{RESTORED_REPORTER, Scheduler, SchedulerConfig};

/// What an audit task checks: that `reporter`'s word holds, by searching under `bound`
/// (which must find nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AuditOf {
    pub(super) reporter: WorkerId,
    pub(super) bound: u32,
    /// Checks a report before an answer is returned: passed, it counts towards the reporter's
    /// probation.
    pub(super) before_answer: bool,
}

/// A report picked for an audit, checked when its bound is over.
#[derive(Clone, Debug)]
pub(super) struct Claim {
    pub(super) unit: usize,
    pub(super) work: Arc<WorkUnit>,
    pub(super) reporter: WorkerId,
    /// The bound to search it under; `None`: one below the next bound (the report said nothing
    /// shorter than that is in its subtree).
    pub(super) bound: Option<u32>,
}

/// Audits a job waits for before it goes on.
#[derive(Clone, Debug)]
pub(super) enum Auditing {
    /// Then the next bound.
    Bound { next: u32 },
    /// Then this answer of a whole search, with the bounds its worker reported.
    Answer { path: Vec<Move>, bounds: Vec<u32> },
}

/// Restarts of a job for traces of a lie (a path shorter than its bound, a bound past the
/// deepest search); past them such a path is taken for a forgery (its worker dropped) and such
/// a bound ends the job, so that no worker can restart a job forever.
pub(super) const MAX_LIE_RESTARTS: u32 = 3;

/// Sampled claims kept per bound at most, unless every report is audited (`audit_fraction` 1,
/// which promises that no lie goes unchecked): audits add a bounded delay and memory. Claims of
/// workers on probation are all kept: at most one per task of the bound, so that they at most
/// double the job's task memory, itself capped by `max_tasks_per_job`.
const MAX_CLAIMS: usize = 64;

/// Whether the report on task `tid` of `job` in `epoch` is audited: a hash of those and the
/// seed, below [`SchedulerConfig::audit_fraction`]. A worker cannot tell which reports are.
pub(super) fn audit_pick(config: &SchedulerConfig, job: JobId, epoch: Epoch, tid: TaskId) -> bool {
    if config.audit_fraction <= 0.0 {
        return false;
    }
    // splitmix64 over the report's place.
    let mut z = config.audit_seed
        ^ job.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ u64::from(epoch).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ u64::from(tid.0).wrapping_mul(0x1656_67B1_9E37_79F9);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z as f64 / u64::MAX as f64) < config.audit_fraction
}

/// How closely a report is checked by another worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Scrutiny {
    /// Its reporter is on probation: kept for the audits before an answer.
    pub(super) on_probation: bool,
    /// Picked for the bound's end (or every report of a job that has seen a lie).
    pub(super) sampled: bool,
}

impl Scrutiny {
    pub(super) fn audited(self) -> bool {
        self.on_probation || self.sampled
    }
}

impl Job {
    /// Keeps the report on task `tid` of layer `which` by `reporter` for an audit under
    /// `bound` (`None`: one below the next bound), if it is audited at all.
    pub(super) fn claim(
        &mut self,
        which: Which,
        tid: TaskId,
        reporter: WorkerId,
        bound: Option<u32>,
        scrutiny: Scrutiny,
        config: &SchedulerConfig,
    ) {
        if !scrutiny.audited() {
            return;
        }
        let everything = config.audit_fraction >= 1.0 || self.lies_seen > 0;
        let Some(layer) = self.layer_mut(which) else {
            return;
        };
        let Some(task) = layer.get(tid) else {
            return;
        };
        let claim = Claim {
            unit: task.unit,
            work: task.work.clone(),
            reporter,
            bound,
        };
        layer.keep_claim(claim, scrutiny.sampled, scrutiny.on_probation, everything);
    }

    /// Replaces the bound's tasks by `audits`, each searched under its own bound by a worker
    /// other than its reporter, without a budget (never cut: a lie must be found whole).
    pub(super) fn start_audits(&mut self, audits: Vec<(usize, Arc<WorkUnit>, AuditOf)>) {
        let epoch = self.new_epoch();
        let bound = self.now.bound;
        self.replace_now(epoch, bound);
        let tasks: Vec<Task> = audits
            .into_iter()
            .map(|(unit, work, audit)| Task {
                unbudgeted: true,
                audit: Some(audit),
                ..Task::new(unit, work, 0.0)
            })
            .collect();
        let ids = self.add_tasks(Which::Now, tasks);
        self.now.queue = ids.into_iter().rev().collect();
        self.stats.audits += self.now.tasks.len();
    }
}

impl Layer {
    /// Keeps a report for an audit: a sampled one for the bound's end (at most
    /// [`MAX_CLAIMS`] a bound unless `everything` is audited), one of a worker on probation
    /// for the answer (at most one per task of the bound).
    pub(super) fn keep_claim(
        &mut self,
        claim: Claim,
        sampled: bool,
        on_probation: bool,
        everything: bool,
    ) {
        let room = self.claims.len() < MAX_CLAIMS || everything;
        if sampled && room {
            self.claims.push(claim);
        } else if on_probation {
            self.probation_claims.push(claim);
        }
    }
}

impl Scheduler {
    /// Whether the report by `worker` on task `tid` of job `job_id` in `epoch` is checked by
    /// another worker: a sample of all reports at the bound's end, and, before an answer is
    /// returned, every report of a worker on probation from the last bound. Whether anyone can
    /// check it is asked when the audit starts, not now: the only other worker may not have
    /// answered anything yet.
    pub(super) fn scrutiny(
        &self,
        worker: WorkerId,
        job_id: JobId,
        epoch: Epoch,
        tid: TaskId,
    ) -> Scrutiny {
        let on_probation = self.config.audit_fraction > 0.0
            && self
                .members
                .get(worker)
                .is_some_and(|w| w.confirmed < self.config.probation);
        let suspect = self.jobs.get(&job_id).is_some_and(|j| j.lies_seen > 0);
        let sampled = suspect || audit_pick(&self.config, job_id, epoch, tid);
        Scrutiny {
            on_probation,
            sampled,
        }
    }

    /// Audits of `claims` of job `job_id`, each under `bound(claim)`: those some worker other
    /// than their reporter can search. `before_answer`: they check reports an answer waits on.
    pub(super) fn audits_of(
        &self,
        job_id: JobId,
        claims: Vec<Claim>,
        bound: impl Fn(&Claim) -> u32,
        before_answer: bool,
    ) -> Vec<(usize, Arc<WorkUnit>, AuditOf)> {
        let Some(job) = self.jobs.get(&job_id) else {
            return Vec::new();
        };
        // Claims come mostly from a few reporters: ask once per reporter whether anyone else
        // can check it, not once per claim (each asks every worker).
        let mut auditable: HashMap<WorkerId, bool> = HashMap::new();
        claims
            .into_iter()
            .filter(|c| {
                *auditable
                    .entry(c.reporter)
                    .or_insert_with(|| self.can_audit(job, c.reporter))
            })
            .map(|c| {
                let audit = AuditOf {
                    reporter: c.reporter,
                    bound: bound(&c),
                    before_answer,
                };
                (c.unit, c.work, audit)
            })
            .collect()
    }

    /// Whether some connected worker other than `reporter`, with a good result already (a
    /// newcomer audits nobody), can search `job`'s units.
    pub(super) fn can_audit(&self, job: &Job, reporter: WorkerId) -> bool {
        let shape = job.spec.root.shape();
        // Once per reporter at a bound's end or an answer, not per event.
        self.visits.add(self.members.len());
        // A claim restored from a checkpoint names no live worker, and its reporter may well
        // be connected again (a worker rejoins a restarted coordinator as a new member): it is
        // audited only where two workers could search it, so that a lone worker is not made to
        // check its own reports, which it could not before the restart either.
        let needed = if reporter == RESTORED_REPORTER { 2 } else { 1 };
        let able = self.members.iter().filter(|&(id, w)| {
            id != reporter && w.good > 0 && w.capabilities.can_search(job.spec.heuristic, shape)
        });
        able.take(needed).count() == needed
    }

    /// The result of an audit task: nothing found under its bound confirms the report; a path
    /// that checks out proves the reporter lied.
    pub(super) fn apply_audit(
        &mut self,
        job_id: JobId,
        tid: TaskId,
        worker: WorkerId,
        audit: AuditOf,
        report: Report,
    ) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        match report {
            Report::Exhausted { .. } => {
                job.task_done(Which::Now, tid);
                self.after_task(job_id)
            }
            Report::Found(suffix) => {
                let Some(task) = job.now.get(tid) else {
                    return Vec::new();
                };
                let mut path = task.work.prefix.clone();
                path.extend(suffix);
                let longest = job.weight().longest_under(audit.bound);
                if !job.reaches_goal(&path) || path.len() as u32 > longest {
                    return self.forged(job_id, tid, worker, "an audit's path does not check out");
                }
                job.stats.audits_failed += 1;
                tracing::warn!(
                    job = job_id.0,
                    liar = audit.reporter.0,
                    auditor = worker.0,
                    bound = audit.bound,
                    length = path.len(),
                    "an audit found a path its reporter said was not there; dropping the reporter and starting over every job it reported on"
                );
                self.caught(audit.reporter)
            }
            // Audits are searched without a budget and never asked back: an honest worker
            // neither splits nor stops them.
            _ => self.forged(
                job_id,
                tid,
                worker,
                "an audit searched without a budget came back cut",
            ),
        }
    }

    /// `liar` was caught by an audit: every running job that relied on its reports starts over
    /// from its first bound, and it is dropped as a forger.
    pub(super) fn caught(&mut self, liar: WorkerId) -> Vec<Command> {
        self.visits.add(self.jobs.len());
        let mut jobs: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.reporters.contains(&liar))
            .map(|(&id, _)| id)
            .collect();
        jobs.sort_unstable();
        let mut commands = Vec::new();
        for id in jobs {
            commands.extend(self.restart(id));
        }
        commands.extend(self.drop_worker(liar, Some(DisconnectReason::ForgedResult)));
        commands
    }

    /// Audits that no connected worker but their reporter could search are let go (a worker
    /// cannot check itself): the job goes on on the reporter's word, as without audits.
    pub(super) fn release_unauditable(&mut self) -> Vec<Command> {
        let mut released = Vec::new();
        // Once per tick, not per event.
        self.visits.add(self.jobs.len());
        for (&job_id, job) in &self.jobs {
            if job.auditing.is_none() {
                continue;
            }
            for &tid in &job.now.queue {
                if let Some(audit) = job.now.tasks[tid.index()].audit
                    && !self.can_audit(job, audit.reporter)
                {
                    released.push((job_id, tid));
                }
            }
        }
        if released.is_empty() {
            return Vec::new();
        }
        released.sort_unstable();
        let mut commands = Vec::new();
        for (job_id, tid) in released {
            commands.extend(self.give_up_audit(job_id, tid));
        }
        commands.extend(self.dispatch());
        commands
    }

    /// Audit `tid` of `job_id` (queued or running) is done without an answer: the job goes on
    /// on its reporter's word.
    pub(super) fn give_up_audit(&mut self, job_id: JobId, tid: TaskId) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let Some(task) = job.now.get(tid) else {
            return Vec::new();
        };
        match task.state {
            TaskState::Pending => job.now.queue.retain(|&t| t != tid),
            TaskState::Running { .. } => job.task_back(),
            TaskState::Done => return Vec::new(),
        }
        job.task_done(Which::Now, tid);
        let commands = self.after_task(job_id);
        self.reindex(job_id);
        commands
    }
}
