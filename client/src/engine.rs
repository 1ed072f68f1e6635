//! The in-process engine: parse one board, check parity, search, and describe the answer as an
//! [`Answer`] (the JSON type shared with the coordinator's HTTP API, from `npuzzle_proto`).
//! Solvers (and their tables) are kept per goal and heuristic.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Instant;

use npuzzle_solver::{
    Board, Goal, GoalSpec, HeuristicKind, Limits, PdbHeuristic, SearchOutcome, Shape, Solver,
    Weight, moves_to_string,
};

pub use npuzzle_proto::answer::{Answer, FailReason, Status};

/// How boards are solved.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Board size; `None` infers squares from the tile count.
    pub shape: Option<Shape>,
    pub goal: GoalSpec,
    pub heuristic: HeuristicChoice,
    /// Where pattern databases are kept (`None`: `$NPUZZLE_PDB_DIR` or the user cache).
    pub pdb_dir: Option<std::path::PathBuf>,
    /// Any path at most this factor of the optimum will do ([`Weight::OPTIMAL`]: optimal).
    pub within: Weight,
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
    pub fn solve_text(&mut self, index: usize, text: &str, shape: Option<Shape>) -> Answer {
        let board = match Board::parse(text, shape.or(self.settings.shape)) {
            Ok(b) => b,
            Err(e) => return Answer::invalid(index, e.to_string()),
        };
        let goal = match self.settings.goal.resolve(board.shape()) {
            Ok(g) => g,
            Err(e) => return Answer::invalid(index, e.to_string()),
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
                    Ok(s) => e.insert(s.with_weight(self.settings.within)),
                    Err(err) => return Answer::invalid(index, err),
                }
            }
        };
        // Timed from here: building a solver's tables is a one-time cost, not this board's.
        let started = Instant::now();
        let report = match solver.solve(&board, &Limits::default()) {
            Ok(r) => r,
            Err(e) => return Answer::invalid(index, e.to_string()),
        };
        let record = match report.outcome {
            SearchOutcome::Solved(path) => {
                // Found under the last bound, every one below it exhausted.
                let weight = self.settings.within;
                let bound = report.stats.iterations.last().map_or(0, |i| i.bound);
                let lower_bound = weight.lower_bound(bound).min(path.len() as u32);
                if weight.is_optimal() {
                    Answer::solved(index, moves_to_string(&path))
                } else {
                    Answer::solved_within(index, moves_to_string(&path), lower_bound)
                }
            }
            SearchOutcome::Unsolvable => Answer::unsolvable(index),
            // Without limits the search only ends solved or unsolvable; say so if it did not.
            other => Answer::failed(
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
