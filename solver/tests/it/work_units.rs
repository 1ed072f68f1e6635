//! The work-unit API: searching every frontier unit under a shared bound schedule gives the same
//! optimal length as serial IDA*, and each found path replays to the goal.

use crate::common::{KORF100, korf_md_nodes, read_instances, shape};
use npuzzle_solver::{
    Board, Goal, HeuristicKind, Limits, Move, SearchOutcome, Solver, UnitOutcome,
};

/// Runs the cluster's schedule on one thread: every unit at each bound, next bound = the minimum
/// of the units' next bounds, the first solution at a bound wins.
fn distributed_length(solver: &Solver, board: &Board, min_units: usize) -> (usize, Vec<Move>) {
    let frontier = solver.frontier(board, min_units).unwrap();
    if let Some(path) = frontier.solved {
        return (path.len(), path);
    }
    assert!(frontier.units.len() >= min_units);
    for u in &frontier.units {
        assert_eq!(u.g, frontier.depth);
        assert_eq!(u.prefix.len() as u32, u.g);
        assert_eq!(board.apply(&u.prefix).unwrap(), u.board);
    }
    let mut bound = frontier
        .units
        .iter()
        .map(|u| solver.unit_lower_bound(u).unwrap())
        .min()
        .unwrap();
    loop {
        let mut next = u32::MAX;
        for unit in &frontier.units {
            let report = solver.search_unit(unit, bound, &Limits::default()).unwrap();
            match report.outcome {
                UnitOutcome::Found(path) => {
                    assert!(path.len() as u32 <= bound);
                    return (path.len(), path);
                }
                UnitOutcome::Exhausted { next_bound } => {
                    assert!(next_bound > bound);
                    next = next.min(next_bound);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        bound = next;
    }
}

#[test]
fn units_give_the_serial_optimum_on_korf_instances() {
    let goal = Goal::blank_first(shape(4, 4));
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let mut nodes = korf_md_nodes();
    nodes.sort_by_key(|&(_, n)| n);
    let instances = read_instances(KORF100);
    for &(id, _) in nodes.iter().take(5) {
        let inst = instances.iter().find(|i| i.id == id).unwrap();
        for min_units in [1, 10, 200] {
            let (len, path) = distributed_length(&solver, &inst.board, min_units);
            assert_eq!(len, inst.optimal, "#{id} with {min_units} units");
            assert!(inst.board.verify(&path, &goal).unwrap().reaches_goal);
        }
    }
}

#[test]
fn units_give_the_serial_optimum_on_random_8_puzzles() {
    let s = shape(3, 3);
    let goal = Goal::blank_last(s);
    let solver = Solver::new(goal, HeuristicKind::Manhattan).unwrap();
    let mut seed = 7u64;
    for _ in 0..200 {
        let mut board = *goal.board();
        for _ in 0..60 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if let Some(b) = board.after(Move::ALL[(seed >> 33) as usize % 4]) {
                board = b;
            }
        }
        let SearchOutcome::Solved(serial) =
            solver.solve(&board, &Limits::default()).unwrap().outcome
        else {
            panic!()
        };
        for min_units in [2, 30, 500] {
            let (len, path) = distributed_length(&solver, &board, min_units);
            assert_eq!(len, serial.len(), "{board:?} with {min_units} units");
            assert!(board.verify(&path, &goal).unwrap().reaches_goal);
        }
    }
}

#[test]
fn frontier_drops_duplicate_states() {
    let s = shape(4, 4);
    let goal = Goal::blank_first(s);
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let board = read_instances(KORF100)[0].board;
    let frontier = solver.frontier(&board, 1000).unwrap();
    let distinct: std::collections::HashSet<_> = frontier.units.iter().map(|u| u.board).collect();
    assert_eq!(distinct.len(), frontier.units.len());
    // Plain tree expansion would repeat states from depth 4 on (a 2x2 cycle takes 12 moves,
    // but undoing two moves in a different order already meets at depth 4).
    assert!(frontier.depth >= 4);
}

#[test]
fn frontier_of_an_unsolvable_board_is_an_error() {
    let s = shape(3, 3);
    let solver = Solver::new(Goal::blank_last(s), HeuristicKind::Manhattan).unwrap();
    let board = Board::parse("2 1 3 4 5 6 7 8 0", None).unwrap();
    assert!(solver.frontier(&board, 10).is_err());
}

#[test]
fn split_units_find_what_the_unit_finds() {
    // Korf instances: take the frontier, split every unit, search the parts under the shared
    // schedule: same optimal length as serial.
    let goal = Goal::blank_first(shape(4, 4));
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let instances = read_instances(KORF100);
    for inst in instances.iter().filter(|i| [12, 42, 55].contains(&i.id)) {
        let frontier = solver.frontier(&inst.board, 8).unwrap();
        let mut units = Vec::new();
        for u in &frontier.units {
            let parts = solver.split_unit(u, 20);
            assert!(parts.len() >= 20);
            for p in &parts {
                assert_eq!(p.prefix.len() as u32, p.g);
                assert_eq!(inst.board.apply(&p.prefix).unwrap(), p.board);
                assert!(p.prefix.starts_with(&u.prefix));
            }
            units.extend(parts);
        }
        let mut bound = units
            .iter()
            .map(|u| solver.unit_lower_bound(u).unwrap())
            .min()
            .unwrap();
        let found = 'outer: loop {
            let mut next = u32::MAX;
            for unit in &units {
                match solver
                    .search_unit(unit, bound, &Limits::default())
                    .unwrap()
                    .outcome
                {
                    UnitOutcome::Found(path) => break 'outer path,
                    UnitOutcome::Exhausted { next_bound } => next = next.min(next_bound),
                    other => panic!("{other:?}"),
                }
            }
            bound = next;
        };
        assert_eq!(found.len(), inst.optimal, "#{}", inst.id);
        assert!(inst.board.verify(&found, &goal).unwrap().reaches_goal);
    }
}
