//! A worker outlives its coordinator: it reconnects (with backoff) to the new one on the same
//! address and serves new requests. Clients meanwhile get UNAVAILABLE, not a hang.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npuzzle_cluster::testing::Process;
use npuzzle_coordinator::Config;
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use tokio_util::sync::CancellationToken;

async fn start(addr: std::net::SocketAddr) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => break l,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let shutdown = CancellationToken::new();
    let config = Config {
        probe_nodes: 1_000,
        ..Config::default()
    };
    let task = tokio::spawn({
        let s = shutdown.clone();
        async move {
            let _ = npuzzle_coordinator::run(listener, config, s).await;
        }
    });
    (shutdown, task)
}

async fn workers(url: &str) -> Option<u32> {
    let mut c = SolverClient::connect(url.to_string()).await.ok()?;
    Some(
        c.stats(v1::StatsRequest {})
            .await
            .ok()?
            .into_inner()
            .workers,
    )
}

fn korf_12() -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(v1::Board {
            width: 4,
            height: 4,
            tiles: vec![14, 1, 9, 6, 4, 8, 12, 5, 7, 2, 3, 0, 10, 11, 13, 15],
        }),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        }),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_reconnect_to_a_restarted_coordinator() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let url = format!("http://{addr}");
    let (first, task) = start(addr).await;

    let _worker = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
            .args(["--coordinator", &url, "--threads", "1"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let t = Instant::now();
    while workers(&url).await != Some(1) {
        assert!(t.elapsed() < Duration::from_secs(10), "worker did not join");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    first.cancel();
    task.await.unwrap();
    // Down: a client is told so at once.
    let down =
        tokio::time::timeout(Duration::from_secs(5), SolverClient::connect(url.clone())).await;
    match down {
        Ok(Err(_)) => {}
        Ok(Ok(mut c)) => {
            let err = c.solve(korf_12()).await.unwrap_err();
            assert_eq!(err.code(), tonic::Code::Unavailable);
        }
        Err(_) => panic!("connecting to a stopped coordinator hung"),
    }

    let (second, _task) = start(addr).await;
    let t = Instant::now();
    while workers(&url).await != Some(1) {
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "worker did not reconnect"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = SolverClient::connect(url.clone()).await.unwrap();
    let r = client.solve(korf_12()).await.unwrap().into_inner();
    assert_eq!((r.outcome, r.length), (v1::Outcome::Solved as i32, 45));
    assert!(r.units > 0, "served by the reconnected worker: {r:?}");
    second.cancel();
}
