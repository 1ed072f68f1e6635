//! The scheduler's tunables: [`SchedulerConfig`] and its defaults, in one place so that the
//! coordinator's flags, the simulator and the tests all start from the same values. Every
//! field says what it bounds and why; the rules that use them live with the state they govern
//! (budgets and splitting in `job.rs`, leases and trust in `members.rs`, audits in `audit.rs`).

use std::time::Duration;
/// Tunables of the scheduler.
#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    /// Expansions allowed per assignment before the unit is split (0: never split).
    pub node_budget: u64,
    /// A heavy unit is split into at least this many parts.
    pub split_parts: usize,
    /// Before each bound, a unit predicted to take more than this share of the bound's work
    /// per slot (1/32: a slot's work is cut into at least 32 units, so that the work other slots do past the answer in the last bound stays small) is split ahead of time.
    pub max_unit_share: f64,
    /// …but units predicted below this many nodes are never split ahead of time.
    pub min_split_nodes: u64,
    /// A worker silent for this long is considered lost.
    pub lease_timeout: Duration,
    /// A running task asked back for idle slots stops once it has searched this many nodes (a
    /// job that finishes within them is never cut; `u64::MAX`: never ask).
    pub hand_back_after: u64,
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
    /// The share of reports checked by another worker (0: none, 1: all): a unit reported
    /// exhausted (or handed back), and a whole search's answer, are searched again by a
    /// different worker before the job moves on, under the bound the report implies. A
    /// disagreement drops the reporter as a forger and restarts every running job it reported
    /// on. See README (Security and threat model) for what this does and does not guarantee.
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
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            node_budget: 20_000_000,
            split_parts: 32,
            max_unit_share: 1.0 / 32.0,
            min_split_nodes: 20_000,
            lease_timeout: Duration::from_secs(10),
            hand_back_after: 50_000,
            max_tasks_per_job: 200_000,
            max_failures: 8,
            ask_timeout: Duration::from_secs(3),
            max_task_age: Duration::from_secs(120),
            audit_fraction: 0.0,
            audit_seed: 0,
            probation: 1,
        }
    }
}
