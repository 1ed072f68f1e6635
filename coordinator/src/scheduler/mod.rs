//! The scheduler: who searches which unit, under which bound, and when a job is done.
//!
//! A plain state machine with no I/O, no clock of its own and no gRPC (like raft-rs's core): the
//! caller feeds it events ([`Scheduler::add_worker`], [`Scheduler::submit`],
//! [`Scheduler::on_result`], [`Scheduler::tick`], …), with the time where it matters, and carries
//! out the [`Command`]s it returns. Unit tests drive it with a simulated cluster.
//!
//! # Layout
//!
//! The parts, each a struct that owns its data and keeps its invariants in its own methods
//! (raft-rs's `ProgressTracker` way): no other file writes their fields.
//! - `members.rs`: `Members`, the workers (slots, capabilities, assignments held, lease, trust)
//!   and what is counted over them: the workers with free slots (`FreeWorkers`), the slots in
//!   all and busy, the tasks sent ahead, the workers holding tables per shape, and each job's
//!   holders (who gets its cancels).
//! - `asks.rs`: `Asks`, the running tasks idle slots may ask back and the tasks sent ahead they
//!   may take back (by `AskKey`), and the asks out, counted.
//! - `ask_index.rs`: the index `Asks` keeps them in: tasks in the order they are asked back,
//!   largest first.
//! - `runnable.rs`: `Runnable`, which job a free slot serves next: clients by the threads they
//!   hold, then each client's jobs.
//! - `job.rs`: `Job`, one job's books: its units, layers and bounds, and how a bound is cut.
//! - `task.rs`: the data a job's books are made of: units, tasks, layers (one bound's tasks,
//!   queue and barrier counts).
//! - `checkpoint.rs`: a job's proven progress saved as plain data, and a job resumed from it.
//!
//! The events: `impl Scheduler` is in these five files only, each event handler taking its
//! parts through their methods (raft-rs's `step_*` way).
//! - here: [`Scheduler`], its parts, the job events ([`Scheduler::submit`],
//!   [`Scheduler::cancel`], [`Scheduler::tick`]), the queries, the bound-to-bound life of a
//!   job, and the check of every part against the state it mirrors (debug builds).
//! - `workers.rs`: a worker joins, renews its lease, and leaves (disconnected, its lease
//!   expired, dropped): its tasks go back to their queues.
//! - `reports.rs`: a worker's result ([`Scheduler::on_result`]) and what each kind of report
//!   does to its job.
//! - `dispatch.rs`: free slots paired with queued tasks, running tasks asked back for idle
//!   slots, for a new search that finds every slot busy, and before a checkpoint.
//! - `audit.rs`: audits and probation.
//!
//! The messages and settings:
//! - `messages.rs`: the events in and the commands out ([`JobSpec`], [`UnitResult`],
//!   [`Command`], …) and the ids they carry.
//! - `config.rs`: [`SchedulerConfig`], its defaults.
//! - `heuristic.rs`: which heuristic a job gets from the workers connected now, and what a
//!   worker says it can search ([`Capabilities`]).
//!
//! # How a job is searched
//!
//! 1. **Whole first.** A job (from [`JobSpec::whole`]) goes to one worker slot as a single unit
//!    that the worker searches bound after bound, from its own heuristic's value (IDA* at the
//!    root, `iterate`): a job that ends there is never cut, and costs what the serial search
//!    costs. While more jobs are runnable than slots (a batch), that is the right grain.
//! 2. **Cut only when a slot would idle.** When a worker slot is free and no unit is queued that
//!    it could search, the coordinator asks the largest running unit back ([`Command::Yield`]):
//!    once it has searched [`SchedulerConfig::hand_back_after`] nodes (a whole job) or
//!    [`SchedulerConfig::cut_hand_back_after`] (a task of a job already cut), its worker stops and
//!    hands back the rest of its bound as *pieces* (the siblings not yet tried on each level of
//!    the depth-first path where it stopped, and the node it stopped at), keeping what it
//!    searched. A unit that exceeds its node budget does the same. The pieces are queued at
//!    once, in depth-first order.
//! 3. **Units for the later bounds.** A job's *units* persist from bound to bound; pieces only
//!    live for the bound they were cut in, and their nodes add up to their unit's. At each new
//!    bound, a unit predicted (its nodes at the bound before × the job's growth per bound) to
//!    exceed its share of the bound is cut breadth-first into smaller units
//!    ([`npuzzle_solver::Solver::split_unit`]) ahead of time. The whole job's first split turns
//!    its root into such a unit, with the bound nodes its worker measured.
//!
//! # Rules (see docs/design.md, "The scheduler")
//! - **Shared bound.** Every task of a job in the distributed phase (its units, or the pieces
//!   cut from them) is searched under the job's bound. Only when every one has reported for
//!   that bound does the job move on, to the least `next_bound` reported (at least the bound +
//!   1). A solution found under bound `b` is therefore optimal: every smaller bound was
//!   exhausted everywhere. A whole job's solution is optimal by the same rule, applied by its
//!   one worker to the whole tree.
//! - **No barrier for the units that are done** ([`SchedulerConfig::async_bounds`], AIDA*'s
//!   asynchronous iterations, up to [`SchedulerConfig::bounds_ahead`] bounds ahead). A unit
//!   whose tasks have all exhausted the bound goes on at once to the bound plus the job's last
//!   step, as *early* tasks: a `Layer` ahead (`job.rs`) with an epoch of its own, handed out
//!   only while none of the bounds' before is queued, in depth-first order, and asked back after
//!   them; done with that one too, it goes on to the next layer, within the window. When the
//!   bound ends, the first layer ahead becomes the current bound's if that bound is the one
//!   guessed (units not in it get their tasks then), and every layer ahead is dropped otherwise.
//!   A path found early waits, as the job's candidate, until every bound below it is exhausted
//!   everywhere and each next bound was the one guessed, so that its layer becomes the current
//!   one: the barrier's rule, applied later. No task at or above its layer goes out meanwhile.
//! - **Workers pull.** Assignments go to free slots, the job with the fewest running tasks first
//!   (fair sharing), and within a job in the serial search's depth-first order (Korf's operator
//!   order on the prefixes). In the last bound that makes the distributed search explore what
//!   serial IDA* explores before its solution, plus what is in flight on the other slots.
//! - **Nothing searched is thrown away.** A split keeps the nodes searched; each stop expands one
//!   node (the one it stopped at) a second time. Workers that answer with the old
//!   `BUDGET_EXCEEDED` have their unit cut and searched again (their nodes are counted as
//!   discarded).
//! - **Everything is tagged** with (job, epoch, unit): each task list (a bound's, its audits',
//!   the early one) takes a new epoch, and a task id names its list, so late, duplicated or
//!   out-of-order results are recognised and dropped.
//! - **Leases.** A worker silent for longer than the lease timeout is dropped; its tasks go back
//!   to the queue. So do the tasks of a worker that disconnects.
//! - **Tasks ahead** ([`SchedulerConfig::prefetch`]). A trusted worker that says it queues them
//!   holds up to one task per slot besides those running, sent only once every free slot that
//!   can search it is filled; it starts one whenever a running task ends (the scheduler then counts it running).
//!   When slots idle with nothing queued here, tasks ahead are taken back first (answered
//!   [`Report::NotStarted`], requeued whole), before running tasks are asked back. They are
//!   tagged, requeued with a lost worker, cancelled and counted like any task held.
//! - **Cancel at once.** When a job is answered or cancelled, every worker holding one of its
//!   tasks gets a cancel command in the same step.
//! - **Capabilities.** A worker says in its hello which shapes it holds pattern databases for.
//!   Tasks of a job searched with pattern databases go only to workers with tables for the
//!   job's shape; they wait in the queue while no such worker is connected. Other jobs go
//!   anywhere.
//!
//! # Pattern databases on the workers, linear conflict here
//!
//! The coordinator keeps no tables. For its own estimates (a unit's `g + h`, hence a job's first
//! bound) it uses its [`JobSpec::solver`], which for a PDB job is linear conflict (or exact on
//! small boards), while the workers search with pattern databases. Mixing is sound because every
//! one of these heuristics is admissible:
//!
//! - A bound is only ever a claim that *no solution is cheaper*. A whole job starts at the
//!   coordinator's `g + h` at the root, which its worker raises at once to its own value. A job
//!   submitted as many units starts at the least linear-conflict `g + h` over them; a worker
//!   prunes a unit below its PDB value at the root and reports that value as its `next_bound`
//!   without searching.
//! - Every later bound is the least `next_bound` reported by the workers, i.e. the least f
//!   above the exhausted bound that their (PDB) search met, so the barrier's rule holds
//!   whichever admissible heuristic each side uses. PDBs here are not consistent (a move can
//!   change them by more than 1), which IDA* tolerates: bounds may then rise by more than 2.
//! - Splitting a unit and ordering units use no heuristic; the pieces' `f` values (the workers')
//!   only weigh their predicted sizes; checking a path replays it.
//!
//! So an answer is still optimal, and its length equals the bound it was found under.

mod ask_index;
mod asks;
mod audit;
mod checkpoint;
mod config;
mod dispatch;
mod heuristic;
mod job;
mod members;
mod messages;
mod reports;
mod runnable;
mod task;
mod workers;

use std::cell::Cell;
use std::time::Instant;

use foldhash::{HashMap, HashMapExt};

pub use checkpoint::{
    BadCheckpoint, Checkpoint, RESTORED_REPORTER, SavedClaim, SavedTask, SavedUnit,
};
pub use config::{InvalidSchedulerConfig, SchedulerConfig};
pub use heuristic::{Capabilities, HeuristicUnavailable, choose_heuristic};
pub use messages::{
    Assignment, ClientId, Command, DisconnectReason, Epoch, HandedBack, JobId, JobOutcome, JobSpec,
    JobStats, Report, TaskId, Totals, UnitResult, WorkerId,
};

use asks::Asks;
use audit::{Auditing, MAX_LIE_RESTARTS};
use job::{Grain, Job, max_bound_step};
use members::Members;
use runnable::Runnable;
use task::{Task, Unit, Which};

/// The scheduling state machine.
pub struct Scheduler {
    config: SchedulerConfig,
    /// Nodes in results for jobs already over (whole units that were running when it ended).
    late_nodes: u64,
    /// [`Totals`] of the jobs already over, plus every assignment ever made.
    totals: Totals,
    jobs: HashMap<JobId, Job>,
    /// The workers: their slots free and busy, their tables, and who holds which job's tasks.
    members: Members,
    /// Jobs with queued tasks, by client: the client holding the fewest running tasks first,
    /// then its job with the fewest running (lowest id on ties).
    runnable: Runnable,
    /// Running tasks that idle slots may ask back, tasks sent ahead that they may take back,
    /// and the asks out.
    asks: Asks,
    /// Entries its loops looked at ([`Scheduler::visits`]).
    visits: Visits,
    /// The latest time an event brought (the scheduler has no clock of its own).
    clock: Option<Instant>,
}

impl Scheduler {
    pub fn new(config: SchedulerConfig) -> Scheduler {
        Scheduler {
            config,
            late_nodes: 0,
            totals: Totals::default(),
            jobs: HashMap::new(),
            members: Members::default(),
            runnable: Runnable::default(),
            asks: Asks::default(),
            visits: Visits::default(),
            clock: None,
        }
    }

    /// How finely `job`'s units are cut now: the slots, and what the cluster searches for it in
    /// [`SchedulerConfig::cluster_time_per_task`].
    fn grain(&self, job: &Job) -> Grain {
        let floor = job.rate.map_or(0.0, |rate| {
            rate * self.config.cluster_time_per_task.as_secs_f64()
        });
        Grain {
            slots: self.slots(),
            floor,
        }
    }

    /// Puts job `id` in [`Scheduler::runnable`] at its place, or out of it.
    fn reindex(&mut self, id: JobId) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let (client, running, queued) = (job.spec.client, job.running(), job.has_queued());
        self.runnable
            .update(client, id, &mut job.runnable, running, queued);
    }

    pub fn running_jobs(&self) -> usize {
        self.jobs.len()
    }

    /// Tasks waiting for a slot, over all jobs.
    pub fn queue_depth(&self) -> usize {
        self.visits.add(self.jobs.len());
        self.jobs.values().map(|j| j.queued()).sum()
    }

    /// Nodes workers reported for jobs that were already over.
    pub fn late_nodes(&self) -> u64 {
        self.late_nodes
    }

    /// Assignments, splits and requeues since the start, over every job.
    pub fn totals(&self) -> Totals {
        let mut totals = self.totals;
        self.visits.add(self.jobs.len());
        for job in self.jobs.values() {
            totals.units_split += job.stats.splits as u64;
            totals.units_requeued += job.stats.requeued as u64;
        }
        totals
    }

    /// Forgets a job that is over, keeping its counts in the totals.
    fn retire(&mut self, job: JobId) -> Option<Job> {
        self.unindex_job(job);
        let mut job = self.jobs.remove(&job)?;
        self.runnable
            .remove(job.spec.client, job.spec.id, &mut job.runnable);
        self.visits.add(job.now.tasks.len());
        self.asks.forget(job.asked_out());
        self.totals.units_split += job.stats.splits as u64;
        self.totals.units_requeued += job.stats.requeued as u64;
        Some(job)
    }

    pub fn has_job(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// Entries of workers, jobs, units and tasks the scheduler's loops have looked at so far: a
    /// deterministic measure of its work (the same events give the same count on any machine),
    /// for tests and the simulator. Divided by the events, it should not grow with the cluster.
    pub fn visits(&self) -> u64 {
        self.visits.get()
    }

    /// Takes every task of job `id`'s layers out of the ask-back indexes ([`Asks::unindex_job`]).
    fn unindex_job(&mut self, id: JobId) {
        if let Some(job) = self.jobs.get(&id) {
            self.asks.unindex_job(job, &self.visits);
        }
    }

    /// As [`Scheduler::unindex_job`], for the layers ahead of the current bound only.
    fn unindex_ahead(&mut self, id: JobId) {
        if let Some(job) = self.jobs.get(&id) {
            self.asks.unindex_ahead(job, &self.visits);
        }
    }

    /// As [`Scheduler::unindex_job`], for one layer.
    fn unindex_layer(&mut self, id: JobId, which: Which) {
        if let Some(job) = self.jobs.get(&id) {
            self.asks.unindex_layer(job, which, &self.visits);
        }
    }

    /// Indexes the running tasks of one of job `id`'s layers ([`Asks::index_layer`]).
    fn index_layer(&mut self, id: JobId, which: Which) {
        if let Some(job) = self.jobs.get(&id) {
            self.asks.index_layer(job, which, &self.visits);
        }
    }

    /// In debug builds (the tests), checks every part against the state it mirrors, after each
    /// event of a cluster of at most 64 workers: a scan of everything, which the scheduler's
    /// tests can afford on the clusters they build and the scaling test's large ones could not.
    /// On any cluster, the asks out are tasks the workers hold.
    fn check_indexes(&self) {
        debug_assert!(
            self.asks.asked_out() + self.asks.revoking() <= self.members.assignments_out(),
            "more asks out than assignments held"
        );
        #[cfg(debug_assertions)]
        if self.members.len() <= 64 {
            self.assert_indexes();
        }
    }

    #[cfg(debug_assertions)]
    fn assert_indexes(&self) {
        use std::collections::BTreeSet;
        self.members
            .assert_consistent(|job| self.jobs.contains_key(&job));
        let mut askable = BTreeSet::new();
        let mut ahead = BTreeSet::new();
        for (wid, w) in self.members.iter() {
            for &(job_id, epoch, tid) in &w.outstanding {
                let Some(job) = self.jobs.get(&job_id) else {
                    continue;
                };
                let (Some(which), Some(task)) = (job.which(epoch, tid), job.task_at(epoch, tid))
                else {
                    continue;
                };
                let running = task.state
                    == (task::TaskState::Running {
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
                    let key = asks::ask_key(job_id, which, tid, task);
                    if task.queued {
                        ahead.insert(key);
                    } else {
                        askable.insert(key);
                    }
                }
            }
        }
        let (mut asked_out, mut revoking) = (0, 0);
        for (id, job) in &self.jobs {
            assert_eq!(
                job.running(),
                job.running_tasks(),
                "job {id}'s running tasks"
            );
            let (asked, taken_back) = job.asked_out();
            asked_out += asked;
            revoking += taken_back;
        }
        self.asks
            .assert_mirrors(&askable, &ahead, (asked_out, revoking));
    }

    /// Drops workers whose lease expired.
    pub fn tick(&mut self, now: Instant) -> Vec<Command> {
        let timeout = self.config.lease_timeout;
        // Once per tick, not per event: a scan of the workers is affordable here.
        self.visits.add(self.members.len());
        let expired = self.members.lease_expired(now, timeout);
        self.clock = Some(now);
        let mut commands = Vec::new();
        for id in expired {
            commands.extend(self.drop_worker(id, Some(DisconnectReason::LeaseExpired)));
        }
        commands.extend(self.check_held(now));
        commands.extend(self.release_unauditable());
        self.check_indexes();
        commands
    }

    /// A new job. A whole job ([`JobSpec::whole`]) starts as its root searched bound after bound
    /// from the coordinator's estimate; otherwise its units are searched from the least bound
    /// any of them admits.
    pub fn submit(&mut self, mut spec: JobSpec) -> Vec<Command> {
        if let Some(checkpoint) = spec.resume.take() {
            match Job::restore(spec.clone(), &checkpoint, &self.config) {
                Ok(job) => return self.insert_job(job),
                Err(e) => tracing::warn!(
                    job = spec.id.0,
                    error = %e,
                    "checkpoint refused; the job starts from its first bound"
                ),
            }
        }
        let units: Vec<Unit> = spec
            .units
            .iter()
            .map(|w| Unit::new(w.clone(), &spec.solver, 0))
            .collect();
        let bound = units.iter().map(|u| u.f).min().unwrap_or(0);
        let mut job = Job::with_units(spec, units, bound);
        job.mark_bound(self.clock);
        let grain = self.grain(&job);
        job.start(&self.config, grain);
        job.stats.units = job.now.tasks.len();
        self.insert_job(job)
    }

    /// A job ready to run (its first tasks queued) joins the others.
    fn insert_job(&mut self, job: Job) -> Vec<Command> {
        let id = job.spec.id;
        self.visits.add(job.units.len() + job.now.tasks.len());
        let mut commands = vec![job.progress(false)];
        self.jobs.insert(id, job);
        self.reindex(id);
        commands.extend(self.dispatch());
        commands
    }

    /// Job `id`'s proven progress, to resume it after a restart (see `checkpoint.rs`); `None`
    /// for an unknown job, one searched whole, waiting for audits, or between bounds.
    pub fn checkpoint(&self, id: JobId) -> Option<Checkpoint> {
        let Some(job) = self.jobs.get(&id) else {
            tracing::debug!(job = id.0, "no checkpoint: no such job");
            return None;
        };
        self.visits.add(job.now.tasks.len() + job.units.len());
        let checkpoint = job.checkpoint();
        if checkpoint.is_none() {
            tracing::debug!(
                job = id.0,
                open = job.now.open,
                auditing = job.auditing.is_some(),
                tasks = job.now.tasks.len(),
                "no checkpoint now"
            );
        }
        checkpoint
    }

    /// Stops a job (deadline, client gone). Returns its cancels and a `Finish` with the best
    /// proven lower bound.
    pub fn cancel(&mut self, job: JobId) -> Vec<Command> {
        match self.retire(job) {
            Some(j) => {
                let lower_bound = j.now.bound;
                let mut commands = self.finish(j, JobOutcome::Cancelled { lower_bound });
                commands.extend(self.dispatch());
                commands
            }
            None => Vec::new(),
        }
    }

    /// The end of `job`, already retired: every worker holding one of its tasks is told to
    /// stop, and the caller gets its outcome and stats.
    fn finish(&mut self, job: Job, outcome: JobOutcome) -> Vec<Command> {
        let id = job.spec.id;
        let mut commands = self.cancel_everywhere(id);
        commands.push(Command::Finish {
            job: id,
            outcome,
            stats: job.stats,
        });
        commands
    }

    /// A cancel for every worker holding an assignment of `job` (of any epoch), in worker
    /// order; the job's holders are forgotten (it is over: late results only free slots).
    fn cancel_everywhere(&mut self, job: JobId) -> Vec<Command> {
        let workers = self.members.take_holders(job);
        self.visits.add(workers.len());
        workers
            .into_iter()
            .map(|worker| Command::Cancel { worker, job })
            .collect()
    }

    /// After a task of `job_id` is done: when none of the bound's is left, move to the next bound.
    fn after_task(&mut self, job_id: JobId) -> Vec<Command> {
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        if job.now.open > 0 {
            return Vec::new();
        }
        match job.auditing.take() {
            // Every audit found nothing: the reports hold.
            Some(Auditing::Bound { next }) => return self.advance(job_id, next),
            Some(Auditing::Answer { path, bounds }) => {
                let Some(mut job) = self.retire(job_id) else {
                    return Vec::new();
                };
                // Each reporter whose reports held up to this answer's audits has served one
                // answer of its probation.
                let mut confirmed: Vec<WorkerId> = job
                    .now
                    .tasks
                    .iter()
                    .filter_map(|t| t.audit.filter(|a| a.before_answer).map(|a| a.reporter))
                    .collect();
                confirmed.sort_unstable();
                confirmed.dedup();
                for reporter in confirmed {
                    self.members
                        .update(reporter, |w| w.confirmed = w.confirmed.saturating_add(1));
                }
                job.stats.bounds = bounds;
                return self.finish(job, JobOutcome::Solved { path });
            }
            None => {}
        }
        // Barrier reached: every task exhausted this bound.
        job.mark_bound(self.clock);
        let mut commands = vec![job.progress(true)];
        self.visits.add(job.units.len());
        let mut total = 0u64;
        for unit in job.units.iter_mut().filter(|u| !u.retired) {
            unit.last_nodes = unit.nodes;
            unit.nodes = 0;
            total = total.saturating_add(unit.last_nodes);
        }
        job.bound_nodes.push(total);
        // Every task exhausted the bound, so no solution is that short: the next bound is at
        // least one more, whatever was reported, and at most MAX_BOUND_STEP more.
        let step = max_bound_step(job.weight());
        let next = job
            .now
            .next_bound
            .clamp(job.now.bound + 1, job.now.bound + step);
        let claims = std::mem::take(&mut job.now.claims);
        job.deferred = std::mem::take(&mut job.now.probation_claims);
        let audits = self.audits_of(job_id, claims, |c| c.bound.unwrap_or(next - 1), false);
        if !audits.is_empty() {
            // The next bound waits until other workers have searched these again (the
            // units that went on early go on meanwhile).
            self.unindex_layer(job_id, Which::Now);
            let Some(job) = self.jobs.get_mut(&job_id) else {
                return commands;
            };
            job.auditing = Some(Auditing::Bound { next });
            job.start_audits(audits);
            return commands;
        }
        commands.extend(self.advance(job_id, next));
        commands
    }

    /// Drops job `job_id`'s early tasks (the bounds' ahead, searched before the current one
    /// was over): those running finish unheeded (their epoch is over).
    fn drop_early(&mut self, job_id: JobId) {
        self.unindex_ahead(job_id);
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return;
        };
        job.early_nodes = 0;
        for layer in std::mem::take(&mut job.ahead) {
            self.asks.forget(layer.asked_out());
        }
        for unit in &mut job.units {
            unit.leave_ahead();
        }
        job.candidate = None;
    }

    /// Starts job `job_id` over from its first bound, keeping its units. Tasks still running
    /// for it finish unheeded (their epoch is over): no cancel, which a worker would apply to
    /// the job's new tasks too.
    fn restart(&mut self, job_id: JobId) -> Vec<Command> {
        self.unindex_layer(job_id, Which::Now);
        self.drop_early(job_id);
        let Some(grain) = self.jobs.get(&job_id).map(|j| self.grain(j)) else {
            return Vec::new();
        };
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let asked_out = job.asked_out();
        job.auditing = None;
        job.deferred.clear();
        job.reporters.clear();
        job.now.bound = job.floor;
        job.stats.bounds = vec![job.floor];
        job.start(&self.config, grain);
        self.visits.add(job.units.len() + job.now.tasks.len());
        job.stats.units += job.now.tasks.len();
        let progress = job.progress(false);
        self.asks.forget(asked_out);
        self.reindex(job_id);
        vec![progress]
    }

    /// Job `job_id`'s first layer ahead becomes its current bound's (the units that went on
    /// early keep what they searched; the others start it now; the other layers move one
    /// down), and a path found in it is its answer: every lower bound is now exhausted
    /// everywhere.
    fn promote_early(&mut self, job_id: JobId) -> Vec<Command> {
        let Some(grain) = self.jobs.get(&job_id).map(|j| self.grain(j)) else {
            return Vec::new();
        };
        // Their place in the ask-back order changes: each layer moves one down.
        self.unindex_ahead(job_id);
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        if !job.promote_layer() {
            return Vec::new();
        }
        job.stats.bounds.push(job.now.bound);
        let growth = job.growth();
        self.visits.add(job.units.len());
        // Units that had not gone on start the bound now; those done with it and with nothing
        // further ahead go on to the next.
        let mut late = Vec::new();
        let mut done = Vec::new();
        let mut still_ahead = 0u64;
        for (i, unit) in job.units.iter_mut().enumerate() {
            let went_on = unit.promote();
            if unit.retired {
                continue;
            }
            still_ahead = (unit.ahead_nodes.iter()).fold(still_ahead, |a, &n| a.saturating_add(n));
            if !went_on {
                late.push(Task::new(
                    i,
                    unit.work.clone(),
                    unit.last_nodes as f64 * growth,
                ));
            } else if unit.open == 0 && unit.ahead_open[..unit.ahead].iter().all(|&o| o == 0) {
                // Done with every bound it went on to: the window moved, it may go further.
                done.push(i);
            }
        }
        job.early_nodes = still_ahead;
        job.stats.units += late.len();
        let ids = job.add_tasks(Which::Now, late);
        job.now.push_next(ids);
        let remaining: Vec<Which> = job.ahead_layers().collect();
        self.index_layer(job_id, Which::Now);
        for which in remaining {
            self.index_layer(job_id, which);
        }
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let mut commands = vec![job.progress(false)];
        match job.candidate.take() {
            // Found in the layer now current: every bound below it is exhausted everywhere.
            Some((path, finder, 0)) => {
                commands.extend(self.answer(job_id, finder, path));
                return commands;
            }
            Some((path, finder, k)) => job.candidate = Some((path, finder, k - 1)),
            None => {}
        }
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return commands;
        };
        for i in done {
            job.go_on(i, &self.config, grain);
        }
        commands.extend(self.after_task(job_id));
        commands
    }

    /// Moves job `job_id` on to bound `next`, or ends it past the deepest search.
    fn advance(&mut self, job_id: JobId, next: u32) -> Vec<Command> {
        let Some(grain) = self.jobs.get(&job_id).map(|j| self.grain(j)) else {
            return Vec::new();
        };
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return Vec::new();
        };
        let mut commands = Vec::new();
        // The least length the bound proves (the bound itself for an optimal search).
        let past_deepest = job.weight().lower_bound(next) >= npuzzle_solver::MAX_DEPTH as u32;
        if past_deepest && job.lies_seen < MAX_LIE_RESTARTS {
            // Every board searched here is solvable (parity is checked before), and none of
            // the shapes served needs that many moves: some report on the way was false.
            tracing::warn!(
                job = job_id.0,
                bound = job.now.bound,
                "past the deepest search with a solvable board: an earlier report was false; starting the job over with every report audited"
            );
            job.lies_seen += 1;
            return self.restart(job_id);
        }
        if past_deepest {
            // No path within the deepest bound the search can hold.
            let lower_bound = job.now.bound;
            let Some(job) = self.retire(job_id) else {
                return commands;
            };
            commands.extend(self.finish(job, JobOutcome::Cancelled { lower_bound }));
            return commands;
        }
        let early = job.ahead.first().map(|e| e.bound);
        if early == Some(next) {
            return self.promote_early(job_id);
        }
        if early.is_some() {
            // The bound reported is not the one guessed: what went on early is not this
            // bound's search.
            self.drop_early(job_id);
        }
        let Some(job) = self.jobs.get_mut(&job_id) else {
            return commands;
        };
        job.now.bound = next;
        job.stats.bounds.push(next);
        job.queue_all(&self.config, grain);
        self.visits.add(job.units.len() + job.now.tasks.len());
        job.stats.units += job.now.tasks.len();
        commands.push(job.progress(false));
        commands
    }
}

/// Entries the scheduler's loops looked at, since it started (a cell: queries count too).
#[derive(Default)]
struct Visits(Cell<u64>);

impl Visits {
    fn add(&self, n: usize) {
        self.0.set(self.0.get().saturating_add(n as u64));
    }

    fn get(&self) -> u64 {
        self.0.get()
    }
}
