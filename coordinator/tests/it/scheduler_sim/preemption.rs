//! A new search behind long ones gets a thread at once: while every slot is busy, a job with
//! tasks queued and none started makes the scheduler ask a task of the job holding the most
//! slots above its share back (`SchedulerConfig::preempt_slice`), and the slot its answer frees
//! goes to the newcomer, with what the long job searched kept. Both answers stay optimal.

use super::*;

/// Three moves from Korf's goal: a job that ends at once.
const EASY: &str = "1 2 3 0 4 5 6 7 8 9 10 11 12 13 14 15";

/// A worker of two slots (queueing tasks sent ahead or not) holding two tasks of a long job
/// (Korf #12, 45 moves, cut into units), trusted by its first good results.
fn long_job_on_both_slots(config: SchedulerConfig, prefetch: bool) -> (Sim, Board) {
    let mut sim = Sim::new(config);
    let capabilities = Capabilities {
        prefetch,
        ..Capabilities::default()
    };
    sim.add_worker_with(1, 2, capabilities);
    let root = sim.submit(1, KORF_12, korf_goal(), 50);
    // A few results earn the worker its slots (and, prefetching, its tasks sent ahead).
    for _ in 0..4 {
        assert!(sim.step(1, false));
    }
    assert_eq!(
        sim.sched.busy_slots(),
        2,
        "both slots busy with the long job"
    );
    (sim, root)
}

/// The nodes after which each task of job `job` asked back so far was to stop.
fn asks_for(sim: &Sim, job: u64) -> Vec<u64> {
    sim.asked_back
        .iter()
        .filter(|((j, _, _), _)| *j == JobId(job))
        .map(|(_, &after)| after)
        .collect()
}

/// Delivers the result of worker 1's running task of job `job` that was asked back.
fn answer_the_ask(sim: &mut Sim, job: u64) {
    let queue = &sim.inbox[&WorkerId(1)];
    let i = queue
        .iter()
        .position(|a| a.job == JobId(job) && sim.asked_back.contains_key(&(a.job, a.epoch, a.task)))
        .expect("the task asked back is still held");
    let a = sim.inbox.get_mut(&WorkerId(1)).unwrap().remove(i).unwrap();
    let result = sim.search(&a);
    assert!(
        matches!(
            result.report,
            Report::Split { .. } | Report::Found(_) | Report::Exhausted { .. }
        ),
        "{:?}",
        result.report
    );
    sim.delivered.push((WorkerId(1), result.clone()));
    sim.now += Duration::from_millis(1);
    let cmds = sim.sched.on_result(WorkerId(1), result, sim.now);
    sim.handle(cmds);
}

#[test]
fn a_new_search_behind_a_long_one_gets_a_thread_at_once() {
    for prefetch in [false, true] {
        let (mut sim, long_root) = long_job_on_both_slots(SchedulerConfig::default(), prefetch);
        let asks_before = asks_for(&sim, 1).len();
        let assigned_before = sim.assigned.len();
        let easy_root = sim.submit_whole(2, EASY, lc_solver());
        let asks = asks_for(&sim, 1);
        assert_eq!(
            asks.len(),
            asks_before + 1,
            "prefetch {prefetch}: one running task of the long job is asked back at once"
        );
        // It stops after a whole search's hand-back allowance at most, not its node budget.
        let allowance = SchedulerConfig::default().hand_back_after;
        assert!(asks.iter().all(|&after| after <= allowance), "{asks:?}");
        let easy_started_before_answer = sim.assigned[assigned_before..]
            .iter()
            .any(|(_, a)| a.job == JobId(2));
        answer_the_ask(&mut sim, 1);
        // The slot the answer freed went to the newcomer (or it was already queued there,
        // next in line when the slot freed).
        let queue: Vec<JobId> = sim.inbox[&WorkerId(1)].iter().map(|a| a.job).collect();
        let running = &queue[..queue.len().min(2)];
        assert!(
            running.contains(&JobId(2)),
            "prefetch {prefetch}: the newcomer runs once the ask is answered: {queue:?} (sent before: {easy_started_before_answer})"
        );
        sim.run(&[(1, 1)], false);
        check_optimal(&sim, 1, &long_root);
        assert_optimal(&easy_root, &korf_goal(), &sim.solved_path(2), 3);
    }
}

#[test]
fn without_a_preempt_slice_a_new_search_waits_for_a_thread_to_free() {
    let config = SchedulerConfig {
        preempt_slice: None,
        ..SchedulerConfig::default()
    };
    let (mut sim, long_root) = long_job_on_both_slots(config, false);
    let asks_before = asks_for(&sim, 1).len();
    sim.submit_whole(2, EASY, lc_solver());
    assert_eq!(asks_for(&sim, 1).len(), asks_before, "nothing asked back");
    sim.run(&[(1, 1)], false);
    assert_eq!(sim.solved_path(2).len(), 3);
    check_optimal(&sim, 1, &long_root);
}

#[test]
fn a_job_within_its_share_is_not_asked_back_for_a_newcomer() {
    // Two long jobs hold one slot each of two: a third job has no one above its share to take
    // a slot from, and waits for one to free.
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 2);
    sim.submit_whole(1, KORF_12, lc_solver());
    sim.submit_whole(2, KORF_42, lc_solver());
    assert_eq!(sim.sched.busy_slots(), 2);
    let before = (asks_for(&sim, 1).len(), asks_for(&sim, 2).len());
    sim.submit_whole(3, EASY, lc_solver());
    assert_eq!((asks_for(&sim, 1).len(), asks_for(&sim, 2).len()), before);
    sim.run(&[(1, 1)], false);
    assert_eq!(sim.solved_path(3).len(), 3);
}

/// Slots are shared between clients, then between a client's jobs: a client with four jobs
/// and one with one each get about half of the slots while both have work (shared per job,
/// the second would get a fifth). Every answer is optimal.
#[test]
fn clients_share_the_slots_whatever_their_number_of_jobs() {
    let mut sim = Sim::new(SchedulerConfig::default());
    sim.add_worker(1, 4);
    let (a, b) = (ClientId(1), ClientId(2));
    let boards = [KORF_12, KORF_42, KORF_55, KORF_12];
    let mut roots = Vec::new();
    for (i, board) in boards.iter().enumerate() {
        roots.push((
            i as u64 + 1,
            sim.submit_for(i as u64 + 1, board, korf_goal(), 50, a),
        ));
    }
    roots.push((5, sim.submit_for(5, KORF_42, korf_goal(), 50, b)));
    let client_of = |job: JobId| if job == JobId(5) { b } else { a };
    // While B's job runs: the share of the tasks held by each client, step by step.
    let (mut held_b, mut held_all) = (0usize, 0usize);
    while !sim.finished.iter().any(|(j, _, _)| *j == JobId(5)) {
        let held: Vec<ClientId> = sim.inbox[&WorkerId(1)]
            .iter()
            .map(|t| client_of(t.job))
            .collect();
        held_b += held.iter().filter(|&&c| c == b).count();
        held_all += held.len();
        assert!(sim.step(1, false), "work left while job 5 runs");
    }
    let share = held_b as f64 / held_all as f64;
    assert!(
        (0.4..=0.6).contains(&share),
        "client B held {share:.2} of the slots ({held_b} of {held_all} task-steps)"
    );
    sim.run(&[(1, 1)], false);
    for (job, root) in roots {
        check_optimal(&sim, job, &root);
    }
}
