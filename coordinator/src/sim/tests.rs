use super::trace::*;
use super::*;
use crate::scheduler::{Assignment, JobId, Report, TaskId};
use npuzzle_solver::{ABSORB_PIECE_NODES, HeuristicKind, Move, Solver, TraceEntry};
use npuzzle_solver::{Goal, Limits, SearchOutcome, Shape, WorkUnit};

/// A trace of Korf's #12 with linear conflict, recorded here.
fn korf12() -> Trace {
    let goal = Goal::blank_first(Shape::new(4, 4).unwrap());
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let board =
        npuzzle_solver::Board::parse("14 1 9 6 4 8 12 5 7 2 3 0 10 11 13 15", None).unwrap();
    let report = solver.solve(&board, &Limits::default()).unwrap();
    let SearchOutcome::Solved(path) = report.outcome else {
        panic!()
    };
    let bounds = report
        .stats
        .iterations
        .iter()
        .map(|i| solver.trace_bound(&board, i.bound, 6).unwrap())
        .collect();
    Trace {
        board,
        goal,
        heuristic: "lc".into(),
        rate: 1e7,
        path,
        bounds,
    }
}

/// The nodes a simulated task at `prefix` (from the root) takes under bound index `bi`.
fn task_nodes(job: &JobTrace, bi: usize, prefix: &[Move]) -> u64 {
    job.search_bound(bi, prefix, u64::MAX, true).0
}

/// Korf's #12 as a simulated job, the index of its bound before the last, and that bound's
/// largest traced subtree.
fn largest_subtree_before_the_last_bound() -> (JobTrace, usize, TraceEntry) {
    let job = JobTrace::new(korf12());
    let bi = job.trace.bounds.len() - 2;
    let entry = (job.trace.bounds[bi].entries.iter())
        .max_by_key(|e| e.nodes)
        .expect("entries")
        .clone();
    (job, bi, entry)
}

#[test]
fn a_subtree_below_the_trace_depth_is_shared_among_its_children_without_loss() {
    let (job, bi, entry) = largest_subtree_before_the_last_bound();
    assert_eq!(entry.prefix.len(), job.trace.bounds[bi].depth as usize);
    let board = job.trace.board.apply(&entry.prefix).expect("legal prefix");
    let kids = children(&board, entry.prefix.last().copied());
    assert!(kids.len() >= 2, "{kids:?}");
    let sum: u64 = (kids.iter())
        .map(|&m| {
            let mut p = entry.prefix.clone();
            p.push(m);
            task_nodes(&job, bi, &p)
        })
        .sum();
    // Each child's share is rounded up.
    assert!(
        sum >= entry.nodes && sum <= entry.nodes + kids.len() as u64,
        "{sum} against {}",
        entry.nodes
    );
}

#[test]
fn a_task_at_the_trace_depth_asked_back_hands_back_its_rest_as_a_real_search_does() {
    let (job, bi, entry) = largest_subtree_before_the_last_bound();
    let b = &job.trace.bounds[bi];
    assert!(entry.nodes > 100, "{}", entry.nodes);
    let stop_at = entry.nodes / 10;
    let (spent, report) = job.search_bound(bi, &entry.prefix, stop_at, true);
    let Report::Split { bound, pieces, .. } = report else {
        panic!("one traced subtree, stopped early, still ran whole: {report:?}");
    };
    assert_eq!(bound, b.bound);
    assert!(spent >= stop_at && spent < entry.nodes, "{spent}");
    // The pieces continue the task's prefix with legal moves, none twice, and hold the
    // rest of its nodes.
    let mut rest = 0u64;
    let mut seen = std::collections::HashSet::new();
    for piece in &pieces {
        assert!(!piece.moves.is_empty() && piece.f <= b.bound, "{piece:?}");
        let mut path = entry.prefix.clone();
        path.extend(&piece.moves);
        job.trace.board.apply(&path).expect("legal moves");
        assert!(seen.insert(path.clone()), "{path:?} twice");
        rest += task_nodes(&job, bi, &path);
    }
    // Searched: the part before the stop, the smallest pieces, and at most one piece's
    // share of a piece given up and handed back whole.
    let total = spent + rest;
    let slack = 4 * pieces.len() as u64 + 64 + ABSORB_PIECE_NODES;
    assert!(
        total + slack >= entry.nodes && total <= entry.nodes + slack,
        "{spent} searched + {rest} handed back against {} nodes",
        entry.nodes
    );
}

#[test]
fn a_task_above_the_last_traced_bound_searches_its_subtree_grown_not_nothing() {
    let job = JobTrace::new(korf12());
    let bounds = &job.trace.bounds;
    let last = bounds.len() - 1;
    let entry = (bounds[last].entries.iter())
        .filter(|e| !job.trace.path.starts_with(&e.prefix))
        .max_by_key(|e| e.nodes)
        .expect("entries")
        .clone();
    assert!(entry.nodes > 100, "{}", entry.nodes);
    let growth = bounds[last].total() as f64 / bounds[last - 1].total() as f64;
    assert!(growth > 1.0, "{growth}");
    let above = bounds[last].bound + 2;
    let assignment = Assignment {
        job: JobId(1),
        epoch: 1,
        task: TaskId(0),
        work: std::sync::Arc::new(WorkUnit {
            board: job.trace.board.apply(&entry.prefix).expect("legal prefix"),
            g: entry.prefix.len() as u32,
            last: entry.prefix.last().copied(),
            prefix: entry.prefix.clone(),
            trail: Vec::new(),
        }),
        goal: job.trace.goal,
        heuristic: HeuristicKind::LinearConflict,
        bound: above,
        node_budget: 0,
        weight: npuzzle_solver::Weight::OPTIMAL,
        iterate: false,
    };
    // Searched whole: the subtree's nodes at the last bound, grown by one step.
    let whole = job.search(&assignment, u64::MAX);
    assert_eq!(
        whole.report,
        Report::Exhausted {
            next_bound: above + 2
        }
    );
    let expected = entry.nodes as f64 * growth;
    assert!(
        (whole.cost as f64 - expected).abs() <= growth + 1.0,
        "{} nodes against {expected}",
        whole.cost
    );
    // Asked back part-way: it hands back pieces of its own bound, having searched about
    // what it was allowed.
    let stop_at = whole.cost / 4;
    let stopped = job.search(&assignment, stop_at);
    let Report::Split { bound, pieces, .. } = stopped.report else {
        panic!("stopped early, it still ran whole: {:?}", stopped.report);
    };
    assert_eq!(bound, above);
    assert!(!pieces.is_empty() && pieces.iter().all(|p| p.f <= above));
    assert!(
        stopped.cost >= stop_at && stopped.cost < whole.cost,
        "{} of {}",
        stopped.cost,
        whole.cost
    );
}

/// 8 slots, with a whole job cut after 2,000 nodes and units down to 1,000: Korf #12 is cut
/// over several bounds.
fn eight_slots_cut_early() -> SimConfig {
    SimConfig {
        slots: 8,
        scheduler: SchedulerConfig {
            hand_back_after: 2_000,
            min_split_nodes: 1_000,
            ..SchedulerConfig::default()
        },
        ..SimConfig::default()
    }
}

#[test]
fn one_slot_takes_the_serial_time_and_more_slots_less() {
    let trace = korf12();
    let serial = serial_nodes(&trace);
    let one = simulate(
        std::slice::from_ref(&trace),
        &SimConfig {
            slots: 1,
            ..SimConfig::default()
        },
    );
    assert_eq!(one.wrong, 0);
    assert_eq!(
        one.nodes, serial,
        "one slot searches the job whole: {one:?}"
    );
    // The search's own time, and a few messages (100 µs each) on top: the unit out, its
    // result back, the answer out.
    let latency = SimConfig::default().latency.as_secs_f64();
    assert!(one.makespan < one.serial_secs + 5.0 * latency, "{one:?}");
    let eight = simulate(std::slice::from_ref(&trace), &eight_slots_cut_early());
    assert_eq!(eight.wrong, 0);
    assert!(eight.yields > 0 && eight.speedup() > 1.5, "{eight:?}");
}

#[test]
fn a_saturated_coordinator_lengthens_the_makespan() {
    let trace = korf12();
    let run = |coordinator_cost| {
        simulate(
            std::slice::from_ref(&trace),
            &SimConfig {
                slots: 32,
                coordinator_cost,
                ..SimConfig::default()
            },
        )
    };
    let free = run(CoordinatorCost::Free);
    assert_eq!(free.coordinator_secs, 0.0);
    // Far slower than the search per event: the coordinator is the bottleneck.
    let slow = run(CoordinatorCost::Calibrated {
        per_event: Duration::from_millis(1),
        per_command: Duration::ZERO,
    });
    for r in [&free, &slow] {
        assert_eq!(r.wrong, 0, "{r:?}");
    }
    // Every event is charged (but the 32 joins, before the batch); one thread: its busy
    // time up to the answer fits in the makespan.
    let charged = (slow.events - 32) as f64 * 1e-3;
    assert!((slow.coordinator_secs - charged).abs() < 1e-9, "{slow:?}");
    assert!(slow.coordinator_secs_to_answer > 0.0, "{slow:?}");
    assert!(slow.makespan >= slow.coordinator_secs_to_answer, "{slow:?}");
    assert!(slow.coordinator_load() > 0.5, "{slow:?}");
    assert!(slow.mean_wait() > 0.0 && slow.max_wait_secs >= slow.mean_wait());
    assert!(
        slow.makespan > free.makespan + 0.5 * slow.coordinator_secs_to_answer,
        "{free:?} {slow:?}"
    );
}

#[test]
fn the_timeline_holds_the_slot_time_searched_before_the_answer() {
    let trace = korf12();
    let config = SimConfig {
        timeline_bins: 40,
        ..eight_slots_cut_early()
    };
    let r = simulate(std::slice::from_ref(&trace), &config);
    assert_eq!(r.wrong, 0);
    assert_eq!(r.timeline.len(), 40);
    assert!(
        r.timeline.iter().all(|&u| (0.0..=1.0 + 1e-9).contains(&u)),
        "{r:?}"
    );
    let width = r.makespan / 40.0;
    let in_bins: f64 = r.timeline.iter().sum::<f64>() * width * config.slots as f64;
    // Only what the cancels stopped after the answer is left out: at most a round trip on
    // every slot.
    let after = config.slots as f64 * 2.0 * config.latency.as_secs_f64();
    assert!(in_bins <= r.busy_secs + 1e-9, "{in_bins} {r:?}");
    assert!(in_bins >= r.busy_secs - after, "{in_bins} {r:?}");
    // The job starts whole on one slot (an eighth of the slots at most) and is cut later.
    assert!(r.timeline[0] <= 0.125 + 1e-9, "{:?}", r.timeline);
    assert!(r.timeline.iter().any(|&u| u > 0.7), "{:?}", r.timeline);
    // None asked for, none kept.
    let plain = simulate(std::slice::from_ref(&trace), &eight_slots_cut_early());
    assert!(plain.timeline.is_empty());
    assert_eq!(plain.makespan, r.makespan);
}

#[test]
fn the_bounds_account_for_every_slot_second_in_bound_order() {
    let trace = korf12();
    let r = simulate(std::slice::from_ref(&trace), &eight_slots_cut_early());
    assert_eq!(r.wrong, 0);
    let tasks: u64 = r.bounds.iter().map(|b| b.tasks).sum();
    let busy: f64 = r.bounds.iter().map(|b| b.busy_secs).sum();
    assert!((busy - r.busy_secs).abs() < 1e-9, "{r:?}");
    // Every task ends once; the ones sent ahead and taken back, or dropped by the cancel
    // after the answer, never started.
    assert_eq!(
        tasks,
        r.assignments - r.taken_back - r.cancelled_unstarted,
        "{r:?}"
    );
    let searched: Vec<u32> = trace.bounds.iter().map(|b| b.bound).collect();
    // Once cut, the job's tasks are searched under the trace's own bounds, and under
    // bounds past the answer's that units went on to before the answer came.
    let cut: Vec<u32> = r.bounds.iter().skip(1).map(|b| b.bound).collect();
    assert!(cut.len() >= 2, "the job was cut: {r:?}");
    assert!(cut.windows(2).all(|w| w[0] < w[1]), "{cut:?}");
    let answer = *searched.last().expect("a trace holds its answer's bound");
    assert!(
        cut.iter().all(|b| searched.contains(b) || *b > answer),
        "{cut:?} {searched:?}"
    );
    assert!(cut.contains(&answer), "the answer's bound: {cut:?}");
    for b in &r.bounds {
        assert!(
            b.first_start <= b.last_end && b.last_end <= r.makespan + 1e-9,
            "{b:?}"
        );
    }
}

#[test]
fn the_same_run_gives_the_same_figures() {
    let trace = korf12();
    let config = SimConfig {
        slots: 16,
        ..SimConfig::default()
    };
    let a = simulate(std::slice::from_ref(&trace), &config);
    let b = simulate(std::slice::from_ref(&trace), &config);
    assert_eq!(
        (a.makespan, a.nodes, a.assignments, a.yields),
        (b.makespan, b.nodes, b.assignments, b.yields)
    );
}
