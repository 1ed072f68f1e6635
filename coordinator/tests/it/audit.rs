//! A worker that lies about what it searched: it answers a whole search at once with a path
//! that reaches the goal, two moves longer than optimal, and bounds that "rose" to it. Every
//! check on its own word passes, so without audits that answer is returned and cached; with
//! `audit_fraction` 1, an honest worker (one with a good result: newcomers audit nobody)
//! searches for anything shorter first, finds it, and the liar is dropped and the search
//! started over: only the optimum is answered and cached. At a 1 % sample the same holds for a
//! worker on probation (its answers are all audited until one has passed).

use std::time::Duration;

use crate::common::{
    GoalSpec, TestCluster, assert_reaches_goal, eager_config, join_by_hand, korf, request,
};
use npuzzle_proto::{board_from_wire, goal_from_wire, moves_to_wire, v1};
use npuzzle_solver::{HeuristicKind, Limits, SearchOutcome, Solver};

/// Joins as "liar" and answers each whole search it gets with the optimum plus `RL`; returns
/// its stream's end status.
async fn lie(cluster: &TestCluster) -> tokio::task::JoinHandle<Option<tonic::Status>> {
    let (tx, mut inbound) = join_by_hand(cluster, "liar", 4).await;
    tokio::spawn(async move {
        loop {
            match inbound.message().await {
                Ok(Some(v1::CoordinatorMessage {
                    message: Some(v1::coordinator_message::Message::Assign(a)),
                })) if a.iterate => {
                    let (moves, length) = tokio::task::spawn_blocking(move || {
                        let board = board_from_wire(a.board.as_ref()).unwrap();
                        let goal = goal_from_wire(a.goal.as_ref(), board.shape()).unwrap();
                        let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
                        let SearchOutcome::Solved(mut path) =
                            solver.solve(&board, &Limits::default()).unwrap().outcome
                        else {
                            panic!("solvable");
                        };
                        path.extend(npuzzle_solver::parse_moves("RL").unwrap());
                        (moves_to_wire(&path), path.len() as u32)
                    })
                    .await
                    .unwrap();
                    let iterations = (a.bound..=length)
                        .step_by(2)
                        .map(|bound| v1::BoundNodes { bound, expanded: 1 })
                        .collect();
                    let _ = tx.send(v1::WorkerMessage {
                        message: Some(v1::worker_message::Message::Result(v1::UnitResult {
                            job: a.job,
                            epoch: a.epoch,
                            unit: a.unit,
                            status: v1::UnitStatus::Found as i32,
                            moves,
                            expanded: 1,
                            iterations,
                            ..Default::default()
                        })),
                    });
                }
                Ok(Some(_)) => {}
                Ok(None) => return None,
                Err(status) => return Some(status),
            }
        }
    })
}

/// The optimal length, the answer, the same board asked again, and the liar's end.
type LiarRun = (
    usize,
    v1::SolveResponse,
    v1::SolveResponse,
    tokio::task::JoinHandle<Option<tonic::Status>>,
);

/// The honest worker (one thread) earns trust on an easy board, the liar joins, a hard board
/// keeps the honest worker busy for 3 s (its deadline), and Korf's #12 goes to the liar.
async fn solve_with_liar(audit_fraction: f64) -> LiarRun {
    solve_with_liar_on("127.0.0.1:0", audit_fraction).await
}

/// [`solve_with_liar`] with the coordinator listening on `address`.
async fn solve_with_liar_on(address: &str, audit_fraction: f64) -> LiarRun {
    let mut config = eager_config();
    config.scheduler.audit_fraction = audit_fraction;
    // Nothing is asked back for idle slots: the hard board stays whole on the honest worker,
    // and the liar gets nothing but whole searches.
    config.scheduler.hand_back_after = u64::MAX;
    // The liar sends no heartbeats while it computes its lie (a serial search of #12, seconds
    // on a loaded machine): its lease must outlast that, or it is dropped for silence, not for
    // the lie.
    config.scheduler.lease_timeout = Duration::from_secs(60);
    let mut cluster = TestCluster::start_on(address, config).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    let (_, _, easy) = korf(&[79]).remove(0);
    let warm_up = client
        .solve(request(&easy, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(warm_up.outcome, v1::Outcome::Solved as i32);
    let liar = lie(&cluster).await;
    let (_, _, hard) = korf(&[60]).remove(0);
    let mut busy = client.clone();
    let busy = tokio::spawn(async move {
        busy.solve(v1::SolveRequest {
            timeout_ms: 3_000,
            ..request(&hard, v1::GoalKind::BlankFirst)
        })
        .await
    });
    // Let the hard board reach the honest worker first.
    for _ in 0..200 {
        if cluster.stats().await.busy_slots > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (_, optimal, tiles) = korf(&[12]).remove(0);
    let answer = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_reaches_goal(&tiles, &GoalSpec::BlankFirst, &answer.moves);
    let again = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(again.cached);
    let _ = busy.await;
    (optimal, answer, again, liar)
}

/// The liar's stream was closed, as a forger's is (FAILED_PRECONDITION).
async fn assert_dropped_as_forger(liar: tokio::task::JoinHandle<Option<tonic::Status>>) {
    let closed = tokio::time::timeout(Duration::from_secs(10), liar)
        .await
        .expect("the liar's stream was closed")
        .unwrap()
        .expect("closed with a status");
    assert_eq!(closed.code(), tonic::Code::FailedPrecondition, "{closed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_audits_the_lie_is_answered_and_cached() {
    let (optimal, answer, cached, _) = solve_with_liar(0.0).await;
    assert_eq!(answer.length as usize, optimal + 2);
    assert_eq!(cached.length as usize, optimal + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_catches_the_lie_and_only_the_optimum_is_answered_and_cached() {
    let (optimal, answer, cached, liar) = solve_with_liar(1.0).await;
    assert_eq!(answer.length as usize, optimal);
    assert_eq!(cached.length as usize, optimal);
    // The liar was dropped as a forger.
    assert_dropped_as_forger(liar).await;
}

/// At the default 1 % sample the liar's answer is still audited: a worker on probation (no
/// answer has yet passed its final audit with its reports in it) has its answer searched again
/// before it is returned, whatever the sample says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_probation_a_one_percent_sample_still_catches_a_liar_from_the_start() {
    let (optimal, answer, cached, liar) = solve_with_liar(0.01).await;
    assert_eq!(answer.length as usize, optimal);
    assert_eq!(cached.length as usize, optimal);
    assert_dropped_as_forger(liar).await;
}

/// A coordinator whose listener accepts other hosts (`0.0.0.0`, as `npuzzle cluster --listen
/// 0.0.0.0:PORT` runs) audits though no share was set (the library's default): at
/// [`SchedulerConfig::DEFAULT_AUDIT_FRACTION`], with probation, so the liar is caught from the
/// start, where the same coordinator on loopback answers its lie
/// (`without_audits_the_lie_is_answered_and_cached`).
///
/// [`SchedulerConfig::DEFAULT_AUDIT_FRACTION`]: npuzzle_coordinator::SchedulerConfig::DEFAULT_AUDIT_FRACTION
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_that_accepts_other_hosts_audits_by_default() {
    let (optimal, answer, cached, liar) = solve_with_liar_on("0.0.0.0:0", 0.0).await;
    assert_eq!(answer.length as usize, optimal);
    assert_eq!(cached.length as usize, optimal);
    assert_dropped_as_forger(liar).await;
}
