//! Checkpoints: what a job has proven so far, as plain data that survives the scheduler
//! ([`Checkpoint`]), and the job rebuilt from one ([`JobSpec::resume`]).
//!
//! A checkpoint holds the bound being searched (every bound below it was exhausted by every
//! task), the nodes each exhausted bound took, the job's units, the tasks of the current bound
//! not yet done (pending, running, or done but held for an audit), the least next bound the
//! done ones reported, and the claims kept for audits. Units and tasks are their move sequences
//! from the root: rebuilt by replaying them, so a checkpoint that names an illegal move, a task
//! outside its unit or a unit out of range is refused ([`BadCheckpoint`]) and the job starts
//! from its first bound instead.
//!
//! Claims are reports like any other: restored, they are audited as they would have been (a
//! sampled claim at the bound's end, a claim of a worker on probation before the answer). Their
//! reporter is gone with the old coordinator, so they are restored in the name of
//! [`RESTORED_REPORTER`], whom every restored job relies on: an audit that finds one of them
//! false starts the job over, as it would for a live liar.
//!
//! A task done but kept for an audit is saved as its claim, not as a task: the audit checks
//! its report as it would have. Running tasks are saved as not done, so a restart would lose
//! what they searched: before each checkpoint the tasks that have run for a checkpoint period
//! are asked for the rest of their bound ([`Scheduler::ask_back_for_checkpoint`](super::Scheduler::ask_back_for_checkpoint)), and what
//! they hand back is saved. A resume thus loses what was searched since the checkpoint, by
//! tasks running then. A job searched whole on one slot is cut by that same ask: until then it
//! has no checkpoint (its worker reports its bounds only when it ends or is cut).

use std::collections::HashSet;
use std::sync::Arc;

use npuzzle_solver::{WorkUnit, moves_to_string, parse_moves};

use super::SchedulerConfig;
use super::audit::Claim;
use super::job::{Job, max_next_bound, valid_next_bound};
use super::messages::{JobSpec, JobStats, WorkerId};
use super::task::{Task, TaskState, Unit, Which};

/// The reporter of every claim restored from a checkpoint: no worker has this id (the
/// coordinator numbers its members from 1).
pub const RESTORED_REPORTER: WorkerId = WorkerId(u64::MAX);

/// A job's proven progress. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// The bound being searched: no solution is shorter.
    pub bound: u32,
    /// The bounds searched so far, the current one last.
    pub bounds: Vec<u32>,
    /// Nodes of each bound exhausted (the growth per bound).
    pub bound_nodes: Vec<u64>,
    /// Nodes searched for the job up to the checkpoint (the work of tasks still running not
    /// included).
    pub nodes: u64,
    /// The least next bound reported in the current bound so far (`u32::MAX`: none).
    pub next_bound: u32,
    pub units: Vec<SavedUnit>,
    /// The current bound's tasks not yet done, in no particular order.
    pub pending: Vec<SavedTask>,
    /// Reports of the current bound sampled for an audit at its end.
    pub claims: Vec<SavedClaim>,
    /// Reports of the current bound by workers on probation.
    pub probation_claims: Vec<SavedClaim>,
    /// Reports of the last exhausted bound by workers on probation: audited before an answer.
    pub deferred: Vec<SavedClaim>,
    pub splits: usize,
    /// Traces of a lie seen: from the first on, every report is audited.
    pub lies_seen: u32,
}

/// A unit: its moves from the root (`UDLR` letters).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SavedUnit {
    pub moves: String,
    /// Nodes at the previous bound (its size prediction), and at this bound so far.
    pub last_nodes: u64,
    pub nodes: u64,
    /// Cut into other units (kept while a task of the current bound belongs to it).
    pub retired: bool,
}

/// A task of the current bound: its unit (an index into [`Checkpoint::units`]) and its moves
/// from the root, which begin with its unit's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SavedTask {
    pub unit: usize,
    pub moves: String,
}

/// A report kept for an audit: its task, and the bound to search it under (`None`: one below
/// the next bound).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SavedClaim {
    pub unit: usize,
    pub moves: String,
    pub bound: Option<u32>,
}

/// Why a checkpoint cannot be resumed from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadCheckpoint {
    #[error("bound {bound} is past the deepest search")]
    Bound { bound: u32 },
    #[error("next bound {next} cannot follow bound {bound}")]
    NextBound { next: u32, bound: u32 },
    #[error("no task left in the bound")]
    NothingPending,
    #[error("{count} tasks or units, more than a job may hold ({max})")]
    TooLarge { count: usize, max: usize },
    #[error("{what} {index}: {why}")]
    Entry {
        what: &'static str,
        index: usize,
        why: String,
    },
}

fn entry(what: &'static str, index: usize, why: impl Into<String>) -> BadCheckpoint {
    BadCheckpoint::Entry {
        what,
        index,
        why: why.into(),
    }
}

impl Job {
    /// The job's proven progress now, or `None` while there is nothing to save beyond its
    /// request: searched whole on one slot, waiting for audits, or between bounds.
    pub(super) fn checkpoint(&self) -> Option<Checkpoint> {
        if self.is_whole() || self.auditing.is_some() || self.now.open == 0 {
            return None;
        }
        // A task done but held for an audit is not searched again: its claim is audited.
        let claims = || {
            (self.now.claims.iter())
                .chain(&self.now.probation_claims)
                .chain(&self.deferred)
        };
        let pending: Vec<&Task> = (self.now.tasks.iter())
            .filter(|t| t.state != TaskState::Done)
            .collect();
        // Units saved: the live ones and those a task or claim of the bound belongs to.
        let mut keep: Vec<bool> = self.units.iter().map(|u| !u.retired).collect();
        for unit in pending
            .iter()
            .map(|t| t.unit)
            .chain(claims().map(|c| c.unit))
        {
            keep[unit] = true;
        }
        let mut renumbered = vec![usize::MAX; self.units.len()];
        let mut units = Vec::new();
        for (i, unit) in self.units.iter().enumerate().filter(|&(i, _)| keep[i]) {
            renumbered[i] = units.len();
            units.push(SavedUnit {
                moves: moves_to_string(&unit.work.prefix),
                last_nodes: unit.last_nodes,
                nodes: unit.nodes,
                retired: unit.retired,
            });
        }
        let save_claims = |claims: &[Claim]| -> Vec<SavedClaim> {
            (claims.iter())
                .map(|c| SavedClaim {
                    unit: renumbered[c.unit],
                    moves: moves_to_string(&c.work.prefix),
                    bound: c.bound,
                })
                .collect()
        };
        Some(Checkpoint {
            bound: self.now.bound,
            bounds: self.stats.bounds.clone(),
            bound_nodes: self.bound_nodes.clone(),
            nodes: self.stats.nodes,
            next_bound: self.now.next_bound,
            pending: (pending.iter())
                .map(|t| SavedTask {
                    unit: renumbered[t.unit],
                    moves: moves_to_string(&t.work.prefix),
                })
                .collect(),
            units,
            claims: save_claims(&self.now.claims),
            probation_claims: save_claims(&self.now.probation_claims),
            deferred: save_claims(&self.deferred),
            splits: self.stats.splits,
            lies_seen: self.lies_seen,
        })
    }

    /// The job `spec` resumes from `checkpoint`: its units, the current bound's tasks still to
    /// search (queued in depth-first order), its claims in the name of [`RESTORED_REPORTER`].
    /// Everything is checked against the spec's root first.
    pub(super) fn restore(
        spec: JobSpec,
        checkpoint: &Checkpoint,
        config: &SchedulerConfig,
    ) -> Result<Job, BadCheckpoint> {
        let cp = checkpoint;
        let weight = spec.solver.weight();
        if cp.bound >= max_next_bound(weight) {
            return Err(BadCheckpoint::Bound { bound: cp.bound });
        }
        if !valid_next_bound(cp.next_bound, cp.bound, weight) {
            return Err(BadCheckpoint::NextBound {
                next: cp.next_bound,
                bound: cp.bound,
            });
        }
        if cp.pending.is_empty() {
            return Err(BadCheckpoint::NothingPending);
        }
        let largest = [cp.units.len(), cp.pending.len(), cp.bounds.len()]
            .into_iter()
            .chain([cp.claims.len() + cp.probation_claims.len() + cp.deferred.len()])
            .max()
            .unwrap_or(0);
        if largest > config.max_tasks_per_job {
            return Err(BadCheckpoint::TooLarge {
                count: largest,
                max: config.max_tasks_per_job,
            });
        }
        let work_at = |what: &'static str, index: usize, moves: &str| {
            let prefix = parse_moves(moves).map_err(|e| entry(what, index, e.to_string()))?;
            let board =
                (spec.root.apply(&prefix)).map_err(|e| entry(what, index, e.to_string()))?;
            Ok::<WorkUnit, BadCheckpoint>(WorkUnit {
                board,
                g: prefix.len() as u32,
                last: prefix.last().copied(),
                prefix,
                trail: Vec::new(),
            })
        };
        let mut units = Vec::with_capacity(cp.units.len());
        for (i, saved) in cp.units.iter().enumerate() {
            let work = work_at("unit", i, &saved.moves)?;
            units.push(Unit {
                last_nodes: saved.last_nodes,
                nodes: saved.nodes,
                retired: saved.retired,
                ..Unit::new(work, &spec.solver, 0)
            });
        }
        // A task or claim lies below its unit's root.
        let within = |what: &'static str, index: usize, unit: usize, moves: &str| {
            let owner = units
                .get(unit)
                .ok_or_else(|| entry(what, index, "no such unit"))?;
            let work = work_at(what, index, moves)?;
            if !work.prefix.starts_with(&owner.work.prefix) {
                return Err(entry(what, index, "not below its unit"));
            }
            Ok(work)
        };
        let mut tasks = Vec::with_capacity(cp.pending.len());
        let mut seen = HashSet::new();
        for (i, saved) in cp.pending.iter().enumerate() {
            let work = within("task", i, saved.unit, &saved.moves)?;
            if !seen.insert(work.prefix.clone()) {
                return Err(entry("task", i, "listed twice"));
            }
            // Sizes only order the asks back: a whole unit as at its last bound, a piece less.
            let owner = &units[saved.unit];
            let whole = work.prefix.len() == owner.work.prefix.len();
            let predicted = owner.last_nodes as f64 / if whole { 1.0 } else { 8.0 };
            tasks.push(Task::new(saved.unit, work, predicted));
        }
        let restore_claims = |what: &'static str, saved: &[SavedClaim]| {
            (saved.iter().enumerate())
                .map(|(i, c)| {
                    Ok(Claim {
                        unit: c.unit,
                        work: Arc::new(within(what, i, c.unit, &c.moves)?),
                        reporter: RESTORED_REPORTER,
                        bound: c.bound,
                    })
                })
                .collect::<Result<Vec<Claim>, BadCheckpoint>>()
        };
        let claims = restore_claims("claim", &cp.claims)?;
        let probation_claims = restore_claims("probation claim", &cp.probation_claims)?;
        let deferred = restore_claims("deferred claim", &cp.deferred)?;
        let floor = (units.iter())
            .filter(|u| !u.retired)
            .map(|u| u.f)
            .min()
            .unwrap_or(0)
            .min(cp.bound);
        let mut bounds = cp.bounds.clone();
        if bounds.last() != Some(&cp.bound) {
            bounds.push(cp.bound);
        }
        let open = tasks.len();
        let mut job = Job::with_units(spec, units, cp.bound);
        job.stats = JobStats {
            nodes: cp.nodes,
            units: open,
            splits: cp.splits,
            bounds,
            ..JobStats::default()
        };
        job.bound_nodes = cp.bound_nodes.clone();
        job.now.next_bound = cp.next_bound;
        job.now.claims = claims;
        job.now.probation_claims = probation_claims;
        job.floor = floor;
        job.deferred = deferred;
        job.reporters = [RESTORED_REPORTER].into_iter().collect();
        job.lies_seen = cp.lies_seen;
        let ids = job.add_tasks(Which::Now, tasks);
        job.now.push_next(ids);
        Ok(job)
    }
}
