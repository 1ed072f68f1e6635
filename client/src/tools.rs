//! Small tools around boards: `npuzzle gen` (random boards, reproducible by seed) and
//! `npuzzle verify` (replay a path and say where it goes wrong).

use npuzzle_solver::{Board, Goal, Move, parse_moves};
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What `npuzzle gen` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generate {
    /// Boards drawn uniformly from those that can reach the goal.
    Uniform,
    /// The end of a random walk of this many moves from the goal (never undoing the last move),
    /// so the optimal length is at most the walk's.
    Walk(usize),
}

/// `count` random boards for `goal`, the same for the same `seed` on every machine (ChaCha8,
/// whose stream does not change between releases).
pub fn generate(goal: &Goal, kind: Generate, count: usize, seed: u64) -> Vec<Board> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| random_board(goal, kind, &mut rng))
        .collect()
}

/// One random board for `goal`, drawn from `rng` (the boards of [`generate`], one at a time).
pub fn random_board(goal: &Goal, kind: Generate, rng: &mut impl Rng) -> Board {
    match kind {
        Generate::Uniform => uniform(goal, rng),
        Generate::Walk(steps) => walk(goal, steps, rng),
    }
}

fn uniform(goal: &Goal, rng: &mut impl Rng) -> Board {
    let shape = goal.shape();
    let mut tiles = goal.tiles().to_vec();
    tiles.shuffle(rng);
    let mut board = Board::new(shape, &tiles).expect("a permutation of the goal is a board");
    if !goal.can_reach(&board).unwrap_or(false) {
        // Swapping two tiles flips the parity: every solvable board stays equally likely.
        let tiles_at: Vec<usize> = (0..tiles.len()).filter(|&i| tiles[i] != 0).collect();
        tiles.swap(tiles_at[0], tiles_at[1]);
        board = Board::new(shape, &tiles).expect("a permutation of the goal is a board");
    }
    board
}

fn walk(goal: &Goal, steps: usize, rng: &mut impl Rng) -> Board {
    let mut board = *goal.board();
    let mut last: Option<Move> = None;
    for _ in 0..steps {
        let options: Vec<(Move, Board)> = Move::ALL
            .into_iter()
            .filter(|&m| last != Some(m.opposite()))
            .filter_map(|m| board.after(m).map(|b| (m, b)))
            .collect();
        let Some(&(mv, next)) = options.choose(rng) else {
            break;
        };
        board = next;
        last = Some(mv);
    }
    board
}

/// The verdict of `npuzzle verify`: whether the path solves the board, and what to tell the
/// user (which move is illegal, or where the path ends).
pub fn verify(board: &Board, moves: &str, goal: &Goal) -> (bool, String) {
    let path = match parse_moves(moves) {
        Ok(p) => p,
        Err(e) => return (false, format!("bad moves: {e}")),
    };
    match board.verify(&path, goal) {
        Err(e) => (false, format!("{e} (moves are 0-based; the blank moves)")),
        Ok(v) if v.reaches_goal => (true, format!("ok: {} moves reach the goal", path.len())),
        Ok(v) => (
            false,
            format!(
                "all {} moves are legal but end at\n{}\nwhich is not the goal\n{}",
                path.len(),
                v.end.to_grid(),
                goal.board().to_grid()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npuzzle_solver::Shape;

    #[test]
    fn the_same_seed_gives_the_same_boards_and_every_board_is_solvable() {
        let goal = Goal::blank_last(Shape::new(4, 4).unwrap());
        let a = generate(&goal, Generate::Uniform, 50, 7);
        assert_eq!(a, generate(&goal, Generate::Uniform, 50, 7));
        assert_ne!(a, generate(&goal, Generate::Uniform, 50, 8));
        assert!(a.iter().all(|b| goal.can_reach(b).unwrap()));
        let distinct: std::collections::HashSet<_> = a.iter().collect();
        assert_eq!(distinct.len(), 50);
    }

    #[test]
    fn walks_stay_within_their_length_of_the_goal() {
        let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
        let solver =
            npuzzle_solver::Solver::new(goal, npuzzle_solver::HeuristicKind::Exact).unwrap();
        for board in generate(&goal, Generate::Walk(12), 30, 1) {
            let length = match solver.solve(&board, &Default::default()).unwrap().outcome {
                npuzzle_solver::SearchOutcome::Solved(m) => m.len(),
                other => panic!("{other:?}"),
            };
            assert!(length <= 12 && length % 2 == 0, "{board}: {length}");
        }
    }

    #[test]
    fn verify_names_the_illegal_move_and_where_a_path_ends() {
        let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
        let board = Board::parse("1 2 3 4 5 6 0 7 8", None).unwrap();
        assert_eq!(
            verify(&board, "RR", &goal),
            (true, "ok: 2 moves reach the goal".into())
        );
        let (ok, why) = verify(&board, "RRR", &goal);
        assert!(!ok);
        assert!(
            why.starts_with("move 2 (R) is illegal: the blank is at row 2, column 2"),
            "{why}"
        );
        let (ok, why) = verify(&board, "R", &goal);
        assert!(!ok && why.contains("not the goal"), "{why}");
        let (ok, why) = verify(&board, "RX", &goal);
        assert!(!ok && why.starts_with("bad moves"), "{why}");
    }
}
