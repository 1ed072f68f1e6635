//! The one check of an answer a test knows the optimum of: [`assert_optimal`] replays the moves
//! from the board (an illegal move fails naming its index), checks that they reach the goal,
//! and that there are as many as the optimum. The board, the goal and the moves are taken in
//! whatever form the test holds them ([`TestBoard`], [`TestGoal`], [`TestMoves`]).
//!
//! ```
//! use npuzzle_cluster::testing::optimal::assert_optimal;
//! use npuzzle_solver::GoalSpec;
//!
//! // The 8-puzzle every judge knows: 31 moves to the blank-last goal.
//! let path = assert_optimal(
//!     "8 6 7 2 5 4 3 0 1",
//!     &GoalSpec::BlankLast,
//!     "UULDDRRUULDLDRRUULDLDRRUULLDDRR",
//!     31,
//! );
//! assert_eq!(path.len(), 31);
//! ```

use npuzzle_solver::{Board, Goal, GoalSpec, Move, Shape, moves_to_string, parse_moves};

/// Replays `moves` from `board` and checks that they reach `goal` in exactly `optimal` moves;
/// panics otherwise, saying which move is illegal, where the moves end, or how many there are.
/// Returns the moves.
#[track_caller]
pub fn assert_optimal<B, G, M>(board: &B, goal: &G, moves: &M, optimal: usize) -> Vec<Move>
where
    B: TestBoard + ?Sized,
    G: TestGoal + ?Sized,
    M: TestMoves + ?Sized,
{
    let path = assert_reaches_goal(board, goal, moves);
    assert_eq!(
        path.len(),
        optimal,
        "the answer {} from {} reaches the goal in {} moves; the optimum is {optimal}",
        moves_to_string(&path),
        board.board(goal.shape()),
        path.len(),
    );
    path
}

/// The first half of [`assert_optimal`], for a test that knows no optimum (or checks a path
/// that is not meant to be optimal): replays `moves` from `board` and checks that they reach
/// `goal`. Returns the moves.
#[track_caller]
pub fn assert_reaches_goal<B, G, M>(board: &B, goal: &G, moves: &M) -> Vec<Move>
where
    B: TestBoard + ?Sized,
    G: TestGoal + ?Sized,
    M: TestMoves + ?Sized,
{
    let board = board.board(goal.shape());
    let goal = goal.resolve(board.shape());
    let path = moves.moves();
    let text = moves_to_string(&path);
    match board.verify(&path, &goal) {
        Err(illegal) => panic!("the answer {text} from {board}: {illegal}"),
        Ok(v) => assert!(
            v.reaches_goal,
            "the answer {text} ({} moves) takes {board} to {}, not to the goal {}",
            path.len(),
            v.end,
            goal.board(),
        ),
    }
    path
}

/// A board as a test holds it: a [`Board`], its tiles as text (`"8 6 7 2 5 4 3 0 1"`, `x` for
/// the blank allowed), or as numbers (a `SolveRequest`'s); tiles of a board that is not square
/// need a [`Goal`] to give the shape.
pub trait TestBoard {
    /// The board, of `shape` when the goal knows it; panics if it does not parse (a broken
    /// test).
    fn board(&self, shape: Option<Shape>) -> Board;
}

impl<T: TestBoard + ?Sized> TestBoard for &T {
    #[track_caller]
    fn board(&self, shape: Option<Shape>) -> Board {
        (**self).board(shape)
    }
}

impl TestBoard for Board {
    fn board(&self, _: Option<Shape>) -> Board {
        *self
    }
}

impl TestBoard for str {
    #[track_caller]
    fn board(&self, shape: Option<Shape>) -> Board {
        Board::parse(self, shape).unwrap_or_else(|e| panic!("the test's board {self:?}: {e}"))
    }
}

impl TestBoard for String {
    #[track_caller]
    fn board(&self, shape: Option<Shape>) -> Board {
        self.as_str().board(shape)
    }
}

impl TestBoard for [u32] {
    #[track_caller]
    fn board(&self, shape: Option<Shape>) -> Board {
        let text: Vec<String> = self.iter().map(u32::to_string).collect();
        text.join(" ").board(shape)
    }
}

impl TestBoard for Vec<u32> {
    #[track_caller]
    fn board(&self, shape: Option<Shape>) -> Board {
        self.as_slice().board(shape)
    }
}

/// A goal as a test holds it: a [`Goal`], or a [`GoalSpec`] (`GoalSpec::BlankFirst` for
/// Korf's instances) resolved for the board's shape.
pub trait TestGoal {
    /// The shape the goal fixes, if it fixes one.
    fn shape(&self) -> Option<Shape>;
    /// The goal for boards of `shape`; panics if it cannot be one (a broken test).
    fn resolve(&self, shape: Shape) -> Goal;
}

impl<T: TestGoal + ?Sized> TestGoal for &T {
    fn shape(&self) -> Option<Shape> {
        (**self).shape()
    }

    #[track_caller]
    fn resolve(&self, shape: Shape) -> Goal {
        (**self).resolve(shape)
    }
}

impl TestGoal for Goal {
    fn shape(&self) -> Option<Shape> {
        Some(Goal::shape(self))
    }

    #[track_caller]
    fn resolve(&self, shape: Shape) -> Goal {
        assert_eq!(Goal::shape(self), shape, "the test's goal {}", self.board());
        *self
    }
}

impl TestGoal for GoalSpec {
    fn shape(&self) -> Option<Shape> {
        None
    }

    #[track_caller]
    fn resolve(&self, shape: Shape) -> Goal {
        GoalSpec::resolve(self, shape).unwrap_or_else(|e| panic!("the test's goal {self:?}: {e}"))
    }
}

/// Moves as a test holds them: a move string (an answer's `moves`, either case), or [`Move`]s.
pub trait TestMoves {
    /// The moves; panics naming the letter that is not a move.
    fn moves(&self) -> Vec<Move>;
}

impl<T: TestMoves + ?Sized> TestMoves for &T {
    #[track_caller]
    fn moves(&self) -> Vec<Move> {
        (**self).moves()
    }
}

impl TestMoves for str {
    #[track_caller]
    fn moves(&self) -> Vec<Move> {
        parse_moves(self).unwrap_or_else(|e| panic!("the answer {self:?}: {e}"))
    }
}

impl TestMoves for String {
    #[track_caller]
    fn moves(&self) -> Vec<Move> {
        self.as_str().moves()
    }
}

impl TestMoves for [Move] {
    fn moves(&self) -> Vec<Move> {
        self.to_vec()
    }
}

impl TestMoves for Vec<Move> {
    fn moves(&self) -> Vec<Move> {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message `check` panics with.
    fn panic_message(check: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(check).expect_err("the check fails");
        match payload.downcast::<String>() {
            Ok(message) => *message,
            Err(payload) => payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .unwrap_or_default(),
        }
    }

    const BOARD: &str = "1 2 3 4 5 6 0 7 8";

    #[test]
    fn an_optimal_answer_passes_in_any_form() {
        let goal = Goal::blank_last(Shape::new(3, 3).unwrap());
        let path = assert_optimal(BOARD, &goal, "rr", 2);
        assert_optimal(&BOARD.board(None), &GoalSpec::BlankLast, &path, 2);
        assert_optimal(&vec![1u32, 2, 3, 4, 5, 6, 0, 7, 8], &goal, &path[..], 2);
        // Not square: the goal gives the shape.
        let goal = Goal::blank_last(Shape::new(3, 2).unwrap());
        assert_optimal("1 2 3 4 0 5", &goal, &"R".to_string(), 1);
    }

    #[test]
    fn an_illegal_move_is_named_by_its_index() {
        let message = panic_message(|| {
            assert_optimal(BOARD, &GoalSpec::BlankLast, "RRR", 2);
        });
        assert!(message.contains("move 2 (R) is illegal"), "{message}");
    }

    #[test]
    fn moves_that_stop_short_say_where_they_end() {
        let message = panic_message(|| {
            assert_optimal(BOARD, &GoalSpec::BlankLast, "R", 2);
        });
        assert!(
            message.contains("takes 1 2 3 4 5 6 0 7 8 to 1 2 3 4 5 6 7 0 8"),
            "{message}"
        );
        assert!(
            message.contains("not to the goal 1 2 3 4 5 6 7 8 0"),
            "{message}"
        );
    }

    #[test]
    fn a_longer_path_to_the_goal_is_not_optimal() {
        let message = panic_message(|| {
            assert_optimal(BOARD, &GoalSpec::BlankLast, "RRLR", 2);
        });
        assert!(
            message.contains("in 4 moves; the optimum is 2"),
            "{message}"
        );
    }

    #[test]
    fn a_letter_that_is_no_move_is_named() {
        let message = panic_message(|| {
            assert_reaches_goal(BOARD, &GoalSpec::BlankLast, "RX");
        });
        assert!(message.contains("unknown move 'X' at index 1"), "{message}");
    }
}
