//! The scheduler's core rules on a simulated cluster: the optimum found and proven, workers lost,
//! silent or slow, results duplicated or out of order, units split, jobs cancelled and shared.

use super::*;

#[test]
fn one_worker_finds_the_optimum_and_bounds_rise_by_two() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 1);
    let root = sim.submit(7, KORF_12, korf_goal(), 50);
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 7, &root);
    let (_, _, stats) = &sim.finished[0];
    assert!(
        stats.bounds.windows(2).all(|w| w[1] == w[0] + 2),
        "{:?}",
        stats.bounds
    );
    assert_eq!(*stats.bounds.last().unwrap() as usize, 45);
    assert!(stats.nodes > 0);
    assert_eq!(sim.sched.running_jobs(), 0);
}

#[test]
fn slow_and_fast_workers_give_the_same_optimum() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 2);
    sim.add_worker(2, 1);
    sim.add_worker(3, 4);
    let root = sim.submit(1, KORF_42, korf_goal(), 200);
    sim.run(&[(1, 1), (2, 0), (3, 5)], false);
    // Worker 2 never ran: whatever it held must still be outstanding, so finish it now.
    sim.run(&[(2, 1), (1, 1), (3, 1)], false);
    check_optimal(&sim, 1, &root);
}

#[test]
fn results_out_of_order_change_nothing() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 8);
    let root = sim.submit(1, KORF_55, korf_goal(), 100);
    sim.run(&[(1, 3)], true);
    check_optimal(&sim, 1, &root);
}

#[test]
fn a_lost_worker_has_its_units_requeued() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 2);
    sim.add_worker(2, 2);
    let root = sim.submit(1, KORF_12, korf_goal(), 100);
    // Let both work a little, then worker 2 vanishes with assignments in hand.
    sim.step(1, false);
    sim.step(2, false);
    assert!(!sim.inbox[&WorkerId(2)].is_empty());
    sim.inbox.remove(&WorkerId(2));
    let cmds = sim.sched.remove_worker(WorkerId(2));
    sim.handle(cmds);
    // The running totals (what the coordinator exports as metrics) count the requeues at once.
    assert!(sim.sched.totals().units_requeued >= 2);
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &root);
    let requeued = sim.finished[0].2.requeued;
    assert!(requeued >= 2);
    // …and keep them once the job is over, with every assignment made.
    let totals = sim.sched.totals();
    assert_eq!(totals.units_requeued, requeued as u64);
    assert_eq!(totals.units_assigned, sim.assigned.len() as u64);
}

#[test]
fn a_silent_worker_loses_its_lease() {
    let config = SchedulerConfig {
        lease_timeout: Duration::from_secs(5),
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker(1, 1);
    sim.add_worker(2, 1);
    let root = sim.submit(1, KORF_12, korf_goal(), 40);
    sim.step(1, false);
    sim.now += Duration::from_secs(3);
    sim.sched.heartbeat(WorkerId(1), sim.now);
    sim.now += Duration::from_secs(3);
    // Worker 1 spoke 3 s ago, worker 2 never: only worker 2 expires.
    let cmds = sim.sched.tick(sim.now);
    sim.handle(cmds);
    assert_eq!(sim.sched.workers(), 1);
    // Its connection is closed, so a worker that was only cut off rejoins instead of idling.
    assert_eq!(sim.disconnected, vec![WorkerId(2)]);
    assert!(!sim.inbox.contains_key(&WorkerId(2)));
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &root);
}

#[test]
fn duplicated_and_stale_results_are_dropped() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 4);
    let root = sim.submit(1, KORF_42, korf_goal(), 60);
    // Deliver every result twice, and re-deliver the first bound's results after the bound moved.
    for _ in 0..100_000 {
        if !sim.step(1, false) {
            break;
        }
        let (w, last) = sim.delivered.last().unwrap().clone();
        let cmds = sim.sched.on_result(w, last, sim.now);
        sim.handle(cmds);
        if sim.delivered.len() == 120 {
            let early: Vec<(WorkerId, UnitResult)> = sim.delivered[..40].to_vec();
            for (w, r) in early {
                let cmds = sim.sched.on_result(w, r, sim.now);
                sim.handle(cmds);
            }
        }
    }
    check_optimal(&sim, 1, &root);
    // Duplicates never pushed a bound forward early: bounds rose one step at a time.
    let (_, _, stats) = &sim.finished[0];
    assert!(
        stats.bounds.windows(2).all(|w| w[1] == w[0] + 2),
        "{:?}",
        stats.bounds
    );
}

#[test]
fn heavy_units_are_split_and_the_answer_stays_optimal() {
    let config = SchedulerConfig {
        node_budget: 3_000,
        split_parts: 8,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker(1, 2);
    sim.add_worker(2, 2);
    let root = sim.submit(1, KORF_12, korf_goal(), 4);
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 1, &root);
    let (_, _, stats) = &sim.finished[0];
    assert!(stats.splits > 0, "no unit was split");
    assert!(stats.units > 4);
    assert_eq!(sim.sched.totals().units_split, stats.splits as u64);
}

#[test]
fn the_answer_cancels_the_job_on_every_worker_holding_its_units() {
    let mut sim = Sim::new(SchedulerConfig::default());
    for w in 1..=3 {
        sim.add_worker(w, 3);
    }
    let root = sim.submit(1, KORF_12, korf_goal(), 300);
    sim.run(&[(1, 1), (2, 1), (3, 1)], false);
    check_optimal(&sim, 1, &root);
    // When the answer came, the other workers still held units of the last bound.
    let mut cancelled: Vec<WorkerId> = sim
        .cancels
        .iter()
        .filter(|(_, j)| *j == JobId(1))
        .map(|(w, _)| *w)
        .collect();
    cancelled.sort();
    cancelled.dedup();
    assert!(cancelled.len() >= 2, "{cancelled:?}");
    // Their queued units were reported cancelled: every slot is free again.
    assert_eq!(sim.sched.busy_slots(), 0);
}

#[test]
fn forged_paths_are_rejected_and_their_workers_dropped() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 1);
    let root = sim.submit(1, KORF_12, korf_goal(), 20);
    // Worker 1 reports a path that does not reach the goal.
    let a = sim
        .inbox
        .get_mut(&WorkerId(1))
        .unwrap()
        .pop_front()
        .unwrap();
    let forged = UnitResult {
        job: a.job,
        epoch: a.epoch,
        task: a.task,
        report: Report::Found(npuzzle_solver::parse_moves("UD").unwrap()),
        expanded: 1,
        iterations: Vec::new(),
    };
    let cmds = sim.sched.on_result(WorkerId(1), forged, sim.now);
    sim.handle(cmds);
    assert!(
        sim.finished.is_empty(),
        "a forged path must not finish the job"
    );
    assert_eq!(sim.disconnected, vec![WorkerId(1)]);
    assert_eq!(sim.sched.workers(), 0);

    // Worker 2 reports a path that does reach the goal, with a detour: longer than the bound.
    sim.add_worker(2, 1);
    let a = sim
        .inbox
        .get_mut(&WorkerId(2))
        .unwrap()
        .pop_front()
        .unwrap();
    let solver = Solver::new(korf_goal(), HeuristicKind::LinearConflict).unwrap();
    let unit_root = a.work.board;
    let npuzzle_solver::SearchOutcome::Solved(mut detour) = solver
        .solve(&unit_root, &Limits::default())
        .unwrap()
        .outcome
    else {
        panic!("Korf #12 is solvable");
    };
    detour.extend(npuzzle_solver::parse_moves("RL").unwrap());
    assert_reaches_goal(&unit_root, &korf_goal(), &detour);
    let forged = UnitResult {
        job: a.job,
        epoch: a.epoch,
        task: a.task,
        report: Report::Found(detour),
        expanded: 1,
        iterations: Vec::new(),
    };
    let cmds = sim.sched.on_result(WorkerId(2), forged, sim.now);
    sim.handle(cmds);
    assert!(
        sim.finished.is_empty(),
        "a path longer than the bound must not finish the job"
    );
    assert_eq!(sim.disconnected, vec![WorkerId(1), WorkerId(2)]);

    // An honest worker finishes the job, optimally.
    sim.add_worker(3, 1);
    sim.run(&[(3, 1)], false);
    check_optimal(&sim, 1, &root);
}

#[test]
fn two_jobs_share_the_workers() {
    let mut sim = Sim::new(SchedulerConfig::default());
    let r1 = sim.submit(1, KORF_12, korf_goal(), 50);
    let r2 = sim.submit(2, KORF_42, korf_goal(), 50);
    sim.add_worker(1, 4);
    // A new worker holds two tasks until its first good result: one of each job.
    let jobs: Vec<JobId> = sim.inbox[&WorkerId(1)].iter().map(|a| a.job).collect();
    assert_eq!(
        jobs.iter().filter(|&&j| j == JobId(1)).count(),
        1,
        "{jobs:?}"
    );
    assert_eq!(
        jobs.iter().filter(|&&j| j == JobId(2)).count(),
        1,
        "{jobs:?}"
    );
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &r1);
    check_optimal(&sim, 2, &r2);
}

#[test]
fn cancelling_a_job_reports_its_lower_bound() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 2);
    sim.submit(1, KORF_12, korf_goal(), 50);
    for _ in 0..60 {
        sim.step(1, false);
    }
    let cmds = sim.sched.cancel(JobId(1));
    assert!(cmds.iter().any(|c| matches!(
        c,
        Command::Cancel {
            worker: WorkerId(1),
            job: JobId(1)
        }
    )));
    sim.handle(cmds);
    let (_, outcome, _) = &sim.finished[0];
    let JobOutcome::Cancelled { lower_bound } = outcome else {
        panic!("{outcome:?}")
    };
    let started = sim
        .progress
        .iter()
        .filter(|p| !p.2)
        .map(|p| p.1)
        .max()
        .unwrap();
    assert_eq!(*lower_bound, started);
    assert!(*lower_bound < 45);
    assert_eq!(sim.sched.running_jobs(), 0);
}

#[test]
fn no_workers_means_nothing_is_assigned_until_one_joins() {
    let mut sim = Sim::new(SchedulerConfig::default());
    let root = sim.submit(1, KORF_12, korf_goal(), 30);
    assert!(sim.inbox.values().all(|q| q.is_empty()));
    assert!(sim.sched.queue_depth() >= 30);
    assert_eq!(sim.sched.busy_slots(), 0);
    sim.add_worker(9, 1);
    sim.run(&[(9, 1)], false);
    check_optimal(&sim, 1, &root);
}

#[test]
fn units_go_out_in_serial_depth_first_order() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.submit(1, KORF_12, korf_goal(), 50);
    sim.add_worker(1, 50);
    sim.run(&[(1, 1)], false);
    let rank = |m: &npuzzle_solver::Move| match m {
        npuzzle_solver::Move::Up => 0,
        npuzzle_solver::Move::Left => 1,
        npuzzle_solver::Move::Right => 2,
        npuzzle_solver::Move::Down => 3,
    };
    // The first bound's assignments, in the order they went out.
    let first = sim.assigned[0].1.epoch;
    let order: Vec<Vec<u8>> = sim
        .assigned
        .iter()
        .filter(|(_, a)| a.epoch == first)
        .map(|(_, a)| a.work.prefix.iter().map(rank).collect())
        .collect();
    assert!(order.len() >= 50);
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
}

#[test]
fn units_predicted_too_large_are_split_before_the_bound() {
    let config = SchedulerConfig {
        node_budget: 0, // no safety net: only ahead-of-time splits can happen
        min_split_nodes: 1_000,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker(1, 2);
    let root = sim.submit(1, KORF_42, korf_goal(), 4);
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &root);
    let (_, _, stats) = &sim.finished[0];
    assert!(stats.splits > 0, "{stats:?}");
    assert!(stats.units > 4);
}
