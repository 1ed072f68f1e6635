//! Cancellation, node budgets and bound limits end a search with distinct outcomes.

use std::sync::atomic::AtomicBool;

use crate::common::{KORF100, read_instances, shape};
use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver, UnitOutcome};

fn hard_board() -> Board {
    // Korf #3 needs hundreds of millions of Manhattan nodes.
    read_instances(KORF100)[2].board
}

fn md_solver() -> Solver {
    Solver::new(Goal::blank_first(shape(4, 4)), HeuristicKind::Manhattan).unwrap()
}

#[test]
fn a_raised_cancel_flag_stops_the_search() {
    let cancel = AtomicBool::new(true);
    let limits = Limits {
        cancel: Some(&cancel),
        ..Limits::default()
    };
    let report = md_solver().solve(&hard_board(), &limits).unwrap();
    assert_eq!(report.outcome, SearchOutcome::Cancelled);
    assert!(report.stats.expanded <= npuzzle_solver::CHECK_INTERVAL);
}

#[test]
fn cancel_from_another_thread_stops_a_running_search() {
    let cancel = AtomicBool::new(false);
    let solver = md_solver();
    let board = hard_board();
    std::thread::scope(|s| {
        let search = s.spawn(|| {
            solver.solve(
                &board,
                &Limits {
                    cancel: Some(&cancel),
                    ..Limits::default()
                },
            )
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        let report = search.join().unwrap().unwrap();
        assert_eq!(report.outcome, SearchOutcome::Cancelled);
    });
}

#[test]
fn a_node_budget_is_exact() {
    let limits = Limits {
        node_budget: Some(10_000),
        ..Limits::default()
    };
    let report = md_solver().solve(&hard_board(), &limits).unwrap();
    assert_eq!(report.outcome, SearchOutcome::BudgetExceeded);
    assert_eq!(report.stats.expanded, 10_000);
}

#[test]
fn a_max_bound_gives_exhausted_with_the_next_bound() {
    let board = hard_board(); // optimal 59, Manhattan 41
    let limits = Limits {
        max_bound: Some(45),
        ..Limits::default()
    };
    let report = md_solver().solve(&board, &limits).unwrap();
    assert_eq!(report.outcome, SearchOutcome::Exhausted { next_bound: 47 });
    let bounds: Vec<u32> = report.stats.iterations.iter().map(|i| i.bound).collect();
    assert_eq!(bounds, vec![41, 43, 45]);
}

#[test]
fn a_unit_over_its_bound_reports_its_f_without_expanding() {
    let solver = md_solver();
    let frontier = solver.frontier(&hard_board(), 1).unwrap();
    let unit = &frontier.units[0];
    let f = solver.unit_lower_bound(unit).unwrap();
    let report = solver.search_unit(unit, f - 2, &Limits::default()).unwrap();
    assert_eq!(report.outcome, UnitOutcome::Exhausted { next_bound: f });
    assert_eq!(report.expanded, 0);
    let cancel = AtomicBool::new(true);
    let report = solver
        .search_unit(
            unit,
            f + 20,
            &Limits {
                cancel: Some(&cancel),
                ..Limits::default()
            },
        )
        .unwrap();
    assert_eq!(report.outcome, UnitOutcome::Cancelled);
}

#[test]
fn the_goal_itself_is_solved_with_no_moves() {
    let s = shape(5, 5);
    let goal = Goal::blank_last(s);
    let report = Solver::new(goal, HeuristicKind::LinearConflict)
        .unwrap()
        .solve(goal.board(), &Limits::default())
        .unwrap();
    assert_eq!(report.outcome, SearchOutcome::Solved(vec![]));
}

#[test]
fn unsolvable_boards_are_not_searched() {
    let s = shape(4, 4);
    let goal = Goal::blank_last(s);
    let board = Board::parse("2 1 3 4 5 6 7 8 9 10 11 12 13 14 15 0", None).unwrap();
    let report = Solver::new(goal, HeuristicKind::LinearConflict)
        .unwrap()
        .solve(&board, &Limits::default())
        .unwrap();
    assert_eq!(report.outcome, SearchOutcome::Unsolvable);
    assert_eq!(report.stats.expanded, 0);
}
