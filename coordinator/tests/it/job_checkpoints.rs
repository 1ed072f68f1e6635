//! Checkpoints with the real coordinator binary: a detached job survives two `kill -9`s of its
//! coordinator (restarted on the same port and store; the worker reconnects on its own) and ends
//! optimal with `resumed` 2; a checkpoint whose bytes were flipped in the store (stopped cleanly:
//! after a `kill -9` redb checks its pages itself) is refused with a log line naming the job,
//! and the job starts again from its first bound, still optimal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use npuzzle_proto::v1;
use tokio_util::sync::CancellationToken;

use crate::common::{GoalSpec, assert_optimal, connect, free_port};
use npuzzle_cluster::testing::Process;

/// The coordinator binary, killed when dropped.
struct Coordinator(Process);

impl Coordinator {
    /// The coordinator on `port` with its store in `dir`, checkpointing every second; its log
    /// goes to `log` (appended).
    fn start(port: u16, dir: &Path, log: &Path) -> Coordinator {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap();
        Coordinator(Process::spawn(
            Command::new(env!("CARGO_BIN_EXE_npuzzle-coordinator"))
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .arg("--cache-dir")
                .arg(dir)
                .args(["--checkpoint-secs", "1"])
                .args(["--drain-secs", "0"])
                .env("RUST_LOG", "info")
                .env("NO_COLOR", "1")
                .stdout(Stdio::null())
                .stderr(log),
        ))
    }

    /// SIGTERM, and waits for the exit: a clean stop (the store closed, its jobs kept).
    fn terminate(mut self) {
        self.0.signal("TERM");
        let status = self.0.wait();
        assert!(status.success(), "{status:?}");
    }

    /// `kill -9`: no drain, no chance to write anything more.
    fn kill(mut self) {
        self.0.kill();
    }
}

/// Korf's #88 (65 moves) with Manhattan distance: about a billion nodes, seconds of search on
/// two threads.
const BOARD: &str = "15 2 12 11 14 13 9 5 1 3 8 7 0 10 6 4";
const OPTIMAL: u32 = 65;

fn request() -> v1::SolveRequest {
    v1::SolveRequest {
        board: Some(v1::Board {
            width: 4,
            height: 4,
            tiles: BOARD.split(' ').map(|t| t.parse().unwrap()).collect(),
        }),
        goal: Some(v1::Goal {
            kind: v1::GoalKind::BlankFirst as i32,
            tiles: vec![],
        }),
        heuristic: v1::Heuristic::Manhattan as i32,
        ..Default::default()
    }
}

/// An in-process worker with two threads that reconnects within 200 ms.
fn worker(url: &str, stop: &CancellationToken) {
    let mut worker = npuzzle_worker::Config::new(url.to_string());
    worker.threads = 2;
    worker.load_pdbs = false;
    worker.max_backoff = Duration::from_millis(200);
    tokio::spawn(npuzzle_worker::run(worker, stop.clone()));
}

/// Job `id`'s state, once the coordinator answers.
async fn job(url: &str, id: &str) -> v1::JobStatus {
    let started = Instant::now();
    loop {
        let mut client = connect(url).await;
        match client.get_job(v1::JobRequest { id: id.into() }).await {
            Ok(status) => return status.into_inner(),
            Err(status) => assert!(
                started.elapsed() < Duration::from_secs(30),
                "GetJob: {status:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until job `id` has run for 2.5 s since its first progress seen here (checkpoints are
/// due every second), and returns whether it is still running then.
async fn progressed(url: &str, id: &str) -> bool {
    let started = Instant::now();
    let mut seen: Option<Instant> = None;
    loop {
        let status = job(url, id).await;
        if status.state != v1::JobState::Running as i32 {
            return false;
        }
        if status.progress.as_ref().is_some_and(|p| p.bound > 0) {
            let since = *seen.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_millis(2500) {
                return true;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "no progress");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Job `id`'s final state.
async fn finished(url: &str, id: &str) -> v1::JobStatus {
    let started = Instant::now();
    loop {
        let status = job(url, id).await;
        if status.state != v1::JobState::Running as i32 {
            return status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the job never ended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn check_optimal(status: &v1::JobStatus) {
    assert_eq!(status.state, v1::JobState::Done as i32, "{status:?}");
    let result = status.result.as_ref().unwrap();
    assert_eq!(result.length, OPTIMAL, "{result:?}");
    assert_optimal(
        BOARD,
        &GoalSpec::BlankFirst,
        &result.moves,
        OPTIMAL as usize,
    );
}

fn log_text(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// A coordinator on a fresh store, KF #88 submitted to it as a detached job, and a worker.
struct Submitted {
    _dir: tempfile::TempDir,
    log: PathBuf,
    store: PathBuf,
    port: u16,
    url: String,
    id: String,
    coordinator: Coordinator,
    _stop: tokio_util::sync::DropGuard,
}

impl Submitted {
    async fn start() -> Submitted {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("coordinator.log");
        let store = dir.path().join("store");
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let stop = CancellationToken::new();
        let coordinator = Coordinator::start(port, &store, &log);
        let id = connect(&url)
            .await
            .submit_job(request())
            .await
            .unwrap()
            .into_inner()
            .id;
        worker(&url, &stop);
        Submitted {
            _dir: dir,
            log,
            store,
            port,
            url,
            id,
            coordinator,
            _stop: stop.drop_guard(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_job_survives_two_kill_9s_of_its_coordinator_and_ends_optimal() {
    // `_dir` and `_stop` hold the store and the worker to the test's end.
    let Submitted {
        _dir,
        log,
        store,
        port,
        url,
        id,
        coordinator,
        _stop,
    } = Submitted::start().await;
    let mut coordinator = Some(coordinator);
    for kill in 1..=2u32 {
        assert!(
            progressed(&url, &id).await,
            "the job ended before kill {kill}: {}",
            log_text(&log)
        );
        if let Some(c) = coordinator.take() {
            c.kill();
        }
        coordinator = Some(Coordinator::start(port, &store, &log));
        let resumed = job(&url, &id).await;
        assert_eq!(resumed.state, v1::JobState::Running as i32, "{resumed:?}");
        assert_eq!(resumed.resumed, kill, "{resumed:?}\n{}", log_text(&log));
    }
    let status = finished(&url, &id).await;
    check_optimal(&status);
    assert_eq!(status.resumed, 2, "{status:?}");
    let text = log_text(&log);
    assert_eq!(text.matches("resuming a detached job").count(), 2, "{text}");
    assert!(!text.contains("refused"), "{text}");
}

/// Flips a byte inside every copy of the checkpoint record in the store file (redb may keep
/// older pages too); returns how many it flipped.
fn flip_checkpoint_bytes(file: &PathBuf) -> usize {
    let mut bytes = std::fs::read(file).unwrap();
    let marker = b"\"kind\":\"checkpoint\"";
    let mut flipped = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(marker.len()).position(|w| w == marker) {
        let pos = at + found + marker.len() + 12;
        bytes[pos] ^= 0x01;
        flipped += 1;
        at = pos;
    }
    std::fs::write(file, bytes).unwrap();
    flipped
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_checkpoint_is_refused_and_the_job_starts_again_optimal() {
    // `_dir` and `_stop` hold the store and the worker to the test's end.
    let Submitted {
        _dir,
        log,
        store,
        port,
        url,
        id,
        coordinator,
        _stop,
    } = Submitted::start().await;
    assert!(
        progressed(&url, &id).await,
        "the job ended first: {}",
        log_text(&log)
    );
    // A clean stop: after a kill -9, redb's own page checksums would find the flipped bytes
    // first (while it repairs the file) and the whole store would be set aside.
    coordinator.terminate();
    let flipped = flip_checkpoint_bytes(&store.join("answers.redb"));
    assert!(flipped > 0, "no checkpoint in the store");

    let _coordinator = Coordinator::start(port, &store, &log);
    let status = finished(&url, &id).await;
    check_optimal(&status);
    assert_eq!(status.resumed, 0, "{status:?}");
    let text = log_text(&log);
    let refused = text
        .lines()
        .find(|l| l.contains("checkpoint is refused"))
        .unwrap_or_else(|| panic!("no refusal logged:\n{text}"));
    assert!(
        refused.contains(&id) && refused.contains("SHA-256"),
        "{refused}"
    );
    assert!(text.contains("resuming a detached job"), "{text}");
}
