//! Which engine a heuristic gets: one variant per heuristic type the search is compiled for.

use super::engine::Engine;
use crate::board::Board;
use crate::exact::ExactDistance;
use crate::goal::Goal;
use crate::heuristic::{LinearConflict, Manhattan};
use crate::pdb::{PdbAll, PdbHeuristic, PdbMax, SparseMax, ZeroMax};
use crate::shape::Shape;

#[derive(Clone, Debug)]
pub(super) enum AnyEngine {
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
    Split1(Box<Engine<SparseMax<1, true>>>),
    Split2(Box<Engine<SparseMax<2, true>>>),
    Split3(Box<Engine<SparseMax<3, true>>>),
    Split4(Box<Engine<SparseMax<4, true>>>),
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
            AnyEngine::Split1($e) => $body,
            AnyEngine::Split2($e) => $body,
            AnyEngine::Split3($e) => $body,
            AnyEngine::Split4($e) => $body,
            AnyEngine::Zero1($e) => $body,
            AnyEngine::Zero2($e) => $body,
            AnyEngine::Zero3($e) => $body,
        }
    };
}
pub(super) use with_engine;

/// The engine for a PDB heuristic: its partitions' ranks carried move by move, up to 4
/// partitions under the max: in [`SparseMax`]'s compact state where it takes them (sparse
/// tables, the 5x5 ones), else in [`PdbMax`]'s (more partitions, and the dual lookups, go
/// through [`PdbHeuristic`]'s own `Heuristic`, which evaluates them afresh). Zero-aware
/// tables go through [`SparseMax`] too in the split layout (the 5x5 ones), else, up to 3
/// partitions, through [`ZeroMax`].
pub(super) fn pdb_engine(shape: Shape, goal: &Goal, pdb: PdbHeuristic) -> AnyEngine {
    let split = match pdb.partitions() {
        1 => SparseMax::new(&pdb).map(|h| AnyEngine::Split1(Box::new(Engine::new(shape, goal, h)))),
        2 => SparseMax::new(&pdb).map(|h| AnyEngine::Split2(Box::new(Engine::new(shape, goal, h)))),
        3 => SparseMax::new(&pdb).map(|h| AnyEngine::Split3(Box::new(Engine::new(shape, goal, h)))),
        4 => SparseMax::new(&pdb).map(|h| AnyEngine::Split4(Box::new(Engine::new(shape, goal, h)))),
        _ => None,
    };
    if let Some(engine) = split {
        return engine;
    }
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
pub(super) fn rotate_goal(goal: &Goal) -> Goal {
    let tiles: Vec<u8> = goal.tiles().iter().rev().copied().collect();
    match Board::new(goal.shape(), &tiles) {
        Ok(b) => Goal::from_board(b),
        Err(_) => unreachable!("a turned permutation is a permutation"),
    }
}
