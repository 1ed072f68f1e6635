//! # npuzzle-solver
//!
//! Optimal search for sliding-tile puzzles (8-, 15-, 24-puzzle and rectangular boards from 2x2
//! to 5x5). A pure library: no I/O and no async (except [`store`], the pattern databases'
//! files, behind the `store` feature); the only threads are the table builder's. The
//! coordinator and workers of the npuzzle cluster, and the `npuzzle` CLI, are built on it.
//!
//! # Layout
//!
//! - `shape`, `board`, `goal`: [`Shape`], [`Board`], [`Goal`]: boards of any width and height
//!   in `2..=5`, parsed from text with errors that name the offending token ([`ParseError`]);
//!   goals blank-last (the judge problems'), blank-first (Korf's) or any permutation;
//!   [`Goal::can_reach`] decides solvability by parity, so unsolvable boards are never searched.
//! - `moves`: [`Move`]: a letter names the direction the **blank** moves (`U D L R`);
//!   [`Board::apply`] and [`Board::verify`] name the first illegal move by index.
//! - `key`: [`BoardKey`]: a compact cache key; two (board, goal) pairs with the same key have
//!   the same solutions.
//! - `heuristic`: [`Heuristic`], [`Manhattan`] and [`LinearConflict`], updated incrementally per
//!   move; `exact`: [`ExactDistance`] (a table of every state) for boards of up to 9 cells;
//!   `pdb`: additive pattern databases ([`PdbHeuristic`], [`Partition`]).
//! - `search`: [`Solver`]: IDA* with an allocation-free hot loop, [`Limits`] (cancel flag, node
//!   budget, maximum bound) and [`SearchStats`]. It skips duplicate move sequences (`duplicates`:
//!   Taylor & Korf's automaton of 19,625 forbidden strings up to 14 moves, valid on every
//!   board), which keeps the answers of plain IDA* with fewer nodes
//!   ([`Solver::with_duplicate_pruning`]); and the work-unit API the cluster distributes
//!   (`units`): [`Solver::frontier`] cuts the tree into [`WorkUnit`]s, [`Solver::search_unit`]
//!   searches one under a bound and [`Solver::search_from`] bound after bound; a unit search
//!   stopped by its budget or by [`Limits::hand_back`] returns the unsearched rest as
//!   [`Piece`]s ([`UnitOutcome::Split`]), so nothing searched is lost.
//! - `weight`: [`Weight`], the factor of a bounded-suboptimal search ([`Solver::with_weight`]:
//!   weighted IDA\*, every path at most `w` times the optimum) and the units of its bounds.
//! - `forecast`: [`BoundForecast`]: what a bound will cost, from the growth the search measured
//!   over its earlier bounds (progress bars and ETAs).
//! - `trace`: [`Trace`]: what a search costs subtree by subtree ([`Solver::trace_bound`]), for
//!   the cluster's simulator.
//! - [`store`] (feature `store`): the pattern databases' files, [`store::TableStore`]: where
//!   they live, verified loading, rebuilding, saving.
//!
//! # Example
//!
//! ```
//! use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver, moves_to_string};
//!
//! let board = Board::parse("1 2 3 4 5 6 0 7 8", None)?;
//! let solver = Solver::new(Goal::blank_last(board.shape()), HeuristicKind::LinearConflict)?;
//! let report = solver.solve(&board, &Limits::default())?;
//! assert_eq!(report.outcome, SearchOutcome::Solved(npuzzle_solver::parse_moves("RR")?));
//!
//! // The cluster's view: cut the tree into units and search each under a shared bound.
//! let frontier = solver.frontier(&board, 4)?;
//! assert!(frontier.solved.is_some() || !frontier.units.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// `unsafe` lives in one place only: the tables' memory (pdb/memory.rs, allowed there).
#![deny(unsafe_code)]

mod board;
mod duplicates;
mod exact;
mod forecast;
mod goal;
mod heuristic;
mod key;
mod moves;
mod pdb;
mod search;
mod shape;
#[cfg(feature = "store")]
pub mod store;
mod trace;
mod units;
mod weight;

pub use board::{Board, IllegalMove, ParseError, Verification};
pub use duplicates::TRAIL_MOVES;
pub use exact::{EXACT_MAX_CELLS, ExactDistance};
pub use forecast::{BoundEstimate, BoundForecast};
pub use goal::{Goal, GoalError, GoalSpec, ShapeMismatch};
pub use heuristic::{
    Heuristic, HeuristicKind, LineCodes, LinearConflict, Manhattan, UnknownHeuristic,
};
pub use key::BoardKey;
pub use moves::{Move, MoveParseError, moves_to_string, parse_moves};
pub use pdb::{
    BlankGoal, DualTable, FORMAT as PDB_FORMAT, Histogram, PACKED_FORMAT as PDB_PACKED_FORMAT,
    Partition, PatternDb, PdbAll, PdbError, PdbHeuristic, PdbMax, PdbState, Regions,
    SPLIT_FORMAT as PDB_SPLIT_FORMAT, SparseMax, SparseMaxState, TableKind,
    ZERO_AWARE_FORMAT as PDB_ZERO_AWARE_FORMAT, ZeroMax, ZeroMaxState,
};
pub use search::{
    ABSORB_NODES, ABSORB_PIECE_NODES, CHECK_INTERVAL, Iteration, Limits, MAX_DEPTH, QUICK_WEIGHTS,
    QuickPath, SearchOutcome, SearchReport, SearchStats, Solver, UnsupportedHeuristic,
};
pub use shape::{MAX_CELLS, Shape, ShapeError};
pub use trace::{BoundTrace, DFS_ORDER, DfsKey, Trace, TraceEntry, TraceError, dfs_key, dfs_rank};
pub use units::{Frontier, FrontierError, Piece, UnitOutcome, UnitReport, UnitSplit, WorkUnit};
pub use weight::{BadWeight, MAX_WEIGHT, Weight};
