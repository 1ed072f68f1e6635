//! The Prometheus endpoint, scraped over HTTP and parsed: every line is `name{labels} value`,
//! and the counters move as requests are served (solved, cached, invalid, unsolvable), as
//! workers search (nodes, units) and as the cluster changes (workers, slots).
//!
//! The `metrics` recorder is global to the process: this file is a test binary of its own
//! (the other tests' coordinators would count in it) and holds one test, with one
//! coordinator, and compares scrapes before and after.

use npuzzle_cluster::testing::korf::{korf, request};
use npuzzle_cluster::testing::prometheus::{get, scrape};
use npuzzle_cluster::testing::{TestCluster, eager_config};
use npuzzle_coordinator::MetricsListener;
use npuzzle_proto::v1;

const REQUESTS: &str = "npuzzle_coordinator_requests_total";

fn solve(outcome: &str) -> [(&'static str, &str); 2] {
    [("rpc", "Solve"), ("outcome", outcome)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_move_as_requests_are_served() {
    let metrics = MetricsListener::bind("127.0.0.1:0").unwrap();
    let address = metrics.local_addr();
    let mut config = eager_config();
    config.metrics = Some(metrics);
    // A connection that says nothing is closed (and counted) soon.
    config.first_byte_timeout = std::time::Duration::from_millis(300);
    let mut cluster = TestCluster::start(config).await;
    let mut client = cluster.client().await;

    let before = tokio::task::spawn_blocking(move || scrape(address))
        .await
        .unwrap();
    assert_eq!(before.value("npuzzle_coordinator_workers", &[]), 0.0);
    assert_eq!(
        before.get("npuzzle_coordinator_serving", &[]),
        Some(0.0),
        "{}",
        before.text
    );

    cluster.add_worker(1).await;
    let (_, optimal, tiles) = korf(&[79]).remove(0);
    let first = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.length as usize, optimal);
    assert!(first.units > 0, "searched by the worker");
    let again = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert!(again.cached);
    let invalid = client.solve(v1::SolveRequest::default()).await.unwrap_err();
    assert_eq!(invalid.code(), tonic::Code::InvalidArgument);
    let unsolvable = client
        .solve(request("2 1 3 4 5 6 7 8 0", v1::GoalKind::BlankLast))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(unsolvable.outcome, v1::Outcome::Unsolvable as i32);
    // A silent connection on the gRPC port: closed once the first-byte timeout passes.
    let mut silent = tokio::net::TcpStream::connect(cluster.address())
        .await
        .unwrap();
    let closed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        // The server speaks first (its SETTINGS); the end of the stream is the close.
        let mut buffer = [0u8; 256];
        while let Ok(n) = tokio::io::AsyncReadExt::read(&mut silent, &mut buffer).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "a silent connection was held open");

    let after = tokio::task::spawn_blocking(move || scrape(address))
        .await
        .unwrap();
    let delta = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.value(name, labels)
    };
    assert_eq!(delta(REQUESTS, &solve("solved")), 2.0, "{}", after.text);
    assert_eq!(delta(REQUESTS, &solve("invalid")), 1.0);
    assert_eq!(delta(REQUESTS, &solve("unsolvable")), 1.0);
    assert_eq!(
        delta(
            "npuzzle_coordinator_request_duration_seconds_count",
            &solve("solved")
        ),
        2.0
    );
    let le_inf = [("rpc", "Solve"), ("outcome", "solved"), ("le", "+Inf")];
    assert_eq!(
        delta(
            "npuzzle_coordinator_request_duration_seconds_bucket",
            &le_inf
        ),
        2.0
    );
    assert_eq!(delta("npuzzle_coordinator_cache_hits_total", &[]), 1.0);
    assert!(delta("npuzzle_coordinator_cache_misses_total", &[]) >= 1.0);
    assert!(after.value("npuzzle_coordinator_cache_entries", &[]) > optimal as f64);
    assert!(
        delta(
            "npuzzle_coordinator_nodes_expanded_total",
            &[("searcher", "workers")]
        ) > 0.0
    );
    assert_eq!(
        delta(
            "npuzzle_coordinator_nodes_expanded_total",
            &[("searcher", "coordinator")]
        ),
        0.0,
        "the coordinator searches nothing while a worker can"
    );
    assert!(
        delta("npuzzle_coordinator_units_assigned_total", &[]) >= f64::from(first.units),
        "{}",
        after.text
    );
    assert_eq!(
        delta(
            "npuzzle_coordinator_connections_timed_out_total",
            &[("reason", "silent")]
        ),
        1.0,
        "{}",
        after.text
    );
    assert_eq!(after.get("npuzzle_coordinator_workers", &[]), Some(1.0));
    assert_eq!(after.get("npuzzle_coordinator_slots", &[]), Some(1.0));
    assert_eq!(after.get("npuzzle_coordinator_serving", &[]), Some(1.0));
    assert!(after.get("npuzzle_coordinator_queued_units", &[]).is_some());

    for name in [
        REQUESTS,
        "npuzzle_coordinator_request_duration_seconds",
        "npuzzle_coordinator_cache_hits_total",
        "npuzzle_coordinator_workers",
        "npuzzle_coordinator_queued_units",
        "npuzzle_coordinator_units_assigned_total",
    ] {
        assert!(after.help.iter().any(|h| h == name), "no HELP for {name}");
    }

    // Only /metrics is served.
    let (status, _) = tokio::task::spawn_blocking(move || get(address, "/"))
        .await
        .unwrap();
    assert_eq!(status, 404);
}
