//! Distributed answers equal the optimal lengths, with 1, 2 and 3 workers, and with heavy units
//! split along the way.

use crate::common::{GoalSpec, TestCluster, assert_optimal, eager_config, korf, request};
use npuzzle_coordinator::SchedulerConfig;
use npuzzle_proto::v1;

async fn solve_korf(cluster: &TestCluster, ids: &[usize]) -> Vec<v1::SolveResponse> {
    let mut answers = Vec::new();
    let mut client = cluster.client().await;
    for (id, optimal, tiles) in korf(ids) {
        let r = client
            .solve(request(&tiles, v1::GoalKind::BlankFirst))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.outcome, v1::Outcome::Solved as i32, "#{id}: {r:?}");
        assert_eq!(r.length as usize, optimal, "#{id}");
        assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
        assert!(!r.cached);
        assert!(r.units > 0, "#{id} was meant to be distributed: {r:?}");
        answers.push(r);
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    solve_korf(&cluster, &[12, 55]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    cluster.add_worker(1).await;
    let answers = solve_korf(&cluster, &[42, 79]).await;
    assert!(answers.iter().all(|r| r.worker_nodes.len() <= 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_with_heavy_units_split() {
    let mut config = eager_config();
    config.units_per_slot = 2;
    config.scheduler = SchedulerConfig {
        node_budget: 20_000,
        split_parts: 8,
        ..config.scheduler
    };
    let mut cluster = TestCluster::start(config).await;
    for _ in 0..3 {
        cluster.add_worker(1).await;
    }
    let answers = solve_korf(&cluster, &[12, 97]).await;
    assert!(
        answers.iter().any(|r| r.splits > 0),
        "no heavy unit was split: {answers:?}"
    );
}
