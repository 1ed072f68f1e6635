//! IDA* (Korf 1985) over relabelled boards, and the per-unit search that the cluster distributes.
//!
//! The hot loop ([`Dfs::dfs`]) is allocation-free: the board is one array mutated in place, the
//! path a fixed array, each of the four directions written out (a bit table says which are legal
//! from each cell), and the heuristic updated incrementally. A node is accepted as the goal only
//! when it was entered with `g + h <= bound` and every tile is home.
//!
//! Moves that make the path so far end in a duplicate of a preferred move sequence are not
//! tried ([`MoveAutomaton`]): the previous move is never undone, and neither is, say, a third
//! trip round the same 2x2 square. A unit's search starts from the moves that led to its root
//! ([`WorkUnit::recent_moves`]), so that it skips what the search from the root would.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::board::{Board, step};
use crate::duplicates::{DEAD, MoveAutomaton};
use crate::exact::ExactDistance;
use crate::goal::{Goal, ShapeMismatch};
use crate::heuristic::{Heuristic, HeuristicKind, LinearConflict, Manhattan};
use crate::moves::Move;
use crate::pdb::{PdbAll, PdbHeuristic, PdbMax, SparseMax, ZeroMax};
use crate::shape::Shape;
use crate::units::{Frontier, FrontierError, Piece, UnitOutcome, UnitReport, UnitSplit, WorkUnit};

/// The deepest path the search can hold. The 24-puzzle needs at most 205 moves.
pub const MAX_DEPTH: usize = 256;

/// How many expansions pass between two looks at the cancel flag and the budget.
pub const CHECK_INTERVAL: u64 = 4096;

/// A unit search ([`Solver::search_unit`]) stopped part-way through its bound (asked back, or
/// past its budget) searches the smallest of its unsearched pieces itself before it hands back
/// the rest: in depth-first order, up to this many nodes in all…
pub const ABSORB_NODES: u64 = 2_000;

/// …each piece given at most this many: a piece that needs more is handed back whole (the nodes
/// spent on it are counted, and searched again by whoever takes it), and the pieces after it
/// too. Most pieces on the deep levels of a stopped search hold a handful of nodes; each would
/// cost the coordinator an assignment and a result.
pub const ABSORB_PIECE_NODES: u64 = 500;

/// What [`Dfs::dfs`] returns when the goal was found or the search must stop: no f above a
/// bound is ever 0.
const STOP: u32 = 0;

const UP: usize = 0;
const DOWN: usize = 1;
const LEFT: usize = 2;
const RIGHT: usize = 3;

/// "No previous move": matches no direction's opposite.
const NO_MOVE: usize = 4;

/// Limits on one search. The default has none.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits<'a> {
    /// Checked every [`CHECK_INTERVAL`] expansions; `true` stops the search with `Cancelled`.
    pub cancel: Option<&'a AtomicBool>,
    /// A node budget that may be lowered while the search runs (another thread stores into it):
    /// checked with `cancel`, it stops the search once that many nodes are expanded, like
    /// `node_budget`. The cluster uses it to ask a running unit for the rest of its work.
    pub hand_back: Option<&'a AtomicU64>,
    /// At most this many expansions (all iterations together), then `BudgetExceeded` (a whole
    /// search) or [`UnitOutcome::Split`] (a unit search: the nodes searched are kept).
    pub node_budget: Option<u64>,
    /// Do not start an iteration with a bound above this; `Exhausted` instead.
    pub max_bound: Option<u32>,
}

/// One IDA* iteration: its f-bound and the nodes it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Iteration {
    pub bound: u32,
    /// Nodes whose children were generated.
    pub expanded: u64,
    /// Children generated (each expansion generates 1 to 4).
    pub generated: u64,
}

/// What a search cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub expanded: u64,
    pub generated: u64,
    pub iterations: Vec<Iteration>,
    pub elapsed: Duration,
}

/// How a search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchOutcome {
    /// An optimal path (empty when the board is the goal).
    Solved(Vec<Move>),
    /// Parity says the goal cannot be reached; nothing was searched.
    Unsolvable,
    /// No solution within `max_bound`; any solution costs at least `next_bound`.
    Exhausted { next_bound: u32 },
    /// The cancel flag was raised.
    Cancelled,
    /// The node budget ran out.
    BudgetExceeded,
}

/// A search's outcome and what it cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchReport {
    pub outcome: SearchOutcome,
    pub stats: SearchStats,
}

/// Per-shape, per-goal tables and a heuristic.
#[derive(Clone, Debug)]
pub(crate) struct Engine<H> {
    /// Bit `d` set when the blank can move in direction `d` (see [`Move::index`]) from a cell.
    can_move: [u8; 32],
    width: usize,
    blank_label: u8,
    cells: usize,
    heuristic: H,
    /// Which move sequences are duplicates of preferred ones ([`MoveAutomaton`]).
    automaton: &'static MoveAutomaton,
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
enum BoardSet {
    Few(Vec<Board>),
    Many(foldhash::HashSet<Board>),
}

impl BoardSet {
    /// Boards looked through one by one, at most.
    const FEW: usize = 32;

    /// A set holding `first`, with room for about `expected` boards.
    fn new(first: Board, expected: usize) -> BoardSet {
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
    fn insert(&mut self, board: Board) -> bool {
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
const SPLIT_LEVELS: usize = 12;

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
        }
    }

    /// `g + h` of a unit's root: a lower bound on any solution through it.
    fn estimate(&self, state: &Relabelled) -> u32 {
        self.heuristic.evaluate(&state.cells[..self.cells]).0
    }

    /// Iterative deepening from `state`, reached by `g` moves that left the move automaton in
    /// state `seq`.
    /// With `single_bound`, only that one iteration runs. With `split`, a search stopped by its
    /// budget or a hand-back request ends [`RunEnd::Split`] with the unsearched rest.
    fn run(
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
        let mut dfs = Dfs {
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
        let mut bound = start_bound.unwrap_or(g + h).max(g + h);
        if single_bound && let Some(b) = start_bound {
            bound = b;
        }
        let end = loop {
            let too_deep = bound as usize >= MAX_DEPTH;
            if too_deep || limits.max_bound.is_some_and(|m| bound > m) {
                break RunEnd::Exhausted { next_bound: bound };
            }
            if g + h > bound {
                // The root itself is pruned: nothing expanded, the next bound is its f.
                break RunEnd::Exhausted { next_bound: g + h };
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
    fn open_pieces(
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
                let f = depth + self.heuristic.evaluate(&child[..n]).0;
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
        let stop_f = g + taken.len() as u32 + self.heuristic.evaluate(&cells[..n]).0;
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
struct RunMode {
    single_bound: bool,
    split: bool,
}

/// Why [`Engine::run`] ended. Paths are move indices from the search root.
enum RunEnd {
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

/// The mutable state of one depth-first search.
struct Dfs<'e, H> {
    engine: &'e Engine<H>,
    cells: [u8; 32],
    bound: u32,
    expanded: u64,
    generated: u64,
    /// Expansion count at which to look at the cancel flag and budget next.
    check_at: u64,
    budget: u64,
    cancel: Option<&'e AtomicBool>,
    hand_back: Option<&'e AtomicU64>,
    stopped: Option<RunEnd>,
    /// Depth of the goal, or of the node where the search stopped.
    found_len: usize,
    /// Once stopped: the least f above the bound in what was searched.
    partial_next: u32,
    path: [u8; MAX_DEPTH],
}

impl<H: Heuristic> Dfs<'_, H> {
    /// Searches below a node entered with `g + h <= bound`. Returns the smallest f above the
    /// bound met below this node, or [`STOP`] when the goal was found or the search must stop
    /// (then `stopped` says why). The minimum travels in registers, not through memory.
    ///
    /// Children are tried in [`Move::SEARCH_ORDER`] (blank up, left, right, down), each direction written
    /// out so that no successor list is walked.
    fn dfs(&mut self, blank: usize, g: u32, h: u32, hs: H::State, seq: u32) -> u32 {
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
        // A child survives only with h <= limit.
        let limit = self.bound.saturating_sub(g + 1);
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
                    let f = g + 1 + nh;
                    if nh > limit + 2 {
                        // Bidirectional pathmax (BPMX): this node is at least nh - 1 away, so
                        // its own f exceeds the bound; its other children need not be tried.
                        self.generated += generated;
                        return next_bound.min(g + nh - 1);
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
    fn is_goal(&self, blank: usize) -> bool {
        let engine = self.engine;
        blank == engine.blank_label as usize
            && (0..engine.cells).all(|p| p == blank || self.cells[p] as usize == p)
    }

    /// Whether to stop at a node `g` moves deep (whose children are not generated yet).
    #[cold]
    #[inline(never)]
    fn must_stop(&mut self, g: u32) -> bool {
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

fn to_moves(path: &[u8]) -> Vec<Move> {
    path.iter().map(|&d| Move::from_index(d as usize)).collect()
}

#[derive(Clone, Debug)]
enum AnyEngine {
    Manhattan(Box<Engine<Manhattan>>),
    LinearConflict(Box<Engine<LinearConflict>>),
    Exact(Box<Engine<ExactDistance>>),
    Pdb(Box<Engine<PdbHeuristic>>),
    PdbAll(Box<Engine<PdbAll>>),
    Pdb2(Box<Engine<PdbMax<2>>>),
    Pdb3(Box<Engine<PdbMax<3>>>),
    Pdb4(Box<Engine<PdbMax<4>>>),
    Sparse2(Box<Engine<SparseMax<2>>>),
    Sparse3(Box<Engine<SparseMax<3>>>),
    Sparse4(Box<Engine<SparseMax<4>>>),
    Zero1(Box<Engine<ZeroMax<1>>>),
    Zero2(Box<Engine<ZeroMax<2>>>),
    Zero3(Box<Engine<ZeroMax<3>>>),
}

macro_rules! with_engine {
    ($any:expr, $e:ident => $body:expr) => {
        match $any {
            AnyEngine::Manhattan($e) => $body,
            AnyEngine::LinearConflict($e) => $body,
            AnyEngine::Exact($e) => $body,
            AnyEngine::Pdb($e) => $body,
            AnyEngine::PdbAll($e) => $body,
            AnyEngine::Pdb2($e) => $body,
            AnyEngine::Pdb3($e) => $body,
            AnyEngine::Pdb4($e) => $body,
            AnyEngine::Sparse2($e) => $body,
            AnyEngine::Sparse3($e) => $body,
            AnyEngine::Sparse4($e) => $body,
            AnyEngine::Zero1($e) => $body,
            AnyEngine::Zero2($e) => $body,
            AnyEngine::Zero3($e) => $body,
        }
    };
}

/// The engine for a PDB heuristic: its partitions' ranks carried move by move, up to 4
/// partitions under the max: in [`SparseMax`]'s compact state where it takes them (sparse
/// tables, the 5x5 ones), else in [`PdbMax`]'s (more partitions, and the dual lookups, go
/// through [`PdbHeuristic`]'s own `Heuristic`, which evaluates them afresh). Zero-aware
/// tables of up to 3 partitions go through [`ZeroMax`].
fn pdb_engine(shape: Shape, goal: &Goal, pdb: PdbHeuristic) -> AnyEngine {
    let zero = match pdb.partitions() {
        1 => ZeroMax::new(&pdb).map(|h| AnyEngine::Zero1(Box::new(Engine::new(shape, goal, h)))),
        2 => ZeroMax::new(&pdb).map(|h| AnyEngine::Zero2(Box::new(Engine::new(shape, goal, h)))),
        3 => ZeroMax::new(&pdb).map(|h| AnyEngine::Zero3(Box::new(Engine::new(shape, goal, h)))),
        _ => None,
    };
    if let Some(engine) = zero {
        return engine;
    }
    let sparse =
        match pdb.partitions() {
            2 => SparseMax::new(&pdb)
                .map(|h| AnyEngine::Sparse2(Box::new(Engine::new(shape, goal, h)))),
            3 => SparseMax::new(&pdb)
                .map(|h| AnyEngine::Sparse3(Box::new(Engine::new(shape, goal, h)))),
            4 => SparseMax::new(&pdb)
                .map(|h| AnyEngine::Sparse4(Box::new(Engine::new(shape, goal, h)))),
            _ => None,
        };
    if let Some(engine) = sparse {
        return engine;
    }
    let carried = match pdb.partitions() {
        2 => PdbMax::new(&pdb).map(|h| AnyEngine::Pdb2(Box::new(Engine::new(shape, goal, h)))),
        3 => PdbMax::new(&pdb).map(|h| AnyEngine::Pdb3(Box::new(Engine::new(shape, goal, h)))),
        4 => PdbMax::new(&pdb).map(|h| AnyEngine::Pdb4(Box::new(Engine::new(shape, goal, h)))),
        _ => None,
    };
    match carried {
        Some(engine) => engine,
        None if pdb.partitions() == 1 && !pdb.has_dual() => {
            AnyEngine::Pdb(Box::new(Engine::new(shape, goal, pdb)))
        }
        None => AnyEngine::PdbAll(Box::new(Engine::new(shape, goal, PdbAll(pdb)))),
    }
}

/// The goal turned by 180°.
fn rotate_goal(goal: &Goal) -> Goal {
    let tiles: Vec<u8> = goal.tiles().iter().rev().copied().collect();
    match Board::new(goal.shape(), &tiles) {
        Ok(b) => Goal::from_board(b),
        Err(_) => unreachable!("a turned permutation is a permutation"),
    }
}

/// A heuristic that cannot serve boards of some shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "heuristic {kind} does not support {shape} boards (exact needs at most 9 cells; use md or lc)"
)]
pub struct UnsupportedHeuristic {
    pub kind: HeuristicKind,
    pub shape: Shape,
}

/// Optimal search towards one goal with one heuristic. Build it once per (goal, heuristic) and
/// reuse it: it holds the tables.
///
/// ```
/// use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver};
/// let board = Board::parse("2 3 4 1 5 x 7 6 8", None).unwrap();
/// let solver = Solver::new(Goal::blank_last(board.shape()), HeuristicKind::LinearConflict).unwrap();
/// let report = solver.solve(&board, &Limits::default()).unwrap();
/// let SearchOutcome::Solved(path) = report.outcome else { panic!() };
/// assert_eq!(path.len(), 19);
/// assert!(board.verify(&path, solver.goal()).unwrap().reaches_goal);
/// ```
#[derive(Clone, Debug)]
pub struct Solver {
    goal: Goal,
    kind: HeuristicKind,
    engine: AnyEngine,
    /// The search runs on the board turned by 180° (pattern databases built for the blank on
    /// cell 0 serving a goal whose blank belongs on the last cell); moves map back reversed.
    rotated: bool,
    /// Which move sequences the search skips ([`Solver::with_duplicate_pruning`]).
    automaton: &'static MoveAutomaton,
}

impl Solver {
    /// With `false`, the search only refuses to undo the previous move, as plain IDA* does,
    /// instead of skipping every duplicate of a preferred move sequence of up to 14 moves (the
    /// default). The answers are the same; the node counts are plain IDA*'s, which published
    /// figures use.
    pub fn with_duplicate_pruning(mut self, on: bool) -> Solver {
        self.automaton = if on {
            MoveAutomaton::shared()
        } else {
            MoveAutomaton::undo_only()
        };
        let automaton = self.automaton;
        with_engine!(&mut self.engine, e => e.automaton = automaton);
        self
    }

    /// A solver for `goal` using `kind`; an error when `kind` does not support the goal's shape
    /// (see [`HeuristicKind::supports`]).
    pub fn new(goal: Goal, kind: HeuristicKind) -> Result<Solver, UnsupportedHeuristic> {
        let shape = goal.shape();
        let blank_label = goal.position_of(0);
        let unsupported = UnsupportedHeuristic { kind, shape };
        let engine = match kind {
            HeuristicKind::Manhattan => AnyEngine::Manhattan(Box::new(Engine::new(
                shape,
                &goal,
                Manhattan::new(shape, blank_label),
            ))),
            HeuristicKind::LinearConflict => AnyEngine::LinearConflict(Box::new(Engine::new(
                shape,
                &goal,
                LinearConflict::new(shape, blank_label),
            ))),
            HeuristicKind::Exact => {
                let exact = ExactDistance::new(shape, blank_label).ok_or(unsupported)?;
                AnyEngine::Exact(Box::new(Engine::new(shape, &goal, exact)))
            }
            HeuristicKind::Pdb => return Err(unsupported),
        };
        Ok(Solver {
            goal,
            kind,
            engine,
            rotated: false,
            automaton: MoveAutomaton::shared(),
        })
    }

    /// A solver using pattern databases. The tables are built for the blank on cell 0: goals
    /// whose blank belongs there use them directly, goals whose blank belongs on the last cell
    /// through a 180° turn of the board; other goals are refused.
    pub fn with_pdb(goal: Goal, pdb: PdbHeuristic) -> Result<Solver, UnsupportedHeuristic> {
        let shape = goal.shape();
        let unsupported = UnsupportedHeuristic {
            kind: HeuristicKind::Pdb,
            shape,
        };
        if pdb.shape() != shape || !Solver::pdb_serves_goal(&goal) {
            return Err(unsupported);
        }
        let rotated = goal.position_of(0) != 0;
        let search_goal = if rotated { rotate_goal(&goal) } else { goal };
        Ok(Solver {
            goal,
            kind: HeuristicKind::Pdb,
            engine: pdb_engine(shape, &search_goal, pdb),
            rotated,
            automaton: MoveAutomaton::shared(),
        })
    }

    /// Whether pattern databases (built for the blank on cell 0) can serve `goal`: its blank
    /// belongs on the first cell, or on the last (through a 180° turn of the board).
    pub fn pdb_serves_goal(goal: &Goal) -> bool {
        let blank = goal.position_of(0);
        blank == 0 || blank + 1 == goal.shape().cells()
    }

    /// The board as the search sees it: relabelled by the goal, turned if the solver is.
    fn internal(&self, board: &Board) -> Relabelled {
        let state = relabel(board, &self.goal);
        if !self.rotated {
            return state;
        }
        let n = board.shape().cells();
        let mut cells = [0u8; 32];
        for (p, c) in cells.iter_mut().enumerate().take(n) {
            *c = (n - 1) as u8 - state.cells[n - 1 - p];
        }
        Relabelled {
            cells,
            blank: n - 1 - state.blank,
        }
    }

    /// Search moves (as indices) back in the board's own orientation.
    fn moves_out(&self, path: &[u8]) -> Vec<Move> {
        let moves = to_moves(path);
        if self.rotated {
            moves.into_iter().map(Move::opposite).collect()
        } else {
            moves
        }
    }

    /// A move as the search sees it.
    fn move_in(&self, m: Move) -> usize {
        if self.rotated {
            m.opposite().index()
        } else {
            m.index()
        }
    }

    /// The move automaton's state at a unit's root: from the moves that led there (its trail and
    /// prefix), or only its last move when they are not known.
    fn automaton_state(&self, unit: &WorkUnit) -> u32 {
        let last = unit.last.map_or(NO_MOVE, |m| self.move_in(m));
        let known: Vec<usize> = unit
            .trail
            .iter()
            .chain(&unit.prefix)
            .map(|&m| self.move_in(m))
            .collect();
        if known.last().is_some_and(|&m| m != last) {
            // A unit whose moves disagree with its last move: trust neither beyond the last.
            return self.automaton.root(last);
        }
        self.automaton.after(&known, last)
    }

    /// Whether the moves that led to `unit` hold a move sequence the search skips (a duplicate
    /// of a preferred one): the search from the root never enters its subtree.
    pub(crate) fn is_skipped(&self, unit: &WorkUnit) -> bool {
        self.skip_state(unit) == DEAD
    }

    /// The move automaton's state after a unit's moves from the root ([`DEAD`]: skipped), which
    /// [`Solver::children`] steps on one move at a time.
    fn skip_state(&self, unit: &WorkUnit) -> u32 {
        let automaton = self.automaton;
        let mut state = automaton.root(NO_MOVE);
        for &m in unit.trail.iter().chain(&unit.prefix) {
            state = automaton.next(state, self.move_in(m));
            if state == DEAD {
                return DEAD;
            }
        }
        state
    }

    /// The states one move further from `unit` that `seen` does not hold yet (now added to
    /// it), in the search's order, except those the search skips: one step of a
    /// breadth-first expansion with duplicate detection. Of two paths to a state the one kept
    /// is the search's preferred one, which the move automaton never prunes.
    ///
    /// `state` is the automaton's state after `unit`'s moves ([`Solver::skip_state`]),
    /// and each child comes with its own: one step each, and a child's moves are copied only
    /// once it is kept.
    fn children<'a>(
        &'a self,
        unit: &'a WorkUnit,
        state: u32,
        seen: &'a mut BoardSet,
    ) -> impl Iterator<Item = (WorkUnit, u32)> + 'a {
        self.search_order().into_iter().filter_map(move |mv| {
            let (board, next) = self.step(&unit.board, unit.last, state, mv, seen)?;
            Some((unit.child_at(mv, board), next))
        })
    }

    /// One move `mv` further from a node of a breadth-first expansion (its board, its last
    /// move, the automaton's state after its moves): the child's board and state, unless the
    /// move leaves the board, undoes `last`, enters a sequence the search skips, or reaches a
    /// board `seen` holds (any other is added to it).
    fn step(
        &self,
        board: &Board,
        last: Option<Move>,
        state: u32,
        mv: Move,
        seen: &mut BoardSet,
    ) -> Option<(Board, u32)> {
        if state == DEAD || last == Some(mv.opposite()) {
            return None;
        }
        let next = self.automaton.next(state, self.move_in(mv));
        if next == DEAD {
            return None;
        }
        let board = board.after(mv)?;
        seen.insert(board).then_some((board, next))
    }

    /// The directions in the order the search tries them, as moves of this solver's boards:
    /// breadth-first expansions keep, of two paths to one state, the one the search prefers.
    fn search_order(&self) -> [Move; 4] {
        Move::SEARCH_ORDER.map(|m| if self.rotated { m.opposite() } else { m })
    }

    pub fn goal(&self) -> &Goal {
        &self.goal
    }

    pub fn heuristic(&self) -> HeuristicKind {
        self.kind
    }

    /// The heuristic's lower bound for `board`.
    pub fn estimate(&self, board: &Board) -> Result<u32, ShapeMismatch> {
        self.goal.check_shape(board)?;
        let state = self.internal(board);
        Ok(with_engine!(&self.engine, e => e.estimate(&state)))
    }

    /// IDA* from `board`: an optimal path, or why there is none (yet).
    pub fn solve(&self, board: &Board, limits: &Limits) -> Result<SearchReport, ShapeMismatch> {
        if !self.goal.can_reach(board)? {
            return Ok(SearchReport {
                outcome: SearchOutcome::Unsolvable,
                stats: SearchStats::default(),
            });
        }
        let state = self.internal(board);
        let seq = self.automaton.root(NO_MOVE);
        let (end, stats) = with_engine!(&self.engine, e => e.run(&state, 0, seq, None, RunMode { single_bound: false, split: false }, limits));
        let outcome = match end {
            RunEnd::Found(path) => SearchOutcome::Solved(self.moves_out(&path)),
            RunEnd::Exhausted { next_bound } => SearchOutcome::Exhausted { next_bound },
            RunEnd::Cancelled => SearchOutcome::Cancelled,
            RunEnd::BudgetExceeded | RunEnd::Split { .. } => SearchOutcome::BudgetExceeded,
        };
        Ok(SearchReport { outcome, stats })
    }

    /// Expands `board` breadth-first, dropping states already seen, until one depth holds at
    /// least `min_units` states (or the goal is met first). Every optimal path passes through
    /// exactly one returned unit, so searching all units under a common bound is equivalent to
    /// IDA* from the root. Moves are tried in the search's order, so each state is kept with
    /// the path the search prefers, which its duplicate pruning never cuts.
    pub fn frontier(&self, board: &Board, min_units: usize) -> Result<Frontier, FrontierError> {
        if !self.goal.can_reach(board)? {
            return Err(FrontierError::Unsolvable);
        }
        let root = WorkUnit {
            board: *board,
            g: 0,
            last: None,
            prefix: Vec::new(),
            trail: Vec::new(),
        };
        if board == self.goal.board() {
            return Ok(Frontier {
                depth: 0,
                units: Vec::new(),
                solved: Some(Vec::new()),
            });
        }
        let mut seen = BoardSet::new(*board, min_units);
        let mut layer = vec![(root, self.automaton.root(NO_MOVE))];
        let mut depth = 0;
        while layer.len() < min_units.max(1) {
            let mut next = Vec::with_capacity(layer.len() * 3);
            for (unit, state) in &layer {
                for (child, state) in self.children(unit, *state, &mut seen) {
                    if child.board == *self.goal.board() {
                        return Ok(Frontier {
                            depth: depth + 1,
                            units: Vec::new(),
                            solved: Some(child.prefix),
                        });
                    }
                    next.push((child, state));
                }
            }
            if next.is_empty() {
                break;
            }
            layer = next;
            depth += 1;
        }
        Ok(Frontier {
            depth,
            units: layer.into_iter().map(|(unit, _)| unit).collect(),
            solved: None,
        })
    }

    /// Cuts a unit's subtree into at least `min_parts` smaller units (at most 12 levels deeper),
    /// breadth-first with duplicate detection inside the subtree. Every shortest continuation
    /// from `unit` passes through exactly one part, so searching the parts under a bound finds
    /// whatever searching `unit` would, and their least next bound is a valid next bound. A goal
    /// state met on the way becomes a part of its own and is not expanded.
    pub fn split_unit(&self, unit: &WorkUnit, min_parts: usize) -> Vec<WorkUnit> {
        /// A node of the cut, its moves from `unit` held inline: only the parts kept at the
        /// end become units, with their moves copied once (the coordinator cuts a unit every
        /// few results).
        #[derive(Clone, Copy)]
        struct Node {
            board: Board,
            moves: [Move; SPLIT_LEVELS],
            len: usize,
            state: u32,
        }
        let goal = *self.goal.board();
        let mut seen = BoardSet::new(unit.board, min_parts);
        let mut parts = Vec::new();
        let mut layer = vec![Node {
            board: unit.board,
            moves: [Move::Up; SPLIT_LEVELS],
            len: 0,
            state: self.skip_state(unit),
        }];
        for _ in 0..SPLIT_LEVELS {
            if parts.len() + layer.len() >= min_parts.max(2) {
                break;
            }
            let mut next = Vec::with_capacity(layer.len() * 3);
            for node in &layer {
                if node.board == goal {
                    parts.push(*node);
                    continue;
                }
                let last = node
                    .len
                    .checked_sub(1)
                    .map_or(unit.last, |i| Some(node.moves[i]));
                for mv in self.search_order() {
                    let Some((board, state)) =
                        self.step(&node.board, last, node.state, mv, &mut seen)
                    else {
                        continue;
                    };
                    let mut child = *node;
                    child.board = board;
                    child.moves[node.len] = mv;
                    child.len += 1;
                    child.state = state;
                    next.push(child);
                }
            }
            if next.is_empty() {
                break;
            }
            layer = next;
        }
        parts.extend(layer);
        (parts.iter())
            .map(|n| unit.descendant(&n.moves[..n.len], n.board))
            .collect()
    }

    /// `g + h` of a unit: no solution through it is cheaper.
    pub fn unit_lower_bound(&self, unit: &WorkUnit) -> Result<u32, ShapeMismatch> {
        Ok(unit.g + self.estimate(&unit.board)?)
    }

    /// One IDA* iteration below `unit` with f-bound `bound`. A search stopped by the node budget
    /// or [`Limits::hand_back`] ends [`UnitOutcome::Split`]: the nodes searched are not lost.
    pub fn search_unit(
        &self,
        unit: &WorkUnit,
        bound: u32,
        limits: &Limits,
    ) -> Result<UnitReport, ShapeMismatch> {
        self.unit_search(unit, bound, true, limits)
    }

    /// IDA* below `unit`, bound after bound from `bound` (or the unit's own `g + h`, if higher)
    /// until a path is found: a whole job searched as one unit. Stopped by the node budget or
    /// [`Limits::hand_back`], it ends [`UnitOutcome::Split`] in the bound it was searching;
    /// `iterations` tell what each bound cost.
    pub fn search_from(
        &self,
        unit: &WorkUnit,
        bound: u32,
        limits: &Limits,
    ) -> Result<UnitReport, ShapeMismatch> {
        self.unit_search(unit, bound, false, limits)
    }

    fn unit_search(
        &self,
        unit: &WorkUnit,
        bound: u32,
        single_bound: bool,
        limits: &Limits,
    ) -> Result<UnitReport, ShapeMismatch> {
        let mut report = self.unit_search_once(unit, bound, single_bound, limits)?;
        // A whole search's split stays as it is: its outcome says where its iterations stopped.
        if single_bound {
            self.absorb_small_pieces(&mut report, limits);
        }
        Ok(report)
    }

    /// [`Solver::unit_search`] without searching any piece of a split here.
    fn unit_search_once(
        &self,
        unit: &WorkUnit,
        bound: u32,
        single_bound: bool,
        limits: &Limits,
    ) -> Result<UnitReport, ShapeMismatch> {
        self.goal.check_shape(&unit.board)?;
        let state = self.internal(&unit.board);
        let seq = self.automaton_state(unit);
        let (end, stats) = with_engine!(&self.engine, e => e.run(&state, unit.g, seq, Some(bound), RunMode { single_bound, split: true }, limits));
        let outcome = match end {
            RunEnd::Found(suffix) => {
                let mut path = unit.prefix.clone();
                path.extend(self.moves_out(&suffix));
                UnitOutcome::Found(path)
            }
            RunEnd::Exhausted { next_bound } => UnitOutcome::Exhausted { next_bound },
            RunEnd::Cancelled => UnitOutcome::Cancelled,
            RunEnd::BudgetExceeded => UnitOutcome::Split(UnitSplit {
                bound,
                next_bound: u32::MAX,
                pieces: vec![Piece {
                    unit: unit.clone(),
                    f: unit.g,
                }],
            }),
            RunEnd::Split {
                bound,
                next_bound,
                pieces,
            } => UnitOutcome::Split(UnitSplit {
                bound,
                next_bound,
                pieces: pieces
                    .into_iter()
                    .map(|(moves, f)| Piece {
                        unit: self.continue_unit(unit, &moves),
                        f,
                    })
                    .collect(),
            }),
        };
        Ok(UnitReport {
            outcome,
            expanded: stats.expanded,
            generated: stats.generated,
            iterations: stats.iterations,
            absorbed: 0,
            repeated: 0,
        })
    }

    /// A split `report` of `unit`: its first pieces (the deepest, in depth-first order) are
    /// searched here while each ends within [`ABSORB_PIECE_NODES`] and all within
    /// [`ABSORB_NODES`]; those are dropped from the pieces (their next bounds kept), and a path
    /// found in one ends the unit `Found`, as the unit's own search would have.
    fn absorb_small_pieces(&self, report: &mut UnitReport, limits: &Limits) {
        let UnitOutcome::Split(split) = &mut report.outcome else {
            return;
        };
        let (mut expanded, mut generated) = (0u64, 0u64);
        let mut absorbed = 0;
        for piece in &split.pieces {
            if expanded + ABSORB_PIECE_NODES > ABSORB_NODES
                || limits.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
            {
                break;
            }
            let piece_limits = Limits {
                cancel: limits.cancel,
                hand_back: None,
                node_budget: Some(ABSORB_PIECE_NODES),
                max_bound: None,
            };
            let Ok(r) = self.unit_search_once(&piece.unit, split.bound, true, &piece_limits) else {
                break;
            };
            expanded += r.expanded;
            generated += r.generated;
            match r.outcome {
                UnitOutcome::Exhausted { next_bound } => {
                    split.next_bound = split.next_bound.min(next_bound);
                    absorbed += 1;
                }
                UnitOutcome::Found(path) => {
                    report.outcome = UnitOutcome::Found(path);
                    break;
                }
                // Past its share, or cancelled: handed back whole, with the rest.
                UnitOutcome::Split(_) | UnitOutcome::Cancelled => {
                    report.repeated += r.expanded;
                    break;
                }
            }
        }
        if let UnitOutcome::Split(split) = &mut report.outcome {
            split.pieces.drain(..absorbed);
            if split.pieces.is_empty() {
                report.outcome = UnitOutcome::Exhausted {
                    next_bound: split.next_bound,
                };
            }
        }
        report.absorbed += expanded;
        report.expanded += expanded;
        report.generated += generated;
        if let Some(last) = report.iterations.last_mut() {
            last.expanded += expanded;
            last.generated += generated;
        }
    }

    /// `unit` followed by `moves` (move indices as the search sees them).
    fn continue_unit(&self, unit: &WorkUnit, moves: &[u8]) -> WorkUnit {
        let moves = self.moves_out(moves);
        let mut board = unit.board;
        for &m in &moves {
            // The search only takes legal moves.
            board = board.after(m).unwrap_or(board);
        }
        unit.descendant(&moves, board)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;

    /// The cut as it was written before it stepped the automaton one move per child: each
    /// child built whole, then its moves rescanned from the root.
    fn split_by_rescanning(solver: &Solver, unit: &WorkUnit, min_parts: usize) -> Vec<WorkUnit> {
        let goal = *solver.goal.board();
        let mut seen = BoardSet::new(unit.board, min_parts);
        let mut parts = Vec::new();
        let mut layer = vec![unit.clone()];
        for _ in 0..12 {
            if parts.len() + layer.len() >= min_parts.max(2) {
                break;
            }
            let mut next = Vec::new();
            for node in &layer {
                if node.board == goal {
                    parts.push(node.clone());
                    continue;
                }
                for mv in solver.search_order() {
                    let Some(child) = node.child(mv) else {
                        continue;
                    };
                    if !solver.is_skipped(&child) && seen.insert(child.board) {
                        next.push(child);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            layer = next;
        }
        parts.extend(layer);
        parts
    }

    #[test]
    fn a_board_set_past_its_list_keeps_telling_new_boards_from_met_ones() {
        let start = Board::parse("14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3", None).expect("a board");
        // A walk that comes back on itself: many boards twice, more than the list holds.
        let mut board = start;
        let mut walk = vec![start];
        let mut seed = 12345u32;
        for _ in 0..200 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let mv = Move::ALL[(seed >> 16) as usize % 4];
            if let Some(next) = board.after(mv) {
                board = next;
                walk.push(board);
            }
        }
        let mut set = BoardSet::new(start, 2);
        let mut reference = std::collections::HashSet::from([start]);
        for b in &walk[1..] {
            assert_eq!(set.insert(*b), reference.insert(*b));
        }
        assert!(
            reference.len() > BoardSet::FEW,
            "{} boards",
            reference.len()
        );
        assert!(matches!(set, BoardSet::Many(_)));
        for b in &walk {
            assert!(!set.insert(*b));
        }
    }

    #[test]
    fn a_cut_keeps_the_parts_a_rescan_of_every_childs_moves_keeps() {
        let shape = Shape::new(4, 4).expect("4x4");
        let solver =
            Solver::new(Goal::blank_first(shape), HeuristicKind::Manhattan).expect("a solver");
        // Korf's #1.
        let board = Board::parse("14 13 15 7 11 12 9 5 6 0 2 1 4 8 10 3", None).expect("a board");
        let frontier = solver.frontier(&board, 40).expect("a frontier");
        let mut units = frontier.units.clone();
        // The same units with their moves as a trail (as pieces handed back carry them).
        units.extend(frontier.units.iter().map(|u| WorkUnit {
            prefix: Vec::new(),
            trail: u.prefix.clone(),
            ..u.clone()
        }));
        for unit in &units {
            for min_parts in [2, 30, 400] {
                let parts = solver.split_unit(unit, min_parts);
                assert_eq!(parts, split_by_rescanning(&solver, unit, min_parts));
                assert!(parts.len() >= min_parts, "{}", parts.len());
                assert!(parts.iter().all(|p| !solver.is_skipped(p)));
            }
        }
    }
}
