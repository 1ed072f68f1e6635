//! Connections that trickle their opening hold nothing for long: a gRPC connection that sends
//! its HTTP/2 preface a byte at a time is closed once the handshake timeout has passed, and so
//! is an HTTP connection trickling its request header past the header read timeout, while
//! clients that speak at a normal pace are served on both ports.
//!
//! The trickle's pace and the timeouts are tokio timers, so the tests run on paused time
//! (`start_paused`: the clock jumps to the next timer whenever every task waits), and measure
//! it with tokio's `Instant`.

use std::time::Duration;

use crate::common::{TestCluster, eager_config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The HTTP/2 client preface: the magic, then an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
const REQUEST: &[u8] = b"GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/// Connects to `address` and sends `bytes` one every `every`; returns how long after connecting
/// the server closed the connection (end of stream or an error, past what it sends first), or
/// `None` if it was still open after `limit`.
async fn trickle(
    address: &str,
    bytes: &'static [u8],
    every: Duration,
    limit: Duration,
) -> Option<Duration> {
    let socket = TcpStream::connect(address).await.unwrap();
    let opened = Instant::now();
    let (mut read, mut write) = socket.into_split();
    let writer = tokio::spawn(async move {
        for b in bytes {
            if write.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(every).await;
        }
        // Everything sent: keep the socket open without another word.
        std::future::pending::<()>().await;
    });
    let mut buffer = [0u8; 1024];
    let closed = async {
        loop {
            match read.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    let result = tokio::time::timeout(limit, closed)
        .await
        .ok()
        .map(|()| opened.elapsed());
    writer.abort();
    result
}

#[tokio::test(start_paused = true)]
async fn a_grpc_connection_trickling_its_preface_is_closed() {
    let mut config = eager_config();
    config.handshake_timeout = Duration::from_millis(600);
    let cluster = TestCluster::start(config).await;
    cluster.stats().await;
    let address = cluster.url.trim_start_matches("http://").to_string();
    // 33 bytes, one every 100 ms: 3.3 s to send them all, far past the timeout. The first byte
    // comes at once, so only the handshake timeout can close it.
    let closed = trickle(
        &address,
        PREFACE,
        Duration::from_millis(100),
        Duration::from_secs(10),
    )
    .await
    .expect("a connection trickling its preface was held open");
    assert!(
        closed >= Duration::from_millis(500) && closed < Duration::from_millis(3000),
        "closed after {closed:?}"
    );
    // The whole preface at once, then silence: a client that connected and has not called
    // yet keeps its connection past the timeout.
    let kept = trickle(
        &address,
        PREFACE,
        Duration::ZERO,
        Duration::from_millis(1500),
    )
    .await;
    assert_eq!(kept, None, "a connection that sent its preface was closed");
    // A client is served, and its calls outlive the timeout.
    let mut client = cluster.client().await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    client
        .stats(npuzzle_proto::v1::StatsRequest {})
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_http_connection_trickling_its_request_is_closed() {
    let mut config = eager_config();
    config.header_read_timeout = Duration::from_millis(600);
    let http = npuzzle_coordinator::HttpListener::bind("127.0.0.1:0").unwrap();
    let address = http.local_addr().to_string();
    config.http = Some(http);
    let cluster = TestCluster::start(config).await;
    cluster.stats().await;
    let closed = trickle(
        &address,
        REQUEST,
        Duration::from_millis(100),
        Duration::from_secs(10),
    )
    .await
    .expect("a connection trickling its request was held open");
    assert!(
        closed >= Duration::from_millis(500) && closed < Duration::from_millis(3000),
        "closed after {closed:?}"
    );
    // A request sent at once is answered.
    let mut socket = TcpStream::connect(&address).await.unwrap();
    socket.write_all(REQUEST).await.unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
