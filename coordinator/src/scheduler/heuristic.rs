//! Which heuristic a job gets: what a worker says it can search ([`Capabilities`], from its
//! hello), and the heuristic given the workers connected now ([`choose_heuristic`]). A job
//! searched with pattern databases may only go to workers holding tables for its shape, so the
//! choice is made here, before the job exists, and refused with a message that says how to fix
//! it when no such worker is connected.

use std::collections::BTreeSet;

use npuzzle_solver::{Goal, HeuristicKind, Shape, Solver};

/// What a worker can search, from its hello.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Shapes the worker holds pattern databases for.
    pub pdb_shapes: BTreeSet<Shape>,
    /// It queues tasks sent ahead of its slots and answers an ask for one it has not started
    /// with [`Report::NotStarted`](super::Report::NotStarted) (see
    /// [`SchedulerConfig::prefetch`](super::SchedulerConfig::prefetch)). A worker that does not
    /// say so gets no task ahead.
    pub prefetch: bool,
}

impl Capabilities {
    /// Whether the worker can search units of `shape` with `heuristic`.
    pub fn can_search(&self, heuristic: HeuristicKind, shape: Shape) -> bool {
        heuristic != HeuristicKind::Pdb || self.pdb_shapes.contains(&shape)
    }
}

/// Why a request cannot get the heuristic it asked for from the workers connected now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeuristicUnavailable {
    #[error(
        "no connected worker has pattern databases for {shape} boards; build them on the workers with `npuzzle pdb build --size {shape} --partition P` (`npuzzle pdb build --help` lists the partitions) and restart the workers, or ask for another heuristic"
    )]
    NoPatternDatabases { shape: Shape },
}

/// The heuristic for a job on boards of `goal`'s shape, given what was `requested` (`None`:
/// auto) and the shapes connected workers hold pattern databases for. Auto means pattern
/// databases when a connected worker has them for the shape (boards of more than 9 cells,
/// goals they serve), else [`HeuristicKind::best_for`]. An explicit `Pdb` with no such worker
/// is an error naming the shape.
pub fn choose_heuristic(
    requested: Option<HeuristicKind>,
    goal: &Goal,
    pdb_shapes: &BTreeSet<Shape>,
) -> Result<HeuristicKind, HeuristicUnavailable> {
    let shape = goal.shape();
    let served = pdb_shapes.contains(&shape);
    match requested {
        Some(HeuristicKind::Pdb) if !served => {
            Err(HeuristicUnavailable::NoPatternDatabases { shape })
        }
        Some(kind) => Ok(kind),
        None if served
            && shape.cells() > npuzzle_solver::EXACT_MAX_CELLS
            && Solver::pdb_serves_goal(goal) =>
        {
            Ok(HeuristicKind::Pdb)
        }
        None => Ok(HeuristicKind::best_for(shape)),
    }
}
