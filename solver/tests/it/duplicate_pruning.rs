//! Skipping duplicate move sequences changes no answer: on every state of the small boards the
//! search returns the path plain IDA* returns, with fewer nodes; and a unit searched as a worker
//! gets it (its recent moves, no prefix) is searched exactly as with its whole prefix.

use crate::common::{KORF100, bfs_distances, read_instances, shape};
use npuzzle_solver::{
    Goal, HeuristicKind, Limits, SearchOutcome, Solver, TRAIL_MOVES, UnitOutcome, WorkUnit,
};

fn same_answers_everywhere(goal: Goal, kind: HeuristicKind) {
    let pruning = Solver::new(goal, kind).unwrap();
    let plain = Solver::new(goal, kind)
        .unwrap()
        .with_duplicate_pruning(false);
    let (mut nodes_pruning, mut nodes_plain) = (0u64, 0u64);
    for (board, &d) in &bfs_distances(&goal) {
        let a = pruning.solve(board, &Limits::default()).unwrap();
        let b = plain.solve(board, &Limits::default()).unwrap();
        assert_eq!(a.outcome, b.outcome, "{board:?}");
        let SearchOutcome::Solved(path) = &a.outcome else {
            panic!("{board:?}: {:?}", a.outcome)
        };
        assert_eq!(path.len() as u32, d, "{board:?}");
        assert!(a.stats.generated <= b.stats.generated, "{board:?}");
        nodes_pruning += a.stats.generated;
        nodes_plain += b.stats.generated;
    }
    assert!(
        nodes_pruning < nodes_plain,
        "{goal:?} {kind}: {nodes_pruning} nodes with pruning, {nodes_plain} without"
    );
}

#[test]
fn every_3x3_state_gets_plain_idas_path() {
    let s = shape(3, 3);
    same_answers_everywhere(Goal::blank_last(s), HeuristicKind::LinearConflict);
}

#[test]
fn every_2x4_and_4x2_state_gets_plain_idas_path_for_both_goals() {
    for s in [shape(2, 4), shape(4, 2)] {
        for goal in [Goal::blank_last(s), Goal::blank_first(s)] {
            same_answers_everywhere(goal, HeuristicKind::Manhattan);
        }
    }
}

/// The frontier of Korf's #12 (at least 1,000 units), each unit searched under the optimal bound.
#[test]
fn a_unit_sent_without_its_prefix_is_searched_as_with_it() {
    let goal = Goal::blank_first(shape(4, 4));
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let instance = read_instances(KORF100)
        .into_iter()
        .find(|i| i.id == 12)
        .unwrap();
    let frontier = solver.frontier(&instance.board, 1000).unwrap();
    assert!(frontier.depth as usize > TRAIL_MOVES / 2);
    let bound = instance.optimal as u32;
    let (mut with_trail, mut last_only) = (0u64, 0u64);
    let mut found = 0;
    for unit in &frontier.units {
        let whole = solver.search_unit(unit, bound, &Limits::default()).unwrap();
        // What a worker gets: the board, its last move and the recent moves.
        let sent = WorkUnit {
            prefix: Vec::new(),
            trail: unit.recent_moves(),
            ..unit.clone()
        };
        let report = solver
            .search_unit(&sent, bound, &Limits::default())
            .unwrap();
        assert_eq!(report.expanded, whole.expanded, "{:?}", unit.prefix);
        match (&report.outcome, &whole.outcome) {
            (UnitOutcome::Found(suffix), UnitOutcome::Found(path)) => {
                assert_eq!(&path[unit.prefix.len()..], suffix.as_slice());
                found += 1;
            }
            (a, b) => assert_eq!(a, b),
        }
        with_trail += report.expanded;
        let bare = WorkUnit {
            prefix: Vec::new(),
            trail: Vec::new(),
            ..unit.clone()
        };
        last_only += solver
            .search_unit(&bare, bound, &Limits::default())
            .unwrap()
            .expanded;
    }
    assert!(found > 0, "no unit holds an optimal path");
    // Knowing only the last move, a unit's search misses the duplicates that begin before it.
    assert!(
        with_trail < last_only,
        "{with_trail} nodes with the recent moves, {last_only} with the last only"
    );
}
