//! A worker that joins, takes units and then says nothing while keeping its stream open (a
//! stalled process, a half-open connection): its lease expires, its units go to a live worker,
//! the answer is still optimal, and the coordinator closes the hung worker's stream so that,
//! were it only stalled, it would join again instead of lingering as a member with no work.

use std::time::{Duration, Instant};

use crate::common::{
    GoalSpec, TestCluster, assert_optimal, eager_config, join_by_hand, korf, request,
};
use npuzzle_proto::v1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_worker_loses_its_lease_and_its_units_are_searched_elsewhere() {
    let mut cluster = TestCluster::start(eager_config()).await; // lease: 2 s
    let before = cluster.stats().await.workers;

    // The hung worker: a hello offering many slots, then silence (its sender is kept alive, so
    // the stream stays open).
    let (hung_tx, mut inbound) = join_by_hand(&cluster, "hung", 8).await;
    cluster.add_worker(1).await;

    let (id, optimal, tiles) = korf(&[12]).remove(0);
    let mut client = cluster.client().await;
    let asked = Instant::now();
    let r = client
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.outcome, v1::Outcome::Solved as i32, "#{id}: {r:?}");
    assert_eq!(r.length as usize, optimal, "#{id}");
    assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
    assert!(
        r.requeued >= 1,
        "the hung worker held no unit, so this proves nothing: {r:?}"
    );
    assert!(
        asked.elapsed() < Duration::from_secs(60),
        "took {:?}",
        asked.elapsed()
    );

    // The hung worker was given units, then its stream was closed with UNAVAILABLE.
    let mut assigned = 0;
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(10), inbound.message()).await {
            Err(_) => panic!("the hung worker's stream is still open 10 s later"),
            Ok(Ok(Some(m))) => {
                if matches!(m.message, Some(v1::coordinator_message::Message::Assign(_))) {
                    assigned += 1;
                }
            }
            Ok(Ok(None)) => panic!("stream ended without a status"),
            Ok(Err(status)) => break status,
        }
    };
    assert!(assigned >= 1);
    assert_eq!(closed.code(), tonic::Code::Unavailable, "{closed:?}");
    assert!(closed.message().contains("lease"), "{closed:?}");
    assert_eq!(cluster.stats().await.workers, before + 1);
    drop(hung_tx);
}
