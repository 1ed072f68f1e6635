//! A job's trace indexed for the simulated workers: what searching one task costs and reports.

use npuzzle_solver::{ABSORB_NODES, ABSORB_PIECE_NODES, Board, Move, Trace, TraceEntry, dfs_key};

use crate::scheduler::{Assignment, HandedBack, Report};

/// One job's trace, indexed for the simulated workers.
pub(super) struct JobTrace {
    pub(super) trace: Trace,
    /// Per bound: the entries' prefixes as ranks, for range searches in depth-first order.
    pub(super) keys: Vec<Vec<Vec<u8>>>,
}

/// How a simulated search of one task goes.
pub(super) struct Outcome {
    /// Nodes until it reports.
    pub(super) cost: u64,
    pub(super) report: Report,
    pub(super) iterations: Vec<(u32, u64)>,
}

impl JobTrace {
    pub(super) fn new(trace: Trace) -> JobTrace {
        let keys = trace
            .bounds
            .iter()
            .map(|b| b.entries.iter().map(|e| dfs_key(&e.prefix)).collect())
            .collect();
        JobTrace { trace, keys }
    }

    pub(super) fn bound_index(&self, bound: u32) -> Option<usize> {
        self.trace.bounds.iter().position(|b| b.bound == bound)
    }

    pub(super) fn next_bound_after(&self, bound: u32) -> u32 {
        self.trace
            .bounds
            .iter()
            .map(|b| b.bound)
            .find(|&b| b > bound)
            .unwrap_or(bound + 2)
    }

    /// The entries below `prefix` in bound `bi`, and the share of each a task at `prefix` gets
    /// (below 1 when the prefix is deeper than the trace: see [`JobTrace::deep_share`]).
    pub(super) fn range(&self, bi: usize, prefix: &[Move]) -> (std::ops::Range<usize>, f64) {
        let keys = &self.keys[bi];
        let depth = self.trace.bounds[bi].depth as usize;
        let (key, share) = if prefix.len() > depth {
            (dfs_key(&prefix[..depth]), self.deep_share(prefix, depth))
        } else {
            (dfs_key(prefix), 1.0)
        };
        let start = keys.partition_point(|k| k.as_slice() < key.as_slice());
        let end = start + keys[start..].partition_point(|k| k.starts_with(&key));
        (start..end, share)
    }

    /// The share of a traced subtree (at `depth`) that lies below `prefix`, deeper. The trace
    /// knows nothing below its depth, so a node's nodes are shared evenly among its children
    /// (the blank's moves other than back): a subtree's nodes stay the sum of its pieces'.
    pub(super) fn deep_share(&self, prefix: &[Move], depth: usize) -> f64 {
        let Ok(mut board) = self.trace.board.apply(&prefix[..depth]) else {
            return 0.0;
        };
        let mut share = 1.0f64;
        for (i, &mv) in prefix.iter().enumerate().skip(depth) {
            let last = i.checked_sub(1).map(|j| prefix[j]);
            share /= children(&board, last).len().max(1) as f64;
            let Some(next) = board.after(mv) else {
                return 0.0;
            };
            board = next;
        }
        share
    }

    /// A depth-first search of the subtree at `root` (`nodes` in all, shared among children as
    /// in [`JobTrace::deep_share`]) that stops after `budget` nodes, as a real search asked back
    /// does: the nodes it searched, and the siblings it had not reached on each level of its
    /// path, deepest first (the order a real search hands them back in), with their nodes.
    pub(super) fn stop_inside(
        &self,
        root: &[Move],
        nodes: u64,
        budget: u64,
    ) -> (u64, Vec<(Vec<Move>, u64)>) {
        let Ok(mut board) = self.trace.board.apply(root) else {
            return (nodes, Vec::new());
        };
        let mut path = root.to_vec();
        let (mut left, mut budget) = (nodes, budget);
        let mut spent = 0u64;
        let mut levels: Vec<Vec<(Vec<Move>, u64)>> = Vec::new();
        loop {
            let kids = children(&board, path.last().copied());
            // What is left fits in the budget (or nothing below can be split): searched whole.
            if left <= budget.saturating_add(1) || kids.is_empty() || path.len() >= 255 {
                spent += left;
                break;
            }
            let child = (left - 1) / kids.len() as u64;
            spent += 1;
            budget = budget.saturating_sub(1);
            let mut next = 0;
            while next + 1 < kids.len() && budget >= child {
                spent += child;
                budget -= child;
                next += 1;
            }
            levels.push(
                kids[next + 1..]
                    .iter()
                    .map(|&m| {
                        let mut p = path.clone();
                        p.push(m);
                        (p, child)
                    })
                    .collect(),
            );
            let Some(b) = board.after(kids[next]) else {
                break;
            };
            board = b;
            path.push(kids[next]);
            left = child;
        }
        (spent, levels.into_iter().rev().flatten().collect())
    }

    /// Task `prefix` under bound index `bi`, stopping once `stop_at` nodes are searched: its
    /// nodes and what it reports.
    pub(super) fn search_bound(
        &self,
        bi: usize,
        prefix: &[Move],
        stop_at: u64,
        absorb: bool,
    ) -> (u64, Report) {
        let b = &self.trace.bounds[bi];
        let (range, share) = self.range(bi, prefix);
        // As the real search does (`Solver::search_unit`, a task of one bound): the first
        // pieces, in depth-first order, are searched here while each ends within
        // `ABSORB_PIECE_NODES` and all within `ABSORB_NODES`; the first that needs more is
        // handed back whole, with the rest.
        let split = |mut nodes: u64, pieces: Vec<(Vec<Move>, u64)>| {
            let mut spent = 0u64;
            let mut kept = Vec::new();
            let mut open = absorb;
            for (p, n) in pieces {
                if open && spent + ABSORB_PIECE_NODES <= ABSORB_NODES {
                    let holds = b.found.is_some() && self.trace.path.starts_with(&p);
                    if n <= ABSORB_PIECE_NODES {
                        spent += n;
                        if holds {
                            return (
                                nodes + spent,
                                Report::Found(self.trace.path[prefix.len()..].to_vec()),
                            );
                        }
                        continue;
                    }
                    spent += ABSORB_PIECE_NODES;
                }
                open = false;
                kept.push((p, n));
            }
            nodes += spent;
            if kept.is_empty() {
                return (
                    nodes,
                    Report::Exhausted {
                        next_bound: self.next_bound_after(b.bound),
                    },
                );
            }
            (
                nodes,
                Report::Split {
                    bound: b.bound,
                    next_bound: u32::MAX,
                    pieces: handed_back(b.bound, prefix.len(), kept),
                },
            )
        };
        let mut nodes = 0u64;
        for i in range.clone() {
            let entry = &b.entries[i];
            let entry_nodes = ((entry.nodes as f64) * share).ceil() as u64;
            if b.found == Some(i) && self.trace.path.starts_with(prefix) {
                return (
                    nodes + entry_nodes,
                    Report::Found(self.trace.path[prefix.len()..].to_vec()),
                );
            }
            if nodes + entry_nodes > stop_at {
                // Stopped inside this subtree: its siblings not reached, then the entries after.
                let root = if prefix.len() > entry.prefix.len() {
                    prefix
                } else {
                    &entry.prefix
                };
                let (spent, mut pieces) = self.stop_inside(root, entry_nodes, stop_at - nodes);
                nodes += spent;
                pieces.extend(self.rest(bi, entry, i + 1..range.end));
                if pieces.is_empty() {
                    continue;
                }
                return split(nodes, pieces);
            }
            nodes += entry_nodes;
            if nodes >= stop_at && i + 1 < range.end {
                return split(nodes, self.rest(bi, entry, i + 1..range.end));
            }
        }
        (
            nodes.max(1),
            Report::Exhausted {
                next_bound: self.next_bound_after(b.bound),
            },
        )
    }

    /// The entries `rest`, which follow `stopped` in depth-first order, grouped into the
    /// sibling subtrees they hang from (one group for each level of `stopped`'s path where
    /// they leave it), with their nodes.
    pub(super) fn rest(
        &self,
        bi: usize,
        stopped: &TraceEntry,
        rest: std::ops::Range<usize>,
    ) -> Vec<(Vec<Move>, u64)> {
        let b = &self.trace.bounds[bi];
        let mut pieces: Vec<(Vec<Move>, u64)> = Vec::new();
        for i in rest {
            let e = &b.entries[i].prefix;
            let split = e
                .iter()
                .zip(&stopped.prefix)
                .position(|(a, b)| a != b)
                .unwrap_or(e.len().min(stopped.prefix.len()));
            let root = &e[..(split + 1).min(e.len())];
            match pieces.last_mut() {
                Some((p, n)) if p.as_slice() == root => *n += b.entries[i].nodes,
                _ => pieces.push((root.to_vec(), b.entries[i].nodes)),
            }
        }
        pieces
    }

    /// A task of a bound above the trace's last (searched ahead of the answer's bound, before
    /// the answer is found): the trace's last bound has the whole subtree, and a bound two
    /// higher searches it again grown by the trace's last growth per step (as the scheduler
    /// predicts). It reports the subtree exhausted (a path it may hold is longer than the
    /// answer, which is never waited on), and asked back it hands back the same pieces as at
    /// the last bound, with the same slack. `None` for a bound within the trace.
    pub(super) fn beyond_the_trace(&self, a: &Assignment, stop_at: u64) -> Option<Outcome> {
        let bounds = &self.trace.bounds;
        let last = bounds.len().checked_sub(1)?;
        let top = bounds[last].bound;
        if a.bound <= top {
            return None;
        }
        let growth = match last.checked_sub(1) {
            Some(before) if bounds[before].total() > 0 => {
                (bounds[last].total() as f64 / bounds[before].total() as f64).clamp(1.0, 50.0)
            }
            _ => 4.0,
        };
        let scale = growth.powf((a.bound - top) as f64 / 2.0);
        let scaled_stop = (stop_at as f64 / scale).min(u64::MAX as f64) as u64;
        let (cost, report) = self.search_bound(last, &a.work.prefix, scaled_stop, true);
        let cost = ((cost as f64 * scale).ceil() as u64).max(1);
        let next_bound = a.bound + 2;
        let report = match report {
            Report::Split {
                next_bound: n,
                pieces,
                ..
            } => Report::Split {
                bound: a.bound,
                next_bound: n,
                pieces: pieces
                    .into_iter()
                    .map(|p| HandedBack {
                        f: p.f + (a.bound - top),
                        moves: p.moves,
                    })
                    .collect(),
            },
            _ => Report::Exhausted { next_bound },
        };
        Some(Outcome {
            cost,
            report,
            iterations: Vec::new(),
        })
    }

    /// A task's simulated search: one bound, or (`iterate`) bound after bound from `bound`.
    pub(super) fn search(&self, a: &Assignment, stop_at: u64) -> Outcome {
        let prefix = &a.work.prefix;
        if !a.iterate {
            if let Some(outcome) = self.beyond_the_trace(a, stop_at) {
                return outcome;
            }
            let Some(bi) = self.bound_index(a.bound) else {
                // Below the worker's own value at the unit's root: pruned at once.
                return Outcome {
                    cost: 1,
                    report: Report::Exhausted {
                        next_bound: self.next_bound_after(a.bound),
                    },
                    iterations: Vec::new(),
                };
            };
            let (cost, report) = self.search_bound(bi, prefix, stop_at, true);
            return Outcome {
                cost,
                report,
                iterations: Vec::new(),
            };
        }
        let mut spent = 0u64;
        let mut iterations = Vec::new();
        for (bi, b) in self.trace.bounds.iter().enumerate() {
            if b.bound < a.bound {
                continue;
            }
            let (nodes, report) =
                self.search_bound(bi, prefix, stop_at.saturating_sub(spent), false);
            spent += nodes + b.internal;
            iterations.push((b.bound, nodes + b.internal));
            match report {
                Report::Exhausted { .. } if spent < stop_at => continue,
                Report::Exhausted { .. } => {
                    // Stopped just as the bound ended: the next bound's root is the one piece.
                    let next = self.next_bound_after(b.bound);
                    return Outcome {
                        cost: spent,
                        report: Report::Split {
                            bound: next,
                            next_bound: u32::MAX,
                            pieces: vec![HandedBack {
                                moves: Vec::new(),
                                f: next,
                            }],
                        },
                        iterations: {
                            iterations.push((next, 0));
                            iterations
                        },
                    };
                }
                report => {
                    return Outcome {
                        cost: spent,
                        report,
                        iterations,
                    };
                }
            }
        }
        Outcome {
            cost: spent.max(1),
            report: Report::Failed("the trace ends before a path".into()),
            iterations,
        }
    }
}

/// The pieces a simulated search hands back, from their paths (from the job's root) and nodes:
/// moves below the task's `prefix_len` moves, and f from each piece's size (a subtree grows
/// about 4 times per 2 of slack).
pub(super) fn handed_back(
    bound: u32,
    prefix_len: usize,
    pieces: Vec<(Vec<Move>, u64)>,
) -> Vec<HandedBack> {
    let smallest = pieces.iter().map(|p| p.1).min().unwrap_or(1).max(1) as f64;
    pieces
        .into_iter()
        .map(|(p, n)| {
            let slack = (2.0 * (n.max(1) as f64 / smallest).ln() / 4f64.ln()).round() as u32;
            HandedBack {
                moves: p[prefix_len.min(p.len())..].to_vec(),
                f: bound.saturating_sub(slack),
            }
        })
        .collect()
}

/// The blank's moves from `board` in the search's order, other than back along `last`.
pub(super) fn children(board: &Board, last: Option<Move>) -> Vec<Move> {
    Move::SEARCH_ORDER
        .into_iter()
        .filter(|&m| Some(m.opposite()) != last && board.after(m).is_some())
        .collect()
}
