//! Pruning duplicate move sequences (Taylor & Korf 1993): a finite automaton over the blank's
//! moves that refuses any sequence containing a *forbidden string*.
//!
//! A depth-first search that only refuses to undo the previous move still reaches most states
//! by many paths: the blank going round a 2x2 square three times restores it, and two ways
//! round a square often reach the same state. Each of those extra paths is a whole subtree
//! searched again. A string `s` of moves is forbidden when another string `s'` has the same
//! effect from any cell where `s` can be played and is preferred: shorter, or as long and
//! earlier in the search's order of directions (up, left, right, down). Replacing `s` by `s'`
//! in a shortest path gives a path no longer and smaller, so the smallest of the shortest paths
//! contains no forbidden string and survives. That is why pruning them keeps IDA* optimal, and why every bound it reports stays
//! a lower bound. As the order is the search's own, the path found is the one the search found
//! without pruning: the first optimal path in its order.
//!
//! The strings are found once, by a breadth-first walk on an unbounded grid, the blank starting
//! in the middle. `s'` is only taken when the cells its blank visits lie in the bounding box of
//! those `s` visits: on any rectangular board, wherever `s` can be played, `s'` can too. One
//! automaton therefore serves every shape.
//!
//! The automaton is Aho-Corasick's: a state is the longest suffix of the moves so far that is a
//! proper prefix of a forbidden string, and a move into a forbidden string is [`DEAD`]. It is
//! then minimised (states that refuse the same continuations merge), to 57 k states.

use std::collections::VecDeque;
#[cfg(test)]
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// Forbidden strings are looked for up to this many moves. Longer strings forbid more, but
/// the walk that finds them grows about four times every two moves (19 s for 14 moves in a
/// release build), so its result is kept in [`FORBIDDEN`] and a test checks it.
#[cfg(test)]
pub(crate) const MAX_STRING: usize = TRAIL_MOVES + 1;

/// Every forbidden string up to [`MAX_STRING`] moves, one a line, in the walk's order: letters
/// `U D L R` for the blank's direction in the search's frame (cell 0 is the blank's home).
const FORBIDDEN: &str = include_str!("forbidden-moves.txt");

const LETTERS: [char; 4] = ['U', 'D', 'L', 'R'];

fn parse(text: &str) -> Vec<Moves> {
    text.lines()
        .map(|line| {
            line.chars().fold(Moves { len: 0, code: 0 }, |s, c| {
                // The file is ours and checked by a test; a stray letter would be a build bug.
                let d = LETTERS.iter().position(|&l| l == c).unwrap_or(0);
                s.push(d)
            })
        })
        .collect()
}

#[cfg(test)]
fn to_text(strings: &[Moves]) -> String {
    let mut out = String::new();
    for s in strings {
        out.extend((0..s.len as usize).map(|i| LETTERS[s.at(i)]));
        out.push('\n');
    }
    out
}

/// How many moves before a search's root decide its automaton state: one less than the
/// longest forbidden string.
pub const TRAIL_MOVES: usize = 13;

/// What a move into a forbidden string leads to. States are below it: a row of the table is
/// eight bytes, and the whole table (57 k states) stays in cache.
pub(crate) const DEAD: u32 = u16::MAX as u32;

/// The move automaton: `next[state][direction]`, directions as in [`crate::Move::index`].
#[derive(Debug)]
pub(crate) struct MoveAutomaton {
    next: Vec<[u16; 4]>,
    /// The state of an empty path.
    start: u32,
    /// `entered[d]`: the start, except that direction `d ^ 1` (undoing `d`) is dead.
    entered: [u32; 4],
}

impl MoveAutomaton {
    /// The automaton of every forbidden string up to [`MAX_STRING`] moves ([`FORBIDDEN`]),
    /// built once.
    pub(crate) fn shared() -> &'static MoveAutomaton {
        static AUTOMATON: OnceLock<MoveAutomaton> = OnceLock::new();
        AUTOMATON.get_or_init(|| automaton(&parse(FORBIDDEN)))
    }

    /// The automaton of plain IDA*: it only refuses to undo the previous move.
    pub(crate) fn undo_only() -> &'static MoveAutomaton {
        static AUTOMATON: OnceLock<MoveAutomaton> = OnceLock::new();
        AUTOMATON.get_or_init(|| automaton(&parse("UD\nDU\nLR\nRL\n")))
    }

    /// The state of a search whose root was entered by `last` (a direction, or anything above
    /// 3 for none). Only undoing `last` is refused there: what came before the root is not
    /// known, and a unit's root may have been kept over a duplicate by a different rule.
    #[inline]
    pub(crate) fn root(&self, last: usize) -> u32 {
        if last < 4 {
            self.entered[last]
        } else {
            self.start
        }
    }

    /// The state after `moves` (the last [`TRAIL_MOVES`] of them matter), which ended with
    /// `last`. Moves that already hold a forbidden string (a unit's prefix need not avoid
    /// them) give [`MoveAutomaton::root`]'s state: a search there prunes less, never wrongly.
    pub(crate) fn after(&self, moves: &[usize], last: usize) -> u32 {
        let mut state = self.start;
        for &d in &moves[moves.len().saturating_sub(TRAIL_MOVES)..] {
            state = self.next(state, d);
            if state == DEAD {
                return self.root(last);
            }
        }
        if moves.is_empty() {
            self.root(last)
        } else {
            state
        }
    }

    #[inline(always)]
    pub(crate) fn next(&self, state: u32, direction: usize) -> u32 {
        // States come only from `root` and `next`, so the index is in range.
        self.next[state as usize][direction & 3] as u32
    }

    #[cfg(test)]
    pub(crate) fn build(max_len: usize) -> MoveAutomaton {
        let forbidden = forbidden_strings(max_len);
        automaton(&forbidden)
    }
}

/// A string of moves: `len` directions, the first in the highest bits, two bits each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Moves {
    len: u8,
    code: u32,
}

impl Moves {
    fn at(self, i: usize) -> usize {
        ((self.code >> (2 * (self.len as usize - 1 - i))) & 3) as usize
    }

    fn push(self, direction: usize) -> Moves {
        Moves {
            len: self.len + 1,
            code: (self.code << 2) | direction as u32,
        }
    }

    #[cfg(test)]
    fn suffix(self, len: usize) -> Moves {
        let mask = if len >= 16 {
            u32::MAX
        } else {
            (1u32 << (2 * len)) - 1
        };
        Moves {
            len: len as u8,
            code: self.code & mask,
        }
    }
}

#[cfg(test)]
/// The cells a string's blank visits, as offsets from where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Box2 {
    min_x: i8,
    max_x: i8,
    min_y: i8,
    max_y: i8,
}

#[cfg(test)]
impl Box2 {
    fn within(&self, outer: &Box2) -> bool {
        self.min_x >= outer.min_x
            && self.max_x <= outer.max_x
            && self.min_y >= outer.min_y
            && self.max_y <= outer.max_y
    }
}

#[cfg(test)]
/// A grid wide enough that no string of `max_len` moves from its middle reaches an edge: cell
/// `c` holds the tile that started on cell `board[c]`.
struct Grid {
    side: usize,
    board: Vec<u16>,
    touched: Vec<usize>,
}

#[cfg(test)]
impl Grid {
    fn new(max_len: usize) -> Grid {
        let side = 2 * max_len + 3;
        Grid {
            side,
            board: (0..(side * side) as u16).collect(),
            touched: Vec::new(),
        }
    }

    fn centre(&self) -> usize {
        self.side * (self.side / 2) + self.side / 2
    }

    /// Plays `s` from the middle: the state it reaches (as the cells that changed, sorted) and
    /// its box. The grid is restored afterwards.
    fn play(&mut self, s: Moves) -> (Vec<(u16, u16)>, Box2) {
        let side = self.side as isize;
        let mut blank = self.centre() as isize;
        let (mut x, mut y) = (0i8, 0i8);
        let mut bbox = Box2 {
            min_x: 0,
            max_x: 0,
            min_y: 0,
            max_y: 0,
        };
        self.touched.push(blank as usize);
        for i in 0..s.len as usize {
            let (to, dx, dy) = match s.at(i) {
                0 => (blank - side, 0, -1),
                1 => (blank + side, 0, 1),
                2 => (blank - 1, -1, 0),
                _ => (blank + 1, 1, 0),
            };
            self.board.swap(blank as usize, to as usize);
            self.touched.push(to as usize);
            blank = to;
            x += dx;
            y += dy;
            bbox.min_x = bbox.min_x.min(x);
            bbox.max_x = bbox.max_x.max(x);
            bbox.min_y = bbox.min_y.min(y);
            bbox.max_y = bbox.max_y.max(y);
        }
        let mut changed: Vec<(u16, u16)> = self
            .touched
            .iter()
            .filter(|&&c| self.board[c] as usize != c)
            .map(|&c| (c as u16, self.board[c]))
            .collect();
        changed.sort_unstable();
        changed.dedup();
        for &c in &self.touched {
            self.board[c] = c as u16;
        }
        self.touched.clear();
        (changed, bbox)
    }
}

#[cfg(test)]
/// Every forbidden string of up to `max_len` moves none of whose proper substrings is one.
fn forbidden_strings(max_len: usize) -> Vec<Moves> {
    let mut grid = Grid::new(max_len);
    // Each state met so far and the strings kept for it, in the order they were met (shorter
    // first, then smaller): one is preferred to any string met later.
    let mut seen: HashMap<Vec<(u16, u16)>, Vec<Box2>> = HashMap::new();
    let mut forbidden: HashSet<Moves> = HashSet::new();
    let mut found = Vec::new();
    let empty = Moves { len: 0, code: 0 };
    let (state, bbox) = grid.play(empty);
    seen.insert(state, vec![bbox]);
    let mut level = vec![empty];
    for len in 1..=max_len {
        let mut next_level = Vec::new();
        // Parents in order and directions in order: the children come in order too.
        for &parent in &level {
            for direction in crate::moves::Move::SEARCH_ORDER.map(crate::moves::Move::index) {
                let s = parent.push(direction);
                if (2..len).any(|k| forbidden.contains(&s.suffix(k))) {
                    continue;
                }
                let (state, bbox) = grid.play(s);
                let kept = seen.entry(state).or_default();
                if kept.iter().any(|b| b.within(&bbox)) {
                    forbidden.insert(s);
                    found.push(s);
                } else {
                    kept.push(bbox);
                    next_level.push(s);
                }
            }
        }
        level = next_level;
    }
    found
}

/// Aho-Corasick over `forbidden`, with the four root states of [`MoveAutomaton::root`].
fn automaton(forbidden: &[Moves]) -> MoveAutomaton {
    const NONE: u32 = u32::MAX;
    let mut children: Vec<[u32; 4]> = vec![[NONE; 4]];
    let mut terminal = vec![false];
    for &s in forbidden {
        let mut node = 0usize;
        for i in 0..s.len as usize {
            let d = s.at(i);
            if children[node][d] == NONE {
                children[node][d] = children.len() as u32;
                children.push([NONE; 4]);
                terminal.push(false);
            }
            node = children[node][d] as usize;
        }
        terminal[node] = true;
    }
    let n = children.len();
    let mut fail = vec![0u32; n];
    let mut goto = vec![[0u32; 4]; n];
    let mut dead = terminal.clone();
    let mut queue = VecDeque::new();
    for d in 0..4 {
        match children[0][d] {
            NONE => goto[0][d] = 0,
            c => {
                goto[0][d] = c;
                fail[c as usize] = 0;
                queue.push_back(c as usize);
            }
        }
    }
    while let Some(node) = queue.pop_front() {
        dead[node] = dead[node] || dead[fail[node] as usize];
        for d in 0..4 {
            match children[node][d] {
                NONE => goto[node][d] = goto[fail[node] as usize][d],
                c => {
                    fail[c as usize] = goto[fail[node] as usize][d];
                    goto[node][d] = c;
                    queue.push_back(c as usize);
                }
            }
        }
    }
    // Number the live states; a move into a dead one is GONE (until `minimal` makes it DEAD).
    let mut id = vec![GONE; n];
    let mut live = 0u32;
    for node in 0..n {
        if !dead[node] {
            id[node] = live;
            live += 1;
        }
    }
    let mut next: Vec<[u32; 4]> = (0..n)
        .filter(|&node| !dead[node])
        .map(|node| goto[node].map(|t| id[t as usize]))
        .collect();
    let start = id[0];
    let entered = next.len() as u32;
    let root_row = next[start as usize];
    for last in 0..4 {
        let mut row = root_row;
        row[last ^ 1] = GONE;
        next.push(row);
    }
    minimal(next, start, entered)
}

/// A move into a forbidden string before the states are renumbered by [`minimal`].
const GONE: u32 = u32::MAX;

/// The smallest automaton refusing the same move sequences (Moore's partition refinement):
/// states whose every continuation is refused alike merge. A smaller table stays in cache.
fn minimal(next: Vec<[u32; 4]>, start: u32, entered: u32) -> MoveAutomaton {
    let n = next.len();
    let class_of = |classes: &[u32], t: u32| if t == GONE { DEAD } else { classes[t as usize] };
    let mut classes = vec![0u32; n];
    let mut count = 1;
    loop {
        // foldhash: with SipHash this loop was most of a process's first solver start.
        let mut ids: foldhash::HashMap<(u32, [u32; 4]), u32> =
            foldhash::HashMapExt::with_capacity(count.max(16));
        let refined: Vec<u32> = (0..n)
            .map(|s| {
                let key = (classes[s], next[s].map(|t| class_of(&classes, t)));
                let fresh = ids.len() as u32;
                *ids.entry(key).or_insert(fresh)
            })
            .collect();
        classes = refined;
        if ids.len() == count {
            break;
        }
        count = ids.len();
    }
    assert!(
        count < DEAD as usize,
        "{count} states do not fit the automaton's table"
    );
    let mut rows = vec![[DEAD as u16; 4]; count];
    for s in 0..n {
        rows[classes[s] as usize] = next[s].map(|t| class_of(&classes, t) as u16);
    }
    MoveAutomaton {
        next: rows,
        start: classes[start as usize],
        entered: [0, 1, 2, 3].map(|d| classes[(entered + d) as usize]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(a: &MoveAutomaton, moves: &[usize]) -> bool {
        let mut state = a.root(4);
        for &d in moves {
            state = a.next(state, d);
            if state == DEAD {
                return false;
            }
        }
        true
    }

    #[test]
    fn undoing_a_move_is_the_shortest_forbidden_string() {
        let found = forbidden_strings(2);
        let mut pairs: Vec<_> = found.iter().map(|s| (s.at(0), s.at(1))).collect();
        pairs.sort_unstable();
        assert_eq!(pairs, vec![(0, 1), (1, 0), (2, 3), (3, 2)]);
    }

    #[test]
    fn going_round_a_square_three_times_is_forbidden() {
        let a = MoveAutomaton::build(12);
        // Up, right, down, left, three times: every tile is back.
        let round = [0, 3, 1, 2].repeat(3);
        assert!(!accepts(&a, &round));
        assert!(accepts(&a, &round[..4]));
    }

    #[test]
    fn a_root_entered_by_a_move_refuses_only_its_undoing() {
        let a = MoveAutomaton::shared();
        for last in 0..4 {
            for d in 0..4 {
                let s = a.next(a.root(last), d);
                assert_eq!(s == DEAD, d == last ^ 1, "last {last} then {d}");
                if s != DEAD {
                    // Past the first move, nothing of `last` is remembered.
                    assert_eq!(s, a.next(a.root(4), d));
                }
            }
        }
    }

    /// The checked-in strings are exactly what the walk finds (set NPUZZLE_REGENERATE=1 to
    /// rewrite the file instead).
    #[test]
    fn the_checked_in_forbidden_strings_are_what_the_walk_finds() {
        let found = to_text(&forbidden_strings(MAX_STRING));
        if std::env::var_os("NPUZZLE_REGENERATE").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/forbidden-moves.txt");
            std::fs::write(path, &found).unwrap();
        }
        assert!(
            found == FORBIDDEN,
            "src/forbidden-moves.txt is not what the walk finds"
        );
        let a = MoveAutomaton::shared();
        for s in parse(FORBIDDEN) {
            let moves: Vec<usize> = (0..s.len as usize).map(|i| s.at(i)).collect();
            assert!(!accepts(a, &moves), "{moves:?}");
            assert!(accepts(a, &moves[..moves.len() - 1]), "{moves:?}");
        }
    }
}
