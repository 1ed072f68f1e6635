//! What the coordinator's tests share beyond `npuzzle_cluster::testing` (the cluster, Korf's
//! instances, certificates, metrics): pattern databases for 4x4 boards, and hand-driven
//! workers that join with a hello of the test's choosing.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use npuzzle_cluster::testing::korf::{EASIEST_KORF, korf, request};
pub use npuzzle_cluster::testing::{
    TestCluster, assert_optimal, assert_reaches_goal, eager_config,
};
use npuzzle_proto::v1;
pub use npuzzle_solver::GoalSpec;

/// A directory holding 4x4 `5-5-5` pattern databases (the larger partitions take far too long
/// for tests). It lives in cargo's scratch directory for integration tests and is kept between
/// runs: the tables are verified on every run and built (about a second) only when missing or
/// damaged.
pub fn tables_5_5_5() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pdb-5-5-5");
        let store = npuzzle_worker::tables::TableStore::new(Some(dir.clone()));
        let shape = npuzzle_solver::Shape::new(4, 4).unwrap();
        let partition = npuzzle_solver::Partition::named(shape, "5-5-5").unwrap();
        store.load(&partition, true, true, |_, _, _| {}).unwrap();
        dir
    })
}

/// A hand-driven worker: joins with a hello offering `slots` (md and lc only), and waits until
/// the coordinator counts it. The test sends its messages through the sender (keeping it alive
/// keeps the stream open) and reads the coordinator's through the stream.
pub async fn join_by_hand(
    cluster: &TestCluster,
    name: &str,
    slots: u32,
) -> (
    tokio::sync::mpsc::UnboundedSender<v1::WorkerMessage>,
    tonic::Streaming<v1::CoordinatorMessage>,
) {
    join_with_hello(cluster, hand_hello(name, slots)).await
}

/// The hello of [`join_by_hand`].
pub fn hand_hello(name: &str, slots: u32) -> v1::Hello {
    v1::Hello {
        worker_id: name.into(),
        slots,
        version: "test".into(),
        heuristics: vec![
            v1::Heuristic::Manhattan as i32,
            v1::Heuristic::LinearConflict as i32,
        ],
        pattern_databases: vec![],
        // Scripted: each unit is answered as the script says, none waits ahead.
        prefetch: false,
    }
}

/// Opens a `Join` stream with `hello`: the coordinator's answer (its stream, or the status it
/// refused the join with), without waiting to be counted.
pub async fn try_join(
    cluster: &TestCluster,
    hello: v1::Hello,
) -> Result<
    (
        tokio::sync::mpsc::UnboundedSender<v1::WorkerMessage>,
        tonic::Streaming<v1::CoordinatorMessage>,
    ),
    tonic::Status,
> {
    let mut client = npuzzle_proto::v1::cluster_client::ClusterClient::connect(cluster.url.clone())
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tx.send(v1::WorkerMessage {
        message: Some(v1::worker_message::Message::Hello(hello)),
    })
    .unwrap();
    let inbound = client
        .join(tokio_stream::wrappers::UnboundedReceiverStream::new(rx))
        .await?
        .into_inner();
    Ok((tx, inbound))
}

/// [`join_by_hand`] with any hello.
pub async fn join_with_hello(
    cluster: &TestCluster,
    hello: v1::Hello,
) -> (
    tokio::sync::mpsc::UnboundedSender<v1::WorkerMessage>,
    tonic::Streaming<v1::CoordinatorMessage>,
) {
    let before = cluster.stats().await.workers;
    let (tx, inbound) = try_join(cluster, hello).await.unwrap();
    cluster.wait_for_workers(before + 1).await;
    (tx, inbound)
}

/// A TCP port free on loopback now, for a coordinator process to listen on.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A client of the coordinator at `url`, once it accepts connections (within 30 s).
pub async fn connect(
    url: &str,
) -> npuzzle_proto::v1::solver_client::SolverClient<tonic::transport::Channel> {
    let started = std::time::Instant::now();
    loop {
        if let Ok(c) =
            npuzzle_proto::v1::solver_client::SolverClient::connect(url.to_string()).await
        {
            return c;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the coordinator did not start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}
