//! The workload, drawn from the plan's seed before anything is sent: the warm-up boards, then
//! each request of the measured run with what it must get back ([`Expect`]), the optimum of
//! every solvable board computed here.

use std::collections::{HashMap, HashSet};
use std::fmt;

use npuzzle_proto::{board_to_wire, v1};
use npuzzle_solver::{Board, Goal, HeuristicKind, Limits, SearchOutcome, Solver};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::LoadError;
use super::plan::{Kind, LoadPlan};
use crate::tools::{Generate, random_board};

/// Ways a request is malformed; each must come back `INVALID_ARGUMENT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Malformed {
    TooManyTiles,
    TooFewTiles,
    DuplicateTile,
    TileOutOfRange,
    WidthZero,
    LargerThan5x5,
    NoBoard,
    UnknownHeuristic,
    CustomGoalWithoutTiles,
}

impl Malformed {
    const ALL: [Malformed; 9] = [
        Malformed::TooManyTiles,
        Malformed::TooFewTiles,
        Malformed::DuplicateTile,
        Malformed::TileOutOfRange,
        Malformed::WidthZero,
        Malformed::LargerThan5x5,
        Malformed::NoBoard,
        Malformed::UnknownHeuristic,
        Malformed::CustomGoalWithoutTiles,
    ];

    fn describe(self) -> &'static str {
        match self {
            Malformed::TooManyTiles => "one tile too many",
            Malformed::TooFewTiles => "one tile too few",
            Malformed::DuplicateTile => "a duplicate tile",
            Malformed::TileOutOfRange => "a tile out of range",
            Malformed::WidthZero => "width 0",
            Malformed::LargerThan5x5 => "a 6x6 board",
            Malformed::NoBoard => "no board",
            Malformed::UnknownHeuristic => "heuristic 99",
            Malformed::CustomGoalWithoutTiles => "a custom goal without tiles",
        }
    }

    /// The request for `board`, spoilt this way.
    fn spoil(self, board: &Board) -> v1::SolveRequest {
        let mut request = solve_request(board);
        let mut wire = board_to_wire(board);
        let cells = wire.tiles.len();
        match self {
            Malformed::TooManyTiles => wire.tiles.push(cells as u32),
            Malformed::TooFewTiles => {
                wire.tiles.pop();
            }
            Malformed::DuplicateTile => wire.tiles[1] = wire.tiles[0],
            Malformed::TileOutOfRange => wire.tiles[cells - 1] = cells as u32,
            Malformed::WidthZero => wire.width = 0,
            Malformed::LargerThan5x5 => {
                wire.width = 6;
                wire.height = 6;
                wire.tiles = (0..36).collect();
            }
            Malformed::NoBoard => {}
            Malformed::UnknownHeuristic => request.heuristic = 99,
            Malformed::CustomGoalWithoutTiles => {
                request.goal = Some(v1::Goal {
                    kind: v1::GoalKind::Custom as i32,
                    tiles: vec![],
                });
            }
        }
        request.board = (self != Malformed::NoBoard).then_some(wire);
        request
    }
}

/// A well-formed request for `board` towards the blank-last goal, heuristic `auto`.
pub(super) fn solve_request(board: &Board) -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(board_to_wire(board)),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankLast as i32,
            tiles: vec![],
        }),
        heuristic: v1::Heuristic::Auto as i32,
        ..Default::default()
    }
}

/// What a request must get back.
#[derive(Clone, Debug)]
pub(super) enum Expect {
    /// A path from the board to the goal of exactly `optimum` moves.
    Solved {
        board: Board,
        optimum: usize,
    },
    Unsolvable {
        board: Board,
    },
    /// `INVALID_ARGUMENT`.
    Invalid(Malformed),
}

impl fmt::Display for Expect {
    /// The request, for a failure's description.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Solved { board, .. } | Expect::Unsolvable { board } => write!(f, "[{board}]"),
            Expect::Invalid(m) => write!(f, "({})", m.describe()),
        }
    }
}

/// One request of the workload and what it must get back.
pub(super) struct Item {
    pub(super) kind: Kind,
    pub(super) request: v1::SolveRequest,
    pub(super) expect: Expect,
}

/// Everything to send: the warm-up first, then the measured run.
pub(super) struct Workload {
    pub(super) warm: Vec<Item>,
    pub(super) run: Vec<Item>,
}

/// A solvable board not drawn before (unless the shape has too few states to find one).
pub(super) fn fresh(
    goal: &Goal,
    generate: Generate,
    seen: &mut HashSet<Board>,
    rng: &mut impl Rng,
) -> Board {
    for _ in 0..100 {
        let board = random_board(goal, generate, rng);
        if seen.insert(board) {
            return board;
        }
    }
    random_board(goal, generate, rng)
}

/// `board` with two of its tiles (not the blank) swapped: the other parity, so unsolvable.
pub(super) fn swapped(board: &Board, rng: &mut impl Rng) -> Board {
    let mut tiles = board.tiles().to_vec();
    let filled: Vec<usize> = (0..tiles.len()).filter(|&i| tiles[i] != 0).collect();
    let a = rng.random_range(0..filled.len());
    let mut b = rng.random_range(0..filled.len() - 1);
    if b >= a {
        b += 1;
    }
    tiles.swap(filled[a], filled[b]);
    Board::new(board.shape(), &tiles).expect("a permutation of a board's tiles is a board")
}

/// The optimum of each board, computed on every core.
pub(super) fn optima(goal: &Goal, boards: Vec<Board>) -> Result<HashMap<Board, usize>, LoadError> {
    let kind = HeuristicKind::best_for(goal.shape());
    let solver = Solver::new(*goal, kind).map_err(|e| LoadError::Optimum {
        board: goal.board().to_string(),
        why: e.to_string(),
    })?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = boards.len().div_ceil(threads).max(1);
    let optimum = |board: &Board| match solver.solve(board, &Limits::default()) {
        Ok(report) => match report.outcome {
            SearchOutcome::Solved(path) => Ok((*board, path.len())),
            other => Err(LoadError::Optimum {
                board: board.to_string(),
                why: format!("the search ended {other:?}"),
            }),
        },
        Err(e) => Err(LoadError::Optimum {
            board: board.to_string(),
            why: e.to_string(),
        }),
    };
    std::thread::scope(|scope| {
        let parts: Vec<_> = boards
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(optimum).collect::<Vec<_>>()))
            .collect();
        let mut found = HashMap::with_capacity(boards.len());
        for part in parts {
            let part = part
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for entry in part {
                let (board, length) = entry?;
                found.insert(board, length);
            }
        }
        Ok(found)
    })
}

/// Draws the workload from the plan's seed and computes every solvable board's optimum.
pub(super) fn workload(plan: &LoadPlan) -> Result<Workload, LoadError> {
    let goal = Goal::blank_last(plan.shape);
    let generate = plan.walk.map_or(Generate::Uniform, Generate::Walk);
    let mut rng = ChaCha8Rng::seed_from_u64(plan.seed);
    let mut seen = HashSet::new();
    let warm: Vec<Board> = (0..plan.warm)
        .map(|_| fresh(&goal, generate, &mut seen, &mut rng))
        .collect();
    let mut malformed = Malformed::ALL.iter().cycle();
    let drafts: Vec<(Kind, Board, Option<Malformed>)> = (0..plan.requests)
        .map(|_| {
            let kind = plan.mix.draw(&mut rng);
            let board = match kind {
                Kind::Cached => warm[rng.random_range(0..warm.len())],
                Kind::New => fresh(&goal, generate, &mut seen, &mut rng),
                Kind::Invalid | Kind::Unsolvable => random_board(&goal, generate, &mut rng),
            };
            match kind {
                Kind::Unsolvable => (kind, swapped(&board, &mut rng), None),
                Kind::Invalid => (kind, board, malformed.next().copied()),
                _ => (kind, board, None),
            }
        })
        .collect();
    let solvable: HashSet<Board> = warm
        .iter()
        .copied()
        .chain(
            drafts
                .iter()
                .filter(|(k, ..)| matches!(k, Kind::Cached | Kind::New))
                .map(|(_, b, _)| *b),
        )
        .collect();
    let optima = optima(&goal, solvable.into_iter().collect())?;
    let solved = |kind, board: Board| -> Result<Item, LoadError> {
        let optimum = *optima.get(&board).ok_or_else(|| LoadError::Optimum {
            board: board.to_string(),
            why: "not computed".into(),
        })?;
        Ok(Item {
            kind,
            request: solve_request(&board),
            expect: Expect::Solved { board, optimum },
        })
    };
    let warm = warm
        .into_iter()
        .map(|b| solved(Kind::New, b))
        .collect::<Result<_, _>>()?;
    let run = drafts
        .into_iter()
        .map(|(kind, board, malformed)| match (kind, malformed) {
            (Kind::Invalid, Some(m)) => Ok(Item {
                kind,
                request: m.spoil(&board),
                expect: Expect::Invalid(m),
            }),
            (Kind::Unsolvable, _) => Ok(Item {
                kind,
                request: solve_request(&board),
                expect: Expect::Unsolvable { board },
            }),
            _ => solved(kind, board),
        })
        .collect::<Result<_, _>>()?;
    Ok(Workload { warm, run })
}

#[cfg(test)]
mod tests {
    use npuzzle_solver::Shape;

    use super::*;

    #[test]
    fn every_malformed_request_is_refused_by_the_wire_checks() {
        let board = Board::parse("8 6 7 2 5 4 3 0 1", None).unwrap();
        for m in Malformed::ALL {
            let r = m.spoil(&board);
            let board = npuzzle_proto::board_from_wire(r.board.as_ref());
            let refused = match board {
                Err(_) => true,
                Ok(b) => {
                    npuzzle_proto::goal_from_wire(r.goal.as_ref(), b.shape()).is_err()
                        || npuzzle_proto::heuristic_from_wire(r.heuristic).is_err()
                }
            };
            assert!(refused, "{m:?} passes the wire checks");
        }
    }

    #[test]
    fn swapping_two_tiles_makes_a_board_unsolvable() {
        let goal = Goal::blank_last(Shape::new(4, 4).unwrap());
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..100 {
            let board = random_board(&goal, Generate::Uniform, &mut rng);
            assert_eq!(goal.can_reach(&swapped(&board, &mut rng)), Ok(false));
        }
    }
}
