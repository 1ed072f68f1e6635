//! The answer cancels the job everywhere: workers go idle, and the nodes searched after the
//! cancel are counted and small. A client that goes away cancels its job.

use std::time::{Duration, Instant};

use crate::common::{TestCluster, eager_config, korf, request};
use npuzzle_proto::v1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_are_idle_soon_after_the_answer() {
    // No splitting: units may be large, so only the cancel makes the workers idle quickly.
    let mut config = eager_config();
    config.scheduler.node_budget = 0;
    let mut cluster = TestCluster::start(config).await;
    cluster.add_worker(2).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    for (id, optimal, tiles) in korf(&[1, 10]) {
        let r = client
            .solve(request(&tiles, v1::GoalKind::BlankFirst))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.length as usize, optimal, "#{id}");
        let answered = Instant::now();
        loop {
            let s = cluster.stats().await;
            if s.busy_slots == 0 {
                break;
            }
            assert!(
                answered.elapsed() < Duration::from_secs(2),
                "#{id}: still busy: {s:?}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    // Units still running when an answer came report late: counted, never lost.
    let s = cluster.stats().await;
    assert_eq!((s.running_jobs, s.queue_depth), (0, 0), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_cancels_its_job() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(2).await;
    let (_, _, tiles) = korf(&[88]).remove(0);
    let mut client = cluster.client().await;
    let call = tokio::spawn(async move {
        client
            .solve(request(&tiles, v1::GoalKind::BlankFirst))
            .await
    });
    // Wait until the job is out on the worker, then hang up.
    for _ in 0..200 {
        if cluster.stats().await.busy_slots > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    call.abort();
    let left = Instant::now();
    loop {
        let s = cluster.stats().await;
        if s.running_jobs == 0 && s.busy_slots == 0 {
            break;
        }
        assert!(
            left.elapsed() < Duration::from_secs(3),
            "job still running: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
