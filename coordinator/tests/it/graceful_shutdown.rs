//! SIGTERM on the real coordinator binary while a search runs: health goes NOT_SERVING at once,
//! new requests are refused with UNAVAILABLE, the running search is stopped when the drain ends
//! and its client told so (UNAVAILABLE, with the lower bound proven so far), and the process
//! exits 0.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npuzzle_proto::v1;
use tokio_util::sync::CancellationToken;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use crate::common::{connect, free_port};
use npuzzle_cluster::testing::Process;

/// Korf #14 (59 moves) with Manhattan distance: hundreds of millions of nodes, far longer
/// than this test.
fn long_search() -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(v1::Board {
            width: 4,
            height: 4,
            tiles: vec![7, 6, 8, 1, 11, 5, 14, 10, 3, 4, 9, 13, 15, 2, 0, 12],
        }),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        }),
        heuristic: v1::Heuristic::Manhattan as i32,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_refuses_new_work_stops_running_searches_clearly_and_exits_zero() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let drain = Duration::from_secs(2);
    let mut coordinator = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle-coordinator"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--drain-secs", &drain.as_secs().to_string()])
            .args(["--probe-nodes", "1000"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let mut client = connect(&url).await;
    let worker_stop = CancellationToken::new();
    let _worker_guard = worker_stop.clone().drop_guard();
    let mut worker = npuzzle_worker::Config::new(url.clone());
    worker.threads = 1;
    worker.load_pdbs = false;
    tokio::spawn(npuzzle_worker::run(worker, worker_stop.clone()));

    let running = tokio::spawn({
        let mut client = client.clone();
        async move { client.solve(long_search()).await }
    });
    let asked = Instant::now();
    while client
        .stats(v1::StatsRequest {})
        .await
        .unwrap()
        .into_inner()
        .busy_slots
        == 0
    {
        assert!(
            asked.elapsed() < Duration::from_secs(20),
            "no search started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Taken before `kill` runs: the signal arrives between the two, so the drain cannot have
    // begun before `terminated` (taken after `kill` exits, a loaded machine made the drain look
    // a few milliseconds short).
    let terminated = Instant::now();
    coordinator.signal("TERM");

    // Draining: NOT_SERVING, and a new request is turned away at once.
    let channel = tonic::transport::Endpoint::from_shared(url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    let mut status = None;
    while terminated.elapsed() < drain {
        let s = health
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap()
            .into_inner()
            .status();
        if s == ServingStatus::NotServing {
            status = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, Some(ServingStatus::NotServing));
    let mut easy = long_search();
    easy.board = Some(v1::Board {
        width: 3,
        height: 3,
        tiles: vec![1, 2, 3, 4, 5, 6, 7, 0, 8],
    });
    easy.goal = None;
    let refused = client.solve(easy).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert!(refused.message().contains("shutting down"), "{refused:?}");
    assert!(
        terminated.elapsed() < drain,
        "the drain was over before the checks"
    );

    // The running search is stopped when the drain ends, and its client is told why.
    let stopped = tokio::time::timeout(Duration::from_secs(15), running)
        .await
        .expect("the running request got an answer")
        .unwrap()
        .unwrap_err();
    assert_eq!(stopped.code(), tonic::Code::Unavailable, "{stopped:?}");
    assert!(
        stopped.message().contains("shutting down") && stopped.message().contains("lower bound"),
        "{stopped:?}"
    );
    assert!(
        terminated.elapsed() >= drain,
        "stopped before the drain ended"
    );

    let exit = loop {
        if let Some(status) = coordinator.try_wait() {
            break status;
        }
        assert!(
            terminated.elapsed() < drain + Duration::from_secs(10),
            "the coordinator did not exit"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "exit status {exit:?}");
}
