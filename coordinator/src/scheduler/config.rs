//! The scheduler's tunables: [`SchedulerConfig`], its defaults (which the simulator, the tests
//! and the coordinator's flags start from), the audit share a coordinator uses where workers
//! it does not control may join ([`SchedulerConfig::DEFAULT_AUDIT_FRACTION`]), and
//! [`SchedulerConfig::validate`], which refuses settings no scheduler can work with and says
//! which and why, as raft-rs's `Config::validate` does. Every field says
//! what it bounds and why; the rules that use them live with the state they govern (budgets and
//! splitting in `job.rs`, trust in `members.rs`, leases in `workers.rs`, audits in `audit.rs`).

use std::time::Duration;

/// Tunables of the scheduler.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Expansions allowed per assignment before the unit is split (0: never split).
    pub node_budget: u64,
    /// A heavy unit is split into at least this many parts.
    pub split_parts: usize,
    /// Before each bound, a unit predicted to take more than this share of the bound's work
    /// per slot (1/32: a slot's work is cut into at least 32 units, so that the work other
    /// slots do past the answer in the last bound stays small) is split ahead of time.
    pub max_unit_share: f64,
    /// …but units predicted below this many nodes are never split ahead of time.
    pub min_split_nodes: u64,
    /// …nor below the square root of the bound's predicted nodes times this many: what one
    /// task costs the one-threaded coordinator (its assignment and its result, some 8 µs),
    /// counted in the nodes a slot searches meanwhile (some 5 M per second). A bound of `W`
    /// nodes cut into `n` tasks on many slots takes about `W / n` of a slot for its largest
    /// task plus `n` tasks' worth of the coordinator's time; `n = √(W / this)` makes that
    /// sum least, so a small bound (the first ones of a search, tens of thousands of
    /// nodes) is cut into a few dozen tasks, not searched as one, and a large one is not cut
    /// into more tasks than the coordinator can hand out (0: no such floor).
    pub task_cost_nodes: u64,
    /// A worker silent for this long is considered lost.
    pub lease_timeout: Duration,
    /// A whole search asked back for idle slots stops once it has searched this many nodes (a
    /// job that finishes within them is never cut; `u64::MAX`: never ask back anything).
    pub hand_back_after: u64,
    /// …and a task of a job already cut (a unit, or a piece of one) once it has searched this
    /// many (at most `hand_back_after`): its job is distributed already, so a short wait only
    /// splits the bound's tail sooner.
    pub cut_hand_back_after: u64,
    /// Tasks one job may have in a bound, and units it may be cut into: past it, a task that
    /// hands back pieces is searched again whole without a budget instead, so that no worker can
    /// grow a job's memory without limit.
    pub max_tasks_per_job: usize,
    /// A worker that fails, refuses or cancels this many units in a row (with no good result
    /// between them) is dropped: a broken or hostile worker must not keep bouncing units.
    pub max_failures: u32,
    /// A task asked back that has not answered within this long is being held: its worker is
    /// dropped and the task searched elsewhere (an honest worker answers within a few thousand
    /// nodes).
    pub ask_timeout: Duration,
    /// A task running longer than this is asked back even when no slot is idle (an honest one
    /// stops at its node budget well before), so that a worker that holds units while it
    /// heartbeats is found out.
    pub max_task_age: Duration,
    /// A task held by a worker without a good result yet (a newcomer) and running longer than
    /// this while slots idle is asked back at the next tick: an honest newcomer answers, and
    /// is trusted from then on; one that holds units is dropped one ask timeout later, however
    /// many of them there are. Until then a newcomer's tasks are asked back like any other's
    /// (the largest first, when slots idle): asking every one back at once cut each worker's
    /// first tasks into pieces on a large cluster, a flood of small tasks and events.
    pub newcomer_patience: Duration,
    /// The share of reports checked by another worker (0: none, 1: all): a unit reported
    /// exhausted (or handed back), and a whole search's answer, are searched again by a
    /// different worker before the job moves on, under the bound the report implies. A
    /// disagreement drops the reporter as a forger and restarts every running job it reported
    /// on. See docs/security.md for what this does and does not guarantee.
    pub audit_fraction: f64,
    /// Which reports are audited is a hash of the report's place and this seed.
    pub audit_seed: u64,
    /// While audits are on (`audit_fraction` above 0), a worker is on probation until this
    /// many answers have passed their final audit with its reports in it (0: no probation).
    /// Before a job returns an answer of length L, every report a worker on probation made in
    /// the job's last exhausted bound (or its whole search's answer) is searched again under
    /// L - 1 by another worker: the one bound where a lie would have hidden a shorter answer.
    /// A worker that lies from the start is thus caught before its first lie that matters is
    /// relied on; one that behaves until trusted is caught with `audit_fraction` per lie.
    pub probation: u32,
    /// Each worker that says it can (hello `prefetch`), once it has answered well and holds as
    /// many tasks as it has slots, is given up to one more task per slot ahead of time: it
    /// queues them and starts one the moment a slot frees, so that a slot never waits a round
    /// trip (result in, next task out) between tasks. They are still the coordinator's: when a
    /// slot elsewhere idles with nothing queued here, tasks sent ahead and not started are taken
    /// back first (the worker answers `NotStarted` at once), before any running task is asked
    /// back. Off: a worker holds at most one task per slot.
    pub prefetch: bool,
    /// A unit that has exhausted the job's bound goes on to the next bound at once (AIDA*'s
    /// asynchronous iterations, one bound ahead), on slots that would otherwise idle in the
    /// bound's tail: its early tasks are handed out only while none of the bound's is queued,
    /// and asked back after them. A path found early is returned once every unit has exhausted
    /// the bound below it. Off: a barrier per bound (every unit waits for the bound's last
    /// task).
    pub async_bounds: bool,
    /// With `async_bounds`, how many bounds past the current one a unit may go on to (1 to 3):
    /// a unit that has exhausted every bound up to one ahead goes on to the next, while the
    /// current bound's tail is still searched.
    pub bounds_ahead: usize,
    /// Units are cut ahead of a bound no finer than the whole cluster searches in this time
    /// (its nodes per second on the job over its last bound): the coordinator handles each
    /// task's assignment and result on one thread, a few microseconds each, so on many slots a
    /// task must last longer for it to keep up (40 µs of the cluster is 40 ms of a slot at
    /// 1,000 slots). On a few dozen slots this floor is mostly below `task_cost_nodes`'s
    /// and changes little.
    pub cluster_time_per_task: Duration,
    /// A job with queued tasks and none running, while no slot is free (a new search behind
    /// long ones), gets a thread at once: the job holding the most threads above its share is
    /// asked back for one (what it searched is kept, as with every hand-back), each job at
    /// most once per this slice. `None`: new jobs wait for a thread to free (a task's end, or
    /// its node budget).
    pub preempt_slice: Option<Duration>,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            node_budget: 20_000_000,
            split_parts: 32,
            max_unit_share: 1.0 / 32.0,
            min_split_nodes: 2_000,
            task_cost_nodes: 32,
            lease_timeout: Duration::from_secs(10),
            hand_back_after: 50_000,
            cut_hand_back_after: 2_000,
            max_tasks_per_job: 200_000,
            max_failures: 8,
            ask_timeout: Duration::from_secs(3),
            max_task_age: Duration::from_secs(120),
            newcomer_patience: Duration::from_secs(1),
            audit_fraction: 0.0,
            audit_seed: 0,
            probation: 1,
            prefetch: true,
            async_bounds: true,
            bounds_ahead: 1,
            cluster_time_per_task: Duration::from_micros(40),
            preempt_slice: Some(Duration::from_millis(100)),
        }
    }
}

/// A [`SchedulerConfig`] no scheduler can work with: which setting, its value, and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InvalidSchedulerConfig {
    #[error("the audit fraction is {0}: it is a share of reports, from 0 (none) to 1 (all)")]
    AuditFraction(f64),
    #[error("the largest unit share is {0}: it is a share of a slot's work, above 0 and at most 1")]
    MaxUnitShare(f64),
    #[error("units are split into {0} parts: a split needs at least 2")]
    SplitParts(usize),
    #[error(
        "a job may hold {0} tasks: it needs at least 1 to be searched at all, and at most 2^30"
    )]
    MaxTasksPerJob(usize),
    #[error("the {0} is zero: every worker would be dropped at the first tick")]
    ZeroTimeout(&'static str),
    #[error("units may go on {0} bounds ahead: from 1 to 3")]
    BoundsAhead(usize),
}

impl SchedulerConfig {
    /// The share of reports audited where workers the operator does not control may join:
    /// `npuzzle-coordinator`'s `--audit-fraction` default, and the share a coordinator whose
    /// listener accepts other hosts uses when none was set
    /// ([`crate::Config::remote_audit_fraction`]). [`SchedulerConfig::default`] audits nothing:
    /// the simulator and the tests count every node, and a cluster on loopback runs only the
    /// workers of its own machine.
    pub const DEFAULT_AUDIT_FRACTION: f64 = 0.01;

    /// Refuses settings no scheduler can work with, naming the first one found. Checked when
    /// a coordinator starts ([`crate::Config::validate`]), so a flag out of range (`--lease-secs
    /// 0`) stops it there; a `Scheduler` built directly (the simulator, tests) takes its config
    /// as given.
    pub fn validate(&self) -> Result<(), InvalidSchedulerConfig> {
        if !(0.0..=1.0).contains(&self.audit_fraction) {
            return Err(InvalidSchedulerConfig::AuditFraction(self.audit_fraction));
        }
        if !(self.max_unit_share > 0.0 && self.max_unit_share <= 1.0) {
            return Err(InvalidSchedulerConfig::MaxUnitShare(self.max_unit_share));
        }
        if self.split_parts < 2 {
            return Err(InvalidSchedulerConfig::SplitParts(self.split_parts));
        }
        if !(1..=super::task::MAX_AHEAD).contains(&self.bounds_ahead) {
            return Err(InvalidSchedulerConfig::BoundsAhead(self.bounds_ahead));
        }
        if self.max_tasks_per_job == 0 || self.max_tasks_per_job > 1 << 30 {
            return Err(InvalidSchedulerConfig::MaxTasksPerJob(
                self.max_tasks_per_job,
            ));
        }
        for (name, timeout) in [
            ("lease timeout", self.lease_timeout),
            ("ask timeout", self.ask_timeout),
            ("largest task age", self.max_task_age),
        ] {
            if timeout.is_zero() {
                return Err(InvalidSchedulerConfig::ZeroTimeout(name));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(SchedulerConfig::default().validate(), Ok(()));
        let audited = SchedulerConfig {
            audit_fraction: SchedulerConfig::DEFAULT_AUDIT_FRACTION,
            ..SchedulerConfig::default()
        };
        assert_eq!(audited.validate(), Ok(()));
    }

    #[test]
    fn settings_no_scheduler_can_work_with_are_refused_by_name() {
        let bad = [
            SchedulerConfig {
                audit_fraction: 1.5,
                ..SchedulerConfig::default()
            },
            SchedulerConfig {
                audit_fraction: f64::NAN,
                ..SchedulerConfig::default()
            },
            SchedulerConfig {
                max_unit_share: 0.0,
                ..SchedulerConfig::default()
            },
            SchedulerConfig {
                split_parts: 1,
                ..SchedulerConfig::default()
            },
            SchedulerConfig {
                max_tasks_per_job: 0,
                ..SchedulerConfig::default()
            },
            SchedulerConfig {
                lease_timeout: Duration::ZERO,
                ..SchedulerConfig::default()
            },
            SchedulerConfig {
                bounds_ahead: 4,
                ..SchedulerConfig::default()
            },
        ];
        let messages: Vec<String> = bad
            .iter()
            .map(|c| c.validate().unwrap_err().to_string())
            .collect();
        for (message, name) in messages.iter().zip([
            "audit fraction is 1.5",
            "audit fraction is NaN",
            "unit share is 0",
            "2",
            "at least 1",
            "lease timeout",
            "4 bounds ahead",
        ]) {
            assert!(message.contains(name), "{message}");
        }
    }
}
