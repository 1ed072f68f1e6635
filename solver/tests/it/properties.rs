//! Property tests: random walks are solved no longer than the walk, and text round-trips.

use npuzzle_solver::{
    Board, DfsKey, Goal, HeuristicKind, Limits, Move, SearchOutcome, Shape, Solver, dfs_key,
    moves_to_string, parse_moves,
};
use proptest::prelude::*;

fn any_shape() -> impl Strategy<Value = Shape> {
    (2usize..=5, 2usize..=5).prop_map(|(w, h)| Shape::new(w, h).unwrap())
}

fn any_board() -> impl Strategy<Value = Board> {
    any_shape().prop_flat_map(|s| {
        Just((0..s.cells() as u8).collect::<Vec<u8>>())
            .prop_shuffle()
            .prop_map(move |tiles| Board::new(s, &tiles).unwrap())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_walks_are_solved_optimally_or_better(
        shape in any_shape(),
        blank_first in any::<bool>(),
        lc in any::<bool>(),
        walk in prop::collection::vec(0usize..4, 0..36),
    ) {
        let goal = if blank_first { Goal::blank_first(shape) } else { Goal::blank_last(shape) };
        let mut board = *goal.board();
        let mut legal = 0usize;
        for m in walk {
            if let Some(b) = board.after(Move::ALL[m]) {
                board = b;
                legal += 1;
            }
        }
        let kind = if lc { HeuristicKind::LinearConflict } else { HeuristicKind::Manhattan };
        let solver = Solver::new(goal, kind).unwrap();
        prop_assert!(goal.can_reach(&board).unwrap());
        let report = solver.solve(&board, &Limits::default()).unwrap();
        let SearchOutcome::Solved(path) = report.outcome else {
            return Err(TestCaseError::fail("not solved"));
        };
        prop_assert!(path.len() <= legal);
        prop_assert_eq!(path.len() % 2, legal % 2, "every path between two states has one parity");
        prop_assert!(board.verify(&path, &goal).unwrap().reaches_goal);
        prop_assert!(solver.estimate(&board).unwrap() as usize <= path.len());
    }

    #[test]
    fn board_text_round_trips(board in any_board(), commas in any::<bool>(), x in any::<bool>()) {
        let shape = board.shape();
        let printed = board.to_string();
        prop_assert_eq!(Board::parse(&printed, Some(shape)).unwrap(), board);
        let mut alt = if commas { printed.replace(' ', ",") } else { printed.clone() };
        if x {
            alt = alt.split(',').flat_map(|t| t.split(' ')).map(|t| if t == "0" { "x" } else { t })
                .collect::<Vec<_>>().join(if commas { "," } else { " " });
        }
        prop_assert_eq!(Board::parse(&alt, Some(shape)).unwrap(), board);
        // Grids parse too: newlines are whitespace, `.` is not a blank, so swap it back first.
        let grid = board.to_grid().replace('.', "0");
        prop_assert_eq!(Board::parse(&grid, Some(shape)).unwrap(), board);
    }

    #[test]
    fn move_text_round_trips(moves in prop::collection::vec(0usize..4, 0..50)) {
        let moves: Vec<Move> = moves.into_iter().map(|m| Move::ALL[m]).collect();
        let text = moves_to_string(&moves);
        prop_assert_eq!(parse_moves(&text).unwrap(), moves.clone());
        prop_assert_eq!(parse_moves(&text.to_lowercase()).unwrap(), moves);
    }

    #[test]
    fn a_dfs_key_orders_paths_as_their_move_ranks_do(
        a in prop::collection::vec(0usize..4, 0..60),
        b in prop::collection::vec(0usize..4, 0..60),
        shared in 0usize..60,
    ) {
        // Paths sharing a start, as siblings and ancestors do (past the inline moves too),
        // besides unrelated ones.
        let a: Vec<Move> = a.into_iter().map(|m| Move::ALL[m]).collect();
        let mut b: Vec<Move> = b.into_iter().map(|m| Move::ALL[m]).collect();
        let shared = shared.min(a.len());
        b.splice(0..0, a[..shared].iter().copied());
        for (x, y) in [(&a, &b), (&b, &a), (&a, &a)] {
            prop_assert_eq!(DfsKey::of(x).cmp(&DfsKey::of(y)), dfs_key(x).cmp(&dfs_key(y)));
        }
    }

    #[test]
    fn parity_matches_a_swap(board in any_board()) {
        // Swapping two non-blank tiles always flips solvability.
        let goal = Goal::blank_last(board.shape());
        let mut tiles = board.tiles().to_vec();
        let (a, b) = {
            let nonblank: Vec<usize> = (0..tiles.len()).filter(|&i| tiles[i] != 0).collect();
            (nonblank[0], nonblank[1])
        };
        tiles.swap(a, b);
        let swapped = Board::new(board.shape(), &tiles).unwrap();
        prop_assert_ne!(goal.can_reach(&board).unwrap(), goal.can_reach(&swapped).unwrap());
    }
}
