//! One answer as JSON: [`Answer`], what `npuzzle solve --json` and `--output jsonl` print and
//! what the coordinator's HTTP API answers (`POST /api/v1/solve` adds the search's bound, its
//! heuristic and its units beside these fields). One type, so that the two cannot drift.
//!
//! ```
//! use npuzzle_proto::answer::{Answer, FailReason};
//!
//! let solved = serde_json::to_string(&Answer::solved(0, "RDL".into())).unwrap();
//! assert_eq!(
//!     solved,
//!     r#"{"index":0,"status":"solved","moves":"RDL","length":3,"nodes":0,"millis":0.0,"cached":false,"error":null,"reason":null}"#
//! );
//! let late = Answer::failed(1, FailReason::Deadline, "deadline exceeded");
//! assert!(serde_json::to_string(&late).unwrap().contains(r#""reason":"deadline""#));
//! ```

use std::time::Instant;

use serde::Serialize;

/// What became of one board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Solved,
    Unsolvable,
    /// The input is wrong: the board (or the settings for it) cannot be searched.
    Invalid,
    /// The board is fine but got no answer this time (see [`Answer::reason`]): a deadline, a
    /// coordinator that stayed busy or unreachable. Worth trying again (`--resume` does).
    Failed,
}

/// Why a board [`Status::Failed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailReason {
    /// Its `--timeout` passed before an optimal answer was proven.
    Deadline,
    /// The search was stopped before an answer (by the coordinator).
    Cancelled,
    /// The coordinator stayed unreachable, or without workers, for `--retry-for`.
    Unavailable,
    /// The coordinator stayed at its limit of searches for `--retry-for`.
    Busy,
    /// The coordinator answered with an error of its own.
    Internal,
    /// The HTTP API refused the request's client token (never a line of the command line's:
    /// there a refused token stops the run).
    Unauthenticated,
}

impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailReason::Deadline => "deadline",
            FailReason::Cancelled => "cancelled",
            FailReason::Unavailable => "unavailable",
            FailReason::Busy => "busy",
            FailReason::Internal => "internal",
            FailReason::Unauthenticated => "unauthenticated",
        })
    }
}

/// One answer, as `npuzzle solve --json` and `--output jsonl` print it, and as the
/// coordinator's HTTP API answers (with its own fields beside these).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Answer {
    /// 0-based input order.
    pub index: usize,
    pub status: Status,
    /// Upper-case move letters (the blank's direction); `null` unless solved.
    pub moves: Option<String>,
    /// Number of moves; `null` unless solved.
    pub length: Option<usize>,
    /// Nodes expanded by the search.
    pub nodes: u64,
    /// Wall-clock time for this board, in milliseconds.
    pub millis: f64,
    /// Answered from the coordinator's cache (always false with `--serial`).
    pub cached: bool,
    /// What is wrong with the input (invalid), or why there is no answer (failed); `null`
    /// otherwise.
    pub error: Option<String>,
    /// Why it failed; `null` unless failed.
    pub reason: Option<FailReason>,
}

impl Answer {
    /// An answer of `status` and nothing else (no moves, no cost, no error).
    pub fn new(index: usize, status: Status) -> Answer {
        Answer {
            index,
            status,
            moves: None,
            length: None,
            nodes: 0,
            millis: 0.0,
            cached: false,
            error: None,
            reason: None,
        }
    }

    /// Solved by `moves` (upper-case letters).
    pub fn solved(index: usize, moves: String) -> Answer {
        Answer {
            length: Some(moves.len()),
            moves: Some(moves),
            ..Answer::new(index, Status::Solved)
        }
    }

    /// Proven unsolvable (by parity).
    pub fn unsolvable(index: usize) -> Answer {
        Answer::new(index, Status::Unsolvable)
    }

    /// The input is wrong: `error` says how.
    pub fn invalid(index: usize, error: impl Into<String>) -> Answer {
        Answer {
            error: Some(error.into()),
            ..Answer::new(index, Status::Invalid)
        }
    }

    /// No answer this time, for `reason`; `error` says more.
    pub fn failed(index: usize, reason: FailReason, error: impl Into<String>) -> Answer {
        Answer {
            reason: Some(reason),
            error: Some(error.into()),
            ..Answer::new(index, Status::Failed)
        }
    }

    /// The same record with the search's cost: `nodes`, whether it came from the cache, and
    /// the time since `started` (to the microsecond, which keeps the JSON short).
    pub fn costing(mut self, nodes: u64, cached: bool, started: Instant) -> Answer {
        self.nodes = nodes;
        self.cached = cached;
        self.millis = (started.elapsed().as_secs_f64() * 1e6).round() / 1e3;
        self
    }
}
