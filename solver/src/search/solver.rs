//! [`Solver`]: a goal and a heuristic's engine, searched whole (IDA*) or a work unit at a time.

use std::sync::atomic::Ordering;

use super::dispatch::{AnyEngine, pdb_engine, rotate_goal, with_engine};
use super::engine::*;
use super::*;
use crate::board::Board;
use crate::duplicates::{DEAD, MoveAutomaton};
use crate::exact::ExactDistance;
use crate::goal::{Goal, ShapeMismatch};
use crate::heuristic::{HeuristicKind, LinearConflict, Manhattan};
use crate::moves::Move;
use crate::pdb::PdbHeuristic;
use crate::shape::Shape;
use crate::units::{Frontier, FrontierError, Piece, UnitOutcome, UnitReport, UnitSplit, WorkUnit};
use crate::weight::Weight;

/// A heuristic that cannot serve boards of some shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "heuristic {kind} does not support {shape} boards (exact needs at most 9 cells; use md or lc)"
)]
pub struct UnsupportedHeuristic {
    pub kind: HeuristicKind,
    pub shape: Shape,
}

/// The factors [`Solver::quick_path`] tries, in turn: on the 24-puzzle with linear conflict,
/// 3 finds a path in a few thousand nodes, 2 one about 1.45 times the optimum in at most a few
/// million, 1.5 often a better one in a few million more.
pub const QUICK_WEIGHTS: [f64; 3] = [3.0, 2.0, 1.5];

/// A path found by [`Solver::quick_path`]: legal, within `weight` of optimal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuickPath {
    pub path: Vec<Move>,
    /// The factor of the search that found it: `path.len() <= weight ×` the optimum.
    pub weight: Weight,
    /// Nodes expanded by all the searches together.
    pub expanded: u64,
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
    pub(super) goal: Goal,
    pub(super) kind: HeuristicKind,
    pub(super) engine: AnyEngine,
    /// The search runs on the board turned by 180° (pattern databases built for the blank on
    /// cell 0 serving a goal whose blank belongs on the last cell); moves map back reversed.
    pub(super) rotated: bool,
    /// Which move sequences the search skips ([`Solver::with_duplicate_pruning`]).
    pub(super) automaton: &'static MoveAutomaton,
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

    /// A bounded-suboptimal solver: every path it returns is at most `weight` times the optimal
    /// length (weighted IDA\*, see [`Weight`]), and every bound, next bound and piece `f` it
    /// takes or gives is in the weight's units ([`Weight::f`]). [`Weight::OPTIMAL`] (the
    /// default) is plain IDA\*.
    pub fn with_weight(mut self, weight: Weight) -> Solver {
        with_engine!(&mut self.engine, e => e.weight = weight);
        self
    }

    /// The factor on `h` ([`Solver::with_weight`]).
    pub fn weight(&self) -> Weight {
        with_engine!(&self.engine, e => e.weight)
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
    pub(super) fn internal(&self, board: &Board) -> Relabelled {
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
    pub(super) fn moves_out(&self, path: &[u8]) -> Vec<Move> {
        let moves = to_moves(path);
        if self.rotated {
            moves.into_iter().map(Move::opposite).collect()
        } else {
            moves
        }
    }

    /// A move as the search sees it.
    pub(super) fn move_in(&self, m: Move) -> usize {
        if self.rotated {
            m.opposite().index()
        } else {
            m.index()
        }
    }

    /// The move automaton's state at a unit's root: from the moves that led there (its trail and
    /// prefix), or only its last move when they are not known.
    pub(super) fn automaton_state(&self, unit: &WorkUnit) -> u32 {
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
    pub(super) fn skip_state(&self, unit: &WorkUnit) -> u32 {
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
    pub(super) fn children<'a>(
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
    pub(super) fn step(
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
    pub(super) fn search_order(&self) -> [Move; 4] {
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

    /// IDA* from `board`: an optimal path (within the solver's weight of optimal), or why there
    /// is none (yet).
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

    /// A legal path for `board` found fast, not an optimal one: weighted IDA\* with the factors
    /// of [`QUICK_WEIGHTS`] in turn (each search within what is left of `node_budget`, all of
    /// them together within it), keeping the shortest path met; the first factor that finds
    /// nothing within the budget ends the ladder. `None` when the board is unsolvable or the
    /// first factor found nothing. A search's first answer (an *incumbent*) while the optimal
    /// search runs.
    pub fn quick_path(
        &self,
        board: &Board,
        node_budget: u64,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Option<QuickPath>, ShapeMismatch> {
        if !self.goal.can_reach(board)? {
            return Ok(None);
        }
        let mut best: Option<QuickPath> = None;
        let mut spent = 0u64;
        for factor in QUICK_WEIGHTS {
            let weight = Weight::new(factor).unwrap_or(Weight::OPTIMAL);
            let solver = self.clone().with_weight(weight);
            let limits = Limits {
                cancel,
                node_budget: Some(node_budget.saturating_sub(spent).max(1)),
                ..Limits::default()
            };
            let report = solver.solve(board, &limits)?;
            spent += report.stats.expanded;
            let SearchOutcome::Solved(path) = report.outcome else {
                break;
            };
            if best.as_ref().is_none_or(|b| path.len() < b.path.len()) {
                best = Some(QuickPath {
                    path,
                    weight,
                    expanded: spent,
                });
            }
            if spent >= node_budget {
                break;
            }
        }
        if let Some(best) = &mut best {
            best.expanded = spent;
        }
        Ok(best)
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

    /// The least bound under which a search enters `unit`: its `f` in the weight's units
    /// ([`Weight::f`]; `g + h` for an optimal solver).
    pub fn unit_bound(&self, unit: &WorkUnit) -> Result<u32, ShapeMismatch> {
        Ok(self.weight().f(unit.g, self.estimate(&unit.board)?))
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

    pub(super) fn unit_search(
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
    pub(super) fn unit_search_once(
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
    pub(super) fn absorb_small_pieces(&self, report: &mut UnitReport, limits: &Limits) {
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
    pub(super) fn continue_unit(&self, unit: &WorkUnit, moves: &[u8]) -> WorkUnit {
        let moves = self.moves_out(moves);
        let mut board = unit.board;
        for &m in &moves {
            // The search only takes legal moves.
            board = board.after(m).unwrap_or(board);
        }
        unit.descendant(&moves, board)
    }
}
