//! SIGTERM on a real worker process in the middle of a job: it stops at once, exits 0, and its
//! units go back to the queue as soon as its stream closes — long before its lease would expire.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use npuzzle_coordinator::{Config, SchedulerConfig};
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use tokio_util::sync::CancellationToken;

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_worker(url: &str, name: &str) -> Worker {
    Worker(
        Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
            .args(["--coordinator", url, "--threads", "1", "--name", name])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("worker starts"),
    )
}

async fn stats(url: &str) -> v1::StatsResponse {
    let mut c = SolverClient::connect(url.to_string()).await.unwrap();
    c.stats(v1::StatsRequest {}).await.unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_worker_exits_zero_and_its_units_are_requeued_at_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let lease = Duration::from_secs(120);
    let config = Config {
        probe_nodes: 1_000,
        units_per_slot: 32,
        scheduler: SchedulerConfig {
            lease_timeout: lease,
            ..SchedulerConfig::default()
        },
        ..Config::default()
    };
    tokio::spawn(npuzzle_coordinator::run(listener, config, shutdown.clone()));
    let _guard = shutdown.clone().drop_guard();

    let mut a = spawn_worker(&url, "a");
    let _b = spawn_worker(&url, "b");
    let joined = Instant::now();
    while stats(&url).await.workers < 2 {
        assert!(
            joined.elapsed() < Duration::from_secs(10),
            "workers did not join"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Korf #11: 57 moves, 13 M linear-conflict nodes expanded: long enough to stop a worker mid-job.
    let tiles: Vec<u32> = "5 9 13 14 6 3 7 12 10 8 4 0 15 2 11 1"
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    let request = v1::SolveRequest {
        board: Some(v1::Board {
            width: 4,
            height: 4,
            tiles: tiles.clone(),
        }),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        }),
        ..Default::default()
    };
    let mut client = SolverClient::connect(url.clone()).await.unwrap();
    let call = tokio::spawn(async move { client.solve(request).await });

    while stats(&url).await.busy_slots < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let terminated = Instant::now();
    let sent = Command::new("kill")
        .args(["-TERM", &a.0.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let exit = loop {
        if let Some(status) = a.0.try_wait().unwrap() {
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
    assert_eq!(r.length, 57);
    let board = npuzzle_solver::Board::new(
        npuzzle_solver::Shape::new(4, 4).unwrap(),
        &tiles.iter().map(|&t| t as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    let goal = npuzzle_solver::Goal::blank_first(board.shape());
    let path = npuzzle_solver::parse_moves(&r.moves).unwrap();
    assert!(board.verify(&path, &goal).unwrap().reaches_goal);
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
