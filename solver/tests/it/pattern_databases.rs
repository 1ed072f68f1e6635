//! Pattern databases: admissible on every state of boards small enough to check against
//! breadth-first search, optimal there and through the 180° turn for the blank-last goal, and
//! optimal on Korf's instances with the 6-6-3 partition.
//!
//! Not consistent: a table stores, per placement, the least cost over where the blank may be
//! (Korf & Felner's construction), and one move can take the blank out of the region that gave
//! that least cost. `tables_are_not_consistent_and_this_is_why` pins a case.

use std::time::Instant;

use crate::common::{KORF100, bfs_distances, read_instances, shape};
use npuzzle_solver::{
    BlankGoal, Board, Goal, Limits, Move, Partition, PatternDb, PdbHeuristic, SearchOutcome, Shape,
    Solver,
};

/// Checks every state; returns how many (state, move) pairs change h by more than 1.
fn check_every_state(s: Shape, partition: &str, reflect: bool) -> usize {
    let partition = Partition::named(s, partition).unwrap();
    let pdb = PdbHeuristic::build(&partition, reflect, |_, _, _| {}).unwrap();
    check_every_state_with(s, &pdb)
}

/// [`check_every_state`] for a heuristic made here: every estimate at most the distance, every
/// answer (the search's pathmax and BPMX included) optimal and replayed to the goal.
fn check_every_state_with(s: Shape, pdb: &PdbHeuristic) -> usize {
    let mut jumps = 0;
    for goal in [Goal::blank_first(s), Goal::blank_last(s)] {
        let solver = Solver::with_pdb(goal, pdb.clone()).unwrap();
        let dist = bfs_distances(&goal);
        for (board, &d) in &dist {
            let h = solver.estimate(board).unwrap();
            assert!(h <= d, "h={h} > {d} for {board:?}");
            for mv in Move::ALL {
                if let Some(next) = board.after(mv) {
                    let hn = solver.estimate(&next).unwrap();
                    jumps += usize::from(h.abs_diff(hn) > 1);
                }
            }
            let report = solver.solve(board, &Limits::default()).unwrap();
            let SearchOutcome::Solved(path) = report.outcome else {
                panic!("{board:?}: {:?}", report.outcome)
            };
            assert_eq!(path.len() as u32, d, "{board:?}");
            assert!(board.verify(&path, &goal).unwrap().reaches_goal);
        }
    }
    jumps
}

#[test]
fn every_3x3_state_with_4_4_and_reflection() {
    let jumps = check_every_state(shape(3, 3), "4-4", true);
    eprintln!("3x3 4-4 with reflection: {jumps} moves change h by more than 1");
}

/// A second split of the 8-puzzle's tiles, for the max over partitions.
fn checkerboard_3x3() -> Partition {
    Partition {
        name: "checkerboard".into(),
        shape: shape(3, 3),
        patterns: vec![vec![1, 3, 5, 7], vec![2, 4, 6, 8]],
    }
}

#[test]
fn every_3x3_state_with_the_max_over_two_partitions() {
    let s = shape(3, 3);
    let build = |p: &Partition| PdbHeuristic::build(p, true, |_, _, _| {}).unwrap();
    let first = build(&Partition::named(s, "4-4").unwrap());
    let second = build(&checkerboard_3x3());
    let both = first.clone().with_also(second.clone()).unwrap();
    assert_eq!(both.partitions(), 2);
    check_every_state_with(s, &both);
    // Above either alone on some states, never below.
    let solvers = [first, second, both].map(|p| Solver::with_pdb(Goal::blank_first(s), p).unwrap());
    let mut raised = 0;
    for board in bfs_distances(&Goal::blank_first(s)).keys() {
        let [a, b, m] = [0, 1, 2].map(|i| solvers[i].estimate(board).unwrap());
        assert_eq!(m, a.max(b), "{board:?}");
        raised += usize::from(m > a);
    }
    assert!(
        raised > 1000,
        "the second partition raised only {raised} values"
    );
}

#[test]
fn every_3x3_state_with_the_dual_lookups() {
    let s = shape(3, 3);
    let partition = Partition::named(s, "4-4").unwrap();
    let tables = (partition.dual_tables().iter())
        .map(|t| PatternDb::build_for(s, &t.tiles, BlankGoal::Free, |_, _| {}).unwrap())
        .collect();
    let pdb = PdbHeuristic::build(&partition, true, |_, _, _| {}).unwrap();
    let pdb = pdb.with_dual(&partition, tables).unwrap();
    assert!(pdb.has_dual());
    check_every_state_with(s, &pdb);
}

#[test]
fn every_3x3_state_with_4_4_without_reflection() {
    check_every_state(shape(3, 3), "4-4", false);
}

#[test]
fn every_2x4_and_4x2_state_with_3_4() {
    check_every_state(shape(2, 4), "3-4", true); // not square: reflection is skipped
    check_every_state(shape(4, 2), "3-4", false);
}

#[test]
fn tables_are_not_consistent_and_this_is_why() {
    // 3x3, blank-first goal, pattern {1,2,3,4}. Found by the exhaustive check: one move of
    // the blank changes the 4-4 value by more than 1.
    let s = shape(3, 3);
    let pdb =
        PdbHeuristic::build(&Partition::named(s, "4-4").unwrap(), false, |_, _, _| {}).unwrap();
    let solver = Solver::with_pdb(Goal::blank_first(s), pdb).unwrap();
    let board = Board::parse("6 0 5 1 7 4 2 3 8", None).unwrap();
    let next = board.after(Move::Down).unwrap();
    let (h, hn) = (
        solver.estimate(&board).unwrap(),
        solver.estimate(&next).unwrap(),
    );
    assert!(h.abs_diff(hn) > 1, "h {h} -> {hn}");
    // Still admissible on both sides.
    let dist = bfs_distances(&Goal::blank_first(s));
    assert!(h <= dist[&board] && hn <= dist[&next]);
}

#[test]
fn goals_with_the_blank_elsewhere_are_refused() {
    let s = shape(3, 3);
    let pdb =
        PdbHeuristic::build(&Partition::named(s, "4-4").unwrap(), true, |_, _, _| {}).unwrap();
    let goal = Goal::from_board(Board::parse("1 2 3 4 0 5 6 7 8", None).unwrap());
    assert!(Solver::with_pdb(goal, pdb).is_err());
}

/// `T(s)[p] = n - s[n-1-p]` (blank stays 0) maps a blank-first instance to a blank-last one of
/// the same length.
fn to_blank_last(board: &Board) -> Board {
    let n = board.tiles().len() as u8;
    let tiles: Vec<u8> = board
        .tiles()
        .iter()
        .rev()
        .map(|&t| if t == 0 { 0 } else { n - t })
        .collect();
    Board::new(board.shape(), &tiles).unwrap()
}

#[test]
fn korf_instances_are_solved_optimally_with_6_6_3() {
    let s = shape(4, 4);
    let started = Instant::now();
    let pdb =
        PdbHeuristic::build(&Partition::named(s, "6-6-3").unwrap(), true, |_, _, _| {}).unwrap();
    eprintln!("6-6-3 built in {:.1} s", started.elapsed().as_secs_f64());
    // Round trip through bytes, as the cache directory stores them.
    let tables: Vec<PatternDb> = pdb
        .tables()
        .iter()
        .map(|db| PatternDb::from_bytes(&db.to_bytes(), s, db.tiles()).unwrap())
        .collect();
    let pdb = PdbHeuristic::new(tables, true).unwrap();
    let first = Solver::with_pdb(Goal::blank_first(s), pdb.clone()).unwrap();
    let last = Solver::with_pdb(Goal::blank_last(s), pdb).unwrap();
    let lc = Solver::new(
        Goal::blank_first(s),
        npuzzle_solver::HeuristicKind::LinearConflict,
    )
    .unwrap();
    let (mut n_pdb, mut n_lc) = (0, 0);
    for inst in read_instances(KORF100).iter().take(25) {
        let r = first.solve(&inst.board, &Limits::default()).unwrap();
        let SearchOutcome::Solved(path) = r.outcome else {
            panic!("#{}", inst.id)
        };
        assert_eq!(path.len(), inst.optimal, "#{}", inst.id);
        assert!(inst.board.verify(&path, first.goal()).unwrap().reaches_goal);
        n_pdb += r.stats.expanded;
        let flipped = to_blank_last(&inst.board);
        let r = last.solve(&flipped, &Limits::default()).unwrap();
        let SearchOutcome::Solved(path) = r.outcome else {
            panic!("#{}", inst.id)
        };
        assert_eq!(path.len(), inst.optimal, "#{} blank-last", inst.id);
        assert!(flipped.verify(&path, last.goal()).unwrap().reaches_goal);
        if inst.id <= 5 {
            n_lc += lc
                .solve(&inst.board, &Limits::default())
                .unwrap()
                .stats
                .expanded;
        }
    }
    assert!(n_pdb < n_lc, "pdb {n_pdb} nodes for 25 vs lc {n_lc} for 5");
}
