//! Cache keys.

use std::fmt;

use crate::board::Board;
use crate::goal::{Goal, ShapeMismatch};
use crate::search::relabel;
use crate::shape::Shape;

/// A compact key for a (board, goal) pair: the shape, the board relabelled by the goal (each
/// cell holds its tile's goal cell), 5 bits a cell, and the blank's label (its goal cell). Pairs
/// that relabel alike, blank included, are the same puzzle move for move, so they share one key
/// and one answer. The blank's label is needed: the relabelled cells alone are the same for a
/// board towards the blank-first goal and a different board towards the blank-last goal, whose
/// blank is another label.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BoardKey {
    shape: Shape,
    cells: u128,
    blank: u8,
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
            blank: goal.position_of(0) as u8,
        })
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The packed relabelled cells (cell `i` in bits `5i..5i+5`).
    pub fn packed(&self) -> u128 {
        self.cells
    }

    /// The blank's label: its cell in the goal.
    pub fn blank_label(&self) -> u8 {
        self.blank
    }
}

impl fmt::Debug for BoardKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BoardKey({}:{:032x}:{})",
            self.shape, self.cells, self.blank
        )
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

    #[test]
    fn puzzles_whose_blanks_are_different_labels_do_not_share_a_key() {
        // Both solvable, both relabel to the same cells, but the blank is label 0 in the first
        // and label 8 in the second: different puzzles, with different answers.
        let s = Shape::new(3, 3).unwrap();
        let a = Board::parse("7 1 4 5 0 3 8 6 2", None).unwrap();
        let b = Board::parse("8 2 5 6 1 4 0 7 3", None).unwrap();
        let (first, last) = (Goal::blank_first(s), Goal::blank_last(s));
        assert!(first.can_reach(&a).unwrap() && last.can_reach(&b).unwrap());
        let (ka, kb) = (
            BoardKey::new(&a, &first).unwrap(),
            BoardKey::new(&b, &last).unwrap(),
        );
        assert_eq!(ka.packed(), kb.packed());
        assert_ne!(ka, kb);
    }
}
