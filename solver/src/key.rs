//! Cache keys.

use std::fmt;

use crate::board::Board;
use crate::goal::{Goal, ShapeMismatch};
use crate::search::relabel;
use crate::shape::Shape;

/// A compact key for a (board, goal) pair: the shape and the board relabelled by the goal (each
/// cell holds its tile's goal cell), 5 bits a cell. Pairs that relabel alike are the same puzzle
/// move for move, so they share one key and one answer.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BoardKey {
    shape: Shape,
    cells: u128,
}

impl BoardKey {
    pub fn new(board: &Board, goal: &Goal) -> Result<BoardKey, ShapeMismatch> {
        goal.check_shape(board)?;
        let state = relabel(board, goal);
        let cells = state.cells[..board.shape().cells()]
            .iter()
            .enumerate()
            .fold(0u128, |acc, (i, &l)| acc | (l as u128) << (5 * i));
        Ok(BoardKey {
            shape: board.shape(),
            cells,
        })
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The packed relabelled cells (cell `i` in bits `5i..5i+5`).
    pub fn packed(&self) -> u128 {
        self.cells
    }
}

impl fmt::Debug for BoardKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BoardKey({}:{:032x})", self.shape, self.cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_puzzles_share_a_key_and_different_ones_do_not() {
        let s = Shape::new(3, 3).unwrap();
        let a = Board::parse("1 2 3 4 5 6 0 7 8", None).unwrap();
        let b = Board::parse("1 2 3 4 5 6 7 0 8", None).unwrap();
        let last = Goal::blank_last(s);
        assert_eq!(BoardKey::new(&a, &last), BoardKey::new(&a, &last));
        assert_ne!(BoardKey::new(&a, &last), BoardKey::new(&b, &last));
        assert_ne!(
            BoardKey::new(&a, &last).unwrap(),
            BoardKey::new(&a, &Goal::blank_first(s)).unwrap()
        );
        // Relabel tiles 1 <-> 2 in both board and goal: the same puzzle, the same key.
        let a2 = Board::parse("2 1 3 4 5 6 0 7 8", None).unwrap();
        let goal2 = Goal::from_board(Board::parse("2 1 3 4 5 6 7 8 0", None).unwrap());
        assert_eq!(BoardKey::new(&a, &last), BoardKey::new(&a2, &goal2));
    }
}
