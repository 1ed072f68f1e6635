//! The answer cache: board key → a path and what it proves (its lower bound: the path is
//! optimal when they are equal), bounded, with hit and miss counters.
//!
//! Every suffix of an optimal path is optimal for the state where it starts, so one answer fills
//! as many entries as its path has states. A bounded answer (a path of length `L` with a proven
//! lower bound `B`, from a request with a factor) fills them too: the state `i` moves in is at
//! least `B - i` from the goal, or the start would be nearer than `B`. A request for an optimal
//! path is answered only by an optimal entry; a request with factor `w` by any entry whose path
//! is within `w` of its lower bound. Paths are replayed before they are stored.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use dashmap::DashMap;
use npuzzle_solver::{Board, BoardKey, Goal, Move, Weight};

/// A path from a state and what is proven of the state's distance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: Vec<Move>,
    /// No path from the state is shorter; `path.len()` when the path is optimal.
    pub lower_bound: u32,
}

impl Entry {
    /// Whether the path is proven optimal.
    pub fn optimal(&self) -> bool {
        self.lower_bound as usize >= self.path.len()
    }

    /// What two entries for one state prove together: the shorter path, the larger bound
    /// (both bounds hold, and neither exceeds either path's length).
    fn merged(self, other: Entry) -> Entry {
        let lower_bound = self.lower_bound.max(other.lower_bound);
        let path = if other.path.len() < self.path.len() {
            other.path
        } else {
            self.path
        };
        Entry { path, lower_bound }
    }
}

/// A bounded map from [`BoardKey`] to a path and its lower bound.
pub struct Cache {
    entries: DashMap<BoardKey, Entry>,
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

    /// A cached path for `board` within factor `within` of the optimum (an optimal one for
    /// [`Weight::OPTIMAL`]), counting a hit or a miss.
    pub fn get(&self, board: &Board, goal: &Goal, within: Weight) -> Option<Entry> {
        let found = BoardKey::new(board, goal).ok().and_then(|k| {
            let entry = self.entries.get(&k)?;
            let e = entry.value();
            (e.optimal() || within.admits(e.path.len() as u32, e.lower_bound)).then(|| e.clone())
        });
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// What the cache knows of `board`, proven optimal or not, without counting a hit or a
    /// miss: a new search's first incumbent and lower bound.
    pub fn known(&self, board: &Board, goal: &Goal) -> Option<Entry> {
        let key = BoardKey::new(board, goal).ok()?;
        self.entries.get(&key).map(|e| e.value().clone())
    }

    /// Stores an optimal `path` from `board` and every suffix of it. A path that does not replay
    /// to the goal is not stored; returns whether it was.
    pub fn insert(&self, board: &Board, goal: &Goal, path: &[Move]) -> bool {
        self.insert_bounded(board, goal, path, path.len() as u32)
    }

    /// Stores `path` from `board`, no path from which is shorter than `lower_bound`, and every
    /// suffix of it (see the module). Not stored: a path that does not replay to the goal, or
    /// a lower bound above its length (which no path can have). An entry already there keeps
    /// what both prove. Returns whether it was stored.
    pub fn insert_bounded(
        &self,
        board: &Board,
        goal: &Goal,
        path: &[Move],
        lower_bound: u32,
    ) -> bool {
        if self.capacity == 0 || lower_bound as usize > path.len() {
            return false;
        }
        if !board.verify(path, goal).is_ok_and(|v| v.reaches_goal) {
            return false;
        }
        let mut state = *board;
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..=path.len() {
            let entry = Entry {
                path: path[i..].to_vec(),
                lower_bound: lower_bound.saturating_sub(i as u32),
            };
            if let Ok(key) = BoardKey::new(&state, goal) {
                match self.entries.entry(key) {
                    dashmap::Entry::Occupied(mut there) => {
                        let old = there.get().clone();
                        there.insert(old.merged(entry));
                    }
                    dashmap::Entry::Vacant(room) => {
                        room.insert(entry);
                        order.push_back(key);
                    }
                }
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
        assert_eq!(path_of(&cache, &mid), Some(parse_moves("R").unwrap()));
        assert_eq!(path_of(&cache, goal().board()), Some(vec![]));
        let other = Board::parse("1 2 3 4 5 6 7 0 8", None).unwrap();
        assert_eq!(path_of(&cache, &other), Some(parse_moves("R").unwrap()));
        assert_eq!(
            path_of(&cache, &Board::parse("1 2 3 4 0 6 7 5 8", None).unwrap()),
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
        assert_eq!(path_of(&cache, goal().board()), Some(vec![]));
    }

    /// The optimal path cached for `board`, if any.
    fn path_of(cache: &Cache, board: &Board) -> Option<Vec<Move>> {
        cache.get(board, &goal(), Weight::OPTIMAL).map(|e| e.path)
    }

    fn within(factor: f64) -> Weight {
        Weight::new(factor).unwrap()
    }

    /// A bounded answer serves the factors its path is within of its bound, never an optimal
    /// request; its suffixes carry the bound less the moves before them; an optimal answer
    /// for the same state then serves everyone.
    #[test]
    fn bounded_answers_serve_only_the_factors_they_prove() {
        let cache = Cache::new(100);
        // "UULDDRRUULDLDRRUULDLDRRUULLDDRR" reaches the goal from this board (31 moves); say
        // it is proven at least 25 long: within 1.24, not 1.2.
        let board = Board::parse("8 6 7 2 5 4 3 0 1", None).unwrap();
        let path = parse_moves("UULDDRRUULDLDRRUULDLDRRUULLDDRR").unwrap();
        assert!(cache.insert_bounded(&board, &goal(), &path, 25));
        assert_eq!(cache.get(&board, &goal(), Weight::OPTIMAL), None);
        assert_eq!(cache.get(&board, &goal(), within(1.2)), None);
        let found = cache.get(&board, &goal(), within(1.25)).unwrap();
        assert_eq!((found.path.len(), found.lower_bound), (31, 25));
        assert!(!found.optimal());
        // Six moves in: 25 moves left, at least 19 proven.
        let mut state = board;
        for &mv in &path[..6] {
            state = state.after(mv).unwrap();
        }
        assert_eq!(cache.get(&state, &goal(), within(1.2)), None);
        let suffix = cache.get(&state, &goal(), within(1.4)).unwrap();
        assert_eq!((suffix.path.len(), suffix.lower_bound), (25, 19));
        // A bound above the path's length is a lie: refused.
        assert!(!cache.insert_bounded(&board, &goal(), &path, 32));
        // The optimal answer (31 is this board's distance) settles the state for every factor.
        assert!(cache.insert(&board, &goal(), &path));
        let found = cache.get(&board, &goal(), Weight::OPTIMAL).unwrap();
        assert!(found.optimal());
        assert_eq!(found.path, path);
        // A later bounded answer does not undo what is proven.
        assert!(cache.insert_bounded(&board, &goal(), &path, 20));
        assert!(cache.get(&board, &goal(), Weight::OPTIMAL).is_some());
    }
}
