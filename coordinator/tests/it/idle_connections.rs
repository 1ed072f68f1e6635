//! Connections that say nothing hold nothing for long: one that sends no byte within the first
//! byte timeout is closed, and past `max_connections` open a new one is closed at once, while
//! the coordinator goes on serving once there is room.
//!
//! The timeouts are the coordinator's own tokio timers, so the tests that wait for them run on
//! paused time (`start_paused`: the clock jumps to the next timer whenever every task waits),
//! and measure it with tokio's `Instant`.

use std::time::Duration;

use crate::common::{TestCluster, eager_config};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

fn address(cluster: &TestCluster) -> String {
    cluster.url.trim_start_matches("http://").to_string()
}

/// Waits for the coordinator to close `socket` (end of stream or an error), up to `limit`,
/// reading past what it sends first (its HTTP/2 settings).
async fn closed_within(socket: &mut TcpStream, limit: Duration) -> bool {
    let mut buffer = [0u8; 1024];
    let closed = async {
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, closed).await.is_ok()
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_sends_nothing_is_closed() {
    let mut config = eager_config();
    config.first_byte_timeout = Duration::from_millis(300);
    let cluster = TestCluster::start(config).await;
    // The server is up and answering.
    cluster.stats().await;
    let mut silent = TcpStream::connect(address(&cluster)).await.unwrap();
    let opened = Instant::now();
    assert!(
        closed_within(&mut silent, Duration::from_secs(5)).await,
        "a silent connection was held open"
    );
    assert!(opened.elapsed() >= Duration::from_millis(250));
    // A client that speaks is served, and its calls outlive the timeout.
    let mut client = cluster.client().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    client
        .stats(npuzzle_proto::v1::StatsRequest {})
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_are_closed_until_there_is_room() {
    let mut config = eager_config();
    config.max_connections = 3;
    let cluster = TestCluster::start(config).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(address(&cluster)).await.unwrap());
    }
    let mut extra = TcpStream::connect(address(&cluster)).await.unwrap();
    // Closed as it is accepted; the bound only leaves room for a loaded host (this test runs
    // on real time beside the others), and stays under the first byte timeout (10 s), so
    // that only the limit can have closed it.
    assert!(
        closed_within(&mut extra, Duration::from_secs(5)).await,
        "a connection past the limit was kept"
    );
    drop(held);
    // Room again: a client is served once the server has seen the sockets close (until then
    // a new connection may still be turned away).
    let started = Instant::now();
    loop {
        let endpoint = tonic::transport::Endpoint::from_shared(cluster.url.clone()).unwrap();
        if let Ok(channel) = endpoint.connect().await
            && let Ok(stats) = npuzzle_proto::v1::solver_client::SolverClient::new(channel)
                .stats(npuzzle_proto::v1::StatsRequest {})
                .await
        {
            assert_eq!(stats.into_inner().workers, 0);
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not served after the idle connections were gone"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The web console's port has the same bounds, counted apart: a silent connection is closed
/// after the first byte timeout, one past the limit at once, and a request is answered.
#[tokio::test(start_paused = true)]
async fn the_http_port_closes_silent_connections_and_those_past_the_limit() {
    use tokio::io::AsyncWriteExt;
    let mut config = eager_config();
    config.first_byte_timeout = Duration::from_millis(300);
    config.max_connections = 2;
    let http = npuzzle_coordinator::HttpListener::bind("127.0.0.1:0").unwrap();
    let address = http.local_addr();
    config.http = Some(http);
    let cluster = TestCluster::start(config).await;
    cluster.stats().await;
    let mut silent = TcpStream::connect(address).await.unwrap();
    let mut held = TcpStream::connect(address).await.unwrap();
    let mut extra = TcpStream::connect(address).await.unwrap();
    assert!(
        closed_within(&mut extra, Duration::from_secs(2)).await,
        "a connection past the limit was kept"
    );
    let opened = Instant::now();
    assert!(
        closed_within(&mut silent, Duration::from_secs(5)).await,
        "a silent connection was held open"
    );
    assert!(opened.elapsed() >= Duration::from_millis(150));
    drop(held.shutdown().await);
    // A client that speaks is served once there is room.
    let started = Instant::now();
    loop {
        if let Ok(mut socket) = TcpStream::connect(address).await {
            let request = "GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
            if socket.write_all(request.as_bytes()).await.is_ok() {
                let mut answer = String::new();
                if socket.read_to_string(&mut answer).await.is_ok()
                    && answer.starts_with("HTTP/1.1 200")
                {
                    break;
                }
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not served after the idle connections were gone"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
