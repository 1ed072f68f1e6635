//! Whole searches and their budgets: a job on one slot is the serial search, idle slots ask it
//! back without losing what was searched, and reports that break the hand-back rules drop the
//! worker.

use super::*;

pub(super) fn lc_solver() -> Arc<Solver> {
    Arc::new(Solver::new(korf_goal(), HeuristicKind::LinearConflict).unwrap())
}

/// Nodes the serial search expands on `board` with `solver`.
pub(super) fn serial_nodes(solver: &Solver, board: &Board) -> u64 {
    solver
        .solve(board, &Limits::default())
        .unwrap()
        .stats
        .expanded
}

#[test]
fn a_whole_job_on_one_slot_is_the_serial_search() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 1);
    let root = sim.submit_whole(3, KORF_12, lc_solver());
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 3, &root);
    // One assignment, searched bound after bound: nothing cut, nothing asked back.
    assert_eq!(sim.assigned.len(), 1);
    assert!(sim.assigned[0].1.iterate);
    assert!(sim.asked_back.is_empty());
    let (_, _, stats) = &sim.finished[0];
    assert_eq!(stats.nodes, serial_nodes(&lc_solver(), &root));
    assert_eq!((stats.units, stats.splits, stats.yields), (1, 0, 0));
    assert!(
        stats.bounds.len() > 3,
        "the worker's bounds are reported: {:?}",
        stats.bounds
    );
}

#[test]
fn an_idle_slot_asks_the_whole_job_back_and_nothing_searched_is_lost() {
    let config = SchedulerConfig {
        hand_back_after: 2_000,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker(1, 1);
    sim.add_worker(2, 1);
    let root = sim.submit_whole(3, KORF_12, lc_solver());
    // Worker 2 is idle at once: the whole job is asked back.
    assert_eq!(sim.asked_back.len(), 1);
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 3, &root);
    let (_, _, stats) = &sim.finished[0];
    assert!(
        stats.yields >= 1 && stats.splits >= 1 && stats.units > 10,
        "{stats:?}"
    );
    assert_eq!(stats.discarded_nodes, 0);
    // Both workers searched; the bounds below the one where the job was cut were the worker's.
    assert_eq!(stats.worker_nodes.len(), 2);
    assert_eq!(stats.bounds.first(), Some(&35));
    // Search overhead: the units of later bounds drop duplicate states, and the last bound may
    // end before the serial search's point; the work stays within a few percent of serial.
    let serial = serial_nodes(&lc_solver(), &root);
    let ratio = stats.nodes as f64 / serial as f64;
    assert!(
        (0.8..1.1).contains(&ratio),
        "nodes {} vs serial {serial}",
        stats.nodes
    );
}

#[test]
fn a_whole_search_waits_less_for_idle_slots_the_more_of_the_cluster_idles() {
    let config = SchedulerConfig {
        hand_back_after: 40_000,
        cut_hand_back_after: 1_000,
        ..SchedulerConfig::default()
    };
    let asked_after = |workers: u64| {
        let mut sim = Sim::new(config.clone());
        for w in 1..=workers {
            sim.add_worker(w, 1);
        }
        sim.submit_whole(3, KORF_12, lc_solver());
        assert_eq!(sim.asked_back.len(), 1, "{workers} workers");
        *sim.asked_back.values().next().expect("one ask")
    };
    // One slot of two busy: half the wait; one of eight: an eighth; one of a hundred: no less
    // than a task of a job already cut waits.
    assert_eq!(asked_after(2), 20_000);
    assert_eq!(asked_after(8), 5_000);
    assert_eq!(asked_after(100), 1_000);
}

#[test]
fn a_unit_over_its_budget_hands_back_its_rest_and_keeps_its_nodes() {
    let config = SchedulerConfig {
        node_budget: 5_000,
        // Never cut ahead or ask back: only the budget stops units here.
        min_split_nodes: u64::MAX,
        hand_back_after: u64::MAX,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker(1, 1);
    let root = sim.submit_whole(3, KORF_12, lc_solver());
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 3, &root);
    let (_, _, stats) = &sim.finished[0];
    assert!(stats.splits > 5, "{stats:?}");
    assert_eq!(stats.discarded_nodes, 0);
    // One slot, tasks in depth-first order, nothing dropped: the serial search's nodes, plus one
    // per stop (the node a stopped search stopped at is expanded again), plus the part of any
    // piece a stopped search began after its stop and handed back whole.
    assert_eq!(
        stats.nodes,
        serial_nodes(&lc_solver(), &root) + stats.splits as u64 + sim.searched_again.get()
    );
}

#[test]
fn whole_pdb_jobs_start_at_the_workers_bound_and_stay_optimal() {
    let config = SchedulerConfig {
        hand_back_after: 500,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker_with(1, 2, tables_for(&[four_by_four()]));
    let workers = Arc::new(Solver::with_pdb(korf_goal(), pdb()).unwrap());
    for (id, board) in [(1, KORF_12), (2, KORF_42), (3, KORF_55)] {
        sim.submit_whole(id, board, Arc::clone(&workers));
    }
    sim.run(&[(1, 1)], false);
    for (id, board) in [(1, KORF_12), (2, KORF_42), (3, KORF_55)] {
        check_optimal(&sim, id, &Board::parse(board, None).unwrap());
    }
    for (job, _, stats) in &sim.finished {
        // No bound below the tables' value at the root was searched.
        let root = Board::parse([KORF_12, KORF_42, KORF_55][job.0 as usize - 1], None).unwrap();
        let pdb_root = workers.estimate(&root).unwrap();
        assert!(
            stats.bounds.iter().all(|&b| b >= pdb_root),
            "{:?} vs {pdb_root}",
            stats.bounds
        );
    }
}

#[test]
fn pieces_that_are_not_moves_from_the_unit_drop_the_worker() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 1);
    sim.add_worker(2, 1);
    sim.submit_whole(3, KORF_12, lc_solver());
    let (w, a) = sim.assigned[0].clone();
    sim.inbox.get_mut(&w).unwrap().clear();
    let forged = UnitResult {
        job: a.job,
        epoch: a.epoch,
        task: a.task,
        // 41 is above the root's bound; "UUUUU" walks off the board.
        report: Report::Split {
            bound: 41,
            next_bound: 43,
            pieces: vec![HandedBack {
                moves: npuzzle_solver::parse_moves("UUUUU").unwrap(),
                f: 41,
            }],
        },
        expanded: 10,
        iterations: vec![(35, 1), (37, 2), (39, 3), (41, 4)],
    };
    let cmds = sim.sched.on_result(w, forged, sim.now);
    sim.handle(cmds);
    assert_eq!(sim.disconnected, vec![w]);
    let other = if w == WorkerId(1) { 2 } else { 1 };
    sim.run(&[(other, 1)], false);
    check_optimal(&sim, 3, &Board::parse(KORF_12, None).unwrap());
}

/// Worker `w`'s first assignment, answered with `report` instead of searched.
pub(super) fn answer_first_with(
    sim: &mut Sim,
    w: impl Into<WorkerId>,
    report: Report,
    expanded: u64,
) {
    let w = w.into();
    let a = sim.inbox.get_mut(&w).unwrap().pop_front().unwrap();
    let r = UnitResult {
        job: a.job,
        epoch: a.epoch,
        task: a.task,
        report,
        expanded,
        iterations: Vec::new(),
    };
    let cmds = sim.sched.on_result(w, r, sim.now);
    sim.handle(cmds);
}

#[test]
fn next_bounds_that_do_not_rise_or_pass_the_deepest_search_drop_the_worker() {
    for lie in [0, 45, 35, 1_000_000, u32::MAX] {
        let mut sim = Sim::new(SchedulerConfig::default());
        sim.add_worker(1, 1);
        let root = sim.submit(3, KORF_12, korf_goal(), 20);
        // The first bound is 35 (linear conflict at the root). 0 and 35 do not rise above it and
        // 1,000,000 is past the deepest search: lies the scheduler sees. 45 rises: it may be a
        // lie, but only a second search could tell. So may u32::MAX (no f above the bound at
        // all): honest for a unit whose every path repeats a move sequence the search skips.
        let report = Report::Exhausted { next_bound: lie };
        // Counters saturate whatever a worker claims.
        answer_first_with(&mut sim, 1, report, u64::MAX);
        if lie == 45 || lie == u32::MAX {
            assert!(
                sim.disconnected.is_empty(),
                "a rising next bound is honest-looking"
            );
            continue;
        }
        assert_eq!(sim.disconnected, vec![WorkerId(1)], "next bound {lie}");
        sim.add_worker(2, 1);
        sim.run(&[(2, 1)], false);
        check_optimal(&sim, 3, &root);
    }
}

#[test]
fn a_job_never_holds_more_tasks_than_its_cap_and_stays_optimal() {
    let config = SchedulerConfig {
        node_budget: 2_000,
        max_tasks_per_job: 30,
        min_split_nodes: u64::MAX,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker(1, 2);
    let root = sim.submit_whole(3, KORF_12, lc_solver());
    sim.run(&[(1, 2)], false);
    check_optimal(&sim, 3, &root);
    let (_, _, stats) = &sim.finished[0];
    // Splits stopped at the cap: some tasks were searched again whole, without a budget.
    assert!(stats.discarded_nodes > 0, "{stats:?}");
    // A task id carries in its top two bits which of the job's task lists (the current
    // bound's, those ahead of it) holds it.
    let most = sim
        .assigned
        .iter()
        .map(|(_, a)| a.task.0 & ((1 << 30) - 1))
        .max()
        .unwrap();
    assert!(most < 30, "task id {most} past the cap");
    assert!(sim.assigned.iter().any(|(_, a)| a.node_budget == 0));
}

#[test]
fn a_worker_that_fails_every_unit_is_dropped_and_the_job_goes_on() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 4);
    let root = sim.submit(3, KORF_12, korf_goal(), 40);
    // Worker 1 fails whatever it gets, until it is dropped.
    let mut failed = 0;
    while !sim.disconnected.contains(&WorkerId(1)) {
        assert!(failed < 100, "never dropped");
        answer_first_with(&mut sim, 1, Report::Failed("disk broken".into()), 0);
        failed += 1;
    }
    assert_eq!(failed, SchedulerConfig::default().max_failures);
    sim.add_worker(2, 1);
    sim.run(&[(2, 1)], false);
    check_optimal(&sim, 3, &root);
}

#[test]
fn a_worker_that_heartbeats_but_holds_its_unit_is_found_out() {
    let config = SchedulerConfig::default();
    // Alone: the unit is asked back once it is older than any honest one, then the worker
    // that does not answer is dropped.
    let mut sim = Sim::new(config.clone());
    sim.add_worker(1, 1);
    let root = sim.submit_whole(3, KORF_12, lc_solver());
    sim.inbox.get_mut(&WorkerId(1)).unwrap().clear();
    for step in [config.max_task_age, config.ask_timeout] {
        sim.now += step + Duration::from_secs(1);
        sim.sched.heartbeat(WorkerId(1), sim.now);
        let cmds = sim.sched.tick(sim.now);
        sim.handle(cmds);
    }
    assert_eq!(sim.asked_back.len(), 1, "asked back for being old");
    assert_eq!(sim.disconnected, vec![WorkerId(1)]);
    sim.add_worker(2, 1);
    sim.run(&[(2, 1)], false);
    check_optimal(&sim, 3, &root);

    // Beside an idle worker: asked back at once, dropped after the ask timeout.
    let mut sim = Sim::new(config.clone());
    sim.add_worker(1, 1);
    let root = sim.submit_whole(3, KORF_12, lc_solver());
    sim.inbox.get_mut(&WorkerId(1)).unwrap().clear();
    sim.add_worker(2, 1);
    assert_eq!(sim.asked_back.len(), 1, "an idle slot asks at once");
    sim.now += config.ask_timeout + Duration::from_secs(1);
    sim.sched.heartbeat(WorkerId(1), sim.now);
    sim.sched.heartbeat(WorkerId(2), sim.now);
    let cmds = sim.sched.tick(sim.now);
    sim.handle(cmds);
    assert_eq!(sim.disconnected, vec![WorkerId(1)]);
    sim.run(&[(2, 1)], false);
    check_optimal(&sim, 3, &root);
}

#[test]
fn a_newcomer_holding_past_its_patience_while_slots_idle_is_asked_back_then_dropped() {
    let config = SchedulerConfig::default();
    let mut sim = Sim::new(config.clone());
    // Worker 1 idles: it has no tables, so no ask for idle slots goes to worker 2's task.
    sim.add_worker(1, 1);
    sim.add_worker_with(2, 1, tables_for(&[four_by_four()]));
    let root = sim.submit_pdb(1, KORF_12, 60);
    assert!(!sim.inbox[&WorkerId(2)].is_empty());
    // Worker 2, a newcomer, holds what it got and answers nothing.
    sim.inbox.get_mut(&WorkerId(2)).unwrap().clear();
    let tick = |sim: &mut Sim, step: Duration| {
        sim.now += step;
        for w in [1, 2] {
            sim.sched.heartbeat(WorkerId(w), sim.now);
        }
        let cmds = sim.sched.tick(sim.now);
        sim.handle(cmds);
    };
    tick(&mut sim, config.newcomer_patience / 2);
    assert!(sim.asked_back.is_empty(), "asked back within its patience");
    tick(&mut sim, config.newcomer_patience);
    assert_eq!(sim.asked_back.len(), 1, "asked back past its patience");
    assert!(sim.disconnected.is_empty());
    tick(&mut sim, config.ask_timeout + Duration::from_secs(1));
    assert_eq!(sim.disconnected, vec![WorkerId(2)]);
    sim.add_worker_with(3, 1, tables_for(&[four_by_four()]));
    sim.run(&[(3, 1)], false);
    check_optimal(&sim, 1, &root);
}
