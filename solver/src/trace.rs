//! Traces of IDA* searches, for the cluster's simulator: for each bound, how many nodes every
//! subtree at a fixed depth takes, in the serial search's depth-first order.
//!
//! A simulated worker that is asked to search a unit under a bound adds up the subtrees below its
//! prefix; one asked to stop part-way hands back what its depth-first walk had not reached. So a
//! trace is the real search's shape, at the grain of its depth-`d` subtrees, without the search.
//!
//! The text form ([`Trace::to_text`], [`Trace::from_text`]) is line-based:
//!
//! ```text
//! npuzzle-trace 1
//! board 4x4 14 1 9 6 4 8 12 5 7 2 3 0 10 11 13 15
//! goal 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
//! heuristic lc
//! rate 31000000
//! path RRDDLURDLLUURRDLDRDLLURDRULURRDLLDRRR...
//! bound 41 depth 6 internal 1213 entries 2 found -
//! URRDLD 8812
//! UURRDD 9911
//! ```
//!
//! `rate` is the serial search's expanded nodes per second where the trace was recorded; `found`
//! names the entry (by index) holding the path in the last bound and the nodes its search took up
//! to the goal (`-` in the other bounds).

use std::fmt::Write as _;

use crate::board::Board;
use crate::goal::{Goal, ShapeMismatch};
use crate::moves::{Move, moves_to_string, parse_moves};
use crate::search::{Limits, Solver};
use crate::shape::Shape;
use crate::units::{UnitOutcome, WorkUnit};

/// The serial search's order of moves: [`Move::SEARCH_ORDER`].
pub const DFS_ORDER: [Move; 4] = Move::SEARCH_ORDER;

/// A move's rank in [`DFS_ORDER`] ([`Move::search_rank`]).
pub fn dfs_rank(m: Move) -> u8 {
    m.search_rank()
}

/// A path's place in the serial search's depth-first order: its moves' ranks, compared
/// lexicographically (an ancestor comes before its descendants).
pub fn dfs_key(moves: &[Move]) -> Vec<u8> {
    moves.iter().map(|&m| dfs_rank(m)).collect()
}

/// A path's place in the serial search's depth-first order, ordered as its [`dfs_key`] is,
/// held inline for the first [`DfsKey::INLINE`] moves: a key that orders thousands of queued
/// tasks costs no allocation and compares as one integer for paths of up to that many moves.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DfsKey {
    /// The first moves' ranks plus one, three bits each, the first in the highest bits (21 in
    /// each half); 0 after the path's end, so that a path sorts before its extensions.
    head: u128,
    /// The ranks of the moves past the first [`DfsKey::INLINE`], if any.
    tail: Option<Box<[u8]>>,
}

impl DfsKey {
    /// Moves held inline.
    pub const INLINE: usize = 42;

    pub fn of(moves: &[Move]) -> DfsKey {
        let (inline, rest) = moves.split_at(moves.len().min(Self::INLINE));
        // Two halves of 21 moves, each left-aligned in 63 bits: one integer shift a move.
        let half = |moves: &[Move]| {
            let digits = moves
                .iter()
                .fold(0u64, |acc, &m| acc << 3 | (u64::from(dfs_rank(m)) + 1));
            digits << (3 * (Self::INLINE / 2 - moves.len()))
        };
        let (high, low) = inline.split_at(inline.len().min(Self::INLINE / 2));
        DfsKey {
            head: u128::from(half(high)) << 64 | u128::from(half(low)),
            tail: (!rest.is_empty()).then(|| dfs_key(rest).into_boxed_slice()),
        }
    }
}

/// One subtree at the trace's depth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// Moves from the root.
    pub prefix: Vec<Move>,
    /// Nodes its search under the bound expanded (up to the goal, for the entry that holds it).
    pub nodes: u64,
}

/// One bound of a traced search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundTrace {
    pub bound: u32,
    /// The entries' depth.
    pub depth: u32,
    /// Nodes expanded above that depth.
    pub internal: u64,
    /// In depth-first order; subtrees pruned at their root (f above the bound) are left out.
    pub entries: Vec<TraceEntry>,
    /// The entry that holds a path within the bound, if any (the serial search stops there).
    pub found: Option<usize>,
}

impl BoundTrace {
    /// Nodes of the whole bound, searched to its end.
    pub fn total(&self) -> u64 {
        self.internal + self.entries.iter().map(|e| e.nodes).sum::<u64>()
    }
}

/// A traced search: the board, its goal, the optimal path and every bound.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub board: Board,
    pub goal: Goal,
    /// The heuristic's name, e.g. `pdb 6-6-6-6` (information only).
    pub heuristic: String,
    /// Expanded nodes per second of the serial search where the trace was recorded.
    pub rate: f64,
    pub path: Vec<Move>,
    pub bounds: Vec<BoundTrace>,
}

/// Why a trace's text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trace line {line}: {what}")]
pub struct TraceError {
    pub line: usize,
    pub what: String,
}

impl Solver {
    /// Searches bound `bound` from `board` to its end and records, in depth-first order, the
    /// nodes of every subtree at `depth` (cut at most at the bound's depth).
    pub fn trace_bound(
        &self,
        board: &Board,
        bound: u32,
        depth: u32,
    ) -> Result<BoundTrace, ShapeMismatch> {
        self.goal().check_shape(board)?;
        let mut out = BoundTrace {
            bound,
            depth,
            internal: 0,
            entries: Vec::new(),
            found: None,
        };
        let root = WorkUnit {
            board: *board,
            g: 0,
            last: None,
            prefix: Vec::new(),
            trail: Vec::new(),
        };
        self.trace_walk(&root, bound, depth, &mut out)?;
        Ok(out)
    }

    fn trace_walk(
        &self,
        unit: &WorkUnit,
        bound: u32,
        depth: u32,
        out: &mut BoundTrace,
    ) -> Result<(), ShapeMismatch> {
        if self.unit_bound(unit)? > bound {
            return Ok(());
        }
        if unit.g >= depth || unit.board == *self.goal().board() {
            let report = self.search_unit(unit, bound, &Limits::default())?;
            if matches!(report.outcome, UnitOutcome::Found(_)) && out.found.is_none() {
                out.found = Some(out.entries.len());
            }
            out.entries.push(TraceEntry {
                prefix: unit.prefix.clone(),
                nodes: report.expanded,
            });
            return Ok(());
        }
        out.internal += 1;
        for mv in DFS_ORDER {
            // A unit the search never enters (it repeats a preferred move sequence) is skipped
            // here too.
            if let Some(child) = unit.child(mv).filter(|c| !self.is_skipped(c)) {
                self.trace_walk(&child, bound, depth, out)?;
            }
        }
        Ok(())
    }
}

impl Trace {
    /// Every trace in `text` (traces written one after another, each from its header line).
    pub fn parse_all(text: &str) -> Result<Vec<Trace>, TraceError> {
        let mut traces = Vec::new();
        let mut start: Option<usize> = None;
        let mut offset = 0;
        let mut first_line = 1;
        let mut line_no = 0;
        for line in text.split_inclusive('\n') {
            line_no += 1;
            if line.trim() == "npuzzle-trace 1" {
                if let Some(s) = start {
                    traces.push(Self::from_text(&text[s..offset]).map_err(|e| TraceError {
                        line: e.line + first_line - 1,
                        what: e.what,
                    })?);
                }
                start = Some(offset);
                first_line = line_no;
            }
            offset += line.len();
        }
        match start {
            Some(s) => traces.push(Self::from_text(&text[s..]).map_err(|e| TraceError {
                line: e.line + first_line - 1,
                what: e.what,
            })?),
            None if text.trim().is_empty() => {}
            None => return Self::from_text(text).map(|t| vec![t]),
        }
        Ok(traces)
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let shape = self.board.shape();
        let tiles = |t: &[u8]| {
            t.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(s, "npuzzle-trace 1");
        let _ = writeln!(s, "board {shape} {}", tiles(self.board.tiles()));
        let _ = writeln!(s, "goal {}", tiles(self.goal.tiles()));
        let _ = writeln!(s, "heuristic {}", self.heuristic);
        let _ = writeln!(s, "rate {:.0}", self.rate);
        let _ = writeln!(s, "path {}", moves_to_string(&self.path));
        for b in &self.bounds {
            let found = b.found.map_or("-".to_string(), |i| i.to_string());
            let _ = writeln!(
                s,
                "bound {} depth {} internal {} entries {} found {found}",
                b.bound,
                b.depth,
                b.internal,
                b.entries.len()
            );
            for e in &b.entries {
                let _ = writeln!(s, "{} {}", moves_to_string(&e.prefix), e.nodes);
            }
        }
        s
    }

    pub fn from_text(text: &str) -> Result<Trace, TraceError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        let mut next = |what: &str| -> Result<(usize, &str), TraceError> {
            lines.next().ok_or(TraceError {
                line: 0,
                what: format!("missing {what}"),
            })
        };
        let bad = |line: usize, what: String| TraceError { line, what };
        let field = |(line, l): (usize, &str), key: &str| -> Result<String, TraceError> {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix(' '))
                .map(str::to_string)
                .ok_or_else(|| bad(line, format!("expected `{key} …`")))
        };
        let (line, magic) = next("header")?;
        if magic != "npuzzle-trace 1" {
            return Err(bad(line, "not an npuzzle trace (version 1)".into()));
        }
        let board_line = next("board")?;
        let board_text = field(board_line, "board")?;
        let (shape_text, tiles_text) = board_text
            .split_once(' ')
            .ok_or_else(|| bad(board_line.0, "board without tiles".into()))?;
        let shape: Shape = shape_text
            .parse()
            .map_err(|e| bad(board_line.0, format!("{e}")))?;
        let board =
            Board::parse(tiles_text, Some(shape)).map_err(|e| bad(board_line.0, e.to_string()))?;
        let goal_line = next("goal")?;
        let goal_board = Board::parse(&field(goal_line, "goal")?, Some(shape))
            .map_err(|e| bad(goal_line.0, e.to_string()))?;
        let goal = Goal::from_board(goal_board);
        let heuristic = field(next("heuristic")?, "heuristic")?;
        let rate_line = next("rate")?;
        let rate: f64 = field(rate_line, "rate")?
            .parse()
            .map_err(|_| bad(rate_line.0, "rate is not a number".into()))?;
        let path_line = next("path")?;
        let path =
            parse_moves(&field(path_line, "path")?).map_err(|e| bad(path_line.0, e.to_string()))?;
        let mut bounds = Vec::new();
        while let Some((line, l)) = lines.next() {
            if l.is_empty() {
                continue;
            }
            let words: Vec<&str> = l.split_whitespace().collect();
            let [
                "bound",
                bound,
                "depth",
                depth,
                "internal",
                internal,
                "entries",
                count,
                "found",
                found,
            ] = words[..]
            else {
                return Err(bad(
                    line,
                    "expected `bound B depth D internal N entries N found I|-`".into(),
                ));
            };
            let number = |s: &str| -> Result<u64, TraceError> {
                s.parse()
                    .map_err(|_| bad(line, format!("`{s}` is not a number")))
            };
            let count = number(count)? as usize;
            let found = match found {
                "-" => None,
                i => Some(number(i)? as usize),
            };
            let mut entries = Vec::with_capacity(count.min(1 << 20));
            for _ in 0..count {
                let (line, l) = lines
                    .next()
                    .ok_or(bad(line, "fewer entries than announced".into()))?;
                let (moves, nodes) = l
                    .split_once(' ')
                    .ok_or_else(|| bad(line, "expected `MOVES NODES`".into()))?;
                let prefix = parse_moves(moves).map_err(|e| bad(line, e.to_string()))?;
                let nodes = nodes
                    .parse()
                    .map_err(|_| bad(line, "nodes is not a number".into()))?;
                entries.push(TraceEntry { prefix, nodes });
            }
            if found.is_some_and(|i| i >= entries.len()) {
                return Err(bad(line, "found names no entry".into()));
            }
            bounds.push(BoundTrace {
                bound: number(bound)? as u32,
                depth: number(depth)? as u32,
                internal: number(internal)?,
                entries,
                found,
            });
        }
        // A simulator replays this path as the answer: it must be one.
        if !board.verify(&path, &goal).is_ok_and(|v| v.reaches_goal) {
            return Err(bad(
                path_line.0,
                "the path does not take the board to its goal".into(),
            ));
        }
        if bounds.last().is_none_or(|b: &BoundTrace| b.found.is_none()) {
            return Err(bad(
                path_line.0,
                "the last bound must name the entry that holds the path".into(),
            ));
        }
        Ok(Trace {
            board,
            goal,
            heuristic,
            rate,
            path,
            bounds,
        })
    }
}
