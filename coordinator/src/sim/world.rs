//! The simulated world: virtual time, the coordinator's queue and the simulated workers.

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npuzzle_solver::{HeuristicKind, Solver};

use super::trace::{JobTrace, Outcome};
use super::{BoundSpan, SimConfig, SimReport};
use crate::scheduler::{
    Assignment, Command, JobId, JobSpec, Report, Scheduler, TaskId, UnitResult, WorkerId,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct TaskKey {
    pub(super) job: JobId,
    pub(super) epoch: u32,
    pub(super) task: TaskId,
}

pub(super) enum Event {
    /// An assignment reaches its worker.
    Start {
        worker: WorkerId,
        assignment: Assignment,
    },
    /// A running task stops (if `generation` is still its own).
    End { key: TaskKey, generation: u64 },
    /// A yield reaches the worker.
    Yield {
        worker: WorkerId,
        key: TaskKey,
        after_nodes: u64,
    },
    /// A cancel reaches the worker.
    Cancel { worker: WorkerId, job: JobId },
    /// A result reaches the coordinator.
    Result {
        worker: WorkerId,
        result: UnitResult,
    },
    /// A client's request reaches the coordinator.
    Submit { index: usize },
    /// The coordinator is done with its current call.
    CoordinatorFree,
}

/// A message for the coordinator, in its queue.
pub(super) enum Inbound {
    Result {
        worker: WorkerId,
        result: UnitResult,
    },
    Submit {
        index: usize,
    },
}

pub(super) struct Scheduled {
    pub(super) at: f64,
    pub(super) seq: u64,
    pub(super) event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    // The earliest first from a max-heap; ties in the order scheduled.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

pub(super) struct Running {
    pub(super) worker: WorkerId,
    pub(super) assignment: Assignment,
    pub(super) started: f64,
    pub(super) generation: u64,
    pub(super) outcome: Outcome,
}

pub(super) struct Sim<'a> {
    pub(super) config: &'a SimConfig,
    pub(super) jobs: Vec<JobTrace>,
    pub(super) solvers: HashMap<npuzzle_solver::Goal, Arc<Solver>>,
    pub(super) scheduler: Scheduler,
    pub(super) epoch: Instant,
    pub(super) queue: BinaryHeap<Scheduled>,
    pub(super) seq: u64,
    pub(super) now: f64,
    pub(super) running: HashMap<TaskKey, Running>,
    /// The keys of `running` by worker: what a cancel stops, without a scan of every task.
    pub(super) running_on: HashMap<WorkerId, BTreeSet<TaskKey>>,
    /// Each worker's slots, and the tasks it holds ahead of them (not started), oldest first.
    pub(super) slots_of: HashMap<WorkerId, usize>,
    pub(super) waiting: HashMap<WorkerId, VecDeque<Assignment>>,
    pub(super) generation: u64,
    pub(super) report: SimReport,
    /// Per (job, bound), its tasks so far: `report.bounds` at the end, in that order.
    pub(super) spans: BTreeMap<(u64, u32), BoundSpan>,
    /// When each task searched, if a timeline is asked for: `report.timeline` at the end.
    pub(super) intervals: Vec<(f64, f64)>,
    pub(super) next_job: usize,
    pub(super) answered: usize,
    pub(super) last_answer: f64,
    /// Job id → trace index.
    pub(super) job_trace: HashMap<JobId, usize>,
    /// Messages that reached the coordinator while it was busy, with when they arrived.
    pub(super) inbox: VecDeque<(f64, Inbound)>,
    /// Whether the coordinator is in a call (until its `CoordinatorFree`).
    pub(super) busy: bool,
}

impl Sim<'_> {
    pub(super) fn at(&mut self, delay: f64, event: Event) {
        self.seq += 1;
        self.queue.push(Scheduled {
            at: self.now + delay,
            seq: self.seq,
            event,
        });
    }

    pub(super) fn rate(&self, job: JobId) -> f64 {
        self.config
            .rate
            .unwrap_or(self.jobs[self.job_trace[&job]].trace.rate)
            .max(1.0)
    }

    pub(super) fn instant(&self) -> Instant {
        self.epoch + Duration::from_secs_f64(self.now)
    }

    /// A message reaches the coordinator: handled now if it is free, else queued behind what
    /// it is doing.
    pub(super) fn arrive(&mut self, message: Inbound) {
        self.inbox.push_back((self.now, message));
        if !self.busy {
            self.serve();
        }
    }

    /// Handles queued messages until a call occupies the coordinator (or none is left).
    pub(super) fn serve(&mut self) {
        while let Some((arrived, message)) = self.inbox.pop_front() {
            let wait = self.now - arrived;
            self.report.wait_secs += wait;
            self.report.max_wait_secs = self.report.max_wait_secs.max(wait);
            let cost = match message {
                Inbound::Submit { index } => self.submit(index),
                Inbound::Result { worker, result } => {
                    self.scheduler_call(true, |s, now| s.on_result(worker, result, now))
                }
            };
            if cost > 0.0 {
                self.busy = true;
                self.at(cost, Event::CoordinatorFree);
                return;
            }
        }
    }

    /// Calls into the scheduler, timing it, and carries out what it says once the call's cost
    /// (if `charged`) has passed. Returns that cost, in virtual seconds.
    pub(super) fn scheduler_call(
        &mut self,
        charged: bool,
        call: impl FnOnce(&mut Scheduler, Instant) -> Vec<Command>,
    ) -> f64 {
        let now = self.instant();
        let started = Instant::now();
        let commands = call(&mut self.scheduler, now);
        let measured = started.elapsed();
        self.report.scheduler_secs += measured.as_secs_f64();
        self.report.events += 1;
        self.report.commands += commands.len() as u64;
        let cost = if charged {
            self.config
                .coordinator_cost
                .charge(measured, commands.len())
        } else {
            0.0
        };
        self.report.coordinator_secs += cost;
        // What it sends leaves when the call is over.
        let latency = cost + self.config.latency.as_secs_f64();
        for command in commands {
            match command {
                Command::Assign { worker, assignment } => {
                    self.report.assignments += 1;
                    self.at(latency, Event::Start { worker, assignment });
                }
                Command::Yield {
                    worker,
                    job,
                    epoch,
                    task,
                    after_nodes,
                } => {
                    self.report.yields += 1;
                    let key = TaskKey { job, epoch, task };
                    self.at(
                        latency,
                        Event::Yield {
                            worker,
                            key,
                            after_nodes,
                        },
                    );
                }
                Command::Cancel { worker, job } => self.at(latency, Event::Cancel { worker, job }),
                Command::Finish {
                    job,
                    outcome,
                    stats,
                } => {
                    let index = self.job_trace[&job];
                    let trace = &self.jobs[index].trace;
                    match outcome {
                        crate::scheduler::JobOutcome::Solved { path }
                            if path.len() == trace.path.len() => {}
                        _ => self.report.wrong += 1,
                    }
                    self.report.nodes += stats.nodes;
                    self.report.splits += stats.splits as u64;
                    self.answered += 1;
                    // The answer reaches the client, who sends its next board.
                    self.last_answer = self.now + latency;
                    self.report.coordinator_secs_to_answer = self.report.coordinator_secs;
                    if self.next_job < self.jobs.len() {
                        let next = self.next_job;
                        self.next_job += 1;
                        let back = latency + self.config.latency.as_secs_f64();
                        self.at(back, Event::Submit { index: next });
                    }
                }
                Command::Progress { .. } | Command::Disconnect { .. } | Command::Revoked { .. } => {
                }
            }
        }
        cost
    }

    /// An assignment reaches `worker`: it starts on a free slot, else waits for one.
    pub(super) fn arrive_at_worker(&mut self, worker: WorkerId, assignment: Assignment) {
        let busy = self.running_on.get(&worker).map_or(0, BTreeSet::len);
        if busy < self.slots_of.get(&worker).copied().unwrap_or(1) {
            self.start(worker, assignment);
        } else {
            self.waiting
                .entry(worker)
                .or_default()
                .push_back(assignment);
        }
    }

    pub(super) fn start(&mut self, worker: WorkerId, assignment: Assignment) {
        let key = TaskKey {
            job: assignment.job,
            epoch: assignment.epoch,
            task: assignment.task,
        };
        let outcome = self.jobs[self.job_trace[&assignment.job]].search(&assignment, u64::MAX);
        self.generation += 1;
        let duration = outcome.cost as f64 / self.rate(assignment.job);
        let generation = self.generation;
        self.running_on.entry(worker).or_default().insert(key);
        self.running.insert(
            key,
            Running {
                worker,
                assignment,
                started: self.now,
                generation,
                outcome,
            },
        );
        self.at(duration, Event::End { key, generation });
    }

    pub(super) fn end(&mut self, key: TaskKey) {
        let Some(r) = self.running.remove(&key) else {
            return;
        };
        if let Some(keys) = self.running_on.get_mut(&r.worker) {
            keys.remove(&key);
        }
        let busy = r.outcome.cost as f64 / self.rate(key.job);
        self.report.busy_secs += busy;
        self.bound_span(key.job, r.assignment.bound, r.started, busy);
        if self.config.timeline_bins > 0 {
            self.intervals.push((r.started, r.started + busy));
        }
        let result = UnitResult {
            job: key.job,
            epoch: key.epoch,
            task: key.task,
            report: r.outcome.report,
            expanded: r.outcome.cost,
            iterations: r.outcome.iterations,
        };
        self.at(
            self.config.latency.as_secs_f64(),
            Event::Result {
                worker: r.worker,
                result,
            },
        );
        // The slot takes the next task waiting on this worker at once.
        if let Some(next) = self
            .waiting
            .get_mut(&r.worker)
            .and_then(VecDeque::pop_front)
        {
            self.start(r.worker, next);
        }
    }

    /// Counts a task of `job` under `bound` that ran `busy` seconds from `started`.
    pub(super) fn bound_span(&mut self, job: JobId, bound: u32, started: f64, busy: f64) {
        let span = self.spans.entry((job.0, bound)).or_insert(BoundSpan {
            job: job.0,
            bound,
            first_start: started,
            ..BoundSpan::default()
        });
        span.first_start = span.first_start.min(started);
        span.last_end = span.last_end.max(started + busy);
        span.tasks += 1;
        span.busy_secs += busy;
    }

    /// `worker` answers for an assignment it held without starting it.
    pub(super) fn answer_unstarted(&mut self, worker: WorkerId, a: &Assignment, report: Report) {
        let result = UnitResult {
            job: a.job,
            epoch: a.epoch,
            task: a.task,
            report,
            expanded: 0,
            iterations: Vec::new(),
        };
        self.at(
            self.config.latency.as_secs_f64(),
            Event::Result { worker, result },
        );
    }

    pub(super) fn yield_task(&mut self, worker: WorkerId, key: TaskKey, after_nodes: u64) {
        let queue = self.waiting.entry(worker).or_default();
        let unstarted = queue
            .iter()
            .position(|a| (a.job, a.epoch, a.task) == (key.job, key.epoch, key.task));
        if let Some(a) = unstarted.and_then(|i| queue.remove(i)) {
            self.report.taken_back += 1;
            self.answer_unstarted(worker, &a, Report::NotStarted);
            return;
        }
        let rate = self.rate(key.job);
        let Some(r) = self.running.get(&key) else {
            return;
        };
        let progress = ((self.now - r.started) * rate) as u64;
        let stop_at = progress.max(after_nodes);
        if stop_at >= r.outcome.cost {
            return;
        }
        let outcome = self.jobs[self.job_trace[&key.job]].search(&r.assignment, stop_at);
        self.generation += 1;
        let generation = self.generation;
        let ends = r.started + outcome.cost as f64 / rate;
        if let Some(r) = self.running.get_mut(&key) {
            r.outcome = outcome;
            r.generation = generation;
        }
        self.at((ends - self.now).max(0.0), Event::End { key, generation });
    }

    pub(super) fn cancel(&mut self, worker: WorkerId, job: JobId) {
        // Its tasks waiting here go first, so that no freed slot starts one.
        let queue = self.waiting.entry(worker).or_default();
        let (dropped, kept): (VecDeque<Assignment>, VecDeque<Assignment>) =
            queue.drain(..).partition(|a| a.job == job);
        *queue = kept;
        for a in dropped {
            self.report.cancelled_unstarted += 1;
            self.answer_unstarted(worker, &a, Report::Cancelled);
        }
        let rate = self.rate(job);
        let keys: Vec<TaskKey> = self
            .running_on
            .get(&worker)
            .into_iter()
            .flatten()
            .filter(|k| k.job == job)
            .copied()
            .collect();
        for key in keys {
            if let Some(r) = self.running.get_mut(&key) {
                let progress = ((self.now - r.started) * rate) as u64;
                r.outcome = Outcome {
                    cost: progress.min(r.outcome.cost),
                    report: Report::Cancelled,
                    iterations: Vec::new(),
                };
            }
            self.end(key);
        }
    }

    /// The client's request for trace `index`; returns what the call cost.
    pub(super) fn submit(&mut self, index: usize) -> f64 {
        let job = JobId(index as u64 + 1);
        self.job_trace.insert(job, index);
        let trace = &self.jobs[index].trace;
        let goal = trace.goal;
        let root = trace.board;
        let solver = Arc::clone(self.solvers.entry(goal).or_insert_with(|| {
            Arc::new(
                Solver::new(goal, HeuristicKind::best_for(goal.shape()))
                    .unwrap_or_else(|_| unreachable!("best_for supports its shape")),
            )
        }));
        let spec = JobSpec::whole(job, goal, HeuristicKind::Pdb, solver, root);
        self.scheduler_call(true, |s, _| s.submit(spec))
    }
}
