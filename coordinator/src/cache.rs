//! The answer cache: board key → optimal path, bounded, with hit and miss counters.
//!
//! Every suffix of an optimal path is optimal for the state where it starts, so one answer fills
//! as many entries as its path has states. Paths are replayed before they are stored.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;
use npuzzle_solver::{Board, BoardKey, Goal, Move};

/// A bounded map from [`BoardKey`] to an optimal path.
pub struct Cache {
    entries: DashMap<BoardKey, Vec<Move>>,
    /// Insertion order, oldest first: the eviction order.
    order: Mutex<VecDeque<BoardKey>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl Cache {
    /// A cache of at most `capacity` entries (0 disables caching).
    pub fn new(capacity: usize) -> Cache {
        Cache {
            entries: DashMap::new(),
            order: Mutex::new(VecDeque::new()),
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The cached optimal path for `board`, counting a hit or a miss.
    pub fn get(&self, board: &Board, goal: &Goal) -> Option<Vec<Move>> {
        let found = BoardKey::new(board, goal)
            .ok()
            .and_then(|k| self.entries.get(&k).map(|e| e.value().clone()));
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Stores an optimal `path` from `board` and every suffix of it. A path that does not replay
    /// to the goal is not stored; returns whether it was.
    pub fn insert(&self, board: &Board, goal: &Goal, path: &[Move]) -> bool {
        if self.capacity == 0 {
            return false;
        }
        if !board.verify(path, goal).is_ok_and(|v| v.reaches_goal) {
            return false;
        }
        let mut state = *board;
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..=path.len() {
            if let Ok(key) = BoardKey::new(&state, goal)
                && self.entries.insert(key, path[i..].to_vec()).is_none()
            {
                order.push_back(key);
            }
            if let Some(&mv) = path.get(i) {
                match state.after(mv) {
                    Some(next) => state = next,
                    None => break,
                }
            }
        }
        while order.len() > self.capacity {
            if let Some(old) = order.pop_front() {
                self.entries.remove(&old);
            }
        }
        true
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npuzzle_solver::parse_moves;

    fn goal() -> Goal {
        Goal::blank_last(npuzzle_solver::Shape::new(3, 3).unwrap())
    }

    #[test]
    fn stores_every_suffix_and_counts_hits() {
        let cache = Cache::new(100);
        let board = Board::parse("1 2 3 4 5 6 0 7 8", None).unwrap();
        let path = parse_moves("RR").unwrap();
        assert!(cache.insert(&board, &goal(), &path));
        assert_eq!(cache.len(), 3);
        let mid = board.after(npuzzle_solver::Move::Right).unwrap();
        assert_eq!(cache.get(&mid, &goal()), Some(parse_moves("R").unwrap()));
        assert_eq!(cache.get(goal().board(), &goal()), Some(vec![]));
        let other = Board::parse("1 2 3 4 5 6 7 0 8", None).unwrap();
        assert_eq!(cache.get(&other, &goal()), Some(parse_moves("R").unwrap()));
        assert_eq!(
            cache.get(&Board::parse("1 2 3 4 0 6 7 5 8", None).unwrap(), &goal()),
            None
        );
        assert_eq!((cache.hits(), cache.misses()), (3, 1));
    }

    #[test]
    fn refuses_paths_that_do_not_reach_the_goal() {
        let cache = Cache::new(100);
        let board = Board::parse("1 2 3 4 5 6 0 7 8", None).unwrap();
        assert!(!cache.insert(&board, &goal(), &parse_moves("R").unwrap()));
        assert!(!cache.insert(&board, &goal(), &parse_moves("L").unwrap()));
        assert!(cache.is_empty());
    }

    #[test]
    fn stays_within_its_capacity() {
        let cache = Cache::new(5);
        let board = Board::parse("8 6 7 2 5 4 3 0 1", None).unwrap();
        let path = parse_moves("UULDDRRUULDLDRRUULDLDRRUULLDDRR").unwrap();
        assert!(cache.insert(&board, &goal(), &path));
        assert_eq!(cache.len(), 5);
        // The newest entries (the path's end) survive.
        assert_eq!(cache.get(goal().board(), &goal()), Some(vec![]));
    }
}
