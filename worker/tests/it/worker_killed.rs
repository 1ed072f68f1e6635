//! Real worker processes: one is killed (`kill -9`) in the middle of a job while it holds a
//! unit; its units go back to the queue and the answer is still optimal.

use crate::common::{
    blank_first_request, solve_until_both_busy, spawn_worker, stats, stop_while_holding_a_unit,
    tiles,
};
use npuzzle_cluster::testing::{TestCluster, assert_optimal};
use npuzzle_coordinator::{Config, HttpListener};
use npuzzle_proto::v1;
use npuzzle_solver::GoalSpec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_process_does_not_lose_the_answer() {
    // The HTTP API tells which worker holds a unit.
    let http = HttpListener::bind("127.0.0.1:0").unwrap();
    let http_address = http.local_addr();
    let config = Config {
        probe_nodes: 1_000,
        units_per_slot: 32,
        http: Some(http),
        ..Config::default()
    };
    let cluster = TestCluster::start(config).await;
    let url = cluster.url.clone();

    let mut a = spawn_worker(&url, "a");
    let _b = spawn_worker(&url, "b");
    cluster.wait_for_workers(2).await;

    // Korf #3: 59 moves, tens of millions of linear-conflict nodes: long enough to kill a worker.
    let tiles = tiles("14 7 8 2 13 11 10 4 9 12 5 0 3 6 1 15");
    let call = solve_until_both_busy(&url, blank_first_request(&tiles)).await;
    // Killed while it holds a unit, so that its loss is what the answer survives.
    stop_while_holding_a_unit(&a, http_address, "a").await;
    a.kill(); // SIGKILL, and reaped

    let r = call.await.unwrap().unwrap().into_inner();
    assert_eq!(r.outcome, v1::Outcome::Solved as i32, "{r:?}");
    assert_eq!(r.length, 59);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, 59);
    assert!(
        r.requeued >= 1,
        "the killed worker's unit was not requeued: {r:?}"
    );
    assert_eq!(stats(&url).await.workers, 1);
}
