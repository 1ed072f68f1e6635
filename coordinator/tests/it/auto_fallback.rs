//! AUTO is not pinned to tables a worker only claims: when the worker that claimed pattern
//! databases refuses its units (`UNSUPPORTED`), an AUTO request goes on with the heuristic an
//! honest worker serves, at once, rather than waiting for the tables until it gives up; and
//! the claim stays struck when that worker joins again.

use std::time::{Duration, Instant};

use crate::common::{
    GoalSpec, TestCluster, assert_optimal, eager_config, join_with_hello, korf, request,
};
use npuzzle_proto::v1;

/// Joins with a claim to 4x4 tables, refuses the first unit it gets if it is a pattern-database
/// one, and leaves (so that only that claim is tested, not the worker's failure count); returns
/// how many pattern-database units it was sent.
async fn claim_and_refuse(
    cluster: &TestCluster,
    stop: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<usize> {
    let shape = npuzzle_solver::Shape::new(4, 4).unwrap();
    let partition = npuzzle_solver::Partition::named(shape, "7-8").unwrap();
    let (tx, mut inbound) = join_with_hello(
        cluster,
        v1::Hello {
            worker_id: "claims-tables".into(),
            slots: 8,
            version: "test".into(),
            heuristics: vec![v1::Heuristic::Pdb as i32],
            pattern_databases: vec![npuzzle_proto::pattern_database_to_wire(&partition)],
            prefetch: false,
        },
    )
    .await;
    tokio::spawn(async move {
        let mut pdb_units = 0;
        loop {
            let message = tokio::select! {
                m = inbound.message() => m,
                _ = stop.cancelled() => return pdb_units,
            };
            let Ok(Some(message)) = message else {
                return pdb_units;
            };
            if let Some(v1::coordinator_message::Message::Assign(a)) = message.message {
                if a.heuristic != v1::Heuristic::Pdb as i32 {
                    return pdb_units;
                }
                pdb_units += 1;
                let _ = tx.send(v1::WorkerMessage {
                    message: Some(v1::worker_message::Message::Result(v1::UnitResult {
                        job: a.job,
                        epoch: a.epoch,
                        unit: a.unit,
                        status: v1::UnitStatus::Unsupported as i32,
                        error: "no tables here after all".into(),
                        ..Default::default()
                    })),
                });
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_falls_back_when_the_worker_claiming_tables_refuses_them() {
    let mut config = eager_config();
    // Far longer than the answer may take: the fallback must not wait for it.
    config.unavailable_after = Duration::from_secs(60);
    let mut cluster = TestCluster::start(config).await;
    cluster.add_worker(1).await;
    let mut client = cluster.client().await;
    let mut pdb_units = 0;
    // The second time, the same worker has joined again with the same claim.
    for (id, optimal, tiles) in korf(&crate::common::EASIEST_KORF[..2]) {
        let stop = tokio_util::sync::CancellationToken::new();
        let refusing = claim_and_refuse(&cluster, stop.clone()).await;
        let started = Instant::now();
        let r = client
            .solve(request(&tiles, v1::GoalKind::BlankFirst))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.outcome, v1::Outcome::Solved as i32, "#{id}: {r:?}");
        assert_eq!(r.length as usize, optimal, "#{id}");
        assert_optimal(&tiles, &GoalSpec::BlankFirst, &r.moves, optimal);
        assert_ne!(r.heuristic_used, v1::Heuristic::Pdb as i32, "#{id}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "#{id}: answered after {:?}",
            started.elapsed()
        );
        stop.cancel();
        pdb_units += refusing.await.unwrap();
        // Wait until its stream is gone before it joins again.
        while cluster.stats().await.workers > 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // The claim was tried once and then no more: struck at the first refusal, and struck from
    // its next hello too.
    assert_eq!(
        pdb_units, 1,
        "pattern-database units sent to the worker that refuses its tables"
    );
}
