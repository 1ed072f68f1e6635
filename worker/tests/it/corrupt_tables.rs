//! A worker process given a corrupt pattern database (one flipped byte) still joins: it logs a
//! warning naming the file, does not advertise the shape, and serves linear conflict. Once the
//! file is good again, a new worker process (`--pdb-dir`) serves HEURISTIC_PDB.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use npuzzle_cluster::testing::{Process, TestCluster, assert_optimal, eventually};
use npuzzle_coordinator::Config;
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use npuzzle_solver::{GoalSpec, Partition, Shape};
use npuzzle_worker::tables::TableStore;

/// The worker binary (killed when dropped), logging to `log`.
fn spawn_worker(url: &str, pdb_dir: &Path, log: &Path) -> Process {
    let log = std::fs::File::create(log).unwrap();
    Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle-worker"))
            .args(["--coordinator", url, "--threads", "1", "--pdb-dir"])
            .arg(pdb_dir)
            .env("RUST_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log),
    )
}

async fn workers(url: &str) -> u32 {
    let mut c = SolverClient::connect(url.to_string()).await.unwrap();
    c.stats(v1::StatsRequest {})
        .await
        .unwrap()
        .into_inner()
        .workers
}

/// Korf #12 (45 moves, blank-first goal) with `heuristic`.
fn korf_12(heuristic: v1::Heuristic) -> v1::SolveRequest {
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
        heuristic: heuristic as i32,
        skip_cache: true,
        ..Default::default()
    }
}

/// Korf #12 answered optimally, by the worker.
fn assert_korf_12_solved(r: &v1::SolveResponse) {
    assert_eq!(
        (r.outcome, r.length),
        (v1::Outcome::Solved as i32, 45),
        "{r:?}"
    );
    let tiles = "14 1 9 6 4 8 12 5 7 2 3 0 10 11 13 15";
    assert_optimal(tiles, &GoalSpec::BlankFirst, &r.moves, 45);
    assert!(r.units > 0, "served by the worker: {r:?}");
}

fn flip_a_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(path, &bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_table_is_skipped_with_a_warning_and_the_worker_serves_lc() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("npuzzle-corrupt-pdb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let store = TableStore::new(Some(dir.clone()));
    let partition = Partition::named(Shape::new(4, 4).unwrap(), "5-5-5").unwrap();
    store.load(&partition, true, true, |_, _, _| {}).unwrap();
    let damaged = store.path(&partition, 1);
    flip_a_byte(&damaged);

    let config = Config {
        probe_nodes: 1_000,
        ..Config::default()
    };
    let cluster = TestCluster::start(config).await;
    let url = cluster.url.clone();

    let log = dir.join("worker.log");
    let worker = spawn_worker(&url, &dir, &log);
    cluster.wait_for_workers(1).await;
    let mut client = SolverClient::connect(url.clone()).await.unwrap();

    let err = client.solve(korf_12(v1::Heuristic::Pdb)).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err:?}");
    for heuristic in [v1::Heuristic::LinearConflict, v1::Heuristic::Auto] {
        let r = client.solve(korf_12(heuristic)).await.unwrap().into_inner();
        assert_korf_12_solved(&r);
        assert_eq!(r.heuristic_used, v1::Heuristic::LinearConflict as i32);
    }
    drop(worker);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("WARN"), "{logged}");
    assert!(logged.contains("4x4-5-5-5-1.pdb"), "{logged}");
    assert!(logged.contains("checksum"), "{logged}");

    // Repaired, the tables are served by the next worker process.
    flip_a_byte(&damaged);
    let gone = async || (workers(&url).await == 0).then_some(());
    eventually(
        Duration::from_secs(20),
        Duration::from_millis(20),
        "the worker leaves",
        gone,
    )
    .await;
    let _worker = spawn_worker(&url, &dir, &log);
    cluster.wait_for_workers(1).await;
    let r = client
        .solve(korf_12(v1::Heuristic::Pdb))
        .await
        .unwrap()
        .into_inner();
    assert_korf_12_solved(&r);
    assert_eq!(r.heuristic_used, v1::Heuristic::Pdb as i32);
    let _ = std::fs::remove_dir_all(&dir);
}
