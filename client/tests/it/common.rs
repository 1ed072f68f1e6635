//! What the tests share: running the real `npuzzle` binary, checking its answers, and a local
//! cluster on a thread of its own.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

use npuzzle_client::local::{ClusterError, LocalCluster, Options};
use npuzzle_solver::{Board, Goal, parse_moves};

pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Runs `npuzzle args…` with `stdin` as input, from the repository root.
pub fn npuzzle(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_npuzzle"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("npuzzle runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Output {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Replays `moves` (either case) from `board` and checks that they reach `goal`.
pub fn assert_solves(board: &str, moves: &str, goal: &Goal) -> usize {
    let board = Board::parse(board, Some(goal.shape())).unwrap();
    let path = parse_moves(moves).unwrap();
    let v = board.verify(&path, goal).unwrap();
    assert!(v.reaches_goal, "{moves} from {board:?} ends at {:?}", v.end);
    path.len()
}

/// Parses `--output jsonl` text into one JSON value per line.
pub fn records(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON object"))
        .collect()
}

/// A [`LocalCluster`] on a runtime thread of its own (the tests run the `npuzzle` binary, which
/// blocks), from the moment its workers have joined until [`Cluster::stop`] (or drop).
pub struct Cluster {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ClusterError>>>,
}

/// One one-thread worker loading no pattern databases, and `coordinator`.
pub fn one_worker(coordinator: npuzzle_coordinator::Config) -> Options {
    Options {
        coordinator,
        threads: Some(1),
        load_pdbs: false,
        name: "test".into(),
        ..Options::default()
    }
}

/// Starts a local cluster; panics if it does not start.
pub fn start_cluster(options: Options) -> Cluster {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
        runtime.block_on(async move {
            let cluster = match LocalCluster::start(options).await {
                Ok(cluster) => cluster,
                Err(e) => {
                    let _ = url_tx.send(Err(e.to_string()));
                    return Ok(());
                }
            };
            let _ = url_tx.send(Ok(cluster.url().to_string()));
            let _ = stop_rx.await;
            cluster.shutdown().await
        })
    });
    let url = url_rx
        .recv()
        .expect("the cluster thread answers")
        .unwrap_or_else(|e| panic!("the local cluster does not start: {e}"));
    Cluster {
        url,
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}

impl Cluster {
    /// Shuts the cluster down and waits for it; panics if a task of it failed.
    pub fn stop(mut self) {
        if let Err(e) = self.halt() {
            panic!("the local cluster failed: {e}");
        }
    }

    fn halt(&mut self) -> Result<(), ClusterError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(thread) => thread.join().expect("the cluster thread does not panic"),
            None => Ok(()),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}
