//! Pattern-database jobs: their units go only to workers that hold the tables, start at the
//! right bound, and `auto` picks tables only while a worker with them is connected.

use super::*;

#[test]
fn pdb_units_never_go_to_a_worker_without_tables() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 2);
    let root = sim.submit_pdb(1, KORF_12, 50);
    // Worker 1 has no tables: the PDB job's units wait.
    assert!(sim.inbox[&WorkerId(1)].is_empty());
    assert!(sim.sched.queue_depth() >= 50);
    assert_eq!(sim.sched.busy_slots(), 0);
    // Other jobs go anywhere, meanwhile.
    let lc_root = sim.submit(2, KORF_55, korf_goal(), 20);
    assert!(!sim.inbox[&WorkerId(1)].is_empty());
    assert!(sim.inbox[&WorkerId(1)].iter().all(|a| a.job == JobId(2)));
    // A worker with tables joins: it takes the PDB units.
    sim.add_worker_with(2, 2, tables_for(&[four_by_four()]));
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 1, &root);
    check_optimal(&sim, 2, &lc_root);
    let pdb_assignments: Vec<WorkerId> = sim
        .assigned
        .iter()
        .filter(|(_, a)| a.job == JobId(1))
        .map(|(w, a)| {
            assert_eq!(a.heuristic, HeuristicKind::Pdb);
            *w
        })
        .collect();
    assert!(!pdb_assignments.is_empty());
    assert!(
        pdb_assignments.iter().all(|&w| w == WorkerId(2)),
        "{pdb_assignments:?}"
    );
    let (_, _, stats) = sim
        .finished
        .iter()
        .find(|(j, _, _)| *j == JobId(1))
        .unwrap();
    assert_eq!(
        stats.worker_nodes.keys().copied().collect::<Vec<_>>(),
        [WorkerId(2)]
    );
}

#[test]
fn a_pdb_job_starts_at_the_coordinators_lc_bound_and_its_answer_is_optimal() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker_with(1, 2, tables_for(&[four_by_four()]));
    let root = sim.submit_pdb(1, KORF_42, 40);
    // The coordinator's first bound is the least linear-conflict f over the units; the workers'
    // pattern databases put every unit above it.
    let lc = Solver::new(korf_goal(), HeuristicKind::LinearConflict).unwrap();
    let with_pdb = Solver::with_pdb(korf_goal(), pdb()).unwrap();
    let units = lc.frontier(&root, 40).unwrap().units;
    let least = |s: &Solver| {
        units
            .iter()
            .map(|u| s.unit_lower_bound(u).unwrap())
            .min()
            .unwrap()
    };
    let (lc_first, pdb_first) = (least(&lc), least(&with_pdb));
    assert!(lc_first < pdb_first, "lc {lc_first}, pdb {pdb_first}");
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &root);
    let (_, _, stats) = &sim.finished[0];
    // The first bound cost a round trip per unit and no search: every unit reported its PDB
    // value at once, and the job moved straight to the least of them.
    assert_eq!(stats.bounds[0], lc_first);
    assert_eq!(stats.bounds[1], pdb_first);
    assert!(
        stats.bounds.windows(2).all(|w| w[0] < w[1]),
        "{:?}",
        stats.bounds
    );
    assert_eq!(*stats.bounds.last().unwrap(), 42);
    let first_bound_nodes: u64 = sim
        .delivered
        .iter()
        .filter(|(_, r)| r.epoch == 0)
        .map(|(_, r)| r.expanded)
        .sum();
    assert_eq!(first_bound_nodes, 0);
    // And the tables earn their keep: far fewer nodes than linear conflict on the same board.
    let mut lc_sim = Sim::new(SchedulerConfig::default());
    lc_sim.add_worker(1, 2);
    lc_sim.submit(1, KORF_42, korf_goal(), 40);
    lc_sim.run(&[(1, 1)], false);
    assert!(
        stats.nodes * 2 < lc_sim.finished[0].2.nodes,
        "pdb {} vs lc {}",
        stats.nodes,
        lc_sim.finished[0].2.nodes
    );
}

#[test]
fn pdb_units_of_a_lost_worker_wait_for_another_with_tables() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 2);
    sim.add_worker_with(2, 2, tables_for(&[four_by_four()]));
    let root = sim.submit_pdb(1, KORF_12, 60);
    sim.step(2, false);
    sim.step(2, false);
    assert!(!sim.inbox[&WorkerId(2)].is_empty());
    sim.inbox.remove(&WorkerId(2));
    let cmds = sim.sched.remove_worker(WorkerId(2));
    sim.handle(cmds);
    // Requeued, but not to worker 1: nothing moves.
    assert!(sim.inbox[&WorkerId(1)].is_empty());
    assert!(sim.sched.queue_depth() > 0);
    sim.run(&[(1, 1)], false);
    assert!(sim.finished.is_empty());
    assert_eq!(
        sim.sched.choose_heuristic(None, &korf_goal()),
        Ok(HeuristicKind::LinearConflict)
    );
    sim.add_worker_with(3, 1, tables_for(&[four_by_four()]));
    sim.run(&[(1, 1), (3, 1)], false);
    check_optimal(&sim, 1, &root);
    assert!(sim.finished[0].2.requeued >= 2);
    assert!(sim.assigned.iter().all(|(w, _)| *w != WorkerId(1)));
}

#[test]
fn a_worker_that_reports_pdb_unsupported_gets_no_more_pdb_units() {
    let mut sim = Sim::new(SchedulerConfig::default());
    // Its hello claims tables it cannot use.
    sim.add_worker_with(1, 1, tables_for(&[four_by_four()]));
    let root = sim.submit_pdb(1, KORF_55, 20);
    let a = sim
        .inbox
        .get_mut(&WorkerId(1))
        .unwrap()
        .pop_front()
        .unwrap();
    let refused = UnitResult {
        job: a.job,
        epoch: a.epoch,
        task: a.task,
        report: Report::Unsupported("this worker has no pattern databases for 4x4 boards".into()),
        expanded: 0,
        iterations: Vec::new(),
    };
    let cmds = sim.sched.on_result(WorkerId(1), refused, sim.now);
    sim.handle(cmds);
    assert!(
        sim.inbox[&WorkerId(1)].is_empty(),
        "the unit went back to the same worker"
    );
    assert!(sim.sched.pdb_shapes().is_empty());
    sim.add_worker_with(2, 1, tables_for(&[four_by_four()]));
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 1, &root);
    assert!(sim.assigned[1..].iter().all(|(w, _)| *w == WorkerId(2)));
    assert_eq!(sim.finished[0].2.requeued, 1);
}

#[test]
fn auto_picks_pdb_only_while_a_worker_with_tables_is_connected() {
    use HeuristicKind::{Exact, LinearConflict, Manhattan, Pdb};
    let now = Instant::now();
    let mut sched = Scheduler::new(SchedulerConfig::default());
    let korf = korf_goal();
    let judge = Goal::blank_last(four_by_four());
    let eight = Goal::blank_last(Shape::new(3, 3).unwrap());
    let three_by_three = Shape::new(3, 3).unwrap();
    // The blank in the middle: no tables serve it.
    let middle =
        Goal::from_board(Board::parse("1 2 3 4 5 6 7 0 8 9 10 11 12 13 14 15", None).unwrap());

    assert_eq!(sched.choose_heuristic(None, &korf), Ok(LinearConflict));
    let refused = sched.choose_heuristic(Some(Pdb), &korf).unwrap_err();
    assert_eq!(
        refused,
        HeuristicUnavailable::NoPatternDatabases {
            shape: four_by_four()
        }
    );
    let message = refused.to_string();
    assert!(message.contains("for 4x4 boards"), "{message}");
    assert!(
        message.contains("npuzzle pdb build --size 4x4 --partition"),
        "{message}"
    );

    // A worker without tables changes nothing.
    sched.add_worker(WorkerId(1), 4, Capabilities::default(), now);
    assert_eq!(sched.choose_heuristic(None, &korf), Ok(LinearConflict));
    assert!(sched.choose_heuristic(Some(Pdb), &korf).is_err());

    sched.add_worker(
        WorkerId(2),
        1,
        tables_for(&[four_by_four(), three_by_three]),
        now,
    );
    assert_eq!(
        sched.pdb_shapes(),
        BTreeSet::from([three_by_three, four_by_four()])
    );
    assert_eq!(sched.choose_heuristic(None, &korf), Ok(Pdb));
    assert_eq!(sched.choose_heuristic(None, &judge), Ok(Pdb));
    assert_eq!(sched.choose_heuristic(Some(Pdb), &korf), Ok(Pdb));
    assert_eq!(
        sched.choose_heuristic(Some(Manhattan), &korf),
        Ok(Manhattan)
    );
    assert_eq!(sched.choose_heuristic(None, &middle), Ok(LinearConflict));
    // Up to 9 cells the exact tables beat any pattern database; asked for, PDB is served.
    assert_eq!(sched.choose_heuristic(None, &eight), Ok(Exact));
    assert_eq!(sched.choose_heuristic(Some(Pdb), &eight), Ok(Pdb));

    // The worker with tables leaves: back to linear conflict.
    sched.remove_worker(WorkerId(2));
    assert_eq!(sched.choose_heuristic(None, &korf), Ok(LinearConflict));
    assert!(sched.choose_heuristic(Some(Pdb), &korf).is_err());
}
