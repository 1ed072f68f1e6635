//! The in-process engine: parse one board, check parity, search, and describe the answer as a
//! [`Record`]. Solvers (and their tables) are kept per goal and heuristic.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Instant;

use npuzzle_solver::{
    Board, Goal, GoalSpec, HeuristicKind, Limits, PdbHeuristic, SearchOutcome, Shape, Solver,
    moves_to_string,
};
use serde::Serialize;

/// What became of one board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Solved,
    Unsolvable,
    /// The input is wrong: the board (or the settings for it) cannot be searched.
    Invalid,
    /// The board is fine but got no answer this time (see [`Record::reason`]): a deadline, a
    /// coordinator that stayed busy or unreachable. Worth trying again (`--resume` does).
    Failed,
}

/// Why a board [`Status::Failed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailReason {
    /// Its `--timeout` passed before an optimal answer was proven.
    Deadline,
    /// The search was stopped before an answer (by the coordinator).
    Cancelled,
    /// The coordinator stayed unreachable, or without workers, for `--retry-for`.
    Unavailable,
    /// The coordinator stayed at its limit of searches for `--retry-for`.
    Busy,
    /// The coordinator answered with an error of its own.
    Internal,
}

impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailReason::Deadline => "deadline",
            FailReason::Cancelled => "cancelled",
            FailReason::Unavailable => "unavailable",
            FailReason::Busy => "busy",
            FailReason::Internal => "internal",
        })
    }
}

/// One answer, as `--json` and `--output jsonl` print it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Record {
    /// 0-based input order.
    pub index: usize,
    pub status: Status,
    /// Upper-case move letters (the blank's direction); `null` unless solved.
    pub moves: Option<String>,
    /// Number of moves; `null` unless solved.
    pub length: Option<usize>,
    /// Nodes expanded by the search.
    pub nodes: u64,
    /// Wall-clock time for this board, in milliseconds.
    pub millis: f64,
    /// Answered from the coordinator's cache (always false with `--serial`).
    pub cached: bool,
    /// What is wrong with the input (invalid), or why there is no answer (failed); `null`
    /// otherwise.
    pub error: Option<String>,
    /// Why it failed; `null` unless failed.
    pub reason: Option<FailReason>,
}

impl Record {
    fn new(index: usize, status: Status) -> Record {
        Record {
            index,
            status,
            moves: None,
            length: None,
            nodes: 0,
            millis: 0.0,
            cached: false,
            error: None,
            reason: None,
        }
    }

    /// Solved by `moves` (upper-case letters).
    pub fn solved(index: usize, moves: String) -> Record {
        Record {
            length: Some(moves.len()),
            moves: Some(moves),
            ..Record::new(index, Status::Solved)
        }
    }

    /// Proven unsolvable (by parity).
    pub fn unsolvable(index: usize) -> Record {
        Record::new(index, Status::Unsolvable)
    }

    /// The input is wrong: `error` says how.
    pub fn invalid(index: usize, error: impl Into<String>) -> Record {
        Record {
            error: Some(error.into()),
            ..Record::new(index, Status::Invalid)
        }
    }

    /// No answer this time, for `reason`; `error` says more.
    pub fn failed(index: usize, reason: FailReason, error: impl Into<String>) -> Record {
        Record {
            reason: Some(reason),
            error: Some(error.into()),
            ..Record::new(index, Status::Failed)
        }
    }

    /// The same record with the search's cost: `nodes`, whether it came from the cache, and
    /// the time since `started` (to the microsecond, which keeps the JSON short).
    pub fn costing(mut self, nodes: u64, cached: bool, started: Instant) -> Record {
        self.nodes = nodes;
        self.cached = cached;
        self.millis = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
        self
    }
}

/// How boards are solved.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Board size; `None` infers squares from the tile count.
    pub shape: Option<Shape>,
    pub goal: GoalSpec,
    pub heuristic: HeuristicChoice,
    /// Where pattern databases are kept (`None`: `$NPUZZLE_PDB_DIR` or the user cache).
    pub pdb_dir: Option<std::path::PathBuf>,
}

/// The strongest pattern databases present for `shape`, loaded and verified once per process
/// (shared with an embedded worker that serves the same directory).
pub fn pattern_databases(
    dir: Option<&std::path::Path>,
    shape: Shape,
) -> Result<PdbHeuristic, npuzzle_solver::store::StoreError> {
    let store = npuzzle_solver::store::TableStore::new(dir.map(|d| d.to_path_buf()));
    store.best_shared(shape).map(|(_, pdb)| pdb)
}

/// Whether pattern database files for `shape` are present (not yet verified).
fn pattern_databases_present(dir: Option<&std::path::Path>, shape: Shape) -> bool {
    let store = npuzzle_solver::store::TableStore::new(dir.map(|d| d.to_path_buf()));
    npuzzle_solver::store::preferred_partitions(shape)
        .iter()
        .filter_map(|name| npuzzle_solver::Partition::named(shape, name).ok())
        .any(|p| store.has(&p))
}

/// A heuristic as the command line names it: `auto` or a [`HeuristicKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeuristicChoice {
    /// The strongest for each board's shape ([`HeuristicKind::best_for`]).
    #[default]
    Auto,
    Use(HeuristicKind),
}

impl HeuristicChoice {
    /// The heuristic for boards of `shape`: `auto` prefers pattern databases when their files
    /// are present (boards over 9 cells), then exact tables, then linear conflict.
    pub fn for_shape(self, shape: Shape, pdb_dir: Option<&std::path::Path>) -> HeuristicKind {
        match self {
            HeuristicChoice::Auto
                if shape.cells() > npuzzle_solver::EXACT_MAX_CELLS
                    && pattern_databases_present(pdb_dir, shape) =>
            {
                HeuristicKind::Pdb
            }
            HeuristicChoice::Auto => HeuristicKind::best_for(shape),
            HeuristicChoice::Use(kind) => kind,
        }
    }
}

impl std::str::FromStr for HeuristicChoice {
    type Err = npuzzle_solver::UnknownHeuristic;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("auto") {
            Ok(HeuristicChoice::Auto)
        } else {
            s.parse().map(HeuristicChoice::Use)
        }
    }
}

/// Solves boards one at a time, keeping one [`Solver`] per (goal, heuristic).
#[derive(Default)]
pub struct Engine {
    settings: Settings,
    solvers: HashMap<(Goal, HeuristicKind), Solver>,
}

impl Engine {
    pub fn new(settings: Settings) -> Engine {
        Engine {
            settings,
            solvers: HashMap::new(),
        }
    }

    /// Parses and solves one board. `shape` (from the input format) wins over the settings'.
    pub fn solve_text(&mut self, index: usize, text: &str, shape: Option<Shape>) -> Record {
        let board = match Board::parse(text, shape.or(self.settings.shape)) {
            Ok(b) => b,
            Err(e) => return Record::invalid(index, e.to_string()),
        };
        let goal = match self.settings.goal.resolve(board.shape()) {
            Ok(g) => g,
            Err(e) => return Record::invalid(index, e.to_string()),
        };
        let pdb_dir = self.settings.pdb_dir.as_deref();
        let kind = self.settings.heuristic.for_shape(board.shape(), pdb_dir);
        let solver = match self.solvers.entry((goal, kind)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let made = match kind {
                    HeuristicKind::Pdb => pattern_databases(pdb_dir, board.shape())
                        .map_err(|err| err.to_string())
                        .and_then(|pdb| Solver::with_pdb(goal, pdb).map_err(|e| e.to_string())),
                    _ => Solver::new(goal, kind).map_err(|e| e.to_string()),
                };
                match made {
                    Ok(s) => e.insert(s),
                    Err(err) => return Record::invalid(index, err),
                }
            }
        };
        // Timed from here: building a solver's tables is a one-time cost, not this board's.
        let started = Instant::now();
        let report = match solver.solve(&board, &Limits::default()) {
            Ok(r) => r,
            Err(e) => return Record::invalid(index, e.to_string()),
        };
        let record = match report.outcome {
            SearchOutcome::Solved(path) => Record::solved(index, moves_to_string(&path)),
            SearchOutcome::Unsolvable => Record::unsolvable(index),
            // Without limits the search only ends solved or unsolvable; say so if it did not.
            other => Record::failed(
                index,
                FailReason::Internal,
                format!("search ended without an answer: {other:?}"),
            ),
        };
        record.costing(report.stats.expanded, false, started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_reports_unsolvable_and_invalid() {
        let mut e = Engine::default();
        let r = e.solve_text(0, "2 3 4 1 5 x 7 6 8", None);
        assert_eq!((r.status, r.length), (Status::Solved, Some(19)));
        let r = e.solve_text(1, "2 1 3 4 5 6 7 8 0", None);
        assert_eq!(r.status, Status::Unsolvable);
        let r = e.solve_text(2, "1 2 3 4 5", None);
        assert_eq!(r.status, Status::Invalid);
        assert!(r.error.unwrap().contains("cannot infer the board size"));
    }
}
