//! Bounds without a barrier (`SchedulerConfig::async_bounds`, AIDA*'s asynchronous iterations,
//! up to `SchedulerConfig::bounds_ahead` bounds ahead): a unit that has exhausted the job's
//! bound goes on to the next at once, on slots the bound's tail would leave idle; a path found
//! there is returned only once every unit has exhausted every bound below it; a next bound
//! other than the one guessed throws the early work away.

use super::*;

/// No worker is dropped or asked to hurry while a test holds its task on purpose.
fn patient(async_bounds: bool) -> SchedulerConfig {
    SchedulerConfig {
        async_bounds,
        ask_timeout: Duration::from_secs(24 * 3600),
        max_task_age: Duration::from_secs(24 * 3600),
        ..SchedulerConfig::default()
    }
}

/// The bound job `id` is searching now (its last progress).
fn current_bound(sim: &Sim, id: u64) -> u32 {
    sim.progress
        .iter()
        .rev()
        .find(|(j, _, _)| *j == JobId(id))
        .map(|&(_, bound, _)| bound)
        .unwrap()
}

/// Job 3 on two workers under `config`: worker 1 sits on its task of the first bound, worker 2
/// does everything else it gets. Returns the run, the root, the first bound and the bounds past
/// it of worker 2's tasks, in the order they went out.
fn hold_the_first_bound(config: SchedulerConfig) -> (Sim, Board, u32, Vec<u32>) {
    let mut sim = Sim::new(config);
    sim.add_worker(1, 1);
    sim.add_worker(2, 4);
    let root = sim.submit(3, KORF_12, korf_goal(), 30);
    let first = current_bound(&sim, 3);
    assert_eq!(sim.inbox[&WorkerId(1)][0].bound, first);
    sim.run(&[(2, 1)], false);
    assert!(sim.finished.is_empty(), "the first bound is not over");
    assert_eq!(current_bound(&sim, 3), first);
    let early = (sim.assigned.iter())
        .filter(|(w, _)| *w == WorkerId(2))
        .map(|(_, a)| a.bound)
        .filter(|&b| b > first)
        .collect();
    (sim, root, first, early)
}

#[test]
fn units_go_on_to_the_next_bound_while_the_bound_ends_elsewhere() {
    let (mut sim, root, first, early) = hold_the_first_bound(patient(true));
    assert!(
        !early.is_empty(),
        "no unit went on while one held the bound"
    );
    assert!(
        early.iter().all(|&b| b == first + 2),
        "only one bound ahead: {early:?}"
    );
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 3, &root);
}

#[test]
fn with_a_barrier_no_unit_searches_past_the_current_bound() {
    let mut sim = Sim::new(patient(false));
    sim.add_worker(1, 1);
    sim.add_worker(2, 4);
    let root = sim.submit(3, KORF_12, korf_goal(), 30);
    let first = current_bound(&sim, 3);
    sim.run(&[(2, 1)], false);
    assert!(
        sim.assigned.iter().all(|(_, a)| a.bound == first),
        "a task went out past the barrier"
    );
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 3, &root);
}

/// Workers 1 and 2 work, a task each at a time, until `bound` is job `id`'s current bound and
/// worker 1's next task is one of it (which the caller then has it hold).
fn until_worker_1_holds(sim: &mut Sim, id: u64, bound: u32) {
    let mut turns = 0;
    while !(current_bound(sim, id) == bound
        && sim.inbox[&WorkerId(1)]
            .front()
            .is_some_and(|a| a.bound == bound))
    {
        turns += 1;
        assert!(turns < 100_000, "never got there");
        sim.step(1, false);
        sim.step(2, false);
        assert!(sim.finished.is_empty());
    }
}

#[test]
fn a_path_found_early_waits_until_the_bound_below_is_exhausted() {
    let mut sim = Sim::new(patient(true));
    sim.add_worker(1, 1);
    sim.add_worker(2, 4);
    let root = sim.submit(3, KORF_12, korf_goal(), 30);
    let optimum = optimal(&root) as u32;
    until_worker_1_holds(&mut sim, 3, optimum - 2);
    // Worker 2 goes on alone: units it finishes go on to the optimum's bound, where one of them
    // finds the path. It is not returned while worker 1's task may still hold a shorter one.
    sim.run(&[(2, 1)], false);
    let found_early = sim
        .delivered
        .iter()
        .any(|(w, r)| *w == WorkerId(2) && matches!(r.report, Report::Found(_)));
    assert!(found_early, "the path was not found ahead of the bound");
    assert!(
        sim.finished.is_empty(),
        "returned before the bound below was over"
    );
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 3, &root);
}

#[test]
fn a_next_bound_other_than_the_one_guessed_drops_the_early_tasks() {
    let mut sim = Sim::new(patient(true));
    sim.add_worker(1, 2);
    let root = sim.submit(3, KORF_12, korf_goal(), 12);
    let first = current_bound(&sim, 3);
    // Every task of the first bound says the next is 4 above it (a rise an honest worker could
    // report): the units that went on early searched first + 2, which is not the next bound.
    while current_bound(&sim, 3) == first {
        let a = sim.inbox[&WorkerId(1)].front().unwrap().clone();
        if a.bound == first {
            answer_first_with(
                &mut sim,
                1,
                Report::Exhausted {
                    next_bound: first + 4,
                },
                10,
            );
        } else {
            assert_eq!(a.bound, first + 2);
            // Held until the bound is over: its answer then belongs to a dropped epoch.
            let held = sim
                .inbox
                .get_mut(&WorkerId(1))
                .unwrap()
                .pop_front()
                .unwrap();
            sim.inbox.get_mut(&WorkerId(1)).unwrap().push_back(held);
        }
    }
    let early_seen = sim.assigned.iter().any(|(_, a)| a.bound == first + 2);
    assert!(early_seen, "no unit went on early");
    assert_eq!(current_bound(&sim, 3), first + 4);
    let stale_epoch = sim
        .assigned
        .iter()
        .find(|(_, a)| a.bound == first + 2)
        .map(|(_, a)| a.epoch)
        .unwrap();
    // The answers of the early tasks come in now and change nothing; the job goes on from
    // first + 4 and still finds the optimum.
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 3, &root);
    let (_, _, stats) = &sim.finished[0];
    assert!(
        !stats.bounds.contains(&(first + 2)),
        "bound {} was skipped, not searched: {:?}",
        first + 2,
        stats.bounds
    );
    assert!(
        sim.assigned
            .iter()
            .filter(|(_, a)| a.epoch == stale_epoch)
            .all(|(_, a)| a.bound == first + 2),
        "the early epoch was reused"
    );
}

/// Worker `w` answers its oldest task: a lie ("nothing here, next bound 2 above") if the task
/// was searched early (above its job's current bound), the truth otherwise. False if it had
/// none.
fn early_liar_step(sim: &mut Sim, w: u64) -> bool {
    let Some(a) = sim.inbox.get(&WorkerId(w)).and_then(|q| q.front()).cloned() else {
        return false;
    };
    if a.bound <= current_bound(sim, a.job.0) {
        return sim.step(w, false);
    }
    answer_first_with(
        sim,
        w,
        Report::Exhausted {
            next_bound: a.bound + 2,
        },
        1,
    );
    true
}

#[test]
fn a_lie_told_a_bound_early_is_audited_like_any_other() {
    // One bound ahead, and three (a lie then waits longer before its bound is the current one).
    for ahead in [1, 3] {
        let run = |audit_fraction: f64| {
            let mut sim = Sim::new(SchedulerConfig {
                audit_fraction,
                probation: 0,
                ..patient_ahead(ahead)
            });
            sim.add_worker(1, 4);
            sim.add_worker(2, 1);
            let root = sim.submit(1, KORF_12, korf_goal(), 40);
            run_with_liar_stepping(&mut sim, |sim| early_liar_step(sim, 1));
            (sim, root)
        };
        // Unaudited, lies told early do harm: this run proves something.
        let (trusting, root) = run(0.0);
        assert!(
            lies_did_harm(&trusting, &root),
            "{ahead} ahead: no lie told early mattered: this proves nothing"
        );
        // Audited, the early layers' reports are claims of their bounds like any others.
        let (audited, root) = run(1.0);
        check_optimal(&audited, 1, &root);
        assert_eq!(
            audited.disconnected,
            vec![WorkerId(1)],
            "{ahead} ahead: the liar, and only it"
        );
        let (_, _, stats) = &audited.finished[0];
        assert!(stats.audits_failed >= 1, "{ahead} ahead: {stats:?}");
    }
}

/// `patient`, with units going on up to `ahead` bounds past the current one.
fn patient_ahead(ahead: usize) -> SchedulerConfig {
    SchedulerConfig {
        bounds_ahead: ahead,
        ..patient(true)
    }
}

#[test]
fn units_go_on_several_bounds_ahead_but_no_further_than_the_window() {
    let (mut sim, root, first, early) = hold_the_first_bound(patient_ahead(3));
    let ahead: BTreeSet<u32> = early.into_iter().collect();
    assert!(
        ahead.contains(&(first + 4)),
        "no unit went on past the next bound: {ahead:?}"
    );
    assert!(
        ahead.iter().all(|&b| b <= first + 6),
        "past three bounds ahead: {ahead:?}"
    );
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 3, &root);
}

#[test]
fn a_path_found_two_bounds_ahead_waits_for_both_bounds_below() {
    let mut sim = Sim::new(patient_ahead(2));
    sim.add_worker(1, 1);
    sim.add_worker(2, 4);
    let root = sim.submit(3, KORF_12, korf_goal(), 30);
    let optimum = optimal(&root) as u32;
    until_worker_1_holds(&mut sim, 3, optimum - 4);
    // Worker 2 goes on alone, two bounds ahead: the path turns up at the optimum's bound and
    // waits while worker 1's task of the bound two below is open.
    sim.run(&[(2, 1)], false);
    let found_ahead = (sim.delivered.iter())
        .any(|(w, r)| *w == WorkerId(2) && matches!(r.report, Report::Found(_)));
    assert!(found_ahead, "the path was not found two bounds ahead");
    assert!(
        sim.finished.is_empty(),
        "returned before the bounds below were over"
    );
    assert_eq!(current_bound(&sim, 3), optimum - 4);
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 3, &root);
}
