//! What a worker claims does not size the coordinator: slots are counted up to
//! `max_slots_per_worker`, and joins past `max_workers` are refused until one leaves.

use std::time::Duration;

use crate::common::{TestCluster, eager_config, hand_hello, join_by_hand, try_join};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_slots_are_capped_and_joins_past_the_limit_are_refused() {
    let mut config = eager_config();
    config.max_workers = 2;
    config.max_slots_per_worker = 4;
    let cluster = TestCluster::start(config).await;
    let (first, _first_in) = join_by_hand(&cluster, "claims-a-lot", 1_000_000).await;
    assert_eq!(cluster.stats().await.slots, 4);
    let (_second, _second_in) = join_by_hand(&cluster, "modest", 2).await;
    assert_eq!(cluster.stats().await.slots, 6);

    let refused = try_join(&cluster, hand_hello("one-too-many", 1))
        .await
        .map(|_| ())
        .expect_err("a third worker joined past max_workers = 2");
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("limit of 2 workers"),
        "{refused:?}"
    );

    // One leaves: there is room again.
    drop(first);
    drop(_first_in);
    for _ in 0..200 {
        if cluster.stats().await.workers == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (_third, _third_in) = join_by_hand(&cluster, "next", 1).await;
    assert_eq!(cluster.stats().await.workers, 2);
}
