//! Goals: which board a search must reach. Blank-last (`1 2 … n-1 0`, the judge problems'
//! goal and our default), blank-first (`0 1 … n-1`, Korf's benchmark goal), or any permutation.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::board::{Board, ParseError};
use crate::shape::{MAX_CELLS, Shape};

/// The board a search must reach.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Goal {
    board: Board,
    /// `position[tile]` = the cell where `tile` belongs.
    position: [u8; MAX_CELLS],
}

/// A board and a goal of different shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("the board is {board} but the goal is {goal}")]
pub struct ShapeMismatch {
    pub board: Shape,
    pub goal: Shape,
}

/// A goal as a user names it, before the board's shape is known.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum GoalSpec {
    /// `1 2 … n-1 0`.
    #[default]
    BlankLast,
    /// `0 1 … n-1`.
    BlankFirst,
    /// Explicit tiles, read like a board.
    Tiles(String),
}

/// A goal that does not fit the board.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid goal: {0}")]
pub struct GoalError(#[from] pub ParseError);

impl Goal {
    /// `1 2 … n-1 0`: the goal of UVa 10181 and POJ 1077.
    pub fn blank_last(shape: Shape) -> Goal {
        let n = shape.cells();
        let tiles: Vec<u8> = (1..n as u8).chain([0]).collect();
        Goal::from_tiles_unchecked(shape, &tiles)
    }

    /// `0 1 … n-1`: the goal of Korf's benchmark instances.
    pub fn blank_first(shape: Shape) -> Goal {
        let tiles: Vec<u8> = (0..shape.cells() as u8).collect();
        Goal::from_tiles_unchecked(shape, &tiles)
    }

    fn from_tiles_unchecked(shape: Shape, tiles: &[u8]) -> Goal {
        match Board::new(shape, tiles) {
            Ok(board) => Goal::from_board(board),
            Err(_) => unreachable!("built-in goals are permutations"),
        }
    }

    /// Any board as a goal.
    pub fn from_board(board: Board) -> Goal {
        let mut position = [0u8; MAX_CELLS];
        for (pos, &tile) in board.tiles().iter().enumerate() {
            position[tile as usize] = pos as u8;
        }
        Goal { board, position }
    }

    pub fn shape(&self) -> Shape {
        self.board.shape()
    }

    /// The goal's row-major tiles.
    pub fn tiles(&self) -> &[u8] {
        self.board.tiles()
    }

    /// The goal as a board.
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// The cell where `tile` belongs (`0` = the blank).
    pub fn position_of(&self, tile: u8) -> usize {
        self.position[tile as usize] as usize
    }

    /// Whether `board` can reach this goal: the permutation's parity must equal the parity of
    /// the blank's Manhattan distance to its goal cell (each move flips both).
    pub fn can_reach(&self, board: &Board) -> Result<bool, ShapeMismatch> {
        self.check_shape(board)?;
        let shape = self.shape();
        // `perm[p]` = goal cell of the tile on cell p; the goal is the identity.
        let mut perm = [0u8; MAX_CELLS];
        for (p, &t) in board.tiles().iter().enumerate() {
            perm[p] = self.position[t as usize];
        }
        let n = shape.cells();
        let mut visited = [false; MAX_CELLS];
        let mut transpositions = 0;
        for start in 0..n {
            let mut len = 0;
            let mut p = start;
            while !visited[p] {
                visited[p] = true;
                p = perm[p] as usize;
                len += 1;
            }
            if len > 0 {
                transpositions += len - 1;
            }
        }
        let blank_distance = shape.distance(board.blank(), self.position_of(0));
        Ok(transpositions % 2 == blank_distance % 2)
    }

    pub(crate) fn check_shape(&self, board: &Board) -> Result<(), ShapeMismatch> {
        if board.shape() == self.shape() {
            Ok(())
        } else {
            Err(ShapeMismatch {
                board: board.shape(),
                goal: self.shape(),
            })
        }
    }
}

impl GoalSpec {
    /// The goal for boards of `shape`.
    pub fn resolve(&self, shape: Shape) -> Result<Goal, GoalError> {
        Ok(match self {
            GoalSpec::BlankLast => Goal::blank_last(shape),
            GoalSpec::BlankFirst => Goal::blank_first(shape),
            GoalSpec::Tiles(text) => Goal::from_board(Board::parse(text, Some(shape))?),
        })
    }
}

impl FromStr for GoalSpec {
    type Err = std::convert::Infallible;

    /// `blank-last`, `blank-first`, or a tile list such as `"0 1 2 3 4 5 6 7 8"`.
    fn from_str(s: &str) -> Result<GoalSpec, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "blank-last" | "last" | "default" => GoalSpec::BlankLast,
            "blank-first" | "first" | "korf" => GoalSpec::BlankFirst,
            _ => GoalSpec::Tiles(s.to_string()),
        })
    }
}

impl fmt::Display for GoalSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoalSpec::BlankLast => f.write_str("blank-last"),
            GoalSpec::BlankFirst => f.write_str("blank-first"),
            GoalSpec::Tiles(t) => f.write_str(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3() -> Shape {
        Shape::new(3, 3).unwrap()
    }

    #[test]
    fn built_in_goals() {
        assert_eq!(Goal::blank_last(s3()).tiles(), &[1, 2, 3, 4, 5, 6, 7, 8, 0]);
        assert_eq!(
            Goal::blank_first(s3()).tiles(),
            &[0, 1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(Goal::blank_last(s3()).position_of(0), 8);
    }

    #[test]
    fn parity_detects_the_swapped_pair() {
        let goal = Goal::blank_last(s3());
        let solvable = Board::parse("1 2 3 4 5 6 7 8 0", None).unwrap();
        let swapped = Board::parse("2 1 3 4 5 6 7 8 0", None).unwrap();
        assert!(goal.can_reach(&solvable).unwrap());
        assert!(!goal.can_reach(&swapped).unwrap());
        // The blank-first goal is reachable from blank-last on 3x3 (even permutation, distance 4).
        assert!(Goal::blank_first(s3()).can_reach(&solvable).unwrap());
        // On 4x4 it is not (odd permutation: 15 transpositions, distance 6).
        let s4 = Shape::new(4, 4).unwrap();
        assert!(
            !Goal::blank_first(s4)
                .can_reach(Goal::blank_last(s4).board())
                .unwrap()
        );
    }

    #[test]
    fn goal_spec_parses_names_and_tiles() {
        assert_eq!(
            "blank-first".parse::<GoalSpec>().unwrap(),
            GoalSpec::BlankFirst
        );
        let spec: GoalSpec = "1 2 3 4 0 5 6 7 8".parse().unwrap();
        let goal = spec.resolve(s3()).unwrap();
        assert_eq!(goal.position_of(0), 4);
        let err = spec.resolve(Shape::new(4, 4).unwrap()).unwrap_err();
        assert!(err.to_string().starts_with("invalid goal: missing tile 9"));
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let goal = Goal::blank_last(Shape::new(4, 4).unwrap());
        let board = Board::parse("1 2 3 4 5 6 7 8 0", None).unwrap();
        assert_eq!(
            goal.can_reach(&board).unwrap_err().to_string(),
            "the board is 3x3 but the goal is 4x4"
        );
    }
}
