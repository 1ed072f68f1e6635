//! The search threads. Each takes the next task from a shared queue, searches it with the
//! solver for its goal and heuristic (kept per thread), and sends the result back. Pattern
//! databases are loaded once per process and shared by every thread.
//!
//! The queue holds the tasks the coordinator sent ahead of the threads (prefetch): the first
//! thread to free takes the oldest. Until then the session may take one back ([`Start`]): asked
//! for it, or its job cancelled, it answers for it at once and no thread searches it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use npuzzle_proto::{
    board_from_wire, goal_from_wire, heuristic_from_wire, last_move_from_wire, moves_from_wire,
    moves_to_wire, split_next_bound_to_wire, v1,
};
use npuzzle_solver::{
    Goal, HeuristicKind, Limits, Solver, TRAIL_MOVES, UnitOutcome, Weight, WorkUnit,
};
use tokio::sync::mpsc::UnboundedSender;

use crate::tables::ServedTables;

/// One assignment to search.
pub struct Task {
    pub assignment: v1::Assignment,
    /// The job's cancel flag, shared by all its units on this worker.
    pub cancel: Arc<AtomicBool>,
    /// Lowered from `u64::MAX` when the coordinator asks for this unit back (`YieldUnit`): the
    /// search stops at that node count and hands back what it has not searched.
    pub hand_back: Arc<AtomicU64>,
    /// Where the result goes, tagged with the job.
    pub done: UnboundedSender<(u64, v1::UnitResult)>,
    /// Who answers for it: the thread that starts it, or the session that takes it back first.
    pub start: Start,
}

/// Settles, once, who answers for a queued task: the first search thread to start it, or the
/// session taking it back before that (asked for it, or its job cancelled). Exactly one of them
/// wins, so every assignment gets exactly one result.
#[derive(Clone, Debug, Default)]
pub struct Start(Arc<AtomicU8>);

const WAITING: u8 = 0;
const STARTED: u8 = 1;
const TAKEN_BACK: u8 = 2;

impl Start {
    /// A thread is about to search the task: false if it was taken back (not to be searched).
    pub fn start(&self) -> bool {
        self.0
            .compare_exchange(WAITING, STARTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The session takes the task back: false if a thread has started it already.
    pub fn take_back(&self) -> bool {
        self.0
            .compare_exchange(WAITING, TAKEN_BACK, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Whether a thread is searching it (or has).
    pub fn started(&self) -> bool {
        self.0.load(Ordering::Acquire) == STARTED
    }
}

/// A fixed set of search threads.
pub struct Pool {
    queue: mpsc::Sender<Task>,
}

impl Pool {
    /// Starts `threads` search threads; units with `HEURISTIC_PDB` use `tables`.
    pub fn start(threads: usize, tables: ServedTables) -> Pool {
        let (tx, rx) = mpsc::channel::<Task>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            // Cheap: the tables themselves are behind `Arc`s.
            let tables = tables.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("search-{i}"))
                .spawn(move || {
                    crate::priority::lower_priority();
                    let mut solvers = HashMap::new();
                    loop {
                        let task = {
                            let Ok(rx) = rx.lock() else { return };
                            match rx.recv() {
                                Ok(t) => t,
                                Err(_) => return,
                            }
                        };
                        if !task.start.start() {
                            // Taken back while it waited: the session answered for it.
                            continue;
                        }
                        let job = task.assignment.job;
                        let result =
                            guarded(&task.assignment, || search(&mut solvers, &tables, &task));
                        if result.status == v1::UnitStatus::Failed as i32
                            && result.error == PANICKED
                        {
                            // Whatever it was building may be half done.
                            solvers.clear();
                        }
                        let _ = task.done.send((job, result));
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start a search thread");
            }
        }
        Pool { queue: tx }
    }

    pub fn submit(&self, task: Task) {
        let _ = self.queue.send(task);
    }
}

/// What a unit whose search panicked reports.
const PANICKED: &str = "the search thread panicked (a bug in this worker); see its log";

/// Runs `search` for assignment `a`, turning a panic into a `FAILED` result, so that the
/// coordinator hears of it (and the thread lives on) instead of waiting for the unit forever.
pub fn guarded(a: &v1::Assignment, search: impl FnOnce() -> v1::UnitResult) -> v1::UnitResult {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(search)) {
        Ok(result) => result,
        Err(_) => {
            tracing::error!(job = a.job, unit = a.unit, "a search thread panicked");
            v1::UnitResult {
                job: a.job,
                epoch: a.epoch,
                unit: a.unit,
                status: v1::UnitStatus::Failed as i32,
                error: PANICKED.to_string(),
                ..Default::default()
            }
        }
    }
}

/// A solver for `goal` and `kind`: pattern databases come from `tables`. `Err` carries the
/// status to report: `Unsupported` when this worker has no tables for the shape.
fn make_solver(
    goal: Goal,
    kind: HeuristicKind,
    tables: &ServedTables,
) -> Result<Solver, (v1::UnitStatus, String)> {
    let failed = |e: npuzzle_solver::UnsupportedHeuristic| (v1::UnitStatus::Failed, e.to_string());
    match kind {
        HeuristicKind::Pdb => match tables.get(goal.shape()) {
            Some(pdb) => Solver::with_pdb(goal, pdb.clone()).map_err(failed),
            None => Err((
                v1::UnitStatus::Unsupported,
                format!(
                    "this worker has no pattern databases for {} boards",
                    goal.shape()
                ),
            )),
        },
        _ => Solver::new(goal, kind).map_err(failed),
    }
}

fn search(
    solvers: &mut HashMap<(Goal, HeuristicKind, Weight), Solver>,
    tables: &ServedTables,
    task: &Task,
) -> v1::UnitResult {
    let a = &task.assignment;
    let mut result = v1::UnitResult {
        job: a.job,
        epoch: a.epoch,
        unit: a.unit,
        ..Default::default()
    };
    if task.cancel.load(Ordering::Relaxed) {
        result.status = v1::UnitStatus::Cancelled as i32;
        return result;
    }
    let parsed = (|| {
        let board = board_from_wire(a.board.as_ref())?;
        let goal = goal_from_wire(a.goal.as_ref(), board.shape())?;
        let kind = heuristic_from_wire(a.heuristic)?
            .unwrap_or_else(|| HeuristicKind::best_for(board.shape()));
        let last = last_move_from_wire(&a.last_move)?;
        // Only the last few moves matter; a longer text is not worth parsing.
        let recent = &a.recent_moves;
        let start = recent
            .char_indices()
            .rev()
            .nth(TRAIL_MOVES - 1)
            .map_or(0, |(i, _)| i);
        let trail = moves_from_wire(&recent[start..])?;
        Ok::<_, npuzzle_proto::WireError>((board, goal, kind, last, trail))
    })();
    let weight = match Weight::from_hundredths(a.weight_hundredths) {
        Ok(w) => w,
        Err(e) => {
            result.status = v1::UnitStatus::Failed as i32;
            result.error = format!("weight_hundredths: {e}");
            return result;
        }
    };
    let (board, goal, kind, last, trail) = match parsed {
        Ok(p) => p,
        Err(e) => {
            result.status = v1::UnitStatus::Failed as i32;
            result.error = e.to_string();
            return result;
        }
    };
    // Custom goals are unbounded in number: keep this thread's tables bounded.
    if solvers.len() >= 16 && !solvers.contains_key(&(goal, kind, weight)) {
        solvers.clear();
    }
    let solver = match solvers.entry((goal, kind, weight)) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => match make_solver(goal, kind, tables) {
            Ok(s) => e.insert(s.with_weight(weight)),
            Err((status, error)) => {
                result.status = status as i32;
                result.error = error;
                return result;
            }
        },
    };
    // The moves before the board are the unit's trail: its prefix (and so every path and piece
    // it returns) starts at the board.
    let unit = WorkUnit {
        board,
        g: a.g,
        last,
        prefix: Vec::new(),
        trail,
    };
    let limits = Limits {
        cancel: Some(&task.cancel),
        hand_back: Some(&task.hand_back),
        node_budget: (a.node_budget > 0).then_some(a.node_budget),
        max_bound: None,
    };
    let searched = if a.iterate {
        solver.search_from(&unit, a.bound, &limits)
    } else {
        solver.search_unit(&unit, a.bound, &limits)
    };
    match searched {
        Ok(report) => {
            result.expanded = report.expanded;
            result.generated = report.generated;
            if a.iterate {
                result.iterations = report
                    .iterations
                    .iter()
                    .map(|i| v1::BoundNodes {
                        bound: i.bound,
                        expanded: i.expanded,
                    })
                    .collect();
            }
            match report.outcome {
                UnitOutcome::Found(path) => {
                    result.status = v1::UnitStatus::Found as i32;
                    result.moves = moves_to_wire(&path);
                }
                UnitOutcome::Exhausted { next_bound } => {
                    result.status = v1::UnitStatus::Exhausted as i32;
                    result.next_bound = next_bound;
                }
                UnitOutcome::Cancelled => result.status = v1::UnitStatus::Cancelled as i32,
                UnitOutcome::Split(split) => {
                    result.status = v1::UnitStatus::Split as i32;
                    result.bound = split.bound;
                    result.next_bound = split_next_bound_to_wire(split.next_bound);
                    // The unit's prefix is empty here: each piece's prefix is its moves from
                    // the assignment's board.
                    result.pieces = split
                        .pieces
                        .iter()
                        .map(|p| v1::Piece {
                            moves: moves_to_wire(&p.unit.prefix),
                            f: p.f,
                        })
                        .collect();
                }
            }
        }
        Err(e) => {
            result.status = v1::UnitStatus::Failed as i32;
            result.error = e.to_string();
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queued_task_is_either_started_or_taken_back_never_both() {
        let waiting = Start::default();
        assert!(!waiting.started());
        assert!(waiting.take_back(), "not started: taken back");
        assert!(!waiting.start(), "taken back: no thread searches it");
        assert!(!waiting.started());
        let running = Start::default();
        assert!(running.start());
        assert!(running.started());
        assert!(
            !running.take_back(),
            "started: it is asked back as a running search"
        );
        assert!(!running.start(), "started once");
    }

    #[test]
    fn a_panicking_search_reports_failed_for_its_unit() {
        let a = v1::Assignment {
            job: 7,
            epoch: 2,
            unit: 5,
            ..Default::default()
        };
        let result = guarded(&a, || panic!("boom"));
        assert_eq!(
            (result.job, result.epoch, result.unit),
            (7, 2, 5),
            "the result names the unit"
        );
        assert_eq!(result.status, v1::UnitStatus::Failed as i32);
        assert!(result.error.contains("panicked"));
        let fine = guarded(&a, || v1::UnitResult {
            status: v1::UnitStatus::Exhausted as i32,
            ..Default::default()
        });
        assert_eq!(fine.status, v1::UnitStatus::Exhausted as i32);
    }
}
