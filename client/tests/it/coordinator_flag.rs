//! `--coordinator URL`, `--serial`, the embedded default and `npuzzle cluster` give the same
//! optimal answers; repeats through a coordinator come back `cached`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{npuzzle, one_worker, records};
use npuzzle_cluster::Options;
use npuzzle_cluster::testing::{ClusterThread, Process};

const BOARDS: &str = "8 6 7 2 5 4 3 0 1\n2 1 3 4 5 6 7 8 0\n1 6 10 8 14 12 4 2 13 11 3 5 9 7 15 0\n1 2 3 4 5 6 0 7 8\n";

fn lengths(stdout: &str) -> Vec<Option<u64>> {
    records(stdout)
        .iter()
        .map(|r| r["length"].as_u64())
        .collect()
}

#[test]
fn serial_embedded_and_remote_agree_and_repeats_are_cached() {
    let serial = npuzzle(&["batch", "--serial", "--output", "jsonl"], BOARDS);
    let embedded = npuzzle(&["batch", "--output", "jsonl"], BOARDS);
    assert_eq!(serial.code, 0, "{}", serial.stderr);
    assert_eq!(embedded.code, 0, "{}", embedded.stderr);
    assert_eq!(lengths(&serial.stdout), lengths(&embedded.stdout));
    assert_eq!(
        lengths(&serial.stdout),
        vec![Some(31), None, Some(42), Some(2)]
    );

    let cluster = ClusterThread::start(Options {
        load_pdbs: true,
        ..one_worker(npuzzle_coordinator::Config::default())
    });
    let url = cluster.url.clone();
    let first = npuzzle(
        &[
            "batch",
            "--coordinator",
            &url,
            "--output",
            "jsonl",
            "--jobs",
            "3",
        ],
        BOARDS,
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(lengths(&first.stdout), lengths(&serial.stdout));
    let again = npuzzle(
        &["batch", "--coordinator", &url, "--output", "jsonl"],
        BOARDS,
    );
    let cached: Vec<bool> = records(&again.stdout)
        .iter()
        .map(|r| r["cached"].as_bool().unwrap())
        .collect();
    // Solved boards come from the cache; the unsolvable one is answered by parity, never cached.
    assert_eq!(cached, vec![true, false, true, true]);
    let one = npuzzle(
        &[
            "solve",
            "1 2 3 4 5 6 0 7 8",
            "--coordinator",
            &url,
            "--json",
        ],
        "",
    );
    let v: serde_json::Value = serde_json::from_str(&one.stdout).unwrap();
    assert_eq!(
        (v["moves"].as_str(), v["cached"].as_bool()),
        (Some("RR"), Some(true))
    );
    cluster.stop();
}

#[test]
fn an_unreachable_coordinator_is_a_clear_error() {
    let out = npuzzle(
        &[
            "solve",
            "1 2 3 4 5 6 0 7 8",
            "--coordinator",
            "http://127.0.0.1:1",
        ],
        "",
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("cannot reach the coordinator at http://127.0.0.1:1"),
        "{}",
        out.stderr
    );
}

#[test]
fn npuzzle_cluster_serves_other_clients() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut cluster = Process::spawn(
        Command::new(env!("CARGO_BIN_EXE_npuzzle"))
            .args([
                "cluster",
                "--listen",
                &listen,
                "--workers",
                "2",
                "--threads",
                "1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let url = format!("http://{listen}");
    let started = Instant::now();
    let out = loop {
        let out = npuzzle(
            &[
                "solve",
                "1 6 10 8 14 12 4 2 13 11 3 5 9 7 15 0",
                "--coordinator",
                &url,
            ],
            "",
        );
        if out.code == 0 || started.elapsed() > Duration::from_secs(10) {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    cluster.kill();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.trim().len(), 42);
}
