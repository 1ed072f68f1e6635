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
//!     r#"{"index":0,"status":"solved","moves":"RDL","length":3,"optimal":true,"lower_bound":3,"nodes":0,"millis":0.0,"cached":false,"error":null,"reason":null}"#
//! );
//! let late = Answer::failed(1, FailReason::Deadline, "deadline exceeded");
//! assert!(serde_json::to_string(&late).unwrap().contains(r#""reason":"deadline""#));
//! // Past its deadline with the best path found (not proven optimal) and what was proven:
//! let best = late.with_incumbent("RDL".into(), 1);
//! assert!(serde_json::to_string(&best).unwrap().contains(r#""length":3,"optimal":false,"lower_bound":1"#));
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
    /// Number of moves; `null` unless solved (or failed at a deadline with a path found).
    pub length: Option<usize>,
    /// True only when `moves` is proven optimal (a bounded-suboptimal answer, `--within`, may
    /// be longer; a deadline's best path is not proven).
    pub optimal: bool,
    /// No path is shorter: proven by the search (`length` when `optimal`); `null` when nothing
    /// was proven.
    pub lower_bound: Option<u32>,
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
            optimal: false,
            lower_bound: None,
            nodes: 0,
            millis: 0.0,
            cached: false,
            error: None,
            reason: None,
        }
    }

    /// Solved by `moves` (upper-case letters), proven optimal.
    pub fn solved(index: usize, moves: String) -> Answer {
        Answer {
            length: Some(moves.len()),
            lower_bound: Some(moves.len() as u32),
            optimal: true,
            moves: Some(moves),
            ..Answer::new(index, Status::Solved)
        }
    }

    /// Solved by `moves`, which the search proved no longer than `lower_bound` allows: optimal
    /// when they are that long, else within the factor the request asked for.
    pub fn solved_within(index: usize, moves: String, lower_bound: u32) -> Answer {
        let optimal = moves.len() as u32 <= lower_bound;
        Answer {
            optimal,
            lower_bound: Some(lower_bound),
            ..Answer::solved(index, moves)
        }
    }

    /// The same (failed) record with the best path found before it stopped, not proven
    /// optimal, and the lower bound proven.
    pub fn with_incumbent(mut self, moves: String, lower_bound: u32) -> Answer {
        self.lower_bound = Some(lower_bound);
        if !moves.is_empty() {
            self.length = Some(moves.len());
            self.optimal = false;
            self.moves = Some(moves);
        }
        self
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

    /// The answer a coordinator's response gives board `index`: its moves, with what they are
    /// proven to be, or why there are none (the cost is the caller's to add).
    pub fn from_response(index: usize, r: &crate::v1::SolveResponse) -> Answer {
        use crate::v1::Outcome;
        let outcome = Outcome::try_from(r.outcome);
        let reason = match outcome {
            Ok(Outcome::Solved) if r.optimal => return Answer::solved(index, r.moves.clone()),
            Ok(Outcome::Solved) => {
                return Answer::solved_within(index, r.moves.clone(), r.lower_bound);
            }
            Ok(Outcome::Unsolvable) => return Answer::unsolvable(index),
            Ok(Outcome::InvalidArgument) => return Answer::invalid(index, r.error.clone()),
            Ok(Outcome::DeadlineExceeded) => FailReason::Deadline,
            Ok(Outcome::Cancelled) => FailReason::Cancelled,
            _ => FailReason::Internal,
        };
        let why = if r.error.is_empty() {
            "the search stopped"
        } else {
            &r.error
        };
        Answer::failed(
            index,
            reason,
            format!("{why} (lower bound {})", r.lower_bound),
        )
        .with_incumbent(r.moves.clone(), r.lower_bound)
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
