//! Moves. A move letter names the direction the **blank** moves (the judge convention of
//! UVa 10181 and POJ 1077 / HDU 1043): `U` swaps the blank with the tile above it.

use std::fmt;

use thiserror::Error;

/// One move of the blank.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Move {
    /// The blank moves up (the tile above it moves down).
    Up,
    /// The blank moves down.
    Down,
    /// The blank moves left.
    Left,
    /// The blank moves right.
    Right,
}

impl Move {
    /// All moves, in the order the search tries them.
    pub const ALL: [Move; 4] = [Move::Up, Move::Down, Move::Left, Move::Right];

    /// Upper-case letter: `U`, `D`, `L` or `R`.
    pub fn letter(self) -> char {
        match self {
            Move::Up => 'U',
            Move::Down => 'D',
            Move::Left => 'L',
            Move::Right => 'R',
        }
    }

    /// The move for a letter, in either case.
    pub fn from_letter(c: char) -> Option<Move> {
        match c.to_ascii_uppercase() {
            'U' => Some(Move::Up),
            'D' => Some(Move::Down),
            'L' => Some(Move::Left),
            'R' => Some(Move::Right),
            _ => None,
        }
    }

    /// The move that undoes this one.
    pub fn opposite(self) -> Move {
        match self {
            Move::Up => Move::Down,
            Move::Down => Move::Up,
            Move::Left => Move::Right,
            Move::Right => Move::Left,
        }
    }

    /// The order every search here tries the blank's moves in (Korf's: up, left, right, down).
    /// The serial search, the work units' breadth-first cuts, the traces and the duplicate
    /// automaton all follow it, so that of two paths to one state they keep the same one.
    pub const SEARCH_ORDER: [Move; 4] = [Move::Up, Move::Left, Move::Right, Move::Down];

    /// This move's place in [`Move::SEARCH_ORDER`].
    pub fn search_rank(self) -> u8 {
        match self {
            Move::Up => 0,
            Move::Left => 1,
            Move::Right => 2,
            Move::Down => 3,
        }
    }

    /// Index in [`Move::ALL`]; opposite moves differ in the lowest bit.
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn from_index(i: usize) -> Move {
        Move::ALL[i & 3]
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// A move string held an unknown letter.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "unknown move {found:?} at index {index} (moves are U, D, L, R: the direction the blank moves)"
)]
pub struct MoveParseError {
    /// 0-based index among the move letters.
    pub index: usize,
    pub found: char,
}

/// Parses a move string such as `"URDL"` or `"u r d l"`. Either case; whitespace and commas are
/// ignored.
pub fn parse_moves(text: &str) -> Result<Vec<Move>, MoveParseError> {
    text.chars()
        .filter(|c| !c.is_whitespace() && *c != ',')
        .enumerate()
        .map(|(index, c)| Move::from_letter(c).ok_or(MoveParseError { index, found: c }))
        .collect()
}

/// Formats moves as upper-case letters with no separators (`"URDL"`).
pub fn moves_to_string(moves: &[Move]) -> String {
    moves.iter().map(|m| m.letter()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_either_case_and_ignores_separators() {
        assert_eq!(
            parse_moves("uR d,L").unwrap(),
            vec![Move::Up, Move::Right, Move::Down, Move::Left]
        );
        assert_eq!(moves_to_string(&parse_moves("lurd").unwrap()), "LURD");
    }

    #[test]
    fn names_the_first_unknown_letter() {
        assert_eq!(
            parse_moves("UDXL"),
            Err(MoveParseError {
                index: 2,
                found: 'X'
            })
        );
    }

    #[test]
    fn opposite_moves_differ_in_lowest_index_bit() {
        for m in Move::ALL {
            assert_eq!(m.opposite().index(), m.index() ^ 1);
            assert_eq!(Move::from_index(m.index()), m);
        }
    }
}
