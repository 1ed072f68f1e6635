//! The asks: which running tasks may be asked back for idle slots, which tasks sent ahead may be
//! taken back, and how many of each are out. A part that owns its data, as
//! [`Runnable`](super::runnable::Runnable) does: the scheduler changes it only through the
//! methods here, which keep its invariants.
//!
//! - `askable` ([`AskKey`], an [`AskIndex`]): the running tasks of the current epochs that may
//!   be asked back, the largest predicted first. `ahead`: as `askable`, for the tasks sent ahead
//!   and not started (taken back before any running task is asked back).
//! - `asked_out`, `revoking`: the asks out (running tasks asked back, tasks sent ahead being
//!   taken back) and not answered. Each is the count of such tasks over the current layers of
//!   the live jobs: it rises with an ask ([`Asks::asked`]), falls with its answer or its
//!   worker's loss ([`Asks::answered`]), and by a job's or a layer's asks when those tasks are
//!   replaced or their job ends ([`Asks::forget`]); it never underflows.
//!
//! A task's entry goes in when it is handed out (or, sent ahead, starts) and comes out before its
//! state changes (answered, asked back, requeued, its epoch over, its job retired).

use super::Visits;
use super::ask_index::AskIndex;
use super::job::Job;
use super::messages::{JobId, TaskId};
use super::task::{Task, TaskState, Which};

/// `x`'s place in `f64::total_cmp`'s order, as an integer: the sign bit flipped for positive
/// numbers, every bit for negative ones.
fn total_order_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// A running task's place in [`Asks`]' indexes: the current bounds' tasks before those searched
/// early, the nearest bound first (a job's next bound waits for the current one), then the
/// largest predicted first, the lowest job id, the lowest task id (the order in which tasks are
/// asked back). The first two are integers: a key compares in a few instructions, and the
/// indexes take one in and out on every assignment and result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct AskKey {
    /// The layer's rank, then the predicted size's total order inverted (two words, not a
    /// `u128`, whose alignment would make a key 48 bytes instead of 32).
    place: [u64; 2],
    pub(super) job: JobId,
    pub(super) task: TaskId,
}

/// Task `tid` of `job_id`'s place in the ask-back indexes.
pub(super) fn ask_key(job_id: JobId, which: Which, tid: TaskId, task: &Task) -> AskKey {
    ask_key_of(which.rank(), task.predicted, job_id, tid)
}

/// The key of a task of layer rank `rank` ([`Which::rank`]) predicted to take `predicted`
/// nodes.
pub(super) fn ask_key_of(rank: usize, predicted: f64, job: JobId, task: TaskId) -> AskKey {
    AskKey {
        place: [rank as u64, !total_order_bits(predicted)],
        job,
        task,
    }
}

/// Whether a task is running and not asked back: what the indexes hold (unless unbudgeted).
fn in_index(task: &Task) -> bool {
    matches!(
        task.state,
        TaskState::Running {
            asked_back: false,
            ..
        }
    )
}

/// The asks part (see the module's docs).
#[derive(Default)]
pub(super) struct Asks {
    /// Running tasks of the current epochs that may be asked back, the largest first: what
    /// idle slots ask for without looking at every task out.
    askable: AskIndex,
    /// As `askable`, for the tasks of the current epochs sent ahead and not started: taken back
    /// first when slots idle.
    ahead: AskIndex,
    /// Running tasks asked back and not yet answered.
    asked_out: usize,
    /// Tasks sent ahead being taken back, not yet answered.
    revoking: usize,
}

impl Asks {
    /// Running tasks asked back and not yet answered.
    pub(super) fn asked_out(&self) -> usize {
        self.asked_out
    }

    /// Tasks sent ahead being taken back, not yet answered.
    pub(super) fn revoking(&self) -> usize {
        self.revoking
    }

    /// Whether some task sent ahead and not started could be taken back.
    pub(super) fn has_ahead(&self) -> bool {
        !self.ahead.is_empty()
    }

    /// Indexes a running task's `key`: to be taken back if it is `queued` (sent ahead, not
    /// started), else to be asked back.
    pub(super) fn insert(&mut self, key: AskKey, queued: bool) {
        if queued {
            self.ahead.insert(key);
        } else {
            self.askable.insert(key);
        }
    }

    /// Takes `key` out of the index a task's key goes into (`ahead` if it is `queued`, sent
    /// ahead and not started), or, if it is not there, out of the other.
    fn remove(&mut self, key: &AskKey, queued: bool) {
        let (first, second) = if queued {
            (&mut self.ahead, &mut self.askable)
        } else {
            (&mut self.askable, &mut self.ahead)
        };
        if !first.remove(key) {
            second.remove(key);
        }
    }

    /// Task `tid` of `job` was just handed to a worker (or, sent ahead, has just started):
    /// indexed to be asked back (to be taken back, if sent ahead and not started), unless it
    /// can never be (searched without a budget: audits, tasks that could not be cut).
    pub(super) fn index_task(&mut self, job: &Job, tid: TaskId) {
        let (Some(which), Some(task)) = (job.which_id(tid), job.task(tid)) else {
            return;
        };
        if task.unbudgeted {
            return;
        }
        self.insert(ask_key(job.spec.id, which, tid, task), task.queued);
    }

    /// Takes task `tid` of `job` out of the indexes, if it is there. Call before its state
    /// changes.
    pub(super) fn unindex_task(&mut self, job: &Job, tid: TaskId) {
        let (Some(which), Some(task)) = (job.which_id(tid), job.task(tid)) else {
            return;
        };
        if in_index(task) {
            self.remove(&ask_key(job.spec.id, which, tid, task), task.queued);
        }
    }

    /// Takes every task of `job`'s layers out of the indexes: call before its tasks are
    /// replaced (a new bound, audits, a restart) or it is retired. Costs the job's tasks, which
    /// the bound that made them paid for already.
    pub(super) fn unindex_job(&mut self, job: &Job, visits: &Visits) {
        self.unindex_layer(job, Which::Now, visits);
        self.unindex_ahead(job, visits);
    }

    /// As [`Asks::unindex_job`], for the layers ahead of the current bound only.
    pub(super) fn unindex_ahead(&mut self, job: &Job, visits: &Visits) {
        for which in job.ahead_layers() {
            self.unindex_layer(job, which, visits);
        }
    }

    /// As [`Asks::unindex_job`], for one layer.
    pub(super) fn unindex_layer(&mut self, job: &Job, which: Which, visits: &Visits) {
        let Some(layer) = job.layer(which) else {
            return;
        };
        visits.add(layer.tasks.len());
        for (i, task) in layer.tasks.iter().enumerate() {
            if in_index(task) {
                let key = ask_key(job.spec.id, which, layer.id(i), task);
                self.remove(&key, task.queued);
            }
        }
    }

    /// Indexes the running tasks of one of `job`'s layers (taken out by
    /// [`Asks::unindex_layer`] while it changed).
    pub(super) fn index_layer(&mut self, job: &Job, which: Which, visits: &Visits) {
        let Some(layer) = job.layer(which) else {
            return;
        };
        visits.add(layer.tasks.len());
        for (i, task) in layer.tasks.iter().enumerate() {
            if in_index(task) && !task.unbudgeted {
                self.insert(ask_key(job.spec.id, which, layer.id(i), task), task.queued);
            }
        }
    }

    /// An ask went out for a task taken out of the indexes: a task sent ahead and not started
    /// (`queued`) is being taken back, a running one asked back.
    pub(super) fn asked(&mut self, queued: bool) {
        if queued {
            self.revoking += 1;
        } else {
            self.asked_out += 1;
        }
    }

    /// A task asked back (taken back, if `queued`) answered, or its worker was dropped: its ask
    /// is no longer out.
    pub(super) fn answered(&mut self, queued: bool) {
        if queued {
            debug_assert!(self.revoking > 0, "a task taken back answered twice");
            self.revoking -= 1;
        } else {
            debug_assert!(self.asked_out > 0, "a task asked back answered twice");
            self.asked_out -= 1;
        }
    }

    /// The asks out of tasks that no longer count (their layer replaced, their job over), as
    /// [`Job::asked_out`] counts them: their answers will be stale.
    pub(super) fn forget(&mut self, (asked, taken_back): (usize, usize)) {
        debug_assert!(
            asked <= self.asked_out && taken_back <= self.revoking,
            "forgot asks never counted: {asked} asked of {}, {taken_back} taken back of {}",
            self.asked_out,
            self.revoking
        );
        self.asked_out -= asked;
        self.revoking -= taken_back;
    }

    /// Up to `wanted` tasks of an index (of the tasks `sent_ahead` and not started, or of those
    /// running), in its order, that `pick` picks. The tasks stay indexed: the caller takes out
    /// those it asks.
    pub(super) fn pick<T>(
        &mut self,
        sent_ahead: bool,
        wanted: usize,
        pick: impl FnMut(&AskKey) -> Option<T>,
    ) -> Vec<T> {
        let index = if sent_ahead {
            &mut self.ahead
        } else {
            &mut self.askable
        };
        index.pick(wanted, pick)
    }

    /// The first running task that `pick` picks among the first `most_read` of them.
    pub(super) fn pick_running_within<T>(
        &mut self,
        most_read: usize,
        pick: impl FnMut(&AskKey) -> Option<T>,
    ) -> Option<T> {
        self.askable
            .pick_within(1, most_read, pick)
            .into_iter()
            .next()
    }

    /// Checks the part against the state it mirrors: the keys of the running tasks to be asked
    /// back (`askable`) and of those sent ahead to be taken back (`ahead`), and the asks out,
    /// as counted over the live jobs.
    #[cfg(debug_assertions)]
    pub(super) fn assert_mirrors(
        &self,
        askable: &std::collections::BTreeSet<AskKey>,
        ahead: &std::collections::BTreeSet<AskKey>,
        (asked_out, revoking): (usize, usize),
    ) {
        assert_eq!(askable, &self.askable.members(), "askable");
        assert_eq!(ahead, &self.ahead.members(), "tasks sent ahead");
        assert_eq!(asked_out, self.asked_out, "running tasks asked back");
        assert_eq!(revoking, self.revoking, "tasks sent ahead taken back");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sizes_bits_order_as_total_cmp_orders_the_sizes() {
        let mut sizes = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            1e300,
            2.5e6,
            2.5e6 + 1.0,
            f64::NAN,
            -f64::NAN,
        ];
        sizes.sort_by(f64::total_cmp);
        for pair in sizes.windows(2) {
            assert!(
                total_order_bits(pair[0]) < total_order_bits(pair[1]),
                "{} then {}",
                pair[0],
                pair[1]
            );
        }
    }
}
