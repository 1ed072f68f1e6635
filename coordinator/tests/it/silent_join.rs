//! A `Join` stream that never sends its hello is closed after the hello timeout, with
//! `DEADLINE_EXCEEDED`, instead of being held forever; the cluster still serves.

use std::time::{Duration, Instant};

use crate::common::{TestCluster, eager_config, korf, request};
use npuzzle_proto::v1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_without_hello_is_closed_after_the_hello_timeout() {
    let mut config = eager_config();
    config.hello_timeout = Duration::from_millis(300);
    let mut cluster = TestCluster::start(config).await;
    let mut client = v1::cluster_client::ClusterClient::connect(cluster.url.clone())
        .await
        .unwrap();
    // The stream stays open, and says nothing.
    let (_tx, rx) = tokio::sync::mpsc::unbounded_channel::<v1::WorkerMessage>();
    let started = Instant::now();
    let joined = tokio::time::timeout(
        Duration::from_secs(10),
        client.join(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)),
    )
    .await
    .expect("the coordinator answered the silent join");
    let status = joined.expect_err("a join without hello is refused");
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("hello"), "{status:?}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(cluster.stats().await.workers, 0);

    // An honest worker still joins and solves.
    cluster.add_worker(1).await;
    let (_, optimal, tiles) = korf(&[12]).remove(0);
    let mut solver = cluster.client().await;
    let r = solver
        .solve(request(&tiles, v1::GoalKind::BlankFirst))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.length as usize, optimal);
}
