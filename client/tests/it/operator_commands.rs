//! `npuzzle health` and `npuzzle stats` through the real binary: health exits 0 against a
//! coordinator with a worker, 1 against one without, 2 when nothing listens; `stats --json` is
//! one JSON object.

use std::time::Duration;

use crate::common::{npuzzle, one_worker};
use npuzzle_cluster::Options;
use npuzzle_cluster::testing::ClusterThread;

/// A coordinator (and `workers` in-process one-thread workers) on loopback, on its own runtime
/// thread. Returns once the workers have joined.
fn start_coordinator(workers: usize) -> ClusterThread {
    ClusterThread::start(Options {
        workers,
        ..one_worker(npuzzle_coordinator::Config::default())
    })
}

/// A loopback URL where nothing listens (a port just freed).
fn nothing_listens() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}

/// `npuzzle health` until it exits with `code` (the status follows membership
/// asynchronously), returning its output.
fn health_until(url: &str, code: i32, extra: &[&str]) -> crate::common::Output {
    let mut args = vec!["health", "--coordinator", url];
    args.extend_from_slice(extra);
    for _ in 0..50 {
        let out = npuzzle(&args, "");
        if out.code == code {
            return out;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    npuzzle(&args, "")
}

#[test]
fn health_exit_codes_follow_the_grpc_health_status() {
    let cluster = start_coordinator(1);
    let url = cluster.url.clone();
    let out = health_until(&url, 0, &[]);
    assert_eq!(out.code, 0, "{} {}", out.stdout, out.stderr);
    assert_eq!(out.stdout.trim(), "SERVING");
    let solver = health_until(&url, 0, &["--service", "npuzzle.v1.Solver"]);
    assert_eq!(solver.code, 0, "{}", solver.stderr);
    let unknown = npuzzle(
        &[
            "health",
            "--coordinator",
            &url,
            "--service",
            "no.such.Service",
        ],
        "",
    );
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains("no.such.Service"),
        "{}",
        unknown.stderr
    );
    cluster.stop();

    let cluster = start_coordinator(0);
    let url = cluster.url.clone();
    let out = npuzzle(&["health", "--coordinator", &url], "");
    assert_eq!(out.code, 1, "{} {}", out.stdout, out.stderr);
    assert_eq!(out.stdout.trim(), "NOT_SERVING");
    cluster.stop();

    let url = nothing_listens();
    let out = npuzzle(
        &["health", "--coordinator", &url, "--timeout-ms", "1000"],
        "",
    );
    assert_eq!(out.code, 2, "{} {}", out.stdout, out.stderr);
    assert_eq!(out.stdout.trim(), "UNREACHABLE");
    assert!(out.stderr.contains(&url), "{}", out.stderr);
}

#[test]
fn stats_as_json_and_as_text() {
    let cluster = start_coordinator(1);
    let url = cluster.url.clone();
    let solved = npuzzle(&["solve", "--coordinator", &url, "8 6 7 2 5 4 3 0 1"], "");
    assert_eq!(solved.code, 0, "{}", solved.stderr);
    let again = npuzzle(&["solve", "--coordinator", &url, "8 6 7 2 5 4 3 0 1"], "");
    assert_eq!(again.code, 0, "{}", again.stderr);

    let out = npuzzle(&["stats", "--coordinator", &url, "--json"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let stats: serde_json::Value = serde_json::from_str(&out.stdout).expect("one JSON object");
    assert_eq!(stats["workers"], 1);
    assert_eq!(stats["slots"], 1);
    assert_eq!(stats["cache_hits"], 1);
    assert!(stats["cache_entries"].as_u64().unwrap() > 30);
    for field in [
        "busy_slots",
        "running_jobs",
        "queue_depth",
        "cache_misses",
        "late_nodes",
    ] {
        assert!(stats[field].is_u64(), "{field} in {stats}");
    }
    assert!(stats["cache_hit_rate"].is_f64());

    let text = npuzzle(&["stats", "--coordinator", &url], "");
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("workers         1\n"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("search threads  1 (0 busy)"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("1 hits"), "{}", text.stdout);
    cluster.stop();

    let out = npuzzle(
        &[
            "stats",
            "--coordinator",
            &nothing_listens(),
            "--timeout-ms",
            "1000",
        ],
        "",
    );
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("cannot reach the coordinator"),
        "{}",
        out.stderr
    );
}
