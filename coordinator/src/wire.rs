//! Wire conversion for the services: a worker's unit result into the scheduler's
//! [`UnitResult`] (nothing in it trusted: unreadable paths and pieces become failures, counts
//! are capped), and a search's progress into `SolveStream`'s events. Boards, goals, moves and
//! heuristics convert in `npuzzle_proto`; the pipeline's answers are already `SolveResponse`s.

use npuzzle_proto::{moves_from_wire, moves_to_wire, split_next_bound_from_wire, v1};

use crate::scheduler::{HandedBack, JobId, Report, TaskId, UnitResult};
use crate::searches::{Flight, FlightState};

/// The most nodes one result may claim.
const MAX_REPORTED_NODES: u64 = 1 << 48;

/// A worker's result for one assignment, as the scheduler reads it.
pub(crate) fn result_from_wire(r: v1::UnitResult) -> UnitResult {
    let status = v1::UnitStatus::try_from(r.status).unwrap_or(v1::UnitStatus::Unspecified);
    let report = match status {
        v1::UnitStatus::Found => match moves_from_wire(&r.moves) {
            Ok(moves) => Report::Found(moves),
            Err(e) => Report::Failed(format!("unreadable path: {e}")),
        },
        v1::UnitStatus::Exhausted => Report::Exhausted {
            next_bound: r.next_bound,
        },
        v1::UnitStatus::Cancelled => Report::Cancelled,
        v1::UnitStatus::BudgetExceeded => Report::BudgetExceeded,
        v1::UnitStatus::Split => {
            let pieces: Result<Vec<HandedBack>, _> = r
                .pieces
                .iter()
                .map(|p| moves_from_wire(&p.moves).map(|moves| HandedBack { moves, f: p.f }))
                .collect();
            match pieces {
                Ok(pieces) => Report::Split {
                    bound: r.bound,
                    next_bound: split_next_bound_from_wire(r.next_bound),
                    pieces,
                },
                Err(e) => Report::Failed(format!("unreadable piece: {e}")),
            }
        }
        v1::UnitStatus::Unsupported => Report::Unsupported(r.error),
        v1::UnitStatus::NotStarted => Report::NotStarted,
        v1::UnitStatus::Failed | v1::UnitStatus::Unspecified => Report::Failed(r.error),
    };
    UnitResult {
        job: JobId(r.job),
        epoch: r.epoch,
        task: TaskId(r.unit),
        report,
        // No search runs long enough to expand more (2^48 is days at any rate); a larger count
        // would only overflow the totals it is added to.
        expanded: r.expanded.min(MAX_REPORTED_NODES),
        iterations: r
            .iterations
            .iter()
            .take(npuzzle_solver::MAX_DEPTH)
            .map(|i| (i.bound, i.expanded))
            .collect(),
    }
}

fn event(e: v1::solve_event::Event) -> v1::SolveEvent {
    v1::SolveEvent { event: Some(e) }
}

/// `SolveStream`'s first event: the request waits on `flight`, one of `running_jobs`.
pub(crate) fn queued_event(flight: &Flight, running_jobs: u32) -> v1::SolveEvent {
    event(v1::solve_event::Event::Queued(v1::Queued {
        job: flight.job.0,
        running_jobs,
    }))
}

/// A bound started or finished, as `SolveStream` reports it.
pub(crate) fn bound_event(s: &FlightState) -> v1::SolveEvent {
    event(v1::solve_event::Event::Bound(bound_progress(s)))
}

/// A flight's bound now, with its forecast.
pub(crate) fn bound_progress(s: &FlightState) -> v1::BoundProgress {
    let outlook = s.bounds_seen.outlook(std::time::Instant::now());
    let estimate = outlook.estimate;
    v1::BoundProgress {
        bound: s.bound,
        nodes: s.nodes,
        units_done: s.units_done as u32,
        units_total: s.units_total as u32,
        finished: s.bound_finished,
        nodes_in_bound: outlook.nodes_in_bound,
        predicted_nodes: estimate.map_or(0, |e| e.predicted_nodes),
        fraction: estimate.map_or(0.0, |e| e.fraction),
        eta_seconds: estimate.and_then(|e| e.eta_secs),
        next_bound_predicted_nodes: estimate.and_then(|e| e.next_bound_nodes).unwrap_or(0),
        extrapolated: outlook.extrapolated,
        lower_bound: s.lower_bound,
        incumbent_length: s.incumbent.as_ref().map_or(0, |p| p.len() as u32),
        incumbent_moves: s
            .incumbent
            .as_deref()
            .map(moves_to_wire)
            .unwrap_or_default(),
    }
}

/// `SolveStream`'s last event: the answer.
pub(crate) fn result_event(r: v1::SolveResponse) -> v1::SolveEvent {
    event(v1::solve_event::Event::Result(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: v1::UnitStatus) -> v1::UnitResult {
        v1::UnitResult {
            job: 7,
            epoch: 2,
            unit: 3,
            status: status as i32,
            ..Default::default()
        }
    }

    #[test]
    fn a_split_without_a_next_bound_has_none_and_keeps_its_pieces() {
        let r = v1::UnitResult {
            bound: 40,
            pieces: vec![v1::Piece {
                moves: "UL".into(),
                f: 42,
            }],
            ..result(v1::UnitStatus::Split)
        };
        let read = result_from_wire(r);
        assert_eq!((read.job, read.task, read.epoch), (JobId(7), TaskId(3), 2));
        let Report::Split {
            bound,
            next_bound,
            pieces,
        } = read.report
        else {
            panic!("{:?}", read.report);
        };
        assert_eq!((bound, next_bound, pieces.len()), (40, u32::MAX, 1));
        assert_eq!(pieces[0].f, 42);
    }

    #[test]
    fn unreadable_paths_and_pieces_are_failures() {
        let found = v1::UnitResult {
            moves: "UQ".into(),
            ..result(v1::UnitStatus::Found)
        };
        assert!(
            matches!(result_from_wire(found).report, Report::Failed(e) if e.starts_with("unreadable path"))
        );
        let split = v1::UnitResult {
            pieces: vec![v1::Piece {
                moves: "?".into(),
                f: 1,
            }],
            ..result(v1::UnitStatus::Split)
        };
        assert!(
            matches!(result_from_wire(split).report, Report::Failed(e) if e.starts_with("unreadable piece"))
        );
        let unknown = v1::UnitResult {
            status: 999,
            error: "boom".into(),
            ..result(v1::UnitStatus::Unspecified)
        };
        assert_eq!(
            result_from_wire(unknown).report,
            Report::Failed("boom".into())
        );
    }

    #[test]
    fn node_counts_and_iterations_are_capped() {
        let r = v1::UnitResult {
            expanded: u64::MAX,
            iterations: vec![v1::BoundNodes::default(); npuzzle_solver::MAX_DEPTH + 10],
            ..result(v1::UnitStatus::Exhausted)
        };
        let read = result_from_wire(r);
        assert_eq!(read.expanded, MAX_REPORTED_NODES);
        assert_eq!(read.iterations.len(), npuzzle_solver::MAX_DEPTH);
    }
}
