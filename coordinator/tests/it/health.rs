//! `grpc.health.v1`, answered to a real health client: NOT_SERVING until a worker joins,
//! SERVING while one is connected, NOT_SERVING again when it leaves and while draining after the
//! shutdown token fires; open `Watch` streams see each change and end when the server stops.

use std::time::Duration;

use crate::common::{TestCluster, eager_config};
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

const SERVICES: [&str; 3] = ["", "npuzzle.v1.Solver", "npuzzle.v1.Cluster"];

async fn health_client(url: &str) -> HealthClient<Channel> {
    for _ in 0..100 {
        if let Ok(channel) = Channel::from_shared(url.to_string())
            .unwrap()
            .connect()
            .await
        {
            return HealthClient::new(channel);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no health service at {url}");
}

fn request(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.into(),
    }
}

async fn status(client: &mut HealthClient<Channel>, service: &str) -> ServingStatus {
    let r = client.check(request(service)).await.unwrap().into_inner();
    ServingStatus::try_from(r.status).unwrap()
}

/// Polls until every service reports `want` (the status follows membership asynchronously).
async fn wait_for(client: &mut HealthClient<Channel>, want: ServingStatus) {
    for _ in 0..200 {
        let mut all = true;
        for s in SERVICES {
            all &= status(client, s).await == want;
        }
        if all {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("health never became {want:?}");
}

fn status_of(message: Option<HealthCheckResponse>) -> Option<ServingStatus> {
    message.map(|m| ServingStatus::try_from(m.status).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_only_with_a_worker_and_until_the_drain() {
    let mut config = eager_config();
    config.drain = Duration::from_millis(1500);
    let mut cluster = TestCluster::start(config).await;
    let mut health = health_client(&cluster.url).await;

    // No worker yet: requests would wait and end UNAVAILABLE.
    for s in SERVICES {
        assert_eq!(
            status(&mut health, s).await,
            ServingStatus::NotServing,
            "{s:?}"
        );
    }
    let unknown = health.check(request("no.such.Service")).await.unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);

    cluster.add_worker(1).await;
    wait_for(&mut health, ServingStatus::Serving).await;

    // The only worker leaves, then another joins.
    cluster.stop_worker(0);
    wait_for(&mut health, ServingStatus::NotServing).await;
    cluster.add_worker(1).await;
    wait_for(&mut health, ServingStatus::Serving).await;

    let mut watch = health.watch(request("")).await.unwrap().into_inner();
    assert_eq!(
        status_of(watch.message().await.unwrap()),
        Some(ServingStatus::Serving)
    );

    // Draining: the server still answers, NOT_SERVING, and the watcher hears it at once.
    cluster.stop_coordinator();
    let seen = tokio::time::timeout(Duration::from_millis(500), watch.message())
        .await
        .expect("the watcher is told about the drain")
        .unwrap();
    assert_eq!(status_of(seen), Some(ServingStatus::NotServing));
    for s in SERVICES {
        assert_eq!(
            status(&mut health, s).await,
            ServingStatus::NotServing,
            "{s:?}"
        );
    }

    // When the drain is over the watch stream ends (it must not hold the shutdown open), and
    // nothing answers any more.
    let end = tokio::time::timeout(Duration::from_secs(5), watch.message())
        .await
        .expect("the watch stream ends when the server stops");
    assert!(
        matches!(end, Ok(None) | Err(_)),
        "the stream should end, got {end:?}"
    );
    let mut stopped = false;
    for _ in 0..100 {
        if health.check(request("")).await.is_err() {
            stopped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(stopped, "the server still answers after the drain");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_returns_after_the_drain_even_with_a_watcher() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = tokio_util::sync::CancellationToken::new();
    let mut config = eager_config();
    config.drain = Duration::from_millis(300);
    let server = tokio::spawn(npuzzle_coordinator::run(listener, config, shutdown.clone()));
    let mut health = health_client(&url).await;
    let mut watch = health.watch(request("")).await.unwrap().into_inner();
    assert_eq!(
        status_of(watch.message().await.unwrap()),
        Some(ServingStatus::NotServing)
    );
    shutdown.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("run returns once the drain is over");
    ended.unwrap().unwrap();
}
