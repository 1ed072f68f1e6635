//! Checkpoints: a job interrupted and resumed from its checkpoint finds the same optimum
//! without searching again what was searched.

use super::*;

impl Sim {
    /// Job `id` on `board` resumed from `checkpoint` (its units and tasks come from it).
    fn submit_resumed(&mut self, id: impl Into<JobId>, board: &str, checkpoint: Checkpoint) {
        let id = id.into();
        let solver = lc_solver();
        let root = Board::parse(board, None).unwrap();
        self.solvers.insert(id, Arc::clone(&solver));
        let mut spec = JobSpec::whole(id, korf_goal(), HeuristicKind::LinearConflict, solver, root);
        spec.whole = false;
        spec.resume = Some(Box::new(checkpoint));
        let cmds = self.sched.submit(spec);
        self.handle(cmds);
    }

    /// Nodes in every result delivered so far.
    fn delivered_nodes(&self) -> u64 {
        self.delivered.iter().map(|(_, r)| r.expanded).sum()
    }
}

/// KF #12 searched by one slot until about `share` of an uninterrupted search's nodes are done,
/// then checkpointed (through JSON, as the store keeps it). Returns the uninterrupted nodes, the
/// interrupted simulation and its checkpoint.
pub(super) fn interrupted_at(share: f64, config: SchedulerConfig) -> (u64, Sim, Checkpoint) {
    let mut whole = Sim::new(config.clone());
    whole.add_worker(1, 1);
    whole.submit(1, KORF_12, korf_goal(), 50);
    whole.run(&[(1, 1)], false);
    let uninterrupted = whole.finished[0].2.nodes;
    let mut sim = Sim::new(config);
    sim.add_worker(1, 1);
    sim.submit(1, KORF_12, korf_goal(), 50);
    while (sim.delivered_nodes() as f64) < share * uninterrupted as f64 {
        assert!(sim.step(1, false), "the job ended before the checkpoint");
    }
    assert!(sim.finished.is_empty());
    let checkpoint = sim
        .sched
        .checkpoint(JobId(1))
        .expect("a checkpoint mid-bound");
    let json = serde_json::to_string(&checkpoint).unwrap();
    (uninterrupted, sim, serde_json::from_str(&json).unwrap())
}

#[test]
fn a_job_resumed_from_its_checkpoint_ends_optimal_and_searches_little_again() {
    let (uninterrupted, before, checkpoint) = interrupted_at(0.7, SchedulerConfig::default());
    assert!(checkpoint.bound > *checkpoint.bounds.first().unwrap());
    assert!(!checkpoint.pending.is_empty());
    let mut after = Sim::new(SchedulerConfig::default());
    after.add_worker(9, 2);
    after.submit_resumed(5, KORF_12, checkpoint.clone());
    // It starts at the checkpoint's bound, not at the first.
    assert_eq!(
        after.progress.first(),
        Some(&(JobId(5), checkpoint.bound, false))
    );
    after.run(&[(9, 2)], false);
    check_optimal(&after, 5, &Board::parse(KORF_12, None).unwrap());
    let stats = &after.finished[0].2;
    assert!(
        stats.nodes >= checkpoint.nodes,
        "{} < {}",
        stats.nodes,
        checkpoint.nodes
    );
    assert_eq!(
        stats.bounds[..checkpoint.bounds.len()],
        checkpoint.bounds[..]
    );
    let total = before.delivered_nodes() + after.delivered_nodes();
    assert!(
        total as f64 <= 1.25 * uninterrupted as f64,
        "{total} nodes searched in all against {uninterrupted} uninterrupted"
    );
}

#[test]
fn a_checkpoint_that_does_not_replay_is_refused_and_the_job_starts_over() {
    let (_, _, checkpoint) = interrupted_at(0.3, SchedulerConfig::default());
    let root = Board::parse(KORF_12, None).unwrap();
    let lc = lc_solver();
    let first_bound = lc.estimate(&root).unwrap();
    let mut off_board = checkpoint.clone();
    off_board.units[0].moves = "L".repeat(5);
    let mut no_such_unit = checkpoint.clone();
    no_such_unit.pending[0].unit = checkpoint.units.len();
    let mut outside = checkpoint.clone();
    let other = checkpoint
        .pending
        .iter()
        .position(|t| t.unit != checkpoint.pending[0].unit);
    if let Some(i) = other {
        outside.pending[i].moves = checkpoint.units[checkpoint.pending[0].unit].moves.clone() + "X";
    }
    let mut skipped = checkpoint.clone();
    skipped.next_bound = skipped.bound;
    for (i, bad) in [off_board, no_such_unit, outside, skipped]
        .into_iter()
        .enumerate()
    {
        let mut sim = Sim::new(SchedulerConfig::default());
        sim.add_worker(1, 2);
        sim.submit_resumed(1, KORF_12, bad);
        assert_eq!(
            sim.progress.first(),
            Some(&(JobId(1), first_bound, false)),
            "case {i}"
        );
        sim.run(&[(1, 2)], false);
        check_optimal(&sim, 1, &root);
    }
}

#[test]
fn claims_saved_in_a_checkpoint_are_audited_after_the_resume() {
    let config = SchedulerConfig {
        audit_fraction: 1.0,
        ..SchedulerConfig::default()
    };
    // Before the last bound (45 moves), whose end would audit the bound's claims.
    let (_, _, checkpoint) = interrupted_at(0.05, config.clone());
    assert!(checkpoint.bound < 45, "{}", checkpoint.bound);
    let saved = checkpoint.claims.len();
    assert!(saved > 0, "{checkpoint:?}");
    let mut sim = Sim::new(config);
    sim.add_worker(3, 1);
    sim.add_worker(4, 1);
    sim.submit_resumed(1, KORF_12, checkpoint);
    sim.run(&[(3, 1), (4, 1)], false);
    check_optimal(&sim, 1, &Board::parse(KORF_12, None).unwrap());
    let stats = &sim.finished[0].2;
    assert!(
        stats.audits >= saved,
        "{} audits, {saved} claims saved",
        stats.audits
    );
}

#[test]
fn before_a_checkpoint_long_running_tasks_give_back_their_rest() {
    // Few units, never cut ahead: tasks large enough to stop part-way and still hold more than
    // a stopped search takes on itself (`ABSORB_NODES`).
    let mut sim = Sim::new(SchedulerConfig {
        max_unit_share: 1.0,
        ..SchedulerConfig::default()
    });
    sim.add_worker(1, 1);
    let root = sim.submit(1, KORF_42, korf_goal(), 2);
    // Into the last bound, whose tasks are large enough to stop part-way.
    while !sim.progress.iter().any(|&(_, bound, _)| bound == 42) {
        assert!(sim.step(1, false));
    }
    let asks = |cmds: &[Command]| {
        cmds.iter()
            .filter(|c| matches!(c, Command::Yield { after_nodes: 0, .. }))
            .count()
    };
    // The running task has just started: nothing to ask yet.
    let cmds = sim
        .sched
        .ask_back_for_checkpoint(JobId(1), Duration::from_secs(1), sim.now);
    assert_eq!(asks(&cmds), 0, "{cmds:?}");
    sim.now += Duration::from_secs(2);
    let now = sim.now;
    let cmds = sim
        .sched
        .ask_back_for_checkpoint(JobId(1), Duration::from_secs(1), now);
    assert_eq!(asks(&cmds), 1, "{cmds:?}");
    // Asked once only.
    let again = sim
        .sched
        .ask_back_for_checkpoint(JobId(1), Duration::from_secs(1), now);
    assert_eq!(asks(&again), 0, "{again:?}");
    let before = sim.sched.checkpoint(JobId(1)).unwrap();
    sim.handle(cmds);
    assert!(sim.step(1, false));
    // Its rest came back as pieces, saved in the next checkpoint as tasks still to search.
    let (_, reported) = sim.delivered.last().unwrap();
    assert!(
        matches!(reported.report, Report::Split { .. }),
        "{reported:?}"
    );
    let after = sim.sched.checkpoint(JobId(1)).unwrap();
    assert!(after.pending.len() > before.pending.len());
    assert!(after.nodes > before.nodes);
    sim.run(&[(1, 1)], false);
    check_optimal(&sim, 1, &root);
}

#[test]
fn a_lone_worker_is_not_made_to_audit_the_probation_claims_it_restored() {
    // Audits on, so the one worker's reports are all kept for its probation.
    let config = SchedulerConfig {
        audit_fraction: 0.01,
        ..SchedulerConfig::default()
    };
    let (_, _, checkpoint) = interrupted_at(0.7, config.clone());
    assert!(!checkpoint.deferred.is_empty(), "{checkpoint:?}");
    let root = Board::parse(KORF_12, None).unwrap();
    let mut alone = Sim::new(config.clone());
    alone.add_worker(3, 1);
    alone.submit_resumed(1, KORF_12, checkpoint.clone());
    alone.run(&[(3, 1)], false);
    check_optimal(&alone, 1, &root);
    assert_eq!(alone.finished[0].2.audits, 0);
    // Where another worker could search them, they are audited before the answer.
    let mut two = Sim::new(config);
    two.add_worker(3, 1);
    two.add_worker(4, 1);
    two.submit_resumed(1, KORF_12, checkpoint);
    two.run(&[(3, 1), (4, 1)], false);
    check_optimal(&two, 1, &root);
    assert!(two.finished[0].2.audits > 0);
}
