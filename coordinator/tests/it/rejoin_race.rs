//! A request that comes just as the last waiter of the same puzzle leaves starts a new search:
//! it never joins the search being cancelled, so it never gets `OUTCOME_CANCELLED`.

use std::time::Duration;

use crate::common::{TestCluster, eager_config, korf, request};
use npuzzle_proto::v1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_racing_the_last_waiter_out_is_never_cancelled() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    // Hard boards (seconds with the heuristics served here), four side by side: none is
    // answered within these deadlines, so every flight ends by its last waiter leaving.
    let boards = korf(&[60, 66, 82, 88]);
    let mut racers = Vec::new();
    for (lane, (id, _, tiles)) in boards.into_iter().enumerate() {
        let client = cluster.client().await;
        racers.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for attempt in 0..25u64 {
                let first = v1::SolveRequest {
                    timeout_ms: 40,
                    ..request(&tiles, v1::GoalKind::BlankFirst)
                };
                let second = v1::SolveRequest {
                    timeout_ms: 60,
                    ..request(&tiles, v1::GoalKind::BlankFirst)
                };
                let mut a = client.clone();
                let leaving = tokio::spawn(async move { a.solve(first).await });
                // Arrive around the moment the first request's deadline makes it leave.
                let offset = 37_000 + (attempt * 7 + lane as u64 * 3) % 10 * 600;
                tokio::time::sleep(Duration::from_micros(offset)).await;
                let mut b = client.clone();
                let answer = b.solve(second).await.expect("second request").into_inner();
                let left = leaving.await.expect("task").expect("first request");
                assert_eq!(
                    left.into_inner().outcome,
                    v1::Outcome::DeadlineExceeded as i32,
                    "#{id}: the first request ends by its deadline"
                );
                outcomes.push(answer.outcome);
            }
            (id, outcomes)
        }));
    }
    let mut tries = 0;
    for racer in racers {
        let (id, outcomes) = racer.await.expect("racer");
        for outcome in outcomes {
            tries += 1;
            assert_eq!(
                outcome,
                v1::Outcome::DeadlineExceeded as i32,
                "#{id}: a request that came as the last waiter left got {:?}",
                v1::Outcome::try_from(outcome)
            );
        }
    }
    assert_eq!(tries, 100);
    // Every search was cancelled in the end: nothing left running.
    for _ in 0..100 {
        if cluster.stats().await.running_jobs == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("searches left running: {:?}", cluster.stats().await);
}
