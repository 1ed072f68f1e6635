//! Malformed requests get INVALID_ARGUMENT naming the problem, unsolvable boards an immediate
//! answer, and a request with no worker to serve it UNAVAILABLE rather than a hang.

use std::time::{Duration, Instant};

use crate::common::{TestCluster, eager_config, korf, request};
use npuzzle_proto::v1;
use tonic::Code;

fn board(width: u32, height: u32, tiles: Vec<u32>) -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(v1::Board {
            width,
            height,
            tiles,
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn malformed_requests_are_invalid_argument_with_the_reason() {
    let cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let cases = [
        (v1::SolveRequest::default(), "missing board"),
        (board(9, 9, vec![0; 81]), "9x9 is not supported"),
        (board(3, 3, (0..5000).collect()), "found 5000 tiles"),
        (
            board(3, 3, vec![1, 2, 3, 4, 5, 6, 7, 7, 0]),
            "duplicate tile 7",
        ),
        (
            board(3, 3, vec![1, 2, 3, 4, 5, 6, 7, 99, 0]),
            "tile 99 at position 7 is out of range",
        ),
        (board(3, 3, vec![]), "empty board"),
    ];
    for (req, reason) in cases {
        let err = client.solve(req).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(
            err.message().contains(reason),
            "{:?} should name {reason:?}",
            err.message()
        );
    }
    let mut req = board(3, 3, vec![1, 2, 3, 4, 5, 6, 7, 8, 0]);
    req.goal = Some(v1::Goal {
        kind: v1::GoalKind::Custom as i32,
        tiles: vec![1, 2, 3],
    });
    let err = client.solve(req).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().starts_with("invalid goal"),
        "{}",
        err.message()
    );
    let mut req = board(4, 4, (0..16).collect());
    req.heuristic = v1::Heuristic::Exact as i32;
    let err = client.solve(req).await.unwrap_err();
    assert!(
        err.message().contains("does not support 4x4"),
        "{}",
        err.message()
    );
    // Nothing was queued for any of them.
    let stats = cluster.stats().await;
    assert_eq!((stats.running_jobs, stats.queue_depth), (0, 0));
}

#[tokio::test]
async fn unsolvable_is_answered_at_once_even_without_workers() {
    let cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let r = client
        .solve(board(
            4,
            4,
            vec![2, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0],
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.outcome, v1::Outcome::Unsolvable as i32);
    assert_eq!(cluster.stats().await.running_jobs, 0);
}

#[tokio::test]
async fn small_problems_are_solved_by_the_coordinator_without_workers() {
    let cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let r = client
        .solve(board(3, 3, vec![8, 6, 7, 2, 5, 4, 3, 0, 1]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (r.outcome, r.length, r.units),
        (v1::Outcome::Solved as i32, 31, 0)
    );
}

/// On paused time (the clock jumps to the next timer whenever every task waits): the
/// pipeline's waits are tokio timers, so the 2 s wait passes at once.
#[tokio::test(start_paused = true)]
async fn no_workers_means_unavailable_at_the_deadline() {
    let cluster = TestCluster::start(eager_config()).await;
    let mut client = cluster.client().await;
    let (_, _, tiles) = korf(&[3]).remove(0);
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 400;
    let started = Instant::now();
    let err = client.solve(req).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert!(err.message().contains("no worker"), "{}", err.message());
    assert!(started.elapsed() < Duration::from_secs(3));

    // Without any deadline the coordinator still gives up after `unavailable_after` (2 s here).
    let started = Instant::now();
    let err = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unavailable);
    assert!(started.elapsed() < Duration::from_secs(6));
    // And the abandoned job is gone.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(cluster.stats().await.running_jobs, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_gives_the_best_proven_lower_bound() {
    let mut cluster = TestCluster::start(eager_config()).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    // Korf #88 takes minutes: the deadline comes first.
    let (_, optimal, tiles) = korf(&[88]).remove(0);
    let mut req = request(&tiles, v1::GoalKind::BlankFirst);
    req.timeout_ms = 500;
    let r = client.solve(req).await.unwrap().into_inner();
    assert_eq!(r.outcome, v1::Outcome::DeadlineExceeded as i32, "{r:?}");
    assert!(
        r.lower_bound > 0 && r.lower_bound as usize <= optimal,
        "{r:?}"
    );
    // The job was cancelled on the worker.
    for _ in 0..100 {
        let s = cluster.stats().await;
        if s.running_jobs == 0 && s.busy_slots == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the job kept running after its deadline: {:?}",
        cluster.stats().await
    );
}
