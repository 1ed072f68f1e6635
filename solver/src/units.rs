//! The cluster's view of a search: the subtrees it hands out ([`WorkUnit`]), the cut of the
//! tree into them ([`Frontier`]), and what searching one gives back ([`UnitReport`]: a find,
//! the next bound, or the unsearched rest as [`Piece`]s). [`crate::Solver`] makes and
//! searches them.

use crate::board::Board;
use crate::duplicates::TRAIL_MOVES;
use crate::goal::ShapeMismatch;
use crate::moves::Move;
use crate::search::Iteration;

/// A subtree of the search: a state `g` moves from the root, reached by `prefix`, never to undo
/// its last move. The cluster hands these out; see [`crate::Solver::frontier`].
///
/// The search below skips move sequences that repeat a preferred one, including those that
/// begin before the unit's root: it reads the last [`TRAIL_MOVES`] moves of `trail` followed by
/// `prefix`. A worker that is sent a unit without its prefix gets those moves as `trail`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkUnit {
    pub board: Board,
    pub g: u32,
    /// The last move of `prefix`; `None` for the root.
    pub last: Option<Move>,
    /// Moves from the root to `board`.
    pub prefix: Vec<Move>,
    /// Moves that came before `prefix` (the last [`TRAIL_MOVES`] count); empty when `prefix`
    /// starts at the root.
    pub trail: Vec<Move>,
}

impl WorkUnit {
    /// The unit one move `mv` further, unless `mv` leaves the board or undoes the last move.
    pub(crate) fn child(&self, mv: Move) -> Option<WorkUnit> {
        if self.last == Some(mv.opposite()) {
            return None;
        }
        let board = self.board.after(mv)?;
        Some(self.child_at(mv, board))
    }

    /// The unit one move `mv` further, whose board `board` is already known to be legal.
    pub(crate) fn child_at(&self, mv: Move, board: Board) -> WorkUnit {
        self.descendant(&[mv], board)
    }

    /// The unit `moves` further, whose board `board` is already known to be theirs.
    pub(crate) fn descendant(&self, moves: &[Move], board: Board) -> WorkUnit {
        let mut prefix = Vec::with_capacity(self.prefix.len() + moves.len());
        prefix.extend_from_slice(&self.prefix);
        prefix.extend_from_slice(moves);
        WorkUnit {
            board,
            g: self.g + moves.len() as u32,
            last: moves.last().copied().or(self.last),
            prefix,
            trail: self.trail.clone(),
        }
    }

    /// The moves before `board` that its search reads: the last [`TRAIL_MOVES`] of `trail`
    /// followed by `prefix`.
    pub fn recent_moves(&self) -> Vec<Move> {
        let all: Vec<Move> = self.trail.iter().chain(&self.prefix).copied().collect();
        all[all.len().saturating_sub(TRAIL_MOVES)..].to_vec()
    }
}

/// The root expanded breadth-first (with duplicate detection) into units at one depth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frontier {
    /// Every unit's `g`: all states at exactly this distance from the root.
    pub depth: u32,
    pub units: Vec<WorkUnit>,
    /// Set when the goal lies closer than `depth`: the optimal path, found by the BFS itself.
    pub solved: Option<Vec<Move>>,
}

/// What searching one unit gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitOutcome {
    /// A path from the root (prefix included) of cost `<= bound`.
    Found(Vec<Move>),
    /// Nothing within the bound; the subtree's smallest f above it.
    Exhausted {
        next_bound: u32,
    },
    Cancelled,
    /// Stopped by the node budget or a hand-back request, keeping what was searched: the rest
    /// of the bound is in the pieces.
    Split(UnitSplit),
}

/// The unsearched rest of a unit whose search stopped part-way through a bound.
///
/// Searching every piece under `bound` finds whatever the rest of the unit's search would have:
/// the pieces are the siblings not yet tried on each level of the depth-first path where it
/// stopped, and the node it stopped at. The least f above the bound is
/// `min(next_bound, the pieces' next bounds)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitSplit {
    /// The bound the search was under when it stopped.
    pub bound: u32,
    /// The least f above `bound` met in the part searched (`u32::MAX`: none), including the
    /// siblings pruned at once.
    pub next_bound: u32,
    /// In depth-first order; each unit's prefix continues the searched unit's prefix.
    pub pieces: Vec<Piece>,
}

/// One unsearched subtree of a [`UnitSplit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub unit: WorkUnit,
    /// `g + h` at its root (with the searching solver's heuristic), at most the bound.
    pub f: u32,
}

/// One unit's outcome and its node counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitReport {
    pub outcome: UnitOutcome,
    pub expanded: u64,
    pub generated: u64,
    /// The bounds searched, with their nodes (the last one partial unless the outcome is
    /// `Exhausted`).
    pub iterations: Vec<Iteration>,
    /// Of `expanded`, the nodes spent after the stop on the smallest pieces, searched here
    /// rather than handed back (see [`crate::ABSORB_NODES`])…
    pub absorbed: u64,
    /// …and of those, the nodes of a piece given up part-way and handed back whole: whoever
    /// takes it expands them again.
    pub repeated: u64,
}

/// Why a frontier could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontierError {
    #[error(transparent)]
    ShapeMismatch(#[from] ShapeMismatch),
    #[error("the board cannot reach the goal (parity)")]
    Unsolvable,
}
