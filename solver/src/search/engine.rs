//! The hot engine: a board relabelled by its goal, searched depth-first under a bound with an
//! allocation-free loop, one engine per heuristic type.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use super::*;
use crate::board::{Board, step};
use crate::duplicates::{DEAD, MoveAutomaton};
use crate::goal::Goal;
use crate::heuristic::Heuristic;
use crate::moves::Move;
use crate::shape::Shape;
use crate::weight::Weight;

/// Per-shape, per-goal tables and a heuristic.
#[derive(Clone, Debug)]
pub(crate) struct Engine<H> {
    /// Bit `d` set when the blank can move in direction `d` (see [`Move::index`]) from a cell.
    pub(super) can_move: [u8; 32],
    pub(super) width: usize,
    pub(super) blank_label: u8,
    pub(super) cells: usize,
    pub(super) heuristic: H,
    /// Which move sequences are duplicates of preferred ones ([`MoveAutomaton`]).
    pub(super) automaton: &'static MoveAutomaton,
    /// The factor on `h` (1: optimal search); bounds are in its units ([`Weight::f`]).
    pub(super) weight: Weight,
}

/// A board relabelled by its goal: `cells[p]` = goal cell of the tile on `p`.
pub(crate) struct Relabelled {
    /// Padded to 32 cells so that masked indices need no bounds checks.
    pub cells: [u8; 32],
    pub blank: usize,
}

/// The boards a breadth-first expansion has met (to keep one path to each): a list while they
/// are few, as in the cut of a unit into a handful of parts (the coordinator cuts one every
/// few results), a hash set (foldhash) past [`BoardSet::FEW`].
pub(super) enum BoardSet {
    Few(Vec<Board>),
    Many(foldhash::HashSet<Board>),
}

impl BoardSet {
    /// Boards looked through one by one, at most.
    pub(super) const FEW: usize = 32;

    /// A set holding `first`, with room for about `expected` boards.
    pub(super) fn new(first: Board, expected: usize) -> BoardSet {
        let mut set = if expected <= Self::FEW / 4 {
            BoardSet::Few(Vec::with_capacity(Self::FEW))
        } else {
            use foldhash::HashSetExt;
            BoardSet::Many(foldhash::HashSet::with_capacity(
                expected.saturating_mul(4).min(1 << 16),
            ))
        };
        set.insert(first);
        set
    }

    /// Adds `board`; false if it was there already.
    pub(super) fn insert(&mut self, board: Board) -> bool {
        match self {
            BoardSet::Few(boards) if boards.len() < Self::FEW => {
                let new = !boards.contains(&board);
                if new {
                    boards.push(board);
                }
                new
            }
            BoardSet::Few(boards) => {
                let mut set: foldhash::HashSet<Board> = boards.drain(..).collect();
                let new = set.insert(board);
                *self = BoardSet::Many(set);
                new
            }
            BoardSet::Many(set) => set.insert(board),
        }
    }
}

/// The most levels [`Solver::split_unit`] goes below a unit.
pub(super) const SPLIT_LEVELS: usize = 12;

pub(crate) fn relabel(board: &Board, goal: &Goal) -> Relabelled {
    let mut cells = [0u8; 32];
    for (p, &t) in board.tiles().iter().enumerate() {
        cells[p] = goal.position_of(t) as u8;
    }
    Relabelled {
        cells,
        blank: board.blank(),
    }
}

impl<H: Heuristic> Engine<H> {
    pub(crate) fn new(shape: Shape, goal: &Goal, heuristic: H) -> Engine<H> {
        let mut can_move = [0u8; 32];
        for (cell, bits) in can_move.iter_mut().enumerate().take(shape.cells()) {
            for mv in Move::ALL {
                if step(shape, cell, mv).is_some() {
                    *bits |= 1 << mv.index();
                }
            }
        }
        Engine {
            can_move,
            width: shape.width(),
            blank_label: goal.position_of(0) as u8,
            cells: shape.cells(),
            heuristic,
            automaton: MoveAutomaton::shared(),
            weight: Weight::OPTIMAL,
        }
    }

    /// `h` of a unit's root: a lower bound on any solution through it.
    pub(super) fn estimate(&self, state: &Relabelled) -> u32 {
        self.heuristic.evaluate(&state.cells[..self.cells]).0
    }

    /// Iterative deepening from `state`, reached by `g` moves that left the move automaton in
    /// state `seq`.
    /// With `single_bound`, only that one iteration runs. With `split`, a search stopped by its
    /// budget or a hand-back request ends [`RunEnd::Split`] with the unsearched rest.
    /// Bounds are in the weight's units ([`Weight::f`]); an optimal engine's search is compiled
    /// apart from the weighted one, so that it pays nothing for it.
    pub(super) fn run(
        &self,
        state: &Relabelled,
        g: u32,
        seq: u32,
        start_bound: Option<u32>,
        mode: RunMode,
        limits: &Limits,
    ) -> (RunEnd, SearchStats) {
        if self.weight.is_optimal() {
            self.run_with::<false>(state, g, seq, start_bound, mode, limits)
        } else {
            self.run_with::<true>(state, g, seq, start_bound, mode, limits)
        }
    }

    fn run_with<const WEIGHTED: bool>(
        &self,
        state: &Relabelled,
        g: u32,
        seq: u32,
        start_bound: Option<u32>,
        mode: RunMode,
        limits: &Limits,
    ) -> (RunEnd, SearchStats) {
        let RunMode {
            single_bound,
            split,
        } = mode;
        let started = Instant::now();
        let (h, hs) = self.heuristic.evaluate(&state.cells[..self.cells]);
        let mut dfs = Dfs::<H, WEIGHTED> {
            engine: self,
            cells: state.cells,
            bound: 0,
            expanded: 0,
            generated: 0,
            check_at: 0,
            // A unit search must get past its root before a budget stops it, or it would hand
            // back itself.
            budget: limits
                .node_budget
                .map_or(u64::MAX, |b| if split { b.max(2) } else { b }),
            cancel: limits.cancel,
            hand_back: limits.hand_back,
            stopped: None,
            found_len: 0,
            partial_next: u32::MAX,
            path: [0; MAX_DEPTH],
        };
        dfs.check_at = CHECK_INTERVAL.min(dfs.budget);
        let mut stats = SearchStats::default();
        let root_f = self.weight.f(g, h);
        let mut bound = start_bound.unwrap_or(root_f).max(root_f);
        if single_bound && let Some(b) = start_bound {
            bound = b;
        }
        let end = loop {
            // No path of MAX_DEPTH moves is ever needed (the 24-puzzle's longest is 205); a
            // weighted search's bound may exceed it while its answers stay shorter.
            let too_deep = self.weight.lower_bound(bound) as usize >= MAX_DEPTH;
            if too_deep || limits.max_bound.is_some_and(|m| bound > m) {
                break RunEnd::Exhausted { next_bound: bound };
            }
            if root_f > bound {
                // The root itself is pruned: nothing expanded, the next bound is its f.
                break RunEnd::Exhausted { next_bound: root_f };
            }
            let (e0, g0) = (dfs.expanded, dfs.generated);
            dfs.bound = bound;
            dfs.cells = state.cells;
            let next_bound = dfs.dfs(state.blank, g, h, hs, seq);
            stats.iterations.push(Iteration {
                bound,
                expanded: dfs.expanded - e0,
                generated: dfs.generated - g0,
            });
            if next_bound == STOP {
                break match dfs.stopped.take() {
                    Some(RunEnd::BudgetExceeded) if split => {
                        let taken = &dfs.path[g as usize..dfs.found_len];
                        let mut next_bound = dfs.partial_next;
                        let pieces = self.open_pieces(state, g, seq, taken, bound, &mut next_bound);
                        RunEnd::Split {
                            bound,
                            next_bound,
                            pieces,
                        }
                    }
                    Some(reason) => reason,
                    None => RunEnd::Found(dfs.path[g as usize..dfs.found_len].to_vec()),
                };
            }
            if single_bound {
                break RunEnd::Exhausted { next_bound };
            }
            bound = next_bound;
        };
        stats.expanded = dfs.expanded;
        stats.generated = dfs.generated;
        stats.elapsed = started.elapsed();
        (end, stats)
    }
}

impl<H: Heuristic> Engine<H> {
    /// What a depth-first search stopped at the end of `taken` (moves from `state`, which is `g`
    /// moves from the root, the move automaton in state `seq`) has not searched under `bound`:
    /// every sibling after the move taken on each level of `taken` (in the search's order) that
    /// the move automaton allows, and the node where it stopped (whose children were not
    /// generated yet). Siblings whose `g + h` exceeds the bound are not pieces: their f goes into
    /// `next_bound`. Pieces come in depth-first order, each as its moves from `state` and its
    /// `g + h`.
    pub(super) fn open_pieces(
        &self,
        state: &Relabelled,
        g: u32,
        seq: u32,
        taken: &[u8],
        bound: u32,
        next_bound: &mut u32,
    ) -> Vec<(Vec<u8>, u32)> {
        let order = Move::SEARCH_ORDER.map(Move::index);
        let n = self.cells;
        let w = self.width;
        let mut cells = state.cells;
        let mut blank = state.blank;
        let mut seq = seq;
        let target = |blank: usize, dir: usize| match dir {
            UP => blank.wrapping_sub(w),
            DOWN => blank + w,
            LEFT => blank.wrapping_sub(1),
            _ => blank + 1,
        };
        let slide = |cells: &mut [u8; 32], blank: usize, to: usize| {
            cells[blank] = cells[to];
            cells[to] = self.blank_label;
        };
        // Shallow siblings first would be breadth-first; collect per level, then order them
        // depth-first (a deeper piece comes before the siblings after its ancestor).
        let mut levels: Vec<Vec<(Vec<u8>, u32)>> = Vec::with_capacity(taken.len() + 1);
        for (i, &dir) in taken.iter().enumerate() {
            let dir = dir as usize;
            let depth = g + i as u32 + 1;
            let mut level = Vec::new();
            let after = order.iter().position(|&d| d == dir).map_or(4, |p| p + 1);
            for &d in &order[after.min(4)..] {
                if self.can_move[blank] & (1 << d) == 0 || self.automaton.next(seq, d) == DEAD {
                    continue;
                }
                let to = target(blank, d);
                let mut child = cells;
                slide(&mut child, blank, to);
                let f = self.weight.f(depth, self.heuristic.evaluate(&child[..n]).0);
                if f > bound {
                    *next_bound = (*next_bound).min(f);
                } else {
                    let mut moves = taken[..i].to_vec();
                    moves.push(d as u8);
                    level.push((moves, f));
                }
            }
            levels.push(level);
            let to = target(blank, dir);
            slide(&mut cells, blank, to);
            blank = to;
            seq = self.automaton.next(seq, dir);
        }
        let stop_depth = g + taken.len() as u32;
        let stop_f = self
            .weight
            .f(stop_depth, self.heuristic.evaluate(&cells[..n]).0);
        let mut pieces = vec![(taken.to_vec(), stop_f)];
        // The stop node's subtree comes first; then, from the deepest level up, the siblings
        // after each move taken.
        for level in levels.into_iter().rev() {
            pieces.extend(level);
        }
        pieces
    }
}

/// How [`Engine::run`] searches: one bound or bound after bound, and whether a stopped search
/// hands back its unsearched rest.
#[derive(Clone, Copy)]
pub(super) struct RunMode {
    pub(super) single_bound: bool,
    pub(super) split: bool,
}

/// Why [`Engine::run`] ended. Paths are move indices from the search root.
pub(super) enum RunEnd {
    Found(Vec<u8>),
    Exhausted {
        next_bound: u32,
    },
    Cancelled,
    BudgetExceeded,
    /// Stopped under `bound` by the budget or a hand-back request: `pieces` (moves from the
    /// root, and each one's `g + h`) hold everything not searched yet; `next_bound` is the least
    /// f above the bound met in what was searched.
    Split {
        bound: u32,
        next_bound: u32,
        pieces: Vec<(Vec<u8>, u32)>,
    },
}

/// The mutable state of one depth-first search; `WEIGHTED`: its bound is on
/// `den·g + num·h` ([`Weight::f`]), else on `g + h`.
pub(super) struct Dfs<'e, H, const WEIGHTED: bool> {
    pub(super) engine: &'e Engine<H>,
    pub(super) cells: [u8; 32],
    pub(super) bound: u32,
    pub(super) expanded: u64,
    pub(super) generated: u64,
    /// Expansion count at which to look at the cancel flag and budget next.
    pub(super) check_at: u64,
    pub(super) budget: u64,
    pub(super) cancel: Option<&'e AtomicBool>,
    pub(super) hand_back: Option<&'e AtomicU64>,
    pub(super) stopped: Option<RunEnd>,
    /// Depth of the goal, or of the node where the search stopped.
    pub(super) found_len: usize,
    /// Once stopped: the least f above the bound in what was searched.
    pub(super) partial_next: u32,
    pub(super) path: [u8; MAX_DEPTH],
}

impl<H: Heuristic, const WEIGHTED: bool> Dfs<'_, H, WEIGHTED> {
    /// `f` of a node `g` moves deep with heuristic value `h`, in the bound's units.
    #[inline(always)]
    fn f(&self, g: u32, h: u32) -> u32 {
        if WEIGHTED {
            self.engine.weight.f(g, h)
        } else {
            g + h
        }
    }

    /// The largest `h` a child `g` moves deep may have and stay within the bound.
    #[inline(always)]
    fn h_limit(&self, g: u32) -> u32 {
        if WEIGHTED {
            let weight = self.engine.weight;
            self.bound.saturating_sub(weight.den() * g) / weight.num()
        } else {
            self.bound.saturating_sub(g)
        }
    }

    /// Searches below a node entered with `g + h <= bound`. Returns the smallest f above the
    /// bound met below this node, or [`STOP`] when the goal was found or the search must stop
    /// (then `stopped` says why). The minimum travels in registers, not through memory.
    ///
    /// Children are tried in [`Move::SEARCH_ORDER`] (blank up, left, right, down), each direction written
    /// out so that no successor list is walked.
    pub(super) fn dfs(&mut self, blank: usize, g: u32, h: u32, hs: H::State, seq: u32) -> u32 {
        if h == 0 && self.is_goal(blank) {
            self.found_len = g as usize;
            return STOP;
        }
        self.expanded += 1;
        if self.expanded >= self.check_at && self.must_stop(g) {
            return STOP;
        }
        let engine = self.engine;
        let blank = blank & 31;
        let moves = engine.can_move[blank];
        let w = engine.width;
        let mut next_bound = u32::MAX;
        let mut generated = 0u64;
        if WEIGHTED && g as usize + 2 >= MAX_DEPTH {
            // Deeper than any optimal path: a weighted bound may reach here, its path may not.
            return next_bound;
        }
        // A child survives only with h <= limit.
        let limit = self.h_limit(g + 1);
        macro_rules! child {
            ($dir:expr, $to:expr) => {
                let next_seq = engine.automaton.next(seq, $dir);
                if moves & (1 << $dir) != 0 && next_seq != DEAD {
                    generated += 1;
                    let to = ($to) & 31;
                    let label = self.cells[to];
                    let (nh, nhs) = engine.heuristic.after_move_within(
                        h,
                        &hs,
                        label,
                        to,
                        blank,
                        $dir < LEFT,
                        limit,
                    );
                    // Pathmax: one move changes the distance by one, so the child is at least
                    // h - 1 away (the PDB heuristics are not consistent: this raises some).
                    let nh = nh.max(h.saturating_sub(1));
                    let f = self.f(g + 1, nh);
                    // Bidirectional pathmax (BPMX): this node is at least nh - 1 away; when
                    // that puts its own f above the bound, its other children need not be tried.
                    let raised = if WEIGHTED {
                        nh > 1 && self.f(g, nh - 1) > self.bound
                    } else {
                        nh > limit + 2
                    };
                    if raised {
                        self.generated += generated;
                        return next_bound.min(self.f(g, nh - 1));
                    }
                    if f > self.bound {
                        next_bound = next_bound.min(f);
                    } else {
                        // The tile slides into the old blank cell; the new blank cell keeps a
                        // stale label that nobody reads and that is restored on the way back.
                        self.cells[blank] = label;
                        let below = self.dfs(to, g + 1, nh, nhs, next_seq);
                        if below == STOP {
                            self.path[g as usize & (MAX_DEPTH - 1)] = $dir as u8;
                            self.generated += generated;
                            // What this level searched before: kept if the search stopped.
                            self.partial_next = self.partial_next.min(next_bound);
                            return STOP;
                        }
                        next_bound = next_bound.min(below);
                        self.cells[to] = label;
                    }
                }
            };
        }
        child!(UP, blank.wrapping_sub(w));
        child!(LEFT, blank.wrapping_sub(1));
        child!(RIGHT, blank + 1);
        child!(DOWN, blank + w);
        self.generated += generated;
        next_bound
    }

    #[cold]
    pub(super) fn is_goal(&self, blank: usize) -> bool {
        let engine = self.engine;
        blank == engine.blank_label as usize
            && (0..engine.cells).all(|p| p == blank || self.cells[p] as usize == p)
    }

    /// Whether to stop at a node `g` moves deep (whose children are not generated yet).
    #[cold]
    #[inline(never)]
    pub(super) fn must_stop(&mut self, g: u32) -> bool {
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            self.stopped = Some(RunEnd::Cancelled);
            return true;
        }
        if self.expanded >= self.budget
            || self
                .hand_back
                .is_some_and(|h| self.expanded >= h.load(Ordering::Relaxed))
        {
            self.stopped = Some(RunEnd::BudgetExceeded);
            self.found_len = g as usize;
            return true;
        }
        self.check_at = (self.expanded + CHECK_INTERVAL).min(self.budget);
        false
    }
}

pub(super) fn to_moves(path: &[u8]) -> Vec<Move> {
    path.iter().map(|&d| Move::from_index(d as usize)).collect()
}
