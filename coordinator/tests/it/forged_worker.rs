//! A hostile worker that answers every unit with a path that does reach the goal, but with a
//! detour (longer than the bound): the coordinator replays it, rejects it, drops that worker,
//! and the client (and the cache) get only the optimal answer, found by an honest worker.

use std::time::Duration;

use crate::common::{
    GoalSpec, TestCluster, assert_optimal, assert_reaches_goal, eager_config, hand_hello,
    join_by_hand, korf, request, try_join,
};
use npuzzle_proto::{board_from_wire, goal_from_wire, moves_to_wire, v1};
use npuzzle_solver::{HeuristicKind, Limits, SearchOutcome, Solver};

/// The unit's optimal suffix and a needless `RL` at the goal (Korf's goal has the blank in the
/// top-left corner, where R then L is legal).
fn detour_from(assignment: &v1::Assignment) -> String {
    let board = board_from_wire(assignment.board.as_ref()).unwrap();
    let goal = goal_from_wire(assignment.goal.as_ref(), board.shape()).unwrap();
    let solver = Solver::new(goal, HeuristicKind::LinearConflict).unwrap();
    let SearchOutcome::Solved(mut path) = solver.solve(&board, &Limits::default()).unwrap().outcome
    else {
        panic!("the unit is solvable");
    };
    path.extend(npuzzle_solver::parse_moves("RL").unwrap());
    assert_reaches_goal(&board, &goal, &path);
    moves_to_wire(&path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_forging_longer_paths_is_dropped_and_only_the_optimum_is_answered_and_cached() {
    let mut cluster = TestCluster::start(eager_config()).await;
    let (tx, mut inbound) = join_by_hand(&cluster, "forger", 4).await;
    // The forger answers each unit it gets, at once, until the coordinator closes its stream.
    let forging = tokio::spawn(async move {
        let mut forged = 0;
        loop {
            match inbound.message().await {
                Ok(Some(v1::CoordinatorMessage {
                    message: Some(v1::coordinator_message::Message::Assign(a)),
                })) => {
                    let moves = tokio::task::spawn_blocking({
                        let a = a.clone();
                        move || detour_from(&a)
                    })
                    .await
                    .unwrap();
                    forged += 1;
                    let _ = tx.send(v1::WorkerMessage {
                        message: Some(v1::worker_message::Message::Result(v1::UnitResult {
                            job: a.job,
                            epoch: a.epoch,
                            unit: a.unit,
                            status: v1::UnitStatus::Found as i32,
                            moves,
                            expanded: 1,
                            ..Default::default()
                        })),
                    });
                }
                Ok(Some(_)) => {}
                Ok(None) => return (forged, None),
                Err(status) => return (forged, Some(status)),
            }
        }
    });
    cluster.add_worker(1).await;

    let (id, optimal, tiles) = korf(&[12]).remove(0);
    let mut client = cluster.client().await;
    let r = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.outcome, v1::Outcome::Solved as i32, "#{id}: {r:?}");
    assert_eq!(r.length as usize, optimal, "#{id}");
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);

    let (forged, closed) = tokio::time::timeout(Duration::from_secs(10), forging)
        .await
        .expect("the forger's stream was closed")
        .unwrap();
    assert!(
        forged >= 1,
        "the forger got no unit, so this proves nothing"
    );
    let closed = closed.expect("closed with a status");
    assert_eq!(closed.code(), tonic::Code::FailedPrecondition, "{closed:?}");
    assert_eq!(
        cluster.stats().await.workers,
        1,
        "only the honest worker is left"
    );

    // The cache holds the optimal path, not a forged one.
    let again = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(again.cached);
    assert_eq!(again.length as usize, optimal);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &again.moves, optimal);

    // Quarantined: the same name from the same address is refused for a while; other workers
    // on the same host still join.
    let refused = try_join(&cluster, hand_hello("forger", 4))
        .await
        .map(|_| ())
        .expect_err("a quarantined worker joined again");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("quarantined"), "{refused:?}");
    cluster.add_worker(1).await;
    assert_eq!(cluster.stats().await.workers, 2);
}
