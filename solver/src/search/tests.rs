use super::engine::BoardSet;
use super::*;
use crate::shape::Shape;
use crate::{Board, Goal, HeuristicKind, WorkUnit};

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
    let solver = Solver::new(Goal::blank_first(shape), HeuristicKind::Manhattan).expect("a solver");
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
