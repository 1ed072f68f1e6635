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
//!
//! # Layout
//!
//! - this file: the search's API types ([`Limits`], [`SearchReport`], [`SearchStats`], …) and
//!   its constants;
//! - `engine`: the hot engine, [`Engine`] and its depth-first search, one per heuristic type;
//! - `dispatch`: which engine a heuristic gets (`AnyEngine`);
//! - `solver`: [`Solver`], the whole search and the unit search the cluster distributes.

mod dispatch;
mod engine;
mod solver;
#[cfg(test)]
mod tests;

pub(crate) use engine::relabel;
pub use solver::{QUICK_WEIGHTS, QuickPath, Solver, UnsupportedHeuristic};

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use crate::moves::Move;

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
    /// search) or [`UnitOutcome::Split`](crate::UnitOutcome::Split) (a unit search: the nodes searched are kept).
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
