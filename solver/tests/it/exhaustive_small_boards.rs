//! Every state of the small boards: solved lengths equal BFS distances, parity agrees with
//! reachability, and the heuristics are admissible and consistent everywhere.

use crate::common::{bfs_distances, permutations, shape};
use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Shape, Solver};

fn check_every_state(shape: Shape, goal: Goal) {
    let dist = bfs_distances(&goal);
    let n = shape.cells();
    let factorial: usize = (1..=n).product();
    assert_eq!(
        dist.len(),
        factorial / 2,
        "half of all permutations are reachable"
    );

    // Parity decides reachability for every permutation, without searching.
    for perm in permutations(n) {
        let board = Board::new(shape, &perm).unwrap();
        assert_eq!(
            goal.can_reach(&board).unwrap(),
            dist.contains_key(&board),
            "{board:?}"
        );
    }

    for kind in HeuristicKind::ALL {
        let solver = Solver::new(goal, kind).unwrap();
        for (board, &d) in &dist {
            let h = solver.estimate(board).unwrap();
            assert!(h <= d, "{kind}: h={h} > distance {d} for {board:?}");
            for mv in npuzzle_solver::Move::ALL {
                if let Some(next) = board.after(mv) {
                    let hn = solver.estimate(&next).unwrap();
                    assert!(
                        h.abs_diff(hn) <= 1,
                        "{kind}: inconsistent across {mv} from {board:?}"
                    );
                }
            }
            let report = solver.solve(board, &Limits::default()).unwrap();
            let SearchOutcome::Solved(path) = report.outcome else {
                panic!("{kind}: {board:?} not solved: {:?}", report.outcome);
            };
            assert_eq!(path.len() as u32, d, "{kind}: not optimal for {board:?}");
            if kind == HeuristicKind::Exact {
                // A perfect heuristic walks straight down one optimal path.
                assert_eq!(h, d);
                assert_eq!(report.stats.expanded, d as u64, "{board:?}");
            }
            assert!(board.verify(&path, &goal).unwrap().reaches_goal);
        }
    }
}

#[test]
fn every_2x2_state() {
    let s = shape(2, 2);
    check_every_state(s, Goal::blank_last(s));
}

#[test]
fn every_2x3_state_both_goals() {
    let s = shape(2, 3);
    check_every_state(s, Goal::blank_last(s));
    check_every_state(s, Goal::blank_first(s));
}

#[test]
fn every_3x2_state_both_goals() {
    let s = shape(3, 2);
    check_every_state(s, Goal::blank_last(s));
    check_every_state(s, Goal::blank_first(s));
}

#[test]
fn every_3x2_state_with_a_custom_goal() {
    let s = shape(3, 2);
    let goal = Goal::from_board(Board::parse("5 0 4 3 1 2", Some(s)).unwrap());
    check_every_state(s, goal);
}

#[test]
fn every_3x3_state() {
    let s = shape(3, 3);
    check_every_state(s, Goal::blank_last(s));
}

#[test]
fn the_8_puzzle_has_181440_states_and_diameter_31() {
    let s = shape(3, 3);
    let dist = bfs_distances(&Goal::blank_last(s));
    assert_eq!(dist.len(), 181_440);
    assert_eq!(dist.values().max(), Some(&31));
}
