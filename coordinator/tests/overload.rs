//! Past `max_searches` requests that need a search, the coordinator answers
//! `RESOURCE_EXHAUSTED` with a retry hint at once, while answers that need no search are still
//! given; once the searches end, new ones are admitted again.

mod common;

use std::time::Duration;

use common::{Cluster, eager_config, korf, replays_to_blank_first, request};
use npuzzle_coordinator::Config;
use npuzzle_proto::v1;

#[tokio::test]
async fn past_the_search_limit_requests_are_refused_with_a_retry_hint_and_nothing_is_lost() {
    let config = Config {
        max_searches: 2,
        unavailable_after: Duration::from_secs(3),
        ..eager_config()
    };
    let mut cluster = Cluster::start(config).await;
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
    assert!(replays_to_blank_first(tiles, &answer.moves));
}
