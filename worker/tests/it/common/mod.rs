//! Real worker processes around an in-process coordinator on loopback.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npuzzle_cluster::testing::prometheus;
use npuzzle_cluster::testing::{Process, eventually};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;

/// The real `npuzzle-worker` binary with one search thread (killed when dropped).
pub fn spawn_worker(url: &str, name: &str) -> Process {
    Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
            .args(["--coordinator", url, "--threads", "1", "--name", name])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

pub async fn stats(url: &str) -> v1::StatsResponse {
    let mut c = SolverClient::connect(url.to_string()).await.unwrap();
    c.stats(v1::StatsRequest {}).await.unwrap().into_inner()
}

/// The coordinator's count of busy slots of the worker called `name`, from its HTTP API
/// (`GET /api/v1/workers` on `http`); 0 if no such worker is connected.
pub async fn busy_slots_of(http: SocketAddr, name: &str) -> u64 {
    let (code, body) =
        tokio::task::spawn_blocking(move || prometheus::get(http, "/api/v1/workers"))
            .await
            .unwrap();
    assert_eq!(code, 200, "GET /api/v1/workers: {body}");
    let workers: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    workers
        .as_array()
        .expect("an array of workers")
        .iter()
        .find(|w| w["name"] == name)
        .and_then(|w| w["busy_slots"].as_u64())
        .unwrap_or(0)
}

/// Stops `worker` (SIGSTOP) at a moment when the coordinator counts it holding a unit, and
/// returns with it stopped: a stopped process sends nothing, so what it holds can no longer
/// change from its side. Each try lets the messages it sent before stopping arrive (50 ms)
/// before asking; if it holds nothing it runs on (SIGCONT) and is tried again.
#[cfg(unix)]
pub async fn stop_while_holding_a_unit(worker: &Process, http: SocketAddr, name: &str) {
    let pid = worker.id() as libc::pid_t;
    let began = Instant::now();
    loop {
        // SAFETY: kill(2) with a child's pid and a signal number; no memory is involved.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0, "SIGSTOP");
        tokio::time::sleep(Duration::from_millis(50)).await;
        if busy_slots_of(http, name).await > 0 {
            return;
        }
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0, "SIGCONT");
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "worker {name} was never seen holding a unit"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Parses a 4x4 board's tiles.
pub fn tiles(board: &str) -> Vec<u32> {
    board
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect()
}

/// A request for the 4x4 `tiles` towards Korf's blank-first goal.
pub fn blank_first_request(tiles: &[u32]) -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(v1::Board {
            width: 4,
            height: 4,
            tiles: tiles.to_vec(),
        }),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        }),
        ..Default::default()
    }
}

/// Sends `request` and returns once both workers' slots have been busy for 200 ms, so that a
/// worker stopped then is stopped in the middle of the job.
pub async fn solve_until_both_busy(
    url: &str,
    request: v1::SolveRequest,
) -> tokio::task::JoinHandle<Result<tonic::Response<v1::SolveResponse>, tonic::Status>> {
    let mut client = SolverClient::connect(url.to_string()).await.unwrap();
    let call = tokio::spawn(async move { client.solve(request).await });
    let both_busy = async || (stats(url).await.busy_slots >= 2).then_some(());
    eventually(
        Duration::from_secs(60),
        Duration::from_millis(5),
        "both workers busy",
        both_busy,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    call
}
