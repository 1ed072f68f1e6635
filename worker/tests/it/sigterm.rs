//! SIGTERM on a real worker process in the middle of a job: it stops at once, exits 0, and its
//! units go back to the queue as soon as its stream closes — long before its lease would expire.

use std::time::{Duration, Instant};

use crate::common::{
    blank_first_request, solve_until_both_busy, spawn_worker, stats, stop_while_holding_a_unit,
    tiles,
};
use npuzzle_cluster::testing::{TestCluster, assert_optimal};
use npuzzle_coordinator::{Config, HttpListener, SchedulerConfig};
use npuzzle_proto::v1;
use npuzzle_solver::GoalSpec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_worker_exits_zero_and_its_units_are_requeued_at_once() {
    let lease = Duration::from_secs(120);
    // The HTTP API tells which worker holds a unit.
    let http = HttpListener::bind("127.0.0.1:0").unwrap();
    let http_address = http.local_addr();
    let config = Config {
        http: Some(http),
        probe_nodes: 1_000,
        units_per_slot: 32,
        scheduler: SchedulerConfig {
            lease_timeout: lease,
            ..SchedulerConfig::default()
        },
        ..Config::default()
    };
    let cluster = TestCluster::start(config).await;
    let url = cluster.url.clone();

    let mut a = spawn_worker(&url, "a");
    let _b = spawn_worker(&url, "b");
    cluster.wait_for_workers(2).await;

    // Korf #49: 59 moves, 103 M linear-conflict nodes expanded (about 3 s on one core): long
    // enough to stop a worker mid-job.
    let tiles = tiles("10 0 2 4 5 1 6 12 11 13 9 7 15 3 14 8");
    let call = solve_until_both_busy(&url, blank_first_request(&tiles)).await;
    // Terminated while it holds a unit: stopped there, sent SIGTERM, then let run to receive it.
    stop_while_holding_a_unit(&a, http_address, "a").await;
    let terminated = Instant::now();
    a.signal("TERM");
    a.signal("CONT");
    let exit = loop {
        if let Some(status) = a.try_wait() {
            break status;
        }
        assert!(
            terminated.elapsed() < Duration::from_secs(10),
            "the worker did not exit within 10 s of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "worker exit status: {exit:?}");

    // The coordinator forgets it as soon as its stream closes, not when the lease runs out.
    while stats(&url).await.workers != 1 {
        assert!(
            terminated.elapsed() < Duration::from_secs(10),
            "the terminated worker still counts as a member"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let r = call.await.unwrap().unwrap().into_inner();
    assert_eq!(r.outcome, v1::Outcome::Solved as i32, "{r:?}");
    assert_eq!(r.length, 59);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, 59);
    assert!(
        r.requeued >= 1,
        "the worker's units were not requeued: {r:?}"
    );
    assert!(
        terminated.elapsed() < lease,
        "the answer waited for the lease: {:?}",
        terminated.elapsed()
    );
}
