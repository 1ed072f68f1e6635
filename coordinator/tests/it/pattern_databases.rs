//! Workers serve pattern databases: a worker holding 4x4 tables gets the PDB jobs and solves them
//! optimally with far fewer nodes than linear conflict; `HEURISTIC_AUTO` uses the tables once a
//! connected worker has them; `HEURISTIC_PDB` with no worker holding them is
//! `FAILED_PRECONDITION` naming the shape; when the only worker with tables leaves mid-job, the
//! units wait for another (and the request ends `UNAVAILABLE` if none comes).

use std::time::{Duration, Instant};

use crate::common::{
    EASIEST_KORF, GoalSpec, TestCluster, assert_optimal, eager_config, korf, request, tables_5_5_5,
};
use npuzzle_proto::v1;
use tonic::Code;

fn with_heuristic(tiles: &str, heuristic: v1::Heuristic) -> v1::SolveRequest {
    v1::SolveRequest {
        heuristic: heuristic as i32,
        skip_cache: true,
        ..request(tiles, v1::GoalKind::BlankFirst)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_tables_searches_pdb_jobs_optimally_and_with_fewer_nodes() {
    let tables = tables_5_5_5();
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker_with_tables(1, Some(tables)).await;
    let mut client = cluster.client().await;
    let (mut pdb_nodes, mut lc_nodes) = (0, 0);
    for (id, optimal, tiles) in korf(&EASIEST_KORF) {
        let r = client
            .solve(with_heuristic(&tiles, v1::Heuristic::Pdb))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.outcome, v1::Outcome::Solved as i32, "#{id}: {r:?}");
        assert_eq!(r.length as usize, optimal, "#{id}");
        assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
        assert!(r.units > 0, "#{id} was meant to be distributed: {r:?}");
        assert_eq!(r.heuristic_used, v1::Heuristic::Pdb as i32, "#{id}: {r:?}");
        pdb_nodes += r.nodes;

        let lc = client
            .solve(with_heuristic(&tiles, v1::Heuristic::LinearConflict))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(lc.length as usize, optimal, "#{id}");
        assert_optimal(&tiles, &GoalSpec::BlankFirst, &lc.moves, optimal);
        assert_eq!(lc.heuristic_used, v1::Heuristic::LinearConflict as i32);
        lc_nodes += lc.nodes;
    }
    assert!(
        pdb_nodes * 3 < lc_nodes,
        "pattern databases took {pdb_nodes} nodes, linear conflict {lc_nodes}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_uses_pattern_databases_once_a_connected_worker_has_them() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    let (_, optimal, tiles) = korf(&[79]).remove(0);
    let auto = |tiles: &str| with_heuristic(tiles, v1::Heuristic::Auto);
    let r = client.solve(auto(&tiles)).await.unwrap().into_inner();
    assert_eq!(r.length as usize, optimal);
    assert_eq!(r.heuristic_used, v1::Heuristic::LinearConflict as i32);

    cluster
        .add_worker_with_tables(1, Some(tables_5_5_5()))
        .await;
    let r = client.solve(auto(&tiles)).await.unwrap().into_inner();
    assert_eq!(r.length as usize, optimal);
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
    assert_eq!(r.heuristic_used, v1::Heuristic::Pdb as i32, "{r:?}");
    // Only the worker with tables took part.
    assert_eq!(r.worker_nodes.len(), 1, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdb_without_a_worker_holding_tables_is_failed_precondition() {
    let mut cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let (_, _, tiles) = korf(&[79]).remove(0);

    // No worker at all: like any request that needs one, it waits, then UNAVAILABLE.
    let mut req = with_heuristic(&tiles, v1::Heuristic::Pdb);
    req.timeout_ms = 300;
    let started = Instant::now();
    let err = client.solve(req).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));

    // Workers, none with tables: no point waiting.
    cluster.add_worker(1).await;
    let err = client
        .solve(with_heuristic(&tiles, v1::Heuristic::Pdb))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(
        err.message()
            .contains("no connected worker has pattern databases for 4x4 boards"),
        "{}",
        err.message()
    );
    assert!(
        err.message()
            .contains("npuzzle pdb build --size 4x4 --partition"),
        "{}",
        err.message()
    );
    // Nothing was queued.
    let stats = cluster.stats().await;
    assert_eq!((stats.running_jobs, stats.queue_depth), (0, 0));

    // A goal no table can serve is the request's fault, tables or not.
    let mut req = with_heuristic(&tiles, v1::Heuristic::Pdb);
    req.goal = Some(v1::Goal {
        kind: v1::GoalKind::Custom as i32,
        tiles: vec![1, 2, 3, 4, 5, 6, 7, 0, 8, 9, 10, 11, 12, 13, 14, 15],
    });
    let err = client.solve(req).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("blank on the first or last cell"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judge_goal_is_served_by_the_same_tables() {
    // Blank-last goal: the worker turns the board by 180° to use the blank-first tables.
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster
        .add_worker_with_tables(1, Some(tables_5_5_5()))
        .await;
    let mut client = cluster.client().await;
    let tiles = "1 6 10 8 14 12 4 2 13 11 3 5 9 7 15 0";
    let req = v1::SolveRequest {
        heuristic: v1::Heuristic::Pdb as i32,
        ..request(tiles, v1::GoalKind::BlankLast)
    };
    let r = client.solve(req).await.unwrap().into_inner();
    assert_eq!(r.length, 42, "{r:?}");
    assert_optimal(tiles, &GoalSpec::BlankLast, &r.moves, 42);
    assert!(r.units > 0, "{r:?}");
    assert_eq!(r.heuristic_used, v1::Heuristic::Pdb as i32);
}

/// Starts Korf #3 (59 moves; about a second of 5-5-5 search) with `HEURISTIC_PDB` on a cluster
/// with a worker without tables and one with, and stops the one with tables once it is busy.
async fn lose_the_worker_with_tables_mid_job() -> (
    TestCluster,
    String,
    tokio::task::JoinHandle<Result<tonic::Response<v1::SolveResponse>, tonic::Status>>,
) {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    cluster
        .add_worker_with_tables(1, Some(tables_5_5_5()))
        .await;
    let (_, _, tiles) = korf(&[3]).remove(0);
    let mut client = cluster.client().await;
    let req = with_heuristic(&tiles, v1::Heuristic::Pdb);
    let call = tokio::spawn(async move { client.solve(req).await });
    while cluster.stats().await.busy_slots == 0 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    cluster.stop_worker(1);
    while cluster.stats().await.workers != 1 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (cluster, tiles, call)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdb_units_wait_for_a_worker_with_tables_when_theirs_leaves() {
    let (mut cluster, tiles, call) = lose_the_worker_with_tables_mid_job().await;
    // The worker without tables gets none of the job's units: they wait.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stats = cluster.stats().await;
    assert_eq!((stats.busy_slots, stats.running_jobs), (0, 1), "{stats:?}");
    assert!(stats.queue_depth > 0, "{stats:?}");
    cluster
        .add_worker_with_tables(1, Some(tables_5_5_5()))
        .await;
    let r = call.await.unwrap().unwrap().into_inner();
    assert_eq!(
        (r.outcome, r.length),
        (v1::Outcome::Solved as i32, 59),
        "{r:?}"
    );
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, 59);
    assert_eq!(r.heuristic_used, v1::Heuristic::Pdb as i32);
    assert!(r.requeued >= 1, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdb_units_left_without_a_worker_with_tables_end_unavailable() {
    let (cluster, _, call) = lose_the_worker_with_tables_mid_job().await;
    let lost = Instant::now();
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(
        err.message()
            .contains("no connected worker has pattern databases for 4x4 boards any more"),
        "{}",
        err.message()
    );
    // `unavailable_after` is 2 s in the eager config.
    assert!(lost.elapsed() < Duration::from_secs(5));
    for _ in 0..100 {
        if cluster.stats().await.running_jobs == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the abandoned job is still running");
}
