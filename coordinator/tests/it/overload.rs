//! Past `max_searches` requests that need a search, the coordinator answers
//! `RESOURCE_EXHAUSTED` with a retry hint at once, while answers that need no search are still
//! given; once the searches end, new ones are admitted again. Past `max_searches_per_client`,
//! only that client is refused.

use std::net::SocketAddr;
use std::time::Duration;

use crate::common::{GoalSpec, TestCluster, assert_optimal, eager_config, korf, request};
use npuzzle_coordinator::Config;
use npuzzle_proto::v1;
use npuzzle_proto::v1::solver_client::SolverClient;
use tonic::transport::{Channel, Endpoint};

#[tokio::test]
async fn past_the_search_limit_requests_are_refused_with_a_retry_hint_and_nothing_is_lost() {
    let config = Config {
        max_searches: 2,
        unavailable_after: Duration::from_secs(3),
        ..eager_config()
    };
    let mut cluster = TestCluster::start(config).await;
    let boards = korf(&[79, 12, 42]);
    // No worker yet: the first two wait for one, holding both permits.
    let mut waiting = Vec::new();
    for (_, _, tiles) in &boards[..2] {
        let mut client = cluster.client().await;
        let req = request(tiles, v1::GoalKind::BlankFirst);
        waiting.push(tokio::spawn(async move { client.solve(req).await }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut client = cluster.client().await;
    let (_, length, tiles) = &boards[2];
    let refused = client
        .solve(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("limit of 2 searches"),
        "{refused:?}"
    );
    assert_eq!(
        refused
            .metadata()
            .get("retry-after-ms")
            .map(|v| v.to_str().unwrap()),
        Some("1000")
    );
    let stream = client
        .solve_stream(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap_err();
    assert_eq!(stream.code(), tonic::Code::ResourceExhausted);

    // Answers without a search are still given under overload.
    let mut unsolvable = request(
        "1 0 2 3 4 5 6 7 8 9 10 11 12 13 15 14",
        v1::GoalKind::BlankFirst,
    );
    unsolvable.timeout_ms = 1000;
    let answer = client.solve(unsolvable).await.unwrap().into_inner();
    assert_eq!(answer.outcome(), v1::Outcome::Unsolvable);
    let invalid = client
        .solve(request("1 1 2 3", v1::GoalKind::BlankFirst))
        .await
        .unwrap_err();
    assert_eq!(invalid.code(), tonic::Code::InvalidArgument);

    // The waiting two end (no worker came) and give their permits back.
    for w in waiting {
        let status = w.await.unwrap().unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    }
    cluster.add_worker(1).await;
    let answer = client
        .solve(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.length as usize, *length);
    assert_optimal(tiles, &GoalSpec::BlankFirst, &answer.moves, *length);
}

/// A client whose connections come from `source` (any 127.x.y.z address reaches the
/// coordinator's 127.0.0.1 listener, so loopback alone gives distinct client addresses).
async fn client_from(url: &str, source: &str) -> SolverClient<Channel> {
    let target: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let source: SocketAddr = format!("{source}:0").parse().unwrap();
    let channel = Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect_with_connector(tower::service_fn(
            move |_: tonic::transport::Uri| async move {
                let socket = tokio::net::TcpSocket::new_v4()?;
                socket.bind(source)?;
                let stream = socket.connect(target).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            },
        ))
        .await
        .unwrap();
    SolverClient::new(channel)
}

#[tokio::test]
async fn one_client_past_its_own_limit_is_refused_while_another_is_served() {
    let config = Config {
        max_searches_per_client: 2,
        unavailable_after: Duration::from_secs(3),
        ..eager_config()
    };
    let mut cluster = TestCluster::start(config).await;
    let boards = korf(&[79, 12, 42]);
    // No worker yet: the greedy client's first two searches wait for one.
    let mut waiting = Vec::new();
    for (_, _, tiles) in &boards[..2] {
        let mut greedy = client_from(&cluster.url, "127.0.0.2").await;
        let req = request(tiles, v1::GoalKind::BlankFirst);
        waiting.push(tokio::spawn(async move { greedy.solve(req).await }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let (_, length, tiles) = &boards[2];
    let mut greedy = client_from(&cluster.url, "127.0.0.2").await;
    let refused = greedy
        .solve(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("127.0.0.2") && refused.message().contains("per-client"),
        "{refused:?}"
    );
    assert!(refused.metadata().get("retry-after-ms").is_some());

    // Another client is admitted: its search waits for a worker like the others, and is solved
    // once one joins.
    let mut polite = client_from(&cluster.url, "127.0.0.3").await;
    let req = request(tiles, v1::GoalKind::BlankFirst);
    let admitted = tokio::spawn(async move { polite.solve(req).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.add_worker(1).await;
    let answer = admitted.await.unwrap().unwrap().into_inner();
    assert_eq!(answer.length as usize, *length);
    assert_optimal(tiles, &GoalSpec::BlankFirst, &answer.moves, *length);

    // The greedy client's searches end and give back its places.
    for w in waiting {
        let _ = w.await.unwrap();
    }
    let answer = greedy
        .solve(request(tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.length as usize, *length);
}
