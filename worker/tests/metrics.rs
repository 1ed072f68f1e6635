//! The worker's Prometheus endpoint, scraped over HTTP and parsed: units by outcome, nodes,
//! slots and the connection move as the worker searches for a real coordinator.
//!
//! The `metrics` recorder is global to the process: this is a test binary of its own, so that
//! the other tests' workers do not count in it.

#[path = "../../coordinator/tests/it/common/prometheus.rs"]
mod prometheus;

use std::time::Duration;

use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use npuzzle_worker::MetricsListener;
use prometheus::scrape;
use tokio_util::sync::CancellationToken;

/// Korf's instance 79 (42 moves), for the blank-first goal.
const KORF_79: [u32; 16] = [0, 1, 9, 7, 11, 13, 5, 3, 14, 12, 4, 2, 8, 6, 10, 15];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_and_nodes_are_counted() {
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let coordinator = npuzzle_coordinator::Config {
        probe_nodes: 500,
        ..npuzzle_coordinator::Config::default()
    };
    tokio::spawn(npuzzle_coordinator::run(
        listener,
        coordinator,
        shutdown.clone(),
    ));

    let metrics = MetricsListener::bind("127.0.0.1:0").unwrap();
    let address = metrics.local_addr();
    let mut config = npuzzle_worker::Config::new(url.clone());
    config.threads = 2;
    config.load_pdbs = false;
    config.metrics = Some(metrics);
    tokio::spawn(npuzzle_worker::run(config, shutdown.clone()));

    let mut client = loop {
        if let Ok(c) = SolverClient::connect(url.clone()).await {
            break c;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for _ in 0..200 {
        let stats = client
            .stats(v1::StatsRequest {})
            .await
            .unwrap()
            .into_inner();
        if stats.workers > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The coordinator may count the worker a moment before the worker sees its stream open.
    let mut before = None;
    for _ in 0..200 {
        let scraped = tokio::task::spawn_blocking(move || scrape(address))
            .await
            .unwrap();
        if scraped.get("npuzzle_worker_connected", &[]) == Some(1.0) {
            before = Some(scraped);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = before.expect("npuzzle_worker_connected 1");
    assert_eq!(before.get("npuzzle_worker_slots", &[]), Some(2.0));

    let answer = client
        .solve(v1::SolveRequest {
            board: Some(v1::Board {
                width: 4,
                height: 4,
                tiles: KORF_79.to_vec(),
            }),
            goal: Some(v1::Goal {
                kind: v1::GoalKind::BlankFirst as i32,
                tiles: vec![],
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.length, 42);
    assert!(answer.units >= 1);

    // Results reach the coordinator after the worker counted them; units still running when
    // the answer came may report a little later.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = tokio::task::spawn_blocking(move || scrape(address))
        .await
        .unwrap();
    let delta = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.value(name, labels)
    };
    let units = "npuzzle_worker_units_total";
    // The job went whole to one slot; the other slot, idle, may have had it cut.
    let searched: f64 = ["found", "exhausted", "split", "cancelled"]
        .iter()
        .map(|o| delta(units, &[("outcome", o)]))
        .sum();
    assert!(searched >= f64::from(answer.units), "{}", after.text);
    assert!(
        delta(units, &[("outcome", "found")]) >= 1.0,
        "{}",
        after.text
    );
    assert!(delta("npuzzle_worker_nodes_expanded_total", &[]) > 0.0);
    assert!(delta("npuzzle_worker_nodes_generated_total", &[]) > 0.0);
    assert!(after.get("npuzzle_worker_busy_slots", &[]).is_some());
    assert!(after.help.iter().any(|h| h == units));
}
