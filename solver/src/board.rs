//! Boards: a permutation of tiles `0..cells` on a [`Shape`], `0` being the blank; parsing with
//! readable errors; applying and verifying move sequences.

use std::fmt;

use thiserror::Error;

use crate::goal::Goal;
use crate::moves::Move;
use crate::shape::{MAX_CELLS, Shape, ShapeError};

/// A board: row-major tiles, `0` is the blank.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Board {
    shape: Shape,
    /// Cells past `shape.cells()` are always 0, so derived equality and hashing are exact.
    tiles: [u8; MAX_CELLS],
}

/// Why a board (or a goal) could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    #[error("empty board: no tiles given")]
    Empty,
    #[error(
        "unknown token {token:?} at position {position}: expected a tile number, or 0, x, X or _ for the blank"
    )]
    UnknownToken { token: String, position: usize },
    #[error(
        "cannot infer the board size from {found} tiles (only 4, 9, 16 and 25 tiles infer a square); give the size as WxH"
    )]
    CannotInferShape { found: usize },
    #[error("wrong tile count: a {shape} board has {expected} cells, found {found} tiles")]
    WrongCount {
        shape: Shape,
        expected: usize,
        found: usize,
    },
    #[error(
        "tile {token} at position {position} is out of range: a {shape} board has tiles 1 to {max} and a blank"
    )]
    TileOutOfRange {
        token: String,
        position: usize,
        shape: Shape,
        max: usize,
    },
    #[error("duplicate {}: at positions {first} and {second}", tile_name(*tile))]
    DuplicateTile {
        tile: u8,
        first: usize,
        second: usize,
    },
    #[error("missing {}: a {shape} board has {expected} cells, found {found} tiles", tile_name(*tile))]
    MissingTile {
        tile: u8,
        shape: Shape,
        expected: usize,
        found: usize,
    },
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

fn tile_name(tile: u8) -> String {
    if tile == 0 {
        "blank".to_string()
    } else {
        format!("tile {tile}")
    }
}

/// A move that leaves the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("move {index} ({mv}) is illegal: the blank is at row {row}, column {col}")]
pub struct IllegalMove {
    /// 0-based index of the move in the sequence.
    pub index: usize,
    pub mv: Move,
    /// Where the blank was (0-based) when the move was tried.
    pub row: usize,
    pub col: usize,
}

/// Where a move sequence leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The board after every move.
    pub end: Board,
    /// Whether `end` is the goal.
    pub reaches_goal: bool,
}

/// The cell the blank reaches from `pos` by `mv`, if it stays on the board.
pub(crate) fn step(shape: Shape, pos: usize, mv: Move) -> Option<usize> {
    let (w, h) = (shape.width(), shape.height());
    match mv {
        Move::Up if pos >= w => Some(pos - w),
        Move::Down if pos + w < w * h => Some(pos + w),
        Move::Left if !pos.is_multiple_of(w) => Some(pos - 1),
        Move::Right if pos % w + 1 < w => Some(pos + 1),
        _ => None,
    }
}

/// One parsed token: a tile value, or an unreadable token.
fn read_token(token: &str) -> Option<Option<u64>> {
    match token {
        "x" | "X" | "_" => Some(Some(0)),
        t if t.bytes().all(|b| b.is_ascii_digit()) => Some(t.parse::<u64>().ok()),
        _ => None,
    }
}

/// Splits on whitespace and commas, dropping empty pieces.
pub(crate) fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
}

impl Board {
    /// A board from row-major tiles; `tiles` must be a permutation of `0..shape.cells()`.
    pub fn new(shape: Shape, tiles: &[u8]) -> Result<Board, ParseError> {
        let values: Vec<Option<u64>> = tiles.iter().map(|&t| Some(t as u64)).collect();
        let raw: Vec<String> = tiles.iter().map(|t| t.to_string()).collect();
        Board::validate(shape, &values, &raw)
    }

    /// Reads a board from text: tiles separated by whitespace and/or commas, the blank written as
    /// `0`, `x`, `X` or `_`. Without `shape`, 4, 9, 16 and 25 tiles infer a square board.
    ///
    /// ```
    /// use npuzzle_solver::Board;
    /// let b = Board::parse("2 3 4 1 5 x 7 6 8", None).unwrap();
    /// assert_eq!(b.to_string(), "2 3 4 1 5 0 7 6 8");
    /// assert!(Board::parse("1 2 3", None).is_err());
    /// ```
    pub fn parse(text: &str, shape: Option<Shape>) -> Result<Board, ParseError> {
        let raw: Vec<&str> = tokens(text).collect();
        if raw.is_empty() {
            return Err(ParseError::Empty);
        }
        let mut values = Vec::with_capacity(raw.len());
        for (position, token) in raw.iter().enumerate() {
            match read_token(token) {
                Some(v) => values.push(v),
                None => {
                    return Err(ParseError::UnknownToken {
                        token: token.to_string(),
                        position,
                    });
                }
            }
        }
        let shape = match shape {
            Some(s) => s,
            None => match Shape::infer(values.len()) {
                Some(s) => s,
                None => {
                    // One tile short of a square: if that is all that is wrong, name the tile.
                    if let Some(s) = Shape::infer(values.len() + 1)
                        && let Err(e @ ParseError::MissingTile { .. }) =
                            Board::validate(s, &values, &raw)
                    {
                        return Err(e);
                    }
                    return Err(ParseError::CannotInferShape {
                        found: values.len(),
                    });
                }
            },
        };
        Board::validate(shape, &values, &raw)
    }

    fn validate<S: AsRef<str>>(
        shape: Shape,
        values: &[Option<u64>],
        raw: &[S],
    ) -> Result<Board, ParseError> {
        let expected = shape.cells();
        if values.is_empty() {
            return Err(ParseError::Empty);
        }
        if values.len() > expected {
            return Err(ParseError::WrongCount {
                shape,
                expected,
                found: values.len(),
            });
        }
        let mut seen_at = [usize::MAX; MAX_CELLS];
        let mut tiles = [0u8; MAX_CELLS];
        for (position, value) in values.iter().enumerate() {
            let tile = match value {
                Some(v) if (*v as usize) < expected => *v as usize,
                _ => {
                    return Err(ParseError::TileOutOfRange {
                        token: raw[position].as_ref().to_string(),
                        position,
                        shape,
                        max: expected - 1,
                    });
                }
            };
            if seen_at[tile] != usize::MAX {
                return Err(ParseError::DuplicateTile {
                    tile: tile as u8,
                    first: seen_at[tile],
                    second: position,
                });
            }
            seen_at[tile] = position;
            tiles[position] = tile as u8;
        }
        if values.len() < expected {
            let missing = (0..expected)
                .find(|&t| seen_at[t] == usize::MAX)
                .unwrap_or(0);
            return Err(ParseError::MissingTile {
                tile: missing as u8,
                shape,
                expected,
                found: values.len(),
            });
        }
        Ok(Board { shape, tiles })
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Row-major tiles, `0` = blank.
    pub fn tiles(&self) -> &[u8] {
        &self.tiles[..self.shape.cells()]
    }

    /// Row-major index of the blank.
    pub fn blank(&self) -> usize {
        self.tiles().iter().position(|&t| t == 0).unwrap_or(0)
    }

    /// The board after one move, or `None` if the blank would leave the board.
    pub fn after(&self, mv: Move) -> Option<Board> {
        let blank = self.blank();
        let to = step(self.shape, blank, mv)?;
        let mut next = *self;
        next.tiles.swap(blank, to);
        Some(next)
    }

    /// Applies `moves` in order; the error names the first illegal move by index.
    pub fn apply(&self, moves: &[Move]) -> Result<Board, IllegalMove> {
        let mut board = *self;
        let mut blank = board.blank();
        for (index, &mv) in moves.iter().enumerate() {
            let to = step(board.shape, blank, mv).ok_or(IllegalMove {
                index,
                mv,
                row: board.shape.row(blank),
                col: board.shape.col(blank),
            })?;
            board.tiles.swap(blank, to);
            blank = to;
        }
        Ok(board)
    }

    /// Applies `moves` and tells whether they reach `goal`.
    pub fn verify(&self, moves: &[Move], goal: &Goal) -> Result<Verification, IllegalMove> {
        let end = self.apply(moves)?;
        Ok(Verification {
            reaches_goal: end.tiles() == goal.tiles(),
            end,
        })
    }

    /// The board as rows of right-aligned numbers, blank shown as `.`.
    pub fn to_grid(&self) -> String {
        let w = self.shape.width();
        let mut out = String::new();
        for (i, &t) in self.tiles().iter().enumerate() {
            if t == 0 {
                out.push_str(" .");
            } else {
                out.push_str(&format!("{t:2}"));
            }
            out.push(if i % w + 1 == w { '\n' } else { ' ' });
        }
        out
    }
}

impl fmt::Display for Board {
    /// Space-separated row-major tiles, `0` for the blank: the same text [`Board::parse`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.tiles().iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Board({}: {})", self.shape, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(w: usize, h: usize) -> Shape {
        Shape::new(w, h).unwrap()
    }

    #[test]
    fn parses_separators_and_blank_spellings() {
        let a = Board::parse("1,2,3\n4 5 6 7 8 x", None).unwrap();
        let b = Board::parse("1 2 3 4 5 6 7 8 _", None).unwrap();
        let c = Board::parse("1, 2, 3, 4, 5, 6, 7, 8, 0", None).unwrap();
        assert_eq!(a, b);
        assert_eq!(b, c);
        assert_eq!(a.blank(), 8);
        assert_eq!(a.shape(), shape(3, 3));
    }

    #[test]
    fn explicit_shape_reads_rectangles() {
        let b = Board::parse("1 2 3 4 5 0", Some(shape(3, 2))).unwrap();
        assert_eq!(b.shape(), shape(3, 2));
        assert_eq!(b.to_grid(), " 1  2  3\n 4  5  .\n");
    }

    #[test]
    fn each_error_names_the_problem() {
        assert_eq!(Board::parse("  ,\n", None), Err(ParseError::Empty));
        assert_eq!(
            Board::parse("1 2 3 4 y 5 6 7 8", None),
            Err(ParseError::UnknownToken {
                token: "y".into(),
                position: 4
            })
        );
        assert_eq!(
            Board::parse("1 2 3 4 5 6 7 8 0 9 10", None),
            Err(ParseError::CannotInferShape { found: 11 })
        );
        assert!(matches!(
            Board::parse("1 2 3 4 5 6 7 8 0 9", Some(shape(3, 3))),
            Err(ParseError::WrongCount {
                expected: 9,
                found: 10,
                ..
            })
        ));
        assert!(matches!(
            Board::parse("1 2 3 4 5 6 7 9 0", None),
            Err(ParseError::TileOutOfRange { ref token, position: 7, max: 8, .. }) if token == "9"
        ));
        assert_eq!(
            Board::parse("1 2 3 4 5 6 7 7 0", None),
            Err(ParseError::DuplicateTile {
                tile: 7,
                first: 6,
                second: 7
            })
        );
        assert!(matches!(
            Board::parse("1 2 3 4 5 6 8 0", None),
            Err(ParseError::MissingTile { tile: 7, .. })
        ));
        assert!(matches!(
            Board::parse("1 2 3 4 5 6 8 0", Some(shape(3, 3))),
            Err(ParseError::MissingTile { tile: 7, .. })
        ));
        assert!(matches!(
            Board::parse("1 99999999999999999999999 3 4 5 6 7 8 0", None),
            Err(ParseError::TileOutOfRange { position: 1, .. })
        ));
    }

    #[test]
    fn error_messages_are_readable() {
        let e = Board::parse("1 2 3 4 5 6 7 7 0", None).unwrap_err();
        assert_eq!(e.to_string(), "duplicate tile 7: at positions 6 and 7");
        let e = Board::parse("1 2 3 4 5 6 7 0 x", None).unwrap_err();
        assert_eq!(e.to_string(), "duplicate blank: at positions 7 and 8");
    }

    #[test]
    fn apply_reports_the_first_illegal_move() {
        let b = Board::parse("1 2 3 4 5 6 7 8 0", None).unwrap();
        let moves = crate::parse_moves("ULLL").unwrap();
        let err = b.apply(&moves).unwrap_err();
        assert_eq!(err.index, 3);
        assert_eq!((err.row, err.col), (1, 0));
        assert_eq!(
            err.to_string(),
            "move 3 (L) is illegal: the blank is at row 1, column 0"
        );
        let ok = b.apply(&moves[..3]).unwrap();
        assert_eq!(ok.to_string(), "1 2 3 0 4 5 7 8 6");
    }
}
