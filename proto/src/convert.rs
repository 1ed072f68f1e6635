//! Conversions between wire messages and `npuzzle-solver` types. Every conversion from the wire
//! validates: a malformed message becomes a [`WireError`] that names the problem, never a panic.

use npuzzle_solver::{
    Board, Goal, HeuristicKind, Move, MoveParseError, ParseError, Partition, PdbError, Shape,
    ShapeError, moves_to_string, parse_moves,
};
use thiserror::Error;

use crate::v1;

/// A message that does not describe a valid puzzle.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("missing board")]
    MissingBoard,
    #[error("invalid board size: {0}")]
    Shape(#[from] ShapeError),
    #[error("invalid board: {0}")]
    Board(#[from] ParseError),
    #[error("invalid goal: {0}")]
    Goal(ParseError),
    #[error("invalid goal: GOAL_KIND_CUSTOM needs the goal's tiles")]
    MissingGoalTiles,
    #[error("invalid goal: tiles are only allowed with GOAL_KIND_CUSTOM")]
    UnexpectedGoalTiles,
    #[error("unknown {what} value {value}")]
    UnknownEnum { what: &'static str, value: i32 },
    #[error("invalid moves: {0}")]
    Moves(#[from] MoveParseError),
    #[error("invalid pattern database: {0}")]
    PatternDatabase(PdbError),
}

/// Reads wire tiles into a board of `shape`, checking the count before anything else so that a
/// hostile message with thousands of tiles costs nothing.
fn tiles_to_board(shape: Shape, tiles: &[u32]) -> Result<Board, ParseError> {
    let expected = shape.cells();
    if tiles.is_empty() {
        return Err(ParseError::Empty);
    }
    if tiles.len() > expected {
        return Err(ParseError::WrongCount {
            shape,
            expected,
            found: tiles.len(),
        });
    }
    let mut small = Vec::with_capacity(tiles.len());
    for (position, &t) in tiles.iter().enumerate() {
        if t as usize >= expected {
            return Err(ParseError::TileOutOfRange {
                token: t.to_string(),
                position,
                shape,
                max: expected - 1,
            });
        }
        small.push(t as u8);
    }
    Board::new(shape, &small)
}

/// The board of a request.
pub fn board_from_wire(board: Option<&v1::Board>) -> Result<Board, WireError> {
    let b = board.ok_or(WireError::MissingBoard)?;
    let shape = Shape::new(b.width as usize, b.height as usize)?;
    Ok(tiles_to_board(shape, &b.tiles)?)
}

pub fn board_to_wire(board: &Board) -> v1::Board {
    v1::Board {
        width: board.shape().width() as u32,
        height: board.shape().height() as u32,
        tiles: board.tiles().iter().map(|&t| t as u32).collect(),
    }
}

/// The goal of a request for boards of `shape` (blank-last when absent).
pub fn goal_from_wire(goal: Option<&v1::Goal>, shape: Shape) -> Result<Goal, WireError> {
    let Some(g) = goal else {
        return Ok(Goal::blank_last(shape));
    };
    let kind = v1::GoalKind::try_from(g.kind).map_err(|_| WireError::UnknownEnum {
        what: "GoalKind",
        value: g.kind,
    })?;
    match kind {
        v1::GoalKind::BlankLast | v1::GoalKind::BlankFirst if !g.tiles.is_empty() => {
            Err(WireError::UnexpectedGoalTiles)
        }
        v1::GoalKind::BlankLast => Ok(Goal::blank_last(shape)),
        v1::GoalKind::BlankFirst => Ok(Goal::blank_first(shape)),
        v1::GoalKind::Custom if g.tiles.is_empty() => Err(WireError::MissingGoalTiles),
        v1::GoalKind::Custom => Ok(Goal::from_board(
            tiles_to_board(shape, &g.tiles).map_err(WireError::Goal)?,
        )),
    }
}

/// A goal as `GOAL_KIND_CUSTOM` (always exact, whatever goal it is).
pub fn goal_to_wire(goal: &Goal) -> v1::Goal {
    v1::Goal {
        kind: v1::GoalKind::Custom as i32,
        tiles: goal.tiles().iter().map(|&t| t as u32).collect(),
    }
}

/// `None` for `HEURISTIC_AUTO`.
pub fn heuristic_from_wire(value: i32) -> Result<Option<HeuristicKind>, WireError> {
    match v1::Heuristic::try_from(value) {
        Ok(v1::Heuristic::Auto) => Ok(None),
        Ok(v1::Heuristic::Manhattan) => Ok(Some(HeuristicKind::Manhattan)),
        Ok(v1::Heuristic::LinearConflict) => Ok(Some(HeuristicKind::LinearConflict)),
        Ok(v1::Heuristic::Exact) => Ok(Some(HeuristicKind::Exact)),
        Ok(v1::Heuristic::Pdb) => Ok(Some(HeuristicKind::Pdb)),
        Err(_) => Err(WireError::UnknownEnum {
            what: "Heuristic",
            value,
        }),
    }
}

pub fn heuristic_to_wire(kind: HeuristicKind) -> v1::Heuristic {
    match kind {
        HeuristicKind::Manhattan => v1::Heuristic::Manhattan,
        HeuristicKind::LinearConflict => v1::Heuristic::LinearConflict,
        HeuristicKind::Exact => v1::Heuristic::Exact,
        HeuristicKind::Pdb => v1::Heuristic::Pdb,
    }
}

/// The partition a worker's hello names, checked against the built-in partitions of its shape:
/// one name, or up to four joined by `+` (partitions whose heuristics the worker takes the max
/// of; the first is returned, under the whole name).
pub fn pattern_database_from_wire(db: &v1::PatternDatabase) -> Result<Partition, WireError> {
    let shape = Shape::new(db.width as usize, db.height as usize)?;
    let mut parts = db.partition.split('+');
    let first = parts.next().unwrap_or_default();
    let mut partition = Partition::named(shape, first).map_err(WireError::PatternDatabase)?;
    let mut count = 1;
    for name in parts {
        count += 1;
        if count > 4 {
            return Err(WireError::PatternDatabase(
                npuzzle_solver::PdbError::Pattern("more than 4 partitions under the max".into()),
            ));
        }
        Partition::named(shape, name).map_err(WireError::PatternDatabase)?;
    }
    partition.name = db.partition.clone();
    Ok(partition)
}

pub fn pattern_database_to_wire(partition: &Partition) -> v1::PatternDatabase {
    v1::PatternDatabase {
        width: partition.shape.width() as u32,
        height: partition.shape.height() as u32,
        partition: partition.name.clone(),
    }
}

/// A move string from the wire.
pub fn moves_from_wire(text: &str) -> Result<Vec<Move>, WireError> {
    Ok(parse_moves(text)?)
}

pub fn moves_to_wire(moves: &[Move]) -> String {
    moves_to_string(moves)
}

/// The single move letter of `Assignment.last_move` (`None` when empty).
pub fn last_move_from_wire(text: &str) -> Result<Option<Move>, WireError> {
    let moves = parse_moves(text)?;
    match moves.as_slice() {
        [] => Ok(None),
        [m] => Ok(Some(*m)),
        _ => Err(WireError::Moves(MoveParseError {
            index: 1,
            found: text.chars().nth(1).unwrap_or('?'),
        })),
    }
}

/// A split's `next_bound` on the wire (`UNIT_STATUS_SPLIT`): 0 when the part searched met no f
/// above the bound, which the solver says with `u32::MAX`. (An exhausted unit's `next_bound`
/// goes as it is: `u32::MAX` there.)
pub fn split_next_bound_to_wire(next_bound: u32) -> u32 {
    if next_bound == u32::MAX {
        0
    } else {
        next_bound
    }
}

/// The solver's form of a split's `next_bound` from the wire: [`split_next_bound_to_wire`]
/// undone.
pub fn split_next_bound_from_wire(wire: u32) -> u32 {
    if wire == 0 { u32::MAX } else { wire }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_splits_next_bound_of_none_is_zero_on_the_wire_and_back() {
        for next in [u32::MAX, 1, 52, u32::MAX - 1] {
            let wire = split_next_bound_to_wire(next);
            assert_eq!(wire == 0, next == u32::MAX, "{next}");
            assert_eq!(split_next_bound_from_wire(wire), next);
        }
    }

    fn wire(w: u32, h: u32, tiles: Vec<u32>) -> v1::Board {
        v1::Board {
            width: w,
            height: h,
            tiles,
        }
    }

    #[test]
    fn boards_round_trip() {
        let b = Board::parse("1 2 3 4 5 0", Some(Shape::new(3, 2).unwrap())).unwrap();
        assert_eq!(board_from_wire(Some(&board_to_wire(&b))).unwrap(), b);
    }

    #[test]
    fn malformed_boards_are_named() {
        assert_eq!(board_from_wire(None), Err(WireError::MissingBoard));
        let e = board_from_wire(Some(&wire(1_000_000, 3, vec![0]))).unwrap_err();
        assert!(e.to_string().contains("1000000x3 is not supported"), "{e}");
        let e = board_from_wire(Some(&wire(3, 3, (0..5000).collect()))).unwrap_err();
        assert!(e.to_string().contains("found 5000 tiles"), "{e}");
        let e = board_from_wire(Some(&wire(
            3,
            3,
            vec![1, 2, 3, 4, 5, 6, 7, 8, 4_000_000_000],
        )))
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("tile 4000000000 at position 8 is out of range"),
            "{e}"
        );
        let goal = v1::Goal {
            kind: v1::GoalKind::Custom as i32,
            tiles: vec![0, 1, 2],
        };
        let e = goal_from_wire(Some(&goal), Shape::new(3, 3).unwrap()).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid goal: missing tile 3"),
            "{e}"
        );
        let goal = v1::Goal {
            kind: 42,
            tiles: vec![],
        };
        assert!(goal_from_wire(Some(&goal), Shape::new(3, 3).unwrap()).is_err());
    }

    #[test]
    fn pattern_databases_round_trip_and_unknown_ones_are_named() {
        let partition = Partition::named(Shape::new(4, 4).unwrap(), "6-6-3").unwrap();
        let wire = pattern_database_to_wire(&partition);
        assert_eq!((wire.width, wire.height), (4, 4));
        assert_eq!(pattern_database_from_wire(&wire).unwrap(), partition);
        let unknown = v1::PatternDatabase {
            partition: "9-9".into(),
            ..wire.clone()
        };
        let e = pattern_database_from_wire(&unknown).unwrap_err();
        assert!(
            e.to_string().contains("no partition \"9-9\" for 4x4"),
            "{e}"
        );
        // Partitions under the max: each part must be a built-in one, at most four.
        let five = Shape::new(5, 5).unwrap();
        let both = v1::PatternDatabase {
            width: 5,
            height: 5,
            partition: "6-6-6-6+6-6-6-6-kf".into(),
        };
        let read = pattern_database_from_wire(&both).unwrap();
        assert_eq!(
            (read.shape, read.name.as_str()),
            (five, "6-6-6-6+6-6-6-6-kf")
        );
        for bad in [
            "6-6-6-6+9-9",
            "6-6-6-6+",
            "6-6-6-6+6-6-6-6+6-6-6-6+6-6-6-6+6-6-6-6",
        ] {
            let db = v1::PatternDatabase {
                partition: bad.into(),
                ..both.clone()
            };
            assert!(pattern_database_from_wire(&db).is_err(), "{bad}");
        }
        let huge = v1::PatternDatabase {
            width: 4_000_000_000,
            ..wire
        };
        assert!(matches!(
            pattern_database_from_wire(&huge),
            Err(WireError::Shape(_))
        ));
    }

    #[test]
    fn last_move_is_one_letter_or_none() {
        assert_eq!(last_move_from_wire(""), Ok(None));
        assert_eq!(last_move_from_wire("l"), Ok(Some(Move::Left)));
        assert!(last_move_from_wire("LR").is_err());
        assert!(last_move_from_wire("Q").is_err());
    }
}
