//! Tasks sent ahead (`SchedulerConfig::prefetch`): a worker that says it queues them
//! (`Capabilities::prefetch`) holds one more task per slot once trusted, starts it when its slot
//! frees, and gives it back whole when a slot elsewhere idles; lost workers, cancels and answers
//! treat it as any task it holds.

use super::*;

fn prefetching() -> Capabilities {
    Capabilities {
        prefetch: true,
        ..Capabilities::default()
    }
}

/// Three moves from Korf's goal: a job that ends at once, to earn a worker its trust.
const EASY: &str = "1 2 3 0 4 5 6 7 8 9 10 11 12 13 14 15";

/// Runs an easy whole job as job `id` on the workers given, so that each has a good result.
fn earn_trust(sim: &mut Sim, id: u64, workers: &[u64]) {
    for &w in workers {
        let job = id + w;
        sim.submit_whole(job, EASY, lc_solver());
        sim.run(&[(w, 1)], false);
        assert_eq!(sim.solved_path(job).len(), 3);
    }
}

fn jobs_held(sim: &Sim, w: u64) -> Vec<JobId> {
    sim.inbox[&WorkerId(w)].iter().map(|a| a.job).collect()
}

#[test]
fn a_task_sent_ahead_is_there_when_the_slot_frees() {
    for prefetch in [true, false] {
        let mut sim = Sim::new(SchedulerConfig::default());
        let capabilities = Capabilities {
            prefetch,
            ..Capabilities::default()
        };
        sim.add_worker_with(1, 1, capabilities);
        let root = sim.submit(1, KORF_12, korf_goal(), 50);
        // A newcomer holds one task per slot until it has answered well.
        assert_eq!(sim.inbox[&WorkerId(1)].len(), 1);
        let mut ends = 0;
        let mut next_already_held = 0;
        loop {
            let held = sim.inbox[&WorkerId(1)].len();
            if held == 0 {
                break;
            }
            // What the worker holds as its running task ends: the task it starts next is
            // already there (no round trip) exactly when one was sent ahead.
            assert!(held <= 1 + usize::from(prefetch), "{held} held");
            assert!(sim.sched.busy_slots() <= 1);
            if held == 2 {
                next_already_held += 1;
                assert_eq!(sim.sched.queued_ahead(), 1);
            }
            ends += 1;
            assert!(sim.step(1, false));
        }
        check_optimal(&sim, 1, &root);
        if prefetch {
            // Every end but the first (a newcomer's) and those whose next task did not exist
            // yet (a bound's last, the next bound waits for its answer) found its next task
            // held: most of them.
            assert!(
                next_already_held * 10 >= ends * 9,
                "{next_already_held} of {ends}"
            );
        } else {
            assert_eq!(
                next_already_held, 0,
                "a worker that does not say so gets none ahead"
            );
        }
        assert_eq!((sim.sched.busy_slots(), sim.sched.queued_ahead()), (0, 0));
    }
}

#[test]
fn a_task_sent_ahead_is_taken_back_first_when_another_slot_idles() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker_with(1, 1, prefetching());
    earn_trust(&mut sim, 100, &[1]);
    let first = sim.submit_whole(2, KORF_12, lc_solver());
    let second = sim.submit_whole(3, KORF_55, lc_solver());
    // Worker 1 runs job 2 and holds job 3 ahead of its one slot.
    assert_eq!(jobs_held(&sim, 1), [JobId(2), JobId(3)]);
    assert_eq!(sim.sched.queued_ahead(), 1);
    // A second worker joins with nothing queued here: the task waiting ahead comes back whole
    // (nothing searched), and no running task is asked back.
    sim.add_worker_with(2, 1, prefetching());
    let taken: Vec<(WorkerId, JobId)> = sim.taken_back.iter().map(|(w, a)| (*w, a.job)).collect();
    assert_eq!(taken, [(WorkerId(1), JobId(3))]);
    assert!(sim.asked_back.is_empty(), "{:?}", sim.asked_back);
    assert_eq!(jobs_held(&sim, 1), [JobId(2)]);
    assert_eq!(jobs_held(&sim, 2), [JobId(3)]);
    assert_eq!(sim.sched.queued_ahead(), 0);
    // Still a whole search, from its first bound: what it costs is the serial search's.
    let to_2: Vec<&Assignment> = sim
        .assigned
        .iter()
        .filter(|(w, a)| *w == WorkerId(2) && a.job == JobId(3))
        .map(|(_, a)| a)
        .collect();
    assert!(to_2.len() == 1 && to_2[0].iterate);
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 2, &first);
    check_optimal(&sim, 3, &second);
    for (job, _, stats) in &sim.finished {
        assert_eq!(stats.discarded_nodes, 0, "job {job}");
    }
}

#[test]
fn a_task_sent_ahead_that_started_meanwhile_hands_back_its_rest() {
    let config = SchedulerConfig {
        hand_back_after: 2_000,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker_with(1, 1, prefetching());
    earn_trust(&mut sim, 100, &[1]);
    let first = sim.submit_whole(2, KORF_42, lc_solver());
    let second = sim.submit_whole(3, KORF_12, lc_solver());
    assert_eq!(jobs_held(&sim, 1), [JobId(2), JobId(3)]);
    // Job 2 ends on the worker, which starts job 3 at once; its result is still on the way
    // when a second worker joins, so the coordinator takes back what it thinks is waiting.
    let a = sim
        .inbox
        .get_mut(&WorkerId(1))
        .and_then(VecDeque::pop_front)
        .unwrap();
    let in_flight = sim.search(&a);
    sim.add_worker_with(2, 1, prefetching());
    // Running, it is asked for its rest as any running task.
    assert!(sim.taken_back.is_empty());
    assert_eq!(sim.asked_back.len(), 1);
    let cmds = sim.sched.on_result(WorkerId(1), in_flight, sim.now);
    sim.handle(cmds);
    sim.run(&[(1, 1), (2, 1)], false);
    check_optimal(&sim, 2, &first);
    check_optimal(&sim, 3, &second);
    let (_, _, stats) = sim
        .finished
        .iter()
        .find(|(j, _, _)| *j == JobId(3))
        .unwrap();
    assert!(
        stats.splits >= 1 && stats.worker_nodes.len() == 2,
        "{stats:?}"
    );
    assert_eq!(stats.discarded_nodes, 0);
}

#[test]
fn a_lost_workers_tasks_sent_ahead_are_requeued_and_the_answer_stays_optimal() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker_with(1, 1, prefetching());
    sim.add_worker_with(2, 1, prefetching());
    let root = sim.submit(1, KORF_12, korf_goal(), 100);
    sim.step(1, false);
    sim.step(2, false);
    // Both trusted: each runs one task and holds one ahead.
    assert_eq!(sim.inbox[&WorkerId(2)].len(), 2);
    assert_eq!(sim.sched.queued_ahead(), 2);
    let before = sim.sched.totals().units_requeued;
    sim.inbox.remove(&WorkerId(2));
    let cmds = sim.sched.remove_worker(WorkerId(2));
    sim.handle(cmds);
    // The running task and the one ahead both go back, to be searched by worker 1.
    assert_eq!(sim.sched.totals().units_requeued - before, 2);
    assert_eq!(sim.sched.queued_ahead(), 1);
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &root);
    assert_eq!((sim.sched.busy_slots(), sim.sched.queued_ahead()), (0, 0));
}

#[test]
fn a_cancel_clears_the_tasks_sent_ahead() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker_with(1, 2, prefetching());
    sim.submit(1, KORF_12, korf_goal(), 100);
    sim.step(1, false);
    assert_eq!(sim.inbox[&WorkerId(1)].len(), 4, "two running, two ahead");
    assert_eq!(sim.sched.queued_ahead(), 2);
    let cmds = sim.sched.cancel(JobId(1));
    sim.handle(cmds);
    assert_eq!(sim.cancels, [(WorkerId(1), JobId(1))]);
    // The worker answered for all four (cancelled): nothing held, nothing ahead.
    assert!(sim.inbox[&WorkerId(1)].is_empty());
    assert_eq!(sim.sched.busy_slots_of(WorkerId(1)), 0);
    assert_eq!((sim.sched.busy_slots(), sim.sched.queued_ahead()), (0, 0));
    // The next job gets both slots and both places ahead at once.
    let root = sim.submit(2, KORF_55, korf_goal(), 100);
    assert_eq!(jobs_held(&sim, 1), [JobId(2); 4]);
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 2, &root);
}

#[test]
fn not_started_when_not_asked_counts_as_a_failure() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker_with(1, 1, prefetching());
    sim.add_worker(2, 1);
    let root = sim.submit(1, KORF_12, korf_goal(), 50);
    // Worker 1 answers every task "not started" though nobody asked for it back.
    for _ in 0..SchedulerConfig::default().max_failures {
        answer_first_with(&mut sim, 1, Report::NotStarted, 0);
    }
    assert_eq!(sim.disconnected, [WorkerId(1)]);
    sim.run(&[(2, 1)], false);
    check_optimal(&sim, 1, &root);
}

#[test]
fn with_prefetch_off_no_task_goes_ahead() {
    let config = SchedulerConfig {
        prefetch: false,
        ..SchedulerConfig::default()
    };
    let mut sim = Sim::new(config);
    sim.add_worker_with(1, 2, prefetching());
    let root = sim.submit(1, KORF_12, korf_goal(), 100);
    sim.step(1, false);
    assert_eq!(sim.inbox[&WorkerId(1)].len(), 2, "one per slot");
    assert_eq!(sim.sched.queued_ahead(), 0);
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &root);
}
