//! Dispatch: pairing free slots with queued tasks (the job with the fewest running tasks first,
//! its tasks in depth-first order, each to a worker that can search it), and, when slots would
//! still idle, asking running tasks back for the rest of their bound (the largest first, and
//! every task a newcomer holds, so that a worker that holds units is found out at once).

use std::collections::HashMap;

use super::Scheduler;
use super::job::TaskState;
use super::members::Worker;
use super::messages::{Assignment, Command, JobId, TaskId, WorkerId};

impl Scheduler {
    /// The next (worker, job) to pair: among the workers with free slots, the freest (lowest id
    /// on ties) that can search some job with queued tasks; for it, the job with the fewest
    /// running tasks (lowest id on ties) among those it can search.
    pub(super) fn next_pairing(&self) -> Option<(WorkerId, JobId)> {
        self.free.iter().find_map(|&(_, _, wid)| {
            let w = self.workers.get(&wid)?;
            self.runnable.iter().find_map(|&(_, jid)| {
                let j = self.jobs.get(&jid)?;
                // An audit never goes to the worker whose report it checks, nor to a newcomer.
                let next = j.queue.last().and_then(|&t| j.tasks.get(t.index()))?;
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
        while let Some((wid, job_id)) = self.next_pairing() {
            let Some(job) = self.jobs.get_mut(&job_id) else {
                break;
            };
            let Some(tid) = job.queue.pop() else { break };
            let task = &mut job.tasks[tid.index()];
            task.state = TaskState::Running {
                worker: wid,
                asked_back: false,
            };
            task.since = self.clock;
            task.asked_at = None;
            job.running += 1;
            let assignment = Assignment {
                job: job.spec.id,
                epoch: job.epoch,
                task: tid,
                work: task.work.clone(),
                goal: job.spec.goal,
                heuristic: job.spec.heuristic,
                bound: task.audit.map_or(job.bound, |a| a.bound),
                node_budget: if task.unbudgeted {
                    0
                } else {
                    self.config.node_budget
                },
                iterate: task.iterate,
            };
            let key = (assignment.job, assignment.epoch, tid);
            self.update_worker(wid, |w| w.outstanding.insert(key));
            self.totals.units_assigned += 1;
            commands.push(Command::Assign {
                worker: wid,
                assignment,
            });
            self.reindex(job_id);
        }
        commands.extend(self.ask_back());
        commands
    }

    /// Slots free now that no queued task can fill ask running tasks for the rest of their
    /// bound: the largest predicted ones first, one request per 32 idle slots (each answer
    /// brings many pieces), none twice. Every task held by a worker without a good result yet
    /// is asked back at once: an honest newcomer answers within milliseconds (and is trusted
    /// from then on); a worker that holds is found out in one ask timeout, however many of
    /// them there are.
    pub(super) fn ask_back(&mut self) -> Vec<Command> {
        if self.free.is_empty() || self.config.hand_back_after == u64::MAX {
            return Vec::new();
        }
        let idle: Vec<&Worker> = self
            .free
            .iter()
            .filter_map(|(_, _, id)| self.workers.get(id))
            .collect();
        let idle_slots: usize = idle
            .iter()
            .map(|w| w.capacity().saturating_sub(w.outstanding.len()))
            .sum();
        let wanted = idle_slots
            .div_ceil(32)
            .saturating_sub(self.asked_out)
            .max(usize::from(self.asked_out == 0));
        let wanted = if self.asked_out >= idle_slots {
            0
        } else {
            wanted
        };
        let mut newcomers = Vec::new();
        let mut searchable: HashMap<JobId, bool> = HashMap::new();
        let mut asked = 0usize;
        let mut candidates: Vec<(f64, JobId, TaskId, WorkerId)> = Vec::new();
        for (&wid, w) in &self.workers {
            for &(job_id, epoch, tid) in &w.outstanding {
                let Some(job) = self.jobs.get(&job_id) else {
                    continue;
                };
                if epoch != job.epoch {
                    continue;
                }
                let Some(task) = job.tasks.get(tid.index()) else {
                    continue;
                };
                match task.state {
                    TaskState::Running {
                        asked_back: true, ..
                    } => asked += 1,
                    TaskState::Running { .. } if !task.unbudgeted => {
                        let can = *searchable.entry(job_id).or_insert_with(|| {
                            let shape = job.spec.root.shape();
                            idle.iter()
                                .any(|w| w.capabilities.can_search(job.spec.heuristic, shape))
                        });
                        if can && w.good == 0 {
                            newcomers.push((job_id, tid, wid));
                        } else if can {
                            candidates.push((task.predicted, job_id, tid, wid));
                        }
                    }
                    _ => {}
                }
            }
        }
        debug_assert_eq!(asked, self.asked_out);
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut commands = Vec::new();
        let after_nodes = self.config.hand_back_after;
        newcomers.sort_unstable();
        for (job_id, tid, worker) in newcomers {
            commands.extend(self.ask(job_id, tid, worker, after_nodes));
        }
        for &(_, job_id, tid, worker) in candidates.iter().take(wanted) {
            commands.extend(self.ask(job_id, tid, worker, after_nodes));
        }
        commands
    }

    /// Asks `worker` for the rest of running task `tid` of `job_id` once it has searched
    /// `after_nodes` nodes, and counts the ask.
    pub(super) fn ask(
        &mut self,
        job_id: JobId,
        tid: TaskId,
        worker: WorkerId,
        after_nodes: u64,
    ) -> Option<Command> {
        let job = self.jobs.get_mut(&job_id)?;
        let task = &mut job.tasks[tid.index()];
        task.state = TaskState::Running {
            worker,
            asked_back: true,
        };
        task.asked_at = self.clock;
        job.stats.yields += 1;
        self.asked_out += 1;
        Some(Command::Yield {
            worker,
            job: job_id,
            epoch: job.epoch,
            task: tid,
            after_nodes,
        })
    }
}
