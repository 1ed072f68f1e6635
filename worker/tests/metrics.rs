//! The worker's Prometheus endpoint, scraped over HTTP and parsed: units by outcome, nodes,
//! slots and the connection move as the worker searches for a real coordinator.
//!
//! The `metrics` recorder is global to the process: this is a test binary of its own, so that
//! the other tests' workers do not count in it.

use std::time::Duration;

use npuzzle_cluster::testing::prometheus::scrape;
use npuzzle_cluster::testing::{TestCluster, eventually};
use npuzzle_proto::v1;
use npuzzle_worker::MetricsListener;

/// Korf's instance 79 (42 moves), for the blank-first goal.
const KORF_79: [u32; 16] = [0, 1, 9, 7, 11, 13, 5, 3, 14, 12, 4, 2, 8, 6, 10, 15];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_and_nodes_are_counted() {
    let coordinator = npuzzle_coordinator::Config {
        probe_nodes: 500,
        ..npuzzle_coordinator::Config::default()
    };
    let mut cluster = TestCluster::start(coordinator).await;
    let metrics = MetricsListener::bind("127.0.0.1:0").unwrap();
    let address = metrics.local_addr();
    cluster
        .add_worker_with(|config| {
            config.threads = 2;
            config.load_pdbs = false;
            config.metrics = Some(metrics);
        })
        .await;
    let mut client = cluster.client().await;
    // The coordinator may count the worker a moment before the worker sees its stream open.
    let connected = async || {
        let scraped = tokio::task::spawn_blocking(move || scrape(address))
            .await
            .unwrap();
        (scraped.get("npuzzle_worker_connected", &[]) == Some(1.0)).then_some(scraped)
    };
    let before = eventually(
        Duration::from_secs(5),
        Duration::from_millis(10),
        "npuzzle_worker_connected 1",
        connected,
    )
    .await;
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
