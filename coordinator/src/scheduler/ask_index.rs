//! The ask-back index: running tasks in the order they are asked back ([`AskKey`]'s order), for
//! a set that takes a task in on every assignment and out on every result, and is read in
//! order only when slots idle.
//!
//! A `BTreeSet` did that in some 450 instructions an update, a sixth of the scheduler's at
//! 1,024 slots. Here a hash map names each task's key (the set's members: an update is one map
//! insert or remove), and a binary heap orders the keys, removed lazily: a heap entry whose key
//! the map no longer holds is stale, dropped when it comes up in a read, and the heap is
//! rebuilt from the map once stale entries outnumber the live ones (so it stays within twice
//! the members, and each update costs a constant on average).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::hash_map::Entry;

use foldhash::HashMap;

use super::asks::AskKey;
use super::messages::{JobId, TaskId};

/// Entries at most in the heap, stale included, before it is rebuilt: twice the live ones
/// plus this slack (a small index is not rebuilt on every other update).
const SLACK: usize = 64;

#[derive(Default)]
pub(super) struct AskIndex {
    /// Each indexed task's key: the members.
    keys: HashMap<(JobId, TaskId), AskKey>,
    /// Every member's key, the first to ask at the top, and stale keys not yet dropped.
    heap: BinaryHeap<Reverse<AskKey>>,
}

impl AskIndex {
    pub(super) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Indexes `key` (its task's key until now, if any, is stale).
    pub(super) fn insert(&mut self, key: AskKey) {
        self.keys.insert((key.job, key.task), key);
        self.heap.push(Reverse(key));
        self.compact();
    }

    /// Takes `key` out; false if its task is not indexed under this key.
    pub(super) fn remove(&mut self, key: &AskKey) -> bool {
        match self.keys.entry((key.job, key.task)) {
            Entry::Occupied(member) if member.get() == key => {
                member.remove();
                self.compact();
                true
            }
            _ => false,
        }
    }

    fn is_live(&self, key: &AskKey) -> bool {
        self.keys.get(&(key.job, key.task)) == Some(key)
    }

    /// Rebuilds the heap from the members once stale entries outnumber them.
    fn compact(&mut self) {
        if self.heap.len() > 2 * self.keys.len() + SLACK {
            // In the heap's own allocation: rebuilt, it grows again.
            let mut entries = std::mem::take(&mut self.heap).into_vec();
            entries.clear();
            entries.extend(self.keys.values().map(|&k| Reverse(k)));
            self.heap = BinaryHeap::from(entries);
        }
    }

    /// Goes through the members in order, calling `pick` on each, until it has picked `wanted`
    /// (or none is left); returns what it picked. The members stay indexed: the caller takes
    /// out those it acts on.
    pub(super) fn pick<T>(
        &mut self,
        wanted: usize,
        pick: impl FnMut(&AskKey) -> Option<T>,
    ) -> Vec<T> {
        self.pick_within(wanted, usize::MAX, pick)
    }

    /// [`AskIndex::pick`], reading at most `most_read` members.
    pub(super) fn pick_within<T>(
        &mut self,
        wanted: usize,
        most_read: usize,
        mut pick: impl FnMut(&AskKey) -> Option<T>,
    ) -> Vec<T> {
        let mut picked = Vec::new();
        // Members read, put back once the read is over.
        let mut read: Vec<Reverse<AskKey>> = Vec::new();
        while picked.len() < wanted && read.len() < most_read {
            let Some(Reverse(key)) = self.heap.pop() else {
                break;
            };
            let repeated = read.last().is_some_and(|&Reverse(last)| last == key);
            if repeated || !self.is_live(&key) {
                continue;
            }
            read.push(Reverse(key));
            if let Some(p) = pick(&key) {
                picked.push(p);
            }
        }
        self.heap.extend(read);
        picked
    }

    /// The members, in order (for the checks of the tests). Each is in the heap too.
    #[cfg(debug_assertions)]
    pub(super) fn members(&self) -> std::collections::BTreeSet<AskKey> {
        let in_heap: std::collections::BTreeSet<AskKey> =
            self.heap.iter().map(|&Reverse(k)| k).collect();
        let members: std::collections::BTreeSet<AskKey> = self.keys.values().copied().collect();
        assert!(members.is_subset(&in_heap), "every member is in the heap");
        members
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::asks::ask_key_of;

    fn key(size: f64, job: u64, task: u32) -> AskKey {
        ask_key_of(0, size, JobId(job), TaskId(task))
    }

    /// What a `BTreeSet` of the same updates would give, read in order.
    fn read_all(index: &mut AskIndex) -> Vec<AskKey> {
        index.pick(usize::MAX, |&k| Some(k))
    }

    #[test]
    fn an_index_reads_its_members_in_order_whatever_was_taken_out_or_replaced() {
        let mut index = AskIndex::default();
        let mut model = std::collections::BTreeSet::new();
        // Sizes in a scrambled order, tasks replaced (a new key for the same task) and taken
        // out, well past the point where the heap is rebuilt.
        for i in 0..2_000u32 {
            let size = f64::from((i * 7_919) % 1_000);
            let k = key(size, u64::from(i % 3), i % 500);
            if let Some(old) = model
                .iter()
                .find(|o: &&AskKey| (o.job, o.task) == (k.job, k.task))
            {
                let old = *old;
                assert!(index.remove(&old));
                model.remove(&old);
            }
            index.insert(k);
            model.insert(k);
            if i % 3 == 0 {
                let first = *model.iter().next().unwrap_or(&k);
                assert!(index.remove(&first));
                model.remove(&first);
                assert!(!index.remove(&first), "taken out twice");
            }
            assert!(index.heap.len() <= 2 * model.len() + SLACK + 1);
        }
        assert_eq!(index.members(), model);
        assert_eq!(
            read_all(&mut index),
            model.iter().copied().collect::<Vec<_>>()
        );
        // A read leaves every member indexed.
        assert_eq!(index.members(), model);
    }

    #[test]
    fn a_read_stops_at_what_it_wants_and_passes_over_what_it_leaves() {
        let mut index = AskIndex::default();
        for task in 0..10 {
            index.insert(key(f64::from(task), 1, task));
        }
        // The largest first; odd tasks are passed over.
        let picked = index.pick(2, |k| (k.task.0 % 2 == 0).then_some(k.task.0));
        assert_eq!(picked, vec![8, 6]);
        assert_eq!(index.members().len(), 10);
    }
}
