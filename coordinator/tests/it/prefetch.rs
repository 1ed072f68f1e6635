//! Units sent ahead (`--prefetch`, on by default) between a real coordinator and real workers:
//! a worker whose one thread is busy holds the next search ahead, and gives it back unstarted
//! when another worker joins.

use std::time::Duration;

use crate::common::{GoalSpec, TestCluster, assert_optimal, korf, request};
use npuzzle_cluster::testing::eventually;
use npuzzle_proto::v1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_waiting_ahead_goes_unstarted_to_a_worker_that_joins() {
    let config = npuzzle_coordinator::Config {
        tick: Duration::from_millis(100),
        ..npuzzle_coordinator::Config::default()
    };
    assert!(config.scheduler.prefetch, "on by default");
    let mut cluster = TestCluster::start(config).await;
    let one_thread = |c: &mut npuzzle_worker::Config| {
        c.threads = 1;
        c.load_pdbs = false;
    };
    cluster.add_worker_with(one_thread).await;
    let [easy, next, hard] = [79, 12, 88].map(|id| korf(&[id]).remove(0));
    let mut client = cluster.client().await;
    let solve = |(_, _, tiles): &(usize, usize, String)| request(tiles, v1::GoalKind::BlankFirst);

    // A first answer: the worker is trusted, and may be sent searches ahead.
    let first = client.solve(solve(&easy)).await.unwrap().into_inner();
    assert_eq!(first.length as usize, easy.1);

    // Korf's #88 with Manhattan distance takes far longer than this test: it keeps the one
    // thread busy.
    let mut busy_client = cluster.client().await;
    let long = v1::SolveRequest {
        heuristic: v1::Heuristic::Manhattan as i32,
        ..solve(&hard)
    };
    let long = tokio::spawn(async move { busy_client.solve(long).await });
    let stats = async |want: (u64, u32, u32)| {
        let s = cluster.stats().await;
        ((s.busy_slots, s.running_jobs, s.queue_depth) == want).then_some(s)
    };
    eventually(
        Duration::from_secs(10),
        Duration::from_millis(10),
        "the long search running",
        async || stats((1, 1, 0)).await,
    )
    .await;

    // The next search goes ahead to the busy worker: nothing waits at the coordinator.
    let mut next_client = cluster.client().await;
    let next_request = solve(&next);
    let waiting = tokio::spawn(async move { next_client.solve(next_request).await });
    eventually(
        Duration::from_secs(10),
        Duration::from_millis(10),
        "the next search held ahead by the busy worker",
        async || stats((1, 2, 0)).await,
    )
    .await;

    // A second worker joins: the search held ahead is taken back unstarted and searched there,
    // while the long one runs on.
    cluster.add_worker_with(one_thread).await;
    let answer = tokio::time::timeout(Duration::from_secs(60), waiting)
        .await
        .expect("answered while the long search runs")
        .unwrap()
        .unwrap()
        .into_inner();
    assert_eq!(answer.outcome, v1::Outcome::Solved as i32, "{answer:?}");
    assert_eq!(answer.length as usize, next.1);
    assert_optimal(&next.2, &GoalSpec::BlankFirst, &answer.moves, next.1);
    let searched_by: Vec<u64> = answer
        .worker_nodes
        .iter()
        .copied()
        .filter(|&n| n > 0)
        .collect();
    assert_eq!(
        searched_by.len(),
        1,
        "one worker searched it, the other gave it back unstarted: {answer:?}"
    );
    assert!(!long.is_finished(), "the long search still runs");
    long.abort();
}
