//! A unit search stopped part-way (node budget or hand-back request) keeps its work: the pieces it
//! hands back hold exactly the rest of the bound. Searching them in depth-first order expands the
//! serial search's nodes plus one per stop (the node it stopped at is expanded again) plus those
//! of pieces given up part-way after the stop (`UnitReport::repeated`), finds the same path at
//! the same length, and gives the same next bound.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;

use crate::common::{KORF100, read_instances, shape};
use npuzzle_solver::{
    Board, Goal, HeuristicKind, Limits, Move, Partition, PdbHeuristic, Piece, SearchOutcome,
    Solver, UnitOutcome, WorkUnit,
};

fn root(board: &Board) -> WorkUnit {
    WorkUnit {
        board: *board,
        g: 0,
        last: None,
        prefix: Vec::new(),
        trail: Vec::new(),
    }
}

/// What one bound gave when searched as pieces of at most `budget` nodes each.
struct Pieced {
    found: Option<Vec<Move>>,
    next_bound: u32,
    expanded: u64,
    stops: u64,
    repeated: u64,
}

/// Searches `unit` under `bound`, splitting whenever `budget` runs out, pieces in depth-first
/// order (a split's pieces go before everything queued earlier).
fn search_in_pieces(
    solver: &Solver,
    board: &Board,
    unit: WorkUnit,
    bound: u32,
    budget: u64,
) -> Pieced {
    let mut queue = VecDeque::from([unit]);
    let mut out = Pieced {
        found: None,
        next_bound: u32::MAX,
        expanded: 0,
        stops: 0,
        repeated: 0,
    };
    let limits = Limits {
        node_budget: Some(budget),
        ..Limits::default()
    };
    while let Some(unit) = queue.pop_front() {
        assert_eq!(board.apply(&unit.prefix).unwrap(), unit.board);
        assert_eq!(unit.prefix.len() as u32, unit.g);
        let report = solver.search_unit(&unit, bound, &limits).unwrap();
        out.expanded += report.expanded;
        out.repeated += report.repeated;
        if report.absorbed > 0 && !matches!(report.outcome, UnitOutcome::Split(_)) {
            // It stopped, then searched every piece itself.
            out.stops += 1;
        }
        match report.outcome {
            UnitOutcome::Found(path) => {
                out.found = Some(path);
                return out;
            }
            UnitOutcome::Exhausted { next_bound } => {
                out.next_bound = out.next_bound.min(next_bound)
            }
            UnitOutcome::Split(split) => {
                assert_eq!(split.bound, bound);
                assert!(split.next_bound > bound);
                out.stops += 1;
                out.next_bound = out.next_bound.min(split.next_bound);
                for Piece { unit: p, f } in split.pieces.iter().rev() {
                    assert!(*f <= bound, "a piece above the bound was handed back");
                    assert_eq!(*f, solver.unit_lower_bound(p).unwrap());
                    assert!(p.prefix.starts_with(&unit.prefix));
                    queue.push_front(p.clone());
                }
            }
            UnitOutcome::Cancelled => panic!("nothing cancels"),
        }
    }
    out
}

/// A linear-conflict solver for Korf's goal, and Korf's instance `id`.
fn korf_lc(id: usize) -> (Solver, crate::common::Instance) {
    let goal = Goal::blank_first(shape(4, 4));
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let inst = read_instances(KORF100)
        .into_iter()
        .find(|i| i.id == id)
        .unwrap();
    (solver, inst)
}

/// The serial search's bounds with their nodes, and its path.
fn serial(solver: &Solver, board: &Board) -> (Vec<(u32, u64)>, Vec<Move>) {
    let report = solver.solve(board, &Limits::default()).unwrap();
    let SearchOutcome::Solved(path) = report.outcome else {
        panic!("{:?}", report.outcome)
    };
    let bounds = report
        .stats
        .iterations
        .iter()
        .map(|i| (i.bound, i.expanded))
        .collect();
    (bounds, path)
}

fn check_every_bound(solver: &Solver, board: &Board, budget: u64) {
    let (bounds, path) = serial(solver, board);
    let mut total_stops = 0;
    for (i, &(bound, nodes)) in bounds.iter().enumerate() {
        let pieced = search_in_pieces(solver, board, root(board), bound, budget);
        // Every stop expands its node a second time; nothing else is searched twice but the
        // part of a piece given up after a stop.
        assert_eq!(
            pieced.expanded,
            nodes + pieced.stops + pieced.repeated,
            "bound {bound}"
        );
        total_stops += pieced.stops;
        match bounds.get(i + 1) {
            Some(&(next, _)) => {
                assert!(pieced.found.is_none());
                assert_eq!(pieced.next_bound, next);
            }
            None => {
                let found = pieced.found.expect("the last bound finds the path");
                assert_eq!(
                    found, path,
                    "depth-first pieces find the serial search's path"
                );
                assert!(board.verify(&found, solver.goal()).unwrap().reaches_goal);
            }
        }
    }
    let largest = bounds.iter().map(|&(_, n)| n).max().unwrap_or(0);
    assert_eq!(
        total_stops > 0,
        largest > budget,
        "stops {total_stops}, budget {budget}, largest bound {largest} nodes"
    );
}

#[test]
fn pieces_of_a_stopped_unit_hold_exactly_the_rest_of_the_bound() {
    let goal = Goal::blank_first(shape(4, 4));
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let instances = read_instances(KORF100);
    // Korf's #79 and #12: 42 and 45 moves. A budget of 2 stops at nearly every node.
    for id in [79, 12] {
        let inst = instances.iter().find(|i| i.id == id).unwrap();
        for budget in [5_000, 100_000] {
            check_every_bound(&solver, &inst.board, budget);
        }
    }
    let walk = npuzzle_solver::parse_moves("RRRDLLLDRRRDLLLURD").unwrap();
    let easy = goal.board().apply(&walk).unwrap();
    check_every_bound(&solver, &easy, 2);
}

#[test]
fn pieces_map_back_through_a_turned_pattern_database_search() {
    // 3x3 pattern databases serve the judge goal (blank last) through a 180° turn: the pieces'
    // moves must come back in the board's own orientation.
    let s = shape(3, 3);
    let pdb =
        PdbHeuristic::build(&Partition::named(s, "4-4").unwrap(), true, |_, _, _| {}).unwrap();
    let solver = Solver::with_pdb(Goal::blank_last(s), pdb).unwrap();
    for text in ["8 6 7 2 5 4 3 0 1", "6 4 7 8 5 0 3 2 1"] {
        let board = Board::parse(text, None).unwrap();
        check_every_bound(&solver, &board, 3);
    }
}

#[test]
fn search_from_iterates_then_hands_back_the_rest_of_its_bound() {
    let (solver, inst) = korf_lc(12);
    let (bounds, path) = serial(&solver, &inst.board);
    // A budget that runs out in the third bound.
    let budget = bounds[0].1 + bounds[1].1 + bounds[2].1 / 2;
    let limits = Limits {
        node_budget: Some(budget),
        ..Limits::default()
    };
    let report = solver.search_from(&root(&inst.board), 0, &limits).unwrap();
    let UnitOutcome::Split(split) = report.outcome else {
        panic!("{:?}", report.outcome)
    };
    assert_eq!(split.bound, bounds[2].0);
    let iterations: Vec<(u32, u64)> = report
        .iterations
        .iter()
        .map(|i| (i.bound, i.expanded))
        .collect();
    assert_eq!(&iterations[..2], &bounds[..2]);
    assert_eq!(iterations[2].0, bounds[2].0);
    // The rest of the third bound, then the later ones, as pieces.
    let mut rest = 0;
    let mut next = split.next_bound;
    for piece in &split.pieces {
        let r = search_in_pieces(
            &solver,
            &inst.board,
            piece.unit.clone(),
            split.bound,
            u64::MAX,
        );
        assert!(r.found.is_none());
        rest += r.expanded;
        next = next.min(r.next_bound);
    }
    assert_eq!(iterations[2].1 + rest, bounds[2].1 + 1);
    assert_eq!(next, bounds[3].0);
    // Unlimited, it finds the serial path.
    let whole = solver
        .search_from(&root(&inst.board), 0, &Limits::default())
        .unwrap();
    assert_eq!(whole.outcome, UnitOutcome::Found(path));
    assert_eq!(whole.iterations.len(), bounds.len());
}

#[test]
fn a_hand_back_request_stops_the_search_with_its_rest() {
    let (solver, inst) = korf_lc(12);
    let (bounds, _) = serial(&solver, &inst.board);
    let (bound, nodes) = bounds[bounds.len() - 2];
    let flag = AtomicU64::new(0);
    let limits = Limits {
        hand_back: Some(&flag),
        ..Limits::default()
    };
    let report = solver
        .search_unit(&root(&inst.board), bound, &limits)
        .unwrap();
    let UnitOutcome::Split(split) = report.outcome else {
        panic!("{:?}", report.outcome)
    };
    // It stops at its first look at the flag, then searches its smallest pieces itself.
    assert_eq!(
        report.expanded - report.absorbed,
        npuzzle_solver::CHECK_INTERVAL
    );
    assert!(report.absorbed <= npuzzle_solver::ABSORB_NODES);
    let mut rest = 0;
    for piece in &split.pieces {
        rest +=
            search_in_pieces(&solver, &inst.board, piece.unit.clone(), bound, u64::MAX).expanded;
    }
    assert_eq!(report.expanded + rest, nodes + 1 + report.repeated);
}

#[test]
fn a_trace_adds_up_to_the_serial_search_and_reads_back() {
    let (solver, inst) = korf_lc(12);
    let report = solver.solve(&inst.board, &Limits::default()).unwrap();
    let SearchOutcome::Solved(path) = report.outcome else {
        panic!()
    };
    let iterations = &report.stats.iterations;
    let mut bounds = Vec::new();
    for (i, it) in iterations.iter().enumerate() {
        let traced = solver.trace_bound(&inst.board, it.bound, 5).unwrap();
        // The entries are in depth-first order, at the depth asked for.
        let keys: Vec<Vec<u8>> = traced
            .entries
            .iter()
            .map(|e| {
                e.prefix
                    .iter()
                    .map(|&m| npuzzle_solver::dfs_rank(m))
                    .collect()
            })
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert!(traced.entries.iter().all(|e| e.prefix.len() == 5));
        if i + 1 < iterations.len() {
            // A bound searched to its end: every node of the serial iteration, once.
            assert_eq!(traced.total(), it.expanded, "bound {}", it.bound);
            assert_eq!(traced.found, None);
        } else {
            // The last one up to the path: what serial IDA* expanded before finding it.
            let found = traced.found.expect("the last bound holds the path");
            assert!(path.starts_with(&traced.entries[found].prefix));
            let upto: u64 = traced.entries[..=found].iter().map(|e| e.nodes).sum();
            assert!(upto + traced.internal >= it.expanded);
            assert!(upto <= it.expanded);
        }
        bounds.push(traced);
    }
    let trace = npuzzle_solver::Trace {
        board: inst.board,
        goal: *solver.goal(),
        heuristic: "lc".into(),
        rate: 3e7,
        path,
        bounds,
    };
    let text = trace.to_text();
    assert_eq!(npuzzle_solver::Trace::from_text(&text).unwrap(), trace);
    let two = format!("{text}{text}");
    assert_eq!(
        npuzzle_solver::Trace::parse_all(&two).unwrap(),
        vec![trace.clone(), trace]
    );
    let broken = text.replace("bound ", "bund ");
    assert!(npuzzle_solver::Trace::from_text(&broken).is_err());
    // A path that does not solve the board is refused with a line number.
    let path_line = text.lines().find(|l| l.starts_with("path ")).unwrap();
    let wrong = text.replace(path_line, "path UD");
    let error = npuzzle_solver::Trace::from_text(&wrong).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("does not take the board to its goal"),
        "{error}"
    );
}

#[test]
fn a_stopped_unit_searches_its_smallest_pieces_itself_and_hands_back_the_rest() {
    let (solver, inst) = korf_lc(12);
    let (bounds, _) = serial(&solver, &inst.board);
    let (bound, nodes) = bounds[bounds.len() - 2];
    let limits = Limits {
        node_budget: Some(3_000),
        ..Limits::default()
    };
    let report = solver
        .search_unit(&root(&inst.board), bound, &limits)
        .unwrap();
    let UnitOutcome::Split(split) = &report.outcome else {
        panic!("{:?}", report.outcome)
    };
    // It searched pieces after its stop, within the allowance.
    assert!(
        report.absorbed > 0 && report.absorbed <= npuzzle_solver::ABSORB_NODES,
        "{report:?}"
    );
    assert_eq!(report.expanded, 3_000 + report.absorbed);
    // It stopped taking pieces at one too large for its share, or at the end of its allowance.
    let first = search_in_pieces(
        &solver,
        &inst.board,
        split.pieces[0].unit.clone(),
        bound,
        u64::MAX,
    );
    assert!(
        first.expanded > npuzzle_solver::ABSORB_PIECE_NODES
            || report.absorbed + npuzzle_solver::ABSORB_PIECE_NODES > npuzzle_solver::ABSORB_NODES,
        "piece of {} nodes handed back after {} absorbed",
        first.expanded,
        report.absorbed
    );
    // Nothing is lost: the pieces hold the rest.
    let rest: u64 = (split.pieces.iter())
        .map(|p| search_in_pieces(&solver, &inst.board, p.unit.clone(), bound, u64::MAX).expanded)
        .sum();
    assert_eq!(report.expanded + rest, nodes + 1 + report.repeated);
}
