//! Weighted IDA* ([`Solver::with_weight`]) on every state of the small boards: each path replays
//! to the goal and is at most `w` times the BFS distance, and a search stopped below its answer
//! proves a lower bound that is never above the distance.

use crate::common::{KORF24_50, bfs_distances, read_instances, shape};
use npuzzle_solver::{
    Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver, UnitOutcome, Weight,
};

const FACTORS: [&str; 5] = ["1", "1.1", "1.25", "2", "5"];

fn check_every_state(goal: Goal, every: usize) {
    let dist = bfs_distances(&goal);
    for kind in [HeuristicKind::Manhattan, HeuristicKind::LinearConflict] {
        for factor in FACTORS {
            let weight: Weight = factor.parse().expect("a factor");
            let solver = Solver::new(goal, kind)
                .expect("a solver")
                .with_weight(weight);
            let mut longer = 0;
            for (board, &d) in dist.iter().step_by(every) {
                let report = solver.solve(board, &Limits::default()).expect("same shape");
                let SearchOutcome::Solved(path) = report.outcome else {
                    panic!(
                        "{kind} w={weight}: {board:?} not solved: {:?}",
                        report.outcome
                    );
                };
                let verified = board.verify(&path, &goal).expect("legal moves");
                assert!(verified.reaches_goal, "{kind} w={weight}: {board:?}");
                let len = path.len() as u32;
                assert!(
                    weight.admits(len, d),
                    "{kind} w={weight}: {len} moves for {board:?}, optimum {d}"
                );
                longer += usize::from(len > d);
                // One bound below the answer: what it proves is never above the optimum.
                let first = solver.unit_bound(&root(board)).expect("same shape");
                let capped = Limits {
                    max_bound: Some(first),
                    ..Limits::default()
                };
                let report = solver.solve(board, &capped).expect("same shape");
                if let SearchOutcome::Exhausted { next_bound } = report.outcome {
                    let proven = weight.lower_bound(next_bound);
                    assert!(proven <= d, "{kind} w={weight}: proves {proven} > {d}");
                }
            }
            if weight.is_optimal() {
                assert_eq!(
                    longer, 0,
                    "{kind}: an optimal search returned a longer path"
                );
            }
        }
    }
}

fn root(board: &Board) -> npuzzle_solver::WorkUnit {
    npuzzle_solver::WorkUnit {
        board: *board,
        g: 0,
        last: None,
        prefix: Vec::new(),
        trail: Vec::new(),
    }
}

#[test]
fn every_2x3_and_3x2_state_is_solved_within_its_factor() {
    for s in [shape(2, 3), shape(3, 2)] {
        check_every_state(Goal::blank_last(s), 1);
        check_every_state(Goal::blank_first(s), 1);
    }
}

#[test]
fn every_2x4_state_is_solved_within_its_factor() {
    let s = shape(2, 4);
    check_every_state(Goal::blank_last(s), 1);
}

#[test]
fn every_thirteenth_3x3_state_is_solved_within_its_factor() {
    let s = shape(3, 3);
    check_every_state(Goal::blank_last(s), 13);
}

/// The cluster's way: the units of a frontier searched under one shared bound after another
/// (in the weight's units); the first path any unit finds is within the factor.
#[test]
fn units_under_a_shared_weighted_bound_find_a_path_within_the_factor() {
    let s = shape(4, 4);
    // Korf's #55 (41 moves), blank-first goal.
    let goal = Goal::blank_first(s);
    let board = Board::parse("13 8 14 3 9 1 0 7 15 5 4 10 12 2 6 11", Some(s)).expect("a board");
    let optimal = Solver::new(goal, HeuristicKind::LinearConflict).expect("a solver");
    let SearchOutcome::Solved(best) = optimal
        .solve(&board, &Limits::default())
        .expect("same shape")
        .outcome
    else {
        panic!("not solved");
    };
    assert_eq!(best.len(), 41);
    for factor in ["1.2", "1.5", "3"] {
        let weight: Weight = factor.parse().expect("a factor");
        let solver = optimal.clone().with_weight(weight);
        let frontier = solver.frontier(&board, 64).expect("solvable");
        let mut bound = (frontier.units.iter())
            .map(|u| solver.unit_bound(u).expect("same shape"))
            .min()
            .expect("units");
        let path = 'bounds: loop {
            let mut next = u32::MAX;
            for unit in &frontier.units {
                let report = solver
                    .search_unit(unit, bound, &Limits::default())
                    .expect("same shape");
                match report.outcome {
                    UnitOutcome::Found(path) => break 'bounds path,
                    UnitOutcome::Exhausted { next_bound } => next = next.min(next_bound),
                    other => panic!("w={weight}: {other:?}"),
                }
            }
            assert!(weight.lower_bound(next) <= best.len() as u32);
            bound = next;
        };
        assert!(board.verify(&path, &goal).expect("legal").reaches_goal);
        assert!(
            weight.admits(path.len() as u32, best.len() as u32),
            "w={weight}: {} moves, optimum {}",
            path.len(),
            best.len()
        );
    }
}

/// The first answer of a search (its incumbent): on every one of Korf & Felner's 24-puzzles a
/// legal path within a few million nodes of linear conflict, within its factor of the optimum.
#[test]
fn a_quick_path_is_found_for_every_korf_felner_24_puzzle() {
    let goal = Goal::blank_first(shape(5, 5));
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).expect("a solver");
    for instance in read_instances(KORF24_50) {
        let quick = solver
            .quick_path(&instance.board, 3_000_000, None)
            .expect("same shape")
            .unwrap_or_else(|| panic!("#{}: no path", instance.id));
        assert!(quick.expanded <= 3_000_000 + npuzzle_solver::CHECK_INTERVAL);
        let verified = instance
            .board
            .verify(&quick.path, &goal)
            .expect("legal moves");
        assert!(verified.reaches_goal, "#{}", instance.id);
        let len = quick.path.len() as u32;
        assert!(len >= instance.optimal as u32);
        assert!(
            quick.weight.admits(len, instance.optimal as u32),
            "#{}: {len} moves at w={}, optimum {}",
            instance.id,
            quick.weight,
            instance.optimal
        );
    }
}

#[test]
fn an_unsolvable_board_has_no_quick_path() {
    let s = shape(3, 3);
    let solver = Solver::new(Goal::blank_last(s), HeuristicKind::LinearConflict).expect("a solver");
    let board = Board::parse("2 1 3 4 5 6 7 8 0", Some(s)).expect("a board");
    assert_eq!(solver.quick_path(&board, 1000, None), Ok(None));
}
